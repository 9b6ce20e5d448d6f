//! Leveling: every voice brought to the loudness target, peaks limited
//! under the ceiling, and the chapter corrected as it will play, all from
//! the clips' power and peak tracks.

use rayon::prelude::*;

use super::layout::{Sink, lay_out};
use super::{MixConfig, PreparedClip, PreparedSegment};
use crate::audio::loudness;
use crate::audio::wav::WavError;

/// Voice names (sorted) and each segment's voice number.
pub(super) struct VoiceIndex {
    /// Voice names, sorted.
    pub(super) names: Vec<String>,
    /// Each segment's voice, as an index into `names`.
    pub(super) of_segment: Vec<usize>,
}

/// The voices of `segments`.
pub(super) fn voice_index(segments: &[PreparedSegment]) -> VoiceIndex {
    let mut names: Vec<String> = segments.iter().map(|s| s.voice.clone()).collect();
    names.sort();
    names.dedup();
    let of_segment = segments
        .iter()
        .map(|s| names.binary_search(&s.voice).unwrap_or(0))
        .collect();
    VoiceIndex { names, of_segment }
}

/// The clips of voice `v`, in order.
fn clips_of<'a>(
    segments: &'a [PreparedSegment],
    voices: &'a VoiceIndex,
    v: usize,
) -> impl Iterator<Item = &'a PreparedClip> + 'a {
    segments
        .iter()
        .zip(&voices.of_segment)
        .filter(move |&(_, &sv)| sv == v)
        .flat_map(|(s, _)| s.chunks.iter().map(|(_, c)| c))
}

/// A sink that sums the clips' K-weighted power into loudness blocks.
struct PowerSink {
    blocks: loudness::PowerBlocks,
}

impl Sink for PowerSink {
    fn silence(&mut self, samples: usize) -> Result<(), WavError> {
        self.blocks.silence(samples);
        Ok(())
    }

    fn append(&mut self, clip: &PreparedClip, gain: f32) -> Result<(), WavError> {
        self.blocks.add(
            &clip.power()?,
            clip.len(),
            f64::from(gain) * f64::from(gain),
        );
        Ok(())
    }

    fn written(&self) -> u64 {
        self.blocks.len()
    }
}

/// Integrated loudness of the chapter as it will play with `gains_db`, and
/// its length in samples.
pub(super) fn chapter_lufs(
    config: &MixConfig,
    segments: &[PreparedSegment],
    voices: &VoiceIndex,
    gains_db: &[f64],
) -> Result<(f64, u64), WavError> {
    let gains: Vec<f32> = voices
        .of_segment
        .iter()
        .map(|&v| loudness::from_db(gains_db[v]))
        .collect();
    let mut sink = PowerSink {
        blocks: loudness::PowerBlocks::new(config.sample_rate),
    };
    lay_out(config, segments, &gains, &mut sink)?;
    Ok((sink.blocks.integrated_lufs(), sink.blocks.len()))
}

/// Voices leveled one by one land a little under the target once laid out
/// with pauses (blocks that straddle speech and silence count too). Measures
/// the chapter as it will play and moves every voice by the difference,
/// limiting again where that pushes peaks over the ceiling. Returns the
/// correction in dB.
pub(super) fn correct_chapter(
    config: &MixConfig,
    segments: &mut [PreparedSegment],
    voices: &VoiceIndex,
    gains_db: &mut [f64],
) -> Result<f64, WavError> {
    let (measured, _) = chapter_lufs(config, segments, voices, gains_db)?;
    if !(measured.is_finite() && measured > -70.0) {
        return Ok(0.0);
    }
    // Small moves only: a large one means something else is wrong.
    let diff = (config.target_lufs - measured).clamp(-3.0, 3.0);
    if diff.abs() < 0.05 {
        return Ok(0.0);
    }
    gains_db.iter_mut().for_each(|g| *g += diff);
    if diff > 0.0 {
        for (v, &gain) in gains_db.iter().enumerate() {
            limit_voice(config, segments, voices, v, gain)?;
        }
    }
    Ok(diff)
}

/// Lowers any voice whose true peak (with its gain) passes the ceiling by
/// the excess. Returns the chapter's true peak in dBTP (`-inf` if silent).
pub(super) fn cap_true_peaks(
    config: &MixConfig,
    segments: &[PreparedSegment],
    voices: &VoiceIndex,
    gains_db: &mut [f64],
) -> Result<f64, WavError> {
    let mut chapter = f64::NEG_INFINITY;
    for (v, gain) in gains_db.iter_mut().enumerate() {
        let clips: Vec<&PreparedClip> = clips_of(segments, voices, v).collect();
        // Samples are unscaled: the ceiling moves by the voice's gain.
        let floor = loudness::from_db(config.true_peak_dbtp - *gain - 0.5);
        // Clips are independent: each one's peak on any core.
        let peak = clips
            .par_iter()
            .map(|clip| clip.true_peak_above(floor))
            .try_reduce(|| floor, |a, b| Ok(a.max(b)))?;
        let peak = loudness::to_db(f64::from(peak)) + *gain;
        if peak > config.true_peak_dbtp {
            *gain -= peak - config.true_peak_dbtp;
        }
        if clips.iter().any(|c| !c.is_empty()) {
            chapter = chapter.max(peak.min(config.true_peak_dbtp));
        }
    }
    Ok(chapter)
}

/// Sample ceiling under the true-peak ceiling: inter-sample peaks of speech
/// at 16–48 kHz rarely pass a sample peak by more than this.
const TRUE_PEAK_MARGIN_DB: f64 = 0.5;

/// Runs the limiter over voice `v`'s clips for a gain of `gain_db` (the
/// samples stay unscaled; the ceiling moves instead), keeping their power
/// in step.
fn limit_voice(
    config: &MixConfig,
    segments: &mut [PreparedSegment],
    voices: &VoiceIndex,
    v: usize,
    gain_db: f64,
) -> Result<(), WavError> {
    let ceiling = loudness::from_db(config.true_peak_dbtp - TRUE_PEAK_MARGIN_DB - gain_db);
    let mut clips: Vec<&mut PreparedClip> = segments
        .iter_mut()
        .zip(&voices.of_segment)
        .filter(|&(_, &sv)| sv == v)
        .flat_map(|(segment, _)| segment.chunks.iter_mut().map(|(_, clip)| clip))
        .collect();
    clips
        .par_iter_mut()
        .try_for_each(|clip| clip.limit(ceiling, config.sample_rate))
}

/// Integrated loudness of voice `v`'s clips played back to back.
fn voice_lufs(
    config: &MixConfig,
    segments: &[PreparedSegment],
    voices: &VoiceIndex,
    v: usize,
    gain_db: f64,
) -> Result<f64, WavError> {
    let clips: Vec<&PreparedClip> = clips_of(segments, voices, v).collect();
    let total = clips.iter().map(|c| c.len()).sum();
    let scale = 10f64.powf(gain_db / 10.0);
    loudness::power_lufs_by(total, config.sample_rate, |blocks| {
        for clip in &clips {
            blocks.add(&clip.power()?, clip.len(), scale);
        }
        Ok(())
    })
}

/// Brings voice `v`'s speech in this chapter to the loudness target with
/// its peaks at or under the ceiling: a gain, then the limiter where peaks
/// stick out, then more gain for what the limiter took away (measured on
/// the power track, no new pass over the audio). Returns the gain (dB).
pub(super) fn level_voice(
    config: &MixConfig,
    segments: &mut [PreparedSegment],
    voices: &VoiceIndex,
    v: usize,
) -> Result<f64, WavError> {
    let original = voice_lufs(config, segments, voices, v, 0.0)?;
    if !(original.is_finite() && original > -70.0) {
        return Ok(0.0);
    }
    let mut gain = config.target_lufs - original;
    // Bounded, so a pathological clip cannot be pumped forever.
    let mut extra = 0.0;
    for pass in 0..2 {
        limit_voice(config, segments, voices, v, gain)?;
        if pass == 1 {
            break;
        }
        let after = voice_lufs(config, segments, voices, v, gain)?;
        let more = (config.target_lufs - after).clamp(0.0, 6.0 - extra);
        if !after.is_finite() || more < 0.05 {
            break;
        }
        gain += more;
        extra += more;
    }
    tracing::debug!(voice = voices.names[v], gain, "voice leveled");
    Ok(gain)
}
