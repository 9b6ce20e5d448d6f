//! The embedded offline voice: libespeak-ng (linked in-process) speaking
//! tone-numbered pinyin through its `cmn-latn-pinyin` voice.
//!
//! libespeak-ng keeps global state, so one process synthesizes one chunk at a
//! time. Parallel synthesis uses worker processes — the `tingshu` binary
//! itself in its hidden `__espeak-worker` mode, one per voice — that fork a
//! child for every request from their initialized engine; without a worker
//! program the backend synthesizes in this process, one chunk at a time.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::ffi::{CString, c_int, c_short, c_void};
#[cfg(test)]
use std::io::BufRead;
use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

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
    /// Requests synthesized at once, each in a process of its own; 0 = two
    /// more than the CPU cores (so a core never waits for the next request).
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
    /// Names the reply (the worker answers in the order requests finish).
    #[serde(default)]
    pub id: u64,
    pub voice: String,
    pub rate: u32,
    pub pitch: Option<u8>,
    pub text: String,
    /// `text` is SSML (see [`engine_text`]).
    #[serde(default)]
    pub ssml: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct WorkerReply {
    id: Option<u64>,
    samples: Option<usize>,
    sample_rate: Option<u32>,
    error: Option<String>,
}

/// The espeak-ng voice that reads Latin words (not spelled tokens).
const LATIN_WORD_VOICE: &str = "en-us";

/// The text espeak-ng is given for a [`Spoken::pinyin`](crate::frontend::Spoken)
/// string, and whether it is SSML.
///
/// The `cmn-latn-pinyin` voice says single letters the way a Chinese
/// speaker does (Q → kiu, A → ei), so a spelled token (`GDP`) goes to it as
/// separate letters (`G D P`: as one token it would read `VIP` as a word).
/// It reads Latin words badly, so a run of word tokens (`iPhone`, `App
/// Store`) is spoken by an English voice through SSML `<voice>` elements,
/// switching back to `voice` after it.
pub fn engine_text(pinyin: &str, voice: &str) -> (String, bool) {
    use crate::frontend::pinyin::{is_latin_token, is_spelled};
    let core = |t: &'_ str| t.trim_end_matches([',', '.', '!', '?']).len();
    let is_word = |t: &str| {
        let c = &t[..core(t)];
        is_latin_token(c) && !is_spelled(c)
    };
    let spell = |t: &str, out: &mut String| {
        let (c, mark) = t.split_at(core(t));
        if is_spelled(c) && c.len() > 1 {
            for (i, letter) in c.chars().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push(letter);
            }
            out.push_str(mark);
        } else {
            out.push_str(t);
        }
    };
    let tokens: Vec<&str> = pinyin.split(' ').filter(|t| !t.is_empty()).collect();
    if !tokens.iter().any(|t| is_word(t)) {
        let mut out = String::with_capacity(pinyin.len() + 8);
        for (i, t) in tokens.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            spell(t, &mut out);
        }
        return (out, false);
    }
    let voice = xml_escape(voice);
    let mut out = String::with_capacity(pinyin.len() + 64);
    out.push_str("<speak>");
    let mut english: Option<bool> = None;
    for t in tokens {
        let word = is_word(t);
        if english != Some(word) {
            if english.is_some() {
                out.push_str("</voice>");
            }
            let name = if word { LATIN_WORD_VOICE } else { &voice };
            out.push_str(&format!("<voice name=\"{name}\">"));
            english = Some(word);
        } else {
            out.push(' ');
        }
        spell(t, &mut out);
    }
    out.push_str("</voice></speak>");
    (out, true)
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
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
/// Samples per 4 KiB page: populated ranges stay page-aligned.
const PAGE_SAMPLES: usize = 2048;

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
                let upto = (*populated + POPULATE_STEP)
                    .max(end.next_multiple_of(PAGE_SAMPLES))
                    .min(*capacity);
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
            sys::espeakCHARS_UTF8 | if req.ssml { sys::espeakSSML } else { 0 },
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

/// Worker mode: read requests from `input`, one JSON line each (with an
/// `id`); answer each with a JSON line carrying its `id`, then the samples as
/// 16-bit little-endian PCM. Replies come in the order requests finish.
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
/// Children run side by side (up to [`max_children`]): one worker process
/// per voice keeps every core busy, and a request that arrives while others
/// run starts at once instead of waiting for the worker.
///
/// Call it only from a single-threaded process (the worker mode of the
/// binary, before any runtime starts): the child of a multi-threaded process
/// may find a lock held by a thread that does not exist there.
pub fn run_worker(input: std::fs::File, output: impl Write) -> std::io::Result<()> {
    // A reply (seconds of 16-bit audio) fits in the pipe to the parent at
    // once, instead of waking the worker for every 64 KiB the parent reads.
    // SAFETY: fcntl on fd 1 only changes its buffer size (or fails harmlessly).
    unsafe { libc::fcntl(1, libc::F_SETPIPE_SZ, PIPE_SIZE) };
    serve_forked(input, output)
}

/// Pipe buffer for replies (the default unprivileged maximum).
const PIPE_SIZE: c_int = 1 << 20;

/// Children one worker runs at once (two per CPU core, at least 4; the
/// backend sends no more than cores + 2 by default); further requests wait
/// in its queue.
pub fn max_children() -> usize {
    std::thread::available_parallelism().map_or(4, |n| (2 * n.get()).max(4))
}

/// A child synthesizing one request.
struct Running {
    pid: libc::pid_t,
    /// Read end of the pipe its report comes through.
    report: std::fs::File,
    /// Its shared buffer.
    slot: usize,
    id: u64,
}

/// [`run_worker`] without the pipe set-up.
fn serve_forked(mut input: std::fs::File, mut output: impl Write) -> std::io::Result<()> {
    use std::io::Read;
    use std::os::fd::AsRawFd;

    // Initialized before the first fork, so that no child pays for it and
    // every child starts from this state.
    let ready = engine();
    let mut slots: Vec<SharedPcm> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut running: Vec<Running> = Vec::new();
    let mut queue: VecDeque<Vec<u8>> = VecDeque::new();
    let mut unread: Vec<u8> = Vec::new();
    let mut input_open = true;
    // The voice selected in this process: loading a voice takes longer than
    // forking, so the parent loads it once and the children only speak.
    let mut selected: Option<String> = None;
    let mut chunk = vec![0u8; 1 << 16];
    let max_children = max_children();
    let rate = ready.as_ref().map_or(0, |engine| {
        engine.lock().unwrap_or_else(|e| e.into_inner()).sample_rate
    });
    loop {
        while running.len() < max_children {
            let Some(line) = queue.pop_front() else {
                break;
            };
            let req = match serde_json::from_slice::<EngineRequest>(&line) {
                Ok(req) => req,
                Err(e) => {
                    write_reply(&mut output, None, &Err(format!("bad request: {e}")), &[])?;
                    continue;
                }
            };
            let id = req.id;
            let engine = match &ready {
                Ok(engine) => engine.lock().unwrap_or_else(|e| e.into_inner()),
                Err(e) => {
                    write_reply(&mut output, Some(id), &Err(e.clone()), &[])?;
                    continue;
                }
            };
            if selected.as_deref() != Some(req.voice.as_str()) {
                selected = None;
                if let Err(e) = select_voice(&engine, &req.voice) {
                    write_reply(&mut output, Some(id), &Err(e), &[])?;
                    continue;
                }
                selected = Some(req.voice.clone());
            }
            let slot = match free.pop() {
                Some(slot) => slot,
                None => {
                    slots.push(SharedPcm::new(SHARED_SAMPLES)?);
                    slots.len() - 1
                }
            };
            match fork_child(&req, &slots[slot]) {
                Ok((pid, report)) => running.push(Running {
                    pid,
                    report,
                    slot,
                    id,
                }),
                Err(e) => {
                    free.push(slot);
                    let message = format!("synthesis process failed: {e}");
                    write_reply(&mut output, Some(id), &Err(message), &[])?;
                }
            }
        }
        output.flush()?;
        if !input_open && running.is_empty() && queue.is_empty() {
            return Ok(());
        }

        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(running.len() + 1);
        if input_open {
            fds.push(libc::pollfd {
                fd: input.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        fds.extend(running.iter().map(|r| libc::pollfd {
            fd: r.report.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }));
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd entries.
        if unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) } < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let mut children = &fds[..];
        if input_open {
            if fds[0].revents != 0 {
                let n = input.read(&mut chunk)?;
                if n == 0 {
                    input_open = false;
                }
                unread.extend_from_slice(&chunk[..n]);
                while let Some(end) = unread.iter().position(|&b| b == b'\n') {
                    let mut line: Vec<u8> = unread.drain(..=end).collect();
                    line.pop();
                    queue.push_back(line);
                }
                if !input_open && !unread.is_empty() {
                    queue.push_back(std::mem::take(&mut unread));
                }
            }
            children = &fds[1..];
        }
        // From the back, so that `swap_remove` only moves children already
        // looked at.
        for i in (0..running.len()).rev() {
            if children[i].revents == 0 {
                continue;
            }
            let child = running.swap_remove(i);
            let spoken = finish_child(child.pid, child.report, slots[child.slot].capacity)
                .unwrap_or_else(|e| Err(format!("synthesis process failed: {e}")));
            match spoken {
                Ok(len) => write_reply(
                    &mut output,
                    Some(child.id),
                    &Ok(rate),
                    &slots[child.slot].bytes(len),
                )?,
                Err(e) => write_reply(&mut output, Some(child.id), &Err(e), &[])?,
            }
            free.push(child.slot);
        }
    }
}

/// Serves requests one after another in this process (output depends on
/// earlier requests); for tests of the protocol.
#[cfg(test)]
fn serve_in_process(input: impl BufRead, mut output: impl Write) -> std::io::Result<()> {
    for line in input.lines() {
        let line = line?;
        match serde_json::from_str::<EngineRequest>(&line) {
            Err(e) => write_reply(&mut output, None, &Err(format!("bad request: {e}")), &[])?,
            Ok(req) => match synthesize_blocking(&req) {
                Ok(clip) => {
                    let pcm: Vec<u8> = clip
                        .samples
                        .iter()
                        .flat_map(|s| {
                            ((s * 32768.0).round().clamp(-32768.0, 32767.0) as i16).to_le_bytes()
                        })
                        .collect();
                    write_reply(&mut output, Some(req.id), &Ok(clip.sample_rate), &pcm)?
                }
                Err(e) => write_reply(&mut output, Some(req.id), &Err(e), &[])?,
            },
        }
    }
    output.flush()
}

/// Writes a reply in the worker protocol: a JSON line, then `pcm` (16-bit
/// little-endian samples) when `result` is the sample rate.
fn write_reply(
    output: &mut impl Write,
    id: Option<u64>,
    result: &Result<u32, String>,
    pcm: &[u8],
) -> std::io::Result<()> {
    let header = match result {
        Ok(sample_rate) => WorkerReply {
            id,
            samples: Some(pcm.len() / 2),
            sample_rate: Some(*sample_rate),
            error: None,
        },
        Err(error) => WorkerReply {
            id,
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

/// Forks a child that speaks `req` with the selected voice, leaves the
/// samples at the start of `shared` and reports their number (or its error)
/// through the pipe whose read end is returned.
fn fork_child(
    req: &EngineRequest,
    shared: &SharedPcm,
) -> std::io::Result<(libc::pid_t, std::fs::File)> {
    use std::os::fd::{FromRawFd, OwnedFd};

    let mut fds: [c_int; 2] = [0; 2];
    // SAFETY: `pipe2` writes two new descriptors into `fds`.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
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
    Ok((pid, std::fs::File::from(read_end)))
}

/// Collects a child's report (it writes it just before it exits) and its
/// exit status.
fn finish_child(
    pid: libc::pid_t,
    mut report: std::fs::File,
    capacity: usize,
) -> std::io::Result<Result<usize, String>> {
    use std::io::Read;

    let mut bytes = Vec::new();
    let read = report.read_to_end(&mut bytes);
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
    let report: ChildReport = serde_json::from_slice(&bytes)
        .map_err(|_| std::io::Error::other("unreadable report from child"))?;
    Ok(match (report.samples, report.error) {
        (Some(n), None) if n <= capacity => Ok(n),
        (_, Some(e)) => Err(e),
        _ => Err("bad report from child".into()),
    })
}

/// Reads one worker reply (blocking): its id and result; for tests of the
/// protocol.
#[cfg(test)]
fn read_reply(
    mut input: impl BufRead,
) -> std::io::Result<(Option<u64>, Result<AudioClip, String>)> {
    let mut line = String::new();
    input.read_line(&mut line)?;
    let header: WorkerReply = serde_json::from_str(&line).map_err(std::io::Error::other)?;
    if let Some(error) = header.error {
        return Ok((header.id, Err(error)));
    }
    let n = header.samples.unwrap_or(0);
    let mut bytes = vec![0u8; n * 2];
    input.read_exact(&mut bytes)?;
    Ok((
        header.id,
        Ok(pcm_clip(&bytes, header.sample_rate.unwrap_or(22050))),
    ))
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

type Reply = std::io::Result<Result<AudioClip, String>>;

/// Requests sent to one worker process and not yet answered.
#[derive(Default)]
struct Waiters {
    state: Mutex<WaitersState>,
}

#[derive(Default)]
struct WaitersState {
    waiting: HashMap<u64, tokio::sync::oneshot::Sender<Reply>>,
    /// Why the worker can take no more requests.
    closed: Option<String>,
}

impl Waiters {
    fn lock(&self) -> std::sync::MutexGuard<'_, WaitersState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers request `id`; `None` if the worker is gone.
    fn add(&self, id: u64) -> Option<tokio::sync::oneshot::Receiver<Reply>> {
        let mut state = self.lock();
        if state.closed.is_some() {
            return None;
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        state.waiting.insert(id, tx);
        Some(rx)
    }

    fn answer(&self, id: u64, reply: Reply) {
        if let Some(tx) = self.lock().waiting.remove(&id) {
            // The requester may have given up (timeout): nothing to do.
            let _ = tx.send(reply);
        }
    }

    /// Fails every waiting request and refuses new ones.
    fn close(&self, why: String) {
        let waiting = {
            let mut state = self.lock();
            state.closed.get_or_insert(why.clone());
            std::mem::take(&mut state.waiting)
        };
        for (_, tx) in waiting {
            let _ = tx.send(Err(std::io::Error::other(why.clone())));
        }
    }

    fn is_closed(&self) -> bool {
        self.lock().closed.is_some()
    }
}

/// A worker process: one voice, any number of requests in flight.
struct Worker {
    /// Killed when dropped.
    _child: Child,
    pid: Option<u32>,
    stdin: tokio::sync::Mutex<ChildStdin>,
    waiters: Arc<Waiters>,
    next_id: AtomicU64,
}

/// The worker processes of a backend, by the voice each speaks for its
/// whole life.
#[derive(Default)]
struct Workers {
    by_voice: HashMap<String, Arc<Worker>>,
}

/// The `espeak` backend.
pub struct Espeak {
    name: String,
    config: EspeakConfig,
    /// Program to start as a worker; `None` = synthesize in this process.
    worker_program: Option<PathBuf>,
    /// Requests synthesized at once.
    concurrency: usize,
    workers: Mutex<Workers>,
    permits: Semaphore,
}

impl Espeak {
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
            workers: Mutex::new(Workers::default()),
            permits: Semaphore::new(concurrency),
        }
    }

    /// Process ids of the worker processes running now (for diagnostics
    /// and tests).
    pub fn worker_ids(&self) -> Vec<u32> {
        let workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        workers
            .by_voice
            .values()
            .filter(|w| !w.waiters.is_closed())
            .filter_map(|w| w.pid)
            .collect()
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

    /// Starts a worker process and the task that reads its replies (needs
    /// a tokio runtime).
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
        let waiters = Arc::new(Waiters::default());
        tokio::spawn(read_replies(stdout, Arc::clone(&waiters)));
        Ok(Worker {
            pid: child.id(),
            _child: child,
            stdin: tokio::sync::Mutex::new(stdin),
            waiters,
            next_id: AtomicU64::new(1),
        })
    }

    /// The worker for `voice`, started if it has none or it died.
    /// A worker speaks one voice for its whole life: libespeak-ng keeps
    /// state from every voice it loads, and after enough switches its
    /// children returned cut-off audio (seen on a long book), so a worker
    /// that switched would no longer give the same bytes as a fresh one.
    fn worker_for(&self, voice: &str, program: &PathBuf) -> std::io::Result<Arc<Worker>> {
        let mut workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(worker) = workers.by_voice.get(voice)
            && !worker.waiters.is_closed()
        {
            return Ok(Arc::clone(worker));
        }
        let worker = Arc::new(self.spawn_worker(program)?);
        workers
            .by_voice
            .insert(voice.to_owned(), Arc::clone(&worker));
        Ok(worker)
    }

    async fn ask_worker(worker: &Worker, mut req: EngineRequest) -> Reply {
        req.id = worker.next_id.fetch_add(1, Ordering::Relaxed);
        let reply = worker
            .waiters
            .add(req.id)
            .ok_or_else(|| std::io::Error::other("worker exited"))?;
        let mut line = serde_json::to_vec(&req).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let sent = {
            let mut stdin = worker.stdin.lock().await;
            match stdin.write_all(&line).await {
                Ok(()) => stdin.flush().await,
                Err(e) => Err(e),
            }
        };
        if let Err(e) = sent {
            worker.waiters.close(format!("cannot write to worker: {e}"));
            return Err(e);
        }
        reply
            .await
            .unwrap_or_else(|_| Err(std::io::Error::other("worker exited")))
    }

    fn engine_error(&self, message: String) -> SynthError {
        SynthError::Engine {
            backend: self.name.clone(),
            message,
        }
    }
}

/// Reads a worker's replies and hands each to the request waiting for it;
/// when the worker's output ends or cannot be read, fails the rest.
async fn read_replies(stdout: ChildStdout, waiters: Arc<Waiters>) {
    let mut reader = BufReader::with_capacity(1 << 16, stdout);
    let mut line = String::new();
    // Reused: a reply's bytes land in memory that is already mapped.
    let mut bytes = Vec::new();
    let why = loop {
        line.clear();
        match reader.read_line(&mut line).await {
            Ok(0) => break "worker exited".to_owned(),
            Ok(_) => {}
            Err(e) => break format!("cannot read from worker: {e}"),
        }
        let header: WorkerReply = match serde_json::from_str(&line) {
            Ok(header) => header,
            Err(e) => break format!("bad reply from worker: {e}"),
        };
        let Some(id) = header.id else {
            break format!(
                "reply without a request id: {}",
                header.error.unwrap_or_default()
            );
        };
        let result = match header.error {
            Some(error) => Err(error),
            None => {
                bytes.resize(header.samples.unwrap_or(0) * 2, 0);
                if let Err(e) = reader.read_exact(&mut bytes).await {
                    break format!("cannot read from worker: {e}");
                }
                Ok(pcm_clip(&bytes, header.sample_rate.unwrap_or(22050)))
            }
        };
        waiters.answer(id, Ok(result));
    };
    waiters.close(why);
}

#[async_trait]
impl Synthesizer for Espeak {
    fn name(&self) -> &str {
        &self.name
    }

    fn limits(&self) -> Limits {
        Limits {
            max_chars: self.config.max_chars,
            max_in_flight: self.concurrency,
        }
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
        let mut workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        for voice in voices.iter().take(WARM_WORKERS) {
            if workers.by_voice.contains_key(voice) {
                continue;
            }
            match self.spawn_worker(program) {
                Ok(worker) => {
                    workers.by_voice.insert(voice.clone(), Arc::new(worker));
                }
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
        let worker_error = |source| SynthError::Worker {
            backend: self.name.clone(),
            source,
        };
        let worker = self
            .worker_for(&engine_req.voice, program)
            .map_err(worker_error)?;
        Self::ask_worker(&worker, engine_req)
            .await
            .map_err(worker_error)?
            .map_err(|e| self.engine_error(e))
    }
}

/// Worker processes started before the first request (for the voices used
/// most); others start on their first request.
const WARM_WORKERS: usize = 4;

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
            id: 0,
            voice: voice.into(),
            rate: 230,
            pitch: None,
            text: text.into(),
            ssml: false,
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
    fn latin_tokens_become_letters_or_an_english_voice() {
        assert_eq!(
            engine_text("yi1 tiao2 QQ xiao1 xi5, GDP.", "cmn-latn-pinyin"),
            ("yi1 tiao2 Q Q xiao1 xi5, G D P.".to_owned(), false)
        );
        let (ssml, is_ssml) = engine_text("da3 kai1 App Store, iPhone le5", "cmn-latn-pinyin+m3");
        assert!(is_ssml);
        assert_eq!(
            ssml,
            "<speak><voice name=\"cmn-latn-pinyin+m3\">da3 kai1</voice>\
             <voice name=\"en-us\">App Store, iPhone</voice>\
             <voice name=\"cmn-latn-pinyin+m3\">le5</voice></speak>"
        );
        // The SSML is spoken, and longer than the pinyin alone.
        let _turn = turn();
        let mut with_word = req("cmn-latn-pinyin", &ssml);
        with_word.ssml = true;
        let words = synthesize_blocking(&with_word).unwrap();
        let plain = synthesize_blocking(&req("cmn-latn-pinyin", "da3 kai1 le5")).unwrap();
        assert!(words.samples.len() > plain.samples.len() * 3 / 2);
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
        let mut first = req("cmn-latn-pinyin", "ma1 ma1");
        first.id = 7;
        let mut input = serde_json::to_string(&first).unwrap();
        input.push('\n');
        input.push_str("not json\n");
        let mut out = Vec::new();
        serve_in_process(input.as_bytes(), &mut out).unwrap();
        let mut reader = std::io::Cursor::new(out);
        let (id, clip) = read_reply(&mut reader).unwrap();
        assert_eq!(id, Some(7));
        assert!(clip.unwrap().duration_s() > 0.2);
        let (id, err) = read_reply(&mut reader).unwrap();
        assert_eq!(id, None);
        assert!(err.unwrap_err().starts_with("bad request"));
    }

    /// Runs requests through the forking worker loop; replies by id.
    fn serve_forked_replies(requests: &[EngineRequest]) -> Vec<Result<AudioClip, String>> {
        let mut input = tempfile::tempfile().unwrap();
        for (i, r) in requests.iter().enumerate() {
            let mut r = r.clone();
            r.id = i as u64;
            writeln!(input, "{}", serde_json::to_string(&r).unwrap()).unwrap();
        }
        use std::io::Seek;
        input.rewind().unwrap();
        let mut out = Vec::new();
        serve_forked(input, &mut out).unwrap();
        let mut reader = std::io::Cursor::new(out);
        let mut replies: Vec<Option<Result<AudioClip, String>>> = vec![None; requests.len()];
        for _ in 0..requests.len() {
            let (id, result) = read_reply(&mut reader).unwrap();
            let slot = &mut replies[id.unwrap() as usize];
            assert!(slot.is_none(), "two replies for request {id:?}");
            *slot = Some(result);
        }
        assert_eq!(reader.position() as usize, reader.get_ref().len());
        replies.into_iter().map(Option::unwrap).collect()
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
        // More requests than children at once, so some wait their turn.
        let mut requests = Vec::new();
        for _ in 0..=max_children() / 2 {
            requests.extend([same.clone(), other.clone()]);
        }
        requests.push(req("no-such-voice-xx", "ni3"));
        let clips = serve_forked_replies(&requests);
        let first = clips[0].clone().unwrap();
        let second = clips[1].clone().unwrap();
        assert!(first.duration_s() > 0.5);
        assert_ne!(first, second);
        for (i, clip) in clips[..clips.len() - 1].iter().enumerate() {
            let expected = if i % 2 == 0 { &first } else { &second };
            assert_eq!(clip.as_ref().unwrap(), expected, "reply {i}");
        }
        let err = clips.last().unwrap().clone().unwrap_err();
        assert!(err.contains("no-such-voice-xx"), "{err}");
    }
}
