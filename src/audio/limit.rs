//! A look-ahead peak limiter: lowers the gain smoothly around peaks that
//! would pass a ceiling, so a voice can reach its loudness target without
//! clipping. Speech synthesizers (espeak-ng especially) have peaks about
//! 20 dB over their loudness, more than a −18 LUFS / −1 dBTP target allows.

use std::collections::VecDeque;

/// Look-ahead (and attack) time.
const LOOKAHEAD_MS: u32 = 5;
/// Time constant of the gain's recovery after a peak.
const RELEASE_MS: f32 = 80.0;

/// Limits `samples` in place so that no sample exceeds `ceiling` (linear).
/// The gain reaches its minimum exactly at each peak after a ramp over the
/// look-ahead window and recovers exponentially afterwards.
pub fn limit(samples: &mut [f32], ceiling: f32, sample_rate: u32) {
    let n = samples.len();
    if n == 0 || ceiling <= 0.0 || samples.iter().all(|s| s.abs() <= ceiling) {
        return;
    }
    let la = (super::clip::samples_for_ms(LOOKAHEAD_MS, sample_rate)).max(1);
    let required = |s: f32| {
        let a = s.abs();
        if a > ceiling { ceiling / a } else { 1.0 }
    };
    // m[i] = min(required[i ..= i + la]) by a monotonic deque.
    let mut m = vec![1.0f32; n];
    let mut window: VecDeque<(usize, f32)> = VecDeque::new();
    for j in (0..n).rev() {
        let r = required(samples[j]);
        while window.back().is_some_and(|&(_, v)| v >= r) {
            window.pop_back();
        }
        window.push_back((j, r));
        while window.front().is_some_and(|&(k, _)| k > j + la) {
            window.pop_front();
        }
        m[j] = window.front().map_or(1.0, |&(_, v)| v);
    }
    // Moving average of m over [i - la + 1, i] (the attack ramp) — every
    // term covers sample i, so the average never exceeds required[i].
    let release = (-1.0 / (RELEASE_MS / 1000.0 * sample_rate as f32)).exp();
    let mut sum = 0.0f64;
    let mut gain = 1.0f32;
    for i in 0..n {
        sum += f64::from(m[i]);
        if i >= la {
            sum -= f64::from(m[i - la]);
        }
        // Before the window fills, missing terms count as 1.0.
        let terms = (i + 1).min(la);
        let smooth = ((sum + (la - terms) as f64) / la as f64) as f32;
        let recovering = 1.0 - (1.0 - gain) * release;
        gain = smooth.min(recovering).min(required(samples[i]));
        samples[i] *= gain;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peaks_stay_under_the_ceiling_and_quiet_parts_are_untouched() {
        let rate = 24000;
        let mut samples: Vec<f32> = (0..rate).map(|i| 0.2 * (i as f32 * 0.05).sin()).collect();
        // A loud burst in the middle.
        for s in &mut samples[12000..12100] {
            *s *= 5.0;
        }
        let before = samples.clone();
        limit(&mut samples, 0.5, rate as u32);
        assert!(samples.iter().all(|s| s.abs() <= 0.5 + 1e-6));
        // Far from the burst nothing changed.
        assert_eq!(samples[..11000], before[..11000]);
        assert!((samples[23000] - before[23000]).abs() < 1e-3);
        // Near it the gain ramps rather than jumping.
        let g = |i: usize| samples[i] / before[i];
        assert!(g(11950) > g(11990) || before[11990].abs() < 1e-3);
    }

    #[test]
    fn already_quiet_audio_passes_through() {
        let mut samples = vec![0.1, -0.2, 0.3];
        limit(&mut samples, 0.5, 24000);
        assert_eq!(samples, [0.1, -0.2, 0.3]);
    }
}
