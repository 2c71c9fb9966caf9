//! The lowering state and how it reports: every step of lowering holds a [`Lowerer`] and
//! reports findings at JSON pointers, which are turned into spans of the YAML tree here.

use std::collections::{BTreeMap, HashMap};

use crate::contract::model::{CounterId, StateId};
use crate::contract::raw::ValueType;
use crate::contract::registry::Registry;
use crate::diagnostic::Diagnostic;
use crate::source::Span;
use crate::yaml::Node;

/// The state of one lowering: what every step may look up, and the findings so far.
pub(super) struct Lowerer<'a> {
    pub(super) root: &'a Node,
    pub(super) registry: Registry,
    pub(super) diagnostics: Vec<Diagnostic>,
    /// Known before any step runs, so a transition may name a state declared after it.
    pub(super) state_index: HashMap<String, StateId>,
    /// Likewise for counters, which transitions and redirects name.
    pub(super) counter_index: HashMap<String, CounterId>,
    pub(super) locales: Vec<String>,
    /// Declared session variables and their types, for `set:`.
    pub(super) vars: BTreeMap<String, ValueType>,
    /// Declared params with their defaults, once lowered (timeouts and retries name them).
    pub(super) params: BTreeMap<String, (ValueType, serde_json::Value)>,
}

impl Lowerer<'_> {
    /// The span of the value the pointer names (the deepest node that exists).
    pub(super) fn value_span(&self, pointer: &str) -> Span {
        self.root.locate(pointer).1.span
    }

    /// Where the text the pointer names is written, for positions inside it.
    pub(super) fn text_span(&self, pointer: &str) -> crate::source::TextSpan {
        self.root.locate(pointer).1.text_span()
    }

    /// The span of a mapping key when the pointer ends at one (`/states/A`), else the value.
    pub(super) fn key_span(&self, pointer: &str) -> Span {
        let (key, node) = self.root.locate(pointer);
        key.map_or(node.span, |k| k.span)
    }

    /// Reports a finding at the value the pointer names.
    pub(super) fn report(
        &mut self,
        code: &'static str,
        message: impl Into<String>,
        pointer: &str,
        help: Option<String>,
    ) {
        let span = self.value_span(pointer);
        self.push(code, message, span, help);
    }

    /// Like [`Self::report`], but at the mapping key the pointer ends at (a state, argument,
    /// outcome, variable, counter or locale name) when the finding is about that name.
    pub(super) fn report_key(
        &mut self,
        code: &'static str,
        message: impl Into<String>,
        pointer: &str,
        help: Option<String>,
    ) {
        let span = self.key_span(pointer);
        self.push(code, message, span, help);
    }

    pub(super) fn push(
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
}
