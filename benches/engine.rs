//! Benchmark of the contract engine: loading and validating the default contract, and the
//! interpreter's step time over a full session of the default flow.
//!
//! Run with `cargo bench --bench engine`. Prints p50/p90/max; the goals (issue 2) are
//! < 20 ms to load and validate, and < 50 µs per step at p50.
#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use code_intel::contract::flags;
use code_intel::contract::{BUILTIN_CONTRACT, Contract};
use code_intel::machine::{Event, Input, Instance, settle, step};
use code_intel::source::Sources;
use serde_json::{Map, Value, json};

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[index]
}

fn load() -> Contract {
    let mut sources = Sources::default();
    let id = sources.add("phase_contract.yml", BUILTIN_CONTRACT);
    code_intel::lint::load_and_lint(&mut sources, id, &code_intel::hosts::all())
        .ok()
        .expect("the default contract loads")
}

/// The submissions of one full session: explore, plan two tasks, implement, verify,
/// commit, review and merge.
fn session() -> Vec<(Value, Vec<String>)> {
    let tools = |t: &[&str]| t.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
    let report = |id: &str| json!({"task_id": id, "checklist": [{"item": format!("{id} item"), "status": "done", "evidence": "src/a.rs:1-9"}], "tools_used": ["check_write_target"], "summary": "done"});
    vec![
        (
            json!({"documents_reviewed": ["docs/a.md"], "tools_used": [], "summary": "s"}),
            vec![],
        ),
        (
            json!({"desired_action": {"value": "fix", "quote": "fix it"}, "tools_used": [], "summary": "s"}),
            vec![],
        ),
        (
            json!({"explored_files": ["a.rs"], "findings": ["f"], "tools_used": ["search_text", "get_symbols"], "summary": "s"}),
            tools(&["search_text", "get_symbols"]),
        ),
        (
            json!({"needs_more_information": true, "reason": "need more context", "tools_used": [], "summary": "s"}),
            vec![],
        ),
        (
            json!({"search_query": "q", "search_results": ["r"], "tools_used": ["semantic_search"], "summary": "s"}),
            tools(&["semantic_search"]),
        ),
        (
            json!({"has_unverified_hypotheses": true, "reason": "one open question", "tools_used": [], "summary": "s"}),
            vec![],
        ),
        (
            json!({"hypotheses_verified": [{"hypothesis": "h", "result": true, "evidence": "a.rs:1"}], "tools_used": [], "summary": "s"}),
            vec![],
        ),
        (
            json!({"needs_impact_analysis": true, "reason": "callers may break", "tools_used": [], "summary": "s"}),
            vec![],
        ),
        (
            json!({"impact_summary": {"callers": 2}, "tools_used": ["analyze_impact"], "summary": "s"}),
            tools(&["analyze_impact"]),
        ),
        (
            json!({"tasks": [
                {"id": "t1", "description": "d", "status": "pending", "checklist": [{"item": "t1 item"}]},
                {"id": "t2", "description": "d", "status": "pending", "checklist": [{"item": "t2 item"}]}
            ], "tools_used": [], "summary": "s"}),
            vec![],
        ),
        (report("t1"), tools(&["check_write_target"])),
        (report("t2"), tools(&["check_write_target"])),
        (json!({"summary": "s"}), vec![]),
        (
            json!({"verifier_used": "v.md", "passed": true, "failed_tasks": [], "details": "ok", "tools_used": [], "summary": "s"}),
            vec![],
        ),
        (
            json!({"review_prompt_used": "g.md", "reviewed_files": [{"path": "a.rs", "decision": "keep"}], "commit_message": "m", "tools_used": ["review_changes"], "summary": "s"}),
            tools(&["review_changes"]),
        ),
        (
            json!({"quality_prompt_used": "q.md", "quality_score": "A", "issues": [], "tools_used": [], "summary": "s"}),
            vec![],
        ),
        (json!({"summary": "s"}), vec![]),
    ]
}

fn main() {
    // Load + validate: YAML parse, contract schema, lowering (guards, payload schemas,
    // templates) and every lint rule.
    let _warm = load();
    let mut loads = Vec::new();
    for _ in 0..30 {
        let start = Instant::now();
        black_box(load());
        loads.push(start.elapsed());
    }
    let contract = load();
    let facts: Map<String, Value> = json!({"stale_branches_exist": false, "quality_review_prompt_exists": true, "task_branch_active": true, "task_branch": "t", "base_branch": "main"})
        .as_object()
        .unwrap()
        .clone();
    let script = session();
    let mut steps = Vec::new();
    for _ in 0..200 {
        let start_instance = Instance::start(
            &contract,
            flags::parse(&contract, "").unwrap(),
            None,
            None,
            &Map::new(),
        )
        .unwrap();
        let mut instance = settle(&contract, &start_instance, &facts).unwrap();
        for (payload, tools) in &script {
            let event = Event {
                input: Input::Submit {
                    payload: payload.clone(),
                    tools_called: tools.clone(),
                },
                facts: facts.clone(),
            };
            let start = Instant::now();
            let t = step(&contract, &instance, &event);
            steps.push(start.elapsed());
            instance = t
                .unwrap_or_else(|r| panic!("{}: {}", instance.state, r.message.text))
                .instance;
        }
        assert_eq!(instance.state, "SESSION_COMPLETE");
    }
    println!(
        "contract load + validate (default contract, {} runs): p50 {:?}  p90 {:?}  max {:?}   goal < 20 ms",
        loads.len(),
        percentile(&mut loads, 0.5),
        percentile(&mut loads, 0.9),
        percentile(&mut loads, 1.0)
    );
    println!(
        "engine step (default flow, {} steps):            p50 {:?}  p90 {:?}  max {:?}   goal < 50 µs p50",
        steps.len(),
        percentile(&mut steps, 0.5),
        percentile(&mut steps, 0.9),
        percentile(&mut steps, 1.0)
    );
}
