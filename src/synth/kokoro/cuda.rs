//! The GPU path: which device the neural voice runs on and why, and the
//! CUDA 13 / cuDNN 9 libraries the CUDA provider needs, found without
//! `LD_LIBRARY_PATH`.
//!
//! `libonnxruntime_providers_cuda.so` has no RUNPATH: its `DT_NEEDED`
//! libraries (`libcudart.so.13`, `libcublas.so.13`, `libcublasLt.so.13`,
//! `libcurand.so.10`, `libcuda.so.1`) and the ones ONNX Runtime opens by
//! name later (cuDNN 9, cuFFT, NVRTC) are resolved by the dynamic loader,
//! which matches a name against the libraries already loaded before it
//! searches the path. So tingshu loads each of them first, by absolute
//! path with `RTLD_GLOBAL`, from the directories in [`library_dirs`];
//! the driver's `libcuda.so.1` comes from the system.

use std::path::{Path, PathBuf};

use super::Device;
use super::files::KokoroFiles;

/// Directories of CUDA/cuDNN libraries already on the machine (for example
/// a PyTorch environment's `site-packages/nvidia`), `:`-separated; searched
/// after the ones the installer wrote.
pub const LIBS_ENV: &str = "TINGSHU_CUDA_LIBS";

/// The libraries loaded before the provider, by the start of their names
/// (any version), in dependency order. cuDNN's sub-libraries are not among
/// them: `libcudnn.so.9` opens them itself from its own folder (they carry
/// `$ORIGIN` RUNPATHs, as the `nvidia-*` wheels' other libraries do).
const PRELOAD: &[&str] = &[
    "libcudart.so.",
    "libnvrtc-builtins.so.",
    "libnvrtc.so.",
    "libcublasLt.so.",
    "libcublas.so.",
    "libcurand.so.",
    "libcufft.so.",
    "libcudnn.so.",
];

/// Where the neural voice runs and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceChoice {
    /// `"cpu"` or `"cuda"`.
    pub device: &'static str,
    pub reason: String,
}

/// Decides the device for `setting` from what is installed, without
/// loading the provider: `Err` (the reason) when `cuda` was asked for and
/// cannot be had.
pub fn choose(files: &KokoroFiles, setting: Device) -> Result<DeviceChoice, String> {
    if setting == Device::Cpu {
        return Ok(DeviceChoice {
            device: "cpu",
            reason: "device = cpu".into(),
        });
    }
    let missing = if !files.gpu_runtime.is_file() || !files.cuda_provider().is_file() {
        Some(format!(
            "no CUDA provider installed ({} missing; install it with TINGSHU_GPU=1 scripts/install-kokoro.sh)",
            if files.gpu_runtime.is_file() {
                files.cuda_provider()
            } else {
                files.gpu_runtime.clone()
            }
            .display()
        ))
    } else {
        driver()
            .err()
            .map(|e| format!("no NVIDIA driver (libcuda.so.1: {e})"))
    };
    match (missing, setting) {
        (None, _) => Ok(DeviceChoice {
            device: "cuda",
            reason: format!(
                "device = {} and the CUDA provider and driver are installed",
                name(setting)
            ),
        }),
        (Some(why), Device::Cuda) => Err(why),
        (Some(why), _) => Ok(DeviceChoice {
            device: "cpu",
            reason: format!("device = auto and {why}"),
        }),
    }
}

fn name(setting: Device) -> &'static str {
    match setting {
        Device::Auto => "auto",
        Device::Cpu => "cpu",
        Device::Cuda => "cuda",
    }
}

/// Loads the NVIDIA driver's user-space library (kept loaded).
fn driver() -> Result<(), String> {
    static DRIVER: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    DRIVER
        .get_or_init(|| {
            // SAFETY: libcuda's initializers have no preconditions; it is
            // never unloaded.
            let lib =
                unsafe { libloading::Library::new("libcuda.so.1") }.map_err(|e| e.to_string())?;
            std::mem::forget(lib);
            Ok(())
        })
        .clone()
}

/// The directories searched for the CUDA libraries: the installer's
/// (`onnxruntime-gpu/cuda`), then each of [`LIBS_ENV`] with its `*/lib`
/// subdirectories (the layout of the `nvidia-*` wheels).
pub fn library_dirs(files: &KokoroFiles) -> Vec<PathBuf> {
    let mut dirs = vec![files.gpu_runtime.with_file_name("cuda")];
    if let Some(var) = std::env::var_os(LIBS_ENV) {
        for dir in std::env::split_paths(&var).filter(|d| !d.as_os_str().is_empty()) {
            dirs.push(dir.clone());
            let mut subs: Vec<PathBuf> = std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .map(|e| e.path().join("lib"))
                .filter(|p| p.is_dir())
                .collect();
            subs.sort();
            dirs.extend(subs);
        }
    }
    dirs.retain(|d| d.is_dir());
    dirs
}

/// The libraries to load before the provider: the first of each name in
/// `dirs`, in the order of `PRELOAD`.
pub fn libraries(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut found: Vec<(usize, String, PathBuf)> = Vec::new();
    for dir in dirs {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in entries {
            let Some(file) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let Some(rank) = PRELOAD.iter().position(|p| file.starts_with(p)) else {
                continue;
            };
            if found.iter().any(|(_, n, _)| n == file) {
                continue;
            }
            found.push((rank, file.to_owned(), path));
        }
    }
    found.sort_by_key(|(rank, _, _)| *rank);
    found.into_iter().map(|(_, _, p)| p).collect()
}

/// Loads the CUDA libraries (once per process) so the provider finds them.
/// Libraries that need another not yet loaded are tried again after the
/// rest; what still fails is reported.
pub fn preload(files: &KokoroFiles) -> Result<usize, String> {
    static DONE: std::sync::OnceLock<Result<usize, String>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        driver().map_err(|e| format!("no NVIDIA driver (libcuda.so.1: {e})"))?;
        let dirs = library_dirs(files);
        let mut pending = libraries(&dirs);
        if !pending
            .iter()
            .any(|p| p.to_string_lossy().contains("libcudart.so"))
        {
            return Err(format!(
                "no CUDA 13 runtime (libcudart.so.13) in {} (TINGSHU_GPU=1 scripts/install-kokoro.sh, or set {LIBS_ENV})",
                dirs.iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(":")
            ));
        }
        let mut loaded = 0;
        let mut last_error = String::new();
        loop {
            let before = pending.len();
            pending.retain(|path| match load_global(path) {
                Ok(()) => {
                    loaded += 1;
                    false
                }
                Err(e) => {
                    last_error = format!("{}: {e}", path.display());
                    true
                }
            });
            if pending.is_empty() || pending.len() == before {
                break;
            }
        }
        if !pending.is_empty() {
            return Err(format!("cannot load a CUDA library: {last_error}"));
        }
        tracing::debug!(loaded, "CUDA libraries loaded");
        Ok(loaded)
    })
    .clone()
}

fn load_global(path: &Path) -> Result<(), String> {
    // SAFETY: CUDA's libraries run only their own initializers on load;
    // they stay loaded for the life of the process.
    let lib = unsafe {
        libloading::os::unix::Library::open(
            Some(path),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
        )
    }
    .map_err(|e| e.to_string())?;
    std::mem::forget(lib);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_without_a_provider_is_refused_and_auto_falls_back() {
        let dir = tempfile::tempdir().unwrap();
        let files = KokoroFiles::locate(Some(dir.path()));
        let err = choose(&files, Device::Cuda).unwrap_err();
        assert!(err.starts_with("no CUDA provider installed"), "{err}");
        assert!(err.contains("libonnxruntime.so.1.31.1 missing"), "{err}");
        let auto = choose(&files, Device::Auto).unwrap();
        assert_eq!(auto.device, "cpu");
        assert!(
            auto.reason
                .starts_with("device = auto and no CUDA provider installed"),
            "{}",
            auto.reason
        );
        assert_eq!(choose(&files, Device::Cpu).unwrap().device, "cpu");
    }

    #[test]
    fn libraries_are_ordered_by_dependency_and_found_once() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        for name in [
            "libcudnn.so.9",
            "libcudnn_ops.so.9",
            "libnvrtc.alt.so.13",
            "libcublas.so.13",
            "libcublasLt.so.13",
            "libcudart.so.13",
            "libnvblas.so.13",
            "libcudart.so",
        ] {
            std::fs::write(a.path().join(name), b"").unwrap();
        }
        std::fs::write(b.path().join("libcudart.so.13"), b"").unwrap();
        std::fs::write(b.path().join("libcurand.so.10"), b"").unwrap();
        let libs = libraries(&[a.path().to_owned(), b.path().to_owned()]);
        let names: Vec<String> = libs
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "libcudart.so.13",
                "libcublasLt.so.13",
                "libcublas.so.13",
                "libcurand.so.10",
                "libcudnn.so.9"
            ]
        );
        assert!(libs[0].starts_with(a.path()));
    }
}
