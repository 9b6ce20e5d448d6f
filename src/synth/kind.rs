//! What every backend type of the voices file provides, in its own file:
//! [`BackendKind`] builds the backend from its `[backends.NAME]` table,
//! checks the table's keys and names the environment variables it reads.
//!
//! The voices file knows the types through one list, the registry in
//! `config/mod.rs` (`backends! { … }`): adding a backend is a file in
//! `synth/` with its config type implementing [`BackendKind`], and one line
//! there.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::http::Secret;
use super::{SynthError, Synthesizer};

/// The key of the environment variable holding a backend's API key; the
/// `voices` listing shows the variable a backend names there.
pub const API_KEY_ENV: &str = "api_key_env";

/// A problem with one key of a backend's table: (key, problem). The key is
/// relative to `backends.NAME` unless it starts with `voices.` (a voice
/// that uses the backend).
pub type KeyProblem = (String, String);

/// What a backend is built with beside its own table: its name and the
/// keys every backend takes (resolved from the file's client keys).
pub struct BuildContext<'a> {
    /// The backend's name in the voices file.
    pub name: &'a str,
    /// How long one request may take (`timeout_s`).
    pub timeout: Duration,
    /// `max_in_flight` as the file sets it; see [`BuildContext::in_flight`].
    pub max_in_flight: Option<usize>,
    /// Largest answer read from a network backend, in bytes (`max_body_mb`).
    pub max_body: u64,
    /// The binary that can run espeak-ng workers (normally this executable).
    pub worker_program: Option<&'a Path>,
    /// The value of an environment variable the backend names in
    /// [`BackendKind::secrets`] (empty when unset).
    pub secrets: &'a dyn Fn(&str) -> Secret,
}

impl BuildContext<'_> {
    /// Requests sent at once: `max_in_flight`, else the backend's `default`.
    pub fn in_flight(&self, default: usize) -> usize {
        self.max_in_flight.unwrap_or(default)
    }

    /// The value of the environment variable `var` (empty for `None`).
    pub fn secret(&self, var: Option<&str>) -> Secret {
        var.map(self.secrets).unwrap_or_default()
    }
}

/// An environment variable a backend reads when the file is loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretVar<'a> {
    /// The key that names the variable (`api_key_env`), for messages.
    pub key: &'static str,
    /// The variable's name.
    pub var: &'a str,
    /// Whether the file is refused when the variable is unset or empty.
    pub required: bool,
}

impl<'a> SecretVar<'a> {
    /// The variable an optional `api_key_env` names: none, or one that is
    /// required.
    pub fn api_key(var: Option<&'a str>) -> Vec<SecretVar<'a>> {
        var.map(|var| SecretVar {
            key: API_KEY_ENV,
            var,
            required: true,
        })
        .into_iter()
        .collect()
    }
}

/// A backend type of the voices file: what its `[backends.NAME]` table
/// (the config type, deserialized) builds, checks and reads.
pub trait BackendKind {
    /// Builds the backend. An error here fails each of its requests with
    /// the reason (the file has been checked already).
    fn build(&self, ctx: &BuildContext<'_>) -> Result<Arc<dyn Synthesizer>, SynthError>;

    /// Checks the table's own keys; `voices` are (key, voice id) of the
    /// voices that use the backend. Keys every backend takes are checked by
    /// the voices file.
    fn check(&self, _voices: &[(String, &str)]) -> Result<(), KeyProblem> {
        Ok(())
    }

    /// The environment variables the backend reads (API keys, regions):
    /// read once when the file is loaded, never printed.
    fn secrets(&self) -> Vec<SecretVar<'_>> {
        Vec::new()
    }

    /// The outer limit on one request when the file sets no `timeout_s`;
    /// `None`: the timeout plus a second. An engine in this process may
    /// need much longer than a server.
    fn default_request_limit(&self) -> Option<Duration> {
        None
    }

    /// Lines the `voices` listing adds under the backend (where it runs),
    /// each ending in a newline.
    fn listing_note(&self) -> Option<String> {
        None
    }
}
