//! Secrets from the environment: the variables the backends name (API keys,
//! regions), read once when the file is loaded and never printed.

use super::{ConfigError, VoicesConfig};
use crate::synth::SecretVar;
use crate::synth::http::Secret;

impl VoicesConfig {
    /// Reads the variables every backend names from `env`; a required one
    /// that is unset or empty is an error at the key that names it.
    pub(super) fn read_env(
        &mut self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), ConfigError> {
        for (name, backend) in &self.backends {
            for SecretVar { key, var, required } in backend.kind().secrets() {
                match env(var).filter(|v| !v.is_empty()) {
                    Some(value) => {
                        self.env.insert(var.to_owned(), Secret::new(value));
                    }
                    None if required => {
                        return Err(self.invalid(
                            format!("backends.{name}.{key}"),
                            format!("environment variable {var} is not set"),
                        ));
                    }
                    None => {}
                }
            }
        }
        Ok(())
    }

    /// The value of the environment variable `var` (empty when unset).
    pub(super) fn secret(&self, var: &str) -> Secret {
        self.env.get(var).cloned().unwrap_or_default()
    }
}
