//! A look-ahead peak limiter: lowers the gain smoothly around peaks that
//! would pass a ceiling, so a voice can reach its loudness target without
//! clipping. Speech synthesizers (espeak-ng especially) have peaks about
//! 20 dB over their loudness, more than a −18 LUFS / −1 dBTP target allows.

use super::loudness;

/// Look-ahead (attack) time: the gain starts falling this long before a peak.
const ATTACK_MS: f32 = 5.0;
/// Time constant of the gain's recovery after a peak.
const RELEASE_MS: f32 = 80.0;
/// The gain is computed once per block of this many samples and
/// interpolated linearly inside a block.
/// The same blocks as a power track's, so that a block's gain scales
/// exactly one entry of it.
const BLOCK: usize = loudness::POWER_BLOCK;

/// Gain shortfall under which the gain counts as 1 (0.009 dB, inaudible):
/// blocks whose both ends are at 1 are left alone.
const SETTLED: f32 = 1e-3;

/// Limits `samples` in place so that no sample exceeds `ceiling` (linear).
/// The gain falls smoothly over the look-ahead before each peak and
/// recovers exponentially afterwards.
pub fn limit(samples: &mut [f32], ceiling: f32, sample_rate: u32) {
    let mut peaks = block_peaks(samples);
    let Some(gains) = block_gains(&peaks, ceiling, sample_rate) else {
        return;
    };
    apply(samples, &mut peaks, &gains, |_, _, _| ());
}

/// The largest absolute sample of every block of `BLOCK` samples.
pub fn block_peaks(samples: &[f32]) -> Vec<f32> {
    samples.chunks(BLOCK).map(peak).collect()
}

fn peak(block: &[f32]) -> f32 {
    block
        .iter()
        .fold(0.0f32, |m, &x| if x.abs() > m { x.abs() } else { m })
}

/// [`limit`] that also scales a power track ([`loudness::k_power`], one
/// entry per [`loudness::POWER_BLOCK`] samples) by the mean square of the
/// gain over each entry, keeping it in step with the audio. `peaks` are the
/// samples' [`block_peaks`] (kept up to date here), so audio that needs no
/// limiting is not read at all.
pub fn limit_tracked(
    samples: &mut [f32],
    power: &mut [f32],
    peaks: &mut [f32],
    ceiling: f32,
    sample_rate: u32,
) {
    let Some(gains) = block_gains(peaks, ceiling, sample_rate) else {
        return;
    };
    apply(samples, peaks, &gains, |b, g0, g1| {
        if let Some(p) = power.get_mut(b) {
            // Mean of g² over a linear ramp from g0 to g1.
            *p *= (g0 * g0 + g0 * g1 + g1 * g1) / 3.0;
        }
    });
}

/// The gain at every block boundary (sample `k * BLOCK`, and the end), for
/// blocks with these `peaks`, or `None` when no sample passes the ceiling.
///
/// Each boundary's gain is at most the gain that the loudest sample of
/// either neighbouring block allows, so the gain interpolated between two
/// boundaries keeps every sample of the block between them under the
/// ceiling. A backward pass ramps the gain down ahead of each peak (the
/// look-ahead), a forward pass lets it recover exponentially after.
fn block_gains(peaks: &[f32], ceiling: f32, sample_rate: u32) -> Option<Vec<f32>> {
    if ceiling <= 0.0 || peaks.iter().all(|&p| p <= ceiling) {
        return None;
    }
    // What each block allows; a hair under, so rounding cannot pass the ceiling.
    let allowed: Vec<f32> = peaks
        .iter()
        .map(|&peak| {
            if peak > ceiling {
                ceiling / peak * (1.0 - 1e-6)
            } else {
                1.0
            }
        })
        .collect();
    let blocks = allowed.len();
    let per_block = |ms: f32| (-(BLOCK as f32) / (ms / 1000.0 * sample_rate as f32)).exp();
    let (attack, release) = (per_block(ATTACK_MS), per_block(RELEASE_MS));
    let mut gains: Vec<f32> = (0..=blocks)
        .map(|k| {
            let before = if k > 0 { allowed[k - 1] } else { 1.0 };
            before.min(allowed.get(k).copied().unwrap_or(1.0))
        })
        .collect();
    // The attack ramps down ahead of each peak; the release recovers after
    // it (the same recurrence, run over the reversed gains).
    ramp_backward(&mut gains, attack);
    gains.reverse();
    ramp_backward(&mut gains, release);
    gains.reverse();
    Some(gains)
}

/// The gain a block may have given the next block's gain `next`: it rises by
/// at most `factor` of its shortfall per block. Only the ramps snap to 1
/// (within [`SETTLED`]): what a block allows is never exceeded.
fn ramp(next: f32, factor: f32) -> f32 {
    let g = 1.0 - (1.0 - next) * factor;
    if 1.0 - g < SETTLED { 1.0 } else { g }
}

/// `g[k] = min(g[k], ramp(g[k + 1]))` for `k` from the end down to 0.
///
/// Each step needs the one before, and a chain of dependent multiplications
/// runs at a fraction of the core's speed; so the gains are cut into
/// [`LANES`] pieces run side by side, each starting from the gain after it
/// as it was before this pass. Then each piece's end is corrected with the
/// final gain after it, going down until a gain no longer changes. The
/// ramp is monotone and the pass only lowers gains, so this gives exactly
/// the serial result (unit-tested against it).
fn ramp_backward(g: &mut [f32], factor: f32) {
    let steps = g.len().saturating_sub(1);
    let len = steps / LANES;
    if len < 64 {
        for k in (0..steps).rev() {
            g[k] = g[k].min(ramp(g[k + 1], factor));
        }
        return;
    }
    // The last piece takes the remainder, done first and in full.
    for k in (LANES * len..steps).rev() {
        g[k] = g[k].min(ramp(g[k + 1], factor));
    }
    for j in (0..len).rev() {
        for lane in 0..LANES {
            let k = lane * len + j;
            g[k] = g[k].min(ramp(g[k + 1], factor));
        }
    }
    for lane in (0..LANES - 1).rev() {
        for k in (lane * len..(lane + 1) * len).rev() {
            let lowered = g[k].min(ramp(g[k + 1], factor));
            if lowered == g[k] {
                break;
            }
            g[k] = lowered;
        }
    }
}

/// Independent pieces of a gain ramp computed side by side.
const LANES: usize = 4;

/// Scales each block by its boundary gains, interpolated, and updates its
/// peak; `changed(b, g0, g1)` is told every block whose gain is under 1.
fn apply(
    samples: &mut [f32],
    peaks: &mut [f32],
    gains: &[f32],
    mut changed: impl FnMut(usize, f32, f32),
) {
    for (b, block) in samples.chunks_mut(BLOCK).enumerate() {
        let (g0, g1) = (gains[b], gains[b + 1]);
        if g0 >= 1.0 && g1 >= 1.0 {
            continue;
        }
        let step = (g1 - g0) / BLOCK as f32;
        for (j, s) in block.iter_mut().enumerate() {
            *s *= g0 + step * j as f32;
        }
        peaks[b] = peak(block);
        changed(b, g0, g1);
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

    /// The one-step-at-a-time recurrence that `ramp_backward` must match.
    fn ramp_backward_serial(g: &mut [f32], factor: f32) {
        for k in (0..g.len().saturating_sub(1)).rev() {
            g[k] = g[k].min(ramp(g[k + 1], factor));
        }
    }

    #[test]
    fn ramps_in_pieces_equal_the_serial_ramp_exactly() {
        let mut seed = 11u32;
        let mut next = move || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32
        };
        for n in [0usize, 1, 2, 5, 255, 256, 257, 258, 1000, 4099, 100_003] {
            for factor in [0.5f32, 0.95, 0.998] {
                // Mostly 1 with dips of varied depth, some at piece edges.
                let mut g: Vec<f32> = (0..n)
                    .map(|_| if next() < 0.03 { next() } else { 1.0 })
                    .collect();
                if n > 300 {
                    g[n / 4] = 0.01;
                    g[n / 4 - 1] = 0.2;
                }
                let mut expected = g.clone();
                ramp_backward_serial(&mut expected, factor);
                ramp_backward(&mut g, factor);
                assert_eq!(g, expected, "n {n}, factor {factor}");
            }
        }
    }

    #[test]
    fn already_quiet_audio_passes_through() {
        let mut samples = vec![0.1, -0.2, 0.3];
        limit(&mut samples, 0.5, 24000);
        assert_eq!(samples, [0.1, -0.2, 0.3]);
    }

    #[test]
    fn tracked_power_follows_the_gain() {
        let rate = 24000u32;
        let mut samples: Vec<f32> = (0..rate).map(|i| 0.9 * (i as f32 * 0.07).sin()).collect();
        let before = loudness::k_power(&samples, rate);
        let mut power = before.clone();
        let mut peaks = block_peaks(&samples);
        limit_tracked(&mut samples, &mut power, &mut peaks, 0.3, rate);
        assert!(samples.iter().all(|s| s.abs() <= 0.3));
        // The block peaks are those of the limited audio.
        assert_eq!(peaks, block_peaks(&samples));
        // The tracked power matches the power of the limited audio.
        let after = loudness::k_power(&samples, rate);
        let total = |p: &[f32]| p.iter().map(|&x| f64::from(x)).sum::<f64>();
        let ratio = total(&power) / total(&after);
        assert!((ratio - 1.0).abs() < 0.02, "{ratio}");
        assert!(total(&power) < 0.2 * total(&before));
    }
}
