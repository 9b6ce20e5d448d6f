//! Stage 1 — text: decode a book, split it into chapters, mark each span as
//! narration or dialogue and find who speaks. The result is the reading script.

pub mod advert;
pub mod cast;
pub mod chapter;
pub mod chunk;
pub mod decode;
pub mod overrides;
pub mod quote;
pub mod reflow;
pub mod speaker;
pub mod wrap;

use serde::{Deserialize, Serialize};

pub use cast::{Cast, CastError, Character, Gender};
pub use chapter::{Chapter, ChapterSkip, SplitOptions};
pub use decode::{DecodeError, Decoded, decode, is_han};
pub use overrides::{Overrides, OverridesError};
pub use quote::SegmentKind;

use quote::SpanRange;
use speaker::{Attributor, ParagraphView};

/// One unit of the reading script: a quoted span or one maximal run of
/// narration within a paragraph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    pub kind: SegmentKind,
    /// Canonical name of the speaker of a dialogue segment, when known.
    pub speaker: Option<String>,
    /// The gender of a speaker the book does not name (`她父亲说：`), when
    /// no `speaker` is given: that gender's voice reads the quote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unnamed: Option<Gender>,
    /// The speaker is a guess among characters of both genders: a voice of
    /// neither gender (`[casting] unknown`) reads the quote.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gender_unsure: bool,
    /// 1-based index of the paragraph within its chapter (heading excluded).
    pub paragraph: usize,
    /// Original text, original script.
    pub text: String,
}

/// A line of the book that is not read (site advert, URL, plea for votes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedLine {
    /// 1-based index of the line among the chapter's paragraphs.
    pub paragraph: usize,
    pub text: String,
}

/// A chapter of the reading script.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptChapter {
    /// 0 for front matter, then 1, 2, … in reading order.
    pub number: usize,
    pub title: String,
    /// The volume (第一卷 …) the chapter belongs to.
    pub volume: Option<String>,
    pub segments: Vec<Segment>,
    /// Lines dropped from speech.
    pub skipped: Vec<SkippedLine>,
}

/// The whole reading script of a book.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Script {
    pub book: String,
    pub chapters: Vec<ScriptChapter>,
    /// Chapters left out (empty ones, author's notes, a title page), in book order.
    pub skipped: Vec<SkippedChapter>,
    /// The characters found in the book (with their genders and what the
    /// book says of them) when it was split without a cast file: what casts
    /// its voices then.
    #[serde(skip)]
    pub discovered: Option<Vec<speaker::Discovered>>,
}

/// A chapter of the book that is not in the reading script.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedChapter {
    pub title: String,
    pub reason: ChapterSkip,
}

/// A chapter with its paragraphs scanned into spans.
struct Scanned {
    chapter: Chapter,
    /// Spans of all paragraphs, back to back; `bounds[i]..bounds[i + 1]` are paragraph i's.
    spans: Vec<SpanRange>,
    bounds: Vec<usize>,
}

impl Scanned {
    /// Scans `chapter`; `unmarked`: the book writes speech without quote
    /// marks (see [`quote::speech_without_marks`]).
    fn new(chapter: Chapter, unmarked: bool) -> Scanned {
        let mut spans = Vec::new();
        let mut bounds = Vec::with_capacity(chapter.paragraphs.len() + 1);
        bounds.push(0);
        let mut skipped = chapter.skipped.iter().peekable();
        // A speech without marks going on from the paragraph before.
        let mut speaking = false;
        for (i, p) in chapter.paragraphs.iter().enumerate() {
            if skipped.peek() == Some(&&i) {
                skipped.next();
                speaking = false;
            } else if unmarked && !p.contains(['「', '“', '『']) {
                // The few paragraphs of such a book that do mark a quote
                // are read by their marks. A speech goes on only across a
                // cut the splitter made, not into a paragraph of the book's.
                let cut = chapter.cut.binary_search(&i).is_ok();
                speaking = quote::scan_unmarked(p, &mut spans, speaking && cut);
            } else {
                quote::scan_paragraph(p, &mut spans);
                speaking = false;
            }
            bounds.push(spans.len());
        }
        Scanned {
            chapter,
            spans,
            bounds,
        }
    }

    fn views(&self) -> Vec<ParagraphView<'_>> {
        let mut skipped = self.chapter.skipped.iter().peekable();
        self.chapter
            .paragraphs
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let is_skipped = skipped.peek() == Some(&&i);
                if is_skipped {
                    skipped.next();
                }
                ParagraphView {
                    text: p,
                    spans: &self.spans[self.bounds[i]..self.bounds[i + 1]],
                    skipped: is_skipped,
                }
            })
            .collect()
    }
}

/// Splits and scans the chapters of `text`.
fn scan(text: &str, book: &str, options: SplitOptions) -> Vec<Scanned> {
    scan_chapters(chapter::split_chapters_with(text, book, options))
}

/// Scans split chapters, reading speech without quote marks where the
/// whole book writes it so.
fn scan_chapters(chapters: Vec<Chapter>) -> Vec<Scanned> {
    let unmarked = quote::speech_without_marks(
        chapters
            .iter()
            .flat_map(|c| c.paragraphs.iter().map(String::as_str)),
    );
    chapters
        .into_iter()
        .map(|c| Scanned::new(c, unmarked))
        .collect()
}

/// Finds the characters of a book without a cast file (see [`speaker::discover`]).
pub fn discover_cast(text: &str, book: &str) -> Vec<speaker::Discovered> {
    let scanned = scan(text, book, SplitOptions::default());
    let views: Vec<Vec<ParagraphView<'_>>> = scanned.iter().map(Scanned::views).collect();
    discover_in(&views)
}

/// The cast of characters found in a book.
fn discovered_cast(found: &[speaker::Discovered]) -> Cast {
    Cast {
        characters: found.iter().map(|d| d.character.clone()).collect(),
    }
}

fn discover_in(views: &[Vec<ParagraphView<'_>>]) -> Vec<speaker::Discovered> {
    let first_person = speaker::first_person_tags(views);
    let mut found = speaker::discover_told(views, first_person);
    speaker::guess_genders(&mut found, views);
    speaker::add_narrator(&mut found, views, first_person);
    found
}

impl Script {
    /// Builds the reading script of decoded text; `book` is the title used
    /// for a book without headings (normally the file stem). Speakers come
    /// from the characters discovered in the book.
    pub fn from_text(text: &str, book: &str) -> Script {
        Script::from_text_with_cast(text, book, None)
    }

    /// Like [`Script::from_text`], with the speakers' names taken from `cast`
    /// when given.
    pub fn from_text_with_cast(text: &str, book: &str, cast: Option<&Cast>) -> Script {
        Script::from_text_with_options(text, book, cast, SplitOptions::default())
    }

    /// Like [`Script::from_text_with_cast`], split with `options`.
    pub fn from_text_with_options(
        text: &str,
        book: &str,
        cast: Option<&Cast>,
        options: SplitOptions,
    ) -> Script {
        Script::from_scanned(scan(text, book, options), book, cast)
    }

    fn from_scanned(scanned: Vec<Scanned>, book: &str, cast: Option<&Cast>) -> Script {
        let views: Vec<Vec<ParagraphView<'_>>> = scanned.iter().map(Scanned::views).collect();
        let discovered = cast.is_none().then(|| discover_in(&views));
        let found = discovered.as_deref().map(discovered_cast);
        let style = speaker::TagStyle::of(views.iter().flatten().copied());
        let attributor = Attributor::new(cast.or(found.as_ref()).unwrap_or(&Cast::default()))
            .with_style(style)
            .with_kin(&views);
        let mut chapters = Vec::new();
        let mut skipped = Vec::new();
        for (k, s) in scanned.iter().enumerate() {
            let reason = s.chapter.skip.or_else(|| {
                (k == 0 && is_title_page(&s.chapter, book)).then_some(ChapterSkip::TitlePage)
            });
            let chapter = match reason {
                Some(_) => None,
                None => Some(script_chapter(s, &attributor)),
            };
            match chapter {
                Some(ch) if !ch.segments.is_empty() => chapters.push(ch),
                _ => {
                    let reason = reason.unwrap_or(ChapterSkip::Empty);
                    if reason == ChapterSkip::Empty {
                        tracing::warn!(chapter = %s.chapter.title, "chapter has nothing to read; skipped");
                    }
                    skipped.push(SkippedChapter {
                        title: s.chapter.title.clone(),
                        reason,
                    });
                }
            }
        }
        // One numbering everywhere: front matter 0, then 1, 2, … without gaps.
        let mut next = 1;
        for ch in &mut chapters {
            if ch.number != 0 {
                ch.number = next;
                next += 1;
            }
        }
        Script {
            book: book.to_owned(),
            chapters,
            skipped,
            discovered,
        }
    }

    /// The cast of the characters found in the book, when it was split
    /// without a cast file.
    pub fn discovered_cast(&self) -> Option<Cast> {
        self.discovered.as_deref().map(discovered_cast)
    }

    /// Like [`Script::from_text_with_cast`], for chapters split elsewhere
    /// (an EPUB's spine and table of contents).
    pub fn from_chapters_with_cast(
        chapters: Vec<Chapter>,
        book: &str,
        cast: Option<&Cast>,
    ) -> Script {
        Script::from_scanned(scan_chapters(chapters), book, cast)
    }

    /// Number of Han characters in the whole script.
    pub fn han_count(&self) -> usize {
        self.chapters.iter().map(ScriptChapter::han_count).sum()
    }
}

impl ScriptChapter {
    /// A chapter outside any volume, with no skipped lines.
    pub fn new(number: usize, title: impl Into<String>, segments: Vec<Segment>) -> ScriptChapter {
        ScriptChapter {
            number,
            title: title.into(),
            segments,
            ..ScriptChapter::default()
        }
    }

    /// Appends the chapters of `more` as one passage: their paragraphs are
    /// numbered on after this chapter's last (a pasted text with headings
    /// previews and speaks as one passage).
    pub fn append_passage(&mut self, more: impl IntoIterator<Item = ScriptChapter>) {
        for chapter in more {
            let offset = self.segments.last().map_or(0, |s| s.paragraph);
            self.segments
                .extend(chapter.segments.into_iter().map(|mut s| {
                    s.paragraph += offset;
                    s
                }));
        }
    }

    pub fn han_count(&self) -> usize {
        self.segments
            .iter()
            .map(|s| s.text.chars().filter(|c| is_han(*c)).count())
            .sum()
    }
}

/// Front matter that is only the book's title line (《西游记》吴承恩), from a
/// TXT or an EPUB alike.
fn is_title_page(chapter: &Chapter, book: &str) -> bool {
    let read: Vec<&String> = chapter
        .paragraphs
        .iter()
        .enumerate()
        .filter(|(k, _)| !chapter.skipped.contains(k))
        .map(|(_, p)| p)
        .collect();
    chapter.number == 0
        && read.len() == 1
        && read[0].chars().count() <= 40
        && (read[0].contains('《') || (!book.is_empty() && read[0].contains(book)))
        && !read[0].contains(['。', '！', '？', '“', '「'])
}

fn script_chapter(scanned: &Scanned, attributor: &Attributor) -> ScriptChapter {
    let views = scanned.views();
    let speakers = attributor.attribute(&views);
    let mut segments = Vec::new();
    for (i, (view, who)) in views.iter().zip(&speakers).enumerate() {
        for (span, who) in view.spans.iter().zip(who) {
            let text = span.text(view.text);
            if !quote::is_speakable(text) {
                continue;
            }
            segments.push(Segment {
                kind: span.kind,
                speaker: who.who.and_then(|w| attributor.name(w)).map(str::to_owned),
                unnamed: who.who.and_then(speaker::unnamed_gender),
                gender_unsure: who.gender_unsure,
                paragraph: i + 1,
                text: text.to_owned(),
            });
        }
    }
    let chapter = &scanned.chapter;
    ScriptChapter {
        number: chapter.number,
        title: chapter.title.clone(),
        volume: chapter.volume.clone(),
        segments,
        skipped: chapter
            .skipped
            .iter()
            .map(|&i| SkippedLine {
                paragraph: i + 1,
                text: chapter.paragraphs[i].clone(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_has_paragraph_numbers_and_kinds() {
        let script = Script::from_text("第一章 开始\n他说：“走。”\n……\n她笑了。\n", "书");
        let ch = &script.chapters[0];
        assert_eq!(ch.title, "第一章 开始");
        let got: Vec<_> = ch.segments.iter().map(|s| (s.paragraph, s.kind)).collect();
        assert_eq!(
            got,
            [
                (1, SegmentKind::Narration),
                (1, SegmentKind::Dialogue),
                (3, SegmentKind::Narration)
            ]
        );
        assert_eq!(script.han_count(), 6);
    }

    #[test]
    fn skipped_lines_keep_their_place() {
        let script = Script::from_text("第一章\n他来了。\nwww.example.com\n她走了。\n", "书");
        let ch = &script.chapters[0];
        assert_eq!(
            ch.skipped,
            [SkippedLine {
                paragraph: 2,
                text: "www.example.com".into()
            }]
        );
        assert_eq!(ch.segments[1].paragraph, 3);
    }

    #[test]
    fn cast_names_speakers() {
        let cast = Cast {
            characters: vec![Character {
                name: "孙少安".into(),
                aliases: vec!["少安".into()],
                gender: Gender::Male,
                voice: None,
            }],
        };
        let script = Script::from_text_with_cast("少安说：“走。”\n", "书", Some(&cast));
        assert_eq!(
            script.chapters[0].segments[1].speaker.as_deref(),
            Some("孙少安")
        );
    }

    #[test]
    fn a_book_without_quote_marks_has_speakers_all_the_same() {
        // Made-up lines in the manner of old e-texts: 道： and no marks.
        let lines = [
            "周福生道：今日風大，不如早些回去。",
            "林秀娘笑道：你怕什麼？",
            "周福生道：我不怕，只是天要下雨了。",
            "兩人說罷，各自走了。",
        ];
        let text = format!(
            "第一回 風雨\n{}",
            lines.join("\n").repeat(8).replace("。兩", "。\n兩")
        );
        let script = Script::from_text(&text, "书");
        let spoken: Vec<(&str, Option<&str>)> = script.chapters[0]
            .segments
            .iter()
            .filter(|s| s.kind == SegmentKind::Dialogue)
            .take(3)
            .map(|s| (s.text.as_str(), s.speaker.as_deref()))
            .collect();
        assert_eq!(
            spoken,
            [
                ("今日風大，不如早些回去。", Some("周福生")),
                ("你怕什麼？", Some("林秀娘")),
                ("我不怕，只是天要下雨了。", Some("周福生")),
            ]
        );
        assert!(
            script.chapters[0]
                .segments
                .iter()
                .any(|s| s.kind == SegmentKind::Narration && s.text.contains("各自走了"))
        );
    }

    #[test]
    fn unmarked_speech_goes_on_across_the_cuts_of_a_book_on_one_line() {
        let scene = "周福生道：天晚了。你先回去，明日再來！林秀娘點了點頭，轉身便走。\
                     林秀娘道：知道了。";
        let spoken = |text: &str| -> Vec<(String, Option<String>)> {
            Script::from_text(text, "书").chapters[0]
                .segments
                .iter()
                .filter(|s| s.kind == SegmentKind::Dialogue)
                .take(2)
                .map(|s| (s.text.clone(), s.speaker.clone()))
                .collect()
        };
        // On one line (cut into paragraphs at sentence ends), the sentence
        // that reads as spoken goes on with 周福生's speech …
        let one_line = scene.repeat(60);
        let got = spoken(&one_line);
        assert!(
            got[0].0.contains("你先回去")
                || got.get(1).is_some_and(
                    |(t, who)| t.contains("你先回去") && who.as_deref() == Some("周福生")
                ),
            "{got:?}"
        );
        assert!(got.iter().all(|(t, _)| !t.contains("點了點頭")), "{got:?}");
        // … but not into a paragraph of the book's own.
        let lines = scene
            .replace("。你", "。\n你")
            .repeat(60)
            .replace("知道了。", "知道了。\n");
        let got = spoken(&lines);
        assert_eq!(got[0].0, "天晚了。", "{got:?}");
        assert!(!got[1].0.contains("你先回去"), "{got:?}");
    }

    /// The names of the characters found in a chapter of `lines` said
    /// `times` over.
    fn discovered_names(lines: &[&str], times: usize) -> Vec<String> {
        let text = format!("第一回 風雨\n{}", lines.join("\n").repeat(times));
        discover_cast(&text, "书")
            .into_iter()
            .map(|d| d.character.name)
            .collect()
    }

    #[test]
    fn a_book_without_quote_marks_finds_the_people_its_narration_names() {
        // 韓道國 is never in a tag, but opens the narration's clauses.
        let lines = [
            "周福生道：今日風大，不如早些回去。",
            "韓道國點了點頭，轉身出門去了。",
            "吳月娘道：也好。",
            "韓道國騎了馬，一直往城外走。",
        ];
        let names = discovered_names(&lines, 12);
        assert!(names.contains(&"韓道國".to_owned()), "{names:?}");
    }

    #[test]
    fn a_book_without_quote_marks_has_no_narrator_in_the_speech_it_left_to_the_narration() {
        // The speech after 天色也暗了。 is left to the narration, 我說 and
        // all: not a book told in the first person.
        let lines = [
            "周福生道：今日風大。天色也暗了。我說要走，你偏不走。",
            "林秀娘笑道：你怕什麼？",
            "周福生道：不怕。林家的人都在。我說過的話，幾時不算？",
        ];
        let names = discovered_names(&lines, 8);
        assert!(names.contains(&"周福生".to_owned()), "{names:?}");
        assert!(!names.contains(&"我".to_owned()), "{names:?}");
    }
}

#[cfg(test)]
mod props {
    use proptest::prelude::*;

    use super::*;

    /// Characters that steer the splitter into its corners: every quote
    /// mark, title marks, heading words, names, speech verbs, pronouns.
    const ALPHABET: &[&str] = &[
        "「",
        "」",
        "『",
        "』",
        "“",
        "”",
        "‘",
        "’",
        "＂",
        "\"",
        "《",
        "》",
        "：",
        "，",
        "。",
        "！",
        "？",
        "…",
        "—",
        "\n",
        "\n",
        " ",
        "　",
        "第",
        "一",
        "百",
        "章",
        "回",
        "卷",
        "序",
        "番外",
        "Chapter 1",
        "001 ",
        "毛仲",
        "苏晚",
        "说",
        "道",
        "问",
        "他",
        "她",
        "们",
        "众人",
        "的",
        "www.",
        "求月票",
        "a",
        "1",
        "\u{feff}",
        "\r",
    ];

    fn is_subsequence(part: &str, whole: &str) -> bool {
        let mut rest = whole.chars();
        part.chars().all(|c| rest.any(|w| w == c))
    }

    fn check(text: &str) {
        let script = Script::from_text(text, "书");
        for ch in &script.chapters {
            for s in &ch.segments {
                assert!(s.paragraph >= 1);
                assert!(!s.text.is_empty());
                // Original text, or original text with a URL cut out.
                assert!(
                    text.contains(s.text.as_str()) || is_subsequence(&s.text, text),
                    "{:?}",
                    s.text
                );
                if s.kind == SegmentKind::Narration {
                    assert!(s.speaker.is_none());
                }
            }
        }
        let cast = Cast {
            characters: discover_cast(text, "书")
                .into_iter()
                .map(|d| d.character)
                .collect(),
        };
        let _ = Script::from_text_with_cast(text, "书", Some(&cast));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn never_panics_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            if let Ok(decoded) = decode(&bytes) {
                check(&decoded.text);
            }
            check(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn never_panics_on_novel_like_text(
            parts in proptest::collection::vec(proptest::sample::select(ALPHABET), 0..300)
        ) {
            check(&parts.concat());
        }
    }
}
