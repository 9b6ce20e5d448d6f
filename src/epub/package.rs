//! The EPUB package files: `META-INF/container.xml` → the OPF (metadata,
//! manifest, spine) → the table of contents (EPUB 3 nav or EPUB 2 NCX), and
//! `META-INF/encryption.xml`.

use std::collections::HashMap;

use quick_xml::Reader;
use quick_xml::escape::{resolve_html5_entity, resolve_predefined_entity};
use quick_xml::events::{BytesStart, Event};

/// A well-formedness error in a package file (the caller adds the file name).
#[derive(Debug, thiserror::Error)]
#[error("broken XML at byte {position}: {message}")]
pub struct XmlError {
    pub position: u64,
    pub message: String,
}

/// One file listed in the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Path inside the archive (resolved against the OPF, percent-decoded).
    pub path: String,
    pub media_type: String,
    pub properties: Vec<String>,
}

impl Item {
    pub fn has_property(&self, property: &str) -> bool {
        self.properties.iter().any(|p| p == property)
    }

    pub fn is_xhtml(&self) -> bool {
        matches!(
            self.media_type.as_str(),
            "application/xhtml+xml" | "text/html" | "application/xml" | "text/xml"
        ) || (self.media_type.is_empty()
            && [".xhtml", ".html", ".htm"]
                .iter()
                .any(|ext| self.path.to_ascii_lowercase().ends_with(ext)))
    }
}

/// One entry of the spine (reading order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpineItem {
    pub idref: String,
    pub linear: bool,
}

/// What the OPF says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Package {
    pub title: Option<String>,
    pub author: Option<String>,
    pub language: Option<String>,
    /// Manifest id of the cover image named by `<meta name="cover">` (EPUB 2).
    pub cover_id: Option<String>,
    pub manifest: HashMap<String, Item>,
    pub spine: Vec<SpineItem>,
    /// Manifest id of the NCX (`<spine toc="…">`).
    pub ncx_id: Option<String>,
}

impl Package {
    /// The manifest item of the cover image, if the book names one.
    pub fn cover(&self) -> Option<&Item> {
        let image = |item: &&Item| item.media_type.starts_with("image/");
        self.manifest
            .values()
            .find(|item| item.has_property("cover-image"))
            .or_else(|| {
                // `<meta name="cover" content="…">` names an id, or at times a file.
                let named = self.cover_id.as_ref()?;
                self.manifest
                    .get(named)
                    .or_else(|| {
                        let named = named.trim_start_matches("../");
                        self.manifest
                            .values()
                            .find(|item| item.path.ends_with(named))
                    })
                    .filter(image)
            })
            .or_else(|| {
                let mut ids: Vec<_> = self.manifest.keys().collect();
                ids.sort();
                ids.into_iter()
                    .filter(|id| id.to_ascii_lowercase().contains("cover"))
                    .map(|id| &self.manifest[id])
                    .find(image)
            })
    }

    /// The EPUB 3 navigation document.
    pub fn nav(&self) -> Option<&Item> {
        self.manifest.values().find(|item| item.has_property("nav"))
    }

    /// The EPUB 2 NCX.
    pub fn ncx(&self) -> Option<&Item> {
        self.ncx_id
            .as_ref()
            .and_then(|id| self.manifest.get(id))
            .or_else(|| {
                self.manifest
                    .values()
                    .find(|item| item.media_type == "application/x-dtbncx+xml")
            })
    }
}

/// One entry of the table of contents, flattened in reading order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TocEntry {
    pub title: String,
    /// Archive path of the target file.
    pub path: String,
    pub fragment: Option<String>,
}

/// The `full-path` of the first rootfile in `container.xml`.
pub fn rootfile(xml: &str) -> Result<Option<String>, XmlError> {
    let mut found = None;
    walk(xml, |event| {
        if let XmlEvent::Open(e, _) = event
            && e.local_name().as_ref() == "rootfile"
            && found.is_none()
        {
            found = attr(e, "full-path");
        }
    })?;
    Ok(found.filter(|p| !p.is_empty()))
}

/// Parses the OPF at archive path `opf_path`.
pub fn parse_opf(xml: &str, opf_path: &str) -> Result<Package, XmlError> {
    let base = parent(opf_path);
    let mut package = Package::default();
    let mut capture: Option<(&'static str, String)> = None;
    walk(xml, |event| match event {
        XmlEvent::Open(e, path) => {
            let in_metadata = path.iter().any(|n| n == "metadata");
            match e.local_name().as_ref() {
                "title" if in_metadata => capture = Some(("title", String::new())),
                "creator" if in_metadata => capture = Some(("creator", String::new())),
                "language" if in_metadata => capture = Some(("language", String::new())),
                "meta" if attr(e, "name").as_deref() == Some("cover") => {
                    package.cover_id = attr(e, "content");
                }
                "item" => {
                    if let (Some(id), Some(href)) = (attr(e, "id"), attr(e, "href")) {
                        let (path, _) = resolve(&base, &href);
                        package.manifest.entry(id).or_insert(Item {
                            path,
                            media_type: attr(e, "media-type").unwrap_or_default(),
                            properties: attr(e, "properties")
                                .unwrap_or_default()
                                .split_ascii_whitespace()
                                .map(str::to_owned)
                                .collect(),
                        });
                    }
                }
                "spine" => package.ncx_id = attr(e, "toc"),
                "itemref" => {
                    if let Some(idref) = attr(e, "idref") {
                        package.spine.push(SpineItem {
                            idref,
                            linear: attr(e, "linear").as_deref() != Some("no"),
                        });
                    }
                }
                _ => {}
            }
        }
        XmlEvent::Text(text) => {
            if let Some((_, buf)) = &mut capture {
                buf.push_str(text);
            }
        }
        XmlEvent::Close(name) => {
            if let Some((field, buf)) = capture.take_if(|(field, _)| name == *field) {
                let value = collapse(&buf);
                let slot = match field {
                    "title" => &mut package.title,
                    "creator" => &mut package.author,
                    _ => &mut package.language,
                };
                if slot.is_none() && !value.is_empty() {
                    *slot = Some(value);
                }
            }
        }
    })?;
    Ok(package)
}

/// Parses an EPUB 3 navigation document at `nav_path`: the links of its
/// `<nav epub:type="toc">`.
pub fn parse_nav(xml: &str, nav_path: &str) -> Result<Vec<TocEntry>, XmlError> {
    let base = parent(nav_path);
    let mut entries = Vec::new();
    let mut toc_depth: Option<usize> = None;
    let mut link: Option<(String, String)> = None;
    walk(xml, |event| match event {
        XmlEvent::Open(e, path) => {
            let name = e.local_name();
            if toc_depth.is_none() && name.as_ref() == "nav" && is_toc_nav(e) {
                toc_depth = Some(path.len());
            } else if toc_depth.is_some()
                && name.as_ref() == "a"
                && let Some(href) = attr(e, "href")
            {
                link = Some((href, String::new()));
            }
        }
        XmlEvent::Text(text) => {
            if let Some((_, title)) = &mut link {
                title.push_str(text);
            }
        }
        XmlEvent::Close(name) => {
            if name == "a"
                && let Some((href, title)) = link.take()
            {
                let (path, fragment) = resolve(&base, &href);
                entries.push(TocEntry {
                    title: collapse(&title),
                    path,
                    fragment,
                });
            } else if name == "nav" && toc_depth.is_some() {
                toc_depth = None;
            }
        }
    })?;
    Ok(entries)
}

fn is_toc_nav(e: &BytesStart<'_>) -> bool {
    e.attributes().flatten().any(|a| {
        let key = a.key.as_ref();
        (key.ends_with(":type") || key == "role")
            && a.value
                .split_ascii_whitespace()
                .any(|t| t == "toc" || t == "doc-toc")
    })
}

/// Parses an EPUB 2 NCX at `ncx_path`: every `navPoint` of the `navMap`.
pub fn parse_ncx(xml: &str, ncx_path: &str) -> Result<Vec<TocEntry>, XmlError> {
    let base = parent(ncx_path);
    let mut entries = Vec::new();
    let mut label = String::new();
    let mut in_label = false;
    walk(xml, |event| match event {
        XmlEvent::Open(e, path) => {
            if !path.iter().any(|n| n == "navMap") {
                return;
            }
            match e.local_name().as_ref() {
                "navPoint" => label.clear(),
                "navLabel" => in_label = true,
                "content" => {
                    if let Some(src) = attr(e, "src") {
                        let (path, fragment) = resolve(&base, &src);
                        entries.push(TocEntry {
                            title: collapse(&label),
                            path,
                            fragment,
                        });
                    }
                }
                _ => {}
            }
        }
        XmlEvent::Text(text) => {
            if in_label {
                label.push_str(text);
            }
        }
        XmlEvent::Close(name) => {
            if name == "navLabel" {
                in_label = false;
            }
        }
    })?;
    Ok(entries)
}

/// Archive paths of files that `encryption.xml` says are encrypted with
/// something other than font obfuscation (which is not DRM).
pub fn encrypted_files(xml: &str) -> Result<Vec<String>, XmlError> {
    const FONT_OBFUSCATION: [&str; 2] = [
        "http://www.idpf.org/2008/embedding",
        "http://ns.adobe.com/pdf/enc#RC",
    ];
    let mut files = Vec::new();
    let mut algorithm: Option<String> = None;
    let mut uri: Option<String> = None;
    walk(xml, |event| match event {
        XmlEvent::Open(e, _) => match e.local_name().as_ref() {
            "EncryptedData" => (algorithm, uri) = (None, None),
            "EncryptionMethod" => algorithm = attr(e, "Algorithm"),
            "CipherReference" => uri = attr(e, "URI"),
            _ => {}
        },
        XmlEvent::Text(_) => {}
        XmlEvent::Close(name) => {
            if name == "EncryptedData"
                && let Some(uri) = uri.take()
                && !algorithm
                    .take()
                    .is_some_and(|a| FONT_OBFUSCATION.contains(&a.as_str()))
            {
                files.push(resolve("", &uri).0);
            }
        }
    })?;
    Ok(files)
}

/// The directory part of an archive path (`OEBPS/content.opf` → `OEBPS/`).
pub fn parent(path: &str) -> String {
    path.rfind('/')
        .map_or_else(String::new, |i| path[..=i].to_owned())
}

/// Resolves a (percent-encoded, relative) href against the directory `base`:
/// archive path and fragment.
pub fn resolve(base: &str, href: &str) -> (String, Option<String>) {
    let (file, fragment) = match href.split_once('#') {
        Some((file, fragment)) => (file, Some(percent_decode(fragment))),
        None => (href, None),
    };
    let file = file.split_once('?').map_or(file, |(f, _)| f);
    let joined = if file.starts_with('/') {
        percent_decode(file)
    } else {
        format!("{base}{}", percent_decode(file))
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            _ => parts.push(part),
        }
    }
    (parts.join("/"), fragment.filter(|f| !f.is_empty()))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whitespace runs → one space, trimmed.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn attr(e: &BytesStart<'_>, local: &str) -> Option<String> {
    e.attributes().flatten().find_map(|a| {
        (a.key.local_name().as_ref() == local).then(|| {
            a.normalized_value_with(quick_xml::XmlVersion::Implicit1_0, 8, |name| {
                resolve_predefined_entity(name).or_else(|| resolve_html5_entity(name))
            })
            .map(|v| v.into_owned())
            .unwrap_or_else(|_| a.value.into_owned())
        })
    })
}

/// What [`walk`] reports: an element opening (with the names of its open
/// ancestors), text (entities decoded), an element closing (local name).
enum XmlEvent<'a, 'e> {
    Open(&'a BytesStart<'e>, &'a [String]),
    Text(&'a str),
    Close(&'a str),
}

/// Streams a well-formed XML file; end tags must match, entities are XML's
/// and HTML's named ones.
fn walk(xml: &str, mut visit: impl FnMut(XmlEvent<'_, '_>)) -> Result<(), XmlError> {
    let mut reader = Reader::from_str(xml.trim_start_matches('\u{feff}'));
    reader.config_mut().allow_dangling_amp = true;
    let mut open: Vec<String> = Vec::new();
    let error = |reader: &Reader<&[u8]>, message: String| XmlError {
        position: reader.error_position(),
        message,
    };
    loop {
        let event = reader
            .read_event()
            .map_err(|e| error(&reader, e.to_string()))?;
        match event {
            Event::Start(e) => {
                visit(XmlEvent::Open(&e, &open));
                open.push(e.local_name().as_ref().to_owned());
            }
            Event::Empty(e) => {
                visit(XmlEvent::Open(&e, &open));
                let name = e.local_name().as_ref().to_owned();
                visit(XmlEvent::Close(&name));
            }
            Event::End(_) => {
                if let Some(name) = open.pop() {
                    visit(XmlEvent::Close(&name));
                }
            }
            Event::Text(t) => visit(XmlEvent::Text(&t.xml10_content())),
            Event::CData(t) => visit(XmlEvent::Text(&t.xml10_content())),
            Event::GeneralRef(r) => {
                let text = if r.is_char_ref() {
                    r.resolve_char_ref()
                        .ok()
                        .flatten()
                        .map(String::from)
                        .unwrap_or_default()
                } else {
                    let name = r.xml10_content();
                    resolve_predefined_entity(&name)
                        .or_else(|| resolve_html5_entity(&name))
                        .unwrap_or_default()
                        .to_owned()
                };
                visit(XmlEvent::Text(&text));
            }
            Event::Eof => break,
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
        }
    }
    match open.last() {
        Some(name) => Err(XmlError {
            position: reader.buffer_position(),
            message: format!("<{name}> is never closed"),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_relative_hrefs() {
        assert_eq!(
            resolve("OEBPS/", "Text/ch%201.xhtml#c2"),
            ("OEBPS/Text/ch 1.xhtml".to_owned(), Some("c2".to_owned()))
        );
        assert_eq!(
            resolve("OEBPS/Text/", "../Images/a.png"),
            ("OEBPS/Images/a.png".to_owned(), None)
        );
        assert_eq!(resolve("", "content.opf").0, "content.opf");
        assert_eq!(parent("OEBPS/content.opf"), "OEBPS/");
    }

    #[test]
    fn reads_container_and_opf() {
        let container = r#"<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OPS/book.opf" media-type="application/oebps-package+xml"/></rootfiles></container>"#;
        assert_eq!(
            rootfile(container).unwrap().as_deref(),
            Some("OPS/book.opf")
        );
        let opf = r#"<package xmlns="http://www.idpf.org/2007/opf" version="2.0">
          <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
            <dc:title> 夜 航 </dc:title><dc:creator>某甲</dc:creator><dc:creator>某乙</dc:creator>
            <dc:language>zh-CN</dc:language><meta name="cover" content="img"/>
          </metadata>
          <manifest>
            <item id="img" href="images/c.jpg" media-type="image/jpeg"/>
            <item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>
            <item id="c1" href="text/c1.xhtml" media-type="application/xhtml+xml"/>
          </manifest>
          <spine toc="ncx"><itemref idref="c1"/><itemref idref="img" linear="no"/></spine>
        </package>"#;
        let p = parse_opf(opf, "OPS/book.opf").unwrap();
        assert_eq!(p.title.as_deref(), Some("夜 航"));
        assert_eq!(p.author.as_deref(), Some("某甲"));
        assert_eq!(p.language.as_deref(), Some("zh-CN"));
        assert_eq!(p.cover().unwrap().path, "OPS/images/c.jpg");
        assert_eq!(p.ncx().unwrap().path, "OPS/toc.ncx");
        assert_eq!(p.manifest["c1"].path, "OPS/text/c1.xhtml");
        assert_eq!(p.spine.len(), 2);
        assert!(p.spine[0].linear && !p.spine[1].linear);
        assert!(parse_opf("<package><manifest></package>", "x.opf").is_err());
        let by_file = opf.replace(r#"content="img""#, r#"content="images/c.jpg""#);
        let p = parse_opf(&by_file, "OPS/book.opf").unwrap();
        assert_eq!(p.cover().unwrap().path, "OPS/images/c.jpg");
    }

    #[test]
    fn reads_nav_and_ncx() {
        let nav = r#"<html xmlns:epub="http://www.idpf.org/2007/ops"><body>
          <nav epub:type="landmarks"><ol><li><a href="c1.xhtml">封面</a></li></ol></nav>
          <nav epub:type="toc"><ol><li><a href="c1.xhtml">第一章&#160;起</a>
            <ol><li><a href="c1.xhtml#s2"><span>第二</span>节</a></li></ol></li></ol></nav>
        </body></html>"#;
        let entries = parse_nav(nav, "EPUB/nav.xhtml").unwrap();
        let got: Vec<_> = entries
            .iter()
            .map(|e| (e.title.as_str(), e.path.as_str(), e.fragment.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("第一章 起", "EPUB/c1.xhtml", None),
                ("第二节", "EPUB/c1.xhtml", Some("s2"))
            ]
        );
        let ncx = r#"<ncx><docTitle><text>书</text></docTitle><navMap>
          <navPoint id="a"><navLabel><text>第一卷</text></navLabel><content src="t/v1.html"/>
            <navPoint id="b"><navLabel><text>第一章</text></navLabel><content src="t/c1.html#x"/></navPoint>
          </navPoint></navMap></ncx>"#;
        let entries = parse_ncx(ncx, "toc.ncx").unwrap();
        let got: Vec<_> = entries
            .iter()
            .map(|e| (e.title.as_str(), e.path.as_str()))
            .collect();
        assert_eq!(got, [("第一卷", "t/v1.html"), ("第一章", "t/c1.html")]);
    }

    #[test]
    fn font_obfuscation_is_not_drm() {
        let xml = r#"<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" xmlns:enc="http://www.w3.org/2001/04/xmlenc#">
          <enc:EncryptedData><enc:EncryptionMethod Algorithm="http://www.idpf.org/2008/embedding"/>
            <enc:CipherData><enc:CipherReference URI="OEBPS/fonts/a.ttf"/></enc:CipherData></enc:EncryptedData>
          <enc:EncryptedData><enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
            <enc:CipherData><enc:CipherReference URI="OEBPS/c1.xhtml"/></enc:CipherData></enc:EncryptedData>
        </encryption>"#;
        assert_eq!(encrypted_files(xml).unwrap(), ["OEBPS/c1.xhtml"]);
    }
}
