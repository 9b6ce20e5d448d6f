//! `tingshu normalize`: stdin lines → their spoken form, one line out per
//! line in.

use std::io::{BufWriter, Write};

use super::EXIT_OK;
use crate::cli::FrontendArgs;
use crate::frontend::normalize;

/// Runs `normalize`. Unreadable input or lexicon is an `Err` (exit 2).
pub fn run(args: &FrontendArgs) -> anyhow::Result<u8> {
    let lexicon = args.lexicon()?;
    let stdout = std::io::stdout().lock();
    let mut out = BufWriter::new(stdout);
    super::for_each_stdin_line(|line| {
        writeln!(out, "{}", normalize::normalize_with(line, &lexicon))
    })?;
    super::finish(out)?;
    Ok(EXIT_OK)
}
