//! The one redaction function: every secret tingshu knows (backend API
//! keys, registered when read) and every password inside a URL-like text
//! (`scheme://user:PASS@host`, also malformed `scheme//:PASS@host`) become
//! `***`. Messages, report files, state files and logs go through
//! [`redact`] before they are cut to length or written anywhere.
//!
//! A secret leaves tingshu in more forms than its raw text: percent-encoded
//! in a URL (`%2D` or `%2d`, `+` for a space, even `%252D` when encoded
//! twice), JSON-escaped in a body (`\u002d`, `\/`), in base64 (standard or
//! URL-safe, with or without padding, and inside a longer base64 text such
//! as the basic-auth `user:secret`). [`register`] derives a pattern for
//! every one of these forms once, and [`redact`] hides them all — mixed
//! forms included (some characters escaped, some not).

use std::fmt::Write as _;
use std::sync::{OnceLock, RwLock};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use regex::Regex;

/// The registered secrets and the one pattern that matches every form of
/// each of them.
#[derive(Default)]
struct Secrets {
    raw: Vec<String>,
    pattern: Option<Regex>,
}

fn secrets() -> &'static RwLock<Secrets> {
    static SECRETS: OnceLock<RwLock<Secrets>> = OnceLock::new();
    SECRETS.get_or_init(|| RwLock::new(Secrets::default()))
}

/// Shortest base64 run (of a secret inside longer base64) worth hiding:
/// shorter runs would hide ordinary words.
const MIN_BASE64_RUN: usize = 8;

/// Remembers `secret` so that [`redact`] hides it, in every encoding, from
/// now on. Values shorter than 4 characters are too common to hide.
pub fn register(secret: &str) {
    if secret.len() < 4 {
        return;
    }
    let mut secrets = secrets().write().unwrap_or_else(|e| e.into_inner());
    if secrets.raw.iter().any(|s| s == secret) {
        return;
    }
    secrets.raw.push(secret.to_owned());
    let mut forms: Vec<String> = secrets.raw.iter().flat_map(|s| forms(s)).collect();
    // Longest first, so a secret containing another is hidden whole (the
    // alternation takes the first branch that matches).
    forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
    forms.dedup();
    let alternatives: Vec<String> = forms.iter().map(|f| char_by_char(f)).collect();
    secrets.pattern = Regex::new(&alternatives.join("|")).ok();
}

/// The texts a secret is spelt as before escaping: itself, and its base64
/// forms (whole, and the part that stays the same inside longer base64 at
/// each of the three byte alignments, e.g. after `user:`).
fn forms(secret: &str) -> Vec<String> {
    let bytes = secret.as_bytes();
    let mut out = vec![secret.to_owned()];
    for engine in [&STANDARD, &URL_SAFE, &STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        out.push(engine.encode(bytes));
    }
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        for skip in 0..3 {
            // Starting `skip` bytes in, whole groups of 3 bytes encode to
            // the same 4 characters wherever the secret sits in the input.
            let Some(rest) = bytes.get(skip..) else {
                continue;
            };
            let whole = &rest[..rest.len() - rest.len() % 3];
            let run = engine.encode(whole);
            if run.len() >= MIN_BASE64_RUN {
                out.push(run);
            }
        }
    }
    out
}

/// A pattern matching `form` with any of its characters written raw,
/// percent-encoded (either case of hex, `+` for a space, `%25` for a `%`
/// encoded twice) or JSON-escaped (`\uXXXX`, `\/`, `\"`, `\\`).
fn char_by_char(form: &str) -> String {
    let mut pattern = String::new();
    for c in form.chars() {
        let mut alternatives = vec![regex::escape(c.encode_utf8(&mut [0; 4]))];
        if c == ' ' {
            alternatives.push(r"\+".to_owned());
        }
        let mut percent = String::new();
        for b in c.encode_utf8(&mut [0; 4]).bytes() {
            let _ = write!(percent, "%(?:25)?{}", any_case_hex(&format!("{b:02X}")));
        }
        alternatives.push(percent);
        let mut units = [0u16; 2];
        let mut json = String::new();
        for unit in c.encode_utf16(&mut units) {
            let _ = write!(json, r"\\u{}", any_case_hex(&format!("{unit:04X}")));
        }
        alternatives.push(json);
        if matches!(c, '/' | '"' | '\\') {
            alternatives.push(format!(r"\\{}", regex::escape(&c.to_string())));
        }
        let _ = write!(pattern, "(?:{})", alternatives.join("|"));
    }
    pattern
}

/// `hex` as a pattern that accepts its letters in either case.
fn any_case_hex(hex: &str) -> String {
    hex.chars()
        .map(|c| {
            if c.is_ascii_alphabetic() {
                format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase())
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `text` with every registered secret (in any of its encodings) and every
/// URL password replaced by `***`.
pub fn redact(text: &str) -> String {
    static URL_PASSWORD: OnceLock<Regex> = OnceLock::new();
    let re = URL_PASSWORD.get_or_init(|| {
        // [scheme:]//[user]:PASSWORD@ — the scheme's colon may be missing
        // (a mistyped URL is printed back in the error about it).
        Regex::new(r#"(?P<pre>(?:[A-Za-z][A-Za-z0-9+.\-]*:?)?//[^\s/@:'"]*):[^\s@'"]+@"#)
            .expect("valid regex")
    });
    let out = re.replace_all(text, "${pre}:***@").into_owned();
    let secrets = secrets().read().unwrap_or_else(|e| e.into_inner());
    match &secrets.pattern {
        Some(pattern) => pattern.replace_all(&out, "***").into_owned(),
        None => out,
    }
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

    #[test]
    fn every_encoding_of_a_secret_is_hidden() {
        let secret = "sk-enc/Test key+9Qz~";
        register(secret);
        let b64 = |e: &base64::engine::GeneralPurpose, s: &str| e.encode(s.as_bytes());
        let percent_upper: String =
            percent_encoding::utf8_percent_encode(secret, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
        let texts = [
            secret.to_owned(),
            percent_upper.clone(),
            Regex::new("%[0-9A-F]{2}")
                .unwrap()
                .replace_all(&percent_upper, |c: &regex::Captures| c[0].to_lowercase())
                .into_owned(),
            percent_upper.replace("%20", "+"),
            percent_upper.replace('%', "%25"),
            serde_json::to_string(secret).unwrap().replace('/', "\\/"),
            secret
                .chars()
                .map(|c| format!("\\u{:04x}", c as u32))
                .collect(),
            b64(&STANDARD, secret),
            b64(&URL_SAFE_NO_PAD, secret),
            b64(&STANDARD, &format!("user:{secret}")),
            b64(&STANDARD, &format!("ab:{secret}")),
            b64(&URL_SAFE, &format!("a:{secret}")),
        ];
        for text in texts {
            let shown = redact(&format!("GET /tts?k={text} HTTP/1.1"));
            assert!(shown.contains("***"), "{text} -> {shown}");
            assert!(!shown.contains("Test"), "{text} -> {shown}");
            for form in forms(secret) {
                assert!(!shown.contains(&form), "{text} -> {shown}");
            }
            assert!(shown.len() < text.len() / 2 + 24, "{text} -> {shown}");
        }
        // Ordinary text is left alone.
        assert_eq!(redact("sk-enc and Test key"), "sk-enc and Test key");
    }
}
