//! The render pipeline through the library with an in-process fake
//! synthesizer (no network, no process): requests go out in reading order
//! and every segment reaches the manifest, a failed chunk fails only its
//! chapter, a repeated chunk is asked for once, and a second render is
//! served from the cache.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tingshu::config::VoicesConfig;
use tingshu::pipeline::{ChapterError, ChapterJob, ChapterOutcome, Renderer, is_silent};
use tingshu::synth::SynthRequest;
use tingshu::synth::cache::Cache;
use tingshu::text::{Script, SegmentKind};

use crate::support::fake_synth::FakeSynth;
use crate::support::wav;

/// Narration and dialogue voices on one backend, `fake`; its synthesizer
/// is the test's, the table only names it.
const VOICES: &str = r#"[backends.fake]
type = "espeak"

[voices.narrator]
backend = "fake"
voice = "narrator"

[voices.hero]
backend = "fake"
voice = "hero"

[casting]
narrator = "narrator"
dialogue = "hero"
"#;

/// Three chapters (original text), each closed by the same sentence.
const BOOK: &str = "\
第一章 雾港
守夜人点亮了灯塔。他说：“今晚有雾。”
夜色又深了一些。
第二章 夜班
船在雾里慢慢靠岸。她问：“灯还亮着吗？”
夜色又深了一些。
第三章 归航
天亮以后，雾散了，海面上的渔船一条接一条地回到了港口。
夜色又深了一些。
";

const REFRAIN: &str = "夜色又深了一些。";

fn jobs(dir: &Path) -> Vec<ChapterJob> {
    Script::from_text(BOOK, "灯塔")
        .chapters
        .into_iter()
        .enumerate()
        .map(|(i, chapter)| ChapterJob {
            index: i + 1,
            path: dir.join(format!("{:04}.wav", i + 1)),
            chapter,
        })
        .collect()
}

fn renderer(synth: &Arc<FakeSynth>, cache: Option<Cache>) -> Renderer {
    let config = VoicesConfig::parse(VOICES, "fake.toml").unwrap();
    Renderer::from_client(config, synth.client(cache))
}

/// Renders `jobs`; the outcome of each chapter by index (each once).
async fn render(renderer: &Renderer, jobs: Vec<ChapterJob>) -> BTreeMap<usize, ChapterOutcome> {
    let mut outcomes = BTreeMap::new();
    renderer
        .render(jobs, |outcome| {
            let index = outcome.index;
            assert!(
                outcomes.insert(index, outcome).is_none(),
                "chapter {index} twice"
            );
        })
        .await;
    outcomes
}

/// The distinct requests the jobs need, in reading order.
fn planned(renderer: &Renderer, jobs: &[ChapterJob]) -> Vec<SynthRequest> {
    let mut requests: Vec<SynthRequest> = Vec::new();
    for job in jobs {
        for chunk in renderer.plan_chapter(&job.chapter).chunks() {
            if !is_silent(chunk.request) && !requests.contains(chunk.request) {
                requests.push(chunk.request.clone());
            }
        }
    }
    requests
}

#[tokio::test(flavor = "multi_thread")]
async fn chapters_render_in_order_with_every_segment_in_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let synth = FakeSynth::new("fake");
    let renderer = renderer(&synth, None);
    let jobs = jobs(dir.path());
    assert_eq!(jobs.len(), 3);
    let texts: Vec<String> = planned(&renderer, &jobs)
        .into_iter()
        .map(|r| r.text)
        .collect();
    let outcomes = render(&renderer, jobs.clone()).await;
    // One request at a time: the backend hears the book in reading order.
    assert_eq!(synth.calls(), texts);
    assert_eq!(outcomes.keys().copied().collect::<Vec<_>>(), [1, 2, 3]);
    for job in &jobs {
        let outcome = &outcomes[&job.index];
        assert_eq!(outcome.title, job.chapter.title);
        let chapter = outcome.result.as_ref().unwrap();
        assert_eq!(chapter.index, job.index);
        let got: Vec<(SegmentKind, &str, &str)> = chapter
            .segments
            .iter()
            .map(|s| (s.kind, s.text.as_str(), s.voice.as_str()))
            .collect();
        let want: Vec<(SegmentKind, &str, &str)> = job
            .chapter
            .segments
            .iter()
            .map(|s| {
                let voice = match s.kind {
                    SegmentKind::Dialogue => "hero",
                    SegmentKind::Narration => "narrator",
                };
                (s.kind, s.text.as_str(), voice)
            })
            .collect();
        assert_eq!(got, want, "chapter {}", job.index);
        let mut last_end = 0.0;
        for segment in &chapter.segments {
            assert!(
                segment.start_s >= last_end && segment.end_s > segment.start_s,
                "{segment:?}"
            );
            last_end = segment.end_s;
        }
        let secs = wav::duration_s(&job.path);
        assert!(last_end <= secs, "{last_end} s of segments in {secs} s");
        assert!((secs - chapter.duration_s).abs() < 0.01, "{secs}");
    }
    assert_eq!(
        renderer.client.stats.requests.load(Ordering::Relaxed),
        texts.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_chunk_fails_only_its_chapter() {
    let dir = tempfile::tempdir().unwrap();
    let synth = FakeSynth::refusing("fake", "船在雾里");
    let renderer = renderer(&synth, None);
    let jobs = jobs(dir.path());
    let outcomes = render(&renderer, jobs.clone()).await;
    assert_eq!(outcomes.len(), 3);
    for index in [1, 3] {
        assert!(outcomes[&index].result.is_ok(), "chapter {index}");
        assert!(jobs[index - 1].path.is_file(), "chapter {index}");
    }
    let err = outcomes[&2].result.as_ref().unwrap_err();
    assert!(
        matches!(err, ChapterError::Synth { segment: 1, .. }),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "segment 1 (\"船在雾里慢慢靠岸。她问：\")");
    let ChapterError::Synth { source, .. } = err else {
        unreachable!("matched above")
    };
    assert!(
        source.to_string().starts_with("backend fake: refused"),
        "{source}"
    );
    assert!(!jobs[1].path.exists(), "the failed chapter was written");
    assert_eq!(renderer.client.stats.failures.load(Ordering::Relaxed), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repeated_chunk_is_requested_once() {
    let dir = tempfile::tempdir().unwrap();
    let synth = FakeSynth::new("fake");
    let renderer = renderer(&synth, None);
    let outcomes = render(&renderer, jobs(dir.path())).await;
    let spoken = outcomes
        .values()
        .flat_map(|o| &o.result.as_ref().unwrap().segments)
        .filter(|s| s.text == REFRAIN)
        .count();
    assert_eq!(spoken, 3, "the refrain closes every chapter");
    let calls = synth.calls();
    assert_eq!(calls.iter().filter(|t| *t == REFRAIN).count(), 1);
    let mut distinct = calls.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), calls.len(), "{calls:?}");
    assert_eq!(
        renderer.client.stats.requests.load(Ordering::Relaxed),
        calls.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_render_is_served_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let first_dir = dir.path().join("first");
    let second_dir = dir.path().join("second");
    std::fs::create_dir_all(&first_dir).unwrap();
    std::fs::create_dir_all(&second_dir).unwrap();

    let synth = FakeSynth::new("fake");
    let first = renderer(&synth, Some(Cache::new(&cache)));
    let first_jobs = jobs(&first_dir);
    let outcomes = render(&first, first_jobs.clone()).await;
    let sent = synth.calls().len();
    assert!(sent > 0);
    let stats = &first.client.stats;
    assert_eq!(stats.requests.load(Ordering::Relaxed), sent);
    assert_eq!(stats.cache_hits.load(Ordering::Relaxed), 0);

    // Another run (a new backend of the same name) over the same cache.
    let again = FakeSynth::new("fake");
    let second = renderer(&again, Some(Cache::new(&cache)));
    let second_jobs = jobs(&second_dir);
    for job in &second_jobs {
        assert_eq!(second.uncached_chunks(&job.chapter), 0);
    }
    let replayed = render(&second, second_jobs.clone()).await;
    assert_eq!(again.calls(), Vec::<String>::new());
    let stats = &second.client.stats;
    assert_eq!(stats.requests.load(Ordering::Relaxed), 0);
    assert_eq!(stats.cache_hits.load(Ordering::Relaxed), sent);
    for (a, b) in first_jobs.iter().zip(&second_jobs) {
        assert_eq!(
            outcomes[&a.index].result.as_ref().unwrap(),
            replayed[&b.index].result.as_ref().unwrap()
        );
        assert!(
            std::fs::read(&a.path).unwrap() == std::fs::read(&b.path).unwrap(),
            "chapter {} differs",
            a.index
        );
    }
}
