//! Sample-rate conversion to the chapter's output rate (rubato's FFT
//! resampler: fixed ratio, band-limited, fast).

use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, FixedSync, Resampler};

use super::AudioClip;

/// Frames per FFT chunk; the resampler rounds it to fit the ratio.
const CHUNK: usize = 1024;

/// Converts `clip` to `rate`. A clip already at `rate` (or empty) passes
/// through untouched. The output has `len × rate / clip.sample_rate` samples
/// (rounded), aligned with the input (the filter delay is removed).
pub fn resample(clip: AudioClip, rate: u32) -> AudioClip {
    if clip.sample_rate == rate || clip.samples.is_empty() || clip.sample_rate == 0 || rate == 0 {
        return AudioClip::new(clip.samples, rate);
    }
    let input_len = clip.samples.len();
    let converted = Fft::<f32>::new(
        clip.sample_rate as usize,
        rate as usize,
        CHUNK,
        1,
        FixedSync::Both,
    )
    .ok()
    .and_then(|mut resampler| {
        let input = InterleavedSlice::new(&clip.samples, 1, input_len).ok()?;
        let out = resampler.process_all(&input, input_len, None).ok()?;
        Some(out.take_data())
    });
    match converted {
        Some(samples) => AudioClip::new(samples, rate),
        // Rubato rejects only degenerate setups (checked above); keep the
        // audio rather than lose it.
        None => linear(clip, rate),
    }
}

/// Linear interpolation, the fallback when no resampler can be built.
fn linear(clip: AudioClip, rate: u32) -> AudioClip {
    let ratio = f64::from(clip.sample_rate) / f64::from(rate);
    let out_len = (clip.samples.len() as f64 / ratio).round() as usize;
    let last = clip.samples.len() - 1;
    let samples = (0..out_len)
        .map(|i| {
            let pos = i as f64 * ratio;
            let idx = (pos.floor() as usize).min(last);
            let frac = (pos - idx as f64) as f32;
            let a = clip.samples[idx];
            let b = clip.samples[(idx + 1).min(last)];
            a + (b - a) * frac
        })
        .collect();
    AudioClip::new(samples, rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sine(freq: f32, rate: u32, len: usize) -> AudioClip {
        let step = std::f32::consts::TAU * freq / rate as f32;
        AudioClip::new(
            (0..len).map(|i| 0.5 * (i as f32 * step).sin()).collect(),
            rate,
        )
    }

    #[test]
    fn keeps_duration_and_level_when_changing_rate() {
        for (from, to) in [
            (22050, 24000),
            (16000, 24000),
            (48000, 24000),
            (44100, 22050),
        ] {
            let out = resample(sine(440.0, from, from as usize), to);
            assert_eq!(out.sample_rate, to);
            assert!(
                (out.duration_s() - 1.0).abs() < 2e-3,
                "{from}→{to}: {}",
                out.duration_s()
            );
            // Away from the edges a 440 Hz tone keeps its amplitude.
            let n = out.samples.len();
            let mid = AudioClip::new(out.samples[n / 4..3 * n / 4].to_vec(), to);
            assert!(
                (mid.peak() - 0.5).abs() < 0.01,
                "{from}→{to}: {}",
                mid.peak()
            );
        }
    }

    #[test]
    fn keeps_the_signal_in_place() {
        // A tone starting at 0.5 s still starts there after conversion.
        let mut clip = sine(300.0, 16000, 16000);
        clip.samples[..8000].fill(0.0);
        let out = resample(clip, 24000);
        let first = out.samples.iter().position(|s| s.abs() > 0.1).unwrap();
        assert!((first as i64 - 12000).abs() < 48, "{first}");
    }

    #[test]
    fn same_rate_and_empty_pass_through() {
        let clip = sine(440.0, 24000, 100);
        assert_eq!(resample(clip.clone(), 24000), clip);
        assert!(
            resample(AudioClip::new(Vec::new(), 16000), 24000)
                .samples
                .is_empty()
        );
    }
}
