//! `tingshu build BOOK`: every chapter → `OUT/<stem>/NNNN-<title>.wav` with
//! SRT/LRC subtitles, optional MP3/Opus per chapter and one M4B, plus
//! `manifest.json`, an M3U playlist and `report.txt`. The files besides the
//! WAVs are made by [`crate::outputs`], shared with `batch`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use anyhow::Context;

use super::select::ChapterSelection;
use super::{EXIT_OK, EXIT_PARTIAL, sanitize_file_name};
use crate::audio::encode::Encoder;
use crate::book::{Book, Cover, read_book_with_options};
use crate::cli::{BuildArgs, Layout};
use crate::config::VoicesConfig;
use crate::error::error_chain;
use crate::manifest::{Manifest, ManifestChapter};
pub use crate::outputs::BookInfo;
use crate::outputs::{BookFile, BookOutputs, ChapterFile, chapter_stem};
use crate::pipeline::{ChapterJob, Renderer};
use crate::progress::Progress;
use crate::synth::cache::Cache;
use crate::text::is_han;
use crate::text::{Cast, ScriptChapter};

/// Folder name used with `--layout audiobookshelf` when no author is given.
const UNKNOWN_AUTHOR: &str = "Unknown Author";

/// What to write besides the WAVs, resolved once from the arguments.
struct Outputs {
    /// Formats, tags, cover and encoder of the files made from the WAVs.
    book: BookOutputs,
    /// The book's own cover, used when no `--cover` is given; written to a
    /// hidden file in the book directory by [`Outputs::place_book_cover`].
    book_cover: Option<Cover>,
    layout: Layout,
}

impl Outputs {
    /// Checks formats, ffmpeg and the cover before anything is rendered.
    /// The book's metadata (EPUB) fills in what the arguments leave out.
    fn resolve(args: &BuildArgs, book: &Book, sample_rate: u32) -> anyhow::Result<Outputs> {
        let mut outputs = BookOutputs::new(&book.script.book, sample_rate, &args.format);
        if let Some(cover) = args.cover.as_ref().filter(|c| !c.is_file()) {
            anyhow::bail!("--cover {}: no such file", cover.display());
        }
        let book_cover = match &args.cover {
            Some(_) => None,
            None => book.metadata.cover.clone().filter(|c| !c.bytes.is_empty()),
        };
        // cover.jpg is converted by ffmpeg when the cover is not a JPEG.
        let converts_cover = args.layout == Layout::Audiobookshelf
            && (args.cover.as_ref().is_some_and(|c| !is_jpeg(c))
                || book_cover
                    .as_ref()
                    .is_some_and(|c| !c.bytes.starts_with(JPEG_MAGIC)));
        if outputs.needs_encoder() || converts_cover {
            outputs.encoder = Some(Encoder::new(&args.ffmpeg)?);
        }
        if let (Some(cover), Some(encoder)) = (&args.cover, &outputs.encoder) {
            encoder.check_image(cover).map_err(|e| {
                anyhow::anyhow!("--cover {}: not a usable image: {e}", cover.display())
            })?;
        }
        outputs.cover.clone_from(&args.cover);
        outputs.set_metadata(&book.metadata, args.author.as_deref());
        Ok(Outputs {
            book: outputs,
            book_cover,
            layout: args.layout,
        })
    }

    /// Writes the book's own cover to `.cover.<ext>` in `book_dir` and uses
    /// it from then on; returns that file so it can be removed afterwards.
    fn place_book_cover(&mut self, book_dir: &Path) -> anyhow::Result<Option<PathBuf>> {
        let Some(cover) = self.book_cover.take() else {
            return Ok(None);
        };
        let path = book_dir.join(format!(".cover.{}", cover_extension(&cover)));
        std::fs::write(&path, &cover.bytes)
            .with_context(|| format!("cannot write {}", path.display()))?;
        // The book's own cover is not the user's doing: one ffmpeg cannot
        // read is left out (with a warning) rather than failing every encode.
        if let Some(Err(e)) = self.book.encoder.as_ref().map(|enc| enc.check_image(&path)) {
            tracing::warn!(error = %e, "the book's cover cannot be used; files are made without it");
            let _ = std::fs::remove_file(&path);
            return Ok(None);
        }
        self.book.cover = Some(path.clone());
        Ok(Some(path))
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

/// Runs `build`. Bad input is an `Err` (exit 2) before anything is written.
pub async fn run(args: &BuildArgs, worker_program: Option<PathBuf>) -> anyhow::Result<u8> {
    // The front end's tables load while the book is read.
    crate::frontend::warm_up();
    let cast = args.cast.as_deref().map(Cast::load).transpose()?;
    let options = crate::text::SplitOptions {
        keep_notes: args.keep_notes,
    };
    let book = read_book_with_options(&args.book, cast.as_ref(), options)?;
    let mut config = VoicesConfig::load(args.voices.as_deref())?;
    if let (Some(path), Some(cast)) = (&args.cast, &cast) {
        config.apply_cast(path, cast)?;
    }
    let lexicon = book.lexicon(args.lexicon.as_deref())?;
    let mut outputs = Outputs::resolve(args, &book, config.mix.sample_rate)?;
    outputs
        .book
        .skipped_chapters
        .clone_from(&book.script.skipped);
    let count = book.script.chapters.len();
    let selected = match &args.chapters {
        Some(spec) => ChapterSelection::parse(spec)?.resolve(spec, count)?,
        None => (1..=count).collect(),
    };
    tracing::info!(book = %args.book.display(), encoding = book.encoding, chapters = count, "read book");

    // Checked before anything is created: a bad `--cache` leaves no output.
    let cache_dir = args
        .cache
        .clone()
        .unwrap_or_else(|| args.out.join(".cache"));
    let cache = Cache::open(&cache_dir)?;

    let book_dir = outputs.book_dir(&args.out, &book);
    let wav_dir = book_dir.join(outputs.book.wav_dir());
    let created = !book_dir.exists();
    std::fs::create_dir_all(&wav_dir)
        .with_context(|| format!("cannot create output directory {}", wav_dir.display()))?;
    // What a killed run left half-written (its ffmpeg died with it).
    crate::fsutil::remove_stale_parts(&book_dir);
    crate::fsutil::remove_stale_parts(&wav_dir);
    cache.remove_stale_temps();
    let book_cover_file = outputs.place_book_cover(&book_dir)?;

    let jobs: Vec<ChapterJob> = selected
        .iter()
        .map(|&index| chapter_job(&wav_dir, index, &book.script.chapters[index - 1]))
        .collect();

    // Per-chapter encoding runs beside synthesis on its own thread.
    let (encode_tx, encode_rx) = mpsc::channel::<ManifestChapter>();
    let encoder_thread = outputs.book.needs_encoder().then(|| {
        let book = outputs.book.clone();
        let dir = book_dir.clone();
        std::thread::spawn(move || encode_chapters(&book, &dir, count, encode_rx))
    });

    // Entries are written by an idle-priority thread while synthesis and
    // mixing keep the cores busy; `flush` below waits for the rest.
    let cache = cache.write_behind().with_context(|| {
        format!(
            "cache {}: cannot start its writer thread",
            cache_dir.display()
        )
    })?;
    let renderer =
        Renderer::with_cache(config, worker_program, Some(cache.clone())).with_lexicon(lexicon);
    let mut progress = Progress::new(jobs.len());
    let mut written = Vec::new();
    let mut failures = Vec::new();
    renderer
        .render(jobs, |outcome| match outcome.result {
            Ok(chapter) => {
                progress.chapter_done(&outcome.title, Some(chapter.duration_s));
                for file in [ChapterFile::Srt, ChapterFile::Lrc] {
                    if let Err(e) =
                        outputs
                            .book
                            .write_chapter_file(&book_dir, &chapter, file, Some(count))
                    {
                        failures.push(format!(
                            "chapter {} ({}): {}",
                            chapter.index,
                            chapter.title,
                            error_chain(&e)
                        ));
                    }
                }
                let _ = encode_tx.send(chapter.clone());
                written.push(chapter);
            }
            Err(e) => {
                progress.chapter_done(&outcome.title, None);
                failures.push(format!(
                    "chapter {} ({}): {}",
                    outcome.index,
                    outcome.title,
                    error_chain(&e)
                ));
            }
        })
        .await;
    drop(encode_tx);
    progress.finish();
    if let Some(thread) = encoder_thread {
        match thread.join() {
            Ok(errors) => failures.extend(errors),
            Err(_) => failures.push("the encoder thread stopped unexpectedly".to_owned()),
        }
    }

    if written.is_empty() && created {
        let _ = std::fs::remove_dir_all(&book_dir);
    }
    let mut manifest = None;
    if !written.is_empty() {
        manifest = Some(outputs.book.refresh_book(
            &book_dir,
            written.clone(),
            Some(&[BookFile::Manifest]),
        )?);
    }
    if let Some(manifest) = &manifest {
        for file in outputs.book.book_files() {
            if file == BookFile::Manifest {
                continue;
            }
            if let Err(e) = outputs.book.write_book_file(&book_dir, manifest, file) {
                failures.push(error_chain(&e));
            }
        }
        if let Err(e) = finish_book(&outputs, &book_dir, &book, manifest) {
            failures.push(format!("{e:#}"));
        }
    }
    if let Some(path) = book_cover_file {
        let _ = std::fs::remove_file(path);
    }

    cache.flush();
    tracing::debug!("book files written, cache flushed");
    let flags = quality_flags(&written);
    let audio_s: f64 = written.iter().map(|c| c.duration_s).sum();
    let summary = format!(
        "{} of {} chapters rendered into {} ({} audio)",
        written.len(),
        selected.len(),
        book_dir.display(),
        crate::progress::format_duration(audio_s)
    );
    eprintln!("{summary}");
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
    if !flags.is_empty() {
        eprintln!(
            "{} segment(s) with unusual pace (possibly truncated or garbled audio), see report.txt",
            flags.len()
        );
    }
    if book_dir.is_dir() {
        let report = crate::redact::redact(&report_text(&summary, &failures, &flags, &written));
        let path = book_dir.join("report.txt");
        std::fs::write(&path, report)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    // Parts of the book that could not be read were reported while reading.
    Ok(if failures.is_empty() && book.skipped.is_empty() {
        EXIT_OK
    } else {
        EXIT_PARTIAL
    })
}

/// Where a book's files go with the plain layout: `OUT/<sanitized stem>/`.
pub fn book_dir(out: &Path, stem: &str) -> PathBuf {
    out.join(sanitize_file_name(stem))
}

/// A chapter's WAV file name: `NNNN-<sanitized title>.wav`.
pub fn chapter_file_name(index: usize, title: &str) -> String {
    format!("{}.wav", chapter_stem(index, title))
}

/// The render job of chapter `index` (1-based) into `dir`.
pub fn chapter_job(dir: &Path, index: usize, chapter: &ScriptChapter) -> ChapterJob {
    ChapterJob {
        index,
        chapter: chapter.clone(),
        path: dir.join(chapter_file_name(index, &chapter.title)),
    }
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
) -> anyhow::Result<()> {
    if outputs.layout == Layout::Audiobookshelf {
        if let Some(cover) = &outputs.book.cover {
            let dest = book_dir.join("cover.jpg");
            match &outputs.book.encoder {
                Some(encoder) if !is_jpeg(cover) => encoder.convert_image(cover, &dest)?,
                _ => {
                    std::fs::copy(cover, &dest)
                        .with_context(|| format!("cannot write {}", dest.display()))?;
                }
            }
        }
        write_description(
            book_dir,
            book,
            &outputs.book.title,
            outputs.book.author.as_deref(),
            manifest,
        )?;
    }
    Ok(())
}

/// The first bytes of every JPEG file.
const JPEG_MAGIC: &[u8] = &[0xFF, 0xD8];

/// Whether `path` starts like a JPEG file.
fn is_jpeg(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 2];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == JPEG_MAGIC)
}

/// File extension for a cover image, from its bytes, else its media type.
pub(crate) fn cover_extension(cover: &Cover) -> &'static str {
    let media = cover.media_type.to_ascii_lowercase();
    if cover.bytes.starts_with(JPEG_MAGIC) {
        "jpg"
    } else if cover.bytes.starts_with(b"\x89PNG") {
        "png"
    } else if cover.bytes.starts_with(b"GIF8") {
        "gif"
    } else if media.contains("webp") {
        "webp"
    } else if media.contains("svg") {
        "svg"
    } else {
        "img"
    }
}

/// `desc.txt`: the book's front matter when it has some, else a summary.
fn write_description(
    book_dir: &Path,
    book: &Book,
    title: &str,
    author: Option<&str>,
    manifest: &Manifest,
) -> anyhow::Result<()> {
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
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// Merges newly rendered chapters into the book's manifest (chapters rendered
/// by earlier runs with other `--chapters` stay listed while their files
/// exist) and returns it. `file` names are relative to the book directory.
pub fn write_manifest(
    book_dir: &Path,
    wav_dir: &str,
    book: &str,
    sample_rate: u32,
    chapters: Vec<ManifestChapter>,
) -> anyhow::Result<Manifest> {
    write_manifest_with_info(book_dir, wav_dir, book, sample_rate, chapters, None)
}

/// [`write_manifest`], also setting the book's title, author and language
/// when `info` is given (`None` keeps what an earlier run wrote).
pub fn write_manifest_with_info(
    book_dir: &Path,
    wav_dir: &str,
    book: &str,
    sample_rate: u32,
    chapters: Vec<ManifestChapter>,
    info: Option<&BookInfo>,
) -> anyhow::Result<Manifest> {
    let path = book_dir.join(crate::outputs::MANIFEST);
    let manifest =
        crate::outputs::merge_manifest(book_dir, wav_dir, book, sample_rate, chapters, info);
    manifest
        .write(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(manifest)
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

fn report_text(
    summary: &str,
    failures: &[String],
    flags: &[QualityFlag],
    written: &[ManifestChapter],
) -> String {
    let mut out = format!("tingshu build report\n{summary}\n\n");
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
