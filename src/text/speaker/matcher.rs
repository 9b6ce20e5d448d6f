//! Words found leftmost-longest, as an Aho–Corasick automaton would find
//! them, but built in a few microseconds: a cast of 150 names brings a
//! thousand words (addresses, crowds, people not named), whose DFA took a
//! tenth of a book's split to build, and discovery and genders built four
//! more per book. Here a word is looked for only where its first character
//! stands, the longest first.

use std::fmt;

/// A word found in a text: its byte range and its index among the words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Found {
    pub start: usize,
    pub end: usize,
    pub pattern: usize,
}

/// What follows a word's first character, and the word's index.
type Tail = (Box<[u8]>, usize);

/// Words by their first character, each list longest first.
#[derive(Clone)]
pub(super) struct WordMatcher {
    /// A bit per character of the Basic Multilingual Plane that opens a word.
    opening: Box<[u64; PLANE_WORDS]>,
    /// How many bits are set in the words of `opening` before each one: a
    /// character's rank among the opening ones is its list's index.
    ranks: Box<[u32; PLANE_WORDS]>,
    /// Per opening character (in order), what follows it in each word and the
    /// word's index, longest first.
    lists: Vec<Vec<Tail>>,
    /// Words opening with a character past the plane (rare), by that character.
    beyond: Vec<(char, Vec<Tail>)>,
}

/// 64-bit words of a bit set over the Basic Multilingual Plane.
const PLANE_WORDS: usize = 0x10000 / 64;

impl fmt::Debug for WordMatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: usize = self
            .lists
            .iter()
            .chain(self.beyond.iter().map(|(_, l)| l))
            .map(Vec::len)
            .sum();
        f.debug_struct("WordMatcher")
            .field("words", &words)
            .finish()
    }
}

impl WordMatcher {
    /// A matcher for `words`, each found as its index; an empty word is
    /// never found, and of two equal words the first.
    pub(super) fn new<S: AsRef<str>>(words: impl IntoIterator<Item = S>) -> WordMatcher {
        let mut by_first = std::collections::BTreeMap::<char, Vec<Tail>>::new();
        for (i, w) in words.into_iter().enumerate() {
            let w = w.as_ref();
            if let Some(first) = w.chars().next() {
                let tail = w.as_bytes()[first.len_utf8()..].into();
                by_first.entry(first).or_default().push((tail, i));
            }
        }
        let mut opening = Box::new([0u64; PLANE_WORDS]);
        let mut lists = Vec::new();
        let mut beyond = Vec::new();
        // In the order of the characters, so that a rank is an index.
        for (first, mut list) in by_first {
            // Longest first; among equals, the first given (a stable sort).
            list.sort_by_key(|(w, _)| std::cmp::Reverse(w.len()));
            let c = first as usize;
            if c < 0x10000 {
                opening[c / 64] |= 1 << (c % 64);
                lists.push(list);
            } else {
                beyond.push((first, list));
            }
        }
        let mut ranks = Box::new([0u32; PLANE_WORDS]);
        let mut before = 0;
        for (rank, bits) in ranks.iter_mut().zip(opening.iter()) {
            *rank = before;
            before += bits.count_ones();
        }
        WordMatcher {
            opening,
            ranks,
            lists,
            beyond,
        }
    }

    /// The words that open with the character of code point `c`, longest first.
    #[inline]
    fn opening_with(&self, c: usize) -> Option<&[Tail]> {
        if c >= 0x10000 {
            return self
                .beyond
                .iter()
                .find(|(b, _)| *b as usize == c)
                .map(|(_, l)| l.as_slice());
        }
        let (word, bit) = (c / 64, c % 64);
        let bits = self.opening[word];
        if bits & (1 << bit) == 0 {
            return None;
        }
        let rank = self.ranks[word] + (bits & ((1 << bit) - 1)).count_ones();
        Some(&self.lists[rank as usize])
    }

    /// The longest word that opens `text`.
    pub(super) fn at_start(&self, text: &str) -> Option<Found> {
        let first = text.chars().next()?;
        self.longest_at(text, 0, first)
    }

    /// Every word of `text`, none overlapping, left to right: at each place
    /// the longest that starts there, the search going on after it.
    pub(super) fn find_iter<'m, 't>(
        &'m self,
        text: &'t str,
    ) -> impl Iterator<Item = Found> + use<'m, 't> {
        let mut at = 0;
        std::iter::from_fn(move || {
            while at < text.len() {
                let (code, len) = code_at(text, at);
                if let Some(found) = self.longest_at_code(text, at, code, len) {
                    at = found.end;
                    return Some(found);
                }
                at += len;
            }
            None
        })
    }

    /// The longest word at byte `at` of `text`, whose character there is `c`.
    #[inline]
    pub(super) fn longest_at(&self, text: &str, at: usize, c: char) -> Option<Found> {
        self.longest_at_code(text, at, c as usize, c.len_utf8())
    }

    /// [`WordMatcher::longest_at`] for the character of code point `code`,
    /// `len` bytes long.
    #[inline]
    fn longest_at_code(&self, text: &str, at: usize, code: usize, len: usize) -> Option<Found> {
        let list = self.opening_with(code)?;
        let after = at + len;
        let rest = &text.as_bytes()[after..];
        // Byte by byte: the tails are a few bytes, shorter than a call to
        // memcmp costs.
        list.iter()
            .find(|(tail, _)| {
                tail.len() <= rest.len() && tail.iter().zip(rest).all(|(a, b)| a == b)
            })
            .map(|(tail, i)| Found {
                start: at,
                end: after + tail.len(),
                pattern: *i,
            })
    }
}

/// The code point of the character at byte `at` of `text` (a character
/// boundary) and its length in bytes; a book's characters are mostly three
/// bytes long, decoded here without the general decoder's steps.
#[inline]
fn code_at(text: &str, at: usize) -> (usize, usize) {
    match text.as_bytes()[at..] {
        [x @ 0..0x80, ..] => (usize::from(x), 1),
        [x @ 0xE0..0xF0, y, z, ..] => (
            (usize::from(x & 0x0F) << 12) | (usize::from(y & 0x3F) << 6) | usize::from(z & 0x3F),
            3,
        ),
        _ => text[at..]
            .chars()
            .next()
            .map_or((0, 1), |c| (c as usize, c.len_utf8())),
    }
}

#[cfg(test)]
mod tests {
    use aho_corasick::{AhoCorasickBuilder, MatchKind};

    use super::*;

    /// The same matches as the crate's leftmost-longest automaton, on texts
    /// where words nest, overlap and repeat.
    #[test]
    fn finds_what_a_leftmost_longest_automaton_finds() {
        let words = [
            "他",
            "他们",
            "孙少",
            "孙少平",
            "少平",
            "少平哥",
            "老孙",
            "孙",
            "平",
            "我",
            "我们",
            "们",
            "孙少平",
            "𠀀𠀁",
            "𠀀",
        ];
        let automaton = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(words)
            .unwrap();
        let ours = WordMatcher::new(words);
        for text in [
            "",
            "孙少平对他们说",
            "老孙少平哥我们他",
            "少平哥哥，孙少孙平们",
            "abc孙x少平",
            "一二三",
            "他𠀀𠀁𠀀他",
            "é·孙少平·平",
        ] {
            let want: Vec<Found> = automaton
                .find_iter(text)
                .map(|m| Found {
                    start: m.start(),
                    end: m.end(),
                    pattern: m.pattern().as_usize(),
                })
                .collect();
            let got: Vec<Found> = ours.find_iter(text).collect();
            assert_eq!(got, want, "{text}");
            assert_eq!(
                ours.at_start(text),
                want.first().copied().filter(|f| f.start == 0),
                "{text}"
            );
        }
    }
}
