//! Subtitles for a chapter: SRT and LRC, one cue per segment with the
//! original text, timed from the mix.

use std::fmt::Write as _;

/// One timed line.
#[derive(Debug, Clone, PartialEq)]
pub struct Cue {
    pub start_s: f64,
    pub end_s: f64,
    pub text: String,
}

/// Tags written at the top of an LRC file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LrcTags {
    pub title: String,
    pub album: String,
    pub artist: Option<String>,
}

/// SubRip text: numbered cues with `HH:MM:SS,mmm --> HH:MM:SS,mmm`.
pub fn srt(cues: &[Cue]) -> String {
    let mut out = String::new();
    for (i, cue) in cues.iter().enumerate() {
        let _ = write!(
            out,
            "{}\n{} --> {}\n{}\n\n",
            i + 1,
            srt_time(cue.start_s),
            srt_time(cue.end_s),
            one_line(&cue.text)
        );
    }
    out
}

/// LRC lyrics: `[mm:ss.xx]text` per cue, then an empty line at the end of
/// the last cue so players clear it.
pub fn lrc(cues: &[Cue], tags: &LrcTags) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "[ti:{}]", one_line(&tags.title));
    let _ = writeln!(out, "[al:{}]", one_line(&tags.album));
    if let Some(artist) = &tags.artist {
        let _ = writeln!(out, "[ar:{}]", one_line(artist));
    }
    let _ = writeln!(out, "[re:tingshu]");
    for cue in cues {
        let _ = writeln!(out, "[{}]{}", lrc_time(cue.start_s), one_line(&cue.text));
    }
    if let Some(last) = cues.last() {
        let _ = writeln!(out, "[{}]", lrc_time(last.end_s));
    }
    out
}

fn millis(s: f64) -> u64 {
    (s.max(0.0) * 1000.0).round() as u64
}

fn srt_time(s: f64) -> String {
    let ms = millis(s);
    format!(
        "{:02}:{:02}:{:02},{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// `mm:ss.xx` (minutes may exceed 59, as LRC players expect).
fn lrc_time(s: f64) -> String {
    let cs = (s.max(0.0) * 100.0).round() as u64;
    format!("{:02}:{:02}.{:02}", cs / 6000, cs / 100 % 60, cs % 100)
}

fn one_line(text: &str) -> String {
    text.split(['\r', '\n'])
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cues() -> Vec<Cue> {
        vec![
            Cue {
                start_s: 0.5,
                end_s: 2.345,
                text: "灯塔亮了。".into(),
            },
            Cue {
                start_s: 3725.0,
                end_s: 3726.5,
                text: "“谁在那里？”\n".into(),
            },
        ]
    }

    #[test]
    fn srt_numbers_and_times_cues() {
        assert_eq!(
            srt(&cues()),
            "1\n00:00:00,500 --> 00:00:02,345\n灯塔亮了。\n\n2\n01:02:05,000 --> 01:02:06,500\n“谁在那里？”\n\n"
        );
    }

    #[test]
    fn lrc_has_tags_cues_and_an_end_mark() {
        let tags = LrcTags {
            title: "第一章".into(),
            album: "书".into(),
            artist: None,
        };
        assert_eq!(
            lrc(&cues(), &tags),
            "[ti:第一章]\n[al:书]\n[re:tingshu]\n[00:00.50]灯塔亮了。\n[62:05.00]“谁在那里？”\n[62:06.50]\n"
        );
    }
}
