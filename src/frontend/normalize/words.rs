//! Numbers as words: cardinals the Chinese way (两千, 一百零五), digit
//! strings (一三八), decimals and amounts of money.

use super::super::lexicon::Lexicon;

/// The digits 0–9 as characters, read one by one.
pub(super) const DIGITS: [char; 10] = ['零', '一', '二', '三', '四', '五', '六', '七', '八', '九'];

/// "3月" → "三月", "08日" → "八日" (number + the unit kept).
pub(super) fn dates_words(text: &str) -> String {
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    let rest: String = text.chars().filter(|c| !c.is_ascii_digit()).collect();
    match digits.parse::<u64>() {
        Ok(v) => format!("{}{rest}", cardinal(v)),
        Err(_) => text.to_owned(),
    }
}

/// How each digit is said when a number is read digit by digit as a code
/// (phone and service numbers, codes and IDs, rooms, plates): 零 to 九, or
/// what the per-book lexicon says for that digit (`"1" = { say = "幺" }`,
/// the way many narrators say 1 in phone numbers). Years, decades and
/// decimals always use 零 to 九.
pub(super) struct CodeDigits<'l> {
    said: [Option<&'l str>; 10],
}

impl<'l> CodeDigits<'l> {
    /// The digits as `lexicon` says them.
    pub(super) fn new(lexicon: &'l Lexicon) -> CodeDigits<'l> {
        const KEYS: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
        let mut said = [None; 10];
        if !lexicon.is_empty() {
            for (slot, key) in said.iter_mut().zip(KEYS) {
                *slot = lexicon
                    .lookup_simplified(key)
                    .and_then(|e| e.say.as_deref());
            }
        }
        CodeDigits { said }
    }

    /// Writes digit `d` (0–9) to `out`.
    pub(super) fn push(&self, out: &mut String, d: usize) {
        match self.said[d] {
            Some(said) => out.push_str(said),
            None => out.push(DIGITS[d]),
        }
    }

    /// The digits of `digits` read one by one as a code; anything else is
    /// skipped.
    pub(super) fn spell(&self, digits: &str) -> String {
        let mut out = String::with_capacity(digits.len() * 3);
        for b in digits.bytes().filter(u8::is_ascii_digit) {
            self.push(&mut out, usize::from(b - b'0'));
        }
        out
    }
}

/// Digits read one by one ("010" → 零一零); anything else is skipped.
pub(super) fn digit_string(digits: &str) -> String {
    digits
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| DIGITS[usize::from(b - b'0')])
        .collect()
}

/// An integer string as words; codes (leading zero, very long) digit by digit.
pub(super) fn number_words(int: &str) -> String {
    if int.len() > 1 && int.starts_with('0') || int.len() > 12 {
        return digit_string(int);
    }
    int.parse().map_or_else(|_| digit_string(int), cardinal)
}

/// "12.5" → 十二点五.
pub(super) fn decimal_words(number: &str) -> String {
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
pub(super) fn money_words(number: &str) -> String {
    match number.split_once('.') {
        Some((int, frac)) if frac.trim_end_matches('0').is_empty() => number_words(int),
        Some((int, frac)) => decimal_words(&format!("{int}.{}", frac.trim_end_matches('0'))),
        None => number_words(number),
    }
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
}
