//! Where the tests' own inputs live: fixtures and goldens in this
//! repository, found from `CARGO_MANIFEST_DIR` whatever the current
//! directory.

use std::path::{Path, PathBuf};

/// The repository root.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/fixtures/REL`.
pub fn fixture(rel: &str) -> PathBuf {
    repo().join("tests/fixtures").join(rel)
}

/// A path as `&str`, for a command-line argument.
pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Compares `actual` with `tests/golden/REL`, or writes it when
/// `TINGSHU_UPDATE_GOLDEN` is set (then review the diff).
pub fn golden(rel: &str, actual: &str) {
    let path = repo().join("tests/golden").join(rel);
    if std::env::var_os("TINGSHU_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (set TINGSHU_UPDATE_GOLDEN=1)", path.display()));
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(e, a)| e != a)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs at line {}:\n  expected: {}\n  actual:   {}",
            path.display(),
            first + 1,
            expected.lines().nth(first).unwrap_or("<end>"),
            actual.lines().nth(first).unwrap_or("<end>")
        );
    }
}
