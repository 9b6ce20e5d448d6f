//! Sample-rate conversion to the chapter's output rate.

use super::AudioClip;

/// Converts `clip` to `rate` by linear interpolation. Speech from one backend
/// normally arrives at the output rate already; this path only runs when
/// backends with different rates are mixed.
pub fn resample(clip: AudioClip, rate: u32) -> AudioClip {
    if clip.sample_rate == rate || clip.samples.is_empty() || clip.sample_rate == 0 {
        return AudioClip::new(clip.samples, rate);
    }
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

    #[test]
    fn keeps_duration_when_changing_rate() {
        let clip = AudioClip::new((0..22050).map(|i| (i as f32 * 0.01).sin()).collect(), 22050);
        let out = resample(clip, 24000);
        assert_eq!(out.sample_rate, 24000);
        assert!((out.duration_s() - 1.0).abs() < 1e-3);
    }
}
