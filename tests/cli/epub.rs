//! EPUB input: fixtures are built here with a zip writer, read through the
//! real binary (`tingshu build`) and the library's `read_book`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tingshu::book::{BookFormat, read_book};
use tingshu::text::chapter::split_chapters;
use zip::write::SimpleFileOptions;

use crate::support::cli::Tingshu;
use crate::support::ffmpeg::{self, ffprobe};
use crate::support::services::shared;

/// The smallest valid PNG header, as a stand-in cover image.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0";

/// One content document of a fixture book.
struct Doc {
    file: String,
    /// Title of the TOC entry pointing at this document, if any.
    toc: Option<String>,
    body: String,
}

fn doc(file: &str, toc: Option<&str>, body: &str) -> Doc {
    Doc {
        file: file.to_owned(),
        toc: toc.map(str::to_owned),
        body: body.to_owned(),
    }
}

/// Archive members: (path, bytes).
type Files = Vec<(String, Vec<u8>)>;

/// A fixture book: EPUB 3 with a nav document, or EPUB 2 with an NCX.
struct Fixture {
    version: u8,
    title: String,
    author: &'static str,
    docs: Vec<Doc>,
}

impl Fixture {
    fn new(version: u8, docs: Vec<Doc>) -> Fixture {
        Fixture {
            version,
            title: "雾港夜话".to_owned(),
            author: "林照",
            docs,
        }
    }

    /// Archive members, `mimetype` first.
    fn files(&self) -> Files {
        let mut files: Files = vec![
            ("mimetype".into(), b"application/epub+zip".to_vec()),
            (
                "META-INF/container.xml".into(),
                br#"<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"#
                    .to_vec(),
            ),
            ("OEBPS/content.opf".into(), self.opf().into_bytes()),
            ("OEBPS/images/cover.png".into(), PNG.to_vec()),
        ];
        if self.version == 3 {
            files.push(("OEBPS/nav.xhtml".into(), self.nav().into_bytes()));
        } else {
            files.push(("OEBPS/toc.ncx".into(), self.ncx().into_bytes()));
        }
        for d in &self.docs {
            files.push((format!("OEBPS/text/{}", d.file), page(&d.body).into_bytes()));
        }
        files
    }

    fn opf(&self) -> String {
        let mut items = String::new();
        let mut spine = String::new();
        if self.version == 3 {
            items.push_str(r#"<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>"#);
            spine.push_str(r#"<itemref idref="nav"/>"#);
            items.push_str(r#"<item id="cover-img" href="images/cover.png" media-type="image/png" properties="cover-image"/>"#);
        } else {
            items.push_str(
                r#"<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>"#,
            );
            items.push_str(r#"<item id="img1" href="images/cover.png" media-type="image/png"/>"#);
        }
        for (i, d) in self.docs.iter().enumerate() {
            items.push_str(&format!(
                r#"<item id="d{i}" href="text/{}" media-type="application/xhtml+xml"/>"#,
                d.file
            ));
            spine.push_str(&format!(r#"<itemref idref="d{i}"/>"#));
        }
        let (version, toc, cover_meta) = if self.version == 3 {
            ("3.0", "", "")
        } else {
            (
                "2.0",
                r#" toc="ncx""#,
                r#"<meta name="cover" content="img1"/>"#,
            )
        };
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="{version}" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="id">urn:uuid:0f1e2d3c-0000-4000-8000-000000000001</dc:identifier>
    <dc:title>{}</dc:title><dc:creator>{}</dc:creator><dc:language>zh-CN</dc:language>{cover_meta}
  </metadata>
  <manifest>{items}</manifest>
  <spine{toc}>{spine}</spine>
</package>"#,
            self.title, self.author
        )
    }

    fn nav(&self) -> String {
        let links: String = self
            .docs
            .iter()
            .filter_map(|d| {
                let title = d.toc.as_ref()?;
                Some(format!(
                    r#"<li><a href="text/{}">{}</a></li>"#,
                    d.file,
                    escape(title)
                ))
            })
            .collect();
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">
<head><title>目录</title></head>
<body><nav epub:type="toc"><h1>目录</h1><ol>{links}</ol></nav></body></html>"#
        )
    }

    fn ncx(&self) -> String {
        let points: String = self
            .docs
            .iter()
            .filter_map(|d| {
                let title = d.toc.as_ref()?;
                Some(format!(
                    r#"<navPoint id="{0}"><navLabel><text>{1}</text></navLabel><content src="text/{0}"/></navPoint>"#,
                    d.file,
                    escape(title)
                ))
            })
            .collect();
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">
<head/><docTitle><text>{}</text></docTitle><navMap>{points}</navMap></ncx>"#,
            self.title
        )
    }

    fn write(&self, path: &Path) {
        write_zip(path, &self.files());
    }
}

fn page(body: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">
<head><title>不读的标题</title><style>p {{ text-indent: 2em; }}</style></head>
<body>{body}</body></html>"#
    )
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn write_zip(path: &Path, files: &[(String, Vec<u8>)]) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, bytes) in files {
        let method = if name == "mimetype" {
            zip::CompressionMethod::Stored
        } else {
            zip::CompressionMethod::Deflated
        };
        zip.start_file(
            name.as_str(),
            SimpleFileOptions::default().compression_method(method),
        )
        .unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
}

fn build(book: &Path, out: &Path) -> Output {
    Tingshu::new(["build"])
        .arg(book)
        .arg("--out")
        .arg(out)
        .output()
}

/// Builds `book` and returns its manifest; the build must succeed.
fn build_ok(book: &Path, out: &Path) -> Value {
    let o = build(book, out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stem = book.file_stem().unwrap();
    let text = std::fs::read_to_string(out.join(stem).join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// (title, [(kind, text)]) of every chapter in a manifest.
type Outline = Vec<(String, Vec<(String, String)>)>;

fn outline(m: &Value) -> Outline {
    m["chapters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let segments = c["segments"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    (
                        s["kind"].as_str().unwrap().to_owned(),
                        s["text"].as_str().unwrap().to_owned(),
                    )
                })
                .collect();
            (c["title"].as_str().unwrap().to_owned(), segments)
        })
        .collect()
}

fn texts(chapter: &(String, Vec<(String, String)>)) -> Vec<&str> {
    chapter.1.iter().map(|(_, t)| t.as_str()).collect()
}

fn lighthouse(version: u8) -> Fixture {
    Fixture::new(
        version,
        vec![
            doc(
                "cover.xhtml",
                None,
                r#"<div><img src="../images/cover.png" alt="封面"/></div>"#,
            ),
            doc(
                "contents.xhtml",
                None,
                r#"<h1>目录</h1><p><a href="c1.xhtml">第一章 灯塔</a></p>
                   <p><a href="c1b.xhtml">灯油</a></p><p><a href="c2.xhtml">第二章 归船</a></p>"#,
            ),
            doc(
                "c1.xhtml",
                Some("第一章 灯塔"),
                "<h1>第一章　灯塔</h1>\
                 <p>　　海风吹了一整夜&amp;雾没有散。<a href=\"#n1\" epub:type=\"noteref\">[1]</a></p>\
                 <p>老陈说：“明天还会起雾。”</p><script>ignored();</script>\
                 <aside epub:type=\"footnote\" id=\"n1\"><p>灯塔在岛的北端。</p></aside>",
            ),
            doc(
                "c1b.xhtml",
                None,
                "<p>他把灯油&#x52A0;满，<br/>然后坐下等天亮。</p>",
            ),
            doc(
                "c2.xhtml",
                Some("第二章 归船"),
                "<h2>第二章 归船</h2><div>远处有一盏灯在摇。</div><ul><li>一条船</li><li>两条船</li></ul>",
            ),
        ],
    )
}

fn check_lighthouse(version: u8) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(format!("lighthouse{version}.epub"));
    lighthouse(version).write(&path);

    let m = build_ok(&path, &tmp.path().join("out"));
    let chapters = outline(&m);
    let titles: Vec<_> = chapters.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(titles, ["第一章 灯塔", "第二章 归船"]);
    assert_eq!(
        texts(&chapters[0]),
        [
            "海风吹了一整夜&雾没有散。",
            "老陈说：",
            "“明天还会起雾。”",
            "他把灯油加满，",
            "然后坐下等天亮。"
        ]
    );
    assert_eq!(chapters[0].1[2].0, "dialogue");
    assert_eq!(
        texts(&chapters[1]),
        ["远处有一盏灯在摇。", "一条船", "两条船"]
    );

    let book = read_book(&path).unwrap();
    assert_eq!(book.format, BookFormat::Epub);
    assert_eq!(book.metadata.title.as_deref(), Some("雾港夜话"));
    assert_eq!(book.metadata.author.as_deref(), Some("林照"));
    assert_eq!(book.metadata.language.as_deref(), Some("zh-CN"));
    let cover = book.metadata.cover.as_ref().expect("cover image");
    assert_eq!(
        (cover.media_type.as_str(), cover.bytes.as_slice()),
        ("image/png", PNG)
    );
    assert!(book.skipped.is_empty(), "{:?}", book.skipped);
}

#[test]
fn epub3_chapters_follow_spine_and_nav() {
    check_lighthouse(3);
}

#[test]
fn epub2_chapters_follow_spine_and_ncx() {
    check_lighthouse(2);
}

#[test]
fn ruby_reads_base_text_and_offers_its_pinyin() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("ruby.epub");
    Fixture::new(
        3,
        vec![doc(
            "r.xhtml",
            Some("第一章 長大"),
            "<p>孩子們都<ruby>長<rp>（</rp><rt>zhǎng</rt><rp>）</rp></ruby>大了，\
             <ruby>银<rt>yín</rt>行<rt>háng</rt></ruby>也搬走了。</p><p>這條路很長。</p>",
        )],
    )
    .write(&path);
    let m = build_ok(&path, &tmp.path().join("out"));
    let chapters = outline(&m);
    assert_eq!(chapters[0].0, "第一章 長大");
    // Traditional characters stay as written; the annotation is not read.
    assert_eq!(
        texts(&chapters[0]),
        ["孩子們都長大了，银行也搬走了。", "這條路很長。"]
    );
    let book = read_book(&path).unwrap();
    let pairs: Vec<(&str, &str)> = book
        .readings
        .iter()
        .map(|(b, r)| (b.as_str(), r.as_str()))
        .collect();
    assert_eq!(pairs, [("長", "zhǎng"), ("银", "yín"), ("行", "háng")]);
    // 長 also appears without ruby (cháng): only 银 and 行 hold book-wide.
    let words: Vec<(&str, String)> = book
        .ruby_words
        .iter()
        .map(|e| {
            (
                e.word.as_str(),
                e.pinyin.clone().unwrap_or_default().join(" "),
            )
        })
        .collect();
    assert_eq!(
        words,
        [("银", "yin2".to_owned()), ("行", "hang2".to_owned())]
    );
}

#[test]
fn several_chapters_in_one_file_are_split_like_txt() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("many.epub");
    Fixture::new(
        2,
        vec![
            doc(
                "all.xhtml",
                Some("正文"),
                "<p>第一章 起锚</p><p>船离开了码头。</p>\
                 <p>第二章 风暴</p><p>浪头打上甲板。</p><p>第二章 风暴</p>\
                 <p>第三章 靠岸</p><p>他们终于看见了陆地。</p>",
            ),
            doc("more.xhtml", None, "<h3>第四章</h3><p>灯塔还亮着。</p>"),
        ],
    )
    .write(&path);
    let m = build_ok(&path, &tmp.path().join("out"));
    let chapters = outline(&m);
    let titles: Vec<_> = chapters.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        titles,
        ["第一章 起锚", "第二章 风暴", "第三章 靠岸", "第四章"]
    );
    assert_eq!(texts(&chapters[1]), ["浪头打上甲板。"]);
    assert_eq!(texts(&chapters[3]), ["灯塔还亮着。"]);
}

#[test]
fn epub_is_recognised_by_content_not_extension() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("disguised.txt");
    lighthouse(3).write(&path);
    let book = read_book(&path).unwrap();
    assert_eq!(book.format, BookFormat::Epub);
    let titles: Vec<_> = book
        .script
        .chapters
        .iter()
        .map(|c| c.title.as_str())
        .collect();
    assert_eq!(titles, ["第一章 灯塔", "第二章 归船"]);
    assert!(tingshu::epub::is_epub(&std::fs::read(&path).unwrap()));
    assert!(!tingshu::epub::is_epub("第一章\n正文".as_bytes()));
}

#[test]
fn bad_epubs_exit_2_with_one_line_naming_the_part() {
    let tmp = tempfile::tempdir().unwrap();
    let good = lighthouse(3).files();
    let without =
        |name: &str| -> Files { good.iter().filter(|(n, _)| n != name).cloned().collect() };
    let replaced = |name: &str, bytes: &[u8]| -> Files {
        good.iter()
            .map(|(n, b)| {
                (
                    n.clone(),
                    if n == name { bytes.to_vec() } else { b.clone() },
                )
            })
            .collect()
    };
    let mut drm = good.clone();
    drm.push((
        "META-INF/encryption.xml".into(),
        br#"<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" xmlns:enc="http://www.w3.org/2001/04/xmlenc#">
  <enc:EncryptedData><enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
  <enc:CipherData><enc:CipherReference URI="OEBPS/text/c1.xhtml"/></enc:CipherData></enc:EncryptedData>
</encryption>"#
            .to_vec(),
    ));
    let all_broken: Vec<_> = good
        .iter()
        .map(|(n, b)| {
            let broken = n.starts_with("OEBPS/text/");
            (
                n.clone(),
                if broken {
                    "<html><body><p>半截</div>".as_bytes().to_vec()
                } else {
                    b.clone()
                },
            )
        })
        .collect();
    let opf_broken = replaced("OEBPS/content.opf", b"<package><manifest></package>");
    let cover_page = good
        .iter()
        .find(|(n, _)| n == "OEBPS/text/cover.xhtml")
        .map(|(_, b)| b.clone())
        .unwrap();
    let images_only: Files = good
        .iter()
        .map(|(n, b)| {
            let image = n.starts_with("OEBPS/text/");
            (
                n.clone(),
                if image { cover_page.clone() } else { b.clone() },
            )
        })
        .collect();
    let cases: Vec<(&str, Option<Files>, &str)> = vec![
        ("notzip", None, "not a zip archive"),
        (
            "nocontainer",
            Some(without("META-INF/container.xml")),
            "META-INF/container.xml: missing",
        ),
        (
            "noopf",
            Some(without("OEBPS/content.opf")),
            "OEBPS/content.opf: OPF package file",
        ),
        ("badopf", Some(opf_broken), "OEBPS/content.opf: broken XML"),
        (
            "badxhtml",
            Some(all_broken),
            "no readable text: OEBPS/text/cover.xhtml: broken XHTML at byte 27: </div> closes <p> (and 4 more files)",
        ),
        (
            "notext",
            Some(images_only),
            "OEBPS/content.opf: the content documents of the spine hold no text",
        ),
        (
            "drm",
            Some(drm),
            "META-INF/encryption.xml: OEBPS/text/c1.xhtml is DRM-encrypted",
        ),
    ];
    for (name, files, problem) in cases {
        let path = tmp.path().join(format!("{name}.epub"));
        match files {
            Some(files) => write_zip(&path, &files),
            None => std::fs::write(&path, "第一章\n这不是压缩包。\n").unwrap(),
        }
        let out = tmp.path().join("out");
        let o = build(&path, &out);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{name}: {stderr}");
        assert!(stderr.contains(&*path.display().to_string()), "{stderr}");
        assert!(stderr.contains(problem), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(!out.exists(), "{name}: output directory was created");
    }
}

#[test]
fn a_broken_chapter_file_is_reported_and_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("partly.epub");
    Fixture::new(
        3,
        vec![
            doc("a.xhtml", Some("第一章"), "<p>第一段好好的。</p>"),
            doc("b.xhtml", Some("第二章"), "<p>这里<b>坏了</p>"),
            doc("b2.xhtml", None, "<p>第二章的后半还在。</p>"),
            doc("c.xhtml", Some("第三章"), "<p>第三段也好好的。</p>"),
        ],
    )
    .write(&path);
    let out = tmp.path().join("out");
    let o = build(&path, &out);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let reports: Vec<_> = stderr.lines().filter(|l| l.contains("b.xhtml")).collect();
    assert_eq!(reports.len(), 1, "{stderr}");
    assert!(
        reports[0].contains("OEBPS/text/b.xhtml: broken XHTML"),
        "{stderr}"
    );
    let text = std::fs::read_to_string(out.join("partly/manifest.json")).unwrap();
    let chapters = outline(&serde_json::from_str(&text).unwrap());
    let titles: Vec<_> = chapters.iter().map(|c| c.0.as_str()).collect();
    // The rest of chapter 2 stays in chapter 2.
    assert_eq!(titles, ["第一章", "第二章", "第三章"]);
    assert_eq!(texts(&chapters[1]), ["第二章的后半还在。"]);
}

#[test]
fn a_broken_table_of_contents_falls_back_to_headings() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("badnav.epub");
    let files: Files = lighthouse(3)
        .files()
        .into_iter()
        .map(|(n, b)| {
            let b = if n.ends_with("nav.xhtml") {
                b"<html><body><nav><ol><li>".to_vec()
            } else {
                b
            };
            (n, b)
        })
        .collect();
    write_zip(&path, &files);
    let o = build(&path, &tmp.path().join("out"));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("OEBPS/nav.xhtml"), "{stderr}");
    let text = std::fs::read_to_string(tmp.path().join("out/badnav/manifest.json")).unwrap();
    let chapters = outline(&serde_json::from_str(&text).unwrap());
    let titles: Vec<_> = chapters.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(titles, ["第一章　灯塔", "第二章 归船"]);
}

#[test]
fn a_table_of_contents_pointing_nowhere_is_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("stray.epub");
    let files: Files = lighthouse(2)
        .files()
        .into_iter()
        .map(|(n, b)| {
            let b = if n.ends_with("toc.ncx") {
                String::from_utf8(b)
                    .unwrap()
                    .replace("src=\"text/", "src=\"gone/")
                    .into_bytes()
            } else {
                b
            };
            (n, b)
        })
        .collect();
    write_zip(&path, &files);
    let book = read_book(&path).unwrap();
    let titles: Vec<_> = book
        .script
        .chapters
        .iter()
        .map(|c| c.title.as_str())
        .collect();
    assert_eq!(titles, ["第一章　灯塔", "第二章 归船"]);
}

/// Writes `txt` as an EPUB: one `<p>` per line, a document per chapter of
/// the TXT rules (front matter in a document the TOC does not list), and
/// each chapter's text spread over two documents of which the TOC lists the
/// first.
fn epub_from_txt(txt: &str, stem: &str, path: &Path) {
    let mut docs = Vec::new();
    for (i, ch) in split_chapters(txt, stem).into_iter().enumerate() {
        let paragraphs: Vec<String> = ch
            .paragraphs
            .iter()
            .map(|p| format!("<p>{}</p>\n", escape(p)))
            .collect();
        let half = paragraphs.len() / 2;
        let heading = if ch.number == 0 {
            String::new()
        } else {
            format!("<h1>{}</h1>\n", escape(&ch.title))
        };
        let toc = (ch.number != 0).then_some(ch.title.as_str());
        let first = heading + &paragraphs[..half].concat();
        docs.push(doc(&format!("p{i:04}a.xhtml"), toc, &first));
        docs.push(doc(
            &format!("p{i:04}b.xhtml"),
            None,
            &paragraphs[half..].concat(),
        ));
    }
    let mut book = Fixture::new(3, docs);
    // Untitled text (front matter) is titled after the book, as in TXT.
    book.title = stem.to_owned();
    book.write(path);
}

#[test]
fn sample_epub_has_the_reading_script_of_its_txt() {
    let Some(sample) = shared("samples/000_7b313e97eba21c0f.txt") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let txt = std::fs::read_to_string(&sample).unwrap();
    let stem = sample.file_stem().unwrap().to_str().unwrap();
    let epub = tmp.path().join(format!("{stem}.epub"));
    epub_from_txt(&txt, stem, &epub);
    let from_txt = outline(&build_ok(&sample, &tmp.path().join("txt")));
    let from_epub = outline(&build_ok(&epub, &tmp.path().join("epub")));
    assert!(!from_txt.is_empty() && !from_txt[0].1.is_empty());
    assert_eq!(from_epub, from_txt);
}

#[test]
fn novel_epub_has_the_reading_script_of_its_txt() {
    let Some(novel) = shared("data/novels/西游记.txt") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let txt_book = read_book(&novel).unwrap();
    let txt = std::fs::read_to_string(&novel).unwrap();
    let epub = tmp.path().join("西游记.epub");
    epub_from_txt(&txt, "西游记", &epub);
    let epub_book = read_book(&epub).unwrap();
    assert!(txt_book.script.chapters.len() > 50);
    assert_eq!(epub_book.script, txt_book.script);
}

#[test]
fn epub_metadata_feeds_tags_cover_and_manifest() {
    if !ffmpeg::tools() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // A real image for the cover, so that ffmpeg can embed it.
    let png = tmp.path().join("cover.png");
    let made = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "color=c=0x206040:s=64x64",
        ])
        .args(["-frames:v", "1"])
        .arg(&png)
        .output()
        .expect("run ffmpeg");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let mut files = lighthouse(3).files();
    for (name, bytes) in &mut files {
        if name == "OEBPS/images/cover.png" {
            *bytes = std::fs::read(&png).unwrap();
        }
    }
    let path = tmp.path().join("lighthouse-meta.epub");
    write_zip(&path, &files);

    let build_mp3 = |out: &Path, extra: &[&str]| {
        let o = Tingshu::new(["build"])
            .arg(&path)
            .arg("--out")
            .arg(out)
            .args(["--format", "mp3"])
            .args(extra)
            .output();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let dir = out.join("lighthouse-meta");
        let text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
        (dir, serde_json::from_str::<Value>(&text).unwrap())
    };
    let (dir, m) = build_mp3(&tmp.path().join("out"), &[]);
    assert_eq!(m["title"], "雾港夜话");
    assert_eq!(m["author"], "林照");
    assert_eq!(m["language"], "zh-CN");
    // The file stem stays the book's key.
    assert_eq!(m["book"], "lighthouse-meta");

    let chapters = m["chapters"].as_array().unwrap();
    assert_eq!(chapters.len(), 2);
    for chapter in chapters {
        let wav = Path::new(chapter["file"].as_str().unwrap());
        let stem = wav.file_stem().unwrap().to_str().unwrap();
        let mp3 = dir.join(format!("{stem}.mp3"));
        let tags = ffprobe(&mp3, "-show_format")["format"]["tags"].clone();
        assert_eq!(tags["artist"], "林照", "{}: {tags}", mp3.display());
        assert_eq!(tags["album"], "雾港夜话", "{}: {tags}", mp3.display());
        assert_eq!(tags["title"], chapter["title"], "{}", mp3.display());
        let streams = ffprobe(&mp3, "-show_streams");
        assert!(
            streams["streams"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["disposition"]["attached_pic"] == 1),
            "no cover in {}",
            mp3.display()
        );
    }
    // The cover written for ffmpeg does not stay behind.
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".cover"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // --author wins over the book's own author.
    let (dir, m) = build_mp3(&tmp.path().join("out2"), &["--author", "另一位"]);
    assert_eq!(m["author"], "另一位");
    let first = Path::new(m["chapters"][0]["file"].as_str().unwrap())
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let tags = ffprobe(&dir.join(format!("{first}.mp3")), "-show_format")["format"]["tags"].clone();
    assert_eq!(tags["artist"], "另一位", "{tags}");
}

#[test]
fn a_cover_ffmpeg_cannot_read_is_left_out_not_fatal() {
    if !ffmpeg::tools() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The fixture's stand-in cover is a PNG signature with no image in it.
    let path = tmp.path().join("lighthouse-badcover.epub");
    write_zip(&path, &lighthouse(3).files());
    let out = tmp.path().join("out");
    let o = Tingshu::new(["build"])
        .arg(&path)
        .arg("--out")
        .arg(&out)
        .args(["--format", "mp3"])
        .output();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("cover cannot be used"), "{stderr}");
    let dir = out.join("lighthouse-badcover");
    let mp3s: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mp3"))
        .collect();
    assert_eq!(mp3s.len(), 2, "{mp3s:?}");
    for mp3 in &mp3s {
        let streams = ffprobe(mp3, "-show_streams");
        let streams = streams["streams"].as_array().unwrap();
        assert!(
            streams.iter().any(|s| s["codec_type"] == "audio"),
            "{}",
            mp3.display()
        );
        assert!(
            streams
                .iter()
                .all(|s| s["disposition"]["attached_pic"] != 1),
            "{}",
            mp3.display()
        );
    }

    // An unreadable --cover given by the user is bad input: exit 2, no output.
    let bad = tmp.path().join("bad.png");
    std::fs::write(&bad, b"\x89PNG\r\n\x1a\nnot really").unwrap();
    let out2 = tmp.path().join("out2");
    let o = Tingshu::new(["build"])
        .arg(&path)
        .arg("--out")
        .arg(&out2)
        .args(["--format", "mp3", "--cover"])
        .arg(&bad)
        .output();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.png"), "{stderr}");
    assert!(!out2.exists());
}
