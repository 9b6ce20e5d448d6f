//! Numbers in running text: the order in which the number rules apply
//! (forms of their own, dates and times, amounts, years), then ranges and
//! any number left, read by its context — a count (两个), a code or phone
//! number digit by digit (电话010, 打110), an ordinal (第001章 → 第一章).

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::words::{CodeDigits, cardinal, decimal_words, digit_string, number_words};
use super::{amounts, around, codes, dates, is_digit, re, rewrite};

/// Measure words after which 2 is read 两.
const LIANG_MEASURES: &str = "个個只隻位名次天年条條件本张張把匹头頭口辆輛艘架门門座间間家种種样樣部份点點分秒周岁歲斤层層倍枚支根片封颗顆双雙对對句步声聲碗杯场場顿頓趟遍回下套台臺幅首篇块塊元毛角千万萬亿億百里米克吨噸升群批届屆项項辈輩棵株朵顶頂条棟栋尊拳脚腳眼";

/// Words before a number that make it a code read digit by digit.
const CODE_WORDS: [&str; 25] = [
    "电话",
    "分机",
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
const COUNT_AFTER: &str = "人元块塊毛角分秒岁歲年月日号號米克斤升吨度多余来万萬亿億千百十倍辆輛位名层層楼樓室平亩步公厘毫英码尺寸寸%‰‱";

static SPOKEN_RANGE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"([零一二三四五六七八九十百千万亿两点][\p{Han}]{0,4}?)[～~—–]([负零一二三四五六七八九十百千万亿两])",
    )
});

static PER_UNIT: LazyLock<Regex> =
    LazyLock::new(|| re(r"(元|角|块|米|克|斤|升|吨|度|秒|钟|时|里)/(\p{Han})"));
static RANGE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(\d+(?:\.\d+)?)\s?[-~～—–]\s?(\d+(?:\.\d+)?)"));
static NUMBER: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?P<neg>-)?(?P<int>\d+)(?:\.(?P<frac>\d+))?"));

/// Rewrites every number of `text` as words; numbers read digit by digit
/// as codes say their digits as `digits` has them.
pub(super) fn numbers(text: &str, digits: &CodeDigits) -> String {
    let text = codes::codes(text, digits);
    let text = amounts::small_change(&text);
    let text = dates::clock_and_calendar(&text);
    let text = amounts::amounts(&text);
    let text = dates::years_and_days(&text);
    let text = rewrite(&text, &RANGE, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        if is_digit(before) || is_digit(after) || before == Some('.') {
            return None;
        }
        let (a, b) = (&c[1], &c[2]);
        let code = |s: &str| s.len() > 1 && s.starts_with('0');
        if code(a) || code(b) || a.len() + b.len() >= 7 {
            return Some(format!("{}，{}", digits.spell(a), digits.spell(b)));
        }
        Some(format!("{}到{}", decimal_words(a), decimal_words(b)))
    });
    let text = rewrite(&text, &NUMBER, |t, c| Some(speak_number(t, c, digits)));
    // Ranges whose ends carry units: 负五摄氏度～三摄氏度, 三十岁—四十岁 →
    // …到….
    let text = SPOKEN_RANGE.replace_all(&text, "${1}到$2");
    PER_UNIT.replace_all(&text, "${1}每$2").into_owned()
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

/// A number left after every other rule, as words read by its context.
fn speak_number(text: &str, caps: &Captures, digits: &CodeDigits) -> String {
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
        out.push_str(&digits.spell(int));
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
