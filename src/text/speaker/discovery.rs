//! Characters of a book without a cast file: recurring strings in speaker
//! positions, grown into full names, with given names as aliases.

use std::collections::HashMap;

use super::ParagraphView;
use super::clause::is_punct;
use super::gender::{GenderEvidence, gender_hint, name_gender};
use super::matcher::WordMatcher;
use super::names::{
    COMPOUND_SURNAMES, OFFICE_TITLES, RANK_NUMERALS, ROLE_NOUNS, UNNAMED_PEOPLE, Unnamed,
    has_surname, is_house_title, is_non_name_char, is_non_name_inner, is_non_name_tail,
    is_not_name, is_palace_title, is_particle, is_role_word, is_surname,
};
use super::rules::KIN_BEFORE_NAME;
use super::words::{
    CROWDS, addressed_as, connective_at_start, has_speech_verb, is_address_pause, one_char_address,
    says_of_me, self_reference, starts_with_bare_speech_verb, starts_with_speech_verb,
};
use crate::text::cast::{Character, Gender};
use crate::text::decode::is_han;
use crate::text::quote::NICKNAME_MAX_CHARS;
use crate::text::quote::SegmentKind;
use crate::text::reflow::is_numeral;

/// A discovered character with the number of speaker positions it holds
/// and what the book says about its gender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    pub character: Character,
    pub count: usize,
    pub evidence: GenderEvidence,
}

impl Discovered {
    /// What the book says of this character, in a line: the evidence for
    /// its gender, or that it is the narrator of a book in the first person.
    pub fn note(&self) -> String {
        if self.character.name == NARRATOR {
            let e = &self.evidence;
            match e.guess() {
                g if g.gender == Gender::Unknown => format!(
                    "the narrator: the book is told in the first person; without a gender \
                     here, these lines are read in the narrator's voice (what the narrator \
                     says of themselves and how others address them: {} female / {} male)",
                    e.female_titles, e.male_titles
                ),
                g => format!(
                    "the narrator: the book is told in the first person; gender {}, \
                     confidence {:.2}: what the narrator says of themselves and how others \
                     address them, {} female / {} male; the names others call them by, {}",
                    g.gender.as_str(),
                    g.confidence,
                    e.female_titles,
                    e.male_titles,
                    match e.name {
                        Gender::Unknown => "none",
                        n => n.as_str(),
                    }
                ),
            }
        } else {
            self.evidence.note()
        }
    }
}

/// Finds the recurring 2–4 character strings that open clauses in speaker
/// positions (before a colon or speech verb, right after a quote) and makes
/// a cast of them, most frequent first, with genders guessed from the
/// pronouns that follow them and from gendered characters.
pub fn discover<'a>(chapters: &[Vec<ParagraphView<'a>>]) -> Vec<Discovered> {
    discover_told(chapters, first_person_tags(chapters))
}

/// [`discover`] for a book told as `first_person` says (see
/// [`first_person_tags`]), worked out once by the caller.
pub fn discover_told<'a>(
    chapters: &[Vec<ParagraphView<'a>>],
    first_person: Option<usize>,
) -> Vec<Discovered> {
    // (times in a speaker position, times right before a verb or the clause end)
    let mut counts: rustc_hash::FxHashMap<&str, (usize, usize)> = rustc_hash::FxHashMap::default();
    // How often each 2–3 character string opens a quote before a comma (“少平，…”).
    let mut vocatives: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
    // Names characters give themselves (“我叫侯生贵，…”).
    let mut introduced: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
    // The same for nicknames in quote marks (“萝卜花”说).
    let mut nicknames: rustc_hash::FxHashMap<&str, (usize, usize)> =
        rustc_hash::FxHashMap::default();
    // The same for English names (Lisa笑道).
    let mut latin: rustc_hash::FxHashMap<&str, (usize, usize)> = rustc_hash::FxHashMap::default();
    let mut add_clause = |text: &'a str, start: usize, end: usize| {
        let clause = &text[start..end];
        let mut rest = clause.trim_start();
        for _ in 0..2 {
            match connective_at_start(rest) {
                Some(c) => rest = &rest[c.len()..],
                None => break,
            }
        }
        // “萝卜花”说: a nickname in quote marks, whole.
        if let Some(inner) = rest.strip_prefix(['“', '「', '『'])
            && let Some(close) = inner.find(['”', '」', '』'])
            && is_nickname(&inner[..close])
        {
            let after = &inner[close..];
            let after = after
                .get(after.chars().next().map_or(0, char::len_utf8)..)
                .unwrap_or("");
            let entry = nicknames.entry(&inner[..close]).or_default();
            entry.0 += 1;
            if after.is_empty() || starts_with_speech_verb(after) {
                entry.1 += 1;
            }
            return;
        }
        // Lisa笑道: an English name, whole.
        if let Some(name) = latin_name(rest) {
            let after = rest[name.len()..].trim_start();
            let entry = latin.entry(name).or_default();
            entry.0 += 1;
            if after.is_empty() || starts_with_speech_verb(after) {
                entry.1 += 1;
            }
            return;
        }
        let mut ends = Vec::with_capacity(4);
        for (n, (j, c)) in rest.char_indices().enumerate() {
            if n >= 4 || !is_han(c) {
                break;
            }
            ends.push(j + c.len_utf8());
        }
        for &e in ends.iter().skip(1) {
            let after = &rest[e..];
            // 挑战似地问: a manner, not someone.
            if MANNER_AFTER.iter().any(|m| after.starts_with(m)) {
                continue;
            }
            let entry = counts.entry(&rest[..e]).or_default();
            entry.0 += 1;
            // Right before a speech verb or the end of the clause (毛仲說, 毛仲：).
            if after.is_empty() || starts_with_speech_verb(after) {
                entry.1 += 1;
            }
        }
    };
    // How often each 2–3 character string opens a clause of narration anywhere
    // (高朗举起手, 田福堂知道): a name seen once in a speaker position is
    // still a name when it is often the subject.
    let mut subjects: rustc_hash::FxHashMap<&'a str, usize> = rustc_hash::FxHashMap::default();
    let mut add_subject = |text: &'a str, start: usize, end: usize| {
        let rest = text[start..end].trim_start();
        // Only what may open a name (most clauses open with a word that cannot).
        if rest
            .chars()
            .next()
            .is_none_or(|c| !is_han(c) || (is_non_name_char(c) && !is_surname(c)))
        {
            return;
        }
        for (j, c) in rest.char_indices().skip(1).take(2) {
            if !is_han(c) {
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
                    // “少平，你…”: who the quote calls by name.
                    let quote = &p.text[s.start..s.end];
                    let inner = quote
                        .char_indices()
                        .nth(1)
                        .map_or("", |(at, _)| &quote[at..]);
                    if let Some(name) = opening_call(inner) {
                        *vocatives.entry(name).or_default() += 1;
                    }
                    for name in self_introductions(quote) {
                        *introduced.entry(name).or_default() += 1;
                    }
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
                    // “萝卜花”说: the closing mark of a nickname ends no clause.
                    if !is_punct(c) || closes_nickname(&p.text[clause_from..at], c) {
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
    let mut selected = select_names(&counts, &subjects);
    selected.extend(full_names_missed(&counts, &subjects, &selected, chapters));
    let mut names = by_usage(selected, &subjects, chapters);
    // A nickname the book puts in quote marks is a name when it stands right
    // before a speech verb at least once and opens speaker clauses twice.
    // (In a fixed order: the cast must come out the same on every run.)
    let mut nicknames: Vec<(&str, (usize, usize))> = nicknames.into_iter().collect();
    nicknames.sort();
    for (name, (n, direct)) in nicknames {
        if n >= MIN_NICKNAME_CLAUSES
            && direct > 0
            && !is_not_name(name)
            && !CROWDS.contains(&name)
            && !has_speech_verb(name)
            && !names.iter().any(|(other, _)| other == name)
        {
            names.push((name.to_owned(), n));
        }
    }
    // An English name (Lisa, Kevin) likewise; never an acronym (CEO说).
    let mut latin: Vec<(&str, (usize, usize))> = latin.into_iter().collect();
    latin.sort();
    for (name, (n, direct)) in latin {
        if n >= MIN_NICKNAME_CLAUSES && direct > 0 {
            names.push((name.to_owned(), n));
        }
    }
    // Called by name at least twice and the subject of narration at least
    // twice, outside the dictionary: a name, though never in a speaker position.
    let dictionary = crate::frontend::dictionary::Dictionary::get();
    let mut called: Vec<(&str, usize)> = vocatives
        .into_iter()
        .filter(|(name, n)| {
            *n >= MIN_VOCATIVES
                && subjects.get(name).copied().unwrap_or(0) >= MIN_VOCATIVES
                && !names.iter().any(|(other, _)| other.contains(name))
                && called_as_name(name, dictionary)
        })
        .collect();
    called.sort();
    names.extend(called.into_iter().map(|(name, n)| (name.to_owned(), n)));
    // A book told in the first person tags the others with 她 and 他 more
    // than by name (她一点没犹豫：): there a surname and a given name outside
    // the dictionary that open the narration's clauses at least
    // [`MIN_FIRST_PERSON_SUBJECTS`] times make a name (乔宇背着相机来了), the
    // longest such string (not 陈嘉 of 陈嘉宁). So does a book whose speech
    // is read without quote marks, whose tags hold fewer of its people than
    // its narration does (《金瓶梅》's 韓道國, 吳大妗, 馮金寶 …).
    if first_person.is_some() || speech_read_unmarked(chapters) {
        let often = |s: &str| subjects.get(s).copied().unwrap_or(0) >= MIN_FIRST_PERSON_SUBJECTS;
        let mut subject_names: Vec<(&str, usize)> = subjects
            .iter()
            .filter(|&(name, &n)| {
                n >= MIN_FIRST_PERSON_SUBJECTS
                    && has_surname(name)
                    && surname_and_title(name).is_none()
                    && dictionary.phrase_either(name).is_none()
                    && !ROLE_NOUNS.contains(name)
                    && !KIN_BEFORE_NAME.contains(name)
                    && !is_not_name(name)
                    && vocative_name(name)
                    && !subjects.keys().any(|longer| {
                        longer.len() > name.len() && longer.starts_with(*name) && often(longer)
                    })
                    && !names
                        .iter()
                        .any(|(other, _)| other.contains(*name) || name.contains(other.as_str()))
            })
            .map(|(&name, &n)| (name, n))
            .collect();
        subject_names.sort();
        names.extend(
            subject_names
                .into_iter()
                .map(|(name, n)| (name.to_owned(), n)),
        );
    }
    // One who introduces themselves with a surname and a given name
    // outside the dictionary (我叫侯生贵，) …
    let mut introduced: Vec<(&str, usize)> = introduced
        .into_iter()
        .filter(|(name, _)| {
            has_surname(name)
                && surname_and_title(name).is_none()
                && dictionary.phrase_either(name).is_none()
                && !ROLE_NOUNS.contains(name)
                && !is_not_name(name)
                && !names
                    .iter()
                    .any(|(other, _)| other.contains(name) || name.contains(other.as_str()))
        })
        .collect();
    introduced.sort();
    // … and is named again (等我叫时再来 is said once).
    let written = count_written(chapters, introduced.iter().map(|(name, _)| *name));
    names.extend(
        introduced
            .into_iter()
            .zip(written)
            .filter(|(_, written)| *written >= 2)
            .map(|((name, n), _)| (name.to_owned(), n)),
    );
    // 妻子说, 父亲问: kin is always someone's, never a character of its
    // own (the narrator's kin in a book told in the first person are added
    // apart, see [`add_narrator`]); but for the words that also call an old
    // woman or man by respect (那妈妈, 张奶奶, 李叔叔), who may be one.
    names.retain(|(name, _)| {
        KIN_AS_RESPECT.contains(&name.as_str())
            || !UNNAMED_PEOPLE
                .iter()
                .any(|(w, _, kind)| *kind == Unnamed::Kin && w == name)
    });
    let mut found = into_cast(names);
    fold_titles(&mut found, chapters);
    add_doubled_names(&mut found, chapters, &subjects);
    add_full_names_of_titled(&mut found, &subjects, dictionary);
    found
}

/// Kin words that also call someone of no kin by respect (西游记's 那妈妈 is
/// an old woman of the house): these may be a character of their own.
const KIN_AS_RESPECT: &[&str] = &[
    "妈妈", "媽媽", "奶奶", "爷爷", "爺爺", "叔叔", "婶子", "嬸子", "嫂子",
];

/// How often the narration must open a clause with the full name of one
/// called 老韩 or 小陆 for it to be theirs.
const MIN_FULL_OF_TITLED: usize = 2;

/// 老韩, whose full name the narration opens a clause with now and then
/// (韩建军把烟头按灭…), is 韩建军 too: a surname and two characters that
/// stand in names, outside the dictionary, opening clauses at least
/// [`MIN_FULL_OF_TITLED`] times, the one such name of that surname, when no
/// other character found bears it.
fn add_full_names_of_titled(
    found: &mut [Discovered],
    subjects: &rustc_hash::FxHashMap<&str, usize>,
    dictionary: &crate::frontend::dictionary::Dictionary,
) {
    for k in 0..found.len() {
        let mut chars = found[k].character.name.chars();
        let (Some('老' | '小'), Some(surname), None) = (chars.next(), chars.next(), chars.next())
        else {
            continue;
        };
        if !is_surname(surname)
            || found.iter().enumerate().any(|(j, d)| {
                j != k
                    && std::iter::once(&d.character.name)
                        .chain(&d.character.aliases)
                        .any(|n| n.contains(surname))
            })
        {
            continue;
        }
        let mut full = subjects.iter().filter(|&(name, &n)| {
            let mut c = name.chars();
            n >= MIN_FULL_OF_TITLED
                && c.next() == Some(surname)
                && c.by_ref()
                    .take(2)
                    .filter(|&c| {
                        is_han(c)
                            && !is_non_name_char(c)
                            && !is_non_name_inner(c)
                            && !is_particle(c)
                    })
                    .count()
                    == 2
                && c.next().is_none()
                && dictionary.phrase_either(name).is_none()
                && !is_not_name(name)
                && !has_speech_verb(name)
        });
        if let (Some((name, _)), None) = (full.next(), full.next()) {
            tracing::debug!(name = %name, of = %found[k].character.name, "a full name of one called by title");
            found[k].character.aliases.push((*name).to_owned());
        }
    }
}

/// The name the narrator of a book told in the first person goes by: 我.
pub const NARRATOR: &str = "我";

/// How many speech tags 我 must open in the narration for the book to be
/// told in the first person.
const MIN_NARRATOR_TAGS: usize = 3;

/// A book told in the first person (我说：“…”, “…”我问。, 我笑道) has its
/// narrator among its characters, as [`NARRATOR`], when 我 opens a clause of
/// the narration right before a speech verb at least [`MIN_NARRATOR_TAGS`]
/// times and its narration writes 我 at least half as often as 他 and 她
/// (a first-person book about 1.6 times as often, 《西游记》's narration,
/// where speech without quote marks says 我, 0.04 times): `first_person`,
/// as [`first_person_tags`] says. The pronouns near 我 are other people's;
/// the narrator's gender comes from what the book says of them
/// ([`narrator_cues`], addresses no one else's name holds, the names others
/// call them by), and their family joins them ([`add_narrators_kin`]).
pub fn add_narrator(
    found: &mut Vec<Discovered>,
    chapters: &[Vec<ParagraphView<'_>>],
    first_person: Option<usize>,
) {
    let Some(tags) = first_person else {
        return;
    };
    if found.iter().any(|d| d.character.name == NARRATOR) || speech_read_unmarked(chapters) {
        return;
    }
    let [mut female, mut male] = narrator_cues(chapters);
    let [f, m] = unclaimed_addresses(found, chapters);
    // Enough to say a gender only when they agree.
    if f >= 2 && f >= 3 * m {
        female += f;
    } else if m >= 2 && m >= 3 * f {
        male += m;
    }
    let aliases = narrator_names(found, chapters);
    let [f, m] = named_addresses(&aliases, chapters);
    female += f;
    male += m;
    // What the names others call the narrator by suggest (知夏, 嘉树): weak,
    // and only when they agree.
    let mut name = Gender::Unknown;
    for alias in &aliases {
        match (name_gender(alias, true), name) {
            ((g, false), Gender::Unknown) if g != Gender::Unknown => name = g,
            ((g, false), n) if g != Gender::Unknown && g != n => {
                name = Gender::Unknown;
                break;
            }
            _ => {}
        }
    }
    let evidence = GenderEvidence {
        female_titles: female,
        male_titles: male,
        name,
        ..GenderEvidence::default()
    };
    let at = found.partition_point(|d| d.count >= tags);
    found.insert(
        at,
        Discovered {
            character: Character {
                name: NARRATOR.to_owned(),
                aliases,
                gender: evidence.guess().gender,
                voice: None,
            },
            count: tags,
            evidence,
        },
    );
    add_narrators_kin(found, chapters);
}

/// Was most of the book's speech read without quote marks
/// ([`crate::text::quote::scan_unmarked`])? Then its narration still holds
/// the speech that reading did not take (the sentences after a speaker's
/// first ones), 我 and all: that 我 is no narrator (《金瓶梅》 had one with
/// 72 lines), though its names are found as a first-person book's are.
fn speech_read_unmarked(chapters: &[Vec<ParagraphView<'_>>]) -> bool {
    let (mut marked, mut unmarked) = (0usize, 0usize);
    for p in chapters.iter().flatten().filter(|p| !p.skipped) {
        for s in p.spans.iter().filter(|s| s.kind == SegmentKind::Dialogue) {
            if s.open.is_some() {
                marked += 1;
            } else {
                unmarked += 1;
            }
        }
    }
    unmarked > marked
}

/// Of a book told in the first person (see [`add_narrator`]), how many
/// speech tags 我 opens in its narration; `None` for a book told otherwise.
pub fn first_person_tags(chapters: &[Vec<ParagraphView<'_>>]) -> Option<usize> {
    let (mut tags, mut me, mut others) = (0, 0, 0);
    let plural = |rest: &str| rest.starts_with(['们', '們']);
    for p in chapters.iter().flatten().filter(|p| !p.skipped) {
        for s in p.spans.iter().filter(|s| s.kind == SegmentKind::Narration) {
            let narration = s.text(p.text);
            others += narration
                .match_indices(['他', '她'])
                .filter(|(at, w)| !plural(&narration[at + w.len()..]))
                .count();
            for (at, _) in narration.match_indices(NARRATOR) {
                let rest = &narration[at + NARRATOR.len()..];
                if plural(rest) {
                    continue;
                }
                me += 1;
                let opens = narration[..at]
                    .chars()
                    .next_back()
                    .is_none_or(|c| is_punct(c) || matches!(c, '”' | '」' | '』'));
                if opens && starts_with_speech_verb(rest) {
                    tags += 1;
                }
            }
        }
    }
    (tags >= MIN_NARRATOR_TAGS && me * 2 >= others).then_some(tags)
}

/// Quotes that open by calling the narrator by one of `names` and 哥 or 姐
/// (“夏夏姐，…”, “嘉树哥！”), as (female, male) counts.
fn named_addresses(names: &[String], chapters: &[Vec<ParagraphView<'_>>]) -> [usize; 2] {
    let mut counts = [0usize; 2];
    if names.is_empty() {
        return counts;
    }
    for p in chapters.iter().flatten().filter(|p| !p.skipped) {
        for s in p.spans.iter().filter(|s| s.kind == SegmentKind::Dialogue) {
            let inner = s.text(p.text).trim_start_matches(['“', '「', '『', '"']);
            for name in names {
                let Some(rest) = inner.strip_prefix(name.as_str()) else {
                    continue;
                };
                let mut chars = rest.chars();
                let slot = match chars.next() {
                    Some('哥') => 1,
                    Some('姐') => 0,
                    _ => continue,
                };
                if chars.next().is_some_and(is_address_pause) {
                    counts[slot] += 1;
                }
            }
        }
    }
    counts
}

/// The names a book told in the first person calls its narrator by (“嘉树，
/// 睡了没有？”): a name of two or three characters that opens quotes before a
/// pause at least [`MIN_VOCATIVES`] times and that the narration, which says
/// 我, never writes; none of another character's names or surnames, nor a word.
fn narrator_names(found: &[Discovered], chapters: &[Vec<ParagraphView<'_>>]) -> Vec<String> {
    let mut called: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
    let mut narration: Vec<&str> = Vec::new();
    for p in chapters.iter().flatten().filter(|p| !p.skipped) {
        for s in p.spans {
            let text = s.text(p.text);
            if s.kind == SegmentKind::Narration {
                narration.push(text);
                continue;
            }
            if let Some(name) = opening_call(text.trim_start_matches(['“', '「', '『', '"'])) {
                *called.entry(name).or_default() += 1;
            }
        }
    }
    let dictionary = crate::frontend::dictionary::Dictionary::get();
    let others: Vec<&str> = found
        .iter()
        .flat_map(|d| std::iter::once(&d.character.name).chain(&d.character.aliases))
        .map(String::as_str)
        .collect();
    let mut names: Vec<String> = called
        .into_iter()
        .filter(|(name, n)| {
            *n >= MIN_VOCATIVES
                && called_as_name(name, dictionary)
                && !others
                    .iter()
                    .any(|o| o.contains(*name) || name.contains(*o))
                && !narration.iter().any(|t| t.contains(*name))
                // 赵姨 beside 赵奶奶: the surname of another.
                && !name.chars().next().is_some_and(|c| {
                    is_surname(c) && others.iter().any(|o| o.starts_with(c))
                })
        })
        .map(|(name, _)| name.to_owned())
        .collect();
    names.sort();
    names
}

/// The narrator's family as the narration of a book told in the first
/// person calls them (我妈, 我爸, 我姐), with what the narrator calls them
/// to their face (妈, 爸, 姐) as an alias and what the word says as their
/// gender, and what may not follow the word (我姐夫 is a man, 我哥们 a friend).
const NARRATORS_KIN: &[(&str, &str, Gender, &str)] = &[
    ("我妈", "妈", Gender::Female, ""),
    ("我媽", "媽", Gender::Female, ""),
    ("我爸", "爸", Gender::Male, ""),
    ("我姐", "姐", Gender::Female, "夫妹们們"),
    ("我哥", "哥", Gender::Male, "们們儿兒"),
    ("我妹", "妹", Gender::Female, "夫妹"),
    ("我弟", "弟", Gender::Male, "子兄妹们們"),
    ("我奶奶", "奶奶", Gender::Female, ""),
    ("我爷爷", "爷爷", Gender::Male, ""),
    ("我爺爺", "爺爺", Gender::Male, ""),
    ("我老婆", "老婆", Gender::Female, ""),
    ("我老公", "老公", Gender::Male, ""),
];

/// How often the narration must call one of the narrator's family so for
/// them to be a character.
const MIN_NARRATORS_KIN: usize = 3;

/// The narrator's family who recur in the narration (see [`NARRATORS_KIN`]),
/// as characters: their lines are theirs, not someone unnamed's.
fn add_narrators_kin(found: &mut Vec<Discovered>, chapters: &[Vec<ParagraphView<'_>>]) {
    let mut counts = [0usize; NARRATORS_KIN.len()];
    for p in chapters.iter().flatten().filter(|p| !p.skipped) {
        for s in p.spans.iter().filter(|s| s.kind == SegmentKind::Narration) {
            let text = s.text(p.text);
            for (k, (word, _, _, not_after)) in NARRATORS_KIN.iter().enumerate() {
                counts[k] += text
                    .match_indices(word)
                    .filter(|(at, w)| {
                        !text[at + w.len()..]
                            .chars()
                            .next()
                            .is_some_and(|c| not_after.contains(c))
                    })
                    .count();
            }
        }
    }
    for (k, &(word, called, gender, _)) in NARRATORS_KIN.iter().enumerate() {
        let taken = |n: &str| {
            found
                .iter()
                .any(|d| d.character.name == n || d.character.aliases.iter().any(|a| a == n))
        };
        if counts[k] < MIN_NARRATORS_KIN || taken(word) || taken(called) {
            continue;
        }
        let at = found.partition_point(|d| d.count >= counts[k]);
        found.insert(
            at,
            Discovered {
                character: Character {
                    name: word.to_owned(),
                    aliases: vec![called.to_owned()],
                    gender,
                    voice: None,
                },
                count: counts[k],
                evidence: GenderEvidence {
                    name: gender,
                    name_strong: true,
                    name_role: true,
                    ..GenderEvidence::default()
                },
            },
        );
    }
}

/// Quotes that open by calling someone by one character and 哥 or 姐 (陈哥，
/// 树哥！, 宁姐，) where the character is no found character's surname nor
/// a character of their given name, as (female, male) counts: in a book
/// told in the first person, mostly the narrator, whom the narration never
/// names.
fn unclaimed_addresses(found: &[Discovered], chapters: &[Vec<ParagraphView<'_>>]) -> [usize; 2] {
    let claimed: Vec<char> = found
        .iter()
        .flat_map(|d| std::iter::once(&d.character.name).chain(&d.character.aliases))
        .flat_map(|n| n.chars())
        .collect();
    let mut counts = [0usize; 2];
    for p in chapters.iter().flatten().filter(|p| !p.skipped) {
        for s in p.spans.iter().filter(|s| s.kind == SegmentKind::Dialogue) {
            let inner = s.text(p.text).trim_start_matches(['“', '「', '『', '"']);
            if let Some((_, slot)) = one_char_address(inner).filter(|(c, _)| !claimed.contains(c)) {
                counts[1 - slot] += 1;
            }
        }
    }
    counts
}

/// What a book told in the first person says of its narrator's gender, as
/// (female, male) counts: what the narration says after 我 (我老婆, 我一个
/// 大男人, 我是个女生), what the narrator's own quotes say of their speaker
/// (老娘, 我前夫; quotes a tag 我说 names), and how the quote right before
/// one of those addresses its listener (“陈哥，…” / “嗯。”我说。).
fn narrator_cues(chapters: &[Vec<ParagraphView<'_>>]) -> [usize; 2] {
    let mut cues = [0usize; 2];
    let mut add = |slot: Option<usize>| {
        if let Some(slot) = slot {
            cues[1 - slot] += 1;
        }
    };
    for chapter in chapters {
        // The last quote of the paragraph before, when it is someone else's.
        let mut quote_before: Option<&str> = None;
        for p in chapter.iter().filter(|p| !p.skipped) {
            let mut first_quote = true;
            let mut last_quote = None;
            for (k, s) in p.spans.iter().enumerate() {
                let text = s.text(p.text);
                if s.kind == SegmentKind::Narration {
                    for (at, _) in text.match_indices(NARRATOR) {
                        add(says_of_me(&text[at..]));
                    }
                    continue;
                }
                let tag_before = k > 0 && {
                    let n = p.spans[k - 1].text(p.text).trim_end();
                    n.ends_with(['：', ':']) && {
                        let clause = n[..n.len() - n.chars().last().map_or(0, char::len_utf8)]
                            .rsplit(|c: char| is_punct(c))
                            .next()
                            .unwrap_or("");
                        clause.starts_with(NARRATOR) && has_speech_verb(clause)
                    }
                };
                let tag_after = p.spans.get(k + 1).is_some_and(|n| {
                    n.kind == SegmentKind::Narration
                        && n.text(p.text)
                            .strip_prefix(NARRATOR)
                            .is_some_and(starts_with_speech_verb)
                });
                let mine = tag_before || tag_after;
                if mine {
                    add(self_reference(text));
                    if first_quote {
                        add(quote_before.and_then(addressed_as));
                    }
                }
                first_quote = false;
                last_quote = (!mine).then_some(text);
            }
            quote_before = if p.spans.iter().any(|s| s.kind == SegmentKind::Dialogue) {
                last_quote
            } else {
                None
            };
        }
    }
    cues
}

/// How often a doubled name must be written to be taken as one.
const MIN_DOUBLED: usize = 2;

/// The last character of a given name written twice (许念 → 念念, 林知夏 →
/// 夏夏) is what family and friends call its owner: an alias, when no other
/// character's given name ends with that character, the book writes it at
/// least twice or opens a clause of narration with it (夏夏眨巴着眼睛凑过来。)
/// and it is no common word (深深, 静静 are adverbs).
fn add_doubled_names(
    found: &mut [Discovered],
    chapters: &[Vec<ParagraphView>],
    subjects: &rustc_hash::FxHashMap<&str, usize>,
) {
    let last_given = |name: &str| -> Option<char> {
        let chars: Vec<char> = name.chars().collect();
        let given = match chars.len() {
            2 | 3 if is_surname(chars[0]) => &chars[1..],
            2 => &chars[..],
            _ => return None,
        };
        given.last().copied()
    };
    let mut owners: rustc_hash::FxHashMap<char, Vec<usize>> = Default::default();
    for (i, d) in found.iter().enumerate() {
        for n in std::iter::once(&d.character.name).chain(&d.character.aliases) {
            if let Some(c) = last_given(n) {
                let v = owners.entry(c).or_default();
                if !v.contains(&i) {
                    v.push(i);
                }
            }
        }
    }
    let dictionary = crate::frontend::dictionary::Dictionary::get();
    let mut doubled: Vec<(String, usize)> = owners
        .into_iter()
        .filter_map(|(c, v)| match v[..] {
            [i] if is_han(c) && !is_non_name_inner(c) => Some((format!("{c}{c}"), i)),
            _ => None,
        })
        .filter(|(word, _)| {
            dictionary.phrase_either(word).is_none()
                && !found.iter().any(|d| {
                    d.character.name == *word || d.character.aliases.iter().any(|a| a == word)
                })
        })
        .collect();
    doubled.sort();
    let written = count_written(chapters, doubled.iter().map(|(w, _)| w.as_str()));
    for ((word, i), n) in doubled.into_iter().zip(written) {
        if n >= MIN_DOUBLED || subjects.contains_key(word.as_str()) {
            tracing::debug!(alias = %word, of = %found[i].character.name, "a doubled given name");
            found[i].character.aliases.push(word);
        }
    }
}

/// The names with the given names of the full ones among them (郝红梅's
/// 红梅) that open clauses of narration (红梅惊讶地问) though they never
/// stand right before a speech verb, ranked by the clauses they open.
fn with_given_names(
    mut names: Vec<(String, usize)>,
    subjects: &rustc_hash::FxHashMap<&str, usize>,
) -> Vec<(String, usize)> {
    let given: Vec<(String, usize)> = names
        .iter()
        .filter(|(name, _)| {
            name.chars().count() == 3 && has_surname(name) && surname_and_title(name).is_none()
        })
        .filter_map(|(name, _)| {
            let tail = &name[name.chars().next()?.len_utf8()..];
            let n = subjects.get(tail).copied().unwrap_or(0);
            (n >= MIN_GIVEN_SUBJECT
                && !names.iter().any(|(other, _)| other == tail)
                && !ROLE_NOUNS.contains(&tail)
                && !OFFICE_TITLES.contains(&tail)
                && !is_not_name(tail))
            .then(|| (tail.to_owned(), n))
        })
        .collect();
    names.extend(given);
    names.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    names
}

/// Last characters of places (朱紫国, 雷音寺, 凤仙郡, 米家镇).
fn is_place_end(c: char) -> bool {
    matches!(
        c,
        '国' | '國'
            | '宫'
            | '宮'
            | '殿'
            | '寺'
            | '庙'
            | '廟'
            | '观'
            | '觀'
            | '郡'
            | '县'
            | '縣'
            | '府'
            | '镇'
            | '鎮'
            | '村'
            | '庄'
            | '莊'
            | '乡'
            | '鄉'
            | '省'
            | '市'
            | '区'
            | '區'
            | '街'
            | '路'
            | '楼'
            | '樓'
            | '洞'
            | '岭'
            | '嶺'
            | '关'
            | '關'
    )
}

/// How often a full name must be written to be a name though it never
/// stands in a speaker position.
const MIN_FULL_WRITTEN: usize = 15;

/// Full names the speaker clauses miss, from one pass over the book:
/// - found by their given names (李向前 by 向前, 郝红梅 by 红梅): a given
///   name that opens speaker clauses at least [`MIN_GIVEN_SPEAKER`] times
///   but is no name by itself (向 seldom opens a name, 红梅 is a word of
///   the dictionary), and that the book writes after one surname at least
///   [`MIN_WRITTEN`] times, that surname not mostly after one character
///   (晓云指着: 云 ends another name). The full name need not open a
///   clause: a book may write it only after 和 or 是;
/// - written often (田福顺, 金俊山, 田福高) though seldom in a speaker clause: a
///   surname and two characters that stand in names, the given name no
///   word of the dictionary, the surname and the first of them no word
///   either (高兴, 白天), no number and no place, written at least
///   [`MIN_FULL_WRITTEN`] times, and not mostly after or before one
///   character (a word they stand in).
fn full_names_missed(
    counts: &rustc_hash::FxHashMap<&str, (usize, usize)>,
    subjects: &rustc_hash::FxHashMap<&str, usize>,
    names: &[(String, usize)],
    chapters: &[Vec<ParagraphView<'_>>],
) -> Vec<(String, usize)> {
    let mut given: Vec<(&str, usize)> = counts
        .iter()
        .filter(|(g, (n, _))| {
            *n >= MIN_GIVEN_SPEAKER
                && g.chars().count() == 2
                && g.chars().all(is_han)
                && subjects.get(*g).copied().unwrap_or(0) >= MIN_GIVEN_SUBJECT
                && !names.iter().any(|(name, _)| name.contains(*g))
                && !CROWDS.contains(g)
                && !ROLE_NOUNS.contains(g)
                && !OFFICE_TITLES.contains(g)
                && !KIN_BEFORE_NAME.contains(g)
                && !is_not_name(g)
                && !has_speech_verb(g)
        })
        .map(|(g, (n, _))| (*g, *n))
        .collect();
    given.sort();
    let given_at: rustc_hash::FxHashMap<&str, usize> = given
        .iter()
        .enumerate()
        .map(|(k, (g, _))| (*g, k))
        .collect();
    // For each given name: how often each (surname, character before it)
    // stands before it.
    let mut surnames: Vec<rustc_hash::FxHashMap<(char, char), usize>> =
        vec![Default::default(); given.len()];
    // How often each string of three characters that may be a name is
    // written (by its characters, with one place it is written at).
    let mut written: rustc_hash::FxHashMap<[char; 3], (usize, &str)> = Default::default();
    for p in chapters.iter().flatten().filter(|p| !p.skipped) {
        let text = p.text;
        let mut prev = ' ';
        for (at, c) in text.char_indices() {
            let before = std::mem::replace(&mut prev, c);
            if !is_surname(c) || is_non_name_char(c) {
                continue;
            }
            let mut rest = text[at..].char_indices().skip(1);
            let (Some((j2, c2)), Some((j3, c3))) = (rest.next(), rest.next()) else {
                continue;
            };
            if !is_han(c2) || !is_han(c3) {
                continue;
            }
            let end = at + j3 + c3.len_utf8();
            if let Some(&k) = given_at.get(&text[at + j2..end]) {
                *surnames[k].entry((c, before)).or_default() += 1;
            }
            // 金家湾, 十万八千, 战兢兢, 朱紫国: a family's place, a number, a
            // doubled word, a place. (A last character that seldom ends a
            // name may: 田福高, written this often.)
            if is_non_name_inner(c2)
                || is_non_name_char(c2)
                || is_particle(c3)
                || c2 == '家'
                || c2 == c3
                || [before, c2, c3].into_iter().any(is_numeral)
                || is_place_end(c3)
            {
                continue;
            }
            written.entry([c, c2, c3]).or_insert((0, &text[at..end])).0 += 1;
        }
    }
    let mut out = Vec::new();
    for ((g, n), before) in given.iter().zip(&surnames) {
        let mut by_surname: rustc_hash::FxHashMap<char, usize> = Default::default();
        for (&(s, _), &k) in before {
            *by_surname.entry(s).or_default() += k;
        }
        let Some((surname, times)) = by_surname
            .into_iter()
            .max_by_key(|(s, k)| (*k, std::cmp::Reverse(*s)))
        else {
            continue;
        };
        // 晓云指着: 云 closes another name more than it opens this one.
        let tail = before
            .iter()
            .any(|(&(s, c), &k)| s == surname && k * 2 > times && is_han(c));
        let full = format!("{surname}{g}");
        if times >= MIN_WRITTEN && !tail && !is_not_name(&full) {
            tracing::debug!(name = %full, given = g, times, "a full name found by its given name");
            out.push((full, *n));
        }
    }
    out.extend(often_written(written, names, &out, chapters));
    out
}

/// The names of [`full_names_missed`] written often, from how often each
/// may-be name is `written`, but for those in `names` and `found`.
fn often_written(
    written: rustc_hash::FxHashMap<[char; 3], (usize, &str)>,
    names: &[(String, usize)],
    found: &[(String, usize)],
    chapters: &[Vec<ParagraphView<'_>>],
) -> Vec<(String, usize)> {
    let dictionary = crate::frontend::dictionary::Dictionary::get();
    let mut candidates: Vec<(&str, usize)> = written
        .into_values()
        .map(|(n, full)| (full, n))
        .filter(|(full, n)| {
            let two = &full[..full.char_indices().nth(2).map_or(full.len(), |(j, _)| j)];
            let given = &full[full.chars().next().map_or(0, char::len_utf8)..];
            *n >= MIN_FULL_WRITTEN
                && dictionary.phrase_either(given).is_none()
                && dictionary.phrase_either(two).is_none()
                && !is_not_name(full)
                && !has_speech_verb(full)
                && !names
                    .iter()
                    .chain(found)
                    .any(|(name, _)| name.contains(*full) || full.contains(name.as_str()))
        })
        .collect();
    if candidates.is_empty() {
        return Vec::new();
    }
    candidates.sort();
    // Not mostly after or before one character (通关文牒, 周文龙回): how
    // often each stands after (true) or before (false) each candidate.
    let matcher = WordMatcher::new(candidates.iter().map(|(full, _)| *full));
    let mut around: Vec<rustc_hash::FxHashMap<(char, bool), usize>> =
        vec![Default::default(); candidates.len()];
    // Matches that do not overlap (毛仲毛 in 毛仲毛仲毛仲… is half as many).
    let mut hits = vec![0usize; candidates.len()];
    for p in chapters.iter().flatten().filter(|p| !p.skipped) {
        for m in matcher.find_iter(p.text) {
            hits[m.pattern] += 1;
            let around = &mut around[m.pattern];
            let before = p.text[..m.start].chars().next_back().unwrap_or(' ');
            let next = p.text[m.end..].chars().next().unwrap_or(' ');
            *around.entry((before, false)).or_default() += 1;
            *around.entry((next, true)).or_default() += 1;
        }
    }
    let out: Vec<(String, usize)> = candidates
        .into_iter()
        .zip(around.iter().zip(hits))
        .filter(|(_, (around, hits))| {
            *hits >= MIN_FULL_WRITTEN
                && around.iter().all(|(&(c, after), k)| {
                    !is_han(c) || (after && is_non_name_char(c)) || k * 2 <= *hits
                })
        })
        .map(|((full, n), _)| (full.to_owned(), n))
        .collect();
    for (name, n) in &out {
        tracing::debug!(name, written = n, "a full name the book often writes");
    }
    out
}

/// How often each of `names` is written in the book (quotes included).
fn count_written<'n>(
    chapters: &[Vec<ParagraphView<'_>>],
    names: impl Iterator<Item = &'n str>,
) -> Vec<usize> {
    let names: Vec<&str> = names.collect();
    let mut counts = vec![0; names.len()];
    if names.is_empty() {
        return counts;
    }
    let matcher = WordMatcher::new(&names);
    for p in chapters.iter().flatten().filter(|p| !p.skipped) {
        for m in matcher.find_iter(p.text) {
            counts[m.pattern] += 1;
        }
    }
    counts
}

/// What turns the words before it into a manner (挑战似地问, 命令般地说).
const MANNER_AFTER: &[&str] = &["似地", "似的", "般地", "般的", "一般地"];

/// What follows 我 when a character gives their name (我叫侯生贵，, 我是顾屿。):
/// the name must end at a pause (not 我是说…), have a surname, lie outside
/// the dictionary (not 我是高手。) and be written again (not 我是时再来).
const INTRODUCTIONS: &[&str] = &["我叫", "我名叫", "我是", "我就是", "我姓"];

/// After 我姓, the surname, a pause and the full name that opens with it
/// (我姓钱，钱立新 → 钱立新…); `None` when the name does not follow.
pub(super) fn after_surname(rest: &str) -> Option<&str> {
    let mut chars = rest.char_indices();
    let (_, surname) = chars.next()?;
    let (at, pause) = chars.next()?;
    let named = &rest[at + pause.len_utf8()..];
    (matches!(pause, '，' | ',') && named.starts_with(surname)).then_some(named)
}

/// The names `quote` gives its speaker (“我叫侯生贵，…”): 2 or 3 Han
/// characters right after an introduction and before a pause.
fn self_introductions(quote: &str) -> impl Iterator<Item = &str> {
    INTRODUCTIONS.iter().flat_map(move |intro| {
        quote.match_indices(intro).filter_map(move |(at, _)| {
            let rest = &quote[at + intro.len()..];
            // 我是禾润的高志远。: where one comes from, then the name.
            let rest = if intro.ends_with('是') {
                after_affiliation(rest)
            } else if intro.ends_with('姓') {
                after_surname(rest)?
            } else {
                rest
            };
            let end = rest
                .char_indices()
                .take(4)
                .find(|(_, c)| !is_han(*c))
                .filter(|(_, c)| is_punct(*c) || matches!(c, '”' | '」' | '』'))
                .map(|(e, _)| e)?;
            (6..=9).contains(&end).then(|| &rest[..end])
        })
    })
}

/// Longest affiliation before a name one gives (禾润的, 市一院的): Han
/// characters and 的, in bytes.
const MAX_AFFILIATION_BYTES: usize = 7 * 3;

/// `rest` after an affiliation it opens with (禾润的高志远 → 高志远): up to
/// [`MAX_AFFILIATION_BYTES`] of Han characters ending in 的; `rest` as it
/// is when it opens with none.
pub(super) fn after_affiliation(rest: &str) -> &str {
    let window = rest
        .char_indices()
        .take_while(|&(at, c)| at < MAX_AFFILIATION_BYTES && is_han(c))
        .filter(|&(_, c)| c == '的')
        .last();
    match window {
        Some((at, c)) if at > 0 => &rest[at + c.len_utf8()..],
        _ => rest,
    }
}

/// The English name that opens `clause` (Lisa of Lisa笑道): a capital and
/// at least one small letter, 2 to 12 letters, not followed by another
/// letter or a digit (no acronym: CEO, no word run on: iPhone).
fn latin_name(clause: &str) -> Option<&str> {
    let end = clause
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(clause.len());
    let name = &clause[..end];
    let next = clause[end..].chars().next();
    ((2..=12).contains(&end)
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name[1..].chars().all(|c| c.is_ascii_lowercase())
        && !next.is_some_and(|c| c.is_ascii_digit()))
    .then_some(name)
}

/// True when `s` may be a nickname in quote marks: 2 to
/// [`NICKNAME_MAX_CHARS`] Han characters, as the quote scanner reads them.
fn is_nickname(s: &str) -> bool {
    (2..=NICKNAME_MAX_CHARS).contains(&s.chars().count()) && s.chars().all(is_han)
}

/// True when `c` closes a nickname that opens `clause`.
fn closes_nickname(clause: &str, c: char) -> bool {
    matches!(c, '”' | '」' | '』')
        && clause
            .trim_start()
            .strip_prefix(['“', '「', '『'])
            .is_some_and(is_nickname)
}

/// True when a string a quote opens with may be a name: not a form of
/// address or kin (少安哥, 二爸), a crowd (兄弟们), an exclamation (天啊), nor
/// a string opening or ending as no name does (站着, 女儿悲).
fn vocative_name(s: &str) -> bool {
    let (Some(first), Some(last)) = (s.chars().next(), s.chars().next_back()) else {
        return false;
    };
    let kin = KIN_BEFORE_NAME
        .iter()
        .chain(ROLE_NOUNS)
        .any(|k| s.starts_with(k) || s.ends_with(k));
    !kin && (!is_non_name_char(first) || is_surname(first))
        && !is_non_name_tail(last)
        && !is_particle(last)
        && !"啊呀哪吧呢们們哥姐叔婶嬸爸妈媽爷爺伯娘".contains(last)
}

/// The 2–3 Han characters a quote (`inner`, after its opening mark) opens
/// with before a comma or an exclamation: whom it calls (少平 of “少平，…”).
fn opening_call(inner: &str) -> Option<&str> {
    let (end, _) = inner
        .char_indices()
        .take(4)
        .find(|(_, c)| !is_han(*c))
        .filter(|(_, c)| matches!(c, '，' | '！' | ','))?;
    (6..=9).contains(&end).then(|| &inner[..end])
}

/// A string quotes call someone by that can be a name: not a word, a role
/// or kinship word, nor what names never are ([`vocative_name`]).
fn called_as_name(name: &str, dictionary: &crate::frontend::dictionary::Dictionary) -> bool {
    dictionary.phrase_either(name).is_none()
        && !ROLE_NOUNS.contains(&name)
        && !KIN_BEFORE_NAME.contains(&name)
        && !is_not_name(name)
        && vocative_name(name)
}

/// How often a string must be called by name and open narration to be a name.
const MIN_VOCATIVES: usize = 2;

/// How many clauses of the narration a name must open in a book told in the
/// first person, where it need not stand in a speaker position.
const MIN_FIRST_PERSON_SUBJECTS: usize = 3;

/// How many speaker clauses a nickname in quote marks must open to be a name.
const MIN_NICKNAME_CLAUSES: usize = 2;

/// How many clauses a full name's given name must open to be its alias.
const MIN_GIVEN_SUBJECT: usize = 3;

/// Role nouns of three characters that a two-character string grows into
/// (老太 → 老太太), though they have no surname.
const LONG_ROLE_NOUNS: &[&str] = &[
    "老太太",
    "老太婆",
    "老婆子",
    "老头子",
    "老頭子",
    "老大娘",
    "老大爷",
    "老大爺",
    "小伙子",
    "小夥子",
];

/// How many names a book's cast may hold.
const MAX_NAMES: usize = 300;

/// How many names of any form a book's cast may hold; past them a name must
/// be a surname's and no word of the dictionary (孫二娘, 郝思文 of a book of a
/// hundred heroes, not 回頭 or 左手 of its narration).
const OPEN_NAMES: usize = 150;

/// How many names are kept on their speaker positions alone; past them a
/// name must also be written often in the book.
const CORE_NAMES: usize = 60;

/// How often a name past the first [`CORE_NAMES`] must be written.
const MIN_WRITTEN: usize = 10;

/// Adverbs that stand before another adverb or a verb, seldom before a name
/// (就赶紧说, 都纷纷): a string often after them is no name.
const BEFORE_ADVERBS: &[char] = &[
    '就', '也', '又', '都', '便', '才', '却', '還', '还', '再', '已',
];

/// How a found name is written across the book.
#[derive(Debug, Default, Clone, Copy)]
struct Usage {
    written: usize,
    after_adverb: usize,
    after_pronoun: usize,
    /// Right after a word that takes a person as its object (对, 给, 和).
    object: usize,
    /// Right after a word of place (在, 到, 从): 在石圪节, 到黄原.
    place: usize,
    before_comma: usize,
    /// Right before a speech verb (探春笑道); counted for words of the
    /// dictionary only, the only ones asked.
    before_verb: usize,
    in_dictionary: bool,
}

/// Words before the one spoken to, given to or acted on (对润叶说, 给兰花).
const OBJECT_MARKERS: &[char] = &[
    '对', '對', '给', '給', '和', '跟', '向', '问', '問', '叫', '让', '讓', '同', '与', '與', '把',
    '被', '朝', '冲', '衝',
];

/// Words before a place (在石圪节, 到黄原, 从县城); 向 and 往 are objects too.
const PLACE_MARKERS: &[char] = &['在', '到', '从', '從', '去', '离', '離', '于', '於'];

/// How often a name must be written before its usage can rule it out.
const MIN_USES: usize = 8;

/// Pronouns, which stand before adverbs (他本来) and before full names in
/// apposition (他金俊武, he, 金俊武) alike.
const PRONOUNS: &[char] = &['他', '她', '我', '你'];

/// The names of `ranked` (most speaker positions first) that the whole book
/// writes like names: seldom right after an adverb or, unless a full name,
/// a pronoun (纷纷, 赶紧 and 本来 open clauses before speech verbs too), and, past
/// the first [`CORE_NAMES`], written at least [`MIN_WRITTEN`] times (not 马顺接 of
/// 马顺接着说); with the given names of the full ones kept (see
/// [`with_given_names`]) that pass the same tests; at most [`MAX_NAMES`].
fn by_usage(
    ranked: Vec<(String, usize)>,
    subjects: &rustc_hash::FxHashMap<&str, usize>,
    chapters: &[Vec<ParagraphView>],
) -> Vec<(String, usize)> {
    // One pass over the book for the names and every given name that may join them.
    let given = with_given_names(ranked.clone(), subjects);
    let all: Vec<&str> = given.iter().map(|(n, _)| n.as_str()).collect();
    let matcher = WordMatcher::new(&all);
    let dictionary = crate::frontend::dictionary::Dictionary::get();
    let mut usage: Vec<Usage> = all
        .iter()
        .map(|n| Usage {
            in_dictionary: dictionary.phrase_either(n).is_some_and(|p| p.common),
            ..Usage::default()
        })
        .collect();
    for p in chapters.iter().flatten().filter(|p| !p.skipped) {
        for m in matcher.find_iter(p.text) {
            let u = &mut usage[m.pattern];
            u.written += 1;
            match p.text[..m.start].chars().next_back() {
                Some(c) if BEFORE_ADVERBS.contains(&c) => u.after_adverb += 1,
                Some(c) if PRONOUNS.contains(&c) => u.after_pronoun += 1,
                Some(c) if OBJECT_MARKERS.contains(&c) => u.object += 1,
                Some(c) if PLACE_MARKERS.contains(&c) => u.place += 1,
                _ => {}
            }
            let after = &p.text[m.end..];
            if after.starts_with(['，', ',']) {
                u.before_comma += 1;
            } else if u.in_dictionary && starts_with_speech_verb(after) {
                u.before_verb += 1;
            }
        }
    }
    let usage: HashMap<&str, Usage> = all.iter().copied().zip(usage).collect();
    // 操 of 曹操, 卓 of 董卓: given names of one character that the
    // narration of an old novel writes alone (操大怒曰, 卓令…).
    let given_chars: rustc_hash::FxHashSet<char> = ranked
        .iter()
        .filter(|(name, _)| has_surname(name))
        .filter_map(|(name, _)| two_chars(name).map(|(_, given)| given))
        .collect();
    let keep = |rank: usize, name: &str| {
        let u = usage.get(name).copied().unwrap_or_default();
        let full = name.chars().count() == 3 && has_surname(name);
        let after = if full {
            u.after_adverb
        } else {
            u.after_adverb + u.after_pronoun
        };
        // 另外，… / 说完这话后，…: a name seldom stands before a comma.
        let comma_word = u.written >= MIN_USES && u.before_comma * 3 > u.written;
        // 平时, 关于, 国家: a word of the dictionary (which lists some full
        // names of famous books too) that is hardly ever
        // spoken to or given anything (对润叶, 给兰花) and hardly ever says
        // anything (探春笑道) is no character.
        let plain_word = !full
            && u.written >= MIN_USES
            && u.object * 50 < u.written
            && u.before_verb * 20 < u.written
            && !ROLE_NOUNS.contains(&name)
            && u.in_dictionary;
        // 站住 of 站住吼叫说：: a common word without a surname, written
        // too seldom to tell how the book uses it, is no name.
        let rare_word = !has_surname(name)
            && u.written < MIN_USES
            && u.in_dictionary
            && !is_house_title(name)
            && !is_palace_title(name)
            && !ROLE_NOUNS.contains(&name);
        // 石圪节, 黄原: a place is written after 在/到/从 (在少平身边 is rarer).
        let place = u.written >= MIN_USES && u.place * 4 > u.written;
        after * 10 <= u.written
            && !place
            && !clause_opening(name, &given_chars)
            && !comma_word
            && !plain_word
            && !rare_word
            && (rank < CORE_NAMES || u.written >= MIN_WRITTEN)
    };
    let kept: Vec<(String, usize)> = ranked
        .into_iter()
        .enumerate()
        .filter(|(rank, (name, _))| keep(*rank, name))
        .map(|(_, name)| name)
        .collect();
    // The given names of the full names kept, ranked among them.
    with_given_names(kept, subjects)
        .into_iter()
        .enumerate()
        .filter(|(rank, (name, _))| keep(*rank, name))
        .map(|(_, name)| name)
        .enumerate()
        .filter(|(kept, (name, _))| {
            *kept < OPEN_NAMES
                || (has_surname(name)
                    && !usage.get(name.as_str()).is_some_and(|u| u.in_dictionary)
                    && !opens_with_a_word(name, dictionary)
                    && !counted_or_doubled(name)
                    && !a_side(name))
        })
        .map(|(_, name)| name)
        .take(MAX_NAMES)
        .collect()
}

/// Words that open a clause of an old novel before its verb, never a name
/// (遂命, 乃謂, 謂曰): then, thereupon, said to. (眾皆, 众怪 are crowds
/// that speak.)
const CLAUSE_OPENERS: &str = "遂乃謂谓便即亦皆卻却忽";

/// Words right after a subject, before or as its verb (操大怒, 卓令, 操乃,
/// 懿不): a given name written alone before one of them is no name of two.
const AFTER_SUBJECT: &str = "大乃怒令不教視视遂即便又亦皆曰謂谓問问笑喜驚惊見见聞闻欲已以";

/// True when a name of two characters is the opening of a clause of an old
/// novel: a word of [`CLAUSE_OPENERS`] (no surname) and what follows it, or a
/// given name of another character (`given_chars`: 操 of 曹操) and a word of
/// [`AFTER_SUBJECT`] (操大 of 操大怒曰).
fn clause_opening(name: &str, given_chars: &rustc_hash::FxHashSet<char>) -> bool {
    two_chars(name).is_some_and(|(first, second)| {
        (CLAUSE_OPENERS.contains(first) && !is_surname(first))
            || (given_chars.contains(&first)
                && AFTER_SUBJECT.contains(second)
                // 武大 of 水滸傳: a surname and the eldest's rank.
                && !(second == '大' && is_surname(first)))
    })
}

/// The two characters of a name of two characters.
fn two_chars(name: &str) -> Option<(char, char)> {
    let mut chars = name.chars();
    match (chars.next(), chars.next(), chars.next()) {
        (Some(first), Some(second), None) => Some((first, second)),
        _ => None,
    }
}

/// True when a name holds 一 (戴一顶 of 戴一顶帽子) or ends with the
/// character it opens with (龙子龙 of 龙子龙孙): words of the narration more
/// often than names.
fn counted_or_doubled(name: &str) -> bool {
    name.contains('一')
        || (name.chars().count() > 2 && name.chars().next() == name.chars().next_back())
}

/// True when a name is a surname and a word for an army or its people (曹軍,
/// 魏將, 吳人): the side of a war of states, not one of its men.
fn a_side(name: &str) -> bool {
    two_chars(name).is_some_and(|(_, c)| "軍军兵將将營营人".contains(c))
}

/// True when the first two characters of a name of three are a common word
/// of the dictionary (文武 of 文武多官, 龙子 of 龙子龙孙, 梁山 of 梁山泊).
fn opens_with_a_word(name: &str, dictionary: &crate::frontend::dictionary::Dictionary) -> bool {
    let mut ends = name.char_indices().map(|(i, _)| i).skip(2);
    match (ends.next(), ends.next()) {
        (Some(two), None) => dictionary
            .phrase_either(&name[..two])
            .is_some_and(|p| p.common),
        _ => false,
    }
}

/// (surname, title) when `name` is a surname and an office title (徐主任),
/// or 老/小 and a surname (老冯, 小吴: the title is the prefix).
fn surname_and_title(name: &str) -> Option<(&str, &str)> {
    if let Some((prefix, surname)) = ["老", "小"]
        .iter()
        .find_map(|p| name.strip_prefix(p).map(|s| (*p, s)))
        && surname.chars().count() == 1
        && surname.chars().all(is_surname)
    {
        return Some((surname, prefix));
    }
    let title = OFFICE_TITLES.iter().find(|t| name.ends_with(**t))?;
    let surname = &name[..name.len() - title.len()];
    let one = surname.chars().count() == 1 && surname.chars().all(is_surname);
    (one || COMPOUND_SURNAMES.contains(&surname)).then_some((surname, *title))
}

/// A surname with an office title (徐主任) is the character found with that
/// surname, and becomes one of its aliases: when only one found character
/// has the surname, or when the title stands beside one full name in the
/// book (主任徐治功, 徐治功主任) at least twice and beside no other one.
fn fold_titles(found: &mut Vec<Discovered>, chapters: &[Vec<ParagraphView>]) {
    let mut merges: Vec<(usize, usize)> = Vec::new();
    for (i, d) in found.iter().enumerate() {
        let Some((surname, title)) = surname_and_title(&d.character.name) else {
            continue;
        };
        let owners: Vec<usize> = found
            .iter()
            .enumerate()
            .filter(|(j, o)| {
                let name = &o.character.name;
                *j != i
                    && name.chars().count() >= 2
                    && name.starts_with(surname)
                    && surname_and_title(name).is_none()
            })
            .map(|(j, _)| j)
            .collect();
        let owner = match owners.as_slice() {
            [] => None,
            [one] => Some(*one),
            many => {
                // Never beside a full name: the one named in the same
                // chapters, at least twice and twice as often as any other.
                let together = |titled: &str, many: &[usize]| -> Option<usize> {
                    let with_title: Vec<&Vec<ParagraphView>> = chapters
                        .iter()
                        .filter(|ch| ch.iter().any(|p| p.text.contains(titled)))
                        .collect();
                    let mut shared: Vec<(usize, usize)> = many
                        .iter()
                        .map(|&j| {
                            let full = found[j].character.name.as_str();
                            let n = with_title
                                .iter()
                                .filter(|ch| ch.iter().any(|p| p.text.contains(full)))
                                .count();
                            (j, n)
                        })
                        .collect();
                    shared.sort_by_key(|s| std::cmp::Reverse(s.1));
                    match shared.as_slice() {
                        [(j, n), rest @ ..]
                            if *n >= 2 && rest.first().is_none_or(|r| r.1 * 2 <= *n) =>
                        {
                            Some(*j)
                        }
                        _ => None,
                    }
                };
                let beside = |j: usize| -> usize {
                    let full = &found[j].character.name;
                    let (before, after) = (format!("{title}{full}"), format!("{full}{title}"));
                    chapters
                        .iter()
                        .flatten()
                        .map(|p| p.text.matches(&before).count() + p.text.matches(&after).count())
                        .sum()
                };
                let counts: Vec<(usize, usize)> = many.iter().map(|&j| (j, beside(j))).collect();
                let named: Vec<&(usize, usize)> = counts.iter().filter(|c| c.1 > 0).collect();
                match named.as_slice() {
                    [c] if c.1 >= 2 => Some(c.0),
                    [] => together(&d.character.name, many),
                    _ => None,
                }
            }
        };
        if let Some(o) = owner {
            merges.push((i, o));
        }
    }
    for &(i, o) in &merges {
        let (name, count) = (found[i].character.name.clone(), found[i].count);
        let mut aliases = std::mem::take(&mut found[i].character.aliases);
        let owner = &mut found[o];
        owner.character.aliases.push(name);
        owner.character.aliases.append(&mut aliases);
        owner.count += count;
    }
    let gone: std::collections::HashSet<usize> = merges.iter().map(|m| m.0).collect();
    let mut k = 0;
    found.retain(|_| {
        k += 1;
        !gone.contains(&(k - 1))
    });
    found.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(a.character.name.cmp(&b.character.name))
    });
}

/// True when `two` (seen `n` times) is mostly the start of a dictionary
/// word the book goes on to write (开玩 of 开玩笑, 吞吞 of 吞吞吐吐): a piece of
/// a word, not a name.
fn starts_a_word(two: &str, n: usize, longer: &HashMap<&str, Vec<(&str, usize)>>) -> bool {
    let most = |s: &str| {
        longer.get(s).and_then(|v| {
            v.iter()
                .copied()
                .max_by_key(|(k, c)| (*c, std::cmp::Reverse(*k)))
        })
    };
    let dictionary = crate::frontend::dictionary::Dictionary::get();
    let Some((three, c3)) = most(two).filter(|(_, c)| *c as f64 >= 0.6 * n as f64) else {
        return false;
    };
    dictionary.phrase_either(three).is_some()
        || most(three)
            .filter(|(_, c4)| *c4 as f64 >= 0.6 * c3 as f64)
            .is_some_and(|(four, _)| dictionary.phrase_either(four).is_some())
}

/// True when `name` (seen `n` times) nearly always runs on into a word of
/// the dictionary that its last character starts (马顺接 of 马顺接着说, 人宽
/// of 那人宽宏地说): the name, if any, is shorter.
fn runs_into_a_word(name: &str, n: usize, longer: &HashMap<&str, Vec<(&str, usize)>>) -> bool {
    let Some((last, _)) = name.char_indices().next_back() else {
        return false;
    };
    let Some((next, c)) = longer.get(name).and_then(|v| {
        v.iter()
            .copied()
            .max_by_key(|(k, c)| (*c, std::cmp::Reverse(*k)))
    }) else {
        return false;
    };
    // 金光明说: a full name right before the verb does not run into 明说;
    // nor a man called by his surname and his rank among brothers (王四道,
    // 常二道, 武大道: 四道 is a count, 大道 a road).
    let ranked = {
        let mut chars = name.chars();
        let (first, last) = (chars.next(), chars.next());
        chars.next().is_none()
            && first.is_some_and(|c| is_surname(c) && !is_non_name_char(c))
            && last.is_some_and(|c| RANK_NUMERALS.contains(&c) || c == '大')
    };
    let before_verb = ((name.chars().count() == 3 && has_surname(name)) || ranked)
        && starts_with_bare_speech_verb(&next[name.len()..]);
    c * 5 >= n * 4
        && !before_verb
        && crate::frontend::dictionary::Dictionary::get()
            .phrase_either(&next[last..])
            .is_some_and(|p| p.common)
}

/// How many clauses a full name must open for its given name to be a name
/// whatever its first character.
const MIN_FULL_SUBJECT: usize = 3;

/// How many speaker clauses a string outside the dictionary must open to be
/// a name without ever standing right before a speech verb.
const MIN_SPEAKER_CLAUSES: usize = 8;

/// How many speaker clauses a given name must open to be a name without
/// ever standing right before a speech verb, when its full name opens one
/// clause of narration.
const MIN_GIVEN_SPEAKER: usize = 3;

/// The strings that are names, most speaker positions first.
fn select_names(
    seen: &rustc_hash::FxHashMap<&str, (usize, usize)>,
    subjects: &rustc_hash::FxHashMap<&str, usize>,
) -> Vec<(String, usize)> {
    const MIN_COUNT: usize = 2;
    let dictionary = crate::frontend::dictionary::Dictionary::get();
    // Seen once in a speaker position, but often the subject of a clause.
    let enough = |s: &str, n: usize| {
        n >= MIN_COUNT || (n >= 1 && has_surname(s) && subjects.get(s).copied().unwrap_or(0) >= 4)
    };
    // A name must stand right before a speech verb or a colon at least once.
    let counts: HashMap<&str, usize> = seen.iter().map(|(k, (n, _))| (*k, *n)).collect();
    let direct = |s: &str| seen.get(s).is_some_and(|(_, d)| *d > 0);
    // How many clauses a surname and a given name open, by the given name
    // (李向前 → 向前).
    let mut given_of_full: HashMap<&str, usize> = HashMap::new();
    for (k, n) in subjects {
        let mut chars = k.chars();
        if k.chars().count() == 3
            && let Some(first) = chars.next().filter(|c| is_surname(*c))
        {
            *given_of_full.entry(&k[first.len_utf8()..]).or_default() += n;
        }
    }
    let count_of = |s: &str| counts.get(s).copied().unwrap_or(0);
    // Full names that open many clauses and whose every character may
    // stand in a name, by their first two characters (田福 → 田福堂, 田福军).
    let mut siblings: HashMap<&str, Vec<&str>> = HashMap::new();
    for (k, n) in subjects {
        if *n >= 8
            && k.chars().count() == 3
            && has_surname(k)
            && k.chars()
                .skip(1)
                .all(|c| is_han(c) && !is_non_name_inner(c))
            && !k.chars().last().is_some_and(is_non_name_tail)
            && let Some((at, _)) = k.char_indices().nth(2)
        {
            siblings.entry(&k[..at]).or_default().push(k);
        }
    }
    let plausible = |s: &str| {
        let mut chars = s.chars();
        let n = s.chars().count();
        // 高朗: a surname that is also a common word opens a name that is
        // often the subject of a clause.
        let often_subject = has_surname(s)
            && subjects.get(s).copied().unwrap_or(0) >= 4
            && s.chars().nth(1).is_some_and(|c| !is_non_name_char(c));
        // 向前 of 李向前: a given name may open with a character that seldom
        // opens a name, when the book often writes it after a surname.
        let given_name = n == 2 && given_of_full.get(s).copied().unwrap_or(0) >= MIN_FULL_SUBJECT;
        // 李向前, 王世才: a full name that opens many clauses may hold a
        // character that seldom stands inside or at the end of a name.
        // Nearly every clause its first two characters open goes on with
        // its third (not 文龙在 of 文龙在家).
        // Brothers who share a surname and a generation character (田福堂,
        // 田福军, 田福高) open clauses with the same two characters: the
        // share is taken of the clauses the others do not open.
        let full_subject = n == 3 && has_surname(s) && {
            let opens = |s: &str| subjects.get(s).copied().unwrap_or(0);
            let two = s.char_indices().nth(2).map_or(s, |(at, _)| &s[..at]);
            let brothers: usize = siblings
                .get(two)
                .into_iter()
                .flatten()
                .filter(|k| **k != s)
                .map(|k| opens(k))
                .sum();
            opens(s) >= 8 && opens(s) * 5 >= opens(two).saturating_sub(brothers) * 4
        };
        // 司机金 of 司机金俊海: a post before a name is no part of it.
        let post = n == 3
            && s.char_indices()
                .nth(2)
                .is_some_and(|(at, _)| is_role_word(&s[..at]));
        // 和父亲, 跟周文: a conjunction before a role noun or another name.
        let joined = n == 3
            && s.starts_with(['和', '跟', '同', '与', '與'])
            && s.char_indices().nth(1).is_some_and(|(at, c)| {
                let rest = &s[at..];
                is_surname(c) || ROLE_NOUNS.contains(&rest) || KIN_BEFORE_NAME.contains(&rest)
            });
        if is_house_title(s) {
            return true;
        }
        !joined
            && !post
            && chars
                .next()
                .is_some_and(|c| !is_non_name_char(c) || often_subject || given_name)
            && chars.all(|c| is_han(c) && (!is_non_name_inner(c) || full_subject))
            && !CROWDS.contains(&s)
            && !is_not_name(s)
            // 金秀兴致: a name does not end in a manner word.
            && (n <= 2
                || s.char_indices()
                    .nth(n - 2)
                    .is_none_or(|(at, _)| !is_not_name(&s[at..])))
            && !has_speech_verb(s)
            && (n < 3 || full_subject || !s.chars().last().is_some_and(is_non_name_tail))
            // 司机的, 高兴得: no name ends in a particle, full_subject or not.
            && (n < 3 || !s.chars().last().is_some_and(is_particle))
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
        if !two.chars().all(is_han) {
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
                        // Not 马顺接 of 马顺接着说: 马顺 stays as it is
                        // (but 明軍官 may still grow into 明軍官兵).
                        .filter(|(k, n)| {
                            plausible(k)
                                && (has_surname(k)
                                    || LONG_ROLE_NOUNS.contains(k)
                                    || is_house_title(k))
                                && (!runs_into_a_word(k, *n, &longer)
                                    || longer
                                        .get(k)
                                        .is_some_and(|v| v.iter().any(|(f, _)| plausible(f))))
                        })
                        .collect()
                })
                .unwrap_or_default();
            v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            v
        };
        let mut found: Vec<(&str, usize)> = Vec::new();
        let ext = extensions(two);
        // A longer name beside the first (田福堂 beside 田福军), in speaker
        // positions and opening clauses often enough.
        let brother =
            |name: &str, n: usize| n >= MIN_COUNT && subjects.get(name).copied().unwrap_or(0) >= 2;
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
                found.extend(
                    ext.iter()
                        .skip(1)
                        .copied()
                        .filter(|&(name, n)| brother(name, n)),
                );
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
                    // … and 金俊山 beside 金俊武 and 金俊文, named less often.
                    found.extend(ext.iter().copied().filter(|&(name, c)| {
                        c as f64 >= 0.2 * n2 as f64 && c >= MIN_COUNT || brother(name, c)
                    }));
                } else if !starts_a_word(two, n2, &longer) {
                    found.push((two, n2));
                }
            }
        }
        for (name, n) in found {
            let surname = has_surname(name)
                || name.chars().count() > 3
                || is_palace_title(name)
                || is_house_title(name)
                || surname_and_title(name).is_some();
            // 晓霞 in 晓霞笑着对他说 / 晓霞问少平, 34 times and never right
            // before the verb: a word outside the dictionary that often opens speaker clauses.
            let often = n >= MIN_SPEAKER_CLAUSES && dictionary.phrase_either(name).is_none();
            // 知夏 of 知夏捂住了嘴：, once 沈知夏穿着睡衣: a given name
            // whose full name opens narration too, outside the dictionary.
            let given = n >= MIN_GIVEN_SPEAKER
                && given_of_full.get(name).is_some_and(|k| *k > 0)
                && name.chars().next().is_some_and(|c| !is_non_name_char(c))
                && dictionary.phrase_either(name).is_none();
            if !plausible(name)
                || !enough(name, n)
                || !(surname || direct(name) || often || given)
                || runs_into_a_word(name, n, &longer)
            {
                continue;
            }
            let entry = chosen.entry(name.to_owned()).or_default();
            *entry = (*entry).max(n.max(count_of(name)));
        }
    }
    let mut names: Vec<(String, usize)> = chosen.into_iter().collect();
    names.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    names
}

/// The cast of the names found, a given name that ends a full name folded
/// into it as an alias.
fn into_cast(names: Vec<(String, usize)>) -> Vec<Discovered> {
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
        name.chars().count() == 2
            && full.ends_with(name)
            && !ROLE_NOUNS.contains(&name)
            && !OFFICE_TITLES.contains(&name)
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
            evidence: GenderEvidence::default(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::speaker::test_support::{test_spans, test_views};

    /// The names of the characters `found`, in their order.
    fn names_of(found: &[Discovered]) -> Vec<&str> {
        found.iter().map(|d| d.character.name.as_str()).collect()
    }

    /// The aliases of the character `name` among those `found`.
    fn aliases_of(found: &[Discovered], name: &str) -> Option<Vec<String>> {
        found
            .iter()
            .find(|d| d.character.name == name)
            .map(|d| d.character.aliases.clone())
    }

    /// The characters discovered in `text`, one paragraph a line.
    fn discovered(text: &[&str]) -> Vec<Discovered> {
        let spans = test_spans(text);
        let views = test_views(text, &spans);
        discover(&[views])
    }

    /// The same, with the narrator of a book told in the first person (and
    /// the narrator's family) as the split adds them.
    fn with_narrator(text: &[&str]) -> Vec<Discovered> {
        let spans = test_spans(text);
        let chapters = [test_views(text, &spans)];
        let first_person = first_person_tags(&chapters);
        let mut found = discover_told(&chapters, first_person);
        add_narrator(&mut found, &chapters, first_person);
        found
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
        let found = discovered(&text);
        let names = names_of(&found);
        assert_eq!(names, ["毛仲", "陈青云"]);
        assert_eq!(found[0].count, 3);
    }

    #[test]
    fn a_given_name_that_often_opens_speaker_clauses_is_a_name_without_a_verb_right_after() {
        let mut text = Vec::new();
        for _ in 0..4 {
            text.extend(["晨露转过身对他说：“好。”", "晨露拉着林一舟的手说：“走吗？”"]);
        }
        let found = discovered(&text);
        let names = names_of(&found);
        assert!(names.contains(&"晨露"), "{names:?}");
        // 四 times is not enough.
        let found = discovered(&text[..4]);
        assert!(found.iter().all(|d| d.character.name != "晨露"));
    }

    #[test]
    fn a_given_name_that_opens_with_a_preposition_is_a_name_when_the_book_writes_it_in_full() {
        let mut text = vec!["向东说：“走吧。”", "向东问：“几点了？”"];
        let found = discovered(&text);
        assert!(
            found.iter().all(|d| d.character.name != "向东"),
            "{found:?}"
        );
        text.extend(["李向东站起来。", "李向东看了看表。", "李向东笑了。"]);
        let found = discovered(&text);
        let names = names_of(&found);
        assert!(names.contains(&"向东"), "{names:?}");
    }

    #[test]
    fn a_full_name_is_found_by_its_given_name_though_it_never_opens_a_clause() {
        // 向前 opens speaker clauses; 李向前 never opens a clause.
        let mut text = vec![
            "向前说：“走吧。”",
            "向前问：“几点了？”",
            "向前想了想：“再等等。”",
            "向前站起来。",
        ];
        let found = discovered(&text);
        assert!(
            found.iter().all(|d| !d.character.name.contains("向前")),
            "{found:?}"
        );
        for _ in 0..MIN_WRITTEN / 2 {
            text.extend(["大家都知道，这事和李向前有关。", "原来是李向前。"]);
        }
        let found = discovered(&text);
        let full = found.iter().find(|d| d.character.name == "李向前");
        assert!(
            full.is_some_and(|d| d.character.aliases.contains(&"向前".to_owned())),
            "{found:?}"
        );
    }

    #[test]
    fn a_full_name_written_often_is_a_name_but_not_a_place_nor_in_a_longer_word() {
        // 田福顺 is never in a speaker position, only written; 金家湾 is a
        // village, 通关文 part of 通关文牒.
        let lines = [
            "这件事田福顺早就知道。",
            "村里人都来找田福顺。",
            "天黑了，田福顺才回来。",
            "人们都去了金家湾，又说起通关文牒。",
            "路过金家湾的人拿着通关文牒。",
        ];
        let text: Vec<&str> = lines.iter().copied().cycle().take(5 * 6).collect();
        let found = discovered(&text);
        let names = names_of(&found);
        assert!(names.contains(&"田福顺"), "{names:?}");
        assert!(
            !names
                .iter()
                .any(|n| n.contains("家湾") || n.contains("关文")),
            "{names:?}"
        );
        // Written fewer times, not a name.
        let fewer: Vec<&str> = lines.iter().copied().cycle().take(5 * 4).collect();
        assert!(names_of(&discovered(&fewer)).is_empty());
    }

    #[test]
    fn one_who_gives_their_name_and_is_named_again_is_a_character() {
        let mut text = vec![
            "院门口站着一个陌生人。",
            "“我叫韩冬青，从县里来的。”",
            "老周把他让进屋里。",
            "“等我叫时再来。”",
        ];
        let found = discovered(&text);
        assert!(
            found.iter().all(|d| d.character.name != "韩冬青"),
            "{found:?}"
        );
        text.push("屋里的人都看着韩冬青。");
        let found = discovered(&text);
        let names = names_of(&found);
        assert!(names.contains(&"韩冬青"), "{names:?}");
        assert!(!names.contains(&"时再来"), "{names:?}");
    }

    #[test]
    fn one_may_give_where_they_come_from_before_their_name() {
        let text = [
            "手机响了，是个陌生号码。",
            "“苏经理吗？我是禾润的高志远。”",
            "会议室里，高志远抬起头。",
            "“我是你的朋友。”",
        ];
        let found = discovered(&text);
        let names = names_of(&found);
        assert!(names.contains(&"高志远"), "{names:?}");
        assert!(!names.contains(&"朋友"), "{names:?}");
        assert_eq!(after_affiliation("禾润的高志远。"), "高志远。");
        assert_eq!(after_affiliation("高志远。"), "高志远。");
        // Not past a pause, nor further than an affiliation goes.
        assert_eq!(after_affiliation("说，的确"), "说，的确");
        assert_eq!(
            after_affiliation("一二三四五六七八的高"),
            "一二三四五六七八的高"
        );
    }

    #[test]
    fn a_name_that_runs_into_a_word_is_shorter() {
        let text = ["马顺接着说：“好。”"; 6];
        let found = discovered(&text);
        let names = names_of(&found);
        assert_eq!(names, ["马顺"]);
        // … but not a full name right before the verb (金光明说：, not 金光
        // and 明说).
        let text = ["金光明说：“好。”"; 6];
        assert_eq!(names_of(&discovered(&text)), ["金光明"]);
        // … nor a man called by his surname and his rank (王四道：, not
        // 王 and 四道, a count of roads).
        for (line, name) in [
            ("王四道：「小人去了便回。」", "王四"),
            ("常二道：「哥哥說的是。」", "常二"),
        ] {
            assert_eq!(names_of(&discovered(&[line; 6])), [name]);
        }
    }

    #[test]
    fn a_book_of_many_people_keeps_its_named_ones_past_the_first_hundred_and_fifty() {
        // 200 people, each called by a surname and a given name of two
        // characters no dictionary holds: the most often heard speak 20
        // times, the least 13; then, 12 times each, a word of the narration
        // and a name opening with a word (文武多 of 文武多官), ranked last.
        let seconds: Vec<char> = "嵩崧岫峤岷峋".chars().collect();
        let mut names = Vec::new();
        // (扈 and 蒯, surnames of the old novels, among the last.)
        for surname in "赵钱孙李周吴郑冯陈褚卫蒋沈韩杨朱秦尤扈蒯".chars() {
            for first in "甫岱汀琰珣璆瑜璋玢瑾".chars() {
                names.push(format!(
                    "{surname}{first}{}",
                    seconds[names.len() % seconds.len()]
                ));
            }
        }
        let mut text = Vec::new();
        for (rank, name) in names.iter().enumerate() {
            for _ in 0..20 - rank * 8 / names.len() {
                text.push(format!("{name}说：“来了。”"));
            }
        }
        for _ in 0..12 {
            text.push("回头说：“来了。”".to_owned());
            text.push("文武多说：“来了。”".to_owned());
        }
        let lines: Vec<&str> = text.iter().map(String::as_str).collect();
        let found = discovered(&lines);
        let found = names_of(&found);
        let missing: Vec<&String> = names
            .iter()
            .filter(|n| !found.contains(&n.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "not found: {} {missing:?} found {found:?}",
            missing.len()
        );
        assert!(!found.contains(&"回头"), "{found:?}");
        assert!(!found.contains(&"文武多"), "{found:?}");
    }

    #[test]
    fn the_opening_of_a_clause_of_an_old_novel_is_no_name() {
        // 操 of 曹操 written alone before 大怒 or 令, and 遂 (then) before a
        // verb, open clauses; 武大 (a surname and the eldest's rank) is a name.
        let mut text = Vec::new();
        for _ in 0..6 {
            text.push("曹操曰：「善。」");
            text.push("操大怒曰：「斬之！」");
            text.push("操令曰：「退兵。」");
            text.push("遂命曰：「速去。」");
            text.push("朱武曰：「哥哥休慌。」");
            text.push("武大曰：「兄弟來了。」");
        }
        let found = discovered(&text);
        let names = names_of(&found);
        for not in ["操大", "操令", "遂命"] {
            assert!(!names.contains(&not), "{not}: {names:?}");
        }
        for name in ["曹操", "朱武", "武大"] {
            assert!(names.contains(&name), "{name}: {names:?}");
        }
    }

    #[test]
    fn a_common_word_seldom_written_is_no_name() {
        let mut text = Vec::new();
        for _ in 0..4 {
            text.push("孙玉厚以为他还要叫他去开会，站住吼叫说：“你走你的！不要管我！”");
            text.push("孙玉厚说：“走吧。”");
        }
        assert_eq!(names_of(&discovered(&text)), ["孙玉厚"]);
    }

    #[test]
    fn the_full_name_of_one_called_by_title_is_theirs() {
        let mut text = Vec::new();
        for _ in 0..4 {
            text.extend([
                "老韩说：“走吧。”",
                "陆远问：“去哪？”",
                "老韩笑了笑，说：“江边。”",
            ]);
        }
        text.push("韩建军五十出头，是队里资历最老的。");
        // Once is not enough…
        assert_eq!(aliases_of(&discovered(&text), "老韩"), Some(vec![]));
        // … twice is.
        text.push("“老出毛病。”韩建军把烟头按灭在纸杯里。");
        assert_eq!(
            aliases_of(&discovered(&text), "老韩"),
            Some(vec!["韩建军".to_owned()])
        );
    }

    #[test]
    fn that_one_is_no_name() {
        // 那人宽宏地说: someone unnamed, not 人宽.
        let text = ["“你提个数目。”那人宽宏地说。"; 6];
        let found = discovered(&text);
        assert!(
            found.iter().all(|d| !d.character.name.starts_with('人')),
            "{found:?}"
        );
    }

    #[test]
    fn no_name_ends_in_a_particle() {
        let text = ["司机的声音低低地说：“到了。”"; 10];
        let found = discovered(&text);
        assert!(
            found.iter().all(|d| !d.character.name.ends_with('的')),
            "{found:?}"
        );
    }

    #[test]
    fn a_nickname_in_quote_marks_is_a_name() {
        let mut text = Vec::new();
        for _ in 0..3 {
            text.extend([
                "“铁脚”说：“走吧。”",
                "苏晚问：“去哪？”",
                "“铁脚”笑了笑，说：“河边。”",
            ]);
        }
        let found = discovered(&text);
        let names = names_of(&found);
        assert!(names.contains(&"铁脚"), "{names:?}");
    }

    #[test]
    fn a_given_name_and_a_palace_rank_is_a_name() {
        let mut text = Vec::new();
        for _ in 0..3 {
            text.extend([
                "“娘娘息怒。”婉嫔笑着福了福身，轻声道，“她还小。”",
                "婉嫔不卑不亢地答道：“臣妾不敢。”",
            ]);
        }
        let found = discovered(&text);
        let names = names_of(&found);
        assert_eq!(names, ["婉嫔"]);
        assert!(is_palace_title("沈贵妃") && is_palace_title("苏常在") && !is_palace_title("太后"));
    }

    #[test]
    fn a_title_of_a_palace_or_a_great_house_is_a_name() {
        let mut text = Vec::new();
        for _ in 0..3 {
            text.extend([
                "“起来吧。”太后淡淡问道，“太子呢？”",
                "太子上前一步，答道：“儿臣在。”太子又道，“母后放心。”",
                "太太叹了口气，说：“走吧。”",
                "“快起来。”老夫人朝她招手，笑道，“好孩子。”",
                "班主任推了推眼镜：“安静。”",
            ]);
        }
        let found = discovered(&text);
        let mut names = names_of(&found);
        names.sort_unstable();
        // 太太 is a form of address, not one of the house.
        assert_eq!(names, ["太后", "太子", "班主任", "老夫人"]);
    }

    #[test]
    fn a_given_name_written_twice_is_an_alias() {
        let mut text = Vec::new();
        for _ in 0..3 {
            text.extend([
                "许念冷笑道：“黑红。”",
                "陆景深说：“走吧。”他深深地看了她一眼。",
            ]);
        }
        text.push("小桃探出头：“念念姐？”");
        text.push("“念念！”");
        let found = discovered(&text);
        assert_eq!(
            aliases_of(&found, "许念"),
            Some(vec!["念念".to_owned()]),
            "{found:?}"
        );
        // 深深 is a word.
        assert_eq!(aliases_of(&found, "陆景深"), Some(vec![]), "{found:?}");
        // Written once, but opening a clause of narration.
        text.truncate(6);
        let once = discovered(&text);
        assert_eq!(names_of(&once), ["许念", "陆景深"]);
        assert!(
            once.iter().all(|d| d.character.aliases.is_empty()),
            "{once:?}"
        );
        text.push("念念眨巴着眼睛凑过来。");
        let found = discovered(&text);
        assert_eq!(
            aliases_of(&found, "许念"),
            Some(vec!["念念".to_owned()]),
            "{found:?}"
        );
    }

    #[test]
    fn a_surname_after_lao_is_a_name_though_never_right_before_a_verb() {
        let text = [
            "“手机不是钱？”老韩瞥了他一眼，“值钱多了。”",
            "陆远张了张嘴。",
            "“行。”老韩笑了笑。",
            "老韩难得笑了笑：“好。”",
            "“是。”陆远说。",
        ];
        let found = discovered(&text);
        let names = names_of(&found);
        assert!(names.contains(&"老韩"), "{names:?}");
    }

    #[test]
    fn a_given_name_whose_full_name_opens_narration_is_a_name() {
        let text = [
            "沈知夏穿着睡衣从卧室出来。",
            "“楼下那辆车是谁的？”知夏咽了口唾沫。",
            "知夏捂住了嘴：“天哪。”",
            "“明天周六！”知夏扑过来抱住她。",
            "“睡吧。”周秀芳说。",
        ];
        let found = discovered(&text);
        let names = names_of(&found);
        assert!(names.contains(&"知夏"), "{names:?}");
        // Without the full name, 知夏 is only a string that opens clauses.
        let found = discovered(&text[1..]);
        let names = names_of(&found);
        assert!(!names.contains(&"知夏"), "{names:?}");
    }

    #[test]
    fn a_compound_surname_and_a_title_of_a_sect_make_names() {
        let text = [
            "“你来了。”慕容雪淡淡道。",
            "叶尘点头：“来了。”",
            "慕容雪看着他，“为何而来？”",
            "“放肆！”慕容雪冷声道。",
            "“走吧。”大师兄笑道。",
            "大师兄看了他一眼：“你怕了？”",
            "“不怕。”叶尘说。",
        ];
        let found = discovered(&text);
        let mut names = names_of(&found);
        names.sort_unstable();
        assert_eq!(names, ["叶尘", "大师兄", "慕容雪"]);
    }

    #[test]
    fn a_book_in_the_first_person_has_its_narrator_among_its_characters() {
        let first = [
            "我推开宿舍的门。",
            "“回来啦？”苏念笑着问。",
            "“嗯。”我说。",
            "我笑道：“你也该用功了。”",
            "“大家好，我是顾屿。”他笑了笑。",
            "顾屿看着我：“走吧。”",
            "“那你挂科了别哭。”我说。",
        ];
        let found = with_narrator(&first);
        let names = names_of(&found);
        assert!(names.contains(&NARRATOR), "{names:?}");
        // 我是顾屿 introduces one the book names again.
        assert!(names.contains(&"顾屿"), "{names:?}");
        assert!(
            found.windows(2).all(|w| w[0].count >= w[1].count),
            "{found:?}"
        );
        // A third-person book whose speech without quote marks says 我 does not.
        let third = [
            "行者道：我说你是个呆子。他笑了，她也笑了，他又笑了。",
            "八戒道：我问你，他去哪了？她说他走了。他不信。",
            "行者道：我笑他不知天高地厚。他恼了，她劝他，他不听，她走了。",
            "“回来啦？”他笑着问。",
        ];
        let found = with_narrator(&third);
        assert!(
            found.iter().all(|d| d.character.name != NARRATOR),
            "{found:?}"
        );
    }

    #[test]
    fn the_narrator_of_a_book_in_the_first_person_has_a_gender_when_the_book_says_it() {
        let narrator = |lines: &[&str]| {
            with_narrator(lines)
                .into_iter()
                .find(|d| d.character.name == NARRATOR)
                .map(|d| d.character.gender)
        };
        // How others address him, what he says of himself.
        let man = [
            "我推开店门，雨还在下。",
            "“陈哥，你可算来了。”",
            "“嗯。”我说。",
            "我一个大男人，总不能看着她哭。",
            "我笑道：“走吧。”",
            "“那你明天别迟到。”我说。",
        ];
        assert_eq!(narrator(&man), Some(Gender::Male));
        let woman = [
            "我推开店门，雨还在下。",
            "“姐，你可算来了。”",
            "“嗯。”我说。",
            "我男朋友在楼下等着。",
            "我笑道：“走吧。”",
            "“那你明天别迟到。”我说。",
        ];
        assert_eq!(narrator(&woman), Some(Gender::Female));
        // Nothing said: no gender; one's brother (我哥) says nothing of oneself.
        let nobody = [
            "我推开店门，雨还在下。",
            "“我哥，他来不了。”",
            "“嗯。”我说。",
            "我笑道：“走吧。”",
            "“那你明天别迟到。”我说。",
        ];
        assert_eq!(narrator(&nobody), Some(Gender::Unknown));
        // Called 夏夏姐 in the quote right before one of hers.
        let called = [
            "我推开店门，雨还在下。",
            "“夏夏姐，你可算来了。”",
            "“嗯。”我说。",
            "“夏夏姐，明天见！”",
            "我笑道：“走吧。”",
            "“那你明天别迟到。”我说。",
        ];
        assert_eq!(narrator(&called), Some(Gender::Female));
    }

    #[test]
    fn the_narrators_family_the_narration_recurs_to_are_characters() {
        let lines = [
            "我推开家门，我妈在厨房里炒菜。",
            "“回来啦？”我妈头也不回。",
            "“嗯。”我说。",
            "我妈把锅铲一放：“洗手，吃饭。”",
            "我笑道：“就来。”",
            "我姐夫在客厅看电视，我哥们儿在楼下喊我。",
            "“那你快点。”我说。",
        ];
        let found = with_narrator(&lines);
        let mother = found.iter().find(|d| d.character.name == "我妈");
        assert!(
            mother.is_some_and(
                |d| d.character.gender == Gender::Female && d.character.aliases == ["妈"]
            ),
            "{found:?}"
        );
        // 我姐夫 is no sister, 我哥们 no brother; and once is not enough.
        assert!(
            found
                .iter()
                .all(|d| d.character.name != "我姐" && d.character.name != "我哥"),
            "{found:?}"
        );
    }

    #[test]
    fn a_book_in_the_first_person_names_the_narrator_in_quotes_and_others_as_subjects() {
        let lines = [
            "我推开店门，雨还在下。",
            "“嘉树，你来了？”",
            "“嗯。”我说。",
            "乔宇背着相机进来了。",
            "“嘉树，这是底片。”她说。",
            "乔宇看了我一眼，没说话。",
            "我笑道：“放那儿吧。”",
            "乔宇收拾好相机，推门走了。",
            "“明天见。”我说。",
        ];
        let found = with_narrator(&lines);
        // 乔宇 opens three clauses of the narration and never a tag.
        assert!(names_of(&found).contains(&"乔宇"), "{found:?}");
        let narrator = found.iter().find(|d| d.character.name == NARRATOR);
        assert!(
            narrator.is_some_and(|d| d.character.aliases == ["嘉树"]),
            "{found:?}"
        );
        // Not in a book told in the third person.
        let third: Vec<&str> = lines
            .iter()
            .map(|l| {
                if l.contains("我说") || l.contains("我笑道") {
                    "“嗯。”他说。"
                } else {
                    l
                }
            })
            .collect();
        let spans = test_spans(&third);
        let views = test_views(&third, &spans);
        let found = discover(std::slice::from_ref(&views));
        assert!(!names_of(&found).contains(&"乔宇"), "{found:?}");
    }

    #[test]
    fn an_english_name_is_a_name_and_an_acronym_is_not() {
        let text = [
            "“早上好。”Lisa笑道。",
            "Lisa端着咖啡：“老板来了吗？”",
            "“那就好。”Lisa说。",
            "CEO说：“开会。”",
            "“好。”林晚说。",
            "CEO说：“快。”",
            "林晚笑道：“走吧。”",
        ];
        let found = discovered(&text);
        let mut names = names_of(&found);
        names.sort_unstable();
        assert_eq!(names, ["Lisa", "林晚"]);
        assert_eq!(latin_name("Kevin说"), Some("Kevin"));
        assert_eq!(latin_name("iPhone响了"), None);
        assert_eq!(latin_name("A4纸"), None);
    }

    #[test]
    fn manners_and_function_words_before_speech_verbs_are_no_names() {
        let mut text = Vec::new();
        for _ in 0..5 {
            text.extend([
                "周大山站起来，挑战似地问：“敢不敢？”",
                "周大山喝了口水，继续说：“后来呢，雨停了。”",
                "台下的人纷纷说：“好！”",
                "周大山笑道：“走。”",
            ]);
        }
        let found = discovered(&text);
        let names = names_of(&found);
        assert_eq!(names, ["周大山"]);
    }

    #[test]
    fn the_other_one_is_no_name() {
        let mut text = Vec::new();
        for _ in 0..6 {
            text.extend([
                "另一位副主任马国雄立刻附和说：“对。”",
                "另一边，周大山笑道：“走。”",
                "另一个寸步不离周大山的人是马国雄。",
                "另一只手提个口袋，马国雄说：“好。”",
                "另一个小伙子也帮腔说话。",
            ]);
        }
        let found = discovered(&text);
        let names = names_of(&found);
        assert!(names.contains(&"马国雄"), "{names:?}");
        assert!(!names.iter().any(|n| n.starts_with('另')), "{names:?}");
    }

    #[test]
    fn kin_is_nobody_of_its_own_but_an_old_one_called_so_by_respect_may_be() {
        let found = |who: &str| {
            let mut text = Vec::new();
            for _ in 0..6 {
                text.extend([
                    "周大山扛着锄头回了家。".to_owned(),
                    format!("{who}说：“早好了。”"),
                    "周大山坐下，问：“娃呢？”".to_owned(),
                    format!("{who}笑道：“睡了。”"),
                ]);
            }
            let lines: Vec<&str> = text.iter().map(String::as_str).collect();
            names_of(&discovered(&lines))
                .iter()
                .map(|n| (*n).to_owned())
                .collect::<Vec<_>>()
        };
        assert!(!found("妻子").contains(&"妻子".to_owned()));
        assert!(found("妈妈").contains(&"妈妈".to_owned()));
    }

    #[test]
    fn what_was_said_is_no_name() {
        // 说完这话后，便…: 话后 had been taken for a name (后 as an empress's title).
        let text = [
            "林秀站在门口，说：",
            "“你快回去吧。”",
            "说完这话后，便转过身走了。",
            "“我记住了。”",
            "说完这话后，便转过身走了。",
            "“明天见。”",
            "说完这话后，便转过身走了。",
            "林秀说：“走吧。”",
            "林秀笑道：“好。”",
        ];
        let found = discovered(&text);
        assert!(
            !names_of(&found).contains(&"话后"),
            "{:?}",
            names_of(&found)
        );
    }

    #[test]
    fn places_and_posts_before_names_are_no_names() {
        let mut text = Vec::new();
        for _ in 0..5 {
            text.extend([
                "石桥镇说：“下雨了。”",
                "他在石桥镇住了三年，又到石桥镇去了。",
                "司机周大山说：“上车。”",
                "周大山笑道：“走。”",
                "路上面有个妇女问他：“回来了？”",
            ]);
        }
        let found = discovered(&text);
        let names = names_of(&found);
        assert!(names.contains(&"周大山"), "{names:?}");
        assert!(!names.iter().any(|n| n.starts_with("路上")), "{names:?}");
        assert!(!names.contains(&"石桥镇"), "{names:?}");
        assert!(!names.contains(&"司机周"), "{names:?}");
    }

    #[test]
    fn one_called_by_name_who_acts_in_the_narration_is_a_name() {
        let mut text = Vec::new();
        for _ in 0..2 {
            text.extend([
                "周大山说：“黑皮，过来。”",
                "黑皮跑了过来。",
                "“天啊，下雨了。”",
                "“二爸，你坐。”",
                "二爸坐下了。",
                "天啊这雨真大。",
            ]);
        }
        let found = discovered(&text);
        let names = names_of(&found);
        assert!(names.contains(&"黑皮"), "{names:?}");
        assert!(!names.contains(&"天啊"), "{names:?}");
        assert!(!names.contains(&"二爸"), "{names:?}");
    }

    #[test]
    fn a_conjunction_before_kin_or_a_surname_opens_no_name() {
        let mut text = Vec::new();
        for _ in 0..6 {
            text.extend([
                "和父亲说：“走吧。”",
                "跟周大山说：“好。”",
                "周大山说：“来了。”",
            ]);
        }
        let found = discovered(&text);
        let names = names_of(&found);
        assert!(names.contains(&"周大山"), "{names:?}");
        assert!(
            !names.iter().any(|n| n.starts_with(['和', '跟'])),
            "{names:?}"
        );
    }

    #[test]
    fn brothers_who_share_a_generation_character_are_each_a_name() {
        let mut text = Vec::new();
        for _ in 0..10 {
            text.extend([
                "邵承山说：“水渠要修。”",
                "邵承海问：“谁出工？”",
                "邵承山点点头。",
                "邵承海笑了。",
            ]);
        }
        // The youngest speaks twice, and opens fewer clauses than either
        // brother: 高 often ends no name (少平高兴地说).
        for _ in 0..3 {
            text.extend(["邵承高站起来。", "邵承高走到门口。", "邵承高看着河。"]);
        }
        text.extend(["邵承高说：“我也去。”", "邵承高喊道：“等等我！”"]);
        let found = discovered(&text);
        let names = names_of(&found);
        for name in ["邵承山", "邵承海", "邵承高"] {
            assert!(names.contains(&name), "{name}: {names:?}");
        }
        assert!(!names.contains(&"邵承"), "{names:?}");
    }

    #[test]
    fn a_dictionary_word_nobody_speaks_to_or_that_never_speaks_is_no_name() {
        let mut text = Vec::new();
        for _ in 0..5 {
            // 平时 opens clauses before a speech verb, but is never spoken to
            // and never stands right before one.
            text.extend([
                "平时他总说：“早点睡。”",
                "苏晚笑道：“好。”",
                "他对苏晚点头。",
            ]);
        }
        text.extend(["平时，大家都在河边。"; 4]);
        let found = discovered(&text);
        let names = names_of(&found);
        assert_eq!(names, ["苏晚"]);
    }

    #[test]
    fn a_traditional_books_common_words_are_words_too() {
        // The dictionary is Simplified: 周圍 (周 a surname) is looked up as
        // 周围, a word, as in a Simplified book.
        let mut text = Vec::new();
        for _ in 0..6 {
            text.extend([
                "周圍的人都說：「好。」",
                "蘇晚笑道：「好。」",
                "他對蘇晚點頭。",
                "周圍一片安靜。",
                "周圍有人笑了。",
            ]);
        }
        assert_eq!(names_of(&discovered(&text)), ["蘇晚"]);
    }

    #[test]
    fn a_given_name_that_opens_clauses_is_an_alias_and_an_adverb_is_no_name() {
        let text = [
            "“走吧。”郝青禾说。",
            "“等等。”郝青禾说。",
            "青禾愣了一下，没有回答。",
            "青禾转过身去。",
            "青禾把门关上了。",
            // 赶紧 opens clauses before speech verbs, but mostly after an adverb.
            "赶紧说：“快来！”",
            "赶紧说：“别动！”",
            "他就赶紧跑了。",
            "大家都赶紧躲开。",
            "她也赶紧站起来。",
        ];
        let found = discovered(&text);
        let names = names_of(&found);
        assert_eq!(names, ["郝青禾"]);
        assert_eq!(found[0].character.aliases, ["青禾"]);
    }

    #[test]
    fn the_start_of_a_word_before_a_speech_verb_is_no_name() {
        let text = [
            "“今天不去了。”周远山说。",
            "开玩笑说：“你也来？”",
            "吞吞吐吐说：“我……”",
            "“走吧。”周远山说。",
            "开玩笑说：“别怕。”",
            "他只好吞吞吐吐说：“那……”",
            "开玩笑说：“好。”",
            "吞吞吐吐说：“嗯。”",
        ];
        let found = discovered(&text);
        let names = names_of(&found);
        assert_eq!(names, ["周远山"]);
    }

    #[test]
    fn old_or_young_and_the_surname_of_one_character_is_that_character() {
        let text = [
            "“开会了。”冯国斌说。",
            "“知道了。”吴月琴小声说。",
            "“人齐了吗？”冯国斌说。",
            "“还没有。”吴月琴小声说。",
            "“再等五分钟。”老冯说。",
            "“好吧。”老冯说。",
            "“我去叫人。”吴月琴说。",
        ];
        let found = discovered(&text);
        let names = names_of(&found);
        assert!(!names.contains(&"老冯"), "{names:?}");
        assert!(!names.contains(&"小声"), "{names:?}");
        let feng = found.iter().find(|d| d.character.name == "冯国斌").unwrap();
        assert_eq!(feng.character.aliases, ["老冯"]);
    }

    #[test]
    fn a_surname_with_an_office_title_is_the_character_it_stands_beside() {
        // Two people surnamed 韩; the book writes 科长韩立平 twice.
        let text = [
            "“开会了。”韩立平说。",
            "“知道了。”韩秋月说。",
            "“人齐了吗？”韩立平说。",
            "“还没有。”韩秋月说。",
            "科长韩立平站起来，看了看表。",
            "“再等五分钟。”韩科长说。",
            "大家都知道科长韩立平的脾气。",
            "“好吧。”韩科长说。",
            "“我去叫人。”汪老师说。",
            "“快点。”汪老师说。",
        ];
        let found = discovered(&text);
        let names = names_of(&found);
        assert!(!names.contains(&"韩科长"), "{names:?}");
        let han = found.iter().find(|d| d.character.name == "韩立平").unwrap();
        assert_eq!(han.character.aliases, ["韩科长"]);
        assert_eq!(han.count, 4);
        // Nobody surnamed 汪 is named in full: the title stays a character.
        assert!(names.contains(&"汪老师"), "{names:?}");

        // Without the title beside one of them, 韩科长 could be either.
        let text: Vec<&str> = text
            .iter()
            .map(|l| {
                if l.starts_with("科长") || l.starts_with("大家") {
                    "这时候大家都笑了。"
                } else {
                    *l
                }
            })
            .collect();
        let spans = test_spans(&text);
        let views = test_views(&text, &spans);
        let names: Vec<String> = discover(&[views])
            .into_iter()
            .map(|d| d.character.name)
            .collect();
        assert!(names.contains(&"韩科长".to_owned()), "{names:?}");
    }

    #[test]
    fn a_surname_with_an_office_title_is_the_one_named_in_the_same_chapters() {
        let one = [
            "“开会了。”韩立平说。",
            "“人齐了吗？”韩科长说。",
            "“齐了。”汪老师说。",
        ];
        let two = [
            "“再等等。”韩立平说。",
            "“好吧。”韩科长说。",
            "“我去叫人。”汪老师说。",
        ];
        let three = ["“吃饭了。”韩秋月说。", "“来了。”韩秋月说。"];
        let spans: Vec<_> = [&one[..], &two, &three].map(test_spans).into();
        let chapters = vec![
            test_views(&one, &spans[0]),
            test_views(&two, &spans[1]),
            test_views(&three, &spans[2]),
        ];
        let found = discover(&chapters);
        let han = found.iter().find(|d| d.character.name == "韩立平").unwrap();
        assert_eq!(han.character.aliases, ["韩科长"], "{found:?}");
    }
}
