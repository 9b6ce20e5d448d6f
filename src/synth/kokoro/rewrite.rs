//! A faster CPU graph for the same model, with the same output bits.
//!
//! The int8 Kokoro model quantizes its 1-D convolutions as `ConvInteger`
//! with uint8 weights. ONNX Runtime runs those through a uint8 × uint8
//! matrix product, which on x86 uses neither the VNNI instructions nor the
//! `VPMADDUBSW` of CPUs without them (both multiply uint8 by int8), and
//! they took two thirds of the model's time. This module rewrites every
//! stride-1 `ConvInteger` as the product it stands for:
//!
//! ```text
//! x: [1, C, T] uint8 ─ Transpose ─ Pad (with x's zero point) ─ Gather
//!   (rows t, t + d, …, t + (k − 1)·d for each t: the kernel's taps at the
//!   dilation d) ─ Reshape → [1, T, k·C]
//!   ─ MatMulInteger (weights as int8 [k·C, M], zero point shifted alike)
//!   ─ Transpose → [1, M, T] int32
//! ```
//!
//! Shifting both the weights and their zero point by the same amount
//! leaves every `w − zero point` unchanged, and integer sums are exact, so
//! the result is the same int32 tensor: the audio is bit-identical (a test
//! checks it on the installed model). Strided or grouped convolutions and
//! anything unexpected are left as they are.
//!
//! Where the products are exact depends on the CPU ([`Products`]): VNNI
//! adds uint8 × int8 products into 32 bits; without it ONNX Runtime adds
//! pairs of them into 16 bits, with saturation, which is exact only for
//! weights within −64..=64. The published model's weights are 7-bit
//! (0..=127, quantized with a reduced range), so shifted by 64 they are
//! exact on every x86-64 CPU; a weight tensor that is not is rewritten
//! only where VNNI is.
//!
//! The model is a protobuf message (`onnx.proto`); this module reads and
//! writes only the fields it needs and copies every other field's bytes
//! unchanged, so no ONNX library is needed.

use std::collections::HashMap;

/// Changes when the rewrite changes (part of the optimized graph's cache
/// key, so a new rewrite never loads an old cached graph).
pub const VERSION: &str = "mm3";

/// How ONNX Runtime's uint8 × int8 matrix products add on this CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Products {
    /// Dot products into 32 bits (VNNI): exact for every weight.
    Exact,
    /// Pairs of products into 16 bits with saturation (`VPMADDUBSW`, x86
    /// without VNNI): exact when every weight, as int8, lies within
    /// −64..=64 (255 · 64 · 2 = 32,640 < 32,767).
    Pairs,
}

/// How this CPU's uint8 × int8 products add; `None` where the rewrite is
/// not used (not x86-64: not measured there).
pub fn products_here() -> Option<Products> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512vnni") || std::is_x86_feature_detected!("avxvnni") {
            Some(Products::Exact)
        } else {
            Some(Products::Pairs)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Whether CPU sessions run the rewritten graph: on x86-64
/// ([`products_here`]), unless the environment sets
/// `TINGSHU_KOKORO_REWRITE=0` (to compare, or to rule the rewrite out when
/// something sounds wrong).
pub fn enabled() -> bool {
    products_here().is_some() && std::env::var_os("TINGSHU_KOKORO_REWRITE").is_none_or(|v| v != "0")
}

/// How CPU sessions run the convolutions here, for `tingshu voices`.
pub fn describe() -> &'static str {
    match (products_here(), enabled()) {
        (None, _) => "convolutions as published (the int8 rewrite is for x86-64 only)",
        (Some(_), false) => "convolutions as published (TINGSHU_KOKORO_REWRITE=0)",
        (Some(Products::Exact), true) => {
            "convolutions as int8 matrix products (VNNI: exact for every weight)"
        }
        (Some(Products::Pairs), true) => {
            "convolutions as int8 matrix products (no VNNI: those with 7-bit weights, exact)"
        }
    }
}

/// The rewrite's part of the optimized graph's cache key on this CPU: the
/// version, and whether weights beyond 7 bits were rewritten.
pub fn cache_tag() -> String {
    match products_here() {
        Some(Products::Pairs) => format!("{VERSION}-pairs"),
        _ => VERSION.to_owned(),
    }
}

/// Why a model could not be rewritten (it is then used as it is).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RewriteError {
    #[error("not an ONNX model: {0}")]
    Malformed(&'static str),
    #[error("the model has no graph")]
    NoGraph,
}

/// The rewritten model for this CPU and how many convolutions were
/// rewritten.
pub fn rewrite(model: &[u8]) -> Result<(Vec<u8>, usize), RewriteError> {
    rewrite_for(model, products_here().unwrap_or(Products::Pairs))
}

/// The rewritten model for a CPU whose products add as `products`, and
/// how many convolutions were rewritten.
pub fn rewrite_for(model: &[u8], products: Products) -> Result<(Vec<u8>, usize), RewriteError> {
    let fields = read_fields(model)?;
    let opset = default_opset(&fields)?;
    let mut out = Vec::with_capacity(model.len() + model.len() / 8);
    let mut rewritten = None;
    for f in &fields {
        match (f.number, f.value) {
            (7, Value::Bytes(graph)) if rewritten.is_none() => {
                let (graph, n) = if opset >= 13 {
                    rewrite_graph(graph, products)?
                } else {
                    (graph.to_vec(), 0)
                };
                put_bytes(&mut out, 7, &graph);
                rewritten = Some(n);
            }
            _ => out.extend_from_slice(f.raw),
        }
    }
    rewritten.map(|n| (out, n)).ok_or(RewriteError::NoGraph)
}

/// The default domain's opset version (`ModelProto.opset_import`).
pub(super) fn default_opset(model: &[Field]) -> Result<i64, RewriteError> {
    let mut version = 0;
    for f in model.iter().filter(|f| f.number == 8) {
        let Value::Bytes(b) = f.value else {
            return Err(RewriteError::Malformed("opset_import"));
        };
        let (mut domain, mut v) = (&b""[..], 0);
        for g in read_fields(b)? {
            match (g.number, g.value) {
                (1, Value::Bytes(d)) => domain = d,
                (2, Value::Varint(x)) => v = x as i64,
                _ => {}
            }
        }
        if domain.is_empty() || domain == b"ai.onnx" {
            version = version.max(v);
        }
    }
    Ok(version)
}

// --- Protobuf wire format ---------------------------------------------------

#[derive(Clone, Copy)]
pub(super) enum Value<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32,
}

/// One field of a message: its number, value and bytes (tag included).
pub(super) struct Field<'a> {
    pub(super) number: u32,
    pub(super) value: Value<'a>,
    pub(super) raw: &'a [u8],
}

fn read_varint(buf: &[u8], pos: &mut usize) -> Result<u64, RewriteError> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf
            .get(*pos)
            .ok_or(RewriteError::Malformed("truncated varint"))?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(RewriteError::Malformed("varint too long"))
}

fn take<'a>(buf: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8], RewriteError> {
    let end = pos
        .checked_add(n)
        .filter(|&e| e <= buf.len())
        .ok_or(RewriteError::Malformed("truncated field"))?;
    let s = &buf[*pos..end];
    *pos = end;
    Ok(s)
}

pub(super) fn read_fields(buf: &[u8]) -> Result<Vec<Field<'_>>, RewriteError> {
    let mut fields = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let start = pos;
        let tag = read_varint(buf, &mut pos)?;
        let number = u32::try_from(tag >> 3).map_err(|_| RewriteError::Malformed("field"))?;
        let value = match tag & 7 {
            0 => Value::Varint(read_varint(buf, &mut pos)?),
            1 => {
                take(buf, &mut pos, 8)?;
                Value::Fixed64
            }
            2 => {
                let n = read_varint(buf, &mut pos)?;
                let n = usize::try_from(n).map_err(|_| RewriteError::Malformed("length"))?;
                Value::Bytes(take(buf, &mut pos, n)?)
            }
            5 => {
                take(buf, &mut pos, 4)?;
                Value::Fixed32
            }
            _ => return Err(RewriteError::Malformed("unsupported wire type")),
        };
        if number == 0 {
            return Err(RewriteError::Malformed("field number 0"));
        }
        fields.push(Field {
            number,
            value,
            raw: &buf[start..pos],
        });
    }
    Ok(fields)
}

/// Repeated int64 values of field `number`, packed or not.
pub(super) fn ints(fields: &[Field], number: u32) -> Result<Vec<i64>, RewriteError> {
    let mut out = Vec::new();
    for f in fields.iter().filter(|f| f.number == number) {
        match f.value {
            Value::Varint(v) => out.push(v as i64),
            Value::Bytes(b) => {
                let mut pos = 0;
                while pos < b.len() {
                    out.push(read_varint(b, &mut pos)? as i64);
                }
            }
            _ => return Err(RewriteError::Malformed("repeated int64")),
        }
    }
    Ok(out)
}

pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_varint(out, u64::from(number) << 3 | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

pub(super) fn put_int(out: &mut Vec<u8>, number: u32, v: i64) {
    put_varint(out, u64::from(number) << 3);
    put_varint(out, v as u64);
}

// --- ONNX messages ----------------------------------------------------------

/// `TensorProto.DataType`
pub(super) const UINT8: i64 = 2;
pub(super) const INT8: i64 = 3;
const INT64: i64 = 7;

/// The parts of a `NodeProto` the rewrite reads.
pub(super) struct Node<'a> {
    pub(super) op_type: &'a [u8],
    pub(super) domain: &'a [u8],
    pub(super) name: &'a [u8],
    pub(super) inputs: Vec<&'a str>,
    pub(super) outputs: Vec<&'a str>,
    /// Attribute name → its fields.
    pub(super) attributes: Vec<(&'a [u8], Vec<Field<'a>>)>,
}

pub(super) fn utf8(b: &[u8]) -> Result<&str, RewriteError> {
    std::str::from_utf8(b).map_err(|_| RewriteError::Malformed("name is not UTF-8"))
}

pub(super) fn read_node(b: &[u8]) -> Result<Node<'_>, RewriteError> {
    let mut node = Node {
        op_type: b"",
        domain: b"",
        name: b"",
        inputs: Vec::new(),
        outputs: Vec::new(),
        attributes: Vec::new(),
    };
    for f in read_fields(b)? {
        let Value::Bytes(v) = f.value else { continue };
        match f.number {
            1 => node.inputs.push(utf8(v)?),
            2 => node.outputs.push(utf8(v)?),
            3 => node.name = v,
            4 => node.op_type = v,
            7 => node.domain = v,
            5 => {
                let fields = read_fields(v)?;
                let name = fields
                    .iter()
                    .find_map(|f| match (f.number, f.value) {
                        (1, Value::Bytes(n)) => Some(n),
                        _ => None,
                    })
                    .unwrap_or(b"");
                node.attributes.push((name, fields));
            }
            _ => {}
        }
    }
    Ok(node)
}

impl Node<'_> {
    pub(super) fn attribute(&self, name: &str) -> Option<&[Field<'_>]> {
        self.attributes
            .iter()
            .find(|(n, _)| *n == name.as_bytes())
            .map(|(_, f)| f.as_slice())
    }

    fn ints(&self, name: &str, default: &[i64]) -> Result<Vec<i64>, RewriteError> {
        match self.attribute(name) {
            Some(fields) => ints(fields, 8),
            None => Ok(default.to_vec()),
        }
    }

    pub(super) fn int(&self, name: &str, default: i64) -> Result<i64, RewriteError> {
        match self.attribute(name) {
            Some(fields) => Ok(ints(fields, 3)?.last().copied().unwrap_or(default)),
            None => Ok(default),
        }
    }

    /// Whether an attribute holds a subgraph (`g` or `graphs`).
    pub(super) fn has_subgraph(&self) -> bool {
        self.attributes
            .iter()
            .any(|(_, f)| f.iter().any(|f| f.number == 6 || f.number == 11))
    }
}

/// A tensor's type, shape and data (only the layouts the rewrite needs).
pub(super) struct Tensor {
    pub(super) data_type: i64,
    pub(super) dims: Vec<i64>,
    pub(super) data: Vec<u8>,
}

pub(super) fn read_tensor(b: &[u8]) -> Result<Tensor, RewriteError> {
    let fields = read_fields(b)?;
    let dims = ints(&fields, 1)?;
    let data_type = ints(&fields, 2)?.last().copied().unwrap_or(0);
    let mut data = None;
    for f in &fields {
        match (f.number, f.value) {
            (9, Value::Bytes(raw)) => data = Some(raw.to_vec()),
            // External data: the rewrite leaves such a tensor alone.
            (13 | 14, _) => return Err(RewriteError::Malformed("external data")),
            _ => {}
        }
    }
    let data = match data {
        Some(d) => d,
        // uint8 and int8 values may also sit in int32_data, one per value.
        None => ints(&fields, 5)?.into_iter().map(|v| v as u8).collect(),
    };
    Ok(Tensor {
        data_type,
        dims,
        data,
    })
}

pub(super) fn tensor(name: &str, data_type: i64, dims: &[i64], raw: &[u8]) -> Vec<u8> {
    let mut t = Vec::with_capacity(raw.len() + name.len() + 32);
    for &d in dims {
        put_int(&mut t, 1, d);
    }
    put_int(&mut t, 2, data_type);
    put_bytes(&mut t, 8, name.as_bytes());
    put_bytes(&mut t, 9, raw);
    t
}

fn i64_scalar(name: &str, value: i64) -> Vec<u8> {
    tensor(name, INT64, &[], &value.to_le_bytes())
}

fn i64_tensor(name: &str, values: &[i64]) -> Vec<u8> {
    let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    tensor(name, INT64, &[values.len() as i64], &raw)
}

/// An `AttributeProto` of type `INT` (2).
pub(super) fn int_attribute(name: &str, value: i64) -> Vec<u8> {
    let mut a = Vec::new();
    put_bytes(&mut a, 1, name.as_bytes());
    put_int(&mut a, 3, value);
    put_int(&mut a, 20, 2);
    a
}

/// An `AttributeProto` of type `INTS` (7).
pub(super) fn ints_attribute(name: &str, values: &[i64]) -> Vec<u8> {
    let mut a = Vec::new();
    put_bytes(&mut a, 1, name.as_bytes());
    for &v in values {
        put_int(&mut a, 8, v);
    }
    put_int(&mut a, 20, 7);
    a
}

pub(super) fn node(
    op: &str,
    name: &str,
    inputs: &[&str],
    outputs: &[&str],
    attributes: &[Vec<u8>],
) -> Vec<u8> {
    let mut n = Vec::new();
    for i in inputs {
        put_bytes(&mut n, 1, i.as_bytes());
    }
    for o in outputs {
        put_bytes(&mut n, 2, o.as_bytes());
    }
    put_bytes(&mut n, 3, name.as_bytes());
    put_bytes(&mut n, 4, op.as_bytes());
    for a in attributes {
        put_bytes(&mut n, 5, a);
    }
    n
}

// --- The rewrite --------------------------------------------------------------

/// A `ConvInteger` turned into nodes and initializers (encoded).
struct Replacement {
    nodes: Vec<Vec<u8>>,
    initializers: Vec<Vec<u8>>,
    /// The weight and its zero point, no longer read by this node.
    freed: [String; 2],
}

fn rewrite_graph(graph: &[u8], products: Products) -> Result<(Vec<u8>, usize), RewriteError> {
    let fields = read_fields(graph)?;
    let mut nodes = Vec::new();
    // Per field: the initializer's name, for fields that are one.
    let mut initializer_names = vec![None; fields.len()];
    let mut initializers: HashMap<&str, &[u8]> = HashMap::new();
    let mut inputs: Vec<&str> = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        let Value::Bytes(b) = f.value else {
            if matches!(f.number, 1 | 5 | 11) {
                return Err(RewriteError::Malformed("graph field"));
            }
            continue;
        };
        match f.number {
            1 => nodes.push(read_node(b)?),
            5 | 11 => {
                let name = read_fields(b)?
                    .into_iter()
                    .find_map(|g| match (g.number, g.value) {
                        (1, Value::Bytes(n)) if f.number == 11 => Some(n),
                        (8, Value::Bytes(n)) if f.number == 5 => Some(n),
                        _ => None,
                    });
                let Some(name) = name.map(utf8).transpose()? else {
                    continue;
                };
                if f.number == 5 {
                    initializers.insert(name, b);
                    initializer_names[i] = Some(name);
                } else {
                    inputs.push(name);
                }
            }
            _ => {}
        }
    }
    // With subgraphs, the uses of a name are not all visible here.
    let subgraphs = nodes.iter().any(Node::has_subgraph);
    let mut uses: HashMap<&str, usize> = HashMap::new();
    for n in &nodes {
        for i in &n.inputs {
            *uses.entry(i).or_default() += 1;
        }
    }
    // An initializer that a graph input of the same name may override is
    // not a constant.
    let constant = |name: &str| {
        (!inputs.contains(&name))
            .then(|| initializers.get(name))
            .flatten()
            .map(|b| read_tensor(b))
            .transpose()
    };
    let mut replacements: Vec<Option<Replacement>> = Vec::with_capacity(nodes.len());
    for (index, n) in nodes.iter().enumerate() {
        let conv = n.op_type == b"ConvInteger" && (n.domain.is_empty() || n.domain == b"ai.onnx");
        replacements.push(if conv {
            plan(n, index, products, constant)?
        } else {
            None
        });
    }
    let mut freed: HashMap<&str, usize> = HashMap::new();
    for r in replacements.iter().flatten() {
        for name in &r.freed {
            *freed.entry(name.as_str()).or_default() += 1;
        }
    }

    let mut out = Vec::with_capacity(graph.len() + graph.len() / 8);
    let mut node_index = 0;
    for (i, f) in fields.iter().enumerate() {
        if f.number == 1 {
            match &replacements[node_index] {
                Some(r) => r.nodes.iter().for_each(|n| put_bytes(&mut out, 1, n)),
                None => out.extend_from_slice(f.raw),
            }
            node_index += 1;
            continue;
        }
        // A weight that only rewritten nodes read is dropped: its int8
        // copy replaces it.
        let unused = initializer_names[i].is_some_and(|n| {
            !subgraphs
                && !inputs.contains(&n)
                && freed.get(n).is_some_and(|k| Some(k) == uses.get(n))
        });
        if !unused {
            out.extend_from_slice(f.raw);
        }
    }
    for r in replacements.iter().flatten() {
        for t in &r.initializers {
            put_bytes(&mut out, 5, t);
        }
    }
    Ok((out, replacements.iter().flatten().count()))
}

/// The replacement of `ConvInteger` node `n` (number `index`), or `None`
/// when it is not one the rewrite handles.
fn plan(
    n: &Node,
    index: usize,
    products: Products,
    constant: impl Fn(&str) -> Result<Option<Tensor>, RewriteError>,
) -> Result<Option<Replacement>, RewriteError> {
    let [x, w, x_zero, w_zero] = n.inputs[..] else {
        return Ok(None);
    };
    let [y] = n.outputs[..] else {
        return Ok(None);
    };
    if x_zero.is_empty() || w_zero.is_empty() {
        return Ok(None);
    }
    let auto_pad = n.attribute("auto_pad").and_then(|f| {
        f.iter().find_map(|f| match (f.number, f.value) {
            (4, Value::Bytes(s)) => Some(s),
            _ => None,
        })
    });
    if auto_pad.is_some_and(|s| s != b"NOTSET") || n.int("group", 1)? != 1 {
        return Ok(None);
    }
    let (Some(weight), Some(zero)) = (constant(w)?, constant(w_zero)?) else {
        return Ok(None);
    };
    let &[m, c, k] = weight.dims.as_slice() else {
        return Ok(None);
    };
    let (Ok(m), Ok(c), Ok(k)) = (usize::try_from(m), usize::try_from(c), usize::try_from(k)) else {
        return Ok(None);
    };
    if weight.data_type != UINT8
        || weight.data.len() != m * c * k
        || k == 0
        || zero.data_type != UINT8
        || zero.data.len() != 1
        || zero.dims.iter().product::<i64>() != 1
    {
        return Ok(None);
    }
    let strides = n.ints("strides", &[1])?;
    let dilations = n.ints("dilations", &[1])?;
    let pads = n.ints("pads", &[0, 0])?;
    let kernel = n.ints("kernel_shape", &[k as i64])?;
    let (&[1], &[d], &[p0, p1], &[kk]) = (
        strides.as_slice(),
        dilations.as_slice(),
        pads.as_slice(),
        kernel.as_slice(),
    ) else {
        return Ok(None);
    };
    // Only "same" convolutions: the output is as long as the input.
    if kk != k as i64 || d < 1 || p0 != p1 || 2 * p0 != d * (k as i64 - 1) {
        return Ok(None);
    }
    let p = p0;
    // Weights and zero point shifted by 64 lie within −64..=64 when every
    // weight is at most 128 (exact with either kind of product); by 128,
    // anything fits int8, but only dot products into 32 bits stay exact.
    let shift = if weight.data.iter().all(|&v| v <= 128) && zero.data[0] <= 191 {
        64
    } else if products == Products::Exact {
        128
    } else {
        return Ok(None);
    };

    let pre = format!("tingshu_{VERSION}_{index}");
    let name = |s: &str| format!("{pre}/{s}");
    let mut nodes = Vec::new();
    let mut inits = Vec::new();
    let transposed = name("x_t");
    nodes.push(node(
        "Transpose",
        &name("transpose_in"),
        &[x],
        &[&transposed],
        &[ints_attribute("perm", &[0, 2, 1])],
    ));
    let mut a = transposed.clone();
    if k > 1 {
        // p = d·(k − 1)/2 ≥ 1 here.
        let pads = name("pads");
        inits.push(i64_tensor(&pads, &[0, p, 0, 0, p, 0]));
        let padded = name("x_p");
        nodes.push(node(
            "Pad",
            &name("pad"),
            &[&a, &pads, x_zero],
            &[&padded],
            &[],
        ));
        a = padded;
        // Row t of the columns holds the padded input at t, t + d, …,
        // t + (k − 1)·d: one Gather with indices [T, k] computed from T.
        let (two, zero, one) = (name("two"), name("zero"), name("one"));
        inits.push(i64_scalar(&two, 2));
        inits.push(i64_scalar(&zero, 0));
        inits.push(i64_scalar(&one, 1));
        let (shape, frames, times, column) =
            (name("shape"), name("t"), name("times"), name("column"));
        nodes.push(node("Shape", &name("shape_of"), &[x], &[&shape], &[]));
        nodes.push(node(
            "Gather",
            &name("frames"),
            &[&shape, &two],
            &[&frames],
            &[int_attribute("axis", 0)],
        ));
        nodes.push(node(
            "Range",
            &name("range"),
            &[&zero, &frames, &one],
            &[&times],
            &[],
        ));
        let (axes, offsets, indices) = (name("axes"), name("offsets"), name("indices"));
        inits.push(i64_tensor(&axes, &[1]));
        let taps: Vec<i64> = (0..k as i64).map(|j| j * d).collect();
        inits.push(i64_tensor(&offsets, &taps));
        nodes.push(node(
            "Unsqueeze",
            &name("unsqueeze"),
            &[&times, &axes],
            &[&column],
            &[],
        ));
        nodes.push(node(
            "Add",
            &name("taps"),
            &[&column, &offsets],
            &[&indices],
            &[],
        ));
        let (gathered, shape_out, cols) = (name("gathered"), name("cols_shape"), name("cols"));
        nodes.push(node(
            "Gather",
            &name("im2col"),
            &[&a, &indices],
            &[&gathered],
            &[int_attribute("axis", 1)],
        ));
        inits.push(i64_tensor(&shape_out, &[0, -1, (k * c) as i64]));
        nodes.push(node(
            "Reshape",
            &name("reshape"),
            &[&gathered, &shape_out],
            &[&cols],
            &[],
        ));
        a = cols;
    }
    // B[j·C + ci, o] = W[o, ci, j] − shift, as int8.
    let mut b = vec![0u8; m * c * k];
    for o in 0..m {
        for ci in 0..c {
            for j in 0..k {
                let v = weight.data[(o * c + ci) * k + j];
                b[(j * c + ci) * m + o] = v.wrapping_sub(shift);
            }
        }
    }
    let (b_name, b_zero) = (name("w"), name("w_zero"));
    inits.push(tensor(&b_name, INT8, &[(k * c) as i64, m as i64], &b));
    inits.push(tensor(
        &b_zero,
        INT8,
        &[],
        &[zero.data[0].wrapping_sub(shift)],
    ));
    let product = name("y_t");
    nodes.push(node(
        "MatMulInteger",
        &name("matmul"),
        &[&a, &b_name, x_zero, &b_zero],
        &[&product],
        &[],
    ));
    nodes.push(node(
        "Transpose",
        &format!("{}/transpose_out", String::from_utf8_lossy(n.name)),
        &[&product],
        &[y],
        &[ints_attribute("perm", &[0, 2, 1])],
    ));
    Ok(Some(Replacement {
        nodes,
        initializers: inits,
        freed: [w.to_owned(), w_zero.to_owned()],
    }))
}

/// Small models built by hand for the graph changes' tests, and the
/// runtime they run in.
#[cfg(test)]
pub(super) mod fixtures {
    use super::*;

    /// A tensor's `ValueInfoProto` (`None`: a symbolic dimension).
    pub(in crate::synth::kokoro) fn value_info(
        name: &str,
        elem_type: i64,
        dims: &[Option<i64>],
    ) -> Vec<u8> {
        let mut shape = Vec::new();
        for d in dims {
            let mut dim = Vec::new();
            match d {
                Some(v) => put_int(&mut dim, 1, *v),
                None => put_bytes(&mut dim, 2, b"T"),
            }
            put_bytes(&mut shape, 1, &dim);
        }
        let mut tensor_type = Vec::new();
        put_int(&mut tensor_type, 1, elem_type);
        put_bytes(&mut tensor_type, 2, &shape);
        let mut ty = Vec::new();
        put_bytes(&mut ty, 1, &tensor_type);
        let mut v = Vec::new();
        put_bytes(&mut v, 1, name.as_bytes());
        put_bytes(&mut v, 2, &ty);
        v
    }

    /// A model (IR 8, opset 17) of graph `g`.
    pub(in crate::synth::kokoro) fn model_of(g: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        put_int(&mut m, 1, 8);
        let mut opset = Vec::new();
        put_bytes(&mut opset, 1, b"");
        put_int(&mut opset, 2, 17);
        put_bytes(&mut m, 8, &opset);
        put_bytes(&mut m, 7, g);
        m
    }

    /// The op types of `model`'s nodes, in order.
    pub(in crate::synth::kokoro) fn op_types(model: &[u8]) -> Vec<String> {
        let fields = read_fields(model).unwrap();
        let Value::Bytes(g) = fields.iter().find(|f| f.number == 7).unwrap().value else {
            panic!("no graph")
        };
        read_fields(g)
            .unwrap()
            .iter()
            .filter_map(|f| match (f.number, f.value) {
                (1, Value::Bytes(b)) => {
                    Some(String::from_utf8(read_node(b).unwrap().op_type.to_vec()).unwrap())
                }
                _ => None,
            })
            .collect()
    }

    /// ONNX Runtime from the installed files, or `None` (the test is then
    /// skipped) where they are not installed and the run does not require
    /// them.
    pub(in crate::synth::kokoro) fn runtime() -> Option<ort::environment::Environment> {
        let files = super::super::KokoroFiles::locate(None);
        if !files.installed() {
            assert!(
                std::env::var_os("TINGSHU_REQUIRE_SERVICES").is_none_or(|v| v != "1"),
                "ONNX Runtime is not installed in {} (scripts/install-kokoro.sh)",
                files.root.display()
            );
            eprintln!("skipped: ONNX Runtime is not installed (scripts/install-kokoro.sh)");
            return None;
        }
        Some(
            super::super::engine::warm_runtime(&files.runtime)
                .unwrap()
                .0,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{runtime, value_info};
    use super::*;

    /// Deterministic bytes spread over 0..=255.
    fn bytes(n: usize, seed: u32) -> Vec<u8> {
        let mut x = seed.wrapping_mul(2_654_435_761) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 11) as u8
            })
            .collect()
    }

    /// [`model_with`] 8-bit weights (0..=255).
    fn model() -> Vec<u8> {
        model_with(&bytes(60, 1))
    }

    /// [`model_with`] 7-bit weights (0..=127), as the published model's.
    fn model_7bit() -> Vec<u8> {
        model_with(&weights_7bit())
    }

    /// The 8-bit weights of [`model`] halved: 0..=127.
    fn weights_7bit() -> Vec<u8> {
        bytes(60, 1).iter().map(|b| b >> 1).collect()
    }

    /// A model: x (float [1, 4, T]) → DynamicQuantizeLinear → two
    /// ConvIntegers: `same` (kernel 3, dilation 2, pads 2, `weights` [5, 4,
    /// 3]: rewritten) and `strided` (stride 2: kept), both int32 outputs.
    fn model_with(weights: &[u8]) -> Vec<u8> {
        let mut g = Vec::new();
        let dql = node(
            "DynamicQuantizeLinear",
            "quantize",
            &["x"],
            &["xq", "xs", "xz"],
            &[],
        );
        put_bytes(&mut g, 1, &dql);
        let same = node(
            "ConvInteger",
            "same",
            &["xq", "w", "xz", "wz"],
            &["y"],
            &[
                ints_attribute("dilations", &[2]),
                ints_attribute("pads", &[2, 2]),
                ints_attribute("kernel_shape", &[3]),
            ],
        );
        put_bytes(&mut g, 1, &same);
        let strided = node(
            "ConvInteger",
            "strided",
            &["xq", "w2", "xz", "wz"],
            &["y2"],
            &[
                ints_attribute("strides", &[2]),
                ints_attribute("pads", &[1, 1]),
            ],
        );
        put_bytes(&mut g, 1, &strided);
        put_bytes(&mut g, 2, b"tiny");
        put_bytes(&mut g, 5, &tensor("w", UINT8, &[5, 4, 3], weights));
        put_bytes(&mut g, 5, &tensor("w2", UINT8, &[2, 4, 3], &bytes(24, 2)));
        put_bytes(&mut g, 5, &tensor("wz", UINT8, &[], &[131]));
        put_bytes(&mut g, 11, &value_info("x", 1, &[Some(1), Some(4), None]));
        put_bytes(&mut g, 12, &value_info("y", 6, &[Some(1), Some(5), None]));
        put_bytes(&mut g, 12, &value_info("y2", 6, &[Some(1), Some(2), None]));
        let mut m = Vec::new();
        put_int(&mut m, 1, 8);
        put_bytes(&mut m, 2, b"tingshu-test");
        let mut opset = Vec::new();
        put_bytes(&mut opset, 1, b"");
        put_int(&mut opset, 2, 17);
        put_bytes(&mut m, 8, &opset);
        put_bytes(&mut m, 7, &g);
        m
    }

    /// The fields of `model`'s graph.
    fn graph(model: &[u8]) -> Vec<Field<'_>> {
        let fields = read_fields(model).unwrap();
        let Value::Bytes(g) = fields.iter().find(|f| f.number == 7).unwrap().value else {
            panic!("no graph")
        };
        read_fields(g).unwrap()
    }

    /// The graph's nodes' op types, in order, and its initializers' names.
    fn contents(model: &[u8]) -> (Vec<String>, Vec<String>) {
        let mut ops = Vec::new();
        let mut inits = Vec::new();
        for f in graph(model) {
            let Value::Bytes(b) = f.value else { continue };
            match f.number {
                1 => ops.push(String::from_utf8(read_node(b).unwrap().op_type.to_vec()).unwrap()),
                5 => {
                    for t in read_fields(b).unwrap() {
                        if let (8, Value::Bytes(n)) = (t.number, t.value) {
                            inits.push(String::from_utf8(n.to_vec()).unwrap());
                        }
                    }
                }
                _ => {}
            }
        }
        (ops, inits)
    }

    #[test]
    fn same_convolutions_become_products_and_strided_ones_stay() {
        let original = model();
        let (rewritten, n) = rewrite_for(&original, Products::Exact).unwrap();
        assert_eq!(n, 1);
        let (ops, inits) = contents(&rewritten);
        let count = |op: &str| ops.iter().filter(|o| *o == op).count();
        assert_eq!(count("ConvInteger"), 1, "{ops:?}");
        assert_eq!(count("MatMulInteger"), 1, "{ops:?}");
        assert_eq!(count("Slice"), 0, "{ops:?}");
        assert_eq!(count("Gather"), 2, "{ops:?}");
        assert_eq!(count("Range"), 1, "{ops:?}");
        assert_eq!(ops[0], "DynamicQuantizeLinear");
        // The rewritten weight is gone; the strided node's and the shared
        // zero point stay.
        assert!(!inits.contains(&"w".to_owned()), "{inits:?}");
        assert!(inits.contains(&"w2".to_owned()), "{inits:?}");
        assert!(inits.contains(&"wz".to_owned()), "{inits:?}");
        // Fields the rewrite does not read are copied: the producer name.
        assert!(rewritten.windows(12).any(|w| w == b"tingshu-test"));
        // Rewriting is deterministic.
        assert_eq!(
            rewrite_for(&original, Products::Exact).unwrap().0,
            rewritten
        );
    }

    #[test]
    fn weights_beyond_7_bits_stay_convolutions_where_pairs_of_products_saturate() {
        let (kept, n) = rewrite_for(&model(), Products::Pairs).unwrap();
        assert_eq!(n, 0);
        let (ops, inits) = contents(&kept);
        assert_eq!(ops, ["DynamicQuantizeLinear", "ConvInteger", "ConvInteger"]);
        assert!(inits.contains(&"w".to_owned()), "{inits:?}");
        let (rewritten, n) = rewrite_for(&model_7bit(), Products::Pairs).unwrap();
        assert_eq!(n, 1);
        assert!(contents(&rewritten).0.contains(&"MatMulInteger".to_owned()));
        // A zero point beyond 191 does not fit int8 shifted by 64.
        let mut high_zero = model_7bit();
        let at = high_zero.windows(3).position(|w| w == [0x4a, 0x01, 131]);
        high_zero[at.expect("the zero point's raw data") + 2] = 200;
        assert_eq!(rewrite_for(&high_zero, Products::Pairs).unwrap().1, 0);
        assert_eq!(rewrite_for(&high_zero, Products::Exact).unwrap().1, 1);
    }

    /// The rewritten int8 weights of `model` ([k·C, M]).
    fn int8_weights(model: &[u8]) -> Tensor {
        graph(model)
            .into_iter()
            .filter(|f| f.number == 5)
            .find_map(|f| match f.value {
                Value::Bytes(b) => {
                    let t = read_tensor(b).unwrap();
                    (t.data_type == INT8 && t.dims.len() == 2).then_some(t)
                }
                _ => None,
            })
            .unwrap()
    }

    #[test]
    fn the_weights_are_laid_out_tap_by_tap_and_shifted_to_int8() {
        // 8-bit weights move by 128, 7-bit ones by 64 (into −64..=63).
        for (original, products, shift) in [
            (bytes(60, 1), Products::Exact, 128),
            (weights_7bit(), Products::Pairs, 64),
            (weights_7bit(), Products::Exact, 64),
        ] {
            let (rewritten, _) = rewrite_for(&model_with(&original), products).unwrap();
            let w = int8_weights(&rewritten);
            assert_eq!(w.dims, [12, 5]);
            // B[j·C + c, o] = W[o, c, j] − shift
            for (o, c, j) in [(0, 0, 0), (4, 3, 2), (2, 1, 0), (1, 2, 1)] {
                let want = original[(o * 4 + c) * 3 + j].wrapping_sub(shift);
                assert_eq!(w.data[(j * 4 + c) * 5 + o], want, "{o} {c} {j} {shift}");
            }
            if shift == 64 {
                assert!(w.data.iter().all(|&b| (-64..=64).contains(&(b as i8))));
            }
        }
    }

    #[test]
    fn what_is_not_a_model_is_an_error_not_a_panic() {
        assert!(rewrite(b"\xff\xff\xff").is_err());
        assert!(rewrite(&[0x3a, 0x10, 1, 2]).is_err());
        assert_eq!(rewrite(b""), Err(RewriteError::NoGraph));
        let mut m = model();
        m.truncate(m.len() - 7);
        assert!(rewrite(&m).is_err());
    }

    /// Runs `model` in ONNX Runtime on `x` ([1, 4, t]): outputs y and y2.
    fn run(env: &ort::environment::Environment, model: &[u8], x: Vec<f32>) -> Vec<Vec<i32>> {
        let t = x.len() / 4;
        let mut session = ort::session::Session::builder(env)
            .unwrap()
            .commit_from_memory(model)
            .unwrap();
        let outputs = session
            .run(ort::inputs!["x" => ort::value::Tensor::from_array(([1usize, 4, t], x)).unwrap()])
            .unwrap();
        ["y", "y2"]
            .iter()
            .map(|name| {
                outputs[*name]
                    .try_extract_tensor::<i32>()
                    .unwrap()
                    .1
                    .to_vec()
            })
            .collect()
    }

    #[test]
    fn onnx_runtime_computes_the_same_integers_from_both_graphs() {
        let Some(env) = runtime() else { return };
        let Some(products) = products_here() else {
            eprintln!("skipped: the rewrite is used on x86-64 only");
            return;
        };
        for original in [model(), model_7bit()] {
            let (rewritten, n) = rewrite(&original).unwrap();
            // 8-bit weights are rewritten only where products add into 32 bits.
            let seven_bit = original == model_7bit();
            assert_eq!(n, usize::from(seven_bit || products == Products::Exact));
            for (t, seed) in [(9, 3), (1, 4), (2, 5), (40, 6)] {
                let x: Vec<f32> = bytes(4 * t, seed)
                    .into_iter()
                    .map(|b| (f32::from(b) - 100.0) / 37.0)
                    .collect();
                let want = run(&env, &original, x.clone());
                assert_eq!(want[0].len(), 5 * t);
                assert_eq!(run(&env, &rewritten, x), want, "T = {t}");
            }
        }
    }

    /// Why 8-bit weights are not rewritten without VNNI: there, ONNX
    /// Runtime adds pairs of uint8 × int8 products into 16 bits and
    /// saturates (255 · 127 · 2 > 32,767).
    #[test]
    fn without_vnni_8_bit_weights_would_saturate() {
        let Some(env) = runtime() else { return };
        // Measured where ONNX Runtime's kernels are AVX2's (or AVX-512's)
        // `VPMADDUBSW`; older CPUs' may widen to 16 bits first.
        #[cfg(target_arch = "x86_64")]
        let avx2 = std::is_x86_feature_detected!("avx2");
        #[cfg(not(target_arch = "x86_64"))]
        let avx2 = false;
        if products_here() != Some(Products::Pairs) || !avx2 {
            eprintln!("skipped: this CPU's products add into 32 bits, or it has no AVX2");
            return;
        }
        let original = model_with(&[255; 60]);
        let (rewritten, _) = rewrite_for(&original, Products::Exact).unwrap();
        // Every input at its maximum: every quantized value is 255.
        let x = vec![3.0; 4 * 8];
        let want = run(&env, &original, x.clone());
        assert_ne!(run(&env, &rewritten, x)[0], want[0]);
    }
}
