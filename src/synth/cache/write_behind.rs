//! Write-behind for a directory cache: entries queued in memory and written
//! by a thread at idle priority, so on a busy machine file creation waits
//! for a free core instead of taking one from synthesis. The queue is
//! bounded ([`PENDING_BYTES`]): on a machine so busy that the idle thread
//! never runs, the caller writes the oldest entries itself, so memory does
//! not grow with the machine's load.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::CacheKey;
use super::dir::write_entry;

/// Bytes of entries that may wait in memory for the writer thread; beyond
/// them `queue` writes in the caller's thread. (Without a bound, a 3-hour
/// chapter rendered beside three busy processes held all its 485 MB of
/// clips here: an idle-priority thread does not run on a full machine.)
pub(super) const PENDING_BYTES: usize = 16 << 20;

/// Entries waiting to be written by the background thread of a directory
/// cache. Dropping it writes what is left and ends the thread.
pub(super) struct WriteBehind {
    dir: PathBuf,
    shared: Arc<Pending>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

#[derive(Default)]
struct Pending {
    state: Mutex<PendingState>,
    /// Signalled when work arrives or the cache is dropped.
    work: Condvar,
    /// Signalled when an entry has been written.
    written: Condvar,
}

#[derive(Default)]
struct PendingState {
    /// Encoded entries not yet in the directory, readable meanwhile.
    entries: HashMap<CacheKey, Arc<Vec<u8>>>,
    /// Keys in the order they were stored.
    queue: VecDeque<CacheKey>,
    /// Bytes of the entries in `entries`.
    bytes: usize,
    stop: bool,
}

impl fmt::Debug for WriteBehind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteBehind").finish_non_exhaustive()
    }
}

impl WriteBehind {
    /// Starts the writer thread for the cache directory `dir`.
    pub(super) fn start(dir: &Path) -> std::io::Result<WriteBehind> {
        let shared = Arc::new(Pending::default());
        let thread = {
            let shared = Arc::clone(&shared);
            let dir = dir.to_owned();
            std::thread::Builder::new()
                .name("tingshu-cache-writer".into())
                .spawn(move || shared.run(&dir))?
        };
        Ok(WriteBehind {
            dir: dir.to_owned(),
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Queues the encoded entry `bytes` under `key`.
    /// Past [`PENDING_BYTES`] waiting, writes the oldest entries in this
    /// thread until they are back under it.
    pub(super) fn queue(&self, key: &CacheKey, bytes: Vec<u8>) {
        let mut state = self.shared.lock();
        let len = bytes.len();
        match state.entries.insert(key.clone(), Arc::new(bytes)) {
            None => state.queue.push_back(key.clone()),
            Some(old) => state.bytes -= old.len(),
        }
        state.bytes += len;
        let over = state.bytes > PENDING_BYTES;
        drop(state);
        self.shared.work.notify_one();
        if over {
            while self.shared.lock().bytes > PENDING_BYTES && self.shared.write_one(&self.dir) {}
        }
    }

    /// Bytes of the entries waiting to be written.
    #[cfg(test)]
    pub(super) fn pending_bytes(&self) -> usize {
        self.shared.lock().bytes
    }

    /// The encoded entry for `key` waiting to be written, if any.
    pub(super) fn pending(&self, key: &CacheKey) -> Option<Arc<Vec<u8>>> {
        self.shared.lock().entries.get(key).map(Arc::clone)
    }

    /// Waits until every entry queued so far is in the directory, writing
    /// queued ones in this thread (at its priority) meanwhile.
    pub(super) fn flush(&self) {
        let pending = &self.shared;
        while pending.write_one(&self.dir) {}
        let mut state = pending.lock();
        while !state.entries.is_empty() {
            state = pending
                .written
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Pending {
    fn lock(&self) -> MutexGuard<'_, PendingState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes the oldest queued entry, if any; returns whether it did.
    fn write_one(&self, dir: &Path) -> bool {
        let Some((key, bytes)) = self.take() else {
            return false;
        };
        if let Err(e) = write_entry(dir, &key, &bytes) {
            tracing::warn!(cache = %dir.display(), error = %e, "cannot store in cache");
        }
        self.written_out(key, &bytes);
        true
    }

    /// The oldest queued entry, off the queue but still readable.
    fn take(&self) -> Option<(CacheKey, Arc<Vec<u8>>)> {
        let mut state = self.lock();
        let key = state.queue.pop_front()?;
        let bytes = Arc::clone(&state.entries[&key]);
        Some((key, bytes))
    }

    /// `bytes` of `key` are on disk: the entry leaves memory, unless the
    /// key was stored again meanwhile (other bytes), which then go back on
    /// the queue to be written in their turn.
    fn written_out(&self, key: CacheKey, bytes: &Arc<Vec<u8>>) {
        let mut state = self.lock();
        match state.entries.get(&key) {
            Some(now) if Arc::ptr_eq(now, bytes) => {
                state.bytes -= bytes.len();
                state.entries.remove(&key);
            }
            Some(_) => state.queue.push_back(key),
            None => {}
        }
        drop(state);
        self.written.notify_all();
    }

    /// The background thread: writes entries as they come, at idle priority.
    fn run(&self, dir: &Path) {
        lower_priority();
        loop {
            if self.write_one(dir) {
                continue;
            }
            let state = self.lock();
            if state.stop && state.queue.is_empty() {
                return;
            }
            if state.queue.is_empty() {
                drop(self.work.wait(state).unwrap_or_else(|e| e.into_inner()));
            }
        }
    }
}

/// Makes this thread run only when a core would otherwise be idle
/// (`SCHED_IDLE`); where that is refused it keeps its priority.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: changes only the calling thread's (tid 0) policy.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    }
}

impl Drop for WriteBehind {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.work.notify_all();
        let thread = self
            .thread
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{PENDING_BYTES, WriteBehind};
    use crate::audio::AudioClip;
    use crate::synth::cache::tests::req;
    use crate::synth::cache::{Cache, CacheKey};

    /// A write-behind whose writer thread never runs: only callers write.
    fn without_writer(dir: &std::path::Path) -> WriteBehind {
        WriteBehind {
            dir: dir.to_owned(),
            shared: std::sync::Arc::default(),
            thread: std::sync::Mutex::new(None),
        }
    }

    /// A machine so busy that the idle-priority writer never runs: the
    /// queue stays bounded because the caller writes past the bound, and
    /// every entry is on disk or still readable.
    #[test]
    fn a_writer_that_never_runs_does_not_let_memory_grow() {
        let dir = tempfile::tempdir().unwrap();
        let behind = without_writer(dir.path());
        let entry = 3 << 20;
        let keys: Vec<CacheKey> = (0..20)
            .map(|i| CacheKey::new("x", &req(&format!("第{i}章"), 1.0)))
            .collect();
        for (i, key) in keys.iter().enumerate() {
            behind.queue(key, vec![i as u8; entry]);
            assert!(
                behind.pending_bytes() <= PENDING_BYTES,
                "{} bytes wait after entry {i}",
                behind.pending_bytes()
            );
        }
        // 60 MiB were stored: most went to disk in this thread.
        let written = keys
            .iter()
            .filter(|k| crate::synth::cache::dir::contains(dir.path(), k))
            .count();
        assert!(written >= 20 - PENDING_BYTES / entry, "{written} on disk");
        for key in &keys {
            assert!(
                behind.pending(key).is_some()
                    || crate::synth::cache::dir::contains(dir.path(), key)
            );
        }
    }

    /// A key stored again while its first bytes are being written: the
    /// second bytes are written too, not dropped with the first.
    #[test]
    fn a_key_stored_again_while_being_written_is_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let behind = without_writer(dir.path());
        let key = CacheKey::new("x", &req("又一遍", 1.0));
        let encode = |c: &AudioClip| crate::synth::cache::entry::encode_clip(c).unwrap();
        let first = encode(&AudioClip::from_i16(&[1, 2, 3], 22050));
        let second = encode(&AudioClip::from_i16(&[4, 5, 6, 7], 22050));
        behind.queue(&key, first.clone());
        // The writer takes the first bytes and writes them …
        let (taken, bytes) = behind.shared.take().unwrap();
        crate::synth::cache::dir::write_entry(dir.path(), &taken, &bytes).unwrap();
        // … while the same key is stored again …
        behind.queue(&key, second.clone());
        // … and then finishes the first write.
        behind.shared.written_out(taken, &bytes);
        assert_eq!(behind.pending(&key).as_deref(), Some(&second));
        assert_eq!(behind.pending_bytes(), second.len());
        behind.flush();
        assert_eq!(behind.pending_bytes(), 0);
        assert!(behind.pending(&key).is_none());
        let on_disk = Cache::new(dir.path());
        assert_eq!(
            on_disk.get(&key),
            Some(AudioClip::from_i16(&[4, 5, 6, 7], 22050))
        );
    }

    #[test]
    fn entries_written_behind_are_served_at_once_and_land_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path()).write_behind().unwrap();
        let keys: Vec<CacheKey> = (0..40)
            .map(|i| CacheKey::new("x", &req(&format!("第{i}句"), 1.0)))
            .collect();
        let clip = |i: usize| AudioClip::from_i16(&[i as i16, -(i as i16), 7], 22050);
        for (i, key) in keys.iter().enumerate() {
            cache.put(key, &clip(i)).unwrap();
            // Readable before the writer has got to it.
            assert_eq!(cache.get(key), Some(clip(i)));
            assert!(cache.contains(key));
        }
        cache.flush();
        let on_disk = Cache::new(dir.path());
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(on_disk.get(key), Some(clip(i)), "entry {i}");
        }
        // Dropping the last handle writes what is still queued.
        let late = CacheKey::new("x", &req("最后", 1.0));
        let copy = cache.clone();
        copy.put(&late, &clip(99)).unwrap();
        drop(cache);
        drop(copy);
        assert_eq!(on_disk.get(&late), Some(clip(99)));
        assert_eq!(on_disk.len(), 41);
    }
}
