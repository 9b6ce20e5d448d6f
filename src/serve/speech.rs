//! Speech: OpenAI's `POST /v1/audio/speech`, the Legado endpoint
//! (`/legado/speak`, GET with a query or POST with a form or JSON) and
//! `GET /legado`, the httpTTS sources Legado imports by URL.
//!
//! A request's text is split as a book is (narration and dialogue, the
//! voices file's casting), read with the server's lexicon through the
//! shared renderer (so the segment cache answers a repeated passage), and
//! streamed chunk by chunk in the format asked for.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};

use super::audio::{SpeechFormat, encode_stream, pcm_stream};
use super::{ServeError, Server, base_url};
use crate::pipeline::Renderer;
use crate::text::{Script, ScriptChapter, SplitOptions};

type Shared = State<Arc<Server>>;

/// Voice names that keep the voices file's casting (narrator for
/// narration, the dialogue voices for dialogue).
const CASTING_VOICES: [&str; 3] = ["", "default", "casting"];

/// What is to be spoken, from any of the endpoints.
#[derive(Debug)]
struct Speak {
    text: String,
    voice: Option<String>,
    /// Tempo factor, 1.0 as the voices file says.
    speed: f32,
    format: SpeechFormat,
}

/// OpenAI's request body.
#[derive(Debug, Deserialize)]
struct OpenAiRequest {
    #[serde(default)]
    #[allow(dead_code)]
    model: Option<String>,
    input: String,
    #[serde(default)]
    voice: Option<String>,
    #[serde(default)]
    response_format: Option<String>,
    #[serde(default)]
    speed: Option<f32>,
    /// Accepted and ignored (OpenAI's newer models take instructions).
    #[serde(default)]
    #[allow(dead_code)]
    instructions: Option<String>,
}

/// The Legado endpoint's parameters (query, form or JSON).
#[derive(Debug, Deserialize)]
pub struct LegadoRequest {
    #[serde(default)]
    text: Option<String>,
    /// Legado's `speakSpeed`: 5 is as the voices file says; each 10 more
    /// reads one time faster.
    #[serde(default)]
    speed: Option<String>,
    #[serde(default)]
    voice: Option<String>,
    #[serde(default)]
    format: Option<String>,
    /// Checked by the guard; allowed here so that it is not unknown.
    #[serde(default)]
    #[allow(dead_code)]
    token: Option<String>,
}

/// The body, or 413 for one over the limit.
fn body(body: Result<Bytes, BytesRejection>, limit: usize) -> Result<Bytes, ServeError> {
    body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ServeError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request body over {limit} bytes"),
            )
        } else {
            ServeError::bad(format!("request body: {}", e.body_text()))
        }
    })
}

/// `POST /v1/audio/speech`.
pub async fn openai(
    State(server): Shared,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ServeError> {
    let bytes = body(raw, server.options.max_body)?;
    let req: OpenAiRequest = serde_json::from_slice(&bytes)
        .map_err(|e| ServeError::bad(format!("request body: {e}")))?;
    let format = match req.response_format.as_deref() {
        None => SpeechFormat::Mp3,
        Some(name) => SpeechFormat::parse(name).ok_or_else(|| {
            ServeError::bad(format!(
                "response_format {name:?}: use mp3, opus, wav or pcm"
            ))
        })?,
    };
    let speed = req.speed.unwrap_or(1.0);
    if !(0.25..=4.0).contains(&speed) {
        return Err(ServeError::bad(format!(
            "speed {speed}: must be from 0.25 to 4.0"
        )));
    }
    speak(
        &server,
        Speak {
            text: req.input,
            voice: req.voice,
            speed,
            format,
        },
    )
    .await
}

/// `GET /legado/speak?text=…&speed=…&voice=…`.
pub async fn legado_get(
    State(server): Shared,
    query: Result<Query<LegadoRequest>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ServeError> {
    let Query(req) = query.map_err(|e| ServeError::bad(format!("query: {}", e.body_text())))?;
    legado(&server, req).await
}

/// `POST /legado/speak` with a form or JSON body.
pub async fn legado_post(
    State(server): Shared,
    headers: HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ServeError> {
    let bytes = body(raw, server.options.max_body)?;
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("json"));
    let req: LegadoRequest = if json {
        serde_json::from_slice(&bytes).map_err(|e| ServeError::bad(format!("request body: {e}")))?
    } else {
        let pairs: serde_json::Map<String, Value> = form_urlencoded::parse(&bytes)
            .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
            .collect();
        serde_json::from_value(Value::Object(pairs))
            .map_err(|e| ServeError::bad(format!("request body: {e}")))?
    };
    legado(&server, req).await
}

/// Legado's `speakSpeed` as a tempo factor: 5 → 1.0, 15 → 2.0, 0 → 0.5.
pub fn legado_speed(value: &str) -> Result<f32, ServeError> {
    let n: f32 = value
        .trim()
        .parse()
        .map_err(|_| ServeError::bad(format!("speed {value:?}: not a number")))?;
    Ok(((n + 5.0) / 10.0).clamp(0.5, 3.0))
}

async fn legado(server: &Server, req: LegadoRequest) -> Result<Response, ServeError> {
    let text = req
        .text
        .ok_or_else(|| ServeError::bad("text: missing (the text to read)"))?;
    let speed = match req.speed.as_deref() {
        None | Some("") => 1.0,
        Some(v) => legado_speed(v)?,
    };
    let format = match req.format.as_deref() {
        None | Some("") => SpeechFormat::Mp3,
        Some(name) => SpeechFormat::parse(name).ok_or_else(|| {
            ServeError::bad(format!("format {name:?}: use mp3, opus, wav or pcm"))
        })?,
    };
    speak(
        server,
        Speak {
            text,
            voice: req.voice,
            speed,
            format,
        },
    )
    .await
}

/// The text as one passage of the reading script.
pub fn passage(text: &str) -> ScriptChapter {
    let script = Script::from_text_with_options(text, "serve", None, SplitOptions::default());
    let mut out = ScriptChapter::new(1, "speech", Vec::new());
    out.append_passage(script.chapters);
    out
}

/// The renderer of a request: the server's, with everything read by
/// `voice` when one is named, every voice's speed times `speed`, and no
/// spoken title.
fn renderer_for(server: &Server, voice: Option<&str>, speed: f32) -> Result<Renderer, ServeError> {
    let config = &server.session.renderer.config;
    let voice = voice.map(str::trim).filter(|v| !CASTING_VOICES.contains(v));
    if let Some(voice) = voice
        && !config.voices.contains_key(voice)
    {
        let known: Vec<&str> = config.voices.keys().map(String::as_str).collect();
        return Err(ServeError::bad(format!(
            "voice {voice:?}: no such voice in {} (voices: default, {})",
            config.source,
            known.join(", ")
        )));
    }
    Ok(server.session.passage_renderer(voice, speed))
}

/// Checks, queues and streams one request's speech.
async fn speak(server: &Server, req: Speak) -> Result<Response, ServeError> {
    let chars = req.text.chars().count();
    if chars > server.options.max_chars {
        return Err(ServeError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "input: {chars} characters, more than this server reads at once ({})",
                server.options.max_chars
            ),
        ));
    }
    let chapter = passage(&req.text);
    if chapter.segments.is_empty() {
        return Err(ServeError::bad(
            "input: nothing to read (no speakable text)",
        ));
    }
    let renderer = renderer_for(server, req.voice.as_deref(), req.speed)?;
    let permit = server.slot().await.ok_or_else(|| {
        ServeError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy: every synthesis slot and the queue are taken; try again shortly",
        )
    })?;
    let rate = renderer.config.mix.sample_rate;
    let pcm = pcm_stream(&renderer, chapter);
    let audio = encode_stream(pcm, req.format, rate, &server.options.ffmpeg).map_err(|e| {
        ServeError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot start {}: {e}", server.options.ffmpeg.display()),
        )
    })?;
    // The slot is held until the last byte is out or the client leaves.
    let audio = audio.map(move |item| {
        let _held = &permit;
        item
    });
    Ok(Response::builder()
        .header(header::CONTENT_TYPE, req.format.content_type())
        .header(header::CACHE_CONTROL, "no-store")
        .header("x-sample-rate", rate)
        .body(Body::from_stream(audio))
        .unwrap_or_default())
}

/// `GET /v1/models`: one model, for clients that list them first.
pub async fn models() -> axum::Json<Value> {
    axum::Json(
        json!({"object": "list", "data": [{"id": "tingshu", "object": "model", "owned_by": "tingshu"}]}),
    )
}

/// `GET /v1/audio/voices`: the voices a request may name.
pub async fn voices(State(server): Shared) -> axum::Json<Value> {
    let names: Vec<&String> = server.session.renderer.config.voices.keys().collect();
    axum::Json(json!({"voices": names, "default": "default"}))
}

/// `GET /legado`: an array of Legado httpTTS sources for this server's
/// address, the default casting first, then each voice of the voices file.
pub async fn legado_sources(State(server): Shared, headers: HeaderMap) -> axum::Json<Value> {
    axum::Json(legado_json(&server, &base_url(&headers)))
}

/// The httpTTS sources for a server reached at `base`.
pub fn legado_json(server: &Server, base: &str) -> Value {
    let token = server.options.token.as_ref().map(|t| {
        format!(
            "token={}&",
            percent_encoding::utf8_percent_encode(t, crate::feed::SEGMENT)
        )
    });
    let mut names = vec![("default".to_owned(), "tingshu 听书".to_owned())];
    names.extend(
        server
            .session
            .renderer
            .config
            .voices
            .keys()
            .map(|v| (v.clone(), format!("tingshu 听书 · {v}"))),
    );
    let sources: Vec<Value> = names
        .into_iter()
        .enumerate()
        .map(|(i, (voice, name))| {
            let voice_q = percent_encoding::utf8_percent_encode(&voice, crate::feed::SEGMENT);
            json!({
                "id": 1_700_000_000_000_i64 + i as i64,
                "name": name,
                "url": format!(
                    "{base}/legado/speak?{}voice={voice_q}&speed={{{{speakSpeed}}}}&text={{{{speakText}}}}",
                    token.as_deref().unwrap_or("")
                ),
                "contentType": "audio/.*",
                "concurrentRate": "0",
                "loginUrl": "",
                "loginUi": "",
                "header": "",
                "loginCheckJs": "",
                "enabledCookieJar": false,
                "lastUpdateTime": 0,
            })
        })
        .collect();
    Value::Array(sources)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legado_speeds() {
        assert_eq!(legado_speed("5").unwrap(), 1.0);
        assert_eq!(legado_speed("15").unwrap(), 2.0);
        assert_eq!(legado_speed("0").unwrap(), 0.5);
        assert!(legado_speed("fast").is_err());
    }

    #[test]
    fn a_text_with_headings_is_one_passage() {
        let chapter = passage("第一章 雾\n灯亮了。\n第二章 风\n他说：“走吧。”");
        assert!(chapter.segments.len() >= 2, "{:?}", chapter.segments);
        let paragraphs: Vec<usize> = chapter.segments.iter().map(|s| s.paragraph).collect();
        assert!(
            paragraphs.windows(2).all(|w| w[0] <= w[1]),
            "{paragraphs:?}"
        );
    }
}
