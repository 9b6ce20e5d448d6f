//! `tingshu preview [TEXT] [--book FILE --chapter N --paragraphs A-B]`:
//! one passage, read with the book's casting and lexicon, into a WAV file.
//! A whole chapter previews as the same bytes `build` writes for it.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::{EXIT_OK, EXIT_PARTIAL};
use crate::cli::PreviewArgs;
use crate::pipeline::ChapterJob;
use crate::session::{BookInput, CacheSpec, RenderSession, SessionSpec};
use crate::text::{Script, ScriptChapter};

/// Players tried by `--play`, with their arguments before the file.
const PLAYERS: [(&str, &[&str]); 5] = [
    ("aplay", &["-q"]),
    ("paplay", &[]),
    ("pw-play", &[]),
    ("ffplay", &["-nodisp", "-autoexit", "-loglevel", "quiet"]),
    ("afplay", &[]),
];

pub async fn run(args: &PreviewArgs, worker_program: Option<PathBuf>) -> anyhow::Result<u8> {
    let book = match (&args.book, args.text.as_deref()) {
        (Some(_), Some(_)) => bail!("give either TEXT or --book, not both"),
        (Some(book), None) => BookInput::File(book.clone()),
        (None, _) if args.chapter.is_some() || args.paragraphs.is_some() => {
            bail!("--chapter and --paragraphs need --book")
        }
        (None, Some("-")) => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read the text from stdin")?;
            BookInput::Text {
                text,
                name: "preview".into(),
            }
        }
        (None, Some(text)) => BookInput::Text {
            text: text.to_owned(),
            name: "preview".into(),
        },
        (None, None) => bail!("give the TEXT to read (or - for stdin), or --book FILE"),
    };
    let dir = args
        .output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let cache = args.cache.clone().unwrap_or_else(|| dir.join(".cache"));
    let session = RenderSession::open(&SessionSpec {
        book,
        split: crate::text::SplitOptions {
            keep_notes: args.keep_notes,
        },
        voices: args.voices.clone(),
        cast: args.cast.clone(),
        lexicon: args.lexicon.clone(),
        cache: Some(CacheSpec {
            location: cache,
            write_behind: true,
        }),
        worker_program,
    })?;
    let chapter = passage(args, &session.book.script)?;
    if chapter.segments.is_empty() {
        bail!("nothing to read: the passage has no speakable text");
    }
    let config = &session.renderer.config;
    for segment in &chapter.segments {
        let voice = config.voice_for(segment.kind, segment.speaker.as_deref());
        let kind = serde_json::to_value(segment.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        match &segment.speaker {
            Some(speaker) => println!("[{kind} {speaker} → {voice}] {}", segment.text),
            None => println!("[{kind} → {voice}] {}", segment.text),
        }
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create directory {}", dir.display()))?;
    let job = ChapterJob {
        index: args.chapter.unwrap_or(1),
        chapter,
        path: args.output.clone(),
    };
    let outcome = session.render_one(job).await;
    session.flush();
    match outcome.result {
        Ok(chapter) => {
            eprintln!(
                "wrote {} ({:.1} s)",
                args.output.display(),
                chapter.duration_s
            );
        }
        Err(e) => {
            eprintln!("failed: {}", crate::error::error_chain(&e));
            return Ok(EXIT_PARTIAL);
        }
    }
    if args.play {
        play(&args.output).await;
    }
    Ok(EXIT_OK)
}

/// The passage to read, as one chapter of the reading script: the chapter
/// (and paragraphs) asked for of a book, or all of a text given directly.
fn passage(args: &PreviewArgs, script: &Script) -> anyhow::Result<ScriptChapter> {
    if args.book.is_some() {
        let count = script.chapters.len();
        let n = args.chapter.unwrap_or(1);
        if n == 0 || n > count {
            bail!("--chapter {n}: the book has {count} chapters");
        }
        let mut chapter = script.chapters[n - 1].clone();
        if let Some(spec) = &args.paragraphs {
            let (first, last) = paragraph_range(spec)?;
            chapter
                .segments
                .retain(|s| (first..=last).contains(&s.paragraph));
            if chapter.segments.is_empty() {
                bail!("--paragraphs {spec}: no such paragraphs in chapter {n}");
            }
        }
        return Ok(chapter);
    }
    let mut chapters = script.chapters.iter().cloned();
    let mut chapter = chapters.next().unwrap_or(ScriptChapter {
        number: 0,
        title: "preview".into(),
        volume: None,
        segments: Vec::new(),
        skipped: Vec::new(),
    });
    // A pasted text with headings still previews as one passage.
    let mut offset = chapter.segments.last().map_or(0, |s| s.paragraph);
    for more in chapters {
        let last = more.segments.last().map_or(0, |s| s.paragraph);
        for mut segment in more.segments {
            segment.paragraph += offset;
            chapter.segments.push(segment);
        }
        offset += last;
    }
    Ok(chapter)
}

/// `A-B` or `A` (1-based, inclusive).
fn paragraph_range(spec: &str) -> anyhow::Result<(usize, usize)> {
    let number = |s: &str| {
        s.trim()
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .with_context(|| format!("--paragraphs {spec}: not a range like 3-5"))
    };
    let (first, last) = match spec.split_once('-') {
        Some((a, b)) => (number(a)?, number(b)?),
        None => (number(spec)?, number(spec)?),
    };
    if first > last {
        bail!("--paragraphs {spec}: the range is backwards");
    }
    Ok((first, last))
}

async fn play(path: &Path) {
    for (program, args) in PLAYERS {
        let status = tokio::process::Command::new(program)
            .args(args)
            .arg(path)
            .status()
            .await;
        match status {
            Ok(s) if s.success() => return,
            Ok(s) => {
                eprintln!("{program} failed ({s})");
                return;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                eprintln!("cannot run {program}: {e}");
                return;
            }
        }
    }
    let names: Vec<&str> = PLAYERS.iter().map(|(p, _)| *p).collect();
    eprintln!(
        "no audio player found (tried {}); the preview is in {}",
        names.join(", "),
        path.display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraph_ranges() {
        assert_eq!(paragraph_range("3-5").unwrap(), (3, 5));
        assert_eq!(paragraph_range("4").unwrap(), (4, 4));
        assert!(paragraph_range("5-3").is_err());
        assert!(paragraph_range("0").is_err());
        assert!(paragraph_range("a-b").is_err());
    }
}
