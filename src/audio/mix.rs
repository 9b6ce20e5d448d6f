//! Assembling one chapter: every synthesized chunk converted to the output
//! rate, trimmed, faded, brought to the loudness target per voice, laid out
//! with pauses, and streamed straight into the chapter's WAV file.

use std::collections::BTreeMap;
use std::io::{Seek, Write};
use std::path::Path;

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
        if prev.paragraph != next.paragraph {
            self.paragraph_ms
        } else if prev.kind != next.kind {
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
/// backend silence trimmed, faded, with its K-weighted power measured.
#[derive(Debug, Clone)]
pub struct PreparedClip {
    clip: AudioClip,
    track: Track,
}

/// What the mixer keeps per clip beside its samples, one entry per
/// [`loudness::POWER_BLOCK`] samples: K-weighted power and peak.
#[derive(Debug, Clone)]
struct Track {
    power: Vec<f32>,
    peaks: Vec<f32>,
}

/// Tracks by segment, then chunk.
type Tracks = Vec<Vec<Track>>;

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
    PreparedClip { clip, track }
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
pub fn mix_prepared<W: Write + Seek>(
    config: &MixConfig,
    prepared: Vec<PreparedSegment>,
    out: W,
) -> Result<MixedChapter, WavError> {
    let rate = config.sample_rate;
    tracing::debug!(segments = prepared.len(), "mixing chapter");
    let mut segments = Vec::with_capacity(prepared.len());
    let mut power: Tracks = Vec::with_capacity(prepared.len());
    for segment in prepared {
        let (chunks, track) = segment
            .chunks
            .into_iter()
            .map(|(b, p)| ((b, p.clip), p.track))
            .unzip();
        segments.push(SegmentAudio {
            kind: segment.kind,
            paragraph: segment.paragraph,
            voice: segment.voice,
            chunks,
        });
        power.push(track);
    }
    let voices = voice_index(&segments);
    let mut gains_db = vec![0.0f64; voices.names.len()];
    for (v, gain) in gains_db.iter_mut().enumerate() {
        *gain = level_voice(config, &mut segments, &mut power, &voices, v);
    }
    let correction = correct_chapter(config, &mut segments, &mut power, &voices, &mut gains_db);
    let peaks = cap_true_peaks(config, &segments, &power, &voices, &mut gains_db);
    let integrated_lufs = chapter_lufs(config, &segments, &power, &voices, &gains_db);
    drop(power);
    tracing::debug!(correction, "chapter corrected");

    let gains: Vec<f32> = voices
        .of_segment
        .iter()
        .map(|&v| loudness::from_db(gains_db[v]))
        .collect();
    let mut writer = ChapterWriter::new(out, rate)?;
    let spans = lay_out(config, &segments, &gains, &mut writer)?;
    let speech_s = segments
        .iter()
        .map(|s| s.chunks.iter().map(|(_, c)| c.duration_s()).sum())
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

fn voice_index(segments: &[SegmentAudio]) -> VoiceIndex {
    let mut names: Vec<String> = segments.iter().map(|s| s.voice.clone()).collect();
    names.sort();
    names.dedup();
    let of_segment = segments
        .iter()
        .map(|s| names.binary_search(&s.voice).unwrap_or(0))
        .collect();
    VoiceIndex { names, of_segment }
}

/// Where laid-out audio goes: a file, or only a meter.
trait Sink {
    fn silence(&mut self, samples: usize) -> Result<(), WavError>;
    /// Chunk `chunk` of segment `segment`, to be scaled by `gain`.
    fn append(
        &mut self,
        segment: usize,
        chunk: usize,
        samples: &[f32],
        gain: f32,
    ) -> Result<(), WavError>;
    /// Samples taken so far.
    fn written(&self) -> u64;
}

/// Feeds the chapter to `sink` in playing order: opening pause, segments
/// with the pauses between and inside them, closing pause. Returns each
/// segment's (start, end) in samples.
fn lay_out<S: Sink>(
    config: &MixConfig,
    segments: &[SegmentAudio],
    gains: &[f32],
    sink: &mut S,
) -> Result<Vec<(u64, u64)>, WavError> {
    let pauses = &config.pauses;
    let ms = |ms: u32| super::clip::samples_for_ms(ms, config.sample_rate);
    sink.silence(ms(pauses.chapter_start_ms))?;
    let mut spans = Vec::with_capacity(segments.len());
    for (i, segment) in segments.iter().enumerate() {
        if i > 0 {
            sink.silence(ms(pauses.between(&segments[i - 1], segment)))?;
        }
        let start = sink.written();
        let last = segment.chunks.len().saturating_sub(1);
        for (j, (boundary, clip)) in segment.chunks.iter().enumerate() {
            sink.append(i, j, &clip.samples, gains[i])?;
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
struct PowerSink<'a> {
    power: &'a [Vec<Track>],
    blocks: loudness::PowerBlocks,
}

impl Sink for PowerSink<'_> {
    fn silence(&mut self, samples: usize) -> Result<(), WavError> {
        self.blocks.silence(samples);
        Ok(())
    }

    fn append(
        &mut self,
        segment: usize,
        chunk: usize,
        samples: &[f32],
        gain: f32,
    ) -> Result<(), WavError> {
        match self.power.get(segment).and_then(|p| p.get(chunk)) {
            Some(t) => self
                .blocks
                .add(&t.power, samples.len(), f64::from(gain) * f64::from(gain)),
            None => self.blocks.silence(samples.len()),
        }
        Ok(())
    }

    fn written(&self) -> u64 {
        self.blocks.len()
    }
}

/// Integrated loudness of the chapter as it will play with `gains_db`.
fn chapter_lufs(
    config: &MixConfig,
    segments: &[SegmentAudio],
    power: &[Vec<Track>],
    voices: &VoiceIndex,
    gains_db: &[f64],
) -> f64 {
    let gains: Vec<f32> = voices
        .of_segment
        .iter()
        .map(|&v| loudness::from_db(gains_db[v]))
        .collect();
    let mut sink = PowerSink {
        power,
        blocks: loudness::PowerBlocks::new(config.sample_rate),
    };
    match lay_out(config, segments, &gains, &mut sink) {
        Ok(_) => sink.blocks.integrated_lufs(),
        Err(_) => f64::NEG_INFINITY,
    }
}

/// Voices leveled one by one land a little under the target once laid out
/// with pauses (blocks that straddle speech and silence count too). Measures
/// the chapter as it will play and moves every voice by the difference,
/// limiting again where that pushes peaks over the ceiling. Returns the
/// correction in dB.
fn correct_chapter(
    config: &MixConfig,
    segments: &mut [SegmentAudio],
    power: &mut [Vec<Track>],
    voices: &VoiceIndex,
    gains_db: &mut [f64],
) -> f64 {
    let measured = chapter_lufs(config, segments, power, voices, gains_db);
    if !(measured.is_finite() && measured > -70.0) {
        return 0.0;
    }
    // Small moves only: a large one means something else is wrong.
    let diff = (config.target_lufs - measured).clamp(-3.0, 3.0);
    if diff.abs() < 0.05 {
        return 0.0;
    }
    gains_db.iter_mut().for_each(|g| *g += diff);
    if diff > 0.0 {
        for (v, &gain) in gains_db.iter().enumerate() {
            limit_voice(config, segments, power, voices, v, gain);
        }
    }
    diff
}

/// Lowers any voice whose true peak (with its gain) passes the ceiling by
/// the excess. Returns the chapter's true peak in dBTP (`-inf` if silent).
fn cap_true_peaks(
    config: &MixConfig,
    segments: &[SegmentAudio],
    tracks: &[Vec<Track>],
    voices: &VoiceIndex,
    gains_db: &mut [f64],
) -> f64 {
    let mut chapter = f64::NEG_INFINITY;
    for (v, gain) in gains_db.iter_mut().enumerate() {
        let clips: Vec<(&[f32], &[f32])> = segments
            .iter()
            .zip(tracks)
            .zip(&voices.of_segment)
            .filter(|&(_, &sv)| sv == v)
            .flat_map(|((s, t), _)| {
                s.chunks
                    .iter()
                    .zip(t)
                    .map(|((_, c), t)| (c.samples.as_slice(), t.peaks.as_slice()))
            })
            .collect();
        // Samples are unscaled: the ceiling moves by the voice's gain.
        let floor = loudness::from_db(config.true_peak_dbtp - *gain - 0.5);
        // Clips are independent: each one's peak on any core.
        let peak = clips
            .par_iter()
            .map(|&clip| loudness::true_peak_above(&[clip], floor))
            .reduce(|| floor, f32::max);
        let peak = loudness::to_db(f64::from(peak)) + *gain;
        if peak > config.true_peak_dbtp {
            *gain -= peak - config.true_peak_dbtp;
        }
        if clips.iter().any(|(c, _)| !c.is_empty()) {
            chapter = chapter.max(peak.min(config.true_peak_dbtp));
        }
    }
    chapter
}

/// [`mix_chapter`] into `path`, through a temporary file renamed into place
/// only when complete.
pub fn mix_chapter_file(
    config: &MixConfig,
    segments: Vec<SegmentAudio>,
    path: &Path,
) -> Result<MixedChapter, WavError> {
    write_atomically(path, |out| mix_chapter(config, segments, out))
}

/// [`mix_prepared`] into `path`, like [`mix_chapter_file`].
pub fn mix_prepared_file(
    config: &MixConfig,
    segments: Vec<PreparedSegment>,
    path: &Path,
) -> Result<MixedChapter, WavError> {
    write_atomically(path, |out| mix_prepared(config, segments, out))
}

fn write_atomically(
    path: &Path,
    mix: impl FnOnce(std::io::BufWriter<std::fs::File>) -> Result<MixedChapter, WavError>,
) -> Result<MixedChapter, WavError> {
    let io = |source| WavError::Io {
        path: path.to_owned(),
        source,
    };
    let tmp = wav::temp_path(path);
    let file = std::fs::File::create(&tmp).map_err(io)?;
    match mix(std::io::BufWriter::new(file)) {
        Ok(mixed) => {
            std::fs::rename(&tmp, path).map_err(io)?;
            Ok(mixed)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Sample ceiling under the true-peak ceiling: inter-sample peaks of speech
/// at 16–48 kHz rarely pass a sample peak by more than this.
const TRUE_PEAK_MARGIN_DB: f64 = 0.5;

/// Runs the limiter over voice `v`'s clips for a gain of `gain_db` (the
/// samples stay unscaled; the ceiling moves instead), keeping their power
/// in step.
fn limit_voice(
    config: &MixConfig,
    segments: &mut [SegmentAudio],
    power: &mut [Vec<Track>],
    voices: &VoiceIndex,
    v: usize,
    gain_db: f64,
) {
    let ceiling = loudness::from_db(config.true_peak_dbtp - TRUE_PEAK_MARGIN_DB - gain_db);
    let mut clips: Vec<(&mut AudioClip, &mut Track)> = segments
        .iter_mut()
        .zip(power.iter_mut())
        .zip(&voices.of_segment)
        .filter(|&(_, &sv)| sv == v)
        .flat_map(|((segment, power), _)| {
            segment
                .chunks
                .iter_mut()
                .map(|(_, clip)| clip)
                .zip(power.iter_mut())
        })
        .collect();
    clips.par_iter_mut().for_each(|(clip, track)| {
        limit::limit_tracked(
            &mut clip.samples,
            &mut track.power,
            &mut track.peaks,
            ceiling,
            config.sample_rate,
        );
    });
}

/// Integrated loudness of voice `v`'s clips played back to back.
fn voice_lufs(
    config: &MixConfig,
    segments: &[SegmentAudio],
    power: &[Vec<Track>],
    voices: &VoiceIndex,
    v: usize,
    gain_db: f64,
) -> f64 {
    let clips: Vec<(&[f32], usize)> = segments
        .iter()
        .zip(power)
        .zip(&voices.of_segment)
        .filter(|&(_, &sv)| sv == v)
        .flat_map(|((segment, p), _)| {
            p.iter()
                .zip(&segment.chunks)
                .map(|(t, (_, clip))| (t.power.as_slice(), clip.samples.len()))
        })
        .collect();
    let scale = 10f64.powf(gain_db / 10.0);
    loudness::power_lufs(&clips, scale, config.sample_rate)
}

/// Brings voice `v`'s speech in this chapter to the loudness target with
/// its peaks at or under the ceiling: a gain, then the limiter where peaks
/// stick out, then more gain for what the limiter took away (measured on
/// the power track, no new pass over the audio). Returns the gain (dB).
fn level_voice(
    config: &MixConfig,
    segments: &mut [SegmentAudio],
    power: &mut [Vec<Track>],
    voices: &VoiceIndex,
    v: usize,
) -> f64 {
    let original = voice_lufs(config, segments, power, voices, v, 0.0);
    if !(original.is_finite() && original > -70.0) {
        return 0.0;
    }
    let mut gain = config.target_lufs - original;
    // Bounded, so a pathological clip cannot be pumped forever.
    let mut extra = 0.0;
    for pass in 0..2 {
        limit_voice(config, segments, power, voices, v, gain);
        if pass == 1 {
            break;
        }
        let after = voice_lufs(config, segments, power, voices, v, gain);
        let more = (config.target_lufs - after).clamp(0.0, 6.0 - extra);
        if !after.is_finite() || more < 0.05 {
            break;
        }
        gain += more;
        extra += more;
    }
    tracing::debug!(voice = voices.names[v], gain, "voice leveled");
    gain
}

/// Samples converted at a time: hound's 16-bit writer allocates a buffer
/// of this size, small enough for the allocator to reuse (no fresh pages).
const WRITE_CHUNK: usize = 16 << 10;

/// Streams samples into a WAV writer, each clip scaled by its voice's gain.
struct ChapterWriter<W: Write + Seek> {
    wav: hound::WavWriter<W>,
    rate: u32,
    written: u64,
}

impl<W: Write + Seek> ChapterWriter<W> {
    fn new(out: W, rate: u32) -> Result<ChapterWriter<W>, WavError> {
        Ok(ChapterWriter {
            wav: hound::WavWriter::new(out, wav::mono_spec(rate))?,
            rate,
            written: 0,
        })
    }

    /// Length of what was written, in seconds.
    fn finish(self) -> Result<f64, WavError> {
        let duration = self.written as f64 / f64::from(self.rate);
        self.wav.finalize()?;
        Ok(duration)
    }
}

impl<W: Write + Seek> Sink for ChapterWriter<W> {
    fn silence(&mut self, samples: usize) -> Result<(), WavError> {
        let mut left = samples;
        while left > 0 {
            let n = left.min(WRITE_CHUNK);
            let mut out = self.wav.get_i16_writer(n as u32);
            for _ in 0..n {
                out.write_sample(0i16);
            }
            out.flush()?;
            left -= n;
        }
        self.written += samples as u64;
        Ok(())
    }

    fn append(
        &mut self,
        _segment: usize,
        _chunk: usize,
        samples: &[f32],
        gain: f32,
    ) -> Result<(), WavError> {
        for chunk in samples.chunks(WRITE_CHUNK) {
            let mut out = self.wav.get_i16_writer(chunk.len() as u32);
            for &s in chunk {
                out.write_sample(wav::to_i16(s * gain));
            }
            out.flush()?;
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
