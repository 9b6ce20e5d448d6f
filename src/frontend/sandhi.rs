//! Tone sandhi for synthesis: the tones a speaker actually says, applied
//! only to the pinyin sent to the voice (`tingshu pinyin` keeps lexical
//! tones).
//!
//! - 3-3: in a run of third tones, all but the last become second tone
//!   (with word boundaries: inside each word, then across a boundary only
//!   when one side is a one-syllable word, as in 很好, 我想);
//! - 一 (yi1): yi2 before a fourth tone, yi4 before other tones (also
//!   before 百 千 万 亿 at the start of a number: 一百 yi4 bai3, 一万 yi2
//!   wan4), neutral between two identical syllables (看一看), kept as a
//!   number after a digit or ordinal (第一, 十一, 初一, 一百零一), before a
//!   digit (一一零, 一九九八), in dates (一月一日, 一号), at the end of a
//!   word (统一, 唯一) and at the end of a phrase;
//! - 不 (bu4): bu2 before a fourth tone, neutral between two identical
//!   syllables (好不好).

use super::pinyin::Reading;

fn tone(s: &str) -> Option<u8> {
    s.bytes()
        .last()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
}

fn retone(s: &str, t: u8) -> String {
    format!("{}{}", &s[..s.len() - 1], t)
}

/// Applies tone sandhi in place; `chars` and `readings` run in parallel.
/// Without word boundaries every run of third tones is one unit.
pub fn apply(chars: &[char], readings: &mut [Option<Reading>]) {
    yi_bu(chars, readings, None);
    let n = readings.len().min(chars.len());
    third_tone_runs(&mut readings[..n]);
}

/// Applies tone sandhi in place, using the word each character belongs to
/// (`words[i]`, as from [`Analysis::word_ids`](super::pinyin::Analysis::word_ids)).
pub fn apply_in_words(chars: &[char], readings: &mut [Option<Reading>], words: &[Option<usize>]) {
    yi_bu(chars, readings, Some(words));
    let n = readings.len().min(chars.len()).min(words.len());
    // Inside each word.
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && words[end].is_some() && words[end] == words[start] {
            end += 1;
        }
        if words[start].is_some() {
            third_tone_runs(&mut readings[start..end]);
        }
        start = end;
    }
    // Across word boundaries, right to left, when one side is monosyllabic.
    let mut lengths: Vec<usize> = Vec::new();
    for w in words[..n].iter().flatten() {
        if *w >= lengths.len() {
            lengths.resize(w + 1, 0);
        }
        lengths[*w] += 1;
    }
    let len_of = |i: usize| words[i].map_or(0, |w| lengths[w]);
    for i in (0..n.saturating_sub(1)).rev() {
        let boundary = words[i].is_some() && words[i + 1].is_some() && words[i] != words[i + 1];
        if boundary
            && readings[i].as_deref().and_then(tone) == Some(3)
            && readings[i + 1].as_deref().and_then(tone) == Some(3)
            && (len_of(i) == 1 || len_of(i + 1) == 1)
            && let Some(r) = readings[i].as_mut()
        {
            *r = retone(r, 2).into();
        }
    }
}

/// Digits and ordinal prefixes: an 一 after one of these is a number (十一,
/// 第一, 一百零一, 初一, 周一, 星期一), and so is one before a digit (一一零,
/// 一九九八).
const NUMBER_BEFORE: &str = "零〇一二三四五六七八九十百千万萬亿億两兩第初周週期拜";
const DIGIT_AFTER: &str = "零〇一二三四五六七八九十两兩";
/// Words that make 一 a date or a number read as such: 一月, 一号 and 一楼
/// keep yi1 (and 一点 as a time: 一点零五分, 一点半, 一点钟).
const NUMBER_AFTER: &str = "月号號楼樓";

fn yi_bu(chars: &[char], readings: &mut [Option<Reading>], words: Option<&[Option<usize>]>) {
    let n = readings.len().min(chars.len());
    for i in 0..n {
        let (c, next) = (chars[i], readings.get(i + 1).and_then(|r| r.as_deref()));
        let prev_char = i.checked_sub(1).map(|p| chars[p]);
        let next_char = chars.get(i + 1).copied();
        let reduplicated = prev_char.is_some() && prev_char == next_char;
        let new = match (c, readings[i].as_deref()) {
            ('一', Some("yi1")) => {
                // 一日 is a date after 月 (一月一日), a day elsewhere (一日三餐).
                let date_day = next_char == Some('日') && prev_char == Some('月');
                let clock = next_char == Some('点')
                    && chars
                        .get(i + 2)
                        .is_some_and(|c| "零〇一二三四五六七八九十两半钟鐘整".contains(*c));
                let numeric = prev_char.is_some_and(|p| NUMBER_BEFORE.contains(p))
                    || next_char
                        .is_some_and(|n| DIGIT_AFTER.contains(n) || NUMBER_AFTER.contains(n))
                    || date_day
                    || clock;
                // The last syllable of a longer word (统一, 唯一, 专一) keeps
                // yi1 unless a measure word follows (同一个).
                // 统一, 唯一, 专一… inside a longer phrase (统一思想) too.
                let after_word_head = prev_char.is_some_and(|p| "统唯专划归".contains(p))
                    && !next_char.is_some_and(|n| MEASURE_AFTER_YI.contains(n));
                let word_final = after_word_head
                    || words.is_some_and(|w| {
                        let id = w.get(i).copied().flatten();
                        id.is_some()
                            && i > 0
                            && w.get(i - 1).copied().flatten() == id
                            && w.get(i + 1).copied().flatten() != id
                            && !next_char.is_some_and(|n| MEASURE_AFTER_YI.contains(n))
                    });
                match next.and_then(tone) {
                    _ if numeric || word_final => None,
                    Some(_) if reduplicated => Some("yi5"),
                    Some(4) => Some("yi2"),
                    Some(1..=3) => Some("yi4"),
                    Some(5) => Some("yi2"),
                    _ => None,
                }
            }
            ('不', Some("bu4")) => match next.and_then(tone) {
                Some(_) if reduplicated => Some("bu5"),
                Some(4) => Some("bu2"),
                _ => None,
            },
            _ => None,
        };
        if let Some(new) = new {
            readings[i] = Some(Reading::Borrowed(new));
        }
    }
}

/// Measure words after a word-final 一 that make it the numeral (同一个).
const MEASURE_AFTER_YI: &str = "个個种種样樣次天年件位条條张張句回";

/// 3-3: all but the last of each run of third tones become second tone.
fn third_tone_runs(readings: &mut [Option<Reading>]) {
    let n = readings.len();
    let mut i = 0;
    while i < n {
        if readings[i].as_deref().and_then(tone) != Some(3) {
            i += 1;
            continue;
        }
        let start = i;
        while i < n && readings[i].as_deref().and_then(tone) == Some(3) {
            i += 1;
        }
        for r in readings[start..i - 1].iter_mut().flatten() {
            *r = retone(r, 2).into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, readings: &[&str]) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        let mut r: Vec<Option<Reading>> = readings
            .iter()
            .map(|s| (!s.is_empty()).then(|| (*s).to_owned().into()))
            .collect();
        apply(&chars, &mut r);
        r.into_iter()
            .map(|s| s.unwrap_or_default().into_owned())
            .collect()
    }

    #[test]
    fn third_tone_runs() {
        assert_eq!(run("你好", &["ni3", "hao3"]), ["ni2", "hao3"]);
        assert_eq!(
            run("我很好", &["wo3", "hen3", "hao3"]),
            ["wo2", "hen2", "hao3"]
        );
        assert_eq!(run("好，我", &["hao3", "", "wo3"]), ["hao3", "", "wo3"]);
    }

    fn run_words(text: &str, readings: &[&str], words: &[usize]) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        let mut r: Vec<Option<Reading>> = readings
            .iter()
            .map(|s| Some((*s).to_owned().into()))
            .collect();
        let words: Vec<Option<usize>> = words.iter().map(|w| Some(*w)).collect();
        apply_in_words(&chars, &mut r, &words);
        r.into_iter().flatten().map(Reading::into_owned).collect()
    }

    #[test]
    fn word_final_yi_keeps_its_tone() {
        // 统一 | 思想: yi1; 同一 | 个: yi2.
        assert_eq!(
            run_words(
                "统一思想",
                &["tong3", "yi1", "si1", "xiang3"],
                &[0, 0, 1, 1]
            ),
            ["tong3", "yi1", "si1", "xiang3"]
        );
        assert_eq!(
            run_words("同一个", &["tong2", "yi1", "ge4"], &[0, 0, 1]),
            ["tong2", "yi2", "ge4"]
        );
    }

    #[test]
    fn third_tones_by_word() {
        // 我 | 很 | 好: right to left, 很 changes, then 我 sees a second tone.
        assert_eq!(
            run_words("我很好", &["wo3", "hen3", "hao3"], &[0, 1, 2]),
            ["wo3", "hen2", "hao3"]
        );
        // One word: all but the last.
        assert_eq!(
            run_words("展览馆", &["zhan3", "lan3", "guan3"], &[0, 0, 0]),
            ["zhan2", "lan2", "guan3"]
        );
        // 好 | 雨伞: inside the word first, so 好 keeps its third tone.
        assert_eq!(
            run_words("好雨伞", &["hao3", "yu3", "san3"], &[0, 1, 1]),
            ["hao3", "yu2", "san3"]
        );
        // Two two-syllable words keep the boundary.
        assert_eq!(
            run_words(
                "美好理想",
                &["mei3", "hao3", "li3", "xiang3"],
                &[0, 0, 1, 1]
            ),
            ["mei2", "hao3", "li2", "xiang3"]
        );
    }

    #[test]
    fn yi_and_bu() {
        assert_eq!(run("一定", &["yi1", "ding4"]), ["yi2", "ding4"]);
        assert_eq!(run("一天", &["yi1", "tian1"]), ["yi4", "tian1"]);
        assert_eq!(run("第一", &["di4", "yi1"]), ["di4", "yi1"]);
        assert_eq!(
            run("十一月", &["shi2", "yi1", "yue4"]),
            ["shi2", "yi1", "yue4"]
        );
        assert_eq!(
            run("看一看", &["kan4", "yi1", "kan4"]),
            ["kan4", "yi5", "kan4"]
        );
        assert_eq!(run("一百", &["yi1", "bai3"]), ["yi4", "bai3"]);
        assert_eq!(run("一千", &["yi1", "qian1"]), ["yi4", "qian1"]);
        assert_eq!(run("一万", &["yi1", "wan4"]), ["yi2", "wan4"]);
        assert_eq!(run("一亿", &["yi1", "yi4"]), ["yi2", "yi4"]);
        assert_eq!(
            run("一百一十", &["yi1", "bai3", "yi1", "shi2"]),
            ["yi4", "bai3", "yi1", "shi2"]
        );
        assert_eq!(
            run("一月一日", &["yi1", "yue4", "yi1", "ri4"]),
            ["yi1", "yue4", "yi1", "ri4"]
        );
        assert_eq!(run("一日", &["yi1", "ri4"]), ["yi2", "ri4"]);
        assert_eq!(
            run("一一零", &["yi1", "yi1", "ling2"]),
            ["yi1", "yi1", "ling2"]
        );
        assert_eq!(run("周一", &["zhou1", "yi1"]), ["zhou1", "yi1"]);
        assert_eq!(run("不对", &["bu4", "dui4"]), ["bu2", "dui4"]);
        assert_eq!(run("不好", &["bu4", "hao3"]), ["bu4", "hao3"]);
        assert_eq!(
            run("好不好", &["hao3", "bu4", "hao3"]),
            ["hao3", "bu5", "hao3"]
        );
    }
}
