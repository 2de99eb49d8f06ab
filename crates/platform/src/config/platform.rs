//! Platform configuration: the core, the caches, the interconnect, the memory system (a
//! movelab-dram config) and the copy mechanism. Built-in platforms live in `presets/platforms/`;
//! a config file may say `preset = "NAME"` and override any key, and `--set key=value` overrides
//! layer on top. Every field has a default and a one-line description.
use crate::config::io::{IoConfig, NIC_DESC_BYTES};
use crate::sim::error::PlatformError;
use crate::sim::preset::{deserialize, PresetSet};
use movelab_dram::config::{merge_toml, Config as DramConfig};
use serde::{Deserialize, Serialize};

/// The built-in platforms: (name, TOML text).
pub const BUILTIN_PLATFORMS: &[(&str, &str)] = &[
    (
        "zhao-uma-emc",
        include_str!("../../../../presets/platforms/zhao-uma-emc.toml"),
    ),
    (
        "zhao-numa-imc",
        include_str!("../../../../presets/platforms/zhao-numa-imc.toml"),
    ),
    (
        "rowclone-system",
        include_str!("../../../../presets/platforms/rowclone-system.toml"),
    ),
    (
        "rowclone-multicore",
        include_str!("../../../../presets/platforms/rowclone-multicore.toml"),
    ),
    (
        "larsen-io",
        include_str!("../../../../presets/platforms/larsen-io.toml"),
    ),
    (
        "larsen-io-idma",
        include_str!("../../../../presets/platforms/larsen-io-idma.toml"),
    ),
    (
        "server-composed",
        include_str!("../../../../presets/platforms/server-composed.toml"),
    ),
    (
        "ixp-host",
        include_str!("../../../../presets/platforms/ixp-host.toml"),
    ),
];

/// Names of the built-in platforms.
pub fn builtin_platform_names() -> Vec<&'static str> {
    PLATFORMS.names()
}

/// A core.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CoreConfig {
    /// "out-of-order" (issue any ready instruction in the window, oldest first) or "in-order"
    /// (issue in program order; a miss stalls only the first instruction that uses its value).
    pub kind: String,
    /// Core clock, MHz.
    pub clock_mhz: u64,
    /// Instructions fetched/dispatched, issued and retired per cycle.
    pub width: u32,
    /// Instruction window (reorder buffer) entries.
    pub window: u32,
    /// Load/store queue entries: loads and stores from dispatch until they retire.
    pub lsq: u32,
    /// Store buffer entries: retired stores until they are written to the cache (a store that
    /// misses waits here for its line).
    pub store_buffer: u32,
    /// Loads and stores issued per cycle (load/store units).
    pub mem_ports: u32,
    /// Outstanding cache misses to memory (MSHRs).
    pub mshrs: u32,
    /// Bytes one load or store moves in the CPU copy (register size).
    pub register_bytes: u32,
    /// Extra loop instructions per register moved by the CPU copy/init (address update, branch).
    pub copy_loop_instructions: u32,
    /// Independent dependence chains an out-of-order core overlaps in compute (ALU) code:
    /// compute runs at up to this IPC.
    pub compute_ilp: u32,
    /// The same for an in-order core: in-order issue stops at the first instruction whose
    /// operand is not ready, so with the short dependence distances of integer code it sustains
    /// about one ALU instruction per cycle.
    pub in_order_ilp: u32,
    /// The CPU copy allocates destination lines it overwrites whole without reading them from
    /// memory (as x86 fast-string copies do); otherwise every store miss reads the line first
    /// (write-allocate). Initialisation always reads (write-allocate).
    pub copy_skips_destination_fetch: bool,
    /// CPU copies and zeroing run as one marked instruction that moves a line per load and per
    /// store with no loop instructions, as in RowClone's simulated kernel (section 6: page
    /// copy/initialisation "modified ... to use the memcpy and memset instructions"; section 7.1:
    /// the baseline "reads each cache line individually ... and writes it back individually").
    /// Filling with non-zero data stays program stores of `register_bytes`.
    pub marked_bulk_ops: bool,
    /// "multithreaded": hardware contexts, each running its own copy of the program (IXP
    /// microengine: 8).
    pub threads: u32,
    /// "multithreaded": core cycles to swap to another context when the running one waits for
    /// memory (IXP: about a taken branch).
    pub switch_cycles: u32,
}

impl Default for CoreConfig {
    fn default() -> Self {
        CoreConfig {
            kind: "out-of-order".into(),
            clock_mhz: 3000,
            width: 4,
            window: 128,
            lsq: 64,
            store_buffer: 32,
            mem_ports: 2,
            mshrs: 8,
            register_bytes: 8,
            copy_loop_instructions: 1,
            compute_ilp: 2,
            in_order_ilp: 1,
            copy_skips_destination_fetch: false,
            marked_bulk_ops: false,
            threads: 1,
            switch_cycles: 1,
        }
    }
}

/// A cache level.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// Capacity in KiB.
    pub size_kib: u64,
    /// Associativity (ways per set).
    pub ways: u32,
    /// Line size in bytes (must equal the DRAM line size).
    pub line_bytes: u64,
    /// Hit latency in core cycles (from the start of the access).
    pub hit_cycles: u64,
    /// Bytes a cycle (core cycles) this level delivers to the level above it, per core: the
    /// level-2 cache's fill path into the level-1 data cache, the last level's into a core's
    /// level 2. A line filled from this level holds the path for `line_bytes / this` cycles, so
    /// hits stream at most this fast however many are in flight. 0: no limit (the path is not
    /// modelled: the papers' platforms, which describe latencies only).
    pub fill_bytes_per_cycle: u64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            size_kib: 32,
            ways: 4,
            line_bytes: 64,
            hit_cycles: 2,
            fill_bytes_per_cycle: 0,
        }
    }
}

/// The path between the core's caches and the memory controller.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct InterconnectConfig {
    /// "fsb": a pipelined shared front-side bus to an off-die memory controller (UMA/EMC);
    /// "on-die": an integrated memory controller, with a link hop to the other node (NUMA/IMC).
    /// Both run one path model timed by the numbers below (the address phase, the data path);
    /// the kind decides whether another node's memory may exist (`remote_from_channel`: on-die
    /// only) and names the path in the tables.
    pub kind: String,
    /// Latency from a cache miss to the request reaching the memory controller, ns (arbitration,
    /// request and snoop phases on a bus; the on-die path otherwise).
    pub request_ns: f64,
    /// Latency from the data leaving the memory controller to the fill reaching the cache, ns,
    /// besides the data transfer itself.
    pub response_ns: f64,
    /// Data bandwidth of the bus or path, GB/s: a 64-byte transfer occupies it 64 / bandwidth ns.
    pub bandwidth_gbs: f64,
    /// Time one transaction occupies the address and snoop phases, ns: every miss, write-back,
    /// copy command and engine snoop (one per line an engine reads or writes) takes a turn.
    pub address_ns: f64,
    /// NUMA: channels at or above this index belong to the other node (`u32::MAX`: none).
    pub remote_from_channel: u32,
    /// NUMA: extra latency each way to the other node's memory, ns.
    pub remote_hop_ns: f64,
    /// Latency of a copy command or a completion notification between the core and an engine
    /// next to the memory controller (a bus transaction with the new `copy` request type), ns.
    pub engine_message_ns: f64,
    /// Latency of an uncached (MMIO-like) load or store, ns, after its turn in the address
    /// phase: a register of a device or of an on-chip unit. Modelling choice (an on-chip
    /// register; a PCIe device's registers take far longer and its preset says so).
    pub uncached_ns: f64,
}

impl Default for InterconnectConfig {
    fn default() -> Self {
        InterconnectConfig {
            kind: "fsb".into(),
            request_ns: 20.0,
            response_ns: 15.0,
            bandwidth_gbs: 6.4,
            address_ns: 10.0,
            remote_from_channel: u32::MAX,
            remote_hop_ns: 0.0,
            engine_message_ns: 20.0,
            uncached_ns: 100.0,
        }
    }
}

/// The copy mechanism and its parameters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CopyConfig {
    /// "base" (the core copies with loads and stores), "ce" (a copy engine), "rowclone",
    /// "rowclone-zi" or "mc-dma".
    pub mechanism: String,
    /// Copy engine placement: "off-die" (in the memory controller hub) or "on-die" (beside the
    /// core, with access to its cache).
    pub placement: String,
    /// Copy engine mode: "SYNC_NLB", "SYNC_WLB" or "ASYNC" (Zhao et al. section 6.2).
    pub mode: String,
    /// Lines the engine's stream buffer holds.
    pub stream_buffer_lines: u32,
    /// Engine to memory controller latency each way, ns (off-die: inside the hub).
    pub engine_memory_ns: f64,
    /// Core cycles to translate a copy's addresses in the copy control unit (TLB hits).
    pub translate_cycles: u64,
    /// Page size: a copy is split into commands that do not cross a page.
    pub page_bytes: u64,
    /// Pending copy table entries (ASYNC): a further copy waits for a free entry.
    pub pending_copy_entries: u32,
    /// ASYNC on-die: when the multiline snoop is acknowledged, "before" (the table entry is made,
    /// at most 30 ns) or "after" (the snoop completes in the caches: 20 ns + 2 ns x 2 x lines).
    pub snoop_ack: String,
    /// On-die engine writes the destination into the core's cache instead of memory (section 6.7).
    pub dest_to_cache: bool,
    /// CPU request bypass at the memory controller (SYNC_WLB and ASYNC) guarantees the engine
    /// this fraction of column commands.
    pub engine_share: f64,
    /// When a copy engine's write of a destination line counts as done: "accepted" (the memory
    /// controller took it into its write queue, the point of coherence) or "written" (the DRAM
    /// performed it: one memory queue, no posted-write buffer, as Zhao et al. section 5.4 models
    /// the controller). The copy's final notification follows its last write done.
    pub write_done: String,
    /// Off-die synchronous engine: "serial" (a line goes to memory after its snoop's
    /// address-phase turn) or "parallel" (the snoop and the speculative memory access go out
    /// together and the line is done when both are, Zhao et al. section 5.3.1).
    pub snoop_order: String,
    /// In-memory mechanisms (RowClone, MC-DMA), a source line dirty in a core's private caches:
    /// "copy-in-cache" (RowClone section 4.2.2's proposal: the controller copies it inside that
    /// cache to the destination line, dirty, and does not wait for a flush) or "flush" (written
    /// back first, and the operation waits for the write-backs).
    pub dirty_source: String,
}

/// The values of `copy.write_done`.
pub const WRITE_DONE: [&str; 2] = ["accepted", "written"];

/// The values of `copy.snoop_order`.
pub const SNOOP_ORDERS: [&str; 2] = ["serial", "parallel"];

/// The `[copy]` keys only a copy engine reads (the others: the mechanism itself, `page_bytes`,
/// which also aligns the allocator's destinations, and `dirty_source`, which every offload's
/// cache warming follows).
pub const ENGINE_KEYS: [&str; 11] = [
    "placement",
    "mode",
    "stream_buffer_lines",
    "engine_memory_ns",
    "translate_cycles",
    "pending_copy_entries",
    "snoop_ack",
    "dest_to_cache",
    "engine_share",
    "write_done",
    "snoop_order",
];

/// The values of `copy.dirty_source`; the first is the default.
pub const DIRTY_SOURCES: [&str; 2] = ["copy-in-cache", "flush"];

impl CopyConfig {
    /// An in-memory mechanism copies a dirty source line inside its cache (`dirty_source`).
    pub fn copies_dirty_source_in_cache(&self) -> bool {
        self.dirty_source == DIRTY_SOURCES[0]
    }

    /// Checks every value, naming the key as `prefix` + its name (`copy.` for `[copy]`).
    pub fn validate(&self, src: &str, prefix: &str) -> Result<(), PlatformError> {
        let err = |k: &str, w: String| Err(PlatformError::config(src, format!("{prefix}{k}"), w));
        for (k, v, allowed) in [
            ("mechanism", &self.mechanism, MECHANISMS),
            ("placement", &self.placement, PLACEMENTS),
            ("mode", &self.mode, MODES),
            ("snoop_ack", &self.snoop_ack, &["before", "after"][..]),
            ("write_done", &self.write_done, &WRITE_DONE[..]),
            ("snoop_order", &self.snoop_order, &SNOOP_ORDERS[..]),
            ("dirty_source", &self.dirty_source, &DIRTY_SOURCES[..]),
        ] {
            if !allowed.contains(&v.as_str()) {
                return err(k, format!("'{v}' is not one of: {}", allowed.join(", ")));
            }
        }
        for (k, v, max) in [
            (
                "stream_buffer_lines",
                u64::from(self.stream_buffer_lines),
                1 << 16,
            ),
            (
                "pending_copy_entries",
                u64::from(self.pending_copy_entries),
                1 << 16,
            ),
            ("translate_cycles", self.translate_cycles.max(1), 1 << 20),
        ] {
            if v == 0 || v > max {
                return err(k, format!("{v}: must be between 1 and {max}"));
            }
        }
        if !self.engine_memory_ns.is_finite() || !(0.0..=1e6).contains(&self.engine_memory_ns) {
            return err(
                "engine_memory_ns",
                format!("{}: must be between 0 and 1e6 ns", self.engine_memory_ns),
            );
        }
        if !self.page_bytes.is_power_of_two() || self.page_bytes < 64 {
            return err(
                "page_bytes",
                format!("{}: must be a power of two of at least 64", self.page_bytes),
            );
        }
        if !(0.0..=1.0).contains(&self.engine_share) {
            return err(
                "engine_share",
                format!("{}: must be a fraction between 0 and 1", self.engine_share),
            );
        }
        if self.dest_to_cache && self.placement != "on-die" {
            return err(
                "dest_to_cache",
                "only an on-die engine can write the destination into the cache (Zhao et al. \
                 section 5.5)"
                    .into(),
            );
        }
        Ok(())
    }
}

impl Default for CopyConfig {
    fn default() -> Self {
        CopyConfig {
            mechanism: "base".into(),
            placement: "off-die".into(),
            mode: "SYNC_NLB".into(),
            stream_buffer_lines: 64,
            engine_memory_ns: 5.0,
            translate_cycles: 2,
            page_bytes: 4096,
            pending_copy_entries: 8,
            snoop_ack: "before".into(),
            dest_to_cache: false,
            engine_share: 0.25,
            write_done: "accepted".into(),
            snoop_order: "serial".into(),
            dirty_source: DIRTY_SOURCES[0].into(),
        }
    }
}

/// A group of identical cores, each running its own copy of a program (a multi-core platform).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CoreGroup {
    /// Cores in this group.
    pub count: u32,
    /// Keys of `[core]` that differ for these cores (e.g. `kind`, `clock_mhz`).
    pub core: toml::Table,
    /// The workload these cores run (a built-in name or a TOML file); empty: the workload the
    /// run is given.
    pub workload: String,
    /// Parameters of that workload.
    pub params: std::collections::BTreeMap<String, u64>,
    /// Added to every address core k of the group uses: `offset + k * stride` bytes (0 and 0:
    /// the cores share their data, e.g. a ring; a stride: each program has its own memory).
    pub offset: u64,
    pub stride: u64,
}

impl Default for CoreGroup {
    fn default() -> Self {
        CoreGroup {
            count: 1,
            core: toml::Table::new(),
            workload: String::new(),
            params: Default::default(),
            offset: 0,
            stride: 0,
        }
    }
}

/// A shared-memory ring between a producer and a consumer core (single producer, single
/// consumer). In memory: the consumer's index line at `base`, the producer's at `base + 64`,
/// then `slots` slots of `slot_bytes`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RingConfig {
    /// The name workloads use in `ring_push` / `ring_pop`.
    pub name: String,
    pub base: u64,
    pub slots: u32,
    pub slot_bytes: u32,
    /// The producer rings a doorbell on each push: an empty ring's consumer sleeps until it
    /// (instead of polling).
    pub doorbell: bool,
    /// Core cycles between two polls of a full or empty ring.
    pub poll_cycles: u32,
    /// Latency of the doorbell from the producer's push to the consumer waking, ns.
    pub doorbell_ns: f64,
}

impl Default for RingConfig {
    fn default() -> Self {
        RingConfig {
            name: String::new(),
            base: 0x7f00_0000,
            slots: 64,
            slot_bytes: 64,
            doorbell: false,
            poll_cycles: 20,
            doorbell_ns: 100.0,
        }
    }
}

/// Interrupts between cores (and, later, from devices).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct InterruptConfig {
    /// From the source raising it to the target core taking it, ns (the interrupt message).
    pub delivery_ns: f64,
    /// Core cycles from taking it to the handler's first instruction (pipeline drain, mode
    /// switch, vector fetch), during which the core issues nothing.
    pub entry_cycles: u32,
    /// Core cycles of the return to the interrupted program.
    pub exit_cycles: u32,
}

impl Default for InterruptConfig {
    fn default() -> Self {
        // Modelling choices of the order of a few hundred cycles for entry and exit on an
        // out-of-order core; presets that depend on them cite their source.
        InterruptConfig {
            delivery_ns: 100.0,
            entry_cycles: 300,
            exit_cycles: 200,
        }
    }
}

/// At most this many cores in a platform.
pub const MAX_CORES: u64 = 256;

/// The names a config may use.
pub const CORE_KINDS: &[&str] = &["out-of-order", "in-order", "multithreaded"];
pub const INTERCONNECTS: &[&str] = &["fsb", "on-die"];
pub const MECHANISMS: &[&str] = &["base", "ce", "rowclone", "rowclone-zi", "mc-dma"];
pub const PLACEMENTS: &[&str] = &["off-die", "on-die"];
pub const MODES: &[&str] = &["SYNC_NLB", "SYNC_WLB", "ASYNC"];

/// Checks a core's values; `prefix` names it in errors (`core.` or `cores: core 3: `).
fn check_core(src: &str, prefix: &str, c: &CoreConfig) -> Result<(), PlatformError> {
    let err = |key: &str, what: String| PlatformError::config(src, format!("{prefix}{key}"), what);
    if !CORE_KINDS.contains(&c.kind.as_str()) {
        return Err(err(
            "kind",
            format!("'{}' is not one of: {}", c.kind, CORE_KINDS.join(", ")),
        ));
    }
    for (key, v, max) in [
        ("clock_mhz", c.clock_mhz, 100_000),
        ("width", c.width.into(), 64),
        ("window", c.window.into(), 4096),
        ("lsq", c.lsq.into(), 4096),
        ("store_buffer", c.store_buffer.into(), 4096),
        ("mem_ports", c.mem_ports.into(), 64),
        ("mshrs", c.mshrs.into(), 1024),
        ("compute_ilp", c.compute_ilp.into(), 64),
        ("in_order_ilp", c.in_order_ilp.into(), 64),
        ("threads", c.threads.into(), 64),
    ] {
        if v == 0 || v > max {
            return Err(err(key, format!("{v}: must be between 1 and {max}")));
        }
    }
    if c.threads != 1 && c.kind != "multithreaded" {
        // Only a multithreaded core runs hardware threads; another would ignore the count.
        return Err(err(
            "threads",
            format!(
                "{}: hardware threads need kind = \"multithreaded\" (this core is {})",
                c.threads, c.kind
            ),
        ));
    }
    if !matches!(c.register_bytes, 1 | 2 | 4 | 8 | 16 | 32 | 64) {
        return Err(err(
            "register_bytes",
            format!("{}: must be a power of two from 1 to 64", c.register_bytes),
        ));
    }
    if c.copy_loop_instructions > 64 {
        return Err(err("copy_loop_instructions", "at most 64".into()));
    }
    if c.switch_cycles > 10_000 {
        return Err(err("switch_cycles", "at most 10000".into()));
    }
    Ok(())
}

/// A whole platform.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlatformConfig {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub core: CoreConfig,
    /// The cores, when there are several (empty: one core as `[core]` says). Each private
    /// L1 and L2 as `[l1]` and `[l2]`; the last level, the interconnect and memory are shared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cores: Vec<CoreGroup>,
    #[serde(default)]
    pub l1: CacheConfig,
    #[serde(default = "default_l2")]
    pub l2: CacheConfig,
    /// An optional shared last-level cache below L2. Its size and ways must be given: an
    /// `[llc]` with only a latency (or an override on a platform without one) would otherwise be
    /// a made-up 32 KiB, 4-way cache.
    #[serde(default, deserialize_with = "sized_cache")]
    pub llc: Option<CacheConfig>,
    #[serde(default)]
    pub interconnect: InterconnectConfig,
    /// The memory system: a movelab-dram config (`preset = "..."` plus overrides).
    pub memory: toml::Value,
    #[serde(default)]
    pub copy: CopyConfig,
    /// Shared-memory rings between cores.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rings: Vec<RingConfig>,
    #[serde(default)]
    pub interrupts: InterruptConfig,
    /// A PCIe device (a descriptor NIC) on the platform: its link, root complex and registers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<PcieDeviceConfig>,
    /// Further agents, any number, each a kind with its parameters and the offloads it takes
    /// (`[[agents]]`). `[copy] mechanism` and `[io]` are shorthand for the first ones: a
    /// platform with both and an agent list has them all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentSpec>,
    /// A microengine agent's parameters, as [`PlatformConfig::agent_plan`] hands them to it
    /// (never read from a file: list the agent in `[[agents]]`).
    #[serde(skip)]
    pub microengines: Option<crate::config::microengines::MicroenginesConfig>,
}

/// The kinds of agent a platform can list, each with the table its parameters come from: a
/// copy engine and the memory controller's in-memory mechanisms take `[copy]`'s keys, a NIC
/// and Larsen & Lee's integrated DMA engine (with its adapter) take `[io]`'s. The agent
/// registry builds each kind.
pub const AGENT_KINDS: &[&str] = &["copy-engine", "in-memory", "nic", "idma", "microengines"];

/// The kinds whose parameters are an `[io]` table (a device on PCIe and what drives it).
const IO_KINDS: &[&str] = &["nic", "idma"];

/// The kinds that are devices: they take no offloaded operation.
const DEVICE_KINDS: &[&str] = &["nic", "idma", "microengines"];

/// The offloaded operations an agent can take from a core: copies, zeroing (an initialisation
/// to 0) and fills with any other value.
pub const AGENT_TAKES: &[&str] = &["copy", "zero", "fill"];

/// The most agents one platform lists.
pub const MAX_AGENTS: usize = 64;

/// One agent of a platform (`[[agents]]`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct AgentSpec {
    /// Its kind (one of [`AGENT_KINDS`]).
    pub kind: String,
    /// Its name in reports (empty: the kind, with its position when the kind repeats).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The offloaded operations it takes (of [`AGENT_TAKES`]); empty: its kind's own
    /// (a copy engine copies; RowClone copies and zeroes; MC-DMA also fills; a NIC takes none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub takes: Vec<String>,
    /// The core groups (indices into `[[cores]]`, 0 for a single core) whose offloads it
    /// takes; empty: every group.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<u32>,
    /// Its parameters: keys of `[copy]` (copy-engine; in-memory, which must name its
    /// `mechanism`: rowclone, rowclone-zi or mc-dma) on top of the platform's `[copy]`, or a
    /// whole `[io]` table (nic, idma; an idma needs no `rc_read_ns`).
    #[serde(skip_serializing_if = "toml::Table::is_empty")]
    pub params: toml::Table,
}

/// One agent a platform has, from `[copy] mechanism`, `[io]` or `[[agents]]`: what the registry
/// builds and the router needs.
#[derive(Debug, Clone)]
pub struct AgentPlan {
    /// Its name in reports.
    pub name: String,
    /// Its kind (one of [`AGENT_KINDS`]).
    pub kind: &'static str,
    /// Copy, zero, fill (as [`AGENT_TAKES`]).
    pub takes: [bool; 3],
    /// The core groups whose offloads it takes (empty: every group).
    pub groups: Vec<u32>,
    /// The platform as this agent sees it: `[copy]` or `[io]` holding its own parameters.
    pub cfg: PlatformConfig,
}

/// The kind whose agent takes a core's offloads under copy mechanism `mechanism`.
fn kind_for_mechanism(mechanism: &str) -> Option<&'static str> {
    match mechanism {
        "ce" => Some("copy-engine"),
        "rowclone" | "rowclone-zi" | "mc-dma" => Some("in-memory"),
        _ => None,
    }
}

/// What a copy agent takes by default: a copy engine copies; RowClone copies and zeroes (an
/// in-DRAM fill needs a row of the value: only zeroing is offered); MC-DMA does all three.
fn default_takes(copy: &CopyConfig) -> [bool; 3] {
    match copy.mechanism.as_str() {
        "ce" => [true, false, false],
        "rowclone" | "rowclone-zi" => [true, true, false],
        "mc-dma" => [true, true, true],
        _ => [false; 3],
    }
}

/// An optional cache level, which must give `size_kib` and `ways` (the other keys default).
fn sized_cache<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<CacheConfig>, D::Error> {
    use serde::de::Error;
    let Some(t) = Option::<toml::Table>::deserialize(d)? else {
        return Ok(None);
    };
    if let Some(k) = ["size_kib", "ways"]
        .into_iter()
        .find(|k| !t.contains_key(*k))
    {
        return Err(D::Error::custom(format!("missing field `{k}`")));
    }
    // The key inside the table goes into the message, on one line ("ways: invalid value ...").
    serde_path_to_error::deserialize(toml::Value::Table(t))
        .map(Some)
        .map_err(|e| {
            let key = e.path().to_string();
            let what = e.into_inner().message().to_string();
            if what.contains(&format!("`{key}`")) {
                D::Error::custom(what)
            } else {
                D::Error::custom(format!("{key}: {what}"))
            }
        })
}

/// The memory controller's keys the platform sets from its copy settings
/// ([`PlatformConfig::dram_config`]), and what to set instead.
const DERIVED_CONTROLLER_KEYS: [(&str, &str); 3] = [
    (
        "bulk",
        "the platform sets it from copy.mechanism (RowClone for rowclone and rowclone-zi, the baseline otherwise); set copy.mechanism instead",
    ),
    (
        "cpu_bypass",
        "the platform sets it from copy.mechanism and copy.mode",
    ),
    (
        "engine_share",
        "the platform sets it from copy.engine_share; set that instead",
    ),
];

fn default_l2() -> CacheConfig {
    CacheConfig {
        size_kib: 1024,
        ways: 8,
        line_bytes: 64,
        hit_cycles: 15,
        fill_bytes_per_cycle: 0,
    }
}

/// The built-in platforms as a preset family.
const PLATFORMS: PresetSet = PresetSet {
    kind: "platform",
    unknown: "platform preset",
    unknown_or_file: "platform preset or file",
    dir: "platforms",
    presets: BUILTIN_PLATFORMS,
};

crate::preset_loader!(PlatformConfig, PLATFORMS);

impl PlatformConfig {
    /// Every core's configuration, with its group (index into `cores`; 0 for the single core).
    pub fn core_list(&self, source_name: &str) -> Result<Vec<(CoreConfig, usize)>, PlatformError> {
        if self.cores.is_empty() {
            return Ok(vec![(self.core.clone(), 0)]);
        }
        let total: u64 = self.cores.iter().map(|g| u64::from(g.count)).sum();
        if total == 0 || total > MAX_CORES {
            return Err(PlatformError::config(
                source_name,
                "cores",
                format!("{total} cores in all: must be between 1 and {MAX_CORES}"),
            ));
        }
        let mut out = Vec::new();
        for (i, g) in self.cores.iter().enumerate() {
            if g.workload.is_empty() && !g.params.is_empty() {
                // They would be lost: the run's workload takes the run's parameters.
                return Err(PlatformError::config(
                    source_name,
                    format!("cores[{i}].params"),
                    "parameters for a group without a workload of its own (it runs the run's workload, with the run's parameters): give the group a `workload`, or pass the parameters with the run",
                ));
            }
            let mut base = toml::Value::try_from(&self.core)
                .map_err(|e| PlatformError::config(source_name, "core", e.to_string()))?;
            merge_toml(&mut base, toml::Value::Table(g.core.clone()));
            let c: CoreConfig = serde_path_to_error::deserialize(base).map_err(|e| {
                let key = e.path().to_string();
                PlatformError::config(
                    source_name,
                    format!("cores[{i}].core.{key}"),
                    e.into_inner().message().to_string(),
                )
            })?;
            for _ in 0..g.count {
                out.push((c.clone(), i));
            }
        }
        Ok(out)
    }

    /// The memory system's DRAM config, with the copy settings of the platform's agents
    /// applied: the controllers' CPU request bypass when a copy engine runs SYNC_WLB or ASYNC
    /// (with that engine's share of column commands), and RowClone's split of bulk operations
    /// when an in-memory agent is RowClone. The controllers have one bulk mode, so RowClone and
    /// MC-DMA cannot share a platform, and bypassing engines must agree on their share.
    pub fn dram_config(&self, source_name: &str) -> Result<DramConfig, PlatformError> {
        // The controller keys set here from the copy settings: given in `[memory]` (a file or an
        // override), they would be replaced without a word.
        if let Some(ctl) = self
            .memory
            .get("controller")
            .and_then(toml::Value::as_table)
        {
            for (key, why) in DERIVED_CONTROLLER_KEYS {
                if ctl.contains_key(key) {
                    return Err(PlatformError::config(
                        source_name,
                        format!("memory.controller.{key}"),
                        format!("cannot be set: {why}"),
                    ));
                }
            }
        }
        let mut dc =
            DramConfig::from_value(self.memory.clone(), &format!("{source_name} [memory]"))?;
        let mut copies = vec![("copy".to_string(), self.copy.clone())];
        for (i, a) in self.agents.iter().enumerate() {
            if a.kind == "copy-engine" || a.kind == "in-memory" {
                copies.push((format!("agents[{i}]"), self.agent_copy(i, source_name)?));
            }
        }
        let bypass: Vec<_> = copies
            .iter()
            .filter(|(_, c)| c.mechanism == "ce" && c.mode != "SYNC_NLB")
            .collect();
        dc.controller.cpu_bypass = !bypass.is_empty();
        dc.controller.engine_share = bypass
            .first()
            .map_or(self.copy.engine_share, |b| b.1.engine_share);
        if let Some((k, c)) = bypass
            .iter()
            .find(|b| b.1.engine_share != dc.controller.engine_share)
        {
            return Err(PlatformError::config(
                source_name,
                format!("{k}.engine_share"),
                format!(
                    "{}: the memory controller gives one share to copy engines, and another engine has {}",
                    c.engine_share, dc.controller.engine_share
                ),
            ));
        }
        let rowclone = copies
            .iter()
            .find(|(_, c)| matches!(c.mechanism.as_str(), "rowclone" | "rowclone-zi"));
        if let (Some(_), Some((k, _))) = (
            rowclone,
            copies.iter().find(|(_, c)| c.mechanism == "mc-dma"),
        ) {
            return Err(PlatformError::config(
                source_name,
                format!("{k}.mechanism"),
                "mc-dma: the memory controller runs bulk operations one way, and another agent is RowClone",
            ));
        }
        dc.controller.bulk = if rowclone.is_some() {
            "rowclone"
        } else {
            "baseline"
        }
        .into();
        Ok(dc)
    }

    /// The `[copy]` keys in `overrides` (a table shaped like this config) that no part of this
    /// platform reads, each with why. A copy engine alone reads the engine's keys
    /// ([`ENGINE_KEYS`]): with `copy.mechanism` other than "ce" and no copy-engine agent that
    /// takes the key from `[copy]`, an override of one would change nothing and the run would
    /// look as if it had. `engine_share` is read only where an engine runs with CPU request
    /// bypass (SYNC_WLB or ASYNC). `dirty_source` is read only where some agent takes a copy,
    /// zeroing or fill from the cores. A preset or file may still describe an engine it does not
    /// use (the Zhao platforms do, for the runs that switch it on): only what an override gives
    /// is judged, and only a run that takes the config as it is should refuse it.
    pub fn unread_copy_overrides(
        &self,
        overrides: &toml::Value,
        src: &str,
    ) -> Result<Vec<(String, String)>, PlatformError> {
        let Some(given) = overrides.get("copy").and_then(toml::Value::as_table) else {
            return Ok(Vec::new());
        };
        // Every copy engine with the keys it takes from `[copy]` (the top-level engine all of them).
        let mut engines: Vec<(CopyConfig, Option<&toml::Table>)> = Vec::new();
        if self.copy.mechanism == "ce" {
            engines.push((self.copy.clone(), None));
        }
        for (i, a) in self.agents.iter().enumerate() {
            if a.kind == "copy-engine" {
                engines.push((self.agent_copy(i, src)?, Some(&a.params)));
            }
        }
        let reads = |key: &str, c: &CopyConfig, own: Option<&toml::Table>| {
            own.is_none_or(|t| !t.contains_key(key))
                && (key != "engine_share" || c.mode != MODES[0])
                && (key != "engine_memory_ns" || c.placement != "on-die")
                && (key != "pending_copy_entries" || c.mode == MODES[2])
                && (key != "snoop_ack" || (c.mode == MODES[2] && c.placement == "on-die"))
        };
        let mut out = Vec::new();
        for key in given.keys().filter(|k| ENGINE_KEYS.contains(&k.as_str())) {
            if engines.iter().any(|(c, own)| reads(key, c, *own)) {
                continue;
            }
            let why = if engines.is_empty() {
                format!(
                    "only a copy engine reads it, and this platform has none (copy.mechanism = \
                     '{}', no copy-engine agent); set copy.mechanism = \"ce\" to run one",
                    self.copy.mechanism
                )
            } else if key == "engine_memory_ns" {
                "it is an off-die engine's path to the memory controller, and this platform's \
                 engines are on-die (beside the core)"
                    .to_string()
            } else if key == "engine_share" {
                "the memory controller gives an engine a share only under CPU request bypass \
                 (copy.mode SYNC_WLB or ASYNC), and this platform's engines run SYNC_NLB"
                    .to_string()
            } else if key == "pending_copy_entries"
                && engines.iter().all(|(c, _)| c.mode != MODES[2])
            {
                "only an asynchronous engine (copy.mode ASYNC) records its copies in the pending \
                 copy table, and this platform's engines are synchronous"
                    .to_string()
            } else if key == "snoop_ack"
                && engines
                    .iter()
                    .all(|(c, _)| c.mode != MODES[2] || c.placement != "on-die")
            {
                "it orders an on-die asynchronous engine's early notification against its \
                 snoops (copy.placement on-die, copy.mode ASYNC); this platform's engines are \
                 off-die or synchronous"
                    .to_string()
            } else {
                "every copy-engine agent sets its own (agents[].params), so [copy]'s is not read"
                    .to_string()
            };
            out.push((format!("copy.{key}"), why));
        }
        if given.contains_key("dirty_source")
            && self
                .agent_plan(src)?
                .iter()
                .all(|a| !a.takes.iter().any(|&t| t))
        {
            out.push((
                "copy.dirty_source".to_string(),
                "only an offload reads it (an in-memory mechanism copies a dirty source line \
                 inside its cache, and each offload's cache warming follows it), and every copy, \
                 zeroing and fill of this platform runs on its cores"
                    .to_string(),
            ));
        }
        Ok(out)
    }

    /// The core and level-1 keys in `overrides` that no core of this platform reads, each with why:
    /// `core.in_order_ilp` where every core is out-of-order, `core.compute_ilp` where none is,
    /// `core.switch_cycles` where none is multithreaded, and `l1.fill_bytes_per_cycle`, which no
    /// level above the first fills from.
    pub fn unread_core_overrides(
        &self,
        overrides: &toml::Value,
        src: &str,
    ) -> Result<Vec<(String, String)>, PlatformError> {
        let mut out = Vec::new();
        if overrides
            .get("l1")
            .and_then(toml::Value::as_table)
            .is_some_and(|t| t.contains_key("fill_bytes_per_cycle"))
        {
            out.push((
                "l1.fill_bytes_per_cycle".to_string(),
                "a level fills the level above it, and no cache is above the first (the key is \
                 l2's and llc's)"
                    .to_string(),
            ));
        }
        let Some(core) = overrides.get("core").and_then(toml::Value::as_table) else {
            return Ok(out);
        };
        let kinds: Vec<String> = self
            .core_list(src)?
            .into_iter()
            .map(|(c, _)| c.kind)
            .collect();
        let any = |f: &dyn Fn(&str) -> bool| kinds.iter().any(|k| f(k));
        for (key, read, why) in [
            (
                "in_order_ilp",
                any(&|k| k != "out-of-order"),
                "only an in-order or multithreaded core reads it, and every core here is \
                 out-of-order (compute_ilp is theirs)",
            ),
            (
                "compute_ilp",
                any(&|k| k == "out-of-order"),
                "only an out-of-order core reads it, and no core here is (in_order_ilp is theirs)",
            ),
            (
                "switch_cycles",
                any(&|k| k == "multithreaded"),
                "only a multithreaded core swaps contexts, and no core here is",
            ),
        ] {
            if core.contains_key(key) && !read {
                out.push((format!("core.{key}"), why.to_string()));
            }
        }
        Ok(out)
    }

    /// The in-DRAM copy's keys in `overrides` (`memory.controller.copy.*`: the part and how
    /// reliably it copies) where no mechanism of the platform copies in DRAM (the controller's
    /// bulk mode, set from `[copy]` and the agents, is the baseline's), each with why.
    pub fn unread_memory_overrides(
        &self,
        overrides: &toml::Value,
        src: &str,
    ) -> Result<Vec<(String, String)>, PlatformError> {
        let given = overrides
            .get("memory")
            .and_then(|m| m.get("controller"))
            .and_then(|c| c.get("copy"))
            .and_then(toml::Value::as_table);
        let Some(given) = given else {
            return Ok(Vec::new());
        };
        if self.dram_config(src)?.controller.bulk != "baseline" {
            return Ok(Vec::new());
        }
        Ok(given
            .keys()
            .map(|k| {
                (
                    format!("memory.controller.copy.{k}"),
                    "only in-DRAM copy reads it, and no mechanism here copies in DRAM (set \
                     copy.mechanism = \"rowclone\" or \"rowclone-zi\")"
                        .to_string(),
                )
            })
            .collect())
    }

    /// The `[interconnect]` keys in `overrides` that nothing on this platform reads, each with
    /// why: `remote_hop_ns` where no memory channel lies behind the other node (channels from
    /// `remote_from_channel` on), `engine_message_ns` where no engine exchanges messages with the
    /// cores over it (a copy engine, an iDMA or microengines).
    pub fn unread_interconnect_overrides(
        &self,
        overrides: &toml::Value,
        src: &str,
    ) -> Result<Vec<(String, String)>, PlatformError> {
        let Some(given) = overrides
            .get("interconnect")
            .and_then(toml::Value::as_table)
        else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let ic = &self.interconnect;
        if given.contains_key("remote_hop_ns") {
            let channels = self.dram_config(src)?.dram.channels;
            if ic.remote_from_channel >= channels {
                out.push((
                    "interconnect.remote_hop_ns".to_string(),
                    format!(
                        "only memory behind the other node pays the hop (channels from \
                         interconnect.remote_from_channel on), and every one of this platform's \
                         {channels} channel(s) is local{}",
                        if ic.kind == "fsb" {
                            " (a front-side bus is UMA; NUMA needs interconnect.kind = \"on-die\")"
                        } else {
                            ""
                        }
                    ),
                ));
            }
        }
        if given.contains_key("engine_message_ns")
            && !self
                .agent_plan(src)?
                .iter()
                .any(|a| matches!(a.kind, "copy-engine" | "idma" | "microengines"))
        {
            out.push((
                "interconnect.engine_message_ns".to_string(),
                "only an engine's commands and notifications cross it (a copy engine, an iDMA or \
                 microengines), and this platform has none"
                    .to_string(),
            ));
        }
        Ok(out)
    }

    /// Refuses the first override [`PlatformConfig::unread_copy_overrides`],
    /// [`PlatformConfig::unread_core_overrides`], [`PlatformConfig::unread_memory_overrides`] or
    /// [`PlatformConfig::unread_interconnect_overrides`] finds, naming its key. For runs that take this config as it is (`platform run`, `movelab
    /// run`, `platform pair`, `platform compose`).
    pub fn refuse_unread_overrides(
        &self,
        overrides: &toml::Value,
        src: &str,
    ) -> Result<(), PlatformError> {
        let mut unread = self.unread_copy_overrides(overrides, src)?;
        unread.extend(self.unread_core_overrides(overrides, src)?);
        unread.extend(self.unread_memory_overrides(overrides, src)?);
        unread.extend(self.unread_interconnect_overrides(overrides, src)?);
        match unread.into_iter().next() {
            Some((key, why)) => Err(PlatformError::config(
                src,
                key,
                format!("not read on this platform: {why}"),
            )),
            None => Ok(()),
        }
    }

    /// The `[copy]` settings agent `i` of `[[agents]]` runs with: the platform's `[copy]` with
    /// the agent's parameters on top, the mechanism its kind's (a copy engine is `ce`; an
    /// in-memory agent names `rowclone`, `rowclone-zi` or `mc-dma`).
    pub fn agent_copy(&self, i: usize, src: &str) -> Result<CopyConfig, PlatformError> {
        let a = &self.agents[i];
        let prefix = format!("agents[{i}].params.");
        let mut v = toml::Value::try_from(&self.copy)
            .map_err(|e| PlatformError::config(src, "(serialise)", e.to_string()))?;
        crate::sim::preset::merge_known(&mut v, &toml::Value::Table(a.params.clone()), src, &[])
            .map_err(|e| match e {
                PlatformError::Config { key, what, .. } => {
                    PlatformError::config(src, format!("{prefix}{key}"), what)
                }
                other => other,
            })?;
        let mut c: CopyConfig = deserialize(v, src)?;
        match a.kind.as_str() {
            "copy-engine" => {
                if !a.params.contains_key("mechanism") {
                    c.mechanism = "ce".into();
                } else if c.mechanism != "ce" {
                    return Err(PlatformError::config(
                        src,
                        format!("{prefix}mechanism"),
                        format!("'{}': a copy engine's mechanism is ce", c.mechanism),
                    ));
                }
                // A key the agent lists that this engine does not read would change nothing.
                let (on_die, asynchronous) = (c.placement == "on-die", c.mode == MODES[2]);
                for (key, read, why) in [
                    (
                        "engine_memory_ns",
                        !on_die,
                        "it is an off-die engine's path to the memory controller, and this engine \
                         is on-die",
                    ),
                    (
                        "engine_share",
                        c.mode != MODES[0],
                        "the memory controller gives an engine a share only under CPU request \
                         bypass (mode SYNC_WLB or ASYNC), and this engine runs SYNC_NLB",
                    ),
                    (
                        "pending_copy_entries",
                        asynchronous,
                        "only an asynchronous engine (mode ASYNC) has a pending copy table",
                    ),
                    (
                        "snoop_ack",
                        asynchronous && on_die,
                        "it orders an on-die asynchronous engine's early notification against \
                         its snoops (placement on-die, mode ASYNC)",
                    ),
                ] {
                    if !read && a.params.contains_key(key) {
                        return Err(PlatformError::config(
                            src,
                            format!("{prefix}{key}"),
                            format!("not read by this engine: {why}"),
                        ));
                    }
                }
            }
            _ => {
                if !matches!(c.mechanism.as_str(), "rowclone" | "rowclone-zi" | "mc-dma")
                    || !a.params.contains_key("mechanism")
                {
                    return Err(PlatformError::config(
                        src,
                        format!("{prefix}mechanism"),
                        "an in-memory agent names its mechanism: rowclone, rowclone-zi or mc-dma",
                    ));
                }
            }
        }
        c.validate(src, &prefix)?;
        Ok(c)
    }

    /// Every agent of the platform, in the order they are built: the copy mechanism's
    /// (`[copy]`), the device of `[io]`, then each of `[[agents]]`.
    pub fn agent_plan(&self, src: &str) -> Result<Vec<AgentPlan>, PlatformError> {
        let mut out = Vec::new();
        if let Some(kind) = kind_for_mechanism(&self.copy.mechanism) {
            out.push(AgentPlan {
                name: kind.into(),
                kind,
                takes: default_takes(&self.copy),
                groups: Vec::new(),
                cfg: self.clone(),
            });
        }
        if self.io.is_some() {
            out.push(AgentPlan {
                name: "nic".into(),
                kind: "nic",
                takes: [false; 3],
                groups: Vec::new(),
                cfg: self.clone(),
            });
        }
        if self.agents.len() > MAX_AGENTS {
            return Err(PlatformError::config(
                src,
                "agents",
                format!("{} agents: at most {MAX_AGENTS}", self.agents.len()),
            ));
        }
        for (i, a) in self.agents.iter().enumerate() {
            let key = |k: &str| format!("agents[{i}].{k}");
            let Some(&kind) = AGENT_KINDS.iter().find(|k| **k == a.kind) else {
                return Err(PlatformError::config(
                    src,
                    key("kind"),
                    format!("'{}' is not one of: {}", a.kind, AGENT_KINDS.join(", ")),
                ));
            };
            let mut cfg = self.clone();
            cfg.agents = Vec::new();
            let mut takes = [false; 3];
            if IO_KINDS.contains(&kind) {
                let mut params = a.params.clone();
                if kind == "idma" {
                    // No device read crosses the root complex: the engine reads on the die.
                    params
                        .entry("rc_read_ns")
                        .or_insert(toml::Value::Float(0.0));
                }
                let io: PcieDeviceConfig = deserialize(toml::Value::Table(params), src)
                    .map_err(|e| rekey(e, "", &format!("agents[{i}].params.")))?;
                io.validate(src)
                    .map_err(|e| rekey(e, "io.", &format!("agents[{i}].params.")))?;
                cfg.io = Some(io);
            } else if kind == "microengines" {
                let me: crate::config::microengines::MicroenginesConfig =
                    deserialize(toml::Value::Table(a.params.clone()), src)
                        .map_err(|e| rekey(e, "", &format!("agents[{i}].params.")))?;
                me.validate(src, &format!("agents[{i}].params."))?;
                cfg.microengines = Some(me);
            } else {
                cfg.copy = self.agent_copy(i, src)?;
                takes = default_takes(&cfg.copy);
            }
            if !a.takes.is_empty() {
                takes = [false; 3];
                for t in &a.takes {
                    let Some(p) = AGENT_TAKES.iter().position(|x| x == t) else {
                        return Err(PlatformError::config(
                            src,
                            key("takes"),
                            format!("'{t}' is not one of: {}", AGENT_TAKES.join(", ")),
                        ));
                    };
                    let can = if kind == "microengines" {
                        [true, false, false]
                    } else if DEVICE_KINDS.contains(&kind) {
                        [false; 3]
                    } else {
                        default_takes(&cfg.copy)
                    };
                    if !can[p] {
                        return Err(PlatformError::config(
                            src,
                            key("takes"),
                            format!(
                                "'{t}': {} does not offer it (it takes: {})",
                                if DEVICE_KINDS.contains(&kind) {
                                    format!("a device ({kind})")
                                } else {
                                    format!("mechanism {}", cfg.copy.mechanism)
                                },
                                (0..3)
                                    .filter(|&x| can[x])
                                    .map(|x| AGENT_TAKES[x])
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        ));
                    }
                    takes[p] = true;
                }
            }
            let name = if !a.name.is_empty() {
                a.name.clone()
            } else if out.iter().any(|o: &AgentPlan| o.name == kind)
                || self.agents.iter().filter(|b| b.kind == a.kind).count() > 1
            {
                format!("{kind}-{i}")
            } else {
                kind.to_string()
            };
            out.push(AgentPlan {
                name,
                kind,
                takes,
                groups: a.groups.clone(),
                cfg,
            });
        }
        Ok(out)
    }

    /// Checks every value a user could get wrong, naming the key.
    pub fn validate(&self, src: &str) -> Result<(), PlatformError> {
        let one_of = |key: &str, v: &str, allowed: &[&str]| {
            if allowed.contains(&v) {
                Ok(())
            } else {
                Err(PlatformError::config(
                    src,
                    key,
                    format!("'{v}' is not one of: {}", allowed.join(", ")),
                ))
            }
        };
        check_core(src, "core.", &self.core)?;
        if let Some(io) = &self.io {
            io.validate(src)?;
        }
        for (i, (c, _)) in self.core_list(src)?.iter().enumerate() {
            check_core(src, &format!("cores: core {i}: "), c)?;
        }
        one_of("interconnect.kind", &self.interconnect.kind, INTERCONNECTS)?;
        // Both kinds run the same path model, timed by the numbers of `[interconnect]` (an address
        // phase and a shared data path); what the kind decides is whether another node exists: a
        // front-side bus to one memory controller hub is UMA.
        if self.interconnect.kind == "fsb" && self.interconnect.remote_from_channel != u32::MAX {
            return Err(PlatformError::config(
                src,
                "interconnect.remote_from_channel",
                format!(
                    "{}: a front-side bus platform (interconnect.kind = \"fsb\") is UMA and has no other node's channels; NUMA needs kind = \"on-die\"",
                    self.interconnect.remote_from_channel
                ),
            ));
        }
        let positive = |key: &str, v: u64, max: u64| {
            if v == 0 || v > max {
                Err(PlatformError::config(
                    src,
                    key,
                    format!("{v}: must be between 1 and {max}"),
                ))
            } else {
                Ok(())
            }
        };
        let mut levels = vec![("l1", &self.l1), ("l2", &self.l2)];
        if let Some(l) = &self.llc {
            levels.push(("llc", l));
        }
        for (name, l) in levels {
            if l.line_bytes != 64 {
                return Err(PlatformError::config(
                    src,
                    format!("{name}.line_bytes"),
                    format!(
                        "{}: only 64-byte lines are modelled (the DRAM line size)",
                        l.line_bytes
                    ),
                ));
            }
            positive(&format!("{name}.ways"), l.ways.into(), 64)?;
            positive(&format!("{name}.hit_cycles"), l.hit_cycles, 10_000)?;
            if l.fill_bytes_per_cycle > 4096 {
                return Err(PlatformError::config(
                    src,
                    format!("{name}.fill_bytes_per_cycle"),
                    format!("{}: at most 4096 (0: no limit)", l.fill_bytes_per_cycle),
                ));
            }
            let lines = l.size_kib * 1024 / l.line_bytes;
            if l.size_kib == 0
                || l.size_kib > 1 << 20
                || lines % u64::from(l.ways) != 0
                || !(lines / u64::from(l.ways)).is_power_of_two()
            {
                return Err(PlatformError::config(src, format!("{name}.size_kib"), format!("{} KiB with {} ways: the number of sets must be a power of two (and at most 1 GiB)", l.size_kib, l.ways)));
            }
        }
        let ic = &self.interconnect;
        for (key, v) in [
            ("interconnect.request_ns", ic.request_ns),
            ("interconnect.response_ns", ic.response_ns),
            ("interconnect.remote_hop_ns", ic.remote_hop_ns),
            ("interconnect.engine_message_ns", ic.engine_message_ns),
            ("interconnect.address_ns", ic.address_ns),
            ("interconnect.uncached_ns", ic.uncached_ns),
            ("interrupts.delivery_ns", self.interrupts.delivery_ns),
        ] {
            if !v.is_finite() || !(0.0..=1e6).contains(&v) {
                return Err(PlatformError::config(
                    src,
                    key,
                    format!("{v}: must be between 0 and 1e6 ns"),
                ));
            }
        }
        // Below 0.01 GB/s (a 64-byte line every 6.4 us) no run makes progress the stall guard
        // accepts; no on-chip or front-side path is that slow.
        if !ic.bandwidth_gbs.is_finite() || !(0.01..=1e4).contains(&ic.bandwidth_gbs) {
            return Err(PlatformError::config(
                src,
                "interconnect.bandwidth_gbs",
                format!("{}: must be between 0.01 and 10000 GB/s", ic.bandwidth_gbs),
            ));
        }
        if self.interrupts.entry_cycles > 1_000_000 || self.interrupts.exit_cycles > 1_000_000 {
            return Err(PlatformError::config(
                src,
                "interrupts",
                "entry_cycles and exit_cycles are at most 1000000",
            ));
        }
        if self.rings.len() > 1024 {
            return Err(PlatformError::config(src, "rings", "at most 1024 rings"));
        }
        for (i, r) in self.rings.iter().enumerate() {
            let key = |k: &str| format!("rings[{i}].{k}");
            if r.name.is_empty() || self.rings[..i].iter().any(|o| o.name == r.name) {
                return Err(PlatformError::config(
                    src,
                    key("name"),
                    format!("'{}': every ring needs a name of its own", r.name),
                ));
            }
            positive(&key("slots"), r.slots.into(), 1 << 20)?;
            positive(&key("slot_bytes"), r.slot_bytes.into(), 1 << 16)?;
            positive(&key("poll_cycles"), r.poll_cycles.into(), 1 << 20)?;
            if r.base % 64 != 0 {
                return Err(PlatformError::config(
                    src,
                    key("base"),
                    format!("{:#x}: must be 64-byte aligned", r.base),
                ));
            }
            if !r.doorbell_ns.is_finite() || !(0.0..=1e6).contains(&r.doorbell_ns) {
                return Err(PlatformError::config(
                    src,
                    key("doorbell_ns"),
                    format!("{}: must be between 0 and 1e6 ns", r.doorbell_ns),
                ));
            }
        }
        self.copy.validate(src, "copy.")?;
        let plan = self.agent_plan(src)?;
        let groups = self.cores.len().max(1);
        for (i, a) in plan.iter().enumerate() {
            for &g in &a.groups {
                if g as usize >= groups {
                    return Err(PlatformError::config(
                        src,
                        format!("agents: '{}' groups", a.name),
                        format!("core group {g}: the platform has {groups}"),
                    ));
                }
            }
            for (j, b) in plan[..i].iter().enumerate() {
                if b.name == a.name {
                    return Err(PlatformError::config(
                        src,
                        format!("agents[{j}].name"),
                        format!("'{}' names two agents: give each its own name", a.name),
                    ));
                }
                let shared = (0..groups as u32).any(|g| {
                    (a.groups.is_empty() || a.groups.contains(&g))
                        && (b.groups.is_empty() || b.groups.contains(&g))
                });
                if let Some(t) = (0..3).find(|&t| a.takes[t] && b.takes[t]) {
                    if shared {
                        return Err(PlatformError::config(
                            src,
                            format!("agents: '{}' takes", a.name),
                            format!(
                                "'{}' and '{}' both take a core group's {} offloads: give them \
                                 different core groups or operations",
                                b.name, a.name, AGENT_TAKES[t]
                            ),
                        ));
                    }
                }
            }
        }
        let dc = self.dram_config(src)?;
        let spec = dc.resolve(src)?;
        if spec.org.line_bytes() != 64 {
            return Err(PlatformError::config(
                src,
                "memory",
                format!(
                    "the DRAM line is {} bytes; the platform models 64-byte lines",
                    spec.org.line_bytes()
                ),
            ));
        }
        Ok(())
    }
}

/// An error about key `from` + K as one about `to` + K.
fn rekey(e: PlatformError, from: &str, to: &str) -> PlatformError {
    match e {
        PlatformError::Config {
            source_name,
            key,
            what,
        } => {
            let k = key.strip_prefix(from).unwrap_or(&key);
            let k = if k == "(top level)" { "" } else { k };
            PlatformError::config(source_name, format!("{to}{k}").trim_end_matches('.'), what)
        }
        other => other,
    }
}

fn default_bar_bytes() -> u64 {
    128 * 1024
}
fn default_stride() -> u64 {
    2048
}
fn default_frame() -> u32 {
    64
}

/// `[io]` of a platform: which I/O preset's link, root complex and NIC the device is, overrides
/// of them, where its registers and the driver's TX ring and buffers are, and the root complex's
/// fixed part of a device read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PcieDeviceConfig {
    /// An I/O preset (`presets/io`) or file: its `[link]`, `[root_complex]` and `[nic]`.
    pub preset: String,
    /// Overrides of the preset's tables (same keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<toml::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_complex: Option<toml::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic: Option<toml::Value>,
    /// Overrides of the preset's `[idma]` (the iDMA agent's pinned buffer and head updates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idma: Option<toml::Value>,
    /// The device's register BAR: base address (aligned to its size) and size (4 KiB-64 MiB,
    /// a power of two). Register offsets are the 82598's (TX tail at 0x6018).
    pub bar: u64,
    #[serde(default = "default_bar_bytes")]
    pub bar_bytes: u64,
    /// The TX descriptor ring in host memory (16 B descriptors, `nic.tx_ring` of them).
    pub tx_ring: u64,
    /// The driver's TX buffers: packet k of the ring uses `tx_buffers + (k mod ring) x stride`.
    pub tx_buffers: u64,
    #[serde(default = "default_stride")]
    pub tx_buffer_stride: u64,
    /// Bytes of each frame the driver posts (14 to the stride, at most 9018; with the I/O
    /// preset's `driver.tso` a send of headers and up to 64 KiB, which the NIC segments).
    #[serde(default = "default_frame")]
    pub frame_bytes: u32,
    /// The root complex's fixed part of a device read, ns: from the request's arrival (less the
    /// platform's snoop and DRAM access, which are simulated) to the completions leaving.
    pub rc_read_ns: f64,
    /// Receive: the RX descriptor ring and buffers (packet k of the ring: `rx_buffers + (k mod
    /// ring) x tx_buffer_stride`). Each uncached store to the RX tail (0x1018) posts one buffer.
    /// Without them the NIC receives nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_ring: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_buffers: Option<u64>,
    /// Frames the MAC sends come back into its receive side after `nic.mac_tx_ns + nic.mac_rx_ns`
    /// (a loopback peer); needs `rx_ring` and `rx_buffers`.
    #[serde(default)]
    pub loopback: bool,
    /// The iDMA's pinned receive buffer in host memory (`idma.rx_buffer_bytes` long, 64 B
    /// aligned): the adapter writes received frames there and the engine moves each into the
    /// buffer an RX descriptor names. An `idma` agent with `rx_ring` needs it; a NIC has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<u64>,
    /// The core the MSI-X interrupts; the core whose L2 takes DDIO writes.
    #[serde(default)]
    pub irq_core: u32,
    #[serde(default)]
    pub ddio_core: u32,
}

impl PcieDeviceConfig {
    /// The I/O configuration: the preset with the overrides; errors name `io.<key>`.
    pub fn io_config(&self, src: &str) -> Result<IoConfig, PlatformError> {
        let named = |e: PlatformError| match e {
            PlatformError::Config { key, what, .. } => {
                PlatformError::config(src, format!("io.{key}"), what)
            }
            PlatformError::Unknown { kind, name, known } => PlatformError::config(
                src,
                "io.preset",
                format!("unknown {kind} '{name}' (known: {known})"),
            ),
            other => other,
        };
        let base = IoConfig::load(&self.preset).map_err(named)?;
        let mut over = toml::map::Map::new();
        for (k, v) in [
            ("link", &self.link),
            ("root_complex", &self.root_complex),
            ("nic", &self.nic),
            ("idma", &self.idma),
        ] {
            if let Some(v) = v {
                over.insert(k.into(), v.clone());
            }
        }
        if over.is_empty() {
            return Ok(base);
        }
        base.with_overrides(toml::Value::Table(over), src)
            .map_err(named)
    }

    /// Checks every bounded value and that the BAR overlaps neither the ring nor the buffers;
    /// the error names the key.
    pub fn validate(&self, src: &str) -> Result<(), PlatformError> {
        let err = |k: &str, w: String| Err(PlatformError::config(src, format!("io.{k}"), w));
        let io = self.io_config(src)?;
        if io.nic.kind != "descriptor" {
            return err(
                "nic.kind",
                format!(
                    "'{}': only a descriptor NIC sits on the platform",
                    io.nic.kind
                ),
            );
        }
        if !self.bar_bytes.is_power_of_two() || !(4096..=1 << 26).contains(&self.bar_bytes) {
            return err(
                "bar_bytes",
                format!("{:#x}: a power of two from 4 KiB to 64 MiB", self.bar_bytes),
            );
        }
        if !self.bar.is_multiple_of(self.bar_bytes)
            || self.bar.checked_add(self.bar_bytes).is_none()
        {
            return err(
                "bar",
                format!(
                    "{:#x} is not aligned to bar_bytes ({:#x})",
                    self.bar, self.bar_bytes
                ),
            );
        }
        if self.tx_buffer_stride == 0 || self.tx_buffer_stride > 1 << 20 {
            return err(
                "tx_buffer_stride",
                format!("{}: 1 to 1 MiB", self.tx_buffer_stride),
            );
        }
        // A send longer than a jumbo frame is a TSO send: headers and up to 64 KiB of payload
        // (the 82599's TSO, as Linux limits it; 82599 specification update, clarification 1).
        let max_send = if io.driver.tso {
            65_536 + io.driver.header_bytes
        } else {
            9018
        };
        if !(14..=max_send).contains(&self.frame_bytes)
            || self.frame_bytes as u64 > self.tx_buffer_stride
        {
            return err(
                "frame_bytes",
                format!(
                    "{}: 14 to {max_send} (a frame, or with driver.tso a send of headers and up to 64 KiB) and at most tx_buffer_stride ({})",
                    self.frame_bytes, self.tx_buffer_stride
                ),
            );
        }
        if !(self.rc_read_ns.is_finite() && (0.0..=100_000.0).contains(&self.rc_read_ns)) {
            return err("rc_read_ns", format!("{}: 0 to 100000 ns", self.rc_read_ns));
        }
        let ring = io.nic.tx_ring as u64;
        let rx = io.nic.rx_ring as u64;
        let bar = (self.bar, self.bar + self.bar_bytes);
        if self.rx_ring.is_some() != self.rx_buffers.is_some()
            || (self.loopback && self.rx_ring.is_none())
        {
            return err(
                "rx_ring",
                "rx_ring and rx_buffers go together, and loopback needs both".into(),
            );
        }
        if self.rx_ring.is_some_and(|r| !r.is_multiple_of(128)) {
            return err("rx_ring", "rings are 128 B aligned".into());
        }
        let mut ranges = vec![
            ("tx_ring", self.tx_ring, ring * NIC_DESC_BYTES),
            ("tx_buffers", self.tx_buffers, ring * self.tx_buffer_stride),
        ];
        if let (Some(r), Some(b)) = (self.rx_ring, self.rx_buffers) {
            ranges.push(("rx_ring", r, rx * NIC_DESC_BYTES));
            ranges.push(("rx_buffers", b, rx * self.tx_buffer_stride));
        }
        if let Some(p) = self.pinned {
            if !p.is_multiple_of(64) {
                return err(
                    "pinned",
                    format!("{p:#x}: the pinned buffer is 64 B aligned"),
                );
            }
            ranges.push(("pinned", p, io.idma.rx_buffer_bytes as u64));
        }
        for (key, base, bytes) in ranges {
            let Some(end) = base.checked_add(bytes) else {
                return err(key, format!("{base:#x} + {bytes:#x} overflows"));
            };
            if base < bar.1 && bar.0 < end {
                return err(
                    "bar",
                    format!(
                        "the BAR {:#x}..{:#x} overlaps {key} {base:#x}..{end:#x}",
                        bar.0, bar.1
                    ),
                );
            }
        }
        if !self.tx_ring.is_multiple_of(128) {
            return err(
                "tx_ring",
                format!("{:#x}: rings are 128 B aligned", self.tx_ring),
            );
        }
        Ok(())
    }
}
