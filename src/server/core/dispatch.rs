//! A tool call's way through the server: the declaration of its name (`server::tools`)
//! gives its field limits and its handler, and the handler's kind how it runs. Session
//! tools run holding the session; control and code tools are first asked of the engine's
//! tool gate, and once they succeed they count as called in the phase and the paths their
//! answer showed as seen (saved before they count).

use std::collections::BTreeSet;
use std::sync::MutexGuard;

use serde_json::{Map, Value, json};

use super::{Server, State, active_record, add_seen, step_of, unsaved};
use crate::machine::response::phase_response;
use crate::machine::tools::{ToolGate, gate};
use crate::server::args::bounded;
use crate::server::code_tools::{CodeHandler, ToolError, paths_in};
use crate::server::log::now;
use crate::server::reply::Reply;
use crate::server::tools::{self, Handler, SessionHandler};
use crate::server::words::Words;

impl Server {
    /// Answers one tool call; [`Server::call`] puts the reply's texts in the session's
    /// locale.
    pub(super) fn answer(&self, tool: &str, args: Map<String, Value>) -> Reply {
        let Some(spec) = tools::find(tool) else {
            return Reply::error("unknown_tool", format!("there is no tool `{tool}`"))
                .args(&[("tool", json!(tool))]);
        };
        if let Err(refusal) = bounded(tool, spec.limits, &args) {
            return refusal;
        }
        let mut state = self.lock_state();
        match spec.handler {
            Handler::Session(run) => run(self, &mut state, args),
            Handler::Control(run) => match self.gate(&state, tool) {
                Ok(()) => self.control_tool(&mut state, tool, run, args),
                Err(refusal) => refusal,
            },
            Handler::Code(run) => match self.gate(&state, tool) {
                Ok(()) => self.code_tool(state, tool, run, args),
                Err(refusal) => refusal,
            },
        }
    }

    /// A control tool changes the record in place; if the change cannot be saved, the
    /// record before the call is put back.
    fn control_tool(
        &self,
        state: &mut State,
        tool: &str,
        run: SessionHandler,
        args: Map<String, Value>,
    ) -> Reply {
        let before = active_record(state).cloned();
        let reply = run(self, state, args);
        if reply.is_error {
            return reply;
        }
        if let Err(refusal) = self.note_success(state, tool, &reply.body) {
            if let (Some(before), Some(active)) = (before, state.active.as_mut()) {
                active.record = before;
            }
            return refusal;
        }
        reply
    }

    /// A code tool reads the repository only: it runs without holding the session, so
    /// parallel calls do not queue behind each other.
    fn code_tool(
        &self,
        state: MutexGuard<'_, State>,
        tool: &str,
        run: CodeHandler,
        args: Map<String, Value>,
    ) -> Reply {
        let gated_in = step_of(&state);
        drop(state);
        let reply = self.run_code(tool, run, args);
        let mut state = self.lock_state();
        if reply.is_error || step_of(&state) != gated_in {
            // When the session moved on meanwhile, the call was allowed, and is evidence,
            // for the step it was gated in, not for this one.
            return reply;
        }
        match self.note_success(&mut state, tool, &reply.body) {
            Ok(()) => reply,
            Err(refusal) => refusal,
        }
    }

    /// Refuses a tool the current phase does not allow (no refusal outside a session).
    fn gate(&self, state: &State, tool: &str) -> Result<(), Reply> {
        let Some(active) = state.active.as_ref().filter(|a| !a.record.finished()) else {
            return Ok(());
        };
        let instance = &active.record.instance;
        let refused = match gate(&self.contract, instance, tool) {
            ToolGate::Allowed => return Ok(()),
            ToolGate::Unknown => {
                return Err(Reply::error(
                    "unknown_tool",
                    format!("`{tool}` is not a tool of this server"),
                )
                .args(&[("tool", json!(tool))]));
            }
            ToolGate::UnknownState { state } => self.render(
                "tool_errors.gate.not_allowed",
                &[
                    ("tool", json!(tool)),
                    ("phase", json!(state)),
                    ("allowed", json!([])),
                ],
                instance,
            ),
            ToolGate::NotAllowedHere { phase, allowed, .. } => self.render(
                "tool_errors.gate.not_allowed",
                &[
                    ("tool", json!(tool)),
                    ("phase", json!(phase)),
                    ("allowed", json!(allowed)),
                ],
                instance,
            ),
        };
        let phase = phase_response(&self.contract, instance);
        Err(Reply::refused(&refused)
            .with(
                "hint",
                self.render("hints.phase_blocked_hint", &[], instance).text,
            )
            .with_phase(&phase, active.record.compaction_count))
    }

    /// After a gated tool succeeded: it counts as called in this phase, and the paths
    /// its answer showed count as seen. Saved before it counts: the change is made to a
    /// copy of the record, and the copy replaces the record only once it is on disk. When
    /// it cannot be saved, the call is refused (`checkpoint.*`) and nothing changed, so
    /// what the server enforces is always what the write hook reads.
    fn note_success(&self, state: &mut State, tool: &str, body: &Value) -> Result<(), Reply> {
        let Some(active) = state.active.as_mut().filter(|a| !a.record.finished()) else {
            return Ok(());
        };
        let mut next = active.record.clone();
        next.note_tool_call(tool);
        let mut seen = BTreeSet::new();
        paths_in(body, &mut seen);
        if tool == "search_files"
            && let Some(items) = body.get("items").and_then(Value::as_array)
        {
            seen.extend(items.iter().filter_map(Value::as_str).map(str::to_string));
        }
        add_seen(&mut next.host, seen);
        next.updated_at = now();
        active.record = self.checkpoints.save_owned(next).map_err(|e| {
            tracing::error!("checkpoint after {tool} failed: {e}");
            unsaved(tool, &e)
        })?;
        Ok(())
    }

    fn run_code(&self, tool: &str, run: CodeHandler, args: Map<String, Value>) -> Reply {
        // The answer's notes in the session's locale, as the server's other texts.
        let locale = self.locale();
        match self
            .code
            .run(run, args, Words::new(&self.contract, &locale))
        {
            Ok(body) => Reply::ok(body),
            Err(ToolError::Arguments(message)) => {
                Reply::error("invalid_arguments", message.clone())
                    .args(&[("details", json!(message))])
            }
            // The code tools' failures are many and technical: one message words them
            // around the error's own details.
            Err(ToolError::Tool(e)) => Reply::say(e.key(), "code_tools.failed", e.to_string())
                .args(&[("tool", json!(tool))]),
            Err(ToolError::Semantic(e)) => Reply::say(e.key(), "code_tools.failed", e.to_string())
                .args(&[("tool", json!(tool))]),
        }
    }
}
