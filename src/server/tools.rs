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
        // Clients want a plain object schema; the draft marker and title add nothing.
        map.remove("$schema");
        map.remove("title");
    }
    schema
}

/// Every tool the server offers, in the order clients list them.
pub const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "start_session",
        kind: ToolKind::StartSession,
        description: "Start a code-intel session for the user's request before changing any code. Pass the request verbatim as `query` and the flags exactly as the user typed them (e.g. \"--quick -ni\"). The response is the first phase: follow its `instruction` and answer with submit_phase. If an unfinished session exists it is reported instead: continue it with resume: true or discard it with clean: true (ask the user).",
        schema: schema::<StartArgs>,
    },
    ToolSpec {
        name: "submit_phase",
        kind: ToolKind::Submit,
        description: "Submit the current phase's result: `data` must match the phase's `expected_payload` and include `compaction_count` (echo the last value you saw). The only way forward: the server validates the payload, checks which tools you called, performs the phase's actions (task branch, commit, merge) and answers with the next phase or with what to fix.",
        schema: schema::<SubmitArgs>,
    },
    ToolSpec {
        name: "get_session_status",
        kind: ToolKind::Status,
        description: "Where the session is: phase, instruction, expected payload, phase summaries, tasks, explored files and the tools called in this phase. Call it after a context compaction or a restart, or whenever you are unsure what to do next. It also resumes a session saved by an earlier server run.",
        schema: schema::<EmptyArgs>,
    },
    ToolSpec {
        name: "search_text",
        kind: ToolKind::Code,
        description: "Search file contents like ripgrep (literal text by default, `regex: true` for regular expressions), gitignore-aware. Use it to find where something is mentioned; the files in the results count as seen for explored_files.",
        schema: schema::<SearchTextArgs>,
    },
    ToolSpec {
        name: "search_files",
        kind: ToolKind::Code,
        description: "List files whose root-relative paths match globs (`*.rs`, `src/**/test_*.py`). Use it to find files by name.",
        schema: schema::<SearchFilesArgs>,
    },
    ToolSpec {
        name: "find_definitions",
        kind: ToolKind::Code,
        description: "Where a symbol (function, class, method, ...) is defined, from the tree-sitter symbol index. Use it before reading or changing a symbol.",
        schema: schema::<DefinitionsArgs>,
    },
    ToolSpec {
        name: "find_references",
        kind: ToolKind::Code,
        description: "Where a symbol is used, parsed from the files that mention it: calls, subclasses and implementations (inherit), imports, type uses, decorators and reads, each with how far its file says it is this symbol (resolution; `name` = only the name matches, listed last). Optionally one `kind`. Text search is the fallback. Use it to find callers before changing a signature.",
        schema: schema::<ReferencesArgs>,
    },
    ToolSpec {
        name: "get_symbols",
        kind: ToolKind::Code,
        description: "The outline of one source file: its classes, functions and methods with line ranges.",
        schema: schema::<FileArgs>,
    },
    ToolSpec {
        name: "analyze_structure",
        kind: ToolKind::Code,
        description: "Classes, functions, imports and nesting of a file or of every file under a directory, with definition counts.",
        schema: schema::<PathArgs>,
    },
    ToolSpec {
        name: "get_function_at_line",
        kind: ToolKind::Code,
        description: "The function or method (and its enclosing class) that contains a given line of a file.",
        schema: schema::<LineArgs>,
    },
    ToolSpec {
        name: "analyze_impact",
        kind: ToolKind::Code,
        description: "What a change to files or symbols may affect: definitions, subclasses and implementations, importers, callers, tests, configuration and docs, with a risk summary. Call it on everything you plan to change; the impact-analysis phase requires it.",
        schema: schema::<ImpactArgs>,
    },
    ToolSpec {
        name: "query",
        kind: ToolKind::Code,
        description: "Ask in plain words (\"where is parse_config defined\", \"who calls save\"); the question is routed to one of the other code tools and the answer says which.",
        schema: schema::<QueryArgs>,
    },
    ToolSpec {
        name: "semantic_search",
        kind: ToolKind::Code,
        description: "Search the repository by meaning: code and docs cut into chunks (functions, classes, sections), ranked by an embedding model and by their words (BM25), fused; identifiers in the query rank their definitions first. Each hit says which rankings found it (`found_by`), and whether its file changed since the index was synced (`freshness`). Use it when you can describe behaviour but do not know the names; fetch_chunk_detail gives a hit's full text.",
        schema: schema::<SemanticSearchArgs>,
    },
    ToolSpec {
        name: "fetch_chunk_detail",
        kind: ToolKind::Code,
        description: "The full text of a semantic_search hit, by its chunk id, with its file, line range and symbol.",
        schema: schema::<ChunkArgs>,
    },
    ToolSpec {
        name: "sync_index",
        kind: ToolKind::Code,
        description: "Bring the semantic index up to date in the background (only changed files are re-read and re-embedded) and report its progress; `rebuild: true` drops and rebuilds it. semantic_search already syncs a stale index by itself.",
        schema: schema::<SyncArgs>,
    },
    ToolSpec {
        name: "update_context",
        kind: ToolKind::Code,
        description: "Save summaries of the design documents and project rules you read in the document research, so later sessions get them with start_session's project context.",
        schema: schema::<UpdateContextArgs>,
    },
    ToolSpec {
        name: "check_write_target",
        kind: ToolKind::Control,
        description: "Before creating or editing a file in the implementation phase: whether the session allows writing it (only explored or added files, never the session's own files). The implementation phase requires it; clients without write hooks must call it before every write.",
        schema: schema::<WriteTargetArgs>,
    },
    ToolSpec {
        name: "add_explored_files",
        kind: ToolKind::Control,
        description: "Add files to the explored set during implementation, so they may be written: existing files must have appeared in a code-intel tool's output (or a read of yours) in this session; new files must lie inside the repository.",
        schema: schema::<AddExploredArgs>,
    },
    ToolSpec {
        name: "review_changes",
        kind: ToolKind::Control,
        description: "Every change of this session against its base (committed on the task branch, staged, unstaged and untracked, renames as one entry) with diffs, and which changed files were never explored. Call it in the commit review before deciding keep or discard for each file, and when verifying or reviewing.",
        schema: schema::<EmptyArgs>,
    },
    ToolSpec {
        name: "cleanup_stale_branches",
        kind: ToolKind::Control,
        description: "Outside a session only: delete every llm_task_* branch (unmerged work is listed) and every saved session of this repository. Use it when the user asks to clean up after abandoned sessions.",
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
