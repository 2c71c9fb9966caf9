//! The session driver with scripted hosts: effects run in order, a failing effect keeps the
//! old instance with the contract's message, engine states run their actions, every
//! committed step is checkpointed, and tool gating is a pure answer.

use std::collections::VecDeque;

use code_intel::contract::Contract;
use code_intel::machine::{Effect, Instance};
use code_intel::machine::{ToolGate, gate};
use code_intel::session::{
    ActionFailure, CheckpointStore, Driver, Host, NoCheckpoints, Stop, Turn,
};
use code_intel::source::Sources;
use serde_json::{Map, Value, json};

use crate::support::{default_contract, load};

/// A host that answers each action from a script (in order) and records what it did.
#[derive(Default)]
struct ScriptedHost {
    script: VecDeque<(&'static str, Result<Value, ActionFailure>)>,
    facts: Map<String, Value>,
    performed: Vec<String>,
}

impl ScriptedHost {
    fn new(script: Vec<(&'static str, Result<Value, ActionFailure>)>) -> ScriptedHost {
        ScriptedHost {
            script: script.into(),
            ..ScriptedHost::default()
        }
    }
}

impl Host for ScriptedHost {
    fn perform(&mut self, effect: &Effect) -> Result<Value, ActionFailure> {
        let (action, answer) = self
            .script
            .pop_front()
            .unwrap_or_else(|| panic!("unscripted action {}", effect.action));
        assert_eq!(action, effect.action, "actions run out of order");
        self.performed.push(effect.action.clone());
        answer
    }

    fn facts(&mut self) -> Map<String, Value> {
        self.facts.clone()
    }
}

/// Keeps every checkpoint; fails every save after `fail_after` saves when set.
#[derive(Default)]
struct MemoryStore {
    saved: Vec<Instance>,
    fail_after: Option<usize>,
}

impl CheckpointStore for MemoryStore {
    fn save(&mut self, instance: &Instance) -> std::io::Result<()> {
        if self.fail_after.is_some_and(|n| self.saved.len() >= n) {
            return Err(std::io::Error::other("disk full"));
        }
        self.saved.push(instance.clone());
        Ok(())
    }
}

fn states(turn: &Turn) -> Vec<&str> {
    turn.steps.iter().map(|t| t.to.as_str()).collect()
}

#[test]
fn an_agent_runner_task_runs_to_completion_through_the_driver() {
    let contract = load("contracts/agent_runner_task.yml");
    let mut host = ScriptedHost::new(vec![
        ("prd.load", Ok(json!({"ok": true}))),
        ("preflight.check", Ok(json!({"ok": true}))),
        ("sandbox.start", Ok(json!({"ok": true}))),
        (
            "meta.plan_task",
            Ok(json!({"ok": true, "acceptance_criteria": ["AC-1"]})),
        ),
        (
            "meta.next_action",
            Ok(json!({"ok": true, "action": "run_worker"})),
        ),
        ("worker.run", Ok(json!({"ok": true, "exit_code": 0}))),
        (
            "meta.next_action",
            Ok(json!({"ok": true, "action": "mark_complete"})),
        ),
        ("tests.run", Ok(json!({"ok": true, "ran": false}))),
        (
            "meta.completion_assessment",
            Ok(json!({"ok": true, "all_criteria_satisfied": true})),
        ),
        ("sandbox.release", Ok(Value::Null)),
        ("note.write", Ok(Value::Null)),
    ]);
    let mut store = MemoryStore::default();
    let turn = Driver::new(&contract)
        .start(&mut host, &mut store, "", None, None, &Map::new())
        .unwrap();
    assert!(
        matches!(turn.stop, Stop::Finished(Some(_))),
        "{:?}",
        turn.stop
    );
    assert_eq!(
        states(&turn),
        [
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
    // The contract's `finally` ran once the task ended.
    let finals: Vec<&str> = turn.finalizers.iter().map(|f| f.action.as_str()).collect();
    assert_eq!(finals, ["sandbox.release", "note.write"]);
    assert_eq!(turn.instance.state, "COMPLETE");
    assert!(host.script.is_empty(), "unused: {:?}", host.script);
    // The start and every committed step, in order.
    let saved: Vec<&str> = store.saved.iter().map(|i| i.state.as_str()).collect();
    assert_eq!(
        saved,
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
}

#[test]
fn a_failing_transition_effect_keeps_the_old_instance() {
    let contract = load("contracts/agent_runner_task.yml");
    let mut host = ScriptedHost::new(vec![
        ("prd.load", Ok(json!({"ok": true}))),
        ("preflight.check", Ok(json!({"ok": true}))),
        ("sandbox.start", Ok(json!({"ok": true}))),
        (
            "meta.plan_task",
            Ok(json!({"ok": true, "acceptance_criteria": ["AC-1"]})),
        ),
        (
            "meta.next_action",
            Ok(json!({"ok": true, "action": "run_worker"})),
        ),
        ("worker.run", Err(ActionFailure::new("sandbox_gone"))),
    ]);
    let mut store = MemoryStore::default();
    let turn = Driver::new(&contract)
        .start(&mut host, &mut store, "", None, None, &Map::new())
        .unwrap();
    let Stop::ActionFailed(failed) = &turn.stop else {
        panic!("expected a failed action, got {:?}", turn.stop);
    };
    let message = &failed.message;
    assert_eq!(failed.action, "worker.run");
    // No mapping for the outcome: the `action_failed` role's message names it.
    assert_eq!(message.key, "failures.engine.action_failed");
    assert!(message.text.contains("sandbox_gone"), "{}", message.text);
    // RUNNING's step did not commit: the loop counter did not move.
    assert_eq!(turn.instance.state, "RUNNING");
    assert_eq!(turn.instance.counters["loops"], 0);
    assert_eq!(store.saved.last().unwrap(), &turn.instance);
}

/// A code-intel contract whose one transition runs two host actions, the second with a
/// mapped failure message.
const TWO_EFFECTS: &str = r#"
contract: tests.two_effects
version: 1
host: code-intel
locales: [en]
call: submit_phase
initial: WORK
engine_messages:
  payload_invalid: engine.failed
  required_tools_not_used: engine.failed
  required_tools_not_reported: engine.failed
  tools_reported_not_called: engine.failed
  min_distinct_tools: engine.failed
  session_finished: engine.failed
  guard_failed: engine.failed
  action_failed: engine.failed
  unknown_state: engine.failed
messages:
  engine.failed: {en: "refused: {details}"}
  commit.failed: {en: "commit of {message} failed: {details}"}
states:
  WORK:
    instruction: "Work."
    payload:
      type: object
      properties:
        summary: {type: string}
        note: {type: string}
        tools_used: {type: array, items: {type: string}}
      required: [summary]
      additionalProperties: false
    required_tools: [search_text]
    allowed_tools: [search_files]
    otherwise:
      to: DONE
      actions:
        - action: git.prepare_commit
          with: {message: payload.summary}
        - action: git.commit_prepared
          errors:
            failed: {key: commit.failed, args: {message: payload.summary, details: payload.note}}
  DONE: {kind: terminal, outcome: success}
"#;

fn two_effects() -> Contract {
    let mut sources = Sources::default();
    let id = sources.add("two_effects.yml", TWO_EFFECTS);
    let loaded = code_intel::contract::load(&mut sources, id, &code_intel::hosts::all());
    let diagnostics = loaded.diagnostics.clone();
    loaded.ok().unwrap_or_else(|_| panic!("{diagnostics:?}"))
}

#[test]
fn an_effect_failing_midway_keeps_the_instance_and_renders_the_mapped_message() {
    let contract = two_effects();
    let driver = Driver::new(&contract);
    let mut host = ScriptedHost::default();
    let mut store = MemoryStore::default();
    let start = driver
        .start(&mut host, &mut store, "", None, None, &Map::new())
        .unwrap();
    assert!(matches!(start.stop, Stop::Waiting));
    let before = start.instance;

    host.script = vec![
        ("git.prepare_commit", Ok(Value::Null)),
        (
            "git.commit_prepared",
            Err(ActionFailure::new("failed").with("details", "hook rejected")),
        ),
    ]
    .into();
    let turn = driver.submit(
        &mut host,
        &mut store,
        before.clone(),
        json!({"summary": "add --json", "tools_used": ["search_text"]}),
        vec!["search_text".into()],
    );
    let Stop::ActionFailed(failed) = &turn.stop else {
        panic!("expected a failed action, got {:?}", turn.stop);
    };
    assert_eq!(failed.action, "git.commit_prepared");
    assert_eq!(failed.failure.outcome, "failed");
    assert_eq!(failed.message.key, "commit.failed");
    // The contract's value (evaluated during the step) and the outcome's own value; the
    // contract's `details` named an absent field, so the host's value is kept.
    assert_eq!(
        failed.message.text,
        "commit of add --json failed: hook rejected"
    );
    // Both effects were attempted in order; the instance did not move and nothing new
    // was checkpointed.
    assert_eq!(
        host.performed,
        ["git.prepare_commit", "git.commit_prepared"]
    );
    assert_eq!(turn.instance, before);
    assert!(turn.steps.is_empty());
    assert_eq!(store.saved.len(), 1);

    // When the effects succeed the same submission commits.
    host.script = vec![
        ("git.prepare_commit", Ok(Value::Null)),
        ("git.commit_prepared", Ok(Value::Null)),
    ]
    .into();
    let turn = driver.submit(
        &mut host,
        &mut store,
        before,
        json!({"summary": "add --json", "tools_used": ["search_text"]}),
        vec!["search_text".into()],
    );
    assert!(
        matches!(turn.stop, Stop::Finished(Some(_))),
        "{:?}",
        turn.stop
    );
    assert_eq!(turn.instance.state, "DONE");
    assert_eq!(store.saved.len(), 2);
}

#[test]
fn a_refused_submission_runs_no_effect_and_saves_nothing() {
    let contract = two_effects();
    let driver = Driver::new(&contract);
    let mut host = ScriptedHost::default();
    let mut store = MemoryStore::default();
    let start = driver
        .start(&mut host, &mut store, "", None, None, &Map::new())
        .unwrap();
    // The required tool was not called.
    let turn = driver.submit(
        &mut host,
        &mut store,
        start.instance.clone(),
        json!({"summary": "done", "tools_used": ["search_text"]}),
        vec![],
    );
    let Stop::Refused(rejection) = &turn.stop else {
        panic!("expected a refusal, got {:?}", turn.stop);
    };
    assert!(rejection.message.text.starts_with("refused"));
    assert_eq!(turn.instance, start.instance);
    assert!(host.performed.is_empty());
    assert_eq!(store.saved.len(), 1);
}

#[test]
fn a_failing_engine_state_action_stops_before_the_step() {
    let contract = load("contracts/agent_runner_task.yml");
    let mut host = ScriptedHost::new(vec![(
        "prd.load",
        Err(ActionFailure::new("unreadable").with("details", "permission denied")),
    )]);
    let turn = Driver::new(&contract)
        .start(&mut host, &mut NoCheckpoints, "", None, None, &Map::new())
        .unwrap();
    assert!(
        matches!(&turn.stop, Stop::ActionFailed(failed) if failed.action == "prd.load"),
        "{:?}",
        turn.stop
    );
    assert_eq!(turn.instance.state, "PENDING");
    assert!(turn.steps.is_empty());
    let Stop::ActionFailed(failed) = &turn.stop else {
        unreachable!()
    };
    // Unmapped: the role message names the outcome and the host's details.
    assert!(
        failed
            .message
            .text
            .contains("unreadable: permission denied"),
        "{}",
        failed.message.text
    );

    // The host resumes the stalled session: the state's action runs again.
    host.script = vec![
        ("prd.load", Ok(json!({"ok": false, "error": "no PRD"}))),
        ("sandbox.release", Ok(Value::Null)),
        ("note.write", Ok(Value::Null)),
    ]
    .into();
    let resumed = Driver::new(&contract).advance(&mut host, &mut NoCheckpoints, turn.instance);
    assert!(
        matches!(resumed.stop, Stop::Finished(Some(_))),
        "{:?}",
        resumed.stop
    );
    assert_eq!(states(&resumed), ["FAILED"]);
}

#[test]
fn an_instance_of_another_contract_is_refused() {
    let contract = load("contracts/agent_runner_task.yml");
    let mut instance = Driver::new(&two_effects())
        .start(
            &mut ScriptedHost::default(),
            &mut NoCheckpoints,
            "",
            None,
            None,
            &Map::new(),
        )
        .unwrap()
        .instance;
    instance.state = "PENDING".into();
    let mut host = ScriptedHost::default();
    let turn = Driver::new(&contract).advance(&mut host, &mut NoCheckpoints, instance);
    assert!(
        matches!(&turn.stop, Stop::WrongContract { found, .. } if found == "tests.two_effects"),
        "{:?}",
        turn.stop
    );
    assert!(host.performed.is_empty());
}

#[test]
fn session_tools_and_the_submit_tool_are_not_evidence() {
    let text = TWO_EFFECTS.replace("required_tools: [search_text]", "min_distinct_tools: 1");
    let mut sources = Sources::default();
    let id = sources.add("min.yml", text);
    let contract = code_intel::contract::load(&mut sources, id, &code_intel::hosts::all())
        .ok()
        .unwrap();
    let driver = Driver::new(&contract);
    let mut host = ScriptedHost::default();
    let start = driver
        .start(&mut host, &mut NoCheckpoints, "", None, None, &Map::new())
        .unwrap();
    let turn = driver.submit(
        &mut host,
        &mut NoCheckpoints,
        start.instance.clone(),
        json!({"summary": "s"}),
        vec!["get_session_status".into(), "submit_phase".into()],
    );
    assert!(matches!(turn.stop, Stop::Refused(_)), "{:?}", turn.stop);

    // Requiring one is refused when the contract loads.
    let text = TWO_EFFECTS.replace(
        "required_tools: [search_text]",
        "required_tools: [get_session_status]",
    );
    let id = sources.add("req.yml", text);
    let loaded = code_intel::contract::load(&mut sources, id, &code_intel::hosts::all());
    assert!(
        loaded
            .diagnostics
            .iter()
            .any(|d| d.code == "unknown-tool" && d.message.contains("cannot be required")),
        "{:?}",
        loaded.diagnostics
    );
}

#[test]
fn a_checkpoint_that_cannot_be_saved_stops_the_driver() {
    let contract = load("contracts/agent_runner_task.yml");
    let mut host = ScriptedHost::new(vec![
        ("prd.load", Ok(json!({"ok": true}))),
        ("preflight.check", Ok(json!({"ok": true}))),
        ("sandbox.start", Ok(json!({"ok": true}))),
        (
            "meta.plan_task",
            Ok(json!({"ok": true, "acceptance_criteria": ["AC-1"]})),
        ),
    ]);
    let mut store = MemoryStore {
        fail_after: Some(2),
        ..MemoryStore::default()
    };
    let turn = Driver::new(&contract)
        .start(&mut host, &mut store, "", None, None, &Map::new())
        .unwrap();
    assert!(
        matches!(turn.stop, Stop::CheckpointFailed(_)),
        "{:?}",
        turn.stop
    );
    // PENDING and PREFLIGHT were saved; PROVISIONING happened (it is the turn's last step
    // and its instance) but is not durable.
    assert_eq!(store.saved.len(), 2);
    assert_eq!(turn.instance.state, "PROVISIONING");
    assert_eq!(states(&turn), ["PREFLIGHT", "PROVISIONING"]);
}

#[test]
fn bad_start_arguments_are_typed_errors() {
    let contract = default_contract();
    let driver = Driver::new(&contract);
    let mut host = ScriptedHost::default();
    let flags = driver
        .start(
            &mut host,
            &mut NoCheckpoints,
            "--nope",
            None,
            None,
            &Map::new(),
        )
        .unwrap_err();
    assert!(
        flags.to_string().contains("unknown flag `--nope`"),
        "{flags}"
    );
    let intent = driver
        .start(
            &mut host,
            &mut NoCheckpoints,
            "",
            Some("NOPE"),
            None,
            &Map::new(),
        )
        .unwrap_err();
    assert!(intent.to_string().contains("unknown intent"), "{intent}");
}

#[test]
fn engine_states_that_never_wait_are_cut_off() {
    let text = TWO_EFFECTS.replace(
        "initial: WORK",
        "initial: SPIN\n# a loop lint would flag (`unbounded-cycle`); loading alone accepts it",
    ) + "  SPIN: {kind: engine, otherwise: {to: SPIN}}\n";
    let mut sources = Sources::default();
    let id = sources.add("spin.yml", text);
    let contract = code_intel::contract::load(&mut sources, id, &code_intel::hosts::all())
        .ok()
        .unwrap();
    let mut driver = Driver::new(&contract);
    driver.max_engine_steps = 25;
    let turn = driver
        .start(
            &mut ScriptedHost::default(),
            &mut NoCheckpoints,
            "",
            None,
            None,
            &Map::new(),
        )
        .unwrap();
    assert!(
        matches!(turn.stop, Stop::EngineLoop { limit: 25 }),
        "{:?}",
        turn.stop
    );
    assert_eq!(turn.steps.len(), 25);
}

#[test]
fn tool_gating_is_a_pure_answer_from_the_contract() {
    let contract = two_effects();
    let driver = Driver::new(&contract);
    let turn = driver
        .start(
            &mut ScriptedHost::default(),
            &mut NoCheckpoints,
            "",
            None,
            None,
            &Map::new(),
        )
        .unwrap();
    let at_work = &turn.instance;
    assert_eq!(gate(&contract, at_work, "search_files"), ToolGate::Allowed);
    // Required tools are allowed even when `allowed_tools` does not repeat them.
    assert_eq!(gate(&contract, at_work, "search_text"), ToolGate::Allowed);
    // The submit tool and session control are never gated.
    assert_eq!(gate(&contract, at_work, "submit_phase"), ToolGate::Allowed);
    assert_eq!(
        gate(&contract, at_work, "get_session_status"),
        ToolGate::Allowed
    );
    assert_eq!(
        gate(&contract, at_work, "find_definitions"),
        ToolGate::NotAllowedHere {
            state: "WORK".into(),
            phase: "WORK".into(),
            allowed: vec!["search_files".into(), "search_text".into()],
        }
    );
    assert_eq!(gate(&contract, at_work, "rm_rf"), ToolGate::Unknown);
    // A finished session allows only session tools; the submit tool too is refused.
    let mut done = at_work.clone();
    done.state = "DONE".into();
    for tool in ["search_files", "submit_phase"] {
        assert_eq!(
            gate(&contract, &done, tool),
            ToolGate::NotAllowedHere {
                state: "DONE".into(),
                phase: "DONE".into(),
                allowed: vec![],
            }
        );
    }
    assert_eq!(gate(&contract, &done, "start_session"), ToolGate::Allowed);
    let mut lost = at_work.clone();
    lost.state = "GONE".into();
    assert_eq!(
        gate(&contract, &lost, "search_files"),
        ToolGate::UnknownState {
            state: "GONE".into()
        }
    );
}
