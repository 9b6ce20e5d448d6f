//! Reading a book file from disk into its reading script.

use std::path::{Path, PathBuf};

use crate::text::{Cast, DecodeError, Script, decode};

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
}

/// A book read from disk.
#[derive(Debug, Clone)]
pub struct Book {
    /// File stem, used for the output directory and as a fallback title.
    pub stem: String,
    pub encoding: &'static str,
    pub script: Script,
}

/// Reads, decodes and splits the book at `path`.
pub fn read_book(path: &Path) -> Result<Book, BookError> {
    read_book_with_cast(path, None)
}

/// Reads, decodes and splits the book at `path`, naming speakers from `cast`.
pub fn read_book_with_cast(path: &Path, cast: Option<&Cast>) -> Result<Book, BookError> {
    let (stem, decoded) = read_text(path)?;
    let script = Script::from_text_with_cast(&decoded.text, &stem, cast);
    Ok(Book {
        stem,
        encoding: decoded.encoding,
        script,
    })
}

/// Reads and decodes the book at `path`: its file stem and decoded text.
pub fn read_text(path: &Path) -> Result<(String, crate::text::Decoded), BookError> {
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
    let decoded = decode(&bytes).map_err(|source| BookError::Decode {
        path: path_buf(),
        source,
    })?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "book".to_owned());
    Ok((stem, decoded))
}
