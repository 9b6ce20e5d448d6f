//! The CLI commands. Each returns the process exit status or a fatal error.

pub mod build;
pub mod normalize;
pub mod pinyin;
pub mod select;

/// Exit status: everything done.
pub const EXIT_OK: u8 = 0;
/// Exit status: the run finished but some chapters or segments failed.
pub const EXIT_PARTIAL: u8 = 1;
/// Exit status: bad input or a fatal error; nothing was written.
pub const EXIT_FATAL: u8 = 2;

/// Calls `f` for each line of standard input (without its line ending).
/// A line that is not UTF-8 is an error naming its line number.
pub fn for_each_stdin_line(mut f: impl FnMut(&str) -> std::io::Result<()>) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::BufRead;
    let mut stdin = std::io::stdin().lock();
    let mut buf = Vec::new();
    let mut number = 0;
    loop {
        buf.clear();
        let n = stdin
            .read_until(b'\n', &mut buf)
            .context("cannot read stdin")?;
        if n == 0 {
            return Ok(());
        }
        number += 1;
        while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            buf.pop();
        }
        let line = std::str::from_utf8(&buf)
            .map_err(|_| anyhow::anyhow!("stdin line {number}: not UTF-8"))?;
        match f(line) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            other => other.context("cannot write to stdout")?,
        }
    }
}

/// Flushes standard output; a reader that went away (broken pipe) is fine.
pub fn finish(mut out: impl std::io::Write) -> anyhow::Result<()> {
    match out.flush() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("cannot write to stdout"))
        }
        _ => Ok(()),
    }
}

/// Turns a title into a safe file-name part: no path separators, control
/// or reserved characters, no leading dots, at most 60 characters.
pub fn sanitize_file_name(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        let c = if c.is_control()
            || matches!(c, '/' | '\\' | '<' | '>' | ':' | '"' | '|' | '?' | '*')
        {
            '_'
        } else if c.is_whitespace() {
            ' '
        } else {
            c
        };
        if c == ' ' && (out.is_empty() || out.ends_with(' ')) {
            continue;
        }
        out.push(c);
    }
    let trimmed: String = out
        .trim_start_matches(['.', ' '])
        .trim_end_matches(['.', ' '])
        .chars()
        .take(60)
        .collect();
    let trimmed = trimmed.trim_end_matches(['.', ' ']).replace(' ', "_");
    if trimmed.is_empty() {
        "untitled".to_owned()
    } else {
        trimmed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_titles_become_safe_names() {
        assert_eq!(sanitize_file_name("第一章 风起"), "第一章_风起");
        assert_eq!(sanitize_file_name("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(sanitize_file_name("..."), "untitled");
        assert_eq!(sanitize_file_name("a\u{0}b\tc"), "a_b_c");
        assert_eq!(sanitize_file_name(&"长".repeat(100)).chars().count(), 60);
        assert!(!sanitize_file_name(".hidden").starts_with('.'));
    }
}
