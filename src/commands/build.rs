//! `tingshu build BOOK`: the book's chapters into `OUT/<stem>/` through a
//! [`RenderSession`] and [`session::book::render`], then a summary.

use std::path::PathBuf;

use super::select::ChapterSelection;
use super::{EXIT_OK, EXIT_PARTIAL};
use crate::cli::BuildArgs;
use crate::session::book::BookTarget;
use crate::session::{self, BookInput, CacheSpec, Listeners, RenderSession, SessionSpec};

/// Runs `build`. Bad input is an `Err` (exit 2) before anything is written.
pub async fn run(args: &BuildArgs, worker_program: Option<PathBuf>) -> anyhow::Result<u8> {
    // Checked before anything is created: a bad `--cache` leaves no output.
    let feed_url = match &args.feed_url {
        Some(url) => {
            let base = crate::feed::check_base("--feed-url", url)?;
            crate::feed::check_formats("--feed-url", &args.format)?;
            Some(base)
        }
        None => None,
    };
    let cache_dir = args
        .cache
        .clone()
        .unwrap_or_else(|| args.out.join(".cache"));
    let session = RenderSession::open(&SessionSpec {
        book: BookInput::File(args.book.clone()),
        split: crate::text::SplitOptions {
            keep_notes: args.keep_notes,
        },
        voices: args.voices.clone(),
        cast: args.cast.clone(),
        lexicon: args.lexicon.clone(),
        overrides: args.overrides.clone(),
        cache: Some(CacheSpec {
            location: cache_dir.clone(),
            write_behind: true,
        }),
        worker_program,
        listeners: Listeners::None,
    })?;
    let book = &session.book;
    let count = book.script.chapters.len();
    let chapters = match &args.chapters {
        Some(spec) => ChapterSelection::parse(spec)?.resolve(spec, count)?,
        None => (1..=count).collect(),
    };
    tracing::info!(book = %args.book.display(), encoding = book.encoding, chapters = count, "read book");
    let target = BookTarget {
        out: args.out.clone(),
        layout: args.layout,
        formats: args.format.clone(),
        cover: args.cover.clone(),
        author: args.author.clone(),
        ffmpeg: args.ffmpeg.clone(),
        chapters,
        feed_url,
    };
    session.ready()?;
    let run = session::book::render(&session, &target).await?;
    eprintln!("{}", run.summary());
    eprintln!(
        "{} requests sent, {} chunks from the cache in {}",
        run.requests,
        run.cache_hits,
        cache_dir.display()
    );
    for failure in &run.failures {
        eprintln!("failed: {failure}");
    }
    if run.flagged > 0 {
        eprintln!(
            "{} segment(s) with unusual pace (possibly truncated or garbled audio), see report.txt",
            run.flagged
        );
    }
    // Parts of the book that could not be read were reported while reading.
    Ok(if run.failures.is_empty() && book.skipped.is_empty() {
        EXIT_OK
    } else {
        EXIT_PARTIAL
    })
}
