//! Encoded outputs through Debian's `ffmpeg` program: MP3 and Opus per
//! chapter with tags and cover, and one M4B for the whole book with a
//! chapter marker per chapter (FFMETADATA).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::fsutil::temp_path;

/// An output format of `tingshu build --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Format {
    Wav,
    Mp3,
    Opus,
    M4b,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Wav => "wav",
            Format::Mp3 => "mp3",
            Format::Opus => "opus",
            Format::M4b => "m4b",
        }
    }

    /// Whether this format is one file per chapter (the M4B is per book).
    pub fn per_chapter(self) -> bool {
        !matches!(self, Format::M4b)
    }

    /// Whether ffmpeg makes it.
    pub fn needs_ffmpeg(self) -> bool {
        !matches!(self, Format::Wav)
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Format, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "wav" => Ok(Format::Wav),
            "mp3" => Ok(Format::Mp3),
            "opus" => Ok(Format::Opus),
            "m4b" => Ok(Format::M4b),
            other => Err(format!(
                "unknown format '{other}' (known: wav, mp3, opus, m4b)"
            )),
        }
    }
}

/// Why encoding failed.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error(
        "cannot run `{program}` ({source}): MP3, Opus and M4B output need ffmpeg — install the Debian package `ffmpeg` (apt-get install ffmpeg)"
    )]
    Missing {
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("ffmpeg failed writing {path}: {message}")]
    Failed { path: PathBuf, message: String },
    #[error("cannot write {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read {path}: {message}")]
    Input { path: PathBuf, message: String },
    #[error("stopped writing {path}: interrupted (the file as it was is kept)")]
    Interrupted { path: PathBuf },
}

/// Tags of one chapter file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tags {
    pub title: String,
    pub album: String,
    pub artist: Option<String>,
    /// (track, total tracks); no total for a serial that still grows.
    pub track: Option<(usize, Option<usize>)>,
    pub cover: Option<PathBuf>,
}

/// A chapter of the M4B.
#[derive(Debug, Clone, PartialEq)]
pub struct BookChapter {
    /// A WAV file.
    pub file: PathBuf,
    pub title: String,
}

/// Runs the `ffmpeg` program.
#[derive(Debug, Clone)]
pub struct Encoder {
    program: PathBuf,
    /// Set when the run is asked to stop: a running ffmpeg is killed and
    /// its temporary file removed ([`Encoder::stopping_on`]).
    stop: Option<Arc<AtomicBool>>,
}

impl Encoder {
    /// Checks that `program` runs (`ffmpeg -version`).
    pub fn new(program: impl Into<PathBuf>) -> Result<Encoder, EncodeError> {
        let program = program.into();
        let status = Command::new(&program)
            .arg("-version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        match status {
            Ok(s) if s.success() => Ok(Encoder {
                program,
                stop: None,
            }),
            Ok(s) => Err(EncodeError::Missing {
                program,
                source: std::io::Error::other(format!("`-version` exited with {s}")),
            }),
            Err(source) => Err(EncodeError::Missing { program, source }),
        }
    }

    /// This encoder, stopping any encode as soon as `stop` is set (a
    /// `batch run` interrupted by a signal): ffmpeg is killed, its
    /// temporary file removed and the old file kept.
    pub fn stopping_on(mut self, stop: Arc<AtomicBool>) -> Encoder {
        self.stop = Some(stop);
        self
    }

    fn stop_requested(&self) -> bool {
        self.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst))
    }

    /// Encodes a chapter WAV into `out` (MP3 or Opus) with tags and cover.
    pub fn encode_chapter(
        &self,
        wav: &Path,
        out: &Path,
        format: Format,
        tags: &Tags,
    ) -> Result<(), EncodeError> {
        let meta = temp_path(&out.with_extension("ffmeta"));
        let mut text = String::from(";FFMETADATA1\n");
        push_tag(&mut text, "title", &tags.title);
        push_tag(&mut text, "album", &tags.album);
        if let Some(artist) = &tags.artist {
            push_tag(&mut text, "artist", artist);
            push_tag(&mut text, "album_artist", artist);
        }
        match tags.track {
            Some((n, Some(total))) => push_tag(&mut text, "track", &format!("{n}/{total}")),
            Some((n, None)) => push_tag(&mut text, "track", &n.to_string()),
            None => {}
        }
        push_tag(&mut text, "genre", "Audiobook");
        let mut args: Vec<String> = vec!["-i".into(), path_arg(wav), "-i".into(), path_arg(&meta)];
        match format {
            Format::Mp3 => {
                let cover = tags.cover.as_ref();
                if let Some(cover) = cover {
                    args.extend(["-i".into(), path_arg(cover)]);
                }
                args.extend(
                    [
                        "-map",
                        "0:a",
                        "-map_metadata",
                        "1",
                        "-c:a",
                        "libmp3lame",
                        "-b:a",
                        "64k",
                    ]
                    .map(String::from),
                );
                if cover.is_some() {
                    args.extend(
                        [
                            "-map",
                            "2:v",
                            "-c:v",
                            "mjpeg",
                            "-disposition:v",
                            "attached_pic",
                            "-metadata:s:v",
                            "comment=Cover (front)",
                        ]
                        .map(String::from),
                    );
                }
                args.extend(["-id3v2_version", "3", "-f", "mp3"].map(String::from));
            }
            Format::Opus => {
                if let Some(cover) = &tags.cover {
                    let block = picture_block(cover)?;
                    push_tag(&mut text, "METADATA_BLOCK_PICTURE", &base64(&block));
                }
                args.extend(
                    [
                        "-map",
                        "0:a",
                        "-map_metadata",
                        "1",
                        "-c:a",
                        "libopus",
                        "-b:a",
                        "32k",
                        "-f",
                        "opus",
                    ]
                    .map(String::from),
                );
            }
            Format::Wav | Format::M4b => {
                return Err(EncodeError::Failed {
                    path: out.to_owned(),
                    message: format!("{} is not a per-chapter encoded format", format.extension()),
                });
            }
        }
        write_file(&meta, &text)?;
        let duration_ms = wav_duration_ms(wav)?;
        let result = self.run(args, out, Expect::Audio { duration_ms });
        let _ = std::fs::remove_file(&meta);
        result
    }

    /// Writes one M4B (AAC in MP4) of `chapters` in order, one chapter
    /// marker each, with book tags and an optional cover.
    pub fn encode_m4b(
        &self,
        chapters: &[BookChapter],
        out: &Path,
        tags: &Tags,
    ) -> Result<(), EncodeError> {
        let list = temp_path(&out.with_extension("list"));
        let meta = temp_path(&out.with_extension("ffmeta"));
        let mut list_text = String::from("ffconcat version 1.0\n");
        let mut meta_text = String::from(";FFMETADATA1\n");
        push_tag(&mut meta_text, "title", &tags.album);
        push_tag(&mut meta_text, "album", &tags.album);
        if let Some(artist) = &tags.artist {
            push_tag(&mut meta_text, "artist", artist);
            push_tag(&mut meta_text, "album_artist", artist);
        }
        push_tag(&mut meta_text, "genre", "Audiobook");
        let mut start_ms = 0u64;
        for chapter in chapters {
            let frames_ms = wav_duration_ms(&chapter.file)?;
            let abs = std::path::absolute(&chapter.file).unwrap_or_else(|_| chapter.file.clone());
            let _ = writeln!(
                list_text,
                "file '{}'",
                abs.to_string_lossy().replace('\'', "'\\''")
            );
            let _ = write!(
                meta_text,
                "[CHAPTER]\nTIMEBASE=1/1000\nSTART={start_ms}\nEND={}\n",
                start_ms + frames_ms
            );
            push_tag(&mut meta_text, "title", &chapter.title);
            start_ms += frames_ms;
        }
        write_file(&list, &list_text)?;
        if let Err(e) = write_file(&meta, &meta_text) {
            let _ = std::fs::remove_file(&list);
            return Err(e);
        }
        let mut args: Vec<String> = ["-f", "concat", "-safe", "0", "-i"]
            .map(String::from)
            .into();
        args.extend([path_arg(&list), "-i".into(), path_arg(&meta)]);
        if let Some(cover) = &tags.cover {
            args.extend(["-i".into(), path_arg(cover)]);
        }
        args.extend(
            [
                "-map",
                "0:a",
                "-map_metadata",
                "1",
                "-map_chapters",
                "1",
                "-c:a",
                "aac",
                // The default `twoloop` coder took 60 s for 58 min of
                // espeak-ng speech (120 chapters) on the 2-core test VM,
                // `fast` 15 s: the M4B is rewritten whenever a chapter of
                // a serial changes.
                "-aac_coder",
                "fast",
                "-b:a",
                "64k",
            ]
            .map(String::from),
        );
        if tags.cover.is_some() {
            args.extend(
                [
                    "-map",
                    "2:v",
                    "-c:v",
                    "mjpeg",
                    "-disposition:v",
                    "attached_pic",
                ]
                .map(String::from),
            );
        }
        args.extend(["-movflags", "+faststart", "-f", "ipod"].map(String::from));
        let result = self.run(
            args,
            out,
            Expect::Audio {
                duration_ms: start_ms,
            },
        );
        let _ = std::fs::remove_file(&list);
        let _ = std::fs::remove_file(&meta);
        result
    }

    /// Whether ffmpeg can read `image` as a picture; the error says why not.
    /// A cover it cannot read would make every encode that embeds it fail.
    pub fn check_image(&self, image: &Path) -> Result<(), EncodeError> {
        let args = ["-i".into(), path_arg(image)]
            .into_iter()
            .chain(["-frames:v", "1", "-f", "null", "-"].map(String::from))
            .collect();
        match self.invoke(args)? {
            None => Ok(()),
            Some(message) => Err(EncodeError::Input {
                path: image.to_owned(),
                message,
            }),
        }
    }

    /// Converts any image ffmpeg reads into a JPEG (for `cover.jpg`).
    pub fn convert_image(&self, input: &Path, out: &Path) -> Result<(), EncodeError> {
        let args = vec![
            "-i".into(),
            path_arg(input),
            "-frames:v".into(),
            "1".into(),
            "-c:v".into(),
            "mjpeg".into(),
            "-f".into(),
            "image2".into(),
        ];
        self.run(args, out, Expect::Image)
    }

    /// Runs ffmpeg with `args` writing `out` through a temporary file, then
    /// checks what it wrote (see [`Encoder::verify`]) before renaming it
    /// over `out`: a failed or broken encode leaves the old `out` in place.
    fn run(&self, mut args: Vec<String>, out: &Path, expect: Expect) -> Result<(), EncodeError> {
        let tmp = temp_path(out);
        check_free_space(out, expect.bytes_needed())?;
        args.insert(0, "-y".into());
        args.push(path_arg(&tmp));
        let invoked = self.invoke(args);
        if self.stop_requested() {
            let _ = std::fs::remove_file(&tmp);
            return Err(EncodeError::Interrupted {
                path: out.to_owned(),
            });
        }
        let checked = match invoked {
            Ok(Some(message)) => Err(message),
            Ok(None) => self.verify(&tmp, expect),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        if let Err(message) = checked {
            let _ = std::fs::remove_file(&tmp);
            return Err(EncodeError::Failed {
                path: out.to_owned(),
                message,
            });
        }
        crate::fsutil::commit(&tmp, out).map_err(|source| EncodeError::Io {
            path: out.to_owned(),
            source,
        })
    }

    /// Probes a file ffmpeg just wrote (`ffprobe`, beside the ffmpeg
    /// program): it must hold the expected stream and, for audio, last as
    /// long as its input (within 1 % + 0.5 s). ffmpeg 5.1 can exit 0 after
    /// `Error writing trailer … No space left on device`; this catches it.
    fn verify(&self, file: &Path, expect: Expect) -> Result<(), String> {
        let output = Command::new(self.probe_program())
            .args([
                "-v",
                "error",
                "-show_entries",
                "format=duration:stream=codec_type",
            ])
            .args(["-of", "default=noprint_wrappers=1"])
            .arg(path_arg(file))
            .stdin(Stdio::null())
            .output();
        let output = match output {
            Ok(output) => output,
            // No ffprobe: decode the file instead (slower, same verdict).
            Err(_) => return self.verify_by_decoding(file),
        };
        let text = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() || stderr.lines().any(|l| !l.trim().is_empty()) {
            let line = last_line(&stderr);
            return Err(format!("the file written does not read back ({line})"));
        }
        let has = |kind: &str| {
            text.lines()
                .any(|l| l.trim() == format!("codec_type={kind}"))
        };
        let (kind, expected_ms) = match expect {
            Expect::Audio { duration_ms } => ("audio", Some(duration_ms)),
            Expect::Image => ("video", None),
        };
        if !has(kind) {
            return Err(format!("the file written has no {kind} stream"));
        }
        if let Some(expected_ms) = expected_ms {
            let duration_s = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("duration="))
                .and_then(|d| d.parse::<f64>().ok())
                .filter(|d| d.is_finite());
            let Some(duration_s) = duration_s else {
                return Err("the file written has no duration".to_owned());
            };
            let expected_s = expected_ms as f64 / 1000.0;
            if (duration_s - expected_s).abs() > 0.5 + expected_s * 0.01 {
                return Err(format!(
                    "the file written lasts {duration_s:.1} s instead of {expected_s:.1} s (truncated?)"
                ));
            }
        }
        Ok(())
    }

    fn verify_by_decoding(&self, file: &Path) -> Result<(), String> {
        let args = vec![
            "-i".into(),
            path_arg(file),
            "-f".into(),
            "null".into(),
            "-".into(),
        ];
        match self.invoke(args) {
            Ok(None) => Ok(()),
            Ok(Some(message)) => Err(format!("the file written does not read back: {message}")),
            Err(e) => Err(e.to_string()),
        }
    }

    /// `ffprobe` in the same folder as the ffmpeg program (or on `PATH`
    /// beside a bare `ffmpeg`); `TINGSHU_FFPROBE` names another.
    fn probe_program(&self) -> PathBuf {
        if let Some(p) = std::env::var_os("TINGSHU_FFPROBE").filter(|p| !p.is_empty()) {
            return PathBuf::from(p);
        }
        match self.program.file_name() {
            Some(name) => {
                let name = name.to_string_lossy().replacen("ffmpeg", "ffprobe", 1);
                self.program.with_file_name(name)
            }
            None => PathBuf::from("ffprobe"),
        }
    }

    /// Runs ffmpeg quietly with `args`; on failure, its exit status and the
    /// last line it printed. Any line at the `error` level counts as a
    /// failure even when ffmpeg exits 0.
    fn invoke(&self, args: Vec<String>) -> Result<Option<String>, EncodeError> {
        let mut command = Command::new(&self.program);
        command
            .args(["-hide_banner", "-nostdin", "-loglevel", "error"])
            .args(&args)
            .stdin(Stdio::null());
        crate::audio::child::die_with_parent(&mut command);
        let missing = |source| EncodeError::Missing {
            program: self.program.clone(),
            source,
        };
        let output = match &self.stop {
            None => command.output().map_err(missing)?,
            Some(stop) => match self.output_unless_stopped(command, stop).map_err(missing)? {
                Some(output) => output,
                // Killed: `run` reports the stop.
                None => return Ok(Some("interrupted".to_owned())),
            },
        };
        let stderr = String::from_utf8_lossy(&output.stderr);
        let errors = stderr.lines().any(|l| !l.trim().is_empty());
        if output.status.success() && !errors {
            return Ok(None);
        }
        let line = stderr
            .lines()
            .find(|l| is_disk_full(l))
            .unwrap_or_else(|| last_line(&stderr));
        if is_disk_full(line) {
            return Ok(Some(format!("disk full ({})", line.trim())));
        }
        Ok(Some(format!("{} ({})", output.status, line.trim())))
    }
}

impl Encoder {
    /// Runs `command` to the end like `Command::output` (stdout dropped),
    /// unless `stop` is set first: then the child is killed and reaped and
    /// `None` returned.
    fn output_unless_stopped(
        &self,
        mut command: Command,
        stop: &AtomicBool,
    ) -> std::io::Result<Option<std::process::Output>> {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let mut pipe = child.stderr.take().expect("stderr is piped");
        let (tx, rx) = std::sync::mpsc::channel();
        // ffmpeg closes its stderr when it exits; the wait below is short.
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = std::io::Read::read_to_end(&mut pipe, &mut buf);
            let _ = tx.send(buf);
        });
        let stderr = loop {
            if stop.load(Ordering::SeqCst) {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(None);
            }
            match rx.recv_timeout(std::time::Duration::from_millis(20)) {
                Ok(buf) => break buf,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break Vec::new(),
            }
        };
        let status = child.wait()?;
        Ok(Some(std::process::Output {
            status,
            stdout: Vec::new(),
            stderr,
        }))
    }
}

/// What an encode must have produced.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// An audio stream lasting about this long.
    Audio { duration_ms: u64 },
    /// A picture.
    Image,
}

impl Expect {
    /// Room needed for the file: 64 kb/s at most, plus 1 MiB.
    fn bytes_needed(self) -> u64 {
        match self {
            Expect::Audio { duration_ms } => duration_ms * 8 + (1 << 20),
            Expect::Image => 1 << 20,
        }
    }
}

fn last_line(text: &str) -> &str {
    text.lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or("no message")
        .trim()
}

fn is_disk_full(line: &str) -> bool {
    line.contains("No space left on device") || line.contains("Disk quota exceeded")
}

/// Fails early, with a plain message, when the file system of `out` has
/// less than `needed` bytes free.
fn check_free_space(out: &Path, needed: u64) -> Result<(), EncodeError> {
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Some(free) = crate::audio::child::free_bytes(dir) else {
        return Ok(());
    };
    if free < needed {
        return Err(EncodeError::Failed {
            path: out.to_owned(),
            message: format!(
                "disk full: {} free in {}, about {} needed",
                mib(free),
                dir.display(),
                mib(needed)
            ),
        });
    }
    Ok(())
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

/// Paths starting with `-` would read as options.
fn path_arg(path: &Path) -> String {
    let s = path.to_string_lossy().into_owned();
    if s.starts_with('-') {
        format!("./{s}")
    } else {
        s
    }
}

/// Writes a temporary input file of ffmpeg; a partly written one (disk
/// full) is removed.
fn write_file(path: &Path, text: &str) -> Result<(), EncodeError> {
    std::fs::write(path, text).map_err(|source| {
        let _ = std::fs::remove_file(path);
        EncodeError::Io {
            path: path.to_owned(),
            source,
        }
    })
}

/// `key=value` with FFMETADATA escaping (`=;#\` and newlines).
fn push_tag(out: &mut String, key: &str, value: &str) {
    out.push_str(key);
    out.push('=');
    for c in value.chars() {
        match c {
            '=' | ';' | '#' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('\n');
}

/// Exact length of a WAV in milliseconds, from its header (RIFF or RF64).
fn wav_duration_ms(path: &Path) -> Result<u64, EncodeError> {
    let (rate, samples) = super::wav::read_header(path).map_err(|e| EncodeError::Input {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    let rate = u64::from(rate.max(1));
    Ok((samples * 1000 + rate / 2) / rate)
}

/// A FLAC picture block (front cover) for Ogg/Opus's
/// `METADATA_BLOCK_PICTURE` comment.
fn picture_block(cover: &Path) -> Result<Vec<u8>, EncodeError> {
    let data = std::fs::read(cover).map_err(|e| EncodeError::Input {
        path: cover.to_owned(),
        message: e.to_string(),
    })?;
    let mime: &[u8] = if data.starts_with(b"\x89PNG") {
        b"image/png"
    } else {
        b"image/jpeg"
    };
    let mut block = Vec::with_capacity(data.len() + 64);
    let push_u32 =
        |block: &mut Vec<u8>, v: usize| block.extend_from_slice(&(v as u32).to_be_bytes());
    push_u32(&mut block, 3); // front cover
    push_u32(&mut block, mime.len());
    block.extend_from_slice(mime);
    push_u32(&mut block, 0); // no description
    for _ in 0..4 {
        push_u32(&mut block, 0); // width, height, depth, colours: unknown
    }
    push_u32(&mut block, data.len());
    block.extend_from_slice(&data);
    Ok(block)
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let b = [
            group[0],
            *group.get(1).unwrap_or(&0),
            *group.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= group.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse() {
        assert_eq!("MP3".parse::<Format>(), Ok(Format::Mp3));
        assert_eq!(" m4b".parse::<Format>(), Ok(Format::M4b));
        assert_eq!(
            "flac".parse::<Format>().unwrap_err(),
            "unknown format 'flac' (known: wav, mp3, opus, m4b)"
        );
    }

    #[test]
    fn metadata_values_are_escaped() {
        let mut s = String::new();
        push_tag(&mut s, "title", "a=b;c#d\\e\nf");
        assert_eq!(s, "title=a\\=b\\;c\\#d\\\\e f\n");
    }

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foobar", "Zm9vYmFy"),
        ];
        for (input, expected) in cases {
            assert_eq!(base64(input.as_bytes()), expected);
        }
    }

    #[test]
    fn a_missing_program_names_the_package() {
        let err = Encoder::new("/nonexistent/ffmpeg").unwrap_err().to_string();
        assert!(err.contains("Debian package `ffmpeg`"), "{err}");
        assert!(err.contains("/nonexistent/ffmpeg"), "{err}");
    }
}
