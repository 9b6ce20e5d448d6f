//! `manifest.json`: what was rendered, where, and when each segment plays.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::text::SegmentKind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub book: String,
    /// The book's own title, author and language (EPUB metadata); absent
    /// for plain text and in older manifests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    pub sample_rate: u32,
    pub chapters: Vec<ManifestChapter>,
    /// Chapters of the book left out of the reading script (empty ones,
    /// author's notes, a title page).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_chapters: Vec<crate::text::SkippedChapter>,
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
    /// Lines left out of speech (site adverts, URLs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<ManifestSkipped>,
}

/// A line of the chapter that is not read aloud.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestSkipped {
    /// 1-based index of the line among the chapter's paragraphs.
    pub paragraph: usize,
    pub text: String,
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
    /// `backend/voice id` of the fallback that read (part of) it when the
    /// voice's own backend failed; absent when the voice's backend did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
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
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        crate::fsutil::write_atomic(path, (json + "\n").as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_without_the_optional_fields_still_read() {
        let old = r#"{"book":"b","sample_rate":24000,"chapters":[{"index":1,"title":"t",
            "file":"0001-t.wav","duration_s":1.5,"segments":[]}]}"#;
        let m: Manifest = serde_json::from_str(old).unwrap();
        assert_eq!((m.title, m.author, m.language), (None, None, None));
        assert!(m.chapters[0].skipped.is_empty());
        assert_eq!(m.chapters[0].loudness_lufs, None);
    }

    #[test]
    fn empty_optional_fields_are_not_written() {
        let mut m = Manifest {
            book: "b".into(),
            title: None,
            author: None,
            language: None,
            sample_rate: 24000,
            chapters: vec![ManifestChapter {
                index: 1,
                title: "t".into(),
                file: "0001-t.wav".into(),
                duration_s: 1.0,
                loudness_lufs: None,
                segments: Vec::new(),
                skipped: Vec::new(),
            }],
            skipped_chapters: Vec::new(),
        };
        let json = serde_json::to_string(&m).unwrap();
        for key in ["\"title\":null", "author", "language", "skipped"] {
            assert!(!json.contains(key), "{key} in {json}");
        }
        m.author = Some("某人".into());
        m.chapters[0].skipped.push(ManifestSkipped {
            paragraph: 2,
            text: "www.example.com".into(),
        });
        let back: Manifest = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
    }
}
