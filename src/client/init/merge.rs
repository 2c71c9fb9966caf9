//! Files init shares with the user: the Claude Code JSON files, merged key by key (the
//! user's servers, hooks and settings stay), and the Codex `config.toml`, where init owns
//! one marked block.

use std::fmt;

use serde_json::{Map, Value, json};

pub(super) const CODEX_CONFIG: &str = ".codex/config.toml";

/// The server's name in every client configuration; Claude Code names its tools
/// `mcp__code-intel__…`, Codex `mcp__code_intel__…`.
const SERVER: &str = "code-intel";

/// Claude Code tools that write files (`MultiEdit` is gone in 2.1.x but harmless) and
/// the ones that read them: the hook gates the first and records the second.
const CLAUDE_HOOKS: [(&str, &str); 3] = [
    ("PreToolUse", "Edit|Write|MultiEdit|NotebookEdit"),
    // Shell commands that plainly write (`shell`); a group of its own, so
    // an install from before it gets the group added and the other left as it is.
    ("PreToolUse", "Bash"),
    ("PostToolUse", "Read|Grep|Glob"),
];

const BLOCK_BEGIN: &str = "# >>> code-intel: written by `code-intel init`";
const BLOCK_END: &str = "# <<< code-intel";

/// Why a JSON file cannot be merged into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JsonProblem {
    /// Not JSON; the position is 1-based.
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// Valid JSON, but the value at `pointer` is not what the client expects there.
    Shape {
        pointer: String,
        expected: &'static str,
    },
    /// The merged value could not be written back as JSON (serde's message).
    Encode(String),
}

impl fmt::Display for JsonProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonProblem::Syntax {
                line,
                column,
                message,
            } => write!(f, "{line}:{column}: not valid JSON: {message}"),
            JsonProblem::Shape { pointer, expected } => {
                write!(f, "`{pointer}` must be {expected}")
            }
            JsonProblem::Encode(message) => write!(f, "cannot be written as JSON: {message}"),
        }
    }
}

/// A merge: the file's current text (if any) to its new text, or `None` when the file
/// already has everything (so it is left byte for byte as it is).
pub(super) type JsonMerge = Box<dyn Fn(Option<&str>) -> Result<Option<String>, JsonProblem>>;

/// The Claude Code files init merges into, for a server started as `command`.
pub(super) fn json_files(command: &str) -> Vec<(&'static str, JsonMerge)> {
    let server_command = command.to_string();
    let hook = hook_command(command, "claude");
    vec![
        (
            ".mcp.json",
            Box::new(move |text| merge_json(text, |root| add_server(root, &server_command))),
        ),
        (
            ".claude/settings.local.json",
            Box::new(|text| merge_json(text, enable_server)),
        ),
        (
            ".claude/settings.json",
            Box::new(move |text| merge_json(text, |root| add_hooks(root, &hook))),
        ),
    ]
}

/// The shell command a client runs for a hook: `CMD hook CLIENT`, with `CMD` quoted when
/// it needs to be (hooks run through a shell).
pub(super) fn hook_command(command: &str, client: &str) -> String {
    format!("{} hook {client}", shell_quote(command))
}

fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:@%+=,-".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn merge_json(
    text: Option<&str>,
    change: impl Fn(&mut Map<String, Value>) -> Result<(), JsonProblem>,
) -> Result<Option<String>, JsonProblem> {
    // An empty file is treated like a missing one: there is nothing in it to keep.
    let original = match text.filter(|t| !t.trim().is_empty()) {
        None => None,
        Some(t) => Some(serde_json::from_str::<Value>(t).map_err(syntax_problem)?),
    };
    let mut root = match &original {
        None => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => {
            return Err(JsonProblem::Shape {
                pointer: "/".to_string(),
                expected: "an object",
            });
        }
    };
    change(&mut root)?;
    let merged = Value::Object(root);
    if original.as_ref() == Some(&merged) {
        return Ok(None);
    }
    let mut out =
        serde_json::to_string_pretty(&merged).map_err(|e| JsonProblem::Encode(e.to_string()))?;
    out.push('\n');
    Ok(Some(out))
}

fn syntax_problem(e: serde_json::Error) -> JsonProblem {
    let (line, column) = (e.line(), e.column());
    let full = e.to_string();
    let message = full
        .strip_suffix(&format!(" at line {line} column {column}"))
        .unwrap_or(&full)
        .to_string();
    JsonProblem::Syntax {
        line,
        column,
        message,
    }
}

/// `map[key]` as an object or array of the expected kind, created when missing.
fn child<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
    pointer: &str,
    empty: Value,
) -> Result<&'a mut Value, JsonProblem> {
    let want_object = empty.is_object();
    let value = map.entry(key.to_string()).or_insert(empty);
    let fits = if want_object {
        value.is_object()
    } else {
        value.is_array()
    };
    if fits {
        return Ok(value);
    }
    Err(JsonProblem::Shape {
        pointer: pointer.to_string(),
        expected: if want_object { "an object" } else { "an array" },
    })
}

/// `.mcp.json`: `mcpServers.code-intel` starts `command serve` over stdio; the entry's
/// other keys (`env`, ...) and every other server stay.
fn add_server(root: &mut Map<String, Value>, command: &str) -> Result<(), JsonProblem> {
    let servers = child(root, "mcpServers", "/mcpServers", json!({}))?;
    let servers = servers.as_object_mut().ok_or(JsonProblem::Shape {
        pointer: "/mcpServers".to_string(),
        expected: "an object",
    })?;
    let pointer = format!("/mcpServers/{SERVER}");
    let entry = child(servers, SERVER, &pointer, json!({}))?;
    if let Some(entry) = entry.as_object_mut() {
        entry.insert("type".to_string(), json!("stdio"));
        entry.insert("command".to_string(), json!(command));
        entry.insert("args".to_string(), json!(["serve"]));
    }
    Ok(())
}

/// `.claude/settings.local.json`: Claude Code runs a project server only once it is
/// approved there (the same key in the committed settings.json is ignored).
fn enable_server(root: &mut Map<String, Value>) -> Result<(), JsonProblem> {
    let list = child(
        root,
        "enabledMcpjsonServers",
        "/enabledMcpjsonServers",
        json!([]),
    )?;
    if let Some(list) = list.as_array_mut()
        && !list.iter().any(|v| v == SERVER)
    {
        list.push(json!(SERVER));
    }
    Ok(())
}

/// `.claude/settings.json`: one matcher group per event for our hook. A group we added
/// before (same matcher, a hook command ending in `hook claude`) is updated in place, so
/// a rerun adds nothing and the user's hooks keep their order.
fn add_hooks(root: &mut Map<String, Value>, hook: &str) -> Result<(), JsonProblem> {
    let hooks = child(root, "hooks", "/hooks", json!({}))?;
    let Some(hooks) = hooks.as_object_mut() else {
        return Ok(());
    };
    for (event, matcher) in CLAUDE_HOOKS {
        let pointer = format!("/hooks/{event}");
        let groups = child(hooks, event, &pointer, json!([]))?;
        let Some(groups) = groups.as_array_mut() else {
            continue;
        };
        let ours = groups
            .iter_mut()
            .filter(|g| g.get("matcher").and_then(Value::as_str) == Some(matcher))
            .filter_map(|g| g.get_mut("hooks").and_then(Value::as_array_mut))
            .flat_map(|handlers| handlers.iter_mut())
            .find(|h| {
                h.get("command")
                    .and_then(Value::as_str)
                    .is_some_and(|c| c.ends_with(" hook claude"))
            });
        match ours {
            Some(handler) => {
                if let Some(handler) = handler.as_object_mut() {
                    handler.insert("command".to_string(), json!(hook));
                }
            }
            None => groups.push(json!({
                "matcher": matcher,
                "hooks": [{"type": "command", "command": hook, "timeout": 30}],
            })),
        }
    }
    Ok(())
}

/// The block init owns in a TOML file, markers included, if the file has one.
pub(super) fn find_block(text: &str) -> Option<&str> {
    let (start, end) = block_range(text)?;
    Some(&text[start..end])
}

fn block_range(text: &str) -> Option<(usize, usize)> {
    let start = line_start_of(text, BLOCK_BEGIN)?;
    let end_marker = start + text[start..].find(&format!("\n{BLOCK_END}"))? + 1;
    let end = text[end_marker..]
        .find('\n')
        .map_or(text.len(), |i| end_marker + i + 1);
    Some((start, end))
}

/// Where a line starting with `prefix` begins.
fn line_start_of(text: &str, prefix: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with(prefix) {
            return Some(offset);
        }
        offset += line.len();
    }
    None
}

/// `text` with our block replaced by `block`, or `block` appended after a blank line.
pub(super) fn replace_block(text: &str, block: &str) -> String {
    match block_range(text) {
        Some((start, end)) => format!("{}{block}{}", &text[..start], &text[end..]),
        None if text.trim().is_empty() => block.to_string(),
        None => {
            let separator = if text.ends_with('\n') { "\n" } else { "\n\n" };
            format!("{text}{separator}{block}")
        }
    }
}

/// Whether the user's own TOML already declares our server (then adding the block would
/// define the table twice, which Codex refuses to load).
pub(super) fn configures_code_intel(text: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim_start().replace(' ', "");
        [
            "[mcp_servers.code-intel]",
            "[mcp_servers.\"code-intel\"]",
            "[mcp_servers.'code-intel']",
            "[mcp_servers.code-intel.",
            "[mcp_servers.\"code-intel\".",
        ]
        .iter()
        .any(|p| line.starts_with(p))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_appended_once_and_then_replaced_in_place() {
        let block = format!("{BLOCK_BEGIN}\n[mcp_servers.code-intel]\n{BLOCK_END}\n");
        let user = "model = \"o3\"\n";
        let first = replace_block(user, &block);
        assert_eq!(first, format!("{user}\n{block}"));
        assert_eq!(find_block(&first), Some(block.as_str()));
        let newer = format!("{BLOCK_BEGIN}\n# v2\n{BLOCK_END}\n");
        let second = replace_block(&format!("{first}[x]\n"), &newer);
        assert_eq!(second, format!("{user}\n{newer}[x]\n"));
    }

    #[test]
    fn commands_with_spaces_are_quoted_for_the_shell() {
        assert_eq!(
            hook_command("code-intel", "claude"),
            "code-intel hook claude"
        );
        assert_eq!(
            hook_command("/opt/my tools/code-intel", "codex"),
            "'/opt/my tools/code-intel' hook codex"
        );
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let Err(JsonProblem::Syntax { line, column, .. }) =
            merge_json(Some("{\n  \"a\": 1,\n}"), |_| Ok(()))
        else {
            panic!("expected a syntax error");
        };
        assert_eq!((line, column), (3, 1));
    }
}
