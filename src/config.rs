//! The voices file: backends, voices, casting and mixing settings, read once
//! and checked before any work starts. `voices/default.toml` is embedded and
//! used when no file is given.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::audio::MixConfig;
use crate::synth::espeak::{Espeak, EspeakConfig};
use crate::synth::{Synthesizer, VoiceSettings};
use crate::text::SegmentKind;

/// The embedded default voices file.
pub const DEFAULT_VOICES: &str = include_str!("../voices/default.toml");

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
}

/// `[backends.NAME]`: which engine, with its settings.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum BackendConfig {
    Espeak(EspeakConfig),
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
    #[serde(default)]
    pub characters: BTreeMap<String, String>,
}

/// A whole voices file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoicesConfig {
    pub backends: BTreeMap<String, BackendConfig>,
    pub voices: BTreeMap<String, VoiceConfig>,
    pub casting: CastingConfig,
    #[serde(default)]
    pub mix: MixConfig,
    /// Where it came from, for messages.
    #[serde(skip)]
    pub source: String,
}

impl VoicesConfig {
    /// Reads `path`, or the embedded default when `None`.
    pub fn load(path: Option<&Path>) -> Result<VoicesConfig, ConfigError> {
        match path {
            None => VoicesConfig::parse(DEFAULT_VOICES, "voices/default.toml (built in)"),
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                    path: path.to_owned(),
                    source,
                })?;
                VoicesConfig::parse(&text, &path.display().to_string())
            }
        }
    }

    /// Parses and checks a voices file's text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<VoicesConfig, ConfigError> {
        let mut config: VoicesConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            file: file.to_owned(),
            line: e.span().map_or(0, |s| {
                text[..s.start.min(text.len())].lines().count().max(1)
            }),
            message: e.message().trim().replace('\n', " "),
        })?;
        config.source = file.to_owned();
        config.check()?;
        Ok(config)
    }

    fn invalid(&self, key: String, message: String) -> ConfigError {
        ConfigError::Invalid {
            file: self.source.clone(),
            key,
            message,
        }
    }

    fn check(&self) -> Result<(), ConfigError> {
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
        refs.extend(
            self.casting
                .dialogue
                .iter()
                .map(|d| ("casting.dialogue".to_owned(), d)),
        );
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
        Ok(())
    }

    /// The voice (by name) that reads a segment.
    pub fn voice_for(&self, kind: SegmentKind, speaker: Option<&str>) -> &str {
        if let Some(voice) = speaker.and_then(|s| self.casting.characters.get(s)) {
            return voice;
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
        }
    }

    /// Builds every backend. `worker_program` is the binary that can run
    /// espeak-ng workers (normally this executable).
    pub fn build_backends(
        &self,
        worker_program: Option<PathBuf>,
    ) -> BTreeMap<String, Arc<dyn Synthesizer>> {
        self.backends
            .iter()
            .map(|(name, config)| {
                let backend: Arc<dyn Synthesizer> = match config {
                    BackendConfig::Espeak(c) => {
                        Arc::new(Espeak::new(name, c.clone(), worker_program.clone()))
                    }
                };
                (name.clone(), backend)
            })
            .collect()
    }
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
    fn shipped_voice_files_parse() {
        for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/voices")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                VoicesConfig::load(Some(&path)).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }

    #[test]
    fn errors_name_file_and_key() {
        let bad_key =
            "[backends.a]\ntype = \"espeak\"\nspeed = 2\n[voices]\n[casting]\nnarrator = \"x\"\n";
        let err = VoicesConfig::parse(bad_key, "v.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("v.toml:1: unknown field `speed`"), "{err}");
        let bad_ref = "[backends.a]\ntype = \"espeak\"\n[voices.n]\nbackend = \"b\"\nvoice = \"x\"\n[casting]\nnarrator = \"n\"\n";
        let err = VoicesConfig::parse(bad_ref, "v.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "v.toml: voices.n.backend: unknown backend 'b' (known: a)"
        );
        let bad_cast = "[backends.a]\ntype = \"espeak\"\n[voices.n]\nbackend = \"a\"\nvoice = \"x\"\n[casting]\nnarrator = \"m\"\n";
        let err = VoicesConfig::parse(bad_cast, "v.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "v.toml: casting.narrator: unknown voice 'm' (known: n)"
        );
    }
}
