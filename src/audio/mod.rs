//! Stage 4 — mixer: turn synthesized clips into chapter files.

pub mod clip;
pub mod decode;
pub mod mix;
pub mod resample;
pub mod wav;

pub use clip::AudioClip;
pub use mix::{ChapterMix, MixConfig, Pauses};
