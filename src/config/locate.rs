//! Where a key is in the text of a voices file, so that a message names
//! its line.

use super::ConfigError;

impl ConfigError {
    /// Adds the line of the key in `text` to an `Invalid` error.
    pub(super) fn locate(self, text: &str) -> ConfigError {
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

/// The field named by a serde "unknown field `x`" message.
pub(super) fn unknown_field(message: &str) -> Option<&str> {
    let rest = message.split_once("unknown field `")?.1;
    rest.split_once('`').map(|(field, _)| field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::VoicesConfig;

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
}
