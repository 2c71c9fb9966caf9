//! Shared helpers: loading contracts and paths of the repository.

use std::path::PathBuf;

use code_intel::contract::Contract;
use code_intel::diagnostic::render;
use code_intel::source::Sources;

/// The repository root (where Cargo.toml is).
pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Loads a contract from a repository-relative path and fails the test with the rendered
/// diagnostics when it has errors.
pub(crate) fn load(path: &str) -> Contract {
    let text = std::fs::read_to_string(repo().join(path)).unwrap();
    let mut sources = Sources::default();
    let id = sources.add(path, text);
    let loaded = code_intel::lint::load_and_lint(&mut sources, id, &code_intel::hosts::all());
    let diagnostics = loaded.diagnostics.clone();
    match loaded.ok() {
        Ok(c) => c,
        Err(_) => panic!(
            "{path} does not load:\n{}",
            render::human(&sources, &diagnostics)
        ),
    }
}

/// The built-in default contract.
pub(crate) fn default_contract() -> Contract {
    load("contracts/phase_contract.yml")
}

/// The path of the built `code-intel` binary.
pub(crate) fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_code-intel"))
}

use code_intel::contract::flags;
use code_intel::machine::{Event, Input, Instance, Rejection, Transition, settle, step};
use serde_json::{Map, Value};

/// A session driven by a test: the host's part played with fixed facts and effects that
/// always succeed.
pub(crate) struct Driver {
    pub contract: Contract,
    pub instance: Instance,
    pub facts: Map<String, Value>,
    /// Every effect the accepted steps emitted, by action name.
    pub effects: Vec<String>,
}

impl Driver {
    pub(crate) fn start(contract: Contract, flag_text: &str, intent: &str, facts: Value) -> Driver {
        let set = flags::parse(&contract, flag_text).unwrap();
        let instance = Instance::start(&contract, set, Some(intent), None, &Map::new()).unwrap();
        let facts = facts.as_object().cloned().unwrap_or_default();
        let instance = settle(&contract, &instance, &facts).unwrap();
        Driver {
            contract,
            instance,
            facts,
            effects: Vec::new(),
        }
    }

    pub(crate) fn state(&self) -> &str {
        &self.instance.state
    }

    /// Submits a payload; on success the new instance is committed.
    pub(crate) fn submit(
        &mut self,
        payload: Value,
        tools: &[&str],
    ) -> Result<Transition, Rejection> {
        let event = Event {
            input: Input::Submit {
                payload,
                tools_called: tools.iter().map(|t| (*t).to_string()).collect(),
            },
            facts: self.facts.clone(),
        };
        let t = step(&self.contract, &self.instance, &event)?;
        self.effects
            .extend(t.effects.iter().map(|e| e.action.clone()));
        self.instance = settle(&self.contract, &t.instance, &self.facts).unwrap();
        Ok(t)
    }

    /// Submits and requires acceptance into `expected`.
    pub(crate) fn ok(&mut self, payload: Value, tools: &[&str], expected: &str) -> Transition {
        let from = self.state().to_string();
        match self.submit(payload, tools) {
            Ok(t) => {
                assert_eq!(t.to, expected, "from {from}");
                t
            }
            Err(r) => panic!(
                "{from}: rejected with {}: {}",
                r.message.key, r.message.text
            ),
        }
    }

    /// Submits and requires a rejection with `key`; checks the state did not move.
    pub(crate) fn rejected(&mut self, payload: Value, tools: &[&str], key: &str) -> Rejection {
        let before = self.instance.clone();
        match self.submit(payload, tools) {
            Ok(t) => panic!(
                "{}: accepted into {}, expected rejection {key}",
                before.state, t.to
            ),
            Err(r) => {
                assert_eq!(r.message.key, key, "{}: {}", before.state, r.message.text);
                assert_eq!(self.instance, before, "a rejection changed the instance");
                r
            }
        }
    }
}
