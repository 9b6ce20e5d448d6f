//! Mentions of characters in the narration: the matcher built from a cast
//! (names and aliases, crowds, 他/她) and the mentions it finds, each 他/她
//! resolved to the character it stands for.

use std::collections::HashMap;

use super::clause::{
    MAX_CLAUSE_BYTES, brought_in, clause_start, is_punct, marks, opens_clause, seen_coming,
};
use super::matcher::{Found, WordMatcher};
use super::names::{
    OFFICE_TITLES, SURNAME_TITLES, UNNAMED_PEOPLE, Unnamed, is_non_name_char, is_role_word,
    is_surname,
};
use super::words::{
    CROWDS, after_self_word, asks_who_you_are, is_address_pause, one_char_address,
    starts_with_speech_verb,
};
use super::{Attributor, NARRATOR, ParagraphView, Who};
use crate::text::cast::{Cast, Gender};
use crate::text::quote::{SegmentKind, SpanRange};

/// Forms of address that follow a name in a vocative (少安哥, 玉亭叔,
/// 王老师), longest first. Not 妈 or 爷: 少平妈 is his mother.
const ADDRESS_FORMS: &[&str] = &[
    "大哥", "大姐", "大叔", "大婶", "大嫂", "大爷", "大娘", "大妈", "大伯", "老师", "同志", "师傅",
    "師傅", "老師", "哥哥", "姐姐", "妹妹", "弟弟", "哥", "姐", "妹", "弟", "叔", "婶", "嬸", "伯",
    "嫂",
];

/// Role nouns that a book uses for a character it has just named
/// (孙玉厚对儿子大声吼叫，老汉不愿意…).
const ANAPHORIC_ROLES: &[&str] = &[
    "老汉",
    "老漢",
    "老头",
    "老頭",
    "老头子",
    "老人",
    "老太太",
    "老太",
    "老婆子",
    "诗人",
    "詩人",
    "文书",
    "文書",
    "汉子",
    "漢子",
    "后生",
    "後生",
];

/// The forms of [`SURNAME_TITLES`] for each character whose surname no
/// other character of the cast bears (孙志强 → 孙总, 孙哥 …), as (word,
/// character); none for a surname that is also a function word (于, 将).
fn surname_addresses(cast: &Cast) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (s, i) in unique_surnames(cast) {
        let c = &cast.characters[i];
        for (title, fits) in SURNAME_TITLES {
            if *fits == Gender::Unknown || c.gender == Gender::Unknown || c.gender == *fits {
                out.push((format!("{s}{title}"), i));
            }
        }
    }
    out
}

/// 安姐, 言哥: a given name's first or last character with a bare 姐 or 哥
/// (for a character whose gender does not say the other), as colleagues,
/// juniors and friends address one in a modern book; only where no other
/// character's name holds that character (see [`super::gender`]'s keys).
fn given_addresses(cast: &Cast) -> Vec<(String, usize)> {
    let given = |name: &str| -> Option<Vec<char>> {
        let chars: Vec<char> = name.chars().collect();
        ((2..=3).contains(&chars.len()) && is_surname(chars[0])).then(|| chars[1..].to_vec())
    };
    let mut out = Vec::new();
    for (i, c) in cast.characters.iter().enumerate() {
        let Some(g) = given(&c.name) else {
            continue;
        };
        let mut ends = vec![g[0]];
        if g.len() > 1 {
            ends.push(g[g.len() - 1]);
        }
        for key in ends {
            if super::gender::not_bare_key(key)
                || cast.characters.iter().enumerate().any(|(j, o)| {
                    j != i
                        && std::iter::once(&o.name)
                            .chain(&o.aliases)
                            .any(|n| n.contains(key))
                })
            {
                continue;
            }
            for (title, fits) in [("姐", Gender::Female), ("哥", Gender::Male)] {
                if c.gender == Gender::Unknown || c.gender == fits {
                    out.push((format!("{key}{title}"), i));
                }
            }
        }
    }
    out
}

/// The longest name looked for right after 我是, 在下 …, in bytes (a
/// name and its title; longer strings are cut, the match checked on the cut).
const MAX_INTRODUCED_BYTES: usize = 12 * 3;

/// What a word of the cast matcher stands for.
#[derive(Debug, Clone, Copy)]
pub(super) enum Pattern {
    Name(usize),
    /// A one-character alias: only a mention right before a speech verb.
    ShortName(usize),
    Pronoun(Gender),
    /// A character named by a role noun (老汉, 诗人): right after a named
    /// character of its gender in the same paragraph, that one.
    Role(usize),
    /// A character named by an office title alone (书记): the character
    /// last named with that title in the chapter (曹书记), if any.
    Title(usize),
    /// A name that ends in an office title (曹书记), with the title.
    TitledName(usize, &'static str),
    Crowd(usize),
    /// A person the narration does not name (她父亲, 那女人): someone of
    /// that gender, or for a description the character just named.
    Unnamed(Gender, Unnamed),
    /// 他们, 其他 …: consumed so they are not read as 他.
    Ignore,
}

/// One mention of a character or crowd in the narration.
#[derive(Debug, Clone, Copy)]
pub(super) struct Mention {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) who: Option<Who>,
    /// Set for 他/她 that had no antecedent yet.
    pub(super) pronoun: Option<Gender>,
    /// For 他/她: the other character of that gender named lately.
    pub(super) other: Option<Who>,
}

impl Mention {
    /// A word for a person not named (父亲, 女人) that names nobody of the cast.
    pub(super) fn unnamed(&self) -> bool {
        matches!(self.who, Some(Who::Unnamed(_)))
    }
}

/// The matcher over a cast's names and aliases, the crowds and 他/她, with
/// what each of its patterns stands for.
pub(super) fn cast_matcher(cast: &Cast) -> (WordMatcher, Vec<Pattern>) {
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
            patterns.push(if name == NARRATOR {
                // The narrator of a book in the first person: every 我 of
                // the narration (not 我们, matched below).
                Pattern::Name(i)
            } else if ANAPHORIC_ROLES.contains(&name) && name == c.name {
                Pattern::Role(i)
            } else if OFFICE_TITLES.contains(&name) && name == c.name {
                Pattern::Title(i)
            } else if let Some(t) = OFFICE_TITLES
                .iter()
                .find(|t| name.ends_with(**t) && name.len() > t.len())
            {
                Pattern::TitledName(i, t)
            } else if name.chars().nth(1).is_some() {
                Pattern::Name(i)
            } else {
                Pattern::ShortName(i)
            });
        }
    }
    for (word, i) in surname_addresses(cast)
        .into_iter()
        .chain(given_addresses(cast))
    {
        if seen.insert(word.clone(), ()).is_none() {
            words.push(word);
            patterns.push(Pattern::Name(i));
        }
    }
    for (i, crowd) in CROWDS.iter().enumerate() {
        if seen.insert((*crowd).to_owned(), ()).is_none() {
            words.push((*crowd).to_owned());
            patterns.push(Pattern::Crowd(i));
        }
    }
    for (word, gender, kind) in UNNAMED_PEOPLE {
        if seen.insert((*word).to_owned(), ()).is_none() {
            words.push((*word).to_owned());
            patterns.push(Pattern::Unnamed(*gender, *kind));
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
        ("我们", Pattern::Ignore),
        ("我們", Pattern::Ignore),
        ("自我", Pattern::Ignore),
        // 我弟子 is a disciple, not a younger brother.
        ("我弟子", Pattern::Ignore),
    ] {
        if seen.insert(word.to_owned(), ()).is_none() {
            words.push(word.to_owned());
            patterns.push(pattern);
        }
    }
    let matcher = WordMatcher::new(&words);
    (matcher, patterns)
}

impl Attributor {
    /// All mentions in the narration of a chapter, per paragraph, with 他/她
    /// resolved to the latest character of that gender (or, with none
    /// before, the next one after).
    pub(super) fn chapter_mentions(&self, paragraphs: &[ParagraphView<'_>]) -> Vec<Vec<Mention>> {
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
        // The end of a pronoun and the kin after it (他哥, 她二妈), inside
        // which no other word is looked for.
        let mut kin_end = 0;
        for m in self.matcher.find_iter(narration) {
            let (mut start, mut end) = (span.start + m.start, span.start + m.end);
            if start < kin_end {
                continue;
            }
            let mut other = None;
            let (who, pronoun) = match self.patterns[m.pattern] {
                Pattern::Name(c) | Pattern::TitledName(c, _) => {
                    // 司机金俊海, 副书记金俊山, 他媳妇银花: a title or kin
                    // right before a name is that character's, one mention
                    // with the name.
                    if let Some(last) = out.last()
                        && last.end == start
                        && last.who.is_some_and(|w| w != Who::Character(c))
                        && (last.unnamed() || is_role_word(&text[last.start..last.end]))
                    {
                        start = last.start;
                        out.pop();
                    }
                    // 他问张生民: the 他 that opens this clause was taken for
                    // 张生民, whom it asks; it is the other one.
                    if let Some(p) = out.last_mut()
                        && p.who == Some(Who::Character(c))
                        && matches!(&text[p.start..p.end], "他" | "她")
                        && !text[p.end..start].chars().any(is_punct)
                        && let Some(slot) = gender_slot(self.genders[c])
                    {
                        p.who = last.slots[slot]
                            .previous
                            .filter(|o| *o != c)
                            .map(Who::Character);
                    }
                    if let Pattern::TitledName(_, t) = self.patterns[m.pattern] {
                        last.titled.retain(|(old, _)| *old != t);
                        last.titled.push((t, c));
                    }
                    (Some(Who::Character(c)), None)
                }
                Pattern::Role(c) => {
                    let named = gender_slot(self.genders[c])
                        .and_then(|slot| last.named_subject(slot, paragraph));
                    (Some(Who::Character(named.unwrap_or(c))), None)
                }
                Pattern::Title(c) => {
                    let title = &text[start..end];
                    let named = last.titled.iter().rev().find(|(t, _)| *t == title);
                    (Some(Who::Character(named.map_or(c, |(_, n)| *n))), None)
                }
                Pattern::ShortName(c) => {
                    if !starts_with_speech_verb(&text[end..]) {
                        continue;
                    }
                    (Some(Who::Character(c)), None)
                }
                Pattern::Crowd(c) => (Some(Who::Crowd(c)), None),
                Pattern::Unnamed(g, kind) => {
                    // 他妈的, 他娘的 are oaths, not his mother (她妈的病 is hers).
                    if text[end..].starts_with('的')
                        && matches!(&text[start..end], "他妈" | "他媽" | "他娘")
                    {
                        continue;
                    }
                    let Some(slot) = gender_slot(g) else {
                        continue;
                    };
                    // 她父亲, 少平他妈, 润叶的母亲: the possessor does not
                    // act; one mention with the kin.
                    let mut possessed = false;
                    if kind == Unnamed::Kin
                        && let Some(last) = out.last()
                        && (last.end == start || text[last.end..start] == *"的")
                    {
                        start = last.start;
                        out.pop();
                        possessed = true;
                    }
                    // 妻子嗔怒地说： with no one's before it, opening its
                    // clause: the wife of the scene, the woman named last, a
                    // paragraph or two back (not 她接上丈夫的话碴, the object).
                    let spouse = (kind == Unnamed::Kin
                        && !possessed
                        && SPOUSES.contains(&&text[start..end])
                        // 老婆婆, 老婆子: an old woman.
                        && !text[end..].starts_with(['婆', '子'])
                        && opens_clause(
                            &text[clause_start(text, start, span.start)..start],
                        ))
                    .then(|| last.latest_within(slot, paragraph, SPOUSE_PARAGRAPHS))
                    .flatten();
                    // 那女人 after 周秀芳 is she; 卖肉的中年女人, 一个女人 is
                    // someone new.
                    let newcomer = kind == Unnamed::Described && {
                        let clause = &text[clause_start(text, start, span.start)..start];
                        brought_in(clause) || seen_coming(clause)
                    };
                    let named = (kind == Unnamed::Described && !newcomer)
                        .then(|| last.named_subject(slot, paragraph))
                        .flatten()
                        .or(spouse);
                    // 一个玄衣男子靠坐在树下。…他眯起眼: the next 他 is the
                    // newcomer's, not the man named before.
                    if newcomer {
                        last.newcomer(slot);
                    }
                    (Some(named.map_or(Who::Unnamed(slot), Who::Character)), None)
                }
                Pattern::Pronoun(g) => match kin_after_pronoun(&text[end..]) {
                    // 他哥说, 她二妈说：, 少平他舅: his brother, her aunt (not he
                    // or she), someone unnamed of the kin's gender; one mention
                    // with a name right before.
                    Some((len, kin)) => {
                        end += len;
                        kin_end = end;
                        if let Some(last) = out.last()
                            && last.end == start
                            && matches!(last.who, Some(Who::Character(_)))
                        {
                            start = last.start;
                            out.pop();
                        }
                        (gender_slot(kin).map(Who::Unnamed), None)
                    }
                    None => {
                        let (who, o) = self.pronoun(g, out, last, paragraph, text, start);
                        other = o;
                        (who, who.is_none().then_some(g))
                    }
                },
                Pattern::Ignore => continue,
            };
            // 老石他们告辞后，…他: one of a group is not whom the next 他 stands for;
            // nor is the narrator of a book told in the first person, who is 我.
            if let Some(Who::Character(c)) = who
                && who != self.narrator()
                && let Some(slot) = gender_slot(self.genders[c])
                && !["他们", "她们", "他們", "她們"]
                    .iter()
                    .any(|g| text[end..].starts_with(g))
            {
                // Clause starts move forward with the mentions: no rescanning.
                if let Some((j, ch)) = marks(&text[scanned..start])
                    .rev()
                    .find(|(_, ch)| is_punct(*ch))
                {
                    clause = scanned + j + ch.len_utf8();
                }
                scanned = start;
                let subject = (opens_clause(&text[clause..start]) && !reports(&text[..clause]))
                    || seen_doing(&text[..start], &text[end..]);
                let role = matches!(
                    self.patterns[m.pattern],
                    Pattern::Role(_) | Pattern::Unnamed(..)
                );
                last.note(slot, c, paragraph, end, subject, role);
            }
            out.push(Mention {
                start,
                end,
                who,
                pronoun,
                other,
            });
        }
    }

    /// Whom 他 / 她 (`g`) at `text[start..]` stands for, and the other one
    /// of that gender named lately; `out` holds the paragraph's mentions
    /// before it.
    fn pronoun(
        &self,
        g: Gender,
        out: &[Mention],
        last: &Recency,
        paragraph: usize,
        text: &str,
        start: usize,
    ) -> (Option<Who>, Option<Who>) {
        let slot = gender_slot(g);
        // 润叶见大爷又问她这事: one of the other gender in between, in the same
        // clause, is who acts on her; she may be the clause's subject.
        let past_other = out.last().is_some_and(|m| {
            let of = match m.who {
                Some(Who::Character(k)) => gender_slot(self.genders[k]),
                Some(Who::Unnamed(s) | Who::Someone(s)) => Some(s),
                _ => None,
            };
            of.is_some() && of != slot && !text[m.end..start].chars().any(is_punct)
        });
        match slot.and_then(|s| last.resolve(s, paragraph, text, start, past_other)) {
            Some(c) => (
                Some(Who::Character(c)),
                slot.and_then(|s| last.other(s, c)).map(Who::Character),
            ),
            None => (None, None),
        }
    }

    /// The cast's word that opens `text`, looked for in its first
    /// [`MAX_INTRODUCED_BYTES`] only: a quote of a thousand 在下 stays linear.
    fn name_at_start(&self, text: &str) -> Option<Found> {
        let mut end = text.len().min(MAX_INTRODUCED_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.matcher.at_start(&text[..end])
    }

    /// A character who names themselves in a quote (“我是孙少平。”, “我……运生。”,
    /// “我叫侯生贵，…”, “我是禾润的高志远。”): the name right after 我是/我叫
    /// (and where one comes from) and before a pause.
    pub(super) fn self_named(&self, quote: &str) -> Option<Who> {
        const INTRODUCTIONS: &[&str] = &["是", "就是", "叫", "名叫", "……", "…", "，", "，是", "姓"];
        // What one of old calls oneself, then the name, at the start of
        // the quote (“在下李慕白，…”, 咱家高进忠).
        if let Some(named) = after_self_word(quote.trim_start_matches(['“', '「', '『', '"'])) {
            let named = named.strip_prefix(['是', '乃']).unwrap_or(named);
            if let Some(m) = self.name_at_start(named)
                && let Pattern::Name(c) = self.patterns[m.pattern]
                && named[m.end..]
                    .chars()
                    .next()
                    .is_none_or(|c| is_punct(c) || matches!(c, '”' | '」' | '』' | '…'))
            {
                return Some(Who::Character(c));
            }
        }
        for (at, _) in quote.match_indices('我') {
            // 我是 at the start of a sentence of the quote, not 说我是.
            let opens = quote[..at]
                .chars()
                .next_back()
                .is_none_or(|c| is_punct(c) || matches!(c, '“' | '「' | '『' | '…'));
            if !opens {
                continue;
            }
            let rest = &quote[at + '我'.len_utf8()..];
            for intro in INTRODUCTIONS {
                let Some(named) = rest.strip_prefix(intro) else {
                    continue;
                };
                // 我是禾润的高志远: where one comes from, then the name.
                let named = if intro.ends_with('是') {
                    super::discovery::after_affiliation(named)
                } else if intro.ends_with('姓') {
                    // 我姓钱，钱立新: the full name after the surname.
                    match super::discovery::after_surname(named) {
                        Some(named) => named,
                        None => continue,
                    }
                } else {
                    named
                };
                let Some(m) = self.name_at_start(named) else {
                    continue;
                };
                let (Pattern::Name(c) | Pattern::TitledName(c, _)) = self.patterns[m.pattern]
                else {
                    continue;
                };
                let paused = named[m.end..]
                    .chars()
                    .next()
                    .is_none_or(|c| is_punct(c) || matches!(c, '”' | '」' | '』' | '…'));
                if paused {
                    return Some(Who::Character(c));
                }
            }
        }
        None
    }

    /// The one who answers a question of who they are with their name and
    /// a pause (“你是……” / “顾屿。”, “请问您是？” / “苏曼。”, “陈嘉树，这儿
    /// 的医生。”): `asked` is the quote before, `quote` the answer. Not a
    /// vocative, though it looks like one.
    pub(super) fn named_in_answer(&self, asked: &str, quote: &str) -> Option<Who> {
        if !asks_who_you_are(asked) {
            return None;
        }
        let inner = quote.trim_start_matches(['“', '「', '『', '"']);
        let m = self.name_at_start(inner)?;
        let Pattern::Name(c) = self.patterns[m.pattern] else {
            return None;
        };
        inner[m.end..]
            .chars()
            .next()
            .is_none_or(|c| is_punct(c) || matches!(c, '”' | '」' | '』' | '…'))
            .then_some(Who::Character(c))
    }

    /// The characters a quote names, anywhere in it.
    pub(super) fn named_in(&self, quote: &str) -> Vec<Who> {
        self.matcher
            .find_iter(quote)
            .filter_map(|m| match self.patterns[m.pattern] {
                Pattern::Name(c) | Pattern::TitledName(c, _) => Some(Who::Character(c)),
                _ => None,
            })
            .collect()
    }

    /// A character addressed by name at the start of a quote (“少平，你…”),
    /// also with a form of address after the name (“少安哥，…”, “玉亭叔，…”).
    pub(super) fn vocative(&self, quote: &str) -> Option<Who> {
        let inner = quote.get(quote.chars().next()?.len_utf8()..)?;
        let Some(m) = self.matcher.at_start(inner) else {
            return self
                .given_name_vocative(inner)
                .or_else(|| self.asked_who(inner))
                .or_else(|| self.closing_vocative(inner))
                .or_else(|| self.narrator_called(inner));
        };
        let c = match self.patterns[m.pattern] {
            Pattern::Name(c) | Pattern::TitledName(c, _) => c,
            // “爸，…”: what the narrator calls their family.
            Pattern::ShortName(c) if self.is_narrators_kin(Who::Character(c)) => c,
            _ => return None,
        };
        let (rest, _) = after_address(&inner[m.end..]);
        pauses(rest).then_some(Who::Character(c))
    }

    /// The narrator of a book told in the first person, called by a name
    /// the cast does not hold (“陈哥，…”, “小陈，…”: one character and 哥, 姐
    /// or after 小, where the character is in no name or alias of the cast):
    /// the narration never names them, so the cast never finds their name.
    fn narrator_called(&self, inner: &str) -> Option<Who> {
        let narrator = self.narrator()?;
        let mut chars = inner.chars();
        let stem = match (chars.next(), chars.next(), chars.next()) {
            (Some('小'), Some(stem), Some(pause))
                if is_surname(stem) && is_address_pause(pause) =>
            {
                stem
            }
            _ => one_char_address(inner)?.0,
        };
        (!self.claimed.contains(&stem)).then_some(narrator)
    }

    /// A character called by name at the end of the quote, after a comma
    /// (“放那儿吧，赵姨。”, “走了，沈队！”): the one spoken to. Only after a
    /// comma: a name alone after a stop can be an answer (“谁来了？赵姨。”).
    /// Not after a clause that says who someone is (“这就是我们的设计师，沈知
    /// 意。”, “我是她的经纪人，唐蔓。”, “那个阿屿，江屿！”): the name stands beside it.
    fn closing_vocative(&self, inner: &str) -> Option<Who> {
        let body = inner
            .trim_end_matches(['”', '」', '』', '"'])
            .trim_end_matches(['。', '！', '？', '!', '?', '…', '～', '~']);
        let (before, last) = body.rsplit_once(['，', ','])?;
        if last.chars().nth(MAX_CALLED_CHARS).is_some() {
            return None;
        }
        let clause = before
            .rsplit_once(|c: char| is_punct(c))
            .map_or(before, |(_, c)| c);
        let says_who = ["那个", "这个", "那位", "这位", "那個", "這個"]
            .iter()
            .any(|d| clause.contains(d))
            || clause
                .split_once('是')
                .is_some_and(|(_, named)| named.chars().count() >= 2);
        if says_who {
            return None;
        }
        self.called(last)
    }

    /// A quote that opens by calling a character by the given name
    /// (“知夏姐，…”, “景川，…”, “蔓姐！”): a given name of one character,
    /// a form of address (required after a one-character given name), and
    /// a pause.
    fn given_name_vocative(&self, inner: &str) -> Option<Who> {
        // 老 or 小 before the surname of one character only (“老顾。”, “小吴，…”),
        // not a word (老师, 小时), nor asked about (“小方？开车的那个？”).
        if let Some(rest) = inner.strip_prefix(['老', '小'])
            && let Some(s) = rest.chars().next()
            && let Some(&c) = self.surnames.get(&s)
            && pauses(&rest[s.len_utf8()..])
            && !rest[s.len_utf8()..].starts_with(['？', '?'])
            && !crate::frontend::dictionary::Dictionary::get()
                .phrase_either(&inner[..'老'.len_utf8() + s.len_utf8()])
                .is_some_and(|p| p.common)
        {
            return Some(Who::Character(c));
        }
        // 阿 before a given name is a form of address too (“阿屿，…”).
        if let Some(name) = inner.strip_prefix('阿')
            && let Some((c, end)) = name
                .char_indices()
                .map(|(j, c)| j + c.len_utf8())
                .take(MAX_GIVEN_CHARS)
                .find_map(|end| self.given_names.get(&name[..end]).map(|&c| (c, end)))
            && pauses(&name[end..])
        {
            return Some(Who::Character(c));
        }
        let mut ends = inner.char_indices().map(|(j, c)| j + c.len_utf8());
        for end in ends.by_ref().take(MAX_GIVEN_CHARS) {
            let Some(&c) = self.given_names.get(&inner[..end]) else {
                continue;
            };
            let (rest, addressed) = after_address(&inner[end..]);
            let one_char = inner[..end].chars().count() == 1;
            if pauses(rest) && (addressed || !one_char) {
                return Some(Who::Character(c));
            }
        }
        None
    }

    /// The character a short text names and nothing more (蔓姐, 苏晴, 陆总):
    /// a name, an alias or a title of the cast, or a given name with a form
    /// of address.
    pub(super) fn called(&self, text: &str) -> Option<Who> {
        if let Some(m) = self.matcher.at_start(text).filter(|m| m.end == text.len()) {
            match self.patterns[m.pattern] {
                Pattern::Name(c) | Pattern::TitledName(c, _) => return Some(Who::Character(c)),
                // 妈: what the narrator calls their family.
                Pattern::ShortName(c) if self.is_narrators_kin(Who::Character(c)) => {
                    return Some(Who::Character(c));
                }
                _ => {}
            }
        }
        // As a vocative it would be, alone: 蔓姐 → “蔓姐，”.
        (text.chars().count() <= MAX_CALLED_CHARS)
            .then(|| self.given_name_vocative(&format!("{text}，")))
            .flatten()
    }

    /// A character the quote asks about being (“你就是沈知意？”, “您是王老师吧？”):
    /// the one spoken to.
    fn asked_who(&self, inner: &str) -> Option<Who> {
        // One pass for 你/您, then the verb after it.
        let asks = inner.match_indices(['你', '您']).filter_map(|(at, you)| {
            let rest = &inner[at + you.len()..];
            ASKING_WHO
                .iter()
                .find(|a| rest.starts_with(**a))
                .map(|a| at + you.len() + a.len())
        });
        asks.take(MAX_ASKED).find_map(|at| {
            // A name right there (at most 4 characters and a title).
            let mut window = (at + MAX_ASKED_BYTES).min(inner.len());
            while !inner.is_char_boundary(window) {
                window -= 1;
            }
            let m = self.matcher.at_start(&inner[at..window])?;
            let (Pattern::Name(c) | Pattern::TitledName(c, _)) = self.patterns[m.pattern] else {
                return None;
            };
            let rest = &inner[at + m.end..];
            ["？", "?", "吧", "吗", "嗎", "啊", "呀"]
                .iter()
                .any(|e| rest.starts_with(e))
                .then_some(Who::Character(c))
        })
    }
}

/// `rest` after a form of address it opens with (哥 of 少安哥), and whether
/// it opened with one.
fn after_address(rest: &str) -> (&str, bool) {
    match ADDRESS_FORMS.iter().find_map(|f| rest.strip_prefix(f)) {
        Some(after) => (after, true),
        None => (rest, false),
    }
}

/// A vocative's pause: `rest` opens with a comma, a stop or an exclamation.
pub(super) fn pauses(rest: &str) -> bool {
    rest.chars()
        .next()
        .is_some_and(|c| matches!(c, '，' | ',' | '！' | '!' | '、' | '…' | '？' | '?' | '。'))
}

/// Longest text that can name a caller, in characters.
const MAX_CALLED_CHARS: usize = 6;

/// Longest given name looked for in a vocative, in characters.
const MAX_GIVEN_CHARS: usize = 2;

/// Surnames that one character of the cast only bears (a name of two or
/// three characters that opens with a surname no other name opens with),
/// with that character, in the cast's order.
pub(super) fn unique_surnames(cast: &Cast) -> Vec<(char, usize)> {
    let surname = |name: &str| {
        let mut chars = name.chars();
        let first = chars.next()?;
        let n = 1 + chars.count();
        ((2..=3).contains(&n) && is_surname(first) && !is_non_name_char(first)).then_some(first)
    };
    cast.characters
        .iter()
        .enumerate()
        .filter_map(|(i, c)| surname(&c.name).map(|s| (s, i)))
        .filter(|&(s, i)| {
            !cast
                .characters
                .iter()
                .enumerate()
                .any(|(j, o)| j != i && o.name.starts_with(s))
        })
        .collect()
}

/// The given names of the cast's characters (the name but its surname: 知夏
/// of 林知夏, 蔓 of 唐蔓, 景珩 of 萧景珩): only those that one character
/// bears, and none that is a name or alias of the cast already.
pub(super) fn given_names(cast: &Cast) -> rustc_hash::FxHashMap<String, usize> {
    let mut out: rustc_hash::FxHashMap<String, usize> = rustc_hash::FxHashMap::default();
    let mut shared: std::collections::HashSet<String> = std::collections::HashSet::new();
    let taken: std::collections::HashSet<&str> = cast
        .characters
        .iter()
        .flat_map(|c| std::iter::once(c.name.as_str()).chain(c.aliases.iter().map(String::as_str)))
        .collect();
    for (i, c) in cast.characters.iter().enumerate() {
        let chars: Vec<char> = c.name.chars().collect();
        let given: String = match chars.len() {
            2 | 3
                if is_surname(chars[0])
                    && chars.iter().all(|c| crate::text::decode::is_han(*c)) =>
            {
                chars[1..].iter().collect()
            }
            _ => continue,
        };
        if taken.contains(given.as_str()) || shared.contains(&given) {
            continue;
        }
        if out.insert(given.clone(), i).is_some_and(|j| j != i) {
            out.remove(&given);
            shared.insert(given);
        }
    }
    out
}

/// What follows 你/您 when a quote asks the one spoken to whether they are
/// someone (你就是…？).
const ASKING_WHO: &[&str] = &["就是", "是", "叫"];

/// How many of those a quote is looked at for (bounded on any input).
const MAX_ASKED: usize = 4;

/// How far after 你是 a name is looked for (a name of 4 characters and a
/// title of 2).
const MAX_ASKED_BYTES: usize = 6 * 3;

/// The latest characters of each gender, for 他/她.
#[derive(Debug, Default)]
struct Recency {
    /// Per gender: the latest mention (character, paragraph, end offset),
    /// the latest subject mention, and the latest other character.
    slots: [Slot; 2],
    /// The character last named with each office title (曹书记 for 书记).
    titled: Vec<(&'static str, usize)>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Slot {
    latest: Option<(usize, usize, usize)>,
    subject: Option<(usize, usize, usize)>,
    previous: Option<usize>,
    /// The subject before the latest subject, when another character.
    previous_subject: Option<usize>,
    /// The latest subject named by a name, not a role noun: (character, paragraph).
    named: Option<(usize, usize)>,
}

impl Recency {
    fn note(
        &mut self,
        slot: usize,
        c: usize,
        paragraph: usize,
        end: usize,
        subject: bool,
        role: bool,
    ) {
        let s = &mut self.slots[slot];
        if subject && !role {
            s.named = Some((c, paragraph));
        }
        if let Some((old, _, _)) = s.latest
            && old != c
        {
            s.previous = Some(old);
        }
        s.latest = Some((c, paragraph, end));
        if subject {
            if let Some((old, _, _)) = s.subject
                && old != c
            {
                s.previous_subject = Some(old);
            }
            s.subject = Some((c, paragraph, end));
        }
    }

    /// Someone of the slot's gender not named is brought in: a pronoun of
    /// that gender stands for nobody named until one is named again (the
    /// one before stays `previous`).
    fn newcomer(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        let before = s.latest.map(|(c, _, _)| c).or(s.previous);
        *s = Slot {
            previous: before,
            ..Slot::default()
        };
    }

    /// The latest character of a gender named as a subject in `paragraph`.
    fn named_subject(&self, slot: usize, paragraph: usize) -> Option<usize> {
        self.slots[slot]
            .named
            .filter(|(_, p)| *p == paragraph)
            .map(|(c, _)| c)
    }

    /// The latest character of a slot, when named no more than `back`
    /// paragraphs before `paragraph`.
    fn latest_within(&self, slot: usize, paragraph: usize, back: usize) -> Option<usize> {
        self.slots[slot]
            .latest
            .filter(|(_, p, _)| paragraph - p <= back)
            .map(|(c, _, _)| c)
    }

    /// The latest character of a slot other than `c`.
    fn other(&self, slot: usize, c: usize) -> Option<usize> {
        let s = self.slots[slot];
        s.previous
            .filter(|p| *p != c)
            .or(s.latest.map(|l| l.0).filter(|l| *l != c))
    }

    /// The character a pronoun at `text[at..]` stands for: the latest subject
    /// of its gender (else the latest mention), unless that one is the
    /// subject of the same clause (晓晨问他: 他 is someone else).
    fn resolve(
        &self,
        slot: usize,
        paragraph: usize,
        text: &str,
        at: usize,
        past_other: bool,
    ) -> Option<usize> {
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
        if !same_clause(first) || past_other {
            return Some(first.0);
        }
        match s.latest {
            Some(l) if l.0 != first.0 && !same_clause(l) => Some(l.0),
            // 林知夏记着唐蔓的话。/ 沈若溪在她对面坐下: the one who acted
            // before, not one only mentioned.
            _ => s
                .previous_subject
                .filter(|p| *p != first.0)
                .or(s.previous.filter(|p| *p != first.0))
                .or(Some(first.0)),
        }
    }
}

/// Words for a husband or wife: with no one's before them (妻子说：), the
/// spouse in the scene.
const SPOUSES: &[&str] = &["妻子", "老婆", "媳妇", "媳婦", "丈夫"];

/// How many paragraphs back the spouse a bare 妻子 stands for was named.
const SPOUSE_PARAGRAPHS: usize = 2;

/// Kin words right after 他 / 她 (他哥, 她二妈, 他舅妈), longest first, with
/// their gender; not 爷 or 奶 alone (她奶茶), nor the words kept among the
/// cast matcher's people (他爸, 她妈, 他爷爷, 她奶奶, 他叔叔, 他舅舅).
const KIN_AFTER_PRONOUN: &[(&str, Gender)] = &[
    ("二爸", Gender::Male),
    ("大爸", Gender::Male),
    ("三爸", Gender::Male),
    ("二妈", Gender::Female),
    ("二媽", Gender::Female),
    ("大妈", Gender::Female),
    ("大媽", Gender::Female),
    ("三妈", Gender::Female),
    ("三媽", Gender::Female),
    ("姐夫", Gender::Male),
    ("妹夫", Gender::Male),
    ("姨夫", Gender::Male),
    ("姨父", Gender::Male),
    ("姑夫", Gender::Male),
    ("姑父", Gender::Male),
    ("舅妈", Gender::Female),
    ("舅媽", Gender::Female),
    ("舅母", Gender::Female),
    ("伯母", Gender::Female),
    ("弟媳", Gender::Female),
    ("弟妹", Gender::Female),
    ("大哥", Gender::Male),
    ("二哥", Gender::Male),
    ("大姐", Gender::Female),
    ("二姐", Gender::Female),
    ("哥", Gender::Male),
    ("弟", Gender::Male),
    ("舅", Gender::Male),
    ("叔", Gender::Male),
    ("伯", Gender::Male),
    ("姐", Gender::Female),
    ("妹", Gender::Female),
    ("姨", Gender::Female),
    ("姑", Gender::Female),
    ("嫂", Gender::Female),
    ("婶", Gender::Female),
    ("嬸", Gender::Female),
];

/// The first characters of [`KIN_AFTER_PRONOUN`]: one test before the table
/// for each of the book's many 他 and 她.
const KIN_FIRST_CHARS: &str = "二大三姐妹姨姑舅伯弟哥叔嫂婶嬸";

/// The kin word opening `rest` (the text right after 他 / 她), as its length
/// in bytes and its gender.
fn kin_after_pronoun(rest: &str) -> Option<(usize, Gender)> {
    let first = rest.chars().next()?;
    // Not 他姑且, 他姑息 (adverb, verb).
    if !KIN_FIRST_CHARS.contains(first) || ["姑且", "姑息"].iter().any(|w| rest.starts_with(w))
    {
        return None;
    }
    KIN_AFTER_PRONOUN
        .iter()
        .find(|(w, _)| rest.starts_with(w))
        .map(|(w, g)| (w.len(), *g))
}

/// True when a mention between `before` and `after` is seen doing something
/// (看见田福堂正站在路边): the subject of what is seen, and the one the
/// next 他/她 stands for.
fn seen_doing(before: &str, after: &str) -> bool {
    [
        "看见", "看見", "看到", "发现", "發現", "望见", "望見", "瞧见", "瞧見",
    ]
    .iter()
    .any(|v| before.ends_with(v))
        && [
            "正", "在", "站", "坐", "蹲", "躺", "已经", "已經", "还在", "還在",
        ]
        .iter()
        .any(|a| after.starts_with(a))
}

/// True when `before` (the text before a clause) ends in a verb of saying
/// or knowing and a comma: the clause is what was said or known (田福堂听金
/// 俊山说，金俊武同意了: 金俊武 is no subject of the story).
pub(super) fn reports(before: &str) -> bool {
    let Some(rest) = before.strip_suffix('，') else {
        return false;
    };
    [
        "说", "說", "听说", "聽說", "知道", "觉得", "覺得", "认为", "認為", "发现", "發現",
    ]
    .iter()
    .any(|v| rest.ends_with(v))
}

pub(super) fn gender_slot(g: Gender) -> Option<usize> {
    match g {
        Gender::Male => Some(0),
        Gender::Female => Some(1),
        Gender::Unknown => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_characters_cover_every_kin_word() {
        for (word, _) in KIN_AFTER_PRONOUN {
            let first = word.chars().next().unwrap();
            assert!(KIN_FIRST_CHARS.contains(first), "{word}");
        }
    }
}
