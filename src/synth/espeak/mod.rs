//! The embedded offline voice: libespeak-ng (linked in-process) speaking
//! tone-numbered pinyin through its `cmn-latn-pinyin` voice.
//!
//! libespeak-ng keeps global state, so one process synthesizes one chunk at a
//! time. Parallel synthesis uses worker processes — the `tingshu` binary
//! itself in its hidden `__espeak-worker` mode, one per voice — that fork a
//! child for every request from their initialized engine; without a worker
//! program the backend synthesizes in this process, one chunk at a time.
//!
//! `ffi.rs` holds the engine in this process, over libespeak-ng's C API;
//! `fork.rs` the worker process, a fork server; `pool.rs` the backend's side
//! of its workers; `protocol.rs` the requests and replies between the two;
//! `text.rs` what the engine is given to say.

mod ffi;
mod fork;
mod pool;
mod protocol;
mod text;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use espeakng_sys as sys;
use serde::Deserialize;
use tokio::sync::Semaphore;

use super::kind::{BackendKind, BuildContext, KeyProblem};
use super::{Limits, SynthError, SynthRequest, Synthesizer, max_chars};
use crate::audio::AudioClip;
pub use ffi::{phonemes_ipa, synthesize_blocking};
pub use fork::{max_children, run_worker};
use pool::WorkerPool;
pub use protocol::EngineRequest;
pub use text::engine_text;

/// Hidden subcommand that turns the binary into a synthesis worker.
pub const WORKER_ARG: &str = "__espeak-worker";

/// `[backends.NAME] type = "espeak"` in the voices file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EspeakConfig {
    /// Requests synthesized at once, each in a process of its own; 0 = two
    /// more than the CPU cores (so a core never waits for the next request).
    #[serde(default)]
    pub workers: usize,
    /// espeak-ng rate (words per minute setting) at speed 1.0.
    #[serde(default = "default_rate")]
    pub rate: u32,
    /// Longest chunk (characters) per request.
    #[serde(default = "max_chars::<120>")]
    pub max_chars: usize,
}

fn default_rate() -> u32 {
    230
}

/// Most worker processes a backend may have (`workers`).
const MAX_WORKERS: usize = 256;

impl BackendKind for EspeakConfig {
    /// With no `workers`, `max_in_flight` says how many.
    fn build(&self, ctx: &BuildContext<'_>) -> Result<Arc<dyn Synthesizer>, SynthError> {
        let mut config = self.clone();
        if config.workers == 0
            && let Some(n) = ctx.max_in_flight
        {
            config.workers = n;
        }
        let worker_program = ctx.worker_program.map(Path::to_path_buf);
        Ok(Arc::new(Espeak::new(ctx.name, config, worker_program)))
    }

    /// Numbers in range.
    fn check(&self, _voices: &[(String, &str)]) -> Result<(), KeyProblem> {
        if self.workers > MAX_WORKERS {
            return Err((
                "workers".into(),
                format!(
                    "{} is out of range 0–{MAX_WORKERS} (0 = one per core, plus two)",
                    self.workers
                ),
            ));
        }
        if !(80..=450).contains(&self.rate) {
            return Err((
                "rate".into(),
                format!("{} is out of range 80–450", self.rate),
            ));
        }
        if !(1..=10_000).contains(&self.max_chars) {
            return Err((
                "max_chars".into(),
                format!("{} is out of range 1–10000", self.max_chars),
            ));
        }
        Ok(())
    }
}

/// The `espeak` backend.
pub struct Espeak {
    name: String,
    config: EspeakConfig,
    /// Program to start as a worker; `None` = synthesize in this process.
    worker_program: Option<PathBuf>,
    /// Requests synthesized at once.
    concurrency: usize,
    workers: Mutex<WorkerPool>,
    permits: Semaphore,
}

impl Espeak {
    /// The backend `name` of the voices file; `worker_program` is the binary
    /// to start in worker mode, `None` to synthesize in this process.
    pub fn new(name: &str, config: EspeakConfig, worker_program: Option<PathBuf>) -> Espeak {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let concurrency = match (&worker_program, config.workers) {
            (None, _) => 1,
            (Some(_), 0) => cores + 2,
            (Some(_), n) => n,
        };
        Espeak {
            name: name.to_owned(),
            config,
            worker_program,
            concurrency,
            workers: Mutex::new(WorkerPool::default()),
            permits: Semaphore::new(concurrency),
        }
    }

    /// Process ids of the worker processes running now (for diagnostics
    /// and tests).
    pub fn worker_ids(&self) -> Vec<u32> {
        self.workers().ids()
    }

    fn workers(&self) -> MutexGuard<'_, WorkerPool> {
        self.workers.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn engine_request(&self, req: &SynthRequest) -> EngineRequest {
        let rate = (self.config.rate as f32 * req.voice.speed).round() as u32;
        let (text, ssml) = engine_text(&req.syllables(), &req.voice.voice);
        EngineRequest {
            id: 0,
            voice: req.voice.voice.clone(),
            rate: rate.clamp(sys::espeakRATE_MINIMUM, sys::espeakRATE_MAXIMUM),
            pitch: req.voice.pitch,
            text,
            ssml,
        }
    }

    fn engine_error(&self, message: String) -> SynthError {
        SynthError::Engine {
            backend: self.name.clone(),
            message,
        }
    }
}

#[async_trait]
impl Synthesizer for Espeak {
    fn name(&self) -> &str {
        &self.name
    }

    fn limits(&self) -> Limits {
        Limits::new(self.config.max_chars, self.concurrency)
    }

    fn fingerprint(&self) -> String {
        format!("espeak-ng/rate={}", self.config.rate)
    }

    fn warm_up(&self, voices: &[String]) {
        let Some(program) = &self.worker_program else {
            return;
        };
        // The reply readers need a runtime; without one, workers start on
        // the first request.
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        self.workers().warm_up(voices, program);
    }

    async fn synthesize(&self, req: &SynthRequest) -> Result<AudioClip, SynthError> {
        let engine_req = self.engine_request(req);
        let _permit = self
            .permits
            .acquire()
            .await
            .expect("semaphore never closed");
        let Some(program) = &self.worker_program else {
            return tokio::task::spawn_blocking(move || synthesize_blocking(&engine_req))
                .await
                .map_err(|e| self.engine_error(format!("synthesis task failed: {e}")))?
                .map_err(|e| self.engine_error(e));
        };
        let worker_error = |source| SynthError::Worker {
            backend: self.name.clone(),
            source,
        };
        let worker = self
            .workers()
            .for_voice(&engine_req.voice, program)
            .map_err(worker_error)?;
        worker
            .ask(engine_req)
            .await
            .map_err(worker_error)?
            .map_err(|e| self.engine_error(e))
    }
}

/// What the tests of the submodules share.
#[cfg(test)]
mod tests {
    use std::sync::{Mutex, MutexGuard};

    use super::EngineRequest;

    /// Tests that synthesize in this process take turns: the forked test
    /// needs the engine's state to stay put between its requests.
    static TURN: Mutex<()> = Mutex::new(());

    /// Waits for this test's turn with the engine.
    pub(super) fn turn() -> MutexGuard<'static, ()> {
        TURN.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request for `text` in `voice` at the default rate.
    pub(super) fn req(voice: &str, text: &str) -> EngineRequest {
        EngineRequest {
            id: 0,
            voice: voice.into(),
            rate: 230,
            pitch: None,
            text: text.into(),
            ssml: false,
        }
    }
}
