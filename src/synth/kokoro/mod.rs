//! The built-in neural voice: Kokoro-82M (v1.0, int8 ONNX) run in-process
//! through ONNX Runtime, fed phonemes that tingshu computes from its own
//! pinyin ([`phonemes`]).
//!
//! - [`files`]: where the model, the voice packs and the runtime live, and
//!   their checks (sizes, sha256);
//! - [`pack`]: voice packs (style vectors) and blends of them;
//! - [`engine`]: ONNX Runtime sessions, one inference at a time each;
//! - [`rewrite`], [`ops`], [`dequantize`]: the model's graph changed for the
//!   CPU (the same bits: int8 products, operators of tingshu's own) and for
//!   a GPU (floats).

pub mod cuda;
pub mod dequantize;
pub mod engine;
pub mod files;
pub mod graph_cache;
pub mod ops;
pub mod pack;
pub mod phonemes;
pub mod rewrite;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;

use super::kind::{BackendKind, BuildContext, KeyProblem};
use super::{Limits, SynthError, SynthRequest, Synthesizer};
use crate::audio::AudioClip;
pub use engine::{Device, Engine};
pub use files::{KokoroError, KokoroFiles, data_dir};
pub use pack::Style;

/// The rate Kokoro synthesizes at (Hz).
pub const SAMPLE_RATE: u32 = 24_000;

/// `[backends.NAME] type = "kokoro"` in the voices file.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct KokoroConfig {
    /// Inferences run at once, each in a session of its own; 0 = one per
    /// CPU core, or [`engine::GPU_SESSIONS`] on a GPU.
    #[serde(default)]
    pub sessions: usize,
    /// Threads each session computes with; 0 = the cores divided among the
    /// sessions.
    #[serde(default)]
    pub threads: usize,
    /// `auto` (CUDA when its runtime and a GPU load, else CPU), `cpu`, `cuda`.
    #[serde(default)]
    pub device: Device,
    /// Where the model, packs and runtime are (default: tingshu's data
    /// directory, see [`data_dir`]).
    #[serde(default)]
    pub data_dir: Option<std::path::PathBuf>,
    /// Longest chunk (characters) per request.
    #[serde(default)]
    pub max_chars: Option<usize>,
    /// Compute threads spin between parallel steps instead of sleeping:
    /// set where a listener waits for the first audio (`preview`, the
    /// studio, the server). It costs CPU time a build cannot spare but
    /// saved 35–40 ms of a 0.65 s first clause on 2 cores. Not a key of
    /// the file.
    #[serde(skip)]
    pub spin: bool,
}

/// Characters of text per request: about 4 phoneme tokens a Han character,
/// so one request stays well under the model's 510 tokens.
pub const DEFAULT_MAX_CHARS: usize = 90;

impl BackendKind for KokoroConfig {
    fn build(&self, ctx: &BuildContext<'_>) -> Result<Arc<dyn Synthesizer>, SynthError> {
        Ok(Arc::new(Kokoro::new(ctx.name, self.clone())))
    }

    /// Checks the keys and the files they point to; `voices` are the voice
    /// specs (`zf_xiaobei`, `zf_xiaobei:0.7,zf_xiaoyi:0.3`) that use it.
    fn check(&self, voices: &[(String, &str)]) -> Result<(), KeyProblem> {
        if self.max_chars == Some(0) {
            return Err(("max_chars".into(), "must be at least 1".into()));
        }
        if self.sessions > 64 {
            return Err(("sessions".into(), "must be at most 64".into()));
        }
        if self.threads > 256 {
            return Err(("threads".into(), "must be at most 256".into()));
        }
        let files = KokoroFiles::locate(self.data_dir.as_deref());
        files
            .check()
            .map_err(|e| ("data_dir".into(), e.to_string()))?;
        cuda::choose(&files, self.device)
            .map_err(|why| ("device".into(), format!("\"cuda\" cannot be used: {why}")))?;
        for (key, spec) in voices {
            pack::Blend::parse(spec)
                .and_then(|b| files.check_blend(&b))
                .map_err(|e| (key.clone(), e.to_string()))?;
        }
        Ok(())
    }

    /// A neural engine on a busy CPU may need minutes for a long chunk: an
    /// hour.
    fn default_request_limit(&self) -> Option<Duration> {
        Some(Duration::from_secs(3600))
    }

    /// The device it runs on, and why.
    fn listing_note(&self) -> Option<String> {
        let files = KokoroFiles::locate(self.data_dir.as_deref());
        Some(match cuda::choose(&files, self.device) {
            Ok(choice) if choice.device == "cpu" => format!(
                "    runs on cpu: {}\n    {}\n",
                choice.reason,
                rewrite::describe()
            ),
            Ok(choice) => format!("    runs on {}: {}\n", choice.device, choice.reason),
            Err(why) => format!("    cannot run: device = cuda and {why}\n"),
        })
    }
}

fn load_into(
    cell: &OnceLock<Result<Arc<Engine>, String>>,
    files: &KokoroFiles,
    config: &KokoroConfig,
) -> Result<Arc<Engine>, String> {
    cell.get_or_init(|| {
        Engine::load(files, config)
            .map(Arc::new)
            .map_err(|e| match e {
                KokoroError::Device(why) => {
                    format!("device = \"cuda\" cannot be used: {why}")
                }
                e => e.to_string(),
            })
    })
    .clone()
}

/// The Kokoro backend: an engine loaded on first use (or by
/// [`Synthesizer::warm_up`]), shared by every voice of the backend.
pub struct Kokoro {
    name: String,
    config: KokoroConfig,
    files: KokoroFiles,
    engine: Arc<OnceLock<Result<Arc<Engine>, String>>>,
    /// The device the engine will run on (decided from what is installed).
    choice: Result<cuda::DeviceChoice, String>,
    styles: std::sync::Mutex<std::collections::HashMap<String, Arc<Style>>>,
}

impl Kokoro {
    pub fn new(name: &str, config: KokoroConfig) -> Kokoro {
        let files = KokoroFiles::locate(config.data_dir.as_deref());
        Kokoro {
            choice: cuda::choose(&files, config.device),
            name: name.to_owned(),
            config,
            files,
            engine: Arc::default(),
            styles: Default::default(),
        }
    }

    fn setup_error(&self, message: impl Into<String>) -> SynthError {
        SynthError::Setup {
            backend: self.name.clone(),
            message: message.into(),
        }
    }

    /// The engine, loading it the first time.
    fn engine(&self) -> Result<Arc<Engine>, SynthError> {
        load_into(&self.engine, &self.files, &self.config).map_err(|m| self.setup_error(m))
    }

    fn style(&self, spec: &str) -> Result<Arc<Style>, SynthError> {
        let mut styles = self.styles.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = styles.get(spec) {
            return Ok(Arc::clone(s));
        }
        let blend = pack::Blend::parse(spec).map_err(|e| self.setup_error(e.to_string()))?;
        let style = Arc::new(
            self.files
                .load_blend(&blend)
                .map_err(|e| self.setup_error(e.to_string()))?,
        );
        styles.insert(spec.to_owned(), Arc::clone(&style));
        Ok(style)
    }

    /// Sessions this backend runs (the number of requests in flight).
    fn sessions(&self) -> usize {
        let gpu = self.choice.as_ref().is_ok_and(|c| c.device == "cuda");
        engine::plan(&self.config, gpu).0
    }

    /// Where the engine will run and why (before it is loaded).
    pub fn device(&self) -> &Result<cuda::DeviceChoice, String> {
        &self.choice
    }
}

#[async_trait]
impl Synthesizer for Kokoro {
    fn name(&self) -> &str {
        &self.name
    }

    fn limits(&self) -> Limits {
        Limits {
            max_chars: self.config.max_chars.unwrap_or(DEFAULT_MAX_CHARS),
            max_in_flight: self.sessions(),
        }
    }

    fn fingerprint(&self) -> String {
        // Thread counts change the float summation order only below what
        // 16-bit output keeps; the model and the phoneme mapping are what
        // change the audio, and so does the float graph a GPU runs
        // ([`dequantize`]): its clips get keys of their own, so a CPU build
        // stays byte-identical to itself whatever else shares the cache.
        let base = format!(
            "kokoro/{}/phonemes-{}",
            files::MODEL_SHA256,
            phonemes::VERSION
        );
        let float = engine::float_on_cpu()
            || match self.engine.get() {
                Some(Ok(engine)) => engine.device == "cuda",
                _ => self.choice.as_ref().is_ok_and(|c| c.device == "cuda"),
            };
        if float {
            format!("{base}/float-{}", dequantize::VERSION)
        } else {
            base
        }
    }

    fn request_fingerprint(&self, req: &SynthRequest) -> String {
        // Chunks without Latin tokens keep the keys they had before Latin
        // words were read as English.
        if phonemes::has_latin(&req.pinyin) {
            format!("{}/latin-{}", self.fingerprint(), phonemes::LATIN_VERSION)
        } else {
            self.fingerprint()
        }
    }

    fn warm_up(&self, _voices: &[String]) {
        // Load the runtime and the sessions on a thread while the book is
        // read and prepared; the first request waits for the same load.
        if self.engine.get().is_none() {
            let (cell, files, config) = (
                Arc::clone(&self.engine),
                self.files.clone(),
                self.config.clone(),
            );
            let _ = std::thread::Builder::new()
                .name("tingshu-kokoro-load".into())
                .spawn(move || {
                    let _ = load_into(&cell, &files, &config);
                });
        }
    }

    fn ready(&self) -> Result<(), SynthError> {
        self.engine().map(|_| ())
    }

    async fn synthesize(&self, req: &SynthRequest) -> Result<AudioClip, SynthError> {
        let engine = self.engine()?;
        let style = self.style(&req.voice.voice)?;
        let phonemes = phonemes::phonemize(&req.pinyin);
        let speed = req.voice.speed;
        let name = self.name.clone();
        let samples = tokio::task::spawn_blocking(move || engine.speak(&phonemes, &style, speed))
            .await
            .map_err(|e| SynthError::Engine {
                backend: name.clone(),
                message: format!("inference thread failed: {e}"),
            })?
            .map_err(|e| SynthError::Engine {
                backend: name,
                message: e.to_string(),
            })?;
        Ok(AudioClip::new(samples, SAMPLE_RATE))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::VoiceSettings;

    fn request(pinyin: &str) -> SynthRequest {
        SynthRequest {
            text: String::new(),
            pinyin: pinyin.into(),
            voice: VoiceSettings {
                name: "narrator".into(),
                voice: "zf_xiaobei".into(),
                ..Default::default()
            },
        }
    }

    #[test]
    fn only_chunks_with_latin_tokens_change_key_with_the_latin_reading() {
        let k = Kokoro::new("neural", KokoroConfig::default());
        let plain = k.request_fingerprint(&request("ni3-hao3, shi4-jie4."));
        assert_eq!(plain, k.fingerprint());
        let latin = k.request_fingerprint(&request("ta1 na2-chu1 iPhone."));
        assert_ne!(latin, plain);
        assert!(latin.ends_with(&format!("/latin-{}", phonemes::LATIN_VERSION)));
    }
}
