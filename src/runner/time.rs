//! Wall-clock times as the Task Note and the result JSON print them: RFC 3339 in UTC
//! with millisecond precision (the original printed Go's monotonic-clock suffix, AR-M9).
//! Hand-written to keep a date crate out of the build for two formats.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A moment, to the millisecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Timestamp {
    /// Milliseconds since 1970-01-01T00:00:00Z (clamped at the epoch).
    pub millis: u64,
}

/// Now.
pub(crate) fn now() -> Timestamp {
    Timestamp::from(SystemTime::now())
}

impl From<SystemTime> for Timestamp {
    fn from(time: SystemTime) -> Timestamp {
        let since = time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
        Timestamp {
            millis: u64::try_from(since.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

impl Timestamp {
    /// `2026-11-24T07:05:03.123Z`.
    pub(crate) fn rfc3339(self) -> String {
        let (date, (h, m, s)) = self.civil();
        format!("{date}T{h:02}:{m:02}:{s:02}.{:03}Z", self.millis % 1000)
    }

    /// `20261124-070503`, for ids and file names.
    pub(crate) fn compact(self) -> String {
        let ((y, mo, d), (h, m, s)) = self.parts();
        format!("{y:04}{mo:02}{d:02}-{h:02}{m:02}{s:02}")
    }

    /// Milliseconds from `self` to `later` (0 when `later` is earlier).
    #[cfg(test)]
    pub(crate) fn millis_until(self, later: Timestamp) -> u64 {
        later.millis.saturating_sub(self.millis)
    }

    fn civil(self) -> (String, (u64, u64, u64)) {
        let ((y, mo, d), time) = self.parts();
        (format!("{y:04}-{mo:02}-{d:02}"), time)
    }

    /// ((year, month, day), (hour, minute, second)) in UTC.
    fn parts(self) -> ((i64, u64, u64), (u64, u64, u64)) {
        let secs = self.millis / 1000;
        let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2);
        let rem = secs % 86_400;
        (
            civil_from_days(days),
            (rem / 3600, (rem % 3600) / 60, rem % 60),
        )
    }
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u64, u64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        u64::try_from(month).unwrap_or(1),
        u64::try_from(day).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_moments_format_as_rfc3339() {
        assert_eq!(
            Timestamp { millis: 0 }.rfc3339(),
            "1970-01-01T00:00:00.000Z"
        );
        // 2000-02-29 (a leap day of a century leap year) 12:34:56.789.
        let t = Timestamp {
            millis: 951_827_696_789,
        };
        assert_eq!(t.rfc3339(), "2000-02-29T12:34:56.789Z");
        assert_eq!(t.compact(), "20000229-123456");
        // 2026-11-24T00:00:00Z.
        assert_eq!(
            Timestamp {
                millis: 1_795_478_400_000
            }
            .rfc3339(),
            "2026-11-24T00:00:00.000Z"
        );
    }

    #[test]
    fn durations_never_go_negative() {
        let a = Timestamp { millis: 10 };
        let b = Timestamp { millis: 25 };
        assert_eq!(a.millis_until(b), 15);
        assert_eq!(b.millis_until(a), 0);
    }
}
