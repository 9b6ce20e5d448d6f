//! One test's set-up in one expression: a temporary directory, optionally
//! the fake TTS server, the files the run reads (a voices file pointing at
//! that server, a book), the environment, and then runs of `tingshu` in
//! that directory, each read back as exit code, stdout, stderr and time.
//!
//! ```ignore
//! let s = Scenario::new()
//!     .server(TtsServer::start(Duration::ZERO))
//!     .voices_toml("[backends.server]\ntype = \"openai\"\nbase_url = \"{server}/v1\"\n…")
//!     .book("第一章 夜\n他说：“走吧。”\n");
//! let run = s.run(&["build", "book.txt", "--voices", "voices.toml"]);
//! assert_eq!(run.code, 0, "{}", run.stderr);
//! assert_eq!(s.tts_server().count(), 2);
//! assert!(s.path("output/book/manifest.json").is_file());
//! ```
//!
//! In every file written, `{server}` stands for the server's
//! `http://127.0.0.1:PORT`: a voices file reads as the TOML it is, with no
//! `format!` escapes around `{text}` and the other request placeholders.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use super::cli::Tingshu;
use super::tts_server::TtsServer;

/// Environment variables a run never inherits from the caller's shell or
/// `.cargo/config.toml`: each scenario says what it means.
const CLEARED: [&str; 5] = [
    "TINGSHU_VOICES",
    "TINGSHU_OUT",
    "TINGSHU_CACHE",
    "TINGSHU_FORMAT",
    "TINGSHU_QUEUE",
];

/// A directory with what one test's runs of `tingshu` read.
pub struct Scenario {
    dir: tempfile::TempDir,
    server: Option<TtsServer>,
    env: Vec<(OsString, OsString)>,
}

/// One finished run of `tingshu`.
#[derive(Debug)]
pub struct Run {
    /// The exit code, or -1 when a signal ended it.
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// From start to exit.
    pub elapsed: Duration,
}

impl Run {
    fn from_output(output: Output, elapsed: Duration) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            elapsed,
        }
    }
}

impl Default for Scenario {
    fn default() -> Scenario {
        Scenario::new()
    }
}

impl Scenario {
    /// An empty temporary directory, no server, no environment of its own.
    pub fn new() -> Scenario {
        Scenario {
            dir: tempfile::tempdir().expect("temporary directory"),
            server: None,
            env: Vec::new(),
        }
    }

    /// The fake TTS server the files' `{server}` stands for; stopped with
    /// the scenario.
    pub fn server(mut self, server: TtsServer) -> Scenario {
        self.server = Some(server);
        self
    }

    /// Writes `voices.toml` (`{server}` replaced).
    pub fn voices_toml(self, text: &str) -> Scenario {
        self.file("voices.toml", text)
    }

    /// Writes `book.txt`.
    pub fn book(self, text: &str) -> Scenario {
        self.file("book.txt", text)
    }

    /// Writes the file `name` (relative to the directory; `{server}`
    /// replaced).
    pub fn file(self, name: &str, text: &str) -> Scenario {
        self.write(name, text);
        self
    }

    /// Sets an environment variable for every run.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Scenario {
        self.env.push((key.into(), value.into()));
        self
    }

    /// (Re)writes the file `name` now, `{server}` replaced: a book edited
    /// between two runs.
    pub fn write(&self, name: &str, text: &str) {
        let text = match &self.server {
            Some(server) => text.replace("{server}", &server.url()),
            None => text.to_owned(),
        };
        let path = self.path(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create the file's directory");
        }
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }

    /// The text of the file `name`.
    pub fn read(&self, name: &str) -> String {
        let path = self.path(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// The scenario's directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `REL` in the scenario's directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The server given to [`Scenario::server`]: its recorded requests.
    pub fn tts_server(&self) -> &TtsServer {
        self.server.as_ref().expect("a scenario with a server")
    }

    /// `tingshu ARGS` in the directory with the scenario's environment, not
    /// yet run: for a test that starts the process itself.
    pub fn tingshu(&self, args: &[&str]) -> Tingshu {
        let mut tingshu = Tingshu::new(args).dir(self.dir.path());
        for key in CLEARED {
            tingshu = tingshu.env_remove(key);
        }
        for (key, value) in &self.env {
            tingshu = tingshu.env(key, value);
        }
        tingshu
    }

    /// Runs `tingshu ARGS` to the end.
    pub fn run(&self, args: &[&str]) -> Run {
        let start = Instant::now();
        let output = self.tingshu(args).output();
        Run::from_output(output, start.elapsed())
    }

    /// [`Scenario::run`] from async code, without blocking its runtime.
    pub async fn run_async(&self, args: &[&str]) -> Run {
        let start = Instant::now();
        let output = self.tingshu(args).output_async().await;
        Run::from_output(output, start.elapsed())
    }
}
