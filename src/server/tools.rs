//! One declaration per tool: its name, when to call it (the description agents read),
//! its input schema (generated from the argument type its handler parses), the limits of
//! its fields, whether the contract may gate it, and its handler. The tools the server
//! lists (`service`), the registry's tools (`registry`) and the dispatch of a call
//! (`core::dispatch`) all follow from [`TOOLS`], so a tool is added or renamed here only.
//!
//! The handler says how the server runs the tool: a session tool (start, status, submit,
//! outcome) holding the session, and not asked of the engine's tool gate (the driver
//! decides those); a control tool gated by the phase and changing the session record in
//! place; a code tool gated by the phase and reading the repository without holding the
//! session, its answer evidence of what the agent saw.

use schemars::JsonSchema;
use serde_json::{Map, Value};

use super::args::{
    AddExploredArgs, EmptyArgs, FieldLimit, MAX_PATTERNS_BYTES, MAX_QUERY_BYTES, OutcomeArgs,
    StartArgs, SubmitArgs, WriteTargetArgs,
};
use super::code_tools::{
    CodeHandler, CodeTools, DefinitionsArgs, FileArgs, ImpactArgs, LineArgs, PathArgs, QueryArgs,
    ReferencesArgs, SearchFilesArgs, SearchTextArgs, ToolError, parse,
};
use super::core::{Server, State, WRITE_CHECK_TOOL};
use super::reply::Reply;
use super::semantic_tools::{ChunkArgs, SemanticSearchArgs, SyncArgs, UpdateContextArgs};
use super::words::Words;

/// A tool that runs on the server's session: the server, its state (locked), the call's
/// arguments.
pub(super) type SessionHandler = fn(&Server, &mut State, Map<String, Value>) -> Reply;

/// How the server runs a tool (see the module's doc).
#[derive(Debug, Clone, Copy)]
pub(super) enum Handler {
    Session(SessionHandler),
    Control(SessionHandler),
    Code(CodeHandler),
}

/// One tool: everything the server knows about it.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub schema: fn() -> Value,
    /// Callable in every state, whatever a state's `allowed_tools` say (the registry's
    /// ungated tools): session control, and the tools that change neither the code nor
    /// the flow (index upkeep, context notes).
    pub ungated: bool,
    /// Limits of its fields beyond the general ones (`args::bounded`).
    pub limits: &'static [FieldLimit],
    pub(super) handler: Handler,
}

fn schema<T: JsonSchema>() -> Value {
    // A schemars schema is a JSON value already: no encoding that could fail.
    let mut schema: Value = schemars::schema_for!(T).into();
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
        description: "Start a session for the user's request before changing code: `query` verbatim, `flags` as typed. Follow each phase's `instruction`; answer with submit_phase. An unfinished session is reported: resume: true or clean: true (ask the user).",
        schema: schema::<StartArgs>,
        ungated: true,
        // The request is measured by the session's own check.
        limits: &[FieldLimit {
            field: "query",
            string: None,
            total: None,
        }],
        handler: Handler::Session(Server::start_session),
    },
    ToolSpec {
        name: "submit_phase",
        description: "Submit the current phase's payload (`data` as `expected_payload` says, with `compaction_count`). The only way forward: answers with the next phase or what to fix.",
        schema: schema::<SubmitArgs>,
        // The contract's submit tool: the engine allows it where a state waits for one.
        ungated: false,
        // The payload's texts are bounded by the contract, the whole by the call's total.
        limits: &[FieldLimit {
            field: "data",
            string: None,
            total: None,
        }],
        handler: Handler::Session(Server::submit),
    },
    ToolSpec {
        name: "get_session_status",
        description: "The session's phase, instruction, expected payload and tasks. Call it after a compaction or restart, or when unsure; it also resumes a saved session.",
        schema: schema::<EmptyArgs>,
        ungated: true,
        limits: &[],
        handler: Handler::Session(|server, state, _| server.status(state)),
    },
    ToolSpec {
        name: "search_text",
        description: "Search file contents like ripgrep (literal unless `regex`), gitignore-aware. Use it to find where text is mentioned.",
        schema: schema::<SearchTextArgs>,
        ungated: false,
        limits: &[FieldLimit {
            field: "patterns",
            string: Some(MAX_QUERY_BYTES),
            total: Some(MAX_PATTERNS_BYTES),
        }],
        handler: Handler::Code(|code, args, _| code.search_text(parse(args)?)),
    },
    ToolSpec {
        name: "search_files",
        description: "List files whose paths match globs (`*.rs`, `src/**/test_*.py`). Use it to find files by name.",
        schema: schema::<SearchFilesArgs>,
        ungated: false,
        limits: &[],
        handler: Handler::Code(|code, args, _| code.search_files(parse(args)?)),
    },
    ToolSpec {
        name: "find_definitions",
        description: "Where a symbol is defined (tree-sitter index); `Class.method`, `module.func`, `Type::method` name a member. Use it before reading or changing a symbol.",
        schema: schema::<DefinitionsArgs>,
        ungated: false,
        limits: &[],
        handler: Handler::Code(|code, args, words| code.find_definitions(parse(args)?, words)),
    },
    ToolSpec {
        name: "find_references",
        description: "Where a symbol is used (call, inherit, import, type, decorator, read) and how sure each use is (`resolution`; `name`: name match only, listed last). Use it to find callers before changing a signature.",
        schema: schema::<ReferencesArgs>,
        ungated: false,
        limits: &[],
        handler: Handler::Code(|code, args, words| code.find_references(parse(args)?, words)),
    },
    ToolSpec {
        name: "get_symbols",
        description: "The outline of a source file, or of a class or module by name, with line ranges. Use it to see what a file or class holds.",
        schema: schema::<FileArgs>,
        ungated: false,
        limits: &[],
        handler: Handler::Code(|code, args, words| code.get_symbols(parse(args)?, words)),
    },
    ToolSpec {
        name: "analyze_structure",
        description: "Classes, functions, imports and nesting of a file or directory, with counts. Use it to get the lie of a directory.",
        schema: schema::<PathArgs>,
        ungated: false,
        limits: &[],
        handler: Handler::Code(|code, args, words| code.analyze_structure(parse(args)?, words)),
    },
    ToolSpec {
        name: "get_function_at_line",
        description: "The function (and enclosing class) containing a line of a file. Use it to place a line from a trace or a diff.",
        schema: schema::<LineArgs>,
        ungated: false,
        limits: &[],
        handler: Handler::Code(|code, args, words| code.function_at_line(parse(args)?, words)),
    },
    ToolSpec {
        name: "analyze_impact",
        description: "What changing files or symbols may affect: each section's count (definitions, subclasses, importers, callers, tests, config and docs) with its top items, and a risk summary. Call it on everything you plan to change.",
        schema: schema::<ImpactArgs>,
        ungated: false,
        limits: &[FieldLimit {
            field: "targets",
            string: Some(MAX_QUERY_BYTES),
            total: Some(MAX_PATTERNS_BYTES),
        }],
        handler: Handler::Code(|code, args, words| code.analyze_impact(parse(args)?, words)),
    },
    ToolSpec {
        name: "query",
        description: "Ask in plain words. Identifier questions (\"where is parse_config defined\", \"who calls save\") go to the matching code tool, descriptive ones to semantic_search; the answer says which.",
        schema: schema::<QueryArgs>,
        ungated: false,
        limits: &[FieldLimit {
            field: "question",
            string: Some(MAX_QUERY_BYTES),
            total: None,
        }],
        handler: Handler::Code(|code, args, words| code.query(parse(args)?, words)),
    },
    ToolSpec {
        name: "semantic_search",
        description: "Search by meaning: code and doc chunks ranked by embeddings and words, fused. Use it when you can describe behaviour but do not know the names; fetch_chunk_detail gives a hit's full text.",
        schema: schema::<SemanticSearchArgs>,
        ungated: false,
        limits: &[],
        handler: Handler::Code(|code, args, words| {
            let args: SemanticSearchArgs = parse(args)?;
            code.semantic
                .search_in(args, words)
                .map_err(ToolError::Semantic)
        }),
    },
    ToolSpec {
        name: "fetch_chunk_detail",
        description: "The full text of a semantic_search hit by chunk id, with file, lines and symbol. Use it after semantic_search.",
        schema: schema::<ChunkArgs>,
        ungated: false,
        limits: &[],
        handler: Handler::Code(|code, args, _| {
            let args: ChunkArgs = parse(args)?;
            code.semantic.chunk(args).map_err(ToolError::Semantic)
        }),
    },
    ToolSpec {
        name: "sync_index",
        description: "Bring the semantic index up to date in the background and report progress (`rebuild: true` rebuilds it). Rarely needed: semantic_search syncs a stale index itself.",
        schema: schema::<SyncArgs>,
        ungated: true,
        limits: &[],
        handler: Handler::Code(|code, args, _| {
            let args: SyncArgs = parse(args)?;
            Ok(code.semantic.sync(args))
        }),
    },
    ToolSpec {
        name: "update_context",
        description: "Save summaries of the design documents and project rules you read in document research, so later sessions get them from start_session.",
        schema: schema::<UpdateContextArgs>,
        ungated: true,
        limits: &[],
        handler: Handler::Code(|code, args, _| {
            let args: UpdateContextArgs = parse(args)?;
            code.semantic
                .update_context(args)
                .map_err(|e| ToolError::Arguments(e.to_string()))
        }),
    },
    ToolSpec {
        name: WRITE_CHECK_TOOL,
        description: "Whether the session allows writing a file now (explored or added files only). Call it before every create or edit in the implementation phase.",
        schema: schema::<WriteTargetArgs>,
        ungated: false,
        limits: &[],
        handler: Handler::Control(Server::check_write_target),
    },
    ToolSpec {
        name: "add_explored_files",
        description: "Add files to the explored set during implementation so they may be written: existing files must have appeared in a code-intel answer this session; new files must lie in the repository.",
        schema: schema::<AddExploredArgs>,
        ungated: false,
        limits: &[],
        handler: Handler::Control(Server::add_explored_files),
    },
    ToolSpec {
        name: "review_changes",
        description: "Every change of this session against its base, with diffs, and which changed files were never explored. Call it in the commit review, and when verifying or reviewing.",
        schema: schema::<EmptyArgs>,
        ungated: false,
        limits: &[],
        handler: Handler::Control(Server::review_changes),
    },
    ToolSpec {
        name: "cleanup_stale_branches",
        description: "Outside a session only: delete every llm_task_* branch (unmerged work is listed) and every saved session. Use it when the user asks to clean up.",
        schema: schema::<EmptyArgs>,
        ungated: false,
        limits: &[],
        handler: Handler::Control(Server::cleanup_stale_branches),
    },
    ToolSpec {
        name: "record_outcome",
        description: "Record how the session ended for the user: success, failure or aborted, with notes. A failure or an abort ends the session and deletes its task branch.",
        schema: schema::<OutcomeArgs>,
        ungated: true,
        limits: &[],
        handler: Handler::Session(Server::record_outcome),
    },
];

/// The declared tool of this name.
pub(crate) fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}

/// Runs the code tool `name` on `code`, its notes worded by `words` (the server's own
/// dispatch, for callers without a server: tests, benches); `Ok(None)` when `name` is
/// not a code tool.
pub fn call_code(
    code: &CodeTools,
    name: &str,
    args: Map<String, Value>,
    words: Words,
) -> Result<Option<Value>, ToolError> {
    match find(name).map(|t| t.handler) {
        Some(Handler::Code(handler)) => code.run(handler, args, words).map(Some),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    //! The declarations are the only list of tools: the registry takes its tools from
    //! them, and no other file of the server lists tool names or matches on them.

    use std::path::Path;

    use super::TOOLS;

    /// Every `.rs` file under `dir` but this one, with its text.
    fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for path in entries.filter_map(Result::ok).map(|e| e.path()) {
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs")
                && !path.ends_with("server/tools.rs")
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                out.push((path.display().to_string(), text));
            }
        }
    }

    /// The lines of `text` that list the tool `name` (the name alone on a line, as an
    /// item of a list) or dispatch on it (a match arm).
    fn restated(text: &str, name: &str) -> Vec<String> {
        let quoted = format!("\"{name}\"");
        text.lines()
            .filter(|line| {
                let line = line.trim();
                line == format!("{quoted},")
                    || line.contains(&format!("{quoted} =>"))
                    || line.contains(&format!("{quoted} |"))
            })
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_registry_lists_the_declared_tools_in_their_order() {
        let registry = super::super::registry::registry();
        let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
        assert_eq!(registry.tools, names);
        let ungated: Vec<&str> = TOOLS.iter().filter(|t| t.ungated).map(|t| t.name).collect();
        assert_eq!(registry.ungated_tools, ungated);
        assert_eq!(
            ungated,
            [
                "start_session",
                "get_session_status",
                "sync_index",
                "update_context",
                "record_outcome"
            ]
        );
    }

    #[test]
    fn no_other_file_of_the_server_lists_or_dispatches_tool_names() {
        let mut files = Vec::new();
        sources(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/server"),
            &mut files,
        );
        assert!(files.len() > 10, "the server's sources were not found");
        let mut found = Vec::new();
        for (path, text) in &files {
            for tool in TOOLS {
                for line in restated(text, tool.name) {
                    found.push(format!("{path}: {line}"));
                }
            }
        }
        assert!(
            found.is_empty(),
            "tool names outside their declarations: {found:#?}"
        );
        // The scanner finds both forms, and not a name as a value.
        let sample = "match name {\n    \"search_text\" => a(),\n    \"query\" | \"x\" => b(),\n}\nvec![\n    \"get_symbols\",\n]\njson!({\"tool\": \"semantic_search\",\n";
        assert_eq!(restated(sample, "search_text").len(), 1);
        assert_eq!(restated(sample, "query").len(), 1);
        assert_eq!(restated(sample, "get_symbols").len(), 1);
        assert!(restated(sample, "semantic_search").is_empty());
    }
}
