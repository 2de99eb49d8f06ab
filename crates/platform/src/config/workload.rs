//! Workloads as data: a TOML program over the operation kinds `compute`, `load`, `store`,
//! `copy`, `init` (and `repeat` to loop a block), with named address regions that advance every
//! iteration, parameters that any number may refer to, and seeded randomness. Built-in workloads
//! live in `presets/workloads/`. [`Workload::ops`] turns a workload into the stream of concrete
//! operations the core runs; nothing is materialised up front, so a run's memory does not grow
//! with its length.
use crate::sim::error::PlatformError;
use crate::sim::preset::PresetSet;
use movelab_dram::generator::Xoshiro256StarStar;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The built-in workloads: (name, TOML text).
pub const BUILTIN_WORKLOADS: &[(&str, &str)] = &[
    (
        "tcp-rx",
        include_str!("../../../../presets/workloads/tcp-rx.toml"),
    ),
    (
        "forkbench",
        include_str!("../../../../presets/workloads/forkbench.toml"),
    ),
    (
        "bulk-copy",
        include_str!("../../../../presets/workloads/bulk-copy.toml"),
    ),
    (
        "bulk-zero",
        include_str!("../../../../presets/workloads/bulk-zero.toml"),
    ),
    (
        "nic-tx",
        include_str!("../../../../presets/workloads/nic-tx.toml"),
    ),
    (
        "server-rx",
        include_str!("../../../../presets/workloads/server-rx.toml"),
    ),
    (
        "nic-rx",
        include_str!("../../../../presets/workloads/nic-rx.toml"),
    ),
];

/// The built-in workloads, through the one preset loader.
pub const WORKLOADS: PresetSet = PresetSet {
    kind: "workload",
    unknown: "workload",
    unknown_or_file: "workload or file",
    dir: "workloads",
    presets: BUILTIN_WORKLOADS,
};

pub fn builtin_workload_names() -> Vec<&'static str> {
    WORKLOADS.names()
}

/// A number in a workload: an integer, or a string of terms joined by `+`, `-` and `*`, each an
/// integer (optionally with a KiB/MiB/GiB suffix) or a parameter name.
#[derive(Debug, Clone, PartialEq)]
pub enum Num {
    Int(u64),
    Expr(String),
}

/// What a workload number may be, for errors.
const NUM_FORMS: &str = "terms joined by +, - and *, each a whole number (optionally with a \
                         KiB, MiB or GiB suffix), a hex number (0x...) or a parameter name";

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(
                    f,
                    "a whole number (64) or an expression in a string (\"chunk * 2\", \"16KiB\"): {NUM_FORMS}"
                )
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num::Int(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Num, E> {
                u64::try_from(v)
                    .map(Num::Int)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Num, E> {
                Ok(Num::Expr(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

impl Default for Num {
    fn default() -> Self {
        Num::Int(0)
    }
}

fn term(tok: &str, params: &BTreeMap<String, u64>) -> Result<u64, String> {
    let t = tok.trim();
    for (suffix, mul) in [("KiB", 1u64 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30)] {
        if let Some(n) = t.strip_suffix(suffix) {
            return n
                .trim()
                .parse::<u64>()
                .ok()
                .and_then(|v| v.checked_mul(mul))
                .ok_or_else(|| format!("'{t}' is not a size"));
        }
    }
    if let Some(h) = t.strip_prefix("0x") {
        return u64::from_str_radix(&h.replace('_', ""), 16)
            .map_err(|_| format!("'{t}' is not a hex number"));
    }
    if let Ok(v) = t.replace('_', "").parse::<u64>() {
        return Ok(v);
    }
    params.get(t).copied().ok_or_else(|| {
        format!(
            "unknown parameter '{t}' (known: {})",
            params.keys().cloned().collect::<Vec<_>>().join(", ")
        )
    })
}

impl Num {
    pub fn eval(&self, params: &BTreeMap<String, u64>) -> Result<u64, String> {
        match self {
            Num::Int(v) => Ok(*v),
            Num::Expr(s) => {
                // Sums of products, left to right.
                let spaced = s
                    .replace('+', " + ")
                    .replace('-', " - ")
                    .replace('*', " * ");
                let (mut total, mut prod): (i128, i128) = (0, 1);
                let mut sign = 1i128;
                let mut expect = true;
                for tok in spaced.split_whitespace() {
                    match tok {
                        "+" | "-" if !expect => {
                            total += sign * prod;
                            prod = 1;
                            sign = if tok == "+" { 1 } else { -1 };
                            expect = true;
                        }
                        "*" if !expect => expect = true,
                        _ if expect => {
                            prod = prod
                                .checked_mul(term(tok, params)? as i128)
                                .ok_or("overflow")?;
                            expect = false;
                        }
                        _ => return Err(format!("malformed expression '{s}': {NUM_FORMS}")),
                    }
                }
                if expect {
                    return Err(format!("malformed expression '{s}': {NUM_FORMS}"));
                }
                total += sign * prod;
                u64::try_from(total)
                    .map_err(|_| format!("'{s}' evaluates to {total}, not a non-negative integer"))
            }
        }
    }
}

impl Num {
    /// The parameters this number refers to, in the order written (each once).
    fn params_used<'a>(&self, params: &'a BTreeMap<String, u64>) -> Vec<(&'a str, u64)> {
        let mut out: Vec<(&str, u64)> = Vec::new();
        if let Num::Expr(s) = self {
            for tok in s.split(['+', '-', '*']) {
                if let Some((k, v)) = params.get_key_value(tok.trim()) {
                    if !out.iter().any(|(n, _)| *n == k.as_str()) {
                        out.push((k.as_str(), *v));
                    }
                }
            }
        }
        out
    }
}

/// The most work one run of a workload may ask for: operations, counting a `compute` op as its
/// instructions and a copy or initialisation as its 64-byte lines, over every repeat and
/// iteration. The DRAM trace generator's bound (`movelab_dram::generator::MAX_COUNT`, a trillion
/// requests): a trillion is days of simulation, so a parameter asking for more is a mistake (a
/// size in bytes given where MB was meant), refused before the run rather than running for ever.
pub const MAX_WORK: u64 = movelab_dram::generator::MAX_COUNT;

/// `n` with thousands separators.
fn grouped(n: u128) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `name = value` of each parameter in `used`, joined; "" when none.
fn param_list(used: &[(&str, u64)]) -> String {
    used.iter()
        .map(|(k, v)| format!("params.{k} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A named address range. Iteration `i` uses the window starting at `base + (i * stride) mod size`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RegionSpec {
    pub name: String,
    pub base: Num,
    pub size: Num,
    #[serde(default)]
    pub stride: Num,
}

/// An address: a region plus an offset; `random = true` picks a uniformly random `align`-aligned
/// offset in the region instead (with `distinct = true`, one it has not picked before in this
/// run); region "@dst" is the destination of the last copy.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AddrSpec {
    pub region: String,
    #[serde(default)]
    pub offset: Num,
    #[serde(default)]
    pub random: bool,
    /// With `random`: this address never picks a slot twice in a run (a random permutation of
    /// the region's `align`-aligned slots, drawn lazily); once every slot has been picked it
    /// starts a new permutation. forkbench's child writes N different pages, each copied once
    /// (a second write to a page the child already owns copies nothing).
    #[serde(default)]
    pub distinct: bool,
    #[serde(default)]
    pub align: Option<Num>,
    /// Added to the offset once per repetition already done of the innermost `repeat`.
    #[serde(default)]
    pub per_rep: Num,
}

/// Where a copy's destination goes when the workload lets the allocator choose (RowClone
/// section 4.3.1): as written, in the source's subarray, or in another bank.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum DstPolicy {
    #[default]
    AsGiven,
    SameSubarray,
    OtherBank,
}

/// One operation of the program.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum OpSpec {
    /// `n` instructions; fractions `loads` and `stores` of them access random lines of `region`.
    Compute {
        n: Num,
        #[serde(default)]
        loads: f64,
        #[serde(default)]
        stores: f64,
        #[serde(default)]
        region: Option<String>,
    },
    /// A load; `chase`: its address comes from the previous explicit load (pointer chasing).
    Load {
        at: AddrSpec,
        #[serde(default)]
        chase: bool,
    },
    Store {
        at: AddrSpec,
    },
    Copy {
        src: AddrSpec,
        dst: AddrSpec,
        bytes: Num,
        #[serde(default)]
        dst_policy: DstPolicy,
    },
    Init {
        dst: AddrSpec,
        bytes: Num,
        #[serde(default)]
        value: u8,
    },
    Repeat {
        count: Num,
        ops: Vec<OpSpec>,
    },
    /// An uncached (MMIO-like) load or store: it bypasses the caches, is strongly ordered (it
    /// waits for older instructions and stores) and takes `interconnect.uncached_ns`.
    Uncached {
        at: AddrSpec,
        #[serde(default)]
        write: bool,
    },
    /// Puts one entry into the shared-memory ring `ring` of the platform (`[[rings]]`): waits
    /// while the ring is full (polling the consumer's index), writes the slot, then the
    /// producer's index (and rings the doorbell if the ring has one).
    #[serde(rename = "ring_push")]
    RingPush {
        ring: String,
    },
    /// Takes one entry from ring `ring`: waits while it is empty (polling the producer's index,
    /// or asleep until the doorbell), reads the slot, then writes the consumer's index.
    #[serde(rename = "ring_pop")]
    RingPop {
        ring: String,
    },
    /// Raises an interrupt at core `target` (index in the platform): it takes it after the
    /// delivery and entry costs, runs its workload's `handler` ops, and returns.
    Interrupt {
        target: u32,
    },
}

/// A workload file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Times the op list runs (packets, for the TCP/IP workload).
    pub iterations: Num,
    #[serde(default = "one")]
    pub seed: u64,
    #[serde(default)]
    pub params: BTreeMap<String, u64>,
    #[serde(default)]
    pub regions: Vec<RegionSpec>,
    pub ops: Vec<OpSpec>,
    /// What this program runs when its core takes an interrupt (may be empty).
    #[serde(default)]
    pub handler: Vec<OpSpec>,
    /// The handler's regions advance one stride per interrupt the core has taken (a receive
    /// path walking its descriptor ring and buffers); false: every interrupt starts at the
    /// regions' bases.
    #[serde(default)]
    pub handler_walk: bool,
    /// The handler runs once per received frame its interrupt announces and no earlier handler
    /// took (a receive path that walks every written-back descriptor, as a NAPI poll does), its
    /// regions moved on by frames handled rather than by interrupts; an interrupt that announces
    /// none (a transmit completion's) costs its entry and exit alone. While a handler runs, at
    /// most one interrupt is held (the local APIC keeps one pending per vector). False: the
    /// handler runs once per interrupt, and every interrupt that came during a handler is taken.
    #[serde(default)]
    pub handler_per_frame: bool,
    /// What the core runs instead of `handler` for an interrupt that arrived while an earlier
    /// one's handler ran: a poll loop's next turn (adaptive polling, NAPI: the interrupt stays
    /// off while the loop takes what came meanwhile), without an interrupt's entry and exit.
    /// Empty: such an interrupt runs `handler`, with its entry and exit.
    #[serde(default)]
    pub poll: Vec<OpSpec>,
}

fn one() -> u64 {
    1
}

/// A concrete operation for the core.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    Compute {
        n: u64,
        loads: f64,
        stores: f64,
        region: Option<(u64, u64)>,
    },
    Load {
        addr: u64,
        chase: bool,
    },
    Store(u64),
    Copy {
        src: u64,
        dst: u64,
        bytes: u64,
        policy: DstPolicy,
    },
    Init {
        dst: u64,
        bytes: u64,
        value: u8,
    },
    Uncached {
        addr: u64,
        write: bool,
    },
    /// Ring operations name the ring by its index in [`Workload::rings`]; the platform turns
    /// them into the wait, the slot's loads or stores and the commit below.
    RingPush {
        ring: u16,
    },
    RingPop {
        ring: u16,
    },
    Interrupt {
        target: u32,
    },
    /// Waits until ring `ring` (the platform's index) has room (`push`) or an entry; `addr`
    /// is the other side's index line, which it polls.
    RingWait {
        ring: u16,
        push: bool,
        addr: u64,
    },
    /// Publishes a push or a pop: writes this side's index line `addr`.
    RingCommit {
        ring: u16,
        push: bool,
        addr: u64,
    },
}

#[derive(Debug, Clone)]
struct Region {
    base: u64,
    size: u64,
    stride: u64,
}

/// A workload ready to run: its spec with parameters and regions checked.
#[derive(Debug, Clone)]
pub struct Workload {
    pub spec: WorkloadSpec,
    pub source: String,
    /// The ring names its ops use, in order of first use (ring ops carry the index).
    pub rings: Vec<String>,
    params: BTreeMap<String, u64>,
    regions: BTreeMap<String, Region>,
    pub iterations: u64,
}

impl Workload {
    /// A built-in workload by name, or a TOML file path; `params` override the file's.
    pub fn load(
        name_or_path: &str,
        params: &BTreeMap<String, u64>,
    ) -> Result<Workload, PlatformError> {
        let (text, src) = WORKLOADS.text(name_or_path)?;
        Workload::from_toml_str(&text, &src, params)
    }

    pub fn from_toml_str(
        text: &str,
        src: &str,
        params: &BTreeMap<String, u64>,
    ) -> Result<Workload, PlatformError> {
        Workload::new(Workload::spec_from_toml_str(text, src)?, src, params)
    }

    /// A workload file's text as read, before its parameters are set (what it declares).
    pub fn spec_from_toml_str(text: &str, src: &str) -> Result<WorkloadSpec, PlatformError> {
        let v: toml::Value = text
            .parse::<toml::Table>()
            .map(toml::Value::Table)
            .map_err(|e| PlatformError::workload(src, "(syntax)", e.to_string()))?;
        serde_path_to_error::deserialize(v).map_err(|e| {
            let key = e.path().to_string();
            PlatformError::workload(src, key, e.into_inner().message().to_string())
        })
    }

    pub fn new(
        spec: WorkloadSpec,
        src: &str,
        overrides: &BTreeMap<String, u64>,
    ) -> Result<Workload, PlatformError> {
        let mut params = spec.params.clone();
        for (k, v) in overrides {
            if !params.contains_key(k) {
                return Err(PlatformError::workload(
                    src,
                    format!("params.{k}"),
                    format!(
                        "the workload has no parameter '{k}' (it has: {})",
                        params.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
            params.insert(k.clone(), *v);
        }
        let ev = |n: &Num, place: &str| {
            n.eval(&params)
                .map_err(|e| PlatformError::workload(src, place, e))
        };
        let mut regions = BTreeMap::new();
        for (i, r) in spec.regions.iter().enumerate() {
            let place = format!("regions[{i}] ({})", r.name);
            let region = Region {
                base: ev(&r.base, &place)?,
                size: ev(&r.size, &place)?,
                stride: ev(&r.stride, &place)?,
            };
            if region.size == 0 {
                return Err(PlatformError::workload(src, place, "size must be positive"));
            }
            if region.base.checked_add(region.size).is_none() {
                return Err(PlatformError::workload(
                    src,
                    place,
                    "base + size overflows the address space",
                ));
            }
            if r.name.starts_with('@') || regions.insert(r.name.clone(), region).is_some() {
                return Err(PlatformError::workload(
                    src,
                    place,
                    format!("region name '{}' is reserved or used twice", r.name),
                ));
            }
        }
        let iterations = ev(&spec.iterations, "iterations")?;
        let mut rings = Vec::new();
        fn ring_names(ops: &[OpSpec], out: &mut Vec<String>) {
            for op in ops {
                match op {
                    OpSpec::RingPush { ring } | OpSpec::RingPop { ring } if !out.contains(ring) => {
                        out.push(ring.clone());
                    }
                    OpSpec::Repeat { ops, .. } => ring_names(ops, out),
                    _ => {}
                }
            }
        }
        ring_names(&spec.ops, &mut rings);
        ring_names(&spec.handler, &mut rings);
        ring_names(&spec.poll, &mut rings);
        if rings.len() > 1024 {
            return Err(PlatformError::workload(src, "ops", "more than 1024 rings"));
        }
        let w = Workload {
            spec: spec.clone(),
            source: src.to_string(),
            rings,
            params,
            regions,
            iterations,
        };
        w.check_ops(&spec.ops, "ops")?;
        w.check_ops(&spec.handler, "handler")?;
        w.check_handler_sizes(&spec.handler, "handler")?;
        w.check_ops(&spec.poll, "poll")?;
        w.check_handler_sizes(&spec.poll, "poll")?;
        if spec.handler_per_frame && (spec.handler.is_empty() || !spec.poll.is_empty()) {
            return Err(PlatformError::workload(
                src,
                "handler_per_frame",
                "a handler run per received frame needs [[handler]] ops and no [[poll]] (it \
                 already takes every frame that came while it ran)",
            ));
        }
        Ok(w)
    }

    fn check_addr(&self, a: &AddrSpec, place: &str) -> Result<(), PlatformError> {
        if a.distinct && !a.random {
            return Err(PlatformError::workload(
                &self.source,
                place,
                "distinct = true needs random = true (it draws random slots without repeating one)",
            ));
        }
        if a.region != "@dst" && !self.regions.contains_key(&a.region) {
            return Err(PlatformError::workload(
                &self.source,
                place,
                format!(
                    "unknown region '{}' (known: {})",
                    a.region,
                    self.regions.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        a.offset
            .eval(&self.params)
            .map_err(|e| PlatformError::workload(&self.source, place, e))?;
        a.per_rep
            .eval(&self.params)
            .map_err(|e| PlatformError::workload(&self.source, place, e))?;
        if let Some(al) = &a.align {
            let v = al
                .eval(&self.params)
                .map_err(|e| PlatformError::workload(&self.source, place, e))?;
            if v == 0 || !v.is_power_of_two() {
                return Err(PlatformError::workload(
                    &self.source,
                    place,
                    format!("align {v} must be a power of two"),
                ));
            }
        }
        Ok(())
    }

    fn check_ops(&self, ops: &[OpSpec], place: &str) -> Result<(), PlatformError> {
        for (i, op) in ops.iter().enumerate() {
            let p = format!("{place}[{i}]");
            let ev = |n: &Num| {
                n.eval(&self.params)
                    .map_err(|e| PlatformError::workload(&self.source, &p, e))
            };
            match op {
                OpSpec::Compute {
                    n,
                    loads,
                    stores,
                    region,
                } => {
                    ev(n)?;
                    if !(0.0..=1.0).contains(loads)
                        || !(0.0..=1.0).contains(stores)
                        || loads + stores > 1.0
                    {
                        return Err(PlatformError::workload(
                            &self.source,
                            &p,
                            "loads and stores are fractions that sum to at most 1",
                        ));
                    }
                    if (*loads > 0.0 || *stores > 0.0) && region.is_none() {
                        return Err(PlatformError::workload(
                            &self.source,
                            &p,
                            "a compute op with loads or stores needs a region",
                        ));
                    }
                    if let Some(r) = region {
                        if !self.regions.contains_key(r) {
                            return Err(PlatformError::workload(
                                &self.source,
                                &p,
                                format!("unknown region '{r}'"),
                            ));
                        }
                    }
                }
                OpSpec::Load { at, .. } | OpSpec::Store { at } => self.check_addr(at, &p)?,
                OpSpec::Copy {
                    src, dst, bytes, ..
                } => {
                    self.check_addr(src, &p)?;
                    self.check_addr(dst, &p)?;
                    if ev(bytes)? == 0 {
                        return Err(PlatformError::workload(
                            &self.source,
                            &p,
                            "a copy of 0 bytes",
                        ));
                    }
                }
                OpSpec::Init { dst, bytes, .. } => {
                    self.check_addr(dst, &p)?;
                    if ev(bytes)? == 0 {
                        return Err(PlatformError::workload(
                            &self.source,
                            &p,
                            "an init of 0 bytes",
                        ));
                    }
                }
                OpSpec::Repeat { count, ops } => {
                    ev(count)?;
                    self.check_ops(ops, &format!("{p}.ops"))?;
                }
                OpSpec::Uncached { at, .. } => self.check_addr(at, &p)?,
                OpSpec::RingPush { .. } | OpSpec::RingPop { .. } | OpSpec::Interrupt { .. } => {}
            }
        }
        Ok(())
    }

    /// How many operations [`Workload::ops`] yields (every iteration, every repeat expanded),
    /// saturating at `u64::MAX`: what a run's progress counts towards.
    pub fn op_count(&self) -> u64 {
        fn count(ops: &[OpSpec], p: &BTreeMap<String, u64>) -> u128 {
            ops.iter().fold(0u128, |total, op| {
                total.saturating_add(match op {
                    OpSpec::Repeat { count: c, ops } => {
                        let c = c.eval(p).unwrap_or(0) as u128;
                        if c == 0 || ops.is_empty() {
                            0
                        } else {
                            c.saturating_mul(count(ops, p))
                        }
                    }
                    _ => 1,
                })
            })
        }
        let n = count(&self.spec.ops, &self.params).saturating_mul(self.iterations as u128);
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    /// The work of `ops` run once with `params` (see [`MAX_WORK`]), saturating; the parameters
    /// it reads are added to `used`, in the order met.
    fn work<'a>(
        ops: &[OpSpec],
        params: &'a BTreeMap<String, u64>,
        used: &mut Vec<(&'a str, u64)>,
    ) -> u128 {
        let note = |n: &Num, used: &mut Vec<(&'a str, u64)>| {
            for p in n.params_used(params) {
                if !used.contains(&p) {
                    used.push(p);
                }
            }
        };
        let mut total: u128 = 0;
        for op in ops {
            let w = match op {
                OpSpec::Compute { n, .. } => {
                    note(n, used);
                    n.eval(params).unwrap_or(0).max(1) as u128
                }
                OpSpec::Copy { bytes, .. } | OpSpec::Init { bytes, .. } => {
                    note(bytes, used);
                    bytes.eval(params).unwrap_or(0).div_ceil(64).max(1) as u128
                }
                OpSpec::Repeat { count, ops } => {
                    note(count, used);
                    let c = count.eval(params).unwrap_or(0) as u128;
                    c.saturating_mul(Self::work(ops, params, used))
                }
                _ => 1,
            };
            total = total.saturating_add(w);
        }
        total
    }

    /// The whole run's work with `params`: iterations times the work of one.
    fn run_work(&self, params: &BTreeMap<String, u64>) -> u128 {
        let iterations = self.spec.iterations.eval(params).unwrap_or(0) as u128;
        iterations.saturating_mul(Self::work(&self.spec.ops, params, &mut Vec::new()))
    }

    /// Refuses a workload whose run asks for more than [`MAX_WORK`], naming the parameters that
    /// make it long (each one that, set to 1, would at least halve the work) and their values.
    /// Checked before every run (`Platform::begin`) but one with work targets: a program run for
    /// a window of instructions (RowClone's applications, `rowclone_apps::ENDLESS` units) is
    /// endless on purpose.
    pub fn check_work(&self) -> Result<(), PlatformError> {
        let mut used = self.spec.iterations.params_used(&self.params);
        let once = Self::work(&self.spec.ops, &self.params, &mut used);
        let work = once.saturating_mul(self.iterations as u128);
        if work <= MAX_WORK as u128 {
            return Ok(());
        }
        used.retain(|&(k, v)| {
            let mut one = self.params.clone();
            one.insert(k.to_string(), 1);
            v > 1 && self.run_work(&one).saturating_mul(2) <= work
        });
        let place = if used.is_empty() {
            "ops".to_string()
        } else {
            param_list(&used)
        };
        Err(PlatformError::workload(
            &self.source,
            place,
            format!(
                "the run would take {} operations ({} iterations of {} each; a compute op counts its \
                 instructions, a copy or init its 64-byte lines), more than the {} a run may take \
                 (a trillion is days of simulation); give smaller values",
                grouped(work),
                grouped(self.iterations as u128),
                grouped(once),
                grouped(MAX_WORK as u128)
            ),
        ))
    }

    /// Refuses a region, or a copy's or initialisation's size, larger than `memory_bytes` (the
    /// simulated memory the workload runs on), naming the parameters its size depends on, their
    /// values and, for a single parameter, the largest value that fits.
    pub fn check_fits(&self, memory_bytes: u64) -> Result<(), PlatformError> {
        let too_big = |n: &Num, place: String, what: &str| -> Result<(), PlatformError> {
            let v = n.eval(&self.params).unwrap_or(0);
            if v <= memory_bytes {
                return Ok(());
            }
            let used = n.params_used(&self.params);
            let expr = match n {
                Num::Expr(e) => format!("'{e}' = "),
                Num::Int(_) => String::new(),
            };
            // For one parameter (and a size growing with it): the largest value that fits.
            let most = match used.as_slice() {
                [(name, value)] => {
                    let (mut lo, mut hi) = (0u64, *value);
                    let fits = |x: u64| {
                        let mut p = self.params.clone();
                        p.insert(name.to_string(), x);
                        n.eval(&p).is_ok_and(|b| b <= memory_bytes)
                    };
                    if fits(0) {
                        while lo < hi {
                            let mid = lo + (hi - lo).div_ceil(2);
                            if fits(mid) {
                                lo = mid;
                            } else {
                                hi = mid - 1;
                            }
                        }
                        format!("; params.{name} can be at most {lo} here")
                    } else {
                        String::new()
                    }
                }
                _ => String::new(),
            };
            let with = if used.is_empty() {
                String::new()
            } else {
                format!(" with {}", param_list(&used))
            };
            Err(PlatformError::workload(
                &self.source,
                place,
                format!(
                    "{what} of {expr}{} bytes{with} is more than the platform's memory of {} bytes{most}",
                    grouped(v as u128),
                    grouped(memory_bytes as u128)
                ),
            ))
        };
        for (i, r) in self.spec.regions.iter().enumerate() {
            too_big(&r.size, format!("regions[{i}] ({})", r.name), "its size")?;
        }
        fn walk(
            ops: &[OpSpec],
            place: &str,
            f: &dyn Fn(&Num, String, &str) -> Result<(), PlatformError>,
        ) -> Result<(), PlatformError> {
            for (i, op) in ops.iter().enumerate() {
                let p = format!("{place}[{i}]");
                match op {
                    OpSpec::Copy { bytes, .. } => f(bytes, p, "a copy")?,
                    OpSpec::Init { bytes, .. } => f(bytes, p, "an init")?,
                    OpSpec::Repeat { ops, .. } => walk(ops, &format!("{p}.ops"), f)?,
                    _ => {}
                }
            }
            Ok(())
        }
        walk(&self.spec.ops, "ops", &too_big)?;
        walk(&self.spec.handler, "handler", &too_big)?;
        walk(&self.spec.poll, "poll", &too_big)
    }

    /// An interrupt handler's copies and initialisations are at most 1 MiB each (a handler is
    /// fed whole when the interrupt is taken).
    fn check_handler_sizes(&self, ops: &[OpSpec], place: &str) -> Result<(), PlatformError> {
        for (i, op) in ops.iter().enumerate() {
            let bytes = match op {
                OpSpec::Copy { bytes, .. } | OpSpec::Init { bytes, .. } => bytes,
                OpSpec::Repeat { ops, .. } => {
                    self.check_handler_sizes(ops, place)?;
                    continue;
                }
                _ => continue,
            };
            let b = bytes.eval(&self.params).unwrap_or(0);
            if b > 1 << 20 {
                return Err(PlatformError::workload(
                    &self.source,
                    format!("{place}[{i}]"),
                    format!("{b} bytes: a handler's copy or init is at most 1 MiB"),
                ));
            }
        }
        Ok(())
    }

    /// The value of a parameter.
    pub fn param(&self, name: &str) -> Option<u64> {
        self.params.get(name).copied()
    }

    /// The same workload with only the top-level ops in `range` (for running phases separately).
    pub fn with_ops(&self, range: std::ops::Range<usize>) -> Workload {
        let mut w = self.clone();
        w.spec.ops = self.spec.ops[range].to_vec();
        w
    }

    /// The same workload with every copy removed (to measure what the copies cost).
    pub fn without_copies(&self) -> Workload {
        fn walk(ops: &[OpSpec]) -> Vec<OpSpec> {
            ops.iter()
                .filter(|o| !matches!(o, OpSpec::Copy { .. }))
                .map(|o| match o {
                    OpSpec::Repeat { count, ops } => OpSpec::Repeat {
                        count: count.clone(),
                        ops: walk(ops),
                    },
                    other => other.clone(),
                })
                .collect()
        }
        let mut w = self.clone();
        w.spec.ops = walk(&self.spec.ops);
        w
    }

    /// Sets where every copy's destination goes (the allocator's policy).
    pub fn set_dst_policy(&mut self, policy: DstPolicy) {
        fn walk(ops: &mut [OpSpec], policy: DstPolicy) {
            for op in ops {
                match op {
                    OpSpec::Copy { dst_policy, .. } => *dst_policy = policy,
                    OpSpec::Repeat { ops, .. } => walk(ops, policy),
                    _ => {}
                }
            }
        }
        walk(&mut self.spec.ops, policy);
    }

    /// The interrupt handler as a workload of one iteration (None: the program has none).
    pub fn handler(&self) -> Option<Workload> {
        self.one_turn(&self.spec.handler)
    }

    /// The poll loop's turn (`poll`) as a workload of one iteration (None: the program has none).
    pub fn poll_handler(&self) -> Option<Workload> {
        self.one_turn(&self.spec.poll)
    }

    /// `ops` as a workload of one iteration (None: no ops).
    fn one_turn(&self, ops: &[OpSpec]) -> Option<Workload> {
        if ops.is_empty() {
            return None;
        }
        let mut w = self.clone();
        w.spec.ops = ops.to_vec();
        w.iterations = 1;
        Some(w)
    }

    /// The operations, generated lazily.
    pub fn ops(&self) -> OpStream<'_> {
        OpStream {
            w: self,
            rng: Xoshiro256StarStar::seed_from_u64(self.spec.seed),
            iter: 0,
            end: self.iterations,
            stack: Vec::new(),
            last_dst: 0,
            distinct: Vec::new(),
        }
    }

    /// The handler's operations (of [`Workload::handler`]) for the core's `taken`-th interrupt:
    /// its regions moved on by `taken` strides when the program says `handler_walk`.
    pub fn handler_ops(&self, taken: u64) -> OpStream<'_> {
        let mut s = self.ops();
        if self.spec.handler_walk {
            s.iter = taken;
            s.end = taken.saturating_add(self.iterations);
        }
        s
    }
}

/// The lazily generated operations of a workload.
pub struct OpStream<'a> {
    w: &'a Workload,
    rng: Xoshiro256StarStar,
    iter: u64,
    /// The iteration it stops at.
    end: u64,
    /// (ops, next index, remaining repetitions, total repetitions)
    stack: Vec<(&'a [OpSpec], usize, u64, u64)>,
    /// The destination of the last copy (the "@dst" region), set by the platform after placing it.
    pub last_dst: u64,
    /// The draws so far of each `distinct` address, keyed by the address's place in the program.
    distinct: Vec<(usize, Permutation)>,
}

/// A random permutation of `0..n`, drawn one element at a time: a Fisher-Yates shuffle that keeps
/// only the positions it has swapped, so `k` draws cost `O(k)` memory whatever `n`.
#[derive(Debug, Default)]
struct Permutation {
    drawn: u64,
    moved: std::collections::HashMap<u64, u64>,
}

impl Permutation {
    /// The next element of a permutation of `0..n` (`n` > 0); a new permutation after the last.
    fn next(&mut self, n: u64, rng: &mut Xoshiro256StarStar) -> u64 {
        if self.drawn >= n {
            self.drawn = 0;
            self.moved.clear();
        }
        let i = self.drawn;
        let j = i + rng.below(n - i);
        let at = |m: &std::collections::HashMap<u64, u64>, k: u64| *m.get(&k).unwrap_or(&k);
        let (vi, vj) = (at(&self.moved, i), at(&self.moved, j));
        self.moved.insert(j, vi);
        self.moved.remove(&i);
        self.drawn += 1;
        vj
    }
}

impl<'a> OpStream<'a> {
    fn ring_index(&self, name: &str) -> u16 {
        self.w.rings.iter().position(|r| r == name).unwrap_or(0) as u16
    }

    fn addr(&mut self, a: &AddrSpec) -> u64 {
        let p = &self.w.params;
        let rep = self
            .stack
            .last()
            .map_or(0, |&(_, _, left, total)| total - left);
        let off = a
            .offset
            .eval(p)
            .unwrap_or(0)
            .wrapping_add(rep.wrapping_mul(a.per_rep.eval(p).unwrap_or(0)));
        if a.region == "@dst" {
            return self.last_dst.wrapping_add(off);
        }
        let r = &self.w.regions[&a.region];
        if a.random {
            let align = a
                .align
                .as_ref()
                .and_then(|n| n.eval(p).ok())
                .unwrap_or(64)
                .max(1);
            let slots = (r.size / align).max(1);
            if a.distinct {
                let key = a as *const AddrSpec as usize;
                let k = match self.distinct.iter().position(|(p, _)| *p == key) {
                    Some(k) => k,
                    None => {
                        self.distinct.push((key, Permutation::default()));
                        self.distinct.len() - 1
                    }
                };
                let slot = self.distinct[k].1.next(slots, &mut self.rng);
                return r.base + slot * align + off;
            }
            return r.base + self.rng.below(slots) * align + off;
        }
        let window = self.iter.wrapping_mul(r.stride) % r.size;
        r.base + (window + off) % r.size.max(1)
    }
}

impl Iterator for OpStream<'_> {
    type Item = Op;
    fn next(&mut self) -> Option<Op> {
        loop {
            if self.stack.is_empty() {
                if self.iter >= self.end {
                    return None;
                }
                if self.w.spec.ops.is_empty() {
                    return None;
                }
                self.stack.push((&self.w.spec.ops, 0, 1, 1));
            }
            let top = self.stack.len() - 1;
            let (ops, idx, reps, total) = self.stack[top];
            if idx >= ops.len() {
                if reps > 1 {
                    self.stack[top] = (ops, 0, reps - 1, total);
                } else {
                    self.stack.pop();
                    if self.stack.is_empty() {
                        self.iter += 1;
                    }
                }
                continue;
            }
            self.stack[top].1 += 1;
            let p = &self.w.params;
            let ev = |n: &Num| n.eval(p).unwrap_or(0);
            let op = &ops[idx];
            return Some(match op {
                OpSpec::Compute {
                    n,
                    loads,
                    stores,
                    region,
                } => Op::Compute {
                    n: ev(n),
                    loads: *loads,
                    stores: *stores,
                    region: region.as_ref().map(|r| {
                        let r = &self.w.regions[r];
                        (r.base, r.size)
                    }),
                },
                OpSpec::Load { at, chase } => Op::Load {
                    addr: self.addr(at),
                    chase: *chase,
                },
                OpSpec::Store { at } => Op::Store(self.addr(at)),
                OpSpec::Copy {
                    src,
                    dst,
                    bytes,
                    dst_policy,
                } => Op::Copy {
                    src: self.addr(src),
                    dst: self.addr(dst),
                    bytes: ev(bytes),
                    policy: *dst_policy,
                },
                OpSpec::Init { dst, bytes, value } => Op::Init {
                    dst: self.addr(dst),
                    bytes: ev(bytes),
                    value: *value,
                },
                OpSpec::Uncached { at, write } => Op::Uncached {
                    addr: self.addr(at),
                    write: *write,
                },
                OpSpec::RingPush { ring } => Op::RingPush {
                    ring: self.ring_index(ring),
                },
                OpSpec::RingPop { ring } => Op::RingPop {
                    ring: self.ring_index(ring),
                },
                OpSpec::Interrupt { target } => Op::Interrupt { target: *target },
                OpSpec::Repeat { count, ops } => {
                    let c = ev(count);
                    if c > 0 && !ops.is_empty() {
                        self.stack.push((ops, 0, c, c));
                    }
                    continue;
                }
            });
        }
    }
}

/// A small deterministic random source for the core's compute expansion.
pub fn rng(seed: u64) -> Xoshiro256StarStar {
    Xoshiro256StarStar::seed_from_u64(seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn expressions() {
        let ps = p(&[("payload", 1024), ("s_mb", 64)]);
        assert_eq!(Num::Expr("payload + 64".into()).eval(&ps), Ok(1088));
        assert_eq!(Num::Expr("s_mb * 1MiB".into()).eval(&ps), Ok(64 << 20));
        assert_eq!(Num::Expr("0x1000 - 16".into()).eval(&ps), Ok(4080));
        assert_eq!(
            Num::Expr("2*3 + 4 * payload - 1".into()).eval(&ps),
            Ok(4101)
        );
        assert!(Num::Expr("nope".into())
            .eval(&ps)
            .unwrap_err()
            .contains("unknown parameter 'nope'"));
        assert!(Num::Expr("1 -".into()).eval(&ps).is_err());
        assert!(Num::Expr("1 - 2".into()).eval(&ps).is_err());
    }

    #[test]
    fn distinct_random_addresses_repeat_no_slot_until_all_are_picked() {
        let text = |distinct: bool| {
            format!(
                r#"
name = "t"
iterations = 1
[[regions]]
name = "a"
base = 0x10000
size = 4096
[[ops]]
kind = "repeat"
count = 128
ops = [{{ kind = "store", at = {{ region = "a", random = true, distinct = {distinct}, align = 64 }} }}]
"#
            )
        };
        let slots = |distinct: bool| -> Vec<u64> {
            let w = Workload::from_toml_str(&text(distinct), "t.toml", &BTreeMap::new()).unwrap();
            w.ops()
                .map(|op| match op {
                    Op::Store(a) => (a - 0x10000) / 64,
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        // 64 slots, 128 picks: each half is a permutation of the 64 slots.
        let d = slots(true);
        for half in d.chunks(64) {
            let mut h = half.to_vec();
            h.sort_unstable();
            assert_eq!(h, (0..64).collect::<Vec<u64>>());
        }
        assert_ne!(d[..64], d[64..], "a new permutation after the last slot");
        // The plain random address repeats slots (64 picks of 64 slots: about 24 repeats).
        let mut r = slots(false)[..64].to_vec();
        r.sort_unstable();
        r.dedup();
        assert!(r.len() < 60, "{} distinct of 64", r.len());
        // distinct without random is refused.
        let bad = text(true).replace("random = true, ", "");
        let e = Workload::from_toml_str(&bad, "t.toml", &BTreeMap::new()).unwrap_err();
        assert!(
            e.to_string()
                .contains("distinct = true needs random = true"),
            "{e}"
        );
    }

    #[test]
    fn regions_advance_and_repeat_loops() {
        let text = r#"
name = "t"
iterations = 3
[params]
k = 2
[[regions]]
name = "a"
base = 0x1000
size = 256
stride = 128
[[ops]]
kind = "load"
at = { region = "a", offset = 8 }
[[ops]]
kind = "repeat"
count = "k"
ops = [{ kind = "store", at = { region = "a" } }]
"#;
        let w = Workload::from_toml_str(text, "t.toml", &BTreeMap::new()).unwrap();
        let ops: Vec<Op> = w.ops().collect();
        assert_eq!(
            ops,
            vec![
                Op::Load {
                    addr: 0x1008,
                    chase: false
                },
                Op::Store(0x1000),
                Op::Store(0x1000),
                Op::Load {
                    addr: 0x1088,
                    chase: false
                },
                Op::Store(0x1080),
                Op::Store(0x1080),
                Op::Load {
                    addr: 0x1008,
                    chase: false
                },
                Op::Store(0x1000),
                Op::Store(0x1000),
            ]
        );
        let w3 = Workload::from_toml_str(text, "t.toml", &p(&[("k", 0)])).unwrap();
        assert_eq!(w3.ops().count(), 3);
        // The planned count is the stream's length, whatever the repeat count.
        for k in [0, 1, 2, 5] {
            let w = Workload::from_toml_str(text, "t.toml", &p(&[("k", k)])).unwrap();
            assert_eq!(w.op_count(), w.ops().count() as u64, "k = {k}");
        }
    }

    #[test]
    fn errors_name_the_place() {
        let bad = "name='t'\niterations=1\n[[ops]]\nkind='load'\nat={region='zz'}\n";
        let e = Workload::from_toml_str(bad, "w.toml", &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("w.toml") && e.contains("ops[0]") && e.contains("unknown region 'zz'"),
            "{e}"
        );
        let bad = "name='t'\niterations=1\n[[ops]]\nkind='jump'\n";
        let e = Workload::from_toml_str(bad, "w.toml", &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("w.toml") && e.contains("jump"), "{e}");
        let e = Workload::load("tcp-rx", &p(&[("nosuch", 1)]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no parameter 'nosuch'"), "{e}");
    }

    #[test]
    fn a_run_of_more_work_than_the_bound_is_refused_naming_its_parameters() {
        // tcp-rx with a quadrillion packets: refused at once, naming the parameter and the bound.
        let e = Workload::load("tcp-rx", &p(&[("packets", 1_000_000_000_000_000)]))
            .unwrap()
            .check_work()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("params.packets = 1000000000000000")
                && e.contains("more than the 1,000,000,000,000 a run may take"),
            "{e}"
        );
        // A compute op counts its instructions, a copy its lines, through repeats.
        let text = "name='t'\niterations='k'\n[params]\nk=1\nn=1\n[[regions]]\nname='a'\nbase=0\nsize=4096\n\
                    [[ops]]\nkind='repeat'\ncount=1000\nops=[{kind='compute', n='n'}]\n";
        let ok = Workload::from_toml_str(text, "t.toml", &p(&[("k", 1_000), ("n", 1_000_000)]))
            .unwrap()
            .check_work();
        assert!(ok.is_ok(), "{:?}", ok.err());
        let e = Workload::from_toml_str(text, "t.toml", &p(&[("k", 1_000), ("n", 1_000_001)]))
            .unwrap()
            .check_work()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "t.toml: params.k = 1000, params.n = 1000001: the run would take 1,000,001,000,000"
            ) && e.contains("1,000 iterations of 1,000,001,000 each"),
            "{e}"
        );
    }

    #[test]
    fn the_work_bound_names_only_the_parameters_that_make_the_run_long() {
        // nic-tx's switches (write_payload = 1, write_desc = 1), an unused count (rx_post = 0)
        // and a per-message cost that is not what makes the run long (clean = 300) are left out.
        let e = Workload::load(
            "nic-tx",
            &p(&[("messages", 1_000), ("gap", 1_000_000_000_000)]),
        )
        .unwrap()
        .check_work()
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("params.messages = 1000, params.gap = 1000000000000: the run would take"),
            "{e}"
        );
        for quiet in ["write_payload", "write_desc", "rx_post", "clean"] {
            assert!(!e.contains(quiet), "{quiet} named in: {e}");
        }
    }

    #[test]
    fn a_region_or_a_move_larger_than_the_memory_is_refused_naming_its_parameter() {
        let w = Workload::load("forkbench", &p(&[("s_mb", 1_000_000)])).unwrap();
        let e = w.check_fits(8 << 30).unwrap_err().to_string();
        assert!(
            e.contains("regions[0] (array): its size of 's_mb * 1MiB' = 1,048,576,000,000 bytes with \
                        params.s_mb = 1000000 is more than the platform's memory of 8,589,934,592 bytes; \
                        params.s_mb can be at most 8192 here"),
            "{e}"
        );
        assert!(Workload::load("forkbench", &p(&[("s_mb", 8192)]))
            .unwrap()
            .check_fits(8 << 30)
            .is_ok());
        let w = Workload::load("bulk-copy", &BTreeMap::new()).unwrap();
        assert!(w.check_fits(8 << 30).is_ok());
        let e = w.check_fits(4096).unwrap_err().to_string();
        assert!(
            e.contains("is more than the platform's memory of 4,096 bytes"),
            "{e}"
        );
    }

    #[test]
    fn builtins_parse() {
        for n in builtin_workload_names() {
            let w = Workload::load(n, &BTreeMap::new()).unwrap();
            assert!(w.ops().next().is_some(), "{n}");
            assert_eq!(
                w.op_count(),
                w.ops().count() as u64,
                "{n}: planned operations"
            );
        }
    }

    #[test]
    fn a_poll_loop_is_checked_as_a_handler_is() {
        let base = r#"
name = "t"
iterations = 1
[[regions]]
name = "a"
base = 0x1000
size = 4096
[[ops]]
kind = "load"
at = { region = "a" }
"#;
        let bad_region =
            format!("{base}[[poll]]\nkind = \"load\"\nat = {{ region = \"nowhere\" }}\n");
        let e = Workload::from_toml_str(&bad_region, "t.toml", &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("poll[0]") && e.contains("nowhere"), "{e}");
        let too_big = format!(
            "{base}[[poll]]\nkind = \"copy\"\nbytes = 2097152\nsrc = {{ region = \"a\" }}\ndst = {{ region = \"a\" }}\n"
        );
        let e = Workload::from_toml_str(&too_big, "t.toml", &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("poll[0]"), "{e}");
        let good = format!("{base}[[poll]]\nkind = \"load\"\nat = {{ region = \"a\" }}\n");
        let w = Workload::from_toml_str(&good, "t.toml", &BTreeMap::new()).unwrap();
        assert!(w.poll_handler().is_some());
    }

    #[test]
    fn a_handler_per_frame_needs_a_handler_and_no_poll_loop() {
        let base = "name = \"t\"\niterations = 1\nhandler_per_frame = true\n[[regions]]\nname = \"a\"\nbase = 0x1000\nsize = 4096\n[[ops]]\nkind = \"load\"\nat = { region = \"a\" }\n";
        let load = "kind = \"load\"\nat = { region = \"a\" }\n";
        for bad in [
            base.to_string(),
            format!("{base}[[handler]]\n{load}[[poll]]\n{load}"),
        ] {
            let e = Workload::from_toml_str(&bad, "t.toml", &BTreeMap::new())
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("handler_per_frame") && e.contains("t.toml"),
                "{e}"
            );
        }
        let w = Workload::from_toml_str(
            &format!("{base}[[handler]]\n{load}"),
            "t.toml",
            &BTreeMap::new(),
        )
        .unwrap();
        assert!(w.spec.handler_per_frame && w.handler().is_some());
    }
}
