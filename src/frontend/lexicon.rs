//! A per-book pronunciation lexicon (TOML) that overrides everything else:
//!
//! ```toml
//! "毛仲" = "mao2 zhong4"          # how the word is read
//! "靼子" = { say = "鞑子" }       # what is said instead (normalize, synthesis)
//! "1" = { say = "幺" }           # how a digit is said in phone numbers and codes
//! ```
//!
//! Keys may be written in Simplified or Traditional characters; they match
//! either script.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::dictionary::Dictionary;

/// Why a lexicon could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LexiconError {
    #[error("cannot read lexicon {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("lexicon {}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("lexicon {}:{line}: key \"{key}\": {problem}", path.display())]
    Entry {
        line: usize,
        path: PathBuf,
        key: String,
        problem: String,
    },
}

/// A pronunciation override.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Entry {
    /// The word as written in the lexicon.
    pub word: String,
    /// One tone-numbered syllable per character, when given.
    pub pinyin: Option<Vec<String>>,
    /// Replacement text to say instead, when given.
    pub say: Option<String>,
}

/// The entries of one lexicon file.
#[derive(Debug, Clone, Default)]
pub struct Lexicon {
    entries: Vec<Entry>,
    /// Simplified form of each entry's word, for matching either script.
    keys: Vec<String>,
    index: HashMap<String, usize>,
    max_chars: usize,
}

/// The 1-based line where `key` is defined (1 when not found).
fn entry_line(text: &str, key: &str) -> usize {
    let quoted = format!("\"{key}\"");
    let single = format!("'{key}'");
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            [quoted.as_str(), single.as_str(), key].iter().any(|k| {
                l.strip_prefix(k)
                    .is_some_and(|rest| rest.trim_start().starts_with('='))
            })
        })
        .map_or(1, |i| i + 1)
}

/// An entry as written: `"mao2 zhong4"` or `{ pinyin = "…", say = "…" }`;
/// anything else is a plain message saying what is expected.
fn raw_entry(value: toml::Value) -> Result<(Option<String>, Option<String>), String> {
    const EXPECTED: &str = "expected a pinyin string such as \"mao2 zhong4\" or a table { pinyin = \"…\", say = \"…\" }";
    match value {
        toml::Value::String(p) => Ok((Some(p), None)),
        toml::Value::Table(table) => {
            let mut pinyin = None;
            let mut say = None;
            for (k, v) in table {
                let slot = match k.as_str() {
                    "pinyin" => &mut pinyin,
                    "say" => &mut say,
                    other => {
                        return Err(format!("unknown key '{other}' (known: pinyin, say)"));
                    }
                };
                match v {
                    toml::Value::String(text) => *slot = Some(text),
                    other => {
                        return Err(format!("{k} must be a string, not {}", other.type_str()));
                    }
                }
            }
            Ok((pinyin, say))
        }
        other => Err(format!("{EXPECTED}, not {}", other.type_str())),
    }
}

impl Lexicon {
    /// An empty lexicon.
    pub fn new() -> Lexicon {
        Lexicon::default()
    }

    /// Reads a lexicon file.
    pub fn load(path: &Path) -> Result<Lexicon, LexiconError> {
        let text = std::fs::read_to_string(path).map_err(|source| LexiconError::Read {
            path: path.to_owned(),
            source,
        })?;
        Lexicon::parse(&text, path)
    }

    /// Parses lexicon TOML; `path` only names the source in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Lexicon, LexiconError> {
        let raw: toml::Table = toml::from_str(text).map_err(|e| LexiconError::Parse {
            path: path.to_owned(),
            message: e.message().to_owned(),
        })?;
        let mut lexicon = Lexicon::new();
        for (key, value) in raw {
            let line = entry_line(text, &key);
            let entry_error = |problem: String| LexiconError::Entry {
                line,
                path: path.to_owned(),
                key: key.clone(),
                problem,
            };
            let (pinyin, say) = raw_entry(value).map_err(entry_error)?;
            if pinyin.is_none() && say.is_none() {
                return Err(entry_error("needs a pinyin string or say = \"…\"".into()));
            }
            if key.trim().is_empty() {
                return Err(entry_error("empty word".into()));
            }
            let pinyin = match pinyin {
                Some(p) => Some(parse_syllables(&p, key.chars().count()).map_err(entry_error)?),
                None => None,
            };
            lexicon.insert(Entry {
                word: key.clone(),
                pinyin,
                say,
            });
        }
        Ok(lexicon)
    }

    /// Adds an entry (a later entry for the same word wins).
    pub fn insert(&mut self, entry: Entry) {
        let dict = Dictionary::get();
        let key: String = entry.word.chars().map(|c| dict.simplified(c)).collect();
        self.max_chars = self.max_chars.max(key.chars().count());
        if let Some(&i) = self.index.get(&key) {
            self.entries[i] = entry;
        } else {
            self.index.insert(key.clone(), self.keys.len());
            self.keys.push(key);
            self.entries.push(entry);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Length in characters of the longest word.
    pub fn max_chars(&self) -> usize {
        self.max_chars
    }

    /// The entry for a word given in Simplified characters.
    pub fn lookup_simplified(&self, word: &str) -> Option<&Entry> {
        if self.entries.is_empty() {
            return None;
        }
        self.index.get(word).map(|&i| &self.entries[i])
    }

    /// Entries with a `say` replacement, longest word first, as (word in
    /// Simplified, entry).
    pub fn replacements(&self) -> impl Iterator<Item = (&str, &Entry)> {
        let mut v: Vec<(&str, &Entry)> = self
            .keys
            .iter()
            .zip(&self.entries)
            .filter(|(_, e)| e.say.is_some())
            .map(|(k, e)| (k.as_str(), e))
            .collect();
        v.sort_by_key(|(k, _)| std::cmp::Reverse(k.chars().count()));
        v.into_iter()
    }
}

/// "mao2 zhong4" → ["mao2", "zhong4"], checking each syllable and the count.
fn parse_syllables(text: &str, chars: usize) -> Result<Vec<String>, String> {
    let syllables: Vec<String> = text
        .split_whitespace()
        .map(|s| s.to_lowercase().replace('ü', "v").replace("u:", "v"))
        .collect();
    for s in &syllables {
        let (letters, tone) = s.split_at(s.len() - 1);
        let ok = !letters.is_empty()
            && letters.bytes().all(|b| b.is_ascii_lowercase())
            && matches!(tone, "1" | "2" | "3" | "4" | "5");
        if !ok {
            return Err(format!(
                "bad syllable \"{s}\" (want letters and a tone 1-5, e.g. zhong4)"
            ));
        }
    }
    if syllables.len() != chars {
        return Err(format!(
            "{} syllables for {chars} characters",
            syllables.len()
        ));
    }
    Ok(syllables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_readings_and_replacements() {
        let lex = Lexicon::parse(
            "\"毛仲\" = \"mao2 zhong4\"\n\"靼子\" = { say = \"鞑子\" }\n\"女\" = \"nü3\"\n",
            Path::new("book.toml"),
        )
        .unwrap();
        let e = lex.lookup_simplified("毛仲").unwrap();
        assert_eq!(
            e.pinyin.as_deref(),
            Some(&["mao2".into(), "zhong4".into()][..])
        );
        assert_eq!(
            lex.lookup_simplified("靼子").unwrap().say.as_deref(),
            Some("鞑子")
        );
        assert_eq!(
            lex.lookup_simplified("女").unwrap().pinyin.as_deref(),
            Some(&["nv3".into()][..])
        );
        assert_eq!(lex.max_chars(), 2);
    }

    #[test]
    fn traditional_keys_match_simplified_text() {
        let lex = Lexicon::parse("\"銀杏\" = \"yin2 xing4\"", Path::new("x.toml")).unwrap();
        assert!(lex.lookup_simplified("银杏").is_some());
    }

    #[test]
    fn errors_name_file_and_key() {
        let err = Lexicon::parse("\"毛仲\" = \"mao2\"", Path::new("b.toml")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "lexicon b.toml:1: key \"毛仲\": 1 syllables for 2 characters"
        );
        let err = Lexicon::parse("\"毛\" = \"mao\"", Path::new("b.toml")).unwrap_err();
        assert!(err.to_string().contains("bad syllable \"mao\""), "{err}");
        let err = Lexicon::parse("\"毛\" = { sai = \"x\" }", Path::new("b.toml")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "lexicon b.toml:1: key \"毛\": unknown key 'sai' (known: pinyin, say)"
        );
        let err =
            Lexicon::parse("\"灯\" = \"deng1\"\n\"毛\" = 3", Path::new("b.toml")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "lexicon b.toml:2: key \"毛\": expected a pinyin string such as \"mao2 zhong4\" or a table { pinyin = \"…\", say = \"…\" }, not integer"
        );
        let err = Lexicon::parse("毛 = ", Path::new("b.toml")).unwrap_err();
        assert!(err.to_string().starts_with("lexicon b.toml: "), "{err}");
    }
}
