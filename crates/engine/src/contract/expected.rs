//! Renders a payload JSON Schema as the compact `expected_payload` description agents
//! read (`"list[str] (non-empty)"`), so the description can never drift from the schema.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// The description of a top-level payload schema: one entry per property.
pub(crate) fn describe_payload(schema: &Value, defs: &BTreeMap<String, Value>) -> Value {
    let schema = resolve(schema, defs);
    let required = required_of(schema);
    let mut out = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            let mut text = describe(prop, defs, 0);
            if !required.contains(&name.as_str()) {
                text.push_str(" (optional)");
            }
            if let Some(desc) = resolve(prop, defs)
                .get("description")
                .and_then(Value::as_str)
            {
                text.push_str(" — ");
                text.push_str(desc);
            }
            out.insert(name.clone(), Value::String(text));
        }
    }
    Value::Object(out)
}

fn required_of(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn resolve<'a>(schema: &'a Value, defs: &'a BTreeMap<String, Value>) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => defs
            .get(r.rsplit('/').next().unwrap_or_default())
            .unwrap_or(schema),
        None => schema,
    }
}

fn describe(schema: &Value, defs: &BTreeMap<String, Value>, depth: u32) -> String {
    let schema = resolve(schema, defs);
    if depth > 4 {
        return "…".into();
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .map(|v| match v {
                Value::String(s) => format!("'{s}'"),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(" | ");
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    let nullable = ty.contains(&"null");
    let main = ty.iter().copied().find(|t| *t != "null").unwrap_or("any");
    let mut text = match main {
        "string" => {
            let mut s = "str".to_string();
            if let Some(n) = schema.get("minLength").and_then(Value::as_u64) {
                if n > 1 {
                    s.push_str(&format!(" (at least {n} chars)"));
                } else if n == 1 {
                    s.push_str(" (non-empty)");
                }
            }
            s
        }
        "boolean" => "bool".into(),
        "integer" => "int".into(),
        "number" => "number".into(),
        "array" => {
            let item = schema
                .get("items")
                .map_or("any".to_string(), |i| describe(i, defs, depth + 1));
            let mut s = format!("list[{item}]");
            if schema.get("minItems").and_then(Value::as_u64).unwrap_or(0) >= 1 {
                s.push_str(" (non-empty)");
            }
            s
        }
        "object" => match schema.get("properties").and_then(Value::as_object) {
            Some(props) if !props.is_empty() => {
                let required = required_of(schema);
                let fields: Vec<String> = props
                    .keys()
                    .map(|k| {
                        if required.contains(&k.as_str()) {
                            k.clone()
                        } else {
                            format!("{k}?")
                        }
                    })
                    .collect();
                format!("{{{}}}", fields.join(", "))
            }
            _ => "dict".into(),
        },
        other => other.to_string(),
    };
    if nullable {
        text.push_str(" | null");
    }
    text
}
