//! The voices file: backends, voices, casting and mixing settings, read once
//! and checked before any work starts. `voices/default.toml` is embedded and
//! used when no file is given.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;

use crate::audio::{AudioClip, MixConfig};
use crate::synth::azure::{Azure, AzureConfig};
use crate::synth::cache::Cache;
use crate::synth::client::{ClientBackend, SynthClient};
use crate::synth::command::{CommandBackend, CommandConfig};
use crate::synth::espeak::{Espeak, EspeakConfig};
use crate::synth::http::{Http, HttpConfig, Secret};
use crate::synth::kokoro::{Kokoro, KokoroConfig, KokoroFiles};
use crate::synth::openai::{Openai, OpenaiConfig};
use crate::synth::rate_limit::{Limiter, RateLimit};
use crate::synth::retry::RetryPolicy;
use crate::synth::{Limits, SynthError, SynthRequest, Synthesizer, VoiceSettings};
use crate::text::SegmentKind;

/// The embedded default voices file.
pub const DEFAULT_VOICES: &str = include_str!("../voices/default.toml");
/// The espeak-ng voices, used when the neural voice is not installed.
pub const ESPEAK_VOICES: &str = include_str!("../voices/espeak.toml");

/// A problem in a voices file, naming the file and the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read voices file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}:{line}: {message}")]
    Parse {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file}: {key}: {message}")]
    Invalid {
        file: String,
        key: String,
        message: String,
    },
    /// [`ConfigError::Invalid`] with the line where the key (or its table) is.
    #[error("{file}:{line}: {key}: {message}")]
    InvalidAt {
        file: String,
        line: usize,
        key: String,
        message: String,
    },
}

impl ConfigError {
    /// Adds the line of the key in `text` to an `Invalid` error.
    fn locate(self, text: &str) -> ConfigError {
        match self {
            ConfigError::Invalid { file, key, message } => match line_of(text, &key) {
                Some(line) => ConfigError::InvalidAt {
                    file,
                    line,
                    key,
                    message,
                },
                None => ConfigError::Invalid { file, key, message },
            },
            other => other,
        }
    }
}

/// The 1-based line of a dotted key such as `backends.server.rate_limit`:
/// the `key = …` line inside its `[table]`, else the table's header line.
fn line_of(text: &str, key: &str) -> Option<usize> {
    let parts: Vec<&str> = key.split('.').collect();
    for split in (1..=parts.len()).rev() {
        let (table, rest) = parts.split_at(split);
        let header = format!("[{}]", table.join("."));
        let quoted = format!(
            "[{}]",
            table
                .iter()
                .enumerate()
                .map(|(i, p)| if i == 0 {
                    (*p).to_owned()
                } else {
                    format!("\"{p}\"")
                })
                .collect::<Vec<_>>()
                .join(".")
        );
        let lines: Vec<&str> = text.lines().collect();
        let Some(start) = lines.iter().position(|l| {
            let l = l.trim();
            l.starts_with(&header) || l.starts_with(&quoted)
        }) else {
            continue;
        };
        if let Some(field) = rest.first() {
            for (i, line) in lines.iter().enumerate().skip(start + 1) {
                let line = line.trim_start();
                if line.starts_with('[') {
                    break;
                }
                if let Some(after) = line.strip_prefix(field)
                    && after.trim_start().starts_with('=')
                {
                    return Some(i + 1);
                }
            }
        }
        return Some(start + 1);
    }
    None
}

/// `[backends.NAME]`: which engine, with its settings. The keys every
/// backend takes (`max_in_flight`, `rate_limit`, …) are in [`ClientConfig`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum BackendConfig {
    Espeak(EspeakConfig),
    Kokoro(KokoroConfig),
    Openai(OpenaiConfig),
    Http(HttpConfig),
    Azure(AzureConfig),
    Command(CommandConfig),
}

impl BackendConfig {
    /// The type name used in the voices file.
    pub fn type_name(&self) -> &'static str {
        match self {
            BackendConfig::Espeak(_) => "espeak",
            BackendConfig::Kokoro(_) => "kokoro",
            BackendConfig::Openai(_) => "openai",
            BackendConfig::Http(_) => "http",
            BackendConfig::Azure(_) => "azure",
            BackendConfig::Command(_) => "command",
        }
    }

    fn default_in_flight(&self) -> usize {
        match self {
            BackendConfig::Espeak(_) | BackendConfig::Kokoro(_) => usize::MAX,
            BackendConfig::Openai(_) | BackendConfig::Azure(_) => 4,
            BackendConfig::Http(_) => 2,
            BackendConfig::Command(_) => 1,
        }
    }
}

/// Keys every backend takes, beside its type's own.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ClientConfig {
    /// Requests sent at once (default: espeak one per worker, openai/azure 4,
    /// http 2, command 1).
    #[serde(default)]
    pub max_in_flight: Option<usize>,
    /// At most N request starts per window: "20/60s".
    #[serde(default)]
    pub rate_limit: Option<String>,
    /// Seconds one request may take (default 60).
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// Retries after a transient failure (default 3).
    #[serde(default)]
    pub retries: Option<u32>,
    /// Another backend for requests this one fails for good.
    #[serde(default)]
    pub fallback: Option<String>,
    /// Voice id asked of the fallback backend (default: the same id).
    #[serde(default)]
    pub fallback_voice: Option<String>,
    /// Largest answer read from a network backend, in MiB (default 256);
    /// an answer is also capped by what its text could take to say.
    #[serde(default)]
    pub max_body_mb: Option<f64>,
}

const CLIENT_KEYS: [&str; 7] = [
    "max_in_flight",
    "rate_limit",
    "timeout_s",
    "retries",
    "fallback",
    "fallback_voice",
    "max_body_mb",
];

impl ClientConfig {
    pub fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout_s.unwrap_or(60.0))
    }

    pub fn rate(&self) -> Option<RateLimit> {
        self.rate_limit.as_deref().and_then(|r| r.parse().ok())
    }

    /// `max_body_mb` in bytes.
    pub fn max_body(&self) -> u64 {
        self.max_body_mb
            .map_or(crate::synth::http::DEFAULT_MAX_BODY, |mb| {
                (mb * f64::from(1u32 << 20)) as u64
            })
    }

    pub fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            retries: self.retries.unwrap_or(3),
            ..RetryPolicy::default()
        }
    }
}

/// `[voices.NAME]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoiceConfig {
    pub backend: String,
    pub voice: String,
    #[serde(default = "one")]
    pub speed: f32,
    #[serde(default)]
    pub pitch: Option<u8>,
    /// Speaking style (Azure `express-as`).
    #[serde(default)]
    pub style: Option<String>,
    /// Role (Azure `express-as`).
    #[serde(default)]
    pub role: Option<String>,
    /// Convert Traditional text to Simplified before sending it (for voices
    /// that only read Simplified); otherwise text goes as written.
    #[serde(default)]
    pub simplified: bool,
}

fn one() -> f32 {
    1.0
}

/// `[casting]`: which voice reads what.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CastingConfig {
    pub narrator: String,
    #[serde(default)]
    pub dialogue: Option<String>,
    /// Default voice for dialogue of male characters.
    #[serde(default)]
    pub male: Option<String>,
    /// Default voice for dialogue of female characters.
    #[serde(default)]
    pub female: Option<String>,
    #[serde(default)]
    pub characters: BTreeMap<String, String>,
}

/// What a cast file says about one character, as far as voices go.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CastMember {
    /// "male", "female" or anything else for unknown.
    pub gender: Option<String>,
    /// A voice name from the voices file.
    pub voice: Option<String>,
}

/// The voices file as written, before backends are split into their kind
/// and the keys all backends share.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVoicesFile {
    backends: BTreeMap<String, toml::Table>,
    voices: BTreeMap<String, VoiceConfig>,
    casting: CastingConfig,
    #[serde(default)]
    mix: MixConfig,
}

/// The voices file [`VoicesConfig::load`] reads for `path`, as (name for
/// messages, text): `path`; when `None`, the file `$TINGSHU_VOICES` names;
/// else the built-in neural voices when installed, else the built-in
/// espeak-ng voices (with one stderr line on how to install the neural one).
pub fn voices_text(path: Option<&Path>) -> Result<(String, String), ConfigError> {
    let from_env = std::env::var_os("TINGSHU_VOICES")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    match path.or(from_env.as_deref()) {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_owned(),
                source,
            })?;
            Ok((path.display().to_string(), text))
        }
        None if KokoroFiles::locate(None).installed() => Ok((
            "voices/default.toml (built in)".into(),
            DEFAULT_VOICES.into(),
        )),
        None => {
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| {
                eprintln!(
                    "tingshu: the neural voice is not installed ({}); using the espeak-ng voices — install it with scripts/install-kokoro.sh",
                    KokoroFiles::locate(None).root.display()
                );
            });
            Ok(("voices/espeak.toml (built in)".into(), ESPEAK_VOICES.into()))
        }
    }
}

/// The rate espeak-ng synthesizes at (Hz): the output rate of a voices file
/// whose voices are all espeak-ng and that sets no `[mix] sample_rate`.
pub const ESPEAK_RATE: u32 = 22050;

/// A whole voices file.
#[derive(Debug, Clone, PartialEq)]
pub struct VoicesConfig {
    pub backends: BTreeMap<String, BackendConfig>,
    /// Shared client keys of each backend (same names as `backends`).
    pub clients: BTreeMap<String, ClientConfig>,
    pub voices: BTreeMap<String, VoiceConfig>,
    pub casting: CastingConfig,
    pub mix: MixConfig,
    /// Characters from a cast file (see [`VoicesConfig::set_cast`]).
    pub cast: BTreeMap<String, CastMember>,
    /// Where it came from, for messages.
    pub source: String,
    /// Values of the environment variables the backends name.
    env: BTreeMap<String, Secret>,
}

impl VoicesConfig {
    /// Reads `path`; when `None`, the file `$TINGSHU_VOICES` names, else the
    /// embedded default: the neural voices when installed, else espeak-ng's.
    pub fn load(path: Option<&Path>) -> Result<VoicesConfig, ConfigError> {
        let (file, text) = voices_text(path)?;
        VoicesConfig::parse(&text, &file)
    }

    /// Parses and checks a voices file's text; `file` names it in errors.
    /// Environment variables are read from the process environment.
    pub fn parse(text: &str, file: &str) -> Result<VoicesConfig, ConfigError> {
        VoicesConfig::parse_with_env(text, file, &|name| std::env::var(name).ok())
    }

    /// [`VoicesConfig::parse`] with environment variables from `env`.
    pub fn parse_with_env(
        text: &str,
        file: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<VoicesConfig, ConfigError> {
        VoicesConfig::parse_unlocated(text, file, env).map_err(|e| e.locate(text))
    }

    fn parse_unlocated(
        text: &str,
        file: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<VoicesConfig, ConfigError> {
        let raw: RawVoicesFile = toml::from_str(text).map_err(|e| ConfigError::Parse {
            file: file.to_owned(),
            // The line holding the span's start (a span starting a line
            // is on that line, not the one before).
            line: e.span().map_or(0, |s| {
                text.as_bytes()[..s.start.min(text.len())]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count()
                    + 1
            }),
            message: e.message().trim().replace('\n', " "),
        })?;
        let invalid = |key: String, message: String| ConfigError::Invalid {
            file: file.to_owned(),
            key,
            message,
        };
        let mut backends = BTreeMap::new();
        let mut clients = BTreeMap::new();
        for (name, mut table) in raw.backends {
            let mut shared = toml::Table::new();
            for key in CLIENT_KEYS {
                if let Some(v) = table.remove(key) {
                    shared.insert(key.to_owned(), v);
                }
            }
            // An unknown key is located on its own line, not its table's.
            let located = |e: toml::de::Error| {
                let message = one_line(&e.to_string());
                let key = unknown_field(&message).map_or_else(
                    || format!("backends.{name}"),
                    |field| format!("backends.{name}.{field}"),
                );
                invalid(key, message)
            };
            let client = ClientConfig::deserialize(toml::Value::Table(shared)).map_err(located)?;
            let backend = BackendConfig::deserialize(toml::Value::Table(table)).map_err(located)?;
            backends.insert(name.clone(), backend);
            clients.insert(name, client);
        }
        let mut config = VoicesConfig {
            backends,
            clients,
            voices: raw.voices,
            casting: raw.casting,
            mix: raw.mix,
            cast: BTreeMap::new(),
            source: file.to_owned(),
            env: BTreeMap::new(),
        };
        let rate_given = toml::from_str::<toml::Table>(text)
            .ok()
            .and_then(|doc| doc.get("mix")?.get("sample_rate").cloned())
            .is_some();
        if !rate_given && config.only_espeak() {
            // espeak-ng's own rate: voices that all speak at it need no
            // conversion. Other backends are converted to the 24 kHz default.
            config.mix.sample_rate = ESPEAK_RATE;
        }
        config.check()?;
        config.read_env(env)?;
        Ok(config)
    }

    /// Whether every voice uses an espeak backend.
    fn only_espeak(&self) -> bool {
        self.voices.values().all(|v| {
            matches!(
                self.backends.get(&v.backend),
                Some(BackendConfig::Espeak(_))
            )
        })
    }

    fn invalid(&self, key: String, message: String) -> ConfigError {
        ConfigError::Invalid {
            file: self.source.clone(),
            key,
            message,
        }
    }

    /// The environment variables a backend needs: (key, variable, required).
    fn env_vars(name: &str, backend: &BackendConfig) -> Vec<(String, String, bool)> {
        match backend {
            BackendConfig::Openai(c) => c
                .api_key_env
                .iter()
                .map(|v| (format!("backends.{name}.api_key_env"), v.clone(), true))
                .collect(),
            BackendConfig::Http(c) => c
                .api_key_env
                .iter()
                .map(|v| (format!("backends.{name}.api_key_env"), v.clone(), true))
                .collect(),
            BackendConfig::Azure(c) => vec![
                (
                    format!("backends.{name}.api_key_env"),
                    c.api_key_env.clone(),
                    true,
                ),
                (
                    format!("backends.{name}.region_env"),
                    c.region_env.clone(),
                    c.endpoint.is_none(),
                ),
            ],
            BackendConfig::Espeak(_) | BackendConfig::Kokoro(_) | BackendConfig::Command(_) => {
                Vec::new()
            }
        }
    }

    fn read_env(&mut self, env: &dyn Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        for (name, backend) in &self.backends {
            for (key, var, required) in Self::env_vars(name, backend) {
                match env(&var).filter(|v| !v.is_empty()) {
                    Some(value) => {
                        self.env.insert(var, Secret::new(value));
                    }
                    None if required => {
                        return Err(
                            self.invalid(key, format!("environment variable {var} is not set"))
                        );
                    }
                    None => {}
                }
            }
        }
        Ok(())
    }

    fn secret(&self, var: Option<&String>) -> Secret {
        var.and_then(|v| self.env.get(v))
            .cloned()
            .unwrap_or_default()
    }

    fn check(&self) -> Result<(), ConfigError> {
        for (name, backend) in &self.backends {
            let checked = match backend {
                BackendConfig::Espeak(c) => check_espeak(c),
                BackendConfig::Kokoro(c) => {
                    let voices: Vec<(String, &str)> = self
                        .voices
                        .iter()
                        .filter(|(_, v)| &v.backend == name)
                        .map(|(vn, v)| (format!("voices.{vn}.voice"), v.voice.as_str()))
                        .collect();
                    match c.check(&voices) {
                        Err((key, message)) if key.starts_with("voices.") => {
                            return Err(self.invalid(key, message));
                        }
                        other => other,
                    }
                }
                BackendConfig::Openai(c) => c.check(),
                BackendConfig::Http(c) => c.check(),
                BackendConfig::Azure(_) => Ok(()),
                BackendConfig::Command(c) => c.check(),
            };
            if let Err((key, message)) = checked {
                return Err(self.invalid(format!("backends.{name}.{key}"), message));
            }
            let client = &self.clients[name];
            if let Some(rate) = &client.rate_limit
                && let Err(e) = rate.parse::<RateLimit>()
            {
                return Err(self.invalid(format!("backends.{name}.rate_limit"), e.to_string()));
            }
            if let Some(n) = client.max_in_flight
                && !(1..=MAX_IN_FLIGHT).contains(&n)
            {
                return Err(self.invalid(
                    format!("backends.{name}.max_in_flight"),
                    format!("{n} is out of range 1–{MAX_IN_FLIGHT}"),
                ));
            }
            if let Some(n) = client.retries
                && n > 100
            {
                return Err(self.invalid(
                    format!("backends.{name}.retries"),
                    format!("{n} is out of range 0–100"),
                ));
            }
            if let Some(mb) = client.max_body_mb
                && !(mb.is_finite() && (0.01..=4096.0).contains(&mb))
            {
                return Err(self.invalid(
                    format!("backends.{name}.max_body_mb"),
                    format!("{mb} is out of range 0.01–4096"),
                ));
            }
            if client.timeout_s.is_some_and(|t| !(t > 0.0 && t <= 86400.0)) {
                return Err(self.invalid(
                    format!("backends.{name}.timeout_s"),
                    "must be between 0 and 86400 seconds".into(),
                ));
            }
            if client.fallback_voice.is_some() && client.fallback.is_none() {
                return Err(self.invalid(
                    format!("backends.{name}.fallback_voice"),
                    "needs a fallback backend".into(),
                ));
            }
            if let Some(fallback) = &client.fallback {
                if !self.backends.contains_key(fallback) {
                    return Err(self.invalid(
                        format!("backends.{name}.fallback"),
                        format!(
                            "unknown backend '{fallback}' (known: {})",
                            keys(&self.backends)
                        ),
                    ));
                }
                if fallback == name {
                    return Err(self.invalid(
                        format!("backends.{name}.fallback"),
                        "a backend cannot fall back to itself".into(),
                    ));
                }
            }
        }
        for (name, voice) in &self.voices {
            if !self.backends.contains_key(&voice.backend) {
                return Err(self.invalid(
                    format!("voices.{name}.backend"),
                    format!(
                        "unknown backend '{}' (known: {})",
                        voice.backend,
                        keys(&self.backends)
                    ),
                ));
            }
            if !(0.25..=4.0).contains(&voice.speed) {
                return Err(self.invalid(
                    format!("voices.{name}.speed"),
                    format!("{} is out of range 0.25–4.0", voice.speed),
                ));
            }
            if voice.pitch.is_some_and(|p| p > 99) {
                return Err(self.invalid(format!("voices.{name}.pitch"), "must be 0–99".into()));
            }
        }
        let mut refs = vec![("casting.narrator".to_owned(), &self.casting.narrator)];
        for (key, value) in [
            ("casting.dialogue", &self.casting.dialogue),
            ("casting.male", &self.casting.male),
            ("casting.female", &self.casting.female),
        ] {
            refs.extend(value.iter().map(|v| (key.to_owned(), v)));
        }
        refs.extend(
            self.casting
                .characters
                .iter()
                .map(|(who, v)| (format!("casting.characters.{who}"), v)),
        );
        for (key, voice) in refs {
            if !self.voices.contains_key(voice) {
                return Err(self.invalid(
                    key,
                    format!("unknown voice '{voice}' (known: {})", keys(&self.voices)),
                ));
            }
        }
        if !(8000..=96000).contains(&self.mix.sample_rate) {
            return Err(self.invalid("mix.sample_rate".into(), "must be 8000–96000".into()));
        }
        if let Err((key, message)) = check_mix(&self.mix) {
            return Err(self.invalid(format!("mix.{key}"), message));
        }
        Ok(())
    }

    /// Adds the characters of a cast file (genders and `voice` entries).
    pub fn apply_cast(&mut self, file: &Path, cast: &crate::text::Cast) -> Result<(), ConfigError> {
        let members = cast.characters.iter().map(|c| {
            let member = CastMember {
                gender: Some(c.gender.as_str().to_owned()),
                voice: c.voice.clone(),
            };
            (c.name.clone(), member)
        });
        self.set_cast(&file.display().to_string(), members)
    }

    /// Adds the characters of a cast file (`file` names it in errors):
    /// (canonical name, member). A `voice` must name a voice of this file.
    pub fn set_cast(
        &mut self,
        file: &str,
        members: impl IntoIterator<Item = (String, CastMember)>,
    ) -> Result<(), ConfigError> {
        for (name, member) in members {
            if let Some(voice) = &member.voice
                && !self.voices.contains_key(voice)
            {
                return Err(ConfigError::Invalid {
                    file: file.to_owned(),
                    key: format!("character.{name}.voice"),
                    message: format!(
                        "unknown voice '{voice}' (known in {}: {})",
                        self.source,
                        keys(&self.voices)
                    ),
                });
            }
            self.cast.insert(name, member);
        }
        Ok(())
    }

    /// The voice (by name) that reads a segment: the character's voice from
    /// `[casting.characters]`, then from the cast file, then by the
    /// character's gender, then the dialogue or narrator voice.
    pub fn voice_for(&self, kind: SegmentKind, speaker: Option<&str>) -> &str {
        if let Some(speaker) = speaker {
            if let Some(voice) = self.casting.characters.get(speaker) {
                return voice;
            }
            let member = self.cast.get(speaker);
            if let Some(voice) = member.and_then(|m| m.voice.as_deref()) {
                return voice;
            }
            if kind == SegmentKind::Dialogue {
                let by_gender = match member.and_then(|m| m.gender.as_deref()) {
                    Some("male") => self.casting.male.as_deref(),
                    Some("female") => self.casting.female.as_deref(),
                    _ => None,
                };
                if let Some(voice) = by_gender {
                    return voice;
                }
            }
        }
        match (kind, &self.casting.dialogue) {
            (SegmentKind::Dialogue, Some(dialogue)) => dialogue,
            _ => &self.casting.narrator,
        }
    }

    /// Settings of a named voice (the name must come from this config).
    pub fn voice_settings(&self, name: &str) -> VoiceSettings {
        let v = &self.voices[name];
        VoiceSettings {
            name: name.to_owned(),
            voice: v.voice.clone(),
            speed: v.speed,
            pitch: v.pitch,
            style: v.style.clone(),
            role: v.role.clone(),
        }
    }

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

/// Most requests a backend may have in flight, and most espeak-ng workers
/// (each is a process).
const MAX_IN_FLIGHT: usize = 1024;
const MAX_WORKERS: usize = 256;

/// `[backends.X] type = "espeak"`: numbers in range. Returns (key, problem).
fn check_espeak(c: &crate::synth::espeak::EspeakConfig) -> Result<(), (String, String)> {
    if c.workers > MAX_WORKERS {
        return Err((
            "workers".into(),
            format!(
                "{} is out of range 0–{MAX_WORKERS} (0 = one per core, plus two)",
                c.workers
            ),
        ));
    }
    if !(80..=450).contains(&c.rate) {
        return Err(("rate".into(), format!("{} is out of range 80–450", c.rate)));
    }
    if !(1..=10_000).contains(&c.max_chars) {
        return Err((
            "max_chars".into(),
            format!("{} is out of range 1–10000", c.max_chars),
        ));
    }
    Ok(())
}

/// `[mix]`: every number finite and in range. Returns (key, problem).
fn check_mix(mix: &crate::audio::MixConfig) -> Result<(), (String, String)> {
    let range = |key: &str, v: f64, lo: f64, hi: f64| {
        if v.is_finite() && (lo..=hi).contains(&v) {
            Ok(())
        } else {
            Err((key.to_owned(), format!("{v} is out of range {lo}–{hi}")))
        }
    };
    range("target_lufs", mix.target_lufs, -70.0, -5.0)?;
    range("true_peak_dbtp", mix.true_peak_dbtp, -30.0, 0.0)?;
    let p = &mix.pauses;
    for (key, ms) in [
        ("clause_ms", p.clause_ms),
        ("sentence_ms", p.sentence_ms),
        ("hesitation_ms", p.hesitation_ms),
        ("segment_ms", p.segment_ms),
        ("turn_ms", p.turn_ms),
        ("paragraph_ms", p.paragraph_ms),
        ("chapter_start_ms", p.chapter_start_ms),
        ("chapter_end_ms", p.chapter_end_ms),
    ] {
        if ms > 60_000 {
            return Err((
                format!("pauses.{key}"),
                format!("{ms} is out of range 0–60000 ms"),
            ));
        }
    }
    Ok(())
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

/// The field named by a serde "unknown field `x`" message.
fn unknown_field(message: &str) -> Option<&str> {
    let rest = message.split_once("unknown field `")?.1;
    rest.split_once('`').map(|(field, _)| field)
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn keys<V>(map: &BTreeMap<String, V>) -> String {
    map.keys()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_voices_parse_and_cast_two_voices() {
        let config = VoicesConfig::load(None).unwrap();
        let narrator = config.voice_for(SegmentKind::Narration, None);
        let dialogue = config.voice_for(SegmentKind::Dialogue, None);
        assert_ne!(
            config.voice_settings(narrator),
            config.voice_settings(dialogue)
        );
    }

    #[test]
    fn output_rate_defaults_to_espeaks_own_only_for_espeak_voices() {
        let espeak_only = "[backends.local]\ntype = \"espeak\"\n\n[voices.n]\nbackend = \"local\"\nvoice = \"cmn-latn-pinyin\"\n\n[casting]\nnarrator = \"n\"\ndialogue = \"n\"\n";
        let config = VoicesConfig::parse(espeak_only, "a.toml").unwrap();
        assert_eq!(config.mix.sample_rate, ESPEAK_RATE);
        // Set in the file: kept.
        let set = format!("{espeak_only}\n[mix]\nsample_rate = 24000\n");
        assert_eq!(
            VoicesConfig::parse(&set, "b.toml").unwrap().mix.sample_rate,
            24000
        );
        // A voice on another backend: the general default.
        let mixed = espeak_only.replace(
            "[voices.n]",
            "[backends.tts]\ntype = \"command\"\nprogram = \"true\"\n\n[voices.other]\nbackend = \"tts\"\nvoice = \"x\"\n\n[voices.n]",
        );
        let config = VoicesConfig::parse(&mixed, "c.toml").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.mix.sample_rate, MixConfig::default().sample_rate);
    }

    #[test]
    fn shipped_voice_files_parse() {
        let mut parsed = 0;
        for dir in ["voices", "voices/examples"] {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "toml") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let config =
                        VoicesConfig::parse_with_env(&text, &path.display().to_string(), &|_| {
                            Some("set-in-test".into())
                        })
                        .unwrap_or_else(|e| panic!("{e}"));
                    assert!(!config.build_backends(None).is_empty());
                    parsed += 1;
                }
            }
        }
        assert!(parsed >= 6, "{parsed}");
    }

    #[test]
    fn finds_the_line_of_a_key() {
        let text = "[backends.a]\ntype = \"espeak\"\n\n[casting]\nnarrator = \"n\"\ncharacters = { \"毛仲\" = \"x\" }\n[voices.\"老 周\"]\nvoice = \"v\"\n";
        assert_eq!(line_of(text, "backends.a.type"), Some(2));
        assert_eq!(line_of(text, "backends.a.rate"), Some(1));
        assert_eq!(line_of(text, "casting.characters.毛仲"), Some(6));
        assert_eq!(line_of(text, "voices.老 周.voice"), Some(8));
        assert_eq!(line_of(text, "mix.sample_rate"), None);
    }

    #[test]
    fn errors_name_file_and_key() {
        let bad_key =
            "[backends.a]\ntype = \"espeak\"\nspeed = 2\n[voices]\n[casting]\nnarrator = \"x\"\n";
        let err = VoicesConfig::parse(bad_key, "v.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("v.toml:3: backends.a.speed: unknown field `speed`"),
            "{err}"
        );
        let bad_ref = "[backends.a]\ntype = \"espeak\"\n[voices.n]\nbackend = \"b\"\nvoice = \"x\"\n[casting]\nnarrator = \"n\"\n";
        let err = VoicesConfig::parse(bad_ref, "v.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "v.toml:4: voices.n.backend: unknown backend 'b' (known: a)"
        );
        let bad_cast = "[backends.a]\ntype = \"espeak\"\n[voices.n]\nbackend = \"a\"\nvoice = \"x\"\n[casting]\nnarrator = \"m\"\n";
        let err = VoicesConfig::parse(bad_cast, "v.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "v.toml:7: casting.narrator: unknown voice 'm' (known: n)"
        );
    }

    const MIXED: &str = r#"
[backends.local]
type = "espeak"

[backends.server]
type = "openai"
base_url = "http://127.0.0.1:8000/v1"
api_key_env = "TTS_API_KEY"
max_in_flight = 8
rate_limit = "20/60s"
timeout_s = 30
retries = 4
fallback = "local"
fallback_voice = "cmn-latn-pinyin"

[voices.narrator]
backend = "local"
voice = "cmn-latn-pinyin"

[voices.hero]
backend = "server"
voice = "alloy"

[voices.heroine]
backend = "server"
voice = "nova"
style = "gentle"

[casting]
narrator = "narrator"
dialogue = "hero"
male = "hero"
female = "heroine"
characters = { "毛仲" = "narrator" }
"#;

    fn env_with_key(name: &str) -> Option<String> {
        (name == "TTS_API_KEY").then(|| "sk-test-key".to_owned())
    }

    #[test]
    fn reads_shared_backend_keys_and_casting() {
        let config = VoicesConfig::parse_with_env(MIXED, "m.toml", &env_with_key).unwrap();
        let client = &config.clients["server"];
        assert_eq!(client.max_in_flight, Some(8));
        assert_eq!(client.retry_policy().retries, 4);
        assert_eq!(client.timeout(), Duration::from_secs(30));
        assert_eq!(client.rate().unwrap().requests, 20);
        assert_eq!(config.backends["server"].type_name(), "openai");
        let backends = config.build_backends(None);
        assert_eq!(backends["server"].limits().max_in_flight, 8);
        // Debug output never shows the key.
        assert!(!format!("{config:?}").contains("sk-test-key"));
    }

    #[test]
    fn casting_by_character_cast_file_and_gender() {
        let mut config = VoicesConfig::parse_with_env(MIXED, "m.toml", &env_with_key).unwrap();
        let d = SegmentKind::Dialogue;
        config
            .set_cast(
                "cast.toml",
                [
                    (
                        "少安".to_owned(),
                        CastMember {
                            gender: Some("male".into()),
                            voice: None,
                        },
                    ),
                    (
                        "润叶".to_owned(),
                        CastMember {
                            gender: Some("female".into()),
                            voice: None,
                        },
                    ),
                    (
                        "老王".to_owned(),
                        CastMember {
                            gender: Some("male".into()),
                            voice: Some("narrator".into()),
                        },
                    ),
                ],
            )
            .unwrap();
        assert_eq!(config.voice_for(d, Some("毛仲")), "narrator");
        assert_eq!(config.voice_for(d, Some("润叶")), "heroine");
        assert_eq!(config.voice_for(d, Some("少安")), "hero");
        assert_eq!(config.voice_for(d, Some("老王")), "narrator");
        assert_eq!(config.voice_for(d, None), "hero");
        assert_eq!(
            config.voice_for(SegmentKind::Narration, Some("润叶")),
            "narrator"
        );
        let err = config
            .set_cast(
                "cast.toml",
                [(
                    "甲".to_owned(),
                    CastMember {
                        gender: None,
                        voice: Some("ghost".into()),
                    },
                )],
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("cast.toml: character.甲.voice: unknown voice 'ghost'"),
            "{err}"
        );
    }

    #[test]
    fn backend_errors_name_file_key_and_problem() {
        let cases = [
            (
                "",
                "environment variable TTS_API_KEY is not set",
                "4: backends.server.api_key_env",
            ),
            (
                "rate_limit = \"lots\"",
                "is not a rate",
                "5: backends.server.rate_limit",
            ),
            (
                "fallback = \"nowhere\"",
                "unknown backend 'nowhere'",
                "5: backends.server.fallback",
            ),
            (
                "max_in_flight = 0",
                "0 is out of range 1–1024",
                "5: backends.server.max_in_flight",
            ),
            (
                "colour = 1",
                "unknown field `colour`",
                "5: backends.server.colour",
            ),
        ];
        for (extra, problem, key) in cases {
            let text = format!(
                "[backends.server]\ntype = \"openai\"\nbase_url = \"http://h/v1\"\napi_key_env = \"TTS_API_KEY\"\n{extra}\n[voices.v]\nbackend = \"server\"\nvoice = \"alloy\"\n[casting]\nnarrator = \"v\"\n"
            );
            let env = |name: &str| (!extra.is_empty()).then(|| env_with_key(name)).flatten();
            let err = VoicesConfig::parse_with_env(&text, "x.toml", &env)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(&format!("x.toml:{key}: ")), "{err}");
            assert!(err.contains(problem), "{err}");
        }
        let unknown_type = "[backends.b]\ntype = \"gpt\"\n[voices]\n[casting]\nnarrator = \"x\"\n";
        let err = VoicesConfig::parse(unknown_type, "y.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("y.toml:1: backends.b: unknown variant `gpt`"),
            "{err}"
        );
    }
}
