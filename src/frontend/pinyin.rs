//! Text → tone-numbered pinyin, one syllable per Han character
//! (lowercase, `v` for ü, tone 5 for neutral).

use pinyin::ToPinyin;

use crate::text::is_han;

/// The pinyin of each character of `text`: `Some(syllable)` for a Han
/// character with a known reading, `None` for anything else.
pub fn syllables(text: &str) -> Vec<Option<String>> {
    text.chars().map(syllable).collect()
}

/// Dictionary reading of one character.
pub fn syllable(c: char) -> Option<String> {
    if !is_han(c) {
        return None;
    }
    let p = c.to_pinyin()?;
    Some(tone_numbered(p.with_tone_num_end()))
}

/// Normalizes a tone-numbered syllable: `ü` → `v`, a missing tone → 5.
pub fn tone_numbered(raw: &str) -> String {
    let mut s: String = raw
        .chars()
        .map(|c| if c == 'ü' { 'v' } else { c })
        .collect();
    if !s.ends_with(|c: char| c.is_ascii_digit()) {
        s.push('5');
    }
    s
}

/// Renders text for espeak-ng's `cmn-latn-pinyin` voice: Han characters as
/// syllables, Chinese punctuation as the ASCII marks espeak-ng phrases by,
/// other letters kept, everything else a space.
pub fn speakable(text: &str, readings: &[Option<String>]) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for (c, reading) in text.chars().zip(readings) {
        match reading {
            Some(s) => {
                out.push_str(s);
                out.push(' ');
            }
            None => {
                if let Some(mark) = ascii_mark(c) {
                    trim_end_spaces(&mut out);
                    out.push_str(mark);
                } else if c.is_ascii_alphanumeric() {
                    out.push(c);
                } else if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
        }
    }
    out.trim().to_owned()
}

fn trim_end_spaces(s: &mut String) {
    while s.ends_with(' ') {
        s.pop();
    }
}

fn ascii_mark(c: char) -> Option<&'static str> {
    Some(match c {
        '，' | '、' | ',' | '；' | ';' | '：' | ':' | '—' | '…' => ", ",
        '。' | '.' => ". ",
        '！' | '!' => "! ",
        '？' | '?' => "? ",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tone_numbers_with_v_and_neutral_tone() {
        assert_eq!(syllable('好').as_deref(), Some("hao3"));
        assert_eq!(syllable('绿').as_deref(), Some("lv4"));
        assert_eq!(syllable('們').as_deref(), Some("men5"));
        assert_eq!(syllable('a'), None);
    }

    #[test]
    fn speakable_keeps_phrasing() {
        let text = "你好，世界！OK";
        assert_eq!(speakable(text, &syllables(text)), "ni3 hao3, shi4 jie4! OK");
    }
}
