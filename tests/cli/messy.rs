//! The reading script on messy real-world books: goldens of one fixture per
//! case (headings, adverts, notes, URLs, quoted terms, adverb speakers,
//! unbalanced quotes), 西游记 with its line breaks stripped, damaged bytes,
//! speakers without a cast file (WP2021 dev) and `--suggest-cast` on 西游记.
//!
//! Goldens live in `tests/golden/messy/`; rewrite them after a reviewed
//! change with `TINGSHU_UPDATE_GOLDEN=1 cargo test --release --test cli messy::`.
//! Tests that need `../shared` skip with a message when it is absent, and
//! fail when it is there without the file and `TINGSHU_REQUIRE_SERVICES=1`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::support::cli::{ok, tingshu};
use crate::support::paths::{self, path_str};
use crate::support::script::{chapters, chinese_number, json_lines};
use crate::support::services::shared;

fn fixture(name: &str) -> PathBuf {
    paths::fixture("split").join(name)
}

fn golden(name: &str, actual: &str) {
    paths::golden(&format!("messy/{name}"), actual);
}

fn is_han(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

fn han(s: &str) -> usize {
    s.chars().filter(|c| is_han(*c)).count()
}

#[test]
fn fixtures_match_goldens() {
    for name in [
        "headings",
        "adverts",
        "notes",
        "quoted-terms",
        "adverb-speakers",
        "unbalanced-quotes",
    ] {
        let book = fixture(&format!("{name}.txt"));
        let text = ok(&tingshu(["split", path_str(&book)]));
        golden(&format!("{name}.txt"), &text);
    }
    let notes = fixture("notes.txt");
    let kept = ok(&tingshu(["split", path_str(&notes), "--keep-notes"]));
    golden("notes.keep-notes.txt", &kept);
}

#[test]
fn fixture_cases_read_as_a_listener_expects() {
    let dialogue_of = |name: &str| -> Vec<(String, Option<String>)> {
        let out = ok(&tingshu([
            "split",
            path_str(&fixture(name)),
            "--format",
            "jsonl",
        ]));
        json_lines(&out)
            .into_iter()
            .filter(|v| v["kind"] == "dialogue")
            .map(|v| {
                (
                    v["text"].as_str().unwrap().to_owned(),
                    v["speaker"].as_str().map(str::to_owned),
                )
            })
            .collect()
    };
    // Short quoted terms are narration; speech is speech.
    let speech = dialogue_of("quoted-terms.txt");
    let texts: Vec<&str> = speech.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        texts,
        ["“明天一早出发。”", "“走吧。”", "“好”", "“好！”"],
        "{speech:?}"
    );
    // Adverbs are not names; 小二 is not 阮小二.
    let speech = dialogue_of("adverb-speakers.txt");
    let speakers: Vec<Option<&str>> = speech.iter().map(|(_, s)| s.as_deref()).collect();
    assert_eq!(
        speakers,
        [
            Some("林凡"),
            Some("赵虎"),
            Some("林凡"),
            Some("赵虎"),
            Some("林凡"),
            Some("赵虎"),
            Some("小二"),
            Some("阮小二"),
            Some("小二"),
            Some("阮小二"),
            Some("林凡"),
        ],
        "{speech:?}"
    );
    // Every quote ends where it should, whatever closes it.
    let speech = dialogue_of("unbalanced-quotes.txt");
    let texts: Vec<&str> = speech.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        texts,
        [
            "“今晚不走了。\"",
            "“那我去烧水。\"",
            "「走吧。",
            "「快點。」",
            "『小心！」",
            "“这件事我不想再提了",
            "“第一段话还没有说完，",
            "“接着说下一段。”",
            "“你们听说过‘空城计’吗？”",
        ],
        "{speech:?}"
    );
}

#[test]
fn chapter_numbers_agree_between_split_and_build() {
    let book = fixture("headings.txt");
    let out = ok(&tingshu(["split", path_str(&book), "--format", "jsonl"]));
    let listed = chapters(&json_lines(&out));
    let numbers: Vec<u64> = listed.iter().map(|c| c.0).collect();
    assert_eq!(numbers, (1..=listed.len() as u64).collect::<Vec<_>>());
    let text = ok(&tingshu(["split", path_str(&book)]));
    for (n, title) in &listed {
        assert!(text.contains(&format!("# {n} {title}\n")), "{n} {title}");
    }
    // Empty and punctuation-only chapters and the author's note are listed as skipped.
    for skipped in [
        "# skipped (empty): 第一千零二十六章 空白",
        "# skipped (empty): 第一千零二十八章",
        "# skipped (author's note): 上架感言",
    ] {
        assert!(text.contains(skipped), "{skipped}\n{text}");
    }
    // A bare 序 inside a book with numbered chapters is text.
    assert!(!listed.iter().any(|(_, t)| t == "序"), "{listed:?}");
}

/// 西游记 with every line break removed, written to `dir`.
fn one_line_journey(dir: &Path) -> Option<(PathBuf, String)> {
    let book = shared("data/novels/西游记.txt")?;
    let text = std::fs::read_to_string(book).unwrap();
    let one_line: String = text.chars().filter(|c| !matches!(c, '\n' | '\r')).collect();
    let path = dir.join("西游记.txt");
    std::fs::write(&path, &one_line).unwrap();
    Some((path, one_line))
}

/// Share of the Han characters of a script that are in dialogue segments
/// longer than 600 characters.
fn runaway_share(lines: &[serde_json::Value]) -> f64 {
    let mut total = 0;
    let mut runaway = 0;
    for v in lines {
        let text = v["text"].as_str().unwrap();
        let n = han(text);
        total += n;
        if v["kind"] == "dialogue" && text.chars().count() > 600 {
            runaway += n;
        }
    }
    runaway as f64 / total.max(1) as f64
}

#[test]
fn journey_without_line_breaks_has_its_hundred_chapters() {
    let dir = tempfile::tempdir().unwrap();
    let Some((path, one_line)) = one_line_journey(dir.path()) else {
        return;
    };
    let out = ok(&tingshu(["split", path_str(&path), "--format", "jsonl"]));
    let lines = json_lines(&out);
    let listed = chapters(&lines);
    assert_eq!(listed.len(), 100, "{listed:?}");
    for (i, (number, title)) in listed.iter().enumerate() {
        assert_eq!(*number as usize, i + 1);
        let heading = format!("第{}回", chinese_number(i + 1));
        assert!(title.starts_with(&heading), "chapter {number}: {title}");
        assert!(title.chars().count() <= 40, "chapter {number}: {title}");
    }
    let share = runaway_share(&lines);
    println!(
        "one line: 100 chapters, runaway dialogue share {:.3}%",
        share * 100.0
    );

    // Every 10th closing quote written as an ASCII ".
    let mut n = 0;
    let broken: String = one_line
        .chars()
        .map(|c| {
            if c == '”' {
                n += 1;
                if n % 10 == 0 {
                    return '"';
                }
            }
            c
        })
        .collect();
    std::fs::write(&path, &broken).unwrap();
    let out = ok(&tingshu(["split", path_str(&path), "--format", "jsonl"]));
    let lines = json_lines(&out);
    assert_eq!(chapters(&lines).len(), 100);
    let share = runaway_share(&lines);
    println!(
        "one line, every 10th ” as \": runaway dialogue share {:.3}%",
        share * 100.0
    );
    assert!(
        share <= 0.01,
        "{:.3}% of Han characters in runaway dialogue",
        share * 100.0
    );
}

/// A book of `chapters` short chapters, all text written here.
fn small_book(chapters: usize) -> String {
    let mut text = String::new();
    for n in 1..=chapters {
        text.push_str(&format!("第{n}章 第{n}夜\n"));
        text.push_str("夜色渐深，山路上只剩下他一个人。他停下脚步，听了听远处的水声。\n");
        text.push_str("“有人吗？”他喊了一声，没有人回答。\n");
        text.push_str("他叹了口气，把灯笼举高了一些，继续往前走。\n");
    }
    text
}

/// Runs `split --format jsonl` on `bytes`: (chapters, Han characters, stderr).
fn split_bytes(dir: &Path, name: &str, bytes: &[u8]) -> (usize, usize, String) {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let out = tingshu(["split", path_str(&path), "--format", "jsonl"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let stdout = ok(&out);
    let lines = json_lines(&stdout);
    let hans = lines.iter().map(|v| han(v["text"].as_str().unwrap())).sum();
    (chapters(&lines).len(), hans, stderr)
}

fn check_one_byte_deleted(dir: &Path, label: &str, bytes: &[u8], mark: &[u8], warned: bool) {
    let (chapters, hans, stderr) = split_bytes(dir, &format!("{label}-clean.txt"), bytes);
    assert!(stderr.trim().is_empty(), "{label}: {stderr}");
    // Delete the second byte of a body character (`mark`, encoded) past the middle.
    let half = bytes.len() / 2;
    let at = half
        + bytes[half..]
            .windows(mark.len())
            .position(|w| w == mark)
            .expect("the mark occurs in the second half");
    let mut damaged = bytes.to_vec();
    damaged.remove(at + 1);
    let (got_chapters, got_hans, stderr) =
        split_bytes(dir, &format!("{label}-damaged.txt"), &damaged);
    println!(
        "{label}: byte {} deleted: {got_chapters}/{chapters} chapters, {} Han characters lost; {}",
        at + 1,
        hans as i64 - got_hans as i64,
        stderr.trim()
    );
    assert_eq!(got_chapters, chapters, "{label}");
    assert!(
        got_hans <= hans && hans - got_hans <= 4,
        "{label}: {hans} → {got_hans}"
    );
    let warnings: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    if !warned {
        // Big5 often resynchronises by itself (a trail byte in the ASCII
        // range): one wrong character, no invalid sequence to report.
        assert!(warnings.len() <= 1, "{label}: {stderr}");
        return;
    }
    assert_eq!(warnings.len(), 1, "{label}: {stderr}");
    assert!(warnings[0].contains("offset"), "{label}: {stderr}");
}

#[test]
fn one_deleted_byte_loses_a_character_not_the_book() {
    let dir = tempfile::tempdir().unwrap();
    let text = small_book(12);
    let check = |label: &str, encoding: &'static encoding_rs::Encoding, text: &str| {
        let (bytes, _, _) = encoding.encode(text);
        let (mark, _, _) = encoding.encode("他");
        let warned = encoding != encoding_rs::BIG5;
        check_one_byte_deleted(dir.path(), label, &bytes, &mark, warned);
    };
    check("small-utf8", encoding_rs::UTF_8, &text);
    check("small-gbk", encoding_rs::GBK, &text);
    check("small-big5", encoding_rs::BIG5, &text);
    if let Some(book) = shared("data/novels/西游记.txt") {
        let text = std::fs::read_to_string(book).unwrap();
        check("journey-utf8", encoding_rs::UTF_8, &text);
        check("journey-gbk", encoding_rs::GBK, &text);
    }
}

#[test]
fn damaged_book_builds_with_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let text = small_book(2);
    let (gbk, _, _) = encoding_rs::GBK.encode(&text);
    let mut gbk = gbk.into_owned();
    let mut at = gbk.len() / 2;
    while gbk[at] < 0x80 {
        at += 1;
    }
    gbk.remove(at);
    let book = dir.path().join("坏书.txt");
    std::fs::write(&book, &gbk).unwrap();
    let voices = paths::repo().join("voices/espeak.toml");
    let out_dir = dir.path().join("out");
    let out = tingshu([
        "build",
        path_str(&book),
        "--out",
        path_str(&out_dir),
        "--voices",
        path_str(&voices),
        "--chapters",
        "1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("offset"), "{stderr}");
    assert!(out_dir.join("坏书").join("manifest.json").is_file());
}

#[test]
fn bad_input_errors_name_the_encoding_and_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    // Mostly not text: a control byte every few bytes.
    let mut bytes = Vec::new();
    for _ in 0..200 {
        bytes.extend_from_slice("他来了。".as_bytes());
        bytes.push(0);
    }
    let path = dir.path().join("binary.txt");
    std::fs::write(&path, &bytes).unwrap();
    let out = tingshu(["split", path_str(&path)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("binary.txt") && err.contains("offset 12"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // A stray NUL in a book is left out, with a warning.
    let (c, _, stderr) = split_bytes(
        dir.path(),
        "nul.txt",
        "第一章 夜\n他来了。\0她走了。\n".as_bytes(),
    );
    assert_eq!(c, 1);
    assert!(stderr.contains("offset 26"), "{stderr}");
}

// --- Speakers without a cast file ---------------------------------------

struct Instance {
    context: Vec<String>,
    speaker: String,
}

/// WP2021 instances: 21 context lines, the quote on line 11, then the speaker.
fn wp2021(path: &Path) -> Vec<Instance> {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].starts_with("Instance index:") {
            i += 1;
            continue;
        }
        let context = lines[i + 1..i + 22]
            .iter()
            .map(|l| {
                let l = l.trim();
                if l.is_empty() {
                    "……".to_owned()
                } else {
                    l.to_owned()
                }
            })
            .collect();
        let speaker = lines[i + 22].split_once(':').unwrap().1.trim().to_owned();
        out.push(Instance { context, speaker });
        i += 25;
    }
    out
}

/// Name or alias → canonical name, from the WP2021 name list.
fn name_map(path: &Path) -> HashMap<String, String> {
    let mut map = HashMap::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.len() < 2 {
            continue;
        }
        for alias in &parts[1..] {
            map.entry((*alias).to_owned())
                .or_insert_with(|| parts[1].to_owned());
        }
    }
    map
}

#[test]
fn wp2021_dev_speakers_without_a_cast() {
    let (Some(dev), Some(names)) = (
        shared("data/speaker/wp2021-dev.txt"),
        shared("data/speaker/name_list.txt"),
    ) else {
        return;
    };
    let instances = wp2021(&dev);
    let names = name_map(&names);
    let dir = tempfile::tempdir().unwrap();
    let mut book = String::new();
    for (n, inst) in instances.iter().enumerate() {
        book.push_str(&format!("第{}章\n{}\n", n + 1, inst.context.join("\n")));
    }
    let path = dir.path().join("wp2021-dev.txt");
    std::fs::write(&path, &book).unwrap();
    let out = ok(&tingshu(["split", path_str(&path), "--format", "jsonl"]));
    let mut predicted: HashMap<usize, Option<String>> = HashMap::new();
    for v in json_lines(&out) {
        let title = v["title"].as_str().unwrap();
        let Some(n) = title
            .strip_prefix('第')
            .and_then(|t| t.strip_suffix('章'))
            .and_then(|t| t.parse::<usize>().ok())
        else {
            continue;
        };
        if v["paragraph"] == 11 && v["kind"] == "dialogue" {
            predicted.entry(n).or_insert_with(|| {
                v["speaker"]
                    .as_str()
                    .map(|s| names.get(s).cloned().unwrap_or_else(|| s.to_owned()))
            });
        }
    }
    let right = instances
        .iter()
        .enumerate()
        .filter(|(n, inst)| {
            predicted.get(&(n + 1)).cloned().flatten().as_deref() == Some(&inst.speaker)
        })
        .count();
    let accuracy = right as f64 / instances.len() as f64;
    println!(
        "WP2021 dev without --cast: {right}/{} = {:.1}% attributed right",
        instances.len(),
        accuracy * 100.0
    );
    assert!(accuracy >= 0.75, "{:.1}%", accuracy * 100.0);
}

/// 西游记's speakers as a reader knows them: name → female?
const JOURNEY_CAST: &[(&str, bool)] = &[
    ("孙行者", false),
    ("行者", false),
    ("孙悟空", false),
    ("悟空", false),
    ("孙大圣", false),
    ("大圣", false),
    ("猴王", false),
    ("美猴王", false),
    ("猪八戒", false),
    ("八戒", false),
    ("呆子", false),
    ("沙僧", false),
    ("沙和尚", false),
    ("三藏", false),
    ("唐僧", false),
    ("长老", false),
    ("玄奘", false),
    ("唐三藏", false),
    ("师父", false),
    ("菩萨", true),
    ("观音", true),
    ("观音菩萨", true),
    ("国王", false),
    ("老者", false),
    ("小妖", false),
    ("老魔", false),
    ("二魔", false),
    ("三魔", false),
    ("妖王", false),
    ("老妖", false),
    ("妖精", false),
    ("老怪", false),
    ("怪物", false),
    ("魔王", false),
    ("龙王", false),
    ("祖师", false),
    ("天王", false),
    ("玉帝", false),
    ("娘娘", true),
    ("罗刹", true),
    ("罗刹女", true),
    ("妇人", true),
    ("公主", true),
    ("女子", true),
    ("女王", true),
    ("牛王", false),
    ("唐王", false),
    ("太宗", false),
    ("金星", false),
    ("老君", false),
    ("樵子", false),
    ("老僧", false),
    ("伯钦", false),
    ("李天王", false),
    ("僧官", false),
    ("如来", false),
    ("土地", false),
    ("大王", false),
    ("众神", false),
    ("太子", false),
    ("真君", false),
    ("道士", false),
    ("大仙", false),
    ("老儿", false),
    ("小的", false),
    ("众僧", false),
    ("众官", false),
];

#[test]
fn journey_suggested_cast_is_real_characters_with_their_gender() {
    let Some(book) = shared("data/novels/西游记.txt") else {
        return;
    };
    let out = ok(&tingshu(["split", path_str(&book), "--suggest-cast"]));
    let mut entries: Vec<(String, String)> = Vec::new();
    let mut name = None;
    for line in out.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_owned());
        } else if let (Some(g), Some(n)) = (line.strip_prefix("gender = "), &name) {
            entries.push((n.clone(), g.trim_matches('"').to_owned()));
            name = None;
        }
    }
    let truth: HashMap<&str, bool> = JOURNEY_CAST.iter().copied().collect();
    let top: Vec<&(String, String)> = entries.iter().take(30).collect();
    assert_eq!(top.len(), 30, "{out}");
    let unknown: Vec<&str> = top
        .iter()
        .filter(|(n, _)| !truth.contains_key(n.as_str()))
        .map(|(n, _)| n.as_str())
        .collect();
    let right = top
        .iter()
        .filter(|(n, g)| {
            truth
                .get(n.as_str())
                .is_some_and(|female| g == if *female { "female" } else { "male" })
        })
        .count();
    println!(
        "西游记 --suggest-cast top 30: {} real characters, {right}/30 right gender; not characters: {unknown:?}",
        30 - unknown.len()
    );
    assert!(unknown.is_empty(), "{unknown:?}");
    assert!(right * 10 >= 27, "{right}/30 right gender: {top:?}");
}
