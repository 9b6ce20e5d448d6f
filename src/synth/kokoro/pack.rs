//! Voice packs: for every input length, the 256-value style vector the
//! model speaks with. A voice may be a blend of packs
//! (`zf_xiaobei:0.7,zf_xiaoyi:0.3`), mixed row by row.

use super::files::KokoroError;
use super::phonemes::MAX_TOKENS;

/// Values in one style vector.
pub const STYLE_DIM: usize = 256;
/// Values in one pack: a row for each input length 0..510.
pub const PACK_FLOATS: usize = MAX_TOKENS * STYLE_DIM;

/// A voice as written in the voices file: packs with weights summing to 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Blend {
    pub parts: Vec<(String, f32)>,
}

impl Blend {
    /// Parses `name` or `name:weight,name:weight…`; weights are positive
    /// and scaled to sum to 1.
    pub fn parse(spec: &str) -> Result<Blend, KokoroError> {
        let bad = |problem: String| KokoroError::BadBlend {
            spec: spec.to_owned(),
            problem,
        };
        let mut parts = Vec::new();
        for part in spec.split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(bad("empty voice name".into()));
            }
            let (name, weight) = match part.split_once(':') {
                Some((name, w)) => {
                    let w: f32 = w
                        .trim()
                        .parse()
                        .map_err(|_| bad(format!("weight '{}' is not a number", w.trim())))?;
                    (name.trim(), w)
                }
                None => (part, 1.0),
            };
            if !(weight.is_finite() && weight > 0.0) {
                return Err(bad(format!("weight of {name} must be a positive number")));
            }
            if parts.iter().any(|(n, _): &(String, f32)| n == name) {
                return Err(bad(format!("{name} is named twice")));
            }
            parts.push((name.to_owned(), weight));
        }
        let total: f32 = parts.iter().map(|(_, w)| w).sum();
        for (_, w) in &mut parts {
            *w /= total;
        }
        Ok(Blend { parts })
    }
}

/// A loaded (and possibly blended) pack.
#[derive(Debug, Clone, PartialEq)]
pub struct Style {
    values: Vec<f32>,
}

impl Style {
    /// `values` holds [`PACK_FLOATS`] floats (shorter input is padded with zeros).
    pub fn new(mut values: Vec<f32>) -> Style {
        values.resize(PACK_FLOATS, 0.0);
        Style { values }
    }

    /// The style vector for an input of `tokens` tokens (padding excluded).
    pub fn row(&self, tokens: usize) -> &[f32] {
        let row = tokens.min(MAX_TOKENS - 1);
        &self.values[row * STYLE_DIM..(row + 1) * STYLE_DIM]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blends_parse_and_normalize() {
        let b = Blend::parse("zf_xiaobei").unwrap();
        assert_eq!(b.parts, vec![("zf_xiaobei".to_owned(), 1.0)]);
        let b = Blend::parse("zf_xiaobei:0.7, zf_xiaoyi:0.7").unwrap();
        assert_eq!(b.parts[0].1, 0.5);
        assert_eq!(b.parts[1].0, "zf_xiaoyi");
        for bad in ["", "a:x", "a:-1", "a:0", "a,a", "a,,b", "a:nan"] {
            let e = Blend::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("voice '{bad}': ")), "{e}");
        }
    }

    #[test]
    fn rows_follow_the_token_count() {
        let values: Vec<f32> = (0..PACK_FLOATS).map(|i| (i / STYLE_DIM) as f32).collect();
        let s = Style::new(values);
        assert_eq!(s.row(3)[0], 3.0);
        assert_eq!(s.row(5000)[255], (MAX_TOKENS - 1) as f32);
    }
}
