//! AgentRunner's task contract driven by scripted action results through the session
//! driver: the engine runs a flow of engine states as readily as the agent-driven
//! code-intel flow.

use std::collections::VecDeque;

use code_intel::machine::{Effect, Event, Input, Instance, step};
use code_intel::session::{ActionFailure, Driver, Host, NoCheckpoints, Stop};
use serde_json::{Map, Value, json};

use crate::support::load;

/// The host's part: the planner's actions (an engine state's `run`) are answered from the
/// script in order; other actions (a transition's side effects, such as the worker run)
/// succeed and are recorded.
struct Scripted {
    script: VecDeque<(&'static str, Value)>,
    effects: Vec<String>,
}

impl Host for Scripted {
    fn perform(&mut self, effect: &Effect) -> Result<Value, ActionFailure> {
        let planned = effect.action.starts_with("prd.") || effect.action.starts_with("meta.");
        if !planned {
            self.effects.push(effect.action.clone());
            return Ok(Value::Null);
        }
        let (action, result) = self
            .script
            .pop_front()
            .unwrap_or_else(|| panic!("script ran out at {}", effect.action));
        assert_eq!(action, effect.action);
        Ok(result)
    }

    fn facts(&mut self) -> Map<String, Value> {
        Map::new()
    }
}

/// Runs the task to a terminal state through the session driver, answering each state's
/// actions from `script` in order; returns the visited states and the host effects run.
fn run(params: Value, script: &[(&'static str, Value)]) -> (Vec<String>, Vec<String>, Instance) {
    let contract = load("contracts/agent_runner_task.yml");
    let params = params.as_object().cloned().unwrap_or_default();
    let mut host = Scripted {
        script: script.iter().cloned().collect(),
        effects: Vec::new(),
    };
    let turn = Driver::new(&contract)
        .start(&mut host, &mut NoCheckpoints, "", None, None, &params)
        .unwrap();
    assert!(matches!(turn.stop, Stop::Finished(_)), "{:?}", turn.stop);
    assert!(
        host.script.is_empty(),
        "unused script entries: {:?}",
        host.script
    );
    let mut visited = vec![contract.state(contract.initial).id.clone()];
    visited.extend(turn.steps.iter().map(|t| t.to.clone()));
    (visited, host.effects, turn.instance)
}

fn ok() -> Value {
    json!({"ok": true})
}

fn plan() -> Value {
    json!({"ok": true, "acceptance_criteria": ["AC-1 tests pass"]})
}

fn next(action: &str) -> Value {
    json!({"ok": true, "action": action})
}

#[test]
fn a_task_plans_works_and_completes() {
    let (visited, effects, _) = run(
        json!({}),
        &[
            ("prd.load", ok()),
            ("meta.plan_task", plan()),
            ("meta.next_action", next("run_worker")),
            ("meta.next_action", next("mark_complete")),
            (
                "meta.completion_assessment",
                json!({"ok": true, "all_criteria_satisfied": true}),
            ),
        ],
    );
    assert_eq!(
        visited,
        [
            "PENDING",
            "PLANNING",
            "RUNNING",
            "RUNNING",
            "VALIDATING",
            "COMPLETE"
        ]
    );
    assert_eq!(effects, ["worker.run", "note.write"]);
}

#[test]
fn unmet_criteria_go_back_to_work() {
    let (visited, _, instance) = run(
        json!({}),
        &[
            ("prd.load", ok()),
            ("meta.plan_task", plan()),
            ("meta.next_action", next("run_worker")),
            ("meta.next_action", next("mark_complete")),
            (
                "meta.completion_assessment",
                json!({"ok": true, "all_criteria_satisfied": false}),
            ),
            ("meta.next_action", next("run_worker")),
            ("meta.next_action", next("mark_complete")),
            (
                "meta.completion_assessment",
                json!({"ok": true, "all_criteria_satisfied": true}),
            ),
        ],
    );
    assert_eq!(visited.last().unwrap(), "COMPLETE");
    assert_eq!(instance.counters["loops"], 3);
}

#[test]
fn running_out_of_loops_fails_the_task() {
    // FIX(V1): the original stayed RUNNING with exit code 0.
    let mut script = vec![("prd.load", ok()), ("meta.plan_task", plan())];
    script.extend(std::iter::repeat_n(
        ("meta.next_action", next("run_worker")),
        3,
    ));
    let (visited, effects, _) = run(json!({"max_loops": 3}), &script);
    assert_eq!(visited.last().unwrap(), "FAILED");
    // The third decision reached the limit: its worker run is replaced by the failure.
    assert_eq!(effects, ["worker.run", "worker.run"]);
}

#[test]
fn the_default_loop_limit_is_ten() {
    let mut script = vec![("prd.load", ok()), ("meta.plan_task", plan())];
    script.extend(std::iter::repeat_n(
        ("meta.next_action", next("run_worker")),
        10,
    ));
    let (visited, _, _) = run(json!({}), &script);
    assert_eq!(visited.len(), 2 + 10 + 1);
    assert_eq!(visited.last().unwrap(), "FAILED");
}

#[test]
fn completion_before_any_work_is_not_accepted() {
    // FIX(V5): mark_complete with zero worker runs.
    let (visited, _, _) = run(
        json!({}),
        &[
            ("prd.load", ok()),
            ("meta.plan_task", plan()),
            ("meta.next_action", next("mark_complete")),
            ("meta.next_action", next("abort")),
        ],
    );
    assert_eq!(
        visited,
        ["PENDING", "PLANNING", "RUNNING", "RUNNING", "FAILED"]
    );
}

#[test]
fn failures_of_the_planner_end_in_failed() {
    for script in [
        vec![(
            "prd.load",
            json!({"ok": false, "error": "PRD not specified"}),
        )],
        vec![
            ("prd.load", ok()),
            (
                "meta.plan_task",
                json!({"ok": true, "acceptance_criteria": []}),
            ),
        ],
        vec![
            ("prd.load", ok()),
            ("meta.plan_task", plan()),
            ("meta.next_action", json!({"ok": false, "error": "timeout"})),
        ],
        vec![
            ("prd.load", ok()),
            ("meta.plan_task", plan()),
            ("meta.next_action", next("ask_human")),
        ],
    ] {
        let (visited, _, _) = run(json!({}), &script);
        assert_eq!(visited.last().unwrap(), "FAILED", "{script:?}");
    }
}

#[test]
fn an_engine_state_refuses_a_submitted_payload() {
    let contract = load("contracts/agent_runner_task.yml");
    let instance = Instance::start(&contract, Map::new(), None, None, &Map::new()).unwrap();
    let event = Event {
        input: Input::Submit {
            payload: json!({}),
            tools_called: vec![],
        },
        facts: Map::new(),
    };
    let rejection = step(&contract, &instance, &event).unwrap_err();
    assert_eq!(rejection.message.key, "failures.engine.payload_invalid");
    assert!(
        Instance::start(
            &contract,
            Map::new(),
            None,
            None,
            json!({"nope": 1}).as_object().unwrap()
        )
        .is_err()
    );
}
