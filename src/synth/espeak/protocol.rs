//! The worker protocol: a request is one JSON line; a reply is a JSON line
//! naming its request, then the samples as 16-bit little-endian PCM.
//!
//! The backend writes requests and reads replies ([`super::pool`]); a
//! worker process reads requests and writes replies ([`super::fork`]).

#[cfg(test)]
use std::io::BufRead;
use std::io::Write;

use serde::{Deserialize, Serialize};

#[cfg(test)]
use super::synthesize_blocking;
use crate::audio::AudioClip;

/// One request to the engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineRequest {
    /// Names the reply (the worker answers in the order requests finish).
    #[serde(default)]
    pub id: u64,
    /// espeak-ng voice name (`cmn-latn-pinyin`, `cmn-latn-pinyin+m3`).
    pub voice: String,
    /// espeak-ng rate (words per minute setting).
    pub rate: u32,
    /// espeak-ng pitch (0–99); `None` = the voice's own.
    pub pitch: Option<u8>,
    /// What to say: tone-numbered pinyin, or SSML.
    pub text: String,
    /// `text` is SSML (see [`engine_text`](super::engine_text)).
    #[serde(default)]
    pub ssml: bool,
}

/// The JSON line of a reply; the samples follow it when there is no error.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct WorkerReply {
    /// The request answered; `None` for a line that was no request.
    pub(super) id: Option<u64>,
    /// Number of samples that follow.
    pub(super) samples: Option<usize>,
    pub(super) sample_rate: Option<u32>,
    /// Why the request failed.
    pub(super) error: Option<String>,
}

/// Serves requests one after another in this process (output depends on
/// earlier requests); for tests of the protocol.
#[cfg(test)]
fn serve_in_process(input: impl BufRead, mut output: impl Write) -> std::io::Result<()> {
    for line in input.lines() {
        let line = line?;
        match serde_json::from_str::<EngineRequest>(&line) {
            Err(e) => write_reply(&mut output, None, &Err(format!("bad request: {e}")), &[])?,
            Ok(req) => match synthesize_blocking(&req) {
                Ok(clip) => {
                    let pcm: Vec<u8> = clip
                        .samples
                        .iter()
                        .flat_map(|s| {
                            ((s * 32768.0).round().clamp(-32768.0, 32767.0) as i16).to_le_bytes()
                        })
                        .collect();
                    write_reply(&mut output, Some(req.id), &Ok(clip.sample_rate), &pcm)?
                }
                Err(e) => write_reply(&mut output, Some(req.id), &Err(e), &[])?,
            },
        }
    }
    output.flush()
}

/// Writes a reply in the worker protocol: a JSON line, then `pcm` (16-bit
/// little-endian samples) when `result` is the sample rate.
pub(super) fn write_reply(
    output: &mut impl Write,
    id: Option<u64>,
    result: &Result<u32, String>,
    pcm: &[u8],
) -> std::io::Result<()> {
    let header = match result {
        Ok(sample_rate) => WorkerReply {
            id,
            samples: Some(pcm.len() / 2),
            sample_rate: Some(*sample_rate),
            error: None,
        },
        Err(error) => WorkerReply {
            id,
            samples: None,
            sample_rate: None,
            error: Some(error.clone()),
        },
    };
    let mut line = serde_json::to_vec(&header).map_err(std::io::Error::other)?;
    line.push(b'\n');
    output.write_all(&line)?;
    if result.is_ok() {
        output.write_all(pcm)?;
    }
    Ok(())
}

/// Reads one worker reply (blocking): its id and result; for tests of the
/// protocol.
#[cfg(test)]
pub(super) fn read_reply(
    mut input: impl BufRead,
) -> std::io::Result<(Option<u64>, Result<AudioClip, String>)> {
    let mut line = String::new();
    input.read_line(&mut line)?;
    let header: WorkerReply = serde_json::from_str(&line).map_err(std::io::Error::other)?;
    if let Some(error) = header.error {
        return Ok((header.id, Err(error)));
    }
    let n = header.samples.unwrap_or(0);
    let mut bytes = vec![0u8; n * 2];
    input.read_exact(&mut bytes)?;
    Ok((
        header.id,
        Ok(pcm_clip(&bytes, header.sample_rate.unwrap_or(22050))),
    ))
}

/// A clip of the 16-bit little-endian samples in `bytes`.
pub(super) fn pcm_clip(bytes: &[u8], sample_rate: u32) -> AudioClip {
    let samples = bytes
        .chunks_exact(2)
        .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
        .collect();
    AudioClip::new(samples, sample_rate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::espeak::tests::{req, turn};

    #[test]
    fn worker_protocol_round_trip() {
        let _turn = turn();
        let mut first = req("cmn-latn-pinyin", "ma1 ma1");
        first.id = 7;
        let mut input = serde_json::to_string(&first).unwrap();
        input.push('\n');
        input.push_str("not json\n");
        let mut out = Vec::new();
        serve_in_process(input.as_bytes(), &mut out).unwrap();
        let mut reader = std::io::Cursor::new(out);
        let (id, clip) = read_reply(&mut reader).unwrap();
        assert_eq!(id, Some(7));
        assert!(clip.unwrap().duration_s() > 0.2);
        let (id, err) = read_reply(&mut reader).unwrap();
        assert_eq!(id, None);
        assert!(err.unwrap_err().starts_with("bad request"));
    }
}
