//! A passage as a stream of PCM (TEMPORARY in branch issue-32: the lead's
//! `session::stream` replaces this file on merge; same two functions).
//! Adapted from `Studio::preview_stream`: each chunk's 16-bit PCM as soon
//! as it and every chunk before it are synthesized, with the pause after
//! it; each chunk levelled on its own.

use std::sync::Arc;

use futures::StreamExt;

use crate::pipeline::Renderer;
use crate::text::ScriptChapter;

/// A WAV header with placeholder sizes, as streamed WAVs have: 16-bit mono
/// PCM at `rate`.
pub fn wav_stream_header(rate: u32) -> Vec<u8> {
    let mut h = Vec::with_capacity(44);
    h.extend_from_slice(b"RIFF");
    h.extend_from_slice(&u32::MAX.to_le_bytes());
    h.extend_from_slice(b"WAVEfmt ");
    h.extend_from_slice(&16u32.to_le_bytes());
    h.extend_from_slice(&1u16.to_le_bytes());
    h.extend_from_slice(&1u16.to_le_bytes());
    h.extend_from_slice(&rate.to_le_bytes());
    h.extend_from_slice(&(rate * 2).to_le_bytes());
    h.extend_from_slice(&2u16.to_le_bytes());
    h.extend_from_slice(&16u16.to_le_bytes());
    h.extend_from_slice(b"data");
    h.extend_from_slice(&u32::MAX.to_le_bytes());
    h
}

/// The chapter's 16-bit LE mono PCM at `renderer.config.mix.sample_rate`.
pub fn stream_pcm(
    renderer: &Renderer,
    chapter: ScriptChapter,
) -> impl futures::Stream<Item = std::io::Result<Vec<u8>>> + Send + 'static {
    let pauses = renderer.config.mix.pauses.clone();
    let planned = renderer.plan_chapter(&chapter);
    let mut items = Vec::with_capacity(planned.len());
    for (i, c) in planned.iter().enumerate() {
        let segment = &chapter.segments[c.segment];
        let pause_ms = match planned.get(i + 1) {
            Some(next) if next.segment == c.segment => pauses.after_chunk(c.boundary),
            Some(next) => {
                let n = &chapter.segments[next.segment];
                if n.paragraph != segment.paragraph {
                    pauses.paragraph_ms
                } else if n.kind != segment.kind {
                    pauses.turn_ms
                } else {
                    pauses.segment_ms
                }
            }
            None => 0,
        };
        let voice = renderer
            .config
            .voice_for(segment.kind, segment.speaker.as_deref())
            .to_owned();
        items.push((
            segment.kind,
            segment.paragraph,
            voice,
            pause_ms,
            c.backend.name().to_owned(),
            c.request.clone(),
        ));
    }
    let client = Arc::clone(&renderer.client);
    let mix = renderer.config.mix.clone();
    let in_flight = renderer
        .backends
        .values()
        .map(|b| b.limits().max_in_flight)
        .sum::<usize>()
        .max(1);
    futures::stream::iter(items)
        .map(
            move |(kind, paragraph, voice, pause_ms, backend, request)| {
                let client = Arc::clone(&client);
                let mix = mix.clone();
                async move {
                    let clip = if crate::pipeline::is_silent(&request) {
                        crate::audio::AudioClip::new(Vec::new(), 0)
                    } else {
                        client
                            .synthesize(&backend, &request)
                            .await
                            .map_err(|e| std::io::Error::other(e.to_string()))?
                            .clip
                    };
                    tokio::task::spawn_blocking(move || {
                        chunk_pcm(&mix, kind, paragraph, voice, clip, pause_ms)
                    })
                    .await
                    .map_err(std::io::Error::other)?
                }
            },
        )
        .buffered(in_flight)
}

/// One chunk mixed on its own, followed by `pause_ms` of silence.
fn chunk_pcm(
    mix: &crate::audio::MixConfig,
    kind: crate::text::SegmentKind,
    paragraph: usize,
    voice: String,
    clip: crate::audio::AudioClip,
    pause_ms: u32,
) -> std::io::Result<Vec<u8>> {
    let mut config = mix.clone();
    config.pauses.chapter_start_ms = 0;
    config.pauses.chapter_end_ms = pause_ms;
    let segment = crate::audio::SegmentAudio {
        kind,
        paragraph,
        voice,
        chunks: vec![(crate::text::chunk::Boundary::None, clip)],
    };
    let mut wav = std::io::Cursor::new(Vec::new());
    crate::audio::mix_chapter(&config, vec![segment], &mut wav).map_err(std::io::Error::other)?;
    let reader = hound::WavReader::new(std::io::Cursor::new(wav.into_inner()))
        .map_err(std::io::Error::other)?;
    let mut pcm = Vec::with_capacity(reader.len() as usize * 2);
    for sample in reader.into_samples::<i16>() {
        pcm.extend_from_slice(&sample.map_err(std::io::Error::other)?.to_le_bytes());
    }
    Ok(pcm)
}
