//! User-facing progress on stderr: a bar on a terminal, plain lines otherwise.
//! (Logs go through `tracing`; this is separate.)

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress of a render, counted in chapters.
pub struct Progress {
    bar: Option<ProgressBar>,
    total: usize,
    done: usize,
    audio_s: f64,
}

impl Progress {
    pub fn new(total: usize) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:30.cyan/blue} {pos}/{len} chapters · {msg} · ETA {eta}",
                )
                .expect("valid template")
                .progress_chars("█▉▊▋▌▍▎▏ "),
            );
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        Progress {
            bar,
            total,
            done: 0,
            audio_s: 0.0,
        }
    }

    /// Records a finished chapter (`audio_s` = None when it failed).
    pub fn chapter_done(&mut self, title: &str, audio_s: Option<f64>) {
        self.done += 1;
        self.audio_s += audio_s.unwrap_or(0.0);
        let audio = format_duration(self.audio_s);
        match &self.bar {
            Some(bar) => {
                bar.set_message(format!("{audio} audio"));
                bar.inc(1);
            }
            None => {
                let status = match audio_s {
                    Some(s) => format!("{} audio", format_duration(s)),
                    None => "FAILED".to_owned(),
                };
                eprintln!(
                    "[{}/{}] {title}: {status} (total {audio})",
                    self.done, self.total
                );
            }
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// 3725.0 → "1h 02m 05s".
pub fn format_duration(secs: f64) -> String {
    let s = secs.round() as u64;
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m {sec:02}s"),
        (h, m, sec) => format!("{h}h {m:02}m {sec:02}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(format_duration(5.4), "5s");
        assert_eq!(format_duration(125.0), "2m 05s");
        assert_eq!(format_duration(3725.0), "1h 02m 05s");
    }
}
