//! The orchestrator's events (task state changes, run progress, backlog, chat progress,
//! execution state), fanned out to every subscriber: the HTTP event stream's clients and
//! the command line's JSON lines. A subscriber that stops reading is dropped once its
//! buffer is full, so a stalled client never holds the orchestrator back; it reconnects
//! and reloads what it shows.

use std::sync::Mutex;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

use serde_json::{Value, json};

use super::executor::RunLine;
use super::http::ServerEvent;

/// Events buffered per subscriber before it is dropped.
const BUFFER: usize = 4096;

/// Where events go.
#[derive(Debug, Default)]
pub struct EventHub {
    subscribers: Mutex<Vec<SyncSender<ServerEvent>>>,
}

impl EventHub {
    pub fn new() -> EventHub {
        EventHub::default()
    }

    /// A new subscriber: every event published from now on.
    pub fn subscribe(&self) -> Receiver<ServerEvent> {
        let (tx, rx) = sync_channel(BUFFER);
        self.lock().push(tx);
        rx
    }

    /// Sends `data` as an event of type `name` to every subscriber.
    pub fn publish(&self, name: &str, data: Value) {
        let event = ServerEvent {
            name: name.to_string(),
            data,
        };
        self.lock().retain(|tx| match tx.try_send(event.clone()) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                tracing::warn!("an event subscriber stopped reading; dropping it");
                false
            }
            Err(TrySendError::Disconnected(_)) => false,
        });
    }

    /// Publishes lines of an attempt's events file as `run` events: `{task, attempt,
    /// event}` for a JSON line (agent-runner's event object), `{task, attempt, text}` for
    /// another line, `{task, attempt, skipped_bytes}` for a line too long to forward.
    pub(crate) fn publish_run(&self, task: &str, attempt: u32, lines: Vec<RunLine>) {
        for line in lines {
            let (key, value) = match line {
                RunLine::Event(event) => ("event", event),
                RunLine::Text(text) => ("text", Value::String(text)),
                RunLine::Skipped(bytes) => ("skipped_bytes", json!(bytes)),
            };
            let mut data = json!({"task": task, "attempt": attempt});
            data[key] = value;
            self.publish("run", data);
        }
    }

    /// How many subscribers are listening.
    pub fn subscribers(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<SyncSender<ServerEvent>>> {
        self.subscribers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_subscriber_gets_each_event_and_the_gone_are_dropped() {
        let hub = EventHub::new();
        let a = hub.subscribe();
        let b = hub.subscribe();
        hub.publish("task", json!({"id": "t1"}));
        assert_eq!(a.recv().unwrap().data["id"], "t1");
        assert_eq!(b.recv().unwrap().name, "task");
        drop(b);
        hub.publish("task", json!({"id": "t2"}));
        assert_eq!(hub.subscribers(), 1);
        assert_eq!(a.recv().unwrap().data["id"], "t2");
    }

    #[test]
    fn run_lines_are_published_in_order_each_as_its_kind() {
        let hub = EventHub::new();
        let rx = hub.subscribe();
        hub.publish_run(
            "t1",
            2,
            vec![
                RunLine::Event(json!({"event": "state", "to": "B"})),
                RunLine::Text("oops".into()),
                RunLine::Skipped(70_000),
            ],
        );
        let got: Vec<(String, Value)> = rx.try_iter().map(|e| (e.name, e.data)).collect();
        let run = |data: Value| ("run".to_string(), data);
        assert_eq!(
            got,
            vec![
                run(json!({"task": "t1", "attempt": 2, "event": {"event": "state", "to": "B"}})),
                run(json!({"task": "t1", "attempt": 2, "text": "oops"})),
                run(json!({"task": "t1", "attempt": 2, "skipped_bytes": 70_000})),
            ]
        );
    }

    #[test]
    fn a_subscriber_that_stops_reading_is_dropped_not_waited_for() {
        let hub = EventHub::new();
        let _stalled = hub.subscribe();
        for i in 0..=BUFFER {
            hub.publish("run", json!({"line": i}));
        }
        assert_eq!(hub.subscribers(), 0);
    }
}
