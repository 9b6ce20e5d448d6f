//! One run per job at a time, also across processes: an exclusive advisory
//! lock (`flock`) on a file in the book's state directory. The operating
//! system drops it when the process ends, however it ends.

use std::path::{Path, PathBuf};

use crate::fsutil::{PidLock, TryPidLock};

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
    #[error("cannot lock {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A held job lock, released on drop.
#[derive(Debug)]
pub struct JobLock(PidLock);

impl JobLock {
    /// Takes the lock at `path` without waiting.
    pub fn acquire(path: &Path, job: &str) -> Result<JobLock, LockError> {
        match PidLock::try_acquire(path, false) {
            Ok(TryPidLock::Taken(lock)) => Ok(JobLock(lock)),
            Ok(TryPidLock::Busy(pid)) => Err(LockError::Busy {
                job: job.to_owned(),
                path: path.to_owned(),
                holder: pid.map(|pid| format!(" (pid {pid})")).unwrap_or_default(),
            }),
            Err(source) => Err(LockError::Io {
                path: path.to_owned(),
                source,
            }),
        }
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/lock");
        let first = JobLock::acquire(&path, "novel").unwrap();
        let err = JobLock::acquire(&path, "novel").unwrap_err();
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
        assert!(JobLock::acquire(&path, "novel").is_ok());
    }
}
