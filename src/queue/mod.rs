//! Scale-out: one library rendered by many machines through a shared task
//! queue (PostgreSQL or Redis) and a shared synthesis cache ([`crate::synth::cache`]).
//!
//! Work is planned into three kinds of task (see [`plan`]):
//! - `synth` — synthesize one chunk into the synthesis cache; its id is the
//!   chunk's content hash, so the same chunk is synthesized once however
//!   many chapters, books or enqueue runs ask for it;
//! - `mix` — mix and write one chapter from cached clips; it waits until
//!   every `synth` task it depends on is done, so exactly one worker mixes it;
//! - `book` — refresh the book's `manifest.json` from the results of its
//!   `mix` tasks, once all of them are done.
//!
//! Task ids are content hashes, so enqueueing the same work twice adds
//! nothing. A running task holds a lease that its worker keeps renewing; a
//! task whose worker dies is taken again when the lease runs out. A task
//! that keeps failing is parked with its last error after `max_attempts`.

pub mod enqueue;
pub mod plan;
pub mod postgres;
pub mod redis;
pub mod worker;

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// What a task does; also its order of preference when claiming.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskKind {
    /// Write a book's manifest (claimed first: it is quick).
    Book,
    /// Mix one chapter (before more synthesis, so chapters finish early).
    Mix,
    /// Synthesize one chunk.
    Synth,
}

impl TaskKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskKind::Book => "book",
            TaskKind::Mix => "mix",
            TaskKind::Synth => "synth",
        }
    }

    pub fn parse(s: &str) -> Option<TaskKind> {
        match s {
            "book" => Some(TaskKind::Book),
            "mix" => Some(TaskKind::Mix),
            "synth" => Some(TaskKind::Synth),
            _ => None,
        }
    }

    /// Lower is claimed first.
    pub fn priority(self) -> i32 {
        match self {
            TaskKind::Book => 0,
            TaskKind::Mix => 1,
            TaskKind::Synth => 2,
        }
    }
}

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskState {
    /// Waiting for the tasks it depends on.
    Waiting,
    /// Ready to be claimed (possibly after a back-off delay).
    Queued,
    /// Claimed by a worker holding a lease.
    Running,
    Done,
    /// Failed too often, or failed for good; holds its last error.
    Parked,
}

impl TaskState {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Waiting => "waiting",
            TaskState::Queued => "queued",
            TaskState::Running => "running",
            TaskState::Done => "done",
            TaskState::Parked => "parked",
        }
    }

    pub fn parse(s: &str) -> Option<TaskState> {
        match s {
            "waiting" => Some(TaskState::Waiting),
            "queued" => Some(TaskState::Queued),
            "running" => Some(TaskState::Running),
            "done" => Some(TaskState::Done),
            "parked" => Some(TaskState::Parked),
            _ => None,
        }
    }
}

/// A task to add to the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    /// Content hash of everything the task does (`synth:…`, `mix:…`, `book:…`).
    pub id: String,
    pub kind: TaskKind,
    /// JSON [`plan::TaskSpec`].
    pub payload: String,
    /// Ids of tasks that must be done before this one can run.
    pub depends_on: Vec<String>,
    pub max_attempts: u32,
}

/// The tasks of one job (a book rendered into one output directory).
#[derive(Debug, Clone, PartialEq)]
pub struct JobPlan {
    /// Name shown by the status command.
    pub job: String,
    /// In the order they should run; dependencies come before dependents.
    pub tasks: Vec<NewTask>,
}

/// What enqueueing did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EnqueueReport {
    /// Tasks in the plan.
    pub planned: usize,
    /// Tasks that were not in the queue before (or were parked and are
    /// queued again).
    pub added: usize,
}

/// A task claimed by a worker.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    pub id: String,
    pub kind: TaskKind,
    pub payload: String,
    /// 1 on the first try.
    pub attempt: u32,
}

/// Task counts of one job.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JobStatus {
    pub job: String,
    /// (kind, state, count), ordered.
    pub counts: Vec<(TaskKind, TaskState, u64)>,
    /// (task id, error) of parked tasks, at most a few.
    pub parked: Vec<(String, String)>,
}

impl JobStatus {
    /// Number of tasks of this job in `state`, all kinds together.
    pub fn count(&self, state: TaskState) -> u64 {
        self.counts
            .iter()
            .filter(|(_, s, _)| *s == state)
            .map(|(_, _, n)| n)
            .sum()
    }
}

/// Whole-queue counts, to know when there is nothing left to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueTotals {
    /// Queued or running: work that will still happen.
    pub active: u64,
    pub waiting: u64,
    pub parked: u64,
}

/// Why a queue operation failed.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("unsupported queue URL '{url}' (use postgres://… or redis://…)")]
    Scheme { url: String },
    #[error("queue URL {url}: {message}")]
    BadUrl { url: String, message: String },
    #[error("queue {url}: cannot connect: {message}")]
    Connect { url: String, message: String },
    #[error("queue: {op} failed: {message}")]
    Backend { op: &'static str, message: String },
    #[error("queue: task {id}: {message}")]
    Corrupt { id: String, message: String },
}

impl QueueError {
    /// Whether the queue server failed (unreachable, refused an operation)
    /// rather than the input being wrong: a runtime failure (exit 1), not
    /// bad input (exit 2).
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            QueueError::Connect { .. } | QueueError::Backend { .. }
        )
    }
}

/// A queue of tasks shared by many workers. Every operation is atomic.
#[async_trait]
pub trait TaskQueue: Send + Sync {
    /// Adds a job's tasks, their dependencies and their membership of the
    /// job. Tasks already present are left as they are (a parked one is
    /// queued again with fresh attempts).
    async fn enqueue(&self, plan: &JobPlan) -> Result<EnqueueReport, QueueError>;

    /// Takes the next ready task, or a running one whose lease ran out,
    /// leasing it to `worker` for `lease`.
    async fn claim(&self, worker: &str, lease: Duration) -> Result<Option<Claimed>, QueueError>;

    /// Renews the lease; false when the task is no longer this worker's.
    async fn heartbeat(&self, id: &str, worker: &str, lease: Duration) -> Result<bool, QueueError>;

    /// Marks a task done with its result and readies the tasks waiting on it.
    async fn complete(&self, id: &str, result: Option<&str>) -> Result<(), QueueError>;

    /// Records a failure: queued again after `backoff` if `retry` and
    /// attempts are left, parked otherwise. Returns the new state.
    async fn fail(
        &self,
        id: &str,
        worker: &str,
        error: &str,
        retry: bool,
        backoff: Duration,
    ) -> Result<TaskState, QueueError>;

    /// Results of the done tasks that `id` depends on.
    async fn dependency_results(&self, id: &str) -> Result<Vec<String>, QueueError>;

    /// Counts per job, ordered by job name.
    async fn status(&self) -> Result<Vec<JobStatus>, QueueError>;

    async fn totals(&self) -> Result<QueueTotals, QueueError>;
}

/// Opens the queue at `url`: `postgres://…` / `postgresql://…` (tables are
/// created when missing) or `redis://…` / `rediss://…`.
pub async fn connect(url: &str, connections: u32) -> Result<Box<dyn TaskQueue>, QueueError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Box::new(
            postgres::PgQueue::connect(url, connections).await?,
        ))
    } else if url.starts_with("redis://") || url.starts_with("rediss://") {
        Ok(Box::new(redis::RedisQueue::connect(url).await?))
    } else {
        Err(QueueError::Scheme { url: redact(url) })
    }
}

/// The URL without its password, for messages (see [`crate::redact`]).
pub fn redact(url: &str) -> String {
    crate::redact::redact(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            redact("postgres://tts:s3cret@db:5432/q"),
            "postgres://tts:***@db:5432/q"
        );
        assert_eq!(
            redact("postgres://tts@db/q"),
            "postgres://tts@db/q".to_owned()
        );
        assert_eq!(redact("postgres:///q"), "postgres:///q");
        assert_eq!(
            redact("redis://:pw@127.0.0.1/0"),
            "redis://:***@127.0.0.1/0"
        );
    }

    #[test]
    fn kinds_and_states_round_trip() {
        for kind in [TaskKind::Book, TaskKind::Mix, TaskKind::Synth] {
            assert_eq!(TaskKind::parse(kind.as_str()), Some(kind));
        }
        for state in [
            TaskState::Waiting,
            TaskState::Queued,
            TaskState::Running,
            TaskState::Done,
            TaskState::Parked,
        ] {
            assert_eq!(TaskState::parse(state.as_str()), Some(state));
        }
        assert!(TaskKind::Mix.priority() < TaskKind::Synth.priority());
    }
}
