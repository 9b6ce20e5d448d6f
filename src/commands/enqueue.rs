//! `tingshu enqueue BOOK… --queue URL`: plans every chapter of each book into
//! idempotent tasks on a shared queue, for `tingshu worker` processes on any
//! number of machines. (`batch enqueue JOBS.toml` plans each job's pending
//! chapters with [`plan_chapters`] and hands them to [`enqueue_plans`].)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::build::{book_dir, chapter_job};
use super::select::ChapterSelection;
use super::{EXIT_OK, sanitize_file_name};
use crate::audio::encode::Format;
use crate::book::{Book, read_book, read_book_with_cast};
use crate::cli::EnqueueArgs;
use crate::outputs::BookOutputs;
use crate::pipeline::Renderer;
use crate::queue::plan::{BookPlanInput, OutputsSpec, VoicesSource, plan_book};
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
    /// Cast file (speakers and their voices).
    pub cast: Option<PathBuf>,
    /// Pronunciation lexicon (EPUB ruby readings are added as `build` does).
    pub lexicon: Option<PathBuf>,
    /// Output formats, as `build --format` (workers run ffmpeg for MP3,
    /// Opus and M4B).
    pub formats: Vec<Format>,
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
            cast: args.cast.clone(),
            lexicon: args.lexicon.clone(),
            formats: args.format.clone(),
        });
    }
    let plans = plan_jobs(&jobs)?;
    let queue = queue::connect(&args.queue, 2).await?;
    for (job, report) in jobs
        .iter()
        .zip(enqueue_plans(queue.as_ref(), &plans).await?)
    {
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
    enqueue_plans(queue, &plan_jobs(jobs)?).await
}

/// Reads and plans every job (nothing touches the queue).
fn plan_jobs(jobs: &[EnqueueJob]) -> anyhow::Result<Vec<JobPlan>> {
    jobs.iter().map(plan_job).collect()
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
    let cast = job
        .cast
        .as_deref()
        .map(crate::text::Cast::load)
        .transpose()?;
    let book = match &cast {
        Some(cast) => read_book_with_cast(&job.book, Some(cast))?,
        None => read_book(&job.book)?,
    };
    let mut voices = VoicesSource::load(job.voices.as_deref())?.with_cast(job.cast.as_deref())?;
    let lexicon = book.lexicon(job.lexicon.as_deref())?;
    voices.lexicon = lexicon.entries().to_vec();
    let out = absolute(&job.out)?;
    let dir = book_dir(&out, &book.stem);
    let sample_rate = voices.parse()?.mix.sample_rate;
    let outputs = super::batch::book_outputs(&book, sample_rate, &job.formats, &dir)?;
    let count = book.script.chapters.len();
    let selected: Vec<usize> = match &job.chapters {
        Some(list) => list
            .iter()
            .copied()
            .filter(|&i| i >= 1 && i <= count)
            .collect(),
        None => (1..=count).collect(),
    };
    plan_chapters(&job.name, &book, voices, &dir, &selected, &outputs)
}

/// Plans chapters `chapters` (1-based, in range) of `book` as job `name`,
/// written to `dir` (made absolute for workers elsewhere) under the same
/// file names, with the same subtitles, encoded files, playlist and M4B
/// (`outputs`), as `tingshu build`.
pub fn plan_chapters(
    name: &str,
    book: &Book,
    voices: VoicesSource,
    dir: &Path,
    chapters: &[usize],
    outputs: &BookOutputs,
) -> anyhow::Result<JobPlan> {
    let total = Some(book.script.chapters.len());
    plan_with_hashes(
        name,
        book,
        voices,
        dir,
        chapters,
        (outputs, total),
        BTreeMap::new(),
        None,
    )
}

/// [`plan_chapters`] for a batch job, with the files of `batch run`: each
/// chapter `(index, hash)` is recorded in the job's state file when its mix
/// is done, so `batch status` and the next `batch enqueue` see it rendered,
/// and the book-level files under `book_hash` when the book task is done.
pub fn plan_batch_chapters(
    name: &str,
    book: &Book,
    voices: VoicesSource,
    dir: &Path,
    chapters: &[(usize, String)],
    outputs: &BookOutputs,
    book_hash: String,
) -> anyhow::Result<JobPlan> {
    let indices: Vec<usize> = chapters.iter().map(|(i, _)| *i).collect();
    let hashes = chapters.iter().cloned().collect();
    plan_with_hashes(
        name,
        book,
        voices,
        dir,
        &indices,
        (outputs, None),
        hashes,
        Some(book_hash),
    )
}

#[allow(clippy::too_many_arguments)]
fn plan_with_hashes(
    name: &str,
    book: &Book,
    voices: VoicesSource,
    dir: &Path,
    chapters: &[usize],
    (outputs, total): (&BookOutputs, Option<usize>),
    batch_hashes: BTreeMap<usize, String>,
    book_hash: Option<String>,
) -> anyhow::Result<JobPlan> {
    let renderer = Renderer::new(voices.parse()?, None).with_lexicon(voices.lexicon());
    let dir = absolute(dir)?;
    let wav_dir = dir.join(outputs.wav_dir());
    let chapters = chapters
        .iter()
        .filter_map(|&index| {
            let chapter = book.script.chapters.get(index.checked_sub(1)?)?;
            Some(chapter_job(&wav_dir, index, chapter))
        })
        .collect();
    let input = BookPlanInput {
        job: name.to_owned(),
        book: book.script.book.clone(),
        outputs: Some(OutputsSpec::new(&dir, outputs, total)),
        dir,
        chapters,
        voices,
        max_attempts: MAX_ATTEMPTS,
        batch_hashes,
        book_hash,
    };
    Ok(plan_book(&input, &renderer))
}

/// Tries of one task before it is parked.
pub const MAX_ATTEMPTS: u32 = 5;

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path)
        .with_context(|| format!("cannot resolve output directory {}", path.display()))
}
