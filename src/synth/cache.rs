//! Content-addressed cache of synthesized chunks.
//!
//! The key hashes everything that changes the audio: the backend's
//! fingerprint (engine and audio-relevant settings), the voice settings, the
//! spoken text and pinyin, and [`frontend::VERSION`]. Entries are 32-bit
//! float WAV files under `DIR/ab/abcd….wav`, written to a temporary file and
//! renamed into place, so a killed run never leaves a half-written entry.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::SynthRequest;
use crate::audio::AudioClip;
use crate::frontend;

/// A cache key: lowercase hex SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey(String);

impl CacheKey {
    /// The key of `req` sent to a backend with `fingerprint`.
    pub fn new(fingerprint: &str, req: &SynthRequest) -> CacheKey {
        let mut h = Sha256::new();
        let v = &req.voice;
        let fields = [
            format!("frontend={}", frontend::VERSION),
            format!("backend={fingerprint}"),
            format!("voice={}", v.voice),
            format!("speed={}", v.speed),
            format!("pitch={:?}", v.pitch),
            format!("style={:?}", v.style),
            format!("role={:?}", v.role),
            format!("text={}", req.text),
            format!("pinyin={}", req.pinyin),
        ];
        for field in fields {
            // Length-prefixed so that no two field lists hash alike.
            h.update((field.len() as u64).to_le_bytes());
            h.update(field.as_bytes());
        }
        CacheKey(hex::encode(h.finalize()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A cache directory.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &CacheKey) -> PathBuf {
        self.dir.join(&key.0[..2]).join(format!("{}.wav", key.0))
    }

    /// The cached clip, if present and readable (an unreadable entry is
    /// removed and counts as a miss).
    pub fn get(&self, key: &CacheKey) -> Option<AudioClip> {
        let path = self.path(key);
        let bytes = fs::read(&path).ok()?;
        match read_clip(&bytes) {
            Ok(clip) => Some(clip),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "dropping unreadable cache entry");
                let _ = fs::remove_file(&path);
                None
            }
        }
    }

    /// Whether an entry for `key` exists (without reading it).
    pub fn contains(&self, key: &CacheKey) -> bool {
        self.path(key).is_file()
    }

    /// Stores `clip` under `key` atomically.
    pub fn put(&self, key: &CacheKey, clip: &AudioClip) -> std::io::Result<()> {
        let path = self.path(key);
        let dir = path.parent().expect("cache paths have a parent");
        fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(
            ".{}.{}-{}.tmp",
            key.0,
            std::process::id(),
            fastrand::u32(..)
        ));
        let result = write_clip(&tmp, clip).and_then(|()| fs::rename(&tmp, &path));
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }

    /// Number of entries (for tests and reports).
    pub fn len(&self) -> usize {
        let Ok(dirs) = fs::read_dir(&self.dir) else {
            return 0;
        };
        dirs.flatten()
            .filter_map(|d| fs::read_dir(d.path()).ok())
            .flat_map(|files| files.flatten())
            .filter(|f| f.path().extension().is_some_and(|e| e == "wav"))
            .count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Writes a mono 32-bit float WAV (format 3) in one piece.
fn write_clip(path: &Path, clip: &AudioClip) -> std::io::Result<()> {
    let data_len = u32::try_from(clip.samples.len() * 4)
        .map_err(|_| std::io::Error::other("clip too long for a WAV file"))?;
    let mut bytes = Vec::with_capacity(44 + data_len as usize);
    bytes.extend_from_slice(b"RIFF");
    bytes.extend_from_slice(&(36 + data_len).to_le_bytes());
    bytes.extend_from_slice(b"WAVEfmt ");
    bytes.extend_from_slice(&16u32.to_le_bytes());
    bytes.extend_from_slice(&3u16.to_le_bytes()); // IEEE float
    bytes.extend_from_slice(&1u16.to_le_bytes()); // mono
    bytes.extend_from_slice(&clip.sample_rate.to_le_bytes());
    bytes.extend_from_slice(&(clip.sample_rate * 4).to_le_bytes());
    bytes.extend_from_slice(&4u16.to_le_bytes()); // block align
    bytes.extend_from_slice(&32u16.to_le_bytes());
    bytes.extend_from_slice(b"data");
    bytes.extend_from_slice(&data_len.to_le_bytes());
    for s in &clip.samples {
        bytes.extend_from_slice(&s.to_le_bytes());
    }
    // No fsync: a killed process cannot lose written data, and an entry
    // damaged by a power loss fails the length check and is dropped.
    fs::File::create(path)?.write_all(&bytes)
}

/// Reads what [`write_clip`] wrote; anything else is an error.
fn read_clip(bytes: &[u8]) -> Result<AudioClip, String> {
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
    let u32_at =
        |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    if bytes.len() < 44
        || &bytes[0..4] != b"RIFF"
        || &bytes[8..16] != b"WAVEfmt "
        || &bytes[36..40] != b"data"
        || u16_at(20) != 3
        || u16_at(22) != 1
        || u16_at(34) != 32
    {
        return Err("not a tingshu cache entry".into());
    }
    let data_len = u32_at(40) as usize;
    if bytes.len() != 44 + data_len || !data_len.is_multiple_of(4) {
        return Err(format!(
            "truncated: {} of {} data bytes",
            bytes.len().saturating_sub(44),
            data_len
        ));
    }
    let samples = bytes[44..]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    Ok(AudioClip::new(samples, u32_at(24)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::VoiceSettings;

    fn req(text: &str, speed: f32) -> SynthRequest {
        SynthRequest {
            text: text.into(),
            pinyin: String::new(),
            voice: VoiceSettings {
                name: "n".into(),
                voice: "alloy".into(),
                speed,
                ..Default::default()
            },
        }
    }

    #[test]
    fn key_changes_with_what_changes_audio() {
        let base = CacheKey::new("openai/tts-1", &req("你好", 1.0));
        assert_eq!(base, CacheKey::new("openai/tts-1", &req("你好", 1.0)));
        assert_ne!(base, CacheKey::new("openai/tts-2", &req("你好", 1.0)));
        assert_ne!(base, CacheKey::new("openai/tts-1", &req("你好！", 1.0)));
        assert_ne!(base, CacheKey::new("openai/tts-1", &req("你好", 1.1)));
        // The voice's name in the voices file does not change the audio.
        let mut renamed = req("你好", 1.0);
        renamed.voice.name = "hero".into();
        assert_eq!(base, CacheKey::new("openai/tts-1", &renamed));
    }

    #[test]
    fn round_trips_exactly_and_drops_broken_entries() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let key = CacheKey::new("x", &req("一", 1.0));
        assert!(cache.get(&key).is_none());
        let clip = AudioClip::new(vec![0.0, 0.123_456_7, -0.9], 24000);
        cache.put(&key, &clip).unwrap();
        assert_eq!(cache.get(&key), Some(clip.clone()));
        // Standard WAV that other tools (and hound) read.
        let reader = hound::WavReader::open(cache.path(&key)).unwrap();
        assert_eq!(reader.spec().sample_format, hound::SampleFormat::Float);
        let samples: Vec<f32> = reader.into_samples().map(Result::unwrap).collect();
        assert_eq!(samples, clip.samples);
        assert_eq!(cache.len(), 1);
        // No temporary files are left behind.
        let sub = dir.path().join(&key.as_str()[..2]);
        assert_eq!(fs::read_dir(&sub).unwrap().count(), 1);
        // A hand-damaged entry is dropped, not trusted.
        let full = fs::read(cache.path(&key)).unwrap();
        fs::write(cache.path(&key), &full[..full.len() - 2]).unwrap();
        assert!(cache.get(&key).is_none());
        assert_eq!(cache.len(), 0);
    }
}
