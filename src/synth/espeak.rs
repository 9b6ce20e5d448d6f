//! The embedded offline voice: libespeak-ng (linked in-process) speaking
//! tone-numbered pinyin through its `cmn-latn-pinyin` voice.
//!
//! libespeak-ng keeps global state, so one process synthesizes one chunk at a
//! time. Parallel synthesis uses a pool of worker processes — the `tingshu`
//! binary itself in its hidden `__espeak-worker` mode — each with its own
//! copy of the library; without a worker program the backend synthesizes in
//! this process, one chunk at a time.

use std::cell::RefCell;
use std::ffi::{CString, c_int, c_short, c_void};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Mutex, OnceLock};

use async_trait::async_trait;
use espeakng_sys as sys;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Semaphore;

use super::{Limits, SynthError, SynthRequest, Synthesizer};
use crate::audio::AudioClip;

/// Hidden subcommand that turns the binary into a synthesis worker.
pub const WORKER_ARG: &str = "__espeak-worker";

/// `[backends.NAME] type = "espeak"` in the voices file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EspeakConfig {
    /// Worker processes; 0 = one per CPU core.
    #[serde(default)]
    pub workers: usize,
    /// espeak-ng rate (words per minute setting) at speed 1.0.
    #[serde(default = "default_rate")]
    pub rate: u32,
    /// Longest chunk (characters) per request.
    #[serde(default = "default_max_chars")]
    pub max_chars: usize,
    /// libespeak-ng carries state from one request to the next, so the same
    /// chunk can come out a few samples different. With `true` every request
    /// gets a fresh worker process (about 12 ms more each) and the same
    /// chunk always gives the same samples — for byte-identical renders
    /// across runs and machines.
    #[serde(default)]
    pub reproducible: bool,
}

fn default_rate() -> u32 {
    230
}

fn default_max_chars() -> usize {
    120
}

/// One request to the engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineRequest {
    pub voice: String,
    pub rate: u32,
    pub pitch: Option<u8>,
    pub text: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct WorkerReply {
    samples: Option<usize>,
    sample_rate: Option<u32>,
    error: Option<String>,
}

// ---------------------------------------------------------------------------
// In-process engine

struct Engine {
    sample_rate: u32,
}

static ENGINE: OnceLock<Result<Mutex<Engine>, String>> = OnceLock::new();

thread_local! {
    static CAPTURE: RefCell<Vec<i16>> = const { RefCell::new(Vec::new()) };
}

unsafe extern "C" fn capture(
    wav: *mut c_short,
    n: c_int,
    _events: *mut sys::espeak_EVENT,
) -> c_int {
    if !wav.is_null() && n > 0 {
        // SAFETY: espeak-ng passes a buffer of `n` samples valid for this call.
        let chunk = unsafe { std::slice::from_raw_parts(wav, n as usize) };
        CAPTURE.with(|c| c.borrow_mut().extend_from_slice(chunk));
    }
    0
}

fn engine() -> Result<&'static Mutex<Engine>, String> {
    ENGINE
        .get_or_init(|| {
            // SAFETY: called once, guarded by OnceLock; a null path selects
            // the installed espeak-ng data.
            let rate = unsafe {
                sys::espeak_Initialize(
                    sys::espeak_AUDIO_OUTPUT_AUDIO_OUTPUT_SYNCHRONOUS,
                    0,
                    std::ptr::null(),
                    0,
                )
            };
            if rate <= 0 {
                return Err(
                    "libespeak-ng failed to initialize (is the espeak-ng-data package installed?)"
                        .into(),
                );
            }
            // SAFETY: the callback has the signature espeak-ng expects.
            unsafe { sys::espeak_SetSynthCallback(Some(capture)) };
            Ok(Mutex::new(Engine {
                sample_rate: rate as u32,
            }))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Synthesizes one request in this process (blocking; serialized).
pub fn synthesize_blocking(req: &EngineRequest) -> Result<AudioClip, String> {
    let engine = engine()?;
    let guard = engine.lock().unwrap_or_else(|e| e.into_inner());
    let voice =
        CString::new(req.voice.as_str()).map_err(|_| "voice name contains NUL".to_owned())?;
    let text = CString::new(req.text.as_str()).map_err(|_| "text contains NUL".to_owned())?;
    // SAFETY: the engine is initialized and we hold its lock; all pointers
    // outlive the calls.
    unsafe {
        if sys::espeak_SetVoiceByName(voice.as_ptr()) != sys::espeak_ERROR_EE_OK {
            return Err(format!("espeak-ng has no voice '{}'", req.voice));
        }
        sys::espeak_SetParameter(sys::espeak_PARAMETER_espeakRATE, req.rate as c_int, 0);
        if let Some(pitch) = req.pitch {
            sys::espeak_SetParameter(
                sys::espeak_PARAMETER_espeakPITCH,
                c_int::from(pitch.min(99)),
                0,
            );
        }
        CAPTURE.with(|c| c.borrow_mut().clear());
        let bytes = text.as_bytes_with_nul();
        let status = sys::espeak_Synth(
            bytes.as_ptr() as *const c_void,
            bytes.len(),
            0,
            sys::espeak_POSITION_TYPE_POS_CHARACTER,
            0,
            sys::espeakCHARS_UTF8,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        sys::espeak_Synchronize();
        if status != sys::espeak_ERROR_EE_OK {
            return Err(format!("espeak-ng synthesis failed (status {status})"));
        }
    }
    let samples = CAPTURE.with(|c| std::mem::take(&mut *c.borrow_mut()));
    Ok(AudioClip::from_i16(&samples, guard.sample_rate))
}

/// Worker mode: read JSON requests from stdin, one per line; answer each with
/// a JSON line, then the samples as 16-bit little-endian PCM.
pub fn run_worker(input: impl BufRead, mut output: impl Write) -> std::io::Result<()> {
    for line in input.lines() {
        let line = line?;
        let reply = serde_json::from_str::<EngineRequest>(&line)
            .map_err(|e| format!("bad request: {e}"))
            .and_then(|req| synthesize_blocking(&req));
        match reply {
            Ok(clip) => {
                let header = WorkerReply {
                    samples: Some(clip.samples.len()),
                    sample_rate: Some(clip.sample_rate),
                    error: None,
                };
                serde_json::to_writer(&mut output, &header)?;
                output.write_all(b"\n")?;
                let mut bytes = Vec::with_capacity(clip.samples.len() * 2);
                for s in &clip.samples {
                    bytes.extend_from_slice(
                        &((s * 32768.0).round().clamp(-32768.0, 32767.0) as i16).to_le_bytes(),
                    );
                }
                output.write_all(&bytes)?;
            }
            Err(error) => {
                let header = WorkerReply {
                    samples: None,
                    sample_rate: None,
                    error: Some(error),
                };
                serde_json::to_writer(&mut output, &header)?;
                output.write_all(b"\n")?;
            }
        }
        output.flush()?;
    }
    Ok(())
}

/// Reads one worker reply (blocking); used by tests of the protocol.
pub fn read_reply(mut input: impl BufRead) -> std::io::Result<Result<AudioClip, String>> {
    let mut line = String::new();
    input.read_line(&mut line)?;
    let header: WorkerReply = serde_json::from_str(&line).map_err(std::io::Error::other)?;
    if let Some(error) = header.error {
        return Ok(Err(error));
    }
    let n = header.samples.unwrap_or(0);
    let mut bytes = vec![0u8; n * 2];
    input.read_exact(&mut bytes)?;
    Ok(Ok(pcm_clip(&bytes, header.sample_rate.unwrap_or(22050))))
}

fn pcm_clip(bytes: &[u8], sample_rate: u32) -> AudioClip {
    let samples: Vec<i16> = bytes
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect();
    AudioClip::from_i16(&samples, sample_rate)
}

// ---------------------------------------------------------------------------
// Backend

struct Worker {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// The `espeak` backend.
pub struct Espeak {
    name: String,
    config: EspeakConfig,
    /// Program to start as a worker; `None` = synthesize in this process.
    worker_program: Option<PathBuf>,
    workers: usize,
    idle: Mutex<Vec<Worker>>,
    permits: Semaphore,
}

impl Espeak {
    pub fn new(name: &str, config: EspeakConfig, worker_program: Option<PathBuf>) -> Espeak {
        let workers = match (&worker_program, config.workers) {
            (None, _) => 1,
            (Some(_), 0) => std::thread::available_parallelism().map_or(1, |n| n.get()),
            (Some(_), n) => n,
        };
        Espeak {
            name: name.to_owned(),
            config,
            worker_program,
            workers,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(workers),
        }
    }

    fn engine_request(&self, req: &SynthRequest) -> EngineRequest {
        let rate = (self.config.rate as f32 * req.voice.speed).round() as u32;
        EngineRequest {
            voice: req.voice.voice.clone(),
            rate: rate.clamp(sys::espeakRATE_MINIMUM, sys::espeakRATE_MAXIMUM),
            pitch: req.voice.pitch,
            text: req.pinyin.clone(),
        }
    }

    fn spawn_worker(&self, program: &PathBuf) -> std::io::Result<Worker> {
        let mut child = Command::new(program)
            .arg(WORKER_ARG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no worker stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no worker stdout"))?;
        Ok(Worker {
            _child: child,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    async fn ask_worker(
        worker: &mut Worker,
        req: &EngineRequest,
    ) -> std::io::Result<Result<AudioClip, String>> {
        let mut line = serde_json::to_vec(req).map_err(std::io::Error::other)?;
        line.push(b'\n');
        worker.stdin.write_all(&line).await?;
        worker.stdin.flush().await?;
        let mut header = String::new();
        if worker.stdout.read_line(&mut header).await? == 0 {
            return Err(std::io::Error::other("worker exited"));
        }
        let header: WorkerReply = serde_json::from_str(&header).map_err(std::io::Error::other)?;
        if let Some(error) = header.error {
            return Ok(Err(error));
        }
        let mut bytes = vec![0u8; header.samples.unwrap_or(0) * 2];
        worker.stdout.read_exact(&mut bytes).await?;
        Ok(Ok(pcm_clip(&bytes, header.sample_rate.unwrap_or(22050))))
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
        Limits {
            max_chars: self.config.max_chars,
            max_in_flight: self.workers,
        }
    }

    fn fingerprint(&self) -> String {
        format!("espeak-ng/rate={}", self.config.rate)
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
        let popped = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut worker = match popped {
            Some(w) => w,
            None => self
                .spawn_worker(program)
                .map_err(|source| SynthError::Worker {
                    backend: self.name.clone(),
                    source,
                })?,
        };
        match Self::ask_worker(&mut worker, &engine_req).await {
            Ok(reply) => {
                if !self.config.reproducible {
                    self.idle
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(worker);
                }
                reply.map_err(|e| self.engine_error(e))
            }
            // The worker is dropped (and killed); the next request starts a new one.
            Err(source) => Err(SynthError::Worker {
                backend: self.name.clone(),
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(voice: &str, text: &str) -> EngineRequest {
        EngineRequest {
            voice: voice.into(),
            rate: 230,
            pitch: None,
            text: text.into(),
        }
    }

    #[test]
    fn speaks_pinyin_in_process() {
        let clip = synthesize_blocking(&req("cmn-latn-pinyin", "ni3 hao3, shi4 jie4.")).unwrap();
        assert_eq!(clip.sample_rate, 22050);
        let secs = clip.duration_s();
        assert!((0.5..4.0).contains(&secs), "{secs}");
        assert!(clip.peak() > 0.05);
    }

    #[test]
    fn unknown_voice_is_an_error() {
        let err = synthesize_blocking(&req("no-such-voice-xx", "ni3")).unwrap_err();
        assert!(err.contains("no-such-voice-xx"), "{err}");
    }

    #[test]
    fn worker_protocol_round_trip() {
        let mut input = serde_json::to_string(&req("cmn-latn-pinyin", "ma1 ma1")).unwrap();
        input.push('\n');
        input.push_str("not json\n");
        let mut out = Vec::new();
        run_worker(input.as_bytes(), &mut out).unwrap();
        let mut reader = std::io::Cursor::new(out);
        let clip = read_reply(&mut reader).unwrap().unwrap();
        assert!(clip.duration_s() > 0.2);
        let err = read_reply(&mut reader).unwrap().unwrap_err();
        assert!(err.starts_with("bad request"), "{err}");
    }
}
