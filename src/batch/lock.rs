//! One run per job at a time, also across processes: an exclusive advisory
//! lock (`flock`) on a file in the book's state directory. The operating
//! system drops it when the process ends, however it ends. A run also holds
//! the book folder's build lock ([`BUILD_LOCK`]), so that a `tingshu build`
//! into the same folder and a batch run never write there together.

use std::path::{Path, PathBuf};

use crate::fsutil::{PidLock, TryPidLock, holder_note};
use crate::session::book::{BUILD_LOCK, try_lock_book_dir};

/// Why a job's lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "job \"{job}\" is already running in another process{holder} (lock {path} is held); this run skips it"
    )]
    Busy {
        job: String,
        path: PathBuf,
        /// ` (pid N)` when the holder wrote its id.
        holder: String,
    },
    #[error(
        "job \"{job}\": its folder is being rendered by another tingshu process{holder} (lock {path} is held); this run skips it"
    )]
    BookBusy {
        job: String,
        path: PathBuf,
        holder: String,
    },
    #[error("cannot lock {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A held job lock and the book folder's build lock, released on drop.
#[derive(Debug)]
pub struct JobLock {
    job: PidLock,
    _book: PidLock,
}

impl JobLock {
    /// Takes the job's lock in `book_dir`'s state directory, then the
    /// folder's build lock, without waiting.
    pub fn acquire(book_dir: &Path, job: &str) -> Result<JobLock, LockError> {
        let io = |path: PathBuf| move |source| LockError::Io { path, source };
        let path = super::lock_path(book_dir);
        let job_lock = match PidLock::try_acquire(&path, false).map_err(io(path.clone()))? {
            TryPidLock::Taken(lock) => lock,
            TryPidLock::Busy(pid) => {
                return Err(LockError::Busy {
                    job: job.to_owned(),
                    path,
                    holder: holder_note(pid),
                });
            }
        };
        let path = book_dir.join(BUILD_LOCK);
        match try_lock_book_dir(book_dir).map_err(io(path.clone()))? {
            TryPidLock::Taken(book) => Ok(JobLock {
                job: job_lock,
                _book: book,
            }),
            TryPidLock::Busy(pid) => Err(LockError::BookBusy {
                job: job.to_owned(),
                path,
                holder: holder_note(pid),
            }),
        }
    }

    pub fn path(&self) -> &Path {
        self.job.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = JobLock::acquire(dir.path(), "novel").unwrap();
        let err = JobLock::acquire(dir.path(), "novel").unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with("job \"novel\" is already running in another process"),
            "{message}"
        );
        assert!(
            message.contains(&format!("pid {}", std::process::id())),
            "{message}"
        );
        drop(first);
        assert!(JobLock::acquire(dir.path(), "novel").is_ok());
    }

    #[test]
    fn a_build_into_the_folder_makes_the_run_skip_it() {
        let dir = tempfile::tempdir().unwrap();
        let build = match try_lock_book_dir(dir.path()).unwrap() {
            TryPidLock::Taken(lock) => lock,
            TryPidLock::Busy(_) => panic!("build lock busy"),
        };
        let message = JobLock::acquire(dir.path(), "novel")
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with(
                "job \"novel\": its folder is being rendered by another tingshu process"
            ) && message.contains(BUILD_LOCK),
            "{message}"
        );
        // The job's own lock was let go with the refusal.
        drop(build);
        let run = JobLock::acquire(dir.path(), "novel").unwrap();
        assert!(dir.path().join(BUILD_LOCK).exists());
        drop(run);
        assert!(!dir.path().join(BUILD_LOCK).exists());
    }
}
