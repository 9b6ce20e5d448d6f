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

use crate::audio::{AudioClip, SegmentAudio, mix, wav};
use crate::config::VoicesConfig;
use crate::frontend;
use crate::manifest::{ManifestChapter, ManifestSegment};
use crate::synth::{SynthError, SynthRequest, Synthesizer};
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
    #[error("segment {segment} (\"{excerpt}\"): {source}")]
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
        let mut chunks = chunk::chunk(&segment.text, max_chars);
        if self.config.mix.split_clauses {
            chunks = split_at_clauses(chunks);
        }
        chunks
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
        let jobs: Vec<ChapterJob> = if self.config.mix.speak_title {
            jobs.into_iter().map(with_spoken_title).collect()
        } else {
            jobs
        };
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

    /// Mixes a chapter's clips (see [`crate::audio::mix`]) straight into its
    /// WAV file and describes the result for the manifest.
    fn mix_chapter(
        &self,
        job: &ChapterJob,
        pieces: Vec<Piece>,
    ) -> Result<ManifestChapter, ChapterError> {
        let segments = &job.chapter.segments;
        let mut audio: Vec<SegmentAudio> = segments
            .iter()
            .map(|segment| SegmentAudio {
                kind: segment.kind,
                paragraph: segment.paragraph,
                voice: self
                    .config
                    .voice_for(segment.kind, segment.speaker.as_deref())
                    .to_owned(),
                chunks: Vec::new(),
            })
            .collect();
        for (si, boundary, result) in pieces {
            let clip = result.map_err(|source| ChapterError::Synth {
                segment: si + 1,
                excerpt: excerpt(&segments[si].text),
                source,
            })?;
            audio[si].chunks.push((boundary, clip));
        }
        let voices: Vec<String> = audio.iter().map(|a| a.voice.clone()).collect();
        let mixed = mix::mix_chapter_file(&self.config.mix, audio, &job.path)?;
        let manifest_segments = segments
            .iter()
            .zip(voices)
            .zip(&mixed.spans)
            .map(|((segment, voice), &(start_s, end_s))| ManifestSegment {
                kind: segment.kind,
                speaker: segment.speaker.clone(),
                text: segment.text.clone(),
                start_s: round_ms(start_s),
                end_s: round_ms(end_s),
                voice,
            })
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
            paragraph: 0,
            text: title.to_owned(),
        };
        job.chapter.segments.insert(0, segment);
    }
    job
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::chunk::Chunk;

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
}
