//! Choosing the reading of a polyphonic character (多音字) in context.
//!
//! A linear model scores each candidate reading with features of the
//! character's surroundings: whether the phrase dictionary's reading agrees,
//! the neighbouring characters, and the segmented word. The weights are an
//! averaged perceptron fitted on the CPP polyphone data by
//! `scripts/gen-polyphone-model.sh` (see `data/README.md`); characters the
//! model never saw fall back to the phrase reading, then the most common one.
//! A few rules for narrative prose (particles 得 地 着, erhua 儿, measure
//! word 只) override the model for characters outside any phrase.

use std::sync::LazyLock;

use rustc_hash::{FxHashMap, FxHashSet};

const MODEL: &str = include_str!("data/polyphone.tsv");

/// What the model sees of one character.
#[derive(Debug, Clone)]
pub struct Features {
    /// The character (Simplified).
    pub c: char,
    /// Previous and next character of the line (Simplified), `\u{2}` /
    /// `\u{3}` at the line's ends.
    pub prev: char,
    pub next: char,
    /// The character before `prev` (`\u{2}` before the line).
    pub prev2: char,
    /// The character after `next` (`\u{3}` after the line).
    pub next2: char,
    /// The character after `next2` (`\u{3}` after the line).
    pub next3: char,
    /// Whether the character is a word by itself (not in any phrase).
    pub single: bool,
    /// Hash of the segmented word that holds the character ([`word_hash`]).
    pub word: u64,
    /// The phrase dictionary's reading for this character, if it is inside
    /// a dictionary phrase.
    pub dict: Option<&'static str>,
    /// Candidate readings, the most common first.
    /// (Borrowed from the dictionary unless a Traditional form or a phrase
    /// adds one: no allocation for most characters.)
    pub candidates: std::borrow::Cow<'static, [&'static str]>,
    /// Whether the chosen syllable is said with the neutral tone whatever
    /// its reading (the second 弟 of 弟弟, the 儿 of 这儿).
    pub neutral: bool,
    /// For 地: whether an adjective, adverb, verb or idiom of two to four
    /// characters ends just before it (兴奋地, 手忙脚乱地): a lone 地 there
    /// is the adverbial particle de5.
    pub after_adverbial: bool,
    /// For 车: whether the line is about Chinese chess (棋, 红方, 黑方,
    /// 楚河): a lone 车 there is the chariot ju1.
    pub chess: bool,
}

const BIAS: u8 = 0;
const DICT_AGREES: u8 = 1;
const PREV: u8 = 2;
const NEXT: u8 = 3;
const WORD: u8 = 4;
const G_DICT: u8 = 5;
const G_DEFAULT_NO_DICT: u8 = 6;
const G_DEFAULT: u8 = 7;
const KIND_NAMES: [&str; 8] = [
    "bias",
    "dict",
    "prev",
    "next",
    "word",
    "g-dict",
    "g-def-nodict",
    "g-def",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    c: char,
    /// The reading's bytes packed by [`pack`]: hashing and comparing keys
    /// then touches no string.
    reading: u64,
    kind: u8,
    ctx: u64,
}

/// A syllable's ASCII bytes (at most 8; `zhuang1` has 7) in one integer.
fn pack(reading: &str) -> u64 {
    reading
        .bytes()
        .take(8)
        .fold(0, |acc, b| (acc << 8) | u64::from(b))
}

/// The syllable [`pack`] packed.
fn unpack(packed: u64) -> String {
    packed
        .to_be_bytes()
        .iter()
        .filter(|b| **b != 0)
        .map(|&b| char::from(b))
        .collect()
}

/// Weights of the polyphone model.
#[derive(Debug, Default, Clone)]
pub struct Model {
    weights: FxHashMap<Key, f32>,
    chars: FxHashSet<char>,
    /// Context text of each word feature, for writing the model out.
    words: FxHashMap<u64, String>,
}

static EMBEDDED: LazyLock<Model> = LazyLock::new(|| Model::parse(MODEL));

/// [`word_hash`] of 大夫, a word by itself (not 三闾大夫).
const DAFU: u64 = word_hash("大夫");

/// FNV-1a hash of a word, the key of word features.
pub const fn word_hash(word: &str) -> u64 {
    let bytes = word.as_bytes();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    h
}

fn features(f: &Features, reading: &'static str, mut emit: impl FnMut(Key)) {
    let packed = pack(reading);
    let key = |c: char, kind: u8, ctx: u64| Key {
        c,
        // Global features (no character) weigh the same for any reading.
        reading: if c == '\0' { 0 } else { packed },
        kind,
        ctx,
    };
    let default = f.candidates.first().copied();
    emit(key(f.c, BIAS, 0));
    match f.dict {
        Some(d) if d == reading => {
            emit(key('\0', G_DICT, 0));
            emit(key(f.c, DICT_AGREES, 0));
        }
        Some(_) => {}
        None if default == Some(reading) => emit(key('\0', G_DEFAULT_NO_DICT, 0)),
        None => {}
    }
    if default == Some(reading) {
        emit(key('\0', G_DEFAULT, 0));
    }
    emit(key(f.c, PREV, u64::from(f.prev)));
    emit(key(f.c, NEXT, u64::from(f.next)));
    emit(key(f.c, WORD, f.word));
}

impl Model {
    /// The model shipped in the binary.
    pub fn embedded() -> &'static Model {
        &EMBEDDED
    }

    /// Reads the TSV form written by [`Model::write`]; bad lines are skipped.
    pub fn parse(text: &'static str) -> Model {
        let mut model = Model::default();
        for line in text.lines() {
            let mut cols = line.split('\t');
            let (Some(kind), Some(c), Some(reading), Some(ctx), Some(w)) = (
                cols.next(),
                cols.next(),
                cols.next(),
                cols.next(),
                cols.next(),
            ) else {
                continue;
            };
            let Some(kind) = KIND_NAMES.iter().position(|k| *k == kind) else {
                continue;
            };
            let Ok(weight) = w.parse::<f32>() else {
                continue;
            };
            let c = c.chars().next().unwrap_or('\0');
            let kind = kind as u8;
            let ctx = match kind {
                PREV | NEXT => ctx.chars().next().map_or(0, u64::from),
                WORD => word_hash(ctx),
                _ => 0,
            };
            if c != '\0' {
                model.chars.insert(c);
            }
            model.weights.insert(
                Key {
                    c,
                    reading: pack(reading),
                    kind,
                    ctx,
                },
                weight,
            );
        }
        model
    }

    /// Writes the weights as TSV: kind, char, reading, context, weight.
    pub fn write(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let mut rows: Vec<(String, f32)> = self
            .weights
            .iter()
            .filter(|(_, w)| w.abs() >= 5e-4)
            .map(|(k, w)| {
                let c = if k.c == '\0' {
                    String::new()
                } else {
                    k.c.to_string()
                };
                let ctx = match k.kind {
                    PREV | NEXT => char::from_u32(k.ctx as u32)
                        .map(String::from)
                        .unwrap_or_default(),
                    WORD => self.words.get(&k.ctx).cloned().unwrap_or_default(),
                    _ => String::new(),
                };
                let row = format!(
                    "{}\t{c}\t{}\t{ctx}",
                    KIND_NAMES[k.kind as usize],
                    unpack(k.reading)
                );
                (row, *w)
            })
            .collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        for (row, w) in rows {
            writeln!(out, "{row}\t{w:.3}")?;
        }
        Ok(())
    }

    fn score(&self, f: &Features, reading: &'static str) -> f32 {
        let mut s = 0.0;
        features(f, reading, |k| {
            s += self.weights.get(&k).copied().unwrap_or(0.0)
        });
        s
    }

    /// The syllable to say for a character: [`Model::choose`], in the
    /// neutral tone where [`Features::neutral`] asks for it.
    pub fn read(&self, f: &Features) -> Option<super::pinyin::Reading> {
        let chosen = self.choose(f)?;
        Some(if f.neutral {
            super::pinyin::neutral_tone(chosen)
        } else {
            chosen.into()
        })
    }

    /// The reading to use for a character.
    pub fn choose(&self, f: &Features) -> Option<&'static str> {
        if let Some(r) = context_rule(f).filter(|r| f.candidates.contains(r)) {
            return Some(r);
        }
        let chosen = self.score_best(f);
        particle_rule(f).or(chosen)
    }

    fn score_best(&self, f: &Features) -> Option<&'static str> {
        if f.candidates.len() <= 1 || !self.chars.contains(&f.c) {
            return f.dict.or_else(|| f.candidates.first().copied());
        }
        let mut best = None;
        let mut best_score = f32::NEG_INFINITY;
        for &r in f.candidates.iter() {
            let s = self.score(f, r);
            if s > best_score {
                best_score = s;
                best = Some(r);
            }
        }
        best
    }
}

/// Titles and words after a surname (曾先生, 单老师, 解家).
const AFTER_SURNAME: [&str; 14] = [
    "先生", "女士", "小姐", "老师", "太太", "夫人", "老板", "总", "某", "家", "大人", "师傅",
    "教授", "队长",
];

/// Characters that follow the adverb 曾 (曾经, 曾在, 曾是, 不曾见): after any
/// other at the start of a clause, 曾 is the surname.
const AFTER_ADVERB_CENG: &str = "经几有在是想说被把给对向和与跟去来到做见听看用为以也多一亲参身";

/// Surname readings of polyphones (曾 zeng1, 单 shan4, 解 xie4, 仇 qiu2,
/// 朴 piao2, 查 zha1, 区 ou1, 乐 yue4, 覃 qin2).
const SURNAMES: [(char, &str); 9] = [
    ('曾', "zeng1"),
    ('单', "shan4"),
    ('解', "xie4"),
    ('仇', "qiu2"),
    ('朴', "piao2"),
    ('查', "zha1"),
    ('区', "ou1"),
    ('乐', "yue4"),
    ('覃', "qin2"),
];

/// Readings of everyday polyphones in narrative prose that the phrase data
/// and the model (fitted on encyclopaedic text) get wrong: the verb and
/// adjective senses of single characters (头发长得 zhang3, 很薄 bao2, 削苹果
/// xiao1, 数了数 shu3), fixed collocations (似的 shi4, 为人民 wei4, 单于
/// chan2) and surnames at the start of a name. Checked before the model.
/// What 一场 measures as an event rather than a show: weather, illness,
/// dreams, fights, disasters, emptiness (一场空).
const SPELL_OF: &str = "雨雪风病梦战仗灾祸空架噩恶误官火劫浩虚";

/// What someone becomes or is made (拜他为王, 我为齐天大圣, 以他为首):
/// after these 为 is wei2.
const AS_RANK: &str = "王帝君主首帅将官师父兄弟妻夫妾奴婢仆僧臣民齐大上尊长仇友敌伴伍邻";

/// Verbs of naming or making someone something (称他为, 封你为, 追认他为,
/// 以他为寿): the 为 after their object is wei2.
const NAMING: &str = "称呼叫唤立封招以认拜任赐选推奉尊命聘收";

fn context_rule(f: &Features) -> Option<&'static str> {
    let han = |c: char| crate::text::is_han(c);
    // Traditional 著 stays 著 in the Simplified form: read it as 着 here.
    let as_zhe = |c: char| if c == '著' { '着' } else { c };
    let (p, n, n2) = (as_zhe(f.prev), as_zhe(f.next), as_zhe(f.next2));
    let in_set = |c: char, set: &str| set.contains(c);
    // Surnames: after 姓, before a title, or at the start of a clause
    // before a given name (曾国华是…).
    if let Some(&(_, reading)) = SURNAMES.iter().find(|(c, _)| *c == f.c) {
        let next_two: String = [n, n2].iter().collect();
        let titled = AFTER_SURNAME
            .iter()
            .any(|t| next_two.starts_with(t) || (t.chars().count() == 1 && t.starts_with(n)));
        let after_xing = p == '姓';
        let clause_start = !han(p) && han(n) && han(n2);
        // A lone 朴 before a Han character is the (mostly Korean) surname
        // Park: its other uses (朴素, 朴实, 朴刀…) are phrases, but for the
        // sound of blows (劈朴, 朴朴).
        let park = f.c == '朴' && han(n) && n != '朴' && !in_set(p, "朴劈扑噼淳纯质俭简古敦诚厚素");
        let name = f.single
            && (titled
                || after_xing
                || park
                || (f.c == '曾'
                    && (clause_start || "叫找和与跟".contains(p))
                    && !in_set(n, AFTER_ADVERB_CENG)));
        // 单于 is a title, 单家独户 a household on its own.
        if name && !(f.c == '单' && (n == '于' || f.next2 == '独')) {
            return Some(reading);
        }
    }
    let r = match f.c {
        // A doctor (镇上的大夫, 王大夫), not the ancient rank (士大夫, 上大夫,
        // 御史大夫; a longer phrase, 三闾大夫, says which).
        '大' if n == '夫'
            && f.word == DAFU
            && !in_set(p, "士卿上中下史医")
            && !(p == '的' && f.prev2 == '国') =>
        {
            "dai4"
        }
        // Chess: the chariot takes a piece (车吃马, 出车吃炮).
        '车' if n == '吃' && in_set(n2, "马炮象相士仕卒兵将帅车") => "ju1",
        // A dozen after a numeral (一打啤酒, 两打鸡蛋).
        '打' if in_set(p, "一两几半") && in_set(n, "啤鸡铅毛袜信纸瓶罐盒笔玫") => {
            "da2"
        }
        // Mahjong: winning a hand (和牌, 自摸和, 我和了！, “和了！”, 他和了个
        // 大的, 一连和了三把, 截和).
        '和' if n == '牌'
            || in_set(p, "摸截")
            || n == '了' && !han(n2) && (in_set(p, "我你他她谁又就也") || !han(p))
            || n == '了'
                && in_set(p, "我你他她谁又就也连")
                && in_set(n2, "个好三两几把")
                && !in_set(f.next3, "人句声口")
            || p == '连' && f.prev2 == '一' && n == '了' =>
        {
            "hu2"
        }
        // Chess: 弃车保帅, 车马炮, a lone 车 on a line about the game.
        '车' if p == '弃' && n == '保' || n == '马' && n2 == '炮' || f.chess && f.single => {
            "ju1"
        }
        // Placing a piece (落子无悔, 一落子).
        '落' if n == '子' && (!han(n2) || in_set(n2, "无有后前即便就")) => "luo4",
        // A peck of grain after a numeral (一斗米, 三斗粮).
        '斗' if in_set(p, "一二两三四五六七八九十百千万几半") && in_set(n, "米粮酒金谷麦豆") => {
            "dou3"
        }
        // A move lost (走错一着, 输了一着).
        '着' | '著' if p == '一' && in_set(f.prev2, "错输差让") => "zhao1",
        // Fond of (好打抱不平, 好管闲事).
        '好' if n == '打' && n2 == '抱' || n == '管' && n2 == '闲' => "hao4",
        // 为人民服务: for, not 为人 (conduct).
        '为' if n == '人' && n2 == '民' => "wei4",
        '似' if in_set(n, "的地") && !"类相近酷貌形神疑看好恰胜".contains(p) => {
            "shi4"
        }
        '单' if n == '于' && (!han(n2) || "的奴王".contains(p)) => "chan2",
        '说' if n == '客' => "shui4",
        // Traditional 著 (OpenCC keeps it): 著作, 名著, 著名.
        '著' if "作名称述者录".contains(n) || "名巨原专论编显".contains(p) => "zhu4",
        // Counting (数了数, 数钱), unless a phrase says otherwise (无数着,
        // 解数).
        '数' if (in_set(n, "了着过一钱落遍清") || p == n) && f.dict != Some("shu4") => {
            "shu3"
        }
        // A line or row (一行字, 这一行的, 两行泪, 几行柳树) after a numeral;
        // 一行人, 一行四众, 两行者 are a party.
        '行' if "两几数".contains(p) && !in_set(n, "人者众")
            || p == '一' && (!han(n) || in_set(n, "的字泪诗楷大小树白雁血黑红绿青"))
            || p == '一' && han(n) && n2 != '人' && f.next3 == '的' =>
        {
            "hang2"
        }
        '应' if n == '声' => "ying4",
        '差' if n == '不' && in_set(n2, "多离") => "cha4",
        '血' if !in_set(n, "淋晕") => "xue4",
        '露' if in_set(n, "出了着面脸个馅底在") && !in_set(p, "暴揭显透披流吐袒裸表败") => {
            "lou4"
        }
        '调' if p == '调' => "tiao2",
        // The 得 of 舍不得, 怪不得, 巴不得, 恨不得, 顾不得, 由不得: neutral.
        '得' if p == '不' && in_set(f.prev2, "舍怪巴恨顾由怨") => "de5",
        // 舍 given up (舍命, 舍生忘死, 舍不得, 施舍), not a house (宿舍, 寒舍).
        '舍' if in_set(n, "命生身弃得不己") || in_set(p, "不难割施取") => "she3",
        // A share or a part (部分, 充分, 过分, 成分, 缘分): the phrase data's
        // fen4 stands; CPP labels nearly every 分 fen1, and the model follows.
        '分' if n == '外' || f.dict == Some("fen4") && n != '子' => "fen4",
        // 分子 as a member of a group (恐怖分子, 知识分子, 积极分子) is fen4;
        // the molecule (水分子) stays fen1.
        '分' if n == '子' && in_set(p, "怖极识罪法对坏动派进端命乱跃") => "fen4",
        // The measure word of an event (一场大雨, 一场病, 做了一场梦, 哭了
        // 一场) is chang2; of a show or a match (一场电影, 两场比赛) chang3.
        '场' if in_set(p, "一两几这那每半整")
            && (in_set(n, SPELL_OF) || n == '大' && in_set(n2, SPELL_OF) || !han(n)) =>
        {
            "chang2"
        }
        // Knocked over (吹倒, 推倒, 撞倒…), not poured; after 打 it is
        // as often the adverb (吃打，倒转…), and 打倒 is a phrase.
        '倒' if in_set(p, "吹推撞砍绊扳踢扑击晕昏病累压摔跌") => "dao3",
        // Courting (处对象): to get along with, not a place.
        '处' if n == '对' && n2 == '象' => "chu3",
        // Where something rises or falls, at a clause's end (风起处，刀落处).
        '处' if in_set(p, "起落") && !han(n) => "chu4",
        // Mixed with water (和面, 和泥), not inside 和尚.
        '和' if in_set(p, "粉面泥") && in_set(n, "好了成匀开起") => "huo2",
        // Strength (使劲, 对劲, 差劲, 起劲) and angles and corners (角度,
        // 角落, 拐角): the phrase data's jin4 and jiao3 stand where CPP's
        // jing4 (强劲, 劲旅) and jue2 (角色) led the model astray.
        '劲' if f.dict == Some("jin4") => "jin4",
        '角' if f.dict == Some("jiao3") => "jiao3",
        // 挣脱, 挣开 zheng4 (like 挣钱), as dictionaries have them; CPP
        // writes zheng1 (5 of its sentences).
        '挣' if in_set(n, "脱开断") => "zheng4",
        // 迷迷糊糊, 含含糊糊, 黑糊糊: hu1, as the phrases say.
        '糊' if (p == '糊' && !in_set(f.prev2, "粉面米") || n == '糊' && !in_set(p, "粉面米"))
            && f.dict == Some("hu1") =>
        {
            "hu1"
        }
        '差' if n == '劲' => "cha4",
        // The measure word of doors and windows (那扇门, 那扇风门, 一扇窗),
        // not fanning (扇着, 扇了一巴掌).
        // (搧, written for the verb only, lists shan1 first.)
        '扇' if in_set(p, "这那哪一两几每半整")
            && han(n)
            && !in_set(n, "着了过动起")
            && f.candidates.first() == Some(&"shan4") =>
        {
            "shan4"
        }
        // Nearly (差点, 差一点儿) and far short (差得远, 差得离谱); not an
        // error's or a gap's (误差, 时差, 落差, 温差, 视差).
        '差' if (n == '点' || n == '得' || n == '一' && n2 == '点')
            && !in_set(p, "误偏时落温视色反公级等极") =>
        {
            "cha4"
        }
        // A deed (勾当), not the Song office title (勾当官, 勾当三班院).
        '勾' if n == '当' && !in_set(n2, "官三公") => "gou4",
        '煞' if n == '气' => "sha4",
        '晃' if n == '眼' => "huang3",
        '卷' if in_set(n, "起了着成住走入进曲发土") || in_set(p, "席翻风") => {
            "juan3"
        }
        // Thin, where the phrase says so (薄纱, 薄片).
        '薄' if f.dict == Some("bao2") => "bao2",
        // The 了 after 走不了 is the particle again (the phrase data's 了了
        // would make it liao3), and 少不了, 少不得 are shao3 (the phrase data
        // writes shao4).
        '了' if p == '了' && f.prev2 == '不' && n != '之' => "le5",
        '少' if n == '不' && in_set(n2, "了得") => "shao3",
        // 一下子, 这下子: the noun suffix, not the extra list's 下子 xia4 zi3.
        '子' if p == '下' && in_set(f.prev2, "一这那") => "zi5",
        // The particle after a word ending in 目 (醒目的, 盲目的, 节目的), not
        // the 目的 (goal) the segmenter found.
        '的' if p == '目'
            && in_set(
                f.prev2,
                "醒注瞩夺悦刺耀触盲题项科节数名面眉书栏条纲细账满心",
            ) =>
        {
            "de5"
        }
        '得' if p == '不' && f.prev2 == '少' => "de5",
        // The particle before 确定/确实 (暂时的确定, 我说的确实是真话), not
        // 的确 (indeed) — but 的确实力 is 的确 + 实力.
        '的' if n == '确'
            && (n2 == '定'
                || n2 == '实' && !in_set(f.next3, "力在")
                // 我的确认码, 你的确认。 (not 的确认为, 的确认识).
                || n2 == '认' && (!han(f.next3) || in_set(f.next3, "码书单函信键件"))) =>
        {
            "de5"
        }
        // Not acceptable (这么做要不得。).
        '得' if p == '不' && f.prev2 == '要' && !han(n) => "de5",
        // Must, before 好好 and a verb (这病得好好治), not a complement
        // (过得好好的).
        '得' if n == '好' && n2 == '好' && han(f.next3) && !in_set(f.next3, "的地") => "dei3",
        // A taxi (打的回去, 打的走了).
        '的' if p == '打' && in_set(n, "回去走过到来") => "di1",
        // Chess: the elephant (飞相), a move (这一着棋, 走错了一着, 高着).
        '相' if p == '飞' => "xiang4",
        // Counted (把钱数了三遍), not a number (岁数了, 次数了).
        '数' if n == '了' && !in_set(p, "岁次人多少无分倍整半定算报心有") => {
            "shu3"
        }
        '着' | '著' if in_set(p, "一高妙绝险昏损怪") && (n == '棋' || !han(n)) => {
            "zhao1"
        }
        // Beaming (乐得合不拢嘴, 乐得直拍手), not the verb 乐得 (glad to).
        '得' if p == '乐' && in_set(n, "合直眉手脚嘴跳哈不什前东西") => "de5",
        // A ponytail or a horse's tail (扎马尾, 马尾辫): mǎwěi; the phrase
        // data's yi3 is the colloquial 马尾儿.
        '尾' if p == '马' && n != '儿' => "wei3",
        // The adverb 着实 (truly), not 看着|实物 or 对着|实验室.
        '着' | '著' if n == '实' && !in_set(n2, "物体际例验质况在话用") => "zhuo2",
        _ if !f.single => return None,
        // Can manage (受得了吗, 好得了。): liao3.
        '了' if p == '得'
            && han(f.prev2)
            // Not after a word ending in 得 (晓得了, 获得了, 记得了).
            && !in_set(f.prev2, "我你他她它们谁就也都还又才只总必可便晓记获赢取懂觉值显使博难免认省舍落求习心了非夺懒会")
            && (!han(n) || in_set(n, "吗么嘛呢")) =>
        {
            "liao3"
        }
        // To grow (长得, 长到, 长起来, 你长这么高了).
        '长' if n == '得'
            // Has (长着一双大眼睛, 长着满脸胡子).
            || n == '着' && in_set(n2, "一两双张副头满")
            || n == '出' && !han(p)
            || n == '到'
            || n == '起' && n2 == '来'
            || in_set(n, "这那") && n2 == '么'
            // Grew taller (长高了, 长胖了).
            || in_set(n, "高胖壮") && (n2 == '了' || !han(n2)) =>
        {
            "zhang3"
        }
        '还' if in_set(n, "钱给债清账书")
            // Paid back to someone (明天就还你。).
            || in_set(n, "你我他她") && (!han(n2) || in_set(n2, "钱债"))
            || (!han(n) && in_set(p, "要得去来不没该归"))
            // Paid back (还了我, 还了钱), not 这还了得.
            || n == '了' && in_set(n2, "我你他她它钱债账款回") =>
        {
            "huan2"
        }
        // Won or caught (得奖, 得了第一, 得了重感冒, 得了癌症).
        '得' if in_set(n, "奖分胜逞")
            || n == '了' && in_set(n2, "第一奖冠病重感癌绝肺胃肝心什")
            || n == '了' && n2 == '个' && in_set(f.next3, "第奖冠满大") =>
        {
            "de2"
        }
        '着' | '著' if n == '火' || n == '了' && in_set(n2, "火魔凉迷") => "zhao2",
        '调' if in_set(n, "高低大小好") => "tiao2",
        '应' if in_set(n, "声答邀试了道") => "ying4",
        // A kind (这种地方, 那种地步, 某种意义), before the sowing of 种地.
        '种' if in_set(p, "这那哪某各此每何一两几多同该本另") && !in_set(n, "了过着下完") => {
            "zhong3"
        }
        '种' if in_set(n, "了下地树菜花田过着玉瓜豆粮麦稻") => "zhong4",
        // Fanning or slapping (扇着, 扇了他一巴掌, 扇灭); 扇 at a clause's
        // end is as often the fan itself (借得真扇。).
        '扇' if in_set(n, "着了过起动灭") => "shan1",
        '差' if in_set(p, "很太真最越更好挺") => "cha4",
        '差' if in_set(p, "趟出公") || n == '事' => "chai1",
        // 不比县城差。, 人差！: worse.
        '差' if !han(n) => "cha4",
        '假' if in_set(p, "请放休天") || in_set(n, "期条日") => "jia4",
        '看' if n == '孩' || n == '着' && in_set(n2, "孩家门") || in_set(n, "守护管住家门") => {
            "kan1"
        }
        '教' if in_set(n, "我你他她它们大人") => "jiao1",
        '累' if in_set(n, "了得死坏极着") || in_set(p, "很太真好劳受拖连疲不挺多也") || !han(n) => {
            "lei4"
        }
        '薄' if in_set(p, "很太真好挺这那么纸变") || in_set(n, "薄的片饼") => "bao2",
        // Thin clothes, paper, ice (薄毛衣, 烂衣薄裳, 薄冰).
        '薄' if in_set(n, "衣裳被纸冰雾毯毛肥皮板层") => "bao2",
        '削' if p == '被' || in_set(n, "去职减") => "xue1",
        '削' if in_set(n, "苹果皮铅了着好尖") => "xiao1",
        '剥' if in_set(n, "开了着皮掉下橘花蒜") => "bao1",
        '塞' if in_set(n, "进满住给入到回了着过在紧钱") => "sai1",
        '冲' if in_set(p, "很太真好挺") || n == '着' => "chong4",
        '藏' if in_set(n, "起了着在进好身匿到住书") || in_set(p, "躲收隐埋暗私珍冷") => {
            "cang2"
        }
        '扎' if n == '着' && p != '被'
            || in_set(n, "辫马头")
            // Tied into (扎成马尾, 扎成一束), not stabbed into a sieve.
            || n == '成' && p != '被' && !in_set(n2, "筛刺蜂") && !in_set(f.next3, "筛刺蜂")
            // 扎了个马尾, 扎了一条辫子 (but 扎了一针).
            || n == '了' && in_set(n2, "个一两") && in_set(f.next3, "马辫条") =>
        {
            "za1"
        }
        '奔' if in_set(n, "着向往") => "ben4",
        '奔' if in_set(n, "去来跑逃") => "ben1",
        '弹' if in_set(n, "了着琴奏起开出跳性簧棉")
            || in_set(p, "会在轻反")
            || p == '了' && f.prev2 == '弹' =>
        {
            "tan2"
        }
        // Going round (转圈, 转了两圈, 转了转, 到街上转转, 车轮在转。).
        '转' if n == '圈'
            || n == '了' && in_set(n2, "三两几好圈转")
            || n == '了' && n2 == '一' && in_set(f.next3, "圈阵遭会")
            || p == '转'
            || n == '转' && !han(n2)
            || p == '了' && f.prev2 == '转'
            || p == '在' && !han(n) =>
        {
            "zhuan4"
        }
        // To surrender (宁死不降, 不肯降, 劝降, 迎降), not to fall (温度不降).
        '降' if p == '不' && in_set(f.prev2, "死誓绝宁决")
            || in_set(p, "愿请归迎劝招受诈乞纳")
            || p == '肯' && in_set(f.prev2, "不未") && !han(n) =>
        {
            "xiang2"
        }
        '结' if n == '了' && in_set(n2, "果瓜籽") || n == '果' && p == '树' => "jie1",
        // Into or as (改为, 变为, 视为, 大为, 有诗为证): wei2.
        '为' if in_set(
            p,
            "改变降化视称呼叫唤分成作选评定立奉拜尊封任命推升列转译贬召讹长用主较最极更甚颇尤大原本即乃皆均亦系东西南北",
        ) || in_set(n, "之盼尊证") =>
        {
            "wei2"
        }
        // For someone or something after a pronoun or an adverb (为我受累,
        // 只为, 你甭再为他操心); not the passive 为他所害. Elsewhere the model
        // decides: semi-classical prose says 有诗为证, 强者为尊, 拜他为王.
        // After a pronoun (咱们为巴西干杯, 我为她高兴), at a clause's start
        // (为车皮的事) or after 很: for; but 拜他为王, 称我为, 与他为友.
        '为' if (in_set(p, "们我你他她咱很") && !in_set(f.prev2, NAMING) || !han(p) && han(n))
            && !in_set(n, AS_RANK)
            && n2 != '所' =>
        {
            "wei4"
        }
        '为' if (in_set(n, "我你他她您它咱谁此这那国什")
            || in_set(
                p,
                "要是也都就不还又在肯能会想该正只专去来着地得了头上边甭再别",
            ))
            && n2 != '所'
            && !in_set(p, "以称") =>
        {
            "wei4"
        }
        // To do (干什么, 干活, 干完了, 他干了); dry is gan1.
        '干' if in_set(n, "什啥嘛活事完上起下过点坏掉")
            || n == '了' && in_set(p, "我你他她们咱就也还又再没伙") =>
        {
            "gan4"
        }
        // The sentence-final particle (两个哩。), not the mile (英哩).
        '哩' if han(p) && !han(n) && !in_set(p, "英公") => "li5",
        // A volume (第一卷, 上下两卷。, 卷子); a roll or to roll (卷旱烟,
        // 那卷行李).
        '卷' if f.prev2 == '第' || in_set(n, "子宗") || in_set(p, "两几上下全") && !han(n) => {
            "juan4"
        }
        '卷' if in_set(p, "那这每把仍然") && !in_set(n, "经书画诗") || in_set(n, "烟旱筒铺被") => {
            "juan3"
        }
        // Rolling, a roll, curls (卷好一支烟, 自卷的, 纸卷, 卷头发), unless
        // it is reading matter: a volume or a scroll (一卷经, 试卷, 画卷).
        '卷' if han(p)
            && !in_set(n, "经书画诗帙轴末首牍《")
            && !in_set(
                p,
                "试答考案画书经开手念功几干分初受全一二三四五六七八九十百千万",
            )
            || !han(p) && in_set(n, "好成紧上") =>
        {
            "juan3"
        }
        // Strength (一种劲, 来了劲, 费了好大劲); jing4 is sturdy (劲敌, 劲旅, 劲松).
        '劲' if in_set(n, "敌旅松草风挺拔歌骑椎梁射") || in_set(p, "强刚苍遒雄风加") => {
            "jing4"
        }
        '劲' => "jin4",
        '抡' if in_set(n, "起着过了圆开动拳刀锤棒大") => "lun1",
        // Fainting (晕死过去, 晕倒, 晕晕乎乎); yun4 is motion sickness and halos.
        '晕' if in_set(n, "死过倒了厥头晕") || p == '晕' => "yun1",
        '咋' if !in_set(n, "舌市") && p != '咋' => "za3",
        '汗' if in_set(p, "的了身满头脸冷大出流虚盗擦黑热") || in_set(n, "水珠流湿津淋") => {
            "han4"
        }
        '切' if in_set(p, "密亲急迫确贴一恳热关") || in_set(n, "不记忌莫勿实") => {
            "qie4"
        }
        '划' if in_set(n, "一个出分定给拨归成地") => "hua4",
        '塞' if !han(n) && in_set(p, "里中") => "sai1",
        '攒' if in_set(n, "钱下到够") => "zan3",
        '柏' if in_set(n, "树木叶枝子油") || in_set(p, "松翠苍古侧桧扁") => "bai3",
        '勒' if in_set(n, "紧住下死进") => "lei1",
        // Covered (蒙上, 蒙着脸, 蒙了一层灰); 被打蒙了 stays with the model.
        '蒙' if in_set(n, "上住着") || n == '了' && n2 == '一' => "meng2",
        '曲' if in_set(n, "腿着起身背膝") => "qu1",
        '扒' if in_set(n, "下开掉皮光") => "ba1",
        _ => return None,
    };
    Some(r)
}

/// Characters after which a lone 地 is the adverbial particle de5
/// (默默地, 突然地, 轻声地…), besides reduplications (慢慢地).
const DE_BEFORE_DI: &str =
    "然般样意心声断续觉静悄慢狠轻紧冷热柔细默怔愣呆缓急猛力勉淡低渐真认仔连迅速快重深暗独乎";

/// Starts of nouns with 地 (地里, 地头, 地主, 地势…) that the phrase data may
/// not hold together: a lone 地 before them is land, not the particle.
const NOUN_AFTER_DI: &str = "里头边方面区主位步图板势质球带域段点铺皮基雷震窖洞窝毯形貌理壳层表";

/// Verbs of speech and motion that a lone 地 introduces as an adverbial
/// (头也不抬地说, 轻轻地走).
const VERB_AFTER_DE: &str = "说道问答笑叫喊哭走跑看望想回点摇叹喝吼骂应嚷嘀嘟念";

/// Characters after which a lone 子 is not the neutral noun suffix.
const NOT_BEFORE_SUFFIX_ZI: &str = "一二三四五六七八九十两几每诸孔孟老庄墨荀周此彼其之无有为我你他她吾汝尔乃至于近在到如救持活生产得养弃失爱怜恋逆孝见遣别夺敕将麟凤龙佛";

/// Characters after which a lone 得 is the modal dei3 (我得走, 还得, 就得).
const DEI_AFTER: &str = "我你他她它们就还也都总只必又可便才却谁咱俺";

/// Readings of the particles 得, 地 and 着, of the erhua 儿 and of the
/// measure word 只 when they stand alone (no phrase): the CPP data comes from
/// encyclopaedic text where 地 is mostly di4 and 得 de2, while narrative
/// prose uses them as particles.
fn particle_rule(f: &Features) -> Option<&'static str> {
    if !f.single {
        return None;
    }
    let han = |c: char| crate::text::is_han(c);
    match f.c {
        '地' if han(f.next)
            && (f.prev == f.prev2 && han(f.prev)
                || DE_BEFORE_DI.contains(f.prev)
                || VERB_AFTER_DE.contains(f.next)
                || f.after_adverbial && !NOUN_AFTER_DI.contains(f.next)) =>
        {
            Some("de5")
        }
        '得' if !han(f.prev) || DEI_AFTER.contains(f.prev) => han(f.next).then_some("dei3"),
        '得' => Some("de5"),
        // Durative 着 (眯着眼睛); 睡不着, 找得着 reach zhao2. 着急, 着手…
        // are phrases.
        '着' | '著' if f.prev == '不' || f.prev == '得' => Some("zhao2"),
        '着' | '著' if han(f.prev) => Some("zhe5"),
        // Measure word after a demonstrative or numeral (那只猫, 两只手);
        // 只是, 只有… are phrases.
        '只' if "这那哪一两二三四五六七八九十几每半某".contains(f.prev) && han(f.next) => {
            Some("zhi1")
        }
        // Noun suffix on a word the dictionary lacks (镇子, 鞑子, 耍子):
        // neutral. 孔子, 男子, 弟子… are phrases; after a numeral, pronoun
        // or verb it is a son, a person or the hour 子 (三子, 此子, 无子,
        // 麒麟子, 维持子前).
        // Not before the other half of a pair (子母河, 子父相逢, 子女).
        '子' if han(f.prev)
            && !NOT_BEFORE_SUFFIX_ZI.contains(f.prev)
            && !"母父女孙".contains(f.next) =>
        {
            Some("zi5")
        }
        // Erhua suffix at a word's end (小猴儿，): neutral; 儿子, 女儿… are phrases.
        '儿' if han(f.prev) && (!han(f.next) || "的了呢啊吧呀么".contains(f.next)) => {
            Some("er5")
        }
        _ => None,
    }
}

/// One labelled example: the features of a character and its gold reading
/// (one of the candidates).
#[derive(Debug, Clone)]
pub struct Example {
    pub features: Features,
    pub gold: &'static str,
    /// The word text behind `features.word`, for writing the model out.
    pub word: String,
}

/// Fits an averaged perceptron on `examples` (deterministic order).
pub fn train(examples: &[Example], epochs: usize) -> Model {
    let mut w: FxHashMap<Key, f64> = FxHashMap::default();
    let mut u: FxHashMap<Key, f64> = FxHashMap::default();
    let mut model = Model::default();
    for e in examples {
        model.chars.insert(e.features.c);
        model.words.insert(e.features.word, e.word.clone());
    }
    let mut order: Vec<usize> = (0..examples.len()).collect();
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
    let mut t = 1.0_f64;
    for _ in 0..epochs {
        shuffle(&mut order, &mut rng);
        for &i in &order {
            let e = &examples[i];
            let pred = {
                let mut best = e.features.candidates[0];
                let mut best_score = f64::NEG_INFINITY;
                for &r in e.features.candidates.iter() {
                    let mut s = 0.0;
                    features(&e.features, r, |k| s += w.get(&k).copied().unwrap_or(0.0));
                    if s > best_score {
                        best_score = s;
                        best = r;
                    }
                }
                best
            };
            if pred != e.gold {
                features(&e.features, e.gold, |k| {
                    *w.entry(k).or_default() += 1.0;
                    *u.entry(k).or_default() += t;
                });
                features(&e.features, pred, |k| {
                    *w.entry(k).or_default() -= 1.0;
                    *u.entry(k).or_default() -= t;
                });
            }
            t += 1.0;
        }
    }
    model.weights = w
        .iter()
        .map(|(k, wk)| (*k, (wk - u.get(k).copied().unwrap_or(0.0) / t) as f32))
        .collect();
    model
}

fn shuffle(v: &mut [usize], state: &mut u64) {
    for i in (1..v.len()).rev() {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        let j = (*state % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

/// Number of `examples` the model reads right.
pub fn correct(model: &Model, examples: &[Example]) -> usize {
    examples
        .iter()
        .filter(|e| model.read(&e.features).as_deref() == Some(e.gold))
        .count()
}

/// `k`-fold cross-validation: each fold is predicted by a model fitted on
/// the other folds. Returns (correct, total) of each fold, in fold order.
pub fn cross_validate(examples: &[Example], k: usize, epochs: usize) -> Vec<(usize, usize)> {
    let mut order: Vec<usize> = (0..examples.len()).collect();
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    shuffle(&mut order, &mut rng);
    (0..k)
        .map(|fold| {
            let in_fold = |pos: usize| pos % k == fold;
            let train_set: Vec<Example> = order
                .iter()
                .enumerate()
                .filter(|(pos, _)| !in_fold(*pos))
                .map(|(_, &i)| examples[i].clone())
                .collect();
            let model = train(&train_set, epochs);
            let test: Vec<&Example> = order
                .iter()
                .enumerate()
                .filter(|(pos, _)| in_fold(*pos))
                .map(|(_, &i)| &examples[i])
                .collect();
            let right = test
                .iter()
                .filter(|e| model.read(&e.features).as_deref() == Some(e.gold))
                .count();
            (right, test.len())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feats(c: char, prev: char, dict: Option<&'static str>, cands: &[&'static str]) -> Features {
        Features {
            c,
            prev,
            next: '\u{3}',
            prev2: '\u{2}',
            next2: '\u{3}',
            next3: '\u{3}',
            single: false,
            neutral: false,
            after_adverbial: false,
            chess: false,
            word: word_hash(&c.to_string()),
            dict,
            candidates: cands.to_vec().into(),
        }
    }

    #[test]
    fn untrained_model_prefers_phrase_then_default() {
        let m = Model::default();
        assert_eq!(
            m.choose(&feats('行', '银', Some("hang2"), &["xing2", "hang2"])),
            Some("hang2")
        );
        assert_eq!(
            m.choose(&feats('行', '走', None, &["xing2", "hang2"])),
            Some("xing2")
        );
    }

    #[test]
    fn perceptron_learns_context_and_round_trips() {
        let mut ex = Vec::new();
        for (prev, gold) in [
            ('甲', "hang2"),
            ('乙', "xing2"),
            ('甲', "hang2"),
            ('乙', "xing2"),
        ] {
            ex.push(Example {
                features: feats('行', prev, None, &["xing2", "hang2"]),
                gold,
                word: "行".into(),
            });
        }
        let m = train(&ex, 5);
        assert_eq!(m.choose(&ex[0].features), Some("hang2"));
        assert_eq!(m.choose(&ex[1].features), Some("xing2"));
        let mut out = Vec::new();
        m.write(&mut out).unwrap();
        let text: &'static str = String::leak(String::from_utf8(out).unwrap());
        let back = Model::parse(text);
        assert_eq!(back.choose(&ex[0].features), Some("hang2"));
        assert_eq!(back.choose(&ex[1].features), Some("xing2"));
    }
}
