//! AgentRunner as a host of the engine: it performs the task contract's actions (the
//! PRD, preflight, the sandbox, planner calls, worker runs, the test command, the note)
//! and keeps the evidence between them, so each planner call sees what the worker did
//! (AR-B7) and the Task Note can tell the whole story; the run record beside it
//! (`artifacts`) gets every planner exchange, each worker's prompt and output (through
//! [`Recording`], the sandbox as seen by one command) and each test's output, and a trace
//! id ties the run's logs, events, note and result. The flow itself stays in
//! `contracts/agent_runner_task.yml`; nothing here decides a transition.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::artifacts::{Artifacts, Exec, StreamFile, new_trace_id, rotate_earlier};
use super::cancel::Cancel;
use super::ending;
use super::events::Events;
use super::preflight::{PreflightReport, Target, preflight};
use super::process::Output;
use super::protocol::planner::{Call, Exchange, Planner, PlannerError};
use super::protocol::request::{
    CompletionAssessmentRequest, Criterion, CriterionState, NextActionRequest, PlanTaskRequest,
    RunEvidence, TestEvidence,
};
use super::protocol::response::{CompletionAssessmentPayload, WorkerCall};
use super::provider::ProviderError;
use super::report::{CriterionResult, Status, TaskReport, note_path};
use super::sandbox::{Sandbox, SandboxError};
use super::task::Task;
use super::time::{self, Timestamp};
use super::tooling::WorkerTooling;
use super::worker::{Invocation, WorkerConfig};
use super::worker_turn::{RunIds, TestResult, WorkerRun, WorkerTurn, run_test_command, run_worker};
use crate::codeintel::store::atomic_write;
use crate::contract::model::Outcome;
use crate::machine::{Accepted, Effect};
use crate::session::{ActionFailure, Host};

/// Reads a host environment variable (tests pass their own).
pub(crate) type HostEnv = Box<dyn Fn(&str) -> Option<String>>;

/// Everything the host needs that the task file does not say.
pub struct Setup {
    pub task: Task,
    /// The planner, or why it could not be built (reported by preflight, before any
    /// planner spend).
    pub planner: Result<Planner, ProviderError>,
    pub sandbox: Box<dyn Sandbox>,
    pub target: Target,
    pub host_env: HostEnv,
    pub cancel: Cancel,
    pub events: Events,
    /// Where `note.write` also writes the result JSON (`--result-file`).
    pub result_file: Option<PathBuf>,
    /// The outcome of each terminal state of the contract, to map the end to a status.
    pub outcomes: BTreeMap<String, Outcome>,
}

/// The AgentRunner host of one task.
pub struct RunnerHost {
    setup: Setup,
    started_at: Timestamp,
    prd: Option<String>,
    preflight: Option<PreflightReport>,
    criteria: Vec<Criterion>,
    verdicts: BTreeMap<String, (String, String)>,
    assessment: Option<CompletionAssessmentPayload>,
    /// The worker call of the last `run_worker` decision.
    pending_call: Option<WorkerCall>,
    /// The question of the last `ask_human` decision.
    question: Option<String>,
    runs: Vec<WorkerRun>,
    run_ids: RunIds,
    last_test: Option<TestResult>,
    /// What the note shows of each planner exchange (the prompts themselves go to the run
    /// record, not memory: a long task would hold every conversation).
    exchanges: Vec<Value>,
    /// Problems of the finalizers (a sandbox not removed), for the note and the result.
    warnings: Vec<String>,
    timeline: Vec<String>,
    /// Why the task stopped outside the contract's terminal states, if it did.
    abandoned: Option<String>,
    /// The latest thing that kept the task from completing, in a sentence (`ending`): the
    /// summary of a task that did not complete.
    cause: Option<String>,
    /// Set by `note.write`.
    finished: Option<Finished>,
    /// Ties this run's logs, events, note and result together.
    trace_id: String,
    /// The run's record beside the note (`.agent-runner/task-<id>/`).
    artifacts: Artifacts,
    /// The record's links of each worker run, by run id.
    run_links: BTreeMap<String, Value>,
    /// The record of the last test command's output.
    test_file: Option<StreamFile>,
    /// `runner.tooling`'s worker: the candidate of each run, and the fallback after a
    /// rate-limited one.
    worker_tooling: Option<WorkerTooling>,
}

/// What `note.write` produced.
#[derive(Debug, Clone)]
pub struct Finished {
    pub status: Status,
    pub note: Option<PathBuf>,
    /// A note or result that could not be written.
    pub write_error: Option<String>,
}

impl RunnerHost {
    /// A host for one run of the task. The run's trace id is the one its events carry
    /// (`Events::with_trace_id`), or a new one they then carry. An earlier run's note,
    /// result and record are moved aside here, so this run's record starts empty.
    pub fn new(mut setup: Setup) -> RunnerHost {
        let trace_id = match setup.events.trace_id() {
            Some(id) => id.to_string(),
            None => {
                let id = new_trace_id();
                setup.events.set_trace_id(&id);
                id
            }
        };
        let warnings = rotate_earlier(&setup.task.repo, &setup.task.id);
        let mut artifacts = Artifacts::new(&setup.task.repo, &setup.task.id, &trace_id);
        // What the worker is given and the planner's key are never written, even when a
        // program echoes them.
        keep_worker_secrets(&mut artifacts, &setup.task.worker, &*setup.host_env);
        let key = &setup.task.meta.api_key_env;
        if let Some(value) = (setup.host_env)(key) {
            artifacts.keep_secret(key, &value);
        }
        RunnerHost {
            setup,
            started_at: time::now(),
            prd: None,
            preflight: None,
            criteria: Vec::new(),
            verdicts: BTreeMap::new(),
            assessment: None,
            pending_call: None,
            question: None,
            runs: Vec::new(),
            run_ids: RunIds::new(),
            last_test: None,
            exchanges: Vec::new(),
            warnings,
            timeline: Vec::new(),
            abandoned: None,
            cause: None,
            finished: None,
            trace_id,
            artifacts,
            run_links: BTreeMap::new(),
            test_file: None,
            worker_tooling: None,
        }
    }

    /// Runs the worker under `runner.tooling`: each run's record names its candidate, and
    /// a rate-limited run moves the next ones to another candidate when one fits.
    pub(crate) fn set_worker_tooling(&mut self, tooling: WorkerTooling) {
        self.worker_tooling = Some(tooling);
    }

    /// The id of this task run in its logs, events, note and result.
    pub fn trace_id(&self) -> &str {
        &self.trace_id
    }

    /// Records why the task stopped outside a terminal state, before the host runs the
    /// finalizers for that exit.
    pub fn abandon(&mut self, reason: String) {
        self.timeline.push(format!("stopped: {reason}"));
        self.abandoned = Some(reason);
    }

    /// Adds a line to the note's timeline (the setup's choices, e.g. `runner.tooling`'s
    /// worker).
    pub fn record(&mut self, line: String) {
        self.timeline.push(line);
    }

    /// What `note.write` produced, once it ran.
    pub fn finished(&self) -> Option<&Finished> {
        self.finished.as_ref()
    }

    pub fn events(&mut self) -> &mut Events {
        &mut self.setup.events
    }

    fn cancelled(&self) -> Result<(), ActionFailure> {
        if self.setup.cancel.is_cancelled() {
            Err(ActionFailure::new("cancelled").with("details", "the task was cancelled"))
        } else {
            Ok(())
        }
    }

    fn planner(&mut self) -> Result<&mut Planner, String> {
        self.setup.planner.as_mut().map_err(|e| e.to_string())
    }

    /// A planner call's exchanges are kept; its failure becomes the action's answer: a
    /// provider that failed is an outcome the contract may retry (until the last
    /// attempt, which the flow decides on as data), a refused reply is data at once (the
    /// planner already asked again with the reason).
    fn planner_result<T>(
        &mut self,
        call: Call<T>,
        effect: &Effect,
    ) -> Result<Result<T, Value>, ActionFailure> {
        for exchange in &call.exchanges {
            let file = self.artifacts.planner_exchange(exchange);
            let mut summary = exchange_summary(exchange);
            summary["file"] = json!(file);
            self.exchanges.push(summary);
        }
        match call.result {
            Ok(payload) => Ok(Ok(payload)),
            Err(e) if e.is_cancelled() || self.setup.cancel.is_cancelled() => {
                Err(ActionFailure::new("cancelled").with("details", e.to_string()))
            }
            // Only a failure that may pass is worth the contract's retry.
            Err(e @ PlannerError::Provider { .. }) if matches!(&e, PlannerError::Provider { error, .. } if error.is_transient()) =>
            {
                let retries_left = effect.retry.as_ref().is_some_and(|r| {
                    r.on.iter().any(|o| o == "provider_error") && effect.attempt <= r.max
                });
                if retries_left {
                    Err(ActionFailure::new("provider_error").with("details", e.to_string()))
                } else {
                    Ok(Err(json!({"ok": false, "error": e.to_string()})))
                }
            }
            Err(e) => Ok(Err(json!({"ok": false, "error": e.to_string()}))),
        }
    }

    fn criterion_states(&self) -> Vec<CriterionState> {
        self.criteria
            .iter()
            .map(|c| {
                let (status, comment) = self
                    .verdicts
                    .get(&c.id)
                    .cloned()
                    .unwrap_or_else(|| ("unknown".to_string(), String::new()));
                CriterionState {
                    criterion: c.clone(),
                    status,
                    comment: (!comment.is_empty()).then_some(comment),
                }
            })
            .collect()
    }

    fn evidence(&self) -> Vec<RunEvidence> {
        self.runs
            .iter()
            .map(|r| RunEvidence {
                id: r.id.clone(),
                exit_code: r.exit_code.unwrap_or(-1),
                duration_ms: r.duration_ms,
                summary: match (&r.error, r.refused.is_empty()) {
                    (Some(e), _) if r.summary.is_empty() => format!("the run failed: {e}"),
                    (Some(e), _) => format!("{} (error: {e})", r.summary),
                    (None, true) => r.summary.clone(),
                    // The planner learns what of its worker_call was not passed.
                    (None, false) => {
                        format!("{}\n(not passed: {})", r.summary, r.refused.join("; "))
                    }
                },
                stdout_tail: r.stdout_tail.clone(),
                diff_stat: r.diff_stat.clone(),
                files_changed: r.files_changed.clone(),
            })
            .collect()
    }

    fn test_evidence(&self) -> Option<TestEvidence> {
        self.last_test.as_ref().map(|t| TestEvidence {
            command: t.command.clone(),
            exit_code: t.exit_code.unwrap_or(-1),
            output_tail: match &t.error {
                Some(e) => format!("{}\n(the command could not run: {e})", t.output_tail),
                None => t.output_tail.clone(),
            },
        })
    }

    fn prd_text(&self) -> String {
        let prd = self.prd.clone().unwrap_or_default();
        match &self.setup.task.description {
            Some(d) => format!("{d}\n\n{prd}"),
            None => prd,
        }
    }

    fn load_prd(&mut self) -> Value {
        match self.setup.task.prd.read() {
            Ok(text) if text.trim().is_empty() => json!({"ok": false, "error": "the PRD is empty"}),
            Ok(text) => {
                self.prd = Some(text);
                json!({"ok": true})
            }
            Err(e) => json!({"ok": false, "error": e.to_string()}),
        }
    }

    fn check_preflight(&mut self) -> Value {
        let mut report = preflight(
            &self.setup.task.worker,
            &self.setup.target,
            &*self.setup.host_env,
            &self.setup.cancel,
        );
        if let Err(e) = &self.setup.planner {
            report.checks.push(super::preflight::Check {
                name: "planner".into(),
                ok: false,
                detail: e.to_string(),
            });
        }
        let failures: Vec<String> = report
            .failures()
            .map(|c| format!("{}: {}", c.name, c.detail))
            .collect();
        self.preflight = Some(report);
        if failures.is_empty() {
            json!({"ok": true})
        } else {
            json!({"ok": false, "error": failures.join("; ")})
        }
    }

    fn plan(&mut self, effect: &Effect) -> Result<Value, ActionFailure> {
        // Nothing new starts (and nothing is spent) once the task is cancelled.
        self.cancelled()?;
        // A suggestion that cannot be encoded is said, not left out of the plan silently.
        let suggested_impl = match self
            .setup
            .task
            .suggested_impl
            .as_ref()
            .map(serde_json::to_value)
        {
            Some(Err(e)) => {
                let error = format!("the suggested implementation could not be encoded: {e}");
                return Ok(json!({"ok": false, "error": error}));
            }
            Some(Ok(v)) => Some(v),
            None => None,
        };
        let request = PlanTaskRequest {
            task_id: self.setup.task.id.clone(),
            title: self.setup.task.title.clone(),
            prd: self.prd_text(),
            suggested_impl,
            test_command: self.setup.task.test.as_ref().map(|t| t.command.clone()),
        };
        let cancel = self.setup.cancel.clone();
        let call = match self.planner() {
            Ok(planner) => planner.plan_task(&request, &cancel),
            Err(e) => return Ok(json!({"ok": false, "error": e})),
        };
        match self.planner_result(call, effect)? {
            Ok(payload) => {
                self.criteria = payload
                    .acceptance_criteria
                    .iter()
                    .map(|c| Criterion {
                        id: c.id.clone(),
                        description: c.description.clone(),
                        critical: c.critical.unwrap_or(true),
                    })
                    .collect();
                let descriptions: Vec<&str> = self
                    .criteria
                    .iter()
                    .map(|c| c.description.as_str())
                    .collect();
                Ok(json!({"ok": true, "acceptance_criteria": descriptions}))
            }
            Err(data) => Ok(data),
        }
    }

    fn next(&mut self, effect: &Effect) -> Result<Value, ActionFailure> {
        // Nothing new starts (and nothing is spent) once the task is cancelled.
        self.cancelled()?;
        let request = NextActionRequest {
            title: self.setup.task.title.clone(),
            prd: self.prd_text(),
            acceptance_criteria: self.criterion_states(),
            runs: self.evidence(),
            loops_used: u32::try_from(self.runs.len()).unwrap_or(u32::MAX),
            max_loops: self.setup.task.max_loops,
            last_test: self.test_evidence(),
        };
        let cancel = self.setup.cancel.clone();
        let call = match self.planner() {
            Ok(planner) => planner.next_action(&request, &cancel),
            Err(e) => return Ok(json!({"ok": false, "error": e})),
        };
        match self.planner_result(call, effect)? {
            Ok(payload) => {
                let action = payload.decision.action.name();
                self.timeline.push(format!(
                    "planner: {action} ({})",
                    payload.decision.reason.trim()
                ));
                if let Some(cause) = ending::decision(&payload.decision) {
                    self.cause = Some(cause);
                }
                self.pending_call = payload.worker_call;
                self.question = payload.decision.question();
                Ok(match &self.question {
                    Some(question) => json!({"ok": true, "action": action, "question": question}),
                    None => json!({"ok": true, "action": action}),
                })
            }
            Err(data) => Ok(data),
        }
    }

    fn work(&mut self, effect: &Effect) -> Result<Value, ActionFailure> {
        // Nothing new starts (and nothing is spent) once the task is cancelled.
        self.cancelled()?;
        let invocation = match self.pending_call.take() {
            Some(call) => Invocation::admit(self.setup.task.worker.kind, &call),
            None => Invocation {
                prompt: self.prd_text(),
                ..Invocation::default()
            },
        };
        let mut config = self.setup.task.worker.clone();
        if let Some(secs) = effect.timeout_secs {
            config.max_run_time_sec = u64::from(secs);
        }
        let turn = WorkerTurn {
            config: &config,
            invocation: &invocation,
            repo: &self.setup.task.repo,
            host_env: &*self.setup.host_env,
        };
        let mut recording = Recording::new(self.setup.sandbox.as_mut());
        let mut run = run_worker(&mut recording, &turn, &mut self.run_ids, &self.setup.cancel);
        run.candidate = self.worker_tooling.as_ref().map(|t| t.choice().summary());
        let links = self.artifacts.worker_run(
            &run.id,
            &invocation.prompt,
            recording.exec.as_ref(),
            run.candidate.as_deref(),
        );
        self.run_links.insert(run.id.clone(), links);
        let outcome = match (&run.error, run.exit_code) {
            (Some(e), _) => format!("error: {e}"),
            (None, Some(code)) => format!(
                "exit code {code}, {} file(s) changed, {} ms",
                run.files_changed.len(),
                run.duration_ms
            ),
            (None, None) => "did not run".to_string(),
        };
        self.setup.events.done("worker.run", &outcome);
        self.timeline.push(format!("{}: {outcome}", run.id));
        // A run that succeeded starts the story afresh: what failed before it is past.
        self.cause = ending::worker_run(&run);
        if let Some(after) = self.worker_tooling.as_mut().and_then(|t| t.after_run(&run)) {
            // The quoted output line is the worker's: redacted like the note's copy.
            tracing::warn!("{}", self.artifacts.redact(&after.line));
            self.timeline.push(after.line);
            if let Some(worker) = after.switch_to {
                keep_worker_secrets(&mut self.artifacts, &worker, &*self.setup.host_env);
                self.setup.task.worker = worker;
            }
        }
        self.runs.push(run);
        self.cancelled()?;
        Ok(Value::Null)
    }

    fn test(&mut self, effect: &Effect) -> Result<Value, ActionFailure> {
        // Nothing new starts (and nothing is spent) once the task is cancelled.
        self.cancelled()?;
        let Some(spec) = self.setup.task.test.clone() else {
            return Ok(json!({"ok": true, "ran": false, "passed": true}));
        };
        let timeout = effect
            .timeout_secs
            .or(spec.timeout_sec)
            .map(|s| Duration::from_secs(u64::from(s)));
        let mut recording = Recording::new(self.setup.sandbox.as_mut());
        let result = run_test_command(
            &mut recording,
            &spec.command,
            spec.cwd.as_deref(),
            timeout,
            &self.setup.cancel,
        );
        let output = recording.exec.as_ref().and_then(|e| e.output.as_ref());
        self.test_file = self.artifacts.test_output(output);
        self.cancelled()?;
        let passed = result.passed();
        let code = result.exit_code.unwrap_or(-1);
        let error = result.error.clone();
        let outcome = match &error {
            Some(e) => format!("could not run: {e}"),
            None if passed => "passed".to_string(),
            None => format!("failed (exit code {code})"),
        };
        self.setup.events.done("tests.run", &outcome);
        self.timeline.push(format!("tests: {outcome}"));
        // Tests that pass leave a failed run as the cause.
        if let Some(cause) = ending::test_run(&result) {
            self.cause = Some(cause);
        }
        self.last_test = Some(result);
        // A command that did not run says nothing about the work: the flow fails on it
        // rather than spending loops on a broken test setup.
        Ok(match error {
            Some(e) => json!({"ok": false, "ran": false, "error": e}),
            None => json!({"ok": true, "ran": true, "passed": passed, "exit_code": code}),
        })
    }

    fn assess(&mut self, effect: &Effect) -> Result<Value, ActionFailure> {
        // Nothing new starts (and nothing is spent) once the task is cancelled.
        self.cancelled()?;
        let request = CompletionAssessmentRequest {
            title: self.setup.task.title.clone(),
            prd: self.prd_text(),
            acceptance_criteria: self.criteria.clone(),
            runs: self.evidence(),
            test: self.test_evidence(),
        };
        let cancel = self.setup.cancel.clone();
        let call = match self.planner() {
            Ok(planner) => planner.completion_assessment(&request, &cancel),
            Err(e) => return Ok(json!({"ok": false, "error": e})),
        };
        match self.planner_result(call, effect)? {
            Ok(payload) => {
                for v in &payload.by_criterion {
                    self.verdicts.insert(
                        v.id.clone(),
                        (v.status.name().to_string(), v.comment.clone()),
                    );
                }
                let satisfied = payload.all_criteria_satisfied;
                if let Some(cause) = ending::verdict(&payload) {
                    self.cause = Some(cause);
                }
                self.timeline.push(format!(
                    "assessment: {} ({})",
                    if satisfied {
                        "satisfied"
                    } else {
                        "not satisfied"
                    },
                    payload.summary.trim()
                ));
                self.assessment = Some(payload);
                Ok(json!({"ok": true, "all_criteria_satisfied": satisfied}))
            }
            Err(data) => Ok(data),
        }
    }

    /// The status a task has that ended in `state`.
    /// A terminal state's outcome decides; a task that stopped elsewhere was cancelled
    /// when the cancel came, else it failed. (A signal during the finalizers of a
    /// finished task does not turn it into a cancelled one.)
    fn status(&self, state: &str) -> Status {
        match self.setup.outcomes.get(state) {
            Some(Outcome::Success) if self.abandoned.is_none() => Status::Complete,
            Some(Outcome::Incomplete) => Status::Incomplete,
            Some(Outcome::Cancelled) => Status::Cancelled,
            Some(Outcome::NeedsHuman) if self.abandoned.is_none() => Status::NeedsHuman,
            Some(_) => Status::Failed,
            None if self.setup.cancel.is_cancelled() => Status::Cancelled,
            None => Status::Failed,
        }
    }

    /// The report of a task that ended in `state`.
    pub fn report(&self, state: &str) -> TaskReport {
        let status = self.status(state);
        let task = &self.setup.task;
        let summary = match (&self.abandoned, status) {
            (Some(reason), _) => format!("The task stopped in {state}: {reason}"),
            (None, Status::Complete) => self.assessment.as_ref().map_or_else(
                || "The task is complete.".to_string(),
                |a| a.summary.clone(),
            ),
            // What kept it from completing, never the contract's transition text.
            (None, _) => ending::summary(status, state, self.cause.as_deref(), self.runs.len()),
        };
        let acceptance_criteria = self
            .criteria
            .iter()
            .map(|c| {
                let verdict = self.verdicts.get(&c.id);
                CriterionResult {
                    id: c.id.clone(),
                    description: c.description.clone(),
                    passed: verdict.is_some_and(|(s, _)| s == "passed")
                        && status == Status::Complete,
                    comment: verdict.map(|(_, c)| c.clone()).filter(|c| !c.is_empty()),
                }
            })
            .collect();
        // What cannot be recorded as JSON is left out of the report, and its warnings say
        // so: the note is still written.
        let mut warnings = self.warnings.clone();
        warnings.extend(self.artifacts.problems());
        let mut encode = |what: &str, value: Result<Value, serde_json::Error>| match value {
            Ok(v) => Some(v),
            Err(e) => {
                warnings.push(format!("{what} could not be recorded: {e}"));
                None
            }
        };
        let test = self
            .last_test
            .as_ref()
            .and_then(|t| Some((t, encode("the last test run", serde_json::to_value(t))?)))
            .map(|(t, mut v)| {
                if let Some(m) = v.as_object_mut() {
                    m.insert("passed".into(), Value::Bool(t.passed()));
                    if let Some(file) = &self.test_file {
                        m.insert("output_file".into(), file.to_json());
                    }
                }
                v
            });
        let suggested_impl = task
            .suggested_impl
            .as_ref()
            .and_then(|s| encode("the suggested implementation", serde_json::to_value(s)));
        let runs = self
            .runs
            .iter()
            .filter_map(|r| encode(&format!("the run {}", r.id), serde_json::to_value(r)))
            .map(|mut v| {
                let links = v
                    .get("id")
                    .and_then(Value::as_str)
                    .and_then(|id| self.run_links.get(id));
                if let (Some(m), Some(links)) = (v.as_object_mut(), links) {
                    m.insert("files".into(), links.clone());
                }
                v
            })
            .collect();
        let validation = (self.last_test.is_some() || self.assessment.is_some()).then(|| {
            json!({
                "test": test,
                "assessment": self.assessment.as_ref().map(|a| a.summary.clone()),
                "all_criteria_satisfied": self.assessment.as_ref().map(|a| a.all_criteria_satisfied),
            })
        });
        TaskReport {
            task: json!({
                "id": task.id,
                "title": task.title,
                "description": task.description,
                "repo": task.repo.display().to_string(),
            }),
            status,
            exit_code: status.exit_code(),
            state: state.to_string(),
            summary,
            question: (status == Status::NeedsHuman)
                .then(|| self.question.clone())
                .flatten(),
            started_at: self.started_at.rfc3339(),
            finished_at: time::now().rfc3339(),
            planner: match &self.setup.planner {
                Ok(p) => p.provider_name(),
                Err(e) => format!("not available ({e})"),
            },
            worker: format!(
                "{} in {}",
                task.worker.kind.name(),
                self.setup.sandbox.describe()
            ),
            prd: self.prd.clone().unwrap_or_default(),
            suggested_impl,
            acceptance_criteria,
            runs,
            validation,
            planner_calls: self.exchanges.clone(),
            warnings,
            timeline: self.timeline.clone(),
            trace_id: self.trace_id.clone(),
            artifacts: self
                .artifacts
                .dir()
                .exists()
                .then(|| self.artifacts.link().to_string()),
            artifacts_dir: self.artifacts.dir().display().to_string(),
        }
    }

    fn write_note(&mut self, state: &str) -> Value {
        let report = self.report(state);
        let mut errors = Vec::new();
        let path = note_path(&self.setup.task.repo, &self.setup.task.id);
        // The note and the result quote the worker's output: what it echoed of its
        // environment is redacted there too.
        let note = match report.note().map(|text| self.artifacts.redact(&text)) {
            Ok(text) => match atomic_write(&path, text.as_bytes()) {
                Ok(()) => Some(path.clone()),
                Err(e) => {
                    errors.push(format!("the note {}: {e}", path.display()));
                    None
                }
            },
            Err(e) => {
                errors.push(e.to_string());
                None
            }
        };
        // The result goes beside the note always (`task-ID.json`), and to `--result-file`.
        match serde_json::to_string_pretty(&report.result()) {
            Ok(text) => {
                let mut text = self.artifacts.redact(&text);
                text.push('\n');
                let beside = path.with_extension("json");
                for file in std::iter::once(&beside).chain(self.setup.result_file.as_ref()) {
                    if let Err(e) = atomic_write(file, text.as_bytes()) {
                        errors.push(format!("the result {}: {e}", file.display()));
                    }
                }
            }
            Err(e) => errors.push(format!("the result could not be written as JSON: {e}")),
        }
        self.finished = Some(Finished {
            status: report.status,
            note,
            write_error: (!errors.is_empty()).then(|| errors.join("; ")),
        });
        Value::Null
    }
}

impl Host for RunnerHost {
    fn perform(&mut self, effect: &Effect) -> Result<Value, ActionFailure> {
        let detail = match effect.attempt {
            1 => String::new(),
            n => format!("attempt {n}"),
        };
        self.setup.events.action(&effect.action, &detail);
        let answer = self.perform_action(effect);
        // An action that could not do its part (`{ok: false, error}`) is what the flow
        // ends on when it fails: its error is the cause.
        if let Ok(value) = &answer
            && value.get("ok") == Some(&Value::Bool(false))
            && let Some(error) = value.get("error").and_then(Value::as_str)
        {
            self.cause = Some(ending::action_error(&effect.action, error));
        }
        answer
    }

    fn facts(&mut self) -> Map<String, Value> {
        Map::new()
    }

    fn stepped(&mut self, step: &Accepted) {
        let message = step.message.as_ref().map(|m| m.text.as_str());
        self.setup.events.state(&step.from, &step.to, message);
        self.timeline.push(match message {
            Some(m) => format!("{} -> {}: {m}", step.from, step.to),
            None => format!("{} -> {}", step.from, step.to),
        });
    }
}

impl RunnerHost {
    /// Performs one of the contract's actions (see [`Host::perform`]).
    fn perform_action(&mut self, effect: &Effect) -> Result<Value, ActionFailure> {
        match effect.action.as_str() {
            "prd.load" => Ok(self.load_prd()),
            // A cancel while Docker answers makes its command fail: that is the cancel,
            // not a failed check or start (the task ends cancelled, not failed).
            "preflight.check" => {
                let checked = self.check_preflight();
                self.cancelled()?;
                Ok(checked)
            }
            "sandbox.start" => {
                self.cancelled()?;
                let cancel = self.setup.cancel.clone();
                let started = self.setup.sandbox.start(&cancel);
                self.cancelled()?;
                Ok(match started {
                    Ok(()) => json!({"ok": true}),
                    Err(e) => json!({"ok": false, "error": e.to_string()}),
                })
            }
            "meta.plan_task" => self.plan(effect),
            "meta.next_action" => self.next(effect),
            "worker.run" => self.work(effect),
            "tests.run" => self.test(effect),
            "meta.completion_assessment" => self.assess(effect),
            "note.write" => {
                let state = effect
                    .args
                    .get("state")
                    .and_then(Value::as_str)
                    .unwrap_or("UNKNOWN")
                    .to_string();
                Ok(self.write_note(&state))
            }
            "sandbox.release" => match self.setup.sandbox.stop() {
                Ok(()) => Ok(Value::Null),
                Err(e) => {
                    let message = format!("the sandbox was not released: {e}");
                    tracing::error!("{message}");
                    self.warnings.push(message);
                    Err(ActionFailure::new("sandbox_error").with("details", e.to_string()))
                }
            },
            other => Err(ActionFailure::new("unknown_action").with(
                "details",
                format!("this runner does not implement `{other}`"),
            )),
        }
    }
}

/// Keeps the values `worker` is given out of the record, the note and the result, even
/// when a program echoes them.
fn keep_worker_secrets(
    artifacts: &mut Artifacts,
    worker: &WorkerConfig,
    host_env: &dyn Fn(&str) -> Option<String>,
) {
    if let Ok(env) = worker.resolve_env(&BTreeMap::new(), host_env) {
        for (name, value) in env {
            artifacts.keep_secret(&name, &value);
        }
    }
}

/// What the note keeps of one planner exchange.
fn exchange_summary(e: &Exchange) -> Value {
    json!({"protocol": e.protocol.name(), "attempt": e.attempt,
           "duration_ms": e.duration_ms, "error": e.error,
           "choice": e.choice.as_ref().map(ToString::to_string)})
}

/// The sandbox as a worker run or a test command sees it, keeping what the one command
/// it runs was given (the variables by name) and left, for the run's record.
struct Recording<'a> {
    inner: &'a mut dyn Sandbox,
    exec: Option<Exec>,
}

impl<'a> Recording<'a> {
    fn new(inner: &'a mut dyn Sandbox) -> Recording<'a> {
        Recording { inner, exec: None }
    }

    fn record(
        &mut self,
        argv: &[String],
        env: &[(String, String)],
        result: &Result<Output, SandboxError>,
    ) {
        self.exec = Some(Exec {
            argv: argv.to_vec(),
            env_names: env.iter().map(|(name, _)| name.clone()).collect(),
            output: result.as_ref().ok().cloned(),
            error: result.as_ref().err().map(ToString::to_string),
        });
    }
}

impl Sandbox for Recording<'_> {
    fn start(&mut self, cancel: &Cancel) -> Result<(), SandboxError> {
        self.inner.start(cancel)
    }

    fn exec(
        &mut self,
        argv: &[String],
        env: &[(String, String)],
        stdin: Option<Vec<u8>>,
        timeout: Option<Duration>,
        cancel: &Cancel,
    ) -> Result<Output, SandboxError> {
        let result = self.inner.exec(argv, env, stdin, timeout, cancel);
        self.record(argv, env, &result);
        result
    }

    fn exec_fresh(
        &mut self,
        argv: &[String],
        timeout: Option<Duration>,
        cancel: &Cancel,
    ) -> Result<Output, SandboxError> {
        let result = self.inner.exec_fresh(argv, timeout, cancel);
        self.record(argv, &[], &result);
        result
    }

    fn stop(&mut self) -> Result<(), SandboxError> {
        self.inner.stop()
    }

    fn workdir(&self) -> String {
        self.inner.workdir()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn environment(&self) -> String {
        self.inner.environment()
    }
}
