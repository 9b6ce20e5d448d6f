//! The built-in pronunciation data, embedded in the binary and parsed once
//! on first use: character readings, phrase readings and the Traditional →
//! Simplified character map (see `data/README.md` for sources and licences).

use std::collections::HashMap;
use std::sync::LazyLock;

use rustc_hash::FxHashMap;

const CHARS: &str = include_str!("data/chars.tsv");
const PHRASES: &str = include_str!("data/phrases.tsv");
const EXTRA_PHRASES: &str = include_str!("data/phrases-extra.tsv");
const WORDS: &str = include_str!("data/words.tsv");
const T2S: &str = include_str!("data/t2s.tsv");
const ADVERBIALS: &str = include_str!("data/adverbials.txt");

/// Words that can stand before the adverbial particle 地 (parsed on first
/// use, not at start-up).
static ADVERBIAL_WORDS: LazyLock<rustc_hash::FxHashSet<&'static str>> =
    LazyLock::new(|| ADVERBIALS.lines().collect());

/// Character and phrase readings (tone numbers, `v` for ü, 5 for neutral).
pub struct Dictionary {
    /// Each character's readings: a range of `readings`.
    chars: CharMap<(u32, u32)>,
    /// Each character's frequency rank as a word of its own ([`Phrase::rank`]).
    char_ranks: CharMap<u8>,
    readings: Vec<&'static str>,
    t2s: CharMap<char>,
    /// Every ending (two characters or more) of every phrase, with the
    /// phrase it is, if any: one lookup tells a right-to-left scan both
    /// whether to go on and what it found.
    endings: Endings,
    max_phrase_chars: usize,
}

/// Per-character values: a flat array over the CJK Unified Ideographs
/// block, where nearly every lookup lands, and a hash map beyond it. A
/// value equal to `V::default()` counts as absent.
struct CharMap<V> {
    dense: Vec<V>,
    rest: FxHashMap<char, V>,
}

const DENSE: std::ops::Range<u32> = 0x4E00..0xA000;

impl<V: Copy + Default + PartialEq> CharMap<V> {
    fn new() -> CharMap<V> {
        CharMap {
            dense: vec![V::default(); (DENSE.end - DENSE.start) as usize],
            rest: FxHashMap::default(),
        }
    }

    fn insert(&mut self, c: char, v: V) {
        if DENSE.contains(&u32::from(c)) {
            self.dense[(u32::from(c) - DENSE.start) as usize] = v;
        } else {
            self.rest.insert(c, v);
        }
    }

    fn get(&self, c: char) -> Option<V> {
        let v = if DENSE.contains(&u32::from(c)) {
            self.dense[(u32::from(c) - DENSE.start) as usize]
        } else {
            self.rest.get(&c).copied()?
        };
        (v != V::default()).then_some(v)
    }
}

type Endings = HashMap<&'static str, Option<Phrase>, rustc_hash::FxBuildHasher>;

/// A dictionary phrase: its readings and which list it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phrase {
    /// Space-separated syllables, one per character; empty for a word the
    /// segmenter knows without readings (`data/words.tsv`: 门外, 传来).
    pub readings: &'static str,
    /// From the main phrase list (pypinyin) rather than the extra one
    /// (pypinyin-dict).
    pub common: bool,
    /// How common the word is: round(4 · log2(count)) in jieba's word
    /// list, 0 where jieba lacks it. Only breaks ties between two splits
    /// of as many words (联系|好, not 联|系好).
    pub rank: u8,
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
            let mut t2s = CharMap::new();
            for line in T2S.lines() {
                let mut it = line.chars();
                if let (Some(t), Some(s)) = (it.next(), it.nth(1)) {
                    t2s.insert(t, s);
                }
            }
            let (chars, char_ranks, readings) = chars.join().expect("character list parses");
            let (endings, max_phrase_chars) = endings.join().expect("phrase list parses");
            Dictionary {
                chars,
                char_ranks,
                readings,
                t2s,
                endings,
                max_phrase_chars,
            }
        })
    }

    /// All readings of a character, the most common first.
    pub fn readings(&self, c: char) -> &[&'static str] {
        self.chars
            .get(c)
            .or_else(|| self.chars.get(self.simplified(c)))
            .map_or(&[], |(start, end)| {
                &self.readings[start as usize..end as usize]
            })
    }

    /// The most common reading of a character.
    pub fn default_reading(&self, c: char) -> Option<&'static str> {
        self.readings(c).first().copied()
    }

    /// How common a (Simplified) character is as a word of its own, on the
    /// scale of [`Phrase::rank`].
    pub fn char_rank(&self, c: char) -> u8 {
        self.char_ranks.get(c).unwrap_or(0)
    }

    /// A phrase (in Simplified characters).
    pub fn phrase(&self, word: &str) -> Option<Phrase> {
        self.ending(word).flatten()
    }

    /// [`Dictionary::phrase`] for a word in either script: a word with
    /// Traditional characters is looked up by their Simplified forms
    /// (周圍 as 周围), so that a Traditional book's common words are known
    /// as words, as the Simplified book's are.
    pub fn phrase_either(&self, word: &str) -> Option<Phrase> {
        self.phrase(word)
            .or_else(|| self.simplified_word(word).and_then(|w| self.phrase(&w)))
    }

    /// `word` with each Traditional character in its Simplified form, where
    /// any is Traditional (`None` for a word already Simplified).
    pub fn simplified_word(&self, word: &str) -> Option<String> {
        word.chars()
            .any(|c| self.simplified(c) != c)
            .then(|| word.chars().map(|c| self.simplified(c)).collect())
    }

    /// `None` when no phrase ends with `text`; else the phrase `text` is,
    /// if it is one.
    pub fn ending(&self, text: &str) -> Option<Option<Phrase>> {
        self.endings.get(text).copied()
    }

    /// Length in characters of the longest phrase.
    pub fn max_phrase_chars(&self) -> usize {
        self.max_phrase_chars
    }

    /// Whether `word` (Simplified) is an adjective, adverb, verb, status
    /// word or idiom (jieba's tags): before a lone 地 it makes the particle.
    pub fn is_adverbial(&self, word: &str) -> bool {
        ADVERBIAL_WORDS.contains(word)
    }

    /// The Simplified form of a Traditional character (itself otherwise).
    pub fn simplified(&self, c: char) -> char {
        self.t2s.get(c).unwrap_or(c)
    }
}

/// A data line's first column, its second, and the frequency rank of
/// the optional third (0 where it has none). The rank, at most three
/// digits, is found from the line's end, so the readings are not scanned
/// twice (this runs for every line at start-up).
fn columns(line: &'static str) -> Option<(&'static str, &'static str, u8)> {
    let bytes = line.as_bytes();
    // Digits back from the end, then a tab: the rank. (The readings end in
    // a tone digit too, but after a letter.)
    let (mut at, mut rank, mut scale) = (bytes.len(), 0_u32, 1_u32);
    while at > 0 && bytes.len() - at < 3 && bytes[at - 1].is_ascii_digit() {
        rank += u32::from(bytes[at - 1] - b'0') * scale;
        scale *= 10;
        at -= 1;
    }
    let (line, rank) = if at < bytes.len() && at > 0 && bytes[at - 1] == b'\t' {
        (&line[..at - 1], u8::try_from(rank).unwrap_or(u8::MAX))
    } else {
        (line, 0)
    };
    let (key, value) = line.split_once('\t')?;
    Some((key, value, rank))
}

/// The character list: each character's range in one list of readings,
/// and its frequency rank.
fn load_chars() -> (CharMap<(u32, u32)>, CharMap<u8>, Vec<&'static str>) {
    let mut chars = CharMap::new();
    let mut ranks = CharMap::new();
    let mut readings = Vec::with_capacity(50_000);
    for line in CHARS.lines() {
        let Some((c, list, rank)) = columns(line) else {
            continue;
        };
        let Some(c) = c.chars().next() else { continue };
        let start = readings.len() as u32;
        readings.extend(list.split(','));
        chars.insert(c, (start, readings.len() as u32));
        if rank > 0 {
            ranks.insert(c, rank);
        }
    }
    (chars, ranks, readings)
}

/// Every ending of two characters or more of every phrase in both lists
/// and of every segmentation-only word,
/// each whole phrase with its readings (the main list's where both have
/// it), and the length in characters of the longest phrase.
fn phrase_endings() -> (Endings, usize) {
    let mut endings = Endings::with_capacity_and_hasher(160_000, Default::default());
    let mut max_phrase_chars = 1;
    for (data, common) in [(PHRASES, true), (EXTRA_PHRASES, false), (WORDS, true)] {
        for line in data.lines() {
            let Some((word, readings, rank)) = columns(line) else {
                continue;
            };
            // A phrase seen before only as another one's ending becomes
            // itself; one already listed keeps the first list's readings.
            endings.entry(word).or_insert(None).get_or_insert(Phrase {
                readings,
                common,
                rank,
            });
            let chars = word.chars().count();
            max_phrase_chars = max_phrase_chars.max(chars);
            // Its shorter endings, down to two characters.
            for (k, _) in word.char_indices().skip(1).take(chars.saturating_sub(2)) {
                endings.entry(&word[k..]).or_insert(None);
            }
        }
    }
    (endings, max_phrase_chars)
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
        // A Traditional word by its Simplified characters.
        assert_eq!(d.phrase("銀行"), None);
        assert_eq!(
            d.phrase_either("銀行").map(|p| p.readings),
            Some("yin2 hang2")
        );
        assert_eq!(d.phrase_either("銀河系統"), None);
        // Frequency ranks: 联系 is a far commoner word than 系好.
        assert!(d.phrase("联系").is_some_and(|p| p.rank > 40));
        assert!(d.char_rank('了') > d.char_rank('系'));
        assert_eq!(d.char_rank('\u{1F600}'), 0);
        assert_eq!(d.simplified('銀'), '银');
        assert_eq!(d.simplified('银'), '银');
        assert!(d.max_phrase_chars() >= 4);
        assert!(d.ending("银行").is_some() && d.ending("行长").is_some());
        assert!(d.ending("行银").is_none());
        // One lookup: not an ending; an ending only; a phrase.
        assert_eq!(d.ending("行银"), None);
        assert_eq!(d.ending("风顺"), Some(None));
        assert_eq!(d.phrase("风顺"), None);
        assert!(d.ending("银行").is_some_and(|p| p.is_some()));
        // Characters outside the flat CJK table come from its hash map.
        assert_eq!(d.default_reading('〇'), Some("ling2"));
        assert_eq!(d.default_reading('𠀀'), Some("he1"));
        assert_eq!(d.readings('\u{1F600}'), [] as [&str; 0]);
    }
}
