//! Lines without structure: a book whose line breaks were stripped puts many
//! chapters on one line. A very long line is cut at the chapter headings
//! inside it (a heading right after sentence-ending punctuation:
//! `…且听下文分解。第二回：张翼德怒鞭督邮，何国舅谋诛宦竖且说…`) and its
//! text into paragraphs at sentence ends, never inside a balanced quote.

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
            && let Some((len, key)) = inline_heading(&line[i..])
            && last_key.is_none_or(|(u, n)| u != key.0 || key.1 > n || key.1 == 1)
        {
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
            && inline_heading(&text[at..]).is_some()
    })
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

/// A 第N章/回/节 heading at the start of `s` with its title: the length of
/// the heading in bytes and its (unit, number).
fn inline_heading(s: &str) -> Option<(usize, (char, u32))> {
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
    // 第三章的故事, 第二回合: a word goes on, not a heading.
    if sep_len == 0 && next.is_some_and(super::is_han) && s[..after_unit].ends_with(unit) {
        return None;
    }
    end += sep_len;
    let title = title_len(&s[end..], unit == '回');
    if title == 0 {
        // A bare number: the heading ends at the unit (第1024章).
        return Some((after_unit, (unit, number)));
    }
    Some((end + title, (unit, number)))
}

fn is_numeral(c: char) -> bool {
    c.is_ascii_digit()
        || ('０'..='９').contains(&c)
        || "零〇一二两兩三四五六七八九十百千万萬壹贰貳叁參肆伍陆陸柒捌玖拾佰仟".contains(c)
}

/// Length in bytes of a heading's title at the start of `s`: a 回目 couplet
/// (two halves of equal length) for a 回, else up to the first whitespace or
/// punctuation, at most [`MAX_TITLE_CHARS`] characters.
fn title_len(s: &str, couplet: bool) -> usize {
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
