//! `manifest.json`: what was rendered, where, and when each segment plays.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::text::SegmentKind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub book: String,
    pub sample_rate: u32,
    pub chapters: Vec<ManifestChapter>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestChapter {
    /// 1-based position of the chapter in the book.
    pub index: usize,
    pub title: String,
    /// File name relative to the manifest.
    pub file: String,
    pub duration_s: f64,
    /// Integrated loudness of the chapter file (LUFS); absent for silence
    /// and in manifests written before it was measured.
    #[serde(default)]
    pub loudness_lufs: Option<f64>,
    pub segments: Vec<ManifestSegment>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestSegment {
    pub kind: SegmentKind,
    pub speaker: Option<String>,
    /// Original text, original script.
    pub text: String,
    pub start_s: f64,
    pub end_s: f64,
    /// Name of the voice (from the voices file) that read it.
    pub voice: String,
}

impl Manifest {
    /// Reads an existing manifest, if there is a readable one.
    pub fn read(path: &Path) -> Option<Manifest> {
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Replaces or inserts chapters by index, keeping the list ordered.
    pub fn merge(&mut self, chapters: Vec<ManifestChapter>) {
        for chapter in chapters {
            self.chapters.retain(|c| c.index != chapter.index);
            self.chapters.push(chapter);
        }
        self.chapters.sort_by_key(|c| c.index);
    }

    /// Writes pretty JSON atomically (temporary file, then rename).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let tmp = crate::audio::wav::temp_path(path);
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(&tmp, json + "\n")?;
        std::fs::rename(&tmp, path)
    }
}
