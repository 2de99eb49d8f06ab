//! RowClone's copy/initialisation-intensive applications (Seshadri et al., MICRO 2013, section
//! 7.3): each of the six applications of Table 4 alone on the paper's system, under the baseline,
//! RowClone and RowClone-ZI: its IPC (Fig. 11) and the reduction of DRAM energy and memory
//! bandwidth (Table 5), beside the paper's values; and under section 7.5's memory-controller-based
//! DMA (MC-DMA), the alternative that does the same bulk operations over the channel. Also the
//! applications themselves (the six and the memory-intensive programs standing for Table 6's SPEC
//! CPU2006 applications), which `rowclone_multicore` mixes, and the alone runs it measures weighted
//! speedup against.
//!
//! Method: each application runs a warm-up of `warmup` program instructions, then `instructions`
//! more, measured (`Platform::set_work_targets`). A program instruction counts a copy or a
//! zeroing as one instruction whatever runs it (the paper's traces mark one `memcpy`/`memset`
//! instruction), so IPC compares the same work under every mechanism. Energy and bandwidth are
//! per program instruction over the measured window, with the write-backs the caches owe at its
//! ends counted, and the reductions are `1 - mechanism / baseline`.
use super::platform;
use crate::config::workload::Workload;
use crate::sim::error::PlatformError;
use crate::stats::PlatformStats;
use crate::systems::platform::Platform;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The applications: parameter sets of the two programs below.
pub const APPS_TOML: &str = include_str!("../../../../presets/workloads/rowclone-apps/apps.toml");
const COPY_INIT_TOML: &str =
    include_str!("../../../../presets/workloads/rowclone-apps/copy-init-app.toml");
const MEMORY_TOML: &str =
    include_str!("../../../../presets/workloads/rowclone-apps/memory-intensive.toml");
const APPS_SRC: &str = "presets/workloads/rowclone-apps/apps.toml";

/// The three mechanisms compared: (row label, `copy.mechanism`).
pub const MECHANISMS: [(&str, &str); 3] = [
    ("baseline", "base"),
    ("rowclone", "rowclone"),
    ("rowclone-zi", "rowclone-zi"),
];

/// The mechanisms each application runs under alone (section 7.3, and section 7.5's MC-DMA):
/// row labels, each a platform of [`label_platform`].
pub const APP_MECHANISMS: [&str; 4] = ["baseline", "rowclone", "rowclone-zi", "mc-dma"];

/// Section 7.5's MC-DMA as the applications run it: the memory controller takes the bulk
/// operations RowClone takes (page copies and zeroing) and moves every line over the channel,
/// with RowClone's coherence actions. The applications' non-zero line fills (forkbench's parent
/// writing its array) are ordinary writes the core makes under every mechanism, not bulk
/// operations: `copy.mechanism = "mc-dma"` alone would take them too (it can fill with any value).
pub const MC_DMA_BULK: &str = "copy = { mechanism = \"base\" }\n\
    agents = [{ kind = \"in-memory\", takes = [\"copy\", \"zero\"], params = { mechanism = \"mc-dma\" } }]";

/// Most program instructions a run may measure (or warm up) per core.
pub const MAX_INSTRUCTIONS: u64 = 1 << 32;

/// A memory-intensive program's character (the `spec` table of `apps.toml`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MemoryCharacter {
    /// Last-level-cache misses per 1,000 instructions.
    pub mpki: u64,
    pub footprint_mb: u64,
    /// "stream", "random" or "chase".
    pub pattern: String,
    /// Percentage of the misses that are writes.
    pub write_pct: u64,
}

/// One application of `apps.toml`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct App {
    pub name: String,
    /// "copy-init-app" or "memory-intensive".
    pub program: String,
    /// "high" or "moderate" (copy/initialisation-intensive, section 7.4) or "memory".
    pub class: String,
    #[serde(default)]
    pub stands_for: String,
    #[serde(default)]
    pub params: BTreeMap<String, u64>,
    #[serde(default)]
    pub spec: Option<MemoryCharacter>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AppsFile {
    app: Vec<App>,
}

impl App {
    /// Copy/initialisation-intensive (Table 4), as opposed to memory-intensive (Table 6).
    pub fn copy_intensive(&self) -> bool {
        self.class != "memory"
    }

    /// Highly copy/initialisation-intensive (bootup, forkbench, shell: section 7.4, Fig. 13).
    pub fn highly_copy_intensive(&self) -> bool {
        self.class == "high"
    }

    /// The program's parameters (a memory-intensive program's derived from its character).
    pub fn parameters(&self) -> Result<BTreeMap<String, u64>, PlatformError> {
        let mut p = self.params.clone();
        if let Some(c) = &self.spec {
            let place = format!("app {} spec", self.name);
            if !(1..=500).contains(&c.mpki) || c.write_pct > 100 {
                return Err(PlatformError::config(
                    APPS_SRC,
                    place,
                    "mpki must be 1 to 500 and write_pct at most 100",
                ));
            }
            if !(1..=256).contains(&c.footprint_mb) {
                return Err(PlatformError::config(
                    APPS_SRC,
                    place,
                    "footprint_mb must be 1 to 256 (each core of an 8-core system has 512 MB)",
                ));
            }
            let writes = (c.mpki * c.write_pct + 50) / 100;
            let reads = c.mpki - writes;
            let (stream, random, chase) = match c.pattern.as_str() {
                "stream" => (reads, 0, 0),
                "random" => (0, reads, 0),
                "chase" => (0, 0, reads),
                other => {
                    return Err(PlatformError::config(
                        APPS_SRC,
                        place,
                        format!("pattern '{other}' is not one of stream, random, chase"),
                    ))
                }
            };
            let gap = (1000 - c.mpki) / c.mpki;
            for (k, v) in [
                ("stream", stream),
                ("random", random),
                ("chase", chase),
                ("writes", writes),
                ("gap", gap),
                ("rest", 1000 - c.mpki - gap * c.mpki),
                ("footprint_mb", c.footprint_mb),
            ] {
                p.insert(k.to_string(), v);
            }
        }
        Ok(p)
    }

    /// The application as a workload that runs `units` units (`overrides` layered on its
    /// parameters).
    pub fn workload(
        &self,
        units: u64,
        overrides: &BTreeMap<String, u64>,
    ) -> Result<Workload, PlatformError> {
        let text = match self.program.as_str() {
            "copy-init-app" => COPY_INIT_TOML,
            "memory-intensive" => MEMORY_TOML,
            other => {
                return Err(PlatformError::config(
                    APPS_SRC,
                    format!("app {}", self.name),
                    format!("program '{other}' is not copy-init-app or memory-intensive"),
                ))
            }
        };
        let mut p = self.parameters()?;
        p.extend(overrides.iter().map(|(k, v)| (k.clone(), *v)));
        p.insert("units".into(), units);
        let src = format!("presets/workloads/rowclone-apps/{}.toml", self.program);
        let mut w = Workload::from_toml_str(text, &src, &p)?;
        w.spec.name = self.name.clone();
        Ok(w)
    }
}

/// The applications of `apps.toml`, checked.
pub fn apps() -> Result<Vec<App>, PlatformError> {
    let f: AppsFile = toml::from_str(APPS_TOML)
        .map_err(|e| PlatformError::config(APPS_SRC, "(syntax)", e.to_string()))?;
    for a in &f.app {
        if !matches!(a.class.as_str(), "high" | "moderate" | "memory")
            || (a.class == "memory") != (a.program == "memory-intensive")
        {
            return Err(PlatformError::config(
                APPS_SRC,
                format!("app {}", a.name),
                "class must be high or moderate (copy-init-app) or memory (memory-intensive)",
            ));
        }
        a.workload(1, &BTreeMap::new())?;
    }
    Ok(f.app)
}

/// An application by name.
pub fn app(name: &str) -> Result<App, PlatformError> {
    let all = apps()?;
    all.iter()
        .find(|a| a.name == name)
        .cloned()
        .ok_or_else(|| PlatformError::Unknown {
            kind: "application",
            name: name.into(),
            known: all
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Units a run gets: more than it can use (the run stops at its instruction target).
pub const ENDLESS: u64 = 1 << 40;

/// Run lengths and what every run shares.
#[derive(Debug, Clone)]
pub struct Options {
    /// Program instructions measured per application.
    pub instructions: u64,
    /// Program instructions run first, unmeasured (caches filled).
    pub warmup: u64,
    /// Overrides of the platform (a TOML table shaped like a platform config).
    pub overrides: toml::Value,
    /// Overrides of every copy/initialisation-intensive application's parameters (e.g.
    /// `copies = 0, zeros = 0` removes its copies and zeroing).
    pub app_params: BTreeMap<String, u64>,
    /// The applications to run (empty: the six of Table 4).
    pub apps: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            instructions: 100_000,
            warmup: 50_000,
            overrides: toml::Value::Table(Default::default()),
            app_params: BTreeMap::new(),
            apps: Vec::new(),
        }
    }
}

impl Options {
    pub fn check(&self) -> Result<(), PlatformError> {
        if !(1..=MAX_INSTRUCTIONS).contains(&self.instructions) || self.warmup > MAX_INSTRUCTIONS {
            return Err(PlatformError::config(
                "rowclone-apps",
                "instructions",
                format!("instructions must be 1 to {MAX_INSTRUCTIONS} and warmup at most that"),
            ));
        }
        if let Some((k, v)) = self.app_params.iter().find(|(_, v)| **v > MAX_APP_PARAM) {
            return Err(PlatformError::config(
                "rowclone-apps",
                format!("app_params.{k}"),
                format!("{v}: an application parameter is at most {MAX_APP_PARAM}"),
            ));
        }
        Ok(())
    }
}

/// Largest value of an application parameter override (a unit's instruction and page counts:
/// a unit is generated whole, so its size is bounded).
pub const MAX_APP_PARAM: u64 = 1_000_000;

/// What one run measured, over its window.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Measure {
    /// Program instructions per cycle of each core, over its own measured instructions.
    pub ipc: f64,
    /// Over the system's window: bytes over the channels, of them copies' and initialisation's,
    /// and DRAM energy, per program instruction.
    pub bytes_per_instruction: f64,
    pub copy_bytes_per_instruction: f64,
    pub energy_nj_per_instruction: f64,
}

/// The window figures of a run.
pub fn window_measure(s: &PlatformStats) -> Measure {
    let w = s.window.unwrap_or_default();
    let n = w.work_instructions.max(1) as f64;
    let ipcs: Vec<f64> = s.per_core.iter().map(core_ipc).collect();
    Measure {
        ipc: if ipcs.is_empty() {
            0.0
        } else {
            ipcs.iter().sum::<f64>() / ipcs.len() as f64
        },
        bytes_per_instruction: w.channel_bytes as f64 / n,
        copy_bytes_per_instruction: w.copy_bytes as f64 / n,
        energy_nj_per_instruction: w.dram_energy_nj / n,
    }
}

/// A core's IPC over its measured instructions.
pub fn core_ipc(c: &crate::stats::CoreStats) -> f64 {
    if c.target_cycles == 0 {
        return 0.0;
    }
    // A program that ended before its target measured fewer instructions.
    let measured = c.target_instructions.min(c.work_instructions);
    measured as f64 / c.target_cycles as f64
}

/// `mechanism`'s platform: the preset with the options' overrides and the mechanism set.
pub fn mechanism_platform(
    preset: &str,
    o: &toml::Value,
    mechanism: &str,
) -> Result<crate::config::platform::PlatformConfig, PlatformError> {
    platform(
        preset,
        o,
        &format!("copy = {{ mechanism = \"{mechanism}\" }}"),
    )
}

/// The platform of a row label of [`APP_MECHANISMS`] on `preset`: "baseline" the core's copies,
/// "mc-dma" [`MC_DMA_BULK`], the others their `copy.mechanism`.
pub fn label_platform(
    preset: &str,
    o: &toml::Value,
    label: &str,
) -> Result<crate::config::platform::PlatformConfig, PlatformError> {
    match label {
        "baseline" => mechanism_platform(preset, o, "base"),
        "mc-dma" => platform(preset, o, MC_DMA_BULK),
        other => mechanism_platform(preset, o, other),
    }
}

/// One application alone on the single-core system under `mechanism` (a `copy.mechanism`).
pub fn alone(app: &App, mechanism: &str, o: &Options) -> Result<Measure, PlatformError> {
    let cfg = mechanism_platform("rowclone-system", &o.overrides, mechanism)?;
    alone_on(app, &cfg, o)
}

/// One application alone under a row label of [`APP_MECHANISMS`].
pub fn alone_as(app: &App, label: &str, o: &Options) -> Result<Measure, PlatformError> {
    let cfg = label_platform("rowclone-system", &o.overrides, label)?;
    alone_on(app, &cfg, o)
}

fn alone_on(
    app: &App,
    cfg: &crate::config::platform::PlatformConfig,
    o: &Options,
) -> Result<Measure, PlatformError> {
    let params = if app.copy_intensive() {
        o.app_params.clone()
    } else {
        BTreeMap::new()
    };
    let w = app.workload(ENDLESS, &params)?;
    let mut p = Platform::new(cfg)?;
    p.set_work_targets(o.warmup, vec![o.instructions])?;
    let s = p.run(&w)?;
    Ok(window_measure(&s))
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    pub app: String,
    /// "baseline", "rowclone", "rowclone-zi" or "mc-dma".
    pub mechanism: String,
    /// Program instructions per cycle (Fig. 11).
    pub ipc: f64,
    /// IPC over the baseline's.
    pub speedup: f64,
    /// 1 - DRAM energy per instruction / the baseline's (Table 5).
    pub energy_reduction: f64,
    /// 1 - bytes over the channels per instruction / the baseline's (Table 5).
    pub bandwidth_reduction: f64,
    /// Of the baseline's memory traffic, the fraction copies and initialisation caused (Fig. 10).
    pub copy_init_fraction: f64,
    pub bytes_per_instruction: f64,
    pub energy_nj_per_instruction: f64,
}

/// The rows of one application's runs, given its measures under the mechanisms in the order of
/// [`APP_MECHANISMS`]. (The paper's values are added by the Python layer, from
/// `presets/papers/rowclone.toml`.)
pub fn rows_of(app: &str, m: &[Measure; 4]) -> Vec<Row> {
    let b = m[0];
    let red = |v: f64, base: f64| if base > 0.0 { 1.0 - v / base } else { 0.0 };
    APP_MECHANISMS
        .iter()
        .zip(m)
        .map(|(name, x)| Row {
            app: app.into(),
            mechanism: (*name).into(),
            ipc: x.ipc,
            speedup: if b.ipc > 0.0 { x.ipc / b.ipc } else { 0.0 },
            energy_reduction: red(x.energy_nj_per_instruction, b.energy_nj_per_instruction),
            bandwidth_reduction: red(x.bytes_per_instruction, b.bytes_per_instruction),
            copy_init_fraction: if b.bytes_per_instruction > 0.0 {
                b.copy_bytes_per_instruction / b.bytes_per_instruction
            } else {
                0.0
            },
            bytes_per_instruction: x.bytes_per_instruction,
            energy_nj_per_instruction: x.energy_nj_per_instruction,
        })
        .collect()
}

/// Runs the applications; `progress(done, total)` after each run.
pub fn run(o: &Options, progress: &mut dyn FnMut(usize, usize)) -> Result<Vec<Row>, PlatformError> {
    o.check()?;
    let all = apps()?;
    let chosen: Vec<App> = if o.apps.is_empty() {
        all.into_iter().filter(App::copy_intensive).collect()
    } else {
        o.apps.iter().map(|n| app(n)).collect::<Result<_, _>>()?
    };
    let total = chosen.len() * APP_MECHANISMS.len();
    let mut done = 0;
    let mut rows = Vec::new();
    for a in &chosen {
        let mut m = [Measure::default(); 4];
        for (k, label) in APP_MECHANISMS.iter().enumerate() {
            m[k] = alone_as(a, label, o)?;
            done += 1;
            progress(done, total);
        }
        rows.extend(rows_of(&a.name, &m));
    }
    Ok(rows)
}
