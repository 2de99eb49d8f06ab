//! RowClone in a whole system (sections 7.3, 7.4): the applications as data, program
//! instructions that count a copy as one whatever runs it, instruction targets with a warm-up and
//! a measured window, the seeded mixes, and the DRAM checker replaying a multi-programmed
//! RowClone-ZI run. (The reproductions' figures and their response to the applications'
//! parameters are tested in release mode, in python/tests/test_rowclone_system.py.)
use movelab_dram::checker::Checker;
use movelab_dram::command::{CommandRecord, CommandSink};
use movelab_platform::config::workload::Workload;
use movelab_platform::experiments::rowclone_apps::{self, ENDLESS};
use movelab_platform::experiments::rowclone_multicore::{self, draw_mixes};
use movelab_platform::{Platform, PlatformConfig};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

fn cfg(name: &str, over: &str) -> PlatformConfig {
    PlatformConfig::preset(name)
        .unwrap()
        .with_overrides(toml::from_str(over).unwrap(), "test")
        .unwrap()
}

#[test]
fn the_applications_are_the_papers() {
    let apps = rowclone_apps::apps().unwrap();
    let copy: Vec<&str> = apps
        .iter()
        .filter(|a| a.copy_intensive())
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(
        copy,
        [
            "bootup",
            "compile",
            "forkbench",
            "mcached",
            "mysql",
            "shell"
        ]
    );
    let high: Vec<&str> = apps
        .iter()
        .filter(|a| a.highly_copy_intensive())
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(high, ["bootup", "forkbench", "shell"]);
    // Table 6 lists 23 SPEC CPU2006 programs, each with an MPKI above 1.
    let mem: Vec<_> = apps.iter().filter(|a| !a.copy_intensive()).collect();
    assert_eq!(mem.len(), 23);
    for a in mem {
        let p = a.parameters().unwrap();
        let misses = p["stream"] + p["random"] + p["chase"] + p["writes"];
        assert!(misses > 1, "{}", a.name);
        // A unit is 1,000 instructions.
        assert_eq!(misses * (p["gap"] + 1) + p["rest"], 1000, "{}", a.name);
    }
    let e = rowclone_apps::app("nosuch").unwrap_err().to_string();
    assert!(e.contains("nosuch") && e.contains("forkbench"), "{e}");
}

/// A copy or zeroing counts as one program instruction under every mechanism, while the core's
/// own copy executes hundreds of instructions.
#[test]
fn program_instructions_count_a_copy_as_one() {
    let mut p = BTreeMap::new();
    p.insert("pages".to_string(), 8u64);
    let w = Workload::load("bulk-copy", &p).unwrap();
    let mut seen = Vec::new();
    for mech in ["base", "rowclone"] {
        let c = cfg(
            "rowclone-system",
            &format!("copy = {{ mechanism = \"{mech}\" }}"),
        );
        let mut pl = Platform::new(&c).unwrap();
        pl.set_work_targets(0, vec![1 << 40]).unwrap();
        let s = pl.run(&w).unwrap();
        assert_eq!(s.per_core.len(), 1);
        seen.push((s.instructions, s.per_core[0].work_instructions));
    }
    // 8 pages of (one copy + 100 instructions of work).
    assert_eq!(seen[0].1, 8 * 101);
    assert_eq!(seen[1].1, 8 * 101);
    assert!(
        seen[0].0 > 8 * 1000,
        "the CPU copy runs its loads and stores: {seen:?}"
    );
    assert_eq!(seen[1].0, 8 * 101);
}

/// With targets the run stops once every core measured its instructions, each core's window
/// starts after its warm-up, and the system window counts traffic and energy.
#[test]
fn instruction_targets_measure_a_window() {
    let c = cfg(
        "rowclone-system",
        "[[cores]]\ncount = 2\nstride = 0x2000_0000\n",
    );
    let app = rowclone_apps::app("mcached").unwrap();
    let w = app.workload(ENDLESS, &BTreeMap::new()).unwrap();
    let mut p = Platform::new(&c).unwrap();
    assert!(p.set_work_targets(100, vec![5]).is_err());
    assert!(p.set_work_targets(100, vec![5, 0]).is_err());
    p.set_work_targets(3_000, vec![6_000, 12_000]).unwrap();
    let s = p.run(&w).unwrap();
    let win = s.window.expect("a window");
    assert!(win.work_instructions >= 18_000, "{win:?}");
    assert!(win.channel_bytes > 0 && win.dram_energy_nj > 0.0 && win.time_ns > 0.0);
    assert!(win.time_ns < s.time_ns);
    for (k, want) in [(0, 6_000), (1, 12_000)] {
        let pc = &s.per_core[k];
        assert_eq!(pc.target_instructions, want);
        assert!(pc.work_instructions >= 3_000 + want, "{pc:?}");
        assert!(pc.target_cycles > 0);
    }
    // The core with the longer target took longer to measure it.
    assert!(s.per_core[1].target_cycles > s.per_core[0].target_cycles);
    // Without targets a run is what it was: no window, no per-core figures on one core.
    let s1 = movelab_platform::run(
        &cfg("rowclone-system", ""),
        &Workload::load("bulk-zero", &BTreeMap::new()).unwrap(),
    )
    .unwrap();
    assert!(s1.window.is_none() && s1.per_core.is_empty());
}

#[test]
fn mixes_are_seeded_and_half_copy_intensive() {
    let a = draw_mixes(7, 4, 12).unwrap();
    assert_eq!(a, draw_mixes(7, 4, 12).unwrap());
    // A mix does not depend on how many are drawn.
    assert_eq!(a[..5], draw_mixes(7, 4, 5).unwrap()[..]);
    assert_ne!(a, draw_mixes(8, 4, 12).unwrap());
    let apps = rowclone_apps::apps().unwrap();
    let class = |n: &str| apps.iter().find(|a| a.name == n).unwrap().clone();
    for m in &a {
        assert_eq!(m.apps.len(), 4);
        assert!(m.apps[..2].iter().all(|n| class(n).copy_intensive()));
        assert!(m.apps[2..].iter().all(|n| !class(n).copy_intensive()));
        let high = m
            .apps
            .iter()
            .filter(|n| class(n).highly_copy_intensive())
            .count();
        assert_eq!(high as u32, m.highly_intensive);
    }
    assert!(rowclone_multicore::Options {
        cores: vec![3],
        ..Default::default()
    }
    .check()
    .is_err());
}

struct Collect(Rc<RefCell<Vec<CommandRecord>>>);
impl CommandSink for Collect {
    fn record(&mut self, r: &CommandRecord) {
        self.0.borrow_mut().push(*r);
    }
}

/// The DRAM commands of a multi-programmed run (forkbench, compile and two memory-intensive
/// programs on the rowclone-multicore system, RowClone-ZI: FPM copies, in-DRAM zeroing and
/// ordinary traffic from four cores) replayed through the independent timing checker.
#[test]
fn checker_replays_a_rowclone_multicore_run() {
    let c =
        rowclone_multicore::mix_platform(4, &toml::from_str("").unwrap(), "rowclone-zi").unwrap();
    let programs: Vec<Workload> = ["forkbench", "compile", "mcf", "lbm"]
        .iter()
        .map(|n| {
            rowclone_apps::app(n)
                .unwrap()
                .workload(ENDLESS, &BTreeMap::new())
                .unwrap()
        })
        .collect();
    let mut p = Platform::new(&c).unwrap();
    let log = Rc::new(RefCell::new(Vec::new()));
    p.mem_mut().set_command_log(Box::new(Collect(log.clone())));
    let header = p.mem_mut().log_header();
    p.set_work_targets(2_000, vec![8_000; 4]).unwrap();
    let s = p.run_programs(programs, &mut |_| {}).unwrap();
    assert!(s.dram.bulk.bytes.fpm > 0, "FPM copies and zeroing ran");
    let mut checker = Checker::new(&header).unwrap();
    let recs = log.borrow();
    assert!(recs.len() > 1000, "{} commands", recs.len());
    for r in recs.iter() {
        if let Err(v) = checker.check(r) {
            panic!("{}", v.message);
        }
    }
}

/// A mix's platform: one core per application, each in its own `stride` of memory a page after
/// the previous core's (`PLACEMENT_SHIFT`), the mechanism set, the overrides applied.
#[test]
fn a_mix_platform_gives_each_application_its_own_memory() {
    let stride = cfg("rowclone-multicore", "").cores[0].stride;
    for (cores, mech) in [(2, "base"), (4, "rowclone"), (8, "rowclone-zi")] {
        let over = toml::from_str("[l2]\nhit_cycles = 30").unwrap();
        let c = rowclone_multicore::mix_platform(cores, &over, mech).unwrap();
        assert_eq!(c.copy.mechanism, mech);
        assert_eq!(c.l2.hit_cycles, 30);
        assert_eq!(c.cores.len(), cores as usize);
        for (i, g) in c.cores.iter().enumerate() {
            assert_eq!(
                (g.count, g.offset),
                (1, i as u64 * (stride + rowclone_multicore::PLACEMENT_SHIFT)),
                "core {i} of {cores}"
            );
        }
    }
    // A bad override is refused, naming what is wrong.
    let bad = toml::from_str("[l2]\nways = \"many\"").unwrap();
    let e = rowclone_multicore::mix_platform(2, &bad, "base").unwrap_err();
    assert!(e.to_string().contains("ways"), "{e}");
}
