//! Plan jobs → synthesize chunks with bounded concurrency → mix → write.
//!
//! All chunks of all selected chapters form one ordered stream, so backends
//! stay busy across chapter boundaries; a chapter is mixed and written as
//! soon as its last chunk is back, so only one chapter's audio is held at a
//! time.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;

use crate::audio::{AudioClip, ChapterMix, wav};
use crate::config::VoicesConfig;
use crate::frontend;
use crate::manifest::{ManifestChapter, ManifestSegment};
use crate::synth::{SynthError, SynthRequest, Synthesizer};
use crate::text::chunk::{self, Boundary};
use crate::text::{ScriptChapter, Segment};

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
}

/// One synthesis request of a chapter, from [`Renderer::plan_chapter`].
pub struct PlannedChunk {
    /// Index of the segment in the chapter.
    pub segment: usize,
    /// The pause that follows the chunk inside its segment.
    pub boundary: Boundary,
    pub backend: Arc<dyn Synthesizer>,
    pub request: SynthRequest,
}

/// A synthesized chunk: (segment index, boundary after it, audio or error).
type Piece = (usize, Boundary, Result<AudioClip, SynthError>);

/// One synthesis task.
struct Task {
    chapter: usize,
    segment: usize,
    boundary: Boundary,
    backend: Arc<dyn Synthesizer>,
    request: SynthRequest,
}

/// How many times a retryable failure is tried again.
const RETRIES: u32 = 2;

impl Renderer {
    pub fn new(config: VoicesConfig, worker_program: Option<PathBuf>) -> Renderer {
        let backends = config.build_backends(worker_program);
        Renderer {
            config: Arc::new(config),
            backends,
        }
    }

    /// The chunks of one segment with their requests.
    fn plan_segment(
        &self,
        segment: &Segment,
    ) -> Vec<(Boundary, Arc<dyn Synthesizer>, SynthRequest)> {
        let voice_name = self
            .config
            .voice_for(segment.kind, segment.speaker.as_deref());
        let voice = self.config.voice_settings(voice_name);
        let backend = Arc::clone(&self.backends[&self.config.voices[voice_name].backend]);
        let max_chars = backend.limits().max_chars;
        chunk::chunk(&segment.text, max_chars)
            .into_iter()
            .map(|c| {
                let spoken = frontend::prepare(&c.text);
                let request = SynthRequest {
                    text: spoken.text,
                    pinyin: spoken.pinyin,
                    voice: voice.clone(),
                };
                (c.boundary, Arc::clone(&backend), request)
            })
            .collect()
    }

    /// Every synthesis request of a chapter, in reading order — the same
    /// requests [`Renderer::render`] sends (used to render a chapter on
    /// many machines and mix it from cached clips).
    pub fn plan_chapter(&self, chapter: &ScriptChapter) -> Vec<PlannedChunk> {
        chapter
            .segments
            .iter()
            .enumerate()
            .flat_map(|(si, segment)| {
                self.plan_segment(segment)
                    .into_iter()
                    .map(move |(boundary, backend, request)| PlannedChunk {
                        segment: si,
                        boundary,
                        backend,
                        request,
                    })
            })
            .collect()
    }

    /// Mixes and writes a chapter from already synthesized clips, one per
    /// chunk of [`Renderer::plan_chapter`] in the same order: the same
    /// code path, hence the same bytes, as [`Renderer::render`].
    pub fn mix_clips(
        &self,
        job: &ChapterJob,
        clips: Vec<(usize, Boundary, AudioClip)>,
    ) -> Result<ManifestChapter, ChapterError> {
        let pieces = clips
            .into_iter()
            .map(|(si, boundary, clip)| (si, boundary, Ok(clip)))
            .collect();
        self.mix_chapter(job, pieces)
    }

    fn concurrency(&self) -> usize {
        let total: usize = self
            .backends
            .values()
            .map(|b| b.limits().max_in_flight)
            .sum();
        (total * 2).max(2)
    }

    /// Renders `jobs` in order, calling `on_chapter` as each chapter finishes.
    pub async fn render(&self, jobs: Vec<ChapterJob>, mut on_chapter: impl FnMut(ChapterOutcome)) {
        let mut tasks = Vec::new();
        let mut remaining = Vec::with_capacity(jobs.len());
        for (ci, job) in jobs.iter().enumerate() {
            let before = tasks.len();
            for (si, segment) in job.chapter.segments.iter().enumerate() {
                for (boundary, backend, request) in self.plan_segment(segment) {
                    tasks.push(Task {
                        chapter: ci,
                        segment: si,
                        boundary,
                        backend,
                        request,
                    });
                }
            }
            remaining.push(tasks.len() - before);
        }

        let mut results: Vec<Vec<Piece>> = jobs.iter().map(|_| Vec::new()).collect();
        // Chapters with no chunks at all finish at once.
        for (ci, job) in jobs.iter().enumerate() {
            if remaining[ci] == 0 {
                on_chapter(self.finish_chapter(job, Vec::new()));
            }
        }
        let mut stream = futures::stream::iter(tasks)
            .map(|task| async move {
                let result = synthesize_with_retry(&task).await;
                (task.chapter, task.segment, task.boundary, result)
            })
            .buffered(self.concurrency());
        while let Some((ci, si, boundary, result)) = stream.next().await {
            results[ci].push((si, boundary, result));
            remaining[ci] -= 1;
            if remaining[ci] == 0 {
                let pieces = std::mem::take(&mut results[ci]);
                on_chapter(self.finish_chapter(&jobs[ci], pieces));
            }
        }
    }

    fn finish_chapter(&self, job: &ChapterJob, pieces: Vec<Piece>) -> ChapterOutcome {
        ChapterOutcome {
            index: job.index,
            title: job.chapter.title.clone(),
            result: self.mix_chapter(job, pieces),
        }
    }

    /// Stitches a chapter's clips with pauses and writes its WAV atomically.
    fn mix_chapter(
        &self,
        job: &ChapterJob,
        pieces: Vec<Piece>,
    ) -> Result<ManifestChapter, ChapterError> {
        let pauses = &self.config.mix.pauses;
        let mut mix = ChapterMix::new(self.config.mix.sample_rate);
        mix.pause(pauses.chapter_start_ms);
        let mut by_segment: Vec<Vec<(Boundary, AudioClip)>> =
            job.chapter.segments.iter().map(|_| Vec::new()).collect();
        for (si, boundary, result) in pieces {
            let clip = result.map_err(|source| ChapterError::Synth {
                segment: si + 1,
                excerpt: excerpt(&job.chapter.segments[si].text),
                source,
            })?;
            by_segment[si].push((boundary, clip));
        }
        let mut segments = Vec::with_capacity(job.chapter.segments.len());
        let mut previous: Option<&Segment> = None;
        for (segment, clips) in job.chapter.segments.iter().zip(by_segment) {
            if let Some(prev) = previous {
                mix.pause(if prev.paragraph != segment.paragraph {
                    pauses.paragraph_ms
                } else if prev.kind != segment.kind {
                    pauses.turn_ms
                } else {
                    pauses.segment_ms
                });
            }
            let start_s = mix.position_s();
            let last = clips.len().saturating_sub(1);
            for (i, (boundary, clip)) in clips.into_iter().enumerate() {
                mix.append(clip);
                if i < last {
                    mix.pause(pauses.after_chunk(boundary));
                }
            }
            segments.push(ManifestSegment {
                kind: segment.kind,
                speaker: segment.speaker.clone(),
                text: segment.text.clone(),
                start_s: round_ms(start_s),
                end_s: round_ms(mix.position_s()),
                voice: self
                    .config
                    .voice_for(segment.kind, segment.speaker.as_deref())
                    .to_owned(),
            });
            previous = Some(segment);
        }
        mix.pause(pauses.chapter_end_ms);
        let clip = mix.finish();
        wav::write_wav_file(&clip, &job.path)?;
        Ok(ManifestChapter {
            index: job.index,
            title: job.chapter.title.clone(),
            file: job
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            duration_s: round_ms(clip.duration_s()),
            segments,
        })
    }
}

async fn synthesize_with_retry(task: &Task) -> Result<AudioClip, SynthError> {
    if task.request.pinyin.is_empty() && task.request.text.chars().all(|c| !c.is_alphanumeric()) {
        return Ok(AudioClip::new(Vec::new(), 0));
    }
    let mut attempt = 0;
    loop {
        match task.backend.synthesize(&task.request).await {
            Err(e) if e.is_retryable() && attempt < RETRIES => {
                attempt += 1;
                tracing::warn!(backend = task.backend.name(), attempt, error = %e, "retrying chunk");
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            }
            other => return other,
        }
    }
}

/// Whether a chunk has nothing to say (only punctuation): it is not sent to
/// a backend and mixes as an empty clip.
pub fn is_silent(request: &SynthRequest) -> bool {
    request.pinyin.is_empty() && request.text.chars().all(|c| !c.is_alphanumeric())
}

/// Synthesizes one chunk as [`Renderer::render`] does (the same steps as
/// its `synthesize_with_retry`): silent chunks give an empty clip,
/// retryable failures are tried again a few times.
pub async fn synthesize_chunk(
    backend: &dyn Synthesizer,
    request: &SynthRequest,
) -> Result<AudioClip, SynthError> {
    if is_silent(request) {
        return Ok(AudioClip::new(Vec::new(), 0));
    }
    let mut attempt = 0;
    loop {
        match backend.synthesize(request).await {
            Err(e) if e.is_retryable() && attempt < RETRIES => {
                attempt += 1;
                tracing::warn!(backend = backend.name(), attempt, error = %e, "retrying chunk");
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            }
            other => return other,
        }
    }
}

fn round_ms(s: f64) -> f64 {
    (s * 1000.0).round() / 1000.0
}

fn excerpt(text: &str) -> String {
    let mut s: String = text.chars().take(16).collect();
    if text.chars().count() > 16 {
        s.push('…');
    }
    s
}
