//! A stand-in TTS server for benchmarks: OpenAI-compatible
//! `POST /v1/audio/speech` answering after a fixed latency with a tone of
//! 0.15 s per character (16 kHz WAV); `GET /requests` tells how many speech
//! requests it has served, `GET /timeline` when the first and the last
//! arrived (Unix seconds).
//!
//! `cargo run --release --example fake_tts_server -- [LATENCY_MS] [PORT]`
//! prints `listening on 127.0.0.1:PORT` once ready.

use std::io::Cursor;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use tingshu::audio::AudioClip;

struct Fake {
    latency: Duration,
    requests: AtomicUsize,
    arrivals: Mutex<Vec<f64>>,
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

async fn speech(State(fake): State<Arc<Fake>>, body: String) -> impl IntoResponse {
    fake.requests.fetch_add(1, Ordering::SeqCst);
    fake.arrivals
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(unix_now());
    tokio::time::sleep(fake.latency).await;
    let text = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["input"].as_str().map(str::to_owned))
        .unwrap_or_default();
    let n = text.chars().count().max(1) * 2400;
    let samples = (0..n).map(|i| (i as f32 * 0.05).sin() * 0.3).collect();
    let mut wav = Cursor::new(Vec::new());
    tingshu::audio::wav::write_wav(&AudioClip::new(samples, 16000), &mut wav)
        .expect("writing to memory");
    ([(header::CONTENT_TYPE, "audio/wav")], wav.into_inner())
}

async fn requests(State(fake): State<Arc<Fake>>) -> String {
    fake.requests.load(Ordering::SeqCst).to_string()
}

async fn timeline(State(fake): State<Arc<Fake>>) -> String {
    let arrivals = fake.arrivals.lock().unwrap_or_else(|e| e.into_inner());
    let first = arrivals.iter().copied().fold(f64::INFINITY, f64::min);
    let last = arrivals.iter().copied().fold(0.0, f64::max);
    format!("{first:.3} {last:.3}\n")
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let latency_ms: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let port: u16 = args.next().and_then(|a| a.parse().ok()).unwrap_or(0);
    let fake = Arc::new(Fake {
        latency: Duration::from_millis(latency_ms),
        requests: AtomicUsize::new(0),
        arrivals: Mutex::new(Vec::new()),
    });
    let app = Router::new()
        .route("/v1/audio/speech", post(speech))
        .route("/requests", get(requests))
        .route("/timeline", get(timeline))
        .with_state(fake);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app).await
}
