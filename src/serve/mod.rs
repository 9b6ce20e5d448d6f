//! `tingshu serve`: one HTTP server for a library folder (what `build` and
//! `batch` write) and for speech.
//!
//! | request | answer |
//! |---|---|
//! | `GET /<book>/<file>` | a library file, with ranges (206), `ETag`, `Accept-Ranges` |
//! | `GET /<book>/feed.xml` | the book's podcast feed, with this server's address |
//! | `GET /feeds.opml` | every book's feed |
//! | `POST /v1/audio/speech` | OpenAI: `{"model", "input", "voice", "response_format", "speed"}` |
//! | `GET`/`POST /legado/speak` | Legado: `text`, `speed`, `voice`, `format` (query, form or JSON) |
//! | `GET /legado` | the httpTTS sources to import into Legado, one per voice |
//!
//! [`files`] serves the library, [`speech`] speaks, [`audio`] streams.
//! With a token every request needs `Authorization: Bearer TOKEN` or
//! `?token=TOKEN`; on a loopback address without one, only requests whose
//! `Host` is a loopback name are answered (DNS rebinding).

pub mod audio;
pub mod files;
pub mod speech;

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tokio::sync::OwnedSemaphorePermit;

pub use crate::admission::{HostRule, LOOPBACK_HOSTS, host_name};
use crate::admission::{Slots, bearer_is, query_token_is};
use crate::session::{BookInput, CacheSpec, Listeners, RenderSession, SessionError, SessionSpec};

/// What the server serves and how much it takes on, resolved once.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The library: what `build --out` / a job's `out` names.
    pub library: PathBuf,
    pub voices: Option<PathBuf>,
    pub lexicon: Option<PathBuf>,
    /// The synthesis cache (default LIBRARY/.cache).
    pub cache: PathBuf,
    /// Every request must carry it when set.
    pub token: Option<String>,
    /// What the `Host` header may name (DNS rebinding).
    pub hosts: HostRule,
    /// Largest request body (bytes); 413 above.
    pub max_body: usize,
    /// Longest text spoken at once (characters); 413 above.
    pub max_chars: usize,
    /// Syntheses at once; more wait in the queue.
    pub max_syntheses: usize,
    /// Syntheses waiting; more get 503 with Retry-After.
    pub max_queued: usize,
    /// The ffmpeg program for MP3 and Opus speech.
    pub ffmpeg: PathBuf,
}

/// A running server's shared state.
pub struct Server {
    pub options: ServeOptions,
    /// Backends, client (with the cache) and lexicon, built once: engine
    /// workers stay warm and a repeated passage comes from the cache.
    pub session: RenderSession,
    slots: Slots,
}

impl Server {
    /// Reads the voices and lexicon, opens the cache and builds the
    /// renderer; fails on any bad one.
    pub fn open(
        options: ServeOptions,
        worker_program: Option<PathBuf>,
    ) -> Result<Server, SessionError> {
        let session = RenderSession::open(&SessionSpec {
            book: BookInput::Text {
                text: "听书。".to_owned(),
                name: "serve".to_owned(),
            },
            split: crate::text::SplitOptions::default(),
            voices: options.voices.clone(),
            cast: None,
            lexicon: options.lexicon.clone(),
            overrides: None,
            cache: Some(CacheSpec {
                location: options.cache.clone(),
                write_behind: true,
            }),
            worker_program,
            listeners: Listeners::Some,
        })?;
        Ok(Server {
            slots: Slots::new(options.max_syntheses, options.max_queued),
            options,
            session,
        })
    }

    /// Starts the engines of every voice, so the first request does not
    /// wait for them.
    pub fn warm_up(&self) {
        let config = &self.session.renderer.config;
        let mut needed: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
        for voice in config.voices.values() {
            needed
                .entry(voice.backend.as_str())
                .or_default()
                .push(voice.voice.clone());
        }
        for (backend, voices) in needed {
            if let Some(b) = self.session.renderer.backends.get(backend) {
                b.warm_up(&voices);
            }
        }
    }

    /// Writes the cache entries still queued.
    pub fn flush(&self) {
        self.session.flush();
    }

    /// A synthesis slot: at once when one is free, after a wait when the
    /// queue has room, else `None` (answer 503).
    async fn slot(&self) -> Option<OwnedSemaphorePermit> {
        self.slots.take().await
    }
}

/// An error answer: a status and a one-line message (JSON, as OpenAI's).
#[derive(Debug)]
pub struct ServeError {
    status: StatusCode,
    message: String,
}

impl ServeError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ServeError {
        ServeError {
            status,
            message: message.into(),
        }
    }

    pub fn bad(message: impl Into<String>) -> ServeError {
        ServeError::new(StatusCode::BAD_REQUEST, message)
    }
}

impl IntoResponse for ServeError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            axum::Json(serde_json::json!({"error": {"message": self.message}})),
        )
            .into_response();
        let headers = response.headers_mut();
        match self.status {
            StatusCode::SERVICE_UNAVAILABLE => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
            }
            StatusCode::UNAUTHORIZED => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"tingshu\""),
                );
            }
            _ => {}
        }
        response
    }
}

type Shared = State<Arc<Server>>;

/// Every route, behind the host and token checks and the body limit.
pub fn router(server: Arc<Server>) -> Router {
    Router::new()
        .route("/v1/audio/speech", axum::routing::post(speech::openai))
        .route("/v1/models", axum::routing::get(speech::models))
        .route("/v1/audio/voices", axum::routing::get(speech::voices))
        .route("/legado", axum::routing::get(speech::legado_sources))
        .route(
            "/legado/speak",
            axum::routing::get(speech::legado_get).post(speech::legado_post),
        )
        .route("/feeds.opml", axum::routing::get(files::opml))
        .fallback(files::serve)
        .layer(DefaultBodyLimit::max(server.options.max_body))
        .layer(middleware::from_fn_with_state(Arc::clone(&server), guard))
        .with_state(server)
}

/// Refuses a host name that is not this server's (DNS rebinding: off
/// loopback, IP addresses, localhost and `--allow-host` names) and
/// requests without the token when there is one.
async fn guard(State(server): Shared, request: Request, next: Next) -> Response {
    let options = &server.options;
    let host = host_name(request.headers());
    if !options.hosts.accepts(&host) {
        return ServeError::new(
            StatusCode::FORBIDDEN,
            format!("Host {host:?} is not this server's address"),
        )
        .into_response();
    }
    if let Some(token) = &options.token
        && !carries_token(&request, token)
    {
        return ServeError::new(
            StatusCode::UNAUTHORIZED,
            "this server needs its token: Authorization: Bearer TOKEN, or ?token=TOKEN",
        )
        .into_response();
    }
    next.run(request).await
}

/// Whether the request has `Authorization: Bearer TOKEN` or `token=TOKEN`
/// in its query.
fn carries_token(request: &Request, token: &str) -> bool {
    bearer_is(request.headers(), token) || query_token_is(request.uri(), token)
}

/// The base URL a client reached this server at: `http://` + its `Host`.
pub fn base_url(headers: &HeaderMap) -> String {
    let host = host_name(headers);
    let host = if host.is_empty()
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
    {
        "127.0.0.1".to_owned()
    } else {
        host
    };
    format!("http://{host}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_come_from_a_plain_host() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("192.168.1.5:8080"));
        assert_eq!(base_url(&headers), "http://192.168.1.5:8080");
        headers.insert(header::HOST, HeaderValue::from_static("a\"b"));
        assert_eq!(base_url(&headers), "http://127.0.0.1");
    }
}
