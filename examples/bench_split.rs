//! Split throughput: builds the reading script of a book several times on
//! one thread and prints MB/s. Used by `scripts/bench-split.sh`.
//!
//! `cargo run --release --example bench_split -- BOOK [ROUNDS]`

use std::time::Instant;

use tingshu::text::{Cast, Script, discover_cast};

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: bench_split BOOK [ROUNDS]");
        return std::process::ExitCode::from(2);
    };
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(10);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{path}: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let text = match tingshu::text::decode(&bytes) {
        Ok(d) => d.text,
        Err(e) => {
            eprintln!("{path}: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let mb = text.len() as f64 / 1e6;
    let time = |label: &str, f: &dyn Fn() -> usize| {
        let mut best = f64::MAX;
        let mut total = 0.0;
        let mut n = 0;
        for _ in 0..rounds {
            let start = Instant::now();
            n = std::hint::black_box(f());
            let s = start.elapsed().as_secs_f64();
            best = best.min(s);
            total += s;
        }
        println!(
            "{label:<28} {:>8.1} MB/s best, {:>8.1} MB/s mean ({:.1} ms best, {n} items)",
            mb / best,
            mb * rounds as f64 / total,
            best * 1e3
        );
    };
    println!("{path}: {:.2} MB of UTF-8, {rounds} rounds, one thread", mb);
    time("split (discovered cast)", &|| {
        Script::from_text(&text, "book")
            .chapters
            .iter()
            .map(|c| c.segments.len())
            .sum()
    });
    let cast = Cast {
        characters: discover_cast(&text, "book")
            .into_iter()
            .map(|d| d.character)
            .collect(),
    };
    time("split (given cast)", &|| {
        Script::from_text_with_cast(&text, "book", Some(&cast))
            .chapters
            .len()
    });
    time("discover cast", &|| discover_cast(&text, "book").len());
    std::process::ExitCode::SUCCESS
}
