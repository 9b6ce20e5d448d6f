//! Amounts: money (¥25, $1.5万, 3.5块 → 三块五), percentages,
//! fractions and measures with units (5km, 36.5℃, -10°C → 零下十摄氏度).

use std::sync::LazyLock;

use regex::Regex;

use super::words::{DIGITS, decimal_words, money_words, number_words};
use super::{around, is_digit, re, rewrite};

/// Yuan with small change in 块: 3.5块 → 三块五.
static KUAI: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+)\.(\d{1,2})块"));

static MONEY: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(-)?([$¥￥€£₩])\s?(\d+(?:\.\d+)?)([万亿萬億]?)(美元|美金|元|块|欧元|英镑|韩元|日元|人民币)?",
    )
});

static PERCENT: LazyLock<Regex> = LazyLock::new(|| re(r"(-|负)?(\d+(?:\.\d+)?)([%‰‱])"));

static NEG_WORDS: LazyLock<Regex> = LazyLock::new(|| re(r"-(百分之|\d+分之)"));

static FRACTION: LazyLock<Regex> = LazyLock::new(|| re(r"(-)?(\d+)/(\d+)"));

static MEASURE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(-)?(\d+(?:\.\d+)?)\s?(km/h|km/s|m/s|km²|m²|m³|cm²|°C|℃|°F|℉|°|kg|km|cm|mm|ml|mL|mg|ms|Hz|kW|kw|min|g|m|s|h|L|t)",
    )
});

/// Rewrites yuan with small change in 块 (3.5块 → 三块五).
pub(super) fn small_change(text: &str) -> String {
    rewrite(text, &KUAI, |t, c| {
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
    })
}

/// Rewrites money, percentages, fractions and measures.
pub(super) fn amounts(text: &str) -> String {
    let text = rewrite(text, &MONEY, |_, c| {
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
        let per = match &c[3] {
            "‰" => "千分之",
            "‱" => "万分之",
            _ => "百分之",
        };
        Some(format!("{sign}{per}{}", decimal_words(&c[2])))
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
    rewrite(&text, &MEASURE, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        if is_digit(before) || after.is_some_and(|a| a.is_ascii_alphabetic()) {
            return None;
        }
        let unit = match &c[3] {
            "km/h" => "公里每小时",
            "km/s" => "公里每秒",
            "m/s" => "米每秒",
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
    })
}
