//! The code-intel registry and the server agree both ways: every tool the registry
//! declares is served and every served tool is declared; every host action the registry declares is performed
//! and every performed action is declared; every fact is observed.

use std::collections::BTreeSet;

use code_intel::contract::BuiltinAction;
use code_intel::server::ACTIONS;
use code_intel::server::TOOLS;
use code_intel::server::registry;

#[test]
fn every_declared_tool_is_served_and_every_served_tool_is_declared() {
    let registry = registry();
    let declared: BTreeSet<&str> = registry.tools.iter().copied().collect();
    let served: BTreeSet<&str> = TOOLS.iter().map(|t| t.name).collect();
    let missing: Vec<_> = declared.difference(&served).collect();
    assert!(missing.is_empty(), "declared but not served: {missing:?}");
    let undeclared: Vec<_> = served.difference(&declared).collect();
    assert!(
        undeclared.is_empty(),
        "served but not declared: {undeclared:?}"
    );
    for t in &registry.ungated_tools {
        assert!(served.contains(t), "ungated tool {t} is not served");
    }
}

#[test]
fn every_declared_action_is_performed_and_every_performed_action_is_declared() {
    let registry = registry();
    let builtin: BTreeSet<&str> = BuiltinAction::ALL.iter().map(|a| a.name()).collect();
    let declared: BTreeSet<&str> = registry
        .actions
        .iter()
        .map(|a| a.name)
        .filter(|n| !builtin.contains(n))
        .collect();
    let performed: BTreeSet<&str> = ACTIONS.iter().map(|(name, _)| *name).collect();
    assert_eq!(declared, performed);
}

#[test]
fn every_tool_has_an_object_input_schema_and_a_description_that_says_when() {
    for tool in TOOLS {
        let schema = (tool.schema)();
        assert_eq!(schema["type"], "object", "{}: {schema}", tool.name);
        assert!(
            tool.description.len() > 40,
            "{}: describe when to call it",
            tool.name
        );
    }
}

#[test]
fn every_declared_fact_is_observed_and_nothing_else() {
    use code_intel::session::Host as _;
    let dir = crate::support::TempDir::create(&format!("code-intel-facts-{}", std::process::id()));
    let root = code_intel::codeintel::Root::open(&dir).unwrap();
    let key = code_intel::server::SealKey::from_bytes([1; 32]);
    let mut host = code_intel::server::CodeIntelHost {
        root: &root,
        key: &key,
        session_id: "0123456789abcdef0123456789abcdef",
        state: Default::default(),
    };
    let observed: BTreeSet<String> = host.facts().keys().cloned().collect();
    let declared: BTreeSet<String> = registry()
        .facts
        .iter()
        .map(|(n, _)| (*n).to_string())
        .collect();
    assert_eq!(observed, declared);
    let _ = std::fs::remove_dir_all(&dir);
}
