//! Content-addressed cache of synthesized chunks.
//!
//! The key hashes everything that changes the audio: the backend's
//! fingerprint (engine and audio-relevant settings), the voice settings, the
//! spoken text and pinyin, and [`frontend::VERSION`]. Entries are WAV files
//! under `DIR/ab/abcd….wav` (16-bit when that holds the clip exactly, else
//! 32-bit float), written to a temporary file and renamed into place, so a
//! killed run never leaves a half-written entry.
//!
//! A directory cache can store entries behind the caller's back
//! ([`Cache::write_behind`]): a thread at idle priority writes them, so on a
//! busy machine file creation waits for a free core instead of taking one
//! from synthesis; until written, entries are served from memory.
//!
//! The same entries can live in an S3-compatible bucket instead
//! (`s3://bucket/prefix`, through the `object_store` crate), so that
//! `tingshu build` and queue workers on many machines share one cache. An
//! object is written in one PUT, so readers never see half an entry either.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::fs;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use futures::StreamExt;
use object_store::ObjectStore;
use object_store::path::Path as ObjectPath;
use sha2::{Digest, Sha256};

use super::SynthRequest;
use crate::audio::AudioClip;
use crate::frontend;

/// A cache key: lowercase hex SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey(String);

impl CacheKey {
    /// The key of `req` sent to a backend with `fingerprint`.
    pub fn new(fingerprint: &str, req: &SynthRequest) -> CacheKey {
        let mut h = Sha256::new();
        let v = &req.voice;
        let fields = [
            format!("frontend={}", frontend::VERSION),
            format!("backend={fingerprint}"),
            format!("voice={}", v.voice),
            format!("speed={}", v.speed),
            format!("pitch={:?}", v.pitch),
            format!("style={:?}", v.style),
            format!("role={:?}", v.role),
            format!("text={}", req.text),
            format!("pinyin={}", req.pinyin),
        ];
        for field in fields {
            // Length-prefixed so that no two field lists hash alike.
            h.update((field.len() as u64).to_le_bytes());
            h.update(field.as_bytes());
        }
        CacheKey(hex::encode(h.finalize()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why a cache location could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("cache {url}: {message} (use a directory or s3://bucket/prefix)")]
    Url { url: String, message: String },
    #[error("cache {url}")]
    Store {
        url: String,
        #[source]
        source: object_store::Error,
    },
    #[error("cache {url}: cannot start its I/O threads")]
    Runtime {
        url: String,
        #[source]
        source: std::io::Error,
    },
}

/// A cache: a directory, or a prefix in an object store.
#[derive(Debug, Clone)]
pub struct Cache {
    location: Location,
    /// Directory writes done by a background thread, when enabled.
    behind: Option<Arc<WriteBehind>>,
}

/// Entries waiting to be written by the background thread of a directory
/// cache. Dropping the last handle writes what is left and ends the thread.
struct WriteBehind {
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
    stop: bool,
}

impl fmt::Debug for WriteBehind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteBehind").finish_non_exhaustive()
    }
}

impl Pending {
    fn lock(&self) -> MutexGuard<'_, PendingState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes the oldest queued entry, if any; returns whether it did.
    fn write_one(&self, dir: &Path) -> bool {
        let (key, bytes) = {
            let mut state = self.lock();
            let Some(key) = state.queue.pop_front() else {
                return false;
            };
            let bytes = Arc::clone(&state.entries[&key]);
            (key, bytes)
        };
        if let Err(e) = write_entry(dir, &key, &bytes) {
            tracing::warn!(cache = %dir.display(), error = %e, "cannot store in cache");
        }
        self.lock().entries.remove(&key);
        self.written.notify_all();
        true
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

#[derive(Debug, Clone)]
enum Location {
    Dir(PathBuf),
    Object(Arc<ObjectCache>),
}

/// Entries in an object store. Its calls are async; the cache's API is not
/// (callers use it from blocking threads), so they run on a small runtime of
/// its own and the caller waits for them without entering any runtime.
struct ObjectCache {
    store: Arc<dyn ObjectStore>,
    prefix: ObjectPath,
    /// `s3://bucket/prefix` (never credentials), for messages.
    url: String,
    runtime: Option<tokio::runtime::Runtime>,
}

impl fmt::Debug for ObjectCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectCache")
            .field("url", &self.url)
            .finish()
    }
}

impl Drop for ObjectCache {
    fn drop(&mut self) {
        // Dropping a runtime inside another one's thread would panic.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl ObjectCache {
    /// Runs `work` on the cache's runtime and waits for its result.
    fn block<T: Send + 'static>(
        &self,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.runtime.as_ref()?.spawn(async move {
            let _ = tx.send(work.await);
        });
        rx.recv().ok()
    }

    fn path(&self, key: &CacheKey) -> ObjectPath {
        self.prefix
            .clone()
            .join(&key.0[..2])
            .join(format!("{}.wav", key.0))
    }
}

impl fmt::Display for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Location::Dir(dir) => write!(f, "{}", dir.display()),
            Location::Object(object) => f.write_str(&object.url),
        }
    }
}

impl Cache {
    /// A cache directory.
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache {
            location: Location::Dir(dir.into()),
            behind: None,
        }
    }

    /// This cache, with [`Cache::put`] into a directory returning once the
    /// entry is queued: a thread at idle priority writes it, and until then
    /// it is served from memory. [`Cache::flush`], or dropping the last
    /// handle, waits for the writes. No effect on an object-store cache.
    pub fn write_behind(mut self) -> std::io::Result<Cache> {
        let Location::Dir(dir) = &self.location else {
            return Ok(self);
        };
        if self.behind.is_some() {
            return Ok(self);
        }
        let shared = Arc::new(Pending::default());
        let thread = {
            let shared = Arc::clone(&shared);
            let dir = dir.clone();
            std::thread::Builder::new()
                .name("tingshu-cache-writer".into())
                .spawn(move || shared.run(&dir))?
        };
        self.behind = Some(Arc::new(WriteBehind {
            shared,
            thread: Mutex::new(Some(thread)),
        }));
        Ok(self)
    }

    /// Waits until every entry stored so far is in the directory, writing
    /// queued ones in this thread (at its priority) meanwhile.
    pub fn flush(&self) {
        let (Some(behind), Location::Dir(dir)) = (&self.behind, &self.location) else {
            return;
        };
        let pending = &behind.shared;
        while pending.write_one(dir) {}
        let mut state = pending.lock();
        while !state.entries.is_empty() {
            state = pending
                .written
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The encoded entry for `key` waiting to be written, if any.
    fn pending(&self, key: &CacheKey) -> Option<Arc<Vec<u8>>> {
        let behind = self.behind.as_ref()?;
        behind.shared.lock().entries.get(key).map(Arc::clone)
    }

    /// A directory path, or `s3://bucket/prefix` for an S3-compatible
    /// bucket: region, endpoint and credentials come from the standard
    /// `AWS_*` environment variables (`AWS_ENDPOINT`, `AWS_ALLOW_HTTP`,
    /// `AWS_ACCESS_KEY_ID`, …); requests are path-style unless
    /// `AWS_VIRTUAL_HOSTED_STYLE_REQUEST=true`.
    pub fn open(location: &Path) -> Result<Cache, CacheError> {
        let text = location.to_string_lossy();
        let Some(rest) = text.strip_prefix("s3://") else {
            if text.contains("://") {
                return Err(CacheError::Url {
                    url: text.into_owned(),
                    message: "unsupported scheme".into(),
                });
            }
            return Ok(Cache::new(location));
        };
        let url = format!("s3://{rest}");
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(CacheError::Url {
                url,
                message: "no bucket name".into(),
            });
        }
        let store = object_store::aws::AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .build()
            .map_err(|source| CacheError::Store {
                url: url.clone(),
                source,
            })?;
        Cache::with_store(Arc::new(store), prefix, &url)
    }

    /// Entries under `prefix` in `store`; `url` names it in messages.
    pub fn with_store(
        store: Arc<dyn ObjectStore>,
        prefix: &str,
        url: &str,
    ) -> Result<Cache, CacheError> {
        let prefix = ObjectPath::parse(prefix.trim_matches('/')).map_err(|e| CacheError::Url {
            url: url.to_owned(),
            message: e.to_string(),
        })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tingshu-cache")
            .enable_all()
            .build()
            .map_err(|source| CacheError::Runtime {
                url: url.to_owned(),
                source,
            })?;
        Ok(Cache {
            behind: None,
            location: Location::Object(Arc::new(ObjectCache {
                store,
                prefix,
                url: url.to_owned(),
                runtime: Some(runtime),
            })),
        })
    }

    /// The directory, for a directory cache.
    pub fn dir(&self) -> Option<&Path> {
        match &self.location {
            Location::Dir(dir) => Some(dir),
            Location::Object(_) => None,
        }
    }

    fn path(dir: &Path, key: &CacheKey) -> PathBuf {
        dir.join(&key.0[..2]).join(format!("{}.wav", key.0))
    }

    /// The cached clip, if present and readable (an unreadable entry is
    /// removed and counts as a miss).
    pub fn get(&self, key: &CacheKey) -> Option<AudioClip> {
        if let Some(bytes) = self.pending(key) {
            return read_clip(&bytes).ok();
        }
        match &self.location {
            Location::Dir(dir) => {
                let path = Cache::path(dir, key);
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
            Location::Object(object) => {
                let path = object.path(key);
                let store = Arc::clone(&object.store);
                let at = path.clone();
                let fetched = object.block(async move {
                    let got = store
                        .get_opts(&at, object_store::GetOptions::default())
                        .await?;
                    got.bytes().await
                })?;
                let bytes = match fetched {
                    Ok(bytes) => bytes,
                    Err(object_store::Error::NotFound { .. }) => return None,
                    Err(e) => {
                        tracing::warn!(cache = %object.url, error = %e, "cannot read cache entry");
                        return None;
                    }
                };
                match read_clip(&bytes) {
                    Ok(clip) => Some(clip),
                    Err(e) => {
                        tracing::warn!(cache = %object.url, object = %path, error = %e, "dropping unreadable cache entry");
                        let store = Arc::clone(&object.store);
                        object.block(async move {
                            let gone = futures::stream::once(async move { Ok(path) }).boxed();
                            store.delete_stream(gone).count().await
                        });
                        None
                    }
                }
            }
        }
    }

    /// Whether an entry for `key` exists (without reading it).
    pub fn contains(&self, key: &CacheKey) -> bool {
        if self.pending(key).is_some() {
            return true;
        }
        match &self.location {
            Location::Dir(dir) => Cache::path(dir, key).is_file(),
            Location::Object(object) => {
                let store = Arc::clone(&object.store);
                let path = object.path(key);
                object
                    .block(async move {
                        let head = object_store::GetOptions::new().with_head(true);
                        store.get_opts(&path, head).await.is_ok()
                    })
                    .unwrap_or(false)
            }
        }
    }

    /// Stores `clip` under `key` atomically (queued, with
    /// [`Cache::write_behind`]).
    pub fn put(&self, key: &CacheKey, clip: &AudioClip) -> std::io::Result<()> {
        let bytes = encode_clip(clip)?;
        match &self.location {
            Location::Dir(dir) => match &self.behind {
                Some(behind) => {
                    let mut state = behind.shared.lock();
                    if state.entries.insert(key.clone(), Arc::new(bytes)).is_none() {
                        state.queue.push_back(key.clone());
                    }
                    drop(state);
                    behind.shared.work.notify_one();
                    Ok(())
                }
                None => write_entry(dir, key, &bytes),
            },
            Location::Object(object) => {
                let store = Arc::clone(&object.store);
                let path = object.path(key);
                object
                    .block(async move {
                        store
                            .put_opts(&path, bytes.into(), object_store::PutOptions::default())
                            .await
                    })
                    .ok_or_else(|| std::io::Error::other("the cache's runtime stopped"))?
                    .map(|_| ())
                    .map_err(std::io::Error::other)
            }
        }
    }

    /// Number of entries (for tests and reports).
    pub fn len(&self) -> usize {
        self.flush();
        match &self.location {
            Location::Dir(dir) => {
                let Ok(dirs) = fs::read_dir(dir) else {
                    return 0;
                };
                dirs.flatten()
                    .filter_map(|d| fs::read_dir(d.path()).ok())
                    .flat_map(|files| files.flatten())
                    .filter(|f| f.path().extension().is_some_and(|e| e == "wav"))
                    .count()
            }
            Location::Object(object) => {
                let store = Arc::clone(&object.store);
                let prefix = object.prefix.clone();
                object
                    .block(async move {
                        store
                            .list(Some(&prefix))
                            .filter(|meta| {
                                let wav = meta
                                    .as_ref()
                                    .is_ok_and(|m| m.location.extension() == Some("wav"));
                                std::future::ready(wav)
                            })
                            .count()
                            .await
                    })
                    .unwrap_or(0)
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
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

impl Cache {
    /// Removes temporary entry files that a killed process left behind
    /// (see [`is_stale_temp`]). Returns how many were removed.
    pub fn remove_stale_temps(&self) -> usize {
        let Location::Dir(dir) = &self.location else {
            return 0;
        };
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
}

/// Writes an encoded entry into the cache directory `dir`: to a temporary
/// file, renamed into place.
fn write_entry(dir: &Path, key: &CacheKey, bytes: &[u8]) -> std::io::Result<()> {
    let path = Cache::path(dir, key);
    let dir = path.parent().expect("cache paths have a parent");
    fs::create_dir_all(dir)?;
    // No fsync: a killed process cannot lose written data, and an entry
    // damaged by a power loss fails the length check and is dropped.
    crate::fsutil::write_atomic_shared(&path, bytes)
}

/// A mono WAV in one piece: 16-bit PCM (format 1) when that holds every
/// sample exactly (espeak-ng's always do), else 32-bit float (format 3).
fn encode_clip(clip: &AudioClip) -> std::io::Result<Vec<u8>> {
    if let Some(bytes) = encode_16_bit(clip)? {
        return Ok(bytes);
    }
    let (mut bytes, start) = wav_with_room(clip, 3, 4)?;
    for (out, s) in bytes[start..].chunks_exact_mut(4).zip(&clip.samples) {
        out.copy_from_slice(&s.to_le_bytes());
    }
    Ok(bytes)
}

/// The 16-bit entry of `clip`, or `None` when some sample is not a 16-bit
/// value. Converts and checks in one pass (a block at a time, so the
/// compiler can vectorize the loop).
fn encode_16_bit(clip: &AudioClip) -> std::io::Result<Option<Vec<u8>>> {
    const BLOCK: usize = 1024;
    let (mut bytes, start) = wav_with_room(clip, 1, 2)?;
    let blocks = bytes[start..]
        .chunks_mut(2 * BLOCK)
        .zip(clip.samples.chunks(BLOCK));
    for (out, samples) in blocks {
        let mut exact = true;
        for (o, &s) in out.chunks_exact_mut(2).zip(samples) {
            let v = s * 32768.0;
            // `as` saturates, so only in-range whole numbers come back equal.
            let i = v as i16;
            exact &= f32::from(i) == v;
            o.copy_from_slice(&i.to_le_bytes());
        }
        if !exact {
            return Ok(None);
        }
    }
    Ok(Some(bytes))
}

/// A WAV header for `clip` in `format` with `width`-byte samples, followed
/// by room for the samples; returns the bytes and where the samples start.
fn wav_with_room(clip: &AudioClip, format: u16, width: u32) -> std::io::Result<(Vec<u8>, usize)> {
    let data_len = u32::try_from(clip.samples.len() as u64 * u64::from(width))
        .ok()
        .filter(|&n| n <= u32::MAX - 36)
        .ok_or_else(|| std::io::Error::other("clip too long for a WAV file"))?;
    let mut bytes = Vec::with_capacity(44 + data_len as usize);
    bytes.extend_from_slice(b"RIFF");
    bytes.extend_from_slice(&(36 + data_len).to_le_bytes());
    bytes.extend_from_slice(b"WAVEfmt ");
    bytes.extend_from_slice(&16u32.to_le_bytes());
    bytes.extend_from_slice(&format.to_le_bytes());
    bytes.extend_from_slice(&1u16.to_le_bytes()); // mono
    bytes.extend_from_slice(&clip.sample_rate.to_le_bytes());
    bytes.extend_from_slice(&(clip.sample_rate * width).to_le_bytes());
    bytes.extend_from_slice(&(width as u16).to_le_bytes()); // block align
    bytes.extend_from_slice(&(width as u16 * 8).to_le_bytes());
    bytes.extend_from_slice(b"data");
    bytes.extend_from_slice(&data_len.to_le_bytes());
    let start = bytes.len();
    bytes.resize(start + data_len as usize, 0);
    Ok((bytes, start))
}

/// Reads what [`encode_clip`] made; anything else is an error.
fn read_clip(bytes: &[u8]) -> Result<AudioClip, String> {
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
    let u32_at =
        |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    if bytes.len() < 44
        || &bytes[0..4] != b"RIFF"
        || &bytes[8..16] != b"WAVEfmt "
        || &bytes[36..40] != b"data"
        || u16_at(22) != 1
    {
        return Err("not a tingshu cache entry".into());
    }
    let width = match (u16_at(20), u16_at(34)) {
        (1, 16) => 2,
        (3, 32) => 4,
        _ => return Err("not a tingshu cache entry".into()),
    };
    let data_len = u32_at(40) as usize;
    if bytes.len() != 44 + data_len || !data_len.is_multiple_of(width) {
        return Err(format!(
            "truncated: {} of {} data bytes",
            bytes.len().saturating_sub(44),
            data_len
        ));
    }
    let data = &bytes[44..];
    let samples = if width == 2 {
        data.chunks_exact(2)
            .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
            .collect()
    } else {
        data.chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    };
    Ok(AudioClip::new(samples, u32_at(24)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::VoiceSettings;

    fn req(text: &str, speed: f32) -> SynthRequest {
        SynthRequest {
            text: text.into(),
            pinyin: String::new(),
            voice: VoiceSettings {
                name: "n".into(),
                voice: "alloy".into(),
                speed,
                ..Default::default()
            },
        }
    }

    #[test]
    fn key_changes_with_what_changes_audio() {
        let base = CacheKey::new("openai/tts-1", &req("你好", 1.0));
        assert_eq!(base, CacheKey::new("openai/tts-1", &req("你好", 1.0)));
        assert_ne!(base, CacheKey::new("openai/tts-2", &req("你好", 1.0)));
        assert_ne!(base, CacheKey::new("openai/tts-1", &req("你好！", 1.0)));
        assert_ne!(base, CacheKey::new("openai/tts-1", &req("你好", 1.1)));
        // The voice's name in the voices file does not change the audio.
        let mut renamed = req("你好", 1.0);
        renamed.voice.name = "hero".into();
        assert_eq!(base, CacheKey::new("openai/tts-1", &renamed));
    }

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
        let reader = hound::WavReader::open(Cache::path(dir.path(), &key)).unwrap();
        assert_eq!(reader.spec().sample_format, hound::SampleFormat::Float);
        let samples: Vec<f32> = reader.into_samples().map(Result::unwrap).collect();
        assert_eq!(samples, clip.samples);
        assert_eq!(cache.len(), 1);
        // No temporary files are left behind.
        let sub = dir.path().join(&key.as_str()[..2]);
        assert_eq!(fs::read_dir(&sub).unwrap().count(), 1);
        // A hand-damaged entry is dropped, not trusted.
        let full = fs::read(Cache::path(dir.path(), &key)).unwrap();
        fs::write(Cache::path(dir.path(), &key), &full[..full.len() - 2]).unwrap();
        assert!(cache.get(&key).is_none());
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn sixteen_bit_clips_are_stored_as_sixteen_bit_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let key = CacheKey::new("x", &req("二", 1.0));
        let pcm = [0i16, 1, -1, 12345, -32768, 32767];
        let clip = AudioClip::from_i16(&pcm, 22050);
        cache.put(&key, &clip).unwrap();
        assert_eq!(cache.get(&key), Some(clip));
        let reader = hound::WavReader::open(Cache::path(dir.path(), &key)).unwrap();
        assert_eq!(reader.spec().sample_format, hound::SampleFormat::Int);
        assert_eq!(reader.spec().bits_per_sample, 16);
        let stored: Vec<i16> = reader.into_samples().map(Result::unwrap).collect();
        assert_eq!(stored, pcm);
        // One sample off the 16-bit grid keeps the whole clip in float.
        let mut finer = AudioClip::from_i16(&pcm, 22050);
        finer.samples[1] += 1e-6;
        let key2 = CacheKey::new("x", &req("三", 1.0));
        cache.put(&key2, &finer).unwrap();
        assert_eq!(cache.get(&key2), Some(finer));
        // Also when that sample comes late, after whole blocks fitted.
        let long: Vec<i16> = (0..3000).map(|i| (i * 7 - 10_000) as i16).collect();
        let mut late = AudioClip::from_i16(&long, 22050);
        late.samples[2500] += 1e-6;
        let key3 = CacheKey::new("x", &req("四", 1.0));
        cache.put(&key3, &late).unwrap();
        assert_eq!(cache.get(&key3), Some(late));
        let reader = hound::WavReader::open(Cache::path(dir.path(), &key3)).unwrap();
        assert_eq!(reader.spec().sample_format, hound::SampleFormat::Float);
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

    fn object_bytes(store: &Arc<object_store::memory::InMemory>, path: &str) -> Option<Vec<u8>> {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let path = ObjectPath::parse(path).unwrap();
        runtime.block_on(async {
            let got = store
                .get_opts(&path, object_store::GetOptions::default())
                .await
                .ok()?;
            Some(got.bytes().await.unwrap().to_vec())
        })
    }

    #[test]
    fn object_store_entries_match_directory_entries() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let cache = Cache::with_store(store.clone(), "/books/cache/", "memory://test").unwrap();
        assert_eq!(cache.to_string(), "memory://test");
        assert!(cache.dir().is_none());
        let key = CacheKey::new("x", &req("一", 1.0));
        assert!(!cache.contains(&key));
        assert!(cache.get(&key).is_none());
        assert!(cache.is_empty());
        let clip = AudioClip::new(vec![0.0, 0.5, -0.25], 24000);
        cache.put(&key, &clip).unwrap();
        assert!(cache.contains(&key));
        assert_eq!(cache.get(&key), Some(clip.clone()));
        assert_eq!(cache.len(), 1);
        // Same name and bytes as in a cache directory.
        let dir = tempfile::tempdir().unwrap();
        Cache::new(dir.path()).put(&key, &clip).unwrap();
        let name = format!("books/cache/{}/{}.wav", &key.as_str()[..2], key.as_str());
        assert_eq!(
            object_bytes(&store, &name).unwrap(),
            fs::read(Cache::path(dir.path(), &key)).unwrap()
        );
        // A damaged object is dropped, not trusted.
        let broken = CacheKey::new("x", &req("二", 1.0));
        let bytes = encode_clip(&clip).unwrap();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let path = ObjectPath::parse(format!(
            "books/cache/{}/{}.wav",
            &broken.as_str()[..2],
            broken.as_str()
        ))
        .unwrap();
        runtime
            .block_on(store.put_opts(
                &path,
                bytes[..bytes.len() - 3].to_vec().into(),
                object_store::PutOptions::default(),
            ))
            .unwrap();
        assert!(cache.contains(&broken));
        assert!(cache.get(&broken).is_none());
        assert!(!cache.contains(&broken));
    }

    #[tokio::test]
    async fn object_store_cache_works_inside_a_runtime_and_drops_there() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let cache = Cache::with_store(store, "", "memory://test").unwrap();
        let key = CacheKey::new("y", &req("三", 1.0));
        let clip = AudioClip::new(vec![0.125; 10], 8000);
        cache.put(&key, &clip).unwrap();
        let copy = cache.clone();
        let got = tokio::task::spawn_blocking(move || copy.get(&key))
            .await
            .unwrap();
        assert_eq!(got, Some(clip));
        drop(cache);
    }

    #[test]
    fn cache_locations_are_checked() {
        assert_eq!(
            Cache::open(Path::new("/tmp/c")).unwrap().dir(),
            Some(Path::new("/tmp/c"))
        );
        let err = Cache::open(Path::new("s3://")).unwrap_err().to_string();
        assert!(err.contains("no bucket name"), "{err}");
        let err = Cache::open(Path::new("gs://b/p")).unwrap_err().to_string();
        assert!(err.contains("unsupported scheme"), "{err}");
    }
}
