//! Stitching synthesized chunks into one chapter with pauses, recording where
//! each piece lands.

use serde::Deserialize;

use super::{AudioClip, resample::resample};
use crate::text::chunk::Boundary;

/// `[mix]`: output rate and pauses.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MixConfig {
    pub sample_rate: u32,
    pub pauses: Pauses,
}

impl Default for MixConfig {
    fn default() -> MixConfig {
        MixConfig {
            sample_rate: 22050,
            pauses: Pauses::default(),
        }
    }
}

/// Pause lengths in milliseconds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Pauses {
    /// After ，、；： when a long sentence had to be split there.
    pub clause_ms: u32,
    /// After 。！？ inside a segment.
    pub sentence_ms: u32,
    /// After …… and ——.
    pub hesitation_ms: u32,
    /// Between segments of one paragraph with the same kind.
    pub segment_ms: u32,
    /// Between narration and dialogue (either way) within a paragraph.
    pub turn_ms: u32,
    /// Between paragraphs.
    pub paragraph_ms: u32,
    /// Silence at the start and end of every chapter file.
    pub chapter_start_ms: u32,
    pub chapter_end_ms: u32,
}

impl Default for Pauses {
    fn default() -> Pauses {
        Pauses {
            clause_ms: 150,
            sentence_ms: 300,
            hesitation_ms: 450,
            segment_ms: 200,
            turn_ms: 350,
            paragraph_ms: 600,
            chapter_start_ms: 500,
            chapter_end_ms: 1000,
        }
    }
}

impl Pauses {
    pub fn after_chunk(&self, boundary: Boundary) -> u32 {
        match boundary {
            Boundary::Sentence => self.sentence_ms,
            Boundary::Clause => self.clause_ms,
            Boundary::Hesitation => self.hesitation_ms,
            Boundary::None => 0,
        }
    }
}

/// A chapter being assembled at a fixed output rate.
#[derive(Debug)]
pub struct ChapterMix {
    sample_rate: u32,
    samples: Vec<f32>,
}

/// Amplitude below which a clip's edges count as silence.
const SILENCE_THRESHOLD: f32 = 0.003;

impl ChapterMix {
    pub fn new(sample_rate: u32) -> ChapterMix {
        ChapterMix {
            sample_rate,
            samples: Vec::new(),
        }
    }

    /// Current length in seconds.
    pub fn position_s(&self) -> f64 {
        self.samples.len() as f64 / f64::from(self.sample_rate)
    }

    pub fn pause(&mut self, ms: u32) {
        let n = super::clip::samples_for_ms(ms, self.sample_rate);
        self.samples.resize(self.samples.len() + n, 0.0);
    }

    /// Appends a synthesized chunk: converted to the output rate, with the
    /// backend's own leading/trailing silence trimmed (the mixer's pauses
    /// replace it) and 5 ms fades so joints do not click.
    pub fn append(&mut self, clip: AudioClip) {
        let mut clip = resample(clip, self.sample_rate);
        clip.trim_silence(SILENCE_THRESHOLD, 20);
        fade(
            &mut clip.samples,
            super::clip::samples_for_ms(5, self.sample_rate),
        );
        self.samples.extend_from_slice(&clip.samples);
    }

    pub fn finish(self) -> AudioClip {
        AudioClip::new(self.samples, self.sample_rate)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_and_clips_add_up() {
        let mut mix = ChapterMix::new(1000);
        mix.pause(500);
        let mut speech = vec![0.0; 100];
        speech[10..90].fill(0.5);
        mix.append(AudioClip::new(speech, 1000));
        assert!(
            (mix.position_s() - (0.5 + 0.08 + 0.02)).abs() < 1e-9,
            "{}",
            mix.position_s()
        );
        mix.pause(Pauses::default().after_chunk(Boundary::Sentence));
        let clip = mix.finish();
        assert_eq!(clip.samples.len(), 500 + 100 + 300);
        assert_eq!(clip.samples[0], 0.0);
        assert!(clip.peak() <= 0.5);
    }

    #[test]
    fn other_rates_are_converted() {
        let mut mix = ChapterMix::new(24000);
        mix.append(AudioClip::new(vec![0.5; 16000], 16000));
        assert!((mix.position_s() - 1.0).abs() < 0.01);
    }
}
