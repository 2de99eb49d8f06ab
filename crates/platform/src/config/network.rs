//! The network-I/O platform as data (`presets/network/*.toml`): the host core, the small
//! multithreaded cores, the memory channels, the media switch fabric and MACs, the wire and the
//! peer, the queues between them, and the configurations (emu nic, softnic, onloader) as
//! programs: lists of steps each side runs per packet. Every value has a default and every size a
//! user can set is bounded ([`NetworkIoConfig::validate`]).
use crate::config::platform::CacheConfig;
use crate::sim::error::PlatformError;
use crate::sim::preset::{merge_known, PresetSet};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The built-in network platforms: (name, TOML text).
pub const BUILTIN_NETWORK_PLATFORMS: &[(&str, &str)] = &[(
    "ixp2350",
    include_str!("../../../../presets/network/ixp2350.toml"),
)];

const NETWORK_PLATFORMS: PresetSet = PresetSet {
    kind: "network platform",
    unknown: "network platform preset",
    unknown_or_file: "network platform preset or file",
    dir: "network",
    presets: BUILTIN_NETWORK_PLATFORMS,
};

/// The host core: an in-order core with a private L1 and L2 (tags only, `cache.rs`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    pub clock_mhz: f64,
    /// Cycles per instruction of kernel and application code (in-order, single issue).
    pub cpi: f64,
    pub l1: CacheConfig,
    pub l2: CacheConfig,
    /// Loop cycles per line of a CPU copy (load-multiple / store-multiple of one line).
    pub copy_cycles_per_line: f64,
    /// Cycles per line of a checksum loop over data in the cache.
    pub checksum_cycles_per_line: f64,
    /// Misses a copy or checksum loop overlaps (fill buffers); a miss costs its latency over this.
    pub miss_overlap: f64,
    /// Cycles a store that misses costs (write buffer, no allocation of the line).
    pub write_miss_cycles: f64,
    /// An uncached access to the small cores' DRAM over the chip bus: ns per access and bytes
    /// per access (a read stalls for its latency; a posted write for `uncached_write_ns`).
    pub uncached_read_ns: f64,
    pub uncached_write_ns: f64,
    pub uncached_bytes: u64,
    /// Cycles per line of a cache maintenance operation (clean or invalidate by address) in
    /// the L1, and in the L2 (an outer cache, operated through its controller).
    pub cache_op_cycles: f64,
    pub l2_cache_op_cycles: f64,
    /// Small-core writes into host memory are pushed into the L2 (else the host invalidates the
    /// lines and reads them from SDRAM).
    pub l2_push: bool,
    /// Per-connection cache of user-buffer mappings (onloader).
    pub mapping_cache: bool,
    /// Named per-packet kernel costs in instructions (see the preset for values and sources).
    pub costs: BTreeMap<String, f64>,
}

/// The small cores (IXP microengines).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SmallCoreConfig {
    pub clock_mhz: f64,
    /// Small cores on receive and on transmit.
    pub rx_cores: u32,
    pub tx_cores: u32,
    /// Hardware contexts per core.
    pub threads: u32,
    /// Cycles to swap contexts.
    pub switch_cycles: u32,
    /// Cycles to issue one memory command.
    pub issue_cycles: u32,
    /// Bytes one command moves at most (a DRAM pull/push).
    pub chunk_bytes: u64,
    /// Commands of a copy in flight per context (transfer registers).
    pub copy_depth: u32,
    /// Cycles per 4-byte word of a checksum (ALU work on data in transfer registers).
    pub checksum_cycles_per_word: f64,
}

/// A memory channel: fixed latency plus occupancy at its bandwidth.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ChannelConfig {
    pub latency_ns: f64,
    /// Bytes per ns (GB/s).
    pub gbytes_per_s: f64,
}

/// The media switch fabric and its MACs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MsfConfig {
    pub rbuf_bytes: u64,
    pub tbuf_bytes: u64,
    pub element_bytes: u64,
    pub macs: u32,
    pub mac_gbps: f64,
}

/// The wire and the peer (iperf in UDP mode).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WireConfig {
    pub gbps: f64,
    /// Bytes on the wire beside the frame: preamble + SFD, FCS and the inter-frame gap.
    pub overhead_bytes: u64,
    /// One-way delay through the switch, ns.
    pub latency_ns: f64,
    /// How long the peer sends, microseconds of simulated time.
    pub duration_us: f64,
    /// The sender repeats its terminating datagram this often until it is received.
    pub fin_resend_us: f64,
}

/// Queue capacities.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// Scratch ring between the small cores and the host (entries).
    pub dev_ring: u32,
    /// Kernel backlog between the driver and the stack (packets).
    pub backlog: u32,
    /// Socket (or connection) receive queue (packets).
    pub socket: u32,
    /// Packet buffers in the small cores' DRAM, and kernel buffers pre-allocated for them.
    pub me_buffers: u32,
    pub kernel_buffers: u32,
    /// Packets the host's poll loop takes before it lets other work run.
    pub poll_budget: u32,
}

/// Where a packet's bytes are.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Loc {
    /// The MSF's receive or transmit buffer.
    Rbuf,
    Tbuf,
    /// A buffer in the small cores' DRAM.
    MeDram,
    /// A kernel buffer in host memory.
    Kernel,
    /// The application's buffer in host memory.
    User,
}

/// Which part of the packet a step touches.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Part {
    /// The whole frame (headers and payload).
    Frame,
    /// The UDP payload.
    Payload,
    /// The headers (Ethernet, IP, UDP).
    Headers,
}

/// How many bytes a step touches: a part of the packet or a number.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum Amount {
    Bytes(u64),
    Part(Part),
}

/// One step of a small core's per-packet program.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "op", rename_all = "kebab-case", deny_unknown_fields)]
pub enum MeStep {
    /// ALU work in local memory and registers.
    Compute { cycles: u32 },
    /// Moves the packet from `from` to `to` by commands of `chunk_bytes` (asynchronous; the
    /// context waits for each read, writes are posted); `checksum` verifies the UDP checksum on
    /// the way (ALU work per word).
    Copy {
        from: Loc,
        to: Loc,
        bytes: Amount,
        #[serde(default)]
        checksum: bool,
        /// The destination is not aligned to the memory's words (a user buffer): every chunk
        /// is a read-modify-write, its destination read before it is written (section 6).
        #[serde(default)]
        rmw: bool,
    },
    /// One asynchronous access of `bytes` to a channel (`sram`, `scratch`, `me_dram`,
    /// `host_sdram`); the context waits for it.
    Access { channel: String, bytes: u64 },
    /// Waits until the context's posted writes have landed (before signalling completion).
    Fence,
}

/// One step of the host's per-packet program.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "op", rename_all = "kebab-case", deny_unknown_fields)]
pub enum HostStep {
    /// A named cost of `host.costs` (instructions).
    Cost { name: String },
    /// A CPU copy of the packet from `from` to `to` (per line, through the caches; uncached from
    /// the small cores' DRAM); `checksum` folds the checksum into the copy.
    Copy {
        from: Loc,
        to: Loc,
        bytes: Amount,
        #[serde(default)]
        checksum: bool,
    },
    /// A checksum pass over the packet where it is.
    Checksum { bytes: Amount },
    /// `count` uncached accesses (device registers, scratch rings).
    Uncached {
        count: u32,
        #[serde(default)]
        write: bool,
    },
    /// Invalidates (or, with `clean`, writes back) the lines of the packet's buffer in `of`.
    CacheOp {
        of: Loc,
        bytes: Amount,
        #[serde(default)]
        clean: bool,
    },
    /// Makes the user buffer usable by the small cores: a hit in the mapping cache, or the page
    /// walk, fault-in and clean of every line.
    MapUserBuffer { bytes: Amount },
    /// Hands the packet to a small core program and spins until the program ends.
    SmallCore { steps: Vec<MeStep> },
}

/// How the host learns of received packets.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Notify {
    /// An interrupt per packet; the handler runs the driver for that packet.
    PerPacket,
    /// One interrupt, then the host polls the ring until it is empty (adaptive polling).
    AdaptivePoll,
    /// The small cores deliver to the connection's queue and interrupt only if the process waits.
    IfWaiting,
}

/// The receive side of a configuration.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RxProgram {
    pub notify: Notify,
    /// Small cores, per frame from the MSF.
    pub small_core: Vec<MeStep>,
    /// Host: the driver (interrupt or poll context), the stack (softirq) and the application's
    /// receive call.
    #[serde(default)]
    pub driver: Vec<HostStep>,
    #[serde(default)]
    pub stack: Vec<HostStep>,
    pub app: Vec<HostStep>,
}

/// The transmit side of a configuration.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TxProgram {
    /// Host: the application's send call through the driver.
    pub app: Vec<HostStep>,
    /// Small cores, per packet taken from the host's ring.
    pub small_core: Vec<MeStep>,
    /// The small cores interrupt the host to free the packet's kernel buffer (coalesced: one
    /// interrupt frees every finished buffer).
    #[serde(default)]
    pub free_by_interrupt: bool,
    /// The host's handler cost per freed buffer.
    #[serde(default)]
    pub free: Vec<HostStep>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Configuration {
    pub description: String,
    pub rx: RxProgram,
    pub tx: TxProgram,
}

/// A network-I/O platform and its configurations.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NetworkIoConfig {
    pub name: String,
    pub host: HostConfig,
    pub small_cores: SmallCoreConfig,
    pub channels: BTreeMap<String, ChannelConfig>,
    pub msf: MsfConfig,
    pub wire: WireConfig,
    pub queues: QueueConfig,
    pub configs: BTreeMap<String, Configuration>,
}

/// The channels every platform must name.
pub const CHANNELS: &[&str] = &["me_dram", "sram", "scratch", "host_sdram", "msf"];

/// Whether a step `{ op = "cost", name = NAME }` stands anywhere under `v`.
fn names_cost(v: Option<&toml::Value>, name: &str) -> bool {
    match v {
        Some(toml::Value::Table(t)) => {
            (t.get("op").and_then(|o| o.as_str()) == Some("cost")
                && t.get("name").and_then(|n| n.as_str()) == Some(name))
                || t.values().any(|x| names_cost(Some(x), name))
        }
        Some(toml::Value::Array(a)) => a.iter().any(|x| names_cost(Some(x), name)),
        _ => false,
    }
}

fn bad(src: &str, key: &str, what: impl Into<String>) -> PlatformError {
    PlatformError::config(src, key, what)
}

fn range(src: &str, key: &str, v: f64, lo: f64, hi: f64) -> Result<(), PlatformError> {
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(bad(src, key, format!("{v} is outside {lo}..={hi}")))
    }
}

crate::preset_loader!(
    NetworkIoConfig,
    NETWORK_PLATFORMS,
    merge = NetworkIoConfig::merge_overrides
);

impl NetworkIoConfig {
    pub fn from_toml_str(text: &str, src: &str) -> Result<NetworkIoConfig, PlatformError> {
        let v: toml::Value =
            toml::from_str(text).map_err(|e| bad(src, "(syntax)", e.to_string()))?;
        Self::from_value(v, src)
    }

    /// How overrides (a TOML table shaped like the config, e.g. `{host = {clock_mhz = 600}}`) go
    /// into it: they change what the preset has; the configurations and the costs take new
    /// entries, but a new cost must be named by a configuration's step (else it is a typo, such
    /// as `ip_rxx` for `ip_rx`, that would change nothing).
    fn merge_overrides(
        &self,
        base: &mut toml::Value,
        over: toml::Value,
        src: &str,
    ) -> Result<(), PlatformError> {
        merge_known(base, &over, src, &["configs", "host.costs"])?;
        let new_costs = over
            .get("host")
            .and_then(|h| h.get("costs"))
            .and_then(|c| c.as_table())
            .into_iter()
            .flat_map(|t| t.keys())
            .filter(|k| !self.host.costs.contains_key(*k));
        for name in new_costs {
            if !names_cost(base.get("configs"), name) {
                let known: Vec<&str> = self.host.costs.keys().map(String::as_str).collect();
                return Err(bad(
                    src,
                    &format!("host.costs.{name}"),
                    format!(
                        "unknown cost (the platform's: {}); a new cost must be named by a \
                         configuration's steps",
                        known.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks ranges, names and that each configuration's programs move the packet consistently.
    pub fn validate(&self, src: &str) -> Result<(), PlatformError> {
        let h = &self.host;
        range(src, "host.clock_mhz", h.clock_mhz, 1.0, 10_000.0)?;
        range(src, "host.cpi", h.cpi, 0.1, 100.0)?;
        for (k, v) in [
            ("host.copy_cycles_per_line", h.copy_cycles_per_line),
            ("host.checksum_cycles_per_line", h.checksum_cycles_per_line),
            ("host.write_miss_cycles", h.write_miss_cycles),
            ("host.cache_op_cycles", h.cache_op_cycles),
            ("host.l2_cache_op_cycles", h.l2_cache_op_cycles),
        ] {
            range(src, k, v, 0.0, 10_000.0)?;
        }
        range(src, "host.miss_overlap", h.miss_overlap, 1.0, 64.0)?;
        range(
            src,
            "host.uncached_read_ns",
            h.uncached_read_ns,
            0.0,
            100_000.0,
        )?;
        range(
            src,
            "host.uncached_write_ns",
            h.uncached_write_ns,
            0.0,
            100_000.0,
        )?;
        range(
            src,
            "host.uncached_bytes",
            h.uncached_bytes as f64,
            1.0,
            64.0,
        )?;
        for (name, c) in [("host.l1", &h.l1), ("host.l2", &h.l2)] {
            let ok = c.line_bytes.is_power_of_two()
                && (16..=256).contains(&c.line_bytes)
                && (1..=64).contains(&c.ways)
                && (1..=65_536).contains(&c.size_kib)
                && (c.size_kib * 1024 / c.line_bytes).is_multiple_of(u64::from(c.ways))
                && (c.size_kib * 1024 / c.line_bytes / u64::from(c.ways)).is_power_of_two();
            if !ok {
                return Err(bad(src, name, "needs a power-of-two line of 16-256 B, 1-64 ways, 1 KiB-64 MiB and a power-of-two number of sets"));
            }
        }
        if h.l1.line_bytes != h.l2.line_bytes {
            return Err(bad(
                src,
                "host.l2.line_bytes",
                "must equal host.l1.line_bytes",
            ));
        }
        for (k, v) in &h.costs {
            range(src, &format!("host.costs.{k}"), *v, 0.0, 10_000_000.0)?;
        }
        let m = &self.small_cores;
        range(src, "small_cores.clock_mhz", m.clock_mhz, 1.0, 10_000.0)?;
        range(src, "small_cores.rx_cores", m.rx_cores as f64, 1.0, 64.0)?;
        range(src, "small_cores.tx_cores", m.tx_cores as f64, 1.0, 64.0)?;
        range(src, "small_cores.threads", m.threads as f64, 1.0, 64.0)?;
        range(
            src,
            "small_cores.switch_cycles",
            m.switch_cycles as f64,
            0.0,
            1000.0,
        )?;
        range(
            src,
            "small_cores.issue_cycles",
            m.issue_cycles as f64,
            0.0,
            1000.0,
        )?;
        range(
            src,
            "small_cores.chunk_bytes",
            m.chunk_bytes as f64,
            4.0,
            4096.0,
        )?;
        range(
            src,
            "small_cores.copy_depth",
            m.copy_depth as f64,
            1.0,
            64.0,
        )?;
        range(
            src,
            "small_cores.checksum_cycles_per_word",
            m.checksum_cycles_per_word,
            0.0,
            1000.0,
        )?;
        for name in CHANNELS {
            let Some(c) = self.channels.get(*name) else {
                return Err(bad(src, &format!("channels.{name}"), "missing"));
            };
            range(
                src,
                &format!("channels.{name}.latency_ns"),
                c.latency_ns,
                0.0,
                1e6,
            )?;
            range(
                src,
                &format!("channels.{name}.gbytes_per_s"),
                c.gbytes_per_s,
                0.001,
                10_000.0,
            )?;
        }
        if let Some(k) = self
            .channels
            .keys()
            .find(|k| !CHANNELS.contains(&k.as_str()))
        {
            return Err(bad(
                src,
                &format!("channels.{k}"),
                format!("unknown channel (known: {})", CHANNELS.join(", ")),
            ));
        }
        let f = &self.msf;
        range(
            src,
            "msf.element_bytes",
            f.element_bytes as f64,
            64.0,
            256.0,
        )?;
        range(
            src,
            "msf.rbuf_bytes",
            f.rbuf_bytes as f64,
            2048.0,
            1_048_576.0,
        )?;
        range(
            src,
            "msf.tbuf_bytes",
            f.tbuf_bytes as f64,
            2048.0,
            1_048_576.0,
        )?;
        range(src, "msf.macs", f.macs as f64, 1.0, 16.0)?;
        range(src, "msf.mac_gbps", f.mac_gbps, 0.001, 1000.0)?;
        let w = &self.wire;
        range(src, "wire.gbps", w.gbps, 0.001, 1000.0)?;
        range(
            src,
            "wire.overhead_bytes",
            w.overhead_bytes as f64,
            0.0,
            1000.0,
        )?;
        range(src, "wire.latency_ns", w.latency_ns, 0.0, 1e9)?;
        range(src, "wire.duration_us", w.duration_us, 1.0, 10_000_000.0)?;
        range(src, "wire.fin_resend_us", w.fin_resend_us, 1.0, 1e9)?;
        let q = &self.queues;
        for (k, v) in [
            ("queues.dev_ring", q.dev_ring),
            ("queues.backlog", q.backlog),
            ("queues.socket", q.socket),
            ("queues.me_buffers", q.me_buffers),
            ("queues.kernel_buffers", q.kernel_buffers),
            ("queues.poll_budget", q.poll_budget),
        ] {
            range(src, k, v as f64, 1.0, 65_536.0)?;
        }
        if self.configs.is_empty() {
            return Err(bad(src, "configs", "no configuration"));
        }
        for (name, c) in &self.configs {
            self.check_config(src, name, c)?;
        }
        Ok(())
    }

    fn check_costs(&self, src: &str, at: &str, steps: &[HostStep]) -> Result<(), PlatformError> {
        for s in steps {
            match s {
                HostStep::Cost { name } if !self.host.costs.contains_key(name) => {
                    return Err(bad(
                        src,
                        at,
                        format!(
                            "cost '{name}' is not in host.costs (known: {})",
                            self.host
                                .costs
                                .keys()
                                .cloned()
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                }
                HostStep::SmallCore { steps, .. } => self.check_channels(src, at, steps)?,
                _ => {}
            }
        }
        Ok(())
    }

    fn check_channels(&self, src: &str, at: &str, steps: &[MeStep]) -> Result<(), PlatformError> {
        for s in steps {
            if let MeStep::Access { channel, bytes } = s {
                if !CHANNELS.contains(&channel.as_str()) {
                    return Err(bad(
                        src,
                        at,
                        format!(
                            "unknown channel '{channel}' (known: {})",
                            CHANNELS.join(", ")
                        ),
                    ));
                }
                range(src, at, *bytes as f64, 1.0, 65_536.0)?;
            }
        }
        Ok(())
    }

    /// Follows where the packet is through each program: every copy must start where the packet
    /// is, and receive must end in the user buffer, transmit in the TBUF.
    fn check_config(&self, src: &str, name: &str, c: &Configuration) -> Result<(), PlatformError> {
        let at = |part: &str| format!("configs.{name}.{part}");
        let mut loc = Loc::Rbuf;
        let me_moves = |steps: &[MeStep], loc: &mut Loc, part: &str| -> Result<(), PlatformError> {
            for s in steps {
                if let MeStep::Copy { from, to, .. } = s {
                    if from != loc {
                        return Err(bad(
                            src,
                            &at(part),
                            format!("copies from {from:?} but the packet is in {loc:?}"),
                        ));
                    }
                    *loc = *to;
                }
            }
            Ok(())
        };
        let host_moves =
            |steps: &[HostStep], loc: &mut Loc, part: &str| -> Result<(), PlatformError> {
                for s in steps {
                    match s {
                        HostStep::Copy { from, to, .. } => {
                            if from != loc {
                                return Err(bad(
                                    src,
                                    &at(part),
                                    format!("copies from {from:?} but the packet is in {loc:?}"),
                                ));
                            }
                            *loc = *to;
                        }
                        HostStep::SmallCore { steps, .. } => me_moves(steps, loc, part)?,
                        _ => {}
                    }
                }
                Ok(())
            };
        me_moves(&c.rx.small_core, &mut loc, "rx.small_core")?;
        self.check_channels(src, &at("rx.small_core"), &c.rx.small_core)?;
        for (part, steps) in [
            ("rx.driver", &c.rx.driver),
            ("rx.stack", &c.rx.stack),
            ("rx.app", &c.rx.app),
        ] {
            host_moves(steps, &mut loc, part)?;
            self.check_costs(src, &at(part), steps)?;
        }
        if loc != Loc::User {
            return Err(bad(
                src,
                &at("rx"),
                format!("receive ends with the packet in {loc:?}, not in the user buffer"),
            ));
        }
        if c.rx.notify == Notify::IfWaiting && !(c.rx.driver.is_empty() && c.rx.stack.is_empty()) {
            return Err(bad(src, &at("rx"), "notify = \"if-waiting\" delivers to the connection's queue: driver and stack must be empty"));
        }
        let mut loc = Loc::User;
        host_moves(&c.tx.app, &mut loc, "tx.app")?;
        self.check_costs(src, &at("tx.app"), &c.tx.app)?;
        self.check_costs(src, &at("tx.free"), &c.tx.free)?;
        me_moves(&c.tx.small_core, &mut loc, "tx.small_core")?;
        self.check_channels(src, &at("tx.small_core"), &c.tx.small_core)?;
        if loc != Loc::Tbuf {
            return Err(bad(
                src,
                &at("tx"),
                format!("transmit ends with the packet in {loc:?}, not in the TBUF"),
            ));
        }
        Ok(())
    }
}
