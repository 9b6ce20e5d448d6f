//! Checks of a parsed voices file: every number in range, every backend and
//! voice a key names known. Errors name the key; `locate` adds its line.

use super::{ConfigError, VoicesConfig, keys};
use crate::synth::rate_limit::RateLimit;

impl VoicesConfig {
    /// Checks the values of the file: backends, voices, casting and mix.
    pub(super) fn check(&self) -> Result<(), ConfigError> {
        for (name, backend) in &self.backends {
            let voices: Vec<(String, &str)> = self
                .voices
                .iter()
                .filter(|(_, v)| &v.backend == name)
                .map(|(vn, v)| (format!("voices.{vn}.voice"), v.voice.as_str()))
                .collect();
            match backend.kind().check(&voices) {
                Err((key, message)) if key.starts_with("voices.") => {
                    return Err(self.invalid(key, message));
                }
                Err((key, message)) => {
                    return Err(self.invalid(format!("backends.{name}.{key}"), message));
                }
                Ok(()) => {}
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
            ("casting.unknown", &self.casting.unknown),
        ] {
            refs.extend(value.iter().map(|v| (key.to_owned(), v)));
        }
        for (key, more) in [
            ("casting.male_more", &self.casting.male_more),
            ("casting.female_more", &self.casting.female_more),
        ] {
            refs.extend(more.iter().map(|v| (key.to_owned(), v)));
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
}

/// Most requests a backend may have in flight.
const MAX_IN_FLIGHT: usize = 1024;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::env_with_key;

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
