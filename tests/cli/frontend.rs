//! `tingshu normalize` and `tingshu pinyin` driven through the real binary.

use std::process::Output;

use crate::support::cli::{Tingshu, ok};
use crate::support::{paths, services};

fn tingshu(args: &[&str], stdin: &[u8]) -> Output {
    Tingshu::new(args).stdin(stdin).output()
}

fn stdout_lines(out: &Output) -> Vec<String> {
    ok(out).lines().map(str::to_owned).collect()
}

fn jsonl(text: &str, extra: &[&str]) -> Vec<Vec<Option<String>>> {
    let mut args = vec!["pinyin", "--jsonl"];
    args.extend_from_slice(extra);
    stdout_lines(&tingshu(&args, text.as_bytes()))
        .iter()
        .map(|l| serde_json::from_str(l).expect("a JSON array per line"))
        .collect()
}

#[test]
fn normalize_keeps_one_line_per_line() {
    let input = "他在1998年生于第3病区。\r\n\n价格¥12.5，涨了30%。\n3-5天后，2个人走了8.5km。\n";
    let lines = stdout_lines(&tingshu(&["normalize"], input.as_bytes()));
    assert_eq!(
        lines,
        [
            "他在一九九八年生于第三病区。",
            "",
            "价格十二点五元，涨了百分之三十。",
            "三到五天后，两个人走了八点五公里。",
        ]
    );
}

#[test]
fn normalize_keeps_words_and_turns_marks_into_pauses() {
    let lines = stdout_lines(&tingshu(
        &["normalize"],
        "嗯……哥儿几个——走吧！！！🎉\n".as_bytes(),
    ));
    assert_eq!(lines, ["嗯……哥儿几个——走吧！"]);
}

#[test]
fn jsonl_has_one_element_per_scalar_with_lexical_tones() {
    let rows = jsonl("女孩说：一定不对，OK？\n", &[]);
    let row = &rows[0];
    assert_eq!(row.len(), "女孩说：一定不对，OK？".chars().count());
    let got: Vec<&str> = row.iter().map(|r| r.as_deref().unwrap_or("-")).collect();
    assert_eq!(
        got,
        [
            "nv3", "hai2", "shuo1", "-", "yi1", "ding4", "bu4", "dui4", "-", "-", "-", "-"
        ]
    );
}

#[test]
fn polyphones_read_in_context() {
    let plain = stdout_lines(&tingshu(
        &["pinyin"],
        "我们去银行取钱\n他睡觉的时候长大了\n重新开始\n".as_bytes(),
    ));
    assert_eq!(
        plain,
        [
            "wo3 men5 qu4 yin2 hang2 qu3 qian2",
            "ta1 shui4 jiao4 de5 shi2 hou5 zhang3 da4 le5",
            "chong2 xin1 kai1 shi3",
        ]
    );
}

#[test]
fn traditional_text_reads_like_simplified() {
    let rows = jsonl("銀行行長重新開始\n银行行长重新开始\n", &[]);
    assert_eq!(rows[0], rows[1]);
}

#[test]
fn lexicon_overrides_reading_and_replaces_words() {
    let dir = tempfile::tempdir().unwrap();
    let lex = dir.path().join("book.toml");
    std::fs::write(
        &lex,
        "\"毛仲\" = \"mao2 zhong4\"\n\"靼子\" = { say = \"鞑子\" }\n",
    )
    .unwrap();
    let lex = lex.to_str().unwrap();
    let rows = jsonl("毛仲见了靼子\n", &["--lexicon", lex]);
    assert_eq!(rows[0][1].as_deref(), Some("zhong4"));
    assert_eq!(rows[0][4].as_deref(), Some("da2"));
    let lines = stdout_lines(&tingshu(
        &["normalize", "--lexicon", lex],
        "毛仲见了靼子\n".as_bytes(),
    ));
    assert_eq!(lines, ["毛仲见了鞑子"]);
}

#[test]
fn bad_lexicon_and_bad_input_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let lex = dir.path().join("bad.toml");
    std::fs::write(&lex, "\"毛仲\" = \"mao2\"\n").unwrap();
    let out = tingshu(&["pinyin", "--lexicon", lex.to_str().unwrap()], b"x\n");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml") && err.contains("毛仲"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");

    let out = tingshu(&["normalize"], b"ok\n\xff\xfe\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2"));
}

/// The NeMo text-normalization cases (shared data): at least 95% exact.
#[test]
fn nemo_normalization_cases() {
    let Some(dir) = services::shared("data/tn/nemo-zh") else {
        return;
    };
    let entries = std::fs::read_dir(&dir).unwrap();
    let (mut ok, mut total) = (0, 0);
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("test_cases_") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let cases: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.trim_end_matches('\r'))
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.split('~').collect())
            .collect();
        let input: String = cases.iter().map(|c| format!("{}\n", c[0])).collect();
        let got = stdout_lines(&tingshu(&["normalize"], input.as_bytes()));
        assert_eq!(got.len(), cases.len());
        for (case, got) in cases.iter().zip(&got) {
            total += 1;
            if case[1..].contains(&got.as_str()) {
                ok += 1;
            }
        }
    }
    assert!(total > 0);
    assert!(ok * 100 >= total * 95, "{ok}/{total} exact");
}

/// Our own web-novel lines (tests/fixtures/frontend/normalize-webnovel.txt,
/// `written~spoken`): phone, service and net numbers, plates, rooms, codes,
/// 80后, chapters, times and their ranges, scores, temperatures, money and
/// small change, rates (元/升), fractions, per mille, measures after
/// decimals, thousands, full-width digits, decades, Latin with digits — at
/// least 98% exact.
#[test]
fn webnovel_normalization_list() {
    let text = std::fs::read_to_string(paths::fixture("frontend/normalize-webnovel.txt")).unwrap();
    let cases: Vec<(&str, &str)> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_once('~').expect("written~spoken"))
        .collect();
    assert!(cases.len() >= 259, "{} lines", cases.len());
    let input: String = cases.iter().map(|(w, _)| format!("{w}\n")).collect();
    let got = stdout_lines(&tingshu(&["normalize"], input.as_bytes()));
    assert_eq!(got.len(), cases.len());
    let wrong: Vec<String> = cases
        .iter()
        .zip(&got)
        .filter(|((_, want), got)| want != got)
        .map(|((written, want), got)| format!("{written} → {got} (want {want})"))
        .collect();
    assert!(
        wrong.len() * 50 <= cases.len(),
        "{} of {} differ:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}

/// Our own everyday polyphone sentences, Simplified and Traditional
/// (tests/fixtures/frontend/polyphones.tsv: the target wrapped in ▁…▁, a
/// tab, the golden reading) — at least 99% read right.
#[test]
fn everyday_polyphone_list() {
    let text = std::fs::read_to_string(paths::fixture("frontend/polyphones.tsv")).unwrap();
    let cases: Vec<(String, usize, &str)> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (marked, gold) = l.split_once('\t').expect("sentence<TAB>reading");
            let index = marked.split('▁').next().unwrap().chars().count();
            (marked.replace('▁', ""), index, gold)
        })
        .collect();
    assert!(cases.len() >= 823, "{} sentences", cases.len());
    let input: String = cases.iter().map(|(s, _, _)| format!("{s}\n")).collect();
    let rows = jsonl(&input, &[]);
    assert_eq!(rows.len(), cases.len());
    let wrong: Vec<String> = cases
        .iter()
        .zip(&rows)
        .filter(|((_, i, gold), row)| row[*i].as_deref() != Some(*gold))
        .map(|((s, i, gold), row)| format!("{s} [{i}]: {:?} (want {gold})", row[*i]))
        .collect();
    assert!(
        wrong.len() * 100 <= cases.len(),
        "{} of {} wrong:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}

/// `tingshu pinyin` shows Latin tokens where they stand, apart from the
/// syllables around them.
#[test]
fn pinyin_shows_latin_tokens() {
    let plain = stdout_lines(&tingshu(
        &["pinyin"],
        "一条QQ消息\n打开App Store\niPhone坏了\n".as_bytes(),
    ));
    assert_eq!(
        plain,
        [
            "yi1 tiao2 QQ xiao1 xi5",
            "da3 kai1 App Store",
            "iPhone huai4 le5"
        ]
    );
}
