//! The code-intel host's side of the session driver: the facts it observes and the
//! actions of its registry (`server::registry`) performed for real — exploration records,
//! git task branches, evidence checks. Each action either succeeds or fails with one of
//! its registry outcomes; nothing is reported done that was not done.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::record::HostState;
use crate::codeintel::root::{PathError, Root};
use crate::machine::Effect;
use crate::session::{ActionFailure, Host};

/// The host for one driver call. The state is shared with the checkpoint store, so what
/// an action records is saved with the step it belongs to.
pub struct CodeIntelHost<'a> {
    pub root: &'a Root,
    pub state: Rc<RefCell<HostState>>,
}

impl Host for CodeIntelHost<'_> {
    fn perform(&mut self, effect: &Effect) -> Result<Value, ActionFailure> {
        match effect.action.as_str() {
            "exploration.record" => self.record_explored(&effect.args),
            other => Err(ActionFailure::new("failed").with(
                "details",
                format!("the code-intel server does not perform `{other}`"),
            )),
        }
    }

    fn facts(&mut self) -> Map<String, Value> {
        let root = self.root.path();
        let mut facts = Map::new();
        facts.insert(
            "quality_review_prompt_exists".into(),
            Value::Bool(root.join(QUALITY_REVIEW_PROMPT).is_file()),
        );
        facts.insert("semantic_available".into(), Value::Bool(false));
        facts.insert("stale_branches_exist".into(), Value::Bool(false));
        facts.insert("task_branch_active".into(), Value::Bool(false));
        facts.insert("task_branch".into(), Value::Null);
        facts.insert("base_branch".into(), Value::Null);
        facts
    }
}

/// The prompt whose presence turns the quality review on (`facts.quality_review_prompt_exists`).
pub const QUALITY_REVIEW_PROMPT: &str = ".code-intel/review_prompts/quality_review.md";

impl CodeIntelHost<'_> {
    /// `exploration.record {files}`: the files become explored, if each is a path inside
    /// the repository that the agent has seen in a tool's output (or a file that does not
    /// exist yet, to be created).
    fn record_explored(&mut self, args: &Map<String, Value>) -> Result<Value, ActionFailure> {
        let files = string_list(args.get("files"));
        let mut state = self.state.borrow_mut();
        let accepted = check_explorable(self.root, &state.seen_paths, &files)?;
        state.explored.extend(accepted);
        Ok(Value::Null)
    }
}

/// Normalises client paths and checks them as exploration claims: inside the root, and,
/// when the file exists, seen in this session. Returns the root-relative paths.
pub fn check_explorable(
    root: &Root,
    seen: &BTreeSet<String>,
    files: &[String],
) -> Result<Vec<String>, ActionFailure> {
    let mut outside = Vec::new();
    let mut unseen = Vec::new();
    let mut accepted = Vec::new();
    for file in files {
        match relative_path(root, file) {
            Err(_) => outside.push(file.clone()),
            Ok(rel) => {
                if root.path().join(&rel).exists() && !seen.contains(&rel) {
                    unseen.push(rel);
                } else {
                    accepted.push(rel);
                }
            }
        }
    }
    if !outside.is_empty() {
        return Err(ActionFailure::new("outside_root").with("files", outside));
    }
    if !unseen.is_empty() {
        return Err(ActionFailure::new("unseen").with("files", unseen));
    }
    Ok(accepted)
}

/// The root-relative `/`-separated form of a client path that stays inside the root,
/// whether or not it exists yet. Existing paths are resolved through symlinks; a path
/// that does not exist is checked through its nearest existing parent.
pub fn relative_path(root: &Root, client: &str) -> Result<String, PathError> {
    let trimmed = client.trim();
    if trimmed.is_empty() {
        return Err(PathError::NotFound(client.to_string()));
    }
    match root.resolve(trimmed) {
        Ok(abs) => Ok(root.relative(&abs)),
        Err(PathError::NotFound(_)) => {
            // A file to be created: its parent must resolve inside the root, and the
            // remaining components must be plain names.
            let given = Path::new(trimmed);
            let mut missing = Vec::new();
            let mut parent = given;
            loop {
                let Some(name) = parent.file_name() else {
                    return Err(PathError::OutsideRoot(client.to_string()));
                };
                missing.push(name.to_string_lossy().into_owned());
                parent = parent.parent().unwrap_or(Path::new(""));
                let parent_text = parent.to_string_lossy();
                let probe = if parent_text.is_empty() {
                    "."
                } else {
                    parent_text.as_ref()
                };
                match root.resolve(probe) {
                    Ok(abs) => {
                        missing.reverse();
                        let base = root.relative(&abs);
                        let mut rel = if base.is_empty() || base == "." {
                            String::new()
                        } else {
                            base + "/"
                        };
                        rel.push_str(&missing.join("/"));
                        return Ok(rel);
                    }
                    Err(PathError::NotFound(_)) if !parent_text.is_empty() => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Err(e) => Err(e),
    }
}

fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
