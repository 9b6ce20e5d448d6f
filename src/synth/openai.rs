//! The `openai` backend: any server with OpenAI's `POST {base_url}/audio/speech`
//! (OpenAI itself, and the CosyVoice, IndexTTS, Kokoro … wrappers that copy it).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;

use super::http::{Remote, Secret};
use super::kind::{BackendKind, BuildContext, KeyProblem, SecretVar};
use super::{Limits, SynthError, SynthRequest, Synthesizer, decode_checked, max_chars};
use crate::audio::AudioClip;

/// `[backends.NAME] type = "openai"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenaiConfig {
    /// e.g. `http://127.0.0.1:8000/v1`; `/audio/speech` is appended.
    pub base_url: String,
    /// Environment variable holding the bearer key (optional).
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default = "default_model")]
    pub model: String,
    /// `wav` (default), `mp3`, `flac`, `aac` or `pcm` (raw 16-bit 24 kHz).
    #[serde(default = "default_format")]
    pub response_format: String,
    /// Optional style prompt (`instructions`) for models that take one.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Longest text per request, in characters.
    #[serde(default = "max_chars::<300>")]
    pub max_chars: usize,
}

fn default_model() -> String {
    "tts-1".into()
}

fn default_format() -> String {
    "wav".into()
}

impl BackendKind for OpenaiConfig {
    fn build(&self, ctx: &BuildContext<'_>) -> Result<Arc<dyn Synthesizer>, SynthError> {
        let secret = ctx.secret(self.api_key_env.as_deref());
        let openai = Openai::new(
            ctx.name,
            self.clone(),
            secret,
            ctx.timeout,
            ctx.in_flight(4),
        )?;
        Ok(Arc::new(openai.with_max_body(ctx.max_body)))
    }

    fn check(&self, _voices: &[(String, &str)]) -> Result<(), KeyProblem> {
        if !self.base_url.starts_with("http://") && !self.base_url.starts_with("https://") {
            return Err((
                "base_url".into(),
                "must start with http:// or https://".into(),
            ));
        }
        match self.response_format.as_str() {
            "wav" | "mp3" | "flac" | "aac" | "pcm" => {}
            "opus" => {
                return Err((
                    "response_format".into(),
                    "Opus answers cannot be decoded (no Opus decoder in symphonia 0.5); use wav, mp3, flac, aac or pcm".into(),
                ));
            }
            other => {
                return Err((
                    "response_format".into(),
                    format!("'{other}' is not wav, mp3, flac, aac or pcm"),
                ));
            }
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

/// The `openai` backend.
pub struct Openai {
    remote: Remote,
    config: OpenaiConfig,
    url: String,
}

impl Openai {
    pub fn new(
        name: &str,
        config: OpenaiConfig,
        secret: Secret,
        timeout: Duration,
        max_in_flight: usize,
    ) -> Result<Openai, SynthError> {
        let credentials = !secret.expose().is_empty();
        Ok(Openai {
            remote: Remote::new(name, secret, timeout, max_in_flight, credentials)?,
            url: format!("{}/audio/speech", config.base_url.trim_end_matches('/')),
            config,
        })
    }

    /// Reads no answer past `bytes` (`max_body_mb`).
    pub fn with_max_body(mut self, bytes: u64) -> Openai {
        self.remote.set_max_body(bytes);
        self
    }

    fn body(&self, req: &SynthRequest) -> serde_json::Value {
        let mut body = serde_json::json!({
            "model": self.config.model,
            "voice": req.voice.voice,
            "input": req.text,
            "response_format": self.config.response_format,
            "speed": req.voice.speed,
        });
        if let Some(instructions) = &self.config.instructions {
            body["instructions"] = instructions.clone().into();
        }
        body
    }
}

#[async_trait]
impl Synthesizer for Openai {
    fn name(&self) -> &str {
        &self.remote.name
    }

    fn limits(&self) -> Limits {
        self.remote.limits(self.config.max_chars)
    }

    fn fingerprint(&self) -> String {
        format!(
            "openai/{}/{}/{}/{:?}",
            self.url, self.config.model, self.config.response_format, self.config.instructions
        )
    }

    async fn synthesize(&self, req: &SynthRequest) -> Result<AudioClip, SynthError> {
        let mut request = self
            .remote
            .client()
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(self.body(req).to_string());
        let secret = &self.remote.secret;
        if !secret.expose().is_empty() {
            request = request.bearer_auth(secret.expose());
        }
        let body = self.remote.send(request, req).await?;
        if self.config.response_format == "pcm" {
            // OpenAI's raw format: 16-bit little-endian mono at 24 kHz.
            return self.remote.pcm(&body, 24000, req);
        }
        decode_checked(&self.remote.name, &body, req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::VoiceSettings;

    #[test]
    fn request_body_follows_the_openai_shape() {
        let config: OpenaiConfig = toml::from_str("base_url = \"http://h/v1/\"").unwrap();
        let b = Openai::new("s", config, Secret::default(), Duration::from_secs(1), 1).unwrap();
        assert_eq!(b.url, "http://h/v1/audio/speech");
        let req = SynthRequest {
            text: "你好。".into(),
            pinyin: "ni3 hao3.".into(),
            voice: VoiceSettings {
                name: "hero".into(),
                voice: "alloy".into(),
                speed: 1.5,
                ..Default::default()
            },
        };
        assert_eq!(
            b.body(&req),
            serde_json::json!({"model": "tts-1", "voice": "alloy", "input": "你好。", "response_format": "wav", "speed": 1.5})
        );
    }

    #[test]
    fn bad_settings_name_the_key() {
        let config: OpenaiConfig =
            toml::from_str("base_url = \"h\"\nresponse_format = \"ogg\"").unwrap();
        assert_eq!(config.check(&[]).unwrap_err().0, "base_url");
        let config: OpenaiConfig =
            toml::from_str("base_url = \"http://h\"\nresponse_format = \"opus\"").unwrap();
        let (key, message) = config.check(&[]).unwrap_err();
        assert_eq!(key, "response_format");
        assert!(message.contains("no Opus decoder"), "{message}");
    }
}
