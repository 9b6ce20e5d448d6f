//! Who is talking: rules over the context of each quote.
//!
//! Mentions of characters (cast names and aliases, 他/她 resolved to the
//! latest character of that gender, crowds such as 众人) are found in the
//! narration. A quote takes its speaker, strongest rule first, from
//! - the narration before it in the paragraph (`毛仲說：「…」`, `毛仲：「…」`),
//! - the narration after it (`「…」毛仲說。`, between split quotes),
//! - the previous paragraph ending in a colon, or the next paragraph opening
//!   with a speech verb (`“想我了吗？”` / `她问。`),
//! - the character acting right after the quote (next paragraph),
//! - turn-taking in a back-and-forth exchange (the one addressed by name or
//!   the addressee of the last turn, else the speaker before the last one,
//!   else the character last mentioned who is not the last speaker),
//! - the character acting in the sentence just before the quote;
//!
//! the first three are tags. A quote no tag names is given by `scorer`,
//! which weighs what the other rules (and a few more signs) say of each
//! candidate.
//!
//! 他/她 resolve to the latest subject of that gender, skipping the subject
//! of their own clause (老周问他); one with no antecedent in the chapter is
//! "someone" (no name in the script, but still a party to turn-taking).
//! Without a cast file, [`discover`] finds the names and [`guess_genders`]
//! their genders.
//!
//! The parts:
//! - `mentions`: the cast matcher (names, aliases, crowds, 他/她) and the
//!   mentions it finds in the narration, with 他/她 resolved;
//! - `matcher`: the leftmost-longest word matcher under it, and under the
//!   name counts of `discovery` and `gender` (built per book in
//!   microseconds, where an automaton took a tenth of the split);
//! - `rules`: the rules that give one paragraph's quotes their speaker,
//!   and turn-taking;
//! - `scorer`: the candidates of a quote no tag names, their features and
//!   the weights fitted on WP2021 train;
//! - `clause`: clause and sentence bounds, and whether a mention is the
//!   subject of its clause;
//! - `words`: the word tables of attribution (crowds, connectives, speech
//!   verbs) and speech-verb detection;
//! - `names`: the word tables of what a name is and is not (surnames,
//!   common words, role nouns);
//! - `kin`: kin called by what they are (他哥孙少安 → “哥，…” calls him),
//!   learned from the kin words written right before names;
//! - `discovery`: finding the names of a book without a cast file;
//! - `gender`: guessing the genders of the names found.

mod call;
mod clause;
mod discovery;
mod gender;
mod kin;
mod matcher;
mod mentions;
mod names;
mod rules;
mod scorer;
mod words;

use super::cast::{Cast, Gender};
use super::quote::{SegmentKind, SpanRange};

pub use discovery::{
    Discovered, NARRATOR, add_narrator, discover, discover_told, first_person_tags,
};
pub use gender::{GenderEvidence, GenderGuess, guess_genders};
pub(crate) use names::is_surname;
pub use scorer::TagStyle;

use call::Call;
use mentions::Pattern;
use rules::{Context, Decision, Turn, continues_speech};
use words::{CROWDS, introduces_thought};

/// A speaker: a character of the cast or a crowd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Who {
    Character(usize),
    Crowd(usize),
    /// 他 (0) or 她 (1) that names nobody in the cast: someone, unnamed.
    Someone(usize),
    /// A man (0) or a woman (1) the narration names by a word, not a name
    /// (她父亲, 那姑娘): someone unnamed whose gender the word says.
    Unnamed(usize),
}

/// The gender of someone unnamed (他 0, 她 1): a tag such as `她父亲说：`
/// or a pronoun nobody of the cast stands for.
pub fn unnamed_gender(who: Who) -> Option<Gender> {
    match who {
        Who::Someone(0) | Who::Unnamed(0) => Some(Gender::Male),
        Who::Someone(1) | Who::Unnamed(1) => Some(Gender::Female),
        _ => None,
    }
}

/// Who speaks one span.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spoken {
    pub who: Option<Who>,
    /// The speaker is a guess among characters of both genders: a voice of
    /// neither gender reads the quote.
    pub gender_unsure: bool,
}

/// A paragraph as the attributor sees it.
#[derive(Debug, Clone, Copy)]
pub struct ParagraphView<'a> {
    pub text: &'a str,
    pub spans: &'a [SpanRange],
    /// Skipped lines (adverts) take no part.
    pub skipped: bool,
}

/// Finds speakers with a fixed cast.
#[derive(Debug, Clone)]
pub struct Attributor {
    matcher: matcher::WordMatcher,
    patterns: Vec<Pattern>,
    names: Vec<String>,
    genders: Vec<Gender>,
    /// Given names that call one character of the cast in a vocative
    /// (知夏 of 林知夏 in “知夏姐，…”).
    given_names: rustc_hash::FxHashMap<String, usize>,
    /// Surnames of one character of the cast only (顾 of 顾明远 in “老顾。”).
    surnames: rustc_hash::FxHashMap<char, usize>,
    /// Every character of the names and aliases of the cast but the narrator.
    claimed: rustc_hash::FxHashSet<char>,
    /// The narrator of a book told in the first person, when the cast has one.
    narrator: Option<usize>,
    /// What each character is called by the younger of their family (see
    /// [`kin`]); none until [`Attributor::with_kin`] reads the book.
    kin: Vec<kin::Kin>,
    /// Where the book puts its tags (which weights score a quote no tag names).
    style: TagStyle,
    /// Characters whose name is a word for a role (妇女, 书记): one brought
    /// into a clause (有个妇女) may be them.
    role_named: Vec<bool>,
}

impl Attributor {
    /// Builds the matcher for a cast (names and aliases of two or more
    /// characters, one-character aliases only right before a speech verb).
    pub fn new(cast: &Cast) -> Attributor {
        let (matcher, patterns) = mentions::cast_matcher(cast);
        Attributor {
            matcher,
            patterns,
            names: cast.characters.iter().map(|c| c.name.clone()).collect(),
            genders: cast.characters.iter().map(|c| c.gender).collect(),
            given_names: mentions::given_names(cast),
            surnames: mentions::unique_surnames(cast).into_iter().collect(),
            claimed: cast
                .characters
                .iter()
                .filter(|c| c.name != NARRATOR)
                .flat_map(|c| std::iter::once(&c.name).chain(&c.aliases))
                .flat_map(|n| n.chars())
                .collect(),
            narrator: cast.characters.iter().position(|c| c.name == NARRATOR),
            kin: vec![0; cast.characters.len()],
            style: TagStyle::Apart,
            role_named: cast
                .characters
                .iter()
                .map(|c| names::is_role_word(&c.name))
                .collect(),
        }
    }

    /// One of the narrator's family, as a book told in the first person
    /// calls them (我妈, 我爸).
    pub(super) fn is_narrators_kin(&self, who: Who) -> bool {
        matches!(who, Who::Character(k) if self.names[k].len() > NARRATOR.len()
            && self.names[k].starts_with(NARRATOR))
    }

    /// The narrator's mother or father, when the cast has them (我妈, 我爸),
    /// for what a screen or the narrator calls them (母上, 妈, 老爸).
    pub(super) fn narrators_parent(&self, word: &str) -> Option<Who> {
        const MOTHER: &[&str] = &[
            "妈", "妈妈", "老妈", "母上", "母亲", "娘", "媽", "媽媽", "老媽", "母親",
        ];
        const FATHER: &[&str] = &["爸", "爸爸", "老爸", "父亲", "爹", "老爹", "父親"];
        let names: &[&str] = if MOTHER.contains(&word) {
            &["我妈", "我媽", "我娘"]
        } else if FATHER.contains(&word) {
            &["我爸", "我爹"]
        } else {
            return None;
        };
        self.names
            .iter()
            .position(|n| names.contains(&n.as_str()))
            .map(Who::Character)
    }

    /// The narrator of a book told in the first person, when the cast has one.
    pub(super) fn narrator(&self) -> Option<Who> {
        self.narrator.map(Who::Character)
    }

    /// The same, for a book whose tags are placed as `style` says.
    pub fn with_style(self, style: TagStyle) -> Attributor {
        Attributor { style, ..self }
    }

    /// The name a speaker goes by in the script (none for someone unnamed).
    pub fn name(&self, who: Who) -> Option<&str> {
        match who {
            Who::Character(i) => Some(&self.names[i]),
            Who::Crowd(i) => Some(CROWDS[i]),
            Who::Someone(_) | Who::Unnamed(_) => None,
        }
    }

    /// Speakers of one chapter: for each paragraph, one entry per span
    /// (no one for narration and for quotes nobody can be found for).
    pub fn attribute(&self, paragraphs: &[ParagraphView<'_>]) -> Vec<Vec<Spoken>> {
        let mentions = self.chapter_mentions(paragraphs);
        // Everyone the chapter's narration names, in the order first named.
        let mut named: Vec<Who> = Vec::new();
        let mut seen = vec![false; self.names.len()];
        for m in mentions.iter().flatten() {
            if let Some(who @ Who::Character(c)) = m.who
                && !std::mem::replace(&mut seen[c], true)
            {
                named.push(who);
            }
        }
        let mut out: Vec<Vec<Spoken>> = paragraphs
            .iter()
            .map(|p| vec![Spoken::default(); p.spans.len()])
            .collect();
        let mut turns: Vec<Turn> = Vec::new();
        // The characters who spoke a turn, each once, in the order they
        // first did (what every quote no tag names asks of all the turns).
        let mut spoke: Vec<Who> = Vec::new();
        let mut has_spoken = vec![false; self.names.len()];
        let mut note_speaker = |who: Option<Who>, spoke: &mut Vec<Who>| {
            if let Some(w @ Who::Character(c)) = who {
                if c >= has_spoken.len() {
                    has_spoken.resize(c + 1, false);
                }
                if !std::mem::replace(&mut has_spoken[c], true) {
                    spoke.push(w);
                }
            }
        };
        let mut exchange: Vec<Exchanged> = Vec::new();
        let narrator = self.narrator();
        // A telephone call going on.
        let mut call: Option<Call> = None;
        let far_end_chars = vec![std::cell::Cell::new(None); paragraphs.len()];
        // Index of the previous paragraph that takes part (not skipped).
        let mut previous: Option<usize> = None;
        let mut continued: Option<Spoken> = None;
        // The previous paragraph is a turn, or the tag (`她问。`) of the turn before it.
        let mut adjacent = false;
        for (i, p) in paragraphs.iter().enumerate() {
            if p.skipped {
                continue;
            }
            let ctx = Context {
                attributor: self,
                paragraphs,
                mentions: &mentions,
                named: &named,
                far_end_chars: &far_end_chars,
            };
            let has_dialogue = p.spans.iter().any(|s| s.kind == SegmentKind::Dialogue);
            if !has_dialogue {
                // Hung up, or gone on to something else once the two spoke
                // (not while it rings: 我下意识坐直了身子。…).
                let over = call.is_some_and(|c| {
                    Call::hung_up(p.text) || (c.started() && Call::moved_on(p.text))
                });
                if over {
                    call = None;
                } else if let Some(opened) = Call::opened(&ctx, i) {
                    call = Some(opened);
                } else if let Some(on) = call.as_mut()
                    && !on.wait_for_holder(&ctx, i)
                {
                    call = None;
                } else if let Some(on) = call.as_mut() {
                    on.hand_over(p.text);
                }
                let last_speaker = turns.last().and_then(|t| t.speaker);
                // 沈知微把情况简单说了一遍。: a turn told, not quoted.
                if let Some(who) = ctx.narrated_turn(i) {
                    turns.push(Turn {
                        paragraph: i,
                        speaker: Some(who),
                        addressee: last_speaker.filter(|l| *l != who),
                        vocative: None,
                    });
                    note_speaker(Some(who), &mut spoke);
                    adjacent = true;
                    previous = Some(i);
                    continued = None;
                    continue;
                }
                adjacent = adjacent && (ctx.is_tag(i) || ctx.is_beat_of(i, last_speaker));
                previous = Some(i);
                continued = None;
                continue;
            }
            let prev_is_turn = adjacent;
            let opens_continued = p.spans.first().is_some_and(|s| {
                s.kind == SegmentKind::Dialogue
                    && previous.is_some_and(|j| continues_speech(&paragraphs[j], s))
            });
            // A call this paragraph opens (她接起电话：“喂？”, 屏幕上跳出两个字
            // ——“母上”。): its own quotes are the rules' to give.
            let opened = Call::opened(&ctx, i);
            let opens_call = opened.is_some();
            if opened.is_some() {
                call = opened;
            }
            // The paragraph's first quote, and the one it calls by name.
            let first_at = p.spans.iter().position(|s| s.kind == SegmentKind::Dialogue);
            let first = first_at.map_or("", |k| p.spans[k].text(p.text));
            // “你是……” / “顾屿。”: one who answers who they are speaks, and
            // calls no one.
            let answered = previous
                .filter(|_| prev_is_turn && first_at == Some(0))
                .and_then(|j| {
                    let q = &paragraphs[j];
                    q.spans
                        .iter()
                        .rfind(|s| s.kind == SegmentKind::Dialogue)
                        .map(|s| s.text(q.text))
                })
                .and_then(|asked| self.named_in_answer(asked, first));
            let vocative = first_at.filter(|_| answered.is_none()).and_then(|_| {
                self.vocative(first)
                    .or_else(|| self.kin_vocative(first, i, &mentions, &turns))
            });
            let Decision {
                mut speaker,
                mut addressee,
                mut own,
                mut gender_unsure,
                tagged,
            } = match (opens_continued, continued) {
                (true, Some(spoken)) => Decision {
                    speaker: spoken.who,
                    addressee: turns.last().and_then(|t| t.addressee),
                    own: Vec::new(),
                    gender_unsure: spoken.gender_unsure,
                    tagged: true,
                },
                _ => ctx.decide(i, previous, prev_is_turn, &turns, &spoke, vocative),
            };
            if let Some(who) = answered.filter(|_| !tagged) {
                speaker = Some(who);
                gender_unsure = false;
                addressee = turns
                    .last()
                    .and_then(|t| t.speaker)
                    .filter(|asker| *asker != who);
            }
            // On the phone: the holder and the caller take turns.
            let on_call = call.is_some();
            if let Some(on) = call.as_mut().filter(|_| opens_call) {
                let introduced = first_at.filter(|&k| k > 0).is_some_and(|k| {
                    p.spans[k - 1]
                        .text(p.text)
                        .trim_end()
                        .ends_with(['：', ':'])
                });
                on.opened_with(speaker, first, introduced, vocative);
            } else if let Some(on) = call.as_mut() {
                let far_end = first_at.is_some_and(|k| ctx.far_end_speaks(i, k));
                match on.speaker(first, vocative, speaker, tagged, far_end) {
                    Some(who) => {
                        gender_unsure &= who == speaker;
                        speaker = who;
                        // The one the sentence names after the far end
                        // only hears (连陆远都听得见).
                        if far_end {
                            own.retain(|(k, _)| Some(*k) != first_at);
                        }
                    }
                    None => call = None,
                }
                if p.spans
                    .iter()
                    .any(|s| s.kind == SegmentKind::Narration && Call::hung_up(s.text(p.text)))
                {
                    call = None;
                }
            }
            for (k, s) in p.spans.iter().enumerate() {
                if s.kind == SegmentKind::Dialogue {
                    // `own` is in span order.
                    out[i][k] = match own.binary_search_by_key(&k, |(at, _)| *at) {
                        Ok(found) => Spoken {
                            who: Some(own[found].1),
                            gender_unsure: false,
                        },
                        Err(_) => Spoken {
                            who: speaker,
                            gender_unsure,
                        },
                    };
                }
            }
            continued = match p.spans.last() {
                Some(last) if last.kind == SegmentKind::Dialogue && !last.closed => {
                    Some(out[i][p.spans.len() - 1]).filter(|s| s.who.is_some())
                }
                _ => None,
            };
            // The first quote's speaker, named by a tag or not.
            let (first_speaker, first_tagged) = match own.iter().find(|(k, _)| Some(*k) == first_at)
            {
                Some(&(_, who)) => (Some(who), true),
                None => (speaker, tagged),
            };
            exchange.push(Exchanged {
                paragraph: i,
                speaker: first_speaker,
                tagged: first_tagged,
                bare: !on_call
                    && !opens_continued
                    && p.spans.iter().all(|s| s.kind == SegmentKind::Dialogue),
            });
            // In a book told in the first person, one who speaks to no one
            // named speaks to the narrator, who is in every scene.
            let addressee = addressee.or(narrator.filter(|n| speaker.is_some_and(|s| s != *n)));
            previous = Some(i);
            // 她心想：“果然是你。”: a thought alone in its paragraph is no
            // turn of the conversation (the next quote does not answer it).
            let thought = p
                .spans
                .iter()
                .filter(|s| s.kind == SegmentKind::Dialogue)
                .count()
                == 1
                && first_at
                    .filter(|&k| k > 0)
                    .is_some_and(|k| introduces_thought(p.spans[k - 1].text(p.text)));
            if thought {
                continue;
            }
            turns.push(Turn {
                paragraph: i,
                speaker,
                addressee,
                vocative,
            });
            note_speaker(speaker, &mut spoke);
            adjacent = true;
        }
        // Where tags stand apart (`玉亭兴奋地说，` after his own bare quote),
        // one speaker often takes two paragraphs running.
        if self.style == TagStyle::Inline {
            reanchor_exchanges(&exchange, &mut out);
        }
        // A chapter that writes no 她 writes 他 for women too (classical
        // texts): a 他 nobody was named for may be a woman, read by a voice
        // of neither (not 他父亲: the word says a man).
        let someone = |s: &Spoken| s.who == Some(Who::Someone(0));
        if out.iter().flatten().any(someone) && !paragraphs.iter().any(|p| p.text.contains('她')) {
            for s in out.iter_mut().flatten() {
                s.gender_unsure |= someone(s);
            }
        }
        out
    }
}

/// A paragraph with quotes, as the attribution left it.
struct Exchanged {
    paragraph: usize,
    /// The speaker of its first quote.
    speaker: Option<Who>,
    /// A tag named that speaker.
    tagged: bool,
    /// All quotes (no narration), not on a call, not a speech going on.
    bare: bool,
}

/// Bare quotes that alternate between two characters (A, B, A, B) after
/// narration, where the quote right after them is tagged as the last one's
/// speaker: in a book that puts its tags in the quotes' paragraphs, one
/// speaker does not take two paragraphs running, so the tag
/// anchors the exchange and the guess that opened it was the wrong way
/// round (…一眼就看见楼下停着辆熟悉的车。/ “你怎么来了？” / “…” / “…” /
/// “我怕明天早上堵车。” / 苏安笑了：“…”).
fn reanchor_exchanges(exchange: &[Exchanged], out: &mut [Vec<Spoken>]) {
    let character = |w: Option<Who>| w.filter(|w| matches!(w, Who::Character(_)));
    for (t, tag) in exchange.iter().enumerate() {
        let Some(x) = character(tag.speaker).filter(|_| tag.tagged) else {
            continue;
        };
        let follows = |a: usize, b: usize| exchange[a].paragraph + 1 == exchange[b].paragraph;
        // The bare quotes right before the tag, alternating, the last one
        // given to the tag's speaker.
        let mut start = t;
        let mut other = None;
        while start > 0
            && follows(start - 1, start)
            && exchange[start - 1].bare
            && !exchange[start - 1].tagged
        {
            let who = character(exchange[start - 1].speaker);
            let want = if (t - start) % 2 == 0 {
                Some(x)
            } else {
                other.or(who.filter(|w| *w != x))
            };
            if who.is_none() || who != want {
                break;
            }
            other = other.or(who.filter(|w| *w != x));
            start -= 1;
        }
        let Some(y) = other else { continue };
        // Opened after narration (not anchored by a turn before it), and
        // at least two quotes long.
        if t - start < 2 || (start > 0 && follows(start - 1, start)) {
            continue;
        }
        for e in &exchange[start..t] {
            for s in out[e.paragraph].iter_mut() {
                if s.who == Some(x) {
                    s.who = Some(y);
                } else if s.who == Some(y) {
                    s.who = Some(x);
                }
            }
        }
    }
}

/// Paragraphs scanned for quotes, as the tests of this module and its
/// parts build them.
#[cfg(test)]
pub(crate) mod test_support {
    use super::rules::Context;
    use super::{Attributor, ParagraphView};
    use crate::text::cast::{Cast, Character, Gender};
    use crate::text::quote::{SpanRange, scan_paragraph};

    /// A cast of `names`, all of `gender`, with no aliases.
    pub(super) fn test_cast(names: &[&str], gender: Gender) -> Cast {
        Cast {
            characters: names
                .iter()
                .map(|n| Character {
                    name: (*n).into(),
                    aliases: Vec::new(),
                    gender,
                    voice: None,
                })
                .collect(),
        }
    }

    /// `f` over the rules' view of `lines` (one chapter) with `cast`, and
    /// the attributor behind it.
    pub(super) fn with_context<T>(
        cast: &Cast,
        lines: &[&str],
        f: impl FnOnce(&Context<'_, '_>, &Attributor) -> T,
    ) -> T {
        let attributor = Attributor::new(cast);
        let spans = test_spans(lines);
        let paragraphs = test_views(lines, &spans);
        let mentions = attributor.chapter_mentions(&paragraphs);
        let far_end_chars = vec![std::cell::Cell::new(None); paragraphs.len()];
        let ctx = Context {
            attributor: &attributor,
            paragraphs: &paragraphs,
            mentions: &mentions,
            named: &[],
            far_end_chars: &far_end_chars,
        };
        f(&ctx, &attributor)
    }

    /// The quote spans of each line.
    pub(crate) fn test_spans(lines: &[&str]) -> Vec<Vec<SpanRange>> {
        lines
            .iter()
            .map(|l| {
                let mut v = Vec::new();
                scan_paragraph(l, &mut v);
                v
            })
            .collect()
    }

    /// The lines as paragraphs with their spans, none skipped.
    pub(crate) fn test_views<'a>(
        lines: &[&'a str],
        spans: &'a [Vec<SpanRange>],
    ) -> Vec<ParagraphView<'a>> {
        lines
            .iter()
            .zip(spans)
            .map(|(l, s)| ParagraphView {
                text: l,
                spans: s,
                skipped: false,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{test_spans, test_views};
    use super::*;
    use crate::text::cast::Character;

    fn cast(entries: &[(&str, &[&str], Gender)]) -> Cast {
        Cast {
            characters: entries
                .iter()
                .map(|(n, a, g)| Character {
                    name: (*n).into(),
                    aliases: a.iter().map(|s| (*s).into()).collect(),
                    gender: *g,
                    voice: None,
                })
                .collect(),
        }
    }

    /// Who speaks every dialogue span, paragraph by paragraph, and the
    /// attributor that found them.
    fn spoken(cast: &Cast, text: &str) -> (Attributor, Vec<Spoken>) {
        let (_, a, out) = spoken_with(cast, text, false);
        (a, out)
    }

    /// The same, weighed as the book's own tag style says when `own_style`
    /// (the split's way), as one with tags apart otherwise; with the style.
    fn spoken_with(
        cast: &Cast,
        text: &str,
        own_style: bool,
    ) -> (TagStyle, Attributor, Vec<Spoken>) {
        let lines: Vec<&str> = text.lines().collect();
        let spans = test_spans(&lines);
        let views = test_views(&lines, &spans);
        let style = if own_style {
            TagStyle::of(views.iter().copied())
        } else {
            TagStyle::Apart
        };
        let a = Attributor::new(cast).with_style(style);
        let result = a.attribute(&views);
        let out = views
            .iter()
            .zip(result)
            .flat_map(|(p, who)| p.spans.iter().zip(who))
            .filter(|(s, _)| s.kind == SegmentKind::Dialogue)
            .map(|(_, w)| w)
            .collect();
        (style, a, out)
    }

    /// Speakers of every dialogue span by name; someone unnamed by gender:
    /// (male), (female).
    fn speakers(cast: &Cast, text: &str) -> Vec<Option<String>> {
        speakers_with(cast, text, false).1
    }

    /// The same, with the tag style of [`spoken_with`].
    fn speakers_with(cast: &Cast, text: &str, own_style: bool) -> (TagStyle, Vec<Option<String>>) {
        let (style, a, spoken) = spoken_with(cast, text, own_style);
        let names = spoken
            .iter()
            .map(|w| {
                w.who.and_then(|w| {
                    a.name(w)
                        .map(str::to_owned)
                        .or_else(|| unnamed_gender(w).map(|g| format!("({})", g.as_str())))
                })
            })
            .collect();
        (style, names)
    }

    fn names(v: &[Option<String>]) -> Vec<&str> {
        v.iter().map(|s| s.as_deref().unwrap_or("-")).collect()
    }

    const M: Gender = Gender::Male;
    const F: Gender = Gender::Female;

    #[test]
    fn speech_verbs_before_after_and_colon() {
        let c = cast(&[("林一舟", &["一舟"], M), ("苏晚", &[], F)]);
        let text = "一舟看着苏晚，问：“你去吗？”\n“去。”苏晚低声说。\n苏晚：“走吧。”\n“不过，”一舟接过话头，“路很远。”";
        assert_eq!(
            names(&speakers(&c, text)),
            ["林一舟", "苏晚", "苏晚", "林一舟", "林一舟"]
        );
    }

    #[test]
    fn pronouns_and_next_paragraph_verbs() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        let text = "林一舟走进门，苏晚正在看书。\n他放下包，盯着她，问：\n“吃饭了吗？”\n“还没有。”\n她答。";
        assert_eq!(names(&speakers(&c, text)), ["林一舟", "苏晚"]);
    }

    #[test]
    fn a_pronoun_after_a_reply_is_not_the_one_who_spoke_before() {
        let c = cast(&[("林一舟", &[], M), ("老周", &[], M)]);
        let text = "林一舟推开老周的门。\n“你吃了饭没？”\n老周问。\n“吃了。”\n他随口说。";
        assert_eq!(names(&speakers(&c, text)), ["老周", "林一舟"]);
    }

    #[test]
    fn a_pronoun_after_someone_new_comes_into_view_is_not_the_man_named_before() {
        let c = cast(&[("老周", &[], M), ("苏晚", &[], F)]);
        let text = "老周在林子外头候着。
            苏晚拨开枯枝，便看见一个玄衣男子靠坐在树下。
            他眯起眼打量她：“你认得我？”";
        assert_eq!(names(&speakers(&c, text)), ["(male)"]);
        // Brought in opening a clause.
        let text = "老周在林子外头候着。\n\
            门口一个玄衣男子走了进来。\n\
            他眯起眼打量苏晚：“你认得我？”";
        assert_eq!(names(&speakers(&c, text)), ["(male)"]);
        // Seen, but no one new: 他 is 老周.
        let text = "老周在林子外头候着。
            苏晚拨开枯枝，便看见了老周。
            他眯起眼打量她：“你认得我？”";
        assert_eq!(names(&speakers(&c, text)), ["老周"]);
    }

    #[test]
    fn the_one_walked_up_to_does_not_speak() {
        let c = cast(&[("沈若溪", &["若溪"], F), ("林知夏", &[], F)]);
        let text = "沈若溪的笑容僵了一瞬。\n\
            拎包的助理弯下腰，凑到她耳边：“若溪姐，要不要我去打个招呼？”";
        assert_eq!(names(&speakers(&c, text)), ["-"]);
        // 到 that ends a clause (顷刻而到) is no going up to anyone.
        let c = cast(&[("行者", &[], M), ("八戒", &[], M)]);
        let text = "八戒驾云在后。\n顷刻而到行者道：“此山便是。”";
        assert_eq!(names(&speakers(&c, text)), ["行者"]);
    }

    #[test]
    fn a_pronoun_is_not_the_one_its_clause_names_again() {
        let c = cast(&[("林一舟", &["一舟"], M), ("老周", &[], M)]);
        // 他 would be 一舟, last named, but the clause speaks to 一舟.
        let text = "一舟来找老周，说了半天。\n\
            那他老周在村里就成了孤家寡人。\n\
            先把一舟这小子打发走，让他想一想再说！\n\
            他于是就对等着他表态的一舟说：\n\
            “你先回去，等我们开会研究后再答复你！”";
        assert_eq!(names(&speakers(&c, text)), ["老周"]);
    }

    #[test]
    fn one_who_names_themselves_speaks() {
        let c = cast(&[("林一舟", &[], M), ("老周", &[], M), ("苏晚", &[], F)]);
        let text =
            "苏晚推开门。\n背后有人叫她。\n“谁？”\n“我……老周。快回去吧！”\n“我是说老周不在。”";
        assert_eq!(names(&speakers(&c, text)), ["苏晚", "老周", "苏晚"]);
        // How one of old calls oneself, then the name (在下, 咱家, 贫道 …).
        let c = cast(&[("李慕白", &[], M), ("苏晚", &[], F)]);
        let text = "苏晚推开院门，院里站着个青衫书生。\n“在下李慕白，见过姑娘。”\n苏晚点了点头。";
        assert_eq!(names(&speakers(&c, text)), ["李慕白"]);
    }

    #[test]
    fn a_pronoun_with_no_one_before_it_takes_the_turn_of_its_gender() {
        let c = cast(&[("林一舟", &["一舟"], M), ("苏晚", &[], F), ("阿梅", &[], F)]);
        let text =
            "“一舟，几点了？”苏晚问。\n“三点。”\n他说。\n“阿梅，走吧。”苏晚说。\n“好。”\n他说。";
        // 阿梅 is addressed, but 他 says a man answers: the man of the scene.
        assert_eq!(
            names(&speakers(&c, text)),
            ["苏晚", "林一舟", "苏晚", "林一舟"]
        );
        // With no man in the scene, someone unnamed.
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F), ("阿梅", &[], F)]);
        let text = "“阿梅，几点了？”苏晚问。\n“三点。”\n他说。";
        assert_eq!(names(&speakers(&c, text)), ["苏晚", "(male)"]);
    }

    #[test]
    fn the_one_whose_voice_is_heard_speaks() {
        let c = cast(&[("老周", &[], M), ("苏晚", &[], F)]);
        let text = "苏晚正要睡，窗外传来老周焦急的声音：“快起来！”";
        assert_eq!(names(&speakers(&c, text)), ["老周"]);
        // After the quote, too.
        let text = "苏晚坐在河边。\n“噢——苏晚！”\n村头猛然传来老周拖长了音调的呼唤声。";
        assert_eq!(names(&speakers(&c, text)), ["老周"]);
    }

    #[test]
    fn a_quote_with_no_one_named_before_it_takes_the_first_named_after_it() {
        let c = cast(&[("老周", &[], M), ("苏晚", &[], F)]);
        let text = "“天快黑了。”\n雨一直打在老周的伞上。";
        assert_eq!(names(&speakers(&c, text)), ["老周"]);
        // Introduced by a colon, the quote is the unnamed one's.
        let text = "阿梅蹲在门口，站起身：\n“天快黑了。”\n雨一直打在老周的伞上。";
        assert_eq!(names(&speakers(&c, text)), ["-"]);
    }

    #[test]
    fn one_seen_doing_something_is_the_next_pronouns() {
        let c = cast(&[("林一舟", &[], M), ("老周", &[], M)]);
        let text = "林一舟抬起头，看见老周正站在路边。\n他没有走过来，只是叫着说：\n“回家吃饭！”";
        assert_eq!(names(&speakers(&c, text)), ["老周"]);
    }

    #[test]
    fn turn_taking_alternates() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        let text = "林一舟问苏晚：“几点了？”\n“三点。”\n“还早。”\n“不早了。”";
        assert_eq!(
            names(&speakers(&c, text)),
            ["林一舟", "苏晚", "林一舟", "苏晚"]
        );
    }

    #[test]
    fn vocative_names_the_next_speaker() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F), ("老周", &[], M)]);
        let text = "老周推门进来。\n“苏晚，你来一下。”老周说。\n“什么事？”";
        assert_eq!(names(&speakers(&c, text)), ["老周", "苏晚"]);
    }

    #[test]
    fn speech_told_in_the_narration_is_a_turn() {
        let c = cast(&[("沈知微", &[], F), ("孙志强", &[], M)]);
        // Without the told turn, 孙志强 asked last and 沈知微 would answer.
        let text = "孙志强坐在沙发上。\n“出什么事了？”孙志强问。\n沈知微把情况简单说了一遍。\n“什么时候的事？”\n“昨晚。”";
        assert_eq!(names(&speakers(&c, text)), ["孙志强", "孙志强", "沈知微"]);
    }

    #[test]
    fn a_surname_and_a_title_call_the_one_of_that_surname() {
        let c = cast(&[("孙志强", &[], M), ("韩建军", &[], M), ("沈知微", &[], F)]);
        let text = "孙志强坐在对面，韩建军翻开了本子。\n“孙总，昨晚在哪儿吃的饭？”\n“在家吃的。”";
        assert_eq!(names(&speakers(&c, text)), ["韩建军", "孙志强"]);
        // 沈哥 fits no woman; 沈队 fits her.
        let (a, _) = spoken(&c, "");
        assert_eq!(a.vocative("“沈队，走吗？”"), Some(Who::Character(2)));
        assert_eq!(a.vocative("“沈哥，走吗？”"), None);
        // At the end, after a comma, too; not a name alone after a stop.
        assert_eq!(a.vocative("“走了，沈队！”"), Some(Who::Character(2)));
        assert_eq!(a.vocative("“放那儿吧，孙总。”"), Some(Who::Character(0)));
        assert_eq!(a.vocative("“谁来了？孙总。”"), None);
        assert_eq!(a.vocative("“我去找孙总。”"), None);
        assert_eq!(a.vocative("“是我，孙总。”"), Some(Who::Character(0)));
        assert_eq!(a.vocative("“这就是我们的老板，孙总。”"), None);
        assert_eq!(a.vocative("“就是那个老孙，孙总！”"), None);
    }

    #[test]
    fn a_name_with_a_form_of_address_is_the_listener() {
        let c = cast(&[("林一舟", &["一舟"], M), ("苏晚", &[], F)]);
        let text = "苏晚和林一舟坐在船头。\n林一舟看着远处的灯。\n“一舟哥，天快黑了。”";
        assert_eq!(names(&speakers(&c, text)), ["苏晚"]);
    }

    #[test]
    fn the_subject_called_by_name_listens_and_the_other_speaks() {
        let c = cast(&[("林一舟", &["一舟"], M), ("老周", &[], M)]);
        // 他 (林一舟) is the sentence's subject, but the quote calls him.
        let text =
            "林一舟沿着堤岸往回走。\n他看见老周提着马灯从码头上过来，对他喊道：\n“一舟，你等等！”";
        assert_eq!(names(&speakers(&c, text)), ["老周"]);
    }

    #[test]
    fn a_given_name_with_a_bare_title_is_its_owner() {
        let c = cast(&[("苏安", &[], F), ("许言", &[], M), ("陶桃", &[], F)]);
        let text = "苏安和许言坐在工位上。\n安姐笑道：“先吃饭。”\n言哥说：“好。”";
        assert_eq!(names(&speakers(&c, text)), ["苏安", "许言"]);
        let (a, _) = spoken(&c, "");
        assert_eq!(a.vocative("“安姐，走吗？”"), Some(Who::Character(0)));
    }

    #[test]
    fn one_who_gives_their_name_after_where_they_come_from_speaks() {
        let c = cast(&[("苏安", &[], F), ("高志远", &[], M)]);
        let text = "苏安的手机响了。\n“苏经理吗？我是禾润的高志远。”";
        assert_eq!(names(&speakers(&c, text)), ["高志远"]);
        // 我姓高，高志远: the surname, then the full name.
        let text = "苏安坐在门口。\n“苏经理您好，我姓高，高志远，禾润的。”";
        assert_eq!(names(&speakers(&c, text)), ["高志远"]);
        let (a, _) = spoken(&c, "");
        assert_eq!(a.self_named("“我姓高，王志远。”"), None);
    }

    #[test]
    fn one_asked_who_they_are_answers_with_their_name() {
        let c = cast(&[("林夕", &[], F), ("韩冬", &[], M)]);
        // “韩冬，…” after “您是……” is a name given, not a call.
        let text = "林夕推开诊室的门，里面坐着一个穿白大褂的年轻男人，正低头写病历。\n\
            “请问，您是……”\n\
            “韩冬，今天值班的医生。”\n\
            “韩医生好，我来拿化验单。”";
        assert_eq!(names(&speakers(&c, text)), ["林夕", "韩冬", "林夕"]);
        let (a, _) = spoken(&c, "");
        assert_eq!(
            a.named_in_answer("“你是……”", "“韩冬。”"),
            Some(Who::Character(1))
        );
        // Not after another question, nor a name that runs on.
        assert_eq!(a.named_in_answer("“你找谁？”", "“韩冬。”"), None);
        assert_eq!(a.named_in_answer("“你是……”", "“韩冬叫我来的。”"), None);
    }

    #[test]
    fn a_thought_is_no_turn_of_the_conversation() {
        let c = cast(&[("许晴", &[], F), ("周凯", &[], M)]);
        // The answer after her thought is hers: the thought did not answer him.
        let text = "周凯把戒指盒推到她面前，手心全是汗。\n\
            “嫁给我吧。”他说。\n\
            许晴盯着那个盒子看了很久。她心想：“他怎么偏偏挑今天。”\n\
            “……我需要想一想。”";
        assert_eq!(names(&speakers(&c, text)), ["周凯", "许晴", "许晴"]);
        assert!(words::introduces_thought("她心想："));
        assert!(words::introduces_thought("行者暗道:"));
        assert!(!words::introduces_thought("她想了想，说："));
    }

    #[test]
    fn a_voice_nobody_names_after_a_quote_said_it() {
        let c = cast(&[("林晚", &[], F), ("陆川", &[], M)]);
        // Not the one in the scene: a voice of no told gender, then a man's.
        let text = "林晚踮起脚去够墙头那枝海棠，够了两回都没够着。\n\
            “那枝早被虫蛀了，折它做什么。”\n\
            身后忽然有人开口，吓得她差点摔下来。\n\
            “谁在那儿？”林晚问。\n\
            “过路的。”\n\
            院门外传来一道低低的男声，听不出是谁。";
        assert_eq!(
            speakers(&c, text),
            [None, Some("林晚".to_owned()), Some("(male)".to_owned())]
        );
        // A voice the sentence names is a tag; one that brings in the next
        // quote with a colon says nothing of the quote before.
        let text = "林晚坐在窗下。\n“下雨了。”\n陆川的声音从门外传来。";
        assert_eq!(names(&speakers(&c, text)), ["陆川"]);
        // No one speaking is no voice.
        let text = "林晚对陆川说：“走吧。”\n“下雨了。”\n屋里没有人说话。";
        assert_ne!(speakers(&c, text)[1], None);
        // The one the next sentence opens with is whose voice it was.
        let text = "林晚蹲在河边。\n“兜里有钱包。”\n声音是从坡上传下来的。陆川慢吞吞地走下坡。";
        assert_eq!(names(&speakers(&c, text)), ["陆川"]);
    }

    #[test]
    fn someone_new_who_came_into_view_speaks_the_quote_after() {
        let c = cast(&[("林晚", &[], F), ("陆川", &[], M)]);
        // Not the one who opened the door, nor the man named before: someone
        // whose gender the words do not say (一个人), then a woman.
        let text = "陆川在灯下修一只旧钟，林晚早就回去了。
            门铃响了，陆川起身去开门。门外站着一个人，浑身湿透，怀里抱着个纸箱。
            “还营业吗？”
            陆川回到桌前。店里进来一个穿雨衣的女人。
            “能修表吗？”";
        assert_eq!(speakers(&c, text), [None, Some("(female)".to_owned())]);
        // Named after they came, they speak by their name.
        let text = "林晚在灯下看书。
            门外站着一个人，正是陆川。
            “还没睡？”";
        assert_eq!(names(&speakers(&c, text)), ["陆川"]);
    }

    #[test]
    fn one_who_only_listened_did_not_speak_the_quote_before() {
        let c = cast(&[("周岚", &[], F), ("程野", &[], M)]);
        // The next paragraph says 周岚 kept silent, or was taken aback
        // before she answered: the quote before was said to her, not by her.
        let text = "程野把一沓文件推到周岚面前，敲了敲最上面那一页。\n\
            “这份合同，你签字之前到底看过没有？”\n\
            周岚没说话，低头盯着自己的指甲。\n\
            “我问你话呢。”\n\
            “看过。”\n\
            程野把合同摔在桌上，转身走到窗边，背对着她站了很久。\n\
            “你知道这份合同让公司赔了多少钱吗？”\n\
            周岚一愣，随即抬起头：“我不知道。”";
        assert_eq!(
            names(&speakers(&c, text)),
            ["程野", "程野", "周岚", "程野", "周岚"]
        );
    }

    #[test]
    fn on_the_phone_the_holder_and_the_caller_take_turns() {
        let c = cast(&[("苏安", &["安安"], F), ("许言", &[], M), ("林默", &[], F)]);
        // A kin caller the cast does not name: a woman, unnamed; the two
        // take turns until the narration moves on; then the room speaks.
        let text = "苏安和许言坐在工位上，林默在对面看文件。\n            手机在桌上震起来，屏幕上跳出“二姨”两个字。\n            苏安硬着头皮接起来。\n            “安安！你昨晚怎么回事？”\n            “二姨，对不起，我加班忘了……”\n            “忘了？这种事也能忘？”\n            “我明天亲自去道歉，行吗？”\n            电话挂了。苏安把手机扣在桌上，半天没说话。\n            许言探过头来：“相亲？”\n            “嗯。”";
        assert_eq!(
            speakers(&c, text),
            [
                Some("(female)".to_owned()),
                Some("苏安".to_owned()),
                Some("(female)".to_owned()),
                Some("苏安".to_owned()),
                Some("许言".to_owned()),
                Some("苏安".to_owned()),
            ]
        );
        // The holder calls the caller by name at once (“郑哥？”).
        let c = cast(&[("沈若溪", &["若溪"], F), ("郑海", &[], M), ("唐蜜", &[], F)]);
        let text = "沈若溪和唐蜜坐在沙发上。\n            手机又响了。沈若溪看了一眼屏幕，换上一副温柔的嗓音：“郑哥？”\n            “若溪啊，秦总刚才问我，那个营销号是怎么回事。”\n            “我哪知道呀。”\n            “这段时间，你消停点。”";
        assert_eq!(
            names(&speakers(&c, text)),
            ["沈若溪", "郑海", "沈若溪", "郑海"]
        );
    }

    #[test]
    fn the_far_end_of_a_call_the_holder_answers_as_mum_is_her_mother() {
        let c = cast(&[("夏青", &[], F), ("程川", &[], M), ("白露", &[], M)]);
        // A name a photo shows before the phone rings is no caller; the
        // holder's “妈，…” says who calls; the one who overhears the far
        // end does not speak for it.
        let text = "程川掏出手机，翻出一张照片来对比，照片底下印着两个字，“白露”。\n\
            这时候，桌上的手机嗡嗡地震了起来。夏青看了一眼，有些不好意思地接起来：\
            “妈，我还在外面呢，一会儿就回。”\n\
            电话那头的声音大得连程川都听得见：“外面？天都黑了，跟谁在一块儿？”\n\
            “跟同事，真的。”\n\
            “早点回来，听见没有！”";
        assert_eq!(
            names(&speakers(&c, text)),
            ["夏青", "(female)", "夏青", "(female)"]
        );
        // Someone else takes the phone at the far end: the one acting in
        // the next quote's own narration is the new caller, and speaks on.
        let c = cast(&[("夏青", &[], F), ("老夏", &[], M), ("程川", &[], M)]);
        let text = "夏青的手机响了。夏青接起来：“妈，我还在外面呢。”\n\
            “几点了还在外面？”\n\
            夏青张了张嘴，电话那头换了个人。\n\
            “闺女，别听你妈的，”老夏压低了嗓子，“玩够了再回。”\n\
            “知道啦。”";
        assert_eq!(
            names(&speakers(&c, text)),
            ["夏青", "(female)", "老夏", "老夏", "夏青"]
        );
    }

    #[test]
    fn continued_speech_keeps_its_speaker() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        let text = "苏晚说：“第一件事，\n“第二件事。”\n林一舟点头。";
        assert_eq!(names(&speakers(&c, text)), ["苏晚", "苏晚"]);
    }

    #[test]
    fn kin_and_people_not_named_speak_as_someone_of_their_gender() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        // 她父亲: her father speaks, neither she nor the man of the scene.
        let text = "苏晚和林一舟回到家。\n她父亲听她说完，忧愁地说：\n“你说的也是实情。”";
        assert_eq!(names(&speakers(&c, text)), ["(male)"]);
        let text = "林一舟回到家。\n父亲沉下脸问：“去哪儿了？”";
        assert_eq!(names(&speakers(&c, text)), ["(male)"]);
        let text = "林一舟在屋里坐着。\n林一舟他妈已经下了炕，对儿子说：\n“吃饭吧。”";
        assert_eq!(names(&speakers(&c, text)), ["(female)"]);
        // Kin before a name is that character (他媳妇苏晚).
        let text = "林一舟推门进来。\n他媳妇苏晚对他说：“回来了？”";
        assert_eq!(names(&speakers(&c, text)), ["苏晚"]);
        // A description right after one named is that one (老汉 = 林一舟).
        let c = cast(&[("林一舟", &[], M), ("老周", &[], M)]);
        let text = "林一舟蹲在码头边，老汉抽了一口烟，说：“要下雨了。”";
        assert_eq!(names(&speakers(&c, text)), ["林一舟"]);
    }

    #[test]
    fn people_named_by_their_trade_speak_as_someone_of_its_gender() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        // The eunuch greeting her is no one of the cast, and a man.
        let text = "苏晚下了车。门口候着一个太监。\n“这位便是苏姑娘吧？”那太监尖细着嗓音道。";
        assert_eq!(names(&speakers(&c, text)), ["(male)"]);
        // A presenter named as a woman, a guard as a man.
        let text = "林一舟坐在台下。\n女主持人笑着说：\n“下面是提问环节。”";
        assert_eq!(names(&speakers(&c, text)), ["(female)"]);
        let text = "苏晚回过头。\n“属下来迟！”侍卫单膝跪地。";
        assert_eq!(names(&speakers(&c, text)), ["(male)"]);
    }

    #[test]
    fn in_a_chapter_without_she_an_unnamed_he_is_of_either_gender() {
        let spoken = |c: &Cast, text: &str| {
            spoken(c, text)
                .1
                .into_iter()
                .map(|s| (s.who.and_then(unnamed_gender), s.gender_unsure))
                .collect::<Vec<_>>()
        };
        // 他嫂子 is a woman and 他父亲 a man whatever the book writes.
        let c = cast(&[("林一舟", &[], M)]);
        let kin = "林一舟坐在门口。\n他嫂子笑道：\n“回来了？”\n他父亲问：\n“吃了吗？”";
        assert_eq!(spoken(&c, kin), [(Some(F), false), (Some(M), false)]);
        // A 他 nobody was named for is a guess where the book writes 他 for
        // everyone (no 她 in the chapter), a man where it writes 她 too.
        let c = cast(&[("苏晚", &[], F)]);
        let pronoun = "门口坐着一个人。\n他笑道：\n“回来了？”";
        assert_eq!(spoken(&c, pronoun), [(Some(M), true)]);
        let with_she = format!("{pronoun}\n她笑了。");
        assert_eq!(spoken(&c, &with_she), [(Some(M), false)]);
    }

    #[test]
    fn one_who_calls_herself_laoniang_is_a_woman() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        let text = "苏晚站在门口，林一舟走了过来。\n“老娘等你半天了！”";
        assert_eq!(names(&speakers(&c, text)), ["苏晚"]);
        let text = "苏晚站在门口，林一舟走了过来。\n“等你半天了！”";
        assert_eq!(names(&speakers(&c, text)), ["林一舟"]);
        // His father is not himself.
        let text = "苏晚站在门口，林一舟走了过来。\n“你老娘等你半天了！”";
        assert_eq!(names(&speakers(&c, text)), ["林一舟"]);
    }

    #[test]
    fn the_one_asked_does_not_ask() {
        let c = cast(&[("林一舟", &[], M), ("周远", &[], M)]);
        let text =
            "周远急忙抓了一个馍，狠狠咬了一口。\n等咽下这口饭后，才问林一舟：\n“船票买到了吗？”";
        assert_eq!(names(&speakers(&c, text)), ["周远"]);
        let text = "周远放下碗。\n他告诉林一舟：\n“船票买到了。”";
        assert_eq!(names(&speakers(&c, text)), ["周远"]);
        // Nor does the one acting before, when it is the one asked.
        let text = "林一舟放下碗。\n等咽下这口饭后，才问林一舟：\n“船票买到了吗？”";
        assert_ne!(names(&speakers(&c, text)), ["林一舟"]);
    }

    #[test]
    fn one_not_heard_does_not_speak() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        let text = "林一舟推门进来，苏晚坐在桌边。\n“汤还热着，快喝吧。”\n林一舟端起碗来，好象根本没听见苏晚说什么。";
        assert_eq!(names(&speakers(&c, text)), ["林一舟"]);
        // Heard, she spoke.
        let text =
            "林一舟推门进来，苏晚坐在桌边。\n“汤还热着，快喝吧。”\n林一舟端起碗来，听见苏晚说。";
        assert_eq!(names(&speakers(&c, text)), ["苏晚"]);
    }

    #[test]
    fn a_wife_calls_her_husband_laogong() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        let text = "苏晚站在门口，林一舟走了过来。\n“老公，你看这是什么？”";
        assert_eq!(names(&speakers(&c, text)), ["苏晚"]);
        let text = "林一舟站在门口，苏晚走了过来。\n“媳妇儿，你看这是什么？”";
        assert_eq!(names(&speakers(&c, text)), ["林一舟"]);
    }

    #[test]
    fn an_oath_is_no_mother() {
        let c = cast(&[("林一舟", &[], M)]);
        let views_of = |text: &'static str| {
            let lines: Vec<&str> = text.lines().collect();
            let spans = test_spans(&lines);
            let a = Attributor::new(&c);
            let views = test_views(&lines, &spans);
            a.chapter_mentions(&views)
                .concat()
                .iter()
                .filter(|m| m.unnamed())
                .count()
        };
        assert_eq!(views_of("林一舟骂了一声他妈的，走了。"), 0);
        assert_eq!(views_of("林一舟问起她妈的病。"), 1);
        assert_eq!(views_of("林一舟看见他妈在门口。"), 1);
    }

    #[test]
    fn a_counted_person_opens_the_clause_and_speaks() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        let text = "林一舟和苏晚站在桥上。\n一个中年女人拽着身边的人小声问：“是不是有人跳江了？”\n旁边一个男人接话：“听说是。”\n苏晚看了那个女人一眼，说：“别看了。”";
        assert_eq!(names(&speakers(&c, text)), ["(female)", "(male)", "苏晚"]);
        // Someone new after a named subject of that gender is not she.
        let text = "苏晚在肉摊前挑排骨，卖肉的中年女人一边剁骨头一边搭话：“今天来客啊？”";
        assert_eq!(names(&speakers(&c, text)), ["(female)"]);
        // The one a clause acts on is not brought in: 她把那个女人.
        let text = "林一舟和苏晚站在桥上。\n她把那个女人拉开，小声说：“别看了。”";
        assert_eq!(names(&speakers(&c, text)), ["苏晚"]);
        // 有 right before brings someone in (外头有婆子); 没有 does not.
        let text = "林一舟和苏晚站在廊下。\n正说着，外头有婆子扬声道：“林少爷，车备好了。”";
        assert_eq!(names(&speakers(&c, text)), ["(female)"]);
        let text = "林一舟和苏晚站在廊下。\n苏晚身边没有丫鬟跟着，只好自己说：“我们走吧。”";
        assert_eq!(names(&speakers(&c, text)), ["苏晚"]);
    }

    #[test]
    fn a_quote_alone_after_a_quote_is_the_other_ones() {
        let c = cast(&[
            ("陆川", &[], M),
            ("林一舟", &[], M),
            ("苏晚", &[], F),
            ("周岚", &[], F),
        ]);
        // A book that tags inside the quotes' paragraphs, where the one
        // acting before a quote speaks it …
        let mut lines = vec!["第1章 窗边"];
        for _ in 0..8 {
            lines.extend([
                "陆川和林一舟坐在窗边。",
                "陆川放下杯子。“你去哪儿？”",
                "“回家。”林一舟说。",
            ]);
        }
        // … but not when the action is the beat of that one's own quote.
        lines.extend([
            "第2章 江边",
            "周岚弯腰钻过带子，沿着堤坡往下走。",
            "堤下趴着一个男人。苏晚已经蹲在旁边，手套上沾满了泥。",
            "“谁先到的？”周岚问。",
            "“派出所的人。”苏晚答。",
            "“来得挺快啊。”苏晚头也不抬。",
            "“你比我快。”",
            "“我住得近。”苏晚把那人的头轻轻侧过来。",
        ]);
        let (style, got) = speakers_with(&c, &lines.join("\n"), true);
        assert_eq!(style, TagStyle::Inline);
        assert_eq!(names(&got[got.len() - 3..]), ["苏晚", "周岚", "苏晚"]);
    }

    #[test]
    fn a_tag_after_bare_quotes_turns_an_exchange_opened_the_wrong_way() {
        let c = cast(&[("夏青", &[], F), ("程川", &[], M)]);
        let mut lines = Vec::new();
        for _ in 0..8 {
            lines.extend([
                "程川和夏青坐在窗边。",
                "程川放下杯子。“你去哪儿？”",
                "“回家。”夏青说。",
            ]);
        }
        // 夏青 speaks the last quote by its tag: the bare exchange before
        // it alternates back from her, not from the one last named.
        let exchange = [
            "快十一点的时候，夏青下楼扔垃圾，一眼就看见楼下停着辆熟悉的车。程川靠在车门上抽烟。",
            "“你怎么来了？”",
            "“明天要早起开车，干脆先过来。”",
            "“那也是明天早上的事。”",
            "“我怕明天早上堵车。”",
            "夏青笑了：“现在是晚上十一点。”",
        ];
        lines.extend(exchange);
        let (style, got) = speakers_with(&c, &lines.join("\n"), true);
        assert_eq!(style, TagStyle::Inline);
        assert_eq!(
            names(&got[got.len() - 5..]),
            ["夏青", "程川", "夏青", "程川", "夏青"]
        );
        // Where tags stand apart, one speaker may go on after a tag
        // paragraph: the exchange stays as the turns gave it, 夏青 twice
        // running.
        let (style, apart) = speakers_with(&c, &exchange.join("\n"), true);
        assert_eq!(style, TagStyle::Apart);
        assert_eq!(names(&apart), ["程川", "夏青", "程川", "夏青", "夏青"]);
    }

    #[test]
    fn a_pronoun_in_the_subjects_clause_is_the_one_who_acted_before() {
        let c = cast(&[("林知夏", &[], F), ("唐蔓", &[], F), ("沈若溪", &[], F)]);
        // 唐蔓 is only mentioned (记着唐蔓的话): 她 is 林知夏, who listens.
        let text = "林知夏记着唐蔓的话，只是笑了笑：“沈老师好。”\n“别叫老师。”沈若溪在她对面坐下。\n“来都来了。”";
        assert_eq!(names(&speakers(&c, text)), ["林知夏", "沈若溪", "林知夏"]);
    }

    #[test]
    fn a_given_name_in_a_vocative_calls_its_owner() {
        let c = cast(&[
            ("林知夏", &[], F),
            ("唐蔓", &[], F),
            ("陆景川", &[], M),
            ("沈景川", &[], M),
        ]);
        let a = Attributor::new(&c);
        assert_eq!(
            a.vocative("“知夏姐，你先喝两口。”"),
            Some(Who::Character(0))
        );
        assert_eq!(a.vocative("“知夏，走吧。”"), Some(Who::Character(0)));
        assert_eq!(a.vocative("“蔓姐！”"), Some(Who::Character(1)));
        // One character alone calls nobody; two characters share 景川.
        assert_eq!(a.vocative("“蔓，走吧。”"), None);
        assert_eq!(a.vocative("“景川哥，走吧。”"), None);
        assert_eq!(a.vocative("“知夏天天都来。”"), None);
        // 阿 is a form of address before a given name, of one character or two.
        assert_eq!(a.vocative("“阿蔓，对不起。”"), Some(Who::Character(1)));
        assert_eq!(a.vocative("“阿知夏！”"), Some(Who::Character(0)));
        assert_eq!(a.vocative("“阿蔓她们走了。”"), None);
        assert_eq!(a.vocative("“阿姨，对不起。”"), None);
        // 老 or 小 before a surname one character bears; not asked about.
        assert_eq!(a.vocative("“老唐，走了。”"), Some(Who::Character(1)));
        assert_eq!(a.vocative("“小沈！”"), Some(Who::Character(3)));
        assert_eq!(a.vocative("“小陆？你也在？”"), None);
        assert_eq!(a.vocative("“老王，走了。”"), None);
    }

    #[test]
    fn the_narrators_kin_is_not_the_narrator() {
        // The narrator's gender is not known (as in a book with no cast file).
        let c = cast(&[(NARRATOR, &[], Gender::Unknown), ("顾屿", &[], M)]);
        let text = "我拿起手机。\n“吃饭了吗？”我妈的声音从听筒里传出来。\n“吃了。”我说。";
        assert_eq!(names(&speakers(&c, text)), ["(female)", NARRATOR]);
    }

    #[test]
    fn the_far_end_of_a_telephone_is_the_caller() {
        let c = cast(&[("林知夏", &[], F), ("唐蔓", &[], F), ("陶小桃", &[], F)]);
        // The caller shown on the screen, by a given name and a title.
        let text = "陶小桃坐在前排。手机震了起来，屏幕上跳出两个字：“蔓姐”。林知夏按下接听。\n“到了没有？”电话那头的女声又快又脆。";
        // (The word on the screen is narration, not a quote.)
        assert_eq!(names(&speakers(&c, text)), ["唐蔓"]);
        // The caller the narration names.
        let text = "林知夏的手机响了，是唐蔓打来的。陶小桃看着她。\n“喂？”林知夏说。\n“结果出来了。”听筒里的声音有点哑。";
        assert_eq!(names(&speakers(&c, text)), ["林知夏", "唐蔓"]);
        // No call, no caller: the one named first speaks.
        let text = "林知夏看着唐蔓。\n“结果出来了。”电话那头，陶小桃笑了一声。";
        assert_eq!(names(&speakers(&c, text)), ["陶小桃"]);
    }

    #[test]
    fn one_who_hears_someone_unnamed_does_not_speak() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        let text = "苏晚走到柜台前。\n这时，她听见柜台后面有个人说：\n“这不是苏晚吗？”";
        assert_eq!(names(&speakers(&c, text)), ["-"]);
        // Named after the verb of hearing, that one speaks.
        let text = "苏晚走到柜台前。\n这时，她听见林一舟在柜台后面说：\n“这不是苏晚吗？”";
        assert_eq!(names(&speakers(&c, text)), ["林一舟"]);
    }

    #[test]
    fn an_action_before_the_quote_in_its_paragraph_names_the_speaker() {
        let c = cast(&[("陆川", &[], M), ("苏晚", &[], F), ("周岚", &[], F)]);
        // Web novels put the one acting and what they say in one paragraph.
        let text = "苏晚和陆川坐在窗边，周岚在一旁看书。\n“那份图纸呢？”陆川问。\n苏晚放下杯子。“在我包里。”\n“拿来我看看。”";
        assert_eq!(names(&speakers(&c, text)), ["陆川", "苏晚", "陆川"]);
    }

    #[test]
    fn the_narration_may_say_who_just_spoke() {
        let c = cast(&[("陆川", &[], M), ("苏晚", &[], F), ("老周", &[], M)]);
        let text =
            "苏晚、陆川和老周围着桌子坐下。\n“这堵墙为什么要拆？”\n问话的是陆川。他低头翻着图纸。";
        assert_eq!(names(&speakers(&c, text)), ["陆川"]);
    }

    #[test]
    fn one_who_speaks_again_is_not_swapped_for_someone_long_gone() {
        let c = cast(&[("陆川", &[], M), ("苏晚", &[], F), ("周岚", &[], F)]);
        // 周岚 was named pages before; 她 after 苏晚's own reply is 苏晚 again.
        let mut text = String::from("周岚把苏晚送到门口就走了。\n");
        for _ in 0..12 {
            text.push_str("雨一直下着。\n");
        }
        text.push_str("苏晚走到窗边，陆川跟了过来。\n“你还好吗？”陆川问。\n“挺好的。”\n“陆川，”她攥紧了手指，“你走吧。”");
        assert_eq!(
            names(&speakers(&c, &text)),
            ["陆川", "苏晚", "苏晚", "苏晚"]
        );
    }

    #[test]
    fn one_asked_whether_they_are_someone_is_spoken_to() {
        let c = cast(&[("陆川", &[], M), ("苏晚", &[], F)]);
        let a = Attributor::new(&c);
        assert_eq!(a.vocative("“你就是苏晚？”"), a.vocative("“苏晚，你好。”"));
        assert!(a.vocative("“你就是苏晚？”").is_some());
        assert_eq!(a.vocative("“你是苏晚的什么人？”"), None);
    }

    #[test]
    fn one_the_clause_brings_in_speaks_not_the_one_asked() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        let text = "林一舟沿着河堤往回走。\n堤下的菜地里有个中年妇女问他：\n“你回来了？”";
        assert_eq!(names(&speakers(&c, text)), ["(female)"]);
        let text = "苏晚沿着河堤往回走。\n堤下有一位老汉叫住她，问：\n“你是谁家的闺女？”";
        assert_eq!(names(&speakers(&c, text)), ["(male)"]);
        // Someone brought in as the object is not the subject.
        let text = "林一舟在街上碰见苏晚。\n他把那个姑娘拉到一边，问：\n“你怎么来了？”";
        assert_eq!(names(&speakers(&c, text)), ["林一舟"]);
    }

    #[test]
    fn a_subject_after_an_adverb_of_sequence_speaks() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        let text =
            "林一舟走进屋。\n他睡不着，首先苏晚就不能让他安宁，开始骂起了他：\n“你装什么死？”";
        assert_eq!(names(&speakers(&c, text)), ["苏晚"]);
    }

    #[test]
    fn a_described_subject_opens_its_clause() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        // 心虚的苏晚 is the subject of the last clause, not 林一舟 of the first.
        let text = "林一舟没有提起这事，但心虚的苏晚立刻给他解释说：\n“我没去。”";
        assert_eq!(names(&speakers(&c, text)), ["苏晚"]);
    }

    #[test]
    fn one_named_does_not_answer_themselves_in_an_exchange_with_someone() {
        let c = cast(&[("林一舟", &[], M), ("老周", &[], M)]);
        let text = "林一舟走进屋。\n她突然红着脸说：\n“你的书还了没有？”\n他说：\n“还没。”\n“能借我看一下吗？”";
        assert_eq!(
            names(&speakers(&c, text)),
            ["(female)", "林一舟", "(female)"]
        );
    }

    #[test]
    fn possessed_name_and_object_pronoun() {
        let c = cast(&[("林一舟", &[], M), ("老周", &[], M), ("苏晚", &[], F)]);
        // 他旁边的老周: 老周 speaks, not 他.
        let text = "林一舟坐下。\n他旁边的老周突然大声说：“开船！”";
        assert_eq!(names(&speakers(&c, text)), ["老周"]);
        // 老周问他: 他 is 林一舟, the addressee, who answers.
        let text = "林一舟走上甲板。\n老周站起来。\n“睡得好吗？”\n老周问他。\n“还行。”";
        assert_eq!(names(&speakers(&c, text)), ["老周", "林一舟"]);
        // 围观的人群 far after the subject is what it acts on, not a possessed subject.
        let text = "老周拨开围观的人群，大喊：“让开！”";
        assert_eq!(names(&speakers(&c, text)), ["老周"]);
    }

    #[test]
    fn a_title_before_a_name_is_that_character() {
        // A cast found in the book may hold the title as a character too.
        let c = cast(&[("林一舟", &[], M), ("队长", &[], M), ("苏晚", &[], F)]);
        let text = "苏晚坐在舱里。\n副队长林一舟插话说：\n“风要起了。”";
        assert_eq!(names(&speakers(&c, text)), ["林一舟"]);
    }

    #[test]
    fn a_name_in_what_was_said_is_no_subject_for_the_next_pronoun() {
        let c = cast(&[("林一舟", &[], M), ("老周", &[], M), ("苏晚", &[], F)]);
        let text = "林一舟听苏晚说，老周已经同意了，高兴地笑了。\n他对苏晚说：\n“那就好。”";
        assert_eq!(names(&speakers(&c, text)), ["林一舟"]);
    }

    #[test]
    fn a_pronoun_is_not_the_one_its_own_clause_names() {
        let c = cast(&[("林一舟", &[], M), ("老周", &[], M)]);
        let text = "林一舟在院子里种花。\n这时候，老周来了。\n“谁叫你来的？”\n他问老周。";
        assert_eq!(names(&speakers(&c, text)), ["林一舟"]);
    }

    #[test]
    fn one_of_a_group_is_not_the_next_pronoun() {
        let c = cast(&[("乔伯年", &[], M), ("石钟", &["老石"], M)]);
        let text = "乔伯年送走了客人。\n老石他们告辞后，他躺倒在床上。\n他在心里说：\n“我没发烧……”";
        assert_eq!(names(&speakers(&c, text)), ["乔伯年"]);
    }

    #[test]
    fn the_narrator_of_a_book_in_the_first_person_speaks_as_a_character() {
        let c = cast(&[("苏念", &[], F), ("我", &[], Gender::Unknown)]);
        let text = "我推开宿舍的门。\n“回来啦？”苏念笑着问。\n我们都笑了。\n我点点头，“明天还要考试。”\n“那你早点睡。”";
        assert_eq!(names(&speakers(&c, text)), ["苏念", "我", "苏念"]);
    }

    #[test]
    fn in_a_book_in_the_first_person_others_speak_to_the_narrator() {
        let c = cast(&[(NARRATOR, &[], M), ("许凡", &[], F), ("唐甜甜", &[], F)]);
        // 许凡 asks no one named: the narrator, in every scene, answers.
        let text = "唐甜甜在楼上换尿垫。\n早上八点，许凡推门进来，把包子往桌上一放。\n“夜班怎么样？”\n“来了只橘猫。”";
        assert_eq!(names(&speakers(&c, text)), ["许凡", NARRATOR]);
        // One called by a name the cast does not hold is the narrator.
        let (a, _) = spoken(&c, "");
        assert_eq!(a.vocative("“陈哥，你笑什么？”"), Some(Who::Character(0)));
        assert_eq!(a.vocative("“小陈，又是你值班？”"), Some(Who::Character(0)));
        assert_eq!(a.vocative("“凡姐，我先走了。”"), Some(Who::Character(1)));
        assert_eq!(a.vocative("“大哥，你笑什么？”"), None);
        // 她 is never the narrator, who is 我, whatever her gender.
        let c2 = cast(&[(NARRATOR, &[], F), ("苏念", &[], F)]);
        let text = "苏念推门进来。\n我看着她，半天没出声。\n她说：“回来啦？”";
        assert_eq!(names(&speakers(&c2, text)), ["苏念"]);
        // Not in a book told in the third person.
        let c = cast(&[("许凡", &[], F), ("唐甜甜", &[], F)]);
        let (a, _) = spoken(&c, "");
        assert_eq!(a.vocative("“陈哥，你笑什么？”"), None);
    }

    #[test]
    fn in_a_book_in_the_first_person_the_one_calling_the_narrators_father_is_the_narrator() {
        let c = cast(&[
            (NARRATOR, &[], M),
            ("我爸", &["爸"], M),
            ("我姐", &["姐"], F),
        ]);
        let text = "我姐开了门，我爸在厨房里炒菜。\n“爸，我回来了。”";
        assert_eq!(names(&speakers(&c, text)), [NARRATOR]);
        // 是我妈: the narrator's family calls.
        let c = cast(&[
            (NARRATOR, &["嘉树"], M),
            ("我妈", &["妈"], F),
            ("许凡", &[], F),
        ]);
        let text = "许凡走了。\n下午一点，我刚躺下，手机就响了。是我妈。\n“嘉树，睡了没有？”\n“刚躺下。”\n“晚上回来吃饭。”";
        assert_eq!(names(&speakers(&c, text)), ["我妈", NARRATOR, "我妈"]);
        // A screen that shows 母上.
        let text = "许凡走了。\n我的手机响了。屏幕上跳出两个字——“母上”。\n“喂，妈。”\n“下班了没有？”\n“下了。”";
        assert_eq!(names(&speakers(&c, text)), [NARRATOR, "我妈", NARRATOR]);
    }

    #[test]
    fn a_bare_office_title_is_the_one_last_named_with_it() {
        let c = cast(&[("书记", &[], M), ("曹书记", &[], M), ("苏晚", &[], F)]);
        let text = "曹书记拉着苏晚进了门。\n书记问她：\n“吃了没有？”";
        assert_eq!(names(&speakers(&c, text)), ["曹书记"]);
    }

    #[test]
    fn the_one_spoken_to_after_a_preposition_does_not_speak() {
        let c = cast(&[("林一舟", &[], M), ("老周", &[], M)]);
        let text = "老周坐在船头。\n“明早就走！”\n林一舟站起来，急急地对老周建议。";
        assert_eq!(names(&speakers(&c, text)), ["林一舟"]);
    }

    #[test]
    fn a_tag_without_a_subject_takes_the_sentence_or_paragraph_before() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        let text = "苏晚给林一舟倒了茶；一边笑着说：\n“喝吧。”";
        assert_eq!(names(&speakers(&c, text)), ["苏晚"]);
        let text = "“来了？”\n“嗯。”\n苏晚半天没有作声。\n过了一会，才轻轻地说：\n“坐吧。”";
        assert_eq!(names(&speakers(&c, text))[2], "苏晚");
    }

    #[test]
    fn the_one_heard_speaks_and_titles_or_pronouns_in_apposition_open_a_clause() {
        let c = cast(&[("林一舟", &[], M), ("老周", &[], M)]);
        let text = "老周走到窗下。\n他听见林一舟在屋里嘟囔说：\n“明天再走。”";
        assert_eq!(names(&speakers(&c, text)), ["林一舟"]);
        let text = "老周坐在门口，船队会计林一舟跑进来说：\n“水涨了！”";
        assert_eq!(names(&speakers(&c, text)), ["林一舟"]);
        let text = "老周看了看天。\n他林一舟什么时候怕过风浪？他朝船头喊：\n“起锚！”";
        assert_eq!(names(&speakers(&c, text)), ["林一舟"]);
        let text = "老周坐在船头，他儿子林一舟走过来悄悄说：\n“爸，有人找。”";
        assert_eq!(names(&speakers(&c, text)), ["林一舟"]);
    }

    #[test]
    fn the_last_speaker_reacting_listens_to_the_next_quote() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        let text = "苏晚问林一舟：“吃了吗？”\n“吃过了。”\n“骗人！”\n林一舟不好意思地笑了。";
        assert_eq!(names(&speakers(&c, text)), ["苏晚", "林一舟", "苏晚"]);
    }

    #[test]
    fn actor_after_the_quote_speaks() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        let text = "林一舟问苏晚：“冷吗？”\n“有点。”\n“给你。”\n林一舟脱下外套递过去。";
        assert_eq!(names(&speakers(&c, text)), ["林一舟", "苏晚", "林一舟"]);
    }

    #[test]
    fn crowds_speak() {
        let c = cast(&[("林一舟", &[], M)]);
        assert_eq!(names(&speakers(&c, "“万岁！”众人齐声喊道。")), ["众人"]);
        let text = "林一舟说：“上船。”\n众人一面跑一面喊道：\n“开船！”\n“快开船！”";
        assert_eq!(names(&speakers(&c, text)), ["林一舟", "众人", "众人"]);
        // Not past narration that moves on.
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        let text = "众人纷纷举杯：“干杯！”\n散场前，林一舟在露台上找到了苏晚。\n“刚才的事，是我没处理好。”\n“不关你的事。”";
        let got = speakers(&c, text);
        assert!(
            got[1..].iter().all(|n| n.as_deref() != Some("众人")),
            "{got:?}"
        );
    }

    #[test]
    fn the_colon_before_speaks_the_first_quote_the_tag_between_the_next() {
        let c = cast(&[("白明川", &[], M), ("徐治功", &[], M)]);
        let text = "白明川问徐治功：\n“你看怎办？”徐治功立刻说：“让他回去。”";
        assert_eq!(names(&speakers(&c, text)), ["白明川", "徐治功"]);
    }

    #[test]
    fn a_role_noun_right_after_a_name_is_that_character() {
        let c = cast(&[("孙玉厚", &[], M), ("老汉", &[], M), ("孙少安", &[], M)]);
        // 老汉 here is 孙玉厚, named as the subject just before.
        let text = "孙玉厚放下烟锅，老汉对儿子说：“不要去！”\n“我偏要去。”孙少安说。";
        assert_eq!(names(&speakers(&c, text)), ["孙玉厚", "孙少安"]);
        // With nobody named before it, 老汉 is a character of its own.
        let text = "老汉对儿子说：“不要去！”";
        assert_eq!(names(&speakers(&c, text)), ["老汉"]);
    }

    #[test]
    fn one_character_alias_only_before_a_verb() {
        let c = cast(&[("田晓霞", &["霞"], F), ("林一舟", &[], M)]);
        let text = "晚霞满天，林一舟说：“走。”\n霞说：“好。”";
        assert_eq!(names(&speakers(&c, text)), ["林一舟", "田晓霞"]);
    }

    #[test]
    fn a_kinsman_who_speaks_to_him_is_not_him() {
        let c = cast(&[("周明远", &["明远"], M), ("周海生", &["海生"], M)]);
        // Tag after the quote: his father speaks to him, not he to himself.
        let text = "明远给父亲端来一碗热茶，又问：\n“家里的牛卖了没有？”\n\
            “牛卖了，你就安心把书念完！”\n他父亲对他说。";
        assert_eq!(names(&speakers(&c, text)), ["周明远", "(male)"]);
    }

    #[test]
    fn one_brought_in_speaks_though_the_cast_holds_the_word_for_them() {
        // The book's cast holds a 妇女 (a role the discovery made a
        // character): 有个妇女 brings her in, and she asks, not the man walking.
        let c = cast(&[("周明远", &["明远"], M), ("妇女", &[], F)]);
        let text = "明远背着柴走在河滩上，坡上面有个妇女问他：\n“你从镇上回来了？”";
        assert_eq!(names(&speakers(&c, text)), ["妇女"]);
        let c = cast(&[("周明远", &["明远"], M)]);
        assert_eq!(names(&speakers(&c, text)), ["(female)"]);
    }

    #[test]
    fn she_may_be_the_subject_when_one_of_the_other_gender_acts_on_her_in_between() {
        let c = cast(&[
            ("孟秋", &[], F),
            ("林素云", &["素云"], F),
            ("杨老栓", &["老栓"], M),
        ]);
        let she = |text: &'static str| {
            let lines: Vec<&str> = text.lines().collect();
            let spans = test_spans(&lines);
            let a = Attributor::new(&c);
            let views = test_views(&lines, &spans);
            let mentions = a.chapter_mentions(&views).concat();
            let at = lines.last().unwrap().find('她').unwrap();
            let m = mentions.iter().find(|m| m.start == at).unwrap().who;
            m.and_then(|w| a.name(w)).map(str::to_owned)
        };
        // 她 of 老栓又催她 is 孟秋, whom he presses; not 素云, gone since.
        let text = "素云吃过饭就回了厂里。\n孟秋见老栓又催她这事，只好应了。";
        assert_eq!(she(text).as_deref(), Some("孟秋"));
        // With no one in between she is not the clause's subject.
        let text = "素云吃过饭就回了厂里。\n孟秋在她床边坐下了。";
        assert_eq!(she(text).as_deref(), Some("林素云"));
        // Nor when the one in between is of her gender.
        let text = "素云吃过饭就回了厂里。\n孟秋见老栓的女儿又催她这事，只好应了。";
        assert_eq!(she(text).as_deref(), Some("林素云"));
    }

    #[test]
    fn his_brother_or_her_uncle_speaks_not_he_or_she() {
        let c = cast(&[("周明远", &["明远"], M), ("林素云", &["素云"], F)]);
        let said = |tag: &str| {
            let text = format!("明远和素云在院子里坐着。\n{tag}\n“快吃饭吧。”");
            names(&speakers(&c, &text)).join(" ")
        };
        assert_eq!(said("他哥说："), "(male)");
        assert_eq!(said("她二爸说："), "(male)");
        assert_eq!(said("她姐夫笑着说："), "(male)");
        assert_eq!(said("他舅妈对他说："), "(female)");
        assert_eq!(said("明远他姐说："), "(female)");
        // Not a word that only starts like kin.
        assert_eq!(said("他大声说："), "周明远");
        assert_eq!(said("他姑且笑着说："), "周明远");
        // What one knows opens no tag: 明远 speaks, not his brother.
        assert_eq!(said("明远知道，他哥看来非来不行了，就对素云说："), "周明远");
    }

    #[test]
    fn one_spoken_to_after_a_preposition_is_not_the_possessed_subject() {
        let c = cast(&[("周明远", &["明远"], M), ("杨老栓", &["老栓"], M)]);
        // 他旁边的老栓 is 老栓; 明远对尊敬的老栓说 is still 明远.
        let text = "明远和老栓在院子里坐着。\n他旁边的老栓笑着说：\n“喝茶。”";
        assert_eq!(names(&speakers(&c, text)), ["杨老栓"]);
        let text = "明远和老栓在院子里坐着。\n明远对尊敬的老栓说：\n“喝茶。”";
        assert_eq!(names(&speakers(&c, text)), ["周明远"]);
    }

    #[test]
    fn a_wife_with_no_ones_before_her_is_the_woman_of_the_scene() {
        let c = cast(&[("周明远", &["明远"], M), ("林素云", &["素云"], F)]);
        let text = "明远跑回家，扑上炕去亲儿子，却让素云把他的头推开了。\n\
            妻子嗔怒地说：\n“看你把娃娃都亲醒了！”";
        assert_eq!(names(&speakers(&c, text)), ["林素云"]);
        // Not the object of someone else's sentence (接上丈夫的话碴), nor an
        // old woman (老婆婆), nor a wife named long before.
        let text = "明远跑回家，扑上炕去亲儿子，却让素云把他的头推开了。\n\
            隔壁的老婆婆对他说：\n“娃娃睡了，你小声些！”";
        assert_eq!(names(&speakers(&c, text)), ["(female)"]);
        let text = "素云把他的头推开了。\n明远笑了。\n他坐下了。\n窗外起了风。\n\
            妻子说：\n“看你！”";
        assert_eq!(names(&speakers(&c, text)), ["(female)"]);
    }
}
