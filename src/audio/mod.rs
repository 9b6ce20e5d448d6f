//! Stage 4 — mixer: turn synthesized clips into finished chapter files
//! (WAV, subtitles, encoded formats).

pub mod child;
pub mod clip;
pub mod decode;
pub mod encode;
pub mod loudness;
pub mod mix;
pub mod peak_limiter;
pub mod resample;
pub mod subtitle;
pub mod wav;

pub use clip::AudioClip;
pub use mix::{
    MixConfig, MixedChapter, PauseKind, Pauses, PreparedClip, PreparedSegment, SegmentAudio,
    mix_chapter, mix_chapter_file, mix_prepared, mix_prepared_file, prepare,
};
