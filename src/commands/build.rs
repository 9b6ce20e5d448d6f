//! `tingshu build BOOK`: every chapter → `OUT/<stem>/NNNN-<title>.wav` plus
//! `manifest.json`.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::select::ChapterSelection;
use super::{EXIT_OK, EXIT_PARTIAL, sanitize_file_name};
use crate::book::read_book_with_cast;
use crate::cli::BuildArgs;
use crate::config::VoicesConfig;
use crate::manifest::Manifest;
use crate::pipeline::{ChapterJob, Renderer};
use crate::progress::Progress;
use crate::text::Cast;

/// Runs `build`. Bad input is an `Err` (exit 2) before anything is written.
pub async fn run(args: &BuildArgs, worker_program: Option<PathBuf>) -> anyhow::Result<u8> {
    let cast = args.cast.as_deref().map(Cast::load).transpose()?;
    let book = read_book_with_cast(&args.book, cast.as_ref())?;
    let config = VoicesConfig::load(args.voices.as_deref())?;
    let count = book.script.chapters.len();
    let selected = match &args.chapters {
        Some(spec) => ChapterSelection::parse(spec)?.resolve(spec, count)?,
        None => (1..=count).collect(),
    };
    tracing::info!(book = %args.book.display(), encoding = book.encoding, chapters = count, "read book");

    let book_dir = args.out.join(sanitize_file_name(&book.stem));
    let created = !book_dir.exists();
    std::fs::create_dir_all(&book_dir)
        .with_context(|| format!("cannot create output directory {}", book_dir.display()))?;

    let jobs: Vec<ChapterJob> = selected
        .iter()
        .map(|&index| {
            let chapter = book.script.chapters[index - 1].clone();
            let path = book_dir.join(format!(
                "{index:04}-{}.wav",
                sanitize_file_name(&chapter.title)
            ));
            ChapterJob {
                index,
                chapter,
                path,
            }
        })
        .collect();

    let renderer = Renderer::new(config, worker_program);
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
                    "chapter {} ({}): {e}",
                    outcome.index, outcome.title
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

/// Merges newly rendered chapters into the book's manifest (chapters rendered
/// by earlier runs with other `--chapters` stay listed while their files exist).
fn write_manifest(
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
