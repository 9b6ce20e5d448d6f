//! `tingshu split`: golden reading scripts of the hard-case fixtures and of
//! the shared samples, the chapter count of 西游记, cast file errors.
//!
//! Goldens live in `tests/golden/`. After a reviewed change of behaviour,
//! rewrite them with `TINGSHU_UPDATE_GOLDEN=1 cargo test --release --test cli split::`
//! and review the diff.

use std::path::PathBuf;
use std::process::Output;

use crate::support::cli::{Tingshu, ok};
use crate::support::paths::{self, golden, path_str};
use crate::support::script::{chapters, chinese_number, json_lines, to_traditional};
use crate::support::services::shared;

fn fixture(name: &str) -> PathBuf {
    paths::fixture("split").join(name)
}

fn split(args: &[&str]) -> Output {
    Tingshu::new(["split"]).args(args).output()
}

#[test]
fn hard_cases_script_matches_golden() {
    let book = fixture("hard-cases.txt");
    let cast = fixture("hard-cases.cast.toml");
    let jsonl = ok(&split(&[
        path_str(&book),
        "--cast",
        path_str(&cast),
        "--format",
        "jsonl",
    ]));
    golden("hard-cases.jsonl", &jsonl);
    let text = ok(&split(&[path_str(&book), "--cast", path_str(&cast)]));
    golden("hard-cases.txt", &text);
}

#[test]
fn jsonl_schema_is_exact() {
    let book = fixture("hard-cases.txt");
    let out = ok(&split(&[path_str(&book), "--format", "jsonl"]));
    let lines = json_lines(&out);
    assert!(!lines.is_empty());
    for v in &lines {
        let obj = v.as_object().expect("object");
        // Two keys appear only when they say something: the gender of
        // someone unnamed, and a guess between genders.
        let keys: Vec<&str> = obj
            .keys()
            .map(String::as_str)
            .filter(|k| !matches!(*k, "unnamed" | "gender_unsure"))
            .collect();
        assert_eq!(
            keys,
            ["chapter", "kind", "paragraph", "speaker", "text", "title"],
            "{v}"
        );
        assert!(matches!(
            obj.get("unnamed").map(|u| u.as_str()),
            None | Some(Some("male" | "female"))
        ));
        assert!(obj.get("gender_unsure").is_none_or(|u| u == true));
        assert!(v["chapter"].is_u64() && v["paragraph"].as_u64().unwrap() >= 1);
        assert!(matches!(v["kind"].as_str(), Some("narration" | "dialogue")));
        assert!(v["speaker"].is_null() || v["speaker"].is_string());
        assert!(v["title"].is_string() && v["text"].is_string());
    }
    // Chapters count from 1 in reading order, front matter included (as
    // `build` and `preview --chapter` count them), and the field order is
    // the documented one.
    assert_eq!(lines[0]["chapter"], 1);
    assert!(out.starts_with("{\"chapter\":1,\"title\":\"hard-cases\",\"paragraph\":1,\"kind\":"));
}

/// The JSON-lines script of a one-chapter `book` split with a `cast` file
/// of (name, gender) pairs.
fn script_with_cast(book: &str, cast: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let book_path = dir.path().join("book.txt");
    std::fs::write(&book_path, book).unwrap();
    let cast_path = dir.path().join("cast.toml");
    let toml: String = cast
        .iter()
        .map(|(name, gender)| {
            format!("[[character]]\nname = \"{name}\"\ngender = \"{gender}\"\n\n")
        })
        .collect();
    std::fs::write(&cast_path, toml).unwrap();
    ok(&split(&[
        path_str(&book_path),
        "--cast",
        path_str(&cast_path),
        "--format",
        "jsonl",
    ]))
}

#[test]
fn someone_unnamed_keeps_their_gender_in_the_script() {
    let out = script_with_cast(
        "第一章 回家\n林一舟和苏晚回到家。\n她父亲听她说完，忧愁地说：\n“你说的也是实情。”\n“我知道。”苏晚说。\n",
        &[("林一舟", "male"), ("苏晚", "female")],
    );
    let lines = json_lines(&out);
    let quotes: Vec<_> = lines.iter().filter(|v| v["kind"] == "dialogue").collect();
    assert_eq!(quotes.len(), 2, "{out}");
    // Her father is neither of the cast: no name, a man's voice.
    assert!(quotes[0]["speaker"].is_null(), "{out}");
    assert_eq!(quotes[0]["unnamed"], "male", "{out}");
    assert_eq!(quotes[1]["speaker"], "苏晚", "{out}");
    assert!(quotes[1].get("unnamed").is_none(), "{out}");
}

#[test]
fn a_brother_called_by_what_he_is_does_not_speak_the_call() {
    // 他哥孙少安 once: “哥，…” calls 孙少安, so the younger brother says it.
    let out = script_with_cast(
        "第一章 回家\n孙少平回到家里，他哥孙少安正在院子里劈柴。\n孙少安抬起头，把斧头放下了。\n“哥，我回来了。”\n“回来就好。”\n",
        &[("孙少平", "male"), ("孙少安", "male")],
    );
    let speakers: Vec<_> = json_lines(&out)
        .into_iter()
        .filter(|v| v["kind"] == "dialogue")
        .map(|v| v["speaker"].clone())
        .collect();
    assert_eq!(speakers, ["孙少平", "孙少安"], "{out}");
}

#[test]
fn numbered_lines_become_chapters_when_consistent() {
    let out = ok(&split(&[path_str(&fixture("numbered.txt"))]));
    golden("numbered.txt", &out);
}

#[test]
fn suggested_cast_matches_golden_and_parses() {
    let book = fixture("hard-cases.txt");
    let out = ok(&split(&[path_str(&book), "--suggest-cast"]));
    golden("hard-cases.suggested-cast.toml", &out);
    // The suggestion is a valid cast file: split accepts it.
    let dir = tempfile::tempdir().unwrap();
    let cast = dir.path().join("cast.toml");
    std::fs::write(&cast, &out).unwrap();
    ok(&split(&[path_str(&book), "--cast", path_str(&cast)]));
}

#[test]
fn a_book_in_the_first_person_suggests_its_narrator_with_a_gender_and_their_family() {
    // webnovel-l: told by a man the narration never names; its tags removed.
    let tagged = std::fs::read_to_string(paths::fixture("speaker").join("webnovel-l.txt")).unwrap();
    let mut text = String::with_capacity(tagged.len());
    let mut rest = tagged.as_str();
    while let Some(open) = rest.find('⟦') {
        text.push_str(&rest[..open]);
        rest = &rest[open..];
        rest = &rest[rest
            .find('⟧')
            .map_or(rest.len(), |close| close + '⟧'.len_utf8())..];
    }
    text.push_str(rest);
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book.txt");
    std::fs::write(&book, &text).unwrap();
    let out = ok(&split(&[path_str(&book), "--suggest-cast"]));
    let cast: toml::Value = toml::from_str(&out).unwrap();
    let characters = cast["character"].as_array().unwrap();
    let find = |name: &str| {
        characters
            .iter()
            .find(|c| c["name"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("{name} not suggested:\n{out}"))
    };
    let aliases = |c: &toml::Value| -> Vec<String> {
        c.get("aliases")
            .and_then(|a| a.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let me = find("我");
    assert_eq!(me["gender"].as_str(), Some("male"), "{out}");
    assert!(aliases(me).iter().any(|a| a == "嘉树"), "{out}");
    assert!(
        out.contains("# the narrator: the book is told in the first person; gender male"),
        "{out}"
    );
    let mother = find("我妈");
    assert_eq!(mother["gender"].as_str(), Some("female"), "{out}");
    assert_eq!(aliases(mother), ["妈"], "{out}");
    // Named in the narration, never in a speaker position.
    assert_eq!(find("乔宇")["gender"].as_str(), Some("female"), "{out}");
    // The suggestion is a cast file split accepts, and the narrator speaks
    // (“尿闭了。”我说).
    let file = dir.path().join("cast.toml");
    std::fs::write(&file, &out).unwrap();
    let jsonl = ok(&split(&[
        path_str(&book),
        "--cast",
        path_str(&file),
        "--format",
        "jsonl",
    ]));
    let lines = json_lines(&jsonl);
    assert!(
        dialogue(&lines)
            .iter()
            .any(|v| v["speaker"] == "我"
                && v["text"].as_str().is_some_and(|t| t.contains("尿闭了"))),
        "{jsonl}"
    );
}

/// Sample goldens hold no text of the sample, only the shape of its script:
/// chapter, paragraph, kind, speaker and length of each segment.
fn script_shape(jsonl: &str) -> String {
    let mut out = String::new();
    for v in json_lines(jsonl) {
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\n",
            v["chapter"],
            v["paragraph"],
            v["kind"].as_str().unwrap(),
            v["speaker"].as_str().unwrap_or("-"),
            v["text"].as_str().unwrap().chars().count()
        ));
    }
    out
}

fn dialogue(lines: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    lines.iter().filter(|v| v["kind"] == "dialogue").collect()
}

#[test]
fn sample_000_corner_brackets_and_speakers() {
    let Some(book) = shared("samples/000_7b313e97eba21c0f.txt") else {
        return;
    };
    let out = ok(&split(&[path_str(&book), "--format", "jsonl"]));
    golden("samples/000_7b313e97eba21c0f.tsv", &script_shape(&out));
    let lines = json_lines(&out);
    let speech = dialogue(&lines);
    assert_eq!(speech.len(), 12);
    for opening in ["「諸位官兵", "「這些傢伙還聰明！」"] {
        let seg = speech
            .iter()
            .find(|v| v["text"].as_str().unwrap().starts_with(opening))
            .unwrap_or_else(|| panic!("no quote {opening}"));
        assert_eq!(seg["speaker"], "毛仲", "{seg}");
    }
}

#[test]
fn sample_004_scare_quotes_are_narration() {
    let Some(book) = shared("samples/004_a3a7bf909582209b.txt") else {
        return;
    };
    let out = ok(&split(&[path_str(&book), "--format", "jsonl"]));
    golden("samples/004_a3a7bf909582209b.tsv", &script_shape(&out));
    let lines = json_lines(&out);
    assert_eq!(dialogue(&lines).len(), 0);
    assert!(
        lines
            .iter()
            .any(|v| v["text"].as_str().unwrap().contains("“放风筝”"))
    );
}

#[test]
fn journey_to_the_west_has_one_hundred_chapters() {
    let Some(book) = shared("data/novels/西游记.txt") else {
        return;
    };
    let out = ok(&split(&[path_str(&book), "--format", "jsonl"]));
    let chapters = chapters(&json_lines(&out));
    let numbered: Vec<&(u64, String)> = chapters.iter().filter(|c| c.0 > 0).collect();
    assert_eq!(numbered.len(), 100);
    for (i, (number, title)) in numbered.iter().enumerate() {
        assert_eq!(*number as usize, i + 1);
        let heading = format!("第{}回", chinese_number(i + 1));
        assert!(
            title == &heading || title.starts_with(&format!("{heading} ")),
            "chapter {number}: {title}"
        );
    }
}

#[test]
fn bad_cast_file_is_exit_2_naming_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let cast = dir.path().join("cast.toml");
    std::fs::write(&cast, "[[character]]\nname = \"甲\"\nvoce = \"x\"\n").unwrap();
    let book = fixture("hard-cases.txt");
    for command in ["split", "build"] {
        let out = Tingshu::new([command, path_str(&book), "--cast", path_str(&cast)])
            .args(if command == "build" {
                vec!["--out", path_str(dir.path())]
            } else {
                vec![]
            })
            .output();
        assert_eq!(out.status.code(), Some(2), "{command}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("cast.toml") && err.contains("voce"),
            "{command}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{command}: {err}");
    }
}

#[test]
fn missing_book_is_exit_2() {
    let out = split(&["/nonexistent/book.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/book.txt"));
}

/// The same web novel in Traditional characters (OpenCC's s2t, whose 裏 and
/// 衆 are not Taiwan's 裡 and 眾) gives every quote the speaker it has in
/// Simplified: the name lists and the dictionary are asked by the
/// Simplified forms of a Traditional book's characters.
#[test]
fn a_traditional_book_has_the_speakers_of_its_simplified_text() {
    let simplified = std::fs::read_to_string(paths::fixture("speaker/webnovel-c.txt")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let speakers = |name: &str, text: &str| -> Vec<(String, Option<String>)> {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let out = ok(&split(&[path_str(&path), "--format", "jsonl"]));
        json_lines(&out)
            .iter()
            .map(|v| {
                (
                    v["kind"].as_str().unwrap().to_owned(),
                    v["speaker"].as_str().map(str::to_owned),
                )
            })
            .collect()
    };
    let simple = speakers("s.txt", &simplified);
    let traditional = speakers("t.txt", &to_traditional(&simplified));
    assert_eq!(simple.len(), traditional.len());
    let dialogue = simple.iter().filter(|(kind, _)| kind == "dialogue").count();
    assert!(dialogue > 200, "{dialogue} dialogue segments");
    let differ: Vec<_> = simple
        .iter()
        .zip(&traditional)
        .filter(|((kind, s), (_, t))| kind == "dialogue" && s.as_deref().map(to_traditional) != *t)
        .collect();
    assert!(
        differ.is_empty(),
        "{} of {dialogue}: {differ:?}",
        differ.len()
    );
}

/// Old e-texts are hard-wrapped: every paragraph cut into lines of one width
/// (wherever the width falls, inside a word or a quote), its first line
/// indented, paragraphs apart by a blank line or by the indent alone. Such a
/// copy of a book gives the script of the book itself.
#[test]
fn a_hard_wrapped_book_reads_as_the_book_itself() {
    let annotated = std::fs::read_to_string(paths::fixture("speaker/webnovel-c.txt")).unwrap();
    // The book without its ⟦speaker⟧ notes.
    let mut book = String::new();
    let mut rest = annotated.as_str();
    while let Some(at) = rest.find('⟦') {
        book.push_str(&rest[..at]);
        rest = rest[at..].split_once('⟧').map_or("", |(_, after)| after);
    }
    book.push_str(rest);
    let wrap = |width: usize, gap: &str| -> String {
        let mut paragraphs = Vec::new();
        for line in book.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if line.starts_with('第') {
                paragraphs.push(line.to_owned());
                continue;
            }
            let chars: Vec<char> = "\u{3000}\u{3000}".chars().chain(line.chars()).collect();
            let lines: Vec<String> = chars.chunks(width).map(|c| c.iter().collect()).collect();
            paragraphs.push(lines.join("\n"));
        }
        paragraphs.join(gap)
    };
    let dir = tempfile::tempdir().unwrap();
    let script = |name: &str, text: &str| -> String {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        ok(&split(&[path_str(&path), "--format", "jsonl"]))
    };
    let expected = script("book.txt", &book);
    assert!(json_lines(&expected).len() > 400);
    for (width, gap) in [(28, "\n\n"), (28, "\n"), (36, "\n\n")] {
        let wrapped = wrap(width, gap);
        let cut = wrapped
            .lines()
            .filter(|l| l.chars().count() == width)
            .count();
        assert!(cut > 100, "{cut} lines cut at {width}");
        assert_eq!(
            script("wrapped.txt", &wrapped),
            expected,
            "wrapped at {width}, {gap:?} between paragraphs"
        );
    }
}
