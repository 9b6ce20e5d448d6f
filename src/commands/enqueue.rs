//! `tingshu enqueue BOOK… --queue URL`: plans every chapter of each book into
//! idempotent tasks on a shared queue, for `tingshu worker` processes on any
//! number of machines. (`batch enqueue JOBS.toml` plans each job's pending
//! chapters with [`plan_chapters`] and hands them to [`enqueue_plans`].)

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::build::{book_dir, chapter_job};
use super::select::ChapterSelection;
use super::{EXIT_OK, sanitize_file_name};
use crate::book::{Book, read_book};
use crate::cli::EnqueueArgs;
use crate::pipeline::Renderer;
use crate::queue::plan::{BookPlanInput, VoicesSource, plan_book};
use crate::queue::{self, EnqueueReport, JobPlan, TaskQueue};

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
    enqueue_plans(queue, &plans).await
}

/// Enqueues planned jobs, one report per plan.
pub async fn enqueue_plans(
    queue: &dyn TaskQueue,
    plans: &[JobPlan],
) -> anyhow::Result<Vec<EnqueueReport>> {
    let mut reports = Vec::new();
    for plan in plans {
        reports.push(queue.enqueue(plan).await?);
    }
    Ok(reports)
}

fn plan_job(job: &EnqueueJob) -> anyhow::Result<JobPlan> {
    let book = read_book(&job.book)?;
    let voices = VoicesSource::load(job.voices.as_deref())?;
    let out = absolute(&job.out)?;
    let dir = book_dir(&out, &book.stem);
    let count = book.script.chapters.len();
    let selected: Vec<usize> = match &job.chapters {
        Some(list) => list
            .iter()
            .copied()
            .filter(|&i| i >= 1 && i <= count)
            .collect(),
        None => (1..=count).collect(),
    };
    plan_chapters(&job.name, &book, voices, &dir, &selected)
}

/// Plans chapters `chapters` (1-based, in range) of `book` as job `name`,
/// written to `dir` (made absolute for workers elsewhere) under the same
/// file names as `tingshu build`.
pub fn plan_chapters(
    name: &str,
    book: &Book,
    voices: VoicesSource,
    dir: &Path,
    chapters: &[usize],
) -> anyhow::Result<JobPlan> {
    let renderer = Renderer::new(voices.parse()?, None);
    let dir = absolute(dir)?;
    let chapters = chapters
        .iter()
        .filter_map(|&index| {
            let chapter = book.script.chapters.get(index.checked_sub(1)?)?;
            Some(chapter_job(&dir, index, chapter))
        })
        .collect();
    let input = BookPlanInput {
        job: name.to_owned(),
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
