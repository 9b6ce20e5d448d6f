//! End-to-end tests of `tingshu build` with the real espeak-ng engine.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::support::cli::Tingshu;
use crate::support::services::shared;

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/灯塔守夜人.txt");

fn build(book: &Path, out: &Path, extra: &[&str]) -> Output {
    Tingshu::new(["build"])
        .arg(book)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
}

fn manifest(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("manifest.json")).expect("manifest.json");
    serde_json::from_str(&text).expect("valid JSON")
}

fn han_count(text: &str) -> usize {
    text.chars()
        .filter(|c| ('\u{4e00}'..='\u{9fff}').contains(c))
        .count()
}

/// Reads a WAV back and returns (sample rate, duration in seconds).
fn wav_info(path: &Path) -> (u32, f64) {
    let reader = hound::WavReader::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let spec = reader.spec();
    assert_eq!(
        (spec.channels, spec.bits_per_sample),
        (1, 16),
        "{}",
        path.display()
    );
    let n = reader.duration();
    (spec.sample_rate, f64::from(n) / f64::from(spec.sample_rate))
}

/// Checks every chapter of a rendered book: the file decodes, its duration
/// matches the manifest, segments are ordered and inside the audio, and the
/// pace lies in 0.15–0.35 s per Han character.
fn check_book(dir: &Path) -> Value {
    let m = manifest(dir);
    let rate = m["sample_rate"].as_u64().unwrap() as u32;
    let chapters = m["chapters"].as_array().unwrap();
    assert!(!chapters.is_empty());
    for (i, ch) in chapters.iter().enumerate() {
        assert_eq!(ch["index"].as_u64().unwrap() as usize, i + 1);
        let file = ch["file"].as_str().unwrap();
        assert!(!file.contains('/') && !file.starts_with('.'), "{file}");
        let (sr, secs) = wav_info(&dir.join(file));
        assert_eq!(sr, rate);
        assert!((secs - ch["duration_s"].as_f64().unwrap()).abs() < 0.01);
        let segments = ch["segments"].as_array().unwrap();
        let mut last_end = 0.0;
        let mut han = 0;
        for s in segments {
            let (start, end) = (s["start_s"].as_f64().unwrap(), s["end_s"].as_f64().unwrap());
            assert!(start >= last_end && end > start && end <= secs, "{s}");
            last_end = end;
            han += han_count(s["text"].as_str().unwrap());
        }
        let pace = secs / han as f64;
        assert!(
            (0.15..=0.35).contains(&pace),
            "{file}: {pace:.3} s per Han character"
        );
    }
    m
}

fn dialogue_count(m: &Value) -> usize {
    m["chapters"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["segments"].as_array().unwrap())
        .filter(|s| s["kind"] == "dialogue")
        .count()
}

fn segments(m: &Value) -> Vec<(String, String, String)> {
    m["chapters"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["segments"].as_array().unwrap())
        .map(|s| {
            (
                s["kind"].as_str().unwrap().to_owned(),
                s["text"].as_str().unwrap().to_owned(),
                s["voice"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn demo_book_renders_every_chapter() {
    let out = tempfile::tempdir().unwrap();
    let o = build(Path::new(DEMO), out.path(), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = out.path().join("灯塔守夜人");
    let m = check_book(&dir);
    let titles: Vec<_> = m["chapters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["title"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(titles, ["第一章 雾港", "第二章 「夜班」", "第三章 归航"]);
    assert!(dir.join("0002-第二章_「夜班」.wav").is_file());
    // Both quote styles are dialogue, and dialogue has its own voice.
    let segs = segments(&m);
    assert!(
        segs.iter()
            .any(|(k, t, v)| k == "dialogue" && t.starts_with('“') && v == "dialogue")
    );
    assert!(
        segs.iter()
            .any(|(k, t, _)| k == "dialogue" && t.starts_with('「'))
    );
    assert!(
        segs.iter()
            .any(|(k, t, v)| k == "narration" && t.contains("“灯塔会唱歌”") && v == "narrator")
    );
    // No temporary files are left.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.ends_with(".part"), "{name}");
    }
}

#[test]
fn narration_and_dialogue_voices_sound_different() {
    // The default dialogue voice is pitched higher: compare the pitch of the
    // same sentence rendered in both voices.
    let out = tempfile::tempdir().unwrap();
    let book = out.path().join("voices.txt");
    std::fs::write(
        &book,
        "他们一起走到海边看日出。\n“他们一起走到海边看日出。”\n",
    )
    .unwrap();
    let o = build(&book, out.path(), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = out.path().join("voices");
    let m = manifest(&dir);
    let ch = &m["chapters"][0];
    let mut reader = hound::WavReader::open(dir.join(ch["file"].as_str().unwrap())).unwrap();
    let rate = f64::from(reader.spec().sample_rate);
    let samples: Vec<i16> = reader.samples::<i16>().map(Result::unwrap).collect();
    let pitch = |seg: &Value| {
        let a = (seg["start_s"].as_f64().unwrap() * rate) as usize;
        let b = (seg["end_s"].as_f64().unwrap() * rate) as usize;
        median_f0(&samples[a..b], rate)
    };
    let narration = pitch(&ch["segments"][0]);
    let dialogue = pitch(&ch["segments"][1]);
    assert!(
        dialogue > narration * 1.15,
        "F0 narration {narration:.1} Hz, dialogue {dialogue:.1} Hz"
    );
}

/// Median fundamental frequency of the voiced 40 ms frames (autocorrelation).
fn median_f0(samples: &[i16], rate: f64) -> f64 {
    let frame = (0.04 * rate) as usize;
    let (min_lag, max_lag) = ((rate / 400.0) as usize, (rate / 60.0) as usize);
    let mut f0s: Vec<f64> = samples
        .chunks_exact(frame)
        .filter(|f| f.iter().any(|s| s.unsigned_abs() > 2000))
        .filter_map(|f| {
            (min_lag..max_lag)
                .map(|lag| {
                    let r: f64 = (0..frame - lag)
                        .map(|j| f64::from(f[j]) * f64::from(f[j + lag]))
                        .sum();
                    (r, lag)
                })
                .max_by(|x, y| x.0.total_cmp(&y.0))
                .map(|(_, lag)| rate / lag as f64)
        })
        .collect();
    assert!(!f0s.is_empty(), "no voiced frames");
    f0s.sort_by(f64::total_cmp);
    f0s[f0s.len() / 2]
}

#[test]
fn shared_samples_render_with_expected_dialogue() {
    for (file, dialogues) in [
        ("000_7b313e97eba21c0f.txt", 12),
        ("004_a3a7bf909582209b.txt", 0),
    ] {
        let Some(book) = shared(&format!("samples/{file}")) else {
            return;
        };
        let out = tempfile::tempdir().unwrap();
        let o = build(&book, out.path(), &[]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let m = check_book(&out.path().join(file.trim_end_matches(".txt")));
        assert_eq!(dialogue_count(&m), dialogues, "{file}");
    }
}

/// Writes `text` in `encoding` ("utf-16le"/"utf-16be" with BOM, "utf-8-bom",
/// or an encoding_rs label).
fn encode(text: &str, encoding: &str) -> Vec<u8> {
    match encoding {
        "utf-8-bom" => [&[0xEF, 0xBB, 0xBF][..], text.as_bytes()].concat(),
        "utf-16le" => [0xFF, 0xFE]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
            .collect(),
        "utf-16be" => [0xFE, 0xFF]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
            .collect(),
        label => {
            let enc = encoding_rs::Encoding::for_label(label.as_bytes()).unwrap();
            let (bytes, _, unmappable) = enc.encode(text);
            assert!(!unmappable, "{label} cannot encode the text");
            bytes.into_owned()
        }
    }
}

fn same_segments_in_every_encoding(text: &str, encodings: &[&str]) {
    let out = tempfile::tempdir().unwrap();
    let reference = out.path().join("utf8").join("book.txt");
    std::fs::create_dir_all(reference.parent().unwrap()).unwrap();
    std::fs::write(&reference, text.replace('\n', "\r\n")).unwrap();
    let o = build(&reference, &out.path().join("utf8"), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let expected = segments(&manifest(&out.path().join("utf8/book")));
    assert!(!expected.is_empty());
    for enc in encodings {
        let dir = out.path().join(enc);
        std::fs::create_dir_all(&dir).unwrap();
        let book = dir.join("book.txt");
        std::fs::write(&book, encode(text, enc)).unwrap();
        let o = build(&book, &dir, &[]);
        assert!(
            o.status.success(),
            "{enc}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(segments(&manifest(&dir.join("book"))), expected, "{enc}");
    }
}

#[test]
fn encodings_give_identical_segments_simplified() {
    let text = match shared("samples/004_a3a7bf909582209b.txt") {
        Some(p) => std::fs::read_to_string(p).unwrap(),
        None => std::fs::read_to_string(DEMO).unwrap(),
    };
    same_segments_in_every_encoding(
        &text,
        &["gbk", "gb18030", "utf-16le", "utf-16be", "utf-8-bom"],
    );
}

#[test]
fn encodings_give_identical_segments_traditional() {
    let text = match shared("samples/000_7b313e97eba21c0f.txt") {
        Some(p) => std::fs::read_to_string(p).unwrap(),
        None => "第一章 出發\n毛仲說：「我們明天出發。」\n眾人點頭，各自回營。\n".to_owned(),
    };
    same_segments_in_every_encoding(&text, &["big5", "gb18030", "utf-16le"]);
}

#[test]
fn chapter_selection_renders_only_those_chapters() {
    let out = tempfile::tempdir().unwrap();
    let o = build(Path::new(DEMO), out.path(), &["--chapters", "2-3"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = out.path().join("灯塔守夜人");
    let m = manifest(&dir);
    let indexes: Vec<_> = m["chapters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indexes, [2, 3]);
    assert!(!dir.join("0001-第一章_雾港.wav").exists());
    // A later run of chapter 1 keeps 2 and 3 in the manifest.
    let o = build(Path::new(DEMO), out.path(), &["--chapters", "1"]);
    assert!(o.status.success());
    assert_eq!(manifest(&dir)["chapters"].as_array().unwrap().len(), 3);
    let o = build(Path::new(DEMO), out.path(), &["--chapters", "9-12"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--chapters 9-12"));
}

#[test]
fn hostile_titles_stay_inside_the_book_directory() {
    let out = tempfile::tempdir().unwrap();
    let book = out.path().join("evil.txt");
    std::fs::write(
        &book,
        "第1章 ../../../escape\n他走了。\n第2章 .hidden\n她来了。\n第3章 a/b\\c\n风停了。\n",
    )
    .unwrap();
    let o = build(&book, &out.path().join("out"), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = out.path().join("out/evil");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".wav") || n == "manifest.json")
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "0001-第1章_.._.._.._escape.wav",
            "0002-第2章_.hidden.wav",
            "0003-第3章_a_b_c.wav",
            "manifest.json"
        ]
    );
    let top: Vec<_> = std::fs::read_dir(out.path()).unwrap().collect();
    assert_eq!(top.len(), 2, "nothing escaped the output directory");
}

#[test]
fn bad_input_exits_2_with_one_line_and_no_output() {
    let tmp = tempfile::tempdir().unwrap();
    let png = tmp.path().join("cover.png");
    std::fs::write(&png, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10").unwrap();
    let empty = tmp.path().join("empty.txt");
    std::fs::write(&empty, b"").unwrap();
    let latin = tmp.path().join("latin.txt");
    std::fs::write(&latin, "Chapter 1\nIt was a dark night.\n").unwrap();
    let missing = tmp.path().join("missing.txt");
    let cases: [(&Path, &str); 5] = [
        (&missing, "no such file"),
        (tmp.path(), "is a directory"),
        (&empty, "empty"),
        (&png, "binary"),
        (&latin, "no Chinese"),
    ];
    for (book, problem) in cases {
        let out = tmp.path().join("out");
        let o = build(book, &out, &[]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}: {stderr}", book.display());
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(&*book.display().to_string()), "{stderr}");
        assert!(stderr.contains(problem), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(
            !out.exists(),
            "{}: output directory was created",
            book.display()
        );
    }
}

#[test]
fn bad_cache_location_is_refused_before_any_output() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    for cache in ["s3://", "ftp://host/dir"] {
        let o = build(Path::new(DEMO), &out, &["--cache", cache]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(cache), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(!out.exists(), "{cache}: output created");
    }
}

#[test]
fn bad_voices_file_names_file_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    let voices = tmp.path().join("v.toml");
    std::fs::write(
        &voices,
        "[backends.local]\ntype = \"espeak\"\n[voices.n]\nbackend = \"local\"\nvoice = \"cmn-latn-pinyin\"\n[casting]\nnarrator = \"nobody\"\n",
    )
    .unwrap();
    let out = tmp.path().join("out");
    let o = build(
        Path::new(DEMO),
        &out,
        &["--voices", voices.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("v.toml") && stderr.contains("casting.narrator"),
        "{stderr}"
    );
    assert!(!out.exists());
}

#[test]
fn lexicon_changes_what_is_said_and_bad_lexicon_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("lex.txt");
    std::fs::write(&book, "第一章 城外\n靼子们退到了河边。\n").unwrap();
    let plain = build(&book, &tmp.path().join("plain"), &[]);
    assert!(
        plain.status.success(),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    let lexicon = tmp.path().join("lexicon.toml");
    std::fs::write(
        &lexicon,
        "\"靼子\" = { say = \"从北方草原远道而来的骑兵\" }\n",
    )
    .unwrap();
    let said = build(
        &book,
        &tmp.path().join("said"),
        &["--lexicon", lexicon.to_str().unwrap()],
    );
    assert!(
        said.status.success(),
        "{}",
        String::from_utf8_lossy(&said.stderr)
    );
    let duration = |dir: &str| {
        manifest(&tmp.path().join(dir).join("lex"))["chapters"][0]["duration_s"]
            .as_f64()
            .unwrap()
    };
    assert!(
        duration("said") > duration("plain") + 1.0,
        "{} vs {}",
        duration("said"),
        duration("plain")
    );
    // The manifest keeps the original text.
    let m = manifest(&tmp.path().join("said/lex"));
    assert_eq!(
        m["chapters"][0]["segments"][0]["text"],
        "靼子们退到了河边。"
    );

    std::fs::write(&lexicon, "\"靼子\" = 42\n").unwrap();
    let bad = build(
        &book,
        &tmp.path().join("bad"),
        &["--lexicon", lexicon.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("lexicon.toml") && stderr.contains("靼子"),
        "{stderr}"
    );
    assert!(!tmp.path().join("bad").exists());
}

#[test]
fn overrides_change_a_line_and_bad_or_stale_ones_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("渡口.txt");
    std::fs::write(
        &book,
        "第一章 渡口\n船夫把缆绳系好。\n“上船吧。”他说。\n雨下大了。\n",
    )
    .unwrap();
    let overrides = tmp.path().join("渡口.overrides.toml");
    let run = |out: &str| {
        let o = build(
            &book,
            &tmp.path().join(out),
            &["--overrides", overrides.to_str().unwrap()],
        );
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    // The third paragraph left out, the first said otherwise.
    std::fs::write(
        &overrides,
        "[[line]]\nchapter = 1\nparagraph = 3\nwas = \"雨下大了。\"\ntext = \"\"\n\n\
         [[line]]\nchapter = 1\nparagraph = 1\nwas = \"船夫把缆绳系好。\"\ntext = \"船夫慢慢地把缆绳系好。\"\n",
    )
    .unwrap();
    let (code, stderr) = run("fixed");
    assert_eq!(code, Some(0), "{stderr}");
    let texts: Vec<String> = segments(&manifest(&tmp.path().join("fixed/渡口")))
        .into_iter()
        .map(|(_, text, _)| text)
        .collect();
    assert_eq!(texts, ["船夫慢慢地把缆绳系好。", "“上船吧。”", "他说。"]);

    // The book changed under an override: a warning naming it, the rest read.
    std::fs::write(
        &overrides,
        "[[line]]\nchapter = 1\nparagraph = 1\nwas = \"船夫把船系好。\"\ntext = \"好。\"\n",
    )
    .unwrap();
    let (code, stderr) = run("stale");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("渡口.overrides.toml: line[0]: chapter 1 has no paragraph 1 with the text"),
        "{stderr}"
    );

    // Bad entries: exit 2, one line naming the file and key, nothing written.
    for (text, says) in [
        (
            "[[line]]\nchapter = 1\nparagraph = 2\nwas = \"“上船吧。”他说。\"\nspeaker = \"艄公\"\n",
            "line[0].speaker: \"艄公\" is not in the cast",
        ),
        (
            "[[line]]\nchapter = 1\nparagraph = 2\nwas = \"x\"\n",
            "line[0].text: give text or speaker",
        ),
        ("[line]\nchapter = 1\n", "渡口.overrides.toml: line 1"),
    ] {
        std::fs::write(&overrides, text).unwrap();
        let (code, stderr) = run("bad");
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains(says), "{says}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(!tmp.path().join("bad").exists());
    }
}

#[test]
fn adverts_and_urls_are_not_read_but_listed_as_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("ads.txt");
    std::fs::write(
        &book,
        "第一章 海雾\n他推开窗。\nhttps://www.example.com/book/12\n海上起了雾。\n（本章完）\n\
         第二章 灯火\n求月票！\n她点亮了灯。\n\
         第三章 归航\n船慢慢靠了岸。\n",
    )
    .unwrap();
    let o = build(&book, &tmp.path().join("out"), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = manifest(&tmp.path().join("out/ads"));
    let chapters = m["chapters"].as_array().unwrap();
    assert_eq!(chapters.len(), 3);

    let spoken: Vec<String> = segments(&m).into_iter().map(|(_, text, _)| text).collect();
    assert_eq!(
        spoken,
        [
            "他推开窗。",
            "海上起了雾。",
            "她点亮了灯。",
            "船慢慢靠了岸。"
        ]
    );

    let skipped = |chapter: &Value| -> Vec<(u64, String)> {
        chapter["skipped"]
            .as_array()
            .unwrap_or_else(|| panic!("no skipped list in {chapter}"))
            .iter()
            .map(|s| {
                (
                    s["paragraph"].as_u64().unwrap(),
                    s["text"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    assert_eq!(
        skipped(&chapters[0]),
        [
            (2, "https://www.example.com/book/12".to_owned()),
            (4, "（本章完）".to_owned())
        ]
    );
    assert_eq!(skipped(&chapters[1]), [(1, "求月票！".to_owned())]);
    // A chapter with nothing skipped has no list at all.
    assert!(chapters[2].get("skipped").is_none(), "{}", chapters[2]);
}

#[test]
fn men_of_a_cast_share_out_the_male_voices_each_keeping_his() {
    let dir = tempfile::tempdir().unwrap();
    let voices = "[backends.local]\ntype = \"espeak\"\n\
        [voices.narrator]\nbackend = \"local\"\nvoice = \"cmn-latn-pinyin\"\n\
        [voices.low]\nbackend = \"local\"\nvoice = \"cmn-latn-pinyin\"\npitch = 20\n\
        [voices.high]\nbackend = \"local\"\nvoice = \"cmn-latn-pinyin+m3\"\npitch = 70\n\
        [casting]\nnarrator = \"narrator\"\nmale = \"low\"\nmale_more = [\"high\"]\n";
    std::fs::write(dir.path().join("v.toml"), voices).unwrap();
    let men = ["江一帆", "石守田", "韩立平", "罗长河", "秦远山", "许怀安"];
    let mut cast = String::new();
    let mut book = String::from("第一章 夜渡\n");
    for name in men {
        cast.push_str(&format!(
            "[[character]]\nname = \"{name}\"\ngender = \"male\"\n\n"
        ));
    }
    for round in ["船到了。", "风大了。"] {
        for name in men {
            book.push_str(&format!("{name}说：“{round}”\n"));
        }
    }
    std::fs::write(dir.path().join("cast.toml"), cast).unwrap();
    std::fs::write(dir.path().join("夜渡.txt"), book).unwrap();
    let out = dir.path().join("out");
    let o = build(
        &dir.path().join("夜渡.txt"),
        &out,
        &[
            "--voices",
            dir.path().join("v.toml").to_str().unwrap(),
            "--cast",
            dir.path().join("cast.toml").to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = manifest(&out.join("夜渡"));
    let spoken: Vec<(String, String)> = m["chapters"][0]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "dialogue")
        .map(|s| {
            (
                s["speaker"].as_str().unwrap().to_owned(),
                s["voice"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(spoken.len(), 12, "{spoken:?}");
    // The voice follows the name by a fixed hash (FNV-1a of its UTF-8).
    let fnv = |s: &str| {
        s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
        })
    };
    for (who, voice) in &spoken {
        let expected = if fnv(who) % 2 == 0 { "low" } else { "high" };
        assert_eq!(voice, expected, "{who}");
    }
    let used: std::collections::BTreeSet<&str> = spoken.iter().map(|(_, v)| v.as_str()).collect();
    assert_eq!(used.len(), 2, "{spoken:?}");
}
