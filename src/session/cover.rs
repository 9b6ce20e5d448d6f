//! The book's own cover (EPUB), staged as a file for ffmpeg to embed.

use std::path::{Path, PathBuf};

use crate::audio::encode::Encoder;
use crate::book::Cover;

/// The first bytes of every JPEG file.
pub const JPEG_MAGIC: &[u8] = &[0xFF, 0xD8];

/// Writes `cover` to `stem.<ext>` (the extension from its bytes) unless
/// that file already holds it, and returns the file. A cover `encoder`
/// cannot read is removed with a warning and `None` returned: the book's
/// cover is not the user's doing, so files are made without it rather than
/// failing every encode. A file kept from an earlier call passed the check
/// then and is not checked again.
pub fn stage(
    cover: &Cover,
    stem: &Path,
    encoder: Option<&Encoder>,
) -> Result<Option<PathBuf>, std::io::Error> {
    let name = stem
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let path = stem.with_file_name(format!("{name}.{}", extension(cover)));
    let kept = std::fs::read(&path).ok().as_deref() == Some(cover.bytes.as_slice());
    if !kept {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        crate::fsutil::write_atomic(&path, &cover.bytes)?;
    }
    if let Some(Err(e)) = encoder.filter(|_| !kept).map(|enc| enc.check_image(&path)) {
        tracing::warn!(error = %e, "the book's cover cannot be used; files are made without it");
        let _ = std::fs::remove_file(&path);
        return Ok(None);
    }
    Ok(Some(path))
}

/// Whether `path` starts like a JPEG file.
pub fn is_jpeg(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 2];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == JPEG_MAGIC)
}

/// File extension for a cover image, from its bytes, else its media type.
pub fn extension(cover: &Cover) -> &'static str {
    let media = cover.media_type.to_ascii_lowercase();
    if cover.bytes.starts_with(JPEG_MAGIC) {
        "jpg"
    } else if cover.bytes.starts_with(b"\x89PNG") {
        "png"
    } else if cover.bytes.starts_with(b"GIF8") {
        "gif"
    } else if media.contains("webp") {
        "webp"
    } else if media.contains("svg") {
        "svg"
    } else {
        "img"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cover_is_written_once_under_its_kind() {
        let dir = tempfile::tempdir().unwrap();
        let cover = Cover {
            media_type: "image/png".into(),
            bytes: b"\x89PNG\r\n\x1a\nrest".to_vec(),
        };
        let stem = dir.path().join("state/cover");
        let path = stage(&cover, &stem, None).unwrap().unwrap();
        assert_eq!(path, dir.path().join("state/cover.png"));
        let written = std::fs::metadata(&path).unwrap().modified().unwrap();
        assert_eq!(stage(&cover, &stem, None).unwrap().unwrap(), path);
        assert_eq!(
            std::fs::metadata(&path).unwrap().modified().unwrap(),
            written
        );
        assert!(!is_jpeg(&path));
    }
}
