//! Benchmark: mixing and writing time per hour of audio.
//!
//! `cargo run --release --example bench_mix [HOURS] [CHAPTER_MINUTES]
//! [wav-only]` (defaults 1 hour, 10-minute chapters) builds synthetic
//! speech-like clips (two voices: 22.05 kHz like espeak-ng and 16 kHz at
//! another level like an HTTP voice), mixes them into chapters at
//! the default settings (24 kHz, −18 LUFS, limiter) and writes the WAVs,
//! then encodes them to MP3 and one M4B when ffmpeg is installed. Clip
//! generation is not timed.

use std::time::Instant;

use tingshu::audio::encode::{BookChapter, Encoder, Format, Tags};
use tingshu::audio::{AudioClip, MixConfig, PauseKind, SegmentAudio, mix_chapter_file};
use tingshu::text::chunk::Boundary;

/// A pseudo-random, syllable-modulated harmonic signal, `secs` long.
fn clip(seed: u32, rate: u32, secs: f64, amplitude: f32) -> AudioClip {
    let n = (f64::from(rate) * secs) as usize;
    let mut x = seed.wrapping_mul(2_654_435_761).max(1);
    let f0 = 110.0 + (seed % 7) as f32 * 20.0;
    let samples = (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let noise = (x as f32 / u32::MAX as f32 - 0.5) * 0.1;
            let t = i as f32 / rate as f32;
            let syllable = (std::f32::consts::PI * 4.5 * t).sin().abs().powf(0.7);
            let voice: f32 = (1..6)
                .map(|h| (std::f32::consts::TAU * f0 * h as f32 * t).sin() / h as f32)
                .sum();
            amplitude * syllable * (voice * 0.6 + noise)
        })
        .collect();
    AudioClip::new(samples, rate)
}

fn chapter_segments(chapter: u32, chapter_min: f64) -> (Vec<SegmentAudio>, f64) {
    let mut segments = Vec::new();
    let mut speech = 0.0;
    let mut i = 0;
    while speech < chapter_min * 60.0 * 0.8 {
        let dialogue = i % 3 == 2;
        let (rate, amplitude, voice) = if dialogue {
            (16000, 0.08, "http")
        } else {
            (22050, 0.5, "espeak")
        };
        let chunks = (0..3)
            .map(|k| {
                let secs = 1.5 + f64::from((i + k) % 5) * 0.4;
                speech += secs;
                (
                    Boundary::Sentence,
                    clip(chapter * 10_000 + i * 3 + k, rate, secs, amplitude),
                )
            })
            .collect();
        segments.push(SegmentAudio {
            kind: if dialogue {
                PauseKind::Dialogue
            } else {
                PauseKind::Narration
            },
            paragraph: (i / 3) as usize + 1,
            voice: voice.into(),
            chunks,
        });
        i += 1;
    }
    (segments, speech)
}

fn main() {
    let hours: f64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1.0);
    let chapter_min: f64 = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10.0);
    let chapters = ((hours * 60.0 / chapter_min).ceil() as u32).max(1);
    let dir = tempfile_dir();
    let config = MixConfig::default();
    let mut mix_s = 0.0;
    let mut mix_cpu = 0.0;
    let mut audio_s = 0.0;
    let mut files = Vec::new();
    for c in 0..chapters {
        let (segments, _) = chapter_segments(c, chapter_min);
        let path = dir.join(format!("{c:04}.wav"));
        let start = Instant::now();
        let cpu = cpu_s();
        let mixed = mix_chapter_file(&config, segments, &path).expect("mix");
        mix_s += start.elapsed().as_secs_f64();
        mix_cpu += cpu_s() - cpu;
        audio_s += mixed.duration_s;
        files.push(BookChapter {
            file: path,
            title: format!("第{}章", c + 1),
        });
    }
    let per_hour = |s: f64| s / (audio_s / 3600.0);
    println!(
        "mix+write WAV: {chapters} chapters, {:.2} h audio in {mix_s:.2} s wall ({mix_cpu:.2} s CPU) = {:.2} s wall, {:.2} s CPU per hour of audio",
        audio_s / 3600.0,
        per_hour(mix_s),
        per_hour(mix_cpu)
    );
    let encode = std::env::args().nth(3).as_deref() != Some("wav-only");
    match Encoder::new("ffmpeg").ok().filter(|_| encode) {
        Some(encoder) => {
            let report = |what: &str, wall: f64, cpu: f64| {
                println!(
                    "encode {what} (ffmpeg): {wall:.2} s wall, {cpu:.2} s CPU = {:.2} s wall, {:.2} s CPU per hour of audio",
                    per_hour(wall),
                    per_hour(cpu)
                );
            };
            let start = Instant::now();
            let cpu = child_cpu_s();
            for f in &files {
                let tags = Tags {
                    title: f.title.clone(),
                    album: "bench".into(),
                    ..Tags::default()
                };
                encoder
                    .encode_chapter(&f.file, &f.file.with_extension("mp3"), Format::Mp3, &tags)
                    .expect("mp3");
            }
            report("MP3", start.elapsed().as_secs_f64(), child_cpu_s() - cpu);
            let start = Instant::now();
            let cpu = child_cpu_s();
            let tags = Tags {
                album: "bench".into(),
                ..Tags::default()
            };
            encoder
                .encode_m4b(&files, &dir.join("book.m4b"), &tags)
                .expect("m4b");
            report("M4B", start.elapsed().as_secs_f64(), child_cpu_s() - cpu);
        }
        None => println!("encoding skipped (ffmpeg missing or wav-only)"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// CPU seconds used by this process so far (Linux `/proc/self/stat`,
/// utime + stime at 100 ticks a second); 0 where unavailable.
fn cpu_s() -> f64 {
    stat_ticks(11) + stat_ticks(12)
}

/// CPU seconds of waited-for child processes (ffmpeg): cutime + cstime.
fn child_cpu_s() -> f64 {
    stat_ticks(13) + stat_ticks(14)
}

/// Field `i` (counted after the command name) of `/proc/self/stat`, in
/// seconds at 100 ticks a second.
fn stat_ticks(i: usize) -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<f64> = after
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0.0))
        .collect();
    fields.get(i).copied().unwrap_or(0.0) / 100.0
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tingshu-bench-mix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}
