//! A whole book into its folder (`tingshu build`): every selected chapter
//! → `NNNN-<title>.wav` with SRT/LRC subtitles, MP3/Opus per chapter and
//! one M4B as asked, plus `manifest.json`, an M3U playlist and
//! `report.txt`; with the audiobookshelf layout also `cover.jpg` and
//! `desc.txt`. The files besides the WAVs are made by [`crate::outputs`],
//! as `batch run` and queue workers make them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc;

use super::RenderSession;
use super::cover::{self, is_jpeg};
use crate::audio::encode::{EncodeError, Encoder, Format};
use crate::book::{Book, Cover};
use crate::error::error_chain;
use crate::fsutil::{PidLock, TryPidLock, holder_note};
use crate::manifest::{Manifest, ManifestChapter};
use crate::names::{Layout, book_dir, sanitize_file_name};
use crate::outputs::{BookFile, BookOutputs, ChapterFile, OutputsError};
use crate::pipeline::ChapterOutcome;
use crate::progress::Progress;

/// Folder name used with `--layout audiobookshelf` when no author is given.
const UNKNOWN_AUTHOR: &str = "Unknown Author";

/// Where and how a book is written.
#[derive(Debug, Clone)]
pub struct BookTarget {
    /// The output directory; the book gets a folder in it.
    pub out: PathBuf,
    pub layout: Layout,
    pub formats: Vec<Format>,
    /// Cover embedded in encoded files (else the book's own, if any).
    pub cover: Option<PathBuf>,
    /// Author tag and audiobookshelf folder (else the book's own).
    pub author: Option<String>,
    /// The ffmpeg program, for encoded formats and covers.
    pub ffmpeg: PathBuf,
    /// 1-based chapters to render, in order.
    pub chapters: Vec<usize>,
    /// Base URL of a podcast feed (checked): `feed.xml` in the book's
    /// folder and `feeds.opml` in `out` are written when given.
    pub feed_url: Option<String>,
}

/// Why a book could not be rendered at all (nothing was written).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("--cover {}: no such file", path.display())]
    NoCover { path: PathBuf },
    #[error("--cover {}: not a usable image: {source}", path.display())]
    BadCover {
        path: PathBuf,
        #[source]
        source: EncodeError,
    },
    #[error(transparent)]
    Encoder(#[from] EncodeError),
    #[error("cannot create output directory {}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Outputs(#[from] OutputsError),
    #[error(
        "{} is being rendered by another tingshu process{holder} (lock {} is held); run again when it has finished",
        dir.display(),
        path.display()
    )]
    Busy {
        dir: PathBuf,
        path: PathBuf,
        /// ` (pid N)` when the holder wrote its id.
        holder: String,
    },
}

/// The lock a render holds on its book directory, so that a second
/// `build` of the same book into the same place stops at once instead of
/// clearing the first one's half-written files.
pub const BUILD_LOCK: &str = ".tingshu-build.lock";

/// Tries the book directory's [`BUILD_LOCK`] without waiting (`build` and
/// `batch run` both take it); the file is removed when the lock is let go,
/// so a finished render leaves nothing hidden behind.
pub fn try_lock_book_dir(book_dir: &Path) -> std::io::Result<TryPidLock> {
    PidLock::try_acquire(&book_dir.join(BUILD_LOCK), true)
}

/// Takes the book directory's [`BUILD_LOCK`] without waiting, or says who
/// holds it ([`BuildError::Busy`]).
pub fn lock_book_dir(book_dir: &Path) -> Result<PidLock, BuildError> {
    let path = book_dir.join(BUILD_LOCK);
    match try_lock_book_dir(book_dir) {
        Ok(TryPidLock::Taken(lock)) => Ok(lock),
        Ok(TryPidLock::Busy(pid)) => Err(BuildError::Busy {
            dir: book_dir.to_owned(),
            path,
            holder: holder_note(pid),
        }),
        Err(source) => Err(BuildError::Write { path, source }),
    }
}

/// What a book's render did.
#[derive(Debug)]
pub struct BookRun {
    pub book_dir: PathBuf,
    /// Chapters asked for.
    pub selected: usize,
    /// Chapters written, in order.
    pub written: Vec<ManifestChapter>,
    /// One line per chapter or file that failed.
    pub failures: Vec<String>,
    /// Segments flagged for their pace in `report.txt`.
    pub flagged: usize,
    /// Requests sent to backends (every attempt counts).
    pub requests: usize,
    /// Chunks taken from the cache instead.
    pub cache_hits: usize,
}

impl BookRun {
    /// Seconds of audio written.
    pub fn audio_s(&self) -> f64 {
        self.written.iter().map(|c| c.duration_s).sum()
    }

    /// The summary line, as printed and in `report.txt`.
    pub fn summary(&self) -> String {
        format!(
            "{} of {} chapters rendered into {} ({} audio)",
            self.written.len(),
            self.selected,
            self.book_dir.display(),
            crate::progress::format_duration(self.audio_s())
        )
    }
}

/// What to write besides the WAVs, resolved once from the target.
struct Outputs {
    /// Formats, tags, cover and encoder of the files made from the WAVs.
    book: BookOutputs,
    /// The book's own cover, used when no `--cover` is given.
    book_cover: Option<Cover>,
    layout: Layout,
}

impl Outputs {
    /// Checks formats, ffmpeg and the cover before anything is rendered.
    /// The book's metadata (EPUB) fills in what the target leaves out.
    fn resolve(target: &BookTarget, book: &Book, sample_rate: u32) -> Result<Outputs, BuildError> {
        let mut outputs = BookOutputs::new(&book.script.book, sample_rate, &target.formats);
        if let Some(cover) = target.cover.as_ref().filter(|c| !c.is_file()) {
            return Err(BuildError::NoCover {
                path: cover.clone(),
            });
        }
        let book_cover = match &target.cover {
            Some(_) => None,
            None => book.metadata.cover.clone().filter(|c| !c.bytes.is_empty()),
        };
        // cover.jpg is converted by ffmpeg when the cover is not a JPEG.
        let converts_cover = target.layout == Layout::Audiobookshelf
            && (target.cover.as_ref().is_some_and(|c| !is_jpeg(c))
                || book_cover
                    .as_ref()
                    .is_some_and(|c| !c.bytes.starts_with(cover::JPEG_MAGIC)));
        if outputs.needs_encoder() || converts_cover {
            outputs.encoder = Some(Encoder::new(&target.ffmpeg)?);
        }
        if let (Some(cover), Some(encoder)) = (&target.cover, &outputs.encoder) {
            encoder
                .check_image(cover)
                .map_err(|source| BuildError::BadCover {
                    path: cover.clone(),
                    source,
                })?;
        }
        outputs.cover.clone_from(&target.cover);
        outputs.set_metadata(&book.metadata, target.author.as_deref());
        Ok(Outputs {
            book: outputs,
            book_cover,
            layout: target.layout,
        })
    }

    /// Writes the book's own cover to `.cover.<ext>` in `book_dir` and uses
    /// it from then on; returns that file so it can be removed afterwards.
    fn place_book_cover(&mut self, book_dir: &Path) -> Result<Option<PathBuf>, BuildError> {
        let Some(book_cover) = self.book_cover.take() else {
            return Ok(None);
        };
        let stem = book_dir.join(".cover");
        let path =
            cover::stage(&book_cover, &stem, self.book.encoder.as_ref()).map_err(|source| {
                BuildError::Write {
                    path: stem.clone(),
                    source,
                }
            })?;
        self.book.cover.clone_from(&path);
        Ok(path)
    }

    /// Where the book goes.
    fn book_dir(&self, out: &Path, book: &Book) -> PathBuf {
        match self.layout {
            Layout::Plain => book_dir(out, &book.stem),
            Layout::Audiobookshelf => out
                .join(sanitize_file_name(
                    self.book.author.as_deref().unwrap_or(UNKNOWN_AUTHOR),
                ))
                .join(sanitize_file_name(&self.book.title)),
        }
    }
}

/// Renders `target.chapters` of the session's book into its folder. Bad
/// input (cover, ffmpeg, an output folder that cannot be made) is an `Err`
/// before anything is written; chapters and files that fail are listed in
/// [`BookRun::failures`] while the rest is written.
pub async fn render(session: &RenderSession, target: &BookTarget) -> Result<BookRun, BuildError> {
    render_observed(session, target, None, &mut |_| {}).await
}

/// Like [`render`], with `observe` told of each chapter as it is written
/// (before its subtitles and encoded files) and, when given, the book
/// directory's lock already taken ([`lock_book_dir`]) by the caller, so
/// that it can refuse at once when another process renders the book.
pub async fn render_observed(
    session: &RenderSession,
    target: &BookTarget,
    lock: Option<PidLock>,
    observe: &mut (dyn FnMut(&ChapterOutcome) + Send),
) -> Result<BookRun, BuildError> {
    let book = &session.book;
    let renderer = &session.renderer;
    let mut outputs = Outputs::resolve(target, book, renderer.config.mix.sample_rate)?;
    outputs
        .book
        .skipped_chapters
        .clone_from(&book.script.skipped);
    let count = book.script.chapters.len();

    let book_dir = outputs.book_dir(&target.out, book);
    outputs.book.feed = target
        .feed_url
        .as_deref()
        .map(|base| crate::feed::FeedLink::new(base, &target.out, &book_dir));
    let wav_dir = book_dir.join(outputs.book.wav_dir());
    let created = !book_dir.exists();
    std::fs::create_dir_all(&wav_dir).map_err(|source| BuildError::CreateDir {
        path: wav_dir.clone(),
        source,
    })?;
    // Held to the end of the render (released when the file is dropped or
    // the process ends, however it ends).
    let _lock = match lock {
        Some(lock) => lock,
        None => lock_book_dir(&book_dir)?,
    };
    // What a killed run left half-written (its ffmpeg died with it).
    crate::fsutil::remove_stale_parts(&book_dir);
    crate::fsutil::remove_stale_parts(&wav_dir);
    let book_cover_file = outputs.place_book_cover(&book_dir)?;
    let jobs = session.chapter_jobs(&wav_dir, &target.chapters);

    // Per-chapter encoding runs beside synthesis on its own thread.
    let (encode_tx, encode_rx) = mpsc::channel::<ManifestChapter>();
    let encoder_thread = outputs.book.needs_encoder().then(|| {
        let book = outputs.book.clone();
        let dir = book_dir.clone();
        std::thread::spawn(move || encode_chapters(&book, &dir, count, encode_rx))
    });

    let mut progress = Progress::new(jobs.len());
    let mut written = Vec::new();
    let mut failures = Vec::new();
    renderer
        .render(jobs, |outcome| {
            observe(&outcome);
            match outcome.result {
                Ok(chapter) => {
                    progress.chapter_done(&outcome.title, Some(chapter.duration_s));
                    for file in [ChapterFile::Srt, ChapterFile::Lrc] {
                        if let Err(e) =
                            outputs
                                .book
                                .write_chapter_file(&book_dir, &chapter, file, Some(count))
                        {
                            failures.push(chapter_failure(chapter.index, &chapter.title, &e));
                        }
                    }
                    let _ = encode_tx.send(chapter.clone());
                    written.push(chapter);
                }
                Err(e) => {
                    progress.chapter_done(&outcome.title, None);
                    failures.push(chapter_failure(outcome.index, &outcome.title, &e));
                }
            }
        })
        .await;
    drop(encode_tx);
    progress.finish();
    // Chapters finish in any order; the report lists them in the book's.
    written.sort_by_key(|c| c.index);
    if let Some(thread) = encoder_thread {
        match thread.join() {
            Ok(errors) => failures.extend(errors),
            Err(_) => failures.push("the encoder thread stopped unexpectedly".to_owned()),
        }
    }

    if written.is_empty() && created {
        let _ = std::fs::remove_dir_all(&book_dir);
    }
    if !written.is_empty() {
        let manifest =
            outputs
                .book
                .refresh_book(&book_dir, written.clone(), Some(&[BookFile::Manifest]))?;
        for file in outputs.book.book_files() {
            if file == BookFile::Manifest {
                continue;
            }
            if let Err(e) = outputs.book.write_book_file(&book_dir, &manifest, file) {
                failures.push(error_chain(&e));
            }
        }
        if let Err(e) = finish_book(&outputs, &book_dir, book, &manifest) {
            failures.push(error_chain(&e));
        }
        if outputs.book.feed.is_some()
            && let Err(e) = crate::feed::write_opml(&target.out)
        {
            failures.push(error_chain(&e));
        }
    }
    if let Some(path) = book_cover_file {
        let _ = std::fs::remove_file(path);
    }

    session.flush();
    tracing::debug!("book files written, cache flushed");
    let stats = &renderer.client.stats;
    let mut run = BookRun {
        book_dir,
        selected: target.chapters.len(),
        written,
        failures,
        flagged: 0,
        requests: stats.requests.load(Ordering::Relaxed),
        cache_hits: stats.cache_hits.load(Ordering::Relaxed),
    };
    if run.book_dir.is_dir() {
        run.flagged =
            super::report::write(&run.book_dir, &run.summary(), &run.failures, &run.written)
                .map_err(|source| BuildError::Write {
                    path: run.book_dir.join(super::report::REPORT),
                    source,
                })?;
    }
    Ok(run)
}

/// The failure line of a chapter.
pub fn chapter_failure(index: usize, title: &str, error: &dyn std::error::Error) -> String {
    format!("chapter {index} ({title}): {}", error_chain(error))
}

/// Encodes each chapter sent into every per-chapter encoded format.
fn encode_chapters(
    outputs: &BookOutputs,
    book_dir: &Path,
    count: usize,
    chapters: mpsc::Receiver<ManifestChapter>,
) -> Vec<String> {
    let files: Vec<ChapterFile> = outputs
        .chapter_files()
        .into_iter()
        .filter(|f| matches!(f, ChapterFile::Encoded(_)))
        .collect();
    let mut errors = Vec::new();
    for chapter in chapters {
        for &file in &files {
            if let Err(e) = outputs.write_chapter_file(book_dir, &chapter, file, Some(count)) {
                errors.push(error_chain(&e));
            }
        }
    }
    errors
}

/// cover.jpg and desc.txt of the audiobookshelf layout.
fn finish_book(
    outputs: &Outputs,
    book_dir: &Path,
    book: &Book,
    manifest: &Manifest,
) -> Result<(), BuildError> {
    if outputs.layout != Layout::Audiobookshelf {
        return Ok(());
    }
    if let Some(cover) = &outputs.book.cover {
        let dest = book_dir.join("cover.jpg");
        match &outputs.book.encoder {
            Some(encoder) if !is_jpeg(cover) => encoder.convert_image(cover, &dest)?,
            _ => {
                std::fs::copy(cover, &dest).map_err(|source| BuildError::Write {
                    path: dest.clone(),
                    source,
                })?;
            }
        }
    }
    write_description(
        book_dir,
        book,
        &outputs.book.title,
        outputs.book.author.as_deref(),
        manifest,
    )
}

/// `desc.txt`: the book's front matter when it has some, else a summary.
fn write_description(
    book_dir: &Path,
    book: &Book,
    title: &str,
    author: Option<&str>,
    manifest: &Manifest,
) -> Result<(), BuildError> {
    let front: Vec<&str> = book
        .script
        .chapters
        .iter()
        .filter(|c| c.number == 0)
        .flat_map(|c| c.segments.iter().map(|s| s.text.as_str()))
        .collect();
    let mut text = if front.is_empty() {
        String::new()
    } else {
        front.join("") + "\n\n"
    };
    let _ = writeln!(
        text,
        "{}{} — {} chapters, {} of audio, read by tingshu.",
        title,
        author.map(|a| format!(" ({a})")).unwrap_or_default(),
        manifest.chapters.len(),
        crate::progress::format_duration(manifest.chapters.iter().map(|c| c.duration_s).sum())
    );
    let path = book_dir.join("desc.txt");
    std::fs::write(&path, text).map_err(|source| BuildError::Write { path, source })
}
