//! Runs the built `tingshu` binary: one builder for every way a test starts
//! it (arguments, directory, environment, standard input), and the checks
//! of a run that succeeded or failed.

use std::ffi::OsStr;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_tingshu");

/// A `tingshu` command line being put together.
pub struct Tingshu {
    command: Command,
    stdin: Option<Vec<u8>>,
}

impl Tingshu {
    /// `tingshu ARGS` in the test's directory and environment.
    pub fn new<I, S>(args: I) -> Tingshu
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = Command::new(BIN);
        command.args(args);
        Tingshu {
            command,
            stdin: None,
        }
    }

    /// One more argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Tingshu {
        self.command.arg(arg);
        self
    }

    /// More arguments.
    pub fn args<I, S>(mut self, args: I) -> Tingshu
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command.args(args);
        self
    }

    /// Runs in `dir`.
    pub fn dir(mut self, dir: impl AsRef<Path>) -> Tingshu {
        self.command.current_dir(dir);
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Tingshu {
        self.command.env(key, value);
        self
    }

    /// Removes an environment variable (one `.cargo/config.toml` or the
    /// caller's shell may set).
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Tingshu {
        self.command.env_remove(key);
        self
    }

    /// Gives `bytes` on standard input (otherwise it is empty).
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Tingshu {
        self.stdin = Some(bytes.into());
        self
    }

    /// Runs to the end: exit status, stdout and stderr.
    pub fn output(self) -> Output {
        let Tingshu { mut command, stdin } = self;
        let Some(bytes) = stdin else {
            return command.output().expect("run tingshu");
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tingshu");
        child.stdin.take().unwrap().write_all(&bytes).unwrap();
        child.wait_with_output().expect("run tingshu")
    }

    /// [`Tingshu::output`] from async code, without blocking its runtime.
    pub async fn output_async(self) -> Output {
        tokio::task::spawn_blocking(move || self.output())
            .await
            .expect("the run finished")
    }

    /// The command, for a test that starts the process itself and watches
    /// or stops it.
    pub fn command(self) -> Command {
        self.command
    }
}

/// `tingshu ARGS`, run to the end.
pub fn tingshu<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Tingshu::new(args).output()
}

/// The stdout of a run that must have succeeded.
pub fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

/// The stderr of a run that must have failed with exit `code` and a
/// message containing `message`.
pub fn fails(out: &Output, code: i32, message: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert!(stderr.contains(message), "expected {message:?}: {stderr}");
    stderr
}

/// Stops a child tingshu as a user's Ctrl-C would (SIGTERM), so that it
/// cleans up after itself (the studio's previews folder in the system's
/// temporary folder); killed if it has not stopped within 5 s. A child
/// already waited for is left alone: its pid may be another process's.
pub fn stop(child: &mut std::process::Child) {
    use std::time::{Duration, Instant};
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    let pid = child.id() as libc::pid_t;
    // SAFETY: kill(2) on the pid of our own child process, not yet reaped
    // (an exited child stays a zombie until waited for).
    if unsafe { libc::kill(pid, libc::SIGTERM) } == 0 {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
