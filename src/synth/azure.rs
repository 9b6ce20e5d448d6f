//! The `azure` backend: Azure Speech REST text-to-speech with SSML — voice
//! name, prosody rate and pitch, `mstts:express-as` style and role, and
//! `<phoneme alphabet="sapi">` for lexicon entries.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;

use super::http::{Remote, Secret};
use super::kind::{API_KEY_ENV, BackendKind, BuildContext, SecretVar};
use super::{Limits, SynthError, SynthRequest, Synthesizer, decode_checked, max_chars};
use crate::audio::AudioClip;

/// `[backends.NAME] type = "azure"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AzureConfig {
    /// Environment variable holding the subscription key.
    #[serde(default = "default_key_env")]
    pub api_key_env: String,
    /// Environment variable holding the region (e.g. `eastasia`).
    #[serde(default = "default_region_env")]
    pub region_env: String,
    /// Full endpoint URL instead of the region's (private endpoints, tests).
    #[serde(default)]
    pub endpoint: Option<String>,
    /// `X-Microsoft-OutputFormat`.
    #[serde(default = "default_format")]
    pub output_format: String,
    /// `xml:lang` of the document.
    #[serde(default = "default_lang")]
    pub lang: String,
    /// Word → SAPI phonemes (`"chong 2 qing 4"`), wrapped in `<phoneme>`.
    #[serde(default)]
    pub lexicon: BTreeMap<String, String>,
    /// Longest text per request, in characters.
    #[serde(default = "max_chars::<400>")]
    pub max_chars: usize,
}

fn default_key_env() -> String {
    "AZURE_SPEECH_KEY".into()
}

fn default_region_env() -> String {
    "AZURE_SPEECH_REGION".into()
}

fn default_format() -> String {
    "riff-24khz-16bit-mono-pcm".into()
}

fn default_lang() -> String {
    "zh-CN".into()
}

impl BackendKind for AzureConfig {
    fn build(&self, ctx: &BuildContext<'_>) -> Result<Arc<dyn Synthesizer>, SynthError> {
        let azure = Azure::new(
            ctx.name,
            self.clone(),
            ctx.secret(Some(&self.api_key_env)),
            ctx.secret(Some(&self.region_env)).expose(),
            ctx.timeout,
            ctx.in_flight(4),
        )?;
        Ok(Arc::new(azure.with_max_body(ctx.max_body)))
    }

    /// The key, and the region unless `endpoint` is given.
    fn secrets(&self) -> Vec<SecretVar<'_>> {
        vec![
            SecretVar {
                key: API_KEY_ENV,
                var: &self.api_key_env,
                required: true,
            },
            SecretVar {
                key: "region_env",
                var: &self.region_env,
                required: self.endpoint.is_none(),
            },
        ]
    }
}

/// The `azure` backend.
pub struct Azure {
    remote: Remote,
    config: AzureConfig,
    url: String,
}

impl Azure {
    /// `region` is the value of `region_env` (unused with `endpoint`).
    pub fn new(
        name: &str,
        config: AzureConfig,
        secret: Secret,
        region: &str,
        timeout: Duration,
        max_in_flight: usize,
    ) -> Result<Azure, SynthError> {
        let url = config.endpoint.clone().unwrap_or_else(|| {
            format!("https://{region}.tts.speech.microsoft.com/cognitiveservices/v1")
        });
        Ok(Azure {
            remote: Remote::new(name, secret, timeout, max_in_flight, true)?,
            config,
            url,
        })
    }

    /// Reads no answer past `bytes` (`max_body_mb`).
    pub fn with_max_body(mut self, bytes: u64) -> Azure {
        self.remote.set_max_body(bytes);
        self
    }

    /// The SSML document for one request.
    pub fn ssml(&self, req: &SynthRequest) -> String {
        let v = &req.voice;
        let mut body = self.text_with_lexicon(&req.text);
        let rate = ((v.speed - 1.0) * 100.0).round() as i32;
        let pitch = v.pitch.map_or(0, |p| i32::from(p) - 50);
        if rate != 0 || pitch != 0 {
            body = format!(r#"<prosody rate="{rate:+}%" pitch="{pitch:+}%">{body}</prosody>"#);
        }
        if v.style.is_some() || v.role.is_some() {
            let mut attrs = String::new();
            if let Some(style) = &v.style {
                attrs.push_str(&format!(r#" style="{}""#, escape(style)));
            }
            if let Some(role) = &v.role {
                attrs.push_str(&format!(r#" role="{}""#, escape(role)));
            }
            body = format!("<mstts:express-as{attrs}>{body}</mstts:express-as>");
        }
        format!(
            r#"<speak version="1.0" xmlns="http://www.w3.org/2001/10/synthesis" xmlns:mstts="https://www.w3.org/2001/mstts" xml:lang="{}"><voice name="{}">{body}</voice></speak>"#,
            escape(&self.config.lang),
            escape(&v.voice)
        )
    }

    /// Escapes the text and wraps lexicon words (longest first) in `<phoneme>`.
    fn text_with_lexicon(&self, text: &str) -> String {
        let mut words: Vec<(&String, &String)> = self.config.lexicon.iter().collect();
        words.sort_by_key(|(w, _)| std::cmp::Reverse(w.chars().count()));
        let mut out = String::new();
        let mut rest = text;
        'outer: while !rest.is_empty() {
            for (word, ph) in &words {
                if !word.is_empty()
                    && let Some(after) = rest.strip_prefix(word.as_str())
                {
                    out.push_str(&format!(
                        r#"<phoneme alphabet="sapi" ph="{}">{}</phoneme>"#,
                        escape(ph),
                        escape(word)
                    ));
                    rest = after;
                    continue 'outer;
                }
            }
            let c = rest.chars().next().expect("rest is not empty");
            out.push_str(&escape(&c.to_string()));
            rest = &rest[c.len_utf8()..];
        }
        out
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

#[async_trait]
impl Synthesizer for Azure {
    fn name(&self) -> &str {
        &self.remote.name
    }

    fn limits(&self) -> Limits {
        self.remote.limits(self.config.max_chars)
    }

    fn fingerprint(&self) -> String {
        format!(
            "azure/{}/{}/{}/{:?}",
            self.url, self.config.output_format, self.config.lang, self.config.lexicon
        )
    }

    async fn synthesize(&self, req: &SynthRequest) -> Result<AudioClip, SynthError> {
        let request = self
            .remote
            .client()
            .post(&self.url)
            .header("Ocp-Apim-Subscription-Key", self.remote.secret.expose())
            .header(reqwest::header::CONTENT_TYPE, "application/ssml+xml")
            .header("X-Microsoft-OutputFormat", &self.config.output_format)
            .body(self.ssml(req));
        let body = self.remote.send(request, req).await?;
        decode_checked(&self.remote.name, &body, req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::VoiceSettings;

    #[test]
    fn ssml_carries_voice_prosody_style_and_lexicon() {
        let config: AzureConfig = toml::from_str(
            "endpoint = \"http://h/v1\"\nlexicon = { \"重庆\" = \"chong 2 qing 4\", \"重\" = \"zhong 4\" }",
        )
        .unwrap();
        let b = Azure::new(
            "az",
            config,
            Secret::default(),
            "",
            Duration::from_secs(1),
            1,
        )
        .unwrap();
        let req = SynthRequest {
            text: "重庆<到了>".into(),
            pinyin: String::new(),
            voice: VoiceSettings {
                name: "hero".into(),
                voice: "zh-CN-YunxiNeural".into(),
                speed: 1.2,
                pitch: Some(55),
                style: Some("cheerful".into()),
                role: Some("Boy".into()),
            },
        };
        assert_eq!(
            b.ssml(&req),
            concat!(
                r#"<speak version="1.0" xmlns="http://www.w3.org/2001/10/synthesis" xmlns:mstts="https://www.w3.org/2001/mstts" xml:lang="zh-CN">"#,
                r#"<voice name="zh-CN-YunxiNeural"><mstts:express-as style="cheerful" role="Boy">"#,
                r#"<prosody rate="+20%" pitch="+5%"><phoneme alphabet="sapi" ph="chong 2 qing 4">重庆</phoneme>&lt;到了&gt;</prosody>"#,
                r#"</mstts:express-as></voice></speak>"#
            )
        );
    }

    #[test]
    fn region_builds_the_endpoint() {
        let config: AzureConfig = toml::from_str("").unwrap();
        let b = Azure::new(
            "az",
            config,
            Secret::default(),
            "eastasia",
            Duration::from_secs(1),
            1,
        )
        .unwrap();
        assert_eq!(
            b.url,
            "https://eastasia.tts.speech.microsoft.com/cognitiveservices/v1"
        );
    }
}
