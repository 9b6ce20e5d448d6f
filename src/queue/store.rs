//! The shared segment store: a directory (local, NFS, SMB) of synthesized
//! chunks named by the hash of everything that changes their audio.
//!
//! Layout and key follow the synthesis cache (`DIR/ab/abcd….wav`, 32-bit
//! float mono WAV, so clips round-trip exactly); every write goes to a
//! uniquely named temporary file renamed into place, so a reader never sees
//! half an entry and two writers of one key never clash.

use std::fs;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::audio::AudioClip;
use crate::frontend;
use crate::synth::SynthRequest;

/// The content hash of a chunk sent to a backend with `fingerprint`:
/// lowercase hex SHA-256 over the front-end version, the backend's
/// fingerprint, the voice settings that change audio, the text and pinyin.
/// The voice's name in the voices file is not part of it.
pub fn segment_key(fingerprint: &str, req: &SynthRequest) -> String {
    let v = &req.voice;
    let fields = [
        format!("frontend={}", frontend::VERSION),
        format!("backend={fingerprint}"),
        format!("voice={}", v.voice),
        format!("speed={}", v.speed),
        format!("pitch={:?}", v.pitch),
        format!("text={}", req.text),
        format!("pinyin={}", req.pinyin),
    ];
    let mut hash = Sha256::new();
    for field in fields {
        // Length prefixes keep field boundaries unambiguous.
        hash.update((field.len() as u64).to_le_bytes());
        hash.update(field.as_bytes());
    }
    hex::encode(hash.finalize())
}

/// Why the store could not read or write an entry.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("segment store: '{key}' is not a segment key")]
    BadKey { key: String },
    #[error("segment store: cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("segment store: cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: hound::Error,
    },
}

/// A segment store directory.
#[derive(Debug, Clone)]
pub struct SegmentStore {
    dir: PathBuf,
}

impl SegmentStore {
    pub fn new(dir: impl Into<PathBuf>) -> SegmentStore {
        SegmentStore { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &str) -> Result<PathBuf, StoreError> {
        if key.len() < 16 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(StoreError::BadKey {
                key: key.to_owned(),
            });
        }
        Ok(self.dir.join(&key[..2]).join(format!("{key}.wav")))
    }

    pub fn contains(&self, key: &str) -> bool {
        self.path(key).is_ok_and(|p| p.is_file())
    }

    /// The clip stored under `key`; `Ok(None)` when absent.
    pub fn get(&self, key: &str) -> Result<Option<AudioClip>, StoreError> {
        let path = self.path(key)?;
        let file = match fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(StoreError::Read {
                    path,
                    source: hound::Error::IoError(e),
                });
            }
        };
        read_clip(BufReader::new(file))
            .map(Some)
            .map_err(|source| StoreError::Read { path, source })
    }

    /// Stores `clip` under `key` atomically.
    pub fn put(&self, key: &str, clip: &AudioClip) -> Result<(), StoreError> {
        let path = self.path(key)?;
        let dir = path.parent().unwrap_or(&self.dir).to_owned();
        let write_err = |source| StoreError::Write {
            path: path.clone(),
            source,
        };
        fs::create_dir_all(&dir).map_err(write_err)?;
        let tmp = dir.join(format!(
            ".{key}.{}-{}.tmp",
            std::process::id(),
            fastrand::u64(..)
        ));
        let result = write_clip(&tmp, clip).and_then(|()| fs::rename(&tmp, &path));
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result.map_err(write_err)
    }

    /// Number of entries.
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
        // A silent chunk carries rate 0, which no WAV header can hold; it is
        // stored as an empty clip at 1 Hz and read back with rate 0.
        sample_rate: clip.sample_rate.max(1),
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let file = BufWriter::new(fs::File::create(path)?);
    let mut writer = hound::WavWriter::new(file, spec).map_err(std::io::Error::other)?;
    for &s in &clip.samples {
        writer.write_sample(s).map_err(std::io::Error::other)?;
    }
    writer.finalize().map_err(std::io::Error::other)
}

fn read_clip(reader: impl std::io::Read) -> Result<AudioClip, hound::Error> {
    let reader = hound::WavReader::new(reader)?;
    let rate = reader.spec().sample_rate;
    let samples = reader
        .into_samples::<f32>()
        .collect::<Result<Vec<_>, _>>()?;
    let rate = if samples.is_empty() && rate == 1 {
        0
    } else {
        rate
    };
    Ok(AudioClip::new(samples, rate))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::VoiceSettings;

    fn request(text: &str, speed: f32, name: &str) -> SynthRequest {
        SynthRequest {
            text: text.into(),
            pinyin: String::new(),
            voice: VoiceSettings {
                name: name.into(),
                voice: "cmn-latn-pinyin".into(),
                speed,
                pitch: None,
                ..VoiceSettings::default()
            },
        }
    }

    #[test]
    fn key_follows_what_changes_audio() {
        let base = segment_key("espeak/1", &request("灯塔", 1.0, "narrator"));
        assert_eq!(base.len(), 64);
        assert_eq!(base, segment_key("espeak/1", &request("灯塔", 1.0, "hero")));
        assert_ne!(
            base,
            segment_key("espeak/2", &request("灯塔", 1.0, "narrator"))
        );
        assert_ne!(
            base,
            segment_key("espeak/1", &request("灯塔。", 1.0, "narrator"))
        );
        assert_ne!(
            base,
            segment_key("espeak/1", &request("灯塔", 1.2, "narrator"))
        );
    }

    #[test]
    fn clips_round_trip_exactly_without_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let store = SegmentStore::new(dir.path());
        let key = segment_key("x", &request("一", 1.0, "n"));
        assert_eq!(store.get(&key).unwrap(), None);
        let clip = AudioClip::new(vec![0.0, 0.123_456_79, -0.987_654_3], 22050);
        store.put(&key, &clip).unwrap();
        store.put(&key, &clip).unwrap();
        assert_eq!(store.get(&key).unwrap(), Some(clip));
        assert!(store.contains(&key));
        assert_eq!(store.len(), 1);
        let sub = dir.path().join(&key[..2]);
        assert_eq!(fs::read_dir(sub).unwrap().count(), 1);

        let silent = segment_key("x", &request("。", 1.0, "n"));
        store.put(&silent, &AudioClip::new(Vec::new(), 0)).unwrap();
        assert_eq!(
            store.get(&silent).unwrap(),
            Some(AudioClip::new(Vec::new(), 0))
        );
    }

    #[test]
    fn bad_keys_and_broken_entries_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let store = SegmentStore::new(dir.path());
        let err = store.get("../../etc/passwd").unwrap_err().to_string();
        assert!(err.contains("is not a segment key"), "{err}");
        let key = segment_key("x", &request("二", 1.0, "n"));
        fs::create_dir_all(dir.path().join(&key[..2])).unwrap();
        fs::write(store.path(&key).unwrap(), b"RIFF").unwrap();
        let err = store.get(&key).unwrap_err().to_string();
        assert!(err.contains("cannot read"), "{err}");
    }
}
