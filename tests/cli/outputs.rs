//! Finished outputs of `tingshu build`, checked with independent tools:
//! ffmpeg's `ebur128` filter for loudness, ffprobe for M4B chapters and
//! MP3/Opus tags, and the subtitle files against the audio they time.
//! Tests that need ffmpeg skip with a message when it is not installed (and
//! fail with `TINGSHU_REQUIRE_SERVICES=1`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;
use tingshu::audio::{AudioClip, MixConfig, PauseKind, SegmentAudio, mix_chapter_file};
use tingshu::manifest::Manifest;
use tingshu::text::chunk::Boundary;

use crate::support::cli::{Tingshu, fails, ok};
use crate::support::{ffmpeg, paths, wav};

const AUTHOR: &str = "石 灯";
const TARGET_LUFS: f64 = -18.0;

fn sample_book() -> PathBuf {
    paths::repo().join("samples/灯塔守夜人.txt")
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("command runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// One build of three chapters in every format, Audiobookshelf layout,
/// with author and cover, shared by the tests below.
struct Built {
    book_dir: PathBuf,
    manifest: Manifest,
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("outputs-abs");
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let cover = root.join("cover.png");
        run(Command::new("ffmpeg")
            .args([
                "-v",
                "error",
                "-f",
                "lavfi",
                "-i",
                "color=c=0x3060a0:s=96x96",
                "-frames:v",
                "1",
            ])
            .arg(&cover));
        let out = root.join("library");
        ok(&Tingshu::new(["build"])
            .arg(sample_book())
            .arg("--out")
            .arg(&out)
            .args(["--format", "wav,mp3,opus,m4b", "--layout", "audiobookshelf"])
            .args(["--author", AUTHOR])
            .arg("--cover")
            .arg(&cover)
            .output());
        let book_dir = out.join("石_灯").join("灯塔守夜人");
        let manifest = Manifest::read(&book_dir.join("manifest.json")).expect("manifest.json");
        Built { book_dir, manifest }
    })
}

/// Integrated loudness and true peak by ffmpeg's own EBU R128 meter.
fn ffmpeg_loudness(path: &Path) -> (f64, f64) {
    let out = run(Command::new("ffmpeg")
        .args(["-hide_banner", "-nostats", "-i"])
        .arg(path)
        .args(["-af", "ebur128=peak=true", "-f", "null", "-"]));
    let log = String::from_utf8_lossy(&out.stderr);
    let summary = &log[log.rfind("Summary:").expect("ebur128 summary")..];
    let value = |key: &str| -> f64 {
        let line = summary
            .lines()
            .find(|l| l.trim_start().starts_with(key))
            .unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    (value("I:"), value("Peak:"))
}

#[test]
fn chapters_are_at_the_loudness_target_by_an_independent_meter() {
    if !ffmpeg::tools() {
        return;
    }
    let b = built();
    assert_eq!(b.manifest.sample_rate, 22050);
    for chapter in &b.manifest.chapters {
        let (integrated, peak) = ffmpeg_loudness(&b.book_dir.join(&chapter.file));
        assert!(
            (integrated - TARGET_LUFS).abs() <= 1.0,
            "chapter {}: {integrated} LUFS",
            chapter.index
        );
        assert!(
            peak <= -1.0,
            "chapter {}: true peak {peak} dBTP",
            chapter.index
        );
        let recorded = chapter.loudness_lufs.expect("loudness_lufs in manifest");
        assert!(
            (recorded - integrated).abs() < 0.5,
            "{recorded} vs {integrated}"
        );
    }
}

#[test]
fn m4b_has_one_marked_chapter_per_manifest_chapter() {
    if !ffmpeg::tools() {
        return;
    }
    let b = built();
    let m4b = b.book_dir.join("灯塔守夜人.m4b");
    let chapters = ffmpeg::ffprobe(&m4b, "-show_chapters");
    let titles: Vec<&str> = chapters["chapters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tags"]["title"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = b
        .manifest
        .chapters
        .iter()
        .map(|c| c.title.as_str())
        .collect();
    assert_eq!(titles, expected);
    assert_eq!(titles.len(), 3);
    let format = ffmpeg::ffprobe(&m4b, "-show_format");
    let tags = &format["format"]["tags"];
    assert_eq!(tags["title"], "灯塔守夜人");
    assert_eq!(tags["artist"], AUTHOR);
    let total: f64 = b.manifest.chapters.iter().map(|c| c.duration_s).sum();
    let duration: f64 = format["format"]["duration"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((duration - total).abs() < 0.5, "{duration} vs {total}");
    let streams = ffmpeg::ffprobe(&m4b, "-show_streams");
    assert!(
        streams["streams"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["disposition"]["attached_pic"] == 1),
        "no cover in the M4B"
    );
}

#[test]
fn mp3_and_opus_tags_read_back() {
    if !ffmpeg::tools() {
        return;
    }
    let b = built();
    for chapter in &b.manifest.chapters {
        let stem = Path::new(&chapter.file)
            .file_stem()
            .unwrap()
            .to_str()
            .unwrap();
        for ext in ["mp3", "opus"] {
            let path = b.book_dir.join(format!("{stem}.{ext}"));
            // MP3 tags are container tags; Ogg/Opus comments belong to the
            // audio stream.
            let tags = if ext == "mp3" {
                ffmpeg::ffprobe(&path, "-show_format")["format"]["tags"].clone()
            } else {
                ffmpeg::ffprobe(&path, "-show_streams")["streams"][0]["tags"].clone()
            };
            let tag = |key: &str| {
                tags.get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_else(|| panic!("{}: no {key} tag in {tags}", path.display()))
                    .to_owned()
            };
            assert_eq!(tag("title"), chapter.title);
            assert_eq!(tag("album"), "灯塔守夜人");
            assert_eq!(tag("artist"), AUTHOR);
            assert_eq!(tag("track"), format!("{}/3", chapter.index));
        }
        // The cover: an attached picture in the MP3, a METADATA_BLOCK_PICTURE
        // comment in the Opus file (ffprobe shows both as an image stream).
        for ext in ["mp3", "opus"] {
            let path = b.book_dir.join(format!("{stem}.{ext}"));
            let streams = ffmpeg::ffprobe(&path, "-show_streams");
            assert!(
                streams["streams"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|s| s["disposition"]["attached_pic"] == 1),
                "no cover in {}",
                path.display()
            );
        }
    }
}

/// (start, end) of every SRT cue.
fn srt_cues(text: &str) -> Vec<(f64, f64, String)> {
    let time = |s: &str| -> f64 {
        let (hms, ms) = s.trim().split_once(',').unwrap();
        let parts: Vec<f64> = hms.split(':').map(|p| p.parse().unwrap()).collect();
        parts[0] * 3600.0 + parts[1] * 60.0 + parts[2] + ms.parse::<f64>().unwrap() / 1000.0
    };
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let lines: Vec<&str> = block.lines().collect();
            let (a, b) = lines[1].split_once(" --> ").unwrap();
            (time(a), time(b), lines[2..].join("\n"))
        })
        .collect()
}

#[test]
fn subtitles_are_ordered_and_end_within_the_audio() {
    if !ffmpeg::tools() {
        return;
    }
    let b = built();
    let end_pause = MixConfig::default().pauses.chapter_end_ms as f64 / 1000.0;
    for chapter in &b.manifest.chapters {
        let wav = b.book_dir.join(&chapter.file);
        let audio_s = wav::duration_s(&wav);
        let srt = std::fs::read_to_string(wav.with_extension("srt")).unwrap();
        let cues = srt_cues(&srt);
        assert_eq!(cues.len(), chapter.segments.len());
        for (cue, segment) in cues.iter().zip(&chapter.segments) {
            assert_eq!(cue.2, segment.text);
            assert!(cue.0 < cue.1, "empty cue {cue:?}");
        }
        for pair in cues.windows(2) {
            assert!(pair[0].1 <= pair[1].0, "overlap: {pair:?}");
        }
        let last_end = cues.last().unwrap().1;
        assert!(last_end <= audio_s, "{last_end} > {audio_s}");
        // The last cue ends where the chapter's closing pause begins.
        assert!(
            (audio_s - last_end - end_pause).abs() < 0.01,
            "last cue ends at {last_end}, audio {audio_s}"
        );
        let lrc = std::fs::read_to_string(wav.with_extension("lrc")).unwrap();
        assert_eq!(
            lrc.lines().filter(|l| l.starts_with("[0")).count(),
            cues.len() + 1
        );
    }
}

#[test]
fn audiobookshelf_layout_has_cover_description_and_report() {
    if !ffmpeg::tools() {
        return;
    }
    let b = built();
    let cover = std::fs::read(b.book_dir.join("cover.jpg")).unwrap();
    assert!(cover.starts_with(&[0xFF, 0xD8]), "cover.jpg is not a JPEG");
    let desc = std::fs::read_to_string(b.book_dir.join("desc.txt")).unwrap();
    assert!(
        desc.contains("灯塔守夜人") && desc.contains(AUTHOR),
        "{desc}"
    );
    let report = std::fs::read_to_string(b.book_dir.join("report.txt")).unwrap();
    assert!(report.contains("Failed (0)"), "{report}");
    for chapter in &b.manifest.chapters {
        assert!(report.contains(&chapter.title), "{report}");
    }
}

#[test]
fn missing_ffmpeg_is_a_clear_error_before_any_work() {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("outputs-noffmpeg");
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = Tingshu::new(["build"])
        .arg(sample_book())
        .arg("--out")
        .arg(&out_dir)
        .args(["--format", "mp3", "--ffmpeg", "/nonexistent/ffmpeg"])
        .output();
    fails(&out, 2, "Debian package `ffmpeg`");
    assert!(!out_dir.exists(), "output written despite the error");
}

#[test]
fn unknown_format_is_bad_input() {
    let out = Tingshu::new(["build"])
        .arg(sample_book())
        .args(["--format", "wav,flac"])
        .output();
    fails(&out, 2, "unknown format 'flac'");
}

/// Decodes any audio file to mono f32 at `rate` with `gain_db` applied.
fn decode(path: &Path, rate: u32, gain_db: f64) -> AudioClip {
    let out = run(Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args([
            "-af",
            &format!("volume={gain_db}dB"),
            "-ac",
            "1",
            "-ar",
            &rate.to_string(),
        ])
        .args(["-f", "f32le", "-"]));
    let samples = out
        .stdout
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    AudioClip::new(samples, rate)
}

#[test]
fn a_chapter_of_two_voices_at_different_rates_and_levels_comes_out_even() {
    if !ffmpeg::tools() {
        return;
    }
    let b = built();
    // Real espeak-ng speech from the build, re-made as two "backends": one at
    // 16 kHz and 14 dB quieter (like an HTTP voice), one at 22.05 kHz and
    // 6 dB louder than the mixer left it.
    let chapters = &b.manifest.chapters;
    let quiet = decode(&b.book_dir.join(&chapters[0].file), 16000, -14.0);
    let loud = decode(&b.book_dir.join(&chapters[1].file), 22050, 6.0);
    let segments = vec![
        SegmentAudio {
            kind: PauseKind::Narration,
            paragraph: 1,
            voice: "espeak".into(),
            chunks: vec![(Boundary::Sentence, loud)],
        },
        SegmentAudio {
            kind: PauseKind::Dialogue,
            paragraph: 1,
            voice: "http".into(),
            chunks: vec![(Boundary::Sentence, quiet)],
        },
    ];
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("two-voices.wav");
    let mixed = mix_chapter_file(&MixConfig::default(), segments, &path).unwrap();
    let reader = hound::WavReader::open(&path).unwrap();
    assert_eq!(reader.spec().sample_rate, 24000);
    assert_eq!(reader.spec().channels, 1);
    let (whole, peak) = ffmpeg_loudness(&path);
    assert!((whole - TARGET_LUFS).abs() <= 1.0, "{whole}");
    assert!(peak <= -1.0, "{peak}");
    // Each voice's own stretch, cut out and measured by ffmpeg.
    let mut levels = Vec::new();
    for &(start, end) in &mixed.spans {
        let part = path.with_file_name(format!("two-voices-{start}.wav"));
        run(Command::new("ffmpeg")
            .args(["-v", "error", "-y", "-i"])
            .arg(&path)
            .args(["-af", &format!("atrim={start}:{end}")])
            .arg(&part));
        levels.push(ffmpeg_loudness(&part).0);
    }
    eprintln!("two voices: whole {whole} LUFS, peak {peak} dBTP, per voice {levels:?}");
    for level in &levels {
        assert!((level - TARGET_LUFS).abs() <= 1.0, "{levels:?}");
    }
    assert!((levels[0] - levels[1]).abs() <= 1.0, "{levels:?}");
}

#[test]
fn the_narrator_can_read_each_chapter_title_first() {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("outputs-title");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let voices = root.join("voices.toml");
    let default = std::fs::read_to_string(paths::repo().join("voices/espeak.toml")).unwrap();
    let with_title = default.replace("speak_title = false", "speak_title = true");
    assert_ne!(
        with_title, default,
        "voices/espeak.toml lost its speak_title line"
    );
    std::fs::write(&voices, with_title).unwrap();
    let out = root.join("out");
    ok(&Tingshu::new(["build"])
        .arg(sample_book())
        .arg("--out")
        .arg(&out)
        .arg("--voices")
        .arg(&voices)
        .args(["--chapters", "2"])
        .output());
    let book_dir = out.join("灯塔守夜人");
    let manifest = Manifest::read(&book_dir.join("manifest.json")).unwrap();
    let chapter = &manifest.chapters[0];
    let first = &chapter.segments[0];
    assert_eq!(first.text, chapter.title);
    assert_eq!(first.voice, "narrator");
    assert!(
        first.end_s > first.start_s + 0.3,
        "title not spoken: {first:?}"
    );
    let pause = MixConfig::default().pauses.paragraph_ms as f64 / 1000.0;
    assert!((chapter.segments[1].start_s - first.end_s - pause).abs() < 0.002);
    let srt = std::fs::read_to_string(book_dir.join(&chapter.file).with_extension("srt")).unwrap();
    assert_eq!(srt_cues(&srt)[0].2, chapter.title);
}
