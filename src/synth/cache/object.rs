//! The object-store cache: the same entries under a prefix in an
//! S3-compatible bucket (through the `object_store` crate), so that
//! `tingshu build` and queue workers on many machines share one cache. An
//! object is written in one PUT, so readers never see half an entry.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use object_store::ObjectStore;
use object_store::path::Path as ObjectPath;

use super::entry::read_clip;
use super::{CacheError, CacheKey};
use crate::audio::AudioClip;

/// Entries in an object store. Its calls are async; the cache's API is not
/// (callers use it from blocking threads), so they run on a small runtime of
/// its own and the caller waits for them without entering any runtime.
pub(super) struct ObjectCache {
    store: Arc<dyn ObjectStore>,
    prefix: ObjectPath,
    /// `s3://bucket/prefix` (never credentials), for messages.
    pub(super) url: String,
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
    /// Entries under `prefix` in `store`; `url` names it in messages.
    pub(super) fn new(
        store: Arc<dyn ObjectStore>,
        prefix: &str,
        url: &str,
    ) -> Result<ObjectCache, CacheError> {
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
        Ok(ObjectCache {
            store,
            prefix,
            url: url.to_owned(),
            runtime: Some(runtime),
        })
    }

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
            .join(&key.as_str()[..2])
            .join(format!("{}.wav", key.as_str()))
    }

    /// The clip stored for `key`, if present and readable (an unreadable
    /// object is deleted and counts as a miss).
    pub(super) fn get(&self, key: &CacheKey) -> Option<AudioClip> {
        let path = self.path(key);
        let store = Arc::clone(&self.store);
        let at = path.clone();
        let fetched = self.block(async move {
            let got = store
                .get_opts(&at, object_store::GetOptions::default())
                .await?;
            got.bytes().await
        })?;
        let bytes = match fetched {
            Ok(bytes) => bytes,
            Err(object_store::Error::NotFound { .. }) => return None,
            Err(e) => {
                tracing::warn!(cache = %self.url, error = %e, "cannot read cache entry");
                return None;
            }
        };
        match read_clip(&bytes) {
            Ok(clip) => Some(clip),
            Err(e) => {
                tracing::warn!(cache = %self.url, object = %path, error = %e, "dropping unreadable cache entry");
                let store = Arc::clone(&self.store);
                self.block(async move {
                    let gone = futures::stream::once(async move { Ok(path) }).boxed();
                    store.delete_stream(gone).count().await
                });
                None
            }
        }
    }

    /// Whether an object for `key` exists (without reading it).
    pub(super) fn contains(&self, key: &CacheKey) -> bool {
        let store = Arc::clone(&self.store);
        let path = self.path(key);
        self.block(async move {
            let head = object_store::GetOptions::new().with_head(true);
            store.get_opts(&path, head).await.is_ok()
        })
        .unwrap_or(false)
    }

    /// Stores the encoded entry `bytes` under `key` in one PUT.
    pub(super) fn put(&self, key: &CacheKey, bytes: Vec<u8>) -> std::io::Result<()> {
        let store = Arc::clone(&self.store);
        let path = self.path(key);
        self.block(async move {
            store
                .put_opts(&path, bytes.into(), object_store::PutOptions::default())
                .await
        })
        .ok_or_else(|| std::io::Error::other("the cache's runtime stopped"))?
        .map(|_| ())
        .map_err(std::io::Error::other)
    }

    /// Number of entries under the prefix.
    pub(super) fn len(&self) -> usize {
        let store = Arc::clone(&self.store);
        let prefix = self.prefix.clone();
        self.block(async move {
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

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::synth::cache::Cache;
    use crate::synth::cache::dir::entry_path;
    use crate::synth::cache::entry::encode_clip;
    use crate::synth::cache::tests::req;

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
            fs::read(entry_path(dir.path(), &key)).unwrap()
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
}
