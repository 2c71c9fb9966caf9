//! The orchestrator's events (task state changes, run progress, backlog, chat progress,
//! execution state), fanned out to every subscriber: the HTTP event stream's clients and
//! the command line's JSON lines. A subscriber that stops reading is dropped once its
//! buffer is full, so a stalled client never holds the orchestrator back; it reconnects
//! and reloads what it shows.

use std::sync::Mutex;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

use serde_json::Value;

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
    use serde_json::json;

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
    fn a_subscriber_that_stops_reading_is_dropped_not_waited_for() {
        let hub = EventHub::new();
        let _stalled = hub.subscribe();
        for i in 0..=BUFFER {
            hub.publish("run", json!({"line": i}));
        }
        assert_eq!(hub.subscribers(), 0);
    }
}
