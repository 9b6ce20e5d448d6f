//! `batch status`: what each job did last, when it runs next, and what is
//! pending.

use std::path::Path;

use chrono::Utc;

use super::run::{JobSession, plan_job};
use super::state::{BookState, LastRun, RunOutcome};
use super::{BatchError, Job, format_indices};
use crate::progress::format_duration;

/// What `batch status` prints of `jobs`: for each, its last run, next run,
/// pending chapters and failures.
pub fn text(jobs: &[Job]) -> String {
    let now = Utc::now();
    let mut out = String::new();
    for job in jobs {
        let dir = job.book_dir();
        out.push_str(&format!("job \"{}\" → {}\n", job.name, dir.display()));
        let last = LastRun::read(&dir);
        let last_line = match &last {
            None => "never".to_owned(),
            Some(run) => format!(
                "{} ({}): {} rendered, {} pending, {} audio, took {}, {} requests sent, {} chunks from the cache, {} other files written",
                run.finished.format("%Y-%m-%d %H:%M:%S UTC"),
                outcome_word(run.outcome),
                run.rendered,
                run.pending,
                format_duration(run.audio_s),
                format_duration((run.finished - run.started).num_milliseconds() as f64 / 1000.0),
                run.requests,
                run.cache_hits,
                run.outputs_written,
            ),
        };
        out.push_str(&format!("  last run: {last_line}\n"));
        let next_line = match &job.schedule {
            None => "not scheduled (no schedule key)".to_owned(),
            Some(s) => match s.next_after(now) {
                Some(t) => format!("{} ({})", s.display_time(t), s.expr),
                None => format!("never ({})", s.expr),
            },
        };
        out.push_str(&format!("  next run: {next_line}\n"));
        let pending_line = match pending_chapters(job, &dir) {
            Ok((pending, total)) if pending.is_empty() => {
                format!("none ({total} chapters up to date)")
            }
            Ok((pending, total)) => format!(
                "{} of {total} chapters: {}",
                pending.len(),
                format_indices(&pending)
            ),
            Err(e) => format!("unknown: {e:#}"),
        };
        out.push_str(&format!("  pending:  {pending_line}\n"));
        match last.as_ref().map(|r| r.failures.as_slice()) {
            None | Some([]) => out.push_str("  failures: none\n"),
            Some(failures) => {
                out.push_str(&format!("  failures: {}\n", failures.len()));
                for f in failures {
                    out.push_str(&format!("    {f}\n"));
                }
            }
        }
    }
    out
}

fn outcome_word(outcome: RunOutcome) -> &'static str {
    match outcome {
        RunOutcome::Ok => "ok",
        RunOutcome::Partial => "some chapters failed",
        RunOutcome::Interrupted => "interrupted",
        RunOutcome::Failed => "failed",
    }
}

/// The chapters of `job` a run would render now, and the book's chapter count.
fn pending_chapters(job: &Job, dir: &Path) -> Result<(Vec<usize>, usize), BatchError> {
    let inputs = JobSession::open(job, None, false)?;
    let state = BookState::read(dir, &job.name);
    let plan = plan_job(job, &inputs, dir, &state);
    let pending = plan.pending().map(|c| c.index).collect();
    Ok((pending, plan.chapters.len()))
}
