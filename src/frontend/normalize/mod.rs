//! Written text → spoken text: numbers, dates, times, money, units,
//! fractions, percentages, full-width forms and symbols become the words a
//! narrator would say. The original text is never changed; this output only
//! feeds synthesis. Words, 儿, interjections and fillers are never dropped.
//!
//! Where an audiobook reading deliberately differs from common text
//! normalizers: ¥ is read 元, 号 stays 号, and a two-digit count before 年
//! is a number of years (50年 → 五十年) unless it has a leading zero or a
//! month follows.
//!
//! One module per family: `numbers` sets the order of the number rules
//! and reads what is left, `codes` the numbers with a form of their own
//! (phones, plates, 80后), `dates` dates and times, `amounts` money and
//! units, `words` numbers as words, `latin` acronyms.

mod amounts;
mod codes;
mod dates;
mod latin;
mod numbers;
mod words;

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::dictionary::Dictionary;
use super::lexicon::Lexicon;

pub use words::cardinal;

/// Compiles one of the normalizer's fixed patterns.
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid normalizer regex")
}

static PAUSES: LazyLock<Regex> =
    LazyLock::new(|| re(r"…{2,}|\.{3,}|。{2,}|—{2,}|-{2,}|～{2,}|~{2,}|[！!？?]{2,}|[，,]{2,}"));

/// Returns the spoken form of `text`.
pub fn normalize(text: &str) -> String {
    normalize_with(text, &Lexicon::new())
}

/// Returns the spoken form of `text`, applying a lexicon's `say` entries
/// (those of single digits to codes read digit by digit).
pub fn normalize_with(text: &str, lexicon: &Lexicon) -> String {
    let mut text = fold_width(text);
    if lexicon.entries().iter().any(|e| e.say.is_some()) {
        text = replace_words(&text, lexicon, false);
    }
    if text.bytes().any(|b| b.is_ascii_alphabetic()) {
        text = latin::spell_acronyms(&text);
    }
    if text.bytes().any(|b| b.is_ascii_digit()) {
        let spoken = numbers::numbers(&text, &words::CodeDigits::new(lexicon));
        text = if is_traditional(&text) {
            traditional_words(&text, &spoken)
        } else {
            spoken
        };
    }
    symbols(&text)
}

/// Whether a line is written in Traditional characters (has any character
/// that has a different Simplified form).
fn is_traditional(text: &str) -> bool {
    let dict = Dictionary::get();
    text.chars().any(|c| dict.simplified(c) != c)
}

/// The number words this module writes, in Traditional form.
const TRADITIONAL: [(char, char); 13] = [
    ('万', '萬'),
    ('两', '兩'),
    ('点', '點'),
    ('亿', '億'),
    ('负', '負'),
    ('摄', '攝'),
    ('欧', '歐'),
    ('镑', '鎊'),
    ('韩', '韓'),
    ('钟', '鐘'),
    ('华', '華'),
    ('时', '時'),
    ('币', '幣'),
];

/// Rewrites the words that normalization added to a Traditional line in
/// Traditional characters; characters of the original line stay as written.
fn traditional_words(original: &str, spoken: &str) -> String {
    spoken
        .chars()
        .map(|c| match TRADITIONAL.iter().find(|(s, _)| *s == c) {
            Some(&(s, t)) if !original.contains(s) => t,
            _ => c,
        })
        .collect()
}

/// Full-width digits, letters, ％ and ＄ → half-width; ．－／： only
/// between digits (elsewhere they are punctuation and stay as written).
fn fold_width(text: &str) -> String {
    let half = |c: char| char::from_u32(c as u32 - 0xFEE0).unwrap_or(c);
    let is_digit =
        |c: Option<&char>| c.is_some_and(|c| c.is_ascii_digit() || ('０'..='９').contains(c));
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    // Whether the run of ○ or O being read stands for zeros.
    let mut run_is_zero = false;
    for (i, &c) in chars.iter().enumerate() {
        let folded = match c {
            // Ｏ and O typed for 〇 between numerals: 二ＯＯ八年, 第一O五回;
            // ○ (a white circle) among numerals: 第一○五回, 一九八○年
            // (alone, as in 他骂了句○○, it stays a mark).
            'O' | 'Ｏ' | '○' => {
                if i == 0 || chars[i - 1] != c {
                    run_is_zero = in_numeral_run(&chars, i, c != '○');
                }
                if run_is_zero {
                    '〇'
                } else if c == 'Ｏ' {
                    half(c)
                } else {
                    c
                }
            }
            '０'..='９' | 'Ａ'..='Ｚ' | 'ａ'..='ｚ' | '％' | '＄' => half(c),
            '．' | '－' | '／' | '：'
                if is_digit(chars.get(i + 1))
                    && (c == '－' || is_digit(i.checked_sub(1).and_then(|p| chars.get(p)))) =>
            {
                half(c)
            }
            _ => c,
        };
        out.push(folded);
    }
    out
}

/// Does a Chinese numeral touch the run of one character (○, or the letter
/// O) that starts at `chars[start]`, on either side, or on `both`?
fn in_numeral_run(chars: &[char], start: usize, both: bool) -> bool {
    let numeral = |c: &char| "〇零一二两兩三四五六七八九十百千".contains(*c);
    let c = chars[start];
    let end = chars[start..]
        .iter()
        .position(|x| *x != c)
        .map_or(chars.len(), |p| start + p);
    let before = start
        .checked_sub(1)
        .and_then(|p| chars.get(p))
        .is_some_and(numeral);
    let after = chars.get(end).is_some_and(numeral);
    if both {
        before && after
    } else {
        before || after
    }
}

/// Replaces lexicon words that have a `say` entry, longest match first,
/// matching Simplified or Traditional text; with `aligned`, only those whose
/// replacement has as many characters as the word. A single digit's entry
/// is not a word: it says how the digit is read in codes
/// (`CodeDigits`).
pub fn replace_words(text: &str, lexicon: &Lexicon, aligned: bool) -> String {
    let dict = Dictionary::get();
    let chars: Vec<char> = text.chars().collect();
    let simplified: String = chars.iter().map(|&c| dict.simplified(c)).collect();
    let offsets: Vec<usize> = simplified
        .char_indices()
        .map(|(i, _)| i)
        .chain([simplified.len()])
        .collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    'outer: while i < chars.len() {
        for len in (1..=lexicon.max_chars().min(chars.len() - i)).rev() {
            if len == 1 && chars[i].is_ascii_digit() {
                continue;
            }
            let word = &simplified[offsets[i]..offsets[i + len]];
            if let Some(say) = lexicon
                .lookup_simplified(word)
                .and_then(|e| e.say.as_deref())
                && (!aligned || say.chars().count() == len)
            {
                out.push_str(say);
                i += len;
                continue 'outer;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// Characters before and after a match.
fn around(text: &str, start: usize, end: usize) -> (Option<char>, Option<char>) {
    (
        text[..start].chars().next_back(),
        text[end..].chars().next(),
    )
}

/// Whether `c` is an ASCII digit.
fn is_digit(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_ascii_digit())
}

/// Applies `f` to every match of `regex`; `f` returns `None` to keep a match.
fn rewrite(text: &str, regex: &Regex, f: impl Fn(&str, &Captures) -> Option<String>) -> String {
    regex
        .replace_all(text, |caps: &Captures| {
            f(text, caps).unwrap_or_else(|| caps[0].to_owned())
        })
        .into_owned()
}

/// Pause marks: runs of ……, ——, ～ and repeated punctuation collapse to one
/// mark (a pause, never dropped words); emoji and decorative symbols go.
fn symbols(text: &str) -> String {
    let text: String = text.chars().filter(|&c| !is_decoration(c)).collect();
    if !text.chars().any(|c| {
        matches!(
            c,
            '…' | '.' | '。' | '—' | '-' | '～' | '~' | '！' | '!' | '？' | '?' | '，' | ','
        )
    }) {
        return text;
    }
    PAUSES
        .replace_all(&text, |c: &Captures| {
            let first = c[0].chars().next().unwrap_or('…');
            match first {
                '.' | '。' | '…' => "……".to_owned(),
                '—' | '-' => "——".to_owned(),
                '！' | '!' | '？' | '?' => {
                    if c[0].contains(['？', '?']) {
                        "？".to_owned()
                    } else {
                        "！".to_owned()
                    }
                }
                other => other.to_string(),
            }
        })
        .into_owned()
}

/// Emoji and decorative symbols, which are not read.
fn is_decoration(c: char) -> bool {
    matches!(c as u32,
        0x1F000..=0x1FAFF   // emoji, pictographs, playing cards
        | 0x2600..=0x27BF   // misc symbols, dingbats
        | 0x2B00..=0x2BFF   // arrows and stars
        | 0x25A0..=0x25FF   // geometric shapes ■□▲●◆
        | 0x2190..=0x21FF   // arrows
        | 0xFE0F | 0x200D   // emoji presentation, joiner
        | 0x203B            // ※
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_white_circle_among_numerals_is_a_zero() {
        assert_eq!(normalize("第一○五回"), "第一〇五回");
        assert_eq!(normalize("一九八○年，第一○○回"), "一九八〇年，第一〇〇回");
        // The letter O between numerals too, in either width; not beside one.
        assert_eq!(normalize("二ＯＯ八年，第一O五回"), "二〇〇八年，第一〇五回");
        assert_eq!(normalize("一O型血"), "一O型血");
        // Alone it is a mark that is not read.
        assert_eq!(normalize("他骂了句○○，走了"), "他骂了句，走了");
    }

    #[test]
    fn numbers_in_text() {
        let cases = [
            ("1627年，他带了2000人", "一六二七年，他带了两千人"),
            ("12.5公里", "十二点五公里"),
            ("来了2个人", "来了两个人"),
            ("第2名", "第二名"),
            ("涨了５０％", "涨了百分之五十"),
            ("3-5天", "三到五天"),
            ("零下-3度", "零下三度"),
            ("电话010", "电话零一零"),
            ("3/4的人", "四分之三的人"),
            ("5又2分之1", "五又二分之一"),
            ("2024-08-08出发", "二零二四年八月八日出发"),
            ("8:30起床", "八点三十分起床"),
            ("¥25", "二十五元"),
            ("$1.5万", "一点五万美元"),
            ("跑了5km", "跑了五公里"),
            ("120m²", "一百二十平方米"),
            ("36.5℃", "三十六点五摄氏度"),
            ("3斤2两", "三斤二两"),
            ("手机13812345678", "手机一三八一二三四五六七八"),
            ("打了3:2", "打了三比二"),
            ("1,000,000人", "一百万人"),
            ("2015年08月08号", "二零一五年八月八号"),
            ("过了50年", "过了五十年"),
            ("仙境．婆罗", "仙境．婆罗"),
            ("V2.5.1版", "V二点五点一版"),
            ("用了3min20s", "用了三分钟二十秒"),
            ("$3.5/斤", "三点五美元每斤"),
            ("-5℃～3℃", "零下五摄氏度到三摄氏度"),
            ("3公里~5公里", "三公里到五公里"),
            ("好～走了", "好～走了"),
            ("３．５公斤，－５度", "三点五公斤，零下五度"),
            ("兩個人走了2.5萬里", "兩個人走了二點五萬里"),
            ("價格$12000", "價格一萬兩千美元"),
            ("公元前202年", "公元前二零二年"),
            ("1823年3月bc", "公元前一八二三年三月"),
            ("打138.0013.8000", "打一三八，零零一三，八零零零"),
            ("0571-8765 4321转86", "零五七一，八七六五，四三二一转八六"),
            ("9:00-17:30上班", "九点到十七点三十分上班"),
            ("只有3‰", "只有千分之三"),
            ("风速5m/s", "风速五米每秒"),
            ("30岁—40岁", "三十岁到四十岁"),
            (
                "卡号6222 0201 2345 6789",
                "卡号六二二二，零二零一，二三四五，六七八九",
            ),
            ("1000 2000 3000", "一千 两千 三千"),
            ("连上192.168.1.1", "连上一九二点一六八点一点一"),
        ];
        for (written, spoken) in cases {
            assert_eq!(normalize(written), spoken, "{written}");
        }
    }

    #[test]
    fn symbols_and_words() {
        assert_eq!(normalize("他是ceo"), "他是CEO");
        assert_eq!(normalize("OK，好的"), "OK，好的");
        assert_eq!(normalize("等等……好吧——走！！！"), "等等……好吧——走！");
        assert_eq!(normalize("真的吗？！😀★"), "真的吗？");
        assert_eq!(normalize("哥儿们，嗯，那个"), "哥儿们，嗯，那个");
    }

    #[test]
    fn lexicon_replacements_in_either_script() {
        let lex = Lexicon::parse(
            "\"靼子\" = { say = \"鞑子\" }",
            std::path::Path::new("l.toml"),
        )
        .unwrap();
        assert_eq!(normalize_with("那靼子来了", &lex), "那鞑子来了");
        assert_eq!(normalize_with("那靼子來了", &lex), "那鞑子來了");
    }

    #[test]
    fn lexicon_says_code_digits() {
        let lex =
            Lexicon::parse("\"1\" = { say = \"幺\" }", std::path::Path::new("l.toml")).unwrap();
        for (written, spoken) in [
            ("打110", "打幺幺零"),
            ("手机13812345678", "手机幺三八幺二三四五六七八"),
            ("138-0013-8000", "幺三八，零零幺三，八零零零"),
            ("住在1201室", "住在幺二零幺室"),
            ("京A12345", "京A幺二三四五"),
            // Counts, years and decimals keep 一.
            ("100人，1991年，1.1米", "一百人，一九九一年，一点一米"),
        ] {
            assert_eq!(normalize_with(written, &lex), spoken, "{written}");
        }
    }
}
