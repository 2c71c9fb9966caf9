//! `.code-intel/init-manifest.json`: the sha256 of what init last wrote to each file it
//! owns, so a rerun can tell "still ours, safe to update" from "edited by the user".

use std::collections::BTreeMap;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub(super) const PATH: &str = ".code-intel/init-manifest.json";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Manifest {
    files: BTreeMap<String, String>,
}

impl Manifest {
    /// A missing or unreadable manifest is an empty one: every existing file then counts
    /// as the user's, which can only make init keep more, never overwrite more.
    pub(super) fn parse(text: Option<&str>) -> Manifest {
        let files = text
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .and_then(|v| v.get("files").and_then(Value::as_object).cloned())
            .map(|files| {
                files
                    .into_iter()
                    .filter_map(|(k, v)| v.as_str().map(|h| (k, h.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        Manifest { files }
    }

    pub(super) fn get(&self, path: &str) -> Option<&str> {
        self.files.get(path).map(String::as_str)
    }

    pub(super) fn set(&mut self, path: &str, hash: String) {
        self.files.insert(path.to_string(), hash);
    }

    pub(super) fn to_text(&self) -> Result<String, serde_json::Error> {
        let value = json!({
            "comment": "Written by `code-intel init`: the sha256 of what it last generated. Do not edit.",
            "files": self.files,
        });
        let mut text = serde_json::to_string_pretty(&value)?;
        text.push('\n');
        Ok(text)
    }
}

/// Lowercase hex sha256 of a text.
pub(super) fn hash(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
