//! Kin who are called by what they are, not by name: the one a younger
//! sibling calls “哥，…” or a child “爸，…”.
//!
//! The book says once or more who holds a kin word, right before the name
//! (他哥孙少安, 姐姐润叶, 她父亲田福堂). A quote that opens with that word
//! (“姐姐！”, “爸，…”) then calls the holder of the word who was lately in the
//! scene, as a name would: the one called does not speak it.

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use super::mentions::{Mention, Pattern};
use super::rules::Turn;
use super::{Attributor, ParagraphView, Who};

/// What a character is called by the younger of their family: a bit each.
pub(super) type Kin = u8;

const ELDER_BROTHER: Kin = 1;
const ELDER_SISTER: Kin = 1 << 1;
const FATHER: Kin = 1 << 2;
const MOTHER: Kin = 1 << 3;
const SISTER_IN_LAW: Kin = 1 << 4;
const BROTHER_IN_LAW: Kin = 1 << 5;

/// Kin words written right before a name (他哥孙少安): what the one named
/// is. Most also open a quote as a call (“哥，…”, “妈！”).
const BEFORE_NAME: &[(&str, Kin)] = &[
    ("哥", ELDER_BROTHER),
    ("哥哥", ELDER_BROTHER),
    ("大哥", ELDER_BROTHER),
    ("二哥", ELDER_BROTHER),
    ("三哥", ELDER_BROTHER),
    ("姐", ELDER_SISTER),
    ("姐姐", ELDER_SISTER),
    ("大姐", ELDER_SISTER),
    ("二姐", ELDER_SISTER),
    ("三姐", ELDER_SISTER),
    ("爸", FATHER),
    ("爸爸", FATHER),
    ("父亲", FATHER),
    ("父親", FATHER),
    ("爹", FATHER),
    ("妈", MOTHER),
    ("妈妈", MOTHER),
    ("媽", MOTHER),
    ("媽媽", MOTHER),
    ("母亲", MOTHER),
    ("母親", MOTHER),
    ("娘", MOTHER),
    ("嫂子", SISTER_IN_LAW),
    ("嫂嫂", SISTER_IN_LAW),
    ("大嫂", SISTER_IN_LAW),
    ("二嫂", SISTER_IN_LAW),
    ("姐夫", BROTHER_IN_LAW),
];

/// The words of [`BEFORE_NAME`] a quote does not open with to call
/// someone (one says “爸，…”, not “父亲，…”).
const NOT_CALLS: &[&str] = &["父亲", "父親", "母亲", "母親"];

/// Words that call kin only, never written before a name.
const CALLS_ONLY: &[(&str, Kin)] = &[("老爸", FATHER), ("爹爹", FATHER), ("老妈", MOTHER)];

/// Characters that may stand before a kin word that is not part of another
/// word (他哥, 她的姐姐, 你爸; not 帅哥, 老哥, 干妈, 大娘).
const POSSESSORS: &[char] = &[
    '他', '她', '你', '您', '我', '的', '己', '们', '們', '俺', '咱',
];

/// Whose kin a quote speaks of (你哥, 我姐夫, 他爸).
const OWNERS: &[char] = &['你', '您', '我', '他', '她', '咱', '俺'];

/// How many paragraphs back a call looks for the kin it names among those
/// who spoke or were spoken to…
const SCENE_PARAGRAPHS: usize = 12;

/// … and among those the narration names.
const NAMED_PARAGRAPHS: usize = 4;

/// Longest name looked for after a kin word, in bytes.
const MAX_NAME_BYTES: usize = 5 * 3;

static BEFORE_NAME_MATCHER: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasickBuilder::new()
        .match_kind(MatchKind::LeftmostLongest)
        .build(BEFORE_NAME.iter().map(|(w, _)| w))
        .expect("kin words build a matcher")
});

/// The kin word a quote opens with as a call, and what it calls.
fn call(quote: &str) -> Option<Kin> {
    let inner = quote.get(quote.chars().next()?.len_utf8()..)?;
    BEFORE_NAME
        .iter()
        .filter(|(w, _)| !NOT_CALLS.contains(w))
        .chain(CALLS_ONLY)
        .filter_map(|(w, k)| Some((inner.strip_prefix(w)?, *k)))
        .find(|(rest, _)| super::mentions::pauses(rest))
        .map(|(_, k)| k)
}

impl Attributor {
    /// Learns from the whole book which characters hold which kin word:
    /// those named right after one (他哥孙少安, 姐姐润叶), in narration or
    /// in quotes.
    pub fn with_kin(self, chapters: &[Vec<ParagraphView<'_>>]) -> Attributor {
        let mut kin = vec![0; self.names.len()];
        for p in chapters.iter().flatten().filter(|p| !p.skipped) {
            let text = p.text;
            for m in BEFORE_NAME_MATCHER.find_iter(text) {
                let free = text[..m.start()]
                    .chars()
                    .next_back()
                    .is_none_or(|c| POSSESSORS.contains(&c) || !crate::text::decode::is_han(c));
                if !free {
                    continue;
                }
                let mut end = (m.end() + MAX_NAME_BYTES).min(text.len());
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                let Some(named) = self.matcher.at_start(&text[m.end()..end]) else {
                    continue;
                };
                if let Pattern::Name(c) = self.patterns[named.pattern] {
                    kin[c] |= BEFORE_NAME[m.pattern().as_usize()].1;
                }
            }
        }
        tracing::debug!(
            kin = ?self
                .names
                .iter()
                .zip(&kin)
                .filter(|(_, k)| **k != 0)
                .collect::<Vec<_>>(),
            "kin found before names"
        );
        Attributor { kin, ..self }
    }

    /// The character a quote opening with a kin word calls (“姐姐！” of
    /// paragraph `i`): the one holding that word who spoke or was spoken to
    /// lately, or whom the narration just named, when only one did.
    pub(super) fn kin_vocative(
        &self,
        quote: &str,
        i: usize,
        mentions: &[Vec<Mention>],
        turns: &[Turn],
    ) -> Option<Who> {
        if self.kin.iter().all(|k| *k == 0) {
            return None;
        }
        self.kin_holder(call(quote)?, i, mentions, turns)
    }

    /// The kin a quote of paragraph `i` speaks of as someone's (“你哥一走，…”,
    /// “我姐夫是个好人”): the holders of those words lately in the scene,
    /// who are not the ones speaking.
    pub(super) fn kin_spoken_of(
        &self,
        quote: &str,
        i: usize,
        mentions: &[Vec<Mention>],
        turns: &[Turn],
    ) -> Vec<Who> {
        if self.kin.iter().all(|k| *k == 0) {
            return Vec::new();
        }
        BEFORE_NAME_MATCHER
            .find_iter(quote)
            .filter(|m| {
                quote[..m.start()]
                    .chars()
                    .next_back()
                    .is_some_and(|c| OWNERS.contains(&c))
                    // 我哥们, 你哥儿俩: friends, brothers together.
                    && !quote[m.end()..].starts_with(['们', '們', '儿', '兒', '俩', '倆'])
            })
            .filter_map(|m| {
                self.kin_holder(BEFORE_NAME[m.pattern().as_usize()].1, i, mentions, turns)
            })
            .collect()
    }

    /// The one holding `wanted` who spoke or was spoken to lately before
    /// paragraph `i`, or whom the narration just named, when only one did.
    fn kin_holder(
        &self,
        wanted: Kin,
        i: usize,
        mentions: &[Vec<Mention>],
        turns: &[Turn],
    ) -> Option<Who> {
        let holds = |w: &Who| matches!(w, Who::Character(c) if self.kin[*c] & wanted != 0);
        let from = i.saturating_sub(SCENE_PARAGRAPHS);
        let mut held = turns
            .iter()
            .rev()
            .take_while(|t| t.paragraph >= from)
            .flat_map(|t| [t.speaker, t.addressee])
            .flatten()
            .chain(
                mentions[i.saturating_sub(NAMED_PARAGRAPHS)..i]
                    .iter()
                    .flatten()
                    .filter_map(|m| m.who),
            )
            .filter(holds);
        let first = held.next()?;
        // Two of the scene hold the word (two brothers, each 哥 to a
        // younger one): the call does not say which.
        held.all(|w| w == first).then_some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::cast::Gender;
    use crate::text::speaker::test_support::{test_cast, test_spans, test_views};

    /// The speaker of each quote of `lines` (one chapter) with `cast`, the
    /// kin read from the lines themselves.
    fn speakers(names: &[&str], lines: &[&str]) -> Vec<Option<String>> {
        let cast = test_cast(names, Gender::Male);
        let spans = test_spans(lines);
        let views = test_views(lines, &spans);
        let a = Attributor::new(&cast).with_kin(std::slice::from_ref(&views));
        a.attribute(&views)
            .iter()
            .zip(&views)
            .flat_map(|(spoken, p)| {
                spoken
                    .iter()
                    .zip(p.spans.iter())
                    .filter(|(_, s)| s.kind == crate::text::quote::SegmentKind::Dialogue)
                    .map(|(w, _)| w.who.and_then(|w| a.name(w)).map(str::to_owned))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn a_younger_brother_calls_his_brother_by_what_he_is() {
        let lines = [
            "孙少平回到家里，他哥孙少安正在院子里劈柴。",
            "孙少安抬起头，把斧头放下了。",
            "“哥，我回来了。”",
            "“回来就好。”",
        ];
        let got = speakers(&["孙少平", "孙少安"], &lines);
        assert_eq!(
            got,
            [Some("孙少平".to_owned()), Some("孙少安".to_owned())],
            "the one called 哥 does not say “哥，…”"
        );
    }

    #[test]
    fn kin_is_learned_only_before_a_name_and_not_inside_a_word() {
        let cast = test_cast(&["孙少安", "金波", "田润叶"], Gender::Unknown);
        let lines = ["他哥孙少安来了。帅哥金波也来了。姐姐田润叶没来。"];
        let spans = test_spans(&lines);
        let views = test_views(&lines, &spans);
        let a = Attributor::new(&cast).with_kin(std::slice::from_ref(&views));
        assert_eq!(a.kin, [ELDER_BROTHER, 0, ELDER_SISTER]);
    }

    #[test]
    fn kin_spoken_of_in_a_quote_are_the_holders_in_the_scene() {
        let lines = [
            "他哥孙少安出门了。孙少平坐在炕上，孙玉厚蹲在门口。",
            "“你哥一走，家里就我一个人了。”",
        ];
        let cast = test_cast(&["孙少安", "孙少平", "孙玉厚"], Gender::Male);
        let spans = test_spans(&lines);
        let views = test_views(&lines, &spans);
        let a = Attributor::new(&cast).with_kin(std::slice::from_ref(&views));
        let mentions = a.chapter_mentions(&views);
        assert_eq!(
            a.kin_spoken_of(lines[1], 1, &mentions, &[]),
            [Who::Character(0)]
        );
        // 哥们 is no brother; a kin word no one in the scene holds, no one.
        assert!(
            a.kin_spoken_of("“我哥们来了，我妈也来了。”", 1, &mentions, &[])
                .is_empty()
        );
    }

    #[test]
    fn a_call_that_two_of_the_scene_answer_to_names_no_one() {
        // Both brothers are 哥 to someone: “哥，…” does not say which.
        let lines = [
            "他哥孙少安和他二哥孙少平都在窑里。",
            "孙少安看了孙少平一眼。",
            "“哥，你说呢？”",
        ];
        let cast = test_cast(&["孙少安", "孙少平"], Gender::Male);
        let spans = test_spans(&lines);
        let views = test_views(&lines, &spans);
        let a = Attributor::new(&cast).with_kin(std::slice::from_ref(&views));
        let mentions = a.chapter_mentions(&views);
        assert_eq!(a.kin_vocative("“哥，你说呢？”", 2, &mentions, &[]), None);
    }

    #[test]
    fn a_quote_opening_with_a_kin_word_calls_that_kin() {
        assert_eq!(call("“姐姐！”"), Some(ELDER_SISTER));
        assert_eq!(call("“哥，你听我说。”"), Some(ELDER_BROTHER));
        assert_eq!(call("「爹，我回來了。」"), Some(FATHER));
        // Not a call: the word goes on into a sentence.
        assert_eq!(call("“哥们儿来了。”"), None);
        // 妈的: a curse.
        assert_eq!(call("“妈的，又下雨。”"), None);
        assert_eq!(call("“姐姐的事得姐姐自己解决。”"), None);
    }
}
