//! `tingshu enqueue BOOK… --queue URL`: plans every chapter of each book into
//! idempotent tasks on a shared queue, for `tingshu worker` processes on any
//! number of machines. (`batch enqueue JOBS.toml` hands its jobs to
//! [`enqueue_jobs`].)

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::select::ChapterSelection;
use super::{EXIT_OK, sanitize_file_name};
use crate::book::read_book;
use crate::cli::EnqueueArgs;
use crate::pipeline::{ChapterJob, Renderer};
use crate::queue::plan::{BookPlanInput, VoicesSource, plan_book};
use crate::queue::{self, EnqueueReport, TaskQueue};

/// One book to render on the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct EnqueueJob {
    /// Name shown by `queue-status` (the book's file stem by default).
    pub name: String,
    pub book: PathBuf,
    /// Voices file; the built-in voices when `None`.
    pub voices: Option<PathBuf>,
    /// Output directory; the book goes to `out/<book file stem>/` as with
    /// `tingshu build`. Workers write there, so it must be shared.
    pub out: PathBuf,
    /// 1-based chapters to render; all when `None`.
    pub chapters: Option<Vec<usize>>,
}

/// Runs `enqueue`.
pub async fn run(args: &EnqueueArgs) -> anyhow::Result<u8> {
    let mut jobs = Vec::new();
    for book in &args.books {
        let chapters = match &args.chapters {
            Some(spec) => {
                let count = read_book(book)?.script.chapters.len();
                Some(ChapterSelection::parse(spec)?.resolve(spec, count)?)
            }
            None => None,
        };
        let name = book
            .file_stem()
            .map(|s| sanitize_file_name(&s.to_string_lossy()))
            .unwrap_or_else(|| "book".into());
        jobs.push(EnqueueJob {
            name,
            book: book.clone(),
            voices: args.voices.clone(),
            out: args.out.clone(),
            chapters,
        });
    }
    let queue = queue::connect(&args.queue, 2).await?;
    for (job, report) in jobs.iter().zip(enqueue_jobs(queue.as_ref(), &jobs).await?) {
        eprintln!(
            "{}: {} tasks planned, {} new",
            job.name, report.planned, report.added
        );
    }
    Ok(EXIT_OK)
}

/// Plans and enqueues `jobs`. Every book is read and checked before
/// anything is enqueued, so bad input adds nothing.
pub async fn enqueue_jobs(
    queue: &dyn TaskQueue,
    jobs: &[EnqueueJob],
) -> anyhow::Result<Vec<EnqueueReport>> {
    let mut plans = Vec::new();
    for job in jobs {
        plans.push(plan_job(job)?);
    }
    let mut reports = Vec::new();
    for plan in &plans {
        reports.push(queue.enqueue(plan).await?);
    }
    Ok(reports)
}

fn plan_job(job: &EnqueueJob) -> anyhow::Result<crate::queue::JobPlan> {
    let book = read_book(&job.book)?;
    let voices = VoicesSource::load(job.voices.as_deref())?;
    let renderer = Renderer::new(voices.parse()?, None);
    let out = absolute(&job.out)?;
    let dir = out.join(sanitize_file_name(&book.stem));
    let count = book.script.chapters.len();
    let selected: Vec<usize> = match &job.chapters {
        Some(list) => list
            .iter()
            .copied()
            .filter(|&i| i >= 1 && i <= count)
            .collect(),
        None => (1..=count).collect(),
    };
    let chapters = selected
        .into_iter()
        .map(|index| {
            let chapter = book.script.chapters[index - 1].clone();
            let path = dir.join(format!(
                "{index:04}-{}.wav",
                sanitize_file_name(&chapter.title)
            ));
            ChapterJob {
                index,
                chapter,
                path,
            }
        })
        .collect();
    let input = BookPlanInput {
        job: job.name.clone(),
        book: book.script.book.clone(),
        dir,
        chapters,
        voices,
        max_attempts: MAX_ATTEMPTS,
    };
    Ok(plan_book(&input, &renderer))
}

/// Tries of one task before it is parked.
pub const MAX_ATTEMPTS: u32 = 5;

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path)
        .with_context(|| format!("cannot resolve output directory {}", path.display()))
}
