//! Enqueueing books: every chapter of each book planned into idempotent
//! tasks on a shared queue, for `tingshu worker` processes on any number of
//! machines (`tingshu enqueue`). `batch enqueue` plans each job's pending
//! chapters with [`plan_batch_chapters`] and hands them to [`enqueue_plans`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::plan::{BookPlanInput, OutputsSpec, plan_book};
use super::{EnqueueReport, JobPlan, QueueError, TaskQueue};
use crate::audio::encode::Format;
use crate::book::Book;
use crate::names::book_dir;
use crate::outputs::BookOutputs;
use crate::session::{RenderSession, SessionError, SessionSpec, chapter_job};

/// Why books could not be planned or enqueued.
#[derive(Debug, thiserror::Error)]
pub enum EnqueueError {
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("cannot resolve output directory {}", path.display())]
    Resolve {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Queue(#[from] QueueError),
}

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

/// Plans and enqueues `jobs`. Every book is read and checked before
/// anything is enqueued, so bad input adds nothing.
pub async fn enqueue_jobs(
    queue: &dyn TaskQueue,
    jobs: &[EnqueueJob],
) -> Result<Vec<EnqueueReport>, EnqueueError> {
    enqueue_plans(queue, &plan_jobs(jobs)?).await
}

/// Reads and plans every job (nothing touches the queue).
pub fn plan_jobs(jobs: &[EnqueueJob]) -> Result<Vec<JobPlan>, EnqueueError> {
    jobs.iter().map(plan_job).collect()
}

/// Enqueues planned jobs, one report per plan.
pub async fn enqueue_plans(
    queue: &dyn TaskQueue,
    plans: &[JobPlan],
) -> Result<Vec<EnqueueReport>, EnqueueError> {
    let mut reports = Vec::new();
    for plan in plans {
        reports.push(queue.enqueue(plan).await?);
    }
    Ok(reports)
}

fn plan_job(job: &EnqueueJob) -> Result<JobPlan, EnqueueError> {
    let session = RenderSession::open(&SessionSpec {
        voices: job.voices.clone(),
        cast: job.cast.clone(),
        lexicon: job.lexicon.clone(),
        overrides: None,
        ..SessionSpec::for_file(&job.book)
    })?;
    let book = &session.book;
    let out = absolute(&job.out)?;
    let dir = book_dir(&out, &book.stem);
    let outputs = session.book_outputs(&job.formats, &dir)?;
    let count = book.script.chapters.len();
    let selected: Vec<usize> = match &job.chapters {
        Some(list) => list
            .iter()
            .copied()
            .filter(|&i| i >= 1 && i <= count)
            .collect(),
        None => (1..=count).collect(),
    };
    plan_chapters(&job.name, &session, &dir, &selected, &outputs)
}

/// Plans chapters `chapters` (1-based, in range) of `book` as job `name`,
/// written to `dir` (made absolute for workers elsewhere) under the same
/// file names, with the same subtitles, encoded files, playlist and M4B
/// (`outputs`), as `tingshu build`.
pub fn plan_chapters(
    name: &str,
    session: &RenderSession,
    dir: &Path,
    chapters: &[usize],
    outputs: &BookOutputs,
) -> Result<JobPlan, EnqueueError> {
    let total = Some(session.book.script.chapters.len());
    plan_with_hashes(
        name,
        session,
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
    session: &RenderSession,
    dir: &Path,
    chapters: &[(usize, String)],
    outputs: &BookOutputs,
    book_hash: String,
) -> Result<JobPlan, EnqueueError> {
    let indices: Vec<usize> = chapters.iter().map(|(i, _)| *i).collect();
    let hashes = chapters.iter().cloned().collect();
    plan_with_hashes(
        name,
        session,
        dir,
        &indices,
        (outputs, None),
        hashes,
        Some(book_hash),
    )
}

fn plan_with_hashes(
    name: &str,
    session: &RenderSession,
    dir: &Path,
    chapters: &[usize],
    (outputs, total): (&BookOutputs, Option<usize>),
    batch_hashes: BTreeMap<usize, String>,
    book_hash: Option<String>,
) -> Result<JobPlan, EnqueueError> {
    let book: &Book = &session.book;
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
        voices: session.voices.clone(),
        max_attempts: MAX_ATTEMPTS,
        batch_hashes,
        book_hash,
    };
    Ok(plan_book(&input, &session.renderer))
}

/// Tries of one task before it is parked.
pub const MAX_ATTEMPTS: u32 = 5;

fn absolute(path: &Path) -> Result<PathBuf, EnqueueError> {
    std::path::absolute(path).map_err(|source| EnqueueError::Resolve {
        path: path.to_owned(),
        source,
    })
}
