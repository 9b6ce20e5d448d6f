//! A worker: claims tasks from the queue and runs them — synthesis through
//! the [`SynthClient`](crate::synth::SynthClient) (rate limits, retries,
//! fallbacks) into the shared synthesis cache, chapter mixing through
//! [`Renderer::mix_clips`] (the code path of `tingshu build`, hence the same
//! bytes) with `build`'s subtitles and encoded files, and the book-level
//! files (manifest, playlist, M4B) once every chapter is mixed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::plan::{BatchRecord, BookRecord, OutputsSpec, TaskSpec, VoicesSource};
use super::{Claimed, QueueError, TaskKind, TaskQueue, TaskState};
use crate::audio::encode::Format;
use crate::manifest::ManifestChapter;
use crate::outputs::{BookFile, BookOutputs, ChapterFile};
use crate::pipeline::{self, ChapterJob, Renderer};
use crate::state::{BookState, OutputFile, STATE_DIR, chapter_file_hash, record_output};
use crate::synth::cache::Cache;

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Name recorded on the tasks it holds (host and process by default).
    pub name: String,
    /// Tasks run at once.
    pub concurrency: usize,
    /// How long a claimed task stays this worker's without a heartbeat.
    pub lease: Duration,
    /// Pause between polls when the queue has nothing ready.
    pub poll: Duration,
    /// Stop when nothing is queued or running any more.
    pub until_idle: bool,
    /// Added before every synthesis request (benchmarks of the queue with
    /// a slow backend).
    pub simulated_latency: Duration,
    /// The binary that runs espeak-ng worker processes.
    pub worker_program: Option<PathBuf>,
}

/// What one worker did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkerReport {
    pub synthesized: u64,
    pub reused: u64,
    pub mixed: u64,
    pub books: u64,
    pub failed: u64,
    pub parked: u64,
}

/// Why a task failed; `retry` says whether trying again may help.
#[derive(Debug)]
struct TaskFailure {
    message: String,
    retry: bool,
}

impl TaskFailure {
    fn retry(message: impl Into<String>) -> TaskFailure {
        TaskFailure {
            message: message.into(),
            retry: true,
        }
    }

    fn permanent(message: impl Into<String>) -> TaskFailure {
        TaskFailure {
            message: message.into(),
            retry: false,
        }
    }
}

/// The worker's shared state.
struct Worker {
    queue: Arc<dyn TaskQueue>,
    cache: Cache,
    options: WorkerOptions,
    /// Renderers (with their synthesis clients) by voices file text, built
    /// once each.
    renderers: Mutex<HashMap<VoicesSource, Arc<Renderer>>>,
    report: Mutex<WorkerReport>,
}

/// Runs until `stop` turns true (finishing the tasks in hand) or, with
/// `until_idle`, until the queue has nothing left to run.
pub async fn run(
    queue: Arc<dyn TaskQueue>,
    cache: Cache,
    options: WorkerOptions,
    stop: watch::Receiver<bool>,
) -> Result<WorkerReport, QueueError> {
    let worker = Arc::new(Worker {
        queue,
        cache,
        options,
        renderers: Mutex::new(HashMap::new()),
        report: Mutex::new(WorkerReport::default()),
    });
    let mut slots = tokio::task::JoinSet::new();
    for slot in 0..worker.options.concurrency.max(1) {
        let worker = Arc::clone(&worker);
        let stop = stop.clone();
        slots.spawn(async move { worker.slot(slot, stop).await });
    }
    let mut first_error = None;
    while let Some(joined) = slots.join_next().await {
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(e) => tracing::error!(error = %e, "worker slot panicked"),
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(*worker.report.lock().expect("report lock")),
    }
}

/// Consecutive queue errors a worker slot waits out (about 12 minutes of
/// backoff in all) before it stops.
const QUEUE_RETRIES: u32 = 30;

/// Delay before reconnection attempt `n` (1-based): 0.5 s doubling to 30 s,
/// with up to 25 % jitter so that workers do not come back in step.
fn reconnect_delay(n: u32) -> Duration {
    let base = (500u64 << n.saturating_sub(1).min(6)).min(30_000);
    Duration::from_millis(base + fastrand::u64(0..=base / 4))
}

impl Worker {
    async fn slot(
        self: Arc<Self>,
        slot: usize,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), QueueError> {
        // Consecutive queue errors: a brief database outage is waited out.
        let mut errors = 0u32;
        loop {
            if *stop.borrow() {
                return Ok(());
            }
            let claimed = match self
                .queue
                .claim(&self.options.name, self.options.lease)
                .await
            {
                Ok(claimed) => {
                    errors = 0;
                    claimed
                }
                Err(e) if errors < QUEUE_RETRIES => {
                    errors += 1;
                    let delay = reconnect_delay(errors);
                    tracing::warn!(slot, error = %e, delay_ms = delay.as_millis() as u64, "queue unavailable; reconnecting");
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        _ = stop.changed() => {}
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            let Some(task) = claimed else {
                if self.options.until_idle {
                    match self.queue.totals().await {
                        Ok(totals) if totals.active == 0 => return Ok(()),
                        Ok(_) => {}
                        Err(e) => {
                            tracing::warn!(slot, error = %e, "queue unavailable; reconnecting");
                            errors += 1;
                            tokio::time::sleep(reconnect_delay(errors)).await;
                            continue;
                        }
                    }
                }
                let jitter = fastrand::u64(0..=self.options.poll.as_millis() as u64 / 2);
                tokio::select! {
                    () = tokio::time::sleep(self.options.poll + Duration::from_millis(jitter)) => {}
                    _ = stop.changed() => {}
                }
                continue;
            };
            // Recording the outcome failed (the queue went away): the task
            // stays leased to this worker until the lease runs out, then
            // another worker (or this one) runs it again.
            if let Err(e) = self.run_task(task).await {
                errors += 1;
                if errors > QUEUE_RETRIES {
                    return Err(e);
                }
                tracing::warn!(slot, error = %e, "cannot record a task's outcome; reconnecting");
                tokio::time::sleep(reconnect_delay(errors)).await;
            }
        }
    }

    /// Runs one claimed task while renewing its lease, then records the
    /// outcome.
    async fn run_task(&self, task: Claimed) -> Result<(), QueueError> {
        tracing::debug!(id = %task.id, attempt = task.attempt, "claimed");
        let work = self.execute(&task);
        tokio::pin!(work);
        let beat = (self.options.lease / 3).max(Duration::from_millis(100));
        let outcome = loop {
            tokio::select! {
                outcome = &mut work => break outcome,
                () = tokio::time::sleep(beat) => {
                    match self.queue.heartbeat(&task.id, &self.options.name, self.options.lease).await {
                        Ok(true) => {}
                        Ok(false) => tracing::warn!(id = %task.id, "lease lost; another worker may repeat this task"),
                        Err(e) => tracing::warn!(id = %task.id, error = %e, "heartbeat failed"),
                    }
                }
            }
        };
        match outcome {
            Ok(result) => self.queue.complete(&task.id, result.as_deref()).await,
            Err(failure) => {
                let backoff = Duration::from_secs((1u64 << task.attempt.min(6)).min(60))
                    + Duration::from_millis(fastrand::u64(0..500));
                let state = self
                    .queue
                    .fail(
                        &task.id,
                        &self.options.name,
                        &failure.message,
                        failure.retry,
                        backoff,
                    )
                    .await?;
                let mut report = self.report.lock().expect("report lock");
                report.failed += 1;
                if state == TaskState::Parked {
                    report.parked += 1;
                    tracing::error!(id = %task.id, error = %failure.message, "task parked");
                } else {
                    tracing::warn!(id = %task.id, attempt = task.attempt, error = %failure.message, "task failed; will retry");
                }
                Ok(())
            }
        }
    }

    async fn execute(&self, task: &Claimed) -> Result<Option<String>, TaskFailure> {
        let spec: TaskSpec = serde_json::from_str(&task.payload).map_err(|e| {
            TaskFailure::permanent(format!("task {}: unreadable payload: {e}", task.id))
        })?;
        match (task.kind, spec) {
            (
                TaskKind::Synth,
                TaskSpec::Synth {
                    key,
                    voices,
                    voice,
                    text,
                    pinyin,
                },
            ) => self
                .synthesize(&key, &voices, &voice, text, pinyin)
                .await
                .map(|()| None),
            (
                TaskKind::Mix,
                TaskSpec::Mix {
                    voices,
                    index,
                    chapter,
                    path,
                    subtitles,
                    outputs,
                    record,
                },
            ) => {
                let job = ChapterJob {
                    index,
                    chapter,
                    path,
                };
                let outputs = outputs
                    .map(|o| *o)
                    .or_else(|| subtitles.map(|tags| tags.outputs(&job.path)));
                self.mix(&voices, job, outputs, record).await.map(Some)
            }
            (
                TaskKind::Book,
                TaskSpec::Book {
                    book,
                    dir,
                    sample_rate,
                    outputs,
                    record,
                },
            ) => {
                let book = BookTask {
                    book,
                    dir,
                    sample_rate,
                    outputs: outputs.map(|o| *o),
                    record,
                };
                self.write_book(&task.id, book).await.map(|()| None)
            }
            (kind, _) => Err(TaskFailure::permanent(format!(
                "task {}: payload does not match its kind '{}'",
                task.id,
                kind.as_str()
            ))),
        }
    }

    fn renderer(&self, voices: &VoicesSource) -> Result<Arc<Renderer>, TaskFailure> {
        let mut renderers = self.renderers.lock().expect("renderer lock");
        if let Some(renderer) = renderers.get(voices) {
            return Ok(Arc::clone(renderer));
        }
        let renderer = crate::session::renderer_for(
            voices,
            self.options.worker_program.clone(),
            Some(self.cache.clone()),
        )
        .map_err(|e| TaskFailure::permanent(e.to_string()))?;
        let renderer = Arc::new(renderer);
        renderers.insert(voices.clone(), Arc::clone(&renderer));
        Ok(renderer)
    }

    async fn synthesize(
        &self,
        key: &str,
        voices: &VoicesSource,
        voice: &str,
        text: String,
        pinyin: String,
    ) -> Result<(), TaskFailure> {
        let renderer = self.renderer(voices)?;
        let config = &renderer.config;
        let Some(voice_config) = config.voices.get(voice) else {
            return Err(TaskFailure::permanent(format!(
                "{}: voices.{voice}: no such voice",
                voices.file
            )));
        };
        let backend = voice_config.backend.clone();
        let Some(synth) = renderer.backends.get(&backend) else {
            return Err(TaskFailure::permanent(format!(
                "{}: voices.{voice}: no backend '{backend}'",
                voices.file
            )));
        };
        let request = crate::synth::SynthRequest {
            text,
            pinyin,
            voice: config.voice_settings(voice),
        };
        let actual = synth.cache_key(&request);
        if actual.as_str() != key {
            return Err(TaskFailure::permanent(format!(
                "chunk {key}: this worker computes key {} for it (a different tingshu version?)",
                actual.as_str()
            )));
        }
        if !self.options.simulated_latency.is_zero() {
            tokio::time::sleep(self.options.simulated_latency).await;
        }
        // The client answers from the cache when the chunk is there (a
        // worker that died after storing it left this task behind), else
        // sends it with its limiter, retries and fallback, and stores it.
        let client = Arc::clone(&renderer.client);
        let done = client
            .synthesize(&backend, &request)
            .await
            .map_err(|e| TaskFailure {
                retry: e.is_retryable(),
                message: format!("chunk {key} (\"{}\"): {e}", excerpt(&request.text)),
            })?;
        if done.cached {
            tracing::info!(key, "chunk already cached");
            self.report.lock().expect("report lock").reused += 1;
            return Ok(());
        }
        // The client only warns when it cannot store; the chapter's mix
        // needs the entry, so check that it is there.
        let stored = tokio::task::spawn_blocking(move || client.is_cached(&backend, &request))
            .await
            .unwrap_or(false);
        if !stored {
            return Err(TaskFailure::retry(format!(
                "chunk {key}: cannot store it in the cache {}",
                self.cache
            )));
        }
        tracing::info!(key, backend = %done.backend, "synthesized chunk");
        self.report.lock().expect("report lock").synthesized += 1;
        Ok(())
    }

    async fn mix(
        &self,
        voices: &VoicesSource,
        job: ChapterJob,
        spec: Option<OutputsSpec>,
        record: Option<BatchRecord>,
    ) -> Result<String, TaskFailure> {
        let renderer = self.renderer(voices)?;
        let sample_rate = renderer.config.mix.sample_rate;
        let failure = |e: String| TaskFailure::retry(format!("chapter {}: {e}", job.index));
        // The book directory and what is made there besides the WAV.
        let (book_dir, outputs) = match &spec {
            Some(spec) => {
                let outputs = spec
                    .outputs(&spec.title, sample_rate)
                    .map_err(|e| TaskFailure::permanent(format!("chapter {}: {e}", job.index)))?;
                // Only MP3/Opus are made here (the M4B by the book task).
                let encodes = outputs
                    .chapter_files()
                    .iter()
                    .any(|f| matches!(f, ChapterFile::Encoded(_)));
                let outputs = with_encoder(outputs, encodes).map_err(failure)?;
                (spec.dir.clone(), Some(outputs))
            }
            None => (job.path.parent().unwrap_or(Path::new(".")).to_owned(), None),
        };
        let total = spec.as_ref().and_then(|s| s.total);
        let cache = self.cache.clone();
        let chapter =
            tokio::task::spawn_blocking(move || -> Result<ManifestChapter, TaskFailure> {
                let mut clips = Vec::new();
                let plan = renderer.plan_chapter(&job.chapter);
                for planned in plan.chunks() {
                    let clip = if pipeline::is_silent(planned.request) {
                        crate::audio::AudioClip::new(Vec::new(), 0)
                    } else {
                        match renderer
                            .client
                            .cached(planned.backend.name(), planned.request)
                        {
                            Some(clip) => clip,
                            // Its synth task is done, but the cache lost it
                            // (wiped, another cache): made again here, so
                            // the mix task cannot wait forever.
                            None => {
                                let key = planned.backend.cache_key(planned.request);
                                tracing::warn!(chapter = job.index, chunk = key.as_str(), cache = %cache, "chunk missing from the cache; synthesizing it again");
                                let made = tokio::runtime::Handle::current().block_on(
                                    renderer
                                        .client
                                        .synthesize(planned.backend.name(), planned.request),
                                );
                                match made {
                                    Ok(done) => done.clip,
                                    Err(e) => {
                                        return Err(TaskFailure::retry(format!(
                                            "chapter {}: chunk {} is missing from the cache {cache} and cannot be synthesized again: {}",
                                            job.index,
                                            key.as_str(),
                                            crate::error::error_chain(&e),
                                        )));
                                    }
                                }
                            }
                        }
                    };
                    clips.push((planned.segment, planned.boundary, clip));
                }
                let failure = |e: String| TaskFailure::retry(format!("chapter {}: {e}", job.index));
                let wav_dir = job.path.parent().unwrap_or(Path::new(".")).to_owned();
                std::fs::create_dir_all(&wav_dir)
                    .map_err(|e| failure(format!("cannot create {}: {e}", wav_dir.display())))?;
                let chapter = renderer
                    .mix_clips(&job, &plan, clips)
                    .map_err(|e| failure(e.to_string()))?;
                // The same subtitles and encoded files as `build` and
                // `batch run` write.
                let mut made = Vec::new();
                if let Some(outputs) = &outputs {
                    for file in outputs.chapter_files() {
                        outputs
                            .write_chapter_file(&book_dir, &chapter, file, total)
                            .map_err(|e| failure(crate::error::error_chain(&e)))?;
                        made.push(file);
                    }
                }
                if let Some(record) = &record {
                    let tags = outputs.as_ref().map(BookOutputs::tags_digest);
                    record_chapter(&book_dir, record, &job, &chapter, tags.as_deref(), &made)
                        .map_err(failure)?;
                }
                Ok(chapter)
            })
            .await
            .map_err(|e| TaskFailure::retry(e.to_string()))??;
        tracing::info!(chapter = chapter.index, file = %chapter.file, "mixed chapter");
        self.report.lock().expect("report lock").mixed += 1;
        serde_json::to_string(&chapter).map_err(|e| TaskFailure::permanent(e.to_string()))
    }

    /// Refreshes the book-level files once every chapter is mixed: the
    /// manifest, and the playlist and M4B the formats call for.
    async fn write_book(&self, id: &str, task: BookTask) -> Result<(), TaskFailure> {
        let results = self
            .queue
            .dependency_results(id)
            .await
            .map_err(|e| TaskFailure::retry(e.to_string()))?;
        let book = task.book.clone();
        let chapters = results
            .iter()
            .map(|r| serde_json::from_str::<ManifestChapter>(r))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                TaskFailure::permanent(format!("book {book}: unreadable chapter result: {e}"))
            })?;
        let failure = |e: String| TaskFailure::retry(format!("book {book}: {e}"));
        let (outputs, only) = match &task.outputs {
            Some(spec) => {
                let outputs = spec
                    .outputs(&task.book, task.sample_rate)
                    .map_err(|e| TaskFailure::permanent(format!("book {book}: {e}")))?;
                let encodes = outputs.book_files().contains(&BookFile::M4b);
                (with_encoder(outputs, encodes).map_err(failure)?, None)
            }
            // A task of an earlier version: the manifest only.
            None => (
                BookOutputs::new(&task.book, task.sample_rate, &[Format::Wav]),
                Some([BookFile::Manifest]),
            ),
        };
        let dir = task.dir.clone();
        let record = task.record.clone();
        tokio::task::spawn_blocking(move || -> Result<(), String> {
            // Book tasks of two plans of one book (a chapter added while
            // the first still ran) merge into the manifest one at a time.
            let _lock = lock_file(&dir, "book.lock")?;
            // The report of what this plan's workers rendered, as `build`
            // and `batch run` write one.
            let audio_s: f64 = chapters.iter().map(|c| c.duration_s).sum();
            let summary = format!(
                "{} chapters rendered into {} ({} audio) by queue workers",
                chapters.len(),
                dir.display(),
                crate::progress::format_duration(audio_s)
            );
            crate::session::report::write(&dir, &summary, &[], &chapters).map_err(|e| {
                format!(
                    "cannot write {}: {e}",
                    dir.join(crate::session::report::REPORT).display()
                )
            })?;
            outputs
                .refresh_book(&dir, chapters, only.as_ref().map(|o| &o[..]))
                .map_err(|e| crate::error::error_chain(&e))?;
            if let Some(link) = &outputs.feed {
                crate::feed::write_opml(&link.library(&dir))
                    .map_err(|e| crate::error::error_chain(&e))?;
            }
            if let Some(record) = &record {
                record_book_files(&dir, record, &outputs)?;
            }
            Ok(())
        })
        .await
        .map_err(|e| TaskFailure::retry(e.to_string()))?
        .map_err(failure)?;
        tracing::info!(book = %task.book, dir = %task.dir.display(), "wrote book files");
        self.report.lock().expect("report lock").books += 1;
        Ok(())
    }
}

/// A `book` task's payload.
struct BookTask {
    book: String,
    dir: PathBuf,
    sample_rate: u32,
    outputs: Option<OutputsSpec>,
    record: Option<BookRecord>,
}

/// `outputs` with this process's ffmpeg when `encodes` (the task makes a
/// file ffmpeg writes); the error (ffmpeg missing) is one line.
fn with_encoder(mut outputs: BookOutputs, encodes: bool) -> Result<BookOutputs, String> {
    if encodes {
        outputs.encoder = Some(crate::outputs::system_encoder()?);
    }
    Ok(outputs)
}

/// Runs `f` on the batch state of the job in `book_dir`, under an exclusive
/// lock on `.tingshu-batch/state.lock` (workers of one book update it at
/// once), and writes the state back.
fn update_state(book_dir: &Path, job: &str, f: impl FnOnce(&mut BookState)) -> Result<(), String> {
    let lock = lock_file(book_dir, "state.lock")?;
    let mut state = BookState::read(book_dir, job);
    f(&mut state);
    let written = state.write(book_dir).map_err(|e| e.to_string());
    let _ = lock.unlock();
    written
}

/// Takes an exclusive lock on `name` in the state folder of `book_dir`
/// (released when the file is dropped).
fn lock_file(book_dir: &Path, name: &str) -> Result<std::fs::File, String> {
    let lock_path = book_dir.join(STATE_DIR).join(name);
    crate::fsutil::lock(&lock_path).map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))
}

/// Records the book-level files just written in the job's state, as
/// `batch run` does, so its next run leaves them alone.
fn record_book_files(
    book_dir: &Path,
    record: &BookRecord,
    outputs: &BookOutputs,
) -> Result<(), String> {
    update_state(book_dir, &record.job, |state| {
        for file in outputs.book_files() {
            let name = outputs.book_file_name(file);
            if let Some(stamp) = OutputFile::stamp(book_dir, &name, &record.hash) {
                record_output(&mut state.book_files, stamp);
            }
        }
    })
}

/// Records a mixed chapter in its batch job's state file (as `batch run`
/// does), with the chapter files `made` from tags of digest `tags`, so its
/// next run neither renders nor encodes the chapter again.
fn record_chapter(
    book_dir: &Path,
    record: &BatchRecord,
    job: &ChapterJob,
    chapter: &ManifestChapter,
    tags: Option<&str>,
    made: &[ChapterFile],
) -> Result<(), String> {
    // The WAV's path relative to the book directory (it may be in a hidden
    // folder of it).
    let file = job.path.strip_prefix(book_dir).map_or_else(
        |_| chapter.file.clone(),
        |p| p.to_string_lossy().into_owned(),
    );
    let mut outputs = Vec::new();
    if let Some(tags) = tags {
        for &kind in made {
            let name = kind.name(chapter.index, &chapter.title);
            let hash = chapter_file_hash(&record.hash, tags, kind);
            if let Some(stamp) = OutputFile::stamp(book_dir, &name, &hash) {
                record_output(&mut outputs, stamp);
            }
        }
    }
    update_state(book_dir, &record.job, |state| {
        state.record_chapter(
            book_dir,
            job.index,
            &chapter.title,
            &file,
            &record.hash,
            outputs,
        );
    })
}

fn excerpt(text: &str) -> String {
    let mut s: String = text.chars().take(16).collect();
    if text.chars().count() > 16 {
        s.push('…');
    }
    s
}
