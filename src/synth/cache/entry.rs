//! The format of an entry: a standard mono WAV file, 16-bit when that holds
//! the clip exactly, else 32-bit float, so other tools can play it and a
//! clip comes back exactly as it was stored.

use crate::audio::AudioClip;

/// A mono WAV in one piece: 16-bit PCM (format 1) when that holds every
/// sample exactly (espeak-ng's always do), else 32-bit float (format 3).
pub(super) fn encode_clip(clip: &AudioClip) -> std::io::Result<Vec<u8>> {
    if let Some(bytes) = encode_16_bit(clip)? {
        return Ok(bytes);
    }
    let (mut bytes, start) = wav_with_room(clip, 3, 4)?;
    for (out, s) in bytes[start..].chunks_exact_mut(4).zip(&clip.samples) {
        out.copy_from_slice(&s.to_le_bytes());
    }
    Ok(bytes)
}

/// The 16-bit entry of `clip`, or `None` when some sample is not a 16-bit
/// value. Converts and checks in one pass (a block at a time, so the
/// compiler can vectorize the loop).
fn encode_16_bit(clip: &AudioClip) -> std::io::Result<Option<Vec<u8>>> {
    const BLOCK: usize = 1024;
    let (mut bytes, start) = wav_with_room(clip, 1, 2)?;
    let blocks = bytes[start..]
        .chunks_mut(2 * BLOCK)
        .zip(clip.samples.chunks(BLOCK));
    for (out, samples) in blocks {
        let mut exact = true;
        for (o, &s) in out.chunks_exact_mut(2).zip(samples) {
            let v = s * 32768.0;
            // `as` saturates, so only in-range whole numbers come back equal.
            let i = v as i16;
            exact &= f32::from(i) == v;
            o.copy_from_slice(&i.to_le_bytes());
        }
        if !exact {
            return Ok(None);
        }
    }
    Ok(Some(bytes))
}

/// A WAV header for `clip` in `format` with `width`-byte samples, followed
/// by room for the samples; returns the bytes and where the samples start.
fn wav_with_room(clip: &AudioClip, format: u16, width: u32) -> std::io::Result<(Vec<u8>, usize)> {
    let data_len = u32::try_from(clip.samples.len() as u64 * u64::from(width))
        .ok()
        .filter(|&n| n <= u32::MAX - 36)
        .ok_or_else(|| std::io::Error::other("clip too long for a WAV file"))?;
    let mut bytes = Vec::with_capacity(44 + data_len as usize);
    bytes.extend_from_slice(b"RIFF");
    bytes.extend_from_slice(&(36 + data_len).to_le_bytes());
    bytes.extend_from_slice(b"WAVEfmt ");
    bytes.extend_from_slice(&16u32.to_le_bytes());
    bytes.extend_from_slice(&format.to_le_bytes());
    bytes.extend_from_slice(&1u16.to_le_bytes()); // mono
    bytes.extend_from_slice(&clip.sample_rate.to_le_bytes());
    bytes.extend_from_slice(&(clip.sample_rate * width).to_le_bytes());
    bytes.extend_from_slice(&(width as u16).to_le_bytes()); // block align
    bytes.extend_from_slice(&(width as u16 * 8).to_le_bytes());
    bytes.extend_from_slice(b"data");
    bytes.extend_from_slice(&data_len.to_le_bytes());
    let start = bytes.len();
    bytes.resize(start + data_len as usize, 0);
    Ok((bytes, start))
}

/// Reads what [`encode_clip`] made; anything else is an error.
pub(super) fn read_clip(bytes: &[u8]) -> Result<AudioClip, String> {
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
    let u32_at =
        |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    if bytes.len() < 44
        || &bytes[0..4] != b"RIFF"
        || &bytes[8..16] != b"WAVEfmt "
        || &bytes[36..40] != b"data"
        || u16_at(22) != 1
    {
        return Err("not a tingshu cache entry".into());
    }
    let width = match (u16_at(20), u16_at(34)) {
        (1, 16) => 2,
        (3, 32) => 4,
        _ => return Err("not a tingshu cache entry".into()),
    };
    let data_len = u32_at(40) as usize;
    if bytes.len() != 44 + data_len || !data_len.is_multiple_of(width) {
        return Err(format!(
            "truncated: {} of {} data bytes",
            bytes.len().saturating_sub(44),
            data_len
        ));
    }
    let data = &bytes[44..];
    let samples = if width == 2 {
        data.chunks_exact(2)
            .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
            .collect()
    } else {
        data.chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    };
    Ok(AudioClip::new(samples, u32_at(24)))
}

#[cfg(test)]
mod tests {
    use crate::audio::AudioClip;
    use crate::synth::cache::dir::entry_path;
    use crate::synth::cache::tests::req;
    use crate::synth::cache::{Cache, CacheKey};

    #[test]
    fn sixteen_bit_clips_are_stored_as_sixteen_bit_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let key = CacheKey::new("x", &req("二", 1.0));
        let pcm = [0i16, 1, -1, 12345, -32768, 32767];
        let clip = AudioClip::from_i16(&pcm, 22050);
        cache.put(&key, &clip).unwrap();
        assert_eq!(cache.get(&key), Some(clip));
        let reader = hound::WavReader::open(entry_path(dir.path(), &key)).unwrap();
        assert_eq!(reader.spec().sample_format, hound::SampleFormat::Int);
        assert_eq!(reader.spec().bits_per_sample, 16);
        let stored: Vec<i16> = reader.into_samples().map(Result::unwrap).collect();
        assert_eq!(stored, pcm);
        // One sample off the 16-bit grid keeps the whole clip in float.
        let mut finer = AudioClip::from_i16(&pcm, 22050);
        finer.samples[1] += 1e-6;
        let key2 = CacheKey::new("x", &req("三", 1.0));
        cache.put(&key2, &finer).unwrap();
        assert_eq!(cache.get(&key2), Some(finer));
        // Also when that sample comes late, after whole blocks fitted.
        let long: Vec<i16> = (0..3000).map(|i| (i * 7 - 10_000) as i16).collect();
        let mut late = AudioClip::from_i16(&long, 22050);
        late.samples[2500] += 1e-6;
        let key3 = CacheKey::new("x", &req("四", 1.0));
        cache.put(&key3, &late).unwrap();
        assert_eq!(cache.get(&key3), Some(late));
        let reader = hound::WavReader::open(entry_path(dir.path(), &key3)).unwrap();
        assert_eq!(reader.spec().sample_format, hound::SampleFormat::Float);
    }
}
