//! Lines without structure: a book whose line breaks were stripped puts many
//! chapters on one line. A very long line is cut at the chapter headings
//! inside it (a heading right after sentence-ending punctuation:
//! `…且听下文分解。第二回：张翼德怒鞭督邮，何国舅谋诛宦竖且说…`) and its
//! text into paragraphs at sentence ends, never inside a balanced quote.
//!
//! A heading whose title runs straight into the text, with nothing between
//! them (`…分解。第二回鐵甲夜渡寒江水孤城曉破北風營話說那日…`), is taken
//! only when its number follows the previous heading's (a few may be missing)
//! or the next heading's number follows it; its title ends where a title
//! looks finished: a 回目 couplet of two equal halves before a sentence-start
//! marker (話說, 却说, 詩曰 …), an opening quote or the start of prose.
//!
//! Dumps scraped from the web lose more: the sentence end before a heading
//! (…也是哭泣第五十六回…), the zeros of its number (第一回 for 第一〇回), and
//! they put the page's own words before each heading (…且聽下回分解官場現形記
//! 第三回…). A 第N回 on the line's longest run of rising numbers is a heading
//! wherever it stands, and words that stand before several headings are
//! taken out.

use super::quote;

/// A line at least this long (bytes; about 2,000 Han characters) is reflowed.
pub const LONG_LINE_BYTES: usize = 6000;

/// Longest title taken after an inline heading's number, in characters.
const MAX_TITLE_CHARS: usize = 30;

/// Longest quote (bytes) kept whole when cutting paragraphs.
const MAX_QUOTE_BYTES: usize = 3000 * 3;

/// Sentences after a quote mark that never closes stay in one paragraph up
/// to this many bytes (about 300 Han characters).
const MAX_OPEN_QUOTE_BYTES: usize = 300 * 3;

/// One piece of a reflowed line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    Heading(&'a str),
    Paragraph(&'a str),
}

/// Cuts a long line into headings and paragraphs; every piece is a slice of
/// `line`, in order, and only whitespace between pieces is left out.
pub fn reflow<'a>(line: &'a str) -> Vec<Piece<'a>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    // May a heading start here? At the line start, after a cut, whitespace,
    // a sentence end or a closing mark.
    let mut at_boundary = true;
    let mut last_key: Option<(char, u32)> = None;
    let mut ahead = Ahead::new(line);
    // The last heading's number of each unit.
    let mut last_by_unit: Vec<(char, u32)> = Vec::new();
    // Where the last heading taken ends.
    let mut last_heading_end: Option<usize> = None;
    let openers = Openers::of(line);
    // How often each half length (4–11) was seen in the couplets of run-in
    // titles that a marker confirmed: the book's own style.
    let mut halves = [0usize; MAX_HALF + 1];
    // Where a quote that does not close opened.
    let mut soft_open: Option<usize> = None;
    let push = |out: &mut Vec<Piece<'a>>, from: usize, to: usize| {
        let p = super::chapter::trim_line(&line[from..to]);
        // A lone mark left after a title (第三章 夜袭。) is not a paragraph.
        if quote::is_speakable(p) {
            out.push(Piece::Paragraph(p));
        }
    };
    while i < line.len() {
        let Some(c) = line[i..].chars().next() else {
            break;
        };
        let w = c.len_utf8();
        if c.is_whitespace() {
            let run_end = line[i..]
                .find(|c: char| !c.is_whitespace())
                .map_or(line.len(), |r| i + r);
            let run = &line[i..run_end];
            // An indent (two spaces or a full-width space) opens a paragraph.
            if run.chars().nth(1).is_some() || run.contains('\u{3000}') {
                push(&mut out, start, i);
                start = run_end;
            }
            i = run_end;
            at_boundary = true;
            continue;
        }
        if c == '第'
            && let before = if at_boundary {
                Before::Sentence
            } else if after_chapter_end(&line[..i]) {
                Before::ChapterEnd
            } else {
                Before::Text
            }
            && let Some(h) = inline_heading(&line[i..], preferred_half(&halves), &openers)
            && accepts(
                &mut ahead,
                i,
                &h,
                last_key,
                last_of(&last_by_unit, h.key.0),
                before,
                last_heading_end == Some(i),
            )
        {
            let (len, key) = (h.len, h.key);
            if let Some(half) = h.confirmed_half {
                halves[half] += 1;
            }
            push(&mut out, start, i);
            out.push(Piece::Heading(super::chapter::trim_line(&line[i..i + len])));
            last_key = Some(key);
            match last_by_unit.iter_mut().find(|(u, _)| *u == key.0) {
                Some(last) => last.1 = key.1,
                None => last_by_unit.push(key),
            }
            soft_open = None;
            i += len;
            start = i;
            last_heading_end = Some(i);
            at_boundary = true;
            continue;
        }
        if quote::closer_of(c).is_some() {
            if let Some(end) = quote::balanced_end(line, i + w, c, MAX_QUOTE_BYTES)
                .filter(|&end| !holds_heading(&line[i + w..end]))
            {
                soft_open = None;
                // A quote that ends a sentence (…呢。”, 快走——”) ends it
                // outside too.
                at_boundary = line[i + w..end]
                    .chars()
                    .rev()
                    .find(|c| !is_closing(*c))
                    .is_some_and(|c| is_sentence_end(c) || matches!(c, '—' | '─'));
                i = end;
                continue;
            }
            // A quote left open: its sentences stay together for a while.
            soft_open = Some(i);
            i += w;
            at_boundary = false;
            continue;
        }
        if matches!(c, '」' | '』' | '”' | '’') {
            soft_open = None;
        }
        let held = soft_open.is_some_and(|at| i - at < MAX_OPEN_QUOTE_BYTES);
        if is_sentence_end(c) && !held {
            soft_open = None;
            let mut end = i + w;
            while let Some(n) = line[end..].chars().next() {
                if is_sentence_end(n) || is_closing(n) {
                    end += n.len_utf8();
                } else {
                    break;
                }
            }
            push(&mut out, start, end);
            start = end;
            i = end;
            at_boundary = true;
            continue;
        }
        at_boundary = is_closing(c) || is_sentence_end(c);
        i += w;
    }
    push(&mut out, start, line.len());
    drop_running_headers(&mut out);
    out
}

/// Longest running header, in characters.
const MAX_HEADER_CHARS: usize = 40;

/// Chapter ends a text must share to call the words a running header.
const HEADER_TIMES: usize = 3;

/// Takes out what a web page put before each heading (the book's name,
/// 返回首頁…上一回下一回): words without punctuation that stand alone before
/// one heading and end the text before at least [`HEADER_TIMES`] of them
/// (…且聽下回分解官場現形記第三回…), there and at the line's end. The
/// storyteller's closing words are never one.
fn drop_running_headers(out: &mut Vec<Piece<'_>>) {
    let heading_next: Vec<bool> = (0..out.len())
        .map(|k| matches!(out.get(k + 1), Some(Piece::Heading(_))))
        .collect();
    let is_header = |s: &str| {
        s.chars().all(|c| c.is_alphanumeric())
            && !CHAPTER_ENDS.iter().any(|e| s.contains(e))
            && !s.contains("下回")
    };
    // How many texts before a heading end with each short tail.
    let mut tails: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
    let mut alone: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
    for (piece, _) in out.iter().zip(&heading_next).filter(|(_, next)| **next) {
        let Piece::Paragraph(p) = *piece else {
            continue;
        };
        for (n, (at, _)) in p.char_indices().rev().enumerate() {
            if n >= MAX_HEADER_CHARS || !is_header(&p[at..]) {
                break;
            }
            *tails.entry(&p[at..]).or_insert(0) += 1;
        }
        if p.chars().count() <= MAX_HEADER_CHARS && is_header(p) {
            alone.insert(p);
        }
    }
    let headers: Vec<&str> = alone
        .into_iter()
        .filter(|h| h.chars().nth(1).is_some() && tails.get(h).is_some_and(|n| *n >= HEADER_TIMES))
        .collect();
    if headers.is_empty() {
        return;
    }
    // Before a heading, and at the end of the line (the page's words after
    // the last chapter).
    let last = out.len() - 1;
    for (k, piece) in out.iter_mut().enumerate() {
        let Piece::Paragraph(p) = piece else {
            continue;
        };
        if !heading_next[k] && k != last {
            continue;
        }
        while let Some(h) = headers
            .iter()
            .filter(|h| p.ends_with(**h))
            .max_by_key(|h| h.len())
        {
            *p = super::chapter::trim_line(&p[..p.len() - h.len()]);
        }
    }
    out.retain(|piece| !matches!(piece, Piece::Paragraph(p) if !quote::is_speakable(p)));
}

/// Headings in a row that make a shorter line a book on one line.
const MIN_HEADINGS_IN_SHORT_LINE: usize = 3;

/// Fewest bytes of text between such headings (about 100 Han characters):
/// a table of contents on one line (第一章 风起 第二章 云涌 …) is no book.
const MIN_SHORT_CHAPTER_BYTES: usize = 300;

/// Is `line`, shorter than [`LONG_LINE_BYTES`], a short book dumped on one
/// line all the same: does it hold at least [`MIN_HEADINGS_IN_SHORT_LINE`]
/// headings of one unit whose numbers go one by one (第1章…。第2章…。第3章),
/// each at the line's start, after a sentence end, a closing mark or a
/// chapter's closing words, with a chapter's worth of text between them?
pub fn holds_chapters(line: &str) -> bool {
    // The run's last heading starts that far into the line, at least: most
    // paragraphs are too short to hold one.
    if line.len() <= (MIN_HEADINGS_IN_SHORT_LINE - 1) * MIN_SHORT_CHAPTER_BYTES {
        return false;
    }
    // The last heading's unit, number, byte offset and the run's length.
    let mut run: Option<(char, u32, usize, usize)> = None;
    // By memchr's search (the last byte of 第 is common in Han text: a
    // search for that byte stops at most characters).
    static DI: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new("第"));
    for at in DI.find_iter(line.as_bytes()) {
        let before = &line[..at];
        let after_end = before.is_empty() || ends_for_heading(before);
        let Some((n, written, _)) = heading_number(&line[at..]).filter(|_| after_end) else {
            continue;
        };
        let unit = super::chapter::same_unit(written);
        let count = match run {
            Some((u, last, from, count))
                if u == unit && n == last + 1 && at - from >= MIN_SHORT_CHAPTER_BYTES =>
            {
                count + 1
            }
            _ => 1,
        };
        if count >= MIN_HEADINGS_IN_SHORT_LINE {
            return true;
        }
        run = Some((unit, n, at, count));
    }
    false
}

/// Does a quoted stretch hold a chapter heading (after a sentence end)? Then
/// its marks do not pair up: a quote never runs across chapters.
fn holds_heading(text: &str) -> bool {
    text.match_indices('第').any(|(at, _)| {
        text[..at].chars().next_back().is_some_and(is_boundary)
            && inline_heading(&text[at..], DEFAULT_HALF, &Openers::default())
                .is_some_and(|h| !h.word_like)
    })
}

/// Most numbers a run of headings may skip (headings lost in the dump).
const MAX_GAP: u32 = 5;

/// How far ahead (bytes) a run-in heading looks for the next heading.
const MAX_LOOKAHEAD_BYTES: usize = 512 * 1024;

/// What comes right before a `第` that may open a heading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Before {
    /// The line's start, whitespace, a sentence end or a closing mark.
    Sentence,
    /// A chapter's closing words or a dash, without a sentence end.
    ChapterEnd,
    /// Anything else (作者某某第一回…, …也是哭泣第五十六回…).
    Text,
}

/// Is the heading `h` at `line[at..]` taken? After a sentence end: a
/// separated heading unless its number goes back, a run-in one only in a
/// sequence of numbers. After a chapter's closing words only in a sequence.
/// After other text, or where its unit reads on as words (第三回中), only on
/// the line's longest run of rising 回 numbers, or as the line's first
/// heading when the next heading's number is the very next one (作者某某第一回…
/// / …——第二回). Any 第N回 on that run is taken. `own_last` is the number of
/// the last heading taken with the same unit as `h`; `after_heading`: `h`
/// follows the last heading taken with nothing between.
fn accepts(
    ahead: &mut Ahead<'_>,
    at: usize,
    h: &Inline,
    last_key: Option<(char, u32)>,
    own_last: Option<u32>,
    before: Before,
    after_heading: bool,
) -> bool {
    let (unit, n) = h.key;
    let goes_on = |last: u32| n > last && n <= last + MAX_GAP;
    // A heading of another unit than the last one's goes on only its own
    // sequence (第二章 after 第一章's 第三节): a game's 第三节 in a book of 章
    // is text.
    let plain = !h.word_like && before != Before::Text;
    // The first of its unit right under another heading starts the
    // sequence (第一卷風起第一章…).
    let starts_under = after_heading && own_last.is_none();
    if last_key.is_some_and(|(u, _)| u != unit) && (h.run_in || !plain) {
        if !own_last.is_some_and(goes_on) && !starts_under {
            return false;
        }
        if plain {
            return true;
        }
    }
    // After a sentence left unfinished (…也是哭泣第五十六回敏探春…) or
    // where it reads on as words (第十三回中高魁…), a mark is a heading only
    // on the line's longest run of rising numbers, or as the line's first
    // heading right after front matter when the next heading's number is
    // the very next one (作者某某第一章…).
    // …or, after a sentence end, where it reads on as words but its number
    // is the very next one and the next heading's follows it (…沸腾了。第5章
    // 里正来了李里正…).
    if h.word_like
        && before == Before::Sentence
        && last_key.is_some_and(|(u, last)| u == unit && n == last + 1)
        && ahead
            .next_number(at + h.len, unit)
            .is_some_and(|next| next > n && next <= n + MAX_GAP)
    {
        return true;
    }
    if !plain {
        return ahead.on_chain(at, unit)
            || (!h.word_like
                && last_key.is_none()
                && ahead.next_number(at + h.len, unit) == Some(n + 1));
    }
    if last_key.is_some_and(|(u, last)| u == unit && goes_on(last)) {
        return true;
    }
    // Numbers go back only to start again (a new volume's 第一章).
    let not_back = last_key.is_none_or(|(u, last)| u != unit || n > last || n == 1);
    let mut next = || ahead.next_number(at + h.len, unit);
    let by_number = match before {
        Before::Sentence if !h.run_in => not_back,
        Before::Sentence => not_back && next().is_some_and(|next| next > n && next <= n + MAX_GAP),
        Before::ChapterEnd => {
            last_key.is_none() && next().is_some_and(|next| next > n && next <= n + MAX_GAP)
        }
        Before::Text => false,
    };
    by_number || ahead.on_chain(at, unit)
}

/// The number of the last heading of `unit` in `last_by_unit`.
fn last_of(last_by_unit: &[(char, u32)], unit: char) -> Option<u32> {
    last_by_unit
        .iter()
        .find(|(u, _)| *u == unit)
        .map(|(_, n)| *n)
}

/// What ends a chapter of a book that leaves out the sentence end there:
/// a dash (正是——) or the storyteller's closing words (要知端的, 且听下回分解
/// without its 。, 不知后事如何 …).
const CHAPTER_ENDS: &[&str] = &[
    "——",
    "──",
    "－－",
    "--",
    "――",
    "下回分解",
    "要知端的",
    "后事如何",
    "後事如何",
    "下回便见",
    "下回便見",
    "后回便见",
    "後回便見",
    "且看下回",
    "下回再说",
    "下回再說",
];

/// Does `before` (the text up to a `第`) end the way a chapter ends without a
/// sentence end?
fn after_chapter_end(before: &str) -> bool {
    CHAPTER_ENDS.iter().any(|e| before.ends_with(e))
}

/// Does `before` (the text up to a `第`) end where a heading may come next:
/// a sentence end, a closing mark, whitespace or a chapter's closing words?
fn ends_for_heading(before: &str) -> bool {
    before.chars().next_back().is_some_and(is_boundary) || after_chapter_end(before)
}

/// The `第N<unit>` marks of a line, listed once per line and unit (on first
/// use) so that every look ahead is a binary search.
struct Ahead<'a> {
    line: &'a str,
    marks: Option<Vec<UnitMarks>>,
}

/// One `第N<unit>` in a line.
#[derive(Debug, Clone, Copy)]
struct Mark {
    at: usize,
    number: u32,
    /// After a sentence end, a closing mark, whitespace or a chapter's
    /// closing words: a heading that may come next.
    after_end: bool,
    /// Written digit by digit without a zero (一一, 九六): a text whose 〇
    /// were lost writes 第一回 for 第一〇回 and 第一一回 for 第一一〇回.
    zeros_lost: bool,
}

/// A unit's marks in line order, those after an end, and the byte offsets
/// of the marks on the longest run of rising numbers (回 only).
struct UnitMarks {
    unit: char,
    all: Vec<Mark>,
    after_end: Vec<(usize, u32)>,
    chain: Vec<usize>,
}

/// Fewest marks a run of rising numbers needs to count.
const MIN_CHAIN: u32 = 3;

/// Largest number a mark whose zeros were lost is read as.
const MAX_LOST_ZERO_NUMBER: u32 = 9999;

/// The numbers `n` may stand for when its zeros were lost: every way of
/// putting zeros back after its first digit (1 → 10, 100, 1000; 11 → 101,
/// 110, 1001 …), up to [`MAX_LOST_ZERO_NUMBER`].
fn with_zeros(n: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut todo = vec![n];
    while let Some(m) = todo.pop() {
        let digits = m.to_string();
        for k in 1..=digits.len() {
            let Ok(more) = format!("{}0{}", &digits[..k], &digits[k..]).parse::<u32>() else {
                continue;
            };
            if more <= MAX_LOST_ZERO_NUMBER && !out.contains(&more) {
                out.push(more);
                todo.push(more);
            }
        }
    }
    out
}

/// The byte offsets, in order, of the longest run of `marks` (in line
/// order) whose numbers rise by at most [`MAX_GAP`] at each step, a mark
/// whose zeros were lost standing for any number it may mean; of two marks
/// with one number the one after an end goes on, else the one read as
/// written, else the earlier (第四回中… inside chapter five looks back). Empty when the longest run is shorter
/// than [`MIN_CHAIN`].
fn longest_chain(marks: &[Mark]) -> Vec<usize> {
    // For each number, the longest run so far that ends with it: its
    // length, whether its last mark follows an end and reads as written,
    // and that mark.
    let mut best: rustc_hash::FxHashMap<u32, (u32, (bool, bool), usize)> =
        rustc_hash::FxHashMap::default();
    let mut back: Vec<Option<usize>> = Vec::with_capacity(marks.len());
    let mut top: Option<(u32, usize)> = None;
    // What each number whose zeros were lost may stand for, worked out once.
    let mut zeros: rustc_hash::FxHashMap<u32, Vec<u32>> = rustc_hash::FxHashMap::default();
    let mut readings = Vec::new();
    for (k, mark) in marks.iter().enumerate() {
        readings.clear();
        readings.push(mark.number);
        if mark.zeros_lost {
            readings.extend_from_slice(
                zeros
                    .entry(mark.number)
                    .or_insert_with(|| with_zeros(mark.number)),
            );
        }
        let mut here: Option<(u32, Option<usize>)> = None;
        for &n in &readings {
            let (len, prev) = (1..=MAX_GAP)
                .filter_map(|g| n.checked_sub(g).and_then(|m| best.get(&m)))
                .fold(
                    (0, None),
                    |acc, &(len, _, j)| {
                        if len > acc.0 { (len, Some(j)) } else { acc }
                    },
                );
            let len = len + 1;
            let rank = (mark.after_end, n == mark.number);
            let entry = best.entry(n).or_insert((0, rank, k));
            if len > entry.0 || (len == entry.0 && rank > entry.1) {
                *entry = (len, rank, k);
            }
            if here.is_none_or(|(l, _)| len > l) {
                here = Some((len, prev));
            }
        }
        let (len, prev) = here.unwrap_or((1, None));
        back.push(prev);
        if top.is_none_or(|(l, _)| len > l) {
            top = Some((len, k));
        }
    }
    let Some((len, mut k)) = top.filter(|(len, _)| *len >= MIN_CHAIN) else {
        return Vec::new();
    };
    let mut chain = Vec::with_capacity(len as usize);
    loop {
        chain.push(marks[k].at);
        match back[k] {
            Some(j) => k = j,
            None => break,
        }
    }
    chain.reverse();
    chain
}

impl<'a> Ahead<'a> {
    fn new(line: &'a str) -> Ahead<'a> {
        Ahead { line, marks: None }
    }

    /// The number of the first mark with `unit` after an end in
    /// `line[from..]`, within [`MAX_LOOKAHEAD_BYTES`]; marks of other units
    /// are passed over (a basketball game's 第三节 inside a book of 章).
    fn next_number(&mut self, from: usize, unit: char) -> Option<u32> {
        let m = self.marks().iter().find(|m| m.unit == unit)?;
        let k = m.after_end.partition_point(|(at, _)| *at < from);
        let &(at, n) = m.after_end.get(k)?;
        (at < from + MAX_LOOKAHEAD_BYTES).then_some(n)
    }

    /// Is the mark of `unit` at `at` on the line's longest run of rising
    /// numbers of that unit?
    fn on_chain(&mut self, at: usize, unit: char) -> bool {
        self.marks()
            .iter()
            .find(|m| m.unit == unit)
            .is_some_and(|m| m.chain.binary_search(&at).is_ok())
    }

    fn marks(&mut self) -> &[UnitMarks] {
        let line = self.line;
        self.marks.get_or_insert_with(|| {
            let mut marks: Vec<UnitMarks> = Vec::new();
            for (at, _) in line.match_indices('第') {
                let Some((number, written, num_end)) = heading_number(&line[at..]) else {
                    continue;
                };
                let after_end = ends_for_heading(&line[..at]);
                let zeros_lost = line['第'.len_utf8() + at..at + num_end]
                    .chars()
                    .all(|c| "一二三四五六七八九".contains(c));
                let u = super::chapter::same_unit(written);
                let k = match marks.iter().position(|m| m.unit == u) {
                    Some(k) => k,
                    None => {
                        marks.push(UnitMarks {
                            unit: u,
                            all: Vec::new(),
                            after_end: Vec::new(),
                            chain: Vec::new(),
                        });
                        marks.len() - 1
                    }
                };
                marks[k].all.push(Mark {
                    at,
                    number,
                    after_end,
                    zeros_lost,
                });
                if after_end {
                    marks[k].after_end.push((at, number));
                }
            }
            // Only for 回: the books that lose the sentence ends before
            // their headings are old novels, and the 章 and 节 of modern
            // prose are often references (马可福音第六章, 在讲第八章时).
            for m in marks.iter_mut().filter(|m| m.unit == '回') {
                m.chain = longest_chain(&m.all);
            }
            marks
        })
    }
}

/// `第N章/回/节` at the start of `s`: its number, its unit as written (迴,
/// 節 …) and the byte end of the number.
fn heading_number(s: &str) -> Option<(u32, char, usize)> {
    let digits = numerals_len(&s['第'.len_utf8()..]);
    if digits == 0 || digits > 9 * 3 {
        return None;
    }
    let num_end = '第'.len_utf8() + digits;
    let written = s[num_end..].chars().next().filter(|c| is_unit(*c))?;
    let number = super::chapter::parse_number(&s['第'.len_utf8()..num_end])?;
    Some((number, written, num_end))
}

/// May a heading start right after `c`: whitespace, a sentence end or a
/// closing mark?
fn is_boundary(c: char) -> bool {
    is_sentence_end(c) || is_closing(c) || c.is_whitespace()
}

fn is_sentence_end(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '!' | '?' | '…')
}

fn is_closing(c: char) -> bool {
    matches!(
        c,
        '」' | '』' | '”' | '’' | '"' | '＂' | '）' | ')' | '】' | '》'
    )
}

/// A heading found inside a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Inline {
    /// Length of the heading in bytes, title included.
    len: usize,
    /// (unit, number).
    key: (char, u32),
    /// Nothing separates the unit from a title that runs into the text.
    run_in: bool,
    /// The half length of a run-in couplet that a marker confirmed.
    confirmed_half: Option<usize>,
    /// The unit reads on as a word (第二回合, 第三章的, 第十三回中高魁…):
    /// a heading only where the numbers around it say so.
    word_like: bool,
}

/// A 第N章/回/节 heading at the start of `s` with its title; `half` is the
/// book's usual half length of a 回目 couplet.
fn inline_heading(s: &str, half: usize, openers: &Openers) -> Option<Inline> {
    let (number, written, num_end) = heading_number(s)?;
    // A volume's title ends before its first chapter (第一卷風起第一章…).
    let s = match written {
        '卷' => s
            .match_indices('第')
            .skip(1)
            .take_while(|(at, _)| *at < num_end + MAX_TITLE_CHARS * 4)
            .find(|(at, _)| heading_number(&s[*at..]).is_some())
            .map_or(s, |(at, _)| &s[..at]),
        _ => s,
    };
    let mut end = num_end + written.len_utf8();
    let unit = super::chapter::same_unit(written);
    // （上）, then a separator.
    let rest = &s[end..];
    if let Some(stripped) = rest.strip_prefix(['（', '('])
        && let Some(close) = stripped.find(['）', ')'])
        && stripped[..close].chars().count() <= 3
    {
        let mark = stripped[close..].chars().next().map_or(0, char::len_utf8);
        end += rest.len() - stripped.len() + close + mark;
    }
    let after_unit = end;
    // 回目 and the titles of a collection's stories (第二卷 莊子休鼓盆成大道)
    // are couplets or lines of verse.
    let couplet = matches!(unit, '回' | '卷');
    let sep_len = s[end..]
        .char_indices()
        .find(|(_, c)| {
            !matches!(
                c,
                ' ' | '\t'
                    | '\u{a0}'
                    | '\u{3000}'
                    | ':'
                    | '：'
                    | '、'
                    | '.'
                    | '．'
                    | '·'
                    | '—'
                    | '-'
            )
        })
        .map_or(s.len() - end, |(k, _)| k);
    let next = s[end + sep_len..].chars().next();
    let key = (unit, number);
    // A title the text opens with again: a line of speech (第2章「這把刀…？」
    // 「這把刀…？」), sounds (第二章咚、咚、咚咚、咚、咚。), a pronoun (第3章她她总是…).
    if sep_len == 0
        && !couplet
        && let Some(title) = repeated_title(&s[end..])
    {
        // Taken as the bare heading before it was (第2章 and a quote).
        return Some(Inline {
            len: end + title,
            key,
            run_in: false,
            confirmed_half: None,
            word_like: false,
        });
    }
    // 第三章的故事, 第二回合: a word goes on (or a title runs into the text;
    // the caller takes it only in a sequence of headings).
    if sep_len == 0 && next.is_some_and(super::is_han) && s[..after_unit].ends_with(written) {
        // 第二回合, 第三章的: words, unless the numbers around say otherwise
        // (合 only after 回: 第三章合伙人 is a title).
        let word_like = next.is_some_and(|c| {
            matches!(
                c,
                '的' | '了' | '着' | '著' | '是' | '在' | '中' | '里' | '裡' | '裏'
            ) || (c == '合' && unit == '回')
        });
        let (title, confirmed_half) = run_in_title_len(&s[end..], couplet, half, openers);
        if title == 0 {
            return None;
        }
        return Some(Inline {
            len: end + title,
            key,
            run_in: true,
            confirmed_half,
            word_like,
        });
    }
    end += sep_len;
    let title = title_len(&s[end..], couplet, half, openers);
    Some(Inline {
        // A bare number: the heading ends at the unit (第1024章).
        len: if title == 0 { after_unit } else { end + title },
        key,
        run_in: false,
        confirmed_half: None,
        word_like: false,
    })
}

/// Longest title (characters) the text is looked at for opening again with it.
const MAX_REPEATED_TITLE: usize = 20;

/// Length in bytes of a chapter title at the start of `s` that the text
/// opens with again right after it: a quote (「別開門！」「別開門！不管…),
/// a title with marks inside (咚、咚、咚咚、咚、咚。) or a pronoun (她她总是…).
fn repeated_title(s: &str) -> Option<usize> {
    let first = s.chars().next()?;
    if let Some(close) = quote::closer_of(first) {
        let end = quote::balanced_end(s, first.len_utf8(), first, MAX_REPEATED_TITLE * 3)?;
        let inner = &s[..end - close.len_utf8()];
        return (inner.chars().count() > 2 && s[end..].starts_with(inner)).then_some(end);
    }
    if matches!(first, '他' | '她' | '我' | '你' | '它') {
        return s[first.len_utf8()..]
            .starts_with(first)
            .then_some(first.len_utf8());
    }
    // The longest start that comes again at once, holding a mark and ending
    // with a character (not the 、 between two sounds).
    if !s
        .chars()
        .take(MAX_REPEATED_TITLE)
        .any(|c| matches!(c, '、' | '，' | ','))
    {
        return None;
    }
    let ends: Vec<usize> = s
        .char_indices()
        .map(|(k, c)| k + c.len_utf8())
        .take(MAX_REPEATED_TITLE)
        .collect();
    ends.iter().rev().copied().find(|&q| {
        let title = &s[..q];
        s[q..].starts_with(title)
            && title.chars().last().is_some_and(super::is_han)
            && title.chars().any(|c| matches!(c, '、' | '，' | ','))
            && title
                .chars()
                .all(|c| super::is_han(c) || matches!(c, '、' | '，' | ','))
    })
}

/// The unit of a heading found inside a line: 第N章, 第N回 (迴 where a
/// converter wrote 回心 as 迴心), 第N节, 第N卷 (a volume of a web novel, or
/// a story of a collection such as 警世通言).
fn is_unit(c: char) -> bool {
    matches!(c, '章' | '回' | '迴' | '节' | '節' | '卷')
}

/// Length in bytes of the digits and Chinese numerals `s` opens with.
fn numerals_len(s: &str) -> usize {
    s.chars()
        .take_while(|c| is_numeral(*c))
        .map(char::len_utf8)
        .sum()
}

/// A digit or a Chinese numeral (一, 萬, 兩, 拾 …).
pub(crate) fn is_numeral(c: char) -> bool {
    c.is_ascii_digit()
        || ('０'..='９').contains(&c)
        || "零〇○一二两兩三四五六七八九十百千万萬壹贰貳叁參肆伍陆陸柒捌玖拾佰仟".contains(c)
}

/// Length in bytes of a heading's title at the start of `s`: a 回目 couplet
/// (two halves of equal length) for a 回, else up to the first whitespace or
/// punctuation, at most [`MAX_TITLE_CHARS`] characters.
fn title_len(s: &str, couplet: bool, half: usize, openers: &Openers) -> usize {
    let run = |from: usize| -> Vec<usize> {
        s[from..]
            .char_indices()
            .take_while(|(_, c)| super::is_han(*c))
            .map(|(k, c)| from + k + c.len_utf8())
            .take(MAX_TITLE_CHARS)
            .collect()
    };
    let first = run(0);
    if couplet && (4..=12).contains(&first.len()) {
        let half = first.len();
        let a_end = first[half - 1];
        let gap = s[a_end..]
            .char_indices()
            .find(|(_, c)| !matches!(c, ' ' | '\u{a0}' | '\u{3000}' | '，' | ',' | '、' | '；'))
            .map_or(0, |(k, _)| k);
        if gap > 0 && gap <= 6 {
            let second = run(a_end + gap);
            if second.len() >= half {
                return second[half - 1];
            }
        }
        return a_end;
    }
    // A couplet written without a space, running into the text.
    if couplet && first.len() > 2 * MIN_HALF {
        return run_in_title_len(s, true, half, openers).0;
    }
    // Up to the first space or punctuation.
    let mut end = 0;
    for (n, (k, c)) in s.char_indices().enumerate() {
        if n >= MAX_TITLE_CHARS
            || c.is_whitespace()
            || quote::is_clause_punct(c)
            || matches!(c, '“' | '「' | '『' | '"')
        {
            break;
        }
        end = k + c.len_utf8();
    }
    end
}

/// Shortest and longest half of a 回目 couplet, in characters.
const MIN_HALF: usize = 4;
const MAX_HALF: usize = 11;

/// Half length taken when the book has not shown its own yet.
const DEFAULT_HALF: usize = 7;

fn preferred_half(halves: &[usize; MAX_HALF + 1]) -> usize {
    let (best, count) = halves
        .iter()
        .enumerate()
        .max_by_key(|(h, n)| (**n, std::cmp::Reverse(*h)))
        .map_or((DEFAULT_HALF, 0), |(h, n)| (h, *n));
    if count == 0 { DEFAULT_HALF } else { best }
}

/// Words that open the text of a chapter: a title ends right before one.
const MARKERS: &[&str] = &[
    "話說", "话说", "却说", "卻說", "却說", "且說", "且说", "詩曰", "诗曰", "詞曰", "词曰", "詩云",
    "诗云", "話表", "话表", "偈曰", "再說", "再说", "且不", "單表", "单表",
];

/// The storyteller's opening words, which end a 回目 but may sit inside a
/// chapter title (第三章不要说话).
const STORY_OPENERS: &[&str] = &["說話", "说话"];

/// Weaker openers of a chapter's text: a couplet may end before one.
const OPENERS: &[&str] = &[
    "當時", "当时", "當下", "当下", "只見", "只见", "原來", "原来", "一日", "次日", "卻", "却",
    "且", "這", "这", "那", "此", "眾人", "众人", "看官", "列位", "上回", "前回",
];

/// Characters of prose that a short chapter title rarely holds.
fn is_prose_char(c: char) -> bool {
    matches!(
        c,
        '的' | '了'
            | '着'
            | '著'
            | '他'
            | '她'
            | '我'
            | '你'
            | '們'
            | '们'
            | '說'
            | '说'
            | '道'
            | '是'
            | '這'
            | '这'
            | '那'
            | '在'
    )
}

/// The first two characters of the book's sentences, counted: a name that
/// opens many sentences (许知夏把伞收起来。) opens the text after a title that
/// runs into it (第2章一把黑伞许知夏…), where a title's own words seldom
/// open one.
#[derive(Debug, Default)]
struct Openers(rustc_hash::FxHashMap<[char; 2], u32>);

/// Sentences a pair of characters must open to open a chapter's text.
const OPENS_OFTEN: u32 = 3;

impl Openers {
    /// Counts the two Han characters after every sentence end, closing mark
    /// and whitespace of `line`.
    fn of(line: &str) -> Openers {
        let mut counts = rustc_hash::FxHashMap::default();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if !is_boundary(c) {
                continue;
            }
            let mut pair = chars.clone().take(2);
            if let (Some(a), Some(b)) = (pair.next(), pair.next())
                && super::is_han(a)
                && super::is_han(b)
            {
                *counts.entry([a, b]).or_insert(0) += 1;
            }
        }
        Openers(counts)
    }

    /// Do the first two characters of `s` open at least [`OPENS_OFTEN`]
    /// sentences, and are they no common word (没有, 一个 open many
    /// sentences and sit inside titles: 如果没有你)?
    fn often(&self, s: &str) -> bool {
        let mut chars = s.chars();
        let (Some(a), Some(b)) = (chars.next(), chars.next()) else {
            return false;
        };
        self.0.get(&[a, b]).is_some_and(|n| *n >= OPENS_OFTEN) && {
            let dict = crate::frontend::dictionary::Dictionary::get();
            let word: String = [dict.simplified(a), dict.simplified(b)].iter().collect();
            !dict.phrase(&word).is_some_and(|p| p.common)
        }
    }
}

/// Longest run-in chapter title that ends in ？ or ！ (他为什么要帮我？).
const MAX_ASKING_TITLE: usize = 14;

/// Most characters before the 的 of a run-in chapter title (便利店的女孩).
const MAX_BEFORE_DE: usize = 6;

/// Most characters after that 的 when the text shows where the title ends.
const MAX_AFTER_DE: usize = 4;

/// Most characters after a title's 了 when the text shows where it ends.
const MAX_AFTER_LE: usize = 5;

/// Longest first part (characters) of a title with a comma whose end is
/// told by where prose or a word of time starts (一剑落下，满场皆静他们…).
const MAX_COMMA_PART: usize = 7;

/// Longest title written as a sentence, in characters, and how far past a
/// weaker sign of the text's start a sure one is looked for.
const MAX_SENTENCE_TITLE: usize = 16;
const MAX_PAST_WEAK: usize = 8;

/// Characters a sentence does not start with: a run-in title that meets
/// one goes on (他终于来了, 长老们的目光).
fn never_starts(c: char) -> bool {
    matches!(c, '的' | '了' | '着' | '著' | '们' | '們' | '说' | '說')
}

/// Characters no chapter title ends with: they join what comes before to
/// what comes after (停电的夜里, 血月之夜, 你与我).
fn never_ends(c: char) -> bool {
    matches!(c, '的' | '之' | '与' | '與')
}

/// Length in bytes of a chapter (章, 节) title that runs into the text,
/// from `ends`, the byte ends of the Han characters at the start of `s`, and
/// where a marker (話說) opens the text, if it does: the title ends where
/// prose (他, 这 …) or a word of time starts, where the text repeats a word
/// of the title (储秀宫储秀宫的…), where a pair of characters that opens many
/// of the book's sentences starts (a name: 一把黑伞许知夏…), after the 了 that
/// ends a title written as a sentence, or with the word after its 的; a
/// short question or exclamation is the title, its mark included (谁动了那块
/// 地？), unless a marker, a word of time, a repeated word or a frequent
/// opener starts inside it (prose characters do not count there: 他为什么
/// 要帮我？).
fn chapter_title_len(s: &str, ends: &[usize], marker: Option<usize>, openers: &Openers) -> usize {
    let n = ends.len();
    let at = |p: usize| if p == 0 { 0 } else { ends[p - 1] };
    let rest = |p: usize| &s[at(p)..];
    // A part of the day or an hour right after a day or a part of the day
    // goes on with it (周五晚上的泡面, 凌晨四点十七分).
    // A clause of time of two characters opens the text too (开机那天，).
    let time = |p: usize| {
        let goes_on = (starts_with_any(rest(p), DAY_PARTS) || is_clock(rest(p)))
            && (2..=3).any(|k| {
                p >= k
                    && [DAYS, DAY_PARTS, &["今天", "明天", "昨天"]]
                        .iter()
                        .any(|words| starts_with_any(rest(p - k), words))
            });
        // 十月初七: the day of a month.
        let day_of_month = rest(p).starts_with('初') && s[..at(p)].ends_with('月');
        (opens_with_time(rest(p)) && !goes_on && !day_of_month) || when_clause(rest(p))
    };
    // The text right after the title, where the names it opens with come again.
    let soon = &s[..quote::floor_boundary(s, NAME_AGAIN_BYTES)];
    // Sounds that end the run of characters (…三更天梆，梆，梆。) open the
    // text: the title ends before them, whatever else the rules below say
    // of what is left.
    let sound = s[..ends[n - 1]]
        .chars()
        .rev()
        .take_while(|c| SOUNDS.contains(*c))
        .count();
    let sound = if n >= sound + 2 { sound } else { 0 };
    let m = n - sound;
    // The text opens with someone's full name that it names again soon
    // (三年一度的测灵大会钱沐风是…), or a place (杂役峰归云宗有九座主峰…): two
    // characters and what kind of place it is.
    let named = |p: usize| {
        p + 3 < m
            && (rest(p).starts_with(super::speaker::is_surname)
                || rest(p + 2).starts_with(|c: char| PLACES.contains(c)))
            && soon.matches(&s[at(p)..at(p + 3)]).take(NAME_AGAIN).count() >= NAME_AGAIN
    };
    let opens = |p: usize| {
        rest(p)
            .chars()
            .next()
            .is_some_and(|c| is_prose_char(c) && !never_starts(c))
            || time(p)
            || comes_from(rest(p))
    };
    // The text opens by naming again what the title named, or by naming in
    // full whom the title named by surname (韩主任韩振东…, 老马不说话马德顺…).
    let repeats = |p: usize| p + 2 <= n && s[..at(p)].contains(&s[at(p)..at(p + 2)]);
    let surname = s
        .chars()
        .nth(usize::from(starts_with_any(s, &["老", "小"])))
        .filter(|c| super::speaker::is_surname(*c));
    let full_name = |p: usize| p + 3 <= n && surname.is_some_and(|c| rest(p).starts_with(c));
    // A short question or exclamation is the title itself (谁动了那块地？),
    // unless a word of time, a repeated word or a name opens the text in it;
    // a call before it may stand apart by a comma (程屿白，你别走！).
    let after = &s[ends[n - 1]..];
    let asks = |t: &str| {
        t.chars()
            .next()
            .filter(|c| matches!(c, '？' | '！' | '?' | '!'))
    };
    if n <= MAX_ASKING_TITLE
        && marker.is_none()
        && (asks(after).is_some() || after.starts_with(['，', ',']))
        && !(2..n).any(|p| opens_with_time(rest(p)) || repeats(p) || openers.often(rest(p)))
    {
        if let Some(mark) = asks(after) {
            return if sound == 0 {
                ends[n - 1] + mark.len_utf8()
            } else {
                at(m)
            };
        }
        if let Some(then) = after.strip_prefix(['，', ',']) {
            let han: usize = then.chars().take_while(|c| super::is_han(*c)).count();
            let len: usize = then.chars().take(han).map(char::len_utf8).sum();
            if han >= 2
                && n + han <= MAX_ASKING_TITLE
                && let Some(mark) = asks(&then[len..])
            {
                return s.len() - then.len() + len + mark.len_utf8();
            }
        }
    }
    // Two parts with a comma between (十月初七，大雪 / 一剑落下，满场皆静):
    // the second ends where the text names again the title's first words,
    // or where prose starts after as many characters as the first part has.
    if sound == 0
        && marker.is_none()
        && let Some(then) = after.strip_prefix(['，', ','])
        && (2..n).all(|p| !opens(p))
    {
        let han: Vec<usize> = then
            .char_indices()
            .take_while(|(_, c)| super::is_han(*c))
            .map(|(k, c)| k + c.len_utf8())
            .take(MAX_ASKING_TITLE)
            .collect();
        let first_words = &s[..ends[1]];
        let second_end = (1..han.len())
            .find(|&q| {
                then[han[q - 1]..].starts_with(first_words)
                    || (n <= MAX_COMMA_PART && q >= 2 && opens_with_time(&then[han[q - 1]..]))
            })
            .or_else(|| {
                (n < han.len()
                    && n <= MAX_COMMA_PART
                    && then[han[n - 1]..]
                        .chars()
                        .next()
                        .is_some_and(|c| is_prose_char(c) && !never_starts(c)))
                .then_some(n)
            });
        if let Some(q) = second_end {
            return s.len() - then.len() + han[q - 1];
        }
    }
    // No title ends on a word that joins it to what follows (江堤下的, 血月之).
    let joined = |p: usize| s[..at(p)].ends_with(never_ends);
    // A name that fills the run up to the sounds is the title's (村长王满仓咣咣咣).
    let often = |p: usize| openers.often(rest(p)) && (sound == 0 || p + 3 < m);
    let cut =
        |p: usize| !joined(p) && (opens(p) || repeats(p) || full_name(p) || named(p) || often(p));
    // What surely opens the text: a pronoun that owns nothing (她是…, not
    // 我的名字), a word of time, a place left, a name, a word of the title.
    let someone_or_time = |p: usize| {
        let mut chars = rest(p).chars();
        (chars
            .next()
            .is_some_and(|c| matches!(c, '他' | '她' | '我' | '你' | '它'))
            && chars
                .next()
                .is_some_and(|c| !matches!(c, '的' | '们' | '們')))
            || time(p)
    };
    let strong = |p: usize| {
        someone_or_time(p)
            || comes_from(rest(p))
            || repeats(p)
            || full_name(p)
            || named(p)
            || often(p)
    };
    // A title written as a sentence goes on past a weaker sign to someone or
    // a time close after it (樓下有東西在敲門她是…, 裁员名单上有我的名字周一早上…).
    let found = (2..m).find(|&p| cut(p)).map(|p| {
        if strong(p) {
            return p;
        }
        (p + 1..m.min(p + 1 + MAX_PAST_WEAK).min(MAX_SENTENCE_TITLE + 1))
            .find(|&q| !joined(q) && someone_or_time(q))
            .unwrap_or(p)
    });
    // A word the text names again, with the two characters before it that
    // name it in full each time (網咖夜班極光網咖…, 大比宗门大比那天): those
    // open the text.
    let found = found.map(|p| {
        if p >= 4
            && repeats(p)
            && !joined(p - 2)
            && !s[..at(p - 2)].contains(&s[at(p - 2)..at(p)])
            && soon.matches(&s[at(p - 2)..at(p + 2)]).take(2).count() >= 2
        {
            p - 2
        } else {
            p
        }
    });
    let mut end = found.unwrap_or(m).min(marker.unwrap_or(m));
    // A sure start of the text not far in: the title's 了 and 的 do not cut
    // it shorter (外婆的菜谱里少了一页她一直…).
    let sure = found.is_some_and(|p| p == end && p <= MAX_SENTENCE_TITLE && strong(p));
    if !sure && (found.is_some() || sound == 0) {
        // A title written as a sentence ends with its 了 (他终于来了), or with
        // what it did to how much or whom, when the text shows where
        // (一场暴雨冲垮了半条路他没想到…, 翻了誰的牌子半個月後…).
        if let Some(le) = (2..end).find(|&p| rest(p).starts_with('了'))
            && !(found.is_some()
                && end <= le + 1 + MAX_AFTER_LE
                && rest(le + 1).starts_with(|c: char| is_numeral(c) || "半谁誰".contains(c)))
        {
            end = le + 1;
        }
        // The 的 of a title and the word after it (江堤下的男人), unless the
        // text opens a little further (三年一度的测灵大会钱沐风…).
        if let Some(d) = (2..end.min(MAX_BEFORE_DE + 1)).find(|&p| rest(p).starts_with('的'))
            && !(found.is_some() && end <= d + 1 + MAX_AFTER_DE)
        {
            end = end.min(d + 3);
        }
    }
    at(end)
}

/// Words of time that open a chapter's first sentence in modern prose
/// (第五章戒指第二天一早…): a chapter title ends before one, as before one of
/// [`DAYS`] or [`DAY_PARTS`].
const TIME_OPENERS: &[&str] = &[
    "当晚",
    "當晚",
    "当夜",
    "當夜",
    "那晚",
    "那夜",
    "这一天",
    "這一天",
    "星期",
    "转眼",
    "轉眼",
    "不知过了",
    "不知過了",
    "入夜",
    "暮色",
    "天色",
    "夜色",
    "二更",
    "三更",
    "四更",
    "五更",
    "日头",
    "日頭",
    "入秋",
    "入冬",
    "开春",
    "開春",
    "这时",
    "這時",
    "此时",
    "此時",
    "腊月",
    "臘月",
    "正月",
    "接下来",
    "接下來",
];

/// The last character of a place's name: a sect, a peak, a palace, a town…
const PLACES: &str = "宗派门門阁閣峰山殿宫宮府城镇鎮村寨庄莊楼樓寺观觀院堂坊";

/// Words of sound that open a chapter's text (啪！, 梆，梆，梆。, 咣咣咣，…).
const SOUNDS: &str = "啪砰嘭咚轰轟叮咔嗡哗嘩嘀咣哐噗嗖吱铛鐺当噹梆滋嗒噠哒";

/// How far (bytes) the text after a run-in title is searched for a name it
/// opens with, and how often the name must be there.
const NAME_AGAIN_BYTES: usize = 3000 * 3;
const NAME_AGAIN: usize = 3;

/// Is `s` an hour with its minutes or half (四点十七分)?
fn is_clock(s: &str) -> bool {
    let digits = numerals_len(s);
    digits > 0 && clock_after(&s[digits..])
}

/// After an hour's numerals: 点 and its minutes, half, 整, 钟 …
fn clock_after(rest: &str) -> bool {
    let Some(minutes) = rest.strip_prefix(['点', '點']) else {
        return false;
    };
    let m = numerals_len(minutes);
    (m > 0 && minutes[m..].starts_with('分'))
        || minutes.starts_with(['半', '整', '多'])
        || starts_with_any(minutes, &["钟", "鐘", "左右"])
}

/// Days, words of time too, that a part of the day may follow in a title
/// (周五晚上, 第二天下午; so may 今天, 明天, 昨天).
const DAYS: &[&str] = &[
    "周一",
    "周二",
    "周三",
    "周四",
    "周五",
    "周六",
    "周日",
    "週一",
    "週二",
    "週三",
    "週四",
    "週五",
    "週六",
    "週日",
    "周末",
    "週末",
    "第二天",
    "第二日",
    "次日",
    "翌日",
    "当天",
    "當天",
    "那天",
    "这天",
    "這天",
];

/// Parts of the day (晚上, 凌晨 …).
const DAY_PARTS: &[&str] = &[
    "一早", "清晨", "早上", "早晨", "上午", "中午", "下午", "傍晚", "晚上", "夜里", "夜裡", "夜裏",
    "深夜", "半夜", "午夜", "凌晨", "黄昏", "黃昏",
];

/// What 整个 makes a stretch of time of (整个冬天, 整個下午).
const WHOLE_SPANS: &[&str] = &[
    "冬天", "夏天", "春天", "秋天", "白天", "晚上", "早上", "上午", "下午", "夜里", "夜裡", "夜裏",
    "月", "星期", "暑假", "寒假", "假期",
];

/// The twelve two-hour watches of the old day (子时三刻).
const WATCHES: &str = "子丑寅卯辰巳午未申酉戌亥";

/// Does `s` open with a word of time: one of [`TIME_OPENERS`], or an amount
/// of days, months or years and what comes of it (三日后, 半个月之后,
/// 十月底, 两年前)?
fn opens_with_time(s: &str) -> bool {
    if [TIME_OPENERS, DAYS, DAY_PARTS]
        .iter()
        .any(|words| starts_with_any(s, words))
    {
        return true;
    }
    let mut chars = s.chars();
    if chars.next().is_some_and(|c| WATCHES.contains(c))
        && chars.next().is_some_and(|c| matches!(c, '时' | '時'))
    {
        return true;
    }
    // The tenth day of something and its hour (第十天清晨, 第三日，); not
    // when the count belongs to a title (开学第一天九月初…).
    if let Some(n) = s.strip_prefix('第') {
        let k = numerals_len(n);
        if k > 0
            && let Some(after) = n[k..].strip_prefix(['天', '日'])
            && (after.starts_with(['，', ',']) || starts_with_any(after, DAY_PARTS))
        {
            return true;
        }
    }
    // 整个冬天, and the days of the old month (初五).
    if ["整个", "整個"].iter().any(|w| {
        s.strip_prefix(w)
            .is_some_and(|r| starts_with_any(r, WHOLE_SPANS))
    }) || s
        .strip_prefix('初')
        .is_some_and(|r| r.starts_with(is_numeral))
    {
        return true;
    }
    // A year of a reign, in Chinese numerals (永安十二年, 貞觀元年).
    let mut chars = s.char_indices();
    if let (Some((_, a)), Some((_, b)), Some((k, _))) = (chars.next(), chars.next(), chars.next())
        && !is_numeral(a)
        && !is_numeral(b)
        && super::is_han(a)
        && super::is_han(b)
    {
        let year: usize = s[k..]
            .chars()
            .take_while(|c| "元一二三四五六七八九十廿".contains(*c))
            .take(3)
            .map(char::len_utf8)
            .sum();
        if year > 0 && s[k + year..].starts_with('年') {
            return true;
        }
    }
    let digits: usize = s
        .chars()
        .take_while(|c| is_numeral(*c) || matches!(c, '半' | '几' | '幾'))
        .map(char::len_utf8)
        .sum();
    if digits == 0 {
        return false;
    }
    let rest = &s[digits..];
    // The hour with its minutes or half (十一点四十三分, 三點半, 七点整).
    if rest.starts_with(['点', '點']) {
        return clock_after(rest);
    }
    let rest = ["个", "個"]
        .iter()
        .find_map(|m| rest.strip_prefix(m))
        .unwrap_or(rest);
    // A month and its day (九月一号, 十月的, 十月底).
    if let Some(month) = rest.strip_prefix('月') {
        let day = numerals_len(month);
        if day > 0 {
            return starts_with_any(&month[day..], &["日", "号", "號"]);
        }
        if starts_with_any(month, &["的", "里", "裡", "裏", "中"]) {
            return true;
        }
    }
    let Some(unit) = [
        "天", "日", "月", "年", "周", "週", "星期", "分钟", "分鐘", "小时", "小時", "钟头", "鐘頭",
    ]
    .iter()
    .find_map(|u| rest.strip_prefix(u)) else {
        return false;
    };
    starts_with_any(
        unit,
        &[
            "后", "後", "之后", "之後", "以后", "以後", "前", "底", "初", "过去", "過去",
        ],
    )
}

/// What ends a clause of time of two characters that opens a chapter's
/// text (开机那天，, 入门之后的…, 杀青前一周，, 秋收刚过，).
const WHEN_ENDS: &[&str] = &[
    "那天",
    "那日",
    "那晚",
    "那夜",
    "那年",
    "之后",
    "之後",
    "以后",
    "以後",
    "过后",
    "過後",
    "刚过",
    "剛過",
    "前一周",
    "前一週",
    "前一天",
    "前一晚",
];

/// Does `s` open with a clause of time: two characters and one of
/// [`WHEN_ENDS`], then a comma or a 的?
fn when_clause(s: &str) -> bool {
    let mut chars = s.char_indices();
    let (Some((_, a)), Some((_, b)), Some((k, _))) = (chars.next(), chars.next(), chars.next())
    else {
        return false;
    };
    // Two characters of an event (开机, 入门), not of an amount (一夜之后) nor
    // the end of a sentence (明白了那夜，).
    let event =
        |c: char| super::is_han(c) && !is_numeral(c) && !is_prose_char(c) && !never_starts(c);
    event(a)
        && event(b)
        && WHEN_ENDS.iter().any(|w| {
            s[k..]
                .strip_prefix(w)
                .is_some_and(|r| r.starts_with(['，', ',', '的']))
        })
}

/// Most characters between 从 and the verb of coming out of a place.
const MAX_FROM_PLACE: usize = 6;

/// Does `s` open with where someone comes from (从慈宁宫出来, 從護國寺回來的第七日):
/// a clause that opens a chapter's text, not a title's words.
fn comes_from(s: &str) -> bool {
    let Some(place) = s.strip_prefix(['从', '從']) else {
        return false;
    };
    place
        .char_indices()
        .take(MAX_FROM_PLACE + 1)
        .skip(1)
        .any(|(k, _)| {
            starts_with_any(
                &place[k..],
                &[
                    "出来", "出來", "回来", "回來", "离开", "離開", "走出", "下来", "下來",
                ],
            )
        })
}

fn starts_with_any(s: &str, words: &[&str]) -> bool {
    words.iter().any(|w| s.starts_with(w))
}

/// Fewest characters of a title before the poem that opens the text.
const MIN_TITLE_BEFORE_VERSE: usize = 5;

/// When `s` (the text right after a run of Han characters) goes on as a
/// poem, a comma and then two lines of five or seven characters each, that
/// length.
fn verse_line(s: &str) -> Option<usize> {
    let rest = s.strip_prefix(['，', ','])?;
    let mut lines = rest.split(['，', ',', '。', '？', '！', '；']);
    let second = lines.next()?;
    let third = lines.next()?;
    let len = second.chars().count();
    (matches!(len, 5 | 7)
        && second.chars().all(super::is_han)
        && third.chars().count() == len
        && third.chars().all(super::is_han))
    .then_some(len)
}

/// Would a title ending at byte `cut` of `s` cut a dictionary word of two
/// to four characters in two?
fn cuts_word(s: &str, cut: usize) -> bool {
    let dict = crate::frontend::dictionary::Dictionary::get();
    let before: Vec<char> = s[..cut].chars().rev().take(3).collect();
    let after: Vec<char> = s[cut..].chars().take(3).collect();
    (1..=before.len()).any(|b| {
        (1..=after.len()).any(|a| {
            a + b <= 4 && {
                let word: String = before[..b]
                    .iter()
                    .rev()
                    .chain(&after[..a])
                    .map(|c| dict.simplified(*c))
                    .collect();
                dict.phrase(&word).is_some_and(|p| p.common)
            }
        })
    })
}

/// Does `s` open with a speaker's tag, a name of one to three characters
/// and a word of saying before a colon or a quote (土地说：“…)?
fn opens_with_speech(s: &str) -> bool {
    let mut chars = s.chars();
    (1..4).any(|k| {
        let mut rest = chars.clone().skip(k);
        rest.next().is_some_and(|c| matches!(c, '说' | '說' | '道'))
            && rest
                .next()
                .is_some_and(|c| matches!(c, '：' | ':') || is_opening_quote(c))
    }) && chars.next().is_some_and(super::is_han)
}

fn is_opening_quote(c: char) -> bool {
    matches!(c, '“' | '「' | '『' | '"' | '‘')
}

/// Length in bytes of a title that runs into the text at the start of `s`
/// (no space, no colon), and the half length when a marker confirmed a
/// couplet. A 回目 couplet is two halves of 4–11 characters, preferably
/// `half` each; a chapter title ends before a marker, a quote or prose.
fn run_in_title_len(
    s: &str,
    couplet: bool,
    half: usize,
    openers: &Openers,
) -> (usize, Option<usize>) {
    // Byte ends of the Han characters at the start (at most MAX_TITLE_CHARS).
    let ends: Vec<usize> = s
        .char_indices()
        .take_while(|(_, c)| super::is_han(*c))
        .map(|(k, c)| k + c.len_utf8())
        .take(MAX_TITLE_CHARS)
        .collect();
    let n = ends.len();
    if n == 0 {
        return (0, None);
    }
    let at = |p: usize| if p == 0 { 0 } else { ends[p - 1] };
    let rest = |p: usize| &s[at(p)..];
    // Two halves with a comma between them (宴桃園豪傑三結義，斬黃巾英雄首立功),
    // when no marker opens the text inside the first.
    if couplet
        && (MIN_HALF..=MAX_HALF).contains(&n)
        && !starts_with_any(s, MARKERS)
        && !(2..n).any(|p| starts_with_any(&s[ends[p - 1]..], MARKERS))
        && let Some(sep) = s[ends[n - 1]..]
            .chars()
            .next()
            .filter(|c| matches!(c, '，' | ',' | '、' | '；'))
    {
        let second = ends[n - 1] + sep.len_utf8();
        let han: Vec<usize> = s[second..]
            .char_indices()
            .take_while(|(_, c)| super::is_han(*c))
            .map(|(k, c)| second + k + c.len_utf8())
            .take(n + 1)
            .collect();
        // The second half may be a character shorter or longer when the
        // text's opening words (卻說) show where it ends.
        let opens = |k: usize| k <= han.len() && starts_with_any(&s[han[k - 1]..], MARKERS);
        if let Some(k) = [n, n - 1, n + 1].into_iter().find(|k| opens(*k)) {
            return (han[k - 1], None);
        }
        if han.len() >= n {
            return (han[n - 1], None);
        }
    }
    let marker = (2..n).find(|&p| {
        starts_with_any(rest(p), MARKERS) || (couplet && starts_with_any(rest(p), STORY_OPENERS))
    });
    let stops_at_quote = s[ends[n - 1]..]
        .chars()
        .next()
        .is_some_and(is_opening_quote);
    if !couplet {
        return (chapter_title_len(s, &ends, marker, openers), None);
    }
    let fits = |p: usize| (2 * MIN_HALF..=2 * MAX_HALF).contains(&p);
    // A marker ends any title, a couplet's or a single line's
    // (第二十回散宜生私通費尤詩曰：).
    if let Some(p) = marker {
        let confirmed = (fits(p) && p.is_multiple_of(2)).then_some(p / 2);
        return (at(p), confirmed);
    }
    if stops_at_quote && n.is_multiple_of(2) && fits(n) {
        return (at(n), None);
    }
    // A poem right after the title (紫荊枝下還家日，花萼樓中合被時。同氣從來
    // 兄與弟，…): its first line is as long as the next two.
    if let Some(line) = verse_line(&s[at(n)..]).filter(|line| n >= line + MIN_TITLE_BEFORE_VERSE) {
        return (at(n - line), None);
    }
    let mut order = vec![half];
    order.extend(
        [7, 8, 6, 9, 5, 10, 4, 11]
            .into_iter()
            .filter(|h| *h != half),
    );
    if let Some(h) = order.iter().find(|h| {
        2 * **h < n && {
            let r = rest(2 * **h);
            starts_with_any(r, OPENERS)
                // 却说 misspelt (卑说), at the book's usual length only: 逢君
                // 只说… in verse is no opener.
                || (**h == half && r.chars().nth(1).is_some_and(|c| matches!(c, '说' | '說')))
                || opens_with_speech(r)
        }
    }) {
        return (at(2 * h), None);
    }
    // The book's usual length, unless its end would cut a word in two
    // (贾雨村风尘怀|闺秀, 孙行者一调芭|蕉扇).
    let fitting = || order.iter().filter(|h| 2 * **h <= n);
    match fitting()
        .find(|h| !cuts_word(s, at(2 * **h)))
        .or_else(|| fitting().next())
    {
        Some(h) => (at(2 * h), None),
        None => (at(n), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Piece::*;

    #[test]
    fn headings_inside_a_line() {
        let line = "话说天下大势。且听下文分解。第二回：张翼德怒鞭督邮，何国舅谋诛宦竖且说董卓字仲颖。他来了。第三回 议温明董卓叱丁原 馈金珠李肃说吕布    却说曹操。";
        assert_eq!(
            reflow(line),
            [
                Paragraph("话说天下大势。"),
                Paragraph("且听下文分解。"),
                Heading("第二回：张翼德怒鞭督邮，何国舅谋诛宦竖"),
                Paragraph("且说董卓字仲颖。"),
                Paragraph("他来了。"),
                Heading("第三回 议温明董卓叱丁原 馈金珠李肃说吕布"),
                Paragraph("却说曹操。"),
            ]
        );
    }

    #[test]
    fn chapter_titles_end_at_space_or_punctuation() {
        assert_eq!(
            reflow("完了。第三章 夜袭 他走了。第1024章 他回来了。"),
            [
                Paragraph("完了。"),
                Heading("第三章 夜袭"),
                Paragraph("他走了。"),
                Heading("第1024章 他回来了"),
            ]
        );
        // A mention inside a sentence is not a heading.
        assert_eq!(reflow("他翻到第三章，看了很久。").len(), 1);
        assert_eq!(reflow("他看完了。第三章的故事很长。").len(), 2);
    }

    fn headings<'a>(pieces: &[Piece<'a>]) -> Vec<&'a str> {
        pieces
            .iter()
            .filter_map(|p| match p {
                Heading(h) => Some(*h),
                Paragraph(_) => None,
            })
            .collect()
    }

    #[test]
    fn run_in_titles_follow_the_sequence() {
        // Made-up couplets (Traditional), nothing between title and text.
        let line = "且聽下回分解。第一回鐵甲夜渡寒江水孤城曉破北風營話說那日大軍渡江。眾人都笑了。\
            第二回青燈獨照讀書人白馬相逢少年客卻說那書生姓林。\
            第三回風雪夜歸人草堂醉臥客詩曰：好雪。\
            第四回舊夢難尋春又去新愁易結雁初來「走吧。」他說。";
        assert_eq!(
            headings(&reflow(line)),
            [
                "第一回鐵甲夜渡寒江水孤城曉破北風營",
                "第二回青燈獨照讀書人白馬相逢少年客",
                "第三回風雪夜歸人草堂醉臥客",
                "第四回舊夢難尋春又去新愁易結雁初來",
            ]
        );
        // A heading lost in the middle does not stop the rest.
        let lost = line.replace("第二回青燈獨照讀書人白馬相逢少年客", "");
        assert_eq!(headings(&reflow(&lost)).len(), 3);
        // Chapter titles end where prose starts (他, 她 …).
        assert_eq!(
            headings(&reflow("完了。第一章風起他走進門來。第二章夜襲她笑了。")),
            ["第一章風起", "第二章夜襲"]
        );
    }

    #[test]
    fn run_in_words_out_of_sequence_are_text() {
        // 第二回合 is a word; a lone 第五十回 with nothing around it is no heading.
        assert!(headings(&reflow("戰了三個回合。第二回合開始了。")).is_empty());
        assert!(headings(&reflow("他笑了。第五十回甲乙丙丁戊己庚辛話說他走了。")).is_empty());
        // Separated headings are taken as before, run-in ones only in sequence.
        assert_eq!(
            headings(&reflow(
                "完了。第一回 甲乙丙丁 戊己庚辛 話說。好。第七回甲乙丙丁戊己庚辛話說。"
            )),
            ["第一回 甲乙丙丁 戊己庚辛"]
        );
    }

    #[test]
    fn chapters_that_end_in_a_quote_a_dash_or_closing_words() {
        // Made-up text. A quote that ends its sentence ends it for the
        // heading after it too.
        assert_eq!(
            headings(&reflow(
                "第一章雨夜他站在门口。她说：“进来吧。”第二章晚宴他们坐下了。她问：“好吃吗？”第三章告别他走了。"
            )),
            ["第一章雨夜", "第二章晚宴", "第三章告别"]
        );
        // A dash or the storyteller's closing words without a sentence end,
        // and a first heading right after the book's front matter.
        let line = "《某書》作者某人第一回甲乙丙丁戊己庚辛壬癸話說那日天晴。他笑了。正是——\
            第二回春風吹過小橋東秋雨落在長亭外卻說他走了。要知端的\
            第三回明月照人歸故里清風送客過江來話說那日。未知如何且看下回\
            第四回青山不語白雲閒綠水無聲黃葉落話說完了。";
        assert_eq!(
            headings(&reflow(line)),
            [
                "第一回甲乙丙丁戊己庚辛壬癸",
                "第二回春風吹過小橋東秋雨落在長亭外",
                "第三回明月照人歸故里清風送客過江來",
                "第四回青山不語白雲閒綠水無聲黃葉落",
            ]
        );
        // A quote broken off (快走——”), and a game's 第三节 inside a book
        // of 章 on the way to the next chapter.
        assert_eq!(
            headings(&reflow(
                "第1章替补席他坐着。第三节开始了。他喊：“快走——”第2章师父走了消息传来。第四节他上场了。"
            )),
            ["第1章替补席", "第2章师父走了"]
        );
        // A quote inside a quote that ends a sentence; a no-break space
        // after the number; sections (节) inside chapters (章) written
        // apart, the chapters run in.
        assert_eq!(
            headings(&reflow(
                "第1章风起他问：“她说‘走吧。’”第2章\u{a0}風起。他走了。第一节 甲 他来了。第3章雪夜他走了。"
            )),
            ["第1章风起", "第2章\u{a0}風起", "第一节 甲", "第3章雪夜"]
        );
        // In the text, the same words with no sequence are no heading.
        assert!(
            headings(&reflow(
                "他讀了第一回就睡了。正是——第五回甲乙丙丁戊己庚辛話說。"
            ))
            .is_empty()
        );
        let lone = "作者某人第一回甲乙丙丁戊己庚辛話說他來了。他走了。";
        assert!(headings(&reflow(lone)).is_empty());
        // After a heading, only the next numbers are taken without a
        // sentence end: 這是第二回了 is a word, 第二回 after 正是—— a heading.
        assert_eq!(
            headings(&reflow(
                "第一章 开始 他来了。她说这是第三章开头的事——第二章风起他走了。"
            )),
            ["第一章 开始", "第二章风起"]
        );
    }

    #[test]
    fn run_in_titles_with_a_comma_a_time_or_a_de() {
        // Couplets with a comma between halves of unequal length.
        assert_eq!(
            headings(&reflow(
                "完了。第一回甲乙丙丁戊己庚，辛壬癸子丑寅卯卻說他來。好。第二回春風吹過小橋東，秋雨落在長亭外話說那日。"
            )),
            [
                "第一回甲乙丙丁戊己庚，辛壬癸子丑寅卯",
                "第二回春風吹過小橋東，秋雨落在長亭外"
            ]
        );
        // Chapter titles before a word of time, and titles that hold 的.
        assert_eq!(
            headings(&reflow(
                "完了。第一章戒指第二天一早门开了。第二章重逢三日后雨停了。第三章江边的男人凌晨五点下雨。第四章合伙人下午三点开会。"
            )),
            [
                "第一章戒指",
                "第二章重逢",
                "第三章江边的男人",
                "第四章合伙人"
            ]
        );
        // Titles written as a sentence, and text that names again what the
        // title named.
        assert_eq!(
            headings(&reflow(
                "完了。第一章他终于来了门外站着一个人。第二章长老们的目光落下来。第三章望海楼望海楼在城东。第四章子时子时三刻钟响了。"
            )),
            [
                "第一章他终于来了",
                "第二章长老们的目光",
                "第三章望海楼",
                "第四章子时"
            ]
        );
        // Halves a character apart, where 卻說 shows the end; a marker in
        // the first half is no couplet with a comma.
        let got = reflow(
            "完了。第一回甲乙丙丁戊己庚，辛壬癸子丑寅卻說他來。好。第二回甲乙卻說他來，眾人都來了啊。",
        );
        let got = headings(&got);
        assert_eq!(got[0], "第一回甲乙丙丁戊己庚，辛壬癸子丑寅");
        assert!(!got[1].contains('眾'), "{got:?}");
        // 迴 for 回, as a converter writes 回心 (迴心), in the same sequence.
        assert_eq!(
            headings(&reflow(
                "完了。第一回甲乙丙丁戊己庚辛話說。好。第二迴心猿歸正六賊無蹤詩曰：好。第三回春風吹過秋雨落下卻說。"
            )),
            [
                "第一回甲乙丙丁戊己庚辛",
                "第二迴心猿歸正六賊無蹤",
                "第三回春風吹過秋雨落下"
            ]
        );
        // A name that opens many of the book's sentences opens the text
        // after a title; a short question is a title, its mark included.
        assert_eq!(
            headings(&reflow(
                "完了。第一章一把黑伞许知夏撑开伞。许知夏笑了。许知夏走了。第二章谁来了？门开了。许知夏回头。"
            )),
            ["第一章一把黑伞", "第二章谁来了？"]
        );
        // A common word that opens many sentences is no name.
        assert_eq!(
            headings(&reflow(
                "完了。第一章如果没有明天。没有人说话。没有人来。没有人走。第二章风起他来了。"
            )),
            ["第一章如果没有明天", "第二章风起"]
        );
        // 第二回合 is still a word.
        assert!(
            headings(&reflow(
                "完了。第一回 甲乙丙丁 戊己庚辛 話說。打了。第二回合他輸了。"
            ))
            .len()
                == 1
        );
    }

    #[test]
    fn balanced_quotes_stay_whole_and_stray_ones_do_not_swallow_the_line() {
        assert_eq!(
            reflow("他说：“走吧。我们走。”她点头。他走了。"),
            [
                Paragraph("他说：“走吧。我们走。”她点头。"),
                Paragraph("他走了。")
            ]
        );
        // An open quote keeps its sentences together, for a while.
        assert_eq!(reflow("他说：“走吧。她点头。").len(), 1);
        let long = format!("他说：“走吧。{}", "她点头。".repeat(200));
        assert!(reflow(&long).len() > 100);
        // The same mark again ends a quote left open: “走吧。“好。”
        assert_eq!(
            reflow("他说：“走吧。“好。”她点头。他走了。"),
            [
                Paragraph("他说：“走吧。“好。”她点头。"),
                Paragraph("他走了。")
            ]
        );
    }

    /// Made-up chapters of a dump that lost what came before its headings.
    fn chapter(n: &str, title: &str, end: &str) -> String {
        format!("第{n}回{title}話說那人走到橋頭，看見水裡一條魚。他笑了一笑{end}")
    }

    #[test]
    fn headings_after_an_unfinished_sentence_on_a_run_of_numbers() {
        let line: String = [
            chapter("一", "甲乙丙丁戊己庚辛壬癸子丑寅卯", ""),
            chapter("二", "金木水火土日月星辰風雲雷雨電", ""),
            // 中 after the unit reads on as words, but it is on the run.
            chapter("三", "中秋夜客來橋頭春分日人去江邊", ""),
            // A look back inside the text (第二回中) is no heading.
            format!(
                "他又說起第二回中那條魚。{}",
                chapter("四", "東南西北上下左右前後遠近高低", "")
            ),
            chapter("五", "一二三四五六七八九十百千萬億", ""),
        ]
        .concat();
        assert_eq!(
            headings(&reflow(&line)),
            [
                "第一回甲乙丙丁戊己庚辛壬癸子丑寅卯",
                "第二回金木水火土日月星辰風雲雷雨電",
                "第三回中秋夜客來橋頭春分日人去江邊",
                "第四回東南西北上下左右前後遠近高低",
                "第五回一二三四五六七八九十百千萬億",
            ]
        );
        // Three mentions do not make a run (他讀了第一回 … 第二回 …).
        assert!(
            headings(&reflow(
                "他讀了第一回甲乙丙丁就睡了他讀了第二回戊己庚辛就睡了"
            ))
            .is_empty()
        );
    }

    #[test]
    fn numbers_whose_zeros_were_lost_go_on_the_run() {
        // 第一回 for 第一〇回, 第一一回 for 第一一〇回 …: a text whose 〇 were lost.
        let written = ["八", "九", "一", "一一", "一二"];
        let line: String = written
            .iter()
            .map(|n| chapter(n, "甲乙丙丁戊己庚辛壬癸子丑寅卯", "。且聽下回分解。"))
            .collect();
        assert_eq!(headings(&reflow(&line)).len(), 5);
        // A game's rounds inside a chapter go back: text (第五回輪到他).
        let game = format!(
            "{}{}「好。」第五回輪到他，他說的是一句。「好。」第六回又輪到我，我說的是一句。{}",
            chapter("十九", "甲乙丙丁戊己庚辛壬癸子丑寅卯", "。且聽下回分解。"),
            chapter("二十", "金木水火土日月星辰風雲雷雨電", "。"),
            chapter("二十一", "東南西北上下左右前後遠近高低", "。"),
        );
        assert_eq!(headings(&reflow(&game)).len(), 3);
    }

    #[test]
    fn running_headers_before_headings_are_taken_out() {
        let line: String = (1..=4)
            .map(|n| {
                let n = ["一", "二", "三", "四"][n - 1];
                chapter(
                    n,
                    "甲乙丙丁戊己庚辛壬癸子丑寅卯",
                    "。且聽下回分解。橋頭集返回目錄",
                )
            })
            .collect();
        let pieces = reflow(&line);
        assert_eq!(headings(&pieces).len(), 4);
        // Before each heading and after the last chapter.
        assert!(
            !pieces
                .iter()
                .any(|p| matches!(p, Paragraph(t) if t.contains("返回目錄")))
        );
        assert!(pieces.contains(&Paragraph("且聽下回分解。")));
        // Before the next heading without a sentence end, when the words
        // stand alone before one heading: the closing words stay.
        let bare: String = [
            ("一", "。且聽下回分解。橋頭集"),
            ("二", "且聽下回分解橋頭集"),
            ("三", "且聽下回分解橋頭集"),
            ("四", "。"),
        ]
        .iter()
        .map(|(n, end)| chapter(n, "甲乙丙丁戊己庚辛壬癸子丑寅卯", end))
        .collect();
        let pieces = reflow(&bare);
        assert_eq!(headings(&pieces).len(), 4);
        assert!(
            !pieces
                .iter()
                .any(|p| matches!(p, Paragraph(t) if t.contains("橋頭集")))
        );
        assert_eq!(
            pieces
                .iter()
                .filter(|p| matches!(p, Paragraph(t) if t.ends_with("且聽下回分解")))
                .count(),
            2
        );
    }

    #[test]
    fn couplets_end_at_a_speaker_a_storyteller_or_a_whole_word() {
        // The book's halves are of seven; these of eight.
        let seven = "。第一回甲乙丙丁戊己庚辛壬癸子丑寅卯話說他來了。";
        let line = format!(
            "{seven}{}{}{}",
            "。第二回青山綠水白雲飛鳥東西南北春夏秋冬土地說：「好。」",
            "。第三回人去樓空月落烏啼甲乙丙丁戊己庚辛說話當時他走了。",
            "。第四回風雪夜歸林中客至江湖路遠孤芭蕉影他搖了一搖。",
        );
        assert_eq!(
            headings(&reflow(&line)),
            [
                "第一回甲乙丙丁戊己庚辛壬癸子丑寅卯",
                "第二回青山綠水白雲飛鳥東西南北春夏秋冬",
                "第三回人去樓空月落烏啼甲乙丙丁戊己庚辛",
                "第四回風雪夜歸林中客至江湖路遠孤芭蕉影",
            ]
        );
    }

    #[test]
    fn stories_of_a_collection_and_volumes_of_a_web_novel() {
        // Made-up stories of a collection, each opening with a poem or a
        // marker right after its title.
        let line = [
            "第一卷張老漢夜渡寒江水遠山長春去早，花開花落夜來風。誰知江上人家好，一片孤帆入夢中。話說那人走到橋頭。",
            "第二卷李秀才三試文章橋頭賣酒客，江上釣魚翁。醉裡乾坤大，壺中日月長。話說那人走到橋頭。",
            "第三卷趙娘子獨守空房王先生再渡長江詩曰：月落烏啼霜滿天。話說那人走到橋頭。",
        ]
        .concat();
        assert_eq!(
            headings(&reflow(&line)),
            [
                "第一卷張老漢夜渡寒江",
                "第二卷李秀才三試文章",
                "第三卷趙娘子獨守空房王先生再渡長江"
            ]
        );
        // A web novel's volume ends before its first chapter.
        assert_eq!(
            headings(&reflow(
                "完了。第一卷風起第一章開端他來了。她走了。第二章相遇她來了。第二卷雲湧第三章遠行他走了。"
            )),
            [
                "第一卷風起",
                "第一章開端",
                "第二章相遇",
                "第二卷雲湧",
                "第三章遠行"
            ]
        );
    }

    #[test]
    fn chapter_titles_end_before_a_full_name_or_the_hour_of_night() {
        assert_eq!(
            headings(&reflow(
                "完了。第1章韩主任韩振东推门进来。他坐下。第2章雪夜三更时分他走了。第3章老周周德海笑了。"
            )),
            ["第1章韩主任", "第2章雪夜", "第3章老周"]
        );
    }

    #[test]
    fn run_in_titles_end_before_sounds_times_and_clauses_of_the_text() {
        assert_eq!(
            headings(&reflow(concat!(
                "完了。第一章三更天梆，梆，梆。",
                "第二章十月初七，大雪十月初七，雪下了一夜。",
                "第三章凌晨四点十七分他接到电话。",
                "第四章周五晚上的泡面周五晚上九点，我回家。",
                "第五章一场暴雨冲垮了半条路他没想到。",
                "第六章真相大白从宫里出来，天亮了。",
                "第七章初入宫门永安十二年春，选秀开始。",
                "第八章比稿接下来的两个礼拜很忙。",
                "第九章停电的夜里他没睡。",
                "第十章开春整个冬天都在下雨。",
                "第十一章片场开机那天，下了一场雨。",
                "第十二章一碗羹那一夜之后，他没来。",
            ))),
            [
                "第一章三更天",
                "第二章十月初七，大雪",
                "第三章凌晨四点十七分",
                "第四章周五晚上的泡面",
                "第五章一场暴雨冲垮了半条路",
                "第六章真相大白",
                "第七章初入宫门",
                "第八章比稿",
                "第九章停电的夜里",
                "第十章开春",
                "第十一章片场",
                "第十二章一碗羹",
            ]
        );
    }

    #[test]
    fn run_in_titles_end_before_a_name_the_text_names_again() {
        assert_eq!(
            headings(&reflow(concat!(
                "完了。第一章三年一度的测灵大会钱沐风是外门弟子。钱沐风笑了。钱沐风走了。",
                "第二章程屿白，你别走！他站住了。",
                "第三章村长王满仓咣咣咣，王满仓喊了。王满仓走了。王满仓笑了。",
                "第四章监控里少了十二分钟啪！门开了。",
                "第五章网吧夜班极光网吧开在江边。极光网吧很小。",
                "第六章一剑落下，满场皆静他们谁也没动。",
            ))),
            [
                "第一章三年一度的测灵大会",
                "第二章程屿白，你别走！",
                "第三章村长王满仓",
                "第四章监控里少了十二分钟",
                "第五章网吧夜班",
                "第六章一剑落下，满场皆静",
            ]
        );
    }

    #[test]
    fn titles_the_text_opens_with_again_and_titles_written_as_a_sentence() {
        assert_eq!(
            headings(&reflow(concat!(
                "完了。第一章「別開門！」「別開門！聽見什麼都別開。」",
                "第二章咚、咚、咚咚、咚、咚。門響了。",
                "第三章她她总是第一个到。",
                "第四章裁员名单上有我的名字周一早上九点，我到了公司。",
                "第五章外婆的菜谱里少了一页她一直没发现。",
                "第六章房东太太说，那间房从来没人住过第二天一早，我去问了。",
                "第七章首场比赛就输了他们输了。输得很惨。",
            ))),
            [
                "第一章「別開門！」",
                "第二章咚、咚、咚",
                "第三章她",
                "第四章裁员名单上有我的名字",
                "第五章外婆的菜谱里少了一页",
                "第六章房东太太说，那间房从来没人住过",
                "第七章首场比赛就输了",
            ]
        );
        // A title that reads on as words (章里) next in the sequence.
        assert_eq!(
            headings(&reflow(concat!(
                "完了。第一章出水他挖了三天。第二章里正来了他骑着驴。",
                "第三章秋收他割了稻子。"
            ))),
            ["第一章出水", "第二章里正来了", "第三章秋收"]
        );
        // A chapter that opens with a quote it does not repeat keeps a bare
        // heading (the quote is the text's).
        assert_eq!(
            headings(&reflow("完了。第一章“走吧。”他说。第二章“好。”她说。")),
            ["第一章", "第二章"]
        );
    }

    #[test]
    fn a_short_book_on_one_line_is_cut_but_not_a_table_of_contents() {
        let body = "他走到橋頭，看見水裡一條魚，就蹲下來看了很久。".repeat(5);
        let short = format!("第1章 橋頭{body}第2章 魚{body}第3章 雨{body}");
        assert!(short.len() < LONG_LINE_BYTES);
        assert!(holds_chapters(&short));
        assert!(!holds_chapters(
            "目錄 第1章 橋頭 第2章 魚 第3章 雨 第4章 風"
        ));
        assert!(!holds_chapters(&format!("第1章 橋頭{body}第3章 雨{body}")));
    }
}
