//! Plan jobs → synthesize chunks with bounded concurrency → mix → write.
//!
//! All chunks of all selected chapters form one ordered stream, so backends
//! stay busy across chapter boundaries; a chapter is mixed and written as
//! soon as its last chunk is back, so only one chapter's audio is held at a
//! time.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use futures::StreamExt;

use rayon::prelude::*;

use crate::audio::{AudioClip, PauseKind, PreparedClip, PreparedSegment, mix, wav};
use crate::config::VoicesConfig;
use crate::frontend::{self, lexicon::Lexicon};
use crate::manifest::{ManifestChapter, ManifestSegment, ManifestSkipped};
use crate::synth::cache::Cache;
use crate::synth::{SynthClient, SynthError, SynthRequest, Synthesizer, VoiceSettings};
use crate::text::chunk::{self, Boundary};
use crate::text::{ScriptChapter, Segment, SegmentKind};

/// One chapter to render.
#[derive(Debug, Clone)]
pub struct ChapterJob {
    /// 1-based position in the book.
    pub index: usize,
    pub chapter: ScriptChapter,
    /// Final path of the chapter's WAV file.
    pub path: PathBuf,
}

/// Why a chapter could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum ChapterError {
    #[error("segment {segment} (\"{excerpt}\")")]
    Synth {
        segment: usize,
        excerpt: String,
        #[source]
        source: SynthError,
    },
    #[error(transparent)]
    Write(#[from] wav::WavError),
    /// The synthesis task ended before every chunk was back (it failed
    /// unexpectedly); the chapter was not written.
    #[error("synthesis stopped with {missing} chunks outstanding")]
    Incomplete { missing: usize },
}

/// A finished chapter: its manifest entry, or why it failed.
#[derive(Debug)]
pub struct ChapterOutcome {
    pub index: usize,
    pub title: String,
    pub result: Result<ManifestChapter, ChapterError>,
}

/// Voices, backends and mixing settings used for a render.
pub struct Renderer {
    pub config: Arc<VoicesConfig>,
    pub backends: BTreeMap<String, Arc<dyn Synthesizer>>,
    /// The backends behind their limiters, retries, fallbacks and cache.
    pub client: Arc<SynthClient>,
    /// Per-book pronunciation overrides for the front end.
    pub lexicon: Lexicon,
    /// Bytes of finished clips synthesis may hold ahead of the mixer
    /// ([`AHEAD_BYTES`]; see [`Renderer::render`]).
    pub ahead_bytes: usize,
}

/// One segment of a chapter as it will be read, decided once from the
/// cast and the voices: its voice (with its settings), the backend that
/// speaks it, and its synthesis requests with the pause class after each.
/// The renderer's warm-up and mixer, the queue's planners and workers and
/// the streamed previews all read this; none decides the voice again.
pub struct SegmentPlan {
    /// The voice that reads the segment (`name` is the voices file's).
    pub voice: VoiceSettings,
    pub backend: Arc<dyn Synthesizer>,
    /// The requests in reading order, each with the pause that follows it
    /// inside the segment (the last one's is not used).
    pub chunks: Vec<(Boundary, SynthRequest)>,
}

/// Every segment of a chapter, planned ([`Renderer::plan_chapter`]).
pub struct ChapterPlan {
    /// One per segment of the chapter, in order.
    pub segments: Vec<SegmentPlan>,
}

/// One synthesis request of a [`ChapterPlan`], in reading order.
pub struct PlannedChunk<'a> {
    /// Index of the segment in the chapter.
    pub segment: usize,
    /// The pause that follows the chunk inside its segment.
    pub boundary: Boundary,
    pub backend: &'a Arc<dyn Synthesizer>,
    pub request: &'a SynthRequest,
}

impl ChapterPlan {
    /// The chapter's requests in reading order.
    pub fn chunks(&self) -> impl Iterator<Item = PlannedChunk<'_>> {
        self.segments.iter().enumerate().flat_map(|(si, s)| {
            s.chunks
                .iter()
                .map(move |(boundary, request)| PlannedChunk {
                    segment: si,
                    boundary: *boundary,
                    backend: &s.backend,
                    request,
                })
        })
    }

    /// The voice name of each segment, in order (what the mixer levels by
    /// and the manifest records).
    pub fn voices(&self) -> Vec<String> {
        self.segments.iter().map(|s| s.voice.name.clone()).collect()
    }
}

/// The voices each backend will speak in `plans` (backend voice ids, most
/// segments first): what to start before the requests come.
pub fn voices_needed<'a>(
    plans: impl IntoIterator<Item = &'a ChapterPlan>,
) -> BTreeMap<String, Vec<String>> {
    let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for segment in plans.into_iter().flat_map(|p| &p.segments) {
        *counts
            .entry((segment.backend.name(), segment.voice.voice.as_str()))
            .or_default() += 1;
    }
    let mut by_count: Vec<((&str, &str), usize)> = counts.into_iter().collect();
    by_count.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    let mut needed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for ((backend, voice), _) in by_count {
        needed
            .entry(backend.to_owned())
            .or_default()
            .push(voice.to_owned());
    }
    needed
}

/// A synthesized chunk: (segment index, boundary after it, audio or error).
/// The audio is shared between the places of a repeated request and copied
/// only when its chapter is mixed, so chapters completed ahead by repeats
/// cost no memory of their own.
type Piece = (usize, Boundary, Result<Made, SynthError>);

/// A chunk's audio and, when a fallback backend made it, `backend/voice`.
type Made = (Arc<PreparedClip>, Option<Arc<str>>);

/// Where a chunk's audio goes.
#[derive(Debug, Clone, Copy)]
struct Place {
    chapter: usize,
    segment: usize,
    /// Position of the chunk within its segment.
    chunk: usize,
    boundary: Boundary,
}

/// One synthesis task: a distinct request.
struct Task {
    id: usize,
    backend: Arc<dyn Synthesizer>,
    request: SynthRequest,
}

impl Renderer {
    /// A renderer without a cache.
    pub fn new(config: VoicesConfig, worker_program: Option<PathBuf>) -> Renderer {
        Renderer::with_cache(config, worker_program, None)
    }

    /// A renderer that reads and fills `cache`: unchanged chunks are never
    /// synthesized twice, and a killed run resumes where it stopped.
    pub fn with_cache(
        config: VoicesConfig,
        worker_program: Option<PathBuf>,
        cache: Option<Cache>,
    ) -> Renderer {
        let client = config.build_client(worker_program, cache);
        Renderer::from_client(config, client)
    }

    /// A renderer over backends already behind their client: backends the
    /// voices file does not build (an in-process synthesizer in tests).
    pub fn from_client(config: VoicesConfig, client: SynthClient) -> Renderer {
        let backends = client
            .backends()
            .map(|(name, b)| (name.to_owned(), Arc::clone(b)))
            .collect();
        Renderer {
            config: Arc::new(config),
            backends,
            client: Arc::new(client),
            lexicon: Lexicon::default(),
            ahead_bytes: AHEAD_BYTES,
        }
    }

    /// Uses a per-book pronunciation lexicon when preparing text.
    pub fn with_lexicon(mut self, lexicon: Lexicon) -> Renderer {
        self.lexicon = lexicon;
        self
    }

    /// [`Renderer::plan_chapter`] of one segment; with `short_first`, a
    /// long first chunk is split after its first clause, so that a
    /// listener waiting for the first audio waits for a few syllables only.
    fn plan_segment(&self, segment: &Segment, short_first: bool) -> SegmentPlan {
        let voice_name = self.config.segment_voice(segment);
        let voice = self.config.voice_settings(voice_name);
        let simplified = self.config.voices[voice_name].simplified;
        let backend = Arc::clone(&self.backends[&self.config.voices[voice_name].backend]);
        let max_chars = backend.limits().max_chars;
        let mut chunks = chunk::chunk(&segment.text, max_chars);
        if self.config.mix.split_clauses {
            chunks = split_at_clauses(chunks);
        } else if short_first
            && chunks
                .first()
                .is_some_and(|c| c.text.chars().count() > FIRST_CHUNK_CHARS)
        {
            let rest = chunks.split_off(1);
            chunks = split_at_clauses(chunks);
            if chunks.len() > 2 {
                // Only the first clause goes alone; the rest stays one request.
                let tail: Vec<chunk::Chunk> = chunks.split_off(1);
                let boundary = tail.last().map_or(Boundary::None, |c| c.boundary);
                let text: String = tail.into_iter().map(|c| c.text).collect();
                chunks.push(chunk::Chunk { text, boundary });
            }
            chunks.extend(rest);
        }
        let chunks = chunks
            .into_iter()
            .map(|c| {
                let spoken = frontend::prepare_with(&c.text, &self.lexicon);
                let request = SynthRequest {
                    text: if simplified {
                        crate::synth::to_simplified(&spoken.text)
                    } else {
                        spoken.text
                    },
                    pinyin: spoken.pinyin_words,
                    voice: voice.clone(),
                };
                (c.boundary, request)
            })
            .collect();
        SegmentPlan {
            voice,
            backend,
            chunks,
        }
    }

    /// How many chunks of `chapter` are not in the cache yet (all of them
    /// without a cache): 0 means rendering it sends no request.
    pub fn uncached_chunks(&self, chapter: &ScriptChapter) -> usize {
        self.plan_chapter(chapter)
            .chunks()
            .filter(|c| {
                !is_silent(c.request) && !self.client.is_cached(c.backend.name(), c.request)
            })
            .count()
    }

    /// Every segment of a chapter with its voice and its synthesis requests,
    /// in reading order — the same requests [`Renderer::render`] sends
    /// (also used to render a chapter on many machines and mix it from
    /// cached clips).
    pub fn plan_chapter(&self, chapter: &ScriptChapter) -> ChapterPlan {
        ChapterPlan {
            segments: chapter
                .segments
                .iter()
                .map(|segment| self.plan_segment(segment, false))
                .collect(),
        }
    }

    /// [`Renderer::plan_chapter`] for a listener who waits: the first chunk
    /// is split after its first clause when it is longer than
    /// [`FIRST_CHUNK_CHARS`] (what streamed previews and the server send).
    pub fn plan_stream(&self, chapter: &ScriptChapter) -> ChapterPlan {
        ChapterPlan {
            segments: chapter
                .segments
                .iter()
                .enumerate()
                .map(|(si, segment)| self.plan_segment(segment, si == 0))
                .collect(),
        }
    }

    /// Mixes and writes a chapter from already synthesized clips, one per
    /// chunk of `plan` (its [`Renderer::plan_chapter`]) in the same order:
    /// the same code path, hence the same bytes, as [`Renderer::render`].
    pub fn mix_clips(
        &self,
        job: &ChapterJob,
        plan: &ChapterPlan,
        clips: Vec<(usize, Boundary, AudioClip)>,
    ) -> Result<ManifestChapter, ChapterError> {
        let rate = self.config.mix.sample_rate;
        let pieces = clips
            .into_par_iter()
            .map(|(si, boundary, clip)| {
                (si, boundary, Ok((Arc::new(mix::prepare(clip, rate)), None)))
            })
            .collect();
        self.mix_chapter(job, plan.voices(), pieces)
    }

    /// Waits until every backend a voice uses can run (in-process engines
    /// loaded in parallel, their files checked): a setup error before
    /// anything is written.
    pub fn ready(&self) -> Result<(), SynthError> {
        let used: std::collections::BTreeSet<&String> =
            self.config.voices.values().map(|v| &v.backend).collect();
        let used: Vec<&Arc<dyn Synthesizer>> = used
            .into_iter()
            .filter_map(|name| self.backends.get(name))
            .collect();
        for backend in &used {
            backend.warm_up(&[]);
        }
        used.iter().try_for_each(|backend| backend.ready())
    }

    fn concurrency(&self) -> usize {
        let total: usize = self
            .backends
            .values()
            .map(|b| b.limits().max_in_flight)
            .sum();
        (total * 2).max(2)
    }

    /// A job as it is rendered: with its title spoken first when the voices
    /// ask for it. [`Renderer::render`] renders this; planners of queue
    /// tasks plan it.
    pub fn prepare(&self, job: ChapterJob) -> ChapterJob {
        if self.config.mix.speak_title {
            with_spoken_title(job)
        } else {
            job
        }
    }

    /// Renders `jobs` in order, calling `on_chapter` as each chapter finishes.
    pub async fn render(&self, jobs: Vec<ChapterJob>, mut on_chapter: impl FnMut(ChapterOutcome)) {
        let jobs: Vec<ChapterJob> = jobs.into_iter().map(|job| self.prepare(job)).collect();
        // Requests run in their own task: they start as soon as the first
        // segment is planned, and keep going while a finished chapter is
        // mixed and written here. Unordered: a slow request does not hold
        // back finished ones; the pieces of a chapter are put back in order
        // before mixing.
        //
        // Backpressure: a finished clip takes its size from a budget of
        // `ahead_bytes` before it is handed over, and gives it back once the
        // mixer's side has it (counted toward spilling, or mixed). While
        // the budget is spent, finished requests wait and no new ones
        // start, so synthesis never runs more than the budget ahead of a
        // mixer that is slow (a long chapter being written, a busy CPU).
        let (task_tx, mut task_rx) = tokio::sync::mpsc::unbounded_channel::<Task>();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let client = Arc::clone(&self.client);
        let concurrency = self.concurrency();
        let rate = self.config.mix.sample_rate;
        let budget_units = self
            .ahead_bytes
            .div_ceil(AHEAD_UNIT)
            .clamp(1, u32::MAX as usize);
        let producer_budget = Arc::new(tokio::sync::Semaphore::new(budget_units));
        let producer_ahead = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let _producer = AbortOnDrop(tokio::spawn(async move {
            let tasks = futures::stream::poll_fn(move |cx| task_rx.poll_recv(cx));
            let mut stream = tasks
                .map(|task| {
                    let client = Arc::clone(&client);
                    let budget = Arc::clone(&producer_budget);
                    let ahead = Arc::clone(&producer_ahead);
                    async move {
                        // Each clip is made ready for the mixer as soon as
                        // it arrives, while other requests are in flight.
                        let result = match synthesize_task(&client, &task).await {
                            Ok((clip, fallback)) => {
                                match tokio::task::spawn_blocking(move || mix::prepare(clip, rate))
                                    .await
                                {
                                    Ok(prepared) => Ok((Arc::new(prepared), fallback)),
                                    Err(e) if e.is_panic() => {
                                        std::panic::resume_unwind(e.into_panic())
                                    }
                                    // Only when the runtime shuts down.
                                    Err(e) => Err(SynthError::Worker {
                                        backend: task.backend.name().to_owned(),
                                        source: std::io::Error::other(e),
                                    }),
                                }
                            }
                            Err(e) => Err(e),
                        };
                        let bytes = result.as_ref().map_or(0, |(clip, _)| clip.memory_bytes());
                        let units = bytes.div_ceil(AHEAD_UNIT).clamp(1, budget_units);
                        // Closed only when the render is dropped.
                        let permit = budget.acquire_many_owned(units as u32).await.ok();
                        let waiting = ahead.fetch_add(bytes, std::sync::atomic::Ordering::SeqCst);
                        client
                            .stats
                            .ahead_peak_bytes
                            .fetch_max(waiting + bytes, std::sync::atomic::Ordering::SeqCst);
                        (
                            task.id,
                            result,
                            Ahead {
                                permit,
                                bytes,
                                ahead,
                            },
                        )
                    }
                })
                .buffer_unordered(concurrency);
            while let Some(piece) = stream.next().await {
                if tx.send(piece).is_err() {
                    break;
                }
            }
        }));

        // A request that occurs more than once (a repeated line, a name
        // said alone) is sent once; its audio goes to every place.
        let mut first: HashMap<String, usize> = HashMap::new();
        let mut places: Vec<Vec<Place>> = Vec::new();
        let mut remaining = Vec::with_capacity(jobs.len());
        // Each segment's voice, from its plan: what the mixer levels by.
        let mut voices: Vec<Vec<String>> = Vec::with_capacity(jobs.len());
        let mut warmed: std::collections::BTreeSet<(String, String)> = Default::default();
        for (ci, job) in jobs.iter().enumerate() {
            let plan = self.plan_chapter(&job.chapter);
            // Worker processes start while the next chapters go through
            // the front end.
            for (backend, ids) in voices_needed([&plan]) {
                let new: Vec<String> = ids
                    .into_iter()
                    .filter(|id| warmed.insert((backend.clone(), id.clone())))
                    .collect();
                if !new.is_empty() {
                    self.backends[&backend].warm_up(&new);
                }
            }
            voices.push(plan.voices());
            let mut count = 0;
            for (si, segment) in plan.segments.into_iter().enumerate() {
                for (chunk, (boundary, request)) in segment.chunks.into_iter().enumerate() {
                    count += 1;
                    let place = Place {
                        chapter: ci,
                        segment: si,
                        chunk,
                        boundary,
                    };
                    let key = format!("{}\0{:?}", segment.backend.name(), request);
                    if let Some(&id) = first.get(&key) {
                        places[id].push(place);
                        continue;
                    }
                    let id = places.len();
                    first.insert(key, id);
                    places.push(vec![place]);
                    // The producer only stops early when this render is dropped.
                    let _ = task_tx.send(Task {
                        id,
                        backend: Arc::clone(&segment.backend),
                        request,
                    });
                }
            }
            remaining.push(count);
        }
        drop(task_tx);
        drop(first);

        let mut results: Vec<Vec<(usize, Piece)>> = jobs.iter().map(|_| Vec::new()).collect();
        // A chapter holding more than SPILL_AFTER bytes of samples moves
        // them into a temporary file beside its WAV: memory does not grow
        // with a chapter's length.
        let mut held: Vec<usize> = vec![0; jobs.len()];
        // The same across chapters: the chapter holding most spills when
        // all of them together pass SPILL_AFTER.
        let mut held_total = 0usize;
        let mut spills: Vec<Option<Arc<mix::Spill>>> = jobs.iter().map(|_| None).collect();
        // Chapters with no chunks at all finish at once.
        for (ci, job) in jobs.iter().enumerate() {
            if remaining[ci] == 0 {
                on_chapter(self.finish_chapter(job, std::mem::take(&mut voices[ci]), Vec::new()));
            }
        }
        while let Some((id, result, ahead)) = rx.recv().await {
            let targets = std::mem::take(&mut places[id]);
            let mut result = Some(result);
            for (n, place) in targets.iter().enumerate() {
                // Copies for all places but the last, which takes the original.
                let piece = if n + 1 == targets.len() {
                    result.take().expect("taken once, by the last place")
                } else {
                    copy_result(result.as_ref().expect("not taken yet"))
                };
                let ci = place.chapter;
                if let Ok((clip, _)) = &piece {
                    held[ci] += clip.memory_bytes();
                    held_total += clip.memory_bytes();
                }
                results[ci].push((place.chunk, (place.segment, place.boundary, piece)));
                if held[ci] > spill_after() || held_total > spill_after() {
                    let largest = (0..held.len()).max_by_key(|&c| held[c]).unwrap_or(ci);
                    let before = held[largest];
                    held[largest] =
                        spill_chapter(&jobs[largest], &mut spills[largest], &mut results[largest]);
                    held_total = held_total - before + held[largest];
                }
                remaining[ci] -= 1;
                if remaining[ci] == 0 {
                    held_total -= held[ci];
                    held[ci] = 0;
                    let mut pieces = std::mem::take(&mut results[ci]);
                    pieces.sort_by_key(|(chunk, (si, _, _))| (*si, *chunk));
                    let pieces = pieces.into_iter().map(|(_, piece)| piece).collect();
                    let chapter_voices = std::mem::take(&mut voices[ci]);
                    on_chapter(self.finish_chapter(&jobs[ci], chapter_voices, pieces));
                    // The mixed chapter's clips are gone: so is its file.
                    spills[ci] = None;
                }
            }
            // The mixer's side has the clip now: its budget goes back.
            drop(ahead);
        }
        for (job, missing) in jobs.iter().zip(remaining) {
            if missing > 0 {
                on_chapter(ChapterOutcome {
                    index: job.index,
                    title: job.chapter.title.clone(),
                    result: Err(ChapterError::Incomplete { missing }),
                });
            }
        }
    }

    fn finish_chapter(
        &self,
        job: &ChapterJob,
        voices: Vec<String>,
        pieces: Vec<Piece>,
    ) -> ChapterOutcome {
        ChapterOutcome {
            index: job.index,
            title: job.chapter.title.clone(),
            result: self.mix_chapter(job, voices, pieces),
        }
    }

    /// Mixes a chapter's clips (see [`crate::audio::mix`]) straight into its
    /// WAV file and describes the result for the manifest; `voices` holds
    /// each segment's voice, from its plan.
    fn mix_chapter(
        &self,
        job: &ChapterJob,
        voices: Vec<String>,
        pieces: Vec<Piece>,
    ) -> Result<ManifestChapter, ChapterError> {
        let segments = &job.chapter.segments;
        let mut audio: Vec<PreparedSegment> = segments
            .iter()
            .zip(voices)
            .map(|(segment, voice)| PreparedSegment {
                kind: segment.kind.into(),
                paragraph: segment.paragraph,
                voice,
                chunks: Vec::new(),
            })
            .collect();
        let mut fallbacks: Vec<Option<String>> = vec![None; segments.len()];
        for (si, boundary, result) in pieces {
            let (clip, fallback) = result.map_err(|source| ChapterError::Synth {
                segment: si + 1,
                excerpt: excerpt(&segments[si].text),
                source,
            })?;
            if let Some(fallback) = fallback {
                let names = fallbacks[si].get_or_insert_with(String::new);
                if !names.split(", ").any(|n| n == &*fallback) {
                    if !names.is_empty() {
                        names.push_str(", ");
                    }
                    names.push_str(&fallback);
                }
            }
            audio[si]
                .chunks
                .push((boundary, Arc::unwrap_or_clone(clip)));
        }
        let voices: Vec<String> = audio.iter().map(|a| a.voice.clone()).collect();
        let mixed = mix::mix_prepared_file(&self.config.mix, audio, &job.path)?;
        let manifest_segments = segments
            .iter()
            .zip(voices)
            .zip(&mixed.spans)
            .zip(fallbacks)
            .map(
                |(((segment, voice), &(start_s, end_s)), fallback)| ManifestSegment {
                    kind: segment.kind,
                    speaker: segment.speaker.clone(),
                    text: segment.text.clone(),
                    start_s: round_ms(start_s),
                    end_s: round_ms(end_s),
                    voice,
                    fallback,
                },
            )
            .collect();
        Ok(ManifestChapter {
            index: job.index,
            title: job.chapter.title.clone(),
            file: job
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            duration_s: round_ms(mixed.duration_s),
            loudness_lufs: mixed
                .loudness
                .is_audible()
                .then(|| (mixed.loudness.integrated_lufs * 100.0).round() / 100.0),
            segments: manifest_segments,
            skipped: job
                .chapter
                .skipped
                .iter()
                .map(|line| ManifestSkipped {
                    paragraph: line.paragraph,
                    text: line.text.clone(),
                })
                .collect(),
        })
    }
}

/// The mixer's view of a segment's kind: it knows pauses, not text.
impl From<SegmentKind> for PauseKind {
    fn from(kind: SegmentKind) -> PauseKind {
        match kind {
            SegmentKind::Narration => PauseKind::Narration,
            SegmentKind::Dialogue => PauseKind::Dialogue,
        }
    }
}

/// Bytes of finished clips synthesis may hold ahead of the mixer by
/// default ([`Renderer::render`]'s backpressure): 16 MiB, about 3 minutes
/// of prepared audio at 22.05 kHz.
pub const AHEAD_BYTES: usize = 16 << 20;

/// The budget is counted in units of this many bytes.
const AHEAD_UNIT: usize = 4096;

/// A finished clip's share of the budget, given back when dropped.
struct Ahead {
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
    bytes: usize,
    ahead: Arc<std::sync::atomic::AtomicUsize>,
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.ahead
            .fetch_sub(self.bytes, std::sync::atomic::Ordering::SeqCst);
        drop(self.permit.take());
    }
}

/// Bytes of samples a chapter keeps in memory before it spills them
/// (48 MiB, about 9 minutes at 22.05 kHz); `TINGSHU_SPILL_AFTER_MB`
/// changes it (0 spills every clip: the same bytes come out either way).
fn spill_after() -> usize {
    static AFTER: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *AFTER.get_or_init(|| {
        std::env::var("TINGSHU_SPILL_AFTER_MB")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .map_or(48 << 20, |mb| mb << 20)
    })
}

/// Moves the samples of a chapter's pieces into its spill file (created
/// beside the chapter's WAV). Returns the bytes still held in memory: 0, or
/// everything when the file cannot be written (then the chapter stays in
/// memory, as before, with a warning).
fn spill_chapter(
    job: &ChapterJob,
    spill: &mut Option<Arc<mix::Spill>>,
    pieces: &mut [(usize, Piece)],
) -> usize {
    if spill.is_none() {
        let dir = job
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        match mix::Spill::new_in(dir) {
            Ok(file) => *spill = Some(file),
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot create a spill file; the chapter stays in memory");
                return 0;
            }
        }
    }
    let file = spill.as_ref().expect("created above");
    for (_, (_, _, piece)) in pieces.iter_mut() {
        if let Ok((clip, _)) = piece
            && clip.memory_bytes() > 0
            && let Err(e) = Arc::make_mut(clip).spill(file)
        {
            tracing::warn!(chapter = job.index, error = %e, "cannot spill audio; the chapter stays in memory");
            return held(pieces);
        }
    }
    0
}

/// Bytes of samples `pieces` hold in memory.
fn held(pieces: &[(usize, Piece)]) -> usize {
    pieces
        .iter()
        .filter_map(|(_, (_, _, p))| p.as_ref().ok())
        .map(|(clip, _)| clip.memory_bytes())
        .sum()
}

/// Aborts a spawned task when dropped (a cancelled render stops its requests).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The same outcome for another place of a repeated request (an error
/// keeps its message, not its kind).
fn copy_result(result: &Result<Made, SynthError>) -> Result<Made, SynthError> {
    match result {
        Ok((clip, fallback)) => Ok((Arc::clone(clip), fallback.clone())),
        Err(e) => {
            let shown = e.to_string();
            let prefix = format!("backend {}: ", e.backend());
            Err(SynthError::Engine {
                backend: e.backend().to_owned(),
                message: shown.strip_prefix(&prefix).unwrap_or(&shown).to_owned(),
            })
        }
    }
}

/// One chunk through the client (cache, limiter, retries, fallback).
/// Returns the clip and, when a fallback made it, `backend/voice`.
async fn synthesize_task(
    client: &SynthClient,
    task: &Task,
) -> Result<(AudioClip, Option<Arc<str>>), SynthError> {
    if is_silent(&task.request) {
        return Ok((AudioClip::new(Vec::new(), 0), None));
    }
    client
        .synthesize(task.backend.name(), &task.request)
        .await
        .map(|done| {
            let fallback = done
                .fallback
                .then(|| Arc::from(format!("{}/{}", done.backend, done.voice)));
            (done.clip, fallback)
        })
}

/// A first chunk longer than this (characters) is split after its first
/// clause in a stream ([`Renderer::plan_stream`]).
pub const FIRST_CHUNK_CHARS: usize = 12;

/// Splits chunks after ，、：, so that the mixer places a clause pause
/// there (`[mix] split_clauses`). Every character is kept; closing quotes
/// stay with their clause; the last piece keeps the chunk's boundary.
fn split_at_clauses(chunks: Vec<chunk::Chunk>) -> Vec<chunk::Chunk> {
    let mut out = Vec::with_capacity(chunks.len());
    for c in chunks {
        let mut current = String::new();
        let mut chars = c.text.chars().peekable();
        while let Some(ch) = chars.next() {
            current.push(ch);
            if !matches!(ch, '，' | '、' | '：' | ',' | ':') {
                continue;
            }
            while let Some(&next) = chars.peek() {
                if !matches!(next, '」' | '』' | '”' | '’' | '"' | '）' | ')' | '》') {
                    break;
                }
                current.push(next);
                chars.next();
            }
            let speakable = current.chars().any(char::is_alphanumeric);
            if speakable && chars.peek().is_some() {
                out.push(chunk::Chunk {
                    text: std::mem::take(&mut current),
                    boundary: Boundary::Clause,
                });
            }
        }
        match out.last_mut() {
            Some(last) if current.is_empty() => last.boundary = c.boundary,
            _ => out.push(chunk::Chunk {
                text: current,
                boundary: c.boundary,
            }),
        }
    }
    out
}

/// Puts the chapter title in front of the text as narration (paragraph 0),
/// so the narrator reads it and the subtitles show it.
fn with_spoken_title(mut job: ChapterJob) -> ChapterJob {
    let title = job.chapter.title.trim();
    if !title.is_empty() && crate::text::quote::is_speakable(title) {
        let segment = Segment {
            kind: SegmentKind::Narration,
            speaker: None,
            unnamed: None,
            gender_unsure: false,
            paragraph: 0,
            text: title.to_owned(),
        };
        job.chapter.segments.insert(0, segment);
    }
    job
}

/// Whether a chunk has nothing to say (only punctuation): it is not sent to
/// a backend and mixes as an empty clip.
pub fn is_silent(request: &SynthRequest) -> bool {
    request.pinyin.is_empty() && request.text.chars().all(|c| !c.is_alphanumeric())
}

fn round_ms(s: f64) -> f64 {
    (s * 1000.0).round() / 1000.0
}

pub(crate) fn excerpt(text: &str) -> String {
    let mut s: String = text.chars().take(16).collect();
    if text.chars().count() > 16 {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::Script;
    use crate::text::chunk::Chunk;

    #[tokio::test]
    async fn rendered_chunks_are_cached_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let config = VoicesConfig::load(None).unwrap();
        let renderer = Renderer::with_cache(config, None, Some(Cache::new(dir.path().join("c"))));
        let script = Script::from_text("第一章 雨\n雨停了。他说：“走吧。”\n", "书");
        let chapter = script.chapters[0].clone();
        // 雨停了。| 他说： | “走吧。”
        assert_eq!(renderer.uncached_chunks(&chapter), 3);
        let job = ChapterJob {
            index: 1,
            chapter: chapter.clone(),
            path: dir.path().join("1.wav"),
        };
        let mut outcomes = Vec::new();
        renderer
            .render(vec![job.clone()], |o| outcomes.push(o))
            .await;
        let first = outcomes.pop().unwrap().result.unwrap();
        assert_eq!(renderer.uncached_chunks(&chapter), 0);
        let sent = renderer
            .client
            .stats
            .requests
            .load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(sent, 3);
        // A rerun from the cache gives the same chapter and sends nothing.
        let bytes = std::fs::read(&job.path).unwrap();
        renderer
            .render(vec![job.clone()], |o| outcomes.push(o))
            .await;
        assert_eq!(outcomes.pop().unwrap().result.unwrap(), first);
        assert_eq!(std::fs::read(&job.path).unwrap(), bytes);
        assert_eq!(
            renderer
                .client
                .stats
                .requests
                .load(std::sync::atomic::Ordering::Relaxed),
            3
        );
    }

    #[test]
    fn clauses_become_chunks_with_clause_pauses() {
        let chunks = vec![
            Chunk {
                text: "他说：“好，走吧。”".into(),
                boundary: Boundary::Sentence,
            },
            Chunk {
                text: "风、雨，".into(),
                boundary: Boundary::Hesitation,
            },
        ];
        let split = split_at_clauses(chunks);
        let got: Vec<(&str, Boundary)> = split
            .iter()
            .map(|c| (c.text.as_str(), c.boundary))
            .collect();
        assert_eq!(
            got,
            [
                ("他说：", Boundary::Clause),
                ("“好，", Boundary::Clause),
                ("走吧。”", Boundary::Sentence),
                ("风、", Boundary::Clause),
                ("雨，", Boundary::Hesitation),
            ]
        );
    }

    /// A mixer slower than synthesis (each chapter's callback takes 150
    /// ms): finished clips waiting for it never pass the budget, every
    /// chapter is still written; with no budget to speak of, the same
    /// render runs far ahead (the test has teeth).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn synthesis_waits_when_it_runs_too_far_ahead_of_the_mixer() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for c in 1..=10 {
            text.push_str(&format!(
                "第{c}章 雨\n第{c}场雨停了，屋檐还在滴水。他说：“今天走第{c}段路吧。”\n"
            ));
        }
        let script = Script::from_text(&text, "书");
        let jobs: Vec<ChapterJob> = script
            .chapters
            .iter()
            .enumerate()
            .map(|(i, chapter)| ChapterJob {
                index: i + 1,
                chapter: chapter.clone(),
                path: dir.path().join(format!("{}.wav", i + 1)),
            })
            .collect();
        let mut peaks = Vec::new();
        for budget in [512 << 10, 1 << 40] {
            let mut renderer = Renderer::new(VoicesConfig::load(None).unwrap(), None);
            renderer.ahead_bytes = budget;
            let mut written = 0;
            let mut largest = 0;
            renderer
                .render(jobs.clone(), |o| {
                    let chapter = o.result.unwrap();
                    written += 1;
                    largest = largest
                        .max((chapter.duration_s * f64::from(renderer_rate()) * 8.0) as usize);
                    std::thread::sleep(std::time::Duration::from_millis(150));
                })
                .await;
            assert_eq!(written, jobs.len());
            let peak = renderer
                .client
                .stats
                .ahead_peak_bytes
                .load(std::sync::atomic::Ordering::SeqCst);
            peaks.push((budget, peak, largest));
        }
        let (budget, bounded, largest) = peaks[0];
        // One clip larger than the whole budget may go alone.
        assert!(
            bounded <= budget.max(largest),
            "{bounded} bytes waited with a budget of {budget}"
        );
        let (_, unbounded, _) = peaks[1];
        assert!(
            unbounded > 2 * budget,
            "the mixer never fell behind ({unbounded} bytes): the test shows nothing"
        );
    }

    fn renderer_rate() -> u32 {
        VoicesConfig::load(None).unwrap().mix.sample_rate
    }
}
