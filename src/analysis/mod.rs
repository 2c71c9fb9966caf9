//! Whole-flow analysis: the transition graph, reachability under a flag set (abstract
//! interpretation of guards), the phase × flag matrix, diagrams, and the effective
//! contract under a flag set (`code-intel show`).

pub(crate) mod diagram;
pub mod effective;
pub mod graph;
pub mod matrix;
pub mod reach;
