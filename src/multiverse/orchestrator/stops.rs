//! How attempts stop before they end by themselves: a user's cancel, the orchestrator's
//! own graceful shutdown (interrupted, queued again) and the recovery after a crash, and
//! how an ended attempt is recorded and submitted to its task's session.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::{
    AttemptEnd, Orchestrator, OrchestratorError, Outcome, StoppedBy, Submitted, TaskEvent, TaskId,
    TaskRuntime, executor, runtime_set,
};

impl Orchestrator {
    /// After opening a workspace: every attempt left unfinished by a crash is ended as
    /// interrupted (its process stopped if it still runs, its containers removed) and its
    /// task re-queued by the contract; then every task's dependencies are evaluated.
    pub fn recover(&mut self) -> Result<(), OrchestratorError> {
        let unfinished: Vec<(TaskId, u32, Option<u32>, String)> = self
            .state()
            .runtime
            .iter()
            .filter_map(|(id, rt)| {
                let last = rt.attempts.last()?;
                (last.finished_at.is_none() && !self.running.contains_key(id))
                    .then(|| (id.clone(), last.number, last.pid, last.run_dir.clone()))
            })
            .collect();
        for (id, number, pid, run_dir) in unfinished {
            if let Some(pid) = pid {
                executor::stop_orphan(pid, &run_dir, self.settings.grace);
            }
            executor::remove_run_containers(Path::new(&run_dir));
            tracing::warn!(task = %id, attempt = number, "an attempt was interrupted (the orchestrator stopped while it ran)");
            let mut rt = self.runtime(&id)?.clone();
            if let Some(last) = rt.attempts.last_mut() {
                last.finished_at = Some(self.clock.rfc3339());
                last.status = Some("interrupted".into());
                last.summary = Some("the orchestrator stopped while this attempt ran".into());
            }
            self.store.apply(vec![runtime_set(&id, rt)])?;
            self.submit(&id, &TaskEvent::Interrupted)?;
        }
        // What a previous writer left startable is startable now.
        self.startable = self
            .state()
            .runtime
            .iter()
            .filter(|(_, rt)| self.lifecycle.takes(&rt.lifecycle, "start"))
            .map(|(id, _)| id.clone())
            .collect();
        let all: Vec<TaskId> = self.state().plan.tasks.keys().cloned().collect();
        self.refresh(&all)?;
        Ok(())
    }

    /// A user's cancel: a running task is stopped (SIGTERM; its end is the contract's
    /// cancel), any other is cancelled at once. Never a retry.
    pub fn cancel(&mut self, id: &TaskId) -> Result<(), OrchestratorError> {
        self.runtime(id)?;
        if let Some(flight) = self.running.get_mut(id) {
            if flight.stopping_since.is_none() {
                flight.attempt.terminate();
                flight.stopping_since = Some(Instant::now());
                self.events
                    .publish("task", json!({"task": id, "stopping": true}));
            }
            return Ok(());
        }
        let submitted = self.lifecycle.cancel(&self.runtime(id)?.lifecycle);
        self.apply(id, submitted)
    }

    /// A graceful shutdown (SIGTERM, Ctrl-C of `serve` or `run`): every running attempt
    /// is stopped and, unless it succeeds first, ends `interrupted` with its task queued
    /// again for the next start, exactly as after a crash; nothing new starts, and the
    /// execution state is left as it was. Only a user's cancel cancels.
    pub fn interrupt_all(&mut self) {
        self.draining = true;
        for (id, flight) in &mut self.running {
            // An attempt a user already stopped stays the user's cancel: a shutdown that
            // follows must not bring the task back.
            if flight.stopping_since.is_none() {
                flight.interrupting = true;
                flight.attempt.terminate();
                flight.stopping_since = Some(Instant::now());
                self.events
                    .publish("task", json!({"task": id, "stopping": true}));
            }
        }
    }

    /// An attempt's process ended: the rest of its events are forwarded, then its end
    /// is recorded.
    pub(super) fn ended(&mut self, id: &TaskId, end: AttemptEnd) -> Result<(), OrchestratorError> {
        let stopped = match self.running.remove(id) {
            Some(mut flight) => {
                self.events
                    .publish_run(id.as_str(), flight.number, flight.tail.drain());
                match (flight.stopping_since, flight.interrupting) {
                    (None, _) => StoppedBy::Nobody,
                    (Some(_), false) => StoppedBy::User,
                    (Some(_), true) => StoppedBy::Shutdown,
                }
            }
            None => StoppedBy::Nobody,
        };
        self.finish(id, end, stopped)
    }

    /// Records an attempt's end and submits it to the task's session. An attempt a user
    /// stopped is the contract's cancel unless it succeeded first: a process stopped
    /// before it could report (killed, or TERM before its handler was set up) must not
    /// count as a failure to retry.
    pub(super) fn finish(
        &mut self,
        id: &TaskId,
        mut end: AttemptEnd,
        stopped: StoppedBy,
    ) -> Result<(), OrchestratorError> {
        let instance = self.runtime(id)?.lifecycle.clone();
        let exited = self.lifecycle.submit(&instance, &TaskEvent::from(&end));
        // What counts as success is the contract's: the end is submitted (a pure step) and
        // only when it does not succeed is a stopped attempt taken as the user's cancel,
        // or as interrupted when the orchestrator itself was stopping.
        let succeeded = exited
            .accepted()
            .is_some_and(|t| t.finished == Some(Outcome::Success));
        let submitted = match stopped {
            StoppedBy::User if !succeeded => self.lifecycle.cancel(&instance),
            StoppedBy::Shutdown if !succeeded => {
                end.status = Some("interrupted".into());
                end.summary = "the orchestrator stopped while this attempt ran".into();
                self.lifecycle.submit(&instance, &TaskEvent::Interrupted)
            }
            _ => exited,
        };
        let finished_at = self.clock.rfc3339();
        let record = |rt: &mut TaskRuntime| {
            if let Some(last) = rt.attempts.last_mut() {
                last.finished_at = Some(finished_at);
                last.exit_code = end.exit_code;
                last.status = end.status.clone();
                last.summary = Some(end.summary.clone());
                last.files_changed = end.files_changed.clone();
            }
        };
        self.events.publish(
            "attempt",
            json!({"task": id, "ended": true, "exit_code": end.exit_code, "status": end.status,
                   "summary": end.summary, "at_ms": self.clock.now_ms()}),
        );
        if let Submitted::Rejected(refusal) = &submitted {
            // The end is kept even when the session refuses it (it should not): the
            // attempt must not look as if it still ran.
            tracing::error!(task = %id, key = %refusal.key, "the task's session refused an attempt's end");
            let mut rt = self.runtime(id)?.clone();
            record(&mut rt);
            self.store.apply(vec![runtime_set(id, rt)])?;
            return Err(OrchestratorError::Refused {
                task: id.clone(),
                key: refusal.key.clone(),
                message: refusal.message.text.clone(),
            });
        }
        self.apply_with(id, submitted, record)
    }
}
