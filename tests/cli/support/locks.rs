//! Lock files as another tingshu process holds them.

use std::fs::File;
use std::io::Write;
use std::path::Path;

/// Takes the lock file at `path` (flock) and writes `pid` into it, as a
/// render in another process does; the lock lasts until the file is dropped.
pub fn hold(path: &Path, pid: u32) -> File {
    let mut held = File::create(path).unwrap();
    held.try_lock().unwrap();
    writeln!(held, "{pid}").unwrap();
    held
}
