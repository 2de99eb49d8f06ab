//! Golden digests of every simulator and system-level reproduction: the lines of
//! `experiments::golden` must equal `tests/golden/SECTION.txt`. A change that moves a number fails
//! here and names the lines that moved; when the move is meant (a fidelity fix), rewrite the files
//! with `MOVELAB_BLESS=1 cargo test -p movelab-platform --test golden` and explain each moved line
//! in the commit.
use movelab_platform::experiments::golden::lines;
use std::path::PathBuf;

fn check(section: &str) {
    let got = lines(section).unwrap_or_else(|e| panic!("{section}: {e}"));
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{section}.txt"));
    let text = got.join("\n") + "\n";
    if std::env::var_os("MOVELAB_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let want: Vec<&str> = want.lines().collect();
    let moved: Vec<String> = got
        .iter()
        .zip(want.iter())
        .filter(|(g, w)| g != w)
        .map(|(g, w)| format!("  want {w}\n  got  {g}"))
        .collect();
    assert!(
        moved.is_empty() && got.len() == want.len(),
        "{section}: {} of {} golden lines moved ({} lines now, {} in the file):\n{}",
        moved.len(),
        want.len(),
        got.len(),
        want.len(),
        moved
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn platform_cases_are_golden() {
    check("platform");
}

#[test]
fn io_cases_are_golden() {
    check("io");
}

#[test]
fn network_cases_are_golden() {
    check("network");
}

#[test]
fn reproduction_rows_are_golden() {
    check("reproductions");
}
