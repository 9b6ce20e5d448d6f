//! Speech as it streams out: the passage's 16-bit PCM sentence by sentence
//! ([`pcm_stream`]), then in the format asked for — WAV with a streaming
//! header, raw PCM, or MP3/Opus from an ffmpeg child that reads the PCM on
//! its stdin and whose stdout is forwarded as it comes ([`encode_stream`]).

use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::pipeline::Renderer;
use crate::text::ScriptChapter;

/// A stream of audio bytes.
pub type ByteStream = Pin<Box<dyn Stream<Item = std::io::Result<Vec<u8>>> + Send + 'static>>;

/// A format `/v1/audio/speech` answers in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpeechFormat {
    Mp3,
    Opus,
    Wav,
    Pcm,
}

impl SpeechFormat {
    /// `mp3`, `opus`, `wav` or `pcm` (OpenAI's `response_format`).
    pub fn parse(name: &str) -> Option<SpeechFormat> {
        match name.trim().to_ascii_lowercase().as_str() {
            "mp3" => Some(SpeechFormat::Mp3),
            "opus" | "ogg" => Some(SpeechFormat::Opus),
            "wav" => Some(SpeechFormat::Wav),
            "pcm" => Some(SpeechFormat::Pcm),
            _ => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            SpeechFormat::Mp3 => "audio/mpeg",
            SpeechFormat::Opus => "audio/ogg",
            SpeechFormat::Wav => "audio/wav",
            SpeechFormat::Pcm => "audio/pcm",
        }
    }
}

/// The passage's PCM (16-bit little-endian mono at the renderer's sample
/// rate), each chunk as soon as it and every chunk before it exist.
pub fn pcm_stream(renderer: &Renderer, chapter: ScriptChapter) -> ByteStream {
    Box::pin(crate::session::stream::stream_pcm(renderer, &chapter, true))
}

/// `pcm` in `format`: a WAV header before it, as it is, or through
/// `ffmpeg` (MP3 64 kb/s, Opus 32 kb/s in Ogg). The ffmpeg child is killed
/// when the stream is dropped (the client went away).
pub fn encode_stream(
    pcm: ByteStream,
    format: SpeechFormat,
    rate: u32,
    ffmpeg: &std::path::Path,
) -> std::io::Result<ByteStream> {
    match format {
        SpeechFormat::Pcm => Ok(pcm),
        SpeechFormat::Wav => {
            let header = crate::session::stream::wav_stream_header(rate);
            let mut first = Some(header);
            Ok(Box::pin(pcm.map(move |item| {
                let bytes = item?;
                Ok(match first.take() {
                    Some(mut header) => {
                        header.extend_from_slice(&bytes);
                        header
                    }
                    None => bytes,
                })
            })))
        }
        SpeechFormat::Mp3 | SpeechFormat::Opus => ffmpeg_stream(pcm, format, rate, ffmpeg),
    }
}

fn ffmpeg_stream(
    mut pcm: ByteStream,
    format: SpeechFormat,
    rate: u32,
    ffmpeg: &std::path::Path,
) -> std::io::Result<ByteStream> {
    let rate = rate.to_string();
    let mut command = tokio::process::Command::new(ffmpeg);
    command.args([
        "-hide_banner",
        "-loglevel",
        "error",
        "-nostdin",
        "-f",
        "s16le",
        "-ar",
        &rate,
        "-ac",
        "1",
        "-i",
        "pipe:0",
        "-flush_packets",
        "1",
    ]);
    match format {
        SpeechFormat::Mp3 => {
            command.args(["-c:a", "libmp3lame", "-b:a", "64k", "-f", "mp3"]);
        }
        _ => {
            command.args([
                "-c:a",
                "libopus",
                "-b:a",
                "32k",
                "-page_duration",
                "100000",
                "-f",
                "ogg",
            ]);
        }
    }
    command
        .arg("pipe:1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("no stdin"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| std::io::Error::other("no stdout"))?;
    // A synthesis error ends the input early; the reader reports it.
    let failed = Arc::new(std::sync::Mutex::new(None::<std::io::Error>));
    let failed_in = Arc::clone(&failed);
    let feeder = tokio::spawn(async move {
        while let Some(item) = pcm.next().await {
            match item {
                Ok(bytes) => {
                    if stdin.write_all(&bytes).await.is_err() {
                        return; // ffmpeg is gone (the client left)
                    }
                }
                Err(e) => {
                    *failed_in.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                    return;
                }
            }
        }
        let _ = stdin.shutdown().await;
    });
    struct State {
        stdout: tokio::process::ChildStdout,
        child: tokio::process::Child,
        feeder: tokio::task::JoinHandle<()>,
        failed: Arc<std::sync::Mutex<Option<std::io::Error>>>,
        done: bool,
    }
    impl Drop for State {
        fn drop(&mut self) {
            self.feeder.abort();
        }
    }
    let state = State {
        stdout,
        child,
        feeder,
        failed,
        done: false,
    };
    Ok(Box::pin(futures::stream::unfold(
        state,
        |mut s| async move {
            if s.done {
                return None;
            }
            let mut buf = vec![0u8; 16 * 1024];
            match s.stdout.read(&mut buf).await {
                Ok(0) => {
                    s.done = true;
                    let status = s.child.wait().await;
                    let failed = s.failed.lock().unwrap_or_else(|e| e.into_inner()).take();
                    if let Some(e) = failed {
                        return Some((Err(e), s));
                    }
                    match status {
                        Ok(st) if st.success() => None,
                        Ok(st) => Some((
                            Err(std::io::Error::other(format!("ffmpeg exited with {st}"))),
                            s,
                        )),
                        Err(e) => Some((Err(e), s)),
                    }
                }
                Ok(n) => {
                    buf.truncate(n);
                    Some((Ok(buf), s))
                }
                Err(e) => {
                    s.done = true;
                    Some((Err(e), s))
                }
            }
        },
    )))
}
