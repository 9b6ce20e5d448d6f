//! Errors as people read them: one line, secrets redacted.

/// An error and its sources on one line, joined by ": ", secrets redacted.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        out.push_str(": ");
        out.push_str(&e.to_string());
        source = e.source();
    }
    crate::redact::redact(&out)
}
