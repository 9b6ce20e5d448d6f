//! One run per job at a time, also across processes: an exclusive advisory
//! lock (`flock`) on a file in the book's state directory. The operating
//! system drops it when the process ends, however it ends.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

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
pub struct JobLock {
    file: File,
    path: PathBuf,
}

impl JobLock {
    /// Takes the lock at `path` without waiting.
    pub fn acquire(path: &Path, job: &str) -> Result<JobLock, LockError> {
        let io = |source| LockError::Io {
            path: path.to_owned(),
            source,
        };
        let Some(mut file) = crate::fsutil::try_lock(path).map_err(io)? else {
            let holder = std::fs::read_to_string(path)
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok())
                .map(|pid| format!(" (pid {pid})"))
                .unwrap_or_default();
            return Err(LockError::Busy {
                job: job.to_owned(),
                path: path.to_owned(),
                holder,
            });
        };
        // Record the holder for the message another process prints.
        file.set_len(0).map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(JobLock {
            file,
            path: path.to_owned(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for JobLock {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
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
