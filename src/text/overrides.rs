//! Line overrides: paragraphs of a book read with other text or by another
//! speaker, kept in a file of their own beside the cast and lexicon, so the
//! source book is never touched. The studio writes it when a line is fixed;
//! `build --overrides` reads it, so both render the same script.
//!
//! ```toml
//! [[line]]
//! chapter = 1          # position in the book, as in the chapter files' names
//! paragraph = 2        # 1-based, within the chapter
//! was = "“前面就是镇子了吗？”韩小雨回头问。"   # the paragraph as the book has it
//! text = "“前面就是镇子吧？”韩小雨回头问。"    # said instead ("" leaves it out)
//! speaker = "陆大川"   # who speaks its quotes ("narrator": no one)
//! ```
//!
//! `was` ties an override to its paragraph: when the book changes under it
//! (a paragraph added above), the override follows its text within the
//! chapter, and one whose text is gone is reported and not applied.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Cast, Script, ScriptChapter, Segment, SegmentKind, SplitOptions};

/// The `speaker` that makes a whole paragraph narration.
pub const NARRATOR: &str = "narrator";

/// Why an overrides file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OverridesError {
    /// The reason is in the message, printed once by `{:#}` chains.
    #[error("{path}: cannot read overrides file: {reason}")]
    Read {
        path: PathBuf,
        reason: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// One `[[line]]` (0-based position in the file) is wrong.
    #[error("{path}: line[{index}].{key}: {message}")]
    Entry {
        path: PathBuf,
        index: usize,
        key: &'static str,
        message: String,
    },
}

/// One paragraph read otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineOverride {
    /// The chapter: 1-based position in the reading script.
    pub chapter: usize,
    /// The paragraph: 1-based within the chapter.
    pub paragraph: usize,
    /// The paragraph as the book has it (its segments' text, joined).
    pub was: String,
    /// Text said instead; empty leaves the paragraph out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A character of the cast (name or alias) who speaks the paragraph's
    /// quotes, or the whole paragraph when it has none; [`NARRATOR`] makes
    /// it all narration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<String>,
}

/// Every override of one book, in reading order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overrides {
    #[serde(default, rename = "line")]
    pub lines: Vec<LineOverride>,
}

/// An override that was not applied: its paragraph is not in the book.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    /// 0-based position of the `[[line]]` in the file.
    pub index: usize,
    pub chapter: usize,
    pub paragraph: usize,
}

/// The text of paragraph `paragraph` of `chapter`: its segments joined, or
/// `None` when it has none.
pub fn paragraph_text(chapter: &ScriptChapter, paragraph: usize) -> Option<String> {
    let text: String = chapter
        .segments
        .iter()
        .filter(|s| s.paragraph == paragraph)
        .map(|s| s.text.as_str())
        .collect();
    (!text.is_empty()).then_some(text)
}

impl Overrides {
    /// Reads and checks an overrides file.
    pub fn load(path: &Path) -> Result<Overrides, OverridesError> {
        let text = std::fs::read_to_string(path).map_err(|reason| OverridesError::Read {
            path: path.to_owned(),
            reason,
        })?;
        Overrides::parse(&text, path)
    }

    /// Parses and checks overrides TOML; `path` names the source in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Overrides, OverridesError> {
        let overrides: Overrides = toml::from_str(text).map_err(|e| OverridesError::Parse {
            path: path.to_owned(),
            message: super::cast::one_line(&e, text),
        })?;
        for (index, line) in overrides.lines.iter().enumerate() {
            let bad = |key, message: &str| OverridesError::Entry {
                path: path.to_owned(),
                index,
                key,
                message: message.to_owned(),
            };
            if line.chapter == 0 {
                return Err(bad("chapter", "chapters count from 1"));
            }
            if line.paragraph == 0 {
                return Err(bad("paragraph", "paragraphs count from 1"));
            }
            if line.was.is_empty() {
                return Err(bad("was", "must hold the paragraph as the book has it"));
            }
            if line.text.is_none() && line.speaker.is_none() {
                return Err(bad("text", "give text or speaker (or remove the entry)"));
            }
            if line.speaker.as_deref().is_some_and(|s| s.trim().is_empty()) {
                return Err(bad("speaker", "must not be empty"));
            }
            if overrides.lines[..index]
                .iter()
                .any(|o| (o.chapter, o.paragraph) == (line.chapter, line.paragraph))
            {
                return Err(bad(
                    "paragraph",
                    "this paragraph already has an override above",
                ));
            }
        }
        Ok(overrides)
    }

    /// The file's text, with a header saying what it is.
    pub fn to_toml(&self) -> String {
        let mut out = String::from(
            "# Lines read otherwise, written by `tingshu studio`; pass this file to\n\
             # `tingshu build --overrides`. text = \"\" leaves a paragraph out;\n\
             # speaker = \"narrator\" reads it as narration.\n",
        );
        for line in &self.lines {
            out.push('\n');
            let one = Overrides {
                lines: vec![line.clone()],
            };
            // A table of one entry serializes as `[[line]]` with its keys.
            out.push_str(&toml::to_string(&one).unwrap_or_default());
        }
        out
    }

    /// The override of a paragraph, if any.
    pub fn get(&self, chapter: usize, paragraph: usize) -> Option<&LineOverride> {
        self.lines
            .iter()
            .find(|o| (o.chapter, o.paragraph) == (chapter, paragraph))
    }

    /// Sets the override of `line`'s paragraph (replacing one there was);
    /// one with neither text nor speaker removes it. Kept in reading order.
    pub fn set(&mut self, line: LineOverride) {
        self.lines
            .retain(|o| (o.chapter, o.paragraph) != (line.chapter, line.paragraph));
        if line.text.is_some() || line.speaker.is_some() {
            self.lines.push(line);
        }
        self.lines.sort_by_key(|o| (o.chapter, o.paragraph));
    }

    /// Applies every override to `script`, whose speakers come from `cast`
    /// (the cast file, else the characters found in the book); `book` and
    /// `split` are what the book was split with, to split a new text the
    /// same way. Overrides whose paragraph is gone are returned, not
    /// applied; a speaker who is not in the cast, or a text with nothing
    /// to read, is an error naming the entry.
    pub fn apply(
        &self,
        script: &mut Script,
        cast: Option<&Cast>,
        split: SplitOptions,
        path: &Path,
    ) -> Result<Vec<Stale>, OverridesError> {
        let no_cast = Cast::default();
        let cast = cast.unwrap_or(&no_cast);
        let mut stale = Vec::new();
        for (index, line) in self.lines.iter().enumerate() {
            let bad = |key, message: String| OverridesError::Entry {
                path: path.to_owned(),
                index,
                key,
                message,
            };
            let segments =
                line_segments(line, cast, &script.book, split).map_err(|(key, m)| bad(key, m))?;
            let Some(chapter) = script.chapters.get_mut(line.chapter - 1) else {
                stale.push(Stale {
                    index,
                    chapter: line.chapter,
                    paragraph: line.paragraph,
                });
                continue;
            };
            let Some(paragraph) = find_paragraph(chapter, line) else {
                stale.push(Stale {
                    index,
                    chapter: line.chapter,
                    paragraph: line.paragraph,
                });
                continue;
            };
            let segments = match segments {
                Some(new) => new,
                None => chapter
                    .segments
                    .iter()
                    .filter(|s| s.paragraph == paragraph)
                    .cloned()
                    .collect(),
            };
            let segments = with_speaker(segments, line.speaker.as_deref(), cast)
                .map_err(|m| bad("speaker", m))?;
            let start = chapter
                .segments
                .iter()
                .position(|s| s.paragraph == paragraph)
                .unwrap_or(chapter.segments.len());
            chapter.segments.retain(|s| s.paragraph != paragraph);
            chapter.segments.splice(
                start..start,
                segments.into_iter().map(|mut s| {
                    s.paragraph = paragraph;
                    s
                }),
            );
        }
        Ok(stale)
    }
}

/// The paragraph of `chapter` that `line` is about: the one at its number
/// when its text is `was`, else the one paragraph of the chapter with that
/// text (paragraphs added or removed above it).
fn find_paragraph(chapter: &ScriptChapter, line: &LineOverride) -> Option<usize> {
    if paragraph_text(chapter, line.paragraph).as_deref() == Some(line.was.as_str()) {
        return Some(line.paragraph);
    }
    let mut numbers: Vec<usize> = chapter.segments.iter().map(|s| s.paragraph).collect();
    numbers.dedup();
    let mut found = numbers
        .into_iter()
        .filter(|&p| paragraph_text(chapter, p).as_deref() == Some(line.was.as_str()));
    match (found.next(), found.next()) {
        (Some(p), None) => Some(p),
        _ => None,
    }
}

/// The segments of `line`'s new text, split as the book was (quotes marked,
/// speakers attributed from `cast`); `None` when it keeps the book's text,
/// empty when it leaves the paragraph out.
fn line_segments(
    line: &LineOverride,
    cast: &Cast,
    book: &str,
    split: SplitOptions,
) -> Result<Option<Vec<Segment>>, (&'static str, String)> {
    let Some(text) = &line.text else {
        return Ok(None);
    };
    let text = text.trim();
    if text.is_empty() {
        return Ok(Some(Vec::new()));
    }
    if text.lines().count() > 1 {
        return Err(("text", "one paragraph: no line breaks".to_owned()));
    }
    let script = Script::from_text_with_options(text, book, Some(cast), split);
    let mut passage = ScriptChapter::new(1, "", Vec::new());
    passage.append_passage(script.chapters);
    if passage.segments.is_empty() {
        return Err((
            "text",
            format!("{text:?} has nothing to read (it reads as a heading or a skipped line)"),
        ));
    }
    Ok(Some(passage.segments))
}

/// `segments` spoken by `speaker`: its quotes, or all of it when it has no
/// quotes; all narration for [`NARRATOR`]; unchanged for `None`.
fn with_speaker(
    mut segments: Vec<Segment>,
    speaker: Option<&str>,
    cast: &Cast,
) -> Result<Vec<Segment>, String> {
    let Some(speaker) = speaker.map(str::trim) else {
        return Ok(segments);
    };
    if speaker == NARRATOR {
        for s in &mut segments {
            s.kind = SegmentKind::Narration;
            s.speaker = None;
            s.unnamed = None;
            s.gender_unsure = false;
        }
        return Ok(segments);
    }
    let Some(character) = cast
        .characters
        .iter()
        .find(|c| c.name == speaker || c.aliases.iter().any(|a| a == speaker))
    else {
        let known: Vec<&str> = cast.characters.iter().map(|c| c.name.as_str()).collect();
        return Err(if known.is_empty() {
            format!(
                "{speaker:?} is not in the cast (the book has no cast; \"{NARRATOR}\" reads it as narration)"
            )
        } else {
            format!(
                "{speaker:?} is not in the cast (known: {}, or \"{NARRATOR}\")",
                known.join(", ")
            )
        });
    };
    let has_quotes = segments.iter().any(|s| s.kind == SegmentKind::Dialogue);
    for s in &mut segments {
        if s.kind == SegmentKind::Dialogue || !has_quotes {
            s.kind = SegmentKind::Dialogue;
            s.speaker = Some(character.name.clone());
            s.unnamed = None;
            s.gender_unsure = false;
        }
    }
    Ok(segments)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOOK: &str = concat!(
        "第一章 山路\n",
        "　　天快黑了，韩小雨背着竹篓走下山坡。\n",
        "　　“前面就是镇子了吗？”韩小雨回头问。\n",
        "　　陆大川摇摇头：“还早呢。”\n",
        "第二章 客栈\n",
        "　　客栈的门半开着。\n",
    );

    const CAST: &str = "[[character]]\nname = \"韩小雨\"\naliases = [\"小雨\"]\ngender = \"female\"\n\n\
        [[character]]\nname = \"陆大川\"\ngender = \"male\"\n";

    fn cast() -> Cast {
        Cast::parse(CAST, Path::new("cast.toml")).unwrap()
    }

    fn script() -> Script {
        Script::from_text_with_cast(BOOK, "山路", Some(&cast()))
    }

    fn line(chapter: usize, paragraph: usize, was: &str) -> LineOverride {
        LineOverride {
            chapter,
            paragraph,
            was: was.to_owned(),
            text: None,
            speaker: None,
        }
    }

    fn apply(overrides: &Overrides, script: &mut Script) -> Vec<Stale> {
        overrides
            .apply(
                script,
                Some(&cast()),
                SplitOptions::default(),
                Path::new("o.toml"),
            )
            .unwrap()
    }

    fn summary(chapter: &ScriptChapter) -> Vec<(usize, SegmentKind, Option<String>, String)> {
        chapter
            .segments
            .iter()
            .map(|s| (s.paragraph, s.kind, s.speaker.clone(), s.text.clone()))
            .collect()
    }

    #[test]
    fn a_new_text_is_split_and_attributed_in_place() {
        let mut script = script();
        let before = script.chapters[0].clone();
        let was = paragraph_text(&before, 2).unwrap();
        let mut overrides = Overrides::default();
        overrides.set(LineOverride {
            text: Some("“镇子到了吧？”小雨问。".into()),
            ..line(1, 2, &was)
        });
        assert!(apply(&overrides, &mut script).is_empty());
        let after = summary(&script.chapters[0]);
        assert_eq!(after[0], summary(&before)[0]);
        assert_eq!(
            after[1],
            (
                2,
                SegmentKind::Dialogue,
                Some("韩小雨".into()),
                "“镇子到了吧？”".into()
            )
        );
        assert_eq!(after[2].3, "小雨问。");
        // The paragraph after is untouched.
        assert_eq!(after.last(), summary(&before).last());
        assert_eq!(script.chapters[1], self::script().chapters[1]);
    }

    #[test]
    fn speakers_narration_and_removal() {
        let mut script = script();
        let p3 = paragraph_text(&script.chapters[0], 3).unwrap();
        let p1 = paragraph_text(&script.chapters[0], 1).unwrap();
        let p2 = paragraph_text(&script.chapters[0], 2).unwrap();
        let mut overrides = Overrides::default();
        // Quotes given to another speaker; a narration paragraph spoken by
        // a character (by alias); a paragraph left out.
        overrides.set(LineOverride {
            speaker: Some("小雨".into()),
            ..line(1, 3, &p3)
        });
        overrides.set(LineOverride {
            speaker: Some("陆大川".into()),
            ..line(1, 1, &p1)
        });
        overrides.set(LineOverride {
            text: Some(String::new()),
            ..line(1, 2, &p2)
        });
        assert!(apply(&overrides, &mut script).is_empty());
        let after = summary(&script.chapters[0]);
        assert_eq!(after[0].1, SegmentKind::Dialogue);
        assert_eq!(after[0].2.as_deref(), Some("陆大川"));
        assert!(after.iter().all(|s| s.0 != 2));
        let p3: Vec<_> = after.iter().filter(|s| s.0 == 3).collect();
        assert_eq!(p3[0].1, SegmentKind::Narration);
        assert_eq!(p3[1].2.as_deref(), Some("韩小雨"));

        let mut script = self::script();
        let narrated = Overrides {
            lines: vec![LineOverride {
                speaker: Some(NARRATOR.into()),
                ..line(1, 3, &paragraph_text(&script.chapters[0], 3).unwrap())
            }],
        };
        apply(&narrated, &mut script);
        assert!(
            script.chapters[0]
                .segments
                .iter()
                .filter(|s| s.paragraph == 3)
                .all(|s| s.kind == SegmentKind::Narration && s.speaker.is_none())
        );
    }

    #[test]
    fn an_override_follows_its_text_or_is_reported_stale() {
        let p2 = paragraph_text(&script().chapters[0], 2).unwrap();
        let edit = Overrides {
            lines: vec![LineOverride {
                speaker: Some(NARRATOR.into()),
                ..line(1, 2, &p2)
            }],
        };
        // A paragraph added above: the override follows its text.
        let moved = BOOK.replace("第一章 山路\n", "第一章 山路\n　　山里起了雾。\n");
        let mut script = Script::from_text_with_cast(&moved, "山路", Some(&cast()));
        assert!(apply(&edit, &mut script).is_empty());
        assert!(
            script.chapters[0]
                .segments
                .iter()
                .filter(|s| s.paragraph == 3)
                .all(|s| s.kind == SegmentKind::Narration)
        );
        // Its text changed in the book: reported, nothing applied.
        let changed = BOOK.replace("镇子了吗", "村子了吗");
        let mut script = Script::from_text_with_cast(&changed, "山路", Some(&cast()));
        let untouched = script.clone();
        let stale = apply(&edit, &mut script);
        assert_eq!(
            stale,
            vec![Stale {
                index: 0,
                chapter: 1,
                paragraph: 2
            }]
        );
        assert_eq!(script, untouched);
    }

    #[test]
    fn bad_files_and_entries_name_the_key() {
        let path = Path::new("book.overrides.toml");
        let err = |text: &str| Overrides::parse(text, path).unwrap_err().to_string();
        assert_eq!(
            err("[[line]]\nchapter = 0\nparagraph = 1\nwas = \"x\"\ntext = \"y\"\n"),
            "book.overrides.toml: line[0].chapter: chapters count from 1"
        );
        assert_eq!(
            err("[[line]]\nchapter = 1\nparagraph = 1\nwas = \"x\"\n"),
            "book.overrides.toml: line[0].text: give text or speaker (or remove the entry)"
        );
        assert!(
            err("[[line]]\nchapter = 1\nparagraph = 1\nwas = \"x\"\ncolour = 1\n")
                .starts_with("book.overrides.toml: line 5, key colour: unknown field `colour`")
        );
        let twice = "[[line]]\nchapter = 1\nparagraph = 1\nwas = \"x\"\ntext = \"y\"\n";
        assert_eq!(
            err(&format!("{twice}{twice}")),
            "book.overrides.toml: line[1].paragraph: this paragraph already has an override above"
        );
        // Entries that parse but cannot be applied to the book.
        let refused = |line: LineOverride| {
            Overrides { lines: vec![line] }
                .apply(&mut script(), Some(&cast()), SplitOptions::default(), path)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            refused(LineOverride {
                speaker: Some("王五".into()),
                ..line(1, 1, "天快黑了，韩小雨背着竹篓走下山坡。")
            }),
            "book.overrides.toml: line[0].speaker: \"王五\" is not in the cast (known: 韩小雨, 陆大川, or \"narrator\")"
        );
        let e = refused(LineOverride {
            text: Some("第三章 夜路".into()),
            ..line(1, 1, "x")
        });
        assert!(e.starts_with("book.overrides.toml: line[0].text: "), "{e}");
    }

    #[test]
    fn the_file_reads_back_as_written() {
        let mut overrides = Overrides::default();
        overrides.set(LineOverride {
            text: Some("“走吧。”他说。".into()),
            speaker: Some("陆大川".into()),
            ..line(2, 1, "客栈的门半开着。")
        });
        overrides.set(LineOverride {
            speaker: Some(NARRATOR.into()),
            ..line(1, 3, "陆大川摇摇头：“还早呢。”")
        });
        let text = overrides.to_toml();
        let back = Overrides::parse(&text, Path::new("o.toml")).unwrap();
        assert_eq!(back, overrides);
        assert_eq!(back.lines[0].chapter, 1, "kept in reading order");
        // Neither text nor speaker removes the entry.
        overrides.set(line(1, 3, "陆大川摇摇头：“还早呢。”"));
        assert_eq!(overrides.lines.len(), 1);
    }
}
