//! Split throughput: builds the reading script of a book several times on
//! one thread and prints MB/s. Used by `scripts/bench-split.sh`.
//!
//! `cargo run --release --example bench_split -- BOOK [ROUNDS]`
//! `cargo run --release --example bench_split -- --hostile [ROUNDS]` times
//! generated worst cases (unclosed marks, names without punctuation).
//! With `BENCH_GIVEN_ONLY=1` only the split with a given cast is timed (for
//! a profiler: `perf record` then sees nothing else but the one discovery
//! that makes the cast).

use std::time::Instant;

/// CPU time of this thread, in seconds: unlike wall time it does not count
/// the time other processes hold the core.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

use tingshu::text::{Cast, Character, Gender, Script, discover_cast};

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: bench_split BOOK [ROUNDS]");
        return std::process::ExitCode::from(2);
    };
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(10);
    if path == "--hostile" {
        hostile(rounds);
        return std::process::ExitCode::SUCCESS;
    }
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
        let mut wall = 0.0;
        let mut n = 0;
        let cpu_start = thread_cpu_s();
        for _ in 0..rounds {
            let start = Instant::now();
            n = std::hint::black_box(f());
            let s = start.elapsed().as_secs_f64();
            best = best.min(s);
            wall += s;
        }
        let cpu = (thread_cpu_s() - cpu_start) / rounds as f64;
        println!(
            "{label:<26} {:>7.1} MB/s on CPU time ({:.1} ms/round), wall: {:>6.1} MB/s best, {:>6.1} MB/s mean ({n} items)",
            mb / cpu,
            cpu * 1e3,
            mb / best,
            mb * rounds as f64 / wall,
        );
    };
    println!("{path}: {:.2} MB of UTF-8, {rounds} rounds, one thread", mb);
    let only_given = std::env::var_os("BENCH_GIVEN_ONLY").is_some();
    if !only_given {
        time("split (discovered cast)", &|| {
            Script::from_text(&text, "book")
                .chapters
                .iter()
                .map(|c| c.segments.len())
                .sum()
        });
    }
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
    if !only_given {
        time("discover cast", &|| discover_cast(&text, "book").len());
    }
    std::process::ExitCode::SUCCESS
}

/// Generated inputs that would be quadratic for a careless splitter.
fn hostile(rounds: usize) {
    let cases = [
        ("unclosed 《", format!("好{}", "《".repeat(200_000))),
        (
            "unclosed “ with names",
            format!("他说：“{}", "毛仲他".repeat(100_000)),
        ),
        (
            "dense names, many quotes",
            "毛仲說毛仲毛仲毛仲毛仲毛仲毛仲毛仲毛仲毛仲毛仲：「好」".repeat(20_000),
        ),
        (
            "names without punctuation",
            format!("{}：「好」", "毛仲".repeat(200_000)),
        ),
        ("empty quotes", format!("好{}", "“”".repeat(200_000))),
        (
            "one-character quotes",
            format!("好{}", "“他”".repeat(100_000)),
        ),
        (
            "bare quotes, one chapter",
            format!("毛仲说：“走。”\n{}", "“好。”\n".repeat(60_000)),
        ),
        (
            "telephone calls",
            format!(
                "屏幕上跳出两个字：“毛仲”。{}",
                "“好。”电话那头的声音很轻，".repeat(30_000)
            ),
        ),
    ];
    // The same with a cast that names 毛仲: every name is a mention then.
    let cast = Cast {
        characters: vec![Character {
            name: "毛仲".into(),
            aliases: Vec::new(),
            gender: Gender::Male,
            voice: None,
        }],
    };
    for (with_cast, (label, text)) in cases
        .iter()
        .map(|c| (false, c))
        .chain(cases.iter().map(|c| (true, c)))
    {
        let mb = text.len() as f64 / 1e6;
        let start = thread_cpu_s();
        for _ in 0..rounds {
            let cast = with_cast.then_some(&cast);
            std::hint::black_box(Script::from_text_with_cast(text, "book", cast));
        }
        let cpu = (thread_cpu_s() - start) / rounds as f64;
        let label = format!("{label}{}", if with_cast { ", cast" } else { "" });
        println!(
            "{label:<34} {mb:>5.2} MB {:>8.1} MB/s on CPU time",
            mb / cpu
        );
    }
}
