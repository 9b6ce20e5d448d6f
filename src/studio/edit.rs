//! Edits from the page turned into the text of the cast and lexicon files.
//! The text is then checked by the same parsers as on the command line, so
//! a bad edit gets the same file:key message.

use std::fmt::Write as _;
use std::path::Path;

use serde::Deserialize;

use super::StudioError;

/// One character as the page sends it. Gender is kept as written, so that
/// a bad one is reported by the cast parser with its line and key.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CharacterEdit {
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    #[serde(default)]
    pub gender: Option<String>,
    #[serde(default)]
    pub voice: Option<String>,
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// The cast file for `characters`, with the number of lines each speaks.
pub fn cast_toml(characters: &[CharacterEdit], lines: impl Fn(&str) -> usize) -> String {
    let mut out = String::from(
        "# Cast file written by `tingshu studio`: names, aliases, genders and\n\
         # voices of the characters. gender: male | female | unknown\n",
    );
    for c in characters {
        out.push('\n');
        let _ = writeln!(out, "# {} lines", lines(&c.name));
        out.push_str("[[character]]\n");
        let _ = writeln!(out, "name = {}", toml_string(&c.name));
        let aliases: Vec<String> = c.aliases.iter().map(|a| toml_string(a)).collect();
        let _ = writeln!(out, "aliases = [{}]", aliases.join(", "));
        let gender = c.gender.as_deref().unwrap_or("unknown");
        let _ = writeln!(out, "gender = {}", toml_string(gender));
        match c.voice.as_deref().filter(|v| !v.is_empty()) {
            Some(v) => {
                let _ = writeln!(out, "voice = {}", toml_string(v));
            }
            None => out.push_str("# voice = \"\"\n"),
        }
    }
    out
}

/// One change to the lexicon from the page.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LexiconEdit {
    pub word: String,
    /// Tone-numbered syllables, one per character: "hang2".
    #[serde(default)]
    pub pinyin: Option<String>,
    /// Text said instead.
    #[serde(default)]
    pub say: Option<String>,
    /// Removes the word's entry.
    #[serde(default)]
    pub remove: bool,
}

/// The lexicon text `current` with `edit` made. The entry is written as
/// given; the lexicon parser checks it afterwards.
pub fn lexicon_with(current: &str, edit: &LexiconEdit) -> Result<String, String> {
    let mut table: toml::Table = toml::from_str(current).map_err(|e| e.message().to_owned())?;
    let word = edit.word.trim();
    if edit.remove {
        table.remove(word);
    } else {
        let value = match (&edit.pinyin, &edit.say) {
            (Some(p), None) => toml::Value::String(p.trim().to_owned()),
            (pinyin, say) => {
                let mut t = toml::Table::new();
                if let Some(p) = pinyin {
                    t.insert("pinyin".into(), toml::Value::String(p.trim().to_owned()));
                }
                if let Some(s) = say {
                    t.insert("say".into(), toml::Value::String(s.to_owned()));
                }
                toml::Value::Table(t)
            }
        };
        table.insert(word.to_owned(), value);
    }
    let mut out = String::from("# Pronunciation lexicon written by `tingshu studio`.\n");
    // One `"word" = …` line per entry (inline tables), in key order.
    for (key, value) in &table {
        let value = match value {
            toml::Value::Table(t) => {
                let parts: Vec<String> = t
                    .iter()
                    .map(|(k, v)| format!("{k} = {}", inline(v)))
                    .collect();
                format!("{{ {} }}", parts.join(", "))
            }
            other => inline(other),
        };
        let _ = writeln!(out, "{} = {value}", toml_string(key));
    }
    Ok(out)
}

fn inline(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => toml_string(s),
        other => other.to_string(),
    }
}

/// Writes `text` to `path` through a temporary file in the same directory,
/// so that a reader sees the old file or the new one, never a part.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), StudioError> {
    crate::fsutil::write_atomic_synced(path, text.as_bytes()).map_err(|reason| StudioError::Write {
        path: path.to_owned(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontend::Lexicon;
    use crate::text::{Cast, Gender};

    #[test]
    fn cast_edits_parse_back() {
        let chars = vec![
            CharacterEdit {
                name: "韩\"一".into(),
                aliases: vec!["一".into()],
                gender: Some("female".into()),
                voice: Some("f".into()),
            },
            CharacterEdit {
                name: "陆".into(),
                aliases: vec![],
                gender: None,
                voice: None,
            },
        ];
        let text = cast_toml(&chars, |n| n.chars().count());
        assert!(text.contains("# 3 lines"), "{text}");
        let cast = Cast::parse(&text, Path::new("c.toml")).unwrap();
        assert_eq!(cast.characters[0].name, "韩\"一");
        assert_eq!(cast.characters[0].gender, Gender::Female);
        assert_eq!(cast.characters[0].voice.as_deref(), Some("f"));
        assert_eq!(cast.characters[1].voice, None);
    }

    #[test]
    fn a_bad_gender_gets_the_cast_parsers_line_and_key() {
        let chars = vec![CharacterEdit {
            name: "陆".into(),
            aliases: vec![],
            gender: Some("boy".into()),
            voice: None,
        }];
        let err = Cast::parse(&cast_toml(&chars, |_| 0), Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("c.toml: line 8, key gender:"), "{err}");
    }

    #[test]
    fn lexicon_edits_keep_other_entries() {
        let start = "\"甲\" = \"jia3\"\n\"乙\" = { say = \"丙\" }\n";
        let edit = |word: &str, pinyin: Option<&str>, remove: bool| LexiconEdit {
            word: word.into(),
            pinyin: pinyin.map(str::to_owned),
            say: None,
            remove,
        };
        let text = lexicon_with(start, &edit("行", Some("hang2"), false)).unwrap();
        let lex = Lexicon::parse(&text, Path::new("l.toml")).unwrap();
        assert_eq!(lex.entries().len(), 3);
        assert_eq!(
            lex.lookup_simplified("行").unwrap().pinyin.as_deref(),
            Some(&["hang2".to_owned()][..])
        );
        assert_eq!(
            lex.lookup_simplified("乙").unwrap().say.as_deref(),
            Some("丙")
        );
        let text = lexicon_with(&text, &edit("甲", None, true)).unwrap();
        let lex = Lexicon::parse(&text, Path::new("l.toml")).unwrap();
        assert!(lex.lookup_simplified("甲").is_none());
        // A bad reading is written as given and caught by the parser.
        let text = lexicon_with(&text, &edit("行", Some("hang"), false)).unwrap();
        let err = Lexicon::parse(&text, Path::new("l.toml")).unwrap_err();
        assert!(err.to_string().contains("key \"行\""), "{err}");
    }
}
