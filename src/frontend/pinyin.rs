//! Text → tone-numbered pinyin, one syllable per Han character
//! (lowercase, `v` for ü, tone 5 for neutral), read in context.
//!
//! Each run of Han characters is segmented into the fewest dictionary
//! phrases (per-book lexicon words first); a polyphonic character then takes
//! the reading the [`polyphone`](super::polyphone) model chooses from its
//! phrase reading and neighbours. Lookups use Simplified characters, so
//! Traditional text reads the same.

use std::borrow::Cow;

use crate::text::is_han;

use super::dictionary::Dictionary;
use super::lexicon::Lexicon;
use super::polyphone::{Features, Model, word_hash};

/// A syllable's reading (`hao3`): borrowed from the embedded data for
/// nearly every character, owned only where it was made (a neutral tone, a
/// sandhi tone, a lexicon entry).
pub type Reading = Cow<'static, str>;

/// `reading` said with the neutral tone (`dao4` → `dao5`).
pub(super) fn neutral_tone(reading: &str) -> Reading {
    format!(
        "{}5",
        reading.trim_end_matches(|c: char| c.is_ascii_digit())
    )
    .into()
}

/// How rare a word is for the segmenter's tie-break: a frequency rank
/// ([`super::dictionary::Phrase::rank`], 0 for a word jieba lacks) turned
/// into a cost, lower for commoner words.
fn rarity(rank: u8) -> u32 {
    u32::from(100_u8.saturating_sub(rank))
}

/// Added to the [`rarity`] of a word without readings (`data/words.tsv`):
/// more than any words' rarities, so it loses every tie against words with
/// readings (这|时候, not 这时|候) while it may still save a word (门外|传来
/// against 门|外传|来).
const NO_READINGS: u32 = 1000;

/// Segmentation cost of each character outside a lexicon word (see
/// `Analysis::segment`): more than any count of words can make up.
const OUTSIDE_LEXICON: u32 = 1000;

/// The pinyin of each character of `text`: `Some(syllable)` for a Han
/// character with a known reading, `None` for anything else.
pub fn syllables(text: &str) -> Vec<Option<Reading>> {
    syllables_with(text, &Lexicon::new())
}

/// Like [`syllables`], with a per-book lexicon's readings taking precedence.
pub fn syllables_with(text: &str, lexicon: &Lexicon) -> Vec<Option<Reading>> {
    let analysis = Analysis::new(text, lexicon);
    let model = Model::embedded();
    (0..analysis.len())
        .map(|i| analysis.reading(i, model))
        .collect()
}

/// The lexical pinyin of each character of `text` as `tingshu pinyin`
/// prints it: lexicon readings first, and `say` replacements that keep the
/// word's length read in place of the word.
pub fn lexical(text: &str, lexicon: &Lexicon) -> Vec<Option<Reading>> {
    if lexicon.entries().iter().any(|e| e.say.is_some()) {
        let replaced = super::normalize::replace_words(text, lexicon, true);
        let mut readings = syllables_with(&replaced, lexicon);
        // Keep non-Han characters of the original as non-Han.
        for (r, c) in readings.iter_mut().zip(text.chars()) {
            if !is_han(c) {
                *r = None;
            }
        }
        return readings;
    }
    syllables_with(text, lexicon)
}

/// Dictionary reading of one character, without context.
pub fn syllable(c: char) -> Option<String> {
    if !is_han(c) {
        return None;
    }
    Dictionary::get().default_reading(c).map(str::to_owned)
}

/// Normalizes a tone-numbered syllable: `ü` → `v`, a missing tone → 5.
pub fn tone_numbered(raw: &str) -> String {
    let mut s: String = raw
        .chars()
        .map(|c| if c == 'ü' { 'v' } else { c })
        .collect();
    if !s.ends_with(|c: char| c.is_ascii_digit()) {
        s.push('5');
    }
    s
}

/// Traditional characters that OpenCC leaves alone (they are also valid
/// Simplified characters) or maps one way, but that often stand for
/// another Simplified one: 睡著 → 睡着, 明瞭 → 明了, 乾坤 (乾 → 干 in the
/// map) → 乾坤.
const AMBIGUOUS_TRADITIONAL: [(char, char); 3] = [('著', '着'), ('瞭', '了'), ('干', '乾')];

/// A phrase ending, looked up as written (in Simplified) and with
/// ambiguous Traditional characters read as their other form: `None` when
/// no phrase ends this way in either form, else the phrase it is, if any
/// (as written first).
fn ending_either_script(word: &str) -> Option<Option<super::dictionary::Phrase>> {
    let dict = Dictionary::get();
    let as_written = dict.ending(word);
    if !word.contains(['著', '瞭', '干']) {
        return as_written;
    }
    match (as_written, dict.ending(&alternative_form(word))) {
        (None, None) => None,
        (a, b) => Some(a.flatten().or(b.flatten())),
    }
}

fn alternative_form(word: &str) -> String {
    word.chars()
        .map(
            |c| match AMBIGUOUS_TRADITIONAL.iter().find(|(t, _)| *t == c) {
                Some(&(_, s)) => s,
                None => c,
            },
        )
        .collect()
}

/// Where a segmented word's reading comes from.
#[derive(Debug, Clone, Copy)]
enum Source<'l> {
    Single,
    /// A common word without a reading of its own (jieba's, in
    /// `data/words.tsv`): it keeps phrases from taking its characters, which
    /// are then read as if alone.
    Word,
    Phrase(&'static str),
    Lexicon(&'l [String]),
}

#[derive(Debug, Clone, Copy)]
struct Word<'l> {
    start: usize,
    len: usize,
    source: Source<'l>,
}

/// Characters whose reading the polyphone model's narrative rules set
/// outside its candidates (得 地 着 只 儿 子): never read by the short cut of
/// [`Analysis::sole_reading`].
const PARTICLES: &str = "得地着著只儿子";

/// Everyday words whose second syllable is neutral (轻声) but which the
/// phrase data writes in full tones (知道 dao4, 衣服 fu2) or lacks (告诉,
/// 东西 as a thing, 故事). Most are from the neutral-tone word list of the
/// national Putonghua proficiency test (普通话水平测试用必读轻声词语). Words
/// whose full-tone reading is a different word (兄弟 brothers, 地道 a
/// tunnel, 人家 a household, 门道 a doorway, 字号 a font size) are chosen
/// by context in [`Analysis::neutral_in_context`]; left in full tones as
/// the CPP set writes them: 关系, 知识, 码头, 妥当, 耽搁, 街坊, 作坊, 裁缝.
static NEUTRAL_SECOND: std::sync::LazyLock<rustc_hash::FxHashSet<[char; 2]>> =
    std::sync::LazyLock::new(|| {
        const WORDS: &str = "知道 衣服 漂亮 认识 舒服 地方 打算 豆腐 商量 收拾 休息 凉快 \
            丈夫 亲戚 和尚 泥巴 核桃 玻璃 刺猬 扫帚 簸箕 风筝 灯笼 胳膊 脊梁 琢磨 打听 溜达 \
            结实 体面 困难 心思 规矩 早上 姐夫 妹夫 大爷 打扮 打量 糊涂 模糊 含糊 迷糊 干净 \
            东家 行李 石匠 徒弟 女婿 咳嗽 喷嚏 蚂蚱 应付 告诉 东西 动静 痛快 媳妇 学问 买卖 \
            生意 故事 外甥 木匠 哆嗦 啰嗦 高粱 \
            吩咐 念叨 嘱咐 哈欠 晃荡 在乎 磨蹭 招呼 嘀咕 张罗 比划 巴结 挖苦 \
            合同 队伍 眉毛 葫芦 师傅 相声 苍蝇 蘑菇 算盘 芝麻 棉花 庄稼 粮食 亮堂 利索 麻利 \
            机灵 客气 勤快 记性 脾气 福气 小气 窝囊 疙瘩 \
            白净 本事 别扭 包涵 扁担 补丁 答应 打发 道士 提防 弟兄 动弹 贩子 膏药 闺女 \
            行当 红火 火候 记号 见识 将就 金子 口袋 老婆 累赘 利落 连累 冒失 苗条 能耐 \
            娘家 盘算 铺盖 上司 少爷 师父 石榴 拾掇 收成 首饰 岁数 挑剔 跳蚤 委屈 稳当 \
            吓唬 乡下 胭脂 烟筒 吆喝 应酬 月饼 扎实 栅栏 丈人 转悠 状元 祖宗 财主 差事 \
            称呼 耷拉 拨弄 棒槌 帮手 思量 皇上";
        WORDS
            .split_whitespace()
            .filter_map(|w| {
                let mut c = w.chars();
                Some([c.next()?, c.next()?])
            })
            .collect()
    });

/// A line split into characters and words, ready for reading.
pub struct Analysis<'l> {
    original: Vec<char>,
    simplified: Vec<char>,
    simplified_text: String,
    /// Byte offset of each character in `simplified_text` (+ the end).
    offsets: Vec<usize>,
    /// For each character, the index of its word in `words` (Han only).
    word_of: Vec<Option<usize>>,
    words: Vec<Word<'l>>,
}

impl<'l> Analysis<'l> {
    pub fn new(text: &str, lexicon: &'l Lexicon) -> Analysis<'l> {
        let dict = Dictionary::get();
        let original: Vec<char> = text.chars().collect();
        let simplified: Vec<char> = original.iter().map(|&c| dict.simplified(c)).collect();
        let simplified_text: String = simplified.iter().collect();
        let mut offsets = Vec::with_capacity(simplified.len() + 1);
        let mut at = 0;
        for c in &simplified {
            offsets.push(at);
            at += c.len_utf8();
        }
        offsets.push(at);
        let mut analysis = Analysis {
            word_of: vec![None; original.len()],
            original,
            simplified,
            simplified_text,
            offsets,
            words: Vec::new(),
        };
        let mut i = 0;
        while i < analysis.original.len() {
            if !is_han(analysis.original[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < analysis.original.len() && is_han(analysis.original[i]) {
                i += 1;
            }
            analysis.segment(start, i, lexicon);
        }
        analysis
    }

    pub fn len(&self) -> usize {
        self.original.len()
    }

    /// For each character, the index of the segmented word that holds it
    /// (`None` outside Han runs).
    pub fn word_ids(&self) -> &[Option<usize>] {
        &self.word_of
    }

    pub fn is_empty(&self) -> bool {
        self.original.is_empty()
    }

    fn slice(&self, start: usize, end: usize) -> &str {
        &self.simplified_text[self.offsets[start]..self.offsets[end]]
    }

    /// Cheapest segmentation of the Han run `start..end`. Lexicon words
    /// come first: every character outside one costs [`OUTSIDE_LEXICON`],
    /// so a lexicon entry wins even inside a longer dictionary word (`好`
    /// in 好人, `银行` in 银行卡). Then the fewest words win (2 each, 4 for
    /// a word of the extra phrase list that starts with 子, a lexicon word
    /// 1); among equals the commoner words ([`rarity`]: 联系|好, not
    /// 联|系好; 宿舍|去, not 宿|舍去), a word without readings losing to
    /// any with them ([`NO_READINGS`]), and then the longer last word
    /// (backward maximum matching: 让|儿子, not 让儿|子).
    fn segment(&mut self, start: usize, end: usize, lexicon: &'l Lexicon) {
        let dict = Dictionary::get();
        let max_len = dict.max_phrase_chars().max(lexicon.max_chars());
        let n = end - start;
        // best[j] = (cost of start..start+j, last word); among equal costs
        // the longer last word wins (backward maximum matching: 眯着|眼睛).
        let empty = Word {
            start,
            len: 0,
            source: Source::Single,
        };
        // best[j] = ((cost, rarity) of start..start+j, last word).
        let mut best: Vec<((u32, u32), Word<'l>)> = vec![((0, 0), empty); n + 1];
        for j in 1..=n {
            let last = start + j - 1;
            let (cost, rare) = best[j - 1].0;
            let mut choice = (
                (
                    cost + 2 + OUTSIDE_LEXICON,
                    rare + rarity(dict.char_rank(self.simplified[last])),
                ),
                Word {
                    start: last,
                    len: 1,
                    source: Source::Single,
                },
            );
            for len in 1..=max_len.min(j) {
                let at = start + j - len;
                let word = self.slice(at, start + j);
                let lexicon_entry = (len <= lexicon.max_chars())
                    .then(|| lexicon.lookup_simplified(word))
                    .flatten()
                    .and_then(|e| e.pinyin.as_deref());
                let found = match lexicon_entry {
                    Some(p) => Some((1, 0, Source::Lexicon(p))),
                    None if len < 2 || self.adverbial_de(at) => None,
                    None => {
                        let Some(phrase) = ending_either_script(word) else {
                            // No longer phrase ends here either.
                            if len >= lexicon.max_chars() {
                                break;
                            }
                            continue;
                        };
                        phrase.map(|p| {
                            // A rare word of the extra list that starts
                            // with 子 (子来, 子都, 子口: names, classical
                            // words) counts as two: it loses to the noun
                            // suffix of the word before (日子|来, not 日|子来;
                            // 多日|子来 would win by a word otherwise).
                            let word = if !p.common && word.starts_with('子') {
                                4
                            } else {
                                2
                            };
                            let (rare, source) = if p.readings.is_empty() {
                                (rarity(p.rank) + NO_READINGS, Source::Word)
                            } else {
                                (rarity(p.rank), Source::Phrase(p.readings))
                            };
                            (word + OUTSIDE_LEXICON * len as u32, rare, source)
                        })
                    }
                };
                if let Some((cost, rare, source)) = found {
                    let (before, before_rare) = best[j - len].0;
                    let total = (before + cost, before_rare + rare);
                    if total < choice.0 || (total == choice.0 && len > choice.1.len) {
                        choice = (
                            total,
                            Word {
                                start: at,
                                len,
                                source,
                            },
                        );
                    }
                }
            }
            best[j] = choice;
        }
        let mut words = Vec::new();
        let mut j = n;
        while j > 0 {
            let word = best[j].1;
            if let Source::Word = word.source {
                // Known only to segmentation (门外|传来, which keeps 外传
                // from taking 外): read as characters of their own.
                words.extend((0..word.len).rev().map(|k| Word {
                    start: word.start + k,
                    len: 1,
                    source: Source::Single,
                }));
            } else {
                words.push(word);
            }
            j -= word.len;
        }
        for word in words.into_iter().rev() {
            for k in word.start..word.start + word.len {
                self.word_of[k] = Some(self.words.len());
            }
            self.words.push(word);
        }
    }

    /// Whether character `at` is a 地 after a reduplication (慢慢地, 轻轻地):
    /// the particle, never the start of a phrase such as 地转.
    fn adverbial_de(&self, at: usize) -> bool {
        at >= 2
            && self.simplified[at] == '地'
            && self.simplified[at - 1] == self.simplified[at - 2]
            && is_han(self.original[at - 1])
    }

    /// The model's view of character `i`, with its word's text; `None` for
    /// a character outside any word (not Han).
    pub fn features(&self, i: usize) -> Option<(Features, &str)> {
        let word = self.words[self.word_of[i]?];
        let dict = Dictionary::get();
        let c = self.simplified[i];
        let mut candidates: Cow<'static, [&'static str]> = dict.readings(self.original[i]).into();
        // A Traditional character's list can lack readings of its
        // Simplified form (剝 bo1 only, 剥 bao1 and bo1). Not so for 乾 and
        // 幹, two of the three characters 干 merges: 乾 (dry, 乾杯) is never
        // gan4, 幹 (to do) never gan1.
        if c != self.original[i] && !matches!(self.original[i], '乾' | '幹') {
            for r in dict.readings(c) {
                if !candidates.contains(r) {
                    candidates.to_mut().push(r);
                }
            }
        }
        // 乾 on its own is dry (乾了一杯, 把酒乾了) but in the heaven of
        // 乾坤, the trigram (乾象, 乾方) and the names 乾隆, 乾清宫, 乾陵, which
        // the phrase data lacks.
        if self.original[i] == '乾'
            && word.len == 1
            && !self
                .simplified
                .get(i + 1)
                .is_some_and(|n| "坤隆卦宫元清陵县道象方位".contains(*n))
            && !(i > 0 && self.simplified[i - 1] == '坤')
        {
            candidates = Cow::Borrowed(&["gan1"]);
        }
        let phrase_reading = match word.source {
            Source::Phrase(p) => p.split(' ').nth(i - word.start),
            _ => None,
        };
        if let Some(p) = phrase_reading
            && !candidates.contains(&p)
        {
            candidates.to_mut().push(p);
        }
        let text = self.slice(word.start, word.start + word.len);
        let features = Features {
            c,
            prev: if i == 0 {
                '\u{2}'
            } else {
                self.simplified[i - 1]
            },
            next: self.simplified.get(i + 1).copied().unwrap_or('\u{3}'),
            next2: self.simplified.get(i + 2).copied().unwrap_or('\u{3}'),
            next3: self.simplified.get(i + 3).copied().unwrap_or('\u{3}'),
            prev2: if i < 2 {
                '\u{2}'
            } else {
                self.simplified[i - 2]
            },
            single: word.len == 1,
            word: word_hash(text),
            dict: phrase_reading,
            candidates,
            neutral: self.neutral_second(i, word),
            after_adverbial: c == '地' && self.after_adverbial(i),
            chess: c == '车' && self.about_chess(),
        };
        Some((features, text))
    }

    /// Whether the line is about Chinese chess: it names the game or a
    /// side (棋, 红方, 黑方, 楚河). Not 帅 or 卒, which 元帅 and 士卒 use.
    fn about_chess(&self) -> bool {
        self.simplified_text.contains('棋')
            || ["红方", "黑方", "楚河"]
                .iter()
                .any(|w| self.simplified_text.contains(w))
    }

    /// Whether a word of [`Dictionary::is_adverbial`] ends just before
    /// character `i` (兴奋|地, 手忙脚乱|地).
    fn after_adverbial(&self, i: usize) -> bool {
        let dict = Dictionary::get();
        // A verb of being or naming takes 地 as a noun (叫做地灵县, 正是地…).
        if i == 0 || "是做为叫称作有在".contains(self.simplified[i - 1]) {
            return false;
        }
        (2..=4.min(i)).any(|k| {
            self.original[i - k..i].iter().all(|&c| is_han(c))
                && dict.is_adverbial(self.slice(i - k, i))
        })
    }

    /// The reading of character `i`.
    pub fn reading(&self, i: usize, model: &Model) -> Option<Reading> {
        let word = self.words[self.word_of[i]?];
        if let Source::Lexicon(p) = word.source {
            return p.get(i - word.start).map(|r| Cow::Owned(r.clone()));
        }
        if let Some(only) = self.sole_reading(i, word) {
            return Some(if self.neutral_second(i, word) {
                neutral_tone(only)
            } else {
                Cow::Borrowed(only)
            });
        }
        let (features, _) = self.features(i)?;
        model.read(&features)
    }

    /// The reading of character `i` when it has only one to choose from:
    /// one dictionary reading, which its phrase (if any) agrees with. The
    /// model would choose the same; skipping it saves most of the work on
    /// ordinary text. `None` for a polyphone or a particle the narrative
    /// rules may change.
    fn sole_reading(&self, i: usize, word: Word<'_>) -> Option<&'static str> {
        let dict = Dictionary::get();
        let (c, original) = (self.simplified[i], self.original[i]);
        if PARTICLES.contains(c) {
            return None;
        }
        let &[only] = dict.readings(original) else {
            return None;
        };
        if c != original && dict.readings(c).iter().any(|r| *r != only) {
            return None;
        }
        if let Source::Phrase(p) = word.source
            && p.split(' ').nth(i - word.start) != Some(only)
        {
            return None;
        }
        Some(only)
    }

    /// Second syllables that are neutral in speech whatever the phrase data
    /// says: reduplicated kinship terms (弟弟, 叔叔) and the erhua of
    /// 这儿, 那儿, 哪儿.
    fn neutral_second(&self, i: usize, word: Word<'_>) -> bool {
        const KINSHIP: &str = "爸妈哥姐弟妹爷奶叔婶舅姑姨伯婆公姥";
        // Verbs said twice for a short try (歇歇, 看看, 想想): the second
        // is neutral. Not 等等 (and so on).
        const TRIED_VERBS: &str = "歇看想试说走听问坐找尝聊猜瞧瞅洗转逛玩谈算揉拍摸闻动";
        // 东西 as two directions (东西两头, 东西走向, 东西南北), not a thing.
        const DIRECTIONS_AFTER: &str = "两走向方南长宽";
        // 在乎 (to care) split by the segmenter (不在|乎): neutral before a
        // clause end or its object; the classical 在乎 (lies in: 在乎山水之间)
        // keeps hu1.
        if i > 0 && self.simplified[i] == '乎' && self.simplified[i - 1] == '在' {
            let next = self.simplified.get(i + 1).copied().unwrap_or(' ');
            return !crate::text::is_han(next) || "了过什么这那谁你我他她钱的别".contains(next);
        }
        // The last two characters of a word of two or three (知道, 回娘家,
        // 苦差事), but not of 大丈夫 (a real man, fu1). Idioms of four keep
        // their full tones (一发不可收拾, 糊里糊涂).
        let pair = i == word.start + word.len - 1
            && (word.len == 2 || word.len == 3 && self.simplified[i - 2..=i] != ['大', '丈', '夫']);
        // Two lone characters the phrase data lacks (告诉, 东西, 故事).
        let lone =
            word.len == 1 && i > 0 && self.word_of[i - 1].is_some_and(|w| self.words[w].len == 1);
        if !pair && !lone {
            return false;
        }
        let (first, second) = (self.simplified[i - 1], self.simplified[i]);
        let next = self.simplified.get(i + 1).copied().unwrap_or(' ');
        if [first, second] == ['东', '西'] && DIRECTIONS_AFTER.contains(next) {
            return false;
        }
        (pair && first == second && KINSHIP.contains(first))
            || (first == second && TRIED_VERBS.contains(first))
            || (pair && second == '儿' && "这那哪".contains(first))
            || NEUTRAL_SECOND.contains(&[first, second])
            || self.neutral_in_context(i - 1, [first, second], next)
    }

    /// Words with two readings whose neutral one the context chooses
    /// (`start` is the word's first character):
    /// - 地道, 精神, 斯文 as adjectives: after a degree adverb or the 得 of
    ///   a complement (很地道, 挺精神, 长得斯文); not the tunnel, the spirit
    ///   or 斯文扫地; 大意 careless unless it is the gist (文章的大意,
    ///   段落大意, 大意是…);
    /// - 人家 standing for a person (人家不愿意, 给人家添麻烦), not a
    ///   household (一户人家, 这里人家, 人家庄院);
    /// - 多少 asking how many (多少钱, 有多少？), not "more or less" (多少有点);
    /// - 大方, 实在, 世故 as adjectives, 兄弟 a pal, 干事 an officer, 门道 a
    ///   knack, 老字号, 个子 height (each against its full-tone word).
    fn neutral_in_context(&self, start: usize, word: [char; 2], next: char) -> bool {
        const DEGREE: &str = "很真挺太好够更最蛮极得不";
        const PERSON_BEFORE: &str = "给跟和对让叫被求怪帮替问";
        const HOUSEHOLD_AFTER: &str = "庄院门里屋户借住姓的";
        const MORE_OR_LESS_AFTER: &str = "有也会还总带能都要可少";
        let at = |back: usize| {
            start
                .checked_sub(back)
                .and_then(|k| self.simplified.get(k))
                .copied()
                .unwrap_or(' ')
        };
        let before = at(1);
        match word {
            ['地', '道'] | ['精', '神'] | ['斯', '文'] => DEGREE.contains(before),
            // The gist has its markers (文章的大意, 段落大意, 大意是…);
            // otherwise 大意 is careless (不能大意, 一时大意).
            ['大', '意'] => !"的文段章落句主".contains(before) && !"是为如".contains(next),
            // Generous (很大方, 大方地), not the experts of 贻笑大方.
            ['大', '方'] => DEGREE.contains(before) || next == '地',
            // Honest (人很实在), worldly-wise (太世故), not really (实在走不动)
            // or the ways of the world (人情世故).
            ['实', '在'] | ['世', '故'] => DEGREE.contains(before),
            // A brother or a pal (是我兄弟, 好兄弟), not brothers (兄弟俩,
            // 他们兄弟, 西游记's 我兄弟 for "we brothers").
            ['兄', '弟'] => {
                (before == '好' || "我你他她".contains(before) && "是的个".contains(at(2)))
                    && !"俩们两二三四五几姐之各等众".contains(next)
            }
            // An officer (当干事, 宣传干事); not 干事 (to work: 他干事从不拖拉).
            ['干', '事'] => "当个位名任传部".contains(before),
            // The knack (门道), not a doorway (门道里) or a gate and "said"
            // (到于门道：“…).
            ['门', '道'] => !"里口中上内外：:“\"".contains(next),
            // A shop's name (老字号), not a font size (字号太小).
            ['字', '号'] => before == '老',
            // Height (个子不高, 大个子), not a measure word before 子…
            // (三个子分期).
            ['个', '子'] => {
                !"一二三四五六七八九十两几这那每某哪".contains(before) && next != '弹'
            }
            // Embarrassing (难为情) keeps wei2; 难为你了 is neutral.
            ['难', '为'] => next != '情',
            // The young man (你这小子), not 小子弹.
            ['小', '子'] => next != '弹',
            // Attending to (打点行李), not a drip (打点滴).
            ['打', '点'] => next != '滴',
            // Only where a pronoun stands: opening a clause or after a
            // verb of giving or asking, and not before what a household
            // has (庄, 院, 门 …): 西游记's 一村人家, 这里人家 are households.
            ['人', '家'] => {
                (!crate::text::is_han(before) || PERSON_BEFORE.contains(before))
                    && !HOUSEHOLD_AFTER.contains(next)
            }
            // 没有多少人员 (not many), as the dictionaries and CPP read it.
            ['多', '少'] => {
                let more_or_less = MORE_OR_LESS_AFTER.contains(next)
                    || "没不".contains(before)
                    || (before == '有' && at(2) == '没');
                !more_or_less
            }
            _ => false,
        }
    }
}

/// Renders text for synthesis (the [`Spoken::pinyin`](super::Spoken)
/// string): Han characters as syllables, Chinese punctuation as the ASCII
/// marks espeak-ng phrases by, each run of ASCII letters a token of its own
/// (never glued to a syllable), a leftover digit as its Chinese syllable,
/// everything else a space.
pub fn speakable(text: &str, readings: &[Option<Reading>]) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    // Whether the last thing written is a Latin letter (inside a token).
    let mut in_latin = false;
    for (c, reading) in text.chars().zip(readings) {
        match reading {
            Some(s) => {
                separate(&mut out);
                out.push_str(s);
                out.push(' ');
                in_latin = false;
            }
            None => {
                if c.is_ascii_alphabetic() {
                    if !in_latin {
                        separate(&mut out);
                    }
                    out.push(c);
                    in_latin = true;
                    continue;
                }
                in_latin = false;
                if let Some(mark) = ascii_mark(c) {
                    trim_end_spaces(&mut out);
                    if !out.ends_with(mark.trim_end()) {
                        out.push_str(mark);
                    } else {
                        out.push(' ');
                    }
                } else if let Some(d) = c.to_digit(10).filter(|_| c.is_ascii_digit()) {
                    separate(&mut out);
                    out.push_str(DIGIT_SYLLABLES[d as usize]);
                    out.push(' ');
                } else if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
        }
    }
    out.trim().to_owned()
}

/// [`speakable`] with word boundaries: the syllables of one segmented word
/// joined by `-` (`ni3-hao3, shi4-jie4.`), for voices that phrase by word
/// (Kokoro). `words` are [`Analysis::word_ids`].
pub fn speakable_words(
    text: &str,
    readings: &[Option<Reading>],
    words: &[Option<usize>],
) -> String {
    let plain = speakable(text, readings);
    // Walk the syllables of `plain` alongside the characters that carry
    // readings, joining a syllable to the one before when both belong to
    // the same word.
    let word_of_reading: Vec<Option<usize>> = readings
        .iter()
        .zip(words.iter().chain(std::iter::repeat(&None)))
        .filter(|(r, _)| r.is_some())
        .map(|(_, w)| *w)
        .collect();
    let mut out = String::with_capacity(plain.len());
    let mut index = 0;
    let mut previous_word: Option<usize> = None;
    for token in plain.split(' ') {
        let is_syllable = token
            .trim_end_matches([',', '.', '!', '?'])
            .ends_with(|c: char| c.is_ascii_digit())
            && token.chars().next().is_some_and(|c| c.is_ascii_lowercase());
        if is_syllable {
            let word = word_of_reading.get(index).copied().flatten();
            if !out.is_empty() {
                let joined =
                    word.is_some() && word == previous_word && !out.ends_with([',', '.', '!', '?']);
                out.push(if joined { '-' } else { ' ' });
            }
            out.push_str(token);
            previous_word = word;
            index += 1;
        } else {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(token);
            previous_word = None;
        }
    }
    out
}

const DIGIT_SYLLABLES: [&str; 10] = [
    "ling2", "yi1", "er4", "san1", "si4", "wu3", "liu4", "qi1", "ba1", "jiu3",
];

/// Ends `out` with a space unless it is empty or already does.
fn separate(out: &mut String) {
    if !out.is_empty() && !out.ends_with(' ') {
        out.push(' ');
    }
}

/// The words of a line as [`speakable`] sends them, without phrasing marks:
/// Han syllables and Latin tokens in order (what `tingshu pinyin` prints).
pub fn spoken_tokens<'a>(text: &'a str, readings: &'a [Option<Reading>]) -> Vec<&'a str> {
    let mut tokens = Vec::new();
    // Byte range of the Latin run being read.
    let mut latin: Option<(usize, usize)> = None;
    for ((at, c), reading) in text.char_indices().zip(readings) {
        if reading.is_none() && c.is_ascii_alphabetic() {
            latin = Some(latin.map_or((at, at + 1), |(start, _)| (start, at + 1)));
            continue;
        }
        if let Some((start, end)) = latin.take() {
            tokens.push(&text[start..end]);
        }
        if let Some(s) = reading {
            tokens.push(s.as_ref());
        }
    }
    if let Some((start, end)) = latin {
        tokens.push(&text[start..end]);
    }
    tokens
}

/// Whether a token of a [`Spoken::pinyin`](super::Spoken) string is Latin
/// text (ASCII letters only, no tone digit).
pub fn is_latin_token(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_alphabetic())
}

/// Whether a Latin token is spelled letter by letter (all upper case: QQ,
/// GDP, AK) rather than read as a word (iPhone, Hello).
pub fn is_spelled(token: &str) -> bool {
    is_latin_token(token) && token.bytes().all(|b| b.is_ascii_uppercase())
}

fn trim_end_spaces(s: &mut String) {
    while s.ends_with(' ') {
        s.pop();
    }
}

fn ascii_mark(c: char) -> Option<&'static str> {
    Some(match c {
        '，' | '、' | ',' | '；' | ';' | '：' | ':' | '—' | '…' | '～' | '~' | '－' => {
            ", "
        }
        '。' | '.' | '｡' => ". ",
        '！' | '!' => "! ",
        '？' | '?' => "? ",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> String {
        syllables(text)
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn words_are_joined_for_phrasing_voices() {
        let text = "你好，世界。我们走吧";
        let lexicon = Lexicon::new();
        let analysis = Analysis::new(text, &lexicon);
        let model = Model::embedded();
        let readings: Vec<Option<Reading>> = (0..analysis.len())
            .map(|i| analysis.reading(i, model))
            .collect();
        let joined = speakable_words(text, &readings, analysis.word_ids());
        // Syllables of one segmented word are joined, never across
        // punctuation, and nothing else changes.
        assert!(joined.starts_with("ni3-hao3, "), "{joined}");
        assert!(joined.contains("wo3-men5"), "{joined}");
        assert!(!joined.contains(",-") && !joined.contains(".-"), "{joined}");
        assert_eq!(joined.replace('-', " "), speakable(text, &readings));
    }

    #[test]
    fn tone_numbers_with_v_and_neutral_tone() {
        assert_eq!(syllable('好').as_deref(), Some("hao3"));
        assert_eq!(syllable('绿').as_deref(), Some("lv4"));
        assert_eq!(syllable('們').as_deref(), Some("men5"));
        assert_eq!(syllable('a'), None);
    }

    #[test]
    fn phrases_choose_polyphone_readings() {
        assert_eq!(plain("银行"), "yin2 hang2");
        assert_eq!(plain("睡觉"), "shui4 jiao4");
        assert_eq!(plain("重新"), "chong2 xin1");
        assert_eq!(plain("音乐"), "yin1 yue4");
        assert_eq!(plain("長大"), "zhang3 da4");
        assert_eq!(plain("睡著了"), "shui4 zhao2 le5");
        assert_eq!(plain("看著我"), "kan4 zhe5 wo3");
        assert_eq!(plain("乾坤"), "qian2 kun1");
    }

    #[test]
    fn ties_between_splits_go_to_the_commoner_words() {
        // 头|发白 and 头发|白, 联|系好 and 联系|好: as many words each.
        assert_eq!(plain("头发白了"), "tou2 fa4 bai2 le5");
        assert_eq!(plain("联系好了"), "lian2 xi4 hao3 le5");
        assert_eq!(plain("回宿舍去"), "hui2 su4 she4 qu4");
        // Fewest words still comes first: 拳头|发白 over 拳|头发|白.
        assert_eq!(plain("拳头发白"), "quan2 tou5 fa1 bai2");
    }

    #[test]
    fn common_words_without_readings_keep_phrases_out() {
        // 门外|传来 (jieba's words) against 门|外传 (a biography)|来.
        assert_eq!(plain("门外传来"), "men2 wai4 chuan2 lai2");
        assert_eq!(plain("窗外傳來"), "chuang1 wai4 chuan2 lai2");
        assert_eq!(plain("外传"), "wai4 zhuan4");
        // But they lose a tie against a word with readings: 这|时候.
        assert_eq!(plain("这时候"), "zhe4 shi2 hou5");
    }

    #[test]
    fn traditional_qian_is_dry_alone_and_heaven_in_names() {
        assert_eq!(plain("把酒乾了"), "ba3 jiu3 gan1 le5");
        assert_eq!(plain("扭轉乾坤"), "niu3 zhuan3 qian2 kun1");
        assert_eq!(plain("乾隆"), "qian2 long2");
    }

    #[test]
    fn particles_and_erhua_in_narrative() {
        assert_eq!(plain("他跑得快"), "ta1 pao3 de5 kuai4");
        assert_eq!(plain("我得走了"), "wo3 dei3 zou3 le5");
        assert_eq!(plain("慢慢地走"), "man4 man4 de5 zou3");
        assert_eq!(plain("那只小猴儿，"), "na4 zhi1 xiao3 hou2 er5");
        assert_eq!(plain("他让儿子去"), "ta1 rang4 er2 zi5 qu4");
        assert_eq!(plain("头也不抬地说"), "tou2 ye3 bu4 tai2 de5 shuo1");
        assert_eq!(plain("慢慢地转"), "man4 man4 de5 zhuan3");
        assert_eq!(plain("弟弟在这儿"), "di4 di5 zai4 zhe4 er5");
        assert_eq!(plain("眯着眼睛"), "mi1 zhe5 yan3 jing5");
        // After an adjective, adverb, verb or idiom 地 is the particle; after
        // a noun, a verb of being or a place-making verb it is land.
        assert_eq!(plain("他猛烈地咳嗽"), "ta1 meng3 lie4 de5 ke2 sou5");
        assert_eq!(
            plain("手忙脚乱地收拾"),
            "shou3 mang2 jiao3 luan4 de5 shou1 shi5"
        );
        assert_eq!(plain("高粱地里"), "gao1 liang5 di4 li3");
        assert_eq!(plain("叫做地灵县"), "jiao4 zuo4 di4 ling2 xian4");
    }

    #[test]
    fn one_reading_per_scalar() {
        let r = syllables("我a，你");
        assert_eq!(r.len(), 4);
        assert_eq!(r[1], None);
        assert_eq!(r[2], None);
    }

    #[test]
    fn one_character_lexicon_entries_reach_inside_words() {
        let text = "\"好\" = \"hao4\"\n\"银行\" = \"yin2 xing2\"";
        let lexicon = Lexicon::parse(text, std::path::Path::new("l.toml")).unwrap();
        let read = |t: &str| -> String {
            syllables_with(t, &lexicon)
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(read("他是好人"), "ta1 shi4 hao4 ren2");
        assert_eq!(read("银行卡"), "yin2 xing2 ka3");
        // Without the entries the dictionary words stand.
        assert_eq!(plain("好人"), "hao3 ren2");
        assert_eq!(plain("银行卡"), "yin2 hang2 ka3");
    }

    #[test]
    fn lexicon_overrides_dictionary() {
        let lex =
            Lexicon::parse("\"银行\" = \"yin2 xing2\"", std::path::Path::new("l.toml")).unwrap();
        let r: Vec<Reading> = syllables_with("去银行", &lex)
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(r, ["qu4", "yin2", "xing2"]);
    }

    #[test]
    fn speakable_keeps_phrasing() {
        let text = "你好，世界！OK";
        assert_eq!(speakable(text, &syllables(text)), "ni3 hao3, shi4 jie4! OK");
    }

    #[test]
    fn latin_tokens_stand_apart_from_syllables() {
        for (text, want) in [
            ("一条QQ消息", "yi1 tiao2 QQ xiao1 xi5"),
            ("GDP增长", "GDP zeng1 zhang3"),
            ("五G网络", "wu3 G wang3 luo4"),
            ("iPhone打开", "iPhone da3 kai1"),
            ("打开App Store看", "da3 kai1 App Store kan4"),
            ("AK 四十七", "AK si4 shi2 qi1"),
        ] {
            let got = speakable(text, &syllables(text));
            assert_eq!(got, want, "{text}");
            for token in got.split(' ') {
                let t = token.trim_end_matches([',', '.', '!', '?']);
                assert!(
                    is_latin_token(t) || t.bytes().last().is_some_and(|b| b.is_ascii_digit()),
                    "{text}: glued token {token}"
                );
            }
        }
        assert_eq!(
            spoken_tokens("用QQ发，5G", &syllables("用QQ发，5G")),
            ["yong4", "QQ", "fa1", "G"]
        );
        assert!(is_spelled("GDP") && !is_spelled("iPhone") && !is_spelled("AK47"));
    }
}
