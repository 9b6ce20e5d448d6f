//! Command-line arguments (clap derive). Every option can also come from a
//! `TINGSHU_*` environment variable.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "tingshu",
    version,
    about = "听书 — turn Chinese web novels into audiobooks"
)]
pub struct Cli {
    /// More log output (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render a whole book (TXT) into one WAV file per chapter.
    Build(BuildArgs),
    /// Plan books into tasks on a shared queue for `tingshu worker`s.
    Enqueue(EnqueueArgs),
    /// Take tasks from a shared queue: synthesize, mix, write.
    Worker(WorkerArgs),
    /// Show queued, running, done and parked tasks per job on a queue.
    QueueStatus(QueueStatusArgs),
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The book: a TXT file in UTF-8, GB18030/GBK, Big5 or UTF-16.
    pub book: PathBuf,
    /// Output directory; the book goes to DIR/<book file stem>/.
    #[arg(long, short, default_value = "output", env = "TINGSHU_OUT")]
    pub out: PathBuf,
    /// Voices file (TOML); the built-in espeak-ng voices when absent.
    #[arg(long, env = "TINGSHU_VOICES")]
    pub voices: Option<PathBuf>,
    /// Chapters to render, by 1-based position: 3-7, 5, 3-, 1,4,6-8.
    #[arg(long)]
    pub chapters: Option<String>,
}

#[derive(Debug, Args)]
pub struct EnqueueArgs {
    /// The books (TXT files) to render.
    #[arg(required = true)]
    pub books: Vec<PathBuf>,
    /// The queue: postgres://user:password@host/db.
    #[arg(long, env = "TINGSHU_QUEUE")]
    pub queue: String,
    /// Output directory shared by the workers; each book goes to DIR/<stem>/.
    #[arg(long, short, default_value = "output", env = "TINGSHU_OUT")]
    pub out: PathBuf,
    /// Voices file (TOML); the built-in espeak-ng voices when absent.
    #[arg(long, env = "TINGSHU_VOICES")]
    pub voices: Option<PathBuf>,
    /// Chapters to render, by 1-based position: 3-7, 5, 3-, 1,4,6-8.
    #[arg(long)]
    pub chapters: Option<String>,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The queue: postgres://user:password@host/db.
    #[arg(long, env = "TINGSHU_QUEUE")]
    pub queue: String,
    /// Tasks run at once by this worker.
    #[arg(long, default_value_t = 4, env = "TINGSHU_CONCURRENCY")]
    pub concurrency: usize,
    /// Shared segment store (a directory every worker can reach).
    #[arg(long, default_value = "output/.cache", env = "TINGSHU_CACHE")]
    pub cache: PathBuf,
    /// Seconds a task stays this worker's without a heartbeat; a task of a
    /// worker that died is taken again after this.
    #[arg(long = "lease", default_value_t = 60, value_name = "SECONDS")]
    pub lease_s: u64,
    /// Stop when nothing is queued or running any more.
    #[arg(long)]
    pub until_idle: bool,
    /// Name recorded on the tasks this worker holds (default host:pid).
    #[arg(long)]
    pub name: Option<String>,
    /// Milliseconds between polls of an empty queue.
    #[arg(long, default_value_t = 250, hide = true)]
    pub poll_ms: u64,
    /// Adds this many milliseconds before every synthesis (benchmarks).
    #[arg(long, default_value_t = 0, hide = true)]
    pub simulate_latency_ms: u64,
}

#[derive(Debug, Args)]
pub struct QueueStatusArgs {
    /// The queue: postgres://user:password@host/db.
    #[arg(long, env = "TINGSHU_QUEUE")]
    pub queue: String,
}
