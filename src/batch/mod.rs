//! Batch rendering: a jobs file names books that are kept up to date in their
//! output directories, incrementally (only new or changed chapters are
//! rendered), once (`batch run`) or on cron schedules (`batch daemon`).
//!
//! - [`jobs`] — the jobs file;
//! - [`run`] — one job once: plan, render through its
//!   [`RenderSession`](crate::session::RenderSession), record;
//! - [`refresh`] — the files besides the WAVs, made when out of date;
//! - [`state`] — chapter hashes and the last run, beside the output;
//! - [`lock`] — one run per job at a time, across processes;
//! - [`schedule`] and [`daemon`] — cron schedules and the loop firing them;
//! - [`enqueue`] — pending chapters as tasks for queue workers;
//! - [`status`] — what `batch status` prints;
//! - [`shutdown`] — stopping cleanly on SIGTERM/SIGINT.

pub mod daemon;
pub mod enqueue;
pub mod jobs;
pub mod lock;
pub mod refresh;
pub mod run;
pub mod schedule;
pub mod shutdown;
pub use crate::state;
pub mod status;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::book::Book;
use crate::session::VoicesSource;
use crate::synth::Synthesizer;
use state::{BookState, ChapterState, STATE_DIR, chapter_hash};

pub use jobs::{Job, JobsError, JobsFile};

/// The lock file of the book in `book_dir`.
pub fn lock_path(book_dir: &Path) -> PathBuf {
    book_dir.join(STATE_DIR).join("lock")
}

/// Why a batch command could not do its work. Each names the file, job or
/// key.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error(transparent)]
    Jobs(#[from] JobsError),
    #[error(transparent)]
    Session(#[from] crate::session::SessionError),
    #[error(transparent)]
    State(#[from] state::StateError),
    #[error(transparent)]
    Outputs(#[from] crate::outputs::OutputsError),
    #[error(transparent)]
    Enqueue(#[from] crate::queue::enqueue::EnqueueError),
    #[error(transparent)]
    Queue(#[from] crate::queue::QueueError),
    /// ffmpeg is missing while a job's formats need it.
    #[error("{}key \"formats\": {message}", job.as_ref().map(|j| format!("job \"{j}\": ")).unwrap_or_default())]
    Formats {
        job: Option<String>,
        message: String,
    },
    #[error("cannot create output directory {}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot resolve output directory {}", path.display())]
    Resolve {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: no job has a schedule (add schedule = \"0 3 * * *\" to a [[job]])", file.display())]
    NoSchedule { file: PathBuf },
    #[error("cannot install signal handlers")]
    Signals(#[source] std::io::Error),
}

/// Hash of every setting that changes a chapter's audio: the voices file,
/// each backend's fingerprint, the cast file and the lexicon (the user's
/// entries and the book's ruby readings; left out when empty, so the
/// chapters of books without one keep the hashes they were recorded with).
pub fn render_fingerprint(
    voices: &VoicesSource,
    backends: &BTreeMap<String, Arc<dyn Synthesizer>>,
) -> String {
    let mut h = Sha256::new();
    h.update(b"voices\0");
    h.update(voices.toml.as_bytes());
    for (name, backend) in backends {
        h.update(format!("\0backend {name} {}", backend.fingerprint()).as_bytes());
    }
    if let Some(cast) = &voices.cast {
        h.update(b"\0cast\0");
        h.update(cast.toml.as_bytes());
    }
    if !voices.lexicon.is_empty() {
        h.update(b"\0lexicon\0");
        let entries = serde_json::to_vec(&voices.lexicon).expect("lexicon entries serialize");
        h.update(&entries);
    }
    hex::encode(h.finalize())
}

/// One chapter of the book as the plan sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedChapter {
    /// 1-based position in the book.
    pub index: usize,
    pub file: String,
    pub hash: String,
    /// The file exists, is the one the last run wrote, from the same text and
    /// settings: it is left alone.
    pub up_to_date: bool,
}

/// What a run has to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub chapters: Vec<PlannedChapter>,
    /// Files written by earlier runs for chapters that are gone or renamed.
    pub orphans: Vec<ChapterState>,
}

impl Plan {
    /// Compares the book with the state of its output directory.
    pub fn new(
        book: &Book,
        book_dir: &Path,
        state: &BookState,
        fingerprint: &str,
        file_name: impl Fn(usize, &str) -> String,
    ) -> Plan {
        let chapters: Vec<PlannedChapter> = book
            .script
            .chapters
            .iter()
            .enumerate()
            .map(|(i, chapter)| {
                let index = i + 1;
                let file = file_name(index, &chapter.title);
                let hash = chapter_hash(fingerprint, chapter);
                let up_to_date = state
                    .get(index)
                    .is_some_and(|s| s.file == file && s.hash == hash && s.file_matches(book_dir));
                PlannedChapter {
                    index,
                    file,
                    hash,
                    up_to_date,
                }
            })
            .collect();
        let orphans = state
            .chapters
            .iter()
            .filter(|s| {
                !chapters
                    .iter()
                    .any(|c| c.index == s.index && c.file == s.file)
            })
            .cloned()
            .collect();
        Plan { chapters, orphans }
    }

    /// Chapters that need rendering.
    pub fn pending(&self) -> impl Iterator<Item = &PlannedChapter> {
        self.chapters.iter().filter(|c| !c.up_to_date)
    }
}

/// `3, 5-7, 9` for people.
pub fn format_indices(indices: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let start = indices[i];
        let mut end = start;
        while i + 1 < indices.len() && indices[i + 1] == end + 1 {
            i += 1;
            end = indices[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::Script;

    fn book(text: &str) -> Book {
        Book::from_script("b".to_owned(), "UTF-8", Script::from_text(text, "b"))
    }

    fn name(index: usize, title: &str) -> String {
        format!("{index:04}-{title}.wav")
    }

    /// Records every chapter of `plan` as written now.
    fn written(dir: &Path, plan: &Plan) -> BookState {
        let mut state = BookState::default();
        for c in &plan.chapters {
            std::fs::write(dir.join(&c.file), c.hash.as_bytes()).unwrap();
            let (bytes, mtime_ns) = state::file_stamp(&dir.join(&c.file)).unwrap();
            state.set(ChapterState {
                index: c.index,
                title: String::new(),
                file: c.file.clone(),
                hash: c.hash.clone(),
                bytes,
                mtime_ns,
                outputs: Vec::new(),
            });
        }
        state
    }

    #[test]
    fn plan_renders_new_changed_and_renamed_chapters_only() {
        let dir = tempfile::tempdir().unwrap();
        let v1 = "第一章 雾\n雾起了。\n第二章 灯\n灯亮了。\n";
        let first = Plan::new(&book(v1), dir.path(), &BookState::default(), "f", name);
        assert_eq!(first.pending().count(), 2);
        let state = written(dir.path(), &first);

        let same = Plan::new(&book(v1), dir.path(), &state, "f", name);
        assert_eq!(same.pending().count(), 0);
        assert!(same.orphans.is_empty());

        let appended = format!("{v1}第三章 船\n船回来了。\n");
        let plan = Plan::new(&book(&appended), dir.path(), &state, "f", name);
        let pending: Vec<usize> = plan.pending().map(|c| c.index).collect();
        assert_eq!(pending, [3]);

        let edited = "第一章 雾\n雾起了。\n第二章 灯\n灯灭了。\n";
        let plan = Plan::new(&book(edited), dir.path(), &state, "f", name);
        assert_eq!(plan.pending().map(|c| c.index).collect::<Vec<_>>(), [2]);

        let renamed = "第一章 雾\n雾起了。\n第二章 塔\n灯亮了。\n";
        let plan = Plan::new(&book(renamed), dir.path(), &state, "f", name);
        assert_eq!(plan.pending().map(|c| c.index).collect::<Vec<_>>(), [2]);
        assert_eq!(plan.orphans.len(), 1);
        assert_eq!(plan.orphans[0].file, "0002-第二章 灯.wav");

        let other_voices = Plan::new(&book(v1), dir.path(), &state, "g", name);
        assert_eq!(other_voices.pending().count(), 2);

        std::fs::remove_file(dir.path().join("0001-第一章 雾.wav")).unwrap();
        let plan = Plan::new(&book(v1), dir.path(), &state, "f", name);
        assert_eq!(plan.pending().map(|c| c.index).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn indices_are_compacted() {
        assert_eq!(format_indices(&[1, 2, 3, 5, 7, 8]), "1-3, 5, 7-8");
        assert_eq!(format_indices(&[]), "");
    }
}
