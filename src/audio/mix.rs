//! Assembling one chapter: every synthesized chunk converted to the output
//! rate, trimmed, faded, brought to the loudness target per voice, laid out
//! with pauses, and streamed straight into the chapter's WAV file.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{Seek, Write};
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;
use serde::Deserialize;

use super::limit;
use super::loudness::{self, Loudness};
use super::wav::{self, WavError};
use super::{AudioClip, resample::resample};
use crate::text::SegmentKind;
use crate::text::chunk::Boundary;

/// `[mix]`: output rate, loudness, pauses.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MixConfig {
    pub sample_rate: u32,
    /// Integrated loudness every voice is brought to (LUFS).
    pub target_lufs: f64,
    /// Highest true peak a voice may reach after its gain (dBTP).
    pub true_peak_dbtp: f64,
    /// Read each chapter's title (narrator voice) before its text.
    pub speak_title: bool,
    /// Synthesize clauses (up to ，、：) separately so `clause_ms` pauses
    /// follow them; off by default (more, shorter requests).
    pub split_clauses: bool,
    pub pauses: Pauses,
}

impl Default for MixConfig {
    fn default() -> MixConfig {
        MixConfig {
            sample_rate: 24000,
            target_lufs: -18.0,
            true_peak_dbtp: -1.0,
            speak_title: false,
            split_clauses: false,
            pauses: Pauses::default(),
        }
    }
}

/// Pause lengths in milliseconds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Pauses {
    /// After ，、： where a long sentence had to be split, or everywhere
    /// with `split_clauses`.
    pub clause_ms: u32,
    /// After 。！？；
    pub sentence_ms: u32,
    /// After …… and ——.
    pub hesitation_ms: u32,
    /// Between segments of one paragraph with the same kind.
    pub segment_ms: u32,
    /// Between narration and dialogue (either way) within a paragraph.
    pub turn_ms: u32,
    /// Between paragraphs (and after a spoken chapter title).
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

    /// The pause between two consecutive segments.
    pub fn between(&self, prev: &SegmentAudio, next: &SegmentAudio) -> u32 {
        self.between_parts((prev.paragraph, prev.kind), (next.paragraph, next.kind))
    }

    fn between_prepared(&self, prev: &PreparedSegment, next: &PreparedSegment) -> u32 {
        self.between_parts((prev.paragraph, prev.kind), (next.paragraph, next.kind))
    }

    fn between_parts(&self, prev: (usize, SegmentKind), next: (usize, SegmentKind)) -> u32 {
        if prev.0 != next.0 {
            self.paragraph_ms
        } else if prev.1 != next.1 {
            self.turn_ms
        } else {
            self.segment_ms
        }
    }
}

/// One segment's audio as the mixer receives it.
#[derive(Debug, Clone)]
pub struct SegmentAudio {
    pub kind: SegmentKind,
    /// Paragraph number within the chapter (0 for a spoken title).
    pub paragraph: usize,
    /// Voice name; loudness is matched per voice.
    pub voice: String,
    /// The segment's chunks in reading order, each with the pause class
    /// that follows it (the last chunk's boundary is not used).
    pub chunks: Vec<(Boundary, AudioClip)>,
}

/// A chunk made ready for the mixer ([`prepare`]): at the output rate,
/// backend silence trimmed, faded, with its K-weighted power measured. Its
/// samples and tracks are in memory, or in a chapter's [`Spill`] file once
/// the chapter holds more than the pipeline keeps in memory.
#[derive(Debug, Clone)]
pub struct PreparedClip {
    data: Data,
}

/// Where a prepared clip's samples and tracks are.
#[derive(Debug, Clone)]
enum Data {
    Memory {
        samples: Vec<f32>,
        track: Track,
    },
    /// In `file` from `offset`: the samples, then the power track, then
    /// the peak track, as little-endian `f32`.
    Spilled {
        file: Arc<Spill>,
        offset: u64,
        len: usize,
        power: usize,
        peaks: usize,
    },
}

impl PreparedClip {
    /// Number of samples.
    pub fn len(&self) -> usize {
        match &self.data {
            Data::Memory { samples, .. } => samples.len(),
            Data::Spilled { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of samples and tracks held in memory (0 once spilled).
    pub fn memory_bytes(&self) -> usize {
        match &self.data {
            Data::Memory { samples, track } => {
                (samples.len() + track.power.len() + track.peaks.len()) * 4
            }
            Data::Spilled { .. } => 0,
        }
    }

    /// Moves the samples and tracks into `spill` (no effect when already
    /// spilled).
    pub fn spill(&mut self, spill: &Arc<Spill>) -> std::io::Result<()> {
        if let Data::Memory { samples, track } = &self.data {
            let offset = spill.append(&[samples, &track.power, &track.peaks])?;
            self.data = Data::Spilled {
                file: Arc::clone(spill),
                offset,
                len: samples.len(),
                power: track.power.len(),
                peaks: track.peaks.len(),
            };
        }
        Ok(())
    }

    /// The samples (read back from the spill file when spilled).
    fn samples(&self) -> Result<Cow<'_, [f32]>, WavError> {
        match &self.data {
            Data::Memory { samples, .. } => Ok(Cow::Borrowed(samples)),
            Data::Spilled {
                file, offset, len, ..
            } => Ok(Cow::Owned(file.read(*offset, *len)?)),
        }
    }

    /// The power track.
    fn power(&self) -> Result<Cow<'_, [f32]>, WavError> {
        match &self.data {
            Data::Memory { track, .. } => Ok(Cow::Borrowed(&track.power)),
            Data::Spilled {
                file,
                offset,
                len,
                power,
                ..
            } => Ok(Cow::Owned(file.read(offset + 4 * *len as u64, *power)?)),
        }
    }

    /// The peak track.
    fn peaks(&self) -> Result<Cow<'_, [f32]>, WavError> {
        match &self.data {
            Data::Memory { track, .. } => Ok(Cow::Borrowed(&track.peaks)),
            Data::Spilled {
                file,
                offset,
                len,
                power,
                peaks,
            } => Ok(Cow::Owned(
                file.read(offset + 4 * (*len + *power) as u64, *peaks)?,
            )),
        }
    }

    /// Runs the limiter over the clip at `ceiling`, keeping its tracks in
    /// step; a clip whose peaks stay under the ceiling is not read.
    fn limit(&mut self, ceiling: f32, rate: u32) -> Result<(), WavError> {
        if ceiling <= 0.0 || self.peaks()?.iter().all(|&p| p <= ceiling) {
            return Ok(());
        }
        match &mut self.data {
            Data::Memory { samples, track } => {
                limit::limit_tracked(samples, &mut track.power, &mut track.peaks, ceiling, rate);
            }
            Data::Spilled {
                file,
                offset,
                len,
                power,
                peaks,
            } => {
                let all = file.read(*offset, *len + *power + *peaks)?;
                let (s, rest) = all.split_at(*len);
                let (p, q) = rest.split_at(*power);
                let (mut s, mut p, mut q) = (s.to_vec(), p.to_vec(), q.to_vec());
                limit::limit_tracked(&mut s, &mut p, &mut q, ceiling, rate);
                file.write(*offset, &[&s, &p, &q])?;
            }
        }
        Ok(())
    }

    /// The clip's true peak, at least `floor` (see
    /// [`loudness::true_peak_above`]); a clip too quiet to pass it is not read.
    fn true_peak_above(&self, floor: f32) -> Result<f32, WavError> {
        let threshold = loudness::true_peak_threshold(floor);
        let peaks = self.peaks()?;
        if peaks.iter().all(|&p| p <= threshold) {
            return Ok(floor);
        }
        let samples = self.samples()?;
        Ok(loudness::true_peak_above(&[(&samples, &peaks)], floor))
    }
}

/// A temporary file holding the samples and tracks of a chapter's clips
/// while the chapter is assembled, so memory does not grow with its
/// length. Unnamed (`O_TMPFILE`): it disappears when closed, even when
/// tingshu is killed.
#[derive(Debug)]
pub struct Spill {
    file: std::fs::File,
    end: std::sync::Mutex<u64>,
}

impl Spill {
    /// A spill file in `dir` (the chapter's own folder: same disk as the
    /// output, unlike a RAM-backed /tmp).
    pub fn new_in(dir: &Path) -> std::io::Result<Arc<Spill>> {
        Ok(Arc::new(Spill {
            file: tempfile::tempfile_in(dir)?,
            end: std::sync::Mutex::new(0),
        }))
    }

    fn bytes(parts: &[&[f32]]) -> Vec<u8> {
        parts
            .iter()
            .flat_map(|p| p.iter())
            .flat_map(|s| s.to_le_bytes())
            .collect()
    }

    /// Appends `parts` back to back; returns where they start.
    fn append(&self, parts: &[&[f32]]) -> std::io::Result<u64> {
        use std::os::unix::fs::FileExt;
        let bytes = Spill::bytes(parts);
        let offset = {
            let mut end = self.end.lock().unwrap_or_else(|e| e.into_inner());
            let offset = *end;
            *end += bytes.len() as u64;
            offset
        };
        self.file.write_all_at(&bytes, offset)?;
        Ok(offset)
    }

    fn read(&self, offset: u64, len: usize) -> Result<Vec<f32>, WavError> {
        use std::os::unix::fs::FileExt;
        let mut bytes = vec![0u8; len * 4];
        self.file
            .read_exact_at(&mut bytes, offset)
            .map_err(WavError::Spill)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    fn write(&self, offset: u64, parts: &[&[f32]]) -> Result<(), WavError> {
        use std::os::unix::fs::FileExt;
        self.file
            .write_all_at(&Spill::bytes(parts), offset)
            .map_err(WavError::Spill)
    }
}

/// What the mixer keeps per clip beside its samples, one entry per
/// [`loudness::POWER_BLOCK`] samples: K-weighted power and peak.
#[derive(Debug, Clone)]
struct Track {
    power: Vec<f32>,
    peaks: Vec<f32>,
}

/// Prepares one chunk for a chapter at `rate`. Chunks are independent, so
/// this can run as each one arrives, before the chapter is complete.
pub fn prepare(clip: AudioClip, rate: u32) -> PreparedClip {
    let mut clip = resample(clip, rate);
    clip.trim_silence(SILENCE_THRESHOLD, TRIM_KEEP_MS);
    fade(
        &mut clip.samples,
        super::clip::samples_for_ms(FADE_MS, rate),
    );
    let track = Track {
        power: loudness::k_power(&clip.samples, rate),
        peaks: limit::block_peaks(&clip.samples),
    };
    PreparedClip {
        data: Data::Memory {
            samples: clip.samples,
            track,
        },
    }
}

/// [`SegmentAudio`] whose chunks went through [`prepare`].
#[derive(Debug, Clone)]
pub struct PreparedSegment {
    pub kind: SegmentKind,
    pub paragraph: usize,
    pub voice: String,
    pub chunks: Vec<(Boundary, PreparedClip)>,
}

/// What was written for a chapter.
#[derive(Debug, Clone, PartialEq)]
pub struct MixedChapter {
    pub sample_rate: u32,
    pub duration_s: f64,
    /// (start, end) in seconds of each input segment, in order.
    pub spans: Vec<(f64, f64)>,
    /// Loudness of the whole chapter as written.
    pub loudness: Loudness,
    /// Gain applied to each voice, in dB.
    pub voice_gain_db: BTreeMap<String, f64>,
    /// Seconds of speech (pauses excluded) of each segment.
    pub speech_s: Vec<f64>,
}

/// Amplitude below which a clip's edges count as silence.
const SILENCE_THRESHOLD: f32 = 0.003;
/// Quiet edge kept when trimming, so soft consonants are not cut.
const TRIM_KEEP_MS: u32 = 20;
/// Fade in/out on every clip so joints do not click.
const FADE_MS: u32 = 5;

/// Mixes a chapter into `out` as 16-bit mono WAV at `config.sample_rate`.
/// Memory is bounded by the chapter's own clips: the output is streamed.
///
/// Loudness is measured once per clip (its K-weighted power); gains are
/// kept as numbers and applied while writing, and the limiter updates the
/// power where it acts, so leveling and the chapter correction need no
/// further passes over the audio.
pub fn mix_chapter<W: Write + Seek>(
    config: &MixConfig,
    segments: Vec<SegmentAudio>,
    out: W,
) -> Result<MixedChapter, WavError> {
    let rate = config.sample_rate;
    // Clips are independent until they are laid out: prepared on all cores.
    let mut clips: Vec<(usize, Boundary, AudioClip)> = Vec::new();
    let mut heads = Vec::with_capacity(segments.len());
    for (si, segment) in segments.into_iter().enumerate() {
        clips.extend(segment.chunks.into_iter().map(|(b, clip)| (si, b, clip)));
        heads.push(PreparedSegment {
            kind: segment.kind,
            paragraph: segment.paragraph,
            voice: segment.voice,
            chunks: Vec::new(),
        });
    }
    let prepared: Vec<(usize, Boundary, PreparedClip)> = clips
        .into_par_iter()
        .map(|(si, b, clip)| (si, b, prepare(clip, rate)))
        .collect();
    for (si, b, clip) in prepared {
        heads[si].chunks.push((b, clip));
    }
    mix_prepared(config, heads, out)
}

/// [`mix_chapter`] for chunks already [`prepare`]d at `config.sample_rate`.
///
/// Memory is bounded by what the clips hold in memory (a spilled clip is
/// read back one at a time): leveling, the limiter and the chapter
/// correction work from the per-block power and peak tracks, and read
/// only the clips whose peaks need it.
pub fn mix_prepared<W: Write + Seek>(
    config: &MixConfig,
    mut segments: Vec<PreparedSegment>,
    out: W,
) -> Result<MixedChapter, WavError> {
    let rate = config.sample_rate;
    tracing::debug!(segments = segments.len(), "mixing chapter");
    let voices = voice_index(&segments);
    let mut gains_db = vec![0.0f64; voices.names.len()];
    for (v, gain) in gains_db.iter_mut().enumerate() {
        *gain = level_voice(config, &mut segments, &voices, v)?;
    }
    let correction = correct_chapter(config, &mut segments, &voices, &mut gains_db)?;
    let peaks = cap_true_peaks(config, &segments, &voices, &mut gains_db)?;
    let (integrated_lufs, total) = chapter_lufs(config, &segments, &voices, &gains_db)?;
    tracing::debug!(correction, "chapter corrected");

    let gains: Vec<f32> = voices
        .of_segment
        .iter()
        .map(|&v| loudness::from_db(gains_db[v]))
        .collect();
    let mut writer = ChapterWriter::new(out, rate, total)?;
    let spans = lay_out(config, &segments, &gains, &mut writer)?;
    let speech_s = segments
        .iter()
        .map(|s| {
            s.chunks
                .iter()
                .map(|(_, c)| c.len() as f64 / f64::from(rate))
                .sum()
        })
        .collect();
    drop(segments);
    let duration_s = writer.finish()?;
    tracing::debug!(duration_s, "chapter written");
    let seconds = |n: u64| n as f64 / f64::from(rate);
    Ok(MixedChapter {
        sample_rate: rate,
        duration_s,
        spans: spans
            .into_iter()
            .map(|(a, b)| (seconds(a), seconds(b)))
            .collect(),
        loudness: Loudness {
            integrated_lufs,
            true_peak_dbtp: peaks,
        },
        voice_gain_db: voices.names.into_iter().zip(gains_db).collect(),
        speech_s,
    })
}

/// Voice names (sorted) and each segment's voice number.
struct VoiceIndex {
    names: Vec<String>,
    of_segment: Vec<usize>,
}

fn voice_index(segments: &[PreparedSegment]) -> VoiceIndex {
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

/// Where laid-out audio goes: a file, or only a meter.
trait Sink {
    fn silence(&mut self, samples: usize) -> Result<(), WavError>;
    /// A clip, to be scaled by `gain`.
    fn append(&mut self, clip: &PreparedClip, gain: f32) -> Result<(), WavError>;
    /// Samples taken so far.
    fn written(&self) -> u64;
}

/// Feeds the chapter to `sink` in playing order: opening pause, segments
/// with the pauses between and inside them, closing pause. Returns each
/// segment's (start, end) in samples.
fn lay_out<S: Sink>(
    config: &MixConfig,
    segments: &[PreparedSegment],
    gains: &[f32],
    sink: &mut S,
) -> Result<Vec<(u64, u64)>, WavError> {
    let pauses = &config.pauses;
    let ms = |ms: u32| super::clip::samples_for_ms(ms, config.sample_rate);
    sink.silence(ms(pauses.chapter_start_ms))?;
    let mut spans = Vec::with_capacity(segments.len());
    for (i, segment) in segments.iter().enumerate() {
        if i > 0 {
            sink.silence(ms(pauses.between_prepared(&segments[i - 1], segment)))?;
        }
        let start = sink.written();
        let last = segment.chunks.len().saturating_sub(1);
        for (j, (boundary, clip)) in segment.chunks.iter().enumerate() {
            sink.append(clip, gains[i])?;
            if j < last {
                sink.silence(ms(pauses.after_chunk(*boundary)))?;
            }
        }
        spans.push((start, sink.written()));
    }
    sink.silence(ms(pauses.chapter_end_ms))?;
    Ok(spans)
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
fn chapter_lufs(
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
fn correct_chapter(
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
fn cap_true_peaks(
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

/// [`mix_chapter`] into `path`, through a temporary file renamed into place
/// only when complete.
pub fn mix_chapter_file(
    config: &MixConfig,
    segments: Vec<SegmentAudio>,
    path: &Path,
) -> Result<MixedChapter, WavError> {
    let io = |source| WavError::Io {
        path: path.to_owned(),
        source,
    };
    crate::fsutil::write_atomic_with(path, io, |out| mix_chapter(config, segments, out))
}

/// [`mix_prepared`] into `path`, like [`mix_chapter_file`].
pub fn mix_prepared_file(
    config: &MixConfig,
    segments: Vec<PreparedSegment>,
    path: &Path,
) -> Result<MixedChapter, WavError> {
    let io = |source| WavError::Io {
        path: path.to_owned(),
        source,
    };
    crate::fsutil::write_atomic_with(path, io, |out| mix_prepared(config, segments, out))
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
fn level_voice(
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

/// Samples converted at a time: small enough for the allocator to reuse
/// the buffer (no fresh pages).
const WRITE_CHUNK: usize = 16 << 10;

/// Streams samples into a 16-bit mono WAV, each clip scaled by its voice's
/// gain. The length is known before the first sample (the chapter is laid
/// out on its power tracks first), so the header is written once, up
/// front: RIFF as usual, RF64 (EBU Tech 3306) when the data passes the
/// 4 GiB a RIFF size field can hold (a chapter of 27 h at 22.05 kHz).
struct ChapterWriter<W: Write + Seek> {
    out: W,
    rate: u32,
    written: u64,
    expected: u64,
    buf: Vec<u8>,
}

impl<W: Write + Seek> ChapterWriter<W> {
    fn new(mut out: W, rate: u32, samples: u64) -> Result<ChapterWriter<W>, WavError> {
        out.write_all(&wav::header(rate, samples))
            .map_err(WavError::Write)?;
        Ok(ChapterWriter {
            out,
            rate,
            written: 0,
            expected: samples,
            buf: Vec::with_capacity(WRITE_CHUNK * 2),
        })
    }

    /// Length of what was written, in seconds.
    fn finish(mut self) -> Result<f64, WavError> {
        if self.written != self.expected {
            // Cannot happen: the layout is the same both times.
            self.out
                .seek(std::io::SeekFrom::Start(0))
                .map_err(WavError::Write)?;
            self.out
                .write_all(&wav::header(self.rate, self.written))
                .map_err(WavError::Write)?;
        }
        self.out.flush().map_err(WavError::Write)?;
        Ok(self.written as f64 / f64::from(self.rate))
    }

    fn put(&mut self, samples: impl Iterator<Item = i16>) -> Result<(), WavError> {
        self.buf.clear();
        for s in samples {
            self.buf.extend_from_slice(&s.to_le_bytes());
        }
        self.out.write_all(&self.buf).map_err(WavError::Write)
    }
}

impl<W: Write + Seek> Sink for ChapterWriter<W> {
    fn silence(&mut self, samples: usize) -> Result<(), WavError> {
        let mut left = samples;
        while left > 0 {
            let n = left.min(WRITE_CHUNK);
            self.put(std::iter::repeat_n(0i16, n))?;
            left -= n;
        }
        self.written += samples as u64;
        Ok(())
    }

    fn append(&mut self, clip: &PreparedClip, gain: f32) -> Result<(), WavError> {
        let samples = clip.samples()?;
        for chunk in samples.chunks(WRITE_CHUNK) {
            self.put(chunk.iter().map(|&s| wav::to_i16(s * gain)))?;
        }
        self.written += samples.len() as u64;
        Ok(())
    }

    fn written(&self) -> u64 {
        self.written
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
    use std::io::Cursor;

    /// A speech-like test signal: a 220 Hz tone with syllable-rate bursts.
    fn speechy(amplitude: f32, rate: u32, secs: f32) -> AudioClip {
        let n = (rate as f32 * secs) as usize;
        let samples = (0..n)
            .map(|i| {
                let t = i as f32 / rate as f32;
                let envelope = (std::f32::consts::PI * 4.0 * t).sin().abs();
                amplitude * envelope * (std::f32::consts::TAU * 220.0 * t).sin()
            })
            .collect();
        AudioClip::new(samples, rate)
    }

    fn segment(
        kind: SegmentKind,
        paragraph: usize,
        voice: &str,
        clips: Vec<AudioClip>,
    ) -> SegmentAudio {
        SegmentAudio {
            kind,
            paragraph,
            voice: voice.to_owned(),
            chunks: clips.into_iter().map(|c| (Boundary::Sentence, c)).collect(),
        }
    }

    fn read_back(buf: Cursor<Vec<u8>>) -> AudioClip {
        let reader = hound::WavReader::new(Cursor::new(buf.into_inner())).unwrap();
        let rate = reader.spec().sample_rate;
        let samples: Vec<i16> = reader.into_samples().map(Result::unwrap).collect();
        AudioClip::from_i16(&samples, rate)
    }

    #[test]
    fn pauses_and_clips_add_up() {
        let config = MixConfig {
            sample_rate: 1000,
            ..MixConfig::default()
        };
        let mut speech = vec![0.0; 100];
        speech[10..90].fill(0.5);
        let clip = AudioClip::new(speech, 1000);
        let segments = vec![
            segment(
                SegmentKind::Narration,
                1,
                "n",
                vec![clip.clone(), clip.clone()],
            ),
            segment(SegmentKind::Dialogue, 1, "n", vec![clip.clone()]),
            segment(SegmentKind::Narration, 2, "n", vec![clip]),
        ];
        let mut buf = Cursor::new(Vec::new());
        let mixed = mix_chapter(&config, segments, &mut buf).unwrap();
        let p = &config.pauses;
        // Each clip: 80 ms of sound plus at most 20 ms kept on each side,
        // bounded by the clip's own 10 ms edges = 100 ms.
        let expected_ms = p.chapter_start_ms
            + 100
            + p.sentence_ms
            + 100
            + p.turn_ms
            + 100
            + p.paragraph_ms
            + 100
            + p.chapter_end_ms;
        assert_eq!(mixed.duration_s, f64::from(expected_ms) / 1000.0);
        assert_eq!(mixed.spans[0], (0.5, 0.5 + 0.5));
        assert_eq!(read_back(buf).samples.len(), expected_ms as usize);
    }

    #[test]
    fn voices_at_different_rates_and_levels_come_out_matched() {
        let config = MixConfig::default();
        let segments = vec![
            segment(
                SegmentKind::Narration,
                1,
                "quiet16k",
                vec![speechy(0.05, 16000, 6.0)],
            ),
            segment(
                SegmentKind::Dialogue,
                1,
                "loud44k",
                vec![speechy(0.9, 44100, 6.0)],
            ),
        ];
        let mut buf = Cursor::new(Vec::new());
        let mixed = mix_chapter(&config, segments, &mut buf).unwrap();
        let out = read_back(buf);
        assert_eq!(out.sample_rate, 24000);
        let s = &mixed.spans;
        let part =
            |(a, b): (f64, f64)| &out.samples[(a * 24000.0) as usize..(b * 24000.0) as usize];
        let first = loudness::measure(&[part(s[0])], 24000);
        let second = loudness::measure(&[part(s[1])], 24000);
        assert!((first.integrated_lufs + 18.0).abs() < 0.5, "{first:?}");
        assert!((second.integrated_lufs + 18.0).abs() < 0.5, "{second:?}");
        assert!(
            (mixed.loudness.integrated_lufs + 18.0).abs() < 0.5,
            "{:?}",
            mixed.loudness
        );
        assert!(
            mixed.loudness.true_peak_dbtp <= -0.9,
            "{:?}",
            mixed.loudness
        );
    }
}
