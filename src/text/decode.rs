//! Bytes → text: detects UTF-8 (with or without BOM), UTF-16 (BOM), GB18030/GBK
//! and Big5, and normalizes line endings to `\n`. A few bad bytes (a byte
//! lost in a download) are repaired and reported, not fatal: the text around
//! them is realigned and only what cannot be read is left out.
//!
//! A file that changes encoding part way (UTF-8 and GBK downloads joined
//! into one) is read by region: lines that are not UTF-8 but read cleanly
//! in a legacy encoding are decoded with it, and the regions are reported.
//! Legacy text that reads as mojibake in every encoding (few common
//! characters) is rejected, not read aloud.

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{BIG5, DecoderResult, Encoding, GB18030, GBK, UTF_8, UTF_16BE, UTF_16LE};

/// Why a byte string could not be read as a Chinese novel.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("the file is empty")]
    Empty,
    #[error(
        "the file looks binary, not text: control byte {byte:#04x} at byte offset {offset} ({count} control bytes in all)"
    )]
    Binary {
        offset: usize,
        byte: u8,
        count: usize,
    },
    #[error(
        "the file is mostly not {encoding} text: {count} invalid byte sequences, the first at byte offset {offset}"
    )]
    Malformed {
        encoding: &'static str,
        count: usize,
        offset: usize,
    },
    #[error(
        "the file reads as mojibake in every encoding tried (UTF-8, GB18030, Big5): only {percent}% of its characters from byte offset {offset} are common ones"
    )]
    Mojibake { offset: usize, percent: usize },
    #[error("the text has no Chinese (Han) characters to read")]
    NoHan,
}

/// Bad bytes that were repaired while decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repairs {
    /// Invalid byte sequences and stray control bytes left out.
    pub count: usize,
    /// Byte offset in the file of the first one.
    pub offset: usize,
    /// 1-based line of the first one.
    pub line: usize,
}

/// A stretch of a file read with one encoding (byte offsets in the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    pub start: usize,
    pub end: usize,
    pub encoding: &'static str,
}

/// Decoded text plus the name of the encoding that was detected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub text: String,
    pub encoding: &'static str,
    /// Bad bytes left out, if there were any.
    pub repairs: Option<Repairs>,
    /// For a file that changes encoding part way, each region in order
    /// (empty when the whole file has one encoding).
    pub regions: Vec<Region>,
}

/// At most one bad sequence per this many bytes (and at least a few in any
/// file) are repaired; more means the file is not text in that encoding.
const BYTES_PER_REPAIR: usize = 200;
const MIN_REPAIRS: usize = 8;

fn repair_budget(len: usize) -> usize {
    MIN_REPAIRS + len / BYTES_PER_REPAIR
}

/// Stray control bytes tolerated: one, plus one per 1,000 bytes.
fn control_budget(len: usize) -> usize {
    1 + len / 1000
}

/// Decodes a whole file.
pub fn decode(bytes: &[u8]) -> Result<Decoded, DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    let (encoding, bom_len) = match Encoding::for_bom(bytes) {
        Some((enc, bom_len)) => (enc, bom_len),
        None => (detect(bytes)?, 0),
    };
    let body = &bytes[bom_len..];
    let mixed = if bom_len == 0 && encoding != UTF_16LE && encoding != UTF_16BE {
        split_regions(body).and_then(|parts| decode_regions(body, &parts))
    } else {
        None
    };
    let (text, mut bad, encoding, regions) = match mixed {
        Some(read) => read,
        None => {
            let (text, bad) = decode_repairing(encoding, body);
            if bad.len() > repair_budget(body.len()) {
                return Err(DecodeError::Malformed {
                    encoding: encoding.name(),
                    count: bad.len(),
                    offset: bad[0] + bom_len,
                });
            }
            if encoding == GB18030 || encoding == BIG5 {
                let (encoding, text, bad) = readable_legacy(encoding, body, text, bad)?;
                (text, bad, encoding, Vec::new())
            } else {
                (text, bad, encoding, Vec::new())
            }
        }
    };
    let text = normalize_newlines(&text);
    // Stray control characters (a NUL in the middle of a book) are left out.
    let controls = text.chars().filter(|c| is_binary_char(*c)).count();
    let text = if controls > 0 {
        if controls > control_budget(body.len()) {
            let offset = bytes.iter().position(|&b| is_control_byte(b)).unwrap_or(0);
            return Err(DecodeError::Binary {
                offset,
                byte: bytes[offset],
                count: controls,
            });
        }
        if encoding == UTF_8 || encoding == GB18030 || encoding == BIG5 {
            bad.extend(
                body.iter()
                    .enumerate()
                    .filter(|(_, b)| is_control_byte(**b))
                    .map(|(i, _)| i),
            );
            bad.sort_unstable();
        }
        text.chars().filter(|c| !is_binary_char(*c)).collect()
    } else {
        text
    };
    if text.trim().is_empty() {
        return Err(DecodeError::Empty);
    }
    if !text.chars().any(is_han) {
        return Err(DecodeError::NoHan);
    }
    let repairs = bad.first().map(|&first| Repairs {
        count: bad.len().max(1),
        offset: first + bom_len,
        line: 1 + body[..first.min(body.len())]
            .iter()
            .filter(|&&b| b == b'\n')
            .count(),
    });
    Ok(Decoded {
        text,
        encoding: match regions.iter().find(|r| r.encoding != "UTF-8") {
            Some(r) if r.encoding == "Big5" => "UTF-8 and Big5",
            Some(_) => "UTF-8 and GB18030",
            None => encoding.name(),
        },
        repairs,
        regions,
    })
}

/// Legacy text checked for mojibake: when `encoding` reads too few common
/// characters, the other Chinese legacy encoding is tried; when neither
/// reads well, the file is rejected.
#[allow(clippy::type_complexity)]
fn readable_legacy(
    encoding: &'static Encoding,
    body: &[u8],
    text: String,
    bad: Vec<usize>,
) -> Result<(&'static Encoding, String, Vec<usize>), DecodeError> {
    let first = common_share(encoding, body);
    if first.readable() {
        return Ok((encoding, text, bad));
    }
    let other = if encoding == BIG5 { GB18030 } else { BIG5 };
    if common_share(other, body).readable() {
        let (text, bad) = decode_repairing(other, body);
        if bad.len() <= repair_budget(body.len()) {
            return Ok((other, text, bad));
        }
    }
    Err(DecodeError::Mojibake {
        offset: first.first_uncommon,
        percent: first.common * 100 / first.total.max(1),
    })
}

/// How many of a legacy text's double-byte characters are common ones
/// (GB2312 level 1, Big5 frequent): mojibake (UTF-8 read as GBK, GBK
/// read as Big5) is mostly rare characters.
struct Share {
    common: usize,
    total: usize,
    /// Byte offset of the first rare character.
    first_uncommon: usize,
}

/// Double-byte characters needed before a text is judged.
const MIN_JUDGED: usize = 32;

impl Share {
    fn readable(&self) -> bool {
        self.total < MIN_JUDGED || self.common * 2 >= self.total
    }
}

fn common_share(encoding: &'static Encoding, body: &[u8]) -> Share {
    let mut share = Share {
        common: 0,
        total: 0,
        first_uncommon: 0,
    };
    let mut i = 0;
    while i < body.len() {
        let lead = body[i];
        if lead < 0x80 {
            i += 1;
            continue;
        }
        let trail = body.get(i + 1).copied().unwrap_or(0);
        let (counted, common, len) = if encoding == BIG5 {
            let valid = (0x40..=0x7E).contains(&trail) || (0xA1..=0xFE).contains(&trail);
            // Punctuation and symbols (rows A1–A3) are neither.
            (lead >= 0xA4, (0xA4..=0xC6).contains(&lead) && valid, 2)
        } else if (0x30..=0x39).contains(&trail) {
            (true, false, 4)
        } else {
            let valid = (0xA1..=0xFE).contains(&trail);
            (
                !(0xA1..0xB0).contains(&lead),
                (0xB0..=0xD7).contains(&lead) && valid,
                2,
            )
        };
        if counted {
            share.total += 1;
            if common {
                share.common += 1;
            } else if share.total - share.common == 1 {
                share.first_uncommon = i;
            }
        }
        i += len;
    }
    share
}

/// One line's kind when read as UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    /// ASCII only: reads the same in every encoding.
    Neutral,
    /// UTF-8 (a few bad bytes at most).
    Utf8,
    /// More bad sequences than good multibyte characters: not UTF-8.
    Legacy,
}

/// Double-byte characters the legacy regions need to be read as such.
const MIN_REGION_CHARS: usize = 8;

/// Multibyte UTF-8 characters a run of lines needs to count as UTF-8
/// (fewer can be GBK bytes that happen to be valid UTF-8).
const MIN_UTF8_RUN: usize = 4;

/// Bad sequences (in lines that are not UTF-8) that make a file mixed;
/// fewer are left to the repairs of the UTF-8 reading.
const MIN_LEGACY_ERRORS: usize = 4;

/// For a file that is partly UTF-8 and partly another encoding: the byte
/// ranges of its regions (split at line ends, which read the same in
/// UTF-8, GBK and Big5), each marked UTF-8 or not. `None` when the file is
/// one encoding.
fn split_regions(body: &[u8]) -> Option<Vec<(usize, usize, bool)>> {
    if std::str::from_utf8(body).is_ok() {
        return None;
    }
    let mut runs: Vec<(usize, usize, LineKind, usize)> = Vec::new();
    let mut legacy_errors = 0;
    let mut utf8_chars = 0;
    let mut start = 0;
    while start < body.len() {
        let end = body[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(body.len(), |p| start + p + 1);
        let mut invalid = 0;
        let mut multibyte = 0;
        for chunk in body[start..end].utf8_chunks() {
            multibyte += chunk.valid().chars().filter(|c| !c.is_ascii()).count();
            if !chunk.invalid().is_empty() {
                invalid += 1;
            }
        }
        let kind = if invalid > multibyte {
            legacy_errors += invalid;
            LineKind::Legacy
        } else if multibyte > 0 {
            utf8_chars += multibyte;
            LineKind::Utf8
        } else {
            LineKind::Neutral
        };
        match runs.last_mut() {
            Some(last) if last.2 == kind || kind == LineKind::Neutral => {
                last.1 = end;
                if kind == LineKind::Utf8 {
                    last.3 += multibyte;
                }
            }
            Some(last) if last.2 == LineKind::Neutral => {
                *last = (last.0, end, kind, multibyte);
            }
            _ => runs.push((start, end, kind, multibyte)),
        }
        start = end;
    }
    if legacy_errors < MIN_LEGACY_ERRORS || utf8_chars < MIN_UTF8_RUN * 4 {
        return None;
    }
    // Short UTF-8 runs among legacy lines are legacy bytes that happen to
    // be valid UTF-8; neighbouring runs of one kind are joined.
    let mut regions: Vec<(usize, usize, bool)> = Vec::new();
    for (start, end, kind, chars) in runs {
        let utf8 = kind == LineKind::Neutral || (kind == LineKind::Utf8 && chars >= MIN_UTF8_RUN);
        match regions.last_mut() {
            Some(last) if last.2 == utf8 => last.1 = end,
            _ => regions.push((start, end, utf8)),
        }
    }
    (regions.len() > 1).then_some(regions)
}

/// Decodes each region with its own encoding: UTF-8, or the legacy
/// encoding detected on all the other regions together. `None` when those
/// regions do not read cleanly in any legacy encoding (too few double-byte
/// characters to tell, or mostly rare ones): they are damaged UTF-8, or
/// mojibake, and the file is read as one.
#[allow(clippy::type_complexity)]
fn decode_regions(
    body: &[u8],
    parts: &[(usize, usize, bool)],
) -> Option<(String, Vec<usize>, &'static Encoding, Vec<Region>)> {
    let legacy_bytes: Vec<u8> = parts
        .iter()
        .filter(|p| !p.2)
        .flat_map(|p| body[p.0..p.1].iter().copied())
        .collect();
    let detected = match detect_legacy(&legacy_bytes) {
        enc if enc == BIG5 => BIG5,
        _ => GB18030,
    };
    let other = if detected == BIG5 { GB18030 } else { BIG5 };
    let legacy = [detected, other].into_iter().find(|&enc| {
        let share = common_share(enc, &legacy_bytes);
        share.total >= MIN_REGION_CHARS && share.common * 2 >= share.total
    })?;
    let mut text = String::with_capacity(body.len() * 3 / 2);
    let mut bad = Vec::new();
    let mut regions = Vec::with_capacity(parts.len());
    for &(start, end, utf8) in parts {
        let encoding = if utf8 { UTF_8 } else { legacy };
        let (part, part_bad) = decode_repairing(encoding, &body[start..end]);
        text.push_str(&part);
        bad.extend(part_bad.into_iter().map(|b| b + start));
        regions.push(Region {
            start,
            end,
            // encoding_rs says "gb18030"; people write it in capitals.
            encoding: if encoding == GB18030 {
                "GB18030"
            } else {
                encoding.name()
            },
        });
    }
    if bad.len() > repair_budget(body.len()) {
        return None;
    }
    let main = if legacy_bytes.len() * 2 > body.len() {
        legacy
    } else {
        UTF_8
    };
    Some((text, bad, main, regions))
}

fn is_control_byte(b: u8) -> bool {
    b == 0 || (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0c)) || b == 0x7f
}

/// Picks an encoding for BOM-less bytes. UTF-8 wins when nearly all of the
/// bytes are valid UTF-8; otherwise chardetng chooses among the legacy
/// encodings (trying decoders in order does not work: GB18030 accepts Big5
/// bytes without error).
fn detect(bytes: &[u8]) -> Result<&'static Encoding, DecodeError> {
    let controls: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| is_control_byte(**b))
        .map(|(i, _)| i)
        .take(control_budget(bytes.len()) + 1)
        .collect();
    if controls.len() > control_budget(bytes.len()) {
        // UTF-16 without a BOM: every other byte of Han text is a letter, not NUL.
        let count = bytes.iter().filter(|b| is_control_byte(**b)).count();
        return Err(DecodeError::Binary {
            offset: controls[0],
            byte: bytes[controls[0]],
            count,
        });
    }
    let mut invalid = 0usize;
    let mut multibyte = 0usize;
    for chunk in bytes.utf8_chunks() {
        multibyte += chunk.valid().len() - chunk.valid().chars().count();
        if !chunk.invalid().is_empty() {
            invalid += 1;
        }
    }
    if invalid == 0
        || (multibyte > 0 && invalid <= repair_budget(bytes.len()) && invalid * 50 < multibyte)
    {
        return Ok(UTF_8);
    }
    Ok(detect_legacy(bytes))
}

/// The legacy encoding chardetng sees in `bytes`, folded into the Chinese
/// families (GBK read as its superset GB18030), or UTF-16.
fn detect_legacy(bytes: &[u8]) -> &'static Encoding {
    let mut detector = EncodingDetector::new(Iso2022JpDetection::Deny);
    detector.feed(bytes, true);
    let guess = detector.guess(None, Utf8Detection::Deny);
    // A novel is Chinese: fold every other guess into the two Chinese legacy
    // families, and read GBK as its superset GB18030.
    if guess == BIG5 {
        BIG5
    } else if guess == GBK || guess == GB18030 {
        GB18030
    } else if guess == UTF_16LE || guess == UTF_16BE {
        guess
    } else {
        // A damaged legacy file chardetng could not place: the Chinese
        // encoding that reads it with fewer errors.
        let errors = |enc: &'static Encoding| decode_repairing(enc, bytes).1.len();
        if errors(BIG5) < errors(GB18030) {
            BIG5
        } else {
            GB18030
        }
    }
}

/// Decodes `body`, leaving out what cannot be decoded: returns the text and
/// the byte offsets of the bad sequences. In a double-byte encoding a lost
/// byte shifts every later pair until the next ASCII byte (the error only
/// shows there); the byte whose removal reads best is dropped instead.
fn decode_repairing(encoding: &'static Encoding, body: &[u8]) -> (String, Vec<usize>) {
    let (text, bad) = decode_counting(encoding, body);
    if bad.is_empty() || !(encoding == GB18030 || encoding == BIG5) {
        return (text, bad);
    }
    if bad.len() > repair_budget(body.len()) {
        return (text, bad);
    }
    let mut fixed = Vec::with_capacity(body.len());
    let mut copied = 0;
    // Where the bytes were dropped: reported instead of where the shift showed.
    let mut dropped = Vec::with_capacity(bad.len());
    for &at in &bad {
        if at < copied || at >= body.len() {
            continue;
        }
        let drop = (dropped.len() < MAX_REALIGNED)
            .then(|| realign(encoding, body, at))
            .flatten()
            .filter(|&d| d >= copied && d < body.len())
            .unwrap_or(at);
        fixed.extend_from_slice(&body[copied..drop]);
        dropped.push(drop);
        copied = drop + 1;
    }
    fixed.extend_from_slice(&body[copied.min(body.len())..]);
    // Whatever is still bad after realigning is left out by the decoder.
    let (text, _) = decode_counting(encoding, &fixed);
    (text, if dropped.is_empty() { bad } else { dropped })
}

/// Bytes searched back from an error for the byte that shifted the pairs.
const REALIGN_WINDOW: usize = 2048;

/// Errors realigned at most (each costs up to a window squared); later ones
/// are only left out.
const MAX_REALIGNED: usize = 64;

/// The byte before `error` (on its line) whose removal makes the rest of the
/// line read best, by the share of common characters.
fn realign(encoding: &'static Encoding, body: &[u8], error: usize) -> Option<usize> {
    let floor = error.saturating_sub(REALIGN_WINDOW);
    let line_start = body[floor..error]
        .iter()
        .rposition(|&b| b < 0x80)
        .map_or(floor, |p| floor + p + 1);
    let end = body[error..]
        .iter()
        .position(|&b| b < 0x40)
        .map_or(body.len(), |p| error + p);
    // Character starts of the line as decoded, with the score up to each.
    let mut starts = Vec::new();
    let mut prefix = Vec::new();
    let mut i = line_start;
    let mut score = 0i64;
    while i < end {
        starts.push(i);
        prefix.push(score);
        let (s, len) = pair_score(encoding, &body[i..end]);
        score += s;
        i += len;
    }
    let mut best: Option<(i64, usize)> = None;
    for (k, &at) in starts.iter().enumerate() {
        let mut total = prefix[k];
        let mut j = at + 1;
        while j < end {
            let (s, len) = pair_score(encoding, &body[j..end]);
            total += s;
            j += len;
        }
        if j > end {
            total -= 4;
        }
        if best.is_none_or(|(b, _)| total > b) {
            best = Some((total, at));
        }
    }
    best.map(|(_, at)| at)
}

/// The score of the character at the start of `bytes` (+1 for a common
/// character or punctuation, −1 otherwise) and its length in bytes.
fn pair_score(encoding: &'static Encoding, bytes: &[u8]) -> (i64, usize) {
    let lead = bytes[0];
    if lead < 0x80 {
        return (if lead.is_ascii_alphabetic() { -1 } else { 0 }, 1);
    }
    let Some(&trail) = bytes.get(1) else {
        return (-2, 2);
    };
    if encoding == BIG5 {
        let common =
            (0xA4..=0xC6).contains(&lead) || (lead == 0xA1 && (0x40..=0x7E).contains(&trail));
        let valid = (0x40..=0x7E).contains(&trail) || (0xA1..=0xFE).contains(&trail);
        return (if common && valid { 1 } else { -1 }, 2);
    }
    if (0x30..=0x39).contains(&trail) {
        return (-1, 4);
    }
    let valid = (0xA1..=0xFE).contains(&trail);
    let punct = (lead == 0xA1 && (0xA1..=0xBF).contains(&trail))
        || (lead == 0xA3 && matches!(trail, 0xA1 | 0xA8 | 0xA9 | 0xAC | 0xBA | 0xBB | 0xBF));
    let common = (0xB0..=0xD7).contains(&lead) && valid;
    (if common || punct { 1 } else { -1 }, 2)
}

/// Decodes without replacement characters: bad sequences are left out and
/// their byte offsets returned.
fn decode_counting(encoding: &'static Encoding, body: &[u8]) -> (String, Vec<usize>) {
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let mut out = String::with_capacity(
        decoder
            .max_utf8_buffer_length_without_replacement(body.len())
            .unwrap_or(body.len() * 3),
    );
    let mut bad = Vec::new();
    let mut pos = 0;
    loop {
        let (result, read) =
            decoder.decode_to_string_without_replacement(&body[pos..], &mut out, true);
        pos += read;
        match result {
            DecoderResult::InputEmpty => break,
            DecoderResult::OutputFull => out.reserve(body.len() - pos + 16),
            DecoderResult::Malformed(len, extra) => {
                bad.push(pos.saturating_sub(len as usize + extra as usize));
            }
        }
    }
    (out, bad)
}

fn normalize_newlines(text: &str) -> String {
    if text.contains('\r') {
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text.to_owned()
    }
}

fn is_binary_char(c: char) -> bool {
    c.is_control() && !matches!(c, '\n' | '\t' | '\u{0c}')
}

/// Is `c` a Han (CJK ideograph) character?
pub fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F | 0x3007)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "第一章 风起\r\n毛仲說：「殺！」\r\n他笑了。\n";

    #[test]
    fn utf8_with_and_without_bom() {
        let plain = decode(SAMPLE.as_bytes()).unwrap();
        assert_eq!(plain.encoding, "UTF-8");
        assert!(!plain.text.contains('\r'));
        let mut bom = vec![0xEF, 0xBB, 0xBF];
        bom.extend_from_slice(SAMPLE.as_bytes());
        assert_eq!(decode(&bom).unwrap().text, plain.text);
    }

    #[test]
    fn legacy_encodings_round_trip() {
        let simplified =
            "第一章 起点\n他说：“我们明天出发，去北京看看长城。”她点点头，没有说话。\n";
        let (gbk, _, _) = GBK.encode(simplified);
        assert_eq!(decode(&gbk).unwrap().text, simplified);
        let traditional =
            "第一章 起點\n毛仲說：「我們明天出發，去北京看看長城。」她點點頭，沒有說話。\n";
        let (big5, _, _) = BIG5.encode(traditional);
        let d = decode(&big5).unwrap();
        assert_eq!(d.encoding, "Big5");
        assert_eq!(d.text, traditional);
    }

    #[test]
    fn utf16_with_bom() {
        let mut le = vec![0xFF, 0xFE];
        for u in SAMPLE.encode_utf16() {
            le.extend_from_slice(&u.to_le_bytes());
        }
        assert_eq!(
            decode(&le).unwrap().text,
            decode(SAMPLE.as_bytes()).unwrap().text
        );
        let mut be = vec![0xFE, 0xFF];
        for u in SAMPLE.encode_utf16() {
            be.extend_from_slice(&u.to_be_bytes());
        }
        assert_eq!(decode(&be).unwrap().encoding, "UTF-16BE");
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(decode(b""), Err(DecodeError::Empty));
        assert_eq!(decode(b" \n\n"), Err(DecodeError::Empty));
        assert!(matches!(
            decode(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\0\0\0\0\0\0\0\0\0"),
            Err(DecodeError::Binary { offset: 6, .. })
        ));
        assert_eq!(decode(b"hello world\n"), Err(DecodeError::NoHan));
    }

    const UTF8_PART: &str = "第一章 雾港\n清晨的雾还没有散，码头上已经站满了等船的人。老周把帽子压低，说：“今天的船怕是要晚了。”\n";
    const GBK_PART: &str =
        "第二章 归帆\n傍晚时分，远处终于传来了汽笛声。孩子们沿着石阶跑下去，喊着父亲的名字。\n";

    #[test]
    fn a_file_of_utf8_then_gbk_is_read_by_region() {
        let mut bytes = UTF8_PART.as_bytes().to_vec();
        let (gbk, _, _) = GBK.encode(GBK_PART);
        bytes.extend_from_slice(&gbk);
        let d = decode(&bytes).unwrap();
        assert_eq!(d.text, format!("{UTF8_PART}{GBK_PART}"));
        assert_eq!(d.encoding, "UTF-8 and GB18030");
        let split = UTF8_PART.len();
        assert_eq!(
            d.regions,
            vec![
                Region {
                    start: 0,
                    end: split,
                    encoding: "UTF-8"
                },
                Region {
                    start: split,
                    end: bytes.len(),
                    encoding: "GB18030"
                },
            ]
        );
        assert_eq!(d.repairs, None);
        // GBK first, then UTF-8.
        let mut bytes = gbk.to_vec();
        bytes.extend_from_slice(UTF8_PART.as_bytes());
        let d = decode(&bytes).unwrap();
        assert_eq!(d.text, format!("{GBK_PART}{UTF8_PART}"));
        assert_eq!(d.regions.len(), 2);
    }

    #[test]
    fn a_utf8_file_with_a_lost_byte_is_not_split() {
        let mut bytes = format!("{UTF8_PART}{GBK_PART}").into_bytes();
        bytes.remove(40);
        let d = decode(&bytes).unwrap();
        assert_eq!(d.encoding, "UTF-8");
        assert!(d.regions.is_empty());
        assert_eq!(d.repairs.as_ref().map(|r| r.count), Some(1));
    }

    #[test]
    fn mojibake_in_every_encoding_is_rejected_with_its_offset() {
        // UTF-8 text with the first byte of every fifth character lost:
        // not UTF-8, and rare characters only in GB18030 and Big5.
        let text = UTF8_PART.repeat(4);
        let mut bytes = Vec::new();
        for (i, c) in text.chars().enumerate() {
            let mut buf = [0; 4];
            let enc = c.encode_utf8(&mut buf).as_bytes();
            if i % 5 == 4 && enc.len() > 1 {
                bytes.extend_from_slice(&enc[1..]);
            } else {
                bytes.extend_from_slice(enc);
            }
        }
        match decode(&bytes) {
            Err(DecodeError::Mojibake { offset, percent }) => {
                assert!(offset < 64, "{offset}");
                assert!(percent < 50, "{percent}");
            }
            Err(DecodeError::Malformed { .. }) => {}
            other => panic!("read as {other:?}"),
        }
    }
}
