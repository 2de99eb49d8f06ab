//! Several cores and agents on one memory system: coherence under random traffic (the
//! single-writer/multiple-reader invariant and every load seeing the last value written, checked
//! against the value shadow), per-core statistics, contention that slows each core down, and the
//! DRAM traffic of a multi-core run replayed through the independent timing checker.
use movelab_dram::checker::Checker;
use movelab_dram::command::{CommandRecord, CommandSink};
use movelab_platform::config::workload::Workload;
use movelab_platform::{Platform, PlatformConfig};
use proptest::prelude::*;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

fn cfg(name: &str, over: &str) -> PlatformConfig {
    PlatformConfig::preset(name)
        .unwrap()
        .with_overrides(toml::from_str(over).unwrap(), "test")
        .unwrap()
}

/// Random loads and stores from every core into a small shared region (64 lines), with copies
/// into it now and then (by the core or by the platform's copy mechanism).
fn sharing(seed: u64, iterations: u64, copy_every: u64) -> Workload {
    let text = format!(
        r#"
name = "sharing"
iterations = {iterations}
seed = {seed}
[[regions]]
name = "shared"
base = 0x10_0000
size = 4096
[[regions]]
name = "src"
base = 0x40_0000
size = "1MiB"
stride = 256
[[ops]]
kind = "compute"
n = 48
loads = 0.35
stores = 0.25
region = "shared"
[[ops]]
kind = "repeat"
count = {copy_every}
ops = [{{ kind = "load", at = {{ region = "shared", random = true }} }}]
[[ops]]
kind = "copy"
src = {{ region = "src" }}
dst = {{ region = "shared", random = true, align = 64 }}
bytes = 128
"#
    );
    Workload::from_toml_str(&text, "sharing.toml", &BTreeMap::new()).unwrap()
}

const MECHS: [&str; 5] = [
    "copy = { mechanism = \"base\" }",
    "copy = { mechanism = \"ce\", placement = \"on-die\", mode = \"SYNC_WLB\" }",
    "copy = { mechanism = \"ce\", placement = \"off-die\", mode = \"ASYNC\" }",
    "copy = { mechanism = \"ce\", placement = \"on-die\", mode = \"SYNC_WLB\", dest_to_cache = true }",
    "copy = { mechanism = \"rowclone\" }",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Under random traffic from 2 to 4 cores and a copy mechanism writing into the same lines,
    /// every load sees the last value written to its line, and after the run no line is dirty in
    /// one core's caches while another core holds it.
    #[test]
    fn coherent_under_random_sharing(
        seed in 1u64..10_000,
        cores in 2u32..5,
        mech in 0usize..MECHS.len(),
        llc in any::<bool>(),
        plat in prop::sample::select(vec!["zhao-uma-emc", "rowclone-system"]),
    ) {
        let llc_kv = if llc { "llc = { size_kib = 256, ways = 8, hit_cycles = 10 }\n" } else { "" };
        let over = format!("{llc_kv}{}\n[[cores]]\ncount = {cores}\n", MECHS[mech]);
        let mut p = Platform::new(&cfg(plat, &over)).unwrap();
        p.sys.track_values();
        let s = p.run(&sharing(seed, 12, 3)).unwrap();
        let sh = p.sys.shadow.as_ref().unwrap();
        prop_assert!(sh.violations.is_empty(), "{:?}", sh.violations);
        prop_assert!(sh.loads_checked > 100, "only {} loads checked", sh.loads_checked);
        for line in 0x10_0000 / 64..(0x10_0000 + 4096) / 64 {
            prop_assert_eq!(p.sys.swmr_violation(line), None, "line {:#x}", line);
        }
        prop_assert_eq!(s.per_core.len(), cores as usize);
        let c = s.coherence.unwrap();
        prop_assert!(c.invalidations > 0, "{:?}", c);
    }
}

#[test]
fn a_missed_invalidation_is_caught() {
    // Sharing produces upgrades, cache-to-cache transfers and invalidations, and the checks hold.
    let over = "[[cores]]\ncount = 4\n";
    let mut p = Platform::new(&cfg("zhao-uma-emc", over)).unwrap();
    p.sys.track_values();
    let s = p.run(&sharing(7, 40, 2)).unwrap();
    let c = s.coherence.unwrap();
    assert!(
        c.upgrades > 0 && c.cache_to_cache > 0 && c.invalidations > 0,
        "{c:?}"
    );
    assert!(p.sys.shadow.as_ref().unwrap().violations.is_empty());
    // The same run with the invalidations of cores' writes left out: stale loads and two
    // writers are seen.
    let mut p = Platform::new(&cfg("zhao-uma-emc", over)).unwrap();
    p.sys.track_values();
    p.sys.skip_invalidations = true;
    p.run(&sharing(7, 40, 2)).unwrap();
    assert!(!p.sys.shadow.as_ref().unwrap().violations.is_empty());
    let swmr = (0x10_0000 / 64..(0x10_0000 + 4096) / 64).any(|l| p.sys.swmr_violation(l).is_some());
    assert!(swmr);
}

fn private_stream(lines: u64) -> Workload {
    let text = format!(
        r#"
name = "stream"
iterations = {lines}
[[regions]]
name = "a"
base = 0x100_0000
size = "64MiB"
stride = 64
[[ops]]
kind = "load"
at = {{ region = "a" }}
[[ops]]
kind = "compute"
n = 40
"#
    );
    Workload::from_toml_str(&text, "stream.toml", &BTreeMap::new()).unwrap()
}

#[test]
fn cores_with_their_own_memory_contend_for_the_channel() {
    // The same streaming program alone and on 4 cores with disjoint memory: each core is slower
    // when sharing the bus and DRAM, the system does more work per unit of time.
    let w = private_stream(3000);
    let alone =
        movelab_platform::run(&cfg("zhao-uma-emc", "copy = { mechanism = \"base\" }"), &w).unwrap();
    let four = movelab_platform::run(
        &cfg(
            "zhao-uma-emc",
            "[[cores]]\ncount = 4\nstride = 0x1000_0000\n",
        ),
        &w,
    )
    .unwrap();
    assert_eq!(four.per_core.len(), 4);
    for c in &four.per_core {
        assert_eq!(c.instructions, alone.instructions);
        assert!(
            c.time_ns > alone.time_ns * 1.3,
            "core {} took {} ns, alone {} ns",
            c.core,
            c.time_ns,
            alone.time_ns
        );
    }
    assert!(four.instructions as f64 / four.time_ns > alone.instructions as f64 / alone.time_ns);
    assert!(four.coherence.unwrap().invalidations == 0);
}

#[test]
fn core_groups_run_their_own_programs_and_clocks() {
    let over = r#"
[[cores]]
count = 1
workload = "bulk-copy"
params = { pages = 8 }
[[cores]]
count = 2
core = { kind = "in-order", clock_mhz = 1000 }
workload = "tcp-rx"
params = { packets = 10 }
offset = 0x4000_0000
stride = 0x1000_0000
"#;
    let p = cfg("zhao-uma-emc", over);
    let s = movelab_platform::run(&p, &private_stream(1)).unwrap();
    assert_eq!(s.per_core.len(), 3);
    assert_eq!(s.per_core[0].workload, "bulk-copy");
    assert_eq!(s.per_core[1].workload, "tcp-rx");
    assert_eq!(s.per_core[1].kind, "in-order");
    // 1 GHz: a cycle is 1 ns.
    let c = &s.per_core[1];
    assert!((c.cycles as f64 - c.time_ns).abs() <= 1.0, "{c:?}");
    assert_eq!(s.per_core[1].instructions, s.per_core[2].instructions);
}

#[test]
fn bad_core_groups_are_named() {
    let c = PlatformConfig::preset("zhao-uma-emc").unwrap();
    let e = c
        .with_overrides(
            toml::from_str("[[cores]]\ncount = 100000\n").unwrap(),
            "t.toml",
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("cores") && e.contains("between 1 and"), "{e}");
    let e = c
        .with_overrides(
            toml::from_str("[[cores]]\ncore = { kind = \"vliw\" }\n").unwrap(),
            "t.toml",
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("kind") && e.contains("vliw"), "{e}");
    let e = c
        .with_overrides(
            toml::from_str("[[cores]]\ncore = { widht = 2 }\n").unwrap(),
            "t.toml",
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("widht"), "{e}");
}

struct Collect(Rc<RefCell<Vec<CommandRecord>>>);
impl CommandSink for Collect {
    fn record(&mut self, r: &CommandRecord) {
        self.0.borrow_mut().push(*r);
    }
}

#[test]
fn checker_replays_a_multicore_run() {
    for over in [
        "[[cores]]\ncount = 4\nstride = 0x1000_0000\n",
        "copy = { mechanism = \"rowclone\" }\n[[cores]]\ncount = 2\n",
    ] {
        let mut p = Platform::new(&cfg("rowclone-system", over)).unwrap();
        let log = Rc::new(RefCell::new(Vec::new()));
        p.mem_mut().set_command_log(Box::new(Collect(log.clone())));
        let header = p.mem_mut().log_header();
        p.run(&sharing(3, 30, 2)).unwrap();
        let mut checker = Checker::new(&header).unwrap();
        let recs = log.borrow();
        assert!(recs.len() > 100, "{} commands", recs.len());
        for r in recs.iter() {
            if let Err(v) = checker.check(r) {
                panic!("{over}: {}", v.message);
            }
        }
    }
}

/// Copies into a page whose source a core has just written (dirty in its caches), then loads of
/// the copy.
fn dirty_copies() -> Workload {
    let text = r#"
name = "dirty-copy"
iterations = 12
seed = 5
[[regions]]
name = "src"
base = 0x1000_0000
size = "4KiB"
stride = 0
[[regions]]
name = "dst"
base = 0x3000_0000
size = "48KiB"
stride = 4096
[[ops]]
kind = "repeat"
count = 48
ops = [{ kind = "store", at = { region = "src", random = true } }]
[[ops]]
kind = "copy"
src = { region = "src" }
dst = { region = "dst" }
bytes = 4096
[[ops]]
kind = "repeat"
count = 32
ops = [{ kind = "load", at = { region = "dst", random = true } }]
"#;
    Workload::from_toml_str(text, "dirty-copy.toml", &BTreeMap::new()).unwrap()
}

/// Every agent's copy is checked line by line against an oracle recorded when the core hands it
/// over (the source's last value): copy engines on and off the die, into memory or the cache,
/// RowClone and MC-DMA, with dirty source lines copied in the cache (the default) or flushed
/// first. Copying sources from memory while a cache holds newer data is caught.
#[test]
fn agent_copies_deliver_their_sources_values() {
    for (plat, mech) in [
        ("zhao-uma-emc", MECHS[1]),
        ("zhao-uma-emc", MECHS[2]),
        ("zhao-uma-emc", MECHS[3]),
        ("rowclone-system", MECHS[4]),
        (
            "rowclone-system",
            "copy = { mechanism = \"rowclone\", dirty_source = \"flush\" }",
        ),
        ("rowclone-system", "copy = { mechanism = \"mc-dma\" }"),
    ] {
        for fault in [false, true] {
            let mut p = Platform::new(&cfg(plat, mech)).unwrap();
            p.sys.track_values();
            p.sys.stale_copy_sources = fault;
            let s = p.run(&dirty_copies()).unwrap();
            if !fault && plat == "rowclone-system" {
                // The 48 stores leave dirty source lines at every copy: each is copied in the
                // cache or flushed, never both.
                let l = &s.copy_lines;
                assert!(l.flushed + l.copied_in_cache > 0, "{mech}: {l:?}");
                assert_eq!(l.flushed == 0, !mech.contains("flush"), "{mech}: {l:?}");
                assert_eq!(
                    l.copied_in_cache == 0,
                    mech.contains("flush"),
                    "{mech}: {l:?}"
                );
            }
            let sh = p.sys.shadow.as_ref().unwrap();
            assert_eq!(sh.copy_lines_checked, 12 * 64, "{mech}");
            if fault {
                assert!(
                    sh.copy_lines_wrong > 0,
                    "{mech}: a stale source went unnoticed"
                );
                assert!(!sh.violations.is_empty(), "{mech}");
            } else {
                assert_eq!(sh.copy_lines_wrong, 0, "{mech}: {:?}", sh.violations);
                assert!(sh.violations.is_empty(), "{mech}: {:?}", sh.violations);
            }
        }
    }
}
