//! Cooperative cancellation for everything a task runs. A signal handler, a deadline or a
//! test sets the token; every wait that can take long (a child process, an HTTP request,
//! a backoff sleep) watches it, so a cancelled task stops within a poll interval and its
//! finalizers still run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A cloneable cancellation flag: every clone sees the same state.
#[derive(Clone, Default, Debug)]
pub struct Cancel {
    inner: Arc<Inner>,
}

#[derive(Default, Debug)]
struct Inner {
    cancelled: AtomicBool,
    /// Wakes sleepers at once when the token is cancelled.
    lock: Mutex<()>,
    wake: Condvar,
}

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Cancels every clone of this token. Idempotent.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::SeqCst);
        let _guard = self.inner.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.inner.wake.notify_all();
    }

    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Sleeps for `duration` or until cancelled, whichever comes first. Returns whether
    /// the token is cancelled.
    pub fn sleep(&self, duration: Duration) -> bool {
        let deadline = Instant::now() + duration;
        let mut guard = self.inner.lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if self.is_cancelled() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            guard = match self.inner.wake.wait_timeout(guard, deadline - now) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_sees_the_cancel_and_wakes_a_sleeper_early() {
        let token = Cancel::new();
        let clone = token.clone();
        let started = Instant::now();
        let sleeper = std::thread::spawn(move || clone.sleep(Duration::from_secs(30)));
        std::thread::sleep(Duration::from_millis(20));
        token.cancel();
        assert!(sleeper.join().unwrap());
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(token.is_cancelled());
    }

    #[test]
    fn a_sleep_without_cancel_runs_its_time() {
        let token = Cancel::new();
        assert!(!token.sleep(Duration::from_millis(5)));
        assert!(!token.is_cancelled());
    }
}
