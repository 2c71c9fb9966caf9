//! Runs one scenario through the session driver with a scripted host: facts and action
//! results come from the scenario; every step's expectations are checked; the rules that
//! fired are recorded for coverage.

use serde_json::{Map, Value};

use super::model::{Expect, Scenario};
use crate::contract::Contract;
use crate::machine::{Effect, Instance};
use crate::session::{ActionFailure, Driver, Host, NoCheckpoints, Stop, Turn};
use crate::source::Span;

/// A rule of the contract that fired: a state's transition (`None`: its `otherwise`), or
/// a counter's `on_limit` redirect.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Taken {
    Transition { state: String, index: Option<usize> },
    Redirect { counter: String, index: usize },
}

/// A step whose expectations did not hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// 0 for the start, then the 1-based number of the step.
    pub step: usize,
    pub span: Span,
    pub message: String,
}

/// How one scenario went.
#[derive(Debug, Clone)]
pub struct ScenarioRun {
    pub name: String,
    pub span: Span,
    /// The first failure: later steps do not run, as they would start from the wrong place.
    pub failure: Option<Failure>,
    pub taken: Vec<Taken>,
}

/// A host whose facts and action results are a scenario's (`results` by action name;
/// `{fail: OUTCOME}` fails the action, `{sequence: [...]}` answers call by call).
pub struct ScriptedHost {
    facts: Map<String, Value>,
    results: Map<String, Value>,
    /// How many times each action was performed, for `{sequence: [...]}` results.
    calls: std::collections::HashMap<String, usize>,
}

impl ScriptedHost {
    pub fn new(facts: Map<String, Value>, results: Map<String, Value>) -> ScriptedHost {
        ScriptedHost {
            facts,
            results,
            calls: std::collections::HashMap::new(),
        }
    }
}

/// One scripted result: `{fail: OUTCOME}` is a failure, anything else the value.
fn scripted(v: &Value) -> Result<Value, ActionFailure> {
    match v {
        Value::Object(o) if o.len() == 1 && o.contains_key("fail") => {
            let outcome = o.get("fail").and_then(Value::as_str).unwrap_or("failed");
            Err(ActionFailure::new(outcome))
        }
        v => Ok(v.clone()),
    }
}

impl Host for ScriptedHost {
    fn perform(&mut self, effect: &Effect) -> Result<Value, ActionFailure> {
        let call = self.calls.entry(effect.action.clone()).or_default();
        let n = *call;
        *call += 1;
        match self.results.get(&effect.action) {
            Some(Value::Object(o)) if o.len() == 1 && o.contains_key("sequence") => {
                let list = o.get("sequence").and_then(Value::as_array);
                match list.and_then(|l| l.get(n).or(l.last())) {
                    Some(v) => scripted(v),
                    None => Ok(Value::Null),
                }
            }
            Some(v) => scripted(v),
            None => Ok(Value::Null),
        }
    }

    fn facts(&mut self) -> Map<String, Value> {
        self.facts.clone()
    }
}

/// What a turn did, in the words a scenario uses.
struct Outcome {
    state: String,
    message: Option<String>,
    rejected: Option<String>,
    finished: Option<String>,
    action_failed: Option<String>,
    limits: Vec<String>,
}

fn outcome(turn: &Turn) -> Outcome {
    let mut message = turn
        .steps
        .iter()
        .rev()
        .find_map(|s| s.message.as_ref().map(|m| m.key.clone()));
    let mut rejected = None;
    let mut finished = None;
    let mut action_failed = None;
    match &turn.stop {
        Stop::Refused(r) => {
            rejected = Some(r.message.key.clone());
            message = rejected.clone();
        }
        Stop::ActionFailed(f) => {
            action_failed = Some(f.failure.outcome.clone());
            message = Some(f.message.key.clone());
        }
        Stop::Finished(o) => {
            finished = Some(
                o.map_or("none", crate::contract::model::Outcome::as_str)
                    .to_string(),
            );
        }
        Stop::Waiting
        | Stop::CheckpointFailed(_)
        | Stop::WrongContract { .. }
        | Stop::EngineLoop { .. } => {}
    }
    Outcome {
        state: turn.instance.state.clone(),
        message,
        rejected,
        finished,
        action_failed,
        limits: turn
            .steps
            .iter()
            .filter_map(|s| s.limit_reached.clone())
            .collect(),
    }
}

/// The differences between what a step expected and what happened.
fn check(expect: &Expect, got: &Outcome) -> Vec<String> {
    let mut problems = Vec::new();
    let mut compare = |what: &str, want: &Option<String>, have: Option<&String>| {
        if let Some(want) = want
            && have != Some(want)
        {
            problems.push(format!(
                "expected {what} `{want}`, got {}",
                have.map_or("none".to_string(), |h| format!("`{h}`"))
            ));
        }
    };
    compare("state", &expect.state, Some(&got.state));
    compare("message", &expect.message, got.message.as_ref());
    compare("refusal", &expect.rejected, got.rejected.as_ref());
    compare("finish", &expect.finished, got.finished.as_ref());
    compare(
        "action failure",
        &expect.action_failed,
        got.action_failed.as_ref(),
    );
    if let Some(limit) = &expect.limit
        && !got.limits.contains(limit)
    {
        problems.push(format!(
            "expected the limit of `{limit}` to redirect the step, got {}",
            if got.limits.is_empty() {
                "no limit".to_string()
            } else {
                got.limits.join(", ")
            }
        ));
    }
    // A step that expects success must not have been refused or failed silently.
    if expect.rejected.is_none()
        && let Some(r) = &got.rejected
    {
        problems.push(format!("the step was refused: `{r}`"));
    }
    if expect.action_failed.is_none()
        && let Some(a) = &got.action_failed
    {
        problems.push(format!("a host action failed: `{a}`"));
    }
    problems
}

fn record(turn: &Turn, contract: &Contract, taken: &mut Vec<Taken>) {
    for s in &turn.steps {
        taken.push(Taken::Transition {
            state: s.from.clone(),
            index: s.transition,
        });
        if let (Some(counter), Some(index)) = (&s.limit_reached, s.redirect)
            && contract.counters.iter().any(|c| &c.name == counter)
        {
            taken.push(Taken::Redirect {
                counter: counter.clone(),
                index,
            });
        }
    }
}

/// Runs `scenario` against `contract`.
pub fn run(contract: &Contract, scenario: &Scenario) -> ScenarioRun {
    let mut report = ScenarioRun {
        name: scenario.name.clone(),
        span: scenario.span,
        failure: None,
        taken: Vec::new(),
    };
    let driver = Driver::new(contract);
    let host_for = |facts: &Map<String, Value>, results: &Map<String, Value>| {
        let mut all_facts = scenario.facts.clone();
        all_facts.extend(facts.clone());
        let mut all_results = scenario.results.clone();
        all_results.extend(results.clone());
        ScriptedHost::new(all_facts, all_results)
    };
    let first = scenario.steps.first();
    let mut host = host_for(
        first.map(|s| &s.facts).unwrap_or(&Map::new()),
        first.map(|s| &s.results).unwrap_or(&Map::new()),
    );
    let turn = match driver.start(
        &mut host,
        &mut NoCheckpoints,
        &scenario.flags,
        scenario.intent.as_deref(),
        scenario.locale.as_deref(),
        &scenario.params,
    ) {
        Ok(turn) => turn,
        Err(e) => {
            let key = match &e {
                crate::session::StartFailure::Flags(f) => f.key(),
                crate::session::StartFailure::Start(s) => s.key(),
            };
            let expected = first.and_then(|s| s.expect.start_error.as_deref());
            report.failure = match expected {
                Some(want) if want == key => None,
                Some(want) => Some(Failure {
                    step: 1,
                    span: first.map_or(scenario.span, |s| s.span),
                    message: format!("expected the start to fail with `{want}`, got `{key}`: {e}"),
                }),
                None => Some(Failure {
                    step: 0,
                    span: scenario.span,
                    message: format!("the session did not start ({key}): {e}"),
                }),
            };
            return report;
        }
    };
    if let Some(want) = first.and_then(|s| s.expect.start_error.as_ref()) {
        report.failure = Some(Failure {
            step: 1,
            span: first.map_or(scenario.span, |s| s.span),
            message: format!("expected the start to fail with `{want}`, but the session started"),
        });
        return report;
    }
    record(&turn, contract, &mut report.taken);
    let mut instance: Instance = turn.instance.clone();
    let mut last = outcome(&turn);
    for (n, step) in scenario.steps.iter().enumerate() {
        if let Some(payload) = &step.submit {
            let mut host = host_for(&step.facts, &step.results);
            let turn = driver.submit(
                &mut host,
                &mut NoCheckpoints,
                instance,
                payload.clone(),
                step.tools.clone(),
            );
            record(&turn, contract, &mut report.taken);
            last = outcome(&turn);
            instance = turn.instance;
        }
        let mut problems = check(&step.expect, &last);
        for (name, want) in &step.expect.counters {
            let have = instance
                .counters
                .get(name)
                .copied()
                .map_or(Value::Null, Value::from);
            if &have != want {
                problems.push(format!("expected counter `{name}` = {want}, got {have}"));
            }
        }
        for (name, want) in &step.expect.vars {
            let have = instance.vars.get(name).cloned().unwrap_or(Value::Null);
            if &have != want {
                problems.push(format!("expected var `{name}` = {want}, got {have}"));
            }
        }
        if !problems.is_empty() {
            report.failure = Some(Failure {
                step: n + 1,
                span: step.span,
                message: problems.join("; "),
            });
            return report;
        }
        // What a step without a submission checks is the previous turn, once.
        last.rejected = None;
        last.action_failed = None;
    }
    report
}
