//! Errors as people read them: one line, secrets redacted; and the exit
//! statuses they lead to.

/// Exit status: everything done.
pub const EXIT_OK: u8 = 0;
/// Exit status: the run finished but some chapters or segments failed.
pub const EXIT_PARTIAL: u8 = 1;
/// Exit status: bad input or a fatal error; nothing was written.
pub const EXIT_FATAL: u8 = 2;

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
