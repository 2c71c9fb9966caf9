//! Lowering: the raw contract becomes the resolved [`Contract`], collecting every problem
//! instead of stopping at the first.
//!
//! This stage owns the checks that need name resolution: unknown states, counters,
//! actions, tools, messages and paths; guard syntax and types; payload schemas and
//! instruction templates. Whole-graph checks live in `lint::rules`.
//!
//! `Lowerer::contract` lists the steps in order; each submodule lowers one part of the
//! file. The order is fixed because later steps need what earlier ones resolved: guards
//! need the type environment, which needs the flags, intents, params, vars and counters.

mod actions;
mod counters;
mod env;
mod guards;
mod inputs;
mod lowerer;
mod messages;
mod states;
mod templates;
mod transitions;

use lowerer::Lowerer;

use super::model::{ActionCall, CancelRule, Contract, CounterId, Performer, StateId};
use super::raw::RawContract;
use super::registry::Registry;
use crate::diagnostic::Diagnostic;
use crate::guard::check::TypeEnv;
use crate::source::{Pos, Span};
use crate::yaml::Node;

pub(crate) use messages::placeholders;

/// Resolves `raw` (parsed from `root`) against the registry of its host, one of `hosts`.
pub(crate) fn lower(
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
        params: std::collections::BTreeMap::new(),
    };
    let contract = l.contract(raw);
    (contract, l.diagnostics)
}

impl Lowerer<'_> {
    fn contract(&mut self, raw: &RawContract) -> Option<Contract> {
        self.check_header(raw);
        let flags = self.flags(raw);
        let conflicts = self.conflicts(raw, &flags);
        let (intents, default_intent) = self.intents(raw);
        let params = self.params(raw);
        self.params = params.clone();
        let vars = self.vars.clone();
        // Redirects are lowered once the type environment, which lists the counters, exists.
        let mut counters = self.counters(raw, &params);
        let base_env = env::base_env(&self.registry, &flags, &intents, &counters, &vars, &params);
        self.counter_redirects(raw, &mut counters, &base_env);
        let initial = self.initial_state(raw);
        let mut templates = templates::environment();
        let footer = self.instruction_footer(raw, &mut templates);
        let states = self.states(raw, &base_env, &counters, &mut templates)?;
        let finally = self.finally(raw, &base_env);
        let on_cancel = self.on_cancel(raw, &base_env);
        let messages = self.messages(raw);
        self.check_engine_message_roles(raw);
        let matrix_columns = self.matrix_columns(raw);

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
            finally,
            on_cancel,
            states,
            state_index: self.state_index.clone(),
            messages,
            engine_messages: raw.engine_messages.clone(),
            engine_messages_span: self
                .root
                .entry("engine_messages")
                .map_or(Span::point(self.root.span.file, Pos::START), |(k, _)| {
                    k.span
                }),
            field_messages: raw.field_messages.clone(),
            matrix_columns,
            templates,
        })
    }

    /// The format version and the locale list, which every other text depends on.
    fn check_header(&mut self, raw: &RawContract) {
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
        if let Some(call) = &raw.call {
            self.check_tool(call, "/call");
        }
    }

    /// The `finally:` actions: host actions only, since the session is over when they run.
    fn finally(&mut self, raw: &RawContract, env: &TypeEnv) -> Vec<ActionCall> {
        let calls = self.actions(&raw.finally, "/finally", env);
        for (i, call) in calls.iter().enumerate() {
            if call.performer != Performer::Host {
                self.report(
                    "unknown-action",
                    format!(
                        "`{}` changes the session, which is over when `finally` runs",
                        call.name
                    ),
                    &format!("/finally/{i}"),
                    Some("`finally` runs host actions (releasing, reporting)".into()),
                );
            }
        }
        calls
            .into_iter()
            .filter(|c| c.performer == Performer::Host)
            .collect()
    }

    /// The `on_cancel:` target and message.
    fn on_cancel(&mut self, raw: &RawContract, env: &TypeEnv) -> Option<CancelRule> {
        let cancel = raw.on_cancel.as_ref()?;
        let to = self.target(&cancel.to, "/on_cancel/to")?;
        let message = cancel
            .message
            .as_ref()
            .map(|m| self.message_ref(m, "/on_cancel/message", env));
        Some(CancelRule {
            to,
            message,
            span: self.key_span("/on_cancel"),
        })
    }

    /// `unknown-tool` unless `tool` is one of the host's tools.
    fn check_tool(&mut self, tool: &str, pointer: &str) {
        if self.registry.tools.contains(&tool) {
            return;
        }
        let help = if self.registry.tools.is_empty() {
            format!("host `{}` provides no tools", self.registry.host)
        } else {
            format!("known tools: {}", self.registry.tools.join(", "))
        };
        self.report(
            "unknown-tool",
            format!("`{tool}` is not a tool of host `{}`", self.registry.host),
            pointer,
            Some(help),
        );
    }
}

/// Lowers inline YAML through the same stages `contract::load` runs, for the unit tests
/// of each step.
#[cfg(test)]
mod test_support {
    use super::lower;
    use crate::contract::model::Contract;
    use crate::contract::raw::RawContract;
    use crate::diagnostic::Diagnostic;
    use crate::source::FileId;

    /// The lines every test contract starts with (lines 1 to 4); tests append from line 5.
    pub(super) const HEADER: &str = "contract: t\nversion: 1\nhost: agent-runner\nlocales: [en]\n";

    /// Lowers `text`, which must be valid YAML that the contract schema's serde types accept.
    pub(super) fn lower_yaml(text: &str) -> (Option<Contract>, Vec<Diagnostic>) {
        let (node, yaml_warnings) = crate::yaml::parse(FileId(0), text).unwrap();
        assert!(yaml_warnings.is_empty(), "{yaml_warnings:?}");
        let raw: RawContract = serde_json::from_value(node.to_json()).unwrap();
        lower(&raw, &node, &crate::contract::registry::test_hosts())
    }

    /// `line:col code` of each diagnostic, in the order lowering reported them.
    pub(super) fn found(diagnostics: &[Diagnostic]) -> Vec<String> {
        diagnostics
            .iter()
            .map(|d| {
                let at = d.span.expect("lowering always gives a span").start;
                format!("{}:{} {}", at.line, at.col, d.code)
            })
            .collect()
    }

    /// Lowers `text` and returns where and what it reported.
    pub(super) fn check(text: &str) -> Vec<String> {
        found(&lower_yaml(text).1)
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{HEADER, check, found, lower_yaml};

    #[test]
    fn a_minimal_contract_lowers_clean() {
        let (contract, diagnostics) = lower_yaml(&format!(
            "{HEADER}initial: A\nstates:\n  A: {{kind: engine, otherwise: {{to: B}}}}\n  B: {{kind: terminal}}\n"
        ));
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let contract = contract.unwrap();
        assert_eq!(contract.states.len(), 2);
        assert_eq!(contract.state_id("B").map(|id| id.0), Some(1));
        // No `intents:` means one intent, `DEFAULT`.
        assert_eq!(contract.intents, ["DEFAULT"]);
        assert_eq!(contract.engine_messages_span.start.line, 1);
    }

    #[test]
    fn an_unknown_host_stops_lowering_at_the_host() {
        let text = "contract: t\nversion: 1\nhost: nobody\nlocales: [en]\ninitial: A\nstates: {A: {kind: terminal}}\n";
        let (contract, diagnostics) = lower_yaml(text);
        assert!(contract.is_none());
        assert_eq!(found(&diagnostics), ["3:7 schema-violation"]);
        assert!(
            diagnostics[0]
                .help
                .as_deref()
                .unwrap()
                .contains("agent-runner")
        );
    }

    #[test]
    fn the_submit_tool_must_be_a_tool_of_the_host() {
        let text = "contract: t\nversion: 1\nhost: code-intel\nlocales: [en]\ncall: submit_it\ninitial: A\nstates: {A: {kind: terminal}}\n";
        assert_eq!(check(text), ["5:7 unknown-tool"]);
        let ok = text.replace("submit_it", "submit_phase");
        assert_eq!(check(&ok), Vec::<String>::new());
    }

    #[test]
    fn an_unsupported_version_and_no_locales_are_reported_where_written() {
        let text = "contract: t\nversion: 2\nhost: agent-runner\nlocales: []\ninitial: A\nstates: {A: {kind: terminal}}\n";
        assert_eq!(
            check(text),
            ["2:10 schema-violation", "4:10 schema-violation"]
        );
    }

    #[test]
    fn a_contract_without_states_has_no_model() {
        let (contract, diagnostics) = lower_yaml(&format!(
            "{HEADER}initial: A\nstates: {{}}\nmessages:\n  m: {{fr: \"x\"}}\n"
        ));
        assert!(contract.is_none());
        // The unknown initial state is reported; the message after the states is not,
        // because lowering stops at the empty state list.
        assert_eq!(
            found(&diagnostics),
            ["5:10 unknown-transition-target", "6:9 schema-violation"]
        );
    }
}
