//! Per-backend admission: at most `max_in_flight` requests at once and at
//! most N requests started in any sliding window (`rate_limit = "N/60s"`).

use std::collections::VecDeque;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;

/// `N/<window>`: at most N request starts per window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub requests: u32,
    pub window: Duration,
}

/// A `rate_limit` string that does not read as `N/60s`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("'{0}' is not a rate like \"20/60s\", \"5/1s\" or \"100/1m\"")]
pub struct RateLimitError(String);

impl FromStr for RateLimit {
    type Err = RateLimitError;

    fn from_str(s: &str) -> Result<RateLimit, RateLimitError> {
        let bad = || RateLimitError(s.to_owned());
        let (n, window) = s.trim().split_once('/').ok_or_else(bad)?;
        let requests: u32 = n.trim().parse().map_err(|_| bad())?;
        let window = window.trim();
        let (number, unit) = window
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .map_or((window, "s"), |i| window.split_at(i));
        let number: f64 = if number.is_empty() {
            1.0
        } else {
            number.parse().map_err(|_| bad())?
        };
        let seconds = match unit.trim() {
            "ms" => number / 1000.0,
            "s" | "sec" => number,
            "m" | "min" => number * 60.0,
            "h" => number * 3600.0,
            _ => return Err(bad()),
        };
        if requests == 0 || !(seconds > 0.0 && seconds.is_finite()) {
            return Err(bad());
        }
        Ok(RateLimit {
            requests,
            window: Duration::from_secs_f64(seconds),
        })
    }
}

/// Admission control for one backend.
#[derive(Debug)]
pub struct Limiter {
    permits: Semaphore,
    rate: Option<RateLimit>,
    /// Start times of the requests inside the current window.
    starts: Mutex<VecDeque<Instant>>,
}

impl Limiter {
    pub fn new(max_in_flight: usize, rate: Option<RateLimit>) -> Limiter {
        Limiter {
            permits: Semaphore::new(max_in_flight.max(1)),
            rate,
            starts: Mutex::new(VecDeque::new()),
        }
    }

    /// Waits for a free slot and, if rate limited, for room in the window.
    /// The request may start when this returns; it ends when the permit drops.
    pub async fn acquire(&self) -> SemaphorePermit<'_> {
        let permit = self.permits.acquire().await.expect("limiter never closed");
        if let Some(rate) = self.rate {
            loop {
                let wait = {
                    let mut starts = self.starts.lock().unwrap_or_else(|e| e.into_inner());
                    let now = Instant::now();
                    while starts.front().is_some_and(|t| now - *t >= rate.window) {
                        starts.pop_front();
                    }
                    if starts.len() < rate.requests as usize {
                        starts.push_back(now);
                        None
                    } else {
                        starts.front().map(|t| *t + rate.window - now)
                    }
                };
                match wait {
                    None => break,
                    Some(d) => tokio::time::sleep(d).await,
                }
            }
        }
        permit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn parses_rates() {
        let r: RateLimit = "20/60s".parse().unwrap();
        assert_eq!((r.requests, r.window), (20, Duration::from_secs(60)));
        let r: RateLimit = "100/1m".parse().unwrap();
        assert_eq!(r.window, Duration::from_secs(60));
        let r: RateLimit = "5/s".parse().unwrap();
        assert_eq!(r.window, Duration::from_secs(1));
        for bad in ["", "20", "0/60s", "x/60s", "20/60y", "20/0s"] {
            assert!(bad.parse::<RateLimit>().is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn rate_limit_spaces_request_starts() {
        let limiter = Limiter::new(10, Some("3/150ms".parse().unwrap()));
        let begin = Instant::now();
        let mut starts = Vec::new();
        for _ in 0..7 {
            let _p = limiter.acquire().await;
            starts.push(Instant::now() - begin);
        }
        // Any 3 consecutive starts span at most one window; the 4th waits.
        for i in 3..7 {
            assert!(
                starts[i] - starts[i - 3] >= Duration::from_millis(150),
                "{starts:?}"
            );
        }
    }

    #[tokio::test]
    async fn never_more_than_max_in_flight() {
        let limiter = Arc::new(Limiter::new(3, None));
        let current = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..12)
            .map(|_| {
                let (limiter, current, peak) = (limiter.clone(), current.clone(), peak.clone());
                tokio::spawn(async move {
                    let _p = limiter.acquire().await;
                    let now = current.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    current.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(peak.load(Ordering::SeqCst), 3);
    }
}
