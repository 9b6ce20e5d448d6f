//! `tingshu pinyin [--jsonl]`: stdin lines → lexical tone-numbered pinyin
//! (no tone sandhi). Plain: the syllables of each line, space-separated,
//! with each run of Latin letters as a token of its own where it stands, as
//! the voices get it (`QQ`, `iPhone`). `--jsonl`: one JSON array per line,
//! one element per Unicode scalar value (the syllable, or null for a
//! character that is not Han). `--phonemes`: what the neural voice is sent
//! for the line (sandhi applied) and its token count, tab-separated.

use std::io::{BufWriter, Write};

use super::EXIT_OK;
use super::normalize::{finish, for_each_stdin_line, load_lexicon};
use crate::cli::PinyinArgs;
use crate::frontend::pinyin;

/// Runs `pinyin`. Unreadable input or lexicon is an `Err` (exit 2).
pub fn run(args: &PinyinArgs) -> anyhow::Result<u8> {
    let lexicon = load_lexicon(&args.frontend)?;
    let stdout = std::io::stdout().lock();
    let mut out = BufWriter::new(stdout);
    for_each_stdin_line(|line| {
        if args.phonemes {
            let spoken = crate::frontend::prepare_with(line, &lexicon);
            let phonemes = crate::synth::kokoro::phonemes::phonemize(&spoken.pinyin_words);
            let tokens = crate::synth::kokoro::phonemes::tokens(&phonemes).len();
            return writeln!(out, "{phonemes}\t{tokens}");
        }
        let readings = pinyin::lexical(line, &lexicon);
        if args.jsonl {
            let json = serde_json::to_string(&readings).map_err(std::io::Error::other)?;
            writeln!(out, "{json}")
        } else {
            let mut first = true;
            for s in pinyin::spoken_tokens(line, &readings) {
                if !first {
                    out.write_all(b" ")?;
                }
                out.write_all(s.as_bytes())?;
                first = false;
            }
            writeln!(out)
        }
    })?;
    finish(out)?;
    Ok(EXIT_OK)
}
