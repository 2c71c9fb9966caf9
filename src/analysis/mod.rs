//! Whole-flow analysis: the transition graph, reachability under a flag set (abstract
//! interpretation of guards), the phase × flag matrix and diagrams.

pub(crate) mod diagram;
pub mod graph;
pub mod matrix;
pub mod reach;
