//! The type environment guards are checked against: what `state`, `flags`, `intent`,
//! `params`, `vars`, `counters`, `tasks` and `facts` hold in this contract.
//!
//! Each state adds `payload` (and, for engine states, `result`) on top of the base
//! environment built here.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::contract::model::{Counter, Flag};
use crate::contract::raw::{CounterScope, FlagType, ValueType};
use crate::contract::registry::Registry;
use crate::guard::check::TypeEnv;
use crate::guard::types::Ty;

/// The guard type of a param's or variable's declared type.
pub(super) fn value_ty(kind: ValueType) -> Ty {
    match kind {
        ValueType::Bool => Ty::Bool,
        ValueType::Int | ValueType::Number => Ty::Number,
        ValueType::String => Ty::string(),
        ValueType::StringList => Ty::list(Ty::string()),
    }
}

/// Everything a guard may read in any state of the contract.
pub(super) fn base_env(
    registry: &Registry,
    flags: &[Flag],
    intents: &[String],
    counters: &[Counter],
    vars: &BTreeMap<String, ValueType>,
    params: &BTreeMap<String, (ValueType, Value)>,
) -> TypeEnv {
    let flags_ty = Ty::object(flags.iter().map(|f| {
        let ty = match f.kind {
            FlagType::Bool => Ty::Bool,
            FlagType::Enum => Ty::Str(Some(f.values.clone())),
        };
        (f.name.clone(), ty)
    }));
    TypeEnv::default()
        // The current state's id: what a `finally` action reports the session ended in.
        .with("state", Ty::string())
        .with("flags", flags_ty)
        .with("intent", Ty::Str(Some(intents.to_vec())))
        .with(
            "counters",
            Ty::object(
                counters
                    .iter()
                    .filter(|c| c.scope == CounterScope::Session)
                    .map(|c| (c.name.clone(), Ty::Number)),
            ),
        )
        .with("tasks", Ty::list(task_ty(counters)))
        .with("facts", registry.facts_ty())
        // A variable is unset until a transition sets it.
        .with(
            "vars",
            Ty::object(
                vars.iter()
                    .map(|(n, t)| (n.clone(), value_ty(*t).optional())),
            ),
        )
        .with(
            "params",
            Ty::object(params.iter().map(|(n, (t, _))| (n.clone(), value_ty(*t)))),
        )
}

/// The type of one task in guards (`tasks[i]`): the fields every task has, whatever the
/// contract declares, plus one number per task-scoped counter.
pub(crate) fn task_ty(counters: &[Counter]) -> Ty {
    let mut fields: Vec<(String, Ty)> = vec![
        ("id".into(), Ty::string()),
        ("description".into(), Ty::string()),
        ("status".into(), Ty::enumeration(&["pending", "completed"])),
        (
            "checklist".into(),
            Ty::list(Ty::object([
                ("item".to_string(), Ty::string()),
                (
                    "status".to_string(),
                    Ty::enumeration(&["pending", "done", "skipped"]),
                ),
                ("evidence".to_string(), Ty::string().optional()),
                ("reason".to_string(), Ty::string().optional()),
            ])),
        ),
        ("revert_reason".into(), Ty::string().optional()),
    ];
    // Task-scoped counters live on each task, so guards read them as `tasks[i].NAME`.
    fields.extend(
        counters
            .iter()
            .filter(|c| c.scope == CounterScope::Task)
            .map(|c| (c.name.clone(), Ty::Number)),
    );
    Ty::object(fields)
}
