//! `tingshu batch run|daemon|status|enqueue JOBS.toml`: keep a library of
//! books up to date, rendering only new or changed chapters through the same
//! path as `tingshu build` — here, or (`enqueue`, `daemon --queue`) as tasks
//! on a shared queue for `tingshu worker`s.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use chrono::Utc;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use super::build::{chapter_job, cover_extension};
use super::{EXIT_FATAL, EXIT_OK, EXIT_PARTIAL};
use crate::audio::encode::{Encoder, Format};
use crate::batch::lock::{JobLock, LockError};
use crate::batch::schedule::{Clock, SystemClock, Timetable};
use crate::batch::source::read_source;
use crate::batch::state::{
    BookState, ChapterState, LastRun, OutputFile, RunOutcome, STATE_DIR, chapter_file_hash,
    file_stamp, output_is_current, record_output,
};
use crate::batch::{Job, JobsFile, Plan, format_indices, lock_path, render_fingerprint};
use crate::cli::{BatchArgs, BatchCommand, BatchEnqueueArgs, BatchJobsArgs};
use crate::config::VoicesConfig;
use crate::error::error_chain;
use crate::manifest::Manifest;
use crate::outputs::{BookFile, BookOutputs, MANIFEST};
use crate::pipeline::{ChapterJob, Renderer};
use crate::progress::{Progress, format_duration};
use crate::queue::plan::VoicesSource;
use crate::queue::{self, JobPlan, TaskQueue, TaskState};

/// Runs a `batch` subcommand.
pub async fn run(args: &BatchArgs, worker_program: Option<PathBuf>) -> anyhow::Result<u8> {
    match &args.command {
        BatchCommand::Run(a) => run_once(a, worker_program).await,
        BatchCommand::Daemon(a) => {
            let queue = match &a.queue {
                Some(url) => Some(queue::connect(url, 2).await?),
                None => None,
            };
            daemon(&a.jobs, worker_program, &SystemClock, queue.as_deref()).await
        }
        BatchCommand::Status(a) => status(&a.jobs, a.queue.as_deref()).await,
        BatchCommand::Enqueue(a) => enqueue(a).await,
    }
}

/// The ffmpeg encoder, checked once per process.
fn encoder() -> Result<Encoder, String> {
    crate::outputs::system_encoder()
}

/// Checks, before anything is rendered, that ffmpeg runs when a job asks
/// for a format it makes: one line naming the first such job otherwise.
fn check_encoder(jobs: &[Job]) -> anyhow::Result<()> {
    if let Some(job) = jobs
        .iter()
        .find(|j| j.formats.iter().any(|f| f.needs_ffmpeg()))
        && let Err(e) = encoder()
    {
        anyhow::bail!("job \"{}\": key \"formats\": {e}", job.name);
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
fn plan_job(job: &Job, inputs: &Inputs, dir: &Path, state: &BookState) -> Plan {
    let mut plan = Plan::new(
        &inputs.book,
        dir,
        state,
        &inputs.fingerprint,
        wav_file_name(job),
    );
    let manifest = Manifest::read(&dir.join(MANIFEST)).filter(|m| {
        m.book == inputs.book.script.book && m.sample_rate == inputs.renderer.config.mix.sample_rate
    });
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

/// `batch daemon`: each scheduled job on its schedule until SIGTERM/SIGINT;
/// with a `queue`, each firing enqueues the job's pending chapters instead of
/// rendering them here.
async fn daemon(
    args: &BatchJobsArgs,
    worker_program: Option<PathBuf>,
    clock: &dyn Clock,
    queue: Option<&dyn TaskQueue>,
) -> anyhow::Result<u8> {
    let jobs: Vec<Job> = load_jobs(args)?
        .into_iter()
        .filter(|j| j.schedule.is_some())
        .collect();
    if jobs.is_empty() {
        anyhow::bail!(
            "{}: no job has a schedule (add schedule = \"0 3 * * *\" to a [[job]])",
            args.jobs.display()
        );
    }
    if queue.is_none() {
        check_encoder(&jobs)?;
    }
    let mut shutdown = Shutdown::on_signals().context("cannot install signal handlers")?;
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
            return Ok(EXIT_OK);
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
                    Err(e) => format!("job \"{}\": failed: {e:#}", job.name),
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
    Ok(EXIT_OK)
}

/// When job `i` of `table` runs next, for people.
fn next_run(table: &Timetable, i: usize, job: &Job) -> String {
    match (table.next_of(i), &job.schedule) {
        (Some(t), Some(s)) => s.display_time(t),
        _ => "never".to_owned(),
    }
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

/// Plans and enqueues one job; the line to log.
async fn enqueue_job(queue: &dyn TaskQueue, job: &Job) -> anyhow::Result<String> {
    let planned = plan_for_queue(job)?;
    submit(queue, job, &planned).await
}

/// One job's pending chapters, planned as queue tasks.
struct QueuePlan {
    /// `None` when every chapter is up to date.
    plan: Option<JobPlan>,
    pending: Vec<usize>,
    chapters: usize,
    dir: PathBuf,
}

/// Plans the chapters `batch run` would render now (new or changed ones) as
/// tasks named after the job.
fn plan_for_queue(job: &Job) -> anyhow::Result<QueuePlan> {
    let inputs = Inputs::read(job, None)?;
    let dir = std::path::absolute(job.book_dir())
        .with_context(|| format!("cannot resolve output directory {}", job.out.display()))?;
    let state = BookState::read(&dir, &job.name);
    let plan = plan_job(job, &inputs, &dir, &state);
    let pending: Vec<usize> = plan.pending().map(|c| c.index).collect();
    let tasks = if pending.is_empty() {
        None
    } else {
        // Workers record each mixed chapter under this hash in the state.
        let hashed: Vec<(usize, String)> =
            plan.pending().map(|c| (c.index, c.hash.clone())).collect();
        let voices = VoicesSource::load(job.voices.as_deref())?.with_cast(job.cast.as_deref())?;
        // Workers write the same files as `batch run` and record them under
        // the same hashes, so its next run leaves them alone.
        let outputs = job_outputs(job, &inputs, &dir)?;
        let book_hash = book_files_hash(&plan, &outputs);
        Some(super::enqueue::plan_batch_chapters(
            &job.name,
            &inputs.book,
            voices,
            &dir,
            &hashed,
            &outputs,
            book_hash,
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
async fn submit(queue: &dyn TaskQueue, job: &Job, planned: &QueuePlan) -> anyhow::Result<String> {
    let Some(plan) = &planned.plan else {
        return Ok(format!(
            "job \"{}\": all {} chapters up to date, nothing enqueued",
            job.name, planned.chapters
        ));
    };
    let reports = super::enqueue::enqueue_plans(queue, std::slice::from_ref(plan)).await?;
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

fn schedule_expr(job: &Job) -> &str {
    job.schedule.as_ref().map_or("", |s| s.expr.as_str())
}

/// `batch status`: last run, next run, pending chapters and failures; with a
/// queue, the jobs' tasks on it.
async fn status(args: &BatchJobsArgs, queue_url: Option<&str>) -> anyhow::Result<u8> {
    let jobs = load_jobs(args)?;
    let now = Utc::now();
    let mut out = String::new();
    for job in &jobs {
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
    print!("{out}");
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

fn outcome_word(outcome: RunOutcome) -> &'static str {
    match outcome {
        RunOutcome::Ok => "ok",
        RunOutcome::Partial => "some chapters failed",
        RunOutcome::Interrupted => "interrupted",
        RunOutcome::Failed => "failed",
    }
}

/// The chapters of `job` a run would render now, and the book's chapter count.
fn pending_chapters(job: &Job, dir: &Path) -> anyhow::Result<(Vec<usize>, usize)> {
    let inputs = Inputs::read(job, None)?;
    let state = BookState::read(dir, &job.name);
    let plan = plan_job(job, &inputs, dir, &state);
    let pending = plan.pending().map(|c| c.index).collect();
    Ok((pending, plan.chapters.len()))
}

/// Everything a job renders from.
struct Inputs {
    book: crate::book::Book,
    renderer: Renderer,
    fingerprint: String,
}

impl Inputs {
    fn read(job: &Job, worker_program: Option<PathBuf>) -> anyhow::Result<Inputs> {
        let voices_bytes = match &job.voices {
            Some(path) => std::fs::read(path)
                .with_context(|| format!("cannot read voices file {}", path.display()))?,
            None => crate::config::voices_text(None)?.1.into_bytes(),
        };
        let mut config = VoicesConfig::load(job.voices.as_deref())?;
        let cast = match &job.cast {
            Some(path) => Some(
                std::fs::read(path)
                    .with_context(|| format!("cannot read cast file {}", path.display()))?,
            ),
            None => None,
        };
        let parsed_cast = match &job.cast {
            Some(path) => Some(crate::text::Cast::load(path)?),
            None => None,
        };
        let book = read_source(&job.source, parsed_cast.as_ref())?;
        if let (Some(path), Some(cast)) = (&job.cast, &parsed_cast) {
            config.apply_cast(path, cast)?;
        }
        let cache = crate::synth::cache::Cache::new(job.out.join(".cache"));
        cache.remove_stale_temps();
        let renderer = Renderer::with_cache(config, worker_program, Some(cache));
        let fingerprint = render_fingerprint(&voices_bytes, &renderer.backends, cast.as_deref());
        Ok(Inputs {
            book,
            renderer,
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
    fn is_ok(&self) -> bool {
        self.busy.is_none() && self.outcome == RunOutcome::Ok
    }

    /// The one line logged per run.
    fn line(&self) -> String {
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
    let lock = match JobLock::acquire(&lock_path(&dir), &job.name) {
        Ok(lock) => lock,
        Err(e @ LockError::Busy { .. }) => {
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
        report.failures.push(format!("{e:#}"));
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
) -> anyhow::Result<()> {
    let inputs = Inputs::read(job, worker_program)?;
    remove_partial_files(dir);
    let mut outputs = job_outputs(job, &inputs, dir)?;
    if outputs.needs_encoder() {
        outputs.encoder = Some(encoder().map_err(|e| anyhow::anyhow!("key \"formats\": {e}"))?);
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
    let chapter_jobs: Vec<ChapterJob> = plan
        .pending()
        .map(|c| chapter_job(&wav_dir, c.index, &inputs.book.script.chapters[c.index - 1]))
        .collect();
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
        std::fs::create_dir_all(&wav_dir)
            .with_context(|| format!("cannot create output directory {}", wav_dir.display()))?;
        let mut progress = Progress::new(chapter_jobs.len());
        let render = inputs.renderer.render(chapter_jobs, |outcome| {
            let planned = &plan.chapters[outcome.index - 1];
            match outcome.result {
                Ok(chapter) => {
                    progress.chapter_done(&outcome.title, Some(chapter.duration_s));
                    let path = dir.join(&planned.file);
                    let (bytes, mtime_ns) = file_stamp(&path).unwrap_or_default();
                    // The chapter's other files are made after the run and
                    // recorded then; records of an older version no longer
                    // match its hash, so those files count as out of date.
                    let outputs = state
                        .get(planned.index)
                        .map(|s| s.outputs.clone())
                        .unwrap_or_default();
                    state.set(ChapterState {
                        index: planned.index,
                        title: outcome.title.clone(),
                        file: planned.file.clone(),
                        hash: planned.hash.clone(),
                        bytes,
                        mtime_ns,
                        outputs,
                    });
                    if let Err(e) = state.write(dir) {
                        failures.push(e.to_string());
                    }
                    written.push(chapter);
                }
                Err(e) => {
                    progress.chapter_done(&outcome.title, None);
                    failures.push(format!(
                        "chapter {} ({}): {}",
                        outcome.index,
                        outcome.title,
                        error_chain(&e)
                    ));
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

    let stats = &inputs.renderer.client.stats;
    report.requests = stats.requests.load(Ordering::Relaxed);
    report.cache_hits = stats.cache_hits.load(Ordering::Relaxed);
    report.rendered = written.len();
    report.pending -= written.len();
    report.audio_s = written.iter().fold(0.0, |sum, c| sum + c.duration_s);
    let book_changed = !written.is_empty() || !plan.orphans.is_empty();
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
            book_written = refresh_book_files(
                &outputs,
                dir,
                &plan,
                &manifest,
                book_changed,
                &mut state,
                &mut failures,
            );
        }
        report.outputs_written = made.written + book_written;
        if report.outputs_written > 0 || made.removed {
            state.write(dir)?;
        }
    }
    report.failures.extend(failures);
    report.outcome = if interrupted {
        RunOutcome::Interrupted
    } else if report.failures.is_empty() {
        RunOutcome::Ok
    } else {
        RunOutcome::Partial
    };
    Ok(())
}

/// What a job's files besides the WAVs are made with: its formats, the
/// book's own title, author, language and cover (EPUB); the caller adds the
/// encoder where it encodes (here, or on a queue's workers).
fn job_outputs(job: &Job, inputs: &Inputs, dir: &Path) -> anyhow::Result<BookOutputs> {
    book_outputs(
        &inputs.book,
        inputs.renderer.config.mix.sample_rate,
        &job.formats,
        dir,
    )
}

/// The outputs of `book` in `formats` into the book directory `dir`, tagged
/// from the book's metadata (as `build` without `--author` and `--cover`);
/// no encoder. The book's cover (EPUB) is kept in `dir`'s state folder
/// (rewritten only when it changes) when an encoded format embeds it: a
/// path queue workers on other machines can read as well.
pub(crate) fn book_outputs(
    book: &crate::book::Book,
    sample_rate: u32,
    formats: &[Format],
    dir: &Path,
) -> anyhow::Result<BookOutputs> {
    let mut outputs = BookOutputs::new(&book.script.book, sample_rate, formats);
    outputs.set_metadata(&book.metadata, None);
    if let Some(cover) = book.metadata.cover.as_ref().filter(|c| !c.bytes.is_empty())
        && outputs.needs_encoder()
    {
        let state_dir = dir.join(STATE_DIR);
        let path = state_dir.join(format!("cover.{}", cover_extension(cover)));
        // A cover file kept from an earlier run passed the check below.
        let kept = std::fs::read(&path).ok().as_deref() == Some(cover.bytes.as_slice());
        if !kept {
            std::fs::create_dir_all(&state_dir)
                .with_context(|| format!("cannot create {}", state_dir.display()))?;
            crate::fsutil::write_atomic(&path, &cover.bytes)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        // One ffmpeg cannot read is left out rather than failing every
        // encode (checked where ffmpeg is; workers check again by failing).
        let unusable = match crate::outputs::system_encoder() {
            Ok(encoder) if !kept => encoder.check_image(&path).err(),
            _ => None,
        };
        match unusable {
            Some(e) => {
                tracing::warn!(error = %e, "the book's cover cannot be used; files are made without it");
                let _ = std::fs::remove_file(&path);
            }
            None => outputs.cover = Some(path),
        }
    }
    Ok(outputs)
}

/// Hash of what the book-level files are made from: every chapter (index,
/// file, hash), the tags, the manifest's book information and the formats.
fn book_files_hash(plan: &Plan, outputs: &BookOutputs) -> String {
    let mut h = Sha256::new();
    for c in &plan.chapters {
        h.update(format!("{}\0{}\0{}\0", c.index, c.file, c.hash).as_bytes());
    }
    h.update(outputs.tags_digest().as_bytes());
    if let Some(info) = &outputs.info {
        for part in [&info.title, &info.author, &info.language] {
            h.update(b"\0");
            h.update(part.as_deref().unwrap_or("").as_bytes());
        }
    }
    for f in &outputs.formats {
        h.update(b"\0");
        h.update(f.extension().as_bytes());
    }
    hex::encode(h.finalize())
}

/// What [`refresh_chapter_files`] did.
struct ChapterFilesMade {
    written: usize,
    /// Files of formats no longer asked for were removed.
    removed: bool,
    interrupted: bool,
}

/// Makes every chapter file (subtitles, MP3, Opus) that is missing, was
/// changed by something else, or was made from another version of the
/// chapter or other tags; files already current are not touched. Files of
/// formats no longer asked for are removed. Records what it wrote in
/// `state` (the caller writes it).
fn refresh_chapter_files(
    outputs: &BookOutputs,
    dir: &Path,
    plan: &Plan,
    manifest: &Manifest,
    state: &mut BookState,
    shutdown: &Shutdown,
    failures: &mut Vec<String>,
) -> ChapterFilesMade {
    let tags = outputs.tags_digest();
    let kinds = outputs.chapter_files();
    let mut made = ChapterFilesMade {
        written: 0,
        removed: false,
        interrupted: false,
    };
    for planned in &plan.chapters {
        let Some(chapter_state) = state.get_mut(planned.index) else {
            continue; // failed or not rendered: pending for the next run
        };
        if chapter_state.hash != planned.hash || chapter_state.file != planned.file {
            continue;
        }
        let Some(chapter) = manifest
            .chapters
            .iter()
            .find(|c| c.index == planned.index && c.file == planned.file)
        else {
            continue;
        };
        let wanted: Vec<String> = kinds
            .iter()
            .map(|k| k.name(chapter.index, &chapter.title))
            .collect();
        let (keep, gone): (Vec<OutputFile>, Vec<OutputFile>) =
            std::mem::take(&mut chapter_state.outputs)
                .into_iter()
                .partition(|o| wanted.contains(&o.file));
        chapter_state.outputs = keep;
        for old in gone {
            remove_output(dir, &old.file);
            made.removed = true;
        }
        for (&kind, name) in kinds.iter().zip(&wanted) {
            let hash = chapter_file_hash(&planned.hash, &tags, kind);
            if output_is_current(&chapter_state.outputs, dir, name, &hash) {
                continue;
            }
            if shutdown.requested() {
                made.interrupted = true;
                return made;
            }
            match outputs.write_chapter_file(dir, chapter, kind, None) {
                Ok(_) => {
                    if let Some(record) = OutputFile::stamp(dir, name, &hash) {
                        record_output(&mut chapter_state.outputs, record);
                    }
                    made.written += 1;
                }
                Err(e) => failures.push(format!(
                    "chapter {} ({}): {}",
                    chapter.index,
                    chapter.title,
                    error_chain(&e)
                )),
            }
        }
    }
    made
}

/// Rewrites the book-level files (manifest, playlist, M4B) when a chapter
/// was rendered or removed (`changed`), when what they are made from
/// changed, or when they are missing or were changed by something else;
/// otherwise leaves them alone. The playlist is also rewritten when it
/// would now read differently: it lists a chapter by its WAV while its
/// encoded file is missing. Removes those no longer asked for. Returns how
/// many it wrote; records them in `state` (the caller writes it).
fn refresh_book_files(
    outputs: &BookOutputs,
    dir: &Path,
    plan: &Plan,
    manifest: &Manifest,
    changed: bool,
    state: &mut BookState,
    failures: &mut Vec<String>,
) -> usize {
    let hash = book_files_hash(plan, outputs);
    let files = outputs.book_files();
    let names: Vec<String> = files.iter().map(|&f| outputs.book_file_name(f)).collect();
    let gone: Vec<String> = state
        .book_files
        .iter()
        .filter(|r| !names.contains(&r.file))
        .map(|r| r.file.clone())
        .collect();
    for file in gone {
        remove_output(dir, &file);
        state.book_files.retain(|r| r.file != file);
    }
    let mut written = 0;
    for (&file, name) in files.iter().zip(&names) {
        let stale_playlist =
            file == BookFile::Playlist && !outputs.playlist_is_current(dir, manifest);
        if !changed && !stale_playlist && output_is_current(&state.book_files, dir, name, &hash) {
            continue;
        }
        match outputs.write_book_file(dir, manifest, file) {
            Ok(()) => {
                if let Some(record) = OutputFile::stamp(dir, name, &hash) {
                    record_output(&mut state.book_files, record);
                }
                written += 1;
            }
            Err(e) => {
                state.book_files.retain(|r| r.file != *name);
                failures.push(error_chain(&e));
            }
        }
    }
    written
}

/// Removes a file written by an earlier run (a chapter that is gone, a
/// format no longer asked for).
fn remove_output(dir: &Path, file: &str) {
    match std::fs::remove_file(dir.join(file)) {
        Ok(()) => tracing::info!(file, "removed a file no longer produced"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!(file, error = %e, "cannot remove an old output file"),
    }
}

/// Removes temporary files (`.NAME.part`) a killed run left in `dir`; the
/// job's lock is held, so no one else is writing them.
fn remove_partial_files(dir: &Path) {
    for d in [
        dir.to_owned(),
        dir.join(STATE_DIR),
        dir.join(crate::outputs::HIDDEN_WAV_DIR),
    ] {
        crate::fsutil::remove_stale_parts(&d);
    }
}

/// Set once SIGTERM or SIGINT arrives; a second SIGINT/SIGTERM exits at once.
#[derive(Debug, Clone)]
pub struct Shutdown(watch::Receiver<bool>);

impl Shutdown {
    pub fn on_signals() -> std::io::Result<Shutdown> {
        use tokio::signal::unix::{SignalKind, signal};
        let (tx, rx) = watch::channel(false);
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        tokio::spawn(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            eprintln!(
                "stopping: finished chapter files are kept, chapters in progress are left for the next run (signal again to quit at once)"
            );
            let _ = tx.send(true);
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            std::process::exit(i32::from(EXIT_FATAL));
        });
        Ok(Shutdown(rx))
    }

    pub fn requested(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once a stop was requested.
    pub async fn wait(&mut self) {
        loop {
            if *self.0.borrow_and_update() {
                return;
            }
            if self.0.changed().await.is_err() {
                if *self.0.borrow() {
                    return;
                }
                std::future::pending::<()>().await;
            }
        }
    }
}
