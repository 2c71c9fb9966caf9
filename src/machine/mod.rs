//! The pure interpreter of contracts: instances, events, the step function, built-in task
//! actions, flag parsing and response rendering. Nothing here does IO.

pub mod instance;
pub mod response;
pub mod step;
pub mod tasks;

pub use instance::Instance;
pub use step::{Effect, Event, Input, Rejection, Transition, settle, step};
