//! Bytes → text: detects UTF-8 (with or without BOM), UTF-16 (BOM), GB18030/GBK
//! and Big5, and normalizes line endings to `\n`.

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{BIG5, Encoding, GB18030, GBK, UTF_8, UTF_16BE, UTF_16LE};

/// Why a byte string could not be read as a Chinese novel.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("the file is empty")]
    Empty,
    #[error("the file looks binary (byte {offset:#x} is a control byte), not a text file")]
    Binary { offset: usize },
    #[error("the file could not be decoded as {encoding}: it has invalid byte sequences")]
    Malformed { encoding: &'static str },
    #[error("the text has no Chinese (Han) characters to read")]
    NoHan,
}

/// Decoded text plus the name of the encoding that was detected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub text: String,
    pub encoding: &'static str,
}

/// Decodes a whole file.
pub fn decode(bytes: &[u8]) -> Result<Decoded, DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    let (encoding, body) = match Encoding::for_bom(bytes) {
        Some((enc, bom_len)) => (enc, &bytes[bom_len..]),
        None => (detect(bytes)?, bytes),
    };
    let (text, had_errors) = encoding.decode_without_bom_handling(body);
    if had_errors {
        return Err(DecodeError::Malformed {
            encoding: encoding.name(),
        });
    }
    let text = normalize_newlines(&text);
    if let Some(offset) = text
        .char_indices()
        .find_map(|(i, c)| is_binary_char(c).then_some(i))
    {
        return Err(DecodeError::Binary { offset });
    }
    if text.trim().is_empty() {
        return Err(DecodeError::Empty);
    }
    if !text.chars().any(is_han) {
        return Err(DecodeError::NoHan);
    }
    Ok(Decoded {
        text,
        encoding: encoding.name(),
    })
}

/// Picks an encoding for BOM-less bytes. Valid UTF-8 wins; otherwise chardetng
/// chooses among the legacy encodings (trying decoders in order does not work:
/// GB18030 accepts Big5 bytes without error).
fn detect(bytes: &[u8]) -> Result<&'static Encoding, DecodeError> {
    if let Some(offset) = bytes
        .iter()
        .position(|&b| b == 0 || (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0c)))
    {
        return Err(DecodeError::Binary { offset });
    }
    if std::str::from_utf8(bytes).is_ok() {
        return Ok(UTF_8);
    }
    let mut detector = EncodingDetector::new(Iso2022JpDetection::Deny);
    detector.feed(bytes, true);
    let guess = detector.guess(None, Utf8Detection::Allow);
    // A novel is Chinese: fold every other guess into the two Chinese legacy
    // families, and read GBK as its superset GB18030.
    Ok(if guess == BIG5 {
        BIG5
    } else if guess == GBK || guess == GB18030 {
        GB18030
    } else if guess == UTF_16LE || guess == UTF_16BE {
        guess
    } else {
        GB18030
    })
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
            decode(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
            Err(DecodeError::Binary { .. })
        ));
        assert_eq!(decode(b"hello world\n"), Err(DecodeError::NoHan));
    }
}
