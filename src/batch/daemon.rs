//! `batch daemon`: each scheduled job on its schedule until SIGTERM/SIGINT;
//! with a queue, each firing enqueues the job's pending chapters instead of
//! rendering them here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::enqueue::enqueue_job;
use super::run::{check_encoder, run_job};
use super::schedule::{Clock, Timetable};
use super::shutdown::Shutdown;
use super::{BatchError, Job};
use crate::error::error_chain;
use crate::queue::TaskQueue;

/// `batch daemon`: each scheduled job on its schedule until SIGTERM/SIGINT;
/// with a `queue`, each firing enqueues the job's pending chapters instead of
/// rendering them here.
pub async fn run(
    jobs_file: &Path,
    jobs: Vec<Job>,
    worker_program: Option<PathBuf>,
    clock: &dyn Clock,
    queue: Option<&dyn TaskQueue>,
) -> Result<(), BatchError> {
    let jobs: Vec<Job> = jobs.into_iter().filter(|j| j.schedule.is_some()).collect();
    if jobs.is_empty() {
        return Err(BatchError::NoSchedule {
            file: jobs_file.to_owned(),
        });
    }
    if queue.is_none() {
        check_encoder(&jobs)?;
    }
    let mut shutdown = Shutdown::on_signals().map_err(BatchError::Signals)?;
    let schedules = jobs.iter().filter_map(|j| j.schedule.clone()).collect();
    let mut table = Timetable::new(schedules, clock.now());
    for (i, job) in jobs.iter().enumerate() {
        let next = match (table.next_of(i), &job.schedule) {
            (Some(t), Some(s)) => s.display_time(t),
            _ => "never".to_owned(),
        };
        eprintln!(
            "job \"{}\": scheduled \"{}\", next run {next}",
            job.name,
            schedule_expr(job)
        );
    }
    tracing::info!(jobs = jobs.len(), "batch daemon started");
    loop {
        let Some(wake) = table.next_wake() else {
            eprintln!("no schedule fires again; daemon stops");
            return Ok(());
        };
        // Wake at least once a minute, so that a changed wall clock is seen.
        let delay = (wake - clock.now())
            .to_std()
            .unwrap_or(Duration::ZERO)
            .min(Duration::from_secs(60));
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = shutdown.wait() => break,
        }
        for i in table.due(clock.now()) {
            if shutdown.requested() {
                break;
            }
            let job = &jobs[i];
            if let Some(queue) = queue {
                let line = match enqueue_job(queue, job).await {
                    Ok(line) => line,
                    Err(e) => format!("job \"{}\": failed: {}", job.name, error_chain(&e)),
                };
                table.done(i, clock.now());
                eprintln!("{line}; next run {}", next_run(&table, i, job));
                continue;
            }
            let report = run_job(job, worker_program.clone(), &mut shutdown).await;
            tracing::info!(
                job = %job.name,
                outcome = ?report.outcome,
                rendered = report.rendered,
                pending = report.pending,
                audio_s = report.audio_s,
                requests = report.requests,
                cache_hits = report.cache_hits,
                failures = report.failures.len(),
                "batch run finished"
            );
            table.done(i, clock.now());
            eprintln!("{}; next run {}", report.line(), next_run(&table, i, job));
        }
        if shutdown.requested() {
            break;
        }
    }
    eprintln!("batch daemon stopped");
    Ok(())
}

/// When job `i` of `table` runs next, for people.
fn next_run(table: &Timetable, i: usize, job: &Job) -> String {
    match (table.next_of(i), &job.schedule) {
        (Some(t), Some(s)) => s.display_time(t),
        _ => "never".to_owned(),
    }
}

fn schedule_expr(job: &Job) -> &str {
    job.schedule.as_ref().map_or("", |s| s.expr.as_str())
}
