//! The `command` backend: a local program (piper, sherpa-onnx, espeak-ng …)
//! started once per request, with the text on stdin or in its arguments,
//! writing a WAV file (the `{out}` placeholder) or WAV on stdout.
//!
//! ```toml
//! [backends.piper]
//! type = "command"
//! program = "piper"
//! args = ["--model", "zh_CN-huayan-medium.onnx", "--output_file", "{out}"]
//! stdin = true
//! ```

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use tokio::io::AsyncWriteExt;

use super::kind::{BackendKind, BuildContext, KeyProblem};
use super::{Limits, SynthError, SynthRequest, Synthesizer, decode_checked, max_chars};
use crate::audio::AudioClip;

/// `[backends.NAME] type = "command"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandConfig {
    pub program: String,
    /// Arguments; `{text}` `{pinyin}` `{voice}` `{speed}` `{out}` are replaced.
    #[serde(default)]
    pub args: Vec<String>,
    /// Write the text (or pinyin, see `input`) to the program's stdin.
    #[serde(default)]
    pub stdin: bool,
    /// What `stdin` carries: "text" (default) or "pinyin".
    #[serde(default = "default_input")]
    pub input: String,
    /// Longest text per request, in characters.
    #[serde(default = "max_chars::<200>")]
    pub max_chars: usize,
}

fn default_input() -> String {
    "text".into()
}

impl BackendKind for CommandConfig {
    fn build(&self, ctx: &BuildContext<'_>) -> Result<Arc<dyn Synthesizer>, SynthError> {
        let backend = CommandBackend::new(ctx.name, self.clone(), ctx.timeout, ctx.in_flight(1));
        Ok(Arc::new(backend))
    }

    fn check(&self, _voices: &[(String, &str)]) -> Result<(), KeyProblem> {
        if self.program.trim().is_empty() {
            return Err(("program".into(), "must not be empty".into()));
        }
        if !matches!(self.input.as_str(), "text" | "pinyin") {
            return Err(("input".into(), "must be \"text\" or \"pinyin\"".into()));
        }
        if !(1..=10_000).contains(&self.max_chars) {
            return Err((
                "max_chars".into(),
                format!("{} is out of range 1–10000", self.max_chars),
            ));
        }
        // Book text beginning with `-` must not read as an option.
        let end_of_options = self.args.iter().position(|a| a == "--");
        for (i, arg) in self.args.iter().enumerate() {
            let holds_text = arg.contains("{text}") || arg.contains("{pinyin}");
            if holds_text && end_of_options.is_none_or(|end| i < end) {
                return Err((
                    "args".into(),
                    format!(
                        "'{arg}' holds book text: put \"--\" before it (text starting with '-' would read as an option), or pass the text with stdin = true"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The `command` backend.
pub struct CommandBackend {
    name: String,
    config: CommandConfig,
    timeout: Duration,
    max_in_flight: usize,
}

impl CommandBackend {
    pub fn new(
        name: &str,
        config: CommandConfig,
        timeout: Duration,
        max_in_flight: usize,
    ) -> CommandBackend {
        CommandBackend {
            name: name.to_owned(),
            config,
            timeout,
            max_in_flight,
        }
    }

    fn error(&self, message: String) -> SynthError {
        SynthError::Engine {
            backend: self.name.clone(),
            message,
        }
    }

    async fn run(&self, req: &SynthRequest) -> Result<Vec<u8>, SynthError> {
        let dir = tempfile::Builder::new()
            .prefix("tingshu-cmd")
            .tempdir()
            .map_err(|e| self.error(format!("cannot create a temporary directory: {e}")))?;
        let out = dir.path().join("out.wav");
        let uses_out = self.config.args.iter().any(|a| a.contains("{out}"));
        let args: Vec<String> = self
            .config
            .args
            .iter()
            .map(|a| {
                a.replace("{out}", &out.to_string_lossy())
                    .replace("{voice}", &req.voice.voice)
                    .replace("{speed}", &req.voice.speed.to_string())
                    .replace("{pinyin}", &req.syllables())
                    .replace("{text}", &req.text)
            })
            .collect();
        let mut child = tokio::process::Command::new(&self.config.program)
            .args(&args)
            .stdin(if self.config.stdin {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| SynthError::Setup {
                backend: self.name.clone(),
                message: format!("cannot start '{}': {e}", self.config.program),
            })?;
        if let Some(mut stdin) = child.stdin.take() {
            let syllables = req.syllables();
            let input: &str = if self.config.input == "pinyin" {
                &syllables
            } else {
                &req.text
            };
            // A program that exits without reading its input is reported below.
            let _ = stdin.write_all(input.as_bytes()).await;
            let _ = stdin.write_all(b"\n").await;
        }
        let output = tokio::time::timeout(self.timeout, child.wait_with_output())
            .await
            .map_err(|_| SynthError::Timeout {
                backend: self.name.clone(),
                after: self.timeout,
            })?
            .map_err(|source| SynthError::Worker {
                backend: self.name.clone(),
                source,
            })?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let last = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            return Err(self.error(format!(
                "'{}' failed ({}): {}",
                self.config.program,
                output.status,
                last.chars().take(200).collect::<String>()
            )));
        }
        if uses_out {
            tokio::fs::read(&out)
                .await
                .map_err(|e| SynthError::BadAudio {
                    backend: self.name.clone(),
                    message: format!("'{}' wrote no output file: {e}", self.config.program),
                })
        } else {
            Ok(output.stdout)
        }
    }
}

#[async_trait]
impl Synthesizer for CommandBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn limits(&self) -> Limits {
        Limits::new(self.config.max_chars, self.max_in_flight)
    }

    fn fingerprint(&self) -> String {
        format!(
            "command/{}/{:?}/{}/{}",
            self.config.program, self.config.args, self.config.stdin, self.config.input
        )
    }

    async fn synthesize(&self, req: &SynthRequest) -> Result<AudioClip, SynthError> {
        let body = self.run(req).await?;
        decode_checked(&self.name, &body, req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::VoiceSettings;

    fn req() -> SynthRequest {
        SynthRequest {
            text: "你好。".into(),
            pinyin: "ni3 hao3.".into(),
            voice: VoiceSettings {
                name: "n".into(),
                voice: "cmn-latn-pinyin".into(),
                speed: 1.0,
                ..Default::default()
            },
        }
    }

    fn config(toml_text: &str) -> CommandConfig {
        toml::from_str(toml_text).unwrap()
    }

    #[tokio::test]
    async fn runs_espeak_ng_with_pinyin_on_stdin_to_stdout() {
        let c = config(
            "program = \"espeak-ng\"\nargs = [\"-v\", \"{voice}\", \"--stdout\"]\nstdin = true\ninput = \"pinyin\"",
        );
        let b = CommandBackend::new("cmd", c, Duration::from_secs(20), 1);
        let clip = b.synthesize(&req()).await.unwrap();
        assert!(clip.duration_s() > 0.3, "{}", clip.duration_s());
    }

    #[tokio::test]
    async fn runs_espeak_ng_writing_the_out_file() {
        let c = config(
            "program = \"espeak-ng\"\nargs = [\"-v\", \"{voice}\", \"-w\", \"{out}\", \"{pinyin}\"]",
        );
        let b = CommandBackend::new("cmd", c, Duration::from_secs(20), 1);
        let clip = b.synthesize(&req()).await.unwrap();
        assert!(clip.duration_s() > 0.3);
    }

    #[tokio::test]
    async fn failures_name_the_program() {
        let c = config("program = \"no-such-tts-program-xyz\"");
        let b = CommandBackend::new("cmd", c, Duration::from_secs(5), 1);
        let err = b.synthesize(&req()).await.unwrap_err();
        assert!(!err.is_retryable());
        assert!(err.to_string().contains("no-such-tts-program-xyz"), "{err}");
        let c = config("program = \"sh\"\nargs = [\"-c\", \"echo oops >&2; exit 3\"]");
        let b = CommandBackend::new("cmd", c, Duration::from_secs(5), 1);
        let err = b.synthesize(&req()).await.unwrap_err().to_string();
        assert!(err.contains("oops"), "{err}");
        let c = config("program = \"sleep\"\nargs = [\"5\"]");
        let b = CommandBackend::new("cmd", c, Duration::from_millis(200), 1);
        let err = b.synthesize(&req()).await.unwrap_err();
        assert!(matches!(err, SynthError::Timeout { .. }), "{err}");
    }
}
