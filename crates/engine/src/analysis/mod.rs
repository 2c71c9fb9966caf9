//! Whole-flow analysis: the transition graph, reachability under a flag set (abstract
//! interpretation of guards), the phase × flag matrix, diagrams, and the effective
//! contract under a flag set (`code-intel show`).
//!
//! Explaining a flow. `graph` builds the transition graph including counter-limit
//! redirects, and strongly connected components (used by `unbounded-cycle`). `reach`
//! computes which states can run under a flag set and intent, by abstract interpretation
//! of the guards: flags, intent and params are known, everything else is unknown; unknown
//! boolean leaves of one state's guards are shared variables, so that "first match wins"
//! is respected. `matrix` turns that into the phase × flag table; `diagram` draws mermaid
//! or graphviz.

pub mod diagram;
pub mod effective;
pub(crate) mod graph;
pub mod matrix;
pub(crate) mod reach;

// The surface: what the binaries, benches and integration tests use from this module.
pub use matrix::compute;
pub use reach::reachable;
