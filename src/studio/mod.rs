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
use crate::book::Book;
use crate::book::{SourceError, read_source};
use crate::config::{ConfigError, VoicesConfig};
use crate::frontend::{Lexicon, LexiconError};
use crate::pipeline::{ChapterJob, Renderer};
use crate::synth::cache::{Cache, CacheError};
use crate::text::{Cast, CastError, ScriptChapter, SplitOptions};

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
    /// Renders go to OUT/<stem>/, the synthesis cache to OUT/.cache.
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
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Cast(#[from] CastError),
    #[error(transparent)]
    Lexicon(#[from] LexiconError),
    #[error(transparent)]
    Cache(#[from] CacheError),
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

/// The book with its cast, voices and lexicon as they are now.
struct Loaded {
    book: Arc<Book>,
    cast: Cast,
    /// The voices file with the cast applied.
    config: Arc<VoicesConfig>,
    /// The user's lexicon with the book's ruby words below it.
    lexicon: Lexicon,
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
    /// Backends and client, shared by every preview and render, so that
    /// engine workers stay warm.
    renderer: Renderer,
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
    /// Reads the book, voices, cast and lexicon; fails on any bad one.
    pub fn open(
        options: StudioOptions,
        worker_program: Option<PathBuf>,
    ) -> Result<Studio, StudioError> {
        let base = VoicesConfig::load(options.voices.as_deref())?;
        let cast_text = read_optional(&options.cast)?;
        let cast = Cast::parse(&cast_text, &options.cast)?;
        let lexicon_text = read_optional(&options.lexicon)?;
        let user_lexicon = Lexicon::parse(&lexicon_text, &options.lexicon)?;
        let book = Arc::new(read_source(
            &options.book,
            cast_arg(&cast),
            SplitOptions::default(),
        )?);
        let config = Arc::new(with_cast(&base, &options.cast, &cast)?);
        let mut lexicon = user_lexicon;
        book.add_ruby_words(&mut lexicon);
        let cache_dir = options.out.join(".cache");
        let cache =
            Cache::open(&cache_dir)?
                .write_behind()
                .map_err(|reason| StudioError::Write {
                    path: cache_dir.clone(),
                    reason,
                })?;
        let renderer = Renderer::with_cache(base.clone(), worker_program, Some(cache));
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
            renderer,
            loaded: Mutex::new(Loaded {
                book,
                cast,
                config,
                lexicon,
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

    /// Starts the espeak-ng workers (or other engines) of every voice, so
    /// that the first preview does not wait for them.
    pub fn warm_up(&self) {
        crate::frontend::warm_up();
        let mut needed: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for voice in self.base.voices.values() {
            needed
                .entry(voice.backend.as_str())
                .or_default()
                .push(voice.voice.clone());
        }
        for (backend, voices) in needed {
            if let Some(b) = self.renderer.backends.get(backend) {
                b.warm_up(&voices);
            }
        }
    }

    /// A renderer over the shared backends with `config` and `lexicon`.
    fn renderer_with(&self, config: VoicesConfig, lexicon: Lexicon) -> Renderer {
        Renderer {
            config: Arc::new(config),
            backends: self.renderer.backends.clone(),
            client: Arc::clone(&self.renderer.client),
            lexicon,
            ahead_bytes: self.renderer.ahead_bytes,
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

    /// The renderer a preview uses: the cast and lexicon as they are now,
    /// no spoken title, everything in `voice` when given.
    fn preview_renderer(&self, voice: Option<&str>) -> Renderer {
        let (mut config, lexicon) = {
            let loaded = self.loaded();
            ((*loaded.config).clone(), loaded.lexicon.clone())
        };
        config.mix.speak_title = false;
        if let Some(voice) = voice {
            config.casting.narrator = voice.to_owned();
            config.casting.dialogue = Some(voice.to_owned());
            config.casting.male = None;
            config.casting.female = None;
            config.casting.characters.clear();
            config.cast.clear();
        }
        self.renderer_with(config, lexicon)
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
        if let Some(cache) = self.renderer.client.cache() {
            cache.flush();
        }
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

    /// Starts rendering chapters (1-based positions) in the background,
    /// holding `slot` until it ends; false when a render is already
    /// running.
    pub fn start_render(
        self: &Arc<Self>,
        chapters: Vec<usize>,
        slot: OwnedSemaphorePermit,
    ) -> bool {
        if self.rendering.swap(true, Ordering::SeqCst) {
            return false;
        }
        let studio = Arc::clone(self);
        tokio::spawn(async move {
            studio.render(chapters).await;
            studio.rendering.store(false, Ordering::SeqCst);
            drop(slot);
        });
        true
    }

    async fn render(&self, chapters: Vec<usize>) {
        let (book, config, lexicon) = {
            let loaded = self.loaded();
            (
                Arc::clone(&loaded.book),
                (*loaded.config).clone(),
                loaded.lexicon.clone(),
            )
        };
        let total = chapters.len();
        let dir = crate::names::book_dir(&self.options.out, &book.stem);
        self.emit(&serde_json::json!({"type": "render", "state": "started", "done": 0, "total": total, "chapters": chapters}));
        if let Err(e) = std::fs::create_dir_all(&dir) {
            self.emit(&serde_json::json!({"type": "render", "state": "finished", "done": 0, "total": total,
                "error": format!("cannot create {}: {e}", dir.display())}));
            return;
        }
        let jobs: Vec<ChapterJob> = chapters
            .iter()
            .map(|&index| {
                let chapter = book.script.chapters[index - 1].clone();
                let file = crate::names::chapter_file_name(index, &chapter.title);
                ChapterJob {
                    index,
                    chapter,
                    path: dir.join(file),
                }
            })
            .collect();
        let paths: BTreeMap<usize, PathBuf> =
            jobs.iter().map(|j| (j.index, j.path.clone())).collect();
        let renderer = self.renderer_with(config, lexicon);
        let mut done = 0;
        let mut failed = 0;
        renderer
            .render(jobs, |outcome| {
                done += 1;
                let mut event = serde_json::json!({
                    "type": "render", "state": "chapter", "done": done, "total": total,
                    "chapter": outcome.index, "title": outcome.title,
                });
                match outcome.result {
                    Ok(chapter) => {
                        self.loaded()
                            .renders
                            .insert(outcome.index, paths[&outcome.index].clone());
                        event["ok"] = true.into();
                        event["duration_s"] = chapter.duration_s.into();
                        event["url"] = format!("/api/renders/{}", outcome.index).into();
                    }
                    Err(e) => {
                        failed += 1;
                        event["ok"] = false.into();
                        event["error"] = crate::error::error_chain(&e).into();
                    }
                }
                self.emit(&event);
            })
            .await;
        self.flush();
        self.emit(&serde_json::json!({"type": "render", "state": "finished", "done": done, "total": total, "failed": failed}));
    }

    /// The WAV this process rendered for chapter `index`, if any.
    pub fn render_path(&self, index: usize) -> Option<PathBuf> {
        self.loaded().renders.get(&index).cloned()
    }

    /// Replaces the cast with `text` (checked as the cast file, with its
    /// voices checked against the voices file), writes it and splits the
    /// book again. On error nothing changes, on disk or here.
    pub fn save_cast(&self, text: &str) -> Result<(), StudioError> {
        let path = &self.options.cast;
        let cast = Cast::parse(text, path)?;
        let config = with_cast(&self.base, path, &cast)?;
        let book = read_source(&self.options.book, cast_arg(&cast), SplitOptions::default())?;
        edit::write_atomically(path, text)?;
        let mut loaded = self.loaded();
        let mut lexicon = Lexicon::parse(&loaded.lexicon_text, &self.options.lexicon)?;
        book.add_ruby_words(&mut lexicon);
        loaded.book = Arc::new(book);
        loaded.cast = cast;
        loaded.config = Arc::new(config);
        loaded.lexicon = lexicon;
        Ok(())
    }

    /// Replaces the lexicon with `text` (checked as the lexicon file) and
    /// writes it. On error nothing changes.
    pub fn save_lexicon(&self, text: &str) -> Result<(), StudioError> {
        let path = &self.options.lexicon;
        let mut lexicon = Lexicon::parse(text, path)?;
        edit::write_atomically(path, text)?;
        let mut loaded = self.loaded();
        loaded.book.add_ruby_words(&mut lexicon);
        loaded.lexicon = lexicon;
        loaded.lexicon_text = text.to_owned();
        Ok(())
    }
}

/// `None` for an empty cast, so that the script is split as `split`
/// splits it without `--cast`.
fn cast_arg(cast: &Cast) -> Option<&Cast> {
    (!cast.characters.is_empty()).then_some(cast)
}

/// The voices file with the cast's genders and voices.
fn with_cast(base: &VoicesConfig, path: &Path, cast: &Cast) -> Result<VoicesConfig, ConfigError> {
    let mut config = base.clone();
    config.apply_cast(path, cast)?;
    Ok(config)
}

/// A random token: 128 bits from the operating system, as hex.
pub fn random_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(hex::encode(bytes))
}
