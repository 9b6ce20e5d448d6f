//! Simplified → Traditional with OpenCC's phrase tables (the conversion the
//! dump tests use), stdin to stdout: `scripts/eval_dumps.py --traditional`.
//!
//! ```sh
//! cargo run --release --example s2t < book.txt > book-traditional.txt
//! ```
use std::io::{Read, Write};

fn main() -> anyhow::Result<()> {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    let s2t = ferrous_opencc::OpenCC::from_config(ferrous_opencc::config::BuiltinConfig::S2t)?;
    std::io::stdout().write_all(s2t.convert(&text).as_bytes())?;
    Ok(())
}
