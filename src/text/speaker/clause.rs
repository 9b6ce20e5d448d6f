//! Where clauses and sentences of the narration start and end, and whether
//! a mention opens its clause (is its subject). Every scan is bounded, so
//! the attributor stays linear on any input.

use super::mentions::Mention;
use super::names::is_title_end;
use super::words::connective_at_start;

/// Punctuation that ends a clause, closing brackets and quotes included.
pub(super) fn is_punct(c: char) -> bool {
    crate::text::quote::is_clause_punct(c) || matches!(c, '）' | ')' | '」' | '”' | '』' | '’')
}

pub(super) fn is_sentence_end(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '!' | '?' | '；' | ';')
}

/// The characters of `text` that may be punctuation, with their byte
/// offsets, front to back or back to front: ASCII, and the characters of
/// the three blocks every CJK mark lives in (lead byte E2: … — ” ’; E3:
/// 。、」』; EF: the full-width ，！？：；）). Han characters are stepped
/// over by their lead byte, never decoded; the scans of clauses and
/// sentences (every predicate of this module) look at no other character.
pub(super) fn marks(text: &str) -> Marks<'_> {
    Marks {
        text,
        bytes: text.as_bytes(),
        front: 0,
        back: text.len(),
    }
}

/// See [`marks`].
pub(super) struct Marks<'a> {
    text: &'a str,
    bytes: &'a [u8],
    front: usize,
    back: usize,
}

impl Marks<'_> {
    /// The character at `at` (a lead byte E2, E3 or EF).
    fn three(&self, at: usize) -> char {
        self.text[at..]
            .chars()
            .next()
            .unwrap_or(char::REPLACEMENT_CHARACTER)
    }
}

impl Iterator for Marks<'_> {
    type Item = (usize, char);

    fn next(&mut self) -> Option<(usize, char)> {
        while self.front < self.back {
            let at = self.front;
            match self.bytes[at] {
                // Most characters: CJK ideographs, of three bytes.
                0xE4..=0xEE => self.front += 3,
                b @ 0..0x80 => {
                    self.front += 1;
                    return Some((at, char::from(b)));
                }
                0xE2 | 0xE3 | 0xEF => {
                    self.front += 3;
                    return Some((at, self.three(at)));
                }
                0xC0..0xE0 => self.front += 2,
                0xE0..0xF0 => self.front += 3,
                _ => self.front += 4,
            }
        }
        None
    }
}

impl DoubleEndedIterator for Marks<'_> {
    fn next_back(&mut self) -> Option<(usize, char)> {
        while self.back > self.front {
            let end = self.back;
            // Most characters: CJK ideographs, of three bytes (a lead byte
            // three back is always that of the character ending here).
            if end - self.front >= 3 && (0xE4..=0xEE).contains(&self.bytes[end - 3]) {
                self.back = end - 3;
                continue;
            }
            let b = self.bytes[end - 1];
            if b < 0x80 {
                self.back -= 1;
                return Some((self.back, char::from(b)));
            }
            // The character ending here is of 2, 3 or 4 bytes.
            let lead = if end - self.front >= 3 && (0xE0..0xF0).contains(&self.bytes[end - 3]) {
                end - 3
            } else if (0xC0..0xE0).contains(&self.bytes[end - 2]) {
                end - 2
            } else {
                end - 4
            };
            self.back = lead;
            if matches!(self.bytes[lead], 0xE2 | 0xE3 | 0xEF) {
                return Some((lead, self.three(lead)));
            }
        }
        None
    }
}

/// Longest clause looked at, in bytes: a longer run without punctuation is
/// cut there, so no scan goes back further (linear time on any input).
pub(super) const MAX_CLAUSE_BYTES: usize = 64 * 3;

/// Start of the clause that contains `pos` (not before `floor`, not more
/// than [`MAX_CLAUSE_BYTES`] back).
pub(super) fn clause_start(text: &str, pos: usize, floor: usize) -> usize {
    let mut lo = floor.max(pos.saturating_sub(MAX_CLAUSE_BYTES));
    while !text.is_char_boundary(lo) {
        lo += 1;
    }
    marks(&text[lo..pos])
        .rev()
        .find(|(_, c)| is_punct(*c))
        .map_or(lo, |(j, c)| lo + j + c.len_utf8())
}

/// Start of the sentence that ends at `end` (not before `floor`).
pub(super) fn sentence_start(text: &str, floor: usize, end: usize) -> usize {
    marks(&text[floor..end])
        .rev()
        .find(|(_, c)| is_sentence_end(*c))
        .map_or(floor, |(j, c)| floor + j + c.len_utf8())
}

/// End of the first sentence from `start` (its end mark included), at most `limit`.
pub(super) fn sentence_end(text: &str, start: usize, limit: usize) -> usize {
    marks(&text[start..limit])
        .find(|(j, c)| is_sentence_end(*c) && *j > 0)
        .map_or(limit, |(j, c)| start + j + c.len_utf8())
}

pub(super) fn last_clause(text: &str, floor: usize, end: usize) -> &str {
    &text[clause_start(text, end, floor)..end]
}

/// True when the mention opens its clause, possibly after connectives (然后他说).
pub(super) fn is_subject(text: &str, m: &Mention, floor: usize) -> bool {
    opens_clause(&text[clause_start(text, m.start, floor)..m.start])
}

/// Longest run of connectives before a subject, in bytes (3 × 3 characters).
const MAX_CONNECTIVE_BYTES: usize = 27;

/// Longest title before a name in apposition, in bytes (大队会计, 小学教师: 6 characters).
const MAX_TITLE_BYTES: usize = 18;

/// True when `prefix` (clause start up to a mention) is empty or connectives
/// only, or a title or pronoun in apposition (小学教师金成, 他田福堂).
pub(super) fn opens_clause(prefix: &str) -> bool {
    // “萝卜花”说: a nickname in quote marks inside narration.
    let mut prefix = prefix.trim_start().trim_end_matches(['“', '「', '『']);
    if prefix.is_empty() {
        return true;
    }
    // 他田福堂什么时候…: the pronoun and the name are one subject.
    if matches!(prefix, "他" | "她") {
        return true;
    }
    if prefix.len() <= MAX_TITLE_BYTES
        && is_title_end(prefix)
        && prefix.chars().all(crate::text::decode::is_han)
    {
        return true;
    }
    if prefix.len() > MAX_CONNECTIVE_BYTES {
        return false;
    }
    for _ in 0..3 {
        if describes(prefix) {
            return true;
        }
        match connective_at_start(prefix) {
            Some(c) => prefix = prefix[c.len()..].trim_start(),
            None => return false,
        }
        if prefix.is_empty() || describes(prefix) {
            return true;
        }
    }
    false
}

/// A word that describes the subject after it (心虚的女儿, 瘦弱的润生):
/// two or three characters and 的, none of them a verb's mark or a
/// preposition (打了的, 对他的 describe nobody).
fn describes(prefix: &str) -> bool {
    let Some(word) = prefix.strip_suffix('的') else {
        return false;
    };
    let n = word.chars().count();
    (2..=3).contains(&n)
        && word.chars().all(|c| {
            crate::text::decode::is_han(c) && !"了着著过過把给給对對向被跟和同他她你我".contains(c)
        })
}

/// Words that bring someone into a clause (有个, 有一位); none longer than
/// 有一个, all opening with 有.
const BRINGING_IN: &[&str] = &["有个", "有個", "有一个", "有一個", "有位", "有一位", "有一"];

/// Longest description between those words and the one brought in
/// (有个中年妇女: 2 characters).
const MAX_BROUGHT_IN_BYTES: usize = 4 * 3;

/// True when `prefix` (the clause up to a mention) brings the mention in:
/// 有个妇女, 路边有一位年轻姑娘, or opens the clause with a count or a
/// demonstrative and a description (一个中年女人, 旁边一个男人, 那个穿雨衣的
/// 女人) — not 她把那个妇女, the object.
pub(super) fn brought_in(prefix: &str) -> bool {
    // Every word of BRINGING_IN opens with 有: most clauses end without one.
    let widest = crate::text::quote::floor_boundary(
        prefix,
        prefix
            .len()
            .saturating_sub(MAX_BROUGHT_IN_BYTES + "有一个".len()),
    );
    let near = prefix[widest..].contains('有');
    near && BRINGING_IN.iter().any(|w| {
        // Only the prefix's last bytes can hold one close enough.
        let from = crate::text::quote::floor_boundary(
            prefix,
            prefix.len().saturating_sub(MAX_BROUGHT_IN_BYTES + w.len()),
        );
        prefix[from..]
            .rfind(w)
            .is_some_and(|at| prefix.len() - (from + at) - w.len() <= MAX_BROUGHT_IN_BYTES)
    }) || counted_subject(prefix)
        // 外头有婆子扬声道: 有 right before (not 没有, 所有).
        || (prefix.ends_with('有')
            && !["没有", "沒有", "所有", "只有"].iter().any(|w| prefix.ends_with(w)))
}

/// A verb of coming, then a count: someone comes to where the scene is
/// (店里进来一个穿职业装的女人, 走过来一位); or one standing at the door
/// (门外站着一个人) — not one already sitting there when the scene's own
/// people come in (推开门，里面坐着一个男人: who came in speaks first).
const ARRIVING: &[&str] = &[
    "门外站着一",
    "門外站著一",
    "门口站着一",
    "門口站著一",
    "进来一",
    "進來一",
    "进来了一",
    "進來了一",
    "走过来一",
    "走過來一",
    "来了一",
    "來了一",
    "出现了一",
    "出現了一",
    "出现一",
    "出現一",
];

/// Longest description of someone who arrives (头发花白的男人: 6 characters).
const MAX_ARRIVAL_CHARS: usize = 10;

/// The last one `text` brings into view: the byte range of the one counted
/// (`人` of 一个人, `穿职业装的女人`), at most [`MAX_ARRIVAL_CHARS`] before a
/// pause.
pub(super) fn last_arrival(text: &str) -> Option<(usize, usize)> {
    const COUNTS: &[&str] = &["个", "個", "位", "名"];
    if !text.contains('一') {
        return None;
    }
    ARRIVING
        .iter()
        .flat_map(|w| text.match_indices(w).map(|(at, w)| at + w.len()))
        .filter_map(|start| {
            let count = COUNTS.iter().find(|c| text[start..].starts_with(**c))?;
            let from = start + count.len();
            let end = text[from..]
                .char_indices()
                .find(|&(_, c)| is_punct(c))
                .map_or(text.len(), |(k, _)| from + k);
            (from < end && text[from..end].chars().count() <= MAX_ARRIVAL_CHARS)
                .then_some((from, end))
        })
        .max()
}

/// True when someone who arrives is said to be a person and nothing more
/// (一个人, 一个年轻人): no word says a man or a woman.
pub(super) fn ungendered_arrival(who: &str) -> bool {
    who.ends_with('人') && !who.ends_with("女人") && !who.ends_with("男人")
}

/// Verbs of seeing that bring someone new into view (看见一个玄衣男子).
const SEEING: &[&str] = &[
    "看见", "看見", "看到", "瞧见", "瞧見", "发现", "發現", "只见", "只見",
];

/// True when `prefix` (the clause up to a mention) sees someone counted come
/// into view: a verb of seeing, then a count and a short description (便看见一个
/// 玄衣, 只见一位) — someone new, though the object of the verb.
pub(super) fn seen_coming(prefix: &str) -> bool {
    SEEING.iter().any(|w| {
        prefix.rfind(w).is_some_and(|at| {
            let rest = &prefix[at + w.len()..];
            COUNTED
                .iter()
                .any(|c| c.starts_with('一') && rest.starts_with(c))
                && counted_subject(rest)
        })
    })
}

/// Counts and demonstratives that open a noun phrase (一个女人, 那位老者).
const COUNTED: &[&str] = &[
    "一个", "一個", "一位", "一名", "那个", "那個", "那位", "这个", "這個", "这位", "這位",
];

/// Ages that describe a subject with no count (中年女人, 年轻男人).
const AGES: &[&str] = &["中年", "年轻", "年輕", "年老", "年长", "年長"];

/// Longest description between a count and the one it counts (穿雨衣的年轻:
/// 6 characters; a little more).
const MAX_DESCRIPTION_CHARS: usize = 8;

/// Longest description before an age with no count (卖肉的 of 卖肉的中年).
const MAX_AGED_DESCRIPTION_CHARS: usize = 4;

/// Places that may come before a counted subject (旁边, 人群里, 门口).
const MAX_PLACE_CHARS: usize = 3;

/// `prefix` is a counted noun phrase's head: at most a place word (ending in
/// a localizer), a count or demonstrative, and a short description with no
/// verb marks or prepositions (一个中年, 旁边一个, 那个穿雨衣的年轻); or with
/// no count, a description ending in 的 or an age (卖肉的中年, 中年).
fn counted_subject(prefix: &str) -> bool {
    let prefix = prefix.trim();
    let plain = |description: &str| {
        description.chars().count() <= MAX_DESCRIPTION_CHARS
            && description.chars().all(|c| {
                crate::text::decode::is_han(c)
                    && !"了过過着著把给給对對向被跟和同他她你我在".contains(c)
            })
    };
    // With no count: an age, alone or after a short description that ends
    // in 的 (中年, 卖肉的中年).
    let aged = AGES
        .iter()
        .find_map(|a| prefix.strip_suffix(a))
        .unwrap_or(prefix);
    let aged_subject = aged.len() < prefix.len()
        && (aged.is_empty()
            || (aged.ends_with('的') && aged.chars().count() <= MAX_AGED_DESCRIPTION_CHARS))
        && plain(aged);
    aged_subject
        // Every word of COUNTED ends in one of these: one pass first.
        || (prefix.contains(['个', '個', '位', '名'])
            && COUNTED.iter().any(|w| {
            let Some(at) = prefix.find(w) else {
                return false;
            };
            let place = &prefix[..at];
            let description = &prefix[at + w.len()..];
            let place_ok = place.is_empty()
                || (place.chars().count() <= MAX_PLACE_CHARS
                    && place.chars().all(crate::text::decode::is_han)
                    && place.ends_with([
                        '边', '邊', '面', '里', '裡', '中', '口', '前', '后', '後', '旁', '外',
                    ]));
            place_ok && plain(description)
        }))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What [`marks`] must give: every character whose UTF-8 opens with an
    /// ASCII byte or E2, E3, EF, with its offset.
    fn marks_of_chars(text: &str) -> Vec<(usize, char)> {
        text.char_indices()
            .filter(|&(_, c)| {
                c.is_ascii() || matches!(c.to_string().as_bytes()[0], 0xE2 | 0xE3 | 0xEF)
            })
            .collect()
    }

    #[test]
    fn every_mark_the_scans_look_for_is_one_marks_gives() {
        for c in (0..0x11_0000).filter_map(char::from_u32) {
            if is_punct(c) || is_sentence_end(c) {
                let s = c.to_string();
                assert_eq!(marks(&s).collect::<Vec<_>>(), [(0, c)], "{c}");
            }
        }
    }

    proptest! {
        /// Front to back, back to front, and from both ends at once, on
        /// characters of one to four bytes.
        #[test]
        fn marks_are_the_characters_of_their_blocks(
            text in "[a-z0-9 ,.!?;:·é一二说道人家。，、！？：；…—“”「」『』（）（）｡ｱＡ𠀀😀]{0,30}",
            split in 0usize..40,
        ) {
            let want = marks_of_chars(&text);
            prop_assert_eq!(marks(&text).collect::<Vec<_>>(), want.clone());
            let mut back: Vec<_> = marks(&text).rev().collect();
            back.reverse();
            prop_assert_eq!(back, want.clone());
            let mut it = marks(&text);
            let mut front: Vec<_> = it.by_ref().take(split.min(want.len())).collect();
            let mut rest: Vec<_> = it.rev().collect();
            rest.reverse();
            front.extend(rest);
            prop_assert_eq!(front, want);
        }
    }

    /// [`brought_in`] looks for 有 in the last bytes only.
    #[test]
    fn every_word_bringing_someone_in_opens_with_you_and_is_short() {
        for w in BRINGING_IN {
            assert!(w.starts_with('有') && w.len() <= "有一个".len(), "{w}");
        }
        assert!(brought_in("路边有个"));
        assert!(!brought_in("她把那个"));
    }

    #[test]
    fn clauses_and_sentences_end_at_their_marks() {
        let text = "他说：“好。”她笑了，没说话。é😀走吧！";
        let at = |s: &str| text.find(s).unwrap();
        assert_eq!(sentence_end(text, 0, text.len()), at("”"));
        assert_eq!(sentence_end(text, at("她"), text.len()), at("é"));
        assert_eq!(sentence_start(text, 0, at("走")), at("é"));
        assert_eq!(clause_start(text, at("没"), 0), at("没"));
        assert_eq!(clause_start(text, at("😀"), at("é")), at("é"));
    }
}
