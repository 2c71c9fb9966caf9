//! The pure interpreter of contracts: instances, events, the step function, built-in task
//! actions, flag parsing and response rendering. Nothing here does IO.

pub mod instance;
pub mod response;
pub mod step;
pub mod tasks;
pub mod tools;

pub use instance::{Instance, StartError};
pub use step::{
    Accepted, Effect, Event, Input, MessageRequest, Rejection, RetryPolicy, finally_effects,
    merge_message_args, run_effects, settle, step, unknown_state,
};
