//! Content-addressed cache of synthesized chunks.
//!
//! The key hashes everything that changes the audio: the backend's
//! fingerprint (engine and audio-relevant settings), the voice settings, the
//! spoken text and pinyin, and [`frontend::VERSION`](crate::frontend::VERSION).
//! Entries are WAV files under `DIR/ab/abcd….wav` (16-bit when that holds
//! the clip exactly, else 32-bit float), written to a temporary file and
//! renamed into place, so a killed run never leaves a half-written entry.
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
//!
//! `key.rs` holds the key, `entry.rs` the WAV format of an entry, `dir.rs`
//! the directory store, `write_behind.rs` its writer thread and `object.rs`
//! the object-store cache.

mod dir;
mod entry;
mod key;
mod object;
mod write_behind;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use object_store::ObjectStore;

use crate::audio::AudioClip;
use entry::{encode_clip, read_clip};
pub use key::CacheKey;
use object::ObjectCache;
use write_behind::WriteBehind;

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

#[derive(Debug, Clone)]
enum Location {
    Dir(PathBuf),
    Object(Arc<ObjectCache>),
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
        self.behind = Some(Arc::new(WriteBehind::start(dir)?));
        Ok(self)
    }

    /// Waits until every entry stored so far is in the directory, writing
    /// queued ones in this thread (at its priority) meanwhile.
    pub fn flush(&self) {
        if let Some(behind) = &self.behind {
            behind.flush();
        }
    }

    /// The encoded entry for `key` waiting to be written, if any.
    fn pending(&self, key: &CacheKey) -> Option<Arc<Vec<u8>>> {
        self.behind.as_ref()?.pending(key)
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
        Ok(Cache {
            behind: None,
            location: Location::Object(Arc::new(ObjectCache::new(store, prefix, url)?)),
        })
    }

    /// The directory, for a directory cache.
    pub fn dir(&self) -> Option<&Path> {
        match &self.location {
            Location::Dir(dir) => Some(dir),
            Location::Object(_) => None,
        }
    }

    /// The cached clip, if present and readable (an unreadable entry is
    /// removed and counts as a miss).
    pub fn get(&self, key: &CacheKey) -> Option<AudioClip> {
        if let Some(bytes) = self.pending(key) {
            return read_clip(&bytes).ok();
        }
        match &self.location {
            Location::Dir(dir) => dir::get(dir, key),
            Location::Object(object) => object.get(key),
        }
    }

    /// Whether an entry for `key` exists (without reading it).
    pub fn contains(&self, key: &CacheKey) -> bool {
        if self.pending(key).is_some() {
            return true;
        }
        match &self.location {
            Location::Dir(dir) => dir::contains(dir, key),
            Location::Object(object) => object.contains(key),
        }
    }

    /// Stores `clip` under `key` atomically (queued, with
    /// [`Cache::write_behind`]).
    pub fn put(&self, key: &CacheKey, clip: &AudioClip) -> std::io::Result<()> {
        let bytes = encode_clip(clip)?;
        match &self.location {
            Location::Dir(dir) => match &self.behind {
                Some(behind) => {
                    behind.queue(key, bytes);
                    Ok(())
                }
                None => dir::write_entry(dir, key, &bytes),
            },
            Location::Object(object) => object.put(key, bytes),
        }
    }

    /// Number of entries (for tests and reports).
    pub fn len(&self) -> usize {
        self.flush();
        match &self.location {
            Location::Dir(dir) => dir::len(dir),
            Location::Object(object) => object.len(),
        }
    }

    /// Whether the cache holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes temporary entry files that a killed process left behind: a
    /// minute old with their writer gone, or a day old whatever wrote them
    /// (another machine sharing the directory). Returns how many were
    /// removed.
    pub fn remove_stale_temps(&self) -> usize {
        match &self.location {
            Location::Dir(dir) => dir::remove_stale_temps(dir),
            Location::Object(_) => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{SynthRequest, VoiceSettings};

    /// A request for `text` in one voice at `speed`.
    pub(super) fn req(text: &str, speed: f32) -> SynthRequest {
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
