//! Laying a chapter out in playing order, and the WAV writer it streams
//! into.

use std::io::{Seek, Write};

use super::{MixConfig, PreparedClip, PreparedSegment};
use crate::audio::clip;
use crate::audio::wav::{self, WavError};

/// Where laid-out audio goes: a file, or only a meter.
pub(super) trait Sink {
    /// `samples` of silence.
    fn silence(&mut self, samples: usize) -> Result<(), WavError>;
    /// A clip, to be scaled by `gain`.
    fn append(&mut self, clip: &PreparedClip, gain: f32) -> Result<(), WavError>;
    /// Samples taken so far.
    fn written(&self) -> u64;
}

/// Feeds the chapter to `sink` in playing order: opening pause, segments
/// with the pauses between and inside them, closing pause. Returns each
/// segment's (start, end) in samples.
pub(super) fn lay_out<S: Sink>(
    config: &MixConfig,
    segments: &[PreparedSegment],
    gains: &[f32],
    sink: &mut S,
) -> Result<Vec<(u64, u64)>, WavError> {
    let pauses = &config.pauses;
    let ms = |ms: u32| clip::samples_for_ms(ms, config.sample_rate);
    sink.silence(ms(pauses.chapter_start_ms))?;
    let mut spans = Vec::with_capacity(segments.len());
    for (i, segment) in segments.iter().enumerate() {
        if i > 0 {
            sink.silence(ms(pauses.between_prepared(&segments[i - 1], segment)))?;
        }
        let start = sink.written();
        let last = segment.chunks.len().saturating_sub(1);
        for (j, (boundary, clip)) in segment.chunks.iter().enumerate() {
            sink.append(clip, gains[i])?;
            if j < last {
                sink.silence(ms(pauses.after_chunk(*boundary)))?;
            }
        }
        spans.push((start, sink.written()));
    }
    sink.silence(ms(pauses.chapter_end_ms))?;
    Ok(spans)
}

/// Samples converted at a time: small enough for the allocator to reuse
/// the buffer (no fresh pages).
const WRITE_CHUNK: usize = 16 << 10;

/// Streams samples into a 16-bit mono WAV, each clip scaled by its voice's
/// gain. The length is known before the first sample (the chapter is laid
/// out on its power tracks first), so the header is written once, up
/// front: RIFF as usual, RF64 (EBU Tech 3306) when the data passes the
/// 4 GiB a RIFF size field can hold (a chapter of 27 h at 22.05 kHz).
pub(super) struct ChapterWriter<W: Write + Seek> {
    out: W,
    rate: u32,
    written: u64,
    expected: u64,
    buf: Vec<u8>,
}

impl<W: Write + Seek> ChapterWriter<W> {
    /// Writes the header of a WAV of `samples` samples at `rate`.
    pub(super) fn new(mut out: W, rate: u32, samples: u64) -> Result<ChapterWriter<W>, WavError> {
        out.write_all(&wav::header(rate, samples))
            .map_err(WavError::Write)?;
        Ok(ChapterWriter {
            out,
            rate,
            written: 0,
            expected: samples,
            buf: Vec::with_capacity(WRITE_CHUNK * 2),
        })
    }

    /// Length of what was written, in seconds.
    pub(super) fn finish(mut self) -> Result<f64, WavError> {
        if self.written != self.expected {
            // Cannot happen: the layout is the same both times.
            self.out
                .seek(std::io::SeekFrom::Start(0))
                .map_err(WavError::Write)?;
            self.out
                .write_all(&wav::header(self.rate, self.written))
                .map_err(WavError::Write)?;
        }
        self.out.flush().map_err(WavError::Write)?;
        Ok(self.written as f64 / f64::from(self.rate))
    }

    /// Writes `samples` as 16-bit little-endian PCM.
    fn put(&mut self, samples: impl Iterator<Item = i16>) -> Result<(), WavError> {
        self.buf.clear();
        for s in samples {
            self.buf.extend_from_slice(&s.to_le_bytes());
        }
        self.out.write_all(&self.buf).map_err(WavError::Write)
    }
}

impl<W: Write + Seek> Sink for ChapterWriter<W> {
    fn silence(&mut self, samples: usize) -> Result<(), WavError> {
        let mut left = samples;
        while left > 0 {
            let n = left.min(WRITE_CHUNK);
            self.put(std::iter::repeat_n(0i16, n))?;
            left -= n;
        }
        self.written += samples as u64;
        Ok(())
    }

    fn append(&mut self, clip: &PreparedClip, gain: f32) -> Result<(), WavError> {
        let samples = clip.samples()?;
        for chunk in samples.chunks(WRITE_CHUNK) {
            self.put(chunk.iter().map(|&s| wav::to_i16(s * gain)))?;
        }
        self.written += samples.len() as u64;
        Ok(())
    }

    fn written(&self) -> u64 {
        self.written
    }
}
