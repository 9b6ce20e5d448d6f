//! Spill-to-disk: the file a long chapter's prepared clips move to, so
//! that memory does not grow with the chapter.

use std::path::Path;
use std::sync::Arc;

use crate::audio::wav::WavError;

/// A temporary file holding the samples and tracks of a chapter's clips
/// while the chapter is assembled, so memory does not grow with its
/// length. Unnamed (`O_TMPFILE`): it disappears when closed, even when
/// tingshu is killed.
#[derive(Debug)]
pub struct Spill {
    file: std::fs::File,
    end: std::sync::Mutex<u64>,
}

impl Spill {
    /// A spill file in `dir` (the chapter's own folder: same disk as the
    /// output, unlike a RAM-backed /tmp).
    pub fn new_in(dir: &Path) -> std::io::Result<Arc<Spill>> {
        Ok(Arc::new(Spill {
            file: tempfile::tempfile_in(dir)?,
            end: std::sync::Mutex::new(0),
        }))
    }

    fn bytes(parts: &[&[f32]]) -> Vec<u8> {
        parts
            .iter()
            .flat_map(|p| p.iter())
            .flat_map(|s| s.to_le_bytes())
            .collect()
    }

    /// Appends `parts` back to back; returns where they start.
    pub(super) fn append(&self, parts: &[&[f32]]) -> std::io::Result<u64> {
        use std::os::unix::fs::FileExt;
        let bytes = Spill::bytes(parts);
        let offset = {
            let mut end = self.end.lock().unwrap_or_else(|e| e.into_inner());
            let offset = *end;
            *end += bytes.len() as u64;
            offset
        };
        self.file.write_all_at(&bytes, offset)?;
        Ok(offset)
    }

    /// `len` samples from `offset`.
    pub(super) fn read(&self, offset: u64, len: usize) -> Result<Vec<f32>, WavError> {
        use std::os::unix::fs::FileExt;
        let mut bytes = vec![0u8; len * 4];
        self.file
            .read_exact_at(&mut bytes, offset)
            .map_err(WavError::Spill)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    /// Overwrites what starts at `offset` with `parts`, back to back.
    pub(super) fn write(&self, offset: u64, parts: &[&[f32]]) -> Result<(), WavError> {
        use std::os::unix::fs::FileExt;
        self.file
            .write_all_at(&Spill::bytes(parts), offset)
            .map_err(WavError::Spill)
    }
}
