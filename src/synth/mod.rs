//! Stage 3 — synthesis client: one small trait, one implementation per
//! backend, built from the voices file.

pub mod azure;
pub mod cache;
pub mod client;
pub mod command;
pub mod espeak;
pub mod http;
pub mod kind;
pub mod kokoro;
pub mod openai;
pub mod rate_limit;
pub mod retry;

use std::time::Duration;

use async_trait::async_trait;

use crate::audio::AudioClip;
use crate::audio::decode::{self, DecodeError};

pub use client::{SynthClient, Synthesized};
pub use kind::{BackendKind, BuildContext, KeyProblem, SecretVar};

/// What a backend can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest text (in characters) one request may carry.
    pub max_chars: usize,
    /// Requests this backend serves at once.
    pub max_in_flight: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_chars: 200,
            max_in_flight: 1,
        }
    }
}

impl Limits {
    /// A backend's limits: `max_chars` from its table, `max_in_flight`
    /// as built.
    pub fn new(max_chars: usize, max_in_flight: usize) -> Limits {
        Limits {
            max_chars,
            max_in_flight,
        }
    }
}

/// `N`: the default of a `max_chars` key, as a serde default
/// (`#[serde(default = "max_chars::<300>")]`).
pub(crate) const fn max_chars<const N: usize>() -> usize {
    N
}

/// How one voice should sound, as resolved from the voices file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VoiceSettings {
    /// Name of the voice in the voices file (recorded in the manifest).
    pub name: String,
    /// Backend-specific voice id.
    pub voice: String,
    /// Speed factor, 1.0 = the backend's normal pace.
    pub speed: f32,
    /// Backend-specific pitch (espeak-ng: 0–99; 50 = the voice's own).
    pub pitch: Option<u8>,
    /// Speaking style (Azure `mstts:express-as` style, e.g. "cheerful").
    pub style: Option<String>,
    /// Role played (Azure `mstts:express-as` role, e.g. "YoungAdultMale").
    pub role: Option<String>,
}

/// One synthesis request: a chunk of one segment.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthRequest {
    /// Normalized text in the original script, for text-input backends.
    pub text: String,
    /// Tone-numbered pinyin of the same text with sandhi applied, the
    /// syllables of one word joined by `-` (`ni3-hao3, shi4-jie4.`): the
    /// phrasing the neural voice reads; [`SynthRequest::syllables`] gives
    /// the space-separated form the espeak-ng voice reads.
    pub pinyin: String,
    pub voice: VoiceSettings,
}

impl SynthRequest {
    /// The pinyin with every syllable separated by a space.
    pub fn syllables(&self) -> std::borrow::Cow<'_, str> {
        if self.pinyin.contains('-') {
            std::borrow::Cow::Owned(self.pinyin.replace('-', " "))
        } else {
            std::borrow::Cow::Borrowed(&self.pinyin)
        }
    }
}

/// Why a request failed. [`SynthError::is_retryable`] says which errors may
/// go away when the same request is sent again.
#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    /// The engine refused the request (unknown voice, bad text); not retryable.
    #[error("backend {backend}: {message}")]
    Engine { backend: String, message: String },
    #[error("backend {backend}: worker process failed")]
    Worker {
        backend: String,
        #[source]
        source: std::io::Error,
    },
    /// An HTTP error status; retryable for 408, 429 and 5xx.
    #[error("backend {backend}: HTTP {status}{}", if message.is_empty() { String::new() } else { format!(": {message}") })]
    Http {
        backend: String,
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    /// No complete answer within the backend's timeout; retryable.
    #[error("backend {backend}: no answer within {}s", after.as_secs_f32())]
    Timeout { backend: String, after: Duration },
    /// Connection refused, reset or cut off; retryable.
    #[error("backend {backend}: connection failed: {message}")]
    Connect { backend: String, message: String },
    /// The answer is not usable audio (not audio, truncated, implausibly
    /// short or long for the text); retryable.
    #[error("backend {backend}: bad audio: {message}")]
    BadAudio { backend: String, message: String },
    /// The backend cannot run as configured (missing program, …); not retryable.
    #[error("backend {backend}: {message}")]
    Setup { backend: String, message: String },
}

impl SynthError {
    /// Whether trying the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            SynthError::Worker { .. }
            | SynthError::Timeout { .. }
            | SynthError::Connect { .. }
            | SynthError::BadAudio { .. } => true,
            SynthError::Http { status, .. } => *status == 408 || *status == 429 || *status >= 500,
            SynthError::Engine { .. } | SynthError::Setup { .. } => false,
        }
    }

    /// How long the server asked us to wait (`Retry-After`).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            SynthError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The backend the error came from.
    pub fn backend(&self) -> &str {
        match self {
            SynthError::Engine { backend, .. }
            | SynthError::Worker { backend, .. }
            | SynthError::Http { backend, .. }
            | SynthError::Timeout { backend, .. }
            | SynthError::Connect { backend, .. }
            | SynthError::BadAudio { backend, .. }
            | SynthError::Setup { backend, .. } => backend,
        }
    }
}

/// Traditional → Simplified Chinese (OpenCC t2s dictionaries, embedded);
/// the text unchanged if the converter cannot load.
pub fn to_simplified(text: &str) -> String {
    static T2S: std::sync::OnceLock<Option<ferrous_opencc::OpenCC>> = std::sync::OnceLock::new();
    let converter = T2S.get_or_init(|| {
        ferrous_opencc::OpenCC::from_config(ferrous_opencc::config::BuiltinConfig::T2s)
            .map_err(
                |e| tracing::warn!(error = %e, "cannot load the Traditional→Simplified converter"),
            )
            .ok()
    });
    match converter {
        Some(c) => c.convert(text),
        None => text.to_owned(),
    }
}

/// Units a listener hears: Han characters plus runs of Latin letters or digits.
pub fn spoken_units(text: &str) -> usize {
    let mut units = 0;
    let mut in_word = false;
    for c in text.chars() {
        if crate::text::is_han(c) {
            units += 1;
            in_word = false;
        } else if c.is_alphanumeric() {
            if !in_word {
                units += 1;
            }
            in_word = true;
        } else {
            in_word = false;
        }
    }
    units
}

/// Decodes a response body and checks that its duration is plausible for
/// the text: at most 20 units a second and at least 0.02 s of audio,
/// at most 2 s per unit plus 10 s.
pub fn decode_checked(
    backend: &str,
    body: &[u8],
    req: &SynthRequest,
) -> Result<AudioClip, SynthError> {
    let clip = decode::decode(body).map_err(|e: DecodeError| SynthError::BadAudio {
        backend: backend.to_owned(),
        message: e.to_string(),
    })?;
    check_duration(backend, clip, req)
}

/// The duration check of [`decode_checked`] on an already decoded clip.
pub fn check_duration(
    backend: &str,
    clip: AudioClip,
    req: &SynthRequest,
) -> Result<AudioClip, SynthError> {
    let units = spoken_units(&req.text) as f64;
    let speed = f64::from(req.voice.speed.max(0.25));
    let secs = clip.duration_s();
    let min = (units / 20.0 / speed).max(0.02);
    let max = (units * 2.0 + 10.0) / speed;
    if secs < min || secs > max {
        return Err(SynthError::BadAudio {
            backend: backend.to_owned(),
            message: format!(
                "{secs:.2}s of audio for {units} characters (expected {min:.2}–{max:.0}s)"
            ),
        });
    }
    Ok(clip)
}

/// A text-to-speech backend.
#[async_trait]
pub trait Synthesizer: Send + Sync {
    /// The backend's name in the voices file.
    fn name(&self) -> &str;

    fn limits(&self) -> Limits {
        Limits::default()
    }

    /// Everything about this backend that changes the audio it returns
    /// (engine, version, settings), for cache keys.
    fn fingerprint(&self) -> String;

    /// The fingerprint of one request's audio, for its cache key: the
    /// backend's [`fingerprint`](Self::fingerprint), unless a change of the
    /// backend altered only some requests (a new reading of Latin words
    /// changes the chunks that have one, not a whole book).
    fn request_fingerprint(&self, _req: &SynthRequest) -> String {
        self.fingerprint()
    }

    /// The cache key of `req` sent to this backend (every cache lookup and
    /// store goes through here, so no caller can skip
    /// [`request_fingerprint`](Self::request_fingerprint)).
    fn cache_key(&self, req: &SynthRequest) -> cache::CacheKey {
        cache::CacheKey::new(&self.request_fingerprint(req), req)
    }

    /// Starts whatever the first request would otherwise wait for (worker
    /// processes), so that it gets ready while the text is prepared;
    /// `voices` are the backend voice names the work will use, most used
    /// first.
    fn warm_up(&self, _voices: &[String]) {}

    /// Blocks until the backend can run (an in-process engine loaded and
    /// its files checked). An error here is a setup error of the whole
    /// run (exit 2, nothing written), not a failure of one request.
    fn ready(&self) -> Result<(), SynthError> {
        Ok(())
    }

    async fn synthesize(&self, req: &SynthRequest) -> Result<AudioClip, SynthError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(text: &str) -> SynthRequest {
        SynthRequest {
            text: text.into(),
            pinyin: String::new(),
            voice: VoiceSettings {
                name: "v".into(),
                voice: "v".into(),
                speed: 1.0,
                ..Default::default()
            },
        }
    }

    #[test]
    fn converts_traditional_to_simplified() {
        assert_eq!(to_simplified("這些傢伙還聰明！"), "这些家伙还聪明！");
        assert_eq!(to_simplified("简体不变"), "简体不变");
    }

    #[test]
    fn counts_han_and_words() {
        assert_eq!(spoken_units("他说：OK，3D打印。"), 6);
        assert_eq!(spoken_units("……"), 0);
    }

    #[test]
    fn implausible_durations_are_retryable_bad_audio() {
        let req = request("今天天气很好，我们出去走走吧。");
        let short = AudioClip::silence(100, 16000);
        let err = check_duration("b", short, &req).unwrap_err();
        assert!(err.is_retryable());
        assert!(
            err.to_string().starts_with("backend b: bad audio: 0.10s"),
            "{err}"
        );
        let long = AudioClip::silence(60_000, 8000);
        assert!(check_duration("b", long, &req).is_err());
        let ok = AudioClip::silence(3000, 8000);
        assert!(check_duration("b", ok, &req).is_ok());
    }

    #[test]
    fn only_transient_http_errors_are_retried() {
        let http = |status| SynthError::Http {
            backend: "b".into(),
            status,
            message: String::new(),
            retry_after: None,
        };
        assert!(http(429).is_retryable());
        assert!(http(503).is_retryable());
        assert!(!http(401).is_retryable());
        assert!(!http(400).is_retryable());
        assert_eq!(http(401).to_string(), "backend b: HTTP 401");
    }
}
