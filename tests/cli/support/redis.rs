//! A Redis server for the queue tests, started from the `redis-server`
//! that `scripts/install-deps.sh` installs.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::services;

/// A throwaway Redis server on a free port of 127.0.0.1, stopped when
/// dropped.
pub struct Redis {
    child: Child,
    _dir: tempfile::TempDir,
    pub url: String,
}

impl Redis {
    /// Starts one, or returns `None` (see [`services::require`]) when
    /// `redis-server` is not installed.
    pub fn start() -> Option<Redis> {
        let found = services::on_path("redis-server").is_some();
        if !services::require("redis-server", found) {
            return None;
        }
        let dir = tempfile::tempdir().expect("temporary directory");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .spawn()
            .expect("start redis-server");
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(Redis {
            child,
            _dir: dir,
            url: format!("redis://127.0.0.1:{port}/0"),
        })
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
