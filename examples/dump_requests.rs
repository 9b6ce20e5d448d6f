//! Prints every synthesis request of a book, one per line, as the renderer
//! plans them (what `scripts/audit-heard.sh` compares with what was heard).
//!
//! ```sh
//! cargo run --release --example dump_requests -- BOOK [VOICES] [--jsonl]
//! ```
//!
//! Text columns: chapter, segment, boundary, voice, Kokoro phonemes, text.
//! `--jsonl`: one object per chunk with `chapter` and `segment` (1-based,
//! as the manifest and the meter number them), `chunk`, `voice`, `text`
//! and `pinyin` (tone-numbered syllables, words joined by `-`).
use tingshu::session::{RenderSession, SessionSpec};
use tingshu::synth::kokoro::phonemes;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let jsonl = args.iter().any(|a| a == "--jsonl");
    let mut positional = args.iter().filter(|a| !a.starts_with("--"));
    let path = positional.next().expect("BOOK");
    let voices = positional
        .next()
        .cloned()
        .unwrap_or_else(|| "voices/default.toml".to_owned());
    let mut spec = SessionSpec::for_file(path);
    spec.voices = Some(voices.into());
    let session = RenderSession::open(&spec).expect("session");
    for (ci, chapter) in session.book.script.chapters.iter().enumerate() {
        let mut chunk = 0;
        let mut last_segment = usize::MAX;
        for p in session.renderer.plan_chapter(chapter).chunks() {
            chunk = if p.segment == last_segment {
                chunk + 1
            } else {
                0
            };
            last_segment = p.segment;
            if jsonl {
                let line = serde_json::json!({
                    "chapter": ci + 1,
                    "segment": p.segment + 1,
                    "chunk": chunk,
                    "voice": p.request.voice.name,
                    "text": p.request.text,
                    "pinyin": p.request.pinyin,
                });
                println!("{line}");
            } else {
                println!(
                    "{}\t{}\t{:?}\t{}\t{}\t{}",
                    ci,
                    p.segment,
                    p.boundary,
                    p.request.voice.voice,
                    phonemes::phonemize(&p.request.pinyin),
                    p.request.text
                );
            }
        }
    }
}
