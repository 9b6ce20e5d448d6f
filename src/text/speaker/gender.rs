//! Genders of discovered characters: from the name itself (婶, 叔 …), from
//! how others address them (润叶姐) and from the pronouns that follow them.

use aho_corasick::{AhoCorasickBuilder, MatchKind};

use super::clause::is_punct;
use super::{Discovered, ParagraphView};
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

    #[test]
    fn gender_hints() {
        assert_eq!(gender_hint("润叶姐"), Gender::Female);
        assert_eq!(gender_hint("福堂叔"), Gender::Male);
        assert_eq!(gender_hint("毛仲"), Gender::Unknown);
        assert_eq!(gender_hint("公主"), Gender::Female);
        assert_eq!(gender_hint("女王"), Gender::Female);
    }
}
