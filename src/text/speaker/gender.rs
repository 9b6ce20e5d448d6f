//! Genders of discovered characters: from the name itself (婶, 叔 …), from
//! how others address them (润叶姐) and from the pronouns that follow them.

use super::clause::{clause_start, is_punct, opens_clause, sentence_start};
use super::matcher::WordMatcher;
use super::names::{RANK_NUMERALS, SURNAME_TITLES, is_palace_title, is_role_word};
use super::words::has_speech_verb;
use super::{Discovered, ParagraphView};
use crate::text::quote::SegmentKind;

use crate::text::cast::Gender;

/// Gender suggested by the last character of a name (婶, 姐, 霞 … / 叔, 哥 …).
pub(super) fn gender_hint(name: &str) -> Gender {
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

/// What the book says about one character's gender.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct GenderEvidence {
    /// 她 / 他 opening a clause after the name (co-referring pronouns).
    pub she: usize,
    pub he: usize,
    /// 她 / 他 right after the name as a subject (少平他妈, 润叶她二爸): a
    /// resumptive pronoun, the name's own.
    pub she_after: usize,
    pub he_after: usize,
    /// 她 / 他 opening the paragraph after one whose last sentence the name
    /// is the subject of (少平也看见了。/ 他感到…).
    pub she_next: usize,
    pub he_next: usize,
    /// Titles and kinship terms around the name (丫头平儿, 宝姐姐, 润叶姐,
    /// 少平哥, 小厮茗烟, …的丈夫 / …的媳妇), including how others address it.
    pub female_titles: usize,
    pub male_titles: usize,
    /// Of the female titles, `<name>的女婿`: her husband in the speech of
    /// northern Shaanxi (平凡的世界), a son-in-law elsewhere, so none in a
    /// classical book (太師蔡京的女婿).
    pub son_in_law: usize,
    /// The name itself: a title or kinship word in it (strong), or a given
    /// name character that is usually a woman's or a man's (weak).
    pub name: Gender,
    pub name_strong: bool,
    /// The name is a kinship or role word (父亲, 母亲, 老汉): its gender
    /// decides, whatever pronouns stand near it.
    pub name_role: bool,
    /// Does the book write 她 at all? Classical texts write 他 for everyone,
    /// so there 他 says little.
    pub book_has_she: bool,
    /// Is the book in the modern vernacular (的 often, 道 seldom)? One that
    /// writes no 她 then has no woman a 他 could stand for: its 他 are men,
    /// and its given names read as modern ones.
    pub vernacular: bool,
    /// Share of 她 among the book's 他 and 她, in percent (when it writes 她).
    pub she_percent: u8,
    /// The words around the name, against those around the book's
    /// characters whose gender the rest of the evidence settles: mean
    /// log-odds per word, in thousandths (above 0 as the women's, below 0
    /// as the men's), over `context_words` words.
    pub context_milli: i16,
    pub context_words: u32,
    /// In a classical book (no 她, not the modern vernacular, so its
    /// pronouns say nothing), the gender of at least
    /// [`BOOK_LEAN_SHARE`] of the characters the rest of the evidence
    /// settles, with that share in percent (0: no lean): a weak prior, as
    /// a given name is.
    pub book_lean: Gender,
    pub book_lean_percent: u8,
}

impl GenderEvidence {
    fn she_share(&self) -> Option<f32> {
        self.he_is_a_man()
            .then(|| f32::from(self.she_percent.max(1)) / 100.0)
    }

    /// Does a 他 in this book say a man? (Not in classical texts, which
    /// write 他 for everyone.)
    fn he_is_a_man(&self) -> bool {
        self.book_has_she || self.vernacular
    }
}

/// 的 and 道 per thousand Han characters of a book in the modern
/// vernacular: at least so many 的, fewer 道.
const VERNACULAR_DE: usize = 25;
const VERNACULAR_DAO: usize = 8;

/// Weight of a co-referring 他 in a book that never writes 她 (where 他
/// stands for women too): a hint that many men are men, no more.
const HE_WITHOUT_SHE: f32 = 0.05;

/// Weight of a title after the name (林姑娘, 兰哥儿) or of a pronoun right
/// after it as a subject (润叶她…): one outweighs a given name's weak hint
/// and the words around together (2.0 had tied them: 贾兰, called 兰哥儿
/// once, came out unknown).
const TITLE_WEIGHT: f32 = 3.0;

/// Weight of a pronoun opening the paragraph after the name's, against
/// one in the name's own sentence: the paragraph after may turn to the one
/// spoken to or looked at.
const NEXT_PARAGRAPH: f32 = 0.5;

/// Weight of the words around a name (a weak hint, as a given-name
/// character is): enough alone to say a gender with little confidence,
/// never enough against pronouns or titles, nor against two sentences
/// that go on with 她 (where a heroine and a hero share a book's words).
const CONTEXT_WEIGHT: f32 = 0.5;
/// How far the words around a name must lean (mean log-odds per word, in
/// thousandths) over how many words.
const CONTEXT_MIN_MILLI: i16 = 50;
const CONTEXT_MIN_WORDS: u32 = 50;
/// Or over fewer words, when their lean times their count (in thousandths)
/// reaches so much: as far as 50 words leaning 0.1 go.
const CONTEXT_FEW_WORDS: u32 = 20;
const CONTEXT_MIN_TOTAL: i64 = 5_000;
/// Characters each side of a name whose words are counted, within its clause.
const CONTEXT_CHARS: usize = 8;

/// Weight of the book's lean (see [`GenderEvidence::book_lean`]): alone it
/// says a gender with little confidence; it breaks a tie of titles and
/// outweighs the words around a name, not a given name's weak hint, far
/// from a title.
const BOOK_LEAN_WEIGHT: f32 = 1.0;
/// The share (percent) of settled characters of one gender from which a
/// classical book leans to it, and how many must be settled: 水滸傳 and
/// 《儒林外史》 lean male, 西游记, 《红楼梦》 and 《金瓶梅》 do not.
const BOOK_LEAN_SHARE: usize = 80;
const BOOK_LEAN_MIN_SETTLED: usize = 20;
/// How sure a guess must be to count as settled for the book's lean.
const BOOK_LEAN_SETTLED_CONFIDENCE: f32 = 0.5;

/// A character's gender with how sure it is (0–1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GenderGuess {
    pub gender: Gender,
    pub confidence: f32,
}

impl GenderEvidence {
    /// Weighted (female, male) evidence.
    pub fn weights(&self) -> (f32, f32) {
        // Each pronoun weighs against how often the book writes it, so that
        // a book with more men (more 他) does not make its women men; by the
        // square root only, as a hero seldom alone with a man gathers 她
        // from the women around him (她 5, 他 8 is a man).
        let (she, he) = match self.she_share() {
            Some(p) => (
                (0.5 / p.clamp(0.05, 0.95)).sqrt(),
                (0.5 / (1.0 - p).clamp(0.05, 0.95)).sqrt(),
            ),
            None => (1.0, HE_WITHOUT_SHE),
        };
        // A resumptive 他 says little where the book writes 他 for everyone.
        let he_after = if self.he_is_a_man() { self.he_after } else { 0 };
        let he_next = if self.he_is_a_man() { self.he_next } else { 0 };
        let mut f = she * (self.she as f32 + NEXT_PARAGRAPH * self.she_next as f32)
            + TITLE_WEIGHT * (self.female_titles + self.she_after) as f32;
        let mut m = he * (self.he as f32 + NEXT_PARAGRAPH * he_next as f32)
            + TITLE_WEIGHT * (self.male_titles + he_after) as f32;
        let prior = if self.name_strong { 8.0 } else { 1.5 };
        match self.name {
            Gender::Female => f += prior,
            Gender::Male => m += prior,
            Gender::Unknown => {}
        }
        match self.context() {
            Gender::Female => f += CONTEXT_WEIGHT,
            Gender::Male => m += CONTEXT_WEIGHT,
            Gender::Unknown => {}
        }
        // The book's lean outweighs the words around the name, which its
        // few characters of the other gender teach poorly (牛浦 of
        // 《儒林外史》 leaned +0.15 to its ten women).
        match self.book_lean {
            Gender::Female => f += BOOK_LEAN_WEIGHT,
            Gender::Male => m += BOOK_LEAN_WEIGHT,
            Gender::Unknown => {}
        }
        (f, m)
    }

    /// The evidence in a line: `gender female, confidence 0.87: 她 12, 他 3,
    /// right after 2 / 0, titles 4 female / 0 male, name female (weak), words
    /// around female (+0.152 over 340)`.
    pub fn note(&self) -> String {
        let guess = self.guess();
        let name = match (self.name, self.name_strong) {
            (Gender::Unknown, _) => "none".to_owned(),
            (g, true) if self.name_role => {
                format!("{} (kinship or role word: decides)", g.as_str())
            }
            (g, true) => format!("{} (title)", g.as_str()),
            (g, false) => format!("{} (weak)", g.as_str()),
        };
        format!(
            "gender {}, confidence {:.2}: 她 {}, 他 {}{}, right after {} / {}, next paragraph {} / {}, \
             titles {} female / {} male, name {name}, words around {} ({:+.3} over {}){}",
            guess.gender.as_str(),
            guess.confidence,
            self.she,
            self.he,
            match (self.book_has_she, self.vernacular) {
                (true, _) => "",
                (false, true) => " (book writes no 她, in the modern vernacular)",
                (false, false) => " (book writes no 她)",
            },
            self.she_after,
            self.he_after,
            self.she_next,
            self.he_next,
            self.female_titles,
            self.male_titles,
            match self.context() {
                Gender::Unknown => "none",
                g => g.as_str(),
            },
            f32::from(self.context_milli) / 1000.0,
            self.context_words,
            match self.book_lean {
                Gender::Unknown => String::new(),
                g => format!(
                    ", book leans {} ({} % of the characters settled otherwise)",
                    g.as_str(),
                    self.book_lean_percent
                ),
            },
        )
    }

    /// The gender the words around the name lean to, when they lean enough
    /// over enough words.
    pub fn context(&self) -> Gender {
        // Fewer words count when they lean far (程默: −0.176 over 38).
        let total = i64::from(self.context_milli).abs() * i64::from(self.context_words);
        let enough = self.context_words >= CONTEXT_MIN_WORDS
            || (self.context_words >= CONTEXT_FEW_WORDS && total >= CONTEXT_MIN_TOTAL);
        if !enough {
            Gender::Unknown
        } else if self.context_milli >= CONTEXT_MIN_MILLI {
            Gender::Female
        } else if self.context_milli <= -CONTEXT_MIN_MILLI {
            Gender::Male
        } else {
            Gender::Unknown
        }
    }

    /// The gender the evidence points to: unknown only when it is balanced
    /// or absent.
    pub fn guess(&self) -> GenderGuess {
        if self.name_role {
            return GenderGuess {
                gender: self.name,
                confidence: 1.0,
            };
        }
        let (f, m) = self.weights();
        let total = f + m;
        let gender = if total < 0.5 {
            Gender::Unknown
        } else if f > 1.25 * m {
            Gender::Female
        } else if m > 1.25 * f {
            Gender::Male
        } else {
            Gender::Unknown
        };
        // Share of the evidence on the winning side, damped when there is little.
        let share = f.max(m) / total.max(f32::EPSILON);
        let amount = 1.0 - (-total / 3.0).exp();
        let confidence = match gender {
            Gender::Unknown => 0.0,
            _ => (share * amount * 100.0).round() / 100.0,
        };
        GenderGuess { gender, confidence }
    }
}

/// Titles and kinship terms right after a name that make it a woman's or a
/// man's (宝姐姐 is not matched: the name is 宝钗; 润叶姐, 林姑娘 …), those
/// of schoolmates and fellow disciples too (林学姐, 萧师兄).
const FEMALE_AFTER: &[&str] = &[
    "姑娘", "小姐", "丫头", "丫頭", "姐姐", "妹妹", "姐", "妹", "嫂子", "嫂", "婶", "嬸", "姨娘",
    "大娘", "大嫂", "二嫂", "奶奶", "阿姨", "女士", "夫人", "太太", "娘娘", "姑姑", "婆婆", "学姐",
    "學姐", "学妹", "學妹", "师姐", "師姐", "师妹", "師妹",
];
const MALE_AFTER: &[&str] = &[
    "哥哥", "哥", "兄弟", "兄", "叔", "伯", "爷", "爺", "大爷", "大爺", "二爷", "二爺", "老爷",
    "老爺", "公子", "先生", "相公", "少爷", "少爺", "老弟", "老汉", "老漢", "大哥", "贤弟", "賢弟",
    "兄长", "兄長", "学长", "學長", "学弟", "學弟", "师兄", "師兄", "师弟", "師弟", "师叔", "師叔",
    "师伯", "師伯",
];
/// After the name, words that are not the title they start with (宝玉姐妹们).
/// 少平姐夫 is his sister's husband: neither the name's title nor a woman.
const NOT_TITLES: &[&str] = &[
    "姐妹",
    "妹子们",
    "兄妹",
    "姐弟",
    "叔叔家",
    "哥儿们",
    "哥們",
    "姐夫",
    "妹夫",
    "姊夫",
];
/// Titles and roles right before a name (丫头平儿, 小厮茗烟, 他妹妹探春).
const FEMALE_BEFORE: &[&str] = &[
    // he takes her as a wife
    "娶了",
    "娶",
    "丫头子",
    "丫头",
    "丫頭",
    "丫鬟",
    "丫嬛",
    "姑娘",
    "小姐",
    "妹妹",
    "姐姐",
    "嫂子",
    "媳妇",
    "媳婦",
    "女儿",
    "女兒",
    "侄女",
    "妻子",
    "老婆",
    "夫人",
    "姨娘",
    "女孩",
    "女子",
    "婆子",
    "婶子",
    "嬸子",
    "母亲",
    "母親",
    "妈妈",
    "媽媽",
    "姑姑",
    "闺女",
    "閨女",
    "女人",
    "妇人",
    "婦人",
    "女孩子",
    "女同学",
    "女同學",
    "姨妈",
    "姨媽",
    // what she is to someone, in a modern book (他女朋友林晚, 校花苏念)
    "女朋友",
    "女友",
    "前女友",
    "未婚妻",
    "校花",
    "女神",
    "女生",
    "学姐",
    "學姐",
    "学妹",
    "學妹",
    "师姐",
    "師姐",
    "师妹",
    "師妹",
    "女同事",
    // what others call her (你叫她小满就行)
    "叫她",
    "喊她",
    "女老师",
    "女老師",
    // the women's roles of the stage (小旦龄官) and women by their trade
    // in a modern book (女记者苏晴)
    "小旦",
    "花旦",
    "正旦",
    "老旦",
    "女演员",
    "女演員",
    "女明星",
    "女记者",
    "女記者",
    "女医生",
    "女醫生",
    "女警",
    "女孩儿",
    "女孩兒",
    // kin called by what they are, before a name (她姐润叶, 二嫂秀莲)
    "姐",
    "嫂",
    "婆婆",
    "弟媳",
];
const MALE_BEFORE: &[&str] = &[
    "嫁给",
    "嫁給",
    "嫁给了",
    "嫁給了", // she marries him
    "书童",
    "書童",
    "小厮",
    "小廝",
    "儿子",
    "兒子",
    "哥哥",
    "弟弟",
    "兄弟",
    "侄儿",
    "侄兒",
    "丈夫",
    "老爷",
    "老爺",
    "公子",
    "少爷",
    "少爺",
    "先生",
    "小子",
    "汉子",
    "漢子",
    "和尚",
    "道士",
    "父亲",
    "父親",
    "爸爸",
    "叔叔",
    "伯伯",
    "男人",
    "男孩",
    "后生",
    "後生",
    "老汉",
    "老漢",
    // what he is to someone, in a modern book (她男朋友陆川, 校草江屿)
    "男朋友",
    "男友",
    "前男友",
    "未婚夫",
    "校草",
    "男神",
    "男生",
    // what others call him (你叫他小黃就行)
    "叫他",
    "喊他",
    "学长",
    "學長",
    "学弟",
    "學弟",
    "师兄",
    "師兄",
    "师弟",
    "師弟",
    "男同事",
    "男老师",
    "男老師",
    "男演员",
    "男演員",
    "男明星",
    "男记者",
    "男記者",
    "男医生",
    "男醫生",
    "男孩儿",
    "男孩兒",
    // kin called by what they are, before a name (他哥孙少安, 他姐夫王满银)
    "哥",
    "姐夫",
    "妹夫",
    "姑父",
    "姨父",
    "公公",
];
/// Verbs that name someone just introduced (书童名唤茗烟).
const NAMING: &[&str] = &["名唤", "名喚", "名叫", "叫做", "唤作", "喚作", "名字叫"];
/// `<name>的丈夫` makes a woman, `<name>的媳妇` a man.
const HAS_HUSBAND: &[&str] = &[
    "的丈夫",
    "的男人",
    "的女婿",
    "的老公", // and a woman marries or carries a child:
    "嫁给",
    "嫁給",
    "出嫁",
    "怀孕",
    "懷孕",
    "怀了孕",
    "懷了孕",
];
const HAS_WIFE: &[&str] = &[
    // a man takes a wife:
    "娶了",
    "娶",
    "的妻子",
    "的媳妇",
    "的媳婦",
    "的老婆",
    "的婆姨",
    "的妻",
    "的夫人",
    "的婆娘",
];
/// The same without 的, as the old novels and the villages say it (乔大户娘子,
/// 韩道国老婆, 旺儿媳妇): his wife, never the woman herself; but after a
/// role noun a list of servants (丫鬟媳妇们, 婆子老婆).
const WIFE_OF: &[&str] = &["娘子", "老婆", "媳妇", "媳婦", "浑家", "渾家"];

/// True when `s` holds the end of a sentence outside quotes (周大山说：“走。”他…
/// is one sentence).
fn ends_sentence(s: &str) -> bool {
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '“' | '「' | '『' => depth += 1,
            '”' | '」' | '』' => depth = depth.saturating_sub(1),
            '。' | '！' | '？' | '!' | '?' | '；' if depth == 0 => return true,
            _ => {}
        }
    }
    false
}

/// After a name, what makes it a possessor (李向前的病房, 贾政之女).
const POSSESSIVE: &[&str] = &["的", "之"];

// One byte is compared before the whole word (the first character's last
// byte, the last byte): most text around a name starts (ends) with none of
// the words' characters.
fn any_prefix(s: &str, words: &[&str]) -> bool {
    let s = s.as_bytes();
    words.iter().any(|w| {
        let w = w.as_bytes();
        w.len() <= s.len() && w.get(2) == s.get(2) && s.starts_with(w)
    })
}

fn any_suffix(s: &str, words: &[&str]) -> bool {
    let s = s.as_bytes();
    words
        .iter()
        .any(|w| w.as_bytes().last() == s.last() && s.ends_with(w.as_bytes()))
}

/// Collects each discovered character's gender evidence from the whole book
/// and sets its gender from it (see [`GenderEvidence::guess`]).
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
    // 琏二爷, 珍大爷, 云丫头: one character of a given name, a rank and a
    // title. Only a character no other name shares there says whose.
    let mut addressed: Vec<(String, usize, Gender)> = Vec::new();
    for (key, i) in address_keys(found) {
        for rank in ADDRESS_RANKS {
            for (titles, gender) in [
                (ADDRESS_MALE, Gender::Male),
                (ADDRESS_FEMALE, Gender::Female),
            ] {
                for title in titles {
                    addressed.push((format!("{key}{rank}{title}"), i, gender));
                }
            }
        }
        // 安姐, 言哥: how colleagues and juniors address one today.
        if !not_bare_key(key) {
            for (title, gender) in BARE_ADDRESS {
                addressed.push((format!("{key}{title}"), i, *gender));
            }
        }
    }
    // 薛大爷, 秦相公, 林姑娘: a surname and a title, for the one character
    // of that surname whose name does not say the other gender.
    for (surname, i, gender) in surname_owners(found) {
        for (title, _) in SURNAME_TITLES.iter().filter(|(_, g)| *g == gender) {
            addressed.push((format!("{surname}{title}"), i, gender));
        }
    }
    addressed.retain(|(w, _, _)| !words.contains(&w.as_str()));
    let first_address = words.len();
    words.extend(addressed.iter().map(|(w, _, _)| w.as_str()));
    owner.extend(addressed.iter().map(|&(_, i, _)| Some(i)));
    let matcher = WordMatcher::new(&words);
    let mut evidence = vec![GenderEvidence::default(); found.len()];
    let mut contexts: Vec<rustc_hash::FxHashMap<u64, u32>> = vec![Default::default(); found.len()];
    let (mut she_total, mut he_total) = (0usize, 0usize);
    // How often each name stands in quote marks, and in all.
    let mut quoted = vec![0usize; found.len()];
    let mut written = vec![0usize; found.len()];
    // The subject of the last sentence of the paragraph before, and its chapter.
    let mut carried: Option<(usize, usize)> = None;
    let mut register = Register::default();
    let paragraphs = chapters
        .iter()
        .enumerate()
        .flat_map(|(chapter, ps)| ps.iter().map(move |p| (chapter, p)));
    for (chapter, p) in paragraphs {
        register.add(p.text);
        if let Some((i, _)) = carried.take().filter(|&(_, c)| c == chapter)
            && !any_prefix(p.text, &["他们", "她们", "他們", "她們"])
        {
            if p.text.starts_with('他') {
                evidence[i].he_next += 1;
            } else if p.text.starts_with('她') {
                evidence[i].she_next += 1;
            }
        }
        // The last name, and where it ends.
        let mut last: Option<(usize, usize)> = None;
        let mut sentence_subject = false;
        // Where the last person named (or 他, 她) ends.
        let mut last_person = 0;
        // The spans of the paragraph up to the current match (matches come in order).
        let mut span = 0;
        for m in matcher.find_iter(p.text) {
            let person_before = std::mem::replace(&mut last_person, m.end);
            while p.spans.get(span).is_some_and(|s| s.end <= m.start) {
                span += 1;
            }
            // “知意，我喜欢了他…”: who is named or meant inside a quote says
            // nothing of whom the narration's pronouns stand for.
            let in_quote = p
                .spans
                .get(span)
                .is_some_and(|s| s.kind != SegmentKind::Narration && s.start <= m.start);
            let pat = m.pattern;
            match owner[pat] {
                // 安姐夫 is her husband, 言哥们 his friends.
                Some(_)
                    if pat >= first_address
                        && p.text[m.end..].starts_with(['夫', '们', '們', '俩', '倆']) => {}
                Some(i) if pat >= first_address => {
                    match addressed[pat - first_address].2 {
                        Gender::Female => evidence[i].female_titles += 1,
                        _ => evidence[i].male_titles += 1,
                    }
                    last = Some((i, m.end));
                }
                Some(i) => {
                    written[i] += 1;
                    let e = &mut evidence[i];
                    let (mut before, mut after) = (&p.text[..m.start], &p.text[m.end..]);
                    // “萝卜花”立刻…: a nickname in quote marks, read without them.
                    for (open, close) in [('“', '”'), ('「', '」'), ('『', '』')] {
                        if let (Some(b), Some(a)) =
                            (before.strip_suffix(open), after.strip_prefix(close))
                        {
                            (before, after) = (b, a);
                            quoted[i] += 1;
                        }
                    }
                    context_words(before, after, |w| *contexts[i].entry(w).or_default() += 1);
                    titles_around(e, &p.text[m.start..m.end], before, after);
                    // 李向前的病房前，她…: a possessor is not what the
                    // next pronoun stands for (the subject before it still is)…
                    // Nor is a name that does not open its clause (兰花听满银这么说，她…).
                    let subject = !in_quote
                        && opens_clause(&p.text[clause_start(p.text, m.start, 0)..m.start]);
                    // 润生吃苹果的时候，她…: one named in a clause of time
                    // is no subject of the sentence a pronoun goes on with.
                    if subject && in_time_clause(after) {
                        last = None;
                        sentence_subject = false;
                    } else if subject && !any_prefix(after, POSSESSIVE) {
                        last = Some((i, m.end));
                        // …and the subject of its whole sentence when it
                        // is the first person the sentence names (周六一早，
                        // 知意…; not 不过，他又想，爱云在哩。).
                        // (Only the text since the last person is looked at:
                        // a paragraph of a million names stays linear.)
                        sentence_subject =
                            person_before == 0 || ends_sentence(&p.text[person_before..m.start]);
                    }
                    // 少平他妈, 润叶她二爸, 金秀她一下子…: a pronoun right after
                    // a subject is that one's (not 告诉少平她…: no subject).
                    if subject && !any_prefix(after, &["他们", "她们", "他們", "她們"]) {
                        if after.starts_with('他') {
                            e.he_after += 1;
                        } else if after.starts_with('她') {
                            e.she_after += 1;
                        }
                    }
                }
                None => {
                    match words[pat] {
                        "他" => he_total += 1,
                        "她" => she_total += 1,
                        _ => {}
                    }
                    // Only a pronoun that opens a clause refers back to the
                    // name (高朗问她: 她 is someone else).
                    let opens_clause = p.text[..m.start]
                        .chars()
                        .next_back()
                        .is_none_or(|c| is_punct(c) || matches!(c, '”' | '」' | '’' | '』'));
                    // …and only within the name's sentence.
                    let same_sentence = |from: usize| !ends_sentence(&p.text[from..m.start]);
                    match if in_quote { None } else { last.take() } {
                        Some((i, from)) if opens_clause && same_sentence(from) => {
                            match words[pat] {
                                "他" => evidence[i].he += 1,
                                "她" => evidence[i].she += 1,
                                _ => {}
                            }
                        }
                        // 知意没接话。她怕一开口…: the next sentence goes on
                        // with the subject of the last, as the next paragraph
                        // may (see `goes_on`), at the same weight.
                        Some((i, from))
                            if sentence_subject
                                && person_before == from
                                && next_sentence(&p.text[from..m.start]) =>
                        {
                            match words[pat] {
                                "他" => evidence[i].he_next += 1,
                                "她" => evidence[i].she_next += 1,
                                _ => {}
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        carried = last
            .filter(|&(_, from)| sentence_subject && goes_on(p, from, last_person))
            .map(|(i, _)| (i, chapter));
        self_titles(p, &matcher, &owner, &mut evidence);
    }
    let book_has_she = she_total * 50 >= she_total + he_total && she_total > 0;
    let vernacular = register.vernacular();
    let she_percent = (she_total * 100 / (she_total + he_total).max(1)) as u8;
    for (k, (d, e)) in found.iter().zip(evidence.iter_mut()).enumerate() {
        e.book_has_she = book_has_she;
        e.vernacular = vernacular;
        e.she_percent = she_percent;
        (e.name, e.name_strong) = name_gender(&d.character.name, e.he_is_a_man());
        // A nickname the book mostly puts in quote marks (“萝卜花”) is no given
        // name: its characters say nothing of its owner.
        if quoted[k] * 2 > written[k] && !e.name_strong {
            e.name = Gender::Unknown;
        }
        e.name_role = role_gender(&d.character.name).is_some();
    }
    if !book_has_she && !vernacular {
        for e in evidence.iter_mut() {
            e.female_titles -= e.son_in_law;
            e.son_in_law = 0;
        }
    }
    context_leanings(&mut evidence, &contexts);
    if !book_has_she && !vernacular {
        book_lean(&mut evidence);
    }
    for (d, e) in found.iter_mut().zip(evidence) {
        d.character.gender = e.guess().gender;
        d.evidence = e;
    }
}

/// Words that end a clause of time (…的时候, …以后, 临走时).
const TIME_CLAUSE_ENDS: &[&str] = &[
    "时候",
    "时",
    "時候",
    "時",
    "以后",
    "之后",
    "以後",
    "之後",
    "以前",
    "之前",
    "那会儿",
    "那會兒",
    "之际",
    "之際",
];
/// …时 and …后 that end no clause of time (两个小时, 当时; 身后, 最后).
const NOT_TIME_ENDS: &[&str] = &[
    "小时", "小時", "一时", "一時", "当时", "當時", "及时", "及時", "准时", "準時", "按时", "按時",
    "暂时", "暫時", "临时", "臨時",
];
/// Characters before 后 that make it a place or an order (身后, 门后, 最后,
/// 然后), not a time after something.
const NOT_AFTER: &str = "身背门門最然随隨落脑腦屋房山墙牆幕窗树樹村院楼樓车車台臺";

/// Longest clause of time looked for after a name, in characters.
const MAX_TIME_CLAUSE_CHARS: usize = 30;

/// Does the clause a name opens (`after`: the text after it) end in a word
/// of time (润生吃苹果的时候，…; 润叶撒完这个谎后，…)?
fn in_time_clause(after: &str) -> bool {
    // Only the first few characters are looked at (linear time on any input).
    let Some(end) = after
        .char_indices()
        .take(MAX_TIME_CLAUSE_CHARS)
        .find(|&(_, c)| is_punct(c) || matches!(c, '“' | '「' | '『'))
        .map(|(at, _)| at)
    else {
        return false;
    };
    let clause = &after[..end];
    if any_suffix(clause, NOT_TIME_ENDS) {
        return false;
    }
    if any_suffix(clause, TIME_CLAUSE_ENDS) {
        return true;
    }
    let mut last = clause.chars().rev();
    matches!(last.next(), Some('后' | '後')) && last.next().is_some_and(|c| !NOT_AFTER.contains(c))
}

/// Titles and kinship terms right after a name (润叶姐, 林姑娘, …嫁给了) or
/// before it (丫头平儿, 他妹妹探春; 书童名唤茗烟: before the naming verb).
fn titles_around(e: &mut GenderEvidence, name: &str, before: &str, after: &str) {
    // Which bytes open (the first character's last byte) or close a word of
    // the lists, to pass over most names at one lookup.
    static AFTER_BYTES: std::sync::LazyLock<[bool; 256]> = std::sync::LazyLock::new(|| {
        let mut t = [false; 256];
        for w in [
            NOT_TITLES,
            FEMALE_AFTER,
            HAS_HUSBAND,
            MALE_AFTER,
            HAS_WIFE,
            WIFE_OF,
            &["是"],
        ]
        .concat()
        {
            if let Some(&b) = w.as_bytes().get(2) {
                t[usize::from(b)] = true;
            }
        }
        t
    });
    static BEFORE_BYTES: std::sync::LazyLock<[bool; 256]> = std::sync::LazyLock::new(|| {
        let mut t = [false; 256];
        for w in [NAMING, FEMALE_BEFORE, MALE_BEFORE].concat() {
            if let Some(&b) = w.as_bytes().last() {
                t[usize::from(b)] = true;
            }
        }
        t
    });
    if after
        .as_bytes()
        .get(2)
        .is_some_and(|&b| AFTER_BYTES[usize::from(b)])
    {
        titles_after(e, name, after);
    }
    if before
        .as_bytes()
        .last()
        .is_some_and(|&b| BEFORE_BYTES[usize::from(b)])
    {
        titles_before(e, before);
    }
}

/// Kin and people words that say what one is (林默是她的女儿, 若溪是她谈了
/// 三年的男朋友, 她是个好姑娘): (word, female).
const IS_A: &[(&str, bool)] = &[
    ("女朋友", true),
    ("女友", true),
    ("妻子", true),
    ("老婆", true),
    ("媳妇", true),
    ("媳婦", true),
    ("太太", true),
    ("女儿", true),
    ("女兒", true),
    ("闺女", true),
    ("閨女", true),
    ("姐姐", true),
    ("妹妹", true),
    ("母亲", true),
    ("母親", true),
    ("妈妈", true),
    ("媽媽", true),
    ("姑娘", true),
    ("女孩", true),
    ("女孩子", true),
    ("女人", true),
    ("女生", true),
    ("嫂子", true),
    ("男朋友", false),
    ("男友", false),
    ("丈夫", false),
    ("老公", false),
    ("儿子", false),
    ("兒子", false),
    ("哥哥", false),
    ("弟弟", false),
    ("父亲", false),
    ("父親", false),
    ("爸爸", false),
    ("男人", false),
    ("男孩", false),
    ("男孩子", false),
    ("男生", false),
    ("小伙子", false),
    ("小夥子", false),
    ("姐夫", false),
];

/// Longest clause after 是 that says what one is, in characters.
const MAX_COPULA_CHARS: usize = 14;

/// 是 after the name and a clause that ends in what the name is: one of
/// [`IS_A`], alone, after a pronoun or in a phrase with 的 or 个 (not
/// 是不是, nor a clause longer than a description).
fn copula(e: &mut GenderEvidence, after: &str) {
    let Some(rest) = after.strip_prefix('是') else {
        return;
    };
    if rest.starts_with(['不', '否']) {
        return;
    }
    // The clause ends within 15 characters, or it is no description (and
    // the scan stays short on any paragraph).
    let Some(end) = rest
        .char_indices()
        .take(MAX_COPULA_CHARS + 1)
        .find(|&(_, c)| {
            is_punct(c) || matches!(c, '“' | '”' | '「' | '」' | '『' | '』' | '‘' | '’')
        })
        .map(|(at, _)| at)
        .or_else(|| {
            rest.chars()
                .nth(MAX_COPULA_CHARS)
                .is_none()
                .then_some(rest.len())
        })
    else {
        return;
    };
    let clause = &rest[..end];
    for &(word, female) in IS_A {
        if let Some(head) = clause.strip_suffix(word)
            && (head.is_empty()
                || head.contains(['的', '個', '个'])
                || head.ends_with(['她', '他', '我', '你', '们', '們']))
        {
            if female {
                e.female_titles += 1;
            } else {
                e.male_titles += 1;
            }
            return;
        }
    }
}

fn titles_after(e: &mut GenderEvidence, name: &str, after: &str) {
    if after.starts_with('是') {
        copula(e, after);
    } else if any_prefix(after, NOT_TITLES) {
    } else if after.starts_with('嫂') && name.ends_with(RANK_NUMERALS) {
        // 贲四嫂, 常二嫂: the wife of a man called by his rank among
        // brothers (桂兰嫂 is the woman herself).
        e.male_titles += 1;
    } else if any_prefix(after, FEMALE_AFTER) || any_prefix(after, HAS_HUSBAND) {
        e.female_titles += 1;
        if after.starts_with("的女婿") {
            e.son_in_law += 1;
        }
    } else if any_prefix(after, MALE_AFTER)
        || any_prefix(after, HAS_WIFE)
        || (any_prefix(after, WIFE_OF) && !is_role_word(name))
    {
        e.male_titles += 1;
    }
}

fn titles_before(e: &mut GenderEvidence, before: &str) {
    // Not the tail of another word (不是她的姐姐宝钗 still counts); a comma
    // may stand before the naming (负责带新生的学长，名叫周牧).
    let before = NAMING
        .iter()
        .find_map(|v| before.strip_suffix(v))
        .map_or(before, |b| b.strip_suffix(['，', ',']).unwrap_or(b));
    if any_suffix(before, FEMALE_BEFORE) {
        e.female_titles += 1;
    } else if any_suffix(before, MALE_BEFORE) {
        e.male_titles += 1;
    }
}

/// Whether the story of a name ending at `from` in paragraph `p`, the
/// subject of its sentence, goes on in a 他 or 她 opening the next
/// paragraph: not after a turn of dialogue nor its tag (“…”少平说。/ 他…:
/// the one spoken to reacts), nor when someone else is named after it
/// (`last_person`: 润生挡住了她。/ 她…), and only after a statement (润叶要结婚
/// 了？/ 他… is one who wonders).
fn goes_on(p: &ParagraphView<'_>, from: usize, last_person: usize) -> bool {
    let rest = p.text[from..].trim_end();
    p.spans.iter().all(|s| s.kind == SegmentKind::Narration)
        && from == last_person
        && !has_speech_verb(rest)
        && rest.ends_with(['。', '…'])
        && !ends_sentence(rest.trim_end_matches(['。', '…']))
}

/// Longest name looked for at the start of a tag after a quote, in characters.
const MAX_TAG_NAME_CHARS: usize = 6;

/// 靖王笑道：“本王…” / 赵琰竖起一根手指，“本王…”: what the one named first
/// in the sentence that runs into a quote calls themselves in it says their
/// gender, as a title does (not when a pronoun comes first: 她看着赵琰，“…”);
/// likewise the one a tag after the quote names (“…我老婆…”贾冰说。).
fn self_titles(
    p: &ParagraphView<'_>,
    matcher: &WordMatcher,
    owner: &[Option<usize>],
    evidence: &mut [GenderEvidence],
) {
    let mut tally = |i: usize, slot: usize| match slot {
        0 => evidence[i].male_titles += 1,
        _ => evidence[i].female_titles += 1,
    };
    for pair in p.spans.windows(2) {
        let [n, q] = pair else { continue };
        // “我老婆是个‘土耳其’！…”贾冰说。: the tag after the quote (not one
        // that opens the next quote with its colon: 「…老身…」西門慶道：「…」
        // is 王婆's 老身 and 西門慶's answer).
        if n.kind != SegmentKind::Narration && q.kind == SegmentKind::Narration {
            let tag = p.text[q.start..q.end].trim();
            if tag.ends_with(['：', ':']) {
                continue;
            }
            // A name opening the tag: only its first few characters are searched.
            let head = tag
                .char_indices()
                .nth(MAX_TAG_NAME_CHARS)
                .map_or(tag, |(at, _)| &tag[..at]);
            if let Some(m) = matcher.at_start(head)
                && let Some(i) = owner[m.pattern]
                && super::words::starts_with_speech_verb(&tag[m.end..])
                && let Some(slot) = super::words::self_reference(n.text(p.text))
            {
                tally(i, slot);
            }
            continue;
        }
        if n.kind != SegmentKind::Narration || q.kind == SegmentKind::Narration {
            continue;
        }
        let Some(slot) = super::words::self_reference(q.text(p.text)) else {
            continue;
        };
        let before = p.text[n.start..n.end].trim_end();
        let end = n.start + before.len() - before.chars().last().map_or(0, char::len_utf8);
        let from = sentence_start(p.text, n.start, end);
        let sentence = &p.text[from..end];
        // The first one named who acts in the sentence: not one acted on
        // (被雷橫打了, 對他), nor one whose kin acts (雷橫娘道：).
        if let Some(i) = matcher
            .find_iter(sentence)
            .find(|m| {
                !sentence[..m.start]
                    .chars()
                    .next_back()
                    .is_some_and(|c| ACTED_ON.contains(c))
                    && !any_prefix(&sentence[m.end..], KIN_OF_NAME)
                    && !any_prefix(&sentence[m.end..], WIFE_OF)
            })
            .and_then(|m| owner[m.pattern])
        {
            tally(i, slot);
        }
    }
}

/// Characters before a name that make it one acted on, not the one who
/// speaks next (被雷橫打了, 對他說, 把他).
const ACTED_ON: &str = "被把將将對对給给向和跟同與与叫讓让見见";
/// Kin right after a name: the one named there is someone's, not the name's
/// owner (雷橫娘道：; a wife of [`WIFE_OF`] too: 武大老婆).
const KIN_OF_NAME: &[&str] = &["娘", "母", "妻", "父", "爹", "兒子", "儿子", "女兒", "女儿"];

/// True when `between` (from the end of a name to a pronoun) is the rest
/// of the name's sentence, a statement of narration, and the pronoun opens
/// the next one (知意没接话。她…; not 润叶要结婚了？她…, nor past a quote
/// or a speech verb, where the one spoken to may react).
fn next_sentence(between: &str) -> bool {
    let Some(rest) = between.strip_suffix('。') else {
        return false;
    };
    !ends_sentence(rest) && !rest.contains(['“', '「', '『']) && !has_speech_verb(rest)
}

/// Which register a book is written in, from how often it writes 的 and 道
/// (said): 的 is 19–20 in a thousand Han characters of 《红楼梦》, 9 of 西游记
/// and 27–40 of modern prose; 道 16–19 against 2–3.
#[derive(Debug, Default)]
struct Register {
    han: usize,
    de: usize,
    dao: usize,
}

impl Register {
    fn add(&mut self, text: &str) {
        for c in text.chars() {
            match c {
                '的' => self.de += 1,
                '道' => self.dao += 1,
                _ => {}
            }
            self.han += usize::from(crate::text::decode::is_han(c));
        }
    }

    /// The modern vernacular: at least [`VERNACULAR_DE`] 的 and fewer than
    /// [`VERNACULAR_DAO`] 道 in a thousand.
    fn vernacular(&self) -> bool {
        self.de * 1000 >= VERNACULAR_DE * self.han && self.dao * 1000 < VERNACULAR_DAO * self.han
    }
}

/// The words (characters and pairs of characters, as keys) within
/// [`CONTEXT_CHARS`] of a name on each side, not past its clause.
fn context_words(before: &str, after: &str, mut add: impl FnMut(u64)) {
    let key = |a: char, b: Option<char>| (u64::from(a) << 32) | b.map_or(0, u64::from);
    let mut side = |chars: &mut dyn Iterator<Item = char>, reversed: bool| {
        let mut prev: Option<char> = None;
        for c in chars.take(CONTEXT_CHARS) {
            if is_punct(c) || matches!(c, '“' | '”' | '「' | '」' | '『' | '』') {
                break;
            }
            add(key(c, None));
            if let Some(p) = prev {
                add(if reversed {
                    key(c, Some(p))
                } else {
                    key(p, Some(c))
                });
            }
            prev = Some(c);
        }
    };
    side(&mut before.chars().rev(), true);
    side(&mut after.chars(), false);
}

/// Sets each character's context leaning: the words around its name
/// scored against the words around the characters whose gender the rest
/// of the evidence settles (the book teaches what its men and women do:
/// 作揖 and 小厮 beside men, 丫鬟 and 梳头 beside women), each character
/// scored without its own words.
fn context_leanings(evidence: &mut [GenderEvidence], contexts: &[rustc_hash::FxHashMap<u64, u32>]) {
    // 0: the women's words, 1: the men's.
    let side = |g: Gender| match g {
        Gender::Female => Some(0),
        Gender::Male => Some(1),
        Gender::Unknown => None,
    };
    let settled: Vec<Option<usize>> = evidence.iter().map(|e| side(e.guess().gender)).collect();
    let mut by_gender: [rustc_hash::FxHashMap<u64, u32>; 2] = Default::default();
    let mut totals = [0u64; 2];
    for (s, words) in settled.iter().zip(contexts) {
        let Some(s) = *s else { continue };
        for (w, n) in words {
            *by_gender[s].entry(*w).or_default() += n;
            totals[s] += u64::from(*n);
        }
    }
    if totals.contains(&0) {
        return;
    }
    for ((e, own), words) in evidence.iter_mut().zip(&settled).zip(contexts) {
        // The others' words: a settled character's own are taken out.
        let mut others = totals;
        if let Some(s) = *own {
            others[s] -= words.values().map(|n| u64::from(*n)).sum::<u64>();
        }
        let (mut sum, mut count) = (0.0f64, 0u32);
        for (w, n) in words {
            let mut seen = [0, 1].map(|k| by_gender[k].get(w).copied().unwrap_or(0));
            if let Some(s) = *own {
                seen[s] -= n;
            }
            // Words seen too seldom around the others say nothing.
            if seen[0] + seen[1] < 5 {
                continue;
            }
            let lean = ((f64::from(seen[0]) + 0.5) / others[0].max(1) as f64).ln()
                - ((f64::from(seen[1]) + 0.5) / others[1].max(1) as f64).ln();
            sum += f64::from(*n) * lean;
            count += n;
        }
        e.context_words = count;
        e.context_milli = if count == 0 {
            0
        } else {
            (sum / f64::from(count) * 1000.0)
                .round()
                .clamp(-30000.0, 30000.0) as i16
        };
    }
}

/// Sets the book's lean on every character's evidence when the characters
/// settled without it are mostly of one gender (see
/// [`GenderEvidence::book_lean`]).
fn book_lean(evidence: &mut [GenderEvidence]) {
    let (mut women, mut men) = (0, 0);
    for e in evidence.iter() {
        let guess = e.guess();
        if guess.confidence >= BOOK_LEAN_SETTLED_CONFIDENCE {
            match guess.gender {
                Gender::Female => women += 1,
                Gender::Male => men += 1,
                Gender::Unknown => {}
            }
        }
    }
    let settled = women + men;
    if settled < BOOK_LEAN_MIN_SETTLED {
        return;
    }
    let (lean, most) = if men >= women {
        (Gender::Male, men)
    } else {
        (Gender::Female, women)
    };
    let percent = most * 100 / settled;
    if percent < BOOK_LEAN_SHARE {
        return;
    }
    for e in evidence {
        e.book_lean = lean;
        e.book_lean_percent = percent as u8;
    }
}

/// Ranks between a given-name character and a title (琏二爷, 珍大爷), or
/// none (环哥儿, 云丫头).
const ADDRESS_RANKS: &[&str] = &[
    "", "大", "二", "三", "四", "五", "六", "七", "八", "九", "十",
];
/// Titles after a given-name character that address a man or a woman.
/// Not 奶奶: 琏二奶奶 is 贾琏's wife.
const ADDRESS_MALE: &[&str] = &["爷", "爺", "哥儿", "哥兒", "哥哥", "兄弟", "叔", "相公"];
const ADDRESS_FEMALE: &[&str] = &["丫头", "丫頭", "姑娘", "姐姐", "妹妹", "姐儿", "姐兒"];
/// 姐 / 哥 alone after a given-name character (安姐, 言哥), as colleagues,
/// juniors and friends address one in a modern book.
const BARE_ADDRESS: &[(&str, Gender)] = &[("姐", Gender::Female), ("哥", Gender::Male)];
/// Given-name characters that make a word with a bare 姐 or 哥 (学姐, 帅哥,
/// 空姐, 亲哥): never a key for those.
const NOT_BARE_KEYS: &str = "学學亲親帅帥空靓靚";
/// Whether a bare 姐 or 哥 after `key` makes no address of a given name
/// (学姐, 大哥, 小姐: [`NOT_BARE_KEYS`] and [`NOT_ADDRESS_KEYS`]).
pub(super) fn not_bare_key(key: char) -> bool {
    NOT_BARE_KEYS.contains(key) || NOT_ADDRESS_KEYS.contains(key)
}

/// Given-name characters that also make titles and common words (大哥,
/// 小妹, 老爷): never a key.
const NOT_ADDRESS_KEYS: &str =
    "大小老阿二三四五六七八九十表堂师師兄弟姐妹哥叔伯爷爺奶姑娘儿兒子女少宝寶";

/// The characters of given names that stand for one discovered character
/// alone (贾琏 → 琏; 史湘云 → 湘 and 云), with that character's index: the
/// first and last character of a surnamed name's given name, when no other
/// discovered name or alias holds the same character at either end of its
/// given name or opens with it.
fn address_keys(found: &[Discovered]) -> Vec<(char, usize)> {
    let given = |name: &str| -> Option<Vec<char>> {
        let chars: Vec<char> = name.chars().collect();
        let surnamed = chars.len() >= 2 && chars.len() <= 3 && super::names::is_surname(chars[0]);
        surnamed.then(|| chars[1..].to_vec())
    };
    let mut owners: rustc_hash::FxHashMap<char, Vec<usize>> = Default::default();
    for (i, d) in found.iter().enumerate() {
        for n in std::iter::once(&d.character.name).chain(&d.character.aliases) {
            let mut ends: Vec<char> = n.chars().take(1).collect();
            if let Some(g) = given(n) {
                ends.extend(g.first());
                ends.extend(g.last());
            }
            for c in ends {
                let v = owners.entry(c).or_default();
                if !v.contains(&i) {
                    v.push(i);
                }
            }
        }
    }
    let mut keys = Vec::new();
    for (i, d) in found.iter().enumerate() {
        let Some(g) = given(&d.character.name) else {
            continue;
        };
        let mut ends = vec![g[0]];
        if g.len() > 1 {
            ends.push(g[g.len() - 1]);
        }
        for c in ends {
            if !NOT_ADDRESS_KEYS.contains(c) && owners.get(&c).is_some_and(|v| v == &[i]) {
                keys.push((c, i));
            }
        }
    }
    keys
}

/// (surname, character, gender): for each surname of the discovered
/// names and each gender, the one character of that surname whose names
/// do not point to the other gender, when there is exactly one.
fn surname_owners(found: &[Discovered]) -> Vec<(char, usize, Gender)> {
    let mut by_surname: Vec<(char, Vec<usize>)> = Vec::new();
    for (i, d) in found.iter().enumerate() {
        let chars: Vec<char> = d.character.name.chars().collect();
        if !(2..=3).contains(&chars.len()) || !super::names::is_surname(chars[0]) {
            continue;
        }
        match by_surname.iter_mut().find(|(c, _)| *c == chars[0]) {
            Some((_, v)) => v.push(i),
            None => by_surname.push((chars[0], vec![i])),
        }
    }
    let leans = |i: usize| -> Gender {
        let d = &found[i];
        std::iter::once(&d.character.name)
            .chain(&d.character.aliases)
            .map(|n| name_gender(n, false).0)
            .find(|g| *g != Gender::Unknown)
            .unwrap_or(Gender::Unknown)
    };
    let mut out = Vec::new();
    for (surname, owners) in by_surname {
        for gender in [Gender::Male, Gender::Female] {
            let other = match gender {
                Gender::Male => Gender::Female,
                _ => Gender::Male,
            };
            let fits: Vec<usize> = owners
                .iter()
                .copied()
                .filter(|&i| leans(i) != other)
                .collect();
            if let [i] = fits[..] {
                out.push((surname, i, gender));
            }
        }
    }
    out
}

/// The gender a name suggests by itself: strongly when it holds a title or
/// kinship word (润叶姐, 福堂叔, 王夫人), weakly from a given-name
/// character usually a woman's or a man's: in a `modern` book (one that
/// writes 她) from how often each names men and women today
/// ([`given_name_log_odds`]); in a classical one, whose men bear names a
/// modern register would call a woman's (贾珍, 贾蓉, 柳湘莲), only from a short
/// list of characters that are plainly one or the other (黛, 钗 … / 刚, 龙 …).
pub(super) fn name_gender(name: &str, modern: bool) -> (Gender, bool) {
    if let Some(gender) = role_gender(name) {
        return (gender, true);
    }
    // A surname with a trade either gender follows (王老师, 沈设计师: 师
    // there is no master's) or after 小/阿 (小王: no king) names no gender.
    if genderless_title(name) {
        return (Gender::Unknown, false);
    }
    // A title or kinship word in the name (刘姥姥, 李嬷嬷, 贾母, 门子); where
    // it holds one of each (女王, 嫂子) the last character says which, and
    // a woman's word before a closing 子 is hers.
    // (A palace rank after a given name, 婉嫔 or 苏常在, is a woman's too.)
    let female = STRONG_FEMALE.iter().any(|w| name.contains(w)) || is_palace_title(name);
    // 子 closing a woman's given name is a nickname (燕子, 英子), not a man.
    let nickname = name.ends_with('子')
        && name
            .chars()
            .rev()
            .nth(1)
            .is_some_and(|c| WEAK_FEMALE.contains(c));
    let male = STRONG_MALE
        .iter()
        .any(|w| name.ends_with(w) && !(*w == "子" && nickname));
    match (female, male) {
        (true, false) => return (Gender::Female, true),
        (false, true) => return (Gender::Male, true),
        (true, true) => match gender_hint(name) {
            Gender::Unknown if name.ends_with('子') => return (Gender::Female, true),
            Gender::Unknown => {}
            hint => return (hint, true),
        },
        (false, false) => {}
    }
    if !modern {
        // The name but its surname, as `given_name_log_odds` takes it (林 of
        // 林晚 is no man's given name).
        let chars: Vec<char> = name.chars().collect();
        let skip = match chars.len() {
            0 | 1 => 0,
            2 => usize::from(super::names::is_surname(chars[0])),
            _ => 1,
        };
        let given = &chars[skip..];
        let female = given.iter().filter(|c| WEAK_FEMALE.contains(**c)).count();
        let male = given.iter().filter(|c| WEAK_MALE.contains(**c)).count();
        return match female.cmp(&male) {
            std::cmp::Ordering::Greater => (Gender::Female, false),
            std::cmp::Ordering::Less => (Gender::Male, false),
            std::cmp::Ordering::Equal => (Gender::Unknown, false),
        };
    }
    match given_name_log_odds(name) {
        x if x >= WEAK_PRIOR_LOG_ODDS => (Gender::Male, false),
        x if x <= -WEAK_PRIOR_LOG_ODDS => (Gender::Female, false),
        _ => (Gender::Unknown, false),
    }
}

/// True when `name` is a surname and a trade ending in 师 that women and
/// men alike follow (王老师, 沈设计师, 周律师: that 师 is no master's or
/// monk's, 法师, 禅师), or a surname after 小 or 阿 (小王 is no king): a
/// surname alone names no gender.
fn genderless_title(name: &str) -> bool {
    const TRADES: &[&str] = &[
        "老师",
        "老師",
        "教师",
        "教師",
        "律师",
        "律師",
        "医师",
        "醫師",
        "设计师",
        "設計師",
        "工程师",
        "工程師",
        "会计师",
        "會計師",
        "摄影师",
        "攝影師",
        "化妆师",
        "化妝師",
        "咨询师",
        "諮詢師",
        "药师",
        "藥師",
        "讲师",
        "講師",
        // a fortune-teller (許半仙): the 仙 is no woman's given name
        "半仙",
    ];
    let one_surname = |s: &str| {
        let mut chars = s.chars();
        matches!((chars.next(), chars.next()), (Some(c), None) if super::names::is_surname(c))
    };
    TRADES
        .iter()
        .filter_map(|t| name.strip_suffix(t))
        .any(one_surname)
        // 小王, 阿侯: a surname that is also a title, not a king or a
        // marquis (小梅, 小燕 keep their given-name lean; 老王 is most often
        // a man, as its weak prior says).
        || ["小", "阿"]
            .iter()
            .filter_map(|p| name.strip_prefix(p))
            .any(|s| one_surname(s) && STRONG_MALE.iter().chain(STRONG_FEMALE).any(|t| *t == s))
}

/// How much more often the given name's characters name a man than a woman
/// (ln of the ratio × 100, summed; women negative), from counts of Chinese
/// names by gender ([`GIVEN_NAME_CHARS`]). The given name is the name but its
/// surname: the first character of a name of three or more, or of two when
/// that is a common surname (高朗 → 朗, 秀莲 → 秀莲).
pub(super) fn given_name_log_odds(name: &str) -> i32 {
    static TABLE: std::sync::LazyLock<rustc_hash::FxHashMap<char, i16>> =
        std::sync::LazyLock::new(|| {
            GIVEN_NAME_CHARS
                .lines()
                .filter(|l| !l.starts_with('#'))
                .filter_map(|l| {
                    let (c, v) = l.split_once('\t')?;
                    Some((c.chars().next()?, v.parse().ok()?))
                })
                .collect()
        });
    let simplified = crate::synth::to_simplified(name);
    let chars: Vec<char> = simplified.chars().collect();
    let skip = match chars.len() {
        0 | 1 => 0,
        2 => usize::from(super::names::is_surname(chars[0])),
        _ => 1,
    };
    chars[skip..]
        .iter()
        .map(|c| i32::from(TABLE.get(c).copied().unwrap_or(0)))
        .sum()
}

/// Given-name characters and their log-odds of naming a man (×100), from
/// `ngender`'s counts (`scripts/gen-name-prior.sh`, data/README.md).
const GIVEN_NAME_CHARS: &str = include_str!("data/given-name-gender.tsv");

/// Summed log-odds (×100) from which a given name is a weak prior: about
/// 2 : 1.
const WEAK_PRIOR_LOG_ODDS: i32 = 70;

/// The gender of a kinship or role word that names a character (父亲,
/// 老汉, 母亲 …), whatever the pronouns near it say.
fn role_gender(name: &str) -> Option<Gender> {
    let ends = |words: &[&str]| words.iter().any(|w| name.ends_with(w));
    if ends(MALE_ROLES) {
        Some(Gender::Male)
    } else if ends(FEMALE_ROLES) {
        Some(Gender::Female)
    } else {
        None
    }
}

const MALE_ROLES: &[&str] = &[
    "父亲",
    "父親",
    "爸爸",
    "老汉",
    "老漢",
    "老头",
    "老頭",
    "丈夫",
    "儿子",
    "兒子",
    "爷爷",
    "爺爺",
    "外公",
    "舅舅",
    "姐夫",
    "妹夫",
    "女婿",
    "公公",
    "岳父",
    "小伙子",
    "小夥子",
    "男人",
    "老爷子",
    "老爺子",
    "大爷",
    "大爺",
    "和尚",
    "丈人",
    "小厮",
    "小廝",
];
const FEMALE_ROLES: &[&str] = &[
    "母亲",
    "母親",
    "妈妈",
    "媽媽",
    "妻子",
    "老婆",
    "婆婆",
    "岳母",
    "外婆",
    "女人",
    "老太太",
    "大娘",
    "媳妇",
    "媳婦",
    "尼姑",
    "老尼",
    "丫头",
    "丫頭",
    "丫鬟",
    "丫嬛",
];

/// Given-name characters more often a woman's / a man's (a weak prior in
/// classical books).
const WEAK_FEMALE: &str = "妙黛钗釵凤鳳莲蓮兰蘭香琴雪娇嬌娟婷娜玲萍梅燕翠霞芳丽麗秀英红紅花菱莺鶯鹃鵑鸳鴛鸯鴦麝晴纹紋绮綺碧霜素月春纨紈桂巧钏釧琥珀鹦鸚茜蕊薇媛妮姬娥莉菊莹瑩倩婉娴嫻嫣姗婵嬋姣妍淑惠慧静靜洁潔珠琼瓊枝";
const WEAK_MALE: &str = "刚剛强強龙龍虎彪雄杰傑武军軍勇斌健伟偉豪峰鹏鵬飞飛海山石林森涛濤波明亮光辉輝国國栋棟梁权權锤錘功民贵貴富福生根柱才财財德忠义義仁成兵全发發旺顺順者魔怪";

/// Title and kinship words that make a name female or male outright.
const STRONG_FEMALE: &[&str] = &[
    "女", "娘", "婆", "妇", "婦", "公主", "夫人", "太太", "小姐", "姐", "妹", "嫂", "婶", "嬸",
    "姨", "妈", "媽", "姑", "奶奶", "氏", "妃", "后", "姥姥", "嬷嬷", "嬤嬤", "菩萨", "菩薩",
    "观音", "觀音", "母", "妪", "嫗", "婢",
];
const STRONG_MALE: &[&str] = &[
    "哥", "叔", "爷", "爺", "伯", "公", "王", "帝", "兄", "弟", "爹", "侯", "将", "將", "军", "軍",
    "僧", "父", "师", "師", "郎", "子", "道士", "道人", "和尚", "先生", "秀才", "员外", "員外",
    "太监", "太監", "相公", "掌柜", "掌櫃",
    // Offices and callings of classical fiction that men hold.
    "帝君", "星君", "真君", "老君", "昏君", "判官", "刺史", "星官", "丞相", "太尉", "知府", "知县",
    "知縣", "县令", "縣令", "国丈", "國丈", "驸马", "駙馬", "书生", "書生", "樵夫", "渔翁", "漁翁",
    "老翁", "仙童", "童儿", "童兒", "老儿", "老兒",
    // Offices, ranks and degrees of the empire, all held by men (蔡御史,
    // 張團練, 何觀察, 賀太守).
    "御史", "主事", "提刑", "巡按", "巡抚", "巡撫", "总督", "總督", "都督", "提督", "总兵", "總兵",
    "参将", "參將", "守备", "守備", "千户", "千戶", "百户", "百戶", "都监", "都監", "团练", "團練",
    "太守", "府尹", "尚书", "尚書", "侍郎", "学士", "學士", "翰林", "状元", "狀元", "举人", "舉人",
    "进士", "進士", "主簿", "通判", "推官", "县丞", "縣丞", "提辖", "提轄", "教头", "教頭", "都头",
    "都頭", "虞候", "衙内", "衙內", "节级", "節級", "观察", "觀察", "押司", "朝奉", "真人", "天师",
    "天師", "驿丞", "驛丞", "僧官",
];
#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::cast::Character;
    use crate::text::speaker::test_support::{test_spans, test_views};

    /// Genders guessed for `names` (name, aliases) from `lines`.
    fn guessed(names: &[(&str, &[&str])], lines: &[&str]) -> Vec<(Gender, GenderEvidence)> {
        guessed_in(names, &[lines])
    }

    /// [`guessed`] over a book of several chapters, each its lines.
    fn guessed_in(
        names: &[(&str, &[&str])],
        chapters: &[&[&str]],
    ) -> Vec<(Gender, GenderEvidence)> {
        let spans: Vec<_> = chapters.iter().map(|lines| test_spans(lines)).collect();
        let views: Vec<_> = chapters
            .iter()
            .zip(&spans)
            .map(|(lines, spans)| test_views(lines, spans))
            .collect();
        let mut found: Vec<Discovered> = names
            .iter()
            .map(|(n, a)| Discovered {
                character: Character {
                    name: (*n).into(),
                    aliases: a.iter().map(|s| (*s).into()).collect(),
                    gender: Gender::Unknown,
                    voice: None,
                },
                count: 1,
                evidence: GenderEvidence::default(),
            })
            .collect();
        guess_genders(&mut found, &views);
        found
            .iter()
            .map(|d| (d.character.gender, d.evidence))
            .collect()
    }

    #[test]
    fn genders_from_pronouns_titles_and_address() {
        let names: &[(&str, &[&str])] = &[
            ("林晚秋", &["晚秋"]),
            ("小翠", &[]),
            ("阿福", &[]),
            ("周大山", &[]),
            ("陈默", &[]),
        ];
        let lines = [
            "林晚秋走进屋里，她放下了包。",
            "“晚秋姐，你回来了。”",
            "丫头小翠端茶进来。小翠道：“请用茶。”",
            "小厮阿福跑进来。阿福说：“老爷回来了。”",
            "周大山说：“走。”他转身出了门。",
            "周大山站起来，他看了看天。",
            "陈默来了。",
        ];
        let got = guessed(names, &lines);
        let genders: Vec<Gender> = got.iter().map(|(g, _)| *g).collect();
        assert_eq!(
            genders,
            [
                Gender::Female,
                Gender::Female,
                Gender::Male,
                Gender::Male,
                Gender::Unknown
            ]
        );
        assert_eq!(got[0].1.she, 1);
        assert_eq!(got[0].1.female_titles, 1);
        assert_eq!(got[2].1.male_titles, 1);
        assert_eq!(got[3].1.he, 2);
        // Evidence absent: unknown with no confidence.
        assert_eq!(got[4].1.guess().confidence, 0.0);
        assert!(got[0].1.guess().confidence > 0.5);
    }

    #[test]
    fn a_pronoun_stands_for_a_subject_of_its_own_sentence() {
        let names: &[(&str, &[&str])] = &[("高远", &[]), ("叶青", &[])];
        let lines = [
            // Not a subject, a possessor, the sentence before: 她 is someone else.
            "叶青听高远这么说，她笑了。",
            "叶青走到高远的床前，她坐下了。",
            "高远走了。她一个人留在屋里。",
            // The subject, across a quote: 他 is 高远.
            "高远说：“走。”他转身出了门。",
        ];
        let got = guessed(names, &lines);
        assert_eq!((got[0].1.she, got[0].1.he), (0, 1));
        assert_eq!((got[1].1.she, got[1].1.he), (2, 0));
    }

    #[test]
    fn one_named_in_a_clause_of_time_is_no_pronouns_antecedent() {
        let names: &[(&str, &[&str])] = &[("高远", &[]), ("叶青", &[])];
        let lines = [
            // A clause of time: the 她 after it is someone else's (so is the
            // next sentence's).
            "高远吃苹果的时候，她才又问他。",
            "高远临走时，她塞给他一包糖。",
            "高远喝完这碗汤以后，她收了碗。",
            // A clause of place or a length of time is the sentence's own.
            "叶青躲在门后，她不敢出声。",
            "叶青等了两个小时，她有些急了。",
        ];
        let got = guessed(names, &lines);
        assert_eq!((got[0].1.she, got[0].1.he, got[0].1.she_next), (0, 0, 0));
        assert_eq!((got[1].1.she, got[1].1.he), (2, 0));
        assert!(in_time_clause("撒完这个谎后，她"));
        assert!(!in_time_clause("走到屋后，她"));
        assert!(!in_time_clause("最后，她"));
    }

    #[test]
    fn the_book_teaches_what_its_men_and_women_do() {
        // A book without 她: 丫头 and 小厮 settle two characters; 周竹 does
        // what the men do, 柳絮 what the women do.
        let names: &[(&str, &[&str])] =
            &[("翠云", &[]), ("石墨", &[]), ("周竹", &[]), ("柳絮", &[])];
        let mut lines = vec!["丫头翠云来了。", "小厮石墨来了。"];
        for _ in 0..12 {
            lines.extend([
                "翠云对镜梳头插花。",
                "石墨拱手作揖牵马。",
                "周竹拱手作揖牵马。",
                "柳絮对镜梳头插花。",
            ]);
        }
        let got = guessed(names, &lines);
        let genders: Vec<Gender> = got.iter().map(|(g, _)| *g).collect();
        assert_eq!(
            genders,
            [Gender::Female, Gender::Male, Gender::Male, Gender::Female]
        );
        assert_eq!(got[2].1.context(), Gender::Male);
        assert!(got[2].1.context_milli < 0 && got[3].1.context_milli > 0);
        // A weak hint: little confidence.
        assert!(got[2].1.guess().confidence < 0.5);
    }

    #[test]
    fn a_book_without_she_does_not_make_every_woman_a_man() {
        // Classical style: 他 for everyone, 她 never written.
        let mut lines = vec!["丫头平儿进来。", "平儿姐姐来了。"];
        lines.extend(std::iter::repeat_n("平儿道：“是。”他笑了。", 40));
        let got = guessed(&[("平儿", &[])], &lines);
        assert!(!got[0].1.book_has_she);
        assert_eq!(got[0].0, Gender::Female, "{:?}", got[0].1);
    }

    #[test]
    fn a_classical_book_of_men_leans_male_for_the_one_nothing_tells() {
        // A book of men called 先生 (settled by their title) and one, 甘甫,
        // whom nothing in it tells a man or a woman.
        fn guess_gan(men: usize) -> (Gender, GenderEvidence) {
            let names: Vec<String> = "甲乙丙丁戊己庚辛壬癸子丑寅卯辰巳午未申酉戌亥"
                .chars()
                .take(men)
                .map(|c| format!("{c}先生"))
                .collect();
            let mut cast: Vec<(&str, &[&str])> =
                names.iter().map(|n| (n.as_str(), &[][..])).collect();
            cast.push(("甘甫", &[]));
            let lines: Vec<String> = names
                .iter()
                .map(|n| format!("{n}道：「來了。」"))
                .chain(std::iter::once("甘甫道：「去罷。」".to_owned()))
                .collect();
            let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
            guessed(&cast, &lines).pop().unwrap()
        }
        let (gender, e) = guess_gan(24);
        assert_eq!(e.book_lean, Gender::Male, "{e:?}");
        assert_eq!(gender, Gender::Male, "{e:?}");
        assert!(e.guess().confidence < 0.5, "{e:?}");
        // Too few settled to lean: nothing tells.
        let (gender, e) = guess_gan(10);
        assert_eq!(e.book_lean, Gender::Unknown, "{e:?}");
        assert_eq!(gender, Gender::Unknown, "{e:?}");
    }

    #[test]
    fn a_modern_book_without_she_has_men_for_its_he() {
        // Modern vernacular (的 often, 道 never) without a woman: 他 is a man,
        // and a given name reads as a modern one (仲 names men).
        let modern = [
            "守城的赵仲站在高高的城墙上。",
            "他看着远处的敌人的营地。",
            "城下的士兵们在黑暗的夜里等着。",
        ];
        let got = guessed(&[("赵仲", &[])], &modern);
        assert!(
            got[0].1.vernacular && !got[0].1.book_has_she,
            "{:?}",
            got[0].1
        );
        assert_eq!(got[0].0, Gender::Male, "{:?}", got[0].1);
        // The same name in a classical book says nothing by its given name alone.
        let classical = ["赵仲道：“守城。”", "众人道：“是。”", "赵仲又道：“去罢。”"];
        let got = guessed(&[("赵仲", &[])], &classical);
        assert!(!got[0].1.vernacular, "{:?}", got[0].1);
        assert_eq!(got[0].0, Gender::Unknown, "{:?}", got[0].1);
    }

    #[test]
    fn a_nickname_in_quote_marks_has_no_name_prior() {
        // 翠 and 花 name women, but a nickname says nothing of its owner.
        let lines = ["“翠花”说：“来。”", "“翠花”站起来。", "她笑了。"];
        let got = guessed(&[("翠花", &[]), ("苏翠花", &[])], &lines);
        assert_eq!(got[0].1.name, Gender::Unknown, "{:?}", got[0].1);
        let lines = ["苏翠花说：“来。”"];
        let got = guessed(&[("苏翠花", &[])], &lines);
        assert_eq!(got[0].1.name, Gender::Female, "{:?}", got[0].1);
    }

    #[test]
    fn a_weak_name_prior_gives_way_to_evidence() {
        // 珍 is often a woman's name, but the book says otherwise.
        let lines = [
            "贾珍说：“来。”他笑了。",
            "贾珍站起来，他走了。",
            "他父亲贾珍来了。",
            "她笑了。",
        ];
        let got = guessed(&[("贾珍", &[])], &lines);
        assert_eq!(got[0].0, Gender::Male, "{:?}", got[0].1);
    }

    #[test]
    fn given_names_lean_by_how_often_they_name_men_or_women() {
        // Surname left out: of three characters the first, of two only a
        // common surname.
        for (name, gender) in [
            ("高朗", Gender::Male),
            ("吴仲平", Gender::Male),
            ("乔伯年", Gender::Male),
            ("秀莲", Gender::Female),
            ("贺秀莲", Gender::Female),
            ("賀秀蓮", Gender::Female),
            ("王丽娟", Gender::Female),
            ("米阴阳", Gender::Unknown),
        ] {
            assert_eq!(
                name_gender(name, true),
                (gender, false),
                "{name}: {}",
                given_name_log_odds(name)
            );
        }
        // A classical book keeps to the short lists (贾珍 and 贾蓉 are men).
        assert_eq!(name_gender("贾珍", false), (Gender::Unknown, false));
        assert_eq!(name_gender("贾蓉", false), (Gender::Unknown, false));
        assert_eq!(name_gender("林黛玉", false), (Gender::Female, false));
        // 林 is the surname of 林晚, not a man's given name; in 翠林 (no
        // surname) it is, against 翠.
        assert_eq!(name_gender("林晚", false), (Gender::Unknown, false));
        assert_eq!(name_gender("翠林", false), (Gender::Unknown, false));
        assert_eq!(name_gender("贾珍", true), (Gender::Female, false));
        // 玉 (a woman's) and 厚 (a man's) weigh about the same: no lean.
        assert!(given_name_log_odds("孙玉厚").abs() < WEAK_PRIOR_LOG_ODDS);
        assert_eq!(given_name_log_odds(""), 0);
        assert_eq!(given_name_log_odds("Tom"), 0);
    }

    #[test]
    fn kinship_and_role_words_decide_against_nearby_pronouns() {
        // She is near 父亲 in every line, as the daughter watching him.
        let lines = [
            "父亲看着她，她低下了头。",
            "父亲说：“走吧。”她跟了上去。",
            "母亲叹了口气，他没有作声。",
        ];
        let got = guessed(&[("父亲", &[]), ("母亲", &[])], &lines);
        assert_eq!(got[0].0, Gender::Male, "{:?}", got[0].1);
        assert!(got[0].1.name_role);
        assert_eq!(got[1].0, Gender::Female, "{:?}", got[1].1);
        assert_eq!(role_gender("老汉"), Some(Gender::Male));
        assert_eq!(role_gender("徐主任"), None);
    }

    #[test]
    fn a_title_before_a_naming_verb_is_the_named_ones() {
        let got = guessed(
            &[("墨川", &[]), ("青禾", &[])],
            &[
                "他有个书童名唤墨川，一个丫鬟名叫青禾。",
                "墨川道：“走。”",
                "青禾道：“好。”",
            ],
        );
        assert_eq!(got[0].0, Gender::Male, "{:?}", got[0].1);
        assert_eq!(got[0].1.male_titles, 1);
        assert_eq!(got[1].1.female_titles, 1);
    }

    #[test]
    fn a_title_before_a_comma_and_a_naming_verb_and_what_others_call_one() {
        let got = guessed(
            &[("程川", &[]), ("阿朗", &[]), ("小满", &[])],
            &[
                "带我们的是一个学长，名叫程川，个子很高。",
                "“那是阿朗，你叫他阿朗就行。”",
                "“我叫她小满。”",
                "程川道：“走。”",
                "阿朗道：“好。”",
                "小满道：“嗯。”",
            ],
        );
        assert_eq!(got[0].1.male_titles, 1, "{:?}", got[0].1);
        assert_eq!(got[1].1.male_titles, 1, "{:?}", got[1].1);
        assert_eq!(got[2].1.female_titles, 1, "{:?}", got[2].1);
        // A comma without a naming verb names no one (学长，程川…).
        let got = guessed(
            &[("程川", &[])],
            &["他是学长，程川不是。", "程川道：“走。”"],
        );
        assert_eq!(got[0].1.male_titles, 0, "{:?}", got[0].1);
    }

    #[test]
    fn a_pronoun_opening_the_next_paragraph_goes_on_with_the_subject() {
        let got = guessed(
            &[("青禾", &[]), ("墨川", &[])],
            &[
                "墨川也看见了。",
                "他感到眼前一阵发黑。",
                "墨川推开门。",
                "他走进院子，站住了。",
                "青禾坐在窗前。",
                "她放下针线，想了一会。",
                // Not after a turn, a question, or one looked at.
                "“走吧。”墨川说。",
                "她点点头。",
                "墨川来了吗？",
                "她不知道。",
                "墨川看着青禾。",
                "她笑了。",
                // Nor after one who is not the subject of the whole sentence.
                "不过，他又想，青禾在家。",
                "他就放心了。",
            ],
        );
        assert_eq!(next(&got[0].1), (1, 0), "{:?}", got[0].1);
        assert_eq!(next(&got[1].1), (0, 2), "{:?}", got[1].1);
        assert_eq!(got[0].0, Gender::Female, "{:?}", got[0].1);
        assert_eq!(got[1].0, Gender::Male, "{:?}", got[1].1);
    }

    #[test]
    fn a_pronoun_opening_the_next_sentence_goes_on_with_the_first_one_named() {
        let got = guessed(
            &[("青禾", &[]), ("墨川", &[])],
            &[
                "青禾没接话。她怕一开口就哭出来。",
                "周六一早，青禾就醒了。她趿着拖鞋出去。",
                // Not past a question or another one named.
                "墨川来了吗？她不知道。",
                "墨川看着青禾。她笑了。",
                // A name inside a quote is not what the narration's
                // pronouns stand for.
                "“墨川，我等了他十年，他连一句话都没有。”",
            ],
        );
        assert_eq!(next(&got[0].1), (2, 0), "{:?}", got[0].1);
        assert_eq!(next(&got[1].1), (0, 0), "{:?}", got[1].1);
        assert_eq!((got[1].1.she, got[1].1.he), (0, 0), "{:?}", got[1].1);
    }

    /// (她, 他) opening the next sentence or paragraph.
    fn next(e: &GenderEvidence) -> (usize, usize) {
        (e.she_next, e.he_next)
    }

    /// (female, male) titles.
    fn titles(e: &GenderEvidence) -> (usize, usize) {
        (e.female_titles, e.male_titles)
    }

    #[test]
    fn what_one_named_before_a_quote_calls_themselves_is_a_title() {
        let got = guessed(
            &[("青禾", &[]), ("墨川", &[])],
            &[
                "墨川竖起一根手指，“本王只是路过。”",
                "青禾冷冷道：“本宫不见客。”",
                // Not one spoken to, nor 你老子 (your father).
                "墨川看着青禾，问：“你老子呢？”",
            ],
        );
        assert_eq!(titles(&got[0].1), (1, 0), "{:?}", got[0].1);
        assert_eq!(titles(&got[1].1), (0, 1), "{:?}", got[1].1);
    }

    #[test]
    fn a_tag_that_opens_the_next_quote_is_not_the_last_ones() {
        // 「…老身…」王三官道：「…」: the old woman's 老身 is not his; 「…」
        // 張媽媽道。 after a quote is (its tag).
        let got = guessed(
            &[("王三官", &[]), ("張媽媽", &[])],
            &[
                "張媽媽笑道：「老身明日再來。」王三官道：「小人送你。」",
                "「老身走不動了。」張媽媽道。",
            ],
        );
        assert_eq!(titles(&got[0].1), (0, 0), "{:?}", got[0].1);
        assert_eq!(titles(&got[1].1), (2, 0), "{:?}", got[1].1);
    }

    #[test]
    fn one_acted_on_or_whose_kin_speaks_takes_no_self_word() {
        let got = guessed(
            &[("雷甫", &[])],
            &[
                "那女子見父親被雷甫打了，便去縣裏告道：「奴家冤枉！」",
                "雷甫娘道：「老身走不動了。」",
                "他對雷甫說：「奴家去了。」",
            ],
        );
        assert_eq!(titles(&got[0].1), (0, 0), "{:?}", got[0].1);
    }

    #[test]
    fn a_son_in_law_is_a_husband_only_in_a_modern_book() {
        // Classical (no 她): 蔡甫的女婿 is his daughter's husband.
        let got = guessed(
            &[("蔡甫", &[])],
            &["梁中書是太師蔡甫的女婿。", "蔡甫道：「好。」"],
        );
        assert_eq!(titles(&got[0].1), (0, 0), "{:?}", got[0].1);
        // 平凡的世界's speech: 兰花的女婿 is her husband.
        let got = guessed(
            &[("兰花", &[])],
            &["王满银是兰花的女婿。", "兰花说：“你回来了。”她笑了。"],
        );
        assert_eq!(titles(&got[0].1), (1, 0), "{:?}", got[0].1);
    }

    #[test]
    fn schoolmates_and_fellow_disciples_are_addressed_by_gender() {
        let got = guessed(
            &[("青禾", &[]), ("墨川", &[])],
            &["“青禾学姐，等等我！”", "“墨川师兄，师父找你。”"],
        );
        assert_eq!(titles(&got[0].1), (1, 0), "{:?}", got[0].1);
        assert_eq!(titles(&got[1].1), (0, 1), "{:?}", got[1].1);
    }

    #[test]
    fn a_given_name_character_with_a_bare_title_addresses_its_owner() {
        let got = guessed(
            &[("苏安", &[]), ("许言", &[]), ("林学", &[])],
            &[
                "“安姐，您看这个。”",
                "陶桃跑过来：“言哥，韩总找你。”",
                // Her husband, his friends, and a word of its own.
                "“安姐夫来了。”",
                "“言哥们都到了。”",
                "“学姐，等等。”",
            ],
        );
        assert_eq!(titles(&got[0].1), (1, 0), "{:?}", got[0].1);
        assert_eq!(titles(&got[1].1), (0, 1), "{:?}", got[1].1);
        assert_eq!(titles(&got[2].1), (0, 0), "{:?}", got[2].1);
    }

    #[test]
    fn few_words_around_a_name_count_when_they_lean_far() {
        let around = |milli: i16, words: u32| {
            GenderEvidence {
                context_milli: milli,
                context_words: words,
                ..Default::default()
            }
            .context()
        };
        assert_eq!(around(-176, 38), Gender::Male);
        assert_eq!(around(150, 40), Gender::Female);
        // Not leaning far enough for so few words, nor too few at all.
        assert_eq!(around(-60, 38), Gender::Unknown);
        assert_eq!(around(-400, 12), Gender::Unknown);
        // As before over many words.
        assert_eq!(around(-60, 80), Gender::Male);
    }

    #[test]
    fn what_a_name_is_says_its_gender() {
        let got = guessed(
            &[
                ("陈若溪", &[]),
                ("林默", &[]),
                ("许言", &[]),
                ("苏安", &[]),
                ("周晴", &[]),
            ],
            &[
                "陈若溪是她谈了三年的男朋友，在图书馆上班。",
                "林默是个好姑娘。",
                // A question, what the name is not, a clause too long.
                "许言是不是你男朋友？",
                "苏安是禾润这次比稿的负责人，也是她女儿的老师。",
                "周晴是城南那家开了二十多年的小饭馆老板的女儿",
            ],
        );
        assert_eq!(titles(&got[4].1), (0, 0), "{:?}", got[4].1);
        assert_eq!(titles(&got[0].1), (0, 1), "{:?}", got[0].1);
        assert_eq!(titles(&got[1].1), (1, 0), "{:?}", got[1].1);
        assert_eq!(titles(&got[2].1), (0, 0), "{:?}", got[2].1);
        assert_eq!(titles(&got[3].1), (0, 0), "{:?}", got[3].1);
    }

    #[test]
    fn the_next_paragraph_is_not_the_next_chapter() {
        let got = guessed_in(&[("墨川", &[])], &[&["墨川推开门。"], &["她笑了。"]]);
        assert_eq!(got[0].1.she_next, 0, "{:?}", got[0].1);
        // In one chapter it would count.
        let got = guessed(&[("墨川", &[])], &["墨川推开门。", "她笑了。"]);
        assert_eq!(got[0].1.she_next, 1);
    }

    #[test]
    fn a_pronoun_right_after_a_subject_is_its_own() {
        let got = guessed(
            &[("青禾", &[]), ("墨川", &[])],
            &[
                "青禾她妈早就回来了。",
                "墨川他一下子站了起来。",
                // Not a subject: 她 is someone else.
                "他告诉墨川她要走了。",
            ],
        );
        assert_eq!((got[0].1.she_after, got[0].1.he_after), (1, 0));
        assert_eq!((got[1].1.she_after, got[1].1.he_after), (0, 1));
        assert_eq!(got[0].0, Gender::Female, "{:?}", got[0].1);
        assert_eq!(got[1].0, Gender::Male, "{:?}", got[1].1);
    }

    #[test]
    fn marrying_says_who_is_the_bride() {
        let got = guessed(
            &[("墨川", &[]), ("青禾", &[]), ("远山", &[]), ("晚晴", &[])],
            &[
                "第二年，青禾嫁给了墨川。",
                "远山娶了晚晴。",
                "墨川道：“走。”",
                "青禾道：“好。”",
            ],
        );
        // 墨川 and 远山 marry a woman, 青禾 and 晚晴 a man.
        assert_eq!(
            got.iter().map(|g| titles(&g.1)).collect::<Vec<_>>(),
            [(0, 1), (1, 0), (0, 1), (1, 0)]
        );
    }

    #[test]
    fn a_wife_named_by_her_husband_makes_him_a_man() {
        let got = guessed(
            &[
                ("乔大户", &[]),
                ("韩道国", &[]),
                ("贲四", &[]),
                ("桂兰", &[]),
                ("丫鬟", &[]),
            ],
            &[
                "乔大户娘子来拜，坐了半日。",
                "韩道国老婆在门首站着。",
                "贲四嫂拿茶来。",
                "桂兰嫂笑着端上饭来。",
                "丫鬟媳妇们都散了。",
            ],
        );
        // His wife without 的 (乔大户娘子, 韩道国老婆), the wife of a man
        // called by his rank (贲四嫂); 桂兰嫂 is the woman herself, and
        // after a role noun it is a list of servants, nobody's wife.
        assert_eq!(
            got.iter().map(|g| titles(&g.1)).collect::<Vec<_>>(),
            [(0, 1), (0, 1), (0, 1), (1, 0), (0, 0)]
        );
        assert_eq!(name_gender("老尼", false), (Gender::Female, true));
    }

    #[test]
    fn what_one_is_to_someone_in_a_modern_book_says_the_gender() {
        let got = guessed(
            &[("林晚", &[]), ("江屿", &[]), ("苏念", &[]), ("陆川", &[])],
            &[
                "他女朋友林晚来了。",
                "校草江屿站在门口。",
                "学姐苏念笑了。",
                "她男朋友陆川没来。",
                "林晚道：“走。”",
            ],
        );
        assert_eq!(
            got.iter().map(|g| titles(&g.1)).collect::<Vec<_>>(),
            [(1, 0), (0, 1), (1, 0), (0, 1)]
        );
    }

    #[test]
    fn titles_inside_a_name_decide_it() {
        for (name, gender) in [
            ("张姥姥", Gender::Female),
            ("吴嬷嬷", Gender::Female),
            ("沈母", Gender::Female),
            ("门子", Gender::Male),
            ("胖子", Gender::Male),
            ("女王", Gender::Female),
            ("嫂子", Gender::Female),
            ("老妪", Gender::Female),
            ("侍婢", Gender::Female),
            // Offices of classical fiction.
            ("判官", Gender::Male),
            ("王刺史", Gender::Male),
            ("东岳帝君", Gender::Male),
            ("蔡御史", Gender::Male),
            ("張團練", Gender::Male),
            ("何觀察", Gender::Male),
            ("祝朝奉", Gender::Male),
            ("丈人", Gender::Male),
            ("小廝", Gender::Male),
            ("丫頭", Gender::Female),
        ] {
            assert_eq!(name_gender(name, false), (gender, true), "{name}");
        }
        // 子 after a woman's given-name character is a nickname.
        assert_ne!(name_gender("燕子", false), (Gender::Male, true));
        // 师 of a master or a monk is a man's; of a trade either gender
        // follows, after a surname, nobody's.
        assert_eq!(name_gender("法师", false), (Gender::Male, true));
        assert_eq!(name_gender("唐禅师", false), (Gender::Male, true));
        for name in [
            "王老师",
            "沈设计师",
            "周律師",
            "林医师",
            "小王",
            "阿侯",
            "許半仙",
        ] {
            for modern in [false, true] {
                assert_eq!(
                    name_gender(name, modern),
                    (Gender::Unknown, false),
                    "{name}"
                );
            }
        }
        // 梅 and 燕 are surnames too, but 小梅 and 小燕 are girls.
        assert_eq!(name_gender("小梅", false), (Gender::Female, false));
        assert_eq!(name_gender("小燕", false), (Gender::Female, false));
    }

    #[test]
    fn a_teacher_is_as_her_pronouns_say() {
        let names: &[(&str, &[&str])] = &[("王老师", &[])];
        let lines = [
            "王老师走进教室，她放下了书。",
            "王老师笑了笑，她说：“上课。”",
        ];
        let got = guessed(names, &lines);
        assert_eq!(got[0].0, Gender::Female, "{:?}", got[0].1);
    }

    #[test]
    fn a_given_name_character_with_a_rank_and_a_title_addresses_its_owner() {
        let names: &[(&str, &[&str])] = &[
            ("钱鹤", &[]),
            ("孟云舒", &[]),
            ("祝远山", &[]),
            ("祝春梅", &[]),
            ("秦澈", &[]),
            ("何澈", &[]),
        ];
        let lines = [
            "鹤二爷回来了，说要吃茶。",
            "众人都笑：“鹤二爷又醉了。”",
            "舒丫头在窗下绣花。",
            "祝大爷来了，祝姑娘躲进屋里。",
            "门外有人喊：“祝大爷！”",
            "澈大爷走了过来。",
        ];
        let got = guessed(names, &lines);
        let genders: Vec<Gender> = got.iter().map(|(g, _)| *g).collect();
        assert_eq!(
            genders,
            [
                Gender::Male,
                Gender::Female,
                Gender::Male,
                Gender::Female,
                // 澈 is two characters' given name: whose is not said.
                Gender::Unknown,
                Gender::Unknown,
            ],
            "{got:?}"
        );
        assert_eq!(got[0].1.male_titles, 2);
        assert_eq!(got[2].1.male_titles, 2);
        assert_eq!(got[3].1.female_titles, 1);
    }

    #[test]
    fn a_surname_with_a_modern_title_addresses_its_owner() {
        let names: &[(&str, &[&str])] = &[("郑海", &[]), ("唐蔓", &[]), ("秦峥", &[])];
        let lines = [
            "手机响了，她接起来：“郑哥？”",
            "“唐姐，你先走。”",
            "“郑先生也在。”",
            // 秦总 says neither.
            "“秦总，菜现在上吗？”",
        ];
        let got = guessed(names, &lines);
        let genders: Vec<Gender> = got.iter().map(|(g, _)| *g).collect();
        assert_eq!(genders[..2], [Gender::Male, Gender::Female], "{got:?}");
        assert_eq!(titles(&got[0].1), (0, 2));
        assert_eq!(titles(&got[1].1), (1, 0));
        assert_eq!(titles(&got[2].1), (0, 0));
    }

    #[test]
    fn gender_hints() {
        assert_eq!(gender_hint("润叶姐"), Gender::Female);
        assert_eq!(gender_hint("福堂叔"), Gender::Male);
        assert_eq!(gender_hint("毛仲"), Gender::Unknown);
        assert_eq!(gender_hint("公主"), Gender::Female);
        assert_eq!(gender_hint("女王"), Gender::Female);
    }

    #[test]
    fn one_title_outweighs_a_given_name_and_the_words_around_it() {
        // Called 哥儿 once; a given name and the words around it that lean
        // to a woman, a little each: a man.
        let e = GenderEvidence {
            male_titles: 1,
            name: Gender::Female,
            context_milli: 90,
            context_words: 90,
            ..GenderEvidence::default()
        };
        assert_eq!(e.context(), Gender::Female);
        assert_eq!(e.guess().gender, Gender::Male);
        // Two titles of each: unknown.
        let e = GenderEvidence {
            male_titles: 2,
            female_titles: 2,
            ..GenderEvidence::default()
        };
        assert_eq!(e.guess().gender, Gender::Unknown);
    }

    #[test]
    fn a_womans_role_of_the_stage_or_trade_before_a_name_makes_a_woman() {
        // Only the words around otherwise, which lean to the man beside them.
        let lines = [
            "那边院里有小旦秋官唱得最好。",
            "宝生走过去，秋官正在廊下坐着，宝生笑着作揖。",
            "女记者阿念举起相机，对着台上的老周拍了一张。",
        ];
        let got = guessed(&[("秋官", &[]), ("阿念", &[])], &lines);
        assert_eq!(got[0].1.female_titles, 1, "{:?}", got[0].1);
        assert_eq!(got[0].0, Gender::Female, "{:?}", got[0].1);
        assert_eq!(got[1].0, Gender::Female, "{:?}", got[1].1);
    }
}
