//! The phase × flag-set matrix computed from the contract: one row per step, one column per
//! flag set declared under `matrix.columns`, a cell true when the step can run.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

use super::reach::reachable;
use crate::contract::Contract;
use crate::contract::flags::{self, FlagError};
use crate::contract::model::StateId;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Matrix {
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Row {
    pub step: u32,
    pub phase: String,
    pub runs: Map<String, Value>,
}

/// A matrix column whose flags do not parse (lint reports it as `invalid-flag-reference`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatrixError {
    pub column: String,
    pub error: FlagError,
}

impl fmt::Display for MatrixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "matrix column `{}`: {}", self.column, self.error)
    }
}

impl std::error::Error for MatrixError {}

/// Computes the matrix. Fails when a column's flags do not parse.
pub fn compute(contract: &Contract) -> Result<Matrix, MatrixError> {
    let mut reach_per_column = Vec::new();
    for column in &contract.matrix_columns {
        let set = flags::parse(contract, &column.flags).map_err(|error| MatrixError {
            column: column.key.clone(),
            error,
        })?;
        let intent = column
            .intent
            .clone()
            .unwrap_or_else(|| contract.default_intent.clone());
        reach_per_column.push(reachable(contract, &set, &intent));
    }
    // The states of each step, in flow order (which sorts by step first).
    let mut by_step: BTreeMap<u32, Vec<StateId>> = BTreeMap::new();
    for id in contract.states_in_flow_order() {
        if let Some(step) = contract.state(id).step {
            by_step.entry(step).or_default().push(id);
        }
    }
    let rows = by_step
        .into_iter()
        .map(|(step, ids)| {
            let phase = ids
                .first()
                .map(|id| contract.state(*id).label.clone())
                .unwrap_or_default();
            let runs = contract
                .matrix_columns
                .iter()
                .zip(&reach_per_column)
                .map(|(c, reach)| {
                    (
                        c.key.clone(),
                        Value::Bool(ids.iter().any(|id| reach.contains(id))),
                    )
                })
                .collect();
            Row { step, phase, runs }
        })
        .collect();
    Ok(Matrix {
        columns: contract
            .matrix_columns
            .iter()
            .map(|c| c.key.clone())
            .collect(),
        rows,
    })
}

/// The matrix as a markdown table in the seed's style (✅ runs, ❌ does not).
pub fn to_markdown(contract: &Contract, matrix: &Matrix) -> String {
    let mut out = String::from("| Step | Phase |");
    for c in &contract.matrix_columns {
        out.push_str(&format!(" {} |", c.label));
    }
    out.push_str("\n|------|-------|");
    for _ in &contract.matrix_columns {
        out.push_str(":-:|");
    }
    out.push('\n');
    for row in &matrix.rows {
        out.push_str(&format!("| {} | {} |", row.step, row.phase));
        for key in &matrix.columns {
            let mark = if row.runs.get(key) == Some(&Value::Bool(true)) {
                "✅"
            } else {
                "❌"
            };
            out.push_str(&format!(" {mark} |"));
        }
        out.push('\n');
    }
    out
}
