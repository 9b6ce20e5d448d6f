//! Latin letters in Chinese text: acronyms written in lower or mixed case
//! (ceo, Cpu) are put in capitals so that they are spelled; any other word
//! stays as written.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::re;

/// Acronyms written in lower or mixed case that are read letter by letter.
const ACRONYMS: [&str; 26] = [
    "ATM", "UFO", "NBA", "CBA", "GPU", "CPU", "CEO", "CFO", "CTO", "COO", "WTO", "MVP", "VIP",
    "IQ", "EQ", "MBA", "DNA", "GDP", "KTV", "FBI", "CIA", "USB", "PPT", "NASA", "WHO", "DIY",
];

static LETTERS: LazyLock<Regex> = LazyLock::new(|| re(r"[A-Za-z]+(?: [A-Za-z]+)*"));

/// `text` with its known acronyms in capitals.
pub(super) fn spell_acronyms(text: &str) -> String {
    LETTERS.replace_all(text, acronym).into_owned()
}

/// A run of Latin words: in capitals when it is a known acronym.
fn acronym(caps: &Captures) -> String {
    let run = &caps[0];
    let joined: String = run.chars().filter(|c| *c != ' ').collect::<String>();
    let upper = joined.to_ascii_uppercase();
    if joined != upper && ACRONYMS.contains(&upper.as_str()) {
        upper
    } else {
        run.to_owned()
    }
}
