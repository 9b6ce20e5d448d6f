//! The fake text-to-speech server, on 127.0.0.1 (port 0), for the network
//! backends (`openai`, `http`, `azure`) and every test that needs a backend
//! it can count.
//!
//! It answers any path and any request shape the tests send (OpenAI and
//! JSON-template bodies, forms, SSML) with audio for the text it finds in
//! the body, in one of the formats real servers use, after an optional
//! delay, and records every request (text, voice, body, headers, time) and
//! the most requests it answered at once. Faults are scripted: replies
//! answered in order, then a default reply forever; or the next N requests
//! answered with HTTP 503 (`Retry-After: 0`), a transient failure. It runs on
//! a Tokio runtime of its own, so plain `#[test]` functions can use it as
//! well as async ones.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;

use super::{paths, wav};

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Audio for the text, in the server's format.
    Audio,
    /// An error status, optionally with `Retry-After` seconds; the body
    /// echoes the request's credentials (a careless server).
    Status(u16, Option<u32>),
    /// Answer only after this long.
    Slow(Duration),
    /// HTTP 200 with a JSON error instead of audio.
    NotAudio,
    /// The first tenth of an MP3 file.
    TruncatedMp3,
}

/// Answer format of the server.
#[derive(Debug, Clone, Copy)]
pub enum Format {
    /// A WAV of [`wav::tone`] for the text and the request's `voice`.
    Tone,
    /// A streamed WAV with placeholder sizes (as OpenAI sends it) of
    /// [`wav::long_tone_wav`].
    StreamedWav,
    /// JSON `{"data": {"audio": "<base64 wav>"}}`.
    JsonBase64,
    /// MP3 bytes (a 2 s tone, whatever the text).
    Mp3,
    /// Raw 16-bit PCM at 22050 Hz (CosyVoice's FastAPI server).
    Pcm,
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The text to speak found in the body.
    pub text: String,
    /// The JSON body's `voice`, or empty.
    pub voice: String,
    pub body: String,
    pub headers: HeaderMap,
    pub at: Instant,
}

struct Shared {
    script: Mutex<Vec<Reply>>,
    default: Reply,
    format: Format,
    delay: Duration,
    /// Requests in arrival order.
    requests: Mutex<Vec<Recorded>>,
    /// Requests being answered now, and the most at any time.
    in_flight: Mutex<(usize, usize)>,
    /// Requests still to answer with HTTP 503.
    failures: AtomicUsize,
}

/// A running fake TTS server; stopped when dropped.
pub struct TtsServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl TtsServer {
    /// A server that answers every request with a [`Format::Tone`] after
    /// `delay`.
    pub fn start(delay: Duration) -> TtsServer {
        TtsServer::scripted(Vec::new(), Reply::Audio, Format::Tone, delay)
    }

    /// A server that answers every request at once with audio in `format`.
    pub fn answering(format: Format) -> TtsServer {
        TtsServer::scripted(Vec::new(), Reply::Audio, format, Duration::ZERO)
    }

    /// A server that answers the `script` replies in order, then `default`
    /// forever, in `format`, each after `delay`.
    pub fn scripted(
        script: Vec<Reply>,
        default: Reply,
        format: Format,
        delay: Duration,
    ) -> TtsServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into_iter().rev().collect()),
            default,
            format,
            delay,
            requests: Mutex::new(Vec::new()),
            in_flight: Mutex::new((0, 0)),
            failures: AtomicUsize::new(0),
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        // Bound here, not on the runtime: `block_on` cannot run inside an
        // async test.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await.unwrap()
        });
        TtsServer {
            addr,
            shared,
            runtime: Some(runtime),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far, in arrival order.
    pub fn recorded(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Requests so far.
    pub fn count(&self) -> usize {
        self.shared.requests.lock().unwrap().len()
    }

    /// Every text asked for so far, in arrival order.
    pub fn texts(&self) -> Vec<String> {
        self.recorded().into_iter().map(|r| r.text).collect()
    }

    /// Every (text, voice) asked for so far, in arrival order.
    pub fn requests(&self) -> Vec<(String, String)> {
        self.recorded()
            .into_iter()
            .map(|r| (r.text, r.voice))
            .collect()
    }

    /// Every request body so far, in arrival order.
    pub fn bodies(&self) -> Vec<String> {
        self.recorded().into_iter().map(|r| r.body).collect()
    }

    /// When each request arrived.
    pub fn times(&self) -> Vec<Instant> {
        self.recorded().into_iter().map(|r| r.at).collect()
    }

    /// The most requests answered at once so far.
    pub fn peak_in_flight(&self) -> usize {
        self.shared.in_flight.lock().unwrap().1
    }

    /// Answers the next `n` requests with HTTP 503 (Retry-After: 0) in
    /// place of their replies; 0 stops that.
    pub fn fail_next(&self, n: usize) {
        self.shared.failures.store(n, Ordering::SeqCst);
    }

    /// A voices file whose narrator and dialogue voices both use this server
    /// through the `http` backend, `max_chars` characters per request at most
    /// and `max_in_flight` requests at a time.
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

impl Drop for TtsServer {
    fn drop(&mut self) {
        // Without waiting: the server may be dropped inside an async test.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

async fn handle(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let body = String::from_utf8_lossy(&body).into_owned();
    let text = spoken_text(&body);
    let voice = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|json| json.get("voice")?.as_str().map(str::to_owned))
        .unwrap_or_default();
    shared.requests.lock().unwrap().push(Recorded {
        text: text.clone(),
        voice: voice.clone(),
        body,
        headers: headers.clone(),
        at: Instant::now(),
    });
    let busy = shared
        .failures
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    let reply = if busy {
        None
    } else {
        Some(
            shared
                .script
                .lock()
                .unwrap()
                .pop()
                .unwrap_or_else(|| shared.default.clone()),
        )
    };
    {
        let mut in_flight = shared.in_flight.lock().unwrap();
        in_flight.0 += 1;
        in_flight.1 = in_flight.1.max(in_flight.0);
    }
    tokio::time::sleep(shared.delay).await;
    shared.in_flight.lock().unwrap().0 -= 1;
    let Some(reply) = reply else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "0")],
            "busy",
        )
            .into_response();
    };
    match reply {
        Reply::Audio => audio(shared.format, &text, &voice),
        Reply::Status(code, retry_after) => {
            let echo = format!(
                "denied for {:?} {:?}",
                headers.get(header::AUTHORIZATION),
                headers.get("ocp-apim-subscription-key")
            );
            let mut response = (StatusCode::from_u16(code).unwrap(), echo).into_response();
            if let Some(secs) = retry_after {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, secs.to_string().parse().unwrap());
            }
            response
        }
        Reply::Slow(d) => {
            tokio::time::sleep(d).await;
            audio(shared.format, &text, &voice)
        }
        Reply::NotAudio => (
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"error": {"message": "model is warming up"}}"#,
        )
            .into_response(),
        Reply::TruncatedMp3 => {
            let mp3 = mp3_bytes();
            mp3[..mp3.len() / 10].to_vec().into_response()
        }
    }
}

/// The text to speak in any of the request shapes the tests send.
fn spoken_text(body: &str) -> String {
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(body) {
        for key in ["input", "text"] {
            if let Some(t) = json.get(key).and_then(|v| v.as_str()) {
                return t.to_owned();
            }
        }
    }
    if let Some((_, text)) = form_urlencoded::parse(body.as_bytes()).find(|(k, _)| k == "tts_text")
    {
        return text.into_owned();
    }
    // SSML: the text between tags.
    let mut text = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

fn mp3_bytes() -> Vec<u8> {
    std::fs::read(paths::fixture("tone.mp3")).unwrap()
}

fn audio(format: Format, text: &str, voice: &str) -> Response {
    match format {
        Format::Tone => (
            [(header::CONTENT_TYPE, "audio/wav")],
            wav::tone_wav(text, voice),
        )
            .into_response(),
        Format::StreamedWav => {
            let mut wav = wav::long_tone_wav(text);
            wav[4..8].copy_from_slice(&0xFFFF_FFFFu32.to_le_bytes());
            wav[40..44].copy_from_slice(&0xFFFF_FFFFu32.to_le_bytes());
            ([(header::CONTENT_TYPE, "audio/wav")], wav).into_response()
        }
        Format::JsonBase64 => {
            let encoded =
                base64::engine::general_purpose::STANDARD.encode(wav::long_tone_wav(text));
            axum::Json(serde_json::json!({"code": 0, "data": {"audio": encoded}})).into_response()
        }
        Format::Mp3 => ([(header::CONTENT_TYPE, "audio/mpeg")], mp3_bytes()).into_response(),
        Format::Pcm => {
            let n = text.chars().count().max(1) * 4410;
            let pcm: Vec<u8> = (0..n)
                .flat_map(|i| (((i as f32 * 0.07).sin() * 9000.0) as i16).to_le_bytes())
                .collect();
            pcm.into_response()
        }
    }
}
