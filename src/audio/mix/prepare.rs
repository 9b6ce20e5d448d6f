//! Preparing chunks for the mixer: each synthesized clip brought to the
//! output rate, trimmed, faded and measured as it arrives, held in memory
//! or in a chapter's spill file until the chapter is mixed.

use std::borrow::Cow;
use std::sync::Arc;

use super::Spill;
use crate::audio::loudness;
use crate::audio::peak_limiter;
use crate::audio::resample::resample;
use crate::audio::wav::WavError;
use crate::audio::{AudioClip, clip};
use crate::text::chunk::Boundary;

/// A chunk made ready for the mixer ([`prepare`]): at the output rate,
/// backend silence trimmed, faded, with its K-weighted power measured. Its
/// samples and tracks are in memory, or in a chapter's [`Spill`] file once
/// the chapter holds more than the pipeline keeps in memory.
#[derive(Debug, Clone)]
pub struct PreparedClip {
    data: Data,
}

/// Where a prepared clip's samples and tracks are.
#[derive(Debug, Clone)]
enum Data {
    Memory {
        samples: Vec<f32>,
        track: Track,
    },
    /// In `file` from `offset`: the samples, then the power track, then
    /// the peak track, as little-endian `f32`.
    Spilled {
        file: Arc<Spill>,
        offset: u64,
        len: usize,
        power: usize,
        peaks: usize,
    },
}

impl PreparedClip {
    /// Number of samples.
    pub fn len(&self) -> usize {
        match &self.data {
            Data::Memory { samples, .. } => samples.len(),
            Data::Spilled { len, .. } => *len,
        }
    }

    /// Whether the clip has no samples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of samples and tracks held in memory (0 once spilled).
    pub fn memory_bytes(&self) -> usize {
        match &self.data {
            Data::Memory { samples, track } => {
                (samples.len() + track.power.len() + track.peaks.len()) * 4
            }
            Data::Spilled { .. } => 0,
        }
    }

    /// Moves the samples and tracks into `spill` (no effect when already
    /// spilled).
    pub fn spill(&mut self, spill: &Arc<Spill>) -> std::io::Result<()> {
        if let Data::Memory { samples, track } = &self.data {
            let offset = spill.append(&[samples, &track.power, &track.peaks])?;
            self.data = Data::Spilled {
                file: Arc::clone(spill),
                offset,
                len: samples.len(),
                power: track.power.len(),
                peaks: track.peaks.len(),
            };
        }
        Ok(())
    }

    /// The samples (read back from the spill file when spilled).
    pub(super) fn samples(&self) -> Result<Cow<'_, [f32]>, WavError> {
        match &self.data {
            Data::Memory { samples, .. } => Ok(Cow::Borrowed(samples)),
            Data::Spilled {
                file, offset, len, ..
            } => Ok(Cow::Owned(file.read(*offset, *len)?)),
        }
    }

    /// The power track.
    pub(super) fn power(&self) -> Result<Cow<'_, [f32]>, WavError> {
        match &self.data {
            Data::Memory { track, .. } => Ok(Cow::Borrowed(&track.power)),
            Data::Spilled {
                file,
                offset,
                len,
                power,
                ..
            } => Ok(Cow::Owned(file.read(offset + 4 * *len as u64, *power)?)),
        }
    }

    /// The peak track.
    pub(super) fn peaks(&self) -> Result<Cow<'_, [f32]>, WavError> {
        match &self.data {
            Data::Memory { track, .. } => Ok(Cow::Borrowed(&track.peaks)),
            Data::Spilled {
                file,
                offset,
                len,
                power,
                peaks,
            } => Ok(Cow::Owned(
                file.read(offset + 4 * (*len + *power) as u64, *peaks)?,
            )),
        }
    }

    /// Runs the limiter over the clip at `ceiling`, keeping its tracks in
    /// step; a clip whose peaks stay under the ceiling is not read.
    pub(super) fn limit(&mut self, ceiling: f32, rate: u32) -> Result<(), WavError> {
        if ceiling <= 0.0 || self.peaks()?.iter().all(|&p| p <= ceiling) {
            return Ok(());
        }
        match &mut self.data {
            Data::Memory { samples, track } => {
                peak_limiter::limit_tracked(
                    samples,
                    &mut track.power,
                    &mut track.peaks,
                    ceiling,
                    rate,
                );
            }
            Data::Spilled {
                file,
                offset,
                len,
                power,
                peaks,
            } => {
                let all = file.read(*offset, *len + *power + *peaks)?;
                let (s, rest) = all.split_at(*len);
                let (p, q) = rest.split_at(*power);
                let (mut s, mut p, mut q) = (s.to_vec(), p.to_vec(), q.to_vec());
                peak_limiter::limit_tracked(&mut s, &mut p, &mut q, ceiling, rate);
                file.write(*offset, &[&s, &p, &q])?;
            }
        }
        Ok(())
    }

    /// The clip's true peak, at least `floor` (see
    /// [`loudness::true_peak_above`]); a clip too quiet to pass it is not read.
    pub(super) fn true_peak_above(&self, floor: f32) -> Result<f32, WavError> {
        let threshold = loudness::true_peak_threshold(floor);
        let peaks = self.peaks()?;
        if peaks.iter().all(|&p| p <= threshold) {
            return Ok(floor);
        }
        let samples = self.samples()?;
        Ok(loudness::true_peak_above(&[(&samples, &peaks)], floor))
    }
}

/// What the mixer keeps per clip beside its samples, one entry per
/// [`loudness::POWER_BLOCK`] samples: K-weighted power and peak.
#[derive(Debug, Clone)]
struct Track {
    power: Vec<f32>,
    peaks: Vec<f32>,
}

/// Prepares one chunk for a chapter at `rate`. Chunks are independent, so
/// this can run as each one arrives, before the chapter is complete.
pub fn prepare(clip: AudioClip, rate: u32) -> PreparedClip {
    let mut clip = resample(clip, rate);
    clip.trim_silence(SILENCE_THRESHOLD, TRIM_KEEP_MS);
    fade(&mut clip.samples, clip::samples_for_ms(FADE_MS, rate));
    let track = Track {
        power: loudness::k_power(&clip.samples, rate),
        peaks: peak_limiter::block_peaks(&clip.samples),
    };
    PreparedClip {
        data: Data::Memory {
            samples: clip.samples,
            track,
        },
    }
}

/// `SegmentAudio` whose chunks went through [`prepare`].
#[derive(Debug, Clone)]
pub struct PreparedSegment {
    /// Narration or dialogue.
    pub kind: super::PauseKind,
    /// Paragraph number within the chapter (0 for a spoken title).
    pub paragraph: usize,
    /// Voice name; loudness is matched per voice.
    pub voice: String,
    /// The prepared chunks in reading order, each with the pause class
    /// that follows it.
    pub chunks: Vec<(Boundary, PreparedClip)>,
}

/// Amplitude below which a clip's edges count as silence.
const SILENCE_THRESHOLD: f32 = 0.003;
/// Quiet edge kept when trimming, so soft consonants are not cut.
const TRIM_KEEP_MS: u32 = 20;
/// Fade in/out on every clip so joints do not click.
const FADE_MS: u32 = 5;

/// Fades the first and last `n` samples in and out (at most half each).
fn fade(samples: &mut [f32], n: usize) {
    let n = n.min(samples.len() / 2);
    if n == 0 {
        return;
    }
    let len = samples.len();
    for i in 0..n {
        let g = i as f32 / n as f32;
        samples[i] *= g;
        samples[len - 1 - i] *= g;
    }
}
