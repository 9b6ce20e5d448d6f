//! Word tables of what a name is and is not: common and compound surnames,
//! common words that stand where a speaker's name would, role nouns, and
//! characters that never open, end or stand inside a name.

use crate::text::cast::Gender;

/// Common surnames, simplified and traditional, and those web novels favour
/// (楚, 洛, 沐, 墨, 傅, 厉, 薄 …).
const SURNAMES: &str = "王李张張刘劉陈陳杨楊黄黃赵趙吴吳周徐孙孫马馬朱胡郭何高林罗羅郑鄭梁谢謝宋唐许許韩韓冯馮邓鄧曹彭曾肖萧蕭田董袁潘于蒋蔣蔡余杜叶葉程苏蘇魏吕呂丁任沈姚卢盧姜崔钟鍾谭譚陆陸汪范金石廖贾賈夏韦韋付方白邹鄒孟熊秦邱江尹薛闫阎閻段雷侯龙龍史陶黎贺賀顾顧毛郝龚龔邵万萬钱錢严嚴覃武戴莫孔向汤湯常温溫康施文牛樊葛邢安齐齊易乔喬伍庞龐颜顏倪庄莊聂聶章鲁魯岳翟殷詹申欧歐耿关關兰蘭焦俞左柳甘祝包宁寧尚符舒阮柯纪紀梅童凌毕畢单單季裴霍涂成苗谷盛曲翁冉骆駱蓝藍路游辛靳管柴蒙鲍鮑华華喻祁蒲房滕屈饶饒解牟艾尤阳陽时時穆农農司卓古吉缪繆简簡车車项項连連芦蘆麦麥褚娄婁窦竇戚岑景党黨宫宮费費卜冷晏席卫衛米柏宗瞿桂全佟应應臧闵閔苟邬鄔边邊卞姬师師和仇栾欒隋商刁沙荣榮巫寇桑郎甄丛叢仲虞敖巩鞏明佘池查麻苑迟遲邝鄺猪豬楚洛沐墨傅厉厲薄封燕战戰权權凤鳳云雲君扈晁裘嵇蔺藺荀邴阚闞宓芮奚郜蒯鄢郦酈";

/// A set of characters of the Basic Multilingual Plane, a bit each: a
/// lookup per character of a book stays cheap.
pub(super) struct CharBits(Box<[u64; 1024]>);

impl CharBits {
    /// The set of `chars` (every one in the plane).
    pub(super) fn of(chars: impl IntoIterator<Item = char>) -> CharBits {
        let mut bits = Box::new([0u64; 1024]);
        for c in chars {
            let c = c as usize;
            assert!(c < 0x10000, "U+{c:X} is outside the plane");
            bits[c / 64] |= 1 << (c % 64);
        }
        CharBits(bits)
    }

    pub(super) fn contains(&self, c: char) -> bool {
        let c = c as usize;
        c < 0x10000 && self.0[c / 64] & (1 << (c % 64)) != 0
    }
}

/// Is `c` one of the common surnames?
pub(crate) fn is_surname(c: char) -> bool {
    static SET: std::sync::LazyLock<CharBits> =
        std::sync::LazyLock::new(|| CharBits::of(SURNAMES.chars()));
    SET.contains(c)
}

/// Ranks among brothers that close a man's name (王四, 常二).
pub(super) const RANK_NUMERALS: [char; 9] = ['二', '三', '四', '五', '六', '七', '八', '九', '十'];

/// True when a name of three or more characters opens with a common surname
/// (or of four at most with a compound one: 慕容雪, 上官婉儿).
pub(super) fn has_surname(name: &str) -> bool {
    let n = name.chars().count();
    (name.chars().next().is_some_and(is_surname) && n <= 3)
        || ((3..=4).contains(&n) && COMPOUND_SURNAMES.iter().any(|c| name.starts_with(c)))
}

/// Common words that open clauses in speaker positions but name nobody.
const NOT_NAMES: &[&str] = &[
    // Classical narration's clause openers before 道/说 (心下想道, 方欲说时,
    // 话未说完, 人回说, 早有人道, 旁有一人, 诗曰).
    "心下",
    "方欲",
    "正欲",
    "意欲",
    "欲待",
    "话未",
    "話未",
    "人回",
    "今见",
    "今見",
    "方回",
    "携手",
    "攜手",
    "早有",
    "旁有",
    "怪见",
    "怪見",
    "诗曰",
    "詩曰",
    "词曰",
    "詞曰",
    "赞曰",
    "讚曰",
    // Where (路上面的地畔上有个妇女问他: no 路上面).
    "上面",
    "下面",
    "里面",
    "裡面",
    "外面",
    "前面",
    "后面",
    "後面",
    "对面",
    "對面",
    "旁边",
    "旁邊",
    // How one speaks (小声说, 低声道).
    "小声",
    "小聲",
    "大声",
    "大聲",
    "低声",
    "低聲",
    "高声",
    "高聲",
    "轻声",
    "輕聲",
    "主动",
    "主動",
    "随口",
    "隨口",
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
    // Function words that open clauses before a speech verb (继续说,
    // 何况…说, 纷纷说, 分别问).
    "继续",
    "繼續",
    "何况",
    "何況",
    "许多",
    "許多",
    "关于",
    "關於",
    "分别",
    "分別",
    "纷纷",
    "紛紛",
];

/// Is `s` one of [`NOT_NAMES`]? (A set: asked for every candidate.) A
/// Traditional word is asked by its Simplified characters too, so that every
/// variant is covered (嘴裏 and 嘴裡 as 嘴里, 衆人 and 眾人 as 众人).
pub(super) fn is_not_name(s: &str) -> bool {
    static SET: std::sync::LazyLock<rustc_hash::FxHashSet<&'static str>> =
        std::sync::LazyLock::new(|| NOT_NAMES.iter().copied().collect());
    SET.contains(s) || simplified(s).is_some_and(|s| SET.contains(s.as_str()))
}

/// `s` in Simplified characters, where any of its characters is Traditional.
pub(super) fn simplified(s: &str) -> Option<String> {
    crate::frontend::dictionary::Dictionary::get().simplified_word(s)
}

/// Is `c` in a character table `listed`, as written or (a Traditional
/// character) by its Simplified form?
fn listed_either(c: char, listed: fn(char) -> bool) -> bool {
    listed(c) || {
        let simplified = crate::frontend::dictionary::Dictionary::get().simplified(c);
        simplified != c && listed(simplified)
    }
}

/// Role nouns: they speak (小二道, 丫鬟说), but are never the alias of a
/// name that contains them (小二 is not 阮小二).
pub(super) const ROLE_NOUNS: &[&str] = &[
    "小二", "丫鬟", "丫头", "丫頭", "老人", "老者", "老汉", "老漢", "老头", "老頭", "老婆", "婆子",
    "妇人", "婦人", "女子", "和尚", "道士", "先生", "店家", "掌柜", "掌櫃", "伙计", "夥計", "小厮",
    "小廝", "公子", "小姐", "夫人", "太太", "老爷", "老爺", "大王", "大人", "妹妹", "哥哥", "姐姐",
    "弟弟", "嫂子", "师父", "師父", "师傅", "師傅", "长老", "長老", "国王", "國王", "皇帝", "娘娘",
    "公主", "小妖", "妖精", "众人", "眾人", "孩子", "姑娘", "大哥", "二哥", "三哥", "大嫂", "老板",
    "老闆", "村长", "村長", "书记", "書記", "队长", "隊長", "县长", "縣長", "乡长", "鄉長",
];

/// Words for a person the narration does not name, with the gender they
/// carry: kin (她父亲, 少平他妈, 他老婆) and people described (那女人, 一个
/// 后生). As the subject of a speech tag (`父亲沉下脸问。`, `她父亲忧愁地说：`)
/// they say that someone unnamed of that gender speaks — not the possessor,
/// not another character of the sentence. Kin is never the character just
/// named (少安回家，父亲问他); a described person may be (孙玉厚…，老汉…).
pub(super) const UNNAMED_PEOPLE: &[(&str, Gender, Unnamed)] = &[
    ("父亲", Gender::Male, Unnamed::Kin),
    ("父親", Gender::Male, Unnamed::Kin),
    ("爸爸", Gender::Male, Unnamed::Kin),
    ("他爸", Gender::Male, Unnamed::Kin),
    ("她爸", Gender::Male, Unnamed::Kin),
    ("他爹", Gender::Male, Unnamed::Kin),
    ("她爹", Gender::Male, Unnamed::Kin),
    ("丈夫", Gender::Male, Unnamed::Kin),
    ("儿子", Gender::Male, Unnamed::Kin),
    ("兒子", Gender::Male, Unnamed::Kin),
    ("爷爷", Gender::Male, Unnamed::Kin),
    ("爺爺", Gender::Male, Unnamed::Kin),
    ("叔叔", Gender::Male, Unnamed::Kin),
    ("舅舅", Gender::Male, Unnamed::Kin),
    ("姐夫", Gender::Male, Unnamed::Kin),
    ("女婿", Gender::Male, Unnamed::Kin),
    ("母亲", Gender::Female, Unnamed::Kin),
    ("母親", Gender::Female, Unnamed::Kin),
    ("妈妈", Gender::Female, Unnamed::Kin),
    ("媽媽", Gender::Female, Unnamed::Kin),
    ("他妈", Gender::Female, Unnamed::Kin),
    ("她妈", Gender::Female, Unnamed::Kin),
    ("他媽", Gender::Female, Unnamed::Kin),
    ("她媽", Gender::Female, Unnamed::Kin),
    ("他娘", Gender::Female, Unnamed::Kin),
    ("她娘", Gender::Female, Unnamed::Kin),
    ("妻子", Gender::Female, Unnamed::Kin),
    ("老婆", Gender::Female, Unnamed::Kin),
    ("媳妇", Gender::Female, Unnamed::Kin),
    ("媳婦", Gender::Female, Unnamed::Kin),
    ("女儿", Gender::Female, Unnamed::Kin),
    ("女兒", Gender::Female, Unnamed::Kin),
    ("奶奶", Gender::Female, Unnamed::Kin),
    ("嫂子", Gender::Female, Unnamed::Kin),
    // The narrator's own kin in a book told in the first person (我妈的声音
    // 从听筒里传出来): not the narrator.
    ("我爸", Gender::Male, Unnamed::Kin),
    ("我爹", Gender::Male, Unnamed::Kin),
    ("我哥", Gender::Male, Unnamed::Kin),
    ("我弟", Gender::Male, Unnamed::Kin),
    ("我爷爷", Gender::Male, Unnamed::Kin),
    ("我爺爺", Gender::Male, Unnamed::Kin),
    ("我老公", Gender::Male, Unnamed::Kin),
    ("我妈", Gender::Female, Unnamed::Kin),
    ("我媽", Gender::Female, Unnamed::Kin),
    ("我娘", Gender::Female, Unnamed::Kin),
    ("我姐", Gender::Female, Unnamed::Kin),
    ("我妹", Gender::Female, Unnamed::Kin),
    ("我奶奶", Gender::Female, Unnamed::Kin),
    ("我老婆", Gender::Female, Unnamed::Kin),
    ("婶子", Gender::Female, Unnamed::Kin),
    ("嬸子", Gender::Female, Unnamed::Kin),
    ("男人", Gender::Male, Unnamed::Described),
    ("老汉", Gender::Male, Unnamed::Described),
    ("老漢", Gender::Male, Unnamed::Described),
    ("老头", Gender::Male, Unnamed::Described),
    ("老頭", Gender::Male, Unnamed::Described),
    ("汉子", Gender::Male, Unnamed::Described),
    ("漢子", Gender::Male, Unnamed::Described),
    ("后生", Gender::Male, Unnamed::Described),
    ("後生", Gender::Male, Unnamed::Described),
    ("小伙子", Gender::Male, Unnamed::Described),
    ("小夥子", Gender::Male, Unnamed::Described),
    ("男子", Gender::Male, Unnamed::Described),
    ("男孩", Gender::Male, Unnamed::Described),
    ("男生", Gender::Male, Unnamed::Described),
    ("少年", Gender::Male, Unnamed::Described),
    ("老者", Gender::Male, Unnamed::Described),
    ("大爷", Gender::Male, Unnamed::Described),
    ("大爺", Gender::Male, Unnamed::Described),
    ("女人", Gender::Female, Unnamed::Described),
    ("妇女", Gender::Female, Unnamed::Described),
    ("婦女", Gender::Female, Unnamed::Described),
    ("妇人", Gender::Female, Unnamed::Described),
    ("婦人", Gender::Female, Unnamed::Described),
    ("姑娘", Gender::Female, Unnamed::Described),
    ("女子", Gender::Female, Unnamed::Described),
    ("女孩", Gender::Female, Unnamed::Described),
    ("女生", Gender::Female, Unnamed::Described),
    ("少女", Gender::Female, Unnamed::Described),
    ("老妇", Gender::Female, Unnamed::Described),
    ("老婦", Gender::Female, Unnamed::Described),
    ("大妈", Gender::Female, Unnamed::Described),
    ("大媽", Gender::Female, Unnamed::Described),
    ("大娘", Gender::Female, Unnamed::Described),
    ("大婶", Gender::Female, Unnamed::Described),
    ("大嬸", Gender::Female, Unnamed::Described),
    ("老太太", Gender::Female, Unnamed::Described),
    ("老太婆", Gender::Female, Unnamed::Described),
    ("老婆子", Gender::Female, Unnamed::Described),
    // People named by their trade or station (那太监, 一个婆子, 女主持人),
    // or by their voice (一道男声).
    ("太监", Gender::Male, Unnamed::Described),
    ("太監", Gender::Male, Unnamed::Described),
    ("侍卫", Gender::Male, Unnamed::Described),
    ("侍衛", Gender::Male, Unnamed::Described),
    ("护卫", Gender::Male, Unnamed::Described),
    ("護衛", Gender::Male, Unnamed::Described),
    ("小厮", Gender::Male, Unnamed::Described),
    ("小廝", Gender::Male, Unnamed::Described),
    ("家丁", Gender::Male, Unnamed::Described),
    ("书童", Gender::Male, Unnamed::Described),
    ("書童", Gender::Male, Unnamed::Described),
    ("和尚", Gender::Male, Unnamed::Described),
    ("道士", Gender::Male, Unnamed::Described),
    ("伙计", Gender::Male, Unnamed::Described),
    ("夥計", Gender::Male, Unnamed::Described),
    ("店小二", Gender::Male, Unnamed::Described),
    ("男声", Gender::Male, Unnamed::Described),
    ("男聲", Gender::Male, Unnamed::Described),
    ("男记者", Gender::Male, Unnamed::Described),
    ("男記者", Gender::Male, Unnamed::Described),
    ("男医生", Gender::Male, Unnamed::Described),
    ("男醫生", Gender::Male, Unnamed::Described),
    ("男服务员", Gender::Male, Unnamed::Described),
    ("男服務員", Gender::Male, Unnamed::Described),
    ("男主持人", Gender::Male, Unnamed::Described),
    ("婆子", Gender::Female, Unnamed::Described),
    ("老板娘", Gender::Female, Unnamed::Described),
    ("老闆娘", Gender::Female, Unnamed::Described),
    ("丫鬟", Gender::Female, Unnamed::Described),
    ("丫环", Gender::Female, Unnamed::Described),
    ("宫女", Gender::Female, Unnamed::Described),
    ("宮女", Gender::Female, Unnamed::Described),
    ("嬷嬷", Gender::Female, Unnamed::Described),
    ("嬤嬤", Gender::Female, Unnamed::Described),
    ("尼姑", Gender::Female, Unnamed::Described),
    ("媒婆", Gender::Female, Unnamed::Described),
    ("婢女", Gender::Female, Unnamed::Described),
    ("侍女", Gender::Female, Unnamed::Described),
    ("女佣", Gender::Female, Unnamed::Described),
    ("女傭", Gender::Female, Unnamed::Described),
    ("保姆", Gender::Female, Unnamed::Described),
    ("奶娘", Gender::Female, Unnamed::Described),
    ("女声", Gender::Female, Unnamed::Described),
    ("女聲", Gender::Female, Unnamed::Described),
    ("女记者", Gender::Female, Unnamed::Described),
    ("女記者", Gender::Female, Unnamed::Described),
    ("女医生", Gender::Female, Unnamed::Described),
    ("女醫生", Gender::Female, Unnamed::Described),
    ("女服务员", Gender::Female, Unnamed::Described),
    ("女服務員", Gender::Female, Unnamed::Described),
    ("女主持人", Gender::Female, Unnamed::Described),
    ("女警", Gender::Female, Unnamed::Described),
];

/// How an unnamed person's word relates to the characters just named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unnamed {
    /// Kin of someone (父亲, 妻子): never the one just named.
    Kin,
    /// A description (老汉, 姑娘): the character of its gender named as the
    /// subject in the same paragraph, if any.
    Described,
}

/// Titles of office or trade that follow a surname (徐主任, 王老师): such a
/// name is someone the book also names in full. Kinship and courtesy titles
/// (王夫人, 林姑娘) are not here: those are often characters of their own.
pub(super) const OFFICE_TITLES: &[&str] = &[
    "主任",
    "书记",
    "書記",
    "局长",
    "局長",
    "县长",
    "縣長",
    "乡长",
    "鄉長",
    "镇长",
    "鎮長",
    "村长",
    "村長",
    "队长",
    "隊長",
    "厂长",
    "廠長",
    "经理",
    "經理",
    "老师",
    "老師",
    "校长",
    "校長",
    "科长",
    "科長",
    "处长",
    "處長",
    "部长",
    "部長",
    "社长",
    "社長",
    "站长",
    "站長",
    "所长",
    "所長",
    "连长",
    "連長",
    "营长",
    "營長",
    "团长",
    "團長",
    "师长",
    "師長",
    "军长",
    "軍長",
    "司令",
    "主席",
    "教授",
    "大夫",
    "医生",
    "醫生",
    "秘书长",
    "秘書長",
    "秘书",
    "秘書",
    "专员",
    "專員",
    "干事",
    "幹事",
];

/// Trades and posts that stand before a character's name in apposition
/// (司机金俊海, 副书记金俊山), besides [`ROLE_NOUNS`] and [`OFFICE_TITLES`].
const POSTS: &[&str] = &[
    "司机", "司機", "院长", "院長", "会计", "會計", "干部", "幹部", "专干", "專幹", "文书", "文書",
    "诗人", "詩人", "妻子", "妇女", "婦女", "丈夫", "军官", "軍官", "将军", "將軍", "丫鬟", "书生",
    "書生", "秀才", "媳妇", "媳婦",
];

/// Posts that end a title before a name (小学教师金成, 大队会计田海民): an
/// office title or one of [`POSTS`], or 教师.
pub(super) fn is_title_end(prefix: &str) -> bool {
    // The titles by their last character: one lookup, then a few words.
    static BY_LAST: std::sync::LazyLock<rustc_hash::FxHashMap<char, Vec<&'static str>>> =
        std::sync::LazyLock::new(|| {
            let mut by_last = rustc_hash::FxHashMap::<char, Vec<&'static str>>::default();
            for t in OFFICE_TITLES.iter().chain(POSTS).chain(&["教师", "教師"]) {
                if let Some(last) = t.chars().next_back() {
                    by_last.entry(last).or_default().push(t);
                }
            }
            by_last
        });
    prefix
        .chars()
        .next_back()
        .and_then(|last| BY_LAST.get(&last))
        .is_some_and(|titles| titles.iter().any(|t| prefix.ends_with(t)))
}

/// True when a name of the cast is a role noun, office title or post (书记,
/// 司机): right before a name it is that character's title, not another
/// character (副书记金俊山).
pub(super) fn is_role_word(name: &str) -> bool {
    ROLE_NOUNS.contains(&name) || OFFICE_TITLES.contains(&name) || POSTS.contains(&name)
}

/// Ranks of the palace that follow a given name or a surname (婉嫔, 沈贵妃,
/// 苏常在): such a string is as much a name as one with a surname.
const PALACE_RANKS: &[&str] = &[
    "嫔", "嬪", "妃", "贵人", "貴人", "常在", "答应", "答應", "昭仪", "昭儀", "婕妤",
];

/// True when `name` is one or two characters and a palace rank (婉嫔, 沈贵妃).
pub(super) fn is_palace_title(name: &str) -> bool {
    PALACE_RANKS.iter().any(|r| {
        name.strip_suffix(r)
            .is_some_and(|given| (1..=2).contains(&given.chars().count()))
    })
}

/// Titles after a surname by which others call a character (孙总, 沈队,
/// 薛大爷, 林姑娘, 郑哥, 唐姐), with the gender they say (`Unknown`: either).
/// Not 太太, 夫人: a wife bears her husband's surname.
pub(super) const SURNAME_TITLES: &[(&str, Gender)] = &[
    ("总", Gender::Unknown),
    ("總", Gender::Unknown),
    ("队", Gender::Unknown),
    ("隊", Gender::Unknown),
    ("局", Gender::Unknown),
    ("导", Gender::Unknown),
    ("導", Gender::Unknown),
    ("董", Gender::Unknown),
    ("老师", Gender::Unknown),
    ("老師", Gender::Unknown),
    ("医生", Gender::Unknown),
    ("醫生", Gender::Unknown),
    ("大夫", Gender::Unknown),
    ("警官", Gender::Unknown),
    ("律师", Gender::Unknown),
    ("律師", Gender::Unknown),
    ("教授", Gender::Unknown),
    ("经理", Gender::Unknown),
    ("經理", Gender::Unknown),
    ("师傅", Gender::Unknown),
    ("師傅", Gender::Unknown),
    ("大人", Gender::Unknown),
    ("大爷", Gender::Male),
    ("大爺", Gender::Male),
    ("二爷", Gender::Male),
    ("二爺", Gender::Male),
    ("三爷", Gender::Male),
    ("三爺", Gender::Male),
    ("老爷", Gender::Male),
    ("老爺", Gender::Male),
    ("相公", Gender::Male),
    ("公子", Gender::Male),
    ("少爷", Gender::Male),
    ("少爺", Gender::Male),
    ("大哥", Gender::Male),
    ("哥", Gender::Male),
    ("先生", Gender::Male),
    ("叔", Gender::Male),
    ("伯", Gender::Male),
    ("姑娘", Gender::Female),
    ("小姐", Gender::Female),
    ("大姐", Gender::Female),
    ("二姐", Gender::Female),
    ("三姐", Gender::Female),
    ("姐姐", Gender::Female),
    ("妹妹", Gender::Female),
    ("姐", Gender::Female),
    ("女士", Gender::Female),
    ("姨", Gender::Female),
    ("婶", Gender::Female),
    ("嬸", Gender::Female),
    ("学长", Gender::Male),
    ("學長", Gender::Male),
    ("学弟", Gender::Male),
    ("學弟", Gender::Male),
    ("学姐", Gender::Female),
    ("學姐", Gender::Female),
    ("学妹", Gender::Female),
    ("學妹", Gender::Female),
];

/// Titles that stand for one character of a palace, a great house, a sect, a
/// school or a firm and open or hold characters no name does (太 of 太后, 后,
/// 老 of 老夫人, 大 of 大师兄, 班主任): each is a name all the same.
const HOUSE_TITLES: &[&str] = &[
    "太后",
    "皇太后",
    "太皇太后",
    "太妃",
    "太子",
    "皇太子",
    "太上皇",
    "皇后",
    "老夫人",
    "老太君",
    "老太爷",
    "老太爺",
    "王爷",
    "王爺",
    "王妃",
    "世子",
    "少夫人",
    "大师兄",
    "大師兄",
    "二师兄",
    "二師兄",
    "三师兄",
    "三師兄",
    "大师姐",
    "大師姐",
    "二师姐",
    "二師姐",
    "小师妹",
    "小師妹",
    "小师弟",
    "小師弟",
    "大长老",
    "大長老",
    "二长老",
    "二長老",
    "三长老",
    "三長老",
    "班主任",
    "辅导员",
    "輔導員",
    "总经理",
    "總經理",
    "董事长",
    "董事長",
];

/// True when `name` is one of [`HOUSE_TITLES`] (太后, 老夫人).
pub(super) fn is_house_title(name: &str) -> bool {
    HOUSE_TITLES.contains(&name)
}

/// Compound surnames: a four-character name needs one (欧阳明月).
pub(super) const COMPOUND_SURNAMES: &[&str] = &[
    "欧阳", "歐陽", "司马", "司馬", "诸葛", "諸葛", "上官", "东方", "東方", "慕容", "令狐", "公孙",
    "公孫", "皇甫", "长孙", "長孫", "尉迟", "尉遲", "夏侯", "独孤", "獨孤", "南宫", "南宮", "西门",
    "西門", "宇文", "轩辕", "軒轅", "端木", "百里", "呼延",
];

/// Characters that end a clause's first words but never a name: 孙兰香赶
/// (赶忙), 金光明高 (高兴), 刘乡长已 (已经).
pub(super) fn is_non_name_tail(c: char) -> bool {
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
            | '里'
            | '裡'
            | '见'
            | '見'
    ) || is_particle(c)
}

/// Particles that end a clause's first words but never a name (司机的, 高兴得).
pub(super) fn is_particle(c: char) -> bool {
    matches!(c, '的' | '得' | '地' | '着' | '著' | '了')
}

/// Characters that neither open nor appear inside a name: particles,
/// pronouns, speech verbs; a Traditional character by its Simplified form
/// too, so that every variant is covered (裏 and 裡 as 里).
fn is_non_name_core(c: char) -> bool {
    listed_either(c, is_non_name_listed)
}

/// [`is_non_name_core`] as the table lists it.
fn is_non_name_listed(c: char) -> bool {
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
    )
}

/// Characters that never appear inside a name.
pub(super) fn is_non_name_inner(c: char) -> bool {
    is_non_name_core(c) || matches!(c, '闻' | '聞')
}

/// Characters that never open a name: those that never appear inside one
/// (but 闻, which can open one: 闻一多), and adverbs, time and place words
/// that often start a clause.
pub(super) fn is_non_name_char(c: char) -> bool {
    is_non_name_core(c) || listed_either(c, opens_no_name)
}

/// What [`is_non_name_char`] adds to [`is_non_name_core`], as listed.
fn opens_no_name(c: char) -> bool {
    matches!(
        c,
        '什' | '怎'
            | '人'
            | '另'
            | '话'
            | '話'
            | '咱'
            | '哪'
            | '太'
            | '已'
            | '经'
            | '經'
            | '见'
            | '見'
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
            | '声'
            | '聲'
            | '来'
            | '來'
            | '去'
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traditional_variants_count_by_their_simplified_form() {
        // 裡 is listed; 裏, OpenCC's standard Traditional form, is found as 里.
        assert!(is_non_name_char('里') && is_non_name_char('裡') && is_non_name_char('裏'));
        assert!(is_not_name("嘴里") && is_not_name("嘴裡") && is_not_name("嘴裏"));
        assert!(!is_non_name_char('賈') && !is_not_name("賈母"));
        assert_eq!(simplified("賈母").as_deref(), Some("贾母"));
        assert_eq!(simplified("贾母"), None);
    }
}
