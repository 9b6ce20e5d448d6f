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

/// Idle worker processes kept per concurrent request (one per voice in use).
const MAX_IDLE_PER_SLOT: usize = 4;

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

/// Where the synthesis callback puts the engine's samples.
enum Sink {
    /// A growing vector (synthesis in this process).
    Vec(Vec<i16>),
    /// The worker's shared buffer (synthesis in a forked child).
    Shared {
        buf: *mut i16,
        capacity: usize,
        len: usize,
        /// Samples from the start whose pages this process has mapped.
        populated: usize,
        overflow: bool,
    },
}

/// Samples mapped in one go in the shared buffer (256 KiB, a multiple of
/// the page size).
const POPULATE_STEP: usize = 128 << 10;

thread_local! {
    static CAPTURE: RefCell<Sink> = const { RefCell::new(Sink::Vec(Vec::new())) };
}

unsafe extern "C" fn capture(
    wav: *mut c_short,
    n: c_int,
    _events: *mut sys::espeak_EVENT,
) -> c_int {
    if wav.is_null() || n <= 0 {
        return 0;
    }
    // SAFETY: espeak-ng passes a buffer of `n` samples valid for this call.
    let chunk = unsafe { std::slice::from_raw_parts(wav, n as usize) };
    CAPTURE.with(|c| match &mut *c.borrow_mut() {
        Sink::Vec(samples) => {
            samples.extend_from_slice(chunk);
            0
        }
        Sink::Shared {
            buf,
            capacity,
            len,
            populated,
            overflow,
        } => {
            if *capacity - *len < chunk.len() {
                *overflow = true;
                // Non-zero asks espeak-ng to stop.
                return 1;
            }
            let end = *len + chunk.len();
            if end > *populated {
                // One call maps the pages ahead, instead of one page fault
                // per page written (the pages exist already after the first
                // request; a kernel without MADV_POPULATE_WRITE just faults).
                let upto = (*populated + POPULATE_STEP).max(end).min(*capacity);
                // SAFETY: the range lies inside the mapping, and madvise
                // only maps its pages; a failure changes nothing.
                unsafe {
                    libc::madvise(
                        buf.add(*populated) as *mut c_void,
                        (upto - *populated) * 2,
                        libc::MADV_POPULATE_WRITE,
                    )
                };
                *populated = upto;
            }
            // SAFETY: `buf` points to `capacity` writable samples (see
            // `SharedPcm`), and `len + chunk.len()` stays within them.
            unsafe {
                std::ptr::copy_nonoverlapping(chunk.as_ptr(), buf.add(*len), chunk.len());
            }
            *len += chunk.len();
            0
        }
    })
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
    select_voice(&guard, &req.voice)?;
    speak(&guard, req)
}

/// Makes `voice` the engine's voice.
fn select_voice(_engine: &Engine, voice: &str) -> Result<(), String> {
    let name = CString::new(voice).map_err(|_| "voice name contains NUL".to_owned())?;
    // SAFETY: the engine is initialized and the caller holds its lock; the
    // name outlives the call.
    if unsafe { sys::espeak_SetVoiceByName(name.as_ptr()) } != sys::espeak_ERROR_EE_OK {
        return Err(format!("espeak-ng has no voice '{voice}'"));
    }
    Ok(())
}

/// Speaks `req.text` with the selected voice at the request's rate and pitch.
fn speak(engine: &Engine, req: &EngineRequest) -> Result<AudioClip, String> {
    CAPTURE.with(|c| *c.borrow_mut() = Sink::Vec(Vec::new()));
    synthesize_into_sink(req)?;
    let samples =
        CAPTURE.with(
            |c| match std::mem::replace(&mut *c.borrow_mut(), Sink::Vec(Vec::new())) {
                Sink::Vec(samples) => samples,
                Sink::Shared { .. } => Vec::new(),
            },
        );
    Ok(AudioClip::from_i16(&samples, engine.sample_rate))
}

/// Runs one synthesis; the samples go to this thread's [`Sink`].
fn synthesize_into_sink(req: &EngineRequest) -> Result<(), String> {
    let text = CString::new(req.text.as_str()).map_err(|_| "text contains NUL".to_owned())?;
    // SAFETY: the engine is initialized and the caller holds its lock; all
    // pointers outlive the calls.
    let status = unsafe {
        sys::espeak_SetParameter(sys::espeak_PARAMETER_espeakRATE, req.rate as c_int, 0);
        if let Some(pitch) = req.pitch {
            sys::espeak_SetParameter(
                sys::espeak_PARAMETER_espeakPITCH,
                c_int::from(pitch.min(99)),
                0,
            );
        }
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
        status
    };
    if status != sys::espeak_ERROR_EE_OK {
        return Err(format!("espeak-ng synthesis failed (status {status})"));
    }
    Ok(())
}

/// The samples of one request, shared between a worker and the child it
/// forks for the request: the child writes them, the worker sends them on.
///
/// A shared mapping is not copied at `fork`, and its pages, once touched,
/// stay in place for the next child, so a request's audio costs no fresh
/// pages and no copy through a pipe. Pages are reserved only when touched.
struct SharedPcm {
    ptr: std::ptr::NonNull<i16>,
    capacity: usize,
}

/// Room for one request's audio: 128 Mi samples, about 100 minutes at
/// 22,050 Hz (a request is one chunk of at most a few hundred characters).
const SHARED_SAMPLES: usize = 128 << 20;

impl SharedPcm {
    fn new(capacity: usize) -> std::io::Result<SharedPcm> {
        // SAFETY: a fresh anonymous mapping; no existing memory is touched.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                capacity * 2,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let ptr = std::ptr::NonNull::new(ptr as *mut i16)
            .ok_or_else(|| std::io::Error::other("mmap returned null"))?;
        Ok(SharedPcm { ptr, capacity })
    }

    /// The first `len` samples as little-endian bytes.
    fn bytes(&self, len: usize) -> std::borrow::Cow<'_, [u8]> {
        let len = len.min(self.capacity);
        // SAFETY: the mapping holds `capacity` samples, and no child writes
        // to it while the worker reads (the child has exited).
        let samples = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), len) };
        if cfg!(target_endian = "little") {
            // SAFETY: any i16 is two valid bytes; the length is in bounds.
            std::borrow::Cow::Borrowed(unsafe {
                std::slice::from_raw_parts(samples.as_ptr() as *const u8, len * 2)
            })
        } else {
            std::borrow::Cow::Owned(samples.iter().flat_map(|s| s.to_le_bytes()).collect())
        }
    }
}

impl Drop for SharedPcm {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `new` with this length and is not
        // used after this.
        unsafe { libc::munmap(self.ptr.as_ptr() as *mut c_void, self.capacity * 2) };
    }
}

/// Worker mode: read JSON requests from stdin, one per line; answer each with
/// a JSON line, then the samples as 16-bit little-endian PCM.
///
/// Each request is synthesized in a child process forked for it from the
/// initialized engine, so every request starts from the same engine state
/// and the same request always gives the same samples. libespeak-ng keeps
/// state from one synthesis to the next that no API resets (the position in
/// its pitch-flutter table and the roughness cycle counter are static
/// variables; `espeak_Cancel`, re-selecting the voice or parameters and even
/// `espeak_Terminate` + `espeak_Initialize` leave them alone), which made a
/// chunk's audio depend on what the worker had spoken before.
///
/// Call it only from a single-threaded process (the worker mode of the
/// binary, before any runtime starts): the child of a multi-threaded process
/// may find a lock held by a thread that does not exist there.
pub fn run_worker(input: impl BufRead, output: impl Write) -> std::io::Result<()> {
    // A reply (seconds of 16-bit audio) fits in the pipe to the parent at
    // once, instead of waking the worker for every 64 KiB the parent reads.
    // SAFETY: fcntl on fd 1 only changes its buffer size (or fails harmlessly).
    unsafe { libc::fcntl(1, libc::F_SETPIPE_SZ, PIPE_SIZE) };
    serve(input, output, Isolation::ForkPerRequest)
}

/// Pipe buffer for replies (the default unprivileged maximum).
const PIPE_SIZE: c_int = 1 << 20;

/// How [`serve`] runs each request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Isolation {
    /// In a child process forked from the initialized engine (reproducible).
    ForkPerRequest,
    /// In this process (output depends on earlier requests).
    #[cfg_attr(not(test), allow(dead_code))]
    InProcess,
}

fn serve(input: impl BufRead, mut output: impl Write, isolation: Isolation) -> std::io::Result<()> {
    // Initialized before the first fork, so that no child pays for it and
    // every child starts from this state.
    let ready = engine();
    let shared = match isolation {
        Isolation::ForkPerRequest => Some(SharedPcm::new(SHARED_SAMPLES)?),
        Isolation::InProcess => None,
    };
    // The voice selected in this process: loading a voice takes longer than
    // forking, so the parent loads it once and the children only speak.
    let mut selected: Option<String> = None;
    for line in input.lines() {
        let line = line?;
        let request = serde_json::from_str::<EngineRequest>(&line);
        match (request, &ready, &shared) {
            (Err(e), _, _) => write_reply(&mut output, &Err(format!("bad request: {e}")), &[])?,
            (Ok(_), Err(e), _) => write_reply(&mut output, &Err(e.clone()), &[])?,
            (Ok(req), Ok(_), None) => match synthesize_blocking(&req) {
                Ok(clip) => {
                    let pcm: Vec<u8> = clip
                        .samples
                        .iter()
                        .flat_map(|s| {
                            ((s * 32768.0).round().clamp(-32768.0, 32767.0) as i16).to_le_bytes()
                        })
                        .collect();
                    write_reply(&mut output, &Ok(clip.sample_rate), &pcm)?
                }
                Err(e) => write_reply(&mut output, &Err(e), &[])?,
            },
            (Ok(req), Ok(engine), Some(shared)) => {
                let guard = engine.lock().unwrap_or_else(|e| e.into_inner());
                let voice = if selected.as_deref() == Some(req.voice.as_str()) {
                    Ok(())
                } else {
                    selected = None;
                    select_voice(&guard, &req.voice)
                        .inspect(|()| selected = Some(req.voice.clone()))
                };
                let spoken = voice.and_then(|()| {
                    synthesize_in_child(&req, shared)
                        .unwrap_or_else(|e| Err(format!("synthesis process failed: {e}")))
                });
                match spoken {
                    Ok(len) => {
                        write_reply(&mut output, &Ok(guard.sample_rate), &shared.bytes(len))?
                    }
                    Err(e) => write_reply(&mut output, &Err(e), &[])?,
                }
            }
        }
        output.flush()?;
    }
    Ok(())
}

/// Writes a reply in the worker protocol: a JSON line, then `pcm` (16-bit
/// little-endian samples) when `result` is the sample rate.
fn write_reply(
    output: &mut impl Write,
    result: &Result<u32, String>,
    pcm: &[u8],
) -> std::io::Result<()> {
    let header = match result {
        Ok(sample_rate) => WorkerReply {
            samples: Some(pcm.len() / 2),
            sample_rate: Some(*sample_rate),
            error: None,
        },
        Err(error) => WorkerReply {
            samples: None,
            sample_rate: None,
            error: Some(error.clone()),
        },
    };
    let mut line = serde_json::to_vec(&header).map_err(std::io::Error::other)?;
    line.push(b'\n');
    output.write_all(&line)?;
    if result.is_ok() {
        output.write_all(pcm)?;
    }
    Ok(())
}

/// What a child reports to its worker: the number of samples it left in
/// the shared buffer, or why it failed.
#[derive(Debug, Serialize, Deserialize)]
struct ChildReport {
    samples: Option<usize>,
    error: Option<String>,
}

/// Speaks `req` with the selected voice in a child process forked for it.
/// The child leaves the samples at the start of `shared` and reports their
/// number (or its error) through a pipe.
fn synthesize_in_child(
    req: &EngineRequest,
    shared: &SharedPcm,
) -> std::io::Result<Result<usize, String>> {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};

    let mut fds: [c_int; 2] = [0; 2];
    // SAFETY: `pipe` writes two new descriptors into `fds`.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the worker process is single-threaded (see `run_worker`), so
    // the child may run ordinary code: no lock can be held by another thread.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        drop(read_end);
        // A panic must not unwind into the parent's frames (the child would
        // go on serving requests): it ends the child like any failure.
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            CAPTURE.with(|c| {
                *c.borrow_mut() = Sink::Shared {
                    buf: shared.ptr.as_ptr(),
                    capacity: shared.capacity,
                    len: 0,
                    populated: 0,
                    overflow: false,
                }
            });
            let result = synthesize_into_sink(req);
            let report = CAPTURE.with(|c| match (&*c.borrow(), result) {
                (Sink::Shared { overflow: true, .. }, _) => ChildReport {
                    samples: None,
                    error: Some(format!(
                        "one request gave more than {} minutes of audio",
                        shared.capacity / 22050 / 60
                    )),
                },
                (Sink::Shared { len, .. }, Ok(())) => ChildReport {
                    samples: Some(*len),
                    error: None,
                },
                (_, Err(e)) => ChildReport {
                    samples: None,
                    error: Some(e),
                },
                (Sink::Vec(_), Ok(())) => ChildReport {
                    samples: None,
                    error: Some("capture was not set up".into()),
                },
            });
            let bytes = serde_json::to_vec(&report).unwrap_or_default();
            let mut pipe = std::fs::File::from(write_end);
            if pipe.write_all(&bytes).is_ok() { 0 } else { 1 }
        }))
        .unwrap_or(2);
        // SAFETY: ends the child at once, without running destructors or
        // flushing buffers that belong to the parent.
        unsafe { libc::_exit(code) }
    }
    drop(write_end);
    let mut report = Vec::new();
    let read = std::fs::File::from(read_end).read_to_end(&mut report);
    let mut status: c_int = 0;
    loop {
        // SAFETY: `pid` is our child; `status` is a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    read?;
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        return Err(std::io::Error::other(format!(
            "child ended abnormally (wait status {status})"
        )));
    }
    let report: ChildReport = serde_json::from_slice(&report)
        .map_err(|_| std::io::Error::other("unreadable report from child"))?;
    Ok(match (report.samples, report.error) {
        (Some(n), None) if n <= shared.capacity => Ok(n),
        (_, Some(e)) => Err(e),
        _ => Err("bad report from child".into()),
    })
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
    let samples = bytes
        .chunks_exact(2)
        .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
        .collect();
    AudioClip::new(samples, sample_rate)
}

// ---------------------------------------------------------------------------
// Backend

struct Worker {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The one voice it speaks, loaded by its first request.
    voice: Option<String>,
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
            voice: None,
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

    fn warm_up(&self) {
        let Some(program) = &self.worker_program else {
            return;
        };
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while idle.len() < self.workers {
            match self.spawn_worker(program) {
                Ok(worker) => idle.push(worker),
                // The first request will try again and report the error.
                Err(_) => break,
            }
        }
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
        // A worker speaks one voice for its whole life: libespeak-ng keeps
        // state from every voice it loads, and after enough switches its
        // children return cut-off audio (seen on a long book), so a worker
        // that switched would no longer give the same bytes as a fresh one.
        // Take a worker with this voice, else one that has none yet, else
        // start another.
        let popped = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            let voice = Some(engine_req.voice.as_str());
            idle.iter()
                .rposition(|w| w.voice.as_deref() == voice)
                .or_else(|| idle.iter().rposition(|w| w.voice.is_none()))
                .map(|i| idle.remove(i))
        };
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
                worker.voice = Some(engine_req.voice.clone());
                let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
                idle.push(worker);
                // Idle workers of voices no longer asked for are let go
                // (oldest first); a few per voice may wait.
                if idle.len() > self.workers * MAX_IDLE_PER_SLOT {
                    idle.remove(0);
                }
                drop(idle);
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

    /// Tests that synthesize in this process take turns: the forked test
    /// needs the engine's state to stay put between its requests.
    static TURN: Mutex<()> = Mutex::new(());

    fn turn() -> std::sync::MutexGuard<'static, ()> {
        TURN.lock().unwrap_or_else(|e| e.into_inner())
    }

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
        let _turn = turn();
        let clip = synthesize_blocking(&req("cmn-latn-pinyin", "ni3 hao3, shi4 jie4.")).unwrap();
        assert_eq!(clip.sample_rate, 22050);
        let secs = clip.duration_s();
        assert!((0.5..4.0).contains(&secs), "{secs}");
        assert!(clip.peak() > 0.05);
    }

    #[test]
    fn unknown_voice_is_an_error() {
        let _turn = turn();
        let err = synthesize_blocking(&req("no-such-voice-xx", "ni3")).unwrap_err();
        assert!(err.contains("no-such-voice-xx"), "{err}");
    }

    #[test]
    fn worker_protocol_round_trip() {
        let _turn = turn();
        let mut input = serde_json::to_string(&req("cmn-latn-pinyin", "ma1 ma1")).unwrap();
        input.push('\n');
        input.push_str("not json\n");
        let mut out = Vec::new();
        serve(input.as_bytes(), &mut out, Isolation::InProcess).unwrap();
        let mut reader = std::io::Cursor::new(out);
        let clip = read_reply(&mut reader).unwrap().unwrap();
        assert!(clip.duration_s() > 0.2);
        let err = read_reply(&mut reader).unwrap().unwrap_err();
        assert!(err.starts_with("bad request"), "{err}");
    }

    #[test]
    fn forked_requests_do_not_depend_on_earlier_ones() {
        let _turn = turn();
        let same = req(
            "cmn-latn-pinyin",
            "chao2 shui3 tui4 dao4 jiao1 shi2 hou4 mian4.",
        );
        let mut other = req("cmn-latn-pinyin+m3", "jin1 wan3 you3 chuan2 jin4 gang3.");
        other.pitch = Some(70);
        let mut input = String::new();
        for r in [&same, &other, &same, &same, &other, &same] {
            input.push_str(&serde_json::to_string(r).unwrap());
            input.push('\n');
        }
        let mut out = Vec::new();
        serve(input.as_bytes(), &mut out, Isolation::ForkPerRequest).unwrap();
        let mut reader = std::io::Cursor::new(out);
        let clips: Vec<AudioClip> = (0..6)
            .map(|_| read_reply(&mut reader).unwrap().unwrap())
            .collect();
        assert!(clips[0].duration_s() > 0.5);
        for i in [2, 3, 5] {
            assert_eq!(clips[i], clips[0], "reply {i}");
        }
        assert_eq!(clips[4], clips[1]);
        assert_ne!(clips[0], clips[1]);
    }
}
