//! The one redaction function: every secret tingshu knows (backend API
//! keys, registered when read) and every password inside a URL-like text
//! (`scheme://user:PASS@host`, also malformed `scheme//:PASS@host`) become
//! `***`. Messages, report files, state files and logs go through
//! [`redact`] before they are cut to length or written anywhere.

use std::sync::{OnceLock, RwLock};

use regex::Regex;

fn secrets() -> &'static RwLock<Vec<String>> {
    static SECRETS: OnceLock<RwLock<Vec<String>>> = OnceLock::new();
    SECRETS.get_or_init(|| RwLock::new(Vec::new()))
}

/// Remembers `secret` so that [`redact`] hides it everywhere from now on.
/// Values shorter than 4 characters are too common to hide.
pub fn register(secret: &str) {
    if secret.len() < 4 {
        return;
    }
    let mut list = secrets().write().unwrap_or_else(|e| e.into_inner());
    if !list.iter().any(|s| s == secret) {
        list.push(secret.to_owned());
        // Longest first, so a secret containing another is hidden whole.
        list.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

/// `text` with every registered secret and every URL password replaced by
/// `***`.
pub fn redact(text: &str) -> String {
    static URL_PASSWORD: OnceLock<Regex> = OnceLock::new();
    let re = URL_PASSWORD.get_or_init(|| {
        // [scheme:]//[user]:PASSWORD@ — the scheme's colon may be missing
        // (a mistyped URL is printed back in the error about it).
        Regex::new(r#"(?P<pre>(?:[A-Za-z][A-Za-z0-9+.\-]*:?)?//[^\s/@:'"]*):[^\s@'"]+@"#)
            .expect("valid regex")
    });
    let mut out = re.replace_all(text, "${pre}:***@").into_owned();
    let list = secrets().read().unwrap_or_else(|e| e.into_inner());
    for secret in list.iter() {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), "***");
        }
    }
    out
}

/// A writer that redacts what goes through it, line by line (for the log):
/// tracing writes one whole event per `write`.
pub struct RedactingWriter<W: std::io::Write>(pub W);

impl<W: std::io::Write> std::io::Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(redact(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_passwords_are_hidden_even_in_malformed_urls() {
        assert_eq!(
            redact("postgres://tts:s3cret@db:5432/q"),
            "postgres://tts:***@db:5432/q"
        );
        assert_eq!(redact("postgres://tts@db/q"), "postgres://tts@db/q");
        assert_eq!(redact("postgres:///q"), "postgres:///q");
        assert_eq!(
            redact("unsupported queue URL 'redis//:PASS@host' (use …)"),
            "unsupported queue URL 'redis//:***@host' (use …)"
        );
        assert_eq!(
            redact("redis://:pw@127.0.0.1/0"),
            "redis://:***@127.0.0.1/0"
        );
    }

    #[test]
    fn registered_secrets_are_hidden_anywhere() {
        register("sk-redact-test-0123456789");
        register("abc");
        let text = "key sk-redact-test-0123456789, again sk-redact-test-0123456789; abc";
        assert_eq!(redact(text), "key ***, again ***; abc");
    }
}
