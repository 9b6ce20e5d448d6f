//! `batch run`: one job once, under its lock — plan what is new or
//! changed, render it through the job's [`RenderSession`], make the files
//! besides the WAVs that are missing or out of date, and record the run.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use chrono::Utc;

use super::lock::{JobLock, LockError};
use super::refresh::{
    refresh_book_files, refresh_chapter_files, remove_output, remove_partial_files,
};
use super::shutdown::Shutdown;
use super::state::{BookState, LastRun, RunOutcome};
use super::{BatchError, Job, Plan, render_fingerprint};
use crate::audio::encode::Encoder;
use crate::error::error_chain;
use crate::manifest::Manifest;
use crate::outputs::{BookFile, BookOutputs, MANIFEST};
use crate::progress::{Progress, format_duration};
use crate::session::book::chapter_failure;
use crate::session::{BookInput, CacheSpec, RenderSession, SessionSpec, report};

/// The ffmpeg encoder, checked once per process.
fn encoder() -> Result<Encoder, String> {
    crate::outputs::system_encoder()
}

/// Checks, before anything is rendered, that ffmpeg runs when a job asks
/// for a format it makes: one line naming the first such job otherwise.
pub fn check_encoder(jobs: &[Job]) -> Result<(), BatchError> {
    if let Some(job) = jobs
        .iter()
        .find(|j| j.formats.iter().any(|f| f.needs_ffmpeg()))
        && let Err(message) = encoder()
    {
        return Err(BatchError::Formats {
            job: Some(job.name.clone()),
            message,
        });
    }
    Ok(())
}

/// The path of chapter WAVs of `job`, relative to its book directory: in
/// the book directory when `wav` is one of its formats, else in a hidden
/// folder (as `tingshu build` does).
fn wav_file_name(job: &Job) -> impl Fn(usize, &str) -> String + use<> {
    let outputs = BookOutputs::new("", 0, &job.formats);
    move |index, title| outputs.wav_file(index, title)
}

/// Plans a run of `job` in `dir`. A chapter whose WAV is up to date but is
/// missing from the manifest is rendered again: its subtitles, the M4B and
/// the playlist are made from the manifest.
pub(super) fn plan_job(job: &Job, inputs: &JobSession, dir: &Path, state: &BookState) -> Plan {
    let book = &inputs.session.book;
    let mut plan = Plan::new(book, dir, state, &inputs.fingerprint, wav_file_name(job));
    let sample_rate = inputs.session.renderer.config.mix.sample_rate;
    let manifest = Manifest::read(&dir.join(MANIFEST))
        .filter(|m| m.book == book.script.book && m.sample_rate == sample_rate);
    for chapter in plan.chapters.iter_mut().filter(|c| c.up_to_date) {
        let listed = manifest.as_ref().is_some_and(|m| {
            m.chapters
                .iter()
                .any(|c| c.index == chapter.index && c.file == chapter.file)
        });
        if !listed {
            chapter.up_to_date = false;
        }
    }
    plan
}

/// A job's book, voices, cast and lexicon, opened as a render session,
/// with the fingerprint its chapters are recorded under.
pub(super) struct JobSession {
    pub session: RenderSession,
    pub fingerprint: String,
}

impl JobSession {
    /// Opens `job`'s session; with `cache`, the renderer reads and fills
    /// the job's cache (`OUT/.cache`, written behind).
    pub fn open(
        job: &Job,
        worker_program: Option<PathBuf>,
        cache: bool,
    ) -> Result<JobSession, BatchError> {
        let session = RenderSession::open(&SessionSpec {
            voices: job.voices.clone(),
            cast: job.cast.clone(),
            cache: cache.then(|| CacheSpec {
                location: job.out.join(".cache"),
                write_behind: true,
            }),
            worker_program,
            ..SessionSpec::for_file(&job.source).with_book(BookInput::Source(job.source.clone()))
        })?;
        let fingerprint = render_fingerprint(&session.voices, &session.renderer.backends);
        Ok(JobSession {
            session,
            fingerprint,
        })
    }
}

/// What one run of one job did.
#[derive(Debug)]
pub struct JobReport {
    pub job: String,
    pub book_dir: PathBuf,
    pub outcome: RunOutcome,
    pub chapters: usize,
    pub rendered: usize,
    pub pending: usize,
    pub audio_s: f64,
    /// Requests sent to backends (every attempt counts).
    pub requests: usize,
    /// Chunks taken from the synthesis cache instead.
    pub cache_hits: usize,
    /// Files besides the chapter WAVs written by this run (subtitles,
    /// encoded chapters, manifest, playlist, M4B).
    pub outputs_written: usize,
    pub failures: Vec<String>,
    /// Another process holds the job's lock: nothing was done.
    pub busy: Option<String>,
}

impl JobReport {
    /// Whether the run did everything it had to.
    pub fn is_ok(&self) -> bool {
        self.busy.is_none() && self.outcome == RunOutcome::Ok
    }

    /// The one line logged per run.
    pub fn line(&self) -> String {
        if let Some(message) = &self.busy {
            return message.clone();
        }
        let head = format!("job \"{}\"", self.job);
        let mut line = match self.outcome {
            RunOutcome::Failed => format!("{head}: failed: {}", self.failures.join("; ")),
            _ => format!(
                "{head}: {} of {} chapters rendered ({} audio), {} pending, {} failed → {}; {} requests sent, {} chunks from the cache",
                self.rendered,
                self.chapters,
                format_duration(self.audio_s),
                self.pending,
                self.failures.len(),
                self.book_dir.display(),
                self.requests,
                self.cache_hits,
            ),
        };
        if self.outputs_written > 0 && self.outcome != RunOutcome::Failed {
            line.push_str(&format!("; {} other files written", self.outputs_written));
        }
        if self.outcome == RunOutcome::Interrupted {
            line.push_str("; interrupted, a later run renders the rest");
        }
        if self.outcome == RunOutcome::Partial {
            for f in &self.failures {
                line.push_str(&format!("\n  failed: {f}"));
            }
        }
        line
    }
}

/// Runs one job once under its lock and records the run beside the output.
pub async fn run_job(
    job: &Job,
    worker_program: Option<PathBuf>,
    shutdown: &mut Shutdown,
) -> JobReport {
    let started = Utc::now();
    let dir = job.book_dir();
    let mut report = JobReport {
        job: job.name.clone(),
        book_dir: dir.clone(),
        outcome: RunOutcome::Failed,
        chapters: 0,
        rendered: 0,
        pending: 0,
        audio_s: 0.0,
        requests: 0,
        cache_hits: 0,
        outputs_written: 0,
        failures: Vec::new(),
        busy: None,
    };
    if !job.source.exists() {
        report.failures.push(format!(
            "source {}: no such file or directory",
            job.source.display()
        ));
        return report;
    }
    let lock = match JobLock::acquire(&dir, &job.name) {
        Ok(lock) => lock,
        Err(e @ (LockError::Busy { .. } | LockError::BookBusy { .. })) => {
            report.busy = Some(e.to_string());
            return report;
        }
        Err(e) => {
            report.failures.push(e.to_string());
            return report;
        }
    };
    tracing::debug!(job = %job.name, lock = %lock.path().display(), "lock taken");
    if let Err(e) = render_job(job, &dir, worker_program, shutdown, &mut report).await {
        report.outcome = RunOutcome::Failed;
        report.failures.push(error_chain(&e));
    }
    let last = LastRun {
        job: job.name.clone(),
        started,
        finished: Utc::now(),
        outcome: report.outcome,
        chapters: report.chapters,
        rendered: report.rendered,
        pending: report.pending,
        audio_s: (report.audio_s * 1000.0).round() / 1000.0,
        requests: report.requests,
        cache_hits: report.cache_hits,
        outputs_written: report.outputs_written,
        failures: report.failures.clone(),
    };
    if let Err(e) = last.write(&dir) {
        tracing::warn!(error = %e, "cannot record the last run");
    }
    drop(lock);
    report
}

/// The work of a run, with the lock held. Fills `report` as it goes.
async fn render_job(
    job: &Job,
    dir: &Path,
    worker_program: Option<PathBuf>,
    shutdown: &mut Shutdown,
    report: &mut JobReport,
) -> Result<(), BatchError> {
    let inputs = JobSession::open(job, worker_program, true)?;
    let session = &inputs.session;
    remove_partial_files(dir);
    let mut outputs = session.book_outputs(&job.formats, dir)?;
    outputs.feed = job.feed_link(dir);
    if outputs.needs_encoder() {
        outputs.encoder = Some(
            encoder()
                .map_err(|message| BatchError::Formats { job: None, message })?
                .stopping_on(shutdown.flag()),
        );
    }
    let mut state = BookState::read(dir, &job.name);
    let plan = plan_job(job, &inputs, dir, &state);
    report.chapters = plan.chapters.len();
    for orphan in &plan.orphans {
        let files = std::iter::once(orphan.file.as_str())
            .chain(orphan.outputs.iter().map(|o| o.file.as_str()));
        for file in files {
            remove_output(dir, file);
        }
        state.remove(orphan.index);
    }
    if !plan.orphans.is_empty() {
        state.write(dir)?;
    }
    let wav_dir = dir.join(outputs.wav_dir());
    let pending: Vec<usize> = plan.pending().map(|c| c.index).collect();
    let chapter_jobs = session.chapter_jobs(&wav_dir, &pending);
    report.pending = chapter_jobs.len();
    tracing::info!(
        job = %job.name,
        chapters = plan.chapters.len(),
        pending = chapter_jobs.len(),
        "planned run"
    );

    let mut written = Vec::new();
    let mut failures = Vec::new();
    let mut interrupted = if chapter_jobs.is_empty() {
        false
    } else {
        std::fs::create_dir_all(&wav_dir).map_err(|source| BatchError::CreateDir {
            path: wav_dir.clone(),
            source,
        })?;
        let mut progress = Progress::new(chapter_jobs.len());
        let render = session.renderer.render(chapter_jobs, |outcome| {
            let planned = &plan.chapters[outcome.index - 1];
            match outcome.result {
                Ok(chapter) => {
                    progress.chapter_done(&outcome.title, Some(chapter.duration_s));
                    // The chapter's other files are made after the run and
                    // recorded then; records of an older version no longer
                    // match its hash, so those files count as out of date.
                    let outputs = state
                        .get(planned.index)
                        .map(|s| s.outputs.clone())
                        .unwrap_or_default();
                    state.record_chapter(
                        dir,
                        planned.index,
                        &outcome.title,
                        &planned.file,
                        &planned.hash,
                        outputs,
                    );
                    if let Err(e) = state.write(dir) {
                        failures.push(e.to_string());
                    }
                    written.push(chapter);
                }
                Err(e) => {
                    progress.chapter_done(&outcome.title, None);
                    failures.push(chapter_failure(outcome.index, &outcome.title, &e));
                    state.remove(planned.index);
                    if let Err(e) = state.write(dir) {
                        failures.push(e.to_string());
                    }
                }
            }
        });
        let interrupted = tokio::select! {
            () = render => false,
            () = shutdown.wait() => true,
        };
        progress.finish();
        interrupted
    };

    let stats = &session.renderer.client.stats;
    report.requests = stats.requests.load(Ordering::Relaxed);
    report.cache_hits = stats.cache_hits.load(Ordering::Relaxed);
    report.rendered = written.len();
    report.pending -= written.len();
    report.audio_s = written.iter().fold(0.0, |sum, c| sum + c.duration_s);
    let book_changed = !written.is_empty() || !plan.orphans.is_empty();
    let written_manifest = written.clone();
    if interrupted {
        // Keep what was rendered listed; the other files wait for the next
        // run, which finds them missing or out of date.
        if book_changed {
            outputs.refresh_book(dir, written, Some(&[BookFile::Manifest]))?;
        }
    } else {
        let manifest = outputs.merge_manifest(dir, written);
        let made = refresh_chapter_files(
            &outputs,
            dir,
            &plan,
            &manifest,
            &mut state,
            shutdown,
            &mut failures,
        );
        interrupted = made.interrupted;
        if interrupted && book_changed {
            // Stopped while encoding: the chapters rendered are listed all
            // the same, or the next run would mix them again.
            outputs.write_book_file(dir, &manifest, BookFile::Manifest)?;
        }
        let mut book_written = 0;
        if !interrupted && !manifest.chapters.is_empty() {
            (book_written, interrupted) = refresh_book_files(
                &outputs,
                dir,
                &plan,
                &manifest,
                book_changed,
                &mut state,
                shutdown,
                &mut failures,
            );
        }
        if outputs.feed.is_some()
            && book_written > 0
            && let Err(e) = crate::feed::write_opml(&job.out)
        {
            failures.push(error_chain(&e));
        }
        report.outputs_written = made.written + book_written;
        if report.outputs_written > 0 || made.removed || interrupted {
            state.write(dir)?;
        }
    }
    session.flush();
    report.failures.extend(failures);
    // A run that rendered nothing and failed at nothing leaves the report
    // of the run that did.
    if dir.is_dir() && !interrupted && (!written_manifest.is_empty() || !report.failures.is_empty())
    {
        let summary = format!(
            "job \"{}\": {} of {} chapters rendered into {} ({} audio), {} pending",
            job.name,
            report.rendered,
            report.chapters,
            dir.display(),
            format_duration(report.audio_s),
            report.pending
        );
        if let Err(e) = report::write(dir, &summary, &report.failures, &written_manifest) {
            report.failures.push(format!(
                "cannot write {}: {e}",
                dir.join(report::REPORT).display()
            ));
        }
    }
    report.outcome = if interrupted {
        RunOutcome::Interrupted
    } else if report.failures.is_empty() {
        RunOutcome::Ok
    } else {
        RunOutcome::Partial
    };
    Ok(())
}
