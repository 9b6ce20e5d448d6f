//! `tingshu queue-status --queue URL`: tasks per job and state, and the
//! errors of parked tasks. (`batch status --queue URL` shows the same.)

use super::{EXIT_OK, EXIT_PARTIAL};
use crate::cli::QueueStatusArgs;
use crate::queue::{self, JobStatus, TaskKind, TaskState};

/// Runs `queue-status`.
pub async fn run(args: &QueueStatusArgs) -> anyhow::Result<u8> {
    let queue = queue::connect(&args.queue, 1).await?;
    let jobs = queue.status().await?;
    print!("{}", render(&jobs));
    let parked: u64 = jobs.iter().map(|j| j.count(TaskState::Parked)).sum();
    Ok(if parked > 0 { EXIT_PARTIAL } else { EXIT_OK })
}

/// The status table: one line per job, then chapter counts and parked errors.
pub fn render(jobs: &[JobStatus]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if jobs.is_empty() {
        out.push_str("queue is empty\n");
        return out;
    }
    let width = jobs
        .iter()
        .map(|j| j.job.chars().count())
        .max()
        .unwrap_or(3)
        .max(3);
    let _ = writeln!(
        out,
        "{:width$}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  chapters",
        "job", "waiting", "queued", "running", "done", "parked"
    );
    for job in jobs {
        let chapters_done = job
            .counts
            .iter()
            .filter(|(k, s, _)| *k == TaskKind::Mix && *s == TaskState::Done)
            .map(|(_, _, n)| n)
            .sum::<u64>();
        let chapters: u64 = job
            .counts
            .iter()
            .filter(|(k, _, _)| *k == TaskKind::Mix)
            .map(|(_, _, n)| n)
            .sum();
        let pad = width - job.job.chars().count();
        let _ = writeln!(
            out,
            "{}{}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {chapters_done}/{chapters}",
            job.job,
            " ".repeat(pad),
            job.count(TaskState::Waiting),
            job.count(TaskState::Queued),
            job.count(TaskState::Running),
            job.count(TaskState::Done),
            job.count(TaskState::Parked),
        );
    }
    for job in jobs {
        for (id, error) in &job.parked {
            let _ = writeln!(out, "parked: {}: {id}: {error}", job.job);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_counts_states_and_chapters() {
        let jobs = vec![JobStatus {
            job: "灯塔".into(),
            counts: vec![
                (TaskKind::Book, TaskState::Waiting, 1),
                (TaskKind::Mix, TaskState::Done, 2),
                (TaskKind::Mix, TaskState::Waiting, 1),
                (TaskKind::Synth, TaskState::Done, 7),
                (TaskKind::Synth, TaskState::Parked, 1),
            ],
            parked: vec![("synth:ab".into(), "backend local: boom".into())],
        }];
        let table = render(&jobs);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3, "{table}");
        let cells: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(cells, ["灯塔", "2", "0", "0", "9", "1", "2/3"]);
        assert_eq!(lines[2], "parked: 灯塔: synth:ab: backend local: boom");
        assert_eq!(render(&[]), "queue is empty\n");
    }
}
