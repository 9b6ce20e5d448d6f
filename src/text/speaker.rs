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
//! - the character acting in the sentence just before the quote.
//!
//! 他/她 resolve to the latest subject of that gender, skipping the subject
//! of their own clause (老周问他); one with no antecedent in the chapter is
//! "someone" (no name in the script, but still a party to turn-taking).
//! Without a cast file, [`discover`] finds the names.

use std::collections::HashMap;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use super::cast::{Cast, Character, Gender};
use super::quote::{SegmentKind, SpanRange};

/// A speaker: a character of the cast or a crowd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Who {
    Character(usize),
    Crowd(usize),
    /// 他 (0) or 她 (1) that names nobody in the cast: someone, unnamed.
    Someone(usize),
}

/// Groups that may speak as one.
const CROWDS: &[&str] = &[
    "众人",
    "眾人",
    "大家",
    "大伙",
    "大夥",
    "官兵",
    "官兵们",
    "官兵們",
    "士兵们",
    "士兵們",
    "众官兵",
    "眾官兵",
    "群臣",
    "众臣",
    "眾臣",
    "众将",
    "眾將",
    "众僧",
    "眾僧",
    "众仙",
    "眾仙",
    "众神",
    "眾神",
    "众妖",
    "眾妖",
    "众弟子",
    "眾弟子",
    "弟子们",
    "弟子們",
    "村民们",
    "村民們",
    "人群",
    "众小妖",
    "眾小妖",
    "师徒",
    "師徒",
    "师徒们",
    "師徒們",
    "众猴",
    "眾猴",
    "众官",
    "眾官",
];

/// Words that open a clause before its subject (然后他说 …).
const CONNECTIVES: &[&str] = &[
    "然后",
    "然後",
    "于是",
    "於是",
    "这时",
    "這時",
    "此时",
    "此時",
    "那时",
    "那時",
    "接着",
    "接著",
    "随后",
    "隨後",
    "忽然",
    "突然",
    "只见",
    "只見",
    "却见",
    "卻見",
    "只听",
    "只聽",
    "但是",
    "可是",
    "这才",
    "這才",
    "最后",
    "最後",
    "当下",
    "當下",
    "当时",
    "當時",
    "终于",
    "終於",
    "还是",
    "還是",
    "连忙",
    "連忙",
    "立刻",
    "马上",
    "馬上",
    "同时",
    "同時",
    "一旁的",
    "旁边的",
    "旁邊的",
    "此刻",
    "见状",
    "見狀",
    "听了",
    "聽了",
    "说完",
    "說完",
    "说着",
    "說著",
    "说罢",
    "說罷",
    "不料",
    "谁知",
    "誰知",
    "那",
    "但",
    "可",
    "而",
    "又",
    "便",
    "就",
    "也",
    "却",
    "卻",
    "才",
    "倒",
    "只",
    "却是",
    "正",
    "这",
    "這",
];

/// Multi-character speech verbs.
const SPEECH_WORDS: &[&str] = &[
    "吩咐", "嘱咐", "囑咐", "提醒", "解释", "解釋", "补充", "補充", "宣布", "命令", "安慰", "告诉",
    "告訴", "插嘴", "开口", "開口", "喃喃", "嘟囔", "嘀咕", "咕哝", "咕噥", "附和", "招呼", "抱怨",
    "埋怨", "感叹", "感嘆", "惊呼", "驚呼", "低语", "低語", "请求", "請求", "央求", "哀求", "催促",
    "吆喝", "念叨", "唠叨", "嘮叨", "称赞", "稱讚", "劝", "勸", "反驳", "反駁", "追问", "追問",
    "笑道", "冷笑", "呵斥", "喝道", "斥道", "应道", "應道", "回应", "回應", "建议", "建議", "恳求",
    "懇求", "自语", "自語", "发问", "發問", "表示", "嚷嚷", "咆哮", "叮嘱", "叮囑", "谈", "談",
    "讲", "講", "哭道", "叹道", "嘆道",
];

/// How far back a quote looks for a character mentioned in the narration.
const RECENT_PARAGRAPHS: usize = 10;

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
}

#[derive(Debug, Clone, Copy)]
enum Pattern {
    Name(usize),
    /// A one-character alias: only a mention right before a speech verb.
    ShortName(usize),
    Pronoun(Gender),
    Crowd(usize),
    /// 他们, 其他 …: consumed so they are not read as 他.
    Ignore,
}

/// One mention of a character or crowd in the narration.
#[derive(Debug, Clone, Copy)]
struct Mention {
    start: usize,
    end: usize,
    who: Option<Who>,
    /// Set for 他/她 that had no antecedent yet.
    pronoun: Option<Gender>,
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
    matcher: AhoCorasick,
    patterns: Vec<Pattern>,
    names: Vec<String>,
    genders: Vec<Gender>,
}

impl Attributor {
    /// Builds the matcher for a cast (names and aliases of two or more
    /// characters, one-character aliases only right before a speech verb).
    pub fn new(cast: &Cast) -> Attributor {
        let mut words: Vec<String> = Vec::new();
        let mut patterns = Vec::new();
        let mut seen: HashMap<String, ()> = HashMap::new();
        for (i, c) in cast.characters.iter().enumerate() {
            for name in std::iter::once(&c.name).chain(&c.aliases) {
                let name = name.trim();
                if name.is_empty() || seen.insert(name.to_owned(), ()).is_some() {
                    continue;
                }
                words.push(name.to_owned());
                patterns.push(if name.chars().nth(1).is_some() {
                    Pattern::Name(i)
                } else {
                    Pattern::ShortName(i)
                });
            }
        }
        for (i, crowd) in CROWDS.iter().enumerate() {
            if seen.insert((*crowd).to_owned(), ()).is_none() {
                words.push((*crowd).to_owned());
                patterns.push(Pattern::Crowd(i));
            }
        }
        for (word, pattern) in [
            ("他", Pattern::Pronoun(Gender::Male)),
            ("她", Pattern::Pronoun(Gender::Female)),
            ("他们", Pattern::Ignore),
            ("他們", Pattern::Ignore),
            ("她们", Pattern::Ignore),
            ("她們", Pattern::Ignore),
            ("其他", Pattern::Ignore),
            ("他人", Pattern::Ignore),
            ("他乡", Pattern::Ignore),
            ("他鄉", Pattern::Ignore),
            ("吉他", Pattern::Ignore),
        ] {
            if seen.insert(word.to_owned(), ()).is_none() {
                words.push(word.to_owned());
                patterns.push(pattern);
            }
        }
        let matcher = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&words)
            .expect("names are plain strings");
        Attributor {
            matcher,
            patterns,
            names: cast.characters.iter().map(|c| c.name.clone()).collect(),
            genders: cast.characters.iter().map(|c| c.gender).collect(),
        }
    }

    /// The name a speaker goes by in the script (none for someone unnamed).
    pub fn name(&self, who: Who) -> Option<&str> {
        match who {
            Who::Character(i) => Some(&self.names[i]),
            Who::Crowd(i) => Some(CROWDS[i]),
            Who::Someone(_) => None,
        }
    }

    /// Speakers of one chapter: for each paragraph, one entry per span
    /// (`None` for narration and for quotes nobody can be found for).
    pub fn attribute(&self, paragraphs: &[ParagraphView<'_>]) -> Vec<Vec<Option<Who>>> {
        let mentions = self.chapter_mentions(paragraphs);
        let mut out: Vec<Vec<Option<Who>>> = paragraphs
            .iter()
            .map(|p| vec![None; p.spans.len()])
            .collect();
        let mut turns: Vec<Turn> = Vec::new();
        // Index of the previous paragraph that takes part (not skipped).
        let mut previous: Option<usize> = None;
        let mut continued: Option<Who> = None;
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
            };
            let has_dialogue = p.spans.iter().any(|s| s.kind == SegmentKind::Dialogue);
            if !has_dialogue {
                let last_speaker = turns.last().and_then(|t| t.speaker);
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
            let (speaker, addressee, own) = if let (true, Some(who)) = (opens_continued, continued)
            {
                (
                    Some(who),
                    turns.last().and_then(|t| t.addressee),
                    Vec::new(),
                )
            } else {
                ctx.decide(i, previous, prev_is_turn, &turns)
            };
            for (k, s) in p.spans.iter().enumerate() {
                if s.kind == SegmentKind::Dialogue {
                    // `own` is in span order.
                    out[i][k] = own
                        .binary_search_by_key(&k, |(at, _)| *at)
                        .map_or(speaker, |found| Some(own[found].1));
                }
            }
            continued = match p.spans.last() {
                Some(last) if last.kind == SegmentKind::Dialogue && !last.closed => {
                    out[i][p.spans.len() - 1]
                }
                _ => None,
            };
            turns.push(Turn {
                speaker,
                addressee,
                vocative: p
                    .spans
                    .iter()
                    .find(|s| s.kind == SegmentKind::Dialogue)
                    .and_then(|s| self.vocative(s.text(p.text))),
            });
            previous = Some(i);
            adjacent = true;
        }
        out
    }

    /// All mentions in the narration of a chapter, per paragraph, with 他/她
    /// resolved to the latest character of that gender (or, with none
    /// before, the next one after).
    fn chapter_mentions(&self, paragraphs: &[ParagraphView<'_>]) -> Vec<Vec<Mention>> {
        let mut last = Recency::default();
        let mut all: Vec<Vec<Mention>> = Vec::with_capacity(paragraphs.len());
        let mut unresolved = false;
        for (i, p) in paragraphs.iter().enumerate() {
            let mut mentions = Vec::new();
            if !p.skipped {
                for s in p.spans.iter().filter(|s| s.kind == SegmentKind::Narration) {
                    self.find_mentions(i, p.text, s, &mut last, &mut mentions);
                }
            }
            unresolved |= mentions.iter().any(|m| m.pronoun.is_some());
            all.push(mentions);
        }
        if unresolved {
            // Forward: the first character of that gender mentioned later.
            let mut next: [Option<usize>; 2] = [None, None];
            for mentions in all.iter_mut().rev() {
                for m in mentions.iter_mut().rev() {
                    match (m.who, m.pronoun) {
                        (Some(Who::Character(c)), _) => {
                            if let Some(g) = gender_slot(self.genders[c]) {
                                next[g] = Some(c);
                            }
                        }
                        (None, Some(g)) => {
                            if let Some(slot) = gender_slot(g) {
                                m.who = Some(next[slot].map_or(Who::Someone(slot), Who::Character));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        all
    }

    fn find_mentions(
        &self,
        paragraph: usize,
        text: &str,
        span: &SpanRange,
        last: &mut Recency,
        out: &mut Vec<Mention>,
    ) {
        let narration = &text[span.start..span.end];
        let (mut clause, mut scanned) = (span.start, span.start);
        for m in self.matcher.find_iter(narration) {
            let (start, end) = (span.start + m.start(), span.start + m.end());
            let (who, pronoun) = match self.patterns[m.pattern().as_usize()] {
                Pattern::Name(c) => (Some(Who::Character(c)), None),
                Pattern::ShortName(c) => {
                    if !starts_with_speech_verb(&text[end..]) {
                        continue;
                    }
                    (Some(Who::Character(c)), None)
                }
                Pattern::Crowd(c) => (Some(Who::Crowd(c)), None),
                Pattern::Pronoun(g) => {
                    match gender_slot(g).and_then(|s| last.resolve(s, paragraph, text, start)) {
                        Some(c) => (Some(Who::Character(c)), None),
                        None => (None, Some(g)),
                    }
                }
                Pattern::Ignore => continue,
            };
            if let Some(Who::Character(c)) = who
                && let Some(slot) = gender_slot(self.genders[c])
            {
                // Clause starts move forward with the mentions: no rescanning.
                if let Some((j, ch)) = text[scanned..start]
                    .char_indices()
                    .rev()
                    .find(|(_, ch)| is_punct(*ch))
                {
                    clause = scanned + j + ch.len_utf8();
                }
                scanned = start;
                let subject = opens_clause(&text[clause..start]);
                last.note(slot, c, paragraph, end, subject);
            }
            out.push(Mention {
                start,
                end,
                who,
                pronoun,
            });
        }
    }

    /// A character addressed by name at the start of a quote (“少平，你…”).
    fn vocative(&self, quote: &str) -> Option<Who> {
        let inner = quote.get(quote.chars().next()?.len_utf8()..)?;
        let m = self.matcher.find(inner)?;
        if m.start() != 0 {
            return None;
        }
        let Pattern::Name(c) = self.patterns[m.pattern().as_usize()] else {
            return None;
        };
        inner[m.end()..]
            .chars()
            .next()
            .filter(|c| matches!(c, '，' | ',' | '！' | '!' | '、' | '…' | '？' | '?' | '。'))
            .map(|_| Who::Character(c))
    }
}

/// The latest characters of each gender, for 他/她.
#[derive(Debug, Default)]
struct Recency {
    /// Per gender: the latest mention (character, paragraph, end offset),
    /// the latest subject mention, and the latest other character.
    slots: [Slot; 2],
}

#[derive(Debug, Default, Clone, Copy)]
struct Slot {
    latest: Option<(usize, usize, usize)>,
    subject: Option<(usize, usize, usize)>,
    previous: Option<usize>,
}

impl Recency {
    fn note(&mut self, slot: usize, c: usize, paragraph: usize, end: usize, subject: bool) {
        let s = &mut self.slots[slot];
        if let Some((old, _, _)) = s.latest
            && old != c
        {
            s.previous = Some(old);
        }
        s.latest = Some((c, paragraph, end));
        if subject {
            s.subject = Some((c, paragraph, end));
        }
    }

    /// The character a pronoun at `text[at..]` stands for: the latest subject
    /// of its gender (else the latest mention), unless that one is the
    /// subject of the same clause (晓晨问他: 他 is someone else).
    fn resolve(&self, slot: usize, paragraph: usize, text: &str, at: usize) -> Option<usize> {
        let s = self.slots[slot];
        let same_clause = |(_, p, end): (usize, usize, usize)| {
            p == paragraph
                && end <= at
                && at - end <= MAX_CLAUSE_BYTES
                && !text[end..at]
                    .chars()
                    .any(|ch| is_punct(ch) || ch == '”' || ch == '“')
        };
        let first = s.subject.or(s.latest)?;
        if !same_clause(first) {
            return Some(first.0);
        }
        match s.latest {
            Some(l) if l.0 != first.0 && !same_clause(l) => Some(l.0),
            _ => s.previous.filter(|p| *p != first.0).or(Some(first.0)),
        }
    }
}

fn gender_slot(g: Gender) -> Option<usize> {
    match g {
        Gender::Male => Some(0),
        Gender::Female => Some(1),
        Gender::Unknown => None,
    }
}

/// A paragraph with dialogue, as one turn of a conversation.
#[derive(Debug, Clone, Copy)]
struct Turn {
    speaker: Option<Who>,
    addressee: Option<Who>,
    vocative: Option<Who>,
}

/// True when `first` (the opening dialogue span of a paragraph) continues a
/// speech left open at the end of `previous` with the same mark.
fn continues_speech(previous: &ParagraphView<'_>, first: &SpanRange) -> bool {
    previous.spans.last().is_some_and(|last| {
        last.kind == SegmentKind::Dialogue && !last.closed && last.open == first.open
    })
}

struct Context<'c, 'a> {
    attributor: &'c Attributor,
    paragraphs: &'c [ParagraphView<'a>],
    mentions: &'c [Vec<Mention>],
}

impl Context<'_, '_> {
    /// Speaker of paragraph `i` (default for its quotes), its addressee, and
    /// quotes with a speaker of their own: (span index, speaker).
    fn decide(
        &self,
        i: usize,
        previous: Option<usize>,
        prev_is_turn: bool,
        turns: &[Turn],
    ) -> (Option<Who>, Option<Who>, Vec<(usize, Who)>) {
        let p = &self.paragraphs[i];
        let vocative = p
            .spans
            .iter()
            .find(|s| s.kind == SegmentKind::Dialogue)
            .and_then(|s| self.attributor.vocative(s.text(p.text)));
        let mut best: Option<Candidate> = None;
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
                }
            }
        }
        let accept = |c: Candidate| Some(c.who) != vocative || c.strength == Strength::Strong;
        let opens_with_quote = p
            .spans
            .first()
            .is_some_and(|s| s.kind == SegmentKind::Dialogue);
        let prev_colon = previous
            .filter(|_| opens_with_quote)
            .and_then(|j| self.colon_before(j));
        let strong = best.filter(|c| c.strength == Strength::Strong);
        let medium = best.filter(|c| c.strength == Strength::Medium);
        let next = || self.next_paragraph_verb(i);
        for c in [strong, prev_colon, medium, next()].into_iter().flatten() {
            if accept(c) {
                return (Some(c.who), c.addressee, own);
            }
        }
        let last_speaker = turns.last().and_then(|t| t.speaker);
        let recent = self.recent_mention(i, last_speaker.filter(|_| !turns.is_empty()));
        let turn = turn_taking(turns, vocative, recent);
        if prev_is_turn && let Some(c) = self.next_paragraph_subject(i).filter(|c| accept(*c)) {
            return (Some(c.who), c.addressee, own);
        }
        if prev_is_turn && let Some(who) = turn {
            return (Some(who), last_speaker, own);
        }
        let beat = best.or_else(|| self.next_paragraph_subject(i)).or_else(|| {
            previous
                .filter(|_| opens_with_quote && !prev_is_turn)
                .and_then(|j| self.action_beat(j))
        });
        if let Some(c) = beat.filter(|c| accept(*c)) {
            return (Some(c.who), c.addressee, own);
        }
        if let Some(who) = turn {
            return (Some(who), turns.last().and_then(|t| t.speaker), own);
        }
        (None, None, own)
    }

    /// True when narration paragraph `i` opens with a speech tag (`她问。`)
    /// for the quote before it.
    fn is_tag(&self, i: usize) -> bool {
        let p = &self.paragraphs[i];
        p.spans.first().is_some_and(|n| {
            n.kind == SegmentKind::Narration
                && self
                    .after_quote(i, n)
                    .is_some_and(|c| c.strength == Strength::Strong)
        })
    }

    /// True when narration paragraph `i` opens with `who` acting (少平愣住了。).
    fn is_beat_of(&self, i: usize, who: Option<Who>) -> bool {
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
    /// before `i`, other than `exclude`.
    fn recent_mention(&self, i: usize, exclude: Option<Who>) -> Option<Who> {
        (i.saturating_sub(RECENT_PARAGRAPHS)..i)
            .rev()
            .find_map(|j| {
                self.mentions[j]
                    .iter()
                    .rev()
                    .filter_map(|m| m.who)
                    .find(|w| matches!(w, Who::Character(_)) && Some(*w) != exclude)
            })
    }

    fn mentions_in(&self, i: usize, start: usize, end: usize) -> &[Mention] {
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
            '。' | '！' | '？' | '!' | '?' | '…' => Strength::Weak,
            _ if has_speech_verb(last_clause(text, n.start, body_end)) => Strength::Strong,
            _ => return None,
        };
        let end = body_end - if is_punct(last) { last.len_utf8() } else { 0 };
        let start = sentence_start(text, n.start, end);
        self.subject_in(i, start, end, true)
            .map(|(who, addressee)| Candidate {
                who,
                strength,
                addressee,
            })
    }

    /// Narration right after a quote in the same paragraph.
    fn after_quote(&self, i: usize, n: &SpanRange) -> Option<Candidate> {
        let text = self.paragraphs[i].text;
        let start = n.start;
        let end = sentence_end(text, start, n.end);
        let sentence = &text[start..end];
        let mentions = self.mentions_in(i, start, end);
        // A mention in the first clause (這是毛仲的命令), else the first
        // subject of the sentence, else its first mention.
        let first_clause_end = text[start..end]
            .char_indices()
            .find(|(j, c)| *j > 0 && is_punct(*c))
            .map_or(end, |(j, _)| start + j);
        let in_first_clause = mentions
            .iter()
            .find(|m| m.who.is_some() && m.start < first_clause_end);
        // The clause with the speech verb names the speaker (…，許多官兵大聲地喊著).
        let mut verb_clause = None;
        let mut clause_from = start;
        for (j, c) in text[start..end].char_indices() {
            let at = start + j;
            let last = at + c.len_utf8() == end;
            if !(is_punct(c) || last) {
                continue;
            }
            let clause_end = if last { end } else { at };
            // The mention must come before the verb (not 问秀莲).
            if let Some(m) = mentions.iter().find(|m| {
                m.who.is_some()
                    && m.start >= clause_from
                    && m.end <= clause_end
                    && has_speech_verb(&text[m.end..clause_end])
            }) {
                verb_clause = Some(m);
                break;
            }
            clause_from = at + c.len_utf8();
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
        let verb = has_speech_verb(&text[m.end..end]);
        let strength = match (subject, verb) {
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
        })
    }

    /// The previous paragraph ends in a colon: its subject speaks.
    fn colon_before(&self, j: usize) -> Option<Candidate> {
        let p = &self.paragraphs[j];
        let n = p
            .spans
            .last()
            .filter(|s| s.kind == SegmentKind::Narration)?;
        let body = p.text[n.start..n.end].trim_end();
        if !body.ends_with(['：', ':']) {
            return None;
        }
        self.before_quote(j, n).map(|c| Candidate {
            strength: Strength::Strong,
            ..c
        })
    }

    /// The next paragraph opens with `她问。`, `他说着，…`.
    fn next_paragraph_verb(&self, i: usize) -> Option<Candidate> {
        let j = (i + 1..self.paragraphs.len()).find(|&j| !self.paragraphs[j].skipped)?;
        let p = &self.paragraphs[j];
        let n = p
            .spans
            .first()
            .filter(|s| s.kind == SegmentKind::Narration)?;
        let end = sentence_end(p.text, n.start, n.end);
        let sentence = p.text[n.start..end].trim_end();
        if sentence.ends_with(['：', ':']) {
            return None;
        }
        let c = self.after_quote(j, n)?;
        (c.strength == Strength::Strong
            || (c.strength == Strength::Medium && has_speech_verb(sentence)))
        .then_some(c)
    }

    /// The next paragraph opens with a character acting (晓晨指了指门。).
    fn next_paragraph_subject(&self, i: usize) -> Option<Candidate> {
        let j = (i + 1..self.paragraphs.len()).find(|&j| !self.paragraphs[j].skipped)?;
        let p = &self.paragraphs[j];
        let n = p
            .spans
            .first()
            .filter(|s| s.kind == SegmentKind::Narration)?;
        let end = sentence_end(p.text, n.start, n.end);
        if p.text[n.start..end].trim_end().ends_with(['：', ':']) {
            return None;
        }
        let m = self
            .mentions_in(j, n.start, end)
            .iter()
            .find(|m| m.who.is_some() && is_subject(p.text, m, n.start))?;
        Some(Candidate {
            who: m.who?,
            strength: Strength::Weak,
            addressee: None,
        })
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
        let start = sentence_start(p.text, n.start, end);
        let mentions = self.mentions_in(j, start, end);
        let m = mentions
            .iter()
            .find(|m| m.who.is_some() && is_subject(p.text, m, start))?;
        Some(Candidate {
            who: m.who?,
            strength: Strength::Weak,
            addressee: other_mention(mentions, m.who),
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
            if !is_subject(text, m, start) {
                continue;
            }
            match subject {
                Some((best_cs, _)) if !from_end || cs <= best_cs => {}
                _ => subject = Some((cs, m)),
            }
        }
        let m = match subject {
            // 他旁边的安锁子: the possessed one is the subject.
            Some((cs, m)) => mentions
                .iter()
                .filter(|o| o.start > m.start && o.who.is_some())
                .take_while(|o| clause_start(text, o.start, start) == cs)
                .find(|o| text[..o.start].ends_with('的'))
                .unwrap_or(m),
            None => mentions.iter().find(|m| m.who.is_some())?,
        };
        Some((m.who?, other_mention(mentions, m.who)))
    }
}

/// The speaker of the next turn from the turns so far: the one addressed by
/// name in the last turn, else its addressee, else the speaker before it.
fn turn_taking(turns: &[Turn], vocative: Option<Who>, recent: Option<Who>) -> Option<Who> {
    let Some(last) = turns.last() else {
        return recent.filter(|r| Some(*r) != vocative);
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
            .find_map(|t| t.speaker.filter(|s| Some(*s) != last.speaker)),
        recent,
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|who| Some(*who) != last.speaker && Some(*who) != vocative)
}

fn other_mention(mentions: &[Mention], who: Option<Who>) -> Option<Who> {
    mentions
        .iter()
        .filter_map(|m| m.who)
        .find(|w| Some(*w) != who && matches!(w, Who::Character(_)))
}

fn is_punct(c: char) -> bool {
    super::quote::is_clause_punct(c) || matches!(c, '）' | ')' | '」' | '”' | '』' | '’')
}

fn is_sentence_end(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '!' | '?' | '；' | ';')
}

/// Longest clause looked at, in bytes: a longer run without punctuation is
/// cut there, so no scan goes back further (linear time on any input).
const MAX_CLAUSE_BYTES: usize = 64 * 3;

/// Start of the clause that contains `pos` (not before `floor`, not more
/// than [`MAX_CLAUSE_BYTES`] back).
fn clause_start(text: &str, pos: usize, floor: usize) -> usize {
    let mut lo = floor.max(pos.saturating_sub(MAX_CLAUSE_BYTES));
    while !text.is_char_boundary(lo) {
        lo += 1;
    }
    text[lo..pos]
        .char_indices()
        .rev()
        .find(|(_, c)| is_punct(*c))
        .map_or(lo, |(j, c)| lo + j + c.len_utf8())
}

/// Start of the sentence that ends at `end` (not before `floor`).
fn sentence_start(text: &str, floor: usize, end: usize) -> usize {
    text[floor..end]
        .char_indices()
        .rev()
        .find(|(_, c)| is_sentence_end(*c))
        .map_or(floor, |(j, c)| floor + j + c.len_utf8())
}

/// End of the first sentence from `start` (its end mark included), at most `limit`.
fn sentence_end(text: &str, start: usize, limit: usize) -> usize {
    text[start..limit]
        .char_indices()
        .find(|(j, c)| is_sentence_end(*c) && *j > 0)
        .map_or(limit, |(j, c)| start + j + c.len_utf8())
}

fn last_clause(text: &str, floor: usize, end: usize) -> &str {
    &text[clause_start(text, end, floor)..end]
}

/// True when the mention opens its clause, possibly after connectives (然后他说).
fn is_subject(text: &str, m: &Mention, floor: usize) -> bool {
    opens_clause(&text[clause_start(text, m.start, floor)..m.start])
}

/// Longest run of connectives before a subject, in bytes (3 × 3 characters).
const MAX_CONNECTIVE_BYTES: usize = 27;

/// True when `prefix` (clause start up to a mention) is empty or connectives only.
fn opens_clause(prefix: &str) -> bool {
    let mut prefix = prefix.trim_start();
    if prefix.is_empty() {
        return true;
    }
    if prefix.len() > MAX_CONNECTIVE_BYTES {
        return false;
    }
    for _ in 0..3 {
        match CONNECTIVES.iter().find(|c| prefix.starts_with(**c)) {
            Some(c) => prefix = prefix[c.len()..].trim_start(),
            None => return false,
        }
        if prefix.is_empty() {
            return true;
        }
    }
    false
}

/// One-character speech verbs, with the words they are part of that are not speech.
fn is_speech_char(prev: Option<char>, c: char, next: Option<char>) -> bool {
    match c {
        '说' | '說' => {
            !matches!(
                prev,
                Some(
                    '听' | '聽'
                        | '据'
                        | '據'
                        | '虽'
                        | '雖'
                        | '小'
                        | '传'
                        | '傳'
                        | '学'
                        | '學'
                        | '就'
                        | '再'
                        | '别'
                        | '別'
                )
            ) && !matches!(next, Some('明' | '法' | '服' | '不' | '是' | '的'))
        }
        '道' => {
            !matches!(
                prev,
                Some(
                    '知' | '味'
                        | '街'
                        | '轨'
                        | '軌'
                        | '管'
                        | '频'
                        | '頻'
                        | '通'
                        | '隧'
                        | '难'
                        | '難'
                        | '车'
                        | '車'
                        | '霸'
                        | '赤'
                        | '公'
                        | '大'
                        | '古'
                        | '孤'
                        | '正'
                        | '邪'
                        | '人'
                        | '地'
                        | '要'
                        | '门'
                        | '門'
                        | '航'
                        | '报'
                        | '報'
                        | '渠'
                        | '一'
                )
            ) && !matches!(
                next,
                Some(
                    '路' | '理'
                        | '德'
                        | '士'
                        | '人'
                        | '观'
                        | '觀'
                        | '长'
                        | '長'
                        | '家'
                        | '具'
                        | '歉'
                        | '谢'
                        | '謝'
                        | '别'
                        | '別'
                        | '教'
                        | '行'
                        | '义'
                        | '義'
                        | '上'
                        | '口'
                )
            )
        }
        '问' | '問' => !matches!(next, Some('题' | '題')),
        '叫' => !matches!(next, Some('做' | '作')),
        '喊' | '答' | '嚷' | '吼' | '骂' | '罵' | '叹' | '嘆' => true,
        // 操曰, 玄德曰; not 名曰 or 诗曰 (named, a poem says).
        '曰' => !matches!(
            prev,
            Some('名' | '号' | '號' | '谓' | '謂' | '诗' | '詩' | '赞' | '讚')
        ),
        _ => false,
    }
}

fn has_speech_verb(s: &str) -> bool {
    let mut prev = None;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if is_speech_char(prev, c, chars.peek().copied()) {
            return true;
        }
        prev = Some(c);
    }
    SPEECH_MATCHER.is_match(s)
}

static SPEECH_MATCHER: std::sync::LazyLock<AhoCorasick> = std::sync::LazyLock::new(|| {
    AhoCorasickBuilder::new()
        .start_kind(aho_corasick::StartKind::Both)
        .build(SPEECH_WORDS)
        .expect("speech words are plain strings")
});

fn starts_with_speech_verb(s: &str) -> bool {
    if starts_with_bare_speech_verb(s) {
        return true;
    }
    // A manner word before the verb: 淡淡道, 沉声道, 冷冷地说, 笑着说.
    let mut it = s.chars();
    let (Some(a), Some(b)) = (it.next(), it.next()) else {
        return false;
    };
    let rest = it.as_str();
    if starts_with_bare_speech_verb(rest)
        && (a == b
            || matches!(b, '声' | '聲' | '地' | '着' | '著')
            || s.char_indices()
                .nth(2)
                .is_some_and(|(at, _)| is_not_name(&s[..at])))
    {
        return true;
    }
    // 冷冷地说: a reduplicated adverb with 地.
    a == b
        && rest
            .strip_prefix('地')
            .is_some_and(starts_with_bare_speech_verb)
}

fn starts_with_bare_speech_verb(s: &str) -> bool {
    let mut it = s.chars();
    let Some(c) = it.next() else { return false };
    let next = it.next();
    is_speech_char(None, c, next)
        || SPEECH_MATCHER
            .find(aho_corasick::Input::new(s).anchored(aho_corasick::Anchored::Yes))
            .is_some()
        || matches!(c, '笑' | '冷' | '低' | '大' | '轻' | '輕' | '忙' | '急')
            && next.is_some_and(|n| is_speech_char(Some(c), n, None))
}

// ---------------------------------------------------------------------------
// Discovery: characters of a book without a cast file.

/// Common surnames, simplified and traditional.
const SURNAMES: &str = "王李张張刘劉陈陳杨楊黄黃赵趙吴吳周徐孙孫马馬朱胡郭何高林罗羅郑鄭梁谢謝宋唐许許韩韓冯馮邓鄧曹彭曾肖萧蕭田董袁潘于蒋蔣蔡余杜叶葉程苏蘇魏吕呂丁任沈姚卢盧姜崔钟鍾谭譚陆陸汪范金石廖贾賈夏韦韋付方白邹鄒孟熊秦邱江尹薛闫阎閻段雷侯龙龍史陶黎贺賀顾顧毛郝龚龔邵万萬钱錢严嚴覃武戴莫孔向汤湯常温溫康施文牛樊葛邢安齐齊易乔喬伍庞龐颜顏倪庄莊聂聶章鲁魯岳翟殷詹申欧歐耿关關兰蘭焦俞左柳甘祝包宁寧尚符舒阮柯纪紀梅童凌毕畢单單季裴霍涂成苗谷盛曲翁冉骆駱蓝藍路游辛靳管柴蒙鲍鮑华華喻祁蒲房滕屈饶饒解牟艾尤阳陽时時穆农農司卓古吉缪繆简簡车車项項连連芦蘆麦麥褚娄婁窦竇戚岑景党黨宫宮费費卜冷晏席卫衛米柏宗瞿桂全佟应應臧闵閔苟邬鄔边邊卞姬师師和仇栾欒隋商刁沙荣榮巫寇桑郎甄丛叢仲虞敖巩鞏明佘池查麻苑迟遲邝鄺猪豬";

/// Is `c` one of the common surnames?
fn is_surname(c: char) -> bool {
    static SET: std::sync::LazyLock<rustc_hash::FxHashSet<char>> =
        std::sync::LazyLock::new(|| SURNAMES.chars().collect());
    SET.contains(&c)
}

/// True when a name of three or more characters opens with a common surname.
fn has_surname(name: &str) -> bool {
    name.chars().next().is_some_and(is_surname) && name.chars().count() <= 3
}

/// Common words that open clauses in speaker positions but name nobody.
const NOT_NAMES: &[&str] = &[
    "似乎",
    "常常",
    "严肃",
    "嚴肅",
    "赶忙",
    "趕忙",
    "急忙",
    "慌忙",
    "顿时",
    "頓時",
    "立即",
    "仍然",
    "依然",
    "已经",
    "已經",
    "正在",
    "只好",
    "不禁",
    "忍不住",
    "回话",
    "回話",
    "嘴里",
    "嘴裡",
    "或者",
    "别人",
    "別人",
    "同样",
    "同樣",
    "直接",
    "结果",
    "結果",
    "俗话",
    "俗話",
    "孩子",
    "有人",
    "对方",
    "對方",
    "自己",
    "心里",
    "心裡",
    "脸上",
    "臉上",
    "眼里",
    "眼裡",
    "手里",
    "手裡",
    "随后",
    "隨後",
    "外面",
    "里面",
    "裡面",
    "旁边",
    "旁邊",
    "对面",
    "對面",
    "那人",
    "此人",
    "原来",
    "原來",
    "真个",
    "真個",
    "须臾",
    "須臾",
    "二人",
    "三人",
    "两人",
    "兩人",
    "遂此",
    "少时",
    "少時",
    "随即",
    "隨即",
    "今日",
    "今天",
    "明日",
    "昨日",
    "如今",
    "后来",
    "後來",
    "先前",
    "众位",
    "眾位",
    "其实",
    "其實",
    "果然",
    "不久",
    "片刻",
    "半晌",
    "良久",
    "许久",
    "許久",
    // Adverbs and manner words before 道/说/问 (林凡淡淡道, 沉声道).
    "淡淡",
    "缓缓",
    "緩緩",
    "慢慢",
    "悄悄",
    "静静",
    "靜靜",
    "默默",
    "呆呆",
    "怔怔",
    "幽幽",
    "狠狠",
    "恨恨",
    "愣愣",
    "傻傻",
    "频频",
    "頻頻",
    "徐徐",
    "沉沉",
    "笑笑",
    "久久",
    "渐渐",
    "漸漸",
    "紧紧",
    "緊緊",
    "死死",
    "深深",
    "暗暗",
    "偷偷",
    "好好",
    "远远",
    "遠遠",
    "匆匆",
    "沉声",
    "沉聲",
    "缓声",
    "厉声",
    "厲聲",
    "柔声",
    "柔聲",
    "朗声",
    "朗聲",
    "颤声",
    "顫聲",
    "失声",
    "失聲",
    "齐声",
    "齊聲",
    "随口",
    "隨口",
    "接口",
    "回答",
    "答应",
    "答應",
    "叹息",
    "嘆息",
    "微笑",
    "苦笑",
    "怒喝",
    "怒道",
    "摇头",
    "搖頭",
    "暗自",
    "回来",
    "回來",
    "出来",
    "出來",
    "进来",
    "進來",
    "过来",
    "過來",
    "口内",
    "口內",
    "口中",
    "心中",
    "心内",
    "心內",
    "口里",
    "口裡",
    "只得",
    "只是",
    "不由",
    "不觉",
    "不覺",
    "兴致",
    "興致",
    "伤心",
    "傷心",
    "高兴",
    "高興",
    "笑眯眯",
    "笑嘻嘻",
    "笑吟吟",
];

/// Is `s` one of [`NOT_NAMES`]? (A set: asked for every candidate.)
fn is_not_name(s: &str) -> bool {
    static SET: std::sync::LazyLock<rustc_hash::FxHashSet<&'static str>> =
        std::sync::LazyLock::new(|| NOT_NAMES.iter().copied().collect());
    SET.contains(s)
}

/// Role nouns: they speak (小二道, 丫鬟说), but are never the alias of a
/// name that contains them (小二 is not 阮小二).
const ROLE_NOUNS: &[&str] = &[
    "小二", "丫鬟", "丫头", "丫頭", "老人", "老者", "老汉", "老漢", "老头", "老頭", "老婆", "婆子",
    "妇人", "婦人", "女子", "和尚", "道士", "先生", "店家", "掌柜", "掌櫃", "伙计", "夥計", "小厮",
    "小廝", "公子", "小姐", "夫人", "太太", "老爷", "老爺", "大王", "大人", "妹妹", "哥哥", "姐姐",
    "弟弟", "嫂子", "师父", "師父", "师傅", "師傅", "长老", "長老", "国王", "國王", "皇帝", "娘娘",
    "公主", "小妖", "妖精", "众人", "眾人", "孩子", "姑娘", "大哥", "二哥", "三哥", "大嫂", "老板",
    "老闆", "村长", "村長", "书记", "書記", "队长", "隊長", "县长", "縣長", "乡长", "鄉長",
];

/// Compound surnames: a four-character name needs one (欧阳明月).
const COMPOUND_SURNAMES: &[&str] = &[
    "欧阳", "歐陽", "司马", "司馬", "诸葛", "諸葛", "上官", "东方", "東方", "慕容", "令狐", "公孙",
    "公孫", "皇甫", "长孙", "長孫", "尉迟", "尉遲", "夏侯", "独孤", "獨孤", "南宫", "南宮", "西门",
    "西門", "宇文", "轩辕", "軒轅", "端木", "百里", "呼延",
];

/// Characters that end a clause's first words but never a name: 孙兰香赶
/// (赶忙), 金光明高 (高兴), 刘乡长已 (已经).
fn is_non_name_tail(c: char) -> bool {
    matches!(
        c,
        '赶' | '趕'
            | '高'
            | '兴'
            | '興'
            | '伤'
            | '傷'
            | '有'
            | '已'
            | '一'
            | '十'
            | '也'
            | '又'
            | '都'
            | '就'
            | '便'
            | '才'
            | '还'
            | '還'
            | '刚'
            | '剛'
            | '忙'
            | '连'
            | '連'
            | '哭'
            | '冷'
            | '淡'
            | '沉'
            | '缓'
            | '緩'
            | '怒'
            | '摇'
            | '搖'
            | '点'
            | '點'
            | '低'
            | '轻'
            | '輕'
            | '急'
            | '不'
            | '没'
            | '沒'
            | '把'
            | '被'
            | '给'
            | '給'
            | '对'
            | '對'
            | '向'
            | '从'
            | '從'
            | '跟'
            | '和'
            | '与'
            | '與'
            | '在'
            | '是'
            | '惊'
            | '驚'
            | '苦'
            | '微'
            | '悄'
            | '愣'
            | '气'
            | '氣'
            | '激'
            | '望'
            | '看'
            | '听'
            | '聽'
            | '想'
            | '这'
            | '這'
            | '那'
            | '却'
            | '卻'
            | '马'
            | '突'
            | '忽'
    )
}

/// Characters that never appear inside a name (particles, pronouns, speech verbs).
fn is_non_name_inner(c: char) -> bool {
    matches!(
        c,
        '的' | '了'
            | '着'
            | '著'
            | '过'
            | '過'
            | '在'
            | '是'
            | '和'
            | '与'
            | '與'
            | '把'
            | '被'
            | '让'
            | '讓'
            | '给'
            | '給'
            | '对'
            | '對'
            | '向'
            | '从'
            | '從'
            | '说'
            | '說'
            | '道'
            | '问'
            | '問'
            | '喊'
            | '叫'
            | '答'
            | '笑'
            | '们'
            | '們'
            | '么'
            | '麼'
            | '他'
            | '她'
            | '我'
            | '你'
            | '您'
            | '它'
            | '这'
            | '這'
            | '那'
            | '就'
            | '也'
            | '都'
            | '又'
            | '还'
            | '還'
            | '不'
            | '没'
            | '沒'
            | '很'
            | '得'
            | '地'
            | '却'
            | '卻'
            | '便'
            | '才'
            | '再'
            | '只'
            | '听'
            | '聽'
            | '看'
            | '想'
            | '要'
            | '会'
            | '會'
            | '能'
            | '吗'
            | '嗎'
            | '呢'
            | '吧'
            | '啊'
            | '呀'
            | '嘛'
            | '起'
            | '到'
            | '个'
            | '個'
            | '闻'
            | '聞'
    )
}

/// Characters that never open a name.
fn is_non_name_char(c: char) -> bool {
    matches!(
        c,
        '的' | '了'
            | '着'
            | '著'
            | '过'
            | '過'
            | '在'
            | '是'
            | '和'
            | '与'
            | '與'
            | '把'
            | '被'
            | '让'
            | '讓'
            | '给'
            | '給'
            | '对'
            | '對'
            | '向'
            | '从'
            | '從'
            | '说'
            | '說'
            | '道'
            | '问'
            | '問'
            | '喊'
            | '叫'
            | '答'
            | '笑'
            | '们'
            | '們'
            | '么'
            | '麼'
            | '什'
            | '怎'
            | '他'
            | '她'
            | '我'
            | '你'
            | '您'
            | '它'
            | '咱'
            | '这'
            | '這'
            | '那'
            | '哪'
            | '就'
            | '也'
            | '都'
            | '又'
            | '还'
            | '還'
            | '不'
            | '没'
            | '沒'
            | '很'
            | '太'
            | '已'
            | '经'
            | '經'
            | '得'
            | '地'
            | '却'
            | '卻'
            | '便'
            | '才'
            | '再'
            | '只'
            | '听'
            | '聽'
            | '看'
            | '见'
            | '見'
            | '想'
            | '要'
            | '会'
            | '會'
            | '能'
            | '可'
            | '时'
            | '時'
            | '候'
            | '此'
            | '其'
            | '之'
            | '而'
            | '以'
            | '于'
            | '於'
            | '将'
            | '將'
            | '所'
            | '为'
            | '為'
            | '因'
            | '但'
            | '并'
            | '並'
            | '等'
            | '些'
            | '个'
            | '個'
            | '声'
            | '聲'
            | '吗'
            | '嗎'
            | '呢'
            | '吧'
            | '啊'
            | '呀'
            | '嘛'
            | '起'
            | '来'
            | '來'
            | '去'
            | '到'
            | '上'
            | '下'
            | '中'
            | '里'
            | '裡'
            | '後'
            | '后'
            | '前'
            | '一'
            | '两'
            | '兩'
            | '几'
            | '幾'
            | '有'
            | '无'
            | '無'
            | '每'
            | '各'
            | '某'
            | '连'
            | '連'
            | '急'
            | '忙'
            | '低'
            | '轻'
            | '輕'
            | '高'
            | '大'
            | '冷'
            | '微'
            | '点'
            | '點'
            | '头'
            | '頭'
            | '突'
            | '然'
            | '忽'
            | '立'
            | '刻'
            | '正'
            | '自'
            | '己'
            | '如'
            | '果'
            | '虽'
            | '雖'
            | '即'
            | '使'
            | '当'
            | '當'
            | '最'
            | '更'
            | '好'
            | '该'
            | '該'
    )
}

/// A discovered character with the number of speaker positions it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    pub character: Character,
    pub count: usize,
}

/// Finds the recurring 2–4 character strings that open clauses in speaker
/// positions (before a colon or speech verb, right after a quote) and makes
/// a cast of them, most frequent first, with genders guessed from the
/// pronouns that follow them and from gendered characters.
pub fn discover<'a>(chapters: &[Vec<ParagraphView<'a>>]) -> Vec<Discovered> {
    // (times in a speaker position, times right before a verb or the clause end)
    let mut counts: rustc_hash::FxHashMap<&str, (usize, usize)> = rustc_hash::FxHashMap::default();
    let mut add_clause = |text: &'a str, start: usize, end: usize| {
        let clause = &text[start..end];
        let mut rest = clause.trim_start();
        for _ in 0..2 {
            match CONNECTIVES.iter().find(|c| rest.starts_with(**c)) {
                Some(c) => rest = &rest[c.len()..],
                None => break,
            }
        }
        let mut ends = Vec::with_capacity(4);
        for (n, (j, c)) in rest.char_indices().enumerate() {
            if n >= 4 || !super::decode::is_han(c) {
                break;
            }
            ends.push(j + c.len_utf8());
        }
        for &e in ends.iter().skip(1) {
            let entry = counts.entry(&rest[..e]).or_default();
            entry.0 += 1;
            // Right before a speech verb or the end of the clause (毛仲說, 毛仲：).
            let after = &rest[e..];
            if after.is_empty() || starts_with_speech_verb(after) {
                entry.1 += 1;
            }
        }
    };
    // How often each 2–3 character string opens a clause of narration anywhere
    // (高朗举起手, 田福堂知道): a name seen once in a speaker position is
    // still a name when it is often the subject.
    let mut subjects: rustc_hash::FxHashMap<&'a str, usize> = rustc_hash::FxHashMap::default();
    let mut add_subject =
        |text: &'a str, start: usize, end: usize| {
            let rest = text[start..end].trim_start();
            // Only what may open a name (most clauses open with a word that cannot).
            if rest.chars().next().is_none_or(|c| {
                !super::decode::is_han(c) || (is_non_name_char(c) && !is_surname(c))
            }) {
                return;
            }
            for (j, c) in rest.char_indices().skip(1).take(2) {
                if !super::decode::is_han(c) {
                    break;
                }
                *subjects.entry(&rest[..j + c.len_utf8()]).or_default() += 1;
            }
        };
    for paragraphs in chapters {
        for (i, p) in paragraphs.iter().enumerate() {
            if p.skipped {
                continue;
            }
            for (k, s) in p.spans.iter().enumerate() {
                if s.kind != SegmentKind::Narration {
                    continue;
                }
                let before_quote = p
                    .spans
                    .get(k + 1)
                    .is_some_and(|n| n.kind == SegmentKind::Dialogue);
                let after_quote = k > 0 && p.spans[k - 1].kind == SegmentKind::Dialogue;
                let after_quote_paragraph = k == 0
                    && i > 0
                    && paragraphs[i - 1]
                        .spans
                        .iter()
                        .all(|s| s.kind == SegmentKind::Dialogue)
                    && !paragraphs[i - 1].spans.is_empty();
                // Every clause of the narration that holds a speech verb or
                // ends in a colon before a quote, and the first clause after a quote.
                let mut clause_from = s.start;
                let mut first = true;
                for (j, c) in p.text[s.start..s.end].char_indices() {
                    let at = s.start + j;
                    if !is_punct(c) {
                        continue;
                    }
                    add_subject(p.text, clause_from, at);
                    let clause = &p.text[clause_from..at];
                    let colon = matches!(c, '：' | ':') && before_quote;
                    if colon
                        || has_speech_verb(clause)
                        || (first && (after_quote || after_quote_paragraph))
                    {
                        add_clause(p.text, clause_from, at);
                    }
                    first = false;
                    clause_from = at + c.len_utf8();
                }
                if clause_from < s.end {
                    let clause = &p.text[clause_from..s.end];
                    if has_speech_verb(clause) || (first && (after_quote || after_quote_paragraph))
                    {
                        add_clause(p.text, clause_from, s.end);
                    }
                }
            }
        }
    }
    select_names(&counts, &subjects)
}

fn select_names(
    seen: &rustc_hash::FxHashMap<&str, (usize, usize)>,
    subjects: &rustc_hash::FxHashMap<&str, usize>,
) -> Vec<Discovered> {
    const MIN_COUNT: usize = 2;
    // Seen once in a speaker position, but often the subject of a clause.
    let enough = |s: &str, n: usize| {
        n >= MIN_COUNT || (n >= 1 && has_surname(s) && subjects.get(s).copied().unwrap_or(0) >= 4)
    };
    // A name must stand right before a speech verb or a colon at least once.
    let counts: HashMap<&str, usize> = seen.iter().map(|(k, (n, _))| (*k, *n)).collect();
    let direct = |s: &str| seen.get(s).is_some_and(|(_, d)| *d > 0);
    let count_of = |s: &str| counts.get(s).copied().unwrap_or(0);
    let plausible = |s: &str| {
        let mut chars = s.chars();
        let n = s.chars().count();
        // 高朗: a surname that is also a common word opens a name that is
        // often the subject of a clause.
        let often_subject = has_surname(s)
            && subjects.get(s).copied().unwrap_or(0) >= 4
            && s.chars().nth(1).is_some_and(|c| !is_non_name_char(c));
        chars
            .next()
            .is_some_and(|c| !is_non_name_char(c) || often_subject)
            && chars.all(|c| super::decode::is_han(c) && !is_non_name_inner(c))
            && !CROWDS.contains(&s)
            && !is_not_name(s)
            // 金秀兴致: a name does not end in a manner word.
            && (n <= 2
                || s.char_indices()
                    .nth(n - 2)
                    .is_none_or(|(at, _)| !is_not_name(&s[at..])))
            && !has_speech_verb(s)
            && (n < 3 || !s.chars().last().is_some_and(is_non_name_tail))
            && (n < 4
                || COMPOUND_SURNAMES.iter().any(|c| s.starts_with(c))
                || CROWDS.iter().any(|c| s.ends_with(c)))
    };
    let mut chosen: HashMap<String, usize> = HashMap::new();
    // Longer strings by the string one character shorter that they extend.
    let mut longer: HashMap<&str, Vec<(&str, usize)>> = HashMap::new();
    for (k, n) in &counts {
        if let Some((last, _)) = k.char_indices().last()
            && last > 0
        {
            longer.entry(&k[..last]).or_default().push((k, *n));
        }
    }
    let mut twos: Vec<(&str, usize)> = counts
        .iter()
        .filter(|(k, n)| k.chars().count() == 2 && enough(k, **n))
        .map(|(k, n)| (*k, *n))
        .collect();
    twos.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    for (two, n2) in twos {
        if !two.chars().all(super::decode::is_han) {
            continue;
        }
        // Grow the name while nearly every occurrence continues the same way
        // (毛仲 stays, 陈青 → 陈青云); a longer name needs a surname.
        let extensions = |name: &str| -> Vec<(&str, usize)> {
            let mut v: Vec<(&str, usize)> = longer
                .get(name)
                .map(|v| {
                    v.iter()
                        .copied()
                        .filter(|(k, _)| plausible(k) && has_surname(k))
                        .collect()
                })
                .unwrap_or_default();
            v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            v
        };
        let mut found: Vec<(&str, usize)> = Vec::new();
        let ext = extensions(two);
        match ext.first() {
            Some(&(k, c)) if c as f64 >= 0.6 * n2 as f64 => {
                // A fourth character only when nearly always there (明軍官兵).
                let four = longer.get(k).and_then(|v| {
                    v.iter()
                        .copied()
                        .filter(|(f, _)| plausible(f))
                        .max_by_key(|(f, n)| (*n, std::cmp::Reverse(*f)))
                });
                match four {
                    Some((f, n)) if n as f64 >= 0.8 * c as f64 => found.push((f, n)),
                    _ => found.push((k, c)),
                }
                // 田福 → 田福军, and also 田福堂 when he is named often enough.
                found.extend(ext.iter().skip(1).copied().filter(|(name, n)| {
                    *n >= MIN_COUNT && subjects.get(name).copied().unwrap_or(0) >= 2
                }));
            }
            _ => {
                // 孙少 → 孙少安 and 孙少平: a shared prefix is no name.
                let shared: Vec<(&str, usize)> = ext
                    .iter()
                    .copied()
                    .filter(|(_, c)| *c >= MIN_COUNT && *c as f64 >= 0.2 * n2 as f64)
                    .collect();
                let covered: usize = shared.iter().map(|(_, c)| c).sum();
                if shared.len() >= 2 && covered as f64 >= 0.6 * n2 as f64 {
                    found.extend(shared);
                } else {
                    found.push((two, n2));
                }
            }
        }
        for (name, n) in found {
            let surname = has_surname(name) || name.chars().count() > 3;
            if !plausible(name) || !enough(name, n) || !(surname || direct(name)) {
                continue;
            }
            let entry = chosen.entry(name.to_owned()).or_default();
            *entry = (*entry).max(n.max(count_of(name)));
        }
    }
    let mut names: Vec<(String, usize)> = chosen.into_iter().collect();
    names.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    names.truncate(60);
    // A given name (少平) that is the tail of a full name (孙少平) is its alias.
    let mut out: Vec<Discovered> = Vec::new();
    let full: Vec<String> = names
        .iter()
        .filter(|(n, _)| n.chars().count() == 3)
        .map(|(n, _)| n.clone())
        .collect();
    let mut aliases_of: HashMap<String, Vec<String>> = HashMap::new();
    let mut alias_count: HashMap<String, usize> = HashMap::new();
    let is_tail_alias = |name: &str, full: &str| {
        name.chars().count() == 2 && full.ends_with(name) && !ROLE_NOUNS.contains(&name)
    };
    for (name, n) in &names {
        if let Some(owner) = full.iter().find(|f| is_tail_alias(name, f)) {
            aliases_of
                .entry(owner.clone())
                .or_default()
                .push(name.clone());
            *alias_count.entry(owner.clone()).or_default() += n;
        }
    }
    for (name, n) in names {
        if full.iter().any(|f| is_tail_alias(&name, f)) {
            continue;
        }
        let aliases = aliases_of.remove(&name).unwrap_or_default();
        out.push(Discovered {
            count: n + alias_count.get(&name).copied().unwrap_or(0),
            character: Character {
                gender: gender_hint(&name),
                name,
                aliases,
                voice: None,
            },
        });
    }
    out.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(a.character.name.cmp(&b.character.name))
    });
    out
}

/// Gender suggested by the last character of a name (婶, 姐, 霞 … / 叔, 哥 …).
fn gender_hint(name: &str) -> Gender {
    let Some(last) = name.chars().last() else {
        return Gender::Unknown;
    };
    // Words that make a name female wherever they stand (女子, 公主, 夫人 …).
    const FEMALE_WORDS: &[&str] = &[
        "女", "娘", "婆", "妇", "婦", "公主", "夫人", "太太", "小姐", "菩萨", "菩薩", "观音",
        "觀音", "黛", "钗", "釵", "婉", "娴", "嫻", "嫣", "姗", "婵", "嬋", "娇", "嬌", "姨", "氏",
    ];
    if FEMALE_WORDS.iter().any(|w| name.contains(w)) {
        return Gender::Female;
    }
    if matches!(
        last,
        '娘' | '姐'
            | '妹'
            | '女'
            | '婶'
            | '嬸'
            | '嫂'
            | '妈'
            | '媽'
            | '婆'
            | '姑'
            | '霞'
            | '花'
            | '红'
            | '紅'
            | '英'
            | '秀'
            | '莲'
            | '蓮'
            | '兰'
            | '蘭'
            | '芳'
            | '丽'
            | '麗'
            | '娟'
            | '婷'
            | '娜'
            | '琳'
            | '玲'
            | '萍'
            | '梅'
            | '燕'
            | '凤'
            | '鳳'
            | '珍'
            | '翠'
            | '琴'
            | '雪'
            | '薇'
            | '媛'
            | '妮'
            | '姬'
            | '妃'
            | '后'
            | '奶'
            | '娥'
            | '莉'
            | '香'
            | '菊'
            | '蓉'
            | '母'
    ) {
        Gender::Female
    } else if matches!(
        last,
        '哥' | '叔'
            | '爷'
            | '爺'
            | '伯'
            | '公'
            | '王'
            | '帝'
            | '郎'
            | '兄'
            | '弟'
            | '爹'
            | '侯'
            | '将'
            | '將'
            | '军'
            | '軍'
            | '僧'
            | '父'
            | '龙'
            | '龍'
            | '虎'
            | '彪'
            | '强'
            | '強'
            | '刚'
            | '剛'
            | '者'
            | '师'
            | '師'
            | '魔'
            | '怪'
    ) {
        Gender::Male
    } else {
        Gender::Unknown
    }
}

/// Refines unknown genders in a discovered cast from the pronoun that most
/// often follows each name in the same paragraph (他 → male, 她 → female).
pub fn guess_genders(found: &mut [Discovered], chapters: &[Vec<ParagraphView<'_>>]) {
    if found.is_empty() {
        return;
    }
    let mut words: Vec<&str> = Vec::new();
    let mut owner: Vec<Option<usize>> = Vec::new();
    for (i, d) in found.iter().enumerate() {
        for n in std::iter::once(&d.character.name).chain(&d.character.aliases) {
            words.push(n);
            owner.push(Some(i));
        }
    }
    words.extend(["他", "她", "他们", "她们", "他們", "她們", "其他"]);
    owner.extend([None; 7]);
    let Ok(matcher) = AhoCorasickBuilder::new()
        .match_kind(MatchKind::LeftmostLongest)
        .build(&words)
    else {
        return;
    };
    // How others address a character right after the name (润叶姐, 金波哥).
    const FEMALE_ADDRESS: &[&str] = &[
        "姐", "妹", "娘", "嫂", "婆", "氏", "夫人", "姑娘", "女", "婶", "嬸", "奶奶", "阿姨", "妈",
        "媽",
    ];
    const MALE_ADDRESS: &[&str] = &[
        "哥", "叔", "伯", "爷", "爺", "兄", "先生", "公子", "老弟", "大爷", "大爺", "老汉",
    ];
    let mut votes = vec![[0usize; 2]; found.len()];
    for p in chapters.iter().flatten() {
        let mut last: Option<usize> = None;
        for m in matcher.find_iter(p.text) {
            let pat = m.pattern().as_usize();
            match owner[pat] {
                Some(i) => {
                    let after = &p.text[m.end()..];
                    if FEMALE_ADDRESS.iter().any(|w| after.starts_with(w)) {
                        votes[i][1] += 3;
                    } else if MALE_ADDRESS.iter().any(|w| after.starts_with(w)) {
                        votes[i][0] += 3;
                    }
                    last = Some(i);
                }
                None => {
                    // Only a pronoun that opens a clause refers back to the
                    // name (高朗问她: 她 is someone else).
                    let opens_clause = p.text[..m.start()]
                        .chars()
                        .next_back()
                        .is_none_or(|c| is_punct(c) || matches!(c, '”' | '」' | '’' | '』'));
                    if let Some(i) = last.take()
                        && opens_clause
                    {
                        match words[pat] {
                            "他" => votes[i][0] += 1,
                            "她" => votes[i][1] += 1,
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    for (d, [male, female]) in found.iter_mut().zip(votes) {
        // A gendered name beats the votes (classical texts use 他 for women too).
        let g = if d.character.gender != Gender::Unknown {
            d.character.gender
        } else if male >= 2 && male >= 2 * female {
            Gender::Male
        } else if female >= 2 && female >= 2 * male {
            Gender::Female
        } else {
            Gender::Unknown
        };
        d.character.gender = g;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::quote::scan_paragraph;

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

    /// Speakers of every dialogue span, paragraph by paragraph.
    fn speakers(cast: &Cast, text: &str) -> Vec<Option<String>> {
        let lines: Vec<&str> = text.lines().collect();
        let spans: Vec<Vec<SpanRange>> = lines
            .iter()
            .map(|l| {
                let mut v = Vec::new();
                scan_paragraph(l, &mut v);
                v
            })
            .collect();
        let views: Vec<ParagraphView<'_>> = lines
            .iter()
            .zip(&spans)
            .map(|(l, s)| ParagraphView {
                text: l,
                spans: s,
                skipped: false,
            })
            .collect();
        let a = Attributor::new(cast);
        let result = a.attribute(&views);
        let mut out = Vec::new();
        for (p, who) in views.iter().zip(result) {
            for (s, w) in p.spans.iter().zip(who) {
                if s.kind == SegmentKind::Dialogue {
                    out.push(w.and_then(|w| a.name(w)).map(str::to_owned));
                }
            }
        }
        out
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
    fn continued_speech_keeps_its_speaker() {
        let c = cast(&[("林一舟", &[], M), ("苏晚", &[], F)]);
        let text = "苏晚说：“第一件事，\n“第二件事。”\n林一舟点头。";
        assert_eq!(names(&speakers(&c, text)), ["苏晚", "苏晚"]);
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
    }

    #[test]
    fn one_character_alias_only_before_a_verb() {
        let c = cast(&[("田晓霞", &["霞"], F), ("林一舟", &[], M)]);
        let text = "晚霞满天，林一舟说：“走。”\n霞说：“好。”";
        assert_eq!(names(&speakers(&c, text)), ["林一舟", "田晓霞"]);
    }

    #[test]
    fn speech_verb_detection() {
        assert!(has_speech_verb("他笑道"));
        assert!(has_speech_verb("她低声说"));
        assert!(has_speech_verb("毛仲提醒大家"));
        assert!(!has_speech_verb("他知道这件事"));
        assert!(!has_speech_verb("听说他来了"));
        assert!(!has_speech_verb("这个问题"));
    }

    #[test]
    fn discovers_recurring_speakers() {
        let text = [
            "毛仲說：「走。」",
            "「好。」毛仲提醒大家。",
            "陈青云笑道：「来了。」",
            "「是。」陈青云說。",
            "「快！」毛仲喊道。",
            "这时候大家都笑了。",
        ];
        let spans: Vec<Vec<SpanRange>> = text
            .iter()
            .map(|l| {
                let mut v = Vec::new();
                scan_paragraph(l, &mut v);
                v
            })
            .collect();
        let views: Vec<ParagraphView<'_>> = text
            .iter()
            .zip(&spans)
            .map(|(l, s)| ParagraphView {
                text: l,
                spans: s,
                skipped: false,
            })
            .collect();
        let found = discover(&[views]);
        let names: Vec<&str> = found.iter().map(|d| d.character.name.as_str()).collect();
        assert_eq!(names, ["毛仲", "陈青云"]);
        assert_eq!(found[0].count, 3);
    }

    #[test]
    fn gender_hints() {
        assert_eq!(gender_hint("润叶姐"), Gender::Female);
        assert_eq!(gender_hint("福堂叔"), Gender::Male);
        assert_eq!(gender_hint("毛仲"), Gender::Unknown);
        assert_eq!(gender_hint("公主"), Gender::Female);
        assert_eq!(gender_hint("女王"), Gender::Female);
    }
}
