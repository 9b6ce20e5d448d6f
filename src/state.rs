//! What a book directory records of its renders (by `batch run` and by
//! queue workers of batch jobs), kept beside the output in
//! `OUT/<book>/.tingshu-batch/`:
//! - `state.json` — per chapter: file, content hash, size and modification
//!   time of the file written; rewritten only when a chapter changed;
//! - `last-run.json` — the last run: when, outcome, counts and failures.
//!
//! Both are written atomically (temporary file, fsync, rename).

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::outputs::ChapterFile;
use crate::text::ScriptChapter;

/// Name of the state directory inside a book's output directory.
pub use crate::names::STATE_DIR;

/// Bump when the meaning of the hashes changes.
const STATE_VERSION: u32 = 1;

/// Why a state file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}")]
pub struct StateError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Chapter hashes of one book.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BookState {
    pub version: u32,
    pub job: String,
    /// Ordered by index.
    pub chapters: Vec<ChapterState>,
    /// Book-level files (manifest, playlist, M4B) as last written; absent
    /// in state files written before they were recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub book_files: Vec<OutputFile>,
}

/// A chapter file as last written by a batch run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChapterState {
    pub index: usize,
    pub title: String,
    /// File name inside the book directory.
    pub file: String,
    /// [`chapter_hash`] of what the file was rendered from.
    pub hash: String,
    /// Size and modification time of the file when written, to notice a file
    /// replaced or damaged by something else.
    pub bytes: u64,
    pub mtime_ns: u128,
    /// The chapter's other files (subtitles, MP3, Opus) as last written;
    /// absent in state files written before they were recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<OutputFile>,
}

/// A file made from rendered audio (subtitles, an encoded chapter, the M4B,
/// the playlist, the manifest), as last written by a batch run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputFile {
    /// File name inside the book directory.
    pub file: String,
    /// Hash of what the file was made from; another hash means out of date.
    pub hash: String,
    pub bytes: u64,
    pub mtime_ns: u128,
}

impl OutputFile {
    /// Records `file` in `book_dir` as it is now; `None` if it is missing.
    pub fn stamp(book_dir: &Path, file: &str, hash: &str) -> Option<OutputFile> {
        let (bytes, mtime_ns) = file_stamp(&book_dir.join(file))?;
        Some(OutputFile {
            file: file.to_owned(),
            hash: hash.to_owned(),
            bytes,
            mtime_ns,
        })
    }

    /// Whether the file is still the one recorded, made from `hash`.
    pub fn is_current(&self, book_dir: &Path, hash: &str) -> bool {
        self.hash == hash
            && file_stamp(&book_dir.join(&self.file)) == Some((self.bytes, self.mtime_ns))
    }
}

/// Whether `file` is recorded in `records` as made from `hash` and unchanged
/// since.
pub fn output_is_current(records: &[OutputFile], book_dir: &Path, file: &str, hash: &str) -> bool {
    records
        .iter()
        .any(|r| r.file == file && r.is_current(book_dir, hash))
}

/// Hash of what a chapter's file is made from: the chapter (its
/// [`chapter_hash`]), the tags (`BookOutputs::tags_digest`) and the kind of
/// file.
pub fn chapter_file_hash(chapter_hash: &str, tags: &str, file: ChapterFile) -> String {
    let mut h = Sha256::new();
    for part in [chapter_hash, tags, file.extension()] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    hex::encode(h.finalize())
}

/// Replaces the record of the same file in `records`, keeping name order.
pub fn record_output(records: &mut Vec<OutputFile>, record: OutputFile) {
    records.retain(|r| r.file != record.file);
    records.push(record);
    records.sort_by(|a, b| a.file.cmp(&b.file));
}

impl ChapterState {
    /// Whether `file` in `book_dir` still is the file this entry describes.
    pub fn file_matches(&self, book_dir: &Path) -> bool {
        file_stamp(&book_dir.join(&self.file)) == Some((self.bytes, self.mtime_ns))
    }
}

/// Size and modification time (ns since the epoch) of a file.
pub fn file_stamp(path: &Path) -> Option<(u64, u128)> {
    let meta = std::fs::metadata(path).ok()?;
    let mtime = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    meta.is_file().then_some((meta.len(), mtime.as_nanos()))
}

impl BookState {
    pub fn path(book_dir: &Path) -> PathBuf {
        book_dir.join(STATE_DIR).join("state.json")
    }

    /// Reads the state of `book_dir`; empty when absent, unreadable or from
    /// another version (every chapter then counts as new).
    pub fn read(book_dir: &Path, job: &str) -> BookState {
        let path = BookState::path(book_dir);
        let fresh = || BookState {
            version: STATE_VERSION,
            job: job.to_owned(),
            chapters: Vec::new(),
            book_files: Vec::new(),
        };
        let Ok(text) = std::fs::read_to_string(&path) else {
            return fresh();
        };
        match serde_json::from_str::<BookState>(&text) {
            Ok(state) if state.version == STATE_VERSION => BookState {
                job: job.to_owned(),
                ..state
            },
            Ok(_) => fresh(),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "unreadable batch state; every chapter counts as changed");
                fresh()
            }
        }
    }

    pub fn write(&self, book_dir: &Path) -> Result<(), StateError> {
        write_json(&BookState::path(book_dir), self)
    }

    pub fn get(&self, index: usize) -> Option<&ChapterState> {
        self.chapters.iter().find(|c| c.index == index)
    }

    pub fn get_mut(&mut self, index: usize) -> Option<&mut ChapterState> {
        self.chapters.iter_mut().find(|c| c.index == index)
    }

    /// Records a chapter, replacing the entry of the same index.
    pub fn set(&mut self, chapter: ChapterState) {
        self.remove(chapter.index);
        self.chapters.push(chapter);
        self.chapters.sort_by_key(|c| c.index);
    }

    /// Records chapter `index` as just rendered from `hash` into `file`
    /// (relative to `book_dir`), stamped with the file's size and mtime,
    /// with the other files made from it: what `batch run` and queue
    /// workers record alike.
    pub fn record_chapter(
        &mut self,
        book_dir: &Path,
        index: usize,
        title: &str,
        file: &str,
        hash: &str,
        outputs: Vec<OutputFile>,
    ) {
        let (bytes, mtime_ns) = file_stamp(&book_dir.join(file)).unwrap_or_default();
        self.set(ChapterState {
            index,
            title: title.to_owned(),
            file: file.to_owned(),
            hash: hash.to_owned(),
            bytes,
            mtime_ns,
            outputs,
        });
    }

    pub fn remove(&mut self, index: usize) {
        self.chapters.retain(|c| c.index != index);
    }
}

/// Hash of everything a chapter's audio is made from: the render fingerprint
/// (voices, backends, cast) and the chapter's reading script.
pub fn chapter_hash(fingerprint: &str, chapter: &ScriptChapter) -> String {
    let mut h = Sha256::new();
    h.update(fingerprint.as_bytes());
    h.update([0]);
    h.update(serde_json::to_vec(chapter).unwrap_or_default());
    hex::encode(h.finalize())
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunOutcome {
    /// Every chapter is up to date.
    Ok,
    /// Some chapters failed; they are pending for the next run.
    Partial,
    /// Stopped by a signal; the rest is pending for the next run.
    Interrupted,
    /// The job could not run at all (unreadable source, voices, …).
    Failed,
}

/// The last run of a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastRun {
    pub job: String,
    pub started: DateTime<Utc>,
    pub finished: DateTime<Utc>,
    pub outcome: RunOutcome,
    /// Chapters in the book.
    pub chapters: usize,
    /// Chapters rendered by this run.
    pub rendered: usize,
    /// Chapters left pending (failed or not reached).
    pub pending: usize,
    /// Seconds of audio rendered by this run.
    pub audio_s: f64,
    /// Requests sent to synthesis backends (every attempt counts).
    #[serde(default)]
    pub requests: usize,
    /// Chunks taken from the synthesis cache.
    #[serde(default)]
    pub cache_hits: usize,
    /// Files besides the chapter WAVs written (subtitles, encoded chapters,
    /// manifest, playlist, M4B).
    #[serde(default)]
    pub outputs_written: usize,
    pub failures: Vec<String>,
}

impl LastRun {
    pub fn path(book_dir: &Path) -> PathBuf {
        book_dir.join(STATE_DIR).join("last-run.json")
    }

    pub fn read(book_dir: &Path) -> Option<LastRun> {
        let text = std::fs::read_to_string(LastRun::path(book_dir)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Writes it, every failure message redacted ([`crate::redact`]).
    pub fn write(&self, book_dir: &Path) -> Result<(), StateError> {
        let mut run = self.clone();
        for failure in &mut run.failures {
            *failure = crate::redact::redact(failure);
        }
        write_json(&LastRun::path(book_dir), &run)
    }
}

/// Writes pretty JSON through a synced temporary file renamed into place.
fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), StateError> {
    let err = |source| StateError {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let mut json = serde_json::to_vec_pretty(value).map_err(|e| err(std::io::Error::other(e)))?;
    json.push(b'\n');
    crate::fsutil::write_atomic_synced(path, &json).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{Segment, SegmentKind};

    fn chapter(text: &str) -> ScriptChapter {
        ScriptChapter {
            number: 1,
            title: "第一章 雾".to_owned(),
            volume: None,
            skipped: Vec::new(),
            segments: vec![Segment {
                kind: SegmentKind::Narration,
                speaker: None,
                unnamed: None,
                gender_unsure: false,
                paragraph: 1,
                text: text.to_owned(),
            }],
        }
    }

    #[test]
    fn hash_changes_with_text_and_with_voices() {
        let a = chapter_hash("v1", &chapter("雾起了。"));
        assert_eq!(a, chapter_hash("v1", &chapter("雾起了。")));
        assert_ne!(a, chapter_hash("v1", &chapter("雾散了。")));
        assert_ne!(a, chapter_hash("v2", &chapter("雾起了。")));
    }

    #[test]
    fn state_files_without_output_records_still_load() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(STATE_DIR)).unwrap();
        let old = r#"{"version":1,"job":"j","chapters":[{"index":1,"title":"a",
            "file":"0001-a.wav","hash":"h","bytes":4,"mtime_ns":7}]}"#;
        std::fs::write(BookState::path(dir.path()), old).unwrap();
        let state = BookState::read(dir.path(), "j");
        assert_eq!(state.chapters.len(), 1);
        assert!(state.chapters[0].outputs.is_empty());
        assert!(state.book_files.is_empty());
    }

    #[test]
    fn output_records_notice_a_changed_or_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.mp3"), b"ID3").unwrap();
        let mut records = Vec::new();
        record_output(
            &mut records,
            OutputFile::stamp(dir.path(), "a.mp3", "h1").unwrap(),
        );
        assert!(output_is_current(&records, dir.path(), "a.mp3", "h1"));
        assert!(!output_is_current(&records, dir.path(), "a.mp3", "h2"));
        assert!(!output_is_current(&records, dir.path(), "b.mp3", "h1"));
        std::fs::remove_file(dir.path().join("a.mp3")).unwrap();
        assert!(!output_is_current(&records, dir.path(), "a.mp3", "h1"));
        assert!(OutputFile::stamp(dir.path(), "a.mp3", "h1").is_none());
    }

    #[test]
    fn state_round_trips_and_bad_state_starts_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let book = dir.path();
        std::fs::write(book.join("0001-a.wav"), b"RIFF").unwrap();
        let (bytes, mtime_ns) = file_stamp(&book.join("0001-a.wav")).unwrap();
        let mut state = BookState::read(book, "job");
        assert!(state.chapters.is_empty());
        state.set(ChapterState {
            index: 1,
            title: "a".to_owned(),
            file: "0001-a.wav".to_owned(),
            hash: "h".to_owned(),
            bytes,
            mtime_ns,
            outputs: Vec::new(),
        });
        state.write(book).unwrap();
        let back = BookState::read(book, "job");
        assert_eq!(back, state);
        assert!(back.get(1).unwrap().file_matches(book));
        std::fs::write(book.join("0001-a.wav"), b"RIFF-and-more").unwrap();
        assert!(!back.get(1).unwrap().file_matches(book));

        std::fs::write(BookState::path(book), "{ not json").unwrap();
        assert!(BookState::read(book, "job").chapters.is_empty());
        let leftovers: Vec<_> = std::fs::read_dir(book.join(STATE_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".part"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}
