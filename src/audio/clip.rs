//! `AudioClip`: mono samples plus their rate, the value passed between stages.

/// Mono audio as `f32` samples in [-1, 1].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AudioClip {
    pub samples: Vec<f32>,
    pub sample_rate: u32,
}

impl AudioClip {
    pub fn new(samples: Vec<f32>, sample_rate: u32) -> AudioClip {
        AudioClip {
            samples,
            sample_rate,
        }
    }

    /// Converts 16-bit PCM.
    pub fn from_i16(samples: &[i16], sample_rate: u32) -> AudioClip {
        AudioClip::new(
            samples.iter().map(|&s| f32::from(s) / 32768.0).collect(),
            sample_rate,
        )
    }

    /// Averages interleaved frames of `channels` channels down to mono.
    pub fn from_interleaved(samples: &[f32], channels: u16, sample_rate: u32) -> AudioClip {
        let channels = usize::from(channels.max(1));
        if channels == 1 {
            return AudioClip::new(samples.to_vec(), sample_rate);
        }
        let scale = 1.0 / channels as f32;
        AudioClip::new(
            samples
                .chunks_exact(channels)
                .map(|frame| frame.iter().sum::<f32>() * scale)
                .collect(),
            sample_rate,
        )
    }

    /// `ms` milliseconds of silence.
    pub fn silence(ms: u32, sample_rate: u32) -> AudioClip {
        AudioClip::new(vec![0.0; samples_for_ms(ms, sample_rate)], sample_rate)
    }

    pub fn duration_s(&self) -> f64 {
        if self.sample_rate == 0 {
            return 0.0;
        }
        self.samples.len() as f64 / f64::from(self.sample_rate)
    }

    /// Removes leading and trailing samples quieter than `threshold`, keeping
    /// `keep_ms` of the quiet edge on each side so consonants are not clipped.
    pub fn trim_silence(&mut self, threshold: f32, keep_ms: u32) {
        let keep = samples_for_ms(keep_ms, self.sample_rate);
        let Some(first) = self.samples.iter().position(|s| s.abs() > threshold) else {
            self.samples.clear();
            return;
        };
        let last = self
            .samples
            .iter()
            .rposition(|s| s.abs() > threshold)
            .unwrap_or(first);
        let end = (last + 1 + keep).min(self.samples.len());
        let start = first.saturating_sub(keep);
        self.samples.truncate(end);
        self.samples.drain(..start);
    }

    /// Peak absolute sample value.
    pub fn peak(&self) -> f32 {
        self.samples.iter().fold(0.0, |m, s| m.max(s.abs()))
    }
}

pub fn samples_for_ms(ms: u32, sample_rate: u32) -> usize {
    (u64::from(ms) * u64::from(sample_rate) / 1000) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_quiet_edges_but_keeps_a_margin() {
        let mut samples = vec![0.0; 1000];
        samples[400..600].fill(0.5);
        let mut clip = AudioClip::new(samples, 1000);
        clip.trim_silence(0.01, 10);
        assert_eq!(clip.samples.len(), 220);
        assert_eq!(clip.peak(), 0.5);
        let mut quiet = AudioClip::silence(100, 1000);
        quiet.trim_silence(0.01, 10);
        assert!(quiet.samples.is_empty());
    }

    #[test]
    fn stereo_is_averaged_to_mono() {
        let clip = AudioClip::from_interleaved(&[0.5, 0.1, -0.2, -0.4, 1.0], 2, 48000);
        assert_eq!(clip.samples, [0.3, -0.3]);
        assert_eq!(clip.sample_rate, 48000);
    }
}
