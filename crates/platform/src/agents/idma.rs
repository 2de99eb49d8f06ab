//! Larsen & Lee's integrated DMA engine (iDMA, CACHES 2011 section 3.1) as an agent of the
//! platform: an engine on the die beside the cores that transmits for a simple FIFO+PHY adapter
//! on PCIe (its adapter and pinned ring layout: `devices/idma.rs`). Nothing here is a typed-in latency
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
//! - Receive (section 3.2), with `rx_ring`, `rx_buffers` and `pinned`: the adapter writes each
//!   frame it takes from the wire, behind an 8 B record (length, sequence), into the pinned buffer
//!   in host memory with posted writes up the link (into memory, or with `root_complex.ddio` into
//!   `ddio_core`'s L2), never past the space the engine gave back. No descriptor crosses PCIe: the
//!   engine reads the host's next RX descriptor through the memory system, then the frame's lines
//!   in the pinned buffer (from the cache that holds them or from DRAM), writes the frame into the
//!   buffer the descriptor names and the descriptor back (to memory, or with DDIO to the L2),
//!   notifies `irq_core` on the die, and every `idma.head_update_bytes` returns the space to the
//!   adapter with a posted write down the link. With `loopback` the frames the adapter's MAC sends
//!   come back after `nic.mac_tx_ns + nic.mac_rx_ns`; with its port on an Ethernet link
//!   ([`crate::systems::cluster`]) they reach another platform's device and frames from it come
//!   in. Every byte delivered into an RX buffer is checked against the frame the adapter accepted
//!   (`rx_bytes_checked`, `rx_bytes_wrong`).
//!
//! Modelled: one engine serving transmit before receive, one packet at a time (a packet's
//! descriptor, then its payload or frame), with every transmitted payload line's version checked
//! against the last version a core wrote. Not modelled here: context descriptors and TSO, a
//! descriptor cache in the engine (it reads each descriptor's line), and frames dropped by the
//! adapter's FIFO being told to anyone but the counters.
use crate::agents::device_dma::{self, MacPort, Stack};
use crate::agents::{Agent, AgentReport, Port};
use crate::config::platform::{PcieDeviceConfig, PlatformConfig};
use crate::devices::idma::{self as idma_dev, FifoAdapter, FIFO, FIFO_EOP};
use crate::devices::nic;
use crate::iface::Access;
use crate::memory::memory_system::{AgentId, MemorySystem, Response};
use crate::pcie::bytes::{Geometry, Purpose};
use crate::pcie::host_memory::HostMemory;
use crate::pcie::link::{Dir, Link, LinkOut, Tlp, TlpKind};
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
/// A looped-back frame reaches the adapter's receive side (id: a held frame).
const EV_FRAME_IN: u16 = 6;
/// The driver's RX tail store reaches the engine.
const EV_RX_TAIL: u16 = 7;
/// A frame from the link reaches the adapter's receive MAC (id: the held frame).
const EV_WIRE_IN: u16 = 8;

/// Where the engine is in its current packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Descriptor,
    Payload,
    /// Receive: the RX descriptor's line, then the frame's lines in the pinned buffer.
    RxDescriptor,
    RxFrame,
}

/// The receive side: the host's RX ring, the pinned buffer's offsets (monotonic byte counts), and
/// the frames the adapter accepted (loopback), in order, for the byte check.
struct Rx {
    ring_base: u64,
    bufs: u64,
    ring: u32,
    tail: u32,
    posted: u64,
    next: u32,
    pinned: u64,
    pinned_bytes: u64,
    head_every: u64,
    landed: u64,
    consumed: u64,
    given_back: u64,
    /// The frame being moved: its length.
    len: u64,
    expected: VecDeque<Vec<u8>>,
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
    tlps: HashMap<u32, (Dir, Tlp)>,
    next_tlp: u32,
    traces: Vec<Trace>,
    /// Frames the adapter has closed (frames arrive in the order they were pushed).
    arrived: usize,
    /// Frames on the adapter's wire (its MAC, then the loopback), by event id.
    frames: HashMap<u32, Vec<u8>>,
    rx: Option<Rx>,
    loopback: bool,
    loop_ps: Ps,
    /// The adapter's MAC and its Ethernet port.
    mac: MacPort,
    ddio: bool,
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
        if cfg.frame_bytes > 9018 {
            return Err(PlatformError::config(
                src,
                "io.frame_bytes",
                format!(
                    "{} B: the iDMA pushes a frame per descriptor and does not segment (at most 9018)",
                    cfg.frame_bytes
                ),
            ));
        }
        let io = cfg.io_config(src)?;
        for (k, v) in [("irq_core", cfg.irq_core), ("ddio_core", cfg.ddio_core)] {
            if v as usize >= sys.cores() {
                return Err(PlatformError::config(
                    src,
                    format!("io.{k}"),
                    format!("core {v}, but the platform has {} cores", sys.cores()),
                ));
            }
        }
        let rx =
            match (cfg.rx_ring, cfg.rx_buffers, cfg.pinned) {
                (Some(ring_base), Some(bufs), Some(pinned)) => Some(Rx {
                    ring_base,
                    bufs,
                    ring: io.nic.rx_ring.max(1),
                    tail: 0,
                    posted: 0,
                    next: 0,
                    pinned,
                    pinned_bytes: io.idma.rx_buffer_bytes as u64,
                    head_every: io.idma.head_update_bytes.max(1) as u64,
                    landed: 0,
                    consumed: 0,
                    given_back: 0,
                    len: 0,
                    expected: VecDeque::new(),
                }),
                (Some(_), _, None) => return Err(PlatformError::config(
                    src,
                    "io.pinned",
                    "an iDMA that receives (rx_ring) needs its pinned buffer's address (pinned)",
                )),
                _ => None,
            };
        let max_frame = cfg.frame_bytes as u64 + idma_dev::REC;
        if let Some(r) = rx.as_ref().filter(|r| max_frame > r.pinned_bytes / 2) {
            return Err(PlatformError::config(
                src,
                "io.idma.rx_buffer_bytes",
                format!(
                    "{} B: the pinned buffer must hold two frames of frame_bytes ({}) and their records",
                    r.pinned_bytes, cfg.frame_bytes
                ),
            ));
        }
        sys.register_mmio(cfg.bar, cfg.bar_bytes, id)
            .map_err(|e| PlatformError::config(src, "io.bar", e))?;
        Ok(IdmaAgent {
            id,
            g: io.geometry(),
            link: Link::new(io.link_params()),
            adapter: FifoAdapter::new(&io, cfg.pinned.unwrap_or(0)),
            mem: HostMemory::default(),
            message: sys.ic().engine_message,
            downstream: ns(io.root_complex.downstream_ns),
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
            rx,
            loopback: cfg.loopback,
            loop_ps: ns(io.nic.mac_tx_ns + io.nic.mac_rx_ns),
            mac: MacPort::new(io.nic.mac_gbps, ns(io.nic.mac_tx_ns), ns(io.nic.mac_rx_ns)),
            ddio: io.root_complex.ddio,
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

    /// Reads lines `addr..addr+len` through the memory system; each arrives as an `EV_LINE`
    /// (counted in `lines_left`, which the caller zeroes before a step's first range).
    fn read_lines(&mut self, sys: &mut MemorySystem, now: Ps, addr: u64, len: u64, payload: bool) {
        let first = addr / 64;
        let last = (addr + len.max(1) - 1) / 64;
        self.lines_left += (last - first + 1) as u32;
        for line in first..=last {
            device_dma::read_line(
                sys,
                now,
                self.id,
                0,
                line,
                EV_LINE,
                payload,
                false,
                &mut self.stats,
            );
        }
    }

    /// Starts the next packet if the engine is idle and the driver posted one; else the next
    /// received frame, if one has landed whole and the host posted an RX descriptor.
    fn start(&mut self, sys: &mut MemorySystem, now: Ps) {
        if self.phase != Phase::Idle {
            return;
        }
        self.lines_left = 0;
        if self.next == self.tail {
            self.start_rx(sys, now);
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
            Phase::RxDescriptor => {
                let Some(rx) = self.rx.as_ref() else { return };
                // The frame's record and bytes in the pinned buffer (one or two ranges: it may
                // wrap at the buffer's end).
                let (pinned, size) = (rx.pinned, rx.pinned_bytes);
                let (off, len) = (rx.consumed % size, idma_dev::REC + rx.len);
                let first = len.min(size - off);
                self.phase = Phase::RxFrame;
                self.read_lines(sys, now, pinned + off, first, false);
                if first < len {
                    self.read_lines(sys, now, pinned, len - first, false);
                }
            }
            Phase::RxFrame => {
                self.rx_done(sys, now);
                self.phase = Phase::Idle;
                self.start(sys, now);
            }
            Phase::Idle => {}
        }
    }

    /// A whole frame has landed in the pinned buffer and the host posted a buffer: read the
    /// RX descriptor.
    fn start_rx(&mut self, sys: &mut MemorySystem, now: Ps) {
        let Some(rx) = self.rx.as_mut() else { return };
        if rx.next == rx.tail || rx.landed < rx.consumed + idma_dev::REC {
            return;
        }
        let rec = idma_dev::read_ring(
            &self.mem,
            rx.pinned,
            rx.pinned_bytes,
            rx.consumed,
            idma_dev::REC,
        );
        let len = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]) as u64;
        if rx.landed < rx.consumed + idma_dev::REC + len {
            return;
        }
        rx.len = len;
        let a = rx.ring_base + rx.next as u64 * nic::DESC;
        self.phase = Phase::RxDescriptor;
        self.read_lines(sys, now, a, nic::DESC, false);
    }

    /// The frame's lines are in: it is written into the descriptor's buffer and the descriptor
    /// back, the core notified, and the pinned space given back now and then.
    fn rx_done(&mut self, sys: &mut MemorySystem, now: Ps) {
        let Some(rx) = self.rx.as_mut() else { return };
        let frame = idma_dev::read_ring(
            &self.mem,
            rx.pinned,
            rx.pinned_bytes,
            rx.consumed + idma_dev::REC,
            rx.len,
        );
        let da = rx.ring_base + rx.next as u64 * nic::DESC;
        let d = self.mem.read(da, nic::DESC as usize);
        let buf = u64::from_le_bytes(d[0..8].try_into().unwrap_or([0; 8]));
        self.mem.write(buf, &frame);
        // The byte check: what the host's buffer now holds against the frame that was sent.
        if let Some(sent) = rx.expected.pop_front() {
            let got = self.mem.read(buf, frame.len());
            self.stats.rx_bytes_checked += sent.len().max(got.len()) as u64;
            self.stats.rx_bytes_wrong += sent.iter().zip(&got).filter(|(a, b)| a != b).count()
                as u64
                + sent.len().abs_diff(got.len()) as u64;
        }
        let mut wb = [0u8; 16];
        wb[8] = 3; // DD | EOP
        wb[12..14].copy_from_slice(&(rx.len as u16).to_le_bytes());
        self.mem.write(da, &wb);
        rx.next = (rx.next + 1) % rx.ring;
        rx.consumed += (idma_dev::REC + rx.len).div_ceil(64) * 64;
        let give_back = rx.consumed - rx.given_back >= rx.head_every;
        if give_back {
            rx.given_back = rx.consumed;
        }
        let head = rx.consumed;
        let lines: Vec<u64> = if frame.is_empty() {
            Vec::new()
        } else {
            (buf / 64..=(buf + frame.len() as u64 - 1) / 64).collect()
        };
        for line in lines.into_iter().chain([da / 64]) {
            self.write_host_line(sys, now, line);
        }
        self.stats.nic.rx_frames += 1;
        self.stats.nic.rx_desc_fetched += 1;
        self.stats.nic.rx_desc_written_back += 1;
        self.stats.interrupts += 1;
        if self.stats.irq_ns.len() < nic::MAX_TRACES {
            self.stats.irq_ns.push((now + self.message) as f64 / 1000.0);
        }
        sys.raise_interrupt(now + self.message, self.cfg.irq_core as usize, 1);
        if give_back {
            self.stats.nic.doorbells += 1;
            let tlp = Tlp {
                kind: TlpKind::Write32,
                addr: idma_dev::HEAD,
                data: (head as u32).to_le_bytes().to_vec(),
                purpose: Purpose::Doorbell,
            };
            let id = self.hold(Dir::Down, tlp);
            sys.schedule(now + self.downstream, self.id, EV_SEND, id);
        }
    }

    /// A line written into host memory by the engine or the adapter: into `ddio_core`'s L2 with
    /// DDIO, else to memory (cached copies invalidated either way).
    fn write_host_line(&mut self, sys: &mut MemorySystem, now: Ps, line: u64) {
        let ddio = self.ddio.then_some(self.cfg.ddio_core as usize);
        device_dma::host_write_line(sys, now, self.id, ddio, line, &mut self.stats);
    }

    /// The adapter's posted write reached the root complex: it lands in the pinned buffer.
    fn at_root_complex(&mut self, sys: &mut MemorySystem, now: Ps, tlp: Tlp) {
        if tlp.data.is_empty() {
            return;
        }
        self.mem.write(tlp.addr, &tlp.data);
        for line in tlp.addr / 64..=(tlp.addr + tlp.data.len() as u64 - 1) / 64 {
            self.write_host_line(sys, now, line);
        }
        let Some(rx) = self.rx.as_mut() else { return };
        let len = tlp.data.len() as u64;
        let Some(landed) =
            idma_dev::landed_after(rx.landed, rx.pinned, rx.pinned_bytes, tlp.addr, len)
        else {
            return;
        };
        rx.landed = landed;
        self.start(sys, now);
    }

    /// The driver's RX tail store: it posts one buffer (the read-format descriptor its program's
    /// stores stand for).
    fn post_rx(&mut self) -> u32 {
        let Some(rx) = self.rx.as_mut() else { return 0 };
        let buf = rx.bufs + (rx.posted % rx.ring as u64) * self.cfg.tx_buffer_stride;
        self.mem.write(
            rx.ring_base + rx.tail as u64 * nic::DESC,
            &nic::rx_read_desc(buf),
        );
        rx.tail = (rx.tail + 1) % rx.ring;
        rx.posted += 1;
        rx.tail
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
            let id = self.hold(Dir::Down, tlp);
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
        if self.stats.irq_ns.len() < nic::MAX_TRACES {
            self.stats.irq_ns.push((now + self.message) as f64 / 1000.0);
        }
        sys.raise_interrupt(now + self.message, self.cfg.irq_core as usize, 0);
    }

    fn hold(&mut self, dir: Dir, tlp: Tlp) -> u32 {
        let k = self.next_tlp;
        self.next_tlp = self.next_tlp.wrapping_add(1);
        self.tlps.insert(k, (dir, tlp));
        k
    }

    fn link_send(&mut self, sys: &mut MemorySystem, now: Ps, dir: Dir, tlp: Tlp) {
        let mut out = Vec::new();
        self.link.send(dir, now, tlp, &mut out);
        self.link_outs(sys, out);
    }

    fn link_outs(&mut self, sys: &mut MemorySystem, out: Vec<LinkOut>) {
        for o in out {
            match o {
                LinkOut::Deliver { dir, at, tlp } => {
                    let k = self.hold(dir, tlp);
                    sys.schedule(at, self.id, EV_DELIVER, k);
                }
                LinkOut::Timer { dir, at } => sys.schedule(at, self.id, EV_LINK_TIMER, dir as u32),
            }
        }
    }

    /// A TLP reached the adapter: a closed frame goes to its MAC; a head write gives back pinned
    /// space, which lets frames waiting in its FIFO go up.
    fn at_adapter(&mut self, sys: &mut MemorySystem, now: Ps, tlp: Tlp) {
        let mut up = Vec::new();
        let frame = self.adapter.write(tlp.addr, &tlp.data, &mut up);
        for t in up {
            self.link_send(sys, now, Dir::Up, t);
        }
        let Some(frame) = frame else {
            return;
        };
        if let Some(tr) = self.traces.get_mut(self.arrived) {
            tr.at_adapter = now;
        }
        self.arrived += 1;
        self.stats.frames += 1;
        self.stats.frame_bytes += frame.len() as u64;
        // Serialised with FCS, preamble and inter-frame gap, after the frame before.
        let done = self.mac.serialise(now, frame.len());
        let k = self.next_tlp;
        self.next_tlp = self.next_tlp.wrapping_add(1);
        self.frames.insert(k, frame);
        sys.schedule(done, self.id, EV_MAC, k);
    }

    /// A frame from the wire reaches the adapter's receive side: into its FIFO and up the link
    /// to the pinned buffer as space allows (or dropped when the FIFO is full).
    fn adapter_in(&mut self, sys: &mut MemorySystem, now: Ps, frame: Vec<u8>) {
        self.stats.rx_frames_in += 1;
        let drops = self.adapter.drops;
        let mut up = Vec::new();
        let kept = frame.clone();
        self.adapter.frame_in(frame, &mut up);
        if self.adapter.drops > drops {
            self.stats.nic.rx_drops += 1;
        } else if let Some(rx) = self.rx.as_mut() {
            rx.expected.push_back(kept);
        }
        for t in up {
            self.link_send(sys, now, Dir::Up, t);
        }
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
        let leave = match device_dma::on_die_register(sys, now, write, self.message) {
            Ok(leave) => leave,
            Err(read) => return read,
        };
        let reg = nic::BAR + (addr - self.cfg.bar);
        if reg == nic::TDT {
            if self.stores.len() < nic::MAX_TRACES {
                self.stores.push_back(now);
            }
            let tail = self.post_packet();
            sys.schedule(leave + self.message, self.id, EV_DOORBELL, tail);
        } else if reg == nic::RDT && self.rx.is_some() {
            if self.stats.rx_tail_ns.len() < nic::MAX_TRACES {
                self.stats.rx_tail_ns.push(now as f64 / 1000.0);
            }
            let tail = self.post_rx();
            sys.schedule(leave + self.message, self.id, EV_RX_TAIL, tail);
        }
        Access::At(leave)
    }

    fn event(&mut self, sys: &mut MemorySystem, now: Ps, kind: u16, id: u32) {
        self.last_done = self.last_done.max(now);
        match kind {
            EV_DOORBELL | EV_RX_TAIL => self.start(sys, now),
            EV_LINE if sys.release_req(id).is_some() => self.line_in(sys, now),
            EV_SEND => {
                if let Some((dir, tlp)) = self.tlps.remove(&id) {
                    self.link_send(sys, now, dir, tlp);
                }
            }
            EV_DELIVER => match self.tlps.remove(&id) {
                Some((Dir::Down, tlp)) => self.at_adapter(sys, now, tlp),
                Some((Dir::Up, tlp)) => self.at_root_complex(sys, now, tlp),
                None => {}
            },
            EV_LINK_TIMER => {
                let dir = if id == 0 { Dir::Down } else { Dir::Up };
                let mut out = Vec::new();
                self.link.timer(dir, now, &mut out);
                self.link_outs(sys, out);
            }
            EV_MAC => {
                if let Some(f) = self.frames.remove(&id) {
                    if self.loopback {
                        self.frames.insert(id, f);
                        sys.schedule(now + self.loop_ps, self.id, EV_FRAME_IN, id);
                    } else {
                        self.mac.sent(now, f);
                    }
                }
            }
            EV_FRAME_IN | EV_WIRE_IN => {
                if let Some(f) = self.frames.remove(&id) {
                    self.adapter_in(sys, now, f);
                }
            }
            _ => {}
        }
    }

    fn response(&mut self, sys: &mut MemorySystem, now: Ps, r: Response) {
        device_dma::line_answered(sys, now, self.id, r, EV_LINE);
    }

    fn attach_port(&mut self) -> Result<Port, String> {
        self.mac.attach(self.loopback, "iDMA's adapter")
    }

    fn has_frames(&self) -> bool {
        self.mac.has_frames()
    }

    fn take_frames(&mut self, out: &mut Vec<(Ps, Vec<u8>)>) {
        self.mac.take_frames(out);
    }

    fn frame_in(&mut self, sys: &mut MemorySystem, at: Ps, frame: Vec<u8>) {
        let k = self.next_tlp;
        self.next_tlp = self.next_tlp.wrapping_add(1);
        self.frames.insert(k, frame);
        sys.schedule(self.mac.received_at(at), self.id, EV_WIRE_IN, k);
    }

    fn idle(&self) -> bool {
        // Frames landed for which no core has posted an RX buffer do not keep the run going:
        // when the programs are done they stay undelivered (`rx_frames_in` less `nic.rx_frames`).
        self.phase == Phase::Idle
            && self.next == self.tail
            && self.link.idle()
            && self.tlps.is_empty()
            && self.frames.is_empty()
            && !self.mac.has_frames()
    }

    fn report(&self) -> AgentReport {
        let mut s = self.stats.clone();
        s.bytes_down = device_dma::link_bytes(&self.link, Dir::Down);
        s.bytes_up = device_dma::link_bytes(&self.link, Dir::Up);
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
