//! When to try a failed request again: exponential backoff with jitter,
//! honouring the server's `Retry-After`.

use std::time::{Duration, SystemTime};

/// How a backend's failed requests are retried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so `retries + 1` attempts at most).
    pub retries: u32,
    /// Delay before the first retry; doubled for each further retry.
    pub base: Duration,
    /// Longest delay between attempts (also caps `Retry-After`).
    pub max: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            retries: 3,
            base: Duration::from_millis(500),
            max: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// Delay before retry number `retry` (1-based). `retry_after` from the
    /// server wins when given; otherwise `base · 2^(retry-1)`, between 50%
    /// and 100% of it at random, so that clients that failed together do
    /// not come back together.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max);
        }
        let exp = self
            .base
            .saturating_mul(1u32 << (retry.saturating_sub(1)).min(16))
            .min(self.max);
        exp.mul_f64(0.5 + fastrand::f64() * 0.5)
    }
}

/// Parses a `Retry-After` header value: seconds or an HTTP date.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs >= 0.0 && secs.is_finite()).then(|| Duration::from_secs_f64(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let policy = RetryPolicy {
            retries: 5,
            base: Duration::from_millis(100),
            max: Duration::from_secs(1),
        };
        for _ in 0..50 {
            let d1 = policy.delay(1, None);
            assert!((50..=100).contains(&d1.as_millis()), "{d1:?}");
            let d3 = policy.delay(3, None);
            assert!((200..=400).contains(&d3.as_millis()), "{d3:?}");
            assert!(policy.delay(10, None) <= Duration::from_secs(1));
        }
        assert_eq!(
            policy.delay(1, Some(Duration::from_millis(700))),
            Duration::from_millis(700)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(30))),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn reads_retry_after_seconds_and_dates() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        let past = httpdate::fmt_http_date(SystemTime::UNIX_EPOCH);
        assert_eq!(parse_retry_after(&past), Some(Duration::ZERO));
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(120));
        let d = parse_retry_after(&later).unwrap();
        assert!((110..=120).contains(&d.as_secs()), "{d:?}");
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }
}
