//! The studio's HTTP API (JSON), used by the page and documented in the
//! user guide (docs/guide.md):
//!
//! | request | answer |
//! |---|---|
//! | `GET /api/book` | title, chapters, speakers, voices, casting, files, renders |
//! | `GET /api/chapters/{n}` | chapter `n` (1-based): paragraphs of segments with kind, speaker and voice |
//! | `POST /api/preview` | `{"text": …}` or `{"chapter": n, "paragraphs": [a, b]}` (optional `"voice"`, `"stream": true`) → `audio/wav` |
//! | `GET`/`PUT /api/cast` | the cast; PUT `{"characters": […]}` or `{"toml": …}` |
//! | `GET`/`PUT /api/lexicon` | the lexicon; PUT `{"word", "pinyin"}`, `{"word", "say"}`, `{"word", "remove": true}` or `{"toml": …}` |
//! | `GET /api/pinyin?text=…` | the pinyin of a text with the lexicon |
//! | `POST /api/render` | `{"chapters": [n, …]}` → 202; progress on `/api/events` |
//! | `GET /api/events` | server-sent events (`render` progress) |
//! | `GET /api/renders/{n}` | the WAV rendered for chapter `n` |
//!
//! Every POST and PUT needs the `X-Tingshu-Token` header. On a
//! non-loopback bind every request needs the token: that header,
//! `Authorization: Bearer`, or the cookie the page gets when it is opened
//! with `?token=` (HttpOnly, SameSite=Strict). Previews and renders share
//! one bounded queue (503 with `Retry-After` when full). Errors are
//! `{"error": "…"}` with a 4xx or 5xx status.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;

use crate::admission::{bearer_is, cookie_is, header_is, host_name, host_port, query_token_is};
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::{Value, json};

use super::edit::{self, CharacterEdit, LexiconEdit};
use super::{
    LineError, MAX_BODY, MAX_PREVIEW_CHARS, RenderRefused, Studio, StudioError, TOKEN_HEADER, page,
};
use crate::config::VoicesConfig;
use crate::text::{Script, ScriptChapter, SegmentKind};

/// An error answer: a status and a one-line message.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }

    fn bad(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }
}

impl From<StudioError> for ApiError {
    fn from(e: StudioError) -> ApiError {
        let status = match e {
            StudioError::Write { .. } | StudioError::Read { .. } => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
            _ => StatusCode::BAD_REQUEST,
        };
        ApiError::new(status, crate::error::error_chain(&e))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response =
            (self.status, axum::Json(json!({"error": self.message}))).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
        }
        response
    }
}

/// The answer when the queue of previews and renders is full.
fn busy() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "the studio is busy with other previews and renders; try again shortly",
    )
}

/// The cookie that carries the token, per port (cookies are not).
fn cookie_name(host: &str) -> String {
    let port: String = host_port(host)
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    format!("tingshu-studio-{port}")
}

type ApiResult<T> = Result<T, ApiError>;
type Shared = State<Arc<Studio>>;

/// The page and the API, behind the host and token checks.
pub fn router(studio: Arc<Studio>) -> Router {
    Router::new()
        .route("/", get(page::index))
        .route("/studio.css", get(page::css))
        .route("/studio.js", get(page::js))
        .route("/api/book", get(book))
        .route("/api/chapters/{n}", get(chapter))
        .route("/api/preview", axum::routing::post(preview))
        .route("/api/cast", get(cast).put(put_cast))
        .route("/api/lexicon", get(lexicon).put(put_lexicon))
        .route("/api/pinyin", get(pinyin))
        .route("/api/render", axum::routing::post(render))
        .route(
            "/api/chapters/{n}/paragraphs/{p}",
            axum::routing::put(put_line),
        )
        .route("/api/events", get(events))
        .route("/api/renders/{n}", get(rendered))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "no such page") })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state(Arc::clone(&studio), guard))
        .with_state(studio)
}

/// Refuses requests for another host name (DNS rebinding), changes
/// without the token header and, on a non-loopback bind, any request
/// without the token; hands the page opened with `?token=` a cookie that
/// carries it; adds headers that keep the page to itself.
async fn guard(State(studio): Shared, request: Request, next: Next) -> Response {
    let options = studio.options();
    let host = host_name(request.headers());
    if !options.hosts.accepts(&host) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            format!("Host {host:?} is not this studio's address"),
        )
        .into_response();
    }
    let token = options.token.as_str();
    let headers = request.headers();
    let cookie = cookie_name(&host);
    let in_header = header_is(headers, TOKEN_HEADER, token);
    let page_with_token = request.method() == Method::GET
        && request.uri().path() == "/"
        && query_token_is(request.uri(), token);
    let carried = in_header
        || bearer_is(headers, token)
        || cookie_is(headers, &cookie, token)
        || page_with_token;
    if options.reads_need_token && !carried {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "this studio needs its token: open the address it printed (/?token=…) or send the X-Tingshu-Token header",
        )
        .into_response();
    }
    if !matches!(*request.method(), Method::GET | Method::HEAD) && !in_header {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "a change needs the X-Tingshu-Token header of this studio",
        )
        .into_response();
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    if page_with_token
        && let Ok(value) = HeaderValue::from_str(&format!(
            "{cookie}={token}; Path=/; HttpOnly; SameSite=Strict"
        ))
    {
        headers.insert(header::SET_COOKIE, value);
    }
    response
}

/// The body, or 413 for one over [`MAX_BODY`] and 400 for one unreadable.
fn body(body: Result<Bytes, BytesRejection>) -> ApiResult<Bytes> {
    body.map_err(|e| {
        let status = e.status();
        let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
            format!("request body over {MAX_BODY} bytes")
        } else {
            format!("request body: {}", e.body_text())
        };
        ApiError::new(status, message)
    })
}

fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> ApiResult<T> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::bad(format!("request body: {e}")))
}

fn kind_name(kind: SegmentKind) -> &'static str {
    match kind {
        SegmentKind::Narration => "narration",
        SegmentKind::Dialogue => "dialogue",
    }
}

/// How many dialogue segments each speaker of `script` has.
fn line_counts(script: &Script) -> BTreeMap<&str, usize> {
    let mut lines: BTreeMap<&str, usize> = BTreeMap::new();
    for s in script.chapters.iter().flat_map(|c| &c.segments) {
        if let Some(name) = s.speaker.as_deref() {
            *lines.entry(name).or_default() += 1;
        }
    }
    lines
}

/// Speakers: the cast's characters in order, then the others the script
/// names, most lines first; with their lines, gender and voice. Without a
/// cast file, a character found in the book has the gender guessed for it,
/// with how sure and why (`evidence`, as `split --suggest-cast` writes it).
fn speakers(studio: &Studio) -> Vec<Value> {
    let loaded = studio.loaded();
    let script = &loaded.session.book.script;
    let lines = line_counts(script);
    let config = &loaded.session.renderer.config;
    let found = |name: &str| {
        let d = script
            .discovered
            .as_ref()?
            .iter()
            .find(|d| d.character.name == name)?;
        Some((d.character.gender, d))
    };
    let entry = |name: &str, gender: &str, voice: Option<&str>, in_cast: bool| {
        let guess = (!in_cast).then(|| found(name)).flatten();
        json!({
            "name": name,
            "gender": guess.map_or(gender, |(g, _)| g.as_str()),
            "confidence": guess.map(|(_, d)| d.evidence.guess().confidence),
            "evidence": guess.map(|(_, d)| d.note()),
            "voice": voice,
            "reads_with": config.voice_for(SegmentKind::Dialogue, Some(name)),
            "lines": lines.get(name).copied().unwrap_or(0),
            "in_cast": in_cast,
        })
    };
    let mut out: Vec<Value> = loaded
        .cast
        .characters
        .iter()
        .map(|c| entry(&c.name, c.gender.as_str(), c.voice.as_deref(), true))
        .collect();
    let mut others: Vec<(&str, usize)> = lines
        .iter()
        .filter(|(name, _)| loaded.cast.get(name).is_none())
        .map(|(name, n)| (*name, *n))
        .collect();
    others.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    out.extend(
        others
            .into_iter()
            .map(|(name, _)| entry(name, "unknown", None, false)),
    );
    out
}

/// The voices of the voices file, whatever their backends.
fn voices(config: &VoicesConfig) -> Vec<Value> {
    config
        .voices
        .iter()
        .map(|(name, v)| {
            json!({
                "name": name,
                "backend": v.backend,
                "type": config.backends.get(&v.backend).map(|b| b.type_name()),
                "voice": v.voice,
                "speed": v.speed,
                "pitch": v.pitch,
            })
        })
        .collect()
}

async fn book(State(studio): Shared) -> axum::Json<Value> {
    let speakers = speakers(&studio);
    let options = studio.options();
    let loaded = studio.loaded();
    let book = &loaded.session.book;
    let chapters: Vec<Value> = book
        .script
        .chapters
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({
                "index": i + 1,
                "number": c.number,
                "title": c.title,
                "volume": c.volume,
                "paragraphs": c.segments.last().map_or(0, |s| s.paragraph),
                "characters": c.han_count(),
            })
        })
        .collect();
    let c = &loaded.session.renderer.config.casting;
    let renders: Vec<Value> = loaded
        .renders
        .keys()
        .map(|n| json!({"chapter": n, "url": format!("/api/renders/{n}")}))
        .collect();
    axum::Json(json!({
        "title": book.metadata.title.clone().unwrap_or_else(|| book.stem.clone()),
        "author": book.metadata.author,
        "encoding": book.encoding,
        "chapters": chapters,
        "speakers": speakers,
        "voices": voices(&loaded.session.renderer.config),
        "voices_file": loaded.session.renderer.config.source,
        "casting": {"narrator": c.narrator, "dialogue": c.dialogue, "male": c.male, "female": c.female, "male_more": c.male_more, "female_more": c.female_more},
        "cast_file": options.cast.display().to_string(),
        "lexicon_file": options.lexicon.display().to_string(),
        "overrides_file": options.overrides.display().to_string(),
        "renders": renders,
    }))
}

/// Chapter `n` (1-based position), or 404.
fn script_chapter(studio: &Studio, n: &str) -> ApiResult<ScriptChapter> {
    let loaded = studio.loaded();
    let count = loaded.session.book.script.chapters.len();
    n.parse::<usize>()
        .ok()
        .filter(|n| (1..=count).contains(n))
        .map(|n| loaded.session.book.script.chapters[n - 1].clone())
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                format!("chapter {n}: the book has chapters 1 to {count}"),
            )
        })
}

async fn chapter(State(studio): Shared, Path(n): Path<String>) -> ApiResult<axum::Json<Value>> {
    let chapter = script_chapter(&studio, &n)?;
    let index = n.parse::<usize>().unwrap_or(0);
    let session = studio.session();
    let config = &session.renderer.config;
    let paragraph = |p: usize, segments: Vec<Value>| {
        json!({
            "paragraph": p,
            "segments": segments,
            "override": session.overrides.get(index, p),
        })
    };
    let mut paragraphs: Vec<Value> = Vec::new();
    let mut current: Option<(usize, Vec<Value>)> = None;
    for s in &chapter.segments {
        let segment = segment_json(s, config);
        match &mut current {
            Some((p, segments)) if *p == s.paragraph => segments.push(segment),
            _ => {
                if let Some((p, segments)) = current.take() {
                    paragraphs.push(paragraph(p, segments));
                }
                current = Some((s.paragraph, vec![segment]));
            }
        }
    }
    if let Some((p, segments)) = current {
        paragraphs.push(paragraph(p, segments));
    }
    // Paragraphs left out by an override, so the page can bring them back.
    for o in session.overrides.lines.iter().filter(|o| {
        o.chapter == index && !chapter.segments.iter().any(|s| s.paragraph == o.paragraph)
    }) {
        paragraphs.push(paragraph(o.paragraph, Vec::new()));
    }
    paragraphs.sort_by_key(|p| p["paragraph"].as_u64());
    Ok(axum::Json(json!({
        "index": index,
        "title": chapter.title,
        "volume": chapter.volume,
        "paragraphs": paragraphs,
        "skipped": chapter.skipped,
    })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PreviewRequest {
    text: Option<String>,
    chapter: Option<usize>,
    /// First and last paragraph, 1-based, inclusive.
    paragraphs: Option<[usize; 2]>,
    /// Read everything with this voice (voice samples).
    voice: Option<String>,
    /// Stream the audio chunk by chunk (a WAV with placeholder sizes).
    #[serde(default)]
    stream: bool,
}

/// The passage a preview request asks for, as one chapter.
fn passage(studio: &Studio, req: &PreviewRequest) -> ApiResult<ScriptChapter> {
    match (&req.text, req.chapter) {
        (Some(_), Some(_)) => Err(ApiError::bad("give either text or chapter, not both")),
        (None, None) => Err(ApiError::bad("give text or chapter")),
        (Some(text), None) => {
            if req.paragraphs.is_some() {
                return Err(ApiError::bad("paragraphs needs chapter"));
            }
            if text.chars().count() > MAX_PREVIEW_CHARS {
                return Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("text: longer than {MAX_PREVIEW_CHARS} characters"),
                ));
            }
            let loaded = studio.loaded();
            let cast = super::cast_arg(&loaded.cast);
            let script = Script::from_text_with_cast(text, &loaded.session.book.stem, cast);
            // A pasted text with headings still previews as one passage.
            let mut out = ScriptChapter::new(1, "preview", Vec::new());
            out.append_passage(script.chapters);
            Ok(out)
        }
        (None, Some(n)) => {
            let mut chapter = script_chapter(studio, &n.to_string())?;
            if let Some([first, last]) = req.paragraphs {
                if first == 0 || first > last {
                    return Err(ApiError::bad(format!(
                        "paragraphs [{first}, {last}]: want [first, last], 1-based"
                    )));
                }
                chapter
                    .segments
                    .retain(|s| (first..=last).contains(&s.paragraph));
                if chapter.segments.is_empty() {
                    return Err(ApiError::new(
                        StatusCode::NOT_FOUND,
                        format!("paragraphs [{first}, {last}]: none in chapter {n}"),
                    ));
                }
            }
            Ok(chapter)
        }
    }
}

async fn preview(
    State(studio): Shared,
    bytes: Result<Bytes, BytesRejection>,
) -> ApiResult<Response> {
    let req: PreviewRequest = parse(&body(bytes)?)?;
    if let Some(voice) = &req.voice
        && !studio.base.voices.contains_key(voice)
    {
        let known: Vec<&str> = studio.base.voices.keys().map(String::as_str).collect();
        return Err(ApiError::bad(format!(
            "voice: no voice '{voice}' in {} (known: {})",
            studio.base.source,
            known.join(", ")
        )));
    }
    let chapter = passage(&studio, &req)?;
    if chapter.segments.is_empty() {
        return Err(ApiError::bad(
            "nothing to read: the text has no speakable part",
        ));
    }
    let slot = studio.slot().await.ok_or_else(busy)?;
    if req.stream {
        let body = axum::body::Body::from_stream(studio.preview_stream(
            chapter,
            req.voice.as_deref(),
            slot,
        ));
        return Ok(([(header::CONTENT_TYPE, "audio/wav")], body).into_response());
    }
    let started = std::time::Instant::now();
    let wav = studio
        .preview(chapter, req.voice.as_deref())
        .await
        .map_err(|e| ApiError::new(StatusCode::BAD_GATEWAY, e))?;
    drop(slot);
    tracing::info!(
        ms = started.elapsed().as_millis() as u64,
        bytes = wav.len(),
        "preview"
    );
    Ok(([(header::CONTENT_TYPE, "audio/wav")], wav).into_response())
}

async fn cast(State(studio): Shared) -> axum::Json<Value> {
    let loaded = studio.loaded();
    axum::Json(json!({
        "file": studio.options().cast.display().to_string(),
        "characters": loaded.cast.characters,
    }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CastPut {
    characters: Option<Vec<CharacterEdit>>,
    toml: Option<String>,
}

async fn put_cast(
    State(studio): Shared,
    bytes: Result<Bytes, BytesRejection>,
) -> ApiResult<axum::Json<Value>> {
    let req: CastPut = parse(&body(bytes)?)?;
    let text = match (req.characters, req.toml) {
        (Some(characters), None) => {
            let loaded = studio.loaded();
            let lines = line_counts(&loaded.session.book.script);
            edit::cast_toml(&characters, |name| lines.get(name).copied().unwrap_or(0))
        }
        (None, Some(toml)) => toml,
        _ => return Err(ApiError::bad("give characters or toml")),
    };
    let studio2 = Arc::clone(&studio);
    tokio::task::spawn_blocking(move || studio2.save_cast(&text))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    Ok(cast(State(studio)).await)
}

async fn lexicon(State(studio): Shared) -> axum::Json<Value> {
    let loaded = studio.loaded();
    let entries: Vec<Value> = crate::frontend::Lexicon::parse(
        &loaded.lexicon_text,
        &studio.options().lexicon,
    )
    .map(|l| {
        l.entries()
            .iter()
            .map(|e| json!({"word": e.word, "pinyin": e.pinyin.as_ref().map(|p| p.join(" ")), "say": e.say}))
            .collect()
    })
    .unwrap_or_default();
    axum::Json(json!({
        "file": studio.options().lexicon.display().to_string(),
        "text": loaded.lexicon_text,
        "entries": entries,
    }))
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum LexiconPut {
    Text { toml: String },
    Edit(LexiconEdit),
}

async fn put_lexicon(
    State(studio): Shared,
    bytes: Result<Bytes, BytesRejection>,
) -> ApiResult<axum::Json<Value>> {
    let bytes = body(bytes)?;
    // Untagged enums hide the reason; the edit's own error is clearer.
    let req: LexiconPut = match serde_json::from_slice(&bytes) {
        Ok(req) => req,
        Err(_) => LexiconPut::Edit(parse(&bytes)?),
    };
    let text = match req {
        LexiconPut::Text { toml } => toml,
        LexiconPut::Edit(edit) => {
            if edit.word.trim().is_empty() {
                return Err(ApiError::bad("word: must not be empty"));
            }
            if !edit.remove && edit.pinyin.is_none() && edit.say.is_none() {
                return Err(ApiError::bad("give pinyin, say or remove"));
            }
            let current = studio.loaded().lexicon_text.clone();
            edit::lexicon_with(&current, &edit).map_err(|m| {
                ApiError::bad(format!(
                    "lexicon {}: {m}",
                    studio.options().lexicon.display()
                ))
            })?
        }
    };
    studio.save_lexicon(&text)?;
    Ok(lexicon(State(studio)).await)
}

#[derive(Debug, Deserialize)]
struct PinyinQuery {
    text: String,
}

async fn pinyin(
    State(studio): Shared,
    Query(q): Query<PinyinQuery>,
) -> ApiResult<axum::Json<Value>> {
    if q.text.chars().count() > MAX_PREVIEW_CHARS {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("text: longer than {MAX_PREVIEW_CHARS} characters"),
        ));
    }
    let lexicon = studio.loaded().session.renderer.lexicon.clone();
    let readings = crate::frontend::pinyin::lexical(&q.text, &lexicon);
    Ok(axum::Json(json!({"text": q.text, "pinyin": readings})))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RenderRequest {
    chapters: Vec<usize>,
}

async fn render(
    State(studio): Shared,
    bytes: Result<Bytes, BytesRejection>,
) -> ApiResult<Response> {
    let req: RenderRequest = parse(&body(bytes)?)?;
    let count = studio.loaded().session.book.script.chapters.len();
    if req.chapters.is_empty() {
        return Err(ApiError::bad("chapters: give at least one"));
    }
    if let Some(bad) = req.chapters.iter().find(|n| !(1..=count).contains(*n)) {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("chapters: {bad}: the book has chapters 1 to {count}"),
        ));
    }
    let mut chapters = req.chapters;
    chapters.sort_unstable();
    chapters.dedup();
    start_render(&studio, chapters.clone()).await?;
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(json!({"chapters": chapters, "events": "/api/events"})),
    )
        .into_response())
}

/// Starts rendering `chapters` (checked, 1-based) in the background: 409
/// while a render runs (here or in another process), 503 when the queue is
/// full.
async fn start_render(studio: &Arc<Studio>, chapters: Vec<usize>) -> ApiResult<()> {
    let running = || {
        ApiError::new(
            StatusCode::CONFLICT,
            "a render is running; wait for it to finish",
        )
    };
    if studio.is_rendering() {
        return Err(running());
    }
    let slot = studio.slot().await.ok_or_else(busy)?;
    match studio.start_render(chapters, slot) {
        Ok(()) => Ok(()),
        Err(RenderRefused::Running) => Err(running()),
        Err(e @ RenderRefused::Busy(_)) => Err(ApiError::new(
            StatusCode::CONFLICT,
            crate::error::error_chain(&e),
        )),
        Err(e @ RenderRefused::Write(_)) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            crate::error::error_chain(&e),
        )),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinePut {
    /// Said instead of the book's text; absent or null: the book's.
    text: Option<String>,
    /// Who speaks it; absent or null: as attributed.
    speaker: Option<String>,
    /// Render the chapter again at once (only the changed chunks are
    /// synthesized).
    #[serde(default)]
    render: bool,
}

fn segment_json(s: &crate::text::Segment, config: &VoicesConfig) -> Value {
    json!({
        "kind": kind_name(s.kind),
        "speaker": s.speaker,
        "unnamed": s.unnamed,
        "gender_unsure": s.gender_unsure,
        "text": s.text,
        "voice": config.segment_voice(s),
    })
}

/// Changes how one paragraph is read (its text, its speaker), saved in
/// the overrides file; answers what changed and, with `render`, starts
/// rendering its chapter again.
async fn put_line(
    State(studio): Shared,
    Path((n, p)): Path<(String, String)>,
    bytes: Result<Bytes, BytesRejection>,
) -> ApiResult<axum::Json<Value>> {
    let req: LinePut = parse(&body(bytes)?)?;
    // A chapter or paragraph the book does not have is 404 (`save_line`).
    let index = n
        .parse::<usize>()
        .map_err(|_| ApiError::new(StatusCode::NOT_FOUND, format!("chapter {n}: not a number")))?;
    let paragraph = p.parse::<usize>().map_err(|_| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("paragraph {p}: not a number"),
        )
    })?;
    if let Some(text) = &req.text
        && text.chars().count() > MAX_PREVIEW_CHARS
    {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("text: longer than {MAX_PREVIEW_CHARS} characters"),
        ));
    }
    let studio2 = Arc::clone(&studio);
    let change = tokio::task::spawn_blocking(move || {
        studio2.save_line(index, paragraph, req.text, req.speaker)
    })
    .await
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
    .map_err(|e| match e {
        LineError::Studio(e) => ApiError::from(e),
        e => ApiError::new(StatusCode::NOT_FOUND, e.to_string()),
    })?;
    if req.render {
        start_render(&studio, vec![index]).await?;
    }
    let config = Arc::clone(&studio.loaded().session.renderer.config);
    Ok(axum::Json(json!({
        "chapter": index,
        "paragraph": paragraph,
        "before": change.before.iter().map(|s| segment_json(s, &config)).collect::<Vec<_>>(),
        "after": change.after.iter().map(|s| segment_json(s, &config)).collect::<Vec<_>>(),
        "override": change.line,
        "to_synthesize": change.to_synthesize,
        "rendering": req.render,
        "file": studio.options().overrides.display().to_string(),
    })))
}

async fn events(
    State(studio): Shared,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    let (receiver, stopping) = studio.subscribe();
    let stream = futures::stream::unfold((receiver, stopping), |(mut rx, mut stop)| async move {
        loop {
            if *stop.borrow() {
                return None;
            }
            tokio::select! {
                received = rx.recv() => match received {
                    Ok(data) => {
                        return Some((Ok(Event::default().event("render").data(data)), (rx, stop)));
                    }
                    // A slow reader misses events; the next one says where it is.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                },
                changed = stop.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                }
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

async fn rendered(State(studio): Shared, Path(n): Path<String>) -> ApiResult<Response> {
    let path = n
        .parse::<usize>()
        .ok()
        .and_then(|n| studio.render_path(n))
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                format!("chapter {n}: not rendered in this session"),
            )
        })?;
    let bytes = tokio::fs::read(&path).await.map_err(|e| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("chapter {n}: the render is gone: {e}"),
        )
    })?;
    Ok(([(header::CONTENT_TYPE, "audio/wav")], bytes).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_named_after_the_port() {
        assert_eq!(cookie_name("127.0.0.1:8080"), "tingshu-studio-8080");
        assert_eq!(cookie_name("studio.lan"), "tingshu-studio-80");
        assert_eq!(cookie_name("h:8\"; x"), "tingshu-studio-8");
    }
}
