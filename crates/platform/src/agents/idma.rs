//! Larsen & Lee's integrated DMA engine (iDMA, CACHES 2011 section 3.1) as an agent of the
//! platform: an engine on the die beside the cores that transmits for a simple FIFO+PHY adapter
//! on PCIe. Unlike the two-host I/O model (`devices/idma.rs`), nothing here is a typed-in latency
//! for memory: every read goes through the platform's memory system.
//!
//! - The driver's doorbell is a core's uncached store to the engine's register window (`bar`,
//!   with the 82598's offsets, so the same driver program rings a NIC or the engine): it leaves
//!   the core after its address-phase turn and reaches the engine after the interconnect's
//!   `engine_message_ns` (the on-die message a core sends an on-die copy engine).
//! - The engine reads each new descriptor's line, then the payload's lines, through the coherent
//!   memory system: a line dirty in a core's cache is supplied by that cache (the snoop and the
//!   data path), any other line comes from the DRAM model. So the descriptor and payload reads
//!   move with DRAM timing and with whether the lines are cached.
//! - The payload is then pushed to the adapter as posted writes: up through the uncore and the
//!   I/O hub (`root_complex.downstream_ns`, the same path a doorbell takes to a PCIe NIC) and
//!   down the timed PCIe link; the adapter's MAC serialises the frame at `nic.mac_gbps`.
//! - The engine marks the descriptors done in memory (a line written by an agent: cached copies
//!   are invalidated) and notifies `irq_core` with an on-die message, which runs its handler.
//!
//! Modelled: transmit, one packet at a time (the engine reads a packet's descriptor, then its
//! payload, then pushes it), with every payload line's version checked against the last version a
//! core wrote. Not modelled here: receive through the engine's pinned buffer (the two-host I/O
//! model runs it), context descriptors and TSO.
use crate::agents::device_dma::{self, Stack};
use crate::agents::{Agent, AgentReport};
use crate::config::platform::{PcieDeviceConfig, PlatformConfig};
use crate::devices::idma::{FifoAdapter, FIFO, FIFO_EOP};
use crate::devices::nic;
use crate::iface::Access;
use crate::memory::memory_system::{AgentId, MemorySystem, Response};
use crate::pcie::bytes::{Geometry, Purpose};
use crate::pcie::link::{Dir, Link, LinkOut, Tlp, TlpKind};
use crate::pcie::root_complex::HostMemory;
use crate::sim::error::PlatformError;
use crate::sim::{ns, Ps};
use crate::stats::DeviceStats;
use std::collections::{HashMap, VecDeque};

/// The doorbell reaches the engine.
const EV_DOORBELL: u16 = 0;
/// A line the engine reads is in (id: the memory request).
const EV_LINE: u16 = 1;
/// A push TLP reaches the link's transmitter (id: a held TLP).
const EV_SEND: u16 = 2;
/// A TLP reaches the adapter (id: a held TLP).
const EV_DELIVER: u16 = 3;
/// The link's timer (downstream only).
const EV_LINK_TIMER: u16 = 4;
/// The adapter's MAC finished a frame.
const EV_MAC: u16 = 5;

/// Where the engine is in its current packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Descriptor,
    Payload,
}

/// One packet's transmit times (ps).
#[derive(Debug, Clone, Copy, Default)]
struct Trace {
    store: Ps,
    triggered: Ps,
    desc_done: Ps,
    data_done: Ps,
    push_start: Ps,
    at_adapter: Ps,
}

/// The iDMA engine and its adapter as a platform agent.
pub struct IdmaAgent {
    id: AgentId,
    cfg: PcieDeviceConfig,
    g: Geometry,
    link: Link,
    adapter: FifoAdapter,
    /// The descriptors and payload as the engine sees them (written when the driver rings).
    mem: HostMemory,
    message: Ps,
    downstream: Ps,
    mac_gbps: f64,
    ring: u32,
    /// The driver's tail (descriptors posted) and the engine's next descriptor.
    tail: u32,
    next: u32,
    posted: u64,
    /// Doorbell store times not yet taken by a packet.
    stores: VecDeque<Ps>,
    phase: Phase,
    lines_left: u32,
    current: Trace,
    /// The current packet's descriptor index and payload (address, length).
    desc: u32,
    payload: (u64, u32),
    tlps: HashMap<u32, Tlp>,
    next_tlp: u32,
    traces: Vec<Trace>,
    /// Frames the adapter has closed (frames arrive in the order they were pushed).
    arrived: usize,
    /// Frames the adapter holds for its MAC, by event id.
    frames: HashMap<u32, usize>,
    stats: DeviceStats,
    last_done: Ps,
}

impl IdmaAgent {
    pub fn new(
        id: AgentId,
        pc: &PlatformConfig,
        sys: &mut MemorySystem,
    ) -> Result<IdmaAgent, PlatformError> {
        let src = pc.name.as_str();
        let cfg = pc.io.clone().ok_or_else(|| {
            PlatformError::config(src, "agents", "the iDMA agent has no parameters")
        })?;
        cfg.validate(src)?;
        if cfg.rx_ring.is_some() || cfg.loopback {
            return Err(PlatformError::config(
                src,
                "io.rx_ring",
                "the iDMA on the platform transmits only (its receive path runs in the two-host I/O model)",
            ));
        }
        let io = cfg.io_config(src)?;
        if cfg.irq_core as usize >= sys.cores() {
            return Err(PlatformError::config(
                src,
                "io.irq_core",
                format!(
                    "core {}, but the platform has {} cores",
                    cfg.irq_core,
                    sys.cores()
                ),
            ));
        }
        sys.register_mmio(cfg.bar, cfg.bar_bytes, id)
            .map_err(|e| PlatformError::config(src, "io.bar", e))?;
        Ok(IdmaAgent {
            id,
            g: io.geometry(),
            link: Link::new(io.link_params()),
            adapter: FifoAdapter::new(&io, 0),
            mem: HostMemory::default(),
            message: sys.ic().engine_message,
            downstream: ns(io.root_complex.downstream_ns),
            mac_gbps: io.nic.mac_gbps.max(0.001),
            ring: io.nic.tx_ring.max(1),
            tail: 0,
            next: 0,
            posted: 0,
            stores: VecDeque::new(),
            phase: Phase::Idle,
            lines_left: 0,
            current: Trace::default(),
            desc: 0,
            payload: (0, 0),
            tlps: HashMap::new(),
            next_tlp: 0,
            traces: Vec::new(),
            arrived: 0,
            frames: HashMap::new(),
            stats: DeviceStats {
                name: "idma".into(),
                ..Default::default()
            },
            last_done: 0,
            cfg,
        })
    }

    /// The driver's doorbell stands for one packet: its descriptor (written where the driver's
    /// program stored it), and the new tail.
    fn post_packet(&mut self) -> u32 {
        let slot = self.posted % self.ring as u64;
        let buf = self.cfg.tx_buffers + slot * self.cfg.tx_buffer_stride;
        let d = nic::tx_data_desc(buf, self.cfg.frame_bytes as u16, nic::CMD_EOP | nic::CMD_RS);
        self.mem
            .write(self.cfg.tx_ring + self.tail as u64 * nic::DESC, &d);
        self.tail = (self.tail + 1) % self.ring;
        self.posted += 1;
        self.tail
    }

    /// Reads lines `addr..addr+len` through the memory system; each arrives as an `EV_LINE`.
    fn read_lines(&mut self, sys: &mut MemorySystem, now: Ps, addr: u64, len: u64, payload: bool) {
        let first = addr / 64;
        let last = (addr + len.max(1) - 1) / 64;
        self.lines_left = (last - first + 1) as u32;
        for line in first..=last {
            device_dma::read_line(
                sys,
                now,
                self.id,
                0,
                line,
                EV_LINE,
                payload,
                &mut self.stats,
            );
        }
    }

    /// Starts the next packet if the engine is idle and the driver posted one.
    fn start(&mut self, sys: &mut MemorySystem, now: Ps) {
        if self.phase != Phase::Idle || self.next == self.tail {
            return;
        }
        self.desc = self.next;
        self.next = (self.next + 1) % self.ring;
        self.current = Trace {
            store: self.stores.pop_front().unwrap_or(now),
            triggered: now,
            ..Default::default()
        };
        self.phase = Phase::Descriptor;
        let a = self.cfg.tx_ring + self.desc as u64 * nic::DESC;
        self.read_lines(sys, now, a, nic::DESC, false);
    }

    /// A line the engine asked for is in.
    fn line_in(&mut self, sys: &mut MemorySystem, now: Ps) {
        self.lines_left = self.lines_left.saturating_sub(1);
        if self.lines_left > 0 {
            return;
        }
        match self.phase {
            Phase::Descriptor => {
                self.current.desc_done = now;
                let a = self.cfg.tx_ring + self.desc as u64 * nic::DESC;
                let d = self.mem.read(a, nic::DESC as usize);
                let addr = u64::from_le_bytes(d[0..8].try_into().unwrap_or([0; 8]));
                let len = u16::from_le_bytes([d[8], d[9]]) as u32;
                self.payload = (addr, len);
                self.phase = Phase::Payload;
                self.read_lines(sys, now, addr, len as u64, true);
            }
            Phase::Payload => {
                self.current.data_done = now;
                self.current.push_start = now;
                if self.traces.len() < nic::MAX_TRACES {
                    self.traces.push(self.current);
                }
                self.push(sys, now);
                self.done(sys, now);
                self.phase = Phase::Idle;
                self.start(sys, now);
            }
            Phase::Idle => {}
        }
    }

    /// Pushes the payload to the adapter: posted writes through the I/O hub and down the link.
    fn push(&mut self, sys: &mut MemorySystem, now: Ps) {
        let (addr, len) = self.payload;
        let data = self.mem.read(addr, len as usize);
        let parts = self.g.split_write(0, len as u64);
        let n = parts.len();
        for (k, (o, l)) in parts.into_iter().enumerate() {
            let tlp = Tlp {
                kind: TlpKind::Write32,
                addr: if k + 1 == n { FIFO_EOP } else { FIFO } + o,
                data: data[o as usize..(o + l as u64) as usize].to_vec(),
                purpose: Purpose::Payload,
            };
            let id = self.hold(tlp);
            sys.schedule(now + self.downstream, self.id, EV_SEND, id);
        }
    }

    /// The packet's descriptor marked done in memory, and the driver's core notified.
    fn done(&mut self, sys: &mut MemorySystem, now: Ps) {
        let a = self.cfg.tx_ring + self.desc as u64 * nic::DESC;
        let mut d = self.mem.read(a, nic::DESC as usize);
        d[12] |= 1;
        self.mem.write(a, &d);
        self.stats.lines_to_memory += 1;
        device_dma::write_line(sys, now, self.id, a / 64);
        self.stats.interrupts += 1;
        sys.raise_interrupt(now + self.message, self.cfg.irq_core as usize);
    }

    fn hold(&mut self, tlp: Tlp) -> u32 {
        let k = self.next_tlp;
        self.next_tlp = self.next_tlp.wrapping_add(1);
        self.tlps.insert(k, tlp);
        k
    }

    fn link_outs(&mut self, sys: &mut MemorySystem, out: Vec<LinkOut>) {
        for o in out {
            match o {
                LinkOut::Deliver { at, tlp, .. } => {
                    let k = self.hold(tlp);
                    sys.schedule(at, self.id, EV_DELIVER, k);
                }
                LinkOut::Timer { dir, at } => sys.schedule(at, self.id, EV_LINK_TIMER, dir as u32),
            }
        }
    }

    /// A push TLP reached the adapter: a closed frame goes to its MAC.
    fn at_adapter(&mut self, sys: &mut MemorySystem, now: Ps, tlp: Tlp) {
        let mut unused = Vec::new();
        let Some(frame) = self.adapter.write(tlp.addr, &tlp.data, &mut unused) else {
            return;
        };
        if let Some(tr) = self.traces.get_mut(self.arrived) {
            tr.at_adapter = now;
        }
        self.arrived += 1;
        self.stats.frames += 1;
        self.stats.frame_bytes += frame.len() as u64;
        let wire = ((frame.len() as f64 + 24.0) * 8.0 * 1000.0 / self.mac_gbps) as Ps;
        let k = self.next_tlp;
        self.next_tlp = self.next_tlp.wrapping_add(1);
        self.frames.insert(k, frame.len());
        sys.schedule(now + wire, self.id, EV_MAC, k);
    }

    /// The first packet's stack and the mean over packets: doorbell, descriptor, payload, push.
    fn stacks(&self) -> (Stack, Stack) {
        let f = |p: Ps| p as f64 / 1000.0;
        let parts = |t: &Trace| -> Option<[f64; 4]> {
            (t.at_adapter >= t.push_start && t.at_adapter > 0).then(|| {
                [
                    f(t.triggered.saturating_sub(t.store)),
                    f(t.desc_done.saturating_sub(t.triggered)),
                    f(t.data_done.saturating_sub(t.desc_done)),
                    f(t.at_adapter - t.push_start),
                ]
            })
        };
        let all: Vec<[f64; 4]> = self.traces.iter().filter_map(parts).collect();
        device_dma::stacks(
            ["doorbell", "descriptor", "payload", "push"],
            all.first().copied(),
            &all,
        )
    }
}

impl Agent for IdmaAgent {
    fn name(&self) -> &'static str {
        "idma"
    }

    fn mmio(
        &mut self,
        sys: &mut MemorySystem,
        now: Ps,
        _core: usize,
        addr: u64,
        write: bool,
    ) -> Access {
        sys.count_uncached();
        let leave = sys.ic().address_phase(now);
        if !write {
            // A register read: the message there and back on the die.
            return Access::At(leave + 2 * self.message);
        }
        let reg = nic::BAR + (addr - self.cfg.bar);
        if reg == nic::TDT {
            if self.stores.len() < nic::MAX_TRACES {
                self.stores.push_back(now);
            }
            let tail = self.post_packet();
            sys.schedule(leave + self.message, self.id, EV_DOORBELL, tail);
        }
        Access::At(leave)
    }

    fn event(&mut self, sys: &mut MemorySystem, now: Ps, kind: u16, id: u32) {
        self.last_done = self.last_done.max(now);
        match kind {
            EV_DOORBELL => self.start(sys, now),
            EV_LINE if sys.release_req(id).is_some() => self.line_in(sys, now),
            EV_SEND => {
                if let Some(tlp) = self.tlps.remove(&id) {
                    let mut out = Vec::new();
                    self.link.send(Dir::Down, now, tlp, &mut out);
                    self.link_outs(sys, out);
                }
            }
            EV_DELIVER => {
                if let Some(tlp) = self.tlps.remove(&id) {
                    self.at_adapter(sys, now, tlp);
                }
            }
            EV_LINK_TIMER => {
                let dir = if id == 0 { Dir::Down } else { Dir::Up };
                let mut out = Vec::new();
                self.link.timer(dir, now, &mut out);
                self.link_outs(sys, out);
            }
            EV_MAC => {
                self.frames.remove(&id);
            }
            _ => {}
        }
    }

    fn response(&mut self, sys: &mut MemorySystem, now: Ps, r: Response) {
        device_dma::line_answered(sys, now, self.id, r, EV_LINE);
    }

    fn idle(&self) -> bool {
        self.phase == Phase::Idle
            && self.next == self.tail
            && self.link.idle()
            && self.tlps.is_empty()
            && self.frames.is_empty()
    }

    fn report(&self) -> AgentReport {
        let mut s = self.stats.clone();
        s.bytes_down = device_dma::link_bytes(&self.link, Dir::Down);
        let (first, mean) = self.stacks();
        s.tx_stack_total_ns = first.iter().map(|(_, v)| v).sum();
        s.tx_stack = first;
        s.tx_stack_mean = mean;
        AgentReport {
            last_done: self.last_done,
            device: Some(s),
            ..Default::default()
        }
    }
}
