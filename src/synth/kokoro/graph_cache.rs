//! ONNX Runtime's optimized graph of the model, kept in the data directory
//! so a cold start loads it instead of optimizing the model again (measured
//! here: 1.3 s → 0.5 s to create a session), with the weights already
//! packed the way the CPU kernels read them (0.3 s → 0.2 s: session 16).
//!
//! An entry is the folder `cache/kokoro-<device>-<key>-<digest>/` holding
//! `graph.onnx` (the operations, 1 MB) and `graph.data` (the weights, each
//! as stored and as packed, 181 MB; ONNX Runtime maps it into memory
//! instead of parsing it). `key` is a hash of what changes the optimized
//! graph (the model's sha256, the runtime version, the device, the
//! optimization level and the CPU: level-3 graphs and packed weights hold
//! layout choices for the CPU they were made on), `digest` the first 16
//! hex digits of the entry's XXH3-128 (a check against bit rot and
//! truncated copies, not against tampering: the data directory is the
//! user's own, like the model beside it; sha256 of 182 MB would cost
//! 0.16 s of every start). It is written to a temporary folder and
//! renamed, so a reader never sees half an entry; an entry whose bytes do
//! not match its digest or that ONNX Runtime cannot load is logged,
//! removed and made again — never an error. Nothing writes into a
//! published entry: a process still mapping one that is replaced keeps
//! reading what it mapped.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::files::MODEL_SHA256;

/// The graph's file in an entry.
pub const GRAPH: &str = "graph.onnx";
/// The weights' file in an entry, named inside [`GRAPH`].
pub const DATA: &str = "graph.data";

/// Where the optimized graph for one (model, runtime, device) lives.
#[derive(Debug, Clone)]
pub struct GraphCache {
    dir: PathBuf,
    /// `kokoro-<device>-`: entries of this device with another key are stale.
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

    /// The cached entry, when there is one (not yet checked).
    pub fn find(&self) -> Option<PathBuf> {
        std::fs::read_dir(&self.dir)
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&self.prefix))
                    && p.is_dir()
            })
    }

    /// The graph file of `entry`, the path ONNX Runtime loads.
    pub fn graph(entry: &Path) -> PathBuf {
        entry.join(GRAPH)
    }

    /// The digest of an entry's two files (32 hex digits).
    pub fn digest(entry: &Path) -> std::io::Result<String> {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        let mut buf = vec![0u8; 1 << 20];
        for name in [GRAPH, DATA] {
            let mut file = std::fs::File::open(entry.join(name))?;
            hasher.update(&file.metadata()?.len().to_le_bytes());
            loop {
                let n = file.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
            }
        }
        Ok(format!("{:032x}", hasher.digest128()))
    }

    /// Whether `entry`'s bytes match the digest in its name.
    pub fn intact(entry: &Path) -> Result<(), String> {
        let name = entry.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let want = name.rsplit('-').next().unwrap_or("");
        let digest = GraphCache::digest(entry).map_err(|e| e.to_string())?;
        if want.len() == 16 && digest.starts_with(want) {
            Ok(())
        } else {
            Err(format!("digest {digest} does not match its name"))
        }
    }

    /// Removes a cached entry that cannot be used, saying why.
    pub fn discard(entry: &Path, why: &str) {
        tracing::warn!(
            path = %entry.display(),
            problem = why,
            "optimized graph cache ignored and rebuilt"
        );
        remove(entry);
    }

    /// A fresh temporary folder for ONNX Runtime to write the optimized
    /// graph into ([`GRAPH`] and [`DATA`]), or `None` when it cannot be
    /// made.
    pub fn temporary(&self) -> Option<PathBuf> {
        // Unique in this process too: two backends may load at once.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = self
            .dir
            .join(format!(".{}tmp-{}-{n}", self.prefix, std::process::id()));
        remove(&tmp);
        std::fs::create_dir_all(&tmp).ok()?;
        Some(tmp)
    }

    /// Moves the entry ONNX Runtime wrote at `tmp` to its place under its
    /// digest, and removes this device's entries of other keys (another
    /// runtime or model, or a graph cached by an older tingshu as one
    /// file). Failures only cost the next start its speed.
    pub fn publish(&self, tmp: &Path) {
        let digest = match GraphCache::digest(tmp) {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "optimized graph not cached");
                remove(tmp);
                return;
            }
        };
        let path = self.dir.join(format!("{}{}", self.prefix, &digest[..16]));
        if let Err(e) = std::fs::rename(tmp, &path) {
            tracing::warn!(error = %e, path = %path.display(), "optimized graph not cached");
            remove(tmp);
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
            if name.starts_with(&self.family) && !name.starts_with(&self.prefix)
                || left_by_a_dead_process(name, &self.family)
            {
                remove(&stale);
            }
        }
    }
}

/// Whether `name` is a temporary entry of this device (`.kokoro-cpu-…tmp-PID-N`)
/// whose process is gone (killed while it wrote, 183 MB left behind).
fn left_by_a_dead_process(name: &str, family: &str) -> bool {
    let Some(rest) = name.strip_prefix('.').filter(|r| r.starts_with(family)) else {
        return false;
    };
    let Some((_, tail)) = rest.rsplit_once("tmp-") else {
        return false;
    };
    let pid = tail.split('-').next().and_then(|p| p.parse::<u32>().ok());
    pid.is_some_and(|pid| pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists())
}

/// Removes a file or a folder with what it holds; a missing one is fine.
pub fn remove(path: &Path) {
    if path.is_dir() {
        let _ = std::fs::remove_dir_all(path);
    } else {
        let _ = std::fs::remove_file(path);
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
    fn an_entry_is_intact_only_when_its_bytes_match_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let cache = GraphCache::new(dir.path(), "1.32.0", "cpu", "level3");
        // A graph cached by an older tingshu as one file, and one of
        // another key: both stale once an entry is published.
        std::fs::create_dir_all(dir.path().join("cache")).unwrap();
        let old = dir
            .path()
            .join("cache/kokoro-cpu-0123456789abcdef-0123456789abcdef.onnx");
        std::fs::write(&old, b"old").unwrap();
        // What a killed process left, and what a running one is writing.
        let dead = dir
            .path()
            .join("cache/.kokoro-cpu-0123456789abcdef-tmp-4294967295-0");
        let alive = dir.path().join(format!(
            "cache/.kokoro-cpu-0123456789abcdef-tmp-{}-7",
            std::process::id()
        ));
        std::fs::create_dir_all(&dead).unwrap();
        std::fs::create_dir_all(&alive).unwrap();
        let tmp = cache.temporary().unwrap();
        assert_ne!(cache.temporary().unwrap(), tmp);
        std::fs::write(tmp.join(GRAPH), b"graph").unwrap();
        std::fs::write(tmp.join(DATA), b"weights").unwrap();
        cache.publish(&tmp);
        let found = cache.find().unwrap();
        assert!(!tmp.exists());
        assert!(!old.exists());
        assert!(!dead.exists());
        assert!(alive.exists());
        assert_eq!(GraphCache::graph(&found), found.join("graph.onnx"));
        GraphCache::intact(&found).unwrap();
        // One changed byte in either file, or bytes moved from one file to
        // the other, spoils it.
        std::fs::write(found.join(DATA), b"weightz").unwrap();
        assert!(GraphCache::intact(&found).is_err());
        std::fs::write(found.join(GRAPH), b"graphw").unwrap();
        std::fs::write(found.join(DATA), b"eights").unwrap();
        assert!(GraphCache::intact(&found).is_err());
        std::fs::remove_file(found.join(DATA)).unwrap();
        assert!(GraphCache::intact(&found).is_err());
        GraphCache::discard(&found, "test");
        assert!(cache.find().is_none());
    }
}
