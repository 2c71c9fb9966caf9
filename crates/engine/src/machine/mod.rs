//! The pure interpreter of contracts: instances, events, the step function, built-in task
//! actions, tool gating and response rendering. Nothing here does IO. (Flags are parsed by
//! `contract::flags`.)
//!
//! The interpreter. `Instance` is everything a session knows (state name, flags, intent,
//! locale, params, counters, tasks, vars, summaries). `step(&Contract, &Instance, &Event)`
//! returns `Accepted { instance, effects, message, .. }` or `Rejection { message,
//! response }`. An `Effect` names a host action, its evaluated arguments, the name its
//! result binds to, and for each failure outcome the contract maps a `MessageRequest`
//! (message key and the contract's values, evaluated during the step). `run_effects` gives
//! an engine state's `run` actions the same way. `tasks` implements the built-in task
//! actions; `tools` is tool gating (`gate`) and tool evidence (`check_evidence`), pure
//! functions the host only enforces; `response` renders messages, phase responses and the
//! contract's footer (`footer`, which the host sends when it chooses, never part of an
//! instruction). The
//! order of a step is documented in `docs/contract-format.md` §15.

pub(crate) mod instance;
pub mod response;
pub(crate) mod step;
pub(crate) mod tasks;
pub mod tools;

// The surface: what the binaries, benches and integration tests use from this module.
pub use response::footer;
pub use response::phase_response;
pub use tools::ToolGate;
pub use tools::gate;

pub use instance::{Instance, StartError, Summary};
pub use step::{
    Accepted, Effect, Event, Input, MessageRequest, Rejection, RetryPolicy, finally_effects,
    merge_message_args, run_effects, settle, step, unknown_state,
};
