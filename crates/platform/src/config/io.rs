//! Configuration of an I/O preset, which a platform's PCIe device (`[io]`, `agents/pcie_device.rs`)
//! or iDMA agent (`agents/idma.rs`) reads: the PCIe link, the root complex (DDIO, the downstream
//! path of a doorbell or push, a measured warm read), the device (a descriptor-DMA NIC like the
//! 82598/82599, or the iDMA's FIFO+PHY adapter) and the driver programs' refill, ACK and
//! segmentation settings. The cable between hosts is the cluster link's (`systems/cluster.rs`).
//! Built-in presets live in `presets/io/`; every key has a default and a one-line description,
//! and errors name the file and the key.
use crate::sim::error::PlatformError;
use crate::sim::preset::PresetSet;
use serde::{Deserialize, Serialize};

/// Bytes of a descriptor (82598/82599 legacy and advanced descriptors are 16 B).
pub const NIC_DESC_BYTES: u64 = 16;

/// How the completer returns read data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompletionMode {
    /// One completion per RCB-aligned piece (Intel root complexes of the 2010s returned 64 B
    /// completions: pcie-model's `rcb_chunks` switch; an inference for the 5520 IOH).
    Rcb,
    /// Completions as large as MPS, ending on RCB-aligned boundaries.
    Coalesced,
}

/// The transfer rate and encoding of a generation: (GT/s per lane, payload bits per line bit).
pub fn gen_rate(gen: u8) -> Option<(f64, f64)> {
    match gen {
        1 => Some((2.5, 8.0 / 10.0)),
        2 => Some((5.0, 8.0 / 10.0)),
        3 => Some((8.0, 128.0 / 130.0)),
        _ => None,
    }
}

/// Built-in I/O platforms: (name, TOML text).
pub const BUILTIN_IO: &[(&str, &str)] = &[
    (
        "larsen-82598-gen1",
        include_str!("../../../../presets/io/larsen-82598-gen1.toml"),
    ),
    (
        "larsen-82599-gen2",
        include_str!("../../../../presets/io/larsen-82599-gen2.toml"),
    ),
    (
        "haswell-gen3",
        include_str!("../../../../presets/io/haswell-gen3.toml"),
    ),
];

pub fn builtin_io_names() -> Vec<&'static str> {
    IO_PLATFORMS.names()
}

/// The PCIe link.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LinkConfig {
    /// PCIe generation: 1, 2 or 3.
    pub gen: u8,
    /// Lanes: 1, 2, 4, 8, 16 or 32.
    pub lanes: u32,
    /// Max Payload Size, bytes (128-4096, a power of two).
    pub mps: u32,
    /// Max Read Request Size, bytes (128-4096, a power of two).
    pub mrrs: u32,
    /// Read Completion Boundary, bytes (64 or 128).
    pub rcb: u32,
    /// "rcb": one completion per RCB piece; "coalesced": completions up to MPS.
    pub completions: CompletionMode,
    /// Where the host buffers the device reads and writes lie: above 4 GB (true), where its
    /// memory requests carry the 4 DW header, or below (false), where the PCIe base specification
    /// requires the 3 DW form (4 B less a request). The simulated addresses stand for either.
    pub addr64: bool,
    /// End-to-end CRC on every TLP.
    pub ecrc: bool,
    /// Count clock-compensation SKP ordered sets.
    pub skp: bool,
    /// Latency of the link itself (PHY pipelines, traces) added to each packet's serialization, ns.
    pub latency_ns: f64,
    /// Ack/UpdateFC coalescing interval, ns; 0 = the spec's AckNak latency limit for the link.
    pub ack_ns: f64,
    /// Outstanding read tags per requester (32 without extended tags).
    pub tags: u32,
    /// Posted header / data (16 B) credits each receiver advertises.
    pub posted_hdr_credits: u32,
    pub posted_data_credits: u32,
    /// Non-posted header credits each receiver advertises.
    pub nonposted_hdr_credits: u32,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            gen: 1,
            lanes: 8,
            mps: 256,
            mrrs: 512,
            rcb: 64,
            completions: CompletionMode::Rcb,
            addr64: true,
            ecrc: false,
            skp: true,
            latency_ns: 0.0,
            ack_ns: 0.0,
            tags: 32,
            posted_hdr_credits: 64,
            posted_data_credits: 1024,
            nonposted_hdr_credits: 32,
        }
    }
}

/// The root complex / I/O hub and the host side of device accesses. The fixed part of a device
/// read is the platform's `[io] rc_read_ns` (`config/platform.rs`): the rest of the read is
/// simulated through the platform's memory system.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RootComplexConfig {
    /// A device read's host-side time per byte read, on top of the platform's `rc_read_ns`, ns.
    pub read_ns_per_byte: f64,
    /// A core's uncached store: from issue to leaving the core (write barrier, store leaves the core), ns.
    pub core_store_ns: f64,
    /// A downstream posted write (doorbell, iDMA push): from leaving the core/uncore to the link, ns.
    pub downstream_ns: f64,
    /// Device writes go into a core's cache (Intel DDIO: the device agent's `ddio_core`) instead
    /// of memory.
    pub ddio: bool,
    /// A measured host-warm 64 B device read on this platform, from the device's request to its
    /// completion, ns (0: none measured). The platform's own path is simulated; the root
    /// complex's fixed part of a read is derived as this less that path (the Haswell rows of
    /// `experiments/larsen_idma.rs`).
    pub warm_read_ns: f64,
}

impl Default for RootComplexConfig {
    fn default() -> Self {
        RootComplexConfig {
            read_ns_per_byte: 0.0,
            core_store_ns: 30.0,
            downstream_ns: 188.0,
            ddio: false,
            warm_read_ns: 0.0,
        }
    }
}

/// The device on the link: a descriptor-DMA NIC or the iDMA's FIFO+PHY adapter.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct NicConfig {
    /// "descriptor" (82598/82599-like) or "idma" (the integrated DMA engine pushes and pulls).
    pub kind: String,
    /// Descriptors per ring (a multiple of 8: rings are multiples of 128 B), up to 8192.
    pub tx_ring: u32,
    pub rx_ring: u32,
    /// Descriptors the NIC holds on chip per queue.
    pub tx_on_chip: u32,
    pub rx_on_chip: u32,
    /// TXDCTL thresholds: prefetch when fewer than PTHRESH on chip and at least HTHRESH in host
    /// memory; write back after WTHRESH (0: at once).
    pub tx_pthresh: u32,
    pub tx_hthresh: u32,
    pub tx_wthresh: u32,
    pub rx_pthresh: u32,
    pub rx_hthresh: u32,
    pub rx_wthresh: u32,
    /// "four-per-line" (prefetch RX descriptors a 64 B line at a time) or "one-at-a-time".
    pub rx_fetch: String,
    /// An advanced context descriptor precedes each packet's data descriptor (checksum offload).
    pub context_desc: bool,
    /// Interrupt moderation interval (EITR), us; 0 = an interrupt per write-back.
    pub itr_us: f64,
    /// RX buffer per descriptor, bytes.
    pub rx_buffer_bytes: u32,
    /// NIC state machine time between steps (doorbell to fetch, descriptor to payload read), ns.
    pub processing_ns: f64,
    /// MAC rate, Gb/s.
    pub mac_gbps: f64,
    /// MAC+PHY latency in each direction (transmit pipeline, receive pipeline), ns.
    pub mac_tx_ns: f64,
    pub mac_rx_ns: f64,
    /// Frames the RX FIFO holds while no descriptor is on chip (then frames are dropped).
    pub rx_fifo_frames: u32,
}

/// The `[nic]` keys the iDMA's FIFO+PHY adapter reads (`agents/idma.rs`, `devices/idma.rs`): its
/// rings, its MAC and its receive FIFO. The others (on-chip descriptors, thresholds, fetch,
/// context descriptors, interrupt moderation, RX buffer size, processing time) are a descriptor
/// NIC's, which the adapter does not have.
pub const IDMA_NIC_KEYS: [&str; 7] = [
    "kind",
    "tx_ring",
    "rx_ring",
    "mac_gbps",
    "mac_tx_ns",
    "mac_rx_ns",
    "rx_fifo_frames",
];

impl Default for NicConfig {
    fn default() -> Self {
        NicConfig {
            kind: "descriptor".into(),
            tx_ring: 512,
            rx_ring: 512,
            tx_on_chip: 64,
            rx_on_chip: 64,
            tx_pthresh: 32,
            tx_hthresh: 1,
            tx_wthresh: 0,
            rx_pthresh: 32,
            rx_hthresh: 4,
            rx_wthresh: 0,
            rx_fetch: "four-per-line".into(),
            context_desc: false,
            itr_us: 0.0,
            rx_buffer_bytes: 2048,
            processing_ns: 0.0,
            mac_gbps: 10.0,
            mac_tx_ns: 400.0,
            mac_rx_ns: 400.0,
            rx_fifo_frames: 512,
        }
    }
}

/// The integrated DMA engine (Larsen & Lee section 3). Its timing is the platform's: the agent
/// (`agents/idma.rs`) reads and writes through the memory system and rings and notifies with the
/// interconnect's on-die messages.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct IdmaConfig {
    /// The pinned receive buffer the adapter writes into, bytes (paper: 128 lines x 64 B = 8 KB).
    pub rx_buffer_bytes: u32,
    /// The engine returns buffer space to the adapter (a posted 4 B head write) after this many bytes.
    pub head_update_bytes: u32,
}

impl Default for IdmaConfig {
    fn default() -> Self {
        IdmaConfig {
            rx_buffer_bytes: 8192,
            head_update_bytes: 4096,
        }
    }
}

/// What the platform's driver programs (`nic-tx`, `nic-rx`) take from the I/O preset: refill,
/// ACK, header and segmentation settings. (The software's time is the programs' instructions on
/// the platform's cores, not a key here.)
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DriverConfig {
    /// RX refill: write the tail after this many fresh descriptors (ixgbe: 16).
    pub rx_refill_batch: u32,
    /// TCP acknowledges every this many data segments (delayed ACK: 2); 0 = no ACKs. On the
    /// platform (`net/tcp_ack.rs`) counted in bytes as Linux counts them: an ACK once more than
    /// `ack_every - 1` receive MSS are unacknowledged.
    pub ack_every: u32,
    /// On the platform: the receive MSS a connection starts with, before a segment at least as
    /// long raises it (Linux `tcp_initialize_rcv_mss`: at most `TCP_MSS_DEFAULT`, 536).
    pub rcv_mss_initial: u32,
    /// On the platform: the receiver's driver hands each poll's segments to GRO, which merges
    /// a flow's segments before TCP sees them (Linux since 2.6.29, `napi_gro_receive`).
    pub gro: bool,
    /// Protocol headers before the message (Ethernet 14 + IPv4 20 + TCP 20 + timestamps 12).
    pub header_bytes: u32,
    /// TCP maximum segment size, bytes (1448 with timestamps on a 1500 B MTU).
    pub mss: u32,
    /// Segmentation offload: the NIC cuts a large send into MSS segments from one context and
    /// the buffers' data descriptors (one per 4 KB page).
    pub tso: bool,
    /// On the platform (`agents/pcie_device.rs`): a driver's store to the RX tail refills every
    /// buffer it has cleaned (ixgbe's `ixgbe_alloc_rx_buffers`: the whole ring, less one, when
    /// the ring is set up; later every descriptor written back), with one tail write, and the
    /// driver skips the write while fewer than `rx_refill_batch` are to be posted. false: each
    /// store posts one buffer.
    pub rx_post_all: bool,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            rx_refill_batch: 16,
            ack_every: 2,
            rcv_mss_initial: 536,
            gro: false,
            header_bytes: 66,
            mss: 1448,
            tso: true,
            rx_post_all: false,
        }
    }
}

/// An I/O platform.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct IoConfig {
    pub name: String,
    pub description: String,
    pub source: String,
    pub link: LinkConfig,
    pub root_complex: RootComplexConfig,
    pub nic: NicConfig,
    pub idma: IdmaConfig,
    pub driver: DriverConfig,
}

/// The built-in I/O platforms as a preset family.
const IO_PLATFORMS: PresetSet = PresetSet {
    kind: "I/O platform",
    unknown: "I/O platform preset",
    unknown_or_file: "I/O platform preset or file",
    dir: "io",
    presets: BUILTIN_IO,
};

fn pow2_in(v: u32, lo: u32, hi: u32) -> bool {
    v.is_power_of_two() && (lo..=hi).contains(&v)
}

crate::preset_loader!(IoConfig, IO_PLATFORMS);

impl IoConfig {
    /// Checks every bounded value; the error names the key.
    pub fn validate(&self, src: &str) -> Result<(), PlatformError> {
        let err = |k: &str, w: String| Err(PlatformError::config(src, k, w));
        let l = &self.link;
        if gen_rate(l.gen).is_none() {
            return err("link.gen", format!("{} must be 1, 2 or 3", l.gen));
        }
        if !pow2_in(l.lanes, 1, 32) {
            return err(
                "link.lanes",
                format!("{} must be 1, 2, 4, 8, 16 or 32", l.lanes),
            );
        }
        if !pow2_in(l.mps, 128, 4096) {
            return err(
                "link.mps",
                format!("{} must be a power of two from 128 to 4096", l.mps),
            );
        }
        if !pow2_in(l.mrrs, 128, 4096) {
            return err(
                "link.mrrs",
                format!("{} must be a power of two from 128 to 4096", l.mrrs),
            );
        }
        if l.rcb != 64 && l.rcb != 128 {
            return err("link.rcb", format!("{} must be 64 or 128", l.rcb));
        }
        if !(1..=256).contains(&l.tags) {
            return err("link.tags", format!("{} must be from 1 to 256", l.tags));
        }
        if !(1..=4096).contains(&l.posted_hdr_credits)
            || !(1..=4096).contains(&l.nonposted_hdr_credits)
        {
            return err(
                "link.posted_hdr_credits",
                "header credits must be from 1 to 4096".into(),
            );
        }
        // A posted TLP of MPS bytes must fit the advertised data credits, or it could never go.
        if l.posted_data_credits < l.mps / 16 || l.posted_data_credits > 1 << 16 {
            return err(
                "link.posted_data_credits",
                format!(
                    "{} must be at least MPS / 16 = {} and at most 65536",
                    l.posted_data_credits,
                    l.mps / 16
                ),
            );
        }
        let times = [
            ("link.latency_ns", l.latency_ns),
            ("link.ack_ns", l.ack_ns),
            (
                "root_complex.read_ns_per_byte",
                self.root_complex.read_ns_per_byte,
            ),
            (
                "root_complex.core_store_ns",
                self.root_complex.core_store_ns,
            ),
            (
                "root_complex.downstream_ns",
                self.root_complex.downstream_ns,
            ),
            ("root_complex.warm_read_ns", self.root_complex.warm_read_ns),
            ("nic.itr_us", self.nic.itr_us),
            ("nic.processing_ns", self.nic.processing_ns),
            ("nic.mac_tx_ns", self.nic.mac_tx_ns),
            ("nic.mac_rx_ns", self.nic.mac_rx_ns),
        ];
        for (k, v) in times {
            if !v.is_finite() || !(0.0..=1e7).contains(&v) {
                return err(k, format!("{v} must be a number from 0 to 10,000,000"));
            }
        }
        let n = &self.nic;
        if n.kind != "descriptor" && n.kind != "idma" {
            return err(
                "nic.kind",
                format!("'{}' must be \"descriptor\" or \"idma\"", n.kind),
            );
        }
        for (k, v) in [("nic.tx_ring", n.tx_ring), ("nic.rx_ring", n.rx_ring)] {
            if !(8..=8192).contains(&v) || !v.is_multiple_of(8) {
                return err(
                    k,
                    format!(
                        "{v} must be a multiple of 8 from 8 to 8192 (rings are multiples of 128 B)"
                    ),
                );
            }
        }
        for (k, v, ring) in [
            ("nic.tx_on_chip", n.tx_on_chip, n.tx_ring),
            ("nic.rx_on_chip", n.rx_on_chip, n.rx_ring),
        ] {
            if !(4..=ring).contains(&v) {
                return err(k, format!("{v} must be from 4 to the ring's size {ring}"));
            }
        }
        for (k, v, cap) in [
            ("nic.tx_pthresh", n.tx_pthresh, n.tx_on_chip),
            ("nic.tx_hthresh", n.tx_hthresh, n.tx_on_chip),
            ("nic.tx_wthresh", n.tx_wthresh, n.tx_on_chip),
            ("nic.rx_pthresh", n.rx_pthresh, n.rx_on_chip),
            ("nic.rx_hthresh", n.rx_hthresh, n.rx_on_chip),
            ("nic.rx_wthresh", n.rx_wthresh, n.rx_on_chip),
        ] {
            if v > cap {
                return err(
                    k,
                    format!("{v} must be at most the descriptors held on chip ({cap})"),
                );
            }
        }
        if n.itr_us == 0.0 && (n.tx_wthresh > 1 || n.rx_wthresh > 1) {
            return err("nic.tx_wthresh", "write-back thresholds above 1 need interrupt moderation (nic.itr_us > 0): its timer flushes them".into());
        }
        if n.tx_pthresh == 0 || n.rx_pthresh == 0 {
            return err(
                "nic.tx_pthresh",
                "prefetch thresholds must be at least 1".into(),
            );
        }
        if n.rx_fetch != "four-per-line" && n.rx_fetch != "one-at-a-time" {
            return err(
                "nic.rx_fetch",
                format!(
                    "'{}' must be \"four-per-line\" or \"one-at-a-time\"",
                    n.rx_fetch
                ),
            );
        }
        if !(256..=16384).contains(&n.rx_buffer_bytes) || !n.rx_buffer_bytes.is_multiple_of(64) {
            return err(
                "nic.rx_buffer_bytes",
                format!(
                    "{} must be a multiple of 64 from 256 to 16384",
                    n.rx_buffer_bytes
                ),
            );
        }
        if !n.mac_gbps.is_finite() || !(0.1..=1000.0).contains(&n.mac_gbps) {
            return err(
                "nic.mac_gbps",
                format!("{} must be from 0.1 to 1000", n.mac_gbps),
            );
        }
        if !(1..=65536).contains(&n.rx_fifo_frames) {
            return err(
                "nic.rx_fifo_frames",
                format!("{} must be from 1 to 65536", n.rx_fifo_frames),
            );
        }
        let i = &self.idma;
        if !(2048..=1 << 20).contains(&i.rx_buffer_bytes) || !i.rx_buffer_bytes.is_multiple_of(64) {
            return err(
                "idma.rx_buffer_bytes",
                format!(
                    "{} must be a multiple of 64 from 2048 to 1 MiB",
                    i.rx_buffer_bytes
                ),
            );
        }
        if i.head_update_bytes < 64 || i.head_update_bytes > i.rx_buffer_bytes / 2 {
            return err(
                "idma.head_update_bytes",
                format!(
                    "{} must be from 64 to half the receive buffer",
                    i.head_update_bytes
                ),
            );
        }
        let d = &self.driver;
        if d.rx_refill_batch == 0 || d.rx_refill_batch > n.rx_ring / 2 {
            return err(
                "driver.rx_refill_batch",
                format!("{} must be from 1 to half the RX ring", d.rx_refill_batch),
            );
        }
        if d.ack_every > 64 {
            return err(
                "driver.ack_every",
                format!("{} must be at most 64", d.ack_every),
            );
        }
        if !(88..=d.mss.max(88)).contains(&d.rcv_mss_initial) {
            return err(
                "driver.rcv_mss_initial",
                format!(
                    "{} must be from 88 (Linux TCP_MIN_MSS) to driver.mss ({})",
                    d.rcv_mss_initial, d.mss
                ),
            );
        }
        if !(40..=256).contains(&d.header_bytes) {
            return err(
                "driver.header_bytes",
                format!("{} must be from 40 to 256", d.header_bytes),
            );
        }
        if d.mss < 64 || d.mss + d.header_bytes > n.rx_buffer_bytes.min(9216) {
            return err(
                "driver.mss",
                format!(
                    "{} must be at least 64 and a segment with headers must fit an RX buffer",
                    d.mss
                ),
            );
        }
        Ok(())
    }
}
