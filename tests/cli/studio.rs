//! `tingshu studio`: the real binary serving a fixture book with the
//! espeak-ng voices, driven by a plain HTTP client (every endpoint, bad
//! input, the security rules) and by Debian's chromium through chromedriver
//! (W3C WebDriver JSON over plain HTTP), skipped without them (a failure
//! with `TINGSHU_REQUIRE_SERVICES=1`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tingshu::text::Cast;

use crate::support::cli::Tingshu;
use crate::support::tts_server::TtsServer;
use crate::support::{paths, services};

const BOOK: &str = "\
第一章 山路
　　天快黑了，韩小雨背着竹篓走下山坡，风从松林里吹过来。
　　“前面就是镇子了吗？”韩小雨回头问。
　　陆大川摇摇头：“还早呢，先找个地方歇脚。”
　　两人沿着小河又走了很久，直到看见一盏灯。
第二章 客栈
　　客栈的门半开着，里面有人在算账。
　　「住店。」陸大川說，「要兩間房。」
　　韩小雨放下竹篓，坐在门边喝了一碗热水。
";

const CAST: &str = "\
[[character]]
name = \"韩小雨\"
aliases = [\"小雨\"]
gender = \"female\"

[[character]]
name = \"陆大川\"
aliases = [\"陸大川\", \"大川\"]
gender = \"male\"
";

/// A fixture directory: the book, its cast and (empty) lexicon.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("山路.txt"), BOOK).unwrap();
        std::fs::write(dir.path().join("cast.toml"), CAST).unwrap();
        Fixture { dir }
    }

    /// No cast file, and a book where two people speak often enough to be
    /// found.
    fn without_cast() -> Fixture {
        let fixture = Fixture::new();
        std::fs::remove_file(fixture.path("cast.toml")).unwrap();
        let mut book = String::from("第一章 渡口\n");
        for _ in 0..3 {
            book.push_str("　　“船来了吗？”韩小雨问。她放下竹篓。\n");
            book.push_str("　　“还没有。”陆大川说。他看了看河面。\n");
        }
        std::fs::write(fixture.path("山路.txt"), book).unwrap();
        fixture
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn voices_file() -> String {
    paths::repo()
        .join("voices/espeak.toml")
        .display()
        .to_string()
}

/// A running `tingshu studio`; stopped when dropped.
struct Studio {
    child: Child,
    url: String,
    base: String,
    token: String,
}

impl Drop for Studio {
    fn drop(&mut self) {
        crate::support::cli::stop(&mut self.child);
    }
}

/// `tingshu ARGS` in `dir`, without the settings a caller's environment
/// may hold.
fn tingshu(dir: &Path, args: &[&str]) -> Tingshu {
    Tingshu::new(args)
        .dir(dir)
        .env_remove("TINGSHU_VOICES")
        .env_remove("TINGSHU_CAST")
        .env_remove("TINGSHU_LEXICON")
        .env_remove("TINGSHU_CACHE")
        .env_remove("TINGSHU_STUDIO_TOKEN")
        .env_remove("TINGSHU_STUDIO_BIND")
}

impl Studio {
    fn start(fixture: &Fixture) -> Studio {
        Studio::start_with(fixture, &[])
    }

    /// The studio with `extra` arguments. A studio bound to 0.0.0.0 (a
    /// non-loopback bind) is reached at 127.0.0.1.
    fn start_with(fixture: &Fixture, extra: &[&str]) -> Studio {
        Studio::start_voices(fixture, &voices_file(), extra)
    }

    /// [`Studio::start_with`] with the voices file `voices`.
    fn start_voices(fixture: &Fixture, voices: &str, extra: &[&str]) -> Studio {
        let mut child = tingshu(
            fixture.dir.path(),
            &["studio", "山路.txt", "--voices", voices],
        )
        .args(["--cast", "cast.toml", "--lexicon", "lexicon.toml"])
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
            .expect("the studio printed its URL");
        let printed = line.trim().to_owned();
        let (address, token) = printed
            .split_once("/?token=")
            .unwrap_or_else(|| panic!("first line is the URL: {printed:?}"));
        // Off loopback the address printed is one a phone could open (this
        // machine's), never 0.0.0.0; the tests reach it on 127.0.0.1.
        assert!(
            address.starts_with("http://") && !address.contains("0.0.0.0"),
            "{printed}"
        );
        let port = address.rsplit(':').next().unwrap();
        let base = format!("http://127.0.0.1:{port}");
        Studio {
            url: format!("{base}/?token={token}"),
            token: token.to_owned(),
            base,
            child,
        }
    }

    fn at(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn send(
    studio: &Studio,
    method: reqwest::Method,
    path: &str,
    body: Option<String>,
    token: Option<&str>,
) -> (u16, String, Vec<u8>) {
    let mut request = client().request(method, studio.at(path));
    if let Some(token) = token {
        request = request.header("X-Tingshu-Token", token);
    }
    if let Some(body) = body {
        request = request
            .header("Content-Type", "application/json")
            .body(body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, kind, response.bytes().await.unwrap().to_vec())
}

async fn get_json(studio: &Studio, path: &str) -> Value {
    let (status, _, body) = send(studio, reqwest::Method::GET, path, None, None).await;
    assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

/// A change with the token: (status, JSON or error body).
async fn change(studio: &Studio, method: reqwest::Method, path: &str, body: Value) -> (u16, Value) {
    let (status, _, bytes) = send(
        studio,
        method,
        path,
        Some(body.to_string()),
        Some(&studio.token),
    )
    .await;
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// Seconds of audio in WAV bytes (decoded with hound).
fn wav_seconds(bytes: &[u8]) -> f64 {
    let reader = hound::WavReader::new(std::io::Cursor::new(bytes)).unwrap();
    let spec = reader.spec();
    let samples = reader.into_samples::<i16>().map(Result::unwrap).count();
    samples as f64 / f64::from(spec.sample_rate) / f64::from(spec.channels)
}

async fn preview(studio: &Studio, body: Value) -> f64 {
    let (status, kind, bytes) = send(
        studio,
        reqwest::Method::POST,
        "/api/preview",
        Some(body.to_string()),
        Some(&studio.token),
    )
    .await;
    assert_eq!(status, 200, "{body}: {}", String::from_utf8_lossy(&bytes));
    assert_eq!(kind, "audio/wav");
    wav_seconds(&bytes)
}

#[tokio::test]
async fn without_a_cast_file_speakers_show_the_guessed_gender_and_why() {
    let fixture = Fixture::without_cast();
    // What `split --suggest-cast` says of the same book, read back as a cast.
    let suggested = crate::support::cli::ok(
        &tingshu(fixture.dir.path(), &["split", "山路.txt", "--suggest-cast"]).output(),
    );
    let cast = Cast::parse(&suggested, Path::new("suggested.toml")).unwrap();
    assert!(!cast.characters.is_empty(), "{suggested}");
    let studio = Studio::start(&fixture);
    let book = get_json(&studio, "/api/book").await;
    let speakers = book["speakers"].as_array().unwrap();
    for c in &cast.characters {
        let Some(s) = speakers.iter().find(|s| s["name"] == c.name.as_str()) else {
            continue;
        };
        assert_eq!(s["in_cast"], false, "{s}");
        assert_eq!(s["gender"], c.gender.as_str(), "{s}");
        let evidence = s["evidence"].as_str().unwrap();
        assert!(
            evidence.starts_with(&format!("gender {}, confidence ", c.gender.as_str())),
            "{evidence}"
        );
        // The same line the cast file's comment holds.
        assert!(suggested.contains(&format!("# {evidence}\n")), "{evidence}");
        let confidence = s["confidence"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&confidence), "{s}");
    }
    assert!(
        speakers.iter().any(|s| s["evidence"].is_string()),
        "{speakers:?}"
    );
}

#[tokio::test]
async fn serves_the_page_book_chapters_and_previews() {
    let fixture = Fixture::new();
    let studio = Studio::start(&fixture);
    assert_eq!(studio.token.len(), 32, "random 128-bit token");

    let (status, kind, page) = send(&studio, reqwest::Method::GET, "/", None, None).await;
    assert_eq!((status, kind.as_str()), (200, "text/html; charset=utf-8"));
    let page = String::from_utf8(page).unwrap();
    assert!(page.contains("<script src=\"/studio.js\""), "{page}");
    assert!(!page.contains("http://") && !page.contains("https://"));
    for (path, kind) in [
        ("/studio.js", "text/javascript"),
        ("/studio.css", "text/css"),
    ] {
        let (status, got, body) = send(&studio, reqwest::Method::GET, path, None, None).await;
        assert_eq!(status, 200);
        assert!(got.starts_with(kind), "{path}: {got}");
        assert!(!String::from_utf8(body).unwrap().contains("https://"));
    }

    let book = get_json(&studio, "/api/book").await;
    let titles: Vec<&str> = book["chapters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["第一章 山路", "第二章 客栈"]);
    let speakers: Vec<&str> = book["speakers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(speakers, ["韩小雨", "陆大川"]);
    assert_eq!(book["speakers"][0]["reads_with"], "female");
    assert_eq!(book["speakers"][1]["reads_with"], "dialogue");
    let voices: Vec<&str> = book["voices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(voices, ["dialogue", "female", "narrator"]);
    assert_eq!(book["voices"][0]["type"], "espeak");

    let chapter = get_json(&studio, "/api/chapters/2").await;
    assert_eq!(chapter["title"], "第二章 客栈");
    // Traditional text is shown as written, with its speaker.
    let p2 = &chapter["paragraphs"][1];
    assert_eq!(p2["paragraph"], 2);
    assert_eq!(p2["segments"][0]["text"], "「住店。」");
    assert_eq!(p2["segments"][0]["kind"], "dialogue");
    assert_eq!(p2["segments"][0]["speaker"], "陆大川");
    assert_eq!(p2["segments"][0]["voice"], "dialogue");
    assert_eq!(p2["segments"][1]["text"], "陸大川說，");
    for bad in ["/api/chapters/0", "/api/chapters/3", "/api/chapters/x"] {
        let (status, _, body) = send(&studio, reqwest::Method::GET, bad, None, None).await;
        assert_eq!(status, 404, "{bad}");
        let error: Value = serde_json::from_slice(&body).unwrap();
        assert!(error["error"].as_str().unwrap().contains("chapters 1 to 2"));
    }

    // Previews: a text, paragraphs of a chapter, a voice sample.
    assert!(preview(&studio, json!({"text": "风从松林里吹过来。"})).await > 0.5);
    let one = preview(&studio, json!({"chapter": 1, "paragraphs": [2, 2]})).await;
    let two = preview(&studio, json!({"chapter": 1, "paragraphs": [2, 3]})).await;
    assert!(one > 0.5 && two > one + 0.5, "{one} {two}");
    assert!(preview(&studio, json!({"text": "你好。", "voice": "female"})).await > 0.2);
    // Streamed: a WAV header with placeholder sizes, then 16-bit PCM chunk
    // by chunk; as long as the passage, give or take the edge pauses.
    let (status, kind, streamed) = send(
        &studio,
        reqwest::Method::POST,
        "/api/preview",
        Some(json!({"chapter": 1, "paragraphs": [2, 3], "stream": true}).to_string()),
        Some(&studio.token),
    )
    .await;
    assert_eq!((status, kind.as_str()), (200, "audio/wav"));
    assert_eq!(&streamed[..4], b"RIFF");
    assert_eq!(&streamed[36..40], b"data");
    assert_eq!(&streamed[40..44], &u32::MAX.to_le_bytes());
    let rate = u32::from_le_bytes(streamed[24..28].try_into().unwrap());
    assert_eq!(rate, 22050);
    assert_eq!(streamed.len() % 2, 0);
    let streamed_s = (streamed.len() - 44) as f64 / 2.0 / f64::from(rate);
    assert!(
        (streamed_s - (two - 1.5)).abs() < 1.0,
        "streamed {streamed_s} s, whole {two} s"
    );
    for (body, status, message) in [
        (json!({"text": "你好", "chapter": 1}), 400, "not both"),
        (json!({}), 400, "give text or chapter"),
        (json!({"chapter": 1, "paragraphs": [3, 2]}), 400, "1-based"),
        (
            json!({"chapter": 1, "paragraphs": [9, 9]}),
            404,
            "none in chapter 1",
        ),
        (json!({"chapter": 7}), 404, "chapters 1 to 2"),
        (
            json!({"text": "你好", "voice": "robot"}),
            400,
            "no voice 'robot'",
        ),
        (json!({"text": "……"}), 400, "nothing to read"),
        (json!({"txt": "你好"}), 400, "unknown field `txt`"),
        (json!({"text": "好".repeat(2001)}), 413, "longer than 2000"),
    ] {
        let (got, answer) =
            change(&studio, reqwest::Method::POST, "/api/preview", body.clone()).await;
        assert_eq!(got, status, "{body}: {answer}");
        let error = answer["error"].as_str().unwrap();
        assert!(error.contains(message), "{body}: {error}");
    }
    let (status, _, body) = send(
        &studio,
        reqwest::Method::POST,
        "/api/preview",
        Some("{\"text\": ".into()),
        Some(&studio.token),
    )
    .await;
    assert_eq!(status, 400);
    let error: Value = serde_json::from_slice(&body).unwrap();
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .starts_with("request body: EOF"),
        "{error}"
    );
    let huge = json!({"text": "好".repeat(100_000)}).to_string();
    let (status, _, body) = send(
        &studio,
        reqwest::Method::POST,
        "/api/preview",
        Some(huge),
        Some(&studio.token),
    )
    .await;
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&body));
    let error: Value = serde_json::from_slice(&body).unwrap();
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("over 262144 bytes")
    );

    // The pinyin of a text with the book's lexicon.
    let p = get_json(&studio, "/api/pinyin?text=%E5%B0%8F%E9%9B%A8").await;
    assert_eq!(p["pinyin"], json!(["xiao3", "yu3"]));
}

#[tokio::test]
async fn changes_need_the_token_and_stay_inside_the_studio() {
    let fixture = Fixture::new();
    let studio = Studio::start(&fixture);
    let body = json!({"text": "你好"}).to_string();
    for token in [None, Some(""), Some("0123"), Some(&studio.token[..31])] {
        for (method, path) in [
            (reqwest::Method::POST, "/api/preview"),
            (reqwest::Method::PUT, "/api/cast"),
            (reqwest::Method::PUT, "/api/lexicon"),
            (reqwest::Method::POST, "/api/render"),
        ] {
            let (status, _, answer) = send(&studio, method, path, Some(body.clone()), token).await;
            assert_eq!(status, 403, "{path} with {token:?}");
            assert!(String::from_utf8_lossy(&answer).contains("X-Tingshu-Token"));
        }
    }
    assert_eq!(
        std::fs::read_to_string(fixture.path("cast.toml")).unwrap(),
        CAST
    );
    assert!(!fixture.path("lexicon.toml").exists());

    // No request path reaches the filesystem.
    std::fs::write(fixture.path("secret.txt"), "秘密").unwrap();
    for path in [
        "/secret.txt",
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/studio.js/../secret.txt",
        "/api/renders/..%2Fsecret.txt",
        "/api/chapters/..%2F..%2Fsecret.txt",
        "/api/renders/1",
        "/etc/passwd",
    ] {
        let (status, _, answer) = send(&studio, reqwest::Method::GET, path, None, None).await;
        assert!(status == 404 || status == 400, "{path}: {status}");
        assert!(!String::from_utf8_lossy(&answer).contains("秘密"), "{path}");
    }

    // Another site's name for 127.0.0.1 (DNS rebinding) is refused.
    let response = client()
        .get(studio.at("/api/book"))
        .header("Host", "evil.example:80")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
    let response = client()
        .get(studio.at("/api/book"))
        .header("Host", "localhost")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let headers = client().get(studio.at("/")).send().await.unwrap();
    let csp = headers.headers()["content-security-policy"]
        .to_str()
        .unwrap();
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert_eq!(headers.headers()["referrer-policy"], "no-referrer");
}

/// A request to `studio` with `headers`: (status, headers, body).
async fn request(
    studio: &Studio,
    method: reqwest::Method,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut request = client().request(method.clone(), studio.at(path));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if method != reqwest::Method::GET {
        request = request
            .header("Content-Type", "application/json")
            .body(json!({"text": "你好"}).to_string());
    }
    let response = tokio::time::timeout(Duration::from_secs(60), request.send())
        .await
        .unwrap()
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    // The event stream stays open: only its status and headers are read.
    let body = if path == "/api/events" && status == 200 {
        String::new()
    } else {
        response.text().await.unwrap()
    };
    (status, headers, body)
}

#[tokio::test]
async fn off_loopback_every_request_needs_the_token() {
    let fixture = Fixture::new();
    let token = "studio-token-0123456789";
    let studio = Studio::start_with(
        &fixture,
        &[
            "--bind",
            "0.0.0.0:0",
            "--token",
            token,
            "--allow-host",
            "studio.test",
        ],
    );
    assert_eq!(studio.token, token);
    let get = reqwest::Method::GET;
    let routes = [
        (get.clone(), "/"),
        (get.clone(), "/studio.js"),
        (get.clone(), "/studio.css"),
        (get.clone(), "/api/book"),
        (get.clone(), "/api/chapters/1"),
        (get.clone(), "/api/cast"),
        (get.clone(), "/api/lexicon"),
        (get.clone(), "/api/pinyin?text=%E4%BD%A0"),
        (get.clone(), "/api/events"),
        (get.clone(), "/api/renders/1"),
        (get.clone(), "/no/such/page"),
        (reqwest::Method::POST, "/api/preview"),
        (reqwest::Method::PUT, "/api/cast"),
        (reqwest::Method::PUT, "/api/lexicon"),
        (reqwest::Method::POST, "/api/render"),
    ];
    let wrong_cookie = "tingshu-studio-0=studio-token-0123456789".to_owned();
    let port = studio.base.rsplit(':').next().unwrap().to_owned();
    let other_cookie = format!("tingshu-studio-{port}=studio-token-012345678");
    for (method, path) in &routes {
        for headers in [
            vec![],
            vec![("X-Tingshu-Token", "studio-token-012345678")],
            vec![("Authorization", "Bearer nope")],
            vec![("Cookie", other_cookie.as_str())],
            vec![("Cookie", wrong_cookie.as_str())],
        ] {
            let (status, _, body) = request(&studio, method.clone(), path, &headers).await;
            assert_eq!(status, 401, "{method} {path} with {headers:?}: {body}");
            assert!(body.contains("needs its token"), "{body}");
            assert!(!body.contains(token), "{body}");
        }
    }
    // The token in the address of anything but the page is not enough.
    let (status, _, _) = request(
        &studio,
        get.clone(),
        &format!("/api/book?token={token}"),
        &[],
    )
    .await;
    assert_eq!(status, 401);
    let (status, _, _) = request(&studio, get.clone(), "/?token=studio-token", &[]).await;
    assert_eq!(status, 401);

    // The page opened with its token sets a cookie that carries it.
    let (status, headers, page) =
        request(&studio, get.clone(), &format!("/?token={token}"), &[]).await;
    assert_eq!(status, 200, "{page}");
    let set_cookie = headers["set-cookie"].to_str().unwrap();
    let cookie = set_cookie.split(';').next().unwrap().to_owned();
    assert_eq!(cookie, format!("tingshu-studio-{port}={token}"));
    let attributes: Vec<&str> = set_cookie.split(';').map(str::trim).collect();
    assert!(attributes.contains(&"HttpOnly"), "{set_cookie}");
    assert!(attributes.contains(&"SameSite=Strict"), "{set_cookie}");
    assert!(attributes.contains(&"Path=/"), "{set_cookie}");
    for path in [
        "/studio.js",
        "/api/book",
        "/api/chapters/1",
        "/api/cast",
        "/api/events",
    ] {
        let (status, _, body) = request(&studio, get.clone(), path, &[("Cookie", &cookie)]).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    // Past the token: no render yet.
    let (status, _, body) = request(
        &studio,
        get.clone(),
        "/api/renders/1",
        &[("Cookie", &cookie)],
    )
    .await;
    assert_eq!(status, 404, "{body}");
    let book: Value = serde_json::from_str(
        &request(
            &studio,
            get.clone(),
            "/api/book",
            &[("X-Tingshu-Token", token)],
        )
        .await
        .2,
    )
    .unwrap();
    assert_eq!(book["chapters"].as_array().unwrap().len(), 2);
    let (status, _, _) = request(
        &studio,
        get.clone(),
        "/api/cast",
        &[("Authorization", &format!("Bearer {token}"))],
    )
    .await;
    assert_eq!(status, 200);
    // A change still needs the header: the cookie alone (which a form of
    // another site could make a browser send) is refused.
    let (status, _, body) = request(
        &studio,
        reqwest::Method::PUT,
        "/api/lexicon",
        &[("Cookie", &cookie)],
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(!fixture.path("lexicon.toml").exists());

    // The Host check stays on: an address or an allowed name, not another
    // site's name for this machine.
    for (host, status) in [
        ("evil.example", 403),
        ("127.0.0.1.evil.example:80", 403),
        ("studio.test:8080", 200),
        ("192.0.2.7:8080", 200),
        ("[2001:db8::7]:8080", 200),
        ("localhost", 200),
    ] {
        let (got, _, body) = request(
            &studio,
            get.clone(),
            "/api/book",
            &[("Host", host), ("X-Tingshu-Token", token)],
        )
        .await;
        assert_eq!(got, status, "Host {host}: {body}");
    }
}

#[tokio::test]
async fn previews_beyond_the_queue_get_503() {
    let fixture = Fixture::new();
    let studio = Studio::start_with(&fixture, &["--max-syntheses", "1", "--max-queued", "1"]);
    // Long enough that the first is still being read when the last arrive.
    let text = "两人沿着小河又走了很久，直到看见一盏灯。".repeat(30);
    let answers = futures::future::join_all((0..6).map(|i| {
        let body = if i % 2 == 0 {
            json!({"text": text})
        } else {
            json!({"text": text, "stream": true})
        };
        let request = client()
            .post(studio.at("/api/preview"))
            .header("X-Tingshu-Token", &studio.token)
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send();
        async move {
            let response = request.await.unwrap();
            let status = response.status().as_u16();
            let retry = response
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_owned());
            (status, retry, response.bytes().await.unwrap().to_vec())
        }
    }))
    .await;
    let mut played = 0;
    let mut refused = 0;
    for (status, retry, body) in &answers {
        match status {
            200 => {
                played += 1;
                // Streamed or not, the audio is whole: hound reads the
                // samples the header promises, or all there are.
                assert!(body.len() > 100_000, "{} bytes", body.len());
            }
            503 => {
                refused += 1;
                assert_eq!(retry.as_deref(), Some("2"));
                assert!(String::from_utf8_lossy(body).contains("busy"));
            }
            other => panic!("status {other}: {}", String::from_utf8_lossy(body)),
        }
    }
    // One reads, one waits, the other four are refused at once.
    assert!((1..=2).contains(&played), "{played} played");
    assert_eq!(played + refused, 6);
    // The queue is free again afterwards.
    assert!(preview(&studio, json!({"text": "你好。"})).await > 0.2);
}

#[tokio::test]
async fn cast_and_lexicon_edits_are_checked_then_written() {
    let fixture = Fixture::new();
    let studio = Studio::start(&fixture);
    let cast = get_json(&studio, "/api/cast").await;
    assert_eq!(cast["characters"][0]["name"], "韩小雨");
    assert!(cast["file"].as_str().unwrap().ends_with("cast.toml"));

    // Giving 韩小雨 the narrator's voice writes the cast file and recasts.
    let mut characters = cast["characters"].clone();
    characters[0]["voice"] = "narrator".into();
    let (status, answer) = change(
        &studio,
        reqwest::Method::PUT,
        "/api/cast",
        json!({"characters": characters}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let written = Cast::load(&fixture.path("cast.toml")).unwrap();
    assert_eq!(written.characters[0].voice.as_deref(), Some("narrator"));
    assert_eq!(written.characters[1].aliases, ["陸大川", "大川"]);
    let book = get_json(&studio, "/api/book").await;
    assert_eq!(book["speakers"][0]["reads_with"], "narrator");
    let chapter = get_json(&studio, "/api/chapters/1").await;
    assert_eq!(chapter["paragraphs"][1]["segments"][0]["voice"], "narrator");

    // Bad edits get the cast file's file:key message; the file stays.
    let before = std::fs::read_to_string(fixture.path("cast.toml")).unwrap();
    let mut bad = characters.clone();
    bad[1]["gender"] = "boy".into();
    let mut unknown_voice = characters.clone();
    unknown_voice[1]["voice"] = "robot".into();
    let mut taken = characters.clone();
    taken[1]["aliases"] = json!(["小雨"]);
    for (body, message) in [
        (
            json!({"characters": bad}),
            "cast.toml: line 15, key gender: unknown variant `boy`",
        ),
        (
            json!({"characters": unknown_voice}),
            "cast.toml: character.陆大川.voice: unknown voice 'robot'",
        ),
        (
            json!({"characters": taken}),
            "cast.toml: character[1].aliases: \"小雨\" is already used by character \"韩小雨\"",
        ),
        (
            json!({"toml": "[[character]]\nname = \"甲\"\nage = 3\n"}),
            "cast.toml: line 3, key age: unknown field `age`",
        ),
        (
            json!({"characters": [{"name": "甲", "mood": "sad"}]}),
            "request body: unknown field `mood`",
        ),
        (json!({}), "give characters or toml"),
    ] {
        let (status, answer) =
            change(&studio, reqwest::Method::PUT, "/api/cast", body.clone()).await;
        assert_eq!(status, 400, "{body}");
        let error = answer["error"].as_str().unwrap();
        assert!(error.contains(message), "{body}: {error}");
        assert!(!error.contains('\n'));
        assert_eq!(
            std::fs::read_to_string(fixture.path("cast.toml")).unwrap(),
            before
        );
    }

    // Readings go to the lexicon file, which did not exist.
    assert!(
        get_json(&studio, "/api/lexicon").await["entries"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let (status, answer) = change(
        &studio,
        reqwest::Method::PUT,
        "/api/lexicon",
        json!({"word": "小雨", "pinyin": "xiao3 yu4"}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["entries"],
        json!([{"word": "小雨", "pinyin": "xiao3 yu4", "say": null}])
    );
    let p = get_json(&studio, "/api/pinyin?text=%E5%B0%8F%E9%9B%A8").await;
    assert_eq!(p["pinyin"], json!(["xiao3", "yu4"]));
    let (status, _) = change(
        &studio,
        reqwest::Method::PUT,
        "/api/lexicon",
        json!({"word": "歇脚", "say": "休息"}),
    )
    .await;
    assert_eq!(status, 200);
    let text = std::fs::read_to_string(fixture.path("lexicon.toml")).unwrap();
    assert!(text.contains("\"小雨\" = \"xiao3 yu4\""), "{text}");
    assert!(text.contains("\"歇脚\" = { say = \"休息\" }"), "{text}");
    for (body, message) in [
        (
            json!({"word": "小雨", "pinyin": "xiao3"}),
            "lexicon.toml:2: key \"小雨\": 1 syllables for 2 characters",
        ),
        (
            json!({"word": "小雨", "pinyin": "xiao yu"}),
            "key \"小雨\": bad syllable \"xiao\"",
        ),
        (
            json!({"word": "", "pinyin": "a1"}),
            "word: must not be empty",
        ),
        (json!({"word": "小雨"}), "give pinyin, say or remove"),
        (json!({"toml": "\"好\" = 3"}), "key \"好\""),
        (json!({"word": "小雨", "tone": 4}), "unknown field `tone`"),
    ] {
        let (status, answer) =
            change(&studio, reqwest::Method::PUT, "/api/lexicon", body.clone()).await;
        assert_eq!(status, 400, "{body}: {answer}");
        let error = answer["error"].as_str().unwrap();
        assert!(error.contains(message), "{body}: {error}");
        assert_eq!(
            std::fs::read_to_string(fixture.path("lexicon.toml")).unwrap(),
            text
        );
    }
    let (status, answer) = change(
        &studio,
        reqwest::Method::PUT,
        "/api/lexicon",
        json!({"word": "歇脚", "remove": true}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(answer["entries"].as_array().unwrap().len(), 1);
    // The file written is the one `tingshu pinyin --lexicon` reads.
    assert_eq!(
        pinyin_with(&fixture, Some("lexicon.toml"), "小雨"),
        "xiao3 yu4"
    );
}

/// `tingshu pinyin [--lexicon L]` of one line.
fn pinyin_with(fixture: &Fixture, lexicon: Option<&str>, line: &str) -> String {
    let mut run = tingshu(fixture.dir.path(), &["pinyin"]);
    if let Some(l) = lexicon {
        run = run.args(["--lexicon", l]);
    }
    let out = run.stdin(format!("{line}\n")).output();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[tokio::test]
async fn renders_chapters_with_progress_events() {
    let fixture = Fixture::new();
    let studio = Studio::start(&fixture);
    let mut events = client().get(studio.at("/api/events")).send().await.unwrap();
    assert_eq!(events.headers()["content-type"], "text/event-stream");
    for (body, status) in [
        (json!({"chapters": []}), 400),
        (json!({"chapters": [3]}), 404),
        (json!({"chapters": "1"}), 400),
    ] {
        assert_eq!(
            change(&studio, reqwest::Method::POST, "/api/render", body)
                .await
                .0,
            status
        );
    }
    let (status, answer) = change(
        &studio,
        reqwest::Method::POST,
        "/api/render",
        json!({"chapters": [2, 1]}),
    )
    .await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["chapters"], json!([1, 2]));
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !seen.contains("\"state\":\"finished\"") {
        assert!(Instant::now() < deadline, "no finished event: {seen}");
        let chunk = tokio::time::timeout(Duration::from_secs(60), events.chunk())
            .await
            .unwrap()
            .unwrap()
            .expect("the event stream stays open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let states: Vec<Value> = seen
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(seen.contains("event: render"));
    assert_eq!(states[0]["state"], "started");
    let chapters: Vec<&Value> = states.iter().filter(|e| e["state"] == "chapter").collect();
    assert_eq!(chapters.len(), 2, "{seen}");
    assert_eq!(chapters.last().unwrap()["done"], 2);
    assert!(chapters.iter().all(|e| e["ok"] == true), "{seen}");
    assert_eq!(states.last().unwrap()["failed"], 0);
    for n in [1, 2] {
        let (status, kind, wav) = send(
            &studio,
            reqwest::Method::GET,
            &format!("/api/renders/{n}"),
            None,
            None,
        )
        .await;
        assert_eq!((status, kind.as_str()), (200, "audio/wav"));
        assert!(wav_seconds(&wav) > 3.0);
    }
    assert!(fixture.path("output/山路/0001-第一章_山路.wav").is_file());
    let book = get_json(&studio, "/api/book").await;
    assert_eq!(book["renders"].as_array().unwrap().len(), 2);

    // SIGTERM stops it at once, though the event stream is still open.
    let mut studio = studio;
    let pid = studio.child.id() as libc::pid_t;
    // SAFETY: kill(2) on the pid of our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = studio.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the studio did not stop on SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status.code(), Some(0));
    drop(events);
}

/// Every file under `dir` (relative path → bytes), the cache aside.
fn files_under(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if !path.ends_with(".cache") {
                    stack.push(path);
                }
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// POSTs a render of `chapters` and reads the events until it finishes:
/// the finished event.
async fn render_in_studio(studio: &Studio, chapters: &[usize]) -> Value {
    let mut events = client().get(studio.at("/api/events")).send().await.unwrap();
    let (status, answer) = change(
        studio,
        reqwest::Method::POST,
        "/api/render",
        json!({ "chapters": chapters }),
    )
    .await;
    assert_eq!(status, 202, "{answer}");
    finished_event(&mut events).await
}

/// Reads render events until the finished one.
async fn finished_event(events: &mut reqwest::Response) -> Value {
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Some(finished) = seen
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str::<Value>(d).unwrap())
            .find(|e| e["state"] == "finished")
        {
            return finished;
        }
        assert!(Instant::now() < deadline, "no finished event: {seen}");
        let chunk = tokio::time::timeout(Duration::from_secs(120), events.chunk())
            .await
            .unwrap()
            .unwrap()
            .expect("the event stream stays open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
}

#[tokio::test]
async fn studio_renders_are_builds() {
    let fixture = Fixture::new();
    let studio = Studio::start_with(&fixture, &["--out", "out"]);
    let finished = render_in_studio(&studio, &[1, 2]).await;
    assert_eq!(finished["failed"], 0, "{finished}");
    assert!(finished.get("error").is_none(), "{finished}");
    drop(studio);
    let book = fixture.path("out/山路");
    let from_studio = files_under(&book);
    let names: Vec<&str> = from_studio.keys().map(String::as_str).collect();
    for name in [
        "0001-第一章_山路.wav",
        "0002-第二章_客栈.wav",
        "0001-第一章_山路.srt",
        "0001-第一章_山路.lrc",
        "manifest.json",
        "report.txt",
    ] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    assert!(
        !names
            .iter()
            .any(|n| n.contains(".part") || n.contains("lock")),
        "{names:?}"
    );
    let manifest: Value = serde_json::from_slice(&from_studio["manifest.json"]).unwrap();
    assert_eq!(manifest["chapters"].as_array().unwrap().len(), 2);

    // build into the same folder: nothing synthesized, the same bytes.
    build_changes_nothing(&fixture, &voices_file(), &[], &from_studio);
}

/// `build` of the fixture into `out` (with its cast and `extra`) sends no
/// request and leaves every file under the book's folder as `before`.
fn build_changes_nothing(
    fixture: &Fixture,
    voices: &str,
    extra: &[&str],
    before: &std::collections::BTreeMap<String, Vec<u8>>,
) {
    let out = tingshu(
        fixture.dir.path(),
        &[
            "build",
            "山路.txt",
            "--voices",
            voices,
            "--cast",
            "cast.toml",
        ],
    )
    .args(extra)
    .args(["--out", "out"])
    .output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("0 requests sent"), "{stderr}");
    let after = files_under(&fixture.path("out/山路"));
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in before {
        assert!(&after[name] == bytes, "{name} differs after build");
    }
}

/// A book long enough that a render is still running when the other
/// command starts: `chapters` chapters of a few paragraphs, none the
/// same (espeak-ng reads 40 chapters in about 2 s).
fn long_book(chapters: usize) -> String {
    let mut text = String::new();
    for n in 1..=chapters {
        text.push_str(&format!("第{n}章 渡口\n"));
        for line in [
            format!("船夫把第{n}只木桶搬上岸，擦了擦手，抬头看了看天色。"),
            format!("“今天还过河吗？第{n}趟了。”韩小雨站在石阶上问。"),
            format!("陆大川把缆绳在木桩上绕了{n}圈：“等雾散了再说，水太急。”"),
            format!("岸边的柳树下拴着{n}头老牛，慢慢地嚼着草，尾巴甩来甩去。"),
            format!("远处传来{n}声狗叫，渡口的灯笼一盏接一盏亮了起来。"),
        ] {
            text.push_str("\u{3000}\u{3000}");
            text.push_str(&line);
            text.push('\n');
        }
    }
    text
}

#[tokio::test]
async fn studio_and_build_share_the_lock() {
    let fixture = Fixture::new();
    std::fs::write(fixture.path("渡口.txt"), long_book(40)).unwrap();
    let studio = {
        let mut child = tingshu(
            fixture.dir.path(),
            &["studio", "渡口.txt", "--voices", &voices_file()],
        )
        .args([
            "--cast",
            "cast.toml",
            "--lexicon",
            "lexicon.toml",
            "--out",
            "out",
        ])
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let (base, token) = line.trim().split_once("/?token=").unwrap();
        Studio {
            base: base.to_owned(),
            token: token.to_owned(),
            url: line.trim().to_owned(),
            child,
        }
    };
    let book = fixture.path("out/渡口");
    let build = |dir: &Path| {
        tingshu(
            dir,
            &[
                "build",
                "渡口.txt",
                "--voices",
                &voices_file(),
                "--cast",
                "cast.toml",
                "--out",
                "out",
            ],
        )
    };

    // The studio renders: a build meanwhile stops at once with exit 2,
    // naming the lock, and removes nothing.
    let mut events = client().get(studio.at("/api/events")).send().await.unwrap();
    let chapters: Vec<usize> = (1..=40).collect();
    let (status, answer) = change(
        &studio,
        reqwest::Method::POST,
        "/api/render",
        json!({ "chapters": chapters }),
    )
    .await;
    assert_eq!(status, 202, "{answer}");
    let out = build(fixture.dir.path()).output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(".tingshu-build.lock"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    let finished = finished_event(&mut events).await;
    assert_eq!(finished["failed"], 0, "{finished}");
    assert_eq!(finished["done"], 40, "{finished}");
    let wavs = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".wav"))
            .count()
    };
    assert_eq!(wavs(&book), 40);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(book.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["chapters"].as_array().unwrap().len(), 40);

    // A build renders (from a fresh cache, so that it takes a while): the
    // studio's render meanwhile is refused with 409, naming the lock.
    std::fs::remove_dir_all(fixture.path("out")).unwrap();
    let mut running = build(fixture.dir.path())
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lock = book.join(".tingshu-build.lock");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !lock.exists() {
        assert!(Instant::now() < deadline, "the build took no lock");
        assert!(
            running.try_wait().unwrap().is_none(),
            "the build ended early"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (status, answer) = change(
        &studio,
        reqwest::Method::POST,
        "/api/render",
        json!({"chapters": [1]}),
    )
    .await;
    assert_eq!(status, 409, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains(".tingshu-build.lock"),
        "{answer}"
    );
    let status = running.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut running.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(wavs(&book), 40);
    assert!(!lock.exists());
    // Afterwards the studio renders again.
    let finished = render_in_studio(&studio, &[3]).await;
    assert_eq!(finished["failed"], 0, "{finished}");
}

#[test]
fn bad_starts_fail_with_one_line_and_exit_2() {
    let fixture = Fixture::new();
    std::fs::write(
        fixture.path("bad-cast.toml"),
        "[[character]]\nname = \"甲\"\ngender = \"m\"\n",
    )
    .unwrap();
    std::fs::write(
        fixture.path("bad-voices.toml"),
        "[casting]\nnarrator = \"nobody\"\n",
    )
    .unwrap();
    let voices = voices_file();
    for (args, message) in [
        (
            vec!["studio", "山路.txt", "--bind", "0.0.0.0:0"],
            "--bind 0.0.0.0:0: not a loopback address; give --token",
        ),
        (
            vec!["studio", "无.txt", "--voices", &voices],
            "无.txt: no such file",
        ),
        (
            vec!["studio", "山路.txt", "--voices", "bad-voices.toml"],
            "bad-voices.toml",
        ),
        (
            vec![
                "studio",
                "山路.txt",
                "--voices",
                &voices,
                "--cast",
                "bad-cast.toml",
            ],
            "bad-cast.toml: line 3, key gender",
        ),
        (
            vec!["studio", "山路.txt", "--token", "a b"],
            "--token: use letters",
        ),
        (
            vec!["studio", "山路.txt", "--job", "x"],
            "--job needs a jobs file",
        ),
    ] {
        let out = tingshu(fixture.dir.path(), &args).output();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: no URL printed");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

/// A W3C WebDriver session on chromedriver.
struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    /// Ends the WebDriver session first, so that chromedriver quits the
    /// browser (killing the driver alone leaves chromium running, orphaned),
    /// then the driver. Blocking: a drop cannot await.
    fn drop(&mut self) {
        if !self.session.is_empty()
            && let Some(addr) = self.base.strip_prefix("http://")
            && let Ok(mut stream) = std::net::TcpStream::connect(addr)
        {
            use std::io::{Read, Write};
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let request = format!(
                "DELETE /session/{} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n",
                self.session
            );
            if stream.write_all(request.as_bytes()).is_ok() {
                let _ = stream.read_to_end(&mut Vec::new());
            }
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Browser {
    async fn start() -> Option<Browser> {
        let programs = services::on_path("chromium").zip(services::on_path("chromedriver"));
        if !services::require("chromium and chromedriver", programs.is_some()) {
            return None;
        }
        let (chromium, driver) = programs?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let http = client();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(r) = http.get(format!("{base}/status")).send().await
                && r.status().is_success()
            {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = tempfile::tempdir().unwrap();
        let args = [
            "--headless".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--autoplay-policy=no-user-gesture-required".to_owned(),
            "--window-size=1280,860".to_owned(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let mut browser = Browser {
            driver,
            base,
            session: String::new(),
            http,
            _profile: profile,
        };
        let answer = browser
            .call(reqwest::Method::POST, "/session", capabilities)
            .await;
        browser.session = answer["sessionId"].as_str().unwrap().to_owned();
        Some(browser)
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let url = if path == "/session" {
            format!("{}/session", self.base)
        } else {
            format!("{}/session/{}{path}", self.base, self.session)
        };
        let mut request = self.http.request(method, url);
        if !body.is_null() {
            request = request.json(&body);
        }
        let answer: Value = request.send().await.unwrap().json().await.unwrap();
        assert!(
            answer["value"].get("error").is_none(),
            "webdriver {path}: {answer}"
        );
        answer["value"].clone()
    }

    /// Opens `url` (the studio's address with its token) and waits until
    /// the page says it is ready.
    async fn open(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", json!({ "url": url }))
            .await;
        self.wait_for("return document.body.dataset.ready").await;
    }

    async fn script(&self, script: &str) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
        .await
    }

    /// Runs `script` until it returns something truthy.
    async fn wait_for(&self, script: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let v = self.script(script).await;
            if !(v.is_null() || v == json!(false) || v == json!("")) {
                return v;
            }
            assert!(Instant::now() < deadline, "timed out waiting for: {script}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn element(&self, css: &str) -> String {
        let v = self
            .call(
                reqwest::Method::POST,
                "/element",
                json!({"using": "css selector", "value": css}),
            )
            .await;
        v.as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap()
            .to_owned()
    }

    async fn click(&self, css: &str) {
        let id = self.element(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/click"),
            json!({}),
        )
        .await;
    }

    async fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/clear"),
            json!({}),
        )
        .await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/value"),
            json!({"text": text}),
        )
        .await;
    }

    async fn screenshot(&self, path: &Path) {
        use base64::Engine;
        let png = self
            .call(reqwest::Method::GET, "/screenshot", Value::Null)
            .await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap())
            .unwrap();
        assert!(bytes.starts_with(b"\x89PNG"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

#[tokio::test]
async fn the_page_shows_a_found_characters_gender_and_why() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let fixture = Fixture::without_cast();
    let studio = Studio::start(&fixture);
    let book = get_json(&studio, "/api/book").await;
    browser.open(&studio.url).await;
    let rows = browser
        .script(
            "return [...document.querySelectorAll('#cast tr')].filter(tr => tr.querySelector('td.name')).map(tr => ({ \
               name: tr.querySelector('td.name').textContent, \
               gender: tr.querySelector('select').value, \
               guess: tr.querySelector('.guess') && tr.querySelector('.guess').textContent, \
               why: tr.querySelector('.guess') && tr.querySelector('.guess').title }))",
        )
        .await;
    let rows = rows.as_array().unwrap();
    let found: Vec<&Value> = book["speakers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["evidence"].is_string())
        .collect();
    assert!(!found.is_empty(), "{book}");
    for s in found {
        let row = rows
            .iter()
            .find(|r| r["name"] == s["name"])
            .unwrap_or_else(|| panic!("{s} not in {rows:?}"));
        // The guessed gender is selected, the confidence shown, the evidence on hover.
        assert_eq!(row["gender"], s["gender"], "{row}");
        let percent = (s["confidence"].as_f64().unwrap() * 100.0).round() as u64;
        assert_eq!(row["guess"], format!(" found · {percent}%"), "{row}");
        assert_eq!(row["why"], s["evidence"], "{row}");
    }
}

#[tokio::test]
async fn the_page_labels_someone_the_book_does_not_name() {
    let fixture = Fixture::new();
    std::fs::write(
        fixture.path("山路.txt"),
        "第一章 山路\n　　韩小雨走进院子。\n　　她母亲在屋里问：\n　　“回来了？”\n　　“回来了。”韩小雨说。\n",
    )
    .unwrap();
    let studio = Studio::start(&fixture);
    // Her mother: no name, a woman's voice.
    let chapter = get_json(&studio, "/api/chapters/1").await;
    let quotes: Vec<&Value> = chapter["paragraphs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["segments"].as_array().unwrap())
        .filter(|s| s["kind"] == "dialogue")
        .collect();
    assert_eq!(quotes.len(), 2, "{chapter}");
    assert_eq!(quotes[0]["speaker"], Value::Null, "{chapter}");
    assert_eq!(quotes[0]["unnamed"], "female", "{chapter}");
    assert_eq!(quotes[0]["voice"], "female", "{chapter}");
    assert_eq!(quotes[1]["speaker"], "韩小雨", "{chapter}");
    assert_eq!(quotes[1]["unnamed"], Value::Null, "{chapter}");
    let Some(browser) = Browser::start().await else {
        return;
    };
    browser.open(&studio.url).await;
    let labels = browser
        .script("return [...document.querySelectorAll('.para .who')].map(b => b.textContent)")
        .await;
    assert_eq!(labels, json!(["? (a woman)", "韩小雨"]));
    let titles = browser
        .script("return [...document.querySelectorAll('.para .seg.dialogue')].map(s => s.title)")
        .await;
    assert_eq!(titles, json!(["dialogue → female", "dialogue → female"]));
}

#[tokio::test]
async fn the_page_works_in_a_real_browser() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let fixture = Fixture::new();
    let studio = Studio::start(&fixture);
    browser.open(&studio.url).await;
    // The token left the address bar.
    let href = browser.script("return location.href").await;
    assert!(!href.as_str().unwrap().contains("token"), "{href}");

    // Chapters and speakers are listed; dialogue is told apart and named.
    let chapters = browser
        .script("return [...document.querySelectorAll('#chapters button')].map(b => b.textContent)")
        .await;
    assert_eq!(chapters, json!(["第一章 山路", "第二章 客栈"]));
    let speakers = browser
        .script("return [...document.querySelectorAll('#cast td.name')].map(td => td.textContent)")
        .await;
    assert_eq!(speakers, json!(["韩小雨", "陆大川"]));
    let named = browser
        .script("return [...document.querySelectorAll('.para[data-paragraph=\"3\"] .who')].map(b => b.textContent)")
        .await;
    assert_eq!(named, json!(["陆大川"]));
    // Each character has a colour of their own.
    let colours = browser
        .script("return [...document.querySelectorAll('.para .who')].map(b => getComputedStyle(b).backgroundColor)")
        .await;
    let colours: Vec<&str> = colours
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(colours.len(), 2, "{colours:?}");
    assert_ne!(colours[0], colours[1]);
    assert!(
        colours.iter().all(|c| *c != "rgb(85, 85, 119)"),
        "fallback colour: {colours:?}"
    );

    // Clicking a paragraph plays a WAV that decodes.
    browser.click(".para[data-paragraph=\"2\"]").await;
    let played = browser
        .wait_for("return document.body.dataset.lastPreview")
        .await;
    let played: Value = serde_json::from_str(played.as_str().unwrap()).unwrap();
    assert_eq!(played["request"]["paragraphs"], json!([2, 2]));
    assert!(played["seconds"].as_f64().unwrap() > 0.5, "{played}");
    assert!(played["bytes"].as_u64().unwrap() > 10_000, "{played}");
    assert_eq!(played["streamed"], true, "{played}");
    assert!(played["first_ms"].as_u64().is_some(), "{played}");
    let src = browser
        .script("return document.getElementById('player').src")
        .await;
    assert!(src.as_str().unwrap().starts_with("blob:"), "{src}");

    // Changing a character's voice writes the cast file.
    browser
        .click("select.voice[data-name=\"陆大川\"] option[value=\"narrator\"]")
        .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let cast = Cast::load(&fixture.path("cast.toml")).unwrap();
        if cast.get("陆大川").and_then(|c| c.voice.as_deref()) == Some("narrator") {
            assert_eq!(cast.get("韩小雨").unwrap().voice, None);
            break;
        }
        assert!(Instant::now() < deadline, "the cast file was not written");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    browser
        .wait_for("return document.querySelector('.para[data-paragraph=\"3\"] .seg.dialogue').title.endsWith('narrator')")
        .await;

    // Selecting a word and giving its reading changes `tingshu pinyin`.
    assert_eq!(pinyin_with(&fixture, None, "小雨"), "xiao3 yu3");
    browser
        .script(
            "const p = document.querySelector('.para[data-paragraph=\"1\"]');
             const seg = p.querySelector('.seg');
             const node = seg.firstChild;
             const at = node.textContent.indexOf('小雨');
             const range = document.createRange();
             range.setStart(node, at); range.setEnd(node, at + 2);
             const sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
             p.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
             return at",
        )
        .await;
    browser
        .wait_for("return document.getElementById('word').value === '小雨' && document.getElementById('pinyin').value === 'xiao3 yu3'")
        .await;
    browser.type_into("#pinyin", "xiao3").await;
    browser.click("#save-reading").await;
    let error = browser
        .wait_for("const e = document.getElementById('error'); return !e.hidden && e.textContent")
        .await;
    assert!(
        error
            .as_str()
            .unwrap()
            .contains("key \"小雨\": 1 syllables for 2 characters"),
        "{error}"
    );
    assert!(!fixture.path("lexicon.toml").exists());
    browser.type_into("#pinyin", "xiao3 yu4").await;
    browser.click("#save-reading").await;
    browser
        .wait_for("return document.body.dataset.lastReading && document.getElementById('current').value === 'xiao3 yu4'")
        .await;
    assert_eq!(
        pinyin_with(&fixture, Some("lexicon.toml"), "小雨"),
        "xiao3 yu4"
    );

    // Fixing a line: the editor takes the clicked paragraph; saving writes
    // the overrides file, marks the paragraph and says what changed.
    browser.click(".para[data-paragraph=\"4\"]").await;
    browser
        .wait_for("return document.getElementById('line-at').value === '1 · 4' && document.getElementById('line-text').value.startsWith('两人')")
        .await;
    browser
        .type_into("#line-text", "两人走了很久，才看见一盏灯。")
        .await;
    browser.click("#save-line").await;
    let said = browser
        .wait_for("return document.getElementById('line-result').dataset.synthesize && document.getElementById('line-result').textContent")
        .await;
    assert!(
        said.as_str()
            .unwrap()
            .contains("直到看见一盏灯。 → 两人走了很久，才看见一盏灯。; "),
        "{said}"
    );
    browser
        .wait_for("return document.querySelector('.para[data-paragraph=\"4\"]').classList.contains('edited')")
        .await;
    let file = std::fs::read_to_string(fixture.path("山路.overrides.toml")).unwrap();
    assert!(file.contains("两人走了很久，才看见一盏灯。"), "{file}");

    // A POST without the token, from the page itself, gets 403.
    let status = browser
        .call(
            reqwest::Method::POST,
            "/execute/async",
            json!({"script": "const done = arguments[arguments.length - 1];
                fetch('/api/preview', {method: 'POST', headers: {'Content-Type': 'application/json'},
                  body: JSON.stringify({text: '你好'})}).then(r => done(r.status), e => done(String(e)));",
                "args": []}),
        )
        .await;
    assert_eq!(status, json!(403));

    // Screenshots: desktop and phone width.
    browser
        .script("document.getElementById('error').hidden = true; window.getSelection().removeAllRanges(); return 1")
        .await;
    let artefacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("studio");
    browser.screenshot(&artefacts.join("studio.png")).await;
    if std::env::var("TINGSHU_UPDATE_DOCS").as_deref() == Ok("1") {
        let docs = paths::repo().join("docs/studio.png");
        browser.screenshot(&docs).await;
    }
    browser
        .call(
            reqwest::Method::POST,
            "/window/rect",
            json!({"width": 390, "height": 844}),
        )
        .await;
    let fits = browser
        .wait_for(
            "return document.documentElement.scrollWidth <= window.innerWidth + 1 ? 'fits' : ''",
        )
        .await;
    assert_eq!(fits, "fits");
    browser
        .screenshot(&artefacts.join("studio-phone.png"))
        .await;
    eprintln!("screenshots in {}", artefacts.display());
    browser.call(reqwest::Method::DELETE, "", Value::Null).await;
}

/// The 16-bit samples of a WAV file (read with hound) and its rate.
fn wav_samples(path: &Path) -> (Vec<i16>, u32) {
    let reader = hound::WavReader::open(path).unwrap();
    let rate = reader.spec().sample_rate;
    (
        reader.into_samples::<i16>().map(Result::unwrap).collect(),
        rate,
    )
}

/// The samples of each segment of chapter `index` in `manifest`, from its
/// start to its end.
fn segment_samples(
    samples: &[i16],
    rate: u32,
    manifest: &Value,
    index: usize,
) -> Vec<(String, Vec<i16>)> {
    let chapter = manifest["chapters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["index"] == index)
        .unwrap();
    chapter["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let at = |k: &str| (s[k].as_f64().unwrap() * f64::from(rate)).round() as usize;
            let text = s["text"].as_str().unwrap().to_owned();
            (
                text,
                samples[at("start_s")..at("end_s").min(samples.len())].to_vec(),
            )
        })
        .collect()
}

/// Whether `new` is `old` at one gain (the voice's level is measured over
/// the chapter, so an edit elsewhere may move it): the largest difference
/// from `old` times the best gain, in 16-bit steps, at the best alignment
/// (the manifest's times are rounded to the millisecond).
fn off_by(old: &[i16], new: &[i16]) -> f64 {
    const SLACK: usize = 64;
    assert!(
        old.len().abs_diff(new.len()) <= SLACK,
        "the segment kept its length"
    );
    let core = &old[SLACK..old.len() - SLACK];
    (0..=2 * SLACK)
        .filter_map(|lag| new.get(lag..lag + core.len()))
        .map(|shifted| {
            let (mut on, mut oo) = (0.0f64, 0.0f64);
            for (&o, &n) in core.iter().zip(shifted) {
                on += f64::from(o) * f64::from(n);
                oo += f64::from(o) * f64::from(o);
            }
            let gain = if oo == 0.0 { 1.0 } else { on / oo };
            core.iter()
                .zip(shifted)
                .map(|(&o, &n)| (f64::from(n) - gain * f64::from(o)).abs())
                .fold(0.0, f64::max)
        })
        .fold(f64::INFINITY, f64::min)
}

#[tokio::test]
async fn a_line_fixed_in_the_studio_synthesizes_only_its_chunks() {
    let fixture = Fixture::new();
    let server = TtsServer::start(Duration::ZERO);
    std::fs::write(fixture.path("voices.toml"), server.voices_toml(200, 2)).unwrap();
    let studio = Studio::start_voices(&fixture, "voices.toml", &["--out", "out"]);
    let finished = render_in_studio(&studio, &[1]).await;
    assert_eq!(finished["failed"], 0, "{finished}");
    let book = fixture.path("out/山路");
    let wav = book.join("0001-第一章_山路.wav");
    let (before, rate) = wav_samples(&wav);
    let manifest_before: Value =
        serde_json::from_slice(&std::fs::read(book.join("manifest.json")).unwrap()).unwrap();
    let sent = server.count();
    assert!(sent >= 5, "{sent} requests for chapter 1");

    // Bad edits change nothing: a speaker not in the cast, a paragraph or
    // chapter the book does not have.
    let overrides = fixture.path("山路.overrides.toml");
    let (status, answer) = change(
        &studio,
        reqwest::Method::PUT,
        "/api/chapters/1/paragraphs/2",
        json!({"speaker": "王五"}),
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    let message = answer["error"].as_str().unwrap();
    assert!(
        message.contains("山路.overrides.toml: line[0].speaker: \"王五\" is not in the cast"),
        "{message}"
    );
    assert!(!overrides.exists(), "a refused edit writes nothing");
    for path in [
        "/api/chapters/1/paragraphs/99",
        "/api/chapters/9/paragraphs/1",
    ] {
        let (status, answer) =
            change(&studio, reqwest::Method::PUT, path, json!({"text": "好。"})).await;
        assert_eq!(status, 404, "{path}: {answer}");
    }

    // The first paragraph said otherwise, rendered again at once.
    let mut events = client().get(studio.at("/api/events")).send().await.unwrap();
    let new_text = "天黑了，韩小雨背着竹篓慢慢走下山坡。";
    let (status, answer) = change(
        &studio,
        reqwest::Method::PUT,
        "/api/chapters/1/paragraphs/1",
        json!({"text": new_text, "render": true}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["to_synthesize"], 1, "{answer}");
    assert_eq!(answer["after"][0]["text"], new_text, "{answer}");
    assert_eq!(
        answer["before"][0]["text"],
        "天快黑了，韩小雨背着竹篓走下山坡，风从松林里吹过来。"
    );
    let finished = finished_event(&mut events).await;
    assert_eq!(finished["failed"], 0, "{finished}");
    let texts = server.texts();
    assert_eq!(
        texts.len(),
        sent + 1,
        "one chunk synthesized: {:?}",
        &texts[sent..]
    );
    assert!(texts[sent].contains("慢慢走下山坡"), "{}", texts[sent]);

    // The chapter's other segments keep their samples (up to their voice's
    // level, which the chapter's loudness sets).
    let (after, _) = wav_samples(&wav);
    let manifest_after: Value =
        serde_json::from_slice(&std::fs::read(book.join("manifest.json")).unwrap()).unwrap();
    let old = segment_samples(&before, rate, &manifest_before, 1);
    let new = segment_samples(&after, rate, &manifest_after, 1);
    assert_eq!(old.len(), new.len());
    assert_ne!(old[0].1, new[0].1, "the edited paragraph sounds different");
    for ((text, o), (_, n)) in old.iter().zip(&new).skip(1) {
        let off = off_by(o, n);
        assert!(off <= 2.0, "{text}: off by {off} steps");
    }

    // The page sees the override; the file holds it (read with toml).
    let chapter = get_json(&studio, "/api/chapters/1").await;
    assert_eq!(chapter["paragraphs"][0]["override"]["text"], new_text);
    let file: toml::Value = toml::from_str(&std::fs::read_to_string(&overrides).unwrap()).unwrap();
    let line = &file["line"][0];
    assert_eq!(line["chapter"].as_integer(), Some(1));
    assert_eq!(line["paragraph"].as_integer(), Some(1));
    assert_eq!(line["text"].as_str(), Some(new_text));
    assert_eq!(
        std::fs::read_to_string(fixture.path("山路.txt")).unwrap(),
        BOOK
    );
    drop(studio);

    // `build` with the same overrides: no request, the same bytes.
    let written = files_under(&book);
    build_changes_nothing(
        &fixture,
        "voices.toml",
        &["--overrides", "山路.overrides.toml", "--chapters", "1"],
        &written,
    );
    assert_eq!(server.count(), sent + 1);
}
