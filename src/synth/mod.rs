//! Stage 3 — synthesis client: one small trait, one implementation per
//! backend, built from the voices file.

pub mod espeak;

use async_trait::async_trait;

use crate::audio::AudioClip;

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

/// How one voice should sound, as resolved from the voices file.
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceSettings {
    /// Name of the voice in the voices file (recorded in the manifest).
    pub name: String,
    /// Backend-specific voice id.
    pub voice: String,
    /// Speed factor, 1.0 = the backend's normal pace.
    pub speed: f32,
    /// Backend-specific pitch (espeak-ng: 0–99).
    pub pitch: Option<u8>,
}

/// One synthesis request: a chunk of one segment.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthRequest {
    /// Normalized text in the original script, for text-input backends.
    pub text: String,
    /// Tone-numbered pinyin of the same text, for the espeak-ng voice.
    pub pinyin: String,
    pub voice: VoiceSettings,
}

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    #[error("backend {backend}: {message}")]
    Engine { backend: String, message: String },
    #[error("backend {backend}: worker process failed")]
    Worker {
        backend: String,
        #[source]
        source: std::io::Error,
    },
}

impl SynthError {
    /// Whether trying the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, SynthError::Worker { .. })
    }
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

    async fn synthesize(&self, req: &SynthRequest) -> Result<AudioClip, SynthError>;
}
