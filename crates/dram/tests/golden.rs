//! Golden schedules: every config preset under six controller variants and three kinds of traffic
//! (`digest::schedule_lines`, 2,000 requests) must issue the commands recorded in
//! `tests/golden/schedules.txt`. A change that moves a schedule fails here, naming the cases;
//! when the move is meant, rewrite the file with `MOVELAB_BLESS=1 cargo test -p movelab-dram
//! --test golden` and say in the commit which cases moved and why.
use movelab_dram::digest::schedule_lines;
use std::path::PathBuf;

#[test]
fn every_preset_schedules_as_recorded() {
    let got = schedule_lines(2_000);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/schedules.txt");
    if std::env::var_os("MOVELAB_BLESS").is_some() {
        std::fs::write(&path, got.join("\n") + "\n").unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap();
    let want: Vec<&str> = want.lines().collect();
    let moved: Vec<String> = got
        .iter()
        .zip(&want)
        .filter(|(g, w)| g != w)
        .map(|(g, w)| format!("  want {w}\n  got  {g}"))
        .collect();
    assert!(
        moved.is_empty() && got.len() == want.len(),
        "{} of {} schedules moved ({} cases now):\n{}",
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
