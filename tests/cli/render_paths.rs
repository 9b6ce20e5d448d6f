//! One render path: the same books through `build`, `batch run`,
//! `preview --book … --chapter` and a queue worker (Redis) give identical
//! chapter WAVs and the same set of files beside them.
//!
//! Two books: a TXT with dialogue and a cast file (speakers cast to their
//! own voices), and an EPUB whose ruby gives a character a reading the
//! front end would not choose (so a path that dropped the book's lexicon
//! would speak it differently). Formats WAV + MP3 + M4B, espeak-ng voices.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::support::cli::{Tingshu, ok};
use crate::support::paths::{path_str, repo};
use crate::support::redis::Redis;

fn voices() -> PathBuf {
    repo().join("voices/espeak.toml")
}

/// `tingshu ARGS` with the espeak voices; it must succeed.
fn tingshu(args: &[&str]) {
    ok(&Tingshu::new(args).env("TINGSHU_VOICES", voices()).output());
}

const NOVEL: &str = "第一章 雾港\n\n\
    雾从海上涌进港口，灯塔的光一圈圈扫过水面。\n\n\
    “今晚的船还会来吗？”阿澜问。\n\n\
    老周把烟斗在栏杆上磕了磕，说：“会来的，它从不失约。”\n\n\
    第二章 归船\n\n\
    午夜时分，汽笛声穿过浓雾。\n\n\
    “你听，”阿澜说，“是它。”\n\n\
    老周点点头，提着马灯走下石阶。\n";

const CAST: &str = "[[character]]\nname = \"阿澜\"\ngender = \"female\"\n\n\
    [[character]]\nname = \"老周\"\ngender = \"male\"\n";

/// An EPUB 3 of two chapters; 好人 is annotated hào rén at each occurrence,
/// where the front end alone reads hǎo rén.
fn write_epub(path: &Path) {
    let chapter = |title: &str, body: &str| {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<html xmlns=\"http://www.w3.org/1999/xhtml\">\
             <head><title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>"
        )
    };
    let files: Vec<(&str, String)> = vec![
        ("mimetype", "application/epub+zip".into()),
        (
            "META-INF/container.xml",
            "<?xml version=\"1.0\"?><container version=\"1.0\" xmlns=\"urn:oasis:names:tc:opendocument:xmlns:container\">\
             <rootfiles><rootfile full-path=\"OEBPS/content.opf\" media-type=\"application/oebps-package+xml\"/></rootfiles></container>"
                .into(),
        ),
        (
            "OEBPS/content.opf",
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
             <package xmlns=\"http://www.idpf.org/2007/opf\" version=\"3.0\" unique-identifier=\"id\">\
             <metadata xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><dc:identifier id=\"id\">urn:uuid:5b1c0e2a-0000-4000-8000-00000000beef</dc:identifier>\
             <dc:title>山居</dc:title><dc:creator>林照</dc:creator><dc:language>zh-CN</dc:language></metadata>\
             <manifest><item id=\"nav\" href=\"nav.xhtml\" media-type=\"application/xhtml+xml\" properties=\"nav\"/>\
             <item id=\"c1\" href=\"c1.xhtml\" media-type=\"application/xhtml+xml\"/>\
             <item id=\"c2\" href=\"c2.xhtml\" media-type=\"application/xhtml+xml\"/></manifest>\
             <spine><itemref idref=\"c1\"/><itemref idref=\"c2\"/></spine></package>"
                .into(),
        ),
        (
            "OEBPS/nav.xhtml",
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><html xmlns=\"http://www.w3.org/1999/xhtml\" xmlns:epub=\"http://www.idpf.org/2007/ops\">\
             <head><title>目录</title></head><body><nav epub:type=\"toc\"><ol>\
             <li><a href=\"c1.xhtml\">第一章 山雨</a></li><li><a href=\"c2.xhtml\">第二章 晴川</a></li></ol></nav></body></html>"
                .into(),
        ),
        (
            "OEBPS/c1.xhtml",
            chapter(
                "第一章 山雨",
                "<p>他是个<ruby>好人<rt>hào rén</rt></ruby>，山里的人都爱到他家坐。</p><p>雨停了，溪水涨得很快。</p>",
            ),
        ),
        (
            "OEBPS/c2.xhtml",
            chapter(
                "第二章 晴川",
                "<p>天晴以后，那位<ruby>好人<rt>hào rén</rt></ruby>摆出了新茶。</p>",
            ),
        ),
    ];
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, text) in files {
        let method = if name == "mimetype" {
            zip::CompressionMethod::Stored
        } else {
            zip::CompressionMethod::Deflated
        };
        zip.start_file(
            name,
            zip::write::SimpleFileOptions::default().compression_method(method),
        )
        .unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
}

/// The files of a book folder (not hidden ones).
fn visible_files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect()
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Renders `book` (with `cast`) through the four paths and compares.
fn same_bytes_on_every_path(book: &Path, cast: Option<&Path>, redis: &Redis) {
    let root = book.parent().unwrap();
    let stem = book.file_stem().unwrap().to_str().unwrap();
    let voices = voices();
    let formats = "wav,mp3,m4b";
    let mut cast_args: Vec<&str> = Vec::new();
    if let Some(cast) = cast {
        cast_args = vec!["--cast", path_str(cast)];
    }

    // build
    let built = root.join(format!("{stem}-build"));
    let mut args = vec![
        "build",
        path_str(book),
        "--out",
        path_str(&built),
        "--format",
        formats,
    ];
    args.extend(&cast_args);
    tingshu(&args);
    let built = built.join(stem);

    // batch run
    let jobs = root.join(format!("{stem}-jobs.toml"));
    let batched = root.join(format!("{stem}-batch"));
    let mut job = format!(
        "[[job]]\nname = \"{stem}\"\nsource = '{}'\nvoices = '{}'\nout = '{}'\nformats = [\"wav\", \"mp3\", \"m4b\"]\n",
        book.display(),
        voices.display(),
        batched.display()
    );
    if let Some(cast) = cast {
        job.push_str(&format!("cast = '{}'\n", cast.display()));
    }
    std::fs::write(&jobs, job).unwrap();
    tingshu(&["batch", "run", path_str(&jobs)]);
    let batched = batched.join(stem);

    // a queue worker
    let queued = root.join(format!("{stem}-queue"));
    let mut args = vec![
        "enqueue",
        path_str(book),
        "--out",
        path_str(&queued),
        "--format",
        formats,
        "--queue",
        &redis.url,
    ];
    args.extend(&cast_args);
    tingshu(&args);
    let cache = root.join(format!("{stem}-worker-cache"));
    tingshu(&[
        "worker",
        "--queue",
        &redis.url,
        "--until-idle",
        "--cache",
        path_str(&cache),
    ]);
    let queued = queued.join(stem);

    let files = visible_files(&built);
    for name in [
        "manifest.json",
        "report.txt",
        &format!("{stem}.m3u"),
        &format!("{stem}.m4b"),
    ] {
        assert!(files.contains(name), "build wrote no {name}: {files:?}");
    }
    let wavs: Vec<&String> = files.iter().filter(|n| n.ends_with(".wav")).collect();
    assert_eq!(wavs.len(), 2, "{files:?}");
    for ext in [".srt", ".lrc", ".mp3"] {
        assert_eq!(
            files.iter().filter(|n| n.ends_with(ext)).count(),
            2,
            "{ext}: {files:?}"
        );
    }
    assert_eq!(
        visible_files(&batched),
        files,
        "batch run wrote other files than build"
    );
    assert_eq!(
        visible_files(&queued),
        files,
        "the worker wrote other files than build"
    );
    for wav in &wavs {
        let bytes = read(&built.join(wav));
        assert!(
            read(&batched.join(wav)) == bytes,
            "{wav}: batch run differs from build"
        );
        assert!(
            read(&queued.join(wav)) == bytes,
            "{wav}: the worker differs from build"
        );
    }
    // Subtitles and the manifest's chapters are the same everywhere too.
    for name in files
        .iter()
        .filter(|n| n.ends_with(".srt") || n.ends_with(".lrc"))
    {
        assert!(
            read(&batched.join(name)) == read(&built.join(name)),
            "{name}: batch differs"
        );
        assert!(
            read(&queued.join(name)) == read(&built.join(name)),
            "{name}: worker differs"
        );
    }

    // preview of each whole chapter: the bytes `build` wrote for it.
    for (n, wav) in wavs.iter().enumerate() {
        let out = root.join(format!("{stem}-preview-{n}.wav"));
        let chapter = (n + 1).to_string();
        let mut args = vec![
            "preview",
            "--book",
            path_str(book),
            "--chapter",
            &chapter,
            "-o",
            path_str(&out),
        ];
        args.extend(&cast_args);
        tingshu(&args);
        assert!(
            read(&out) == read(&built.join(wav)),
            "preview of chapter {chapter} differs from build's {wav}"
        );
    }
}

#[test]
fn build_batch_preview_and_a_worker_write_the_same_books() {
    if !crate::support::ffmpeg::tools() {
        return;
    }
    let Some(redis) = Redis::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let txt = dir.path().join("雾港.txt");
    std::fs::write(&txt, NOVEL).unwrap();
    let cast = dir.path().join("雾港.cast.toml");
    std::fs::write(&cast, CAST).unwrap();
    same_bytes_on_every_path(&txt, Some(&cast), &redis);

    // The cast took effect: the two speakers have voices of their own.
    let manifest: serde_json::Value =
        serde_json::from_slice(&read(&dir.path().join("雾港-build/雾港/manifest.json"))).unwrap();
    let voices: BTreeSet<&str> = manifest["chapters"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["segments"].as_array().unwrap())
        .map(|s| s["voice"].as_str().unwrap())
        .collect();
    assert!(
        voices.len() >= 3,
        "narrator and two cast voices: {voices:?}"
    );

    let epub = dir.path().join("山居.epub");
    write_epub(&epub);
    same_bytes_on_every_path(&epub, None, &redis);
    // The ruby reading is what was said: without the book's lexicon the
    // chapter reads differently (so every path above used it).
    let plain = dir.path().join("plain.wav");
    let text = "第一章 山雨\n\n他是个好人，山里的人都爱到他家坐。\n\n雨停了，溪水涨得很快。\n";
    let txt = dir.path().join("山居.txt");
    std::fs::write(&txt, text).unwrap();
    tingshu(&[
        "preview",
        "--book",
        path_str(&txt),
        "--chapter",
        "1",
        "-o",
        path_str(&plain),
    ]);
    let wavs: Vec<String> = visible_files(&dir.path().join("山居-build/山居"))
        .into_iter()
        .filter(|n| n.ends_with(".wav"))
        .collect();
    assert!(
        read(&plain) != read(&dir.path().join("山居-build/山居").join(&wavs[0])),
        "the ruby reading made no difference to the audio"
    );
}
