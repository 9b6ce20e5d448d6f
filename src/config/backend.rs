//! The backend factory: every backend of a voices file built, with its
//! limiter, retry policy and fallback, into one synthesis client.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::{BackendConfig, VoicesConfig};
use crate::audio::AudioClip;
use crate::synth::azure::Azure;
use crate::synth::cache::Cache;
use crate::synth::client::{ClientBackend, SynthClient};
use crate::synth::command::CommandBackend;
use crate::synth::espeak::Espeak;
use crate::synth::http::Http;
use crate::synth::kokoro::Kokoro;
use crate::synth::openai::Openai;
use crate::synth::rate_limit::Limiter;
use crate::synth::{Limits, SynthError, SynthRequest, Synthesizer};

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
                    .build_backend(name, config, worker_program.clone())
                    .unwrap_or_else(|e| Arc::new(Unavailable(e.to_string(), name.clone())));
                (name.clone(), backend)
            })
            .collect()
    }

    fn build_backend(
        &self,
        name: &str,
        config: &BackendConfig,
        worker_program: Option<PathBuf>,
    ) -> Result<Arc<dyn Synthesizer>, SynthError> {
        let client = &self.clients[name];
        let timeout = client.timeout();
        let in_flight = client
            .max_in_flight
            .unwrap_or_else(|| config.default_in_flight());
        Ok(match config {
            BackendConfig::Espeak(c) => {
                let mut c = c.clone();
                if c.workers == 0
                    && let Some(n) = client.max_in_flight
                {
                    c.workers = n;
                }
                Arc::new(Espeak::new(name, c, worker_program))
            }
            BackendConfig::Kokoro(c) => Arc::new(Kokoro::new(name, c.clone())),
            BackendConfig::Openai(c) => Arc::new(
                Openai::new(
                    name,
                    c.clone(),
                    self.secret(c.api_key_env.as_ref()),
                    timeout,
                    in_flight,
                )?
                .with_max_body(client.max_body()),
            ),
            BackendConfig::Http(c) => Arc::new(
                Http::new(
                    name,
                    c.clone(),
                    self.secret(c.api_key_env.as_ref()),
                    timeout,
                    in_flight,
                )?
                .with_max_body(client.max_body()),
            ),
            BackendConfig::Azure(c) => Arc::new(
                Azure::new(
                    name,
                    c.clone(),
                    self.secret(Some(&c.api_key_env)),
                    self.secret(Some(&c.region_env)).expose(),
                    timeout,
                    in_flight,
                )?
                .with_max_body(client.max_body()),
            ),
            BackendConfig::Command(c) => {
                Arc::new(CommandBackend::new(name, c.clone(), timeout, in_flight))
            }
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
                    // this outer limit catches hung local engines. A neural
                    // engine on a busy CPU may need minutes for a long
                    // chunk: an hour unless the file says otherwise.
                    timeout: match (&self.backends[&name], client.timeout_s) {
                        (BackendConfig::Kokoro(_), None) => Duration::from_secs(3600),
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
