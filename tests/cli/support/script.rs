//! Reading scripts as `tingshu split --format jsonl` prints them, and the
//! chapter numbers of their headings.

/// One JSON object per line.
pub fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

/// (chapter number, title) of each chapter, in order.
pub fn chapters(lines: &[serde_json::Value]) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = Vec::new();
    for v in lines {
        let key = (
            v["chapter"].as_u64().unwrap(),
            v["title"].as_str().unwrap().to_owned(),
        );
        if out.last() != Some(&key) {
            out.push(key);
        }
    }
    out
}

/// `n` (1–100) as a heading writes it: 一, 十二, 三十, 一百.
pub fn chinese_number(n: usize) -> String {
    const DIGITS: [&str; 10] = ["零", "一", "二", "三", "四", "五", "六", "七", "八", "九"];
    match n {
        1..=9 => DIGITS[n].to_owned(),
        10..=19 => format!("十{}", if n > 10 { DIGITS[n - 10] } else { "" }),
        20..=99 => format!(
            "{}十{}",
            DIGITS[n / 10],
            if !n.is_multiple_of(10) {
                DIGITS[n % 10]
            } else {
                ""
            }
        ),
        100 => "一百".to_owned(),
        _ => unreachable!("1..=100 only"),
    }
}

/// `text` in Traditional characters, converted with OpenCC's phrase tables
/// (s2t).
pub fn to_traditional(text: &str) -> String {
    ferrous_opencc::OpenCC::from_config(ferrous_opencc::config::BuiltinConfig::S2t)
        .expect("OpenCC s2t loads")
        .convert(text)
}
