//! A reader of the safetensors format for untrusted files: an 8-byte little-endian header
//! length, a JSON header `{name: {dtype, shape, data_offsets: [begin, end]}}` (plus an
//! ignored `__metadata__`), then the tensors' bytes, offsets relative to the end of the
//! header.
//!
//! The header is bounded ([`MAX_HEADER`]) before it is parsed; every entry's offsets are
//! checked against the data area and against its dtype and shape (all arithmetic checked),
//! so a tensor view is always in bounds. Tensors are borrowed from the caller's buffer,
//! never copied until [`Tensors::f32s`] converts one.

use std::collections::BTreeMap;

/// The largest header accepted. all-MiniLM-L6-v2's is 11 KB; a header of many megabytes
/// would be a hostile or broken file, and is refused before any JSON is parsed.
pub(crate) const MAX_HEADER: u64 = 4 << 20;

/// What is wrong with a safetensors file. Every variant names what it found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SafetensorsError {
    /// The file ends before the length prefix or the header it announces.
    Truncated { need: u64, have: u64 },
    /// The header length is over [`MAX_HEADER`].
    HeaderTooLarge { len: u64 },
    /// The header is not a JSON object of tensor entries.
    Header(String),
    /// One entry is malformed: a missing field, a size that does not match its dtype and
    /// shape, offsets past the data or reversed, an unknown dtype.
    Entry { name: String, reason: String },
    /// Two entries have the same name once the `bert.`/`model.` prefixes are stripped.
    Duplicate { name: String },
    /// A tensor the model needs is absent.
    Missing { name: String },
    /// A tensor has another element type than the one needed.
    Dtype {
        name: String,
        found: String,
        expected: &'static str,
    },
    /// A tensor has another shape than the configuration implies.
    Shape {
        name: String,
        found: Vec<usize>,
        expected: Vec<usize>,
    },
}

impl SafetensorsError {
    /// A stable key for clients.
    pub fn key(&self) -> &'static str {
        match self {
            SafetensorsError::Truncated { .. } => "model.safetensors_truncated",
            SafetensorsError::HeaderTooLarge { .. } => "model.safetensors_header_too_large",
            SafetensorsError::Header(_) => "model.safetensors_header_invalid",
            SafetensorsError::Entry { .. } => "model.safetensors_entry_invalid",
            SafetensorsError::Duplicate { .. } => "model.safetensors_duplicate_tensor",
            SafetensorsError::Missing { .. } => "model.safetensors_missing_tensor",
            SafetensorsError::Dtype { .. } => "model.safetensors_wrong_dtype",
            SafetensorsError::Shape { .. } => "model.safetensors_wrong_shape",
        }
    }
}

impl std::fmt::Display for SafetensorsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SafetensorsError::Truncated { need, have } => write!(
                f,
                "the safetensors file is truncated: {need} bytes needed, {have} present"
            ),
            SafetensorsError::HeaderTooLarge { len } => write!(
                f,
                "the safetensors header announces {len} bytes, over the limit of {MAX_HEADER}"
            ),
            SafetensorsError::Header(reason) => {
                write!(f, "the safetensors header is invalid: {reason}")
            }
            SafetensorsError::Entry { name, reason } => {
                write!(f, "safetensors tensor `{name}` is invalid: {reason}")
            }
            SafetensorsError::Duplicate { name } => write!(
                f,
                "safetensors tensor `{name}` appears twice (after stripping `bert.`/`model.`)"
            ),
            SafetensorsError::Missing { name } => {
                write!(f, "safetensors tensor `{name}` is missing")
            }
            SafetensorsError::Dtype {
                name,
                found,
                expected,
            } => write!(
                f,
                "safetensors tensor `{name}` is {found}, {expected} is needed"
            ),
            SafetensorsError::Shape {
                name,
                found,
                expected,
            } => write!(
                f,
                "safetensors tensor `{name}` has shape {found:?}, the configuration implies {expected:?}"
            ),
        }
    }
}

impl std::error::Error for SafetensorsError {}

/// One tensor: its dtype as the file spells it, its shape, and its bytes (in bounds and of
/// the size dtype and shape imply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TensorView<'a> {
    pub(crate) dtype: String,
    pub(crate) shape: Vec<usize>,
    pub(crate) data: &'a [u8],
}

/// The tensors of one file, by name with the `bert.`/`model.` prefixes stripped.
#[derive(Debug)]
pub(crate) struct Tensors<'a> {
    tensors: BTreeMap<String, TensorView<'a>>,
}

/// Bytes per element of the dtypes safetensors defines; `None` for an unknown one.
fn dtype_size(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "BOOL" | "U8" | "I8" | "F8_E5M2" | "F8_E4M3" => 1,
        "U16" | "I16" | "F16" | "BF16" => 2,
        "U32" | "I32" | "F32" => 4,
        "U64" | "I64" | "F64" => 8,
        _ => return None,
    })
}

/// The name the Python builder uses: `bert.` then `model.` stripped, in that order (a
/// Hugging Face `BertModel` checkpoint has neither; a `BertFor…` one has `bert.`).
fn strip_prefixes(name: &str) -> &str {
    let mut name = name;
    for prefix in ["bert.", "model."] {
        if let Some(rest) = name.strip_prefix(prefix) {
            name = rest;
        }
    }
    name
}

impl<'a> Tensors<'a> {
    /// Parses and checks the header of `bytes`; no tensor data is read.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<Tensors<'a>, SafetensorsError> {
        let have = bytes.len() as u64;
        let Some(prefix) = bytes.first_chunk::<8>() else {
            return Err(SafetensorsError::Truncated { need: 8, have });
        };
        let header_len = u64::from_le_bytes(*prefix);
        if header_len > MAX_HEADER {
            return Err(SafetensorsError::HeaderTooLarge { len: header_len });
        }
        let data_start = 8 + header_len; // both bounded: no overflow
        if data_start > have {
            return Err(SafetensorsError::Truncated {
                need: data_start,
                have,
            });
        }
        // header_len ≤ MAX_HEADER and ≤ the buffer's length: it fits a usize
        let header = &bytes[8..data_start as usize];
        let data = &bytes[data_start as usize..];
        let parsed: serde_json::Value =
            serde_json::from_slice(header).map_err(|e| SafetensorsError::Header(e.to_string()))?;
        let serde_json::Value::Object(entries) = parsed else {
            return Err(SafetensorsError::Header("not a JSON object".into()));
        };
        let mut tensors = BTreeMap::new();
        for (raw_name, entry) in &entries {
            if raw_name == "__metadata__" {
                continue;
            }
            let view = Self::entry(raw_name, entry, data)?;
            let name = strip_prefixes(raw_name);
            if tensors.insert(name.to_string(), view).is_some() {
                return Err(SafetensorsError::Duplicate { name: name.into() });
            }
        }
        Ok(Tensors { tensors })
    }

    fn entry(
        name: &str,
        entry: &serde_json::Value,
        data: &'a [u8],
    ) -> Result<TensorView<'a>, SafetensorsError> {
        let bad = |reason: String| SafetensorsError::Entry {
            name: name.into(),
            reason,
        };
        let dtype = entry
            .get("dtype")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| bad("no `dtype` string".into()))?;
        let size = dtype_size(dtype).ok_or_else(|| bad(format!("unknown dtype `{dtype}`")))?;
        let shape = entry
            .get("shape")
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| bad("no `shape` array".into()))?
            .iter()
            .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| bad("`shape` holds something else than sizes".into()))?;
        let offsets = entry
            .get("data_offsets")
            .and_then(serde_json::Value::as_array)
            .and_then(|o| match o.as_slice() {
                [b, e] => Some((b.as_u64()?, e.as_u64()?)),
                _ => None,
            })
            .ok_or_else(|| bad("`data_offsets` is not [begin, end]".into()))?;
        let (begin, end) = offsets;
        if begin > end {
            return Err(bad(format!("data_offsets [{begin}, {end}] are reversed")));
        }
        let data_len = data.len() as u64;
        if end > data_len {
            return Err(bad(format!(
                "data_offsets end {end} is past the {data_len} bytes of data"
            )));
        }
        let expected = shape
            .iter()
            .try_fold(size, |acc, &d| acc.checked_mul(d as u64))
            .ok_or_else(|| bad(format!("shape {shape:?} overflows")))?;
        if end - begin != expected {
            return Err(bad(format!(
                "data_offsets [{begin}, {end}] hold {} bytes, a {dtype} tensor of shape {shape:?} needs {expected}",
                end - begin
            )));
        }
        Ok(TensorView {
            dtype: dtype.into(),
            shape,
            // end ≤ data.len(): both fit a usize
            data: &data[begin as usize..end as usize],
        })
    }

    pub(crate) fn get(&self, name: &str) -> Option<&TensorView<'a>> {
        self.tensors.get(name)
    }

    /// The tensor `name` as f32 values, row-major; it must be F32 of shape `shape`.
    pub(crate) fn f32s(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, SafetensorsError> {
        let view = self
            .get(name)
            .ok_or_else(|| SafetensorsError::Missing { name: name.into() })?;
        if view.dtype != "F32" {
            return Err(SafetensorsError::Dtype {
                name: name.into(),
                found: view.dtype.clone(),
                expected: "F32",
            });
        }
        if view.shape != shape {
            return Err(SafetensorsError::Shape {
                name: name.into(),
                found: view.shape.clone(),
                expected: shape.to_vec(),
            });
        }
        Ok(view
            .data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A safetensors file of F32 tensors, in order, with a `__metadata__` entry.
    pub(crate) fn file(tensors: &[(&str, &[usize], &[f32])]) -> Vec<u8> {
        let mut header = serde_json::Map::new();
        header.insert("__metadata__".into(), serde_json::json!({"format": "pt"}));
        let mut data = Vec::new();
        for (name, shape, values) in tensors {
            let begin = data.len();
            data.extend(values.iter().flat_map(|v| v.to_le_bytes()));
            header.insert(
                (*name).into(),
                serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [begin, data.len()]}),
            );
        }
        raw(&serde_json::Value::Object(header).to_string(), &data)
    }

    pub(crate) fn raw(header: &str, data: &[u8]) -> Vec<u8> {
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend(header.as_bytes());
        out.extend(data);
        out
    }

    fn err(bytes: &[u8]) -> SafetensorsError {
        Tensors::parse(bytes).expect_err("must be refused")
    }

    #[test]
    fn a_valid_file_reads_back_with_prefixes_stripped() {
        let bytes = file(&[
            ("bert.a", &[2, 2], &[1.0, 2.0, 3.0, 4.0]),
            ("model.b", &[], &[0.5]),
            ("c", &[0], &[]),
        ]);
        let t = Tensors::parse(&bytes).unwrap();
        assert_eq!(t.f32s("a", &[2, 2]).unwrap(), [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(t.f32s("b", &[]).unwrap(), [0.5]);
        assert_eq!(t.f32s("c", &[0]).unwrap(), [] as [f32; 0]);
        assert!(t.get("bert.a").is_none() && t.get("__metadata__").is_none());
        // both prefixes, in the Python order
        let t2 = file(&[("bert.model.x", &[1], &[1.0])]);
        assert!(Tensors::parse(&t2).unwrap().get("x").is_some());
    }

    #[test]
    fn a_truncated_file_says_how_much_is_missing() {
        assert_eq!(
            err(&[1, 2, 3]),
            SafetensorsError::Truncated { need: 8, have: 3 }
        );
        let mut bytes = file(&[("a", &[1], &[1.0])]);
        let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap());
        bytes.truncate(20);
        let e = err(&bytes);
        assert_eq!(
            e,
            SafetensorsError::Truncated {
                need: 8 + header_len,
                have: 20
            }
        );
        assert_eq!(e.key(), "model.safetensors_truncated");
        // the header whole but the data cut: the entry's end is past the data
        let mut bytes = file(&[("a", &[2], &[1.0, 2.0])]);
        bytes.pop();
        let e = err(&bytes);
        assert_eq!(e.key(), "model.safetensors_entry_invalid");
        assert!(e.to_string().contains("past the 7 bytes of data"), "{e}");
    }

    #[test]
    fn a_huge_header_length_is_refused_before_parsing() {
        let mut bytes = (MAX_HEADER + 1).to_le_bytes().to_vec();
        bytes.extend(b"{}");
        assert_eq!(
            err(&bytes),
            SafetensorsError::HeaderTooLarge {
                len: MAX_HEADER + 1
            }
        );
        let bytes = u64::MAX.to_le_bytes();
        assert_eq!(err(&bytes).key(), "model.safetensors_header_too_large");
    }

    #[test]
    fn a_header_that_is_not_an_object_of_entries_is_refused() {
        assert_eq!(
            err(&raw("[1]", &[])).key(),
            "model.safetensors_header_invalid"
        );
        assert_eq!(
            err(&raw("{\"a\":", &[])).key(),
            "model.safetensors_header_invalid"
        );
        for (entry, why) in [
            (r#"{"shape":[1],"data_offsets":[0,4]}"#, "no `dtype`"),
            (
                r#"{"dtype":"Q9","shape":[1],"data_offsets":[0,4]}"#,
                "unknown dtype `Q9`",
            ),
            (r#"{"dtype":"F32","data_offsets":[0,4]}"#, "no `shape`"),
            (
                r#"{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}"#,
                "`shape` holds",
            ),
            (
                r#"{"dtype":"F32","shape":[1],"data_offsets":[0]}"#,
                "not [begin, end]",
            ),
            (
                r#"{"dtype":"F32","shape":[1],"data_offsets":[4,0]}"#,
                "reversed",
            ),
            (
                r#"{"dtype":"F32","shape":[2],"data_offsets":[0,4]}"#,
                "needs 8",
            ),
            (
                r#"{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}"#,
                "overflows",
            ),
            (
                r#"{"dtype":"F32","shape":[1],"data_offsets":[4,8]}"#,
                "past the 4 bytes",
            ),
        ] {
            let e = err(&raw(&format!(r#"{{"t":{entry}}}"#), &[0; 4]));
            assert_eq!(e.key(), "model.safetensors_entry_invalid", "{entry}");
            assert!(e.to_string().contains(why), "{entry}: {e}");
            assert!(e.to_string().contains("`t`"), "{e}");
        }
    }

    #[test]
    fn two_names_equal_after_stripping_are_refused() {
        let bytes = file(&[("bert.a", &[1], &[1.0]), ("a", &[1], &[2.0])]);
        assert_eq!(
            err(&bytes),
            SafetensorsError::Duplicate { name: "a".into() }
        );
    }

    #[test]
    fn reading_checks_presence_dtype_and_shape() {
        let mut bytes = file(&[("a", &[2], &[1.0, 2.0])]);
        let t = Tensors::parse(&bytes).unwrap();
        assert_eq!(
            t.f32s("b", &[2]).unwrap_err(),
            SafetensorsError::Missing { name: "b".into() }
        );
        let e = t.f32s("a", &[1, 2]).unwrap_err();
        assert_eq!(e.key(), "model.safetensors_wrong_shape");
        assert!(
            e.to_string().contains("[2]") && e.to_string().contains("[1, 2]"),
            "{e}"
        );
        // the same bytes declared F16 (4 elements of 2 bytes): parsed, but not readable as F32
        let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let header = String::from_utf8(bytes[8..8 + header_len].to_vec()).unwrap();
        let data = bytes.split_off(8 + header_len);
        let f16 = raw(
            &header.replace("\"F32\"", "\"F16\"").replace("[2]", "[4]"),
            &data,
        );
        let t = Tensors::parse(&f16).unwrap();
        assert_eq!(
            t.f32s("a", &[4]).unwrap_err(),
            SafetensorsError::Dtype {
                name: "a".into(),
                found: "F16".into(),
                expected: "F32"
            }
        );
    }
}
