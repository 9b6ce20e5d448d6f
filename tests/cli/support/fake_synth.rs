//! An in-process synthesizer for fast pipeline tests: each request gets
//! [`wav::tone`] of its text and voice at once (no network, no process), the
//! texts asked for are recorded, and requests holding a chosen text fail.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tingshu::audio::AudioClip;
use tingshu::synth::cache::Cache;
use tingshu::synth::client::ClientBackend;
use tingshu::synth::rate_limit::Limiter;
use tingshu::synth::retry::RetryPolicy;
use tingshu::synth::{Limits, SynthClient, SynthError, SynthRequest, Synthesizer};

use super::wav;

/// The fake backend.
pub struct FakeSynth {
    name: String,
    /// Requests whose text contains this fail (not retryable).
    refuse: Option<String>,
    /// Texts asked for, in order.
    calls: Mutex<Vec<String>>,
}

impl FakeSynth {
    /// A backend called `name` that answers every request.
    pub fn new(name: &str) -> Arc<FakeSynth> {
        Arc::new(FakeSynth {
            name: name.to_owned(),
            refuse: None,
            calls: Mutex::new(Vec::new()),
        })
    }

    /// A backend called `name` that refuses every request whose text
    /// contains `text`.
    pub fn refusing(name: &str, text: &str) -> Arc<FakeSynth> {
        Arc::new(FakeSynth {
            name: name.to_owned(),
            refuse: Some(text.to_owned()),
            calls: Mutex::new(Vec::new()),
        })
    }

    /// Every text asked for so far, in order.
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    /// A client with this backend alone (no retries, no fallback) and
    /// `cache`, for `Renderer::from_client`.
    pub fn client(self: &Arc<FakeSynth>, cache: Option<Cache>) -> SynthClient {
        let backend = ClientBackend {
            synth: Arc::clone(self) as Arc<dyn Synthesizer>,
            limiter: Limiter::new(self.limits().max_in_flight, None),
            retry: RetryPolicy {
                retries: 0,
                base: Duration::from_millis(1),
                max: Duration::from_millis(1),
            },
            fallback: None,
            timeout: Duration::from_secs(30),
        };
        SynthClient::new(BTreeMap::from([(self.name.clone(), backend)]), cache)
    }
}

#[async_trait]
impl Synthesizer for FakeSynth {
    fn name(&self) -> &str {
        &self.name
    }

    /// One request at a time, so that requests arrive in reading order.
    fn limits(&self) -> Limits {
        Limits {
            max_chars: 40,
            max_in_flight: 1,
        }
    }

    fn fingerprint(&self) -> String {
        format!("fake/{}", self.name)
    }

    async fn synthesize(&self, req: &SynthRequest) -> Result<AudioClip, SynthError> {
        self.calls.lock().unwrap().push(req.text.clone());
        if self.refuse.as_ref().is_some_and(|t| req.text.contains(t)) {
            return Err(SynthError::Engine {
                backend: self.name.clone(),
                message: format!("refused {:?}", req.text),
            });
        }
        Ok(wav::tone(&req.text, &req.voice.voice))
    }
}
