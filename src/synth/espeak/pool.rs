//! The backend's worker processes: one per voice, each with its requests in
//! flight and the task that reads its replies.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::protocol::{WorkerReply, pcm_clip};
use super::{EngineRequest, WORKER_ARG};
use crate::audio::AudioClip;

/// A worker's answer: the clip or the engine's error, or why the worker
/// could not answer.
pub(super) type Reply = std::io::Result<Result<AudioClip, String>>;

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
pub(super) struct Worker {
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
pub(super) struct WorkerPool {
    by_voice: HashMap<String, Arc<Worker>>,
}

impl Worker {
    /// Starts a worker process and the task that reads its replies (needs
    /// a tokio runtime).
    fn spawn(program: &Path) -> std::io::Result<Worker> {
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

    /// Sends `req` (under a fresh id) and waits for its reply.
    pub(super) async fn ask(&self, mut req: EngineRequest) -> Reply {
        req.id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let reply = self
            .waiters
            .add(req.id)
            .ok_or_else(|| std::io::Error::other("worker exited"))?;
        let mut line = serde_json::to_vec(&req).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let sent = {
            let mut stdin = self.stdin.lock().await;
            match stdin.write_all(&line).await {
                Ok(()) => stdin.flush().await,
                Err(e) => Err(e),
            }
        };
        if let Err(e) = sent {
            self.waiters.close(format!("cannot write to worker: {e}"));
            return Err(e);
        }
        reply
            .await
            .unwrap_or_else(|_| Err(std::io::Error::other("worker exited")))
    }
}

impl WorkerPool {
    /// Process ids of the workers that still take requests.
    pub(super) fn ids(&self) -> Vec<u32> {
        self.by_voice
            .values()
            .filter(|w| !w.waiters.is_closed())
            .filter_map(|w| w.pid)
            .collect()
    }

    /// The worker for `voice`, started if it has none or it died.
    /// A worker speaks one voice for its whole life: libespeak-ng keeps
    /// state from every voice it loads, and after enough switches its
    /// children returned cut-off audio (seen on a long book), so a worker
    /// that switched would no longer give the same bytes as a fresh one.
    pub(super) fn for_voice(
        &mut self,
        voice: &str,
        program: &Path,
    ) -> std::io::Result<Arc<Worker>> {
        if let Some(worker) = self.by_voice.get(voice)
            && !worker.waiters.is_closed()
        {
            return Ok(Arc::clone(worker));
        }
        let worker = Arc::new(Worker::spawn(program)?);
        self.by_voice.insert(voice.to_owned(), Arc::clone(&worker));
        Ok(worker)
    }

    /// Starts workers for the first [`WARM_WORKERS`] of `voices` that have
    /// none (needs a tokio runtime); stops at the first that fails to
    /// start.
    pub(super) fn warm_up(&mut self, voices: &[String], program: &Path) {
        for voice in voices.iter().take(WARM_WORKERS) {
            if self.by_voice.contains_key(voice) {
                continue;
            }
            match Worker::spawn(program) {
                Ok(worker) => {
                    self.by_voice.insert(voice.clone(), Arc::new(worker));
                }
                // The first request will try again and report the error.
                Err(_) => break,
            }
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

/// Worker processes started before the first request (for the voices used
/// most); others start on their first request.
const WARM_WORKERS: usize = 4;
