//! A look-ahead peak limiter: lowers the gain smoothly around peaks that
//! would pass a ceiling, so a voice can reach its loudness target without
//! clipping. Speech synthesizers (espeak-ng especially) have peaks about
//! 20 dB over their loudness, more than a −18 LUFS / −1 dBTP target allows.

use std::collections::VecDeque;

/// Look-ahead (and attack) time.
const LOOKAHEAD_MS: u32 = 5;
/// Time constant of the gain's recovery after a peak.
const RELEASE_MS: f32 = 80.0;

/// Gain shortfall under which the release counts as settled: the gain
/// snaps to exactly 1 (a step of 0.01 dB, inaudible) and the limiter skips
/// ahead to the next over-ceiling sample.
const SETTLED: f32 = 1e-3;

/// Limits `samples` in place so that no sample exceeds `ceiling` (linear).
/// The gain reaches its minimum exactly at each peak after a ramp over the
/// look-ahead window and recovers exponentially afterwards.
pub fn limit(samples: &mut [f32], ceiling: f32, sample_rate: u32) {
    limit_with(samples, ceiling, sample_rate, |_, _| ());
}

/// [`limit`] that also scales `power[i]` by the square of the gain given to
/// sample `i`, keeping a K-weighted power track in step with the audio.
pub fn limit_tracked(samples: &mut [f32], power: &mut [f32], ceiling: f32, sample_rate: u32) {
    limit_with(samples, ceiling, sample_rate, |i, g| {
        if let Some(p) = power.get_mut(i) {
            *p *= g * g;
        }
    });
}

/// The limiter, visiting only stretches near over-ceiling samples: the gain
/// is exactly 1 wherever no such sample lies within the look-ahead and the
/// release has settled. `changed(i, gain)` is told every gain under 1.
fn limit_with(
    samples: &mut [f32],
    ceiling: f32,
    sample_rate: u32,
    mut changed: impl FnMut(usize, f32),
) {
    let n = samples.len();
    if n == 0 || ceiling <= 0.0 {
        return;
    }
    let overs: Vec<usize> = samples
        .iter()
        .enumerate()
        .filter(|(_, s)| s.abs() > ceiling)
        .map(|(i, _)| i)
        .collect();
    if overs.is_empty() {
        return;
    }
    let la = (super::clip::samples_for_ms(LOOKAHEAD_MS, sample_rate)).max(1);
    let required = |s: f32| {
        let a = s.abs();
        if a > ceiling { ceiling / a } else { 1.0 }
    };
    let release = (-1.0 / (RELEASE_MS / 1000.0 * sample_rate as f32)).exp();
    // Over-ceiling samples within [i, i + la] as a monotonic deque of
    // (index, required gain): its front is min(required[i ..= i + la]).
    let mut window: VecDeque<(usize, f32)> = VecDeque::new();
    // The last `la` window minima (attack ramp), 1.0 when idle.
    let mut ring = vec![1.0f32; la];
    let mut sum = la as f64;
    let mut gain = 1.0f32;
    let mut next_over = 0usize;
    // Index after which the ring holds only 1.0 again.
    let mut ring_clear = 0usize;
    let mut i = 0usize;
    let mut slot = 0usize;
    while i < n {
        let idle = window.is_empty() && i >= ring_clear && 1.0 - gain < SETTLED;
        if idle {
            gain = 1.0;
            sum = la as f64;
            let Some(&p) = overs.get(next_over) else {
                break;
            };
            i = i.max(p.saturating_sub(la));
        }
        while let Some(&j) = overs.get(next_over) {
            if j > i + la {
                break;
            }
            let r = required(samples[j]);
            while window.back().is_some_and(|&(_, v)| v >= r) {
                window.pop_back();
            }
            window.push_back((j, r));
            next_over += 1;
        }
        while window.front().is_some_and(|&(k, _)| k < i) {
            window.pop_front();
        }
        let m = window.front().map_or(1.0, |&(_, v)| v);
        if m < 1.0 {
            ring_clear = i + la;
        }
        sum += f64::from(m) - f64::from(ring[slot]);
        ring[slot] = m;
        slot = if slot + 1 == la { 0 } else { slot + 1 };
        // Every term of the moving average covers sample i, so it never
        // exceeds required[i].
        let smooth = (sum / la as f64) as f32;
        let recovering = 1.0 - (1.0 - gain) * release;
        gain = smooth.min(recovering).min(required(samples[i]));
        if gain < 1.0 {
            samples[i] *= gain;
            changed(i, gain);
        }
        i += 1;
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
