//! `tingshu preview` and `tingshu voices` through the real binary with the
//! embedded espeak-ng voices.

use std::path::Path;
use std::process::Output;

use crate::support::cli::{Tingshu, fails};
use crate::support::{paths, wav};

fn tingshu(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let run = Tingshu::new(args)
        .dir(dir)
        .env("TINGSHU_VOICES", paths::repo().join("voices/espeak.toml"))
        .env_remove("TINGSHU_CACHE");
    match stdin {
        Some(text) => run.stdin(text),
        None => run,
    }
    .output()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn preview_prints_the_script_and_writes_the_default_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = tingshu(
        dir.path(),
        &["preview", "她问：“灯还亮着吗？”他点点头。"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // 她, named nowhere: a woman nobody named, read by the female voice.
    assert_eq!(
        text(&out.stdout),
        "[narration → narrator] 她问：\n[dialogue → female] “灯还亮着吗？”\n[narration → narrator] 他点点头。\n"
    );
    let wav = dir.path().join("output/preview.wav");
    assert!(wav::duration_s(&wav) > 1.5);
    // The chunks were cached beside it.
    assert!(dir.path().join("output/.cache").is_dir());
}

#[test]
fn preview_reads_stdin_and_passages_of_a_book() {
    let dir = tempfile::tempdir().unwrap();
    let out = tingshu(
        dir.path(),
        &["preview", "-", "-o", "a.wav"],
        Some("海风很大。\n"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "[narration → narrator] 海风很大。\n");

    let book = dir.path().join("book.txt");
    std::fs::write(
        &book,
        "第一章 起\n第一段。\n第二段。\n第二章 承\n甲段落。\n乙段落。\n丙段落。\n",
    )
    .unwrap();
    let out = tingshu(
        dir.path(),
        &[
            "preview",
            "--book",
            "book.txt",
            "--chapter",
            "2",
            "--paragraphs",
            "2-3",
            "-o",
            "b.wav",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "[narration → narrator] 乙段落。\n[narration → narrator] 丙段落。\n"
    );
    assert!(dir.path().join("b.wav").is_file());

    for (args, message) in [
        (
            vec!["preview", "--book", "book.txt", "--chapter", "9"],
            "--chapter 9: the book has 2 chapters",
        ),
        (
            vec!["preview", "--book", "book.txt", "--paragraphs", "7-8"],
            "--paragraphs 7-8: no such paragraphs in chapter 1",
        ),
        (vec!["preview"], "give the TEXT to read"),
        (vec!["preview", "……"], "nothing to read"),
    ] {
        fails(&tingshu(dir.path(), &args, None), 2, message);
    }
}

#[test]
fn play_without_a_player_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let out = Tingshu::new(["preview", "好。", "--play", "-o", "p.wav"])
        .dir(dir.path())
        .env("PATH", empty.path())
        .env("TINGSHU_VOICES", paths::repo().join("voices/espeak.toml"))
        .output();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no audio player found (tried aplay, paplay, pw-play, ffplay)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn voices_lists_and_checks() {
    let dir = tempfile::tempdir().unwrap();
    let out = tingshu(dir.path(), &["voices"], None);
    assert_eq!(out.status.code(), Some(0));
    let listing = text(&out.stdout);
    assert!(
        listing.contains("backends:\n  local        espeak\n"),
        "{listing}"
    );
    let out = tingshu(dir.path(), &["voices", "--check", "narrator"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(
        report.starts_with("narrator: ok via local — latency "),
        "{report}"
    );
    assert!(report.contains(" s of audio at 22050 Hz"), "{report}");
    let out = tingshu(dir.path(), &["voices", "--check", "nobody"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no voice 'nobody' (known: dialogue, female, narrator)"));
}

#[test]
fn a_streamed_preview_holds_the_samples_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    // A first sentence of at most 12 characters is not split for a listener.
    let passage = "风从海上吹来。他把灯塔的门关紧了，她问：“还亮着吗？”";
    let file = tingshu(dir.path(), &["preview", passage, "-o", "f.wav"], None);
    assert_eq!(file.status.code(), Some(0), "{}", text(&file.stderr));
    let written = std::fs::read(dir.path().join("f.wav")).unwrap();
    // To a pipe: the header's sizes are placeholders, the samples the same.
    let piped = tingshu(dir.path(), &["preview", passage, "-o", "-"], None);
    assert_eq!(piped.status.code(), Some(0), "{}", text(&piped.stderr));
    assert_eq!(&piped.stdout[40..44], &u32::MAX.to_le_bytes());
    assert!(written.len() > 44 + 24_000, "{} bytes", written.len());
    assert_eq!(piped.stdout[44..], written[44..]);
    // The script goes to stderr when the audio is on stdout.
    assert!(text(&piped.stderr).contains("[narration → narrator] 风从海上吹来"));
    // To a file: the sizes are filled in, the bytes those of `-o f.wav`.
    let target = dir.path().join("s.wav");
    let status = Tingshu::new(["preview", passage, "-o", "-"])
        .dir(dir.path())
        .env("TINGSHU_VOICES", paths::repo().join("voices/espeak.toml"))
        .env_remove("TINGSHU_CACHE")
        .command()
        .stdout(std::fs::File::create(&target).unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(std::fs::read(&target).unwrap(), written);
    let reader = hound::WavReader::open(&target).unwrap();
    assert_eq!(reader.len() as usize, (written.len() - 44) / 2);
}
