//! Segment text → chunks small enough for one synthesis request.
//!
//! A segment is split after every sentence end (so the mixer can place a
//! sentence pause), and a sentence longer than the backend's limit is split
//! again at clause punctuation, then, only if it must, between characters.
//! No character is ever dropped: concatenating the chunks gives the input.

/// The pause that follows a chunk inside its segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundary {
    /// After 。！？ (or the end of the segment).
    Sentence,
    /// After ，、；： — a split forced by the length limit.
    Clause,
    /// After …… or ——.
    Hesitation,
    /// In the middle of a clause, forced by the length limit.
    None,
}

/// A piece of segment text sent to the synthesizer in one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub text: String,
    pub boundary: Boundary,
}

fn is_sentence_end(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '!' | '?' | '；' | ';')
}

fn is_clause_end(c: char) -> bool {
    matches!(c, '，' | '、' | '：' | ',' | ':')
}

fn is_closing(c: char) -> bool {
    matches!(c, '」' | '』' | '”' | '’' | '"' | '＂' | '）' | ')' | '》')
}

/// Splits `text` into chunks of at most `max_chars` characters each
/// (`max_chars` ≥ 1), preferring sentence, then clause boundaries.
pub fn chunk(text: &str, max_chars: usize) -> Vec<Chunk> {
    let max_chars = max_chars.max(1);
    let mut out = Vec::new();
    for sentence in split_after(text, |c| is_sentence_end(c) || c == '…' || c == '—') {
        let boundary = boundary_of(&sentence);
        if sentence.chars().count() <= max_chars {
            out.push(Chunk {
                text: sentence,
                boundary,
            });
            continue;
        }
        let mut pieces = Vec::new();
        for clause in split_after(&sentence, is_clause_end) {
            if clause.chars().count() <= max_chars {
                pieces.push((clause, Boundary::Clause));
            } else {
                let chars: Vec<char> = clause.chars().collect();
                for part in chars.chunks(max_chars) {
                    pieces.push((part.iter().collect(), Boundary::None));
                }
                if let Some(last) = pieces.last_mut() {
                    last.1 = Boundary::Clause;
                }
            }
        }
        merge_small(&mut pieces, max_chars);
        if let Some(last) = pieces.last_mut() {
            last.1 = boundary;
        }
        out.extend(
            pieces
                .into_iter()
                .map(|(text, boundary)| Chunk { text, boundary }),
        );
    }
    out
}

fn boundary_of(sentence: &str) -> Boundary {
    let last = sentence.chars().rev().find(|c| !is_closing(*c));
    match last {
        Some('…' | '—') => Boundary::Hesitation,
        _ => Boundary::Sentence,
    }
}

/// Joins neighbouring clause pieces while they fit, so a long sentence is not
/// needlessly cut at every comma.
fn merge_small(pieces: &mut Vec<(String, Boundary)>, max_chars: usize) {
    let mut merged: Vec<(String, Boundary)> = Vec::new();
    for (text, boundary) in pieces.drain(..) {
        match merged.last_mut() {
            Some(last)
                if last.1 == Boundary::Clause
                    && last.0.chars().count() + text.chars().count() <= max_chars =>
            {
                last.0.push_str(&text);
                last.1 = boundary;
            }
            _ => merged.push((text, boundary)),
        }
    }
    *pieces = merged;
}

/// Splits after each run of characters matching `is_end` (plus any closing
/// quotes that follow it), keeping every character.
fn split_after(text: &str, is_end: impl Fn(char) -> bool) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        current.push(c);
        if is_end(c) {
            while let Some(&next) = chars.peek() {
                if is_end(next) || is_closing(next) {
                    current.push(next);
                    chars.next();
                } else {
                    break;
                }
            }
            parts.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        match parts.last_mut() {
            // A tail with nothing to say (a closing mark) joins its sentence.
            Some(last) if !current.chars().any(char::is_alphanumeric) => last.push_str(&current),
            _ => parts.push(current),
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(chunks: &[Chunk]) -> String {
        chunks.iter().map(|c| c.text.as_str()).collect()
    }

    #[test]
    fn splits_after_sentences_keeping_quotes() {
        let text = "「快跑！別回頭。」他說……然後走了";
        let chunks = chunk(text, 100);
        let texts: Vec<_> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["「快跑！", "別回頭。」", "他說……", "然後走了"]);
        assert_eq!(chunks[2].boundary, Boundary::Hesitation);
        assert_eq!(joined(&chunks), text);
    }

    #[test]
    fn long_sentences_split_at_clauses_then_characters() {
        let text = "一二三四五，六七八九十，甲乙丙丁戊己庚辛壬癸子丑。";
        let chunks = chunk(text, 6);
        assert!(
            chunks.iter().all(|c| c.text.chars().count() <= 6),
            "{chunks:?}"
        );
        assert_eq!(joined(&chunks), text);
        assert_eq!(chunks[0].text, "一二三四五，");
        assert_eq!(chunks.last().unwrap().boundary, Boundary::Sentence);
    }

    #[test]
    fn never_drops_text() {
        for text in ["", "。。。", "abc", "他说：“好。”", "——", "a，b，c，d"] {
            for max in 1..5 {
                assert_eq!(joined(&chunk(text, max)), text, "{text} {max}");
            }
        }
    }
}
