//! The controllers skip cycles in which nothing can issue (a lower bound on the next issue after
//! each command, and arrivals that re-evaluate a bank only when they can change its candidate).
//! That is a speed-up only: for any configuration and traffic, the command log must equal the
//! reference run, which visits the cycle after every command and re-evaluates every arrival.
use movelab_dram::bulkgen::BulkGenSpec;
use movelab_dram::config::{builtin_config_names, Config};
use movelab_dram::generator::GeneratorSpec;
use movelab_dram::request::TraceItem;
use proptest::prelude::*;

mod common;
use common::log_of;

/// Random and streaming requests, with bulk copies sprinkled in when `bulk_ops` > 0.
fn traffic(cfg: &Config, n: u64, reads: f64, seed: u64, bulk_ops: u64) -> Vec<TraceItem> {
    let mut items: Vec<TraceItem> = GeneratorSpec::random(n, reads, seed)
        .build()
        .unwrap()
        .collect();
    items.extend(
        GeneratorSpec::stream(n / 2, reads, seed + 1)
            .build()
            .unwrap(),
    );
    if bulk_ops > 0 {
        let spec = BulkGenSpec::from_json_str(
            &format!(
                r#"{{"kind": "bulk", "op": "copy", "count": {bulk_ops}, "pages": 2, "seed": {seed}}}"#
            ),
            "test",
        )
        .unwrap();
        let ops: Vec<TraceItem> = spec.build(cfg).unwrap().collect();
        let step = (items.len() / ops.len()).max(1);
        for (k, op) in ops.into_iter().enumerate() {
            items.insert((k * step + k).min(items.len()), op);
        }
    }
    items
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 60, ..ProptestConfig::default() })]
    #[test]
    fn skipping_idle_cycles_changes_no_command(
        preset in 0usize..64,
        sched in prop_oneof![Just("frfcfs"), Just("fcfs")],
        policy in prop_oneof![Just("open"), Just("closed")],
        bulk in prop_oneof![Just("baseline"), Just("rowclone")],
        rq in prop_oneof![Just(4usize), Just(16), Just(64)],
        wq in prop_oneof![Just(3usize), Just(16), Just(64)],
        refresh in prop_oneof![Just("preset"), Just("all-bank"), Just("none")],
        ranks in 1u32..=2,
        bypass in any::<bool>(),
        reads in 0.0f64..=1.0,
        seed in 0u64..1000,
        bulk_ops in 0u64..4,
        keep in any::<bool>(),
    ) {
        let names = builtin_config_names();
        let mut cfg = Config::preset(names[preset % names.len()]).unwrap();
        cfg.controller.scheduler = sched.into();
        cfg.controller.row_policy = policy.into();
        cfg.controller.bulk = bulk.into();
        cfg.controller.read_queue = rq;
        cfg.controller.write_queue = wq;
        if refresh != "preset" {
            // The preset's own (same-bank or per-bank on the modern standards) otherwise.
            cfg.controller.refresh = refresh.into();
        }
        cfg.dram.ranks = ranks;
        cfg.controller.cpu_bypass = bypass;
        cfg.controller.keep_activated_rows = keep;
        let items = traffic(&cfg, 1500, reads, seed, bulk_ops);
        let (fast, fast_stats) = log_of(&cfg, &items, false);
        let (slow, slow_stats) = log_of(&cfg, &items, true);
        prop_assert_eq!(fast.len(), slow.len());
        if let Some(i) = (0..fast.len()).find(|&i| fast[i] != slow[i]) {
            prop_assert!(false, "command {} differs: {:?} vs reference {:?}", i, fast[i], slow[i]);
        }
        prop_assert_eq!(fast_stats, slow_stats);
    }
}
