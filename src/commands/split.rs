//! `tingshu split BOOK`: print the reading script (chapters, narration and
//! dialogue segments, speakers) as text or JSON lines, or suggest a cast file.

use std::io::Write;

use anyhow::Context;
use serde::Serialize;

use super::EXIT_OK;
use crate::book::{read_book_with_options, read_text};
use crate::cli::{SplitArgs, SplitFormat};
use crate::text::{Cast, Gender, Script, SegmentKind, SplitOptions};

/// One line of `--format jsonl`.
#[derive(Debug, Serialize)]
struct JsonSegment<'a> {
    chapter: usize,
    title: &'a str,
    paragraph: usize,
    kind: SegmentKind,
    speaker: Option<&'a str>,
    /// The gender of a speaker the book does not name.
    #[serde(skip_serializing_if = "Option::is_none")]
    unnamed: Option<Gender>,
    /// A guess among characters of both genders.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    gender_unsure: bool,
    text: &'a str,
}

/// Runs `split`. Bad input (unreadable book or cast) is an `Err` (exit 2).
pub fn run(args: &SplitArgs) -> anyhow::Result<u8> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = if args.suggest_cast {
        let (stem, decoded) = read_text(&args.book)?;
        let text = suggest_cast(&decoded.text, &stem);
        out.write_all(text.as_bytes()).and_then(|()| out.flush())
    } else {
        let cast = args.cast.as_deref().map(Cast::load).transpose()?;
        let options = SplitOptions {
            keep_notes: args.keep_notes,
        };
        let book = read_book_with_options(&args.book, cast.as_ref(), options)?;
        write_script(&mut out, &book.script, args.format).and_then(|()| out.flush())
    };
    match written {
        // A closed pipe (`| head`) is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(EXIT_OK),
        other => other
            .context("cannot write to standard output")
            .map(|()| EXIT_OK),
    }
}

/// Writes the script in `format`.
pub fn write_script(
    out: &mut impl Write,
    script: &Script,
    format: SplitFormat,
) -> std::io::Result<()> {
    match format {
        SplitFormat::Jsonl => write_jsonl(out, script),
        SplitFormat::Text => write_text(out, script),
    }
}

/// A chapter's number as `build`, `preview --chapter`, the manifest and
/// the file names give it: its 1-based position in the reading script.
fn position(index: usize) -> usize {
    index + 1
}

fn write_jsonl(out: &mut impl Write, script: &Script) -> std::io::Result<()> {
    for (i, chapter) in script.chapters.iter().enumerate() {
        for s in &chapter.segments {
            let line = JsonSegment {
                chapter: position(i),
                title: &chapter.title,
                paragraph: s.paragraph,
                kind: s.kind,
                speaker: s.speaker.as_deref(),
                unnamed: s.unnamed,
                gender_unsure: s.gender_unsure,
                text: &s.text,
            };
            serde_json::to_writer(&mut *out, &line)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

fn write_text(out: &mut impl Write, script: &Script) -> std::io::Result<()> {
    let mut volume: Option<&str> = None;
    for (i, chapter) in script.chapters.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        if chapter.volume.as_deref() != volume {
            volume = chapter.volume.as_deref();
            if let Some(v) = volume {
                writeln!(out, "## {v}")?;
            }
        }
        writeln!(out, "# {} {}", position(i), chapter.title)?;
        let mut skipped = chapter.skipped.iter().peekable();
        for s in &chapter.segments {
            while let Some(k) = skipped.next_if(|k| k.paragraph < s.paragraph) {
                writeln!(out, "{:>4} skipped   -  {}", k.paragraph, k.text)?;
            }
            let kind = match s.kind {
                SegmentKind::Narration => "narration",
                SegmentKind::Dialogue => "dialogue ",
            };
            let speaker = s.speaker.as_deref().unwrap_or("-");
            writeln!(out, "{:>4} {kind} {speaker}  {}", s.paragraph, s.text)?;
        }
        for k in skipped {
            writeln!(out, "{:>4} skipped   -  {}", k.paragraph, k.text)?;
        }
    }
    if !script.skipped.is_empty() {
        writeln!(out)?;
        for s in &script.skipped {
            writeln!(out, "# skipped ({}): {}", s.reason.as_str(), s.title)?;
        }
    }
    Ok(())
}

/// A cast file of the characters found in the book, with the number of
/// dialogue lines attributed to each and the evidence for its gender.
pub fn suggest_cast(text: &str, book: &str) -> String {
    let found = crate::text::discover_cast(text, book);
    let notes: Vec<String> = found.iter().map(|d| d.note()).collect();
    let cast = Cast {
        characters: found.into_iter().map(|d| d.character).collect(),
    };
    let script = Script::from_text_with_cast(text, book, Some(&cast));
    let mut lines = vec![0usize; cast.characters.len()];
    for s in script.chapters.iter().flat_map(|c| &c.segments) {
        if let Some(i) = s
            .speaker
            .as_deref()
            .and_then(|name| cast.characters.iter().position(|c| c.name == name))
        {
            lines[i] += 1;
        }
    }
    let notes: Vec<Vec<String>> = lines
        .iter()
        .zip(notes)
        .map(|(n, note)| vec![format!("{n} lines"), note])
        .collect();
    cast.to_toml_with_notes(&notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_has_the_documented_fields_in_order() {
        let script = Script::from_text("作者的话\n第一章 起\n毛仲說：「走。」\n", "书");
        let mut out = Vec::new();
        write_script(&mut out, &script, SplitFormat::Jsonl).unwrap();
        let text = String::from_utf8(out).unwrap();
        let first = text.lines().nth(1).unwrap();
        assert!(
            // Chapters count from 1, front matter included: 第一章 is the second.
            first.starts_with(r#"{"chapter":2,"title":"第一章 起","paragraph":1,"kind":"narration","speaker":null,"text":"#),
            "{first}"
        );
    }

    #[test]
    fn suggested_cast_lists_speakers_with_counts() {
        let text = "毛仲說：「走。」\n「好。」毛仲說。\n「快！」毛仲喊道。\n";
        let toml = suggest_cast(text, "书");
        assert!(toml.contains("name = \"毛仲\""), "{toml}");
        assert!(toml.contains("# 3 lines"), "{toml}");
        assert!(toml.contains("# gender "), "{toml}");
        assert!(toml.contains("confidence"), "{toml}");
        Cast::parse(&toml, std::path::Path::new("suggested.toml")).unwrap();
    }
}
