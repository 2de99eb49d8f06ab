//! Golden files: lines a simulator prints, compared with the lines stored in a file. A change that
//! moves a number fails and names the lines that moved; `MOVELAB_BLESS=1` rewrites the file when
//! the move is meant. Generic: any crate's golden test can include this file
//! (`#[path = ".../golden.rs"] mod golden;`).
use std::path::Path;

/// Compares `got` with the lines of `path` (or writes them there under `MOVELAB_BLESS`); panics
/// with the lines that moved, `what` naming the kind of line in the message.
pub fn check(path: &Path, got: &[String], what: &str) {
    if std::env::var_os("MOVELAB_BLESS").is_some() {
        std::fs::write(path, got.join("\n") + "\n")
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let want = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let want: Vec<&str> = want.lines().collect();
    let moved: Vec<String> = got
        .iter()
        .zip(&want)
        .filter(|(g, w)| g != w)
        .map(|(g, w)| format!("  want {w}\n  got  {g}"))
        .collect();
    assert!(
        moved.is_empty() && got.len() == want.len(),
        "{}: {} of {} {what} moved ({} now):\n{}",
        path.display(),
        moved.len(),
        want.len(),
        got.len(),
        moved
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
