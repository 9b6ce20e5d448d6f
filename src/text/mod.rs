//! Stage 1 — text: decode a book, split it into chapters, and mark each span
//! as narration or dialogue. The result is the reading script.

pub mod chapter;
pub mod chunk;
pub mod decode;
pub mod quote;

use serde::Serialize;

pub use chapter::Chapter;
pub use decode::{DecodeError, Decoded, decode, is_han};
pub use quote::SegmentKind;

/// One unit of the reading script: a quoted span or one maximal run of
/// narration within a paragraph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Segment {
    pub kind: SegmentKind,
    pub speaker: Option<String>,
    /// 1-based index of the paragraph within its chapter (heading excluded).
    pub paragraph: usize,
    /// Original text, original script.
    pub text: String,
}

/// A chapter of the reading script.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScriptChapter {
    /// 0 for front matter, then 1, 2, … in reading order.
    pub number: usize,
    pub title: String,
    pub segments: Vec<Segment>,
}

/// The whole reading script of a book.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Script {
    pub book: String,
    pub chapters: Vec<ScriptChapter>,
}

impl Script {
    /// Builds the reading script of decoded text; `book` is the title used
    /// for a book without headings (normally the file stem).
    pub fn from_text(text: &str, book: &str) -> Script {
        let chapters = chapter::split_chapters(text, book)
            .into_iter()
            .map(|ch| ScriptChapter {
                number: ch.number,
                title: ch.title,
                segments: segments_of(&ch.paragraphs),
            })
            .filter(|ch| !ch.segments.is_empty())
            .collect();
        Script {
            book: book.to_owned(),
            chapters,
        }
    }

    /// Builds the reading script of chapters split elsewhere (an EPUB's
    /// spine and TOC); chapters without speakable text are left out.
    pub fn from_chapters(chapters: Vec<Chapter>, book: &str) -> Script {
        let chapters = chapters
            .into_iter()
            .map(|ch| ScriptChapter {
                number: ch.number,
                title: ch.title,
                segments: segments_of(&ch.paragraphs),
            })
            .filter(|ch| !ch.segments.is_empty())
            .collect();
        Script {
            book: book.to_owned(),
            chapters,
        }
    }

    /// Number of Han characters in the whole script.
    pub fn han_count(&self) -> usize {
        self.chapters.iter().map(ScriptChapter::han_count).sum()
    }
}

impl ScriptChapter {
    pub fn han_count(&self) -> usize {
        self.segments
            .iter()
            .map(|s| s.text.chars().filter(|c| is_han(*c)).count())
            .sum()
    }
}

fn segments_of(paragraphs: &[String]) -> Vec<Segment> {
    let mut segments = Vec::new();
    for (i, paragraph) in paragraphs.iter().enumerate() {
        for span in quote::split_paragraph(paragraph) {
            if !quote::is_speakable(&span.text) {
                continue;
            }
            segments.push(Segment {
                kind: span.kind,
                speaker: None,
                paragraph: i + 1,
                text: span.text,
            });
        }
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_has_paragraph_numbers_and_kinds() {
        let script = Script::from_text("第一章 开始\n他说：“走。”\n……\n她笑了。\n", "书");
        let ch = &script.chapters[0];
        assert_eq!(ch.title, "第一章 开始");
        let got: Vec<_> = ch.segments.iter().map(|s| (s.paragraph, s.kind)).collect();
        assert_eq!(
            got,
            [
                (1, SegmentKind::Narration),
                (1, SegmentKind::Dialogue),
                (3, SegmentKind::Narration)
            ]
        );
        assert_eq!(script.han_count(), 6);
    }
}
