//! Telephone calls: a paragraph that rings a phone (手机响了, 她接起电话)
//! opens a call between the one holding it and the one calling, and the
//! untagged quotes after it go back and forth between those two until the
//! narration hangs up (挂了电话). A caller the screen shows by a kin word
//! (“妈”, “二姨”, “母上”) that names nobody of the cast is someone unnamed
//! of that word's gender, so their lines get a voice of the right gender.

use super::Who;
use super::clause::is_subject;
use super::mentions::Mention;
use super::rules::Context;
use crate::text::quote::SegmentKind;

/// Words of a phone.
const PHONES: &[&str] = &["手机", "手機", "电话", "電話", "座机", "座機"];
/// A phone ringing.
const RINGS: &[&str] = &[
    "响了", "響了", "响起", "響起", "震了", "震起", "震动", "震動", "嗡嗡",
];
/// One picking up.
const PICKUPS: &[&str] = &["接起", "接通", "接听", "接聽", "划开", "劃開"];
/// The call ending.
const HANG_UPS: &[&str] = &[
    "挂了",
    "挂断",
    "挂掉",
    "掛了",
    "掛斷",
    "掛掉",
    "忙音",
    "放下手机",
    "放下手機",
    "收起手机",
    "收起手機",
];
/// Someone else taking the phone at the far end.
const HANDED_OVER: &[&str] = &[
    "换了个人",
    "換了個人",
    "换了一个人",
    "換了一個人",
    "抢过电话",
    "搶過電話",
    "抢过手机",
    "搶過手機",
    "被抢了过去",
    "被搶了過去",
];
/// After a name, a phone it owns (林知夏的手机).
const OWNED_PHONES: &[&str] = &["的手机", "的手機", "的电话", "的電話", "的座机", "的座機"];
/// After a name the narration gives for the caller (周桂芳从来不打电话, 周桂芳打来的).
const CALLING: &[&str] = &["打电话", "打電話", "打来", "打來", "来电", "來電"];

/// Kin words a screen or the narration may name a caller by, with the
/// gender slot each says (0 a man, 1 a woman).
const KIN_CALLERS: &[(&str, usize)] = &[
    ("妈妈", 1),
    ("媽媽", 1),
    ("老妈", 1),
    ("老媽", 1),
    ("母上", 1),
    ("妈", 1),
    ("媽", 1),
    ("娘", 1),
    ("奶奶", 1),
    ("外婆", 1),
    ("姥姥", 1),
    ("爸爸", 0),
    ("老爸", 0),
    ("父上", 0),
    ("爸", 0),
    ("爹", 0),
    ("爷爷", 0),
    ("爺爺", 0),
    ("外公", 0),
    ("姥爷", 0),
    ("姥爺", 0),
];
/// Kin after a rank (二姨, 大舅, 小姑): the gender slot each says.
const RANKED_KIN: &[(char, usize)] = &[
    ('姨', 1),
    ('姑', 1),
    ('婶', 1),
    ('嬸', 1),
    ('姐', 1),
    ('舅', 0),
    ('叔', 0),
    ('伯', 0),
    ('哥', 0),
];
const RANKS: &str = "大二三四五六七八九小";

/// Words that keep narration on the call (电话那头, 她握着手机, 声音).
const ON_THE_PHONE: &[&str] = &[
    "手机", "手機", "电话", "電話", "听筒", "聽筒", "那头", "那頭", "那边", "那邊", "声音", "聲音",
    "屏幕",
];
/// Narration at least this long (in characters) that says nothing of the
/// phone has moved on from the call.
const MIN_MOVING_CHARS: usize = 15;

/// Longest word a screen shows in quote marks (“母上”, “蔓姐”), in characters.
const MAX_SHOWN_CHARS: usize = 6;

/// Paragraphs a call lasts at most without hanging up.
const MAX_CALL_PARAGRAPHS: usize = 12;
/// Paragraphs after a ring in which someone may still pick up.
const MAX_RING_PARAGRAPHS: usize = 3;
/// Longest stretch after a caller's name that may say they call, in bytes.
const MAX_CALLING_BYTES: usize = 8 * 3;

/// The gender slot of a kin word a caller goes by (妈 → 1, 二舅 → 0).
fn kin_caller(word: &str) -> Option<usize> {
    if let Some(&(_, slot)) = KIN_CALLERS.iter().find(|(w, _)| *w == word) {
        return Some(slot);
    }
    let mut chars = word.chars();
    let (Some(rank), Some(kin), None) = (chars.next(), chars.next(), chars.next()) else {
        return None;
    };
    RANKS
        .contains(rank)
        .then(|| RANKED_KIN.iter().find(|(k, _)| *k == kin).map(|&(_, s)| s))
        .flatten()
}

/// True when a quote opens by calling someone by a kin word (“喂，妈……”,
/// “妈？”): the one holding the phone speaks to a kin caller.
fn opening_kin(quote: &str) -> bool {
    opening_kin_slot(quote).is_some()
}

/// The gender slot of the kin word a quote opens by calling (“妈，我还在
/// 店里……” → 1).
fn opening_kin_slot(quote: &str) -> Option<usize> {
    let inner = quote
        .trim_start_matches(['“', '「', '『', '"'])
        .trim_start_matches("喂，")
        .trim_start_matches("喂,");
    let end = inner
        .char_indices()
        .take(4)
        .find(|(_, c)| !crate::text::decode::is_han(*c))
        .map(|(at, _)| at);
    end.and_then(|end| kin_caller(&inner[..end]))
}

/// The kin word a screen or the narration shows for a caller (屏幕上跳出
/// “二姨”两个字, 来电显示上那个“妈”字, 是她妈): the word, one
/// [`kin_caller`] knows.
fn shown_kin_word(text: &str) -> Option<&str> {
    let quoted = text.match_indices(['“', '「']).find_map(|(at, open)| {
        let inner = &text[at + open.len()..];
        let inner = &inner[..inner.find(['”', '」'])?];
        kin_caller(inner).map(|_| inner)
    });
    quoted.or_else(|| {
        // 是她妈。/ 是我爸打来的
        text.match_indices('是').find_map(|(at, _)| {
            let rest = text[at + '是'.len_utf8()..].trim_start_matches(['她', '他', '我']);
            let end = rest
                .char_indices()
                .take(3)
                .find(|(_, c)| !crate::text::decode::is_han(*c) || *c == '打')
                .map(|(at, _)| at)?;
            kin_caller(&rest[..end]).map(|_| &rest[..end])
        })
    })
}

/// A call going on: who holds the phone (`None`: no one picked up yet),
/// who called (`None`: not known yet), who spoke last of the two, and how
/// many paragraphs it may go on.
#[derive(Debug, Clone, Copy)]
pub(super) struct Call {
    holder: Option<Who>,
    caller: Option<Who>,
    last: Option<Who>,
    left: usize,
}

impl Call {
    /// The call paragraph `i` opens in its narration before any quote
    /// (手机响了, 她接起电话), with its holder when the paragraph names one
    /// and its caller as the screen or the narration shows them.
    pub(super) fn opened(ctx: &Context<'_, '_>, i: usize) -> Option<Call> {
        let p = &ctx.paragraphs[i];
        let end = p
            .spans
            .iter()
            .find(|s| {
                s.kind == SegmentKind::Dialogue
                    && s.text(p.text).chars().nth(MAX_SHOWN_CHARS + 2).is_some()
            })
            .map_or(p.text.len(), |s| s.start);
        let text = &p.text[..end];
        // The characters every word of PHONES ends with, by byte search.
        static ENDS: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 4]> =
            std::sync::LazyLock::new(|| ["机", "機", "话", "話"].map(memchr::memmem::Finder::new));
        if !ENDS.iter().any(|f| f.find(text.as_bytes()).is_some())
            || !PHONES.iter().any(|w| text.contains(w))
            || !(RINGS.iter().any(|w| text.contains(w)) || PICKUPS.iter().any(|w| text.contains(w)))
        {
            return None;
        }
        let holder = holder_in(ctx, i, end);
        let named_caller = || {
            ctx.mentions_in(i, 0, end)
                .iter()
                .filter(|m| matches!(m.who, Some(Who::Character(_))) && m.who != holder)
                .find(|m| {
                    if m.end > text.len() {
                        return false;
                    }
                    let mut to = (m.end + MAX_CALLING_BYTES).min(text.len());
                    while !text.is_char_boundary(to) {
                        to -= 1;
                    }
                    CALLING.iter().any(|w| text[m.end..to].contains(w))
                })
                .and_then(|m| m.who)
        };
        let caller = ctx
            // What the paragraph that rings shows (not a name a photo
            // showed before it rang).
            .caller_before(i, end, 0)
            .filter(|c| Some(*c) != holder)
            .or_else(named_caller)
            // 是我妈。: the narrator's family, a character of a book told
            // in the first person.
            .or_else(|| {
                ctx.mentions_in(i, 0, end)
                    .iter()
                    .filter_map(|m| m.who)
                    .find(|w| Some(*w) != holder && ctx.attributor.is_narrators_kin(*w))
            })
            // “母上” on the screen: the narrator's mother, when she is one of
            // the characters; else someone unnamed of the word's gender.
            .or_else(|| {
                let word = shown_kin_word(text)?;
                ctx.attributor
                    .narrators_parent(word)
                    .or_else(|| kin_caller(word).map(Who::Unnamed))
            });
        Some(Call {
            holder,
            caller,
            last: None,
            left: MAX_CALL_PARAGRAPHS,
        })
    }

    /// A narration paragraph `i` while the phone rings and no one has
    /// picked up: the one who acts there picks up (她硬着头皮接起来). A call
    /// nobody picks up within a few paragraphs is over (`false`).
    pub(super) fn wait_for_holder(&mut self, ctx: &Context<'_, '_>, i: usize) -> bool {
        if self.holder.is_some() {
            return true;
        }
        self.left = self.left.saturating_sub(1);
        if MAX_CALL_PARAGRAPHS - self.left > MAX_RING_PARAGRAPHS {
            return false;
        }
        self.holder =
            holder_in(ctx, i, ctx.paragraphs[i].text.len()).filter(|h| Some(*h) != self.caller);
        true
    }

    /// True when narration `text` ends the call.
    pub(super) fn hung_up(text: &str) -> bool {
        HANG_UPS.iter().any(|w| text.contains(w))
    }

    /// The paragraph that opened the call spoke too (她换上一副温柔的嗓音：
    /// “郑哥？”): its speaker's turn, when it is one of the two — a quote
    /// of speech (`introduced` by a colon, or longer than a screen's word),
    /// not the screen's word in quote marks (屏幕上跳出两个字——“母上”).
    pub(super) fn opened_with(
        &mut self,
        speaker: Option<Who>,
        first_quote: &str,
        introduced: bool,
        vocative: Option<Who>,
    ) {
        let speech = introduced || first_quote.chars().nth(MAX_SHOWN_CHARS + 2).is_some();
        if !speech || speaker.is_none() {
            return;
        }
        // “郑哥？”: the one the holder calls is the caller; “妈，…” calls
        // someone unnamed of that word's gender, when the cast holds no one
        // the word stands for.
        if speaker == self.holder && self.caller.is_none() {
            self.caller = vocative
                .filter(|v| Some(*v) != self.holder)
                .or_else(|| opening_kin_slot(first_quote).map(Who::Unnamed));
        }
        if speaker == self.holder || speaker == self.caller {
            self.last = speaker;
        }
    }

    /// True once one of the two has spoken on the call.
    pub(super) fn started(&self) -> bool {
        self.last.is_some()
    }

    /// True when a paragraph all of narration moves away from the call: a
    /// few sentences that say nothing of the phone or the voice in it
    /// (她下了楼，快递小哥抱着个保温袋等在闸机口。), not a short beat (她沉默了。).
    pub(super) fn moved_on(text: &str) -> bool {
        text.chars().nth(MIN_MOVING_CHARS).is_some()
            && !ON_THE_PHONE.iter().any(|w| text.contains(w))
    }

    /// The speaker of a paragraph of the call (`decided`: what the rules
    /// said; `tagged`: a tag named it; `far_end`: the narration around the
    /// quote opens with the far end of the line): the holder or the caller,
    /// by what the quote calls the other and by turns; `None` when the call
    /// is over.
    pub(super) fn speaker(
        &mut self,
        first_quote: &str,
        vocative: Option<Who>,
        decided: Option<Who>,
        tagged: bool,
        far_end: bool,
    ) -> Option<Option<Who>> {
        let holder = self.holder?;
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // `电话那头的声音大得连陆远都听得见：`: the caller, whoever the
        // sentence names after the far end.
        if far_end && let Some(caller) = self.caller {
            self.last = Some(caller);
            return Some(Some(caller));
        }
        // 她换上一副温柔的嗓音：“郑总，…”: the one the holder calls.
        if self.caller.is_none()
            && let Some(v) = vocative.filter(|v| *v != holder)
        {
            self.caller = Some(v);
        }
        if tagged {
            match decided {
                // A tag naming the caller twice running is the holder's
                // pronoun read as the caller's (是她妈。/ “…” / 她说完…).
                Some(who) if Some(who) == self.caller && self.last == self.caller => {
                    self.last = Some(holder);
                    return Some(Some(holder));
                }
                Some(who) if who == holder || Some(who) == self.caller => {}
                // One the call had not named yet: the caller (我是高志远).
                Some(who) if self.caller.is_none() => self.caller = Some(who),
                // Someone else speaks in the room, or takes the phone.
                _ => {
                    self.left = 0;
                    return None;
                }
            }
            self.last = decided;
            return Some(decided);
        }
        let calls_caller = vocative.is_some() && vocative == self.caller;
        let opens_with_hello = first_quote
            .trim_start_matches(['“', '「', '『', '"'])
            .starts_with('喂');
        // The caller's turn with the caller not known: what the rules said,
        // unless that is the holder.
        let caller = self
            .caller
            .or(decided.filter(|d| *d != holder && self.last != Some(*d)));
        let who = if vocative == Some(holder) {
            caller
        } else if calls_caller || opens_with_hello || opening_kin(first_quote) {
            Some(holder)
        } else if self.last == Some(holder) {
            caller
        } else {
            Some(holder)
        };
        // The one who took the phone at the far end goes on as its caller.
        if self.caller.is_none() && who.is_some() && who == caller {
            self.caller = who;
        }
        self.last = who;
        Some(who)
    }

    /// Narration `text` during the call: when someone else takes the phone
    /// at the far end (换了个人, 电话被抢了过去), the caller is not known
    /// any more, and the far end speaks next.
    pub(super) fn hand_over(&mut self, text: &str) {
        if self.holder.is_some() && HANDED_OVER.iter().any(|w| text.contains(w)) {
            self.caller = None;
            self.last = self.holder;
        }
    }
}

/// Who holds the phone in paragraph `i` up to byte `end`: the one whose
/// phone it is (林知夏的手机响了), else the one picking up (她接起电话),
/// else the subject of the paragraph's first clause with a person in it
/// (苏安点点头，正要起身，手机响了).
fn holder_in(ctx: &Context<'_, '_>, i: usize, end: usize) -> Option<Who> {
    let text = &ctx.paragraphs[i].text[..end];
    let mentions = ctx.mentions_in(i, 0, end);
    let person = |m: &&Mention| matches!(m.who, Some(Who::Character(_) | Who::Someone(_)));
    let owner = mentions.iter().filter(person).find(|m| {
        OWNED_PHONES
            .iter()
            .any(|w| text.get(m.end..).is_some_and(|t| t.starts_with(w)))
    });
    let picker = || {
        let at = PICKUPS.iter().filter_map(|w| text.find(w)).min()?;
        mentions
            .iter()
            .filter(person)
            .rfind(|m| m.end <= at && is_subject(text, m, 0))
    };
    let subject = || {
        mentions
            .iter()
            .filter(person)
            .find(|m| is_subject(text, m, 0))
    };
    owner.or_else(picker).or_else(subject)?.who
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_named_before_any_width_of_text_is_found_without_panicking() {
        use crate::text::cast::Gender;
        use crate::text::speaker::test_support::{test_cast, with_context};
        let cast = test_cast(&["苏安", "周桂芳"], Gender::Female);
        // ASCII after the name puts byte 24 inside a character.
        for line in [
            "苏安的手机响了。周桂芳ab从来不打电话，真的。",
            "苏安的手机响了。周桂芳a打来的。",
            "苏安的手机响了。周桂芳",
        ] {
            let call = with_context(&cast, &[line], |ctx, _| Call::opened(ctx, 0)).expect(line);
            assert_eq!(call.holder, Some(Who::Character(0)), "{line}");
        }
    }

    #[test]
    fn kin_callers_say_a_gender() {
        assert_eq!(kin_caller("妈"), Some(1));
        assert_eq!(kin_caller("母上"), Some(1));
        assert_eq!(kin_caller("二姨"), Some(1));
        assert_eq!(kin_caller("大舅"), Some(0));
        assert_eq!(kin_caller("老爸"), Some(0));
        assert_eq!(kin_caller("婉清"), None);
        assert_eq!(kin_caller("二"), None);
    }

    #[test]
    fn a_screen_or_the_narration_shows_a_kin_caller() {
        assert_eq!(
            shown_kin_word("手机在桌上震起来，屏幕上跳出“二姨”两个字。"),
            Some("二姨")
        );
        assert_eq!(shown_kin_word("手机响了。是她妈。这么晚了"), Some("妈"));
        assert_eq!(shown_kin_word("手机响了，是我爸打来的。"), Some("爸"));
        assert_eq!(shown_kin_word("手机响了，是个陌生号码。"), None);
        assert!(opening_kin("“喂，妈……”"));
        assert!(opening_kin("“妈？”"));
        assert!(!opening_kin("“妈妈的事以后再说。”"));
    }
}
