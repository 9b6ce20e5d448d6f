//! The backend factory: every backend of a voices file built, with its
//! limiter, retry policy and fallback, into one synthesis client.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::{BackendConfig, VoicesConfig};
use crate::audio::AudioClip;
use crate::synth::cache::Cache;
use crate::synth::client::{ClientBackend, SynthClient};
use crate::synth::rate_limit::Limiter;
use crate::synth::{BuildContext, Limits, SynthError, SynthRequest, Synthesizer};

impl VoicesConfig {
    /// Builds every backend. `worker_program` is the binary that can run
    /// espeak-ng workers (normally this executable). A backend that cannot
    /// be built fails each of its requests with the reason.
    pub fn build_backends(
        &self,
        worker_program: Option<PathBuf>,
    ) -> BTreeMap<String, Arc<dyn Synthesizer>> {
        self.backends
            .iter()
            .map(|(name, config)| {
                let backend = self
                    .build_backend(name, config, worker_program.as_deref())
                    .unwrap_or_else(|e| Arc::new(Unavailable(e.to_string(), name.clone())));
                (name.clone(), backend)
            })
            .collect()
    }

    fn build_backend(
        &self,
        name: &str,
        config: &BackendConfig,
        worker_program: Option<&Path>,
    ) -> Result<Arc<dyn Synthesizer>, SynthError> {
        let client = &self.clients[name];
        config.kind().build(&BuildContext {
            name,
            timeout: client.timeout(),
            max_in_flight: client.max_in_flight,
            max_body: client.max_body(),
            worker_program,
            secrets: &|var| self.secret(var),
        })
    }

    /// Builds the synthesis client: every backend with its limiter, retry
    /// policy and fallback, and the cache when `cache` is given.
    pub fn build_client(
        &self,
        worker_program: Option<PathBuf>,
        cache: Option<Cache>,
    ) -> SynthClient {
        let backends = self
            .build_backends(worker_program)
            .into_iter()
            .map(|(name, synth)| {
                let client = &self.clients[&name];
                let entry = ClientBackend {
                    limiter: Limiter::new(synth.limits().max_in_flight, client.rate()),
                    retry: client.retry_policy(),
                    // Network backends time out on their own at `timeout`;
                    // this outer limit catches hung local engines (some
                    // need longer unless the file says otherwise).
                    timeout: match (
                        self.backends[&name].kind().default_request_limit(),
                        client.timeout_s,
                    ) {
                        (Some(limit), None) => limit,
                        _ => client.timeout() + Duration::from_secs(1),
                    },
                    fallback: client
                        .fallback
                        .clone()
                        .map(|f| (f, client.fallback_voice.clone())),
                    synth,
                };
                (name, entry)
            })
            .collect();
        SynthClient::new(backends, cache)
    }
}

/// A backend that could not be built: every request fails with the reason.
struct Unavailable(String, String);

#[async_trait]
impl Synthesizer for Unavailable {
    fn name(&self) -> &str {
        &self.1
    }

    fn limits(&self) -> Limits {
        Limits::default()
    }

    fn fingerprint(&self) -> String {
        format!("unavailable/{}", self.1)
    }

    async fn synthesize(&self, _req: &SynthRequest) -> Result<AudioClip, SynthError> {
        Err(SynthError::Setup {
            backend: self.1.clone(),
            message: self.0.clone(),
        })
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// One backend of every type but kokoro (whose files may be missing),
    /// with settings off their defaults.
    pub(crate) const EVERY_TYPE: &str = r#"
[backends.local]
type = "espeak"
rate = 200
max_in_flight = 3

[backends.server]
type = "openai"
base_url = "http://127.0.0.1:8000/v1/"
api_key_env = "TTS_API_KEY"
instructions = "calm"

[backends.template]
type = "http"
method = "post"
url = "http://h/tts?t={text}"
headers = { X-Key = "{key}" }
json = { text = "{text}", speed = "{speed}" }
api_key_env = "TTS_API_KEY"
max_in_flight = 5
timeout_s = 5

[backends.cloud]
type = "azure"
lexicon = { "重庆" = "chong 2 qing 4" }

[backends.piper]
type = "command"
program = "piper"
args = ["--output_file", "{out}"]
stdin = true
max_chars = 99

[voices.a]
backend = "local"
voice = "cmn-latn-pinyin"

[voices.b]
backend = "server"
voice = "alloy"

[voices.c]
backend = "template"
voice = "x"

[voices.d]
backend = "cloud"
voice = "zh-CN-YunxiNeural"

[voices.e]
backend = "piper"
voice = "x"

[casting]
narrator = "a"
"#;

    pub(crate) fn every_env(name: &str) -> Option<String> {
        match name {
            "TTS_API_KEY" => Some("sk-every-type".into()),
            "AZURE_SPEECH_KEY" => Some("az-every-type".into()),
            "AZURE_SPEECH_REGION" => Some("eastasia".into()),
            _ => None,
        }
    }

    /// Fingerprints are cache keys: a change here invalidates every cache.
    #[test]
    fn fingerprints_and_limits_of_every_type_stay_put() {
        let config = VoicesConfig::parse_with_env(EVERY_TYPE, "e.toml", &every_env)
            .unwrap_or_else(|e| panic!("{e}"));
        let backends = config.build_backends(Some(PathBuf::from("/bin/true")));
        let got: Vec<(String, String, usize, usize)> = backends
            .iter()
            .map(|(name, b)| {
                let limits = b.limits();
                (
                    name.clone(),
                    b.fingerprint(),
                    limits.max_chars,
                    limits.max_in_flight,
                )
            })
            .collect();
        let expected = [
            (
                "cloud",
                r#"azure/https://eastasia.tts.speech.microsoft.com/cognitiveservices/v1/riff-24khz-16bit-mono-pcm/zh-CN/{"重庆": "chong 2 qing 4"}"#,
                400,
                4,
            ),
            ("local", "espeak-ng/rate=200", 120, 3),
            (
                "piper",
                r#"command/piper/["--output_file", "{out}"]/true/text"#,
                99,
                1,
            ),
            (
                "server",
                r#"openai/http://127.0.0.1:8000/v1/audio/speech/tts-1/wav/Some("calm")"#,
                300,
                4,
            ),
            (
                "template",
                r#"http/post http://h/tts?t={text}/{"X-Key": "{key}"}/Some({"speed": String("{speed}"), "text": String("{text}")})/None/None/Audio/None/zh"#,
                150,
                5,
            ),
        ];
        let expected: Vec<(String, String, usize, usize)> = expected
            .iter()
            .map(|(n, f, c, i)| (n.to_string(), f.to_string(), *c, *i))
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn backends_name_their_secrets() {
        // Each secret is required, at the key naming it.
        for (missing, key) in [
            ("TTS_API_KEY", "backends.server.api_key_env"),
            ("AZURE_SPEECH_KEY", "backends.cloud.api_key_env"),
            ("AZURE_SPEECH_REGION", "backends.cloud.region_env"),
        ] {
            let env = |name: &str| (name != missing).then(|| every_env(name)).flatten();
            let err = VoicesConfig::parse_with_env(EVERY_TYPE, "e.toml", &env)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!(
                    ": {key}: environment variable {missing} is not set"
                )),
                "{err}"
            );
        }
        // The region is not needed with an endpoint.
        let text = EVERY_TYPE.replace(
            "type = \"azure\"",
            "type = \"azure\"\nendpoint = \"http://h/v1\"",
        );
        let env = |name: &str| {
            (name != "AZURE_SPEECH_REGION")
                .then(|| every_env(name))
                .flatten()
        };
        let config = VoicesConfig::parse_with_env(&text, "e.toml", &env).unwrap();
        assert_eq!(
            config.build_backends(None)["cloud"].fingerprint(),
            r#"azure/http://h/v1/riff-24khz-16bit-mono-pcm/zh-CN/{"重庆": "chong 2 qing 4"}"#
        );
        assert!(!format!("{config:?}").contains("az-every-type"));
    }
}
