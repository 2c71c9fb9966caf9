//! The orchestrator's clock: wall time in milliseconds, behind a trait so tests move it
//! by hand and watch a retry's backoff without sleeping through it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::runner::time::Timestamp;

/// What time it is.
pub trait Clock: Send + Sync {
    /// Unix milliseconds.
    fn now_ms(&self) -> u64;

    /// Now as RFC 3339 (`2026-11-27T01:02:03.456Z`).
    fn rfc3339(&self) -> String {
        Timestamp {
            millis: self.now_ms(),
        }
        .rfc3339()
    }
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        crate::runner::time::now().millis
    }
}

/// A clock that moves only when told (tests).
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    millis: Arc<AtomicU64>,
}

impl ManualClock {
    pub fn starting_at(millis: u64) -> ManualClock {
        ManualClock {
            millis: Arc::new(AtomicU64::new(millis)),
        }
    }

    pub fn advance(&self, millis: u64) {
        self.millis.fetch_add(millis, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.millis.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_prints_rfc3339() {
        let clock = ManualClock::starting_at(1_795_000_000_000);
        assert_eq!(clock.now_ms(), 1_795_000_000_000);
        clock.advance(5_000);
        assert_eq!(clock.now_ms(), 1_795_000_005_000);
        assert_eq!(clock.rfc3339(), "2026-11-18T11:06:45.000Z");
        assert!(SystemClock.now_ms() > 1_700_000_000_000);
    }
}
