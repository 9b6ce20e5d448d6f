//! Paragraph → spans of narration and quoted dialogue.
//!
//! Dialogue marks are paired in order inside one paragraph; a quote that is
//! never closed ends with its paragraph. Short quoted terms in the middle of a
//! narration sentence (学会了什么叫做“枪打出头鸟”) are scare quotes and stay
//! narration.

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

/// Outer quote pairs that mark speech, as (open, close).
const PAIRS: &[(char, char)] = &[
    ('「', '」'),
    ('『', '』'),
    ('“', '”'),
    ('‘', '’'),
    ('＂', '＂'),
    ('"', '"'),
];

/// Longest quoted term (in characters) that may still be a scare quote.
const SCARE_MAX_CHARS: usize = 12;

fn closer_of(open: char) -> Option<char> {
    PAIRS.iter().find(|(o, _)| *o == open).map(|(_, c)| *c)
}

/// Splits a paragraph into narration and dialogue spans. Adjacent narration
/// (including scare quotes) is merged into one span; runs of bare punctuation
/// between two quotes are attached to the span before them.
pub fn split_paragraph(paragraph: &str) -> Vec<Span> {
    let chars: Vec<char> = paragraph.chars().collect();
    let mut spans: Vec<Span> = Vec::new();
    let mut narration = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let Some(close) = closer_of(c) else {
            narration.push(c);
            i += 1;
            continue;
        };
        let end = find_close(&chars, i, c, close);
        let quote: String = chars[i..end].iter().collect();
        let inner_end = if end > i + 1 && chars[end - 1] == close {
            end - 1
        } else {
            end
        };
        let inner = &chars[i + 1..inner_end];
        let before = chars[..i]
            .iter()
            .rev()
            .find(|c| !c.is_whitespace())
            .copied();
        if is_scare_quote(before, inner) {
            narration.push_str(&quote);
        } else {
            flush_narration(&mut spans, &mut narration);
            spans.push(Span {
                kind: SegmentKind::Dialogue,
                text: quote,
            });
        }
        i = end;
    }
    flush_narration(&mut spans, &mut narration);
    spans
}

/// Index one past the closing mark matching the opener at `start` (nesting of
/// the same pair counted), or the paragraph end when the quote is unclosed.
fn find_close(chars: &[char], start: usize, open: char, close: char) -> usize {
    let mut depth = 0usize;
    for (j, &c) in chars.iter().enumerate().skip(start + 1) {
        if c == close {
            if depth == 0 {
                return j + 1;
            }
            depth -= 1;
        } else if c == open && open != close {
            depth += 1;
        }
    }
    chars.len()
}

fn is_scare_quote(before: Option<char>, inner: &[char]) -> bool {
    let Some(before) = before else {
        return false; // a quote that opens the paragraph is speech
    };
    if inner.is_empty() {
        return true;
    }
    if inner.len() > SCARE_MAX_CHARS || inner.iter().any(|c| is_clause_punct(*c)) {
        return false;
    }
    // After a colon, a sentence end or a speech verb the quote is speech.
    !(is_clause_punct(before)
        || matches!(
            before,
            '说' | '說' | '道' | '问' | '問' | '喊' | '叫' | '答'
        ))
}

fn is_clause_punct(c: char) -> bool {
    matches!(
        c,
        '，' | '。' | '！' | '？' | '；' | '：' | '…' | '—' | ',' | '!' | '?' | ';' | ':' | '、'
    )
}

/// True when the text has something to say (a letter, digit or Han character).
pub fn is_speakable(text: &str) -> bool {
    text.chars().any(|c| c.is_alphanumeric())
}

fn flush_narration(spans: &mut Vec<Span>, narration: &mut String) {
    let text = narration.trim().to_owned();
    narration.clear();
    if text.is_empty() {
        return;
    }
    match spans.last_mut() {
        Some(last) if !is_speakable(&text) => last.text.push_str(&text),
        _ => spans.push(Span {
            kind: SegmentKind::Narration,
            text,
        }),
    }
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
        assert_eq!(kinds("他说“好”。")[1].0, Dialogue);
    }

    #[test]
    fn nested_and_unclosed_quotes() {
        assert_eq!(
            kinds("「他說『走』，我就走。」"),
            [(Dialogue, "「他說『走』，我就走。」".into())]
        );
        assert_eq!(
            kinds("她喊道：“快跑，别回头"),
            [
                (Narration, "她喊道：".into()),
                (Dialogue, "“快跑，别回头".into())
            ]
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
