//! The cache key: a hash of everything that changes a chunk's audio.

use sha2::{Digest, Sha256};

use crate::frontend;
use crate::synth::SynthRequest;

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

    /// The key as hex.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::cache::tests::req;

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
}
