//! A host wrapper that records what the session driver asked of the host in one turn —
//! the facts it observed and each action's result — so the decision log holds everything
//! needed to replay the turn as a scenario step (`code-intel replay`).

use serde_json::{Map, Value, json};

use crate::machine::Effect;
use crate::session::{ActionFailure, Host};

/// What the host answered during one turn.
#[derive(Debug, Default, Clone)]
pub(crate) struct Recorded {
    /// The facts of the first question in the turn (the ones the first step's guards saw).
    pub facts: Option<Map<String, Value>>,
    /// Each performed action in order: `{action, result}` or `{action, fail: outcome}`.
    pub actions: Vec<Value>,
}

pub(crate) struct Recorder<'a, H: Host> {
    pub inner: &'a mut H,
    pub recorded: Recorded,
}

impl<H: Host> Host for Recorder<'_, H> {
    fn perform(&mut self, effect: &Effect) -> Result<Value, ActionFailure> {
        let answer = self.inner.perform(effect);
        self.recorded.actions.push(match &answer {
            Ok(result) => json!({"action": effect.action, "result": result}),
            Err(f) => json!({"action": effect.action, "fail": f.outcome}),
        });
        answer
    }

    fn facts(&mut self) -> Map<String, Value> {
        let facts = self.inner.facts();
        if self.recorded.facts.is_none() {
            self.recorded.facts = Some(facts.clone());
        }
        facts
    }
}
