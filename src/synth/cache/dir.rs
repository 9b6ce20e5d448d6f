//! The directory store: entries as files under `DIR/ab/abcd….wav`, each
//! written to a temporary file and renamed into place.

use std::fs;
use std::path::{Path, PathBuf};

use super::CacheKey;
use super::entry::read_clip;
use crate::audio::AudioClip;

/// Where the entry for `key` lives in the cache directory `dir`.
pub(super) fn entry_path(dir: &Path, key: &CacheKey) -> PathBuf {
    dir.join(&key.as_str()[..2])
        .join(format!("{}.wav", key.as_str()))
}

/// The clip stored for `key` in `dir`, if present and readable (an
/// unreadable entry is removed and counts as a miss).
pub(super) fn get(dir: &Path, key: &CacheKey) -> Option<AudioClip> {
    let path = entry_path(dir, key);
    let bytes = fs::read(&path).ok()?;
    match read_clip(&bytes) {
        Ok(clip) => Some(clip),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "dropping unreadable cache entry");
            let _ = fs::remove_file(&path);
            None
        }
    }
}

/// Whether `dir` holds an entry for `key` (without reading it).
pub(super) fn contains(dir: &Path, key: &CacheKey) -> bool {
    entry_path(dir, key).is_file()
}

/// Writes an encoded entry into the cache directory `dir`: to a temporary
/// file, renamed into place.
pub(super) fn write_entry(dir: &Path, key: &CacheKey, bytes: &[u8]) -> std::io::Result<()> {
    let path = entry_path(dir, key);
    let dir = path.parent().expect("cache paths have a parent");
    fs::create_dir_all(dir)?;
    // No fsync: a killed process cannot lose written data, and an entry
    // damaged by a power loss fails the length check and is dropped.
    crate::fsutil::write_atomic_shared(&path, bytes)
}

/// Number of entries in `dir`.
pub(super) fn len(dir: &Path) -> usize {
    let Ok(dirs) = fs::read_dir(dir) else {
        return 0;
    };
    dirs.flatten()
        .filter_map(|d| fs::read_dir(d.path()).ok())
        .flat_map(|files| files.flatten())
        .filter(|f| f.path().extension().is_some_and(|e| e == "wav"))
        .count()
}

/// Removes temporary entry files that a killed process left in `dir` (see
/// [`is_stale_temp`]). Returns how many were removed.
pub(super) fn remove_stale_temps(dir: &Path) -> usize {
    let Ok(shards) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for shard in shards.flatten() {
        let Ok(entries) = fs::read_dir(shard.path()) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !name.ends_with(".tmp") {
                continue;
            }
            let age = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .unwrap_or_default();
            if is_stale_temp(&name, age) && fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
        }
    }
    if removed > 0 {
        tracing::info!(cache = %dir.display(), removed, "removed stale temporary cache files");
    }
    removed
}

/// Whether a temporary file left by a process that died can go: its
/// writer (the pid in `.KEY.PID-RAND.tmp`) is gone and it is a minute old,
/// or it is a day old whatever wrote it (another machine sharing the
/// directory).
fn is_stale_temp(name: &str, age: std::time::Duration) -> bool {
    if !(name.starts_with('.') && name.ends_with(".tmp")) {
        return false;
    }
    if age > std::time::Duration::from_secs(86_400) {
        return true;
    }
    let pid = name
        .trim_end_matches(".tmp")
        .rsplit('.')
        .next()
        .and_then(|tail| tail.split('-').next())
        .and_then(|pid| pid.parse::<i32>().ok());
    let alive = pid.is_some_and(|pid| {
        // SAFETY: signal 0 only checks that the process exists.
        pid > 0
            && (unsafe { libc::kill(pid, 0) } == 0
                || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
    });
    !alive && age > std::time::Duration::from_secs(60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::cache::tests::req;
    use crate::synth::cache::{Cache, CacheKey};

    #[test]
    fn round_trips_exactly_and_drops_broken_entries() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let key = CacheKey::new("x", &req("一", 1.0));
        assert!(cache.get(&key).is_none());
        let clip = AudioClip::new(vec![0.0, 0.123_456_7, -0.9], 24000);
        cache.put(&key, &clip).unwrap();
        assert_eq!(cache.get(&key), Some(clip.clone()));
        // Standard WAV that other tools (and hound) read.
        let reader = hound::WavReader::open(entry_path(dir.path(), &key)).unwrap();
        assert_eq!(reader.spec().sample_format, hound::SampleFormat::Float);
        let samples: Vec<f32> = reader.into_samples().map(Result::unwrap).collect();
        assert_eq!(samples, clip.samples);
        assert_eq!(cache.len(), 1);
        // No temporary files are left behind.
        let sub = dir.path().join(&key.as_str()[..2]);
        assert_eq!(fs::read_dir(&sub).unwrap().count(), 1);
        // A hand-damaged entry is dropped, not trusted.
        let full = fs::read(entry_path(dir.path(), &key)).unwrap();
        fs::write(entry_path(dir.path(), &key), &full[..full.len() - 2]).unwrap();
        assert!(cache.get(&key).is_none());
        assert_eq!(cache.len(), 0);
    }
}
