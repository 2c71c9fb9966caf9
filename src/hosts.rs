//! The table of hosts this program knows, for tools that check contracts of any host
//! (`lint`, diagrams, the matrix). A running host passes only its own registry.

use crate::contract::Registry;

/// The registries of every host, in a stable order.
pub fn all() -> Vec<Registry> {
    vec![
        crate::server::registry::registry(),
        crate::runner::registry::registry(),
    ]
}
