//! Services and data a test needs but this repository does not hold: Redis,
//! PostgreSQL, ffmpeg/ffprobe, espeak-ng, chromium/chromedriver, the
//! installed neural voice, and the evaluation data in `../shared`
//! (`scripts/install-deps.sh` installs the programs, and
//! `scripts/install-kokoro.sh` the voice).
//!
//! A test that lacks one is skipped with one printed line and passes —
//! unless `TINGSHU_REQUIRE_SERVICES=1` (as `.ci/run` sets), which makes it
//! fail instead, so that a machine missing a service cannot pass by
//! skipping. [`require`] decides. What the machine may not allow whatever
//! is installed (a tmpfs, which needs mount privileges) or a race a test
//! could not set up skips through [`skip`] and never fails.
//!
//! The shared data is required only where it exists: when `../shared` is
//! there but a file of it is missing, that is a failure under
//! `TINGSHU_REQUIRE_SERVICES=1`; when the whole `../shared` directory is
//! absent (a clean clone on another machine), the test is skipped with one
//! printed line even then.

use std::path::PathBuf;

use super::paths;

/// Whether `TINGSHU_REQUIRE_SERVICES=1` turns skips into failures.
fn required() -> bool {
    std::env::var("TINGSHU_REQUIRE_SERVICES").is_ok_and(|v| v == "1")
}

/// Whether a test can go on: `available`, else a skip (a printed line,
/// `false`) or, with `TINGSHU_REQUIRE_SERVICES=1`, a panic naming `what`.
pub fn require(what: &str, available: bool) -> bool {
    if available {
        return true;
    }
    assert!(
        !required(),
        "{what} is required (TINGSHU_REQUIRE_SERVICES=1)"
    );
    eprintln!("skipped: {what} not available");
    false
}

/// A skip that no setting turns into a failure: for what the machine may
/// not allow (mounting a tmpfs needs privileges a container lacks) or a
/// race the test could not set up, as opposed to a service the test
/// scripts install. Prints one line; returns `false`.
pub fn skip(what: &str) -> bool {
    eprintln!("skipped: {what} not available");
    false
}

/// `name` on the `PATH`, if it is there.
pub fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

/// A file or directory of the shared evaluation data (`../shared/REL`), or
/// `None` when the test is to be skipped (see the module documentation).
pub fn shared(rel: &str) -> Option<PathBuf> {
    let root = paths::repo().join("../shared");
    if !root.is_dir() {
        eprintln!(
            "skipped: {} not available (no shared data beside this clone)",
            root.display()
        );
        return None;
    }
    let path = root.join(rel);
    require(&path.display().to_string(), path.exists()).then_some(path)
}
