//! A PCIe device as an agent of the many-core platform: the descriptor NIC of `nic.rs` behind the
//! timed link of `pcie_link.rs`, with the root complex's side played by the platform's coherent
//! memory system instead of a latency. The state machines are reused as they are; this file only
//! wires them to the platform:
//! - a core's uncached store inside the device's BAR (`[io] bar`, `bar_bytes`) leaves the core
//!   after `core_store_ns`, takes `downstream_ns` to the root port, and goes down the link as a
//!   posted write; the TX tail register (82598 TDT) advances by one packet's descriptors per store
//!   (stores carry no values on the platform: the descriptors the driver program's stores stand for
//!   are written into the device's functional view of host memory at that moment);
//! - every device read is split into 64 B lines: a line dirty in some core's cache is supplied by
//!   that cache (a snoop: a turn in the address phase and a line on the data path), any other
//!   line is read from the DRAM model through [`MemorySystem::send`] after its snoop turn; the
//!   completions leave `rc_read_ns` (the root complex's own part, not the DRAM access) after the
//!   last line is in, and go down the link split as the link's geometry says;
//! - every device write invalidates the line's cached copies and goes to memory, or with the I/O
//!   preset's `root_complex.ddio` is pushed into a core's L2 (`ddio_core`) as Intel DDIO would;
//! - an MSI-X write raises an interrupt at `irq_core` ([`MemorySystem::raise_interrupt`]), which
//!   runs that core's handler program.
//!
//! TCP ACKs: a host that has received data segments (frames with TCP payload behind the I/O
//! preset's `driver.header_bytes`) owes the ACKs Linux would send for those whose descriptors
//! the NIC has written back ([`crate::net::tcp_ack`]: by bytes against the measured receive MSS,
//! `driver.ack_every`, `driver.rcv_mss_initial`, and with `driver.gro` each poll's segments
//! merged first). Each look of the driver at newly written-back descriptors (its first TX tail
//! store after they were written back) is one poll. On such a host each TX tail store sends one
//! owed ACK, a frame of the headers alone (with a
//! context descriptor where the NIC wants one: checksum offload), as ixgbe of the paper's time
//! wrote the tail once per packet; a store with no ACK owed is skipped (no doorbell). A frame of
//! the headers alone is a pure ACK and is never acknowledged itself. The flows of a run go one
//! way: a host sends data or acknowledges it, not both.
//!
//! MMIO loads inside the BAR cost a computed round trip (down, a 3 DW read, a completion up, no
//! queuing behind other TLPs). The NIC's MAC sends each frame at `nic.mac_gbps`; frames go
//! nowhere further, loop back to the NIC's receive side (`loopback`), or, with the port attached
//! to an Ethernet link ([`crate::systems::cluster`]), reach another platform's NIC; the frames
//! that land in RX buffers are checked byte for byte against the frames that came off the wire,
//! in order.
use crate::agents::device_dma::{self, MacPort, Stack};
use crate::agents::{Agent, AgentReport, Port};
pub use crate::config::platform::PcieDeviceConfig;
use crate::config::platform::PlatformConfig;
use crate::devices::nic::{self, Nic, NicOut};
use crate::iface::Access;
use crate::memory::memory_system::{AgentId, MemorySystem, ReqKind, Response};
use crate::net::tcp_ack::DelayedAck;
use crate::pcie::bytes::{Geometry, Purpose};
use crate::pcie::host_memory::HostMemory;
use crate::pcie::link::{Dir, Link, LinkOut, Tlp, TlpKind};
use crate::sim::error::PlatformError;
use crate::sim::{ns, Ps};
use crate::stats::DeviceStats;
use std::collections::{HashMap, VecDeque};

/// A TLP reaches the link's transmitter of its direction (id: a held TLP).
const EV_SEND: u16 = 0;
/// A TLP reaches the receiving end of its direction (id: a held TLP).
const EV_DELIVER: u16 = 1;
/// The link's timer of a direction (id: 0 down, 1 up).
const EV_LINK_TIMER: u16 = 2;
/// The NIC's moderation timer.
const EV_NIC_TIMER: u16 = 3;
/// A line of a device read is at the root complex (id: the memory request).
const EV_LINE: u16 = 4;
/// A device read's completions are ready (id: the read).
const EV_CPL: u16 = 5;
/// The MAC finished a frame (id: the held frame).
const EV_MAC: u16 = 6;
/// A looped-back frame reaches the NIC's receive MAC (id: the held frame).
const EV_FRAME_IN: u16 = 7;
/// A frame from the link reaches the NIC's receive MAC (id: the held frame).
const EV_WIRE_IN: u16 = 8;

/// Doorbell store times kept for the latency stacks.
const MAX_STORES: usize = nic::MAX_TRACES;

/// The page size a TSO send's data descriptors follow (one per 4 KB page).
const PAGE: u64 = 4096;

/// A device read waiting for its lines.
struct DevRead {
    addr: u64,
    len: u32,
    tag: u16,
    purpose: Purpose,
    lines_left: u32,
}

/// The NIC and its link as a platform agent.
pub struct PcieDeviceAgent {
    id: AgentId,
    cfg: PcieDeviceConfig,
    g: Geometry,
    link: Link,
    nic: Nic,
    /// What the device sees of host memory: the descriptors the driver wrote, the payload it read.
    mem: HostMemory,
    rc_read: Ps,
    rc_ns_per_byte: f64,
    core_store: Ps,
    downstream: Ps,
    ddio: bool,
    /// A context descriptor before each packet's data descriptors.
    context: bool,
    /// TSO: (header bytes, MSS) when the driver's sends are longer than one segment.
    tso: Option<(u32, u32)>,
    /// The sends posted whose frames have not all left the MAC: (buffer, length, next segment).
    sends: VecDeque<(u64, u32, u32)>,
    /// RX tail stores refill every cleaned buffer (`driver.rx_post_all`), skipped below a batch.
    rx_post_all: bool,
    rx_refill_batch: u32,
    /// The receiver's TCP: the ACKs owed for the data segments the driver has seen written back;
    /// the headers' bytes (a frame no longer than them carries no payload: a pure ACK).
    tcp: DelayedAck,
    header_bytes: u32,
    /// Frames accepted from the link not yet seen written back: the TCP payload bytes of each.
    rx_data: VecDeque<u32>,
    /// RX descriptor write-backs accounted in `data_seen`.
    rx_seen: u64,
    tail: u32,
    rx_tail: u32,
    rx_posted: u64,
    /// RX descriptor write-backs that have reached host memory since the last MSI-X reached
    /// the root complex: the frames that interrupt announces (the link delivers posted writes
    /// in order, so every write-back the NIC sent before its MSI-X has landed).
    rx_unannounced: u32,
    loop_ps: Ps,
    /// The MAC and its Ethernet port.
    mac: MacPort,
    /// Frames from the link the NIC accepted, in order, not yet landing in an RX buffer; and
    /// the frame landing in each RX buffer (the oracle of the received bytes).
    expect: VecDeque<Vec<u8>>,
    landing: HashMap<u64, Vec<u8>>,
    frames: HashMap<u32, Vec<u8>>,
    posted: u64,
    /// TX descriptors the driver has written (context and data, not wrapped).
    descs_posted: u64,
    /// A ring the driver overran (a `PlatformError::Driver`), reported by `mmio`.
    overrun: Option<String>,
    stores: Vec<Ps>,
    tlps: HashMap<u32, (Dir, Tlp)>,
    next_tlp: u32,
    reads: HashMap<u32, DevRead>,
    next_read: u32,
    stats: DeviceStats,
    last_done: Ps,
}

impl PcieDeviceAgent {
    pub fn new(
        id: AgentId,
        pc: &PlatformConfig,
        sys: &mut MemorySystem,
    ) -> Result<PcieDeviceAgent, PlatformError> {
        let src = pc.name.as_str();
        let cfg = pc
            .io
            .clone()
            .ok_or_else(|| PlatformError::config(src, "io", "the platform has no [io] device"))?;
        cfg.validate(src)?;
        if cfg.pinned.is_some() {
            return Err(PlatformError::config(
                src,
                "io.pinned",
                "a pinned receive buffer belongs to an iDMA agent; a NIC receives into its RX descriptors' buffers",
            ));
        }
        let io = cfg.io_config(src)?;
        let cores = sys.cores();
        for (k, v) in [("irq_core", cfg.irq_core), ("ddio_core", cfg.ddio_core)] {
            if v as usize >= cores {
                return Err(PlatformError::config(
                    src,
                    format!("io.{k}"),
                    format!("core {v}, but the platform has {cores} cores"),
                ));
            }
        }
        sys.register_mmio(cfg.bar, cfg.bar_bytes, id)
            .map_err(|e| PlatformError::config(src, "io.bar", e))?;
        let nic = Nic::new(
            &io,
            cfg.tx_ring,
            cfg.rx_ring
                .unwrap_or(cfg.tx_ring + io.nic.tx_ring as u64 * nic::DESC),
        );
        let rc = &io.root_complex;
        let d = &io.driver;
        // A send longer than a header and one MSS leaves as one TSO send the NIC segments.
        let tso =
            (d.tso && cfg.frame_bytes > d.header_bytes + d.mss).then_some((d.header_bytes, d.mss));
        if cfg.frame_bytes > 9018 && tso.is_none() {
            return Err(PlatformError::config(
                src,
                "io.frame_bytes",
                format!(
                    "{} B is longer than a frame: a send that long needs driver.tso",
                    cfg.frame_bytes
                ),
            ));
        }
        Ok(PcieDeviceAgent {
            id,
            g: io.geometry(),
            link: Link::new(io.link_params()),
            context: nic.wants_context() || tso.is_some(),
            tso,
            sends: VecDeque::new(),
            rx_post_all: d.rx_post_all,
            rx_refill_batch: d.rx_refill_batch.max(1),
            tcp: DelayedAck::new(d.ack_every, d.rcv_mss_initial, d.mss, d.gro),
            header_bytes: d.header_bytes,
            rx_data: VecDeque::new(),
            rx_seen: 0,
            nic,
            mem: HostMemory::default(),
            rc_read: ns(cfg.rc_read_ns),
            rc_ns_per_byte: rc.read_ns_per_byte,
            core_store: ns(rc.core_store_ns),
            downstream: ns(rc.downstream_ns),
            ddio: rc.ddio,
            tail: 0,
            posted: 0,
            descs_posted: 0,
            overrun: None,
            rx_tail: 0,
            rx_posted: 0,
            rx_unannounced: 0,
            loop_ps: ns(io.nic.mac_tx_ns + io.nic.mac_rx_ns),
            mac: MacPort::new(io.nic.mac_gbps, ns(io.nic.mac_tx_ns), ns(io.nic.mac_rx_ns)),
            expect: VecDeque::new(),
            landing: HashMap::new(),
            frames: HashMap::new(),
            stores: Vec::new(),
            tlps: HashMap::new(),
            next_tlp: 0,
            reads: HashMap::new(),
            next_read: 0,
            stats: DeviceStats {
                name: "nic".into(),
                ..Default::default()
            },
            last_done: 0,
            cfg,
        })
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

    fn nic_outs(&mut self, sys: &mut MemorySystem, now: Ps, out: Vec<NicOut>) {
        for o in out {
            match o {
                NicOut::Tlp(at, tlp) if at <= now => self.link_send(sys, now, Dir::Up, tlp),
                NicOut::Tlp(at, tlp) => {
                    let k = self.hold(Dir::Up, tlp);
                    sys.schedule(at, self.id, EV_SEND, k);
                }
                NicOut::Timer(at) => sys.schedule(at.max(now), self.id, EV_NIC_TIMER, 0),
                NicOut::Frame(f) => {
                    self.check_sent(&f);
                    self.stats.frames += 1;
                    self.stats.frame_bytes += f.len() as u64;
                    // Serialized with FCS, preamble and inter-frame gap, after the frame before.
                    let done = self.mac.serialise(now, f.len());
                    let k = self.next_tlp;
                    self.next_tlp = self.next_tlp.wrapping_add(1);
                    self.frames.insert(k, f);
                    sys.schedule(done, self.id, EV_MAC, k);
                }
            }
        }
    }

    /// The driver's doorbell: the send and the descriptors its program's stores stand for, and
    /// the new tail. The send's bytes: a header whose first 8 bytes number the send and whose
    /// sequence field (bytes 8..16) is 0, then a pattern of the send and the offset. A TSO send
    /// has a context descriptor (MSS, header length) and a data descriptor per 4 KB page of its
    /// buffer (Linux hands the NIC a socket buffer's pages); any other
    /// packet a context descriptor when the NIC wants one, and one data descriptor.
    fn post_packet(&mut self) -> u32 {
        self.post_send(self.cfg.frame_bytes, self.tso)
    }

    /// Posts one send of `len` bytes (`tso`: the NIC segments it, see [`Self::post_packet`]).
    fn post_send(&mut self, len: u32, tso: Option<(u32, u32)>) -> u32 {
        let ring = self.nic.tx_ring.max(1);
        let slot = self.posted % ring as u64;
        let buf = self.cfg.tx_buffers + slot * self.cfg.tx_buffer_stride;
        let n = self.posted;
        let mut bytes: Vec<u8> = (0..len as u64)
            .map(|o| (n.wrapping_mul(131) ^ o.wrapping_mul(7) ^ (o >> 8)) as u8)
            .collect();
        for (k, b) in n.to_le_bytes().into_iter().chain([0; 8]).enumerate() {
            if let Some(x) = bytes.get_mut(k) {
                *x = b;
            }
        }
        self.mem.write(buf, &bytes);
        self.sends.push_back((buf, len, 0));
        let mut descs = Vec::new();
        if self.context {
            let (hdr, mss) = tso.unwrap_or((0, 0));
            descs.push(nic::tx_context_desc(mss as u16, hdr as u16));
        }
        let (end, tso_cmd) = (
            buf + len as u64,
            if tso.is_some() { nic::CMD_TSO } else { 0 },
        );
        let mut a = buf;
        while a < end {
            let next = if tso.is_some() {
                ((a / PAGE + 1) * PAGE).min(end)
            } else {
                end
            };
            let cmd = tso_cmd
                | if next == end {
                    nic::CMD_EOP | nic::CMD_RS
                } else {
                    0
                };
            descs.push(nic::tx_data_desc(a, (next - a) as u16, cmd));
            a = next;
        }
        // A driver posts into free descriptors only: at most the ring less one may be pending
        // (a full ring's tail would equal its head, which the NIC reads as empty). Beyond that it
        // would overwrite descriptors and buffers the NIC has not sent yet, losing frames and
        // sending wrong bytes.
        let pending = self.descs_posted - self.nic.tx_desc_done.min(self.descs_posted);
        if pending + descs.len() as u64 > u64::from(ring) - 1 && self.overrun.is_none() {
            self.overrun = Some(format!(
                "the driver's send {} needs {} TX descriptors while {pending} of the {ring}-descriptor \
                 TX ring are still unsent: a ring overrun (the workload posts faster than the NIC \
                 sends; give fewer messages, a longer gap between them, or a larger io.nic.tx_ring)",
                self.posted + 1,
                descs.len()
            ));
        }
        self.descs_posted += descs.len() as u64;
        for d in descs {
            self.mem
                .write(self.cfg.tx_ring + self.tail as u64 * nic::DESC, &d);
            self.tail = (self.tail + 1) % ring;
        }
        self.posted += 1;
        self.tail
    }

    /// The oracle of the transmit side: the frame the MAC takes is the next piece of the oldest
    /// send not yet all sent, as segmentation cuts it (restated here from the send's bytes in
    /// host memory: the header with the segment's offset added to its sequence field, then MSS
    /// bytes of payload from there), or the whole send when it is not segmented.
    fn check_sent(&mut self, frame: &[u8]) {
        let Some(&(buf, len, k)) = self.sends.front() else {
            return;
        };
        let want = match self.tso {
            Some((hdr, mss)) if len > hdr + mss => {
                let mut w = self.mem.read(buf, hdr as usize);
                let off = nic::seq_field(&w) + u64::from(k) * u64::from(mss);
                if w.len() >= 16 {
                    w[8..16].copy_from_slice(&off.to_le_bytes());
                }
                let from = u64::from(hdr) + u64::from(k) * u64::from(mss);
                let n = u64::from(mss).min(u64::from(len) - from);
                w.extend(self.mem.read(buf + from, n as usize));
                if from + n >= u64::from(len) {
                    self.sends.pop_front();
                } else if let Some(s) = self.sends.front_mut() {
                    s.2 += 1;
                }
                w
            }
            _ => {
                self.sends.pop_front();
                self.mem.read(buf, len as usize)
            }
        };
        self.stats.tx_bytes_checked += frame.len() as u64;
        self.stats.tx_bytes_wrong += (want.iter().zip(frame).filter(|(a, b)| a != b).count()
            + want.len().abs_diff(frame.len())) as u64;
    }

    /// The driver posts one RX buffer: its descriptor, and the new RX tail.
    fn post_rx(&mut self) -> u32 {
        let (Some(ring_base), Some(bufs)) = (self.cfg.rx_ring, self.cfg.rx_buffers) else {
            return self.rx_tail;
        };
        let ring = self.nic.rx_ring.max(1);
        // As on TX: a driver posts into a descriptor the NIC has written back, at most the ring
        // less one outstanding. Beyond that it overwrites descriptors the NIC has not used (or
        // has fetched and holds): the ring reads as empty, and frames land in buffers taken from
        // written-back descriptors.
        let out = self.rx_posted - self.nic.stats.rx_desc_written_back.min(self.rx_posted);
        if out + 1 > u64::from(ring) - 1 && self.overrun.is_none() {
            self.overrun = Some(format!(
                "the driver's RX buffer {} is posted while {out} of the {ring}-descriptor RX ring \
                 are still waiting for frames: a ring overrun (the workload posts RX buffers faster \
                 than frames arrive; give fewer messages, a longer gap between them, or a larger \
                 io.nic.rx_ring)",
                self.rx_posted + 1
            ));
        }
        let buf = bufs + (self.rx_posted % ring as u64) * self.cfg.tx_buffer_stride;
        self.mem.write(
            ring_base + self.rx_tail as u64 * nic::DESC,
            &nic::rx_read_desc(buf),
        );
        self.rx_tail = (self.rx_tail + 1) % ring;
        self.rx_posted += 1;
        self.rx_tail
    }

    /// Buffers a refill posts (`driver.rx_post_all`): every one the driver has cleaned (the NIC
    /// wrote its descriptor back), up to the ring less one.
    fn rx_to_post(&self) -> u64 {
        let ring = u64::from(self.nic.rx_ring.max(1));
        let out = self.rx_posted - self.nic.stats.rx_desc_written_back.min(self.rx_posted);
        (ring - 1).saturating_sub(out)
    }

    /// ACKs owed now, less those sent: the frames written back since the driver last looked are
    /// one poll for the receiver's TCP ([`DelayedAck::poll`]). A sender (a host that sent data
    /// before it received any, or received only pure ACKs) owes none: `None`, its tail stores
    /// send its data. A receiver (data segments received, or frames received before it sent
    /// anything) sends ACKs alone: `Some` of those owed, 0 where none is (no ACKs at all with
    /// `ack_every` 0, nothing to acknowledge in frames with no TCP payload), never a data frame.
    fn acks_owed(&mut self) -> Option<u64> {
        let written = self.nic.stats.rx_desc_written_back;
        let mut poll = Vec::new();
        while self.rx_seen < written {
            let Some(payload) = self.rx_data.pop_front() else {
                break;
            };
            poll.push(payload);
            self.rx_seen += 1;
        }
        if poll.iter().any(|&p| p > 0) {
            self.tcp.poll(&poll);
            self.stats.acks_owed = self.tcp.owed();
        }
        let sent_data = self.posted - self.stats.acks_sent.min(self.posted);
        let receiver = self.tcp.segments() > 0 || (sent_data == 0 && written > 0);
        if !receiver {
            return None;
        }
        if !self.tcp.acknowledges() {
            return Some(0);
        }
        Some(self.tcp.owed().saturating_sub(self.stats.acks_sent))
    }

    /// A device read reached the root complex: each line from a cache (dirty) or from memory.
    fn device_read(
        &mut self,
        sys: &mut MemorySystem,
        now: Ps,
        addr: u64,
        len: u32,
        tag: u16,
        purpose: Purpose,
    ) {
        let first = addr / 64;
        let last = (addr + len.max(1) as u64 - 1) / 64;
        let slot = self.next_read;
        self.next_read = self.next_read.wrapping_add(1);
        self.reads.insert(
            slot,
            DevRead {
                addr,
                len,
                tag,
                purpose,
                lines_left: (last - first + 1) as u32,
            },
        );
        for line in first..=last {
            let seen = device_dma::read_line(
                sys,
                now,
                self.id,
                slot,
                line,
                EV_LINE,
                purpose == Purpose::Payload,
                false,
                &mut self.stats,
            );
            // The payload's bytes: the version the path taken delivers (value shadow on) where
            // a core has written the line; a line no core wrote keeps what memory holds.
            if let Some(v) = seen.filter(|&v| v != 0) {
                self.mem.write(line * 64, &[v.to_le_bytes(); 8].concat());
            }
        }
    }

    /// Whether `addr` lies in the host's RX descriptor ring.
    fn in_rx_ring(&self, addr: u64) -> bool {
        self.cfg
            .rx_ring
            .is_some_and(|b| addr >= b && addr - b < u64::from(self.nic.rx_ring) * nic::DESC)
    }

    /// A device write reached the root complex: into memory (cached copies invalidated) or DDIO.
    fn device_write(&mut self, sys: &mut MemorySystem, now: Ps, addr: u64, data: &[u8]) {
        // Byte check: the frame landing in a buffer is the next one the NIC accepted, from the
        // loopback peer or the wire (frames land in the order they came, each from its buffer's
        // start), compared with the bytes as they left (not with its TX buffer now: the driver
        // may have reused it).
        if let Some(rxb) = self
            .cfg
            .rx_buffers
            .filter(|_| self.cfg.loopback || self.mac.on_link())
        {
            let stride = self.cfg.tx_buffer_stride.max(1);
            let span = self.nic.rx_ring as u64 * stride;
            if addr >= rxb && addr - rxb < span {
                let (slot, off) = ((addr - rxb) / stride, ((addr - rxb) % stride) as usize);
                if off == 0 {
                    match self.expect.pop_front() {
                        Some(f) => {
                            self.landing.insert(slot, f);
                        }
                        None => {
                            self.landing.remove(&slot);
                        }
                    }
                }
                let want = self
                    .landing
                    .get(&slot)
                    .and_then(|f| f.get(off..off + data.len()));
                self.stats.rx_bytes_checked += data.len() as u64;
                self.stats.rx_bytes_wrong += match want {
                    Some(w) => w.iter().zip(data).filter(|(a, b)| a != b).count() as u64,
                    // Bytes with no frame to have come from.
                    None => data.len() as u64,
                };
            }
        }
        self.mem.write(addr, data);
        if data.is_empty() {
            return;
        }
        let ddio = self.ddio.then_some(self.cfg.ddio_core as usize);
        for line in addr / 64..=(addr + data.len() as u64 - 1) / 64 {
            device_dma::host_write_line(sys, now, self.id, ddio, line, &mut self.stats);
        }
    }

    fn at_root_complex(&mut self, sys: &mut MemorySystem, now: Ps, tlp: Tlp) {
        match tlp.kind {
            TlpKind::Read { len, tag } => {
                self.device_read(sys, now, tlp.addr, len, tag, tlp.purpose)
            }
            TlpKind::Write32 if tlp.addr == nic::MSIX_ADDR => {
                self.stats.interrupts += 1;
                if self.stats.irq_ns.len() < MAX_STORES {
                    self.stats.irq_ns.push(now as f64 / 1000.0);
                }
                let frames = std::mem::take(&mut self.rx_unannounced);
                sys.raise_interrupt(now, self.cfg.irq_core as usize, frames);
            }
            TlpKind::Write | TlpKind::Write32 => {
                if tlp.purpose == Purpose::WriteBack && self.in_rx_ring(tlp.addr) {
                    self.rx_unannounced += (tlp.data.len() as u64 / nic::DESC) as u32;
                }
                self.device_write(sys, now, tlp.addr, &tlp.data)
            }
            // MMIO reads' completions: the core's cost was computed at issue.
            TlpKind::Completion { .. } | TlpKind::Read32 { .. } => {}
        }
    }

    fn at_device(&mut self, sys: &mut MemorySystem, now: Ps, tlp: Tlp) {
        let mut out = Vec::new();
        match tlp.kind {
            TlpKind::Completion { .. } => self.nic.completion(now, tlp, &mut out),
            TlpKind::Write | TlpKind::Write32 => {
                self.nic.mmio_write(now, tlp.addr, &tlp.data, &mut out)
            }
            TlpKind::Read32 { len, tag } => {
                let c = self.nic.mmio_read(tlp.addr, len, tag);
                self.link_send(sys, now, Dir::Up, c);
            }
            TlpKind::Read { .. } => {}
        }
        self.nic_outs(sys, now, out);
    }

    /// The transmit stacks: the first packet's, and the mean over packets with a known doorbell.
    fn stacks(&self) -> (Stack, Stack) {
        let f = |p: Ps| p as f64 / 1000.0;
        let parts = |i: usize| -> Option<[f64; 3]> {
            let tr = self.nic.traces.get(i)?;
            let store = *self.stores.get(i)?;
            if tr.doorbell < store {
                return None;
            }
            Some([
                f(tr.doorbell - store),
                f(tr.desc_arrived.saturating_sub(tr.doorbell)),
                f(tr.data_arrived.saturating_sub(tr.desc_arrived)),
            ])
        };
        let all: Vec<_> = (0..self.nic.traces.len()).filter_map(parts).collect();
        device_dma::stacks(["doorbell", "descriptor", "payload"], parts(0), &all)
    }
}

impl Agent for PcieDeviceAgent {
    fn name(&self) -> &'static str {
        "nic"
    }

    fn mmio(
        &mut self,
        sys: &mut MemorySystem,
        now: Ps,
        _core: usize,
        addr: u64,
        write: bool,
    ) -> Access {
        let reg = nic::BAR + (addr - self.cfg.bar);
        if write
            && reg == nic::RDT
            && self.rx_post_all
            && self.rx_to_post() < self.rx_refill_batch as u64
        {
            // The driver's refill finds fewer than a batch of cleaned buffers: no tail write.
            self.stats.rx_tail_skipped += 1;
            return Access::At(now);
        }
        let ack = if write && reg == nic::TDT {
            self.acks_owed()
        } else {
            None
        };
        if ack == Some(0) {
            // A host receiving data with no ACK owed: the driver sends nothing, no tail write.
            self.stats.ack_tail_skipped += 1;
            return Access::At(now);
        }
        sys.count_uncached();
        // The store (or load) leaves the core after its turn in the address phase.
        let leave = sys.ic().address_phase(now) + self.core_store;
        if !write {
            let wire = self.g.wire_ps(self.g.write32_bytes(0) as u64)
                + self.g.wire_ps(self.g.completion_bytes(4) as u64);
            return Access::At(leave + 2 * self.downstream + wire);
        }
        let value = if ack.is_some() {
            // One pure ACK: the headers alone, never segmented.
            self.stats.acks_sent += 1;
            self.post_send(self.header_bytes, None)
        } else if reg == nic::TDT {
            if self.stores.len() < MAX_STORES {
                self.stores.push(now);
            }
            self.post_packet()
        } else if reg == nic::RDT {
            if self.stats.rx_tail_ns.len() < MAX_STORES {
                self.stats.rx_tail_ns.push(now as f64 / 1000.0);
            }
            if self.rx_post_all {
                for _ in 0..self.rx_to_post() {
                    self.post_rx();
                }
                self.rx_tail
            } else {
                self.post_rx()
            }
        } else {
            0
        };
        if let Some(e) = self.overrun.take() {
            sys.driver_error.get_or_insert(e);
        }
        let tlp = Tlp {
            kind: TlpKind::Write32,
            addr: reg,
            data: value.to_le_bytes().to_vec(),
            purpose: Purpose::Doorbell,
        };
        let k = self.hold(Dir::Down, tlp);
        sys.schedule(leave + self.downstream, self.id, EV_SEND, k);
        Access::At(leave)
    }

    fn event(&mut self, sys: &mut MemorySystem, now: Ps, kind: u16, id: u32) {
        self.last_done = self.last_done.max(now);
        match kind {
            EV_SEND => {
                if let Some((dir, tlp)) = self.tlps.remove(&id) {
                    self.link_send(sys, now, dir, tlp);
                }
            }
            EV_DELIVER => match self.tlps.remove(&id) {
                Some((Dir::Up, tlp)) => self.at_root_complex(sys, now, tlp),
                Some((Dir::Down, tlp)) => self.at_device(sys, now, tlp),
                None => {}
            },
            EV_LINK_TIMER => {
                let dir = if id == 0 { Dir::Down } else { Dir::Up };
                let mut out = Vec::new();
                self.link.timer(dir, now, &mut out);
                self.link_outs(sys, out);
            }
            EV_NIC_TIMER => {
                let mut out = Vec::new();
                self.nic.timer(now, &mut out);
                self.nic_outs(sys, now, out);
            }
            EV_LINE => {
                let Some(r) = sys.release_req(id) else {
                    return;
                };
                let ReqKind::Agent { tag: slot, .. } = r.kind else {
                    return;
                };
                let Some(rd) = self.reads.get_mut(&slot) else {
                    return;
                };
                rd.lines_left = rd.lines_left.saturating_sub(1);
                if rd.lines_left == 0 {
                    let at = now + self.rc_read + ns(self.rc_ns_per_byte * rd.len as f64);
                    sys.schedule(at, self.id, EV_CPL, slot);
                }
            }
            EV_CPL => {
                let Some(rd) = self.reads.remove(&id) else {
                    return;
                };
                let data = self.mem.read(rd.addr, rd.len as usize);
                let parts = self.g.split_completions(rd.addr, rd.len);
                let n = parts.len();
                let mut o = 0usize;
                for (k, l) in parts.into_iter().enumerate() {
                    let tlp = Tlp {
                        kind: TlpKind::Completion {
                            tag: rd.tag,
                            last: k + 1 == n,
                        },
                        addr: rd.addr + o as u64,
                        data: data[o..o + l as usize].to_vec(),
                        purpose: rd.purpose,
                    };
                    o += l as usize;
                    self.link_send(sys, now, Dir::Down, tlp);
                }
            }
            EV_MAC => {
                let Some(f) = self.frames.remove(&id) else {
                    return;
                };
                let mut out = Vec::new();
                self.nic.mac_done(now, f.len() as u64, &mut out);
                self.nic_outs(sys, now, out);
                if self.cfg.loopback {
                    self.frames.insert(id, f);
                    sys.schedule(now + self.loop_ps, self.id, EV_FRAME_IN, id);
                } else {
                    self.mac.sent(now, f);
                }
            }
            EV_WIRE_IN => {
                let Some(f) = self.frames.remove(&id) else {
                    return;
                };
                self.stats.rx_frames_in += 1;
                let drops = self.nic.stats.rx_drops;
                let kept = f.clone();
                let mut out = Vec::new();
                self.nic.frame_in(now, f, &mut out);
                if self.nic.stats.rx_drops == drops {
                    self.rx_data.push_back(
                        (kept.len() as u64).saturating_sub(u64::from(self.header_bytes)) as u32,
                    );
                    self.expect.push_back(kept);
                }
                self.nic_outs(sys, now, out);
            }
            EV_FRAME_IN => {
                let Some(f) = self.frames.remove(&id) else {
                    return;
                };
                self.stats.rx_frames_in += 1;
                let drops = self.nic.stats.rx_drops;
                let kept = f.clone();
                let mut out = Vec::new();
                self.nic.frame_in(now, f, &mut out);
                if self.nic.stats.rx_drops == drops && self.cfg.rx_buffers.is_some() {
                    self.expect.push_back(kept);
                }
                self.nic_outs(sys, now, out);
            }
            _ => {}
        }
    }

    fn response(&mut self, sys: &mut MemorySystem, now: Ps, r: Response) {
        device_dma::line_answered(sys, now, self.id, r, EV_LINE);
    }

    fn attach_port(&mut self) -> Result<Port, String> {
        let mut port = self.mac.attach(self.cfg.loopback, "NIC")?;
        port.ring = self.nic.tx_ring.max(self.nic.rx_ring);
        Ok(port)
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
        // Frames waiting for RX buffers no core has posted do not keep the run going: when the
        // programs are done they stay undelivered (`rx_frames_in` less the NIC's `rx_frames`).
        (self.nic.idle() || self.nic.idle_waiting_for_rx_buffers())
            && self.link.idle()
            && self.tlps.is_empty()
            && self.reads.is_empty()
            && self.frames.is_empty()
            && !self.mac.has_frames()
    }

    fn report(&self) -> AgentReport {
        let mut s = self.stats.clone();
        s.bytes_up = device_dma::link_bytes(&self.link, Dir::Up);
        s.bytes_down = device_dma::link_bytes(&self.link, Dir::Down);
        let (first, mean) = self.stacks();
        s.tx_stack_total_ns = first.iter().map(|(_, v)| v).sum();
        s.tx_stack = first;
        s.tx_stack_mean = mean;
        s.nic = self.nic.stats.clone();
        s.nic.rx_fifo_held = self.nic.rx_fifo_held();
        AgentReport {
            last_done: self.last_done,
            device: Some(s),
            ..Default::default()
        }
    }
}
