//! Secrets from the environment: the variables the backends name (API keys,
//! regions), read once when the file is loaded and never printed.

use super::{BackendConfig, ConfigError, VoicesConfig};
use crate::synth::http::Secret;

impl VoicesConfig {
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

    /// Reads the variables every backend names from `env`; a required one
    /// that is unset or empty is an error at the key that names it.
    pub(super) fn read_env(
        &mut self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), ConfigError> {
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

    /// The value of the variable `var` names (empty when unset).
    pub(super) fn secret(&self, var: Option<&String>) -> Secret {
        var.and_then(|v| self.env.get(v))
            .cloned()
            .unwrap_or_default()
    }
}
