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
    let tmp = temp_path(path);
    let file = fs::File::create(&tmp).map_err(io)?;
    let result = write_wav(clip, std::io::BufWriter::new(file));
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    fs::rename(&tmp, path).map_err(io)
}

/// `dir/.name.part` beside `path`.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.part"))
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
}
