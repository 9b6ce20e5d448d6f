//! Stage 2 — front end: turn original text into what a narrator says
//! (normalized words) and how it sounds (tone-numbered pinyin).

pub mod normalize;
pub mod pinyin;

/// Version of the front end's output; part of every synthesis cache key so
/// that a better front end re-renders what it would now say differently.
pub const VERSION: u32 = 1;

/// What one chunk of text sounds like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spoken {
    /// Normalized text in the original script (for text-input backends).
    pub text: String,
    /// Tone-numbered pinyin with ASCII phrasing marks (for the espeak voice).
    pub pinyin: String,
}

/// Prepares a chunk of original text for synthesis.
pub fn prepare(text: &str) -> Spoken {
    let normalized = normalize::normalize(text);
    let readings = pinyin::syllables(&normalized);
    Spoken {
        pinyin: pinyin::speakable(&normalized, &readings),
        text: normalized,
    }
}
