//! The files of a batch job besides the WAVs: made when missing, changed
//! by something else, or made from another version of their chapter or
//! other tags; left alone otherwise; removed when no longer asked for.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::Plan;
use super::shutdown::Shutdown;
use super::state::{
    BookState, OutputFile, STATE_DIR, chapter_file_hash, output_is_current, record_output,
};
use crate::error::error_chain;
use crate::manifest::Manifest;
use crate::outputs::{BookFile, BookOutputs};

/// Hash of what the book-level files are made from: every chapter (index,
/// file, hash), the tags, the manifest's book information and the formats.
pub fn book_files_hash(plan: &Plan, outputs: &BookOutputs) -> String {
    let mut h = Sha256::new();
    for c in &plan.chapters {
        h.update(format!("{}\0{}\0{}\0", c.index, c.file, c.hash).as_bytes());
    }
    h.update(outputs.tags_digest().as_bytes());
    if let Some(info) = &outputs.info {
        for part in [&info.title, &info.author, &info.language] {
            h.update(b"\0");
            h.update(part.as_deref().unwrap_or("").as_bytes());
        }
    }
    for f in &outputs.formats {
        h.update(b"\0");
        h.update(f.extension().as_bytes());
    }
    if let Some(link) = &outputs.feed {
        h.update(b"\0feed\0");
        h.update(link.url("").as_bytes());
    }
    hex::encode(h.finalize())
}

/// What [`refresh_chapter_files`] did.
pub struct ChapterFilesMade {
    pub written: usize,
    /// Files of formats no longer asked for were removed.
    pub removed: bool,
    pub interrupted: bool,
}

/// Makes every chapter file (subtitles, MP3, Opus) that is missing, was
/// changed by something else, or was made from another version of the
/// chapter or other tags; files already current are not touched. Files of
/// formats no longer asked for are removed. Records what it wrote in
/// `state` (the caller writes it).
pub fn refresh_chapter_files(
    outputs: &BookOutputs,
    dir: &Path,
    plan: &Plan,
    manifest: &Manifest,
    state: &mut BookState,
    shutdown: &Shutdown,
    failures: &mut Vec<String>,
) -> ChapterFilesMade {
    let tags = outputs.tags_digest();
    let kinds = outputs.chapter_files();
    let mut made = ChapterFilesMade {
        written: 0,
        removed: false,
        interrupted: false,
    };
    for planned in &plan.chapters {
        let Some(chapter_state) = state.get_mut(planned.index) else {
            continue; // failed or not rendered: pending for the next run
        };
        if chapter_state.hash != planned.hash || chapter_state.file != planned.file {
            continue;
        }
        let Some(chapter) = manifest
            .chapters
            .iter()
            .find(|c| c.index == planned.index && c.file == planned.file)
        else {
            continue;
        };
        let wanted: Vec<String> = kinds
            .iter()
            .map(|k| k.name(chapter.index, &chapter.title))
            .collect();
        let (keep, gone): (Vec<OutputFile>, Vec<OutputFile>) =
            std::mem::take(&mut chapter_state.outputs)
                .into_iter()
                .partition(|o| wanted.contains(&o.file));
        chapter_state.outputs = keep;
        for old in gone {
            remove_output(dir, &old.file);
            made.removed = true;
        }
        for (&kind, name) in kinds.iter().zip(&wanted) {
            let hash = chapter_file_hash(&planned.hash, &tags, kind);
            if output_is_current(&chapter_state.outputs, dir, name, &hash) {
                continue;
            }
            if shutdown.requested() {
                made.interrupted = true;
                return made;
            }
            match outputs.write_chapter_file(dir, chapter, kind, None) {
                Ok(_) => {
                    if let Some(record) = OutputFile::stamp(dir, name, &hash) {
                        record_output(&mut chapter_state.outputs, record);
                    }
                    made.written += 1;
                }
                // Stopped during the encode: the old file is kept.
                Err(_) if shutdown.requested() => {
                    made.interrupted = true;
                    return made;
                }
                Err(e) => failures.push(format!(
                    "chapter {} ({}): {}",
                    chapter.index,
                    chapter.title,
                    error_chain(&e)
                )),
            }
        }
    }
    made
}

/// Rewrites the book-level files (manifest, playlist, M4B) when a chapter
/// was rendered or removed (`changed`), when what they are made from
/// changed, or when they are missing or were changed by something else;
/// otherwise leaves them alone. The playlist is also rewritten when it
/// would now read differently: it lists a chapter by its WAV while its
/// encoded file is missing. Removes those no longer asked for. Returns how
/// many it wrote and whether a stop request cut it short (an M4B encode
/// in progress is stopped, the old M4B kept and left out of date for the
/// next run); records them in `state` (the caller writes it).
#[allow(clippy::too_many_arguments)]
pub fn refresh_book_files(
    outputs: &BookOutputs,
    dir: &Path,
    plan: &Plan,
    manifest: &Manifest,
    changed: bool,
    state: &mut BookState,
    shutdown: &Shutdown,
    failures: &mut Vec<String>,
) -> (usize, bool) {
    let hash = book_files_hash(plan, outputs);
    let files = outputs.book_files();
    let names: Vec<String> = files.iter().map(|&f| outputs.book_file_name(f)).collect();
    let gone: Vec<String> = state
        .book_files
        .iter()
        .filter(|r| !names.contains(&r.file))
        .map(|r| r.file.clone())
        .collect();
    for file in gone {
        remove_output(dir, &file);
        state.book_files.retain(|r| r.file != file);
    }
    let mut written = 0;
    for (&file, name) in files.iter().zip(&names) {
        let stale = match file {
            BookFile::Playlist => !outputs.playlist_is_current(dir, manifest),
            BookFile::Feed => !outputs.feed_is_current(dir, manifest),
            _ => false,
        };
        if !changed && !stale && output_is_current(&state.book_files, dir, name, &hash) {
            continue;
        }
        if shutdown.requested() {
            return (written, true);
        }
        match outputs.write_book_file(dir, manifest, file) {
            Ok(()) => {
                if let Some(record) = OutputFile::stamp(dir, name, &hash) {
                    record_output(&mut state.book_files, record);
                }
                written += 1;
            }
            Err(e) => {
                // The record of the file as it was goes: the next run
                // makes it again.
                state.book_files.retain(|r| r.file != *name);
                if shutdown.requested() {
                    return (written, true);
                }
                failures.push(error_chain(&e));
            }
        }
    }
    (written, false)
}

/// Removes a file written by an earlier run (a chapter that is gone, a
/// format no longer asked for).
pub fn remove_output(dir: &Path, file: &str) {
    match std::fs::remove_file(dir.join(file)) {
        Ok(()) => tracing::info!(file, "removed a file no longer produced"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!(file, error = %e, "cannot remove an old output file"),
    }
}

/// Removes temporary files (`.NAME.part`) a killed run left in `dir`; the
/// job's lock is held, so no one else is writing them.
pub fn remove_partial_files(dir: &Path) {
    for d in [
        dir.to_owned(),
        dir.join(STATE_DIR),
        dir.join(crate::outputs::HIDDEN_WAV_DIR),
    ] {
        crate::fsutil::remove_stale_parts(&d);
    }
}
