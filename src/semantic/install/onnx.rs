//! A minimal protobuf writer for the few ONNX messages an encoder graph needs.
//!
//! Field numbers are those of `onnx.proto` (onnx 1.23, proto2 syntax): repeated scalars are
//! therefore written unpacked, one key per element, as the reference serializer does, and a
//! message's fields go out in field-number order. With that, the bytes equal what
//! `onnx.save_model` writes for the same model, and the same model always gives the same bytes
//! (the file's sha256 is the model's id in the vector store).
//!
//! Only writing: nothing here reads protobuf. Lengths are computed before the bytes are
//! written, so a 90 MB initializer is copied once, into the output.

/// `TensorProto.DataType` values used here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DataType {
    Float = 1,
    Int8 = 3,
    Int64 = 7,
}

/// `AttributeProto.AttributeType` values used here.
const ATTR_FLOAT: u64 = 1;
const ATTR_INT: u64 = 2;
const ATTR_INTS: u64 = 7;

// Wire types.
const VARINT: u32 = 0;
const LEN: u32 = 2;
const FIXED32: u32 = 5;

/// A protobuf message: its encoded length is known before it is written, so a parent can
/// write the length prefix without encoding the child twice.
trait Message {
    fn encoded_len(&self) -> usize;
    fn encode(&self, out: &mut Vec<u8>);
}

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        // the low 7 bits with the continuation bit; the cast keeps exactly those bits
        out.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key_len(field: u32) -> usize {
    varint_len(u64::from(field) << 3)
}

fn put_key(out: &mut Vec<u8>, field: u32, wire: u32) {
    put_varint(out, (u64::from(field) << 3) | u64::from(wire));
}

/// An int64 field: negative values are their two's complement, ten bytes.
fn int_len(field: u32, v: i64) -> usize {
    key_len(field) + varint_len(v as u64)
}

fn put_int(out: &mut Vec<u8>, field: u32, v: i64) {
    put_key(out, field, VARINT);
    put_varint(out, v as u64);
}

fn bytes_len(field: u32, len: usize) -> usize {
    key_len(field) + varint_len(len as u64) + len
}

fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_key(out, field, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn message_len(field: u32, m: &impl Message) -> usize {
    bytes_len(field, m.encoded_len())
}

fn put_message(out: &mut Vec<u8>, field: u32, m: &impl Message) {
    put_key(out, field, LEN);
    put_varint(out, m.encoded_len() as u64);
    m.encode(out);
}

/// `TensorProto` with `raw_data` (little-endian, row-major), the only form written here.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tensor {
    pub(crate) name: String,
    pub(crate) dims: Vec<i64>,
    pub(crate) data_type: DataType,
    pub(crate) raw: Vec<u8>,
}

impl Tensor {
    pub(crate) fn f32s(name: impl Into<String>, dims: &[usize], values: &[f32]) -> Tensor {
        Tensor::new(
            name,
            dims,
            DataType::Float,
            values.iter().flat_map(|v| v.to_le_bytes()),
        )
    }

    pub(crate) fn i64s(name: impl Into<String>, dims: &[usize], values: &[i64]) -> Tensor {
        Tensor::new(
            name,
            dims,
            DataType::Int64,
            values.iter().flat_map(|v| v.to_le_bytes()),
        )
    }

    pub(crate) fn i8s(name: impl Into<String>, dims: &[usize], values: &[i8]) -> Tensor {
        Tensor::new(
            name,
            dims,
            DataType::Int8,
            values.iter().flat_map(|v| v.to_le_bytes()),
        )
    }

    fn new(
        name: impl Into<String>,
        dims: &[usize],
        data_type: DataType,
        raw: impl Iterator<Item = u8>,
    ) -> Tensor {
        Tensor {
            name: name.into(),
            // a dimension of an in-memory tensor fits in an i64
            dims: dims.iter().map(|&d| d as i64).collect(),
            data_type,
            raw: raw.collect(),
        }
    }
}

impl Message for Tensor {
    fn encoded_len(&self) -> usize {
        self.dims.iter().map(|&d| int_len(1, d)).sum::<usize>()
            + int_len(2, self.data_type as i64)
            + bytes_len(8, self.name.len())
            + bytes_len(9, self.raw.len())
    }

    fn encode(&self, out: &mut Vec<u8>) {
        for &d in &self.dims {
            put_int(out, 1, d);
        }
        put_int(out, 2, self.data_type as i64);
        put_bytes(out, 8, self.name.as_bytes());
        put_bytes(out, 9, &self.raw);
    }
}

/// An attribute's value, of the kinds the encoder graph uses.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AttrValue {
    Float(f32),
    Int(i64),
    Ints(Vec<i64>),
}

/// `AttributeProto`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Attribute {
    pub(crate) name: String,
    pub(crate) value: AttrValue,
}

impl Attribute {
    pub(crate) fn float(name: &str, v: f32) -> Attribute {
        Attribute {
            name: name.into(),
            value: AttrValue::Float(v),
        }
    }

    pub(crate) fn int(name: &str, v: i64) -> Attribute {
        Attribute {
            name: name.into(),
            value: AttrValue::Int(v),
        }
    }

    pub(crate) fn ints(name: &str, v: &[i64]) -> Attribute {
        Attribute {
            name: name.into(),
            value: AttrValue::Ints(v.to_vec()),
        }
    }

    fn kind(&self) -> u64 {
        match self.value {
            AttrValue::Float(_) => ATTR_FLOAT,
            AttrValue::Int(_) => ATTR_INT,
            AttrValue::Ints(_) => ATTR_INTS,
        }
    }
}

impl Message for Attribute {
    fn encoded_len(&self) -> usize {
        let value = match &self.value {
            AttrValue::Float(_) => key_len(2) + 4,
            AttrValue::Int(v) => int_len(3, *v),
            AttrValue::Ints(vs) => vs.iter().map(|&v| int_len(8, v)).sum(),
        };
        bytes_len(1, self.name.len()) + value + key_len(20) + varint_len(self.kind())
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, 1, self.name.as_bytes());
        match &self.value {
            AttrValue::Float(v) => {
                put_key(out, 2, FIXED32);
                out.extend_from_slice(&v.to_le_bytes());
            }
            AttrValue::Int(v) => put_int(out, 3, *v),
            AttrValue::Ints(vs) => {
                for &v in vs {
                    put_int(out, 8, v);
                }
            }
        }
        put_key(out, 20, VARINT);
        put_varint(out, self.kind());
    }
}

/// `NodeProto` of the default domain (standard ONNX operators only).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) inputs: Vec<String>,
    pub(crate) outputs: Vec<String>,
    pub(crate) name: String,
    pub(crate) op_type: String,
    /// Sorted by name, as `onnx.helper.make_node` writes them.
    pub(crate) attributes: Vec<Attribute>,
}

impl Message for Node {
    fn encoded_len(&self) -> usize {
        self.inputs
            .iter()
            .chain(&self.outputs)
            .map(|s| bytes_len(1, s.len()))
            .sum::<usize>()
            + bytes_len(3, self.name.len())
            + bytes_len(4, self.op_type.len())
            + self
                .attributes
                .iter()
                .map(|a| message_len(5, a))
                .sum::<usize>()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        for i in &self.inputs {
            put_bytes(out, 1, i.as_bytes());
        }
        for o in &self.outputs {
            put_bytes(out, 2, o.as_bytes());
        }
        put_bytes(out, 3, self.name.as_bytes());
        put_bytes(out, 4, self.op_type.as_bytes());
        for a in &self.attributes {
            put_message(out, 5, a);
        }
    }
}

/// One dimension of a graph input's or output's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dim {
    Value(i64),
    Param(String),
}

impl Message for Dim {
    fn encoded_len(&self) -> usize {
        match self {
            Dim::Value(v) => int_len(1, *v),
            Dim::Param(p) => bytes_len(2, p.len()),
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Dim::Value(v) => put_int(out, 1, *v),
            Dim::Param(p) => put_bytes(out, 2, p.as_bytes()),
        }
    }
}

/// `TensorShapeProto`.
struct Shape<'a>(&'a [Dim]);

impl Message for Shape<'_> {
    fn encoded_len(&self) -> usize {
        self.0.iter().map(|d| message_len(1, d)).sum()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        for d in self.0 {
            put_message(out, 1, d);
        }
    }
}

/// `TypeProto.Tensor`.
struct TensorType<'a> {
    elem_type: DataType,
    shape: Shape<'a>,
}

impl Message for TensorType<'_> {
    fn encoded_len(&self) -> usize {
        int_len(1, self.elem_type as i64) + message_len(2, &self.shape)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_int(out, 1, self.elem_type as i64);
        put_message(out, 2, &self.shape);
    }
}

/// `TypeProto` holding a tensor type (field `tensor_type`).
struct Type<'a>(TensorType<'a>);

impl Message for Type<'_> {
    fn encoded_len(&self) -> usize {
        message_len(1, &self.0)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_message(out, 1, &self.0);
    }
}

/// `ValueInfoProto` of a tensor: a graph input or output.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ValueInfo {
    pub(crate) name: String,
    pub(crate) elem_type: DataType,
    pub(crate) dims: Vec<Dim>,
}

impl ValueInfo {
    fn ty(&self) -> Type<'_> {
        Type(TensorType {
            elem_type: self.elem_type,
            shape: Shape(&self.dims),
        })
    }
}

impl Message for ValueInfo {
    fn encoded_len(&self) -> usize {
        bytes_len(1, self.name.len()) + message_len(2, &self.ty())
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, 1, self.name.as_bytes());
        put_message(out, 2, &self.ty());
    }
}

/// `GraphProto`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Graph {
    pub(crate) nodes: Vec<Node>,
    pub(crate) name: String,
    pub(crate) initializers: Vec<Tensor>,
    pub(crate) inputs: Vec<ValueInfo>,
    pub(crate) outputs: Vec<ValueInfo>,
    /// Shapes of intermediate values, hints for the runtime's optimiser; none in build_onnx.py's
    /// graph.
    pub(crate) value_info: Vec<ValueInfo>,
}

impl Message for Graph {
    fn encoded_len(&self) -> usize {
        self.nodes.iter().map(|n| message_len(1, n)).sum::<usize>()
            + bytes_len(2, self.name.len())
            + self
                .initializers
                .iter()
                .map(|t| message_len(5, t))
                .sum::<usize>()
            + self
                .inputs
                .iter()
                .map(|v| message_len(11, v))
                .sum::<usize>()
            + self
                .outputs
                .iter()
                .map(|v| message_len(12, v))
                .sum::<usize>()
            + self
                .value_info
                .iter()
                .map(|v| message_len(13, v))
                .sum::<usize>()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        for n in &self.nodes {
            put_message(out, 1, n);
        }
        put_bytes(out, 2, self.name.as_bytes());
        for t in &self.initializers {
            put_message(out, 5, t);
        }
        for v in &self.inputs {
            put_message(out, 11, v);
        }
        for v in &self.outputs {
            put_message(out, 12, v);
        }
        for v in &self.value_info {
            put_message(out, 13, v);
        }
    }
}

/// `OperatorSetIdProto`; the domain is written even when empty (the default domain), as
/// `onnx.helper.make_opsetid` sets it.
struct OpsetId<'a> {
    domain: &'a str,
    version: i64,
}

impl Message for OpsetId<'_> {
    fn encoded_len(&self) -> usize {
        bytes_len(1, self.domain.len()) + int_len(2, self.version)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, 1, self.domain.as_bytes());
        put_int(out, 2, self.version);
    }
}

/// `StringStringEntryProto`.
struct Entry<'a>(&'a str, &'a str);

impl Message for Entry<'_> {
    fn encoded_len(&self) -> usize {
        bytes_len(1, self.0.len()) + bytes_len(2, self.1.len())
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, 1, self.0.as_bytes());
        put_bytes(out, 2, self.1.as_bytes());
    }
}

/// `ModelProto` with one graph and the default-domain opset.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Model {
    pub(crate) ir_version: i64,
    pub(crate) producer_name: String,
    pub(crate) graph: Graph,
    pub(crate) opset: i64,
    /// `metadata_props`, in this order.
    pub(crate) metadata: Vec<(String, String)>,
}

impl Model {
    fn opset_id(&self) -> OpsetId<'_> {
        OpsetId {
            domain: "",
            version: self.opset,
        }
    }

    /// The serialized model, as `onnx.save_model` writes it.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode(&mut out);
        out
    }
}

impl Message for Model {
    fn encoded_len(&self) -> usize {
        int_len(1, self.ir_version)
            + bytes_len(2, self.producer_name.len())
            + message_len(7, &self.graph)
            + message_len(8, &self.opset_id())
            + self
                .metadata
                .iter()
                .map(|(k, v)| message_len(14, &Entry(k, v)))
                .sum::<usize>()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_int(out, 1, self.ir_version);
        put_bytes(out, 2, self.producer_name.as_bytes());
        put_message(out, 7, &self.graph);
        put_message(out, 8, &self.opset_id());
        for (k, v) in &self.metadata {
            put_message(out, 14, &Entry(k, v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(m: &impl Message) -> Vec<u8> {
        let mut out = Vec::new();
        m.encode(&mut out);
        assert_eq!(
            out.len(),
            m.encoded_len(),
            "encoded_len must match the bytes"
        );
        out
    }

    #[test]
    fn varints_are_little_endian_groups_of_seven_bits() {
        for (v, want) in [
            (0u64, vec![0x00]),
            (1, vec![0x01]),
            (127, vec![0x7f]),
            (128, vec![0x80, 0x01]),
            (300, vec![0xac, 0x02]),
            (16_384, vec![0x80, 0x80, 0x01]),
            (
                u64::MAX,
                vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out, want, "varint of {v}");
            assert_eq!(varint_len(v), want.len(), "varint_len of {v}");
        }
    }

    #[test]
    fn a_negative_int64_takes_ten_bytes_and_field_20_a_two_byte_key() {
        // axis = -1 (LayerNormalization, Softmax): name, i, type INT
        let bytes = encoded(&Attribute::int("axis", -1));
        let mut want = vec![0x0a, 4, b'a', b'x', b'i', b's', 0x18];
        want.extend([0xff; 9]);
        want.push(0x01);
        want.extend([0xa0, 0x01, 0x02]);
        assert_eq!(bytes, want);
    }

    #[test]
    fn a_float_attribute_is_fixed32_and_ints_are_unpacked() {
        assert_eq!(
            encoded(&Attribute::float("epsilon", 1.0)),
            [
                &[0x0a, 7][..],
                b"epsilon",
                &[0x15, 0x00, 0x00, 0x80, 0x3f, 0xa0, 0x01, 0x01]
            ]
            .concat()
        );
        // proto2 `repeated int64 ints = 8` is not packed: one key per element
        assert_eq!(
            encoded(&Attribute::ints("perm", &[0, 2, 1, 3])),
            [
                &[0x0a, 4][..],
                b"perm",
                &[0x40, 0, 0x40, 2, 0x40, 1, 0x40, 3, 0xa0, 0x01, 0x07]
            ]
            .concat()
        );
    }

    #[test]
    fn a_tensor_has_dims_type_name_then_raw_data() {
        let t = Tensor::i64s("z", &[1], &[0]);
        assert_eq!(
            encoded(&t),
            [
                0x08, 1, 0x10, 7, 0x42, 1, b'z', 0x4a, 8, 0, 0, 0, 0, 0, 0, 0, 0
            ]
        );
        // a scalar has no dims at all
        let s = Tensor::f32s("s", &[], &[1.0]);
        assert_eq!(
            encoded(&s),
            [0x10, 1, 0x42, 1, b's', 0x4a, 4, 0x00, 0x00, 0x80, 0x3f]
        );
    }

    #[test]
    fn a_length_prefix_grows_past_127_bytes() {
        let t = Tensor::i8s("w", &[200], &[1; 200]);
        let bytes = encoded(&t);
        // dims 200 (two-byte varint), type INT8, name, raw_data with a two-byte length
        assert_eq!(
            &bytes[..10],
            &[0x08, 0xc8, 0x01, 0x10, 3, 0x42, 1, b'w', 0x4a, 0xc8]
        );
        assert_eq!(bytes[10], 0x01);
        assert_eq!(bytes.len(), 11 + 200);
    }

    #[test]
    fn a_model_nests_graph_nodes_and_value_infos() {
        let model = Model {
            ir_version: 8,
            producer_name: "p".into(),
            graph: Graph {
                nodes: vec![Node {
                    inputs: vec!["x".into()],
                    outputs: vec!["y".into()],
                    name: "n".into(),
                    op_type: "Identity".into(),
                    attributes: vec![],
                }],
                name: "g".into(),
                initializers: vec![],
                inputs: vec![ValueInfo {
                    name: "x".into(),
                    elem_type: DataType::Float,
                    dims: vec![Dim::Param("b".into()), Dim::Value(3)],
                }],
                outputs: vec![],
                value_info: vec![],
            },
            opset: 17,
            metadata: vec![("k".into(), "v".into())],
        };
        let node = [
            &[0x0a, 1, b'x', 0x12, 1, b'y', 0x1a, 1, b'n', 0x22, 8][..],
            b"Identity",
        ]
        .concat();
        // ValueInfo x: name, type { tensor_type { elem_type 1, shape { dim{param b} dim{value 3} } } }
        let value_info = [
            0x0a, 1, b'x', 0x12, 15, 0x0a, 13, 0x08, 1, 0x12, 9, 0x0a, 3, 0x12, 1, b'b', 0x0a, 2,
            0x08, 3,
        ];
        let mut graph = vec![0x0a, node.len() as u8];
        graph.extend(&node);
        graph.extend([0x12, 1, b'g', 0x5a, value_info.len() as u8]);
        graph.extend(value_info);
        let mut want = vec![0x08, 8, 0x12, 1, b'p', 0x3a, graph.len() as u8];
        want.extend(&graph);
        want.extend([0x42, 4, 0x0a, 0, 0x10, 17]);
        want.extend([0x72, 6, 0x0a, 1, b'k', 0x12, 1, b'v']);
        assert_eq!(model.to_bytes(), want);
    }
}
