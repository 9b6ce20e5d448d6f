//! Text → chapters: heading lines (第N章, 第一百二十回, 楔子, Chapter 12 …) start
//! a chapter; text before the first heading is front matter. Volume headings
//! (第一卷, 卷一) name the chapters that follow instead of making chapters of
//! their own. Site adverts and URLs are kept aside as skipped lines.

use std::sync::LazyLock;

use regex::Regex;

use super::advert::{self, LineClass};
use super::reflow::{self, Piece};
use super::wrap;

/// One chapter of a book: its title and its non-empty lines (paragraphs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chapter {
    /// Chapter number in reading order: 0 for front matter, then 1, 2, …
    pub number: usize,
    pub title: String,
    /// The volume heading this chapter belongs to, if any.
    pub volume: Option<String>,
    /// Every non-empty line after the heading, skipped ones included, so that
    /// paragraph numbers follow the source.
    pub paragraphs: Vec<String>,
    /// 0-based indices into `paragraphs` of lines that are not read (adverts,
    /// URLs, author's notes).
    pub skipped: Vec<usize>,
    /// 0-based indices into `paragraphs` of those the splitter cut out of
    /// the same long line as the paragraph before (a book on one line is cut
    /// at sentence ends): a speech may go on across such a cut.
    pub cut: Vec<usize>,
    /// Why the whole chapter is not read, if it is not.
    pub skip: Option<ChapterSkip>,
}

/// Why a whole chapter is left out of the reading script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChapterSkip {
    /// An author's note or appendix (上架感言, 完本感言); read with `--keep-notes`.
    Notes,
    /// Nothing to read: no line with a letter or a Han character.
    Empty,
    /// Front matter that is only the book's title line (《书名》作者).
    TitlePage,
}

impl ChapterSkip {
    pub fn as_str(self) -> &'static str {
        match self {
            ChapterSkip::Notes => "author's note",
            ChapterSkip::Empty => "empty",
            ChapterSkip::TitlePage => "title page",
        }
    }
}

/// How a book is split.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SplitOptions {
    /// Read author's notes (作者有话说, PS：…, 上架感言) instead of skipping them.
    pub keep_notes: bool,
}

impl Chapter {
    fn new(number: usize, title: &str, volume: Option<String>) -> Chapter {
        Chapter {
            number,
            title: title.to_owned(),
            volume,
            paragraphs: Vec::new(),
            skipped: Vec::new(),
            cut: Vec::new(),
            skip: None,
        }
    }

    /// True when the chapter has at least one line that is read.
    fn has_content(&self) -> bool {
        self.paragraphs.len() > self.skipped.len()
    }
}

/// What a heading line opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadingKind {
    Chapter,
    /// 第N卷, 卷N: always a volume.
    Volume,
    /// 第N部/集/篇: a volume when a chapter heading follows right away.
    Part,
}

/// A recognised heading line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading<'a> {
    pub kind: HeadingKind,
    pub text: &'a str,
    /// (unit, number) for numbered headings, to spot duplicates written differently.
    pub key: Option<(char, u32)>,
    /// The volume named on the same line (第一卷 第三章 …), if any.
    pub volume: Option<&'a str>,
}

const NUMERALS: &str =
    "0-9０-９零〇○一二两兩三四五六七八九十百千万萬壹贰貳叁參肆伍陆陸柒捌玖拾佰仟";
const SEPARATORS: &str = r" \t\u{a0}　:：、.．·—\-";
const SEPARATOR_CHARS: &str = " \t\u{a0}　:：、.．·—-";

static NUMBERED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^(?:正文[ 　]*)?【?第(?P<num>[{NUMERALS}]{{1,9}})(?P<unit>[章回迴节節卷部集篇幕])(?:[（(][上中下一二三四五六七八九十0-9]{{1,3}}[）)])?】?(?:[{SEPARATORS}]*(?P<title>[^{SEPARATOR_CHARS}].{{0,40}}))?$"
    ))
    .expect("valid heading regex")
});

static VOLUME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^卷(?P<num>[{NUMERALS}]{{1,6}})(?:[{SEPARATORS}]+(?P<title>\S.{{0,40}}))?$"
    ))
    .expect("valid heading regex")
});

static NAMED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^【?(?:楔子|序章|序言|序|引子|前言|尾声|尾聲|后记|後記|终章|終章|番外(?:篇)?[{NUMERALS}]*|完本感言|上架感言|完结感言|完結感言)】?(?:[{SEPARATORS}]+(?P<title>\S.{{0,40}}))?$"
    ))
    .expect("valid heading regex")
});

static ENGLISH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?i:chapter)[ \t]*(?P<num>[0-9]{1,5})(?:[ \t:：.\-—]+(?P<title>\S.{0,40}))?$")
        .expect("valid heading regex")
});

/// `001 标题`: a heading only where the book numbers its chapters this way throughout.
static NUMBERED_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<num>[0-9０-９]{1,4})(?:[ \t　、.．:：]+(?P<title>\S.{0,30}))?$")
        .expect("valid heading regex")
});

/// Longest heading line, in bytes (48 characters of CJK).
const MAX_HEADING_BYTES: usize = 48 * 3;

/// Returns the heading if `line` (already trimmed) is a chapter or volume heading.
pub fn heading(line: &str) -> Option<Heading<'_>> {
    if line.len() > MAX_HEADING_BYTES || line.ends_with(['。', '，', '；', '、']) {
        return None;
    }
    let first = line.chars().next()?;
    match first {
        '第' | '正' | '【'
            if first == '第' || line.starts_with("正文") || line.starts_with("【第") =>
        {
            let caps = NUMBERED.captures(line)?;
            // A title right after the number needs a separator, a 】 or a
            // （上）: 第一章的故事 is a sentence.
            if let Some(t) = caps.name("title") {
                let before = line[..t.start()].chars().last();
                let unit_end = caps.name("unit").map_or(0, |u| u.end());
                if t.start() == unit_end && !matches!(before, Some('】' | '）' | ')')) {
                    return None;
                }
            }
            let unit = same_unit(caps.name("unit")?.as_str().chars().next()?);
            let kind = match unit {
                '卷' => HeadingKind::Volume,
                '部' | '集' | '篇' => HeadingKind::Part,
                _ => HeadingKind::Chapter,
            };
            numbered(
                line,
                caps,
                kind,
                if kind == HeadingKind::Volume {
                    '卷'
                } else {
                    unit
                },
            )
        }
        '卷' => {
            let caps = VOLUME.captures(line)?;
            numbered(line, caps, HeadingKind::Volume, '卷')
        }
        'C' | 'c' => {
            let caps = ENGLISH.captures(line)?;
            numbered(line, caps, HeadingKind::Chapter, 'C')
        }
        '楔' | '序' | '引' | '前' | '尾' | '后' | '後' | '终' | '終' | '番' | '完' | '上'
        | '【' => NAMED.is_match(line).then_some(Heading {
            kind: HeadingKind::Chapter,
            text: line,
            key: None,
            volume: None,
        }),
        _ => None,
    }
}

/// The unit of a heading as its key counts it: 迴 is 回 (OpenCC writes 回心
/// as 迴心) and 節 is 节, so that a sequence goes on across them.
pub(crate) fn same_unit(c: char) -> char {
    match c {
        '迴' => '回',
        '節' => '节',
        c => c,
    }
}

/// A numbered heading; a volume heading whose title holds a chapter heading
/// (第一卷 潜龙 第三章 风起) is that chapter, of that volume.
fn numbered<'a>(
    line: &'a str,
    caps: regex::Captures<'a>,
    kind: HeadingKind,
    unit: char,
) -> Option<Heading<'a>> {
    let key = parse_number(caps.name("num").map_or("", |m| m.as_str())).map(|n| (unit, n));
    if kind != HeadingKind::Chapter
        && let Some(title) = caps.name("title")
    {
        let inner = title
            .as_str()
            .match_indices('第')
            .filter(|(at, _)| {
                *at == 0
                    || title.as_str()[..*at]
                        .chars()
                        .last()
                        .is_some_and(|c| c.is_whitespace() || SEPARATOR_CHARS.contains(c))
            })
            .find_map(|(at, _)| {
                heading(&title.as_str()[at..])
                    .filter(|h| h.kind == HeadingKind::Chapter)
                    .map(|h| (title.start() + at, h))
            });
        if let Some((at, inner)) = inner {
            let volume = line[..at]
                .trim_end_matches(|c: char| c.is_whitespace() || SEPARATOR_CHARS.contains(c));
            return Some(Heading {
                volume: Some(volume),
                ..inner
            });
        }
    }
    Some(Heading {
        kind,
        text: line,
        key,
        volume: None,
    })
}

/// Parses Arabic, full-width or Chinese numerals (一百二十三, 两千零五, 十二).
pub fn parse_number(s: &str) -> Option<u32> {
    if s.is_empty() {
        return None;
    }
    if s.chars()
        .all(|c| c.is_ascii_digit() || ('０'..='９').contains(&c))
    {
        let mut n: u32 = 0;
        for c in s.chars() {
            let d = if c.is_ascii_digit() {
                c as u32 - '0' as u32
            } else {
                c as u32 - '０' as u32
            };
            n = n.checked_mul(10)?.checked_add(d)?;
        }
        return Some(n);
    }
    let mut total: u32 = 0;
    let mut section: u32 = 0;
    let mut digit: Option<u32> = None;
    for c in s.chars() {
        let d = match c {
            // ○ (a white circle) stands for 〇 in many texts: 第一○五回.
            '零' | '〇' | '○' => Some(0),
            '一' | '壹' => Some(1),
            '二' | '两' | '兩' | '贰' | '貳' => Some(2),
            '三' | '叁' | '參' => Some(3),
            '四' | '肆' => Some(4),
            '五' | '伍' => Some(5),
            '六' | '陆' | '陸' => Some(6),
            '七' | '柒' => Some(7),
            '八' | '捌' => Some(8),
            '九' | '玖' => Some(9),
            _ => None,
        };
        if let Some(d) = d {
            // Digit strings like 一〇五 read positionally.
            digit = Some(match digit {
                Some(prev) if prev != 0 || d != 0 => prev.checked_mul(10)?.checked_add(d)?,
                _ => d,
            });
            continue;
        }
        let unit = match c {
            '十' | '拾' => 10,
            '百' | '佰' => 100,
            '千' | '仟' => 1000,
            '万' | '萬' => 10_000,
            _ => return None,
        };
        if unit == 10_000 {
            section = section.checked_add(digit.take().unwrap_or(0))?;
            total = total.checked_add(section.checked_mul(unit)?)?;
            section = 0;
        } else {
            section = section.checked_add(digit.take().unwrap_or(1).checked_mul(unit)?)?;
        }
    }
    total.checked_add(section)?.checked_add(digit.unwrap_or(0))
}

/// True for lines that are site adverts, URLs or pleas for votes: they are
/// not read aloud (see [`advert::classify`]).
pub fn is_advert(line: &str) -> bool {
    matches!(advert::classify(line), LineClass::Advert)
}

/// Trims ASCII and full-width spaces around a line.
pub fn trim_line(line: &str) -> &str {
    line.trim_matches(|c: char| c.is_whitespace() || c == '\u{3000}' || c == '\u{feff}')
}

/// Where a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// A line of the book: a heading if it looks like one.
    Line,
    /// A heading found inside a long line.
    Heading,
    /// Text cut from a long line: never a heading.
    Body,
}

/// Bare opening words that are not a chapter once numbered chapters began
/// (a 序 line inside chapter 3 is text).
const BARE_OPENINGS: &[&str] = &["序", "引子", "序言", "前言", "【序】", "【引子】"];

/// Splits decoded text into chapters. A book without any heading becomes one
/// chapter titled `fallback_title` (the file stem).
pub fn split_chapters(text: &str, fallback_title: &str) -> Vec<Chapter> {
    split_chapters_with(text, fallback_title, SplitOptions::default())
}

/// The lines of `text` as [`str::lines`] gives them (a `\r` before the
/// `\n` dropped, no empty last line), found by memchr's search for `\n`.
fn lines_of(text: &str) -> impl Iterator<Item = &str> {
    let mut from = 0;
    let mut ends = memchr::memchr_iter(b'\n', text.as_bytes());
    std::iter::from_fn(move || {
        let line = match ends.next() {
            Some(end) => {
                let line = &text[from..end];
                from = end + 1;
                line.strip_suffix('\r').unwrap_or(line)
            }
            None if from < text.len() => {
                let line = &text[from..];
                from = text.len();
                line
            }
            None => return None,
        };
        Some(line)
    })
}

/// [`split_chapters`] with options.
pub fn split_chapters_with(
    text: &str,
    fallback_title: &str,
    options: SplitOptions,
) -> Vec<Chapter> {
    // A hard-wrapped book: its wrapped lines joined into paragraphs first.
    let unwrapped = wrap::unwrap(text);
    let text = unwrapped.as_deref().unwrap_or(text);
    let mut lines: Vec<(&str, Origin)> = Vec::new();
    // For each of `lines`: a paragraph cut out of the same long line as the
    // paragraph before it (a speech may go on across the cut).
    let mut cut: Vec<bool> = Vec::new();
    for raw in lines_of(text) {
        let line = trim_line(raw);
        if line.is_empty() {
            continue;
        }
        if line.len() < reflow::LONG_LINE_BYTES && !reflow::holds_chapters(line) {
            lines.push((line, Origin::Line));
            cut.push(false);
            continue;
        }
        let mut after_paragraph = false;
        for piece in reflow::reflow(line) {
            let is_paragraph = matches!(piece, Piece::Paragraph(_));
            cut.push(is_paragraph && after_paragraph);
            after_paragraph = is_paragraph;
            lines.push(match piece {
                Piece::Heading(h) => (h, Origin::Heading),
                Piece::Paragraph(p) => (p, Origin::Body),
            });
        }
    }
    let plain: Vec<&str> = lines
        .iter()
        .map(|(l, o)| if *o == Origin::Body { "" } else { *l })
        .collect();
    let numbered_lines = consistent_numbered_lines(&plain);
    let heading_at = |i: usize| -> Option<Heading<'_>> {
        let (line, origin) = lines[i];
        match origin {
            Origin::Body => None,
            Origin::Heading => Some(heading(line).unwrap_or(Heading {
                kind: HeadingKind::Chapter,
                text: line,
                key: None,
                volume: None,
            })),
            Origin::Line => heading(line).or_else(|| {
                numbered_lines.binary_search(&i).ok().map(|_| Heading {
                    kind: HeadingKind::Chapter,
                    text: line,
                    key: None,
                    volume: None,
                })
            }),
        }
    };

    let mut chapters: Vec<Chapter> = Vec::new();
    let mut current = Chapter::new(0, fallback_title, None);
    let mut current_key: Option<(char, u32)> = None;
    let mut current_is_chapter = false;
    let mut volume: Option<String> = None;
    let mut seen_heading = false;
    let mut seen_numbered = false;
    // After 作者有话说: the rest of the chapter is the author's note.
    let mut in_notes = false;
    for i in 0..lines.len() {
        let line = lines[i].0;
        let head = heading_at(i)
            .filter(|h| !(seen_numbered && h.key.is_none() && BARE_OPENINGS.contains(&h.text)));
        let Some(head) = head else {
            let class = if in_notes {
                LineClass::Note
            } else {
                advert::classify(line)
            };
            if cut[i] {
                current.cut.push(current.paragraphs.len());
            }
            match class {
                LineClass::Story => current.paragraphs.push(line.to_owned()),
                LineClass::Cleaned(text) => current.paragraphs.push(text),
                LineClass::Advert => {
                    current.skipped.push(current.paragraphs.len());
                    current.paragraphs.push(line.to_owned());
                }
                LineClass::Note | LineClass::NotesFollow => {
                    in_notes |= class == LineClass::NotesFollow && !options.keep_notes;
                    if !options.keep_notes {
                        current.skipped.push(current.paragraphs.len());
                    }
                    current.paragraphs.push(line.to_owned());
                }
            }
            continue;
        };
        // A heading repeated before any text (web pages do this) is not a new chapter.
        let duplicate = seen_heading
            && !current.has_content()
            && (current.title == head.text || (head.key.is_some() && head.key == current_key));
        if duplicate {
            continue;
        }
        in_notes = false;
        let next_is_heading = lines
            .get(i + 1)
            .is_some_and(|_| heading_at(i + 1).is_some_and(|h| h.text != head.text));
        let is_volume = match head.kind {
            HeadingKind::Volume => true,
            HeadingKind::Part => next_is_heading,
            HeadingKind::Chapter => false,
        };
        if current.has_content() || (!seen_heading && !current.paragraphs.is_empty()) {
            chapters.push(current);
        } else if current_is_chapter {
            // A chapter heading with nothing under it: listed as skipped.
            current.skip = Some(ChapterSkip::Empty);
            chapters.push(current);
        }
        seen_heading = true;
        seen_numbered |= head.kind == HeadingKind::Chapter && head.key.is_some();
        if is_volume {
            volume = Some(head.text.to_owned());
        }
        if let Some(v) = head.volume {
            volume = Some(v.to_owned());
        }
        // Text right under a volume heading is read as a chapter titled by the volume.
        current = Chapter::new(1, head.text, volume.clone());
        current_key = head.key;
        current_is_chapter = !is_volume;
        if head.key.is_none() && head.text.contains("感言") && !options.keep_notes {
            current.skip = Some(ChapterSkip::Notes);
        }
    }
    if current.has_content() || (!seen_heading && !current.paragraphs.is_empty()) {
        chapters.push(current);
    } else if current_is_chapter {
        current.skip = Some(ChapterSkip::Empty);
        chapters.push(current);
    }
    if let (false, Some(only)) = (seen_heading, chapters.first_mut()) {
        only.number = 1;
    }
    // Front matter that is only the book's title line (《西游记》吴承恩) is no chapter.
    if let Some(front) = chapters.first_mut()
        && seen_heading
        && front.number == 0
        && front.skip.is_none()
        && front.paragraphs.len() - front.skipped.len() == 1
    {
        let line = front
            .paragraphs
            .iter()
            .enumerate()
            .find(|(k, _)| !front.skipped.contains(k))
            .map_or("", |(_, l)| l.as_str());
        let title_line = line.chars().count() <= 40
            && (line.contains('《')
                || (!fallback_title.is_empty() && line.contains(fallback_title)))
            && !line.contains(['。', '！', '？', '“', '「']);
        if title_line {
            front.skip = Some(ChapterSkip::TitlePage);
        }
    }
    renumber(&mut chapters);
    chapters
}

/// Indices of `001 标题` lines when they number the book's chapters in order
/// (at least three, nearly all one more than the previous); empty otherwise.
fn consistent_numbered_lines(lines: &[&str]) -> Vec<usize> {
    let mut found: Vec<(usize, u32)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let starts_with_digit = line
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || ('０'..='９').contains(&c));
        if !starts_with_digit
            || line.len() > MAX_HEADING_BYTES
            || line.ends_with(['。', '，', '！', '？', '；', '”', '」'])
        {
            continue;
        }
        if let Some(caps) = NUMBERED_LINE.captures(line)
            && let Some(n) = caps.name("num").and_then(|m| parse_number(m.as_str()))
        {
            found.push((i, n));
        }
    }
    if found.len() < 3 {
        return Vec::new();
    }
    let steps = found.windows(2).filter(|w| w[1].1 == w[0].1 + 1).count();
    if steps * 10 < (found.len() - 1) * 9 {
        return Vec::new();
    }
    found.into_iter().map(|(i, _)| i).collect()
}

fn renumber(chapters: &mut [Chapter]) {
    let mut next = 1;
    for chapter in chapters {
        if chapter.number != 0 && chapter.skip.is_none() {
            chapter.number = next;
            next += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn lines_are_those_str_lines_gives(text in "[a一\r\n]{0,12}") {
            proptest::prop_assert_eq!(
                lines_of(&text).collect::<Vec<_>>(),
                text.lines().collect::<Vec<_>>()
            );
        }
    }

    fn titles(chapters: &[Chapter]) -> Vec<(usize, &str, Option<&str>)> {
        chapters
            .iter()
            .map(|c| (c.number, c.title.as_str(), c.volume.as_deref()))
            .collect()
    }

    #[test]
    fn recognizes_headings() {
        for h in [
            "第一章 风起",
            "第12章",
            "第一百二十回",
            "楔子",
            "序章",
            "番外",
            "番外三 旧事",
            "第３章：夜行",
            "第十卷",
            "卷三 天下",
            "Chapter 12",
            "CHAPTER 3: Home",
            "完本感言",
            "正文 第五章 雨夜",
            "第一百回 径回东土 五圣成真",
            "第十章 杀！",
            "第二章 “意外”",
            "第一○五回：諸葛亮計取漢中",
            "第一卷\u{a0}\u{a0}\u{a0}\u{a0}伯牙摔琴",
            "第十四迴 心猿歸正",
        ] {
            assert!(heading(h).is_some(), "{h}");
        }
        for p in [
            "他翻到第三章，看了很久。",
            "第一章的故事",
            "序幕拉开了",
            "第三章说得好。",
            "Chapters are long",
        ] {
            assert!(heading(p).is_none(), "{p}");
        }
    }

    #[test]
    fn parses_numbers() {
        assert_eq!(parse_number("一百二十三"), Some(123));
        assert_eq!(parse_number("十二"), Some(12));
        assert_eq!(parse_number("两千零五"), Some(2005));
        assert_eq!(parse_number("一〇五"), Some(105));
        assert_eq!(parse_number("一○○"), Some(100));
        assert_eq!(parse_number("１２"), Some(12));
        assert_eq!(parse_number("一百"), Some(100));
        assert_eq!(parse_number("三万"), Some(30000));
        assert_eq!(parse_number("abc"), None);
    }

    #[test]
    fn splits_front_matter_and_chapters() {
        let text = "作者的话\n\n第一章 开端\n第一章 开端\n　　他来了。\n第二章\n她走了。\n第三章\n";
        let chapters = split_chapters(text, "书");
        assert_eq!(
            titles(&chapters[..3]),
            [
                (0, "书", None),
                (1, "第一章 开端", None),
                (2, "第二章", None)
            ]
        );
        // An empty chapter is kept, marked, to be listed as skipped.
        assert_eq!(chapters[3].title, "第三章");
        assert_eq!(chapters[3].skip, Some(ChapterSkip::Empty));
        assert_eq!(chapters[1].paragraphs, ["他来了。"]);
    }

    #[test]
    fn duplicate_heading_written_differently_is_one_chapter() {
        let text = "第1章 开端\n第一章 开端\n他来了。\n";
        let chapters = split_chapters(text, "书");
        assert_eq!(titles(&chapters), [(1, "第1章 开端", None)]);
    }

    #[test]
    fn volumes_name_the_chapters_that_follow() {
        let text = "第一卷 潜龙\n第一章 开端\n他来了。\n第二章 相遇\n她来了。\n卷二 飞龙\n第三章 远行\n走了。\n";
        let chapters = split_chapters(text, "书");
        assert_eq!(
            titles(&chapters),
            [
                (1, "第一章 开端", Some("第一卷 潜龙")),
                (2, "第二章 相遇", Some("第一卷 潜龙")),
                (3, "第三章 远行", Some("卷二 飞龙"))
            ]
        );
    }

    #[test]
    fn volume_and_chapter_on_one_line() {
        let text = "第一卷 潜龙 第一章 开端\n他来了。\n第一卷 第二章 相遇\n她来了。\n";
        let chapters = split_chapters(text, "书");
        assert_eq!(
            titles(&chapters),
            [
                (1, "第一章 开端", Some("第一卷 潜龙")),
                (2, "第二章 相遇", Some("第一卷"))
            ]
        );
    }

    #[test]
    fn part_with_text_is_a_chapter() {
        let text = "第一部\n他来了。\n第二部\n第一章 开端\n她来了。\n";
        let chapters = split_chapters(text, "书");
        assert_eq!(
            titles(&chapters),
            [(1, "第一部", None), (2, "第一章 开端", Some("第二部"))]
        );
    }

    #[test]
    fn adverts_are_skipped_but_counted() {
        let text = "第一章\n他来了。\nwww.example.com\n（本章完）\n求月票！\n";
        let chapters = split_chapters(text, "书");
        assert_eq!(chapters[0].paragraphs.len(), 4);
        assert_eq!(chapters[0].skipped, [1, 2, 3]);
        assert!(!is_advert("他说月光很美。"));
    }

    #[test]
    fn numbered_lines_only_when_consistent() {
        let text = "001 开端\n他来了。\n002 相遇\n她来了。\n003 分别\n走了。\n";
        assert_eq!(split_chapters(text, "书").len(), 3);
        let text = "他数了数。\n3 个人\n100 米\n";
        assert_eq!(split_chapters(text, "书").len(), 1);
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
