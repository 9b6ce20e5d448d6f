//! The fork server: a worker process that forks a child from its
//! initialized engine for every request, so that each request starts from
//! the same engine state.

use std::collections::VecDeque;
use std::ffi::{c_int, c_void};
use std::io::Write;

use serde::{Deserialize, Serialize};

use super::EngineRequest;
use super::ffi::{engine, select_voice, synthesize_into_buffer};
use super::protocol::write_reply;

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
/// # Safety
///
/// The process must be single-threaded when this is called and stay so
/// until it returns (the worker mode of the binary, before any runtime
/// starts): every child runs ordinary code after `fork`, and the child of a
/// multi-threaded process may find a lock held by a thread that does not
/// exist there.
pub unsafe fn run_worker(input: std::fs::File, output: impl Write) -> std::io::Result<()> {
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
    // every child starts from this state. The lock is held until the last
    // child is forked: nothing else in the process may speak (which moves
    // the engine's hidden state on) between two forks.
    let mut ready = engine().map(|engine| engine.lock().unwrap_or_else(|e| e.into_inner()));
    let mut slots: Vec<SharedPcm> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut running: Vec<Running> = Vec::new();
    let mut queue: VecDeque<Vec<u8>> = VecDeque::new();
    let mut unread: Vec<u8> = Vec::new();
    let mut input_open = true;
    let mut chunk = vec![0u8; 1 << 16];
    let max_children = max_children();
    let rate = ready.as_ref().map_or(0, |engine| engine.sample_rate);
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
            let engine = match &mut ready {
                Ok(engine) => engine,
                Err(e) => {
                    write_reply(&mut output, Some(id), &Err(e.clone()), &[])?;
                    continue;
                }
            };
            // Loading a voice takes longer than forking, so the parent
            // loads it once and the children only speak. The engine records
            // the selection under its lock, so a voice selected meanwhile by
            // another caller in this process is noticed.
            if engine.voice.as_deref() != Some(req.voice.as_str())
                && let Err(e) = select_voice(engine, &req.voice)
            {
                write_reply(&mut output, Some(id), &Err(e), &[])?;
                continue;
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
    // SAFETY: the worker process is single-threaded (the contract of
    // `run_worker`, the only caller outside this module's tests), so the
    // child may run ordinary code: no lock can be held by another thread.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        drop(read_end);
        // A panic must not unwind into the parent's frames (the child would
        // go on serving requests): it ends the child like any failure.
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: `shared` holds `capacity` writable samples that only
            // this child touches until it exits, and the worker forked it
            // holding the engine's lock.
            let spoken =
                unsafe { synthesize_into_buffer(req, shared.ptr.as_ptr(), shared.capacity) };
            let report = match spoken {
                Ok(len) => ChildReport {
                    samples: Some(len),
                    error: None,
                },
                Err(e) => ChildReport {
                    samples: None,
                    error: Some(e),
                },
            };
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

#[cfg(test)]
mod tests {
    use std::io::Seek;

    use super::*;
    use crate::audio::AudioClip;
    use crate::synth::espeak::protocol::read_reply;
    use crate::synth::espeak::tests::{req, turn};

    /// Runs requests through the forking worker loop; replies by id.
    fn serve_forked_replies(requests: &[EngineRequest]) -> Vec<Result<AudioClip, String>> {
        let mut input = tempfile::tempfile().unwrap();
        for (i, r) in requests.iter().enumerate() {
            let mut r = r.clone();
            r.id = i as u64;
            writeln!(input, "{}", serde_json::to_string(&r).unwrap()).unwrap();
        }
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
        // Other callers in the process speak and select voices meanwhile
        // (in-process synthesis, the neural voice's English phonemes): the
        // forks must not start from the state they leave.
        let done = std::sync::atomic::AtomicBool::new(false);
        let clips = std::thread::scope(|scope| {
            scope.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    crate::synth::espeak::synthesize_blocking(&req("cmn-latn-pinyin", "hai3"))
                        .unwrap();
                    crate::synth::espeak::phonemes_ipa("en-us", "harbour").unwrap();
                }
            });
            let clips = serve_forked_replies(&requests);
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            clips
        });
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
