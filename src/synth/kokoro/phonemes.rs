//! Tone-numbered pinyin → Kokoro-82M's Mandarin phoneme strings and token ids.
//!
//! Kokoro v1.0 was trained on IPA-like strings: one string per word, the
//! syllables of a word run together, words separated by a space, ASCII
//! punctuation glued to the word before it. A syllable is its initial, then
//! its final with the tone arrow right after the nucleus vowel (before a
//! nasal coda): 中 zhong1 → `ꭧʊ→ŋ`, 间 jian1 → `ʨjɛ→n`, 是 shi4 → `ʂɨ↘`.
//! Tones: 1 `→`, 2 `↗`, 3 `↓`, 4 `↘`, neutral none. The mapping is ours,
//! written from the standard pinyin tables; the inventory (which symbols the
//! model knows, and where the tone goes) was learned from the model's
//! vocabulary and its published G2P.
//!
//! Input is the front end's speakable pinyin (`ni3 hao3, shi4 jie4.`),
//! optionally with word boundaries: syllables of one word joined by `-`
//! (`ni3-hao3, shi4-jie4.`). Tokens of ASCII letters without a tone digit
//! are Latin: all-uppercase ones are spelled letter by letter the way a
//! Chinese narrator names letters (`QQ`), the others are English words in
//! the model's English symbols, from espeak-ng's American English phonemes
//! (`iPhone` → `ˈI fˈOn`), or their letters as written where espeak-ng has
//! no answer.

/// Version of the mapping; part of the cache key.
pub const VERSION: u32 = 1;

/// Version of the reading of Latin tokens (2: English words through
/// espeak-ng's phonemes, V and M said the English way); part of the cache
/// key of the chunks that have one ([`has_latin`]).
pub const LATIN_VERSION: u32 = 2;

/// Token ids of every symbol this module emits (the model's vocabulary;
/// checked against the installed `vocab.json` when the voice is loaded).
pub const VOCAB: &[(char, i64)] = &[
    (';', 1),
    (':', 2),
    (',', 3),
    ('.', 4),
    ('!', 5),
    ('?', 6),
    ('—', 9),
    ('…', 10),
    (' ', 16),
    ('ʦ', 20),
    ('ʨ', 21),
    ('ꭧ', 23),
    ('A', 24),
    ('I', 25),
    ('O', 31),
    ('W', 39),
    ('Y', 41),
    ('ᵊ', 42),
    ('a', 43),
    ('b', 44),
    ('d', 46),
    ('e', 47),
    ('f', 48),
    ('h', 50),
    ('i', 51),
    ('j', 52),
    ('k', 53),
    ('l', 54),
    ('m', 55),
    ('n', 56),
    ('o', 57),
    ('p', 58),
    ('s', 61),
    ('t', 62),
    ('u', 63),
    ('v', 64),
    ('w', 65),
    ('x', 66),
    ('y', 67),
    ('z', 68),
    ('ɑ', 69),
    ('ɐ', 70),
    ('ɒ', 71),
    ('æ', 72),
    ('ɔ', 76),
    ('ɕ', 77),
    ('ð', 81),
    ('ʤ', 82),
    ('ə', 83),
    ('ɚ', 85),
    ('ɛ', 86),
    ('ɜ', 87),
    ('ɡ', 92),
    ('ɥ', 99),
    ('ɨ', 101),
    ('ɪ', 102),
    ('ŋ', 112),
    ('θ', 119),
    ('ɹ', 123),
    ('ɾ', 125),
    ('ɻ', 126),
    ('ʂ', 130),
    ('ʃ', 131),
    ('ʧ', 133),
    ('ʊ', 135),
    ('ʌ', 138),
    ('ɤ', 140),
    ('ʒ', 147),
    ('ʔ', 148),
    ('ˈ', 156),
    ('ˌ', 157),
    ('ː', 158),
    ('ʰ', 162),
    ('↓', 169),
    ('→', 171),
    ('↗', 172),
    ('↘', 173),
    ('ᵻ', 177),
];

use crate::frontend::pinyin::{is_latin_token, is_spelled};

/// The most tokens one inference takes (the style table has 510 rows and
/// two of them are the padding ids at both ends).
pub const MAX_TOKENS: usize = 510;

/// The token id of a phoneme symbol.
pub fn token_id(c: char) -> Option<i64> {
    VOCAB.iter().find(|&&(s, _)| s == c).map(|&(_, id)| id)
}

/// Token ids of a phoneme string; symbols outside the vocabulary are
/// skipped (this module never emits any).
pub fn tokens(phonemes: &str) -> Vec<i64> {
    phonemes.chars().filter_map(token_id).collect()
}

fn tone_mark(tone: u8) -> &'static str {
    match tone {
        1 => "→",
        2 => "↗",
        3 => "↓",
        4 => "↘",
        _ => "",
    }
}

/// The initials, longest first so that `zh` wins over `z`.
const INITIALS: &[(&str, &str)] = &[
    ("zh", "ꭧ"),
    ("ch", "ꭧʰ"),
    ("sh", "ʂ"),
    ("b", "p"),
    ("p", "pʰ"),
    ("m", "m"),
    ("f", "f"),
    ("d", "t"),
    ("t", "tʰ"),
    ("n", "n"),
    ("l", "l"),
    ("g", "k"),
    ("k", "kʰ"),
    ("h", "x"),
    ("j", "ʨ"),
    ("q", "ʨʰ"),
    ("x", "ɕ"),
    ("r", "ɻ"),
    ("z", "ʦ"),
    ("c", "ʦʰ"),
    ("s", "s"),
];

/// A final as (before the tone, after the tone): the tone follows the
/// nucleus vowel and precedes a nasal coda.
fn final_parts(fin: &str) -> Option<(&'static str, &'static str)> {
    Some(match fin {
        "a" => ("a", ""),
        "ai" => ("ai", ""),
        "an" => ("a", "n"),
        "ang" => ("a", "ŋ"),
        "ao" => ("au", ""),
        "e" => ("ɤ", ""),
        "ei" => ("ei", ""),
        "en" => ("ə", "n"),
        "eng" => ("ə", "ŋ"),
        "i" => ("i", ""),
        "ia" => ("ja", ""),
        "ian" => ("jɛ", "n"),
        "iang" => ("ja", "ŋ"),
        "iao" => ("jau", ""),
        "ie" => ("je", ""),
        "in" => ("i", "n"),
        "iou" => ("jou", ""),
        "ing" => ("i", "ŋ"),
        "iong" => ("jʊ", "ŋ"),
        "ong" => ("ʊ", "ŋ"),
        "ou" => ("ou", ""),
        "u" => ("u", ""),
        "ua" => ("wa", ""),
        "uai" => ("wai", ""),
        "uan" => ("wa", "n"),
        "uang" => ("wa", "ŋ"),
        "uei" => ("wei", ""),
        "uen" => ("wə", "n"),
        "ueng" => ("wə", "ŋ"),
        "uo" | "o" => ("wo", ""),
        "ü" => ("y", ""),
        "üe" => ("ɥe", ""),
        "üan" => ("ɥɛ", "n"),
        "ün" => ("y", "n"),
        _ => return None,
    })
}

/// Syllables without an initial that are not spelled with y/w.
fn standalone(base: &str) -> Option<(&'static str, &'static str)> {
    Some(match base {
        "er" => ("ɚ", ""),
        "o" => ("ɔ", ""),
        "ê" | "ea" => ("ɛ", ""),
        "io" | "yo" => ("jɔ", ""),
        "m" => ("m", ""),
        "n" => ("n", ""),
        "ng" => ("ŋ", ""),
        "hm" => ("hm", ""),
        "hng" => ("hŋ", ""),
        _ => return None,
    })
}

/// The zero-initial spellings with y and w, as the finals they write.
fn y_w_final(base: &str) -> Option<&'static str> {
    Some(match base {
        "yi" => "i",
        "ya" => "ia",
        "yan" => "ian",
        "yang" => "iang",
        "yao" => "iao",
        "ye" => "ie",
        "yin" => "in",
        "ying" => "ing",
        "yong" => "iong",
        "you" => "iou",
        "yu" | "yv" => "ü",
        "yuan" | "yvan" => "üan",
        "yue" | "yve" => "üe",
        "yun" | "yvn" => "ün",
        "wu" => "u",
        "wa" => "ua",
        "wai" => "uai",
        "wan" => "uan",
        "wang" => "uang",
        "wei" => "uei",
        "wen" => "uen",
        "weng" => "ueng",
        "wo" => "uo",
        _ => return None,
    })
}

/// A syllable's toneless pinyin and tone: `lv4` → (`lü`, 4), `ma` → (`ma`, 5).
fn split_tone(syllable: &str) -> (String, u8, bool) {
    let mut s = syllable
        .to_ascii_lowercase()
        .replace("u:", "ü")
        .replace('v', "ü");
    // Erhua written on the syllable: hua1r / huar1.
    let mut erhua = false;
    if s.len() > 2 && s.ends_with('r') && s[..s.len() - 1].ends_with(|c: char| c.is_ascii_digit()) {
        s.pop();
        erhua = true;
    }
    let mut tone = 5;
    if let Some(d) = s.chars().last().and_then(|c| c.to_digit(10)) {
        s.pop();
        tone = if (1..=4).contains(&d) { d as u8 } else { 5 };
    }
    if !erhua && s.len() > 2 && s.ends_with('r') && s != "er" {
        s.pop();
        erhua = true;
    }
    (s, tone, erhua)
}

/// The phonemes of one tone-numbered pinyin syllable, or `None` when it is
/// not a Mandarin syllable.
pub fn syllable(syllable: &str) -> Option<String> {
    let (base, tone, erhua) = split_tone(syllable);
    let mark = tone_mark(tone);
    let (head, tail) = if let Some((head, tail)) = standalone(&base) {
        (head.to_owned(), tail)
    } else if let Some(fin) = y_w_final(&base) {
        let (h, t) = final_parts(fin)?;
        (h.to_owned(), t)
    } else {
        let (initial, ipa) = INITIALS
            .iter()
            .find(|(i, _)| base.starts_with(i))
            .map(|&(i, ipa)| (i, ipa))
            .unwrap_or(("", ""));
        let rest = &base[initial.len()..];
        if rest.is_empty() {
            return None;
        }
        let fin = match (initial, rest) {
            ("zh" | "ch" | "sh" | "r" | "z" | "c" | "s", "i") => "ɨ",
            ("j" | "q" | "x", "u") => "ü",
            ("j" | "q" | "x", "ue") | ("n" | "l", "ue") => "üe",
            ("j" | "q" | "x", "uan") => "üan",
            ("j" | "q" | "x", "un") => "ün",
            (_, "iu") => "iou",
            (_, "ui") => "uei",
            (_, "un") => "uen",
            (_, other) => other,
        };
        let (h, t) = if fin == "ɨ" {
            ("ɨ", "")
        } else {
            if initial.is_empty()
                && !matches!(
                    fin,
                    "a" | "ai" | "an" | "ang" | "ao" | "e" | "ei" | "en" | "eng" | "ou"
                )
            {
                return None;
            }
            final_parts(fin)?
        };
        (format!("{ipa}{h}"), t)
    };
    let mut out = format!("{head}{mark}{tail}");
    if erhua {
        out.push('ɚ');
    }
    Some(out)
}

/// How a narrator says a Latin letter, in the model's symbols.
fn letter(c: char) -> &'static str {
    match c.to_ascii_uppercase() {
        'A' => "ei→",
        'B' => "pi→",
        'C' => "si→",
        'D' => "ti→",
        'E' => "i→",
        'F' => "ɛ↗fu",
        'G' => "ʨi→",
        'H' => "ei→ʨʰu",
        'I' => "ai→",
        'J' => "ʨei→",
        'K' => "kʰei→",
        'L' => "ɛ↗lou",
        'M' => "ɛ→m",
        'N' => "ɛ→n",
        'O' => "ou→",
        'P' => "pʰi→",
        'Q' => "kʰjou→",
        'R' => "a↘ɚ",
        'S' => "ɛ↗sɨ",
        'T' => "tʰi→",
        'U' => "jou→",
        'V' => "vi→",
        'W' => "ta↘pu",
        'X' => "ai↘kʰɤsɨ",
        'Y' => "wai→",
        'Z' => "ʦei→",
        _ => "",
    }
}

/// A Latin token in the model's symbols: spelled when all uppercase (or a
/// single letter), otherwise an English word ([`english`]), or its letters
/// as written where espeak-ng cannot say it.
fn latin(word: &str) -> String {
    if word.len() == 1 || is_spelled(word) {
        word.chars().map(letter).collect::<Vec<_>>().join(" ")
    } else if let Some(p) = english(word) {
        p
    } else {
        word.to_ascii_lowercase()
            .chars()
            .map(|c| match c {
                'c' => 'k',
                'g' => 'ɡ',
                'q' => 'k',
                'r' => 'ɹ',
                other => other,
            })
            .collect()
    }
}

/// An English word in the model's symbols: espeak-ng's American English
/// IPA, with the diphthongs and affricates written the way Kokoro's English
/// voices were trained (`eɪ` → `A`, `oʊ` → `O`, `dʒ` → `ʤ`…) and anything
/// outside the vocabulary dropped. Cached per word; `None` when espeak-ng
/// has no answer.
fn english(word: &str) -> Option<String> {
    static CACHE: std::sync::LazyLock<
        std::sync::Mutex<std::collections::HashMap<String, Option<String>>>,
    > = std::sync::LazyLock::new(Default::default);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(hit) = cache.get(word) {
        return hit.clone();
    }
    let got = match crate::synth::espeak::phonemes_ipa(ENGLISH_VOICE, word) {
        Ok(ipa) => Some(from_ipa(&ipa)).filter(|p| p.chars().any(|c| c != ' ')),
        Err(e) => {
            tracing::debug!(word, error = %e, "no English phonemes; letters as written");
            None
        }
    };
    cache.insert(word.to_owned(), got.clone());
    got
}

/// espeak-ng's voice for Latin words.
const ENGLISH_VOICE: &str = "en-us";

/// espeak-ng IPA → the model's English symbols.
fn from_ipa(ipa: &str) -> String {
    const PAIRS: [(&str, &str); 8] = [
        ("eɪ", "A"),
        ("aɪ", "I"),
        ("aʊ", "W"),
        ("ɔɪ", "Y"),
        ("oʊ", "O"),
        ("dʒ", "ʤ"),
        ("tʃ", "ʧ"),
        ("ɝ", "ɜɹ"),
    ];
    let mut s = ipa.replace('\u{361}', "");
    for (from, to) in PAIRS {
        s = s.replace(from, to);
    }
    s.replace('r', "ɹ")
        .chars()
        .filter(|&c| c == ' ' || token_id(c).is_some())
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether speakable pinyin has a Latin token (what [`phonemize`] reads
/// with `latin`).
pub fn has_latin(pinyin: &str) -> bool {
    pinyin.split_whitespace().any(|token| {
        let body = token.trim_end_matches(|c: char| punctuation(c).is_some());
        body.split('-').any(is_latin_part)
    })
}

/// The front end writes every syllable with its tone digit, so a token of
/// letters only is Latin (unless it is toneless pinyin).
fn is_latin_part(part: &str) -> bool {
    is_latin_token(part)
        && (part.chars().any(|c| c.is_ascii_uppercase()) || syllable(part).is_none())
}

fn punctuation(c: char) -> Option<char> {
    Some(match c {
        ',' | '，' | '、' => ',',
        '.' | '。' => '.',
        '!' | '！' => '!',
        '?' | '？' => '?',
        ';' | '；' => ';',
        ':' | '：' => ':',
        '…' => '…',
        '—' => '—',
        _ => return None,
    })
}

/// The phoneme string of a speakable pinyin string. Syllables it does not
/// know are left out (and logged); punctuation is kept.
pub fn phonemize(pinyin: &str) -> String {
    let mut out = String::with_capacity(pinyin.len() * 2);
    for token in pinyin.split_whitespace() {
        let mut word = String::new();
        let mut trailing = String::new();
        let body = token.trim_end_matches(|c: char| {
            if let Some(p) = punctuation(c) {
                trailing.insert(0, p);
                true
            } else {
                false
            }
        });
        for part in body.split('-').filter(|p| !p.is_empty()) {
            if is_latin_part(part) {
                if !word.is_empty() {
                    word.push(' ');
                }
                word.push_str(&latin(part));
            } else if let Some(p) = syllable(part) {
                if p == "ɚ" && !word.is_empty() {
                    // Erhua written as its own er5 syllable joins the one before.
                    word.push('ɚ');
                } else {
                    word.push_str(&p);
                }
            } else {
                tracing::debug!(syllable = part, "not a pinyin syllable; left out");
            }
        }
        if word.is_empty() && trailing.is_empty() {
            continue;
        }
        if !word.is_empty() && !out.is_empty() && !out.ends_with(' ') {
            out.push(' ');
        }
        out.push_str(&word);
        out.push_str(&trailing);
        if !trailing.is_empty() {
            out.push(' ');
        }
    }
    out.trim_end().to_owned()
}

/// Splits a phoneme string into pieces of at most `max` tokens, at spaces
/// after punctuation first, then at any space, then (only for a single word
/// longer than `max`) between symbols. Nothing is dropped: the pieces
/// joined with spaces give the input.
pub fn split_tokens(phonemes: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut out = Vec::new();
    let mut rest = phonemes.trim();
    while rest.chars().count() > max {
        let cut_at = |pred: &dyn Fn(&str, usize) -> bool| {
            rest.char_indices()
                .take(max + 1)
                .filter(|&(i, c)| c == ' ' && pred(rest, i))
                .map(|(i, _)| i)
                .last()
        };
        let after_punct =
            cut_at(&|s: &str, i: usize| s[..i].ends_with(|c: char| punctuation(c).is_some()));
        let cut = after_punct.or_else(|| cut_at(&|_, _| true));
        match cut {
            Some(i) if i > 0 => {
                out.push(rest[..i].to_owned());
                rest = rest[i..].trim_start();
            }
            _ => {
                let i = rest.char_indices().nth(max).map_or(rest.len(), |(i, _)| i);
                out.push(rest[..i].to_owned());
                rest = rest[i..].trim_start();
            }
        }
    }
    if !rest.is_empty() {
        out.push(rest.to_owned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_symbol_has_its_id() {
        for &(c, id) in VOCAB {
            assert_eq!(token_id(c), Some(id), "{c}");
        }
        assert_eq!(token_id('Q'), None);
    }

    #[test]
    fn initials_finals_and_tones() {
        assert_eq!(syllable("zhong1").unwrap(), "ꭧʊ→ŋ");
        assert_eq!(syllable("guo2").unwrap(), "kwo↗");
        assert_eq!(syllable("ni3").unwrap(), "ni↓");
        assert_eq!(syllable("shi4").unwrap(), "ʂɨ↘");
        assert_eq!(syllable("zi5").unwrap(), "ʦɨ");
        assert_eq!(syllable("jian1").unwrap(), "ʨjɛ→n");
        assert_eq!(syllable("chuang2").unwrap(), "ꭧʰwa↗ŋ");
        assert_eq!(syllable("qu4").unwrap(), "ʨʰy↘");
        assert_eq!(syllable("xue2").unwrap(), "ɕɥe↗");
        assert_eq!(syllable("lv4").unwrap(), "ly↘");
        assert_eq!(syllable("lve4").unwrap(), "lɥe↘");
        assert_eq!(syllable("nüe4").unwrap(), "nɥe↘");
        assert_eq!(syllable("liu2").unwrap(), "ljou↗");
        assert_eq!(syllable("gui4").unwrap(), "kwei↘");
        assert_eq!(syllable("lun2").unwrap(), "lwə↗n");
        assert_eq!(syllable("jun1").unwrap(), "ʨy→n");
        assert_eq!(syllable("bo1").unwrap(), "pwo→");
        assert_eq!(syllable("yu2").unwrap(), "y↗");
        assert_eq!(syllable("yuan2").unwrap(), "ɥɛ↗n");
        assert_eq!(syllable("wei4").unwrap(), "wei↘");
        assert_eq!(syllable("you3").unwrap(), "jou↓");
        assert_eq!(syllable("yi1").unwrap(), "i→");
        assert_eq!(syllable("wu3").unwrap(), "u↓");
        assert_eq!(syllable("ri4").unwrap(), "ɻɨ↘");
        assert_eq!(syllable("an1").unwrap(), "a→n");
    }

    #[test]
    fn er_erhua_and_interjections() {
        assert_eq!(syllable("er4").unwrap(), "ɚ↘");
        assert_eq!(syllable("er5").unwrap(), "ɚ");
        assert_eq!(syllable("hua1r").unwrap(), "xwa→ɚ");
        assert_eq!(syllable("huar1").unwrap(), "xwa→ɚ");
        assert_eq!(syllable("m2").unwrap(), "m↗");
        assert_eq!(syllable("ng2").unwrap(), "ŋ↗");
        assert_eq!(syllable("hm5").unwrap(), "hm");
        assert_eq!(syllable("o1").unwrap(), "ɔ→");
        assert_eq!(syllable("ê2").unwrap(), "ɛ↗");
        assert_eq!(syllable("xyz1"), None);
        assert_eq!(syllable("i1"), None);
        // 小猴儿: the er5 of erhua joins its syllable.
        assert_eq!(phonemize("xiao3-hou2-er5."), "ɕjau↓xou↗ɚ.");
    }

    #[test]
    fn words_punctuation_and_sandhi_tones_as_given() {
        assert_eq!(phonemize("ni3-hao3, shi4-jie4."), "ni↓xau↓, ʂɨ↘ʨje↘.");
        // Without word marks each syllable is a word.
        assert_eq!(phonemize("ni2 hao3!"), "ni↗ xau↓!");
        // 一/不 sandhi arrives in the tones: yi2 ge4, bu2 shi4.
        assert_eq!(phonemize("yi2-ge4 bu2-shi4?"), "i↗kɤ↘ pu↗ʂɨ↘?");
        assert_eq!(phonemize(""), "");
        assert_eq!(phonemize(". , ."), ". , .");
    }

    #[test]
    fn latin_tokens_are_spelled_or_read() {
        assert_eq!(
            phonemize("yi4 tiao2 QQ xiao1-xi5"),
            "i↘ tʰjau↗ kʰjou→ kʰjou→ ɕjau→ɕi"
        );
        assert_eq!(phonemize("wu3 G"), "u↓ ʨi→");
        assert_eq!(phonemize("VIP MP"), "vi→ ai→ pʰi→ ɛ→m pʰi→");
        // English words: espeak-ng's en-us phonemes in the model's symbols.
        assert_eq!(phonemize("iPhone da3-kai1"), "ˈI fˈOn ta↓kʰai→");
        assert_eq!(phonemize("App Store."), "ˈæp stˈoːɹ.");
        assert!(has_latin("ta1 na2-chu1 iPhone.") && has_latin("QQ xiao1-xi5"));
        assert!(!has_latin("ni3-hao3, shi4-jie4.") && !has_latin("ni hao"));
        for c in 'A'..='Z' {
            assert!(!letter(c).is_empty(), "{c}");
            assert!(tokens(letter(c)).len() == letter(c).chars().count(), "{c}");
        }
    }

    #[test]
    fn english_ipa_maps_into_the_vocabulary() {
        assert_eq!(from_ipa("ˈaɪ fˈoʊn"), "ˈI fˈOn");
        assert_eq!(from_ipa("wiː tʃˈæt"), "wiː ʧˈæt");
        assert_eq!(from_ipa("dʒˈɔɪ  bˈaʊ"), "ʤˈY bˈW");
        // Symbols outside the vocabulary (a tie bar, ɬ) are dropped.
        assert_eq!(from_ipa("t\u{361}ʃɬa"), "ʧa");
        for word in ["Hello", "Facebook", "sorry", "Wi-Fi", "Windows"] {
            let p = english(word).expect("espeak-ng says English words");
            assert_eq!(
                tokens(&p).len(),
                p.chars().filter(|c| *c != ' ').count(),
                "{word}: {p}"
            );
        }
    }

    /// Every reading of every CJK Unified Ideograph the pinyin tables know
    /// (the pinyin crate's data: every Mandarin syllable in use), in each
    /// of its tones and in the neutral tone, maps to symbols the model
    /// knows, with exactly one tone mark (none for the neutral tone).
    #[test]
    fn every_syllable_of_the_pinyin_table_maps_into_the_vocabulary() {
        use pinyin::ToPinyinMulti;
        let mut syllables = std::collections::BTreeSet::new();
        for c in '\u{4e00}'..='\u{9fff}' {
            if let Some(readings) = c.to_pinyin_multi() {
                for r in readings {
                    syllables.insert(r.with_tone_num_end().to_owned());
                    syllables.insert(format!("{}5", r.plain()));
                }
            }
        }
        let bases: std::collections::BTreeSet<String> = syllables
            .iter()
            .map(|s| s.trim_end_matches(|c: char| c.is_ascii_digit()).to_owned())
            .collect();
        assert!(bases.len() > 400, "{}", bases.len());
        for must in ["lve", "nve", "er", "hm", "ng", "yo", "zhi", "yuan", "weng"] {
            assert!(
                bases.contains(must) || must == "lve" || must == "nve",
                "{must}"
            );
        }
        for s in &syllables {
            let p = syllable(s).unwrap_or_else(|| panic!("{s} did not map"));
            assert_eq!(tokens(&p).len(), p.chars().count(), "{s} → {p}");
            let tone = s.chars().last().and_then(|c| c.to_digit(10)).unwrap_or(5);
            let marks = p.chars().filter(|c| "→↗↓↘".contains(*c)).count();
            assert_eq!(marks, usize::from(tone != 5), "{s} → {p}");
        }
    }

    #[test]
    fn long_phoneme_strings_split_without_loss() {
        let long = phonemize(&"ni3-hao3 ".repeat(200));
        let pieces = split_tokens(&long, 100);
        assert!(pieces.len() > 10);
        assert!(pieces.iter().all(|p| p.chars().count() <= 100));
        assert_eq!(pieces.join(" "), long);
        let punct = phonemize(&"ni3-hao3, ".repeat(50));
        for p in split_tokens(&punct, 60) {
            assert!(p.ends_with(','), "{p}");
        }
        let word = "a".repeat(250);
        let pieces = split_tokens(&word, 100);
        assert_eq!(pieces.concat(), word);
    }
}
