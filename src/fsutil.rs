//! File-system helpers every stage uses: writes that never leave a
//! half-written file under the final name, and exclusive locks.
//!
//! A write goes to a temporary file beside its destination and is renamed
//! into place only once complete, so a reader (or the next run, after a
//! crash) sees the old file or the new one, never a piece. Two temporary
//! names exist:
//! - [`temp_path`] (`.NAME.part`) for a file one process writes at a time
//!   (a book directory under its lock); [`remove_stale_parts`] clears what a
//!   killed run left;
//! - [`unique_temp_path`] (`.NAME.PID-RAND.tmp`) for a directory many
//!   processes write at once (the synthesis cache).

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// `dir/.name.part` beside `path`.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.part"))
}

/// `dir/.name.PID-RAND.tmp` beside `path`: a name no other process uses.
pub fn unique_temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(
        ".{name}.{}-{}.tmp",
        std::process::id(),
        fastrand::u32(..)
    ))
}

/// Writes `bytes` to `path` through [`temp_path`], renamed into place.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_through(&temp_path(path), path, false, |f| f.write_all(bytes))
}

/// [`write_atomic`], with the data synced to disk before the rename: for
/// records a power loss must not empty (the batch state).
pub fn write_atomic_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_through(&temp_path(path), path, true, |f| f.write_all(bytes))
}

/// Writes `bytes` to `path` through [`unique_temp_path`]: for directories
/// many processes write at once. Not synced: a killed process loses no
/// written data, and readers check what they read.
pub fn write_atomic_shared(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_through(&unique_temp_path(path), path, false, |f| f.write_all(bytes))
}

/// Streams into `path` through [`temp_path`]: `write` gets a buffered
/// writer of the temporary file, which is renamed into place when `write`
/// succeeds and removed when it fails. Errors creating or renaming the
/// file become `E` through `io_error`.
pub fn write_atomic_with<T, E>(
    path: &Path,
    io_error: impl Fn(io::Error) -> E,
    write: impl FnOnce(BufWriter<File>) -> Result<T, E>,
) -> Result<T, E> {
    if is_special(path) {
        let file = open_special(path).map_err(&io_error)?;
        return write(BufWriter::new(file));
    }
    let tmp = temp_path(path);
    let file = File::create(&tmp).map_err(&io_error)?;
    match write(BufWriter::new(file)) {
        Ok(value) => match fs::rename(&tmp, path) {
            Ok(()) => Ok(value),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(io_error(e))
            }
        },
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Moves a finished temporary file (written by another program, such as
/// ffmpeg) into place; removes it when that fails.
pub fn commit(tmp: &Path, path: &Path) -> io::Result<()> {
    if is_special(path) {
        let copied = File::open(tmp)
            .and_then(|mut from| io::copy(&mut from, &mut open_special(path)?).map(drop));
        let _ = fs::remove_file(tmp);
        return copied;
    }
    fs::rename(tmp, path).inspect_err(|_| {
        let _ = fs::remove_file(tmp);
    })
}

/// Whether `path` is an existing file that is neither a regular file nor a
/// directory: a device (`/dev/null`, `/dev/stdout`), a FIFO or a socket.
/// Such a file is written in place: renaming a temporary file over it
/// would replace the device with a regular file.
pub fn is_special(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

fn open_special(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).open(path)
}

fn write_through(
    tmp: &Path,
    path: &Path,
    sync: bool,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    if is_special(path) {
        let mut out = BufWriter::new(open_special(path)?);
        write(&mut out)?;
        return out.flush();
    }
    let result = File::create(tmp).and_then(|file| {
        let mut out = BufWriter::new(file);
        write(&mut out)?;
        let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        if sync {
            file.sync_all()?;
        }
        fs::rename(tmp, path)
    });
    if result.is_err() {
        let _ = fs::remove_file(tmp);
    }
    result
}

/// Removes the `.NAME.part` files (see [`temp_path`]) that a killed run
/// left in `dir`. Only for a directory this process alone writes (under
/// the batch lock, or a build's book directory). Returns how many.
pub fn remove_stale_parts(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let is_part = name.starts_with('.') && name.ends_with(".part");
        if is_part
            && entry.file_type().is_ok_and(|t| t.is_file())
            && fs::remove_file(entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    if removed > 0 {
        tracing::info!(dir = %dir.display(), removed, "removed unfinished files of an earlier run");
    }
    removed
}

/// Opens (creating it and its folder) the lock file at `path`.
fn open_lock(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

/// Takes an exclusive advisory lock (`flock`) on `path`, waiting for it;
/// released when the returned file is dropped or the process ends.
pub fn lock(path: &Path) -> io::Result<File> {
    let file = open_lock(path)?;
    file.lock()?;
    Ok(file)
}

/// [`lock`] without waiting: `None` while another holder has it.
pub fn try_lock(path: &Path) -> io::Result<Option<File>> {
    let file = open_lock(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

/// An exclusive lock file that holds its holder's process id, for the
/// message another process prints when it finds the lock taken.
#[derive(Debug)]
pub struct PidLock {
    file: File,
    path: PathBuf,
    /// Whether the file is removed (while still locked) on release.
    remove: bool,
}

/// What [`PidLock::try_acquire`] found.
#[derive(Debug)]
pub enum TryPidLock {
    Taken(PidLock),
    /// Held elsewhere; the holder's process id when it wrote one.
    Busy(Option<u32>),
}

impl PidLock {
    /// Takes the lock at `path` without waiting and writes this process's
    /// id into it. With `remove` the file is deleted on release, so a lock
    /// won on a file its holder deleted meanwhile is taken again on the
    /// new file.
    pub fn try_acquire(path: &Path, remove: bool) -> io::Result<TryPidLock> {
        use std::os::unix::fs::MetadataExt;
        loop {
            let Some(mut file) = try_lock(path)? else {
                let holder = fs::read_to_string(path)
                    .ok()
                    .and_then(|s| s.trim().parse::<u32>().ok());
                return Ok(TryPidLock::Busy(holder));
            };
            if remove {
                let same = match (file.metadata(), fs::metadata(path)) {
                    (Ok(held), Ok(named)) => held.ino() == named.ino() && held.dev() == named.dev(),
                    _ => false,
                };
                if !same {
                    continue;
                }
            }
            file.set_len(0)?;
            writeln!(file, "{}", std::process::id())?;
            return Ok(TryPidLock::Taken(PidLock {
                file,
                path: path.to_owned(),
                remove,
            }));
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// ` (pid N)` for a busy lock's message, or nothing when its holder wrote
/// no id.
pub fn holder_note(pid: Option<u32>) -> String {
    pid.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
}

impl Drop for PidLock {
    fn drop(&mut self) {
        if self.remove {
            let _ = fs::remove_file(&self.path);
        } else {
            let _ = self.file.set_len(0);
        }
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_is_written_in_place_not_replaced() {
        let null = Path::new("/dev/null");
        let is_device = || {
            use std::os::unix::fs::FileTypeExt;
            fs::metadata(null).is_ok_and(|m| m.file_type().is_char_device())
        };
        if !is_device() {
            eprintln!("skipped: /dev/null is not a character device here");
            return;
        }
        assert!(is_special(null));
        write_atomic(null, b"bytes").unwrap();
        write_atomic_synced(null, b"bytes").unwrap();
        write_atomic_with(null, |e| e, |mut w| w.write_all(b"bytes")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("t");
        fs::write(&tmp, b"encoded").unwrap();
        commit(&tmp, null).unwrap();
        assert!(!tmp.exists());
        assert!(is_device(), "/dev/null was replaced");
        assert!(!null.with_file_name(".null.part").exists());
        // Regular files and missing ones still go through a temporary file.
        let f = dir.path().join("f");
        assert!(!is_special(&f));
        write_atomic(&f, b"x").unwrap();
        assert!(!is_special(&f));
        assert_eq!(fs::read(&f).unwrap(), b"x");
    }

    #[test]
    fn failed_writes_leave_neither_the_file_nor_a_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        write_atomic(&path, b"old").unwrap();
        let failed: Result<(), io::Error> =
            write_atomic_with(&path, |e| e, |_| Err(io::Error::other("no")));
        assert!(failed.is_err());
        assert_eq!(fs::read(&path).unwrap(), b"old");
        write_atomic_shared(&path, b"new").unwrap();
        write_atomic_synced(&dir.path().join("b.txt"), b"b").unwrap();
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert!(write_atomic(&dir.path().join("no/such/dir/c"), b"c").is_err());
    }

    #[test]
    fn a_held_lock_is_refused_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/x.lock");
        let held = lock(&path).unwrap();
        assert!(try_lock(&path).unwrap().is_none());
        drop(held);
        assert!(try_lock(&path).unwrap().is_some());
    }

    #[test]
    fn stale_parts_are_removed_and_other_files_kept() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(temp_path(&dir.path().join("0001.wav")), b"half").unwrap();
        fs::write(dir.path().join("0002.wav"), b"whole").unwrap();
        assert_eq!(remove_stale_parts(dir.path()), 1);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
