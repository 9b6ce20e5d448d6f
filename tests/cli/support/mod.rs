//! What the test modules share: the CLI runner, the fake TTS server, an
//! in-process fake synthesizer, ffmpeg/ffprobe and WAV helpers, lock files
//! held as another process holds them, reading scripts, a test's set-up
//! (directory, server, voices, book, runs) in one builder, the paths of
//! fixtures and goldens, and the rule for missing services and data.

pub mod cli;
pub mod fake_synth;
pub mod ffmpeg;
pub mod locks;
pub mod paths;
pub mod redis;
pub mod scenario;
pub mod script;
pub mod services;
pub mod tts_server;
pub mod wav;
