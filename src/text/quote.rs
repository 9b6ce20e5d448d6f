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
        let before = paragraph[narration_start..i]
            .chars()
            .rev()
            .find(|c| !c.is_whitespace());
        let before = before.or_else(|| last_visible(paragraph, out, first, narration_start));
        let after = paragraph[end..].chars().next();
        if closed && is_scare_quote(before, inner, after) {
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

/// Returns (end of the quoted text, end of the quote including its closing
/// mark, closed?). Marks of the same pair nest; other marks are content.
fn find_close(paragraph: &str, from: usize, open: char, close: char) -> (usize, usize, bool) {
    let mut depth = 0usize;
    let mut first_reopen: Option<usize> = None;
    let mut any_close = false;
    for (j, c) in paragraph[from..].char_indices() {
        if c == close {
            any_close = true;
            if depth == 0 {
                let at = from + j;
                return (at, at + c.len_utf8(), true);
            }
            depth -= 1;
        } else if c == open && open != close {
            first_reopen.get_or_insert(from + j);
            depth += 1;
        }
    }
    // “你好。“他说。: with no closing mark at all, a second opening mark
    // stands for the closing one.
    if let (false, Some(at)) = (any_close, first_reopen) {
        return (at, at + open.len_utf8(), true);
    }
    (paragraph.len(), paragraph.len(), false)
}

fn is_scare_quote(before: Option<char>, inner: &str, after: Option<char>) -> bool {
    if inner.trim().is_empty() {
        return true;
    }
    if inner.chars().any(is_clause_punct) || inner.chars().nth(SCARE_MAX_CHARS).is_some() {
        return false;
    }
    // A term that the sentence goes on with: “放风筝”是…, “老黄牛”的…
    let continues = after.is_some_and(|a| matches!(a, '的' | '是' | '地' | '了' | '般' | '式'));
    match before {
        // A quote that opens the paragraph is speech unless the sentence runs on.
        None => continues,
        Some(b) if is_speech_tail(b) => false,
        Some('：' | ':' | '。' | '！' | '？' | '!' | '?' | '…' | '—') => false,
        // After a comma: a term only when the sentence runs on through it.
        Some('，' | ',' | '；' | ';') => continues || after.is_some_and(is_han_char),
        Some(_) => true,
    }
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
    text.chars().any(|c| c.is_alphanumeric())
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
    use super::*;
    use SegmentKind::*;

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
}
