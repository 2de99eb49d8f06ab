//! RowClone on multi-core systems (section 7.4): functional warming puts each core's last-level
//! cache in the state a long run leaves it in, so that write-backs reach the DRAM as they do over
//! the paper's billion-instruction runs; and the mixes' figures move with the mechanism's
//! parameters (the copies and zeroing the applications do). The metric definitions on hand-made
//! inputs are unit tests of `rowclone_multicore`.
use movelab_platform::config::workload::Workload;
use movelab_platform::experiments::rowclone_apps::{self, ENDLESS};
use movelab_platform::experiments::rowclone_multicore::{
    self, alone_ipc, improvement, run_mix, Mix, Options,
};
use movelab_platform::Platform;
use std::collections::BTreeMap;

fn programs(apps: &[&str], params: &BTreeMap<String, u64>) -> Vec<Workload> {
    apps.iter()
        .map(|n| {
            let a = rowclone_apps::app(n).unwrap();
            let p = if a.copy_intensive() {
                params.clone()
            } else {
                BTreeMap::new()
            };
            a.workload(ENDLESS, &p).unwrap()
        })
        .collect()
}

fn dram_writes(s: &movelab_platform::stats::PlatformStats) -> u64 {
    s.dram
        .commands
        .iter()
        .filter(|(k, _)| k.starts_with("WR"))
        .map(|(_, n)| *n)
        .sum()
}

/// Without warming, a short run's 1 MB caches never fill and no dirty line is evicted: the DRAM
/// sees no write. Functionally warmed, each core's L2 starts full, with the dirty lines its
/// program leaves (copy destinations under the baseline), and the same short run writes back.
#[test]
fn functional_warming_fills_the_caches_and_write_backs_reach_the_dram() {
    let over = toml::from_str("").unwrap();
    let apps = ["forkbench", "lbm"];
    let mut writes = Vec::new();
    for warm in [0, 4_000_000] {
        let cfg = rowclone_multicore::mix_platform(2, &over, "base").unwrap();
        let ws = programs(&apps, &BTreeMap::new());
        let mut p = Platform::new(&cfg).unwrap();
        p.set_functional_warming(warm);
        p.set_work_targets(1_000, vec![3_000; 2]).unwrap();
        let lines = p.sys.private(0).l2.occupancy();
        assert_eq!(lines, 0, "cold before the run");
        let s = p.run_programs(ws, &mut |_| {}).unwrap();
        let cap = cfg.l2.size_kib as usize * 1024 / cfg.l2.line_bytes as usize;
        for c in 0..2 {
            let l2 = &p.sys.private(c).l2;
            let dirty = l2.dirty_lines().count();
            if warm > 0 {
                assert_eq!(l2.occupancy(), cap, "core {c}: warmed L2 is full");
                assert!(dirty > cap / 10, "core {c}: {dirty} dirty lines of {cap}");
            } else {
                assert!(l2.occupancy() < cap / 2, "core {c}: a short cold run");
            }
        }
        writes.push(dram_writes(&s));
    }
    assert_eq!(writes[0], 0, "cold: nothing evicted, nothing written");
    assert!(writes[1] > 50, "warm: {} DRAM writes", writes[1]);
}

/// What warming leaves depends on the mechanism: under the baseline a zeroed page's lines are
/// dirty in the cache (the core wrote them); under RowClone the zeroing happened in DRAM, so they
/// are not cached; under RowClone-ZI they are cached clean.
#[test]
fn functional_warming_follows_the_mechanism() {
    let over = toml::from_str("").unwrap();
    // compile: a zeroed page per unit, all of it then written (dirty) by the program.
    let mut params = BTreeMap::new();
    params.insert("dirty".to_string(), 0);
    let mut dirty_by_copy = BTreeMap::new();
    for mech in ["base", "rowclone", "rowclone-zi"] {
        let cfg = rowclone_multicore::mix_platform(2, &over, mech).unwrap();
        let ws = programs(&["compile", "gcc"], &params);
        let mut p = Platform::new(&cfg).unwrap();
        p.set_functional_warming(2_000_000);
        // The applications are endless programs: a run of them stops at work targets (the run
        // refuses them otherwise).
        p.set_work_targets(0, vec![1_000_000; 2]).unwrap();
        let run = p.begin(&ws).unwrap();
        let n = p
            .sys
            .private(0)
            .l2
            .dirty_lines()
            .filter(|(_, c)| *c)
            .count();
        dirty_by_copy.insert(mech, (n, p.sys.private(0).l2.occupancy()));
        drop(run);
    }
    assert!(dirty_by_copy["base"].0 > 1000, "{dirty_by_copy:?}");
    assert_eq!(dirty_by_copy["rowclone"].0, 0, "{dirty_by_copy:?}");
    assert_eq!(dirty_by_copy["rowclone-zi"].0, 0, "{dirty_by_copy:?}");
    // RowClone leaves the zeroed pages out of the cache; RowClone-ZI puts them in.
    assert!(
        dirty_by_copy["rowclone-zi"].1 > dirty_by_copy["rowclone"].1,
        "{dirty_by_copy:?}"
    );
}

/// Each application's alone IPC for `m`'s mix run with options `o`.
fn alone_of(m: &Mix, o: &Options) -> BTreeMap<String, f64> {
    m.apps
        .iter()
        .map(|n| {
            let a = rowclone_apps::app(n).unwrap();
            (n.clone(), alone_ipc(&a, o).unwrap())
        })
        .collect()
}

fn mix(apps: &[&str]) -> Mix {
    Mix {
        cores: apps.len() as u32,
        index: 0,
        apps: apps.iter().map(|s| s.to_string()).collect(),
        highly_intensive: 1,
    }
}

/// The figures move with the mechanism's parameters: a 2-core mix of forkbench (page copies)
/// and mcf. Without copies RowClone-ZI changes nothing; with them it raises weighted speedup,
/// the more the more copies forkbench makes, and it lowers the bandwidth per instruction.
#[test]
fn the_gain_grows_with_the_copies_the_applications_make() {
    let m = mix(&["forkbench", "mcf"]);
    let mut ws = Vec::new();
    for copies in [0u64, 1, 3] {
        let mut o = Options {
            functional_warming: 1_000_000,
            ..Default::default()
        };
        o.apps.instructions = 20_000;
        o.apps.warmup = 5_000;
        o.apps.app_params.insert("copies".into(), copies);
        let r = run_mix(&m, &o, &alone_of(&m, &o)).unwrap();
        let i = improvement(&r.runs[0], &r.runs[2]);
        if copies == 0 {
            assert!(
                i.weighted_speedup_improvement.abs() < 1e-9
                    && i.bandwidth_per_instruction_reduction.abs() < 1e-9,
                "no copies, no gain: {i:?}"
            );
        } else {
            assert!(i.bandwidth_per_instruction_reduction > 0.1, "{i:?}");
        }
        ws.push(i.weighted_speedup_improvement);
    }
    assert!(ws[1] > 0.02 && ws[2] > ws[1], "{ws:?}");
}

/// The memory-intensive neighbours' relief under RowClone-ZI (section 7.4's fairness metrics) is
/// the channel traffic the copy-intensive applications stop sending, net of what they send
/// sooner once faster: a 4-core mix of mysql and mcached (which zero pages) beside soplex and
/// omnetpp, cold. With mysql's and mcached's ordinary misses and writes removed (only their
/// zeroing left, which RowClone-ZI takes off the channels), the neighbours' mean slowdown falls by more under RowClone-ZI than with
/// them, and the maximum slowdown with it.
#[test]
fn the_neighbours_relief_is_the_traffic_the_copy_intensive_half_stops_sending() {
    let m = mix(&["mysql", "mcached", "soplex", "omnetpp"]);
    let relief = |params: &[(&str, u64)]| {
        let mut o = Options::default();
        o.apps.instructions = 40_000;
        o.apps.warmup = 10_000;
        for (k, v) in params {
            o.apps.app_params.insert((*k).into(), *v);
        }
        let r = run_mix(&m, &o, &alone_of(&m, &o)).unwrap();
        let slowdown = |run: usize| -> f64 {
            let ipc = &r.runs[run].ipc;
            (2..4).map(|c| r.alone_ipc[c] / ipc[c]).sum::<f64>() / 2.0
        };
        let i = improvement(&r.runs[0], &r.runs[2]);
        (1.0 - slowdown(2) / slowdown(0), i.max_slowdown_reduction)
    };
    let (with, ms_with) = relief(&[]);
    let (without, ms_without) = relief(&[("misses", 0), ("writes", 0)]);
    assert!(
        without > with + 0.05 && ms_without > ms_with,
        "neighbours' relief {with:.3} -> {without:.3}, maximum slowdown reduction {ms_with:.3} -> {ms_without:.3}"
    );
}

/// Each core of a mix starts its memory on its own channel and bank (512 MB and one page after
/// the previous core's, `PLACEMENT_SHIFT`), so two copies of one application, running the same
/// program in step, do not meet on one bank at every access. With the regions exactly 512 MB
/// apart (a multiple of the mapping's 64 KB channel-and-bank cycle) they did: a 2-core mix of
/// cactusADM twice, cold, slowed each copy far more than the same pair placed a page apart.
#[test]
fn copies_of_one_application_in_a_mix_do_not_share_a_bank_in_lockstep() {
    let o = Options::default();
    let cfg = rowclone_multicore::mix_platform(8, &o.apps.overrides, "base").unwrap();
    let mut p = Platform::new(&cfg).unwrap();
    let starts: Vec<(u32, u32)> = cfg
        .cores
        .iter()
        .map(|g| {
            let l = p.mem_mut().locate(g.offset + 0x0100_0000);
            (l.channel, l.bank)
        })
        .collect();
    for (i, a) in starts.iter().enumerate() {
        assert!(
            !starts[..i].contains(a),
            "cores' regions start on the same channel and bank: {starts:?}"
        );
    }
    let twins = mix(&["cactusADM", "cactusADM"]);
    let worst = |stride: i64| -> f64 {
        let mut o = Options::default();
        o.apps.instructions = 20_000;
        o.apps.warmup = 10_000;
        o.apps.overrides =
            toml::from_str(&format!("cores = [{{ count = 4, stride = {stride} }}]")).unwrap();
        let r = run_mix(&twins, &o, &alone_of(&twins, &o)).unwrap();
        r.runs[0].max_slowdown
    };
    let shift = rowclone_multicore::PLACEMENT_SHIFT as i64;
    let (placed, aligned) = (worst(0x2000_0000), worst(0x2000_0000 - shift));
    assert!(
        aligned > placed + 0.3 && placed < 1.2,
        "twins' maximum slowdown: a page apart {placed:.3}, 512 MB apart {aligned:.3}"
    );
}
