//! A book's source: a TXT or EPUB file, or a directory of chapter files
//! (`*.txt`) read in name order, numbers compared by value (`2.txt` before
//! `10.txt`).

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use super::{Book, BookError, read_book_with_options};
use crate::text::Cast;
use crate::text::Script;
use crate::text::SplitOptions;

/// Why a source cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Book(#[from] BookError),
    #[error("{path}: cannot list directory")]
    List {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: directory holds no chapter file (*.txt)")]
    NoChapters { path: PathBuf },
}

/// The name a source's book goes by (output directory, fallback title),
/// known without reading it.
pub fn source_stem(path: &Path) -> String {
    let name = if path.is_dir() {
        path.file_name()
    } else {
        path.file_stem()
    };
    name.map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "book".to_owned())
}

/// Reads a source into a book, naming speakers from `cast`, split with
/// `options`.
pub fn read_source(
    path: &Path,
    cast: Option<&Cast>,
    options: SplitOptions,
) -> Result<Book, SourceError> {
    if !path.is_dir() {
        return Ok(read_book_with_options(path, cast, options)?);
    }
    let files = chapter_files(path)?;
    let mut chapters = Vec::new();
    let mut encodings: Vec<&'static str> = Vec::new();
    let (mut readings, mut skipped) = (Vec::new(), Vec::new());
    for file in &files {
        let book = read_book_with_options(file, cast, options)?;
        if !encodings.contains(&book.encoding) {
            encodings.push(book.encoding);
        }
        chapters.extend(book.script.chapters);
        readings.extend(book.readings);
        skipped.extend(book.skipped);
    }
    for (i, chapter) in chapters.iter_mut().enumerate() {
        chapter.number = i + 1;
    }
    let stem = source_stem(path);
    let encoding = match encodings.as_slice() {
        [one] => one,
        _ => "mixed",
    };
    let script = Script {
        book: stem.clone(),
        chapters,
        skipped: Vec::new(),
        discovered: None,
    };
    Ok(Book {
        readings,
        skipped,
        ..Book::from_script(stem, encoding, script)
    })
}

/// The `*.txt` files of `dir` (not hidden), in natural name order.
fn chapter_files(dir: &Path) -> Result<Vec<PathBuf>, SourceError> {
    let list = |source| SourceError::List {
        path: dir.to_owned(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(list)? {
        let path = entry.map_err(list)?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let is_txt = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("txt"));
        if is_txt && !name.starts_with('.') && path.is_file() {
            files.push(path);
        }
    }
    if files.is_empty() {
        return Err(SourceError::NoChapters {
            path: dir.to_owned(),
        });
    }
    files.sort_by(|a, b| {
        natural_cmp(
            &a.file_name().unwrap_or_default().to_string_lossy(),
            &b.file_name().unwrap_or_default().to_string_lossy(),
        )
    });
    Ok(files)
}

/// Compares names with runs of ASCII digits compared by value.
fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a, b);
    loop {
        match (a.chars().next(), b.chars().next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let da = a.len() - a.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                let db = b.len() - b.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                let (na, nb) = (&a[..da], &b[..db]);
                let (ta, tb) = (na.trim_start_matches('0'), nb.trim_start_matches('0'));
                let order = ta
                    .len()
                    .cmp(&tb.len())
                    .then_with(|| ta.cmp(tb))
                    .then_with(|| na.len().cmp(&nb.len()));
                if order != Ordering::Equal {
                    return order;
                }
                a = &a[da..];
                b = &b[db..];
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(&y);
                }
                a = &a[x.len_utf8()..];
                b = &b[y.len_utf8()..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order() {
        let mut names = vec![
            "10.txt", "2.txt", "1.txt", "b.txt", "a10.txt", "a9.txt", "02.txt",
        ];
        names.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            names,
            [
                "1.txt", "2.txt", "02.txt", "10.txt", "a9.txt", "a10.txt", "b.txt"
            ]
        );
    }

    #[test]
    fn directory_of_chapter_files_reads_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("连载");
        std::fs::create_dir(&src).unwrap();
        std::fs::write(src.join("10.txt"), "第十章 远航\n船离开了港口。\n").unwrap();
        std::fs::write(src.join("2.txt"), "第二章 灯\n灯亮了一整夜。\n").unwrap();
        std::fs::write(src.join("notes.md"), "不是章节\n").unwrap();
        std::fs::write(src.join(".hidden.txt"), "第三章 藏\n不读。\n").unwrap();
        std::fs::write(src.join("1.txt"), "海边很安静。\n").unwrap();
        let book = read_source(&src, None, SplitOptions::default()).unwrap();
        assert_eq!(book.stem, "连载");
        let titles: Vec<_> = book
            .script
            .chapters
            .iter()
            .map(|c| c.title.as_str())
            .collect();
        assert_eq!(titles, ["1", "第二章 灯", "第十章 远航"]);
        let numbers: Vec<_> = book.script.chapters.iter().map(|c| c.number).collect();
        assert_eq!(numbers, [1, 2, 3]);

        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        assert!(matches!(
            read_source(&empty, None, SplitOptions::default()),
            Err(SourceError::NoChapters { .. })
        ));
    }
}
