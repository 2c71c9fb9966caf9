//! The interpreter: a pure function from (contract, instance, event) to a transition or a
//! rejection. No IO, no clock, no async; a rejection never changes the instance.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Map, Value};

use super::instance::{Instance, Summary};
use super::response::{PhaseResponse, RenderedMessage, message, phase_response, role_message};
use super::tasks;
use super::tools::{EvidenceProblem, check_evidence};
use crate::contract::Contract;
use crate::contract::model::{
    ActionCall, CounterId, Guard, LimitValue, MessageRef, Performer, Redirect, State, Transition,
};
use crate::contract::model::{CounterScope, StateKind};
use crate::contract::registry::BuiltinAction;
use crate::guard::eval::{Context, eval, eval_condition};

/// What happened that the machine must react to.
#[derive(Debug, Clone)]
pub enum Input {
    /// An agent submitted a payload for an external state. `tools_called` are the tools
    /// the host saw succeed while the session was in this state.
    Submit {
        payload: Value,
        tools_called: Vec<String>,
    },
    /// The host ran an engine state's actions; results are keyed by each action's `bind`.
    Results { results: Map<String, Value> },
    /// The session is cancelled from outside: it moves to the contract's `on_cancel`
    /// state, whatever state it is in (but a terminal one).
    Cancel,
}

#[derive(Debug, Clone)]
pub struct Event {
    pub input: Input,
    /// Facts the host observed for this step (`facts.NAME` in guards).
    pub facts: Map<String, Value>,
}

/// A host action to perform: a transition's side effect (performed in order after the
/// step, before the host commits the new instance), or an engine state's `run` action
/// (performed before the step; its result is read as `result.BIND`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effect {
    pub action: String,
    pub args: Map<String, Value>,
    /// The name its result is bound to.
    pub bind: String,
    /// The message to show for each failure outcome the contract maps.
    pub on_failure: BTreeMap<String, MessageRequest>,
    /// Seconds the host gives the action (`timeout:`), for the host to enforce.
    pub timeout_secs: Option<u32>,
    /// More attempts the driver makes after a failure with one of these outcomes.
    pub retry: Option<RetryPolicy>,
    /// Which attempt this is, from 1; the driver counts retries.
    pub attempt: u32,
}

/// A retry rule with its count resolved for the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RetryPolicy {
    pub max: u32,
    pub on: Vec<String>,
}

/// A message the host renders when an effect fails with a mapped outcome. `args` holds
/// the values the contract gives, evaluated during the step while the data was there;
/// the host adds the outcome's own values (`details`, `file_path`, ...).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageRequest {
    pub key: String,
    pub args: Map<String, Value>,
}

/// An accepted step (the contract's `Transition` is the rule; this is one taken).
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    pub from: String,
    pub to: String,
    pub instance: Instance,
    pub effects: Vec<Effect>,
    /// The success or warning message of the transition (or of a counter limit).
    pub message: Option<RenderedMessage>,
    /// Which counter limits redirected the step, if any.
    pub limit_reached: Option<String>,
    /// The rule that fired: an index into the state's `transitions`, or `None` for its
    /// `otherwise` (what scenario coverage counts).
    pub transition: Option<usize>,
    /// With `limit_reached`: the index of the counter's `on_limit` redirect that won.
    pub redirect: Option<usize>,
    /// The step is the contract's cancel path (`on_cancel`), not a rule of the state.
    pub cancelled: bool,
}

/// A refused step: the message, and the current phase again so the agent can retry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejection {
    pub message: RenderedMessage,
    pub response: Box<PhaseResponse>,
}

/// The refusal for an instance whose state the contract does not have (a checkpoint of
/// an older contract).
pub fn unknown_state(contract: &Contract, instance: &Instance) -> Rejection {
    let message = role_message(
        contract,
        "unknown_state",
        &[("phase", Value::String(instance.state.clone()))],
        &instance.locale,
    );
    Rejection {
        message,
        response: Box::new(phase_response(contract, instance)),
    }
}

/// Runs one step.
pub fn step(
    contract: &Contract,
    instance: &Instance,
    event: &Event,
) -> Result<Accepted, Rejection> {
    let locale = instance.locale.as_str();
    let reject = |m: RenderedMessage| Rejection {
        message: m,
        response: Box::new(phase_response(contract, instance)),
    };
    let Some(state_id) = contract.state_id(&instance.state) else {
        return Err(unknown_state(contract, instance));
    };
    let state = contract.state(state_id);
    if state.kind == StateKind::Terminal {
        return Err(reject(role_message(
            contract,
            "session_finished",
            &[("state", Value::String(state.id.clone()))],
            locale,
        )));
    }

    let mut roots = roots_with_facts(instance, &event.facts);
    if matches!(event.input, Input::Cancel) {
        let ctx = Context {
            roots: &roots,
            unknown: &[],
        };
        return cancel(contract, instance, state, ctx).map_err(reject);
    }
    let payload = bind_input(contract, state, &event.input, &mut roots, locale).map_err(reject)?;

    let ctx = Context {
        roots: &roots,
        unknown: &[],
    };
    run_checks(contract, state, ctx, locale).map_err(reject)?;
    let (transition, t) = choose_transition(contract, state, ctx, locale).map_err(reject)?;

    let mut next = instance.clone();
    let mut effects = Vec::new();
    run_actions(contract, &t.actions, ctx, &mut next, &mut effects, locale).map_err(reject)?;
    let incremented = apply_counters(contract, t, ctx, &mut next)
        .map_err(|e| reject(guard_failed(contract, &e, locale)))?;
    for (var, g) in &t.set {
        let value = g
            .expr
            .as_ref()
            .map_or(Ok(Value::Null), |e| eval(e, ctx))
            .map_err(|e| reject(guard_failed(contract, &e.message, locale)))?;
        next.vars.insert(var.clone(), value);
    }

    // Counter limits are judged on the instance after the transition's changes.
    let after = next.guard_roots();
    let mut after_roots = roots.clone();
    after_roots.extend(after);
    let after_ctx = Context {
        roots: &after_roots,
        unknown: &[],
    };
    let limit = redirect_on_limit(
        contract,
        &incremented,
        after_ctx,
        &mut next,
        &mut effects,
        locale,
    )
    .map_err(reject)?;
    let (target, msg_ref, limit_reached, redirect) = match limit {
        Some(hit) => (
            hit.redirect.to,
            hit.redirect.message.as_ref().or(t.message.as_ref()),
            Some(hit.counter),
            Some(hit.index),
        ),
        None => (t.to, t.message.as_ref(), None, None),
    };

    if let Some(payload) = payload {
        persist(state, payload, &mut next);
    }
    let message = msg_ref.map(|m| render_ref(contract, m, after_ctx, &Map::new(), locale));
    next.state = contract.state(target).id.clone();
    next.steps_taken += 1;
    Ok(Accepted {
        from: state.id.clone(),
        to: next.state.clone(),
        instance: next,
        effects,
        message,
        limit_reached,
        transition,
        redirect,
        cancelled: false,
    })
}

/// The event's input bound for the guards: a submitted payload for an external state
/// (validated first, and returned to be persisted), an engine state's action results.
/// Any other pairing is refused.
fn bind_input<'e>(
    contract: &Contract,
    state: &State,
    input: &'e Input,
    roots: &mut Map<String, Value>,
    locale: &str,
) -> Result<Option<&'e Value>, RenderedMessage> {
    match (input, state.kind) {
        (
            Input::Submit {
                payload,
                tools_called,
            },
            StateKind::External,
        ) => {
            validate_payload(contract, state, payload, tools_called, locale)?;
            roots.insert("payload".into(), payload.clone());
            Ok(Some(payload))
        }
        (Input::Results { results }, StateKind::Engine) => {
            roots.insert("result".into(), Value::Object(results.clone()));
            Ok(None)
        }
        (input, _) => {
            let details = match input {
                Input::Submit { .. } => {
                    format!("state `{}` is run by the host, not submitted", state.id)
                }
                Input::Results { .. } => {
                    format!("state `{}` waits for a submitted payload", state.id)
                }
                Input::Cancel => unreachable!("`step` answers a cancel before it binds input"),
            };
            Err(role_message(
                contract,
                "payload_invalid",
                &[
                    ("phase", Value::String(state.phase.clone())),
                    ("details", Value::String(details)),
                ],
                locale,
            ))
        }
    }
}

/// The state's checks, in order: the first that does not hold refuses with its message.
fn run_checks(
    contract: &Contract,
    state: &State,
    ctx: Context<'_>,
    locale: &str,
) -> Result<(), RenderedMessage> {
    for check in &state.checks {
        match holds(&check.guard, ctx) {
            Ok(true) => {}
            Ok(false) => {
                return Err(render_ref(
                    contract,
                    &check.message,
                    ctx,
                    &Map::new(),
                    locale,
                ));
            }
            Err(e) => return Err(guard_failed(contract, &e, locale)),
        }
    }
    Ok(())
}

/// The first transition whose guard holds (with its index), else the state's fallback
/// (`otherwise`, with no index).
fn choose_transition<'c>(
    contract: &Contract,
    state: &'c State,
    ctx: Context<'_>,
    locale: &str,
) -> Result<(Option<usize>, &'c Transition), RenderedMessage> {
    for (index, t) in state.transitions.iter().enumerate() {
        let Some(g) = &t.guard else { continue };
        match holds(g, ctx) {
            Ok(true) => return Ok((Some(index), t)),
            Ok(false) => {}
            Err(e) => return Err(guard_failed(contract, &e, locale)),
        }
    }
    match &state.otherwise {
        Some(t) => Ok((None, t)),
        None => Err(guard_failed(
            contract,
            &format!(
                "no transition of `{}` matches and it has no fallback",
                state.id
            ),
            locale,
        )),
    }
}

/// A counter limit this step reached and the redirect it took.
struct LimitHit<'c> {
    /// The counter's name.
    counter: String,
    /// The redirect's index in the counter's `on_limit`.
    index: usize,
    redirect: &'c Redirect,
}

/// Counter limits: the first counter this step brought to its limit that has a redirect
/// whose guard holds wins. The transition's side effects were meant for its own target,
/// so the redirect's actions replace them.
fn redirect_on_limit<'c>(
    contract: &'c Contract,
    incremented: &[Incremented],
    ctx: Context<'_>,
    next: &mut Instance,
    effects: &mut Vec<Effect>,
    locale: &str,
) -> Result<Option<LimitHit<'c>>, RenderedMessage> {
    for (counter_id, tasks_touched) in incremented {
        let counter = contract.counter(*counter_id);
        if !limit_reached_now(contract, *counter_id, tasks_touched.as_ref(), next) {
            continue;
        }
        for (index, r) in counter.on_limit.iter().enumerate() {
            let matches = match &r.guard {
                None => true,
                Some(g) => holds(g, ctx).map_err(|e| guard_failed(contract, &e, locale))?,
            };
            if matches {
                effects.clear();
                run_actions(contract, &r.actions, ctx, next, effects, locale)?;
                return Ok(Some(LimitHit {
                    counter: counter.name.clone(),
                    index,
                    redirect: r,
                }));
            }
        }
    }
    Ok(None)
}

/// The cancel path: straight to the `on_cancel` state with its message, no counters, no
/// actions (cleanup belongs in `finally`, which runs on every exit).
fn cancel(
    contract: &Contract,
    instance: &Instance,
    state: &State,
    ctx: Context<'_>,
) -> Result<Accepted, RenderedMessage> {
    let locale = instance.locale.as_str();
    let Some(rule) = &contract.on_cancel else {
        return Err(guard_failed(
            contract,
            "the session cannot be cancelled: the contract has no `on_cancel`",
            locale,
        ));
    };
    let mut next = instance.clone();
    next.state = contract.state(rule.to).id.clone();
    next.steps_taken += 1;
    let message = rule
        .message
        .as_ref()
        .map(|m| render_ref(contract, m, ctx, &Map::new(), locale));
    Ok(Accepted {
        from: state.id.clone(),
        to: next.state.clone(),
        instance: next,
        effects: Vec::new(),
        message,
        limit_reached: None,
        transition: None,
        redirect: None,
        cancelled: true,
    })
}

fn holds(guard: &Guard, ctx: Context<'_>) -> Result<bool, String> {
    match &guard.expr {
        // A guard that did not parse or check never matches; lint reports it.
        None => Ok(false),
        Some(e) => eval_condition(e, ctx)
            .map(|b| b.unwrap_or(false))
            .map_err(|e| format!("guard `{}`: {}", guard.source, e.message)),
    }
}

fn guard_failed(contract: &Contract, details: &str, locale: &str) -> RenderedMessage {
    role_message(
        contract,
        "guard_failed",
        &[("details", Value::String(details.to_string()))],
        locale,
    )
}

fn render_ref(
    contract: &Contract,
    r: &MessageRef,
    ctx: Context<'_>,
    extra: &Map<String, Value>,
    locale: &str,
) -> RenderedMessage {
    let given = r.args.iter().map(|(name, g)| {
        let v = g.expr.as_ref().and_then(|e| eval(e, ctx).ok());
        (name.clone(), v.unwrap_or(Value::Null))
    });
    let args = merge_message_args(extra, given);
    message(contract, &r.key, &args, locale)
}

/// The values a failure message renders with: the outcome's own, overridden by the ones
/// the contract gives, except where the contract's value is null (it named data that was
/// absent), so a real value from the action is never blanked.
pub fn merge_message_args(
    outcome: &Map<String, Value>,
    given: impl IntoIterator<Item = (String, Value)>,
) -> Map<String, Value> {
    let mut args = outcome.clone();
    for (name, value) in given {
        if value.is_null() && args.contains_key(&name) {
            continue;
        }
        args.insert(name, value);
    }
    args
}

/// Schema, then tool evidence. Returns the message of the first problem.
fn validate_payload(
    contract: &Contract,
    state: &State,
    payload: &Value,
    tools_called: &[String],
    locale: &str,
) -> Result<(), RenderedMessage> {
    let phase = Value::String(state.phase.clone());
    if let Some(validator) = &state.validator {
        let errors: Vec<_> = validator.iter_errors(payload).collect();
        if !errors.is_empty() {
            let details: Vec<String> = errors
                .iter()
                .take(5)
                .map(|e| describe_schema_error(e))
                .collect();
            // A failure at one top-level field may have its own message (`summary_required`).
            // Unexpected fields come first: a payload meant for another phase is a phase
            // mismatch, whatever else is missing from it.
            let unexpected = |e: &jsonschema::ValidationError<'_>| {
                matches!(
                    e.kind(),
                    jsonschema::error::ValidationErrorKind::AdditionalProperties { .. }
                ) && e.instance_path().as_str().is_empty()
            };
            let ordered: Vec<&jsonschema::ValidationError<'_>> = if errors.iter().any(unexpected) {
                errors.iter().filter(|e| unexpected(e)).collect()
            } else {
                errors.iter().collect()
            };
            for e in ordered {
                let Some((field, missing)) = schema_error_field(e) else {
                    continue;
                };
                let lookup = |map: &std::collections::BTreeMap<String, String>| {
                    missing
                        .then(|| map.get(&format!("{field}.required")))
                        .flatten()
                        .or_else(|| map.get(&field))
                        .cloned()
                };
                if let Some(key) =
                    lookup(&state.field_messages).or_else(|| lookup(&contract.field_messages))
                {
                    let args: Map<String, Value> = [
                        ("phase".to_string(), phase.clone()),
                        ("field".to_string(), Value::String(field.clone())),
                        ("details".to_string(), Value::String(details.join("; "))),
                    ]
                    .into_iter()
                    .collect();
                    return Err(message(contract, &key, &args, locale));
                }
            }
            return Err(role_message(
                contract,
                "payload_invalid",
                &[
                    ("phase", phase),
                    ("details", Value::String(details.join("; "))),
                ],
                locale,
            ));
        }
    }
    let (role, details) = match check_evidence(contract, state, payload, tools_called) {
        Ok(()) => return Ok(()),
        Err(EvidenceProblem::NotUsed(tools)) => (
            "required_tools_not_used",
            [("missing_list", Value::String(tools.join(", ")))].to_vec(),
        ),
        Err(EvidenceProblem::NotReported(tools)) => (
            "required_tools_not_reported",
            [("missing_reported", Value::String(tools.join(", ")))].to_vec(),
        ),
        Err(EvidenceProblem::ReportedNotCalled(tools)) => (
            "tools_reported_not_called",
            [("tools", Value::String(tools.join(", ")))].to_vec(),
        ),
        Err(EvidenceProblem::TooFewTools { min, count }) => (
            "min_distinct_tools",
            [("min", Value::from(min)), ("count", Value::from(count))].to_vec(),
        ),
    };
    let mut args = vec![("phase", phase)];
    args.extend(details);
    Err(role_message(contract, role, &args, locale))
}

/// The top-level payload field a schema error is about, and whether it is missing.
fn schema_error_field(e: &jsonschema::ValidationError<'_>) -> Option<(String, bool)> {
    use jsonschema::error::ValidationErrorKind as K;
    let path = e.instance_path().as_str();
    if path.is_empty() {
        return match e.kind() {
            K::Required { property } => property.as_str().map(|p| (p.to_string(), true)),
            K::AdditionalProperties { unexpected } => {
                unexpected.first().map(|p| (p.clone(), false))
            }
            _ => None,
        };
    }
    path.trim_start_matches('/')
        .split('/')
        .next()
        .map(|f| (f.to_string(), false))
}

fn describe_schema_error(e: &jsonschema::ValidationError<'_>) -> String {
    let path = e.instance_path().as_str();
    if path.is_empty() {
        e.to_string()
    } else {
        format!("{}: {e}", path.trim_start_matches('/').replace('/', "."))
    }
}

fn run_actions(
    contract: &Contract,
    calls: &[ActionCall],
    ctx: Context<'_>,
    next: &mut Instance,
    effects: &mut Vec<Effect>,
    locale: &str,
) -> Result<(), RenderedMessage> {
    for call in calls {
        let Some(args) = call_args(contract, call, ctx, locale)? else {
            continue;
        };
        match call.performer {
            Performer::Engine(builtin) => {
                let result = match builtin {
                    BuiltinAction::RegisterTasks => {
                        let task_counters: Vec<&str> = contract
                            .counters
                            .iter()
                            .filter(|c| c.scope == CounterScope::Task)
                            .map(|c| c.name.as_str())
                            .collect();
                        tasks::register(next, &args, &task_counters)
                    }
                    BuiltinAction::CompleteTask => tasks::complete(next, &args),
                    BuiltinAction::RequireAllTasksComplete => tasks::require_all_complete(next),
                };
                if let Err(outcome) = result {
                    return Err(match call.errors.get(outcome.name) {
                        Some(r) => render_ref(contract, r, ctx, &outcome.args, locale),
                        None => role_message(
                            contract,
                            "action_failed",
                            &[
                                ("action", Value::String(call.name.clone())),
                                ("details", Value::String(outcome.name.to_string())),
                            ],
                            locale,
                        ),
                    });
                }
            }
            Performer::Host => effects.push(host_effect(call, args, ctx, next)),
        }
    }
    Ok(())
}

/// The evaluated arguments of an action call, or None when its `when` does not hold.
fn call_args(
    contract: &Contract,
    call: &ActionCall,
    ctx: Context<'_>,
    locale: &str,
) -> Result<Option<Map<String, Value>>, RenderedMessage> {
    if let Some(w) = &call.when
        && !holds(w, ctx).map_err(|e| guard_failed(contract, &e, locale))?
    {
        return Ok(None);
    }
    let mut args = Map::new();
    for (name, g) in &call.args {
        let v = g
            .expr
            .as_ref()
            .map_or(Ok(Value::Null), |e| eval(e, ctx))
            .map_err(|e| guard_failed(contract, &e.message, locale))?;
        args.insert(name.clone(), v);
    }
    Ok(Some(args))
}

/// A host action with its arguments evaluated and its failure messages prepared: the
/// host renders a failure with the outcome's own values, so the values the contract gives
/// for the message are evaluated now, while the data is here.
fn host_effect(
    call: &ActionCall,
    args: Map<String, Value>,
    ctx: Context<'_>,
    instance: &Instance,
) -> Effect {
    let on_failure = call
        .errors
        .iter()
        .map(|(outcome, r)| {
            let args = r
                .args
                .iter()
                .map(|(n, g)| {
                    let value = g.expr.as_ref().and_then(|e| eval(e, ctx).ok());
                    (n.clone(), value.unwrap_or(Value::Null))
                })
                .collect();
            let request = MessageRequest {
                key: r.key.clone(),
                args,
            };
            (outcome.clone(), request)
        })
        .collect();
    Effect {
        action: call.name.clone(),
        args,
        bind: call.bind.clone(),
        on_failure,
        timeout_secs: call.timeout.as_ref().map(|t| amount(t, instance)),
        retry: call.retry.as_ref().map(|r| RetryPolicy {
            max: amount(&r.max, instance),
            on: r.on.clone(),
        }),
        attempt: 1,
    }
}

/// A count written as a number or an int param, for this session.
fn amount(value: &LimitValue, instance: &Instance) -> u32 {
    match value {
        LimitValue::Fixed(n) => *n,
        LimitValue::Param(p) => instance
            .params
            .get(p)
            .and_then(Value::as_u64)
            .map_or(u32::MAX, |n| u32::try_from(n).unwrap_or(u32::MAX)),
    }
}

/// What guards read in a session: its own data and the host's facts.
fn roots_with_facts(instance: &Instance, facts: &Map<String, Value>) -> Map<String, Value> {
    let mut roots = instance.guard_roots();
    roots.insert("facts".into(), Value::Object(facts.clone()));
    roots
}

/// The contract's `finally` actions with their arguments evaluated on the session as it
/// ended, for the host to perform once on its way out. A call whose `when` does not hold
/// is left out; a call whose arguments cannot be evaluated still runs, with those
/// arguments null, because cleanup must not be skipped over a report's detail.
pub fn finally_effects(
    contract: &Contract,
    instance: &Instance,
    facts: &Map<String, Value>,
) -> Vec<Effect> {
    let roots = roots_with_facts(instance, facts);
    let ctx = Context {
        roots: &roots,
        unknown: &[],
    };
    let mut effects = Vec::new();
    for call in &contract.finally {
        let runs = call
            .when
            .as_ref()
            .is_none_or(|w| holds(w, ctx).unwrap_or(true));
        if !runs {
            continue;
        }
        let args = call
            .args
            .iter()
            .map(|(name, g)| {
                let v = g.expr.as_ref().and_then(|e| eval(e, ctx).ok());
                (name.clone(), v.unwrap_or(Value::Null))
            })
            .collect();
        effects.push(host_effect(call, args, ctx, instance));
    }
    effects
}

/// The actions an engine state runs (`run:`) with their arguments evaluated, for the host
/// to perform before it steps with their results. Empty for other states.
pub fn run_effects(
    contract: &Contract,
    instance: &Instance,
    facts: &Map<String, Value>,
) -> Result<Vec<Effect>, Rejection> {
    let locale = instance.locale.as_str();
    let reject = |m: RenderedMessage| Rejection {
        message: m,
        response: Box::new(phase_response(contract, instance)),
    };
    let Some(state_id) = contract.state_id(&instance.state) else {
        return Ok(Vec::new());
    };
    let state = contract.state(state_id);
    if state.kind != StateKind::Engine {
        return Ok(Vec::new());
    }
    let roots = roots_with_facts(instance, facts);
    let ctx = Context {
        roots: &roots,
        unknown: &[],
    };
    // Lowering allows only host actions under `run:`, so nothing here changes the
    // instance: each call just becomes an effect.
    let mut effects = Vec::new();
    for call in &state.run {
        if let Some(args) = call_args(contract, call, ctx, locale).map_err(reject)? {
            effects.push(host_effect(call, args, ctx, instance));
        }
    }
    Ok(effects)
}

/// A counter this step incremented, with the tasks whose counter moved (task scope).
type Incremented = (CounterId, Option<BTreeSet<String>>);

/// Resets, then increments. Returns the counters incremented, in order.
fn apply_counters(
    contract: &Contract,
    t: &Transition,
    ctx: Context<'_>,
    next: &mut Instance,
) -> Result<Vec<Incremented>, String> {
    for c in &t.reset {
        let counter = contract.counter(*c);
        match counter.scope {
            CounterScope::Session => {
                next.counters.insert(counter.name.clone(), 0);
            }
            CounterScope::Task => {
                for task in &mut next.tasks {
                    task.counters.insert(counter.name.clone(), 0);
                }
            }
        }
    }
    let mut incremented = Vec::new();
    for c in &t.increment {
        let name = &contract.counter(*c).name;
        *next.counters.entry(name.clone()).or_default() += 1;
        incremented.push((*c, None));
    }
    for (c, ids) in &t.increment_tasks {
        let name = &contract.counter(*c).name;
        let ids = ids
            .expr
            .as_ref()
            .map_or(Ok(Value::Null), |e| eval(e, ctx))
            .map_err(|e| e.message)?;
        let ids: BTreeSet<&str> = ids
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut touched = BTreeSet::new();
        for task in next
            .tasks
            .iter_mut()
            .filter(|t| ids.contains(t.id.as_str()))
        {
            *task.counters.entry(name.clone()).or_default() += 1;
            touched.insert(task.id.clone());
        }
        incremented.push((*c, Some(touched)));
    }
    Ok(incremented)
}

/// The limit of a counter for this instance (a param limit reads the session's params).
pub(crate) fn limit_of(contract: &Contract, counter: CounterId, instance: &Instance) -> u32 {
    amount(&contract.counter(counter).limit, instance)
}

/// Whether this step made `counter` reach its limit: a session counter's value, or the
/// counter of one of the tasks this step incremented.
fn limit_reached_now(
    contract: &Contract,
    counter: CounterId,
    touched: Option<&BTreeSet<String>>,
    instance: &Instance,
) -> bool {
    let c = contract.counter(counter);
    let limit = limit_of(contract, counter, instance);
    match c.scope {
        CounterScope::Session => instance.counters.get(&c.name).copied().unwrap_or(0) >= limit,
        CounterScope::Task => instance
            .tasks
            .iter()
            .filter(|t| touched.is_some_and(|ids| ids.contains(&t.id)))
            .any(|t| t.counters.get(&c.name).copied().unwrap_or(0) >= limit),
    }
}

/// Keeps the fields a state persists; per-task steps get one summary per task.
fn persist(state: &State, payload: &Value, next: &mut Instance) {
    for field in &state.persist {
        let Some(text) = payload.get(field).and_then(Value::as_str) else {
            continue;
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let mut key = match state.step {
            Some(step) => format!("step_{step:02}_{}", state.id),
            None => state.id.clone(),
        };
        if let Some(task) = payload.get("task_id").and_then(Value::as_str) {
            key = format!("{key}_{task}");
        }
        if field != "summary" {
            key = format!("{key}.{field}");
        }
        next.summaries.retain(|s| s.key != key);
        next.summaries.push(Summary {
            key,
            text: text.to_string(),
        });
    }
}

/// Runs engine states that have no actions of their own (pure routing on flags and facts)
/// until an external or terminal state, one with actions, or a transition that carries
/// host actions is reached: it never drops an effect. Hosts use `session::Driver`, which
/// performs them.
pub fn settle(
    contract: &Contract,
    instance: &Instance,
    facts: &Map<String, Value>,
) -> Result<Instance, Rejection> {
    let mut current = instance.clone();
    for _ in 0..=contract.states.len() {
        let Some(id) = contract.state_id(&current.state) else {
            return Ok(current);
        };
        let state = contract.state(id);
        if state.kind != StateKind::Engine || !state.run.is_empty() {
            return Ok(current);
        }
        let event = Event {
            input: Input::Results {
                results: Map::new(),
            },
            facts: facts.clone(),
        };
        let accepted = step(contract, &current, &event)?;
        if !accepted.effects.is_empty() {
            // Host actions need a host: leave this step to `session::Driver`.
            return Ok(current);
        }
        current = accepted.instance;
    }
    Ok(current)
}
