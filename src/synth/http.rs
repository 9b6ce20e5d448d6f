//! The `http` backend — a request template in the style of Legado's HTTP TTS
//! — and the HTTP plumbing every network backend shares (error mapping,
//! `Retry-After`, secret redaction).
//!
//! ```toml
//! [backends.sovits]
//! type = "http"
//! method = "POST"
//! url = "http://127.0.0.1:9880/tts"
//! json = { text = "{text}", text_lang = "zh", speed_factor = "{speed}" }
//! response = "audio"           # or "pcm" (+ sample_rate) or "json" (+ audio_path)
//! ```
//! Placeholders: `{text}` `{voice}` `{speed}` `{lang}` `{pitch}` and `{key}`
//! (the secret from `api_key_env`). In the URL they are percent-encoded; in
//! `json` string values they are JSON-escaped, and a value that is exactly
//! `"{speed}"` or `"{pitch}"` becomes a JSON number.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;

use super::kind::{BackendKind, BuildContext, KeyProblem, SecretVar};
use super::retry::parse_retry_after;
use super::{
    Limits, SynthError, SynthRequest, Synthesizer, check_duration, decode_checked, max_chars,
};
use crate::audio::AudioClip;

/// A secret (API key) that never prints.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The secret, registered with [`crate::redact`] so that no message,
    /// file or log shows it.
    pub fn new(value: String) -> Secret {
        crate::redact::register(&value);
        Secret(value)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the secret (and of every other
    /// secret and URL password) replaced by `***`: [`crate::redact::redact`].
    pub fn redact(&self, text: &str) -> String {
        crate::redact::redact(text)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Builds the shared HTTP client of one backend. With `credentials` (an
/// API key in a header or the URL), a redirect to another scheme, host or
/// port is refused: reqwest strips `Authorization` there, but not
/// `Ocp-Apim-Subscription-Key` or a template header built from `{key}`.
/// Redirects within the same origin are followed (10 at most).
pub fn client(
    backend: &str,
    timeout: Duration,
    credentials: bool,
) -> Result<reqwest::Client, SynthError> {
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= 10 {
            return attempt.error("too many redirects");
        }
        let from = attempt.previous().last();
        let to = attempt.url();
        let same_origin = from.is_some_and(|from| {
            from.scheme() == to.scheme()
                && from.host_str() == to.host_str()
                && from.port_or_known_default() == to.port_or_known_default()
        });
        if credentials && !same_origin {
            let origin = format!(
                "{}://{}{}",
                to.scheme(),
                to.host_str().unwrap_or(""),
                to.port().map(|p| format!(":{p}")).unwrap_or_default()
            );
            return attempt.error(format!(
                "refused a redirect to another host ({origin}): the request carries the API key"
            ));
        }
        attempt.follow()
    });
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .user_agent(concat!("tingshu/", env!("CARGO_PKG_VERSION")))
        .redirect(policy)
        .build()
        .map_err(|e| SynthError::Setup {
            backend: backend.to_owned(),
            message: format!("cannot build HTTP client: {e}"),
        })
}

/// Default of the `max_body_mb` client key: no answer is read past this.
pub const DEFAULT_MAX_BODY: u64 = 256 << 20;

/// Bytes of an error answer kept for its message.
const ERROR_BODY_BYTES: usize = 64 << 10;

/// The most bytes an answer to `req` may have: the longest audio
/// [`super::check_duration`] accepts for its text, as 48 kHz 16-bit stereo
/// in base64 (256 kB/s), plus 1 MiB; never more than `max_body`.
pub fn body_cap(req: &SynthRequest, max_body: u64) -> u64 {
    let units = super::spoken_units(&req.text) as f64;
    let speed = f64::from(req.voice.speed.max(0.25));
    let longest_s = (units * 2.0 + 10.0) / speed;
    let derived = (longest_s * 256_000.0) as u64 + (1 << 20);
    derived.min(max_body)
}

/// Sends `request` and returns the body of a 2xx answer, read as a stream
/// and rejected as soon as it passes `cap` bytes (or announces more);
/// everything else becomes a [`SynthError`] with secrets redacted.
pub async fn send(
    backend: &str,
    request: reqwest::RequestBuilder,
    timeout: Duration,
    secret: &Secret,
    cap: u64,
) -> Result<Vec<u8>, SynthError> {
    let transport = |e: reqwest::Error| {
        if e.is_timeout() {
            SynthError::Timeout {
                backend: backend.to_owned(),
                after: timeout,
            }
        } else {
            SynthError::Connect {
                backend: backend.to_owned(),
                message: secret.redact(&crate::error::error_chain(&e.without_url())),
            }
        }
    };
    let mut response = request.send().await.map_err(transport)?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    let too_big = |size: String| SynthError::BadAudio {
        backend: backend.to_owned(),
        message: format!(
            "answer of {size} is larger than the {} MiB allowed for this text (max_body_mb)",
            cap.div_ceil(1 << 20)
        ),
    };
    if status.is_success()
        && let Some(length) = response.content_length()
        && length > cap
    {
        return Err(too_big(format!("{} MiB", length.div_ceil(1 << 20))));
    }
    let limit = if status.is_success() {
        usize::try_from(cap).unwrap_or(usize::MAX)
    } else {
        ERROR_BODY_BYTES
    };
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport)? {
        if body.len() + chunk.len() > limit {
            if status.is_success() {
                return Err(too_big(format!("more than {} MiB", cap.div_ceil(1 << 20))));
            }
            body.extend_from_slice(&chunk[..limit - body.len()]);
            break;
        }
        body.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        return Err(SynthError::Http {
            backend: backend.to_owned(),
            status: status.as_u16(),
            message: body_excerpt(&body),
            retry_after,
        });
    }
    Ok(body)
}

/// The start of an error body, on one line, secrets redacted first (a key
/// cut in half by the excerpt would otherwise show).
fn body_excerpt(body: &[u8]) -> String {
    let text = crate::redact::redact(&String::from_utf8_lossy(body));
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(120)
        .collect();
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What the network backends (`openai`, `azure`, `http`) share: the
/// backend's name and secret, its HTTP client, and the limits on one
/// request (time, answer size, how many at once).
pub struct Remote {
    /// The backend's name in the voices file.
    pub name: String,
    /// The API key (empty when the backend has none).
    pub secret: Secret,
    timeout: Duration,
    max_in_flight: usize,
    max_body: u64,
    client: reqwest::Client,
}

impl Remote {
    /// The client of backend `name`; with `credentials` (the requests
    /// carry the secret), no redirect leaves the origin (see [`client`]).
    /// Answers are read up to [`DEFAULT_MAX_BODY`] until
    /// [`Remote::set_max_body`].
    pub fn new(
        name: &str,
        secret: Secret,
        timeout: Duration,
        max_in_flight: usize,
        credentials: bool,
    ) -> Result<Remote, SynthError> {
        Ok(Remote {
            client: client(name, timeout, credentials)?,
            name: name.to_owned(),
            secret,
            timeout,
            max_in_flight,
            max_body: DEFAULT_MAX_BODY,
        })
    }

    /// Reads no answer past `bytes` (`max_body_mb`).
    pub fn set_max_body(&mut self, bytes: u64) {
        self.max_body = bytes;
    }

    /// The backend's [`Limits`], with its `max_chars`.
    pub fn limits(&self, max_chars: usize) -> Limits {
        Limits::new(max_chars, self.max_in_flight)
    }

    /// The HTTP client, to build requests with.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Sends `request`, made for `req`: [`send`] with the backend's
    /// timeout and secret, and the answer capped by [`body_cap`].
    pub async fn send(
        &self,
        request: reqwest::RequestBuilder,
        req: &SynthRequest,
    ) -> Result<Vec<u8>, SynthError> {
        let cap = body_cap(req, self.max_body);
        send(&self.name, request, self.timeout, &self.secret, cap).await
    }

    /// An answer of raw 16-bit little-endian mono PCM at `sample_rate`,
    /// checked like any other ([`check_duration`]).
    pub fn pcm(
        &self,
        body: &[u8],
        sample_rate: u32,
        req: &SynthRequest,
    ) -> Result<AudioClip, SynthError> {
        if body.len() < 2 {
            return Err(self.bad_audio("empty PCM body".into()));
        }
        let samples: Vec<i16> = body
            .chunks_exact(2)
            .map(|b| i16::from_le_bytes([b[0], b[1]]))
            .collect();
        check_duration(&self.name, AudioClip::from_i16(&samples, sample_rate), req)
    }

    /// A [`SynthError::BadAudio`] of this backend.
    pub fn bad_audio(&self, message: String) -> SynthError {
        SynthError::BadAudio {
            backend: self.name.clone(),
            message,
        }
    }
}

/// How the `http` backend reads an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ResponseKind {
    /// An audio file (WAV, MP3, OGG, FLAC).
    #[default]
    Audio,
    /// Raw 16-bit little-endian mono PCM at `sample_rate`.
    Pcm,
    /// JSON with base64 audio at `audio_path` (dot-separated keys).
    Json,
}

/// `[backends.NAME] type = "http"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// GET or POST (default GET).
    #[serde(default = "default_method")]
    pub method: String,
    /// URL template.
    pub url: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// JSON body template (a table; string values may hold placeholders).
    #[serde(default)]
    pub json: Option<toml::Table>,
    /// Form body template (`application/x-www-form-urlencoded`).
    #[serde(default)]
    pub form: Option<BTreeMap<String, String>>,
    /// Raw body template, sent as is after substitution.
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub response: ResponseKind,
    /// Sample rate of `response = "pcm"`.
    #[serde(default)]
    pub sample_rate: Option<u32>,
    /// Where the base64 audio sits in a `response = "json"` answer.
    #[serde(default)]
    pub audio_path: Option<String>,
    /// Value of `{lang}`.
    #[serde(default = "default_lang")]
    pub lang: String,
    /// Environment variable holding the secret for `{key}`.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Longest text per request, in characters.
    #[serde(default = "max_chars::<150>")]
    pub max_chars: usize,
}

fn default_method() -> String {
    "GET".into()
}

fn default_lang() -> String {
    "zh".into()
}

impl BackendKind for HttpConfig {
    fn build(&self, ctx: &BuildContext<'_>) -> Result<Arc<dyn Synthesizer>, SynthError> {
        let secret = ctx.secret(self.api_key_env.as_deref());
        let http = Http::new(
            ctx.name,
            self.clone(),
            secret,
            ctx.timeout,
            ctx.in_flight(2),
        )?;
        Ok(Arc::new(http.with_max_body(ctx.max_body)))
    }

    /// Checks the template; returns (key suffix, problem).
    fn check(&self, _voices: &[(String, &str)]) -> Result<(), KeyProblem> {
        if !matches!(
            self.method.to_ascii_uppercase().as_str(),
            "GET" | "POST" | "PUT"
        ) {
            return Err((
                "method".into(),
                format!("'{}' is not GET, POST or PUT", self.method),
            ));
        }
        let bodies = [
            self.json.is_some(),
            self.form.is_some(),
            self.body.is_some(),
        ];
        if bodies.iter().filter(|b| **b).count() > 1 {
            return Err(("json".into(), "give only one of json, form and body".into()));
        }
        if !self.url.starts_with("http://") && !self.url.starts_with("https://") {
            return Err(("url".into(), "must start with http:// or https://".into()));
        }
        match self.response {
            ResponseKind::Pcm if self.sample_rate.is_none() => {
                return Err((
                    "sample_rate".into(),
                    "required with response = \"pcm\"".into(),
                ));
            }
            ResponseKind::Json if self.audio_path.is_none() => {
                return Err((
                    "audio_path".into(),
                    "required with response = \"json\"".into(),
                ));
            }
            _ => {}
        }
        if self.max_chars == 0 {
            return Err(("max_chars".into(), "must be at least 1".into()));
        }
        Ok(())
    }

    fn secrets(&self) -> Vec<SecretVar<'_>> {
        SecretVar::api_key(self.api_key_env.as_deref())
    }
}

/// The `http` backend.
pub struct Http {
    remote: Remote,
    config: HttpConfig,
}

impl Http {
    pub fn new(
        name: &str,
        config: HttpConfig,
        secret: Secret,
        timeout: Duration,
        max_in_flight: usize,
    ) -> Result<Http, SynthError> {
        let credentials = !secret.expose().is_empty();
        Ok(Http {
            remote: Remote::new(name, secret, timeout, max_in_flight, credentials)?,
            config,
        })
    }

    /// Reads no answer past `bytes` (`max_body_mb`).
    pub fn with_max_body(mut self, bytes: u64) -> Http {
        self.remote.set_max_body(bytes);
        self
    }

    fn values(&self, req: &SynthRequest) -> Vec<(&'static str, String)> {
        vec![
            ("{text}", req.text.clone()),
            ("{voice}", req.voice.voice.clone()),
            ("{speed}", format_number(f64::from(req.voice.speed))),
            ("{pitch}", req.voice.pitch.unwrap_or(50).to_string()),
            ("{lang}", self.config.lang.clone()),
            ("{key}", self.remote.secret.expose().to_owned()),
        ]
    }

    fn substitute(template: &str, values: &[(&str, String)], encode: fn(&str) -> String) -> String {
        // One pass, left to right, so substituted text is never re-read.
        let mut out = String::new();
        let mut rest = template;
        'outer: while !rest.is_empty() {
            for (name, value) in values {
                if let Some(after) = rest.strip_prefix(name) {
                    out.push_str(&encode(value));
                    rest = after;
                    continue 'outer;
                }
            }
            let c = rest.chars().next().expect("rest is not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
        out
    }

    fn json_value(value: &toml::Value, values: &[(&str, String)]) -> serde_json::Value {
        use serde_json::Value as J;
        match value {
            toml::Value::String(s) => {
                if matches!(s.as_str(), "{speed}" | "{pitch}")
                    && let Some((_, v)) = values.iter().find(|(n, _)| *n == s)
                    && let Ok(n) = v.parse::<f64>()
                {
                    return serde_json::Number::from_f64(n).map_or(J::Null, J::Number);
                }
                J::String(Self::substitute(s, values, str::to_owned))
            }
            toml::Value::Integer(i) => J::from(*i),
            toml::Value::Float(f) => J::from(*f),
            toml::Value::Boolean(b) => J::Bool(*b),
            toml::Value::Datetime(d) => J::String(d.to_string()),
            toml::Value::Array(a) => {
                J::Array(a.iter().map(|v| Self::json_value(v, values)).collect())
            }
            toml::Value::Table(t) => J::Object(
                t.iter()
                    .map(|(k, v)| (k.clone(), Self::json_value(v, values)))
                    .collect(),
            ),
        }
    }

    fn request(&self, req: &SynthRequest) -> reqwest::RequestBuilder {
        let values = self.values(req);
        let url = Self::substitute(&self.config.url, &values, |v| {
            utf8_percent_encode(v, NON_ALPHANUMERIC).to_string()
        });
        let method =
            reqwest::Method::from_bytes(self.config.method.to_ascii_uppercase().as_bytes())
                .unwrap_or(reqwest::Method::GET);
        let mut builder = self.remote.client().request(method, url);
        for (name, value) in &self.config.headers {
            builder = builder.header(name, Self::substitute(value, &values, str::to_owned));
        }
        if let Some(json) = &self.config.json {
            let body = Self::json_value(&toml::Value::Table(json.clone()), &values);
            builder = builder
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
        } else if let Some(form) = &self.config.form {
            let mut encoder = form_urlencoded::Serializer::new(String::new());
            for (k, v) in form {
                encoder.append_pair(k, &Self::substitute(v, &values, str::to_owned));
            }
            builder = builder
                .header(
                    reqwest::header::CONTENT_TYPE,
                    "application/x-www-form-urlencoded",
                )
                .body(encoder.finish());
        } else if let Some(body) = &self.config.body {
            builder = builder.body(Self::substitute(body, &values, str::to_owned));
        }
        builder
    }

    fn bad(&self, message: String) -> SynthError {
        self.remote.bad_audio(message)
    }

    fn read_answer(&self, body: &[u8], req: &SynthRequest) -> Result<AudioClip, SynthError> {
        match self.config.response {
            ResponseKind::Audio => decode_checked(&self.remote.name, body, req),
            ResponseKind::Pcm => {
                let rate = self.config.sample_rate.unwrap_or(22050);
                self.remote.pcm(body, rate, req)
            }
            ResponseKind::Json => {
                let json: serde_json::Value = serde_json::from_slice(body)
                    .map_err(|e| self.bad(format!("answer is not JSON: {e}")))?;
                let path = self.config.audio_path.as_deref().unwrap_or("audio");
                let mut node = &json;
                for part in path.split('.') {
                    node = match node {
                        serde_json::Value::Array(a) => {
                            part.parse::<usize>().ok().and_then(|i| a.get(i))
                        }
                        other => other.get(part),
                    }
                    .ok_or_else(|| self.bad(format!("answer has no '{path}'")))?;
                }
                let encoded = node
                    .as_str()
                    .ok_or_else(|| self.bad(format!("'{path}' is not a string")))?;
                let encoded = encoded
                    .split_once("base64,")
                    .map_or(encoded, |(_, data)| data);
                let audio = base64::engine::general_purpose::STANDARD
                    .decode(encoded.trim())
                    .map_err(|e| self.bad(format!("'{path}' is not base64: {e}")))?;
                decode_checked(&self.remote.name, &audio, req)
            }
        }
    }
}

/// `1`, `1.25` — no trailing zeros.
fn format_number(n: f64) -> String {
    let s = format!("{n:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[async_trait]
impl Synthesizer for Http {
    fn name(&self) -> &str {
        &self.remote.name
    }

    fn limits(&self) -> Limits {
        self.remote.limits(self.config.max_chars)
    }

    fn fingerprint(&self) -> String {
        // The templates decide the audio (they hold `{key}`, never the
        // secret itself); the secret and the timeout do not.
        let c = &self.config;
        format!(
            "http/{} {}/{:?}/{:?}/{:?}/{:?}/{:?}/{:?}/{}",
            c.method, c.url, c.headers, c.json, c.form, c.body, c.response, c.sample_rate, c.lang
        )
    }

    async fn synthesize(&self, req: &SynthRequest) -> Result<AudioClip, SynthError> {
        let body = self.remote.send(self.request(req), req).await?;
        self.read_answer(&body, req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::VoiceSettings;

    fn backend(config: HttpConfig) -> Http {
        Http::new(
            "t",
            config,
            Secret::new("sk-top-secret".into()),
            Duration::from_secs(1),
            1,
        )
        .unwrap()
    }

    fn config(toml_text: &str) -> HttpConfig {
        toml::from_str(toml_text).unwrap()
    }

    fn req() -> SynthRequest {
        SynthRequest {
            text: "你好 & \"再见\"".into(),
            pinyin: String::new(),
            voice: VoiceSettings {
                name: "n".into(),
                voice: "中文女".into(),
                speed: 1.25,
                ..Default::default()
            },
        }
    }

    #[test]
    fn url_placeholders_are_percent_encoded() {
        let b = backend(config(
            r#"url = "http://h/tts?text={text}&spk={voice}&s={speed}""#,
        ));
        let built = b.request(&req()).build().unwrap();
        assert_eq!(
            built.url().as_str(),
            "http://h/tts?text=%E4%BD%A0%E5%A5%BD%20%26%20%22%E5%86%8D%E8%A7%81%22&spk=%E4%B8%AD%E6%96%87%E5%A5%B3&s=1%2E25"
        );
    }

    #[test]
    fn json_template_escapes_text_and_types_numbers() {
        let b = backend(config(
            "method = \"POST\"\nurl = \"http://h/tts\"\njson = { text = \"{text}\", speed_factor = \"{speed}\", batch = 1, tag = \"{lang}-{voice}\" }\n",
        ));
        let built = b.request(&req()).build().unwrap();
        let body: serde_json::Value =
            serde_json::from_slice(built.body().unwrap().as_bytes().unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"text": "你好 & \"再见\"", "speed_factor": 1.25, "batch": 1, "tag": "zh-中文女"})
        );
    }

    #[test]
    fn form_template_and_substitution_is_single_pass() {
        let b = backend(config(
            "method = \"POST\"\nurl = \"http://h/\"\nform = { tts_text = \"{text}\", spk_id = \"{voice}\" }\n",
        ));
        let mut r = req();
        r.text = "{voice}".into();
        let built = b.request(&r).build().unwrap();
        let body = std::str::from_utf8(built.body().unwrap().as_bytes().unwrap()).unwrap();
        assert_eq!(
            body,
            "spk_id=%E4%B8%AD%E6%96%87%E5%A5%B3&tts_text=%7Bvoice%7D"
        );
    }

    #[test]
    fn secrets_are_redacted_and_never_debug_printed() {
        let s = Secret::new("sk-top-secret".into());
        assert_eq!(format!("{s:?}"), "Secret(***)");
        assert_eq!(s.redact("bad key sk-top-secret!"), "bad key ***!");
    }

    #[test]
    fn template_checks_name_the_key() {
        let c = config("url = \"http://h/\"\nresponse = \"pcm\"\n");
        assert_eq!(c.check(&[]).unwrap_err().0, "sample_rate");
        let c = config("url = \"ftp://h/\"\n");
        assert_eq!(c.check(&[]).unwrap_err().0, "url");
    }
}
