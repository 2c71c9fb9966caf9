//! What the planner answers, per protocol: the `{type, version, payload}` envelope, the
//! typed payloads, their JSON Schemas (generated from these types; the committed
//! `schemas/planner/*.schema.json` must equal them, a test checks) and the checks a reply
//! passes before the host acts on it: the envelope's `type` and `version` (the original
//! never read them, so a reply to another protocol became an empty answer: AR-M4), the
//! schema, then what a schema cannot say (unique criterion ids, verdicts that name only
//! the task's criteria and agree with the overall answer).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::request::{CompletionAssessmentRequest, Protocol};

/// The only envelope version there is.
pub const VERSION: u64 = 1;
/// At most this many schema errors are reported for one reply (they are fed back to the
/// planner, so a long list would only cost tokens).
const MAX_SCHEMA_ERRORS: usize = 8;

/// One acceptance criterion the planner proposes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlannedCriterion {
    /// `AC-1`, `AC-2`, ... in order.
    #[schemars(pattern(r"^AC-[1-9][0-9]*$"))]
    pub id: String,
    /// A check someone could verify: what must be true when the task is done.
    #[schemars(length(min = 1, max = 2000))]
    pub description: String,
    /// Free-form kind, e.g. `functional`, `test`, `quality`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Whether the task cannot be complete without it (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical: Option<bool>,
}

/// The payload of a `plan_task` reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlanTaskPayload {
    #[schemars(length(min = 1, max = 50))]
    pub acceptance_criteria: Vec<PlannedCriterion>,
}

/// What the planner decides to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Run the worker agent with `worker_call.prompt`.
    RunWorker,
    /// Every criterion looks met: go on to the completion assessment.
    MarkComplete,
    /// A human must decide.
    AskHuman,
    /// The task cannot be done.
    Abort,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::RunWorker => "run_worker",
            Action::MarkComplete => "mark_complete",
            Action::AskHuman => "ask_human",
            Action::Abort => "abort",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Decision {
    pub action: Action,
    /// Why, in a sentence or two.
    pub reason: String,
    /// `ask_human` only: the question for the person, answerable on its own (`reason`
    /// stands in when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
}

impl Decision {
    /// The question of an `ask_human` decision: `question`, else `reason`.
    pub fn question(&self) -> Option<String> {
        (self.action == Action::AskHuman).then(|| {
            self.question
                .as_deref()
                .map(str::trim)
                .filter(|q| !q.is_empty())
                .unwrap_or_else(|| self.reason.trim())
                .to_string()
        })
    }
}

/// The instructions for the worker's next run. Besides `prompt`, what the worker kind's
/// allow-list admits is honoured (`model`, `reasoning_effort`, `flags`, `env`); every
/// field or value it does not admit is refused and named in the run's record. The other
/// fields of the original's `worker_call` are accepted so its replies parse, and refused:
/// the task file, not the planner, decides the program, its directory and how it runs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct WorkerCall {
    /// Everything the worker needs to know: it sees nothing else.
    #[schemars(length(min = 1))]
    pub prompt: String,
    /// A model for the worker, if not its default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// codex-cli only: `minimal`, `low`, `medium` or `high` (`xhigh` becomes `high`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Extra CLI flags; only the worker kind's allow-list passes (e.g. claude-code
    /// `--max-turns N`, codex-cli `-c model_verbosity=low`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// Environment variables for the run; only the worker kind's allow-list passes
    /// (e.g. `NO_COLOR`), plain values only.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Refused: the task's `runner.worker.kind` decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_type: Option<Value>,
    /// Refused: the worker always runs headless (`exec`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Value>,
    /// Refused: the task decides the worker's program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli_path: Option<Value>,
    /// Refused: the worker works in the task's repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<Value>,
    /// Refused: the prompt always goes on stdin (Cursor: as the last argument).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_stdin: Option<Value>,
    /// Refused: the worker CLIs take no sampling settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Value>,
    /// Refused: the worker CLIs take no token limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<Value>,
    /// Refused: settings for one tool are the task's `runner.worker.flags`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_specific: Option<Value>,
}

impl WorkerCall {
    /// The fields that were given but are the task's to decide, each with why.
    pub fn task_only_fields(&self) -> Vec<(&'static str, &'static str)> {
        [
            (
                &self.worker_type,
                "worker_type",
                "the task's runner.worker.kind decides the worker",
            ),
            (&self.mode, "mode", "the worker always runs headless"),
            (
                &self.cli_path,
                "cli_path",
                "the task decides the worker's program",
            ),
            (
                &self.workdir,
                "workdir",
                "the worker works in the task's repository",
            ),
            (
                &self.use_stdin,
                "use_stdin",
                "the prompt's way to the worker is fixed per kind",
            ),
            (
                &self.temperature,
                "temperature",
                "the worker CLIs take no sampling settings",
            ),
            (
                &self.max_tokens,
                "max_tokens",
                "the worker CLIs take no token limit",
            ),
            (
                &self.tool_specific,
                "tool_specific",
                "tool settings are the task's runner.worker.flags",
            ),
        ]
        .into_iter()
        .filter(|(value, _, _)| value.as_ref().is_some_and(|v| !v.is_null()))
        .map(|(_, field, why)| (field, why))
        .collect()
    }
}

/// The payload of a `next_action` reply. `worker_call` is required when the action is
/// `run_worker`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = worker_call_required_for_run_worker)]
pub struct NextActionPayload {
    pub decision: Decision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_call: Option<WorkerCall>,
}

fn worker_call_required_for_run_worker(schema: &mut schemars::Schema) {
    schema.insert(
        "if".to_owned(),
        json!({"properties": {"decision": {"properties": {"action": {"const": "run_worker"}}}}}),
    );
    schema.insert("then".to_owned(), json!({"required": ["worker_call"]}));
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passed,
    Failed,
    Unknown,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Unknown => "unknown",
        }
    }
}

/// The verdict on one criterion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CriterionVerdict {
    /// The criterion's id, as given in the request.
    pub id: String,
    pub status: Status,
    /// The evidence for the status.
    #[serde(default)]
    pub comment: String,
}

/// The payload of a `completion_assessment` reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CompletionAssessmentPayload {
    /// True only if every criterion passed.
    pub all_criteria_satisfied: bool,
    pub summary: String,
    /// One verdict per criterion of the request.
    pub by_criterion: Vec<CriterionVerdict>,
}

/// Why a reply was refused. The message is what the planner is told when it is asked
/// again, so it names the field and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidReply(pub String);

impl std::fmt::Display for InvalidReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidReply {}

fn invalid(message: impl Into<String>) -> InvalidReply {
    InvalidReply(message.into())
}

/// The JSON Schema of `protocol`'s whole reply (envelope and payload), generated from the
/// payload types; `schemas/planner/<protocol>.schema.json` must equal it.
pub fn generated_schema(protocol: Protocol) -> Result<String, serde_json::Error> {
    let mut text = serde_json::to_string_pretty(&schema(protocol))?;
    text.push('\n');
    Ok(text)
}

/// The schema of `protocol`'s reply as a value.
pub fn schema(protocol: Protocol) -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let (payload, title) = match protocol {
        Protocol::PlanTask => (
            generator.subschema_for::<PlanTaskPayload>(),
            "plan_task reply",
        ),
        Protocol::NextAction => (
            generator.subschema_for::<NextActionPayload>(),
            "next_action reply",
        ),
        Protocol::CompletionAssessment => (
            generator.subschema_for::<CompletionAssessmentPayload>(),
            "completion_assessment reply",
        ),
        // Its payload's type and schema are Multiverse's, given to `Planner::ask`.
        Protocol::PlanPatch => (
            schemars::json_schema!({"type": "object"}),
            "plan_patch reply",
        ),
    };
    let definitions: Map<String, Value> = generator.take_definitions(true).into_iter().collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "description": "The planner's reply: one JSON object, this envelope around the payload.",
        "type": "object",
        "required": ["type", "version", "payload"],
        "properties": {
            "type": {"const": protocol.name()},
            "version": {"const": VERSION},
            "payload": payload.to_value(),
        },
        "$defs": definitions,
    })
}

/// The compiled validator of `protocol`'s reply schema, built once.
fn validator(protocol: Protocol) -> Option<&'static jsonschema::Validator> {
    static VALIDATORS: OnceLock<Vec<Option<jsonschema::Validator>>> = OnceLock::new();
    let all = VALIDATORS.get_or_init(|| {
        Protocol::ALL
            .iter()
            .map(|p| jsonschema::validator_for(&schema(*p)).ok())
            .collect()
    });
    let index = Protocol::ALL.iter().position(|p| *p == protocol)?;
    all.get(index)?.as_ref()
}

/// The envelope's `type` and `version`, checked before anything else so a reply to the
/// wrong protocol is named as such (AR-M4).
pub fn check_envelope(protocol: Protocol, reply: &Map<String, Value>) -> Result<(), InvalidReply> {
    match reply.get("type") {
        Some(Value::String(kind)) if kind == protocol.name() => {}
        Some(Value::String(kind)) => {
            return Err(invalid(format!(
                "the reply's \"type\" is {kind:?}, but this is a {} request: answer with \"type\": {:?}",
                protocol.name(),
                protocol.name()
            )));
        }
        Some(other) => {
            return Err(invalid(format!(
                "the reply's \"type\" must be the string {:?}, not {other}",
                protocol.name()
            )));
        }
        None => {
            return Err(invalid(format!(
                "the reply has no \"type\": wrap the answer as {{\"type\": {:?}, \"version\": {VERSION}, \"payload\": {{...}}}}",
                protocol.name()
            )));
        }
    }
    match reply.get("version") {
        Some(v) if v.as_u64() == Some(VERSION) => Ok(()),
        Some(v) => Err(invalid(format!(
            "the reply's \"version\" is {v}; only version {VERSION} is understood"
        ))),
        None => Err(invalid(format!(
            "the reply has no \"version\": it must be {VERSION}"
        ))),
    }
}

/// The reply checked against `protocol`'s schema; every violation (up to a few) is listed
/// with its location.
pub fn check_schema(protocol: Protocol, reply: &Map<String, Value>) -> Result<(), InvalidReply> {
    let Some(validator) = validator(protocol) else {
        // The schemas are generated from our own types; one that does not compile is a bug
        // a unit test catches, and refusing every reply would hide it behind retries.
        tracing::error!(
            protocol = protocol.name(),
            "the reply schema does not compile"
        );
        return Ok(());
    };
    let instance = Value::Object(reply.clone());
    let errors: Vec<String> = validator
        .iter_errors(&instance)
        .take(MAX_SCHEMA_ERRORS)
        .map(|e| {
            let path = e.instance_path().to_string();
            let at = if path.is_empty() {
                "/".to_owned()
            } else {
                path
            };
            format!("at {at}: {e}")
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(invalid(format!(
            "the reply does not match the schema: {}",
            errors.join("; ")
        )))
    }
}

/// The payload of an already schema-checked reply, typed.
fn payload<T: serde::de::DeserializeOwned>(reply: &Map<String, Value>) -> Result<T, InvalidReply> {
    let payload = reply.get("payload").cloned().unwrap_or(Value::Null);
    serde_json::from_value(payload).map_err(|e| invalid(format!("the payload is malformed: {e}")))
}

/// A `plan_task` reply, checked.
pub fn plan_task(reply: &Map<String, Value>) -> Result<PlanTaskPayload, InvalidReply> {
    check_envelope(Protocol::PlanTask, reply)?;
    check_schema(Protocol::PlanTask, reply)?;
    let payload: PlanTaskPayload = payload(reply)?;
    let mut seen = BTreeSet::new();
    for criterion in &payload.acceptance_criteria {
        if !seen.insert(criterion.id.as_str()) {
            return Err(invalid(format!(
                "the criterion id {:?} is used twice: number them AC-1, AC-2, ...",
                criterion.id
            )));
        }
        if criterion.description.trim().is_empty() {
            return Err(invalid(format!(
                "criterion {} has an empty description",
                criterion.id
            )));
        }
    }
    Ok(payload)
}

/// A `next_action` reply, checked.
pub fn next_action(reply: &Map<String, Value>) -> Result<NextActionPayload, InvalidReply> {
    check_envelope(Protocol::NextAction, reply)?;
    check_schema(Protocol::NextAction, reply)?;
    let payload: NextActionPayload = payload(reply)?;
    // The schema requires worker_call for run_worker; a blank prompt passes minLength.
    if payload.decision.action == Action::RunWorker
        && payload
            .worker_call
            .as_ref()
            .is_none_or(|call| call.prompt.trim().is_empty())
    {
        return Err(invalid(
            "action run_worker needs payload.worker_call.prompt: the instructions for the worker",
        ));
    }
    Ok(payload)
}

/// A `completion_assessment` reply, checked against the criteria it was asked about.
pub fn completion_assessment(
    reply: &Map<String, Value>,
    request: &CompletionAssessmentRequest,
) -> Result<CompletionAssessmentPayload, InvalidReply> {
    check_envelope(Protocol::CompletionAssessment, reply)?;
    check_schema(Protocol::CompletionAssessment, reply)?;
    let payload: CompletionAssessmentPayload = payload(reply)?;
    let known: BTreeSet<&str> = request
        .acceptance_criteria
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    let mut judged = BTreeSet::new();
    for verdict in &payload.by_criterion {
        if !known.contains(verdict.id.as_str()) {
            return Err(invalid(format!(
                "by_criterion names {:?}, which is not one of the task's criteria ({})",
                verdict.id,
                known.iter().copied().collect::<Vec<_>>().join(", ")
            )));
        }
        if !judged.insert(verdict.id.as_str()) {
            return Err(invalid(format!(
                "by_criterion judges {:?} twice",
                verdict.id
            )));
        }
    }
    if payload.all_criteria_satisfied {
        // "Satisfied" must be backed by a pass for every criterion, or the host would
        // complete a task on a verdict that contradicts itself.
        let unmet: Vec<&str> = request
            .acceptance_criteria
            .iter()
            .map(|c| c.id.as_str())
            .filter(|id| {
                !payload
                    .by_criterion
                    .iter()
                    .any(|v| v.id == *id && v.status == Status::Passed)
            })
            .collect();
        if !unmet.is_empty() {
            return Err(invalid(format!(
                "all_criteria_satisfied is true but these criteria are not marked passed: {}",
                unmet.join(", ")
            )));
        }
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::protocol::request::Criterion;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[test]
    fn every_schema_compiles() {
        for protocol in Protocol::ALL {
            assert!(validator(protocol).is_some(), "{protocol}");
        }
    }

    #[test]
    fn a_plan_is_accepted_and_its_mistakes_are_named() {
        let good = json!({"type": "plan_task", "version": 1, "payload": {"acceptance_criteria": [
            {"id": "AC-1", "description": "adds two numbers", "type": "functional", "critical": true}
        ]}});
        assert_eq!(
            plan_task(&object(good)).unwrap().acceptance_criteria.len(),
            1
        );
        let empty =
            json!({"type": "plan_task", "version": 1, "payload": {"acceptance_criteria": []}});
        let e = plan_task(&object(empty)).unwrap_err();
        assert!(e.0.contains("/payload/acceptance_criteria"), "{e}");
        let bad_id = json!({"type": "plan_task", "version": 1, "payload": {"acceptance_criteria": [
            {"id": "one", "description": "x"}]}});
        assert!(plan_task(&object(bad_id)).unwrap_err().0.contains("AC-"));
        let twice = json!({"type": "plan_task", "version": 1, "payload": {"acceptance_criteria": [
            {"id": "AC-1", "description": "x"}, {"id": "AC-1", "description": "y"}]}});
        assert!(plan_task(&object(twice)).unwrap_err().0.contains("twice"));
    }

    #[test]
    fn the_envelope_type_and_version_are_checked() {
        // AR-M4: a reply for another protocol is refused, not read as an empty payload.
        let other = json!({"type": "next_action", "version": 1, "payload": {"acceptance_criteria": [
            {"id": "AC-1", "description": "x"}]}});
        let e = plan_task(&object(other)).unwrap_err();
        assert!(
            e.0.contains("\"next_action\"") && e.0.contains("plan_task"),
            "{e}"
        );
        let v2 = json!({"type": "plan_task", "version": 2, "payload": {}});
        assert!(plan_task(&object(v2)).unwrap_err().0.contains("version"));
        let bare = json!({"acceptance_criteria": [{"id": "AC-1", "description": "x"}]});
        assert!(
            plan_task(&object(bare))
                .unwrap_err()
                .0
                .contains("no \"type\"")
        );
    }

    #[test]
    fn run_worker_needs_a_prompt() {
        let missing = json!({"type": "next_action", "version": 1, "payload": {
            "decision": {"action": "run_worker", "reason": "start"}}});
        let e = next_action(&object(missing)).unwrap_err();
        assert!(e.0.contains("worker_call"), "{e}");
        let blank = json!({"type": "next_action", "version": 1, "payload": {
            "decision": {"action": "run_worker", "reason": "start"}, "worker_call": {"prompt": "  "}}});
        assert!(
            next_action(&object(blank))
                .unwrap_err()
                .0
                .contains("prompt")
        );
        let done = json!({"type": "next_action", "version": 1, "payload": {
            "decision": {"action": "mark_complete", "reason": "tests pass"}}});
        assert_eq!(
            next_action(&object(done)).unwrap().decision.action,
            Action::MarkComplete
        );
        let unknown = json!({"type": "next_action", "version": 1, "payload": {
            "decision": {"action": "celebrate", "reason": "x"}}});
        assert!(next_action(&object(unknown)).is_err());
    }

    #[test]
    fn an_assessment_must_agree_with_itself_and_the_criteria() {
        let request = CompletionAssessmentRequest {
            title: "t".into(),
            prd: "p".into(),
            acceptance_criteria: vec![
                Criterion {
                    id: "AC-1".into(),
                    description: "a".into(),
                    critical: true,
                },
                Criterion {
                    id: "AC-2".into(),
                    description: "b".into(),
                    critical: false,
                },
            ],
            runs: vec![],
            test: None,
        };
        let reply = |satisfied: bool, verdicts: Value| {
            object(
                json!({"type": "completion_assessment", "version": 1, "payload": {
                "all_criteria_satisfied": satisfied, "summary": "s", "by_criterion": verdicts}}),
            )
        };
        let both = json!([{"id": "AC-1", "status": "passed", "comment": ""}, {"id": "AC-2", "status": "passed"}]);
        assert!(completion_assessment(&reply(true, both), &request).is_ok());
        let one = json!([{"id": "AC-1", "status": "passed"}]);
        let e = completion_assessment(&reply(true, one.clone()), &request).unwrap_err();
        assert!(e.0.contains("AC-2"), "{e}");
        assert!(completion_assessment(&reply(false, one), &request).is_ok());
        let stranger = json!([{"id": "AC-9", "status": "failed"}]);
        assert!(
            completion_assessment(&reply(false, stranger), &request)
                .unwrap_err()
                .0
                .contains("AC-9")
        );
    }
}
