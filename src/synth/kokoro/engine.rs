//! ONNX Runtime sessions running the Kokoro model. A session runs one
//! inference at a time, so the engine keeps one per request in flight and
//! hands them out from a pool.

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

use ort::environment::Environment;
use ort::session::Session;
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use ort::value::Tensor;
use serde::Deserialize;

use super::KokoroConfig;
use super::files::{KokoroError, KokoroFiles};
use super::graph_cache::GraphCache;
use super::pack::{STYLE_DIM, Style};
use super::phonemes::{self, MAX_TOKENS};

/// Where inference runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    /// CUDA when `libonnxruntime_providers_cuda.so` and a GPU load, else CPU.
    #[default]
    Auto,
    Cpu,
    Cuda,
}

/// Sessions in flight on a GPU by default: each has its own CUDA stream,
/// so requests of several chunks and chapters overlap on the device while
/// the CPU prepares the next ones (the CPU's core count says nothing about
/// a GPU once the float graph runs every operation there).
pub const GPU_SESSIONS: usize = 4;

/// (sessions, threads per session) for `config` on this machine: by
/// default one session computing with every core. Measured on 2 cores: two
/// single-threaded sessions were about 10 % faster but peaked at 870 MB
/// against 540 MB (each session holds its own weights and arena). On a
/// GPU: [`GPU_SESSIONS`] sessions of one CPU thread each.
pub fn plan(config: &KokoroConfig, gpu: bool) -> (usize, usize) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if gpu {
        let sessions = if config.sessions > 0 {
            config.sessions
        } else {
            GPU_SESSIONS
        };
        return (sessions, config.threads.max(1));
    }
    let sessions = if config.sessions > 0 {
        config.sessions
    } else if let Some(n) = cores.checked_div(config.threads) {
        n.max(1)
    } else {
        1
    };
    let threads = if config.threads > 0 {
        config.threads
    } else {
        (cores / sessions).max(1)
    };
    (sessions, threads)
}

/// Checks (size, sha256) and loads the runtime library at `runtime` once
/// per process (it is process-wide) and returns its environment and
/// version; later calls return at once.
pub fn warm_runtime(runtime: &Path) -> Result<(Environment, String), KokoroError> {
    static ENV: std::sync::OnceLock<Result<(Environment, String), String>> =
        std::sync::OnceLock::new();
    ENV.get_or_init(|| {
        super::files::check_runtime_file(runtime).map_err(|e| e.to_string())?;
        let version = super::files::runtime_version(runtime).map_err(|e| e.to_string())?;
        let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", runtime.display());
        let env = ort::init_from(runtime)
            .map_err(|e| fail(&e))?
            .with_name("tingshu")
            .build()
            .map_err(|e| fail(&e))?;
        Ok((env, version))
    })
    .clone()
    .map_err(KokoroError::Engine)
}

/// The graph optimization level of sessions built from the model.
const LEVEL: GraphOptimizationLevel = GraphOptimizationLevel::Level3;

/// The loaded model: a pool of sessions.
pub struct Engine {
    pool: Pool,
    /// Which execution provider the sessions use ("cpu" or "cuda").
    pub device: &'static str,
}

/// Sessions not running a request, and the signal that one came back.
struct Pool {
    idle: Mutex<Vec<Session>>,
    returned: Condvar,
}

impl Pool {
    fn put(&self, session: Session) {
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(session);
        self.returned.notify_one();
    }
}

impl Engine {
    /// Loads the model into as many sessions as `config` asks for, while a
    /// thread checks the model's sha256: a model that fails the check is
    /// an error even when ONNX Runtime loaded it, and one ONNX Runtime
    /// cannot load is reported by its checksum when that is wrong.
    pub fn load(files: &KokoroFiles, config: &KokoroConfig) -> Result<Engine, KokoroError> {
        let started = std::time::Instant::now();
        let digest = {
            let files = files.clone();
            std::thread::Builder::new()
                .name("tingshu-model-sha256".into())
                .spawn(move || {
                    let t = std::time::Instant::now();
                    files.check_model_digest().map(|()| t.elapsed())
                })
        };
        let engine = Engine::load_sessions(files, config);
        let checked = match digest {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(KokoroError::Engine("model check failed".into()))),
            Err(_) => {
                let t = std::time::Instant::now();
                files.check_model_digest().map(|()| t.elapsed())
            }
        };
        let unpublished = engine.as_ref().ok().and_then(|(_, u)| u.as_ref());
        let hashed = match checked {
            Ok(hashed) => {
                if let Some((cache, tmp)) = unpublished {
                    cache.publish(tmp);
                }
                hashed
            }
            Err(e) => {
                if let Some((_, tmp)) = unpublished {
                    super::graph_cache::remove(tmp);
                }
                return Err(e);
            }
        };
        let (engine, _) = engine?;
        tracing::debug!(
            sha256_ms = hashed.as_millis() as u64,
            load_ms = started.elapsed().as_millis() as u64,
            "Kokoro model checked and loaded"
        );
        Ok(engine)
    }

    /// The sessions, and the optimized graph written for the cache (not
    /// yet published: only a model that passed its check may fill it).
    fn load_sessions(
        files: &KokoroFiles,
        config: &KokoroConfig,
    ) -> Result<(Engine, Option<(GraphCache, PathBuf)>), KokoroError> {
        let mut unpublished = None;
        let choice = super::cuda::choose(files, config.device).map_err(KokoroError::Device)?;
        let mut gpu = choice.device == "cuda";
        if gpu && let Err(why) = super::cuda::preload(files) {
            if config.device == Device::Cuda {
                return Err(KokoroError::Device(why));
            }
            tracing::warn!(problem = %why, "device = auto: running the neural voice on the CPU");
            gpu = false;
        }
        if gpu {
            super::files::check_runtime_size(&files.cuda_provider())?;
            super::files::check_runtime_file(
                &files
                    .gpu_runtime
                    .with_file_name("libonnxruntime_providers_shared.so"),
            )?;
        }
        let runtime = if gpu {
            &files.gpu_runtime
        } else {
            &files.runtime
        };
        let (env, version) = warm_runtime(runtime)?;
        let (sessions, threads) = plan(config, gpu);
        let err = |e: ort::Error| KokoroError::Engine(format!("{}: {e}", files.model.display()));
        let mut pool = Vec::with_capacity(sessions);
        if gpu {
            // The float graph (no quantized node falls back to the CPU), made
            // once for every session of this load; the model as it is when it
            // cannot be made.
            let model = match float_graph(&files.model) {
                Some(bytes) => ModelSource::Bytes(bytes),
                None => ModelSource::File(files.model.clone()),
            };
            // The first session proves the provider works; the others follow,
            // one after another and all before the first request. (Loading
            // them on a thread while requests ran, or while the process
            // exited, aborted inside CUDA on the H200; side by side is not
            // yet tried there.)
            match cuda_session(&env, threads, &model) {
                Ok(s) => {
                    pool.push(s);
                    for _ in 1..sessions {
                        match cuda_session(&env, threads, &model) {
                            Ok(s) => pool.push(s),
                            Err(e) => {
                                tracing::warn!(error = %e, "a further CUDA session failed to load; going on with fewer");
                                break;
                            }
                        }
                    }
                }
                Err(e) if config.device == Device::Cuda => {
                    return Err(KokoroError::Device(format!(
                        "the CUDA provider failed to load: {e}"
                    )));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "device = auto: the CUDA provider failed to load; running on the CPU");
                    gpu = false;
                }
            }
        }
        if !gpu {
            let (sessions, threads) = plan(config, false);
            let rewrite = super::rewrite::enabled();
            let ops = super::ops::enabled();
            // "prepacked": entries hold packed weights (a graph cached as
            // one file by an older tingshu has another key, and goes).
            let mut level = "level3-prepacked".to_owned();
            if rewrite {
                level = format!("{level}-{}", super::rewrite::cache_tag());
            }
            if ops {
                level = format!("{level}-{}", super::ops::VERSION);
            }
            let cache = GraphCache::new(&files.root, &version, "cpu", &level);
            // Checked once: later sessions of this load trust it.
            let mut cached: Option<PathBuf> = None;
            let mut pending = false;
            for _ in 0..sessions {
                let session = cpu_session(
                    &env,
                    (threads, config.spin),
                    files,
                    (rewrite, ops),
                    &cache,
                    &mut cached,
                    &mut pending,
                );
                match session {
                    Ok(s) => pool.push(s),
                    Err(e) => {
                        if let Some(tmp) = cached.as_deref().filter(|_| pending) {
                            super::graph_cache::remove(tmp);
                        }
                        return Err(err(e));
                    }
                }
            }
            if let Some(tmp) = cached.filter(|_| pending) {
                unpublished = Some((cache, tmp));
            }
        }
        let device = if gpu { "cuda" } else { "cpu" };
        tracing::info!(
            sessions = pool.len(),
            threads,
            device,
            "Kokoro model loaded"
        );
        let engine = Engine {
            pool: Pool {
                idle: Mutex::new(pool),
                returned: Condvar::new(),
            },
            device,
        };
        Ok((engine, unpublished))
    }

    /// Speaks a phoneme string with `style` at `speed`: 24 kHz samples.
    /// Input longer than the model takes is split at phrase, then word
    /// boundaries and the pieces' audio joined; nothing is cut.
    pub fn speak(
        &self,
        phonemes: &str,
        style: &Style,
        speed: f32,
    ) -> Result<Vec<f32>, KokoroError> {
        let mut out = Vec::new();
        for piece in phonemes::split_tokens(phonemes, MAX_TOKENS - 2) {
            let tokens = phonemes::tokens(&piece);
            if tokens.is_empty() {
                continue;
            }
            let audio = self.run(&tokens, style, speed)?;
            out.extend_from_slice(&audio);
        }
        Ok(out)
    }

    fn run(&self, tokens: &[i64], style: &Style, speed: f32) -> Result<Vec<f32>, KokoroError> {
        let mut session = {
            let pool = &self.pool;
            let mut idle = pool.idle.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if let Some(s) = idle.pop() {
                    break s;
                }
                idle = pool.returned.wait(idle).unwrap_or_else(|p| p.into_inner());
            }
        };
        let result = infer(&mut session, tokens, style, speed);
        self.pool.put(session);
        result.map_err(|e| KokoroError::Engine(format!("inference failed: {e}")))
    }
}

/// A session on the CUDA provider. cuDNN picks convolution algorithms by
/// its heuristics instead of timing every one (ONNX Runtime's default):
/// each chunk's length is a new input shape, and with the timed search a
/// 10-character first clause took 5.0 s on an H200. The heuristic choice
/// is not yet timed on a GPU (BENCHMARKS.md, session 15).
fn cuda_session(env: &Environment, threads: usize, model: &ModelSource) -> ort::Result<Session> {
    let cuda = ort::ep::CUDA::default()
        .with_conv_algorithm_search(ort::ep::cuda::ConvAlgorithmSearch::Heuristic)
        .build()
        .error_on_failure();
    let mut b = builder(env, LEVEL, threads, false)?.with_execution_providers([cuda])?;
    match model {
        ModelSource::Bytes(bytes) => b.commit_from_memory(bytes),
        ModelSource::File(path) => b.commit_from_file(path),
    }
}

/// The graph a session is made from.
enum ModelSource {
    Bytes(Vec<u8>),
    File(PathBuf),
}

/// The model with its quantized operations folded back into float ones
/// ([`super::dequantize`]), or `None` when it cannot be read or folded.
fn float_graph(model: &Path) -> Option<Vec<u8>> {
    transformed(model, "folded into floats", super::dequantize::dequantize)
}

/// A change of the model's graph: the new graph and how many operations
/// changed ([`super::rewrite::rewrite`], [`super::dequantize::dequantize`]).
type GraphTransform = fn(&[u8]) -> Result<(Vec<u8>, usize), super::rewrite::RewriteError>;

/// `model` read and changed by `transform` (which returns the new graph and
/// how many operations it changed), or `None` when it cannot be read or
/// changed: the model is then loaded as it is. Only a damaged model fails
/// to parse, and its checksum says so.
fn transformed(model: &Path, how: &str, transform: GraphTransform) -> Option<Vec<u8>> {
    changed(&std::fs::read(model).ok()?, model, how, transform)
}

/// `bytes` (of `model`) changed by `transform`, or `None` when they cannot
/// be; either way said in the debug log.
fn changed(bytes: &[u8], model: &Path, how: &str, transform: GraphTransform) -> Option<Vec<u8>> {
    let started = std::time::Instant::now();
    match transform(bytes) {
        Ok((graph, n)) => {
            tracing::debug!(
                operations = n,
                ms = started.elapsed().as_millis() as u64,
                "Kokoro graph {how}"
            );
            Some(graph)
        }
        Err(e) => {
            tracing::debug!(model = %model.display(), problem = %e, "Kokoro graph not {how}");
            None
        }
    }
}

/// Whether CPU sessions run the float graph too (`TINGSHU_KOKORO_FLOAT=1`):
/// to hear and measure what a GPU runs, on a machine without one.
/// Read once: the clip cache's keys ask on every request.
pub(super) fn float_on_cpu() -> bool {
    static FLOAT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FLOAT.get_or_init(|| std::env::var_os("TINGSHU_KOKORO_FLOAT").is_some_and(|v| v == "1"))
}

/// A session builder with tingshu's options, at graph optimization `level`;
/// `spin`: threads wait for work spinning (where a listener waits).
fn builder(
    env: &Environment,
    level: GraphOptimizationLevel,
    threads: usize,
    spin: bool,
) -> ort::Result<SessionBuilder> {
    Ok(Session::builder(env)?
        .with_optimization_level(level)?
        .with_intra_threads(threads)?
        .with_inter_threads(1)?
        .with_intra_op_spinning(spin)?
        .with_deterministic_compute(true)?)
}

/// A CPU session: from the cached optimized graph when there is an intact
/// one (checked alongside loading, once per load: `cached` remembers it),
/// else from the model, writing the optimized graph to a temporary entry
/// (`pending`) that the caller publishes once the model is known intact.
/// `(threads, spin)`: see [`builder`]; `(rewrite, ops)`: which changes of
/// the graph it runs ([`cpu_graph`]).
fn cpu_session(
    env: &Environment,
    (threads, spin): (usize, bool),
    files: &KokoroFiles,
    (rewrite, ops): (bool, bool),
    cache: &GraphCache,
    cached: &mut Option<PathBuf>,
    pending: &mut bool,
) -> ort::Result<Session> {
    // The arena keeps memory flat: without it, peak RSS measured 2.4 GB
    // against 0.54 GB for the same text (malloc fragmentation).
    let cpu = || ort::ep::CPU::default().with_arena_allocator(true).build();
    // tingshu's own operators, which a cached graph may hold too.
    let builder = |level| -> ort::Result<SessionBuilder> {
        let b = builder(env, level, threads, spin)?;
        if ops {
            b.with_operators(super::ops::operators()?)
                .map_err(Into::into)
        } else {
            Ok(b)
        }
    };
    if float_on_cpu()
        && let Some(graph) = float_graph(&files.model)
    {
        return builder(LEVEL)?
            .with_execution_providers([cpu()])?
            .commit_from_memory(&graph);
    }
    if let Some(entry) = cached.as_deref() {
        return builder(GraphOptimizationLevel::Disable)?
            .with_execution_providers([cpu()])?
            .commit_from_file(GraphCache::graph(entry));
    }
    if let Some(entry) = cache.find() {
        let loaded = std::thread::scope(|scope| {
            let intact = scope.spawn(|| GraphCache::intact(&entry));
            let session = builder(GraphOptimizationLevel::Disable)
                .and_then(|b| b.with_execution_providers([cpu()]).map_err(Into::into))
                .and_then(|mut b| b.commit_from_file(GraphCache::graph(&entry)));
            let intact = intact.join().unwrap_or_else(|_| Err("check failed".into()));
            match (intact, session) {
                (Ok(()), Ok(session)) => Ok(session),
                (Err(why), _) => Err(why),
                (Ok(()), Err(e)) => Err(format!("ONNX Runtime cannot load it: {e}")),
            }
        });
        match loaded {
            Ok(session) => {
                *cached = Some(entry);
                return Ok(session);
            }
            Err(why) => GraphCache::discard(&entry, &why),
        }
    }
    let tmp = cache.temporary();
    let mut b = builder(LEVEL)?.with_execution_providers([cpu()])?;
    if let Some(tmp) = &tmp {
        // ONNX Runtime warns that a level-3 graph suits only this machine:
        // the cache's key holds the CPU's flags for that reason. The
        // weights go to a file of their own, packed as the kernels read
        // them, which later loads map instead of parsing and packing.
        b = b
            .with_optimized_model_path(GraphCache::graph(tmp))?
            .with_config_entry(
                "session.optimized_model_external_initializers_file_name",
                super::graph_cache::DATA,
            )?
            .with_config_entry(
                "session.optimized_model_external_initializers_min_size_in_bytes",
                "1024",
            )?
            .with_config_entry("session.save_external_prepacked_constant_initializers", "1")?
            .with_log_level(ort::logging::LogLevel::Error)?;
    }
    let session = match cpu_graph(&files.model, rewrite, ops) {
        Some(model) => b.commit_from_memory(&model),
        None => b.commit_from_file(&files.model),
    };
    if let Some(tmp) = tmp {
        if session.is_ok() && GraphCache::graph(&tmp).is_file() {
            // Published by the caller once the model's sha256 is checked;
            // this load's later sessions read it meanwhile.
            *cached = Some(tmp);
            *pending = true;
        } else {
            super::graph_cache::remove(&tmp);
        }
    }
    session
}

/// The model as CPU sessions run it: with its convolutions rewritten
/// (`rewrite`, see [`super::rewrite`]) and parts of its generator given to
/// tingshu's own operators (`ops`, see [`super::ops`]), both the same bits;
/// `None` when neither is asked for or the model cannot be read (it is then
/// loaded as it is). A change that fails is left out, the other still made.
fn cpu_graph(model: &Path, rewrite: bool, ops: bool) -> Option<Vec<u8>> {
    let rewritten = rewrite
        .then(|| transformed(model, "rewritten", super::rewrite::rewrite))
        .flatten();
    if !ops {
        return rewritten;
    }
    let bytes = match rewritten {
        Some(b) => b,
        None => std::fs::read(model).ok()?,
    };
    changed(
        &bytes,
        model,
        "given to tingshu's operators",
        super::ops::apply,
    )
    .or(Some(bytes))
}

fn infer(
    session: &mut Session,
    tokens: &[i64],
    style: &Style,
    speed: f32,
) -> ort::Result<Vec<f32>> {
    let mut ids = Vec::with_capacity(tokens.len() + 2);
    ids.push(0);
    ids.extend_from_slice(tokens);
    ids.push(0);
    let n = ids.len();
    let inputs = ort::inputs![
        "tokens" => Tensor::from_array(([1usize, n], ids))?,
        "style" => Tensor::from_array(([1usize, STYLE_DIM], style.row(tokens.len()).to_vec()))?,
        "speed" => Tensor::from_array(([1usize], vec![speed]))?,
    ];
    let outputs = session.run(inputs)?;
    let (_, audio) = outputs[0].try_extract_tensor::<f32>()?;
    Ok(audio.to_vec())
}
