//! A passage rendered for a listener who waits: 16-bit PCM handed out chunk
//! by chunk, in reading order, each as soon as it and every chunk before it
//! are synthesized.
//!
//! Used by `preview` (a text passage, or `-o -`), the studio's preview and
//! the server. Where a listener waits, the first request is kept short
//! ([`Renderer::plan_stream`]), so the time to the first audio is the time
//! to the first clause. Each
//! chunk is mixed on its own — trimmed, faded, levelled and limited as the
//! mixer does, then followed by its pause — so the stream needs no look
//! ahead: the bytes streamed equal the bytes of the same passage collected
//! whole ([`collect_wav`]). A whole chapter mixed by `build` levels per voice
//! over the chapter instead, and so differs slightly.

use std::sync::Arc;

use futures::StreamExt;

use crate::audio::{AudioClip, MixConfig, SegmentAudio};
use crate::pipeline::{PlannedChunk, Renderer, is_silent};
use crate::text::ScriptChapter;
use crate::text::chunk::Boundary;

/// One chunk of a stream to synthesize and mix.
struct Item {
    index: usize,
    /// The segment's number (1-based) and the start of its text, for errors.
    segment: usize,
    excerpt: String,
    kind: crate::text::SegmentKind,
    paragraph: usize,
    voice: String,
    pause_ms: u32,
    backend: String,
    request: crate::synth::SynthRequest,
}

/// The chunks of `chapter` with the pause that follows each.
fn items(renderer: &Renderer, chapter: &ScriptChapter, short_first: bool) -> Vec<Item> {
    let pauses = &renderer.config.mix.pauses;
    let plan = if short_first {
        renderer.plan_stream(chapter)
    } else {
        renderer.plan_chapter(chapter)
    };
    let planned: Vec<PlannedChunk> = plan.chunks().collect();
    let mut out = Vec::with_capacity(planned.len());
    for (index, c) in planned.iter().enumerate() {
        let segment = &chapter.segments[c.segment];
        let pause_ms = match planned.get(index + 1) {
            Some(next) if next.segment == c.segment => pauses.after_chunk(c.boundary),
            Some(next) => {
                let n = &chapter.segments[next.segment];
                pauses.between_parts(
                    (segment.paragraph, segment.kind.into()),
                    (n.paragraph, n.kind.into()),
                )
            }
            None => 0,
        };
        out.push(Item {
            index,
            segment: c.segment + 1,
            excerpt: crate::pipeline::excerpt(&segment.text),
            kind: segment.kind,
            paragraph: segment.paragraph,
            voice: c.request.voice.name.clone(),
            pause_ms,
            backend: c.backend.name().to_owned(),
            request: c.request.clone(),
        });
    }
    out
}

/// The passage as 16-bit little-endian mono PCM at the mix's sample rate
/// (`renderer.config.mix.sample_rate`): one item per chunk, in order. The
/// first chunk is requested first; as many chunks are in flight as the
/// backends take at once. An error ends the stream. With `short_first`, a
/// long first sentence is split after its first clause
/// ([`Renderer::plan_stream`]): what a listener who waits gets.
pub fn stream_pcm(
    renderer: &Renderer,
    chapter: &ScriptChapter,
    short_first: bool,
) -> impl futures::Stream<Item = std::io::Result<Vec<u8>>> + Send + use<> {
    let items = items(renderer, chapter, short_first);
    let client = Arc::clone(&renderer.client);
    let mix = renderer.config.mix.clone();
    let in_flight = renderer
        .backends
        .values()
        .map(|b| b.limits().max_in_flight)
        .sum::<usize>()
        .max(1);
    futures::stream::iter(items)
        .map(move |item| {
            let client = Arc::clone(&client);
            let mix = mix.clone();
            async move {
                let clip = if is_silent(&item.request) {
                    AudioClip::new(Vec::new(), 0)
                } else {
                    client
                        .synthesize(&item.backend, &item.request)
                        .await
                        .map_err(|e| {
                            std::io::Error::other(format!(
                                "segment {} (\"{}\"): {}",
                                item.segment,
                                item.excerpt,
                                crate::error::error_chain(&e)
                            ))
                        })?
                        .clip
                };
                tracing::debug!(chunk = item.index, "stream chunk synthesized");
                tokio::task::spawn_blocking(move || {
                    chunk_pcm(
                        &mix,
                        item.kind,
                        item.paragraph,
                        item.voice,
                        clip,
                        item.pause_ms,
                    )
                })
                .await
                .map_err(std::io::Error::other)?
            }
        })
        .buffered(in_flight)
}

/// One chunk mixed on its own (the mixer's trimming, fades, levelling and
/// limiter), followed by `pause_ms` of silence, as 16-bit PCM bytes.
pub fn chunk_pcm(
    mix: &MixConfig,
    kind: crate::text::SegmentKind,
    paragraph: usize,
    voice: String,
    clip: AudioClip,
    pause_ms: u32,
) -> std::io::Result<Vec<u8>> {
    let mut config = mix.clone();
    config.pauses.chapter_start_ms = 0;
    config.pauses.chapter_end_ms = pause_ms;
    let segment = SegmentAudio {
        kind: kind.into(),
        paragraph,
        voice,
        chunks: vec![(Boundary::None, clip)],
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

/// The header of a streamed 16-bit mono WAV at `rate`: the sizes are
/// unknown, so they are the largest there are (as streamed WAVs have).
pub fn wav_stream_header(rate: u32) -> Vec<u8> {
    let mut h = crate::audio::wav::header(rate, 0);
    h[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    h[40..44].copy_from_slice(&u32::MAX.to_le_bytes());
    h
}

/// The whole stream of `chapter` as one WAV file's bytes (sizes filled in):
/// the same samples a listener of [`stream_pcm`] hears.
pub async fn collect_wav(renderer: &Renderer, chapter: &ScriptChapter) -> std::io::Result<Vec<u8>> {
    let rate = renderer.config.mix.sample_rate;
    let mut pcm = Vec::new();
    let mut stream = std::pin::pin!(stream_pcm(renderer, chapter, false));
    while let Some(part) = stream.next().await {
        pcm.extend_from_slice(&part?);
    }
    let mut wav = crate::audio::wav::header(rate, pcm.len() as u64 / 2);
    wav.extend_from_slice(&pcm);
    Ok(wav)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_read_back_with_an_independent_reader() {
        let mut wav = crate::audio::wav::header(24_000, 2);
        wav.extend_from_slice(&[1, 0, 255, 255]);
        let reader = hound::WavReader::new(std::io::Cursor::new(wav)).unwrap();
        assert_eq!(reader.spec().sample_rate, 24_000);
        assert_eq!(reader.spec().channels, 1);
        let samples: Vec<i16> = reader.into_samples().map(Result::unwrap).collect();
        assert_eq!(samples, vec![1, -1]);
        let streamed = wav_stream_header(24_000);
        assert_eq!(streamed.len(), 44);
        assert_eq!(&streamed[40..44], &u32::MAX.to_le_bytes());
    }
}
