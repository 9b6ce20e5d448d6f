//! Command-line arguments (clap derive). Every option can also come from a
//! `TINGSHU_*` environment variable.

// Doc comments here are clap's help text, where <book> and <stem> are
// literal placeholders, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use crate::names::Layout;

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
    /// Render a whole book (TXT or EPUB) into one WAV file per chapter.
    Build(BuildArgs),
    /// Print the reading script of a book: chapters, narration and dialogue, speakers.
    Split(SplitArgs),
    /// Render one passage with the book's casting to a WAV file.
    Preview(PreviewArgs),
    /// List backends and voices; `--check NAME` tries one voice.
    Voices(VoicesArgs),
    /// Keep a library of books up to date: render new or changed chapters of
    /// every job in a jobs file, once or on cron schedules.
    Batch(BatchArgs),
    /// Print the spoken form of each stdin line (numbers, units, dates → words).
    Normalize(FrontendArgs),
    /// Print the lexical tone-numbered pinyin of each stdin line.
    Pinyin(PinyinArgs),
    /// Plan books into tasks on a shared queue for `tingshu worker`s.
    Enqueue(EnqueueArgs),
    /// Take tasks from a shared queue: synthesize, mix, write.
    Worker(WorkerArgs),
    /// Show queued, running, done and parked tasks per job on a queue.
    QueueStatus(QueueStatusArgs),
    /// A local web page to read the script, cast voices, preview passages
    /// and fix pronunciations; prints the URL to open.
    Studio(StudioArgs),
    /// Serve a library (feeds, chapter files with ranges) and speech for
    /// Legado and OpenAI clients; prints the base URL.
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
pub struct FrontendArgs {
    /// Per-book pronunciation lexicon (TOML): "毛仲" = "mao2 zhong4",
    /// "靼子" = { say = "鞑子" }.
    #[arg(long, env = "TINGSHU_LEXICON")]
    pub lexicon: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PinyinArgs {
    #[command(flatten)]
    pub frontend: FrontendArgs,
    /// One JSON array per line: a syllable or null per Unicode scalar value.
    #[arg(long)]
    pub jsonl: bool,
    /// Print what the neural voice is sent instead: each line's spoken
    /// pinyin (sandhi applied) as Kokoro phonemes, then its token count.
    #[arg(long, conflicts_with = "jsonl")]
    pub phonemes: bool,
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The book: a TXT file in UTF-8, GB18030/GBK, Big5 or UTF-16, or an EPUB.
    pub book: PathBuf,
    /// Output directory; the book goes to DIR/<book file stem>/.
    #[arg(long, short, default_value = "output", env = "TINGSHU_OUT")]
    pub out: PathBuf,
    /// Voices file (TOML); when absent $TINGSHU_VOICES, else the built-in voices (neural when installed, else espeak-ng).
    #[arg(long, env = "TINGSHU_VOICES")]
    pub voices: Option<PathBuf>,
    /// Chapters to render, by 1-based position: 3-7, 5, 3-, 1,4,6-8.
    #[arg(long)]
    pub chapters: Option<String>,
    /// Cast file (TOML): characters, aliases and genders, for speakers.
    #[arg(long, env = "TINGSHU_CAST")]
    pub cast: Option<PathBuf>,
    /// Synthesis cache directory (default OUT/.cache).
    #[arg(long, env = "TINGSHU_CACHE")]
    pub cache: Option<PathBuf>,
    /// Per-book pronunciation lexicon (TOML): "毛仲" = "mao2 zhong4".
    #[arg(long, env = "TINGSHU_LEXICON")]
    pub lexicon: Option<PathBuf>,
    /// Line overrides (TOML) the studio writes: paragraphs read with other
    /// text or speaker, the book itself untouched.
    #[arg(long, env = "TINGSHU_OVERRIDES")]
    pub overrides: Option<PathBuf>,
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
    /// Read author's notes and appendices (作者有话说, PS：…, 上架感言) instead
    /// of skipping them.
    #[arg(long, env = "TINGSHU_KEEP_NOTES")]
    pub keep_notes: bool,
    /// Write a podcast feed OUT/<book>/feed.xml whose episodes are
    /// BASE/<book>/<file> (needs mp3, opus or m4b), and OUT/feeds.opml.
    #[arg(long, value_name = "BASE", env = "TINGSHU_FEED_URL")]
    pub feed_url: Option<String>,
}

#[derive(Debug, Args)]
pub struct SplitArgs {
    /// The book: a TXT file in UTF-8, GB18030/GBK, Big5 or UTF-16.
    pub book: PathBuf,
    /// Cast file (TOML): characters, aliases and genders, for speakers.
    #[arg(long, env = "TINGSHU_CAST")]
    pub cast: Option<PathBuf>,
    /// Output format: `text` for people, `jsonl` one JSON object per segment.
    #[arg(long, value_enum, default_value_t = SplitFormat::Text)]
    pub format: SplitFormat,
    /// Print a cast file of the characters found in the book instead.
    #[arg(long, conflicts_with_all = ["cast", "format"])]
    pub suggest_cast: bool,
    /// Read author's notes and appendices (作者有话说, PS：…, 上架感言) instead
    /// of skipping them.
    #[arg(long, env = "TINGSHU_KEEP_NOTES")]
    pub keep_notes: bool,
}

/// Output format of `split`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SplitFormat {
    Text,
    Jsonl,
}

#[derive(Debug, Args)]
pub struct PreviewArgs {
    /// Text to read; `-` reads it from stdin. Not needed with --book.
    pub text: Option<String>,
    /// Take the passage from this book instead.
    #[arg(long)]
    pub book: Option<PathBuf>,
    /// Chapter of --book, 1-based (default 1).
    #[arg(long)]
    pub chapter: Option<usize>,
    /// Paragraphs of that chapter, 1-based: 3-5, 4 (default: all).
    #[arg(long)]
    pub paragraphs: Option<String>,
    /// Cast file (TOML): characters, aliases and genders, for speakers (as
    /// `build --cast`, so a chapter previews with its build's voices).
    #[arg(long, env = "TINGSHU_CAST")]
    pub cast: Option<PathBuf>,
    /// Voices file (TOML); when absent $TINGSHU_VOICES, else the built-in voices (neural when installed, else espeak-ng).
    #[arg(long, env = "TINGSHU_VOICES")]
    pub voices: Option<PathBuf>,
    /// Output WAV file.
    #[arg(long, short, default_value = "output/preview.wav")]
    pub output: PathBuf,
    /// Play the result with aplay, paplay, pw-play, ffplay or afplay.
    #[arg(long)]
    pub play: bool,
    /// Synthesis cache directory (default: the output file's directory/.cache).
    #[arg(long, env = "TINGSHU_CACHE")]
    pub cache: Option<PathBuf>,
    /// Per-book pronunciation lexicon (TOML): "毛仲" = "mao2 zhong4".
    #[arg(long, env = "TINGSHU_LEXICON")]
    pub lexicon: Option<PathBuf>,
    /// Read author's notes and appendices (作者有话说, PS：…, 上架感言) instead
    /// of skipping them.
    #[arg(long, env = "TINGSHU_KEEP_NOTES")]
    pub keep_notes: bool,
}

#[derive(Debug, Args)]
pub struct VoicesArgs {
    /// Voices file (TOML); when absent $TINGSHU_VOICES, else the built-in voices (neural when installed, else espeak-ng).
    #[arg(long, env = "TINGSHU_VOICES")]
    pub voices: Option<PathBuf>,
    /// Synthesize a test phrase with this voice and report latency and duration.
    #[arg(long, value_name = "NAME")]
    pub check: Option<String>,
}

#[derive(Debug, Args)]
pub struct BatchArgs {
    #[command(subcommand)]
    pub command: BatchCommand,
}

#[derive(Debug, Subcommand)]
pub enum BatchCommand {
    /// Render every job once, incrementally (only new or changed chapters).
    Run(BatchJobsArgs),
    /// Stay running and run each job on its `schedule`; SIGTERM/SIGINT stop it.
    /// With --queue, each firing enqueues the job's pending chapters instead.
    Daemon(BatchQueueOptArgs),
    /// Show each job's last run, next run, pending chapters and failures;
    /// with --queue, also the jobs' tasks on the queue.
    Status(BatchQueueOptArgs),
    /// Enqueue every job's new or changed chapters for `tingshu worker`s.
    Enqueue(BatchEnqueueArgs),
}

#[derive(Debug, Args)]
pub struct BatchQueueOptArgs {
    #[command(flatten)]
    pub jobs: BatchJobsArgs,
    /// A queue (postgres://… or redis://…) shared with `tingshu worker`s.
    #[arg(long)]
    pub queue: Option<String>,
}

#[derive(Debug, Args)]
pub struct BatchEnqueueArgs {
    #[command(flatten)]
    pub jobs: BatchJobsArgs,
    /// The queue: postgres://user:password@host/db or redis://host/0.
    #[arg(long, env = "TINGSHU_QUEUE")]
    pub queue: String,
}

#[derive(Debug, Args)]
pub struct BatchJobsArgs {
    /// The jobs file (TOML, `[[job]]` tables).
    pub jobs: PathBuf,
    /// Only the job with this name.
    #[arg(long)]
    pub job: Option<String>,
}

#[derive(Debug, Args)]
pub struct EnqueueArgs {
    /// The books (TXT files) to render.
    #[arg(required = true)]
    pub books: Vec<PathBuf>,
    /// The queue: postgres://user:password@host/db.
    #[arg(long, env = "TINGSHU_QUEUE")]
    pub queue: String,
    /// Output directory shared by the workers; each book goes to DIR/<stem>/.
    #[arg(long, short, default_value = "output", env = "TINGSHU_OUT")]
    pub out: PathBuf,
    /// Voices file (TOML); when absent $TINGSHU_VOICES, else the built-in voices (neural when installed, else espeak-ng).
    #[arg(long, env = "TINGSHU_VOICES")]
    pub voices: Option<PathBuf>,
    /// Chapters to render, by 1-based position: 3-7, 5, 3-, 1,4,6-8.
    #[arg(long)]
    pub chapters: Option<String>,
    /// Cast file (TOML): characters, aliases, genders and voices, for speakers.
    #[arg(long, env = "TINGSHU_CAST")]
    pub cast: Option<PathBuf>,
    /// Per-book pronunciation lexicon (TOML): "毛仲" = "mao2 zhong4".
    #[arg(long, env = "TINGSHU_LEXICON")]
    pub lexicon: Option<PathBuf>,
    /// Output formats, comma-separated, as with build: wav, mp3, opus, m4b.
    /// Workers run ffmpeg (TINGSHU_FFMPEG) for mp3/opus/m4b.
    #[arg(
        long,
        visible_alias = "formats",
        value_delimiter = ',',
        default_value = "wav",
        env = "TINGSHU_FORMAT"
    )]
    pub format: Vec<crate::audio::encode::Format>,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The queue: postgres://user:password@host/db.
    #[arg(long, env = "TINGSHU_QUEUE")]
    pub queue: String,
    /// Tasks run at once by this worker.
    #[arg(long, default_value_t = 4, env = "TINGSHU_CONCURRENCY")]
    pub concurrency: usize,
    /// Shared synthesis cache: a directory every worker can reach, or
    /// s3://bucket/prefix (endpoint and credentials from the AWS_* variables).
    #[arg(long, default_value = "output/.cache", env = "TINGSHU_CACHE")]
    pub cache: PathBuf,
    /// Seconds a task stays this worker's without a heartbeat; a task of a
    /// worker that died is taken again after this.
    #[arg(long = "lease", default_value_t = 60, value_name = "SECONDS")]
    pub lease_s: u64,
    /// Stop when nothing is queued or running any more.
    #[arg(long)]
    pub until_idle: bool,
    /// Name recorded on the tasks this worker holds (default host:pid).
    #[arg(long)]
    pub name: Option<String>,
    /// Milliseconds between polls of an empty queue.
    #[arg(long, default_value_t = 250, hide = true)]
    pub poll_ms: u64,
    /// Adds this many milliseconds before every synthesis (benchmarks).
    #[arg(long, default_value_t = 0, hide = true)]
    pub simulate_latency_ms: u64,
}

#[derive(Debug, Args)]
pub struct QueueStatusArgs {
    /// The queue: postgres://user:password@host/db.
    #[arg(long, env = "TINGSHU_QUEUE")]
    pub queue: String,
}

#[derive(Debug, Args)]
pub struct StudioArgs {
    /// The book (TXT or EPUB), or a jobs file (`*.toml`) whose job gives the
    /// book, voices and cast.
    pub book: PathBuf,
    /// The job of a jobs file (needed when it has more than one).
    #[arg(long)]
    pub job: Option<String>,
    /// Address to listen on; port 0 picks a free port. Anything but a
    /// loopback address needs --token.
    #[arg(long, default_value = "127.0.0.1:0", env = "TINGSHU_STUDIO_BIND")]
    pub bind: std::net::SocketAddr,
    /// The token every change (POST/PUT) must carry, and off loopback
    /// every request; random when absent.
    #[arg(long, env = "TINGSHU_STUDIO_TOKEN")]
    pub token: Option<String>,
    /// Off loopback, a host name the page may be opened by besides an IP
    /// address and localhost (repeatable); other names get 403.
    #[arg(long, value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// Previews and renders at once, whatever the voice; more wait.
    #[arg(long, default_value_t = 2)]
    pub max_syntheses: usize,
    /// Previews and renders waiting; more get 503 with Retry-After.
    #[arg(long, default_value_t = 8)]
    pub max_queued: usize,
    /// Voices file (TOML); the built-in voices when absent.
    #[arg(long, env = "TINGSHU_VOICES")]
    pub voices: Option<PathBuf>,
    /// Cast file the page reads and writes (default BOOK_DIR/<stem>.cast.toml;
    /// created on the first save).
    #[arg(long, env = "TINGSHU_CAST")]
    pub cast: Option<PathBuf>,
    /// Lexicon the page reads and writes (default BOOK_DIR/<stem>.lexicon.toml;
    /// created on the first save).
    #[arg(long, env = "TINGSHU_LEXICON")]
    pub lexicon: Option<PathBuf>,
    /// Line overrides the page reads and writes when a paragraph's text or
    /// speaker is changed (default BOOK_DIR/<stem>.overrides.toml; created
    /// on the first change); `build --overrides` reads the same file.
    #[arg(long, env = "TINGSHU_OVERRIDES")]
    pub overrides: Option<PathBuf>,
    /// Where renders go: DIR/<stem>/, with the synthesis cache in DIR/.cache.
    #[arg(long, short, default_value = "output", env = "TINGSHU_OUT")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The library: the output directory of build/batch (DIR/<book>/…).
    #[arg(default_value = "output")]
    pub library: PathBuf,
    /// Address to listen on; port 0 picks a free port. Anything but a
    /// loopback address needs --token.
    #[arg(long, default_value = "127.0.0.1:0", env = "TINGSHU_SERVE_BIND")]
    pub bind: std::net::SocketAddr,
    /// The token every request must carry (Authorization: Bearer TOKEN or
    /// ?token=TOKEN); at least 8 of A-Z a-z 0-9 - _ . ~.
    #[arg(long, env = "TINGSHU_SERVE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Off loopback, a host name clients may reach the server by besides
    /// an IP address and localhost (repeatable); other names get 403.
    #[arg(long, value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// Voices file (TOML); when absent $TINGSHU_VOICES, else the built-in voices.
    #[arg(long, env = "TINGSHU_VOICES")]
    pub voices: Option<PathBuf>,
    /// Pronunciation lexicon (TOML): "毛仲" = "mao2 zhong4".
    #[arg(long, env = "TINGSHU_LEXICON")]
    pub lexicon: Option<PathBuf>,
    /// Synthesis cache directory (default LIBRARY/.cache).
    #[arg(long, env = "TINGSHU_CACHE")]
    pub cache: Option<PathBuf>,
    /// Longest text read in one request (characters); longer is 413.
    #[arg(long, default_value_t = 5000)]
    pub max_chars: usize,
    /// Largest request body (bytes); larger is 413.
    #[arg(long, default_value_t = 64 * 1024)]
    pub max_body: usize,
    /// Syntheses at once; more wait in a queue.
    #[arg(long, default_value_t = 2)]
    pub max_syntheses: usize,
    /// Requests waiting for a synthesis; more get 503 with Retry-After.
    #[arg(long, default_value_t = 8)]
    pub max_queued: usize,
    /// The ffmpeg program for MP3 and Opus speech.
    #[arg(
        long,
        value_name = "PROGRAM",
        default_value = "ffmpeg",
        env = "TINGSHU_FFMPEG"
    )]
    pub ffmpeg: PathBuf,
}
