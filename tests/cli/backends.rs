//! The synthesis client against real HTTP servers started here on
//! 127.0.0.1 (port 0), driven through the real `tingshu` binary: faults,
//! retries (exact numbers of attempts), secrets, resume and mixed casting.

use std::path::Path;
use std::time::{Duration, Instant};

use axum::http::header;

use crate::support::paths;
use crate::support::scenario::{Run, Scenario};
use crate::support::tts_server::{Format, Reply, TtsServer};

const KEY: &str = "sk-live-7Hq2ZrT9secret";
const TEXT: &str = "今天天气很好，我们出去走走吧。";

/// `tingshu build` of the scenario's book with its voices.
const BUILD: &[&str] = &["build", "book.txt", "--voices", "voices.toml"];

/// A voices file: narration and dialogue through `backend` (TOML body of
/// `[backends.server]`).
fn voices(backend: &str) -> String {
    voices_narrated_by(backend, "server", "echo")
}

/// [`voices`] with the narration read by espeak.
fn espeak_narrated_voices(backend: &str) -> String {
    voices_narrated_by(backend, "local", "cmn-latn-pinyin")
}

fn voices_narrated_by(backend: &str, narrator: &str, narrator_voice: &str) -> String {
    format!(
        r#"
[backends.local]
type = "espeak"
workers = 1

[backends.server]
{backend}

[voices.narrator]
backend = "{narrator}"
voice = "{narrator_voice}"

[voices.hero]
backend = "server"
voice = "alloy"

[casting]
narrator = "narrator"
dialogue = "hero"
"#
    )
}

/// The `openai` backend on the scenario's server, `extra` lines added.
fn openai(extra: &str) -> String {
    format!(
        "type = \"openai\"\nbase_url = \"{{server}}/v1\"\napi_key_env = \"TEST_TTS_KEY\"\n{extra}"
    )
}

/// A server answering `script`, then `default` forever, as streamed WAVs.
fn streaming(script: Vec<Reply>, default: Reply) -> TtsServer {
    TtsServer::scripted(script, default, Format::StreamedWav, Duration::ZERO)
}

/// A scenario whose runs have the test keys and debug logging.
fn scenario() -> Scenario {
    Scenario::new()
        .env("TEST_TTS_KEY", KEY)
        .env("TEST_AZURE_KEY", KEY)
        .env("RUST_LOG", "debug")
        .env("TINGSHU_VOICES", paths::repo().join("voices/espeak.toml"))
}

/// `tingshu preview TEXT -o out.wav` through the scenario's voices; the key
/// is in neither output.
async fn preview(s: &Scenario, text: &str) -> Run {
    let run = s
        .run_async(&["preview", text, "--voices", "voices.toml", "-o", "out.wav"])
        .await;
    assert!(!run.stderr.contains(KEY), "key leaked: {}", run.stderr);
    assert!(!run.stdout.contains(KEY), "key leaked: {}", run.stdout);
    run
}

/// A scenario of `backend` on `server`, previewing [`TEXT`].
async fn preview_text(server: TtsServer, backend: &str) -> (Run, Scenario) {
    let s = scenario().server(server).voices_toml(&voices(backend));
    (preview(&s, TEXT).await, s)
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_429_waits_for_retry_after() {
    let server = streaming(vec![Reply::Status(429, Some(1))], Reply::Audio);
    let (run, s) = preview_text(server, &openai("retries = 3")).await;
    let server = s.tts_server();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.count(), 2);
    let times = server.times();
    assert!(
        times[1] - times[0] >= Duration::from_millis(990),
        "{times:?}"
    );
    let clip = hound::WavReader::open(s.path("out.wav")).unwrap();
    // 14 characters × 0.2 s of the fake voice, plus the preview's pauses.
    assert!(clip.duration() as f64 / f64::from(clip.spec().sample_rate) > 2.8);
    // The request had the OpenAI shape and the bearer key.
    let request = &server.recorded()[0];
    let body: serde_json::Value = serde_json::from_str(&request.body).unwrap();
    assert_eq!(body["input"], TEXT);
    assert_eq!(body["voice"], "echo");
    assert_eq!(body["model"], "tts-1");
    assert_eq!(
        request.headers[header::AUTHORIZATION].to_str().unwrap(),
        format!("Bearer {KEY}")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_500_then_success() {
    let server = streaming(vec![Reply::Status(500, None)], Reply::Audio);
    let (run, s) = preview_text(server, &openai("retries = 3")).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(s.tts_server().count(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_timeout_is_retried_then_fails_the_chapter() {
    let server = streaming(vec![], Reply::Slow(Duration::from_secs(3)));
    let (run, s) = preview_text(server, &openai("retries = 1\ntimeout_s = 0.4")).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(s.tts_server().count(), 2);
    assert!(
        run.stderr.contains(
            "segment 1 (\"今天天气很好，我们出去走走吧。\"): backend server: no answer within 0.4s"
        ),
        "{}",
        run.stderr
    );
    // Waiting for the server would take 2 × 3 s.
    assert!(run.elapsed < Duration::from_secs(5), "{:?}", run.elapsed);
    assert!(!s.path("out.wav").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_non_audio_body_is_retried() {
    let server = streaming(vec![], Reply::NotAudio);
    let (run, s) = preview_text(server, &openai("retries = 2")).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(s.tts_server().count(), 3);
    assert!(
        run.stderr.contains("backend server: bad audio: not audio")
            && run.stderr.contains("model is warming up"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_truncated_mp3_is_retried() {
    let server = TtsServer::scripted(
        vec![Reply::TruncatedMp3],
        Reply::Audio,
        Format::Mp3,
        Duration::ZERO,
    );
    let (run, s) = preview_text(server, &openai("retries = 2\nresponse_format = \"mp3\"")).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(s.tts_server().count(), 2);
    assert!(run.stderr.contains("bad audio"), "{}", run.stderr);
    let clip = hound::WavReader::open(s.path("out.wav")).unwrap();
    let secs = clip.duration() as f64 / f64::from(clip.spec().sample_rate);
    assert!(secs > 2.0, "{secs}");
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_401_is_not_retried_and_the_key_stays_secret() {
    let server = streaming(vec![], Reply::Status(401, None));
    let (run, s) = preview_text(server, &openai("retries = 4")).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(s.tts_server().count(), 1);
    // Names the segment, the backend and the status; the echoed key is redacted.
    assert!(
        run.stderr.contains("segment 1 (")
            && run
                .stderr
                .contains("backend server: HTTP 401: denied for Some(\"Bearer ***\")"),
        "{}",
        run.stderr
    );
    assert!(!s.path("out.wav").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn voices_lists_backends_with_their_key_variable_but_never_the_key() {
    let backend = "type = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"TEST_TTS_KEY\"\nmax_in_flight = 6\nrate_limit = \"30/60s\"\nfallback = \"local\"";
    let s = scenario().voices_toml(&espeak_narrated_voices(backend));
    let run = s.run_async(&["voices", "--voices", "voices.toml"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("  server       openai   max_in_flight=6 rate_limit=30/60s fallback=local key=$TEST_TTS_KEY\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  hero         server:alloy speed=1\n"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY));
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_key_variable_is_a_config_error() {
    let backend = "type = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"TINGSHU_TEST_UNSET_KEY\"";
    let s = scenario().voices_toml(&voices(backend));
    let run = s.run_async(&["voices", "--voices", "voices.toml"]).await;
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.starts_with("tingshu: error: voices.toml:9: backends.server.api_key_env: environment variable TINGSHU_TEST_UNSET_KEY is not set"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_backend_falls_back_to_espeak() {
    let server = streaming(vec![], Reply::Status(503, None));
    let backend = openai("retries = 1\nfallback = \"local\"\nfallback_voice = \"cmn-latn-pinyin\"");
    let (run, s) = preview_text(server, &backend).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(s.tts_server().count(), 2);
    assert!(s.path("out.wav").is_file());
}

#[tokio::test(flavor = "multi_thread")]
async fn http_template_json_base64_with_retries() {
    let server = TtsServer::scripted(
        vec![Reply::Status(503, Some(0)), Reply::NotAudio],
        Reply::Audio,
        Format::JsonBase64,
        Duration::ZERO,
    );
    let backend = r#"type = "http"
method = "POST"
url = "{server}/tts?key={key}"
json = { text = "{text}", spk = "{voice}", speed_factor = "{speed}" }
response = "json"
audio_path = "data.audio"
api_key_env = "TEST_TTS_KEY"
retries = 3"#;
    let (run, s) = preview_text(server, backend).await;
    let server = s.tts_server();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.count(), 3);
    let body: serde_json::Value = serde_json::from_str(&server.bodies()[2]).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"text": TEXT, "spk": "echo", "speed_factor": 1.0})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn http_401_once() {
    let server = TtsServer::scripted(
        vec![],
        Reply::Status(401, None),
        Format::JsonBase64,
        Duration::ZERO,
    );
    let backend = "type = \"http\"\nurl = \"{server}/tts?text={text}\"\nretries = 3";
    let (run, s) = preview_text(server, backend).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(s.tts_server().count(), 1);
    assert!(
        run.stderr.contains("backend server: HTTP 401"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_ssml_429_then_success_and_500s() {
    let server = streaming(
        vec![Reply::Status(429, Some(0)), Reply::Status(500, None)],
        Reply::Audio,
    );
    let backend = "type = \"azure\"\nendpoint = \"{server}/cognitiveservices/v1\"\napi_key_env = \"TEST_AZURE_KEY\"\nretries = 3";
    let (run, s) = preview_text(server, backend).await;
    let server = s.tts_server();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.count(), 3);
    let requests = server.recorded();
    let last = &requests[2];
    assert_eq!(last.headers["ocp-apim-subscription-key"], KEY);
    assert_eq!(last.headers[header::CONTENT_TYPE], "application/ssml+xml");
    assert!(
        last.body
            .contains(r#"<voice name="echo">今天天气很好，我们出去走走吧。</voice>"#),
        "{}",
        last.body
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_timeout_and_401() {
    let server = streaming(
        vec![Reply::Slow(Duration::from_secs(2))],
        Reply::Status(401, None),
    );
    let backend = "type = \"azure\"\nendpoint = \"{server}/v1\"\napi_key_env = \"TEST_AZURE_KEY\"\nretries = 3\ntimeout_s = 0.3";
    let (run, s) = preview_text(server, backend).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    // The timeout is retried; the 401 that follows is not.
    assert_eq!(s.tts_server().count(), 2);
    assert!(
        run.stderr
            .contains("HTTP 401: denied for None Some(\"***\")"),
        "{}",
        run.stderr
    );
}

/// A book of `chapters` chapters whose every sentence differs.
fn book(chapters: usize, paragraphs: usize) -> String {
    const DIGITS: [&str; 10] = ["零", "一", "二", "三", "四", "五", "六", "七", "八", "九"];
    let mut text = String::new();
    for c in 1..=chapters {
        text.push_str(&format!("第{}章 第{}夜\n", DIGITS[c % 10], DIGITS[c % 10]));
        for p in 1..=paragraphs {
            let n = format!("{}{}", DIGITS[c % 10], DIGITS[p % 10]);
            text.push_str(&format!(
                "　　守夜人记下第{n}号船的灯光，他说：“第{n}号船回来了。”\n"
            ));
        }
    }
    text
}

fn cache_entries(dir: &Path) -> usize {
    tingshu::synth::cache::Cache::new(dir).len()
}

/// A scenario building [`book`]`(chapters, paragraphs)` through the openai
/// backend on `server`, `extra` lines added.
fn book_scenario(server: TtsServer, extra: &str, chapters: usize, paragraphs: usize) -> Scenario {
    scenario()
        .server(server)
        .voices_toml(&voices(&openai(extra)))
        .book(&book(chapters, paragraphs))
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_build_resumes_without_repeating_requests() {
    let server = TtsServer::scripted(
        vec![],
        Reply::Audio,
        Format::StreamedWav,
        Duration::from_millis(120),
    );
    let s = book_scenario(server, "max_in_flight = 1", 2, 6);
    let server = s.tts_server();
    let args = [
        "build",
        "book.txt",
        "--voices",
        "voices.toml",
        "--cache",
        "cache",
    ];
    let mut child = tokio::process::Command::from(s.tingshu(&args).command())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.count() < 8 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child.kill().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let first = server.count();
    let cached = cache_entries(&s.path("cache"));
    assert!(cached >= 6 && cached <= first, "{cached} cached of {first}");

    let run = s.run_async(&args).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let total = cache_entries(&s.path("cache"));
    // 2 chapters × 6 paragraphs × (narration + dialogue), all different.
    assert_eq!(total, 24);
    assert_eq!(server.count() - first, total - cached);

    let again = s.run_async(&args).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(
        server.count() - first,
        total - cached,
        "a full rerun sends nothing"
    );
    assert!(
        again
            .stderr
            .contains("0 requests sent, 24 chunks from the cache"),
        "{}",
        again.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn edited_paragraph_resynthesizes_only_its_segments() {
    let s = book_scenario(streaming(vec![], Reply::Audio), "max_in_flight = 4", 1, 5);
    let server = s.tts_server();
    let run = s.run_async(BUILD).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.count(), 10);
    assert_eq!(cache_entries(&s.path("output/.cache")), 10);
    s.write(
        "book.txt",
        &s.read("book.txt").replacen(
            "他说：“第一三号船回来了。”",
            "他说：“第一三号船终于回来了。”",
            1,
        ),
    );
    let run = s.run_async(BUILD).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.count(), 11);
    assert!(server.bodies()[10].contains("第一三号船终于回来了。"));
}

#[tokio::test(flavor = "multi_thread")]
async fn espeak_narration_with_openai_dialogue_in_the_manifest() {
    let s = scenario()
        .server(streaming(vec![], Reply::Audio))
        .voices_toml(&espeak_narrated_voices(&openai("max_in_flight = 4")))
        .book(&book(2, 3));
    let run = s.run_async(BUILD).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let manifest: serde_json::Value =
        serde_json::from_str(&s.read("output/book/manifest.json")).unwrap();
    let chapters = manifest["chapters"].as_array().unwrap();
    assert_eq!(chapters.len(), 2);
    let mut seen = 0;
    for chapter in chapters {
        for segment in chapter["segments"].as_array().unwrap() {
            let expected = match segment["kind"].as_str().unwrap() {
                "dialogue" => "hero",
                _ => "narrator",
            };
            assert_eq!(segment["voice"], expected, "{segment}");
            seen += 1;
        }
    }
    assert_eq!(seen, 12);
    // Only the dialogue went to the server.
    let bodies = s.tts_server().bodies();
    assert_eq!(bodies.len(), 6);
    assert!(
        bodies.iter().all(|b| b.contains("号船回来了。")),
        "{bodies:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn one_failed_segment_fails_only_its_chapter() {
    // The 8th request is refused for good; chapter 1 has 6 chunks.
    let mut script = vec![Reply::Audio; 7];
    script.push(Reply::Status(400, None));
    let s = book_scenario(streaming(script, Reply::Audio), "max_in_flight = 1", 2, 3);
    let run = s.run_async(BUILD).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(s.tts_server().count(), 12);
    assert!(
        run.stderr.contains("1 of 2 chapters rendered"),
        "{}",
        run.stderr
    );
    // Which of chapter 2's chunks is the 8th request depends on how its
    // concurrent chunks reach the one free slot (segment 2 on a quiet
    // machine, 3 seen under load): the chapter is what counts.
    assert!(
        run.stderr
            .contains("failed: chapter 2 (第二章 第二夜): segment "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("backend server: HTTP 400"),
        "{}",
        run.stderr
    );
    // The rest of chapter 2 is cached: a rerun asks only for the failed chunk.
    let run = s.run_async(BUILD).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(s.tts_server().count(), 13);
}

/// The `input` of every OpenAI request so far, in arrival order.
fn openai_inputs(server: &TtsServer) -> Vec<String> {
    server
        .bodies()
        .iter()
        .map(|b| {
            serde_json::from_str::<serde_json::Value>(b).unwrap()["input"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn traditional_text_goes_as_written_unless_the_voice_asks_for_simplified() {
    let voices = format!(
        "[backends.server]\n{}\n[voices.tw]\nbackend = \"server\"\nvoice = \"a\"\n[voices.cn]\nbackend = \"server\"\nvoice = \"b\"\nsimplified = true\n[casting]\nnarrator = \"tw\"\ndialogue = \"cn\"\n",
        openai("")
    );
    let s = scenario()
        .server(streaming(vec![], Reply::Audio))
        .voices_toml(&voices);
    let run = s
        .run_async(&[
            "preview",
            "他們說：「這些傢伙還聰明！」",
            "--voices",
            "voices.toml",
            "-o",
            "p.wav",
        ])
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let inputs = openai_inputs(s.tts_server());
    assert!(inputs.iter().any(|t| t.starts_with("他們說")), "{inputs:?}");
    assert!(
        inputs.iter().any(|t| t.contains("这些家伙还聪明")),
        "{inputs:?}"
    );
}

/// The three network backends, configured against a fake server.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Openai,
    Http,
    Azure,
}

fn backend_toml(kind: Kind, extra: &str) -> String {
    match kind {
        Kind::Openai => openai(extra),
        Kind::Http => format!(
            "type = \"http\"\nmethod = \"POST\"\nurl = \"{{server}}/tts\"\njson = {{ text = \"{{text}}\", voice = \"{{voice}}\" }}\n{extra}"
        ),
        Kind::Azure => format!(
            "type = \"azure\"\nendpoint = \"{{server}}/cognitiveservices/v1\"\napi_key_env = \"TEST_AZURE_KEY\"\n{extra}"
        ),
    }
}

/// One fault scenario: what the server does, and what must come of it.
struct Fault {
    name: &'static str,
    script: Vec<Reply>,
    default: Reply,
    format: Format,
    extra: &'static str,
    exit: i32,
    attempts: usize,
    stderr: &'static str,
}

fn faults() -> Vec<Fault> {
    vec![
        Fault {
            name: "429 with Retry-After",
            script: vec![Reply::Status(429, Some(1))],
            default: Reply::Audio,
            format: Format::StreamedWav,
            extra: "retries = 3",
            exit: 0,
            attempts: 2,
            stderr: "HTTP 429",
        },
        Fault {
            name: "500 then success",
            script: vec![Reply::Status(500, None)],
            default: Reply::Audio,
            format: Format::StreamedWav,
            extra: "retries = 3",
            exit: 0,
            attempts: 2,
            stderr: "HTTP 500",
        },
        Fault {
            name: "timeout",
            script: vec![],
            default: Reply::Slow(Duration::from_secs(2)),
            format: Format::StreamedWav,
            extra: "retries = 1\ntimeout_s = 0.3",
            exit: 1,
            attempts: 2,
            stderr: "no answer within 0.3s",
        },
        Fault {
            name: "non-audio body",
            script: vec![],
            default: Reply::NotAudio,
            format: Format::StreamedWav,
            extra: "retries = 2",
            exit: 1,
            attempts: 3,
            stderr: "bad audio: not audio",
        },
        Fault {
            name: "truncated MP3",
            script: vec![Reply::TruncatedMp3],
            default: Reply::Audio,
            format: Format::Mp3,
            extra: "retries = 2",
            exit: 0,
            attempts: 2,
            stderr: "bad audio",
        },
        Fault {
            name: "401",
            script: vec![],
            default: Reply::Status(401, None),
            format: Format::StreamedWav,
            extra: "retries = 4",
            exit: 1,
            attempts: 1,
            stderr: "backend server: HTTP 401",
        },
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn every_fault_against_every_network_backend() {
    let mut cases = Vec::new();
    for kind in [Kind::Openai, Kind::Http, Kind::Azure] {
        for fault in faults() {
            cases.push(async move {
                let server =
                    TtsServer::scripted(fault.script.clone(), fault.default.clone(), fault.format, Duration::ZERO);
                let (run, s) = preview_text(server, &backend_toml(kind, fault.extra)).await;
                let server = s.tts_server();
                let what = format!("{kind:?} / {}", fault.name);
                assert_eq!(run.code, fault.exit, "{what}: {}", run.stderr);
                assert_eq!(server.count(), fault.attempts, "{what}: {}", run.stderr);
                assert!(run.stderr.contains(fault.stderr), "{what}: {}", run.stderr);
                assert_eq!(s.path("out.wav").is_file(), fault.exit == 0, "{what}");
                if fault.exit != 0 {
                    assert!(
                        run.stderr.contains("failed: segment 1 (\"今天天气很好，我们出去走走吧。\"): backend server: "),
                        "{what}: {}",
                        run.stderr
                    );
                }
                if fault.name.starts_with("429") {
                    let times = server.times();
                    assert!(times[1] - times[0] >= Duration::from_millis(990), "{what}");
                }
            });
        }
    }
    futures::future::join_all(cases).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn long_segments_are_split_at_punctuation_without_losing_text() {
    let paragraph = "夜色渐深，海面上起了一层薄雾，远处的渔火一盏接一盏地熄灭了；老人把外套裹紧，沿着湿漉漉的石阶慢慢往上走，一边走一边数着台阶，数到一半又忘了，只好从头再数。";
    let s = scenario()
        .server(streaming(vec![], Reply::Audio))
        .voices_toml(&voices(&openai("max_chars = 20\nmax_in_flight = 3")));
    let run = preview(&s, paragraph).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let inputs = openai_inputs(s.tts_server());
    assert!(inputs.len() >= 4, "{inputs:?}");
    assert!(inputs.iter().all(|t| t.chars().count() <= 20), "{inputs:?}");
    // Every piece ends at punctuation, and together they are the paragraph.
    assert!(
        inputs.iter().all(|t| t.ends_with(['，', '；', '。'])),
        "{inputs:?}"
    );
    let mut sorted = inputs.clone();
    sorted.sort_by_key(|t| paragraph.find(t.as_str()).unwrap_or(usize::MAX));
    assert_eq!(sorted.concat(), paragraph);
}

#[tokio::test(flavor = "multi_thread")]
async fn max_in_flight_and_rate_limit_hold_at_the_server() {
    let server = TtsServer::scripted(
        vec![],
        Reply::Audio,
        Format::StreamedWav,
        Duration::from_millis(80),
    );
    let s = book_scenario(server, "max_in_flight = 3", 2, 6);
    let run = s.run_async(BUILD).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(s.tts_server().count(), 24);
    assert_eq!(s.tts_server().peak_in_flight(), 3, "peak requests at once");

    let server = streaming(vec![], Reply::Audio);
    let s = book_scenario(server, "max_in_flight = 8\nrate_limit = \"5/1s\"", 1, 4);
    let run = s.run_async(BUILD).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let times = s.tts_server().times();
    assert_eq!(times.len(), 8);
    // No window of one second holds more than 5 request starts.
    for i in 5..times.len() {
        assert!(
            times[i] - times[i - 5] >= Duration::from_millis(990),
            "{times:?}"
        );
    }
}

/// A shipped example voices file pointed at a fake server answering in
/// `format`, previewing `say`.
async fn example_preview(file: &str, real_url: &str, format: Format, say: &str) -> (Run, Scenario) {
    let voices = std::fs::read_to_string(paths::repo().join("voices/examples").join(file))
        .unwrap()
        .replace(real_url, "{server}")
        .replace("\"TTS_API_KEY\"", "\"TEST_TTS_KEY\"");
    let s = scenario()
        .server(TtsServer::answering(format))
        .voices_toml(&voices);
    let run = s
        .run_async(&["preview", say, "--voices", "voices.toml", "-o", "out.wav"])
        .await;
    (run, s)
}

#[tokio::test(flavor = "multi_thread")]
async fn shipped_gpt_sovits_example_speaks_api_v2() {
    let (run, s) = example_preview(
        "gpt-sovits.toml",
        "http://127.0.0.1:9880",
        Format::StreamedWav,
        TEXT,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = s.tts_server().recorded();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].headers[header::CONTENT_TYPE],
        "application/json"
    );
    let body: serde_json::Value = serde_json::from_str(&requests[0].body).unwrap();
    assert_eq!(body["text"], TEXT);
    assert_eq!(body["text_lang"], "zh");
    assert_eq!(body["ref_audio_path"], "refs/narrator.wav");
    assert_eq!(body["speed_factor"], 1.0);
    assert_eq!(body["media_type"], "wav");
    assert_eq!(body["streaming_mode"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn shipped_cosyvoice_example_reads_raw_pcm() {
    let (run, s) = example_preview(
        "cosyvoice.toml",
        "http://127.0.0.1:50000",
        Format::Pcm,
        TEXT,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = s.tts_server().recorded();
    assert_eq!(requests.len(), 1);
    let form: Vec<(String, String)> = form_urlencoded::parse(requests[0].body.as_bytes())
        .into_owned()
        .collect();
    assert_eq!(
        form,
        [
            ("spk_id".to_owned(), "中文男".to_owned()),
            ("tts_text".to_owned(), TEXT.to_owned())
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn shipped_openai_example_casts_espeak_and_the_server() {
    let (run, s) = example_preview(
        "openai.toml",
        "http://127.0.0.1:8880",
        Format::StreamedWav,
        "他说：“今天天气很好。”",
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "[narration → narrator] 他说：\n[dialogue → hero] “今天天气很好。”\n"
    );
    // Narration went to espeak; only the dialogue reached the server.
    let bodies = s.tts_server().bodies();
    assert_eq!(bodies.len(), 1);
    let body: serde_json::Value = serde_json::from_str(&bodies[0]).unwrap();
    assert_eq!(body["voice"], "zm_yunxi");
    assert_eq!(body["model"], "kokoro");
}
