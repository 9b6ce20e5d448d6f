//! `tingshu batch run|daemon|status|enqueue JOBS.toml`: keep a library of
//! books up to date ([`crate::batch`]), rendering only new or changed
//! chapters through the same render session as `tingshu build` — here, or
//! (`enqueue`, `daemon --queue`) as tasks on a shared queue for
//! `tingshu worker`s.

use std::path::PathBuf;

use anyhow::Context;

use super::{EXIT_OK, EXIT_PARTIAL};
use crate::batch::enqueue::{plan_for_queue, submit};
use crate::batch::run::{check_encoder, run_job};
use crate::batch::schedule::SystemClock;
use crate::batch::shutdown::Shutdown;
use crate::batch::{Job, JobsFile};
use crate::cli::{BatchArgs, BatchCommand, BatchEnqueueArgs, BatchJobsArgs};
use crate::queue::{self, TaskState};

/// Runs a `batch` subcommand.
pub async fn run(args: &BatchArgs, worker_program: Option<PathBuf>) -> anyhow::Result<u8> {
    match &args.command {
        BatchCommand::Run(a) => run_once(a, worker_program).await,
        BatchCommand::Daemon(a) => {
            let queue = match &a.queue {
                Some(url) => Some(queue::connect(url, 2).await?),
                None => None,
            };
            let jobs = load_jobs(&a.jobs)?;
            crate::batch::daemon::run(
                &a.jobs.jobs,
                jobs,
                worker_program,
                &SystemClock,
                queue.as_deref(),
            )
            .await?;
            Ok(EXIT_OK)
        }
        BatchCommand::Status(a) => status(&a.jobs, a.queue.as_deref()).await,
        BatchCommand::Enqueue(a) => enqueue(a).await,
    }
}

/// Reads the jobs file and picks the jobs to work on.
fn load_jobs(args: &BatchJobsArgs) -> anyhow::Result<Vec<Job>> {
    let file = JobsFile::load(&args.jobs)?;
    Ok(file.select(args.job.as_deref())?)
}

/// `batch run`: every job once.
async fn run_once(args: &BatchJobsArgs, worker_program: Option<PathBuf>) -> anyhow::Result<u8> {
    let jobs = load_jobs(args)?;
    check_encoder(&jobs)?;
    let mut shutdown = Shutdown::on_signals().context("cannot install signal handlers")?;
    let mut code = EXIT_OK;
    for job in &jobs {
        if shutdown.requested() {
            eprintln!("job \"{}\": not started (stopping)", job.name);
            code = EXIT_PARTIAL;
            continue;
        }
        let report = run_job(job, worker_program.clone(), &mut shutdown).await;
        eprintln!("{}", report.line());
        if !report.is_ok() {
            code = EXIT_PARTIAL;
        }
    }
    Ok(code)
}

/// `batch enqueue`: every job's pending chapters as tasks on the queue. All
/// jobs are read and planned before anything is enqueued, so bad input adds
/// nothing.
async fn enqueue(args: &BatchEnqueueArgs) -> anyhow::Result<u8> {
    let jobs = load_jobs(&args.jobs)?;
    let mut planned = Vec::with_capacity(jobs.len());
    for job in &jobs {
        planned.push(plan_for_queue(job)?);
    }
    let queue = queue::connect(&args.queue, 2).await?;
    for (job, planned) in jobs.iter().zip(&planned) {
        let line = submit(queue.as_ref(), job, planned).await?;
        eprintln!("{line}");
    }
    Ok(EXIT_OK)
}

/// `batch status`: last run, next run, pending chapters and failures; with a
/// queue, the jobs' tasks on it.
async fn status(args: &BatchJobsArgs, queue_url: Option<&str>) -> anyhow::Result<u8> {
    let jobs = load_jobs(args)?;
    print!("{}", crate::batch::status::text(&jobs));
    let Some(url) = queue_url else {
        return Ok(EXIT_OK);
    };
    let queue = queue::connect(url, 1).await?;
    let on_queue: Vec<_> = queue
        .status()
        .await?
        .into_iter()
        .filter(|s| jobs.iter().any(|j| j.name == s.job))
        .collect();
    println!("queue {}:", queue::redact(url));
    if on_queue.is_empty() {
        println!("no tasks of these jobs");
    } else {
        print!("{}", super::queue_status::render(&on_queue));
    }
    let parked: u64 = on_queue.iter().map(|j| j.count(TaskState::Parked)).sum();
    Ok(if parked > 0 { EXIT_PARTIAL } else { EXIT_OK })
}
