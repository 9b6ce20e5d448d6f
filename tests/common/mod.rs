//! Helpers shared by integration tests: a deterministic text-to-speech
//! server on 127.0.0.1 (port 0) for the `http` backend.
//!
//! The server answers `POST /tts` with JSON `{"text": …, "voice": …}` with a
//! 16-bit WAV that depends only on the text and the voice (a tone whose pitch
//! and length follow them), after an optional delay, and records every text it
//! was asked for. It runs on its own Tokio runtime, so plain `#[test]`
//! functions can use it. It can fail its first requests with HTTP 503 (a
//! transient failure) to exercise retries.

use std::io::Cursor;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Json, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use tingshu::audio::AudioClip;

/// Sample rate of the server's answers.
pub const SERVER_RATE: u32 = 16_000;

struct Shared {
    delay: Duration,
    /// Texts asked for, in the order the requests arrived.
    texts: Mutex<Vec<String>>,
    /// (text, voice) asked for, in arrival order.
    requests: Mutex<Vec<(String, String)>>,
    /// Requests still to answer with HTTP 503.
    failures: AtomicUsize,
}

/// A running fake TTS server.
pub struct TtsServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _runtime: tokio::runtime::Runtime,
}

#[derive(serde::Deserialize)]
struct TtsRequest {
    text: String,
    #[serde(default)]
    voice: String,
}

async fn speak(State(shared): State<Arc<Shared>>, Json(req): Json<TtsRequest>) -> Response {
    shared.texts.lock().unwrap().push(req.text.clone());
    shared
        .requests
        .lock()
        .unwrap()
        .push((req.text.clone(), req.voice.clone()));
    tokio::time::sleep(shared.delay).await;
    let fail = shared
        .failures
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if fail {
        return (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "0")],
            "busy",
        )
            .into_response();
    }
    (
        [(header::CONTENT_TYPE, "audio/wav")],
        tone_wav(&req.text, &req.voice),
    )
        .into_response()
}

/// The answer for `text` in `voice`: 100 ms per character of a tone whose
/// pitch depends on both, so every text sounds different and the same text
/// always gives the same bytes.
pub fn tone_wav(text: &str, voice: &str) -> Vec<u8> {
    let seed: u32 = text
        .chars()
        .chain(voice.chars())
        .fold(0u32, |h, c| h.wrapping_mul(31).wrapping_add(u32::from(c)));
    let freq = 180.0 + f64::from(seed % 400);
    let n = text.chars().count().max(1) * (SERVER_RATE as usize / 10);
    let samples = (0..n)
        .map(|i| {
            let t = i as f64 / f64::from(SERVER_RATE);
            (0.3 * (2.0 * std::f64::consts::PI * freq * t).sin()) as f32
        })
        .collect();
    let mut out = Cursor::new(Vec::new());
    tingshu::audio::wav::write_wav(&AudioClip::new(samples, SERVER_RATE), &mut out).unwrap();
    out.into_inner()
}

impl TtsServer {
    /// Starts a server that waits `delay` before each answer.
    pub fn start(delay: Duration) -> TtsServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let shared = Arc::new(Shared {
            delay,
            texts: Mutex::new(Vec::new()),
            requests: Mutex::new(Vec::new()),
            failures: AtomicUsize::new(0),
        });
        let app = Router::new()
            .route("/tts", axum::routing::post(speak))
            .with_state(Arc::clone(&shared));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(async move { axum::serve(listener, app).await.unwrap() });
        TtsServer {
            addr,
            shared,
            _runtime: runtime,
        }
    }

    /// Every text asked for so far, in arrival order.
    #[allow(dead_code)]
    pub fn texts(&self) -> Vec<String> {
        self.shared.texts.lock().unwrap().clone()
    }

    /// Every (text, voice) asked for so far, in arrival order.
    #[allow(dead_code)]
    pub fn requests(&self) -> Vec<(String, String)> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Answers the next `n` requests with HTTP 503 (Retry-After: 0).
    #[allow(dead_code)]
    pub fn fail_next(&self, n: usize) {
        self.shared.failures.store(n, Ordering::SeqCst);
    }

    /// The server's address, `127.0.0.1:PORT`.
    #[allow(dead_code)]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn count(&self) -> usize {
        self.shared.texts.lock().unwrap().len()
    }

    /// A voices file whose narrator and dialogue voices both use this server
    /// through the `http` backend, `max_chars` characters per request at most
    /// and `max_in_flight` requests at a time.
    #[allow(dead_code)]
    pub fn voices_toml(&self, max_chars: usize, max_in_flight: usize) -> String {
        format!(
            r#"[backends.server]
type = "http"
method = "POST"
url = "http://{addr}/tts"
json = {{ text = "{{text}}", voice = "{{voice}}" }}
max_chars = {max_chars}
max_in_flight = {max_in_flight}
retries = 0

[voices.narrator]
backend = "server"
voice = "narrator"

[voices.hero]
backend = "server"
voice = "hero"

[casting]
narrator = "narrator"
dialogue = "hero"

[mix]
sample_rate = 22050
"#,
            addr = self.addr
        )
    }
}
