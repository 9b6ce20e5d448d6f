//! The studio: a local web page over the same library code the commands
//! use — the reading script of a book, its cast and voices, previews of
//! passages, pronunciation fixes and chapter renders.
//!
//! [`Studio`] holds the book and the files it edits; [`api`] answers the
//! page's requests; [`page`] is the page itself (HTML, CSS and JavaScript
//! embedded in the binary). Only the book, the voices file and the cast and
//! lexicon files named at start are read; only the cast and lexicon files
//! and the renders under the output directory are written. No path from a
//! request reaches the filesystem: chapters are numbers, renders are looked
//! up among the files this process wrote.

pub mod api;
mod edit;
pub mod page;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{OwnedSemaphorePermit, broadcast};

use crate::admission::{HostRule, Slots};
use crate::audio::encode::Format;
use crate::config::VoicesConfig;
use crate::frontend::Lexicon;
use crate::fsutil::PidLock;
use crate::names::Layout;
use crate::pipeline::{ChapterJob, Renderer};
use crate::session::book::{BookTarget, BuildError, lock_book_dir};
use crate::session::voices::CastSource;
use crate::session::{BookInput, CacheSpec, Listeners, RenderSession, SessionError, SessionSpec};
use crate::text::overrides::{LineOverride, paragraph_text};
use crate::text::{Cast, ScriptChapter, Segment, SplitOptions};

pub use api::router;

/// Largest request body accepted (bytes).
pub const MAX_BODY: usize = 256 * 1024;
/// Longest text a preview reads (characters).
pub const MAX_PREVIEW_CHARS: usize = 2000;
/// The header every POST and PUT must carry.
pub const TOKEN_HEADER: &str = "x-tingshu-token";

/// What the studio works on, resolved once from the arguments.
#[derive(Debug, Clone)]
pub struct StudioOptions {
    /// The book: a TXT or EPUB file, or a directory of chapter files.
    pub book: PathBuf,
    pub voices: Option<PathBuf>,
    /// The cast file read and written (may not exist yet).
    pub cast: PathBuf,
    /// The lexicon read and written (may not exist yet).
    pub lexicon: PathBuf,
    /// The line overrides read and written (may not exist yet).
    pub overrides: PathBuf,
    /// Renders go to `OUT/<stem>/`, the synthesis cache to `OUT/.cache`.
    pub out: PathBuf,
    pub token: String,
    /// The names accepted in the `Host` header (DNS rebinding).
    pub hosts: HostRule,
    /// Every request needs the token, reads too (a non-loopback bind);
    /// else only changes do.
    pub reads_need_token: bool,
    /// Previews and renders at once, whatever their voice.
    pub max_syntheses: usize,
    /// Previews and renders waiting; more get 503 with `Retry-After`.
    pub max_queued: usize,
}

/// Why the studio cannot start or a change cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum StudioError {
    /// The book, voices, cast, lexicon or cache (each names its file).
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("{path}: cannot read: {reason}")]
    Read {
        path: PathBuf,
        reason: std::io::Error,
    },
    #[error("{path}: cannot write: {reason}")]
    Write {
        path: PathBuf,
        reason: std::io::Error,
    },
}

/// What a line edit changed.
#[derive(Debug)]
pub struct LineChange {
    /// The paragraph's segments before and after.
    pub before: Vec<Segment>,
    pub after: Vec<Segment>,
    /// The paragraph's override now (none when it reads as the book).
    pub line: Option<LineOverride>,
    /// Chunks of the chapter a render would synthesize (not in the cache).
    pub to_synthesize: usize,
}

/// Why a line edit was not made.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("chapter {chapter}: the book has chapters 1 to {count}")]
    NoChapter { chapter: usize, count: usize },
    #[error("chapter {chapter} has no paragraph {paragraph}")]
    NoParagraph { chapter: usize, paragraph: usize },
    #[error(transparent)]
    Studio(#[from] StudioError),
}

/// Why a render did not start.
#[derive(Debug, thiserror::Error)]
pub enum RenderRefused {
    #[error("a render is running; wait for it to finish")]
    Running,
    /// Another process (a `build`, a `batch run`) renders into the folder.
    #[error(transparent)]
    Busy(BuildError),
    #[error(transparent)]
    Write(BuildError),
}

/// The book with its cast, voices and lexicon as they are now.
struct Loaded {
    /// The book, voices (with the cast), lexicon and renderer, as `build`
    /// puts them together from the same files.
    session: Arc<RenderSession>,
    /// The cast file as it is (empty while it does not exist).
    cast: Cast,
    /// The lexicon file's text ("" while it does not exist).
    lexicon_text: String,
    /// Chapter (1-based position) → the WAV this process rendered.
    renders: BTreeMap<usize, PathBuf>,
}

/// A running studio's shared state.
pub struct Studio {
    options: StudioOptions,
    /// The voices file as read (no cast).
    base: VoicesConfig,
    loaded: Mutex<Loaded>,
    events: broadcast::Sender<String>,
    previews: tempfile::TempDir,
    preview_count: AtomicU64,
    rendering: AtomicBool,
    /// One bounded queue for previews and renders.
    slots: Slots,
    /// Set when the server stops: event streams end, so that a graceful
    /// shutdown does not wait for open pages.
    stopping: tokio::sync::watch::Sender<bool>,
}

/// Reads a file that may not exist yet: its text, or "" when absent.
fn read_optional(path: &Path) -> Result<String, StudioError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(reason) => Err(StudioError::Read {
            path: path.to_owned(),
            reason,
        }),
    }
}

impl Studio {
    /// Reads the book, voices, cast and lexicon as `build` does (a
    /// [`RenderSession`]); fails on any bad one.
    pub fn open(
        options: StudioOptions,
        worker_program: Option<PathBuf>,
    ) -> Result<Studio, StudioError> {
        let lexicon_text = read_optional(&options.lexicon)?;
        let mut spec = session_spec(&options);
        spec.worker_program = worker_program;
        let session = RenderSession::open(&spec)?;
        let cast = file_cast(&spec, &session);
        let base = VoicesConfig::parse(&session.voices.toml, &session.voices.file)
            .map_err(SessionError::from)?;
        let previews = tempfile::Builder::new()
            .prefix("tingshu-studio-")
            .tempdir()
            .map_err(|reason| StudioError::Write {
                path: std::env::temp_dir(),
                reason,
            })?;
        let (events, _) = broadcast::channel(256);
        let slots = Slots::new(options.max_syntheses, options.max_queued);
        Ok(Studio {
            slots,
            options,
            base,
            loaded: Mutex::new(Loaded {
                session: Arc::new(session),
                cast,
                lexicon_text,
                renders: BTreeMap::new(),
            }),
            events,
            previews,
            preview_count: AtomicU64::new(0),
            rendering: AtomicBool::new(false),
            stopping: tokio::sync::watch::Sender::new(false),
        })
    }

    pub fn options(&self) -> &StudioOptions {
        &self.options
    }

    fn loaded(&self) -> MutexGuard<'_, Loaded> {
        // A panic while holding the lock leaves consistent data (every
        // update replaces whole fields), so a poisoned lock is used as is.
        self.loaded.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session as it is now (a cast or lexicon edit makes a new one).
    fn session(&self) -> Arc<RenderSession> {
        Arc::clone(&self.loaded().session)
    }

    /// Starts the espeak-ng workers (or other engines) of every voice, so
    /// that the first preview does not wait for them.
    pub fn warm_up(&self) {
        crate::frontend::warm_up();
        let session = self.session();
        let mut needed: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for voice in self.base.voices.values() {
            needed
                .entry(voice.backend.as_str())
                .or_default()
                .push(voice.voice.clone());
        }
        for (backend, voices) in needed {
            if let Some(b) = session.renderer.backends.get(backend) {
                b.warm_up(&voices);
            }
        }
    }

    /// Renders a passage to WAV bytes with the voices it gets in the book,
    /// or all with `voice`.
    pub async fn preview(
        &self,
        chapter: ScriptChapter,
        voice: Option<&str>,
    ) -> Result<Vec<u8>, String> {
        let renderer = self.preview_renderer(voice);
        let n = self.preview_count.fetch_add(1, Ordering::Relaxed);
        let path = self.previews.path().join(format!("preview-{n}.wav"));
        let job = ChapterJob {
            index: 1,
            chapter,
            path: path.clone(),
        };
        let mut outcome = None;
        renderer.render(vec![job], |o| outcome = Some(o)).await;
        let result = match outcome.map(|o| o.result) {
            Some(Ok(_)) => {
                std::fs::read(&path).map_err(|e| format!("cannot read the preview: {e}"))
            }
            Some(Err(e)) => Err(crate::error::error_chain(&e)),
            None => Err("the passage produced no audio".to_owned()),
        };
        let _ = std::fs::remove_file(&path);
        result
    }

    /// Like [`Studio::preview`], but as a stream: a WAV header with
    /// placeholder sizes (as streamed WAVs have), then each chunk's 16-bit
    /// PCM as soon as it and every chunk before it are synthesized, with
    /// the pause that follows it. The header goes out with the first chunk,
    /// so the time to the first byte is the time to the first sentence.
    /// Each chunk is levelled on its own (the whole-passage preview levels
    /// per voice over the passage).
    /// `slot` is held until the stream ends or is dropped.
    pub fn preview_stream(
        &self,
        chapter: ScriptChapter,
        voice: Option<&str>,
        slot: OwnedSemaphorePermit,
    ) -> impl futures::Stream<Item = std::io::Result<axum::body::Bytes>> + Send + 'static {
        use futures::StreamExt;
        let renderer = self.preview_renderer(voice);
        let header = crate::session::stream::wav_stream_header(renderer.config.mix.sample_rate);
        let mut header = Some(header);
        crate::session::stream::stream_pcm(&renderer, &chapter, true).map(move |part| {
            let _slot = &slot;
            let pcm = part?;
            Ok(match header.take() {
                Some(mut first) => {
                    first.extend_from_slice(&pcm);
                    axum::body::Bytes::from(first)
                }
                None => axum::body::Bytes::from(pcm),
            })
        })
    }

    /// The renderer a preview uses: the session's, with no spoken title,
    /// everything in `voice` when given.
    fn preview_renderer(&self, voice: Option<&str>) -> Renderer {
        self.session().passage_renderer(voice, 1.0)
    }

    /// Subscribes to the render events (JSON texts), and to the stop.
    pub fn subscribe(
        &self,
    ) -> (
        broadcast::Receiver<String>,
        tokio::sync::watch::Receiver<bool>,
    ) {
        (self.events.subscribe(), self.stopping.subscribe())
    }

    /// Ends the event streams and writes what the cache still holds; call
    /// when the server stops.
    pub fn stop(&self) {
        self.stopping.send_replace(true);
    }

    /// Writes the cache entries still queued.
    pub fn flush(&self) {
        self.session().flush();
    }

    fn emit(&self, event: &serde_json::Value) {
        // No subscriber is fine: the page may be closed.
        let _ = self.events.send(event.to_string());
    }

    /// Whether a render is running.
    pub fn is_rendering(&self) -> bool {
        self.rendering.load(Ordering::SeqCst)
    }

    /// A slot of the bounded queue previews and renders share: at once,
    /// after a wait, or `None` when the queue is full (answer 503).
    pub async fn slot(&self) -> Option<OwnedSemaphorePermit> {
        self.slots.take().await
    }

    /// Starts rendering chapters (1-based positions) into the book's
    /// folder in the background, holding `slot` until it ends: as `build`
    /// renders them (the same files, manifest, subtitles and report), under
    /// the same lock, so that a `build` into the same folder meanwhile
    /// stops at once instead of removing this render's files. Refused
    /// while another render (here or in another process) holds the folder.
    pub fn start_render(
        self: &Arc<Self>,
        chapters: Vec<usize>,
        slot: OwnedSemaphorePermit,
    ) -> Result<(), RenderRefused> {
        if self.rendering.swap(true, Ordering::SeqCst) {
            return Err(RenderRefused::Running);
        }
        let session = self.session();
        let dir = crate::names::book_dir(&self.options.out, &session.book.stem);
        let lock = std::fs::create_dir_all(&dir)
            .map_err(|source| {
                RenderRefused::Write(BuildError::CreateDir {
                    path: dir.clone(),
                    source,
                })
            })
            .and_then(|()| {
                lock_book_dir(&dir).map_err(|e| match e {
                    e @ BuildError::Busy { .. } => RenderRefused::Busy(e),
                    e => RenderRefused::Write(e),
                })
            });
        let lock = match lock {
            Ok(lock) => lock,
            Err(e) => {
                self.rendering.store(false, Ordering::SeqCst);
                return Err(e);
            }
        };
        let studio = Arc::clone(self);
        tokio::spawn(async move {
            studio.render(&session, &dir, chapters, lock).await;
            studio.rendering.store(false, Ordering::SeqCst);
            drop(slot);
        });
        Ok(())
    }

    async fn render(
        &self,
        session: &RenderSession,
        dir: &Path,
        chapters: Vec<usize>,
        lock: PidLock,
    ) {
        let total = chapters.len();
        self.emit(&serde_json::json!({"type": "render", "state": "started", "done": 0, "total": total, "chapters": chapters}));
        let target = BookTarget {
            out: self.options.out.clone(),
            layout: Layout::Plain,
            formats: vec![Format::Wav],
            cover: None,
            author: None,
            ffmpeg: PathBuf::from("ffmpeg"),
            chapters,
            feed_url: None,
        };
        let mut done = 0;
        let mut failed = 0;
        let result =
            crate::session::book::render_observed(session, &target, Some(lock), &mut |outcome| {
                done += 1;
                let mut event = serde_json::json!({
                    "type": "render", "state": "chapter", "done": done, "total": total,
                    "chapter": outcome.index, "title": outcome.title,
                });
                match &outcome.result {
                    Ok(chapter) => {
                        self.loaded()
                            .renders
                            .insert(outcome.index, dir.join(&chapter.file));
                        event["ok"] = true.into();
                        event["duration_s"] = chapter.duration_s.into();
                        event["url"] = format!("/api/renders/{}", outcome.index).into();
                    }
                    Err(e) => {
                        failed += 1;
                        event["ok"] = false.into();
                        event["error"] = crate::error::error_chain(e).into();
                    }
                }
                self.emit(&event);
            })
            .await;
        let mut finished = serde_json::json!({"type": "render", "state": "finished", "done": done, "total": total, "failed": failed});
        match result {
            Ok(run) if !run.failures.is_empty() => {
                finished["errors"] = run.failures.into();
            }
            Ok(_) => {}
            Err(e) => finished["error"] = crate::error::error_chain(&e).into(),
        }
        self.emit(&finished);
    }

    /// The WAV this process rendered for chapter `index`, if any.
    pub fn render_path(&self, index: usize) -> Option<PathBuf> {
        self.loaded().renders.get(&index).cloned()
    }

    /// Replaces the cast with `text` (checked as the cast file, with its
    /// voices checked against the voices file), writes it and puts the
    /// session together again (the book split anew; backends kept). On
    /// error nothing changes, on disk or here.
    pub fn save_cast(&self, text: &str) -> Result<(), StudioError> {
        let path = &self.options.cast;
        let cast = Cast::parse(text, path).map_err(SessionError::from)?;
        let mut voices = self.session().voices.clone();
        voices.cast = Some(CastSource {
            file: path.display().to_string(),
            toml: text.to_owned(),
        });
        voices.parse_with(Some(&cast)).map_err(SessionError::from)?;
        self.replace_file(path, text, |_| {})
    }

    /// Replaces the lexicon with `text` (checked as the lexicon file),
    /// writes it and puts the session together again. On error nothing
    /// changes.
    pub fn save_lexicon(&self, text: &str) -> Result<(), StudioError> {
        let path = &self.options.lexicon;
        Lexicon::parse(text, path).map_err(SessionError::from)?;
        self.replace_file(path, text, |loaded| loaded.lexicon_text = text.to_owned())
    }

    /// Sets how paragraph `paragraph` of chapter `chapter` (1-based) is
    /// read: `text` said instead of the book's (`None`: the book's),
    /// spoken by `speaker` (`None`: as attributed). Saved in the overrides
    /// file, never in the book; the session is put together again, so the
    /// next render of the chapter synthesizes only the chunks that changed.
    /// On error nothing changes.
    pub fn save_line(
        &self,
        chapter: usize,
        paragraph: usize,
        text: Option<String>,
        speaker: Option<String>,
    ) -> Result<LineChange, LineError> {
        let session = self.session();
        let count = session.book.script.chapters.len();
        let current = chapter
            .checked_sub(1)
            .and_then(|i| session.book.script.chapters.get(i))
            .ok_or(LineError::NoChapter { chapter, count })?;
        let before: Vec<Segment> = current
            .segments
            .iter()
            .filter(|s| s.paragraph == paragraph)
            .cloned()
            .collect();
        let existing = session.overrides.get(chapter, paragraph);
        let was = match existing {
            Some(o) => o.was.clone(),
            None => paragraph_text(current, paragraph)
                .ok_or(LineError::NoParagraph { chapter, paragraph })?,
        };
        // The book's own text is no override.
        let text = text.filter(|t| t.trim() != was);
        let mut overrides = session.overrides.clone();
        overrides.set(LineOverride {
            chapter,
            paragraph,
            was,
            text,
            speaker: speaker.filter(|s| !s.trim().is_empty()),
        });
        self.replace_file(&self.options.overrides, &overrides.to_toml(), |_| {})?;
        let session = self.session();
        let chapter_now = &session.book.script.chapters[chapter - 1];
        let after = chapter_now
            .segments
            .iter()
            .filter(|s| s.paragraph == paragraph)
            .cloned()
            .collect();
        let job = session.renderer.prepare(crate::session::chapter_job(
            Path::new(""),
            chapter,
            chapter_now,
        ));
        Ok(LineChange {
            before,
            after,
            line: session.overrides.get(chapter, paragraph).cloned(),
            to_synthesize: session.renderer.uncached_chunks(&job.chapter),
        })
    }

    /// Writes `text` to `path`, then a new session over the same backends
    /// reads it; when that fails the file is put back as it was.
    fn replace_file(
        &self,
        path: &Path,
        text: &str,
        update: impl FnOnce(&mut Loaded),
    ) -> Result<(), StudioError> {
        let before = path.exists().then(|| read_optional(path)).transpose()?;
        edit::write_atomically(path, text)?;
        let current = self.session();
        let spec = session_spec(&self.options);
        match current.reopen(&spec) {
            Ok(session) => {
                let mut loaded = self.loaded();
                loaded.cast = file_cast(&spec, &session);
                loaded.session = Arc::new(session);
                update(&mut loaded);
                Ok(())
            }
            Err(e) => {
                let _ = match before {
                    Some(text) => edit::write_atomically(path, &text),
                    None => std::fs::remove_file(path).map_err(|reason| StudioError::Write {
                        path: path.to_owned(),
                        reason,
                    }),
                };
                Err(e.into())
            }
        }
    }
}

/// The cast file's characters as the session parsed them; none while
/// there is no cast file (the session then casts from the characters found
/// in the book, which are no file's).
fn file_cast(spec: &SessionSpec, session: &RenderSession) -> Cast {
    match (&spec.cast, &session.cast) {
        (Some(_), Some(cast)) => cast.clone(),
        _ => Cast::default(),
    }
}

/// What the studio's session is put together from: the files `build`
/// would be given (the cast and lexicon once they exist).
fn session_spec(options: &StudioOptions) -> SessionSpec {
    SessionSpec {
        book: BookInput::Source(options.book.clone()),
        split: SplitOptions::default(),
        voices: options.voices.clone(),
        cast: options.cast.exists().then(|| options.cast.clone()),
        lexicon: options.lexicon.exists().then(|| options.lexicon.clone()),
        overrides: options
            .overrides
            .exists()
            .then(|| options.overrides.clone()),
        cache: Some(CacheSpec {
            location: options.out.join(".cache"),
            write_behind: true,
        }),
        worker_program: None,
        listeners: Listeners::Some,
    }
}

/// `None` for an empty cast, so that a pasted text is split as `split`
/// splits it without `--cast`.
fn cast_arg(cast: &Cast) -> Option<&Cast> {
    (!cast.characters.is_empty()).then_some(cast)
}

/// A random token: 128 bits from the operating system, as hex.
pub fn random_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(hex::encode(bytes))
}
