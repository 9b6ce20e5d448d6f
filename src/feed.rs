//! Podcast feeds of rendered books: `feed.xml` (RSS 2.0 with the iTunes and
//! Podcasting 2.0 tags podcast apps read) in a book's folder, and
//! `feeds.opml` listing every book's feed in an output folder.
//!
//! A feed is made from the book's `manifest.json`: one item per chapter,
//! in reading order, whose enclosure is the chapter's MP3 (else Opus) file;
//! a book rendered only to M4B gets one item, the M4B. WAV is not for
//! feeds. An item's `guid` is a hash of the chapter's text, so a chapter
//! rendered again from the same text keeps it and an edited chapter gets
//! a new one; its `pubDate` is kept from the feed already on disk, so a
//! feed rewritten with nothing new reads byte for byte the same.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, Utc};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use quick_xml::escape::escape;
use sha2::{Digest, Sha256};

use crate::audio::encode::Format;
use crate::manifest::Manifest;
use crate::names::chapter_stem;

/// Name of the feed in a book's folder.
pub const FEED: &str = "feed.xml";
/// Name of the list of feeds in an output folder.
pub const OPML: &str = "feeds.opml";

/// Bytes left as they are in a URL path segment or a query value (RFC 3986
/// unreserved).
pub const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Why a feed cannot be made or written.
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    #[error("{setting} {value:?}: {message}")]
    BadUrl {
        /// `--feed-url`, or the jobs file's key.
        setting: String,
        value: String,
        message: &'static str,
    },
    #[error(
        "{setting}: a podcast feed needs MP3, Opus or M4B files, and the formats are only WAV; add mp3 to the formats"
    )]
    NoFeedFormat { setting: String },
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Where a book's files are published: enclosures are
/// `<base>/<book path>/<file>`, each segment URL-encoded. Carried in queue
/// tasks, so that workers write the feed `build` and `batch run` would.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedLink {
    /// `http(s)://host[:port][/path]`, without a trailing slash.
    pub base: String,
    /// The book's folder relative to the output folder (`书名`, or
    /// `作者/书名` with the audiobookshelf layout), `/`-separated.
    pub book_path: String,
}

impl FeedLink {
    /// The link of the book folder `book_dir` inside `out`, under `base`
    /// (checked with [`check_base`]).
    pub fn new(base: &str, out: &Path, book_dir: &Path) -> FeedLink {
        let relative = book_dir.strip_prefix(out).unwrap_or(book_dir);
        let book_path = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        FeedLink {
            base: base.trim_end_matches('/').to_owned(),
            book_path,
        }
    }

    /// The library (output folder) of the book folder `book_dir`: where
    /// its `feeds.opml` goes.
    pub fn library(&self, book_dir: &Path) -> PathBuf {
        let depth = self.book_path.split('/').filter(|s| !s.is_empty()).count();
        book_dir
            .ancestors()
            .nth(depth)
            .unwrap_or(book_dir)
            .to_path_buf()
    }

    /// The URL of `file` (relative to the book's folder, `/`-separated).
    pub fn url(&self, file: &str) -> String {
        let mut url = self.base.clone();
        for segment in self.book_path.split('/').chain(file.split('/')) {
            if segment.is_empty() {
                continue;
            }
            url.push('/');
            url.extend(utf8_percent_encode(segment, SEGMENT));
        }
        url
    }
}

/// Checks a feed's base URL (`--feed-url`, the jobs file's `feed_url`):
/// `http://` or `https://` with a host, no query or fragment. Returns it
/// without a trailing slash.
pub fn check_base(setting: &str, value: &str) -> Result<String, FeedError> {
    let bad = |message| FeedError::BadUrl {
        setting: setting.to_owned(),
        value: value.to_owned(),
        message,
    };
    let rest = value
        .strip_prefix("http://")
        .or_else(|| value.strip_prefix("https://"))
        .ok_or_else(|| bad("must start with http:// or https://"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(bad("has no host name"));
    }
    if value.contains(['?', '#']) {
        return Err(bad(
            "must not have a query or fragment (enclosures are BASE/<book>/<file>)",
        ));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("must not contain spaces"));
    }
    let scheme = &value[..value.len() - rest.len()];
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if !host.is_ascii() {
        return Err(bad(
            "has a host name that is not ASCII (write it in punycode, xn--…)",
        ));
    }
    // A path in Chinese is written as the UTF-8 bytes it stands for, as
    // podcast apps expect an enclosure URL.
    let path = utf8_percent_encode(path.trim_end_matches('/'), percent_encoding::CONTROLS);
    Ok(format!("{scheme}{host}{path}"))
}

/// The format a feed's enclosures are in: MP3, else Opus (one item per
/// chapter), else the M4B (one item); `None` for WAV only.
pub fn enclosure_format(formats: &[Format]) -> Option<Format> {
    [Format::Mp3, Format::Opus, Format::M4b]
        .into_iter()
        .find(|f| formats.contains(f))
}

/// Checks that `formats` make something a feed can list; `setting` names
/// the option in the error.
pub fn check_formats(setting: &str, formats: &[Format]) -> Result<Format, FeedError> {
    enclosure_format(formats).ok_or_else(|| FeedError::NoFeedFormat {
        setting: setting.to_owned(),
    })
}

/// The MIME type of an enclosure.
pub fn mime_type(format: Format) -> &'static str {
    match format {
        Format::Mp3 => "audio/mpeg",
        Format::Opus => "audio/ogg",
        Format::M4b => "audio/x-m4a",
        Format::Wav => "audio/wav",
    }
}

/// What the channel says about the book.
#[derive(Debug, Clone, Default)]
pub struct FeedBook {
    pub title: String,
    pub author: Option<String>,
    pub language: Option<String>,
    /// The cover image (JPEG or PNG), copied beside the feed as
    /// `cover.jpg`/`cover.png` and named by `itunes:image`.
    pub cover: Option<PathBuf>,
    /// The M4B's file name, for a book with only an M4B.
    pub m4b_file: Option<String>,
}

/// The stable id of a chapter: a hash of the book's name, the chapter's
/// title and the text of its segments.
pub fn chapter_guid(book: &str, title: &str, texts: impl IntoIterator<Item = String>) -> String {
    let mut h = Sha256::new();
    h.update(b"tingshu-chapter\0");
    h.update(book.as_bytes());
    h.update(b"\0");
    h.update(title.as_bytes());
    for text in texts {
        h.update(b"\0");
        h.update(text.as_bytes());
    }
    format!("tingshu:{}", &hex::encode(h.finalize())[..32])
}

/// One item of a feed.
struct Item {
    episode: usize,
    title: String,
    guid: String,
    file: String,
    length: u64,
    duration_s: f64,
}

/// The feed of the book in `book_dir` from `manifest`, with enclosures in
/// `format` under `link`; `query` (`token=…`) is added to every URL when
/// given (served feeds; never written to disk). Items whose file is
/// missing (an encode that failed; a later run makes it) are left out.
/// `now` dates items not yet in `previous` (episode → date).
#[allow(clippy::too_many_arguments)]
pub fn render(
    manifest: &Manifest,
    book_dir: &Path,
    format: Format,
    book: &FeedBook,
    link: &FeedLink,
    query: Option<&str>,
    previous: &BTreeMap<usize, DateTime<Utc>>,
    now: DateTime<Utc>,
) -> String {
    let with_query = |url: String| match query {
        Some(q) => format!("{url}?{q}"),
        None => url,
    };
    let mut items = Vec::new();
    if format == Format::M4b {
        if let Some(file) = &book.m4b_file
            && let Ok(meta) = std::fs::metadata(book_dir.join(file))
        {
            let guid = chapter_guid(
                &manifest.book,
                "",
                manifest.chapters.iter().map(|c| {
                    chapter_guid(
                        &manifest.book,
                        &c.title,
                        c.segments.iter().map(|s| s.text.clone()),
                    )
                }),
            );
            items.push(Item {
                episode: 1,
                title: book.title.clone(),
                guid,
                file: file.clone(),
                length: meta.len(),
                duration_s: manifest.chapters.iter().map(|c| c.duration_s).sum(),
            });
        }
    } else {
        for c in &manifest.chapters {
            let file = format!("{}.{}", chapter_stem(c.index, &c.title), format.extension());
            let Ok(meta) = std::fs::metadata(book_dir.join(&file)) else {
                continue;
            };
            items.push(Item {
                episode: c.index,
                title: c.title.clone(),
                guid: chapter_guid(
                    &manifest.book,
                    &c.title,
                    c.segments.iter().map(|s| s.text.clone()),
                ),
                file,
                length: meta.len(),
                duration_s: c.duration_s,
            });
        }
    }
    // Reading order is date order: each item at least a second after the
    // one before; new items just before `now`, in order.
    let mut dates = Vec::with_capacity(items.len());
    let mut last: Option<DateTime<Utc>> = None;
    for (pos, item) in items.iter().enumerate() {
        let fresh = now - Duration::seconds((items.len() - 1 - pos) as i64);
        let mut date = previous.get(&item.episode).copied().unwrap_or(fresh);
        if let Some(last) = last
            && date <= last
        {
            date = last + Duration::seconds(1);
        }
        dates.push(date);
        last = Some(date);
    }

    let title = escape(book.title.as_str());
    let author = book.author.as_deref().map(|a| escape(a).into_owned());
    let description = escape(
        format!(
            "{}{} — {} chapters, read by tingshu.",
            book.title,
            book.author
                .as_deref()
                .map(|a| format!(" ({a})"))
                .unwrap_or_default(),
            manifest.chapters.len()
        )
        .as_str(),
    )
    .into_owned();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(concat!(
        "<rss version=\"2.0\" xmlns:itunes=\"http://www.itunes.com/dtds/podcast-1.0.dtd\"",
        " xmlns:podcast=\"https://podcastindex.org/namespace/1.0\"",
        " xmlns:atom=\"http://www.w3.org/2005/Atom\">\n<channel>\n"
    ));
    let _ = writeln!(x, "<title>{title}</title>");
    let _ = writeln!(
        x,
        "<link>{}</link>",
        escape(with_query(link.url("")).as_str())
    );
    let _ = writeln!(
        x,
        "<atom:link href=\"{}\" rel=\"self\" type=\"application/rss+xml\"/>",
        escape(with_query(link.url(FEED)).as_str())
    );
    let _ = writeln!(x, "<description>{description}</description>");
    let _ = writeln!(x, "<itunes:summary>{description}</itunes:summary>");
    let language = book.language.as_deref().unwrap_or("zh-cn");
    let _ = writeln!(x, "<language>{}</language>", escape(language));
    if let Some(author) = &author {
        let _ = writeln!(x, "<itunes:author>{author}</itunes:author>");
    }
    x.push_str("<itunes:type>serial</itunes:type>\n");
    x.push_str("<itunes:explicit>false</itunes:explicit>\n");
    x.push_str(
        "<itunes:category text=\"Arts\"><itunes:category text=\"Books\"/></itunes:category>\n",
    );
    x.push_str("<generator>tingshu</generator>\n");
    if let Some(cover) = cover_file(book_dir, book.cover.as_deref()) {
        let url = escape(with_query(link.url(cover)).as_str()).into_owned();
        let _ = writeln!(x, "<itunes:image href=\"{url}\"/>");
        let _ = writeln!(
            x,
            "<image><url>{url}</url><title>{title}</title><link>{}</link></image>",
            escape(with_query(link.url("")).as_str())
        );
    }
    if let Some(date) = dates.last() {
        let _ = writeln!(x, "<lastBuildDate>{}</lastBuildDate>", date.to_rfc2822());
    }
    for (item, date) in items.iter().zip(&dates) {
        let url = escape(with_query(link.url(&item.file)).as_str()).into_owned();
        x.push_str("<item>\n");
        let _ = writeln!(x, "<title>{}</title>", escape(item.title.as_str()));
        let _ = writeln!(
            x,
            "<guid isPermaLink=\"false\">{}</guid>",
            escape(item.guid.as_str())
        );
        let _ = writeln!(x, "<pubDate>{}</pubDate>", date.to_rfc2822());
        let _ = writeln!(
            x,
            "<enclosure url=\"{url}\" length=\"{}\" type=\"{}\"/>",
            item.length,
            mime_type(format)
        );
        let _ = writeln!(
            x,
            "<itunes:duration>{}</itunes:duration>",
            item.duration_s.round() as u64
        );
        let _ = writeln!(x, "<itunes:episode>{}</itunes:episode>", item.episode);
        x.push_str("<itunes:episodeType>full</itunes:episodeType>\n");
        if let Some(author) = &author {
            let _ = writeln!(x, "<itunes:author>{author}</itunes:author>");
        }
        x.push_str("</item>\n");
    }
    x.push_str("</channel>\n</rss>\n");
    x
}

/// The cover beside the feed: `cover.jpg` or `cover.png` when `cover` is
/// such an image (copied there by [`write`]) or one is already there.
fn cover_file(book_dir: &Path, cover: Option<&Path>) -> Option<&'static str> {
    if let Some(cover) = cover {
        return cover_kind(cover);
    }
    ["cover.jpg", "cover.png"]
        .into_iter()
        .find(|name| book_dir.join(name).is_file())
}

/// `cover.jpg` for a JPEG, `cover.png` for a PNG, by their first bytes.
fn cover_kind(path: &Path) -> Option<&'static str> {
    use std::io::Read;
    let mut magic = [0u8; 8];
    let mut file = std::fs::File::open(path).ok()?;
    file.read_exact(&mut magic).ok()?;
    if magic.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("cover.jpg")
    } else if magic.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("cover.png")
    } else {
        None
    }
}

/// The text between `open` and the `close` after it in `text`.
fn between<'t>(text: &'t str, open: &str, close: &str) -> Option<&'t str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)? + start;
    Some(&text[start..end])
}

/// XML text unescaped (`&amp;` → `&`); as it is when it cannot be.
fn unescape(text: &str) -> String {
    quick_xml::escape::unescape(text).map_or_else(|_| text.to_owned(), |t| t.into_owned())
}

/// The dates of the items of a feed this module wrote earlier (episode →
/// pubDate); empty when there is none or it cannot be read.
pub fn previous_dates(path: &Path) -> BTreeMap<usize, DateTime<Utc>> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return BTreeMap::new();
    };
    text.split("<item>")
        .skip(1)
        .filter_map(|item| {
            let episode = between(item, "<itunes:episode>", "</itunes:episode>")?
                .trim()
                .parse()
                .ok()?;
            let date =
                DateTime::parse_from_rfc2822(between(item, "<pubDate>", "</pubDate>")?.trim())
                    .ok()?
                    .with_timezone(&Utc);
            Some((episode, date))
        })
        .collect()
}

/// Writes `book_dir/feed.xml` from `manifest` (atomically: a temporary
/// file, then a rename), keeping the dates of the items already there,
/// and copies the cover beside it. Returns the path.
pub fn write(
    manifest: &Manifest,
    book_dir: &Path,
    format: Format,
    book: &FeedBook,
    link: &FeedLink,
) -> Result<PathBuf, FeedError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| FeedError::Write { path, source }
    };
    if let Some(cover) = &book.cover
        && let Some(name) = cover_kind(cover)
    {
        let dest = book_dir.join(name);
        let bytes = std::fs::read(cover).map_err(io(cover))?;
        if std::fs::read(&dest).ok().as_deref() != Some(bytes.as_slice()) {
            crate::fsutil::write_atomic(&dest, &bytes).map_err(io(&dest))?;
        }
    }
    let path = book_dir.join(FEED);
    let previous = previous_dates(&path);
    let text = render(
        manifest,
        book_dir,
        format,
        book,
        link,
        None,
        &previous,
        now(),
    );
    if std::fs::read(&path).ok().as_deref() != Some(text.as_bytes()) {
        crate::fsutil::write_atomic(&path, text.as_bytes()).map_err(io(&path))?;
    }
    Ok(path)
}

/// Now, to the second (feeds carry no fractions).
pub fn now() -> DateTime<Utc> {
    let now = Utc::now();
    DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now)
}

/// The feeds in `library`: `*/feed.xml` and `*/*/feed.xml` (the
/// audiobookshelf layout), sorted by path.
pub fn find_feeds(library: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let dirs = |dir: &Path| -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| e.path())
            .collect();
        dirs.sort();
        dirs
    };
    for dir in dirs(library) {
        if dir.join(FEED).is_file() {
            found.push(dir.join(FEED));
            continue;
        }
        for inner in dirs(&dir) {
            if inner.join(FEED).is_file() {
                found.push(inner.join(FEED));
            }
        }
    }
    found
}

/// The channel title and self URL of a feed this module wrote.
fn feed_head(path: &Path) -> Option<(String, String)> {
    let text = std::fs::read_to_string(path).ok()?;
    let channel = text.split("<item>").next()?;
    let title = between(channel, "<title>", "</title>").map(unescape)?;
    let link = between(channel, "<atom:link href=\"", "\"").map(unescape)?;
    Some((title, link))
}

/// The OPML list of the feeds found in `library` ([`find_feeds`]), each
/// by its channel title and self URL.
pub fn opml(library: &Path) -> String {
    let mut x = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<opml version=\"2.0\">\n<head><title>tingshu</title></head>\n<body>\n",
    );
    for path in find_feeds(library) {
        let Some((title, url)) = feed_head(&path) else {
            continue;
        };
        let _ = writeln!(
            x,
            "<outline type=\"rss\" text=\"{0}\" title=\"{0}\" xmlUrl=\"{1}\"/>",
            escape(title.as_str()),
            escape(url.as_str())
        );
    }
    x.push_str("</body>\n</opml>\n");
    x
}

/// Writes `library/feeds.opml` ([`opml`]) atomically.
pub fn write_opml(library: &Path) -> Result<PathBuf, FeedError> {
    let path = library.join(OPML);
    let text = opml(library);
    if std::fs::read(&path).ok().as_deref() != Some(text.as_bytes()) {
        crate::fsutil::write_atomic(&path, text.as_bytes()).map_err(|source| FeedError::Write {
            path: path.clone(),
            source,
        })?;
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_encoded_per_segment() {
        let link = FeedLink::new(
            "http://192.168.1.5:8080/books/",
            Path::new("out"),
            Path::new("out/雾港 夜"),
        );
        assert_eq!(link.base, "http://192.168.1.5:8080/books");
        assert_eq!(
            link.url("0001-第一章.mp3"),
            "http://192.168.1.5:8080/books/%E9%9B%BE%E6%B8%AF%20%E5%A4%9C/0001-%E7%AC%AC%E4%B8%80%E7%AB%A0.mp3"
        );
        assert_eq!(
            link.url(""),
            "http://192.168.1.5:8080/books/%E9%9B%BE%E6%B8%AF%20%E5%A4%9C"
        );
    }

    #[test]
    fn base_urls_are_checked() {
        assert_eq!(
            check_base("--feed-url", "https://h.example/").unwrap(),
            "https://h.example"
        );
        assert_eq!(
            check_base("--feed-url", "http://h.example:8080/听书/").unwrap(),
            "http://h.example:8080/%E5%90%AC%E4%B9%A6"
        );
        for bad in [
            "ftp://h",
            "http://",
            "http://h/?a=1",
            "h.example",
            "http://a b",
            "http://听书.example/",
        ] {
            let e = check_base("--feed-url", bad).unwrap_err().to_string();
            assert!(e.starts_with("--feed-url"), "{e}");
        }
        assert_eq!(enclosure_format(&[Format::Wav]), None);
        assert_eq!(
            enclosure_format(&[Format::Wav, Format::Opus, Format::Mp3]),
            Some(Format::Mp3)
        );
        assert!(
            check_formats("--feed-url", &[Format::Wav])
                .unwrap_err()
                .to_string()
                .starts_with("--feed-url: ")
        );
    }

    #[test]
    fn guids_follow_the_text() {
        let a = chapter_guid("书", "第一章", ["灯亮了。".to_owned()]);
        assert_eq!(a, chapter_guid("书", "第一章", ["灯亮了。".to_owned()]));
        assert_ne!(a, chapter_guid("书", "第一章", ["灯灭了。".to_owned()]));
        assert_ne!(a, chapter_guid("书", "第二章", ["灯亮了。".to_owned()]));
    }
}
