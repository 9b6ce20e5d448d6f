//! The rules that give the quotes of one paragraph their speaker, strongest
//! first, over the narration around them and the turns of the conversation.

use std::cell::Cell;

use super::clause::{
    brought_in, clause_start, is_punct, is_subject, last_arrival, last_clause, marks, sentence_end,
    sentence_start, ungendered_arrival,
};
use super::mentions::{Mention, gender_slot, reports};
use super::scorer::{self, Candidates, FEATURE_NAMES, Feature};
use super::words::{has_speech_verb, narrates_speech, only_listened, self_reference};
use super::{Attributor, ParagraphView, Who};
use crate::text::quote::{SegmentKind, SpanRange};

/// How far back a quote looks for a character mentioned in the narration.
const RECENT_PARAGRAPHS: usize = 10;

/// Turns of a conversation looked back at for who takes part in it.
const SCENE_TURNS: usize = 4;

/// Words a quote opens with when it answers the one before.
const ANSWERS: &[&str] = &[
    "嗯", "是", "好", "对", "對", "不", "没", "沒", "哦", "噢", "行", "可以", "谢谢", "謝謝",
    "知道",
];

/// How far back the scorer takes everyone named as a candidate.
const WINDOW_PARAGRAPHS: usize = 3;

/// Longest `旁边的` between a possessor and the one possessed (他旁边的老周).
const MAX_POSSESSIVE_CHARS: usize = 4;

/// Prepositions before the one spoken to or acted on (对书记建议, 向少平说).
const TO_SOMEONE: &[char] = &['对', '對', '向', '朝', '冲', '衝', '跟', '给', '給', '同'];

/// More that make the one after them no possessed subject (少安和尊敬的…,
/// 把他的…): with [`TO_SOMEONE`].
const WITH_SOMEONE: &[char] = &['和', '与', '與', '把', '被', '替'];

/// Kin between a possessor and a name (他儿子润生, 他哥金光亮): the name
/// is the subject.
pub(super) const KIN_BEFORE_NAME: &[&str] = &[
    "儿子", "兒子", "女儿", "女兒", "哥", "哥哥", "大哥", "二哥", "姐", "姐姐", "大姐", "弟",
    "弟弟", "妹", "妹妹", "父亲", "父親", "母亲", "母親", "爸", "妈", "媽", "妻子", "丈夫", "老婆",
    "爱人", "愛人", "媳妇", "媳婦", "侄子", "侄女", "女婿", "外甥",
];

/// Verbs of hearing before the one heard speaking (听见孙玉亭说).
const HEARING: &[&str] = &[
    "听见", "聽見", "听到", "聽到", "听得", "聽得", "只听", "只聽",
];

/// What is heard of one who speaks (运生的声音：).
const VOICES: &[&str] = &[
    "声音",
    "聲音",
    "喊声",
    "喊聲",
    "叫声",
    "叫聲",
    "唤声",
    "喚聲",
    "吼声",
    "吼聲",
    "话音",
    "話音",
    "嗓音",
    "喊叫声",
    "喊叫聲",
];

/// Longest `的焦急而嘶哑的声音` between a name and its voice, in bytes.
const MAX_VOICE_BYTES: usize = 10 * 3;

/// How sure a rule is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Strength {
    Weak,
    Medium,
    Strong,
}

#[derive(Debug, Clone, Copy)]
struct Candidate {
    who: Who,
    strength: Strength,
    addressee: Option<Who>,
    /// When `who` is a 他/她 after the quote: the other character of that
    /// gender named lately.
    other: Option<Who>,
}

/// What the rules know of a quote no tag names.
struct Latent<'t> {
    i: usize,
    previous: Option<usize>,
    prev_is_turn: bool,
    opens_with_quote: bool,
    turns: &'t [Turn],
    /// The characters who spoke a turn of the chapter so far, each once, in
    /// the order they first spoke.
    spoke: &'t [Who],
    vocative: Option<Who>,
    /// The best weak candidate of the quote's own paragraph.
    best: Option<Candidate>,
    /// A 他/她 tag that names nobody (`他问。` with no man named yet).
    someone: Option<Candidate>,
    /// The character last named before (not the last speaker, not the one addressed).
    recent: Option<Who>,
    /// Turn-taking's pick, of the pronoun's gender if a 他/她 tag names nobody.
    turn: Option<Who>,
    /// The one acting at the start of the next paragraph.
    next_subject: Option<Candidate>,
    /// The one acting at the end of the paragraph before.
    beat_before: Option<Candidate>,
    /// A colon before introduces the quote (老周蹲在码头边，站起身：).
    introduced: bool,
    first_quote: Option<usize>,
}

/// Who speaks a paragraph's quotes.
pub(super) struct Decision {
    /// The speaker of its quotes (but those in `own`).
    pub(super) speaker: Option<Who>,
    pub(super) addressee: Option<Who>,
    /// Quotes with a speaker of their own: (span index, speaker), in span order.
    pub(super) own: Vec<(usize, Who)>,
    /// The scorer chose `speaker` among candidates of both genders without
    /// being sure of the gender: a voice of neither reads it.
    pub(super) gender_unsure: bool,
    /// A tag (a strong candidate) named `speaker`.
    pub(super) tagged: bool,
}

/// A paragraph with dialogue, as one turn of a conversation.
#[derive(Debug, Clone, Copy)]
pub(super) struct Turn {
    pub(super) paragraph: usize,
    pub(super) speaker: Option<Who>,
    pub(super) addressee: Option<Who>,
    pub(super) vocative: Option<Who>,
}

/// True when `first` (the opening dialogue span of a paragraph) continues a
/// speech left open at the end of `previous` with the same mark.
pub(super) fn continues_speech(previous: &ParagraphView<'_>, first: &SpanRange) -> bool {
    previous.spans.last().is_some_and(|last| {
        last.kind == SegmentKind::Dialogue && !last.closed && last.open == first.open
    })
}

/// What the rules look at: the paragraphs of a chapter and the mentions in
/// their narration.
pub(super) struct Context<'c, 'a> {
    pub(super) attributor: &'c Attributor,
    pub(super) paragraphs: &'c [ParagraphView<'a>],
    pub(super) mentions: &'c [Vec<Mention>],
    /// Every character the chapter's narration names, in the order first named.
    pub(super) named: &'c [Who],
    /// Of each paragraph, whether it holds a character every word of
    /// [`FAR_END`] holds, once a rule asked (most hold none).
    pub(super) far_end_chars: &'c [Cell<Option<bool>>],
}

impl Context<'_, '_> {
    /// True when paragraph `i` holds 电, 電 or 筒, one of which every word
    /// of [`FAR_END`] holds.
    fn paragraph_holds_far_end_char(&self, i: usize) -> bool {
        static FINDERS: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 3]> =
            std::sync::LazyLock::new(|| ["电", "電", "筒"].map(memchr::memmem::Finder::new));
        let cached = &self.far_end_chars[i];
        cached.get().unwrap_or_else(|| {
            let text = self.paragraphs[i].text.as_bytes();
            let found = FINDERS.iter().any(|f| f.find(text).is_some());
            cached.set(Some(found));
            found
        })
    }

    /// Speaker of paragraph `i` (default for its quotes), its addressee, and
    /// quotes with a speaker of their own.
    pub(super) fn decide(
        &self,
        i: usize,
        previous: Option<usize>,
        prev_is_turn: bool,
        turns: &[Turn],
        spoke: &[Who],
        vocative: Option<Who>,
    ) -> Decision {
        let p = &self.paragraphs[i];
        let mut best: Option<Candidate> = None;
        // The span the best candidate speaks.
        let mut best_at = 0;
        let mut own = Vec::new();
        for (k, s) in p.spans.iter().enumerate() {
            if s.kind != SegmentKind::Dialogue {
                continue;
            }
            let before = (k > 0)
                .then(|| &p.spans[k - 1])
                .filter(|n| n.kind == SegmentKind::Narration)
                .and_then(|n| self.before_quote(i, n));
            let after = p
                .spans
                .get(k + 1)
                .filter(|n| n.kind == SegmentKind::Narration)
                .and_then(|n| self.after_quote(i, n));
            let mine = match (before, after) {
                (Some(b), Some(a)) if a.strength > b.strength => Some(a),
                (Some(b), _) => Some(b),
                (None, a) => a,
            };
            if let Some(c) = mine {
                if c.strength == Strength::Strong {
                    own.push((k, c.who));
                }
                if best.is_none_or(|b| c.strength > b.strength) {
                    best = Some(c);
                    best_at = k;
                }
            }
        }
        let accept = |c: Candidate| acceptable(c, vocative);
        let opens_with_quote = p
            .spans
            .first()
            .is_some_and(|s| s.kind == SegmentKind::Dialogue);
        let last_speaker = turns.last().and_then(|t| t.speaker);
        let reply = |c: Candidate| {
            reply_to(c, prev_is_turn && opens_with_quote, last_speaker, |o| {
                self.in_scene(i, o, turns)
            })
        };
        let prev_colon = previous
            .filter(|_| opens_with_quote)
            .and_then(|j| self.colon_before(j));
        let strong = best.filter(|c| c.strength == Strength::Strong);
        let medium = best.filter(|c| c.strength == Strength::Medium);
        let next = || self.next_paragraph_verb(i);
        // `白明川问徐治功：` / `“你看怎办？”徐治功立刻说：“…”`: the strong
        // candidate speaks a later quote; the colon before speaks the first.
        let first_quote = p.spans.iter().position(|s| s.kind == SegmentKind::Dialogue);
        // “我是孙少平。…”: one who names themselves speaks, unless a tag says otherwise.
        let named = first_quote
            .and_then(|k| self.attributor.self_named(p.spans[k].text(p.text)))
            .map(|who| Candidate {
                who,
                strength: Strength::Strong,
                addressee: None,
                other: None,
            });
        // “爸，我回来了。”: in a book told in the first person, the one who
        // calls the narrator's father 爸 is the narrator.
        let kin_caller = vocative
            .filter(|v| self.attributor.is_narrators_kin(*v))
            .and(self.attributor.narrator())
            .map(|who| Candidate {
                who,
                strength: Strength::Medium,
                addressee: vocative,
                other: None,
            });
        let order = if prev_colon.is_some() && strong.is_some() && Some(best_at) != first_quote {
            [prev_colon, strong, named, kin_caller, medium, next()]
        } else {
            [strong, prev_colon, named, kin_caller, medium, next()]
        };
        // `他问。` where no man was named yet: a man speaks, but which one the
        // turns may tell.
        let mut someone: Option<Candidate> = None;
        for c in order.into_iter().flatten().map(reply) {
            if let Who::Someone(_) | Who::Unnamed(_) = c.who {
                someone = someone.or(Some(c));
                continue;
            }
            // The narration's subject is the one the quote calls by name
            // (…金俊武…对他招呼说：“少安，…”): the other character of that
            // sentence speaks to them.
            if Some(c.who) == vocative
                && let Some(other) = c.addressee.filter(|a| Some(*a) != vocative)
            {
                return Decision {
                    speaker: Some(other),
                    addressee: Some(c.who),
                    own,
                    gender_unsure: false,
                    tagged: false,
                };
            }
            if accept(c) {
                return Decision {
                    speaker: Some(c.who),
                    addressee: c.addressee,
                    own,
                    gender_unsure: false,
                    tagged: c.strength == Strength::Strong,
                };
            }
        }
        let recent =
            self.recent_mention(i, &[last_speaker.filter(|_| !turns.is_empty()), vocative]);
        let introduced = first_quote.is_some_and(|k| match k {
            0 => previous.is_some_and(|j| self.closing_colon(j).is_some()),
            k => self.ends_in_colon(i, &p.spans[k - 1]),
        });
        let turn = turn_taking(turns, vocative, recent)
            .filter(|w| self.fits_pronoun(someone.map(|c| c.who), *w));
        // The next paragraph opens with one who kept silent (知意没接话。): the
        // quote was said to them, not by them.
        let (next_subject, silent) = match self.next_paragraph_subject(i) {
            Some((c, true)) => (None, Some(c.who)),
            Some((c, false)) => (Some(c), None),
            None => (None, None),
        };
        let l = Latent {
            i,
            previous,
            prev_is_turn,
            opens_with_quote,
            turns,
            spoke,
            vocative,
            best,
            someone,
            recent,
            turn,
            next_subject,
            beat_before: previous.and_then(|j| self.action_beat(j)),
            introduced,
            first_quote,
        };
        let cascade = self.cascade(&l);
        let mut candidates = self.latent_candidates(&l, cascade);
        if let Some(silent) = silent {
            candidates.retain(|w| w != silent);
        }
        let mut gender_unsure = false;
        let pronoun = someone.map(|c| c.who);
        // 身后忽然有人开口。/ 一个低沉的声音从回廊那头传来。: a voice nobody
        // names said it, not someone in the scene.
        if let Some(voice) = self.unnamed_voice_after(i) {
            return Decision {
                speaker: voice,
                addressee: None,
                own,
                gender_unsure: false,
                tagged: false,
            };
        }
        // 门外站着一个人，短发，…: someone new and unnamed came into view
        // right before, and the quote that opens this paragraph is theirs.
        if opens_with_quote
            && !prev_is_turn
            && let Some(arrived) = previous.and_then(|j| self.arrival_before(i, j))
        {
            return Decision {
                speaker: arrived,
                addressee: None,
                own,
                gender_unsure: false,
                tagged: false,
            };
        }
        // A crowd shouts on (“快追！” “别让他们跑了！”), right after its
        // turn (not past narration that moves on: 散场前，…); a quote a
        // colon introduced is that unnamed one's; `他问。` is a man's.
        let who = match last_speaker {
            Some(crowd @ Who::Crowd(_)) if prev_is_turn => Some(crowd),
            _ if introduced => pronoun,
            _ => {
                let genders = &self.attributor.genders;
                let of_slot = |slot| move |w: Who| matches!(w, Who::Character(k) if gender_slot(genders[k]) == Some(slot));
                if let Some(Who::Someone(slot) | Who::Unnamed(slot)) = pronoun {
                    candidates.retain(of_slot(slot));
                    // 他父亲对他说。: not the one the tag says they speak to.
                    if let Some(to) = someone.and_then(|c| c.addressee) {
                        candidates.retain(|w| w != to);
                    }
                }
                // “…叫老娘…”, “老公，…”: one who calls herself 老娘 or her
                // husband 老公 is a woman, 老子 or 贫僧 a man (when one of that
                // gender is a candidate).
                if let Some(slot) = first_quote
                    .and_then(|k| self_reference(p.spans[k].text(p.text)))
                    .filter(|slot| candidates.0.iter().any(|c| of_slot(*slot)(c.who)))
                {
                    candidates.retain(of_slot(slot));
                }
                self.trace(i, cascade, &candidates);
                // One who just asked does not answer (“船票呢？” / 林一舟掏出船票。
                // / “明早六点。”), though a question that ends a turn is
                // followed by its asker in about 1 of 10 WP2021 quotes: the
                // weights alone let them speak again.
                // Not when narration came between (“立新怎么了？” / 沈知微把情况
                // 说了一遍。 / 何美玲沉默了很久。 / “什么时候的事？”): the
                // question was answered there.
                if prev_is_turn {
                    candidates.drop_unless_alone(Feature::AskedLast);
                }
                // A quote alone in its paragraph right after a paragraph with
                // a quote is the other one's: the one who spoke there goes on
                // in the same paragraph, not in a new one (“来得挺快啊。”苏晴头
                // 也不抬。 / “你比我快。”).
                let bare = p.spans.iter().all(|s| s.kind == SegmentKind::Dialogue);
                let after_quote = previous.is_some_and(|j| {
                    self.paragraphs[j]
                        .spans
                        .iter()
                        .any(|s| s.kind == SegmentKind::Dialogue)
                });
                if bare && after_quote {
                    candidates.drop_unless_alone(Feature::LastSpeaker);
                }
                match candidates.best(self.attributor.style.weights()) {
                    // An exchange with someone unnamed (她红着脸说：“…” / 他说：
                    // “…” / “…”): the one named does not answer themselves.
                    Some(best)
                        if prev_is_turn
                            && Some(best) == last_speaker
                            && matches!(turn, Some(Who::Someone(_) | Who::Unnamed(_))) =>
                    {
                        turn
                    }
                    Some(best) => {
                        let genders = &self.attributor.genders;
                        let share =
                            candidates.gender_share(self.attributor.style.weights(), best, |w| {
                                match w {
                                    Who::Character(k) => gender_slot(genders[k]),
                                    _ => None,
                                }
                            });
                        gender_unsure = share < scorer::GENDER_SURE;
                        Some(best)
                    }
                    None => pronoun,
                }
            }
        };
        // Not a crowd that shouted: it does not take the next turn.
        let addressee = last_speaker
            .filter(|l| Some(*l) != who && !turns.is_empty() && !matches!(l, Who::Crowd(_)));
        Decision {
            speaker: who,
            addressee,
            own,
            gender_unsure,
            tagged: false,
        }
    }

    /// What the rules alone would say of a quote no tag names (one of the
    /// scorer's features): the listener reacting, turn-taking, the one
    /// acting around the quote, the first named after it.
    fn cascade(&self, l: &Latent<'_>) -> Option<Who> {
        let Latent {
            i,
            prev_is_turn,
            opens_with_quote,
            turns,
            vocative,
            best,
            someone,
            turn,
            next_subject,
            beat_before,
            introduced,
            ..
        } = *l;
        let last_speaker = turns.last().and_then(|t| t.speaker);
        let accept = |c: Candidate| acceptable(c, vocative);
        let reply = |c: Candidate| {
            reply_to(c, prev_is_turn && opens_with_quote, last_speaker, |o| {
                self.in_scene(i, o, turns)
            })
        };
        if let Some(c) = someone
            && turn.is_none()
        {
            return Some(c.who);
        }
        // The one who spoke last reacting (少安不好意思地笑了。) is the listener.
        if prev_is_turn
            && let Some(c) = next_subject
                .filter(|c| accept(*c) && (turn.is_none() || Some(c.who) != last_speaker))
        {
            return Some(c.who);
        }
        if prev_is_turn && let Some(who) = turn {
            return Some(who);
        }
        let beat = best
            .or(next_subject)
            .or(beat_before.filter(|_| opens_with_quote && !prev_is_turn));
        if let Some(c) = beat.map(reply).filter(|c| accept(*c)) {
            return Some(c.who);
        }
        if let Some(who) = turn {
            return Some(who);
        }
        // Nobody named before the quote: the first one named after it, unless
        // a colon introduced it (老周蹲在码头边，站起身：): that one speaks,
        // named or not.
        // Only for the first quote of a conversation: inside one, a quote
        // nobody can be given is often an unnamed one's (老周 undiscovered),
        // and a wrong voice is worse than the neutral one.
        if !introduced
            && turns.is_empty()
            && let Some(who) = self.next_mention(i, vocative)
        {
            return Some(who);
        }
        None
    }

    /// True unless `someone` is a 他/她 nobody was named for and `w` a
    /// character known to be of the other gender.
    fn fits_pronoun(&self, someone: Option<Who>, w: Who) -> bool {
        match (someone, w) {
            (Some(Who::Someone(slot) | Who::Unnamed(slot)), Who::Character(c)) => {
                gender_slot(self.attributor.genders[c]).is_none_or(|s| s == slot)
            }
            _ => true,
        }
    }

    /// The candidates of paragraph `i`'s quote and their features, for
    /// `scripts/train-speaker-scorer.sh` (`RUST_LOG=tingshu::speaker::features=trace`).
    fn trace(&self, i: usize, cascade: Option<Who>, candidates: &Candidates) {
        if !tracing::enabled!(target: "tingshu::speaker::features", tracing::Level::TRACE) {
            return;
        }
        let json = serde_json::json!({
            "i": i,
            "text": self.paragraphs[i].text,
            "cascade": cascade.and_then(|w| self.attributor.name(w)),
            "candidates": candidates.0.iter().map(|c| serde_json::json!({
                "name": self.attributor.name(c.who),
                "f": c.features
                    .iter()
                    .zip(FEATURE_NAMES)
                    .filter(|(f, _)| **f)
                    .map(|(_, name)| name)
                    .collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        tracing::trace!(target: "tingshu::speaker::features", "FEATURES {json}");
    }

    /// The candidates of a quote no tag names, with what each has for it.
    fn latent_candidates(&self, l: &Latent<'_>, cascade: Option<Who>) -> Candidates {
        let mut c = Candidates::default();
        let last = l.turns.last();
        let last_speaker = last.and_then(|t| t.speaker);
        c.mark(l.turn, Feature::Turn);
        if l.prev_is_turn {
            c.mark(l.turn, Feature::TurnAdjacent);
        }
        if let Some(t) = last {
            c.mark(
                t.vocative.filter(|v| Some(*v) != t.speaker),
                Feature::LastVocative,
            );
            c.mark(t.addressee, Feature::LastAddressee);
            c.mark(
                l.turns
                    .iter()
                    .rev()
                    .skip(1)
                    .take(3)
                    .find_map(|t| t.speaker.filter(|s| Some(*s) != last_speaker)),
                Feature::BeforeLast,
            );
            c.mark(last_speaker, Feature::LastSpeaker);
            if l.prev_is_turn {
                c.mark(last_speaker, Feature::LastSpeakerAdjacent);
            }
        }
        let next = l.next_subject.map(|n| n.who);
        c.mark(next, Feature::NextSubject);
        if l.prev_is_turn {
            c.mark(next, Feature::NextSubjectAdjacent);
        }
        if l.opens_with_quote && !l.prev_is_turn {
            c.mark(l.beat_before.map(|a| a.who), Feature::ActionBefore);
        }
        c.mark(l.recent, Feature::Recent);
        let p = &self.paragraphs[l.i];
        let own_before = l.first_quote.filter(|&k| k > 0).and_then(|k| {
            let n = &p.spans[k - 1];
            self.mentions_in(l.i, n.start, n.end)
                .iter()
                .rev()
                .find_map(|m| m.who.filter(|w| matches!(w, Who::Character(_))))
        });
        c.mark(
            own_before.or_else(|| self.recent_mention(l.i, &[])),
            Feature::Nearest,
        );
        let after = self.next_mention(l.i, l.vocative);
        c.mark(after, Feature::NextMention);
        if !l.introduced && l.turns.is_empty() {
            c.mark(after, Feature::NextMentionOpening);
        }
        c.mark_all(Feature::Crowd, |w| matches!(w, Who::Crowd(_)));
        c.mark(cascade, Feature::Cascade);
        if let Some(j) = last.map(|t| t.paragraph) {
            let q = &self.paragraphs[j];
            let asked = q
                .spans
                .iter()
                .rev()
                .find(|s| s.kind == SegmentKind::Dialogue)
                .is_some_and(|s| {
                    s.text(q.text)
                        .trim_end_matches(['”', '」', '』', '"'])
                        .ends_with(['？', '?'])
                });
            if asked {
                c.mark(last_speaker, Feature::AskedLast);
            }
            let answers = l.first_quote.is_some_and(|k| {
                let t = p.spans[k].text(p.text);
                let inner = t
                    .get(t.chars().next().map_or(0, char::len_utf8)..)
                    .unwrap_or("");
                ANSWERS.iter().any(|a| inner.starts_with(a))
            });
            if answers {
                c.mark(last_speaker, Feature::AnsweredLast);
            }
        }
        // `她答。` is a tag: who it names spoke the quote before.
        let tag_before = l.previous.is_some_and(|j| self.is_tag(j));
        let beat = l.beat_before.map(|a| a.who);
        c.mark(
            beat,
            if tag_before {
                Feature::TagBefore
            } else {
                Feature::ActionBeforeAny
            },
        );
        if let Some(j) = l.previous {
            let before: Vec<Who> = self.mentions[j].iter().filter_map(|m| m.who).collect();
            c.mark_all(Feature::PreviousParagraph, |w| before.contains(&w));
        }
        let in_quotes: Vec<Who> = p
            .spans
            .iter()
            .filter(|s| s.kind == SegmentKind::Dialogue)
            .flat_map(|s| {
                let quote = s.text(p.text);
                let kin = self
                    .attributor
                    .kin_spoken_of(quote, l.i, self.mentions, l.turns);
                self.attributor.named_in(quote).into_iter().chain(kin)
            })
            .collect();
        c.mark_all(Feature::NamedInQuote, |w| in_quotes.contains(&w));
        for who in l.spoke {
            c.mark(Some(*who), Feature::SpokeBefore);
        }
        if l.prev_is_turn && l.turns.len() >= 2 {
            c.mark(l.turns[l.turns.len() - 2].speaker, Feature::TwoBack);
        }
        if let Some(j) = (l.i + 1..self.paragraphs.len()).find(|&j| !self.paragraphs[j].skipped) {
            let after: Vec<Who> = self.mentions[j].iter().filter_map(|m| m.who).collect();
            c.mark_all(Feature::NextParagraph, |w| after.contains(&w));
        }
        for j in l.i.saturating_sub(WINDOW_PARAGRAPHS)..l.i {
            for m in &self.mentions[j] {
                c.mark(
                    m.who.filter(|w| matches!(w, Who::Character(_))),
                    Feature::Window,
                );
            }
        }
        // The narrator of a book told in the first person is in every scene.
        c.mark(self.attributor.narrator(), Feature::Window);
        for who in self.named {
            c.mark(Some(*who), Feature::Chapter);
        }
        c.0.retain(|x| Some(x.who) != l.vocative);
        c
    }

    /// The first character mentioned in the narration of the few paragraphs
    /// after `i`, other than `exclude`.
    fn next_mention(&self, i: usize, exclude: Option<Who>) -> Option<Who> {
        let end = (i + 1 + RECENT_PARAGRAPHS).min(self.mentions.len());
        (i + 1..end).find_map(|j| {
            self.mentions[j]
                .iter()
                .filter_map(|m| m.who)
                .find(|w| matches!(w, Who::Character(_)) && Some(*w) != exclude)
        })
    }

    /// True when narration paragraph `i` opens with a speech tag (`她问。`)
    /// for the quote before it.
    pub(super) fn is_tag(&self, i: usize) -> bool {
        let p = &self.paragraphs[i];
        p.spans.first().is_some_and(|n| {
            n.kind == SegmentKind::Narration
                && !narrates_speech(&p.text[n.start..sentence_end(p.text, n.start, n.end)])
                && self
                    .after_quote(i, n)
                    .is_some_and(|c| c.strength == Strength::Strong)
        })
    }

    /// The one who speaks in narration paragraph `i` without being quoted
    /// (沈知微把情况简单说了一遍。): a turn of the conversation.
    pub(super) fn narrated_turn(&self, i: usize) -> Option<Who> {
        let p = &self.paragraphs[i];
        let n = p
            .spans
            .first()
            .filter(|n| n.kind == SegmentKind::Narration)?;
        if !narrates_speech(&p.text[n.start..sentence_end(p.text, n.start, n.end)]) {
            return None;
        }
        self.after_quote(i, n)
            .filter(|c| c.strength == Strength::Strong)
            .map(|c| c.who)
            .filter(|w| matches!(w, Who::Character(_)))
    }

    /// True when narration paragraph `i` opens with `who` acting (少平愣住了。).
    pub(super) fn is_beat_of(&self, i: usize, who: Option<Who>) -> bool {
        let p = &self.paragraphs[i];
        let Some(n) = p.spans.first() else {
            return false;
        };
        let end = sentence_end(p.text, n.start, n.end);
        who.is_some()
            && self
                .mentions_in(i, n.start, end)
                .iter()
                .find(|m| m.who.is_some() && is_subject(p.text, m, n.start))
                .is_some_and(|m| m.who == who)
    }

    /// The character mentioned last in the narration of the few paragraphs
    /// before `i`, other than those in `exclude` (the last speaker, the one
    /// this quote addresses).
    fn recent_mention(&self, i: usize, exclude: &[Option<Who>]) -> Option<Who> {
        (i.saturating_sub(RECENT_PARAGRAPHS)..i)
            .rev()
            .find_map(|j| {
                self.mentions[j]
                    .iter()
                    .rev()
                    .filter_map(|m| m.who)
                    .find(|w| matches!(w, Who::Character(_)) && !exclude.contains(&Some(*w)))
            })
    }

    /// True when `who` spoke or was spoken to in the last few turns, or the
    /// narration of the paragraphs just before `i` names them.
    fn in_scene(&self, i: usize, who: Who, turns: &[Turn]) -> bool {
        turns
            .iter()
            .rev()
            .take(SCENE_TURNS)
            .any(|t| t.speaker == Some(who) || t.addressee == Some(who))
            || self.mentions[i.saturating_sub(RECENT_PARAGRAPHS)..i]
                .iter()
                .flatten()
                .any(|m| m.who == Some(who))
    }

    /// True when paragraph `i` names nobody in `start..end` but the ones
    /// spoken to (才问少平：).
    fn names_only_listeners(&self, i: usize, start: usize, end: usize) -> bool {
        let text = self.paragraphs[i].text;
        self.mentions_in(i, start, end)
            .iter()
            .all(|m| after_preposition(&text[..m.start]))
    }

    pub(super) fn mentions_in(&self, i: usize, start: usize, end: usize) -> &[Mention] {
        let all = &self.mentions[i];
        let from = all.partition_point(|m| m.start < start);
        let to = all.partition_point(|m| m.start < end);
        &all[from..to]
    }

    /// Narration right before a quote in the same paragraph.
    fn before_quote(&self, i: usize, n: &SpanRange) -> Option<Candidate> {
        let text = self.paragraphs[i].text;
        let body = text[n.start..n.end].trim_end_matches(|c: char| c.is_whitespace());
        let last = body.chars().last()?;
        let body_end = n.start + body.len();
        let strength = match last {
            '：' | ':' => Strength::Strong,
            '，' | ',' => {
                let clause_start = clause_start(text, body_end - last.len_utf8(), n.start);
                if has_speech_verb(&text[clause_start..body_end]) {
                    Strength::Strong
                } else {
                    Strength::Medium
                }
            }
            '。' | '！' | '？' | '!' | '?' | '…' => Strength::Medium,
            _ if has_speech_verb(last_clause(text, n.start, body_end)) => Strength::Strong,
            _ => return None,
        };
        let end = body_end - if is_punct(last) { last.len_utf8() } else { 0 };
        let start = sentence_start(text, n.start, end);
        if let Some(who) = self.heard(i, start, end) {
            return Some(Candidate {
                who,
                strength,
                addressee: None,
                other: None,
            });
        }
        // `她听见柜台后面有个人说：`: one heard whom nobody names; the one
        // who hears does not speak.
        if self.hears_someone(i, start, end) {
            return None;
        }
        // `他让润叶坐下；一边抱歉地说：` the subject of the sentence before.
        let found = self.subject_in(i, start, end, true).or_else(|| {
            (start > n.start && self.names_only_listeners(i, start, end))
                .then(|| {
                    let mark = text[..start]
                        .char_indices()
                        .next_back()
                        .map_or(start, |(j, _)| j);
                    self.subject_in(i, sentence_start(text, n.start, mark), end, true)
                })
                .flatten()
        });
        if let Some((who, addressee)) = found {
            return Some(Candidate {
                who,
                strength,
                addressee,
                other: None,
            });
        }
        // `过了一会，才痛苦地说：` / `等咽下这口饭后，才问少平：` with no
        // subject in the whole paragraph: the one acting before.
        (strength == Strength::Strong
            && start == n.start
            && n.start == 0
            && self.names_only_listeners(i, n.start, body_end))
        .then(|| self.actor_before(i))
        .flatten()
        .filter(|c| {
            !self
                .mentions_in(i, n.start, body_end)
                .iter()
                .any(|m| m.who == Some(c.who))
        })
    }

    /// `他听见孙玉亭嘟囔说：`, `传来运生焦急的声音：`: the one heard speaking
    /// in `text[start..end]`.
    fn heard(&self, i: usize, start: usize, end: usize) -> Option<Who> {
        let text = self.paragraphs[i].text;
        let mentions = self.mentions_in(i, start, end);
        // Bounded before anything scans `rest`: the attributor stays linear
        // on a sentence of 200,000 names.
        let voice = |m: &Mention| {
            let rest = &text[m.end..end];
            rest.len() <= MAX_VOICE_BYTES
                && rest.contains('的')
                && VOICES.iter().any(|v| rest.ends_with(v))
                && !mentions.iter().any(|o| o.start > m.start)
        };
        mentions
            .iter()
            .find(|m| {
                m.who.is_some()
                    && ((HEARING.iter().any(|h| {
                        // 没听见女儿说什么: what was not heard was not said.
                        text[..m.start]
                            .strip_suffix(h)
                            .is_some_and(|before| !before.ends_with(['没', '沒', '未', '不']))
                    }) && has_speech_verb(&text[m.end..end]))
                        || voice(m))
            })
            .and_then(|m| m.who)
    }

    /// True when the last clause of `text[start..end]` hears someone speak
    /// (听见…说) and names nobody after the verb of hearing.
    fn hears_someone(&self, i: usize, start: usize, end: usize) -> bool {
        let text = self.paragraphs[i].text;
        let start = clause_start(text, end, start);
        // One pass for the characters every word of HEARING holds.
        if !text[start..end].contains(['听', '聽']) {
            return false;
        }
        HEARING.iter().any(|h| {
            text[start..end].find(h).is_some_and(|at| {
                let after = start + at + h.len();
                has_speech_verb(&text[after..end])
                    && !self.mentions_in(i, after, end).iter().any(|m| {
                        m.who
                            .is_some_and(|w| matches!(w, Who::Character(_) | Who::Crowd(_)))
                    })
            })
        })
    }

    /// The caller, when the narration at `text[start..end]` opens with the
    /// far end of a telephone (电话那头的女声…, 听筒里传来…) and names nobody
    /// before it: the character a screen showed or the narration said called
    /// in the few paragraphs before (屏幕上跳出两个字：“蔓姐”, 是苏晴打来的).
    fn far_end(&self, i: usize, start: usize, end: usize) -> Option<Who> {
        self.opens_far_end(i, start, end)
            .then(|| self.caller_before(i, start, MAX_CALL_PARAGRAPHS))
            .flatten()
    }

    /// True when the narration right around quote `k` of paragraph `i`
    /// (the sentence before it, or the one after) opens with the far end of
    /// a telephone: `电话那头的声音大得连陆远都听得见：“…”`.
    pub(super) fn far_end_speaks(&self, i: usize, k: usize) -> bool {
        let p = &self.paragraphs[i];
        let before = (k > 0)
            .then(|| &p.spans[k - 1])
            .filter(|n| n.kind == SegmentKind::Narration);
        let after = p
            .spans
            .get(k + 1)
            .filter(|n| n.kind == SegmentKind::Narration);
        // Where `text[start..end]` ends but its closing marks.
        let body_end = |start: usize, end: usize| {
            start
                + p.text[start..end]
                    .trim_end_matches(|c: char| c.is_whitespace() || is_punct(c))
                    .len()
        };
        // Not when the sentence names whose voice comes down the line
        // (听筒里远远传来我妈的声音).
        let far = |start: usize, end: usize| {
            self.opens_far_end(i, start, end) && self.heard(i, start, end).is_none()
        };
        before.is_some_and(|n| {
            let end = body_end(n.start, n.end);
            far(sentence_start(p.text, n.start, end), end)
        }) || after.is_some_and(|n| {
            far(
                n.start,
                body_end(n.start, sentence_end(p.text, n.start, n.end)),
            )
        })
    }

    /// True when the narration at `text[start..end]` opens with the far end
    /// of a telephone (电话那头的声音…, 听筒里传来…) and names nobody before it.
    pub(super) fn opens_far_end(&self, i: usize, start: usize, end: usize) -> bool {
        if !self.paragraph_holds_far_end_char(i) {
            return false;
        }
        let text = self.paragraphs[i].text;
        let clause_end = marks(&text[start..end])
            .find(|&(j, c)| j > 0 && is_punct(c))
            .map_or(end, |(j, _)| start + j);
        // Of the paragraphs that hold one, most clauses still hold none.
        let clause = &text[start..clause_end];
        if !holds_far_end_char(clause) {
            return false;
        }
        FAR_END
            .iter()
            .filter_map(|w| clause.find(w))
            .min()
            .is_some_and(|at| {
                !self
                    .mentions_in(i, start, start + at)
                    .iter()
                    .any(|m| m.who.is_some())
            })
    }

    /// Who called, from the `back` paragraphs before `i` and paragraph `i`
    /// before byte `at` (at most [`MAX_CALL_PARAGRAPHS`], and
    /// [`MAX_CALL_BYTES`] of their text: the attributor stays linear on a
    /// paragraph of a thousand calls).
    pub(super) fn caller_before(&self, i: usize, at: usize, back: usize) -> Option<Who> {
        let mut budget = MAX_CALL_BYTES;
        for j in (i.saturating_sub(back.min(MAX_CALL_PARAGRAPHS))..=i).rev() {
            let p = &self.paragraphs[j];
            if p.skipped {
                continue;
            }
            // In the quote's own paragraph, what comes before `at` only.
            let upto = if j == i {
                p.spans.partition_point(|s| s.start < at)
            } else {
                p.spans.len()
            };
            for (k, s) in p.spans[..upto].iter().enumerate().rev() {
                budget = budget.checked_sub(s.end - s.start)?;
                match s.kind {
                    // 屏幕上跳出两个字：“蔓姐”: a name alone in quote marks
                    // after narration about the phone.
                    SegmentKind::Dialogue if k > 0 => {
                        let before = p.spans[k - 1].text(p.text);
                        let inner = s.text(p.text).trim_matches(['“', '”', '「', '」', '"']);
                        if CALLER_SHOWN.iter().any(|w| before.contains(w))
                            && let Some(who) = self.attributor.called(inner)
                        {
                            return Some(who);
                        }
                    }
                    // 是苏晴打来的 / 苏晴的电话, or the screen's word in the
                    // narration (屏幕上跳出两个字：“蔓姐”).
                    SegmentKind::Narration => {
                        let narration = s.text(p.text);
                        let shown = narration.match_indices(['“', '「']).find_map(|(at, open)| {
                            let inner = &narration[at + open.len()..];
                            let inner = &inner[..inner.find(['”', '」'])?];
                            CALLER_SHOWN
                                .iter()
                                .any(|w| narration[..at].contains(w))
                                .then(|| self.attributor.called(inner))
                                .flatten()
                        });
                        if shown.is_some() {
                            return shown;
                        }
                        let caller = self.mentions_in(j, s.start, s.end).iter().rev().find(|m| {
                            matches!(m.who, Some(Who::Character(_)))
                                && CALLED.iter().any(|w| p.text[m.end..s.end].starts_with(w))
                        });
                        if let Some(m) = caller {
                            return m.who;
                        }
                    }
                    _ => {}
                }
            }
        }
        None
    }

    /// The one acting at the end of the paragraph before `i`, when that one
    /// is all narration (a medium candidate).
    fn actor_before(&self, i: usize) -> Option<Candidate> {
        let j = (0..i).rev().find(|&j| !self.paragraphs[j].skipped)?;
        let p = &self.paragraphs[j];
        if !p.spans.iter().all(|s| s.kind == SegmentKind::Narration) {
            return None;
        }
        self.action_beat(j).map(|c| Candidate {
            strength: Strength::Medium,
            ..c
        })
    }

    /// Narration right after a quote in the same paragraph.
    fn after_quote(&self, i: usize, n: &SpanRange) -> Option<Candidate> {
        let text = self.paragraphs[i].text;
        let start = n.start;
        let end = sentence_end(text, start, n.end);
        let sentence = &text[start..end];
        let mentions = self.mentions_in(i, start, end);
        // `“到了没有？”电话那头的女声又快又脆。`: the one who called.
        if let Some(who) = self.far_end(i, start, end) {
            return Some(Candidate {
                who,
                strength: Strength::Strong,
                addressee: None,
                other: None,
            });
        }
        // Nobody named: no one the rules below could choose.
        if mentions.iter().all(|m| m.who.is_none()) {
            return None;
        }
        // `猛然传来田福堂拖长了音调的呼唤声。`: the one whose voice it was.
        let body = sentence.trim_end_matches(|c: char| is_punct(c) || c.is_whitespace());
        if let Some(who) = self.heard(i, start, start + body.len()) {
            return Some(Candidate {
                who,
                strength: Strength::Strong,
                addressee: None,
                other: None,
            });
        }
        // A mention in the first clause (這是毛仲的命令), else the first
        // subject of the sentence, else its first mention.
        let first_clause_end = marks(&text[start..end])
            .find(|(j, c)| *j > 0 && is_punct(*c))
            .map_or(end, |(j, _)| start + j);
        let in_first_clause = mentions
            .iter()
            .find(|m| m.who.is_some() && m.start < first_clause_end);
        // The clause with the speech verb names the speaker (…，許多官兵大聲地喊著).
        let mut verb_clause = None;
        let mut clause_from = start;
        // Each clause ends at a mark, the last one at the sentence's end
        // (a mark there included).
        let clause_ends = marks(&text[start..end])
            .map(|(j, c)| (start + j, c))
            .filter(|&(at, c)| is_punct(c) && at + c.len_utf8() < end)
            .map(|(at, c)| (at, at + c.len_utf8()))
            .chain((start < end).then_some((end, end)));
        for (clause_end, next_from) in clause_ends {
            // The mention must come before the verb (not 问秀莲), and not be
            // the one spoken to (对书记建议) nor one not heard (没听见她说什么;
            // one heard is found above).
            if let Some(m) = mentions.iter().find(|m| {
                m.who.is_some()
                    && m.start >= clause_from
                    && m.end <= clause_end
                    && !after_preposition(&text[clause_from..m.start])
                    && !HEARING
                        .iter()
                        .any(|h| text[clause_from..m.start].ends_with(h))
                    && has_speech_verb(&text[m.end..clause_end])
            }) {
                verb_clause = Some(m);
                break;
            }
            clause_from = next_from;
        }
        let (m, subject) = match verb_clause.or(in_first_clause) {
            Some(m) => (m, is_subject(text, m, start)),
            None => match mentions
                .iter()
                .find(|m| m.who.is_some() && is_subject(text, m, start))
            {
                Some(m) => (m, true),
                None => (mentions.iter().find(|m| m.who.is_some())?, false),
            },
        };
        // A verb after the mention in its clause is one in the sentence
        // (no speech word holds a mark that ends a clause).
        let verb = verb_clause.is_some() || has_speech_verb(&text[m.end..end]);
        // `问话的是陆景深。`: the one the narration says spoke.
        let revealed = text[..m.start].ends_with('是')
            && SPEAKER_REVEALED
                .iter()
                .any(|r| text[clause_start(text, m.start, start)..m.start].ends_with(r));
        let strength = match (subject, verb) {
            _ if revealed => Strength::Strong,
            (true, true) => Strength::Strong,
            (true, false) | (false, true) => Strength::Medium,
            (false, false) => Strength::Weak,
        };
        // `“…”她问：“…”` introduces the next quote, not this one.
        if sentence.trim_end().ends_with(['：', ':']) && n.end == end {
            return None;
        }
        Some(Candidate {
            who: m.who?,
            strength,
            addressee: other_mention(mentions, m.who),
            other: m.other,
        })
    }

    /// True when `n` of paragraph `j` is narration that ends in a colon.
    fn ends_in_colon(&self, j: usize, n: &SpanRange) -> bool {
        n.kind == SegmentKind::Narration
            && self.paragraphs[j].text[n.start..n.end]
                .trim_end()
                .ends_with(['：', ':'])
    }

    /// The narration that ends paragraph `j` with a colon, if it does.
    fn closing_colon(&self, j: usize) -> Option<&SpanRange> {
        self.paragraphs[j]
            .spans
            .last()
            .filter(|n| self.ends_in_colon(j, n))
    }

    /// The previous paragraph ends in a colon: its subject speaks.
    fn colon_before(&self, j: usize) -> Option<Candidate> {
        let n = self.closing_colon(j)?;
        self.before_quote(j, n).map(|c| Candidate {
            strength: Strength::Strong,
            ..c
        })
    }

    /// The narration that opens the next paragraph after `i` that is read
    /// (its index, its span) and where its first sentence ends; `None` when
    /// that paragraph opens with a quote.
    fn next_opening_sentence(&self, i: usize) -> Option<(usize, &SpanRange, usize)> {
        let j = (i + 1..self.paragraphs.len()).find(|&j| !self.paragraphs[j].skipped)?;
        let p = &self.paragraphs[j];
        let n = p
            .spans
            .first()
            .filter(|s| s.kind == SegmentKind::Narration)?;
        Some((j, n, sentence_end(p.text, n.start, n.end)))
    }

    /// The next paragraph opens with `她问。`, `他说着，…`.
    fn next_paragraph_verb(&self, i: usize) -> Option<Candidate> {
        let (j, n, end) = self.next_opening_sentence(i)?;
        let p = &self.paragraphs[j];
        let sentence = p.text[n.start..end].trim_end();
        if sentence.ends_with(['：', ':']) {
            return None;
        }
        let c = self.after_quote(j, n)?;
        (c.strength == Strength::Strong
            || (c.strength == Strength::Medium && has_speech_verb(sentence)))
        .then_some(c)
    }

    /// Paragraph `j`, right before `i` and told with no quote, ends by
    /// bringing someone new into view (门外站着一个人，短发，…汗。；店里进来一个
    /// 穿职业装的女人。), and names nobody after them: the quote opening `i`
    /// is theirs. `Some(Some(_))` for a man or a woman by the word (女人,
    /// 男人), `Some(None)` for one whose gender the words do not say (一个人);
    /// `None` when no one arrives there.
    fn arrival_before(&self, i: usize, j: usize) -> Option<Option<Who>> {
        let p = &self.paragraphs[j];
        // (`j` takes part: never a skipped paragraph.)
        if j + 1 != i || p.spans.iter().any(|s| s.kind != SegmentKind::Narration) {
            return None;
        }
        let (from, end) = last_arrival(p.text)?;
        let mentions = self.mentions_in(j, from, p.text.len());
        // Named after they came (…，正是副局长马国栋。): that one, not someone new.
        if mentions
            .iter()
            .any(|m| matches!(m.who, Some(Who::Character(_))))
        {
            return None;
        }
        match mentions.iter().find(|m| m.end <= end && m.unnamed()) {
            Some(m) => Some(m.who),
            // 一个人: no gender said; a word the cast does not know (一个道士,
            // not found there) says nothing either.
            None if ungendered_arrival(&p.text[from..end]) => Some(None),
            None => None,
        }
    }

    /// The paragraph after `i` opens by telling of a voice nobody names
    /// (身后忽然有人开口，…; 一个低沉的声音从回廊那头传来。): the quote was that
    /// voice's. `Some(None)` for a voice of no told gender, `Some(Some(_))`
    /// for a man's or a woman's (一道男声); `None` when the paragraph tells of
    /// no such voice, or brings in the next quote (…传来一道男声：).
    fn unnamed_voice_after(&self, i: usize) -> Option<Option<Who>> {
        let (j, n, end) = self.next_opening_sentence(i)?;
        let p = &self.paragraphs[j];
        let sentence = p.text[n.start..end].trim_end();
        if sentence.ends_with(['：', ':']) || !sentence.contains(['声', '聲', '有']) {
            return None;
        }
        // Not 没有人说话: no one spoke.
        let someone = ["有人开口", "有人開口", "有人说话", "有人說話"]
            .iter()
            .any(|w| {
                sentence
                    .match_indices(w)
                    .any(|(at, _)| !sentence[..at].ends_with(['没', '沒']))
            });
        let voice = [
            "传来",
            "傳來",
            "传下来",
            "傳下來",
            "传过来",
            "傳過來",
            "传进来",
            "傳進來",
            "飘来",
            "飄來",
        ]
        .iter()
        .any(|w| sentence.contains(w))
            && ["声音", "聲音", "男声", "男聲", "女声", "女聲"]
                .iter()
                .any(|w| sentence.contains(w));
        if !(someone || voice) {
            return None;
        }
        // Not a voice the sentence names (苏晴的声音从门外传来: a tag), nor
        // one someone hears (她听见…); 吓得她手一抖 after it is no owner.
        let at = ["有人", "声", "聲"]
            .iter()
            .filter_map(|w| sentence.find(w))
            .min()
            .map_or(end, |at| n.start + at);
        if self
            .mentions_in(j, n.start, end)
            .iter()
            .any(|m| m.start < at && matches!(m.who, Some(Who::Character(_))))
        {
            return None;
        }
        // 声音是从坡上传下来的。韩建军五十出头，…: the one the next sentence
        // opens with is whose voice it was.
        if end < n.end
            && let Some(m) = self
                .mentions_in(j, end, sentence_end(p.text, end, n.end))
                .first()
                .filter(|m| matches!(m.who, Some(Who::Character(_))) && is_subject(p.text, m, end))
        {
            return Some(m.who);
        }
        let slot = if sentence.contains("男声") || sentence.contains("男聲") {
            Some(0)
        } else if sentence.contains("女声") || sentence.contains("女聲") {
            Some(1)
        } else {
            None
        };
        Some(slot.map(Who::Unnamed))
    }

    /// The one acting at the start of the paragraph after `i` (晓晨指了指门。),
    /// and whether that sentence says they only listened (知意没接话。, 她一愣，).
    fn next_paragraph_subject(&self, i: usize) -> Option<(Candidate, bool)> {
        let (j, n, end) = self.next_opening_sentence(i)?;
        let p = &self.paragraphs[j];
        let colon = p.text[n.start..end].trim_end().ends_with(['：', ':']);
        let m = self
            .mentions_in(j, n.start, end)
            .iter()
            .find(|m| m.who.is_some() && is_subject(p.text, m, n.start))?;
        let silent = only_listened(&p.text[m.start..end]);
        // One a colon introduces speaks next (她站起来：): only one who
        // listened first (沈若溪一愣，随即笑了：) tells of the quote before.
        if colon && !silent {
            return None;
        }
        Some((
            Candidate {
                who: m.who?,
                strength: Strength::Weak,
                addressee: None,
                other: m.other,
            },
            silent,
        ))
    }

    /// The character acting in the last sentence of paragraph `j`.
    fn action_beat(&self, j: usize) -> Option<Candidate> {
        let p = &self.paragraphs[j];
        let n = p
            .spans
            .last()
            .filter(|s| s.kind == SegmentKind::Narration)?;
        let body = p.text[n.start..n.end].trim_end();
        let last = body.chars().last()?;
        let end = n.start + body.len() - if is_punct(last) { last.len_utf8() } else { 0 };
        let mut start = sentence_start(p.text, n.start, end);
        let mut mentions = self.mentions_in(j, start, end);
        // A last sentence that names no one describes what the one before
        // acts on (她站起来，看着墙上的旧照片。那些照片…褪了色。): that one.
        let before = p.text[..start]
            .trim_end_matches(|c: char| is_punct(c))
            .len();
        if !mentions.iter().any(|m| m.who.is_some()) && before > n.start {
            start = sentence_start(p.text, n.start, before);
            mentions = self.mentions_in(j, start, before);
        }
        let m = mentions
            .iter()
            .rfind(|m| m.who.is_some() && is_subject(p.text, m, start))?;
        Some(Candidate {
            who: m.who?,
            strength: Strength::Weak,
            addressee: other_mention(mentions, m.who),
            other: None,
        })
    }

    /// The subject of the sentence `text[start..end]`: the first mention at
    /// the start of a clause, nearest clause to the end first when
    /// `from_end`; any first mention otherwise.
    fn subject_in(
        &self,
        i: usize,
        start: usize,
        end: usize,
        from_end: bool,
    ) -> Option<(Who, Option<Who>)> {
        let text = self.paragraphs[i].text;
        let mentions = self.mentions_in(i, start, end);
        let mut subject: Option<(usize, &Mention)> = None;
        for m in mentions.iter().filter(|m| m.who.is_some()) {
            let cs = clause_start(text, m.start, start);
            // 周秀芳挑排骨，卖肉的中年女人一边剁骨头一边搭话：someone unnamed
            // brought in opens a later clause (as does 有个妇女 where the
            // book's cast holds a 妇女).
            let opens = is_subject(text, m, start)
                || ((m.unnamed()
                    || matches!(m.who, Some(Who::Character(c)) if self.attributor.role_named[c])
                    || text[cs..m.start].contains('有'))
                    && brought_in(&text[cs..m.start]));
            // 少平知道，他哥看来非来不行了，就…说：what one knows or heard
            // has no subject of the tag.
            if !opens || (cs > start && reports(&text[start..cs])) {
                continue;
            }
            match subject {
                Some((best_cs, _)) if !from_end || cs <= best_cs => {}
                _ => subject = Some((cs, m)),
            }
        }
        let m = match subject {
            // 他旁边的安锁子: the possessed one is the subject, a few
            // characters on (not 生民拨开围观的人群: the object; nor 少安对
            // 尊敬的田主任说: the one spoken to, after a preposition).
            Some((cs, m)) => mentions
                .iter()
                .filter(|o| o.start > m.start && o.who.is_some())
                .take_while(|o| clause_start(text, o.start, start) == cs)
                .find(|o| {
                    let between = &text[m.end..o.start];
                    (text[..o.start].ends_with('的')
                        && between.chars().count() <= MAX_POSSESSIVE_CHARS
                        && !between.starts_with(TO_SOMEONE)
                        && !between.starts_with(WITH_SOMEONE))
                        || KIN_BEFORE_NAME.contains(&between)
                })
                .unwrap_or(m),
            // One whom the clause brings in (路边有个妇女问他：), else
            // anyone but a person not named (她接上丈夫的话碴，说：) or one
            // spoken to (几乎是对着她喊：).
            None => mentions
                .iter()
                .find(|m| {
                    m.unnamed() && brought_in(&text[clause_start(text, m.start, start)..m.start])
                })
                .or_else(|| {
                    mentions.iter().find(|m| {
                        m.who.is_some()
                            && !m.unnamed()
                            && !after_preposition(text[..m.start].trim_end_matches(['着', '著']))
                            && !walked_up_to(&text[..m.start], &text[m.end..])
                    })
                })?,
        };
        // 他于是就对等待他表态的少安说：: a 他 that would be the one the
        // clause names again (少安) is the other man named lately.
        let again = |who: Option<Who>| {
            mentions.iter().any(|o| {
                o.start > m.start && o.who == who && !matches!(&text[o.start..o.end], "他" | "她")
            })
        };
        let who = match m.other {
            Some(other) if matches!(&text[m.start..m.end], "他" | "她") && again(m.who) => {
                Some(other)
            }
            _ => m.who,
        };
        Some((who?, other_mention(mentions, who)))
    }
}

/// `“你吃了饭没？”贾冰问。` / `“吃了。”他说。`: a 他 after a reply (a quote
/// opening the paragraph right after a turn) is not the one who spoke the
/// turn before, but the other one.
fn reply_to(
    c: Candidate,
    after_turn: bool,
    last_speaker: Option<Who>,
    in_scene: impl Fn(Who) -> bool,
) -> Candidate {
    match c.other {
        // (Unless the other one is nowhere near: “挺好的。” / “陆景深，”她…
        // goes on where no other woman has been seen for pages.)
        Some(o) if after_turn && Some(c.who) == last_speaker && in_scene(o) => Candidate {
            who: o,
            other: None,
            ..c
        },
        _ => c,
    }
}

/// A candidate may speak unless it is someone unnamed, or the one the quote
/// calls by name without a strong tag saying so.
fn acceptable(c: Candidate, vocative: Option<Who>) -> bool {
    !matches!(c.who, Who::Someone(_) | Who::Unnamed(_))
        && (Some(c.who) != vocative || c.strength == Strength::Strong)
}

/// The speaker of the next turn from the turns so far: the one addressed by
/// name in the last turn, else its addressee, else the speaker before it.
fn turn_taking(turns: &[Turn], vocative: Option<Who>, recent: Option<Who>) -> Option<Who> {
    // `recent` never is the one this quote addresses.
    let Some(last) = turns.last() else {
        return recent;
    };
    // A crowd shouts on (“快追！” “别让他们跑了！”) rather than taking turns.
    if let Some(crowd @ Who::Crowd(_)) = last.speaker {
        return Some(crowd);
    }
    let candidates = [
        last.vocative.filter(|v| Some(*v) != last.speaker),
        last.addressee,
        turns
            .iter()
            .rev()
            .skip(1)
            .take(3)
            // A crowd that shouted once does not take the next turn.
            .find_map(|t| {
                t.speaker
                    .filter(|s| Some(*s) != last.speaker && !matches!(s, Who::Crowd(_)))
            }),
        recent,
    ];
    let pick = |called: Option<Who>| {
        candidates
            .into_iter()
            .flatten()
            .find(|who| Some(*who) != last.speaker && Some(*who) != called)
    };
    match pick(None) {
        // The quote calls the one whose turn it would be: the last speaker
        // goes on, calling them (“姐姐，你不能再这样了！…” after narration).
        Some(next) if Some(next) == vocative => last.speaker.or_else(|| pick(vocative)),
        next => next,
    }
}

/// True when a mention right after `before` is the object of a preposition
/// (对书记建议, 向少平说) or of a verb of telling (才问少平：, 告诉润叶): the
/// one spoken to.
fn after_preposition(before: &str) -> bool {
    before.ends_with(TO_SOMEONE)
        || before.ends_with(['问', '問'])
        || ["告诉", "告訴", "吩咐", "嘱咐", "囑咐", "叮嘱", "叮囑"]
            .iter()
            .any(|v| before.ends_with(v))
}

/// Where one goes up to someone (凑到她耳边, 走到他面前).
const BESIDE: &[&str] = &[
    "耳边", "耳邊", "面前", "跟前", "身边", "身邊", "身前", "身后", "身後", "身旁", "旁边", "旁邊",
];

/// True when a mention is where the subject goes (凑到她耳边：): `before`
/// and `after` are the text around it.
fn walked_up_to(before: &str, after: &str) -> bool {
    before.ends_with('到') && BESIDE.iter().any(|w| after.starts_with(w))
}

/// What the narration says before the one who just spoke (问话的是陆景深).
const SPEAKER_REVEALED: &[&str] = &[
    "问话的是",
    "問話的是",
    "说话的是",
    "說話的是",
    "开口的是",
    "開口的是",
    "出声的是",
    "出聲的是",
    "说话的人是",
    "說話的人是",
    "问话的人是",
    "問話的人是",
    "开口的人是",
    "開口的人是",
];

/// The far end of a telephone, opening the narration after a quote.
const FAR_END: &[&str] = &[
    "电话那头",
    "電話那頭",
    "电话那端",
    "電話那端",
    "电话那边",
    "電話那邊",
    "电话里",
    "電話裡",
    "听筒里",
    "聽筒裡",
    "听筒那头",
    "聽筒那頭",
    "话筒里",
    "話筒裡",
];

/// True when `clause` holds 电, 電 or 筒, one of which every word of
/// [`FAR_END`] holds (looked for by their lead bytes, E7 and E9).
fn holds_far_end_char(clause: &str) -> bool {
    clause.as_bytes().windows(3).any(|w| {
        matches!(
            w,
            [0xE7, 0x94, 0xB5] | [0xE9, 0x9B, 0xBB] | [0xE7, 0xAD, 0x92]
        )
    })
}

/// Narration that shows who calls (屏幕上跳出两个字：“蔓姐”).
const CALLER_SHOWN: &[&str] = &[
    "屏幕", "来电", "來電", "显示", "顯示", "手机", "手機", "电话", "電話",
];

/// What follows a caller's name in the narration (是苏晴打来的, 苏晴的电话).
const CALLED: &[&str] = &["打来", "打來", "的电话", "的電話", "的来电", "的來電"];

/// How far back a call's caller is looked for, in paragraphs and in bytes.
const MAX_CALL_PARAGRAPHS: usize = 8;
const MAX_CALL_BYTES: usize = 2048;

fn other_mention(mentions: &[Mention], who: Option<Who>) -> Option<Who> {
    mentions
        .iter()
        .filter_map(|m| m.who)
        .find(|w| Some(*w) != who && matches!(w, Who::Character(_)))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{test_cast, with_context};
    use crate::text::cast::Gender;

    #[test]
    fn a_quote_calling_the_one_whose_turn_it_was_is_the_last_speakers() {
        use super::{Turn, turn_taking};
        use crate::text::speaker::Who;
        let (a, b, c) = (Who::Character(0), Who::Character(1), Who::Character(2));
        let turn = |speaker, addressee| Turn {
            paragraph: 0,
            speaker: Some(speaker),
            addressee: Some(addressee),
            vocative: None,
        };
        // A spoke to B; a quote that calls B is A's again, not C's.
        assert_eq!(
            turn_taking(&[turn(c, a), turn(a, b)], Some(b), None),
            Some(a)
        );
        // Calling no one, or someone else, B answers.
        assert_eq!(turn_taking(&[turn(c, a), turn(a, b)], None, None), Some(b));
        assert_eq!(
            turn_taking(&[turn(c, a), turn(a, b)], Some(c), None),
            Some(b)
        );
        // A quote that calls A, who just spoke: not A.
        assert_eq!(turn_taking(&[turn(a, b)], Some(a), None), Some(b));
    }

    /// The one acting at the end of each line, by name.
    fn beats(names: &[&str], lines: &[&str]) -> Vec<Option<String>> {
        with_context(
            &test_cast(names, Gender::Unknown),
            lines,
            |ctx, attributor| {
                (0..lines.len())
                    .map(|j| {
                        let who = ctx.action_beat(j)?.who;
                        attributor.name(who).map(str::to_owned)
                    })
                    .collect()
            },
        )
    }

    #[test]
    fn the_last_one_acting_in_a_sentence_is_its_beat() {
        let got = beats(
            &["苏安", "许言"],
            &[
                "苏安在门口坐下，旁边的许言把一杯咖啡推到她手边，连头都没抬。",
                "许言刚讲到第三页，苏安就抬手打断了他。",
                // Not one acted on: 许言 is the object.
                "苏安看了许言一眼，转身走了。",
                // A last sentence naming no one: the one before acts.
                "许言站起来，看着墙上的旧照片。那些照片早就褪了色。",
            ],
        );
        let want = [Some("许言"), Some("苏安"), Some("苏安"), Some("许言")];
        assert_eq!(got, want.map(|w| w.map(str::to_owned)));
    }
}
