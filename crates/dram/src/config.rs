//! Simulation configuration: which DRAM (speed bin, part, organisation, overrides), how the memory
//! controller drives it, and the energy model's channel parameter.
//!
//! A config is TOML (a file, a built-in preset, or a dict from Python) layered as
//! built-in preset <- user file <- overrides. Every key is checked: an unknown key or a bad value
//! names the source and the key.
use crate::error::ConfigError;
use crate::spec::{builtin_standards, resolve_rules, DramSpec, Organization};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The built-in configuration presets (`presets/configs/*.toml`).
pub const BUILTIN_CONFIGS: &[(&str, &str)] = &[
    (
        "ddr3-1600k-bench",
        include_str!("../../../presets/configs/ddr3-1600k-bench.toml"),
    ),
    (
        "rowclone-ddr3-1066",
        include_str!("../../../presets/configs/rowclone-ddr3-1066.toml"),
    ),
    (
        "ddr4-2400r",
        include_str!("../../../presets/configs/ddr4-2400r.toml"),
    ),
    (
        "ddr4-3200aa-2ch",
        include_str!("../../../presets/configs/ddr4-3200aa-2ch.toml"),
    ),
    (
        "zhao-ddr2-400",
        include_str!("../../../presets/configs/zhao-ddr2-400.toml"),
    ),
    (
        "ddr5-3200an",
        include_str!("../../../presets/configs/ddr5-3200an.toml"),
    ),
    (
        "rowclone-ddr5-4800b",
        include_str!("../../../presets/configs/rowclone-ddr5-4800b.toml"),
    ),
    (
        "hbm2-2000",
        include_str!("../../../presets/configs/hbm2-2000.toml"),
    ),
    (
        "ddr5-4800b-sb",
        include_str!("../../../presets/configs/ddr5-4800b-sb.toml"),
    ),
    (
        "lpddr5-6400",
        include_str!("../../../presets/configs/lpddr5-6400.toml"),
    ),
    (
        "hbm3-6400",
        include_str!("../../../presets/configs/hbm3-6400.toml"),
    ),
    (
        "rowclone-lpddr5-6400",
        include_str!("../../../presets/configs/rowclone-lpddr5-6400.toml"),
    ),
    (
        "rowclone-hbm3-6400",
        include_str!("../../../presets/configs/rowclone-hbm3-6400.toml"),
    ),
    (
        "lpddr5-6400-bl32",
        include_str!("../../../presets/configs/lpddr5-6400-bl32.toml"),
    ),
    (
        "lpddr5-6400-8b",
        include_str!("../../../presets/configs/lpddr5-6400-8b.toml"),
    ),
    (
        "rowclone-lpddr5-6400-bl32",
        include_str!("../../../presets/configs/rowclone-lpddr5-6400-bl32.toml"),
    ),
    (
        "rowclone-lpddr5-6400-8b",
        include_str!("../../../presets/configs/rowclone-lpddr5-6400-8b.toml"),
    ),
    (
        "gddr6-14000",
        include_str!("../../../presets/configs/gddr6-14000.toml"),
    ),
    (
        "gddr7-28000",
        include_str!("../../../presets/configs/gddr7-28000.toml"),
    ),
    (
        "hbm4-8000",
        include_str!("../../../presets/configs/hbm4-8000.toml"),
    ),
    (
        "lpddr5-6400-wck",
        include_str!("../../../presets/configs/lpddr5-6400-wck.toml"),
    ),
    (
        "lpddr6-10667",
        include_str!("../../../presets/configs/lpddr6-10667.toml"),
    ),
    (
        "lpddr6-10667-bl48",
        include_str!("../../../presets/configs/lpddr6-10667-bl48.toml"),
    ),
];

/// A whole simulation configuration.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// A built-in preset this config starts from (already merged in by [`Config::from_value`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// What this configuration is.
    #[serde(default)]
    pub description: String,
    /// Where its values come from.
    #[serde(default)]
    pub source: String,
    pub dram: DramConfig,
    #[serde(default)]
    pub controller: ControllerConfig,
    #[serde(default)]
    pub energy: EnergyConfig,
}

/// The DRAM devices and their organisation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DramConfig {
    /// Speed bin name, e.g. "DDR3-1600K" (see `movelab dram presets`).
    pub speed: String,
    /// Part name, e.g. "DDR3-4Gb-x8".
    pub part: String,
    /// Memory channels, each with its own controller.
    #[serde(default = "one")]
    pub channels: u32,
    /// Ranks per channel.
    #[serde(default = "one")]
    pub ranks: u32,
    /// Organisation overrides: rows, columns, banks, bank_groups, subarray_rows.
    #[serde(default)]
    pub org: OrgOverrides,
    /// Timing overrides in clocks, by parameter name (nRCD, nRAS, nRFC, nREFI, ...).
    #[serde(default)]
    pub timing: BTreeMap<String, u64>,
    /// Current/voltage overrides by name (idd0, vdd, ...).
    #[serde(default)]
    pub currents: BTreeMap<String, f64>,
}

fn one() -> u32 {
    1
}

/// Organisation overrides; any left out come from the part and the standard.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OrgOverrides {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub columns: Option<u32>,
    /// Banks per rank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub banks: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bank_groups: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subarray_rows: Option<u32>,
}

/// The per-channel memory controller.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ControllerConfig {
    /// Command scheduler: "frfcfs" (ready row hits first, then oldest) or "fcfs" (oldest only).
    pub scheduler: String,
    /// Row policy: "open" (rows stay open until a conflict) or "closed" (auto-precharge when no
    /// queued request hits the row).
    pub row_policy: String,
    /// Read queue entries per channel.
    pub read_queue: usize,
    /// Write queue entries per channel.
    pub write_queue: usize,
    /// Enter write-drain mode when the write queue is fuller than this fraction (or reads run out).
    pub write_high_watermark: f64,
    /// Leave write-drain mode when the write queue falls below this fraction (and reads wait).
    pub write_low_watermark: f64,
    /// Refresh: "all-bank" (REF per rank every nREFI), "same-bank" (DDR5 REFSB: one bank index
    /// of every group at a time, each refreshed once per nREFI), "per-bank" (LPDDR5 / HBM2 / HBM3 REFPB:
    /// one bank at a time, each once per nREFI) or "none".
    pub refresh: String,
    /// Address mapper: "RoBaRaCoCh", "ChRaBaRoCo" or "line-interleave" (see docs/dram.md).
    pub mapper: String,
    /// XOR the bank index with low row bits (permutation-based interleaving) in the mapper.
    pub bank_xor: bool,
    /// Mechanism for bulk copy/init requests: "baseline" (data crosses the channel), "rowclone", or
    /// "multi-row-copy" (RowClone, and Multi-RowCopy for replication).
    pub bulk: String,
    /// Lines the controller's baseline copy engine reads before it writes them out (its stream
    /// buffer); 64 lines = one 4 KB page.
    pub bulk_buffer_lines: usize,
    /// When the part of a bulk operation that crosses the channel counts as done: "written" (its
    /// last write was performed in the DRAM) or "accepted" (its last read returned and its last
    /// write entered the controller's write queue: the controller holds the data from then on).
    /// Left out of the serialised config when it is the default, so existing digests hold.
    #[serde(skip_serializing_if = "is_written")]
    pub bulk_write_done: String,
    /// CPU request bypass (Zhao et al., IEEE TC 2007, section 5.4): requests from cores are
    /// scheduled ahead of copy-engine requests, except while the engine is below its guaranteed
    /// share. Off: every request is ranked by the scheduler alone.
    pub cpu_bypass: bool,
    /// The fraction of column commands (reads and writes) guaranteed to copy-engine requests when
    /// `cpu_bypass` is on and both kinds wait (the paper's fairness algorithm).
    pub engine_share: f64,
    /// A row activated for a request stays open, and that request is the bank's candidate, until
    /// its column command issues, whatever the queue mode (Ramulator 2's "active buffer"). Off:
    /// the bank offers whatever the current queue needs, so a switch to write drain can close a
    /// row before the read that opened it was served.
    pub keep_activated_rows: bool,
    /// Refresh management (DDR5, HBM3 parts that require it): the controller counts each
    /// bank's activations (RAA) and issues an all-bank RFM when one reaches RAAIMT. Off: the
    /// device is treated as not requiring RFM (DDR5 MR58 OP[0] = 0), to compare. No effect on
    /// parts without refresh management.
    pub rfm: bool,
    /// Which refresh management command the controller owes when a bank's count reaches RAAIMT:
    /// "all-bank" (RFM: every bank of the rank), "same-bank" (DDR5 RFMsb: the bank's index in
    /// every bank group) or "per-bank" (HBM3 / HBM4 RFMpb: the bank alone). Left out of the
    /// serialised config when it is the default, so existing digests hold.
    #[serde(skip_serializing_if = "is_all_bank")]
    pub rfm_scope: String,
    /// DDR5's refresh mode (JESD79-5 REF mode): "normal" (mode 1: REF every tREFI, held for
    /// tRFC1) or "fine-granularity" (mode 2: REF every tREFI / 2, held for tRFC2; see
    /// `refresh_mode`). Left out of the serialised config when it is the default, so existing
    /// digests hold.
    #[serde(skip_serializing_if = "is_normal_refresh")]
    pub refresh_mode: String,
    /// LPDDR5's data clock (WCK): "always-on" (WCK kept synchronised, no CAS command) or
    /// "auto-sync-off" (JESD209-5 auto sync-off mode: the WCK stops after a column command's
    /// burst and postamble, and the controller issues a CAS with WS_RD / WS_WR on the clock
    /// before the next read or write; see `wck`). Left out of the serialised config when it is
    /// the default, so existing digests hold.
    #[serde(skip_serializing_if = "is_always_on")]
    pub wck: String,
    /// In-DRAM copy as the part does it (support, per-row success; see `bulk::copy_reliability`).
    /// Left out of the serialised config when it is the default, so existing digests hold.
    #[serde(skip_serializing_if = "CopyConfig::is_default")]
    pub copy: CopyConfig,
}

/// `controller.wck`'s default: the WCK is kept synchronised.
pub const WCK_ALWAYS_ON: &str = "always-on";
/// `controller.wck` for JESD209-5's auto sync-off mode.
pub const WCK_AUTO_SYNC_OFF: &str = "auto-sync-off";

/// The values of `controller.bulk_write_done`; the first is the default.
pub const BULK_WRITE_DONE: [&str; 2] = ["written", "accepted"];

fn is_written(v: &str) -> bool {
    v == BULK_WRITE_DONE[0]
}

impl ControllerConfig {
    /// A bulk operation's channel part is done when its last write is accepted (not performed).
    pub fn bulk_done_at_acceptance(&self) -> bool {
        self.bulk_write_done == BULK_WRITE_DONE[1]
    }
}

/// `controller.rfm_scope`'s default: all-bank RFM.
pub const RFM_ALL_BANK: &str = "all-bank";

fn is_all_bank(v: &str) -> bool {
    v == RFM_ALL_BANK
}

fn is_normal_refresh(v: &str) -> bool {
    v == crate::refresh_mode::NORMAL
}

fn is_always_on(v: &str) -> bool {
    v == WCK_ALWAYS_ON
}

/// `controller.copy`: which part's in-DRAM copy behaviour a run assumes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CopyConfig {
    /// A part of `bulk::copy_reliability::CHIPS` ("ideal": every copy works).
    pub chip: String,
    /// Per-row success probability of an in-DRAM copy attempt, in [0.01, 1]; left out: the part's.
    pub success: Option<f64>,
    /// On a part that cannot copy in DRAM: "refuse" (a configuration error) or "baseline" (every
    /// bulk operation goes over the channel).
    pub on_unsupported: String,
    /// Seed of the failure draws.
    pub seed: u64,
}

impl Default for CopyConfig {
    fn default() -> Self {
        CopyConfig {
            chip: "ideal".into(),
            success: None,
            on_unsupported: "refuse".into(),
            seed: 0,
        }
    }
}

impl CopyConfig {
    fn is_default(&self) -> bool {
        *self == CopyConfig::default()
    }

    /// The copy model this configuration names (checked by `Config::resolve`).
    pub fn model(&self) -> crate::bulk::copy_chips::CopyModel {
        let chip =
            crate::bulk::copy_chips::chip(&self.chip).unwrap_or(&crate::bulk::copy_chips::CHIPS[0]);
        crate::bulk::copy_chips::CopyModel {
            supported: chip.supported,
            success: self.success.or(chip.success).unwrap_or(1.0),
            seed: self.seed,
        }
    }
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            scheduler: "frfcfs".into(),
            row_policy: "open".into(),
            read_queue: 64,
            write_queue: 64,
            write_high_watermark: 0.8,
            write_low_watermark: 0.2,
            refresh: "all-bank".into(),
            mapper: "RoBaRaCoCh".into(),
            bank_xor: false,
            bulk: "baseline".into(),
            bulk_buffer_lines: 64,
            bulk_write_done: BULK_WRITE_DONE[0].into(),
            cpu_bypass: false,
            engine_share: 0.25,
            keep_activated_rows: false,
            rfm: true,
            rfm_scope: RFM_ALL_BANK.into(),
            refresh_mode: crate::refresh_mode::NORMAL.into(),
            wck: WCK_ALWAYS_ON.into(),
            copy: CopyConfig::default(),
        }
    }
}

/// Energy-model parameters that are not device currents.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EnergyConfig {
    /// Energy of moving one bit over the memory channel (DRAM I/O drivers plus termination), pJ.
    /// Default: see docs/dram.md, "Energy".
    pub io_pj_per_bit: f64,
    /// DRAMPower's bank-wise factor rho in [0, 1]: how much of the all-banks-open background
    /// (IDD3N - IDD2N) one open bank already draws. 1 (the default) gives the classic IDD model.
    pub bank_rho: f64,
}

/// The largest request queue a controller may have.
pub const MAX_QUEUE: usize = 1 << 16;

/// The largest timing value an override may set (about a second at DDR speeds): larger ones can
/// only be typing errors, and they would overflow cycle arithmetic.
pub const MAX_TIMING_CLOCKS: u64 = 1 << 32;

/// The largest organisation a config may describe, each a bound a real system stays within (with
/// room to spare), so that a typo cannot make the simulator allocate state for millions of banks.
/// (key, largest value, what the bound stands for).
pub const ORG_LIMITS: &[(&str, u32, &str)] = &[
    (
        "dram.channels",
        256,
        "HBM3 on eight stacks has 8 x 32 pseudo-channels",
    ),
    ("dram.ranks", 16, "two 8-rank LRDIMMs on a channel"),
    ("dram.org.bank_groups", 16, "DDR5 has 8 bank groups"),
    (
        "dram.org.banks",
        128,
        "banks per rank: DDR5 and HBM3 have 32 to 64",
    ),
    (
        "dram.org.rows",
        1 << 20,
        "rows per bank: a 64 Gb DDR5 die has 2^17",
    ),
    (
        "dram.org.columns",
        1 << 16,
        "columns per row: parts have 2^10 to 2^11",
    ),
];

/// The most banks one simulation may model in all (channels x ranks x banks per rank).
pub const MAX_TOTAL_BANKS: u64 = 1 << 16;

/// Timing parameters that no physical device can have at zero (the array needs time to sense,
/// restore, precharge and refresh; a burst takes time); checked when the standard defines them.
pub const POSITIVE_TIMINGS: &[&str] = &[
    "tCK_ps", "nBL", "nREFI", "nRFC", "nCL", "nCWL", "nRCD", "nRP", "nRAS", "nRC", "nWR", "nRTP",
    "nRFCsb", "nRFCpb", "nRFM", "nRFMsb", "nRFMpb",
];

/// Default channel energy per bit, pJ. calibrated: fitted once to the RowClone paper's Table 3 (Seshadri et al.,
/// MICRO 2013): its baseline 4 KB copy costs 3.6 uJ of DRAM-plus-channel energy, of which this
/// model's IDD-based command energy (2 ACT, 1 PRE, 64 reads, 64 writes on the Micron 2Gb DDR3-1066
/// x8 currents) is 1.28 uJ; the remaining 2.32 uJ over the 65,536 bits that cross the channel is
/// 35 pJ/bit. Every other energy in that table is then a prediction (docs/dram.md, "Energy").
pub const DEFAULT_IO_PJ_PER_BIT: f64 = 35.0;

impl Default for EnergyConfig {
    fn default() -> Self {
        EnergyConfig {
            io_pj_per_bit: DEFAULT_IO_PJ_PER_BIT,
            bank_rho: 1.0,
        }
    }
}

fn known(names: impl Iterator<Item = String>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

/// The most bytes a configuration file may hold (a configuration is a few kilobytes).
pub const MAX_CONFIG_FILE_BYTES: u64 = 16 << 20;

/// The text of configuration file `path`: a regular file (a FIFO would block, a device such as
/// /dev/zero never ends) of at most [`MAX_CONFIG_FILE_BYTES`], in UTF-8. The error says what is
/// wrong, for the caller to name the file.
pub fn read_config_text(path: &std::path::Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if meta.is_dir() {
        return Err("a directory, not a file".into());
    }
    if !meta.is_file() {
        return Err("not a regular file (a FIFO or a device is not read)".into());
    }
    if meta.len() > MAX_CONFIG_FILE_BYTES {
        return Err(format!(
            "{} bytes: more than a configuration file may hold ({} MiB)",
            meta.len(),
            MAX_CONFIG_FILE_BYTES >> 20
        ));
    }
    std::fs::read_to_string(path).map_err(|e| e.to_string())
}

/// Recursively merges `over` into `base` (tables merge key by key; anything else replaces).
pub fn merge_toml(base: &mut toml::Value, over: toml::Value) {
    match (base, over) {
        (toml::Value::Table(b), toml::Value::Table(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(bv) => merge_toml(bv, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

/// Names of the built-in configuration presets.
pub fn builtin_config_names() -> Vec<&'static str> {
    BUILTIN_CONFIGS.iter().map(|(n, _)| *n).collect()
}

fn builtin_config_value(name: &str) -> Result<toml::Value, ConfigError> {
    let (_, text) = BUILTIN_CONFIGS
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| ConfigError::Unknown {
            kind: "config preset",
            name: name.into(),
            known: builtin_config_names().join(", "),
        })?;
    text.parse::<toml::Table>()
        .map(toml::Value::Table)
        .map_err(|e| ConfigError::Syntax {
            source_name: format!("presets/configs/{name}.toml"),
            what: e.to_string(),
        })
}

impl Config {
    /// A built-in preset by name, or "SPEED/PART" (e.g. "DDR3-1600K/DDR3-4Gb-x8") for one channel
    /// and one rank with default controller settings.
    pub fn preset(name: &str) -> Result<Config, ConfigError> {
        if let Some((speed, part)) = name.split_once('/') {
            let mut t = toml::Table::new();
            let mut d = toml::Table::new();
            d.insert("speed".into(), toml::Value::String(speed.into()));
            d.insert("part".into(), toml::Value::String(part.into()));
            t.insert("dram".into(), toml::Value::Table(d));
            return Config::from_value(toml::Value::Table(t), name);
        }
        Config::from_value(builtin_config_value(name)?, &format!("preset {name}"))
    }

    /// Parses TOML text (`source_name` names it in errors).
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<Config, ConfigError> {
        let v = text
            .parse::<toml::Table>()
            .map_err(|e| ConfigError::Syntax {
                source_name: source_name.into(),
                what: e.to_string(),
            })?;
        Config::from_value(toml::Value::Table(v), source_name)
    }

    /// Reads a TOML file.
    pub fn from_file(path: &std::path::Path) -> Result<Config, ConfigError> {
        let text = read_config_text(path).map_err(|what| ConfigError::Io {
            path: path.display().to_string(),
            what,
        })?;
        Config::from_toml_str(&text, &path.display().to_string())
    }

    /// Builds a config from a TOML value; a `preset = "NAME"` key layers it over that preset.
    pub fn from_value(v: toml::Value, source_name: &str) -> Result<Config, ConfigError> {
        let mut merged = match v.get("preset").and_then(|p| p.as_str()) {
            Some(p) => {
                let mut base = builtin_config_value(p).map_err(|e| match e {
                    ConfigError::Unknown { name, known, .. } => ConfigError::invalid(
                        source_name,
                        "preset",
                        format!("unknown preset '{name}' (known: {known})"),
                    ),
                    other => other,
                })?;
                if base.get("preset").is_some() {
                    return Err(ConfigError::invalid(
                        format!("presets/configs/{p}.toml"),
                        "preset",
                        "presets do not nest",
                    ));
                }
                merge_toml(&mut base, v.clone());
                base
            }
            None => v,
        };
        if let Some(t) = merged.as_table_mut() {
            t.remove("preset");
        }
        let cfg: Config = serde_path_to_error::deserialize(merged).map_err(|e| {
            let key = e.path().to_string();
            let what = e.into_inner().message().to_string();
            if key.is_empty() || key == "." {
                ConfigError::invalid(source_name, "(top level)", what)
            } else {
                ConfigError::invalid(source_name, key, what)
            }
        })?;
        cfg.resolve(source_name)?; // validate everything now
        Ok(cfg)
    }

    /// Layers `overrides` (a TOML table shaped like a config) on top of this config.
    pub fn with_overrides(
        &self,
        overrides: toml::Value,
        source_name: &str,
    ) -> Result<Config, ConfigError> {
        let mut base = toml::Value::try_from(self).map_err(|e| {
            ConfigError::invalid(source_name, "", format!("cannot serialise config: {e}"))
        })?;
        merge_toml(&mut base, overrides);
        Config::from_value(base, source_name)
    }

    /// Resolves the DRAM spec and checks the controller settings.
    pub fn resolve(&self, src: &str) -> Result<DramSpec, ConfigError> {
        let standards = builtin_standards()?;
        let d = &self.dram;
        let std_file = standards
            .iter()
            .find(|s| s.speed.contains_key(&d.speed))
            .ok_or_else(|| {
                ConfigError::invalid(
                    src,
                    "dram.speed",
                    format!(
                        "unknown speed bin '{}' (known: {})",
                        d.speed,
                        known(standards.iter().flat_map(|s| s.speed.keys().cloned()))
                    ),
                )
            })?;
        let part = std_file.part.get(&d.part).ok_or_else(|| {
            ConfigError::invalid(
                src,
                "dram.part",
                format!(
                    "unknown part '{}' for {} (known: {})",
                    d.part,
                    std_file.standard.name,
                    known(std_file.part.keys().cloned())
                ),
            )
        })?;
        let speed = &std_file.speed[&d.speed];
        let mut timing = BTreeMap::new();
        for (k, v) in speed {
            if k == "source" {
                continue;
            }
            let n = v.as_integer().filter(|n| *n >= 0).ok_or_else(|| {
                ConfigError::invalid(
                    format!("speed bin {}", d.speed),
                    k,
                    "expected a non-negative integer",
                )
            })?;
            timing.insert(k.clone(), n as u64);
        }
        let mut tck = *timing.get("tCK_ps").ok_or_else(|| {
            ConfigError::invalid(format!("speed bin {}", d.speed), "tCK_ps", "missing")
        })?;
        // The refresh timings are times (ns) in the part: derive their clocks from the clock in
        // force, the user's tCK_ps if overridden, unless nRFC / nREFI are overridden themselves.
        if let Some(&t) = d.timing.get("tCK_ps") {
            tck = t;
        }
        if tck == 0 {
            return Err(ConfigError::invalid(
                src,
                "dram.timing.tCK_ps",
                "must be positive",
            ));
        }
        timing.insert(
            "nRFC".into(),
            ((part.trfc_ns * 1000.0) / tck as f64).ceil() as u64,
        );
        let nrefi = ((part.trefi_ns * 1000.0) / tck as f64).floor() as u64;
        if nrefi == 0 && d.timing.contains_key("tCK_ps") && !d.timing.contains_key("nREFI") {
            // nREFI is derived from the user's clock: name what the user set, not nREFI.
            return Err(ConfigError::invalid(
                src,
                "dram.timing.tCK_ps",
                format!(
                    "{tck} ps is longer than the part's refresh interval tREFI ({} ns), which \
                     then holds no clock at all",
                    part.trefi_ns
                ),
            ));
        }
        timing.insert("nREFI".into(), nrefi);
        for (name, ns) in [
            ("nRFCsb", part.trfcsb_ns),
            ("nRFCpb", part.trfcpb_ns),
            ("nPBR2PBR", part.tpbr2pbr_ns),
        ] {
            if let Some(ns) = ns {
                timing.insert(name.into(), ((ns * 1000.0) / tck as f64).ceil() as u64);
            }
        }
        if let Some(rfm) = &part.rfm {
            // nRFM is always known (the standard's rows name it); the thresholds only when the
            // controller manages RFM, so the log's header tells the checker whether it must.
            timing.insert(
                "nRFM".into(),
                ((rfm.trfm_ns * 1000.0) / tck as f64).ceil() as u64,
            );
            for (name, ns) in [("nRFMsb", rfm.trfmsb_ns), ("nRFMpb", rfm.trfmpb_ns)] {
                if let Some(ns) = ns {
                    timing.insert(name.into(), ((ns * 1000.0) / tck as f64).ceil() as u64);
                }
            }
            if self.controller.rfm {
                timing.insert("RAAIMT".into(), u64::from(rfm.raaimt));
                timing.insert("RAAMMT".into(), u64::from(rfm.raammt));
            }
        }
        let overrides: Vec<&str> = d.timing.keys().map(String::as_str).collect();
        crate::refresh_mode::apply_timing(
            &self.controller.refresh_mode,
            &self.controller.refresh,
            &d.part,
            part,
            tck,
            &mut timing,
            &overrides,
        )
        .map_err(|(key, why)| ConfigError::invalid(src, key, why))?;
        for (k, v) in &d.timing {
            if !timing.contains_key(k) {
                return Err(ConfigError::invalid(
                    src,
                    format!("dram.timing.{k}"),
                    format!(
                        "unknown timing parameter (known: {})",
                        known(timing.keys().cloned())
                    ),
                ));
            }
            if *v > MAX_TIMING_CLOCKS {
                return Err(ConfigError::invalid(
                    src,
                    format!("dram.timing.{k}"),
                    format!("{v} is beyond any DRAM timing (at most {MAX_TIMING_CLOCKS} clocks)"),
                ));
            }
            timing.insert(k.clone(), *v);
        }
        if self.controller.wck == WCK_AUTO_SYNC_OFF {
            // The mode is the controller's (a mode register it programs): entered after the
            // user's timing overrides, so that only `controller.wck` turns it on.
            let missing: Vec<&str> = crate::spec::WCK_PARAMS
                .iter()
                .copied()
                .filter(|k| !timing.contains_key(*k))
                .collect();
            if !missing.is_empty() {
                return Err(ConfigError::invalid(
                    src,
                    "controller.wck",
                    format!(
                        "'{WCK_AUTO_SYNC_OFF}' needs the speed bin's WCK2CK synchronisation timings, which {} does not give ({}): only LPDDR5 bins that list them support it",
                        d.speed,
                        missing.join(", ")
                    ),
                ));
            }
            // The CAS's preamble must end by the time the data of the column command on the
            // next clock starts (RL = tWCKENL_RD - 1 + tWCKPRE_static + tWCKPRE_toggle_RD).
            for (enl, toggle, lat) in [
                ("nWCKENL_RD", "nWCKPRE_toggle_RD", "nCL"),
                ("nWCKENL_WR", "nWCKPRE_toggle_WR", "nCWL"),
            ] {
                let pre = timing[enl] + timing["nWCKPRE_static"] + timing[toggle];
                let data = timing.get(lat).copied().unwrap_or(0) + 1;
                if pre > data {
                    return Err(ConfigError::invalid(
                        src,
                        format!("dram.timing.{enl}"),
                        format!(
                            "the WCK preamble after a CAS ({enl} + nWCKPRE_static + {toggle} = {pre} clocks) must end by the data of the column command one clock later ({lat} + 1 = {data})"
                        ),
                    ));
                }
            }
            timing.insert(crate::spec::WCK_SYNC_KEY.into(), 1);
        }
        for must_be_positive in POSITIVE_TIMINGS {
            if timing.get(*must_be_positive) == Some(&0) {
                return Err(ConfigError::invalid(
                    src,
                    format!("dram.timing.{must_be_positive}"),
                    "must be positive: no DRAM device has this timing at zero",
                ));
            }
        }
        if let Some(&data) = timing.get("nBL_data") {
            let window = timing.get("nBL").copied().unwrap_or(0);
            if data == 0 || data > window {
                return Err(ConfigError::invalid(
                    src,
                    "dram.timing.nBL_data",
                    format!(
                        "{data}: the clocks a burst carries data must be from 1 to its window nBL ({window})"
                    ),
                ));
            }
        }
        let h = &std_file.standard;
        let o = &d.org;
        let bank_groups = o
            .bank_groups
            .unwrap_or(part.bank_groups.unwrap_or(h.bank_groups));
        let banks = o.banks.unwrap_or(part.banks);
        let rows = o.rows.unwrap_or(part.rows);
        let columns = o.columns.unwrap_or(part.columns);
        for (key, v) in [
            ("dram.channels", d.channels),
            ("dram.ranks", d.ranks),
            ("dram.org.bank_groups", bank_groups),
            ("dram.org.banks", banks),
            ("dram.org.rows", rows),
            ("dram.org.columns", columns),
        ] {
            if let Some((_, max, why)) = ORG_LIMITS.iter().find(|(k, _, _)| *k == key) {
                if v > *max {
                    return Err(ConfigError::invalid(
                        src,
                        key,
                        format!("{v} is more than any real system has (at most {max}: {why})"),
                    ));
                }
            }
        }
        let total_banks = u64::from(d.channels) * u64::from(d.ranks) * u64::from(banks);
        if total_banks > MAX_TOTAL_BANKS {
            return Err(ConfigError::invalid(
                src,
                "dram.channels",
                format!(
                    "{} channels x {} ranks x {banks} banks = {total_banks} banks in all; at most {MAX_TOTAL_BANKS} can be simulated",
                    d.channels, d.ranks
                ),
            ));
        }
        if bank_groups == 0 || banks == 0 || !banks.is_multiple_of(bank_groups) {
            return Err(ConfigError::invalid(
                src,
                "dram.org.banks",
                format!("{banks} banks do not split into {bank_groups} bank groups"),
            ));
        }
        let org = Organization {
            channels: d.channels,
            ranks: d.ranks,
            bank_groups,
            banks_per_group: banks / bank_groups,
            rows,
            columns,
            subarray_rows: o.subarray_rows.unwrap_or(h.subarray_rows),
            device_width: part.device_width,
            bus_width: h.bus_width,
            burst_length: h.burst_length,
        };
        let pow2 = |v: u32, key: &str| -> Result<(), ConfigError> {
            if v == 0 || !v.is_power_of_two() {
                return Err(ConfigError::invalid(
                    src,
                    key,
                    format!("{v} must be a power of two (the address mappers slice bits)"),
                ));
            }
            Ok(())
        };
        pow2(org.channels, "dram.channels")?;
        pow2(org.ranks, "dram.ranks")?;
        pow2(org.bank_groups, "dram.org.bank_groups")?;
        if org.banks_per_group == 0 || !org.banks_per_group.is_power_of_two() {
            // `dram.org.banks` counts the rank's banks; what must be a power of two is its share per
            // bank group.
            return Err(ConfigError::invalid(
                src,
                "dram.org.banks",
                format!(
                    "{} banks in {} bank groups make {} a group, which must be a power of two (the address mappers slice bits)",
                    org.banks_per_rank(),
                    org.bank_groups,
                    org.banks_per_group
                ),
            ));
        }
        pow2(org.rows, "dram.org.rows")?;
        pow2(org.columns, "dram.org.columns")?;
        if org.columns < org.burst_length {
            return Err(ConfigError::invalid(
                src,
                "dram.org.columns",
                "fewer columns than one burst",
            ));
        }
        for (key, n) in [
            ("standard.idd3n_open_banks", h.idd3n_open_banks),
            ("standard.idd4_open_banks", h.idd4_open_banks),
        ] {
            if n > org.banks_per_rank() {
                return Err(ConfigError::invalid(
                    format!("standard {}", h.name),
                    key,
                    format!(
                        "{n} open banks, but a rank has {} (0: all of them)",
                        org.banks_per_rank()
                    ),
                ));
            }
        }
        let supplies = h.supply_names().map_err(|why| {
            ConfigError::invalid(format!("standard {}", h.name), "standard.supplies", why)
        })?;
        if h.refpb_pairs && !org.banks_per_rank().is_multiple_of(2) {
            return Err(ConfigError::invalid(
                src,
                "dram.org.banks",
                format!(
                    "{} refreshes banks in pairs (per-bank refresh), so a rank needs an even number of banks, not {}",
                    h.name,
                    org.banks_per_rank()
                ),
            ));
        }
        if org.subarray_rows < 2
            || org.subarray_rows > org.rows
            || !org.rows.is_multiple_of(org.subarray_rows)
        {
            return Err(ConfigError::invalid(
                src,
                "dram.org.subarray_rows",
                format!(
                    "{} must be at least 2 and divide the {} rows",
                    org.subarray_rows, org.rows
                ),
            ));
        }
        let energy_available = part.currents.is_some() || !d.currents.is_empty();
        let mut currents = part.currents.clone().unwrap_or_default();
        {
            let mut cv = toml::Value::try_from(&currents)
                .map_err(|e| ConfigError::invalid(src, "dram.currents", e.to_string()))?;
            let tbl = cv
                .as_table_mut()
                .ok_or_else(|| ConfigError::invalid(src, "dram.currents", "not a table"))?;
            for (k, v) in &d.currents {
                if !tbl.contains_key(k) && !crate::spec::OPTIONAL_CURRENTS.contains(&k.as_str()) {
                    let names = tbl.keys().cloned().chain(
                        crate::spec::OPTIONAL_CURRENTS
                            .iter()
                            .filter(|o| !tbl.contains_key(**o))
                            .map(|o| o.to_string()),
                    );
                    return Err(ConfigError::invalid(
                        src,
                        format!("dram.currents.{k}"),
                        format!("unknown current (known: {})", known(names)),
                    ));
                }
                if !v.is_finite() || *v < 0.0 {
                    return Err(ConfigError::invalid(
                        src,
                        format!("dram.currents.{k}"),
                        "must be a non-negative number",
                    ));
                }
                tbl.insert(k.clone(), toml::Value::Float(*v));
            }
            // A current on a supply the standard does not have would be charged all the same:
            // refused, naming the key (the config's own first, then the part's).
            let stray = d
                .currents
                .iter()
                .map(|(k, v)| (k, *v))
                .chain(tbl.iter().map(|(k, v)| (k, v.as_float().unwrap_or(0.0))))
                .find(|(k, v)| *v != 0.0 && crate::spec::supply_of(k) >= supplies.len());
            if let Some((k, _)) = stray {
                let have: Vec<String> = supplies
                    .iter()
                    .zip(crate::spec::SUPPLY_KEYS)
                    .map(|(name, keys)| format!("{name} ({keys})"))
                    .collect();
                return Err(ConfigError::invalid(
                    src,
                    format!("dram.currents.{k}"),
                    format!(
                        "{} has no such supply: its currents are on {}",
                        h.name,
                        have.join(", ")
                    ),
                ));
            }
            if part.currents.is_none() {
                // A part without published currents takes them from the config; on each supply
                // the config draws from, the currents every run uses (activation, the two
                // standbys, read and write bursts) and the voltage must all be given, or those
                // left out are charged as zero (energy that looks available and is not).
                const CORE: [[&str; 6]; 3] = [
                    ["vdd", "idd0", "idd2n", "idd3n", "idd4r", "idd4w"],
                    ["vpp", "ipp0", "ipp2n", "ipp3n", "ipp4r", "ipp4w"],
                    [
                        "vdd2l", "idd02l", "idd2n2l", "idd3n2l", "idd4r2l", "idd4w2l",
                    ],
                ];
                for (i, keys) in CORE.iter().enumerate() {
                    if !d.currents.keys().any(|k| crate::spec::supply_of(k) == i) {
                        continue;
                    }
                    let missing: Vec<&str> = keys
                        .iter()
                        .copied()
                        .filter(|k| !d.currents.contains_key(*k))
                        .collect();
                    if let Some(first) = missing.first() {
                        return Err(ConfigError::invalid(
                            src,
                            format!("dram.currents.{first}"),
                            format!(
                                "part {} publishes no currents, so each supply the config gives currents \
                                 for needs its voltage, activation, standby and burst currents, or their \
                                 energy would be charged as zero; missing: {}",
                                d.part,
                                missing.join(", ")
                            ),
                        ));
                    }
                }
            }
            for supply in ["vdd", "vpp", "vdd2l"] {
                let v = tbl.get(supply).and_then(|v| v.as_float()).unwrap_or(0.0);
                let drawn = tbl.iter().any(|(k, c)| {
                    k != supply
                        && crate::spec::supply_of(k) == crate::spec::supply_of(supply)
                        && c.as_float().unwrap_or(0.0) > 0.0
                });
                if v <= 0.0 && drawn && d.currents.contains_key(supply) {
                    return Err(ConfigError::invalid(
                        src,
                        format!("dram.currents.{supply}"),
                        "a supply voltage must be positive where currents are drawn from it (at 0 V \
                         their energy would silently be 0)",
                    ));
                }
            }
            currents = cv.try_into().map_err(|e: toml::de::Error| {
                ConfigError::invalid(src, "dram.currents", e.to_string())
            })?;
        }
        crate::refresh_mode::fgr_currents(
            &self.controller.refresh_mode,
            energy_available,
            &d.part,
            &mut currents,
        )
        .map_err(|(key, why)| ConfigError::invalid(src, key, why))?;
        if let (Some(&imt), Some(&mmt)) = (timing.get("RAAIMT"), timing.get("RAAMMT")) {
            if imt < 2 && self.controller.rfm {
                // An RFM owed after every ACT closes the row that ACT opened before its column
                // command can issue, so no request would ever complete.
                return Err(ConfigError::invalid(
                    src,
                    "dram.timing.RAAIMT",
                    format!(
                        "refresh management needs RAAIMT of at least 2 (got {imt}): with an RFM owed \
                         after every ACT, the RFM's precharge closes each row before its read or write \
                         issues and no request completes (JEDEC parts use 8 and up)"
                    ),
                ));
            }
            if imt == 0 || mmt < imt {
                return Err(ConfigError::invalid(
                    src,
                    "dram.timing.RAAMMT",
                    format!(
                        "refresh management needs 0 < RAAIMT <= RAAMMT (RAAIMT {imt}, RAAMMT {mmt})"
                    ),
                ));
            }
        }
        for (scope, key, has) in [
            (
                "same-bank",
                "nRFMsb",
                "DDR5 parts with refresh management do",
            ),
            ("per-bank", "nRFMpb", "HBM3 and HBM4 parts do"),
        ] {
            if self.controller.rfm && self.controller.rfm_scope == scope {
                if !timing.contains_key("RAAIMT") {
                    return Err(ConfigError::invalid(
                        src,
                        "controller.rfm_scope",
                        format!(
                            "\"{scope}\" refresh management needs a part that requires refresh management ({} has none)",
                            d.part
                        ),
                    ));
                }
                if !timing.contains_key(key) {
                    return Err(ConfigError::invalid(
                        src,
                        "controller.rfm_scope",
                        format!(
                            "\"{scope}\" refresh management needs a part with its RFM duration ({key}; {} has none, {has})",
                            d.part
                        ),
                    ));
                }
            }
        }
        if self.controller.refresh == "same-bank" && !timing.contains_key("nRFCsb") {
            return Err(ConfigError::invalid(
                src,
                "controller.refresh",
                format!(
                    "\"same-bank\" refresh needs a part with tRFCsb ({} has none; DDR5 parts do)",
                    d.part
                ),
            ));
        }
        if self.controller.refresh == "per-bank" && !timing.contains_key("nRFCpb") {
            return Err(ConfigError::invalid(
                src,
                "controller.refresh",
                format!(
                    "\"per-bank\" refresh needs a part with tRFCpb ({} has none; LPDDR5, HBM2, HBM3, HBM4 and GDDR6 parts do)",
                    d.part
                ),
            ));
        }
        if self.controller.refresh == "per-bank"
            && energy_available
            && currents.idd5pb <= 0.0
            && currents.ipp5pb <= 0.0
            && currents.idd5pb2l <= 0.0
        {
            return Err(ConfigError::invalid(
                src,
                "dram.currents.idd5pb",
                "\"per-bank\" refresh with currents needs a per-bank refresh current (idd5pb, or on LPDDR5 also ipp5pb or idd5pb2l; mA), or REFPB energy would be left out",
            ));
        }
        if self.controller.refresh != "none" {
            // One refresh and one complete access must fit in a refresh interval, or the rank
            // spends all its time refreshing and requests starve. A bank is refreshed once per
            // nREFI in every mode (same-bank and per-bank refresh spread their commands over it),
            // so the same holds for the refresh duration of the mode in use, and for each refresh
            // management command that may issue (an RFM blocks its banks as long).
            let t = |k: &str| timing.get(k).copied().unwrap_or(0);
            let access =
                t("nRP") + t("nRAS") + t("nRCD") + t("nCL").max(t("nCWL")) + t("nBL") + t("nWR");
            let rfm_on = self.controller.rfm && timing.contains_key("RAAIMT");
            let scope = self.controller.rfm_scope.as_str();
            let durations = [
                ("nRFC", "one refresh", true),
                (
                    "nRFCsb",
                    "one same-bank refresh",
                    self.controller.refresh == "same-bank",
                ),
                (
                    "nRFCpb",
                    "one per-bank refresh",
                    self.controller.refresh == "per-bank",
                ),
                ("nRFM", "one refresh management command", rfm_on),
                (
                    "nRFMsb",
                    "one same-bank refresh management command",
                    rfm_on && scope == "same-bank",
                ),
                (
                    "nRFMpb",
                    "one per-bank refresh management command",
                    rfm_on && scope == "per-bank",
                ),
            ];
            for (key, what, used) in durations {
                if !used || !timing.contains_key(key) {
                    continue;
                }
                let need = t(key) + access;
                if need >= t("nREFI") {
                    let field = if key == "nRFC" { "nREFI" } else { key };
                    return Err(ConfigError::invalid(
                        src,
                        format!("dram.timing.{field}"),
                        format!(
                            "a refresh interval of {} clocks cannot hold {what} ({key} {}) and one access \
                             ({need} clocks in all); lengthen nREFI, shorten the others, or set controller.refresh = \"none\"",
                            t("nREFI"),
                            t(key),
                        ),
                    ));
                }
            }
        }
        let (rules, windows) = resolve_rules(
            &format!("standard {}", h.name),
            &h.rules,
            &h.windows,
            &timing,
        )
        .map_err(|e| {
            if d.timing.is_empty() {
                e
            } else {
                // The standard's rules are sound for its own bins: an override broke one.
                let keys: Vec<String> = d
                    .timing
                    .keys()
                    .map(|k| format!("dram.timing.{k}"))
                    .collect();
                ConfigError::invalid(
                    src,
                    keys.join(", "),
                    format!("these timing overrides make a rule impossible: {e}"),
                )
            }
        })?;
        self.check_controller(src)?;
        let refpb_pair_offset = if h.refpb_pairs {
            org.banks_per_rank() / 2
        } else {
            0
        };
        let command_buses = h
            .command_buses
            .as_ref()
            .map(|b| {
                crate::command_bus::CommandBuses::from_row(
                    b,
                    &crate::spec::TIMING_KINDS[..crate::spec::TK_TRS],
                )
                .map_err(|e| {
                    ConfigError::invalid(
                        format!("standard {}", h.name),
                        "standard.command_buses",
                        e,
                    )
                })
            })
            .transpose()?;
        Ok(DramSpec {
            standard: h.name.clone(),
            speed: d.speed.clone(),
            part: d.part.clone(),
            org,
            timing,
            rules,
            windows,
            currents,
            energy_available,
            refpb_pair_offset,
            idd_conditions: crate::spec::IddConditions {
                idd3n_open_banks: h.idd3n_open_banks,
                idd4_open_banks: h.idd4_open_banks,
                idd5pb_averaged: h.idd5pb_averaged,
            },
            command_buses,
        })
    }

    fn check_controller(&self, src: &str) -> Result<(), ConfigError> {
        let c = &self.controller;
        let one_of = |key: &str, v: &str, allowed: &[&str]| -> Result<(), ConfigError> {
            if allowed.contains(&v) {
                Ok(())
            } else {
                Err(ConfigError::invalid(
                    src,
                    key,
                    format!("'{v}' is not one of: {}", allowed.join(", ")),
                ))
            }
        };
        one_of(
            "controller.scheduler",
            &c.scheduler,
            crate::scheduler::SCHEDULERS,
        )?;
        one_of("controller.row_policy", &c.row_policy, &["open", "closed"])?;
        one_of(
            "controller.refresh",
            &c.refresh,
            &["all-bank", "same-bank", "per-bank", "none"],
        )?;
        one_of(
            "controller.refresh_mode",
            &c.refresh_mode,
            &crate::refresh_mode::MODES,
        )?;
        one_of(
            "controller.rfm_scope",
            &c.rfm_scope,
            &[RFM_ALL_BANK, "same-bank", "per-bank"],
        )?;
        one_of("controller.mapper", &c.mapper, crate::mapper::MAPPERS)?;
        one_of(
            "controller.wck",
            &c.wck,
            &[WCK_ALWAYS_ON, WCK_AUTO_SYNC_OFF],
        )?;
        one_of(
            "controller.bulk",
            &c.bulk,
            &["baseline", "rowclone", "multi-row-copy"],
        )?;
        let chip = crate::bulk::copy_chips::chip(&c.copy.chip)
            .map_err(|e| ConfigError::invalid(src, "controller.copy.chip", e))?;
        one_of(
            "controller.copy.on_unsupported",
            &c.copy.on_unsupported,
            &["refuse", "baseline"],
        )?;
        if let Some(p) = c.copy.success {
            if !(0.01..=1.0).contains(&p) {
                return Err(ConfigError::invalid(
                    src,
                    "controller.copy.success",
                    format!("{p} is not a probability between 0.01 and 1"),
                ));
            }
        }
        if chip.supported && c.copy.success.or(chip.success).is_none() {
            return Err(ConfigError::invalid(
                src,
                "controller.copy.success",
                format!(
                    "part '{}' has no published per-row success rate ({}); set one",
                    chip.name, chip.source
                ),
            ));
        }
        let mrc = crate::bulk::copy_chips::MAX_GROUP_ROWS - 1;
        if chip.supported && c.bulk == "multi-row-copy" && chip.max_copies < mrc {
            return Err(ConfigError::invalid(
                src,
                "controller.copy.chip",
                format!(
                    "part '{}' copies one row into at most {} rows at once ({}), and controller.bulk = 'multi-row-copy' needs {mrc}; use controller.bulk = \"rowclone\"",
                    chip.name, chip.max_copies, chip.source
                ),
            ));
        }
        if !chip.supported && c.bulk != "baseline" && c.copy.on_unsupported == "refuse" {
            return Err(ConfigError::invalid(
                src,
                "controller.copy.chip",
                format!(
                    "part '{}' does not perform in-DRAM copy ({}), so controller.bulk = '{}' is refused; use controller.bulk = \"baseline\" or controller.copy.on_unsupported = \"baseline\"",
                    chip.name, chip.source, c.bulk
                ),
            ));
        }
        if !BULK_WRITE_DONE.contains(&c.bulk_write_done.as_str()) {
            return Err(ConfigError::invalid(
                src,
                "controller.bulk_write_done",
                format!(
                    "'{}' is not one of: {}",
                    c.bulk_write_done,
                    BULK_WRITE_DONE.join(", ")
                ),
            ));
        }
        if c.bulk_buffer_lines == 0 || c.bulk_buffer_lines > MAX_QUEUE {
            return Err(ConfigError::invalid(
                src,
                "controller.bulk_buffer_lines",
                format!("{}: must be between 1 and {MAX_QUEUE}", c.bulk_buffer_lines),
            ));
        }
        if !(0.0..=1.0).contains(&c.engine_share) {
            return Err(ConfigError::invalid(
                src,
                "controller.engine_share",
                format!("{} is not a fraction between 0 and 1", c.engine_share),
            ));
        }
        for (key, n) in [
            ("controller.read_queue", c.read_queue),
            ("controller.write_queue", c.write_queue),
        ] {
            if n == 0 || n > MAX_QUEUE {
                return Err(ConfigError::invalid(
                    src,
                    key,
                    format!("{n} entries: a queue needs between 1 and {MAX_QUEUE}"),
                ));
            }
        }
        let (lo, hi) = (c.write_low_watermark, c.write_high_watermark);
        let key = if !(0.0..=1.0).contains(&hi) {
            "controller.write_high_watermark"
        } else {
            "controller.write_low_watermark"
        };
        if !(0.0..=1.0).contains(&lo) || !(0.0..=1.0).contains(&hi) || lo >= hi {
            return Err(ConfigError::invalid(
                src,
                key,
                format!("need 0 <= low ({lo}) < high ({hi}) <= 1"),
            ));
        }
        if !(0.0..=1.0).contains(&self.energy.bank_rho) {
            return Err(ConfigError::invalid(
                src,
                "energy.bank_rho",
                format!("{} is not a fraction between 0 and 1", self.energy.bank_rho),
            ));
        }
        if !self.energy.io_pj_per_bit.is_finite() || self.energy.io_pj_per_bit < 0.0 {
            return Err(ConfigError::invalid(
                src,
                "energy.io_pj_per_bit",
                "must be a non-negative number",
            ));
        }
        Ok(())
    }
}
