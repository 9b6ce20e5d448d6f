//! The text espeak-ng is given for a line of pinyin: spelled tokens split
//! into letters, Latin words handed to an English voice through SSML.

/// The espeak-ng voice that reads Latin words (not spelled tokens).
const LATIN_WORD_VOICE: &str = "en-us";

/// The text espeak-ng is given for a [`Spoken::pinyin`](crate::frontend::Spoken)
/// string, and whether it is SSML.
///
/// The `cmn-latn-pinyin` voice says single letters the way a Chinese
/// speaker does (Q → kiu, A → ei), so a spelled token (`GDP`) goes to it as
/// separate letters (`G D P`: as one token it would read `VIP` as a word).
/// It reads Latin words badly, so a run of word tokens (`iPhone`, `App
/// Store`) is spoken by an English voice through SSML `<voice>` elements,
/// switching back to `voice` after it.
pub fn engine_text(pinyin: &str, voice: &str) -> (String, bool) {
    use crate::frontend::pinyin::{is_latin_token, is_spelled};
    let core = |t: &'_ str| t.trim_end_matches([',', '.', '!', '?']).len();
    let is_word = |t: &str| {
        let c = &t[..core(t)];
        is_latin_token(c) && !is_spelled(c)
    };
    let spell = |t: &str, out: &mut String| {
        let (c, mark) = t.split_at(core(t));
        if is_spelled(c) && c.len() > 1 {
            for (i, letter) in c.chars().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push(letter);
            }
            out.push_str(mark);
        } else {
            out.push_str(t);
        }
    };
    let tokens: Vec<&str> = pinyin.split(' ').filter(|t| !t.is_empty()).collect();
    if !tokens.iter().any(|t| is_word(t)) {
        let mut out = String::with_capacity(pinyin.len() + 8);
        for (i, t) in tokens.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            spell(t, &mut out);
        }
        return (out, false);
    }
    let voice = xml_escape(voice);
    let mut out = String::with_capacity(pinyin.len() + 64);
    out.push_str("<speak>");
    let mut english: Option<bool> = None;
    for t in tokens {
        let word = is_word(t);
        if english != Some(word) {
            if english.is_some() {
                out.push_str("</voice>");
            }
            let name = if word { LATIN_WORD_VOICE } else { &voice };
            out.push_str(&format!("<voice name=\"{name}\">"));
            english = Some(word);
        } else {
            out.push(' ');
        }
        spell(t, &mut out);
    }
    out.push_str("</voice></speak>");
    (out, true)
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::espeak::synthesize_blocking;
    use crate::synth::espeak::tests::{req, turn};

    #[test]
    fn latin_tokens_become_letters_or_an_english_voice() {
        assert_eq!(
            engine_text("yi1 tiao2 QQ xiao1 xi5, GDP.", "cmn-latn-pinyin"),
            ("yi1 tiao2 Q Q xiao1 xi5, G D P.".to_owned(), false)
        );
        let (ssml, is_ssml) = engine_text("da3 kai1 App Store, iPhone le5", "cmn-latn-pinyin+m3");
        assert!(is_ssml);
        assert_eq!(
            ssml,
            "<speak><voice name=\"cmn-latn-pinyin+m3\">da3 kai1</voice>\
             <voice name=\"en-us\">App Store, iPhone</voice>\
             <voice name=\"cmn-latn-pinyin+m3\">le5</voice></speak>"
        );
        // The SSML is spoken, and longer than the pinyin alone.
        let _turn = turn();
        let mut with_word = req("cmn-latn-pinyin", &ssml);
        with_word.ssml = true;
        let words = synthesize_blocking(&with_word).unwrap();
        let plain = synthesize_blocking(&req("cmn-latn-pinyin", "da3 kai1 le5")).unwrap();
        assert!(words.samples.len() > plain.samples.len() * 3 / 2);
    }
}
