//! Progress a user can follow while a task runs: one line per state change and action on
//! the progress stream the binary hands over (stderr in text mode), and the same as JSON
//! lines in the `--events` file, apart from the logs. Writing never fails a task: a closed
//! pipe or a full disk only loses progress.

use std::fs::File;
use std::io::{BufWriter, Write};

use serde_json::{Value, json};

use super::time;

/// A stream of progress lines (the binary's stderr).
pub type Progress = Box<dyn Write + Send>;

/// Where progress goes.
#[derive(Default)]
pub struct Events {
    /// One line per event, when given.
    text: Option<Progress>,
    file: Option<BufWriter<File>>,
    /// The task run's trace id, in every JSON line.
    trace_id: Option<String>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("text", &self.text.is_some())
            .field("file", &self.file)
            .field("trace_id", &self.trace_id)
            .finish()
    }
}

impl Events {
    /// Progress lines to `text` when given, and JSON lines in `file` when given.
    pub fn new(text: Option<Progress>, file: Option<File>) -> Events {
        Events {
            text,
            file: file.map(BufWriter::new),
            trace_id: None,
        }
    }

    /// The same, every JSON line carrying `trace_id`.
    pub fn with_trace_id(mut self, trace_id: &str) -> Events {
        self.set_trace_id(trace_id);
        self
    }

    pub(crate) fn set_trace_id(&mut self, trace_id: &str) {
        self.trace_id = Some(trace_id.to_string());
    }

    /// The trace id the JSON lines carry, once set.
    pub fn trace_id(&self) -> Option<&str> {
        self.trace_id.as_deref()
    }

    /// The task moved from one state to another; `message` is what the contract said.
    pub fn state(&mut self, from: &str, to: &str, message: Option<&str>) {
        let line = match message {
            Some(m) => format!("{from} -> {to}: {m}"),
            None => format!("{from} -> {to}"),
        };
        self.emit(
            &line,
            json!({"event": "state", "from": from, "to": to, "message": message}),
        );
    }

    /// An action started (`detail` says with what).
    pub fn action(&mut self, action: &str, detail: &str) {
        let line = if detail.is_empty() {
            format!("  {action}")
        } else {
            format!("  {action}: {detail}")
        };
        self.emit(
            &line,
            json!({"event": "action", "action": action, "detail": detail}),
        );
    }

    /// An action finished (`outcome` in a few words).
    pub fn done(&mut self, action: &str, outcome: &str) {
        self.emit(
            &format!("  {action} -> {outcome}"),
            json!({"event": "action_done", "action": action, "outcome": outcome}),
        );
    }

    /// The task ended.
    pub fn finished(&mut self, status: &str, exit_code: i32, note: Option<&str>) {
        let line = match note {
            Some(n) => format!("finished: {status} (exit code {exit_code}); note: {n}"),
            None => format!("finished: {status} (exit code {exit_code})"),
        };
        self.emit(
            &line,
            json!({"event": "finished", "status": status, "exit_code": exit_code, "note": note}),
        );
    }

    fn emit(&mut self, line: &str, mut record: Value) {
        if let Some(text) = &mut self.text {
            // The whole line in one write, as `writeln!` on a locked stderr did.
            let _ = text.write_all(format!("agent-runner: {line}\n").as_bytes());
            let _ = text.flush();
        }
        if let Some(file) = &mut self.file {
            if let Some(map) = record.as_object_mut() {
                map.insert("ts".into(), Value::String(time::now().rfc3339()));
                if let Some(id) = &self.trace_id {
                    map.insert("trace_id".into(), Value::String(id.clone()));
                }
            }
            // Flushed per event, so a reader (or a crash) sees every event up to now.
            let written = serde_json::to_writer(&mut *file, &record)
                .map_err(std::io::Error::other)
                .and_then(|()| file.write_all(b"\n"))
                .and_then(|()| file.flush());
            if let Err(e) = written {
                tracing::warn!(error = %e, "could not write to the events file; no more events");
                self.file = None;
            }
        }
    }
}
