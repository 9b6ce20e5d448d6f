//! `tingshu preview [TEXT] [--book FILE --chapter N --paragraphs A-B]`:
//! one passage, read with the book's casting and lexicon, into a WAV file.
//! A whole chapter previews as the same bytes `build` writes for it.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::{EXIT_OK, EXIT_PARTIAL};
use crate::cli::PreviewArgs;
use crate::pipeline::ChapterJob;
use crate::session::{BookInput, CacheSpec, Listeners, RenderSession, SessionSpec};
use crate::text::{Script, ScriptChapter};

/// Players tried by `--play`, with their arguments to read a WAV from stdin.
const PLAYERS: [(&str, &[&str]); 4] = [
    ("aplay", &["-q", "-"]),
    ("paplay", &[]),
    ("pw-play", &["-"]),
    (
        "ffplay",
        &["-nodisp", "-autoexit", "-loglevel", "quiet", "-i", "-"],
    ),
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
    let to_stdout = args.output.as_os_str() == "-";
    let dir = if to_stdout {
        Path::new(".")
    } else {
        args.output
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
    };
    let cache = match &args.cache {
        Some(cache) => cache.clone(),
        None if to_stdout => PathBuf::from("output/.cache"),
        None => dir.join(".cache"),
    };
    let session = RenderSession::open(&SessionSpec {
        book,
        split: crate::text::SplitOptions {
            keep_notes: args.keep_notes,
        },
        voices: args.voices.clone(),
        cast: args.cast.clone(),
        lexicon: args.lexicon.clone(),
        overrides: None,
        cache: Some(CacheSpec {
            location: cache,
            write_behind: true,
        }),
        worker_program,
        listeners: Listeners::One,
    })?;
    let chapter = passage(args, &session.book.script)?;
    if chapter.segments.is_empty() {
        bail!("nothing to read: the passage has no speakable text");
    }
    session.ready()?;
    let config = &session.renderer.config;
    for segment in &chapter.segments {
        let voice = config.segment_voice(segment);
        let kind = serde_json::to_value(segment.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        // With the audio on stdout, the script goes to stderr.
        let line = match &segment.speaker {
            Some(speaker) => format!("[{kind} {speaker} → {voice}] {}", segment.text),
            None => format!("[{kind} → {voice}] {}", segment.text),
        };
        if to_stdout {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    if to_stdout || args.play || args.book.is_none() {
        return stream(args, &session, &chapter, to_stdout).await;
    }
    // A chapter (or paragraphs) of a book: mixed as `build` mixes it.
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
    Ok(EXIT_OK)
}

/// Renders the passage chunk by chunk ([`crate::session::stream`]): to
/// stdout as a streamed WAV (`-o -`), into a player as it comes (`--play`),
/// and into the output file, written whole once the passage is complete
/// (the same samples whichever way).
async fn stream(
    args: &PreviewArgs,
    session: &RenderSession,
    chapter: &ScriptChapter,
    to_stdout: bool,
) -> anyhow::Result<u8> {
    use futures::StreamExt;
    use tokio::io::AsyncWriteExt;

    let rate = session.renderer.config.mix.sample_rate;
    let header = crate::session::stream::wav_stream_header(rate);
    let mut stdout = to_stdout.then(tokio::io::stdout);
    if let Some(out) = stdout.as_mut() {
        out.write_all(&header)
            .await
            .context("cannot write to stdout")?;
        out.flush().await.context("cannot write to stdout")?;
    }
    let mut player = if args.play {
        start_player().await
    } else {
        None
    };
    if let Some((_, input)) = player.as_mut()
        && input.write_all(&header).await.is_err()
    {
        player = None;
    }
    let mut pcm = Vec::new();
    let mut parts = std::pin::pin!(crate::session::stream::stream_pcm(
        &session.renderer,
        chapter,
        to_stdout || args.play
    ));
    let mut failed = None;
    while let Some(part) = parts.next().await {
        let part = match part {
            Ok(part) => part,
            Err(e) => {
                failed = Some(e);
                break;
            }
        };
        if let Some(out) = stdout.as_mut() {
            out.write_all(&part)
                .await
                .context("cannot write to stdout")?;
            out.flush().await.context("cannot write to stdout")?;
        }
        if let Some((_, input)) = player.as_mut()
            && input.write_all(&part).await.is_err()
        {
            player = None;
        }
        if !to_stdout {
            pcm.extend_from_slice(&part);
        }
    }
    session.flush();
    if let Some((mut child, input)) = player {
        drop(input);
        let _ = child.wait().await;
    }
    if let Some(e) = failed {
        eprintln!("failed: {e}");
        return Ok(EXIT_PARTIAL);
    }
    if to_stdout {
        if let Some(out) = stdout.as_mut() {
            out.flush().await.context("cannot write to stdout")?;
        }
        fill_in_sizes_of_stdout();
        return Ok(EXIT_OK);
    }
    let samples = pcm.len() as u64 / 2;
    let mut wav = crate::audio::wav::header(rate, samples);
    wav.extend_from_slice(&pcm);
    if let Some(dir) = args.output.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create directory {}", dir.display()))?;
    }
    crate::fsutil::write_atomic_synced(&args.output, &wav)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", args.output.display()))?;
    eprintln!(
        "wrote {} ({:.1} s)",
        args.output.display(),
        samples as f64 / f64::from(rate)
    );
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
    chapter.append_passage(chapters);
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

/// When stdout is a regular file (`-o - > f.wav`), writes the real sizes
/// into the streamed WAV's header, so the file is the one `-o f.wav`
/// writes. A pipe keeps the placeholders.
fn fill_in_sizes_of_stdout() {
    use std::io::{Seek, SeekFrom, Write};
    use std::os::fd::AsFd;
    let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return;
    };
    let mut file = std::fs::File::from(fd);
    let Ok(meta) = file.metadata() else { return };
    let Ok(data) = u32::try_from(meta.len().saturating_sub(44)) else {
        return;
    };
    if !meta.is_file() || meta.len() < 44 {
        return;
    }
    let mut patch = |at: u64, value: u32| {
        file.seek(SeekFrom::Start(at))?;
        file.write_all(&value.to_le_bytes())
    };
    let _ = patch(4, data.saturating_add(36)).and_then(|()| patch(40, data));
    let _ = file.seek(SeekFrom::End(0));
}

/// The first player of [`PLAYERS`] found, reading a WAV from its stdin.
async fn start_player() -> Option<(tokio::process::Child, tokio::process::ChildStdin)> {
    for (program, args) in PLAYERS {
        let child = tokio::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn();
        match child {
            Ok(mut child) => {
                let input = child.stdin.take()?;
                return Some((child, input));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                eprintln!("cannot run {program}: {e}");
                return None;
            }
        }
    }
    let names: Vec<&str> = PLAYERS.iter().map(|(p, _)| *p).collect();
    eprintln!(
        "no audio player found (tried {}); the preview is written all the same",
        names.join(", ")
    );
    None
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
