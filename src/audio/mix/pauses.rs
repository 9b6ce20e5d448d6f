//! The pauses the mixer lays between chunks, segments and paragraphs.

use serde::Deserialize;

use super::{PreparedSegment, SegmentAudio};
use crate::text::chunk::Boundary;

/// Who reads a segment, as far as pauses go: a change of kind within a
/// paragraph (narration to dialogue or back) is a turn, with its own pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PauseKind {
    /// The narrator's text.
    Narration,
    /// A character's spoken line.
    Dialogue,
}

/// Pause lengths in milliseconds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Pauses {
    /// After ，、： where a long sentence had to be split, or everywhere
    /// with `split_clauses`.
    pub clause_ms: u32,
    /// After 。！？；
    pub sentence_ms: u32,
    /// After …… and ——.
    pub hesitation_ms: u32,
    /// Between segments of one paragraph with the same kind.
    pub segment_ms: u32,
    /// Between narration and dialogue (either way) within a paragraph.
    pub turn_ms: u32,
    /// Between paragraphs (and after a spoken chapter title).
    pub paragraph_ms: u32,
    /// Silence at the start and end of every chapter file.
    pub chapter_start_ms: u32,
    pub chapter_end_ms: u32,
}

impl Default for Pauses {
    fn default() -> Pauses {
        Pauses {
            clause_ms: 150,
            sentence_ms: 300,
            hesitation_ms: 450,
            segment_ms: 200,
            turn_ms: 350,
            paragraph_ms: 600,
            chapter_start_ms: 500,
            chapter_end_ms: 1000,
        }
    }
}

impl Pauses {
    /// The pause after a chunk that ends at `boundary`.
    pub fn after_chunk(&self, boundary: Boundary) -> u32 {
        match boundary {
            Boundary::Sentence => self.sentence_ms,
            Boundary::Clause => self.clause_ms,
            Boundary::Hesitation => self.hesitation_ms,
            Boundary::None => 0,
        }
    }

    /// The pause between two consecutive segments.
    pub fn between(&self, prev: &SegmentAudio, next: &SegmentAudio) -> u32 {
        self.between_parts((prev.paragraph, prev.kind), (next.paragraph, next.kind))
    }

    /// [`Pauses::between`] for prepared segments.
    pub(super) fn between_prepared(&self, prev: &PreparedSegment, next: &PreparedSegment) -> u32 {
        self.between_parts((prev.paragraph, prev.kind), (next.paragraph, next.kind))
    }

    /// The pause between two consecutive segments given as (paragraph, kind).
    pub fn between_parts(&self, prev: (usize, PauseKind), next: (usize, PauseKind)) -> u32 {
        if prev.0 != next.0 {
            self.paragraph_ms
        } else if prev.1 != next.1 {
            self.turn_ms
        } else {
            self.segment_ms
        }
    }
}
