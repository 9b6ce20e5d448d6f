//! `tingshu normalize`: stdin lines → their spoken form, one line out per
//! line in.

use std::io::{BufWriter, Write};

use super::EXIT_OK;
use crate::cli::FrontendArgs;
use crate::frontend::{Lexicon, LexiconError, normalize};

/// Runs `normalize`. Unreadable input or lexicon is an `Err` (exit 2).
pub fn run(args: &FrontendArgs) -> anyhow::Result<u8> {
    let lexicon = load_lexicon(args)?;
    let stdout = std::io::stdout().lock();
    let mut out = BufWriter::new(stdout);
    for_each_stdin_line(|line| writeln!(out, "{}", normalize::normalize_with(line, &lexicon)))?;
    finish(out)?;
    Ok(EXIT_OK)
}

/// The lexicon named by `--lexicon`, or an empty one (shared with `pinyin`).
pub(super) fn load_lexicon(args: &FrontendArgs) -> Result<Lexicon, LexiconError> {
    match &args.lexicon {
        Some(path) => Lexicon::load(path),
        None => Ok(Lexicon::new()),
    }
}

/// Calls `f` for each line of standard input (without its line ending).
/// A line that is not UTF-8 is an error naming its line number.
pub(super) fn for_each_stdin_line(
    mut f: impl FnMut(&str) -> std::io::Result<()>,
) -> anyhow::Result<()> {
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
pub(super) fn finish(mut out: impl std::io::Write) -> anyhow::Result<()> {
    match out.flush() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("cannot write to stdout"))
        }
        _ => Ok(()),
    }
}
