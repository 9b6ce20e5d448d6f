//! Hard-wrapped text: e-texts made for a fixed-width screen break every
//! paragraph into lines of one width (37 or 38 characters in the common
//! editions of 水滸傳 and 三國演義), even inside a word or a quote
//! (`…讚道：「一` / `旦雲開復見天！」`), and mark paragraphs by a blank line
//! or an indent. Read line by line, such a book is a paragraph per line: a
//! pause in the middle of a word, quotes cut in two.
//!
//! A text is taken as wrapped when many of its lines are about one length
//! (at least [`MIN_WIDTH`] characters), hardly a line is longer, and most
//! of those lines stop in the middle of a sentence. Its lines of
//! that length are then joined with the line after them, unless that line is
//! blank, more indented than the text's continuation lines, or a heading
//! (nor is a heading joined with what follows it).

use super::chapter::{heading, trim_line};

/// The narrowest wrap width taken (characters): verse and lists of short
/// lines are not wrapped prose.
const MIN_WIDTH: usize = 20;

/// The widest wrap width looked for (characters).
const MAX_WIDTH: usize = 200;

/// A line this close to the width (characters, either way) is a wrapped
/// one: wrappers keep a closing mark on its line or push a word on.
const SLACK: usize = 3;

/// Lines read to find the width (non-blank ones, from the start).
const SAMPLE_LINES: usize = 2000;

/// Fewer non-blank lines than this say nothing about a width.
const MIN_LINES: usize = 20;

/// How the lines of a wrapped text look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wrap {
    /// The width most lines have, in characters (indent included).
    pub width: usize,
    /// The indent of a line that goes on a paragraph, in characters.
    pub indent: usize,
    /// What the width counts.
    pub measure: Measure,
}

/// How a wrapper counted a line's width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// Characters (the editions of the old novels on PyPI).
    Characters,
    /// Columns of a fixed-width screen, a Han character two (the e-texts of
    /// the GB era, cut at 70–76 bytes).
    Columns,
}

impl Measure {
    /// The length of `line` in this measure.
    fn of(self, line: &str) -> usize {
        let chars = line.bytes().filter(|b| (b & 0xC0) != 0x80).count();
        match self {
            Measure::Characters => chars,
            Measure::Columns => 2 * chars - line.bytes().filter(u8::is_ascii).count(),
        }
    }

    /// The narrowest width taken in this measure.
    fn min_width(self) -> usize {
        match self {
            Measure::Characters => MIN_WIDTH,
            Measure::Columns => 2 * MIN_WIDTH,
        }
    }
}

impl Wrap {
    /// Is a line of this length one the wrapper cut?
    fn is_full(&self, length: usize) -> bool {
        length + SLACK >= self.width && length <= self.width + SLACK
    }
}

/// The index of the largest count (the first of equals).
fn commonest(counts: &[usize]) -> usize {
    counts
        .iter()
        .enumerate()
        .fold(
            (0, 0),
            |best, (i, &n)| if n > best.1 { (i, n) } else { best },
        )
        .0
}

/// Leading whitespace of a line, in characters.
fn indent_of(line: &str) -> usize {
    line.chars()
        .take_while(|c| c.is_whitespace() || *c == '\u{feff}')
        .count()
}

/// Does a line end where a sentence or a quote may end?
fn ends_finished(line: &str) -> bool {
    line.ends_with([
        '。', '！', '？', '」', '』', '”', '’', '：', '…', '；', '!', '?', '.', '"', ')', '）',
    ])
}

/// The wrap of `text`, if it is hard-wrapped. Of its first
/// [`SAMPLE_LINES`] non-blank lines: 30 % or more within [`SLACK`] of the
/// commonest length (at least [`MIN_WIDTH`] characters), at most 2 % longer,
/// and most of those lines stop where no sentence ends (a book of one short
/// paragraph per line ends nearly every line with a 。 or a closing mark).
/// Lengths are counted in characters, else in screen columns.
pub fn detect(text: &str) -> Option<Wrap> {
    detect_by(text, Measure::Characters).or_else(|| detect_by(text, Measure::Columns))
}

fn detect_by(text: &str, measure: Measure) -> Option<Wrap> {
    const LONG: usize = MAX_WIDTH + SLACK + 1;
    let mut counts = [0usize; LONG + 1];
    let mut finished = [0usize; LONG + 1];
    let mut lines = 0usize;
    for line in text
        .lines()
        .filter(|l| !trim_line(l).is_empty())
        .take(SAMPLE_LINES)
    {
        let line = line.trim_end();
        // Longer than any width in bytes alone (a character is at most 4).
        let n = if line.len() > LONG * 4 {
            LONG
        } else {
            measure.of(line).min(LONG)
        };
        counts[n] += 1;
        finished[n] += usize::from(ends_finished(line));
        lines += 1;
        // More lines too long for any width than the sample may hold: a
        // book of long paragraphs, read no further.
        if counts[LONG] * 50 > SAMPLE_LINES {
            return None;
        }
    }
    if lines < MIN_LINES {
        return None;
    }
    // The commonest length (the first of equals).
    let min_width = measure.min_width();
    let width = min_width + commonest(&counts[min_width..=MAX_WIDTH]);
    let band = width - SLACK..=width + SLACK;
    let near: usize = counts[band.clone()].iter().sum();
    let unfinished = near - finished[band].iter().sum::<usize>();
    let longer: usize = counts[width + SLACK + 1..].iter().sum();
    if near * 10 < lines * 3 || longer * 50 > lines || unfinished * 2 < near {
        return None;
    }
    let wrap = Wrap {
        width,
        indent: 0,
        measure,
    };
    // The indent of a line right after a full one: the text's own margin.
    let mut indents = [0usize; 9];
    let mut after_full = false;
    for line in text.lines().take(SAMPLE_LINES * 2) {
        if trim_line(line).is_empty() {
            after_full = false;
            continue;
        }
        if after_full {
            indents[indent_of(line).min(indents.len() - 1)] += 1;
        }
        after_full = wrap.is_full(measure.of(line.trim_end()));
    }
    Some(Wrap {
        indent: commonest(&indents),
        ..wrap
    })
}

/// `text` with its wrapped lines joined into paragraphs, or `None` when it
/// is not hard-wrapped (see [`detect`]).
pub fn unwrap(text: &str) -> Option<String> {
    let wrap = detect(text)?;
    let mut out = String::with_capacity(text.len());
    // The last line put out was a full one that the next may go on.
    let mut open = false;
    // It ended in a space that a wrapper left after a word.
    let mut spaced = false;
    for raw in text.lines() {
        let body = trim_line(raw);
        if body.is_empty() {
            out.push('\n');
            open = false;
            continue;
        }
        let line = raw.trim_end();
        let full = wrap.is_full(wrap.measure.of(line));
        // Looked for only where it matters: a line that may go on the one
        // before, or that the next may go on.
        let is_heading = (open || full) && heading(body).is_some();
        let goes_on = open && indent_of(line) <= wrap.indent && !is_heading;
        if goes_on {
            // Two Latin words the wrapper parted at a space keep one; a
            // word or a number cut anywhere else is joined as it was.
            if spaced
                && out.ends_with(|c: char| c.is_ascii_alphanumeric())
                && body.starts_with(|c: char| c.is_ascii_alphanumeric())
            {
                out.push(' ');
            }
            out.push_str(body);
        } else {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(line);
        }
        open = full && !is_heading;
        spaced = raw.ends_with(|c: char| c.is_whitespace());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wraps each paragraph at `width` characters, the first line indented
    /// by `indent` full-width spaces, paragraphs apart by `gap`.
    fn wrap_at(paragraphs: &[impl AsRef<str>], width: usize, indent: usize, gap: &str) -> String {
        let mut out = Vec::new();
        for p in paragraphs {
            let text: Vec<char> = std::iter::repeat_n('\u{3000}', indent)
                .chain(p.as_ref().chars())
                .collect();
            let lines: Vec<String> = text.chunks(width).map(|c| c.iter().collect()).collect();
            out.push(lines.join("\n"));
        }
        out.join(gap)
    }

    fn story() -> Vec<String> {
        // Paragraphs of our own, long enough to wrap several times.
        let sentences = [
            "清晨的雾还没有散，河边的柳树只露出一点影子，摆渡的老人已经把船撑到了对岸。",
            "他把斗笠往后一推，抬头看了看天色，说今天怕是要下雨，赶集的人得早些回来。",
            "姑娘提着竹篮站在码头上：“阿爷，等等我，我娘叫我去镇上换些针线回来！”",
            "老人笑着摇了摇头，把竹篙插进水里，船头慢慢转了过来，水面上荡开一圈圈的波纹。",
        ];
        (0..24)
            .map(|i| {
                (0..3)
                    .map(|k| sentences[(i + k) % sentences.len()])
                    .collect::<String>()
            })
            .collect()
    }

    fn paragraphs(text: &str) -> Vec<String> {
        text.lines()
            .map(trim_line)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn paragraphs_apart_by_blank_lines_come_back_whole() {
        let story = story();
        let wrapped = wrap_at(&story, 37, 2, "\n\n");
        assert_eq!(detect(&wrapped).map(|w| w.width), Some(37));
        let unwrapped = unwrap(&wrapped).expect("a wrapped text");
        assert_eq!(paragraphs(&unwrapped), story);
    }

    #[test]
    fn paragraphs_marked_by_an_indent_alone_come_back_whole() {
        let story = story();
        let wrapped = wrap_at(&story, 30, 2, "\n");
        let unwrapped = unwrap(&wrapped).expect("a wrapped text");
        assert_eq!(paragraphs(&unwrapped), story);
    }

    #[test]
    fn a_quote_cut_by_the_wrap_is_one_paragraph_again() {
        let story = story();
        let wrapped = wrap_at(&story, 33, 0, "\n\n");
        assert!(
            paragraphs(&wrapped)
                .iter()
                .any(|p| p.matches('“').count() != p.matches('”').count()),
            "the fixture cuts a quote"
        );
        let unwrapped = unwrap(&wrapped).expect("a wrapped text");
        for p in paragraphs(&unwrapped) {
            assert_eq!(p.matches('“').count(), p.matches('”').count(), "{p}");
        }
    }

    #[test]
    fn a_heading_is_never_joined() {
        let story = story();
        let mut text = String::new();
        for (i, chunk) in story.chunks(6).enumerate() {
            // A heading exactly as long as the wrapped lines, right above its text.
            text.push_str(&format!(
                "第{}章　渡口的早晨，雾气迷蒙中的老人和姑娘\n",
                i + 1
            ));
            text.push_str(&wrap_at(chunk, 24, 0, "\n\n"));
            text.push('\n');
        }
        let unwrapped = unwrap(&text).expect("a wrapped text");
        let lines = paragraphs(&unwrapped);
        for i in 1..=4 {
            let head = format!("第{i}章　渡口的早晨，雾气迷蒙中的老人和姑娘");
            assert!(lines.contains(&head), "{head} is a line of its own");
        }
    }

    #[test]
    fn latin_words_cut_at_a_line_end_keep_their_space() {
        // Two full lines of 34 characters and a short last one.
        let first = "他在笔记本上写下一行英文：the river is wide and ";
        let second = "deep，然后他合上本子，推开木门走了出去，站在河边看着远处的渡船。";
        assert_eq!((first.chars().count(), second.chars().count()), (35, 34));
        let text = format!("{first}\n{second}\n看见河水。\n\n").repeat(30);
        let unwrapped = unwrap(&text).expect("a wrapped text");
        assert!(unwrapped.contains("wide and deep，"), "{unwrapped}");
        // Cut with no space, a number is one number again.
        let first = "他数了数台阶，从山脚一直走到山顶的灯塔，一共是12";
        let second = "8级，每一级都被海风吹得发白，踩上去还有点打滑，他";
        assert_eq!((first.chars().count(), second.chars().count()), (25, 25));
        let text = format!("{first}\n{second}\n走得很慢。\n\n").repeat(30);
        let unwrapped = unwrap(&text).expect("a wrapped text");
        assert!(unwrapped.contains("一共是128级"), "{unwrapped}");
    }

    #[test]
    fn a_text_cut_by_screen_columns_comes_back_whole() {
        // 76 columns: a Han character takes two, a Latin letter or a digit
        // one, so lines with Latin words and numbers hold more characters.
        let with_latin = |p: &str, i: usize| -> String {
            p.replacen('，', &format!("，Lisa在{}号", 10 + i * 7), 2)
                .replacen('。', "。WiFi断了。", 1)
        };
        let story = story();
        let mut text = String::new();
        for (i, p) in story.iter().enumerate() {
            let p = format!("\u{3000}\u{3000}{}", with_latin(p, i));
            let mut line = String::new();
            let mut columns = 0;
            for c in p.chars() {
                let w = if c.is_ascii() { 1 } else { 2 };
                if columns + w > 76 {
                    text.push_str(&line);
                    text.push('\n');
                    line.clear();
                    columns = 0;
                }
                line.push(c);
                columns += w;
            }
            text.push_str(&line);
            text.push_str("\n\n");
        }
        let wrap = detect(&text).expect("a wrapped text");
        assert_eq!((wrap.measure, wrap.width), (Measure::Columns, 76));
        let expected: Vec<String> = story
            .iter()
            .enumerate()
            .map(|(i, p)| with_latin(p, i))
            .collect();
        assert_eq!(
            paragraphs(&unwrap(&text).expect("a wrapped text")),
            expected
        );
    }

    #[test]
    fn a_book_of_one_paragraph_per_line_is_left_alone() {
        let story = story();
        // Paragraphs of every length, as web novels have them.
        let text: String = story
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let cut = p
                    .char_indices()
                    .nth(10 + (i * 7) % 60)
                    .map_or(p.len(), |(b, _)| b);
                format!("{}\n", &p[..cut])
            })
            .collect();
        assert_eq!(detect(&text), None);
        // Short lines all of one length: verse, not a wrap.
        let verse = "床前看月光，疑是地上霜。\n".repeat(40);
        assert_eq!(detect(&verse), None);
        // Lines of one length that each end a sentence: not wrapped.
        let even = "渡口的老人每天清晨把船撑到对岸，再慢慢撑回来。\n".repeat(40);
        assert_eq!(detect(&even), None);
        // Too few lines to tell.
        assert_eq!(
            detect(&wrap_at(&["一".repeat(200).as_str()], 30, 0, "\n")),
            None
        );
    }
}
