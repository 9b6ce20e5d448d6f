//! `tingshu build BOOK`: every chapter → `OUT/<stem>/NNNN-<title>.wav` with
//! SRT/LRC subtitles, optional MP3/Opus per chapter and one M4B, plus
//! `manifest.json` and `report.txt`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use anyhow::Context;

use super::select::ChapterSelection;
use super::{EXIT_OK, EXIT_PARTIAL, error_chain, sanitize_file_name};
use crate::audio::encode::{BookChapter, Encoder, Format, Tags};
use crate::audio::subtitle::{self, Cue, LrcTags};
use crate::book::{Book, Cover, read_book_with_cast};
use crate::cli::{BuildArgs, Layout};
use crate::config::VoicesConfig;
use crate::frontend::Lexicon;
use crate::manifest::{Manifest, ManifestChapter};

/// The book's own description, written at the top of `manifest.json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BookInfo {
    pub title: Option<String>,
    pub author: Option<String>,
    pub language: Option<String>,
}
use crate::pipeline::{ChapterJob, Renderer};
use crate::progress::Progress;
use crate::synth::cache::Cache;
use crate::text::is_han;
use crate::text::{Cast, ScriptChapter};

/// Folder name used with `--layout audiobookshelf` when no author is given.
const UNKNOWN_AUTHOR: &str = "Unknown Author";

/// What to write besides the WAVs, resolved once from the arguments.
struct Outputs {
    formats: Vec<Format>,
    encoder: Option<Encoder>,
    cover: Option<PathBuf>,
    /// The book's own cover, used when no `--cover` is given; written to a
    /// hidden file in the book directory by [`Outputs::place_book_cover`].
    book_cover: Option<Cover>,
    author: Option<String>,
    /// Album and book title: the book's own title, else its file stem.
    title: String,
    layout: Layout,
}

impl Outputs {
    /// Checks formats, ffmpeg and the cover before anything is rendered.
    /// The book's metadata (EPUB) fills in what the arguments leave out.
    fn resolve(args: &BuildArgs, book: &Book) -> anyhow::Result<Outputs> {
        let mut formats = args.format.clone();
        formats.sort();
        formats.dedup();
        if formats.is_empty() {
            formats.push(Format::Wav);
        }
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
        let encoder = if formats.iter().any(|f| f.needs_ffmpeg()) || converts_cover {
            Some(Encoder::new(&args.ffmpeg)?)
        } else {
            None
        };
        Ok(Outputs {
            formats,
            encoder,
            cover: args.cover.clone(),
            book_cover,
            author: non_blank(args.author.as_deref())
                .or_else(|| non_blank(book.metadata.author.as_deref())),
            title: non_blank(book.metadata.title.as_deref())
                .unwrap_or_else(|| book.script.book.clone()),
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
        self.cover = Some(path.clone());
        Ok(Some(path))
    }

    fn wants(&self, format: Format) -> bool {
        self.formats.contains(&format)
    }

    /// Where the book goes.
    fn book_dir(&self, out: &Path, book: &Book) -> PathBuf {
        match self.layout {
            Layout::Plain => book_dir(out, &book.stem),
            Layout::Audiobookshelf => out
                .join(sanitize_file_name(
                    self.author.as_deref().unwrap_or(UNKNOWN_AUTHOR),
                ))
                .join(sanitize_file_name(&self.title)),
        }
    }

    /// WAVs live beside the other files when asked for, otherwise in a
    /// hidden folder (kept for the M4B and for later partial runs).
    fn wav_dir(&self) -> &'static str {
        if self.wants(Format::Wav) { "" } else { ".wav" }
    }
}

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
    let mut outputs = Outputs::resolve(args, &book)?;
    let count = book.script.chapters.len();
    let selected = match &args.chapters {
        Some(spec) => ChapterSelection::parse(spec)?.resolve(spec, count)?,
        None => (1..=count).collect(),
    };
    tracing::info!(book = %args.book.display(), encoding = book.encoding, chapters = count, "read book");

    let book_dir = outputs.book_dir(&args.out, &book);
    let wav_dir = book_dir.join(outputs.wav_dir());
    let created = !book_dir.exists();
    std::fs::create_dir_all(&wav_dir)
        .with_context(|| format!("cannot create output directory {}", wav_dir.display()))?;
    let book_cover_file = outputs.place_book_cover(&book_dir)?;

    let jobs: Vec<ChapterJob> = selected
        .iter()
        .map(|&index| chapter_job(&wav_dir, index, &book.script.chapters[index - 1]))
        .collect();

    // Per-chapter encoding runs beside synthesis on its own thread.
    let (encode_tx, encode_rx) = mpsc::channel::<EncodeJob>();
    let encoder_thread = outputs.encoder.clone().map(|encoder| {
        let formats: Vec<Format> = outputs
            .formats
            .iter()
            .copied()
            .filter(|f| f.per_chapter() && f.needs_ffmpeg())
            .collect();
        std::thread::spawn(move || encode_chapters(&encoder, &formats, encode_rx))
    });

    let cache_dir = args
        .cache
        .clone()
        .unwrap_or_else(|| args.out.join(".cache"));
    let renderer = Renderer::with_cache(config, worker_program, Some(Cache::open(&cache_dir)?))
        .with_lexicon(lexicon);
    let mut progress = Progress::new(jobs.len());
    let mut written = Vec::new();
    let mut failures = Vec::new();
    let lrc_artist = outputs.author.clone();
    renderer
        .render(jobs, |outcome| match outcome.result {
            Ok(chapter) => {
                progress.chapter_done(&outcome.title, Some(chapter.duration_s));
                let stem = chapter_stem(chapter.index, &chapter.title);
                if let Err(e) = write_subtitles(
                    &book_dir,
                    &stem,
                    &chapter,
                    &outputs.title,
                    lrc_artist.clone(),
                ) {
                    failures.push(format!(
                        "chapter {} ({}): {e:#}",
                        chapter.index, chapter.title
                    ));
                }
                let _ = encode_tx.send(EncodeJob {
                    wav: wav_dir.join(&chapter.file),
                    out_stem: book_dir.join(&stem),
                    tags: Tags {
                        title: chapter.title.clone(),
                        album: outputs.title.clone(),
                        artist: outputs.author.clone(),
                        track: Some((chapter.index, count)),
                        cover: outputs.cover.clone(),
                    },
                });
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
        let info = BookInfo {
            title: non_blank(book.metadata.title.as_deref()),
            author: outputs.author.clone(),
            language: non_blank(book.metadata.language.as_deref()),
        };
        manifest = Some(write_manifest_with_info(
            &book_dir,
            outputs.wav_dir(),
            &book.script.book,
            renderer.config.mix.sample_rate,
            written.clone(),
            Some(&info),
        )?);
    }
    if let Some(manifest) = &manifest
        && let Err(e) = finish_book(&outputs, &book_dir, &book, manifest)
    {
        failures.push(format!("{e:#}"));
    }
    if let Some(path) = book_cover_file {
        let _ = std::fs::remove_file(path);
    }

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
        let report = report_text(&summary, &failures, &flags, &written);
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

/// `NNNN-<title>`: the name every file of a chapter shares.
fn chapter_stem(index: usize, title: &str) -> String {
    format!("{index:04}-{}", sanitize_file_name(title))
}

/// One chapter for the encoder thread.
struct EncodeJob {
    wav: PathBuf,
    /// Path without extension of the encoded files.
    out_stem: PathBuf,
    tags: Tags,
}

fn encode_chapters(
    encoder: &Encoder,
    formats: &[Format],
    jobs: mpsc::Receiver<EncodeJob>,
) -> Vec<String> {
    let mut errors = Vec::new();
    for job in jobs {
        for &format in formats {
            let out = job.out_stem.with_extension(format.extension());
            if let Err(e) = encoder.encode_chapter(&job.wav, &out, format, &job.tags) {
                errors.push(e.to_string());
            }
        }
    }
    errors
}

/// SRT and LRC beside the chapter's audio, timed from the manifest (also
/// written by queue workers).
pub fn write_subtitles(
    dir: &Path,
    stem: &str,
    chapter: &ManifestChapter,
    book: &str,
    artist: Option<String>,
) -> anyhow::Result<()> {
    let cues: Vec<Cue> = chapter
        .segments
        .iter()
        .map(|s| Cue {
            start_s: s.start_s,
            end_s: s.end_s,
            text: s.text.clone(),
        })
        .collect();
    let srt = dir.join(format!("{stem}.srt"));
    std::fs::write(&srt, subtitle::srt(&cues))
        .with_context(|| format!("cannot write {}", srt.display()))?;
    let tags = LrcTags {
        title: chapter.title.clone(),
        album: book.to_owned(),
        artist,
    };
    let lrc = dir.join(format!("{stem}.lrc"));
    std::fs::write(&lrc, subtitle::lrc(&cues, &tags))
        .with_context(|| format!("cannot write {}", lrc.display()))
}

/// The M4B, cover.jpg and desc.txt: things made from the whole book.
fn finish_book(
    outputs: &Outputs,
    book_dir: &Path,
    book: &Book,
    manifest: &Manifest,
) -> anyhow::Result<()> {
    if let Some(encoder) = outputs
        .encoder
        .as_ref()
        .filter(|_| outputs.wants(Format::M4b))
    {
        let chapters: Vec<BookChapter> = manifest
            .chapters
            .iter()
            .map(|c| BookChapter {
                file: book_dir.join(&c.file),
                title: c.title.clone(),
            })
            .collect();
        let out = book_dir.join(format!("{}.m4b", sanitize_file_name(&book.script.book)));
        let tags = Tags {
            title: outputs.title.clone(),
            album: outputs.title.clone(),
            artist: outputs.author.clone(),
            track: None,
            cover: outputs.cover.clone(),
        };
        encoder.encode_m4b(&chapters, &out, &tags)?;
    }
    if outputs.layout == Layout::Audiobookshelf {
        if let Some(cover) = &outputs.cover {
            let dest = book_dir.join("cover.jpg");
            match &outputs.encoder {
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
            &outputs.title,
            outputs.author.as_deref(),
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
fn cover_extension(cover: &Cover) -> &'static str {
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

/// `s` trimmed, unless it is empty.
fn non_blank(s: Option<&str>) -> Option<String> {
    s.map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
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
    mut chapters: Vec<ManifestChapter>,
    info: Option<&BookInfo>,
) -> anyhow::Result<Manifest> {
    for chapter in &mut chapters {
        if !wav_dir.is_empty() {
            chapter.file = format!("{wav_dir}/{}", chapter.file);
        }
    }
    let path = book_dir.join("manifest.json");
    let mut manifest = Manifest::read(&path)
        .filter(|m| m.book == book && m.sample_rate == sample_rate)
        .unwrap_or_else(|| Manifest {
            book: book.to_owned(),
            title: None,
            author: None,
            language: None,
            sample_rate,
            chapters: Vec::new(),
        });
    if let Some(info) = info {
        manifest.title.clone_from(&info.title);
        manifest.author.clone_from(&info.author);
        manifest.language.clone_from(&info.language);
    }
    manifest
        .chapters
        .retain(|c| book_dir.join(&c.file).is_file());
    manifest.merge(chapters);
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
