//! One render, put together in one place.
//!
//! Every command that renders — `build`, `batch run`, `preview`, `enqueue`
//! (planning) and `worker` — opens a [`RenderSession`] from a
//! [`SessionSpec`]: the book (split with its cast), the voices (with the
//! cast's voices and casting), the lexicon (the user's file and the book's
//! ruby readings), the synthesis cache, and the [`Renderer`] built from
//! them. Every path thus reads a book the same way and sends the same
//! requests, hence writes the same bytes.
//!
//! - [`voices`] — the voices, cast and lexicon as text (what queue tasks
//!   carry);
//! - [`book`] — a whole book into its folder (`build`);
//! - [`cover`] — the book's own cover, staged for ffmpeg;
//! - [`report`] — `report.txt` and its pace flags;
//! - [`stream`] — a passage as PCM chunk by chunk, for a listener who waits.

pub mod book;
pub mod cover;
pub mod report;
pub mod stream;
pub mod voices;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::audio::encode::Format;
use crate::book::{Book, SourceError, read_book_with_options, read_source};
use crate::config::ConfigError;
use crate::frontend::lexicon::LexiconError;
use crate::names::{STATE_DIR, chapter_file_name};
use crate::outputs::BookOutputs;
use crate::pipeline::{ChapterError, ChapterJob, ChapterOutcome, Renderer};
use crate::synth::cache::{Cache, CacheError};
use crate::text::overrides::Stale;
use crate::text::{CastError, Overrides, OverridesError, Script, ScriptChapter, SplitOptions};
pub use voices::{VoicesError, VoicesSource};

/// Where the book comes from.
#[derive(Debug, Clone)]
pub enum BookInput {
    /// A TXT or EPUB file.
    File(PathBuf),
    /// A TXT or EPUB file, or a directory of chapter files (a batch job's
    /// source).
    Source(PathBuf),
    /// Text given directly (`preview TEXT`), under a name for the book.
    Text { text: String, name: String },
}

/// Where synthesized chunks are kept.
#[derive(Debug, Clone)]
pub struct CacheSpec {
    /// A directory, or an `s3://` URL.
    pub location: PathBuf,
    /// Entries are written by an idle-priority thread while synthesis goes
    /// on; [`RenderSession::flush`] waits for them. Off where another
    /// process must find an entry as soon as it is made (queue workers).
    pub write_behind: bool,
}

/// What a render is put together from.
#[derive(Debug, Clone)]
pub struct SessionSpec {
    pub book: BookInput,
    pub split: SplitOptions,
    /// Voices file; the default voices when `None`.
    pub voices: Option<PathBuf>,
    /// Cast file: speakers' names, aliases and voices.
    pub cast: Option<PathBuf>,
    /// Pronunciation lexicon, above the book's own ruby readings.
    pub lexicon: Option<PathBuf>,
    /// Line overrides: paragraphs read with other text or speaker.
    pub overrides: Option<PathBuf>,
    /// No cache when `None` (planning queue tasks renders nothing).
    pub cache: Option<CacheSpec>,
    /// The binary that runs espeak-ng worker processes.
    pub worker_program: Option<PathBuf>,
    /// Who waits on this session's audio, which sets how its neural
    /// backends run.
    pub listeners: Listeners,
}

/// Who waits on a session's requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Listeners {
    /// Nobody waits on one request (build, batch, queue workers): neural
    /// threads sleep between parallel steps.
    #[default]
    None,
    /// Listeners wait on some requests (the studio's previews, the server's
    /// passages): neural threads spin between parallel steps (35–40 ms of a
    /// first clause on 2 cores), but the session count stays the default,
    /// since the same session also renders whole chapters.
    Some,
    /// One listener waits for the first audio of one passage (`preview`):
    /// the threads spin, and neural backends that leave `sessions` to the
    /// default load one session, so a GPU starts after one load instead of
    /// four (the CPU's default is one session already).
    One,
}

impl SessionSpec {
    /// A spec for the book at `path` with the default voices, no cast, no
    /// lexicon and no cache.
    pub fn for_file(path: impl Into<PathBuf>) -> SessionSpec {
        SessionSpec {
            book: BookInput::File(path.into()),
            split: SplitOptions::default(),
            voices: None,
            cast: None,
            lexicon: None,
            overrides: None,
            cache: None,
            worker_program: None,
            listeners: Listeners::None,
        }
    }

    /// This spec, reading the book from `book`.
    pub fn with_book(mut self, book: BookInput) -> SessionSpec {
        self.book = book;
        self
    }
}

/// Why a render could not be put together. Each names the file or key.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Book(#[from] SourceError),
    #[error(transparent)]
    Voices(#[from] VoicesError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Cast(#[from] CastError),
    #[error(transparent)]
    Lexicon(#[from] LexiconError),
    #[error(transparent)]
    Overrides(#[from] OverridesError),
    #[error(transparent)]
    Cache(#[from] CacheError),
    #[error("cannot stage the book's cover in {}", dir.display())]
    Cover {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A backend the voices use cannot run (its engine's files or device).
    #[error("{file}: {message}")]
    Backend { file: String, message: String },
    #[error("cache {location}: cannot start its writer thread")]
    CacheWriter {
        location: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A book ready to render: everything read, checked and built.
pub struct RenderSession {
    pub book: Book,
    /// The cast the book was split with and the voices were cast from
    /// (the cast file, else the characters found in the book), parsed once.
    pub cast: Option<crate::text::Cast>,
    /// The line overrides applied to the book's script (none without a
    /// file), and those whose paragraph is gone (not applied).
    pub overrides: Overrides,
    pub stale_overrides: Vec<Stale>,
    /// The voices, cast and lexicon as text.
    pub voices: VoicesSource,
    /// Backends, client (limits, retries, fallbacks, cache) and lexicon.
    pub renderer: Renderer,
    /// The cache the renderer reads and fills, when there is one.
    pub cache: Option<Cache>,
}

impl RenderSession {
    /// Reads the book, voices, cast and lexicon and builds the renderer.
    /// Nothing is written, except that a cache directory's stale temporary
    /// files are removed.
    pub fn open(spec: &SessionSpec) -> Result<RenderSession, SessionError> {
        RenderSession::open_over(spec, None)
    }

    /// Like [`RenderSession::open`], but over this session's backends,
    /// client and cache (`spec.cache` is not opened again): engines stay
    /// warm and loaded models stay loaded. For a cast or lexicon edit,
    /// whose voices file (hence backends) is the same.
    pub fn reopen(&self, spec: &SessionSpec) -> Result<RenderSession, SessionError> {
        RenderSession::open_over(spec, Some(self))
    }

    fn open_over(
        spec: &SessionSpec,
        current: Option<&RenderSession>,
    ) -> Result<RenderSession, SessionError> {
        // The front end's tables load while the book is read.
        crate::frontend::warm_up();
        // The cast is parsed here, once, and handed to what needs it.
        let (mut voices, mut cast) =
            VoicesSource::load(spec.voices.as_deref())?.with_cast(spec.cast.as_deref())?;
        let mut book = match &spec.book {
            BookInput::File(path) => read_book_with_options(path, cast.as_ref(), spec.split)
                .map_err(SourceError::from)?,
            BookInput::Source(path) => read_source(path, cast.as_ref(), spec.split)?,
            BookInput::Text { text, name } => {
                let script = Script::from_text_with_options(text, name, cast.as_ref(), spec.split);
                Book::from_script(name.clone(), "UTF-8", script)
            }
        };
        // Without a cast file, the characters found in the book (and their
        // genders) cast the voices.
        if voices.cast.is_none()
            && let Some(found) = book.script.discovered_cast()
        {
            let file = format!("{} (characters found in the book)", book.stem);
            let toml = found.to_toml_with_counts(&[]);
            if let Ok(found) = crate::text::Cast::parse(&toml, Path::new(&file)) {
                voices.cast = Some(voices::CastSource { file, toml });
                cast = Some(found);
            }
        }
        let (overrides, stale_overrides) = match &spec.overrides {
            Some(path) => {
                let overrides = Overrides::load(path)?;
                let stale = overrides.apply(&mut book.script, cast.as_ref(), spec.split, path)?;
                for s in &stale {
                    tracing::warn!(
                        "{}: line[{}]: chapter {} has no paragraph {} with the text it was                          made for (the book changed?); not applied",
                        path.display(),
                        s.index,
                        s.chapter,
                        s.paragraph
                    );
                }
                (overrides, stale)
            }
            None => (Overrides::default(), Vec::new()),
        };
        let lexicon = book.lexicon(spec.lexicon.as_deref())?;
        voices.lexicon = lexicon.entries().to_vec();
        let (cache, renderer) = match current {
            Some(current) => (
                current.cache.clone(),
                Renderer {
                    config: Arc::new(voices.parse_with(cast.as_ref())?),
                    backends: current.renderer.backends.clone(),
                    client: Arc::clone(&current.renderer.client),
                    lexicon: voices.lexicon(),
                    ahead_bytes: current.renderer.ahead_bytes,
                },
            ),
            None => {
                let cache = spec.cache.as_ref().map(open_cache).transpose()?;
                let mut config = voices.parse_with(cast.as_ref())?;
                match spec.listeners {
                    Listeners::One => config.for_a_listener(),
                    Listeners::Some => config.spin_for_listeners(),
                    Listeners::None => {}
                }
                let renderer =
                    Renderer::with_cache(config, spec.worker_program.clone(), cache.clone())
                        .with_lexicon(voices.lexicon());
                (cache, renderer)
            }
        };
        Ok(RenderSession {
            book,
            cast,
            overrides,
            stale_overrides,
            voices,
            renderer,
            cache,
        })
    }

    /// Waits until the backends the voices use can run (the neural
    /// engine loaded, its files checked): called by the commands that are
    /// about to synthesize, before they write anything, so an install or
    /// device error is exit 2 with nothing written. Commands that only plan
    /// (queue enqueue) or may find nothing to do do not pay for the load.
    pub fn ready(&self) -> Result<(), SessionError> {
        self.renderer.ready().map_err(|e| SessionError::Backend {
            file: self.voices.file.clone(),
            message: e.to_string(),
        })
    }

    /// The render jobs of chapters `indices` (1-based, in range) into
    /// `wav_dir`, under their file names.
    pub fn chapter_jobs(&self, wav_dir: &Path, indices: &[usize]) -> Vec<ChapterJob> {
        indices
            .iter()
            .filter_map(|&index| {
                let chapter = self.book.script.chapters.get(index.checked_sub(1)?)?;
                Some(chapter_job(wav_dir, index, chapter))
            })
            .collect()
    }

    /// Renders one job (a chapter or a passage) to its path.
    pub async fn render_one(&self, job: ChapterJob) -> ChapterOutcome {
        let (index, title) = (job.index, job.chapter.title.clone());
        let mut outcome = None;
        self.renderer.render(vec![job], |o| outcome = Some(o)).await;
        outcome.unwrap_or(ChapterOutcome {
            index,
            title,
            result: Err(ChapterError::Incomplete { missing: 0 }),
        })
    }

    /// The outputs of the book in `formats` into its folder `dir`, tagged
    /// from the book's metadata (as `build` without `--author` and
    /// `--cover`); no encoder (the caller adds its own where it encodes:
    /// here, or on a queue's workers). When an encoded format embeds it,
    /// the book's own cover (EPUB) is kept in `dir`'s state folder,
    /// rewritten only when it changes: a path queue workers on other
    /// machines read as well.
    pub fn book_outputs(
        &self,
        formats: &[Format],
        dir: &Path,
    ) -> Result<BookOutputs, SessionError> {
        let book = &self.book;
        let mut outputs = BookOutputs::new(
            &book.script.book,
            self.renderer.config.mix.sample_rate,
            formats,
        );
        outputs.set_metadata(&book.metadata, None);
        if let Some(book_cover) = book.metadata.cover.as_ref().filter(|c| !c.bytes.is_empty())
            && outputs.needs_encoder()
        {
            // Checked where ffmpeg is; workers check again by failing.
            let encoder = crate::outputs::system_encoder().ok();
            outputs.cover = cover::stage(
                book_cover,
                &dir.join(STATE_DIR).join("cover"),
                encoder.as_ref(),
            )
            .map_err(|source| SessionError::Cover {
                dir: dir.to_owned(),
                source,
            })?;
        }
        Ok(outputs)
    }

    /// The renderer of a passage a listener waits for (a preview in the
    /// studio, a request to the server): this session's backends, client
    /// and lexicon, no spoken title; everything read by `voice` when one is
    /// given (a name of the voices file, checked by the caller), and every
    /// voice's speed times `speed`.
    pub fn passage_renderer(&self, voice: Option<&str>, speed: f32) -> Renderer {
        let base = &self.renderer;
        let mut config = (*base.config).clone();
        config.mix.speak_title = false;
        if let Some(voice) = voice {
            config.casting.narrator = voice.to_owned();
            config.casting.dialogue = Some(voice.to_owned());
            config.casting.male = None;
            config.casting.female = None;
            config.casting.male_more.clear();
            config.casting.female_more.clear();
            config.casting.characters.clear();
            config.cast.clear();
        }
        if (speed - 1.0).abs() > f32::EPSILON {
            for v in config.voices.values_mut() {
                v.speed *= speed;
            }
        }
        Renderer {
            config: Arc::new(config),
            backends: base.backends.clone(),
            client: Arc::clone(&base.client),
            lexicon: base.lexicon.clone(),
            ahead_bytes: base.ahead_bytes,
        }
    }

    /// Waits until every cache entry made so far is stored.
    pub fn flush(&self) {
        if let Some(cache) = &self.cache {
            cache.flush();
        }
    }
}

/// The renderer of `voices` (voices file, cast and lexicon) with `cache`:
/// what a session renders with, and what a queue worker builds from a
/// task's payload.
pub fn renderer_for(
    voices: &VoicesSource,
    worker_program: Option<PathBuf>,
    cache: Option<Cache>,
) -> Result<Renderer, VoicesError> {
    Ok(Renderer::with_cache(voices.parse()?, worker_program, cache).with_lexicon(voices.lexicon()))
}

/// Opens the cache of `spec`; removes the temporary files of dead writers.
pub fn open_cache(spec: &CacheSpec) -> Result<Cache, SessionError> {
    let cache = Cache::open(&spec.location)?;
    cache.remove_stale_temps();
    if !spec.write_behind {
        return Ok(cache);
    }
    cache
        .write_behind()
        .map_err(|source| SessionError::CacheWriter {
            location: spec.location.clone(),
            source,
        })
}

/// The render job of chapter `index` (1-based) into `dir`.
pub fn chapter_job(dir: &Path, index: usize, chapter: &ScriptChapter) -> ChapterJob {
    ChapterJob {
        index,
        chapter: chapter.clone(),
        path: dir.join(chapter_file_name(index, &chapter.title)),
    }
}
