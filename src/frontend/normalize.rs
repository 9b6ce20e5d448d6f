//! Written text → spoken text: numbers, dates, times, money, units,
//! fractions, percentages, full-width forms and symbols become the words a
//! narrator would say. The original text is never changed; this output only
//! feeds synthesis. Words, 儿, interjections and fillers are never dropped.
//!
//! Where an audiobook reading deliberately differs from common text
//! normalizers: ¥ is read 元, 号 stays 号, and a two-digit count before 年
//! is a number of years (50年 → 五十年) unless it has a leading zero or a
//! month follows.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::dictionary::Dictionary;
use super::lexicon::Lexicon;

const DIGITS: [char; 10] = ['零', '一', '二', '三', '四', '五', '六', '七', '八', '九'];

/// Measure words after which 2 is read 两.
const LIANG_MEASURES: &str = "个個只隻位名次天年条條件本张張把匹头頭口辆輛艘架门門座间間家种種样樣部份点點分秒周岁歲斤层層倍枚支根片封颗顆双雙对對句步声聲碗杯场場顿頓趟遍回下套台臺幅首篇块塊元毛角千万萬亿億百里米克吨噸升群批届屆项項辈輩棵株朵顶頂条棟栋尊拳脚腳眼";

/// Words before a number that make it a code read digit by digit.
const CODE_WORDS: [&str; 24] = [
    "电话",
    "手机",
    "号码",
    "编号",
    "热线",
    "拨打",
    "尾号",
    "账号",
    "帐号",
    "密码",
    "工号",
    "学号",
    "房间",
    "QQ",
    "qq",
    "邮编",
    "验证码",
    "单号",
    "房号",
    "门牌",
    "单元",
    "车次",
    "航班",
    "口令",
];

/// Numbers read digit by digit when they stand alone (not before a measure
/// word or unit): service and emergency lines (打110) and the net's number
/// words (520 我爱你, 1314 一生一世, 666, 886 拜拜, 233 大笑).
const DIGIT_WORDS: [&str; 21] = [
    "110", "119", "120", "122", "114", "12306", "12315", "12345", "12110", "10086", "10010",
    "95588", "95533", "520", "521", "1314", "5201314", "666", "886", "233", "555",
];

/// Characters after a number that make it a count or amount (120米,
/// 520元), not a digit word.
const COUNT_AFTER: &str = "人元块塊毛角分秒岁歲年月日号號米克斤升吨度多余来万萬亿億千百十倍辆輛位名层層楼樓室平亩步公厘毫英码尺寸寸%";

/// Acronyms written in lower or mixed case that are read letter by letter.
const ACRONYMS: [&str; 26] = [
    "ATM", "UFO", "NBA", "CBA", "GPU", "CPU", "CEO", "CFO", "CTO", "COO", "WTO", "MVP", "VIP",
    "IQ", "EQ", "MBA", "DNA", "GDP", "KTV", "FBI", "CIA", "USB", "PPT", "NASA", "WHO", "DIY",
];

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid normalizer regex")
}

static LETTERS: LazyLock<Regex> = LazyLock::new(|| re(r"[A-Za-z]+(?: [A-Za-z]+)*"));
static THOUSANDS: LazyLock<Regex> = LazyLock::new(|| re(r"\d{1,3}(?:,\d{3})+"));
static SPACED_THOUSANDS: LazyLock<Regex> = LazyLock::new(|| re(r"\d{1,3}(?: \d{3})+"));
/// Mobile numbers written in groups (138-0013-8000, +86 138 0013 8000) and
/// a country code before one.
static PHONE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:\+(\d{1,3})[ -]?)?(1[3-9]\d)[- ](\d{4})[- ](\d{4})"));
/// Licence plates: a province (or, with a dot, any Han character: 江A·88888),
/// a letter, five or six more letters and digits.
static PLATE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(\p{Han})([A-Z])([·・.．\- ]?)([A-Z0-9]{5,6})"));
const PROVINCES: &str = "京津沪渝冀豫云辽黑湘皖鲁新苏浙赣鄂桂甘晋蒙陕吉闽贵粤青藏川宁琼";
/// Decades: 1990s, 80s.
static DECADE: LazyLock<Regex> = LazyLock::new(|| re(r"(\d{2}|\d{4})s"));
/// Generations: 80后, 00后.
static GENERATION: LazyLock<Regex> = LazyLock::new(|| re(r"(\d0)后"));
/// Calibres: .22口径.
static CALIBRE: LazyLock<Regex> = LazyLock::new(|| re(r"\.(\d+)(口径|英寸)"));
/// 7-11 the shop.
static SEVEN_ELEVEN: LazyLock<Regex> = LazyLock::new(|| re(r"7-11(便利|店)"));
/// Yuan with small change in 块: 3.5块 → 三块五.
static KUAI: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+)\.(\d{1,2})块"));
static ERA: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(\d{1,4})(年(?:\d{1,2}月)?(?:\d{1,2}[日号])?)?\s?(a\.d\.|A\.D\.|ad|AD|b\.c\.|B\.C\.|bc|BC)",
    )
});
static DATE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(\d{4}|\d{2})([-/.·])(\d{1,2})([-/.·])(\d{1,2})"));
static VERSION_NUMBER: LazyLock<Regex> = LazyLock::new(|| re(r"\d+(?:\.\d+){2,}"));
static SPOKEN_RANGE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"([零一二三四五六七八九十百千万亿两点][\p{Han}]{0,4}?)[～~]([负零一二三四五六七八九十百千万亿两])",
    )
});
static PER_UNIT: LazyLock<Regex> =
    LazyLock::new(|| re(r"(元|角|块|米|克|斤|升|吨|度|秒|钟|时|里)/(\p{Han})"));
static TIME: LazyLock<Regex> = LazyLock::new(|| re(r"(\d{1,2})[:：](\d{2})(?:[:：](\d{2}))?"));
static RATIO: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+)[:：](\d+)"));
static MONEY: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(-)?([$¥￥€£₩])\s?(\d+(?:\.\d+)?)([万亿萬億]?)(美元|美金|元|块|欧元|英镑|韩元|日元|人民币)?",
    )
});
static PERCENT: LazyLock<Regex> = LazyLock::new(|| re(r"(-|负)?(\d+(?:\.\d+)?)%"));
static NEG_WORDS: LazyLock<Regex> = LazyLock::new(|| re(r"-(百分之|\d+分之)"));
static FRACTION: LazyLock<Regex> = LazyLock::new(|| re(r"(-)?(\d+)/(\d+)"));
static MEASURE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(-)?(\d+(?:\.\d+)?)\s?(km/h|km²|m²|m³|cm²|°C|℃|°F|℉|°|kg|km|cm|mm|ml|mL|mg|ms|Hz|kW|kw|min|g|m|s|h|L|t)",
    )
});
static YEAR: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+)年(\d{1,2}月)?"));
static MONTH_DAY: LazyLock<Regex> = LazyLock::new(|| re(r"(\d{1,2})([月日号])"));
static RANGE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(\d+(?:\.\d+)?)\s?[-~～—–]\s?(\d+(?:\.\d+)?)"));
static NUMBER: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?P<neg>-)?(?P<int>\d+)(?:\.(?P<frac>\d+))?"));
static PAUSES: LazyLock<Regex> =
    LazyLock::new(|| re(r"…{2,}|\.{3,}|。{2,}|—{2,}|-{2,}|～{2,}|~{2,}|[！!？?]{2,}|[，,]{2,}"));

/// Returns the spoken form of `text`.
pub fn normalize(text: &str) -> String {
    normalize_with(text, &Lexicon::new())
}

/// Returns the spoken form of `text`, applying a lexicon's `say` entries.
pub fn normalize_with(text: &str, lexicon: &Lexicon) -> String {
    let mut text = fold_width(text);
    if lexicon.entries().iter().any(|e| e.say.is_some()) {
        text = replace_words(&text, lexicon, false);
    }
    if text.bytes().any(|b| b.is_ascii_alphabetic()) {
        text = LETTERS.replace_all(&text, acronym).into_owned();
    }
    if text.bytes().any(|b| b.is_ascii_digit()) {
        let spoken = numbers(&text);
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
    for (i, &c) in chars.iter().enumerate() {
        let folded = match c {
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

/// Replaces lexicon words that have a `say` entry, longest match first,
/// matching Simplified or Traditional text; with `aligned`, only those whose
/// replacement has as many characters as the word.
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

fn acronym(caps: &Captures) -> String {
    let run = &caps[0];
    let joined: String = run.chars().filter(|c| *c != ' ').collect::<String>();
    let upper = joined.to_ascii_uppercase();
    if joined != upper && ACRONYMS.contains(&upper.as_str()) {
        upper
    } else {
        run.to_owned()
    }
}

/// Characters before and after a match.
fn around(text: &str, start: usize, end: usize) -> (Option<char>, Option<char>) {
    (
        text[..start].chars().next_back(),
        text[end..].chars().next(),
    )
}

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

fn numbers(text: &str) -> String {
    let text = rewrite(text, &PHONE, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        if is_digit(before) || is_digit(after) {
            return None;
        }
        let mut out = String::new();
        if let Some(country) = c.get(1) {
            out.push('加');
            out.push_str(&digit_string(country.as_str()));
            out.push('，');
        }
        for (i, group) in [2, 3, 4].into_iter().enumerate() {
            if i > 0 {
                out.push('，');
            }
            out.push_str(&digit_string(&c[group]));
        }
        Some(out)
    });
    let text = rewrite(&text, &PLATE, |t, c| {
        let m = c.get(0)?;
        let (_, after) = around(t, m.start(), m.end());
        let dotted = matches!(&c[3], "·" | "・");
        let province = c[1].chars().next().is_some_and(|p| PROVINCES.contains(p));
        if after.is_some_and(|a| a.is_ascii_alphanumeric())
            || !(dotted || province)
            || !c[4].bytes().any(|b| b.is_ascii_digit())
        {
            return None;
        }
        let rest: String = c[4]
            .chars()
            .map(|ch| match ch.to_digit(10) {
                Some(d) => DIGITS[d as usize],
                None => ch,
            })
            .collect();
        Some(format!("{}{}{rest}", &c[1], &c[2]))
    });
    let text = rewrite(&text, &SPACED_THOUSANDS, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        if is_digit(before) || is_digit(after) || before == Some('+') {
            return None;
        }
        Some(m.as_str().replace(' ', ""))
    });
    let text = THOUSANDS.replace_all(&text, |c: &Captures| c[0].replace(',', ""));
    let text = rewrite(&text, &DECADE, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        if before.is_some_and(|b| b.is_ascii_alphanumeric())
            || after.is_some_and(|a| a.is_ascii_alphanumeric())
            || !c[1].ends_with('0')
        {
            return None;
        }
        Some(format!("{}年代", digit_string(&c[1])))
    });
    let text = rewrite(&text, &GENERATION, |t, c| {
        let m = c.get(0)?;
        let (before, _) = around(t, m.start(), m.end());
        if is_digit(before) || before == Some('第') || before == Some('.') {
            return None;
        }
        Some(format!("{}后", digit_string(&c[1])))
    });
    let text = rewrite(&text, &CALIBRE, |t, c| {
        let m = c.get(0)?;
        let (before, _) = around(t, m.start(), m.end());
        if is_digit(before) {
            return None;
        }
        Some(format!("点{}{}", digit_string(&c[1]), &c[2]))
    });
    let text = SEVEN_ELEVEN.replace_all(&text, "七十一$1");
    let text = rewrite(&text, &KUAI, |t, c| {
        let m = c.get(0)?;
        let (before, _) = around(t, m.start(), m.end());
        if is_digit(before) || before == Some('.') {
            return None;
        }
        let frac = c[2].trim_end_matches('0');
        let mut out = format!("{}块", number_words(&c[1]));
        let mut digits = frac.bytes().map(|b| DIGITS[usize::from(b - b'0')]);
        match (digits.next(), digits.next()) {
            (Some(jiao), None) => out.push(jiao),
            (Some(jiao), Some(fen)) => {
                out.push(jiao);
                out.push('毛');
                out.push(fen);
            }
            _ => {}
        }
        Some(out)
    });
    let text = rewrite(&text, &ERA, |_, c| {
        let prefix = if c[3].to_ascii_lowercase().starts_with('b') {
            "公元前"
        } else {
            "公元"
        };
        let rest = c.get(2).map_or("", |m| m.as_str());
        Some(format!(
            "{prefix}{}年{}",
            digit_string(&c[1]),
            dates_words(rest.trim_start_matches('年'))
        ))
    });
    let text = rewrite(&text, &DATE, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        let (month, day): (u64, u64) = (c[3].parse().ok()?, c[5].parse().ok()?);
        let valid = c[2] == c[4] && (1..=12).contains(&month) && (1..=31).contains(&day);
        if !valid || is_digit(before) || is_digit(after) || after == Some('.') {
            return None;
        }
        Some(format!(
            "{}年{}月{}日",
            digit_string(&c[1]),
            cardinal(month),
            cardinal(day)
        ))
    });
    let text = rewrite(&text, &VERSION_NUMBER, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        if is_digit(before) || is_digit(after) {
            return None;
        }
        let parts: Vec<String> = m.as_str().split('.').map(number_words).collect();
        Some(parts.join("点"))
    });
    let text = rewrite(&text, &TIME, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        let h: u64 = c[1].parse().ok()?;
        let min: u64 = c[2].parse().ok()?;
        if is_digit(before)
            || is_digit(after)
            || h > 24
            || min > 59
            || c.get(3).is_none() && is_score(t, m.start(), m.end())
        {
            return None;
        }
        // Clock notation — a leading zero (03:04) or am/pm after it —
        // reads each field as a number (三点四分, as the NeMo cases have
        // it); in prose a narrator reads 2:05 as 两点零五分 and 8:00 as 八点.
        let clock = c[1].len() == 2 && c[1].starts_with('0')
            || ["am", "pm", "AM", "PM"]
                .iter()
                .any(|w| t[m.end()..].starts_with(w));
        let hour = if h == 2 {
            "两".to_owned()
        } else {
            cardinal(h)
        };
        let mut out = format!("{hour}点");
        let seconds = c.get(3);
        if clock || min != 0 || seconds.is_some() {
            if !clock && (1..10).contains(&min) {
                out.push('零');
            }
            out.push_str(&cardinal(min));
            out.push('分');
        }
        if let Some(s) = seconds {
            let s: u64 = s.as_str().parse().ok()?;
            out.push_str(&format!("{}秒", cardinal(s)));
        }
        Some(out)
    });
    let text = rewrite(&text, &RATIO, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        if is_digit(before) || is_digit(after) {
            return None;
        }
        Some(format!("{}比{}", number_words(&c[1]), number_words(&c[2])))
    });
    let text = rewrite(&text, &MONEY, |_, c| {
        // A currency word after the amount ($100美元, ¥50块) is the name.
        let name = match (c.get(5), &c[2]) {
            (Some(word), _) => word.as_str(),
            (None, "$") => "美元",
            (None, "€") => "欧元",
            (None, "£") => "英镑",
            (None, "₩") => "韩元",
            (None, _) => "元",
        };
        let sign = if c.get(1).is_some() { "负" } else { "" };
        Some(format!("{sign}{}{}{name}", money_words(&c[3]), &c[4]))
    });
    let text = rewrite(&text, &PERCENT, |_, c| {
        let sign = if c.get(1).is_some() { "负" } else { "" };
        Some(format!("{sign}百分之{}", decimal_words(&c[2])))
    });
    let text = NEG_WORDS.replace_all(&text, "负$1").into_owned();
    let text = rewrite(&text, &FRACTION, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        if is_digit(before) || is_digit(after) || after == Some('/') {
            return None;
        }
        let sign = if c.get(1).is_some() && !is_digit(before) {
            "负"
        } else {
            ""
        };
        Some(format!(
            "{sign}{}分之{}",
            number_words(&c[3]),
            number_words(&c[2])
        ))
    });
    let text = rewrite(&text, &MEASURE, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        if is_digit(before) || after.is_some_and(|a| a.is_ascii_alphabetic()) {
            return None;
        }
        let unit = match &c[3] {
            "km/h" => "公里每小时",
            "km²" => "平方公里",
            "m²" => "平方米",
            "m³" => "立方米",
            "cm²" => "平方厘米",
            "°C" | "℃" => "摄氏度",
            "°F" | "℉" => "华氏度",
            "°" => "度",
            "kg" => "千克",
            "km" => "公里",
            "cm" => "厘米",
            "mm" => "毫米",
            "ml" | "mL" => "毫升",
            "mg" => "毫克",
            "ms" => "毫秒",
            "Hz" => "赫兹",
            "kW" | "kw" => "千瓦",
            "min" => "分钟",
            "g" => "克",
            "m" => "米",
            "s" => "秒",
            "h" => "小时",
            "L" => "升",
            "t" => "吨",
            _ => return None,
        };
        let negative = c.get(1).is_some() && !before.is_some_and(|b| b.is_ascii_alphanumeric());
        let sign = match () {
            // Below zero a narrator says 零下 (零下十摄氏度), once.
            _ if negative && unit.contains('度') && t[..m.start()].ends_with("零下") => "",
            _ if negative && unit.contains('度') => "零下",
            _ if negative => "负",
            _ => "",
        };
        let amount = if &c[2] == "2" && !unit.contains('度') {
            "两".to_owned()
        } else {
            decimal_words(&c[2])
        };
        Some(format!("{sign}{amount}{unit}"))
    });
    let text = rewrite(&text, &YEAR, |t, c| {
        let m = c.get(0)?;
        let (before, _) = around(t, m.start(), m.end());
        if is_digit(before) || before == Some('.') {
            return None;
        }
        let y = &c[1];
        let head = &t[..m.start()];
        let month = c.get(2).map_or(String::new(), |m| dates_words(m.as_str()));
        let era = head.ends_with("公元") || head.ends_with("公元前") || head.ends_with("纪元");
        let count_word = ["了", "过", "近", "约", "达", "经", "有", "每", "几"]
            .iter()
            .any(|w| head.ends_with(w));
        let value: u64 = y.parse().ok()?;
        let as_year = (y.len() == 4 && !(count_word && value.is_multiple_of(100)))
            || (y.len() > 1 && y.starts_with('0'))
            || (y.len() == 2 && !month.is_empty())
            || (y.len() == 3 && era);
        let words = if as_year {
            digit_string(y)
        } else if value == 2 {
            "两".to_owned()
        } else {
            number_words(y)
        };
        Some(format!("{words}年{month}"))
    });
    let text = rewrite(&text, &MONTH_DAY, |t, c| {
        let m = c.get(0)?;
        let (before, _) = around(t, m.start(), m.end());
        if is_digit(before) || before == Some('.') || before == Some('第') {
            return None;
        }
        Some(dates_words(&c[0]))
    });
    let text = rewrite(&text, &RANGE, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        if is_digit(before) || is_digit(after) || before == Some('.') {
            return None;
        }
        let (a, b) = (&c[1], &c[2]);
        let code = |s: &str| s.len() > 1 && s.starts_with('0');
        if code(a) || code(b) || a.len() + b.len() >= 7 {
            return Some(format!("{}，{}", digit_string(a), digit_string(b)));
        }
        Some(format!("{}到{}", decimal_words(a), decimal_words(b)))
    });
    let text = rewrite(&text, &NUMBER, |t, c| Some(speak_number(t, c)));
    // Ranges whose ends carry units: 负五摄氏度～三摄氏度 → …到….
    let text = SPOKEN_RANGE.replace_all(&text, "${1}到$2");
    PER_UNIT.replace_all(&text, "${1}每$2").into_owned()
}

/// "3月" → "三月", "08日" → "八日" (number + the unit kept).
fn dates_words(text: &str) -> String {
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    let rest: String = text.chars().filter(|c| !c.is_ascii_digit()).collect();
    match digits.parse::<u64>() {
        Ok(v) => format!("{}{rest}", cardinal(v)),
        Err(_) => text.to_owned(),
    }
}

fn digit_string(digits: &str) -> String {
    digits
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| DIGITS[usize::from(b - b'0')])
        .collect()
}

/// An integer string as words; codes (leading zero, very long) digit by digit.
fn number_words(int: &str) -> String {
    if int.len() > 1 && int.starts_with('0') || int.len() > 12 {
        return digit_string(int);
    }
    int.parse().map_or_else(|_| digit_string(int), cardinal)
}

/// "12.5" → 十二点五.
fn decimal_words(number: &str) -> String {
    match number.split_once('.') {
        Some((int, frac)) => {
            let int = if int.len() > 1 && int.starts_with('0') {
                int.trim_start_matches('0')
            } else {
                int
            };
            let int = if int.is_empty() { "0" } else { int };
            format!("{}点{}", number_words(int), digit_string(frac))
        }
        None => number_words(number),
    }
}

/// An amount of money: no trailing zeros after the point (14.60元 →
/// 十四点六元, 25.00元 → 二十五元).
fn money_words(number: &str) -> String {
    match number.split_once('.') {
        Some((int, frac)) if frac.trim_end_matches('0').is_empty() => number_words(int),
        Some((int, frac)) => decimal_words(&format!("{int}.{}", frac.trim_end_matches('0'))),
        None => number_words(number),
    }
}

/// Whether `a:b` at `start..end` of `text` is a score (比分17:16, 以3:2击败)
/// rather than a time.
fn is_score(text: &str, start: usize, end: usize) -> bool {
    const BEFORE: [&str; 6] = ["比分", "比赛", "战成", "打成", "比数", "总分"];
    const AFTER: [&str; 7] = ["获胜", "取胜", "战胜", "击败", "赢", "输", "落败"];
    let head = &text[..start];
    let window: String = head
        .chars()
        .rev()
        .take(8)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    BEFORE.iter().any(|w| window.contains(w))
        || head.ends_with('以')
        || AFTER.iter().any(|w| text[end..].starts_with(w))
}

/// Whether the number `int` followed by `next` is said digit by digit as a
/// service line or a net number word (打110, 我爱你520) — not when a count
/// or unit follows (110辆车, 520元).
fn is_digit_word(int: &str, next: Option<char>) -> bool {
    DIGIT_WORDS.contains(&int)
        && !next.is_some_and(|c| {
            COUNT_AFTER.contains(c)
                || LIANG_MEASURES.contains(c)
                || c == '.'
                || c.is_ascii_alphanumeric()
        })
}

fn speak_number(text: &str, caps: &Captures) -> String {
    let whole = caps.get(0).expect("match");
    let int = &caps["int"];
    let next = text[whole.end()..].chars().next();
    let head = &text[..whole.start()];
    let prev = head.chars().next_back();
    let mut out = String::new();
    if caps.name("neg").is_some() {
        let before_sign = head.chars().next_back();
        if before_sign.is_some_and(|c| c.is_ascii_alphanumeric()) {
            out.push(' ');
        } else if next == Some('度') {
            // -3度: a temperature below zero.
            if !head.ends_with("零下") {
                out.push_str("零下");
            }
        } else {
            out.push('负');
        }
    }
    let window: String = head
        .chars()
        .rev()
        .take(6)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let ordinal = prev == Some('第');
    let after_letter = prev.is_some_and(|c| c.is_ascii_uppercase()) && int.len() >= 3;
    // Room and flat numbers: 201室, 1302房间.
    let room = int.len() >= 3 && (next == Some('室') || text[whole.end()..].starts_with("房间"));
    let code = CODE_WORDS.iter().any(|w| window.contains(w))
        || (int.len() == 11 && int.starts_with('1') && matches!(int.as_bytes()[1], b'3'..=b'9'))
        || after_letter
        || room
        || caps.name("frac").is_none() && caps.name("neg").is_none() && is_digit_word(int, next);
    let padded = int.len() > 1 && int.starts_with('0');
    if ordinal && padded {
        // 第001章 → 第一章.
        let trimmed = int.trim_start_matches('0');
        out.push_str(&number_words(if trimmed.is_empty() {
            "0"
        } else {
            trimmed
        }));
    } else if code || padded || int.len() > 12 {
        out.push_str(&digit_string(int));
    } else {
        let value: u64 = int.parse().unwrap_or(0);
        if value == 2
            && !ordinal
            && caps.name("frac").is_none()
            && next.is_some_and(|c| LIANG_MEASURES.contains(c))
            && !text[whole.end()..].starts_with("分之")
        {
            out.push('两');
        } else {
            out.push_str(&cardinal(value));
        }
    }
    if let Some(frac) = caps.name("frac") {
        // Money has no trailing zeros: 14.60元 → 十四点六元.
        let money = ["元", "块", "美元", "欧元", "英镑", "日元", "韩元"]
            .iter()
            .any(|w| text[whole.end()..].starts_with(w));
        let frac = if money {
            frac.as_str().trim_end_matches('0')
        } else {
            frac.as_str()
        };
        if !frac.is_empty() {
            out.push('点');
            out.push_str(&digit_string(frac));
        }
    }
    out
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

/// Reads a non-negative integer the Chinese way (10 → 十, 105 → 一百零五,
/// 2000 → 两千, 20000 → 两万, 210 → 二百一十).
pub fn cardinal(value: u64) -> String {
    if value == 0 {
        return "零".to_owned();
    }
    const GROUPS: [&str; 5] = ["", "万", "亿", "万亿", "亿亿"];
    let mut groups = Vec::new();
    let mut v = value;
    while v > 0 {
        groups.push((v % 10_000) as u32);
        v /= 10_000;
    }
    let mut out = String::new();
    let mut need_zero = false;
    for (i, &group) in groups.iter().enumerate().rev() {
        if group == 0 {
            need_zero = !out.is_empty();
            continue;
        }
        let leading = out.is_empty();
        if need_zero || (!leading && group < 1000) {
            out.push('零');
        }
        let mut words = group_words(group);
        // 十万 not 一十万: a 10–19 group reads 十… at the front, or after 零
        // when it is not the last group.
        if (10..20).contains(&group) && (leading || i > 0) {
            words.remove(0);
        }
        if group == 2 && leading && i > 0 {
            words = "两".to_owned();
        }
        out.push_str(&words);
        out.push_str(GROUPS[i]);
        need_zero = false;
    }
    out
}

/// 1..=9999 → words, with inner zeros; 2 in the thousands reads 两.
fn group_words(group: u32) -> String {
    const UNITS: [&str; 4] = ["千", "百", "十", ""];
    let digits = [group / 1000, group / 100 % 10, group / 10 % 10, group % 10];
    let mut out = String::new();
    let mut pending_zero = false;
    for (pos, (d, unit)) in digits.iter().zip(UNITS).enumerate() {
        if *d == 0 {
            pending_zero = !out.is_empty();
            continue;
        }
        if pending_zero {
            out.push('零');
            pending_zero = false;
        }
        out.push(if pos == 0 && *d == 2 {
            '两'
        } else {
            DIGITS[*d as usize]
        });
        out.push_str(unit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cardinals() {
        let cases = [
            (0, "零"),
            (7, "七"),
            (10, "十"),
            (12, "十二"),
            (20, "二十"),
            (105, "一百零五"),
            (210, "二百一十"),
            (1010, "一千零一十"),
            (2000, "两千"),
            (20000, "两万"),
            (220_000, "二十二万"),
            (100_500, "十万零五百"),
            (300_000_000, "三亿"),
            (1_0001_0000, "一亿零一万"),
            (100_0010, "一百万零一十"),
            (100_0010_0000, "一百亿零十万"),
        ];
        for (n, words) in cases {
            assert_eq!(cardinal(n), words, "{n}");
        }
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
}
