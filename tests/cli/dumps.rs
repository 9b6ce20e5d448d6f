//! Book dumps whose chapter titles run straight into the text: one line, no
//! line breaks, no space or colon between a 回目 and the first sentence
//! (`…且听下回分解。第二回史大郎夜走华阴县鲁提辖拳打镇关西话说当时…`).
//!
//! The fixtures are short excerpts of two public-domain novels (三国演义 and
//! 水浒传), made by `scripts/make-dump-fixture.py` with every line break and
//! separator removed; each comes with the titles it must give. The
//! Traditional dumps are the same excerpts converted with OpenCC (s2t).

use std::path::{Path, PathBuf};

use crate::support::cli::{ok, tingshu};
use crate::support::paths::{self, path_str};
use crate::support::script::{chapters, chinese_number, json_lines, to_traditional};
use crate::support::services::shared;

fn fixture(name: &str) -> PathBuf {
    paths::fixture("split").join(name)
}

/// The chapter titles `tingshu split` finds in `text` (written to `dir`).
fn split_titles(dir: &Path, name: &str, text: &str) -> Vec<String> {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let out = ok(&tingshu(["split", path_str(&path), "--format", "jsonl"]));
    chapters(&json_lines(&out))
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(_, t)| t)
        .collect()
}

/// The `第N回` of each title.
fn keys(titles: &[String]) -> Vec<String> {
    titles
        .iter()
        .map(|t| {
            t.split_inclusive(['回', '迴'])
                .next()
                .unwrap_or(t)
                .to_owned()
        })
        .collect()
}

/// A dump and its titles, Simplified as made or converted to Traditional.
fn dump(stem: &str, traditional: bool) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(fixture(&format!("{stem}.txt"))).unwrap();
    let titles = std::fs::read_to_string(fixture(&format!("{stem}.titles"))).unwrap();
    let (text, titles) = if traditional {
        (to_traditional(&text), to_traditional(&titles))
    } else {
        (text, titles)
    };
    assert_eq!(text.lines().count(), 1, "{stem}: a dump is one line");
    (text, titles.lines().map(str::to_owned).collect())
}

#[test]
fn run_in_titles_of_simplified_and_traditional_dumps() {
    let dir = tempfile::tempdir().unwrap();
    for stem in ["dump-sanguo", "dump-shuihu"] {
        for traditional in [false, true] {
            let label = format!("{stem} {}", if traditional { "繁" } else { "简" });
            let (text, titles) = dump(stem, traditional);
            let got = split_titles(dir.path(), &format!("{stem}.txt"), &text);
            assert_eq!(keys(&got), keys(&titles), "{label}: {got:?}");
            let exact = got.iter().zip(&titles).filter(|(g, t)| g == t).count();
            println!(
                "{label}: {}/{} chapters, {exact}/{} titles exact",
                got.len(),
                titles.len(),
                titles.len()
            );
            assert!(exact * 100 >= titles.len() * 90, "{label}: {got:?}");

            // A heading lost in the middle loses that chapter, not the rest.
            for lost in [1, titles.len() / 2, titles.len() - 1] {
                let heading = &titles[lost];
                assert_eq!(text.matches(heading.as_str()).count(), 1, "{label}");
                let damaged = text.replacen(heading.as_str(), "", 1);
                let got = split_titles(dir.path(), &format!("{stem}.txt"), &damaged);
                let mut want = titles.clone();
                want.remove(lost);
                assert_eq!(keys(&got), keys(&want), "{label} without {heading}");
            }
            // Two headings in a row lost.
            let mut damaged = text.clone();
            for heading in &titles[10..12] {
                damaged = damaged.replacen(heading.as_str(), "", 1);
            }
            let got = split_titles(dir.path(), &format!("{stem}.txt"), &damaged);
            let want: Vec<String> = titles
                .iter()
                .enumerate()
                .filter(|(k, _)| !(10..12).contains(k))
                .map(|(_, t)| t.clone())
                .collect();
            assert_eq!(
                keys(&got),
                keys(&want),
                "{label} without chapters 11 and 12"
            );
        }
    }
}

/// 西游记 from its first heading on (the title line left out), when the
/// shared data is there.
fn journey() -> Option<String> {
    let text = std::fs::read_to_string(shared("data/novels/西游记.txt")?).unwrap();
    Some(text[text.find("第一回").unwrap()..].to_owned())
}

/// A 回 heading line of 西游记 (第一回 灵根孕育源流出 …).
fn is_journey_heading(line: &str) -> bool {
    line.starts_with('第') && (line.contains("回 ") || line.ends_with('回'))
}

#[test]
fn journey_with_no_separators_at_all_has_its_hundred_titles() {
    let Some(body) = journey() else {
        return;
    };
    // Every whitespace character removed: line breaks, indents and the
    // spaces inside and after the headings.
    let dumped: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    let dir = tempfile::tempdir().unwrap();
    for traditional in [false, true] {
        let dumped = if traditional {
            to_traditional(&dumped)
        } else {
            dumped.clone()
        };
        let want: Vec<String> = body
            .lines()
            .map(str::trim)
            .filter(|l| is_journey_heading(l))
            .map(|l| l.chars().filter(|c| !c.is_whitespace()).collect::<String>())
            .map(|l| if traditional { to_traditional(&l) } else { l })
            .collect();
        assert_eq!(want.len(), 100);
        let got = split_titles(dir.path(), "西游记.txt", &dumped);
        let right = got.iter().filter(|t| want.contains(t)).count();
        println!(
            "西游记 without separators ({}): {} chapters, {right}/100 titles exact",
            if traditional { "繁" } else { "简" },
            got.len()
        );
        // Every heading found, in order; the Traditional text has 迴 where
        // OpenCC turned 回心 into 迴心 (第十四迴心猿歸正…).
        if !traditional {
            for (i, title) in got.iter().enumerate() {
                let heading = format!("第{}回", chinese_number(i + 1));
                assert!(title.starts_with(&heading), "chapter {}: {title}", i + 1);
            }
        }
        assert_eq!(keys(&got), keys(&want));
        assert!(right >= 95, "{right}/100 titles exact");
    }
}

/// `n` digit by digit with its zeros lost, as some scraped texts write it:
/// 10 → 一, 11 → 一一, 100 → 一.
fn zeros_lost(n: usize) -> String {
    n.to_string()
        .chars()
        .filter(|c| *c != '0')
        .map(|c| {
            "一二三四五六七八九"
                .chars()
                .nth(c as usize - '1' as usize)
                .unwrap()
        })
        .collect()
}

#[test]
fn journey_scraped_badly_still_has_its_hundred_chapters() {
    let Some(body) = journey() else {
        return;
    };
    // As a web page dumps it: one line, the sentence end before each
    // heading lost, numbers written digit by digit with their zeros lost
    // (第一回 for the tenth), the site's name before every heading but the
    // first, with a sentence end only before the third.
    let mut dumped = String::new();
    let mut n = 0;
    for line in body.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if is_journey_heading(line) {
            n += 1;
            while dumped.ends_with(['。', '”', '！', '？']) {
                dumped.pop();
            }
            if n == 3 {
                dumped.push('。');
            }
            if n > 1 {
                dumped.push_str("书香小站");
            }
            let title = &line[line.find('回').unwrap()..];
            dumped.push_str(&format!("第{}", zeros_lost(n)));
            dumped.extend(title.chars().filter(|c| !c.is_whitespace()));
        } else {
            dumped.extend(line.chars().filter(|c| !c.is_whitespace()));
        }
    }
    assert_eq!(n, 100);
    let dir = tempfile::tempdir().unwrap();
    let got = split_titles(dir.path(), "西游记.txt", &dumped);
    println!("西游记 scraped badly: {} chapters", got.len());
    assert_eq!(got.len(), 100, "{:?}", &got[..got.len().min(12)]);
    for (i, title) in got.iter().enumerate() {
        let heading = format!("第{}回", zeros_lost(i + 1));
        assert!(title.starts_with(&heading), "chapter {}: {title}", i + 1);
    }
    // The site's name is no text of the book.
    let path = dir.path().join("西游记.txt");
    let script = ok(&tingshu(["split", path_str(&path), "--format", "jsonl"]));
    assert!(!script.contains("书香小站"), "the running header is read");
}

/// A web-novel opening of `tests/fixtures/dumps/` as a book site dumps it:
/// one line, every whitespace and the colon after each heading's number
/// removed; and its headings (`第N章标题`), in order.
fn web_novel_dump(path: &Path) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut headings = Vec::new();
    let mut dumped = String::new();
    for line in text.lines() {
        if line.starts_with('第') && line.contains("章 ") {
            let heading: String = line
                .chars()
                .filter(|c| !c.is_whitespace() && !matches!(c, ':' | '：'))
                .collect();
            dumped.push_str(&heading);
            headings.push(heading);
        } else {
            dumped.extend(line.chars().filter(|c| !c.is_whitespace()));
        }
    }
    (dumped, headings)
}

#[test]
fn web_novel_dumps_keep_every_chapter_and_most_titles_whole() {
    let dir = tempfile::tempdir().unwrap();
    for (set, least_exact) in [
        ("tuned", 60),
        ("heldout", 57),
        ("heldout2", 42),
        ("heldout3", 40),
        ("heldout4", 34),
    ] {
        let mut books: Vec<PathBuf> = std::fs::read_dir(paths::fixture("dumps").join(set))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(".txt") && !n.ends_with(".genders.txt"))
            })
            .collect();
        books.sort();
        assert_eq!(books.len(), 8, "{set}");
        let (mut exact, mut all) = (0, 0);
        for book in &books {
            let (text, titles) = web_novel_dump(book);
            assert_eq!(titles.len(), 8, "{}", book.display());
            let got = split_titles(dir.path(), "book.txt", &text);
            let number = |t: &String| t.split_inclusive('章').next().unwrap_or(t).to_owned();
            assert_eq!(
                got.iter().map(number).collect::<Vec<_>>(),
                titles.iter().map(number).collect::<Vec<_>>(),
                "{}: {got:?}",
                book.display()
            );
            exact += got.iter().zip(&titles).filter(|(g, t)| g == t).count();
            all += titles.len();
            // A heading lost in the middle loses that chapter, not the rest.
            let damaged = text.replacen(titles[4].as_str(), "", 1);
            let got = split_titles(dir.path(), "book.txt", &damaged);
            assert_eq!(
                got.len(),
                7,
                "{} without {}: {got:?}",
                book.display(),
                titles[4]
            );
        }
        println!("{set}: {exact}/{all} titles exact");
        assert!(exact >= least_exact, "{set}: {exact}/{all} titles exact");
    }
}
