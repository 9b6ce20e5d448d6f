//! The library's files over HTTP: `GET`/`HEAD /<book>/<file>` with single
//! byte ranges (206, 416), `ETag`, `If-None-Match` and `If-Range`; a book's
//! `feed.xml` made for this server's address; `/feeds.opml`.
//!
//! A request path reaches a file only when every segment is a plain name
//! (no `..`, no hidden names such as `.cache`, no backslash or NUL) and the
//! file, with symbolic links resolved, is inside the library.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use super::{ServeError, Server, base_url};
use crate::audio::encode::Format;
use crate::feed::{FEED, FeedBook, FeedLink};
use crate::manifest::Manifest;
use crate::names::{chapter_stem, sanitize_file_name};
use crate::outputs::MANIFEST;

/// The library file a request path names, or why not.
pub fn resolve(library: &Path, request_path: &str) -> Result<PathBuf, ServeError> {
    let not_found = || ServeError::new(StatusCode::NOT_FOUND, "no such file in the library");
    let mut path = library.to_path_buf();
    let mut segments = 0;
    for raw in request_path.split('/').filter(|s| !s.is_empty()) {
        let segment = percent_encoding::percent_decode_str(raw)
            .decode_utf8()
            .map_err(|_| ServeError::bad("the path is not UTF-8"))?;
        if segment.starts_with('.') || segment.contains(['\\', '\0', '/']) {
            return Err(ServeError::new(
                StatusCode::FORBIDDEN,
                "the path leaves the library or names a hidden file",
            ));
        }
        path.push(segment.as_ref());
        segments += 1;
    }
    if segments == 0 {
        return Err(not_found());
    }
    let root = library.canonicalize().map_err(|_| not_found())?;
    let real = path.canonicalize().map_err(|_| not_found())?;
    if !real.starts_with(&root) {
        return Err(ServeError::new(
            StatusCode::FORBIDDEN,
            "the path leaves the library",
        ));
    }
    if !real.is_file() {
        return Err(not_found());
    }
    Ok(real)
}

/// `GET`/`HEAD` of any path not routed otherwise.
pub async fn serve(State(server): State<Arc<Server>>, request: Request) -> Response {
    let (parts, _) = request.into_parts();
    match serve_file(&server, &parts.method, parts.uri.path(), &parts.headers).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

async fn serve_file(
    server: &Server,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Result<Response, ServeError> {
    if !matches!(*method, Method::GET | Method::HEAD) {
        return Err(ServeError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "the library is read with GET",
        ));
    }
    let library = &server.options.library;
    if path.ends_with(&format!("/{FEED}")) {
        let book_path = path.trim_start_matches('/').trim_end_matches(FEED);
        return served_feed(server, headers, book_path);
    }
    let file = resolve(library, path)?;
    send_file(&file, method == Method::HEAD, headers).await
}

/// The content type of a library file, by its extension.
fn content_type(path: &Path) -> &'static str {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("mp3") => "audio/mpeg",
        Some("opus" | "ogg") => "audio/ogg",
        Some("m4b" | "m4a") => "audio/mp4",
        Some("wav") => "audio/wav",
        Some("xml") => "application/rss+xml; charset=utf-8",
        Some("opml") => "text/x-opml; charset=utf-8",
        Some("json") => "application/json",
        Some("m3u") => "audio/x-mpegurl",
        Some("srt") => "application/x-subrip; charset=utf-8",
        Some("lrc" | "txt") => "text/plain; charset=utf-8",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("png") => "image/png",
        _ => "application/octet-stream",
    }
}

/// What `Range` asks of a file of `len` bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum RangeAsk {
    /// The whole file (no range, one that is ignored, or several).
    Whole,
    /// Bytes `start..=end`.
    Part { start: u64, end: u64 },
    /// None of it can be given: 416.
    Unsatisfiable,
}

/// Reads a `Range` header value (`bytes=a-b`, `bytes=a-`, `bytes=-n`).
pub fn parse_range(value: &str, len: u64) -> RangeAsk {
    let Some(spec) = value.trim().strip_prefix("bytes=") else {
        return RangeAsk::Whole;
    };
    if spec.contains(',') {
        return RangeAsk::Whole;
    }
    let Some((a, b)) = spec.trim().split_once('-') else {
        return RangeAsk::Unsatisfiable;
    };
    let (a, b) = (a.trim(), b.trim());
    let part = match (a.parse::<u64>().ok(), b.parse::<u64>().ok()) {
        (Some(start), Some(end)) if a.len() + b.len() > 0 && start <= end => {
            (start, end.min(len.saturating_sub(1)))
        }
        (Some(start), None) if b.is_empty() => (start, len.saturating_sub(1)),
        (None, Some(n)) if a.is_empty() && n > 0 => (len.saturating_sub(n), len.saturating_sub(1)),
        _ => return RangeAsk::Unsatisfiable,
    };
    if len == 0 || part.0 >= len {
        return RangeAsk::Unsatisfiable;
    }
    RangeAsk::Part {
        start: part.0,
        end: part.1,
    }
}

async fn send_file(path: &Path, head: bool, headers: &HeaderMap) -> Result<Response, ServeError> {
    let io = |e: std::io::Error| {
        ServeError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot read the file: {e}"),
        )
    };
    let mut file = tokio::fs::File::open(path).await.map_err(io)?;
    let meta = file.metadata().await.map_err(io)?;
    let len = meta.len();
    let modified = meta.modified().ok();
    let stamp = modified
        .and_then(|m| m.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let etag = format!("\"{len:x}-{stamp:x}\"");
    let header_text = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    if header_text(header::IF_NONE_MATCH).is_some_and(|v| v.split(',').any(|t| t.trim() == etag)) {
        return Ok(Response::builder()
            .status(StatusCode::NOT_MODIFIED)
            .header(header::ETAG, &etag)
            .body(Body::empty())
            .unwrap_or_default());
    }
    let mut ask = match header_text(header::RANGE) {
        Some(range) => parse_range(range, len),
        None => RangeAsk::Whole,
    };
    // A range of another version of the file is not what the client wants.
    if header_text(header::IF_RANGE).is_some_and(|v| v.trim() != etag) {
        ask = RangeAsk::Whole;
    }
    let mut builder = Response::builder()
        .header(header::ACCEPT_RANGES, "bytes")
        .header(header::ETAG, &etag)
        .header(header::CONTENT_TYPE, content_type(path));
    if let Some(modified) = modified {
        builder = builder.header(header::LAST_MODIFIED, httpdate::fmt_http_date(modified));
    }
    let (status, start, count) = match ask {
        RangeAsk::Unsatisfiable => {
            return Ok(builder
                .status(StatusCode::RANGE_NOT_SATISFIABLE)
                .header(header::CONTENT_RANGE, format!("bytes */{len}"))
                .body(Body::empty())
                .unwrap_or_default());
        }
        RangeAsk::Whole => (StatusCode::OK, 0, len),
        RangeAsk::Part { start, end } => {
            builder = builder.header(header::CONTENT_RANGE, format!("bytes {start}-{end}/{len}"));
            (StatusCode::PARTIAL_CONTENT, start, end - start + 1)
        }
    };
    builder = builder.status(status).header(header::CONTENT_LENGTH, count);
    if head {
        return Ok(builder.body(Body::empty()).unwrap_or_default());
    }
    file.seek(std::io::SeekFrom::Start(start))
        .await
        .map_err(io)?;
    let reader = file.take(count);
    let stream = futures::stream::unfold(reader, |mut reader| async move {
        let mut buf = vec![0u8; 64 * 1024];
        match reader.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok::<_, std::io::Error>(buf), reader))
            }
            Err(e) => Some((Err(e), reader)),
        }
    });
    Ok(builder.body(Body::from_stream(stream)).unwrap_or_default())
}

/// The feed of the book at `book_path` (`书名/`), made for the address
/// the client used, with the token on every URL when the server has one.
fn served_feed(
    server: &Server,
    headers: &HeaderMap,
    book_path: &str,
) -> Result<Response, ServeError> {
    let library = &server.options.library;
    let manifest_path = resolve(library, &format!("{book_path}{MANIFEST}"))?;
    let book_dir = manifest_path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let manifest = Manifest::read(&manifest_path).ok_or_else(|| {
        ServeError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{book_path}{MANIFEST}: cannot read it"),
        )
    })?;
    let m4b = format!("{}.m4b", sanitize_file_name(&manifest.book));
    let has = |ext: &str| {
        manifest.chapters.iter().any(|c| {
            book_dir
                .join(format!("{}.{ext}", chapter_stem(c.index, &c.title)))
                .is_file()
        })
    };
    let format = if has("mp3") {
        Format::Mp3
    } else if has("opus") {
        Format::Opus
    } else if book_dir.join(&m4b).is_file() {
        Format::M4b
    } else {
        return Err(ServeError::new(
            StatusCode::NOT_FOUND,
            format!("{book_path}: no MP3, Opus or M4B files to list in a feed"),
        ));
    };
    let book = FeedBook {
        title: manifest
            .title
            .clone()
            .unwrap_or_else(|| manifest.book.clone()),
        author: manifest.author.clone(),
        language: manifest.language.clone(),
        cover: None,
        m4b_file: Some(m4b),
    };
    let book_path_decoded = percent_encoding::percent_decode_str(book_path.trim_end_matches('/'))
        .decode_utf8_lossy()
        .into_owned();
    let link = FeedLink {
        base: base_url(headers),
        book_path: book_path_decoded,
    };
    // Dates from the feed `build` wrote, else from the files' times.
    let mut previous = crate::feed::previous_dates(&book_dir.join(FEED));
    if previous.is_empty() {
        previous = file_dates(&book_dir, &manifest, format);
    }
    let query = server.options.token.as_ref().map(|t| {
        format!(
            "token={}",
            percent_encoding::utf8_percent_encode(t, crate::feed::SEGMENT)
        )
    });
    let text = crate::feed::render(
        &manifest,
        &book_dir,
        format,
        &book,
        &link,
        query.as_deref(),
        &previous,
        crate::feed::now(),
    );
    Ok((
        [(header::CONTENT_TYPE, "application/rss+xml; charset=utf-8")],
        text,
    )
        .into_response())
}

/// Episode → the modification time of its file.
fn file_dates(
    book_dir: &Path,
    manifest: &Manifest,
    format: Format,
) -> BTreeMap<usize, DateTime<Utc>> {
    manifest
        .chapters
        .iter()
        .filter_map(|c| {
            let name = format!("{}.{}", chapter_stem(c.index, &c.title), format.extension());
            let modified = std::fs::metadata(book_dir.join(name))
                .ok()?
                .modified()
                .ok()?;
            let date: DateTime<Utc> = modified.into();
            Some((c.index, DateTime::from_timestamp(date.timestamp(), 0)?))
        })
        .collect()
}

/// `/feeds.opml`: every book with a manifest and podcast files, by the
/// address the client used.
pub async fn opml(State(server): State<Arc<Server>>, headers: HeaderMap) -> Response {
    use std::fmt::Write as _;
    let library = &server.options.library;
    let base = base_url(&headers);
    let token = server.options.token.as_ref().map(|t| {
        format!(
            "?token={}",
            percent_encoding::utf8_percent_encode(t, crate::feed::SEGMENT)
        )
    });
    let mut x = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<opml version=\"2.0\">\n<head><title>tingshu</title></head>\n<body>\n",
    );
    let mut books = Vec::new();
    if let Ok(entries) = std::fs::read_dir(library) {
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || !entry.path().join(MANIFEST).is_file() {
                continue;
            }
            books.push(name);
        }
    }
    books.sort();
    for name in books {
        let title = Manifest::read(&library.join(&name).join(MANIFEST))
            .and_then(|m| m.title.or(Some(m.book)))
            .unwrap_or_else(|| name.clone());
        let link = FeedLink {
            base: base.clone(),
            book_path: name,
        };
        let url = format!("{}{}", link.url(FEED), token.as_deref().unwrap_or(""));
        let _ = writeln!(
            x,
            "<outline type=\"rss\" text=\"{0}\" title=\"{0}\" xmlUrl=\"{1}\"/>",
            quick_xml::escape::escape(title.as_str()),
            quick_xml::escape::escape(url.as_str())
        );
    }
    x.push_str("</body>\n</opml>\n");
    ([(header::CONTENT_TYPE, "text/x-opml; charset=utf-8")], x).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(
            parse_range("bytes=0-9", 100),
            RangeAsk::Part { start: 0, end: 9 }
        );
        assert_eq!(
            parse_range("bytes=90-", 100),
            RangeAsk::Part { start: 90, end: 99 }
        );
        assert_eq!(
            parse_range("bytes=-10", 100),
            RangeAsk::Part { start: 90, end: 99 }
        );
        assert_eq!(
            parse_range("bytes=50-500", 100),
            RangeAsk::Part { start: 50, end: 99 }
        );
        assert_eq!(parse_range("bytes=100-", 100), RangeAsk::Unsatisfiable);
        assert_eq!(parse_range("bytes=9-3", 100), RangeAsk::Unsatisfiable);
        assert_eq!(parse_range("bytes=x-y", 100), RangeAsk::Unsatisfiable);
        assert_eq!(parse_range("bytes=0-1,5-6", 100), RangeAsk::Whole);
        assert_eq!(parse_range("items=0-1", 100), RangeAsk::Whole);
    }

    #[test]
    fn paths_stay_in_the_library() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("lib");
        std::fs::create_dir_all(lib.join("书")).unwrap();
        std::fs::write(lib.join("书/a.mp3"), b"x").unwrap();
        std::fs::write(dir.path().join("secret.txt"), b"s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), lib.join("书/link.txt")).unwrap();
        assert!(resolve(&lib, "/%E4%B9%A6/a.mp3").is_ok());
        for bad in [
            "/../secret.txt",
            "/%2e%2e/secret.txt",
            "/书/link.txt",
            "/.cache/x",
            "/书/..%2f..%2fsecret.txt",
            "/",
            "/书",
        ] {
            assert!(resolve(&lib, bad).is_err(), "{bad}");
        }
    }
}
