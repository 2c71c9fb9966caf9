//! AgentRunner's task contract driven by scripted action results through the session
//! driver: the engine runs a flow of engine states as readily as the agent-driven
//! code-intel flow.

use std::collections::VecDeque;

use code_intel::contract::Outcome;
use code_intel::machine::{Effect, Event, Input, Instance, step};
use code_intel::session::{ActionFailure, Driver, Host, NoCheckpoints, Stop};
use serde_json::{Map, Value, json};

use crate::support::load;

/// The host's part: the planner's actions (an engine state's `run`) are answered from the
/// script in order; the machine's own checks (preflight, sandbox, tests) pass unless the
/// script answers them; other actions (a transition's side effects such as the worker
/// run, and the `finally` actions) succeed and are recorded with their arguments.
struct Scripted {
    script: VecDeque<(&'static str, Value)>,
    effects: Vec<String>,
    /// Each performed action with its attempt number and arguments.
    calls: Vec<(String, u32, Map<String, Value>)>,
    /// Failures to report, by action name, before answering from the script.
    failures: Vec<(&'static str, &'static str)>,
}

impl Scripted {
    fn new(script: &[(&'static str, Value)]) -> Scripted {
        Scripted {
            script: script.iter().cloned().collect(),
            effects: Vec::new(),
            calls: Vec::new(),
            failures: Vec::new(),
        }
    }
}

impl Host for Scripted {
    fn perform(&mut self, effect: &Effect) -> Result<Value, ActionFailure> {
        self.calls
            .push((effect.action.clone(), effect.attempt, effect.args.clone()));
        if let Some(i) = self.failures.iter().position(|(a, _)| *a == effect.action) {
            let (_, outcome) = self.failures.remove(i);
            return Err(ActionFailure::new(outcome).with("details", "scripted"));
        }
        let scripted = self
            .script
            .front()
            .is_some_and(|(action, _)| *action == effect.action);
        if scripted {
            return Ok(self.script.pop_front().unwrap().1);
        }
        match effect.action.as_str() {
            "preflight.check" | "sandbox.start" => Ok(json!({"ok": true})),
            "tests.run" => Ok(json!({"ok": true, "ran": false, "passed": true})),
            action if action.starts_with("prd.") || action.starts_with("meta.") => {
                panic!("script ran out at {action}")
            }
            action => {
                self.effects.push(action.to_string());
                Ok(Value::Null)
            }
        }
    }

    fn facts(&mut self) -> Map<String, Value> {
        Map::new()
    }
}

/// Runs the task to a terminal state through the session driver, answering each state's
/// actions from `script` in order; returns the visited states and the host effects run.
fn run(params: Value, script: &[(&'static str, Value)]) -> (Vec<String>, Vec<String>, Instance) {
    let (visited, host, instance) = run_host(params, Scripted::new(script));
    (visited, host.effects, instance)
}

fn run_host(params: Value, mut host: Scripted) -> (Vec<String>, Scripted, Instance) {
    let contract = load("contracts/agent_runner_task.yml");
    let params = params.as_object().cloned().unwrap_or_default();
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
    (visited, host, turn.instance)
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
            "PREFLIGHT",
            "PROVISIONING",
            "PLANNING",
            "RUNNING",
            "RUNNING",
            "TESTING",
            "ASSESSING",
            "COMPLETE"
        ]
    );
    // The worker ran once; on the way out the sandbox was released and the note written.
    assert_eq!(effects, ["worker.run", "sandbox.release", "note.write"]);
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
    // Two worker runs; one return to work after the unmet criteria.
    assert_eq!(instance.counters["loops"], 2);
    assert_eq!(instance.counters["returns"], 1);
}

#[test]
fn running_out_of_loops_leaves_the_task_incomplete() {
    // FIX(AR-B4): the original stayed RUNNING with exit code 0.
    let mut script = vec![("prd.load", ok()), ("meta.plan_task", plan())];
    script.extend(std::iter::repeat_n(
        ("meta.next_action", next("run_worker")),
        3,
    ));
    // loop_limit 3 is what a task with max_loops: 2 runs with: two runs happen.
    let (visited, effects, _) = run(json!({"loop_limit": 3}), &script);
    assert_eq!(visited.last().unwrap(), "INCOMPLETE");
    // The third decision reached the limit: its worker run is replaced by the redirect.
    assert_eq!(
        effects,
        ["worker.run", "worker.run", "sandbox.release", "note.write"]
    );
}

#[test]
fn the_default_loop_limit_lets_ten_workers_run() {
    let mut script = vec![("prd.load", ok()), ("meta.plan_task", plan())];
    script.extend(std::iter::repeat_n(
        ("meta.next_action", next("run_worker")),
        11,
    ));
    let (visited, effects, _) = run(json!({}), &script);
    assert_eq!(visited.len(), 4 + 11 + 1);
    assert_eq!(visited.last().unwrap(), "INCOMPLETE");
    assert_eq!(effects.iter().filter(|e| *e == "worker.run").count(), 10);
}

#[test]
fn completion_before_any_work_is_not_accepted() {
    // FIX(AR-M10): mark_complete with zero worker runs.
    let (visited, _, _) = run(
        json!({}),
        &[
            ("prd.load", ok()),
            ("meta.plan_task", plan()),
            ("meta.next_action", next("mark_complete")),
            // Asked again, it insists: still no work, still not accepted.
            ("meta.next_action", next("mark_complete")),
            ("meta.next_action", next("abort")),
        ],
    );
    assert_eq!(
        visited,
        [
            "PENDING",
            "PREFLIGHT",
            "PROVISIONING",
            "PLANNING",
            "RUNNING",
            "RUNNING",
            "RUNNING",
            "FAILED"
        ]
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
    ] {
        let (visited, _, _) = run(json!({}), &script);
        assert_eq!(visited.last().unwrap(), "FAILED", "{script:?}");
    }
}

#[test]
fn a_planner_asking_for_a_human_ends_in_needs_human() {
    let script = vec![
        ("prd.load", ok()),
        ("meta.plan_task", plan()),
        (
            "meta.next_action",
            json!({"ok": true, "action": "ask_human", "question": "Which database?"}),
        ),
    ];
    let (visited, _, _) = run(json!({}), &script);
    assert_eq!(visited.last().unwrap(), "NEEDS_HUMAN", "{visited:?}");
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

#[test]
fn finally_runs_on_every_exit_with_the_state_the_task_ended_in() {
    // A PRD that does not load ends the task in FAILED before anything was acquired:
    // the note is still written (AR-M9) and the release still runs (it is safe unacquired).
    let (_, host, _) = run_host(
        json!({}),
        Scripted::new(&[("prd.load", json!({"ok": false, "error": "missing"}))]),
    );
    let finals: Vec<(&str, Option<&Value>)> = host
        .calls
        .iter()
        .filter(|(a, ..)| a == "note.write" || a == "sandbox.release")
        .map(|(a, _, args)| (a.as_str(), args.get("state")))
        .collect();
    assert_eq!(
        finals,
        [
            ("sandbox.release", None),
            ("note.write", Some(&json!("FAILED")))
        ]
    );
}

#[test]
fn a_cancel_ends_the_task_in_cancelled_and_still_runs_finally() {
    let contract = load("contracts/agent_runner_task.yml");
    let driver = Driver::new(&contract);
    let instance = Instance::start(&contract, Map::new(), None, None, &Map::new()).unwrap();
    let mut host = Scripted::new(&[]);
    let turn = driver.cancel(&mut host, &mut NoCheckpoints, instance);
    assert!(
        matches!(turn.stop, Stop::Finished(Some(Outcome::Cancelled))),
        "{:?}",
        turn.stop
    );
    assert_eq!(turn.instance.state, "CANCELLED");
    assert_eq!(
        turn.steps[0].message.as_ref().unwrap().key,
        "failures.cancelled"
    );
    let finals: Vec<&str> = turn.finalizers.iter().map(|f| f.action.as_str()).collect();
    assert_eq!(finals, ["sandbox.release", "note.write"]);
    // A finished task cannot be cancelled again, and runs nothing more.
    let again = driver.cancel(&mut host, &mut NoCheckpoints, turn.instance);
    assert!(matches!(again.stop, Stop::Refused(_)), "{:?}", again.stop);
    assert!(again.finalizers.is_empty());
}

#[test]
fn a_planner_failure_is_retried_as_the_contract_says_then_stops_the_task() {
    // provider_retries = 1: one more attempt after a provider failure.
    let mut host = Scripted::new(&[("prd.load", ok()), ("meta.plan_task", plan())]);
    host.failures = vec![("meta.plan_task", "provider_error")];
    let contract = load("contracts/agent_runner_task.yml");
    let params = json!({"provider_retries": 1}).as_object().cloned().unwrap();
    let driver = Driver::new(&contract);
    // The retry answers from the script: the second attempt succeeds and planning goes on.
    let mut host_ok = host;
    host_ok.script.extend([("meta.next_action", next("abort"))]);
    let turn = driver
        .start(&mut host_ok, &mut NoCheckpoints, "", None, None, &params)
        .unwrap();
    assert_eq!(turn.instance.state, "FAILED");
    let attempts: Vec<u32> = host_ok
        .calls
        .iter()
        .filter(|(a, ..)| a == "meta.plan_task")
        .map(|(_, attempt, _)| *attempt)
        .collect();
    assert_eq!(attempts, [1, 2]);

    // With retries exhausted the action fails: the task stops where it is, and the host
    // runs the finalizers for that exit itself.
    let mut host = Scripted::new(&[("prd.load", ok())]);
    host.failures = vec![
        ("meta.plan_task", "provider_error"),
        ("meta.plan_task", "provider_error"),
    ];
    let turn = driver
        .start(&mut host, &mut NoCheckpoints, "", None, None, &params)
        .unwrap();
    assert!(
        matches!(turn.stop, Stop::ActionFailed(_)),
        "{:?}",
        turn.stop
    );
    assert_eq!(turn.instance.state, "PLANNING");
    assert!(turn.finalizers.is_empty());
    let finals = driver.finalize(&mut host, &turn.instance);
    assert_eq!(finals.len(), 2);
    assert!(finals.iter().all(|f| f.result.is_ok()));
    // An outcome the policy does not name is not retried: a refused reply (the planner
    // already asked again itself), or a worker's sandbox error.
    let mut host = Scripted::new(&[("prd.load", ok())]);
    host.failures = vec![("meta.plan_task", "invalid_response")];
    let turn = driver
        .start(&mut host, &mut NoCheckpoints, "", None, None, &params)
        .unwrap();
    assert!(
        matches!(turn.stop, Stop::ActionFailed(_)),
        "{:?}",
        turn.stop
    );
    let plan_calls = host
        .calls
        .iter()
        .filter(|(a, ..)| a == "meta.plan_task")
        .count();
    assert_eq!(plan_calls, 1);
    let mut host = Scripted::new(&[("prd.load", ok()), ("meta.plan_task", plan())]);
    host.failures = vec![("worker.run", "sandbox_error")];
    host.script
        .extend([("meta.next_action", next("run_worker"))]);
    let turn = driver
        .start(&mut host, &mut NoCheckpoints, "", None, None, &params)
        .unwrap();
    assert!(
        matches!(turn.stop, Stop::ActionFailed(_)),
        "{:?}",
        turn.stop
    );
    let worker_calls = host
        .calls
        .iter()
        .filter(|(a, ..)| a == "worker.run")
        .count();
    assert_eq!(worker_calls, 1);
}

#[test]
fn the_worker_run_carries_its_timeout_from_the_params() {
    let (_, host, _) = run_host(
        json!({"max_run_time_sec": 42}),
        Scripted::new(&[
            ("prd.load", ok()),
            ("meta.plan_task", plan()),
            ("meta.next_action", next("run_worker")),
            ("meta.next_action", next("abort")),
        ]),
    );
    assert!(host.calls.iter().any(|(a, ..)| a == "worker.run"));
    let contract = load("contracts/agent_runner_task.yml");
    let instance = Instance::start(
        &contract,
        Map::new(),
        None,
        None,
        json!({"max_run_time_sec": 42}).as_object().unwrap(),
    )
    .unwrap();
    let mut running = instance.clone();
    running.state = "RUNNING".into();
    let event = Event {
        input: Input::Results {
            results: json!({"next": {"ok": true, "action": "run_worker"}})
                .as_object()
                .cloned()
                .unwrap(),
        },
        facts: Map::new(),
    };
    let accepted = step(&contract, &running, &event).unwrap();
    assert_eq!(accepted.effects[0].action, "worker.run");
    assert_eq!(accepted.effects[0].timeout_secs, Some(42));
}
