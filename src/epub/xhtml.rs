//! One XHTML content document → paragraphs: every block element (`p`, `div`,
//! `h1`–`h6`, `li`, …) and every `<br>` ends a paragraph; ruby keeps its base
//! text and hands its reading to the lexicon; footnote markers, notes,
//! `script`, `style` and the `head` are dropped; entities are decoded.

use std::collections::HashMap;

use quick_xml::Reader;
use quick_xml::escape::{resolve_html5_entity, resolve_predefined_entity};
use quick_xml::events::{BytesRef, BytesStart, Event};

use crate::text::is_han;

/// Why a content document cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum XhtmlError {
    #[error("broken XHTML at byte {position}: {message}")]
    Syntax { position: u64, message: String },
    #[error("broken XHTML at byte {position}: </{found}> closes <{open}>")]
    Mismatch {
        position: u64,
        found: String,
        open: String,
    },
    #[error("broken XHTML: <{open}> is never closed")]
    Unclosed { open: String },
    #[error("not valid {encoding} text")]
    Encoding { encoding: &'static str },
}

/// A paragraph of a content document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub text: String,
    /// The paragraph came from a heading element (`h1`–`h6`).
    pub heading: bool,
}

/// The readable content of one XHTML file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Document {
    pub blocks: Vec<Block>,
    /// Element `id` → index of the block that holds the element's first text
    /// (equal to `blocks.len()` for an anchor after the last text).
    pub anchors: HashMap<String, usize>,
    /// Ruby base text → its reading (`<ruby>字<rt>zì</rt></ruby>`), in
    /// order, repeats included.
    pub readings: Vec<(String, String)>,
    /// Number of links (`<a href>`) and of characters inside them / in all.
    pub links: usize,
    pub link_chars: usize,
    pub chars: usize,
}

impl Document {
    /// A page that is mostly links (a table of contents in the spine).
    pub fn is_link_list(&self) -> bool {
        self.links >= 3 && self.link_chars * 5 >= self.chars * 4
    }
}

/// Parses an XHTML content document (raw bytes, any declared encoding).
pub fn parse(bytes: &[u8]) -> Result<Document, XhtmlError> {
    let text = decode(bytes)?;
    let mut reader = Reader::from_str(&text);
    let config = reader.config_mut();
    config.check_end_names = false;
    config.allow_unmatched_ends = true;
    config.allow_dangling_amp = true;
    let mut doc = Builder::default();
    loop {
        let event = reader.read_event().map_err(|e| XhtmlError::Syntax {
            position: reader.error_position(),
            message: e.to_string(),
        })?;
        match event {
            Event::Start(e) => {
                check_attributes(&e, reader.buffer_position())?;
                let name = local_name(&e);
                let void = is_void(&name);
                doc.open(&e, name);
                if void {
                    doc.close_top();
                }
            }
            Event::Empty(e) => {
                check_attributes(&e, reader.buffer_position())?;
                let name = local_name(&e);
                doc.open(&e, name);
                doc.close_top();
            }
            Event::End(e) => {
                let name = e.local_name().as_ref().to_ascii_lowercase();
                match doc.stack.last() {
                    Some(open) if open.name == name => doc.close_top(),
                    _ if is_void(&name) => {}
                    // HTML leaves the end tags of `p`, `li`, … out: close them.
                    Some(_) if doc.closes_implicitly(&name) => {
                        while doc.stack.last().is_some_and(|open| open.name != name) {
                            doc.close_top();
                        }
                        doc.close_top();
                    }
                    Some(open) => {
                        return Err(XhtmlError::Mismatch {
                            position: reader.buffer_position(),
                            found: name,
                            open: open.name.clone(),
                        });
                    }
                    None => {
                        return Err(XhtmlError::Syntax {
                            position: reader.buffer_position(),
                            message: format!("</{name}> closes nothing"),
                        });
                    }
                }
            }
            Event::Text(t) => doc.text(&t.xml10_content()),
            Event::CData(t) => doc.text(&t.xml10_content()),
            Event::GeneralRef(r) => {
                let resolved = resolve_ref(&r);
                doc.text(&resolved);
            }
            Event::Eof => break,
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
        }
    }
    if let Some(open) = doc.stack.last() {
        return Err(XhtmlError::Unclosed {
            open: open.name.clone(),
        });
    }
    doc.flush();
    Ok(doc.finish())
}

/// Decodes the bytes of an XML file: a BOM or the encoding in the XML
/// declaration wins, UTF-8 otherwise.
pub fn decode(bytes: &[u8]) -> Result<String, XhtmlError> {
    let (encoding, body) = match encoding_rs::Encoding::for_bom(bytes) {
        Some((enc, bom)) => (enc, &bytes[bom..]),
        None => (
            declared_encoding(bytes).unwrap_or(encoding_rs::UTF_8),
            bytes,
        ),
    };
    let (text, had_errors) = encoding.decode_without_bom_handling(body);
    if had_errors {
        return Err(XhtmlError::Encoding {
            encoding: encoding.name(),
        });
    }
    Ok(text.into_owned())
}

/// The `encoding="…"` of an ASCII-compatible XML declaration.
fn declared_encoding(bytes: &[u8]) -> Option<&'static encoding_rs::Encoding> {
    let head = &bytes[..bytes.len().min(200)];
    let head = std::str::from_utf8(head)
        .ok()
        .or_else(|| std::str::from_utf8(&head[..head.iter().position(|&b| b >= 0x80)?]).ok())?;
    let decl = head.strip_prefix("<?xml")?;
    let decl = &decl[..decl.find("?>")?];
    let rest = &decl[decl.find("encoding")? + "encoding".len()..];
    let rest = rest.trim_start().strip_prefix('=')?.trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let label = &rest[1..][..rest[1..].find(quote)?];
    let encoding = encoding_rs::Encoding::for_label(label.trim().as_bytes())?;
    // UTF-16 without a BOM cannot have been read as ASCII: ignore the label.
    (encoding.is_ascii_compatible()).then_some(encoding)
}

fn resolve_ref(r: &BytesRef<'_>) -> String {
    if r.is_char_ref() {
        return match r.resolve_char_ref() {
            Ok(Some(c)) => c.to_string(),
            _ => String::new(),
        };
    }
    let name = r.xml10_content();
    resolve_predefined_entity(&name)
        .or_else(|| resolve_html5_entity(&name))
        .map_or_else(|| format!("&{name};"), str::to_owned)
}

fn check_attributes(e: &BytesStart<'_>, position: u64) -> Result<(), XhtmlError> {
    for attribute in e.attributes() {
        attribute.map_err(|err| XhtmlError::Syntax {
            position,
            message: err.to_string(),
        })?;
    }
    Ok(())
}

fn local_name(e: &BytesStart<'_>) -> String {
    e.local_name().as_ref().to_ascii_lowercase()
}

/// Elements whose end (and start) closes the paragraph being built.
fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "li"
            | "br"
            | "hr"
            | "blockquote"
            | "section"
            | "article"
            | "header"
            | "footer"
            | "aside"
            | "main"
            | "pre"
            | "dl"
            | "dt"
            | "dd"
            | "ul"
            | "ol"
            | "table"
            | "tr"
            | "td"
            | "th"
            | "caption"
            | "figure"
            | "figcaption"
            | "address"
            | "center"
            | "body"
            | "html"
    )
}

/// HTML elements that never have content (tolerated without `/>`).
fn is_void(name: &str) -> bool {
    matches!(
        name,
        "area"
            | "base"
            | "br"
            | "col"
            | "embed"
            | "hr"
            | "img"
            | "input"
            | "link"
            | "meta"
            | "param"
            | "source"
            | "track"
            | "wbr"
    )
}

/// Elements whose whole content is never read aloud.
fn is_skipped(name: &str) -> bool {
    matches!(
        name,
        "head" | "script" | "style" | "rp" | "nav" | "svg" | "template" | "noscript" | "object"
    )
}

/// Footnotes, their markers and back links, by `epub:type`, ARIA `role`
/// or the class names converters give them (`footnotes`, `footnote-back`).
fn is_note(e: &BytesStart<'_>) -> bool {
    e.attributes().flatten().any(|a| {
        let key = a.key.as_ref();
        let semantic = key == "role" || key.ends_with(":type") || key == "type" || key == "class";
        semantic
            && a.value.split_ascii_whitespace().any(|token| {
                matches!(
                    token.trim_start_matches("doc-"),
                    "noteref"
                        | "footnote"
                        | "footnotes"
                        | "endnote"
                        | "endnotes"
                        | "rearnote"
                        | "rearnotes"
                        | "biblioref"
                        | "backlink"
                        | "footnote-back"
                )
            })
    })
}

/// `[1]`, `1`, `注1`, `①`, `*` — what a footnote link or superscript shows.
fn is_marker(text: &str) -> bool {
    let inner = trim(text)
        .trim_start_matches(['[', '［', '(', '（', '〔', '【'])
        .trim_end_matches([']', '］', ')', '）', '〕', '】']);
    let inner = inner
        .strip_prefix('注')
        .or_else(|| inner.strip_prefix('註'))
        .unwrap_or(inner);
    !inner.is_empty()
        && inner.chars().count() <= 4
        && inner.chars().all(|c| {
            c.is_ascii_digit()
                || ('０'..='９').contains(&c)
                || ('①'..='⑳').contains(&c)
                || matches!(c, '*' | '※' | '＊' | '†')
        })
}

#[derive(Debug)]
struct Frame {
    name: String,
    /// Nothing inside is read (script, style, notes, `rt` text goes to ruby).
    skip: bool,
    /// Length of the paragraph buffer when this link/superscript opened.
    marker_from: Option<usize>,
    /// An internal link (`href="…#…"`), or a superscript holding one.
    links: bool,
    /// Any link (`<a href>`).
    href: bool,
}

#[derive(Debug, Default)]
struct Builder {
    stack: Vec<Frame>,
    skipping: usize,
    headings: usize,
    pre: usize,
    line: String,
    line_heading: bool,
    pending_space: bool,
    pending_break: bool,
    blocks: Vec<Block>,
    anchors: HashMap<String, usize>,
    ruby: Option<Ruby>,
    readings: Vec<(String, String)>,
    link_depth: usize,
    links: usize,
    link_chars: usize,
    chars: usize,
}

#[derive(Debug, Default)]
struct Ruby {
    base: String,
    reading: Option<String>,
}

impl Builder {
    fn open(&mut self, e: &BytesStart<'_>, name: String) {
        if self.skipping == 0
            && let Some(id) = e
                .attributes()
                .flatten()
                .find(|a| a.key.as_ref() == "id" || a.key.as_ref() == "xml:id")
        {
            let id = id.value.into_owned();
            self.anchors.entry(id).or_insert(self.blocks.len());
        }
        if is_block(&name) {
            self.flush();
        }
        let skip = is_skipped(&name) || is_note(e);
        if skip {
            self.skipping += 1;
        }
        let href = (name == "a")
            .then(|| e.attributes().flatten().find(|a| a.key.as_ref() == "href"))
            .flatten();
        let internal_link = href.as_ref().is_some_and(|a| a.value.contains('#'));
        let href = href.is_some();
        if href {
            self.link_depth += 1;
            self.links += 1;
        }
        let marker_from = matches!(name.as_str(), "a" | "sup").then_some(self.line.len());
        if internal_link && let Some(sup) = self.stack.iter_mut().rev().find(|f| f.name == "sup") {
            sup.links = true;
        }
        match name.as_str() {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => self.headings += 1,
            "pre" => self.pre += 1,
            "ruby" if self.ruby.is_none() => self.ruby = Some(Ruby::default()),
            "rt" => {
                if let Some(ruby) = &mut self.ruby {
                    ruby.reading = Some(String::new());
                }
            }
            _ => {}
        }
        self.stack.push(Frame {
            name,
            skip,
            marker_from,
            links: internal_link,
            href,
        });
    }

    /// True if `name` is open and only elements whose end tag HTML lets
    /// one leave out (`p`, `li`, `td`, …) are open inside it.
    fn closes_implicitly(&self, name: &str) -> bool {
        let inner = self.stack.iter().rev().take_while(|f| f.name != name);
        let mut inner_count = 0;
        for frame in inner {
            inner_count += 1;
            if !matches!(
                frame.name.as_str(),
                "p" | "li" | "dt" | "dd" | "tr" | "td" | "th" | "rb" | "rt" | "rp" | "option"
            ) {
                return false;
            }
        }
        inner_count < self.stack.len()
    }

    fn close_top(&mut self) {
        let Some(frame) = self.stack.pop() else {
            return;
        };
        if frame.skip {
            self.skipping -= 1;
        }
        if frame.href {
            self.link_depth -= 1;
        }
        if frame.links
            && let Some(from) = frame.marker_from
            && self.line.get(from..).is_some_and(is_marker)
        {
            self.line.truncate(from);
        }
        match frame.name.as_str() {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => self.headings -= 1,
            "pre" => self.pre -= 1,
            "rt" => self.end_reading(),
            "ruby" => self.ruby = None,
            _ => {}
        }
        if is_block(&frame.name) {
            self.flush();
        }
    }

    fn end_reading(&mut self) {
        let Some(ruby) = &mut self.ruby else { return };
        let reading = ruby.reading.take().unwrap_or_default();
        let (base, reading) = (trim(&ruby.base), trim(&reading));
        if !base.is_empty() && !reading.is_empty() {
            self.readings.push((base.to_owned(), reading.to_owned()));
        }
        ruby.base.clear();
    }

    fn text(&mut self, text: &str) {
        if let Some(reading) = self.ruby.as_mut().and_then(|r| r.reading.as_mut()) {
            reading.push_str(text);
            return;
        }
        if self.skipping > 0 {
            return;
        }
        if let Some(ruby) = &mut self.ruby {
            ruby.base.push_str(text);
        }
        for c in text.chars() {
            if self.pre > 0 && c == '\n' {
                self.flush();
            } else if matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0c') {
                self.pending_space = true;
                self.pending_break |= c == '\n';
            } else {
                self.push_char(c);
            }
        }
    }

    fn push_char(&mut self, c: char) {
        if self.pending_space && !self.line.is_empty() {
            // A line break between two East Asian characters is no space
            // (CSS Text segment-break rule); other whitespace is one space.
            let joined = self.pending_break
                && self.line.chars().next_back().is_some_and(is_wide)
                && is_wide(c);
            if !joined {
                self.line.push(' ');
            }
        }
        self.pending_space = false;
        self.pending_break = false;
        self.line.push(c);
        self.line_heading |= self.headings > 0;
        self.chars += 1;
        if self.link_depth > 0 {
            self.link_chars += 1;
        }
    }

    fn flush(&mut self) {
        let text = trim(&self.line);
        if !text.is_empty() {
            self.blocks.push(Block {
                text: text.to_owned(),
                heading: self.line_heading,
            });
        }
        self.line.clear();
        self.line_heading = false;
        self.pending_space = false;
        self.pending_break = false;
    }

    fn finish(self) -> Document {
        Document {
            blocks: self.blocks,
            anchors: self.anchors,
            readings: self.readings,
            links: self.links,
            link_chars: self.link_chars,
            chars: self.chars,
        }
    }
}

/// Trims ASCII and full-width spaces (and a stray BOM) like TXT lines.
fn trim(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || c == '\u{3000}' || c == '\u{feff}')
}

fn is_wide(c: char) -> bool {
    is_han(c) || ('\u{3000}'..='\u{303f}').contains(&c) || ('\u{ff00}'..='\u{ffef}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(xhtml: &str) -> Vec<String> {
        parse(xhtml.as_bytes())
            .unwrap()
            .blocks
            .into_iter()
            .map(|b| b.text)
            .collect()
    }

    #[test]
    fn blocks_and_breaks_make_paragraphs() {
        let got = texts(
            "<html><head><title>不读</title><style>p{}</style></head><body>\
             <h1>第一章 雨夜</h1><p>　　灯亮了。</p><div>门开了，<br/>风进来。</div>\
             <ul><li>一</li><li>二</li></ul><script>var a;</script></body></html>",
        );
        assert_eq!(
            got,
            [
                "第一章 雨夜",
                "灯亮了。",
                "门开了，",
                "风进来。",
                "一",
                "二"
            ]
        );
    }

    #[test]
    fn entities_and_whitespace() {
        let got = texts(
            "<body><p>甲&amp;乙&#x4e19;&#19969;&hellip;&nbsp;x</p><p>他走\n  了。 a\n b</p></body>",
        );
        assert_eq!(got, ["甲&乙丙丁…\u{a0}x", "他走了。 a b"]);
    }

    #[test]
    fn ruby_keeps_base_and_reading() {
        let doc = parse(
            "<body><p>他<ruby>长<rp>(</rp><rt>zhǎng</rt><rp>)</rp></ruby>大了，\
             <ruby>银<rt>yín</rt>行<rt>háng</rt></ruby>关门。</p></body>"
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(doc.blocks[0].text, "他长大了，银行关门。");
        assert_eq!(
            doc.readings,
            [
                ("长".to_owned(), "zhǎng".to_owned()),
                ("银".to_owned(), "yín".to_owned()),
                ("行".to_owned(), "háng".to_owned())
            ]
        );
    }

    #[test]
    fn footnotes_are_dropped() {
        let got = texts(
            "<body xmlns:epub=\"http://www.idpf.org/2007/ops\"><p>江南<a href=\"#n1\">[1]</a>多雨\
             <sup><a href=\"notes.xhtml#n2\">2</a></sup>，<a epub:type=\"noteref\" href=\"#n3\">注</a>\
             10<sup>3</sup>年。</p><aside epub:type=\"footnote\" id=\"n1\"><p>注释</p></aside>\
             <div class=\"footnotes\"><ol><li id=\"n2\"><p>另一条<a href=\"#r2\" class=\"footnote-back\">↩</a></p></li></ol></div></body>",
        );
        assert_eq!(got, ["江南多雨，103年。"]);
    }

    #[test]
    fn anchors_point_at_blocks() {
        let doc = parse(
            "<body><h2 id=\"c1\">一</h2><p>甲</p><h2 id=\"c2\">二</h2><p>乙</p><a id=\"end\"/></body>"
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(doc.anchors["c1"], 0);
        assert_eq!(doc.anchors["c2"], 2);
        assert_eq!(doc.anchors["end"], 4);
        assert!(doc.blocks[2].heading && !doc.blocks[3].heading);
    }

    #[test]
    fn link_lists_are_recognised() {
        let toc = "<body><h1>目录</h1><p><a href=\"c1.xhtml\">第一章 起锚</a></p>\
                   <p><a href=\"c2.xhtml\">第二章 风暴</a></p><p><a href=\"c3.xhtml\">第三章 靠岸</a></p></body>";
        assert!(parse(toc.as_bytes()).unwrap().is_link_list());
        let prose = "<body><p>他读完<a href=\"c1.xhtml\">第一章</a>，又翻到<a href=\"#x\">后面</a>，\
                     再看<a href=\"c3.xhtml\">第三章</a>，天已经亮了，窗外的船都出海了。</p></body>";
        assert!(!parse(prose.as_bytes()).unwrap().is_link_list());
    }

    #[test]
    fn html_void_elements_and_optional_end_tags_are_tolerated() {
        assert_eq!(
            texts("<body><p>一<br>二<img src=\"a.png\"></p></body>"),
            ["一", "二"]
        );
        assert_eq!(
            texts("<body><ul><li>甲<li>乙</ul><p>丙</body>"),
            ["甲", "乙", "丙"]
        );
    }

    #[test]
    fn broken_markup_is_an_error() {
        for bad in [
            "<body><p>未完</p>",
            "<body><p><b>未完</p></body>",
            "<body><p>未完</div></body>",
            "<body><p class=>x</p></body>",
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn declared_encoding_is_used() {
        let (bytes, _, _) = encoding_rs::GBK.encode("<p>中文</p>");
        let mut doc = b"<?xml version=\"1.0\" encoding=\"GBK\"?>".to_vec();
        doc.extend_from_slice(&bytes);
        assert_eq!(parse(&doc).unwrap().blocks[0].text, "中文");
        assert!(parse(b"<p>\xff\xfe\xfa</p>").is_err());
    }
}
