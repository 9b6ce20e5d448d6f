//! Lines that are not the story: site adverts (plain or obfuscated with
//! mixed-width letters and symbols between characters), URLs, pleas for
//! votes and author's notes. A URL inside a story sentence is cut out and the
//! sentence kept.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
use regex::Regex;

/// What a line of the book is, for reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineClass {
    /// Story text, read as it is.
    Story,
    /// Story text with URLs cut out.
    Cleaned(String),
    /// A site advert, a bare URL or a plea for votes: never read.
    Advert,
    /// An author's note (PS：…, 本书首发…): read only with `--keep-notes`.
    Note,
    /// 作者有话说: an author's note that runs to the end of the chapter.
    NotesFollow,
}

/// A URL or bare domain, full-width forms included (ｗｗｗ．ｘｘ．ｃｏｍ).
static URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:https?[:：][/／]{2}[\w./／．\-?=&%#]*|(?:[wｗＷ]{3}[.．。·])?[a-z0-9ａ-ｚＡ-Ｚ０-９\-]+(?:[.．·][a-z0-9ａ-ｚＡ-Ｚ０-９\-]+)*[.．·](?:com|net|org|cn|cc|info|me|tv|la|tw|co|xyz|top|vip|ｃｏｍ|ｎｅｔ|ｏｒｇ|ｃｃ)(?:[/／][\w./／\-?=&%#]*)?|[wｗＷ]{3}[.．。·][a-z0-9ａ-ｚＡ-Ｚ０-９\-]+)",
    )
    .expect("valid URL regex")
});

/// Pleas and site boilerplate: a short line holding one is not the story.
const PLEAS: &[&str] = &[
    "本章完",
    "求月票",
    "求推荐",
    "求推薦",
    "求收藏",
    "求订阅",
    "求訂閱",
    "求打赏",
    "推荐票",
    "未完待续",
    "未完待續",
    "最新章节",
    "手机阅读",
    "记住本站",
    "本站地址",
    "天才一秒记住",
    "手机用户请",
    "笔趣阁",
    "筆趣閣",
    "全文阅读",
    "免费阅读",
    "无弹窗",
    "無彈窗",
];

/// Pleas that are also everyday words (a bus pass, 四处求票 in an election,
/// 一个小说网): a plea only in a line with little else, or with 投 (投月票).
const WORD_PLEAS: &[&str] = &["月票", "求票", "小说网", "小說網"];

/// Most Han characters a line holding only a [`WORD_PLEAS`] word may have
/// besides it (月票！月票！, 各位，求票).
const MAX_HAN_BESIDE_PLEA: usize = 4;

/// [`PLEAS`] found in one pass over a line.
static PLEA: LazyLock<AhoCorasick> =
    LazyLock::new(|| AhoCorasick::new(PLEAS).expect("a few fixed words build a matcher"));

/// Openings of author's notes, each with what must follow it: a mark of
/// punctuation (作者按：, not 作者按语写得很长) or, after 本书首发, the name
/// of a site (本书首发起点中文网, not 本书首发的那天); 作者的话 with its colon
/// only (a line of 作者的话 alone is front matter, read).
const NOTE_OPENINGS: &[(&str, NoteFollows)] = &[
    ("本书首发", NoteFollows::Site),
    ("本書首發", NoteFollows::Site),
    ("作者的话：", NoteFollows::Anything),
    ("作者的話：", NoteFollows::Anything),
    ("作者按", NoteFollows::Mark),
    ("作者注", NoteFollows::Mark),
];

/// What follows a note's opening in [`NOTE_OPENINGS`].
#[derive(Clone, Copy)]
enum NoteFollows {
    /// Anything: the opening says it all (作者的话：).
    Anything,
    /// Punctuation or the end of the line.
    Mark,
    /// A word of a site's name somewhere in the line.
    Site,
}

/// Words in the names of the sites books are first published on.
const SITE_NAME_WORDS: &[&str] = &[
    "网", "網", "站", "中文", "文学", "文學", "小说", "小說", "起点", "起點", "晋江", "晉江",
    "纵横", "縱橫", "APP", "App", "app", "com",
];

/// After PS, what makes a word rather than a note (PS机, PS游戏, PS过的照片).
const PS_WORD_NEXT: &[char] = &[
    '机', '機', '游', '遊', '版', '图', '圖', '过', '過', '的', '了', '掉', '一',
];

/// Openings of a note block that runs to the end of the chapter.
const NOTES_FOLLOW: &[&str] = &["作者有话说", "作者有话要说", "作者有話說", "作者有話要說"];

/// Words of a site's boilerplate around a URL (本站地址：…, 请访问…).
const SITE_WORDS: &[&str] = &[
    "本站",
    "网址",
    "網址",
    "域名",
    "地址：",
    "地址:",
    "地址是",
    "请访问",
    "請訪問",
    "欢迎访问",
    "歡迎訪問",
    "站点",
    "站點",
    "网站地址",
    "網站地址",
];

/// Fewest Han characters left when a URL is cut out of a line for the rest
/// to be read as story (他打开了，…).
const MIN_HAN_BESIDE_URL: usize = 3;

/// Classifies one trimmed line.
pub fn classify(line: &str) -> LineClass {
    if NOTES_FOLLOW.iter().any(|w| line.starts_with(w)) {
        return LineClass::NotesFollow;
    }
    if is_note(line) {
        return LineClass::Note;
    }
    let short = line.len() <= 40 * 3;
    if short && (PLEA.is_match(line) || is_word_plea(line)) {
        return LineClass::Advert;
    }
    let Marks {
        latin: has_latin,
        symbol: has_symbol,
        may_be_url,
    } = Marks::of(line);
    if (has_latin || has_symbol) && is_obfuscated(line) {
        return LineClass::Advert;
    }
    if has_latin && may_be_url {
        let mut cleaned = String::new();
        let mut last = 0;
        for m in URL.find_iter(line) {
            cleaned.push_str(&line[last..m.start()]);
            last = m.end();
        }
        if last > 0 {
            cleaned.push_str(&line[last..]);
            let han = cleaned.chars().filter(|c| super::is_han(*c)).count();
            // What is left must be a story sentence, not 地址： or 请访问
            // (a story has 站起身, 车站 and 他访问了).
            let boilerplate = SITE_WORDS.iter().any(|w| cleaned.contains(w));
            return if han >= MIN_HAN_BESIDE_URL && !boilerplate {
                LineClass::Cleaned(cleaned.trim().to_owned())
            } else {
                LineClass::Advert
            };
        }
    }
    LineClass::Story
}

/// A short line pleading with a [`WORD_PLEAS`] word: with 投, or with at
/// most [`MAX_HAN_BESIDE_PLEA`] Han characters besides its pleas.
fn is_word_plea(line: &str) -> bool {
    if !WORD_PLEAS.iter().any(|w| line.contains(w)) {
        return false;
    }
    let rest = WORD_PLEAS
        .iter()
        .fold(line.to_owned(), |rest, w| rest.replace(w, ""));
    line.contains('投') || rest.chars().filter(|c| super::is_han(*c)).count() <= MAX_HAN_BESIDE_PLEA
}

/// What [`classify`] looks for in a line, found in one pass over its bytes
/// (most lines are Han characters and CJK punctuation, none of it decoded).
struct Marks {
    /// Latin letters or digits, of either width.
    latin: bool,
    /// Symbols adverts put between characters ($, @, ＃, " …).
    symbol: bool,
    /// What every URL the pattern finds holds: a dot of some width, or the
    /// h of http, or the w of www.
    may_be_url: bool,
}

impl Marks {
    fn of(line: &str) -> Marks {
        let mut marks = Marks {
            latin: false,
            symbol: false,
            may_be_url: false,
        };
        let b = line.as_bytes();
        let mut chunks = b.chunks_exact(8);
        let mut at = 0;
        for chunk in chunks.by_ref() {
            // Eight bytes at a time past the Han characters and CJK
            // punctuation most lines are made of: no ASCII byte, no lead
            // byte of a full-width form (0xEF) or of · (0xC2) among them.
            let x = u64::from_le_bytes(chunk.try_into().expect("a chunk of eight bytes"));
            // Only the bytes that may be one of those are looked at.
            let mut found = (!x & HIGH_BITS) | byte_mask(x, 0xEF) | byte_mask(x, 0xC2);
            while found != 0 {
                marks.add(b, at + found.trailing_zeros() as usize / 8);
                found &= found - 1;
            }
            at += 8;
        }
        for i in at..b.len() {
            marks.add(b, i);
        }
        marks
    }

    /// What the byte at `i` (and, for a lead byte, those after it) adds.
    fn add(&mut self, b: &[u8], i: usize) {
        let c = b[i];
        if c < 0x80 {
            self.latin |= c.is_ascii_alphanumeric();
            self.symbol |= matches!(
                c,
                b'$' | b'@' | b'#' | b'%' | b'^' | b'&' | b'*' | b'~' | b'|' | b'"'
            );
            self.may_be_url |= matches!(c, b'.' | b'h' | b'H' | b'w' | b'W');
        } else if c == 0xEF && i + 2 < b.len() {
            // U+F000..=U+FFFF: the full-width forms among them.
            let cp = 0xF000 | (u32::from(b[i + 1] & 0x3F) << 6) | u32::from(b[i + 2] & 0x3F);
            self.latin |= is_full_width_alphanumeric(cp);
            self.symbol |= matches!(cp, 0xFF04 | 0xFF20 | 0xFF03 | 0xFF0A);
            self.may_be_url |= matches!(cp, 0xFF0E | 0xFF57 | 0xFF37);
        } else if c == 0xC2 && b.get(i + 1) == Some(&0xB7) {
            // ·
            self.may_be_url = true;
        }
    }
}

/// The high bit of each byte of a word.
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each of the eight bytes of `x` that is `byte` (the
/// classic test for a zero byte, applied to `x` with `byte` xored out); it
/// may also mark a byte right above one that is, never one elsewhere.
fn byte_mask(x: u64, byte: u8) -> u64 {
    let y = x ^ (0x0101_0101_0101_0101 * u64::from(byte));
    y.wrapping_sub(0x0101_0101_0101_0101) & !y & HIGH_BITS
}

/// Full-width digits and Latin letters (not the punctuation between them:
/// ：, ？ and ＠ are U+FF1A, U+FF1F and U+FF20).
fn is_full_width_alphanumeric(cp: u32) -> bool {
    matches!(cp, 0xFF10..=0xFF19 | 0xFF21..=0xFF3A | 0xFF41..=0xFF5A)
}

/// `PS：…` (any case, any colon), 本书首发…, 作者按…
fn is_note(line: &str) -> bool {
    let mut chars = line.chars();
    if let (Some(p), Some(s)) = (chars.next(), chars.next())
        && matches!(p, 'p' | 'P' | 'ｐ' | 'Ｐ')
        && matches!(s, 's' | 'S' | 'ｓ' | 'Ｓ')
    {
        let rest = chars.as_str().trim_start_matches(['.', '．', ' ', '　']);
        if rest.starts_with([':', '：', '；', ';', ',', '，'])
            || (rest.starts_with(super::is_han) && !rest.starts_with(PS_WORD_NEXT))
        {
            return true;
        }
    }
    NOTE_OPENINGS.iter().any(|(w, follows)| {
        let Some(rest) = line.strip_prefix(w) else {
            return false;
        };
        match follows {
            NoteFollows::Anything => true,
            NoteFollows::Mark => rest.chars().next().is_none_or(|c| !super::is_han(c)),
            NoteFollows::Site => SITE_NAME_WORDS.iter().any(|s| rest.contains(s)),
        }
    })
}

/// A line disguised to get past filters: Latin letters mixing half- and
/// full-width forms, or symbols between Han characters (小$说$天"堂).
fn is_obfuscated(line: &str) -> bool {
    if line.len() > 80 * 3 {
        return false;
    }
    // Widths switching twice within one word (wＷw, xiＡoshＵo): ＡＰＰ and
    // app side by side in a story line are two words, each of one width.
    let mut switches = 0;
    let mut word_width: Option<bool> = None;
    let mut mixed_word = false;
    let mut symbol_gaps = 0;
    let chars: Vec<char> = line.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let full_width = ('Ａ'..='Ｚ').contains(&c) || ('ａ'..='ｚ').contains(&c);
        if c.is_ascii_alphabetic() || full_width {
            if word_width.is_some_and(|w| w != full_width) {
                switches += 1;
                mixed_word |= switches >= 2;
            }
            word_width = Some(full_width);
            continue;
        }
        switches = 0;
        word_width = None;
        if is_gap_symbol(c)
            && i > 0
            && super::is_han(chars[i - 1])
            && chars.get(i + 1).is_some_and(|n| super::is_han(*n))
            // 叫"小明"的 quotes a word: a straight quote is a gap only
            // between single characters (天"堂"网).
            && (c != '"' || chars.get(i + 2).is_some_and(|n| is_gap_symbol(*n)))
        {
            symbol_gaps += 1;
        }
    }
    mixed_word || symbol_gaps >= 2
}

/// Symbols adverts put between characters (小$说$天"堂).
fn is_gap_symbol(c: char) -> bool {
    matches!(
        c,
        '$' | '@' | '#' | '%' | '^' | '&' | '*' | '~' | '|' | '"' | '＄' | '＠' | '＃' | '＊'
    )
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// [`Marks`] as the characters of the line define them.
    fn marks_of_chars(line: &str) -> (bool, bool, bool) {
        let latin = line.chars().any(|c| {
            c.is_ascii_alphanumeric()
                || ('０'..='９').contains(&c)
                || ('Ａ'..='Ｚ').contains(&c)
                || ('ａ'..='ｚ').contains(&c)
        });
        let symbol = line.contains([
            '$', '@', '#', '%', '^', '&', '*', '~', '|', '"', '＄', '＠', '＃', '＊',
        ]);
        let url = line.contains(['.', '．', '·', 'h', 'H', 'w', 'W', 'ｗ', 'Ｗ']);
        (latin, symbol, url)
    }

    #[test]
    fn the_marks_read_from_bytes_are_those_of_the_characters() {
        for line in [
            "他看着窗外，心想：明天去www.baidu.com查一查。",
            "水6大会，全是汉字和标点！",
            "ＷＷＷ．ＸＸＸ．ＣＯＭ，１２３",
            "小$说$天\"堂＄＠＃＊",
            "·　Http　ｗ",
            "纯汉字。",
            "真的吗？他说：好［的］＿",
            "一二三四五六七八九十百千万·亿",
            "一二三四五六七八九十百千万亿兆a",
            "一二三四五六七八九十百千万亿兆京ｗ",
            "",
        ] {
            let m = Marks::of(line);
            assert_eq!(
                (m.latin, m.symbol, m.may_be_url),
                marks_of_chars(line),
                "{line}"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Eight bytes at a time or one by one, wherever the marks fall.
        #[test]
        fn the_marks_of_any_line(line in "[一二说。，！？：“”「」a-zA-Z0-9.$\"@ ０-９Ａ-Ｚａ-ｚ．·＠＄＃＊ｗＷ＿［］]{0,40}") {
            let m = Marks::of(&line);
            prop_assert_eq!((m.latin, m.symbol, m.may_be_url), marks_of_chars(&line));
        }
    }

    #[test]
    fn a_byte_is_found_in_any_position_of_a_word() {
        for at in 0..8 {
            let mut x = [0x80_u8; 8];
            x[at] = 0xEF;
            let found = byte_mask(u64::from_le_bytes(x), 0xEF);
            assert_eq!(found, 0x80 << (8 * at), "{at}");
            assert_eq!(byte_mask(u64::from_le_bytes(x), 0xC2), 0, "{at}");
        }
        assert_eq!(
            byte_mask(
                u64::from_le_bytes(*"一二三".as_bytes().first_chunk().unwrap()),
                0xEF
            ),
            0
        );
    }

    #[test]
    fn url_in_a_sentence_is_cut_out() {
        assert_eq!(
            classify("他看着窗外，心想：明天去www.baidu.com查一查。"),
            LineClass::Cleaned("他看着窗外，心想：明天去查一查。".into())
        );
        assert_eq!(classify("www.example.com"), LineClass::Advert);
        assert_eq!(classify("本站地址：www.xxx.com"), LineClass::Advert);
        assert_eq!(classify("请访问 www.xxx.com 阅读"), LineClass::Advert);
        // 站 and 地址 in a story line: the line is kept, the URL cut out.
        for (line, story) in [
            (
                "他站起身，打开www.baidu.com查了查。",
                "他站起身，打开查了查。",
            ),
            ("他搜了搜example.com上的地址。", "他搜了搜上的地址。"),
            ("他打开了baidu.com。", "他打开了。"),
        ] {
            assert_eq!(classify(line), LineClass::Cleaned(story.into()), "{line}");
        }
        assert_eq!(
            classify("https://example.org/book/1.html"),
            LineClass::Advert
        );
    }

    #[test]
    fn obfuscated_adverts() {
        assert_eq!(
            classify("wＷw．xiＡoshＵotxt.neｔt@xt小$说$天\"堂"),
            LineClass::Advert
        );
        assert_eq!(classify("看精彩小说就来小$说$天@堂"), LineClass::Advert);
        assert_eq!(classify("他花了5$买了一本书。"), LineClass::Story);
        assert_eq!(classify("小\"说\"天\"堂网"), LineClass::Advert);
        assert_eq!(classify("记住ｂiｑuｇe点com"), LineClass::Advert);
        // Each word of one width: a story line.
        assert_eq!(classify("他打开ＡＰＰ，又关掉了app。"), LineClass::Story);
        assert_eq!(classify("她新买的ｉPhone摔坏了。"), LineClass::Story);
    }

    #[test]
    fn a_word_in_straight_quotes_is_story() {
        // Both were dropped as adverts: ？ counted as a Latin letter, and
        // the two quote marks as symbols between characters.
        for line in [
            "他是那个叫\"小明\"的人吗？我不知道。",
            "那个叫\"小明\"的人欠了他200块。",
        ] {
            assert_eq!(classify(line), LineClass::Story, "{line}");
        }
    }

    #[test]
    fn notes_and_pleas() {
        for note in [
            "PS：明天加更。",
            "ps:求收藏",
            "Ps：感谢打赏",
            "本书首发起点中文网",
        ] {
            assert_eq!(classify(note), LineClass::Note, "{note}");
        }
        for note in [
            "作者按：此章有删改。",
            "作者注，以下为虚构。",
            "本书首发于某某文学网",
            "作者的话：",
        ] {
            assert_eq!(classify(note), LineClass::Note, "{note}");
        }
        // The same words opening a story line.
        for story in [
            "PS机摆在桌上，落满了灰。",
            "作者按语写得很长，他一句也没看懂。",
            "本书首发的那天，出版社的人都来了。",
        ] {
            assert_eq!(classify(story), LineClass::Story, "{story}");
        }
        assert_eq!(classify("作者有话说：谢谢大家"), LineClass::NotesFollow);
        assert_eq!(classify("求月票！"), LineClass::Advert);
        for plea in [
            "月票！月票！",
            "各位，求票",
            "有月票的投一下",
            "来自某某小说网",
        ] {
            assert_eq!(classify(plea), LineClass::Advert, "{plea}");
        }
        // Everyday words in a story line: read.
        for story in [
            "她从包里掏出月票，上了公交车。",
            "候选人挨家挨户地求票，嗓子都喊哑了。",
            "他在一个小说网上连载了三年。",
        ] {
            assert_eq!(classify(story), LineClass::Story, "{story}");
        }
        assert_eq!(classify("他说月光很美。"), LineClass::Story);
        assert_eq!(classify("Psyche是她的名字。"), LineClass::Story);
    }
}
