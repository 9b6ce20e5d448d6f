//! The names of what a render writes: the book's folder, chapter files.
//! Titles come from books, so every name is made safe for any file system.

// Doc comments here are clap's help text, where <book> and <stem> are
// literal placeholders, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use std::path::{Path, PathBuf};

/// The hidden folder in a book directory that holds the batch state, the
/// job's lock and the staged cover.
pub const STATE_DIR: &str = ".tingshu-batch";

/// Where `build` puts a book in its output directory (`--layout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Layout {
    /// DIR/<book>/
    Plain,
    /// DIR/<author>/<book>/ with cover.jpg and desc.txt, as Audiobookshelf expects.
    Audiobookshelf,
}

/// Where a book's files go with the plain layout: `OUT/<sanitized stem>/`.
pub fn book_dir(out: &Path, stem: &str) -> PathBuf {
    out.join(sanitize_file_name(stem))
}

/// The common stem of a chapter's files: `NNNN-<sanitized title>`.
pub fn chapter_stem(index: usize, title: &str) -> String {
    format!("{index:04}-{}", sanitize_file_name(title))
}

/// A chapter's WAV file name: `NNNN-<sanitized title>.wav`.
pub fn chapter_file_name(index: usize, title: &str) -> String {
    format!("{}.wav", chapter_stem(index, title))
}

/// Bidi embeddings, overrides, isolates and marks; zero-width characters;
/// the BOM and other invisible format characters.
fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
    )
}

/// Turns a title into a safe file-name part: no path separators, control
/// or reserved characters, no leading dots, at most 60 characters.
pub fn sanitize_file_name(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        // Bidi controls (U+202E turns `txt.exe` into `exe.txt` on screen),
        // zero-width and other invisible format characters: removed.
        if is_invisible_format(c) {
            continue;
        }
        let c = if c.is_control()
            || matches!(c, '/' | '\\' | '<' | '>' | ':' | '"' | '|' | '?' | '*')
        {
            '_'
        } else if c.is_whitespace() {
            ' '
        } else {
            c
        };
        if c == ' ' && (out.is_empty() || out.ends_with(' ')) {
            continue;
        }
        out.push(c);
    }
    let trimmed: String = out
        .trim_start_matches(['.', ' '])
        .trim_end_matches(['.', ' '])
        .chars()
        .take(60)
        .collect();
    let trimmed = trimmed.trim_end_matches(['.', ' ']).replace(' ', "_");
    if trimmed.is_empty() {
        "untitled".to_owned()
    } else {
        trimmed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_titles_become_safe_names() {
        assert_eq!(sanitize_file_name("第一章 风起"), "第一章_风起");
        assert_eq!(sanitize_file_name("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(sanitize_file_name("..."), "untitled");
        assert_eq!(sanitize_file_name("a\u{0}b\tc"), "a_b_c");
        assert_eq!(
            sanitize_file_name("第\u{202E}一章\u{200B}txt.exe"),
            "第一章txt.exe"
        );
        assert_eq!(sanitize_file_name("\u{2066}\u{2069}"), "untitled");
        assert_eq!(sanitize_file_name(&"长".repeat(100)).chars().count(), 60);
        assert!(!sanitize_file_name(".hidden").starts_with('.'));
    }
}
