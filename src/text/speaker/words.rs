//! Word tables of speaker attribution (crowds, clause-opening connectives,
//! speech verbs, what speakers call themselves) and the tests for a speech
//! verb in a piece of narration and for a speaker's words of self.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};

use super::clause::is_punct;
use super::matcher::WordMatcher;
use super::names::{CharBits, is_not_name};

/// Groups that may speak as one.
pub(super) const CROWDS: &[&str] = &[
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
    // The variant 衆 of OpenCC's standard Traditional (眾 is Taiwan's).
    "衆人",
    "衆官兵",
    "衆臣",
    "衆將",
    "衆僧",
    "衆仙",
    "衆神",
    "衆妖",
    "衆弟子",
    "衆小妖",
    "衆猴",
    "衆官",
];

/// Words that open a clause before its subject (然后他说 …).
pub(super) const CONNECTIVES: &[&str] = &[
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
    "首先",
    "起先",
    "后来",
    "後來",
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
    "讲", "講", "哭道", "叹道", "嘆道", "开言", "開言",
];

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
        '喊' | '答' | '嚷' | '吼' | '骂' | '罵' => true,
        // 叹道, 叹一声; not a sigh (叹了口气, 叹气, 叹息): one may sigh
        // without a word.
        '叹' | '嘆' => !matches!(next, Some('了' | '气' | '氣' | '息')),
        // 操曰, 玄德曰; not 名曰 or 诗曰 (named, a poem says).
        '曰' => !matches!(
            prev,
            Some('名' | '号' | '號' | '谓' | '謂' | '诗' | '詩' | '赞' | '讚')
        ),
        _ => false,
    }
}

/// True when `s` holds a speech verb that is not negated (苏安没说话, 他不
/// 回答, 她没有吭声: they did not speak) nor passive (知意被问住了).
pub(super) fn has_speech_verb(s: &str) -> bool {
    let words = &*SPEECH_BY_FIRST;
    let opening = &*SPEECH_OPENING;
    let mut prev: Option<char> = None;
    let mut chars = s.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if !opening.contains(c) {
            prev = Some(c);
            continue;
        }
        if is_speech_char(prev, c, chars.peek().map(|&(_, n)| n)) {
            // 没回答: the negation may stand before the verb's first character.
            let word_start = match prev {
                Some(p) if matches!(p, '回' | '应' | '應' | '作' | '吭' | '接') => {
                    at - p.len_utf8()
                }
                _ => at,
            };
            if !negated(&s[..word_start]) {
                return true;
            }
        }
        // A word of two or more characters (吩咐, 低语) starting here.
        if words.longest_at(s, at, c).is_some() && !negated(&s[..at]) {
            return true;
        }
        prev = Some(c);
    }
    false
}

/// A bit for each character of the Basic Multilingual Plane that may open a
/// speech verb: one [`is_speech_char`] takes (every one of its characters is
/// taken without a character around it, and no other character ever is) or
/// the first of one of [`SPEECH_WORDS`]. Most characters of a clause are
/// passed at one lookup.
static SPEECH_OPENING: std::sync::LazyLock<CharBits> = std::sync::LazyLock::new(|| {
    let firsts = SPEECH_WORDS.iter().filter_map(|w| w.chars().next());
    let singles = (0..1u32 << 16)
        .filter_map(char::from_u32)
        .filter(|&c| is_speech_char(None, c, None));
    CharBits::of(firsts.chain(singles))
});

/// [`SPEECH_WORDS`] by their first character.
static SPEECH_BY_FIRST: std::sync::LazyLock<WordMatcher> =
    std::sync::LazyLock::new(|| WordMatcher::new(SPEECH_WORDS));

/// True when `sentence` tells of speech without quoting it (沈知微把情况说
/// 了一遍, 她三言两语把事情讲了一遍, 他说明了来意, 又解释了几句): a turn taken in
/// the narration, not a tag of the quote before.
pub(super) fn narrates_speech(sentence: &str) -> bool {
    const TOLD: &[&str] = &[
        "说了一遍",
        "說了一遍",
        "讲了一遍",
        "講了一遍",
        "说了一番",
        "說了一番",
        "讲了一番",
        "講了一番",
        "说明了来意",
        "說明了來意",
        "解释了一遍",
        "解釋了一遍",
        "解释了几句",
        "解釋了幾句",
        "解释了一番",
        "解釋了一番",
        "介绍了一遍",
        "介紹了一遍",
        "介绍了一番",
        "介紹了一番",
        "复述了一遍",
        "複述了一遍",
        "交代了一遍",
        "交代了一番",
    ];
    static TOLD_MATCHER: std::sync::LazyLock<AhoCorasick> = std::sync::LazyLock::new(|| {
        AhoCorasick::new(TOLD).expect("a few fixed words build a matcher")
    });
    // Every word holds 了: most sentences are passed over by one scan.
    sentence.contains('了') && TOLD_MATCHER.is_match(sentence)
}

/// True when `before` ends in a negation of the verb after it (没, 不, 未,
/// 没有), or in 被 with no one or a pronoun between (知意被问住了, 老夫人被她
/// 问住了: the subject was asked).
fn negated(before: &str) -> bool {
    let mut back = before.chars().rev();
    // 老夫人被她问住了: the one asked is the subject, not the one asking.
    let passive =
        matches!(back.next(), Some('他' | '她' | '你' | '我')) && back.next() == Some('被');
    // 少安倒被弟弟的这番话说得无言对答: what was said (的, 话) after 被 in
    // the verb's clause did it (not 知意被陆景深问住了: he asked).
    let by_words = before.rfind('被').is_some_and(|at| {
        let after = &before[at..];
        !after.contains(|c: char| is_punct(c)) && after.contains(['的', '话', '話'])
    });
    passive
        || by_words
        || before.ends_with(['没', '沒', '不', '未', '被'])
        || before.ends_with("没有")
        || before.ends_with("沒有")
        // 她正要解释，电话那头换了个人: about to speak, not speaking.
        || ["正要", "刚要", "剛要", "正想", "刚想", "剛想"]
            .iter()
            .any(|w| before.ends_with(w))
}

/// What comes after a negation when one keeps silent (没说话, 不吭声, 没有
/// 回答, 没理她).
const SILENT_VERBS: &[&str] = &[
    "说话", "說話", "接话", "接話", "搭话", "搭話", "答话", "答話", "回话", "回話", "吭声", "吭聲",
    "吱声", "吱聲", "作声", "作聲", "出声", "出聲", "应声", "應聲", "回答", "回应", "回應", "作答",
    "接茬", "搭腔", "言语", "言語", "开口", "開口", "理他", "理她", "理我", "理你", "理会", "理會",
    "搭理",
];

/// Words of silence that need no negation, and of one taken aback by what
/// was said (一愣, 怔住, 语塞).
const SILENT_WORDS: &[&str] = &[
    "沉默",
    "一言不发",
    "一言不發",
    "默然",
    "不语",
    "不語",
    "缄默",
    "緘默",
    "无言",
    "無言",
    "一愣",
    "愣住",
    "愣了",
    "一怔",
    "怔住",
    "怔了",
    "语塞",
    "語塞",
    "噎住",
    "吓了一跳",
    "嚇了一跳",
];

/// True when `sentence` says its subject kept silent or was taken aback
/// (苏安没说话, 他半天没吭声, 知意没有回答, 她不答, 老沈沉默了, 沈若溪一愣):
/// whoever spoke the quote before, it was not them. Not one who said no
/// more (他没再说话, 没多说) or spoke before falling silent (向前说不下去了,
/// 说完就不吭声了): that one may have just spoken; nor a manner (不出声地哭泣).
pub(super) fn only_listened(sentence: &str) -> bool {
    let silence = SILENT_WORDS
        .iter()
        .filter_map(|w| sentence.find(w).map(|at| (at, at + w.len())))
        .chain(sentence.char_indices().filter_map(|(at, c)| {
            if !matches!(c, '没' | '沒' | '不' | '未') {
                return None;
            }
            let after = at + c.len_utf8();
            let rest = &sentence[after..];
            let rest = rest.strip_prefix('有').unwrap_or(rest);
            let skipped = sentence.len() - after - rest.len();
            // 不答 (not 不答应: one may refuse aloud).
            let len = SILENT_VERBS
                .iter()
                .find(|w| rest.starts_with(*w))
                .map(|w| w.len())
                .or_else(|| {
                    (rest.starts_with('答') && !rest[3..].starts_with(['应', '應'])).then_some(3)
                })?;
            Some((at, after + skipped + len))
        }));
    silence
        .into_iter()
        .any(|(at, end)| !sentence[end..].starts_with('地') && !has_speech_verb(&sentence[..at]))
}

/// How a quote ends that asks the one spoken to who they are (“你是……”,
/// “请问您是？”, “怎么称呼？”).
const WHO_ARE_YOU: &[&str] = &[
    "你是",
    "您是",
    "你是谁",
    "您是谁",
    "你是誰",
    "您是誰",
    "你哪位",
    "您哪位",
    "你叫什么",
    "你叫什麼",
    "你叫什么名字",
    "你叫什麼名字",
    "您贵姓",
    "您貴姓",
    "怎么称呼",
    "怎麼稱呼",
    "阁下是",
    "閣下是",
    "阁下是谁",
    "閣下是誰",
    "你是什么人",
    "你是什麼人",
];

/// True when `quote` ends by asking the one spoken to who they are: the
/// answer is likely their name (“你是……” / “顾屿。”).
pub(super) fn asks_who_you_are(quote: &str) -> bool {
    let body = quote.trim_end_matches(|c: char| {
        matches!(
            c,
            '”' | '」' | '』' | '"' | '？' | '?' | '。' | '…' | '！' | '!' | '—'
        )
    });
    WHO_ARE_YOU.iter().any(|w| body.ends_with(w))
}

/// True when `narration` ends by bringing in a thought (她心想：, 暗道：,
/// 心里想：), not speech.
pub(super) fn introduces_thought(narration: &str) -> bool {
    const THINKING: &[&str] = &[
        "心想",
        "心里想",
        "心裏想",
        "暗想",
        "心道",
        "暗道",
        "想道",
        "寻思",
        "尋思",
        "心说",
        "心說",
        "暗忖",
        "忖道",
        "默念",
        "想着",
        "想著",
    ];
    narration
        .trim_end()
        .strip_suffix(['：', ':'])
        .is_some_and(|before| THINKING.iter().any(|t| before.ends_with(t)))
}

/// `words` by their first character, in their order.
fn by_first(words: &[&'static str]) -> rustc_hash::FxHashMap<char, Vec<&'static str>> {
    let mut by_first = rustc_hash::FxHashMap::<char, Vec<&'static str>>::default();
    for w in words {
        if let Some(first) = w.chars().next() {
            by_first.entry(first).or_default().push(w);
        }
    }
    by_first
}

static CONNECTIVES_BY_FIRST: std::sync::LazyLock<rustc_hash::FxHashMap<char, Vec<&'static str>>> =
    std::sync::LazyLock::new(|| by_first(CONNECTIVES));

/// The first of [`CONNECTIVES`] that `text` starts with (然后, 于是…): the
/// same answer as scanning the table, looking only at the words that
/// start with `text`'s first character.
pub(super) fn connective_at_start(text: &str) -> Option<&'static str> {
    let first = text.chars().next()?;
    CONNECTIVES_BY_FIRST
        .get(&first)?
        .iter()
        .copied()
        .find(|c| text.starts_with(c))
}

static SPEECH_MATCHER: std::sync::LazyLock<AhoCorasick> = std::sync::LazyLock::new(|| {
    AhoCorasickBuilder::new()
        .start_kind(aho_corasick::StartKind::Both)
        .build(SPEECH_WORDS)
        .expect("speech words are plain strings")
});

pub(super) fn starts_with_speech_verb(s: &str) -> bool {
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

pub(super) fn starts_with_bare_speech_verb(s: &str) -> bool {
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

/// Words a speaker calls themselves by, with the gender they say (slot 0 a
/// man, 1 a woman) and what may not follow them (老夫人 is no 老夫):
/// brash (老娘, 老子), old and classical (老身, 老夫), a rank (本宫, 本王),
/// a calling (贫僧, 洒家), the young (本姑娘, 本少爷).
const SELF_WORDS: &[(&str, usize, &str)] = &[
    ("老娘", 1, "们們家"),
    ("老子", 0, "们們家曰娘"),
    ("本姑娘", 1, ""),
    ("本小姐", 1, ""),
    ("小女子", 1, ""),
    ("奴家", 1, ""),
    ("妾身", 1, ""),
    ("臣妾", 1, ""),
    ("嫔妾", 1, ""),
    ("嬪妾", 1, ""),
    ("本宫", 1, ""),
    ("本宮", 1, ""),
    ("哀家", 1, ""),
    ("臣女", 1, ""),
    ("民女", 1, ""),
    ("奴婢", 1, "们們"),
    ("老身", 1, "子"),
    ("为娘", 1, "家亲"),
    ("為娘", 1, "家親"),
    ("本大爷", 0, ""),
    ("本大爺", 0, ""),
    ("本少爷", 0, ""),
    ("本少爺", 0, ""),
    ("本公子", 0, ""),
    ("本王", 0, "朝"),
    ("朕", 0, ""),
    ("老夫", 0, "妻人子婦妇少"),
    ("洒家", 0, ""),
    ("灑家", 0, ""),
    ("贫僧", 0, ""),
    ("貧僧", 0, ""),
    ("老衲", 0, ""),
    ("为父", 0, "亲親母"),
    ("為父", 0, "亲親母"),
];

/// What a quote opens by calling the one it speaks to, with the gender it
/// says the speaker is: a wife calls her husband 老公 or 夫君, a husband
/// his wife 老婆 or 娘子.
const SPOUSE_CALLS: &[(&str, usize)] = &[
    ("老公", 1),
    ("夫君", 1),
    ("老婆", 0),
    ("媳妇", 0),
    ("媳婦", 0),
    ("娘子", 0),
];

/// A spouse or partner one speaks of as one's own (我老公, 我前妻), with
/// the gender it says the speaker is.
const MY_PARTNER: &[(&str, usize)] = &[
    ("我老公", 1),
    ("我丈夫", 1),
    ("我前夫", 1),
    ("我男朋友", 1),
    ("我老婆", 0),
    ("我媳妇", 0),
    ("我媳婦", 0),
    ("我妻子", 0),
    ("我前妻", 0),
    ("我女朋友", 0),
];

/// The gender slot a partner spoken of as one's own says (`at_me` opens
/// with 我: 我老公 → a woman, 我前妻 → a man).
pub(super) fn my_partner(at_me: &str) -> Option<usize> {
    MY_PARTNER
        .iter()
        .find(|(w, _)| at_me.starts_with(w))
        .map(|&(_, slot)| slot)
}

/// What one says of oneself after 我 in the narration of a book told in
/// the first person (我一个大男人, 我是个女生, 我这个当姐姐的), with the
/// gender slot it says.
const I_AM: &[(&str, usize)] = &[
    ("一个大男人", 0),
    ("一个大老爷们", 0),
    ("一个男人", 0),
    ("一个男的", 0),
    ("一个小伙子", 0),
    ("是个男人", 0),
    ("是个男的", 0),
    ("是个男生", 0),
    ("是个大男人", 0),
    ("这个大男人", 0),
    ("这个当哥哥的", 0),
    ("这个当哥的", 0),
    ("這個當哥哥的", 0),
    ("一個大男人", 0),
    ("一個男人", 0),
    ("一个女孩子", 1),
    ("一个女孩", 1),
    ("一个姑娘家", 1),
    ("一个女人", 1),
    ("一个女的", 1),
    ("一个女生", 1),
    ("一个小姑娘", 1),
    ("是个女人", 1),
    ("是个女的", 1),
    ("是个女生", 1),
    ("是个女孩", 1),
    ("是个姑娘", 1),
    ("这个当姐姐的", 1),
    ("这个当姐的", 1),
    ("這個當姐姐的", 1),
    ("一個女孩子", 1),
    ("一個女人", 1),
];

/// The gender slot what follows 我 says of the one who writes it (`at_me`
/// opens with 我): one's own partner or what one says one is.
pub(super) fn says_of_me(at_me: &str) -> Option<usize> {
    let rest = at_me.strip_prefix('我')?;
    my_partner(at_me).or_else(|| {
        I_AM.iter()
            .find(|(w, _)| rest.starts_with(w))
            .map(|&(_, slot)| slot)
    })
}

/// How a quote opens by addressing its listener, with the gender slot it
/// says the listener is (“陈哥，…”, “姐，…”, “小姐，…”, “兄弟，…”).
const ADDRESSED_AS: &[(&str, usize)] = &[
    ("哥", 0),
    ("兄弟", 0),
    ("先生", 0),
    ("帅哥", 0),
    ("小伙子", 0),
    ("老弟", 0),
    ("哥们", 0),
    ("哥們", 0),
    ("姐", 1),
    ("小姐", 1),
    ("美女", 1),
    ("姑娘", 1),
    ("丫头", 1),
    ("丫頭", 1),
    ("妹子", 1),
    ("姐姐", 1),
    ("妹妹", 1),
];

/// A pause after a form of address (陈哥，, 树哥！, 妈？).
pub(super) fn is_address_pause(c: char) -> bool {
    matches!(c, '，' | ',' | '！' | '!' | '？' | '?' | '。' | '…')
}

/// A quote (`inner`, after its opening mark) that opens by calling someone
/// by one character and 哥 or 姐 before a pause (陈哥，, 树哥！, 宁姐，): the
/// character and the gender slot the address says (0 a man, 1 a woman);
/// not a generic one (大哥, 老姐, 表哥, 师姐, 我哥).
pub(super) fn one_char_address(inner: &str) -> Option<(char, usize)> {
    let mut chars = inner.chars();
    let (Some(stem), Some(title), Some(pause)) = (chars.next(), chars.next(), chars.next()) else {
        return None;
    };
    let slot = match title {
        '哥' => 0,
        '姐' => 1,
        _ => return None,
    };
    (crate::text::decode::is_han(stem)
        && !"大老小二三四表堂师師学學我你他她".contains(stem)
        && is_address_pause(pause))
    .then_some((stem, slot))
}

/// The gender slot of the one a quote opens by addressing: a word of
/// address (after at most two characters of a name: 陈哥, 小林姐) and a
/// pause. Not 哥哥 / 姐姐 as a subject (“姐姐说…”): only before a pause.
pub(super) fn addressed_as(quote: &str) -> Option<usize> {
    let inner = quote.trim_start_matches(['“', '「', '『', '"']);
    let end = inner.find(is_address_pause)?;
    let head = &inner[..end];
    if head.chars().count() > 4 || head.starts_with(['我', '你', '他', '她']) {
        return None;
    }
    ADDRESSED_AS
        .iter()
        .filter(|(w, _)| head.ends_with(w))
        .max_by_key(|(w, _)| w.len())
        .map(|&(_, slot)| slot)
}

/// The gender slot that `quote` says its speaker is of: a word they call
/// themselves by (not 你老子, your father; not 老娘们, women), a partner
/// they speak of as theirs (我前夫), or the word for a spouse they open by
/// calling (“老公，…”).
/// Words one calls oneself by that say no gender here, though they may
/// come before one's own name (咱家高进忠, 在下李慕白, 贫道张三).
const SELF_WORDS_OF_NAMING: &[&str] = &["咱家", "在下", "贫道", "貧道"];

/// The rest of `text` after a word one calls oneself by that opens it
/// ([`SELF_WORDS`] or those of [`SELF_WORDS_OF_NAMING`]): where one's own
/// name may follow (“在下李慕白，…”, “本王赵琰…”).
pub(super) fn after_self_word(text: &str) -> Option<&str> {
    // The characters these words open with, for most texts one lookup.
    static FIRSTS: std::sync::LazyLock<CharBits> = std::sync::LazyLock::new(|| {
        let words = SELF_WORDS
            .iter()
            .map(|w| w.0)
            .chain(SELF_WORDS_OF_NAMING.iter().copied());
        CharBits::of(words.filter_map(|w| w.chars().next()))
    });
    if !FIRSTS.contains(text.chars().next()?) {
        return None;
    }
    SELF_WORDS
        .iter()
        .find_map(|(w, _, not_after)| {
            text.strip_prefix(w)
                .filter(|rest| !rest.starts_with(|c: char| not_after.contains(c)))
        })
        .or_else(|| {
            SELF_WORDS_OF_NAMING
                .iter()
                .find_map(|w| text.strip_prefix(w))
        })
}

pub(super) fn self_reference(quote: &str) -> Option<usize> {
    static SELF_MATCHER: std::sync::LazyLock<aho_corasick::AhoCorasick> =
        std::sync::LazyLock::new(|| {
            aho_corasick::AhoCorasick::new(SELF_WORDS.iter().map(|w| w.0))
                .expect("a few fixed words build a matcher")
        });
    for m in SELF_MATCHER.find_overlapping_iter(quote) {
        let (word, slot, not_after) = SELF_WORDS[m.pattern().as_usize()];
        let before = quote[..m.start()].chars().next_back();
        let after = quote[m.end()..].chars().next();
        let owned = before.is_some_and(|c| "你他她我的们們咱俺".contains(c));
        // 「老娘，且待過嶺去…」, 「我只有一個老娘在家」: the old mother
        // spoken to or of, not a self-word.
        let kin = matches!(word, "老娘" | "老子");
        let called = kin
            && ((quote[..m.start()].chars().all(|c| "“「『\"".contains(c))
                && after.is_some_and(|c| "，,！!".contains(c)))
                || before.is_some_and(|c| "個个有".contains(c)));
        // 住持本宮, 回本宮: the palace or temple, a place.
        let place = matches!(word, "本宫" | "本宮")
            && before.is_some_and(|c| "住在到回出入进進离離来來持于於".contains(c));
        if !owned && !called && !place && !after.is_some_and(|c| not_after.contains(c)) {
            return Some(slot);
        }
    }
    // One pass for 我, then the words after it.
    if let Some(slot) = quote
        .match_indices('我')
        .find_map(|(at, _)| my_partner(&quote[at..]))
    {
        return Some(slot);
    }
    let opening = quote.trim_start_matches(['“', '「', '『', '"']);
    SPOUSE_CALLS.iter().find_map(|&(word, slot)| {
        let rest = opening.strip_prefix(word)?;
        let rest = rest.strip_prefix('儿').unwrap_or(rest);
        rest.starts_with(['，', ',', '！', '!', '？', '?', '…', '。', '~', '～'])
            .then_some(slot)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The attributor takes a verb found in a clause as one of the whole
    /// sentence: that holds only while no speech word spans a clause mark.
    #[test]
    fn no_speech_word_holds_a_clause_mark() {
        for w in SPEECH_WORDS {
            assert!(!w.chars().any(is_punct), "{w}");
        }
    }

    /// The characters [`has_speech_verb`] passes at one lookup are never
    /// speech verbs, whatever stands around them.
    #[test]
    fn a_character_passed_over_opens_no_speech_verb() {
        // Characters the arms of `is_speech_char` look at around one, and
        // others.
        let around = [
            None,
            Some('他'),
            Some('听'),
            Some('知'),
            Some('了'),
            Some('题'),
            Some('做'),
            Some('名'),
            Some('路'),
        ];
        for c in (0..0x1_0000).filter_map(char::from_u32) {
            if SPEECH_OPENING.contains(c) {
                continue;
            }
            for prev in around {
                for next in around {
                    assert!(!is_speech_char(prev, c, next), "{c}");
                }
            }
            assert!(SPEECH_WORDS.iter().all(|w| !w.starts_with(c)), "{c}");
        }
    }

    #[test]
    fn speech_verb_detection() {
        assert!(has_speech_verb("他笑道"));
        assert!(has_speech_verb("她低声说"));
        assert!(has_speech_verb("毛仲提醒大家"));
        assert!(!has_speech_verb("他知道这件事"));
        assert!(!has_speech_verb("听说他来了"));
        assert!(!has_speech_verb("这个问题"));
        // A sigh says nothing; 叹道 does.
        assert!(!has_speech_verb("苏安叹了口气，在父亲旁边坐下"));
        assert!(!has_speech_verb("他轻轻叹息"));
        assert!(has_speech_verb("他叹道"));
        // Nor does one who did not speak.
        assert!(!has_speech_verb("苏安没说话，伸手抱住了她"));
        assert!(!has_speech_verb("他没有回答"));
        assert!(!has_speech_verb("她不问了"));
        assert!(has_speech_verb("她忍不住问"));
        assert!(has_speech_verb("他没说话，过了一会儿才问"));
        // One asked did not ask; one asked by someone named was.
        assert!(!has_speech_verb("知意被问住了"));
        assert!(!has_speech_verb("老夫人被她问住了"));
        assert!(has_speech_verb("知意被陆景深问住了"));
        assert!(!has_speech_verb("倒被弟弟的这番话说得无言对答"));
        assert!(has_speech_verb("他被逼急了，大声说"));
        // One about to speak has not spoken yet.
        assert!(!has_speech_verb("夏青正要解释"));
        assert!(!has_speech_verb("他刚要开口"));
        assert!(has_speech_verb("他正要走，又回头问"));
    }

    #[test]
    fn one_who_only_listened() {
        assert!(only_listened("周岚没说话，低头盯着自己的指甲"));
        assert!(only_listened("他半天没吭声"));
        assert!(only_listened("知意没有回答"));
        assert!(only_listened("宝玉不答"));
        assert!(only_listened("老沈沉默了很久"));
        assert!(only_listened("沈若溪一愣，随即笑了："));
        assert!(only_listened("周秀云没理她，往旁边挪了挪"));
        // One who said no more may have just spoken; one may refuse aloud;
        // a manner is no silence.
        assert!(!only_listened("他没再说话"));
        assert!(!only_listened("她没多说什么"));
        assert!(!only_listened("向前说不下去了，不出声地哭泣起来"));
        assert!(!only_listened("她不答应"));
        assert!(!only_listened("他点了点头"));
    }

    #[test]
    fn brash_self_reference_and_what_is_not() {
        assert_eq!(self_reference("“老娘偏不走！”"), Some(1));
        assert_eq!(self_reference("“这事老子说了算。”"), Some(0));
        for not in [
            "“你老子回来了。”",
            "“那些老娘们懂什么。”",
            "“老子曰：道可道。”",
            "“我老娘病了。”",
            // The old mother spoken to.
            "「老娘，且待過嶺去。」",
            "「我只有一個老娘在家。」",
            // The temple or the palace, a place.
            "「因此不住本宮。」",
            "「小道自來住持本宮。」",
        ] {
            assert_eq!(self_reference(not), None, "{not}");
        }
    }

    #[test]
    fn a_partner_spoken_of_as_ones_own_says_the_speakers_gender() {
        assert_eq!(
            self_reference("“胸外科的周主任，是我前夫的表姐。”"),
            Some(1)
        );
        assert_eq!(self_reference("“我男朋友在楼下等。”"), Some(1));
        assert_eq!(self_reference("“这是给我老婆买的。”"), Some(0));
        assert_eq!(self_reference("“你老公回来了吗？”"), None);
        assert_eq!(self_reference("“我老家在陕北。”"), None);
    }

    #[test]
    fn what_a_speaker_calls_themselves_or_their_spouse_says_their_gender() {
        for (quote, slot) in [
            ("“本姑娘今天不高兴。”", 1),
            ("“贫僧从东边来。”", 0),
            ("「妾身不敢。」", 1),
            ("“老夫活了七十年，没见过这样的事。”", 0),
            ("“为娘只盼你平安。”", 1),
            ("“老公，饭好了。”", 1),
            ("“媳妇儿，把灯点上！”", 0),
            ("「夫君，天涼了。」", 1),
            ("“殿下就不怕臣女说假话？”", 1),
            ("“奴婢记得清清楚楚！”", 1),
            ("“朕乏了。”", 0),
        ] {
            assert_eq!(self_reference(quote), Some(slot), "{quote}");
        }
        for not in [
            "“老夫人请你过去。”",
            "“他们是一对老夫妻。”",
            "“你老公回来了没有？”",
            // 相公 and 官人 are what servants, clerks and wives alike call a
            // gentleman or an official.
            "「相公，這楊志既是殿司制使。」",
            "「官人，要甚東西？」",
            "“我跟老婆说好了，明天回去。”",
            "“她成为娘家的骄傲。”",
            "“奴婢们都退下了。”",
        ] {
            assert_eq!(self_reference(not), None, "{not}");
        }
    }
}
