//! Numbers written in a form of their own, read before any other number
//! rule: mobile numbers, landlines and service lines in groups, card, order
//! and account numbers in groups, licence plates, thousands separators,
//! decades (1990s), generations (80后), calibres (.22口径) and 7-11.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::words::{CodeDigits, digit_string};
use super::{around, is_digit, re, rewrite};

static THOUSANDS: LazyLock<Regex> = LazyLock::new(|| re(r"\d{1,3}(?:,\d{3})+"));

static SPACED_THOUSANDS: LazyLock<Regex> = LazyLock::new(|| re(r"\d{1,3}(?: \d{3})+"));

/// Mobile numbers written in groups (138-0013-8000, +86 138 0013 8000,
/// 138.0013.8000) and a country code before one.
static PHONE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:\+(\d{1,3})[ -]?)?(1[3-9]\d)[- .](\d{4})[- .](\d{4})"));
/// Landlines and service lines written in groups: an area code and the
/// number (010-62345678, 0755-8866 2211, 010 6552 3399) or 400/800 lines
/// in three groups (400-820-8820), with an extension after 转 read digit
/// by digit too (021-5888 6666转302).
static LANDLINE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?:0\d{2,3}[- ](?:\d{7,8}|\d{3,4}[- ]\d{4})|[48]00[- ]\d{3,4}[- ]\d{3,4})(?:转(\d{1,5}))?")
});
/// Long numbers in three or more groups, two of them of four digits or
/// more (6222 0201 2345 6789, 2024-0305-0001, 12 3456 7890): card, order
/// and account numbers, read digit by digit with a pause between groups.
static GROUPED: LazyLock<Regex> = LazyLock::new(|| re(r"\d{1,6}(?:[- ]\d{1,6}){2,}"));

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

/// Rewrites the numbers with a form of their own in `text`; phone numbers
/// and plates say their digits as `digits` has them.
pub(super) fn codes(text: &str, digits: &CodeDigits) -> String {
    let text = rewrite(text, &PHONE, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        if is_digit(before) || is_digit(after) {
            return None;
        }
        let mut out = String::new();
        if let Some(country) = c.get(1) {
            out.push('加');
            out.push_str(&digits.spell(country.as_str()));
            out.push('，');
        }
        for (i, group) in [2, 3, 4].into_iter().enumerate() {
            if i > 0 {
                out.push('，');
            }
            out.push_str(&digits.spell(&c[group]));
        }
        Some(out)
    });
    let text = rewrite(&text, &LANDLINE, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        if is_digit(before) || is_digit(after) || before == Some('.') || inside_groups(t, m.start())
        {
            return None;
        }
        let number = m.as_str().split('转').next().unwrap_or_default();
        let mut out = spell_groups(number, digits);
        if let Some(extension) = c.get(1) {
            out.push('转');
            out.push_str(&digits.spell(extension.as_str()));
        }
        Some(out)
    });
    let text = rewrite(&text, &GROUPED, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        let groups: Vec<&str> = m.as_str().split(['-', ' ']).collect();
        if is_digit(before)
            || is_digit(after)
            || before == Some('.')
            || after == Some('.')
            || groups.iter().filter(|g| g.len() >= 4).count() < 2
            // A list of round amounts (1000 2000 3000), not a code.
            || groups.iter().all(|g| g.ends_with("00") && !g.starts_with('0'))
        {
            return None;
        }
        Some(spell_groups(m.as_str(), digits))
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
        let mut rest = String::new();
        for ch in c[4].chars() {
            match ch.to_digit(10) {
                Some(d) => digits.push(&mut rest, d as usize),
                None => rest.push(ch),
            }
        }
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
    SEVEN_ELEVEN.replace_all(&text, "七十一$1").into_owned()
}

/// Digit groups separated by dashes or spaces, each said digit by digit,
/// with a pause between groups (0571-8765 4321 → 零五七一，八七六五，四三二一).
fn spell_groups(number: &str, digits: &CodeDigits) -> String {
    let groups: Vec<String> = number.split(['-', ' ']).map(|g| digits.spell(g)).collect();
    groups.join("，")
}

/// Whether the number starting at byte `start` continues a run of digit
/// groups (the 0201 of 6222 0201 2345): a separator with a digit before it.
fn inside_groups(text: &str, start: usize) -> bool {
    let mut back = text[..start].chars().rev();
    matches!(back.next(), Some(' ' | '-')) && back.next().is_some_and(|c| c.is_ascii_digit())
}
