//! Statistics of a platform run: time, instructions and IPC, offloaded copies, cache behaviour,
//! memory traffic split into copy and other traffic (FMTC), bandwidth, and the DRAM model's own
//! statistics including its energy. Serialisable, for JSON and Python.
use movelab_dram::stats::Stats as DramStats;
use serde::Serialize;

/// For `skip_serializing_if`: a count left out of reports while it is zero.
pub(crate) fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct CacheStats {
    pub l1_hits: u64,
    pub l1_misses: u64,
    pub l2_hits: u64,
    pub l2_misses: u64,
    pub llc_hits: u64,
    pub llc_misses: u64,
}

/// Bytes over the memory channels.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MemoryTraffic {
    /// Everything the channels moved.
    pub channel_bytes: u64,
    /// Line requests the platform sent (fills, write-backs, engine reads and writes).
    pub platform_bytes: u64,
    /// Of those, the ones a copy or initialisation caused (its loads and stores, the write-backs
    /// of lines it dirtied, an engine's reads and writes).
    pub copy_bytes: u64,
    /// Lines the memory controller moved by itself for bulk operations (MC-DMA, and the channel
    /// part of a RowClone split).
    pub bulk_bytes: u64,
    /// Fraction of memory traffic due to copies and initialisation: (copy + bulk) / channel.
    pub fmtc: f64,
    pub bandwidth_gbs: f64,
}

/// Lines a copy mechanism handled.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CopyLines {
    /// Copy engine: source lines read, of them supplied by a cache, destination lines written.
    pub engine_read: u64,
    pub engine_from_cache: u64,
    pub engine_written: u64,
    /// In-memory mechanisms: dirty source lines flushed first, cached destination lines
    /// invalidated, zero lines inserted into the cache (RowClone-ZI).
    pub flushed: u64,
    pub invalidated: u64,
    pub inserted: u64,
    /// In-memory mechanisms: dirty source lines copied inside their cache to the destination
    /// (`copy.dirty_source = "copy-in-cache"`; left out when none, so existing digests hold).
    #[serde(skip_serializing_if = "is_zero")]
    pub copied_in_cache: u64,
}

/// One core's share of a multi-core run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CoreStats {
    pub core: u32,
    pub kind: String,
    pub workload: String,
    /// From the start until its program finished.
    pub time_ns: f64,
    pub cycles: u64,
    pub instructions: u64,
    pub ipc: f64,
    pub l1_misses: u64,
    pub l2_misses: u64,
    pub interrupts: u64,
    /// The physical core it ran on (a multithreaded core's contexts share one) and that core's
    /// context swaps.
    pub engine: u32,
    pub context_switches: u64,
    /// Program instructions retired by the end of the run (a copy or initialisation counts as
    /// one, whatever runs it).
    pub work_instructions: u64,
    /// With instruction targets (`Platform::set_work_targets`): the target, and the time and
    /// cycles this core took to retire it (or to finish its program, if that came first).
    pub target_instructions: u64,
    pub target_ns: f64,
    pub target_cycles: u64,
    /// With instruction targets on a platform whose cores each own a memory region: this core's
    /// own measurement, from its warm-up to its own target ([`CoreWindow`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<CoreWindow>,
}

/// DRAM traffic and energy attributed to one core, running totals (see
/// `MemorySystem::set_owners` for the rule). A line belongs to the core whose memory region holds
/// its address, so a write-back counts for the core whose line it was, whichever cache evicted it.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct CoreTraffic {
    /// Line requests of its lines the memory controllers carried out: reads (cache fills, engine
    /// reads) and writes (write-backs, engine writes), 64 bytes each.
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Bytes of the bulk operations (RowClone copies and zeroing, controller DMA) whose
    /// destination is in its region.
    pub bulk_op_bytes: u64,
    /// Its share of the lines the memory controllers moved on their own for bulk operations
    /// (the channel part of a RowClone split): each interval's lines in proportion to the bulk
    /// operation bytes issued in it.
    pub bulk_channel_bytes: f64,
    /// Its share of the DRAM energy: each interval's background and refresh energy in equal
    /// parts among the cores, the rest (activate, precharge, read, write, transfer, I/O) in
    /// proportion to the interval's channel bytes.
    pub dram_energy_nj: f64,
}

impl CoreTraffic {
    /// Bytes over the memory channels.
    pub fn channel_bytes(&self) -> f64 {
        (self.read_bytes + self.write_bytes) as f64 + self.bulk_channel_bytes
    }
}

/// One core's own measurement window: from its warm-up to the moment it reached its own
/// instruction target (the cores past their targets keep running, but what they do afterwards
/// is not theirs to count).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct CoreWindow {
    /// Program instructions it retired in it.
    pub work_instructions: u64,
    /// Its bytes over the memory channels, with the write-backs its caches owe (the change in
    /// its dirty lines) as lines.
    pub channel_bytes: u64,
    /// Its DRAM energy, with the owed write-backs at the mean energy per line as of its target.
    pub dram_energy_nj: f64,
}

/// A run's measurement window: what happened between every core's warm-up and the end.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct WindowStats {
    pub time_ns: f64,
    /// Program instructions all cores retired in it (a copy or initialisation counts as one).
    pub work_instructions: u64,
    /// Bytes over the memory channels, and of them the ones copies and initialisation caused
    /// (as `MemoryTraffic::copy_bytes` + `bulk_bytes`).
    pub channel_bytes: u64,
    pub copy_bytes: u64,
    pub dram_energy_nj: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct PlatformStats {
    pub platform: String,
    /// The programs the cores ran, in core-group order, each once (`"nic-tx + server-rx"` where
    /// a group runs its own); `per_core` says which core ran which.
    pub workload: String,
    /// The cores' kinds, each once, in core order (`"out-of-order + multithreaded"`).
    pub core: String,
    /// The platform's `[copy]` settings; further copy agents (`[[agents]]`) are in `agents`.
    pub mechanism: String,
    pub placement: String,
    pub mode: String,
    /// Simulated time from the first instruction until every operation (asynchronous copies
    /// included) finished.
    pub time_ns: f64,
    pub core_cycles: u64,
    pub instructions: u64,
    pub ipc: f64,
    /// Copies and initialisations handed to an engine or the memory controller.
    pub offloads: u64,
    /// Their mean time from issue to completion.
    pub mean_offload_ns: f64,
    pub offload_time_ns: f64,
    /// Cycles the window's head waited for memory or an engine.
    pub head_stall_cycles: u64,
    /// Loads and stores held back because their line was in a pending copy.
    pub pending_copy_stalls: u64,
    pub copy_lines: CopyLines,
    pub caches: CacheStats,
    /// Fraction of the time the bus (or on-die path) data lines were busy.
    pub bus_busy_fraction: f64,
    pub dram_energy_nj: f64,
    pub memory: MemoryTraffic,
    /// Coherence traffic among the cores' caches (multi-core runs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coherence: Option<CoherenceStats>,
    /// Shared-memory rings: pushes, pops, polls, sleeps, doorbells.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rings: Vec<RingStats>,
    /// Interrupts taken and uncached accesses made (shown when there were any).
    #[serde(skip_serializing_if = "is_zero")]
    pub interrupts: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub uncached_accesses: u64,
    /// The measurement window of a run with instruction targets (`Platform::set_work_targets`):
    /// from the moment every core finished its warm-up to the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowStats>,
    /// Per-core statistics (multi-core runs only; a single core's are the figures above).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_core: Vec<CoreStats>,
    /// Running totals of the DRAM traffic and energy attributed to each core at the end
    /// (platforms whose cores each own a memory region, with instruction targets), and to no
    /// core (addresses below every core's region).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub traffic_by_core: Vec<CoreTraffic>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traffic_unattributed: Option<CoreTraffic>,
    /// PCIe devices on the platform (`[io]`): bytes on their links and latency stacks (the
    /// `device` sections of the NIC agents in `agents`, kept here for older readers).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceStats>,
    /// One section per agent (copy engines, in-memory mechanisms, devices), in the order they
    /// were built.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentStats>,
    pub dram: DramStats,
}

/// One agent's section of a platform run's statistics.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AgentStats {
    /// Its name (`[[agents]] name`, else its kind) and kind.
    pub name: String,
    pub kind: String,
    /// The offloaded operations it takes (copy, zero, fill) and from which core groups (empty:
    /// all).
    pub takes: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<u32>,
    /// Operations it finished, their summed and mean time from issue to completion, and when
    /// the last finished.
    pub ops: u64,
    pub op_time_ns: f64,
    pub mean_op_ns: f64,
    pub last_done_ns: f64,
    pub lines: CopyLines,
    /// A PCIe device's link bytes and latency stacks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceStats>,
    /// Small cores' (microengines') pipelines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub small_cores: Option<SmallCoreStats>,
}

/// The pipelines of an agent's small cores (microengines).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct SmallCoreStats {
    pub engines: u32,
    pub threads: u32,
    pub clock_mhz: f64,
    /// Each engine's pipeline busy time (ALU work, command issue and context swaps), ns, and
    /// their mean share of the run (from its start to the agent's last completion).
    pub busy_ns: Vec<f64>,
    pub busy_share: f64,
}

/// A PCIe device's statistics on the platform.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DeviceStats {
    pub name: String,
    /// Link bytes by category (payload, descriptor, doorbell, write-back, interrupt split into
    /// data and overhead, and DLLPs), upstream (device to host) and downstream.
    pub bytes_up: Vec<(String, u64)>,
    pub bytes_down: Vec<(String, u64)>,
    /// The first packet's transmit stack, ns: (part, ns) for doorbell, descriptor, payload.
    pub tx_stack: Vec<(String, f64)>,
    pub tx_stack_total_ns: f64,
    /// The same, averaged over every packet whose doorbell is known.
    pub tx_stack_mean: Vec<(String, f64)>,
    pub frames: u64,
    pub frame_bytes: u64,
    /// Lines the device read: from memory, from a core's cache (a dirty line, by snoop).
    pub lines_from_memory: u64,
    pub lines_from_cache: u64,
    /// Lines the device wrote: to memory, into a cache (DDIO).
    pub lines_to_memory: u64,
    pub lines_to_cache: u64,
    /// With the value shadow on: payload lines checked, and those that were not the last
    /// version a core wrote (0 when coherent).
    pub lines_checked: u64,
    pub stale_lines: u64,
    pub interrupts: u64,
    /// Frames that reached the device's receive side: looped back, or from an Ethernet link.
    pub rx_frames_in: u64,
    /// Received bytes compared with the frame sent (looped back) or the frame that came off the
    /// link (in order), and those that differed.
    pub rx_bytes_checked: u64,
    pub rx_bytes_wrong: u64,
    /// Datagrams the host consumed (its program returned their buffers: the microengines'
    /// `rx_posted_ahead`), their bytes checked again in the buffer then and those that differed,
    /// unmatched returns (a return with no datagram delivered), and the first and last return's
    /// time, ns. Absent from reports where none was counted.
    #[serde(skip_serializing_if = "is_zero")]
    pub rx_consumed: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub rx_consumed_bytes_checked: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub rx_consumed_bytes_wrong: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub rx_consumed_unmatched: u64,
    #[serde(skip)]
    pub rx_consumed_first_ns: f64,
    #[serde(skip)]
    pub rx_consumed_last_ns: f64,
    /// Every frame the MAC sent compared with its send's bytes in host memory, cut as TSO cuts
    /// (the header repeated with the sequence offset, MSS of payload each); those that differed.
    pub tx_bytes_checked: u64,
    pub tx_bytes_wrong: u64,
    /// RX tail stores the driver skipped: fewer than `driver.rx_refill_batch` buffers to post.
    pub rx_tail_skipped: u64,
    /// TCP ACKs the driver sent: a host that receives data segments answers them as Linux's
    /// TCP would (`net/tcp_ack.rs`: by bytes against the receive MSS, GRO), one packet and one
    /// TX tail store each; the ACKs its TCP owed by the end; the ACK tail stores it skipped with
    /// none owed. Absent from reports where no ACK was owed.
    #[serde(skip_serializing_if = "is_zero")]
    pub acks_sent: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub acks_owed: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub ack_tail_skipped: u64,
    pub nic: NicStats,
    /// Times (ns) the driver's RX tail stores reached the device (first few; for end-to-end
    /// latencies measured in Rust: not in reports).
    #[serde(skip)]
    pub rx_tail_ns: Vec<f64>,
    /// Times (ns) the device's interrupts reached the host (first few; not in reports).
    #[serde(skip)]
    pub irq_ns: Vec<f64>,
}

/// Coherence counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CoherenceStats {
    /// Writes to a line other cores held: invalidation broadcasts.
    pub upgrades: u64,
    /// Copies in other cores' caches invalidated (by cores' writes).
    pub invalidations: u64,
    /// Misses served by another core's cache (its dirty copy).
    pub cache_to_cache: u64,
}

/// What a ring saw in a run.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RingStats {
    pub name: String,
    pub pushes: u64,
    pub pops: u64,
    /// Polls that found the ring full (producer) or empty (consumer).
    pub full_polls: u64,
    pub empty_polls: u64,
    /// Times the consumer went to sleep on an empty ring with a doorbell.
    pub sleeps: u64,
    pub doorbells: u64,
}

/// A descriptor NIC's counters.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct NicStats {
    pub tx_packets: u64,
    pub tx_frames: u64,
    pub tx_desc_fetched: u64,
    pub tx_desc_written_back: u64,
    pub rx_frames: u64,
    pub rx_desc_fetched: u64,
    pub rx_desc_written_back: u64,
    pub rx_drops: u64,
    /// Frames still in the receive FIFO when the run ended, waiting for a receive descriptor the
    /// host never posted (so `rx_frames + rx_drops + rx_fifo_held` is every frame that arrived).
    #[serde(skip_serializing_if = "is_zero")]
    pub rx_fifo_held: u64,
    pub interrupts: u64,
    pub doorbells: u64,
    pub reads_waiting_for_tags: u64,
}
