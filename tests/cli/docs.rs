//! The user guide and the README in two languages stay in step: every
//! heading of `docs/guide.md` has its counterpart in `docs/guide.zh.md`
//! (and README.md in README.zh.md) — matched by the `<a id="…"></a>` anchor
//! each heading carries, at the same level and in the same order — and
//! every fenced code block of one is in the other, in the same order, with
//! the same commands: only comments (`# …` to the end of a line) may be
//! translated. Links to a section (`guide.md#install`) must reach an
//! anchor, and the README's test command must be what `.ci/run` runs.

use std::collections::{BTreeMap, BTreeSet};

use crate::support::paths::repo;

/// The documents written in both languages: (English, Chinese).
const PAIRS: [(&str, &str); 2] = [
    ("docs/guide.md", "docs/guide.zh.md"),
    ("README.md", "README.zh.md"),
];

/// A heading: `## <a id="install"></a>Install`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Heading {
    line: usize,
    level: usize,
    id: Option<String>,
    text: String,
}

/// A fenced code block: its info string and lines.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Block {
    line: usize,
    info: String,
    lines: Vec<String>,
}

/// A Markdown document as far as these checks read it.
#[derive(Debug)]
struct Doc {
    name: String,
    headings: Vec<Heading>,
    blocks: Vec<Block>,
    /// Link targets `(file part, anchor)` with their lines.
    links: Vec<(usize, String, String)>,
}

impl Doc {
    fn parse(name: &str, text: &str) -> Doc {
        let mut headings = Vec::new();
        let mut blocks = Vec::new();
        let mut links = Vec::new();
        let mut open: Option<Block> = None;
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            if let Some(fence) = line.strip_prefix("```") {
                match open.take() {
                    Some(block) => blocks.push(block),
                    None => {
                        open = Some(Block {
                            line: n,
                            info: fence.trim().to_owned(),
                            lines: Vec::new(),
                        })
                    }
                }
                continue;
            }
            if let Some(block) = open.as_mut() {
                block.lines.push(line.to_owned());
                continue;
            }
            if let Some(h) = heading(n, line) {
                headings.push(h);
            }
            links.extend(
                link_targets(line)
                    .into_iter()
                    .map(|(file, anchor)| (n, file, anchor)),
            );
        }
        assert!(
            open.is_none(),
            "{name}:{}: a code block is never closed",
            open.map_or(0, |b| b.line)
        );
        Doc {
            name: name.to_owned(),
            headings,
            blocks,
            links,
        }
    }

    fn read(rel: &str) -> Doc {
        let path = repo().join(rel);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Doc::parse(rel, &text)
    }

    fn anchors(&self) -> BTreeSet<&str> {
        self.headings
            .iter()
            .filter_map(|h| h.id.as_deref())
            .collect()
    }
}

/// `### <a id="x"></a>Title` → a heading (its id when it has an anchor).
fn heading(line: usize, text: &str) -> Option<Heading> {
    let level = text.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) || text.as_bytes().get(level) != Some(&b' ') {
        return None;
    }
    let title = text[level + 1..].trim();
    let id = title
        .strip_prefix("<a id=\"")
        .and_then(|rest| rest.split_once("\"></a>"))
        .map(|(id, _)| id.to_owned());
    Some(Heading {
        line,
        level,
        id,
        text: text.to_owned(),
    })
}

/// The `(file, anchor)` of every Markdown link with a `#` in its target.
fn link_targets(line: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find("](") {
        rest = &rest[start + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = &rest[..end];
        if !target.contains("://")
            && let Some((file, anchor)) = target.split_once('#')
        {
            out.push((file.to_owned(), anchor.to_owned()));
        }
        rest = &rest[end..];
    }
    out
}

/// A block's lines as they must agree across languages: comments (a line
/// starting with `#`, or from a whitespace-preceded `#` on) and blank
/// lines left out, trailing spaces trimmed.
fn commands(block: &Block) -> Vec<String> {
    block
        .lines
        .iter()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| {
            let cut = l
                .char_indices()
                .find(|&(i, c)| c == '#' && i > 0 && l[..i].ends_with([' ', '\t']))
                .map_or(l.len(), |(i, _)| i);
            l[..cut].trim_end().to_owned()
        })
        .filter(|l| !l.is_empty())
        .collect()
}

/// Every heading anchored, ids unique, and the same (level, id) sequence
/// in both documents; the error names the heading.
fn same_sections(en: &Doc, zh: &Doc) -> Result<(), String> {
    for doc in [en, zh] {
        let mut seen = BTreeMap::new();
        for h in &doc.headings {
            let Some(id) = &h.id else {
                return Err(format!(
                    "{}:{}: heading {:?} has no anchor: write it as `## <a id=\"…\"></a>Title`, the same id in both languages",
                    doc.name, h.line, h.text
                ));
            };
            if let Some(first) = seen.insert(id.clone(), h.line) {
                return Err(format!(
                    "{}:{}: heading {:?} repeats the id {id:?} of line {first}",
                    doc.name, h.line, h.text
                ));
            }
        }
    }
    for (a, b) in [(en, zh), (zh, en)] {
        let ids = b.anchors();
        if let Some(h) = a
            .headings
            .iter()
            .find(|h| !ids.contains(h.id.as_deref().unwrap_or_default()))
        {
            return Err(format!(
                "{}:{}: heading {:?} has no counterpart (id {:?}) in {}",
                a.name,
                h.line,
                h.text,
                h.id.as_deref().unwrap_or_default(),
                b.name
            ));
        }
    }
    for (x, y) in en.headings.iter().zip(&zh.headings) {
        if x.id != y.id || x.level != y.level {
            return Err(format!(
                "{}:{}: heading {:?} (level {}) stands where {}:{} has {:?} (level {}): same sections, same levels, same order",
                zh.name, y.line, y.text, y.level, en.name, x.line, x.text, x.level
            ));
        }
    }
    Ok(())
}

/// The same code blocks in the same order, commands identical.
fn same_code(en: &Doc, zh: &Doc) -> Result<(), String> {
    for (i, (x, y)) in en.blocks.iter().zip(&zh.blocks).enumerate() {
        let (cx, cy) = (commands(x), commands(y));
        if x.info != y.info || cx != cy {
            let at = cx.iter().zip(&cy).position(|(p, q)| p != q);
            let (p, q) = match at {
                Some(k) => (cx[k].as_str(), cy[k].as_str()),
                None => (
                    cx.get(cy.len()).map_or("<end>", String::as_str),
                    cy.get(cx.len()).map_or("<end>", String::as_str),
                ),
            };
            return Err(format!(
                "code block {} differs: {}:{} (```{}) has {p:?} where {}:{} (```{}) has {q:?}; commands are not translated, only # comments",
                i + 1,
                en.name,
                x.line,
                x.info,
                zh.name,
                y.line,
                y.info
            ));
        }
    }
    if en.blocks.len() != zh.blocks.len() {
        let (more, fewer) = if en.blocks.len() > zh.blocks.len() {
            (en, zh)
        } else {
            (zh, en)
        };
        let extra = &more.blocks[fewer.blocks.len()];
        return Err(format!(
            "{}:{}: code block {} has no counterpart in {} ({} blocks against {})",
            more.name,
            extra.line,
            fewer.blocks.len() + 1,
            fewer.name,
            more.blocks.len(),
            fewer.blocks.len()
        ));
    }
    Ok(())
}

#[test]
fn guides_have_the_same_sections_in_both_languages() {
    for (en, zh) in PAIRS {
        let (en, zh) = (Doc::read(en), Doc::read(zh));
        assert!(!en.headings.is_empty(), "{}: no headings", en.name);
        if let Err(e) = same_sections(&en, &zh) {
            panic!("{e}");
        }
    }
}

#[test]
fn guides_have_the_same_code_blocks_in_both_languages() {
    for (en, zh) in PAIRS {
        let (en, zh) = (Doc::read(en), Doc::read(zh));
        assert!(!en.blocks.is_empty(), "{}: no code blocks", en.name);
        if let Err(e) = same_code(&en, &zh) {
            panic!("{e}");
        }
    }
}

#[test]
fn links_to_sections_reach_an_anchor() {
    let docs: BTreeMap<&str, Doc> = PAIRS
        .iter()
        .flat_map(|&(en, zh)| [en, zh])
        .map(|rel| (rel, Doc::read(rel)))
        .collect();
    let mut checked = 0;
    for (rel, doc) in &docs {
        let dir = std::path::Path::new(rel)
            .parent()
            .unwrap_or(std::path::Path::new(""));
        for (line, file, anchor) in &doc.links {
            // `docs/guide.md#x` from README.md, `guide.zh.md#x` or `#x` in docs/.
            let target = if file.is_empty() {
                (*rel).to_owned()
            } else {
                let joined = dir.join(file);
                let mut parts: Vec<&str> = Vec::new();
                for c in joined.iter().filter_map(|c| c.to_str()) {
                    if c == ".." {
                        parts.pop();
                    } else {
                        parts.push(c);
                    }
                }
                parts.join("/")
            };
            // Documents outside these checks (docs/gpu.md) are not read.
            let Some(target_doc) = docs.get(target.as_str()) else {
                continue;
            };
            assert!(
                target_doc.anchors().contains(anchor.as_str()),
                "{rel}:{line}: the link to {file}#{anchor} reaches no heading: {target} has no <a id=\"{anchor}\"></a>"
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} links to sections were found");
}

#[test]
fn the_readme_test_command_is_what_ci_runs() {
    let readme = Doc::read("README.md");
    let first = readme.blocks.first().expect("README.md: no code block");
    assert!(
        first.lines.iter().any(|l| l.starts_with("scripts/test.sh")),
        "README.md:{}: the first code block must give the test command scripts/test.sh",
        first.line
    );
    let ci = std::fs::read_to_string(repo().join(".ci/run")).expect(".ci/run");
    assert!(
        ci.lines().any(|l| l.trim() == "scripts/test.sh"),
        ".ci/run does not run scripts/test.sh, the README's test command"
    );
}

#[test]
fn the_checks_name_what_is_out_of_step() {
    let en = Doc::parse(
        "en.md",
        "# <a id=\"t\"></a>Title\n\n## <a id=\"a\"></a>Install\n\n```sh\nrun --fast   # quick\n```\n\n## <a id=\"b\"></a>Use\n",
    );
    let zh_ok = Doc::parse(
        "zh.md",
        "# <a id=\"t\"></a>标题\n\n## <a id=\"a\"></a>安装\n\n```sh\n# 先说明\nrun --fast   # 快\n```\n\n## <a id=\"b\"></a>使用\n",
    );
    assert_eq!(same_sections(&en, &zh_ok), Ok(()));
    assert_eq!(same_code(&en, &zh_ok), Ok(()));

    let missing = Doc::parse("zh.md", "# <a id=\"t\"></a>标题\n## <a id=\"a\"></a>安装\n");
    let e = same_sections(&en, &missing).unwrap_err();
    assert!(
        e.contains("en.md:9") && e.contains("Use") && e.contains("zh.md"),
        "{e}"
    );

    let swapped = Doc::parse(
        "zh.md",
        "# <a id=\"t\"></a>标题\n## <a id=\"b\"></a>使用\n## <a id=\"a\"></a>安装\n",
    );
    let e = same_sections(&en, &swapped).unwrap_err();
    assert!(e.contains("使用") && e.contains("Install"), "{e}");

    let level = Doc::parse(
        "zh.md",
        "# <a id=\"t\"></a>标题\n### <a id=\"a\"></a>安装\n## <a id=\"b\"></a>使用\n",
    );
    let e = same_sections(&en, &level).unwrap_err();
    assert!(e.contains("安装") && e.contains("level 3"), "{e}");

    let bare = Doc::parse("zh.md", "# <a id=\"t\"></a>标题\n## 安装\n");
    let e = same_sections(&en, &bare).unwrap_err();
    assert!(e.contains("zh.md:2") && e.contains("no anchor"), "{e}");

    let translated = Doc::parse(
        "zh.md",
        "# <a id=\"t\"></a>标题\n## <a id=\"a\"></a>安装\n```sh\nrun --快\n```\n## <a id=\"b\"></a>使用\n",
    );
    let e = same_code(&en, &translated).unwrap_err();
    assert!(
        e.contains("run --fast") && e.contains("run --快") && e.contains("zh.md:3"),
        "{e}"
    );

    let no_block = Doc::parse("zh.md", "# <a id=\"t\"></a>标题\n");
    let e = same_code(&en, &no_block).unwrap_err();
    assert!(e.contains("en.md:5") && e.contains("no counterpart"), "{e}");
}
