//! The phase matrix computed from the default contract equals the table of
//! code-intel-design-v1.16 (フェーズマトリクス), except for the deviations listed here.

use code_intel::analysis::compute;
use serde_json::Value;

use crate::support::default_contract;

/// The seed's table, verbatim: step, phase, then ✅/❌ for
/// 実装, -e, -v, --no-verify, --no-quality, --fast, --quick, --no-doc, -ni.
const SEED: &str = "\
| 1 | start_session | ✅ | ✅ | ❌ | ✅ | ✅ | ✅ | ✅ | ✅ | ✅ |
| 2 | BRANCH_INTERVENTION | ✅ | ✅ | ❌ | ✅ | ✅ | ✅ | ✅ | ✅ | ✅ |
| 3 | DOCUMENT_RESEARCH | ✅ | ✅ | ❌ | ✅ | ✅ | ✅ | ✅ | ❌ | ✅ |
| 4 | QUERY_FRAME | ✅ | ✅ | ❌ | ✅ | ✅ | ✅ | ✅ | ✅ | ✅ |
| 5 | EXPLORATION | ✅ | ✅ | ❌ | ✅ | ✅ | ❌ | ❌ | ✅ | ✅ |
| 6 | Q1 | ✅ | ✅ | ❌ | ✅ | ✅ | ❌ | ❌ | ✅ | ✅ |
| 7 | SEMANTIC | ✅ | ✅ | ❌ | ✅ | ✅ | ❌ | ❌ | ✅ | ✅ |
| 8 | Q2 | ✅ | ✅ | ❌ | ✅ | ✅ | ❌ | ❌ | ✅ | ✅ |
| 9 | VERIFICATION | ✅ | ✅ | ❌ | ✅ | ✅ | ❌ | ❌ | ✅ | ✅ |
| 10 | Q3 | ✅ | ✅ | ❌ | ✅ | ✅ | ❌ | ❌ | ✅ | ✅ |
| 11 | IMPACT_ANALYSIS | ✅ | ✅ | ❌ | ✅ | ✅ | ❌ | ❌ | ✅ | ✅ |
| 12 | READY (計画) | ✅ | ❌ | ❌ | ✅ | ✅ | ✅ | ✅ | ✅ | ✅ |
| 13 | READY (実装) | ✅ | ❌ | ❌ | ✅ | ✅ | ✅ | ✅ | ✅ | ✅ |
| 14 | READY (完了) | ✅ | ❌ | ❌ | ✅ | ✅ | ✅ | ✅ | ✅ | ✅ |
| 15 | POST_IMPL_VERIFY | ✅ | ❌ | ✅ | ❌ | ✅ | ✅ | ✅ | ✅ | ✅ |
| 16 | VERIFY_INTERVENTION | ✅ | ❌ | ❌ | ❌ | ✅ | ✅ | ❌ | ✅ | ❌ |
| 17 | PRE_COMMIT | ✅ | ❌ | ❌ | ✅ | ✅ | ✅ | ❌ | ✅ | ✅ |
| 18 | QUALITY_REVIEW | ✅ | ❌ | ❌ | ✅ | ❌ | ❌ | ❌ | ✅ | ✅ |
| 19 | MERGE | ✅ | ❌ | ❌ | ✅ | ✅ | ✅ | ❌ | ✅ | ✅ |";

const COLUMNS: [&str; 9] = [
    "implement",
    "only_explore",
    "only_verify",
    "no_verify",
    "no_quality",
    "fast",
    "quick",
    "no_doc",
    "no_intervention",
];

/// Intentional deviations: (step, column, what we compute, why).
const DEVIATIONS: &[(u32, &str, bool, &str)] = &[(
    1,
    "only_verify",
    true,
    "a session must exist for the server to check a verification; the seed's -v ran verification in the skill without the server",
)];

#[test]
fn computed_matrix_equals_the_seed_table() {
    let contract = default_contract();
    let matrix = compute(&contract).unwrap();
    assert_eq!(matrix.columns, COLUMNS);
    let mut mismatches = Vec::new();
    let seed_rows: Vec<Vec<&str>> = SEED
        .lines()
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect();
    assert_eq!(matrix.rows.len(), seed_rows.len(), "one row per step 1-19");
    for (row, seed) in matrix.rows.iter().zip(&seed_rows) {
        assert_eq!(row.step.to_string(), seed[0]);
        assert_eq!(row.phase, seed[1], "step {}", row.step);
        for (i, column) in COLUMNS.iter().enumerate() {
            let expected = seed[2 + i] == "✅";
            let computed = row.runs[*column] == Value::Bool(true);
            let deviation = DEVIATIONS
                .iter()
                .find(|(s, c, _, _)| *s == row.step && c == column);
            match deviation {
                Some((_, _, value, _)) => assert_eq!(
                    computed, *value,
                    "deviation at step {} {column} changed",
                    row.step
                ),
                None if computed != expected => mismatches.push(format!(
                    "step {} {column}: seed {expected}, computed {computed}",
                    row.step
                )),
                None => {}
            }
        }
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}

#[test]
fn json_form_has_exactly_the_documented_keys() {
    let contract = default_contract();
    let json = serde_json::to_value(compute(&contract).unwrap()).unwrap();
    let row = &json["rows"][4];
    assert_eq!(row["step"], 5);
    assert_eq!(row["phase"], "EXPLORATION");
    let keys: Vec<&String> = row["runs"].as_object().unwrap().keys().collect();
    assert_eq!(keys, COLUMNS);
}
