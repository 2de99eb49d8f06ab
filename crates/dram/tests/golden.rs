//! Golden schedules: every config preset under six controller variants and three kinds of traffic
//! (`digest::schedule_lines`, 2,000 requests) must issue the commands recorded in
//! `tests/golden/schedules.txt`. A change that moves a schedule fails here, naming the cases;
//! when the move is meant, rewrite the file with `MOVELAB_BLESS=1 cargo test -p movelab-dram
//! --test golden` and say in the commit which cases moved and why.
#[path = "support/golden.rs"]
mod golden;

use movelab_dram::digest::schedule_lines;
use std::path::PathBuf;

#[test]
fn every_preset_schedules_as_recorded() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/schedules.txt");
    golden::check(&path, &schedule_lines(2_000), "schedules");
}
