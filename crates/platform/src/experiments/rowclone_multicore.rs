//! RowClone on multi-core systems (Seshadri et al., MICRO 2013, section 7.4): multi-programmed
//! mixes on 2, 4 and 8 cores, half copy/initialisation-intensive applications (Table 4), half
//! memory-intensive ones (Table 6): on two cores the pairs of one of each (the paper's 138
//! workloads are the 6 x 23 pairs), on more drawn at random, balanced over the applications,
//! with a seed ([`draw_mixes`]); for
//! each mix, the baseline,
//! RowClone and RowClone-ZI. Metrics (Table 7): weighted speedup, instruction throughput,
//! harmonic speedup, maximum slowdown, memory bandwidth and DRAM energy per instruction, each as
//! the improvement (or reduction) of RowClone and RowClone-ZI over the baseline, averaged over
//! the mixes; and weighted speedup against the number of highly copy-intensive applications in a
//! mix (Fig. 13).
//!
//! Method: optionally ([`Options::functional_warming`], off by default), every core's program
//! first runs through its caches without timing (`Platform::set_functional_warming`), so that
//! each 1 MB last-level cache starts full, with the dirty lines its program leaves, as over the
//! paper's billion-instruction runs (cold, a short run never evicts a dirty line and no
//! write-back ever reaches the DRAM); then every core runs a timed warm-up and a target of
//! program instructions; a core past its target keeps running,
//! so the others still compete with it, and the run ends when all reached theirs
//! (`Platform::set_work_targets`). A core's shared IPC is over its own measured instructions.
//! Each application's alone IPC is its IPC alone on the same multi-core system (the other cores
//! idle) under the baseline, warmed alike ([`alone_ipc`]), computed once per application
//! and reused by every mix: the reference of weighted speedup (sum of shared / alone IPC),
//! harmonic speedup (cores / sum of alone / shared) and maximum slowdown (largest alone /
//! shared). The baseline's alone IPC is the reference for all three mechanisms, so that an
//! application's own speedup under RowClone counts (against its own alone IPC it would cancel).
//! Bandwidth and energy per instruction count each core's own DRAM bytes and energy up to its
//! own target ([`own_targets_measure`]).
use super::rowclone_apps::{self, core_ipc, App, Options as AppOptions, ENDLESS};
use crate::config::platform::CoreGroup;
use crate::sim::error::PlatformError;
use crate::stats::PlatformStats;
use crate::systems::platform::Platform;
use movelab_dram::generator::Xoshiro256StarStar;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most mixes per core count.
pub const MAX_MIXES: u32 = 10_000;

/// Program instructions of functional warming that fill a 1 MB last-level cache twice over for
/// the lightest application (2 misses per 1,000 instructions: 40,000 line fills against 16,384
/// lines): the value `--functional-warming` suggests (docs/rowclone-system.md, "Functional
/// warming"). Without timing, it takes milliseconds per run.
pub const STEADY_STATE_WARMING: u64 = 20_000_000;

/// Most instructions of functional warming per run.
pub const MAX_WARMING: u64 = 1 << 32;

#[derive(Debug, Clone)]
pub struct Options {
    /// Core counts (each even, 2 to 8).
    pub cores: Vec<u32>,
    /// Mixes per core count.
    pub mixes: u32,
    pub seed: u64,
    /// Run lengths, platform overrides and application overrides, as for the single-core runs.
    pub apps: AppOptions,
    /// Program instructions each core's program runs through its caches functionally before
    /// the timed run, in every mix and alone run (`Platform::set_functional_warming`); 0: cold
    /// caches, as the single-core runs of section 7.3 (whose calibration the applications
    /// carry). The paper's runs cover a billion instructions, over which each 1 MB cache is full
    /// and writes back a dirty line for each one it takes in; cold, a timed warm-up of 50,000
    /// instructions fills a tenth of it and no write-back reaches the DRAM.
    pub functional_warming: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cores: vec![2, 4, 8],
            mixes: 10,
            seed: 7,
            apps: AppOptions::default(),
            functional_warming: 0,
        }
    }
}

impl Options {
    pub fn check(&self) -> Result<(), PlatformError> {
        self.apps.check()?;
        if self.cores.is_empty()
            || self
                .cores
                .iter()
                .any(|&c| !(2..=8).contains(&c) || c % 2 == 1)
        {
            return Err(PlatformError::config(
                "rowclone-multicore",
                "cores",
                format!(
                    "{:?}: core counts must be even, 2 to 8 (half run copy-intensive applications)",
                    self.cores
                ),
            ));
        }
        if self.functional_warming > MAX_WARMING {
            return Err(PlatformError::config(
                "rowclone-multicore",
                "functional_warming",
                format!(
                    "{} instructions: at most {MAX_WARMING}",
                    self.functional_warming
                ),
            ));
        }
        if !(1..=MAX_MIXES).contains(&self.mixes) {
            return Err(PlatformError::config(
                "rowclone-multicore",
                "mixes",
                format!("{} mixes: must be 1 to {MAX_MIXES}", self.mixes),
            ));
        }
        Ok(())
    }
}

/// A multi-programmed workload: one application per core.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Mix {
    pub cores: u32,
    /// Its index among the mixes of this core count.
    pub index: u32,
    pub apps: Vec<String>,
    /// How many of them are highly copy/initialisation-intensive (Fig. 13).
    pub highly_intensive: u32,
}

/// The mixes of `cores` cores, each from a generator seeded by (`seed`, cores, index), so a mix
/// does not depend on how many others are drawn.
///
/// Two cores: the paper's 138 two-core workloads (Table 7) are as many as there are pairs of one
/// of Table 6's six copy/initialisation-intensive and one of its 23 memory-intensive applications
/// (6 x 23 = 138), so the two-core mixes are those pairs, each once ([`pair_mixes`]): `n` = 138
/// is every pair, a smaller `n` a sample without repetition in which each copy-intensive
/// application appears equally often (to one) and the memory-intensive ones spread over all 23.
/// More than there are pairs is refused.
///
/// Four and more: `cores / 2` copy/initialisation-intensive and `cores / 2` memory-intensive
/// applications, each uniformly at random (repetition within a mix allowed): section 7.4 says
/// only that "benchmarks from each category are chosen at random", and 50 and 40 (the paper's 4-
/// and 8-core counts) match no enumeration. The draw is balanced ([`balanced_pick`]): each slot
/// of a mix deals its class's applications from a deck shuffled anew every round, so over the
/// mixes every application fills every slot equally often (to one round). Each mix is still a
/// uniform draw (every application equally likely in every slot, the slots independent), so the
/// mean over the mixes estimates the same population mean as independent draws, with less
/// spread: a small sample (the default's 9 and 7) holds the classes' applications, and the
/// highly copy-intensive ones, in the population's proportions (independent draws gave the
/// default 8-core sample 2.6 highly copy-intensive applications per mix against an expected 2).
pub fn draw_mixes(seed: u64, cores: u32, n: u32) -> Result<Vec<Mix>, PlatformError> {
    let all = rowclone_apps::apps()?;
    let copy: Vec<&App> = all.iter().filter(|a| a.copy_intensive()).collect();
    let mem: Vec<&App> = all.iter().filter(|a| !a.copy_intensive()).collect();
    if copy.is_empty() || mem.is_empty() {
        return Err(PlatformError::config(
            "rowclone-multicore",
            "apps",
            "the application table needs copy/initialisation-intensive and memory-intensive applications",
        ));
    }
    if cores == 2 {
        return pair_mixes(seed, n, &copy, &mem);
    }
    let half = cores / 2;
    let mut out = Vec::new();
    for index in 0..n {
        let mut apps = Vec::new();
        let mut highly = 0;
        for slot in 0..half {
            let a = copy[balanced_pick(seed, cores, slot, index, copy.len())];
            highly += u32::from(a.highly_copy_intensive());
            apps.push(a.name.clone());
        }
        for slot in half..cores {
            apps.push(
                mem[balanced_pick(seed, cores, slot, index, mem.len())]
                    .name
                    .clone(),
            );
        }
        out.push(Mix {
            cores,
            index,
            apps,
            highly_intensive: highly,
        });
    }
    Ok(out)
}

/// Which of `len` applications slot `slot` of mix `index` (of `cores` cores) takes: the
/// `index mod len`-th card of that slot's deck for round `index div len`, a permutation of
/// `0..len` seeded by (`seed`, cores, slot, round). Each round of `len` mixes deals every
/// application to the slot once; a mix depends only on its own index, not on how many are drawn.
fn balanced_pick(seed: u64, cores: u32, slot: u32, index: u32, len: usize) -> usize {
    let round = u64::from(index) / len as u64;
    let mut rng = Xoshiro256StarStar::seed_from_u64(
        seed ^ (u64::from(cores) << 56)
            ^ (u64::from(slot) << 48)
            ^ (round << 16)
            ^ 0x9e37_79b9_7f4a_7c15,
    );
    permutation(&mut rng, len)[index as usize % len]
}

/// A seeded permutation of `0..n` (Fisher-Yates).
fn permutation(rng: &mut Xoshiro256StarStar, n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    v
}

/// The two-core mixes: every pair of one of `copy` and one of `mem`, in a seeded order. Both
/// lists are shuffled by `seed`; mix `k` pairs copy application `k mod C` with memory-intensive
/// application `(k div C + (k mod C) * ceil(M / C)) mod M` (C, M: the lists' lengths). For each
/// copy application the second index runs over all M as `k div C` does, so the first C x M mixes
/// are every pair once; the offset spreads any first `n` over all M memory-intensive applications.
fn pair_mixes(seed: u64, n: u32, copy: &[&App], mem: &[&App]) -> Result<Vec<Mix>, PlatformError> {
    let (c, m) = (copy.len(), mem.len());
    if n as usize > c * m {
        return Err(PlatformError::config(
            "rowclone-multicore",
            "mixes",
            format!(
                "{n} two-core mixes: there are {} (each pair of one of the {c} copy/initialisation-intensive \
                 and one of the {m} memory-intensive applications, once); ask for at most that",
                c * m
            ),
        ));
    }
    let mut rng = Xoshiro256StarStar::seed_from_u64(seed ^ (2u64 << 48) ^ 0x7a1e_5eed);
    let cp = permutation(&mut rng, c);
    let mp = permutation(&mut rng, m);
    let step = m.div_ceil(c);
    Ok((0..n as usize)
        .map(|k| {
            let a = copy[cp[k % c]];
            let b = mem[mp[(k / c + (k % c) * step) % m]];
            Mix {
                cores: 2,
                index: k as u32,
                apps: vec![a.name.clone(), b.name.clone()],
                highly_intensive: u32::from(a.highly_copy_intensive()),
            }
        })
        .collect())
}

/// One mix under one mechanism.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MixRun {
    pub mechanism: String,
    /// Each core's shared IPC (program instructions per cycle over its measured instructions).
    pub ipc: Vec<f64>,
    pub weighted_speedup: f64,
    pub instruction_throughput: f64,
    pub harmonic_speedup: f64,
    pub max_slowdown: f64,
    pub bytes_per_instruction: f64,
    pub energy_nj_per_instruction: f64,
}

/// The performance and fairness metrics of one run of a mix (Table 7's first four rows), from
/// each core's shared IPC and its application's alone IPC, as the papers that Table 7 cites define
/// them: weighted speedup = sum of shared / alone IPC (Eyerman and Eeckhout [14]); instruction
/// throughput = sum of shared IPC; harmonic speedup = cores / sum of alone / shared IPC (Luo et
/// al. [35]); maximum slowdown = largest alone / shared IPC (Kim et al. [29, 30]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MixMetrics {
    pub weighted_speedup: f64,
    pub instruction_throughput: f64,
    pub harmonic_speedup: f64,
    pub max_slowdown: f64,
}

impl MixMetrics {
    /// The metrics of shared IPCs `shared` against alone IPCs `alone` (one per core, same order;
    /// a zero shared IPC counts as an unbounded slowdown, bounded at 1e12).
    pub fn of(shared: &[f64], alone: &[f64]) -> MixMetrics {
        let speedups: Vec<f64> = shared.iter().zip(alone).map(|(s, a)| s / a).collect();
        let slowdowns: Vec<f64> = speedups.iter().map(|v| 1.0 / v.max(1e-12)).collect();
        MixMetrics {
            weighted_speedup: speedups.iter().sum(),
            instruction_throughput: shared.iter().sum(),
            harmonic_speedup: speedups.len() as f64 / slowdowns.iter().sum::<f64>(),
            max_slowdown: slowdowns.iter().copied().fold(0.0, f64::max),
        }
    }
}

/// A mix's runs under the three mechanisms (in the order of `rowclone_apps::MECHANISMS`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MixResult {
    pub mix: Mix,
    /// The applications' alone IPCs (the baseline's).
    pub alone_ipc: Vec<f64>,
    pub runs: Vec<MixRun>,
}

/// How much further each core of a mix starts its memory than the previous core's `stride`: one
/// 4 KB page. An operating system gives each process physical pages of its own, and nothing lines
/// up the k-th page of two programs on one channel and bank. At exactly `stride` (512 MB) apart, a
/// multiple of the 64 KB over which the row-interleaved mapping cycles the 2 channels x 8 banks, it
/// did: two copies of one application in a mix (the same program, the same seed) ran in step on
/// one bank, a row conflict at every access, and slowed each other up to 1.9 times on 2 cores
/// (cactusADM twice; alone on the system they are not slowed at all).
pub const PLACEMENT_SHIFT: u64 = 4096;

/// The multi-core platform of a mix: `rowclone-multicore` with the overrides and `mechanism`
/// (a `copy.mechanism`), one core per application, each in its own `stride` of memory, core `i`
/// `i` pages further ([`PLACEMENT_SHIFT`]).
pub fn mix_platform(
    cores: u32,
    overrides: &toml::Value,
    mechanism: &str,
) -> Result<crate::config::platform::PlatformConfig, PlatformError> {
    let mut cfg = rowclone_apps::mechanism_platform("rowclone-multicore", overrides, mechanism)?;
    let stride = cfg.cores.first().map_or(0x2000_0000, |g| g.stride);
    cfg.cores = (0..cores)
        .map(|i| CoreGroup {
            count: 1,
            offset: u64::from(i) * (stride + PLACEMENT_SHIFT),
            ..Default::default()
        })
        .collect();
    Ok(cfg)
}

/// An application's endless program, the application overrides applied to a
/// copy/initialisation-intensive one.
fn program(a: &App, o: &AppOptions) -> Result<crate::config::workload::Workload, PlatformError> {
    let none = BTreeMap::new();
    a.workload(
        ENDLESS,
        if a.copy_intensive() {
            &o.app_params
        } else {
            &none
        },
    )
}

/// An application's alone IPC, the reference of weighted speedup, harmonic speedup and maximum
/// slowdown: its IPC running alone on the mix's system (`rowclone-multicore`, with the
/// overrides; one core, the others idle) under the baseline, with the same functional warming,
/// warm-up and target as in a mix.
pub fn alone_ipc(app: &App, mo: &Options) -> Result<f64, PlatformError> {
    mo.check()?;
    let o = &mo.apps;
    let cfg = mix_platform(1, &o.overrides, "base")?;
    let w = program(app, o)?;
    let mut p = Platform::new(&cfg)?;
    p.set_functional_warming(mo.functional_warming);
    p.set_work_targets(o.warmup, vec![o.instructions])?;
    let s = p.run_programs(vec![w], &mut |_| {})?;
    Ok(s.per_core.first().map_or(0.0, core_ipc))
}

/// Runs `mix` under each mechanism; `alone` gives each application's alone IPC.
pub fn run_mix(
    mix: &Mix,
    o: &Options,
    alone: &BTreeMap<String, f64>,
) -> Result<MixResult, PlatformError> {
    let apps: Vec<App> = mix
        .apps
        .iter()
        .map(|n| rowclone_apps::app(n))
        .collect::<Result<_, _>>()?;
    let alone_ipc: Vec<f64> = mix
        .apps
        .iter()
        .map(|n| {
            alone.get(n).copied().filter(|v| *v > 0.0).ok_or_else(|| {
                PlatformError::config(
                    "rowclone-multicore",
                    "alone",
                    format!("no alone IPC for '{n}'"),
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let mut runs = Vec::new();
    for (label, mech) in rowclone_apps::MECHANISMS {
        let cfg = mix_platform(mix.cores, &o.apps.overrides, mech)?;
        let programs = apps
            .iter()
            .map(|a| program(a, &o.apps))
            .collect::<Result<Vec<_>, _>>()?;
        let mut p = Platform::new(&cfg)?;
        p.set_functional_warming(o.functional_warming);
        p.set_work_targets(o.apps.warmup, vec![o.apps.instructions; mix.cores as usize])?;
        let s = p.run_programs(programs, &mut |_| {})?;
        let ipc: Vec<f64> = s.per_core.iter().map(core_ipc).collect();
        let (bpi, epi) = own_targets_measure(&s)?;
        let m = MixMetrics::of(&ipc, &alone_ipc);
        runs.push(MixRun {
            mechanism: label.into(),
            weighted_speedup: m.weighted_speedup,
            instruction_throughput: m.instruction_throughput,
            harmonic_speedup: m.harmonic_speedup,
            max_slowdown: m.max_slowdown,
            bytes_per_instruction: bpi,
            energy_nj_per_instruction: epi,
            ipc,
        });
    }
    Ok(MixResult {
        mix: mix.clone(),
        alone_ipc,
        runs,
    })
}

/// Memory bandwidth and DRAM energy per instruction of a mix's run (Table 7's two last rows):
/// each core's channel bytes and DRAM energy from its warm-up to its own instruction target
/// (per-core accounting, `MemorySystem::set_owners`), summed over the cores, over the sum of
/// their measured instructions. A core past its target keeps running so that the others still
/// compete with it, but its traffic from then on is not counted (as the system window would).
pub fn own_targets_measure(s: &PlatformStats) -> Result<(f64, f64), PlatformError> {
    let (mut bytes, mut energy, mut work) = (0.0, 0.0, 0u64);
    for c in &s.per_core {
        let w = c.window.ok_or_else(|| {
            PlatformError::config(
                "rowclone-multicore",
                "cores",
                format!(
                    "core {} has no measurement of its own (no per-core accounting, or it never \
                     reached its warm-up)",
                    c.core
                ),
            )
        })?;
        bytes += w.channel_bytes as f64;
        energy += w.dram_energy_nj;
        work += w.work_instructions;
    }
    let n = work.max(1) as f64;
    Ok((bytes / n, energy / n))
}

/// One mix's improvements of a mechanism over the baseline (fractions).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Improvement {
    pub weighted_speedup_improvement: f64,
    pub instruction_throughput_improvement: f64,
    pub harmonic_speedup_improvement: f64,
    pub max_slowdown_reduction: f64,
    pub bandwidth_per_instruction_reduction: f64,
    pub energy_per_instruction_reduction: f64,
}

/// The improvement of `m` over the baseline run `b` of the same mix.
pub fn improvement(b: &MixRun, m: &MixRun) -> Improvement {
    let up = |x: f64, y: f64| if y > 0.0 { x / y - 1.0 } else { 0.0 };
    let down = |x: f64, y: f64| if y > 0.0 { 1.0 - x / y } else { 0.0 };
    Improvement {
        weighted_speedup_improvement: up(m.weighted_speedup, b.weighted_speedup),
        instruction_throughput_improvement: up(m.instruction_throughput, b.instruction_throughput),
        harmonic_speedup_improvement: up(m.harmonic_speedup, b.harmonic_speedup),
        max_slowdown_reduction: down(m.max_slowdown, b.max_slowdown),
        bandwidth_per_instruction_reduction: down(m.bytes_per_instruction, b.bytes_per_instruction),
        energy_per_instruction_reduction: down(
            m.energy_nj_per_instruction,
            b.energy_nj_per_instruction,
        ),
    }
}

/// Table 7's row for one core count and mechanism: the mean improvement over its mixes, and
/// Fig. 13's mean weighted speedup improvement by number of highly copy-intensive applications.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    pub cores: u32,
    /// "rowclone" or "rowclone-zi".
    pub mechanism: String,
    pub mixes: u32,
    #[serde(flatten)]
    pub mean: Improvement,
    /// Half-width of each mean's 95% confidence interval over the mixes (Student's t; zero with
    /// one mix): the mean is `mean +/- ci95`, the draw of mixes being the sample.
    pub ci95: Improvement,
    /// (highly copy-intensive applications in the mix, mixes, mean weighted speedup improvement).
    pub by_highly_intensive: Vec<(u32, u32, f64)>,
    /// (highly copy-intensive applications in the mix, half-width of the 95% confidence interval
    /// of that group's mean weighted speedup improvement; zero for a group of one mix): Fig. 13's
    /// groups hold few mixes in a small sample, and a trend between groups whose intervals
    /// overlap is not resolved by the sample.
    pub by_highly_intensive_ci95: Vec<(u32, f64)>,
}

/// Student's t for a two-sided 95% interval with `df` degrees of freedom: the table for 1 to 10,
/// then the Cornish-Fisher expansion around the normal quantile (within 0.002 of the table from
/// 11 on).
pub fn t975(df: usize) -> f64 {
    const T: [f64; 10] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    ];
    if df == 0 {
        return f64::NAN;
    }
    if df <= T.len() {
        return T[df - 1];
    }
    let z: f64 = 1.959_964;
    let d = df as f64;
    z + (z.powi(3) + z) / (4.0 * d)
        + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * d * d)
        + (3.0 * z.powi(7) + 19.0 * z.powi(5) + 17.0 * z.powi(3) - 15.0 * z) / (384.0 * d.powi(3))
}

/// Half-width of the 95% confidence interval of the mean of `xs` (0 with fewer than two values).
pub fn ci95(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n < 2 {
        return 0.0;
    }
    let m = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
    t975(n - 1) * (var / n as f64).sqrt()
}

/// Each metric of `imps` over the mixes reduced to one number by `f` (a mean, an interval).
fn per_metric(imps: &[Improvement], f: impl Fn(&[f64]) -> f64) -> Improvement {
    let col = |g: fn(&Improvement) -> f64| f(&imps.iter().map(g).collect::<Vec<_>>());
    Improvement {
        weighted_speedup_improvement: col(|i| i.weighted_speedup_improvement),
        instruction_throughput_improvement: col(|i| i.instruction_throughput_improvement),
        harmonic_speedup_improvement: col(|i| i.harmonic_speedup_improvement),
        max_slowdown_reduction: col(|i| i.max_slowdown_reduction),
        bandwidth_per_instruction_reduction: col(|i| i.bandwidth_per_instruction_reduction),
        energy_per_instruction_reduction: col(|i| i.energy_per_instruction_reduction),
    }
}

/// Table 7 and Fig. 13 rows from the mixes' results.
pub fn summarise(results: &[MixResult]) -> Vec<Row> {
    let mut cores: Vec<u32> = results.iter().map(|r| r.mix.cores).collect();
    cores.sort_unstable();
    cores.dedup();
    let mut rows = Vec::new();
    for c in cores {
        for (label, _) in &rowclone_apps::MECHANISMS[1..] {
            let mut imps = Vec::new();
            let mut by: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
            for r in results.iter().filter(|r| r.mix.cores == c) {
                let (Some(b), Some(m)) = (
                    r.runs.iter().find(|x| x.mechanism == "baseline"),
                    r.runs.iter().find(|x| x.mechanism == *label),
                ) else {
                    continue;
                };
                let i = improvement(b, m);
                by.entry(r.mix.highly_intensive)
                    .or_default()
                    .push(i.weighted_speedup_improvement);
                imps.push(i);
            }
            let n = imps.len().max(1) as f64;
            rows.push(Row {
                cores: c,
                mechanism: (*label).into(),
                mixes: imps.len() as u32,
                mean: per_metric(&imps, |xs| xs.iter().sum::<f64>() / n),
                ci95: per_metric(&imps, ci95),
                by_highly_intensive_ci95: by.iter().map(|(k, v)| (*k, ci95(v))).collect(),
                by_highly_intensive: by
                    .into_iter()
                    .map(|(k, v)| (k, v.len() as u32, v.iter().sum::<f64>() / v.len() as f64))
                    .collect(),
            });
        }
    }
    rows
}

/// Every mix of every core count, with alone IPCs computed once per application (baseline)
/// and reused; `progress(done, total)` after each run. Returns the per-mix results.
pub fn run(
    o: &Options,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<MixResult>, PlatformError> {
    o.check()?;
    let mut mixes = Vec::new();
    for &c in &o.cores {
        mixes.extend(draw_mixes(o.seed, c, o.mixes)?);
    }
    let mut names: Vec<&String> = mixes.iter().flat_map(|m| &m.apps).collect();
    names.sort();
    names.dedup();
    let total = names.len() + mixes.len();
    let mut done = 0;
    let mut alone = BTreeMap::new();
    for n in names {
        let a = rowclone_apps::app(n)?;
        alone.insert(n.clone(), alone_ipc(&a, o)?);
        done += 1;
        progress(done, total);
    }
    let mut out = Vec::new();
    for m in &mixes {
        out.push(run_mix(m, o, &alone)?);
        done += 1;
        progress(done, total);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_published_table() {
        // Two-sided 95% quantiles of Student's t (any statistics table).
        for (df, t) in [
            (1, 12.706),
            (5, 2.571),
            (10, 2.228),
            (11, 2.201),
            (20, 2.086),
            (30, 2.042),
        ] {
            assert!((t975(df) - t).abs() < 2e-3, "df {df}: {} vs {t}", t975(df));
        }
        for (df, t) in [(39, 2.023), (49, 2.010), (137, 1.977), (1000, 1.962)] {
            assert!((t975(df) - t).abs() < 2e-3, "df {df}: {} vs {t}", t975(df));
        }
    }

    #[test]
    fn confidence_interval_of_a_mean() {
        assert_eq!(ci95(&[0.3]), 0.0);
        assert!(ci95(&[0.2, 0.2, 0.2]) < 1e-12);
        // [1, 2, 3]: s = 1, s / sqrt(3), t(2) = 4.303.
        assert!((ci95(&[1.0, 2.0, 3.0]) - 4.303 / 3f64.sqrt()).abs() < 1e-9);
        // Four times the mixes halve the interval's width (for the same spread, large n).
        let a: Vec<f64> = (0..100).map(|i| f64::from(i % 10)).collect();
        let b: Vec<f64> = (0..400).map(|i| f64::from(i % 10)).collect();
        let r = ci95(&a) / ci95(&b);
        assert!((r - 2.0).abs() < 0.05, "{r}");
    }

    #[test]
    fn mix_metrics_follow_the_cited_definitions() {
        // Two cores: alone IPCs 1.0 and 2.0, shared 0.5 and 1.5: speedups 0.5 and 0.75,
        // slowdowns 2 and 4/3.
        let m = MixMetrics::of(&[0.5, 1.5], &[1.0, 2.0]);
        assert!((m.weighted_speedup - 1.25).abs() < 1e-12);
        assert!((m.instruction_throughput - 2.0).abs() < 1e-12);
        assert!((m.harmonic_speedup - 2.0 / (2.0 + 4.0 / 3.0)).abs() < 1e-12);
        assert!((m.max_slowdown - 2.0).abs() < 1e-12);
        // Every core at its alone IPC: weighted speedup = cores, harmonic speedup = maximum
        // slowdown = 1, throughput = the alone IPCs' sum.
        let alone = [0.12, 1.95, 1.08, 0.86];
        let m = MixMetrics::of(&alone, &alone);
        assert!((m.weighted_speedup - 4.0).abs() < 1e-12);
        assert!((m.harmonic_speedup - 1.0).abs() < 1e-12);
        assert!((m.max_slowdown - 1.0).abs() < 1e-12);
        assert!((m.instruction_throughput - alone.iter().sum::<f64>()).abs() < 1e-12);
        // Throughput weighs a gain by IPC, weighted speedup by 1 / alone IPC: the same 50% gain
        // of the slow application moves weighted speedup by 0.5 and throughput by 0.06.
        let b = MixMetrics::of(&[0.12, 1.95], &[0.12, 1.95]);
        let g = MixMetrics::of(&[0.18, 1.95], &[0.12, 1.95]);
        assert!((g.weighted_speedup - b.weighted_speedup - 0.5).abs() < 1e-12);
        assert!((g.instruction_throughput - b.instruction_throughput - 0.06).abs() < 1e-12);
        // A core faster than alone does not lower the maximum below the others' slowdowns.
        let m = MixMetrics::of(&[2.0, 0.8], &[1.0, 1.0]);
        assert!((m.max_slowdown - 1.25).abs() < 1e-12);
        // A stalled core is an unbounded (bounded at 1e12) slowdown, not a division by zero.
        let m = MixMetrics::of(&[0.0, 1.0], &[1.0, 1.0]);
        assert!(m.max_slowdown >= 1e12 && m.harmonic_speedup.is_finite());
    }

    #[test]
    fn two_core_mixes_are_every_pair_once_and_a_sample_is_balanced() {
        let all = rowclone_apps::apps().unwrap();
        let class: BTreeMap<&str, (bool, bool)> = all
            .iter()
            .map(|a| {
                (
                    a.name.as_str(),
                    (a.copy_intensive(), a.highly_copy_intensive()),
                )
            })
            .collect();
        let (c, m) = (
            all.iter().filter(|a| a.copy_intensive()).count(),
            all.iter().filter(|a| !a.copy_intensive()).count(),
        );
        // Table 6: six copy/initialisation-intensive and 23 memory-intensive applications; the
        // paper's 138 two-core workloads are their pairs.
        assert_eq!((c, m), (6, 23));
        for seed in [7, 3] {
            let ms = draw_mixes(seed, 2, 138).unwrap();
            let pairs: std::collections::BTreeSet<(String, String)> = ms
                .iter()
                .map(|x| (x.apps[0].clone(), x.apps[1].clone()))
                .collect();
            assert_eq!(pairs.len(), 138, "seed {seed}: every pair once");
            for x in &ms {
                let (copy, highly) = class[x.apps[0].as_str()];
                assert!(copy && !class[x.apps[1].as_str()].0);
                assert_eq!(x.highly_intensive, u32::from(highly));
            }
            // A mix does not depend on how many are drawn.
            assert_eq!(draw_mixes(seed, 2, 24).unwrap()[..], ms[..24]);
            // The default sample of 24: each copy-intensive application four times, all 23
            // memory-intensive ones, half the mixes with a highly copy-intensive application.
            let mut per_copy: BTreeMap<&str, u32> = BTreeMap::new();
            let mut mems = std::collections::BTreeSet::new();
            for x in &ms[..24] {
                *per_copy.entry(x.apps[0].as_str()).or_default() += 1;
                mems.insert(x.apps[1].as_str());
            }
            assert!(per_copy.values().all(|&k| k == 4), "{per_copy:?}");
            assert_eq!(mems.len(), 23);
            assert_eq!(ms[..24].iter().map(|x| x.highly_intensive).sum::<u32>(), 12);
        }
        assert_ne!(draw_mixes(7, 2, 24).unwrap(), draw_mixes(3, 2, 24).unwrap());
        let e = draw_mixes(7, 2, 139).unwrap_err().to_string();
        assert!(
            e.contains("139 two-core mixes") && e.contains("at most"),
            "{e}"
        );
        // Four cores: drawn, half of each class.
        for x in draw_mixes(7, 4, 20).unwrap() {
            let copies = x.apps.iter().filter(|n| class[n.as_str()].0).count();
            assert_eq!(copies, 2);
        }
    }

    /// Whether each copy/initialisation-intensive application is highly copy-intensive.
    fn highly_by_name(all: &[App]) -> BTreeMap<&str, bool> {
        all.iter()
            .filter(|a| a.copy_intensive())
            .map(|a| (a.name.as_str(), a.highly_copy_intensive()))
            .collect()
    }

    #[test]
    fn larger_mixes_draw_each_class_with_repetition_and_count_the_highly_intensive() {
        // Section 7.4: each class's benchmarks "chosen at random"; Fig. 13 groups 8-core mixes by
        // 0 to 4 highly copy-intensive applications, and 0 needs four copy/initialisation-intensive
        // slots from the three moderate ones, so an application may repeat within a mix.
        let all = rowclone_apps::apps().unwrap();
        let highly = highly_by_name(&all);
        let ms = draw_mixes(7, 8, 400).unwrap();
        let mut groups = std::collections::BTreeSet::new();
        let mut repeated = false;
        for m in &ms {
            assert_eq!(m.apps.len(), 8);
            let copy: Vec<&str> = m.apps[..4].iter().map(String::as_str).collect();
            assert!(copy.iter().all(|n| highly.contains_key(n)), "{:?}", m.apps);
            assert!(
                m.apps[4..].iter().all(|n| !highly.contains_key(n.as_str())),
                "{:?}",
                m.apps
            );
            let h = copy.iter().filter(|n| highly[**n]).count() as u32;
            assert_eq!(m.highly_intensive, h, "{:?}", m.apps);
            groups.insert(h);
            repeated |= (1..4).any(|i| copy[..i].contains(&copy[i]));
        }
        assert!(
            repeated,
            "no 8-core mix repeats a copy-intensive application"
        );
        assert_eq!(groups.into_iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn larger_mixes_deal_every_application_to_every_slot_equally_often() {
        let all = rowclone_apps::apps().unwrap();
        let highly = highly_by_name(&all);
        let (c, m) = (highly.len(), all.len() - highly.len());
        for (cores, seed) in [(4u32, 7u64), (8, 7), (8, 3)] {
            let h = (cores / 2) as usize;
            // Rounds: c x m mixes is a whole number of rounds of both classes' decks.
            let ms = draw_mixes(seed, cores, (c * m) as u32).unwrap();
            for slot in 0..cores as usize {
                let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
                for x in &ms {
                    *seen.entry(x.apps[slot].as_str()).or_default() += 1;
                }
                let (apps, each) = if slot < h { (c, m) } else { (m, c) };
                assert_eq!(seen.len(), apps, "{cores} cores, slot {slot}: {seen:?}");
                assert!(
                    seen.values().all(|&k| k == each),
                    "{cores} cores, slot {slot}: {seen:?}"
                );
            }
            // Every round of c mixes holds half of its copy slots highly copy-intensive (Table
            // 6's three of six), so a sample's mean count is the population's cores / 4.
            for round in ms.chunks(c) {
                let n: u32 = round.iter().map(|x| x.highly_intensive).sum();
                assert_eq!(n as usize, h * c / 2, "{cores} cores: {round:?}");
            }
            // Each mix still draws its slots independently (repetition within a mix and every
            // Fig. 13 group: the test above).
            // A mix does not depend on how many are drawn.
            assert_eq!(draw_mixes(seed, cores, 9).unwrap()[..], ms[..9]);
        }
        assert_ne!(draw_mixes(7, 8, 7).unwrap(), draw_mixes(3, 8, 7).unwrap());
    }

    fn run(mechanism: &str, ws: f64) -> MixRun {
        MixRun {
            mechanism: mechanism.into(),
            ipc: vec![ws / 2.0; 2],
            weighted_speedup: ws,
            instruction_throughput: ws,
            harmonic_speedup: ws,
            max_slowdown: 1.0 / ws,
            bytes_per_instruction: 1.0 / ws,
            energy_nj_per_instruction: 1.0 / ws,
        }
    }

    #[test]
    fn summary_rows_are_the_mean_and_interval_of_the_mixes() {
        // Three 2-core mixes whose RowClone-ZI weighted speedup is 10%, 20% and 60% over the baseline.
        let results: Vec<MixResult> = [1.1, 1.2, 1.6]
            .iter()
            .enumerate()
            .map(|(k, &g)| MixResult {
                mix: Mix {
                    cores: 2,
                    index: k as u32,
                    apps: vec!["a".into(), "b".into()],
                    highly_intensive: (k % 2) as u32,
                },
                alone_ipc: vec![1.0, 1.0],
                runs: vec![
                    run("baseline", 1.0),
                    run("rowclone", 1.0),
                    run("rowclone-zi", g),
                ],
            })
            .collect();
        let rows = summarise(&results);
        let zi = rows.iter().find(|r| r.mechanism == "rowclone-zi").unwrap();
        let ws = [0.1, 0.2, 0.6];
        let mean = 0.3;
        let sd = (ws
            .iter()
            .map(|x: &f64| (x - mean) * (x - mean))
            .sum::<f64>()
            / 2.0)
            .sqrt();
        assert_eq!(zi.mixes, 3);
        assert!((zi.mean.weighted_speedup_improvement - mean).abs() < 1e-12);
        assert!((zi.ci95.weighted_speedup_improvement - 4.303 * sd / 3f64.sqrt()).abs() < 1e-12);
        // Maximum slowdown 1/g: reductions 1 - 1/g.
        let ms: Vec<f64> = [1.1, 1.2, 1.6]
            .iter()
            .map(|g: &f64| 1.0 - 1.0 / g)
            .collect();
        assert!((zi.mean.max_slowdown_reduction - ms.iter().sum::<f64>() / 3.0).abs() < 1e-12);
        assert!((zi.ci95.max_slowdown_reduction - ci95(&ms)).abs() < 1e-12);
        let rc = rows.iter().find(|r| r.mechanism == "rowclone").unwrap();
        assert_eq!(rc.mean, Improvement::default());
        assert_eq!(rc.ci95, Improvement::default());
        assert_eq!(zi.by_highly_intensive.len(), 2);
        // Fig. 13's groups: mixes 0 and 2 have no highly copy-intensive application (10% and
        // 60%), mix 1 has one (20%): the group of two has the interval of its two values, the
        // group of one none.
        assert_eq!(zi.by_highly_intensive[0].1, 2);
        assert!((zi.by_highly_intensive[0].2 - 0.35).abs() < 1e-12);
        assert_eq!(zi.by_highly_intensive_ci95.len(), 2);
        assert!((zi.by_highly_intensive_ci95[0].1 - ci95(&[0.1, 0.6])).abs() < 1e-12);
        assert!(zi.by_highly_intensive_ci95[0].1 > 0.0);
        assert_eq!(zi.by_highly_intensive_ci95[1], (1, 0.0));
    }
}
