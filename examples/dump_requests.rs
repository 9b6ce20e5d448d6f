//! Prints every synthesis request of a book, one per line:
//! chapter, segment, boundary, voice, Kokoro phonemes.
use tingshu::session::{RenderSession, SessionSpec};
use tingshu::synth::kokoro::phonemes;

fn main() {
    let path = std::env::args().nth(1).expect("BOOK");
    let mut spec = SessionSpec::for_file(path);
    spec.voices = Some("voices/default.toml".into());
    let session = RenderSession::open(&spec).expect("session");
    for (ci, chapter) in session.book.script.chapters.iter().enumerate() {
        for p in session.renderer.plan_chapter(chapter).chunks() {
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
