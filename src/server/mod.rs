//! The code-intel host: the MCP server that runs the default contract for coding agents.
//!
//! [`registry`] is what it implements, [`tools`] declares each tool (and where its calls
//! go), [`core::Server`] decides every tool call, [`service`] speaks MCP over stdio,
//! [`host`] performs the contract's actions, [`checkpoint`] and [`session_lock`] keep
//! sessions durable and single, the top-level [`crate::git`] runs the task branches.
//! [`write_rule`] is the one rule of which writes a session allows and [`reads`] the
//! record of the files a client read itself: the server decides with them, and the
//! clients' hook ([`crate::client::hook`], which may use this module; never the reverse)
//! answers with them.
//!
//! ## The parts
//!
//! The hosts' own code. `server::registry` is the code-intel MCP server's registry (its
//! tools, the git, exploration and evidence actions of the default contract, the facts it
//! observes, the messages it renders itself), `runner::registry` is AgentRunner's (planner,
//! worker and note actions). `hosts::all()` lists both for `lint`, `graph` and `matrix`,
//! which check contracts of any host; a running host passes only its own registry to
//! `contract::load`.
//!
//! The MCP server (`code-intel serve`) is layered so that MCP is only the edge:
//!
//! - `service`: the rmcp `ServerHandler` over stdio. It lists `tools::TOOLS` and runs each
//!   call on a blocking thread through `core::Server::call`; it sends MCP progress
//!   notifications while the first index build runs. stdout is the transport; logs go to
//!   stderr through `tracing`. `service::stdio` reads the lines in front of rmcp (whose own
//!   transport drops an unparsable line without a word): a line that is not JSON, or nests
//!   deeper than serde reads, is answered `-32700` (id `null`, or the top-level id when one
//!   can be read), JSON that is not a message `-32600`, and a line over 4 MiB is skipped
//!   without being held and answered `-32600` with the id picked out while skipping it.
//! - `tools`: one declaration per tool (name, description, input schema generated from the
//!   argument types, field limits, gating, handler); the tool list, the registry's tools and
//!   the dispatch (`core::dispatch`) follow from it.
//!   `docs/hosts.md` is generated from the registries. A test checks the registry and the
//!   server both ways (tools, actions, facts).
//! - `semantic_tools`: the semantic tools over `semantic`, with the model loaded once and a
//!   background sync (at start, when the index is stale, on `sync_index`; a rebuild asked
//!   for during a sync is queued behind it) whose progress is the `sync` field of every
//!   answer; `facts.semantic_available` is true. `start_session` with `--rebuild` rebuilds
//!   the symbol index (`IndexCache::rebuild`) and starts a semantic rebuild. `update_context`
//!   keeps summaries in `.code-intel/context_summaries.json` (never rewriting the user's
//!   `context.yml`), and `start_session` returns them with the project context.
//! - `core`: the decisions (`core/dispatch.rs` finds a call's declaration and gates it,
//!   `core/start.rs` starts and resumes sessions, `core/turn.rs` runs a submission's driver
//!   turn, `core/sessions.rs` has the other session tools, `core/control.rs` the control
//!   tools). It holds the active session (`session_record::SessionRecord`) and its
//!   `session_lock::SessionLock`, gates every gated tool through `machine::tools::gate` (a
//!   refusal is the contract's `tool_errors.gate.not_allowed`), records each successful tool
//!   call for the phase (`tools_called` for the engine) and the paths its answer showed
//!   (`seen_paths`), strips `compaction_count` from payloads (the server keeps the count and
//!   sends `phase_summaries` on a mismatch), and runs `session::Driver` for `start_session`,
//!   `submit_phase` and resume. Every change is checkpointed before it counts: it is made
//!   to a copy of the record, which replaces the record once written (as written: reduced,
//!   when it had to be); a call whose checkpoint cannot be written is refused with the
//!   checkpoint's error key and changes nothing, so the server never enforces more or less
//!   than the write hook reads. Every text of a reply is a contract message in the session's
//!   locale: a refusal the server makes itself (`reply::Reply::error`, `Reply::say`) names
//!   its message and placeholder values, and `Server::call` renders it (`Reply::localize`)
//!   in the active or last session's locale, else the configured one; the registry declares
//!   each such message (a unit test checks the registry and the server's code both ways).
//!   The contract's footer (the compaction protocol) is sent once per session: in the first
//!   response, in `get_session_status` and resume, and when a compaction is detected.
//!   Arguments are measured before any work (`args::bounded`:
//!   256 KiB a call, 16 KiB a string, 1000 items a list, 4 KiB a question or pattern, 16 KiB
//!   all the patterns of a search).
//! - `agreement`: what a session that ended in success teaches the Map: the files its
//!   checklist evidence cites and it explored, the definitions holding the cited lines and
//!   those of its files that its summaries and tasks name (bounded). `core` records it when
//!   the session finishes in success (and `record_outcome(success)` adds the symbols it
//!   names).
//! - `host`: `session::Host` for the default contract, one dispatch table `host::ACTIONS`:
//!   `exploration.record` (explored files must have been seen, or not exist yet, and never be in `.git/` or `.code-intel/`),
//!   `changes.require_explored` (the real diff against the baseline decides), the git task
//!   branch actions (`git`), and `checklist.verify_evidence` (`evidence`). Facts are read
//!   from the repository before each step.
//! - `evidence`: `path:line` evidence of `done` checklist items: confined to the root, in
//!   range, on changed lines, and not an empty implementation (tree-sitter for every
//!   indexed language, a textual rule otherwise).
//! - `paths`: the one judgement of client paths (confinement to the root, reserved
//!   `.git/` and `.code-intel/`, and the clients' hook settings and personal memory, so an
//!   agent cannot switch off the hooks that refuse its writes) that the hook, `check_write_target`, `add_explored_files`
//!   and `exploration.record` share.
//! - `checkpoint`: one sealed file per session under `.code-intel/sessions/` (HMAC-SHA256
//!   over the repository path and the record, with a key in the user's state directory,
//!   `$CODE_INTEL_STATE_DIR` or `$XDG_STATE_HOME/code-intel`), atomic writes, a 256 KiB cap
//!   with a defined reduction, `current.json` naming the session in progress. The cap is
//!   kept where input arrives, by budgets taken from it: the request 1/8 (kept twice),
//!   seen paths 1/4 (when a call's paths do not fit, earlier unexplored ones are forgotten
//!   first), explored files 1/8 (`add_explored_files` refuses beyond it). At start the
//!   server removes temp files of checkpoint writes whose process is gone.
//! - `session_lock`: one active session per repository: an OS file lock held by the serving
//!   process (released when it dies, so no lock goes stale) and `holder.json` naming it.
//! - `code_tools` cuts every code tool answer to `codeintel::budget::ANSWER_BUDGET` and
//!   gives the freshness note that explains the server's freshness model once per process
//!   and root (notes about one answer, such as a build under way, every time); its `query`
//!   runs `semantic_search` for plain-language questions. Its notes (`note`, `index_status`,
//!   `budget`, impact's `more`, `freshness.note`, and `semantic_tools`' `vector.note`) are
//!   contract messages (`code_tools.*`, `semantic.note.*`, declared in the registry) worded
//!   by `registry::Words`: `Server` passes its contract and `Server::locale`; without a
//!   server (`CodeTools::call`) the built-in contract's English. `codeintel` keeps its
//!   English notes for the CLI (`codeintel::index::FRESHNESS_NOTE` and the others, `wire`'s
//!   `IMPACT_MORE`), which the server recognises and rewords. `semantic_search` adds
//!   `ranking` (`hybrid` or `lexical`) to every answer and says that no model is configured
//!   once per server.
//! - `index_cache`, `watch` and `code_tools`: the symbol index loaded once and shared
//!   (`Arc<Index>`, one refreshing writer), built in the background; until ready, symbol
//!   tools answer from text search or a file tagged on the spot, and say so. `watch` reads
//!   inotify events without blocking when a tool asks (the kernel queues them inside the
//!   write, so a file saved before a call is seen by it): nothing changed, no file is
//!   touched; modified files are re-tagged; created or removed ones trigger a walk. Without
//!   file events (not Linux, the watch limit, `CODE_INTEL_WATCH=0` for network mounts) every
//!   indexed file is checked by its stamp before each answer and new files are found by a
//!   walk at most every 2 s and before an answer of "nothing found".
//! - `log`: decision and outcome logs, JSON lines under `.code-intel/logs/`.
//! - `worktree`: the check of the working tree at every `submit_phase`, before the driver
//!   runs the step, whatever wrote to the tree (`docs/enforcement.md`). `judge` is the
//!   pure rule, `check` reads the tree through `git::Repo::tree_changes` (path by path, no
//!   rename detection, `.code-intel/` left out).

pub(crate) mod agreement;
pub(crate) mod args;
pub(crate) mod checkpoint;
pub(crate) mod code_tools;
pub(crate) mod core;
pub(crate) mod evidence;
pub(crate) mod host;
pub(crate) mod index_cache;
pub(crate) mod log;
pub(crate) mod paths;
pub(crate) mod reads;
pub(crate) mod registry;
pub(crate) mod reply;
pub(crate) mod semantic_tools;
pub(crate) mod service;
pub(crate) mod session_lock;
pub(crate) mod session_record;
pub(crate) mod tools;
pub(crate) mod turn_recorder;
pub(crate) mod watch;
pub(crate) mod words;
pub(crate) mod worktree;
pub(crate) mod write_rule;

// The surface: what the binaries, benches and integration tests use from this module.
pub use checkpoint::Checkpoints;
pub use checkpoint::EXPLORED_BUDGET;
pub use checkpoint::MAX_CHECKPOINT_BYTES;
pub use checkpoint::SealKey;
pub use code_tools::CodeTools;
pub use code_tools::ToolError;
pub use code_tools::paths_in;
pub use core::Server;
pub use evidence::ChangedLines;
pub use evidence::EvidenceFailure;
pub use evidence::verify_checklist;
pub use host::ACTIONS;
pub use host::CodeIntelHost;
pub use index_cache::ChangeSource;
pub use index_cache::IndexCache;
pub use index_cache::Lookup;
pub use registry::english;
pub use registry::registry;
pub use reply::Reply;
pub use semantic_tools::SemanticSearchArgs;
pub use semantic_tools::SemanticTools;
pub use tools::TOOLS;
pub use tools::call_code;
pub use words::Words;
