//! `report.txt`: what a render did — failures, segments read by a fallback
//! backend, segments whose pace suggests truncated or garbled audio, and the
//! chapters with their length and loudness. Written by every path that
//! renders a book into its folder (`build`, `batch run`, queue workers).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::manifest::ManifestChapter;
use crate::text::is_han;

/// The report's file name in the book directory.
pub const REPORT: &str = "report.txt";

/// Writes `report.txt` into `book_dir` (secrets redacted); returns how many
/// segments were flagged for their pace.
pub fn write(
    book_dir: &Path,
    summary: &str,
    failures: &[String],
    written: &[ManifestChapter],
) -> std::io::Result<usize> {
    let flags = quality_flags(written);
    let report = crate::redact::redact(&report_text(summary, failures, &flags, written));
    crate::fsutil::write_atomic(&book_dir.join(REPORT), report.as_bytes())?;
    Ok(flags.len())
}

/// A segment whose pace is far from its voice's usual pace.
#[derive(Debug, Clone, PartialEq)]
struct QualityFlag {
    chapter: usize,
    segment: usize,
    voice: String,
    seconds_per_han: f64,
    usual: f64,
    text: String,
}

/// Segments need this many Han characters to be judged.
const MIN_HAN_FOR_PACE: usize = 4;
/// A voice needs this many judged segments before outliers are flagged.
const MIN_SEGMENTS_FOR_PACE: usize = 5;
/// Outside [usual / FACTOR, usual × FACTOR] is flagged.
const PACE_FACTOR: f64 = 2.0;

/// Flags segments whose seconds per Han character are far outside the
/// voice's median in this run: truncated or hallucinated backend audio.
fn quality_flags(chapters: &[ManifestChapter]) -> Vec<QualityFlag> {
    let mut paces: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut judged = Vec::new();
    for chapter in chapters {
        for (i, segment) in chapter.segments.iter().enumerate() {
            let han = segment.text.chars().filter(|&c| is_han(c)).count();
            if han < MIN_HAN_FOR_PACE {
                continue;
            }
            let pace = (segment.end_s - segment.start_s) / han as f64;
            paces.entry(&segment.voice).or_default().push(pace);
            judged.push((chapter.index, i + 1, segment, pace));
        }
    }
    let usual: BTreeMap<&str, f64> = paces
        .into_iter()
        .filter(|(_, v)| v.len() >= MIN_SEGMENTS_FOR_PACE)
        .map(|(voice, mut v)| {
            v.sort_by(f64::total_cmp);
            (voice, v[v.len() / 2])
        })
        .collect();
    judged
        .into_iter()
        .filter_map(|(chapter, segment_no, segment, pace)| {
            let usual = *usual.get(segment.voice.as_str())?;
            let outside = pace < usual / PACE_FACTOR || pace > usual * PACE_FACTOR;
            outside.then(|| QualityFlag {
                chapter,
                segment: segment_no,
                voice: segment.voice.clone(),
                seconds_per_han: pace,
                usual,
                text: segment.text.chars().take(24).collect(),
            })
        })
        .collect()
}

/// The text of the report.
fn report_text(
    summary: &str,
    failures: &[String],
    flags: &[QualityFlag],
    written: &[ManifestChapter],
) -> String {
    let mut out = format!("tingshu report\n{summary}\n\n");
    let _ = writeln!(out, "Failed ({}):", failures.len());
    for f in failures {
        let _ = writeln!(out, "  {f}");
    }
    let fallbacks: Vec<String> = written
        .iter()
        .flat_map(|c| {
            c.segments.iter().enumerate().filter_map(move |(i, s)| {
                s.fallback.as_ref().map(|f| {
                    format!(
                        "  chapter {} segment {} [{}]: read by {f}",
                        c.index,
                        i + 1,
                        s.voice
                    )
                })
            })
        })
        .collect();
    if !fallbacks.is_empty() {
        let _ = writeln!(
            out,
            "\nFallbacks: segments read by a fallback backend ({}); the next run asks their own backend again:",
            fallbacks.len()
        );
        for f in &fallbacks {
            let _ = writeln!(out, "{f}");
        }
    }
    let _ = writeln!(
        out,
        "\nQuality flags: segments whose seconds per Han character are outside {PACE_FACTOR}× of their voice's median ({}):",
        flags.len()
    );
    for f in flags {
        let _ = writeln!(
            out,
            "  chapter {} segment {} [{}]: {:.3} s/char (usual {:.3}): {}",
            f.chapter, f.segment, f.voice, f.seconds_per_han, f.usual, f.text
        );
    }
    let _ = writeln!(out, "\nChapters:");
    for c in written {
        let loudness = c
            .loudness_lufs
            .map(|l| format!("{l:.1} LUFS"))
            .unwrap_or_else(|| "silent".to_owned());
        let _ = writeln!(
            out,
            "  {:4} {} — {} — {}",
            c.index,
            c.title,
            crate::progress::format_duration(c.duration_s),
            loudness
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::ManifestSegment;
    use crate::text::SegmentKind;

    fn segment(text: &str, start_s: f64, end_s: f64) -> ManifestSegment {
        ManifestSegment {
            kind: SegmentKind::Narration,
            speaker: None,
            text: text.to_owned(),
            start_s,
            end_s,
            voice: "narrator".to_owned(),
            fallback: None,
        }
    }

    #[test]
    fn pace_outliers_are_flagged_per_voice() {
        // Eight normal segments of 5 Han characters at 0.25 s each, one far
        // too short (truncated) and one far too long (hallucinated).
        let mut segments: Vec<ManifestSegment> = (0..8)
            .map(|i| segment("山高水长远", f64::from(i) * 2.0, f64::from(i) * 2.0 + 1.25))
            .collect();
        segments.push(segment("风吹草低见", 20.0, 20.3));
        segments.push(segment("月落乌啼霜", 21.0, 26.0));
        segments.push(segment("短", 27.0, 40.0));
        let chapter = ManifestChapter {
            index: 3,
            title: "t".into(),
            file: "f.wav".into(),
            duration_s: 41.0,
            loudness_lufs: Some(-18.0),
            segments,
            skipped: Vec::new(),
        };
        let flags = quality_flags(&[chapter]);
        let got: Vec<(usize, usize)> = flags.iter().map(|f| (f.chapter, f.segment)).collect();
        assert_eq!(got, [(3, 9), (3, 10)]);
        assert!((flags[0].usual - 0.25).abs() < 1e-9);
    }
}
