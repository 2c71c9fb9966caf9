//! What agents read: the self-contained phase response (`phase`, `step`, `instruction`,
//! `expected_payload`, `call`) and rendered messages.

use serde::Serialize;
use serde_json::{Map, Value};

use super::instance::Instance;
use crate::contract::Contract;
use crate::contract::model::{State, StateKind};
use crate::contract::template_roots::TemplateRoot;

/// A message rendered in the session's locale.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RenderedMessage {
    /// The stable message key (`common_failures.summary_required`).
    pub key: String,
    /// The response error code, for failures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub text: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub user_intervention: bool,
}

/// The current phase, self-contained so an agent that lost its context can continue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseResponse {
    pub phase: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub substep: Option<String>,
    /// The state id (differs from `phase` for sub-steps).
    pub state: String,
    pub instruction: String,
    pub expected_payload: Value,
    /// The tool to call next, or `null` when the session is over or the host acts next.
    pub call: Option<String>,
}

impl PhaseResponse {
    /// The phase as its serde form, built by hand so it cannot fail: hosts flatten it into
    /// their replies.
    pub fn to_map(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("phase".into(), Value::String(self.phase.clone()));
        if let Some(step) = self.step {
            map.insert("step".into(), Value::from(step));
        }
        if let Some(substep) = &self.substep {
            map.insert("substep".into(), Value::String(substep.clone()));
        }
        map.insert("state".into(), Value::String(self.state.clone()));
        map.insert(
            "instruction".into(),
            Value::String(self.instruction.clone()),
        );
        map.insert("expected_payload".into(), self.expected_payload.clone());
        map.insert(
            "call".into(),
            self.call.clone().map_or(Value::Null, Value::String),
        );
        map
    }
}

/// Renders `{placeholder}`s from `args`; lists are joined with ", ". Unknown placeholders
/// stay as written (lint makes sure that does not happen in a checked contract).
pub fn fill(text: &str, args: &Map<String, Value>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end) if args.contains_key(&after[..end]) => {
                out.push_str(&display(&args[&after[..end]]));
                rest = &after[end + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn display(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Array(items) => items.iter().map(display).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// Renders message `key` in `locale`. A key the contract lacks renders as the key itself
/// with an `undefined_message` error code rather than failing: lint prevents this case.
pub fn message(
    contract: &Contract,
    key: &str,
    args: &Map<String, Value>,
    locale: &str,
) -> RenderedMessage {
    match contract.messages.get(key) {
        Some(m) => RenderedMessage {
            key: key.to_string(),
            error: m.error.clone(),
            text: fill(m.text.get(locale, contract.default_locale()), args),
            user_intervention: m.user_intervention,
        },
        None => RenderedMessage {
            key: key.to_string(),
            error: Some("undefined_message".into()),
            text: key.to_string(),
            user_intervention: false,
        },
    }
}

/// Renders the message an engine role maps to.
pub fn role_message(
    contract: &Contract,
    role: &str,
    args: &[(&str, Value)],
    locale: &str,
) -> RenderedMessage {
    let key = contract
        .engine_messages
        .get(role)
        .map_or(role, String::as_str);
    let args: Map<String, Value> = args
        .iter()
        .map(|(k, v)| ((*k).to_string(), v.clone()))
        .collect();
    message(contract, key, &args, locale)
}

/// The response for the instance's current state.
pub fn phase_response(contract: &Contract, instance: &Instance) -> PhaseResponse {
    let Some(id) = contract.state_id(&instance.state) else {
        return PhaseResponse {
            phase: instance.state.clone(),
            step: None,
            substep: None,
            state: instance.state.clone(),
            instruction: String::new(),
            expected_payload: Value::Null,
            call: None,
        };
    };
    let state = contract.state(id);
    PhaseResponse {
        phase: state.phase.clone(),
        step: state.step,
        substep: state.substep.clone(),
        state: state.id.clone(),
        instruction: instruction(contract, instance),
        expected_payload: state.expected_payload.clone(),
        call: contract
            .call
            .clone()
            .filter(|_| state.kind == StateKind::External),
    }
}

/// What instruction templates read: exactly the roots of [`TemplateRoot::ALL`], which is
/// also what lint checks templates against (`unknown-template-name`).
fn template_context(state: &State, instance: &Instance) -> Map<String, Value> {
    let mut guard_roots = instance.guard_roots();
    let mut from_guards = |name: &str| guard_roots.remove(name).unwrap_or(Value::Null);
    TemplateRoot::ALL
        .into_iter()
        .map(|root| {
            let value = match root {
                TemplateRoot::Flags
                | TemplateRoot::Intent
                | TemplateRoot::Params
                | TemplateRoot::Counters
                | TemplateRoot::Tasks
                | TemplateRoot::Vars => from_guards(root.name()),
                TemplateRoot::Phase => Value::String(state.phase.clone()),
                TemplateRoot::Step => state.step.map_or(Value::Null, Value::from),
                TemplateRoot::State => Value::String(state.id.clone()),
                TemplateRoot::NextTask => instance
                    .tasks
                    .iter()
                    .find(|t| t.is_pending())
                    .map_or(Value::Null, super::instance::Task::to_value),
            };
            (root.name().to_string(), value)
        })
        .collect()
}

/// [`template_context`] as minijinja reads it.
fn template_value(state: &State, instance: &Instance) -> minijinja::Value {
    minijinja::Value::from(minijinja::value::Serde(Value::Object(template_context(
        state, instance,
    ))))
}

/// Renders the current state's instruction template. The contract's footer is not part
/// of it: the host sends [`footer`] when it matters (for code-intel, once per session and
/// again after a compaction), rather than repeating it in every response.
pub(crate) fn instruction(contract: &Contract, instance: &Instance) -> String {
    let Some(id) = contract.state_id(&instance.state) else {
        return String::new();
    };
    let state = contract.state(id);
    let ctx = template_value(state, instance);
    for name in [
        format!("{}.{}", state.id, instance.locale),
        format!("{}.{}", state.id, contract.default_locale()),
    ] {
        if let Ok(template) = contract.templates.get_template(&name) {
            let text = template
                .render(&ctx)
                .unwrap_or_else(|e| format!("(instruction could not be rendered: {e})"));
            return if text.trim().is_empty() {
                String::new()
            } else {
                text
            };
        }
    }
    String::new()
}

/// The contract's `instruction_footer` rendered for the instance's current state, when
/// that state is external (an agent acts next) and the footer is not blank.
pub fn footer(contract: &Contract, instance: &Instance) -> Option<String> {
    let state = contract.state(contract.state_id(&instance.state)?);
    if state.kind != StateKind::External {
        return None;
    }
    let template = contract
        .templates
        .get_template(&format!("__footer.{}", instance.locale))
        .ok()?;
    let text = template.render(template_value(state, instance)).ok()?;
    (!text.trim().is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::source::Sources;

    /// Hosts flatten the phase into their replies: the hand-built form is the serde one.
    #[test]
    fn a_phase_as_a_map_is_its_serde_form() {
        for (step, substep, call) in [
            (Some(3), Some("3a".to_string()), Some("submit".to_string())),
            (None, None, None),
        ] {
            let phase = PhaseResponse {
                phase: "P".into(),
                step,
                substep,
                state: "S".into(),
                instruction: "do it".into(),
                expected_payload: json!({"type": "object"}),
                call,
            };
            assert_eq!(
                Value::Object(phase.to_map()),
                serde_json::to_value(&phase).unwrap()
            );
        }
    }

    #[test]
    fn the_template_context_holds_exactly_the_template_roots() {
        let text = "contract: t\nversion: 1\nhost: agent-runner\nlocales: [en]\ninitial: ASK\n\
            vars: {base: {type: string}}\n\
            states:\n  ASK: {step: 3, payload: {type: object}, instruction: \"{{ state }} {{ step }} {{ vars.base }}\", otherwise: {to: END}}\n  END: {kind: terminal}\n";
        let mut sources = Sources::default();
        let file = sources.add("t.yml", text);
        let contract =
            crate::contract::load(&mut sources, file, &crate::contract::registry::test_hosts())
                .contract
                .unwrap();
        let mut instance: Instance = serde_json::from_value(json!({
            "contract": "t", "state": "ASK", "flags": {}, "intent": "DEFAULT", "locale": "en",
            "params": {}, "counters": {}, "tasks": [], "vars": {"base": "main"}, "summaries": [],
            "steps_taken": 0
        }))
        .unwrap();
        let state = contract.state(contract.initial);
        let mut names: Vec<String> = template_context(state, &instance).keys().cloned().collect();
        names.sort_unstable();
        let mut roots: Vec<&str> = TemplateRoot::ALL.iter().map(|r| r.name()).collect();
        roots.sort_unstable();
        assert_eq!(names, roots);
        assert_eq!(super::instruction(&contract, &instance), "ASK 3 main");
        instance.vars.clear();
        assert_eq!(super::instruction(&contract, &instance), "ASK 3 ");
    }
}
