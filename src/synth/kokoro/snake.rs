//! Kokoro's Snake activation as one operator of tingshu's own.
//!
//! The model's generator applies Snake, `y = x + sin²(α·x) / α` with one α
//! per channel, 48 times, on its largest tensors (up to 128 channels at
//! 4,800 frames a second of audio). The export spells each as five nodes:
//!
//! ```text
//! x ─ Mul(α) ─ Sin ─ Pow(2) ─ Mul(1/α) ─ Add(x) → y
//! ```
//!
//! ONNX Runtime's `Sin` costs about 2 ns a value on this CPU, ten times its
//! `Tanh`, and the four element-wise passes around it each read and write
//! the whole tensor again: on 2 cores the chains took about a fifth of an
//! inference. [`fuse`] replaces each chain by one `Snake(x, α)` node of
//! the domain [`DOMAIN`] (given α and the graph's 1/α), which [`operators`] computes in one pass over the
//! tensor, on ONNX Runtime's own threads, with a polynomial sine.
//!
//! Not the same bits: every product and sum is the one the graph makes, in
//! the same order, but the sine is ours, within 4.8·10⁻⁷ of a
//! double-precision one (a test bounds it over ±8,192). The generator
//! carries such last-bit changes into the waveform's fine detail: the
//! clips keep their lengths and their 20-ms energies within 0.7 dB,
//! correlate at 0.996 or more, but differ sample by sample by up to 0.1
//! (ONNX Runtime's own `Cos(m − π/2)` in place of its `Sin` moves them as
//! much). What is heard was measured again (SER, BENCHMARKS.md, session
//! 17), and the clips' cache keys changed. `TINGSHU_KOKORO_SNAKE=0` keeps
//! the model's own nodes.

use std::collections::HashMap;

use ort::operator::{
    BoxedKernel, ComputeContext, KernelContext, Operator, OperatorDomain, OperatorInput,
    OperatorOutput,
};
use ort::value::TensorElementType;

use super::rewrite::{RewriteError, Value, ints, put_bytes, put_int, read_fields, read_node, utf8};

/// The operator domain of tingshu's own operators.
pub const DOMAIN: &str = "ai.tingshu";

/// Changes when the fused operator or its sine change (part of the
/// optimized graph's cache key).
pub const VERSION: &str = "snake1";

/// Whether CPU sessions fuse Snake: unless the environment sets
/// `TINGSHU_KOKORO_SNAKE=0` (to compare with the model's own nodes).
/// Read once: the clip cache's keys ask on every request.
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("TINGSHU_KOKORO_SNAKE").is_none_or(|v| v != "0"))
}

/// The operators [`fuse`] puts in a graph, for a session to register.
pub fn operators() -> ort::Result<OperatorDomain> {
    OperatorDomain::new(DOMAIN)?.add(Snake)
}

// --- The graph pass -----------------------------------------------------------

/// The model with every Snake chain replaced by one `Snake` node, and how
/// many were replaced. Chains whose intermediate values are read elsewhere,
/// or that differ in any way from the pattern above, stay as they are.
pub fn fuse(model: &[u8]) -> Result<(Vec<u8>, usize), RewriteError> {
    let fields = read_fields(model)?;
    let mut out = Vec::with_capacity(model.len());
    let mut fused = None;
    for f in &fields {
        match (f.number, f.value) {
            (7, Value::Bytes(graph)) if fused.is_none() => {
                let (graph, n) = fuse_graph(graph)?;
                put_bytes(&mut out, 7, &graph);
                fused = Some(n);
            }
            _ => out.extend_from_slice(f.raw),
        }
    }
    let n = fused.ok_or(RewriteError::NoGraph)?;
    if n > 0 {
        // opset_import { domain: DOMAIN, version: 1 }
        let mut opset = Vec::new();
        put_bytes(&mut opset, 1, DOMAIN.as_bytes());
        put_int(&mut opset, 2, 1);
        put_bytes(&mut out, 8, &opset);
    }
    Ok((out, n))
}

fn default_domain(domain: &[u8]) -> bool {
    domain.is_empty() || domain == b"ai.onnx"
}

/// A float scalar's value from a `TensorProto`'s bytes (a scalar, or a
/// tensor of one value).
fn float_scalar(tensor: &[u8]) -> Option<f32> {
    let fields = read_fields(tensor).ok()?;
    let dims = ints(&fields, 1).ok()?;
    let data_type = ints(&fields, 2).ok()?.last().copied();
    // FLOAT = 1
    if data_type != Some(1) || dims.iter().product::<i64>() != 1 {
        return None;
    }
    fields.iter().find_map(|f| match (f.number, f.value) {
        // raw_data, or float_data packed
        (9 | 4, Value::Bytes(raw)) => Some(f32::from_le_bytes(raw.try_into().ok()?)),
        _ => None,
    })
}

fn fuse_graph(graph: &[u8]) -> Result<(Vec<u8>, usize), RewriteError> {
    let fields = read_fields(graph)?;
    let mut nodes = Vec::new();
    let mut node_field = Vec::new();
    // Scalars a Pow may raise to: initializers and Constant nodes.
    let mut scalars: HashMap<&str, f32> = HashMap::new();
    let mut graph_outputs: Vec<&str> = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        let Value::Bytes(b) = f.value else { continue };
        match f.number {
            1 => {
                let n = read_node(b)?;
                if n.op_type == b"Constant"
                    && default_domain(n.domain)
                    && let [out] = n.outputs[..]
                    && let Some(t) = n.attribute("value").and_then(|a| {
                        a.iter().find_map(|g| match (g.number, g.value) {
                            (5, Value::Bytes(t)) => Some(t),
                            _ => None,
                        })
                    })
                    && let Some(v) = float_scalar(t)
                {
                    scalars.insert(out, v);
                }
                nodes.push(n);
                node_field.push(i);
            }
            5 => {
                let name = read_fields(b)?
                    .into_iter()
                    .find_map(|g| match (g.number, g.value) {
                        (8, Value::Bytes(n)) => Some(n),
                        _ => None,
                    });
                if let (Some(name), Some(v)) = (name, float_scalar(b)) {
                    scalars.insert(utf8(name)?, v);
                }
            }
            12 => {
                if let Some(name) =
                    read_fields(b)?
                        .into_iter()
                        .find_map(|g| match (g.number, g.value) {
                            (1, Value::Bytes(n)) => Some(n),
                            _ => None,
                        })
                {
                    graph_outputs.push(utf8(name)?);
                }
            }
            _ => {}
        }
    }
    if nodes.iter().any(super::rewrite::Node::has_subgraph) {
        // The uses of a name inside a subgraph are not visible here.
        return Ok((graph.to_vec(), 0));
    }
    let mut producer: HashMap<&str, usize> = HashMap::new();
    let mut uses: HashMap<&str, usize> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        for o in &n.outputs {
            producer.insert(o, i);
        }
        for input in &n.inputs {
            *uses.entry(input).or_default() += 1;
        }
    }
    for o in &graph_outputs {
        *uses.entry(o).or_default() += 1;
    }
    // The node producing `name` with op `op`, when `name` is read once.
    let only = |name: &str, op: &[u8]| {
        let i = *producer.get(name)?;
        let n = &nodes[i];
        (n.op_type == op && default_domain(n.domain) && uses.get(name) == Some(&1)).then_some(i)
    };
    let mut removed = vec![false; nodes.len()];
    // Node index → the Snake replacing it: (x, α, 1/α, y).
    let mut snakes: HashMap<usize, (&str, &str, &str, &str)> = HashMap::new();
    for (a, add) in nodes.iter().enumerate() {
        if add.op_type != b"Add" || !default_domain(add.domain) {
            continue;
        }
        let ([a0, a1], [y]) = (&add.inputs[..], &add.outputs[..]) else {
            continue;
        };
        let chain = [(*a0, *a1), (*a1, *a0)].into_iter().find_map(|(x, q)| {
            let m2 = only(q, b"Mul")?;
            let [p_in, r_in] = match nodes[m2].inputs[..] {
                [u, v] if only(u, b"Pow").is_some() => [u, v],
                [u, v] if only(v, b"Pow").is_some() => [v, u],
                _ => return None,
            };
            let pow = only(p_in, b"Pow")?;
            let [s_in, e] = nodes[pow].inputs[..] else {
                return None;
            };
            (scalars.get(e) == Some(&2.0)).then_some(())?;
            let sin = only(s_in, b"Sin")?;
            let m1 = only(nodes[sin].inputs.first()?, b"Mul")?;
            let alpha = match nodes[m1].inputs[..] {
                [u, v] if v == x && u != x => u,
                [u, v] if u == x && v != x => v,
                _ => return None,
            };
            // 1/α: an initializer in Kokoro's export, or a Reciprocal.
            (r_in != x && r_in != alpha).then_some(())?;
            Some((x, alpha, r_in, [m1, sin, pow, m2]))
        });
        let Some((x, alpha, beta, chain)) = chain else {
            continue;
        };
        for i in chain {
            removed[i] = true;
        }
        snakes.insert(a, (x, alpha, beta, y));
    }

    let mut out = Vec::with_capacity(graph.len());
    let mut next_node = 0;
    for (i, f) in fields.iter().enumerate() {
        if f.number != 1 {
            out.extend_from_slice(f.raw);
            continue;
        }
        let index = next_node;
        next_node += 1;
        debug_assert_eq!(node_field[index], i);
        if let Some((x, alpha, beta, y)) = snakes.get(&index) {
            let name = format!("tingshu_snake_{index}");
            let mut n = super::rewrite::node("Snake", &name, &[x, alpha, beta], &[y], &[]);
            put_bytes(&mut n, 7, DOMAIN.as_bytes());
            put_bytes(&mut out, 1, &n);
        } else if !removed[index] {
            out.extend_from_slice(f.raw);
        }
    }
    Ok((out, snakes.len()))
}

// --- The operator -------------------------------------------------------------

/// `Snake(x, α, β)`: `x + β·sin²(α·x)`, x of shape [N, C, …] (float), α
/// and β (the graph's 1/α) with C values each.
struct Snake;

impl Operator for Snake {
    type Kernel<'attr> = BoxedKernel<'attr>;

    fn name(&self) -> &str {
        "Snake"
    }

    fn inputs(&self) -> impl IntoIterator<Item = OperatorInput> {
        [
            OperatorInput::required(TensorElementType::Float32),
            OperatorInput::required(TensorElementType::Float32),
            OperatorInput::required(TensorElementType::Float32),
        ]
    }

    fn outputs(&self) -> impl IntoIterator<Item = OperatorOutput> {
        [OperatorOutput::required(TensorElementType::Float32)]
    }

    // No shape inference: the output's shape is x's, but ONNX Runtime
    // hands a custom operator's inference x's type without its symbolic
    // dimensions, and a rank-0 shape from it broke the next Transpose's
    // check. Left unknown, the graph's later nodes infer their own.

    fn create_kernel<'attr>(&self, _: &KernelContext<'attr>) -> ort::Result<Self::Kernel<'attr>> {
        Ok(Box::new(|ctx: &ComputeContext| compute(ctx)))
    }
}

/// A pointer to the output that the parallel rows write to, each its own
/// part.
struct Rows(*mut f32);
// SAFETY: every row index is handed to one call, and rows do not overlap.
unsafe impl Send for Rows {}
unsafe impl Sync for Rows {}

fn compute(ctx: &ComputeContext) -> ort::Result<()> {
    let missing = || ort::Error::new("Snake: an input is missing");
    let x = ctx.input(0)?.ok_or_else(missing)?;
    let alpha = ctx.input(1)?.ok_or_else(missing)?;
    let beta = ctx.input(2)?.ok_or_else(missing)?;
    let (shape, xs) = x.try_extract_tensor::<f32>()?;
    let (_, alpha) = alpha.try_extract_tensor::<f32>()?;
    let (_, beta) = beta.try_extract_tensor::<f32>()?;
    let dims: Vec<i64> = shape.iter().copied().collect();
    let channels = dims.get(1).copied().unwrap_or(1).max(0) as usize;
    if dims.len() < 2 || alpha.len() != channels || beta.len() != channels {
        return Err(ort::Error::new(format!(
            "Snake: x has shape {dims:?}, α {} values and β {}; each needs one per channel",
            alpha.len(),
            beta.len()
        )));
    }
    let rows = dims[0].max(0) as usize * channels;
    let len = xs.len().checked_div(rows).unwrap_or(0);
    let mut y = ctx.output(0, dims)?.ok_or_else(missing)?;
    let (_, ys) = y.try_extract_tensor_mut::<f32>()?;
    if ys.len() != xs.len() {
        return Err(ort::Error::new("Snake: the output's size differs from x's"));
    }
    let out = Rows(ys.as_mut_ptr());
    let row = |r: usize| {
        let out = &out;
        let x = &xs[r * len..(r + 1) * len];
        // SAFETY: row r's part of the output, which no other call touches;
        // `ys` has rows × len values (checked above).
        let y = unsafe { std::slice::from_raw_parts_mut(out.0.add(r * len), len) };
        snake_row(x, y, alpha[r % channels], beta[r % channels]);
    };
    ctx.par_for(rows, rows.min(256), row)
}

/// Above this |α·x| the three-part π/2 loses digits; such values (none in
/// speech so far) take the double-precision sine.
const LIMIT: f32 = 8192.0;

/// `y = x + β·sin²(α·x)` for one channel, the products and sums as the
/// model's graph makes them (β is the graph's 1/α).
pub fn snake_row(x: &[f32], y: &mut [f32], alpha: f32, beta: f32) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { snake_row_avx2(x, y, alpha, beta) };
        return;
    }
    snake_row_any(x, y, alpha, beta);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn snake_row_avx2(x: &[f32], y: &mut [f32], alpha: f32, beta: f32) {
    snake_row_any(x, y, alpha, beta);
}

/// The same arithmetic on any CPU: no fused multiply-adds, so every
/// instruction set gives the same bits.
#[inline(always)]
fn snake_row_any(x: &[f32], y: &mut [f32], alpha: f32, beta: f32) {
    let mut far = false;
    for (x, y) in x.iter().zip(y.iter_mut()) {
        let m = alpha * *x;
        far |= m.abs() > LIMIT;
        *y = *x + beta * sin_squared(m);
    }
    if far {
        for (x, y) in x.iter().zip(y.iter_mut()) {
            let m = alpha * *x;
            if m.abs() > LIMIT {
                let s = f64::from(m).sin() as f32;
                *y = *x + beta * (s * s);
            }
        }
    }
}

/// sin²(m) for |m| ≤ [`LIMIT`]: m = k·π/2 + r with |r| ≤ π/4 (π/2 in three
/// parts, Cody and Waite), then sin²(m) is sin²(r) for even k and cos²(r)
/// for odd k, each from a minimax polynomial (Cephes' `sinf`/`cosf`).
#[inline(always)]
fn sin_squared(m: f32) -> f32 {
    const TWO_OVER_PI: f32 = std::f32::consts::FRAC_2_PI;
    // 1.5 · 2²³: adding it rounds to an integer, whose parity is then the
    // last bit of the sum's mantissa.
    const ROUND: f32 = 12_582_912.0;
    const P1: f32 = 1.570_312_5;
    const P2: f32 = 4.837_513e-4;
    const P3: f32 = 7.549_79e-8;
    let t = m * TWO_OVER_PI + ROUND;
    let odd = t.to_bits() & 1 == 1;
    let k = t - ROUND;
    let r = ((m - k * P1) - k * P2) - k * P3;
    let z = r * r;
    let sin = r + r * z * (-1.666_665_5e-1 + z * (8.332_161e-3 + z * -1.951_529_6e-4));
    let cos = 1.0 - 0.5 * z + z * z * (4.166_664_6e-2 + z * (-1.388_731_6e-3 + z * 2.443_315_7e-5));
    let s = if odd { cos } else { sin };
    s * s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::kokoro::rewrite::{Field, node, tensor};

    #[test]
    fn the_sine_squared_is_within_a_few_units_of_the_double_precision_one() {
        let mut worst: f64 = 0.0;
        let mut m = -LIMIT;
        while m <= LIMIT {
            let want = f64::from(m).sin().powi(2);
            let got = f64::from(sin_squared(m));
            worst = worst.max((got - want).abs());
            m += 0.000_731 * (1.0 + m.abs());
        }
        for m in [
            0.0f32,
            1e-30,
            -1e-7,
            0.785,
            std::f32::consts::FRAC_PI_2,
            std::f32::consts::PI,
            100.0,
            -4000.5,
        ] {
            let want = f64::from(m).sin().powi(2);
            worst = worst.max((f64::from(sin_squared(m)) - want).abs());
        }
        // Values lie in [0, 1]; 2⁻²³ is one unit in the last place at 1.
        assert!(worst < 4.0 / 8_388_608.0, "worst error {worst:e}");
    }

    #[test]
    fn far_and_odd_values_take_the_exact_path_or_stay_nan() {
        let x = [1e6f32, -3e5, f32::NAN, 0.5, f32::INFINITY];
        let mut y = [0.0f32; 5];
        snake_row(&x, &mut y, 0.7, 1.0 / 0.7);
        let exact = |x: f32| {
            let s = f64::from(0.7f32 * x).sin() as f32;
            x + (1.0 / 0.7f32) * (s * s)
        };
        assert_eq!(y[0], exact(1e6));
        assert_eq!(y[1], exact(-3e5));
        assert!(y[2].is_nan());
        assert!((y[3] - exact(0.5)).abs() < 1e-6);
        assert!(y[4].is_nan() || y[4].is_infinite());
    }

    /// x [1, 3, T] → the exported chain (α of 3 values, the exponent from
    /// a Constant node) → y → z = y·y + y; with `shared`, a node reads the
    /// chain's square too, so the chain must stay.
    fn model(shared: bool) -> Vec<u8> {
        let mut g = Vec::new();
        let mut constant = Vec::new();
        put_bytes(&mut constant, 1, b"value");
        put_bytes(
            &mut constant,
            5,
            &tensor("two", 1, &[], &2.0f32.to_le_bytes()),
        );
        put_int(&mut constant, 20, 4);
        let mut two = node("Constant", "two", &[], &["two"], &[]);
        put_bytes(&mut two, 5, &constant);
        for n in [
            two,
            node("Mul", "m1", &["alpha", "x"], &["ax"], &[]),
            node("Sin", "sin", &["ax"], &["s"], &[]),
            node("Pow", "pow", &["s", "two"], &["p"], &[]),
            node("Reciprocal", "recip", &["alpha"], &["r"], &[]),
            node("Mul", "m2", &["r", "p"], &["q"], &[]),
            node("Add", "add", &["x", "q"], &["y"], &[]),
            node("Add", "add2", &["q2", "y"], &["z"], &[]),
            node("Mul", "m3", &["y", "y"], &["q2"], &[]),
        ] {
            put_bytes(&mut g, 1, &n);
        }
        if shared {
            put_bytes(&mut g, 1, &node("Mul", "m4", &["p", "p"], &["pp"], &[]));
        }
        put_bytes(&mut g, 2, b"snake");
        let alpha: Vec<u8> = [0.3f32, 1.7, 4.1]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        put_bytes(&mut g, 5, &tensor("alpha", 1, &[1, 3, 1], &alpha));
        let info = |name: &str| {
            let mut shape = Vec::new();
            for d in [Some(1), Some(3), None] {
                let mut dim = Vec::new();
                match d {
                    Some(v) => put_int(&mut dim, 1, v),
                    None => put_bytes(&mut dim, 2, b"T"),
                }
                put_bytes(&mut shape, 1, &dim);
            }
            let mut tt = Vec::new();
            put_int(&mut tt, 1, 1);
            put_bytes(&mut tt, 2, &shape);
            let mut ty = Vec::new();
            put_bytes(&mut ty, 1, &tt);
            let mut v = Vec::new();
            put_bytes(&mut v, 1, name.as_bytes());
            put_bytes(&mut v, 2, &ty);
            v
        };
        put_bytes(&mut g, 11, &info("x"));
        put_bytes(&mut g, 12, &info("z"));
        let mut m = Vec::new();
        put_int(&mut m, 1, 8);
        let mut opset = Vec::new();
        put_bytes(&mut opset, 1, b"");
        put_int(&mut opset, 2, 17);
        put_bytes(&mut m, 8, &opset);
        put_bytes(&mut m, 7, &g);
        m
    }

    fn ops(model: &[u8]) -> Vec<String> {
        let fields = read_fields(model).unwrap();
        let Value::Bytes(g) = fields.iter().find(|f| f.number == 7).unwrap().value else {
            panic!("no graph")
        };
        read_fields(g)
            .unwrap()
            .iter()
            .filter_map(|f: &Field| match (f.number, f.value) {
                (1, Value::Bytes(b)) => {
                    Some(String::from_utf8(read_node(b).unwrap().op_type.to_vec()).unwrap())
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_chain_becomes_one_node_and_the_rest_stays() {
        let original = model(false);
        let (fused, n) = fuse(&original).unwrap();
        assert_eq!(n, 1);
        assert_eq!(
            ops(&fused),
            ["Constant", "Reciprocal", "Snake", "Add", "Mul"]
        );
        assert_eq!(fuse(&original).unwrap().0, fused, "deterministic");
        // Nothing left to fuse the second time.
        let (again, n) = fuse(&fused).unwrap();
        assert_eq!((n, again), (0, fused));
        // A chain whose square is read elsewhere is left alone.
        let shared = model(true);
        let (kept, n) = fuse(&shared).unwrap();
        assert_eq!((n, kept), (0, shared.clone()));
        let mut cut = shared;
        cut.truncate(cut.len() - 3);
        assert!(fuse(&cut).is_err());
        assert_eq!(fuse(b""), Err(RewriteError::NoGraph));
    }

    fn run(env: &ort::environment::Environment, model: &[u8], x: &[f32]) -> Vec<f32> {
        let t = x.len() / 3;
        let mut session = ort::session::Session::builder(env)
            .unwrap()
            .with_operators(operators().unwrap())
            .unwrap()
            .commit_from_memory(model)
            .unwrap();
        let outputs = session
            .run(ort::inputs![
                "x" => ort::value::Tensor::from_array(([1usize, 3, t], x.to_vec())).unwrap()
            ])
            .unwrap();
        outputs["z"].try_extract_tensor::<f32>().unwrap().1.to_vec()
    }

    #[test]
    fn onnx_runtime_computes_the_same_values_from_both_graphs() {
        let files = super::super::KokoroFiles::locate(None);
        if !files.installed() {
            assert!(
                std::env::var_os("TINGSHU_REQUIRE_SERVICES").is_none_or(|v| v != "1"),
                "ONNX Runtime is not installed in {} (scripts/install-kokoro.sh)",
                files.root.display()
            );
            eprintln!("skipped: ONNX Runtime is not installed (scripts/install-kokoro.sh)");
            return;
        }
        let (env, _) = super::super::engine::warm_runtime(&files.runtime).unwrap();
        let original = model(false);
        let (fused, _) = fuse(&original).unwrap();
        for t in [1usize, 7, 1000, 4801] {
            let x: Vec<f32> = (0..3 * t)
                .map(|i| ((i as f32) * 0.618).sin() * 6.0 + (i % 7) as f32 * 0.01)
                .collect();
            let want = run(&env, &original, &x);
            let got = run(&env, &fused, &x);
            assert_eq!(want.len(), 3 * t);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                let tolerance = 4e-6 * (1.0 + w.abs());
                assert!(
                    (g - w).abs() <= tolerance,
                    "T = {t}, value {i}: {g} against {w}"
                );
            }
        }
    }
}
