//! Kokoro's forward STFT as an operator of tingshu's own, with ONNX
//! Runtime's arithmetic.
//!
//! The generator takes the STFT of its harmonic source: a 20-sample Hann
//! window every 5 samples of 24 kHz audio, 11 one-sided bins. ONNX Runtime's
//! `STFT` computes each frame as a transform of its own (20 is not a power
//! of two, so Bluestein's: the frame times a chirp, a 64-point FFT, a
//! product with the chirp filter's FFT, an inverse FFT, the chirp again),
//! allocating and clearing its buffers per frame on one thread: 59 ms of a
//! 0.98 s inference for 4.6 s of audio. `Stft` does the same steps, in the
//! same order with the same twiddles and the C library's `sinf`/`cosf` for
//! them, once per frame on ONNX Runtime's threads; the filter and twiddles
//! are computed once a call. The steps were read from ONNX Runtime's
//! `signal/dft.cc` (the version its 1.32 build runs: a test compares every
//! output bit with its `STFT`).
//!
//! Complex products are `(ar·br − ai·bi, ar·bi + ai·br)`, as the C++ build
//! computes them for finite values (where both parts come out NaN, it
//! recomputes with infinities recovered; this operator does not, which only
//! matters for infinite input).

use ort::operator::{
    BoxedKernel, ComputeContext, KernelContext, Operator, OperatorInput, OperatorOutput,
};
use ort::value::TensorElementType;

use super::super::rewrite::{
    RewriteError, Value, put_bytes, read_fields, read_node, read_tensor, utf8,
};
use super::{DOMAIN, Parts, default_domain};

// --- The graph pass -----------------------------------------------------------

/// `TensorProto.DataType`
const FLOAT: i64 = 1;
const INT64: i64 = 7;

/// `graph` with every one-sided `STFT` whose window is a constant of a
/// length that is not a power of two (and whose frame length, when given,
/// is a constant equal to it) replaced by tingshu's `Stft`, and how many.
pub(super) fn replace_graph(graph: &[u8]) -> Result<(Vec<u8>, usize), RewriteError> {
    let fields = read_fields(graph)?;
    let mut initializers: std::collections::HashMap<&str, &[u8]> = Default::default();
    let mut inputs: Vec<&str> = Vec::new();
    for f in &fields {
        let Value::Bytes(b) = f.value else { continue };
        let wanted = match f.number {
            5 => 8,
            11 => 1,
            _ => continue,
        };
        let name = read_fields(b)?
            .into_iter()
            .find_map(|g| match (g.number, g.value) {
                (n, Value::Bytes(v)) if n == wanted => Some(v),
                _ => None,
            });
        if let Some(name) = name.map(utf8).transpose()? {
            if f.number == 5 {
                initializers.insert(name, b);
            } else {
                inputs.push(name);
            }
        }
    }
    // A constant: an initializer that no graph input of that name overrides.
    let constant = |name: &str| {
        (!inputs.contains(&name))
            .then(|| initializers.get(name))
            .flatten()
            .and_then(|b| read_tensor(b).ok())
    };
    let mut out = Vec::with_capacity(graph.len());
    let mut count = 0;
    for f in &fields {
        let (1, Value::Bytes(b)) = (f.number, f.value) else {
            out.extend_from_slice(f.raw);
            continue;
        };
        let n = read_node(b)?;
        let ours = n.op_type == b"STFT"
            && default_domain(n.domain)
            && n.int("onesided", 1)? == 1
            && n.outputs.len() == 1
            && (3..=4).contains(&n.inputs.len())
            && constant(n.inputs[2]).is_some_and(|w| {
                let len = w.data.len() / 4;
                w.data_type == FLOAT
                    && w.dims == [len as i64]
                    && len >= 2
                    && !len.is_power_of_two()
                    && n.inputs.get(3).filter(|l| !l.is_empty()).is_none_or(|l| {
                        constant(l).is_some_and(|t| {
                            t.data_type == INT64
                                && t.data.len() == 8
                                && t.data[..] == (len as i64).to_le_bytes()
                        })
                    })
            });
        if !ours {
            out.extend_from_slice(f.raw);
            continue;
        }
        let name = format!("tingshu_stft_{count}");
        let mut node = super::super::rewrite::node("Stft", &name, &n.inputs, &n.outputs, &[]);
        put_bytes(&mut node, 7, DOMAIN.as_bytes());
        put_bytes(&mut out, 1, &node);
        count += 1;
    }
    Ok((out, count))
}

// --- The operator -------------------------------------------------------------

/// `Stft(signal, frame_step, window, frame_length?)`: ONNX's one-sided
/// `STFT` of a real signal ([N, L] or [N, L, 1]) with a window whose length
/// is not a power of two, as ONNX Runtime computes it.
pub(super) struct Stft;

impl Operator for Stft {
    type Kernel<'attr> = BoxedKernel<'attr>;

    fn name(&self) -> &str {
        "Stft"
    }

    fn inputs(&self) -> impl IntoIterator<Item = OperatorInput> {
        [
            OperatorInput::required(TensorElementType::Float32),
            OperatorInput::required(TensorElementType::Int64),
            OperatorInput::required(TensorElementType::Float32),
            OperatorInput::optional(TensorElementType::Int64),
        ]
    }

    fn outputs(&self) -> impl IntoIterator<Item = OperatorOutput> {
        [OperatorOutput::required(TensorElementType::Float32)]
    }

    fn create_kernel<'attr>(&self, _: &KernelContext<'attr>) -> ort::Result<Self::Kernel<'attr>> {
        Ok(Box::new(|ctx: &ComputeContext| compute(ctx)))
    }
}

fn compute(ctx: &ComputeContext) -> ort::Result<()> {
    let fail = |why: &str| ort::Error::new(format!("Stft: {why}"));
    let signal = ctx.input(0)?.ok_or_else(|| fail("no signal"))?;
    let step = ctx.input(1)?.ok_or_else(|| fail("no frame step"))?;
    let window = ctx.input(2)?.ok_or_else(|| fail("no window"))?;
    let (shape, xs) = signal.try_extract_tensor::<f32>()?;
    let (_, step) = step.try_extract_tensor::<i64>()?;
    let (_, window) = window.try_extract_tensor::<f32>()?;
    let dims: Vec<i64> = shape.iter().copied().collect();
    let real = dims.len() == 2 || (dims.len() == 3 && dims[2] == 1);
    let &[step] = step else {
        return Err(fail("the frame step is not one value"));
    };
    let n = window.len();
    if let Some(length) = ctx.input(3)? {
        let (_, length) = length.try_extract_tensor::<i64>()?;
        if length != [n as i64] {
            return Err(fail("the frame length differs from the window's"));
        }
    }
    if !real || step < 1 || n < 2 || n.is_power_of_two() {
        return Err(fail(&format!(
            "only a real signal, a positive step and a window whose length is not a power of \
             two are handled (signal {dims:?}, step {step}, window {n})"
        )));
    }
    let (batch, length) = (dims[0].max(0) as usize, dims[1].max(0) as usize);
    if n >= length {
        return Err(fail("the window is not shorter than the signal"));
    }
    // As ONNX Runtime counts them (a float division).
    let frames = (((length - n) as f32) / step as f32).floor() as usize + 1;
    let bins = n / 2 + 1;
    let plan = Bluestein::new(n);
    let mut y = ctx
        .output(0, vec![batch as i64, frames as i64, bins as i64, 2])?
        .ok_or_else(|| fail("no output"))?;
    let (_, ys) = y.try_extract_tensor_mut::<f32>()?;
    if ys.len() != batch * frames * bins * 2 || xs.len() != batch * length {
        return Err(fail("the tensors' sizes do not match"));
    }
    let out = Parts(ys.as_mut_ptr());
    let step = step as usize;
    let frame = |i: usize| {
        let out = &out;
        let (b, f) = (i / frames, i % frames);
        let start = b * length + f * step;
        let x = &xs[start..start + n];
        // SAFETY: frame i's own part of the output (bins complex values),
        // which no other call writes; `ys` holds batch × frames of them.
        let y = unsafe { std::slice::from_raw_parts_mut(out.0.add(i * bins * 2), bins * 2) };
        plan.frame(x, window, y);
    };
    ctx.par_for(batch * frames, (batch * frames).min(256), frame)
}

/// A complex float, multiplied as the C++ build does for finite values.
#[derive(Clone, Copy, Default, PartialEq, Debug)]
struct C {
    re: f32,
    im: f32,
}

impl C {
    fn new(re: f32, im: f32) -> C {
        C { re, im }
    }

    #[inline(always)]
    fn mul(self, o: C) -> C {
        C {
            re: self.re * o.re - self.im * o.im,
            im: self.re * o.im + self.im * o.re,
        }
    }

    #[inline(always)]
    fn add(self, o: C) -> C {
        C {
            re: self.re + o.re,
            im: self.im + o.im,
        }
    }
}

/// The parts of a Bluestein transform of length n that do not depend on the
/// frame.
struct Bluestein {
    n: usize,
    /// The FFT's length: the power of two from 2n − 1 on.
    m: usize,
    /// The FFT's twiddles, in bit-reversed places.
    twiddles: Vec<C>,
    chirp: Vec<C>,
    /// The FFT of the chirp filter.
    filter: Vec<C>,
}

/// `num`'s lowest `bits` bits reversed.
fn bit_reverse(num: usize, bits: u32) -> usize {
    ((num as u32).reverse_bits() >> (32 - bits)) as usize
}

impl Bluestein {
    fn new(n: usize) -> Bluestein {
        let pi = std::f32::consts::PI;
        let m = (2 * n - 1).next_power_of_two();
        let bits = m.trailing_zeros();
        // (−1 · 2π is exact: a sign)
        let step = -(2.0 * pi) / m as f32;
        let mut twiddles = vec![C::default(); m];
        for i in 0..m {
            let angle = i as f32 * step;
            twiddles[bit_reverse(i, bits)] = C::new(angle.cos(), angle.sin());
        }
        let mut chirp = vec![C::default(); m];
        let mut filter = vec![C::default(); m];
        for k in 0..n {
            let e = -pi * k as f32 * k as f32 / n as f32;
            chirp[k] = C::new(e.cos(), e.sin());
            filter[k] = C::new(chirp[k].re, -chirp[k].im);
        }
        for k in m - n + 1..m {
            filter[k] = filter[m - k];
        }
        let mut plan = Bluestein {
            n,
            m,
            twiddles,
            chirp,
            filter: Vec::new(),
        };
        plan.filter = plan.fft(&filter, false);
        plan
    }

    /// ONNX Runtime's radix-2 FFT of `x` (m values): the input in
    /// bit-reversed order (each times 1 twice, as it does), then the
    /// butterflies; `inverse` divides by m at the end (the twiddles stay
    /// the forward ones, which reverses the output).
    fn fft(&self, x: &[C], inverse: bool) -> Vec<C> {
        let m = self.m;
        let bits = m.trailing_zeros();
        let one = C::new(1.0, 0.0);
        let mut y: Vec<C> = (0..m)
            .map(|i| one.mul(x[bit_reverse(i, bits)]).mul(one))
            .collect();
        let mut size = 2;
        let mut level = 0;
        while size <= m {
            let mid = size / 2;
            level += 1;
            for k in 0..mid {
                let first = self.twiddles[bit_reverse(k, level)];
                let second = self.twiddles[bit_reverse(mid + k, level)];
                for j in (0..m).step_by(size) {
                    let (e, o) = (y[k + j], y[k + j + mid]);
                    y[k + j] = e.add(first.mul(o));
                    y[k + j + mid] = e.add(second.mul(o));
                }
            }
            size <<= 1;
        }
        if inverse {
            let m = m as f32;
            for v in &mut y {
                *v = C::new(v.re / m, v.im / m);
            }
        }
        y
    }

    /// One frame `x` (n values) through `window` into `out` (bins × 2).
    fn frame(&self, x: &[f32], window: &[f32], out: &mut [f32]) {
        let mut a = vec![C::default(); self.m];
        for k in 0..self.n {
            let v = C::new(x[k], 0.0);
            let v = C::new(v.re * window[k], v.im * window[k]);
            a[k] = v.mul(self.chirp[k]);
        }
        let mut spectrum = self.fft(&a, false);
        for (s, f) in spectrum.iter_mut().zip(&self.filter) {
            *s = s.mul(*f);
        }
        let c = self.fft(&spectrum, true);
        for (i, pair) in out.chunks_exact_mut(2).enumerate() {
            let v = if i == 0 { c[0] } else { c[self.m - i] };
            // (times the scale 1, which changes no bit)
            let r = v.mul(self.chirp[i]);
            pair[0] = r.re;
            pair[1] = r.im;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::kokoro::rewrite::fixtures::{model_of, op_types, runtime, value_info};
    use crate::synth::kokoro::rewrite::{node, put_int, tensor};

    /// signal [1, L] → STFT (step 5, a 20-sample Hann window, frame length
    /// 20, one-sided), as Kokoro's generator has it.
    fn model() -> Vec<u8> {
        let mut g = Vec::new();
        let mut stft = node(
            "STFT",
            "stft",
            &["x", "step", "window", "length"],
            &["y"],
            &[],
        );
        let mut onesided = Vec::new();
        put_bytes(&mut onesided, 1, b"onesided");
        put_int(&mut onesided, 3, 1);
        put_int(&mut onesided, 20, 2);
        put_bytes(&mut stft, 5, &onesided);
        put_bytes(&mut g, 1, &stft);
        put_bytes(&mut g, 2, b"stft");
        let window: Vec<u8> = (0..20)
            .map(|k| (0.5 - 0.5 * (2.0 * std::f64::consts::PI * k as f64 / 20.0).cos()) as f32)
            .flat_map(f32::to_le_bytes)
            .collect();
        put_bytes(&mut g, 5, &tensor("window", FLOAT, &[20], &window));
        put_bytes(&mut g, 5, &tensor("step", INT64, &[], &5i64.to_le_bytes()));
        put_bytes(
            &mut g,
            5,
            &tensor("length", INT64, &[], &20i64.to_le_bytes()),
        );
        let info = |name: &str, dims: &[Option<i64>]| value_info(name, FLOAT, dims);
        put_bytes(&mut g, 11, &info("x", &[Some(1), None]));
        put_bytes(&mut g, 12, &info("y", &[Some(1), None, Some(11), Some(2)]));
        model_of(&g)
    }

    #[test]
    fn the_transform_becomes_tingshus_and_a_power_of_two_stays() {
        let (replaced, n) = super::super::apply(&model()).unwrap();
        assert_eq!(n, 1);
        assert_eq!(op_types(&replaced), ["Stft"]);
        assert_eq!(super::super::apply(&replaced).unwrap().1, 0);
        // A 16-sample window: ONNX Runtime's radix-2 path, left alone.
        let window: Vec<u8> = (0..16).flat_map(|k| (k as f32).to_le_bytes()).collect();
        let mut g = Vec::new();
        put_bytes(
            &mut g,
            1,
            &node("STFT", "stft", &["x", "step", "window"], &["y"], &[]),
        );
        put_bytes(&mut g, 5, &tensor("window", FLOAT, &[16], &window));
        put_bytes(&mut g, 5, &tensor("step", INT64, &[], &5i64.to_le_bytes()));
        let (kept, n) = replace_graph(&g).unwrap();
        assert_eq!((n, kept), (0, g));
    }

    fn run(env: &ort::environment::Environment, model: &[u8], x: &[f32]) -> (Vec<i64>, Vec<f32>) {
        let mut session = ort::session::Session::builder(env)
            .unwrap()
            .with_operators(super::super::operators().unwrap())
            .unwrap()
            .commit_from_memory(model)
            .unwrap();
        let outputs = session
            .run(ort::inputs![
                "x" => ort::value::Tensor::from_array(([1usize, x.len()], x.to_vec())).unwrap()
            ])
            .unwrap();
        let (shape, y) = outputs["y"].try_extract_tensor::<f32>().unwrap();
        (shape.to_vec(), y.to_vec())
    }

    #[test]
    fn onnx_runtime_computes_the_same_bits_from_both_graphs() {
        if !cfg!(target_arch = "x86_64") {
            eprintln!("skipped: tingshu's operators are used on x86-64 only");
            return;
        }
        let Some(env) = runtime() else { return };
        let original = model();
        let (replaced, _) = super::super::apply(&original).unwrap();
        for (len, seed) in [(21usize, 1u32), (24, 2), (137, 3), (4801, 4), (24_000, 5)] {
            let mut s = seed.wrapping_mul(2_654_435_761) | 1;
            let x: Vec<f32> = (0..len)
                .map(|i| {
                    s ^= s << 13;
                    s ^= s >> 17;
                    s ^= s << 5;
                    (i as f32 * 0.37).sin() * 0.8 + ((s >> 8) as f32 / 16_777_216.0 - 0.5) * 0.1
                })
                .collect();
            let (want_shape, want) = run(&env, &original, &x);
            let (shape, got) = run(&env, &replaced, &x);
            assert_eq!(shape, want_shape, "L = {len}");
            assert_eq!(shape[1] as usize, (len - 20) / 5 + 1);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(
                    g.to_bits(),
                    w.to_bits(),
                    "L = {len}, value {i}: {g} against {w}"
                );
            }
        }
    }
}
