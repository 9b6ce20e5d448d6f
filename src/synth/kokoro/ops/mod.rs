//! tingshu's own ONNX operators for the CPU graph: parts of Kokoro's
//! generator that ONNX Runtime runs slowly, computed in one pass each on its
//! own threads, with the same arithmetic in the same order, so that the
//! output is the same to the bit.
//!
//! - [`snake`]: the 48 Snake activations (`Mul → Sin → Pow → Mul → Add`),
//!   about a fifth of an inference in ONNX Runtime's nodes;
//! - [`stft`]: the forward STFT of the harmonic source (ONNX Runtime's
//!   `STFT`: a Bluestein transform per frame, 6 % of an inference).
//!
//! [`apply`] puts them in a model's graph; a session registers
//! [`operators`]. CPU sessions only (a GPU would copy to the CPU and back).
//! `TINGSHU_KOKORO_OPS=0` keeps the model's own nodes, to compare: the CLI
//! tests that a preview's clips and WAV are byte-identical either way.

pub mod snake;
pub mod stft;

use ort::operator::OperatorDomain;

use super::rewrite::{RewriteError, Value, put_bytes, put_int, read_fields};

/// The operator domain of tingshu's own operators.
pub const DOMAIN: &str = "ai.tingshu";

/// Changes when an operator or a pass changes (part of the optimized
/// graph's cache key).
pub const VERSION: &str = "ops2";

/// Whether CPU sessions use tingshu's operators: on x86-64, unless the
/// environment sets `TINGSHU_KOKORO_OPS=0`. Elsewhere ONNX Runtime's build
/// computes its sine with other instructions (on ARM, Eigen's sine uses
/// fused multiply-adds and other constants), which these operators do not
/// reproduce, so the model's own nodes run there.
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        cfg!(target_arch = "x86_64")
            && std::env::var_os("TINGSHU_KOKORO_OPS").is_none_or(|v| v != "0")
    })
}

/// The operators [`apply`] puts in a graph, for a session to register.
pub fn operators() -> ort::Result<OperatorDomain> {
    OperatorDomain::new(DOMAIN)?
        .add(snake::Snake)?
        .add(stft::Stft)
}

/// The model with its Snake chains fused ([`snake`]) and its STFTs
/// replaced ([`stft`]), and how many nodes each pass replaced (Snake, STFT).
pub fn apply(model: &[u8]) -> Result<(Vec<u8>, usize), RewriteError> {
    let fields = read_fields(model)?;
    let mut out = Vec::with_capacity(model.len());
    let mut done = None;
    for f in &fields {
        match (f.number, f.value) {
            (7, Value::Bytes(graph)) if done.is_none() => {
                let (graph, snakes) = snake::fuse_graph(graph)?;
                let (graph, transforms) = stft::replace_graph(&graph)?;
                put_bytes(&mut out, 7, &graph);
                done = Some(snakes + transforms);
            }
            _ => out.extend_from_slice(f.raw),
        }
    }
    let n = done.ok_or(RewriteError::NoGraph)?;
    if n > 0 {
        // opset_import { domain: DOMAIN, version: 1 }
        let mut opset = Vec::new();
        put_bytes(&mut opset, 1, DOMAIN.as_bytes());
        put_int(&mut opset, 2, 1);
        put_bytes(&mut out, 8, &opset);
    }
    Ok((out, n))
}

/// Whether `domain` is ONNX's default one.
fn default_domain(domain: &[u8]) -> bool {
    domain.is_empty() || domain == b"ai.onnx"
}

/// A raw pointer to an output that parallel calls write to, each its own
/// part.
struct Parts(*mut f32);
// SAFETY: the users hand each part to one call, and parts do not overlap.
unsafe impl Send for Parts {}
unsafe impl Sync for Parts {}
