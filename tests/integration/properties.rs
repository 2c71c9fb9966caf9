//! Property tests over the default contract's transition table, and robustness of the
//! guard language.
//!
//! For random flag sets, intents, host facts and random valid payload sequences (with
//! invalid submissions mixed in), the engine never reaches an undefined state, every run
//! ends in a terminal state within a bound derived from the counter limits, a phase the
//! flags skip is never visited, and a rejected submission never changes the state.

use code_intel::analysis::reachable;
use code_intel::contract::Contract;
use code_intel::contract::flags;
use code_intel::contract::{CounterScope, LimitValue, StateKind};
use code_intel::guard::parse;
use code_intel::guard::{Context, eval};
use code_intel::machine::{Event, Input, Instance, settle, step};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::support::default_contract;

/// A small deterministic generator, seeded by proptest.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn coin(&mut self) -> bool {
        self.below(2) == 0
    }
}

const MAX_TASKS: u64 = 3;

/// The most accepted steps a session can take: every state once per combination of
/// session-counter values, times the tasks a plan can hold.
fn step_bound(contract: &Contract) -> u64 {
    let combinations: u64 = contract
        .counters
        .iter()
        .filter(|c| c.scope == CounterScope::Session)
        .map(|c| match c.limit {
            LimitValue::Fixed(n) => u64::from(n) + 1,
            LimitValue::Param(_) => 11,
        })
        .product();
    contract.states.len() as u64 * combinations * (MAX_TASKS + 1)
}

/// A valid payload for the current state of the default flow, with random decisions, and
/// the tools the host saw called.
fn valid_payload(
    instance: &Instance,
    rng: &mut Rng,
    plan_round: &mut u32,
) -> (Value, Vec<&'static str>) {
    let s = json!("summary");
    match instance.state.as_str() {
        "BRANCH_INTERVENTION" => {
            let choice = ["delete", "merge", "continue"][rng.below(3) as usize];
            (
                json!({"choice": choice, "tools_used": [], "summary": s}),
                vec![],
            )
        }
        "DOCUMENT_RESEARCH" => (
            json!({"documents_reviewed": ["docs/a.md"], "tools_used": [], "summary": s}),
            vec![],
        ),
        "QUERY_FRAME" => (
            json!({"desired_action": {"value": "fix", "quote": "please fix"}, "tools_used": [], "summary": s}),
            vec![],
        ),
        "EXPLORATION" => (
            json!({"explored_files": ["a.rs"], "findings": ["f"], "tools_used": ["search_text", "get_symbols"], "summary": s}),
            vec!["search_text", "get_symbols"],
        ),
        "Q1" => (
            json!({"needs_more_information": rng.coin(), "reason": "a reason that is long", "tools_used": [], "summary": s}),
            vec![],
        ),
        "Q2" => (
            json!({"has_unverified_hypotheses": rng.coin(), "reason": "a reason that is long", "tools_used": [], "summary": s}),
            vec![],
        ),
        "Q3" => (
            json!({"needs_impact_analysis": rng.coin(), "reason": "a reason that is long", "tools_used": [], "summary": s}),
            vec![],
        ),
        "SEMANTIC" => (
            json!({"search_query": "q", "search_results": ["r"], "tools_used": ["semantic_search"], "summary": s}),
            vec!["semantic_search"],
        ),
        "VERIFICATION" => (
            json!({"hypotheses_verified": [{"hypothesis": "h", "result": true, "evidence": "a.rs:1"}], "tools_used": [], "summary": s}),
            vec![],
        ),
        "IMPACT_ANALYSIS" => (
            json!({"impact_summary": {"files": 1}, "tools_used": ["analyze_impact"], "summary": s}),
            vec!["analyze_impact"],
        ),
        "READY_PLAN" => {
            *plan_round += 1;
            let n = 1 + rng.below(MAX_TASKS);
            let tasks: Vec<Value> = (0..n)
                .map(|i| json!({"id": format!("r{plan_round}t{i}"), "description": "d", "status": "pending", "checklist": [{"item": "x"}]}))
                .collect();
            (
                json!({"tasks": tasks, "tools_used": [], "summary": s}),
                vec![],
            )
        }
        "READY_IMPL" => {
            let id = instance
                .tasks
                .iter()
                .find(|t| t.status == "pending")
                .map_or("none".to_string(), |t| t.id.clone());
            (
                json!({"task_id": id, "checklist": [{"item": "x", "status": "done", "evidence": "a.rs:1-2"}], "tools_used": ["check_write_target"], "summary": s}),
                vec!["check_write_target"],
            )
        }
        "READY_COMPLETE" => (json!({"summary": s}), vec![]),
        "POST_IMPL_VERIFY" => {
            let failed: Vec<String> = instance
                .tasks
                .iter()
                .filter(|_| rng.coin())
                .map(|t| t.id.clone())
                .collect();
            let failed = if failed.is_empty() {
                vec!["unknown".to_string()]
            } else {
                failed
            };
            (
                json!({"verifier_used": "v.md", "passed": rng.below(3) == 0, "failed_tasks": failed, "details": "d", "tools_used": [], "summary": s}),
                vec![],
            )
        }
        "VERIFY_INTERVENTION" => (
            json!({"prompt_used": "p.md", "action_taken": "a", "tools_used": [], "summary": s}),
            vec![],
        ),
        "USER_ESCALATION" => (
            json!({"user_answer": "go on", "decision": if rng.below(4) == 0 { "abort" } else { "resume" }, "tools_used": [], "summary": s}),
            vec![],
        ),
        "PRE_COMMIT" => (
            json!({"review_prompt_used": "g.md", "reviewed_files": [], "commit_message": "m", "tools_used": ["review_changes"], "summary": s}),
            vec!["review_changes"],
        ),
        "QUALITY_REVIEW" => {
            let issues: Vec<&str> = if rng.coin() { vec!["naming"] } else { vec![] };
            (
                json!({"quality_prompt_used": "q.md", "quality_score": 7, "issues": issues, "tools_used": [], "summary": s}),
                vec![],
            )
        }
        "MERGE" => (json!({"summary": s}), vec![]),
        other => panic!("no generator for state {other}"),
    }
}

/// Breaks a payload in one of several ways a confused agent would.
fn break_payload(payload: &Value, rng: &mut Rng) -> Value {
    let mut p = payload.clone();
    let obj = p.as_object_mut().unwrap();
    match rng.below(4) {
        0 => {
            obj.remove("summary");
        }
        1 => {
            obj.insert("unexpected_field".into(), json!(1));
        }
        2 => {
            if let Some((k, _)) = obj.iter().next().map(|(k, v)| (k.clone(), v.clone())) {
                obj.insert(k, json!({"wrong": "type"}));
            }
        }
        _ => {
            obj.insert("summary".into(), json!("   "));
        }
    }
    p
}

const BOOL_FLAGS: [&str; 8] = [
    "-e",
    "-v",
    "--no-verify",
    "--no-quality",
    "--fast",
    "--quick",
    "--no-doc-research",
    "-ni",
];

fn flag_text(mask: u8, full_gate: bool) -> String {
    let mut parts: Vec<&str> = BOOL_FLAGS
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, f)| *f)
        .collect();
    if full_gate {
        parts.push("--gate=full");
    }
    parts.join(" ")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn runs_stay_defined_bounded_and_within_their_flags(mask in 0u8..=255, full_gate: bool, intent in 0usize..4, facts in 0u8..8, seed in 1u64..u64::MAX) {
        let contract = default_contract();
        let Ok(flag_set) = flags::parse(&contract, &flag_text(mask, full_gate)) else {
            // Conflicting combinations are refused up front; nothing to run.
            return Ok(());
        };
        let intent = contract.intents[intent].clone();
        let facts: Map<String, Value> = json!({
            "stale_branches_exist": facts & 1 != 0,
            "quality_review_prompt_exists": facts & 2 != 0,
            "task_branch_active": facts & 4 != 0,
            "semantic_available": true,
            "task_branch": "llm_task_x", "base_branch": "main",
        }).as_object().unwrap().clone();
        let allowed = reachable(&contract, &flag_set, &intent);
        let bound = step_bound(&contract);
        let mut rng = Rng(seed);
        let mut plan_round = 0;
        let request = json!({"request": "please fix"}).as_object().cloned().unwrap_or_default();
        let start = Instance::start(&contract, flag_set, Some(&intent), None, &request).unwrap();
        let mut instance = settle(&contract, &start, &facts).unwrap();
        let mut accepted = 0u64;
        loop {
            let id = contract.state_id(&instance.state);
            prop_assert!(id.is_some(), "undefined state {}", instance.state);
            let id = id.unwrap();
            prop_assert!(allowed.contains(&id), "{} visited although the flags skip it", instance.state);
            if contract.state(id).kind == StateKind::Terminal {
                break;
            }
            prop_assert!(accepted <= bound, "no terminal state after {accepted} steps (bound {bound})");
            let (payload, tools) = valid_payload(&instance, &mut rng, &mut plan_round);
            let tools: Vec<String> = tools.into_iter().map(str::to_string).collect();
            if rng.below(5) == 0 {
                let broken = break_payload(&payload, &mut rng);
                let event = Event { input: Input::Submit { payload: broken, tools_called: tools.clone() }, facts: facts.clone() };
                if let Err(rejection) = step(&contract, &instance, &event) {
                    prop_assert_eq!(&rejection.response.state, &instance.state);
                }
            }
            let before = instance.clone();
            let event = Event { input: Input::Submit { payload, tools_called: tools }, facts: facts.clone() };
            match step(&contract, &instance, &event) {
                Ok(t) => {
                    accepted += 1;
                    instance = settle(&contract, &t.instance, &facts).unwrap();
                }
                Err(r) => {
                    // Valid payloads are refused only for task rules; the instance must not move.
                    prop_assert_eq!(&before, &instance);
                    prop_assert!(r.message.key.starts_with("failures.READY"), "valid payload refused: {} in {}", r.message.key, instance.state);
                    return Ok(());
                }
            }
        }
    }

    #[test]
    fn guard_parsing_never_panics(text in "\\PC{0,40}") {
        let _ = parse(&text);
    }

    #[test]
    fn guard_evaluation_never_panics(guard in "[a-z.!&|=<>()\\[\\]\" ,0-9]{0,30}", n in any::<i64>(), s in "\\PC{0,8}", b: bool) {
        if let Ok(expr) = parse(&guard) {
            let roots = json!({"payload": {"n": n, "s": s, "b": b, "l": [n, s.clone(), b, null]}});
            let _ = eval(&expr, Context { roots: roots.as_object().unwrap(), unknown: &[] });
        }
    }
}
