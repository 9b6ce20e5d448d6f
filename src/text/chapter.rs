//! Text → chapters: heading lines (第N章, 第一百二十回, 楔子, 番外 …) start a
//! chapter; text before the first heading is front matter.

use std::sync::LazyLock;

use regex::Regex;

/// One chapter of a book: its title and its non-empty lines (paragraphs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chapter {
    /// Chapter number in reading order: 0 for front matter, then 1, 2, …
    pub number: usize,
    pub title: String,
    pub paragraphs: Vec<String>,
}

const NUMERALS: &str = "0-9０-９零〇一二两兩三四五六七八九十百千万萬壹贰貳叁參肆伍陆陸柒捌玖拾佰仟";

static NUMBERED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^第[{NUMERALS}]{{1,9}}[章回节節卷部集篇幕](?:[ \t　:：、.．·—-]+(?P<title>\S.{{0,40}}))?$"
    ))
    .expect("valid heading regex")
});

static NAMED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^(?:楔子|序章|序言|序|引子|前言|尾声|尾聲|后记|後記|终章|終章|番外(?:篇)?[{NUMERALS}]*|完本感言)(?:[ \t　:：、.．·—-]+(?P<title>\S.{{0,40}}))?$"
    ))
    .expect("valid heading regex")
});

/// Returns the heading text if `line` (already trimmed) is a chapter heading.
pub fn heading(line: &str) -> Option<&str> {
    if line.chars().count() > 48 || line.ends_with(['。', '，', '！', '？', '；']) {
        return None;
    }
    (NUMBERED.is_match(line) || NAMED.is_match(line)).then_some(line)
}

/// Trims ASCII and full-width spaces around a line.
pub fn trim_line(line: &str) -> &str {
    line.trim_matches(|c: char| c.is_whitespace() || c == '\u{3000}' || c == '\u{feff}')
}

/// Splits decoded text into chapters. A book without any heading becomes one
/// chapter titled `fallback_title` (the file stem).
pub fn split_chapters(text: &str, fallback_title: &str) -> Vec<Chapter> {
    let mut chapters: Vec<Chapter> = Vec::new();
    let mut current = Chapter {
        number: 0,
        title: fallback_title.to_owned(),
        paragraphs: Vec::new(),
    };
    let mut seen_heading = false;
    for raw in text.lines() {
        let line = trim_line(raw);
        if line.is_empty() {
            continue;
        }
        if let Some(title) = heading(line) {
            // A heading repeated right after itself (web pages do this) is not a new chapter.
            if seen_heading && current.paragraphs.is_empty() && current.title == title {
                continue;
            }
            if !current.paragraphs.is_empty() {
                chapters.push(current);
            }
            seen_heading = true;
            current = Chapter {
                number: 1,
                title: title.to_owned(),
                paragraphs: Vec::new(),
            };
            continue;
        }
        current.paragraphs.push(line.to_owned());
    }
    if !current.paragraphs.is_empty() {
        chapters.push(current);
    }
    if let (false, Some(only)) = (seen_heading, chapters.first_mut()) {
        only.number = 1;
    }
    renumber(&mut chapters);
    chapters
}

fn renumber(chapters: &mut [Chapter]) {
    let mut next = 1;
    for chapter in chapters {
        if chapter.number != 0 {
            chapter.number = next;
            next += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_headings() {
        for h in [
            "第一章 风起",
            "第12章",
            "第一百二十回",
            "楔子",
            "序章",
            "番外",
            "第３章：夜行",
            "第十卷",
        ] {
            assert!(heading(h).is_some(), "{h}");
        }
        for p in ["他翻到第三章，看了很久。", "第一章的故事", "序幕拉开了"] {
            assert!(heading(p).is_none(), "{p}");
        }
    }

    #[test]
    fn splits_front_matter_and_chapters() {
        let text = "作者的话\n\n第一章 开端\n第一章 开端\n　　他来了。\n第二章\n她走了。\n第三章\n";
        let chapters = split_chapters(text, "书");
        let titles: Vec<_> = chapters
            .iter()
            .map(|c| (c.number, c.title.as_str()))
            .collect();
        assert_eq!(titles, [(0, "书"), (1, "第一章 开端"), (2, "第二章")]);
        assert_eq!(chapters[1].paragraphs, ["他来了。"]);
    }

    #[test]
    fn book_without_headings_is_one_chapter() {
        let chapters = split_chapters("他来了。\n她走了。", "短篇");
        assert_eq!(chapters.len(), 1);
        assert_eq!(chapters[0].number, 1);
        assert_eq!(chapters[0].title, "短篇");
        assert_eq!(chapters[0].paragraphs.len(), 2);
    }
}
