//! `tingshu build BOOK`: every chapter → `OUT/<stem>/NNNN-<title>.wav` plus
//! `manifest.json`.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::select::ChapterSelection;
use super::{EXIT_OK, EXIT_PARTIAL, sanitize_file_name};
use crate::book::read_book_with_cast;
use crate::cli::BuildArgs;
use crate::config::VoicesConfig;
use crate::frontend::Lexicon;
use crate::manifest::Manifest;
use crate::pipeline::{ChapterJob, Renderer};
use crate::progress::Progress;
use crate::synth::cache::Cache;
use crate::text::Cast;
use crate::text::ScriptChapter;

/// Runs `build`. Bad input is an `Err` (exit 2) before anything is written.
pub async fn run(args: &BuildArgs, worker_program: Option<PathBuf>) -> anyhow::Result<u8> {
    let cast = args.cast.as_deref().map(Cast::load).transpose()?;
    let book = read_book_with_cast(&args.book, cast.as_ref())?;
    let mut config = VoicesConfig::load(args.voices.as_deref())?;
    if let (Some(path), Some(cast)) = (&args.cast, &cast) {
        config.apply_cast(path, cast)?;
    }
    let mut lexicon = args
        .lexicon
        .as_deref()
        .map(Lexicon::load)
        .transpose()?
        .unwrap_or_default();
    book.add_ruby_words(&mut lexicon);
    let count = book.script.chapters.len();
    let selected = match &args.chapters {
        Some(spec) => ChapterSelection::parse(spec)?.resolve(spec, count)?,
        None => (1..=count).collect(),
    };
    tracing::info!(book = %args.book.display(), encoding = book.encoding, chapters = count, "read book");

    let book_dir = book_dir(&args.out, &book.stem);
    let created = !book_dir.exists();
    std::fs::create_dir_all(&book_dir)
        .with_context(|| format!("cannot create output directory {}", book_dir.display()))?;

    let jobs: Vec<ChapterJob> = selected
        .iter()
        .map(|&index| chapter_job(&book_dir, index, &book.script.chapters[index - 1]))
        .collect();

    let cache_dir = args
        .cache
        .clone()
        .unwrap_or_else(|| args.out.join(".cache"));
    let renderer = Renderer::with_cache(config, worker_program, Some(Cache::new(&cache_dir)))
        .with_lexicon(lexicon);
    let mut progress = Progress::new(jobs.len());
    let mut written = Vec::new();
    let mut failures = Vec::new();
    renderer
        .render(jobs, |outcome| match outcome.result {
            Ok(chapter) => {
                progress.chapter_done(&outcome.title, Some(chapter.duration_s));
                written.push(chapter);
            }
            Err(e) => {
                progress.chapter_done(&outcome.title, None);
                failures.push(format!(
                    "chapter {} ({}): {}",
                    outcome.index,
                    outcome.title,
                    super::error_chain(&e)
                ));
            }
        })
        .await;
    progress.finish();

    if written.is_empty() && created {
        let _ = std::fs::remove_dir_all(&book_dir);
    }
    if !written.is_empty() {
        write_manifest(
            &book_dir,
            &book.script.book,
            renderer.config.mix.sample_rate,
            written.clone(),
        )?;
    }
    let audio_s: f64 = written.iter().map(|c| c.duration_s).sum();
    eprintln!(
        "{} of {} chapters rendered into {} ({} audio)",
        written.len(),
        selected.len(),
        book_dir.display(),
        crate::progress::format_duration(audio_s)
    );
    let stats = &renderer.client.stats;
    eprintln!(
        "{} requests sent, {} chunks from the cache in {}",
        stats.requests.load(std::sync::atomic::Ordering::Relaxed),
        stats.cache_hits.load(std::sync::atomic::Ordering::Relaxed),
        cache_dir.display()
    );
    for failure in &failures {
        eprintln!("failed: {failure}");
    }
    // Parts of the book that could not be read were reported while reading.
    Ok(if failures.is_empty() && book.skipped.is_empty() {
        EXIT_OK
    } else {
        EXIT_PARTIAL
    })
}

/// Where a book's files go: `OUT/<sanitized stem>/`.
pub fn book_dir(out: &Path, stem: &str) -> PathBuf {
    out.join(sanitize_file_name(stem))
}

/// A chapter's WAV file name: `NNNN-<sanitized title>.wav`.
pub fn chapter_file_name(index: usize, title: &str) -> String {
    format!("{index:04}-{}.wav", sanitize_file_name(title))
}

/// The render job of chapter `index` (1-based) into `book_dir`.
pub fn chapter_job(book_dir: &Path, index: usize, chapter: &ScriptChapter) -> ChapterJob {
    ChapterJob {
        index,
        chapter: chapter.clone(),
        path: book_dir.join(chapter_file_name(index, &chapter.title)),
    }
}

/// Merges newly rendered chapters into the book's manifest (chapters rendered
/// by earlier runs with other `--chapters` stay listed while their files exist).
pub fn write_manifest(
    book_dir: &Path,
    book: &str,
    sample_rate: u32,
    chapters: Vec<crate::manifest::ManifestChapter>,
) -> anyhow::Result<()> {
    let path = book_dir.join("manifest.json");
    let mut manifest = Manifest::read(&path)
        .filter(|m| m.book == book && m.sample_rate == sample_rate)
        .unwrap_or_else(|| Manifest {
            book: book.to_owned(),
            sample_rate,
            chapters: Vec::new(),
        });
    manifest
        .chapters
        .retain(|c| book_dir.join(&c.file).is_file());
    manifest.merge(chapters);
    manifest
        .write(&path)
        .with_context(|| format!("cannot write {}", path.display()))
}
