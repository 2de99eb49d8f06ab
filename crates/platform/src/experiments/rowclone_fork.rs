//! RowClone in a whole system (Seshadri et al., MICRO 2013, sections 7.2-7.5): forkbench's
//! fraction of memory traffic due to copies (FMTC) and the speedup of FPM and PSM over the
//! baseline for S in {64, 128} MB and N from 2 to 16k pages (Figures 7-9), and RowClone,
//! RowClone-ZI and MC-DMA on the bulk-zeroing workload (section 7.3, 7.5).
//!
//! Method: forkbench's first phase (filling the S-byte array) is the same for every N, so it is
//! simulated once per S and mechanism; each (N, mechanism) run then starts from the cache
//! contents its mechanism's fill left and runs the fork phase. The fill is as the paper's Linux
//! runs it: each page's first touch faults and the kernel zeroes it (the marked *memset*,
//! section 6) before the program's stores write their values (RowClone cannot initialise to
//! arbitrary data, section 3.4). The baseline zeroes with the CPU, writing whole lines without
//! reading them (Table 3's baseline zeroing), so the program's stores then hit. FPM and PSM zero
//! as the baseline does by default (section 7.2 evaluates them as copy modes), or in DRAM from
//! the subarray's zero row ([`FillZeroing::Mechanism`], section 3.4), after which the stores miss
//! (section 7.3's "phase 2"). Every mechanism runs the paper's marked page operations
//! (`core.marked_bulk_ops`, section 6). Times, traffic and energy add up over both phases. FPM places every
//! copy-on-write destination in its source's subarray (subarray-aware allocation, section 4.3.1);
//! PSM places it in another bank. Speedup is the baseline's time over the mechanism's for the
//! same work.
//!
//! A run can be split per mechanism ([`Options::mechanisms`], [`runs`]): each part returns the raw
//! totals of its runs ([`Run`]) and [`rows`] relates them to their baseline, so the rows of a
//! split run are those of the whole run, bit for bit (each part repeats the fill phase, which is
//! deterministic).
use super::platform;
use crate::config::workload::{DstPolicy, Workload};
use crate::sim::error::PlatformError;
use crate::stats::PlatformStats;
use crate::systems::platform::Platform;
use movelab_dram::stats::BulkBytes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    /// "forkbench" or "bulk-zero".
    pub workload: String,
    /// forkbench: S in MB; bulk-zero: the zeroed size in MB.
    pub s_mb: f64,
    /// forkbench: N; bulk-zero: pages zeroed.
    pub n_pages: u64,
    /// "baseline", "fpm", "psm" (forkbench); "baseline", "rowclone", "rowclone-zi", "mc-dma".
    pub mechanism: String,
    /// Fraction of the baseline system's memory traffic due to copies (Fig. 7), for this (S, N).
    pub fmtc: f64,
    /// Baseline time / this mechanism's time.
    pub speedup: f64,
    /// 1 - this mechanism's DRAM energy / the baseline's (DRAM and channel).
    pub energy_reduction: f64,
    /// 1 - this mechanism's channel bytes / the baseline's.
    pub bandwidth_reduction: f64,
    pub time_ns: f64,
    pub ipc: f64,
    pub dram_energy_uj: f64,
    pub channel_mb: f64,
    /// Bytes the memory controller moved by each mechanism (the DRAM model's `bulk.bytes`) in the
    /// fork phase (forkbench: the copies; the fill's first-touch zeroing, in DRAM under FPM and
    /// PSM alike, is left out), so a row's label can be checked against what ran: an "fpm" row
    /// whose pages are not whole rows moves them by PSM or over the channel instead.
    pub bulk_bytes: BulkBytes,
}

#[derive(Debug, Clone)]
pub struct Options {
    pub sizes_mb: Vec<u64>,
    pub n_pages: Vec<u64>,
    pub overrides: toml::Value,
    /// Pages of the bulk-zero workload.
    pub zero_pages: u64,
    /// Whether to run the bulk-zero workload (a point of its own when the runs are split over an
    /// executor: one point per S, one for bulk zeroing).
    pub bulk_zero: bool,
    /// The forkbench mechanisms to run ("baseline", "fpm", "psm"), in this order; empty runs all.
    /// A part without its baseline gives [`Run`]s only ([`runs`]); [`rows`] needs the baseline's.
    pub mechanisms: Vec<String>,
    /// Who zeroes each page of the array at its first touch in the FPM and PSM runs.
    pub fill_zeroing: FillZeroing,
}

/// Who zeroes forkbench's array pages at first touch in the FPM and PSM runs (the baseline's is
/// always the CPU's marked *memset*).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FillZeroing {
    /// The CPU, as in the baseline: section 7.2 evaluates FPM and PSM as copy modes ("RowClone
    /// can only improve performance by reducing the memory access rate due to copy operations";
    /// FMTC counts copies alone); zeroing in DRAM, and RowClone-ZI, enter in section 7.3.
    #[default]
    Cpu,
    /// The mechanism: in DRAM from the subarray's zero row (section 3.4), after which the
    /// program's stores miss (section 7.3's "phase 2").
    Mechanism,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            sizes_mb: vec![64, 128],
            n_pages: vec![2, 8, 32, 128, 512, 2048, 8192, 16384],
            overrides: toml::Value::Table(Default::default()),
            zero_pages: 1024,
            bulk_zero: true,
            mechanisms: Vec::new(),
            fill_zeroing: FillZeroing::default(),
        }
    }
}

/// The raw totals of one run (fill phase and fork phase added), from which its row is derived.
/// Times and energies travel as their bits, so a split run's parts relate exactly as in one run.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Totals {
    #[serde(with = "f64_bits")]
    pub time: f64,
    pub instr: u64,
    pub cycles: u64,
    #[serde(with = "f64_bits")]
    pub energy: f64,
    pub channel: u64,
    pub copy: u64,
    /// Bulk bytes by baseline, FPM, inter-bank PSM, intra-bank PSM, of the phases added with
    /// their bulk bytes (forkbench: the fork phase's copies, not the fill's zeroing).
    pub bulk: [u64; 4],
}

/// An `f64` (de)serialized as its IEEE-754 bits (JSON decimal parsing need not round-trip).
mod f64_bits {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(v.to_bits())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        u64::deserialize(d).map(f64::from_bits)
    }
}

/// One simulated run, before it is related to its baseline: a part of a split run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Run {
    pub workload: String,
    pub s_mb: f64,
    pub n_pages: u64,
    pub mechanism: String,
    pub totals: Totals,
}

impl Totals {
    /// Adds a phase's totals, and its bulk bytes where `bulk`.
    fn add(&mut self, s: &PlatformStats, bulk: bool) {
        self.time += s.time_ns;
        self.instr += s.instructions;
        self.cycles += s.core_cycles;
        self.energy += s.dram_energy_nj;
        self.channel += s.memory.channel_bytes;
        self.copy += s.memory.copy_bytes + s.memory.bulk_bytes;
        if !bulk {
            return;
        }
        let b = &s.dram.bulk.bytes;
        for (sum, v) in self
            .bulk
            .iter_mut()
            .zip([b.baseline, b.fpm, b.psm_inter, b.psm_intra])
        {
            *sum += v;
        }
    }
}

const MECHS: [(&str, &str, DstPolicy); 3] = [
    (
        "baseline",
        "copy = { mechanism = \"base\" }",
        DstPolicy::SameSubarray,
    ),
    (
        "fpm",
        "copy = { mechanism = \"rowclone\" }",
        DstPolicy::SameSubarray,
    ),
    (
        "psm",
        "copy = { mechanism = \"rowclone\" }",
        DstPolicy::OtherBank,
    ),
];

/// A forkbench mechanism's platform settings with the paper's marked page operations: section 6
/// ("We modify the kernel's implementation of page copy/initialization to use the *memcpy* and
/// *memset* instructions and mark these instructions in our traces"), so the baseline's
/// copy-on-write copy and first-touch zeroing are line moves with no loop code
/// (`core.marked_bulk_ops`), unless the caller's overrides set it.
fn fork_extra(overrides: &toml::Value, extra: &str) -> String {
    let set = overrides
        .get("core")
        .and_then(|c| c.get("marked_bulk_ops"))
        .is_some();
    if set {
        extra.to_string()
    } else {
        format!("{extra}\ncore = {{ marked_bulk_ops = true }}")
    }
}

/// Runs forkbench and the bulk-zero workload; `progress(done, total)` after each run.
pub fn run(o: &Options, progress: &mut dyn FnMut(usize, usize)) -> Result<Vec<Row>, PlatformError> {
    rows(&runs(o, progress)?)
}

/// The forkbench mechanisms `o` selects, refusing an unknown name.
fn selected(o: &Options) -> Result<Vec<(&'static str, &'static str, DstPolicy)>, PlatformError> {
    if let Some(bad) = o
        .mechanisms
        .iter()
        .find(|m| !MECHS.iter().any(|(name, _, _)| name == m))
    {
        return Err(PlatformError::Unknown {
            kind: "rowclone-fork mechanism",
            name: bad.clone(),
            known: "baseline, fpm, psm".into(),
        });
    }
    Ok(MECHS
        .into_iter()
        .filter(|(name, _, _)| o.mechanisms.is_empty() || o.mechanisms.iter().any(|m| m == name))
        .collect())
}

/// The runs of `o`, unrelated (see [`rows`]): forkbench's for each S, N and selected mechanism,
/// then bulk zeroing's; `progress(done, total)` after each run.
pub fn runs(
    o: &Options,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<Run>, PlatformError> {
    let plat = "rowclone-system";
    let mechs = selected(o)?;
    let zero_runs = if o.bulk_zero { 4 } else { 0 };
    let total = o.sizes_mb.len() * (1 + o.n_pages.len() * mechs.len()) + zero_runs;
    // The child writes N different pages of the array (section 7.2: N is "the number of pages
    // copied"; a second write to a page it owns copies nothing), so N cannot exceed S's pages.
    for &s in &o.sizes_mb {
        if let Some(&n) = o.n_pages.iter().find(|&&n| n > s.saturating_mul(256)) {
            return Err(PlatformError::config(
                "rowclone-fork",
                format!("S = {s} MB, N = {n}"),
                format!(
                    "the child updates N different pages of the S-byte array, which has {} pages of 4 KB",
                    s.saturating_mul(256)
                ),
            ));
        }
    }
    let mut done = 0;
    let mut out = Vec::new();
    for &s in &o.sizes_mb {
        let mut p = BTreeMap::new();
        p.insert("s_mb".to_string(), s);
        p.insert("n_pages".to_string(), 1);
        let w = Workload::load("forkbench", &p)?;
        // Phase 1 once per distinct fill: the baseline's, and each mechanism's whose first-touch
        // zeroing is its own ([`FillZeroing::Mechanism`]).
        let mut fills: Vec<(&str, Platform, PlatformStats)> = Vec::new();
        let mut which = Vec::new();
        for &(name, _, _) in &mechs {
            let by = if o.fill_zeroing == FillZeroing::Cpu {
                MECHS[0].1
            } else {
                MECHS
                    .iter()
                    .find(|m| m.0 == name)
                    .map_or(MECHS[0].1, |m| m.1)
            };
            if let Some(i) = fills.iter().position(|f| f.0 == by) {
                which.push(i);
                continue;
            }
            let cfg = platform(plat, &o.overrides, &fork_extra(&o.overrides, by))?;
            let mut fill = Platform::new(&cfg)?;
            let st = fill.run(&w.with_ops(0..1))?;
            which.push(fills.len());
            fills.push((by, fill, st));
        }
        done += 1;
        progress(done, total);
        for &n in &o.n_pages {
            let mut p2 = p.clone();
            p2.insert("n_pages".to_string(), n);
            let wn = Workload::load("forkbench", &p2)?;
            for (&(name, extra, policy), &i) in mechs.iter().zip(&which) {
                let (_, fill, fill_stats) = &fills[i];
                let cfg = platform(plat, &o.overrides, &fork_extra(&o.overrides, extra))?;
                let mut plat_run = Platform::new(&cfg)?;
                plat_run.warm_caches_from(fill);
                let mut fork = wn.with_ops(1..wn.spec.ops.len());
                fork.set_dst_policy(policy);
                let st = plat_run.run(&fork)?;
                let mut t = Totals::default();
                t.add(fill_stats, false);
                t.add(&st, true);
                out.push(Run {
                    workload: "forkbench".into(),
                    s_mb: s as f64,
                    n_pages: n,
                    mechanism: name.into(),
                    totals: t,
                });
                done += 1;
                progress(done, total);
            }
        }
    }
    if !o.bulk_zero {
        return Ok(out);
    }
    // Bulk zeroing: baseline, RowClone, RowClone-ZI, MC-DMA.
    let mut p = BTreeMap::new();
    p.insert("pages".to_string(), o.zero_pages);
    let w = Workload::load("bulk-zero", &p)?;
    let mb = (o.zero_pages * 4096) as f64 / (1 << 20) as f64;
    for (name, mech) in [
        ("baseline", "base"),
        ("rowclone", "rowclone"),
        ("rowclone-zi", "rowclone-zi"),
        ("mc-dma", "mc-dma"),
    ] {
        let cfg = platform(
            plat,
            &o.overrides,
            &format!("copy = {{ mechanism = \"{mech}\" }}"),
        )?;
        let st = crate::systems::platform::run(&cfg, &w)?;
        let mut t = Totals::default();
        t.add(&st, true);
        out.push(Run {
            workload: "bulk-zero".into(),
            s_mb: mb,
            n_pages: o.zero_pages,
            mechanism: name.into(),
            totals: t,
        });
        done += 1;
        progress(done, total);
    }
    Ok(out)
}

/// The rows of `runs` (from one or several calls of [`runs`]), in their order: each run related
/// to the "baseline" run of its workload, S and N, which must be among them.
pub fn rows(runs: &[Run]) -> Result<Vec<Row>, PlatformError> {
    runs.iter()
        .map(|r| {
            let b = runs
                .iter()
                .find(|b| {
                    b.mechanism == "baseline"
                        && b.workload == r.workload
                        && b.s_mb == r.s_mb
                        && b.n_pages == r.n_pages
                })
                .ok_or_else(|| {
                    PlatformError::config(
                        "rowclone-fork",
                        format!("{} S = {} MB, N = {}", r.workload, r.s_mb, r.n_pages),
                        format!("the '{}' run has no baseline run to relate to", r.mechanism),
                    )
                })?;
            let fmtc = if b.totals.channel > 0 {
                b.totals.copy as f64 / b.totals.channel as f64
            } else {
                0.0
            };
            Ok(row(
                &r.workload,
                r.s_mb,
                r.n_pages,
                &r.mechanism,
                fmtc,
                &b.totals,
                &r.totals,
            ))
        })
        .collect()
}

fn row(workload: &str, s_mb: f64, n: u64, mech: &str, fmtc: f64, b: &Totals, t: &Totals) -> Row {
    Row {
        workload: workload.into(),
        s_mb,
        n_pages: n,
        mechanism: mech.into(),
        fmtc,
        speedup: if t.time > 0.0 { b.time / t.time } else { 0.0 },
        energy_reduction: if b.energy > 0.0 {
            1.0 - t.energy / b.energy
        } else {
            0.0
        },
        bandwidth_reduction: if b.channel > 0 {
            1.0 - t.channel as f64 / b.channel as f64
        } else {
            0.0
        },
        time_ns: t.time,
        ipc: if t.cycles > 0 {
            t.instr as f64 / t.cycles as f64
        } else {
            0.0
        },
        dram_energy_uj: t.energy / 1000.0,
        channel_mb: t.channel as f64 / (1 << 20) as f64,
        bulk_bytes: BulkBytes {
            baseline: t.bulk[0],
            fpm: t.bulk[1],
            psm_inter: t.bulk[2],
            psm_intra: t.bulk[3],
            ..Default::default()
        },
    }
}
