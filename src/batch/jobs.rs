//! The jobs file: `[[job]]` tables, each a book kept up to date in an output
//! directory. Read and checked once; every error names the file, the job and
//! the key.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::schedule::{Schedule, ScheduleError};
use crate::audio::encode::Format;
use crate::config::VoicesConfig;

/// Output formats a job may ask for (as in `tingshu build --format`).
pub const FORMATS: &[&str] = &["wav", "mp3", "opus", "m4b"];

/// Keys a `[[job]]` table may have.
const KEYS: &[&str] = &[
    "name", "source", "voices", "cast", "out", "formats", "schedule", "timezone", "feed_url",
];

/// A problem in a jobs file.
#[derive(Debug, thiserror::Error)]
pub enum JobsError {
    #[error("cannot read jobs file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}:{line}: {message}")]
    Syntax {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file}: key \"{key}\": {message}")]
    TopLevel {
        file: String,
        key: String,
        message: String,
    },
    #[error("{file}: job {job}: key \"{key}\": {message}")]
    Job {
        file: String,
        /// The job's name in quotes, or `#N` when it has none.
        job: String,
        key: String,
        message: String,
    },
    #[error("{file}: no [[job]] table")]
    Empty { file: String },
    #[error("{file}: no job named \"{name}\" (jobs: {known})")]
    UnknownJob {
        file: String,
        name: String,
        known: String,
    },
}

/// One `[[job]]` table as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobConfig {
    pub name: String,
    /// A TXT file, or a directory of chapter files read in name order.
    pub source: PathBuf,
    /// Voices file; the built-in voices when absent.
    #[serde(default)]
    pub voices: Option<PathBuf>,
    /// Cast file (names, aliases and voices of characters).
    #[serde(default)]
    pub cast: Option<PathBuf>,
    /// Output directory; the book goes to `OUT/<source stem>/`.
    #[serde(default = "default_out")]
    pub out: PathBuf,
    #[serde(default = "default_formats")]
    pub formats: Vec<String>,
    /// Cron expression (5 fields, or 6 with seconds first); daemon only.
    #[serde(default)]
    pub schedule: Option<String>,
    /// IANA time zone of the schedule (`Asia/Shanghai`); local time when absent.
    #[serde(default)]
    pub timezone: Option<String>,
    /// Base URL of the book's podcast feed (`OUT/<book>/feed.xml`).
    #[serde(default)]
    pub feed_url: Option<String>,
}

fn default_out() -> PathBuf {
    PathBuf::from("output")
}

fn default_formats() -> Vec<String> {
    vec!["wav".to_owned()]
}

/// A checked job, paths resolved against the jobs file's directory.
#[derive(Debug, Clone)]
pub struct Job {
    pub name: String,
    pub source: PathBuf,
    pub voices: Option<PathBuf>,
    pub cast: Option<PathBuf>,
    pub out: PathBuf,
    /// Sorted, without duplicates, never empty.
    pub formats: Vec<Format>,
    pub schedule: Option<Schedule>,
    /// Base URL of the book's podcast feed (checked, no trailing slash).
    pub feed_url: Option<String>,
}

impl Job {
    /// Where the book in `dir` is published, when the job has a
    /// `feed_url`.
    pub fn feed_link(&self, dir: &Path) -> Option<crate::feed::FeedLink> {
        self.feed_url
            .as_deref()
            .map(|base| crate::feed::FeedLink::new(base, &self.out, dir))
    }

    /// Where the job's book goes: `OUT/<source stem>/`, as `tingshu build`
    /// would write it.
    pub fn book_dir(&self) -> PathBuf {
        crate::names::book_dir(&self.out, &crate::book::source_stem(&self.source))
    }
}

/// A whole jobs file.
#[derive(Debug, Clone)]
pub struct JobsFile {
    pub path: PathBuf,
    pub jobs: Vec<Job>,
}

impl JobsFile {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<JobsFile, JobsError> {
        let text = std::fs::read_to_string(path).map_err(|source| JobsError::Read {
            path: path.to_owned(),
            source,
        })?;
        let base = path.parent().unwrap_or(Path::new(""));
        JobsFile::parse(&text, &path.display().to_string(), base).map(|jobs| JobsFile {
            path: path.to_owned(),
            jobs,
        })
    }

    /// Parses a jobs file's text; `file` names it in errors, relative paths
    /// are resolved against `base`.
    pub fn parse(text: &str, file: &str, base: &Path) -> Result<Vec<Job>, JobsError> {
        let table: toml::Table = toml::from_str(text).map_err(|e| JobsError::Syntax {
            file: file.to_owned(),
            line: e.span().map_or(0, |s| {
                text[..s.start.min(text.len())].lines().count().max(1)
            }),
            message: e.message().trim().replace('\n', " "),
        })?;
        let top = |key: &str, message: &str| JobsError::TopLevel {
            file: file.to_owned(),
            key: key.to_owned(),
            message: message.to_owned(),
        };
        if let Some(key) = table.keys().find(|k| *k != "job") {
            return Err(top(
                key,
                "unknown key (a jobs file holds [[job]] tables only)",
            ));
        }
        let Some(list) = table.get("job") else {
            return Err(JobsError::Empty {
                file: file.to_owned(),
            });
        };
        let toml::Value::Array(list) = list else {
            return Err(top("job", "must be [[job]] tables"));
        };
        let mut jobs: Vec<Job> = Vec::with_capacity(list.len());
        for (i, value) in list.iter().enumerate() {
            let toml::Value::Table(t) = value else {
                return Err(top("job", "must be [[job]] tables"));
            };
            let job = check_job(t, i + 1, file, base)?;
            if jobs.iter().any(|j| j.name == job.name) {
                return Err(JobsError::Job {
                    file: file.to_owned(),
                    job: format!("\"{}\"", job.name),
                    key: "name".to_owned(),
                    message: "another job has the same name".to_owned(),
                });
            }
            if let Some(other) = jobs.iter().find(|j| j.book_dir() == job.book_dir()) {
                return Err(JobsError::Job {
                    file: file.to_owned(),
                    job: format!("\"{}\"", job.name),
                    key: "source".to_owned(),
                    message: format!(
                        "writes to {}, as job \"{}\" does (give one another out)",
                        job.book_dir().display(),
                        other.name
                    ),
                });
            }
            jobs.push(job);
        }
        if jobs.is_empty() {
            return Err(JobsError::Empty {
                file: file.to_owned(),
            });
        }
        Ok(jobs)
    }

    /// The jobs named `name`, or all of them.
    pub fn select(&self, name: Option<&str>) -> Result<Vec<Job>, JobsError> {
        match name {
            None => Ok(self.jobs.clone()),
            Some(name) => self
                .jobs
                .iter()
                .find(|j| j.name == name)
                .map(|j| vec![j.clone()])
                .ok_or_else(|| JobsError::UnknownJob {
                    file: self.path.display().to_string(),
                    name: name.to_owned(),
                    known: self
                        .jobs
                        .iter()
                        .map(|j| j.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                }),
        }
    }
}

/// Checks one `[[job]]` table key by key, then reads it.
fn check_job(t: &toml::Table, position: usize, file: &str, base: &Path) -> Result<Job, JobsError> {
    let job_label = match t.get("name").and_then(toml::Value::as_str) {
        Some(name) => format!("\"{name}\""),
        None => format!("#{position}"),
    };
    let err = |key: &str, message: String| JobsError::Job {
        file: file.to_owned(),
        job: job_label.clone(),
        key: key.to_owned(),
        message,
    };
    for (key, value) in t {
        match key.as_str() {
            "formats" => {
                let ok = value
                    .as_array()
                    .is_some_and(|a| a.iter().all(toml::Value::is_str));
                if !ok {
                    return Err(err(
                        key,
                        format!("expected a list of strings, found {}", describe(value)),
                    ));
                }
            }
            k if KEYS.contains(&k) => {
                if !value.is_str() {
                    return Err(err(
                        key,
                        format!("expected a string, found {}", describe(value)),
                    ));
                }
            }
            _ => {
                return Err(err(
                    key,
                    format!("unknown key (expected one of: {})", KEYS.join(", ")),
                ));
            }
        }
    }
    for required in ["name", "source"] {
        if !t.contains_key(required) {
            return Err(err(required, "missing (every job needs one)".to_owned()));
        }
    }
    let config: JobConfig = toml::Value::Table(t.clone())
        .try_into()
        .map_err(|e: toml::de::Error| err("?", e.message().trim().replace('\n', " ")))?;
    if config.name.trim().is_empty() {
        return Err(err("name", "must not be empty".to_owned()));
    }
    for path_key in [
        ("source", Some(&config.source)),
        ("voices", config.voices.as_ref()),
        ("cast", config.cast.as_ref()),
        ("out", Some(&config.out)),
    ] {
        if let (key, Some(p)) = path_key
            && p.as_os_str().is_empty()
        {
            return Err(err(key, "must not be empty".to_owned()));
        }
    }
    if config.formats.is_empty() {
        return Err(err("formats", "names no format".to_owned()));
    }
    let mut formats = Vec::with_capacity(config.formats.len());
    for name in &config.formats {
        match name.parse::<Format>() {
            Ok(format) if FORMATS.contains(&format.extension()) => formats.push(format),
            _ => {
                return Err(err(
                    "formats",
                    format!("unknown format \"{name}\" (known: {})", FORMATS.join(", ")),
                ));
            }
        }
    }
    formats.sort();
    formats.dedup();
    if config.timezone.is_some() && config.schedule.is_none() {
        return Err(err("timezone", "given without a schedule".to_owned()));
    }
    let schedule = match &config.schedule {
        None => None,
        Some(expr) => Some(Schedule::parse(expr, config.timezone.as_deref()).map_err(
            |e| match e {
                ScheduleError::Timezone { .. } => err("timezone", e.to_string()),
                ScheduleError::Cron { .. } => err("schedule", e.to_string()),
            },
        )?),
    };
    let resolve = |p: &Path| {
        if p.is_absolute() {
            p.to_owned()
        } else {
            base.join(p)
        }
    };
    let voices = config.voices.as_deref().map(resolve);
    if let Some(path) = &voices {
        // The voices file is configuration: check it now, not at 3 am.
        VoicesConfig::load(Some(path)).map_err(|e| err("voices", e.to_string()))?;
    }
    let cast = config.cast.as_deref().map(resolve);
    if let Some(path) = cast.as_ref().filter(|p| !p.is_file()) {
        return Err(err("cast", format!("{}: no such file", path.display())));
    }
    let feed_url = match &config.feed_url {
        None => None,
        Some(url) => {
            let base = crate::feed::check_base("feed_url", url).map_err(|e| {
                err(
                    "feed_url",
                    e.to_string().trim_start_matches("feed_url ").to_owned(),
                )
            })?;
            if crate::feed::enclosure_format(&formats).is_none() {
                return Err(err(
                    "feed_url",
                    "a podcast feed needs mp3, opus or m4b in formats (WAV is not for feeds)"
                        .to_owned(),
                ));
            }
            Some(base)
        }
    };
    Ok(Job {
        name: config.name.clone(),
        source: resolve(&config.source),
        voices,
        cast,
        out: resolve(&config.out),
        formats,
        schedule,
        feed_url,
    })
}

fn describe(value: &toml::Value) -> &'static str {
    match value {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a float",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a date",
        toml::Value::Array(_) => "a list",
        toml::Value::Table(_) => "a table",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Job>, JobsError> {
        JobsFile::parse(text, "jobs.toml", Path::new("/lib"))
    }

    #[test]
    fn reads_a_full_job_and_resolves_paths() {
        let dir = tempfile::tempdir().unwrap();
        let voices = dir.path().join("voices.toml");
        std::fs::write(&voices, crate::config::DEFAULT_VOICES).unwrap();
        let jobs = parse(
            &r#"
            [[job]]
            name = "lighthouse"
            source = "books/novel.txt"
            voices = "VOICES"
            out = "audio"
            formats = ["m4b", "MP3", "wav", "mp3"]
            schedule = "0 3 * * *"
            timezone = "Asia/Shanghai"

            [[job]]
            name = "second"
            source = "chapters"
            "#
            .replace("VOICES", &voices.display().to_string()),
        )
        .unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].source, Path::new("/lib/books/novel.txt"));
        assert_eq!(jobs[0].voices.as_deref(), Some(voices.as_path()));
        assert_eq!(jobs[0].out, Path::new("/lib/audio"));
        assert!(jobs[0].schedule.is_some());
        assert_eq!(jobs[0].formats, [Format::Wav, Format::Mp3, Format::M4b]);
        assert_eq!(jobs[1].out, Path::new("/lib/output"));
        assert_eq!(jobs[1].formats, [Format::Wav]);
        assert!(jobs[1].schedule.is_none());
    }

    #[test]
    fn errors_name_the_job_and_the_key() {
        let cases = [
            (
                "[[job]]\nname = \"a\"\nsource = \"x.txt\"\nshedule = \"0 3 * * *\"\n",
                "jobs.toml: job \"a\": key \"shedule\": unknown key",
            ),
            (
                "[[job]]\nname = \"a\"\nsource = 3\n",
                "jobs.toml: job \"a\": key \"source\": expected a string, found an integer",
            ),
            (
                "[[job]]\nsource = \"x.txt\"\n",
                "jobs.toml: job #1: key \"name\": missing",
            ),
            (
                "[[job]]\nname = \"a\"\nsource = \"x\"\nschedule = \"61 3 * * *\"\n",
                "jobs.toml: job \"a\": key \"schedule\":",
            ),
            (
                "[[job]]\nname = \"a\"\nsource = \"x\"\nschedule = \"0 3 * * *\"\ntimezone = \"Mars/Olympus\"\n",
                "jobs.toml: job \"a\": key \"timezone\":",
            ),
            (
                "[[job]]\nname = \"a\"\nsource = \"x\"\nformats = [\"mp3\", \"flac2\"]\n",
                "jobs.toml: job \"a\": key \"formats\": unknown format \"flac2\" (known: wav, mp3, opus, m4b)",
            ),
            (
                "[[job]]\nname = \"a\"\nsource = \"x\"\nformats = []\n",
                "jobs.toml: job \"a\": key \"formats\": names no format",
            ),
            (
                "[[job]]\nname = \"a\"\nsource = \"x\"\nformats = \"mp3\"\n",
                "jobs.toml: job \"a\": key \"formats\": expected a list of strings, found a string",
            ),
            (
                "[[job]]\nname = \"a\"\nsource = \"x\"\n[[job]]\nname = \"a\"\nsource = \"y\"\n",
                "jobs.toml: job \"a\": key \"name\": another job has the same name",
            ),
            (
                "[[job]]\nname = \"a\"\nsource = \"x.txt\"\n[[job]]\nname = \"b\"\nsource = \"other/x.txt\"\n",
                "jobs.toml: job \"b\": key \"source\": writes to /lib/output/x, as job \"a\" does",
            ),
            (
                "[[job]]\nname = \"a\"\nsource = \"x.txt\"\nvoices = \"nowhere.toml\"\n",
                "jobs.toml: job \"a\": key \"voices\": cannot read voices file /lib/nowhere.toml",
            ),
            (
                "[[job]]\nname = \"a\"\nsource = \"x.txt\"\ncast = \"nowhere.toml\"\n",
                "jobs.toml: job \"a\": key \"cast\": /lib/nowhere.toml: no such file",
            ),
            ("jobs = 1\n", "jobs.toml: key \"jobs\": unknown key"),
            ("", "jobs.toml: no [[job]] table"),
            ("[[job]\n", "jobs.toml:1: "),
        ];
        for (text, expected) in cases {
            let message = parse(text).unwrap_err().to_string();
            assert!(
                message.starts_with(expected),
                "{text:?}\n got: {message}\nwant: {expected}…"
            );
            assert!(!message.contains('\n'), "{message}");
        }
    }
}
