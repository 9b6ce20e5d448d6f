//! Content-addressed cache of synthesized chunks.
//!
//! The key hashes everything that changes the audio: the backend's
//! fingerprint (engine and audio-relevant settings), the voice settings, the
//! spoken text and pinyin, and [`frontend::VERSION`]. Entries are 32-bit
//! float WAV files under `DIR/ab/abcd….wav`, written to a temporary file and
//! renamed into place, so a killed run never leaves a half-written entry.

use std::fs;
use std::io::{BufReader, BufWriter};
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
        let file = fs::File::open(&path).ok()?;
        match read_clip(BufReader::new(file)) {
            Ok(clip) => Some(clip),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "dropping unreadable cache entry");
                let _ = fs::remove_file(&path);
                None
            }
        }
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

fn write_clip(path: &Path, clip: &AudioClip) -> std::io::Result<()> {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: clip.sample_rate,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let file = BufWriter::new(fs::File::create(path)?);
    let mut writer = hound::WavWriter::new(file, spec).map_err(std::io::Error::other)?;
    for &s in &clip.samples {
        writer.write_sample(s).map_err(std::io::Error::other)?;
    }
    writer.finalize().map_err(std::io::Error::other)?;
    Ok(())
}

fn read_clip(reader: impl std::io::Read) -> Result<AudioClip, hound::Error> {
    let reader = hound::WavReader::new(reader)?;
    let rate = reader.spec().sample_rate;
    let samples = reader
        .into_samples::<f32>()
        .collect::<Result<Vec<_>, _>>()?;
    Ok(AudioClip::new(samples, rate))
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
        assert_eq!(cache.get(&key), Some(clip));
        assert_eq!(cache.len(), 1);
        // No temporary files are left behind.
        let sub = dir.path().join(&key.as_str()[..2]);
        assert_eq!(fs::read_dir(&sub).unwrap().count(), 1);
        fs::write(cache.path(&key), b"RIFF").unwrap();
        assert!(cache.get(&key).is_none());
        assert_eq!(cache.len(), 0);
    }
}
