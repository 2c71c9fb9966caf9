//! The tools the server lists: name, what kind of work it is, when to call it (the
//! description agents read) and its input schema, generated from the argument types.
//! A test checks this table against the registry both ways.

use schemars::JsonSchema;
use serde_json::Value;

use super::args::{
    AddExploredArgs, EmptyArgs, OutcomeArgs, StartArgs, SubmitArgs, WriteTargetArgs,
};
use super::code_tools::{
    DefinitionsArgs, FileArgs, ImpactArgs, LineArgs, PathArgs, QueryArgs, ReferencesArgs,
    SearchFilesArgs, SearchTextArgs,
};
use super::semantic_tools::{ChunkArgs, SemanticSearchArgs, SyncArgs, UpdateContextArgs};

/// How the server handles a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    StartSession,
    Status,
    Submit,
    RecordOutcome,
    /// Reads the repository (gated, evidence).
    Code,
    /// Session control that the phase gates (write checks, explored files, review).
    Control,
}

/// One listed tool.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    pub name: &'static str,
    pub kind: ToolKind,
    pub description: &'static str,
    pub schema: fn() -> Value,
}

fn schema<T: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut schema {
        // Clients want a plain object schema; the draft marker, the title and a
        // description of the whole (the tool's own says it) add nothing.
        map.remove("$schema");
        map.remove("title");
        map.remove("description");
    }
    lean(&mut schema);
    schema
}

/// Takes out of a generated schema what every agent pays for in every session and none
/// needs: number formats and bounds, defaults (the empty value, or stated in the
/// description), `null` as an alternative type (absent means the same), and the line
/// breaks of doc comments.
fn lean(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            map.remove("format");
            if map.get("minimum").and_then(Value::as_u64) == Some(0) {
                map.remove("minimum");
            }
            map.remove("default");
            if let Some(Value::Array(types)) = map.get("type") {
                let types: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                if let [only] = types.as_slice() {
                    let only = only.clone();
                    map.insert("type".into(), only);
                }
            }
            if let Some(Value::String(d)) = map.get_mut("description") {
                *d = d.split_whitespace().collect::<Vec<_>>().join(" ");
            }
            for (_, v) in map.iter_mut() {
                lean(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(lean),
        _ => {}
    }
}

/// Every tool the server offers, in the order clients list them.
pub const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "start_session",
        kind: ToolKind::StartSession,
        description: "Start a session for the user's request before changing code: `query` verbatim, `flags` as typed. Follow each phase's `instruction`; answer with submit_phase. An unfinished session is reported: resume: true or clean: true (ask the user).",
        schema: schema::<StartArgs>,
    },
    ToolSpec {
        name: "submit_phase",
        kind: ToolKind::Submit,
        description: "Submit the current phase's payload (`data` as `expected_payload` says, with `compaction_count`). The only way forward: answers with the next phase or what to fix.",
        schema: schema::<SubmitArgs>,
    },
    ToolSpec {
        name: "get_session_status",
        kind: ToolKind::Status,
        description: "The session's phase, instruction, expected payload and tasks. Call it after a compaction or restart, or when unsure; it also resumes a saved session.",
        schema: schema::<EmptyArgs>,
    },
    ToolSpec {
        name: "search_text",
        kind: ToolKind::Code,
        description: "Search file contents like ripgrep (literal unless `regex`), gitignore-aware. Use it to find where text is mentioned.",
        schema: schema::<SearchTextArgs>,
    },
    ToolSpec {
        name: "search_files",
        kind: ToolKind::Code,
        description: "List files whose paths match globs (`*.rs`, `src/**/test_*.py`). Use it to find files by name.",
        schema: schema::<SearchFilesArgs>,
    },
    ToolSpec {
        name: "find_definitions",
        kind: ToolKind::Code,
        description: "Where a symbol is defined (tree-sitter index); `Class.method`, `module.func`, `Type::method` name a member. Use it before reading or changing a symbol.",
        schema: schema::<DefinitionsArgs>,
    },
    ToolSpec {
        name: "find_references",
        kind: ToolKind::Code,
        description: "Where a symbol is used (call, inherit, import, type, decorator, read) and how sure each use is (`resolution`; `name`: name match only, listed last). Use it to find callers before changing a signature.",
        schema: schema::<ReferencesArgs>,
    },
    ToolSpec {
        name: "get_symbols",
        kind: ToolKind::Code,
        description: "The outline of a source file, or of a class or module by name, with line ranges. Use it to see what a file or class holds.",
        schema: schema::<FileArgs>,
    },
    ToolSpec {
        name: "analyze_structure",
        kind: ToolKind::Code,
        description: "Classes, functions, imports and nesting of a file or directory, with counts. Use it to get the lie of a directory.",
        schema: schema::<PathArgs>,
    },
    ToolSpec {
        name: "get_function_at_line",
        kind: ToolKind::Code,
        description: "The function (and enclosing class) containing a line of a file. Use it to place a line from a trace or a diff.",
        schema: schema::<LineArgs>,
    },
    ToolSpec {
        name: "analyze_impact",
        kind: ToolKind::Code,
        description: "What changing files or symbols may affect: each section's count (definitions, subclasses, importers, callers, tests, config and docs) with its top items, and a risk summary. Call it on everything you plan to change.",
        schema: schema::<ImpactArgs>,
    },
    ToolSpec {
        name: "query",
        kind: ToolKind::Code,
        description: "Ask in plain words. Identifier questions (\"where is parse_config defined\", \"who calls save\") go to the matching code tool, descriptive ones to semantic_search; the answer says which.",
        schema: schema::<QueryArgs>,
    },
    ToolSpec {
        name: "semantic_search",
        kind: ToolKind::Code,
        description: "Search by meaning: code and doc chunks ranked by embeddings and words, fused. Use it when you can describe behaviour but do not know the names; fetch_chunk_detail gives a hit's full text.",
        schema: schema::<SemanticSearchArgs>,
    },
    ToolSpec {
        name: "fetch_chunk_detail",
        kind: ToolKind::Code,
        description: "The full text of a semantic_search hit by chunk id, with file, lines and symbol. Use it after semantic_search.",
        schema: schema::<ChunkArgs>,
    },
    ToolSpec {
        name: "sync_index",
        kind: ToolKind::Code,
        description: "Bring the semantic index up to date in the background and report progress (`rebuild: true` rebuilds it). Rarely needed: semantic_search syncs a stale index itself.",
        schema: schema::<SyncArgs>,
    },
    ToolSpec {
        name: "update_context",
        kind: ToolKind::Code,
        description: "Save summaries of the design documents and project rules you read in document research, so later sessions get them from start_session.",
        schema: schema::<UpdateContextArgs>,
    },
    ToolSpec {
        name: "check_write_target",
        kind: ToolKind::Control,
        description: "Whether the session allows writing a file now (explored or added files only). Call it before every create or edit in the implementation phase.",
        schema: schema::<WriteTargetArgs>,
    },
    ToolSpec {
        name: "add_explored_files",
        kind: ToolKind::Control,
        description: "Add files to the explored set during implementation so they may be written: existing files must have appeared in a code-intel answer this session; new files must lie in the repository.",
        schema: schema::<AddExploredArgs>,
    },
    ToolSpec {
        name: "review_changes",
        kind: ToolKind::Control,
        description: "Every change of this session against its base, with diffs, and which changed files were never explored. Call it in the commit review, and when verifying or reviewing.",
        schema: schema::<EmptyArgs>,
    },
    ToolSpec {
        name: "cleanup_stale_branches",
        kind: ToolKind::Control,
        description: "Outside a session only: delete every llm_task_* branch (unmerged work is listed) and every saved session. Use it when the user asks to clean up.",
        schema: schema::<EmptyArgs>,
    },
    ToolSpec {
        name: "record_outcome",
        kind: ToolKind::RecordOutcome,
        description: "Record how the session ended for the user: success, failure or aborted, with notes. A failure or an abort ends the session and deletes its task branch.",
        schema: schema::<OutcomeArgs>,
    },
];

/// The listed tool of this name.
pub fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}
