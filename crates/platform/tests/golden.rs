//! Golden digests of every simulator and system-level reproduction: the lines of
//! `experiments::golden` must equal `tests/golden/SECTION.txt`. A change that moves a number fails
//! here and names the lines that moved; when the move is meant (a fidelity fix), rewrite the files
//! with `MOVELAB_BLESS=1 cargo test -p movelab-platform --test golden` and explain each moved line
//! in the commit.
#[path = "../../dram/tests/support/golden.rs"]
mod golden;

use movelab_platform::experiments::golden::lines;
use std::path::PathBuf;

fn check(section: &str) {
    let got = lines(section).unwrap_or_else(|e| panic!("{section}: {e}"));
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{section}.txt"));
    golden::check(&path, &got, "golden lines");
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
