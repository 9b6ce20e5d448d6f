//! Dates and times: eras (公元前202年), written dates (2024-08-08),
//! version numbers, clock times (8:30, 2:05 → 两点零五分), ratios and
//! scores (3:2 → 三比二), years (1627年 digit by digit, 50年 a count) and
//! days of the month.

use std::sync::LazyLock;

use regex::Regex;

use super::words::{cardinal, dates_words, digit_string, number_words};
use super::{around, is_digit, re, rewrite};

static ERA: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(\d{1,4})(年(?:\d{1,2}月)?(?:\d{1,2}[日号])?)?\s?(a\.d\.|A\.D\.|ad|AD|b\.c\.|B\.C\.|bc|BC)",
    )
});

static DATE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(\d{4}|\d{2})([-/.·])(\d{1,2})([-/.·])(\d{1,2})"));
static VERSION_NUMBER: LazyLock<Regex> = LazyLock::new(|| re(r"\d+(?:\.\d+){2,}"));

static TIME: LazyLock<Regex> = LazyLock::new(|| re(r"(\d{1,2})[:：](\d{2})(?:[:：](\d{2}))?"));

static RATIO: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+)[:：](\d+)"));

static YEAR: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+)年(\d{1,2}月)?"));

/// Ranges of years before a word that makes them years (1998-2001年,
/// 2023—2024赛季, 2008～2012年间): both read digit by digit.
static YEAR_RANGE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(\d{4})\s?[-—–~～]\s?(\d{4})(年|赛季|學年|学年|财年|財年|年度|賽季)"));

/// A dash between two days or two months of one date: 10月1日—7日.
static DAY_RANGE: LazyLock<Regex> =
    LazyLock::new(|| re(r"([日号號月])\s?[-—–~～]\s?(\d{1,2}[日号號月])"));

/// A dash between two clock times: 9:00-18:00 → 九点到十八点.
static TIME_RANGE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(\d{1,2}[:：]\d{2}(?:[:：]\d{2})?)\s?[-—–~～]\s?(\d{1,2}[:：]\d{2})"));

static MONTH_DAY: LazyLock<Regex> = LazyLock::new(|| re(r"(\d{1,2})([月日号])"));

/// Minutes and seconds in primes (a race, a song): 3'45" → 三分四十五秒,
/// 12′08″5 → 十二分零八秒五.
static DURATION: LazyLock<Regex> =
    LazyLock::new(|| re(r#"(\d{1,3})['′](\d{2})(?:["″]|'')(\d{1,2})?"#));

/// Rewrites eras, ranges of years and days, written dates, version
/// numbers, clock times and ratios.
pub(super) fn clock_and_calendar(text: &str) -> String {
    let text = rewrite(text, &DURATION, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        let seconds: u64 = c[2].parse().ok()?;
        if is_digit(before) || is_digit(after) || seconds > 59 {
            return None;
        }
        let mut out = format!("{}分", cardinal(c[1].parse().ok()?));
        if seconds < 10 {
            out.push('零');
        }
        out.push_str(&format!("{}秒", cardinal(seconds)));
        if let Some(tenths) = c.get(3) {
            out.push_str(&digit_string(tenths.as_str()));
        }
        Some(out)
    });
    let text = rewrite(&text, &YEAR_RANGE, |t, c| {
        let m = c.get(0)?;
        let (before, _) = around(t, m.start(), m.end());
        let (from, to): (u32, u32) = (c[1].parse().ok()?, c[2].parse().ok()?);
        if is_digit(before) || before == Some('.') || to < from || to - from > 200 {
            return None;
        }
        Some(format!(
            "{}到{}{}",
            digit_string(&c[1]),
            digit_string(&c[2]),
            &c[3]
        ))
    });
    let text = DAY_RANGE.replace_all(&text, "${1}到$2");
    let text = TIME_RANGE.replace_all(&text, "${1}到$2");
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
        // An IPv4 address (192.168.1.1) says its digits; a version number
        // (V2.5.1) its numbers.
        let fields: Vec<&str> = m.as_str().split('.').collect();
        let address = fields.len() == 4
            && fields
                .iter()
                .all(|f| f.parse::<u16>().is_ok_and(|v| v <= 255));
        let say = if address { digit_string } else { number_words };
        let parts: Vec<String> = fields.into_iter().map(say).collect();
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
    rewrite(&text, &RATIO, |t, c| {
        let m = c.get(0)?;
        let (before, after) = around(t, m.start(), m.end());
        if is_digit(before) || is_digit(after) {
            return None;
        }
        Some(format!("{}比{}", number_words(&c[1]), number_words(&c[2])))
    })
}

/// Rewrites years and days of the month (after amounts and units).
pub(super) fn years_and_days(text: &str) -> String {
    let text = rewrite(text, &YEAR, |t, c| {
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
    rewrite(&text, &MONTH_DAY, |t, c| {
        let m = c.get(0)?;
        let (before, _) = around(t, m.start(), m.end());
        if is_digit(before) || before == Some('.') || before == Some('第') {
            return None;
        }
        Some(dates_words(&c[0]))
    })
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
