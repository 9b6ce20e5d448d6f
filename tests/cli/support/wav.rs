//! Audio the tests make and read: deterministic tones that stand in for
//! speech, and the duration of a WAV file.

use std::io::Cursor;
use std::path::Path;

use tingshu::audio::AudioClip;

/// Sample rate of the tones.
const TONE_RATE: u32 = 16_000;

/// A stand-in for `text` spoken in `voice`: 100 ms per character of a tone
/// whose pitch depends on both, so every text sounds different and the same
/// text always gives the same samples.
pub fn tone(text: &str, voice: &str) -> AudioClip {
    let seed: u32 = text
        .chars()
        .chain(voice.chars())
        .fold(0u32, |h, c| h.wrapping_mul(31).wrapping_add(u32::from(c)));
    let freq = 180.0 + f64::from(seed % 400);
    let n = text.chars().count().max(1) * (TONE_RATE as usize / 10);
    let samples = (0..n)
        .map(|i| {
            let t = i as f64 / f64::from(TONE_RATE);
            (0.3 * (2.0 * std::f64::consts::PI * freq * t).sin()) as f32
        })
        .collect();
    AudioClip::new(samples, TONE_RATE)
}

/// [`tone`] as a 16-bit WAV file's bytes.
pub fn tone_wav(text: &str, voice: &str) -> Vec<u8> {
    wav_bytes(&tone(text, voice))
}

/// A tone lasting 0.2 s per character of `text`, whatever the voice, as
/// 16-bit WAV bytes at 16 kHz.
pub fn long_tone_wav(text: &str) -> Vec<u8> {
    let n = text.chars().count().max(1) * 3200;
    let samples = (0..n)
        .map(|i| (i as f32 * 0.06).sin() * 0.3)
        .collect::<Vec<_>>();
    wav_bytes(&AudioClip::new(samples, TONE_RATE))
}

fn wav_bytes(clip: &AudioClip) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    tingshu::audio::wav::write_wav(clip, &mut out).unwrap();
    out.into_inner()
}

/// Seconds of audio in the WAV file at `path`.
pub fn duration_s(path: &Path) -> f64 {
    let reader = hound::WavReader::open(path).unwrap();
    f64::from(reader.duration()) / f64::from(reader.spec().sample_rate)
}
