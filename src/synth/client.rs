//! The synthesis client: every backend behind its limiter, retry policy and
//! optional fallback, with the content-addressed cache in front.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::cache::{Cache, CacheKey};
use super::rate_limit::Limiter;
use super::retry::RetryPolicy;
use super::{SynthError, SynthRequest, Synthesizer};
use crate::audio::AudioClip;

/// One backend with what governs its use.
pub struct ClientBackend {
    pub synth: Arc<dyn Synthesizer>,
    pub limiter: Limiter,
    pub retry: RetryPolicy,
    /// Backend to use when this one fails for good, and the voice id to ask
    /// it for (`None` = the same voice id).
    pub fallback: Option<(String, Option<String>)>,
    /// Longest a request may take, whatever the backend does (a hung local
    /// engine or program counts as a timeout and is retried).
    pub timeout: Duration,
}

/// A synthesized chunk and where it came from.
#[derive(Debug, Clone)]
pub struct Synthesized {
    pub clip: AudioClip,
    /// The backend that produced it (differs from the one asked after a fallback).
    pub backend: String,
    /// The backend voice id it was made with.
    pub voice: String,
    /// Whether a fallback backend made it.
    pub fallback: bool,
    pub cached: bool,
}

/// Counters of one run.
#[derive(Debug, Default)]
pub struct ClientStats {
    /// Requests sent to backends (every attempt counts).
    pub requests: AtomicUsize,
    /// Chunks served from the cache.
    pub cache_hits: AtomicUsize,
    /// Chunks that failed for good.
    pub failures: AtomicUsize,
    /// Chunks a fallback backend synthesized.
    pub fallbacks: AtomicUsize,
    /// Most bytes of finished clips that waited for the mixer at once
    /// (bounded by [`crate::pipeline`]'s backpressure).
    pub ahead_peak_bytes: AtomicUsize,
}

/// All backends of a voices file, ready to use.
pub struct SynthClient {
    backends: BTreeMap<String, ClientBackend>,
    cache: Option<Cache>,
    pub stats: ClientStats,
}

impl SynthClient {
    pub fn new(backends: BTreeMap<String, ClientBackend>, cache: Option<Cache>) -> SynthClient {
        SynthClient {
            backends,
            cache,
            stats: ClientStats::default(),
        }
    }

    /// The backend called `name`.
    pub fn backend(&self, name: &str) -> Option<&Arc<dyn Synthesizer>> {
        self.backends.get(name).map(|b| &b.synth)
    }

    /// Backends by name.
    pub fn backends(&self) -> impl Iterator<Item = (&str, &Arc<dyn Synthesizer>)> {
        self.backends.iter().map(|(n, b)| (n.as_str(), &b.synth))
    }

    pub fn cache(&self) -> Option<&Cache> {
        self.cache.as_ref()
    }

    /// `backend` followed by its fallbacks (each once), with the request
    /// each of them gets.
    fn chain(&self, backend: &str, req: &SynthRequest) -> Vec<(&str, SynthRequest)> {
        let mut chain: Vec<(&str, SynthRequest)> = Vec::new();
        let mut name = backend;
        let mut req = req.clone();
        while let Some((key, entry)) = self.backends.get_key_value(name) {
            if chain.iter().any(|(n, _)| *n == key.as_str()) {
                break;
            }
            chain.push((key.as_str(), req.clone()));
            match &entry.fallback {
                Some((next, voice)) => {
                    if let Some(voice) = voice {
                        req.voice.voice = voice.clone();
                    }
                    name = next;
                }
                None => break,
            }
        }
        chain
    }

    /// Whether `req` for `backend` itself is in the cache. A clip its
    /// fallback made does not count: the next run asks `backend` again.
    pub fn is_cached(&self, backend: &str, req: &SynthRequest) -> bool {
        let Some(cache) = &self.cache else {
            return false;
        };
        self.chain(backend, req)
            .first()
            .is_some_and(|(name, req)| cache.contains(&self.backends[*name].synth.cache_key(req)))
    }

    /// The cached clip of `req` for `backend`, else for one of its
    /// fallbacks (what a queue worker made), without sending anything
    /// (blocking file or object-store I/O).
    pub fn cached(&self, backend: &str, req: &SynthRequest) -> Option<AudioClip> {
        let cache = self.cache.as_ref()?;
        self.chain(backend, req)
            .iter()
            .find_map(|(name, req)| cache.get(&self.backends[*name].synth.cache_key(req)))
    }

    /// The cached clip under `key` (blocking I/O on the blocking pool).
    async fn cache_get(&self, key: &CacheKey) -> Option<AudioClip> {
        let cache = self.cache.clone()?;
        let key = key.clone();
        tokio::task::spawn_blocking(move || cache.get(&key))
            .await
            .ok()
            .flatten()
    }

    /// Synthesizes `req` with `backend`, each backend of the chain in turn:
    /// its own cache entry, else the backend with retries; a fallback is
    /// asked (cache first) only when the backend before it failed for good.
    /// Cache entries are keyed by the backend and voice that made them, so
    /// a fallback's clip is never served for the primary. Fresh audio is
    /// stored in the cache.
    pub async fn synthesize(
        &self,
        backend: &str,
        req: &SynthRequest,
    ) -> Result<Synthesized, SynthError> {
        let chain = self.chain(backend, req);
        if chain.is_empty() {
            return Err(SynthError::Setup {
                backend: backend.to_owned(),
                message: "no such backend".into(),
            });
        }
        let mut first_error = None;
        for (i, (name, req)) in chain.iter().enumerate() {
            let key = self.backends[*name].synth.cache_key(req);
            let done = |clip, cached| Synthesized {
                clip,
                backend: (*name).to_owned(),
                voice: req.voice.voice.clone(),
                fallback: i > 0,
                cached,
            };
            if let Some(clip) = self.cache_get(&key).await {
                self.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
                return Ok(done(clip, true));
            }
            match self.with_retries(&self.backends[*name], req).await {
                Ok(clip) => {
                    let clip = match self.cache.clone() {
                        Some(cache) => {
                            let stored = tokio::task::spawn_blocking(move || {
                                let result = cache.put(&key, &clip);
                                (clip, result, cache)
                            })
                            .await;
                            match stored {
                                Ok((clip, result, cache)) => {
                                    if let Err(e) = result {
                                        tracing::warn!(cache = %cache, error = %e, "cannot store in cache");
                                    }
                                    clip
                                }
                                Err(e) => {
                                    return Err(SynthError::Setup {
                                        backend: (*name).to_owned(),
                                        message: format!("cache task failed: {e}"),
                                    });
                                }
                            }
                        }
                        None => clip,
                    };
                    if i > 0 {
                        self.stats.fallbacks.fetch_add(1, Ordering::Relaxed);
                    }
                    return Ok(done(clip, false));
                }
                Err(e) => {
                    if i + 1 < chain.len() {
                        tracing::warn!(backend = *name, error = %e, "backend failed; trying its fallback");
                    }
                    first_error.get_or_insert(e);
                }
            }
        }
        self.stats.failures.fetch_add(1, Ordering::Relaxed);
        Err(first_error.expect("the chain is not empty"))
    }

    async fn with_retries(
        &self,
        backend: &ClientBackend,
        req: &SynthRequest,
    ) -> Result<AudioClip, SynthError> {
        let mut retry = 0;
        loop {
            let result = {
                let _permit = backend.limiter.acquire().await;
                self.stats.requests.fetch_add(1, Ordering::Relaxed);
                tokio::time::timeout(backend.timeout, backend.synth.synthesize(req))
                    .await
                    .unwrap_or_else(|_| {
                        Err(SynthError::Timeout {
                            backend: backend.synth.name().to_owned(),
                            after: backend.timeout,
                        })
                    })
            };
            match result {
                Err(e) if e.is_retryable() && retry < backend.retry.retries => {
                    retry += 1;
                    let delay = backend.retry.delay(retry, e.retry_after());
                    tracing::warn!(
                        backend = backend.synth.name(),
                        retry,
                        delay_ms = delay.as_millis() as u64,
                        error = %e,
                        "retrying"
                    );
                    tokio::time::sleep(delay).await;
                }
                other => return other,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{Limits, VoiceSettings};
    use async_trait::async_trait;
    use std::sync::Mutex;
    use std::time::Duration;

    /// Fails with the scripted errors, then answers with a tone.
    struct Scripted {
        name: String,
        failures: Mutex<Vec<SynthError>>,
        voices: Mutex<Vec<String>>,
    }

    #[async_trait]
    impl Synthesizer for Scripted {
        fn name(&self) -> &str {
            &self.name
        }
        fn limits(&self) -> Limits {
            Limits::default()
        }
        fn fingerprint(&self) -> String {
            format!("scripted/{}", self.name)
        }
        async fn synthesize(&self, req: &SynthRequest) -> Result<AudioClip, SynthError> {
            self.voices.lock().unwrap().push(req.voice.voice.clone());
            match self.failures.lock().unwrap().pop() {
                Some(e) => Err(e),
                None => Ok(AudioClip::new(vec![0.25; 800], 8000)),
            }
        }
    }

    fn entry(
        name: &str,
        failures: Vec<SynthError>,
        fallback: Option<&str>,
    ) -> (String, ClientBackend) {
        let synth = Scripted {
            name: name.into(),
            failures: Mutex::new(failures),
            voices: Mutex::new(Vec::new()),
        };
        (
            name.to_owned(),
            ClientBackend {
                synth: Arc::new(synth),
                limiter: Limiter::new(2, None),
                retry: RetryPolicy {
                    retries: 2,
                    base: Duration::from_millis(1),
                    max: Duration::from_millis(5),
                },
                fallback: fallback.map(|f| (f.to_owned(), Some("backup-voice".to_owned()))),
                timeout: Duration::from_secs(5),
            },
        )
    }

    fn http(status: u16) -> SynthError {
        SynthError::Http {
            backend: "a".into(),
            status,
            message: String::new(),
            retry_after: None,
        }
    }

    fn req() -> SynthRequest {
        SynthRequest {
            text: "好。".into(),
            pinyin: "hao3.".into(),
            voice: VoiceSettings {
                name: "n".into(),
                voice: "main-voice".into(),
                speed: 1.0,
                ..Default::default()
            },
        }
    }

    #[tokio::test]
    async fn retries_transient_errors_then_caches() {
        let dir = tempfile::tempdir().unwrap();
        let client = SynthClient::new(
            [entry("a", vec![http(503), http(500)], None)].into(),
            Some(Cache::new(dir.path())),
        );
        let got = client.synthesize("a", &req()).await.unwrap();
        assert!(!got.cached);
        assert_eq!(client.stats.requests.load(Ordering::Relaxed), 3);
        let again = client.synthesize("a", &req()).await.unwrap();
        assert!(again.cached);
        assert_eq!(again.clip, got.clip);
        assert_eq!(client.stats.requests.load(Ordering::Relaxed), 3);
    }

    #[tokio::test]
    async fn permanent_errors_go_to_the_fallback_with_its_voice() {
        let client = SynthClient::new(
            [
                entry("a", vec![http(401)], Some("b")),
                entry("b", vec![], None),
            ]
            .into(),
            None,
        );
        let got = client.synthesize("a", &req()).await.unwrap();
        assert_eq!(got.backend, "b");
        assert_eq!(got.voice, "backup-voice");
        assert!(got.fallback);
        assert_eq!(client.stats.requests.load(Ordering::Relaxed), 2);
        let b = client.backend("b").unwrap();
        assert_eq!(b.name(), "b");
    }

    #[tokio::test]
    async fn exhausted_retries_report_the_first_error() {
        let client = SynthClient::new(
            [entry("a", vec![http(500), http(500), http(502)], None)].into(),
            None,
        );
        let err = client.synthesize("a", &req()).await.unwrap_err();
        assert_eq!(err.to_string(), "backend a: HTTP 500");
        assert_eq!(client.stats.requests.load(Ordering::Relaxed), 3);
        assert_eq!(client.stats.failures.load(Ordering::Relaxed), 1);
    }

    /// Never answers.
    struct Hung;

    #[async_trait]
    impl Synthesizer for Hung {
        fn name(&self) -> &str {
            "hung"
        }
        fn fingerprint(&self) -> String {
            "hung".into()
        }
        async fn synthesize(&self, _req: &SynthRequest) -> Result<AudioClip, SynthError> {
            std::future::pending().await
        }
    }

    #[tokio::test]
    async fn a_hung_backend_times_out_and_is_retried() {
        let entry = ClientBackend {
            synth: Arc::new(Hung),
            limiter: Limiter::new(1, None),
            retry: RetryPolicy {
                retries: 2,
                base: Duration::from_millis(1),
                max: Duration::from_millis(5),
            },
            fallback: None,
            timeout: Duration::from_millis(50),
        };
        let client = SynthClient::new([("hung".to_owned(), entry)].into(), None);
        let err = client.synthesize("hung", &req()).await.unwrap_err();
        assert_eq!(err.to_string(), "backend hung: no answer within 0.05s");
        assert_eq!(client.stats.requests.load(Ordering::Relaxed), 3);
    }
}
