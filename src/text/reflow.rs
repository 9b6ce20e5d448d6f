//! Lines without structure: a book whose line breaks were stripped puts many
//! chapters on one line. A very long line is cut at the chapter headings
//! inside it (a heading right after sentence-ending punctuation:
//! `…且听下文分解。第二回：张翼德怒鞭督邮，何国舅谋诛宦竖且说…`) and its
//! text into paragraphs at sentence ends, never inside a balanced quote.
//!
//! A heading whose title runs straight into the text, with nothing between
//! them (`…分解。第二回鐵甲夜渡寒江水孤城曉破北風營話說那日…`), is taken
//! only when its number follows the previous heading's (a few may be missing)
//! or the next heading's number follows it; its title ends where a title
//! looks finished: a 回目 couplet of two equal halves before a sentence-start
//! marker (話說, 却说, 詩曰 …), an opening quote or the start of prose.

use super::quote;

/// A line at least this long (bytes; about 2,000 Han characters) is reflowed.
pub const LONG_LINE_BYTES: usize = 6000;

/// Longest title taken after an inline heading's number, in characters.
const MAX_TITLE_CHARS: usize = 30;

/// Longest quote (bytes) kept whole when cutting paragraphs.
const MAX_QUOTE_BYTES: usize = 3000 * 3;

/// Sentences after a quote mark that never closes stay in one paragraph up
/// to this many bytes (about 300 Han characters).
const MAX_OPEN_QUOTE_BYTES: usize = 300 * 3;

/// One piece of a reflowed line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    Heading(&'a str),
    Paragraph(&'a str),
}

/// Cuts a long line into headings and paragraphs; every piece is a slice of
/// `line`, in order, and only whitespace between pieces is left out.
pub fn reflow<'a>(line: &'a str) -> Vec<Piece<'a>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    // May a heading start here? At the line start, after a cut, whitespace,
    // a sentence end or a closing mark.
    let mut at_boundary = true;
    let mut last_key: Option<(char, u32)> = None;
    // How often each half length (4–11) was seen in the couplets of run-in
    // titles that a marker confirmed: the book's own style.
    let mut halves = [0usize; MAX_HALF + 1];
    // Where a quote that does not close opened.
    let mut soft_open: Option<usize> = None;
    let push = |out: &mut Vec<Piece<'a>>, from: usize, to: usize| {
        let p = super::chapter::trim_line(&line[from..to]);
        // A lone mark left after a title (第三章 夜袭。) is not a paragraph.
        if quote::is_speakable(p) {
            out.push(Piece::Paragraph(p));
        }
    };
    while i < line.len() {
        let Some(c) = line[i..].chars().next() else {
            break;
        };
        let w = c.len_utf8();
        if c.is_whitespace() {
            let run_end = line[i..]
                .find(|c: char| !c.is_whitespace())
                .map_or(line.len(), |r| i + r);
            let run = &line[i..run_end];
            // An indent (two spaces or a full-width space) opens a paragraph.
            if run.len() >= 2 || run.contains('\u{3000}') {
                push(&mut out, start, i);
                start = run_end;
            }
            i = run_end;
            at_boundary = true;
            continue;
        }
        if c == '第'
            && at_boundary
            && let Some(h) = inline_heading(&line[i..], preferred_half(&halves))
            && accepts(line, i, &h, last_key)
        {
            let (len, key) = (h.len, h.key);
            if let Some(half) = h.confirmed_half {
                halves[half] += 1;
            }
            push(&mut out, start, i);
            out.push(Piece::Heading(super::chapter::trim_line(&line[i..i + len])));
            last_key = Some(key);
            soft_open = None;
            i += len;
            start = i;
            at_boundary = true;
            continue;
        }
        if quote::closer_of(c).is_some() {
            if let Some(end) = quote::balanced_end(line, i + w, c, MAX_QUOTE_BYTES)
                .filter(|&end| !holds_heading(&line[i + w..end]))
            {
                soft_open = None;
                i = end;
                at_boundary = false;
                continue;
            }
            // A quote left open: its sentences stay together for a while.
            soft_open = Some(i);
            i += w;
            at_boundary = false;
            continue;
        }
        if matches!(c, '」' | '』' | '”' | '’') {
            soft_open = None;
        }
        let held = soft_open.is_some_and(|at| i - at < MAX_OPEN_QUOTE_BYTES);
        if is_sentence_end(c) && !held {
            soft_open = None;
            let mut end = i + w;
            while let Some(n) = line[end..].chars().next() {
                if is_sentence_end(n) || is_closing(n) {
                    end += n.len_utf8();
                } else {
                    break;
                }
            }
            push(&mut out, start, end);
            start = end;
            i = end;
            at_boundary = true;
            continue;
        }
        at_boundary = is_closing(c) || is_sentence_end(c);
        i += w;
    }
    push(&mut out, start, line.len());
    out
}

/// Does a quoted stretch hold a chapter heading (after a sentence end)? Then
/// its marks do not pair up: a quote never runs across chapters.
fn holds_heading(text: &str) -> bool {
    text.match_indices('第').any(|(at, _)| {
        text[..at]
            .chars()
            .next_back()
            .is_some_and(|p| is_sentence_end(p) || is_closing(p) || p.is_whitespace())
            && inline_heading(&text[at..], DEFAULT_HALF).is_some()
    })
}

/// Most numbers a run of headings may skip (headings lost in the dump).
const MAX_GAP: u32 = 5;

/// How far ahead (bytes) a run-in heading looks for the next heading.
const MAX_LOOKAHEAD_BYTES: usize = 512 * 1024;

/// Is the heading `h` at `line[at..]` taken? A separated heading unless its
/// number goes back; a run-in one only in a sequence of numbers.
fn accepts(line: &str, at: usize, h: &Inline, last_key: Option<(char, u32)>) -> bool {
    let (unit, n) = h.key;
    let follows = last_key.is_some_and(|(u, last)| u == unit && n > last && n <= last + MAX_GAP);
    if !h.run_in {
        return follows || last_key.is_none_or(|(u, last)| u != unit || n > last || n == 1);
    }
    follows
        || next_heading_number(line, at + h.len, unit)
            .is_some_and(|next| next > n && next <= n + MAX_GAP)
}

/// The number of the next `第N<unit>` after a sentence end in `line[from..]`
/// (any heading unit stops the search; bounded, so linear overall).
fn next_heading_number(line: &str, from: usize, unit: char) -> Option<u32> {
    let mut end = (from + MAX_LOOKAHEAD_BYTES).min(line.len());
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    let text = &line[from..end];
    for (at, _) in text.match_indices('第') {
        let after_end = text[..at]
            .chars()
            .next_back()
            .is_some_and(|p| is_sentence_end(p) || is_closing(p) || p.is_whitespace());
        if !after_end {
            continue;
        }
        if let Some((u, n)) = heading_number(&text[at..]) {
            return (u == unit).then_some(n);
        }
    }
    None
}

/// `第N章/回/节` at the start of `s`: (unit, number) and the byte end of the unit.
fn heading_number(s: &str) -> Option<(char, u32)> {
    let digits: usize = s['第'.len_utf8()..]
        .chars()
        .take_while(|c| is_numeral(*c))
        .map(char::len_utf8)
        .sum();
    if digits == 0 || digits > 9 * 3 {
        return None;
    }
    let num_end = '第'.len_utf8() + digits;
    let unit = s[num_end..].chars().next()?;
    if !matches!(unit, '章' | '回' | '节' | '節') {
        return None;
    }
    Some((
        unit,
        super::chapter::parse_number(&s['第'.len_utf8()..num_end])?,
    ))
}

fn is_sentence_end(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '!' | '?' | '…')
}

fn is_closing(c: char) -> bool {
    matches!(
        c,
        '」' | '』' | '”' | '’' | '"' | '＂' | '）' | ')' | '】' | '》'
    )
}

/// A heading found inside a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Inline {
    /// Length of the heading in bytes, title included.
    len: usize,
    /// (unit, number).
    key: (char, u32),
    /// Nothing separates the unit from a title that runs into the text.
    run_in: bool,
    /// The half length of a run-in couplet that a marker confirmed.
    confirmed_half: Option<usize>,
}

/// A 第N章/回/节 heading at the start of `s` with its title; `half` is the
/// book's usual half length of a 回目 couplet.
fn inline_heading(s: &str, half: usize) -> Option<Inline> {
    let mut chars = s.char_indices().skip(1).peekable();
    let mut num_end = '第'.len_utf8();
    while let Some(&(j, c)) = chars.peek() {
        if is_numeral(c) {
            num_end = j + c.len_utf8();
            chars.next();
        } else {
            break;
        }
    }
    let number = super::chapter::parse_number(&s['第'.len_utf8()..num_end])?;
    let unit = s[num_end..].chars().next()?;
    if !matches!(unit, '章' | '回' | '节' | '節') || num_end - '第'.len_utf8() > 9 * 3 {
        return None;
    }
    let mut end = num_end + unit.len_utf8();
    // （上）, then a separator.
    let rest = &s[end..];
    if let Some(stripped) = rest.strip_prefix(['（', '('])
        && let Some(close) = stripped.find(['）', ')'])
        && stripped[..close].chars().count() <= 3
    {
        let mark = stripped[close..].chars().next().map_or(0, char::len_utf8);
        end += rest.len() - stripped.len() + close + mark;
    }
    let after_unit = end;
    let sep_len = s[end..]
        .char_indices()
        .find(|(_, c)| {
            !matches!(
                c,
                ' ' | '\t' | '\u{3000}' | ':' | '：' | '、' | '.' | '．' | '·' | '—' | '-'
            )
        })
        .map_or(s.len() - end, |(k, _)| k);
    let next = s[end + sep_len..].chars().next();
    let key = (unit, number);
    // 第三章的故事, 第二回合: a word goes on (or a title runs into the text;
    // the caller takes it only in a sequence of headings).
    if sep_len == 0 && next.is_some_and(super::is_han) && s[..after_unit].ends_with(unit) {
        // 第二回合, 第三章的: words, never a title.
        if next.is_some_and(|c| {
            matches!(
                c,
                '的' | '了' | '着' | '著' | '是' | '在' | '合' | '中' | '里' | '裡'
            )
        }) {
            return None;
        }
        let (title, confirmed_half) = run_in_title_len(&s[end..], unit == '回', half);
        if title == 0 {
            return None;
        }
        return Some(Inline {
            len: end + title,
            key,
            run_in: true,
            confirmed_half,
        });
    }
    end += sep_len;
    let title = title_len(&s[end..], unit == '回', half);
    Some(Inline {
        // A bare number: the heading ends at the unit (第1024章).
        len: if title == 0 { after_unit } else { end + title },
        key,
        run_in: false,
        confirmed_half: None,
    })
}

/// A digit or a Chinese numeral (一, 萬, 兩, 拾 …).
pub(crate) fn is_numeral(c: char) -> bool {
    c.is_ascii_digit()
        || ('０'..='９').contains(&c)
        || "零〇一二两兩三四五六七八九十百千万萬壹贰貳叁參肆伍陆陸柒捌玖拾佰仟".contains(c)
}

/// Length in bytes of a heading's title at the start of `s`: a 回目 couplet
/// (two halves of equal length) for a 回, else up to the first whitespace or
/// punctuation, at most [`MAX_TITLE_CHARS`] characters.
fn title_len(s: &str, couplet: bool, half: usize) -> usize {
    let run = |from: usize| -> Vec<usize> {
        s[from..]
            .char_indices()
            .take_while(|(_, c)| super::is_han(*c))
            .map(|(k, c)| from + k + c.len_utf8())
            .take(MAX_TITLE_CHARS)
            .collect()
    };
    let first = run(0);
    if couplet && (4..=12).contains(&first.len()) {
        let half = first.len();
        let a_end = first[half - 1];
        let gap = s[a_end..]
            .char_indices()
            .find(|(_, c)| !matches!(c, ' ' | '\u{3000}' | '，' | ',' | '、' | '；'))
            .map_or(0, |(k, _)| k);
        if gap > 0 && gap <= 6 {
            let second = run(a_end + gap);
            if second.len() >= half {
                return second[half - 1];
            }
        }
        return a_end;
    }
    // A couplet written without a space, running into the text.
    if couplet && first.len() > 2 * MIN_HALF {
        return run_in_title_len(s, true, half).0;
    }
    // Up to the first space or punctuation.
    let mut end = 0;
    for (n, (k, c)) in s.char_indices().enumerate() {
        if n >= MAX_TITLE_CHARS
            || c.is_whitespace()
            || quote::is_clause_punct(c)
            || matches!(c, '“' | '「' | '『' | '"')
        {
            break;
        }
        end = k + c.len_utf8();
    }
    end
}

/// Shortest and longest half of a 回目 couplet, in characters.
const MIN_HALF: usize = 4;
const MAX_HALF: usize = 11;

/// Half length taken when the book has not shown its own yet.
const DEFAULT_HALF: usize = 7;

fn preferred_half(halves: &[usize; MAX_HALF + 1]) -> usize {
    let (best, count) = halves
        .iter()
        .enumerate()
        .max_by_key(|(h, n)| (**n, std::cmp::Reverse(*h)))
        .map_or((DEFAULT_HALF, 0), |(h, n)| (h, *n));
    if count == 0 { DEFAULT_HALF } else { best }
}

/// Words that open the text of a chapter: a title ends right before one.
const MARKERS: &[&str] = &[
    "話說", "话说", "却说", "卻說", "却說", "且說", "且说", "詩曰", "诗曰", "詞曰", "词曰", "詩云",
    "诗云", "話表", "话表", "偈曰", "再說", "再说", "且不", "單表", "单表",
];

/// Weaker openers of a chapter's text: a couplet may end before one.
const OPENERS: &[&str] = &[
    "當時", "当时", "當下", "当下", "只見", "只见", "原來", "原来", "一日", "次日", "卻", "却",
    "且", "這", "这", "那", "此", "眾人", "众人", "看官", "列位", "上回", "前回",
];

/// Characters of prose that a short chapter title rarely holds.
fn is_prose_char(c: char) -> bool {
    matches!(
        c,
        '的' | '了'
            | '着'
            | '著'
            | '他'
            | '她'
            | '我'
            | '你'
            | '們'
            | '们'
            | '說'
            | '说'
            | '道'
            | '是'
            | '這'
            | '这'
            | '那'
            | '在'
    )
}

fn starts_with_any(s: &str, words: &[&str]) -> bool {
    words.iter().any(|w| s.starts_with(w))
}

fn is_opening_quote(c: char) -> bool {
    matches!(c, '“' | '「' | '『' | '"' | '‘')
}

/// Length in bytes of a title that runs into the text at the start of `s`
/// (no space, no colon), and the half length when a marker confirmed a
/// couplet. A 回目 couplet is two halves of 4–11 characters, preferably
/// `half` each; a chapter title ends before a marker, a quote or prose.
fn run_in_title_len(s: &str, couplet: bool, half: usize) -> (usize, Option<usize>) {
    // Byte ends of the Han characters at the start (at most MAX_TITLE_CHARS).
    let ends: Vec<usize> = s
        .char_indices()
        .take_while(|(_, c)| super::is_han(*c))
        .map(|(k, c)| k + c.len_utf8())
        .take(MAX_TITLE_CHARS)
        .collect();
    let n = ends.len();
    if n == 0 {
        return (0, None);
    }
    let at = |p: usize| if p == 0 { 0 } else { ends[p - 1] };
    let rest = |p: usize| &s[at(p)..];
    let marker = (2..n).find(|&p| starts_with_any(rest(p), MARKERS));
    let stops_at_quote = s[ends[n - 1]..]
        .chars()
        .next()
        .is_some_and(is_opening_quote);
    if !couplet {
        let prose = (2..n).find(|&p| {
            rest(p).chars().next().is_some_and(is_prose_char) || starts_with_any(rest(p), MARKERS)
        });
        return (at(marker.or(prose).unwrap_or(n)), None);
    }
    let fits = |p: usize| (2 * MIN_HALF..=2 * MAX_HALF).contains(&p);
    if let Some(p) = marker.filter(|p| fits(*p)) {
        let confirmed = p.is_multiple_of(2).then_some(p / 2);
        return (at(p), confirmed);
    }
    if stops_at_quote && n.is_multiple_of(2) && fits(n) {
        return (at(n), None);
    }
    let mut order = vec![half];
    order.extend(
        [7, 8, 6, 9, 5, 10, 4, 11]
            .into_iter()
            .filter(|h| *h != half),
    );
    if let Some(h) = order.iter().find(|h| {
        // 却说 misspelt (卑说) still opens the text.
        2 * **h < n && {
            let r = rest(2 * **h);
            starts_with_any(r, OPENERS)
                || r.chars().nth(1).is_some_and(|c| matches!(c, '说' | '說'))
        }
    }) {
        return (at(2 * h), None);
    }
    match order.iter().find(|h| 2 * **h <= n) {
        Some(h) => (at(2 * h), None),
        None => (at(n), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Piece::*;

    #[test]
    fn headings_inside_a_line() {
        let line = "话说天下大势。且听下文分解。第二回：张翼德怒鞭督邮，何国舅谋诛宦竖且说董卓字仲颖。他来了。第三回 议温明董卓叱丁原 馈金珠李肃说吕布    却说曹操。";
        assert_eq!(
            reflow(line),
            [
                Paragraph("话说天下大势。"),
                Paragraph("且听下文分解。"),
                Heading("第二回：张翼德怒鞭督邮，何国舅谋诛宦竖"),
                Paragraph("且说董卓字仲颖。"),
                Paragraph("他来了。"),
                Heading("第三回 议温明董卓叱丁原 馈金珠李肃说吕布"),
                Paragraph("却说曹操。"),
            ]
        );
    }

    #[test]
    fn chapter_titles_end_at_space_or_punctuation() {
        assert_eq!(
            reflow("完了。第三章 夜袭 他走了。第1024章 他回来了。"),
            [
                Paragraph("完了。"),
                Heading("第三章 夜袭"),
                Paragraph("他走了。"),
                Heading("第1024章 他回来了"),
            ]
        );
        // A mention inside a sentence is not a heading.
        assert_eq!(reflow("他翻到第三章，看了很久。").len(), 1);
        assert_eq!(reflow("他看完了。第三章的故事很长。").len(), 2);
    }

    fn headings<'a>(pieces: &[Piece<'a>]) -> Vec<&'a str> {
        pieces
            .iter()
            .filter_map(|p| match p {
                Heading(h) => Some(*h),
                Paragraph(_) => None,
            })
            .collect()
    }

    #[test]
    fn run_in_titles_follow_the_sequence() {
        // Made-up couplets (Traditional), nothing between title and text.
        let line = "且聽下回分解。第一回鐵甲夜渡寒江水孤城曉破北風營話說那日大軍渡江。眾人都笑了。\
            第二回青燈獨照讀書人白馬相逢少年客卻說那書生姓林。\
            第三回風雪夜歸人草堂醉臥客詩曰：好雪。\
            第四回舊夢難尋春又去新愁易結雁初來「走吧。」他說。";
        assert_eq!(
            headings(&reflow(line)),
            [
                "第一回鐵甲夜渡寒江水孤城曉破北風營",
                "第二回青燈獨照讀書人白馬相逢少年客",
                "第三回風雪夜歸人草堂醉臥客",
                "第四回舊夢難尋春又去新愁易結雁初來",
            ]
        );
        // A heading lost in the middle does not stop the rest.
        let lost = line.replace("第二回青燈獨照讀書人白馬相逢少年客", "");
        assert_eq!(headings(&reflow(&lost)).len(), 3);
        // Chapter titles end where prose starts (他, 她 …).
        assert_eq!(
            headings(&reflow("完了。第一章風起他走進門來。第二章夜襲她笑了。")),
            ["第一章風起", "第二章夜襲"]
        );
    }

    #[test]
    fn run_in_words_out_of_sequence_are_text() {
        // 第二回合 is a word; a lone 第五十回 with nothing around it is no heading.
        assert!(headings(&reflow("戰了三個回合。第二回合開始了。")).is_empty());
        assert!(headings(&reflow("他笑了。第五十回甲乙丙丁戊己庚辛話說他走了。")).is_empty());
        // Separated headings are taken as before, run-in ones only in sequence.
        assert_eq!(
            headings(&reflow(
                "完了。第一回 甲乙丙丁 戊己庚辛 話說。好。第七回甲乙丙丁戊己庚辛話說。"
            )),
            ["第一回 甲乙丙丁 戊己庚辛"]
        );
    }

    #[test]
    fn balanced_quotes_stay_whole_and_stray_ones_do_not_swallow_the_line() {
        assert_eq!(
            reflow("他说：“走吧。我们走。”她点头。他走了。"),
            [
                Paragraph("他说：“走吧。我们走。”她点头。"),
                Paragraph("他走了。")
            ]
        );
        // An open quote keeps its sentences together, for a while.
        assert_eq!(reflow("他说：“走吧。她点头。").len(), 1);
        let long = format!("他说：“走吧。{}", "她点头。".repeat(200));
        assert!(reflow(&long).len() > 100);
        // The same mark again ends a quote left open: “走吧。“好。”
        assert_eq!(
            reflow("他说：“走吧。“好。”她点头。他走了。"),
            [
                Paragraph("他说：“走吧。“好。”她点头。"),
                Paragraph("他走了。")
            ]
        );
    }
}
