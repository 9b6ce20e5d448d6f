//! EPUB 2 and 3 books → chapters. The zip's `container.xml` names the OPF;
//! the OPF gives metadata, manifest and spine; chapters follow the spine and
//! take their titles from the table of contents (nav or NCX). A spine item
//! holding several 第N章 headings is split with the TXT chapter rules, and
//! spine items the TOC does not point at continue the chapter before them.

pub mod package;
pub mod xhtml;

use std::collections::{HashMap, HashSet};
use std::io::{Cursor, Read};

use zip::ZipArchive;
use zip::result::ZipError;

use crate::text::chapter::{self, Chapter};

/// A cover image taken from the book.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cover {
    /// As the book declares it (`image/jpeg`, `image/png`, …).
    pub media_type: String,
    pub bytes: Vec<u8>,
}

/// What the book says about itself (EPUB OPF metadata; empty for TXT).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    pub title: Option<String>,
    pub author: Option<String>,
    pub language: Option<String>,
    pub cover: Option<Cover>,
}
use package::{Package, TocEntry, XmlError};
use xhtml::Block;

const MIMETYPE: &str = "application/epub+zip";
const CONTAINER: &str = "META-INF/container.xml";
const ENCRYPTION: &str = "META-INF/encryption.xml";
/// Largest file read out of an archive (guards against zip bombs).
const MAX_PART_BYTES: u64 = 256 << 20;

/// Why an EPUB cannot be read at all; each names the part that is wrong.
#[derive(Debug, thiserror::Error)]
pub enum EpubError {
    #[error("not an EPUB: not a zip archive")]
    NotZip(#[source] ZipError),
    #[error("not an EPUB: mimetype is {found:?}, not {MIMETYPE}")]
    Mimetype { found: String },
    #[error("{CONTAINER}: missing, so the OPF package file cannot be found")]
    NoContainer,
    #[error("{CONTAINER}: names no OPF package file (rootfile)")]
    NoRootfile,
    #[error("{part}: OPF package file named by {CONTAINER} is missing")]
    NoOpf { part: String },
    #[error("{part}: missing from the archive")]
    Missing { part: String },
    #[error("{part}")]
    Xml {
        part: String,
        #[source]
        source: XmlError,
    },
    #[error("{part}: cannot read from the archive")]
    Read {
        part: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{part} is larger than the {} MiB limit", MAX_PART_BYTES >> 20)]
    TooLarge { part: String },
    #[error("{part}: not UTF-8 text")]
    Text { part: String },
    #[error(
        "{ENCRYPTION}: {first}{more} DRM-encrypted; tingshu reads only books without DRM",
        more = if *others > 0 { format!(" and {others} more files are") } else { " is".to_owned() }
    )]
    Drm { first: String, others: usize },
    #[error("{opf}: the spine lists no XHTML content documents")]
    EmptySpine { opf: String },
    #[error("{opf}: the content documents of the spine hold no text")]
    NoText { opf: String },
    #[error(
        "no readable text: {first}{more}",
        more = if *others > 0 { format!(" (and {others} more files)") } else { String::new() }
    )]
    Unreadable { first: String, others: usize },
}

/// A book read from an EPUB.
#[derive(Debug, Clone, Default)]
pub struct EpubBook {
    pub metadata: Metadata,
    /// Chapters in reading order (front matter numbered 0, then 1, 2, …).
    pub chapters: Vec<Chapter>,
    /// Ruby base text → reading, for the lexicon.
    pub readings: Vec<(String, String)>,
    /// How many times each ruby base text is annotated in the book.
    pub annotations: HashMap<String, usize>,
    /// Parts that could not be read and were left out, one line each
    /// (`OEBPS/c3.xhtml: broken XHTML at byte 812: …`).
    pub skipped: Vec<String>,
}

/// True for a zip archive whose `mimetype` file says EPUB.
pub fn is_epub(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04")
        && ZipArchive::new(Cursor::new(bytes))
            .ok()
            .and_then(|mut zip| read_entry(&mut zip, "mimetype").ok())
            .is_some_and(|m| m.trim_ascii() == MIMETYPE.as_bytes())
}

/// Reads an EPUB file's bytes. Text that no heading or TOC entry names is
/// titled with the book's title, or `fallback_title` (normally the file
/// stem, as for TXT books) when the OPF has none.
pub fn read_epub(bytes: &[u8], fallback_title: &str) -> Result<EpubBook, EpubError> {
    let mut zip = ZipArchive::new(Cursor::new(bytes)).map_err(EpubError::NotZip)?;
    if let Ok(found) = read_entry(&mut zip, "mimetype") {
        let found = String::from_utf8_lossy(found.trim_ascii()).into_owned();
        if found != MIMETYPE {
            return Err(EpubError::Mimetype { found });
        }
    }
    check_drm(&mut zip)?;

    let container = read_text(&mut zip, CONTAINER).map_err(|e| match e {
        EpubError::Missing { .. } => EpubError::NoContainer,
        e => e,
    })?;
    let opf_path = package::rootfile(&container)
        .map_err(|source| EpubError::Xml {
            part: CONTAINER.to_owned(),
            source,
        })?
        .ok_or(EpubError::NoRootfile)?;
    let opf_path = package::resolve("", &opf_path).0;
    let opf = read_text(&mut zip, &opf_path).map_err(|e| match e {
        EpubError::Missing { part } => EpubError::NoOpf { part },
        e => e,
    })?;
    let package = package::parse_opf(&opf, &opf_path).map_err(|source| EpubError::Xml {
        part: opf_path.clone(),
        source,
    })?;

    let toc = read_toc(&mut zip, &package);
    let cover = package.cover().and_then(|item| {
        let bytes = read_entry(&mut zip, &item.path).ok()?;
        Some(Cover {
            media_type: item.media_type.clone(),
            bytes,
        })
    });
    let metadata = Metadata {
        title: package.title.clone(),
        author: package.author.clone(),
        language: package.language.clone(),
        cover,
    };

    let nav_path = package.nav().map(|item| item.path.clone());
    // Non-linear items (notes, pop-ups) are left out, unless all are.
    let all_auxiliary = package.spine.iter().all(|s| !s.linear);
    let documents: Vec<&package::Item> = package
        .spine
        .iter()
        .filter(|s| s.linear || all_auxiliary)
        .filter_map(|s| package.manifest.get(&s.idref))
        .filter(|item| item.is_xhtml() && Some(&item.path) != nav_path.as_ref())
        .collect();
    if documents.is_empty() {
        return Err(EpubError::EmptySpine { opf: opf_path });
    }

    // A TOC that points at none of the documents is no guide: use headings.
    let toc_fits = toc.iter().any(|entry| {
        documents
            .iter()
            .any(|item| item.path.eq_ignore_ascii_case(&entry.path))
    });
    if !toc.is_empty() && !toc_fits {
        tracing::warn!("table of contents ignored: it points at no document of the spine");
    }
    let title = package.title.as_deref().unwrap_or(fallback_title);
    let mut chapters = Assembler::new(title, toc_fits);
    let mut readings: Vec<(String, String)> = Vec::new();
    let mut seen_readings = HashSet::new();
    let mut annotations: HashMap<String, usize> = HashMap::new();
    let mut skipped = Vec::new();
    for item in documents {
        let doc = match read_entry(&mut zip, &item.path) {
            Ok(bytes) => xhtml::parse(&bytes).map_err(|e| format!("{}: {e}", item.path)),
            Err(e) => Err(one_line(&e)),
        };
        let doc = match doc {
            Ok(doc) if !doc.is_link_list() => doc,
            unread => {
                if let Err(line) = unread {
                    skipped.push(line);
                } else {
                    tracing::debug!(path = %item.path, "table-of-contents page not read");
                }
                // Chapters the TOC starts here still start here.
                let marks = marks_in(&toc, &item.path, &HashMap::new(), &[]);
                chapters.add_document(&[], marks);
                continue;
            }
        };
        for pair in doc.readings {
            *annotations.entry(pair.0.clone()).or_default() += 1;
            if seen_readings.insert(pair.clone()) {
                readings.push(pair);
            }
        }
        let marks = marks_in(&toc, &item.path, &doc.anchors, &doc.blocks);
        chapters.add_document(&doc.blocks, marks);
    }
    let chapters = chapters.finish();
    if chapters.is_empty() {
        return Err(match skipped.split_first() {
            None => EpubError::NoText { opf: opf_path },
            Some((first, others)) => EpubError::Unreadable {
                first: first.clone(),
                others: others.len(),
            },
        });
    }
    for line in &skipped {
        tracing::warn!("skipped {line}");
    }
    Ok(EpubBook {
        metadata,
        chapters,
        readings,
        annotations,
        skipped,
    })
}

/// Refuses books whose content (not just fonts) is encrypted.
fn check_drm(zip: &mut ZipArchive<Cursor<&[u8]>>) -> Result<(), EpubError> {
    let xml = match read_text(zip, ENCRYPTION) {
        Ok(xml) => xml,
        Err(EpubError::Missing { .. }) => return Ok(()),
        Err(e) => return Err(e),
    };
    let files = package::encrypted_files(&xml).map_err(|source| EpubError::Xml {
        part: ENCRYPTION.to_owned(),
        source,
    })?;
    match files.split_first() {
        Some((first, others)) => Err(EpubError::Drm {
            first: first.clone(),
            others: others.len(),
        }),
        None => Ok(()),
    }
}

/// The table of contents: the EPUB 3 nav, else the NCX; a broken TOC is
/// logged and the book falls back to headings.
fn read_toc(zip: &mut ZipArchive<Cursor<&[u8]>>, package: &Package) -> Vec<TocEntry> {
    type Parser = fn(&str, &str) -> Result<Vec<TocEntry>, XmlError>;
    let sources: [(Option<&package::Item>, Parser); 2] = [
        (package.nav(), package::parse_nav),
        (package.ncx(), package::parse_ncx),
    ];
    for (item, parse) in sources {
        let Some(item) = item else { continue };
        let entries = read_text(zip, &item.path).and_then(|xml| {
            parse(&xml, &item.path).map_err(|source| EpubError::Xml {
                part: item.path.clone(),
                source,
            })
        });
        match entries {
            Ok(entries) if !entries.is_empty() => return entries,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!("table of contents ignored: {}", one_line(&e));
            }
        }
    }
    Vec::new()
}

/// TOC entries pointing into the document at `path`: (block index, title),
/// in block order; of several at one place, the last (innermost) wins.
fn marks_in(
    toc: &[TocEntry],
    path: &str,
    anchors: &HashMap<String, usize>,
    blocks: &[Block],
) -> Vec<(usize, String)> {
    let mut marks: Vec<(usize, String)> = toc
        .iter()
        .filter(|e| e.path.eq_ignore_ascii_case(path))
        .map(|e| {
            let at = e
                .fragment
                .as_ref()
                .and_then(|f| anchors.get(f).copied())
                .unwrap_or(0);
            let title = match (e.title.is_empty(), blocks.get(at)) {
                (true, Some(block)) if block.heading => block.text.clone(),
                _ => e.title.clone(),
            };
            (at, title)
        })
        .collect();
    marks.sort_by_key(|(at, _)| *at);
    let mut kept: Vec<(usize, String)> = Vec::new();
    for mark in marks {
        match kept.last_mut() {
            Some(last) if last.0 == mark.0 => *last = mark,
            _ => kept.push(mark),
        }
    }
    kept
}

/// Builds chapters from content documents in spine order.
struct Assembler {
    fallback_title: String,
    has_toc: bool,
    /// The volume (第一卷 …) the chapters being added belong to.
    volume: Option<String>,
    chapters: Vec<Chapter>,
}

impl Assembler {
    fn new(fallback_title: &str, has_toc: bool) -> Assembler {
        Assembler {
            fallback_title: fallback_title.to_owned(),
            has_toc,
            volume: None,
            chapters: Vec::new(),
        }
    }

    fn add_document(&mut self, blocks: &[Block], mut marks: Vec<(usize, String)>) {
        // A heading that repeats the TOC title is the title, not text.
        let blocks = match (marks.first(), blocks.first()) {
            (Some((0, title)), Some(first)) if echoes(first, title) => {
                for (at, _) in &mut marks {
                    *at = at.saturating_sub(1);
                }
                &blocks[1..]
            }
            _ => blocks,
        };
        if blocks.is_empty() && marks.is_empty() {
            return;
        }
        let text: Vec<&str> = blocks.iter().map(|b| b.text.as_str()).collect();
        let parts = chapter::split_chapters(&text.join("\n"), "");
        let titled = parts.iter().filter(|p| !p.title.is_empty()).count();
        let heading_first = parts.first().is_some_and(|p| !p.title.is_empty());
        let by_headings = marks.len() <= 1
            && (titled >= 2 || (titled == 1 && (marks.is_empty() || !heading_first)));
        if by_headings {
            self.add_by_headings(parts, marks.into_iter().next());
        } else {
            self.add_by_toc(blocks, marks);
        }
    }

    /// Several 第N章 headings in one document: the TXT rules split it; text
    /// before the first heading belongs to the TOC entry or the chapter before.
    fn add_by_headings(&mut self, parts: Vec<Chapter>, mark: Option<(usize, String)>) {
        let mut mark = mark.map(|(_, title)| title);
        for part in parts {
            if part.title.is_empty() {
                if let Some(title) = mark.take() {
                    self.start(title);
                }
                self.extend(part.paragraphs);
                continue;
            }
            // The TOC names the first chapter unless it names something
            // wider (a volume, 正文) that holds the headings.
            let title = match mark.take() {
                Some(toc) if related(&toc, &part.title) => toc,
                _ => part.title,
            };
            let continues = self
                .chapters
                .last()
                .is_some_and(|c| c.number != 0 && squash(&c.title) == squash(&title));
            if part.volume.is_some() {
                self.volume = part.volume;
            }
            if !continues {
                self.start(title);
            }
            self.extend(part.paragraphs);
        }
    }

    /// Chapters start where the TOC points (or, in a book without a TOC, at
    /// a document that opens with a heading element).
    fn add_by_toc(&mut self, blocks: &[Block], marks: Vec<(usize, String)>) {
        let mut marks = marks.into_iter().peekable();
        for (i, block) in blocks.iter().enumerate() {
            let mut marked = false;
            while let Some((_, title)) = marks.next_if(|(at, _)| *at <= i) {
                self.start(title);
                marked = true;
            }
            if i == 0 && !marked && !self.has_toc && block.heading {
                self.start(block.text.clone());
            }
            self.push(block);
        }
        for (_, title) in marks {
            self.start(title);
        }
    }

    fn start(&mut self, title: String) {
        // A TOC entry 第一卷 … names the volume of the chapters after it.
        if chapter::heading(&title).is_some_and(|h| h.kind == chapter::HeadingKind::Volume) {
            self.volume = Some(title.clone());
        }
        self.chapters.push(Chapter {
            number: 1,
            title,
            volume: self.volume.clone(),
            paragraphs: Vec::new(),
            skipped: Vec::new(),
            cut: Vec::new(),
            skip: None,
        });
    }

    fn current(&mut self) -> &mut Chapter {
        if self.chapters.is_empty() {
            self.chapters.push(Chapter {
                number: 0,
                title: self.fallback_title.clone(),
                volume: None,
                paragraphs: Vec::new(),
                skipped: Vec::new(),
                cut: Vec::new(),
                skip: None,
            });
        }
        self.chapters.last_mut().expect("a chapter was just pushed")
    }

    /// Adds a paragraph, except a heading that repeats the chapter title
    /// at the chapter's start.
    fn push(&mut self, block: &Block) {
        let chapter = self.current();
        if chapter.number != 0 && chapter.paragraphs.is_empty() && echoes(block, &chapter.title) {
            return;
        }
        chapter.paragraphs.push(block.text.clone());
    }

    fn extend(&mut self, paragraphs: Vec<String>) {
        self.current().paragraphs.extend(paragraphs);
    }

    /// Chapters with text, numbered like TXT chapters: front matter 0 (only
    /// when real chapters follow), then 1, 2, …
    fn finish(self) -> Vec<Chapter> {
        let mut chapters: Vec<Chapter> = self
            .chapters
            .into_iter()
            .filter(|c| !c.paragraphs.is_empty())
            .collect();
        // Site adverts and URLs are kept aside, as in TXT books.
        for chapter in &mut chapters {
            chapter.skipped = (0..chapter.paragraphs.len())
                .filter(|&i| chapter::is_advert(&chapter.paragraphs[i]))
                .collect();
        }
        if let [only] = chapters.as_mut_slice() {
            only.number = only.number.max(1);
        }
        let mut next = 1;
        for chapter in &mut chapters {
            if chapter.number != 0 {
                chapter.number = next;
                next += 1;
            }
        }
        chapters
    }
}

/// A chapter's first block that only repeats its title (`<h1>第一章 风起</h1>`).
fn echoes(block: &Block, title: &str) -> bool {
    squash(&block.text) == squash(title) || (block.heading && related(&block.text, title))
}

/// One title contains the other, spaces aside (`第一章 灯塔` / `第一章　灯塔`).
fn related(a: &str, b: &str) -> bool {
    let (a, b) = (squash(a), squash(b));
    a.contains(&b) || b.contains(&a)
}

/// Text without any whitespace, for comparing titles.
fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && *c != '\u{3000}')
        .collect()
}

fn read_entry(zip: &mut ZipArchive<Cursor<&[u8]>>, path: &str) -> Result<Vec<u8>, EpubError> {
    let name = if zip.index_for_name(path).is_some() {
        path.to_owned()
    } else {
        zip.file_names()
            .flatten()
            .find(|n| n.eq_ignore_ascii_case(path))
            .map(|n| n.into_owned())
            .ok_or_else(|| EpubError::Missing {
                part: path.to_owned(),
            })?
    };
    let read_error = |source: std::io::Error| EpubError::Read {
        part: path.to_owned(),
        source,
    };
    let file = zip
        .by_name(&name)
        .map_err(|e| read_error(std::io::Error::other(e)))?;
    let too_large = || EpubError::TooLarge {
        part: path.to_owned(),
    };
    // The size the archive declares first (a bomb stops here, unread),
    // then the bytes that really come out, never more than the limit + 1.
    if file.size() > MAX_PART_BYTES {
        return Err(too_large());
    }
    let declared = usize::try_from(file.size()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(declared);
    let mut reader = file.take(MAX_PART_BYTES + 1);
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(e)),
        };
        if bytes.len() + n > MAX_PART_BYTES as usize {
            return Err(too_large());
        }
        if bytes.capacity() - bytes.len() < n {
            // Grow by a quarter, not double, so memory stays near the
            // bytes read (at most the limit).
            let grow = (bytes.capacity() / 4).max(n);
            bytes.reserve_exact(grow.min(MAX_PART_BYTES as usize - bytes.len()));
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    Ok(bytes)
}

fn read_text(zip: &mut ZipArchive<Cursor<&[u8]>>, path: &str) -> Result<String, EpubError> {
    let bytes = read_entry(zip, path)?;
    xhtml::decode(&bytes).map_err(|_| EpubError::Text {
        part: path.to_owned(),
    })
}

/// Ruby pinyin as tone-numbered syllables (`zhǎng` → `zhang3`, `yín háng`
/// → `yin2 hang2`, `ma` → `ma5`); `None` for anything else (zhuyin, prose).
pub fn numbered_pinyin(reading: &str) -> Option<Vec<String>> {
    const MARKS: [(&str, char); 6] = [
        ("āáǎà", 'a'),
        ("ēéěè", 'e'),
        ("īíǐì", 'i'),
        ("ōóǒò", 'o'),
        ("ūúǔù", 'u'),
        ("ǖǘǚǜ", 'v'),
    ];
    let mut syllables = Vec::new();
    for raw in reading.split_whitespace() {
        let mut letters = String::new();
        let mut tone = None;
        for c in raw.to_lowercase().chars() {
            if let Some((marks, base)) = MARKS.iter().find(|(m, _)| m.contains(c)) {
                let position = marks.chars().position(|m| m == c)?;
                tone = Some(position as u8 + 1);
                letters.push(*base);
            } else if c == 'ü' {
                letters.push('v');
            } else if c.is_ascii_lowercase() {
                letters.push(c);
            } else if ('1'..='5').contains(&c) && tone.is_none() {
                tone = Some(c as u8 - b'0');
            } else {
                return None;
            }
        }
        if letters.is_empty() || letters.len() > 6 {
            return None;
        }
        syllables.push(format!("{letters}{}", tone.unwrap_or(5)));
    }
    (!syllables.is_empty()).then_some(syllables)
}

/// An error and its sources on one line.
fn one_line(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        line.push_str(": ");
        line.push_str(&e.to_string());
        source = e.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Block {
        Block {
            text: text.to_owned(),
            heading: false,
        }
    }

    fn h(text: &str) -> Block {
        Block {
            text: text.to_owned(),
            heading: true,
        }
    }

    fn mark(at: usize, title: &str) -> Vec<(usize, String)> {
        vec![(at, title.to_owned())]
    }

    fn outline(chapters: &[Chapter]) -> Vec<(usize, &str, Vec<&str>)> {
        chapters
            .iter()
            .map(|c| {
                let paragraphs = c.paragraphs.iter().map(String::as_str).collect();
                (c.number, c.title.as_str(), paragraphs)
            })
            .collect()
    }

    #[test]
    fn ruby_pinyin_becomes_tone_numbers() {
        let got = |r: &str| numbered_pinyin(r).map(|v| v.join(" "));
        assert_eq!(got("zhǎng").as_deref(), Some("zhang3"));
        assert_eq!(got("Yín háng").as_deref(), Some("yin2 hang2"));
        assert_eq!(got("lǜ ma").as_deref(), Some("lv4 ma5"));
        assert_eq!(got("zhong4").as_deref(), Some("zhong4"));
        assert_eq!(got("ㄓㄤˇ"), None);
        assert_eq!(got(""), None);
    }

    #[test]
    fn toc_titles_chapters_and_joins_unlisted_documents() {
        let mut a = Assembler::new("书", true);
        a.add_document(&[p("书名页")], vec![]);
        a.add_document(&[h("第一章 风起"), p("甲。")], mark(0, "第一章 风起"));
        a.add_document(&[p("乙。")], vec![]);
        a.add_document(&[h("尾声"), p("丙。")], mark(0, "尾声"));
        a.add_document(&[], vec![]);
        assert_eq!(
            outline(&a.finish()),
            [
                (0, "书", vec!["书名页"]),
                (1, "第一章 风起", vec!["甲。", "乙。"]),
                (2, "尾声", vec!["丙。"]),
            ]
        );
    }

    #[test]
    fn toc_anchors_split_one_document() {
        let mut a = Assembler::new("书", true);
        let blocks = [h("上"), p("甲。"), h("下"), p("乙。")];
        a.add_document(
            &blocks,
            vec![(0, "上篇".to_owned()), (2, "下篇".to_owned())],
        );
        assert_eq!(
            outline(&a.finish()),
            [(1, "上篇", vec!["甲。"]), (2, "下篇", vec!["乙。"])]
        );
    }

    #[test]
    fn several_headings_in_one_document_use_txt_rules() {
        let mut a = Assembler::new("书", true);
        let blocks = [
            p("卷首语。"),
            p("第一章 开端"),
            p("甲。"),
            h("第二章 转折"),
            p("乙。"),
        ];
        a.add_document(&blocks, mark(0, "第一卷"));
        a.add_document(&[p("第三章"), p("丙。")], vec![]);
        assert_eq!(
            outline(&a.finish()),
            [
                (1, "第一卷", vec!["卷首语。"]),
                (2, "第一章 开端", vec!["甲。"]),
                (3, "第二章 转折", vec!["乙。"]),
                (4, "第三章", vec!["丙。"]),
            ]
        );
    }

    #[test]
    fn toc_title_heading_is_dropped_before_txt_rules() {
        let mut a = Assembler::new("书", true);
        let blocks = [h("一、出海"), p("甲。"), p("第二章"), p("乙。")];
        a.add_document(&blocks, mark(0, "一、出海"));
        assert_eq!(
            outline(&a.finish()),
            [(1, "一、出海", vec!["甲。"]), (2, "第二章", vec!["乙。"])]
        );
    }

    #[test]
    fn volume_entries_name_the_chapters_after_them() {
        let mut a = Assembler::new("书", true);
        a.add_document(&[h("第一卷 北方")], mark(0, "第一卷 北方"));
        a.add_document(&[h("第一章 雪"), p("甲。")], mark(0, "第一章 雪"));
        a.add_document(&[p("第二章 风"), p("乙。")], vec![]);
        let chapters = a.finish();
        let volumes: Vec<_> = chapters.iter().map(|c| c.volume.as_deref()).collect();
        assert_eq!(volumes, [Some("第一卷 北方"), Some("第一卷 北方")]);
    }

    #[test]
    fn repeated_heading_in_next_document_continues_the_chapter() {
        let mut a = Assembler::new("书", true);
        a.add_document(&[h("第一章"), p("甲。")], mark(0, "第一章"));
        a.add_document(&[h("第一章"), p("乙。")], vec![]);
        assert_eq!(outline(&a.finish()), [(1, "第一章", vec!["甲。", "乙。"])]);
    }

    #[test]
    fn without_toc_heading_elements_start_chapters() {
        let mut a = Assembler::new("书", false);
        a.add_document(&[h("风起"), p("甲。")], vec![]);
        a.add_document(&[p("乙。")], vec![]);
        a.add_document(&[h("云涌"), p("丙。")], vec![]);
        assert_eq!(
            outline(&a.finish()),
            [(1, "风起", vec!["甲。", "乙。"]), (2, "云涌", vec!["丙。"])]
        );
        let mut a = Assembler::new("短篇", false);
        a.add_document(&[p("甲。")], vec![]);
        assert_eq!(outline(&a.finish()), [(1, "短篇", vec!["甲。"])]);
    }
}
