//! Larsen & Lee, "Platform IO DMA Transaction Acceleration" (CACHES 2011): Fig. 8 (the NIC-TX
//! latency stack of a 64 B message under descriptor DMA), Fig. 9 (the iDMA's), Table 1
//! (end-to-end latency between two systems; bandwidth per lane) and Fig. 10 (the share of PCIe
//! bytes spent on descriptors and doorbells in iperf-like streams), plus the sensitivity runs
//! (a Gen3/Haswell platform; DDIO on and off on the receive path; DRAM timing and cache state
//! under both stacks). The paper's values come from `presets/papers/larsen-idma.toml`.
//!
//! Fig. 8 and Fig. 9 run on the one platform: the driver program `nic-tx` on `larsen-io` (the
//! 82598 behind the 5520 IOH) and on `larsen-io-idma` (the iDMA on the die), one core, its caches
//! and the DDR3-1066 DRAM model, so every fetch comes through the memory system and moves with
//! DRAM timing and with whether the line is cached. Table 1 and Fig. 10 run on the cluster
//! (`systems::cluster`): two such platforms on one Ethernet wire, `nic-tx` on the sender and
//! `nic-rx` on the receiver, every frame checked byte for byte; in Fig. 10's descriptor-NIC
//! streams the receiver sends TCP ACKs back over the same wire (a delayed ACK per two data
//! segments) and the sender's NIC receives them, every ACK checked too. The DDIO sensitivity runs
//! on the cluster, and so do the Haswell/Gen3 rows ([`haswell_rows`]): the Fig. 8 and Fig. 9
//! platforms with their device behind the Haswell-EP root complex on PCIe Gen3 x8.
//!
//! Method notes:
//! - Fig. 8 is measured on a running system: the driver has just written the descriptor and the
//!   frame, so both are dirty in its cache and the NIC's reads are snooped. Fig. 9 is the
//!   paper's estimate for memory reads ("a memory fetch"): its case has the descriptor and the
//!   frame in DRAM. Each figure's other case is reported beside it, without paper values.
//! - Fig. 8's trace shows one 64 B payload read (781 - 759 = 22 ns = 48 B more than the 16 B
//!   descriptor's completion at Gen1 x8), so the latency runs send a 64 B frame: 54 B of
//!   Ethernet/IPv4/TCP headers (no options) and 10 B of data.
//! - Table 1's end-to-end latency ([`e2e_cluster`]): one 64 B message from the sender's first
//!   store to the receiver's interrupt handler done (its last store: the buffer posted again).
//!   The host software stack is instructions of that handler ([`host_stack_instructions`]), the
//!   one value fitted (to the descriptor-DMA 8.8 us); the iDMA case is a separate run with
//!   `larsen-io-idma` sending, so its latency is a prediction ("idma-both" also receives through
//!   the iDMA; not in the paper).
//! - Fig. 10's share counts descriptor fetches (requests and completions), doorbells,
//!   descriptor write-backs and MSI-X writes, over all TLP bytes of both directions of the
//!   measured host's link (the sender's for TX, the receiver's for RX); DLLPs are reported apart.
//!   The descriptor NIC's streams carry TCP ACKs ([`cluster_stream`] with `acks`): both links carry
//!   their doorbells, descriptors, write-backs and frames; the bars without ACKs are
//!   sensitivity rows. The iDMA's streams carry none (its hosts send no ACKs yet).
//! - Bandwidth per lane (Table 1, [`cluster_lane_rate`]) is simulated on the cluster: a stream of
//!   full-size frames with no software between them on the bandwidth platform (82599, Gen2 x8, two
//!   ports' line rate), so that the NIC, the link or the wire binds; the TCP payload landed and
//!   checked over the stream's time and the link's lanes. Every payload byte crosses the sender's
//!   link, so the figure never exceeds a lane's data rate after line encoding (given in the row's
//!   note: a fact of the link, not a result).
use crate::config::io::gen_rate;
use crate::config::io::IoConfig;
use crate::config::platform::PlatformConfig;
use crate::config::workload::Workload;
use crate::sim::error::PlatformError;
use crate::stats::DeviceStats;
use crate::systems::cluster::{self, ClusterStats, LinkSpec};
use crate::systems::platform::Platform;
use serde::Serialize;
use std::collections::BTreeMap;

/// The paper's values.
pub const PAPER: &str = include_str!("../../../../presets/papers/larsen-idma.toml");

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    /// "fig8", "fig9", "table1", "fig10", "sensitivity".
    pub figure: String,
    pub case: String,
    pub metric: String,
    pub value: f64,
    pub paper_value: Option<f64>,
    pub unit: String,
    pub note: String,
}

fn row(
    figure: &str,
    case: &str,
    metric: &str,
    value: f64,
    paper: Option<f64>,
    unit: &str,
    note: &str,
) -> Row {
    Row {
        figure: figure.into(),
        case: case.into(),
        metric: metric.into(),
        value,
        paper_value: paper,
        unit: unit.into(),
        note: note.into(),
    }
}

fn paper(table: &str, key: &str) -> Option<f64> {
    let v: toml::Value = PAPER.parse::<toml::Table>().ok().map(toml::Value::Table)?;
    let x = v.get(table)?.get(key)?;
    x.as_float().or_else(|| x.as_integer().map(|i| i as f64))
}

/// Options of the reproduction.
#[derive(Debug, Clone)]
pub struct Options {
    /// The latency platform (Fig. 8, 9, Table 1) and the bandwidth platform (Fig. 10).
    pub latency: IoConfig,
    pub bandwidth: IoConfig,
    /// Messages per small-I/O and large-I/O stream.
    pub small_count: u64,
    pub large_count: u64,
    /// Which parts to run: any of "latency", "fig10", "sensitivity", "pcie-model".
    pub parts: Vec<String>,
    /// Overrides (shaped like a platform config) of the two platforms Fig. 8 and 9 run on.
    pub platform: toml::Value,
}

impl Options {
    pub fn paper() -> Result<Options, PlatformError> {
        let bandwidth = IoConfig::preset("larsen-82599-gen2")?;
        let large_count = stream_limits(&bandwidth).1;
        Ok(Options {
            latency: IoConfig::preset("larsen-82598-gen1")?,
            bandwidth,
            // The longest streams a run holds (more would change nothing: see `stream_limits`).
            small_count: MAX_STREAM_FRAMES,
            large_count,
            parts: vec![
                "latency".into(),
                "fig10".into(),
                "sensitivity".into(),
                "pcie-model".into(),
            ],
            platform: toml::Value::Table(Default::default()),
        })
    }
}

/// The latency configuration: a 64 B frame (54 B headers + 10 B).
pub const FRAME: u64 = 64;
pub const LATENCY_HEADERS: u32 = 54;

/// The latency stack of one transmit, ns: its parts in order (descriptor DMA: doorbell,
/// descriptor fetch, payload fetch; the iDMA: doorbell, descriptor read, payload read, push to the
/// adapter) and their sum.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct TxStack {
    pub parts: Vec<(String, f64)>,
    pub total: f64,
    /// The first message's parts alone (the DRAM as the platform starts: every bank precharged).
    #[serde(skip)]
    pub first: Vec<(String, f64)>,
}

fn stack_rows(out: &mut Vec<Row>, fig: &str, case: &str, st: &TxStack, with_paper: bool) {
    let table = if fig == "fig8" { "fig8" } else { "fig9" };
    for (name, v) in &st.parts {
        let p = if with_paper {
            paper(table, &format!("{name}_ns"))
        } else {
            None
        };
        out.push(row(fig, case, &format!("{name}_ns"), *v, p, "ns", ""));
    }
    let p = if with_paper {
        paper(table, "total_ns")
    } else {
        None
    };
    out.push(row(
        fig,
        case,
        "nic_tx_latency_ns",
        st.total,
        p,
        "ns",
        "sum of the stack",
    ));
}

/// The platform of Fig. 8 (the descriptor NIC) and of Fig. 9 (the iDMA).
pub const FIG8_PLATFORM: &str = "larsen-io";
pub const FIG9_PLATFORM: &str = "larsen-io-idma";

/// Messages per platform run (each on an idle device; the stacks are their mean).
pub const PLATFORM_MESSAGES: u64 = 4;

/// Slower DRAM for the sensitivity rows: DDR3-1066 with its row and column delays doubled
/// (8-8-8 becomes 16-16-16 clocks, 15 ns more on each).
pub const SLOW_DRAM: &str =
    "[memory.dram.timing]\nnRCD = 16\nnCL = 16\nnCWL = 12\nnRP = 16\nnRAS = 28\nnRC = 44\n";

/// The same DRAM with a closed-page controller (every access opens its row and precharges it
/// after): the Fig. 9 reads then cost the same whichever row an earlier access left open. The
/// platform's controller is open-page (`rowclone-ddr3-1066`); the 5500's page policy is not in
/// the project's sources, so this is a sensitivity row, never the judged case.
pub const CLOSED_PAGE: &str = "[memory.controller]\nrow_policy = \"closed\"\n";

/// One transmit stack from the platform: preset `name` with `overrides` (and `extra`) running
/// `nic-tx`, the descriptor and frame written by the driver (`cached`) or only in memory.
pub fn platform_stack(
    name: &str,
    overrides: &toml::Value,
    extra: &str,
    cached: bool,
) -> Result<TxStack, PlatformError> {
    let cfg = super::platform(name, overrides, extra)?;
    stack_of(&cfg, name, cached)
}

/// [`platform_stack`] on a built configuration (`name` for messages).
fn stack_of(cfg: &PlatformConfig, name: &str, cached: bool) -> Result<TxStack, PlatformError> {
    let w = u64::from(cached);
    let params: BTreeMap<String, u64> = [
        ("messages", PLATFORM_MESSAGES),
        ("write_desc", w),
        ("write_payload", w),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), *v))
    .collect();
    let wl = Workload::load("nic-tx", &params)?;
    let mut p = Platform::new(cfg)?;
    p.sys.track_values();
    let s = p.run(&wl)?;
    let d = s
        .devices
        .into_iter()
        .next()
        .ok_or_else(|| PlatformError::Stalled(format!("{name}: the platform has no device")))?;
    if d.frames != PLATFORM_MESSAGES || d.stale_lines != 0 {
        return Err(PlatformError::Stalled(format!(
            "{name}: {} of {PLATFORM_MESSAGES} frames sent, {} stale payload lines",
            d.frames, d.stale_lines
        )));
    }
    let total = d.tx_stack_mean.iter().map(|(_, v)| v).sum();
    Ok(TxStack {
        parts: d.tx_stack_mean,
        total,
        first: d.tx_stack,
    })
}

// ---------------------------------------------------------------------------------------------
// The Haswell/Gen3 sensitivity rows on the one platform.
// ---------------------------------------------------------------------------------------------

/// The I/O preset of the Haswell/Gen3 sensitivity rows: PCIe Gen3 x8 and a Haswell-EP root
/// complex with DDIO (`presets/io/haswell-gen3.toml`), put in place of the 82598's on the Fig. 8
/// and Fig. 9 platforms. The core, its caches and the DDR3-1066 DRAM stay those platforms'.
pub const HASWELL_IO: &str = "haswell-gen3";

/// pcie-bench's host-warm 64 B DMA read on a Haswell E5-2620v3 over PCIe Gen3 x8, from the
/// device's request to its completion: a fact of that platform, the one the root complex's own
/// part is derived from. Read from [`HASWELL_IO`]'s `root_complex.warm_read_ns`, where its
/// citation lives; a preset without it is refused.
pub fn haswell_warm_read_ns() -> Result<f64, PlatformError> {
    let v = IoConfig::preset(HASWELL_IO)?.root_complex.warm_read_ns;
    if v > 0.0 {
        Ok(v)
    } else {
        Err(PlatformError::config(
            HASWELL_IO,
            "root_complex.warm_read_ns",
            "missing: the Haswell rows derive the root complex's part of a read from it",
        ))
    }
}

/// A Fig. 8 or Fig. 9 platform (`name`, with `overrides`) with its device behind [`HASWELL_IO`]
/// and a root complex whose own part of a device read is `rc_read_ns`.
fn haswell_platform(
    name: &str,
    overrides: &toml::Value,
    rc_read_ns: f64,
) -> Result<PlatformConfig, PlatformError> {
    let mut c = super::platform(name, overrides, "")?;
    if let Some(io) = c.io.as_mut() {
        io.preset = HASWELL_IO.to_string();
        io.rc_read_ns = rc_read_ns;
    }
    for a in &mut c.agents {
        if a.kind == "idma" {
            a.params
                .insert("preset".into(), toml::Value::String(HASWELL_IO.into()));
        }
    }
    Ok(c)
}

/// The Haswell root complex's own part of a device read, derived on the platform: pcie-bench's
/// host-warm 64 B read ([`haswell_warm_read_ns`]) less what the platform itself takes for the
/// same read, measured as the payload fetch of `nic-tx` on `larsen-io` behind [`HASWELL_IO`]
/// with no root-complex part (the 64 B line dirty in the driver's cache: its snoop, the on-die
/// path and both TLPs on the Gen3 x8 link). The cache and DRAM path is the platform's own, so
/// the derived part moves with it; it is never below zero.
pub fn haswell_rc_read_ns(overrides: &toml::Value) -> Result<f64, PlatformError> {
    let c = haswell_platform(FIG8_PLATFORM, overrides, 0.0)?;
    let st = stack_of(&c, FIG8_PLATFORM, true)?;
    let own = st
        .parts
        .iter()
        .find(|(k, _)| k == "payload")
        .map(|(_, v)| *v)
        .ok_or_else(|| PlatformError::Stalled("the Haswell stack has no payload fetch".into()))?;
    Ok((haswell_warm_read_ns()? - own).max(0.0))
}

/// A sensitivity row of an end-to-end latency in us.
fn e2e_row(case: &str, e: &E2e, note: &str) -> Row {
    row(
        "sensitivity",
        case,
        "end_to_end_us",
        e.end_to_end_ns / 1000.0,
        None,
        "us",
        note,
    )
}

/// The Haswell/Gen3 rows: the transmit stacks of the descriptor NIC (`larsen-io`) and the iDMA
/// (`larsen-io-idma`) behind [`HASWELL_IO`], the line written by the driver, and Table 1's
/// end-to-end latency on the cluster with both hosts behind it (`stack` instructions of host
/// software, as Table 1's).
pub fn haswell_rows(
    overrides: &toml::Value,
    stack: u64,
) -> Result<Vec<(&'static str, TxStack, E2e)>, PlatformError> {
    let rc = haswell_rc_read_ns(overrides)?;
    let mut rx = haswell_platform(FIG8_PLATFORM, overrides, rc)?;
    set_frame(&mut rx, FRAME as u32);
    let mut out = Vec::new();
    for (case, name) in [
        ("haswell-gen3-descriptor-dma", FIG8_PLATFORM),
        ("haswell-gen3-idma", FIG9_PLATFORM),
    ] {
        let mut tx = haswell_platform(name, overrides, rc)?;
        let st = stack_of(&tx, name, true)?;
        set_frame(&mut tx, FRAME as u32);
        let e = e2e_over(&tx, &rx, 1, stack, name, FIG8_PLATFORM, SETTLE_M)?;
        out.push((case, st, e));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Table 1 and Fig. 10 on the one platform: two platforms on one wire (`systems::cluster`).
// ---------------------------------------------------------------------------------------------

/// The cable between the two hosts: section 4.1's "fiber length is on the order of 3 meters", at
/// 5 ns per meter (light in glass).
pub const CABLE_M: f64 = 3.0;
pub const NS_PER_M: f64 = 5.0;

/// RX buffers the receiver posts up front in a latency run (a few: posting takes the core a
/// moment, and one frame needs one).
pub const LATENCY_BUFFERS: u64 = 4;

/// The host software stack time of Table 1 (both ends' TCP/IP stacks, the application's calls
/// and the receive interrupt's work), run as instructions of the receiver's interrupt handler
/// (`nic-rx`'s `stack`) on the simulated core. Calibrated: the one value fitted so that the
/// descriptor-DMA end-to-end latency on the cluster is Table 1's 8.8 us (presets/ledger.toml);
/// its value lives in `presets/papers/larsen-idma.toml` (`[calibration]`).
pub fn host_stack_instructions() -> Result<u64, PlatformError> {
    paper("calibration", "host_stack_instructions")
        .filter(|v| *v >= 0.0)
        .map(|v| v as u64)
        .ok_or_else(|| {
            PlatformError::config(
                "presets/papers/larsen-idma.toml",
                "calibration.host_stack_instructions",
                "missing or negative",
            )
        })
}

fn params_of(p: &[(&str, u64)]) -> BTreeMap<String, u64> {
    p.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// Two platforms on one wire: `tx` runs `nic-tx` with `txp`, `rx` runs `nic-rx` with `rxp`; both
/// with the value shadow on (the sender's payload reads checked against what its core wrote, the
/// receiver's landed bytes against the frames that came off the wire).
pub fn cluster_pair(
    tx: &PlatformConfig,
    rx: &PlatformConfig,
    txp: &[(&str, u64)],
    rxp: &[(&str, u64)],
) -> Result<ClusterStats, PlatformError> {
    cluster_pair_over(tx, rx, txp, rxp, CABLE_M)
}

/// [`cluster_pair`] over a cable of `meters`.
fn cluster_pair_over(
    tx: &PlatformConfig,
    rx: &PlatformConfig,
    txp: &[(&str, u64)],
    rxp: &[(&str, u64)],
    meters: f64,
) -> Result<ClusterStats, PlatformError> {
    let progs = vec![
        vec![Workload::load("nic-tx", &params_of(txp))?],
        vec![Workload::load("nic-rx", &params_of(rxp))?],
    ];
    let mut ps = vec![Platform::new(tx)?, Platform::new(rx)?];
    for p in &mut ps {
        p.sys.track_values();
    }
    let link = LinkSpec::between(0, 1, meters, NS_PER_M);
    cluster::run(&mut ps, &progs, &[link], &mut |_| {})
}

/// The sender's and the receiver's device.
fn pair_devices<'a>(
    s: &'a ClusterStats,
    what: &str,
) -> Result<(&'a DeviceStats, &'a DeviceStats), PlatformError> {
    let dev = |h: usize| {
        s.hosts
            .get(h)
            .and_then(|p| p.devices.first())
            .ok_or_else(|| PlatformError::Stalled(format!("{what}: host {h} has no device")))
    };
    Ok((dev(0)?, dev(1)?))
}

/// Frames the sender's device sent in a cluster run.
fn tx_frames(s: &ClusterStats) -> u64 {
    s.hosts
        .first()
        .and_then(|h| h.devices.first())
        .map_or(0, |d| d.frames)
}

/// The oracle of a cluster run: `frames` frames sent, every payload line the sender read the
/// last version its core wrote, every frame landed at the receiver and every byte of it checked
/// against the frame that came off the wire; and back, with `acks`, every TCP ACK the receiver's
/// TCP owed sent (at most one per frame, none when the data never reaches an ACK; each checked
/// against its send) and every
/// one landed at the sender and checked byte for byte; without, none.
pub fn check_pair(
    s: &ClusterStats,
    frames: u64,
    acks: bool,
    what: &str,
) -> Result<(), PlatformError> {
    let (tx, rx) = pair_devices(s, what)?;
    let owed = rx.acks_owed;
    // With ACKs a stream may owe none: one full-size segment leaves less than a receive MSS
    // unacknowledged and is not pushed, so Linux would answer it from the delayed-ACK timer
    // (TCP_DELACK_MIN, 40 ms), which is not modelled; the run ends without it.
    let owed_ok = if acks { owed <= frames } else { owed == 0 };
    let acks = owed;
    if !owed_ok
        || rx.frames != acks
        || rx.acks_sent != acks
        || rx.tx_bytes_checked != rx.frame_bytes
        || rx.tx_bytes_wrong != 0
        || tx.nic.rx_frames != acks
        || tx.rx_bytes_checked != rx.frame_bytes
        || tx.rx_bytes_wrong != 0
    {
        return Err(PlatformError::Stalled(format!(
            "{what}: the receiver sent {} frames ({} ACKs) of {acks} ACKs owed, {} of {} bytes as their sends say ({} not); {} landed at the sender, {} bytes checked, {} wrong",
            rx.frames,
            rx.acks_sent,
            rx.tx_bytes_checked,
            rx.frame_bytes,
            rx.tx_bytes_wrong,
            tx.nic.rx_frames,
            tx.rx_bytes_checked,
            tx.rx_bytes_wrong
        )));
    }
    // The NIC's frames are also checked against its sends as segmentation cuts them.
    let tx_checked = tx.name != "nic" || tx.tx_bytes_checked == tx.frame_bytes;
    if tx.frames != frames
        || tx.stale_lines != 0
        || tx.tx_bytes_wrong != 0
        || !tx_checked
        || rx.nic.rx_frames != frames
        || rx.rx_bytes_wrong != 0
        || rx.rx_bytes_checked != tx.frame_bytes
    {
        return Err(PlatformError::Stalled(format!(
            "{what}: {} of {frames} frames sent ({} stale payload lines, {} of {} bytes as their sends say, {} not), {} landed, {} of {} bytes checked, {} wrong",
            tx.frames,
            tx.stale_lines,
            tx.tx_bytes_checked,
            tx.frame_bytes,
            tx.tx_bytes_wrong,
            rx.nic.rx_frames,
            rx.rx_bytes_checked,
            tx.frame_bytes,
            rx.rx_bytes_wrong
        )));
    }
    Ok(())
}

/// Extra cable for the end-to-end run, taken off the result again: the frame then reaches a
/// receiver that is ready (its driver has posted its buffers and its NIC has fetched its first RX
/// descriptor, about 1.5 us from the start), as in the paper's steady state. Without it the
/// iDMA's frame arrived first and waited for the receiver's start-up, so the receiver's start-up
/// set the result (the same 7.58 us whether or not the sender's descriptor was cached). The
/// propagation only shifts the frame's arrival, so subtracting it gives the same interrupt time
/// whatever the settle (a test checks twice the settle); the handler's end moves by tens of ns,
/// as its memory accesses meet DRAM refresh at another phase.
pub const SETTLE_M: f64 = 1000.0;

/// One message's end-to-end latency on the cluster ([`e2e_cluster`]), ns from the sender's first
/// store of the message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct E2e {
    /// The receiver's interrupt: the hardware path (TX driver stores, TX DMA, MACs, cable, RX
    /// DMA, MSI-X).
    pub interrupt_ns: f64,
    /// The receiver's handler done with the message (its last store, the buffer posted again):
    /// the hardware path plus the host software stack.
    pub end_to_end_ns: f64,
}

/// One 64 B message (54 B of headers and 10 B of data, as Fig. 8's) from a `sender` platform to
/// a `receiver` platform on one wire, both with `overrides` and `extra`: the sender's driver has
/// just written the frame and descriptor (`cached`) or they are only in memory; the receiver's
/// handler runs `stack` instructions of host software.
pub fn e2e_cluster(
    sender: &str,
    receiver: &str,
    overrides: &toml::Value,
    extra: &str,
    cached: bool,
    stack: u64,
) -> Result<E2e, PlatformError> {
    let mut tx = super::platform(sender, overrides, extra)?;
    let mut rx = super::platform(receiver, overrides, extra)?;
    set_frame(&mut tx, FRAME as u32);
    set_frame(&mut rx, FRAME as u32);
    let w = u64::from(cached);
    e2e_over(&tx, &rx, w, stack, sender, receiver, SETTLE_M)
}

/// [`e2e_cluster`] with `settle` meters of cable added and their propagation taken off.
fn e2e_over(
    tx: &PlatformConfig,
    rx: &PlatformConfig,
    w: u64,
    stack: u64,
    sender: &str,
    receiver: &str,
    settle: f64,
) -> Result<E2e, PlatformError> {
    let s = cluster_pair_over(
        tx,
        rx,
        &[("messages", 1), ("write_desc", w), ("write_payload", w)],
        &[("buffers", LATENCY_BUFFERS), ("stack", stack)],
        CABLE_M + settle,
    )?;
    let shift = settle * NS_PER_M;
    let what = format!("the end-to-end run {sender} -> {receiver}");
    check_pair(&s, 1, false, &what)?;
    let (_, r) = pair_devices(&s, &what)?;
    let irq = r.irq_ns.first().copied();
    let done = irq.and_then(|i| r.rx_tail_ns.iter().copied().find(|&t| t >= i));
    match (irq, done) {
        (Some(i), Some(d)) => Ok(E2e {
            interrupt_ns: i - shift,
            end_to_end_ns: d - shift,
        }),
        _ => Err(PlatformError::Stalled(format!(
            "{what}: the receiver's handler never finished the message"
        ))),
    }
}

/// Sets the frame size of a platform's one device (`[io]` or its iDMA agent); a send longer
/// than its buffers gets buffers of whole 4 KB pages (a TSO send's data descriptors follow them).
fn set_frame(c: &mut PlatformConfig, bytes: u32) {
    if let Some(io) = c.io.as_mut() {
        io.frame_bytes = bytes;
        if u64::from(bytes) > io.tx_buffer_stride {
            io.tx_buffer_stride = u64::from(bytes).next_multiple_of(4096);
        }
    }
    for a in &mut c.agents {
        if a.kind == "idma" {
            a.params
                .insert("frame_bytes".into(), toml::Value::Integer(i64::from(bytes)));
        }
    }
}

/// Puts a platform's one device on the bandwidth platform of section 4.2: the 82599 on PCIe Gen2
/// x8 (`io_preset`) with its two 10GbE ports at their summed line rate (see [`PORTS`]).
/// `link`: keys of the I/O preset's `[link]` to change (gen, lanes, ...), or empty; `nic` the
/// same for its `[nic]` (a write-back threshold, ...).
fn set_bandwidth_device(
    c: &mut PlatformConfig,
    io_preset: &str,
    gbps: f64,
    link: &toml::Table,
    nic_keys: &toml::Table,
) {
    let nic = |old: Option<&toml::Value>| {
        let mut t = old.and_then(|v| v.as_table().cloned()).unwrap_or_default();
        t.extend(nic_keys.clone());
        t.insert("mac_gbps".into(), toml::Value::Float(gbps));
        toml::Value::Table(t)
    };
    let merged = |old: Option<&toml::Value>| {
        let mut t = old.and_then(|v| v.as_table().cloned()).unwrap_or_default();
        t.extend(link.clone());
        toml::Value::Table(t)
    };
    if let Some(io) = c.io.as_mut() {
        io.preset = io_preset.to_string();
        io.nic = Some(nic(io.nic.as_ref()));
        if !link.is_empty() {
            io.link = Some(merged(io.link.as_ref()));
        }
    }
    for a in &mut c.agents {
        if a.kind == "idma" {
            a.params
                .insert("preset".into(), toml::Value::String(io_preset.into()));
            let n = nic(a.params.get("nic"));
            a.params.insert("nic".into(), n);
            if !link.is_empty() {
                let l = merged(a.params.get("link"));
                a.params.insert("link".into(), l);
            }
        }
    }
}

/// Frames one send of `send` bytes (headers included) leaves as on the NIC of `io`: one, or
/// with `driver.tso` as many segments of `driver.mss` as its payload after `driver.header_bytes`
/// needs.
pub fn segments(io: &IoConfig, send: u32) -> u64 {
    let (hdr, mss) = (io.driver.header_bytes, io.driver.mss.max(1));
    if io.driver.tso && send > hdr + mss {
        u64::from(send - hdr).div_ceil(u64::from(mss))
    } else {
        1
    }
}

/// The largest send of the 64 KB streams: headers and 64 KiB of payload (Linux's GSO limit;
/// 82599 specification update, software clarification 1), with the I/O preset's headers.
pub fn large_send(io: &IoConfig) -> u32 {
    65_536 + io.driver.header_bytes
}

/// ACK tries of the receiver's handler per interrupt in a stream with ACKs: Linux's NAPI poll
/// takes at most 64 packets (`weight`, ixgbe's default), a delayed ACK per two of them. An
/// interrupt that finds more owed leaves the rest to the next one.
pub const ACKS_PER_INTERRUPT: u64 = 32;

/// One stream on the cluster's bandwidth platforms: `sends` sends of `send` bytes from host 0
/// (`sender`) to host 1 (`receiver`), `gap` instructions of the sender's software between them;
/// a send longer than a frame leaves as one TSO send the NIC segments (the iDMA refuses it).
/// The receiver posts its buffers up front: with the I/O preset's `driver.rx_post_all`, as
/// ixgbe, the whole ring with one RX tail store (and its handler refills cleaned buffers in
/// batches of `driver.rx_refill_batch`); otherwise one store per frame.
/// `nic`: keys of the I/O preset's `[nic]` changed on both hosts (an iDMA agent's preset takes
/// them too); empty for the preset as it is.
/// With `acks` the receiver acknowledges the data as Linux's TCP does (`net/tcp_ack.rs`: by bytes
/// against the receive MSS, each poll's segments merged by GRO where the preset's `driver.gro`
/// says so; one packet and one TX tail store each, from its interrupt handler, up to
/// [`ACKS_PER_INTERRUPT`] per interrupt), which crosses the wire back and lands in
/// the sender's RX buffers (posted as the receiver's are; its handler takes each ACK and refills
/// its ring). Only the descriptor NIC sends ACKs: an iDMA host is refused.
#[allow(clippy::too_many_arguments)]
pub fn cluster_stream(
    sender: &str,
    receiver: &str,
    overrides: &toml::Value,
    io_preset: &str,
    gbps: f64,
    link: &toml::Table,
    nic: &toml::Table,
    sends: u64,
    send: u32,
    gap: u64,
    acks: bool,
) -> Result<ClusterStats, PlatformError> {
    let io = io_preset_with(io_preset, "nic", nic, "larsen-idma stream")?;
    let frames = sends.saturating_mul(segments(&io, send));
    if sends == 0 || frames > MAX_STREAM_FRAMES {
        return Err(PlatformError::config(
            "larsen-idma",
            "frames",
            format!("{sends} sends of {send} B are {frames} frames: a cluster stream sends 1 to {MAX_STREAM_FRAMES} frames (the rings hold 512 descriptors)"),
        ));
    }
    if acks && send <= io.driver.header_bytes {
        return Err(PlatformError::config(
            "larsen-idma",
            "frames",
            format!(
                "sends of {send} B with TCP ACKs: each frame must carry TCP payload after the preset's {} B of headers (driver.header_bytes)",
                io.driver.header_bytes
            ),
        ));
    }
    let mut cfgs = Vec::new();
    let rx_frame = if send > 9018 { LANE_FRAME } else { send };
    for (name, bytes) in [(sender, send), (receiver, rx_frame)] {
        let mut c = super::platform(name, overrides, "")?;
        set_bandwidth_device(&mut c, io_preset, gbps, link, nic);
        set_frame(&mut c, bytes);
        cfgs.push(c);
    }
    if acks && cfgs.iter().any(|c| c.io.is_none()) {
        return Err(PlatformError::config(
            "larsen-idma",
            "acks",
            format!("{sender} -> {receiver}: TCP ACKs are sent by the descriptor NIC only (a platform with [io]); the iDMA hosts carry none"),
        ));
    }
    let buffers = if cfgs[1].io.is_some() && io.driver.rx_post_all {
        1
    } else {
        frames
    };
    let a = u64::from(acks);
    let s = cluster_pair(
        &cfgs[0],
        &cfgs[1],
        &[
            ("messages", sends),
            ("gap", gap),
            ("rx_post", a),
            ("acks_rx", a),
        ],
        &[("buffers", buffers), ("acks", a * ACKS_PER_INTERRUPT)],
    )?;
    check_pair(
        &s,
        frames,
        acks && io.driver.ack_every > 0,
        &format!("the stream {sender} -> {receiver}"),
    )?;
    Ok(s)
}

/// DDIO on a platform's root complex (`[io.root_complex]`): device writes are pushed into the
/// core's L2 instead of memory.
pub const RX_DDIO: &str = "[io.root_complex]\nddio = true";

/// `overrides` with the platforms' DDIO set to `on` (`io.root_complex.ddio`).
fn with_ddio(overrides: &toml::Value, on: bool) -> Result<toml::Value, PlatformError> {
    let mut t = overrides.as_table().cloned().unwrap_or_default();
    let io = t
        .entry("io")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let rc = io
        .as_table_mut()
        .ok_or_else(|| PlatformError::config("overrides", "io", "must be a table"))?
        .entry("root_complex")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    rc.as_table_mut()
        .ok_or_else(|| PlatformError::config("overrides", "io.root_complex", "must be a table"))?
        .insert("ddio".into(), toml::Value::Boolean(on));
    Ok(toml::Value::Table(t))
}

/// Fig. 10's small I/O size: iperf's 64 B writes ("64BIO", section 4.2), the TCP payload of one
/// segment each (one message per frame: no coalescing of writes by the sender's stack, a
/// modelling choice the paper does not state).
pub const SMALL_IO: u32 = 64;

/// The frame of one small I/O on the bandwidth platform `io`: [`SMALL_IO`] bytes of payload behind
/// the preset's `driver.header_bytes` (Ethernet, IPv4 and TCP with timestamps), as the 64 KB
/// sends carry 64 KiB of payload behind the same headers ([`large_send`]).
pub fn small_frame(io: &IoConfig) -> u32 {
    SMALL_IO + io.driver.header_bytes
}

/// The I/O preset `io_preset` with the keys `keys` of its table `section` ("link", "nic")
/// changed; a bad key or value is refused naming it (`src` says where it came from).
fn io_preset_with(
    io_preset: &str,
    section: &str,
    keys: &toml::Table,
    src: &str,
) -> Result<IoConfig, PlatformError> {
    let io = IoConfig::preset(io_preset)?;
    if keys.is_empty() {
        return Ok(io);
    }
    io.with_overrides(
        toml::Value::Table(toml::Table::from_iter([(
            section.to_string(),
            toml::Value::Table(keys.clone()),
        )])),
        src,
    )
}

/// One `[nic]` key set to `v`, for [`cluster_stream`].
pub fn nic_key(key: &str, v: i64) -> toml::Table {
    toml::Table::from_iter([(key.to_string(), toml::Value::Integer(v))])
}

/// Frames per cluster stream at most: the TX ring (512 descriptors, two per packet with a
/// context descriptor) must never wrap over descriptors the NIC has not fetched, and the receiver
/// posts a buffer per frame up front.
pub const MAX_STREAM_FRAMES: u64 = 250;

/// The most messages a Fig. 10 stream takes on the bandwidth platform `io`, (64 B, 64 KB): every
/// stream is cut to [`MAX_STREAM_FRAMES`] frames, so a 64 B stream holds that many messages, and a
/// 64 KB one as many as fill it on either device (the NIC's TSO sends of `segments` frames each,
/// the iDMA's messages of [`LARGE_FRAMES_PER_MESSAGE`] full-size frames). A count beyond them
/// would run the same streams: [`run`] refuses it.
pub fn stream_limits(io: &IoConfig) -> (u64, u64) {
    let nic = MAX_STREAM_FRAMES / segments(io, large_send(io));
    let idma = MAX_STREAM_FRAMES.div_ceil(LARGE_FRAMES_PER_MESSAGE);
    (MAX_STREAM_FRAMES, nic.max(idma).max(1))
}

/// Shares of TLP bytes on one device's link (both directions): all four terms (descriptor
/// fetches with their completions, doorbells, write-backs, MSI-X), fetches and doorbells only,
/// and DLLPs of all bytes.
pub fn device_shares(d: &DeviceStats) -> (f64, f64, f64) {
    let mut by: BTreeMap<&str, u64> = BTreeMap::new();
    for (k, v) in d.bytes_up.iter().chain(&d.bytes_down) {
        *by.entry(k.as_str()).or_default() += v;
    }
    let g = |k: &str| by.get(k).copied().unwrap_or(0) as f64;
    let all: f64 = by.values().sum::<u64>() as f64;
    let tlp = (all - g("dllp")).max(1.0);
    let (d_, db, wb, irq) = (
        g("descriptor"),
        g("doorbell"),
        g("write_back"),
        g("interrupt"),
    );
    (
        (d_ + db + wb + irq) / tlp,
        (d_ + db) / tlp,
        g("dllp") / all.max(1.0),
    )
}

/// The share of TLP bytes on one device's link (both directions) that carry `purpose` (a
/// [`Purpose`] name: "descriptor", "doorbell", "write_back", "interrupt", "payload").
pub fn term_share(d: &DeviceStats, purpose: &str) -> f64 {
    let (mut all, mut dllp, mut term) = (0u64, 0u64, 0u64);
    for (k, v) in d.bytes_up.iter().chain(&d.bytes_down) {
        all += v;
        if k == "dllp" {
            dllp += v;
        }
        if k == purpose {
            term += v;
        }
    }
    term as f64 / (all - dllp).max(1) as f64
}

/// Table 1's bandwidth per lane on the cluster ([`cluster_lane_rate`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterLane {
    /// TCP payload (frames less [`LATENCY_HEADERS`]) landed and checked, Gb/s, from the first
    /// send to the last frame's arrival at the receiver.
    pub goodput_gbps: f64,
    pub per_lane_gbps: f64,
    /// A lane's data rate per direction after line encoding: a fact of the link, the bound.
    pub lane_limit_gbps: f64,
    /// The sender link's busier direction (the payload's), every byte (TLPs and DLLPs) per
    /// lane, Gb/s.
    pub link_gbps_per_lane: f64,
    /// Goodput over the ports' line rate.
    pub wire_share: f64,
}

/// Full-size frames of the per-lane stream: 1514 B (1460 B of TCP payload), each a packet of its
/// own with its own descriptors (the iDMA does not segment; the NIC's TSO runs in Fig. 10's 64 KB
/// streams).
pub const LANE_FRAME: u32 = 1514;

/// Table 1's Gb/s per lane: a stream of `frames` full-size frames from the `sender` platform to a
/// receiver of the same kind, on the bandwidth platform (`io_preset`, both ports: `gbps`), with
/// the sender's software between messages zero so that the NIC, the link or the wire binds.
pub fn cluster_lane_rate(
    sender: &str,
    overrides: &toml::Value,
    io_preset: &str,
    gbps: f64,
    link: &toml::Table,
    frames: u64,
) -> Result<ClusterLane, PlatformError> {
    let s = cluster_stream(
        sender,
        sender,
        overrides,
        io_preset,
        gbps,
        link,
        &toml::Table::new(),
        frames,
        LANE_FRAME,
        0,
        false,
    )?;
    let io = io_preset_with(io_preset, "link", link, "the per-lane stream")?;
    let (gt, enc) = gen_rate(io.link.gen).ok_or_else(|| {
        PlatformError::config(
            io_preset,
            "link.gen",
            format!("{} must be 1, 2 or 3", io.link.gen),
        )
    })?;
    let lanes = f64::from(io.link.lanes);
    let span = s.links[0].passages.iter().map(|p| p.2).fold(0.0, f64::max);
    if span <= 0.0 {
        return Err(PlatformError::Stalled(
            "the per-lane stream carried nothing".into(),
        ));
    }
    let payload = frames as f64 * f64::from(LANE_FRAME - LATENCY_HEADERS) * 8.0;
    let goodput = payload / span;
    let (tx, _) = pair_devices(&s, "the per-lane stream")?;
    // The payload crosses the sender's link downstream (read completions, or the iDMA's
    // pushes): the busier direction.
    let up: u64 = tx.bytes_up.iter().map(|(_, v)| v).sum();
    let down: u64 = tx.bytes_down.iter().map(|(_, v)| v).sum();
    let up = up.max(down);
    Ok(ClusterLane {
        goodput_gbps: goodput,
        per_lane_gbps: goodput / lanes,
        lane_limit_gbps: gt * enc,
        link_gbps_per_lane: up as f64 * 8.0 / span / lanes,
        wire_share: goodput / gbps,
    })
}

/// 1514 B frames of one 64 KB message (64 KB over 1460 B of TCP payload each, rounded up): the
/// iDMA's 64 KB streams, which it sends as full-size frames.
pub const LARGE_FRAMES_PER_MESSAGE: u64 = 45;

/// The bandwidth platform's I/O preset (section 4.2: the 82599 on Gen2 x8) and its ports' summed
/// line rate.
pub const BW_IO: &str = "larsen-82599-gen2";

/// Ports of the bandwidth platform's adapter: section 4.2's 82599 is a dual 10GbE NIC and iperf
/// ran on both ports, which share its one PCIe link. Modelled as one MAC at the ports' summed
/// line rate (a modelling choice: the two ports' rings are not kept apart; per packet they move
/// the same descriptors and doorbells over the same link).
pub const PORTS: u32 = 2;

/// The mean of the four Fig. 10 bars' `metric` among `rows` (None unless all four are there).
fn mean_bar(rows: &[Row], metric: &str) -> Option<f64> {
    let v: Vec<f64> = ["tx-64B", "rx-64B", "tx-64KB", "rx-64KB"]
        .iter()
        .filter_map(|c| {
            rows.iter()
                .find(|r| r.figure == "fig10" && r.case == *c && r.metric == metric)
                .map(|r| r.value)
        })
        .collect();
    (v.len() == 4).then(|| v.iter().sum::<f64>() / 4.0)
}

/// Runs the reproduction.
pub fn run(o: &Options, progress: &mut dyn FnMut(usize, usize)) -> Result<Vec<Row>, PlatformError> {
    let (most_small, most_large) = stream_limits(&o.bandwidth);
    for (key, v, most, what) in [
        (
            "small_count",
            o.small_count,
            most_small,
            "frames a stream holds",
        ),
        (
            "large_count",
            o.large_count,
            most_large,
            "64 KB messages that fill a stream on either device",
        ),
    ] {
        if !(1..=most).contains(&v) {
            return Err(PlatformError::config(
                "larsen-idma",
                key,
                format!("{v}: must be from 1 to {most} (the {what}; a longer stream would run the same {most})"),
            ));
        }
    }
    let mut out = Vec::new();
    let want = |p: &str| o.parts.iter().any(|x| x == p);
    let total = want("latency") as usize * 3
        + want("fig10") as usize * 11
        + want("sensitivity") as usize * 6;
    let mut done = 0;
    let mut tick = |progress: &mut dyn FnMut(usize, usize)| {
        done += 1;
        progress(done, total);
    };
    if want("latency") {
        let pl = &o.platform;
        let fig8 = platform_stack(FIG8_PLATFORM, pl, "", true)?;
        let fig8_mem = platform_stack(FIG8_PLATFORM, pl, "", false)?;
        let fig9 = platform_stack(FIG9_PLATFORM, pl, "", false)?;
        let fig9_cached = platform_stack(FIG9_PLATFORM, pl, "", true)?;
        tick(progress);
        stack_rows(&mut out, "fig8", "descriptor-dma", &fig8, true);
        stack_rows(&mut out, "fig8", "descriptor-dma-memory", &fig8_mem, false);
        stack_rows(&mut out, "fig9", "idma", &fig9, true);
        stack_rows(&mut out, "fig9", "idma-cached", &fig9_cached, false);
        for (case, name, cached) in [
            ("descriptor-dma-memory-slow-dram", FIG8_PLATFORM, false),
            ("idma-slow-dram", FIG9_PLATFORM, false),
            ("idma-cached-slow-dram", FIG9_PLATFORM, true),
        ] {
            let s = platform_stack(name, pl, SLOW_DRAM, cached)?;
            stack_rows(&mut out, "sensitivity", case, &s, false);
        }
        for (case, name) in [
            ("descriptor-dma-memory-closed-page", FIG8_PLATFORM),
            ("idma-closed-page", FIG9_PLATFORM),
        ] {
            let s = platform_stack(name, pl, CLOSED_PAGE, false)?;
            stack_rows(&mut out, "sensitivity", case, &s, false);
        }
        // Table 1's end-to-end latency: two platforms on one wire.
        let sw = host_stack_instructions()?;
        let cases = [
            ("descriptor-dma", FIG8_PLATFORM, FIG8_PLATFORM),
            ("idma", FIG9_PLATFORM, FIG8_PLATFORM),
            ("idma-both", FIG9_PLATFORM, FIG9_PLATFORM),
        ];
        for (case, tx, rx) in cases {
            let e = e2e_cluster(tx, rx, pl, "", true, sw)?;
            let (paper_v, note) = match case {
                "descriptor-dma" => (
                    paper("table1", "descriptor_dma_end_to_end_us"),
                    "calibrated: the host software stack (instructions of the receiver's handler) is fitted to give 8.8 us",
                ),
                "idma" => (
                    paper("table1", "idma_end_to_end_us"),
                    "predicted: the iDMA on the sender, the same software; two platforms on one wire",
                ),
                _ => (None, "the iDMA on both hosts (not in the paper)"),
            };
            out.push(row(
                "table1",
                case,
                "end_to_end_us",
                e.end_to_end_ns / 1000.0,
                paper_v,
                "us",
                note,
            ));
            out.push(row(
                "table1",
                case,
                "hardware_us",
                e.interrupt_ns / 1000.0,
                None,
                "us",
                "the sender's first store to the receiver's interrupt (drivers' stores, DMA, MACs, cable)",
            ));
            out.push(row(
                "table1",
                case,
                "software_us",
                (e.end_to_end_ns - e.interrupt_ns) / 1000.0,
                None,
                "us",
                "the receiver's interrupt to its handler done (the fitted host software stack)",
            ));
        }
        tick(progress);
        // What moves Table 1: DRAM timing, and whether the sender's descriptor and frame are in
        // its cache.
        for (case, tx, extra, cached) in [
            ("descriptor-dma-memory", FIG8_PLATFORM, "", false),
            ("idma-memory", FIG9_PLATFORM, "", false),
            ("descriptor-dma-slow-dram", FIG8_PLATFORM, SLOW_DRAM, true),
            ("idma-slow-dram", FIG9_PLATFORM, SLOW_DRAM, true),
        ] {
            let e = e2e_cluster(tx, FIG8_PLATFORM, pl, extra, cached, sw)?;
            out.push(row(
                "sensitivity",
                &format!("table1-{case}"),
                "end_to_end_us",
                e.end_to_end_ns / 1000.0,
                None,
                "us",
                "Table 1's run on the cluster, the descriptor and frame only in memory or a slower DRAM",
            ));
        }
        tick(progress);
    }
    if want("fig10") {
        let pl = &o.platform;
        let bw_gbps = o.bandwidth.nic.mac_gbps * f64::from(PORTS);
        let sw = host_stack_instructions()?;
        // Fig. 10 on the cluster: the measured host's link, TX on the sender, RX on the receiver.
        let small = o.small_count.min(MAX_STREAM_FRAMES);
        // The NIC sends 64 KB with TSO (one send it segments); the iDMA does not segment, so its
        // 64 KB messages leave as full-size frames.
        let send = large_send(&o.bandwidth);
        let large_sends = o
            .large_count
            .min(MAX_STREAM_FRAMES / segments(&o.bandwidth, send));
        let large_frames = o
            .large_count
            .saturating_mul(LARGE_FRAMES_PER_MESSAGE)
            .min(MAX_STREAM_FRAMES);
        for (ki, name) in [FIG8_PLATFORM, FIG9_PLATFORM].iter().enumerate() {
            let large = if ki == 0 {
                (large_sends, send)
            } else {
                (large_frames, LANE_FRAME)
            };
            for (label, sends, frame, gap) in [
                ("64B", small, small_frame(&o.bandwidth), sw / 2),
                ("64KB", large.0, large.1, 0),
            ] {
                // The descriptor NIC's streams carry TCP ACKs back, as iperf's did; the iDMA's
                // carry none (its hosts send no ACKs yet).
                let acks = ki == 0;
                let t = toml::Table::new();
                let run = |acks: bool| {
                    cluster_stream(
                        name, name, pl, BW_IO, bw_gbps, &t, &t, sends, frame, gap, acks,
                    )
                };
                let s = run(acks)?;
                tick(progress);
                // The same stream without ACKs: what they add to each bar.
                let quiet = if acks {
                    let q = run(false)?;
                    tick(progress);
                    Some(q)
                } else {
                    None
                };
                let frames = tx_frames(&s);
                let (tx, rx) = pair_devices(&s, "the Fig. 10 stream")?;
                for (h, (dir, d)) in [("tx", tx), ("rx", rx)].into_iter().enumerate() {
                    let case = format!("{dir}-{label}");
                    let (share, fetch_db, dllp) = device_shares(d);
                    if let Some(q) = &quiet {
                        let d0 =
                            q.hosts
                                .get(h)
                                .and_then(|p| p.devices.first())
                                .ok_or_else(|| {
                                    PlatformError::Stalled(format!(
                                        "the Fig. 10 stream without ACKs: host {h} has no device"
                                    ))
                                })?;
                        out.push(row(
                            "sensitivity",
                            &format!("fig10-{case}-no-acks"),
                            "descriptor_doorbell_share",
                            device_shares(d0).0,
                            None,
                            "fraction",
                            "Fig. 10's bar with no TCP ACKs going back (the receiver only receives)",
                        ));
                    }
                    if ki == 1 {
                        out.push(row(
                            "fig10",
                            &case,
                            "idma_descriptor_doorbell_share",
                            share,
                            None,
                            "fraction",
                            "with the iDMA on both hosts: only its receive-buffer head writes remain",
                        ));
                        continue;
                    }
                    out.push(row(
                        "fig10",
                        &case,
                        "descriptor_doorbell_share",
                        share,
                        paper("fig10", &format!("{dir}_{label}")),
                        "fraction",
                        "descriptor fetch (requests + completions) + doorbell + write-back + MSI-X, of all TLP bytes on the measured host's link",
                    ));
                    out.push(row(
                        "fig10",
                        &case,
                        "fetch_doorbell_share",
                        fetch_db,
                        None,
                        "fraction",
                        "descriptor fetch + doorbell only, of TLP bytes",
                    ));
                    for (term, metric, note) in [
                        (
                            "write_back",
                            "write_back_share",
                            "descriptor write-backs alone, of TLP bytes (counted in the share: the iDMA keeps them on the die)",
                        ),
                        (
                            "interrupt",
                            "interrupt_share",
                            "MSI-X writes alone, of TLP bytes (counted in the share: section 4.2's 'descriptors and associated interrupts and doorbell transactions')",
                        ),
                    ] {
                        out.push(row(
                            "fig10",
                            &case,
                            metric,
                            term_share(d, term),
                            None,
                            "fraction",
                            note,
                        ));
                    }
                    out.push(row(
                        "fig10",
                        &case,
                        "dllp_share",
                        dllp,
                        None,
                        "fraction",
                        "Ack/UpdateFC DLLPs, of all bytes",
                    ));
                    let mut total = 0u64;
                    let mut by: BTreeMap<String, u64> = BTreeMap::new();
                    for (k, v) in d.bytes_up.iter().chain(&d.bytes_down) {
                        *by.entry(k.clone()).or_default() += v;
                        total += v;
                    }
                    let mut counts: Vec<(String, f64, &str, &str)> = by
                        .iter()
                        .map(|(k, v)| (format!("bytes_{k}"), *v as f64, "B", ""))
                        .collect();
                    counts.push(("link_bytes".into(), total as f64, "B", ""));
                    counts.push((
                        "frames".into(),
                        frames as f64,
                        "frames",
                        if ki == 0 && label == "64KB" {
                            "frames of the stream (64 KB sends, each one TSO send the NIC segments), every one checked against its send and landed checked byte for byte"
                        } else {
                            "frames of the stream, every one landed and checked byte for byte"
                        },
                    ));
                    counts.push((
                        "bytes_checked".into(),
                        rx.rx_bytes_checked as f64,
                        "B",
                        "received bytes checked against the frames that came off the wire",
                    ));
                    counts.push((
                        "acks".into(),
                        rx.acks_sent as f64,
                        "frames",
                        "TCP ACKs the receiver sent (Linux's rule: once more than a receive MSS is unacknowledged, after each poll's segments merged by GRO, and when the reader drains a pushed segment), each checked against its send and landed at the sender checked byte for byte",
                    ));
                    for (metric, v, unit, note) in counts {
                        out.push(row("fig10", &case, &metric, v, None, unit, note));
                    }
                }
            }
        }
        // What moves the small bars: the NIC's write-back thresholds (the same small stream, the
        // descriptor NIC on both hosts). RX: the 82599's RXDCTL.WTHRESH is taken as the 82598's
        // reset value 1, which ixgbe leaves (see the preset); 4 packs one 64 B line, 8 is what
        // ixgbe writes on the 82598. TX: ixgbe writes WTHRESH 1 instead of 8 when the vector's
        // interrupt rate is above 100K/s.
        for (dir, key, v) in [
            ("rx", "rx_wthresh", 4),
            ("rx", "rx_wthresh", 8),
            ("tx", "tx_wthresh", 1),
        ] {
            let s = cluster_stream(
                FIG8_PLATFORM,
                FIG8_PLATFORM,
                pl,
                BW_IO,
                bw_gbps,
                &toml::Table::new(),
                &nic_key(key, v),
                small,
                small_frame(&o.bandwidth),
                sw / 2,
                true,
            )?;
            tick(progress);
            let (tx, rx) = pair_devices(&s, "the Fig. 10 write-back stream")?;
            let (share, _, _) = device_shares(if dir == "tx" { tx } else { rx });
            out.push(row(
                "sensitivity",
                &format!("fig10-{dir}-64B-{}-{v}", key.replace('_', "-")),
                "descriptor_doorbell_share",
                share,
                None,
                "fraction",
                "Fig. 10's small bar with the NIC's write-back threshold changed",
            ));
        }
        // Table 1's bandwidth per lane: a stream of full-size frames on the cluster that saturates
        // the link or the wire, whichever binds.
        for (case, name, key) in [
            (
                "descriptor-dma",
                FIG8_PLATFORM,
                "descriptor_dma_gbps_per_lane",
            ),
            ("idma", FIG9_PLATFORM, "idma_gbps_per_lane"),
        ] {
            let r = cluster_lane_rate(
                name,
                pl,
                BW_IO,
                bw_gbps,
                &toml::Table::new(),
                MAX_STREAM_FRAMES,
            )?;
            tick(progress);
            // The bound is a fact of the link (a lane's data rate after line encoding), not a
            // result: it is in the note, never a row of its own.
            let per_lane_note = format!(
                "simulated: TCP payload of a dual-port stream of full-size frames on the cluster, over the link's lanes; bounded by a lane's data rate, {:.2} Gb/s (a fact of the link)",
                r.lane_limit_gbps
            );
            for (metric, v, p, unit, note) in [
                (
                    "gbps_per_lane",
                    r.per_lane_gbps,
                    paper("table1", key),
                    "Gb/s",
                    per_lane_note.as_str(),
                ),
                (
                    "link_gbps_per_lane",
                    r.link_gbps_per_lane,
                    None,
                    "Gb/s",
                    "every byte on the busier direction of the sender's link, TLPs and DLLPs, per lane",
                ),
                (
                    "wire_share",
                    r.wire_share,
                    None,
                    "fraction",
                    "goodput over the two ports' line rate",
                ),
            ] {
                out.push(row("table1", case, metric, v, p, unit, note));
            }
            // Section 4.2's own arithmetic for Table 1's figure: the ports' line rate per lane
            // less the mean of the four Fig. 10 bars ("available bandwidth on the PCIe interface
            // would increase by 17%"), here of this run's predicted bars. Shown beside the
            // simulated stream, never judged: at the ports' line rate the Gen2 x8 link has room,
            // so the stream's payload does not pay for the descriptors.
            let bar = if case == "descriptor-dma" {
                "descriptor_doorbell_share"
            } else {
                "idma_descriptor_doorbell_share"
            };
            if let Some(mean) = mean_bar(&out, bar) {
                let lanes = f64::from(o.bandwidth.link.lanes);
                out.push(row(
                    "table1",
                    case,
                    "gbps_per_lane_by_share",
                    bw_gbps / lanes * (1.0 - mean),
                    None,
                    "Gb/s",
                    &format!(
                        "section 4.2's arithmetic on this run's bars: the two ports' line rate over the link's lanes ({:.2} Gb/s) less the mean of the four Fig. 10 bars ({:.1}%)",
                        bw_gbps / lanes,
                        100.0 * mean
                    ),
                ));
            }
        }
    }
    if want("sensitivity") {
        let note = format!("larsen-io and larsen-io-idma behind the Haswell-EP root complex and PCIe Gen3 x8 (core, caches and DDR3-1066 as Fig. 8's); the root complex's part of a read derived from pcie-bench's {:.0} ns host-warm 64 B read less the platform's own path", haswell_warm_read_ns()?);
        for (case, st, e) in haswell_rows(&o.platform, host_stack_instructions()?)? {
            tick(progress);
            stack_rows(&mut out, "sensitivity", case, &st, false);
            out.push(e2e_row(case, &e, &note));
        }
        // The receive path with DDIO off and on, on the cluster: the 5520 platform (which has
        // none) with its root complex pushing device writes into the core's L2 on both hosts.
        let sw = host_stack_instructions()?;
        let bw_gbps = o.bandwidth.nic.mac_gbps * f64::from(PORTS);
        for ddio in [false, true] {
            let case = if ddio { "rx-ddio-on" } else { "rx-ddio-off" };
            let extra = if ddio { RX_DDIO } else { "" };
            let e = e2e_cluster(FIG8_PLATFORM, FIG8_PLATFORM, &o.platform, extra, true, sw)?;
            tick(progress);
            out.push(e2e_row(
                case,
                &e,
                "Table 1's run on the cluster (5520 platform, 64 B frame); with DDIO the receiver's handler finds the landed descriptor and frame in its cache",
            ));
            let pl = with_ddio(&o.platform, ddio)?;
            let send = large_send(&o.bandwidth);
            let sends = o
                .large_count
                .min(MAX_STREAM_FRAMES / segments(&o.bandwidth, send));
            let s = cluster_stream(
                FIG8_PLATFORM,
                FIG8_PLATFORM,
                &pl,
                BW_IO,
                bw_gbps,
                &toml::Table::new(),
                &toml::Table::new(),
                sends,
                send,
                0,
                true,
            )?;
            tick(progress);
            let (_, rx) = pair_devices(&s, "the DDIO stream")?;
            for (metric, v, note) in [
                (
                    "rx_memory_write_bytes",
                    rx.lines_to_memory,
                    "device writes that went to DRAM on the receiver (Fig. 10's 64 KB stream)",
                ),
                (
                    "rx_cache_write_bytes",
                    rx.lines_to_cache,
                    "device writes pushed into the receiving core's cache (DDIO)",
                ),
            ] {
                out.push(row(
                    "sensitivity",
                    case,
                    metric,
                    v as f64 * 64.0,
                    None,
                    "B",
                    note,
                ));
            }
        }
    }
    if want("pcie-model") {
        for r in super::pcie_model_check::run(cluster_stream)? {
            let case = format!("{}-gen{}-{}B", r.model, r.gen, r.size);
            let note = "pcie-model restated in our code (see experiments/pcie_model_check.rs)";
            out.push(row(
                "pcie-model",
                &case,
                "movelab_gbps",
                r.movelab_gbps,
                None,
                "Gb/s",
                "",
            ));
            out.push(row(
                "pcie-model",
                &case,
                "pcie_model_gbps",
                r.pcie_model_gbps,
                None,
                "Gb/s",
                note,
            ));
            if r.model.ends_with("-rx") {
                out.push(row(
                    "pcie-model",
                    &case,
                    "pcie_model_fixed_gbps",
                    r.pcie_model_fixed_gbps,
                    None,
                    "Gb/s",
                    "pcie-model with its RX slip mended (descriptor-read requests counted)",
                ));
            }
        }
        tick(progress);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_values_load() {
        assert_eq!(paper("fig8", "total_ns"), Some(1770.0));
        assert_eq!(paper("table1", "idma_end_to_end_us"), Some(7.38));
        assert_eq!(paper("fig10", "tx_64B"), Some(0.43));
    }

    fn bw() -> IoConfig {
        IoConfig::preset(BW_IO).expect("preset")
    }

    fn none() -> toml::Value {
        toml::Value::Table(Default::default())
    }

    fn part(st: &TxStack, name: &str) -> f64 {
        st.parts
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no {name} in the stack"))
    }

    /// Fig. 9's descriptor read with the lines only in memory takes what the DRAM's row state
    /// gives it: the first message's finds its bank precharged (row opened: about 46 ns); the
    /// next ones find the ring's row open again (a row hit: 31-33 ns) although the payload read
    /// between closed it (the TX buffers share the ring's bank): the engine's own write of the
    /// descriptor it marked done reopened it. So the mean is below the first. With a
    /// closed-page controller no read finds its row open and the mean is the first's; the
    /// payload reads (a row conflict where the TX buffer shares the ring's bank) fall to the
    /// row-opening cost too. The cached case does not touch the DRAM and does not move.
    #[test]
    fn fig9_reads_follow_the_row_the_dram_left_open() {
        let open = platform_stack(FIG9_PLATFORM, &none(), "", false).expect("open");
        let closed = platform_stack(FIG9_PLATFORM, &none(), CLOSED_PAGE, false).expect("closed");
        let first = |st: &TxStack, name: &str| {
            st.first
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| *v)
                .unwrap_or_else(|| panic!("no first {name}"))
        };
        let (od, cd) = (part(&open, "descriptor"), part(&closed, "descriptor"));
        let at = format!("open {open:?} closed {closed:?}");
        // Open page: later messages' descriptor reads are row hits.
        assert!(first(&open, "descriptor") - od > 5.0, "{at}");
        // Closed page: every descriptor read opens its row: the mean is the first message's.
        assert!((first(&closed, "descriptor") - cd).abs() < 2.0, "{at}");
        assert!(cd - od > 5.0, "{at}");
        // Closed page: no payload read waits for another row's precharge as long.
        assert!(part(&closed, "payload") < part(&open, "payload"), "{at}");
        // Neither the doorbell nor the push goes to the DRAM.
        for k in ["doorbell", "push"] {
            assert!((part(&open, k) - part(&closed, k)).abs() < 1e-9, "{at}");
        }
        for cached in [
            platform_stack(FIG9_PLATFORM, &none(), "", true).expect("cached"),
            platform_stack(FIG9_PLATFORM, &none(), CLOSED_PAGE, true).expect("cached closed"),
        ] {
            assert!(
                (part(&cached, "descriptor") - 12.5).abs() < 0.5,
                "{cached:?}"
            );
        }
    }

    /// The Haswell/Gen3 rows come from the platform: the root complex's own part is derived from
    /// the platform's path (a slower on-die response leaves less of pcie-bench's 546 ns to it),
    /// the descriptor-DMA payload fetch returns the fact it was derived from, and the iDMA's
    /// reads move with the platform's memory system (no constants of the two-host model).
    #[test]
    fn haswell_rows_come_from_the_platform() {
        let rc = haswell_rc_read_ns(&none()).unwrap();
        let warm = haswell_warm_read_ns().unwrap();
        assert!(rc > 0.0 && rc < warm, "{rc}");
        let slow: toml::Value = toml::from_str("[interconnect]\nresponse_ns = 25.0").unwrap();
        let rc_slow = haswell_rc_read_ns(&slow).unwrap();
        assert!(rc_slow < rc - 10.0, "{rc_slow} vs {rc}");

        let rows = haswell_rows(&none(), host_stack_instructions().unwrap()).unwrap();
        let (_, desc, de) = &rows[0];
        let (_, idma, ie) = &rows[1];
        assert!((part(desc, "payload") - warm).abs() < 0.5);
        assert!(ie.end_to_end_ns < de.end_to_end_ns);

        let mut c = haswell_platform(FIG9_PLATFORM, &none(), rc).unwrap();
        let cached = stack_of(&c, FIG9_PLATFORM, true).unwrap();
        assert!((part(&cached, "payload") - part(idma, "payload")).abs() < 1e-9);
        let mem = stack_of(&c, FIG9_PLATFORM, false).unwrap();
        assert!(part(&mem, "payload") > part(&cached, "payload") + 10.0);
        c = c
            .with_overrides(toml::from_str(SLOW_DRAM).unwrap(), "test")
            .unwrap();
        let slow_mem = stack_of(&c, FIG9_PLATFORM, false).unwrap();
        assert!(part(&slow_mem, "payload") > part(&mem, "payload") + 5.0);
    }

    /// Table 1 on the cluster: the end-to-end latency comes out of the two platforms' memory
    /// systems, so DRAM timing and whether the sender's descriptor is in its cache move it, and
    /// the iDMA's is a separate run (no arithmetic of Fig. 8 and Fig. 9).
    /// The end-to-end run measures the path, not the receiver's start-up: twice the settling
    /// cable gives the same latency, and the iDMA's (fast) frame now feels whether the sender's
    /// descriptor and frame were cached (before the settle, both gave 7.58 us: the frame waited
    /// for the receiver's first RX descriptor).
    #[test]
    fn cluster_table1_is_not_bound_by_the_receivers_start_up() {
        let none = toml::Value::Table(Default::default());
        let plat = |name: &str| {
            let mut c = super::super::platform(name, &none, "").expect("preset");
            set_frame(&mut c, FRAME as u32);
            c
        };
        let rx = plat(FIG8_PLATFORM);
        for tx_name in [FIG9_PLATFORM, FIG8_PLATFORM] {
            let tx = plat(tx_name);
            let run = |w: u64, settle: f64| {
                e2e_over(&tx, &rx, w, 1000, tx_name, FIG8_PLATFORM, settle).expect("run")
            };
            let (one, two) = (run(1, SETTLE_M), run(1, 2.0 * SETTLE_M));
            // The handler's own memory accesses meet DRAM refresh at another phase: tens of ns.
            assert!(
                (one.end_to_end_ns - two.end_to_end_ns).abs() < 50.0,
                "{one:?} {two:?}"
            );
            assert!(
                (one.interrupt_ns - two.interrupt_ns).abs() < 0.01,
                "{one:?} {two:?}"
            );
            let memory = run(0, SETTLE_M);
            assert!(
                (memory.interrupt_ns - one.interrupt_ns).abs() > 1.0,
                "{tx_name}: cached {one:?} memory {memory:?}"
            );
        }
        // Without the settle the iDMA's frame waits for the receiver: the cache state is lost.
        let tx = plat(FIG9_PLATFORM);
        let (c, m) = (
            e2e_over(&tx, &rx, 1, 1000, FIG9_PLATFORM, FIG8_PLATFORM, 0.0).expect("run"),
            e2e_over(&tx, &rx, 0, 1000, FIG9_PLATFORM, FIG8_PLATFORM, 0.0).expect("run"),
        );
        assert!(
            (c.interrupt_ns - m.interrupt_ns).abs() < 0.01,
            "{c:?} {m:?}"
        );
    }

    #[test]
    fn cluster_table1_moves_with_dram_timing_and_descriptor_cache_state() {
        let sw = host_stack_instructions().expect("calibration");
        let e = |tx: &str, extra: &str, cached: bool| {
            e2e_cluster(tx, FIG8_PLATFORM, &none(), extra, cached, sw).expect("run")
        };
        let base = e(FIG8_PLATFORM, "", true);
        let slow = e(FIG8_PLATFORM, SLOW_DRAM, true);
        let memory = e(FIG8_PLATFORM, "", false);
        eprintln!("base {base:?} slow {slow:?} memory {memory:?}");
        assert!(base.end_to_end_ns > base.interrupt_ns, "{base:?}");
        // A slower DRAM: the receiver's landed frame and descriptor are read from DRAM.
        assert!(
            slow.end_to_end_ns > base.end_to_end_ns + 20.0,
            "{slow:?} vs {base:?}"
        );
        // The descriptor and frame only in DRAM instead of the driver's cache: the sender's
        // fetches take another path.
        assert!(
            (memory.interrupt_ns - base.interrupt_ns).abs() > 5.0,
            "{memory:?} vs {base:?}"
        );
        // The iDMA on the sender: shorter, by an amount the platform gives.
        let idma = e(FIG9_PLATFORM, "", true);
        let idma_slow = e(FIG9_PLATFORM, SLOW_DRAM, true);
        eprintln!("idma {idma:?} idma slow {idma_slow:?}");
        assert!(idma.end_to_end_ns < base.end_to_end_ns - 500.0, "{idma:?}");
        assert!(
            idma_slow.end_to_end_ns > idma.end_to_end_ns + 20.0,
            "{idma_slow:?}"
        );
        // The software term is the receiver's handler: more instructions, later.
        let more =
            e2e_cluster(FIG8_PLATFORM, FIG8_PLATFORM, &none(), "", true, sw * 2).expect("run");
        assert!(more.end_to_end_ns > base.end_to_end_ns + 500.0, "{more:?}");
        assert!(
            (more.interrupt_ns - base.interrupt_ns).abs() < 1.0,
            "{more:?}"
        );
    }

    /// Table 1's per-lane figure on the cluster never exceeds a lane's data rate, whatever the
    /// link and the wire, and follows what binds.
    #[test]
    fn cluster_per_lane_is_bounded_by_the_link_under_perturbation() {
        let link = |gen: i64, lanes: i64| {
            toml::Table::from_iter([
                ("gen".to_string(), toml::Value::Integer(gen)),
                ("lanes".to_string(), toml::Value::Integer(lanes)),
            ])
        };
        let mut seen = Vec::new();
        for (gen, lanes, gbps) in [
            (1, 1, 40.0),
            (1, 4, 40.0),
            (2, 8, 20.0),
            (2, 2, 100.0),
            (3, 1, 100.0),
        ] {
            for name in [FIG8_PLATFORM, FIG9_PLATFORM] {
                let r = cluster_lane_rate(name, &none(), BW_IO, gbps, &link(gen, lanes), 40)
                    .expect("stream");
                let at = format!("gen{gen} x{lanes} {gbps} Gb/s {name}: {r:?}");
                eprintln!("{at}");
                let (gt, enc) = gen_rate(gen as u8).expect("gen");
                assert!((r.lane_limit_gbps - gt * enc).abs() < 1e-12, "{at}");
                assert!(r.per_lane_gbps > 0.0, "{at}");
                assert!(r.per_lane_gbps < r.lane_limit_gbps, "{at}");
                assert!(r.link_gbps_per_lane > r.per_lane_gbps, "{at}");
                assert!(r.link_gbps_per_lane <= r.lane_limit_gbps * 1.0001, "{at}");
                assert!(r.wire_share < 1.0, "{at}");
                seen.push(r.per_lane_gbps);
            }
        }
        // A Gen1 x1 link binds hard: far below the Gen2 x8 case's wire-bound figure.
        assert!(seen[0] > 0.5 * 2.0 && seen[4] < 3.0, "{seen:?}");
    }

    /// A stream between two Fig. 8 hosts on the bandwidth I/O preset, `nic` keys changed.
    fn fig8_stream(
        nic: &toml::Table,
        sends: u64,
        send: u32,
    ) -> Result<ClusterStats, PlatformError> {
        let none_link = toml::Table::new();
        cluster_stream(
            FIG8_PLATFORM,
            FIG8_PLATFORM,
            &none(),
            BW_IO,
            20.0,
            &none_link,
            nic,
            sends,
            send,
            0,
            false,
        )
    }

    #[test]
    fn cluster_streams_reject_bad_lengths() {
        let t = toml::Table::new();
        for n in [0, MAX_STREAM_FRAMES + 1] {
            let e = fig8_stream(&t, n, 64).expect_err("refused").to_string();
            assert!(e.contains("frames"), "{e}");
        }
    }

    /// Fig. 10's "64BIO" is iperf's 64 B write: 64 B of TCP payload behind the bandwidth
    /// preset's headers, one frame (the 64 KB send carries 64 KiB behind the same headers).
    #[test]
    fn the_small_io_is_64_bytes_of_payload_in_one_frame() {
        let io = bw();
        let f = small_frame(&io);
        assert_eq!(f, 64 + io.driver.header_bytes);
        assert_eq!(f - SMALL_IO, large_send(&io) - 65_536);
        assert_eq!(segments(&io, f), 1);
    }

    /// The small RX bar is a model of the NIC's write-backs: with RX WTHRESH 8 the receiver's
    /// link carries fewer write-back bytes (runs of eight descriptors instead of one TLP per
    /// frame) and the share falls; the fetches and doorbells stay. The four terms' own shares add
    /// up to the bar.
    #[test]
    fn the_small_rx_bar_moves_with_the_write_back_threshold() {
        let io = bw();
        let gbps = io.nic.mac_gbps * f64::from(PORTS);
        let run = |wthresh: i64| {
            let s = cluster_stream(
                FIG8_PLATFORM,
                FIG8_PLATFORM,
                &none(),
                BW_IO,
                gbps,
                &toml::Table::new(),
                &nic_key("rx_wthresh", wthresh),
                40,
                small_frame(&io),
                2000,
                false,
            )
            .expect("stream");
            let (_, rx) = pair_devices(&s, "test").expect("devices");
            let (all, fetch_db, _) = device_shares(rx);
            let terms = term_share(rx, "descriptor")
                + term_share(rx, "doorbell")
                + term_share(rx, "write_back")
                + term_share(rx, "interrupt");
            assert!((terms - all).abs() < 1e-12, "{terms} {all}");
            (
                all,
                fetch_db,
                rx.nic.rx_desc_written_back,
                rx.bytes_up
                    .iter()
                    .chain(&rx.bytes_down)
                    .filter(|(k, _)| k == "write_back")
                    .map(|(_, v)| *v)
                    .sum::<u64>(),
            )
        };
        let (one, one_fd, one_wb, one_wbytes) = run(1);
        let (eight, eight_fd, eight_wb, eight_wbytes) = run(8);
        assert_eq!(one_wb, 40);
        assert_eq!(eight_wb, 40, "every descriptor is still written back");
        // One 40 B TLP per descriptor against a 152 B TLP per eight: less than half the bytes.
        assert!(eight_wbytes * 2 < one_wbytes, "{eight_wbytes} {one_wbytes}");
        assert!(eight < one - 0.05, "{eight} {one}");
        // Fewer write-back bytes make the fetches a larger part of a smaller total.
        assert!(eight_fd >= one_fd, "{eight_fd} {one_fd}");
    }

    /// TCP ACKs on the cluster: the receiver sends a delayed ACK per two data segments (small
    /// frames and a TSO send's segments alike), each a frame of the headers alone checked against
    /// its send; every one lands at the sender checked byte for byte; each ACK costs the
    /// receiver's link a doorbell and a descriptor fetch and the sender's link a landed frame and
    /// a write-back, so both bars rise. The iDMA hosts send none and say so.
    #[test]
    fn tcp_acks_go_back_checked_and_raise_both_bars() {
        let io = bw();
        let gbps = io.nic.mac_gbps * f64::from(PORTS);
        let t = toml::Table::new();
        let run = |sends: u64, send: u32, acks: bool| {
            cluster_stream(
                FIG8_PLATFORM,
                FIG8_PLATFORM,
                &none(),
                BW_IO,
                gbps,
                &t,
                &t,
                sends,
                send,
                if send > 1514 { 0 } else { 2000 },
                acks,
            )
            .expect("stream")
        };
        let hdr = u64::from(io.driver.header_bytes);
        assert!(io.driver.gro, "the 82599's kernel merges with GRO");
        for (sends, send, frames) in [(40, small_frame(&io), 40u64), (1, large_send(&io), 46)] {
            let with = run(sends, send, true);
            let without = run(sends, send, false);
            let (tx, rx) = pair_devices(&with, "test").expect("devices");
            let (tx0, rx0) = pair_devices(&without, "test").expect("devices");
            assert_eq!(tx.frames, frames);
            let acks = rx.acks_sent;
            assert_eq!(acks, rx.acks_owed, "every ACK owed is sent");
            // Fewer than one per two segments: 64 B segments are counted in bytes against a
            // receive MSS of 536 (an ACK covers up to 9 of them; the reader's drain acknowledges
            // the rest of a poll), and GRO merges a poll's full-size segments into one packet.
            assert!(acks < frames / 2, "{acks} ACKs for {frames} segments");
            assert!(
                acks >= frames.div_ceil(if send > 1514 { 45 } else { 9 }),
                "{acks}"
            );
            assert_eq!(rx.frames, acks);
            assert_eq!(rx.frame_bytes, acks * hdr, "an ACK is the headers alone");
            assert_eq!(rx.tx_bytes_checked, rx.frame_bytes);
            assert_eq!(tx.nic.rx_frames, acks);
            assert_eq!(tx.rx_bytes_checked, acks * hdr);
            assert_eq!(tx.rx_bytes_wrong, 0);
            assert_eq!(rx0.acks_sent + tx0.nic.rx_frames, 0);
            let doorbells = |d: &DeviceStats| {
                d.bytes_down
                    .iter()
                    .filter(|(k, _)| k == "doorbell")
                    .map(|(_, v)| *v)
                    .sum::<u64>()
            };
            assert!(
                doorbells(rx) > doorbells(rx0),
                "each ACK rings the receiver's doorbell"
            );
            assert!(device_shares(tx).0 > device_shares(tx0).0);
            assert!(device_shares(rx).0 > device_shares(rx0).0);
        }
        let e = cluster_stream(
            FIG9_PLATFORM,
            FIG9_PLATFORM,
            &none(),
            BW_IO,
            gbps,
            &t,
            &t,
            4,
            small_frame(&io),
            2000,
            true,
        )
        .expect_err("the iDMA sends no ACKs")
        .to_string();
        assert!(e.contains("acks"), "{e}");
    }

    /// A `[nic]` key that breaks the preset's rules is refused, naming the key.
    #[test]
    fn a_bad_nic_key_is_refused_by_name() {
        let io = bw();
        let e = fig8_stream(&nic_key("rx_wthresh", -3), 4, small_frame(&io))
            .expect_err("refused")
            .to_string();
        assert!(e.contains("rx_wthresh"), "{e}");
    }
}
