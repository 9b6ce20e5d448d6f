//! Scale-out tests: a real PostgreSQL or Redis server started on 127.0.0.1
//! for each test, real `tingshu worker` processes sharing one queue and one
//! synthesis cache (a directory, or a bucket of a small S3-compatible server
//! in the test), a local HTTP text-to-speech server that counts requests, or
//! the real espeak-ng engine. Each test is skipped with a message when its
//! server program is not installed, and fails then with
//! `TINGSHU_REQUIRE_SERVICES=1`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use tingshu::queue::{JobPlan, NewTask, TaskKind, TaskQueue, TaskState};

use crate::support::cli::Tingshu;
use crate::support::ffmpeg::{self, m4b_chapters};
use crate::support::redis::Redis;
use crate::support::services;
use crate::support::tts_server::TtsServer;

// ---------------------------------------------------------------------------
// A throwaway PostgreSQL server

struct Postgres {
    /// Holds the data directory; removed on drop.
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// Run the server programs as this user (PostgreSQL refuses root).
    run_as: Option<String>,
    url: String,
}

fn postgres_bin() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file() && bin.join("pg_ctl").is_file())
        .collect();
    versions.sort();
    versions.pop()
}

fn id(args: &[&str]) -> Option<u32> {
    let out = Command::new("id").args(args).output().ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

impl Postgres {
    /// Starts a server, or says why not and returns `None`.
    fn start() -> Option<Postgres> {
        let bin = postgres_bin();
        if !services::require("the PostgreSQL server programs", bin.is_some()) {
            return None;
        }
        let bin = bin?;
        let dir = tempfile::tempdir().expect("temporary directory");
        let run_as = if id(&["-u"]) == Some(0) {
            let ids = id(&["-u", "postgres"]).zip(id(&["-g", "postgres"]));
            if !services::require(
                "a 'postgres' user (PostgreSQL refuses to run as root)",
                ids.is_some(),
            ) {
                return None;
            }
            let (uid, gid) = ids?;
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown data dir");
            Some("postgres".to_owned())
        } else {
            None
        };
        let mut pg = Postgres {
            dir,
            bin,
            run_as,
            url: String::new(),
        };
        let data = pg.dir.path().join("data");
        let out = pg.program(
            "initdb",
            &[
                "-D",
                &data.to_string_lossy(),
                "-U",
                "tingshu",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for _ in 0..3 {
            let port = free_port();
            let options = format!(
                "-h 127.0.0.1 -p {port} -k {} -c fsync=off -c max_connections=200",
                pg.dir.path().display()
            );
            let out = pg.program(
                "pg_ctl",
                &[
                    "-D",
                    &data.to_string_lossy(),
                    "-o",
                    &options,
                    "-l",
                    &pg.dir.path().join("log").to_string_lossy(),
                    "-w",
                    "start",
                ],
            );
            if out.status.success() {
                pg.url = format!("postgres://tingshu@127.0.0.1:{port}/postgres");
                return Some(pg);
            }
        }
        let log = std::fs::read_to_string(pg.dir.path().join("log")).unwrap_or_default();
        panic!("PostgreSQL did not start:\n{log}");
    }

    fn program(&self, name: &str, args: &[&str]) -> Output {
        let program = self.bin.join(name);
        let mut command = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&program);
                c
            }
            None => Command::new(&program),
        };
        command
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()))
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let _ = self.program(
            "pg_ctl",
            &[
                "-D",
                &data.to_string_lossy(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
    }
}

// ---------------------------------------------------------------------------
// A throwaway Redis server

#[derive(Debug, Clone, Copy)]
enum Engine {
    Postgres,
    Redis,
}

/// A running queue server of either engine.
struct Service {
    url: String,
    _postgres: Option<Postgres>,
    _redis: Option<Redis>,
}

impl Service {
    fn start(engine: Engine) -> Option<Service> {
        match engine {
            Engine::Postgres => Postgres::start().map(|pg| Service {
                url: pg.url.clone(),
                _postgres: Some(pg),
                _redis: None,
            }),
            Engine::Redis => Redis::start().map(|r| Service {
                url: r.url.clone(),
                _postgres: None,
                _redis: Some(r),
            }),
        }
    }
}

// ---------------------------------------------------------------------------
// A minimal S3-compatible server: path-style PUT, GET and HEAD of objects in
// memory (no signatures checked, no listing), on 127.0.0.1 port 0.

struct S3Server {
    addr: std::net::SocketAddr,
    objects: std::sync::Arc<std::sync::Mutex<BTreeMap<String, Vec<u8>>>>,
    _runtime: tokio::runtime::Runtime,
}

type Objects = std::sync::Arc<std::sync::Mutex<BTreeMap<String, Vec<u8>>>>;

async fn s3_put(
    axum::extract::State(objects): axum::extract::State<Objects>,
    axum::extract::Path((bucket, key)): axum::extract::Path<(String, String)>,
    body: axum::body::Bytes,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let etag = format!("\"{:x}\"", body.len() as u64 ^ 0x5a5a);
    objects
        .lock()
        .unwrap()
        .insert(format!("{bucket}/{key}"), body.to_vec());
    ([(axum::http::header::ETAG, etag)], "").into_response()
}

async fn s3_get(
    axum::extract::State(objects): axum::extract::State<Objects>,
    axum::extract::Path((bucket, key)): axum::extract::Path<(String, String)>,
) -> axum::response::Response {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    let Some(bytes) = objects
        .lock()
        .unwrap()
        .get(&format!("{bucket}/{key}"))
        .cloned()
    else {
        return (
            StatusCode::NOT_FOUND,
            "<Error><Code>NoSuchKey</Code></Error>",
        )
            .into_response();
    };
    (
        [
            (
                header::ETAG,
                format!("\"{:x}\"", bytes.len() as u64 ^ 0x5a5a),
            ),
            (
                header::LAST_MODIFIED,
                "Mon, 30 Nov 2026 12:00:00 GMT".to_owned(),
            ),
            (header::CONTENT_LENGTH, bytes.len().to_string()),
            (header::CONTENT_TYPE, "audio/wav".to_owned()),
        ],
        bytes,
    )
        .into_response()
}

impl S3Server {
    fn start() -> S3Server {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let objects: Objects = Default::default();
        let app = axum::Router::new()
            .route("/{bucket}/{*key}", axum::routing::put(s3_put).get(s3_get))
            .with_state(std::sync::Arc::clone(&objects));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(async move { axum::serve(listener, app).await.unwrap() });
        S3Server {
            addr,
            objects,
            _runtime: runtime,
        }
    }

    /// The AWS_* variables that point object_store at this server.
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT", format!("http://{}", self.addr)),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", "tingshu-test".into()),
            ("AWS_SECRET_ACCESS_KEY", "not-a-secret".into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
    }

    fn keys(&self) -> Vec<String> {
        self.objects.lock().unwrap().keys().cloned().collect()
    }
}

// ---------------------------------------------------------------------------
// Fixtures

/// The built-in voices with two espeak-ng workers (whose output does not
/// depend on what a worker said before).
fn reproducible_voices(dir: &Path) -> PathBuf {
    let text = tingshu::config::ESPEAK_VOICES.replace(
        "[backends.local]\ntype = \"espeak\"\n",
        "[backends.local]\ntype = \"espeak\"\nworkers = 2\n",
    );
    assert!(text.contains("workers = 2"), "default voices changed shape");
    let path = dir.join("voices.toml");
    std::fs::write(&path, text).expect("write voices");
    path
}

/// An original 20-chapter story generated from small word lists (a fixed
/// linear congruential sequence picks the words): narration, dialogue and
/// a refrain that closes every chapter, so chapters share some chunks.
fn novel(chapters: usize) -> String {
    const PEOPLE: [&str; 5] = ["阿明", "林姐", "老周", "小雨", "船长"];
    const ACTIONS: [&str; 6] = [
        "慢慢走过",
        "停下来看着",
        "轻轻推开",
        "抬头望向",
        "低声数着",
        "绕过",
    ];
    const THINGS: [&str; 7] = [
        "潮湿的石阶",
        "远处的灯光",
        "半开的木门",
        "一张旧地图",
        "码头边的铁链",
        "窗外的雨",
        "桌上的茶杯",
    ];
    const LINES: [&str; 6] = [
        "今晚的风有点大。",
        "我们明天再来吧。",
        "你听见钟声了吗？",
        "灯还亮着，别担心。",
        "把门关好，天快黑了。",
        "这条路我走过很多次。",
    ];
    const TITLES: [&str; 5] = ["雾起", "夜班", "旧信", "潮声", "归途"];
    let mut state: u64 = 20_261_130;
    let mut pick = |n: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) as usize) % n
    };
    let mut text = String::new();
    for c in 1..=chapters {
        text.push_str(&format!("第{c}章 {}之{c}\n\n", TITLES[pick(TITLES.len())]));
        for _ in 0..3 {
            let (a, b) = (PEOPLE[pick(PEOPLE.len())], PEOPLE[pick(PEOPLE.len())]);
            text.push_str(&format!(
                "{a}{}{}。{b}{}{}。\n\n{a}说：“{}”\n\n",
                ACTIONS[pick(ACTIONS.len())],
                THINGS[pick(THINGS.len())],
                ACTIONS[pick(ACTIONS.len())],
                THINGS[pick(THINGS.len())],
                LINES[pick(LINES.len())],
            ));
        }
        text.push_str("夜色又深了一些。\n\n");
    }
    text
}

struct Render {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    book: PathBuf,
    voices: PathBuf,
    /// The HTTP backend of [`Render::served`] renders.
    server: Option<TtsServer>,
}

impl Render {
    /// A book rendered with the embedded espeak-ng voices.
    fn new(chapters: usize) -> Render {
        let tmp = tempfile::tempdir().expect("temporary directory");
        let root = tmp.path().to_owned();
        let book = root.join("守灯.txt");
        std::fs::write(&book, novel(chapters)).expect("write book");
        let voices = reproducible_voices(&root);
        Render {
            _tmp: tmp,
            root,
            book,
            voices,
            server: None,
        }
    }

    /// A book rendered through a local HTTP backend answering after
    /// `delay`, `retries` retries per request.
    fn served(chapters: usize, delay: Duration, retries: u32) -> Render {
        let mut render = Render::new(chapters);
        let server = TtsServer::start(delay);
        let voices = server
            .voices_toml(40, 4)
            .replace("retries = 0", &format!("retries = {retries}"));
        std::fs::write(&render.voices, voices).expect("write voices");
        render.server = Some(server);
        render
    }

    fn server(&self) -> &TtsServer {
        self.server.as_ref().expect("a served render")
    }

    fn tingshu(&self, args: &[&str]) -> Output {
        Tingshu::new(args).output()
    }

    /// `build` of the book into `ROOT/single`; the book's directory.
    fn build(&self) -> PathBuf {
        self.build_into("single", &[]);
        self.root.join("single/守灯")
    }

    /// `build` of the book into `ROOT/OUT` with `extra` arguments, which
    /// must succeed; its stderr.
    fn build_into(&self, out: &str, extra: &[&str]) -> String {
        let book = self.book.to_string_lossy();
        let voices = self.voices.to_string_lossy();
        let out = self.root.join(out);
        let out = out.to_string_lossy();
        let mut args = vec!["build", &book, "--voices", &voices, "--out", &out];
        args.extend_from_slice(extra);
        let status = self.tingshu(&args);
        let stderr = String::from_utf8_lossy(&status.stderr).into_owned();
        assert!(status.status.success(), "build: {stderr}");
        stderr
    }

    /// [`Render::build`] of a served render, and what it asked the server.
    fn build_served(&self) -> Built {
        let dir = self.build();
        Built {
            dir,
            requests: self.server().requests().into_iter().collect(),
            sent: self.server().count(),
        }
    }

    /// The (text, voice) requests the server had after the first `before`.
    fn asked_since(&self, before: usize) -> Vec<(String, String)> {
        self.server().requests()[before..].to_vec()
    }

    /// A jobs file `ROOT/NAME.toml`: the job `name` reading the book with
    /// the render's voices into `ROOT/OUT`, `extra` lines added; its path.
    fn jobs_file(&self, name: &str, out: &str, extra: &str) -> String {
        let path = self.root.join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "[[job]]\nname = \"{name}\"\nsource = '{}'\nvoices = '{}'\nout = '{}'\n{extra}",
                self.book.display(),
                self.voices.display(),
                self.root.join(out).display(),
            ),
        )
        .expect("write jobs file");
        path.to_string_lossy().into_owned()
    }

    /// `tingshu batch ARGS`, which must succeed; its stderr.
    fn batch(&self, args: &[&str]) -> String {
        let out = Tingshu::new(["batch"]).args(args).output();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "batch {}: {stderr}", args[0]);
        stderr
    }

    fn enqueue(&self, url: &str) -> String {
        self.enqueue_with(url, &[])
    }

    fn enqueue_with(&self, url: &str, extra: &[&str]) -> String {
        let book = self.book.to_string_lossy();
        let voices = self.voices.to_string_lossy();
        let out = self.root.join("multi");
        let out = out.to_string_lossy();
        let mut args = vec![
            "enqueue", &book, "--voices", &voices, "--out", &out, "--queue", url,
        ];
        args.extend_from_slice(extra);
        let out = self.tingshu(&args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "enqueue: {stderr}");
        stderr
    }

    fn cache(&self) -> PathBuf {
        self.root.join("cache")
    }

    fn worker(&self, url: &str, n: usize, extra: &[&str]) -> Child {
        self.worker_with_cache(url, n, extra, &self.cache().to_string_lossy(), &[])
    }

    /// A worker using the cache at `cache`, with `env` added.
    fn worker_with_cache(
        &self,
        url: &str,
        n: usize,
        extra: &[&str],
        cache: &str,
        env: &[(&str, String)],
    ) -> Child {
        let log = std::fs::File::create(self.root.join(format!("worker{n}.log"))).expect("log");
        Tingshu::new(["worker", "--queue", url, "--until-idle"])
            .args(["--cache", cache])
            .args(["--name", &format!("w{n}")])
            .args(if extra.contains(&"--concurrency") {
                &[][..]
            } else {
                &["--concurrency", "4"][..]
            })
            .args(extra)
            .env("RUST_LOG", "tingshu=info")
            .env("NO_COLOR", "1")
            .command()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start worker")
    }

    fn log(&self, n: usize) -> String {
        std::fs::read_to_string(self.root.join(format!("worker{n}.log"))).unwrap_or_default()
    }
}

/// What a served render's `build` made and asked for.
struct Built {
    /// The book's directory.
    dir: PathBuf,
    /// The distinct (text, voice) requests.
    requests: BTreeSet<(String, String)>,
    /// Requests sent so far.
    sent: usize,
}

/// Waits for every worker to exit on its own; returns their exit codes.
fn wait_all(render: &Render, workers: &mut [(usize, Child)], limit: Duration) -> Vec<i32> {
    let start = Instant::now();
    let mut codes = vec![None; workers.len()];
    while codes.iter().any(Option::is_none) {
        for (i, (_, child)) in workers.iter_mut().enumerate() {
            if codes[i].is_none()
                && let Some(status) = child.try_wait().expect("wait")
            {
                codes[i] = Some(status.code().unwrap_or(-1));
            }
        }
        if start.elapsed() > limit {
            let logs: Vec<String> = workers.iter().map(|(n, _)| render.log(*n)).collect();
            for (_, child) in workers.iter_mut() {
                let _ = child.kill();
                let _ = child.wait();
            }
            panic!(
                "workers did not finish in {limit:?}:\n{}",
                logs.join("\n---\n")
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    codes.into_iter().map(|c| c.unwrap_or(-1)).collect()
}

/// Every chapter WAV and subtitle and the manifest of `dir` by name →
/// contents (workers do not write `build`'s report).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            [".wav", ".srt", ".lrc"]
                .iter()
                .any(|ext| name.ends_with(ext))
                || name == "manifest.json"
        })
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).expect("read output file"),
            )
        })
        .collect()
}

fn assert_same_output(single: &Path, multi: &Path) {
    let (a, b) = (files(single), files(multi));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "file lists differ"
    );
    for (name, bytes) in &a {
        assert!(
            bytes == &b[name],
            "{name} differs between build and workers"
        );
    }
}

fn store_keys(cache: &Path) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    for sub in std::fs::read_dir(cache).expect("cache dir").flatten() {
        for file in std::fs::read_dir(sub.path())
            .expect("cache subdir")
            .flatten()
        {
            let name = file.file_name().to_string_lossy().into_owned();
            assert!(
                !name.starts_with('.'),
                "temporary file left in the store: {name}"
            );
            keys.insert(name.trim_end_matches(".wav").to_owned());
        }
    }
    keys
}

// ---------------------------------------------------------------------------
// Tests

#[test]
fn postgres_three_workers_render_a_book_once_and_byte_identical_to_build() {
    three_workers_render_a_book_once_and_byte_identical_to_build(Engine::Postgres);
}

#[test]
fn redis_three_workers_render_a_book_once_and_byte_identical_to_build() {
    three_workers_render_a_book_once_and_byte_identical_to_build(Engine::Redis);
}

fn three_workers_render_a_book_once_and_byte_identical_to_build(engine: Engine) {
    let Some(pg) = Service::start(engine) else {
        return;
    };
    let render = Render::served(20, Duration::from_millis(20), 0);
    let Built {
        dir: single,
        requests: built,
        sent: before,
    } = render.build_served();

    let first = render.enqueue(&pg.url);
    let second = render.enqueue(&pg.url);
    assert!(first.contains(" new"), "{first}");
    assert!(
        second.trim_end().ends_with(", 0 new"),
        "re-enqueue added tasks: {second}"
    );

    let mut workers: Vec<(usize, Child)> = (0..3)
        .map(|n| (n, render.worker(&pg.url, n, &[])))
        .collect();
    let codes = wait_all(&render, &mut workers, Duration::from_secs(600));
    assert_eq!(codes, [0, 0, 0], "{}", render.log(0));

    let multi = render.root.join("multi/守灯");
    assert_same_output(&single, &multi);
    assert_eq!(
        files(&multi).len(),
        61,
        "20 chapters with SRT and LRC, and a manifest"
    );

    // Every distinct chunk was asked of the backend exactly once, across
    // all workers: the same chunks `build` asked for.
    let asked = render.asked_since(before);
    let mut counts: BTreeMap<(String, String), usize> = BTreeMap::new();
    for request in &asked {
        *counts.entry(request.clone()).or_default() += 1;
    }
    let repeated: Vec<_> = counts.iter().filter(|(_, n)| **n != 1).collect();
    assert!(
        repeated.is_empty(),
        "chunks requested more than once: {repeated:?}"
    );
    assert_eq!(counts.keys().cloned().collect::<BTreeSet<_>>(), built);
    let stored = store_keys(&render.cache());
    assert_eq!(stored.len(), asked.len());
    // The refrain closes every chapter but was requested once.
    let manifest = std::fs::read_to_string(multi.join("manifest.json")).unwrap();
    assert_eq!(manifest.matches("夜色又深了一些").count(), 20);
    assert_eq!(
        asked
            .iter()
            .filter(|(t, _)| t.contains("夜色又深了一些"))
            .count(),
        1
    );
    // More than one worker did work.
    let busy = (0..3)
        .filter(|n| render.log(*n).contains("synthesized chunk"))
        .count();
    assert!(busy >= 2, "only {busy} worker synthesized anything");

    // `build` with the workers' cache sends nothing: same keys, same files.
    let stderr = render.build_into("again", &["--cache", &render.cache().to_string_lossy()]);
    assert!(stderr.contains("0 requests sent"), "{stderr}");
    assert_eq!(render.server().count(), before + asked.len());
    assert_same_output(&single, &render.root.join("again/守灯"));

    let status = render.tingshu(&["queue-status", "--queue", &pg.url]);
    let table = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success(), "{table}");
    let row: Vec<&str> = table
        .lines()
        .find(|l| l.starts_with("守灯"))
        .unwrap_or_else(|| panic!("no job row: {table}"))
        .split_whitespace()
        .collect();
    // job, waiting, queued, running, done, parked, chapters
    assert_eq!(row[1..4], ["0", "0", "0"], "{table}");
    assert_eq!(row[5], "0", "{table}");
    assert_eq!(row[6], "20/20", "{table}");
    assert_eq!(
        row[4].parse::<usize>().unwrap(),
        stored.len() + 20 + 1,
        "{table}"
    );
}

/// Two workers share a cache in an S3-compatible bucket: every chunk is
/// asked of the backend once, stored as one object under the prefix, and the
/// book comes out as `build` makes it.
#[test]
fn redis_two_workers_share_an_s3_cache() {
    let Some(service) = Service::start(Engine::Redis) else {
        return;
    };
    let s3 = S3Server::start();
    let render = Render::served(4, Duration::from_millis(10), 0);
    let Built {
        dir: single,
        requests: built,
        sent: before,
    } = render.build_served();
    render.enqueue(&service.url);
    let env = s3.env();
    let mut workers: Vec<(usize, Child)> = (0..2)
        .map(|n| {
            let worker =
                render.worker_with_cache(&service.url, n, &[], "s3://tingshu/shared/cache", &env);
            (n, worker)
        })
        .collect();
    let codes = wait_all(&render, &mut workers, Duration::from_secs(300));
    assert_eq!(codes, [0, 0], "{}\n---\n{}", render.log(0), render.log(1));
    assert_same_output(&single, &render.root.join("multi/守灯"));

    let asked = render.asked_since(before);
    let distinct: BTreeSet<(String, String)> = asked.iter().cloned().collect();
    assert_eq!(asked.len(), distinct.len(), "a chunk was asked twice");
    assert_eq!(distinct, built);
    let keys = s3.keys();
    assert_eq!(keys.len(), asked.len(), "{keys:?}");
    assert!(
        keys.iter().all(|k| {
            let name = k.rsplit('/').next().unwrap();
            k.starts_with("tingshu/shared/cache/")
                && name.ends_with(".wav")
                && k.split('/').nth(3) == Some(&name[..2])
        }),
        "{keys:?}"
    );
    // No worker printed the credentials.
    for n in 0..2 {
        assert!(!render.log(n).contains("not-a-secret"));
    }
    // `build` with the bucket as its cache sends nothing.
    let out = Tingshu::new(["build", &render.book.to_string_lossy(), "--voices"])
        .arg(&render.voices)
        .arg("--out")
        .arg(render.root.join("again"))
        .args(["--cache", "s3://tingshu/shared/cache"])
        .command()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("run build");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("0 requests sent"), "{stderr}");
    assert_same_output(&single, &render.root.join("again/守灯"));
}

/// An unreachable queue server is a runtime failure (exit 1), a malformed
/// queue URL bad input (exit 2); each is one line naming the URL without
/// its password.
#[test]
fn unreachable_and_malformed_queues_exit_1_and_2_with_one_line() {
    let port = free_port();
    let cache = tempfile::tempdir().unwrap();
    let cases = [
        (format!("postgres://tts:s3cret@127.0.0.1:{port}/q"), 1),
        (format!("redis://:s3cret@127.0.0.1:{port}/0"), 1),
        ("postgres://tts:s3cret@127.0.0.1:notaport/q".to_owned(), 2),
        ("redis://:s3cret@127.0.0.1:notaport/0".to_owned(), 2),
        ("amqp://tts:s3cret@127.0.0.1/".to_owned(), 2),
    ];
    for (url, code) in cases {
        let out = Tingshu::new(["worker", "--until-idle", "--queue", &url])
            .arg("--cache")
            .arg(cache.path())
            .env("NO_COLOR", "1")
            .output();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{url}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{url}: {stderr}");
        assert!(!stderr.contains("s3cret"), "{stderr}");
        let redacted = tingshu::queue::redact(&url);
        assert!(stderr.contains(&redacted), "{redacted}: {stderr}");
    }
}

/// `enqueue --lexicon` gives workers the same pronunciation overrides as
/// `build --lexicon`.
#[test]
fn redis_workers_use_the_books_lexicon() {
    let Some(service) = Service::start(Engine::Redis) else {
        return;
    };
    let render = Render::served(3, Duration::ZERO, 0);
    let lexicon = render.root.join("lexicon.toml");
    std::fs::write(&lexicon, "\"阿明\" = { say = \"阿敏\" }\n").unwrap();
    let lexicon = lexicon.to_string_lossy().into_owned();
    let out = render.root.join("single");
    render.build_into("single", &["--lexicon", &lexicon]);
    let before = render.server().count();
    render.enqueue_with(&service.url, &["--lexicon", &lexicon]);
    let mut workers = vec![(0, render.worker(&service.url, 0, &[]))];
    let codes = wait_all(&render, &mut workers, Duration::from_secs(300));
    assert_eq!(codes, [0], "{}", render.log(0));
    assert_same_output(&out.join("守灯"), &render.root.join("multi/守灯"));
    let asked = render.asked_since(before);
    assert!(asked.iter().any(|(t, _)| t.contains("阿敏")), "{asked:?}");
    assert!(!asked.iter().any(|(t, _)| t.contains("阿明")), "{asked:?}");
}

#[test]
fn postgres_a_transient_backend_failure_is_retried_by_the_client() {
    a_transient_backend_failure_is_retried_by_the_client(Engine::Postgres);
}

#[test]
fn redis_a_transient_backend_failure_is_retried_by_the_client() {
    a_transient_backend_failure_is_retried_by_the_client(Engine::Redis);
}

/// Two HTTP 503 answers in a row: the synthesis client retries them (the
/// voices file allows 2 retries), so no task fails on the queue.
fn a_transient_backend_failure_is_retried_by_the_client(engine: Engine) {
    let Some(service) = Service::start(engine) else {
        return;
    };
    let render = Render::served(2, Duration::ZERO, 2);
    let single = render.build();
    let before = render.server().count();
    render.enqueue(&service.url);
    render.server().fail_next(2);
    let mut workers = vec![(0, render.worker(&service.url, 0, &["--concurrency", "1"]))];
    let codes = wait_all(&render, &mut workers, Duration::from_secs(300));
    let log = render.log(0);
    assert_eq!(codes, [0], "{log}");
    assert!(log.contains("retrying"), "{log}");
    assert!(!log.contains("task failed"), "{log}");
    let asked = render.asked_since(before);
    let distinct: BTreeSet<&(String, String)> = asked.iter().collect();
    assert_eq!(asked.len(), distinct.len() + 2, "{asked:?}");
    assert_same_output(&single, &render.root.join("multi/守灯"));
}

#[test]
fn postgres_a_worker_killed_mid_run_loses_and_duplicates_nothing() {
    a_worker_killed_mid_run_loses_and_duplicates_nothing(Engine::Postgres);
}

#[test]
fn redis_a_worker_killed_mid_run_loses_and_duplicates_nothing() {
    a_worker_killed_mid_run_loses_and_duplicates_nothing(Engine::Redis);
}

fn a_worker_killed_mid_run_loses_and_duplicates_nothing(engine: Engine) {
    let Some(pg) = Service::start(engine) else {
        return;
    };
    // A slow backend so the kill lands mid-run; short leases so the dead
    // worker's tasks are taken again soon.
    let render = Render::served(20, Duration::from_millis(150), 0);
    let Built {
        dir: single,
        requests: built,
        sent: before,
    } = render.build_served();
    render.enqueue(&pg.url);
    let extra = ["--lease", "2"];
    let mut victim = render.worker(&pg.url, 0, &extra);
    let mut workers: Vec<(usize, Child)> = (1..3)
        .map(|n| (n, render.worker(&pg.url, n, &extra)))
        .collect();
    let start = Instant::now();
    while render.log(0).matches("synthesized chunk").count() < 5 {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "victim never started: {}",
            render.log(0)
        );
        assert!(
            victim.try_wait().unwrap().is_none(),
            "victim exited early: {}",
            render.log(0)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    victim.kill().expect("SIGKILL the worker");
    victim.wait().expect("reap");
    let codes = wait_all(&render, &mut workers, Duration::from_secs(600));
    assert_eq!(codes, [0, 0], "{}", render.log(1));

    let multi = render.root.join("multi/守灯");
    let names: Vec<String> = files(&multi).into_keys().collect();
    let chapters: Vec<&String> = names.iter().filter(|n| n.ends_with(".wav")).collect();
    assert_eq!(chapters.len(), 20, "{names:?}");
    // Only the chunks the victim held when it died (at most its
    // concurrency) may have been asked twice.
    let asked = render.asked_since(before);
    let distinct: BTreeSet<(String, String)> = asked.iter().cloned().collect();
    assert_eq!(distinct, built);
    assert!(
        asked.len() - distinct.len() <= 4,
        "{} requests for {} chunks",
        asked.len(),
        distinct.len()
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(multi.join("manifest.json")).unwrap()).unwrap();
    let indices: Vec<u64> = manifest["chapters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indices, (1..=20).collect::<Vec<u64>>());
    assert_same_output(&single, &multi);
}

#[test]
fn postgres_a_chunk_that_cannot_be_synthesized_is_parked_with_its_error() {
    a_chunk_that_cannot_be_synthesized_is_parked_with_its_error(Engine::Postgres);
}

#[test]
fn redis_a_chunk_that_cannot_be_synthesized_is_parked_with_its_error() {
    a_chunk_that_cannot_be_synthesized_is_parked_with_its_error(Engine::Redis);
}

fn a_chunk_that_cannot_be_synthesized_is_parked_with_its_error(engine: Engine) {
    let Some(pg) = Service::start(engine) else {
        return;
    };
    let render = Render::new(2);
    let voices = std::fs::read_to_string(&render.voices)
        .unwrap()
        .replace("cmn-latn-pinyin+m3", "no-such-espeak-voice");
    std::fs::write(&render.voices, voices).unwrap();
    render.enqueue(&pg.url);
    let mut workers = vec![(0, render.worker(&pg.url, 0, &[]))];
    let codes = wait_all(&render, &mut workers, Duration::from_secs(300));
    assert_eq!(
        codes,
        [1],
        "parked work is a partial failure: {}",
        render.log(0)
    );

    let status = render.tingshu(&["queue-status", "--queue", &pg.url]);
    assert_eq!(status.status.code(), Some(1));
    let table = String::from_utf8_lossy(&status.stdout);
    let parked: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("parked: 守灯: synth:"))
        .collect();
    assert!(!parked.is_empty(), "{table}");
    assert!(
        parked.iter().all(|l| l.contains("no-such-espeak-voice")),
        "{table}"
    );
    // The narration chapters' chunks were rendered; no chapter could be mixed.
    assert!(
        !render
            .root
            .join("multi/守灯")
            .join("manifest.json")
            .exists()
    );
}

/// `N tasks planned, M new` of a `batch enqueue`/`daemon --queue` line.
fn planned_and_new(line: &str) -> (usize, usize) {
    let tail = line
        .split("; ")
        .find(|part| part.contains("tasks planned"))
        .unwrap_or_else(|| panic!("no task counts: {line}"));
    let numbers: Vec<usize> = tail
        .split_whitespace()
        .filter_map(|w| w.trim_end_matches(',').parse().ok())
        .collect();
    assert_eq!(numbers.len(), 2, "{line}");
    (numbers[0], numbers[1])
}

fn line_with<'a>(log: &'a str, needle: &str) -> &'a str {
    log.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{log}"))
}

/// `batch enqueue` plans a jobs file's pending chapters onto the queue, a
/// second time adds nothing, workers render it as `build` does; `batch
/// status --queue` counts the job's tasks; `batch daemon --queue` enqueues
/// an edited book on its schedule instead of rendering it.
#[test]
fn redis_batch_enqueue_status_and_daemon_go_through_the_queue() {
    let Some(service) = Service::start(Engine::Redis) else {
        return;
    };
    let url = service.url.as_str();
    let render = Render::new(4);
    let single = render.build();
    let jobs = render.jobs_file(
        "lamp",
        "multi",
        "schedule = \"* * * * * *\"\ntimezone = \"UTC\"\n",
    );
    let batch_enqueue = || {
        let stderr = render.batch(&["enqueue", &jobs, "--queue", url]);
        line_with(&stderr, "job \"lamp\": 4 of 4 chapters pending").to_owned()
    };
    let (planned, added) = planned_and_new(&batch_enqueue());
    assert!(
        planned > 4 && added == planned,
        "{planned} planned, {added} new"
    );
    assert_eq!(
        planned_and_new(&batch_enqueue()),
        (planned, 0),
        "a second batch enqueue added tasks"
    );

    let mut workers: Vec<(usize, Child)> =
        (0..2).map(|n| (n, render.worker(url, n, &[]))).collect();
    let codes = wait_all(&render, &mut workers, Duration::from_secs(300));
    assert_eq!(codes, [0, 0], "{}", render.log(0));
    let multi = render.root.join("multi/守灯");
    assert_same_output(&single, &multi);
    assert_eq!(
        files(&multi).len(),
        13,
        "4 chapters with subtitles and a manifest"
    );

    // The workers recorded each chapter in the job's state: `batch status`
    // shows nothing pending and another `batch enqueue` plans nothing.
    let status = render.tingshu(&["batch", "status", &jobs]);
    let text = String::from_utf8_lossy(&status.stdout).into_owned();
    assert!(status.status.success(), "{text}");
    assert!(
        line_with(&text, "pending:").contains("none (4 chapters up to date)"),
        "{text}"
    );
    let stderr = render.batch(&["enqueue", &jobs, "--queue", url]);
    assert!(
        line_with(&stderr, "job \"lamp\"").contains("all 4 chapters up to date, nothing enqueued"),
        "{stderr}"
    );

    let status = render.tingshu(&["batch", "status", &jobs, "--queue", url]);
    let table = String::from_utf8_lossy(&status.stdout).into_owned();
    assert!(status.status.success(), "{table}");
    let row: Vec<&str> = line_with(&table, "lamp ").split_whitespace().collect();
    // job, waiting, queued, running, done, parked, chapters
    assert_eq!(row[1..], ["0", "0", "0", &planned.to_string(), "0", "4/4"]);

    // A fifth chapter: the daemon enqueues its work on the next firing.
    let mut text = std::fs::read_to_string(&render.book).unwrap();
    text.push_str("第5章 尾声之5\n\n灯塔的灯又亮了一整夜。\n\n");
    std::fs::write(&render.book, text).unwrap();
    let log_path = render.root.join("daemon.log");
    let mut daemon = Tingshu::new(["batch", "daemon", &jobs, "--queue", url])
        .env("NO_COLOR", "1")
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log_path).unwrap()))
        .spawn()
        .expect("start daemon");
    let start = Instant::now();
    let needle = "job \"lamp\": 1 of 5 chapters pending (5)";
    while !std::fs::read_to_string(&log_path)
        .unwrap_or_default()
        .contains(needle)
    {
        if start.elapsed() > Duration::from_secs(60) || daemon.try_wait().unwrap().is_some() {
            let _ = daemon.kill();
            let _ = daemon.wait();
            panic!("daemon: {}", std::fs::read_to_string(&log_path).unwrap());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let signal = Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status()
        .unwrap();
    assert!(signal.success());
    assert_eq!(daemon.wait().unwrap().code(), Some(0));
    let log = std::fs::read_to_string(&log_path).unwrap();
    let (_, added) = planned_and_new(line_with(&log, needle));
    assert!(added >= 3, "new synth, mix and book tasks expected: {log}");
    assert!(!log.contains("chapters rendered"), "daemon rendered: {log}");
    assert!(
        !files(&multi).keys().any(|name| name.starts_with("0005-")),
        "chapter 5 rendered before a worker ran"
    );

    let mut workers = vec![(2, render.worker(url, 2, &[]))];
    let codes = wait_all(&render, &mut workers, Duration::from_secs(300));
    assert_eq!(codes, [0], "{}", render.log(2));
    let single = render.build();
    assert_same_output(&single, &multi);
    assert_eq!(
        files(&multi).len(),
        16,
        "5 chapters with subtitles and a manifest"
    );
}

/// A batch job with a cast file: workers render the cast's voices, the same
/// chapters and manifest as `batch run` of the same job.
#[test]
fn redis_batch_jobs_with_a_cast_render_the_same_voices_on_workers() {
    let Some(service) = Service::start(Engine::Redis) else {
        return;
    };
    let url = service.url.as_str();
    let render = Render::new(3);
    let cast = render.root.join("cast.toml");
    std::fs::write(
        &cast,
        "[[character]]\nname = \"林姐\"\ngender = \"female\"\n\n\
         [[character]]\nname = \"小雨\"\ngender = \"female\"\n\n\
         [[character]]\nname = \"阿明\"\ngender = \"male\"\n",
    )
    .unwrap();
    let cast_line = format!("cast = '{}'\n", cast.display());
    let queued = render.jobs_file("queued", "multi", &cast_line);
    let local = render.jobs_file("local", "local", &cast_line);
    let stderr = render.batch(&["enqueue", &queued, "--queue", url]);
    line_with(&stderr, "job \"queued\": 3 of 3 chapters pending");
    let mut workers = vec![(0, render.worker(url, 0, &[]))];
    let codes = wait_all(&render, &mut workers, Duration::from_secs(300));
    assert_eq!(codes, [0], "{}", render.log(0));
    render.batch(&["run", &local]);

    let audio = |dir: &Path| -> BTreeMap<String, Vec<u8>> {
        files(dir)
            .into_iter()
            .filter(|(name, _)| name.ends_with(".wav") || name == "manifest.json")
            .collect()
    };
    let (multi, local) = (
        audio(&render.root.join("multi/守灯")),
        audio(&render.root.join("local/守灯")),
    );
    assert_eq!(multi.len(), 4, "{:?}", multi.keys());
    assert_eq!(multi, local, "workers and batch run differ");
    let manifest = String::from_utf8_lossy(&multi["manifest.json"]).into_owned();
    assert!(manifest.contains("\"voice\": \"female\""), "{manifest}");
    assert!(manifest.contains("\"speaker\": \"林姐\""), "{manifest}");
}

/// Names of the files (not folders) directly in `dir`, hidden ones left out.
fn visible_names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect()
}

fn mtime(path: &Path) -> std::time::SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn postgres_batch_formats_on_workers_match_batch_run() {
    batch_formats_on_workers_match_batch_run(Engine::Postgres);
}

#[test]
fn redis_batch_formats_on_workers_match_batch_run() {
    batch_formats_on_workers_match_batch_run(Engine::Redis);
}

/// A batch job with formats ["wav", "mp3", "m4b"] through `batch enqueue`
/// and two workers gives the files of `batch run` of the same job: MP3s as
/// long as their WAVs, an M4B with the manifest's chapters, written once;
/// a later `batch run` of the queued job finds nothing to do.
fn batch_formats_on_workers_match_batch_run(engine: Engine) {
    if !ffmpeg::tools() {
        return;
    }
    let Some(service) = Service::start(engine) else {
        return;
    };
    let url = service.url.as_str();
    let render = Render::served(5, Duration::ZERO, 0);
    let formats = "formats = [\"wav\", \"mp3\", \"m4b\"]\n";
    let queued = render.jobs_file("queued", "multi", formats);
    let local = render.jobs_file("local", "local", formats);
    let stderr = render.batch(&["enqueue", &queued, "--queue", url]);
    line_with(&stderr, "job \"queued\": 5 of 5 chapters pending");
    let mut workers: Vec<(usize, Child)> =
        (0..2).map(|n| (n, render.worker(url, n, &[]))).collect();
    let codes = wait_all(&render, &mut workers, Duration::from_secs(300));
    assert_eq!(codes, [0, 0], "{}\n---\n{}", render.log(0), render.log(1));
    render.batch(&["run", &local]);

    let (multi, single) = (
        render.root.join("multi/守灯"),
        render.root.join("local/守灯"),
    );
    let names = visible_names(&multi);
    assert_eq!(names, visible_names(&single), "file lists differ");
    let count = |ext: &str| names.iter().filter(|n| n.ends_with(ext)).count();
    assert_eq!(
        [".wav", ".srt", ".lrc", ".mp3", ".m4b", ".m3u"].map(count),
        [5, 5, 5, 5, 1, 1],
        "{names:?}"
    );
    // Every file (audio, subtitles, MP3s, M4B, manifest, playlist) is the
    // bytes of `batch run`; the reports tell of different runs.
    for name in names.iter().filter(|n| *n != "report.txt") {
        assert!(
            std::fs::read(multi.join(name)).unwrap() == std::fs::read(single.join(name)).unwrap(),
            "{name} differs between workers and batch run"
        );
    }
    for mp3 in names.iter().filter(|n| n.ends_with(".mp3")) {
        let wav = multi.join(mp3.replace(".mp3", ".wav"));
        let (a, b) = (
            ffmpeg::duration_s(&multi.join(mp3)),
            ffmpeg::duration_s(&wav),
        );
        assert!((a - b).abs() <= 0.1, "{mp3}: {a} s, its WAV {b} s");
    }
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(multi.join("manifest.json")).unwrap()).unwrap();
    let titles: Vec<&str> = manifest["chapters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles.len(), 5);
    let m4b = multi.join("守灯.m4b");
    let marks = m4b_chapters(&m4b);
    assert_eq!(marks, titles, "M4B chapter marks");

    // The book task ran once: another worker finds nothing to do and the
    // M4B keeps its time; so does `batch run` of the queued job, since the
    // workers recorded what they wrote in its state.
    let books = (0..2)
        .map(|n| render.log(n).matches("wrote book files").count())
        .sum::<usize>();
    assert_eq!(books, 1, "book task runs");
    let written = mtime(&m4b);
    let mut again = vec![(2, render.worker(url, 2, &[]))];
    assert_eq!(wait_all(&render, &mut again, Duration::from_secs(60)), [0]);
    let stderr = render.batch(&["run", &queued]);
    let line = line_with(&stderr, "job \"queued\"");
    assert!(
        line.contains("0 of 5 chapters rendered") && !line.contains("other files written"),
        "{line}"
    );
    assert_eq!(mtime(&m4b), written, "the M4B was written again");
}

/// `enqueue --format wav,m4b` on a worker without ffmpeg: the chapters are
/// mixed (they need no ffmpeg), the book task fails with a one-line error
/// and is parked after its tries (nothing panics); enqueued again, a worker
/// with ffmpeg writes `build`'s files, byte for byte.
#[test]
fn redis_enqueued_formats_need_ffmpeg_only_for_encoded_files() {
    if !ffmpeg::tools() {
        return;
    }
    let Some(service) = Service::start(Engine::Redis) else {
        return;
    };
    let url = service.url.as_str();
    let render = Render::served(2, Duration::ZERO, 0);
    render.enqueue_with(url, &["--format", "wav,m4b"]);
    let missing = render.root.join("no-ffmpeg");
    let cache = render.cache().to_string_lossy().into_owned();
    let env = [("TINGSHU_FFMPEG", missing.to_string_lossy().into_owned())];
    let mut workers = vec![(0, render.worker_with_cache(url, 0, &[], &cache, &env))];
    let codes = wait_all(&render, &mut workers, Duration::from_secs(300));
    let log = render.log(0);
    assert_eq!(codes, [1], "parked work is a partial failure: {log}");
    assert!(!log.contains("panicked"), "{log}");
    let status = render.tingshu(&["queue-status", "--queue", url]);
    assert_eq!(status.status.code(), Some(1));
    let table = String::from_utf8_lossy(&status.stdout).into_owned();
    let parked: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("parked: "))
        .collect();
    assert_eq!(parked.len(), 1, "{table}");
    let needle = format!("cannot run `{}`", missing.display());
    assert!(
        parked[0].starts_with("parked: 守灯: book:")
            && parked[0].contains(&needle)
            && parked[0].contains("need ffmpeg"),
        "{table}"
    );
    let multi = render.root.join("multi/守灯");
    let names = visible_names(&multi);
    assert_eq!(
        names.iter().filter(|n| n.ends_with(".wav")).count(),
        2,
        "{names:?}"
    );
    assert!(!names.contains("守灯.m4b"), "{names:?}");

    render.enqueue_with(url, &["--format", "wav,m4b"]);
    let mut workers = vec![(1, render.worker(url, 1, &[]))];
    let codes = wait_all(&render, &mut workers, Duration::from_secs(300));
    assert_eq!(codes, [0], "{}", render.log(1));
    render.build_into("single", &["--format", "wav,m4b"]);
    let single = render.root.join("single/守灯");
    let names = visible_names(&single);
    assert_eq!(visible_names(&multi), names);
    let count = |ext: &str| names.iter().filter(|n| n.ends_with(ext)).count();
    assert_eq!(
        [".wav", ".srt", ".lrc", ".m4b", ".m3u"].map(count),
        [2, 2, 2, 1, 1],
        "{names:?}"
    );
    for name in names.iter().filter(|n| *n != "report.txt") {
        assert!(
            std::fs::read(multi.join(name)).unwrap() == std::fs::read(single.join(name)).unwrap(),
            "{name} differs between build and workers"
        );
    }
}

/// A `batch` job with a `feed_url`, enqueued: the workers' book task
/// writes the podcast feed and the library's OPML, as `batch run` does
/// (checked with an independent XML parser: every chapter an item whose
/// enclosure is the MP3 beside it, its length the file's size).
#[test]
fn redis_batch_enqueued_job_with_a_feed_url_gets_its_feed_from_the_workers() {
    if !ffmpeg::tools() {
        return;
    }
    let Some(service) = Service::start(Engine::Redis) else {
        return;
    };
    let url = service.url.as_str();
    let render = Render::new(3);
    let library = render.root.join("library");
    let jobs = render.jobs_file(
        "lamp",
        "library",
        "formats = [\"mp3\"]\nfeed_url = \"https://books.example.org/听书\"\n",
    );
    render.batch(&["enqueue", &jobs, "--queue", url]);
    let mut workers = vec![(0, render.worker(url, 0, &[]))];
    let codes = wait_all(&render, &mut workers, Duration::from_secs(300));
    assert_eq!(codes, [0], "{}", render.log(0));

    let book = library.join("守灯");
    let feed = std::fs::read_to_string(book.join("feed.xml")).expect("the workers wrote feed.xml");
    let doc = roxmltree::Document::parse(&feed).expect("the feed is well-formed XML");
    let items: Vec<roxmltree::Node> = doc
        .descendants()
        .filter(|n| n.has_tag_name("item"))
        .collect();
    assert_eq!(items.len(), 3, "{feed}");
    let base = "https://books.example.org/%E5%90%AC%E4%B9%A6/%E5%AE%88%E7%81%AF/";
    for item in &items {
        let enclosure = item
            .children()
            .find(|n| n.has_tag_name("enclosure"))
            .expect("an enclosure");
        let link = enclosure.attribute("url").unwrap();
        let file = link.strip_prefix(base).unwrap_or_else(|| panic!("{link}"));
        let name = percent_encoding::percent_decode_str(file)
            .decode_utf8()
            .unwrap();
        assert!(name.ends_with(".mp3"), "{name}");
        let size = std::fs::metadata(book.join(name.as_ref())).unwrap().len();
        assert_eq!(
            enclosure.attribute("length"),
            Some(size.to_string().as_str())
        );
        assert_eq!(enclosure.attribute("type"), Some("audio/mpeg"));
    }
    let opml = std::fs::read_to_string(library.join("feeds.opml")).expect("feeds.opml");
    let opml = roxmltree::Document::parse(&opml).expect("the OPML is well-formed XML");
    let outlines: Vec<&str> = opml
        .descendants()
        .filter_map(|n| n.attribute("xmlUrl"))
        .collect();
    assert_eq!(outlines, [format!("{base}feed.xml")]);
}

// ---------------------------------------------------------------------------
// Queue semantics through the library

fn task(id: &str, kind: TaskKind, depends_on: &[&str], max_attempts: u32) -> NewTask {
    NewTask {
        id: id.into(),
        kind,
        payload: "{}".into(),
        depends_on: depends_on.iter().map(|s| s.to_string()).collect(),
        max_attempts,
    }
}

async fn state_of(queue: &dyn TaskQueue, job: &str) -> BTreeMap<TaskState, u64> {
    let mut states = BTreeMap::new();
    for status in queue
        .status()
        .await
        .unwrap()
        .into_iter()
        .filter(|s| s.job == job)
    {
        for (_, state, n) in status.counts {
            *states.entry(state).or_default() += n;
        }
    }
    states
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_leases_expire_failures_park_and_dependents_wait() {
    leases_expire_failures_park_and_dependents_wait(Engine::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_leases_expire_failures_park_and_dependents_wait() {
    leases_expire_failures_park_and_dependents_wait(Engine::Redis).await;
}

async fn leases_expire_failures_park_and_dependents_wait(engine: Engine) {
    let Some(pg) = Service::start(engine) else {
        return;
    };
    let queue: std::sync::Arc<dyn TaskQueue> =
        std::sync::Arc::from(tingshu::queue::connect(&pg.url, 8).await.unwrap());
    let lease = Duration::from_millis(300);

    // A task whose worker vanishes is taken again; after max_attempts
    // losses it is parked.
    let plan = JobPlan {
        job: "lost".into(),
        tasks: vec![task("synth:lost", TaskKind::Synth, &[], 2)],
    };
    assert_eq!(queue.enqueue(&plan).await.unwrap().added, 1);
    assert_eq!(queue.enqueue(&plan).await.unwrap().added, 0);
    let first = queue.claim("a", lease).await.unwrap().unwrap();
    assert_eq!((first.id.as_str(), first.attempt), ("synth:lost", 1));
    assert!(
        queue.claim("b", lease).await.unwrap().is_none(),
        "leased task handed out twice"
    );
    tokio::time::sleep(lease * 2).await;
    let second = queue.claim("b", lease).await.unwrap().unwrap();
    assert_eq!(second.attempt, 2);
    assert!(
        !queue.heartbeat("synth:lost", "a", lease).await.unwrap(),
        "old owner kept its lease"
    );
    tokio::time::sleep(lease * 2).await;
    assert!(queue.claim("c", lease).await.unwrap().is_none());
    let status = queue.status().await.unwrap();
    let lost = status.iter().find(|s| s.job == "lost").unwrap();
    assert_eq!(lost.count(TaskState::Parked), 1);
    assert!(
        lost.parked[0].1.contains("stopped responding 2 times"),
        "{:?}",
        lost.parked
    );
    // Enqueueing parked work again gives it fresh attempts.
    assert_eq!(queue.enqueue(&plan).await.unwrap().added, 1);
    let again = queue.claim("d", lease).await.unwrap().unwrap();
    assert_eq!(again.attempt, 1);
    queue.complete(&again.id, None).await.unwrap();

    // Retryable failures come back after their back-off, then park.
    let plan = JobPlan {
        job: "flaky".into(),
        tasks: vec![task("synth:flaky", TaskKind::Synth, &[], 2)],
    };
    queue.enqueue(&plan).await.unwrap();
    let t = queue.claim("a", lease).await.unwrap().unwrap();
    let state = queue
        .fail(&t.id, "a", "HTTP 503", true, Duration::from_millis(200))
        .await
        .unwrap();
    assert_eq!(state, TaskState::Queued);
    assert!(
        queue.claim("a", lease).await.unwrap().is_none(),
        "claimed during back-off"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = queue.claim("a", lease).await.unwrap().unwrap();
    let state = queue
        .fail(&t.id, "a", "HTTP 503 again", true, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(state, TaskState::Parked);
    assert_eq!(
        state_of(queue.as_ref(), "flaky").await[&TaskState::Parked],
        1
    );

    // A chapter waiting on 40 chunks completed concurrently by many
    // workers is readied exactly once, after the last of them.
    let ids: Vec<String> = (0..40).map(|i| format!("synth:c{i}")).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let mut tasks: Vec<NewTask> = refs
        .iter()
        .map(|id| task(id, TaskKind::Synth, &[], 3))
        .collect();
    tasks.push(task("mix:ch", TaskKind::Mix, &refs, 3));
    tasks.push(task("book:b", TaskKind::Book, &["mix:ch"], 3));
    queue
        .enqueue(&JobPlan {
            job: "deps".into(),
            tasks,
        })
        .await
        .unwrap();
    let mut handles = Vec::new();
    for w in 0..8 {
        let queue = std::sync::Arc::clone(&queue);
        handles.push(tokio::spawn(async move {
            let mut done = Vec::new();
            while let Some(t) = queue
                .claim(&format!("w{w}"), Duration::from_secs(30))
                .await
                .unwrap()
            {
                if t.kind != TaskKind::Synth {
                    done.push(t.id.clone());
                    continue;
                }
                queue.complete(&t.id, Some(&t.id)).await.unwrap();
            }
            done
        }));
    }
    let mut claimed_after = Vec::new();
    for h in handles {
        claimed_after.extend(h.await.unwrap());
    }
    // The mix task may have been claimed once by a worker still looping.
    assert!(claimed_after.len() <= 1, "{claimed_after:?}");
    let mix = match claimed_after.pop() {
        Some(id) => id,
        None => {
            queue
                .claim("z", lease)
                .await
                .unwrap()
                .expect("mix ready")
                .id
        }
    };
    assert_eq!(mix, "mix:ch");
    assert!(
        queue.claim("z", lease).await.unwrap().is_none(),
        "book ran before its chapter"
    );
    let results = queue.dependency_results("mix:ch").await.unwrap();
    assert_eq!(results.len(), 40);
    queue.complete("mix:ch", Some("chapter")).await.unwrap();
    let book = queue.claim("z", lease).await.unwrap().expect("book ready");
    assert_eq!(book.id, "book:b");
    assert_eq!(
        queue.dependency_results("book:b").await.unwrap(),
        ["chapter"]
    );
}

/// What byte-identical rendering across machines rests on: a chunk's
/// samples do not depend on what the engine process said before, so two
/// builds give the same files.
#[test]
fn reproducible_espeak_builds_are_byte_identical() {
    let render = Render::new(3);
    let first = render.build();
    let again = render.root.join("again");
    std::fs::rename(&first, &again).expect("move first build aside");
    let second = render.build();
    assert_same_output(&again, &second);
}
