//! The built-in pronunciation data, embedded in the binary and parsed once
//! on first use: character readings, phrase readings and the Traditional →
//! Simplified character map (see `data/README.md` for sources and licences).

use std::collections::HashMap;
use std::sync::LazyLock;

use rustc_hash::FxHashMap;

const CHARS: &str = include_str!("data/chars.tsv");
const PHRASES: &str = include_str!("data/phrases.tsv");
const EXTRA_PHRASES: &str = include_str!("data/phrases-extra.tsv");
const T2S: &str = include_str!("data/t2s.tsv");

/// Character and phrase readings (tone numbers, `v` for ü, 5 for neutral).
pub struct Dictionary {
    /// Each character's readings: a range of `readings`.
    chars: FxHashMap<char, (u32, u32)>,
    readings: Vec<&'static str>,
    phrases: HashMap<&'static str, Phrase, rustc_hash::FxBuildHasher>,
    t2s: FxHashMap<char, char>,
    /// Every ending (two characters or more) of every phrase, so that a
    /// right-to-left scan can stop as soon as no phrase ends that way.
    endings: rustc_hash::FxHashSet<&'static str>,
    max_phrase_chars: usize,
}

/// A dictionary phrase: its readings and which list it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phrase {
    /// Space-separated syllables, one per character.
    pub readings: &'static str,
    /// From the main phrase list (pypinyin) rather than the extra one
    /// (pypinyin-dict).
    pub common: bool,
}

static DICTIONARY: LazyLock<Dictionary> = LazyLock::new(Dictionary::load);

impl Dictionary {
    /// The embedded dictionary (parsed on first call, a few milliseconds).
    pub fn get() -> &'static Dictionary {
        &DICTIONARY
    }

    /// Parses the embedded lists, three parts side by side (this runs
    /// before the first request of a build can be sent).
    fn load() -> Dictionary {
        std::thread::scope(|scope| {
            let chars = scope.spawn(load_chars);
            let endings = scope.spawn(phrase_endings);
            let mut phrases = HashMap::with_capacity_and_hasher(75_000, Default::default());
            let mut max_phrase_chars = 1;
            for (data, common) in [(PHRASES, true), (EXTRA_PHRASES, false)] {
                for line in data.lines() {
                    if let Some((word, readings)) = line.split_once('\t') {
                        max_phrase_chars = max_phrase_chars.max(word.chars().count());
                        phrases.entry(word).or_insert(Phrase { readings, common });
                    }
                }
            }
            let t2s = T2S
                .lines()
                .filter_map(|line| {
                    let mut it = line.chars();
                    let t = it.next()?;
                    let s = it.nth(1)?;
                    Some((t, s))
                })
                .collect();
            let (chars, readings) = chars.join().expect("character list parses");
            Dictionary {
                chars,
                readings,
                phrases,
                t2s,
                endings: endings.join().expect("phrase list parses"),
                max_phrase_chars,
            }
        })
    }

    /// All readings of a character, the most common first.
    pub fn readings(&self, c: char) -> &[&'static str] {
        self.chars
            .get(&c)
            .or_else(|| self.chars.get(&self.simplified(c)))
            .map_or(&[], |&(start, end)| {
                &self.readings[start as usize..end as usize]
            })
    }

    /// The most common reading of a character.
    pub fn default_reading(&self, c: char) -> Option<&'static str> {
        self.readings(c).first().copied()
    }

    /// A phrase (in Simplified characters).
    pub fn phrase(&self, word: &str) -> Option<Phrase> {
        self.phrases.get(word).copied()
    }

    /// Whether some phrase ends with `text` (two characters or more).
    pub fn is_phrase_ending(&self, text: &str) -> bool {
        self.endings.contains(text)
    }

    /// Length in characters of the longest phrase.
    pub fn max_phrase_chars(&self) -> usize {
        self.max_phrase_chars
    }

    /// The Simplified form of a Traditional character (itself otherwise).
    pub fn simplified(&self, c: char) -> char {
        self.t2s.get(&c).copied().unwrap_or(c)
    }
}

/// The character list: each character's range in one list of readings.
fn load_chars() -> (FxHashMap<char, (u32, u32)>, Vec<&'static str>) {
    let mut chars = FxHashMap::default();
    chars.reserve(42_000);
    let mut readings = Vec::with_capacity(50_000);
    for line in CHARS.lines() {
        let Some((c, list)) = line.split_once('\t') else {
            continue;
        };
        let Some(c) = c.chars().next() else { continue };
        let start = readings.len() as u32;
        readings.extend(list.split(','));
        chars.insert(c, (start, readings.len() as u32));
    }
    (chars, readings)
}

/// Every ending of two characters or more (whole phrases included) of
/// every phrase in both lists.
fn phrase_endings() -> rustc_hash::FxHashSet<&'static str> {
    let mut endings = rustc_hash::FxHashSet::default();
    endings.reserve(160_000);
    for data in [PHRASES, EXTRA_PHRASES] {
        for line in data.lines() {
            let Some((word, _)) = line.split_once('\t') else {
                continue;
            };
            let mut starts = word.char_indices().map(|(i, _)| i).peekable();
            while let Some(k) = starts.next() {
                // The last character alone is not an ending.
                if starts.peek().is_some() {
                    endings.insert(&word[k..]);
                }
            }
        }
    }
    endings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_data_parses() {
        let d = Dictionary::get();
        assert_eq!(d.default_reading('好'), Some("hao3"));
        assert_eq!(d.readings('了'), ["le5", "liao3", "liao4"]);
        assert_eq!(d.phrase("银行").map(|p| p.readings), Some("yin2 hang2"));
        assert!(d.phrase("银行").is_some_and(|p| p.common));
        assert_eq!(d.simplified('銀'), '银');
        assert_eq!(d.simplified('银'), '银');
        assert!(d.max_phrase_chars() >= 4);
        assert!(d.is_phrase_ending("银行") && d.is_phrase_ending("行长"));
        assert!(!d.is_phrase_ending("行银"));
    }
}
