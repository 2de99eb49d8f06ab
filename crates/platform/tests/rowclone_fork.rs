//! forkbench's fill phase as the paper's Linux runs it (RowClone sections 6, 7.2): each page's
//! first touch is zeroed by the kernel with the mechanism's zeroing, then the program's stores
//! write their values. The DRAM traffic of a small fill is the expected bytes: the baseline's CPU
//! zeroing writes whole lines without reading them, so its stores hit and the array crosses the
//! channel once (write-backs); FPM zeroes in DRAM, so the stores then read every line once.
use movelab_platform::config::workload::{Op, Workload};
use movelab_platform::experiments::rowclone_fork::{self, FillZeroing, Options};
use movelab_platform::{Platform, PlatformConfig};
use std::collections::BTreeMap;

const S_MB: u64 = 4;
const S: u64 = S_MB << 20;
/// forkbench's kernel region (its fault handlers' loads and stores).
const KERNEL: u64 = 16 << 10;
/// What the caches can still hold dirty at the end: L1 32 KB + L2 1 MB (rowclone-system).
const CACHED: u64 = (32 + 1024) << 10;
/// The kernel's state for the array's pages, which each fault updates: the page descriptors
/// (64 B a page) and the page-table entries (8 B a page).
const PAGES: u64 = S / 64;
const PTES: u64 = S / 512;
const PTES_BASE: u64 = 0x7100_0000;
const PAGES_BASE: u64 = 0x7200_0000;

fn fill(mechanism: &str, marked: bool) -> movelab_platform::stats::PlatformStats {
    let over = format!(
        "copy = {{ mechanism = \"{mechanism}\" }}\ncore = {{ marked_bulk_ops = {marked} }}"
    );
    let cfg = PlatformConfig::preset("rowclone-system")
        .unwrap()
        .with_overrides(toml::from_str(&over).unwrap(), "test")
        .unwrap();
    let mut p = BTreeMap::new();
    p.insert("s_mb".to_string(), S_MB);
    p.insert("n_pages".to_string(), 1);
    let w = Workload::load("forkbench", &p).unwrap();
    Platform::new(&cfg).unwrap().run(&w.with_ops(0..1)).unwrap()
}

#[test]
fn the_baseline_fill_moves_the_array_once() {
    let st = fill("base", true);
    let (reads, writes) = (st.dram.reads * 64, st.dram.writes * 64);
    // The array is never read; each first-touch fault's page descriptor and page-table line are
    // (read for ownership once each, in order).
    assert!(
        (PAGES + PTES..=PAGES + PTES + KERNEL).contains(&reads),
        "baseline fill read {reads} B"
    );
    assert!(
        (S - CACHED..=S + PAGES + PTES + KERNEL).contains(&writes),
        "baseline fill wrote {writes} B of a {S} B array"
    );
    let b = &st.dram.bulk.bytes;
    assert_eq!(b.fpm + b.psm_inter + b.psm_intra + b.baseline, 0);
}

#[test]
fn an_unmarked_baseline_zeroing_reads_for_ownership() {
    let st = fill("base", false);
    let reads = st.dram.reads * 64;
    assert!(
        (S..=S + PAGES + PTES + KERNEL).contains(&reads),
        "unmarked fill read {reads} B"
    );
}

#[test]
fn the_fpm_fill_zeroes_in_dram_then_reads_each_line_once() {
    let st = fill("rowclone", true);
    let b = &st.dram.bulk.bytes;
    // Every page zeroed in DRAM; FPM from its subarray's zero row, except the pages that are
    // themselves a zero row (the array is not kept off them), which go by PSM.
    assert_eq!(b.fpm + b.psm_inter + b.psm_intra, S);
    assert!(b.fpm >= S - S / 256, "fpm zeroed {} B", b.fpm);
    let reads = st.dram.reads * 64;
    assert!(
        (S..=S + PAGES + PTES + KERNEL).contains(&reads),
        "fpm fill read {reads} B of a {S} B array"
    );
}

#[test]
fn fork_rows_count_the_copies_alone_as_bulk_bytes() {
    let o = Options {
        sizes_mb: vec![S_MB],
        n_pages: vec![64],
        bulk_zero: false,
        mechanisms: vec!["baseline".into(), "fpm".into()],
        ..Options::default()
    };
    let rows = rowclone_fork::run(&o, &mut |_, _| {}).unwrap();
    let base = rows.iter().find(|r| r.mechanism == "baseline").unwrap();
    let fpm = rows.iter().find(|r| r.mechanism == "fpm").unwrap();
    assert_eq!(base.bulk_bytes.fpm + base.bulk_bytes.psm_inter, 0);
    assert_eq!(fpm.bulk_bytes.fpm, 64 * 4096);
    assert_eq!(fpm.bulk_bytes.psm_inter + fpm.bulk_bytes.psm_intra, 0);
    // The baseline's copies: 64 pages read over the channel, of a fill that moved the array once.
    assert!(base.fmtc > 0.0 && base.fmtc < 0.1, "fmtc {}", base.fmtc);
}

#[test]
fn fpm_zeroing_its_own_fill_reads_the_array_back_and_leaves_the_baseline_alone() {
    // `FillZeroing::Mechanism`: FPM zeroes each page in DRAM at first touch, so the program's
    // stores then read every line back over the channel (about S more than the CPU's zeroing,
    // whose whole-line writes the stores hit); the baseline's fill is the CPU's either way.
    let run = |z| {
        let o = Options {
            sizes_mb: vec![S_MB],
            n_pages: vec![64],
            bulk_zero: false,
            mechanisms: vec!["baseline".into(), "fpm".into()],
            fill_zeroing: z,
            ..Options::default()
        };
        rowclone_fork::run(&o, &mut |_, _| {}).unwrap()
    };
    let (cpu, own) = (run(FillZeroing::Cpu), run(FillZeroing::Mechanism));
    let pick = |rows: &[rowclone_fork::Row], m: &str| {
        rows.iter().find(|r| r.mechanism == m).unwrap().clone()
    };
    let (b_cpu, b_own) = (pick(&cpu, "baseline"), pick(&own, "baseline"));
    assert_eq!(
        (b_cpu.time_ns, b_cpu.channel_mb),
        (b_own.time_ns, b_own.channel_mb)
    );
    let (f_cpu, f_own) = (pick(&cpu, "fpm"), pick(&own, "fpm"));
    assert!(
        f_own.channel_mb > f_cpu.channel_mb + 0.5 * S_MB as f64,
        "fpm channel MB: cpu-zeroed fill {}, own fill {}",
        f_cpu.channel_mb,
        f_own.channel_mb
    );
}

#[test]
fn every_fault_updates_its_pages_kernel_state() {
    // Section 5.1's copy-on-write: the kernel remaps the written page and allocates the new one
    // (section 6: full-system traces hold this). Each fault of the fill stores to its page's
    // descriptor and page-table entry in order; each copy-on-write fault stores to one
    // page-table line and two descriptors (source and new page) before its copy.
    let mut p = BTreeMap::new();
    p.insert("s_mb".to_string(), S_MB);
    p.insert("n_pages".to_string(), 100);
    let w = Workload::load("forkbench", &p).unwrap();
    let inside = |a: u64, base: u64, size: u64| (base..base + size).contains(&a);
    let fill: Vec<u64> = w
        .with_ops(0..1)
        .ops()
        .filter_map(|op| match op {
            Op::Store(a) => Some(a),
            _ => None,
        })
        .collect();
    let pages = S / 4096;
    assert_eq!(fill.len() as u64, 2 * pages);
    for (k, pair) in fill.chunks(2).enumerate() {
        assert_eq!(pair[0], PAGES_BASE + 64 * k as u64);
        assert_eq!(pair[1], PTES_BASE + 8 * k as u64);
    }
    let fork = w.with_ops(1..w.spec.ops.len());
    let (mut stores, mut copies) = (Vec::new(), 0);
    for op in fork.ops() {
        match op {
            Op::Store(a) => stores.push(a),
            Op::Copy { .. } => {
                copies += 1;
                // The child's store into the previous copy's page, then this fault's three.
                let all = std::mem::take(&mut stores);
                assert_eq!(all.len(), if copies == 1 { 3 } else { 4 }, "{all:x?}");
                let s = &all[all.len() - 3..];
                assert!(inside(s[0], PTES_BASE, PTES) && s[0] % 64 == 0);
                assert!(inside(s[1], PAGES_BASE, PAGES) && inside(s[2], PAGES_BASE, PAGES));
            }
            _ => {}
        }
    }
    assert_eq!(copies, 100);
}

#[test]
fn the_child_copies_n_different_pages() {
    // Section 7.2: N is "the number of pages copied"; a second write to a page the child already
    // owns copies nothing in Linux, so the N copy-on-write sources are N different pages (here
    // every page of the array), and an N larger than the array is refused.
    let pages = S / 4096;
    let mut p = BTreeMap::new();
    p.insert("s_mb".to_string(), S_MB);
    p.insert("n_pages".to_string(), pages);
    let w = Workload::load("forkbench", &p).unwrap();
    let mut srcs: Vec<u64> = w
        .with_ops(1..w.spec.ops.len())
        .ops()
        .filter_map(|op| match op {
            Op::Copy { src, .. } => Some(src),
            _ => None,
        })
        .collect();
    assert_eq!(srcs.len() as u64, pages);
    assert!(srcs.iter().all(|a| a % 4096 == 0 && *a < S));
    srcs.sort_unstable();
    srcs.dedup();
    assert_eq!(srcs.len() as u64, pages, "a page copied twice");
    let e = rowclone_fork::run(
        &Options {
            sizes_mb: vec![S_MB],
            n_pages: vec![pages + 1],
            bulk_zero: false,
            ..Options::default()
        },
        &mut |_, _| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("different pages") && e.contains("1024 pages"),
        "{e}"
    );
}
