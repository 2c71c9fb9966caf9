//! When and how long the HTTP clients that retry (the embedding endpoint, the planner's chat
//! provider) wait before trying again: which answers are worth another try, the server's
//! `Retry-After`, and a jittered exponential backoff.

use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

/// The first retry waits about this long by default; each further one twice as long.
pub(crate) const DEFAULT_BACKOFF: Duration = Duration::from_millis(500);
/// No backoff is longer than this.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A server's `Retry-After` is honoured up to this.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Whether an HTTP status is worth another try: a timeout (408), throttling (429) or a
/// server error (5xx). Any other refusal would be refused again.
pub(crate) fn retryable(status: u16) -> bool {
    status == 408 || status == 429 || (500..600).contains(&status)
}

/// The server's `Retry-After` in seconds, if it sent one. An HTTP date is not honoured
/// (the backoff applies then): no server we talk to sends one.
pub(crate) fn retry_after(headers: &ureq::http::HeaderMap) -> Option<Duration> {
    headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

/// The wait before retry number `retry` (0-based): the server's `Retry-After` (capped) if
/// it sent one, else exponential from `first`, capped, at a random point of its upper half
/// so that many clients do not retry in step.
pub(crate) fn delay(first: Duration, retry: u32, retry_after: Option<Duration>) -> Duration {
    let random = RandomState::new().hash_one(Instant::now());
    delay_at(first, retry, retry_after, random)
}

/// [`delay`] with the random number given.
fn delay_at(first: Duration, retry: u32, retry_after: Option<Duration>, random: u64) -> Duration {
    if let Some(after) = retry_after {
        return after.min(MAX_RETRY_AFTER);
    }
    let full = first
        .saturating_mul(2u32.saturating_pow(retry))
        .min(MAX_BACKOFF);
    let fraction = 0.5 + (random % 1000) as f64 / 2000.0;
    full.mul_f64(fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_throttling_and_server_errors_are_retried_and_nothing_else() {
        for status in [408, 429, 500, 502, 503, 504] {
            assert!(retryable(status), "{status}");
        }
        for status in [200, 301, 400, 401, 403, 404, 413, 422] {
            assert!(!retryable(status), "{status}");
        }
    }

    #[test]
    fn the_backoff_doubles_with_jitter_is_capped_and_retry_after_wins() {
        let base = Duration::from_millis(100);
        for retry in 0..4 {
            let full = base * 2u32.pow(retry);
            let low = delay_at(base, retry, None, 0);
            let high = delay_at(base, retry, None, 999);
            assert_eq!(low, full / 2, "{retry}");
            assert!(
                high < full && high > full.mul_f64(0.99),
                "{retry}: {high:?}"
            );
        }
        for retry in 0..40 {
            let d = delay(DEFAULT_BACKOFF, retry, None);
            let full = DEFAULT_BACKOFF
                .saturating_mul(2u32.saturating_pow(retry))
                .min(MAX_BACKOFF);
            assert!(d >= full / 2 && d <= full, "{retry}: {d:?}");
        }
        assert_eq!(
            delay(base, 0, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert_eq!(
            delay(base, 0, Some(Duration::from_secs(86_400))),
            MAX_RETRY_AFTER
        );
    }

    #[test]
    fn retry_after_is_read_in_seconds_and_anything_else_is_ignored() {
        let headers = |value: &str| {
            let mut h = ureq::http::HeaderMap::new();
            h.insert("retry-after", value.parse().unwrap());
            h
        };
        assert_eq!(retry_after(&headers(" 3 ")), Some(Duration::from_secs(3)));
        assert_eq!(retry_after(&headers("Wed, 21 Oct 2015 07:28:00 GMT")), None);
        assert_eq!(retry_after(&ureq::http::HeaderMap::new()), None);
    }
}
