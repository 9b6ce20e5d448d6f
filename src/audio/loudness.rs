//! Loudness (EBU R 128 / ITU-R BS.1770 via `ebur128`): measuring clips and
//! choosing the gain that brings a voice to the target without exceeding the
//! true-peak ceiling.

use ebur128::{EbuR128, Mode};

/// Integrated loudness and true peak of some audio.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Loudness {
    /// Integrated loudness in LUFS (`-inf` for silence).
    pub integrated_lufs: f64,
    /// True peak in dBTP (`-inf` for silence).
    pub true_peak_dbtp: f64,
}

/// Loudness below which audio counts as silence (BS.1770 absolute gate).
const ABSOLUTE_GATE_LUFS: f64 = -70.0;

/// Audio shorter than this cannot be gated reliably; it is measured looped.
const MIN_MEASURE_S: f64 = 3.0;

/// A running meter for one mono stream.
pub struct Meter {
    inner: Option<EbuR128>,
}

impl Meter {
    /// Integrated loudness and true peak.
    pub fn new(sample_rate: u32) -> Meter {
        Meter {
            inner: EbuR128::new(1, sample_rate, Mode::I | Mode::TRUE_PEAK).ok(),
        }
    }

    /// Integrated loudness only (true peak reads as silent), about twice as
    /// fast: the true-peak meter oversamples.
    pub fn integrated_only(sample_rate: u32) -> Meter {
        Meter {
            inner: EbuR128::new(1, sample_rate, Mode::I).ok(),
        }
    }

    pub fn add(&mut self, samples: &[f32]) {
        if let Some(m) = &mut self.inner {
            // Only fails for a wrong channel count, which cannot happen here.
            let _ = m.add_frames_f32(samples);
        }
    }

    pub fn finish(&self) -> Loudness {
        let Some(m) = &self.inner else {
            return Loudness::SILENT;
        };
        let integrated_lufs = m.loudness_global().unwrap_or(f64::NEG_INFINITY);
        let peak = m.true_peak(0).unwrap_or(0.0);
        let peak = if m.mode().contains(Mode::TRUE_PEAK) {
            peak
        } else {
            0.0
        };
        Loudness {
            integrated_lufs,
            true_peak_dbtp: to_db(peak),
        }
    }
}

impl Loudness {
    pub const SILENT: Loudness = Loudness {
        integrated_lufs: f64::NEG_INFINITY,
        true_peak_dbtp: f64::NEG_INFINITY,
    };

    /// Whether there was anything above the absolute gate.
    pub fn is_audible(&self) -> bool {
        self.integrated_lufs.is_finite() && self.integrated_lufs > ABSOLUTE_GATE_LUFS
    }

    /// Gain in dB that moves this audio to `target_lufs`, lowered where
    /// needed so the true peak stays at or below `ceiling_dbtp`. Silence
    /// gets 0 dB.
    pub fn gain_db(&self, target_lufs: f64, ceiling_dbtp: f64) -> f64 {
        if !self.is_audible() {
            return 0.0;
        }
        let wanted = target_lufs - self.integrated_lufs;
        if self.true_peak_dbtp.is_finite() {
            wanted.min(ceiling_dbtp - self.true_peak_dbtp)
        } else {
            wanted
        }
    }
}

/// Measures clips played one after another (all at `sample_rate`). Material
/// shorter than three seconds is measured looped, so that even one short
/// line of a minor character gets a loudness.
pub fn measure(clips: &[&[f32]], sample_rate: u32) -> Loudness {
    measure_with(clips, Meter::new(sample_rate))
}

/// [`measure`] without the true peak (it reads as `-inf`).
pub fn measure_integrated(clips: &[&[f32]], sample_rate: u32) -> Loudness {
    measure_with(clips, Meter::integrated_only(sample_rate))
}

fn measure_with(clips: &[&[f32]], mut meter: Meter) -> Loudness {
    let sample_rate = meter.inner.as_ref().map_or(0, EbuR128::rate);
    let total: usize = clips.iter().map(|c| c.len()).sum();
    if total == 0 || sample_rate == 0 {
        return Loudness::SILENT;
    }
    let needed = (MIN_MEASURE_S * f64::from(sample_rate)) as usize;
    let mut fed = 0;
    while fed < needed.max(1) {
        for clip in clips {
            meter.add(clip);
        }
        fed += total;
    }
    meter.finish()
}

pub fn to_db(amplitude: f64) -> f64 {
    if amplitude > 0.0 {
        20.0 * amplitude.log10()
    } else {
        f64::NEG_INFINITY
    }
}

pub fn from_db(db: f64) -> f32 {
    10f64.powf(db / 20.0) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(amplitude: f32, rate: u32, secs: f32) -> Vec<f32> {
        let step = std::f32::consts::TAU * 1000.0 / rate as f32;
        (0..(rate as f32 * secs) as usize)
            .map(|i| amplitude * (i as f32 * step).sin())
            .collect()
    }

    #[test]
    fn full_scale_1k_sine_reads_minus_3() {
        // BS.1770: a 0 dBFS 1 kHz sine in one channel reads −3.01 LUFS.
        let l = measure(&[&tone(1.0, 48000, 5.0)], 48000);
        assert!((l.integrated_lufs + 3.01).abs() < 0.1, "{l:?}");
        assert!(l.true_peak_dbtp.abs() < 0.1, "{l:?}");
    }

    #[test]
    fn gain_reaches_target_unless_the_peak_limits_it() {
        let quiet = measure(&[&tone(0.05, 24000, 4.0)], 24000);
        let gain = quiet.gain_db(-18.0, -1.0);
        assert!((quiet.integrated_lufs + gain + 18.0).abs() < 0.01);
        // A sine needs only 3 dB crest: a −3 LUFS target would exceed −1 dBTP.
        let limited = quiet.gain_db(-3.0, -1.0);
        assert!((quiet.true_peak_dbtp + limited + 1.0).abs() < 0.01);
        assert_eq!(Loudness::SILENT.gain_db(-18.0, -1.0), 0.0);
    }

    #[test]
    fn short_clips_are_measured_looped() {
        let short = tone(0.1, 24000, 0.3);
        let l = measure(&[&short], 24000);
        let long = measure(&[&tone(0.1, 24000, 5.0)], 24000);
        assert!(
            (l.integrated_lufs - long.integrated_lufs).abs() < 0.2,
            "{l:?} {long:?}"
        );
        assert!(!measure(&[&[0.0; 100]], 24000).is_audible());
    }
}
