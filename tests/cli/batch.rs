//! `tingshu batch`: incremental runs, the lock, SIGTERM and the daemon,
//! driving the real binary with the embedded espeak-ng voice, or with the
//! `http` backend against a local server that records every text it speaks.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::support::cli::Tingshu;
use crate::support::ffmpeg::{self, ffprobe, m4b_chapters, tags};
use crate::support::tts_server::TtsServer;
use crate::support::{locks, wav};

/// Chapter `n` of the test novel (original text), `paragraphs` long.
fn chapter(n: usize, paragraphs: usize) -> String {
    let mut s = format!("第{n}章 潮声\n");
    for p in 1..=paragraphs {
        s.push_str(&format!(
            "　　第{n}夜的第{p}段，潮水退到礁石后面，守塔人把灯芯剪短，记下风向和浪高。“今晚有{p}条船进港。”他对自己说。\n"
        ));
    }
    s
}

fn novel(chapters: usize, paragraphs: usize) -> String {
    (1..=chapters).map(|n| chapter(n, paragraphs)).collect()
}

const CN_DIGITS: [&str; 10] = ["零", "一", "二", "三", "四", "五", "六", "七", "八", "九"];

/// `n` in Chinese digits, one by one (13 → 一三).
fn cn(n: usize) -> String {
    n.to_string()
        .chars()
        .map(|d| CN_DIGITS[d.to_digit(10).unwrap() as usize])
        .collect()
}

/// The narration of paragraph `p` of chapter `n` in [`unique_chapter`].
fn unique_narration(n: usize, p: usize) -> String {
    let id = format!("{}之{}", cn(n), cn(p));
    format!("第{id}夜，潮水退到第{id}块礁石后面，守塔人剪短了第{id}根灯芯。")
}

/// Chapter `n` of a test novel (original text) in which every clause
/// differs and no digit appears, so that the text a server is asked to speak
/// is the text written here.
fn unique_chapter(n: usize, paragraphs: usize) -> String {
    let mut s = format!("第{}章 守夜\n", cn(n));
    for p in 1..=paragraphs {
        s.push_str(&format!(
            "　　{}“第{}之{}号船进港了。”\n",
            unique_narration(n, p),
            cn(n),
            cn(p)
        ));
    }
    s
}

fn unique_novel(chapters: usize, paragraphs: usize) -> String {
    (1..=chapters)
        .map(|n| unique_chapter(n, paragraphs))
        .collect()
}

struct Library {
    dir: tempfile::TempDir,
}

impl Library {
    /// A jobs file with one job `serial` reading `books/serial.txt` into `output/`.
    fn new(book: &str, extra: &str) -> Library {
        Library::with_formats(book, "[\"wav\"]", extra)
    }

    /// [`Library::new`] with `formats = FORMATS` (a TOML list).
    fn with_formats(book: &str, formats: &str, extra: &str) -> Library {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("books")).unwrap();
        std::fs::write(dir.path().join("books/serial.txt"), book).unwrap();
        std::fs::write(
            dir.path().join("jobs.toml"),
            format!(
                "[[job]]\nname = \"serial\"\nsource = \"books/serial.txt\"\nout = \"output\"\nformats = {formats}\n{extra}"
            ),
        )
        .unwrap();
        Library { dir }
    }

    /// A library whose voices all use `server` (`max_chars` characters per
    /// request, `max_in_flight` requests at a time).
    fn served(book: &str, server: &TtsServer, max_chars: usize, max_in_flight: usize) -> Library {
        let lib = Library::new(book, "voices = \"voices.toml\"\n");
        std::fs::write(
            lib.dir.path().join("voices.toml"),
            server.voices_toml(max_chars, max_in_flight),
        )
        .unwrap();
        lib
    }

    fn jobs(&self) -> PathBuf {
        self.dir.path().join("jobs.toml")
    }

    fn book_dir(&self) -> PathBuf {
        self.dir.path().join("output/serial")
    }

    fn source(&self) -> PathBuf {
        self.dir.path().join("books/serial.txt")
    }

    fn batch(&self, command: &str) -> Output {
        Tingshu::new(["batch", command]).arg(self.jobs()).output()
    }

    fn spawn(&self, command: &str) -> Child {
        Tingshu::new(["batch", command])
            .arg(self.jobs())
            .command()
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Runs `batch run`, expects success, returns stderr.
    fn run_ok(&self) -> String {
        let out = self.batch("run");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "batch run failed: {stderr}");
        stderr
    }

    /// Every file of the book (state directory included, except the record
    /// of the last run and the lock): name → (bytes, modification time).
    fn snapshot(&self) -> BTreeMap<String, (Vec<u8>, SystemTime)> {
        let mut files = BTreeMap::new();
        for dir in [self.book_dir(), self.book_dir().join(".tingshu-batch")] {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let entry = entry.unwrap();
                let name = entry.file_name().to_string_lossy().into_owned();
                if !entry.file_type().unwrap().is_file()
                    || name == "last-run.json"
                    || name == "lock"
                {
                    continue;
                }
                let meta = entry.metadata().unwrap();
                let key = entry
                    .path()
                    .strip_prefix(self.book_dir())
                    .unwrap()
                    .display()
                    .to_string();
                files.insert(
                    key,
                    (
                        std::fs::read(entry.path()).unwrap(),
                        meta.modified().unwrap(),
                    ),
                );
            }
        }
        files
    }

    fn wavs(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.book_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".wav"))
            .collect();
        names.sort();
        names
    }

    fn last_run(&self) -> serde_json::Value {
        let text =
            std::fs::read_to_string(self.book_dir().join(".tingshu-batch/last-run.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

/// Files whose bytes or modification time differ between two snapshots.
fn changed(
    before: &BTreeMap<String, (Vec<u8>, SystemTime)>,
    after: &BTreeMap<String, (Vec<u8>, SystemTime)>,
) -> Vec<String> {
    let mut names: Vec<String> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .cloned()
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn first_run_renders_all_and_second_run_touches_nothing() {
    let lib = Library::new(&novel(4, 2), "");
    let stderr = lib.run_ok();
    assert!(
        stderr.contains("job \"serial\": 4 of 4 chapters rendered"),
        "{stderr}"
    );
    assert_eq!(lib.wavs().len(), 4);
    assert_eq!(lib.last_run()["rendered"], 4);
    let before = lib.snapshot();
    assert!(before.contains_key("manifest.json"));
    assert!(before.contains_key(".tingshu-batch/state.json"));

    std::thread::sleep(Duration::from_millis(20));
    let stderr = lib.run_ok();
    assert!(
        stderr.contains("job \"serial\": 0 of 4 chapters rendered"),
        "{stderr}"
    );
    assert_eq!(changed(&before, &lib.snapshot()), Vec::<String>::new());
    assert_eq!(lib.last_run()["rendered"], 0);
    assert_eq!(lib.last_run()["outcome"], "ok");
}

#[test]
fn appending_a_chapter_renders_exactly_that_chapter() {
    let lib = Library::new(&novel(3, 2), "");
    lib.run_ok();
    let before = lib.snapshot();
    let mut text = std::fs::read_to_string(lib.source()).unwrap();
    text.push_str(&chapter(4, 2));
    std::fs::write(lib.source(), text).unwrap();

    let status = String::from_utf8_lossy(&lib.batch("status").stdout).into_owned();
    assert!(status.contains("pending:  1 of 4 chapters: 4"), "{status}");

    std::thread::sleep(Duration::from_millis(20));
    let stderr = lib.run_ok();
    assert!(stderr.contains("1 of 4 chapters rendered"), "{stderr}");
    assert_eq!(
        changed(&before, &lib.snapshot()),
        [
            ".tingshu-batch/state.json",
            "0004-第4章_潮声.lrc",
            "0004-第4章_潮声.srt",
            "0004-第4章_潮声.wav",
            "manifest.json",
            "report.txt",
            "serial.m3u"
        ]
    );
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(lib.book_dir().join("manifest.json")).unwrap(),
    )
    .unwrap();
    let indices: Vec<u64> = manifest["chapters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indices, [1, 2, 3, 4]);
    let status = String::from_utf8_lossy(&lib.batch("status").stdout).into_owned();
    assert!(
        status.contains("pending:  none (4 chapters up to date)"),
        "{status}"
    );
}

#[test]
fn editing_one_paragraph_rerenders_that_chapter_only() {
    let lib = Library::new(&novel(4, 3), "");
    lib.run_ok();
    let before = lib.snapshot();
    let text = std::fs::read_to_string(lib.source()).unwrap();
    let edited = text.replacen(
        "第2夜的第3段，潮水退到礁石后面",
        "第2夜的第3段，潮水涨过了防波堤",
        1,
    );
    assert_ne!(edited, text);
    std::fs::write(lib.source(), edited).unwrap();

    std::thread::sleep(Duration::from_millis(20));
    let stderr = lib.run_ok();
    assert!(stderr.contains("1 of 4 chapters rendered"), "{stderr}");
    assert_eq!(
        changed(&before, &lib.snapshot()),
        [
            ".tingshu-batch/state.json",
            "0002-第2章_潮声.lrc",
            "0002-第2章_潮声.srt",
            "0002-第2章_潮声.wav",
            "manifest.json",
            "report.txt",
            "serial.m3u"
        ]
    );
    let manifest = std::fs::read_to_string(lib.book_dir().join("manifest.json")).unwrap();
    assert!(manifest.contains("潮水涨过了防波堤"));
}

#[test]
fn a_directory_of_chapter_files_is_read_in_name_order() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("连载");
    std::fs::create_dir(&src).unwrap();
    for n in [1, 2, 10] {
        std::fs::write(src.join(format!("{n}.txt")), chapter(n, 1)).unwrap();
    }
    std::fs::write(
        dir.path().join("jobs.toml"),
        "[[job]]\nname = \"dir\"\nsource = \"连载\"\nout = \"out\"\n",
    )
    .unwrap();
    let run = || {
        let out = Tingshu::new(["batch", "run"])
            .arg(dir.path().join("jobs.toml"))
            .output();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(run().contains("3 of 3 chapters rendered"));
    std::fs::write(src.join("11.txt"), chapter(11, 1)).unwrap();
    assert!(run().contains("1 of 4 chapters rendered"));
    let mut names: Vec<String> = std::fs::read_dir(dir.path().join("out/连载"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".wav"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "0001-第1章_潮声.wav",
            "0002-第2章_潮声.wav",
            "0003-第10章_潮声.wav",
            "0004-第11章_潮声.wav"
        ]
    );
}

/// Waits until `cond` holds, at most `limit`.
fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

fn send_signal(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn a_second_concurrent_run_of_the_same_job_is_refused() {
    // 160 requests of 40 ms, two at a time: the first run takes seconds.
    let server = TtsServer::start(Duration::from_millis(40));
    let lib = Library::served(&unique_novel(10, 4), &server, 16, 2);
    let mut first = lib.spawn("run");
    let lock = lib.book_dir().join(".tingshu-batch/lock");
    let pid = first.id().to_string();
    assert!(
        wait_for(Duration::from_secs(20), || std::fs::read_to_string(&lock)
            .is_ok_and(|s| s.trim() == pid)),
        "first run never took the lock"
    );
    let second = lib.batch("run");
    let still_running = first.try_wait().unwrap().is_none();
    let stderr = String::from_utf8_lossy(&second.stderr).into_owned();
    assert!(
        still_running,
        "the first run ended before the second started"
    );
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "job \"serial\" is already running in another process (pid {pid})"
        )),
        "{stderr}"
    );
    let first = first.wait_with_output().unwrap();
    assert!(first.status.success());
    // The lock is free again.
    let stderr = lib.run_ok();
    assert!(stderr.contains("0 of 10 chapters rendered"), "{stderr}");
}

#[test]
fn a_build_rendering_into_the_job_folder_makes_the_run_skip_it() {
    let lib = Library::new(&novel(2, 2), "");
    // `tingshu build` of the same book into the same folder, mid-render.
    let book_dir = lib.book_dir();
    std::fs::create_dir_all(&book_dir).unwrap();
    let lock = book_dir.join(".tingshu-build.lock");
    let held = locks::hold(&lock, 4242);
    let out = lib.batch("run");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "job \"serial\": its folder is being rendered by another tingshu process (pid 4242)"
        ) && stderr.contains(".tingshu-build.lock"),
        "{stderr}"
    );
    assert!(lib.wavs().is_empty(), "{:?}", lib.wavs());
    held.unlock().unwrap();
    drop(held);
    let stderr = lib.run_ok();
    assert!(stderr.contains("2 of 2 chapters rendered"), "{stderr}");
    assert_eq!(lib.wavs().len(), 2);
    assert!(!lock.exists(), "the run left the build lock behind");
}

#[test]
fn sigterm_then_rerun_yields_the_bytes_of_an_uninterrupted_espeak_run() {
    let book = novel(120, 6);
    let whole = Library::new(&book, "");
    whole.run_ok();

    let lib = Library::new(&book, "");
    let first = lib.spawn("run");
    assert!(
        wait_for(Duration::from_secs(30), || lib.book_dir().is_dir()
            && lib.wavs().len() >= 2),
        "no chapter appeared"
    );
    send_signal(&first, "-TERM");
    let out = first.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("interrupted, a later run renders the rest"),
        "{stderr}"
    );
    let done = lib.wavs().len();
    assert!(
        done < 120,
        "the run ended before SIGTERM; make the book longer"
    );
    assert_eq!(lib.last_run()["outcome"], "interrupted");
    // Every file that exists is complete.
    for name in lib.wavs() {
        wav::duration_s(&lib.book_dir().join(name));
    }

    let stderr = lib.run_ok();
    assert!(
        stderr.contains(&format!("{} of 120 chapters rendered", 120 - done)),
        "{stderr}"
    );
    assert_eq!(lib.wavs(), whole.wavs());
    let leftovers: Vec<_> = std::fs::read_dir(lib.book_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".part"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // The espeak-ng workers give the same samples for the same request
    // whatever they spoke before, so the files are the same to the byte.
    for name in whole
        .wavs()
        .iter()
        .map(String::as_str)
        .chain(["manifest.json"])
    {
        let (a, b) = (
            std::fs::read(whole.book_dir().join(name)).unwrap(),
            std::fs::read(lib.book_dir().join(name)).unwrap(),
        );
        assert!(a == b, "{name} differs from the uninterrupted run's");
    }
}

#[test]
fn daemon_runs_a_job_on_its_schedule_and_stops_on_sigterm() {
    // Every second (six fields: seconds first).
    let lib = Library::new(
        &novel(2, 1),
        "schedule = \"* * * * * *\"\ntimezone = \"UTC\"\n",
    );
    let mut daemon = lib.spawn("daemon");
    let stderr = daemon.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            if tx.send(line.unwrap_or_default()).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    // Two runs: the first renders both chapters, the second none.
    let mut runs = 0;
    while runs < 2 && Instant::now() < deadline {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
            if line.contains("job \"serial\": ") && line.contains("chapters rendered") {
                runs += 1;
            }
            seen.push(line);
        }
    }
    assert_eq!(runs, 2, "daemon output: {seen:#?}");
    let log = seen.join("\n");
    assert!(
        log.contains("job \"serial\": 2 of 2 chapters rendered"),
        "{log}"
    );
    assert!(
        log.contains("job \"serial\": 0 of 2 chapters rendered"),
        "{log}"
    );
    assert!(log.contains("next run 20"), "{log}");
    send_signal(&daemon, "-TERM");
    let status = daemon.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(lib.wavs().len(), 2);
    let status = String::from_utf8_lossy(&lib.batch("status").stdout).into_owned();
    assert!(status.contains("last run: 20"), "{status}");
    assert!(status.contains("(* * * * * *)"), "{status}");
}

#[test]
fn bad_jobs_files_name_the_job_and_the_key() {
    let lib = Library::new(&novel(1, 1), "schedul = \"0 3 * * *\"\n");
    let out = lib.batch("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("job \"serial\": key \"schedul\": unknown key"),
        "{stderr}"
    );
    assert!(!lib.book_dir().exists());
}

#[test]
fn a_missing_source_fails_the_job_without_writing() {
    let lib = Library::new(&novel(1, 1), "");
    std::fs::remove_file(lib.source()).unwrap();
    let out = lib.batch("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("job \"serial\": failed: source"),
        "{stderr}"
    );
    assert!(!lib.book_dir().exists());
}

#[test]
fn renamed_chapters_replace_their_old_file_and_damaged_files_are_rendered_again() {
    let lib = Library::new(&novel(3, 1), "");
    lib.run_ok();
    // Chapter 2 gets a new title; chapter 3's file is overwritten by hand.
    let text = std::fs::read_to_string(lib.source()).unwrap();
    std::fs::write(lib.source(), text.replacen("第2章 潮声", "第2章 回港", 1)).unwrap();
    std::fs::write(lib.book_dir().join("0003-第3章_潮声.wav"), b"not audio").unwrap();

    let stderr = lib.run_ok();
    assert!(stderr.contains("2 of 3 chapters rendered"), "{stderr}");
    assert_eq!(
        lib.wavs(),
        [
            "0001-第1章_潮声.wav",
            "0002-第2章_回港.wav",
            "0003-第3章_潮声.wav"
        ]
    );
    wav::duration_s(&lib.book_dir().join("0003-第3章_潮声.wav"));
    let manifest = std::fs::read_to_string(lib.book_dir().join("manifest.json")).unwrap();
    assert!(manifest.contains("0002-第2章_回港.wav"));
    assert!(!manifest.contains("0002-第2章_潮声.wav"));
}

#[test]
fn editing_one_paragraph_resynthesizes_only_the_changed_chunks() {
    let server = TtsServer::start(Duration::ZERO);
    let book = unique_novel(4, 3);
    let lib = Library::served(&book, &server, 16, 4);
    let stderr = lib.run_ok();
    assert!(stderr.contains("4 of 4 chapters rendered"), "{stderr}");
    let first: BTreeSet<String> = server.texts().into_iter().collect();
    // 4 chapters × 3 paragraphs × (narration of several chunks + dialogue).
    assert!(first.len() > 4 * 3 * 2, "{first:?}");
    assert!(
        stderr.contains(&format!(
            "{} requests sent, 0 chunks from the cache",
            server.count()
        )),
        "{stderr}"
    );
    let before = lib.snapshot();

    let old = unique_narration(2, 3);
    let new = old.replacen("潮水退到第二之三块礁石后面", "潮水涨过第二之三道防波堤", 1);
    assert_ne!(old, new);
    let edited = book.replacen(&old, &new, 1);
    std::fs::write(lib.source(), &edited).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let mark = server.count();
    let stderr = lib.run_ok();
    let second: Vec<String> = server.texts()[mark..].to_vec();
    assert!(stderr.contains("1 of 4 chapters rendered"), "{stderr}");
    assert!(
        stderr.contains(&format!("; {} requests sent, ", second.len())),
        "{stderr}"
    );
    // Only chapter 2's file (and the book's records) changed.
    assert_eq!(
        changed(&before, &lib.snapshot()),
        [
            ".tingshu-batch/state.json",
            "0002-第二章_守夜.lrc",
            "0002-第二章_守夜.srt",
            "0002-第二章_守夜.wav",
            "manifest.json",
            "report.txt",
            "serial.m3u"
        ]
    );

    // What had to be asked for: the chunks of the edited book that the first
    // run never asked for, each once; found by rendering the edited book
    // from scratch in another directory.
    let reference = Library::served(&edited, &server, 16, 4);
    let mark = server.count();
    reference.run_ok();
    let fresh: BTreeSet<String> = server.texts()[mark..].iter().cloned().collect();
    let expected: Vec<String> = fresh.difference(&first).cloned().collect();
    let mut asked = second.clone();
    asked.sort();
    assert!(!asked.is_empty());
    assert_eq!(asked, expected);
    // They are chunks of the edited sentence, and include the new words.
    for text in &second {
        assert!(new.contains(text.as_str()), "{text:?} is not from {new:?}");
    }
    assert!(second.iter().any(|t| t.contains("涨过")), "{second:?}");
    // Old and new chunks together sound exactly like a fresh render.
    for name in ["0002-第二章_守夜.wav", "manifest.json"] {
        assert_eq!(
            std::fs::read(lib.book_dir().join(name)).unwrap(),
            std::fs::read(reference.book_dir().join(name)).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn sigterm_then_rerun_yields_the_bytes_of_an_uninterrupted_served_run() {
    // 40 ms per request, two at a time: the kill lands mid-run.
    let server = TtsServer::start(Duration::from_millis(40));
    let book = unique_novel(10, 4);
    let whole = Library::served(&book, &server, 16, 2);
    whole.run_ok();
    let whole_requests = server.count();

    let lib = Library::served(&book, &server, 16, 2);
    let mark = server.count();
    let first = lib.spawn("run");
    assert!(
        wait_for(Duration::from_secs(60), || lib.book_dir().is_dir()
            && lib.wavs().len() >= 2),
        "no chapter appeared"
    );
    send_signal(&first, "-TERM");
    let out = first.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("interrupted, a later run renders the rest"),
        "{stderr}"
    );
    let done = lib.wavs().len();
    assert!(done < 10, "the run ended before SIGTERM");
    assert_eq!(lib.last_run()["outcome"], "interrupted");
    let killed_requests = server.count() - mark;

    let stderr = lib.run_ok();
    assert!(
        stderr.contains(&format!("{} of 10 chapters rendered", 10 - done)),
        "{stderr}"
    );
    // Chunks finished before the signal came from the cache.
    let rerun_requests = server.count() - mark - killed_requests;
    assert!(
        rerun_requests < whole_requests,
        "{rerun_requests} requests after the kill, {whole_requests} for the whole book"
    );

    assert_eq!(lib.wavs(), whole.wavs());
    assert_eq!(lib.wavs().len(), 10);
    let leftovers: Vec<_> = std::fs::read_dir(lib.book_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".part"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    for name in whole
        .wavs()
        .iter()
        .map(String::as_str)
        .chain(["manifest.json"])
    {
        let (a, b) = (
            std::fs::read(whole.book_dir().join(name)).unwrap(),
            std::fs::read(lib.book_dir().join(name)).unwrap(),
        );
        assert!(a == b, "{name} differs from the uninterrupted run's");
    }
}

// ---- formats (MP3, M4B, playlist), EPUB metadata, ffmpeg ----

fn names_with(dir: &Path, extension: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(extension))
        .collect();
    names.sort();
    names
}

#[test]
fn formats_are_made_once_and_only_what_changed_is_made_again() {
    if !ffmpeg::tools() {
        return;
    }
    let lib = Library::with_formats(&novel(3, 1), r#"["wav", "mp3", "m4b"]"#, "");
    let dir = lib.book_dir();
    let stderr = lib.run_ok();
    assert!(stderr.contains("3 of 3 chapters rendered"), "{stderr}");
    let stems = ["0001-第1章_潮声", "0002-第2章_潮声", "0003-第3章_潮声"];
    for ext in [".wav", ".mp3", ".srt", ".lrc"] {
        let expected: Vec<String> = stems.iter().map(|s| format!("{s}{ext}")).collect();
        assert_eq!(names_with(&dir, ext), expected, "{ext}");
    }
    assert_eq!(
        m4b_chapters(&dir.join("serial.m4b")),
        ["第1章 潮声", "第2章 潮声", "第3章 潮声"]
    );
    let playlist = std::fs::read_to_string(dir.join("serial.m3u")).unwrap();
    let listed: Vec<&str> = playlist.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(listed, stems.map(|s| format!("{s}.mp3")));
    let mp3_tags = tags(&dir.join("0002-第2章_潮声.mp3"));
    assert_eq!(mp3_tags["title"], "第2章 潮声");
    assert_eq!(mp3_tags["album"], "serial");
    assert_eq!(mp3_tags["track"], "2");

    // Nothing changed: no byte and no modification time of any file.
    let before = lib.snapshot();
    std::thread::sleep(Duration::from_millis(20));
    let stderr = lib.run_ok();
    assert!(stderr.contains("0 of 3 chapters rendered"), "{stderr}");
    assert!(!stderr.contains("other files written"), "{stderr}");
    assert_eq!(changed(&before, &lib.snapshot()), Vec::<String>::new());

    // A new chapter: its files, and the book's files, nothing else.
    let mut text = std::fs::read_to_string(lib.source()).unwrap();
    text.push_str(&chapter(4, 1));
    std::fs::write(lib.source(), text).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let stderr = lib.run_ok();
    assert!(stderr.contains("1 of 4 chapters rendered"), "{stderr}");
    assert_eq!(
        changed(&before, &lib.snapshot()),
        [
            ".tingshu-batch/state.json",
            "0004-第4章_潮声.lrc",
            "0004-第4章_潮声.mp3",
            "0004-第4章_潮声.srt",
            "0004-第4章_潮声.wav",
            "manifest.json",
            "report.txt",
            "serial.m3u",
            "serial.m4b"
        ]
    );
    assert_eq!(
        m4b_chapters(&dir.join("serial.m4b")),
        ["第1章 潮声", "第2章 潮声", "第3章 潮声", "第4章 潮声"]
    );
    let duration: f64 =
        ffprobe(&dir.join("0004-第4章_潮声.mp3"), "-show_format")["format"]["duration"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
    let wav_s = wav::duration_s(&dir.join("0004-第4章_潮声.wav"));
    assert!(
        (duration - wav_s).abs() < 0.2,
        "mp3 {duration} s, wav {wav_s} s"
    );

    // A deleted MP3 is made again, alone.
    let before = lib.snapshot();
    std::fs::remove_file(dir.join("0002-第2章_潮声.mp3")).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let stderr = lib.run_ok();
    assert!(stderr.contains("0 of 4 chapters rendered"), "{stderr}");
    assert!(stderr.contains("; 1 other files written"), "{stderr}");
    assert_eq!(
        changed(&before, &lib.snapshot()),
        [".tingshu-batch/state.json", "0002-第2章_潮声.mp3"]
    );
    assert_eq!(
        tags(&dir.join("0002-第2章_潮声.mp3"))["title"],
        "第2章 潮声"
    );
    let status = String::from_utf8_lossy(&lib.batch("status").stdout).into_owned();
    assert!(status.contains("failures: none"), "{status}");

    // A deleted M4B is made again, alone.
    let before = lib.snapshot();
    std::fs::remove_file(dir.join("serial.m4b")).unwrap();
    let stderr = lib.run_ok();
    assert!(stderr.contains("0 of 4 chapters rendered"), "{stderr}");
    assert_eq!(
        changed(&before, &lib.snapshot()),
        [".tingshu-batch/state.json", "serial.m4b"]
    );
    assert_eq!(m4b_chapters(&dir.join("serial.m4b")).len(), 4);

    // A format no longer asked for: its files go, nothing is rendered, and
    // the playlist lists the WAVs.
    let jobs = std::fs::read_to_string(lib.jobs()).unwrap();
    std::fs::write(
        lib.jobs(),
        jobs.replace(r#""wav", "mp3", "m4b""#, r#""wav", "m4b""#),
    )
    .unwrap();
    let stderr = lib.run_ok();
    assert!(stderr.contains("0 of 4 chapters rendered"), "{stderr}");
    assert_eq!(names_with(&dir, ".mp3"), Vec::<String>::new());
    assert_eq!(names_with(&dir, ".wav").len(), 4);
    let playlist = std::fs::read_to_string(dir.join("serial.m3u")).unwrap();
    assert!(playlist.contains("\n0004-第4章_潮声.wav\n"), "{playlist}");
}

/// A small EPUB 3 (original text): title, author, language and a cover.
fn write_epub(path: &Path, cover_png: &[u8]) {
    use std::io::Write;
    use zip::write::SimpleFileOptions;
    let page = |title: &str, body: &str| {
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>{title}</title></head>
<body><h1>{title}</h1><p>{body}</p></body></html>"#
        )
    };
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("mimetype", b"application/epub+zip".to_vec()),
        (
            "META-INF/container.xml",
            br#"<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OPS/book.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"#
                .to_vec(),
        ),
        (
            "OPS/book.opf",
            r#"<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="id">urn:uuid:5b0e7a52-1d2c-4f00-9a11-000000000007</dc:identifier>
    <dc:title>听潮小记</dc:title><dc:creator>苏望舒</dc:creator><dc:language>zh-CN</dc:language>
  </metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="cover" href="cover.png" media-type="image/png" properties="cover-image"/>
    <item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/>
    <item id="c2" href="c2.xhtml" media-type="application/xhtml+xml"/>
  </manifest>
  <spine><itemref idref="c1"/><itemref idref="c2"/></spine>
</package>"#
                .as_bytes()
                .to_vec(),
        ),
        (
            "OPS/nav.xhtml",
            r#"<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">
<head><title>目录</title></head><body><nav epub:type="toc"><ol>
<li><a href="c1.xhtml">第一章 退潮</a></li><li><a href="c2.xhtml">第二章 涨潮</a></li>
</ol></nav></body></html>"#
                .as_bytes()
                .to_vec(),
        ),
        ("OPS/cover.png", cover_png.to_vec()),
        (
            "OPS/c1.xhtml",
            page("第一章 退潮", "退潮以后，滩上留下一排排细小的脚印。").into_bytes(),
        ),
        (
            "OPS/c2.xhtml",
            page("第二章 涨潮", "傍晚潮水回来，把脚印一个个抹平了。").into_bytes(),
        ),
    ];
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, bytes) in files {
        let method = if name == "mimetype" {
            zip::CompressionMethod::Stored
        } else {
            zip::CompressionMethod::Deflated
        };
        zip.start_file(
            name,
            SimpleFileOptions::default().compression_method(method),
        )
        .unwrap();
        zip.write_all(&bytes).unwrap();
    }
    zip.finish().unwrap();
}

#[test]
fn an_epub_jobs_title_author_and_cover_reach_the_manifest_and_the_tags() {
    if !ffmpeg::tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cover = dir.path().join("cover.png");
    let out = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "color=c=navy:s=32x32",
            "-frames:v",
            "1",
        ])
        .arg(&cover)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    write_epub(
        &dir.path().join("tide.epub"),
        &std::fs::read(&cover).unwrap(),
    );
    std::fs::write(
        dir.path().join("jobs.toml"),
        "[[job]]\nname = \"tide\"\nsource = \"tide.epub\"\nout = \"out\"\nformats = [\"mp3\", \"m4b\"]\n",
    )
    .unwrap();
    let run = || {
        let out = Tingshu::new(["batch", "run"])
            .arg(dir.path().join("jobs.toml"))
            .output();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        stderr
    };
    let stderr = run();
    assert!(stderr.contains("2 of 2 chapters rendered"), "{stderr}");
    let book = dir.path().join("out/tide");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(book.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["title"], "听潮小记");
    assert_eq!(manifest["author"], "苏望舒");
    assert_eq!(manifest["language"], "zh-CN");
    // Without "wav" the WAVs live in a hidden folder, as with build.
    assert_eq!(names_with(&book, ".wav"), Vec::<String>::new());
    assert_eq!(names_with(&book.join(".wav"), ".wav").len(), 2);
    assert_eq!(manifest["chapters"][0]["file"], ".wav/0001-第一章_退潮.wav");

    let mp3 = book.join("0001-第一章_退潮.mp3");
    let mp3_tags = tags(&mp3);
    assert_eq!(mp3_tags["album"], "听潮小记");
    assert_eq!(mp3_tags["artist"], "苏望舒");
    assert_eq!(mp3_tags["title"], "第一章 退潮");
    let streams = ffprobe(&mp3, "-show_streams");
    assert!(
        streams["streams"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["disposition"]["attached_pic"] == 1),
        "no cover in {streams}"
    );
    let m4b = book.join("tide.m4b");
    let m4b_tags = tags(&m4b);
    assert_eq!(m4b_tags["title"], "听潮小记");
    assert_eq!(m4b_tags["artist"], "苏望舒");
    assert_eq!(m4b_chapters(&m4b), ["第一章 退潮", "第二章 涨潮"]);

    // A second run leaves every file alone, the cover copy included.
    let stamp = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
    let watched: Vec<PathBuf> = [
        &mp3,
        &m4b,
        &book.join("manifest.json"),
        &book.join("tide.m3u"),
    ]
    .into_iter()
    .cloned()
    .chain(
        std::fs::read_dir(book.join(".tingshu-batch"))
            .unwrap()
            .map(|e| e.unwrap().path()),
    )
    .filter(|p| !p.ends_with("last-run.json") && !p.ends_with("lock"))
    .collect();
    let before: Vec<_> = watched.iter().map(|p| stamp(p)).collect();
    std::thread::sleep(Duration::from_millis(20));
    assert!(run().contains("0 of 2 chapters rendered"));
    let after: Vec<_> = watched.iter().map(|p| stamp(p)).collect();
    assert_eq!(before, after, "{watched:?}");
}

#[test]
fn a_missing_ffmpeg_is_one_line_and_exit_2_before_any_rendering() {
    let lib = Library::with_formats(&novel(2, 1), r#"["wav", "mp3"]"#, "");
    let out = Tingshu::new(["batch", "run"])
        .arg(lib.jobs())
        .env("TINGSHU_FFMPEG", "/nonexistent/ffmpeg")
        .output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("job \"serial\": key \"formats\": cannot run `/nonexistent/ffmpeg`"),
        "{stderr}"
    );
    assert!(stderr.contains("Debian package `ffmpeg`"), "{stderr}");
    assert!(!lib.book_dir().exists());
}

#[test]
fn an_unknown_format_names_the_job_and_the_key() {
    let lib = Library::with_formats(&novel(1, 1), r#"["mp3", "flac2"]"#, "");
    let out = lib.batch("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "jobs.toml: job \"serial\": key \"formats\": unknown format \"flac2\" (known: wav, mp3, opus, m4b)"
        ),
        "{stderr}"
    );
    assert!(!lib.book_dir().exists());
}

#[test]
fn failed_encodes_show_in_status_and_are_made_by_the_next_run() {
    if !ffmpeg::tools() {
        return;
    }
    let lib = Library::with_formats(&novel(2, 1), r#"["wav", "mp3"]"#, "");
    // An ffmpeg that starts but cannot encode anything.
    let broken = lib.dir.path().join("broken-ffmpeg");
    std::fs::write(
        &broken,
        "#!/bin/sh\n[ \"$1\" = -version ] && exit 0\necho 'no encoder here' >&2\nexit 1\n",
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&broken)
        .status()
        .unwrap();
    let out = Tingshu::new(["batch", "run"])
        .arg(lib.jobs())
        .env("TINGSHU_FFMPEG", &broken)
        .output();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("2 of 2 chapters rendered"), "{stderr}");
    assert!(stderr.contains("2 failed"), "{stderr}");
    assert_eq!(lib.last_run()["outcome"], "partial");
    let status = String::from_utf8_lossy(&lib.batch("status").stdout).into_owned();
    assert!(status.contains("failures: 2"), "{status}");
    assert!(
        status.contains("chapter 1 (第1章 潮声): ffmpeg failed writing"),
        "{status}"
    );
    assert!(status.contains("no encoder here"), "{status}");
    assert_eq!(names_with(&lib.book_dir(), ".mp3"), Vec::<String>::new());
    // The playlist names only files that exist: the WAVs for now.
    let playlist = || std::fs::read_to_string(lib.book_dir().join("serial.m3u")).unwrap();
    let listed = |text: &str, ext: &str| text.lines().filter(|l| l.ends_with(ext)).count();
    assert_eq!(listed(&playlist(), ".wav"), 2, "{}", playlist());
    assert_eq!(listed(&playlist(), ".mp3"), 0, "{}", playlist());

    // With a working ffmpeg the next run encodes them, rendering nothing,
    // and the playlist lists the MP3s.
    let stderr = lib.run_ok();
    assert!(stderr.contains("0 of 2 chapters rendered"), "{stderr}");
    assert_eq!(names_with(&lib.book_dir(), ".mp3").len(), 2);
    assert_eq!(listed(&playlist(), ".mp3"), 2, "{}", playlist());
    let status = String::from_utf8_lossy(&lib.batch("status").stdout).into_owned();
    assert!(status.contains("failures: none"), "{status}");
}
