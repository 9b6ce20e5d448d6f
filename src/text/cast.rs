//! The cast file (TOML): the characters of a book, the names they go by and
//! their gender. The reading script always names a speaker by the canonical
//! `name`; `voice` is for voice casting.
//!
//! ```toml
//! [[character]]
//! name = "孙少安"
//! aliases = ["少安"]
//! gender = "male"      # male | female | unknown
//! # voice = "..."
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Why a cast file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CastError {
    /// The reason is in the message (not a `#[source]`), so that it is
    /// printed once by `{:#}` chains.
    #[error("{path}: cannot read cast file: {reason}")]
    Io {
        path: PathBuf,
        reason: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: character[{index}].name: must not be empty")]
    EmptyName { path: PathBuf, index: usize },
    #[error("{path}: character[{index}].{key}: {name:?} is already used by character {other:?}")]
    Duplicate {
        path: PathBuf,
        index: usize,
        key: &'static str,
        name: String,
        other: String,
    },
}

/// A character's gender, used to resolve 他/她.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Gender {
    Male,
    Female,
    #[default]
    Unknown,
}

impl Gender {
    pub fn as_str(self) -> &'static str {
        match self {
            Gender::Male => "male",
            Gender::Female => "female",
            Gender::Unknown => "unknown",
        }
    }
}

/// One character of the cast.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Character {
    /// Canonical name, used as the speaker in the script.
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    #[serde(default)]
    pub gender: Gender,
    /// Voice for this character's lines (see the voices file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice: Option<String>,
}

/// The characters of a book.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cast {
    #[serde(default, rename = "character")]
    pub characters: Vec<Character>,
}

impl Cast {
    /// Reads and checks a cast file.
    pub fn load(path: &Path) -> Result<Cast, CastError> {
        let text = std::fs::read_to_string(path).map_err(|reason| CastError::Io {
            path: path.to_owned(),
            reason,
        })?;
        Cast::parse(&text, path)
    }

    /// Parses and checks cast TOML; `path` names the source in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Cast, CastError> {
        let cast: Cast = toml::from_str(text).map_err(|e| CastError::Parse {
            path: path.to_owned(),
            message: one_line(&e, text),
        })?;
        cast.check(path)?;
        Ok(cast)
    }

    /// Names must be non-empty and no name or alias may belong to two characters.
    fn check(&self, path: &Path) -> Result<(), CastError> {
        // Name or alias → the position of the character that has it.
        let mut owner: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for (index, c) in self.characters.iter().enumerate() {
            if c.name.trim().is_empty() {
                return Err(CastError::EmptyName {
                    path: path.to_owned(),
                    index,
                });
            }
            let names = std::iter::once(("name", c.name.as_str()))
                .chain(c.aliases.iter().map(|a| ("aliases", a.as_str())));
            for (key, name) in names {
                let name = name.trim();
                if name.is_empty() {
                    continue;
                }
                match owner.insert(name, index) {
                    Some(other) if other != index => {
                        return Err(CastError::Duplicate {
                            path: path.to_owned(),
                            index,
                            key,
                            name: name.to_owned(),
                            other: self.characters[other].name.clone(),
                        });
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The character with this canonical name.
    pub fn get(&self, name: &str) -> Option<&Character> {
        self.characters.iter().find(|c| c.name == name)
    }

    /// A cast file for people to edit: one `[[character]]` per entry, with a
    /// comment giving the number of lines attributed to it.
    pub fn to_toml_with_counts(&self, lines: &[usize]) -> String {
        let notes: Vec<Vec<String>> = lines.iter().map(|n| vec![format!("{n} lines")]).collect();
        self.to_toml_with_notes(&notes)
    }

    /// A cast file for people to edit, with comment lines above each
    /// `[[character]]` (`notes[i]`, one comment per string).
    pub fn to_toml_with_notes(&self, notes: &[Vec<String>]) -> String {
        let mut out = String::from(
            "# Characters found in the book; edit names, aliases and genders, then\n\
             # pass this file with --cast. gender: male | female | unknown\n",
        );
        for (i, c) in self.characters.iter().enumerate() {
            out.push('\n');
            for note in notes.get(i).into_iter().flatten() {
                let _ = writeln!(out, "# {}", note.replace('\n', " "));
            }
            out.push_str("[[character]]\n");
            let _ = writeln!(out, "name = {}", toml_string(&c.name));
            let aliases: Vec<String> = c.aliases.iter().map(|a| toml_string(a)).collect();
            let _ = writeln!(out, "aliases = [{}]", aliases.join(", "));
            let _ = writeln!(out, "gender = \"{}\"", c.gender.as_str());
            match &c.voice {
                Some(v) => {
                    let _ = writeln!(out, "voice = {}", toml_string(v));
                }
                None => out.push_str("# voice = \"\"\n"),
            }
        }
        out
    }
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// The parser's message on one line, with the line it points at and that
/// line's key (`line 3, key gender: unknown variant …`).
pub(crate) fn one_line(e: &toml::de::Error, text: &str) -> String {
    let message = e.message().trim().replace('\n', " ");
    let Some(span) = e.span() else {
        return message;
    };
    let at = span.start.min(text.len());
    let line_no = text.as_bytes()[..at]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1;
    let line = text.lines().nth(line_no - 1).unwrap_or("");
    match line.split_once('=') {
        Some((key, _)) if !key.trim().is_empty() && !key.contains('[') => {
            format!("line {line_no}, key {}: {message}", key.trim())
        }
        _ => format!("line {line_no}: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "cast.toml";

    #[test]
    fn parses_a_cast() {
        let cast = Cast::parse(
            "[[character]]\nname = \"孙少安\"\naliases = [\"少安\"]\ngender = \"male\"\n\n[[character]]\nname = \"田润叶\"\ngender = \"female\"\nvoice = \"f1\"\n",
            Path::new(FILE),
        )
        .unwrap();
        assert_eq!(cast.characters.len(), 2);
        assert_eq!(cast.characters[0].aliases, ["少安"]);
        assert_eq!(cast.characters[1].gender, Gender::Female);
        assert_eq!(cast.characters[1].voice.as_deref(), Some("f1"));
        assert_eq!(cast.get("孙少安").unwrap().gender, Gender::Male);
    }

    #[test]
    fn errors_name_the_file_and_key() {
        let err = Cast::parse("[[character]]\nname = \"甲\"\nage = 3\n", Path::new(FILE))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("cast.toml: "), "{err}");
        assert!(err.contains("age"), "{err}");
        assert!(!err.contains('\n'));
        let err = Cast::parse(
            "[[character]]\nname = \"甲\"\ngender = \"m\"\n",
            Path::new(FILE),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("gender") || err.contains("male"), "{err}");
        let err = Cast::parse(
            "[[character]]\nname = \"甲\"\n[[character]]\nname = \"乙\"\naliases = [\"甲\"]\n",
            Path::new(FILE),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("character[1].aliases"), "{err}");
        // Two characters of the same name clash as an alias does.
        let err = Cast::parse(
            "[[character]]\nname = \"甲\"\ngender = \"male\"\n[[character]]\nname = \"甲\"\ngender = \"female\"\n",
            Path::new(FILE),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("character[1].name: \"甲\" is already used"),
            "{err}"
        );
        // A character may repeat its own name among its aliases.
        Cast::parse(
            "[[character]]\nname = \"甲\"\naliases = [\"甲\", \"小甲\"]\n",
            Path::new(FILE),
        )
        .unwrap();
        let err = Cast::parse("[[character]]\nname = \" \"\n", Path::new(FILE))
            .unwrap_err()
            .to_string();
        assert!(err.contains("character[0].name"), "{err}");
    }

    #[test]
    fn suggested_file_parses_back() {
        let cast = Cast {
            characters: vec![Character {
                name: "毛\"仲".into(),
                aliases: vec!["仲".into()],
                gender: Gender::Unknown,
                voice: None,
            }],
        };
        let text = cast.to_toml_with_counts(&[3]);
        assert!(text.contains("# 3 lines"));
        assert_eq!(Cast::parse(&text, Path::new(FILE)).unwrap(), cast);
    }
}
