//! The voices of a render as text: the voices file, the cast file applied
//! to it and the lexicon entries. Queue tasks carry it verbatim, so that
//! workers on other machines render with exactly what `build` and
//! `batch run` render with.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::{ConfigError, VoicesConfig};
use crate::frontend::lexicon::{Entry, Lexicon};
use crate::text::{Cast, CastError};

/// A voices file and the cast file applied to it, carried verbatim in task
/// payloads, so workers render the same voices as `build` and `batch run`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VoicesSource {
    /// Where it came from, for messages.
    pub file: String,
    pub toml: String,
    /// The cast file (speaker → voice casting), when the job has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cast: Option<CastSource>,
    /// Pronunciation overrides (`--lexicon` and EPUB ruby readings), as
    /// `build` uses them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lexicon: Vec<Entry>,
}

/// A cast file's text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CastSource {
    pub file: String,
    pub toml: String,
}

/// Why the voices of a render could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum VoicesError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Cast(#[from] CastError),
}

impl VoicesSource {
    /// Reads the voices file at `path`, or the embedded default.
    pub fn load(path: Option<&std::path::Path>) -> Result<VoicesSource, ConfigError> {
        match path {
            None => {
                let (file, toml) = crate::config::voices_text(None)?;
                Ok(VoicesSource {
                    file,
                    toml,
                    cast: None,
                    lexicon: Vec::new(),
                })
            }
            Some(path) => Ok(VoicesSource {
                file: path.display().to_string(),
                toml: std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                    path: path.to_owned(),
                    source,
                })?,
                cast: None,
                lexicon: Vec::new(),
            }),
        }
    }

    /// Adds the cast file at `path`, and returns it parsed (checked here,
    /// applied by [`parse_with`](Self::parse_with)), so that a render
    /// parses it once.
    pub fn with_cast(
        mut self,
        path: Option<&std::path::Path>,
    ) -> Result<(VoicesSource, Option<Cast>), CastError> {
        let Some(path) = path else {
            self.cast = None;
            return Ok((self, None));
        };
        let toml = std::fs::read_to_string(path).map_err(|reason| CastError::Io {
            path: path.to_owned(),
            reason,
        })?;
        let cast = Cast::parse(&toml, path)?;
        self.cast = Some(CastSource {
            file: path.display().to_string(),
            toml,
        });
        Ok((self, Some(cast)))
    }

    /// The lexicon of [`VoicesSource::lexicon`].
    pub fn lexicon(&self) -> Lexicon {
        let mut lexicon = Lexicon::new();
        for entry in &self.lexicon {
            lexicon.insert(entry.clone());
        }
        lexicon
    }

    /// The cast file, parsed (it was checked when it was read).
    pub fn cast(&self) -> Result<Option<Cast>, CastError> {
        self.cast
            .as_ref()
            .map(|c| Cast::parse(&c.toml, Path::new(&c.file)))
            .transpose()
    }

    /// The voices, with the cast's voices and casting applied.
    pub fn parse(&self) -> Result<VoicesConfig, VoicesError> {
        self.parse_with(self.cast()?.as_ref())
    }

    /// Like [`parse`](Self::parse), with the cast already parsed: `cast`
    /// is [`VoicesSource::cast`] parsed.
    pub fn parse_with(&self, cast: Option<&Cast>) -> Result<VoicesConfig, VoicesError> {
        let mut config = VoicesConfig::parse(&self.toml, &self.file)?;
        if let (Some(source), Some(cast)) = (&self.cast, cast) {
            config.apply_cast(Path::new(&source.file), cast)?;
        }
        Ok(config)
    }
}
