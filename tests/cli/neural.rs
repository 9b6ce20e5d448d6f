//! The built-in neural voice (Kokoro-82M through ONNX Runtime) end to end,
//! through the real binary: the demo book, determinism, text over the
//! model's token limit, and broken installations.
//!
//! Needs the voice installed (`scripts/install-kokoro.sh`, which the
//! README's test command runs). Without it these tests skip with a message,
//! or fail when `TINGSHU_REQUIRE_SERVICES=1`.

use std::path::{Path, PathBuf};
use std::process::Output;

use tingshu::synth::kokoro::KokoroFiles;

use crate::support::cli::Tingshu;
use crate::support::services;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn installed() -> Option<KokoroFiles> {
    let files = KokoroFiles::locate(None);
    let what = format!(
        "the neural voice in {} (scripts/install-kokoro.sh)",
        files.root.display()
    );
    services::require(&what, files.installed()).then_some(files)
}

fn tingshu(dir: &Path, args: &[&str], data: Option<&Path>) -> Output {
    command(dir, args, data).output()
}

/// tingshu `args` in `dir`, with the data directory `data` and none of the
/// environment's voices, cache or output settings.
fn command(dir: &Path, args: &[&str], data: Option<&Path>) -> Tingshu {
    let mut run = Tingshu::new(args)
        .dir(dir)
        .env_remove("TINGSHU_VOICES")
        .env_remove("TINGSHU_CACHE")
        .env_remove("TINGSHU_OUT");
    if let Some(data) = data {
        run = run.env("TINGSHU_DATA", data);
    }
    run
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn wav(path: &Path) -> (u32, f64, Vec<i16>) {
    let mut reader = hound::WavReader::open(path).unwrap();
    let rate = reader.spec().sample_rate;
    let samples: Vec<i16> = reader.samples::<i16>().map(Result::unwrap).collect();
    (rate, samples.len() as f64 / f64::from(rate), samples)
}

fn default_voices() -> String {
    format!("{REPO}/voices/default.toml")
}

#[test]
fn demo_book_renders_with_distinct_neural_voices_by_gender() {
    let Some(_) = installed() else { return };
    let dir = tempfile::tempdir().unwrap();
    let book = format!("{REPO}/samples/灯塔守夜人.txt");
    let cast = format!("{REPO}/samples/灯塔守夜人.cast.toml");
    let out = tingshu(
        dir.path(),
        &["build", &book, "--cast", &cast, "--out", "out"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let book_dir = dir.path().join("out/灯塔守夜人");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(book_dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["sample_rate"], 24000);
    let chapters = manifest["chapters"].as_array().unwrap();
    assert!(!chapters.is_empty());
    let mut voices = std::collections::BTreeSet::new();
    let mut han = 0usize;
    let mut audio_s = 0.0;
    for chapter in chapters {
        let file = book_dir.join(chapter["file"].as_str().unwrap());
        let (rate, secs, samples) = wav(&file);
        assert_eq!(rate, 24000);
        audio_s += secs;
        // Speech, not silence: a fair share of samples is loud.
        let loud = samples.iter().filter(|s| s.unsigned_abs() > 1000).count();
        assert!(
            loud * 10 > samples.len(),
            "{}: mostly silent",
            file.display()
        );
        for seg in chapter["segments"].as_array().unwrap() {
            voices.insert(seg["voice"].as_str().unwrap().to_owned());
            han += seg["text"]
                .as_str()
                .unwrap()
                .chars()
                .filter(|c| ('\u{4e00}'..='\u{9fff}').contains(c))
                .count();
        }
    }
    // The cast file's genders reach the gendered neural voices.
    for v in ["narrator", "female", "male"] {
        assert!(voices.contains(v), "{voices:?}");
    }
    // A narrator reads 3–8 Han characters a second.
    let rate = han as f64 / audio_s;
    assert!((2.5..8.0).contains(&rate), "{han} chars in {audio_s:.1}s");
}

#[test]
fn same_text_and_voice_give_the_same_bytes() {
    let Some(_) = installed() else { return };
    let dir = tempfile::tempdir().unwrap();
    let voices = default_voices();
    let text = "风从海上吹来，他把灯塔的门关紧了。";
    for (name, cache) in [("a.wav", "c1"), ("b.wav", "c2")] {
        let out = tingshu(
            dir.path(),
            &[
                "preview", text, "--voices", &voices, "-o", name, "--cache", cache,
            ],
            None,
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let a = std::fs::read(dir.path().join("a.wav")).unwrap();
    let b = std::fs::read(dir.path().join("b.wav")).unwrap();
    assert!(a.len() > 48_000, "{} bytes", a.len());
    assert!(a == b, "two renders of the same text differ");
}

#[test]
fn a_paragraph_over_the_token_limit_is_split_not_cut() {
    let Some(_) = installed() else { return };
    let dir = tempfile::tempdir().unwrap();
    // One request of 160 characters without punctuation: about 700 phoneme
    // tokens, over the model's 510, so the engine must split it.
    let voices = std::fs::read_to_string(default_voices())
        .unwrap()
        .replace("# max_chars = 90", "max_chars = 400");
    std::fs::write(dir.path().join("v.toml"), voices).unwrap();
    let words = [
        "灯塔", "守夜", "海浪", "星光", "渔船", "归来", "山风", "明月",
    ];
    let text: String = (0..80).map(|i| words[i % words.len()]).collect();
    assert_eq!(text.chars().count(), 160);
    let phonemes = tingshu::synth::kokoro::phonemes::phonemize(
        &tingshu::frontend::prepare(&text).pinyin_words,
    );
    assert!(
        phonemes.chars().count() > 510,
        "{}",
        phonemes.chars().count()
    );
    let out = tingshu(
        dir.path(),
        &[
            "preview", &text, "--voices", "v.toml", "-o", "long.wav", "--cache", "c",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (_, secs, _) = wav(&dir.path().join("long.wav"));
    // Every syllable spoken: at most 8 a second, so at least 20 s.
    assert!(secs > 20.0, "{secs:.1}s for 160 characters");
}

/// A data directory with links to the installed files, where a test can
/// remove or spoil one of them.
fn staged(files: &KokoroFiles) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("kokoro/voices")).unwrap();
    std::fs::create_dir_all(root.join("onnxruntime")).unwrap();
    let link = |from: &Path, to: PathBuf| std::os::unix::fs::symlink(from, to).unwrap();
    link(
        &files.model,
        root.join("kokoro").join(files.model.file_name().unwrap()),
    );
    link(&files.vocab, root.join("kokoro/vocab.json"));
    link(
        &files.runtime,
        root.join("onnxruntime")
            .join(files.runtime.file_name().unwrap()),
    );
    for pack in files.installed_packs() {
        std::fs::copy(
            files.pack(pack),
            root.join(format!("kokoro/voices/{pack}.bin")),
        )
        .unwrap();
    }
    dir
}

fn assert_bad_install(data: &Path, voices: &str, expect: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let out = tingshu(
        dir.path(),
        &[
            "build",
            &format!("{REPO}/samples/灯塔守夜人.txt"),
            "--voices",
            voices,
            "--out",
            "out",
        ],
        Some(data),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    for e in expect {
        assert!(err.contains(e), "{err} lacks {e}");
    }
    assert!(!dir.path().join("out").exists(), "output written: {err}");
}

#[test]
fn broken_installations_are_one_line_errors_naming_the_file() {
    let Some(files) = installed() else { return };
    let voices = default_voices();

    let data = staged(&files);
    std::fs::remove_file(data.path().join("kokoro/kokoro-v1.0.int8.onnx")).unwrap();
    assert_bad_install(
        data.path(),
        &voices,
        &["kokoro-v1.0.int8.onnx: missing", "install-kokoro.sh"],
    );

    // Right size, wrong bytes (a sparse file of zeros).
    let data = staged(&files);
    let model = data.path().join("kokoro/kokoro-v1.0.int8.onnx");
    std::fs::remove_file(&model).unwrap();
    let f = std::fs::File::create(&model).unwrap();
    f.set_len(tingshu::synth::kokoro::files::MODEL_SIZE)
        .unwrap();
    drop(f);
    assert_bad_install(
        data.path(),
        &voices,
        &["kokoro-v1.0.int8.onnx: sha256", "reinstall"],
    );

    let data = staged(&files);
    let pack = data.path().join("kokoro/voices/zm_yunxi.bin");
    let mut bytes = std::fs::read(&pack).unwrap();
    bytes[1000] ^= 0x40;
    std::fs::write(&pack, bytes).unwrap();
    assert_bad_install(
        data.path(),
        &voices,
        &["zm_yunxi.bin: sha256", "voices.dialogue.voice"],
    );

    let data = staged(&files);
    let runtime = data.path().join("onnxruntime/libonnxruntime.so.1.32.0");
    std::fs::remove_file(&runtime).unwrap();
    std::fs::write(&runtime, "not a library").unwrap();
    assert_bad_install(
        data.path(),
        &voices,
        &[
            "libonnxruntime.so.1.32.0: 13 bytes, expected 34824680",
            "reinstall it with scripts/install-kokoro.sh",
        ],
    );

    let data = staged(&files);
    std::fs::remove_file(data.path().join("onnxruntime/libonnxruntime.so.1.32.0")).unwrap();
    assert_bad_install(data.path(), &voices, &["libonnxruntime.so.1.32.0: missing"]);

    let data = staged(&files);
    let dir = tempfile::tempdir().unwrap();
    let v = std::fs::read_to_string(&voices).unwrap().replace(
        "voice = \"zm_yunxi:0.7,zm_yunjian:0.3\"",
        "voice = \"zm_nobody:0.5,zf_xiaobei:0.5\"",
    );
    let vfile = dir.path().join("v.toml");
    std::fs::write(&vfile, v).unwrap();
    assert_bad_install(
        data.path(),
        vfile.to_str().unwrap(),
        &[
            "v.toml",
            "voices.dialogue.voice",
            "zm_nobody",
            "known: zf_xiaobei",
        ],
    );
}

#[test]
fn without_the_neural_voice_the_default_is_espeak_with_one_notice() {
    let empty = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = tingshu(dir.path(), &["voices"], Some(empty.path()));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("voices/espeak.toml (built in)"),
        "{listing}"
    );
    assert!(
        listing.contains("neural voice (Kokoro-82M): not installed"),
        "{listing}"
    );
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("install it with scripts/install-kokoro.sh"),
        "{err}"
    );
}

#[test]
fn voices_lists_the_installed_packs() {
    let Some(files) = installed() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = tingshu(dir.path(), &["voices"], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("voices/default.toml (built in)"),
        "{listing}"
    );
    assert!(
        listing.contains(&files.model.display().to_string()),
        "{listing}"
    );
    assert!(
        listing.contains("female zf_xiaobei zf_xiaoni zf_xiaoxiao zf_xiaoyi"),
        "{listing}"
    );
    assert!(listing.contains("  neural       kokoro"), "{listing}");
}

/// The cached optimized graphs in `data` (each an entry folder).
fn graph_caches(data: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(data.join("cache"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    found.retain(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("kokoro-cpu-"))
    });
    found
}

/// A preview of `text` into a fresh folder (so no clip cache is shared):
/// the WAV's bytes.
fn preview_bytes(data: &Path, text: &str) -> Vec<u8> {
    preview_bytes_with(data, text, true)
}

/// [`preview_bytes`], with the CPU graph rewrite on or off.
fn preview_bytes_with(data: &Path, text: &str, rewrite: bool) -> Vec<u8> {
    let on = if rewrite { "1" } else { "0" };
    preview_bytes_env(data, text, &[("TINGSHU_KOKORO_REWRITE", on)])
}

/// [`preview_bytes`] with `env` set.
fn preview_bytes_env(data: &Path, text: &str, env: &[(&str, &str)]) -> Vec<u8> {
    preview_clips_env(data, text, env).0
}

/// [`preview_bytes_env`], and the clips the preview cached (as the model
/// made them, before the mixer), longest first.
fn preview_clips_env(data: &Path, text: &str, env: &[(&str, &str)]) -> (Vec<u8>, Vec<Vec<f32>>) {
    let dir = tempfile::tempdir().unwrap();
    let voices = default_voices();
    let args = ["preview", text, "--voices", &voices, "-o", "p.wav"];
    let mut cmd = command(dir.path(), &args, Some(data));
    for (k, v) in env {
        cmd = cmd.env(k, v);
    }
    let out = cmd.output();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut clips = Vec::new();
    let mut folders = vec![dir.path().join(".cache")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "wav") {
                let reader = hound::WavReader::open(&path).unwrap();
                clips.push(reader.into_samples::<f32>().map(Result::unwrap).collect());
            }
        }
    }
    clips.sort_by_key(|c: &Vec<f32>| std::cmp::Reverse(c.len()));
    (std::fs::read(dir.path().join("p.wav")).unwrap(), clips)
}

#[test]
fn tingshus_own_operators_speak_the_same_bits_as_the_models_nodes() {
    let Some(files) = installed() else { return };
    let data = staged(&files);
    let text = "雾从海上漫过来，灯塔的光一圈一圈地扫过黑沉沉的海面。她问：“船还来吗？”";
    let (model, clips) = preview_clips_env(data.path(), text, &[("TINGSHU_KOKORO_OPS", "0")]);
    let plain = graph_caches(data.path());
    let (fused, fused_clips) = preview_clips_env(data.path(), text, &[("TINGSHU_KOKORO_OPS", "1")]);
    let caches = graph_caches(data.path());
    assert_eq!((plain.len(), caches.len()), (1, 1), "{plain:?} {caches:?}");
    // Where they are used (x86-64), the cached graph holds tingshu's
    // operators, under a key of its own.
    if tingshu::synth::kokoro::ops::enabled() {
        assert_ne!(plain[0], caches[0], "each graph has its own cache key");
        let graph =
            std::fs::read(caches[0].join(tingshu::synth::kokoro::graph_cache::GRAPH)).unwrap();
        let has = |s: &str| graph.windows(s.len()).any(|w| w == s.as_bytes());
        assert!(
            has("ai.tingshu") && has("Snake") && has("Stft"),
            "tingshu's operators are not in the cached graph"
        );
    }
    // The clips as the model made them (read back by hound), and the WAV.
    assert!(clips.len() >= 3, "{} clips", clips.len());
    assert!(clips.iter().all(|c| c.len() > 4_800));
    assert!(clips == fused_clips, "tingshu's operators changed a clip");
    assert!(model.len() > 44 + 48_000, "{} bytes", model.len());
    assert!(model == fused, "tingshu's operators changed the audio");
}

#[test]
fn the_rewritten_cpu_graph_speaks_the_same_bits_as_the_model() {
    let Some(files) = installed() else { return };
    let data = staged(&files);
    // Both voices of a dialogue, a long clause and a short one.
    let text = "夜里起了风，老人把灯塔的门关紧，又往炉子里添了两块木柴。她问：“船还来吗？”";
    let model = preview_bytes_with(data.path(), text, false);
    let plain = graph_caches(data.path());
    assert_eq!(plain.len(), 1, "{plain:?}");
    let rewritten = preview_bytes_with(data.path(), text, true);
    let caches = graph_caches(data.path());
    assert_eq!(caches.len(), 1, "{caches:?}");
    // Each graph is cached under its own key (where the rewrite is used:
    // x86-64).
    let key = |p: &Path| p.file_name().unwrap().to_string_lossy()[..27].to_owned();
    if tingshu::synth::kokoro::rewrite::products_here().is_some() {
        assert_ne!(key(&caches[0]), key(&plain[0]));
    } else {
        assert_eq!(key(&caches[0]), key(&plain[0]));
    }
    assert!(model.len() > 44 + 24_000, "{} bytes", model.len());
    assert!(model == rewritten, "the rewritten graph changed the audio");
}

#[test]
fn the_optimized_graph_is_cached_and_a_spoiled_cache_is_rebuilt() {
    use tingshu::synth::kokoro::graph_cache::{DATA, GRAPH, GraphCache};
    let Some(files) = installed() else { return };
    let data = staged(&files);
    let text = "灯塔的光照着海面。";
    let first = preview_bytes(data.path(), text);
    let caches = graph_caches(data.path());
    assert_eq!(caches.len(), 1, "{caches:?}");
    let cache = &caches[0];
    // The graph and its weights, packed, in a file of their own that the
    // graph names.
    assert!(cache.is_dir(), "{cache:?}");
    let weights = std::fs::metadata(cache.join(DATA)).unwrap().len();
    // The model's 92 MB of weights at least (with their packed copies
    // where this CPU's kernels pack them: 181 MB here).
    assert!(weights > 80_000_000, "{weights} bytes of weights");
    let graph = std::fs::read(cache.join(GRAPH)).unwrap();
    assert!(graph.len() < 10_000_000, "{} bytes of graph", graph.len());
    assert!(graph.windows(DATA.len()).any(|w| w == DATA.as_bytes()));
    let digest = |p: &Path| GraphCache::digest(p).unwrap();
    let name = cache.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.ends_with(&digest(cache)[..16]), "{name}");
    // From the cache: the same audio, byte for byte.
    assert_eq!(preview_bytes(data.path(), text), first);

    // One flipped byte in the middle of the weights (the size kept): still
    // renders the same audio, and the entry is made again.
    let spoiled = cache.join(DATA);
    let mut bytes = std::fs::read(&spoiled).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&spoiled, &bytes).unwrap();
    assert_eq!(preview_bytes(data.path(), text), first);
    let rebuilt = graph_caches(data.path());
    assert_eq!(rebuilt.len(), 1, "{rebuilt:?}");
    assert_ne!(std::fs::read(rebuilt[0].join(DATA)).unwrap(), bytes);
    assert!(
        rebuilt[0]
            .to_string_lossy()
            .ends_with(&digest(&rebuilt[0])[..16])
    );

    // The graph truncated: the same.
    let spoiled = rebuilt[0].join(GRAPH);
    let bytes = std::fs::read(&spoiled).unwrap();
    std::fs::write(&spoiled, &bytes[..bytes.len() / 3]).unwrap();
    assert_eq!(preview_bytes(data.path(), text), first);
    let rebuilt = graph_caches(data.path());
    assert_eq!(rebuilt.len(), 1, "{rebuilt:?}");
    assert_eq!(std::fs::read(rebuilt[0].join(GRAPH)).unwrap(), bytes);

    // The weights cut short (ONNX Runtime maps them: reading past the end
    // of a mapped file would kill the process): the same.
    let spoiled = rebuilt[0].join(DATA);
    let full = std::fs::metadata(&spoiled).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&spoiled)
        .unwrap()
        .set_len(full / 2)
        .unwrap();
    assert_eq!(preview_bytes(data.path(), text), first);
    let rebuilt = graph_caches(data.path());
    assert_eq!(rebuilt.len(), 1, "{rebuilt:?}");
    assert_eq!(
        std::fs::metadata(rebuilt[0].join(DATA)).unwrap().len(),
        full
    );
}

#[test]
fn cuda_that_cannot_be_had_is_a_setting_error_and_voices_says_where_it_runs() {
    let Some(files) = installed() else { return };
    let data = staged(&files);
    let dir = tempfile::tempdir().unwrap();
    let v = std::fs::read_to_string(default_voices()).unwrap();
    assert!(v.contains("type = \"kokoro\""), "{v}");
    let v = v.replace("type = \"kokoro\"", "type = \"kokoro\"\ndevice = \"cuda\"");
    let vfile = dir.path().join("gpu.toml");
    std::fs::write(&vfile, v).unwrap();
    assert_bad_install(
        data.path(),
        vfile.to_str().unwrap(),
        &[
            "gpu.toml",
            "backends.neural.device",
            "no CUDA provider installed",
            "onnxruntime-gpu/libonnxruntime.so.1.31.1 missing",
            "TINGSHU_GPU=1 scripts/install-kokoro.sh",
        ],
    );
    let out = tingshu(
        dir.path(),
        &[
            "preview",
            "短句。",
            "--voices",
            vfile.to_str().unwrap(),
            "-o",
            "p/x.wav",
        ],
        Some(data.path()),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!dir.path().join("p").exists());

    // A provider but no driver (this machine has no GPU): the reason says so.
    let gpu = data.path().join("onnxruntime-gpu");
    std::fs::create_dir_all(&gpu).unwrap();
    for name in [
        "libonnxruntime.so.1.31.1",
        "libonnxruntime_providers_cuda.so",
    ] {
        std::fs::write(gpu.join(name), b"stand-in").unwrap();
    }
    if libloading_cuda_missing() {
        let out = tingshu(
            dir.path(),
            &[
                "build",
                &format!("{REPO}/samples/灯塔守夜人.txt"),
                "--voices",
                vfile.to_str().unwrap(),
                "--out",
                "o",
            ],
            Some(data.path()),
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("backends.neural.device"), "{err}");
        assert!(err.contains("no NVIDIA driver (libcuda.so.1"), "{err}");
        assert!(!dir.path().join("o").exists());
    }

    // device = auto (the default) runs on the CPU and says why.
    let out = tingshu(
        dir.path(),
        &["voices", "--voices", &default_voices()],
        Some(data.path()),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = String::from_utf8_lossy(&out.stdout);
    let why = if libloading_cuda_missing() {
        "runs on cpu: device = auto and no NVIDIA driver (libcuda.so.1"
    } else {
        "runs on cuda: device = auto"
    };
    assert!(listing.contains(why), "{listing}");
    std::fs::remove_dir_all(&gpu).unwrap();
    let out = tingshu(
        dir.path(),
        &["voices", "--voices", &default_voices()],
        Some(data.path()),
    );
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("runs on cpu: device = auto and no CUDA provider installed"),
        "{listing}"
    );
    // …and how its convolutions run on this CPU.
    assert!(
        listing.contains(tingshu::synth::kokoro::rewrite::describe()),
        "{listing}"
    );
    let out = command(
        dir.path(),
        &["voices", "--voices", &default_voices()],
        Some(data.path()),
    )
    .env("TINGSHU_KOKORO_REWRITE", "0")
    .output();
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(listing.contains("convolutions as published"), "{listing}");
}

/// Whether this machine lacks the NVIDIA driver's library.
fn libloading_cuda_missing() -> bool {
    ![
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "/usr/lib64/libcuda.so.1",
        "/usr/lib/wsl/lib/libcuda.so.1",
    ]
    .iter()
    .any(|p| Path::new(p).exists())
}

/// `staged`, with a copy of `name` (under the data directory) in place of
/// its link, spoiled by `spoil`, its modification time kept.
fn spoiled(files: &KokoroFiles, name: &str, spoil: impl FnOnce(&mut Vec<u8>)) -> tempfile::TempDir {
    let data = staged(files);
    let path = data.path().join(name);
    let original = std::fs::canonicalize(&path).unwrap();
    let mtime = std::fs::metadata(&original).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&original).unwrap();
    spoil(&mut bytes);
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, &bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    data
}

#[test]
fn a_truncated_or_altered_runtime_is_an_install_error_not_a_crash() {
    let Some(files) = installed() else { return };
    let voices = default_voices();
    let runtime = "onnxruntime/libonnxruntime.so.1.32.0";
    for keep in [4096, 1 << 20, 20 << 20] {
        let data = spoiled(&files, runtime, |b| b.truncate(keep));
        assert_bad_install(
            data.path(),
            &voices,
            &[
                &format!("libonnxruntime.so.1.32.0: {keep} bytes, expected 34824680"),
                "reinstall it with scripts/install-kokoro.sh",
            ],
        );
        // voices (which loads the runtime to read its version) says so too.
        let dir = tempfile::tempdir().unwrap();
        let out = tingshu(
            dir.path(),
            &["voices", "--voices", &voices],
            Some(data.path()),
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("libonnxruntime.so.1.32.0: "),
            "{}",
            stderr(&out)
        );
    }
    // The right size, one byte changed.
    let data = spoiled(&files, runtime, |b| {
        let middle = b.len() / 2;
        b[middle] ^= 0x10;
    });
    assert_bad_install(
        data.path(),
        &voices,
        &["libonnxruntime.so.1.32.0: sha256", "expected 6c1585d1"],
    );
}

#[test]
fn bit_rot_in_the_model_is_an_install_error_and_nothing_is_cached() {
    let Some(files) = installed() else { return };
    let voices = default_voices();
    let model = "kokoro/kokoro-v1.0.int8.onnx";
    // 16 bytes changed in the middle, size and modification time kept.
    let data = spoiled(&files, model, |b| {
        let middle = b.len() / 2;
        for x in &mut b[middle..middle + 16] {
            *x ^= 0x5a;
        }
    });
    assert_bad_install(
        data.path(),
        &voices,
        &[
            "kokoro-v1.0.int8.onnx: sha256",
            "reinstall it with scripts/install-kokoro.sh",
        ],
    );
    // A preview writes nothing and caches no clip either.
    let dir = tempfile::tempdir().unwrap();
    let out = tingshu(
        dir.path(),
        &[
            "preview",
            "灯塔的光。",
            "--voices",
            &voices,
            "-o",
            "p/x.wav",
        ],
        Some(data.path()),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!dir.path().join("p").exists(), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    // A spoiled header: the same install error, not a failed chapter.
    let data = spoiled(&files, model, |b| b[..64].fill(0xff));
    assert_bad_install(data.path(), &voices, &["kokoro-v1.0.int8.onnx: sha256"]);
}

/// The average magnitude spectrum of `samples` in 32 bands up to 8 kHz
/// (24 kHz audio, 512-sample frames).
fn band_spectrum(samples: &[i16]) -> Vec<f64> {
    let frame = 512;
    let mut bands = vec![0f64; 32];
    for chunk in samples.chunks_exact(frame).step_by(2) {
        // A plain DFT of the bins the bands cover (0..171 of 256: up to 8 kHz).
        for (b, band) in bands.iter_mut().enumerate() {
            for bin in (b * 171 / 32)..((b + 1) * 171 / 32) {
                let (mut re, mut im) = (0f64, 0f64);
                for (t, &s) in chunk.iter().enumerate() {
                    let phase = -2.0 * std::f64::consts::PI * (bin * t) as f64 / frame as f64;
                    re += f64::from(s) * phase.cos();
                    im += f64::from(s) * phase.sin();
                }
                *band += (re * re + im * im).sqrt();
            }
        }
    }
    bands.iter().map(|v| (v + 1.0).ln()).collect()
}

fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (ma, mb) = (mean(a), mean(b));
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let var = |v: &[f64], m: f64| v.iter().map(|x| (x - m) * (x - m)).sum::<f64>();
    cov / (var(a, ma) * var(b, mb)).sqrt()
}

#[test]
fn the_float_graph_for_the_gpu_folds_every_quantized_node_and_speaks_alike() {
    let Some(files) = installed() else { return };
    let model = std::fs::read(&files.model).unwrap();
    let (float, n) = tingshu::synth::kokoro::dequantize::dequantize(&model).unwrap();
    // 148 products, 87 convolutions and 6 LSTMs: none is left quantized.
    assert_eq!(n, 241);
    let has = |bytes: &[u8], op: &str| bytes.windows(op.len()).any(|w| w == op.as_bytes());
    for op in [
        "MatMulInteger",
        "ConvInteger",
        "DynamicQuantizeLinear",
        "DynamicQuantizeLSTM",
    ] {
        assert!(has(&model, op), "{op} not in the model");
        assert!(!has(&float, op), "{op} left in the float graph");
    }
    assert_eq!(
        tingshu::synth::kokoro::dequantize::dequantize(&model)
            .unwrap()
            .0,
        float
    );
    // Half a gigabyte: not held while the previews run.
    drop((model, float));

    // Run on the CPU, it says the same at the same pace in the same voice.
    let data = staged(&files);
    let text = "夜里起了风，老人把灯塔的门关紧，又往炉子里添了两块木柴。";
    // One cache for both: the float graph's clips have keys of their own.
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_string_lossy().into_owned();
    let render = |float: bool| {
        let dir = tempfile::tempdir().unwrap();
        let voices = default_voices();
        let args = [
            "preview", text, "--voices", &voices, "-o", "p.wav", "--cache", &cache_dir,
        ];
        let out = command(dir.path(), &args, Some(data.path()))
            .env("TINGSHU_KOKORO_FLOAT", if float { "1" } else { "0" })
            .output();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        wav(&dir.path().join("p.wav"))
    };
    let (rate, quantized_s, quantized) = render(false);
    let (float_rate, float_s, floats) = render(true);
    assert_eq!(rate, float_rate);
    assert!(
        (float_s / quantized_s - 1.0).abs() < 0.03,
        "{float_s:.2} s against {quantized_s:.2} s"
    );
    assert_ne!(
        quantized, floats,
        "the float render came from the int8 clips"
    );
    let r = correlation(&band_spectrum(&quantized), &band_spectrum(&floats));
    assert!(r > 0.95, "spectra correlate {r:.3}");
}
