//! 16-bit mono WAV output (hound), to any `Write + Seek`, and atomic files.

use std::fs;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use super::AudioClip;

/// Errors writing audio.
#[derive(Debug, thiserror::Error)]
pub enum WavError {
    #[error("cannot write WAV data: {0}")]
    Encode(#[from] hound::Error),
    #[error("cannot write {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write WAV data")]
    Write(#[source] std::io::Error),
    #[error("cannot use the chapter's temporary spill file")]
    Spill(#[source] std::io::Error),
}

/// Largest data chunk a RIFF header can describe (its sizes are 32-bit).
const RIFF_MAX_DATA: u64 = u32::MAX as u64 - 36;

/// The header of a 16-bit mono PCM WAV of `samples` samples at `rate`: the
/// usual 44-byte RIFF header (the same bytes hound writes), or, when the
/// data passes 4 GiB, an RF64 header (EBU Tech 3306: `RF64`, a `ds64`
/// chunk with the 64-bit sizes, 32-bit sizes set to 0xFFFFFFFF), which
/// ffmpeg and most editors read.
pub fn header(rate: u32, samples: u64) -> Vec<u8> {
    let data = samples * 2;
    let mut h = Vec::with_capacity(80);
    let fmt = |h: &mut Vec<u8>| {
        h.extend_from_slice(b"fmt ");
        h.extend_from_slice(&16u32.to_le_bytes());
        h.extend_from_slice(&1u16.to_le_bytes()); // PCM
        h.extend_from_slice(&1u16.to_le_bytes()); // mono
        h.extend_from_slice(&rate.to_le_bytes());
        h.extend_from_slice(&(rate * 2).to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&16u16.to_le_bytes());
    };
    if data <= RIFF_MAX_DATA {
        h.extend_from_slice(b"RIFF");
        h.extend_from_slice(&(data as u32 + 36).to_le_bytes());
        h.extend_from_slice(b"WAVE");
        fmt(&mut h);
        h.extend_from_slice(b"data");
        h.extend_from_slice(&(data as u32).to_le_bytes());
    } else {
        h.extend_from_slice(b"RF64");
        h.extend_from_slice(&u32::MAX.to_le_bytes());
        h.extend_from_slice(b"WAVE");
        h.extend_from_slice(b"ds64");
        h.extend_from_slice(&28u32.to_le_bytes());
        // RIFF size: everything after the first 8 bytes (80-byte header).
        h.extend_from_slice(&(data + 80 - 8).to_le_bytes());
        h.extend_from_slice(&data.to_le_bytes());
        h.extend_from_slice(&samples.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes()); // no table
        fmt(&mut h);
        h.extend_from_slice(b"data");
        h.extend_from_slice(&u32::MAX.to_le_bytes());
    }
    h
}

/// Sample rate and sample count of a 16-bit mono WAV written by tingshu
/// (RIFF or RF64), from its header.
pub fn read_header(path: &Path) -> std::io::Result<(u32, u64)> {
    use std::io::Read;
    let mut h = [0u8; 80];
    let mut file = fs::File::open(path)?;
    let n = file.read(&mut h)?;
    let bad = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a WAV file tingshu wrote",
        )
    };
    let u32_at = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    let u64_at = |i: usize| u64::from(u32_at(i)) | (u64::from(u32_at(i + 4)) << 32);
    match &h[..4] {
        b"RIFF" if n >= 44 && &h[36..40] == b"data" => {
            let bits = u16::from_le_bytes([h[34], h[35]]).max(8);
            let channels = u16::from_le_bytes([h[22], h[23]]).max(1);
            let frame = u64::from(bits / 8) * u64::from(channels);
            Ok((u32_at(24), u64::from(u32_at(40)) / frame))
        }
        b"RF64" if n >= 80 && &h[12..16] == b"ds64" => Ok((u32_at(60), u64_at(36))),
        _ => Err(bad()),
    }
}

/// Writes `clip` as 16-bit mono PCM.
pub fn write_wav<W: Write + Seek>(clip: &AudioClip, out: W) -> Result<(), WavError> {
    let mut writer = hound::WavWriter::new(out, mono_spec(clip.sample_rate))?;
    {
        let mut samples = writer.get_i16_writer(clip.samples.len() as u32);
        for &s in &clip.samples {
            samples.write_sample(to_i16(s));
        }
        samples.flush()?;
    }
    writer.finalize()?;
    Ok(())
}

/// 16-bit mono PCM at `sample_rate`.
pub fn mono_spec(sample_rate: u32) -> hound::WavSpec {
    hound::WavSpec {
        channels: 1,
        sample_rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    }
}

/// Clamps and rounds a float sample to 16 bits.
pub fn to_i16(s: f32) -> i16 {
    // Half away from zero, like `f32::round`, without a libm call per sample.
    let v = s.clamp(-1.0, 1.0) * 32767.0;
    (v + 0.5f32.copysign(v)) as i16
}

/// Writes `clip` to `path` through a temporary file in the same directory,
/// renamed into place only when complete.
pub fn write_wav_file(clip: &AudioClip, path: &Path) -> Result<(), WavError> {
    let io = |source| WavError::Io {
        path: path.to_owned(),
        source,
    };
    crate::fsutil::write_atomic_with(path, io, |out| write_wav(clip, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn writes_16_bit_mono_that_reads_back() {
        let clip = AudioClip::new(vec![0.0, 0.5, -0.5, 1.5], 22050);
        let mut buf = Cursor::new(Vec::new());
        write_wav(&clip, &mut buf).unwrap();
        buf.set_position(0);
        let reader = hound::WavReader::new(buf).unwrap();
        let spec = reader.spec();
        assert_eq!(
            (spec.channels, spec.sample_rate, spec.bits_per_sample),
            (1, 22050, 16)
        );
        let samples: Vec<i16> = reader.into_samples().map(Result::unwrap).collect();
        assert_eq!(samples, [0, 16384, -16384, 32767]);
    }

    #[test]
    fn riff_header_is_the_one_hound_writes_and_rf64_past_4_gib() {
        let clip = AudioClip::new(vec![0.25; 1001], 22050);
        let mut buf = Cursor::new(Vec::new());
        write_wav(&clip, &mut buf).unwrap();
        assert_eq!(&buf.get_ref()[..44], header(22050, 1001).as_slice());

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.wav");
        std::fs::write(&path, buf.into_inner()).unwrap();
        assert_eq!(read_header(&path).unwrap(), (22050, 1001));

        // 27.1 h at 22.05 kHz: past the RIFF limit.
        let samples = (u64::from(u32::MAX) / 2) + 10;
        let rf64 = header(22050, samples);
        assert_eq!(rf64.len(), 80);
        assert_eq!(&rf64[..4], b"RF64");
        assert_eq!(&rf64[72..76], b"data");
        std::fs::write(&path, &rf64).unwrap();
        assert_eq!(read_header(&path).unwrap(), (22050, samples));
    }
}
