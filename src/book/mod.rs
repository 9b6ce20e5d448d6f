//! Reading a book file from disk into its reading script: a TXT file in any
//! supported encoding, or an EPUB (recognised by its content, a zip archive
//! whose `mimetype` says EPUB, or by its `.epub` extension).

use std::path::{Path, PathBuf};

use std::collections::HashMap;

mod folder;

use crate::epub::{self, EpubBook, EpubError};
pub use crate::epub::{Cover, Metadata};
use crate::frontend::lexicon::{Entry, Lexicon, LexiconError};
use crate::text::{Cast, DecodeError, Decoded, Script, SplitOptions, decode};
pub use folder::{SourceError, read_source, source_stem};

/// Why a book file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum BookError {
    #[error("{path}: no such file")]
    Missing { path: PathBuf },
    #[error("{path}: is a directory, not a text file")]
    Directory { path: PathBuf },
    #[error("{path}: cannot read")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}")]
    Decode {
        path: PathBuf,
        #[source]
        source: DecodeError,
    },
    #[error("{path}")]
    Epub {
        path: PathBuf,
        #[source]
        source: EpubError,
    },
}

/// What kind of file the book came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BookFormat {
    Text,
    Epub,
}

/// A book read from disk.
#[derive(Debug, Clone)]
pub struct Book {
    /// File stem, used for the output directory and as a fallback title.
    pub stem: String,
    pub format: BookFormat,
    /// Text encoding of a TXT book; "UTF-8" for EPUB.
    pub encoding: &'static str,
    pub script: Script,
    pub metadata: Metadata,
    /// Ruby base text → its pinyin as the book gives it (EPUB `<ruby>`),
    /// for the lexicon.
    pub readings: Vec<(String, String)>,
    /// Parts of the book that could not be read and were left out, one
    /// line each; the rest of the book is still usable.
    pub skipped: Vec<String>,
    /// Lexicon entries from ruby that hold everywhere in the book: words of
    /// two or more characters always annotated alike, and single characters
    /// annotated alike at every occurrence.
    pub ruby_words: Vec<Entry>,
}

impl Book {
    /// A book of plain text (no metadata, nothing skipped) with its script.
    pub fn from_script(stem: String, encoding: &'static str, script: Script) -> Book {
        Book {
            stem,
            format: BookFormat::Text,
            encoding,
            script,
            metadata: Metadata::default(),
            readings: Vec::new(),
            skipped: Vec::new(),
            ruby_words: Vec::new(),
        }
    }

    /// The lexicon to read this book with: the user's file (if any), with
    /// the book's ruby words below its entries.
    pub fn lexicon(&self, user: Option<&Path>) -> Result<Lexicon, LexiconError> {
        let mut lexicon = user.map(Lexicon::load).transpose()?.unwrap_or_default();
        self.add_ruby_words(&mut lexicon);
        Ok(lexicon)
    }

    /// Adds the ruby words to `lexicon`, below the entries already there.
    pub fn add_ruby_words(&self, lexicon: &mut Lexicon) {
        for entry in &self.ruby_words {
            let known = lexicon.entries().iter().any(|e| e.word == entry.word)
                || lexicon.lookup_simplified(&entry.word).is_some();
            if !known {
                lexicon.insert(entry.clone());
            }
        }
    }
}

/// The ruby readings safe to apply to the whole book (see [`Book::ruby_words`]).
fn ruby_words(
    readings: &[(String, String)],
    annotations: &HashMap<String, usize>,
    script: &Script,
) -> Vec<Entry> {
    let mut by_base: HashMap<&str, Vec<&str>> = HashMap::new();
    for (base, reading) in readings {
        by_base.entry(base).or_default().push(reading);
    }
    let mut entries = Vec::new();
    for (base, reading) in readings {
        if by_base[base.as_str()].len() != 1 {
            continue; // read differently in different places
        }
        let chars = base.chars().count();
        let Some(pinyin) = epub::numbered_pinyin(reading).filter(|p| p.len() == chars) else {
            continue;
        };
        if chars == 1 {
            let c = base.chars().next().unwrap_or_default();
            let occurrences: usize = script
                .chapters
                .iter()
                .flat_map(|ch| &ch.segments)
                .map(|s| s.text.chars().filter(|x| *x == c).count())
                .sum();
            if occurrences > annotations.get(base).copied().unwrap_or(0) {
                continue;
            }
        }
        entries.push(Entry {
            word: base.clone(),
            pinyin: Some(pinyin),
            say: None,
        });
    }
    entries
}

/// A book file, read and decoded but not yet turned into a script.
enum Source {
    Text(Decoded),
    Epub(EpubBook),
}

/// Reads, decodes and splits the book at `path`.
pub fn read_book(path: &Path) -> Result<Book, BookError> {
    read_book_with_cast(path, None)
}

/// Reads, decodes and splits the book at `path`, naming speakers from `cast`.
pub fn read_book_with_cast(path: &Path, cast: Option<&Cast>) -> Result<Book, BookError> {
    read_book_with_options(path, cast, SplitOptions::default())
}

/// [`read_book_with_cast`], split with `options`.
pub fn read_book_with_options(
    path: &Path,
    cast: Option<&Cast>,
    options: SplitOptions,
) -> Result<Book, BookError> {
    let (stem, source) = read_file(path)?;
    Ok(match source {
        Source::Text(decoded) => {
            let script = Script::from_text_with_options(&decoded.text, &stem, cast, options);
            Book::from_script(stem, decoded.encoding, script)
        }
        Source::Epub(book) => {
            let script = Script::from_chapters_with_cast(book.chapters, &stem, cast);
            Book {
                ruby_words: ruby_words(&book.readings, &book.annotations, &script),
                script,
                stem,
                format: BookFormat::Epub,
                encoding: "UTF-8",
                metadata: book.metadata,
                readings: book.readings,
                skipped: book.skipped,
            }
        }
    })
}

/// Reads and decodes the book at `path`: its file stem and decoded text.
/// An EPUB's text is its chapters, each title on a line before its
/// paragraphs.
pub fn read_text(path: &Path) -> Result<(String, Decoded), BookError> {
    let (stem, source) = read_file(path)?;
    let decoded = match source {
        Source::Text(decoded) => decoded,
        Source::Epub(book) => {
            let mut text = String::new();
            for chapter in &book.chapters {
                for line in std::iter::once(&chapter.title).chain(&chapter.paragraphs) {
                    text.push_str(line);
                    text.push('\n');
                }
            }
            Decoded {
                text,
                encoding: "UTF-8",
                repairs: None,
                regions: Vec::new(),
            }
        }
    };
    Ok((stem, decoded))
}

fn read_file(path: &Path) -> Result<(String, Source), BookError> {
    let path_buf = || path.to_owned();
    if path.is_dir() {
        return Err(BookError::Directory { path: path_buf() });
    }
    let bytes = std::fs::read(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => BookError::Missing { path: path_buf() },
        _ => BookError::Io {
            path: path_buf(),
            source,
        },
    })?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "book".to_owned());
    let epub_extension = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("epub"));
    let source = if epub_extension || bytes.starts_with(b"PK\x03\x04") {
        let book = epub::read_epub(&bytes, &stem).map_err(|source| BookError::Epub {
            path: path_buf(),
            source,
        })?;
        Source::Epub(book)
    } else {
        let decoded = decode(&bytes).map_err(|source| BookError::Decode {
            path: path_buf(),
            source,
        })?;
        if !decoded.regions.is_empty() {
            let ranges: Vec<String> = decoded
                .regions
                .iter()
                .map(|r| format!("bytes {}–{} {}", r.start, r.end, r.encoding))
                .collect();
            tracing::warn!(
                "{}: the file changes encoding part way; each part read with its own: {}",
                path.display(),
                ranges.join(", ")
            );
        }
        if let Some(r) = &decoded.repairs {
            tracing::warn!(
                "{}: {} bad byte sequence(s) in {} text left out; the first at byte offset {} (line {})",
                path.display(),
                r.count,
                decoded.encoding,
                r.offset,
                r.line
            );
        }
        Source::Text(decoded)
    };
    Ok((stem, source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ruby_words_go_below_the_users_lexicon() {
        let mut book = Book::from_script("书".into(), "UTF-8", Script::from_text("银行。", "书"));
        let entry = |word: &str, pinyin: &str| Entry {
            word: word.to_owned(),
            pinyin: Some(vec![pinyin.to_owned()]),
            say: None,
        };
        book.ruby_words = vec![entry("银", "yin2"), entry("行", "hang2")];
        let mut lexicon = Lexicon::parse("\"行\" = \"xing2\"", Path::new("l.toml")).unwrap();
        book.add_ruby_words(&mut lexicon);
        let reading = |w: &str| lexicon.lookup_simplified(w).and_then(|e| e.pinyin.clone());
        assert_eq!(reading("银"), Some(vec!["yin2".to_owned()]));
        assert_eq!(reading("行"), Some(vec!["xing2".to_owned()]));
    }
}
