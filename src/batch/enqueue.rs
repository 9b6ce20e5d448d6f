//! `batch enqueue` and `batch daemon --queue`: a job's pending chapters (new
//! or changed) planned as tasks on a shared queue, for `tingshu worker`s
//! that write the files `batch run` would and record them the same way.

use std::path::PathBuf;

use super::refresh::book_files_hash;
use super::run::{JobSession, plan_job};
use super::state::BookState;
use super::{BatchError, Job, format_indices};
use crate::queue::{JobPlan, TaskQueue};

/// Plans and enqueues one job; the line to log.
pub async fn enqueue_job(queue: &dyn TaskQueue, job: &Job) -> Result<String, BatchError> {
    let planned = plan_for_queue(job)?;
    submit(queue, job, &planned).await
}

/// One job's pending chapters, planned as queue tasks.
pub struct QueuePlan {
    /// `None` when every chapter is up to date.
    plan: Option<JobPlan>,
    pending: Vec<usize>,
    chapters: usize,
    dir: PathBuf,
}

/// Plans the chapters `batch run` would render now (new or changed ones) as
/// tasks named after the job.
pub fn plan_for_queue(job: &Job) -> Result<QueuePlan, BatchError> {
    let inputs = JobSession::open(job, None, false)?;
    let session = &inputs.session;
    let dir = std::path::absolute(job.book_dir()).map_err(|source| BatchError::Resolve {
        path: job.out.clone(),
        source,
    })?;
    let state = BookState::read(&dir, &job.name);
    let plan = plan_job(job, &inputs, &dir, &state);
    let pending: Vec<usize> = plan.pending().map(|c| c.index).collect();
    let tasks = if pending.is_empty() {
        None
    } else {
        // Workers record each mixed chapter under this hash in the state.
        let hashed: Vec<(usize, String)> =
            plan.pending().map(|c| (c.index, c.hash.clone())).collect();
        // Workers write the same files as `batch run` and record them under
        // the same hashes, so its next run leaves them alone.
        let mut outputs = session.book_outputs(&job.formats, &dir)?;
        outputs.feed = job.feed_link(&dir);
        let book_hash = book_files_hash(&plan, &outputs);
        Some(crate::queue::enqueue::plan_batch_chapters(
            &job.name, session, &dir, &hashed, &outputs, book_hash,
        )?)
    };
    Ok(QueuePlan {
        plan: tasks,
        pending,
        chapters: plan.chapters.len(),
        dir,
    })
}

/// Enqueues a planned job; the line to log.
pub async fn submit(
    queue: &dyn TaskQueue,
    job: &Job,
    planned: &QueuePlan,
) -> Result<String, BatchError> {
    let Some(plan) = &planned.plan else {
        return Ok(format!(
            "job \"{}\": all {} chapters up to date, nothing enqueued",
            job.name, planned.chapters
        ));
    };
    let reports = crate::queue::enqueue::enqueue_plans(queue, std::slice::from_ref(plan)).await?;
    let (tasks, added) = reports.first().map_or((0, 0), |r| (r.planned, r.added));
    Ok(format!(
        "job \"{}\": {} of {} chapters pending ({}) → {}; {tasks} tasks planned, {added} new",
        job.name,
        planned.pending.len(),
        planned.chapters,
        format_indices(&planned.pending),
        planned.dir.display(),
    ))
}
