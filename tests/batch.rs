//! `tingshu batch`: incremental runs, the lock, SIGTERM and the daemon,
//! driving the real binary with the embedded espeak-ng voice.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

const BIN: &str = env!("CARGO_BIN_EXE_tingshu");

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

struct Library {
    dir: tempfile::TempDir,
}

impl Library {
    /// A jobs file with one job `serial` reading `books/serial.txt` into `output/`.
    fn new(book: &str, extra: &str) -> Library {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("books")).unwrap();
        std::fs::write(dir.path().join("books/serial.txt"), book).unwrap();
        std::fs::write(
            dir.path().join("jobs.toml"),
            format!(
                "[[job]]\nname = \"serial\"\nsource = \"books/serial.txt\"\nout = \"output\"\nformats = [\"wav\"]\n{extra}"
            ),
        )
        .unwrap();
        Library { dir }
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
        Command::new(BIN)
            .args(["batch", command])
            .arg(self.jobs())
            .output()
            .unwrap()
    }

    fn spawn(&self, command: &str) -> Child {
        Command::new(BIN)
            .args(["batch", command])
            .arg(self.jobs())
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

fn wav_duration_s(path: &Path) -> f64 {
    let reader = hound::WavReader::open(path).unwrap();
    f64::from(reader.duration()) / f64::from(reader.spec().sample_rate)
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
            "0004-第4章_潮声.wav",
            "manifest.json"
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
            "0002-第2章_潮声.wav",
            "manifest.json"
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
        let out = Command::new(BIN)
            .args(["batch", "run"])
            .arg(dir.path().join("jobs.toml"))
            .output()
            .unwrap();
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
    let lib = Library::new(&novel(120, 6), "");
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
    assert!(stderr.contains("0 of 120 chapters rendered"), "{stderr}");
}

#[test]
fn sigterm_then_rerun_yields_the_files_of_an_uninterrupted_run() {
    let book = novel(30, 6);
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
        done < 30,
        "the run ended before SIGTERM; make the book longer"
    );
    assert_eq!(lib.last_run()["outcome"], "interrupted");
    // Every file that exists is complete.
    for name in lib.wavs() {
        wav_duration_s(&lib.book_dir().join(name));
    }

    let stderr = lib.run_ok();
    assert!(
        stderr.contains(&format!("{} of 30 chapters rendered", 30 - done)),
        "{stderr}"
    );
    assert_eq!(lib.wavs(), whole.wavs());
    let leftovers: Vec<_> = std::fs::read_dir(lib.book_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".part"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // Same chapters, same reading script; the audio of each chapter agrees in
    // length (espeak-ng's output depends a little on what a worker process
    // synthesized before, so samples are not compared byte for byte).
    let read = |l: &Library| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(l.book_dir().join("manifest.json")).unwrap())
            .unwrap()
    };
    let (a, b) = (read(&whole), read(&lib));
    let shape = |m: &serde_json::Value| -> Vec<(u64, String, String, Vec<String>)> {
        m["chapters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["index"].as_u64().unwrap(),
                    c["title"].as_str().unwrap().to_owned(),
                    c["file"].as_str().unwrap().to_owned(),
                    c["segments"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|s| format!("{}|{}", s["voice"], s["text"]))
                        .collect(),
                )
            })
            .collect()
    };
    assert_eq!(shape(&a), shape(&b));
    for name in whole.wavs() {
        let (x, y) = (
            wav_duration_s(&whole.book_dir().join(&name)),
            wav_duration_s(&lib.book_dir().join(&name)),
        );
        assert!((x - y).abs() / x < 0.02, "{name}: {x} s vs {y} s");
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
    wav_duration_s(&lib.book_dir().join("0003-第3章_潮声.wav"));
    let manifest = std::fs::read_to_string(lib.book_dir().join("manifest.json")).unwrap();
    assert!(manifest.contains("0002-第2章_回港.wav"));
    assert!(!manifest.contains("0002-第2章_潮声.wav"));
}
