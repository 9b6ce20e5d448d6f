//! ffmpeg and ffprobe: the independent tools that make test covers and
//! check encoded outputs (chapters, tags, durations).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use super::services;

fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether ffmpeg and ffprobe run (see [`services::require`]).
pub fn tools() -> bool {
    services::require(
        "ffmpeg/ffprobe (Debian package `ffmpeg`)",
        runs("ffmpeg") && runs("ffprobe"),
    )
}

/// `ffprobe -of json WHAT FILE`.
pub fn ffprobe(path: &Path, what: &str) -> serde_json::Value {
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-of", "json", what])
        .arg(path)
        .output()
        .expect("run ffprobe");
    assert!(
        out.status.success(),
        "ffprobe {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("ffprobe JSON")
}

/// Chapter titles of an M4B as ffprobe reads them.
pub fn m4b_chapters(path: &Path) -> Vec<String> {
    ffprobe(path, "-show_chapters")["chapters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tags"]["title"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Format-level tags of a file, keys in lower case.
pub fn tags(path: &Path) -> BTreeMap<String, String> {
    ffprobe(path, "-show_format")["format"]["tags"]
        .as_object()
        .map(|t| {
            t.iter()
                .map(|(k, v)| (k.to_lowercase(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// The duration ffprobe gives a file, in seconds.
pub fn duration_s(path: &Path) -> f64 {
    ffprobe(path, "-show_format")["format"]["duration"]
        .as_str()
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| panic!("{}: no duration", path.display()))
}
