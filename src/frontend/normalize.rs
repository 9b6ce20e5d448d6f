//! Written text → spoken text: digits, percentages, years and full-width
//! forms become the words a narrator would say. The original text is never
//! changed; this output only feeds synthesis.

use std::sync::LazyLock;

use regex::{Captures, Regex};

const DIGITS: [char; 10] = ['零', '一', '二', '三', '四', '五', '六', '七', '八', '九'];

/// Measure words after which 2 is read 两.
const LIANG_MEASURES: &str = "个個只隻位名次天年条條件本张張把匹头頭口辆輛艘架门門座间間家种種样樣部份点點分秒周岁歲斤层層倍枚支根片封颗顆双雙对對句步声聲碗杯";

static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?P<neg>-)?(?P<int>\d+)(?:\.(?P<frac>\d+))?(?P<pct>%)?")
        .expect("valid number regex")
});

/// Returns the spoken form of `text`.
pub fn normalize(text: &str) -> String {
    let text = fold_width(text);
    NUMBER
        .replace_all(&text, |caps: &Captures| speak_number(&text, caps))
        .into_owned()
}

/// Full-width ASCII (digits, letters, ％, ．) → half-width.
fn fold_width(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '０'..='９' | 'Ａ'..='Ｚ' | 'ａ'..='ｚ' | '％' | '．' | '－' => {
                char::from_u32(c as u32 - 0xFEE0).unwrap_or(c)
            }
            _ => c,
        })
        .collect()
}

fn speak_number(text: &str, caps: &Captures) -> String {
    let whole = caps.get(0).expect("match");
    let int = &caps["int"];
    let next = text[whole.end()..].chars().next();
    let prev = text[..whole.start()].chars().next_back();
    let mut out = String::new();
    // A hyphen between two characters is a dash or range, not a minus sign.
    if caps.name("neg").is_some() {
        if prev.is_some_and(|c| c.is_ascii_digit()) {
            out.push('到');
        } else {
            out.push('负');
        }
    }
    if caps.name("pct").is_some() {
        out.push_str("百分之");
    }
    let digit_by_digit = next == Some('年') && int.len() == 4
        || int.len() > 1 && int.starts_with('0')
        || int.len() > 12;
    if digit_by_digit {
        out.extend(int.bytes().map(|b| DIGITS[usize::from(b - b'0')]));
    } else {
        let value: u64 = int.parse().unwrap_or(0);
        let mut words = cardinal(value);
        if value == 2
            && caps.name("frac").is_none()
            && next.is_some_and(|c| LIANG_MEASURES.contains(c))
        {
            words = "两".to_owned();
        }
        out.push_str(&words);
    }
    if let Some(frac) = caps.name("frac") {
        out.push('点');
        out.extend(frac.as_str().bytes().map(|b| DIGITS[usize::from(b - b'0')]));
    }
    out
}

/// Reads a non-negative integer the Chinese way (10 → 十, 105 → 一百零五,
/// 20000 → 两万 is not used: 二万).
pub fn cardinal(value: u64) -> String {
    if value == 0 {
        return "零".to_owned();
    }
    const GROUPS: [&str; 4] = ["", "万", "亿", "万亿"];
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
        if need_zero || (!out.is_empty() && group < 1000) {
            out.push('零');
        }
        out.push_str(&group_words(group));
        out.push_str(GROUPS[i]);
        need_zero = false;
    }
    if out.starts_with("一十") {
        out.remove(0);
    }
    out
}

/// 1..=9999 → words, with inner zeros.
fn group_words(group: u32) -> String {
    const UNITS: [&str; 4] = ["千", "百", "十", ""];
    let digits = [group / 1000, group / 100 % 10, group / 10 % 10, group % 10];
    let mut out = String::new();
    let mut pending_zero = false;
    for (d, unit) in digits.iter().zip(UNITS) {
        if *d == 0 {
            pending_zero = !out.is_empty();
            continue;
        }
        if pending_zero {
            out.push('零');
            pending_zero = false;
        }
        out.push(DIGITS[*d as usize]);
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
            (1010, "一千零一十"),
            (20000, "二万"),
            (100_500, "十万零五百"),
            (300_000_000, "三亿"),
            (1_0001_0000, "一亿零一万"),
        ];
        for (n, words) in cases {
            assert_eq!(cardinal(n), words, "{n}");
        }
    }

    #[test]
    fn numbers_in_text() {
        assert_eq!(
            normalize("1627年，他带了2000人"),
            "一六二七年，他带了二千人"
        );
        assert_eq!(normalize("12.5公里"), "十二点五公里");
        assert_eq!(normalize("来了2个人"), "来了两个人");
        assert_eq!(normalize("涨了５０％"), "涨了百分之五十");
        assert_eq!(normalize("3-5天"), "三到五天");
        assert_eq!(normalize("零下-3度"), "零下负三度");
        assert_eq!(normalize("电话010"), "电话零一零");
    }
}
