//! Assembling one chapter: every synthesized chunk converted to the output
//! rate, trimmed, faded, brought to the loudness target per voice, laid out
//! with pauses, and streamed straight into the chapter's WAV file.

//!
//! `prepare.rs` makes each chunk ready as it arrives, `spill.rs` moves
//! prepared chunks to disk for long chapters, `pauses.rs` holds the pause
//! lengths, `level.rs` the loudness leveling and `layout.rs` the layout
//! in playing order and the WAV writer.

mod layout;
mod level;
mod pauses;
mod prepare;
mod spill;

use std::collections::BTreeMap;
use std::io::{Seek, Write};
use std::path::Path;

use rayon::prelude::*;
use serde::Deserialize;

use super::AudioClip;
use super::loudness::{self, Loudness};
use super::wav::WavError;
use crate::text::chunk::Boundary;
use layout::{ChapterWriter, lay_out};
use level::{cap_true_peaks, chapter_lufs, correct_chapter, level_voice, voice_index};
pub use pauses::{PauseKind, Pauses};
pub use prepare::{PreparedClip, PreparedSegment, prepare};
pub use spill::Spill;

/// `[mix]`: output rate, loudness, pauses.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MixConfig {
    /// Sample rate of the chapter files (Hz).
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
    /// Pause lengths.
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

/// One segment's audio as the mixer receives it.
#[derive(Debug, Clone)]
pub struct SegmentAudio {
    /// Narration or dialogue.
    pub kind: PauseKind,
    /// Paragraph number within the chapter (0 for a spoken title).
    pub paragraph: usize,
    /// Voice name; loudness is matched per voice.
    pub voice: String,
    /// The segment's chunks in reading order, each with the pause class
    /// that follows it (the last chunk's boundary is not used).
    pub chunks: Vec<(Boundary, AudioClip)>,
}

/// What was written for a chapter.
#[derive(Debug, Clone, PartialEq)]
pub struct MixedChapter {
    /// Sample rate of the file (Hz).
    pub sample_rate: u32,
    /// Length of the file in seconds.
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
        kind: PauseKind,
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
                PauseKind::Narration,
                1,
                "n",
                vec![clip.clone(), clip.clone()],
            ),
            segment(PauseKind::Dialogue, 1, "n", vec![clip.clone()]),
            segment(PauseKind::Narration, 2, "n", vec![clip]),
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
                PauseKind::Narration,
                1,
                "quiet16k",
                vec![speechy(0.05, 16000, 6.0)],
            ),
            segment(
                PauseKind::Dialogue,
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
