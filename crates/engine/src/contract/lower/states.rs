//! States: the initial state, each state's payload schema, `run:` actions, tools, checks
//! and transitions, and resolving state names.
//!
//! A state's guards see the base environment plus `payload` (from its payload schema) and,
//! in an engine state, `result` (one field per `run:` action, named by its `bind`).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::lowerer::Lowerer;
use crate::contract::expected::describe_payload;
use crate::contract::model::{ActionCall, Check, Counter, Performer, State, StateId, Transition};
use crate::contract::raw::{RawContract, RawState, StateKind};
use crate::contract::registry::ActionSpec;
use crate::guard::check::TypeEnv;
use crate::guard::types::Ty;

/// What lowering a payload schema gives a state.
struct Payload {
    /// The schema with the shared `payload_defs` merged into its `$defs`.
    schema: Option<Value>,
    validator: Option<jsonschema::Validator>,
    /// What guards see as `payload`.
    ty: Ty,
    expected: Value,
}

impl Lowerer<'_> {
    /// The initial state; `StateId(0)` stands in for an unknown one, which is reported
    /// (the contract records `initial_known: false`).
    pub(super) fn initial_state(&mut self, raw: &RawContract) -> StateId {
        if let Some(id) = self.state_index.get(&raw.initial) {
            return *id;
        }
        self.report(
            "unknown-transition-target",
            format!("initial state `{}` does not exist", raw.initial),
            "/initial",
            Some(self.known_states_help()),
        );
        StateId(0)
    }

    /// Every state in name order (the order of [`StateId`]s), or `None` when there is none.
    pub(super) fn states(
        &mut self,
        raw: &RawContract,
        base_env: &TypeEnv,
        counters: &[Counter],
        templates: &mut minijinja::Environment<'static>,
    ) -> Option<Vec<State>> {
        if raw.states.is_empty() {
            self.report(
                "schema-violation",
                "a contract needs at least one state",
                "/states",
                None,
            );
            return None;
        }
        // One environment for every state, with its `payload` and `result` swapped in:
        // cloning the base per state would copy every flag, counter and param each time.
        let mut env = base_env.clone();
        let mut states = Vec::with_capacity(raw.states.len());
        for (name, s) in &raw.states {
            states.push(self.state(name, s, raw, &mut env, counters, templates));
        }
        Some(states)
    }

    fn state(
        &mut self,
        name: &str,
        s: &RawState,
        raw: &RawContract,
        env: &mut TypeEnv,
        counters: &[Counter],
        templates: &mut minijinja::Environment<'static>,
    ) -> State {
        let p = format!("/states/{name}");
        let phase = s.phase.clone().unwrap_or_else(|| name.to_string());
        let payload = self.payload(name, s, raw);
        // `env` is the base environment here: `run:` arguments see no payload or result.
        let (run, result_ty) = self.run(&p, s, env);
        env.roots.insert("payload".into(), payload.ty);
        if s.kind == StateKind::Engine {
            env.roots.insert("result".into(), result_ty);
        }
        self.check_tools(&p, s, raw.call.as_deref());
        let checks = self.checks(&p, s, env);
        let (transitions, otherwise) = self.transitions(&p, s, env, counters);
        env.roots.remove("payload");
        env.roots.remove("result");
        if s.kind == StateKind::Terminal && (!s.transitions.is_empty() || s.otherwise.is_some()) {
            self.report_key(
                "schema-violation",
                format!("terminal state `{name}` has transitions"),
                &p,
                Some("remove them or make the state `external` or `engine`".into()),
            );
        }
        let instruction = self.instruction(name, s, templates);

        State {
            id: name.to_string(),
            kind: s.kind,
            step: s.step,
            label: s.label.clone().unwrap_or_else(|| phase.clone()),
            phase,
            substep: s.substep.clone(),
            has_instruction: instruction.is_some(),
            instruction,
            // The default locale's text: an overlay may replace one locale's text and keep
            // the others, and the merged mapping keeps the built-in file's place.
            instruction_span: s.instruction.is_some().then(|| {
                let locale = self.locales.first().map_or("en", String::as_str);
                self.value_span(&format!("{p}/instruction/{locale}"))
            }),
            payload_span: s
                .payload
                .is_some()
                .then(|| self.value_span(&format!("{p}/payload"))),
            allowed_tools_span: (!s.allowed_tools.is_empty())
                .then(|| self.value_span(&format!("{p}/allowed_tools"))),
            required_tools_span: (!s.required_tools.is_empty())
                .then(|| self.value_span(&format!("{p}/required_tools"))),
            payload_schema: payload.schema,
            validator: payload.validator,
            expected_payload: payload.expected,
            required_tools: s.required_tools.clone(),
            min_distinct_tools: s.min_distinct_tools,
            allowed_tools: s.allowed_tools.clone(),
            persist: s.persist.clone(),
            field_messages: s.field_messages.clone(),
            checks,
            run,
            transitions,
            // A fallback whose target does not exist is reported and dropped; this keeps
            // `dead-end-state` from reporting the state a second time.
            fallback_dropped: s.otherwise.is_some() && otherwise.is_none(),
            otherwise,
            outcome: s.outcome,
            span: self.key_span(&p),
        }
    }

    /// Compiles the state's payload schema. An external state needs one: it is what the
    /// agent submits.
    fn payload(&mut self, name: &str, s: &RawState, raw: &RawContract) -> Payload {
        let p = format!("/states/{name}");
        let Some(schema) = &s.payload else {
            if s.kind == StateKind::External {
                self.report_key(
                    "invalid-payload-schema",
                    format!("external state `{name}` has no payload schema"),
                    &p,
                    Some("add `payload:` with a JSON Schema of what the agent submits".into()),
                );
            }
            return Payload {
                schema: None,
                validator: None,
                ty: Ty::Object {
                    fields: BTreeMap::new(),
                    open: false,
                },
                expected: Value::Object(Map::new()),
            };
        };
        let mut full = schema.clone();
        if let Value::Object(obj) = &mut full
            && !raw.payload_defs.is_empty()
        {
            // Shared definitions join the state's own `$defs`; the state's win.
            let defs = obj
                .entry("$defs")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(defs) = defs {
                for (k, v) in &raw.payload_defs {
                    defs.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        let validator = match jsonschema::options()
            .should_validate_formats(true)
            .build(&full)
        {
            Ok(v) => Some(v),
            Err(e) => {
                // The error is about a place inside the schema: point there (the property
                // whose schema is wrong), not at the payload as a whole.
                let inside = e.instance_path().as_str().to_string();
                let message = if inside.ends_with("/type") {
                    format!(
                        "payload schema of `{name}`: {} is not a JSON Schema type; the types are: array, boolean, integer, null, number, object, string",
                        e.instance()
                    )
                } else {
                    format!("payload schema of `{name}` is invalid: {e}")
                };
                self.report(
                    "invalid-payload-schema",
                    message,
                    &format!("{p}/payload{inside}"),
                    Some("write a JSON Schema (draft 2020-12) object".into()),
                );
                None
            }
        };
        Payload {
            ty: Ty::from_schema(schema, &raw.payload_defs),
            expected: describe_payload(schema, &raw.payload_defs),
            schema: Some(full),
            validator,
        }
    }

    /// Lowers the state's `run:` actions and the type of the `result` they produce.
    fn run(&mut self, p: &str, s: &RawState, base_env: &TypeEnv) -> (Vec<ActionCall>, Ty) {
        let run = self.actions(&s.run, &format!("{p}/run"), base_env);
        let mut result_fields = Vec::new();
        for (i, call) in run.iter().enumerate() {
            // Built-in task actions change the task list on a transition and have no
            // result a guard could read.
            if let Performer::Engine(_) = call.performer {
                self.report(
                    "unknown-action",
                    format!(
                        "`{}` is applied by the engine on a transition; it cannot be run",
                        call.name
                    ),
                    &format!("{p}/run/{i}"),
                    Some("`run:` takes host actions, whose results the state's guards read".into()),
                );
            }
            let ty = self
                .registry
                .action(&call.name)
                .map_or(Ty::Any, ActionSpec::result_ty);
            result_fields.push((call.bind.clone(), ty));
        }
        (run, Ty::object(result_fields))
    }

    fn check_tools(&mut self, p: &str, s: &RawState, call: Option<&str>) {
        for (list, what) in [
            (&s.required_tools, "required_tools"),
            (&s.allowed_tools, "allowed_tools"),
        ] {
            for (i, tool) in list.iter().enumerate() {
                self.check_tool(tool, &format!("{p}/{what}/{i}"));
            }
        }
        // The submit tool and session tools never count as evidence, so requiring one
        // could never be satisfied.
        for (i, tool) in s.required_tools.iter().enumerate() {
            let tool = tool.as_str();
            if call == Some(tool) || self.registry.ungated_tools.contains(&tool) {
                self.report(
                    "unknown-tool",
                    format!("`{tool}` cannot be required: calling it is not evidence of work"),
                    &format!("{p}/required_tools/{i}"),
                    Some("require the tools the work needs (search, definitions, ...)".into()),
                );
            }
        }
    }

    fn checks(&mut self, p: &str, s: &RawState, env: &TypeEnv) -> Vec<Check> {
        s.checks
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let cp = format!("{p}/checks/{i}");
                let guard = self.condition(&c.require, &format!("{cp}/require"), env);
                let message = self.message_ref(&c.message, &format!("{cp}/message"), env);
                Check { guard, message }
            })
            .collect()
    }

    /// The guarded transitions, which need `when`, and the `otherwise` fallback, which
    /// takes none.
    fn transitions(
        &mut self,
        p: &str,
        s: &RawState,
        env: &TypeEnv,
        counters: &[Counter],
    ) -> (Vec<Transition>, Option<Transition>) {
        let transitions = s
            .transitions
            .iter()
            .enumerate()
            .filter_map(|(i, t)| {
                let tp = format!("{p}/transitions/{i}");
                if t.when.is_none() {
                    self.report(
                        "schema-violation",
                        "a guarded transition needs `when`; put the unconditional one under `otherwise`",
                        &tp,
                        None,
                    );
                }
                self.transition(t, &tp, env, counters)
            })
            .collect();
        let otherwise = s.otherwise.as_ref().and_then(|t| {
            let tp = format!("{p}/otherwise");
            if t.when.is_some() {
                self.report(
                    "schema-violation",
                    "`otherwise` is the fallback and takes no `when`",
                    &format!("{tp}/when"),
                    None,
                );
            }
            self.transition(t, &tp, env, counters)
        });
        (transitions, otherwise)
    }

    /// Resolves the state name at `pointer` (a transition's or redirect's `to`).
    pub(super) fn target(&mut self, name: &str, pointer: &str) -> Option<StateId> {
        if let Some(id) = self.state_index.get(name) {
            return Some(*id);
        }
        let help = self.known_states_help();
        self.report(
            "unknown-transition-target",
            format!("state `{name}` does not exist"),
            pointer,
            Some(help),
        );
        None
    }

    fn known_states_help(&self) -> String {
        let mut names: Vec<&str> = self.state_index.keys().map(String::as_str).collect();
        names.sort_unstable();
        format!("known states: {}", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::{HEADER, found, lower_yaml};

    #[test]
    fn an_unknown_initial_state_is_reported_and_the_first_state_stands_in() {
        let text = format!("{HEADER}initial: START\nstates: {{A: {{kind: terminal}}}}\n");
        let (contract, diagnostics) = lower_yaml(&text);
        assert_eq!(found(&diagnostics), ["5:10 unknown-transition-target"]);
        assert_eq!(diagnostics[0].help.as_deref(), Some("known states: A"));
        let contract = contract.unwrap();
        assert_eq!(contract.initial.0, 0);
        assert!(!contract.initial_known);
    }

    #[test]
    fn payload_schemas_get_the_shared_defs_and_are_checked() {
        let text = format!(
            "{HEADER}{}",
            concat!(
                "payload_defs: {id: {type: string}}\n",
                "initial: ASK\n",
                "states:\n",
                "  ASK:\n",
                "    instruction: \"Ask.\"\n",
                "    payload: {type: object, properties: {id: {$ref: \"#/$defs/id\"}}}\n",
                "    required_tools: [grep]\n",
                "    transitions: [{when: \"payload.id == 'x'\", to: BAD}]\n",
                "    otherwise: {to: END}\n",
                "  BAD: {instruction: \"Bad.\", payload: {type: 12}, otherwise: {to: END}}\n",
                "  END: {kind: terminal}\n",
                "  NONE: {instruction: \"None.\", otherwise: {to: END}}\n",
            )
        );
        let (contract, diagnostics) = lower_yaml(&text);
        assert_eq!(
            found(&diagnostics),
            [
                "11:22 unknown-tool",
                "14:46 invalid-payload-schema",
                "16:3 invalid-payload-schema",
            ]
        );
        assert_eq!(
            diagnostics[0].help.as_deref(),
            Some("host `agent-runner` provides no tools")
        );
        let contract = contract.unwrap();
        let ask = contract.state(contract.initial);
        // The guard on `payload.id` type-checked through the shared definition.
        assert!(ask.transitions[0].guard.as_ref().unwrap().expr.is_some());
        assert_eq!(
            ask.payload_schema.as_ref().unwrap()["$defs"]["id"],
            json!({"type": "string"})
        );
        assert!(ask.validator.is_some());
        let bad = contract.state(contract.state_id("BAD").unwrap());
        assert!(bad.validator.is_none() && bad.payload_schema.is_some());
    }
}
