//! Faults, one test (or a few) per reliability promise, against real
//! components: the real `tingshu` binary, real espeak-ng, real ffmpeg,
//! HTTP servers started here on 127.0.0.1 (port 0) and, where the tests
//! run as root, a real small tmpfs (skipped with a message otherwise, a
//! failure with `TINGSHU_REQUIRE_SERVICES=1`).
//!
//! 1. a full disk never replaces a good encoded file;
//! 2. credentials stay on their host and out of every message and file;
//! 3. bad numbers in a voices file are errors naming file:line:key;
//! 4. a fallback's audio is never served for the primary;
//! 5. a huge answer is rejected as it streams, with bounded memory;
//! 6. a chapter spilled to disk mixes to the same bytes as in memory;
//! 7. processes and names: no orphan ffmpeg, stale files cleaned, `--`
//!    before book text, no bidi controls in file names.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::support::cli::Tingshu;
use crate::support::scenario::Scenario;
use crate::support::tts_server::TtsServer;
use crate::support::{ffmpeg, locks, paths, services, wav};

const KEY: &str = "sk-fault-Zq81mXr4Tt0pW6";

/// The espeak-only voices shipped with tingshu.
fn espeak_voices() -> PathBuf {
    paths::repo().join("voices/espeak.toml")
}

struct Run {
    code: i32,
    stderr: String,
    /// Peak resident memory of the tingshu process, in bytes.
    max_rss: u64,
}

/// Runs the real binary in `dir`, measuring its own peak RSS (wait4).
fn tingshu(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let err_path = dir.join(format!(".stderr-{}", fastrand::u64(..)));
    let err = std::fs::File::create(&err_path).unwrap();
    let mut command = Tingshu::new(args)
        .dir(dir)
        .env("FAULT_KEY", KEY)
        .env_remove("TINGSHU_VOICES")
        .env_remove("TINGSHU_OUT")
        .env_remove("TINGSHU_CACHE")
        .env_remove("TINGSHU_FORMAT")
        .env_remove("TINGSHU_QUEUE")
        .command();
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err);
    for (k, v) in env {
        command.env(k, v);
    }
    // Reaped by wait4 in `wait_measured`, which also gives its peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = command.spawn().unwrap();
    let (code, max_rss) = wait_measured(child.id() as i32);
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&err_path);
    Run {
        code,
        stderr,
        max_rss,
    }
}

/// Waits for `pid`; its exit code (or -signal) and peak RSS in bytes.
fn wait_measured(pid: i32) -> (i32, u64) {
    let mut status = 0;
    // SAFETY: plain out-parameters for wait4.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4 failed");
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -libc::WTERMSIG(status)
    };
    (code, usage.ru_maxrss as u64 * 1024)
}

/// A book of `chapters` chapters of `paragraphs` paragraphs each, with
/// dialogue; each paragraph differs, so nothing is served twice.
fn write_book(dir: &Path, name: &str, chapters: usize, paragraphs: usize) -> PathBuf {
    let mut text = String::new();
    for c in 1..=chapters {
        text.push_str(&format!("第{c}章 灯塔\n\n"));
        for p in 1..=paragraphs {
            text.push_str(&format!(
                "第{p}天的傍晚，守塔人把油灯擦亮，海面上起了雾。他说：“今晚的船还有{p}条。”\n\n"
            ));
        }
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn is_root() -> bool {
    // SAFETY: no arguments, no side effects.
    unsafe { libc::geteuid() == 0 }
}

/// A tmpfs of `size` bytes mounted on a fresh directory; unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: u64) -> Option<Tmpfs> {
        if !is_root() && !services::skip("a tmpfs (mounting one needs root)") {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok && !services::skip("a tmpfs (mount -t tmpfs failed)") {
            return None;
        }
        Some(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the file system until `leave` bytes are free.
    fn fill(&self, leave: u64) {
        let free = tingshu::audio::child::free_bytes(self.path()).unwrap();
        let name = format!("filler-{}", fastrand::u64(..));
        let mut f = std::fs::File::create(self.path().join(name)).unwrap();
        let chunk = vec![0x5au8; 4096];
        let mut left = free.saturating_sub(leave);
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            if f.write_all(&chunk[..n]).is_err() {
                break;
            }
            left -= n as u64;
        }
        f.sync_all().unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// A WAV of `secs` seconds of a speech-like tone.
fn tone_wav(path: &Path, secs: f32) {
    let rate = 22050;
    let samples = (0..(secs * rate as f32) as usize)
        .map(|i| {
            let t = i as f32 / rate as f32;
            0.3 * (std::f32::consts::TAU * 220.0 * t).sin()
                * (std::f32::consts::PI * 3.0 * t).sin().abs()
        })
        .collect();
    tingshu::audio::wav::write_wav_file(&tingshu::audio::AudioClip::new(samples, rate), path)
        .unwrap();
}

/// A JPEG of noise, large (several MB).
fn noisy_cover(path: &Path) {
    let ok = Command::new("ffmpeg")
        .args([
            "-hide_banner",
            "-loglevel",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
        ])
        .arg("color=c=gray:size=1200x1200")
        .args([
            "-vf",
            "noise=alls=100:allf=u",
            "-frames:v",
            "1",
            "-q:v",
            "1",
        ])
        .arg(path)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "ffmpeg cannot make the test cover");
}

fn leftovers(dir: &Path, suffix: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in walk(dir) {
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(suffix) {
            found.push(entry.display().to_string());
        }
    }
    found
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

// ---------------------------------------------------------------- 1. disk

/// ffmpeg writing an Opus file (with a cover bigger than the free space:
/// Opus carries it in base64) onto a full tmpfs: the encode fails, says
/// the disk is full, and the good file written before stays byte for byte;
/// no `.part` is left.
#[test]
fn a_full_disk_during_an_encode_keeps_the_good_file() {
    use tingshu::audio::encode::{Encoder, Format, Tags};
    if !ffmpeg::tools() {
        return;
    }
    let Some(fs) = Tmpfs::mount(16 << 20) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let wav = work.path().join("ch.wav");
    tone_wav(&wav, 20.0);
    let cover = work.path().join("cover.jpg");
    noisy_cover(&cover);
    let cover_len = std::fs::metadata(&cover).unwrap().len();
    assert!(cover_len > 1 << 20, "cover only {cover_len} bytes");

    let encoder = Encoder::new("ffmpeg").unwrap();
    let out = fs.path().join("0001-灯塔.opus");
    let mut tags = Tags {
        title: "灯塔".into(),
        album: "雾港".into(),
        ..Default::default()
    };
    encoder
        .encode_chapter(&wav, &out, Format::Opus, &tags)
        .unwrap();
    let good = std::fs::read(&out).unwrap();
    // Room for the audio and the 1 MiB margin of the free-space check,
    // not for the cover.
    fs.fill(1_250_000);
    tags.cover = Some(cover);
    let err = chain(
        &encoder
            .encode_chapter(&wav, &out, Format::Opus, &tags)
            .unwrap_err(),
    );
    // ffmpeg's own "No space left on device", or the metadata file (which
    // holds the cover) failing to be written beside the output.
    assert!(
        err.contains("disk full (") || err.contains("No space left on device"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&out).unwrap(),
        good,
        "the good file was replaced"
    );
    assert!(leftovers(fs.path(), ".part").is_empty());

    // Far too little room: refused before ffmpeg starts, plainly.
    fs.fill(100_000);
    let err = encoder
        .encode_chapter(&wav, &out, Format::Mp3, &tags)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("disk full:") && err.contains("free in"),
        "{err}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), good);
}

/// An error and its sources on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// `build --format mp3,m4b` onto a disk too small for the encodes: the WAV
/// is written, every failed encode is in report.txt, the exit status is 1,
/// and no broken MP3 or M4B is left.
#[test]
fn build_onto_a_full_disk_reports_the_encodes_and_exits_1() {
    if !ffmpeg::tools() {
        return;
    }
    let Some(fs) = Tmpfs::mount(2 << 20) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let book = write_book(work.path(), "灯塔.txt", 1, 3);
    let voices = espeak_voices();
    let cover = work.path().join("cover.jpg");
    noisy_cover(&cover);
    let out = fs.path().to_str().unwrap().to_owned();
    let cache = work.path().join("cache");
    let run = tingshu(
        work.path(),
        &[
            "build",
            book.to_str().unwrap(),
            "--voices",
            voices.to_str().unwrap(),
            "--out",
            &out,
            "--cache",
            cache.to_str().unwrap(),
            "--format",
            "mp3,m4b",
            "--cover",
            cover.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let dir = fs.path().join("灯塔");
    let report = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    assert!(!report.contains("Failed (0)"), "{report}");
    assert!(report.contains(".m4b: disk full"), "{report}");
    // Whatever encoded file is there is whole; the others are reported.
    for entry in walk(&dir) {
        let name = entry.to_string_lossy().into_owned();
        if name.ends_with(".mp3") || name.ends_with(".m4b") {
            let probe = Command::new("ffprobe")
                .args([
                    "-v",
                    "error",
                    "-show_entries",
                    "format=duration",
                    "-of",
                    "csv=p=0",
                ])
                .arg(&entry)
                .output()
                .unwrap();
            let duration: f64 = String::from_utf8_lossy(&probe.stdout)
                .trim()
                .parse()
                .unwrap_or(0.0);
            assert!(
                probe.status.success() && probe.stderr.is_empty() && duration > 5.0,
                "broken {name}"
            );
        }
    }
    assert!(leftovers(&dir, ".part").is_empty());
}

// --------------------------------------------------------- 2. credentials

#[derive(Default)]
struct Seen {
    requests: AtomicUsize,
    headers: Mutex<Vec<HeaderMap>>,
}

async fn record(State(seen): State<Arc<Seen>>, headers: HeaderMap) -> Response {
    seen.requests.fetch_add(1, Ordering::SeqCst);
    seen.headers.lock().unwrap().push(headers);
    (StatusCode::INTERNAL_SERVER_ERROR, "second host").into_response()
}

async fn serve(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// A server whose `/tts` redirects (307) to `target`, and whose `/same`
/// redirects to its own `/tts`... when `target` is None, `/tts` answers
/// audio for the JSON `{text, voice}` it gets.
async fn redirector(target: Option<String>) -> SocketAddr {
    if let Some(target) = target {
        let app =
            Router::new().fallback(move || {
                let target = target.clone();
                async move {
                    (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, target)]).into_response()
                }
            });
        return serve(app).await;
    }
    let app = Router::new()
        .route(
            "/tts",
            axum::routing::post(move |body: Bytes| {
                let target = target.clone();
                async move {
                    match target {
                        Some(t) => (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, t)])
                            .into_response(),
                        None => {
                            let v: serde_json::Value =
                                serde_json::from_slice(&body).unwrap_or_default();
                            let text = v["text"].as_str().unwrap_or("").to_owned();
                            (
                                [(header::CONTENT_TYPE, "audio/wav")],
                                wav::tone_wav(&text, "v"),
                            )
                                .into_response()
                        }
                    }
                }
            }),
        )
        .route(
            "/same",
            axum::routing::post(|| async {
                (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, "/tts")]).into_response()
            }),
        );
    serve(app).await
}

fn one_backend_voices(dir: &Path, backend: &str) -> PathBuf {
    let text = format!(
        "[backends.server]\n{backend}\nretries = 0\n\n[voices.narrator]\nbackend = \"server\"\nvoice = \"v\"\n\n[casting]\nnarrator = \"narrator\"\n"
    );
    let path = dir.join("voices.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A fresh directory whose `voices.toml` reads everything through the one
/// backend `backend` (retries = 0), after `prepare` (a book) has run in it;
/// then `tingshu ARGS` there, off the async runtime (the test's servers run
/// on it).
async fn through_one_backend(
    backend: &str,
    prepare: impl FnOnce(&Path),
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
) -> (Run, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    one_backend_voices(dir.path(), backend);
    prepare(dir.path());
    let d = dir.path().to_owned();
    let run = tokio::task::spawn_blocking(move || tingshu(&d, args, env))
        .await
        .unwrap();
    (run, dir)
}

/// A 307 to another port: the Azure subscription key and an http-template
/// header built from `{key}` never reach the second server — the redirect
/// is refused, saying why — and the key is in no message.
#[tokio::test(flavor = "multi_thread")]
async fn cross_host_redirects_never_carry_the_key() {
    let seen = Arc::new(Seen::default());
    let second = serve(Router::new().fallback(record).with_state(Arc::clone(&seen))).await;
    let first = redirector(Some(format!("http://{second}/tts"))).await;
    let backends = [
        format!("type = \"azure\"\nendpoint = \"http://{first}/tts\"\napi_key_env = \"FAULT_KEY\""),
        format!(
            "type = \"http\"\nmethod = \"POST\"\nurl = \"http://{first}/tts\"\napi_key_env = \"FAULT_KEY\"\nheaders = {{ \"X-Api-Key\" = \"{{key}}\" }}\njson = {{ text = \"{{text}}\", voice = \"{{voice}}\" }}"
        ),
        format!("type = \"openai\"\nbase_url = \"http://{first}\"\napi_key_env = \"FAULT_KEY\""),
    ];
    for backend in backends {
        let (run, dir) = through_one_backend(
            &backend,
            |_| {},
            &[
                "preview",
                "灯亮了。",
                "--voices",
                "voices.toml",
                "-o",
                "out.wav",
                "-v",
            ],
            &[("RUST_LOG", "debug")],
        )
        .await;
        assert_ne!(run.code, 0, "{}", run.stderr);
        assert!(
            run.stderr.contains("refused a redirect to another host"),
            "{backend}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains(KEY), "key leaked: {}", run.stderr);
        assert!(!dir.path().join("out.wav").exists());
    }
    // Some backends' first request is itself on `first`'s /audio/speech
    // (openai): whatever reached the second host, no header held the key.
    for headers in seen.headers.lock().unwrap().iter() {
        for (name, value) in headers {
            assert!(
                !value.to_str().unwrap_or("").contains(KEY),
                "{name} carried the key"
            );
        }
    }
    assert_eq!(seen.requests.load(Ordering::SeqCst), 0);
}

/// A redirect within the same host and port is followed.
#[tokio::test(flavor = "multi_thread")]
async fn same_host_redirects_are_followed() {
    let server = redirector(None).await;
    let (run, dir) = through_one_backend(
        &format!(
            "type = \"http\"\nmethod = \"POST\"\nurl = \"http://{server}/same\"\napi_key_env = \"FAULT_KEY\"\nheaders = {{ \"X-Api-Key\" = \"{{key}}\" }}\njson = {{ text = \"{{text}}\", voice = \"{{voice}}\" }}"
        ),
        |_| {},
        &[
            "preview",
            "灯亮了。",
            "--voices",
            "voices.toml",
            "-o",
            "out.wav",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(dir.path().join("out.wav").is_file());
}

/// Servers that echo the key — in a 200 text body, and past character
/// 120 of a 401 body — never get it printed: not on stderr (log included),
/// not in report.txt.
#[tokio::test(flavor = "multi_thread")]
async fn echoed_keys_are_redacted_before_any_truncation() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let app = Router::new().fallback(move || {
        let n = c.fetch_add(1, Ordering::SeqCst);
        async move {
            if n.is_multiple_of(2) {
                (
                    StatusCode::OK,
                    format!("error: the key {KEY} is not valid here"),
                )
                    .into_response()
            } else {
                let padding = "x".repeat(110);
                (StatusCode::UNAUTHORIZED, format!("{padding} key={KEY}")).into_response()
            }
        }
    });
    let server = serve(app).await;
    let (run, dir) = through_one_backend(
        &format!(
            "type = \"http\"\nmethod = \"POST\"\nurl = \"http://{server}/tts\"\napi_key_env = \"FAULT_KEY\"\nheaders = {{ \"Authorization\" = \"Bearer {{key}}\" }}\njson = {{ text = \"{{text}}\" }}"
        ),
        |dir| {
            write_book(dir, "书.txt", 2, 1);
        },
        &[
            "build",
            "书.txt",
            "--voices",
            "voices.toml",
            "--out",
            "out",
            "-v",
        ],
        &[("RUST_LOG", "debug")],
    )
    .await;
    assert!(calls.load(Ordering::SeqCst) >= 2);
    assert_ne!(run.code, 0);
    let partial: String = KEY.chars().take(12).collect();
    assert!(!run.stderr.contains(&partial), "key leaked: {}", run.stderr);
    assert!(run.stderr.contains("***"), "{}", run.stderr);
    for file in walk(&dir.path().join("out")) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(
            !text.contains(&partial),
            "key leaked into {}",
            file.display()
        );
    }
}

/// A mistyped queue URL (`redis//` without the colon) is printed back
/// without its password.
#[test]
fn a_malformed_queue_url_never_shows_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let book = write_book(dir.path(), "书.txt", 1, 1);
    for url in [
        "redis//:Pa55wordXYZ@127.0.0.1:1/0",
        "postgres//u:Pa55wordXYZ@127.0.0.1:1/q",
    ] {
        let run = tingshu(
            dir.path(),
            &[
                "enqueue",
                book.to_str().unwrap(),
                "--queue",
                url,
                "--out",
                "out",
            ],
            &[],
        );
        assert_ne!(run.code, 0);
        assert!(!run.stderr.contains("Pa55wordXYZ"), "{}", run.stderr);
        assert!(run.stderr.contains(":***@"), "{}", run.stderr);
    }
}

// ------------------------------------------------------------- 3. config

/// Every numeric key: NaN, infinities and out-of-range values are errors
/// naming file:line:key, exit 2, nothing written.
#[test]
fn bad_numbers_name_the_file_line_and_key() {
    let base = "[backends.local]\ntype = \"espeak\"\n\n[voices.narrator]\nbackend = \"local\"\nvoice = \"cmn-latn-pinyin\"\n\n[casting]\nnarrator = \"narrator\"\n";
    let cases: Vec<(String, &str)> = vec![
        (
            format!("{base}\n[mix]\ntarget_lufs = nan\n"),
            "v.toml:12: mix.target_lufs: NaN is out of range",
        ),
        (
            format!("{base}\n[mix]\ntrue_peak_dbtp = inf\n"),
            "v.toml:12: mix.true_peak_dbtp",
        ),
        (
            format!("{base}\n[mix.pauses]\nsentence_ms = 99999999\n"),
            "v.toml:12: mix.pauses.sentence_ms",
        ),
        (
            base.replace(
                "type = \"espeak\"\n",
                "type = \"espeak\"\nworkers = 9223372036854775807\n",
            ),
            "v.toml:3: backends.local.workers",
        ),
        (
            base.replace("type = \"espeak\"\n", "type = \"espeak\"\nmax_chars = 0\n"),
            "v.toml:3: backends.local.max_chars",
        ),
        (
            base.replace(
                "type = \"espeak\"\n",
                "type = \"espeak\"\nmax_in_flight = 100000\n",
            ),
            "v.toml:3: backends.local.max_in_flight",
        ),
        (
            base.replace(
                "type = \"espeak\"\n",
                "type = \"espeak\"\ntimeout_s = nan\n",
            ),
            "v.toml:3: backends.local.timeout_s",
        ),
        (
            base.replace(
                "type = \"espeak\"\n",
                "type = \"espeak\"\nmax_body_mb = -1.0\n",
            ),
            "v.toml:3: backends.local.max_body_mb",
        ),
        (
            base.replace(
                "voice = \"cmn-latn-pinyin\"\n",
                "voice = \"cmn-latn-pinyin\"\nspeed = nan\n",
            ),
            "v.toml:7: voices.narrator.speed",
        ),
        (
            base.replace("type = \"espeak\"\n", "type = \"espeak\"\ncolour = 3\n"),
            "v.toml:3",
        ),
        (
            base.replace(
                "voice = \"cmn-latn-pinyin\"\n",
                "voice = \"cmn-latn-pinyin\"\nloudness = 3\n",
            ),
            "v.toml:7",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let book = write_book(dir.path(), "书.txt", 1, 1);
    for (voices, expected) in cases {
        std::fs::write(dir.path().join("v.toml"), &voices).unwrap();
        let run = tingshu(
            dir.path(),
            &[
                "build",
                book.to_str().unwrap(),
                "--voices",
                "v.toml",
                "--out",
                "out",
            ],
            &[],
        );
        assert_eq!(run.code, 2, "{voices}\n{}", run.stderr);
        assert!(
            run.stderr.contains(expected),
            "expected {expected:?}:\n{}",
            run.stderr
        );
        assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
        assert!(!run.stderr.contains("panicked"));
        assert!(!dir.path().join("out").exists());
    }
}

/// A lexicon entry of the wrong shape says what is expected, on its line.
#[test]
fn a_wrong_lexicon_entry_reads_plainly() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("lex.toml"),
        "\"守塔人\" = \"shou3 ta3 ren2\"\n\"雾\" = 3\n",
    )
    .unwrap();
    let run = tingshu(dir.path(), &["pinyin", "--lexicon", "lex.toml"], &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("lex.toml:2: key \"雾\": expected a pinyin string"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("untagged"), "{}", run.stderr);
}

/// A command backend that puts book text in an argument must put `--`
/// before it (text starting with `-` would read as an option).
#[test]
fn command_text_arguments_need_a_double_dash() {
    if !services::require("espeak-ng", services::on_path("espeak-ng").is_some()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let voices = "[backends.cmd]\ntype = \"command\"\nprogram = \"espeak-ng\"\nargs = [\"-v\", \"cmn-latn-pinyin\", \"--stdout\", \"{pinyin}\"]\n\n[voices.narrator]\nbackend = \"cmd\"\nvoice = \"x\"\n\n[casting]\nnarrator = \"narrator\"\n";
    std::fs::write(dir.path().join("v.toml"), voices).unwrap();
    let run = tingshu(
        dir.path(),
        &[
            "preview",
            "--voices",
            "v.toml",
            "-o",
            "o.wav",
            "--",
            "-减号开头。",
        ],
        &[],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("v.toml:4: backends.cmd.args"),
        "{}",
        run.stderr
    );
    // With `--`, text beginning with a dash is spoken, not parsed.
    std::fs::write(
        dir.path().join("v.toml"),
        voices.replace(
            "\"--stdout\", \"{pinyin}\"",
            "\"--stdout\", \"--\", \"{pinyin}\"",
        ),
    )
    .unwrap();
    let run = tingshu(
        dir.path(),
        &[
            "preview",
            "--voices",
            "v.toml",
            "-o",
            "o.wav",
            "--",
            "-减号开头的一句话。",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(dir.path().join("o.wav").is_file());
}

// ----------------------------------------------------------- 4. fallback

/// After a 503 storm with `fallback = "local"`, a later run against the
/// healthy server asks it again (the espeak clips are the fallback's, not
/// the primary's); the manifest and report say which segments fell back.
#[test]
fn fallback_audio_is_not_reused_once_the_primary_recovers() {
    let scenario = Scenario::new()
        .server(TtsServer::start(Duration::ZERO))
        .file(
            "v.toml",
            "[backends.server]\ntype = \"http\"\nmethod = \"POST\"\nurl = \"{server}/tts\"\njson = { text = \"{text}\", voice = \"{voice}\" }\nretries = 0\nfallback = \"local\"\nfallback_voice = \"cmn-latn-pinyin\"\n\n[backends.local]\ntype = \"espeak\"\n\n[voices.narrator]\nbackend = \"server\"\nvoice = \"n\"\n\n[casting]\nnarrator = \"narrator\"\n\n[mix]\nsample_rate = 22050\n",
        );
    write_book(scenario.dir(), "书.txt", 1, 2);
    let server = scenario.tts_server();
    let args = ["build", "书.txt", "--voices", "v.toml", "--out", "out"];
    server.fail_next(1_000_000);
    let run = scenario.run(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let storm = server.count();
    assert!(storm > 0);
    let manifest: serde_json::Value =
        serde_json::from_str(&scenario.read("out/书/manifest.json")).unwrap();
    let segments = manifest["chapters"][0]["segments"].as_array().unwrap();
    assert!(
        segments
            .iter()
            .all(|s| s["fallback"] == "local/cmn-latn-pinyin"),
        "{segments:?}"
    );
    let report = scenario.read("out/书/report.txt");
    assert!(
        report.contains(&format!(
            "Fallbacks: segments read by a fallback backend ({})",
            segments.len()
        )),
        "{report}"
    );

    server.fail_next(0);
    let run = scenario.run(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Every chunk once (retries = 0), as during the storm.
    assert_eq!(
        server.count() - storm,
        storm,
        "the healthy server was not asked again"
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&scenario.read("out/书/manifest.json")).unwrap();
    let segments = manifest["chapters"][0]["segments"].as_array().unwrap();
    assert!(
        segments.iter().all(|s| s.get("fallback").is_none()),
        "{segments:?}"
    );
    let report = scenario.read("out/书/report.txt");
    assert!(!report.contains("Fallbacks"), "{report}");
    // A third run is all from the primary's cache.
    let before = server.count();
    assert_eq!(scenario.run(&args).code, 0);
    assert_eq!(server.count(), before);
}

// ---------------------------------------------------------- 5. huge body

/// A 200 answer streaming 2 GB (with and without Content-Length) is
/// rejected as it passes the cap for its text: tingshu's peak RSS stays
/// under 400 MB and the server sends a small part of it.
#[tokio::test(flavor = "multi_thread")]
async fn a_2_gb_answer_is_rejected_early_with_bounded_memory() {
    for announce in [false, true] {
        let sent = Arc::new(AtomicU64::new(0));
        let s = Arc::clone(&sent);
        let app = Router::new().fallback(move || {
            let sent = Arc::clone(&s);
            async move {
                let total: u64 = 2_000_000_000;
                let chunk = Bytes::from(vec![0x11u8; 1 << 20]);
                let stream = futures::stream::unfold(0u64, move |done| {
                    let chunk = chunk.clone();
                    let sent = Arc::clone(&sent);
                    async move {
                        (done < total).then(|| {
                            sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
                            (Ok::<_, std::io::Error>(chunk), done + (1 << 20))
                        })
                    }
                });
                let mut response = Response::new(Body::from_stream(stream));
                if announce {
                    response
                        .headers_mut()
                        .insert(header::CONTENT_LENGTH, 2_000_000_000u64.into());
                }
                response
            }
        });
        let server = serve(app).await;
        let started = Instant::now();
        let (run, _dir) = through_one_backend(
            &format!(
                "type = \"http\"\nmethod = \"POST\"\nurl = \"http://{server}/tts\"\njson = {{ text = \"{{text}}\" }}\nmax_in_flight = 4"
            ),
            |_| {},
            &[
                "preview",
                "守塔人把灯擦亮了。",
                "--voices",
                "voices.toml",
                "-o",
                "o.wav",
            ],
            &[],
        )
        .await;
        assert_ne!(run.code, 0);
        assert!(run.stderr.contains("larger than the"), "{}", run.stderr);
        assert!(run.max_rss < 400 << 20, "peak RSS {} MB", run.max_rss >> 20);
        eprintln!(
            "2 GB answer (Content-Length: {announce}): rejected after {:.1} s, {} MB sent, tingshu peak RSS {} MB",
            started.elapsed().as_secs_f64(),
            sent.load(Ordering::SeqCst) >> 20,
            run.max_rss >> 20
        );
        assert!(sent.load(Ordering::SeqCst) < 200 << 20);
    }
}

// ------------------------------------------------------- 6. long chapters

/// A chapter mixed with every clip spilled to its temporary file is byte
/// for byte the chapter mixed in memory, and no spill file is left.
#[test]
fn a_spilled_chapter_mixes_to_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let book = write_book(dir.path(), "长.txt", 2, 30);
    let voices = espeak_voices();
    let mut outputs = Vec::new();
    for (out, spill) in [("memory", "100000"), ("spilled", "0")] {
        let run = tingshu(
            dir.path(),
            &[
                "build",
                book.to_str().unwrap(),
                "--voices",
                voices.to_str().unwrap(),
                "--out",
                out,
                "--cache",
                "cache",
            ],
            &[("TINGSHU_SPILL_AFTER_MB", spill)],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        let mut files: Vec<(String, Vec<u8>)> = walk(&dir.path().join(out).join("长"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "wav"))
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect();
        files.sort();
        assert_eq!(files.len(), 2);
        outputs.push(files);
        let names: Vec<String> = std::fs::read_dir(dir.path().join(out).join("长"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
    }
    assert!(
        outputs[0] == outputs[1],
        "spilled and in-memory chapters differ"
    );
}

// ------------------------------------------------- 7. processes and names

/// `ffmpeg` children of tingshu, by pid.
fn ffmpeg_children(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid …
        let Some((comm, rest)) = stat.split_once(") ") else {
            continue;
        };
        let ppid = rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        if comm.ends_with("(ffmpeg") && ppid == Some(parent) {
            found.push(pid);
        }
    }
    found
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.split_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
}

/// kill -9 while ffmpeg encodes: ffmpeg dies with tingshu (no orphan keeps
/// writing its `.part`), and the next run removes what was left and
/// finishes with nothing half-written.
#[test]
fn a_killed_build_leaves_no_ffmpeg_and_the_rerun_cleans_up() {
    if !ffmpeg::tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let book = write_book(dir.path(), "灯.txt", 6, 12);
    let voices = espeak_voices();
    let args = [
        "build",
        book.to_str().unwrap(),
        "--voices",
        voices.to_str().unwrap(),
        "--out",
        "out",
        "--format",
        "mp3,opus,m4b",
    ];
    let mut child = Tingshu::new(args)
        .dir(dir.path())
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut orphans = Vec::new();
    while Instant::now() < deadline {
        let found = ffmpeg_children(child.id());
        if !found.is_empty() {
            orphans = found;
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if orphans.is_empty() {
        let _ = child.kill();
        let _ = child.wait();
        services::skip("an ffmpeg seen before the build finished");
        return;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let gone_by = Instant::now() + Duration::from_secs(5);
    while orphans.iter().any(|&p| alive(p)) && Instant::now() < gone_by {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        orphans.iter().all(|&p| !alive(p)),
        "ffmpeg outlived tingshu: {orphans:?}"
    );
    // Something a killed run leaves: a half-written file.
    let book_dir = dir.path().join("out/灯");
    std::fs::create_dir_all(&book_dir).unwrap();
    std::fs::write(book_dir.join(".0001-第1章_灯塔.mp3.part"), b"half").unwrap();
    let run = tingshu(dir.path(), &args, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(leftovers(&dir.path().join("out"), ".part").is_empty());
    assert!(leftovers(&dir.path().join("out"), ".tmp").is_empty());
}

/// Chapter titles with bidi overrides and zero-width characters give file
/// names without them.
#[test]
fn bidi_controls_never_reach_file_names() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("书.txt"),
        "第一章 灯\u{202E}3pm.exe\u{200B}塔\n\n守塔人把灯擦亮了。\n",
    )
    .unwrap();
    let voices = espeak_voices();
    let run = tingshu(
        dir.path(),
        &[
            "build",
            "书.txt",
            "--voices",
            voices.to_str().unwrap(),
            "--out",
            "out",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let names: Vec<String> = walk(&dir.path().join("out/书"))
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n == "0001-第一章_灯3pm.exe塔.wav"),
        "{names:?}"
    );
    for name in names {
        assert!(!name.chars().any(|c| matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')), "{name:?}");
    }
}

/// A second build of a book that is being built stops at once (exit 2,
/// naming the lock and the holder), and leaves the first one's
/// half-written files alone; once the first has finished, it runs.
#[test]
fn a_second_build_of_the_same_book_waits_its_turn() {
    let dir = tempfile::tempdir().unwrap();
    let book = write_book(dir.path(), "灯.txt", 1, 2);
    let voices = espeak_voices();
    let args = [
        "build",
        book.to_str().unwrap(),
        "--voices",
        voices.to_str().unwrap(),
        "--out",
        "out",
    ];
    // The first build, in the middle of its work: it holds the lock and
    // has a chapter half-written.
    let book_dir = dir.path().join("out/灯");
    std::fs::create_dir_all(&book_dir).unwrap();
    let lock_path = book_dir.join(".tingshu-build.lock");
    let held = locks::hold(&lock_path, 4242);
    let part = book_dir.join(".0001-第1章_灯塔.wav.part");
    std::fs::write(&part, b"half").unwrap();

    let run = tingshu(dir.path(), &args, &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("another tingshu process (pid 4242)")
            && run.stderr.contains(".tingshu-build.lock"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read(&part).unwrap(), b"half");
    assert!(leftovers(&book_dir, ".wav").is_empty());

    held.unlock().unwrap();
    drop(held);
    std::fs::remove_file(&part).unwrap();
    let run = tingshu(dir.path(), &args, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(leftovers(&book_dir, ".wav").len(), 1);
    // A finished build leaves no lock behind.
    assert!(!lock_path.exists());
}

// ------------------------------------------------- 8. encoded credentials

/// A key with characters that every encoding writes differently: `-`,
/// a space, `/` and `+`.
const ENC_KEY: &str = "sk-proj-Qv7 Lm/2x+Wd9Zr4Tk";

/// One marker character per chapter: the text of a request says which
/// encoding of the key the server echoes back.
const MARKERS: [char; 7] = ['灯', '雾', '海', '船', '塔', '风', '雪'];

/// `text` percent-encoded as the `http` backend writes `{key}` in a URL.
fn percent_upper(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `text` as `application/x-www-form-urlencoded` writes it (`+` for a space).
fn form_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b' ' => "+".to_owned(),
            b if b.is_ascii_alphanumeric() || b"*-._".contains(&b) => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// `text` as a JSON string body may escape it (`\uXXXX`, `\/`).
fn json_escaped(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '/' => "\\/".to_owned(),
            c if c.is_ascii_alphanumeric() => c.to_string(),
            c => format!("\\u{:04x}", c as u32),
        })
        .collect()
}

/// Every form of [`ENC_KEY`] that must not be found, with its name.
fn key_forms() -> Vec<(&'static str, String)> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    let lower_hex = |s: String| {
        let mut out = String::new();
        let mut rest = s.as_str();
        while let Some(at) = rest.find('%') {
            out.push_str(&rest[..at]);
            out.push_str(&rest[at..at + 3].to_lowercase());
            rest = &rest[at + 3..];
        }
        out + rest
    };
    vec![
        ("raw", ENC_KEY.to_owned()),
        ("a raw fragment", "Wd9Zr4Tk".to_owned()),
        ("percent-encoded", percent_upper(ENC_KEY)),
        (
            "percent-encoded, lower case",
            lower_hex(percent_upper(ENC_KEY)),
        ),
        ("form-encoded (+)", form_encoded(ENC_KEY)),
        ("base64", STANDARD.encode(ENC_KEY)),
        ("base64 URL-safe", URL_SAFE_NO_PAD.encode(ENC_KEY)),
        ("basic auth", STANDARD.encode(format!("tingshu:{ENC_KEY}"))),
        ("JSON-escaped", json_escaped(ENC_KEY)),
        (
            "JSON with \\/",
            serde_json::to_string(ENC_KEY)
                .unwrap()
                .trim_matches('"')
                .replace('/', "\\/"),
        ),
    ]
}

/// The forms of the key found in `text` (an output named `what`).
fn leaked(what: &str, text: &str) -> Vec<String> {
    key_forms()
        .into_iter()
        .filter(|(_, form)| text.contains(form.as_str()))
        .map(|(name, _)| format!("{what}: {name}"))
        .collect()
}

/// An `http` backend with `{key}` in its URL, answering 401 with the key
/// echoed back in one of seven encodings, chosen by the marker in the text:
/// the request line as received (percent-encoded, upper-case hex), the same
/// in lower case, form-encoded, base64, URL-safe base64, a basic-auth
/// header and a JSON body.
async fn echoing_server() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    let lines = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&lines);
    let app = Router::new().fallback(
        move |method: axum::http::Method, uri: axum::http::Uri, body: Bytes| {
            let seen = Arc::clone(&seen);
            async move {
                let line = format!("{method} {uri} HTTP/1.1");
                seen.lock().unwrap().push(line.clone());
                let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let text = v["text"].as_str().unwrap_or("");
                // The last chapter renders, so that report.txt is written.
                if text.contains('月') {
                    return (
                        [(header::CONTENT_TYPE, "audio/wav")],
                        wav::tone_wav(text, "v"),
                    )
                        .into_response();
                }
                let form = MARKERS.iter().position(|m| text.contains(*m)).unwrap_or(0);
                let lower = {
                    let mut out = String::new();
                    let mut rest = line.as_str();
                    while let Some(at) = rest.find('%') {
                        out.push_str(&rest[..at]);
                        out.push_str(&rest[at..(at + 3).min(rest.len())].to_lowercase());
                        rest = &rest[(at + 3).min(rest.len())..];
                    }
                    out + rest
                };
                let echo = match form {
                    0 => format!("bad key in {line}"),
                    1 => format!("bad key in {lower}"),
                    2 => format!("bad key: key={}", form_encoded(ENC_KEY)),
                    3 => format!("bad key {}", STANDARD.encode(ENC_KEY)),
                    4 => format!("bad key {}", URL_SAFE_NO_PAD.encode(ENC_KEY)),
                    5 => format!(
                        "bad header Authorization: Basic {}",
                        STANDARD.encode(format!("tingshu:{ENC_KEY}"))
                    ),
                    _ => format!(
                        "{{\"error\":\"bad key\",\"key\":\"{}\"}}",
                        json_escaped(ENC_KEY)
                    ),
                };
                (StatusCode::UNAUTHORIZED, echo).into_response()
            }
        },
    );
    (serve(app).await, lines)
}

/// A book of seven chapters, one per marker (title and paragraph), and an
/// eighth (月) the server renders.
fn marker_book(dir: &Path) -> PathBuf {
    let mut text = String::new();
    for (n, m) in MARKERS.iter().enumerate() {
        let number = crate::support::script::chinese_number(n + 1);
        text.push_str(&format!("第{number}章 {m}\n\n{m}一直在那里，夜很长。\n\n"));
    }
    text.push_str("第八章 月\n\n月一直在那里，夜很长。\n\n");
    let path = dir.join("七夜.txt");
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `tingshu ARGS` in `dir` with the encoded-key environment; returns
/// (exit code, stdout + stderr).
fn run_with_key(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = Tingshu::new(args)
        .dir(dir)
        .env("FAULT_KEY", ENC_KEY)
        .env("RUST_LOG", "tingshu=debug")
        .env_remove("TINGSHU_VOICES")
        .env_remove("TINGSHU_OUT")
        .env_remove("TINGSHU_CACHE")
        .env_remove("TINGSHU_FORMAT")
        .env_remove("TINGSHU_QUEUE")
        .env_remove("TINGSHU_STUDIO_TOKEN")
        .env_remove("TINGSHU_STUDIO_BIND")
        .output();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Every file under `dir`, as text.
fn files_text(dir: &Path) -> Vec<(String, String)> {
    walk(dir)
        .into_iter()
        .map(|p| {
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap_or_default()).into_owned();
            (p.display().to_string(), text)
        })
        .collect()
}

/// A server that echoes the key in the request line (percent-encoded),
/// lower-case hex, form-encoded, base64, URL-safe base64, basic auth and
/// JSON: the key is in none of the outputs the issue names — stderr and
/// the log, report.txt, `.tingshu-batch/last-run.json`, `batch status`, the
/// studio's preview error, a parked Redis task (the whole database),
/// `queue-status` and the worker log — in any of those forms.
#[tokio::test(flavor = "multi_thread")]
async fn an_echoed_key_is_hidden_in_every_encoding_and_every_output() {
    let (server, lines) = echoing_server().await;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_owned();
    one_backend_voices(
        &root,
        &format!(
            "type = \"http\"\nmethod = \"POST\"\nurl = \"http://{server}/tts?key={{key}}\"\napi_key_env = \"FAULT_KEY\"\njson = {{ text = \"{{text}}\" }}"
        ),
    );
    let book = marker_book(&root);
    let book_arg = book.to_str().unwrap().to_owned();
    let mut outputs: Vec<(String, String)> = Vec::new();

    // 1–2. build: stderr (debug log included) and report.txt.
    let r = root.clone();
    let b = book_arg.clone();
    let (code, text) = tokio::task::spawn_blocking(move || {
        run_with_key(
            &r,
            &["build", &b, "--voices", "voices.toml", "--out", "out", "-v"],
        )
    })
    .await
    .unwrap();
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("401"), "{text}");
    outputs.push(("build stderr".into(), text));
    let files = walk(&root.join("out"));
    let report = files
        .iter()
        .find(|p| p.ends_with("report.txt"))
        .unwrap_or_else(|| panic!("no report.txt in {files:?}: {}", outputs[0].1));
    let report = std::fs::read_to_string(report).unwrap();
    assert!(report.contains("***"), "{report}");
    outputs.extend(files_text(&root.join("out")));

    // 3–4. batch run (stderr, last-run.json, report.txt) and batch status.
    std::fs::write(
        root.join("jobs.toml"),
        format!(
            "[[job]]\nname = \"seven\"\nsource = \"{book_arg}\"\nout = \"batch-out\"\nvoices = \"voices.toml\"\nformats = [\"wav\"]\n"
        ),
    )
    .unwrap();
    let r = root.clone();
    let (code, text) =
        tokio::task::spawn_blocking(move || run_with_key(&r, &["batch", "run", "jobs.toml"]))
            .await
            .unwrap();
    assert_ne!(code, 0, "{text}");
    outputs.push(("batch run stderr".into(), text));
    let last_run =
        std::fs::read_to_string(root.join("batch-out/七夜/.tingshu-batch/last-run.json"))
            .or_else(|_| {
                walk(&root.join("batch-out"))
                    .into_iter()
                    .find(|p| p.ends_with("last-run.json"))
                    .map(std::fs::read_to_string)
                    .unwrap()
            })
            .unwrap();
    assert!(last_run.contains("***"), "{last_run}");
    outputs.extend(files_text(&root.join("batch-out")));
    let r = root.clone();
    let (_, status) =
        tokio::task::spawn_blocking(move || run_with_key(&r, &["batch", "status", "jobs.toml"]))
            .await
            .unwrap();
    assert!(status.contains("***"), "{status}");
    outputs.push(("batch status".into(), status));

    // 5. the studio's preview errors, one per encoding.
    let studio_errors = studio_preview_errors(&root, &book_arg).await;
    outputs.push(("studio preview errors".into(), studio_errors));

    // 6–8. a parked Redis task, queue-status and the worker log.
    if let Some(redis) = crate::support::redis::Redis::start() {
        let url = redis.url.clone();
        let r = root.clone();
        let b = book_arg.clone();
        let (queue_outputs, parked) = tokio::task::spawn_blocking(move || {
            let (code, text) = run_with_key(
                &r,
                &[
                    "enqueue",
                    &b,
                    "--voices",
                    "voices.toml",
                    "--out",
                    "q-out",
                    "--queue",
                    &url,
                ],
            );
            assert_eq!(code, 0, "{text}");
            let mut found = vec![("enqueue".to_owned(), text)];
            let (code, log) = run_with_key(
                &r,
                &[
                    "worker",
                    "--queue",
                    &url,
                    "--until-idle",
                    "--cache",
                    "q-cache",
                    "--name",
                    "w0",
                ],
            );
            assert_ne!(code, 0, "parked work is a failure: {log}");
            found.push(("worker log".to_owned(), log));
            let (_, table) = run_with_key(&r, &["queue-status", "--queue", &url]);
            let parked = table.lines().filter(|l| l.starts_with("parked: ")).count();
            found.push(("queue-status".to_owned(), table));
            found.push(("redis database".to_owned(), redis_contents(&url)));
            (found, parked)
        })
        .await
        .unwrap();
        assert!(parked >= 1, "{queue_outputs:?}");
        outputs.extend(queue_outputs);
    }

    // The server saw the key percent-encoded in the URL.
    let seen = lines.lock().unwrap().clone();
    assert!(
        seen.iter().any(|l| l.contains(&percent_upper(ENC_KEY))),
        "{seen:?}"
    );
    let leaks: Vec<String> = outputs
        .iter()
        .flat_map(|(what, text)| leaked(what, text))
        .collect();
    assert!(leaks.is_empty(), "the key leaked: {leaks:?}");
}

/// Starts `tingshu studio` on `book` in `dir` and asks it for a preview of
/// a line with each marker; returns the error bodies.
async fn studio_preview_errors(dir: &Path, book: &str) -> String {
    use std::io::BufRead as _;
    let mut child = Tingshu::new(["studio", book, "--voices", "voices.toml"])
        .dir(dir)
        .env("FAULT_KEY", ENC_KEY)
        .env_remove("TINGSHU_VOICES")
        .env_remove("TINGSHU_CAST")
        .env_remove("TINGSHU_LEXICON")
        .env_remove("TINGSHU_CACHE")
        .env_remove("TINGSHU_STUDIO_TOKEN")
        .env_remove("TINGSHU_STUDIO_BIND")
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        line
    })
    .await
    .unwrap();
    let (base, token) = line
        .trim()
        .split_once("/?token=")
        .map(|(b, t)| (b.to_owned(), t.to_owned()))
        .unwrap_or_else(|| panic!("the studio printed no URL: {line:?}"));
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut errors = String::new();
    for m in MARKERS {
        let response = client
            .post(format!("{base}/api/preview"))
            .header("X-Tingshu-Token", &token)
            .json(&serde_json::json!({ "text": format!("{m}一直在那里。") }))
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body = response.text().await.unwrap();
        assert!(!status.is_success(), "{body}");
        assert!(body.contains("401"), "{body}");
        errors.push_str(&body);
        errors.push('\n');
    }
    crate::support::cli::stop(&mut child);
    errors
}

/// Everything a Redis server holds, as bytes of an uncompressed dump.
fn redis_contents(url: &str) -> String {
    let cli = |args: &[&str]| {
        let out = Command::new("redis-cli")
            .args(["-u", url, "--raw"])
            .args(args)
            .output()
            .expect("redis-cli runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    cli(&["CONFIG", "SET", "rdbcompression", "no"]);
    cli(&["SAVE"]);
    let config = cli(&["CONFIG", "GET", "dir"]);
    let dir = config.lines().nth(1).expect("redis names its dir").trim();
    let dump = std::fs::read(Path::new(dir).join("dump.rdb")).expect("dump.rdb");
    assert!(dump.len() > 100, "the dump holds the tasks");
    String::from_utf8_lossy(&dump).into_owned()
}

// ------------------------------------------------- 9. signals in batch run

/// `ffmpeg` children of `parent` writing an M4B (`-f ipod`).
fn m4b_encodes(parent: u32) -> Vec<u32> {
    ffmpeg_children(parent)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|arg| arg == b"ipod"))
        })
        .collect()
}

/// SIGINT (and SIGTERM) while `batch run` encodes the book's M4B: ffmpeg is
/// stopped, the old M4B stays byte for byte, nothing half-written is left,
/// the run is recorded as interrupted and exits 1 (as the README says); the
/// next run encodes the M4B again, with the new chapter.
#[test]
fn a_signal_during_the_m4b_encode_keeps_the_old_m4b_and_the_next_run_encodes() {
    if !ffmpeg::tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let book = write_book(dir.path(), "灯.txt", 6, 12);
    let voices = espeak_voices();
    std::fs::write(
        dir.path().join("jobs.toml"),
        format!(
            "[[job]]\nname = \"lamp\"\nsource = \"灯.txt\"\nout = \"out\"\nvoices = \"{}\"\nformats = [\"wav\", \"m4b\"]\n",
            voices.display()
        ),
    )
    .unwrap();
    let batch = || {
        Tingshu::new(["batch", "run", "jobs.toml"])
            .dir(dir.path())
            .env_remove("TINGSHU_VOICES")
            .env_remove("TINGSHU_FFMPEG")
    };
    let first = batch().output();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let book_dir = dir.path().join("out/灯");
    let m4b = book_dir.join("灯.m4b");
    let old = std::fs::read(&m4b).unwrap();
    assert_eq!(ffmpeg::m4b_chapters(&m4b).len(), 6);
    let last_run =
        || std::fs::read_to_string(book_dir.join(".tingshu-batch/last-run.json")).unwrap();

    for (round, signal) in [(1, libc::SIGINT), (2, libc::SIGTERM)] {
        // A new chapter: the run renders it, then encodes the M4B again.
        let mut text = std::fs::read_to_string(&book).unwrap();
        text.push_str(&format!(
            "第{}章 新灯\n\n守塔人第{round}次点亮了新灯。\n\n",
            6 + round
        ));
        std::fs::write(&book, text).unwrap();
        let mut child = batch()
            .command()
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(300);
        let mut encodes = Vec::new();
        while Instant::now() < deadline {
            encodes = m4b_encodes(child.id());
            if !encodes.is_empty() || child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if encodes.is_empty() {
            let _ = child.kill();
            let _ = child.wait();
            services::skip("an M4B encode seen before the run finished");
            return;
        }
        // SAFETY: a plain kill(2) of our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("interrupted"), "{stderr}");
        assert!(
            encodes.iter().all(|&p| !alive(p)),
            "ffmpeg still runs after the run"
        );
        assert_eq!(std::fs::read(&m4b).unwrap(), old, "the old M4B changed");
        assert!(leftovers(&book_dir, ".part").is_empty());
        let record: serde_json::Value = serde_json::from_str(&last_run()).unwrap();
        assert_eq!(record["outcome"], "interrupted", "{record}");
    }

    // The next run encodes the M4B again, with both new chapters.
    let next = batch().output();
    assert!(
        next.status.success(),
        "{}",
        String::from_utf8_lossy(&next.stderr)
    );
    assert_ne!(std::fs::read(&m4b).unwrap(), old);
    assert_eq!(ffmpeg::m4b_chapters(&m4b).len(), 8);
    let record: serde_json::Value = serde_json::from_str(&last_run()).unwrap();
    assert_eq!(record["outcome"], "ok", "{record}");
}

// ------------------------------------------------------ 10. archive limits

/// An EPUB whose only chapter inflates to 300 MiB (a 300 KB zip): the book
/// is refused with "… is larger than the 256 MiB limit", exit 2, nothing
/// written, and memory stays near the limit, not the bomb's size.
#[test]
fn a_zip_bomb_chapter_says_it_is_larger_than_the_limit() {
    use zip::write::SimpleFileOptions;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("炸弹.epub");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let deflated =
        SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("mimetype", stored).unwrap();
    zip.write_all(b"application/epub+zip").unwrap();
    zip.start_file("META-INF/container.xml", deflated).unwrap();
    zip.write_all(br#"<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>"#).unwrap();
    zip.start_file("OEBPS/content.opf", deflated).unwrap();
    zip.write_all(br#"<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">bomb</dc:identifier><dc:title>bomb</dc:title><dc:language>zh</dc:language></metadata><manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest><spine><itemref idref="c1"/></spine></package>"#).unwrap();
    zip.start_file("OEBPS/c1.xhtml", deflated).unwrap();
    zip.write_all(br#"<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body><p>"#)
        .unwrap();
    let spaces = vec![b' '; 1 << 20];
    for _ in 0..300 {
        zip.write_all(&spaces).unwrap();
    }
    zip.write_all(b"</p></body></html>").unwrap();
    zip.finish().unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() < 2 << 20);

    let run = tingshu(
        dir.path(),
        &[
            "build",
            path.to_str().unwrap(),
            "--voices",
            espeak_voices().to_str().unwrap(),
            "--out",
            "out",
        ],
        &[],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("OEBPS/c1.xhtml is larger than the 256 MiB limit"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(!dir.path().join("out").exists());
    // Stopped at the limit: well under twice the limit in memory.
    assert!(run.max_rss < 400 << 20, "peak RSS {} MB", run.max_rss >> 20);
}

// ---------------------------------------------------- 11. mixed encodings

/// A book whose first half is UTF-8 and second half GBK (two downloads
/// joined): both halves read right, one warning names the byte ranges,
/// and `split` shows the text of both.
#[test]
fn a_book_of_utf8_then_gbk_reads_right_with_a_warning_naming_the_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let first = "第一章 雾港\n\n清晨的雾还没有散，码头上已经站满了等船的人。老周把帽子压低，说：“今天的船怕是要晚了。”\n\n";
    let second =
        "第二章 归帆\n\n傍晚时分，远处终于传来了汽笛声。孩子们沿着石阶跑下去，喊着父亲的名字。\n\n";
    let (gbk, _, unmappable) = encoding_rs::GBK.encode(second);
    assert!(!unmappable);
    let mut bytes = first.as_bytes().to_vec();
    bytes.extend_from_slice(&gbk);
    let book = dir.path().join("两段.txt");
    std::fs::write(&book, &bytes).unwrap();

    let out = Tingshu::new(["split"]).arg(&book).output();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for line in [
        "雾还没有散",
        "今天的船怕是要晚了",
        "远处终于传来了汽笛声",
        "喊着父亲的名字",
    ] {
        assert!(stdout.contains(line), "{line} missing: {stdout}");
    }
    assert!(!stdout.contains("涓"), "mojibake: {stdout}");
    let split = first.len();
    let warning = format!(
        "bytes 0–{split} UTF-8, bytes {split}–{} GB18030",
        bytes.len()
    );
    assert_eq!(stderr.matches("changes encoding").count(), 1, "{stderr}");
    assert!(stderr.contains(&warning), "want {warning:?}: {stderr}");

    // Mostly mojibake in every encoding: refused with the offset, exit 2.
    let mut broken = Vec::new();
    for (i, c) in first.repeat(6).chars().enumerate() {
        let mut buf = [0; 4];
        let enc = c.encode_utf8(&mut buf).as_bytes();
        broken.extend_from_slice(if i % 5 == 4 && enc.len() > 1 {
            &enc[1..]
        } else {
            enc
        });
    }
    let bad = dir.path().join("乱码.txt");
    std::fs::write(&bad, &broken).unwrap();
    let out = Tingshu::new(["split"]).arg(&bad).output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("乱码.txt"), "{stderr}");
    assert!(stderr.contains("byte offset"), "{stderr}");
    assert!(out.stdout.is_empty());
}
