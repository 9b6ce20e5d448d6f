//! Content-addressed cache of synthesized chunks.
//!
//! The key hashes everything that changes the audio: the backend's
//! fingerprint (engine and audio-relevant settings), the voice settings, the
//! spoken text and pinyin, and [`frontend::VERSION`]. Entries are 32-bit
//! float WAV files under `DIR/ab/abcd….wav`, written to a temporary file and
//! renamed into place, so a killed run never leaves a half-written entry.
//!
//! The same entries can live in an S3-compatible bucket instead
//! (`s3://bucket/prefix`, through the `object_store` crate), so that
//! `tingshu build` and queue workers on many machines share one cache. An
//! object is written in one PUT, so readers never see half an entry either.

use std::fmt;
use std::fs;
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
        }
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

    /// Stores `clip` under `key` atomically.
    pub fn put(&self, key: &CacheKey, clip: &AudioClip) -> std::io::Result<()> {
        let bytes = encode_clip(clip)?;
        match &self.location {
            Location::Dir(dir) => {
                let path = Cache::path(dir, key);
                let dir = path.parent().expect("cache paths have a parent");
                fs::create_dir_all(dir)?;
                let tmp = dir.join(format!(
                    ".{}.{}-{}.tmp",
                    key.0,
                    std::process::id(),
                    fastrand::u32(..)
                ));
                // No fsync: a killed process cannot lose written data, and an
                // entry damaged by a power loss fails the length check and is
                // dropped.
                let result = fs::File::create(&tmp)
                    .and_then(|mut f| f.write_all(&bytes))
                    .and_then(|()| fs::rename(&tmp, &path));
                if result.is_err() {
                    let _ = fs::remove_file(&tmp);
                }
                result
            }
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

/// A mono 32-bit float WAV (format 3) in one piece.
fn encode_clip(clip: &AudioClip) -> std::io::Result<Vec<u8>> {
    let data_len = u32::try_from(clip.samples.len() * 4)
        .map_err(|_| std::io::Error::other("clip too long for a WAV file"))?;
    let mut bytes = Vec::with_capacity(44 + data_len as usize);
    bytes.extend_from_slice(b"RIFF");
    bytes.extend_from_slice(&(36 + data_len).to_le_bytes());
    bytes.extend_from_slice(b"WAVEfmt ");
    bytes.extend_from_slice(&16u32.to_le_bytes());
    bytes.extend_from_slice(&3u16.to_le_bytes()); // IEEE float
    bytes.extend_from_slice(&1u16.to_le_bytes()); // mono
    bytes.extend_from_slice(&clip.sample_rate.to_le_bytes());
    bytes.extend_from_slice(&(clip.sample_rate * 4).to_le_bytes());
    bytes.extend_from_slice(&4u16.to_le_bytes()); // block align
    bytes.extend_from_slice(&32u16.to_le_bytes());
    bytes.extend_from_slice(b"data");
    bytes.extend_from_slice(&data_len.to_le_bytes());
    for s in &clip.samples {
        bytes.extend_from_slice(&s.to_le_bytes());
    }
    Ok(bytes)
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
        || u16_at(20) != 3
        || u16_at(22) != 1
        || u16_at(34) != 32
    {
        return Err("not a tingshu cache entry".into());
    }
    let data_len = u32_at(40) as usize;
    if bytes.len() != 44 + data_len || !data_len.is_multiple_of(4) {
        return Err(format!(
            "truncated: {} of {} data bytes",
            bytes.len().saturating_sub(44),
            data_len
        ));
    }
    let samples = bytes[44..]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
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
