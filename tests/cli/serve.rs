//! Podcast feeds (`build --feed-url`, a batch job's `feed_url`) read back
//! with an independent XML parser (roxmltree), and `tingshu serve` driven
//! by a real HTTP client: speech in MP3 and WAV, the Legado source, ranges,
//! the token, the limits. The espeak-ng voices throughout.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::support::cli::{Tingshu, fails, ok};
use crate::support::{ffmpeg, paths};

const BOOK: &str = "\
第一章 雾港
　　雾从海上漫过来，码头的灯一盏一盏亮了。
第二章 夜船
　　“船还回来吗？”阿禾问。老周点点头，没有说话。
第三章 灯塔
　　天亮以前，灯塔的光扫过水面，像一只慢慢睁开的眼睛。
";

fn voices() -> String {
    paths::repo()
        .join("voices/espeak.toml")
        .display()
        .to_string()
}

fn tingshu(dir: &Path, args: &[&str]) -> Tingshu {
    Tingshu::new(args)
        .dir(dir)
        .env_remove("TINGSHU_VOICES")
        .env_remove("TINGSHU_FORMAT")
        .env_remove("TINGSHU_OUT")
        .env_remove("TINGSHU_CACHE")
        .env_remove("TINGSHU_FEED_URL")
        .env_remove("TINGSHU_SERVE_TOKEN")
        .env_remove("TINGSHU_SERVE_BIND")
}

/// An item of a feed: (title, guid, url, length, type, episode).
#[derive(Debug, Clone, PartialEq)]
struct Item {
    title: String,
    guid: String,
    url: String,
    length: u64,
    kind: String,
    episode: u64,
    duration: String,
}

/// The items of a feed, read with roxmltree (not the writer's code).
fn items(feed: &str) -> Vec<Item> {
    let doc = roxmltree::Document::parse(feed).expect("the feed is well-formed XML");
    let rss = doc.root_element();
    assert_eq!(rss.tag_name().name(), "rss");
    assert_eq!(rss.attribute("version"), Some("2.0"));
    let itunes = "http://www.itunes.com/dtds/podcast-1.0.dtd";
    let child_text = |n: roxmltree::Node, ns: Option<&str>, name: &str| {
        n.children()
            .find(|c| c.tag_name().name() == name && c.tag_name().namespace() == ns)
            .and_then(|c| c.text())
            .unwrap_or_default()
            .to_owned()
    };
    doc.descendants()
        .filter(|n| n.has_tag_name("item"))
        .map(|item| {
            let enclosure = item
                .children()
                .find(|c| c.has_tag_name("enclosure"))
                .expect("an enclosure");
            Item {
                title: child_text(item, None, "title"),
                guid: child_text(item, None, "guid"),
                url: enclosure.attribute("url").unwrap().to_owned(),
                length: enclosure.attribute("length").unwrap().parse().unwrap(),
                kind: enclosure.attribute("type").unwrap().to_owned(),
                episode: child_text(item, Some(itunes), "episode").parse().unwrap(),
                duration: child_text(item, Some(itunes), "duration"),
            }
        })
        .collect()
}

/// The file an enclosure URL names under `BASE` in `out`.
fn enclosure_file(out: &Path, base: &str, url: &str) -> PathBuf {
    let rest = url.strip_prefix(base).expect("under the base URL");
    let mut path = out.to_path_buf();
    for segment in rest.split('/').filter(|s| !s.is_empty()) {
        path.push(
            percent_encoding::percent_decode_str(segment)
                .decode_utf8()
                .unwrap()
                .as_ref(),
        );
    }
    path
}

const BASE: &str = "http://192.168.1.5:8080/books";

#[test]
fn build_writes_a_feed_that_an_independent_parser_reads() {
    if !ffmpeg::tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("雾港.txt"), BOOK).unwrap();
    let build = |dir: &Path| {
        ok(&tingshu(
            dir,
            &[
                "build",
                "雾港.txt",
                "--voices",
                &voices(),
                "--format",
                "mp3",
            ],
        )
        .args(["--feed-url", BASE, "-o", "out"])
        .output());
    };
    build(dir.path());
    let out = dir.path().join("out");
    let feed = std::fs::read_to_string(out.join("雾港/feed.xml")).unwrap();
    let first = items(&feed);
    assert_eq!(first.len(), 3, "{feed}");
    for (n, item) in first.iter().enumerate() {
        assert_eq!(item.episode, n as u64 + 1);
        assert_eq!(item.kind, "audio/mpeg");
        let file = enclosure_file(&out, BASE, &item.url);
        assert_eq!(
            std::fs::metadata(&file).unwrap().len(),
            item.length,
            "{}",
            file.display()
        );
        assert!(file.extension().is_some_and(|e| e == "mp3"));
        let seconds: f64 = item.duration.parse().unwrap();
        assert!(
            (seconds - ffmpeg::duration_s(&file)).abs() <= 1.0,
            "{item:?}"
        );
        assert!(
            !item.url.contains(' ') && item.url.is_ascii(),
            "{}",
            item.url
        );
    }
    assert_eq!(first[1].title, "第二章 夜船");
    let opml = std::fs::read_to_string(out.join("feeds.opml")).unwrap();
    let doc = roxmltree::Document::parse(&opml).unwrap();
    let outlines: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("outline"))
        .map(|n| n.attribute("xmlUrl").unwrap().to_owned())
        .collect();
    assert_eq!(outlines, [format!("{BASE}/%E9%9B%BE%E6%B8%AF/feed.xml")]);

    // The same text again: the same guids, and the feed unchanged.
    build(dir.path());
    let again = std::fs::read_to_string(out.join("雾港/feed.xml")).unwrap();
    assert_eq!(items(&again), first);
    // Chapter 2 edited: only its guid changes.
    std::fs::write(
        dir.path().join("雾港.txt"),
        BOOK.replace("老周点点头", "老周摇摇头"),
    )
    .unwrap();
    build(dir.path());
    let edited = items(&std::fs::read_to_string(out.join("雾港/feed.xml")).unwrap());
    assert_eq!(edited.len(), 3);
    assert_eq!(edited[0].guid, first[0].guid);
    assert_ne!(edited[1].guid, first[1].guid);
    assert_eq!(edited[2].guid, first[2].guid);
}

#[test]
fn a_feed_of_wav_only_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("雾港.txt"), BOOK).unwrap();
    let out = tingshu(dir.path(), &["build", "雾港.txt", "--voices", &voices()])
        .args(["--feed-url", BASE, "-o", "out"])
        .output();
    fails(&out, 2, "--feed-url: a podcast feed needs MP3");
    assert!(!dir.path().join("out").exists());
    let out = tingshu(dir.path(), &["build", "雾港.txt", "--format", "mp3"])
        .args(["--feed-url", "ftp://host", "-o", "out"])
        .output();
    fails(&out, 2, "--feed-url \"ftp://host\": must start with http");
    assert!(!dir.path().join("out").exists());
}

#[test]
fn a_batch_run_that_adds_a_chapter_adds_one_item() {
    if !ffmpeg::tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("雾港.txt"), BOOK).unwrap();
    std::fs::write(
        dir.path().join("jobs.toml"),
        format!(
            "[[job]]\nname = \"wugang\"\nsource = \"雾港.txt\"\nvoices = \"{}\"\nformats = [\"mp3\"]\nout = \"lib\"\nfeed_url = \"{BASE}\"\n",
            voices()
        ),
    )
    .unwrap();
    let run = || ok(&tingshu(dir.path(), &["batch", "run", "jobs.toml"]).output());
    run();
    let feed_path = dir.path().join("lib/雾港/feed.xml");
    let before = items(&std::fs::read_to_string(&feed_path).unwrap());
    assert_eq!(before.len(), 3);
    // Nothing new: the feed is left as it is.
    run();
    assert_eq!(items(&std::fs::read_to_string(&feed_path).unwrap()), before);
    let mut text = BOOK.to_owned();
    text.push_str("第四章 归航\n　　早晨，船队排成一行，慢慢驶进了港口。\n");
    std::fs::write(dir.path().join("雾港.txt"), text).unwrap();
    run();
    let after = items(&std::fs::read_to_string(&feed_path).unwrap());
    assert_eq!(after.len(), 4);
    assert_eq!(&after[..3], &before[..]);
    assert_eq!(after[3].episode, 4);
    let file = enclosure_file(&dir.path().join("lib"), BASE, &after[3].url);
    assert_eq!(std::fs::metadata(file).unwrap().len(), after[3].length);
    // A WAV-only job with a feed is an error naming the key.
    std::fs::write(
        dir.path().join("bad.toml"),
        format!("[[job]]\nname = \"w\"\nsource = \"雾港.txt\"\nfeed_url = \"{BASE}\"\n"),
    )
    .unwrap();
    let out = tingshu(dir.path(), &["batch", "run", "bad.toml"]).output();
    fails(&out, 2, "key \"feed_url\"");
}

/// A running `tingshu serve`.
struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`, whatever address it listens on.
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(dir: &Path, extra: &[&str]) -> Server {
        let mut child = tingshu(dir, &["serve", "lib", "--voices", &voices()])
            .args(extra)
            .command()
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the server printed its URL");
        let port = line.trim().rsplit(':').next().unwrap().to_owned();
        assert!(line.starts_with("http://"), "{line}");
        Server {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// A library with the book rendered to MP3.
fn library() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("雾港.txt"), BOOK).unwrap();
    ok(&tingshu(
        dir.path(),
        &[
            "build",
            "雾港.txt",
            "--voices",
            &voices(),
            "--format",
            "mp3",
            "-o",
            "lib",
        ],
    )
    .output());
    dir
}

/// The samples of WAV bytes (hound, not the server's code).
fn samples(wav: &[u8]) -> (u32, Vec<i16>) {
    let reader = hound::WavReader::new(std::io::Cursor::new(wav)).unwrap();
    let rate = reader.spec().sample_rate;
    (rate, reader.into_samples().map(Result::unwrap).collect())
}

/// A streamed WAV (placeholder sizes: its length was not known when the
/// header went out) with its real sizes, as hound wants them.
fn real_sizes(wav: &[u8]) -> Vec<u8> {
    let mut fixed = wav.to_vec();
    let data = (fixed.len() - 44) as u32;
    fixed[4..8].copy_from_slice(&(data + 36).to_le_bytes());
    fixed[40..44].copy_from_slice(&data.to_le_bytes());
    fixed
}

const PASSAGE: &str = "雾从海上漫过来，码头的灯一盏一盏亮了。";

#[tokio::test(flavor = "multi_thread")]
async fn serve_speaks_and_serves_the_library() {
    if !ffmpeg::tools() {
        return;
    }
    let dir = library();
    let server = Server::start(dir.path(), &["--max-chars", "200", "--max-body", "4096"]);
    let http = client();
    let speech = |format: &str, input: &str| {
        http.post(format!("{}/v1/audio/speech", server.base))
            .json(&serde_json::json!({"model": "tingshu", "input": input, "voice": "default", "response_format": format}))
            .send()
    };

    // WAV: the same samples as `tingshu preview` of the same text.
    let wav = speech("wav", PASSAGE).await.unwrap();
    assert_eq!(wav.status(), 200);
    assert_eq!(wav.headers()["content-type"], "audio/wav");
    let wav = wav.bytes().await.unwrap().to_vec();
    let (rate, served) = samples(&real_sizes(&wav));
    let seconds = served.len() as f64 / f64::from(rate);
    assert!((1.5..15.0).contains(&seconds), "{seconds} s for {PASSAGE}");
    // `preview -o -` streams through the same path (short first clause,
    // each chunk levelled on its own): the same samples, to the last one.
    let streamed = tingshu(
        dir.path(),
        &["preview", PASSAGE, "--voices", &voices(), "-o", "-"],
    )
    .output();
    assert!(
        streamed.status.success(),
        "preview -o -: {}",
        String::from_utf8_lossy(&streamed.stderr)
    );
    let (preview_rate, previewed) = samples(&real_sizes(&streamed.stdout));
    assert_eq!(rate, preview_rate);
    assert_eq!(
        served.len(),
        previewed.len(),
        "server and preview sample counts"
    );
    assert!(
        served == previewed,
        "server and `preview -o -` differ in their samples"
    );

    // MP3 decodes (ffprobe) with about the same duration.
    let mp3 = speech("mp3", PASSAGE).await.unwrap();
    assert_eq!(mp3.status(), 200);
    assert_eq!(mp3.headers()["content-type"], "audio/mpeg");
    let path = dir.path().join("speech.mp3");
    std::fs::write(&path, mp3.bytes().await.unwrap()).unwrap();
    let mp3_s = ffmpeg::duration_s(&path);
    assert!(
        (mp3_s - seconds).abs() < 0.3,
        "mp3 {mp3_s} s, wav {seconds} s"
    );

    // Legado: import the sources, fill the first template, get audio.
    let sources: serde_json::Value = http
        .get(format!("{}/legado", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let sources = sources.as_array().unwrap();
    assert!(sources.len() >= 2, "{sources:?}");
    for s in sources {
        for key in ["name", "url", "contentType"] {
            assert!(s[key].is_string(), "{key} in {s}");
        }
    }
    let template = sources[0]["url"].as_str().unwrap();
    assert!(template.starts_with(&server.base), "{template}");
    let url = template
        .replace(
            "{{speakText}}",
            &percent_encoding::utf8_percent_encode(PASSAGE, percent_encoding::NON_ALPHANUMERIC)
                .to_string(),
        )
        .replace("{{speakSpeed}}", "15");
    let legado = http.get(url).send().await.unwrap();
    assert_eq!(legado.status(), 200);
    let path = dir.path().join("legado.mp3");
    std::fs::write(&path, legado.bytes().await.unwrap()).unwrap();
    let fast_s = ffmpeg::duration_s(&path);
    assert!(
        fast_s < seconds * 0.8,
        "speed 15 reads faster: {fast_s} s vs {seconds} s"
    );
    // POST form, as a Legado POST template sends it.
    let form = http
        .post(format!("{}/legado/speak", server.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            form_urlencoded::Serializer::new(String::new())
                .extend_pairs([("text", PASSAGE), ("speed", "5"), ("format", "wav")])
                .finish(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 200);
    assert_eq!(form.headers()["content-type"], "audio/wav");

    // Ranges of a library file.
    let file = dir.path().join("lib/雾港/0001-第一章_雾港.mp3");
    let bytes = std::fs::read(&file).unwrap();
    let url = format!(
        "{}/%E9%9B%BE%E6%B8%AF/0001-%E7%AC%AC%E4%B8%80%E7%AB%A0_%E9%9B%BE%E6%B8%AF.mp3",
        server.base
    );
    let part = http
        .get(&url)
        .header("Range", "bytes=100-199")
        .send()
        .await
        .unwrap();
    assert_eq!(part.status(), 206);
    assert_eq!(part.headers()["accept-ranges"], "bytes");
    assert_eq!(
        part.headers()["content-range"],
        format!("bytes 100-199/{}", bytes.len()).as_str()
    );
    let etag = part.headers()["etag"].to_str().unwrap().to_owned();
    assert_eq!(part.bytes().await.unwrap().as_ref(), &bytes[100..200]);
    let tail = http
        .get(&url)
        .header("Range", "bytes=-10")
        .send()
        .await
        .unwrap();
    assert_eq!(
        tail.bytes().await.unwrap().as_ref(),
        &bytes[bytes.len() - 10..]
    );
    let whole = http.get(&url).send().await.unwrap();
    assert_eq!(whole.status(), 200);
    assert_eq!(
        whole.headers()["content-length"],
        bytes.len().to_string().as_str()
    );
    assert_eq!(whole.bytes().await.unwrap().as_ref(), &bytes[..]);
    let beyond = http
        .get(&url)
        .header("Range", format!("bytes={}-", bytes.len()))
        .send()
        .await
        .unwrap();
    assert_eq!(beyond.status(), 416);
    let same = http
        .get(&url)
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(same.status(), 304);
    // The served feed lists the files at this server's address.
    let feed = http
        .get(format!("{}/%E9%9B%BE%E6%B8%AF/feed.xml", server.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let listed = items(&feed);
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0].url, url);
    // Nothing outside the library, nothing hidden.
    for bad in [
        "/%2e%2e/%E9%9B%BE%E6%B8%AF.txt",
        "/.cache/x",
        "/%E9%9B%BE%E6%B8%AF/..%2F..%2F%E9%9B%BE%E6%B8%AF.txt",
    ] {
        let r = http
            .get(format!("{}{bad}", server.base))
            .send()
            .await
            .unwrap();
        assert!(
            matches!(r.status().as_u16(), 403 | 404),
            "{bad}: {}",
            r.status()
        );
    }

    // Limits: text over --max-chars and a body over --max-body are 413.
    let long = "灯".repeat(201);
    assert_eq!(speech("wav", &long).await.unwrap().status(), 413);
    let huge = "a".repeat(5000);
    let r = http
        .post(format!("{}/v1/audio/speech", server.base))
        .header("content-type", "application/json")
        .body(format!("{{\"input\":\"{huge}\"}}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    // Another Host on a loopback server (DNS rebinding) is refused.
    let r = http
        .get(format!("{}/legado", server.base))
        .header("Host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_is_bounded_and_needs_its_token_off_loopback() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("lib")).unwrap();
    // Off loopback without a token: refused at start.
    let out = tingshu(dir.path(), &["serve", "lib", "--bind", "0.0.0.0:0"]).output();
    fails(
        &out,
        2,
        "--bind 0.0.0.0:0: not a loopback address; give --token",
    );

    let token = "s3cret-token";
    let server = Server::start(
        dir.path(),
        &[
            "--bind",
            "0.0.0.0:0",
            "--token",
            token,
            "--max-syntheses",
            "1",
            "--max-queued",
            "0",
        ],
    );
    let http = client();
    let url = format!("{}/v1/audio/speech", server.base);
    let body = serde_json::json!({"input": PASSAGE, "response_format": "pcm"});
    let r = http.post(&url).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.headers().contains_key("www-authenticate"));
    let r = http
        .get(format!("{}/legado", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // Off loopback the Host check stays on: addresses and localhost pass,
    // another name (DNS rebinding) is refused even with the token.
    let r = http
        .get(format!("{}/legado", server.base))
        .bearer_auth(token)
        .header("Host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = http
        .post(&url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(!r.bytes().await.unwrap().is_empty());
    // The Legado sources carry the token in their URL.
    let sources: serde_json::Value = http
        .get(format!("{}/legado?token={token}", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        sources[0]["url"]
            .as_str()
            .unwrap()
            .contains(&format!("token={token}"))
    );

    // One synthesis at a time and no queue: a second request while a long
    // one streams (its body unread) is 503 with Retry-After.
    let long = "雾从海上漫过来，码头的灯一盏一盏亮了。".repeat(60);
    let first = http
        .post(&url)
        .bearer_auth(token)
        .json(&serde_json::json!({"input": long, "response_format": "wav"}))
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let second = http
        .post(&url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(second.status(), 503);
    assert!(second.headers().contains_key("retry-after"));
    drop(first);

    // A name given with --allow-host is accepted.
    let named = Server::start(
        dir.path(),
        &[
            "--bind",
            "0.0.0.0:0",
            "--token",
            token,
            "--allow-host",
            "tingshu.lan",
        ],
    );
    let r = http
        .get(format!("{}/legado", named.base))
        .bearer_auth(token)
        .header("Host", "tingshu.lan")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}
