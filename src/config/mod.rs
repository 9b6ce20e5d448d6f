//! The voices file: backends, voices, casting and mixing settings, read once
//! and checked before any work starts. `voices/default.toml` is embedded and
//! used when no file is given.
//!
//! This module holds the types of the file and its loading; the rest is by
//! concept: `check` (every value in range, every name known), `locate` (the
//! line of a key, for messages), `secrets` (the environment variables the
//! backends name), `casting` (which voice reads a segment) and `backend`
//! (building the synthesis client from the file).

mod backend;
mod casting;
mod check;
mod locate;
mod secrets;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::audio::MixConfig;
use crate::synth::BackendKind;
use crate::synth::azure::AzureConfig;
use crate::synth::command::CommandConfig;
use crate::synth::espeak::EspeakConfig;
use crate::synth::http::{HttpConfig, Secret};
use crate::synth::kokoro::{KokoroConfig, KokoroFiles};
use crate::synth::openai::OpenaiConfig;
use crate::synth::rate_limit::RateLimit;
use crate::synth::retry::RetryPolicy;

use locate::unknown_field;

/// The embedded default voices file.
pub const DEFAULT_VOICES: &str = include_str!("../../voices/default.toml");
/// The espeak-ng voices, used when the neural voice is not installed.
pub const ESPEAK_VOICES: &str = include_str!("../../voices/espeak.toml");

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

/// Declares the backend types of the voices file: `Variant(Config) =
/// "type"`, in the order messages list them. Each config type implements
/// [`BackendKind`], which does the rest.
macro_rules! backends {
    ($($variant:ident($config:ty) = $type_name:literal,)*) => {
        /// `[backends.NAME]`: which engine, with its settings. The keys every
        /// backend takes (`max_in_flight`, `rate_limit`, …) are in [`ClientConfig`].
        #[derive(Debug, Clone, PartialEq, Deserialize)]
        #[serde(tag = "type", deny_unknown_fields)]
        pub enum BackendConfig {
            $(
                #[doc = concat!("`type = \"", $type_name, "\"`.")]
                #[serde(rename = $type_name)]
                $variant($config),
            )*
        }

        impl BackendConfig {
            /// The type name used in the voices file.
            pub fn type_name(&self) -> &'static str {
                match self {
                    $(BackendConfig::$variant(_) => $type_name,)*
                }
            }

            /// The type's settings: what builds, checks and names the
            /// secrets of the backend.
            pub fn kind(&self) -> &dyn BackendKind {
                match self {
                    $(BackendConfig::$variant(config) => config,)*
                }
            }
        }
    };
}

// The registry: one line a backend type.
backends! {
    Espeak(EspeakConfig) = "espeak",
    Kokoro(KokoroConfig) = "kokoro",
    Openai(OpenaiConfig) = "openai",
    Http(HttpConfig) = "http",
    Azure(AzureConfig) = "azure",
    Command(CommandConfig) = "command",
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
    /// More voices for male and female characters: with them, each
    /// character of that gender keeps one voice of `male` (or `female`) and
    /// these, chosen from its name, so that characters sound apart, the same
    /// in every chapter and every run.
    #[serde(default)]
    pub male_more: Vec<String>,
    #[serde(default)]
    pub female_more: Vec<String>,
    /// Voice for dialogue whose speaker's gender is unknown (or who is not
    /// found): neither the narrator nor a gendered voice. `dialogue` when unset.
    #[serde(default)]
    pub unknown: Option<String>,
    #[serde(default)]
    pub characters: BTreeMap<String, String>,
}

/// What a cast file says about one character, as far as voices go.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CastMember {
    /// Male and female characters' dialogue gets the gendered voices.
    pub gender: crate::text::Gender,
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
    /// For a passage a listener waits for: neural backends that leave
    /// `sessions` to the default load one (on a CPU that is the default
    /// already; on a GPU each further session cost about 2–3 s of loading
    /// before the first request, BENCHMARKS.md session 15), and their
    /// threads spin while waiting for work.
    pub fn for_a_listener(&mut self) {
        for backend in self.backends.values_mut() {
            if let BackendConfig::Kokoro(k) = backend
                && k.sessions == 0
            {
                k.sessions = 1;
            }
        }
        self.spin_for_listeners();
    }

    /// Neural backends' threads spin while waiting for work: what a
    /// listener waiting on some requests wants (the studio, the server),
    /// at some CPU time a batch build does not spend.
    pub fn spin_for_listeners(&mut self) {
        for backend in self.backends.values_mut() {
            if let BackendConfig::Kokoro(k) = backend {
                k.spin = true;
            }
        }
    }

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
}

/// A message on one line: every run of whitespace one space.
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The names in a map, for messages (`a, b, c`).
fn keys<V>(map: &BTreeMap<String, V>) -> String {
    map.keys()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::SegmentKind;

    #[test]
    fn a_listener_gets_one_neural_session_unless_the_file_sets_them() {
        let text = r#"
[backends.auto]
type = "kokoro"

[backends.four]
type = "kokoro"
sessions = 4

[voices.narrator]
backend = "auto"
voice = "zf_xiaobei"

[voices.other]
backend = "four"
voice = "zm_yunxi"

[casting]
narrator = "narrator"
dialogue = "other"
"#;
        let mut config = VoicesConfig::parse(text, "v.toml").unwrap();
        let sessions = |c: &VoicesConfig, name: &str| match &c.backends[name] {
            BackendConfig::Kokoro(k) => k.sessions,
            other => panic!("{other:?}"),
        };
        assert_eq!(sessions(&config, "auto"), 0);
        // The studio and the server: threads spin, sessions stay.
        let mut interactive = config.clone();
        interactive.spin_for_listeners();
        assert_eq!(sessions(&interactive, "auto"), 0);
        assert!(interactive.backends.values().all(|b| match b {
            BackendConfig::Kokoro(k) => k.spin,
            _ => true,
        }));
        config.for_a_listener();
        assert_eq!(sessions(&config, "auto"), 1);
        assert_eq!(sessions(&config, "four"), 4);
        assert!(config.backends.values().all(|b| match b {
            BackendConfig::Kokoro(k) => k.spin,
            _ => true,
        }));
    }

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

    pub(super) const MIXED: &str = r#"
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

    pub(super) fn env_with_key(name: &str) -> Option<String> {
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
}
