//! The DRAM standard, speed bin and part, resolved from preset data into one [`DramSpec`].
//!
//! A standard file (`presets/dram/*.toml`) declares the organisation, the timing rules as rows of
//! (scope, preceding commands, following commands, latency expression), the speed bins and the
//! parts. Nothing about a particular standard is written in code: adding a bin or part is data.
use crate::error::ConfigError;
use crate::units::Picos;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The built-in standard files, compiled into the binary so a preset never goes missing.
pub const BUILTIN_STANDARDS: &[(&str, &str)] = &[
    ("ddr2.toml", include_str!("../../../presets/dram/ddr2.toml")),
    ("ddr3.toml", include_str!("../../../presets/dram/ddr3.toml")),
    ("ddr4.toml", include_str!("../../../presets/dram/ddr4.toml")),
    ("ddr5.toml", include_str!("../../../presets/dram/ddr5.toml")),
    ("hbm2.toml", include_str!("../../../presets/dram/hbm2.toml")),
    ("hbm3.toml", include_str!("../../../presets/dram/hbm3.toml")),
    (
        "lpddr5.toml",
        include_str!("../../../presets/dram/lpddr5.toml"),
    ),
    (
        "lpddr5-bl32.toml",
        include_str!("../../../presets/dram/lpddr5-bl32.toml"),
    ),
    (
        "lpddr5-8b.toml",
        include_str!("../../../presets/dram/lpddr5-8b.toml"),
    ),
    (
        "gddr6.toml",
        include_str!("../../../presets/dram/gddr6.toml"),
    ),
    (
        "gddr7.toml",
        include_str!("../../../presets/dram/gddr7.toml"),
    ),
    ("hbm4.toml", include_str!("../../../presets/dram/hbm4.toml")),
    (
        "lpddr6.toml",
        include_str!("../../../presets/dram/lpddr6.toml"),
    ),
    (
        "lpddr6-bl48.toml",
        include_str!("../../../presets/dram/lpddr6-bl48.toml"),
    ),
];

/// The timing entry that says the controller runs LPDDR5's WCK in auto sync-off mode (1), set by
/// `controller.wck = "auto-sync-off"`; absent: WCK always on, no CAS.
pub const WCK_SYNC_KEY: &str = "WCK_SYNC";

/// The timing entry that says the controller runs DDR5's fine-granularity refresh (JESD79-5 REF
/// mode 2, `controller.refresh_mode = "fine-granularity"`): 1. With it the log's header also
/// carries the mode's inputs, `nRFC2` (tRFC2) and `nREFI1` (the normal-mode tREFI), from which the
/// checker derives the mode's timing itself (see `refresh_mode`); absent: normal refresh.
pub const REFRESH_FGR_KEY: &str = "FGR";

/// The speed-bin parameters (clocks of CK) the mode needs.
pub const WCK_PARAMS: [&str; 6] = [
    "nWCKENL_RD",
    "nWCKENL_WR",
    "nWCKPRE_static",
    "nWCKPRE_toggle_RD",
    "nWCKPRE_toggle_WR",
    "nWCKPST",
];

/// Where two commands must meet for a rule to apply.
///
/// `channel` is shorthand for "the same rank and every other rank of the channel" (the command
/// bus, e.g. DDR5's two-clock commands): it resolves into one `rank` and one `other_rank` rule.
/// A bank-scoped rule from or to a REFSB applies at every bank the REFSB refreshes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Bank,
    Bankgroup,
    Rank,
    OtherRank,
    Channel,
}

/// The command names a rule may use: the commands plus TRS / TRD, the source and destination
/// sides of a TRANSFER in bank-scoped rules.
pub const TIMING_KINDS: [&str; 19] = [
    "ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REF", "ACTC", "TR", "REFSB", "REFPB", "ACTM",
    "RFM", "CAS", "RFMSB", "RFMPB", "TRS", "TRD",
];
/// Index of TRS / TRD in [`TIMING_KINDS`].
pub const TK_TRS: usize = 17;
pub const TK_TRD: usize = 18;
/// Number of timing kinds.
pub const NK: usize = 19;

pub fn timing_kind_index(name: &str) -> Option<usize> {
    TIMING_KINDS.iter().position(|k| *k == name)
}

/// A timing rule as written in a standard file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RuleRow {
    pub scope: Scope,
    pub from: Vec<String>,
    pub to: Vec<String>,
    pub latency: String,
}

/// A rolling-window rule (tFAW) as written in a standard file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WindowRow {
    pub scope: Scope,
    pub commands: Vec<String>,
    pub count: u32,
    pub latency: String,
}

/// A resolved timing rule: kinds are indices into [`TIMING_KINDS`], latency in clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rule {
    pub scope: Scope,
    pub from: usize,
    pub to: usize,
    pub latency: u64,
}

/// A resolved window rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Window {
    pub kinds: Vec<usize>,
    pub count: u32,
    pub latency: u64,
}

/// Device currents (mA) and supplies (V) for the IDD-based energy model.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Currents {
    pub vdd: f64,
    pub idd0: f64,
    pub idd2n: f64,
    pub idd3n: f64,
    pub idd4r: f64,
    pub idd4w: f64,
    pub idd5: f64,
    #[serde(default)]
    pub vpp: f64,
    #[serde(default)]
    pub ipp0: f64,
    #[serde(default)]
    pub ipp2n: f64,
    #[serde(default)]
    pub ipp3n: f64,
    #[serde(default)]
    pub ipp4r: f64,
    #[serde(default)]
    pub ipp4w: f64,
    #[serde(default)]
    pub ipp5: f64,
    /// Same-bank refresh current (DDR5 IDD5C / IPP5C), for REFSB.
    #[serde(default)]
    pub idd5c: f64,
    #[serde(default)]
    pub ipp5c: f64,
    /// Per-bank refresh current (LPDDR5 / HBM3 IDD5PB), for REFPB.
    #[serde(default)]
    pub idd5pb: f64,
    #[serde(default)]
    pub ipp5pb: f64,
    /// All-bank refresh current in fine-granularity refresh mode (DDR5 IDD5F / IPP5F, tRFC2).
    /// With `controller.refresh_mode = "fine-granularity"` the resolved spec's REF current
    /// (`idd5` / `ipp5`) is this one. Left out of the serialised spec when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub idd5f: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ipp5f: f64,
    /// LPDDR5's third supply, VDD2L, and its currents (JESD209-5 names: IDD02L, IDD2N2L, ...). On
    /// LPDDR5 `vdd` / `idd*` are VDD2H's and `vpp` / `ipp*` VDD1's. Left out of the serialised
    /// spec when zero, as on every other standard.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub vdd2l: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub idd02l: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub idd2n2l: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub idd3n2l: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub idd4r2l: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub idd4w2l: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub idd52l: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub idd5pb2l: f64,
}

/// The currents a config may set that the serialised spec leaves out when zero (the others are
/// always there), for the check of `dram.currents.*` keys.
pub const OPTIONAL_CURRENTS: &[&str] = &[
    "idd5f", "ipp5f", "vdd2l", "idd02l", "idd2n2l", "idd3n2l", "idd4r2l", "idd4w2l", "idd52l",
    "idd5pb2l",
];

/// The keys of `dram.currents` of each of the energy model's supply domains, in order: the first
/// supply a standard names (`[standard] supplies`) draws the `vdd` / `idd*` currents, the second
/// the `vpp` / `ipp*`, the third the `vdd2l` / `idd*2l` (LPDDR5: VDD2H, VDD1, VDD2L).
pub const SUPPLY_KEYS: [&str; 3] = ["vdd, idd*", "vpp, ipp*", "vdd2l, idd*2l"];

/// The supplies of a standard that does not name its own (`[standard] supplies` absent).
pub const DEFAULT_SUPPLIES: [&str; 2] = ["VDD", "VPP"];

/// The supply domain (index into [`SUPPLY_KEYS`]) a `dram.currents` key belongs to.
pub fn supply_of(key: &str) -> usize {
    if key.starts_with("vpp") || key.starts_with("ipp") {
        1
    } else if key.ends_with("2l") {
        2
    } else {
        0
    }
}

/// Under which conditions a standard's datasheets measure the currents the energy model reads
/// (the IDD test conditions differ between DDR and LPDDR), from `[standard]`.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Default)]
pub struct IddConditions {
    /// Banks open while IDD3N is measured; 0: all banks of the device (JESD79 DDR), 1: one bank
    /// (JESD209 LPDDR).
    pub idd3n_open_banks: u32,
    /// Banks open while IDD4R / IDD4W are measured; 0: all banks.
    pub idd4_open_banks: u32,
    /// IDD5PB is the average current while per-bank refreshes repeat every tREFIpb (LPDDR), not
    /// the current during one (tRFCpb).
    pub idd5pb_averaged: bool,
}

impl IddConditions {
    pub fn is_default(&self) -> bool {
        *self == IddConditions::default()
    }
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// The organisation of the simulated memory system.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Organization {
    pub channels: u32,
    pub ranks: u32,
    pub bank_groups: u32,
    /// Banks in each bank group (all banks of the rank when there are no groups).
    pub banks_per_group: u32,
    pub rows: u32,
    /// Device columns per row (each `device_width` bits).
    pub columns: u32,
    pub subarray_rows: u32,
    pub device_width: u32,
    pub bus_width: u32,
    pub burst_length: u32,
}

impl Organization {
    pub fn banks_per_rank(&self) -> u32 {
        self.bank_groups * self.banks_per_group
    }
    /// Chips that form one rank.
    pub fn chips_per_rank(&self) -> u32 {
        self.bus_width / self.device_width
    }
    /// Bytes moved by one burst: one cache line.
    pub fn line_bytes(&self) -> u64 {
        (self.bus_width / 8 * self.burst_length) as u64
    }
    /// Cache lines (bursts) per row; the log's column field counts these.
    pub fn lines_per_row(&self) -> u32 {
        self.columns / self.burst_length
    }
    /// Bytes of one row across a rank.
    pub fn row_bytes(&self) -> u64 {
        self.columns as u64 * (self.bus_width / 8) as u64
    }
    pub fn subarrays_per_bank(&self) -> u32 {
        self.rows.div_ceil(self.subarray_rows)
    }
    /// Total capacity in bytes.
    pub fn capacity_bytes(&self) -> u64 {
        self.channels as u64
            * self.ranks as u64
            * self.banks_per_rank() as u64
            * self.rows as u64
            * self.row_bytes()
    }
}

/// A fully resolved DRAM description: what the controller, the energy model and the checker use.
#[derive(Debug, Clone, Serialize)]
pub struct DramSpec {
    pub standard: String,
    pub speed: String,
    pub part: String,
    pub org: Organization,
    /// Every timing parameter in clocks (plus `tCK_ps`), by name.
    pub timing: BTreeMap<String, u64>,
    pub rules: Vec<Rule>,
    pub windows: Vec<Window>,
    pub currents: Currents,
    /// Whether the part has public currents (or the config set them): without, energy is not
    /// modelled and every energy figure is zero.
    pub energy_available: bool,
    /// The bank a REFPB refreshes besides the one it names is this many banks further on
    /// (modulo the rank); 0: a REFPB refreshes one bank.
    pub refpb_pair_offset: u32,
    /// The IDD measurement conditions the energy model reads the currents under (DDR's unless
    /// the standard says otherwise; left out of the serialised spec then).
    #[serde(skip_serializing_if = "IddConditions::is_default")]
    pub idd_conditions: IddConditions,
    /// HBM's separate row and column command buses (one command per bus per clock), when the
    /// standard declares them; `None`: one command bus, one command per clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_buses: Option<crate::command_bus::CommandBuses>,
}

impl DramSpec {
    pub fn tck(&self) -> Picos {
        Picos(self.timing["tCK_ps"])
    }
    /// A timing parameter in clocks. Panics only on a name that the resolver guaranteed exists;
    /// use [`DramSpec::param`] for names that may be missing.
    pub fn t(&self, name: &str) -> u64 {
        self.param(name).unwrap_or(0)
    }
    pub fn param(&self, name: &str) -> Option<u64> {
        self.timing.get(name).copied()
    }
}

// ------------------------------------------------------------------------------------------------
// Standard files

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StandardHeader {
    pub name: String,
    pub bank_groups: u32,
    pub bus_width: u32,
    pub burst_length: u32,
    pub subarray_rows: u32,
    /// A per-bank refresh (REFPB) refreshes a pair of banks, the one it names and the one half
    /// the rank's banks further on (LPDDR5 in bank-group and 16-bank mode).
    #[serde(default)]
    pub refpb_pairs: bool,
    /// The IDD test conditions of the standard's datasheets (see [`IddConditions`]); absent: DDR's
    /// (IDD3N and IDD4 with all banks open, IDD5PB during the refresh).
    #[serde(default)]
    pub idd3n_open_banks: u32,
    #[serde(default)]
    pub idd4_open_banks: u32,
    #[serde(default)]
    pub idd5pb_averaged: bool,
    /// The supplies the standard's devices draw current from, by name, in the order of the
    /// energy model's domains (see [`SUPPLY_KEYS`]); absent: VDD and VPP (DDR4, DDR5). A config
    /// may give currents only on these.
    #[serde(default)]
    pub supplies: Option<Vec<String>>,
    /// Separate row and column command buses (HBM): the commands each carries.
    #[serde(default)]
    pub command_buses: Option<crate::command_bus::CommandBusesRow>,
    pub rules: Vec<RuleRow>,
    pub windows: Vec<WindowRow>,
}

impl StandardHeader {
    /// The standard's supplies in the order of [`SUPPLY_KEYS`] ([`DEFAULT_SUPPLIES`] when it
    /// names none), or why its `supplies` cannot be read that way.
    pub fn supply_names(&self) -> Result<Vec<&str>, String> {
        let names: Vec<&str> = match &self.supplies {
            Some(names) => names.iter().map(String::as_str).collect(),
            None => DEFAULT_SUPPLIES.to_vec(),
        };
        let distinct = names
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        if names.is_empty()
            || names.len() > SUPPLY_KEYS.len()
            || names.iter().any(|n| n.trim().is_empty())
            || distinct != names.len()
        {
            return Err(format!(
                "{names:?}: give 1 to {} distinct supply names, in the order of the currents' keys ({})",
                SUPPLY_KEYS.len(),
                SUPPLY_KEYS.join("; ")
            ));
        }
        Ok(names)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartRow {
    pub source: String,
    pub density_gbit: u32,
    pub device_width: u32,
    /// Bank groups of this part when it differs from the standard's (DDR5 x16: 4 instead of 8).
    #[serde(default)]
    pub bank_groups: Option<u32>,
    pub banks: u32,
    pub rows: u32,
    pub columns: u32,
    #[serde(rename = "tRFC_ns")]
    pub trfc_ns: f64,
    #[serde(rename = "tREFI_ns")]
    pub trefi_ns: f64,
    /// Same-bank refresh cycle time (DDR5 tRFCsb), ns; gives `nRFCsb`.
    #[serde(default, rename = "tRFCsb_ns")]
    pub trfcsb_ns: Option<f64>,
    /// All-bank refresh cycle time in fine-granularity refresh mode (DDR5 tRFC2, REF mode 2), ns;
    /// used only with `controller.refresh_mode = "fine-granularity"`.
    #[serde(default, rename = "tRFC2_ns")]
    pub trfc2_ns: Option<f64>,
    /// Per-bank refresh cycle time (LPDDR5 / HBM2 / HBM3 tRFCpb), ns; gives `nRFCpb`.
    #[serde(default, rename = "tRFCpb_ns")]
    pub trfcpb_ns: Option<f64>,
    /// Per-bank refresh to per-bank refresh of another bank (LPDDR5 tpbR2pbR), ns; gives
    /// `nPBR2PBR`.
    #[serde(default, rename = "tPBR2PBR_ns")]
    pub tpbr2pbr_ns: Option<f64>,
    /// Absent when no public source gives the part's currents: energy is then not available.
    #[serde(default)]
    pub currents: Option<Currents>,
    /// Refresh management (DDR5, HBM3, HBM4, GDDR7): present when the part requires it (DDR5
    /// MR58 OP[0] = 1).
    #[serde(default)]
    pub rfm: Option<RfmRow>,
}

/// A part's refresh management: its thresholds (vendor values read from mode registers: DDR5
/// MR58) and the durations of its RFM commands. Gives the timing entries `RAAIMT`, `RAAMMT` (counts
/// of activations, not clocks), `nRFM` and, where the standard has them, `nRFMsb` / `nRFMpb`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RfmRow {
    pub source: String,
    /// Rolling accumulated ACT initial management threshold: an RFM is owed at this count.
    #[serde(rename = "RAAIMT")]
    pub raaimt: u32,
    /// Maximum management threshold: no activation of a bank at this count.
    #[serde(rename = "RAAMMT")]
    pub raammt: u32,
    /// All-bank RFM duration (DDR5 tRFM = tRFC1 for RFMab; HBM3, HBM4, GDDR7 tRFMab = tRFCab), ns.
    #[serde(rename = "tRFM_ns")]
    pub trfm_ns: f64,
    /// Same-bank RFM duration (DDR5 RFMsb: tRFMsb), ns, where the standard defines RFMsb; gives
    /// the timing entry `nRFMsb`.
    #[serde(default, rename = "tRFMsb_ns")]
    pub trfmsb_ns: Option<f64>,
    /// Per-bank RFM duration (HBM3 / HBM4 RFMpb: tRFMpb), ns, where the standard defines RFMpb;
    /// gives the timing entry `nRFMpb`.
    #[serde(default, rename = "tRFMpb_ns")]
    pub trfmpb_ns: Option<f64>,
}

/// One standard file: its header, speed bins (name -> params) and parts.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StandardFile {
    pub standard: StandardHeader,
    pub speed: BTreeMap<String, BTreeMap<String, toml::Value>>,
    pub part: BTreeMap<String, PartRow>,
}

/// All built-in standard files, parsed.
///
/// Parsed once per process and copied out after that: every config resolves against them (a
/// platform resolves its DRAM config twice while it is built, once to check it and once for its
/// memory port), and parsing the files was most of the time a short run took.
pub fn builtin_standards() -> Result<Vec<StandardFile>, ConfigError> {
    static PARSED: std::sync::OnceLock<Result<Vec<StandardFile>, ConfigError>> =
        std::sync::OnceLock::new();
    PARSED
        .get_or_init(|| {
            BUILTIN_STANDARDS
                .iter()
                .map(|(name, text)| {
                    toml::from_str::<StandardFile>(text).map_err(|e| ConfigError::Syntax {
                        source_name: format!("presets/dram/{name}"),
                        what: e.to_string(),
                    })
                })
                .collect()
        })
        .clone()
}

/// Evaluates a latency expression: names and integers joined by `+` and `-`.
pub fn eval_latency(expr: &str, params: &BTreeMap<String, u64>) -> Result<u64, String> {
    let mut total: i128 = 0;
    let mut sign: i128 = 1;
    let mut expect_term = true;
    let spaced = expr.replace('+', " + ").replace('-', " - ");
    for tok in spaced.split_whitespace() {
        match tok {
            "+" | "-" if !expect_term => {
                sign = if tok == "+" { 1 } else { -1 };
                expect_term = true;
            }
            _ if expect_term => {
                let v: i128 = if let Ok(n) = tok.parse::<i64>() {
                    n as i128
                } else {
                    *params
                        .get(tok)
                        .ok_or_else(|| format!("unknown timing parameter '{tok}' in '{expr}'"))?
                        as i128
                };
                total += sign * v;
                expect_term = false;
            }
            _ => return Err(format!("malformed latency expression '{expr}'")),
        }
    }
    if expect_term {
        return Err(format!("malformed latency expression '{expr}'"));
    }
    // A rule whose separation comes out negative (e.g. a rank-to-rank turnaround when the
    // write data ends long before the read data starts) constrains nothing.
    let total = total.max(0);
    u64::try_from(total)
        .map_err(|_| format!("latency '{expr}' evaluates to {total} clocks, too large"))
}

/// Resolves rule rows against a parameter set.
pub fn resolve_rules(
    source_name: &str,
    rows: &[RuleRow],
    windows: &[WindowRow],
    params: &BTreeMap<String, u64>,
) -> Result<(Vec<Rule>, Vec<Window>), ConfigError> {
    let kind = |k: &str, key: &str| {
        timing_kind_index(k).ok_or_else(|| {
            ConfigError::invalid(
                source_name,
                key,
                format!("unknown command '{k}' (known: {})", TIMING_KINDS.join(", ")),
            )
        })
    };
    let mut rules = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let key = format!("rules[{i}]");
        let lat = eval_latency(&r.latency, params)
            .map_err(|e| ConfigError::invalid(source_name, &key, e))?;
        let scopes = match r.scope {
            Scope::Channel => vec![Scope::Rank, Scope::OtherRank],
            s => vec![s],
        };
        for f in &r.from {
            for t in &r.to {
                for &scope in &scopes {
                    rules.push(Rule {
                        scope,
                        from: kind(f, &key)?,
                        to: kind(t, &key)?,
                        latency: lat,
                    });
                }
            }
        }
    }
    let mut wins = Vec::new();
    for (i, w) in windows.iter().enumerate() {
        let key = format!("windows[{i}]");
        let lat = eval_latency(&w.latency, params)
            .map_err(|e| ConfigError::invalid(source_name, &key, e))?;
        if w.scope != Scope::Rank {
            return Err(ConfigError::invalid(
                source_name,
                key,
                "window rules are per rank (scope = \"rank\")",
            ));
        }
        if w.count == 0 {
            return Err(ConfigError::invalid(
                source_name,
                key,
                "count must be at least 1",
            ));
        }
        let kinds = w
            .commands
            .iter()
            .map(|c| kind(c, &key))
            .collect::<Result<Vec<_>, _>>()?;
        wins.push(Window {
            kinds,
            count: w.count,
            latency: lat,
        });
    }
    Ok((rules, wins))
}
