//! Planning: a book's chapters → `synth`, `mix` and `book` tasks.
//!
//! The payload of each task carries everything a worker on another machine
//! needs (the voices and cast files' text, the chapter's reading script,
//! absolute output paths), so workers share only the queue, the synthesis
//! cache and the output directory — not the book files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{JobPlan, NewTask, TaskKind};
use crate::audio::encode::Format;
use crate::outputs::{BookInfo, BookOutputs};
use crate::pipeline::{self, ChapterJob, Renderer};
pub use crate::session::voices::{CastSource, VoicesSource};
use crate::text::ScriptChapter;

/// Tags of the SRT/LRC subtitles written beside a chapter (as `build` does).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubtitleTags {
    /// The book's title (album).
    pub album: String,
    pub artist: Option<String>,
}

impl SubtitleTags {
    /// What a task of an earlier version with these tags wrote beside the
    /// chapter WAV at `wav`: its subtitles.
    pub fn outputs(self, wav: &Path) -> OutputsSpec {
        OutputsSpec {
            dir: wav.parent().unwrap_or(Path::new(".")).to_owned(),
            formats: vec![Format::Wav.extension().to_owned()],
            title: self.album,
            author: self.artist,
            cover: None,
            info: None,
            total: None,
            feed: None,
        }
    }
}

/// What a book's files besides the chapter WAVs are made with (as `build`
/// and `batch run` make them): formats, tags, cover. Carried by `mix` tasks
/// (subtitles, MP3/Opus) and the `book` task (manifest, playlist, M4B).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputsSpec {
    /// The book directory (chapter WAVs are in a hidden folder of it when
    /// `wav` is not one of the formats).
    pub dir: PathBuf,
    /// Formats by name: `wav`, `mp3`, `opus`, `m4b`.
    pub formats: Vec<String>,
    /// Album and M4B title.
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Cover image embedded in encoded files, at a path inside the shared
    /// output directory (workers read it there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cover: Option<PathBuf>,
    /// The book's title, author and language written into the manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<BookInfo>,
    /// Chapter count in the track tag of encoded chapters (`None` for a
    /// serial that still grows, as `batch run` writes them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<usize>,
    /// Where the book is published (a `batch` job's `feed_url`): the book
    /// task writes its `feed.xml` and the library's `feeds.opml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feed: Option<crate::feed::FeedLink>,
}

impl OutputsSpec {
    /// The spec of `outputs` (its encoder is not carried: workers use
    /// their own ffmpeg), for the book directory `dir`.
    pub fn new(dir: &Path, outputs: &BookOutputs, total: Option<usize>) -> OutputsSpec {
        OutputsSpec {
            dir: dir.to_owned(),
            formats: outputs
                .formats
                .iter()
                .map(|f| f.extension().to_owned())
                .collect(),
            title: outputs.title.clone(),
            author: outputs.author.clone(),
            cover: outputs.cover.clone(),
            info: outputs.info.clone(),
            total,
            feed: outputs.feed.clone(),
        }
    }

    /// The outputs of book `book` (no encoder: the caller adds its own).
    pub fn outputs(&self, book: &str, sample_rate: u32) -> Result<BookOutputs, String> {
        let formats = self
            .formats
            .iter()
            .map(|f| f.parse::<Format>())
            .collect::<Result<Vec<_>, _>>()?;
        let mut outputs = BookOutputs::new(book, sample_rate, &formats);
        outputs.title.clone_from(&self.title);
        outputs.author.clone_from(&self.author);
        outputs.cover.clone_from(&self.cover);
        outputs.info.clone_from(&self.info);
        outputs.feed.clone_from(&self.feed);
        Ok(outputs)
    }
}

/// A chapter of a `batch` job: the mix records it in the job's state file,
/// so `batch status` and the next `batch enqueue` know it is done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchRecord {
    pub job: String,
    /// What the chapter was rendered from (`batch::state::chapter_hash`).
    pub hash: String,
}

/// The book-level files of a `batch` job: the `book` task records them in
/// the job's state file, so the next `batch run` leaves them alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BookRecord {
    pub job: String,
    /// What the files are made from (the hash `batch run` records).
    pub hash: String,
}

/// What a task does, as stored in its payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum TaskSpec {
    /// Synthesize one chunk into the store under `key`.
    Synth {
        key: String,
        voices: VoicesSource,
        /// Voice name in the voices file.
        voice: String,
        text: String,
        pinyin: String,
    },
    /// Mix chapter `index` from cached chunks and write it to `path`.
    Mix {
        voices: VoicesSource,
        index: usize,
        chapter: ScriptChapter,
        path: PathBuf,
        /// Write SRT and LRC subtitles beside the chapter (payloads of
        /// earlier versions; plans now carry `outputs`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subtitles: Option<SubtitleTags>,
        /// Write the chapter's subtitles and encoded files.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outputs: Option<Box<OutputsSpec>>,
        /// Record the chapter in its batch job's state.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        record: Option<BatchRecord>,
    },
    /// Merge the chapters mixed by this task's dependencies into the
    /// manifest in `dir`, and write the other book-level files `outputs`
    /// calls for (playlist, M4B).
    Book {
        book: String,
        dir: PathBuf,
        sample_rate: u32,
        /// Absent in payloads of earlier versions: the manifest only.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outputs: Option<Box<OutputsSpec>>,
        /// Record the book-level files in the batch job's state.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        record: Option<BookRecord>,
    },
}

/// One book to plan.
#[derive(Debug, Clone)]
pub struct BookPlanInput {
    /// Job name (shown by status).
    pub job: String,
    /// Title recorded in the manifest (the reading script's book title).
    pub book: String,
    /// Output directory of the book (absolute for workers elsewhere).
    pub dir: PathBuf,
    pub chapters: Vec<ChapterJob>,
    pub voices: VoicesSource,
    pub max_attempts: u32,
    /// The files besides the WAVs (subtitles, encoded chapters, playlist,
    /// M4B); the WAVs and the manifest only when `None`.
    pub outputs: Option<OutputsSpec>,
    /// For a batch job: chapter index → chapter hash to record when mixed.
    pub batch_hashes: BTreeMap<usize, String>,
    /// For a batch job: the hash recorded with the book-level files.
    pub book_hash: Option<String>,
}

fn content_id(kind: TaskKind, parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    hash.update(kind.as_str().as_bytes());
    for part in parts {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    format!("{}:{}", kind.as_str(), hex::encode(hash.finalize()))
}

fn to_json(spec: &TaskSpec) -> String {
    serde_json::to_string(spec).expect("task specs serialize")
}

/// Plans the tasks of one book. `renderer` must be built from
/// `input.voices`.
pub fn plan_book(input: &BookPlanInput, renderer: &Renderer) -> JobPlan {
    let mut synth = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut mixes = Vec::new();
    for job in &input.chapters {
        let spoken = renderer.prepare(job.clone());
        let mut keys = Vec::new();
        for planned in renderer.plan_chapter(&spoken.chapter).chunks() {
            if pipeline::is_silent(planned.request) {
                continue;
            }
            let key = planned
                .backend
                .cache_key(planned.request)
                .as_str()
                .to_owned();
            let id = format!("{}:{key}", TaskKind::Synth.as_str());
            if seen.insert(id.clone()) {
                synth.push(NewTask {
                    id: id.clone(),
                    kind: TaskKind::Synth,
                    payload: to_json(&TaskSpec::Synth {
                        key,
                        voices: input.voices.clone(),
                        voice: planned.request.voice.name.clone(),
                        text: planned.request.text.clone(),
                        pinyin: planned.request.pinyin.clone(),
                    }),
                    depends_on: Vec::new(),
                    max_attempts: input.max_attempts,
                });
            }
            keys.push(id);
        }
        keys.sort();
        keys.dedup();
        let payload = to_json(&TaskSpec::Mix {
            voices: input.voices.clone(),
            index: job.index,
            chapter: spoken.chapter.clone(),
            path: job.path.clone(),
            subtitles: None,
            outputs: input.outputs.clone().map(Box::new),
            record: input.batch_hashes.get(&job.index).map(|hash| BatchRecord {
                job: input.job.clone(),
                hash: hash.clone(),
            }),
        });
        mixes.push(NewTask {
            id: content_id(TaskKind::Mix, &[&payload]),
            kind: TaskKind::Mix,
            payload,
            depends_on: keys,
            max_attempts: input.max_attempts,
        });
    }
    let sample_rate = renderer.config.mix.sample_rate;
    let payload = to_json(&TaskSpec::Book {
        book: input.book.clone(),
        dir: input.dir.clone(),
        sample_rate,
        outputs: input.outputs.clone().map(Box::new),
        record: input.book_hash.as_ref().map(|hash| BookRecord {
            job: input.job.clone(),
            hash: hash.clone(),
        }),
    });
    let mix_ids: Vec<String> = mixes.iter().map(|m| m.id.clone()).collect();
    let mut parts = vec![payload.as_str()];
    parts.extend(mix_ids.iter().map(String::as_str));
    let book = NewTask {
        id: content_id(TaskKind::Book, &parts),
        kind: TaskKind::Book,
        payload,
        depends_on: mix_ids,
        max_attempts: input.max_attempts,
    };
    let mut tasks = synth;
    tasks.extend(mixes);
    tasks.push(book);
    JobPlan {
        job: input.job.clone(),
        tasks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::Script;

    fn input(text: &str) -> (BookPlanInput, Renderer) {
        let voices = VoicesSource::load(None).unwrap();
        let renderer = Renderer::new(voices.parse().unwrap(), None);
        let script = Script::from_text(text, "书");
        let chapters = script
            .chapters
            .iter()
            .enumerate()
            .map(|(i, chapter)| ChapterJob {
                index: i + 1,
                chapter: chapter.clone(),
                path: PathBuf::from(format!("/out/书/{:04}.wav", i + 1)),
            })
            .collect();
        let input = BookPlanInput {
            job: "书".into(),
            book: script.book.clone(),
            dir: "/out/书".into(),
            chapters,
            voices,
            max_attempts: 3,
            outputs: None,
            batch_hashes: BTreeMap::new(),
            book_hash: None,
        };
        (input, renderer)
    }

    const TEXT: &str =
        "第一章 雾\n\n海上起了雾。“点灯吧。”他说。\n\n第二章 灯\n\n海上起了雾。灯亮了。\n";

    #[test]
    fn shared_chunks_become_one_task_and_plans_are_stable() {
        let (input, renderer) = input(TEXT);
        let plan = plan_book(&input, &renderer);
        let count = |kind| plan.tasks.iter().filter(|t| t.kind == kind).count();
        assert_eq!(count(TaskKind::Mix), 2);
        assert_eq!(count(TaskKind::Book), 1);
        // "海上起了雾。" opens both chapters but is one synth task.
        let synth: Vec<&NewTask> = plan
            .tasks
            .iter()
            .filter(|t| t.kind == TaskKind::Synth)
            .collect();
        let mixes: Vec<&NewTask> = plan
            .tasks
            .iter()
            .filter(|t| t.kind == TaskKind::Mix)
            .collect();
        let shared: Vec<&String> = mixes[0]
            .depends_on
            .iter()
            .filter(|id| mixes[1].depends_on.contains(id))
            .collect();
        assert_eq!(shared.len(), 1);
        let unique: std::collections::HashSet<&String> =
            mixes.iter().flat_map(|m| &m.depends_on).collect();
        assert_eq!(unique.len(), synth.len());
        // Dependencies precede dependents; the book waits on every chapter.
        let book = plan.tasks.last().unwrap();
        assert_eq!(
            book.depends_on,
            vec![mixes[0].id.clone(), mixes[1].id.clone()]
        );
        assert_eq!(plan, plan_book(&input, &renderer));
        // Payloads round-trip.
        for task in &plan.tasks {
            let spec: TaskSpec = serde_json::from_str(&task.payload).unwrap();
            assert_eq!(to_json(&spec), task.payload);
        }
    }

    #[test]
    fn a_changed_chapter_changes_only_its_tasks() {
        let (a, renderer) = input(TEXT);
        let (b, _) = input(&TEXT.replace("灯亮了。", "灯终于亮了。"));
        let plan_a = plan_book(&a, &renderer);
        let plan_b = plan_book(&b, &renderer);
        let ids = |p: &JobPlan, kind| -> Vec<String> {
            p.tasks
                .iter()
                .filter(|t| t.kind == kind)
                .map(|t| t.id.clone())
                .collect()
        };
        let (mix_a, mix_b) = (ids(&plan_a, TaskKind::Mix), ids(&plan_b, TaskKind::Mix));
        assert_eq!(mix_a[0], mix_b[0]);
        assert_ne!(mix_a[1], mix_b[1]);
        let new_synth = ids(&plan_b, TaskKind::Synth)
            .into_iter()
            .filter(|id| !ids(&plan_a, TaskKind::Synth).contains(id))
            .count();
        assert_eq!(new_synth, 1);
    }

    #[test]
    fn payloads_of_earlier_versions_still_read() {
        let book: TaskSpec = serde_json::from_str(
            r#"{"kind":"book","book":"书","dir":"/out/书","sample_rate":24000}"#,
        )
        .unwrap();
        assert!(matches!(
            book,
            TaskSpec::Book {
                outputs: None,
                record: None,
                ..
            }
        ));
        let tags = SubtitleTags {
            album: "雾港".into(),
            artist: Some("林照".into()),
        };
        let spec = tags.outputs(Path::new("/out/书/0001-雾.wav"));
        assert_eq!(spec.dir, Path::new("/out/书"));
        let outputs = spec.outputs("书", 24000).unwrap();
        assert_eq!(outputs.formats, [Format::Wav]);
        assert_eq!(outputs.title, "雾港");
        assert_eq!(outputs.author.as_deref(), Some("林照"));
    }

    #[test]
    fn outputs_specs_round_trip_and_name_bad_formats() {
        let mut outputs = BookOutputs::new("书", 24000, &[Format::M4b, Format::Mp3]);
        outputs.title = "雾港".into();
        outputs.cover = Some("/out/书/.tingshu-batch/cover.png".into());
        outputs.info = Some(BookInfo {
            title: Some("雾港".into()),
            author: None,
            language: Some("zh".into()),
        });
        outputs.feed = Some(crate::feed::FeedLink::new(
            "https://example.org/books",
            Path::new("/out"),
            Path::new("/out/书"),
        ));
        let spec = OutputsSpec::new(Path::new("/out/书"), &outputs, Some(3));
        let json = serde_json::to_string(&spec).unwrap();
        let back: OutputsSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, spec);
        let again = back.outputs("书", 24000).unwrap();
        assert_eq!(again.formats, outputs.formats);
        assert_eq!(again.tags_digest(), outputs.tags_digest());
        assert_eq!(again.info, outputs.info);
        assert_eq!(again.feed, outputs.feed);
        assert_eq!(
            again.feed.as_ref().unwrap().library(Path::new("/out/书")),
            Path::new("/out")
        );
        let bad = OutputsSpec {
            formats: vec!["flac".into()],
            ..spec
        };
        assert!(
            bad.outputs("书", 24000)
                .unwrap_err()
                .contains("unknown format 'flac'")
        );
    }
}
