//! `--chapters` selections such as `3-7`, `5`, `3-`, `1,4,6-8`.

/// A parsed selection of 1-based chapter positions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChapterSelection {
    ranges: Vec<(usize, usize)>,
}

/// Why a selection is not valid.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SelectionError {
    #[error("--chapters {spec}: '{part}' is not a chapter number or range like 3-7")]
    Syntax { spec: String, part: String },
    #[error("--chapters {spec}: selects no chapter (the book has {count})")]
    Empty { spec: String, count: usize },
}

impl ChapterSelection {
    pub fn parse(spec: &str) -> Result<ChapterSelection, SelectionError> {
        let syntax = |part: &str| SelectionError::Syntax {
            spec: spec.to_owned(),
            part: part.to_owned(),
        };
        let number = |s: &str, part: &str| {
            s.trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| syntax(part))
        };
        let mut ranges = Vec::new();
        for part in spec.split(',') {
            let part = part.trim();
            let range = match part.split_once('-') {
                Some((a, b)) => {
                    let start = if a.trim().is_empty() {
                        1
                    } else {
                        number(a, part)?
                    };
                    let end = if b.trim().is_empty() {
                        usize::MAX
                    } else {
                        number(b, part)?
                    };
                    if start > end {
                        return Err(syntax(part));
                    }
                    (start, end)
                }
                None => {
                    let n = number(part, part)?;
                    (n, n)
                }
            };
            ranges.push(range);
        }
        Ok(ChapterSelection { ranges })
    }

    pub fn contains(&self, index: usize) -> bool {
        self.ranges.iter().any(|&(a, b)| (a..=b).contains(&index))
    }

    /// The selected positions among `1..=count`; an error when none is.
    pub fn resolve(&self, spec: &str, count: usize) -> Result<Vec<usize>, SelectionError> {
        let selected: Vec<usize> = (1..=count).filter(|i| self.contains(*i)).collect();
        if selected.is_empty() {
            return Err(SelectionError::Empty {
                spec: spec.to_owned(),
                count,
            });
        }
        Ok(selected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_and_lists() {
        let s = ChapterSelection::parse("1,4, 6-8,10-").unwrap();
        assert_eq!(s.resolve("x", 12).unwrap(), [1, 4, 6, 7, 8, 10, 11, 12]);
        assert_eq!(
            ChapterSelection::parse("-2")
                .unwrap()
                .resolve("x", 5)
                .unwrap(),
            [1, 2]
        );
    }

    #[test]
    fn rejects_nonsense() {
        for bad in ["", "a", "0", "7-3", "1-2-3", "1,,2"] {
            assert!(ChapterSelection::parse(bad).is_err(), "{bad}");
        }
        let err = ChapterSelection::parse("20-30")
            .unwrap()
            .resolve("20-30", 12)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "--chapters 20-30: selects no chapter (the book has 12)"
        );
    }
}
