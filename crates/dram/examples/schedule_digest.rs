//! Prints one line per (config, overrides, traffic) case: the run's cycles and a digest of its
//! whole command log and JSON stats (`digest::schedule_lines`). Two builds that print the same
//! lines issued the same commands at the same cycles: `cargo run --release --example
//! schedule_digest [REQUESTS] > before.txt`, change, run again, diff. `tests/golden.rs` checks the
//! same lines, with fewer requests, against `tests/golden/schedules.txt`.
use movelab_dram::digest::schedule_lines;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    for line in schedule_lines(n) {
        println!("{line}");
    }
}
