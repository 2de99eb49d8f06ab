//! What the platform's devices share when they move data through the memory system: a line read
//! served by a snoop of a dirty cached copy or by the DRAM model, the version check of a payload
//! line, a line written to memory, and the latency stacks they report. Used by the PCIe NIC
//! (`pcie_device.rs`) and the integrated DMA engine (`idma.rs`).
use crate::memory::memory_system::{AgentId, MemReq, MemorySystem, ReqKind, Response};
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
/// delivers is checked against the last one written. Counts the path in `stats`.
#[allow(clippy::too_many_arguments)]
pub fn read_line(
    sys: &mut MemorySystem,
    now: Ps,
    agent: AgentId,
    tag: u32,
    line: u64,
    ev_line: u16,
    payload: bool,
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
            copy: false,
            channel: 0,
        });
        sys.schedule(at, agent, ev_line, id);
    } else {
        stats.lines_from_memory += 1;
        let at = sys.ic().address_phase(now);
        sys.send(at, a, MemOp::Read, true, kind, false);
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
