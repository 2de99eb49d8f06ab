//! Per-core DRAM accounting (`MemorySystem::set_owners`, registered by
//! `Platform::set_work_targets` when every core starts its own memory region): the per-core
//! running totals add up to the system's, and a core's own measurement stops at its target.
use movelab_platform::config::workload::Workload;
use movelab_platform::experiments::rowclone_apps::{self, ENDLESS};
use movelab_platform::experiments::rowclone_multicore::{self, draw_mixes};
use movelab_platform::stats::PlatformStats;
use movelab_platform::Platform;
use proptest::prelude::*;
use std::collections::BTreeMap;

fn programs(apps: &[&str]) -> Vec<Workload> {
    apps.iter()
        .map(|n| {
            rowclone_apps::app(n)
                .unwrap()
                .workload(ENDLESS, &BTreeMap::new())
                .unwrap()
        })
        .collect()
}

fn run_mix(apps: &[&str], mech: &str, warmup: u64, targets: Vec<u64>) -> PlatformStats {
    let c = rowclone_multicore::mix_platform(apps.len() as u32, &toml::from_str("").unwrap(), mech)
        .unwrap();
    let mut p = Platform::new(&c).unwrap();
    p.set_work_targets(warmup, targets).unwrap();
    p.run_programs(programs(apps), &mut |_| {}).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Every line request, bulk line and nanojoule of the run is some core's (or the
    /// unowned addresses'), whatever the mix and the mechanism.
    #[test]
    fn per_core_counters_sum_to_the_system_totals(
        cores in prop::sample::select(vec![2u32, 4]),
        index in 0u32..40,
        mech in prop::sample::select(vec!["base", "rowclone", "rowclone-zi"]),
        target in 1_500u64..4_000,
    ) {
        let mix = draw_mixes(11, cores, index + 1).unwrap().pop().unwrap();
        let apps: Vec<&str> = mix.apps.iter().map(String::as_str).collect();
        let s = run_mix(&apps, mech, 500, vec![target; cores as usize]);
        prop_assert_eq!(s.traffic_by_core.len(), cores as usize);
        let none = s.traffic_unattributed.expect("the unowned bucket");
        let all: Vec<_> = s.traffic_by_core.iter().chain([&none]).collect();
        let lines: u64 = all.iter().map(|c| c.read_bytes + c.write_bytes).sum();
        prop_assert_eq!(lines, s.memory.platform_bytes);
        let channel: f64 = all.iter().map(|c| c.channel_bytes()).sum();
        prop_assert!(close(channel, s.dram.channel_bytes as f64),
            "{channel} vs {}", s.dram.channel_bytes);
        let energy: f64 = all.iter().map(|c| c.dram_energy_nj).sum();
        prop_assert!(close(energy, s.dram.energy.total_nj),
            "{energy} vs {}", s.dram.energy.total_nj);
        let ops: u64 = all.iter().map(|c| c.bulk_op_bytes).sum();
        // Only the in-memory mechanisms issue bulk operations (the baseline copies on the cores).
        if mech == "base" {
            prop_assert_eq!(ops, 0);
        }
        // The mix platform's cores own all of memory (the first starts at address 0).
        prop_assert_eq!(none.channel_bytes(), 0.0);
        for (c, pc) in s.traffic_by_core.iter().zip(&s.per_core) {
            let w = pc.window.expect("its own measurement");
            // From its warm-up to its target (each counted at the first check past it).
            prop_assert!(w.work_instructions.abs_diff(target) * 10 < target, "{w:?}");
            prop_assert!(c.channel_bytes() > 0.0 && c.dram_energy_nj > 0.0);
        }
    }
}

/// A core that reached its target stops accruing in its own measurement: core 0 (target 3,000)
/// measures the same bytes and energy whether core 1 runs on to 10,000 or to 20,000
/// instructions, while its running totals grow with the longer run.
#[test]
fn a_core_stopped_at_its_target_stops_accruing() {
    let apps = ["forkbench", "mcf"];
    let short = run_mix(&apps, "rowclone-zi", 1_000, vec![3_000, 10_000]);
    let long = run_mix(&apps, "rowclone-zi", 1_000, vec![3_000, 20_000]);
    let (a, b) = (
        short.per_core[0].window.unwrap(),
        long.per_core[0].window.unwrap(),
    );
    assert!(a.channel_bytes > 0 && a.dram_energy_nj > 0.0, "{a:?}");
    assert_eq!(a, b, "core 0's own measurement moved with core 1's target");
    let (ra, rb) = (short.traffic_by_core[0], long.traffic_by_core[0]);
    assert!(
        rb.channel_bytes() > ra.channel_bytes() && rb.dram_energy_nj > ra.dram_energy_nj,
        "core 0 kept running (and accruing) past its target: {ra:?} vs {rb:?}"
    );
    // Core 1's own measurement grows with its target.
    let (c, d) = (
        short.per_core[1].window.unwrap(),
        long.per_core[1].window.unwrap(),
    );
    assert!(d.channel_bytes > c.channel_bytes && d.work_instructions > c.work_instructions);
}

/// One core (or cores sharing memory) have no per-core accounting: the system's figures are
/// theirs, and a run's figures are what they were.
#[test]
fn no_per_core_accounting_without_regions() {
    let one = rowclone_apps::mechanism_platform(
        "rowclone-system",
        &toml::from_str("").unwrap(),
        "rowclone-zi",
    )
    .unwrap();
    let mut p = Platform::new(&one).unwrap();
    p.set_work_targets(500, vec![2_000]).unwrap();
    let s = p
        .run_programs(programs(&["forkbench"]), &mut |_| {})
        .unwrap();
    assert!(s.traffic_by_core.is_empty() && s.traffic_unattributed.is_none());
    assert!(s.per_core.iter().all(|c| c.window.is_none()));
    assert!(s.window.is_some());
}
