//! tingshu (听书): Chinese web novels → audiobooks.
//!
//! The pipeline, one module per stage:
//! 1. [`text`] — decode, split chapters, mark narration and dialogue;
//! 2. [`frontend`] — normalize for reading aloud and convert to pinyin;
//! 3. [`synth`] — render chunks through a backend (embedded espeak-ng, …);
//! 4. [`audio`] — pause, stitch and write chapter files.
//!
//! [`pipeline`] runs the stages; [`outputs`] makes the files of a rendered
//! book (subtitles, MP3/Opus, M4B, playlist, manifest); [`commands`] holds
//! the CLI commands.

pub mod admission;
pub mod audio;
pub mod batch;
pub mod book;
pub mod cli;
pub mod commands;
pub mod config;
pub mod epub;
pub mod error;
pub mod feed;
pub mod frontend;
pub mod fsutil;
pub mod manifest;
pub mod names;
pub mod outputs;
pub mod pipeline;
pub mod progress;
pub mod queue;
pub mod redact;
pub mod serve;
pub mod session;
pub mod state;
pub mod studio;
pub mod synth;
pub mod text;
