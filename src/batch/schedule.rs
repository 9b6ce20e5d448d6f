//! Cron schedules with an optional time zone, a clock that tests can replace,
//! and the timetable the daemon sleeps on.

use std::str::FromStr;

use chrono::{DateTime, Local, Utc};
use chrono_tz::Tz;
use croner::Cron;

/// Why a schedule cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("\"{expr}\" is not a cron expression: {message}")]
    Cron { expr: String, message: String },
    #[error("\"{name}\" is not an IANA time zone such as Asia/Shanghai or UTC")]
    Timezone { name: String },
}

/// When a job runs: a cron expression (`0 3 * * *`, or six fields with
/// seconds first) read in a time zone (the machine's local time when none).
#[derive(Debug, Clone)]
pub struct Schedule {
    pub expr: String,
    cron: Cron,
    timezone: Option<Tz>,
}

impl Schedule {
    pub fn parse(expr: &str, timezone: Option<&str>) -> Result<Schedule, ScheduleError> {
        let cron = Cron::from_str(expr).map_err(|e| ScheduleError::Cron {
            expr: expr.to_owned(),
            message: e.to_string(),
        })?;
        let timezone = timezone
            .map(|name| {
                name.parse::<Tz>().map_err(|_| ScheduleError::Timezone {
                    name: name.to_owned(),
                })
            })
            .transpose()?;
        Ok(Schedule {
            expr: expr.to_owned(),
            cron,
            timezone,
        })
    }

    /// The first time strictly after `after` that the schedule fires.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self.timezone {
            Some(tz) => self
                .cron
                .find_next_occurrence(&after.with_timezone(&tz), false)
                .ok()
                .map(|t| t.with_timezone(&Utc)),
            None => self
                .cron
                .find_next_occurrence(&after.with_timezone(&Local), false)
                .ok()
                .map(|t| t.with_timezone(&Utc)),
        }
    }

    /// `t` written in the schedule's time zone, for people.
    pub fn display_time(&self, t: DateTime<Utc>) -> String {
        match self.timezone {
            Some(tz) => t
                .with_timezone(&tz)
                .format("%Y-%m-%d %H:%M:%S %Z")
                .to_string(),
            None => t
                .with_timezone(&Local)
                .format("%Y-%m-%d %H:%M:%S %:z")
                .to_string(),
        }
    }
}

/// Where "now" comes from; tests use a fixed or stepped clock.
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// The machine's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// The next firing time of each scheduled job. A job whose run outlasts its
/// next firing time skips the missed ones (runs never queue up or overlap).
#[derive(Debug, Clone)]
pub struct Timetable {
    entries: Vec<(Schedule, Option<DateTime<Utc>>)>,
}

impl Timetable {
    /// Plans the first firing of every schedule after `now`.
    pub fn new(schedules: Vec<Schedule>, now: DateTime<Utc>) -> Timetable {
        Timetable {
            entries: schedules
                .into_iter()
                .map(|s| {
                    let next = s.next_after(now);
                    (s, next)
                })
                .collect(),
        }
    }

    /// The earliest planned firing, if any schedule still fires.
    pub fn next_wake(&self) -> Option<DateTime<Utc>> {
        self.entries.iter().filter_map(|(_, next)| *next).min()
    }

    /// The planned firing of entry `i`.
    pub fn next_of(&self, i: usize) -> Option<DateTime<Utc>> {
        self.entries.get(i).and_then(|(_, next)| *next)
    }

    /// Entries due at `now`, in order.
    pub fn due(&self, now: DateTime<Utc>) -> Vec<usize> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, (_, next))| next.is_some_and(|t| t <= now))
            .map(|(i, _)| i)
            .collect()
    }

    /// Entry `i` has run (or was skipped); plans its next firing after `now`.
    pub fn done(&mut self, i: usize, now: DateTime<Utc>) {
        if let Some((schedule, next)) = self.entries.get_mut(i) {
            *next = schedule.next_after(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn utc(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 14, h, m, s).unwrap()
    }

    #[test]
    fn next_run_honours_the_time_zone() {
        let s = Schedule::parse("0 3 * * *", Some("Asia/Shanghai")).unwrap();
        // 03:00 in Shanghai is 19:00 UTC the day before.
        assert_eq!(s.next_after(utc(12, 0, 0)), Some(utc(19, 0, 0)));
        assert_eq!(s.display_time(utc(19, 0, 0)), "2026-03-15 03:00:00 CST");
        let s = Schedule::parse("0 3 * * *", Some("UTC")).unwrap();
        assert_eq!(
            s.next_after(utc(3, 0, 0)),
            Some(Utc.with_ymd_and_hms(2026, 3, 15, 3, 0, 0).unwrap())
        );
    }

    #[test]
    fn seconds_field_and_bad_input() {
        let s = Schedule::parse("*/5 * * * * *", Some("UTC")).unwrap();
        assert_eq!(s.next_after(utc(1, 2, 3)), Some(utc(1, 2, 5)));
        assert!(Schedule::parse("0 25 * * *", None).is_err());
        assert!(Schedule::parse("every night", None).is_err());
        assert!(matches!(
            Schedule::parse("0 3 * * *", Some("Moon/Base")),
            Err(ScheduleError::Timezone { .. })
        ));
    }

    /// A clock the test moves by hand.
    struct StepClock(std::sync::Mutex<DateTime<Utc>>);

    impl Clock for StepClock {
        fn now(&self) -> DateTime<Utc> {
            *self.0.lock().unwrap()
        }
    }

    #[test]
    fn timetable_fires_each_job_on_time_and_skips_missed_runs() {
        let clock = StepClock(std::sync::Mutex::new(utc(2, 59, 0)));
        let nightly = Schedule::parse("0 3 * * *", Some("UTC")).unwrap();
        let hourly = Schedule::parse("30 * * * *", Some("UTC")).unwrap();
        let mut table = Timetable::new(vec![nightly, hourly], clock.now());
        assert_eq!(table.next_wake(), Some(utc(3, 0, 0)));
        assert!(table.due(clock.now()).is_empty());

        *clock.0.lock().unwrap() = utc(3, 0, 0);
        assert_eq!(table.due(clock.now()), [0]);
        // The nightly run takes 45 minutes: the hourly job fired meanwhile.
        *clock.0.lock().unwrap() = utc(3, 45, 0);
        table.done(0, clock.now());
        assert_eq!(table.due(clock.now()), [1]);
        table.done(1, clock.now());
        // The missed 03:30 is not queued again: next is 04:30.
        assert_eq!(table.next_of(1), Some(utc(4, 30, 0)));
        assert_eq!(
            table.next_of(0),
            Some(Utc.with_ymd_and_hms(2026, 3, 15, 3, 0, 0).unwrap())
        );
        assert_eq!(table.next_wake(), Some(utc(4, 30, 0)));
    }
}
