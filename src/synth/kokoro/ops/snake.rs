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
//! inference. `fuse_graph` replaces each chain by one `Snake(x, α, 1/α)`
//! node of tingshu's domain ([`super::DOMAIN`]), which `Snake` computes
//! in one pass over the tensor, on ONNX Runtime's own threads.
//!
//! The same bits: every product and sum is the one the graph makes, in
//! the same order, and the sine is ONNX Runtime's own, written again
//! (`ort_sin`): its build computes `Sin` with Eigen's vectorized sine four
//! values at a time and the C library's `sinf` for a tensor's last
//! (length mod 4) values, and so does this operator. Tests check the sine
//! and a fused graph against ONNX Runtime bit for bit, and the CLI tests
//! that a preview's WAV is byte-identical with and without the fusion
//! (`TINGSHU_KOKORO_OPS=0` keeps the model's own nodes). (A polynomial
//! sine of our own, as accurate but not the same in the last bits, moved
//! samples by up to 0.1: the generator carries last-bit changes into the
//! waveform's fine detail.)

use std::collections::HashMap;

use ort::operator::{
    BoxedKernel, ComputeContext, KernelContext, Operator, OperatorInput, OperatorOutput,
};
use ort::value::TensorElementType;

use super::super::rewrite::{RewriteError, Value, ints, put_bytes, read_fields, read_node, utf8};
use super::{DOMAIN, Parts, default_domain};

// --- The graph pass -----------------------------------------------------------

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

/// `graph` with every Snake chain replaced by one `Snake` node, and how
/// many were replaced. Chains whose intermediate values are read elsewhere,
/// or that differ in any way from the pattern above, stay as they are.
pub(super) fn fuse_graph(graph: &[u8]) -> Result<(Vec<u8>, usize), RewriteError> {
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
    if nodes.iter().any(super::super::rewrite::Node::has_subgraph) {
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
            let mut n = super::super::rewrite::node("Snake", &name, &[x, alpha, beta], &[y], &[]);
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
pub(super) struct Snake;

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
    // ONNX Runtime's Sin takes the tensor 4 values at a time, then the rest
    // one by one.
    let vectored = xs.len() - xs.len() % 4;
    let out = Parts(ys.as_mut_ptr());
    let row = |r: usize| {
        let out = &out;
        let x = &xs[r * len..(r + 1) * len];
        // SAFETY: row r's part of the output, which no other call touches;
        // `ys` has rows × len values (checked above).
        let y = unsafe { std::slice::from_raw_parts_mut(out.0.add(r * len), len) };
        let vector_len = vectored.saturating_sub(r * len);
        snake_row(x, y, alpha[r % channels], beta[r % channels], vector_len);
    };
    ctx.par_for(rows, rows.min(256), row)
}

/// `y = x + β·sin²(α·x)` for one channel's `x`, the products and sums as
/// the model's graph makes them (β is the graph's 1/α) and the sine as
/// ONNX Runtime's `Sin` computes it (`ort_sin`): the values from
/// `vector_len` on are the tensor's last few, which ONNX Runtime computes
/// one by one with the C library's `sinf` (as `f32::sin` does here).
pub fn snake_row(x: &[f32], y: &mut [f32], alpha: f32, beta: f32, vector_len: usize) {
    let split = vector_len.min(x.len());
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { snake_row_avx2(&x[..split], &mut y[..split], alpha, beta) };
    } else {
        snake_row_any(&x[..split], &mut y[..split], alpha, beta);
    }
    #[cfg(not(target_arch = "x86_64"))]
    snake_row_any(&x[..split], &mut y[..split], alpha, beta);
    for (x, y) in x[split..].iter().zip(&mut y[split..]) {
        let s = (alpha * *x).sin();
        *y = *x + beta * (s * s);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn snake_row_avx2(x: &[f32], y: &mut [f32], alpha: f32, beta: f32) {
    snake_row_any(x, y, alpha, beta);
}

/// The same arithmetic on any CPU: no fused multiply-adds (Rust does not
/// contract `a * b + c`), so every instruction set gives the same bits.
/// Values so large that the sine needs the long reduction are redone one by
/// one after the loop, which keeps the loop vectorizable.
#[inline(always)]
fn snake_row_any(x: &[f32], y: &mut [f32], alpha: f32, beta: f32) {
    let mut huge = false;
    for (x, y) in x.iter().zip(y.iter_mut()) {
        let m = alpha * *x;
        huge |= m.abs() >= ort_sin::HUGE;
        let s = ort_sin::near(m);
        *y = *x + beta * (s * s);
    }
    if huge {
        for (x, y) in x.iter().zip(y.iter_mut()) {
            let m = alpha * *x;
            if m.abs() >= ort_sin::HUGE && m.is_finite() {
                let s = ort_sin::far(m);
                *y = *x + beta * (s * s);
            }
        }
    }
}

/// ONNX Runtime's CPU `Sin` (float), as its build computes all but a
/// tensor's last (length mod 4) values: Eigen's vectorized sine without
/// fused multiply-adds. Its steps, constants and the Payne–Hanek reduction
/// for large arguments were read from Eigen's `psincos_float` and are
/// written again here; a test checks this against ONNX Runtime's own `Sin`
/// bit for bit. The sign is left out: Snake squares the sine.
pub(super) mod ort_sin {
    /// From this |m| on, the short reduction loses digits and the long one
    /// is used.
    pub const HUGE: f32 = 25_966.0;

    const TWO_OVER_PI: f32 = f32::from_bits(0x3f22_f983);
    /// 1.5 · 2²³: adding it rounds to an integer, whose parity is then the
    /// last bit of the sum.
    const ROUND: f32 = f32::from_bits(0x4b40_0000);
    /// −π/2 in four parts (Cody and Waite).
    const PIO2: [f32; 4] = [
        f32::from_bits(0xbfc9_0000),
        f32::from_bits(0xb9fd_c000),
        f32::from_bits(0x342e_e000),
        f32::from_bits(0x2e74_b9ee),
    ];
    /// cos on [−π/4, π/4], highest power first.
    const COS: [f32; 5] = [
        f32::from_bits(0x37cc_730b),
        f32::from_bits(0xbab6_036e),
        f32::from_bits(0x3d2a_aa9e),
        -0.5,
        1.0,
    ];
    /// (sin r − r) / r³ on [−π/4, π/4], highest power first.
    const SIN: [f32; 3] = [
        f32::from_bits(0xb94d_70ca),
        f32::from_bits(0x3c08_85d3),
        f32::from_bits(0xbe2a_aaa8),
    ];

    /// sin m up to its sign, for |m| < [`HUGE`].
    #[inline(always)]
    pub fn near(m: f32) -> f32 {
        let a = m.abs();
        let rounded = a * TWO_OVER_PI + ROUND;
        let k = rounded - ROUND;
        // (additions commute exactly: r + k·p is k·p + r)
        let mut r = a;
        for p in PIO2 {
            r += k * p;
        }
        polynomial(r, rounded.to_bits() & 1 == 0)
    }

    /// sin m up to its sign, for finite |m| ≥ [`HUGE`].
    pub fn far(m: f32) -> f32 {
        let (r, quadrant) = reduce(m.abs());
        polynomial(r, quadrant & 1 == 0)
    }

    /// sin r (`even`: r is m less an even number of π/2) or cos r, up to
    /// the sign.
    #[inline(always)]
    fn polynomial(r: f32, even: bool) -> f32 {
        let r2 = r * r;
        let mut c = COS[0];
        for k in &COS[1..] {
            c = c * r2 + k;
        }
        let mut s = SIN[0];
        for k in &SIN[1..] {
            s = s * r2 + k;
        }
        s *= r2;
        s = s * r + r;
        if even { s } else { c }
    }

    /// 2/π's first 192 bits.
    const TWO_OVER_PI_BITS: [u32; 6] = [
        0xa2f9_836e,
        0x4e44_1529,
        0xfc27_57d1,
        0xf534_ddc0,
        0xdb62_9599,
        0x3c43_9041,
    ];

    /// The reduction's table, made once at compile time: word j holds 32
    /// bits of 2/π / 4 from bit 8·(j − 3), zeros before and after.
    const TABLE: [u32; 27] = {
        // 2/π / 4 as bytes, three zero bytes first and three after.
        let mut bytes = [0u8; 30];
        let mut i = 0;
        while i < 24 {
            let byte = (TWO_OVER_PI_BITS[i / 4] >> (24 - 8 * (i % 4))) as u8;
            let prev = if i == 0 {
                0
            } else {
                (TWO_OVER_PI_BITS[(i - 1) / 4] >> (24 - 8 * ((i - 1) % 4))) as u8
            };
            bytes[3 + i] = (byte >> 2) | (prev << 6);
            i += 1;
        }
        let mut table = [0u32; 27];
        let mut j = 0;
        while j < 27 {
            table[j] = u32::from_be_bytes([bytes[j], bytes[j + 1], bytes[j + 2], bytes[j + 3]]);
            j += 1;
        }
        table
    };

    /// a − q·π/2 and q, for a finite a ≥ [`HUGE`] (Payne and Hanek): a's
    /// 24 bits times the 96 bits of 2/π that matter at its exponent, in
    /// 2.62-bit fixed point.
    fn reduce(a: f32) -> (f32, u64) {
        let bits = a.to_bits();
        let e = (bits >> 23).wrapping_sub(118);
        let mantissa = ((bits & 0x007f_ffff) | 0x0080_0000) << (e & 7);
        let i = (e >> 3) as usize;
        let (t1, t2, t3) = (TABLE[i - 1], TABLE[i + 3], TABLE[i + 7]);
        let mut p = u64::from(mantissa) * u64::from(t3);
        p = u64::from(mantissa) * u64::from(t2) + (p >> 32);
        p = (u64::from(mantissa.wrapping_mul(t1)) << 32).wrapping_add(p);
        let q = p.wrapping_add(1 << 61) >> 62;
        p = p.wrapping_sub(q << 62);
        let pio2_62 = std::f64::consts::FRAC_PI_2 / (1u64 << 62) as f64;
        (((p as i64) as f64 * pio2_62) as f32, q)
    }
}

#[cfg(test)]
mod tests {
    use super::super::apply as fuse;
    use super::*;
    use crate::synth::kokoro::rewrite::fixtures::{self, model_of};
    use crate::synth::kokoro::rewrite::{node, put_int, tensor};

    /// |sin m| as [`ort_sin`] computes it, with the far path where needed.
    fn abs_sin(m: f32) -> f32 {
        if m.abs() >= ort_sin::HUGE && m.is_finite() {
            ort_sin::far(m).abs()
        } else {
            ort_sin::near(m).abs()
        }
    }

    /// Arguments from tiny to huge, both signs: a sweep and a scatter.
    fn arguments() -> Vec<f32> {
        let mut v = Vec::new();
        let mut m = 1e-6f32;
        while m < 1e9 {
            v.extend([m, -m]);
            m *= 1.000_37;
        }
        let mut seed = 0x2545_f491u32;
        for _ in 0..40_000 {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            let scale = [1.0, 30.0, 3_000.0, 30_000.0, 3e7][(seed % 5) as usize];
            v.push(((seed >> 8) as f32 / 16_777_216.0 - 0.5) * scale);
        }
        v.extend([0.0, -0.0, 25_965.998, 25_966.0, 1e30, f32::MAX]);
        v.truncate(v.len() - v.len() % 4);
        v
    }

    #[test]
    fn the_sine_is_within_two_units_of_the_double_precision_one() {
        for m in arguments().into_iter().filter(|m| m.abs() < 1e6) {
            let want = f64::from(m).sin().abs();
            let got = f64::from(abs_sin(m));
            // two units in the last place of the value (or of 2⁻²⁴ near 0)
            let ulp = (want.max(1e-30) as f32).to_bits();
            let unit = f64::from(f32::from_bits(ulp + 1)) - f64::from(f32::from_bits(ulp));
            assert!(
                (got - want).abs() <= 2.0 * unit.max(6e-8),
                "sin {m}: {got} against {want}"
            );
        }
    }

    #[test]
    fn onnx_runtime_computes_the_same_sine_bit_for_bit() {
        let Some(env) = runtime() else { return };
        let x = arguments();
        let mut g = Vec::new();
        put_bytes(&mut g, 1, &node("Sin", "sin", &["x"], &["y"], &[]));
        put_bytes(&mut g, 2, b"sin");
        put_bytes(&mut g, 11, &info("x", &[None]));
        put_bytes(&mut g, 12, &info("y", &[None]));
        let model = model_of(&g);
        let mut session = ort::session::Session::builder(&env)
            .unwrap()
            .commit_from_memory(&model)
            .unwrap();
        for n in [x.len(), x.len() - 1, 7] {
            let outputs = session
                .run(ort::inputs![
                    "x" => ort::value::Tensor::from_array(([n], x[..n].to_vec())).unwrap()
                ])
                .unwrap();
            let want = outputs["y"].try_extract_tensor::<f32>().unwrap().1.to_vec();
            // all but the last (n mod 4) values: ours; those: the C library's
            let tail = n - n % 4;
            for (i, (m, w)) in x[..n].iter().zip(&want).enumerate() {
                let got = if i < tail { abs_sin(*m) } else { m.sin().abs() };
                assert_eq!(
                    got.to_bits(),
                    w.abs().to_bits(),
                    "sin {m} (value {i} of {n})"
                );
            }
        }
    }

    #[test]
    fn huge_and_odd_values_take_the_long_reduction_or_stay_nan() {
        let x = [1e6f32, -3e5, f32::NAN, 0.5, f32::INFINITY];
        let mut y = [0.0f32; 5];
        snake_row(&x, &mut y, 0.7, 1.0 / 0.7, 4);
        let near = |x: f32, s: f32| x + (1.0 / 0.7f32) * (s * s);
        assert_eq!(y[0], near(1e6, ort_sin::far(0.7 * 1e6)));
        assert_eq!(y[1], near(-3e5, ort_sin::far(0.7 * -3e5)));
        assert!((y[0] - near(1e6, (0.7f64 * 1e6).sin() as f32)).abs() < 0.5);
        assert!(y[2].is_nan());
        assert_eq!(y[3], near(0.5, ort_sin::near(0.35)));
        // the tail value: the C library's sine
        assert!(y[4].is_nan());
    }

    /// ONNX Runtime, where the operators are used (x86-64) and installed.
    fn runtime() -> Option<ort::environment::Environment> {
        if !cfg!(target_arch = "x86_64") {
            eprintln!("skipped: tingshu's operators are used on x86-64 only");
            return None;
        }
        fixtures::runtime()
    }

    /// A float tensor's `ValueInfoProto`.
    fn info(name: &str, dims: &[Option<i64>]) -> Vec<u8> {
        fixtures::value_info(name, 1, dims)
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
        let dims = [Some(1), Some(3), None];
        put_bytes(&mut g, 11, &info("x", &dims));
        put_bytes(&mut g, 12, &info("z", &dims));
        model_of(&g)
    }

    #[test]
    fn the_chain_becomes_one_node_and_the_rest_stays() {
        let original = model(false);
        let (fused, n) = fuse(&original).unwrap();
        assert_eq!(n, 1);
        assert_eq!(
            fixtures::op_types(&fused),
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
            .with_operators(super::super::operators().unwrap())
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
    fn onnx_runtime_computes_the_same_bits_from_both_graphs() {
        let Some(env) = runtime() else { return };
        let original = model(false);
        let (fused, _) = fuse(&original).unwrap();
        // Lengths whose tensors end in 0 to 3 values past a multiple of 4,
        // and values up to the long reduction's range.
        for t in [1usize, 7, 1000, 4801, 4802] {
            let x: Vec<f32> = (0..3 * t)
                .map(|i| ((i as f32) * 0.618).sin() * 6.0 * (1.0 + (i % 97) as f32 * 200.0))
                .collect();
            let want = run(&env, &original, &x);
            let got = run(&env, &fused, &x);
            assert_eq!(want.len(), 3 * t);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(
                    g.to_bits(),
                    w.to_bits(),
                    "T = {t}, value {i}: {g} against {w}"
                );
            }
        }
    }
}
