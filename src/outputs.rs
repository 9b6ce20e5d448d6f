//! The files made from rendered chapters, in one place for `build`, `batch`
//! and the queue worker:
//!
//! - per chapter ([`ChapterFile`]): SRT and LRC subtitles timed from the
//!   manifest, and MP3/Opus files encoded from the chapter's WAV;
//! - per book ([`BookFile`]): `manifest.json`, the M4B with one chapter mark
//!   per chapter, and an M3U playlist of the chapter files.
//!
//! [`BookOutputs`] holds what these files are made with (formats, tags,
//! cover, encoder), resolved once by the command; [`BookOutputs::refresh_book`]
//! rewrites the book-level files, [`BookOutputs::write_chapter_file`] one file
//! of a chapter. Every file is written to a temporary name and renamed into
//! place, so a reader never sees a truncated file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::audio::encode::{BookChapter, EncodeError, Encoder, Format, Tags};
use crate::audio::subtitle::{self, Cue, LrcTags};
use crate::manifest::{Manifest, ManifestChapter};
use crate::names::{chapter_stem, sanitize_file_name};

/// Name of the manifest in a book directory.
pub const MANIFEST: &str = "manifest.json";

/// Folder, inside the book directory, of the chapter WAVs when `wav` is not
/// one of the requested formats (they are still needed for the M4B and for
/// later incremental runs).
pub const HIDDEN_WAV_DIR: &str = ".wav";

/// Why an output file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputsError {
    #[error("cannot write {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Encode(#[from] EncodeError),
    #[error("{path}: {format} output needs ffmpeg, and no encoder was given")]
    NoEncoder { path: PathBuf, format: &'static str },
    #[error("chapter {index} is not in {MANIFEST}; render it again")]
    NotInManifest { index: usize },
    #[error(transparent)]
    Feed(#[from] crate::feed::FeedError),
}

/// The book's own description, written at the top of `manifest.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BookInfo {
    pub title: Option<String>,
    pub author: Option<String>,
    pub language: Option<String>,
}

/// A file made for one chapter besides its WAV.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChapterFile {
    Srt,
    Lrc,
    /// A per-chapter encoded format (MP3 or Opus).
    Encoded(Format),
}

impl ChapterFile {
    pub fn extension(self) -> &'static str {
        match self {
            ChapterFile::Srt => "srt",
            ChapterFile::Lrc => "lrc",
            ChapterFile::Encoded(format) => format.extension(),
        }
    }

    /// File name of this file for chapter `index` titled `title`.
    pub fn name(self, index: usize, title: &str) -> String {
        format!("{}.{}", chapter_stem(index, title), self.extension())
    }
}

/// A file made for the whole book.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BookFile {
    /// `manifest.json`.
    Manifest,
    /// `<book>.m3u`: the chapters in order, in the first of MP3, Opus, WAV
    /// that was asked for.
    Playlist,
    /// `<book>.m4b`: AAC with one chapter mark per chapter.
    M4b,
    /// `feed.xml`: the podcast feed (see [`crate::feed`]), when a feed
    /// URL is given.
    Feed,
}

/// The ffmpeg encoder of this process: the program named by
/// `TINGSHU_FFMPEG`, else `ffmpeg`, checked (`ffmpeg -version`) once. The
/// error is one line saying how to install it.
pub fn system_encoder() -> Result<Encoder, String> {
    static ENCODER: std::sync::OnceLock<Result<Encoder, String>> = std::sync::OnceLock::new();
    ENCODER
        .get_or_init(|| {
            let program = std::env::var_os("TINGSHU_FFMPEG")
                .filter(|p| !p.is_empty())
                .map_or_else(|| PathBuf::from("ffmpeg"), PathBuf::from);
            Encoder::new(program).map_err(|e| e.to_string())
        })
        .clone()
}

/// What a book's output files are made with.
#[derive(Debug, Clone)]
pub struct BookOutputs {
    /// The reading script's book name: `book` in the manifest and the stem
    /// of the M4B and playlist file names.
    pub book: String,
    pub sample_rate: u32,
    /// Requested formats, sorted, without duplicates.
    pub formats: Vec<Format>,
    /// Present when a format needs ffmpeg.
    pub encoder: Option<Encoder>,
    /// Album and M4B title.
    pub title: String,
    /// Artist tag (and LRC artist).
    pub author: Option<String>,
    /// Cover image embedded in MP3/Opus/M4B files.
    pub cover: Option<PathBuf>,
    /// Written into the manifest; `None` keeps what an earlier run wrote.
    pub info: Option<BookInfo>,
    /// Chapters of the book not in the reading script, for the manifest.
    pub skipped_chapters: Vec<crate::text::SkippedChapter>,
    /// Where the book is published: a `feed.xml` is written when set.
    pub feed: Option<crate::feed::FeedLink>,
}

impl BookOutputs {
    /// Outputs of `formats` (WAV when empty) for the book `book`, titled by
    /// its name, without tags, cover or encoder: the caller sets those it has.
    pub fn new(book: &str, sample_rate: u32, formats: &[Format]) -> BookOutputs {
        let mut formats = formats.to_vec();
        formats.sort();
        formats.dedup();
        if formats.is_empty() {
            formats.push(Format::Wav);
        }
        BookOutputs {
            book: book.to_owned(),
            sample_rate,
            formats,
            encoder: None,
            title: book.to_owned(),
            author: None,
            cover: None,
            info: None,
            skipped_chapters: Vec::new(),
            feed: None,
        }
    }

    /// Album title, artist and the manifest's book information from the
    /// book's own metadata (EPUB OPF); `author`, when given, wins over it.
    pub fn set_metadata(&mut self, metadata: &crate::book::Metadata, author: Option<&str>) {
        self.author = non_blank(author).or_else(|| non_blank(metadata.author.as_deref()));
        if let Some(title) = non_blank(metadata.title.as_deref()) {
            self.title = title;
        }
        self.info = Some(BookInfo {
            title: non_blank(metadata.title.as_deref()),
            author: self.author.clone(),
            language: non_blank(metadata.language.as_deref()),
        });
    }

    pub fn wants(&self, format: Format) -> bool {
        self.formats.contains(&format)
    }

    /// Whether one of the formats is made by ffmpeg.
    pub fn needs_encoder(&self) -> bool {
        self.formats.iter().any(|f| f.needs_ffmpeg())
    }

    /// Folder of the chapter WAVs relative to the book directory: the book
    /// directory itself when WAV was asked for, else [`HIDDEN_WAV_DIR`].
    pub fn wav_dir(&self) -> &'static str {
        if self.wants(Format::Wav) {
            ""
        } else {
            HIDDEN_WAV_DIR
        }
    }

    /// A chapter's WAV path relative to the book directory.
    pub fn wav_file(&self, index: usize, title: &str) -> String {
        let name = format!("{}.wav", chapter_stem(index, title));
        match self.wav_dir() {
            "" => name,
            dir => format!("{dir}/{name}"),
        }
    }

    /// The files made for each chapter besides its WAV: subtitles always,
    /// plus each requested per-chapter encoded format.
    pub fn chapter_files(&self) -> Vec<ChapterFile> {
        let mut files = vec![ChapterFile::Srt, ChapterFile::Lrc];
        files.extend(
            self.formats
                .iter()
                .filter(|f| f.per_chapter() && f.needs_ffmpeg())
                .map(|&f| ChapterFile::Encoded(f)),
        );
        files
    }

    /// The book-level files the formats call for.
    pub fn book_files(&self) -> Vec<BookFile> {
        let mut files = vec![BookFile::Manifest];
        if self.playlist_format().is_some() {
            files.push(BookFile::Playlist);
        }
        if self.wants(Format::M4b) {
            files.push(BookFile::M4b);
        }
        // After the M4B: a feed of only an M4B lists its size.
        if self.feed.is_some() && crate::feed::enclosure_format(&self.formats).is_some() {
            files.push(BookFile::Feed);
        }
        files
    }

    /// File name of a book-level file.
    pub fn book_file_name(&self, file: BookFile) -> String {
        match file {
            BookFile::Manifest => MANIFEST.to_owned(),
            BookFile::Playlist => format!("{}.m3u", sanitize_file_name(&self.book)),
            BookFile::M4b => format!("{}.m4b", sanitize_file_name(&self.book)),
            BookFile::Feed => crate::feed::FEED.to_owned(),
        }
    }

    /// What the feed's channel says about the book.
    pub fn feed_book(&self) -> crate::feed::FeedBook {
        crate::feed::FeedBook {
            title: self.title.clone(),
            author: self.author.clone(),
            language: self.info.as_ref().and_then(|i| i.language.clone()),
            cover: self.cover.clone(),
            m4b_file: self
                .wants(Format::M4b)
                .then(|| self.book_file_name(BookFile::M4b)),
        }
    }

    /// Whether the feed in `book_dir` reads as it would be written now for
    /// `manifest` (true when no feed is made): an encoded file made since
    /// (or re-made at another size) makes it out of date.
    pub fn feed_is_current(&self, book_dir: &Path, manifest: &Manifest) -> bool {
        let (Some(link), Some(format)) = (&self.feed, crate::feed::enclosure_format(&self.formats))
        else {
            return true;
        };
        let path = book_dir.join(crate::feed::FEED);
        let previous = crate::feed::previous_dates(&path);
        let text = crate::feed::render(
            manifest,
            book_dir,
            format,
            &self.feed_book(),
            link,
            None,
            &previous,
            crate::feed::now(),
        );
        std::fs::read(path).is_ok_and(|bytes| bytes == text.as_bytes())
    }

    /// The per-chapter format the playlist lists.
    fn playlist_format(&self) -> Option<Format> {
        [Format::Mp3, Format::Opus, Format::Wav]
            .into_iter()
            .find(|&f| self.wants(f))
    }

    /// Hash of the tags that go into every encoded file and the LRC:
    /// title, author and cover bytes. Files made with another digest are
    /// out of date.
    pub fn tags_digest(&self) -> String {
        let mut h = Sha256::new();
        h.update(b"title\0");
        h.update(self.title.as_bytes());
        h.update(b"\0author\0");
        h.update(self.author.as_deref().unwrap_or("").as_bytes());
        if let Some(cover) = &self.cover {
            h.update(b"\0cover\0");
            match std::fs::read(cover) {
                Ok(bytes) => h.update(bytes),
                // Unlike an empty file: the tags change when it appears.
                Err(_) => h.update(b"\0unreadable"),
            }
        }
        hex::encode(h.finalize())
    }

    /// Whether the playlist in `book_dir` reads as it would be written now
    /// for `manifest` (true when no playlist is made).
    pub fn playlist_is_current(&self, book_dir: &Path, manifest: &Manifest) -> bool {
        let Some(format) = self.playlist_format() else {
            return true;
        };
        let path = book_dir.join(self.book_file_name(BookFile::Playlist));
        let text = playlist(manifest, &self.title, format, Some(book_dir));
        std::fs::read(path).is_ok_and(|bytes| bytes == text.as_bytes())
    }

    /// Writes one file of `chapter` into `book_dir`; `chapter.file` names
    /// its WAV (only the file name counts: the WAV is looked for in
    /// [`BookOutputs::wav_dir`]). `total` is the chapter count written in
    /// the track tag (`None` for a serial that still grows). Returns the
    /// path written.
    pub fn write_chapter_file(
        &self,
        book_dir: &Path,
        chapter: &ManifestChapter,
        file: ChapterFile,
        total: Option<usize>,
    ) -> Result<PathBuf, OutputsError> {
        let path = book_dir.join(file.name(chapter.index, &chapter.title));
        match file {
            ChapterFile::Srt => write_atomic(&path, subtitle::srt(&cues(chapter)).as_bytes())?,
            ChapterFile::Lrc => {
                let tags = LrcTags {
                    title: chapter.title.clone(),
                    album: self.title.clone(),
                    artist: self.author.clone(),
                };
                write_atomic(&path, subtitle::lrc(&cues(chapter), &tags).as_bytes())?;
            }
            ChapterFile::Encoded(format) => {
                let encoder = self.encoder(&path, format)?;
                let wav_name = Path::new(&chapter.file)
                    .file_name()
                    .map(PathBuf::from)
                    .unwrap_or_default();
                let wav = book_dir.join(self.wav_dir()).join(wav_name);
                let tags = Tags {
                    title: chapter.title.clone(),
                    album: self.title.clone(),
                    artist: self.author.clone(),
                    track: Some((chapter.index, total)),
                    cover: self.cover.clone(),
                };
                encoder.encode_chapter(&wav, &path, format, &tags)?;
            }
        }
        Ok(path)
    }

    /// Merges `chapters` (just rendered) into the book's manifest as it is
    /// on disk; see [`merge_manifest`]. Writes nothing.
    pub fn merge_manifest(&self, book_dir: &Path, chapters: Vec<ManifestChapter>) -> Manifest {
        let mut manifest = merge_manifest(
            book_dir,
            self.wav_dir(),
            &self.book,
            self.sample_rate,
            chapters,
            self.info.as_ref(),
        );
        manifest.skipped_chapters.clone_from(&self.skipped_chapters);
        manifest
    }

    /// Refreshes the book-level files of `book_dir` after `chapters` were
    /// rendered (see [`BookOutputs::merge_manifest`]): `manifest.json`, the
    /// playlist and the M4B, each when the formats call for it and it is in
    /// `only` (all of them when `only` is `None`). The M4B and the playlist
    /// list every chapter of the merged manifest, in order. Returns the
    /// merged manifest.
    ///
    /// This is the one book-level step of `build`, `batch` and the queue's
    /// `book` task: the caller decides when it is due, this function decides
    /// what is written.
    pub fn refresh_book(
        &self,
        book_dir: &Path,
        chapters: Vec<ManifestChapter>,
        only: Option<&[BookFile]>,
    ) -> Result<Manifest, OutputsError> {
        let manifest = self.merge_manifest(book_dir, chapters);
        for file in self.book_files() {
            if only.is_some_and(|only| !only.contains(&file)) {
                continue;
            }
            self.write_book_file(book_dir, &manifest, file)?;
        }
        Ok(manifest)
    }

    /// Writes one book-level file from `manifest`.
    pub fn write_book_file(
        &self,
        book_dir: &Path,
        manifest: &Manifest,
        file: BookFile,
    ) -> Result<(), OutputsError> {
        let path = book_dir.join(self.book_file_name(file));
        match file {
            BookFile::Manifest => manifest.write(&path).map_err(|source| OutputsError::Io {
                path: path.clone(),
                source,
            }),
            BookFile::Playlist => {
                let Some(format) = self.playlist_format() else {
                    return Ok(());
                };
                let text = playlist(manifest, &self.title, format, Some(book_dir));
                write_atomic(&path, text.as_bytes())
            }
            BookFile::M4b => {
                let encoder = self.encoder(&path, Format::M4b)?;
                let chapters: Vec<BookChapter> = manifest
                    .chapters
                    .iter()
                    .map(|c| BookChapter {
                        file: book_dir.join(&c.file),
                        title: c.title.clone(),
                    })
                    .collect();
                let tags = Tags {
                    title: self.title.clone(),
                    album: self.title.clone(),
                    artist: self.author.clone(),
                    track: None,
                    cover: self.cover.clone(),
                };
                Ok(encoder.encode_m4b(&chapters, &path, &tags)?)
            }
            BookFile::Feed => {
                let (Some(link), Some(format)) =
                    (&self.feed, crate::feed::enclosure_format(&self.formats))
                else {
                    return Ok(());
                };
                crate::feed::write(manifest, book_dir, format, &self.feed_book(), link)?;
                Ok(())
            }
        }
    }

    fn encoder(&self, path: &Path, format: Format) -> Result<&Encoder, OutputsError> {
        self.encoder
            .as_ref()
            .ok_or_else(|| OutputsError::NoEncoder {
                path: path.to_owned(),
                format: format.extension(),
            })
    }
}

/// Merges `chapters` (just rendered; `file` relative to `wav_dir`, or
/// already prefixed with it) into the manifest of `book_dir` as it is on
/// disk: chapters listed earlier stay while their WAV exists; a manifest of
/// another book or sample rate is replaced. `info` sets the book's title,
/// author and language (`None` keeps what an earlier run wrote). Writes
/// nothing.
pub fn merge_manifest(
    book_dir: &Path,
    wav_dir: &str,
    book: &str,
    sample_rate: u32,
    chapters: Vec<ManifestChapter>,
    info: Option<&BookInfo>,
) -> Manifest {
    let prefix = format!("{wav_dir}/");
    let chapters = chapters.into_iter().map(|mut chapter| {
        if !wav_dir.is_empty() && !chapter.file.starts_with(&prefix) {
            chapter.file = format!("{prefix}{}", chapter.file);
        }
        chapter
    });
    let mut manifest = Manifest::read(&book_dir.join(MANIFEST))
        .filter(|m| m.book == book && m.sample_rate == sample_rate)
        .unwrap_or_else(|| Manifest {
            book: book.to_owned(),
            title: None,
            author: None,
            language: None,
            sample_rate,
            chapters: Vec::new(),
            skipped_chapters: Vec::new(),
        });
    if let Some(info) = info {
        manifest.title.clone_from(&info.title);
        manifest.author.clone_from(&info.author);
        manifest.language.clone_from(&info.language);
    }
    manifest
        .chapters
        .retain(|c| book_dir.join(&c.file).is_file());
    manifest.merge(chapters.collect());
    manifest
}

/// The subtitle cues of a chapter: one per segment.
fn cues(chapter: &ManifestChapter) -> Vec<Cue> {
    chapter
        .segments
        .iter()
        .map(|s| Cue {
            start_s: s.start_s,
            end_s: s.end_s,
            text: s.text.clone(),
        })
        .collect()
}

/// An extended M3U playlist of the manifest's chapters in `format`, with
/// relative paths (UTF-8). With `book_dir`, a chapter whose encoded file is
/// not there (its encode failed; a later run retries it) is listed by its
/// WAV, so the playlist never names a missing file.
fn playlist(manifest: &Manifest, title: &str, format: Format, book_dir: Option<&Path>) -> String {
    let mut out = String::from("#EXTM3U\n#EXTENC:UTF-8\n");
    let _ = writeln!(out, "#PLAYLIST:{}", one_line(title));
    for chapter in &manifest.chapters {
        let encoded = format!(
            "{}.{}",
            chapter_stem(chapter.index, &chapter.title),
            format.extension()
        );
        let missing = book_dir.is_some_and(|dir| !dir.join(&encoded).is_file());
        let file = if format == Format::Wav || missing {
            chapter.file.clone()
        } else {
            encoded
        };
        let _ = writeln!(
            out,
            "#EXTINF:{},{}\n{file}",
            chapter.duration_s.round() as u64,
            one_line(&chapter.title)
        );
    }
    out
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// Writes `bytes` to a temporary file beside `path`, then renames it.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OutputsError> {
    crate::fsutil::write_atomic(path, bytes).map_err(|source| OutputsError::Io {
        path: path.to_owned(),
        source,
    })
}

/// `s` trimmed, unless it is empty.
pub(crate) fn non_blank(s: Option<&str>) -> Option<String> {
    s.map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::ManifestSegment;
    use crate::text::SegmentKind;

    fn chapter(index: usize, title: &str, file: &str, duration_s: f64) -> ManifestChapter {
        ManifestChapter {
            index,
            title: title.to_owned(),
            file: file.to_owned(),
            duration_s,
            loudness_lufs: None,
            segments: vec![ManifestSegment {
                kind: SegmentKind::Narration,
                speaker: None,
                text: "灯亮了。".to_owned(),
                start_s: 0.0,
                end_s: duration_s,
                voice: "narrator".to_owned(),
                fallback: None,
            }],
            skipped: Vec::new(),
        }
    }

    #[test]
    fn formats_decide_the_files() {
        let wav = BookOutputs::new("书", 24000, &[]);
        assert_eq!(wav.formats, [Format::Wav]);
        assert_eq!(wav.wav_dir(), "");
        assert_eq!(wav.chapter_files(), [ChapterFile::Srt, ChapterFile::Lrc]);
        assert_eq!(wav.book_files(), [BookFile::Manifest, BookFile::Playlist]);
        assert!(!wav.needs_encoder());

        let m4b = BookOutputs::new("书", 24000, &[Format::M4b, Format::Mp3, Format::M4b]);
        assert_eq!(m4b.formats, [Format::Mp3, Format::M4b]);
        assert_eq!(m4b.wav_file(3, "第三章 雾"), ".wav/0003-第三章_雾.wav");
        assert_eq!(
            m4b.chapter_files(),
            [
                ChapterFile::Srt,
                ChapterFile::Lrc,
                ChapterFile::Encoded(Format::Mp3)
            ]
        );
        assert_eq!(
            m4b.book_files(),
            [BookFile::Manifest, BookFile::Playlist, BookFile::M4b]
        );
        assert_eq!(m4b.book_file_name(BookFile::M4b), "书.m4b");
        assert!(m4b.needs_encoder());
        assert_eq!(
            BookOutputs::new("书", 24000, &[Format::M4b]).book_files(),
            [BookFile::Manifest, BookFile::M4b]
        );
    }

    #[test]
    fn playlist_lists_the_preferred_format_in_order() {
        let manifest = Manifest {
            book: "书".into(),
            title: None,
            author: None,
            language: None,
            sample_rate: 24000,
            chapters: vec![
                chapter(1, "第一章 雾", ".wav/0001-第一章_雾.wav", 61.4),
                chapter(2, "第二章 灯", ".wav/0002-第二章_灯.wav", 2.6),
            ],
            skipped_chapters: Vec::new(),
        };
        let text = playlist(&manifest, "雾港", Format::Mp3, None);
        assert_eq!(
            text,
            "#EXTM3U\n#EXTENC:UTF-8\n#PLAYLIST:雾港\n#EXTINF:61,第一章 雾\n0001-第一章_雾.mp3\n#EXTINF:3,第二章 灯\n0002-第二章_灯.mp3\n"
        );
        assert!(
            playlist(&manifest, "雾港", Format::Wav, None).contains("\n.wav/0002-第二章_灯.wav\n")
        );
        // Only chapter 1's MP3 exists: chapter 2 is listed by its WAV.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("0001-第一章_雾.mp3"), b"ID3").unwrap();
        let text = playlist(&manifest, "雾港", Format::Mp3, Some(dir.path()));
        assert!(text.contains("\n0001-第一章_雾.mp3\n"), "{text}");
        assert!(text.contains("\n.wav/0002-第二章_灯.wav\n"), "{text}");
    }

    #[test]
    fn refresh_without_an_encoder_writes_manifest_and_playlist_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("0001-雾.wav"), b"RIFF").unwrap();
        let mut outputs = BookOutputs::new("书", 24000, &[Format::Wav]);
        outputs.info = Some(BookInfo {
            title: Some("雾港".into()),
            author: Some("林照".into()),
            language: None,
        });
        let manifest = outputs
            .refresh_book(dir.path(), vec![chapter(1, "雾", "0001-雾.wav", 1.0)], None)
            .unwrap();
        assert_eq!(manifest.author.as_deref(), Some("林照"));
        assert_eq!(Manifest::read(&dir.path().join(MANIFEST)), Some(manifest));
        assert!(dir.path().join("书.m3u").is_file());
        // An encoded format without an encoder is an error naming the file.
        let mp3 = BookOutputs::new("书", 24000, &[Format::Mp3]);
        let err = mp3
            .write_chapter_file(
                dir.path(),
                &chapter(1, "雾", "0001-雾.wav", 1.0),
                ChapterFile::Encoded(Format::Mp3),
                None,
            )
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("0001-雾.mp3: mp3 output needs ffmpeg")
        );
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".part"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn tags_digest_follows_title_author_and_cover() {
        let dir = tempfile::tempdir().unwrap();
        let a = BookOutputs::new("书", 24000, &[Format::Mp3]);
        let mut b = a.clone();
        assert_eq!(a.tags_digest(), b.tags_digest());
        b.author = Some("林照".into());
        assert_ne!(a.tags_digest(), b.tags_digest());
        let mut c = BookOutputs::new("书", 24000, &[Format::Mp3, Format::M4b]);
        assert_eq!(a.tags_digest(), c.tags_digest());
        let cover = dir.path().join("cover.png");
        std::fs::write(&cover, b"one").unwrap();
        c.cover = Some(cover.clone());
        let with_cover = c.tags_digest();
        std::fs::write(&cover, b"two").unwrap();
        assert_ne!(with_cover, c.tags_digest());
        // A missing cover is not an empty one.
        std::fs::write(&cover, b"").unwrap();
        let empty = c.tags_digest();
        std::fs::remove_file(&cover).unwrap();
        assert_ne!(empty, c.tags_digest());
    }
}
