//! Stage 2 — front end: turn original text into what a narrator says
//! (normalized words) and how it sounds (tone-numbered pinyin).
//!
//! - [`normalize`]: numbers, units, dates, symbols → words;
//! - [`pinyin`]: segmentation, phrase dictionary and the [`polyphone`]
//!   model → lexical tones;
//! - [`sandhi`]: the tones actually spoken (synthesis only);
//! - [`lexicon`]: per-book overrides; [`dictionary`]: the embedded data.

pub mod dictionary;
pub mod lexicon;
pub mod normalize;
pub mod pinyin;
pub mod polyphone;
pub mod sandhi;

pub use lexicon::{Lexicon, LexiconError};

/// Version of the front end's output; part of every synthesis cache key so
/// that a better front end re-renders what it would now say differently.
pub const VERSION: u32 = 3;

/// What one chunk of text sounds like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spoken {
    /// Normalized text in the original script (for text-input backends).
    pub text: String,
    /// What to say, for the pinyin-reading voices (espeak-ng, Kokoro):
    /// tokens separated by single spaces, with tone sandhi applied.
    ///
    /// - A Han syllable is lowercase tone-numbered pinyin (`ni3`, `lv4`,
    ///   neutral tone `5`).
    /// - Phrasing marks are ASCII `,` `.` `!` `?`, written right after the
    ///   token before them (`hao3, shi4`).
    /// - Latin text is a token of ASCII letters only — no tone digit, never
    ///   glued to a syllable. An ALL-UPPERCASE token (`QQ`, `GDP`, `AK`,
    ///   `OK`) is spelled letter by letter; any other (`iPhone`, `Hello`,
    ///   `App`) is read as a word. Digits inside mixed tokens have been
    ///   normalized to Chinese numbers: `AK-47` → `AK si4 shi2 qi1`,
    ///   `5G` → `wu3 G`, `MP3` → `MP san1`.
    ///
    /// A backend that needs another form (espeak-ng switches to an English
    /// voice for words) transforms this string itself.
    pub pinyin: String,
    /// The same pinyin with the syllables of each word joined by `-`
    /// (for voices that phrase by word: Kokoro).
    pub pinyin_words: String,
}

/// Loads the embedded dictionary and polyphone model on a thread of its
/// own, so that they are ready (or nearly) by the time the first chunk is
/// prepared; callers that get there first wait for the same work instead
/// of repeating it.
pub fn warm_up() {
    // Only the tables: the normalizer's patterns are compiled once a chunk
    // has something they match (compiling them here slowed the tables).
    let _ = std::thread::Builder::new()
        .name("tingshu-frontend-warm-up".into())
        .spawn(|| {
            dictionary::Dictionary::get();
            polyphone::Model::embedded();
        });
}

/// Prepares a chunk of original text for synthesis.
pub fn prepare(text: &str) -> Spoken {
    prepare_with(text, &Lexicon::new())
}

/// Prepares a chunk of original text for synthesis with a per-book lexicon.
pub fn prepare_with(text: &str, lexicon: &Lexicon) -> Spoken {
    let normalized = normalize::normalize_with(text, lexicon);
    let analysis = pinyin::Analysis::new(&normalized, lexicon);
    let model = polyphone::Model::embedded();
    let mut readings: Vec<Option<pinyin::Reading>> = (0..analysis.len())
        .map(|i| analysis.reading(i, model))
        .collect();
    let chars: Vec<char> = normalized.chars().collect();
    sandhi::apply_in_words(&chars, &mut readings, analysis.word_ids());
    Spoken {
        pinyin: pinyin::speakable(&normalized, &readings),
        pinyin_words: pinyin::speakable_words(&normalized, &readings, analysis.word_ids()),
        text: normalized,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepare_normalizes_reads_and_applies_sandhi() {
        let s = prepare("他有2个好朋友。");
        assert_eq!(s.text, "他有两个好朋友。");
        assert_eq!(s.pinyin, "ta1 you2 liang3 ge4 hao3 peng2 you5.");
    }

    #[test]
    fn latin_and_numbers_reach_synthesis_apart_from_syllables() {
        for (text, want) in [
            ("一条QQ消息", "yi4 tiao2 QQ xiao1 xi5"),
            ("5G网络", "wu3 G wang3 luo4"),
            ("他举起AK-47", "ta1 ju2 qi3 AK si4 shi2 qi1"),
            ("耳机里放着MP3", "er3 ji1 li3 fang4 zhe5 MP san1"),
            ("打开iPhone", "da3 kai1 iPhone"),
            ("每人100万", "mei3 ren2 yi4 bai3 wan4"),
            ("一月一日", "yi1 yue4 yi1 ri4"),
            ("一万，一亿，一千", "yi2 wan4, yi2 yi4, yi4 qian1"),
            ("打110", "da3 yi1 yi1 ling2"),
            ("统一思想", "tong3 yi1 si1 xiang3"),
        ] {
            let got = prepare(text).pinyin;
            assert_eq!(got, want, "{text}");
            for token in got.split(' ') {
                let t = token.trim_end_matches([',', '.', '!', '?']);
                let latin = t.bytes().all(|b| b.is_ascii_alphabetic());
                let syllable = t.ends_with(|c: char| c.is_ascii_digit())
                    && t[..t.len() - 1].bytes().all(|b| b.is_ascii_lowercase());
                assert!(
                    latin || syllable,
                    "{text}: {token} mixes letters and pinyin"
                );
            }
        }
    }

    #[test]
    fn lexicon_replacement_reaches_synthesis() {
        let lex = Lexicon::parse(
            "\"靼子\" = { say = \"鞑子\" }",
            std::path::Path::new("l.toml"),
        )
        .unwrap();
        let s = prepare_with("靼子来了", &lex);
        assert_eq!(s.text, "鞑子来了");
        assert!(s.pinyin.starts_with("da2 zi"), "{}", s.pinyin);
    }

    #[test]
    fn code_digits_from_the_lexicon_reach_synthesis() {
        let lex =
            Lexicon::parse("\"1\" = { say = \"幺\" }", std::path::Path::new("l.toml")).unwrap();
        let s = prepare_with("打110", &lex);
        assert_eq!(s.text, "打幺幺零");
        assert_eq!(s.pinyin, "da3 yao1 yao1 ling2");
        assert_eq!(prepare("打110").pinyin, "da3 yi1 yi1 ling2");
    }
}
