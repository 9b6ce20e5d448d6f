//! A float graph of the int8 model, for the GPU.
//!
//! The int8 Kokoro model is dynamically quantized: before each quantized
//! product, `DynamicQuantizeLinear` turns the float input `x` into uint8
//! with a scale and zero point computed at run time, and `MatMulInteger`,
//! `ConvInteger` and `DynamicQuantizeLSTM` multiply integers. ONNX
//! Runtime's CUDA provider has none of these kernels, so on a GPU every one
//! of them ran on the CPU with copies both ways (547 copies; BENCHMARKS.md,
//! session 15). This module folds each one back into the float operation
//! it stands for, with the weights dequantized once here:
//!
//! ```text
//! x ─ DynamicQuantizeLinear ─ MatMulInteger(W_q, zp) ─ Cast ─ Mul(x_scale · w_scale)
//!   becomes  x ─ MatMul(W)                       W = (W_q − zp) · w_scale
//! x ─ DynamicQuantizeLinear ─ ConvInteger ─ [Add(quantized bias)] ─ Cast ─ Mul(scale)
//!   becomes  x ─ Conv(W, bias)                   (the same attributes)
//! DynamicQuantizeLSTM(W_q, R_q, scales, zero points)
//!   becomes  LSTM(W, R)                          (weights transposed to ONNX's layout)
//! ```
//!
//! The float graph computes what the quantized one approximates (no
//! rounding of the activations), so its audio differs from the CPU's in
//! the last bits, not in what is heard. Anything that does not match these
//! shapes exactly is left as it is. Nodes whose outputs nobody reads any
//! more (the quantizers, the scale products) and weights nobody reads are
//! dropped.

use std::collections::{BTreeMap, HashMap, HashSet};

use rayon::prelude::*;

use super::rewrite::{
    Field, INT8, Node, RewriteError, UINT8, Value, node, put_bytes, put_int, put_varint,
    read_fields, read_node, utf8,
};

/// Changes when the float graph changes.
pub const VERSION: &str = "f1";

/// `TensorProto.DataType` FLOAT.
const FLOAT: i64 = 1;

/// The float model and how many quantized operations were folded.
pub fn dequantize(model: &[u8]) -> Result<(Vec<u8>, usize), RewriteError> {
    let fields = read_fields(model)?;
    let Some(graph) = fields.iter().find_map(|f| match (f.number, f.value) {
        (7, Value::Bytes(g)) => Some(g),
        _ => None,
    }) else {
        return Err(RewriteError::NoGraph);
    };
    let Folded { kept, added, count } = fold_graph(graph)?;
    // The new weights are written once, straight into the model.
    let mut graph_len = kept.len();
    let mut heads = Vec::with_capacity(added.len());
    for t in &added {
        let mut head = Vec::new();
        put_varint(&mut head, 5 << 3 | 2);
        put_varint(&mut head, t.len() as u64);
        graph_len += head.len() + t.len();
        heads.push(head);
    }
    let mut out = Vec::with_capacity(model.len() + graph_len);
    let mut done = false;
    for f in &fields {
        match (f.number, f.value) {
            (7, Value::Bytes(_)) if !done => {
                put_varint(&mut out, 7 << 3 | 2);
                put_varint(&mut out, graph_len as u64);
                out.extend_from_slice(&kept);
                for (head, t) in heads.iter().zip(&added) {
                    out.extend_from_slice(head);
                    out.extend_from_slice(t);
                }
                done = true;
            }
            _ => out.extend_from_slice(f.raw),
        }
    }
    Ok((out, count))
}

/// A tensor's shape and values, for the types the folding reads: integers
/// (uint8 or int8) as stored, or floats.
struct Values<'b> {
    dims: Vec<usize>,
    data_type: i64,
    raw: &'b [u8],
    /// Integers stored in `int32_data` instead of `raw_data`.
    wide: Vec<i64>,
    floats: Vec<f32>,
}

impl Values<'_> {
    fn len(&self) -> usize {
        match self.data_type {
            FLOAT => self.floats.len(),
            _ if self.wide.is_empty() => self.raw.len(),
            _ => self.wide.len(),
        }
    }

    /// Integer `i` (uint8 or int8).
    fn int(&self, i: usize) -> i32 {
        match (self.data_type, self.wide.get(i)) {
            (_, Some(&v)) => v as i32,
            (INT8, None) => i32::from(self.raw[i] as i8),
            _ => i32::from(self.raw[i]),
        }
    }

    fn ints(&self) -> Vec<i32> {
        (0..self.len()).map(|i| self.int(i)).collect()
    }
}

fn read_values(b: &[u8]) -> Result<Option<Values<'_>>, RewriteError> {
    let fields = read_fields(b)?;
    let mut v = Values {
        dims: Vec::new(),
        data_type: 0,
        raw: &[],
        wide: Vec::new(),
        floats: Vec::new(),
    };
    let mut has_raw = false;
    for f in &fields {
        match (f.number, f.value) {
            (1, Value::Varint(d)) => v.dims.push(d as usize),
            (1, Value::Bytes(_)) => {
                for d in super::rewrite::ints(std::slice::from_ref(f), 1)? {
                    v.dims
                        .push(usize::try_from(d).map_err(|_| RewriteError::Malformed("dims"))?);
                }
            }
            (2, Value::Varint(t)) => v.data_type = t as i64,
            (9, Value::Bytes(r)) => {
                v.raw = r;
                has_raw = true;
            }
            (4, Value::Bytes(p)) => v.floats.extend(
                p.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            ),
            (13 | 14, _) => return Ok(None),
            _ => {}
        }
    }
    match v.data_type {
        FLOAT if has_raw => {
            v.floats = v
                .raw
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
        }
        FLOAT => {}
        // uint8 and int8 values may also sit in int32_data, one per value.
        UINT8 | INT8 if !has_raw => v.wide = super::rewrite::ints(&fields, 5)?,
        UINT8 | INT8 => {}
        _ => return Ok(None),
    }
    let count: usize = v.dims.iter().product();
    Ok((v.len() == count).then_some(v))
}

/// A float `TensorProto` of `n` values, value `i` from `value(i)`, written
/// straight into its encoding.
fn float_tensor(
    name: &str,
    dims: &[usize],
    n: usize,
    mut value: impl FnMut(usize) -> f32,
) -> Vec<u8> {
    let mut t = Vec::with_capacity(n * 4 + name.len() + 64);
    for &d in dims {
        put_int(&mut t, 1, d as i64);
    }
    put_int(&mut t, 2, FLOAT);
    put_bytes(&mut t, 8, name.as_bytes());
    put_varint(&mut t, 9 << 3 | 2);
    put_varint(&mut t, (n * 4) as u64);
    let start = t.len();
    t.resize(start + n * 4, 0);
    for (i, c) in t[start..].chunks_exact_mut(4).enumerate() {
        c.copy_from_slice(&value(i).to_le_bytes());
    }
    t
}

/// A value per output channel `j` of `n` channels: a scalar or an `n`-vector.
fn per_channel<T: Copy>(v: &[T], n: usize, j: usize) -> Option<T> {
    match v.len() {
        1 => v.first().copied(),
        len if len == n => v.get(j).copied(),
        _ => None,
    }
}

/// An output channel's weight zero point and scale.
type Channel = (i32, f32);

/// One folded operation: the node that takes the last node's place, the
/// nodes it replaces, and its new weights.
struct Fold {
    at: usize,
    node: Vec<u8>,
    removed: Vec<usize>,
    initializers: Vec<Vec<u8>>,
}

struct Graph<'a> {
    nodes: Vec<Node<'a>>,
    initializers: HashMap<&'a str, &'a [u8]>,
    producer: HashMap<&'a str, usize>,
    consumers: HashMap<&'a str, Vec<usize>>,
    outputs: HashSet<&'a str>,
}

impl<'a> Graph<'a> {
    fn values(&self, name: &str) -> Result<Option<Values<'a>>, RewriteError> {
        match self.initializers.get(name) {
            Some(b) => read_values(b),
            None => Ok(None),
        }
    }

    fn made_by(&self, name: &str, op: &[u8]) -> Option<(usize, &Node<'a>)> {
        let &i = self.producer.get(name)?;
        let n = &self.nodes[i];
        (n.op_type == op && (n.domain.is_empty() || n.domain == b"ai.onnx")).then_some((i, n))
    }

    /// The only node reading `name`, when it is `op` (and `name` is no graph output).
    fn only_reader(&self, name: &str, op: &[u8]) -> Option<(usize, &Node<'a>)> {
        if self.outputs.contains(name) {
            return None;
        }
        let [i] = self.consumers.get(name)?.as_slice() else {
            return None;
        };
        let n = &self.nodes[*i];
        (n.op_type == op && n.domain.is_empty()).then_some((*i, n))
    }

    /// (x, x's scale) for the quantized input `xq` and its zero point `xzp`.
    fn quantizer(&self, xq: &str, xzp: &str) -> Option<(&'a str, &'a str)> {
        let (_, d) = self.made_by(xq, b"DynamicQuantizeLinear")?;
        let [x] = d.inputs[..] else { return None };
        let [q, s, z] = d.outputs[..] else {
            return None;
        };
        (q == xq && z == xzp).then_some((x, s))
    }

    /// The weight scale `w` in `s = Mul(x_scale, w)`.
    fn weight_scale(&self, s: &str, x_scale: &str) -> Option<&'a str> {
        let (_, m) = self.made_by(s, b"Mul")?;
        let [a, b] = m.inputs[..] else { return None };
        let w = match (a == x_scale, b == x_scale) {
            (true, false) => b,
            (false, true) => a,
            _ => return None,
        };
        self.initializers.contains_key(w).then_some(w)
    }

    /// `Cast(to float)` of `value`, then `Mul` by a scale: (cast, mul, scale).
    fn rescaled(&self, value: &str) -> Option<(usize, usize, &'a str)> {
        let (c, cast) = self.only_reader(value, b"Cast")?;
        if cast.int("to", 0).ok()? != FLOAT {
            return None;
        }
        let [cast_out] = cast.outputs[..] else {
            return None;
        };
        let (m, mul) = self.only_reader(cast_out, b"Mul")?;
        let [a, b] = mul.inputs[..] else { return None };
        let scale = if a == cast_out { b } else { a };
        (mul.outputs.len() == 1).then_some((c, m, scale))
    }

    /// The float bias behind a quantized bias `Reshape(Cast(Floor(Div(bias, scale))))`.
    fn float_bias(&self, quantized: &str) -> Option<&'a str> {
        let (_, reshape) = self.made_by(quantized, b"Reshape")?;
        let (_, cast) = self.made_by(reshape.inputs.first()?, b"Cast")?;
        let (_, floor) = self.made_by(cast.inputs.first()?, b"Floor")?;
        let (_, div) = self.made_by(floor.inputs.first()?, b"Div")?;
        let bias = *div.inputs.first()?;
        self.initializers.contains_key(bias).then_some(bias)
    }

    /// The quantized weight `wq` and, per output channel (`channels` of its
    /// shape), its zero point and scale; the scale is the weight's factor of
    /// `s = Mul(x_scale, w_scale)`.
    fn weight(
        &self,
        wq: &str,
        wzp: &str,
        s: &str,
        x_scale: &str,
        channels: impl Fn(&[usize]) -> Option<usize>,
    ) -> Result<Option<(Values<'a>, Vec<Channel>)>, RewriteError> {
        let Some(ws) = self.weight_scale(s, x_scale) else {
            return Ok(None);
        };
        let (Some(w), Some(zp), Some(scale)) =
            (self.values(wq)?, self.values(wzp)?, self.values(ws)?)
        else {
            return Ok(None);
        };
        let Some(n) = channels(&w.dims) else {
            return Ok(None);
        };
        let zp = zp.ints();
        let pairs: Option<Vec<Channel>> = (0..n)
            .map(|j| Some((per_channel(&zp, n, j)?, per_channel(&scale.floats, n, j)?)))
            .collect();
        Ok(pairs.map(|p| (w, p)))
    }

    fn matmul(&self, i: usize) -> Result<Option<Fold>, RewriteError> {
        let n = &self.nodes[i];
        let ([xq, wq, xzp, wzp], [y]) = (&n.inputs[..], &n.outputs[..]) else {
            return Ok(None);
        };
        let Some((x, xs)) = self.quantizer(xq, xzp) else {
            return Ok(None);
        };
        let Some((c, m, s)) = self.rescaled(y) else {
            return Ok(None);
        };
        let columns = |d: &[usize]| match d {
            [_, cols] => Some(*cols),
            _ => None,
        };
        let Some((w, channels)) = self.weight(wq, wzp, s, xs, columns)? else {
            return Ok(None);
        };
        let &[k, cols] = w.dims.as_slice() else {
            return Ok(None);
        };
        let name = format!("tingshu_{VERSION}_{i}/w");
        let weights = float_tensor(&name, &[k, cols], k * cols, |e| {
            let (z, sc) = channels[e % cols];
            (w.int(e) - z) as f32 * sc
        });
        let out = self.nodes[m].outputs[0];
        Ok(Some(Fold {
            at: m,
            node: node("MatMul", &name, &[x, &name], &[out], &[]),
            removed: vec![i, c],
            initializers: vec![weights],
        }))
    }

    fn conv(&self, i: usize) -> Result<Option<Fold>, RewriteError> {
        let n = &self.nodes[i];
        let ([xq, wq, xzp, wzp], [y]) = (&n.inputs[..], &n.outputs[..]) else {
            return Ok(None);
        };
        let Some((x, xs)) = self.quantizer(xq, xzp) else {
            return Ok(None);
        };
        // Without a bias: Cast, Mul. With one: Add(quantized bias), Cast, Mul.
        let (bias, add, rescaled) = match self.only_reader(y, b"Add") {
            Some((a, add)) => {
                let [p, q] = add.inputs[..] else {
                    return Ok(None);
                };
                let other = if p == *y { q } else { p };
                let Some(bias) = self.float_bias(other) else {
                    return Ok(None);
                };
                (Some(bias), Some(a), self.rescaled(add.outputs[0]))
            }
            None => (None, None, self.rescaled(y)),
        };
        let Some((c, m, s)) = rescaled else {
            return Ok(None);
        };
        let outputs = |d: &[usize]| match d {
            [out_ch, _, _] => Some(*out_ch),
            _ => None,
        };
        let Some((w, channels)) = self.weight(wq, wzp, s, xs, outputs)? else {
            return Ok(None);
        };
        let &[out_ch, in_ch, k] = w.dims.as_slice() else {
            return Ok(None);
        };
        let per = in_ch * k;
        let name = format!("tingshu_{VERSION}_{i}/w");
        let mut inputs = vec![x, name.as_str()];
        if let Some(b) = bias {
            let Some(values) = self.values(b)? else {
                return Ok(None);
            };
            if values.floats.len() != out_ch {
                return Ok(None);
            }
            inputs.push(b);
        }
        let weights = float_tensor(&name, &[out_ch, in_ch, k], out_ch * per, |e| {
            let (z, sc) = channels[e / per];
            (w.int(e) - z) as f32 * sc
        });
        let attributes: Vec<Vec<u8>> = n.attributes.iter().map(|(_, f)| raw(f)).collect();
        let out = self.nodes[m].outputs[0];
        let mut removed = vec![i, c];
        removed.extend(add);
        Ok(Some(Fold {
            at: m,
            node: node("Conv", &name, &inputs, &[out], &attributes),
            removed,
            initializers: vec![weights],
        }))
    }

    fn lstm(&self, i: usize) -> Result<Option<Fold>, RewriteError> {
        let n = &self.nodes[i];
        if n.domain != b"com.microsoft" || n.inputs.len() != 12 {
            return Ok(None);
        }
        let ins = &n.inputs;
        let mut weights = Vec::new();
        let mut initializers = Vec::new();
        // W: [D, I, 4H] → [D, 4H, I]; R: [D, H, 4H] → [D, 4H, H].
        for (which, (q, s, z)) in [(1, 8, 9), (2, 10, 11)].into_iter().enumerate() {
            let (Some(w), Some(scale), Some(zp)) = (
                self.values(ins[q])?,
                self.values(ins[s])?,
                self.values(ins[z])?,
            ) else {
                return Ok(None);
            };
            let &[d, rows, gates] = w.dims.as_slice() else {
                return Ok(None);
            };
            // Per (direction, gate): a value per direction or per gate row.
            let zp = zp.ints();
            let pick = |len: usize, dir: usize, g: usize| match len {
                l if l == d => Some(dir),
                l if l == d * gates => Some(dir * gates + g),
                _ => None,
            };
            let mut channels = Vec::with_capacity(d * gates);
            for dir in 0..d {
                for g in 0..gates {
                    let (Some(a), Some(b)) =
                        (pick(zp.len(), dir, g), pick(scale.floats.len(), dir, g))
                    else {
                        return Ok(None);
                    };
                    channels.push((zp[a], scale.floats[b]));
                }
            }
            let name = format!("tingshu_{VERSION}_{i}/{}", ["w", "r"][which]);
            // Element (dir, g, r) of the result from (dir, r, g) of the weight.
            let t = float_tensor(&name, &[d, gates, rows], d * gates * rows, |e| {
                let (dir_g, r) = (e / rows, e % rows);
                let (dir, g) = (dir_g / gates, dir_g % gates);
                let (z, sc) = channels[dir_g];
                (w.int((dir * rows + r) * gates + g) - z) as f32 * sc
            });
            initializers.push(t);
            weights.push(name);
        }
        let mut inputs: Vec<&str> = vec![ins[0], &weights[0], &weights[1]];
        inputs.extend(&ins[3..8]);
        while inputs.last().is_some_and(|s| s.is_empty()) {
            inputs.pop();
        }
        let attributes: Vec<Vec<u8>> = n.attributes.iter().map(|(_, f)| raw(f)).collect();
        let name = format!("tingshu_{VERSION}_{i}/lstm");
        Ok(Some(Fold {
            at: i,
            node: node("LSTM", &name, &inputs, &n.outputs, &attributes),
            removed: Vec::new(),
            initializers,
        }))
    }
}

/// An attribute's message bytes from its fields.
fn raw(fields: &[Field]) -> Vec<u8> {
    fields.iter().flat_map(|f| f.raw.iter().copied()).collect()
}

/// A folded graph: its kept fields, the new weights (encoded
/// `TensorProto`s, to append as initializers) and how many operations
/// were folded.
struct Folded {
    kept: Vec<u8>,
    added: Vec<Vec<u8>>,
    count: usize,
}

fn fold_graph(graph: &[u8]) -> Result<Folded, RewriteError> {
    let fields = read_fields(graph)?;
    let mut g = Graph {
        nodes: Vec::new(),
        initializers: HashMap::new(),
        producer: HashMap::new(),
        consumers: HashMap::new(),
        outputs: HashSet::new(),
    };
    let mut initializer_of_field = vec![None; fields.len()];
    let mut graph_inputs = HashSet::new();
    for (k, f) in fields.iter().enumerate() {
        let Value::Bytes(b) = f.value else { continue };
        match f.number {
            1 => g.nodes.push(read_node(b)?),
            5 | 11 | 12 => {
                let wanted = if f.number == 5 { 8 } else { 1 };
                let name = read_fields(b)?
                    .into_iter()
                    .find_map(|h| match (h.number, h.value) {
                        (n, Value::Bytes(s)) if n == wanted => Some(s),
                        _ => None,
                    });
                let Some(name) = name.map(utf8).transpose()? else {
                    continue;
                };
                match f.number {
                    5 => {
                        g.initializers.insert(name, b);
                        initializer_of_field[k] = Some(name);
                    }
                    11 => {
                        graph_inputs.insert(name);
                    }
                    _ => {
                        g.outputs.insert(name);
                    }
                }
            }
            _ => {}
        }
    }
    // With subgraphs, the readers of a name are not all visible here; an
    // initializer that a graph input may override is no constant.
    if g.nodes.iter().any(Node::has_subgraph) {
        return Ok(Folded {
            kept: graph.to_vec(),
            added: Vec::new(),
            count: 0,
        });
    }
    for name in &graph_inputs {
        g.initializers.remove(name);
    }
    for (i, n) in g.nodes.iter().enumerate() {
        for o in &n.outputs {
            g.producer.insert(o, i);
        }
        for input in n.inputs.iter().filter(|s| !s.is_empty()) {
            g.consumers.entry(input).or_default().push(i);
        }
    }

    // Each fold reads only the graph: made in parallel, then taken in
    // node order unless an earlier one already took one of its nodes.
    let made: Vec<Option<Fold>> = (0..g.nodes.len())
        .into_par_iter()
        .map(|i| {
            let n = &g.nodes[i];
            match n.op_type {
                b"MatMulInteger" if n.domain.is_empty() => g.matmul(i),
                b"ConvInteger" if n.domain.is_empty() => g.conv(i),
                b"DynamicQuantizeLSTM" => g.lstm(i),
                _ => Ok(None),
            }
        })
        .collect::<Result<_, _>>()?;
    let mut folds: BTreeMap<usize, Fold> = BTreeMap::new();
    let mut removed: HashSet<usize> = HashSet::new();
    for f in made.into_iter().flatten() {
        if !folds.contains_key(&f.at)
            && f.removed
                .iter()
                .all(|r| !removed.contains(r) && !folds.contains_key(r))
        {
            removed.extend(&f.removed);
            folds.insert(f.at, f);
        }
    }
    let count = folds.len();

    // The nodes that still count, last to first: those whose outputs a
    // kept node or the graph's outputs read.
    let node_fields: Vec<&Field> = fields.iter().filter(|f| f.number == 1).collect();
    let mut encoded: Vec<Option<&[u8]>> = vec![None; g.nodes.len()];
    for (i, f) in node_fields.iter().enumerate() {
        encoded[i] = match (folds.get(&i), f.value) {
            (Some(fold), _) => Some(fold.node.as_slice()),
            (None, _) if removed.contains(&i) => None,
            (None, Value::Bytes(b)) => Some(b),
            (None, _) => None,
        };
    }
    let mut needed: HashSet<String> = g.outputs.iter().map(|s| s.to_string()).collect();
    let mut keep = vec![false; g.nodes.len()];
    for i in (0..g.nodes.len()).rev() {
        let Some(bytes) = encoded[i] else { continue };
        let n = read_node(bytes)?;
        if n.outputs.iter().any(|o| needed.contains(*o)) {
            keep[i] = true;
            needed.extend(
                n.inputs
                    .iter()
                    .filter(|s| !s.is_empty())
                    .map(|s| s.to_string()),
            );
        }
    }

    let mut out = Vec::with_capacity(graph.len());
    let mut node_index = 0;
    for (k, f) in fields.iter().enumerate() {
        if f.number == 1 {
            if keep[node_index]
                && let Some(bytes) = encoded[node_index]
            {
                put_bytes(&mut out, 1, bytes);
            }
            node_index += 1;
            continue;
        }
        if let Some(name) = initializer_of_field[k]
            && !needed.contains(name)
        {
            continue;
        }
        out.extend_from_slice(f.raw);
    }
    let added = folds.into_values().flat_map(|f| f.initializers).collect();
    Ok(Folded {
        kept: out,
        added,
        count,
    })
}

#[cfg(test)]
mod tests {
    use super::super::rewrite::{int_attribute, ints_attribute, tensor};
    use super::*;

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn output(name: &str) -> Vec<u8> {
        let mut v = Vec::new();
        put_bytes(&mut v, 1, name.as_bytes());
        v
    }

    fn model(graph: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        put_int(&mut m, 1, 8);
        put_bytes(&mut m, 2, b"tingshu-test");
        put_bytes(&mut m, 7, graph);
        m
    }

    /// x → quantized product (int8 weights, per-column scale and zero point)
    /// → y; x2 → quantized convolution with a quantized bias → y2; and a
    /// product whose integer result is itself an output (kept).
    fn quantized() -> Vec<u8> {
        let mut g = Vec::new();
        let mut n = |op: &str, name: &str, i: &[&str], o: &[&str], a: &[Vec<u8>]| {
            put_bytes(&mut g, 1, &node(op, name, i, o, a));
        };
        n(
            "DynamicQuantizeLinear",
            "q",
            &["x"],
            &["xq", "xs", "xz"],
            &[],
        );
        n("MatMulInteger", "mm", &["xq", "w", "xz", "wz"], &["p"], &[]);
        n("Cast", "c", &["p"], &["pf"], &[int_attribute("to", FLOAT)]);
        n("Mul", "s", &["xs", "ws"], &["scale"], &[]);
        n("Mul", "rescale", &["pf", "scale"], &["y"], &[]);
        n(
            "MatMulInteger",
            "raw",
            &["xq", "w", "xz", "wz"],
            &["kept"],
            &[],
        );
        n(
            "DynamicQuantizeLinear",
            "q2",
            &["x2"],
            &["xq2", "xs2", "xz2"],
            &[],
        );
        let conv = [
            ints_attribute("pads", &[1, 1]),
            ints_attribute("kernel_shape", &[3]),
        ];
        n(
            "ConvInteger",
            "cv",
            &["xq2", "cw", "xz2", "cwz"],
            &["cp"],
            &conv,
        );
        n("Mul", "bs", &["xs2", "cws"], &["bscale"], &[]);
        n("Div", "bd", &["bias", "bscale"], &["bq"], &[]);
        n("Floor", "bf", &["bq"], &["bfl"], &[]);
        n("Cast", "bc", &["bfl"], &["bi"], &[int_attribute("to", 6)]);
        n("Reshape", "br", &["bi", "bshape"], &["bias_q"], &[]);
        n("Add", "ba", &["cp", "bias_q"], &["cb"], &[]);
        n(
            "Cast",
            "cc",
            &["cb"],
            &["cbf"],
            &[int_attribute("to", FLOAT)],
        );
        n("Mul", "cr", &["cbf", "bscale"], &["y2"], &[]);
        put_bytes(
            &mut g,
            5,
            &tensor("w", INT8, &[3, 2], &[1, 2, 253, 4, 5, 250]),
        );
        put_bytes(&mut g, 5, &tensor("wz", INT8, &[2], &[1, 254]));
        put_bytes(&mut g, 5, &tensor("ws", FLOAT, &[2], &f32s(&[0.5, 0.25])));
        put_bytes(
            &mut g,
            5,
            &tensor(
                "cw",
                UINT8,
                &[2, 2, 3],
                &[10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120],
            ),
        );
        put_bytes(&mut g, 5, &tensor("cwz", UINT8, &[], &[50]));
        put_bytes(&mut g, 5, &tensor("cws", FLOAT, &[], &f32s(&[0.1])));
        put_bytes(&mut g, 5, &tensor("bias", FLOAT, &[2], &f32s(&[1.5, -2.0])));
        let shape: Vec<u8> = [1i64, 2, 1].iter().flat_map(|v| v.to_le_bytes()).collect();
        put_bytes(&mut g, 5, &tensor("bshape", 7, &[3], &shape));
        for o in ["y", "kept", "y2"] {
            put_bytes(&mut g, 12, &output(o));
        }
        model(&g)
    }

    /// The folded graph's node op types and its float initializers.
    type Weights = HashMap<String, (Vec<usize>, Vec<f32>)>;

    fn contents(model: &[u8]) -> (Vec<String>, Weights) {
        let fields = read_fields(model).unwrap();
        let Value::Bytes(g) = fields.iter().find(|f| f.number == 7).unwrap().value else {
            panic!("no graph")
        };
        let mut ops = Vec::new();
        let mut inits = HashMap::new();
        for f in read_fields(g).unwrap() {
            let Value::Bytes(b) = f.value else { continue };
            match f.number {
                1 => ops.push(String::from_utf8_lossy(read_node(b).unwrap().op_type).into_owned()),
                5 => {
                    let name = read_fields(b)
                        .unwrap()
                        .into_iter()
                        .find_map(|t| match (t.number, t.value) {
                            (8, Value::Bytes(n)) => Some(String::from_utf8_lossy(n).into_owned()),
                            _ => None,
                        })
                        .unwrap();
                    let v = read_values(b).unwrap();
                    inits.insert(name, v.map(|v| (v.dims, v.floats)).unwrap_or_default());
                }
                _ => {}
            }
        }
        (ops, inits)
    }

    #[test]
    fn quantized_products_and_convolutions_become_float_ones() {
        let original = quantized();
        let (folded, n) = dequantize(&original).unwrap();
        assert_eq!(n, 2);
        let (ops, inits) = contents(&folded);
        // The product whose integer result is an output stays, with its
        // quantizer; everything only the folded nodes read is gone.
        assert_eq!(
            ops,
            ["DynamicQuantizeLinear", "MatMul", "MatMulInteger", "Conv"],
            "{ops:?}"
        );
        // W = (w − zp) · scale, per column.
        let (dims, w) = &inits["tingshu_f1_1/w"];
        assert_eq!(dims, &[3, 2]);
        let want = [
            0.0,
            (2 + 2) as f32 * 0.25,
            -4.0 * 0.5,
            (4 + 2) as f32 * 0.25,
            2.0,
            (-6 + 2) as f32 * 0.25,
        ];
        assert_eq!(w, &want);
        let (dims, cw) = &inits["tingshu_f1_7/w"];
        assert_eq!(dims, &[2, 2, 3]);
        let want: Vec<f32> = (1..=12).map(|k| (k * 10 - 50) as f32 * 0.1).collect();
        for (a, b) in cw.iter().zip(&want) {
            assert!((a - b).abs() < 1e-6, "{cw:?}");
        }
        assert!(
            inits.contains_key("bias") && inits.contains_key("w"),
            "{:?}",
            inits.keys()
        );
        for gone in ["ws", "cw", "cwz", "cws", "bshape"] {
            assert!(!inits.contains_key(gone), "{gone}: {:?}", inits.keys());
        }
        // The convolution keeps its attributes and takes the float bias.
        let text = String::from_utf8_lossy(&folded);
        assert!(text.contains("kernel_shape") && text.contains("tingshu-test"));
        assert_eq!(dequantize(&original).unwrap().0, folded);
    }

    #[test]
    fn a_quantized_lstm_becomes_an_lstm_with_onnx_weight_layout() {
        let mut g = Vec::new();
        let inputs = [
            "x", "w", "r", "b", "", "h0", "c0", "", "ws", "wz", "rs", "rz",
        ];
        let attrs = [int_attribute("hidden_size", 1)];
        let mut lstm = node(
            "DynamicQuantizeLSTM",
            "l",
            &inputs,
            &["y", "yh", "yc"],
            &attrs,
        );
        put_bytes(&mut lstm, 7, b"com.microsoft");
        put_bytes(&mut g, 1, &lstm);
        // W: [1 direction, 2 inputs, 4 gates]; R: [1, 1 hidden, 4 gates].
        put_bytes(
            &mut g,
            5,
            &tensor("w", INT8, &[1, 2, 4], &[1, 2, 3, 4, 5, 6, 7, 8]),
        );
        put_bytes(&mut g, 5, &tensor("r", INT8, &[1, 1, 4], &[9, 10, 11, 12]));
        put_bytes(&mut g, 5, &tensor("ws", FLOAT, &[1], &f32s(&[2.0])));
        put_bytes(&mut g, 5, &tensor("wz", INT8, &[1], &[1]));
        put_bytes(&mut g, 5, &tensor("rs", FLOAT, &[1], &f32s(&[0.5])));
        put_bytes(&mut g, 5, &tensor("rz", INT8, &[1], &[0]));
        put_bytes(&mut g, 12, &output("y"));
        let (folded, n) = dequantize(&model(&g)).unwrap();
        assert_eq!(n, 1);
        let (ops, inits) = contents(&folded);
        assert_eq!(ops, ["LSTM"]);
        // [1, 4 gates, 2 inputs]: gate g, input i from W[0, i, g].
        let (dims, w) = &inits["tingshu_f1_0/w"];
        assert_eq!(dims, &[1, 4, 2]);
        assert_eq!(w, &[0.0, 8.0, 2.0, 10.0, 4.0, 12.0, 6.0, 14.0]);
        let (dims, r) = &inits["tingshu_f1_0/r"];
        assert_eq!(dims, &[1, 4, 1]);
        assert_eq!(r, &[4.5, 5.0, 5.5, 6.0]);
        assert!(!String::from_utf8_lossy(&folded).contains("com.microsoft"));
    }
}
