//! Encoded audio bodies (WAV, MP3, OGG/Vorbis, FLAC, AAC in ADTS) →
//! [`AudioClip`] with symphonia (0.5 has no Opus decoder). Streamed WAVs whose RIFF and `data` sizes are placeholders
//! (0xFFFFFFFF, 0x7FFFFFFF, … as TTS servers and `espeak-ng --stdout` write
//! them) are patched to the real sizes before decoding.

use std::io::Cursor;

use symphonia::core::audio::SampleBuffer;
use symphonia::core::codecs::{CODEC_TYPE_NULL, DecoderOptions};
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::FormatOptions;
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;
use symphonia::core::probe::Hint;

use super::AudioClip;

/// Why a body is not usable audio.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("empty audio body")]
    Empty,
    #[error("not audio ({0})")]
    Unrecognized(String),
    #[error("undecodable audio: {0}")]
    Corrupt(String),
    #[error("audio body holds no samples")]
    NoSamples,
}

/// Decodes a whole body into a mono clip (channels are averaged). Never
/// panics: a decoder that panics on hostile input counts as corrupt audio.
pub fn decode(bytes: &[u8]) -> Result<AudioClip, DecodeError> {
    std::panic::catch_unwind(|| decode_unguarded(bytes)).unwrap_or_else(|_| {
        Err(DecodeError::Corrupt(
            "the decoder failed on this input".into(),
        ))
    })
}

fn decode_unguarded(bytes: &[u8]) -> Result<AudioClip, DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    let mut hint = Hint::new();
    let owned = if is_wav(bytes) {
        hint.with_extension("wav");
        patch_wav_sizes(bytes)?
    } else {
        bytes.to_vec()
    };
    let stream = MediaSourceStream::new(Box::new(Cursor::new(owned)), Default::default());
    let probed = symphonia::default::get_probe()
        .format(
            &hint,
            stream,
            &FormatOptions::default(),
            &MetadataOptions::default(),
        )
        .map_err(|e| DecodeError::Unrecognized(describe_body(bytes, e)))?;
    let mut format = probed.format;
    let track = format
        .tracks()
        .iter()
        .find(|t| t.codec_params.codec != CODEC_TYPE_NULL)
        .ok_or_else(|| DecodeError::Unrecognized("no audio track".into()))?;
    let track_id = track.id;
    let mut decoder = symphonia::default::get_codecs()
        .make(&track.codec_params, &DecoderOptions::default())
        .map_err(|e| DecodeError::Corrupt(e.to_string()))?;
    let mut sample_rate = track.codec_params.sample_rate.unwrap_or(0);
    let mut samples = Vec::new();
    let mut buffer: Option<SampleBuffer<f32>> = None;
    let mut decoded_packets = 0usize;
    let mut bad_packets = 0usize;
    loop {
        let packet = match format.next_packet() {
            Ok(p) => p,
            Err(SymphoniaError::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                break;
            }
            Err(SymphoniaError::ResetRequired) => break,
            Err(e) if decoded_packets > 0 => {
                // A broken tail after good audio: keep what decoded; the
                // duration check upstream decides whether it is enough.
                tracing::debug!(error = %e, "audio stream ends with a bad packet");
                break;
            }
            Err(e) => return Err(DecodeError::Corrupt(e.to_string())),
        };
        if packet.track_id() != track_id {
            continue;
        }
        match decoder.decode(&packet) {
            Ok(audio) => {
                let spec = *audio.spec();
                sample_rate = spec.rate;
                let channels = spec.channels.count().max(1);
                let buf = buffer
                    .get_or_insert_with(|| SampleBuffer::<f32>::new(audio.capacity() as u64, spec));
                if buf.capacity() < audio.capacity() * channels {
                    *buf = SampleBuffer::<f32>::new(audio.capacity() as u64, spec);
                }
                buf.copy_interleaved_ref(audio);
                for frame in buf.samples().chunks_exact(channels) {
                    samples.push(frame.iter().sum::<f32>() / channels as f32);
                }
                decoded_packets += 1;
            }
            Err(SymphoniaError::DecodeError(e)) => {
                bad_packets += 1;
                tracing::debug!(error = e, "skipping undecodable packet");
                if bad_packets > 8 && decoded_packets == 0 {
                    return Err(DecodeError::Corrupt(e.to_owned()));
                }
            }
            Err(SymphoniaError::IoError(_)) => break,
            Err(e) => return Err(DecodeError::Corrupt(e.to_string())),
        }
    }
    if samples.is_empty() || sample_rate == 0 {
        return Err(DecodeError::NoSamples);
    }
    Ok(AudioClip::new(samples, sample_rate))
}

fn is_wav(bytes: &[u8]) -> bool {
    bytes.len() >= 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WAVE"
}

/// A short, safe description of a body that is not audio (JSON error
/// bodies, HTML pages) for error messages.
fn describe_body(bytes: &[u8], error: SymphoniaError) -> String {
    let head: String = String::from_utf8_lossy(&bytes[..bytes.len().min(60)])
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if bytes[..bytes.len().min(60)]
        .iter()
        .all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace())
        || std::str::from_utf8(bytes).is_ok()
    {
        format!("{} bytes starting \"{}\"", bytes.len(), head.trim())
    } else {
        format!("{} bytes: {error}", bytes.len())
    }
}

/// Rewrites the RIFF size and any oversized chunk size (the `data` chunk of a
/// streamed WAV) to what the body really holds.
pub fn patch_wav_sizes(bytes: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let mut out = bytes.to_vec();
    let total = out.len();
    let riff_size = u32::try_from(total - 8).unwrap_or(u32::MAX);
    out[4..8].copy_from_slice(&riff_size.to_le_bytes());
    let mut pos = 12;
    let mut block_align = 1usize;
    while pos + 8 <= total {
        let id = [out[pos], out[pos + 1], out[pos + 2], out[pos + 3]];
        let size =
            u32::from_le_bytes([out[pos + 4], out[pos + 5], out[pos + 6], out[pos + 7]]) as usize;
        let body = pos + 8;
        let available = total - body;
        if &id == b"fmt " && size >= 14 && available >= 14 {
            block_align = usize::from(u16::from_le_bytes([out[body + 12], out[body + 13]])).max(1);
        }
        if &id == b"data" {
            // Streamers write a placeholder (0xFFFFFFFF, 0x7FFFFFFF…) or 0.
            let real = if size == 0 {
                available
            } else {
                size.min(available)
            };
            let real = real - real % block_align;
            out[pos + 4..pos + 8].copy_from_slice(&(real as u32).to_le_bytes());
            out.truncate(body + real);
            let riff_size = (out.len() - 8) as u32;
            out[4..8].copy_from_slice(&riff_size.to_le_bytes());
            return Ok(out);
        }
        if size > available {
            return Err(DecodeError::Corrupt(format!(
                "WAV chunk '{}' claims {size} bytes, only {available} present",
                String::from_utf8_lossy(&id)
            )));
        }
        pos = body + size + size % 2;
    }
    Err(DecodeError::Corrupt("WAV without a data chunk".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(n: usize, rate: u32) -> AudioClip {
        let samples = (0..n)
            .map(|i| (i as f32 * 440.0 * std::f32::consts::TAU / rate as f32).sin() * 0.5)
            .collect();
        AudioClip::new(samples, rate)
    }

    fn wav_bytes(clip: &AudioClip) -> Vec<u8> {
        let mut buf = Cursor::new(Vec::new());
        crate::audio::wav::write_wav(clip, &mut buf).unwrap();
        buf.into_inner()
    }

    #[test]
    fn decodes_plain_wav() {
        let clip = tone(4410, 22050);
        let back = decode(&wav_bytes(&clip)).unwrap();
        assert_eq!(back.sample_rate, 22050);
        assert_eq!(back.samples.len(), 4410);
        assert!((back.peak() - 0.5).abs() < 0.01);
    }

    #[test]
    fn decodes_streamed_wav_with_placeholder_sizes() {
        for placeholder in [0xFFFF_FFFFu32, 0x7FFF_FFFF, 0x7FFF_F000, 0] {
            let mut bytes = wav_bytes(&tone(2205, 24000));
            bytes[4..8].copy_from_slice(&placeholder.to_le_bytes());
            let data = bytes.windows(4).position(|w| w == b"data").unwrap();
            bytes[data + 4..data + 8].copy_from_slice(&placeholder.to_le_bytes());
            // A stream cut in the middle of a sample.
            bytes.push(0x12);
            let clip = decode(&bytes).unwrap();
            assert_eq!(clip.sample_rate, 24000);
            assert_eq!(clip.samples.len(), 2205, "placeholder {placeholder:#x}");
        }
    }

    #[test]
    fn rejects_non_audio() {
        assert_eq!(decode(b""), Err(DecodeError::Empty));
        let err = decode(br#"{"error": "model overloaded"}"#).unwrap_err();
        assert!(
            matches!(&err, DecodeError::Unrecognized(m) if m.contains("model overloaded")),
            "{err}"
        );
        assert!(decode(&[0u8; 500]).is_err());
    }

    #[test]
    fn wav_header_only_has_no_samples() {
        let bytes = wav_bytes(&tone(0, 22050));
        assert!(decode(&bytes).is_err());
    }

    #[test]
    fn damaged_bodies_never_panic() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
        let mut rng = fastrand::Rng::with_seed(7);
        for name in ["tone.mp3", "tone.ogg", "tone.flac", "tone.aac"] {
            let bytes = std::fs::read(format!("{dir}/{name}")).unwrap();
            for cut in (0..bytes.len()).step_by(bytes.len() / 40 + 1) {
                let _ = decode(&bytes[..cut]);
            }
            for _ in 0..40 {
                let mut damaged = bytes.clone();
                for _ in 0..20 {
                    let i = rng.usize(..damaged.len());
                    damaged[i] = rng.u8(..);
                }
                let _ = decode(&damaged);
            }
        }
        let wav = wav_bytes(&tone(1000, 8000));
        for cut in 0..60 {
            let _ = decode(&wav[..cut]);
        }
    }

    #[test]
    fn decodes_compressed_fixtures() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
        for name in ["tone.mp3", "tone.ogg", "tone.flac", "tone.aac"] {
            let bytes = std::fs::read(format!("{dir}/{name}")).unwrap();
            let clip = decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            let secs = clip.duration_s();
            assert!((1.9..2.2).contains(&secs), "{name}: {secs}");
            assert!(clip.peak() > 0.03, "{name}");
        }
    }
}
