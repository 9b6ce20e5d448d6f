//! ONNX Runtime's optimized graph of the model, kept in the data directory
//! so a cold start loads it instead of optimizing the model again (measured
//! here: 1.3 s → 0.5 s to create a session).
//!
//! The file is `cache/kokoro-<device>-<key>-<digest>.onnx`: `key` is a
//! hash of what changes the optimized graph (the model's sha256, the
//! runtime version, the device, the optimization level and the CPU: level-3
//! graphs hold layout choices for the CPU they were made on), `digest` the
//! first 16 hex digits of the file's own sha256. It is written to a
//! temporary name and renamed, so a reader never sees half a file; a file
//! whose bytes do not match its digest (bit rot, a truncated copy) or that
//! ONNX Runtime cannot load is logged, removed and made again — never an
//! error.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::files::MODEL_SHA256;

/// Where the optimized graph for one (model, runtime, device) lives.
#[derive(Debug, Clone)]
pub struct GraphCache {
    dir: PathBuf,
    /// `kokoro-<device>-`: files of this device with another key are stale.
    family: String,
    /// `kokoro-<device>-<key>-`.
    prefix: String,
}

impl GraphCache {
    /// The cache under `root` (the data directory) for the model run by
    /// ONNX Runtime `runtime_version` on `device` at graph optimization
    /// `level`.
    pub fn new(root: &Path, runtime_version: &str, device: &str, level: &str) -> GraphCache {
        let mut hasher = Sha256::new();
        for part in [
            MODEL_SHA256,
            runtime_version,
            device,
            level,
            std::env::consts::ARCH,
            &cpu_flags(),
        ] {
            hasher.update(part.as_bytes());
            hasher.update(b"\n");
        }
        let key = hex::encode(hasher.finalize());
        let family = format!("kokoro-{device}-");
        GraphCache {
            dir: root.join("cache"),
            prefix: format!("{family}{}-", &key[..16]),
            family,
        }
    }

    /// The cached graph, when there is one (not yet checked).
    pub fn find(&self) -> Option<PathBuf> {
        std::fs::read_dir(&self.dir)
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&self.prefix) && n.ends_with(".onnx"))
            })
    }

    /// Whether `path`'s bytes match the digest in its name.
    pub fn intact(path: &Path) -> Result<(), String> {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let want = name
            .strip_suffix(".onnx")
            .and_then(|n| n.rsplit('-').next())
            .unwrap_or("");
        let digest = super::files::sha256_file(path).map_err(|e| e.to_string())?;
        if want.len() == 16 && digest.starts_with(want) {
            Ok(())
        } else {
            Err(format!("sha256 {digest} does not match its name"))
        }
    }

    /// Removes a cached graph that cannot be used, saying why.
    pub fn discard(path: &Path, why: &str) {
        tracing::warn!(
            path = %path.display(),
            problem = why,
            "optimized graph cache ignored and rebuilt"
        );
        let _ = std::fs::remove_file(path);
    }

    /// A temporary path for ONNX Runtime to write the optimized graph to,
    /// or `None` when the cache directory cannot be made.
    pub fn temporary(&self) -> Option<PathBuf> {
        std::fs::create_dir_all(&self.dir).ok()?;
        Some(
            self.dir
                .join(format!(".{}tmp-{}.onnx", self.prefix, std::process::id())),
        )
    }

    /// Moves the graph ONNX Runtime wrote at `tmp` to its place under its
    /// digest, and removes this device's graphs of other keys (another
    /// runtime or model). Failures only cost the next start its speed.
    pub fn publish(&self, tmp: &Path) {
        let digest = match super::files::sha256_file(tmp) {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "optimized graph not cached");
                let _ = std::fs::remove_file(tmp);
                return;
            }
        };
        let path = self
            .dir
            .join(format!("{}{}.onnx", self.prefix, &digest[..16]));
        if let Err(e) = std::fs::rename(tmp, &path) {
            tracing::warn!(error = %e, path = %path.display(), "optimized graph not cached");
            let _ = std::fs::remove_file(tmp);
            return;
        }
        tracing::debug!(path = %path.display(), "optimized graph cached");
        for stale in std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
        {
            let name = stale.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with(&self.family) && !name.starts_with(&self.prefix) {
                let _ = std::fs::remove_file(&stale);
            }
        }
    }
}

/// The CPU's feature flags (`/proc/cpuinfo`): a graph optimized for one
/// CPU may use instructions another lacks.
fn cpu_flags() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("flags"))
                .map(str::to_owned)
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_follows_the_runtime_and_the_device() {
        let root = Path::new("/data");
        let a = GraphCache::new(root, "1.32.0", "cpu", "level3");
        assert_eq!(
            a.prefix,
            GraphCache::new(root, "1.32.0", "cpu", "level3").prefix
        );
        for b in [
            GraphCache::new(root, "1.31.1", "cpu", "level3"),
            GraphCache::new(root, "1.32.0", "cuda", "level3"),
            GraphCache::new(root, "1.32.0", "cpu", "level1"),
        ] {
            assert_ne!(a.prefix, b.prefix);
        }
        assert!(a.prefix.starts_with("kokoro-cpu-"), "{}", a.prefix);
    }

    #[test]
    fn a_file_is_intact_only_when_its_bytes_match_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let cache = GraphCache::new(dir.path(), "1.32.0", "cpu", "level3");
        let tmp = cache.temporary().unwrap();
        std::fs::write(&tmp, b"graph bytes").unwrap();
        cache.publish(&tmp);
        let found = cache.find().unwrap();
        assert!(!tmp.exists());
        GraphCache::intact(&found).unwrap();
        std::fs::write(&found, b"graph bytez").unwrap();
        assert!(GraphCache::intact(&found).is_err());
        GraphCache::discard(&found, "test");
        assert!(cache.find().is_none());
    }
}
