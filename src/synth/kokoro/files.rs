//! Where the neural voice's files live, and the checks that they are the
//! files tingshu was built for.
//!
//! `scripts/install-kokoro.sh` puts them in the data directory
//! ([`data_dir`]):
//!
//! ```text
//! kokoro/kokoro-v1.0.int8.onnx   the model (92 MB, sha256 below)
//! kokoro/vocab.json              phoneme → token id, checked against ours
//! kokoro/voices/zf_xiaobei.bin   voice packs, float32 [510, 1, 256] each
//! onnxruntime/libonnxruntime.so.1.32.0
//! onnxruntime-gpu/libonnxruntime.so.1.31.1          optional (TINGSHU_GPU=1): the
//! onnxruntime-gpu/libonnxruntime_providers_cuda.so  CUDA build, its provider and
//! onnxruntime-gpu/cuda/lib*.so*                      the CUDA 13 / cuDNN 9 libraries
//! cache/kokoro-cpu-…/graph.onnx  the optimized graph and its weights, packed
//! cache/kokoro-cpu-…/graph.data  (182 MB, [`super::graph_cache`])
//! ```
//!
//! The model and the runtime libraries are checked by size and sha256
//! before they are used: the runtime before it is loaded (a truncated
//! library would crash the process), the model on every load (alongside
//! ONNX Runtime reading it).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::pack::{Blend, PACK_FLOATS, Style};

/// sha256 of `kokoro-v1.0.int8.onnx` (the upstream kokoro-onnx release file).
pub const MODEL_SHA256: &str = "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb";
/// Its size in bytes.
pub const MODEL_SIZE: u64 = 92_361_271;
/// The model's file name.
pub const MODEL_FILE: &str = "kokoro-v1.0.int8.onnx";
/// The ONNX Runtime library the installer puts beside it.
pub const RUNTIME_FILE: &str = "libonnxruntime.so.1.32.0";
/// onnxruntime-gpu's core library (the newest GPU build, for CUDA 13).
pub const GPU_RUNTIME_FILE: &str = "libonnxruntime.so.1.31.1";
/// Its CUDA execution provider, loaded by the core from the same folder.
pub const CUDA_PROVIDER_FILE: &str = "libonnxruntime_providers_cuda.so";
/// The runtime libraries the installer writes, with their size and sha256
/// (PyPI onnxruntime 1.32.0 and onnxruntime-gpu 1.31.1, manylinux x86_64):
/// checked before a library is loaded.
pub const RUNTIME_FILES: &[(&str, &str, u64, &str)] = &[
    (
        "onnxruntime",
        RUNTIME_FILE,
        34_824_680,
        "6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f",
    ),
    (
        "onnxruntime",
        "libonnxruntime_providers_shared.so",
        14_632,
        "8ef51f6bf2c621fc129f625b22241fa6f9a5870bc08eaf2fdd279169ec40d09a",
    ),
    (
        "onnxruntime-gpu",
        GPU_RUNTIME_FILE,
        29_421_832,
        "5104254339ecadae808da771bd0b63b240f0dbd466514234905e54372435c303",
    ),
    (
        "onnxruntime-gpu",
        "libonnxruntime_providers_shared.so",
        14_632,
        "086ec1d5388f64153d9c63470d126693db9a182c8ce236d3a1119068471b8a0d",
    ),
    (
        "onnxruntime-gpu",
        CUDA_PROVIDER_FILE,
        284_014_752,
        "d5290158115fa5569a3fe8f1f4037ee9b0e86658a96e52f852bbb7039aa88137",
    ),
];
/// The oldest ONNX Runtime minor version (1.x) accepted.
pub const MIN_RUNTIME_MINOR: u32 = 20;
/// How to install what is missing.
pub const INSTALL_HINT: &str = "install it with scripts/install-kokoro.sh";

/// The Mandarin voice packs (npm kokoro-js 1.2.1, `voices/*.bin`) and their
/// sha256: female `zf_*`, male `zm_*`.
pub const PACKS: &[(&str, &str)] = &[
    (
        "zf_xiaobei",
        "5dde6e1c9c4f12c8b327bc29c0cee361a23b52b952c04636858ba637ec66e640",
    ),
    (
        "zf_xiaoni",
        "08892b62a39af0a615cd0581238db7e19e44c578e8fa0bfd0e586e93327d9cba",
    ),
    (
        "zf_xiaoxiao",
        "03adb5d5e3ddd88b047954e974e651cb0a4b524c985057e5d872e962c7be1169",
    ),
    (
        "zf_xiaoyi",
        "bc1555c5c486099196ac254bae5e0bb543c121952a3092f50b7d8724f1bc36b3",
    ),
    (
        "zm_yunjian",
        "de48a00bdbf3649f07162269a2b6e0513604389bfac8a2e6c75cb34b323ad6fa",
    ),
    (
        "zm_yunxi",
        "7243892fb4e560d47014090ddf010f8b8b790f3c6b029ff82b2ac06aa4e27c8b",
    ),
    (
        "zm_yunxia",
        "6b2b8fc15b3df19a368daebe5c581c7fabf433ee5b8a17ffd6b3d723cff8936d",
    ),
    (
        "zm_yunyang",
        "261e2c89470534dbbcb8fd98b8fdc495ec94063d9bb6c8277f7be43cccba3f42",
    ),
];

/// What is wrong with the neural voice's files. Every message names the
/// file and the fix.
#[derive(Debug, thiserror::Error)]
pub enum KokoroError {
    #[error("{}: missing ({INSTALL_HINT})", path.display())]
    Missing { path: PathBuf },
    #[error("{}: {problem} (reinstall it with scripts/install-kokoro.sh)", path.display())]
    Corrupt { path: PathBuf, problem: String },
    /// A file of the GPU path (`onnxruntime-gpu/`).
    #[error("{}: {problem} (reinstall it with TINGSHU_GPU=1 scripts/install-kokoro.sh)", path.display())]
    CorruptGpu { path: PathBuf, problem: String },
    #[error("{}: cannot be read: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {problem} ({INSTALL_HINT})", path.display())]
    Runtime { path: PathBuf, problem: String },
    #[error("voice '{name}': no such Kokoro voice pack (known: {known})")]
    UnknownVoice { name: String, known: String },
    #[error("voice '{spec}': {problem}")]
    BadBlend { spec: String, problem: String },
    /// `device = "cuda"` cannot be honoured: why.
    #[error("{0}")]
    Device(String),
    #[error("{0}")]
    Engine(String),
}

/// tingshu's data directory: `$TINGSHU_DATA`, else `$XDG_DATA_HOME/tingshu`,
/// else `~/.local/share/tingshu`.
pub fn data_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("TINGSHU_DATA") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = var("XDG_DATA_HOME") {
        return PathBuf::from(dir).join("tingshu");
    }
    let home = var("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from);
    home.join(".local/share/tingshu")
}

/// The paths of the neural voice's files.
#[derive(Debug, Clone, PartialEq)]
pub struct KokoroFiles {
    pub root: PathBuf,
    pub model: PathBuf,
    pub vocab: PathBuf,
    pub voices: PathBuf,
    pub runtime: PathBuf,
    /// onnxruntime-gpu's build of the same runtime, with its CUDA provider
    /// (`TINGSHU_GPU=1 scripts/install-kokoro.sh`), when installed.
    pub gpu_runtime: PathBuf,
}

impl KokoroFiles {
    /// The files under `root`, or under [`data_dir`].
    pub fn locate(root: Option<&Path>) -> KokoroFiles {
        let root = root.map_or_else(data_dir, Path::to_owned);
        KokoroFiles {
            model: root.join("kokoro").join(MODEL_FILE),
            vocab: root.join("kokoro/vocab.json"),
            voices: root.join("kokoro/voices"),
            runtime: root.join("onnxruntime").join(RUNTIME_FILE),
            gpu_runtime: root.join("onnxruntime-gpu").join(GPU_RUNTIME_FILE),
            root,
        }
    }

    /// Whether everything is in place (without the checksum work).
    pub fn installed(&self) -> bool {
        self.model.is_file()
            && self.vocab.is_file()
            && self.runtime.is_file()
            && PACKS.iter().any(|(name, _)| self.pack(name).is_file())
    }

    pub fn pack(&self, name: &str) -> PathBuf {
        self.voices.join(format!("{name}.bin"))
    }

    /// The packs that are installed.
    pub fn installed_packs(&self) -> Vec<&'static str> {
        PACKS
            .iter()
            .map(|&(name, _)| name)
            .filter(|name| self.pack(name).is_file())
            .collect()
    }

    /// The CUDA provider beside the GPU runtime.
    pub fn cuda_provider(&self) -> PathBuf {
        self.gpu_runtime.with_file_name(CUDA_PROVIDER_FILE)
    }

    /// Checks the model (its size: the sha256 is checked on every load,
    /// alongside loading), the vocabulary and the runtime library (size
    /// and sha256, then loadable and a supported version).
    pub fn check(&self) -> Result<(), KokoroError> {
        self.check_model_size()?;
        self.check_vocab()?;
        check_runtime_file(&self.runtime)?;
        runtime_version(&self.runtime)?;
        Ok(())
    }

    /// Checks the model's sha256 (92 MB: about 0.3 s of one core, run on a
    /// thread of its own while ONNX Runtime reads the same file).
    pub fn check_model_digest(&self) -> Result<(), KokoroError> {
        let digest = sha256_file(&self.model)?;
        if digest != MODEL_SHA256 {
            return Err(KokoroError::Corrupt {
                path: self.model.clone(),
                problem: format!("sha256 {digest}, expected {MODEL_SHA256}"),
            });
        }
        Ok(())
    }

    fn check_model_size(&self) -> Result<(), KokoroError> {
        let meta = std::fs::metadata(&self.model).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => KokoroError::Missing {
                path: self.model.clone(),
            },
            _ => KokoroError::Read {
                path: self.model.clone(),
                source: e,
            },
        })?;
        if meta.len() != MODEL_SIZE {
            return Err(KokoroError::Corrupt {
                path: self.model.clone(),
                problem: format!("{} bytes, expected {MODEL_SIZE}", meta.len()),
            });
        }
        Ok(())
    }

    /// Every symbol the phoneme mapping emits has the same id in the
    /// installed vocabulary.
    fn check_vocab(&self) -> Result<(), KokoroError> {
        let text = std::fs::read_to_string(&self.vocab).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => KokoroError::Missing {
                path: self.vocab.clone(),
            },
            _ => KokoroError::Read {
                path: self.vocab.clone(),
                source: e,
            },
        })?;
        let corrupt = |problem: String| KokoroError::Corrupt {
            path: self.vocab.clone(),
            problem,
        };
        let doc: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| corrupt(format!("not JSON: {e}")))?;
        let map = doc
            .get("vocab")
            .and_then(|v| v.as_object())
            .ok_or_else(|| corrupt("no \"vocab\" object".into()))?;
        for &(symbol, id) in super::phonemes::VOCAB {
            let theirs = map.get(&symbol.to_string()).and_then(|v| v.as_i64());
            if theirs != Some(id) {
                let found = theirs.map_or_else(|| "no id".to_owned(), |t| format!("id {t}"));
                return Err(corrupt(format!(
                    "symbol '{symbol}' has {found}, the phoneme mapping uses {id}"
                )));
            }
        }
        Ok(())
    }

    /// Checks that every pack of `blend` is installed and intact.
    pub fn check_blend(&self, blend: &Blend) -> Result<(), KokoroError> {
        self.load_blend(blend).map(|_| ())
    }

    /// Loads (and checks) the packs of `blend` and mixes them.
    pub fn load_blend(&self, blend: &Blend) -> Result<Style, KokoroError> {
        let mut mixed = vec![0.0f32; PACK_FLOATS];
        for (name, weight) in &blend.parts {
            let Some(&(_, sha)) = PACKS.iter().find(|(n, _)| n == name) else {
                return Err(KokoroError::UnknownVoice {
                    name: name.clone(),
                    known: PACKS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
                });
            };
            let path = self.pack(name);
            let bytes = std::fs::read(&path).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => KokoroError::Missing { path: path.clone() },
                _ => KokoroError::Read {
                    path: path.clone(),
                    source: e,
                },
            })?;
            let digest = hex::encode(Sha256::digest(&bytes));
            if digest != sha {
                return Err(KokoroError::Corrupt {
                    path,
                    problem: format!("sha256 {digest}, expected {sha}"),
                });
            }
            for (m, chunk) in mixed.iter_mut().zip(bytes.chunks_exact(4)) {
                *m += weight * f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            }
        }
        Ok(Style::new(mixed))
    }
}

/// Checks a runtime library the installer wrote against its recorded size
/// and sha256 ([`RUNTIME_FILES`]), before anything loads it: a truncated
/// or altered library is an install error, not a crash. A library of
/// another name (not one the installer writes) is only checked to exist.
pub fn check_runtime_file(path: &Path) -> Result<(), KokoroError> {
    static CHECKED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut checked = CHECKED.lock().unwrap_or_else(|p| p.into_inner());
    if checked.iter().any(|p| p == path) {
        return Ok(());
    }
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => KokoroError::Missing {
            path: path.to_owned(),
        },
        _ => KokoroError::Read {
            path: path.to_owned(),
            source: e,
        },
    })?;
    let dir = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|d| d.to_str())
        .unwrap_or_default();
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if let Some(&(_, _, size, sha)) = RUNTIME_FILES
        .iter()
        .find(|(d, n, _, _)| *d == dir && *n == name)
    {
        let corrupt = |problem: String| corrupt_runtime(path, dir, problem);
        if meta.len() != size {
            return Err(corrupt(format!("{} bytes, expected {size}", meta.len())));
        }
        let digest = sha256_file(path)?;
        if digest != sha {
            return Err(corrupt(format!("sha256 {digest}, expected {sha}")));
        }
    }
    checked.push(path.to_owned());
    Ok(())
}

fn corrupt_runtime(path: &Path, dir: &str, problem: String) -> KokoroError {
    let path = path.to_owned();
    if dir == "onnxruntime-gpu" {
        KokoroError::CorruptGpu { path, problem }
    } else {
        KokoroError::Corrupt { path, problem }
    }
}

/// Checks only the size of a runtime library in [`RUNTIME_FILES`] (for
/// the 284 MB CUDA provider, whose hashing would cost a second a start).
pub fn check_runtime_size(path: &Path) -> Result<(), KokoroError> {
    let len = std::fs::metadata(path)
        .map_err(|_| KokoroError::Missing {
            path: path.to_owned(),
        })?
        .len();
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    match RUNTIME_FILES
        .iter()
        .find(|(d, n, _, _)| *d == "onnxruntime-gpu" && *n == name)
    {
        Some(&(_, _, size, _)) if size != len => Err(corrupt_runtime(
            path,
            "onnxruntime-gpu",
            format!("{len} bytes, expected {size}"),
        )),
        _ => Ok(()),
    }
}

/// The sha256 of the file at `path`, in hex.
pub fn sha256_file(path: &Path) -> Result<String, KokoroError> {
    use std::io::Read;
    let read_err = |source| KokoroError::Read {
        path: path.to_owned(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(read_err)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(read_err)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// The version string of the ONNX Runtime library at `path`, checked to be
/// 1.x with x ≥ [`MIN_RUNTIME_MINOR`]. The library stays loaded (it is the
/// one inference uses).
pub fn runtime_version(path: &Path) -> Result<String, KokoroError> {
    static LOADED: std::sync::Mutex<Vec<(PathBuf, String)>> = std::sync::Mutex::new(Vec::new());
    let mut loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, v)) = loaded.iter().find(|(p, _)| p == path) {
        return Ok(v.clone());
    }
    let problem = |problem: String| KokoroError::Runtime {
        path: path.to_owned(),
        problem,
    };
    if !path.is_file() {
        return Err(KokoroError::Missing {
            path: path.to_owned(),
        });
    }
    // SAFETY: loading ONNX Runtime runs its static initializers, which have
    // no preconditions; the library is never unloaded (leaked below).
    let lib = unsafe { libloading::Library::new(path) }
        .map_err(|e| problem(format!("cannot be loaded: {e}")))?;
    // SAFETY: `OrtGetApiBase` takes no arguments and returns a pointer to a
    // static table whose `GetVersionString` returns a static C string.
    let version = unsafe {
        let get: libloading::Symbol<unsafe extern "system" fn() -> *const ort::sys::OrtApiBase> =
            lib.get(b"OrtGetApiBase")
                .map_err(|_| problem("is not ONNX Runtime (no OrtGetApiBase)".into()))?;
        let base = get();
        if base.is_null() {
            return Err(problem("OrtGetApiBase returned nothing".into()));
        }
        let s = ((*base).GetVersionString)();
        std::ffi::CStr::from_ptr(s).to_string_lossy().into_owned()
    };
    let minor = version
        .strip_prefix("1.")
        .and_then(|rest| rest.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    if minor.is_none_or(|m| m < MIN_RUNTIME_MINOR) {
        return Err(problem(format!(
            "ONNX Runtime {version}; tingshu needs 1.{MIN_RUNTIME_MINOR} or later (1.32 is installed by the script)"
        )));
    }
    std::mem::forget(lib);
    loaded.push((path.to_owned(), version.clone()));
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_installer_writes_the_runtime_files_checked_here() {
        let script = include_str!("../../../scripts/install-kokoro.sh");
        for (dir, name, _, sha) in RUNTIME_FILES {
            assert!(
                script.contains(sha),
                "{dir}/{name}: sha256 {sha} is not the installer's"
            );
        }
        let version = GPU_RUNTIME_FILE.trim_start_matches("libonnxruntime.so.");
        assert!(script.contains(&format!("onnxruntime-gpu=={version}")));
        assert!(script.contains(&format!("$gpu/{GPU_RUNTIME_FILE}")));
    }

    #[test]
    fn a_runtime_file_of_the_wrong_size_is_refused_before_loading() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("onnxruntime").join(RUNTIME_FILE);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, vec![0u8; 4096]).unwrap();
        let err = check_runtime_file(&path).unwrap_err().to_string();
        assert!(err.contains("4096 bytes, expected 34824680"), "{err}");
        let gpu = dir.path().join("onnxruntime-gpu").join(CUDA_PROVIDER_FILE);
        std::fs::create_dir_all(gpu.parent().unwrap()).unwrap();
        std::fs::write(&gpu, b"short").unwrap();
        let err = check_runtime_size(&gpu).unwrap_err().to_string();
        assert!(err.contains("5 bytes, expected 284014752"), "{err}");
        assert!(
            err.contains("TINGSHU_GPU=1 scripts/install-kokoro.sh"),
            "{err}"
        );
    }
}
