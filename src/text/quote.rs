//! Paragraph → spans of narration and quoted dialogue.
//!
//! Dialogue marks (「」 『』 “” ‘’ ＂＂ and ASCII `"`) are paired in order inside
//! one paragraph; marks of another kind inside a quote are nested and stay in
//! the outer speech. A quote that is never closed ends with its paragraph.
//! Short quoted terms in the middle of a narration sentence
//! (学会了什么叫做“枪打出头鸟”) are scare quotes and stay narration, and so
//! does everything inside a 《book title》.
//!
//! The scanner works on byte offsets of the paragraph and allocates nothing
//! but the span list.

use memchr::memmem;
use serde::{Deserialize, Serialize};

/// Whether a span is read by the narrator or spoken by a character.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SegmentKind {
    Narration,
    Dialogue,
}

/// A piece of one paragraph, in reading order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub kind: SegmentKind,
    /// Original text, quote marks included for dialogue.
    pub text: String,
}

/// A span as byte offsets into its paragraph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanRange {
    pub kind: SegmentKind,
    pub start: usize,
    pub end: usize,
    /// The opening mark of a dialogue span.
    pub open: Option<char>,
    /// False for a dialogue span whose quote was still open at the paragraph end.
    pub closed: bool,
}

impl SpanRange {
    /// The span's text within `paragraph`.
    pub fn text<'a>(&self, paragraph: &'a str) -> &'a str {
        &paragraph[self.start..self.end]
    }
}

/// Longest nickname in quote marks that may be the subject of a speech verb.
pub(crate) const NICKNAME_MAX_CHARS: usize = 4;

/// Longest quoted term (in characters) that may still be a scare quote.
const SCARE_MAX_CHARS: usize = 12;

/// The closing mark of a dialogue opening mark.
pub fn closer_of(open: char) -> Option<char> {
    Some(match open {
        '「' => '」',
        '『' => '』',
        '“' => '”',
        '‘' => '’',
        '＂' => '＂',
        '"' => '"',
        _ => return None,
    })
}

/// Splits a paragraph into narration and dialogue spans (owned text).
pub fn split_paragraph(paragraph: &str) -> Vec<Span> {
    let mut ranges = Vec::new();
    scan_paragraph(paragraph, &mut ranges);
    ranges
        .into_iter()
        .map(|r| Span {
            kind: r.kind,
            text: r.text(paragraph).to_owned(),
        })
        .collect()
}

/// Splits a paragraph into narration and dialogue spans, appended to `out`.
/// Adjacent narration (including scare quotes) is one span; a run of bare
/// punctuation between two quotes joins the span before it. Leading and
/// trailing whitespace of narration is left out.
pub fn scan_paragraph(paragraph: &str, out: &mut Vec<SpanRange>) {
    let first = out.len();
    let bytes = paragraph.as_bytes();
    let mut narration_start = 0;
    let mut i = 0;
    // Set once no 》 is left, so unclosed 《 do not rescan the paragraph.
    let mut titles_closed = true;
    while i < bytes.len() {
        i = next_mark(bytes, i, bytes.len());
        let Some(c) = paragraph[i..].chars().next() else {
            break;
        };
        let width = c.len_utf8();
        if c == '《' && titles_closed {
            // A title is opaque: quote marks inside it are part of the title.
            match paragraph[i + width..].find('》') {
                Some(rel) => {
                    i += width + rel + '》'.len_utf8();
                    continue;
                }
                None => titles_closed = false,
            }
        }
        let Some(close) = closer_of(c) else {
            i += width;
            continue;
        };
        let (inner_end, end, closed) = find_close(paragraph, i + width, c, close);
        let inner = &paragraph[i + width..inner_end];
        let mut back = paragraph[narration_start..i]
            .chars()
            .rev()
            .filter(|c| !c.is_whitespace());
        let before = back.next();
        let before2 = back.next();
        let before = before.or_else(|| last_visible(paragraph, out, first, narration_start));
        let after = paragraph[end..].chars().next();
        let shown = matches!(before, Some('：' | '，' | '—'))
            && is_shown(&paragraph[narration_start..i], inner);
        if closed && (shown || is_scare_quote(before, before2, inner, after, &paragraph[end..])) {
            i = end;
            continue;
        }
        push_narration(paragraph, out, first, narration_start, i);
        out.push(SpanRange {
            kind: SegmentKind::Dialogue,
            start: i,
            end,
            open: Some(c),
            closed,
        });
        i = end;
        narration_start = end;
    }
    push_narration(paragraph, out, first, narration_start, bytes.len());
}

/// The last non-space character before `at` when the narration run before a
/// quote is empty (two quotes in a row).
fn last_visible(paragraph: &str, out: &[SpanRange], first: usize, at: usize) -> Option<char> {
    if out.len() == first {
        return None;
    }
    paragraph[..at].chars().rev().find(|c| !c.is_whitespace())
}

/// Longest stretch (bytes, about 3,000 Han characters) searched for a quote's
/// closing mark: a quote is never longer unless it is balanced.
const MAX_QUOTE_BYTES: usize = 3000 * 3;

/// An unclosed quote running further than this (bytes) ends at its first
/// sentence end instead of the paragraph end.
const MAX_UNCLOSED_BYTES: usize = 200 * 3;

/// Is `c` a mark that both opens and closes (ASCII or full-width `"`)?
fn is_symmetric(c: char) -> bool {
    matches!(c, '"' | '＂')
}

/// Does `close` end a quote opened by `open`? Besides its own closing mark,
/// `“` takes an ASCII or full-width `"` (books that close “ with ") and
/// `『` takes `」` (『…」).
fn closes(open: char, close: char) -> bool {
    closer_of(open) == Some(close)
        || (matches!(open, '“' | '"' | '＂') && matches!(close, '”' | '"' | '＂'))
        || (matches!(open, '「' | '『') && matches!(close, '」' | '』'))
}

fn ends_sentence(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '!' | '?' | '…')
}

/// Where the quote opened by `open` just before `from` ends: (end of the
/// quoted text, end including the closing mark, closed?). Marks nest in a
/// stack; a mismatched mark of the same family closes (『…」); the opening
/// mark again right after a sentence end, at the outer level, means the
/// closing mark is missing (「走。「好」), and with no closing mark at all
/// it stands for one (“你好。“他说。). An unclosed quote ends with its
/// paragraph, or at its first sentence end when the paragraph is long.
fn find_close(paragraph: &str, from: usize, open: char, _close: char) -> (usize, usize, bool) {
    find_close_in(paragraph, from, open, false)
}

/// [`find_close`]; with `strict`, the opening mark again at the outer level
/// always ends the quote (text whose paragraph breaks were lost).
fn find_close_in(paragraph: &str, from: usize, open: char, strict: bool) -> (usize, usize, bool) {
    find_close_reading(paragraph, from, open, strict, Reading::Marks)
}

/// The open marks [`find_close_reading`] waits to see closed, innermost
/// last: at most [`MarkStack::DEPTH`], kept on the stack (a quote is scanned
/// for every quote mark of a book, and a vector cost an allocation each).
struct MarkStack {
    marks: [char; MarkStack::DEPTH],
    len: usize,
}

impl MarkStack {
    /// Most marks kept open inside one another.
    const DEPTH: usize = 16;

    fn new(open: char) -> MarkStack {
        MarkStack {
            marks: [open; MarkStack::DEPTH],
            len: 1,
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn last(&self) -> Option<char> {
        self.len.checked_sub(1).map(|i| self.marks[i])
    }

    /// The mark under the innermost one (`len() > 1`).
    fn below_top(&self) -> char {
        self.marks[self.len - 2]
    }

    /// Keeps `c` open; past [`MarkStack::DEPTH`] marks it is not kept.
    fn push(&mut self, c: char) {
        if self.len < MarkStack::DEPTH {
            self.marks[self.len] = c;
            self.len += 1;
        }
    }

    fn pop(&mut self) {
        self.len = self.len.saturating_sub(1);
    }

    fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
}

/// How [`find_close_reading`] goes through the text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Past the Han characters by bytes, from one possible mark to the next.
    Marks,
    /// One character at a time (what the property test holds `Marks` to).
    #[cfg(test)]
    EveryCharacter,
}

/// [`find_close_in`], reading the text as `reading` says.
fn find_close_reading(
    paragraph: &str,
    from: usize,
    open: char,
    strict: bool,
    reading: Reading,
) -> (usize, usize, bool) {
    let limit = floor_boundary(paragraph, from.saturating_add(MAX_QUOTE_BYTES));
    let mut stack = MarkStack::new(open);
    let mut first_reopen: Option<usize> = None;
    let mut reopen_after_sentence: Option<usize> = None;
    let mut any_close = false;
    // The last character that is no space ended a sentence.
    let mut after_sentence = false;
    let bytes = paragraph.as_bytes();
    let mut at = from;
    while at < limit {
        let mark = if reading == Reading::Marks {
            next_mark(bytes, at, limit)
        } else {
            at
        };
        if mark > at {
            // Han characters and the like: neither marks nor spaces nor
            // sentence ends.
            after_sentence = false;
            at = mark;
            continue;
        }
        let Some(c) = paragraph[at..].chars().next() else {
            break;
        };
        let top = stack.last().unwrap_or(open);
        if is_symmetric(c) && closes(top, c) {
            stack.pop();
            any_close = true;
        } else if c == open && stack.len() == 1 && !is_symmetric(c) {
            if strict {
                return (at, at, false);
            }
            first_reopen.get_or_insert(at);
            if after_sentence {
                reopen_after_sentence.get_or_insert(at);
            }
            stack.push(c);
        } else if closer_of(c).is_some() {
            if stack.len() < MarkStack::DEPTH {
                stack.push(c);
            }
        } else if matches!(c, '」' | '』' | '”' | '’') {
            if closes(top, c) {
                stack.pop();
                any_close = true;
            } else if stack.len() > 1 && closes(stack.below_top(), c) {
                // An inner quote left open: the closing mark is the outer one's.
                stack.truncate(stack.len() - 2);
                any_close = true;
            }
        }
        if stack.is_empty() {
            return (at, at + c.len_utf8(), true);
        }
        if !c.is_whitespace() {
            after_sentence = ends_sentence(c);
        }
        at += c.len_utf8();
    }
    if let (false, Some(at)) = (any_close, first_reopen) {
        return (at, at + open.len_utf8(), true);
    }
    if let Some(at) = reopen_after_sentence {
        return (at, at, false);
    }
    let end = if paragraph.len() - from > MAX_UNCLOSED_BYTES {
        first_sentence_end(&paragraph[..limit], from).unwrap_or(paragraph.len())
    } else {
        paragraph.len()
    };
    (end, end, false)
}

/// The first byte from `from` (before `to`, else `to`) that may begin a
/// quote mark, 《, a space or a sentence end: an ASCII byte or the lead byte
/// of U+0080…U+00BF (0xC2: the spaces U+0085, U+00A0), U+1000…U+1FFF (0xE1,
/// U+1680 is a space),
/// U+2000…U+3FFF (0xE2, 0xE3: ‘ ’ “ ” …, 「 」 『 』 《 。, the spaces) or
/// U+F000…U+FFFF (0xEF: ＂ ！ ？). The Han characters between are skipped
/// without decoding them.
fn next_mark(bytes: &[u8], from: usize, to: usize) -> usize {
    // From one character's lead byte to the next: `from` and `to` are
    // character boundaries of a `str`.
    let mut i = from;
    while i < to {
        let b = bytes[i];
        // Most characters: CJK ideographs, of three bytes.
        if (0xE4..=0xEE).contains(&b) {
            i += 3;
            continue;
        }
        if b < 0x80 || matches!(b, 0xC2 | 0xE1 | 0xE2 | 0xE3 | 0xEF) {
            return i;
        }
        i += if b < 0xE0 {
            2
        } else if b < 0xF0 {
            3
        } else {
            4
        };
    }
    to
}

/// End of the first sentence after `from` (its closing marks included).
fn first_sentence_end(text: &str, from: usize) -> Option<usize> {
    let (k, c) = text[from..]
        .char_indices()
        .find(|(_, c)| ends_sentence(*c))?;
    let mut end = from + k + c.len_utf8();
    while let Some(n) = text[end..].chars().next() {
        if ends_sentence(n) || matches!(n, '」' | '』' | '”' | '’' | '"' | '＂') {
            end += n.len_utf8();
        } else {
            break;
        }
    }
    Some(end)
}

pub(crate) fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The end (after its closing mark) of a quote opened by `open` right before
/// `from` when it closes within `max_bytes` without the same mark opening
/// again at its outer level; `None` for a quote left open.
pub fn balanced_end(text: &str, from: usize, open: char, max_bytes: usize) -> Option<usize> {
    let window = floor_boundary(text, from.saturating_add(max_bytes));
    match find_close_in(&text[..window], from, open, true) {
        (_, end, true) => Some(end),
        _ => None,
    }
}

/// Is a closed quote a quoted term inside narration (a nickname, a title, an
/// inscription, a word) rather than speech? Speech has a speech verb or a
/// colon before it, a speech verb after it, ends in punctuation, or stands
/// as its own sentence.
fn is_scare_quote(
    before: Option<char>,
    before2: Option<char>,
    inner: &str,
    after: Option<char>,
    after_text: &str,
) -> bool {
    let inner = inner.trim();
    if inner.is_empty() {
        return true;
    }
    // A quote ending in punctuation is a sentence (or a split sentence: “不过，”).
    if inner
        .chars()
        .last()
        .is_some_and(|c| is_clause_punct(c) || matches!(c, '~' | '～' | '"'))
    {
        return false;
    }
    let n = inner.chars().count();
    let clauses = inner.chars().any(is_clause_punct);
    if n > 2 * SCARE_MAX_CHARS || (clauses && n > SCARE_MAX_CHARS + 8) {
        return false;
    }
    // The sentence goes on through the quote: “放风筝”是…, “列传”么
    let runs_on = after.is_some_and(|a| is_han_char(a) || matches!(a, '，' | '、'));
    let verb_after = || {
        let clause: String = after_text
            .chars()
            .take_while(|c| !is_clause_punct(*c) && !matches!(c, '“' | '「' | '『'))
            .take(10)
            .collect();
        clause.chars().any(is_speech_tail) || clause.contains("笑")
    };
    match before {
        Some('：' | ':') => false,
        // 写道“星辉辅弼”, 题道, 刻道: an inscription.
        Some(b) if is_speech_tail(b) => {
            b == '道'
                && before2.is_some_and(|p| {
                    matches!(
                        p,
                        '写' | '寫' | '题' | '題' | '刻' | '书' | '書' | '批' | '注'
                    )
                })
        }
        // A quote that opens a sentence is speech unless the sentence runs on.
        // “萝卜花”说: a nickname as the subject of a speech verb right after it.
        None | Some('。' | '！' | '？' | '!' | '?' | '…' | '—' | '」' | '』' | '”' | '’') => {
            !clauses
                && runs_on
                && after.is_some_and(is_han_char)
                && (!verb_after()
                    || (n <= NICKNAME_MAX_CHARS
                        && inner.chars().all(is_han_char)
                        && after.is_some_and(is_speech_tail)))
        }
        // After a comma: a term only when the sentence runs on through it.
        Some('，' | ',' | '；' | ';') => !clauses && runs_on && !verb_after(),
        // Inside a sentence (叫他“锦豹子”, 所谓的“塞翁失马，安知非福”罢).
        Some(_) => !clauses || runs_on,
    }
}

/// Words before a colon that show a word rather than say it (屏幕上跳出两个
/// 字：“蔓姐”, 来电显示：“妈”).
const SHOWING: &[&str] = &[
    "屏幕",
    "来电",
    "來電",
    "显示",
    "顯示",
    "两个字",
    "兩個字",
    "三个字",
    "三個字",
    "几个字",
    "幾個字",
];

/// Longest word a screen shows (in characters).
const SHOWN_MAX_CHARS: usize = 6;

/// Is a quote after a colon, a comma or a dash a word a screen shows (屏幕上
/// 跳出两个字：“蔓姐”, ——“母上”)? A short quote with no punctuation whose clause before the colon
/// says so: narration, not speech.
fn is_shown(narration: &str, inner: &str) -> bool {
    // The quote first: most are long, and end in punctuation.
    let inner = inner.trim();
    if inner.is_empty()
        || inner.len() > SHOWN_MAX_CHARS * 4
        || inner.chars().count() > SHOWN_MAX_CHARS
        || inner
            .chars()
            .any(|c| is_clause_punct(c) || c == '~' || c == '～')
    {
        return false;
    }
    let clause = narration
        .trim_end()
        .trim_end_matches(['：', '，', '—'])
        .rsplit(|c: char| is_clause_punct(c))
        .next()
        .unwrap_or("");
    SHOWING.iter().any(|w| clause.contains(w))
        // 她看着屏幕说：“蔓姐”: said.
        && !clause.chars().last().is_some_and(is_speech_tail)
}

/// Characters that end a speech verb right before a quote (他说“好”).
fn is_speech_tail(c: char) -> bool {
    matches!(
        c,
        '说' | '說' | '道' | '问' | '問' | '喊' | '答' | '嚷' | '吼' | '骂' | '罵'
    )
}

fn is_han_char(c: char) -> bool {
    super::decode::is_han(c)
}

/// Clause punctuation: a quote containing it is a sentence, not a term.
pub fn is_clause_punct(c: char) -> bool {
    matches!(
        c,
        '，' | '。'
            | '！'
            | '？'
            | '；'
            | '：'
            | '…'
            | '—'
            | ','
            | '!'
            | '?'
            | ';'
            | ':'
            | '、'
            | '.'
    )
}

/// True when the text has something to say (a letter, digit or Han character).
pub fn is_speakable(text: &str) -> bool {
    // The common Han block and the quote marks first: every code point of
    // U+4E00…U+9FFF is a letter, none of the general punctuation
    // (U+2000…U+206F: “ ” ‘ ’ …) nor of 、。〈〉《》「」『』【】 is; the general
    // lookup is a search of Unicode's tables.
    text.chars().any(|c| match c {
        '\u{4E00}'..='\u{9FFF}' => true,
        '\u{2000}'..='\u{206F}' | '\u{3001}' | '\u{3002}' | '\u{3008}'..='\u{3011}' => false,
        _ => c.is_alphanumeric(),
    })
}

/// Words of saying that end a speaker's tag before a colon (鳳姐道：).
const SAYING: &str = "道說说問问曰罵骂叫喊嚷";

/// What introduces verse or a comment, not speech (詩曰：, 贊曰：).
const NOT_SPEECH: &[&str] = &[
    "詩曰", "诗曰", "詞曰", "词曰", "贊曰", "赞曰", "偈曰", "頌曰", "颂曰", "評曰", "评曰", "書曰",
    "书曰",
];

/// Fewest speakers' tags a book needs to be read as one that writes speech
/// without quote marks.
const MIN_UNMARKED_TAGS: usize = 20;

/// Where a speaker's tag ends in `paragraph`: the byte offsets right after
/// each colon that follows a word of saying (鳳姐道：, 問：), verse
/// introductions (詩曰：) left out.
fn speech_tags(paragraph: &str) -> impl Iterator<Item = usize> + '_ {
    paragraph
        .match_indices(['：', ':'])
        .filter(|&(at, _)| is_speech_tag(paragraph, at))
        .map(|(at, colon)| at + colon.len())
}

/// Does the colon at byte `at` of `paragraph` end a speaker's tag: a word of
/// saying right before it, not a verse introduction?
fn is_speech_tag(paragraph: &str, at: usize) -> bool {
    let before = &paragraph[..at];
    before
        .chars()
        .next_back()
        .is_some_and(|c| SAYING.contains(c))
        && !NOT_SPEECH.iter().any(|w| before.ends_with(w))
}

/// Does a book write its speech without quote marks (鳳姐道：我有話和你商量。
/// as many old e-texts do)? At least [`MIN_UNMARKED_TAGS`] speakers' tags
/// and fewer than one opening quote mark for every ten of them.
pub fn speech_without_marks<'a>(paragraphs: impl Iterator<Item = &'a str> + Clone) -> bool {
    // Every paragraph of every book passes here: marks and colons are found
    // by byte search (memchr's SIMD), and the words before a colon are read
    // only where colons could outnumber the marks ten to one.
    let colon = memmem::Finder::new("：");
    let colons = |p: &'a str| {
        let bytes = p.as_bytes();
        colon
            .find_iter(bytes)
            .chain(memchr::memchr_iter(b':', bytes))
    };
    let opens = ["「", "“", "『"].map(memmem::Finder::new);
    let (mut all_colons, mut marks) = (0, 0);
    for p in paragraphs.clone() {
        all_colons += colons(p).count();
        marks += opens
            .iter()
            .map(|f| f.find_iter(p.as_bytes()).count())
            .sum::<usize>();
    }
    if all_colons < MIN_UNMARKED_TAGS || all_colons <= marks * 10 {
        return false;
    }
    let tags: usize = paragraphs
        .map(|p| colons(p).filter(|&at| is_speech_tag(p, at)).count())
        .sum();
    tags >= MIN_UNMARKED_TAGS && marks * 10 < tags
}

/// [`scan_paragraph`] for a book that writes speech without quote marks:
/// after a speaker's tag (鳳姐道：) the words up to the end of that sentence
/// are dialogue, with no marks of their own (`open` is `None`), and so is
/// each sentence after it that reads as spoken ([`reads_as_spoken`]), up to
/// the first that does not or the sentence of the next tag.
///
/// `speaking`: the paragraph before, cut from the same line (a book on one
/// line is cut into paragraphs at sentence ends), left a speech going on at
/// its end; then this paragraph's first sentences that read as spoken go on
/// with it. Gives back whether this paragraph leaves a speech going on: its
/// last dialogue span then is not `closed`, so the speaker rules keep its
/// speaker for what follows.
pub fn scan_unmarked(paragraph: &str, out: &mut Vec<SpanRange>, speaking: bool) -> bool {
    let first = out.len();
    let mut narration_start = 0;
    let tags: Vec<usize> = speech_tags(paragraph)
        .filter(|&at| !reported(paragraph, at))
        .collect();
    if speaking {
        let limit = tags
            .first()
            .map_or(paragraph.len(), |&next| sentence_of(paragraph, next));
        let end = spoken_from(paragraph, 0, limit);
        if end > 0 && is_speakable(&paragraph[..end]) {
            out.push(unmarked_dialogue(0, end));
            narration_start = end;
        }
    }
    for (t, &start) in tags.iter().enumerate() {
        if start < narration_start {
            continue;
        }
        // Never past the next speaker's tag: where a text lost its sentence
        // ends (我就來鳳姐道：…), up to the last mark before that tag, and
        // nothing when there is none.
        let next = tags.get(t + 1).copied().unwrap_or(paragraph.len());
        let Some(end) = sentence_end(paragraph, start, next).or_else(|| {
            if next == paragraph.len() {
                return Some(next);
            }
            paragraph[start..next]
                .char_indices()
                .rfind(|(_, c)| is_clause_punct(*c) && !matches!(c, '：' | ':'))
                .map(|(k, c)| with_closers(paragraph, start + k + c.len_utf8()))
        }) else {
            continue;
        };
        let limit = if next == paragraph.len() {
            next
        } else {
            sentence_of(paragraph, next)
        };
        let end = spoken_from(paragraph, end, limit);
        if !is_speakable(&paragraph[start..end]) {
            continue;
        }
        push_narration(paragraph, out, first, narration_start, start);
        out.push(unmarked_dialogue(start, end));
        narration_start = end;
    }
    // Speech that ran to the paragraph's end may go on in the next one.
    let open = narration_start > 0
        && paragraph[narration_start..].trim().is_empty()
        && out.len() > first
        && out.last().is_some_and(|s| s.kind == SegmentKind::Dialogue);
    if open && let Some(last) = out.last_mut() {
        last.closed = false;
    }
    push_narration(paragraph, out, first, narration_start, paragraph.len());
    open
}

/// A dialogue span without quote marks (closed until the paragraph's end
/// says otherwise).
fn unmarked_dialogue(start: usize, end: usize) -> SpanRange {
    SpanRange {
        kind: SegmentKind::Dialogue,
        start,
        end,
        open: None,
        closed: true,
    }
}

/// Where the sentence that holds byte `at` begins: after the last sentence
/// end before it (0 when there is none).
fn sentence_of(paragraph: &str, at: usize) -> usize {
    paragraph[..at]
        .char_indices()
        .rfind(|(_, c)| ends_sentence(*c) && *c != '…')
        .map_or(0, |(k, c)| with_closers(paragraph, k + c.len_utf8()))
}

/// `end` moved over the sentences from there that read as spoken, up to
/// `limit`.
fn spoken_from(paragraph: &str, mut end: usize, limit: usize) -> usize {
    while end < limit {
        let more = sentence_end(paragraph, end, limit).unwrap_or(limit);
        if !reads_as_spoken(&paragraph[end..more]) {
            break;
        }
        end = more;
    }
    end
}

/// Is the speaker's tag that ends at byte `at` one a speaker quotes (我道：,
/// 你說：): its clause opens with "I" or "you", which an old novel's
/// narrator never says, so it is speech inside speech, not a new speaker.
fn reported(paragraph: &str, at: usize) -> bool {
    let before = paragraph[..at].trim_end_matches(['：', ':']);
    let clause = before
        .rfind(is_clause_punct)
        .map_or(before, |k| &before[k..])
        .trim_start_matches(|c: char| is_clause_punct(c) || c.is_whitespace());
    clause.starts_with(['我', '你', '俺', '咱', '吾', '您'])
}

/// Where the first sentence of `paragraph[from..to]` ends (after its end
/// marks and any closing quote marks), if it ends before `to`; an ellipsis
/// does not end it.
fn sentence_end(paragraph: &str, from: usize, to: usize) -> Option<usize> {
    paragraph[from..to]
        .char_indices()
        .find(|(_, c)| ends_sentence(*c) && *c != '…')
        .map(|(k, c)| with_closers(paragraph, from + k + c.len_utf8()))
}

/// `at` moved past the sentence-end and closing quote marks that follow it.
fn with_closers(paragraph: &str, at: usize) -> usize {
    at + paragraph[at..]
        .chars()
        .take_while(|c| ends_sentence(*c) || matches!(c, '」' | '”' | '』'))
        .map(char::len_utf8)
        .sum::<usize>()
}

/// Does a sentence after a speaker's first one go on speaking: it asks or
/// exclaims, or it says "you" or "I" (你, 我, 吾, 俺, 汝 …), which narration
/// of an old novel does not. Measured on books with quote marks taken out
/// (BENCHMARKS.md, session 39): 97–99 % of such sentences right after a
/// speech are speech, against half of the others.
fn reads_as_spoken(sentence: &str) -> bool {
    let body =
        sentence.trim_end_matches(|c: char| matches!(c, '」' | '”' | '』') || c.is_whitespace());
    body.ends_with(['！', '？', '!', '?'])
        || sentence.contains(['你', '我', '吾', '俺', '咱', '您', '汝', '爾', '尔'])
}

/// Adds the narration `paragraph[start..end]` (trimmed); bare punctuation
/// joins the previous span of this paragraph instead.
fn push_narration(
    paragraph: &str,
    out: &mut Vec<SpanRange>,
    first: usize,
    start: usize,
    end: usize,
) {
    let raw = &paragraph[start..end];
    let trimmed = raw.trim_start();
    let start = start + (raw.len() - trimmed.len());
    let trimmed = trimmed.trim_end();
    let end = start + trimmed.len();
    if trimmed.is_empty() {
        return;
    }
    if out.len() > first && !is_speakable(trimmed) {
        if let Some(last) = out.last_mut() {
            last.end = end;
        }
        return;
    }
    out.push(SpanRange {
        kind: SegmentKind::Narration,
        start,
        end,
        open: None,
        closed: true,
    });
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use SegmentKind::*;

    #[test]
    fn a_space_of_any_width_after_a_sentence_end_is_read() {
        // The reopened mark after 。 and a space: every space a byte may
        // begin (U+00A0 0xC2, U+1680 0xE1, U+2003 0xE2, U+3000 0xE3).
        for space in [' ', '\u{a0}', '\u{85}', '\u{1680}', '\u{2003}', '\u{3000}'] {
            let paragraph = format!("“走。{space}“好”");
            assert_eq!(
                find_close_in(&paragraph, '“'.len_utf8(), '“', false),
                find_close_reading(
                    &paragraph,
                    '“'.len_utf8(),
                    '“',
                    false,
                    Reading::EveryCharacter
                ),
                "U+{:04X}",
                space as u32
            );
        }
    }

    #[test]
    fn speakable_as_unicode_says() {
        for c in ('\u{2000}'..='\u{206F}')
            .chain('\u{3000}'..='\u{3011}')
            .chain(['一', '龥', '\u{9FFF}'])
        {
            assert_eq!(
                is_speakable(&c.to_string()),
                c.is_alphanumeric(),
                "U+{:04X}",
                c as u32
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Skipping Han text by bytes finds the same close as reading every
        /// character, marks, spaces and sentence ends anywhere.
        #[test]
        fn the_close_is_that_of_reading_every_character(
            text in "[他说好。！？!?…，“”‘’「」『』\"＂《》 \u{3000}\u{a0}\u{2003}\u{1680}aé𠀀]{0,60}",
            open in proptest::sample::select(vec!['“', '‘', '「', '『', '"', '＂']),
            strict in any::<bool>(),
        ) {
            let paragraph = format!("{open}{text}");
            let from = open.len_utf8();
            prop_assert_eq!(
                find_close_in(&paragraph, from, open, strict),
                find_close_reading(&paragraph, from, open, strict, Reading::EveryCharacter)
            );
        }
    }

    fn kinds(p: &str) -> Vec<(SegmentKind, String)> {
        split_paragraph(p)
            .into_iter()
            .map(|s| (s.kind, s.text))
            .collect()
    }

    #[test]
    fn corner_brackets_and_curly_quotes_are_dialogue() {
        assert_eq!(
            kinds("毛仲說：「殺！」他轉身走了。"),
            [
                (Narration, "毛仲說：".into()),
                (Dialogue, "「殺！」".into()),
                (Narration, "他轉身走了。".into())
            ]
        );
        assert_eq!(
            kinds("“不过，”胡永合紧接着话茬，“我在想。”"),
            [
                (Dialogue, "“不过，”".into()),
                (Narration, "胡永合紧接着话茬，".into()),
                (Dialogue, "“我在想。”".into())
            ]
        );
    }

    #[test]
    fn scare_quotes_stay_narration() {
        assert_eq!(kinds("他学会了什么叫做“枪打出头鸟”。").len(), 1);
        assert_eq!(kinds("被对手的火炮“放风筝”了。")[0].0, Narration);
        assert_eq!(kinds("“放风筝”是一种打法。").len(), 1);
        assert_eq!(kinds("他说“好”。")[1].0, Dialogue);
        assert_eq!(kinds("他停了停，“走！”")[1].0, Dialogue);
        // A nickname in quote marks as the subject of a speech verb.
        assert_eq!(
            kinds("“铁脚”说：“走。”")[0],
            (Narration, "“铁脚”说：".into())
        );
        assert_eq!(kinds("“好”他说。")[0].0, Dialogue);
        assert_eq!(kinds("“走，”说着他站起来。")[0].0, Dialogue);
    }

    #[test]
    fn a_word_a_screen_shows_is_narration() {
        for p in [
            "手机震了起来，屏幕上跳出两个字：“蔓姐”。她按下接听。",
            "手机响了，屏幕上跳出两个字，“苏晴”。",
            "看到来电显示：“妈”，她的心一下子提到了嗓子眼。",
            "我的手机响了。屏幕上跳出两个字——“母上”。",
        ] {
            assert_eq!(kinds(p), [(Narration, p.into())], "{p}");
        }
        // Speech after a colon stays speech, whatever the screen shows.
        assert_eq!(kinds("屏幕上显示：“你好吗？”")[1].0, Dialogue);
        assert_eq!(kinds("她看着屏幕说：“蔓姐”")[1].0, Dialogue);
    }

    #[test]
    fn titles_are_opaque() {
        assert_eq!(
            kinds("她读完了《“我”的故事》，哭了。"),
            [(Narration, "她读完了《“我”的故事》，哭了。".into())]
        );
        // An unclosed 《 is an ordinary character.
        assert_eq!(kinds("《半本：“走吧。”")[1].0, Dialogue);
    }

    #[test]
    fn nested_and_unclosed_quotes() {
        assert_eq!(
            kinds("「他說『走』，我就走。」"),
            [(Dialogue, "「他說『走』，我就走。」".into())]
        );
        assert_eq!(
            kinds("“他问我‘你去吗’，我没回答。”她说。"),
            [
                (Dialogue, "“他问我‘你去吗’，我没回答。”".into()),
                (Narration, "她说。".into())
            ]
        );
        let mut ranges = Vec::new();
        scan_paragraph("她喊道：“快跑，别回头", &mut ranges);
        assert_eq!(ranges.len(), 2);
        assert!(!ranges[1].closed);
        assert_eq!(ranges[1].open, Some('“'));
    }

    #[test]
    fn ascii_and_fullwidth_quotes_pair_in_order() {
        assert_eq!(
            kinds("他说: \"走吧。\" 然后\"好的，\"她答。"),
            [
                (Narration, "他说:".into()),
                (Dialogue, "\"走吧。\"".into()),
                (Narration, "然后".into()),
                (Dialogue, "\"好的，\"".into()),
                (Narration, "她答。".into())
            ]
        );
        assert_eq!(kinds("＂来了！＂")[0].0, Dialogue);
        assert_eq!(
            kinds("‘走吧，“老地方”见。’他说。"),
            [
                (Dialogue, "‘走吧，“老地方”见。’".into()),
                (Narration, "他说。".into())
            ]
        );
    }

    #[test]
    fn opening_mark_used_to_close() {
        assert_eq!(
            kinds("“你好。“他说。"),
            [(Dialogue, "“你好。“".into()), (Narration, "他说。".into())]
        );
    }

    #[test]
    fn punctuation_between_quotes_joins_previous_span() {
        assert_eq!(
            kinds("「走吧。」，「好。」"),
            [
                (Dialogue, "「走吧。」，".into()),
                (Dialogue, "「好。」".into())
            ]
        );
    }

    /// The spans [`scan_unmarked`] reads in `p` (no speech going on before).
    fn unmarked_kinds(p: &str) -> Vec<(SegmentKind, &str)> {
        let mut out = Vec::new();
        scan_unmarked(p, &mut out, false);
        out.iter().map(|r| (r.kind, r.text(p))).collect()
    }

    #[test]
    fn speech_without_quote_marks_after_a_speakers_tag() {
        let p = "鳳姐道：我有話和你商量。賈璉聽了，便問：什麼話？詩曰：月落烏啼。";
        assert_eq!(
            unmarked_kinds(p),
            [
                (Narration, "鳳姐道："),
                (Dialogue, "我有話和你商量。"),
                (Narration, "賈璉聽了，便問："),
                (Dialogue, "什麼話？"),
                (Narration, "詩曰：月落烏啼。"),
            ]
        );
        let unmarked = "他道：好。".repeat(MIN_UNMARKED_TAGS);
        assert!(speech_without_marks([unmarked.as_str()].into_iter()));
        // A book with its marks, or with too few tags, is read as before.
        let marked = "他道：「好。」".repeat(MIN_UNMARKED_TAGS);
        assert!(!speech_without_marks([marked.as_str()].into_iter()));
        assert!(!speech_without_marks(["他道：好。"].into_iter()));
    }

    #[test]
    fn unmarked_speech_goes_on_while_it_reads_as_spoken() {
        let p = "周福生道：天晚了。我說：你先回去，明日再來！林秀娘點了點頭，轉身便走。\
                 我看她走遠了。她回頭說：知道了。怎麼還不走？周福生笑道：這就走。";
        assert_eq!(
            unmarked_kinds(p),
            [
                (Narration, "周福生道："),
                // A sentence that says 你 goes on speaking, and 我說： is
                // a tag the speaker quotes, not a new speaker.
                (Dialogue, "天晚了。我說：你先回去，明日再來！"),
                // One that does not ends the speech: the 我 after it is
                // the narrator's.
                (
                    Narration,
                    "林秀娘點了點頭，轉身便走。我看她走遠了。她回頭說："
                ),
                // A question goes on, up to the sentence of the next tag.
                (Dialogue, "知道了。怎麼還不走？"),
                (Narration, "周福生笑道："),
                (Dialogue, "這就走。"),
            ]
        );
    }
}
