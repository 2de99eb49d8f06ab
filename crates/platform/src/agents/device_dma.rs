//! What the platform's devices share when they move data through the memory system: a line read
//! served by a snoop of a dirty cached copy or by the DRAM model, the version check of a payload
//! line, a line written to memory, the latency stacks they report, and their Ethernet MAC and port
//! ([`MacPort`]). Used by the PCIe NIC (`pcie_device.rs`) and the integrated DMA engine
//! (`idma.rs`).
use crate::agents::Port;
use crate::memory::memory_system::{AgentId, MemReq, MemorySystem, ReqKind, Response};
use crate::net::ethernet_link::{frame_wire_ps, OVERHEAD_BYTES};
use crate::pcie::link::{Dir, Link};
use crate::sim::Ps;
use crate::stats::DeviceStats;
use movelab_dram::request::Op as MemOp;

/// A latency stack: (part, ns).
pub type Stack = Vec<(String, f64)>;

/// Tag of a device's memory writes (nothing waits for them).
pub const WRITE_TAG: u32 = u32::MAX;

/// Reads `line` for agent `agent` (its request tagged `tag`) at `now`: a line dirty in some cache
/// is supplied by that cache (a snoop turn, then the line on the data path), arriving as the
/// agent's event `ev_line` with the request's id; any other line is read from the DRAM model and
/// answered through [`crate::agents::Agent::response`]. With `payload`, the version the path
/// delivers is checked against the last one written. With `copy`, the read is part of a copy the
/// agent took from a core (counted as copy traffic). Counts the path in `stats`.
#[allow(clippy::too_many_arguments)]
pub fn read_line(
    sys: &mut MemorySystem,
    now: Ps,
    agent: AgentId,
    tag: u32,
    line: u64,
    ev_line: u16,
    payload: bool,
    copy: bool,
    stats: &mut DeviceStats,
) -> Option<u64> {
    let a = line * 64;
    let from_cache = sys.dirty_anywhere(line);
    let mut seen = None;
    if payload {
        if let Some((v, latest)) = sys.device_read_version(line, from_cache) {
            stats.lines_checked += 1;
            if v != latest {
                stats.stale_lines += 1;
            }
            seen = Some(v);
        }
    }
    let kind = ReqKind::Agent { agent, tag };
    if from_cache {
        stats.lines_from_cache += 1;
        let ch = sys.channel_of(a);
        let t = sys.ic().request_arrives(now, ch);
        let at = sys.ic().fill_arrives(t, 0);
        let id = sys.alloc_req(MemReq {
            addr: a,
            op: MemOp::Read,
            engine: true,
            kind,
            copy,
            channel: 0,
        });
        sys.schedule(at, agent, ev_line, id);
    } else {
        stats.lines_from_memory += 1;
        let at = sys.ic().address_phase(now);
        sys.send(at, a, MemOp::Read, true, kind, copy);
    }
    seen
}

/// The DRAM model answered a line read of [`read_line`]: the line travels from the controller on
/// the data path and arrives as the agent's event `ev_line` with the request's id.
pub fn line_answered(sys: &mut MemorySystem, now: Ps, agent: AgentId, r: Response, ev_line: u16) {
    if let Response::ReadDone { req, channel, .. } = r {
        let at = sys.ic().fill_arrives(now, channel);
        sys.schedule(at, agent, ev_line, req);
    }
}

/// A device writes `line` whole to memory: every cached copy is invalidated and the write goes
/// to the DRAM model.
pub fn write_line(sys: &mut MemorySystem, now: Ps, agent: AgentId, line: u64) {
    sys.agent_write_line(line);
    let at = sys.ic().address_phase(now);
    let kind = ReqKind::Agent {
        agent,
        tag: WRITE_TAG,
    };
    sys.send(at, line * 64, MemOp::Write, true, kind, false);
}

/// A core's uncached access to the registers of a device on the die (the iDMA, the
/// microengines): it leaves the core after its address-phase turn (`Ok`: when, for a store, which
/// reaches the device `message` later), or, for a load, returns after the message there and back
/// (`Err`: the core's answer).
pub fn on_die_register(
    sys: &mut MemorySystem,
    now: Ps,
    write: bool,
    message: Ps,
) -> Result<Ps, crate::iface::Access> {
    sys.count_uncached();
    let leave = sys.ic().address_phase(now);
    if write {
        Ok(leave)
    } else {
        Err(crate::iface::Access::At(leave + 2 * message))
    }
}

/// A device writes `line` into host memory through the root complex: with DDIO (`ddio_core`) it
/// is pushed into that core's L2, else written to memory (cached copies invalidated either way).
/// Counts the path in `stats`.
pub fn host_write_line(
    sys: &mut MemorySystem,
    now: Ps,
    agent: AgentId,
    ddio_core: Option<usize>,
    line: u64,
    stats: &mut DeviceStats,
) {
    match ddio_core {
        Some(c) => {
            stats.lines_to_cache += 1;
            sys.push_to_l2(now, c, line, false);
        }
        None => {
            stats.lines_to_memory += 1;
            write_line(sys, now, agent, line);
        }
    }
}

/// The first packet's stack (`first`, when known) and the mean over `all` packets, each part named.
pub fn stacks<const N: usize>(
    names: [&str; N],
    first: Option<[f64; N]>,
    all: &[[f64; N]],
) -> (Stack, Stack) {
    let named = |v: [f64; N]| -> Stack { names.iter().map(|n| n.to_string()).zip(v).collect() };
    let first = first.map(named).unwrap_or_default();
    if all.is_empty() {
        return (first, Vec::new());
    }
    let mut m = [0.0; N];
    for p in all {
        for k in 0..N {
            m[k] += p[k] / all.len() as f64;
        }
    }
    (first, named(m))
}

/// A link direction's bytes by category, for the report.
pub fn link_bytes(link: &Link, d: Dir) -> Vec<(String, u64)> {
    link.bytes(d)
        .categories()
        .into_iter()
        .map(|(n, b)| (n.to_string(), b))
        .collect()
}

/// A device's Ethernet MAC and its port: it serialises each frame after the one before (the wire
/// time of [`crate::net::ethernet_link`]), and, once its port is on a link
/// ([`crate::agents::Agent::attach_port`]), keeps the frames it sent for the link to take. Shared
/// by the NIC and the iDMA's adapter.
#[derive(Debug, Clone)]
pub struct MacPort {
    gbps: f64,
    /// The MAC and PHY's transmit and receive pipelines.
    tx: Ps,
    rx: Ps,
    /// When the transmitter has serialised the last frame handed to it.
    free: Ps,
    on_link: bool,
    outbox: Vec<(Ps, Vec<u8>)>,
}

impl MacPort {
    pub fn new(gbps: f64, tx: Ps, rx: Ps) -> MacPort {
        MacPort {
            gbps: gbps.max(0.001),
            tx,
            rx,
            free: 0,
            on_link: false,
            outbox: Vec::new(),
        }
    }

    /// A frame of `len` bytes handed to the MAC at `now`: when its last bit is serialised.
    pub fn serialise(&mut self, now: Ps, len: usize) -> Ps {
        let done = now.max(self.free) + frame_wire_ps(len, self.gbps, OVERHEAD_BYTES);
        self.free = done;
        done
    }

    /// Puts the port on a link, unless the device loops its frames back (`loopback`; `what` names
    /// the device in the refusal).
    pub fn attach(&mut self, loopback: bool, what: &str) -> Result<Port, String> {
        if loopback {
            return Err(format!(
                "the {what} loops its frames back to itself (loopback = true); on a link it needs \
                 loopback = false"
            ));
        }
        self.on_link = true;
        Ok(Port {
            gbps: self.gbps,
            tx_ps: self.tx,
            rx_ps: self.rx,
            ring: 0,
        })
    }

    pub fn on_link(&self) -> bool {
        self.on_link
    }

    /// The MAC finished sending `frame` at `now`: on a link it leaves after the transmit pipeline.
    pub fn sent(&mut self, now: Ps, frame: Vec<u8>) {
        if self.on_link {
            self.outbox.push((now + self.tx, frame));
        }
    }

    /// When a frame whose last bit came in from the link at `at` reaches the device.
    pub fn received_at(&self, at: Ps) -> Ps {
        at + self.rx
    }

    pub fn has_frames(&self) -> bool {
        !self.outbox.is_empty()
    }

    pub fn take_frames(&mut self, out: &mut Vec<(Ps, Vec<u8>)>) {
        out.append(&mut self.outbox);
    }
}
