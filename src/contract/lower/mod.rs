//! Lowering: the raw contract becomes the resolved [`Contract`], collecting every problem
//! instead of stopping at the first.
//!
//! This stage owns the checks that need name resolution: unknown states, counters,
//! actions, tools, messages and paths; guard syntax and types; payload schemas and
//! instruction templates. Whole-graph checks live in `lint::rules`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value};

use super::expected::describe_payload;
use super::model::{
    ActionCall, Check, Contract, Counter, CounterId, Flag, Guard, LimitValue, Localized,
    MatrixColumn, Message, MessageRef, Performer, Redirect, State, StateId, Transition,
};
use super::raw::{
    CounterScope, FlagType, Limit, RawActionCall, RawContract, RawMessageRef, RawRedirect,
    RawState, RawTransition, StateKind, Text, ValueType,
};
use super::registry::{BuiltinAction, Registry};
use super::roles::ENGINE_ROLES;
use crate::diagnostic::Diagnostic;
use crate::guard::check::{CheckErrorKind, TypeEnv, check, check_condition};
use crate::guard::types::Ty;
use crate::guard::{self, Expr};
use crate::source::Span;
use crate::yaml::Node;

/// Fields every task has, whatever the contract declares.
pub fn task_ty(counters: &[Counter]) -> Ty {
    let mut fields: Vec<(String, Ty)> = vec![
        ("id".into(), Ty::string()),
        ("description".into(), Ty::string()),
        ("status".into(), Ty::enumeration(&["pending", "completed"])),
        (
            "checklist".into(),
            Ty::list(Ty::object([
                ("item".to_string(), Ty::string()),
                (
                    "status".to_string(),
                    Ty::enumeration(&["pending", "done", "skipped"]),
                ),
                ("evidence".to_string(), Ty::string().optional()),
                ("reason".to_string(), Ty::string().optional()),
            ])),
        ),
        ("revert_reason".into(), Ty::string().optional()),
    ];
    fields.extend(
        counters
            .iter()
            .filter(|c| c.scope == CounterScope::Task)
            .map(|c| (c.name.clone(), Ty::Number)),
    );
    Ty::object(fields)
}

fn value_ty(kind: ValueType) -> Ty {
    match kind {
        ValueType::Bool => Ty::Bool,
        ValueType::Int | ValueType::Number => Ty::Number,
        ValueType::String => Ty::string(),
        ValueType::StringList => Ty::list(Ty::string()),
    }
}

struct Lowerer<'a> {
    root: &'a Node,
    registry: Registry,
    diagnostics: Vec<Diagnostic>,
    state_index: HashMap<String, StateId>,
    counter_index: HashMap<String, CounterId>,
    locales: Vec<String>,
    /// Declared session variables and their types, for `set:`.
    vars: BTreeMap<String, ValueType>,
}

/// Resolves `raw` (parsed from `root`) against the registry of its host, one of `hosts`.
pub fn lower(
    raw: &RawContract,
    root: &Node,
    hosts: &[Registry],
) -> (Option<Contract>, Vec<Diagnostic>) {
    let Some(registry) = hosts.iter().find(|r| r.host == raw.host).cloned() else {
        let (_, node) = root.locate("/host");
        let known: Vec<&str> = hosts.iter().map(|r| r.host).collect();
        let d = Diagnostic::new(
            "schema-violation",
            format!("unknown host `{}`", raw.host),
            Some(node.span),
        )
        .with_help(format!("known hosts: {}", known.join(", ")));
        return (None, vec![d]);
    };
    let mut l = Lowerer {
        root,
        registry,
        diagnostics: Vec::new(),
        state_index: raw
            .states
            .keys()
            .enumerate()
            .map(|(i, k)| (k.clone(), StateId(i)))
            .collect(),
        counter_index: raw
            .counters
            .keys()
            .enumerate()
            .map(|(i, k)| (k.clone(), CounterId(i)))
            .collect(),
        locales: raw.locales.clone(),
        vars: raw.vars.iter().map(|(n, v)| (n.clone(), v.kind)).collect(),
    };
    let contract = l.contract(raw);
    (contract, l.diagnostics)
}

impl Lowerer<'_> {
    fn span(&self, pointer: &str) -> Span {
        self.root.locate(pointer).1.span
    }

    /// The span of a mapping key when the pointer ends at one (`/states/A`), else the value.
    fn key_span(&self, pointer: &str) -> Span {
        let (key, node) = self.root.locate(pointer);
        key.map_or(node.span, |k| k.span)
    }

    /// Reports a finding at the value the pointer names.
    fn report(
        &mut self,
        code: &'static str,
        message: impl Into<String>,
        pointer: &str,
        help: Option<String>,
    ) {
        let span = self.span(pointer);
        self.push(code, message, span, help);
    }

    /// Like [`Self::report`], but at the mapping key the pointer ends at (a state, argument,
    /// outcome, variable, counter or locale name) when the finding is about that name.
    fn report_key(
        &mut self,
        code: &'static str,
        message: impl Into<String>,
        pointer: &str,
        help: Option<String>,
    ) {
        let span = self.key_span(pointer);
        self.push(code, message, span, help);
    }

    fn push(
        &mut self,
        code: &'static str,
        message: impl Into<String>,
        span: Span,
        help: Option<String>,
    ) {
        let mut d = Diagnostic::new(code, message, Some(span));
        d.help = help;
        self.diagnostics.push(d);
    }

    fn localized(&mut self, text: &Text, pointer: &str, what: &str) -> Localized {
        let texts = match text {
            Text::Single(s) => self
                .locales
                .iter()
                .map(|l| (l.clone(), s.clone()))
                .collect(),
            Text::PerLocale(map) => {
                for locale in &self.locales.clone() {
                    if !map.contains_key(locale) {
                        self.report(
                            "missing-locale-text",
                            format!("{what} has no `{locale}` text"),
                            pointer,
                            Some(format!("add `{locale}:` next to the other locales")),
                        );
                    }
                }
                map.clone()
            }
        };
        Localized { texts }
    }

    fn contract(&mut self, raw: &RawContract) -> Option<Contract> {
        if raw.version != 1 {
            self.report(
                "schema-violation",
                format!("contract format version {} is not supported", raw.version),
                "/version",
                Some("this engine reads `version: 1`".into()),
            );
        }
        if raw.locales.is_empty() {
            self.report(
                "schema-violation",
                "at least one locale is required",
                "/locales",
                None,
            );
        }
        // Flags.
        let mut flags = Vec::new();
        for (name, f) in &raw.flags {
            let p = format!("/flags/{name}");
            let default = match (f.kind, &f.default) {
                (FlagType::Bool, None) => Value::Bool(false),
                (FlagType::Bool, Some(Value::Bool(b))) => Value::Bool(*b),
                (FlagType::Enum, Some(Value::String(v))) if f.values.contains(v) => {
                    Value::String(v.clone())
                }
                (FlagType::Enum, None) if !f.values.is_empty() => {
                    Value::String(f.values[0].clone())
                }
                _ => {
                    self.report("invalid-flag-reference", format!("flag `{name}` has an invalid default"), &format!("{p}/default"), Some("a bool flag defaults to true or false; an enum flag to one of its values".into()));
                    Value::Null
                }
            };
            if f.kind == FlagType::Enum && f.values.is_empty() {
                self.report_key(
                    "invalid-flag-reference",
                    format!("enum flag `{name}` has no values"),
                    &p,
                    None,
                );
            }
            for (abbr, full) in &f.abbreviations {
                if !f.values.contains(full) {
                    self.report(
                        "invalid-flag-reference",
                        format!(
                            "abbreviation `{abbr}` names `{full}`, which is not a value of `{name}`"
                        ),
                        &format!("{p}/abbreviations/{abbr}"),
                        None,
                    );
                }
            }
            let help = self.localized(
                &f.help,
                &format!("{p}/help"),
                &format!("the help of flag `{name}`"),
            );
            flags.push(Flag {
                name: name.clone(),
                kind: f.kind,
                long: f.long.clone().unwrap_or_else(|| name.replace('_', "-")),
                short: f.short.clone(),
                aliases: f.aliases.clone(),
                values: f.values.clone(),
                abbreviations: f.abbreviations.clone(),
                default,
                help,
            });
        }
        let mut conflicts = Vec::new();
        for (i, [a, b]) in raw.conflicts.iter().enumerate() {
            let find = |n: &str| flags.iter().position(|f| f.name == n);
            match (find(a), find(b)) {
                (Some(x), Some(y)) => conflicts.push((x, y)),
                _ => self.report(
                    "invalid-flag-reference",
                    format!("conflict `{a}` / `{b}` names an undeclared flag"),
                    &format!("/conflicts/{i}"),
                    None,
                ),
            }
        }
        let (intents, default_intent) = match &raw.intents {
            Some(i) => {
                if !i.values.contains(&i.default) {
                    self.report(
                        "schema-violation",
                        format!("default intent `{}` is not one of the intents", i.default),
                        "/intents/default",
                        None,
                    );
                }
                (i.values.clone(), i.default.clone())
            }
            None => (vec!["DEFAULT".to_string()], "DEFAULT".to_string()),
        };
        for (name, p) in &raw.params {
            if !p.kind.accepts(&p.default) {
                self.report(
                    "schema-violation",
                    format!("the default of param `{name}` is not a {:?}", p.kind),
                    &format!("/params/{name}/default"),
                    None,
                );
            }
        }
        let params: BTreeMap<String, (ValueType, Value)> = raw
            .params
            .iter()
            .map(|(n, p)| (n.clone(), (p.kind, p.default.clone())))
            .collect();
        let vars = self.vars.clone();

        // Counters, without their redirects (those need the type environment).
        let mut counters: Vec<Counter> = raw
            .counters
            .iter()
            .map(|(name, c)| {
                let limit = match &c.limit {
                    Limit::Fixed(n) => LimitValue::Fixed(*n),
                    Limit::Param(p) => {
                        LimitValue::Param(p.strip_prefix("params.").unwrap_or(p).to_string())
                    }
                };
                Counter {
                    name: name.clone(),
                    scope: c.scope,
                    limit,
                    on_limit: Vec::new(),
                    span: self.key_span(&format!("/counters/{name}")),
                }
            })
            .collect();
        for c in &counters {
            if let LimitValue::Param(p) = &c.limit
                && !matches!(params.get(p), Some((ValueType::Int, _)))
            {
                let ptr = format!("/counters/{}/limit", c.name);
                self.report(
                    "guard-unknown-path",
                    format!("counter limit names `params.{p}`, which is not an int param"),
                    &ptr,
                    Some("declare it under `params:` with `type: int`".into()),
                );
            }
        }

        let flags_ty = Ty::object(flags.iter().map(|f| {
            let ty = match f.kind {
                FlagType::Bool => Ty::Bool,
                FlagType::Enum => Ty::Str(Some(f.values.clone())),
            };
            (f.name.clone(), ty)
        }));
        let base_env = TypeEnv::default()
            .with("flags", flags_ty)
            .with("intent", Ty::Str(Some(intents.clone())))
            .with(
                "counters",
                Ty::object(
                    counters
                        .iter()
                        .filter(|c| c.scope == CounterScope::Session)
                        .map(|c| (c.name.clone(), Ty::Number)),
                ),
            )
            .with("tasks", Ty::list(task_ty(&counters)))
            .with("facts", self.registry.facts_ty())
            .with(
                "vars",
                Ty::object(
                    vars.iter()
                        .map(|(n, t)| (n.clone(), value_ty(*t).optional())),
                ),
            )
            .with(
                "params",
                Ty::object(params.iter().map(|(n, (t, _))| (n.clone(), value_ty(*t)))),
            );

        for (i, (name, c)) in raw.counters.iter().enumerate() {
            let redirects = c
                .on_limit
                .iter()
                .enumerate()
                .filter_map(|(j, r)| {
                    self.redirect(r, &format!("/counters/{name}/on_limit/{j}"), &base_env)
                })
                .collect();
            counters[i].on_limit = redirects;
        }

        let initial = match self.state_index.get(&raw.initial) {
            Some(id) => *id,
            None => {
                self.report(
                    "unknown-transition-target",
                    format!("initial state `{}` does not exist", raw.initial),
                    "/initial",
                    Some(self.known_states_help()),
                );
                StateId(0)
            }
        };

        let mut templates = minijinja::Environment::new();
        templates.set_undefined_behavior(minijinja::UndefinedBehavior::Chainable);
        let footer = raw
            .instruction_footer
            .as_ref()
            .map(|t| self.localized(t, "/instruction_footer", "`instruction_footer`"));
        if let Some(footer) = &footer {
            for (locale, text) in &footer.texts {
                let name = format!("__footer.{locale}");
                if let Err(e) = templates.add_template_owned(name, text.clone()) {
                    self.report(
                        "template-syntax-error",
                        format!("instruction_footer ({locale}): {}", template_error(&e)),
                        "/instruction_footer",
                        None,
                    );
                }
            }
        }

        let mut states = Vec::new();
        for (name, s) in &raw.states {
            states.push(self.state(name, s, raw, &base_env, &counters, &mut templates));
        }
        if raw.states.is_empty() {
            self.report(
                "schema-violation",
                "a contract needs at least one state",
                "/states",
                None,
            );
            return None;
        }

        let mut messages = BTreeMap::new();
        for (key, m) in &raw.messages {
            let p = format!("/messages/{key}");
            let mut texts = BTreeMap::new();
            for (locale, text) in &m.text {
                if !self.locales.contains(locale) {
                    self.report_key("schema-violation", format!("message `{key}` has text for `{locale}`, which is not a declared locale"), &format!("{p}/{locale}"), Some(format!("declared locales: {}", self.locales.join(", "))));
                }
                texts.insert(locale.clone(), text.clone());
            }
            messages.insert(
                key.clone(),
                Message {
                    key: key.clone(),
                    error: m.error.clone(),
                    user_intervention: m.user_intervention,
                    text: Localized { texts },
                    span: self.key_span(&p),
                },
            );
        }

        for (role, key) in &raw.engine_messages {
            if !ENGINE_ROLES.iter().any(|(r, _)| r == role) {
                let roles: Vec<&str> = ENGINE_ROLES.iter().map(|(r, _)| *r).collect();
                self.report_key(
                    "schema-violation",
                    format!("unknown engine message role `{role}`"),
                    &format!("/engine_messages/{role}"),
                    Some(format!("roles: {}", roles.join(", "))),
                );
            }
            let _ = key;
        }

        let matrix_columns = raw
            .matrix
            .as_ref()
            .map(|m| {
                m.columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| MatrixColumn {
                        key: c.key.clone(),
                        label: c.label.clone(),
                        flags: c.flags.clone(),
                        intent: c.intent.clone(),
                        span: self.span(&format!("/matrix/columns/{i}")),
                    })
                    .collect()
            })
            .unwrap_or_default();

        let mut payload_defs = raw.payload_defs.clone();
        payload_defs.retain(|_, v| v.is_object() || v.is_boolean());

        Some(Contract {
            name: raw.contract.clone(),
            host: raw.host.clone(),
            registry: self.registry.clone(),
            locales: raw.locales.clone(),
            call: raw.call.clone(),
            instruction_footer: footer,
            initial,
            initial_known: self.state_index.contains_key(&raw.initial),
            flags,
            conflicts,
            intents,
            default_intent,
            params,
            vars,
            counters,
            payload_defs,
            states,
            state_index: self.state_index.clone(),
            messages,
            engine_messages: raw.engine_messages.clone(),
            engine_messages_span: self.root.entry("engine_messages").map_or(
                Span::point(self.root.span.file, crate::source::Pos::START),
                |(k, _)| k.span,
            ),
            field_messages: raw.field_messages.clone(),
            matrix_columns,
            templates,
        })
    }

    fn known_states_help(&self) -> String {
        let mut names: Vec<&str> = self.state_index.keys().map(String::as_str).collect();
        names.sort_unstable();
        format!("known states: {}", names.join(", "))
    }

    fn target(&mut self, name: &str, pointer: &str) -> Option<StateId> {
        match self.state_index.get(name) {
            Some(id) => Some(*id),
            None => {
                let help = self.known_states_help();
                self.report(
                    "unknown-transition-target",
                    format!("state `{name}` does not exist"),
                    pointer,
                    Some(help),
                );
                None
            }
        }
    }

    fn state(
        &mut self,
        name: &str,
        s: &RawState,
        raw: &RawContract,
        base_env: &TypeEnv,
        counters: &[Counter],
        templates: &mut minijinja::Environment<'static>,
    ) -> State {
        let p = format!("/states/{name}");
        let phase = s.phase.clone().unwrap_or_else(|| name.to_string());
        // Payload schema.
        let mut payload_schema = None;
        let mut validator = None;
        let mut payload_ty = Ty::Object {
            fields: BTreeMap::new(),
            open: false,
        };
        let mut expected_payload = Value::Object(Map::new());
        if let Some(schema) = &s.payload {
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
            match jsonschema::options()
                .should_validate_formats(true)
                .build(&full)
            {
                Ok(v) => validator = Some(v),
                Err(e) => self.report(
                    "invalid-payload-schema",
                    format!("payload schema of `{name}` is invalid: {e}"),
                    &format!("{p}/payload"),
                    Some("write a JSON Schema (draft 2020-12) object".into()),
                ),
            }
            payload_ty = Ty::from_schema(schema, &raw.payload_defs);
            expected_payload = describe_payload(schema, &raw.payload_defs);
            payload_schema = Some(full);
        } else if s.kind == StateKind::External {
            self.report_key(
                "invalid-payload-schema",
                format!("external state `{name}` has no payload schema"),
                &p,
                Some("add `payload:` with a JSON Schema of what the agent submits".into()),
            );
        }

        // Results of engine-state actions.
        let mut result_fields = Vec::new();
        let run: Vec<ActionCall> = s
            .run
            .iter()
            .enumerate()
            .filter_map(|(i, a)| self.action(a, &format!("{p}/run/{i}"), base_env))
            .collect();
        for (i, call) in run.iter().enumerate() {
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
                .map_or(Ty::Any, super::registry::ActionSpec::result_ty);
            result_fields.push((call.bind.clone(), ty));
        }
        let mut env = base_env.clone().with("payload", payload_ty);
        if s.kind == StateKind::Engine {
            env = env.with("result", Ty::object(result_fields));
        }

        for (list, what) in [
            (&s.required_tools, "required_tools"),
            (&s.allowed_tools, "allowed_tools"),
        ] {
            for (i, tool) in list.iter().enumerate() {
                if !self.registry.tools.contains(&tool.as_str()) {
                    self.report(
                        "unknown-tool",
                        format!("`{tool}` is not a tool of host `{}`", self.registry.host),
                        &format!("{p}/{what}/{i}"),
                        Some(if self.registry.tools.is_empty() {
                            format!("host `{}` provides no tools", self.registry.host)
                        } else {
                            format!("known tools: {}", self.registry.tools.join(", "))
                        }),
                    );
                }
            }
        }

        let checks = s
            .checks
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let cp = format!("{p}/checks/{i}");
                let guard = self.condition(&c.require, &format!("{cp}/require"), &env);
                let message = self.message_ref(&c.message, &format!("{cp}/message"), &env)?;
                Some(Check { guard, message })
            })
            .collect();

        let transitions: Vec<Transition> = s
            .transitions
            .iter()
            .enumerate()
            .filter_map(|(i, t)| {
                let tp = format!("{p}/transitions/{i}");
                if t.when.is_none() {
                    self.report("schema-violation", "a guarded transition needs `when`; put the unconditional one under `otherwise`", &tp, None);
                }
                self.transition(t, &tp, &env, counters)
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
            self.transition(t, &tp, &env, counters)
        });

        if s.kind == StateKind::Terminal && (!s.transitions.is_empty() || s.otherwise.is_some()) {
            self.report_key(
                "schema-violation",
                format!("terminal state `{name}` has transitions"),
                &p,
                Some("remove them or make the state `external` or `engine`".into()),
            );
        }

        let has_instruction = s.instruction.is_some();
        if let Some(text) = &s.instruction {
            let localized = self.localized(
                text,
                &format!("{p}/instruction"),
                &format!("the instruction of `{name}`"),
            );
            for (locale, body) in &localized.texts {
                if let Err(e) =
                    templates.add_template_owned(format!("{name}.{locale}"), body.clone())
                {
                    self.report(
                        "template-syntax-error",
                        format!("instruction of `{name}` ({locale}): {}", template_error(&e)),
                        &format!("{p}/instruction"),
                        None,
                    );
                }
            }
        } else if s.kind == StateKind::External {
            self.report_key(
                "missing-locale-text",
                format!("external state `{name}` has no instruction"),
                &p,
                Some("agents need `instruction:` to know what to do".into()),
            );
        }

        State {
            id: name.to_string(),
            kind: s.kind,
            step: s.step,
            label: s.label.clone().unwrap_or_else(|| phase.clone()),
            phase,
            substep: s.substep.clone(),
            has_instruction,
            payload_schema,
            validator,
            expected_payload,
            required_tools: s.required_tools.clone(),
            min_distinct_tools: s.min_distinct_tools,
            allowed_tools: s.allowed_tools.clone(),
            persist: s.persist.clone(),
            field_messages: s.field_messages.clone(),
            checks,
            run,
            transitions,
            fallback_dropped: s.otherwise.is_some() && otherwise.is_none(),
            otherwise,
            outcome: s.outcome,
            span: self.key_span(&p),
        }
    }

    fn transition(
        &mut self,
        t: &RawTransition,
        p: &str,
        env: &TypeEnv,
        counters: &[Counter],
    ) -> Option<Transition> {
        let guard = t
            .when
            .as_ref()
            .map(|w| self.condition(w, &format!("{p}/when"), env));
        let to = self.target(&t.to, &format!("{p}/to"));
        let actions = t
            .actions
            .iter()
            .enumerate()
            .filter_map(|(i, a)| self.action(a, &format!("{p}/actions/{i}"), env))
            .collect();
        let increment = t
            .increment
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                self.counter(
                    c,
                    &format!("{p}/increment/{i}"),
                    Some(CounterScope::Session),
                    counters,
                )
            })
            .collect();
        let reset = t
            .reset
            .iter()
            .enumerate()
            .filter_map(|(i, c)| self.counter(c, &format!("{p}/reset/{i}"), None, counters))
            .collect();
        let increment_tasks = t
            .increment_tasks
            .iter()
            .filter_map(|(c, ids)| {
                let cp = format!("{p}/increment_tasks/{c}");
                let id = self.counter(c, &cp, Some(CounterScope::Task), counters)?;
                let guard =
                    self.typed(ids, &cp, env, &Ty::list(Ty::string()), "a list of task ids");
                Some((id, guard))
            })
            .collect();
        let set = t
            .set
            .iter()
            .filter_map(|(var, expr)| {
                let vp = format!("{p}/set/{var}");
                let Some(kind) = self.vars.get(var).copied() else {
                    self.report_key(
                        "guard-unknown-path",
                        format!("`vars.{var}` is not declared"),
                        &vp,
                        Some("declare it under `vars:`".into()),
                    );
                    return None;
                };
                Some((
                    var.clone(),
                    self.typed(
                        expr,
                        &vp,
                        env,
                        &value_ty(kind).optional(),
                        "the variable's type",
                    ),
                ))
            })
            .collect();
        let message = t
            .message
            .as_ref()
            .and_then(|m| self.message_ref(m, &format!("{p}/message"), env));
        Some(Transition {
            guard,
            to: to?,
            actions,
            increment,
            increment_tasks,
            reset,
            set,
            message,
            span: self.span(p),
        })
    }

    fn counter(
        &mut self,
        name: &str,
        pointer: &str,
        scope: Option<CounterScope>,
        counters: &[Counter],
    ) -> Option<CounterId> {
        let Some(id) = self.counter_index.get(name).copied() else {
            let names: Vec<&str> = counters.iter().map(|c| c.name.as_str()).collect();
            self.report_key(
                "unknown-counter",
                format!("counter `{name}` is not declared"),
                pointer,
                Some(format!("declared counters: {}", names.join(", "))),
            );
            return None;
        };
        if let Some(scope) = scope
            && counters[id.0].scope != scope
        {
            let (want, key) = match scope {
                CounterScope::Session => ("session", "increment_tasks"),
                CounterScope::Task => ("task", "increment"),
            };
            self.report_key(
                "unknown-counter",
                format!("counter `{name}` is not a {want} counter"),
                pointer,
                Some(format!("use `{key}` for it")),
            );
            return None;
        }
        Some(id)
    }

    fn redirect(&mut self, r: &RawRedirect, p: &str, env: &TypeEnv) -> Option<Redirect> {
        let guard = r
            .when
            .as_ref()
            .map(|w| self.condition(w, &format!("{p}/when"), env));
        let to = self.target(&r.to, &format!("{p}/to"));
        let message = r
            .message
            .as_ref()
            .and_then(|m| self.message_ref(m, &format!("{p}/message"), env));
        let actions = r
            .actions
            .iter()
            .enumerate()
            .filter_map(|(i, a)| self.action(a, &format!("{p}/actions/{i}"), env))
            .collect();
        Some(Redirect {
            guard,
            to: to?,
            message,
            actions,
        })
    }

    fn action(&mut self, call: &RawActionCall, p: &str, env: &TypeEnv) -> Option<ActionCall> {
        let (name, args, when, bind, errors) = match call {
            RawActionCall::Name(n) => (n.clone(), BTreeMap::new(), None, None, BTreeMap::new()),
            RawActionCall::Full(a) => (
                a.action.clone(),
                a.args.clone(),
                a.when.clone(),
                a.bind.clone(),
                a.errors.clone(),
            ),
        };
        let name_ptr = if matches!(call, RawActionCall::Name(_)) {
            p.to_string()
        } else {
            format!("{p}/action")
        };
        let Some(spec) = self.registry.action(&name).cloned() else {
            let names: Vec<&str> = self.registry.actions.iter().map(|a| a.name).collect();
            self.report(
                "unknown-action",
                format!("`{name}` is not an action of host `{}`", self.registry.host),
                &name_ptr,
                Some(format!("known actions: {}", names.join(", "))),
            );
            return None;
        };
        let mut typed_args = Vec::new();
        for (arg, expr) in &args {
            let ap = format!("{p}/with/{arg}");
            match spec.arg_ty(arg) {
                Some(ty) => typed_args.push((
                    arg.clone(),
                    self.typed(expr, &ap, env, &ty, "the argument's type"),
                )),
                None => {
                    let names: Vec<&str> = spec.args.iter().map(|(n, ..)| *n).collect();
                    self.report_key(
                        "unknown-action",
                        format!("action `{name}` has no argument `{arg}`"),
                        &ap,
                        Some(if names.is_empty() {
                            "it takes no arguments".into()
                        } else {
                            format!("its arguments: {}", names.join(", "))
                        }),
                    );
                }
            }
        }
        for (arg, _, required) in &spec.args {
            if *required && !args.contains_key(*arg) {
                self.report(
                    "unknown-action",
                    format!("action `{name}` needs argument `{arg}`"),
                    p,
                    Some(format!("add `with: {{{arg}: <expression>}}`")),
                );
            }
        }
        let when = when.map(|w| self.condition(&w, &format!("{p}/when"), env));
        let mut error_refs = BTreeMap::new();
        for (outcome, m) in &errors {
            let ep = format!("{p}/errors/{outcome}");
            if !spec.outcomes.iter().any(|(o, _)| o == outcome) {
                let names: Vec<&str> = spec.outcomes.iter().map(|(o, _)| *o).collect();
                self.report_key(
                    "unknown-action",
                    format!("action `{name}` has no failure outcome `{outcome}`"),
                    &ep,
                    Some(format!(
                        "its outcomes: {}",
                        if names.is_empty() {
                            "none".to_string()
                        } else {
                            names.join(", ")
                        }
                    )),
                );
                continue;
            }
            if let Some(r) = self.message_ref(m, &ep, env) {
                error_refs.insert(outcome.clone(), r);
            }
        }
        let bind = bind.unwrap_or_else(|| name.rsplit('.').next().unwrap_or(&name).to_string());
        let performer = BuiltinAction::from_name(&name).map_or(Performer::Host, Performer::Engine);
        Some(ActionCall {
            name,
            performer,
            args: typed_args,
            when,
            bind,
            errors: error_refs,
            span: self.span(p),
        })
    }

    fn message_ref(&mut self, m: &RawMessageRef, p: &str, env: &TypeEnv) -> Option<MessageRef> {
        let (key, args, key_ptr) = match m {
            RawMessageRef::Key(k) => (k.clone(), BTreeMap::new(), p.to_string()),
            RawMessageRef::WithArgs(super::raw::RawMessageWithArgs { key, args }) => {
                (key.clone(), args.clone(), format!("{p}/key"))
            }
        };
        let args = args
            .iter()
            .map(|(name, expr)| {
                let ap = format!("{p}/args/{name}");
                (name.clone(), self.expression(expr, &ap, env))
            })
            .collect();
        Some(MessageRef {
            key,
            args,
            span: self.span(&key_ptr),
        })
    }

    /// Parses and checks a condition written at `pointer`.
    fn condition(&mut self, text: &str, pointer: &str, env: &TypeEnv) -> Guard {
        self.guard_with(text, pointer, |expr| check_condition(expr, env))
    }

    /// Parses and checks an expression of any type.
    fn expression(&mut self, text: &str, pointer: &str, env: &TypeEnv) -> Guard {
        self.guard_with(text, pointer, |expr| check(expr, env).map(|_| ()))
    }

    /// Parses and checks an expression that must have type `want`.
    fn typed(&mut self, text: &str, pointer: &str, env: &TypeEnv, want: &Ty, what: &str) -> Guard {
        let want = want.clone();
        let what = what.to_string();
        self.guard_with(text, pointer, |expr| {
            let ty = check(expr, env)?;
            if fits(&ty, &want) {
                Ok(())
            } else {
                Err(vec![crate::guard::check::CheckError {
                    kind: CheckErrorKind::Type,
                    message: format!("this is {ty}, but {what} is {want}"),
                    range: expr.range,
                    help: None,
                }])
            }
        })
    }

    fn guard_with(
        &mut self,
        text: &str,
        pointer: &str,
        check_fn: impl FnOnce(&Expr) -> Result<(), Vec<crate::guard::check::CheckError>>,
    ) -> Guard {
        let node = self.root.locate(pointer).1;
        let span = node.span;
        match guard::parse(text) {
            Err(e) => {
                let at = node.inner_span(e.range.start, e.range.end - e.range.start);
                self.diagnostics.push(
                    Diagnostic::new("guard-syntax-error", e.message, Some(at))
                        .with_note(format!("in guard `{text}`")),
                );
                Guard {
                    source: text.to_string(),
                    expr: None,
                    span,
                }
            }
            Ok(expr) => match check_fn(&expr) {
                Ok(()) => Guard {
                    source: text.to_string(),
                    expr: Some(expr),
                    span,
                },
                Err(errors) => {
                    for e in errors {
                        let code = match e.kind {
                            CheckErrorKind::UnknownPath => "guard-unknown-path",
                            CheckErrorKind::Type => "guard-type-error",
                        };
                        let at = node.inner_span(e.range.start, e.range.end - e.range.start);
                        let mut d = Diagnostic::new(code, e.message, Some(at));
                        d.help = e.help;
                        self.diagnostics.push(d);
                    }
                    Guard {
                        source: text.to_string(),
                        expr: None,
                        span,
                    }
                }
            },
        }
    }
}

/// Whether a value of type `have` can be used where `want` is expected.
fn fits(have: &Ty, want: &Ty) -> bool {
    match (have.strip_optional(), want.strip_optional()) {
        (Ty::Any, _) | (_, Ty::Any) | (Ty::Null, _) => true,
        (Ty::List(a), Ty::List(b)) => fits(a, b),
        (Ty::Str(_), Ty::Str(None)) => true,
        (Ty::Str(Some(a)), Ty::Str(Some(b))) => a.iter().all(|v| b.contains(v)),
        (Ty::Str(None), Ty::Str(Some(_))) => true,
        (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

fn template_error(e: &minijinja::Error) -> String {
    match e.line() {
        Some(line) => format!(
            "{} (template line {line})",
            e.detail().unwrap_or("syntax error")
        ),
        None => e.to_string(),
    }
}

/// Which keys a message text uses as `{placeholder}`.
pub fn placeholders(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        rest = &rest[start + 1..];
        if let Some(end) = rest.find('}') {
            let name = &rest[..end];
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                out.insert(name.to_string());
            }
            rest = &rest[end + 1..];
        } else {
            break;
        }
    }
    out
}
