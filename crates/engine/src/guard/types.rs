//! Static types of guard values, and their derivation from JSON Schemas.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// Not known statically (a schema without `type`, `anyOf`, ...); accepted everywhere.
    Any,
    Null,
    Bool,
    Number,
    /// A string, with its allowed values when the schema has an `enum`.
    Str(Option<Vec<String>>),
    List(Box<Ty>),
    /// An object with known fields; `open` objects accept unknown fields as `Any`.
    Object {
        fields: BTreeMap<String, Ty>,
        open: bool,
    },
    /// The value may also be `null` (an optional field).
    Optional(Box<Ty>),
}

impl Ty {
    pub fn string() -> Ty {
        Ty::Str(None)
    }

    pub fn enumeration(values: &[&str]) -> Ty {
        Ty::Str(Some(values.iter().map(|v| (*v).to_string()).collect()))
    }

    pub fn list(item: Ty) -> Ty {
        Ty::List(Box::new(item))
    }

    pub fn object(fields: impl IntoIterator<Item = (String, Ty)>) -> Ty {
        Ty::Object {
            fields: fields.into_iter().collect(),
            open: false,
        }
    }

    pub fn optional(self) -> Ty {
        match self {
            Ty::Optional(_) | Ty::Any | Ty::Null => self,
            other => Ty::Optional(Box::new(other)),
        }
    }

    /// The type without its `null` possibility.
    pub(crate) fn strip_optional(&self) -> &Ty {
        match self {
            Ty::Optional(inner) => inner,
            other => other,
        }
    }

    pub(crate) fn is_nullable(&self) -> bool {
        matches!(self, Ty::Optional(_) | Ty::Null | Ty::Any)
    }

    /// Derives a type from a JSON Schema; `defs` resolves `#/$defs/NAME` references.
    pub(crate) fn from_schema(schema: &Value, defs: &BTreeMap<String, Value>) -> Ty {
        Self::from_schema_depth(schema, defs, 0)
    }

    fn from_schema_depth(schema: &Value, defs: &BTreeMap<String, Value>, depth: u32) -> Ty {
        if depth > 16 {
            return Ty::Any;
        }
        let Some(obj) = schema.as_object() else {
            return Ty::Any;
        };
        if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
            let name = reference.rsplit('/').next().unwrap_or_default();
            return defs
                .get(name)
                .map_or(Ty::Any, |s| Self::from_schema_depth(s, defs, depth + 1));
        }
        if let Some(values) = obj.get("enum").and_then(Value::as_array)
            && values.iter().all(Value::is_string)
        {
            return Ty::Str(Some(
                values
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
            ));
        }
        if let Some(c) = obj.get("const").and_then(Value::as_str) {
            return Ty::Str(Some(vec![c.to_string()]));
        }
        let types: Vec<&str> = match obj.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => return Ty::Any,
        };
        let nullable = types.contains(&"null");
        let non_null: Vec<&str> = types.iter().copied().filter(|t| *t != "null").collect();
        let base = match non_null.as_slice() {
            [] => Ty::Null,
            ["boolean"] => Ty::Bool,
            ["integer" | "number"] | ["integer", "number"] | ["number", "integer"] => Ty::Number,
            ["string"] => Ty::string(),
            ["array"] => Ty::list(
                obj.get("items")
                    .map_or(Ty::Any, |i| Self::from_schema_depth(i, defs, depth + 1)),
            ),
            ["object"] => {
                let required: Vec<&str> = obj
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let fields = obj
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|props| {
                        props
                            .iter()
                            .map(|(name, s)| {
                                let ty = Self::from_schema_depth(s, defs, depth + 1);
                                let ty = if required.contains(&name.as_str()) {
                                    ty
                                } else {
                                    ty.optional()
                                };
                                (name.clone(), ty)
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let open = !matches!(obj.get("additionalProperties"), Some(Value::Bool(false)));
                Ty::Object { fields, open }
            }
            _ => Ty::Any,
        };
        if nullable && base != Ty::Null {
            base.optional()
        } else {
            base
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Any => f.write_str("any"),
            Ty::Null => f.write_str("null"),
            Ty::Bool => f.write_str("bool"),
            Ty::Number => f.write_str("number"),
            Ty::Str(None) => f.write_str("string"),
            Ty::Str(Some(values)) => write!(f, "string ({})", values.join(" | ")),
            Ty::List(item) => write!(f, "list of {item}"),
            Ty::Object { .. } => f.write_str("object"),
            Ty::Optional(inner) => write!(f, "{inner} or null"),
        }
    }
}
