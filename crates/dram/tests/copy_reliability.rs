//! In-DRAM copy as real chips do it (`controller.copy`, `bulk::copy_reliability`): unsupported
//! parts are refused or fall back to the channel, failed copies are retried (and their commands
//! simulated and checked), the default changes nothing, and the measured success rate matches the
//! configured probability.
use movelab_dram::bulk::copy_reliability::{row_succeeds, CopyModel};
use movelab_dram::checker::Checker;
use movelab_dram::command::{log_header, CommandKind, CommandRecord};
use movelab_dram::config::Config;
use movelab_dram::request::{BulkKind, BulkOp, TraceItem};
use movelab_dram::stats::Stats;
use movelab_dram::system::{simulate, RunOptions};
use proptest::prelude::*;

/// Replicates 64 rows 7 times each (RowClone FPM: 448 row copies), with the command log checked.
fn run(c: &Config) -> (Stats, Vec<CommandRecord>) {
    let spec = c.resolve("t").unwrap();
    let op = BulkOp {
        kind: BulkKind::Replicate { copies: 7 },
        dst: 0,
        bytes: 64 * spec.org.row_bytes(),
        arrival: Some(0),
    };
    let mut log: Vec<CommandRecord> = Vec::new();
    let s = simulate(
        c,
        std::iter::once(Ok(TraceItem::Bulk(op))),
        RunOptions {
            command_log: Some(&mut log),
            ..Default::default()
        },
    )
    .unwrap();
    let mut ck = Checker::new(&log_header(c, &spec)).unwrap();
    for r in &log {
        ck.check(r).unwrap();
    }
    assert!(ck.finish().ok);
    (s, log)
}

fn config(bulk: &str) -> Config {
    let mut c = Config::preset("rowclone-ddr3-1066").unwrap();
    c.controller.bulk = bulk.into();
    c.controller.refresh = "none".into();
    c
}

fn count(log: &[CommandRecord], k: CommandKind) -> usize {
    log.iter().filter(|r| r.kind == k).count()
}

#[test]
fn unsupported_part_is_refused_with_its_name() {
    let mut c = config("rowclone");
    c.controller.copy.chip = "simra-ddr4-unsupported".into();
    let e = c.resolve("t").unwrap_err().to_string();
    assert!(e.contains("controller.copy.chip"), "{e}");
    assert!(e.contains("does not perform in-DRAM copy"), "{e}");
    // The same part with the channel as its mechanism is fine.
    c.controller.bulk = "baseline".into();
    c.resolve("t").unwrap();
}

#[test]
fn unsupported_part_falls_back_to_the_channel_when_asked() {
    let mut c = config("rowclone");
    c.controller.copy.chip = "simra-ddr4-unsupported".into();
    c.controller.copy.on_unsupported = "baseline".into();
    let (s, log) = run(&c);
    let (b, _) = run(&config("baseline"));
    assert_eq!(count(&log, CommandKind::Actc), 0);
    assert_eq!(s.bulk.bytes, b.bulk.bytes);
    assert_eq!(s.cycles, b.cycles);
}

#[test]
fn bad_copy_settings_name_the_key() {
    let mut c = config("rowclone");
    c.controller.copy.chip = "no-such-part".into();
    assert!(c
        .resolve("t")
        .unwrap_err()
        .to_string()
        .contains("controller.copy.chip"));
    let mut c = config("rowclone");
    c.controller.copy.success = Some(1.5);
    assert!(c
        .resolve("t")
        .unwrap_err()
        .to_string()
        .contains("controller.copy.success"));
    // A measured part without a published per-row rate needs one set.
    let mut c = config("rowclone");
    c.controller.copy.chip = "simra-ddr4-supported".into();
    assert!(c.resolve("t").unwrap_err().to_string().contains("set one"));
    c.controller.copy.success = Some(0.9);
    c.resolve("t").unwrap();
}

#[test]
fn success_one_changes_nothing() {
    let base = run(&config("rowclone"));
    let mut c = config("rowclone");
    c.controller.copy.success = Some(1.0);
    c.controller.copy.seed = 99;
    let same = run(&c);
    assert_eq!(base.0.cycles, same.0.cycles);
    assert_eq!(base.1, same.1);
}

#[test]
fn failed_copies_are_retried_and_cost_time() {
    let (ideal, ilog) = run(&config("rowclone"));
    let mut c = config("rowclone");
    c.controller.copy.success = Some(0.5);
    c.controller.copy.seed = 7;
    let (s, log) = run(&c);
    let copies = count(&ilog, CommandKind::Actc);
    assert_eq!(copies, 64 * 7);
    let attempts = count(&log, CommandKind::Actc);
    // Expected attempts per copy 1/p = 2: within a generous binomial bound of 2 x 448.
    assert!(
        attempts > copies * 3 / 2 && attempts < copies * 5 / 2,
        "{attempts}"
    );
    assert!(s.cycles > ideal.cycles, "{} vs {}", s.cycles, ideal.cycles);
    // Same bytes moved (the retries rewrite the same rows), and deterministic.
    assert_eq!(s.bulk.bytes, ideal.bulk.bytes);
    assert_eq!(run(&c).1, log);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// The fraction of row copies that succeed is the configured probability within 5 standard
    /// deviations of a binomial(n, p).
    #[test]
    fn measured_success_rate_matches_probability(p in 0.01f64..0.999, seed in any::<u64>()) {
        let m = CopyModel { supported: true, success: p, seed };
        let n = 20_000u32;
        let k = (0..n).filter(|&i| row_succeeds(&m, i / 100, u64::from(i % 100), i % 3, i % 7)).count();
        let sd = (f64::from(n) * p * (1.0 - p)).sqrt();
        prop_assert!((k as f64 - f64::from(n) * p).abs() <= 5.0 * sd + 1.0, "k={} n={} p={}", k, n, p);
    }
}

#[test]
fn results_carry_the_parts_provenance() {
    // The ideal chip on DDR3 (no study copies with this model): hypothetical.
    let (s, _) = run(&config("rowclone"));
    let l = s.bulk.in_dram_copy.unwrap();
    assert_eq!(
        (l.chip.as_str(), l.provenance.as_str()),
        ("ideal", "hypothetical")
    );
    // A channel-only run has no label.
    assert!(run(&config("baseline")).0.bulk.in_dram_copy.is_none());
    // Retries are reported.
    let mut c = config("rowclone");
    c.controller.copy.success = Some(0.5);
    let (s, _) = run(&c);
    assert!(s.bulk.in_dram_copy.unwrap().retries > 0);
}

#[test]
fn multi_row_copy_needs_the_parts_fan_out() {
    // ComputeDRAM shows one-to-one copy on DDR3: Multi-RowCopy is refused, RowClone allowed.
    let mut c = config("multi-row-copy");
    c.controller.copy.chip = "computedram-ddr3-supported".into();
    c.controller.copy.success = Some(0.99);
    let e = c.resolve("t").unwrap_err().to_string();
    assert!(e.contains("at most 1 rows"), "{e}");
    c.controller.bulk = "rowclone".into();
    c.resolve("t").unwrap();
    // On DDR3 its results are measured-real-chip.
    let (s, _) = run(&c);
    assert_eq!(
        s.bulk.in_dram_copy.unwrap().provenance,
        "measured-real-chip"
    );
}

#[test]
fn multi_row_copy_retries_whole_groups() {
    let (ideal, ilog) = run(&config("multi-row-copy"));
    let mut c = config("multi-row-copy");
    c.controller.copy.success = Some(0.97);
    c.controller.copy.seed = 3;
    let (s, log) = run(&c);
    // One ACTM per row replicated (64), plus one per failed group attempt: a group of 7 copies
    // succeeds with 0.97^7 = 0.81, so about 64 x 0.23 = 15 repeats.
    assert_eq!(count(&ilog, CommandKind::Actm), 64);
    let n = count(&log, CommandKind::Actm);
    assert!(n > 64 && n < 64 + 40, "{n}");
    assert_eq!(s.bulk.in_dram_copy.unwrap().retries as usize, n - 64);
    assert!(s.cycles >= ideal.cycles);
}
