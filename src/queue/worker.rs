//! A worker: claims tasks from the queue and runs them — synthesis through
//! the [`SynthClient`](crate::synth::SynthClient) (rate limits, retries,
//! fallbacks) into the shared synthesis cache, chapter mixing through
//! [`Renderer::mix_clips`] (the code path of `tingshu build`, hence the same
//! bytes) with `build`'s subtitles, and manifest refreshes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::plan::{BatchRecord, SubtitleTags, TaskSpec, VoicesSource};
use super::{Claimed, QueueError, TaskKind, TaskQueue, TaskState};
use crate::batch::state::{BookState, ChapterState, STATE_DIR, file_stamp};
use crate::manifest::ManifestChapter;
use crate::outputs::ChapterFile;
use crate::pipeline::{self, ChapterJob, Renderer};
use crate::synth::cache::{Cache, CacheKey};

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
                Err(e) if errors < 10 => {
                    errors += 1;
                    tracing::warn!(slot, error = %e, "queue unavailable; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let Some(task) = claimed else {
                if self.options.until_idle && self.queue.totals().await?.active == 0 {
                    return Ok(());
                }
                let jitter = fastrand::u64(0..=self.options.poll.as_millis() as u64 / 2);
                tokio::select! {
                    () = tokio::time::sleep(self.options.poll + Duration::from_millis(jitter)) => {}
                    _ = stop.changed() => {}
                }
                continue;
            };
            self.run_task(task).await?;
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
                    record,
                },
            ) => {
                let job = ChapterJob {
                    index,
                    chapter,
                    path,
                };
                self.mix(&voices, job, subtitles, record).await.map(Some)
            }
            (
                TaskKind::Book,
                TaskSpec::Book {
                    book,
                    dir,
                    sample_rate,
                },
            ) => self
                .write_book(&task.id, &book, dir, sample_rate)
                .await
                .map(|()| None),
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
        let config = voices
            .parse()
            .map_err(|e| TaskFailure::permanent(e.to_string()))?;
        let renderer = Arc::new(
            Renderer::with_cache(
                config,
                self.options.worker_program.clone(),
                Some(self.cache.clone()),
            )
            .with_lexicon(voices.lexicon()),
        );
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
        let actual = CacheKey::new(&synth.fingerprint(), &request);
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
        subtitles: Option<SubtitleTags>,
        record: Option<BatchRecord>,
    ) -> Result<String, TaskFailure> {
        let renderer = self.renderer(voices)?;
        let cache = self.cache.clone();
        let chapter =
            tokio::task::spawn_blocking(move || -> Result<ManifestChapter, TaskFailure> {
                let mut clips = Vec::new();
                for planned in renderer.plan_chapter(&job.chapter) {
                    let clip = if pipeline::is_silent(&planned.request) {
                        crate::audio::AudioClip::new(Vec::new(), 0)
                    } else {
                        match renderer
                            .client
                            .cached(planned.backend.name(), &planned.request)
                        {
                            Some(clip) => clip,
                            None => {
                                let key =
                                    CacheKey::new(&planned.backend.fingerprint(), &planned.request);
                                return Err(TaskFailure::retry(format!(
                                    "chapter {}: chunk {} is missing from the cache {cache}",
                                    job.index,
                                    key.as_str(),
                                )));
                            }
                        }
                    };
                    clips.push((planned.segment, planned.boundary, clip));
                }
                let dir = job.path.parent().unwrap_or(Path::new(".")).to_owned();
                std::fs::create_dir_all(&dir).map_err(|e| {
                    TaskFailure::retry(format!("cannot create {}: {e}", dir.display()))
                })?;
                let chapter = renderer
                    .mix_clips(&job, clips)
                    .map_err(|e| TaskFailure::retry(format!("chapter {}: {e}", job.index)))?;
                if let Some(tags) = &subtitles {
                    // The same SRT and LRC as `build` writes.
                    let mut outputs = crate::outputs::BookOutputs::new(
                        &tags.album,
                        renderer.config.mix.sample_rate,
                        &[crate::audio::encode::Format::Wav],
                    );
                    outputs.author = tags.artist.clone();
                    for file in [ChapterFile::Srt, ChapterFile::Lrc] {
                        outputs
                            .write_chapter_file(&dir, &chapter, file, None)
                            .map_err(|e| {
                                TaskFailure::retry(format!("chapter {}: {e}", job.index))
                            })?;
                    }
                }
                if let Some(record) = &record {
                    record_chapter(&dir, record, &job, &chapter)
                        .map_err(|e| TaskFailure::retry(format!("chapter {}: {e}", job.index)))?;
                }
                Ok(chapter)
            })
            .await
            .map_err(|e| TaskFailure::retry(e.to_string()))??;
        tracing::info!(chapter = chapter.index, file = %chapter.file, "mixed chapter");
        self.report.lock().expect("report lock").mixed += 1;
        serde_json::to_string(&chapter).map_err(|e| TaskFailure::permanent(e.to_string()))
    }

    async fn write_book(
        &self,
        id: &str,
        book: &str,
        dir: PathBuf,
        sample_rate: u32,
    ) -> Result<(), TaskFailure> {
        let results = self
            .queue
            .dependency_results(id)
            .await
            .map_err(|e| TaskFailure::retry(e.to_string()))?;
        let chapters = results
            .iter()
            .map(|r| serde_json::from_str::<ManifestChapter>(r))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                TaskFailure::permanent(format!("book {book}: unreadable chapter result: {e}"))
            })?;
        let book = book.to_owned();
        tokio::task::spawn_blocking(move || {
            crate::commands::build::write_manifest(&dir, "", &book, sample_rate, chapters)
        })
        .await
        .map_err(|e| TaskFailure::retry(e.to_string()))?
        .map_err(|e| TaskFailure::retry(format!("{e:#}")))?;
        self.report.lock().expect("report lock").books += 1;
        Ok(())
    }
}

/// Records a mixed chapter in its batch job's state file (as `batch run`
/// does), under an exclusive lock on `.tingshu-batch/state.lock`, so workers
/// mixing chapters of one book at once do not lose each other's entries.
fn record_chapter(
    book_dir: &Path,
    record: &BatchRecord,
    job: &ChapterJob,
    chapter: &ManifestChapter,
) -> Result<(), String> {
    let state_dir = book_dir.join(STATE_DIR);
    let lock_path = state_dir.join("state.lock");
    std::fs::create_dir_all(&state_dir)
        .map_err(|e| format!("cannot create {}: {e}", state_dir.display()))?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
    let mut state = BookState::read(book_dir, &record.job);
    let (bytes, mtime_ns) = file_stamp(&job.path).unwrap_or_default();
    state.set(ChapterState {
        index: job.index,
        title: chapter.title.clone(),
        file: chapter.file.clone(),
        hash: record.hash.clone(),
        bytes,
        mtime_ns,
        // Not recorded: a later `batch run` writes the subtitles again
        // (they are cheap; the audio is not rendered again).
        outputs: Vec::new(),
    });
    let written = state.write(book_dir).map_err(|e| e.to_string());
    let _ = lock.unlock();
    written
}

fn excerpt(text: &str) -> String {
    let mut s: String = text.chars().take(16).collect();
    if text.chars().count() > 16 {
        s.push('…');
    }
    s
}
