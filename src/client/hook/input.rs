//! The hook JSON the clients send on stdin, read into what the decision needs: the event,
//! the tool, the working directory, the paths a write tool is about to write and the
//! paths a read tool opened. Pure: text in, data out.
//!
//! Shapes (Claude Code 2.1.x, Codex 0.169): `{"hook_event_name", "tool_name", "cwd",
//! "tool_input", "tool_response"?, ...}`. Claude sends absolute paths; Codex patches name
//! paths relative to `cwd`.

use std::path::PathBuf;

use serde_json::Value;

/// The hook event. A missing event name counts as a pre-tool-use call, the one that can
/// refuse, so an odd input is gated rather than waved through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    PreToolUse,
    PostToolUse,
    Other(String),
}

/// One hook call.
#[derive(Debug, Clone)]
pub(crate) struct HookInput {
    pub event: Event,
    pub tool: String,
    /// The client's working directory, when it sent an absolute one.
    pub cwd: Option<PathBuf>,
    pub tool_input: Value,
    pub tool_response: Value,
}

/// Why the hook's stdin is not a hook input.
#[derive(Debug)]
pub(crate) enum InputError {
    NotJson(serde_json::Error),
    NotAnObject,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::NotJson(e) => write!(f, "not JSON: {e}"),
            InputError::NotAnObject => f.write_str("not a JSON object"),
        }
    }
}

impl std::error::Error for InputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InputError::NotJson(e) => Some(e),
            InputError::NotAnObject => None,
        }
    }
}

/// Parses the hook JSON; the reason when it is not a hook input.
pub(crate) fn parse(stdin: &[u8]) -> Result<HookInput, InputError> {
    let value: Value = serde_json::from_slice(stdin).map_err(InputError::NotJson)?;
    let Value::Object(mut map) = value else {
        return Err(InputError::NotAnObject);
    };
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let event = match text(map.get("hook_event_name")).as_deref() {
        None | Some("PreToolUse") => Event::PreToolUse,
        Some("PostToolUse") => Event::PostToolUse,
        Some(other) => Event::Other(other.to_string()),
    };
    let tool = text(map.get("tool_name")).unwrap_or_default();
    let cwd = text(map.get("cwd"))
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    Ok(HookInput {
        event,
        tool,
        cwd,
        tool_input: map.remove("tool_input").unwrap_or(Value::Null),
        tool_response: map.remove("tool_response").unwrap_or(Value::Null),
    })
}

/// What a tool call is about to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Writes {
    /// Not a tool that writes files.
    Nothing,
    /// The paths as the client gave them (absolute, or relative to its `cwd`).
    Paths(Vec<String>),
    /// A write tool whose input does not say which files it writes.
    Unknown(String),
    /// A shell command that may write: what it writes (`crate::shell`).
    Shell(crate::shell::Scan),
}

/// The files a write tool's input names: Claude Code's `Write`, `Edit` and `MultiEdit`
/// (`file_path`) and `NotebookEdit` (`notebook_path`); Codex's `apply_patch` (every file
/// marker of the patch text); a shell command (`Bash`, the name both Claude Code and Codex
/// 0.169 give their shell tool in hook input; `command` a string, or the words of a
/// command line), through [`crate::shell::scan`]. Any other tool writes nothing the hook
/// gates.
pub(crate) fn write_targets(tool: &str, tool_input: &Value) -> Writes {
    let field = |name: &str| -> Writes {
        match tool_input.get(name).and_then(Value::as_str) {
            Some(path) if !path.trim().is_empty() => Writes::Paths(vec![path.to_string()]),
            _ => Writes::Unknown(format!("the {tool} call names no {name}")),
        }
    };
    match tool {
        "Write" | "Edit" | "MultiEdit" => field("file_path"),
        "NotebookEdit" => field("notebook_path"),
        "apply_patch" => {
            let paths = patch_paths(&patch_text(tool_input));
            if paths.is_empty() {
                Writes::Unknown("cannot tell which files this patch writes".into())
            } else {
                Writes::Paths(paths)
            }
        }
        "Bash" => {
            let command = match tool_input.get("command") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(words)) => shell_words(words),
                _ => return Writes::Unknown("the shell call names no command".into()),
            };
            let scan = crate::shell::scan(&command);
            if scan.is_read_only() {
                Writes::Nothing
            } else {
                Writes::Shell(scan)
            }
        }
        _ => Writes::Nothing,
    }
}

/// A command given as words: the script of `sh -c SCRIPT` (as `bash -lc`), else the words
/// quoted back into one line.
fn shell_words(words: &[Value]) -> String {
    let words: Vec<&str> = words.iter().filter_map(Value::as_str).collect();
    if let [shell, flag, script, ..] = words.as_slice()
        && shell.rsplit('/').next().is_some_and(|s| s.ends_with("sh"))
        && flag.starts_with('-')
        && flag.contains('c')
    {
        return (*script).to_string();
    }
    words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The patch text of an `apply_patch` input: `command` (a string, or the words of a
/// command line), else `input` or `patch`. Every candidate is scanned, so a patch is
/// never missed because it sat in an unexpected field.
fn patch_text(tool_input: &Value) -> String {
    let mut text = String::new();
    for name in ["command", "input", "patch"] {
        match tool_input.get(name) {
            Some(Value::String(s)) => {
                text.push_str(s);
                text.push('\n');
            }
            Some(Value::Array(words)) => {
                for word in words.iter().filter_map(Value::as_str) {
                    text.push_str(word);
                    text.push('\n');
                }
            }
            _ => {}
        }
    }
    text
}

/// Every path a Codex patch adds, updates, deletes or moves to, in order, without
/// repeats. Lines are trimmed, as Codex's own parser does.
pub(crate) fn patch_paths(patch: &str) -> Vec<String> {
    const MARKERS: [&str; 4] = [
        "*** Add File:",
        "*** Update File:",
        "*** Delete File:",
        "*** Move to:",
    ];
    let mut paths: Vec<String> = Vec::new();
    for line in patch.lines() {
        let line = line.trim();
        for marker in MARKERS {
            if let Some(rest) = line.strip_prefix(marker) {
                let path = rest.trim().to_string();
                if !paths.contains(&path) {
                    paths.push(path);
                }
            }
        }
    }
    paths
}

/// The files a Claude Code read tool opened: `Read` its `file_path` (else the response's
/// `file.filePath`); `Grep` and `Glob` the response's `filenames` (relative to the
/// client's working directory, or absolute). `files` is accepted as well. `Grep` in
/// content or count mode lists no file names, so nothing is recorded for it.
pub(crate) fn read_targets(tool: &str, tool_input: &Value, tool_response: &Value) -> Vec<String> {
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|s| !s.trim().is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    match tool {
        "Read" => tool_input
            .get("file_path")
            .and_then(Value::as_str)
            .or_else(|| {
                tool_response
                    .get("file")
                    .and_then(|f| f.get("filePath"))
                    .and_then(Value::as_str)
            })
            .filter(|s| !s.trim().is_empty())
            .map(|s| vec![s.to_string()])
            .unwrap_or_default(),
        "Grep" | "Glob" => {
            let mut paths = strings(tool_response.get("filenames"));
            paths.extend(strings(tool_response.get("files")));
            paths
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patches_name_every_file_they_touch() {
        let patch = "*** Begin Patch\n*** Add File: a.py\n+x\n*** Update File: src/b.py\n*** Move to: src/c.py\n@@\n-x\n+y\n  *** Delete File:  d.py \n*** End Patch\n";
        assert_eq!(patch_paths(patch), ["a.py", "src/b.py", "src/c.py", "d.py"]);
        assert_eq!(
            write_targets("apply_patch", &json!({"command": "echo hi"})),
            Writes::Unknown("cannot tell which files this patch writes".into())
        );
        assert_eq!(
            write_targets(
                "apply_patch",
                &json!({"command": ["apply_patch", "*** Add File: x\n"]})
            ),
            Writes::Paths(vec!["x".into()])
        );
    }

    #[test]
    fn inputs_are_read_leniently_but_gated_strictly() {
        let input = parse(br#"{"tool_name": "Write", "cwd": "relative", "tool_input": {}}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(input.event, Event::PreToolUse);
        assert_eq!(input.cwd, None);
        assert!(matches!(
            write_targets("Write", &input.tool_input),
            Writes::Unknown(_)
        ));
        assert!(matches!(
            write_targets("Bash", &json!({})),
            Writes::Unknown(_)
        ));
        assert_eq!(
            write_targets("Bash", &json!({"command": "ls -la"})),
            Writes::Nothing
        );
        assert!(matches!(
            write_targets("Bash", &json!({"command": ["bash", "-lc", "echo x > f"]})),
            Writes::Shell(s) if s.writes.len() == 1
        ));
        assert!(matches!(
            write_targets("Bash", &json!({"command": ["rm", "it's"]})),
            Writes::Shell(s) if s.writes[0].path == "it's"
        ));
        assert_eq!(
            write_targets("Read", &json!({"command": "rm x"})),
            Writes::Nothing
        );
        assert!(parse(b"[1]").is_err());
        assert!(parse(b"\xff").is_err());
        assert_eq!(
            read_targets(
                "Glob",
                &json!({}),
                &json!({"filenames": ["a.rs", ""], "files": ["b.rs"]})
            ),
            ["a.rs", "b.rs"]
        );
        assert_eq!(
            read_targets("Read", &json!({}), &json!({"file": {"filePath": "/r/a"}})),
            ["/r/a"]
        );
    }
}
