//! Command-line arguments (clap derive). Every option can also come from a
//! `TINGSHU_*` environment variable.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "tingshu",
    version,
    about = "听书 — turn Chinese web novels into audiobooks"
)]
pub struct Cli {
    /// More log output (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render a whole book (TXT) into one WAV file per chapter.
    Build(BuildArgs),
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The book: a TXT file in UTF-8, GB18030/GBK, Big5 or UTF-16.
    pub book: PathBuf,
    /// Output directory; the book goes to DIR/<book file stem>/.
    #[arg(long, short, default_value = "output", env = "TINGSHU_OUT")]
    pub out: PathBuf,
    /// Voices file (TOML); the built-in espeak-ng voices when absent.
    #[arg(long, env = "TINGSHU_VOICES")]
    pub voices: Option<PathBuf>,
    /// Chapters to render, by 1-based position: 3-7, 5, 3-, 1,4,6-8.
    #[arg(long)]
    pub chapters: Option<String>,
    /// Output formats, comma-separated: wav (per chapter), mp3 and opus (per
    /// chapter, tagged), m4b (one file with chapter marks). mp3/opus/m4b need ffmpeg.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "wav",
        env = "TINGSHU_FORMAT"
    )]
    pub format: Vec<crate::audio::encode::Format>,
    /// Cover image embedded in MP3/Opus/M4B files (and cover.jpg).
    #[arg(long, value_name = "FILE")]
    pub cover: Option<PathBuf>,
    /// Author (artist tag; folder name with --layout audiobookshelf).
    #[arg(long, value_name = "NAME", env = "TINGSHU_AUTHOR")]
    pub author: Option<String>,
    /// Directory layout: plain (DIR/<book>/) or audiobookshelf (DIR/<author>/<book>/
    /// with cover.jpg and desc.txt).
    #[arg(long, value_enum, default_value = "plain")]
    pub layout: Layout,
    /// The ffmpeg program used for mp3/opus/m4b.
    #[arg(
        long,
        value_name = "PROGRAM",
        default_value = "ffmpeg",
        env = "TINGSHU_FFMPEG"
    )]
    pub ffmpeg: PathBuf,
}

/// Where `build` puts a book.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Layout {
    /// DIR/<book>/
    Plain,
    /// DIR/<author>/<book>/ with cover.jpg and desc.txt, as Audiobookshelf expects.
    Audiobookshelf,
}
