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

/// K-weighting (BS.1770): a high shelf and a high-pass, both derived from
/// their analog prototypes for any sample rate.
struct Biquad {
    b: [f64; 3],
    a: [f64; 2],
}

fn k_filters(rate: u32) -> [Biquad; 2] {
    let fs = f64::from(rate.max(1));
    let (f0, gain_db, q) = (
        1_681.974_450_955_533,
        3.999_843_853_973_347,
        0.707_175_236_955_419_6,
    );
    let k = (std::f64::consts::PI * f0 / fs).tan();
    let vh = 10f64.powf(gain_db / 20.0);
    let vb = vh.powf(0.499_666_774_154_541_6);
    let a0 = 1.0 + k / q + k * k;
    let shelf = Biquad {
        b: [
            (vh + vb * k / q + k * k) / a0,
            2.0 * (k * k - vh) / a0,
            (vh - vb * k / q + k * k) / a0,
        ],
        a: [2.0 * (k * k - 1.0) / a0, (1.0 - k / q + k * k) / a0],
    };
    let (f0, q) = (38.135_470_876_024_44, 0.500_327_037_323_877_3);
    let k = (std::f64::consts::PI * f0 / fs).tan();
    let a0 = 1.0 + k / q + k * k;
    let high_pass = Biquad {
        b: [1.0, -2.0, 1.0],
        a: [2.0 * (k * k - 1.0) / a0, (1.0 - k / q + k * k) / a0],
    };
    [shelf, high_pass]
}

/// Samples per entry of a power track ([`k_power`]).
pub const POWER_BLOCK: usize = 32;

/// The K-weighted power of one clip (filters starting at rest), summed per
/// [`POWER_BLOCK`] samples: what BS.1770 averages, at a resolution far
/// finer than its 100 ms steps. Gains applied to the clip later scale an
/// entry by their square (by their mean square over the block when the
/// gain varies, as a limiter's does).
pub fn k_power(samples: &[f32], rate: u32) -> Vec<f32> {
    let filters = k_filters(rate);
    let blocks = samples.len().div_ceil(POWER_BLOCK);
    // The filters forget their past within milliseconds (the slowest pole,
    // of the 38 Hz high-pass, has a 4 ms time constant), so a clip can be
    // filtered as LANES interleaved pieces, each started 200 ms early: the
    // four independent recurrences run side by side instead of one after
    // another. The first piece starts at rest, like the whole clip.
    let warm = (rate as usize / 5).div_ceil(POWER_BLOCK) * POWER_BLOCK;
    let per_lane = blocks.div_ceil(LANES);
    if per_lane * POWER_BLOCK < 4 * warm {
        return k_power_serial(samples, &filters);
    }
    let [s, h] = filters;
    let mut out = vec![0.0f32; blocks];
    let starts: [isize; LANES] =
        std::array::from_fn(|l| (l * per_lane * POWER_BLOCK) as isize - warm as isize);
    let mut state = [[0.0f64; 4]; LANES];
    let mut acc = [0.0f64; LANES];
    for t in 0..warm + per_lane * POWER_BLOCK {
        for l in 0..LANES {
            let i = starts[l] + t as isize;
            // Before the clip (first lane) and after it (last lane): silence.
            let x = usize::try_from(i)
                .ok()
                .and_then(|i| samples.get(i))
                .map_or(0.0, |&x| f64::from(x));
            let [s1, s2, h1, h2] = &mut state[l];
            let y = s.b[0] * x + *s1;
            *s1 = s.b[1] * x - s.a[0] * y + *s2;
            *s2 = s.b[2] * x - s.a[1] * y;
            let z = h.b[0] * y + *h1;
            *h1 = h.b[1] * y - h.a[0] * z + *h2;
            *h2 = h.b[2] * y - h.a[1] * z;
            acc[l] += z * z;
        }
        if t < warm {
            acc = [0.0; LANES];
        } else if (t - warm) % POWER_BLOCK == POWER_BLOCK - 1 {
            let block = (t - warm) / POWER_BLOCK;
            for (l, sum) in acc.iter_mut().enumerate() {
                if let Some(o) = out.get_mut(l * per_lane + block) {
                    *o = *sum as f32;
                }
                *sum = 0.0;
            }
        }
    }
    out
}

/// Pieces [`k_power`] filters side by side.
const LANES: usize = 4;

/// [`k_power`] in one pass (short clips).
fn k_power_serial(samples: &[f32], [s, h]: &[Biquad; 2]) -> Vec<f32> {
    let (mut s1, mut s2, mut h1, mut h2) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    samples
        .chunks(POWER_BLOCK)
        .map(|block| {
            let mut sum = 0.0f64;
            for &x in block {
                // Transposed direct form II, both stages.
                let x = f64::from(x);
                let y = s.b[0] * x + s1;
                s1 = s.b[1] * x - s.a[0] * y + s2;
                s2 = s.b[2] * x - s.a[1] * y;
                let z = h.b[0] * y + h1;
                h1 = h.b[1] * y - h.a[0] * z + h2;
                h2 = h.b[2] * y - h.a[1] * z;
                sum += z * z;
            }
            sum as f32
        })
        .collect()
}

/// A stream of K-weighted power summed per 100 ms, from which gated
/// integrated loudness (400 ms blocks every 100 ms) follows without
/// filtering the audio again.
#[derive(Debug, Clone)]
pub struct PowerBlocks {
    sub_len: usize,
    filled: usize,
    acc: f64,
    sums: Vec<f64>,
    total: u64,
}

impl PowerBlocks {
    pub fn new(rate: u32) -> PowerBlocks {
        PowerBlocks {
            sub_len: ((rate as usize + 5) / 10).max(1),
            filled: 0,
            acc: 0.0,
            sums: Vec::new(),
            total: 0,
        }
    }

    /// Appends a power track ([`k_power`]) of `len` samples, scaled (the
    /// square of a gain). An entry that straddles a 100 ms step is shared
    /// between the two in proportion.
    pub fn add(&mut self, power: &[f32], len: usize, scale: f64) {
        let mut left = len;
        for &sum in power {
            let mut n = POWER_BLOCK.min(left);
            if n == 0 {
                break;
            }
            left -= n;
            self.total += n as u64;
            let per_sample = f64::from(sum) * scale / n as f64;
            while n > 0 {
                let take = (self.sub_len - self.filled).min(n);
                self.acc += per_sample * take as f64;
                self.filled += take;
                n -= take;
                self.close();
            }
        }
        // A track shorter than `len` (no power given): silence.
        self.silence(left);
    }

    pub fn silence(&mut self, mut samples: usize) {
        self.total += samples as u64;
        while samples > 0 {
            let n = (self.sub_len - self.filled).min(samples);
            self.filled += n;
            samples -= n;
            self.close();
        }
    }

    fn close(&mut self) {
        if self.filled == self.sub_len {
            self.sums.push(self.acc);
            self.acc = 0.0;
            self.filled = 0;
        }
    }

    /// Samples taken so far.
    pub fn len(&self) -> u64 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Gated integrated loudness (LUFS; `-inf` when nothing passes).
    pub fn integrated_lufs(&self) -> f64 {
        let block = 4.0 * self.sub_len as f64;
        let energies: Vec<f64> = self
            .sums
            .windows(4)
            .map(|w| w.iter().sum::<f64>() / block)
            .collect();
        let lufs = |e: f64| -0.691 + 10.0 * e.log10();
        let gated_mean = |floor: f64| {
            let (sum, n) = energies
                .iter()
                .filter(|&&e| e > 0.0 && lufs(e) > floor)
                .fold((0.0, 0usize), |(s, n), &e| (s + e, n + 1));
            (n > 0).then(|| sum / n as f64)
        };
        let Some(mean) = gated_mean(ABSOLUTE_GATE_LUFS) else {
            return f64::NEG_INFINITY;
        };
        match gated_mean(lufs(mean) - 10.0) {
            Some(mean) => lufs(mean),
            None => f64::NEG_INFINITY,
        }
    }
}

/// Integrated loudness of clips' power played one after another, scaled,
/// looped to three seconds like [`measure`].
pub fn power_lufs(clips: &[(&[f32], usize)], scale: f64, rate: u32) -> f64 {
    let total: usize = clips.iter().map(|&(_, len)| len).sum();
    let fed: Result<f64, std::convert::Infallible> = power_lufs_by(total, rate, |blocks| {
        for &(power, len) in clips {
            blocks.add(power, len, scale);
        }
        Ok(())
    });
    fed.unwrap_or_else(|never| match never {})
}

/// [`power_lufs`] of clips of `total` samples fed (scaled) by `feed`, once
/// per loop, so that their tracks need not all be in memory at once.
pub fn power_lufs_by<E>(
    total: usize,
    rate: u32,
    mut feed: impl FnMut(&mut PowerBlocks) -> Result<(), E>,
) -> Result<f64, E> {
    if total == 0 {
        return Ok(f64::NEG_INFINITY);
    }
    let needed = (MIN_MEASURE_S * f64::from(rate)) as usize;
    let mut blocks = PowerBlocks::new(rate);
    let mut fed = 0;
    while fed < needed.max(1) {
        feed(&mut blocks)?;
        fed += total;
    }
    Ok(blocks.integrated_lufs())
}

/// Taps on each side of the true-peak interpolator.
const TP_HALF: usize = 6;
/// Oversampling factor of the true-peak interpolator.
const TP_PHASES: usize = 4;

/// A 4× windowed-sinc interpolator for true peak: taps of phases 1..4 (a
/// quarter, half and three quarters between samples), plus the largest sum
/// of absolute taps, which bounds how far it can exceed the samples.
struct TruePeak {
    taps: [[f32; 2 * TP_HALF]; TP_PHASES - 1],
    gain_bound: f32,
}

impl TruePeak {
    fn new() -> TruePeak {
        let mut taps = [[0.0f32; 2 * TP_HALF]; TP_PHASES - 1];
        let half = TP_HALF as f64 + 0.5;
        for (p, row) in taps.iter_mut().enumerate() {
            let frac = (p + 1) as f64 / TP_PHASES as f64;
            for (j, tap) in row.iter_mut().enumerate() {
                // Sample n + j - TP_HALF + 1 sits at distance d from n + frac.
                let d = j as f64 - TP_HALF as f64 + 1.0 - frac;
                let x = std::f64::consts::PI * d;
                let sinc = if d == 0.0 { 1.0 } else { x.sin() / x };
                let w = 0.5 + 0.5 * (std::f64::consts::PI * d / half).cos();
                *tap = (sinc * w) as f32;
            }
        }
        let gain_bound = taps
            .iter()
            .map(|row| row.iter().map(|t| t.abs()).sum::<f32>())
            .fold(1.0, f32::max);
        TruePeak { taps, gain_bound }
    }

    /// Largest interpolated magnitude between `n` and `n + 1` (zeros outside).
    fn between(&self, samples: &[f32], n: usize) -> f32 {
        let start = n as isize - TP_HALF as isize + 1;
        let mut peak = 0.0f32;
        for row in &self.taps {
            let mut y = 0.0f32;
            for (j, t) in row.iter().enumerate() {
                let k = start + j as isize;
                if k >= 0 && (k as usize) < samples.len() {
                    y += t * samples[k as usize];
                }
            }
            peak = peak.max(y.abs());
        }
        peak
    }
}

/// The sample magnitude under which no interpolated value can pass
/// `floor`: a clip whose block peaks are all at or under it has a true
/// peak under `floor` (its samples need not be read).
pub fn true_peak_threshold(floor: f32) -> f32 {
    static BOUND: std::sync::OnceLock<f32> = std::sync::OnceLock::new();
    floor / *BOUND.get_or_init(|| TruePeak::new().gain_bound)
}

/// True peak (linear) of clips that sit apart (silence around each), at
/// least `floor`, each clip given with its block peaks
/// ([`super::peak_limiter::block_peaks`]): only neighbourhoods of samples loud
/// enough to possibly pass `floor` once interpolated are oversampled, and
/// blocks too quiet to hold one are skipped without reading their samples.
pub fn true_peak_above(clips: &[(&[f32], &[f32])], floor: f32) -> f32 {
    let tp = TruePeak::new();
    let threshold = floor / tp.gain_bound;
    let mut peak = floor;
    for &(clip, peaks) in clips {
        // Interpolation points n (between n and n + 1) checked so far.
        let mut next = 0usize;
        for (b, &block_peak) in peaks.iter().enumerate() {
            if block_peak <= threshold {
                continue;
            }
            let start = b * POWER_BLOCK;
            let end = (start + POWER_BLOCK).min(clip.len());
            for i in start..end {
                let a = clip[i].abs();
                if a <= threshold {
                    continue;
                }
                peak = peak.max(a);
                let from = i.saturating_sub(TP_HALF).max(next);
                let to = (i + TP_HALF).min(clip.len());
                for n in from..to {
                    peak = peak.max(tp.between(clip, n));
                }
                next = next.max(to);
            }
        }
    }
    peak
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipping_quiet_blocks_finds_the_same_true_peak_as_a_full_scan() {
        let tp = TruePeak::new();
        // Quiet speech-like noise with a few loud bursts, some of them at
        // block edges, in clips of uneven lengths.
        let mut seed = 7u32;
        let mut noise = move || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        let clips: Vec<Vec<f32>> = [1000usize, 4097, 31, 2500]
            .iter()
            .map(|&n| {
                let mut c: Vec<f32> = (0..n).map(|_| 0.05 * noise()).collect();
                for at in [n / 3, (n / 2) / POWER_BLOCK * POWER_BLOCK, n - 1] {
                    c[at] = 0.9 * noise().signum();
                }
                c
            })
            .collect();
        let refs: Vec<&[f32]> = clips.iter().map(Vec::as_slice).collect();
        let peaks: Vec<Vec<f32>> = refs
            .iter()
            .map(|c| super::super::peak_limiter::block_peaks(c))
            .collect();
        let with_peaks: Vec<(&[f32], &[f32])> = refs
            .iter()
            .zip(&peaks)
            .map(|(c, p)| (*c, p.as_slice()))
            .collect();
        for floor in [0.01f32, 0.3, 0.6, 0.95] {
            let full = refs
                .iter()
                .flat_map(|c| {
                    let between = (0..c.len()).map(|n| tp.between(c, n));
                    c.iter().map(|s| s.abs()).chain(between)
                })
                .fold(floor, f32::max);
            assert_eq!(true_peak_above(&with_peaks, floor), full, "floor {floor}");
        }
    }

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

    #[test]
    fn power_track_agrees_with_ebur128_whatever_the_clip_lengths() {
        // Clips of lengths that are not multiples of the track's block or of
        // 100 ms, at two levels: the track must give what ebur128 measures.
        let rate = 24000;
        let a = tone(0.3, rate, 1.013);
        let b = tone(0.05, rate, 2.0007);
        let reference = measure(&[&a, &b, &a], rate).integrated_lufs;
        let (pa, pb) = (k_power(&a, rate), k_power(&b, rate));
        assert_eq!(pa.len(), a.len().div_ceil(POWER_BLOCK));
        let tracked = power_lufs(&[(&pa, a.len()), (&pb, b.len()), (&pa, a.len())], 1.0, rate);
        assert!(
            (tracked - reference).abs() < 0.1,
            "{tracked} vs {reference}"
        );
        // A gain of +6 dB (scale 4 on power) reads 6 dB louder.
        let louder = power_lufs(&[(&pa, a.len())], 4.0, rate);
        let plain = power_lufs(&[(&pa, a.len())], 1.0, rate);
        assert!((louder - plain - 6.02).abs() < 0.01, "{louder} {plain}");
    }

    #[test]
    fn interleaved_pieces_match_one_pass() {
        let rate = 24000;
        let mut clip = tone(0.3, rate, 3.0);
        // Something that is not periodic, with a step that rings the filters.
        for (i, x) in clip.iter_mut().enumerate() {
            *x += 0.2 * ((i * 7919 % 1000) as f32 / 1000.0 - 0.5);
            if i % 20000 < 300 {
                *x += 0.4;
            }
        }
        let lanes = k_power(&clip, rate);
        let serial = k_power_serial(&clip, &k_filters(rate));
        assert_eq!(lanes.len(), serial.len());
        for (i, (a, b)) in lanes.iter().zip(&serial).enumerate() {
            assert!(
                (a - b).abs() <= 1e-5 * b.abs().max(1e-6),
                "block {i}: {a} vs {b}"
            );
        }
    }
}
