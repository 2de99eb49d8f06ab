//! Two hosts joined by a 10 Gb/s wire, each with a root complex, a PCIe link and a device (a
//! descriptor-DMA NIC, or the iDMA engine with its FIFO+PHY adapter), and a core running the
//! driver and the stack as jobs: an application sending messages (the stack's cost, the copy,
//! building descriptors, the doorbell), the interrupt handler (cleaning TX, receiving frames,
//! refilling RX buffers and writing the RX tail, TCP ACKs). This file wires the parts and runs
//! the event loop; each part lives in its own file and knows nothing of this one.
//!
//! Every frame a driver receives is checked byte for byte against what the sender's
//! application wrote; every byte on each link is counted by purpose.
use crate::config::io::IoConfig;
use crate::devices::idma::{FifoAdapter, IdmaEngine, IdmaOut, IdmaTrace};
use crate::devices::nic::{self, Nic, NicOut, TxTrace, CMD_EOP, CMD_RS, CMD_TSO, DESC, MSIX_ADDR};
use crate::net::ethernet_link::{frame_wire_ps, propagation_ps, OVERHEAD_BYTES};
use crate::pcie::bytes::{ByteCount, Purpose, PURPOSES};
use crate::pcie::link::{Dir, Link, LinkOut, Tlp, TlpKind};
use crate::pcie::root_complex::{RcStats, RootComplex};
use crate::sim::error::PlatformError;
use crate::sim::{ns, EventQueue, Ps, RunGuard};
use serde::Serialize;
use std::collections::VecDeque;

/// Host memory map of the model (above 4 GB, so device requests use 4 DW headers when
/// `link.addr64`).
const HI: u64 = 1 << 32;
const TX_RING: u64 = HI + 0x1000_0000;
const RX_RING: u64 = HI + 0x1100_0000;
const TX_BUFS: u64 = HI + 0x2000_0000;
const RX_BUFS: u64 = HI + 0x3000_0000;
const PINNED: u64 = HI + 0x4000_0000;
const PAGE: u64 = 4096;
/// Events a run may take with no frame reaching a driver before it is declared stalled (a
/// bound on a model fault, not on the run's length: a long stream runs as long as it delivers).
pub const MAX_IDLE_EVENTS: u64 = 20_000_000;
/// The largest payload the stack hands the driver in one send. A message up to this size is one
/// send (one TSO packet, or one packet per segment); a longer one is cut into sends of whole
/// segments up to this size, as Linux's TCP cuts a write into GSO packets of at most 64 KiB of
/// whole segments (modelling choice after Linux's 64 KiB GSO limit).
pub const MAX_SEND: u64 = 1 << 16;
/// Largest message and count a run accepts.
pub const MAX_MESSAGE: u64 = 1 << 20;
pub const MAX_MESSAGES: u64 = 1_000_000;
/// Messages listed one by one in the statistics.
pub const MAX_LISTED: usize = 1000;

/// The byte at `off` of message `msg`: what the receiver checks.
pub fn pattern(msg: u64, off: u64) -> u8 {
    (msg.wrapping_mul(131) ^ off.wrapping_mul(7) ^ (off >> 8)) as u8
}

#[derive(Debug)]
enum Ev {
    LinkTimer(usize, Dir),
    Arrive(usize, Dir, Tlp),
    LinkSend(usize, Dir, Tlp),
    RcReadDone(usize, u16, u64, Vec<u8>, Purpose),
    NicTimer(usize),
    MacTxDone(usize, u64),
    FrameArrive(usize, Vec<u8>),
    CoreNext(usize),
    Irq(usize),
    /// A raw stream's receiver has freed room in its segment window: the sender may go on.
    Resume(usize),
}

#[derive(Debug, Clone)]
enum Job {
    /// `len` bytes of message `msg` from its byte `off` (an ACK: `ack` set, no payload).
    Send {
        msg: u64,
        off: u64,
        len: u64,
        ack: Option<u64>,
    },
    Handler,
    /// The handler continues once its read of the TX head register returned `head`.
    HandlerResume {
        head: u32,
    },
}

/// How a job left the core: free at a time, or stalled on an MMIO read until its completion.
enum JobEnd {
    Free(Ps),
    Stalled,
}

enum Dev {
    Nic(Box<Nic>),
    Idma(Box<IdmaEngine>, Box<FifoAdapter>),
}

#[derive(Debug, Clone, Default)]
struct Flow {
    /// Sender side: bytes sent, acknowledged.
    sent: u64,
    acked: u64,
    /// Receiver side: bytes received in order, data segments since the last ACK.
    received: u64,
    since_ack: u32,
    /// Sender side: the flow offset at which each segment in flight ends, oldest first.
    in_flight: VecDeque<u64>,
}

struct Host {
    rc: RootComplex,
    link: Link,
    dev: Dev,
    core_free: Ps,
    core_busy: Ps,
    jobs: VecDeque<(Ps, Job)>,
    core_scheduled: bool,
    handler_queued: bool,
    /// The core waits for an MMIO read's completion (since this time).
    stalled_since: Option<Ps>,
    tx_tail: u32,
    tx_clean: u32,
    /// Descriptor indices of each posted packet, oldest first: (first, count).
    tx_posted: VecDeque<(u32, u32)>,
    rx_next: u32,
    rx_tail: u32,
    rx_unposted: u32,
    /// Sends the application has queued: (message, offset in it, bytes).
    app: VecDeque<(u64, u64, u64)>,
    send_queued: bool,
    flow: Flow,
    /// Time each frame's last TLP reached the adapter (iDMA pushes).
    adapter_frames: Vec<Ps>,
    stats: DriverStats,
}

/// What a host's driver and stack did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DriverStats {
    pub messages_sent: u64,
    pub acks_sent: u64,
    pub interrupts: u64,
    pub frames_received: u64,
    pub frames_checked: u64,
    pub bytes_checked: u64,
    pub rx_doorbells: u64,
    pub tx_doorbells: u64,
    /// Core time spent in jobs, ns.
    pub core_busy_ns: f64,
}

/// One application message.
#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub id: u64,
    pub from: usize,
    pub len: u64,
    /// The application started sending; the driver's doorbell store; the receiver's stack
    /// finished with its last byte (ns).
    pub start_ns: f64,
    pub doorbell_ns: f64,
    pub done_ns: Option<f64>,
    #[serde(skip)]
    received: u64,
}

/// Bytes on one host's link, both directions.
#[derive(Debug, Clone, Serialize)]
pub struct LinkBytes {
    pub down: ByteCount,
    pub up: ByteCount,
    /// Flat categories summed over both directions (payload, tlp_overhead, descriptor,
    /// doorbell, write_back, interrupt, dllp).
    pub categories: Vec<(String, u64)>,
    pub total: u64,
    /// Wire time used, ns, per direction.
    pub down_busy_ns: f64,
    pub up_busy_ns: f64,
}

/// A host's statistics.
#[derive(Debug, Clone, Serialize)]
pub struct HostStats {
    pub link: LinkBytes,
    pub rc: RcStats,
    pub nic: Option<nic::NicStats>,
    pub idma: Option<crate::devices::idma::IdmaStats>,
    pub driver: DriverStats,
}

/// The latency stack of the first message's transmit, ns.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct TxStack {
    /// Descriptor DMA: doorbell (store to NIC), descriptor fetch, payload fetch.
    /// iDMA: doorbell (on-die), descriptor read, payload read, push to the adapter.
    pub parts: Vec<(String, f64)>,
    pub total: f64,
}

/// Results of a run.
#[derive(Debug, Clone, Serialize)]
pub struct IoStats {
    pub time_ns: f64,
    pub kind: String,
    pub hosts: Vec<HostStats>,
    /// The first [`MAX_LISTED`] messages (all are counted in `messages_total` and the latencies).
    pub messages: Vec<Message>,
    pub messages_total: u64,
    pub tx_stack: TxStack,
    pub mean_latency_ns: f64,
    pub min_latency_ns: f64,
    pub max_latency_ns: f64,
    pub frames_checked: u64,
    pub bytes_checked: u64,
}

/// The whole two-host system.
pub struct IoSystem {
    cfg: IoConfig,
    q: EventQueue<Ev>,
    hosts: Vec<Host>,
    mac_busy: [Ps; 2],
    messages: Vec<Message>,
    now: Ps,
    guard: RunGuard,
    nic_traces: Vec<TxTrace>,
    idma_traces: Vec<IdmaTrace>,
    error: Option<String>,
    corrupt: bool,
}

impl IoSystem {
    pub fn new(cfg: &IoConfig) -> IoSystem {
        let k = cfg.nic.kind.clone();
        IoSystem::with_devices(cfg, [&k, &k])
    }

    /// Host 0 with device kind `kinds[0]`, host 1 with `kinds[1]` ("descriptor" or "idma").
    pub fn with_devices(cfg: &IoConfig, kinds: [&str; 2]) -> IoSystem {
        let mut hosts = Vec::new();
        for kind in kinds {
            let mut rc = RootComplex::new(cfg);
            let dev = if kind == "idma" {
                Dev::Idma(
                    Box::new(IdmaEngine::new(cfg, TX_RING, RX_RING, PINNED)),
                    Box::new(FifoAdapter::new(cfg, PINNED)),
                )
            } else {
                Dev::Nic(Box::new(Nic::new(cfg, TX_RING, RX_RING)))
            };
            // The driver fills the RX ring with buffers (all but one slot: tail != head).
            let n = cfg.nic.rx_ring;
            for i in 0..n {
                let buf = RX_BUFS + i as u64 * cfg.nic.rx_buffer_bytes as u64;
                rc.core_write(RX_RING + i as u64 * DESC, &nic::rx_read_desc(buf));
            }
            hosts.push(Host {
                rc,
                link: Link::new(cfg.link_params()),
                dev,
                core_free: 0,
                core_busy: 0,
                jobs: VecDeque::new(),
                core_scheduled: false,
                handler_queued: false,
                stalled_since: None,
                tx_tail: 0,
                tx_clean: 0,
                tx_posted: VecDeque::new(),
                rx_next: 0,
                rx_tail: 0,
                rx_unposted: 0,
                app: VecDeque::new(),
                send_queued: false,
                flow: Flow::default(),
                adapter_frames: Vec::new(),
                stats: DriverStats::default(),
            });
        }
        let mut s = IoSystem {
            cfg: cfg.clone(),
            q: EventQueue::new(),
            hosts,
            mac_busy: [0; 2],
            messages: Vec::new(),
            now: 0,
            guard: RunGuard::new("the I/O run"),
            nic_traces: Vec::new(),
            idma_traces: Vec::new(),
            error: None,
            corrupt: false,
        };
        // The initial RX tail: every buffer posted (before time 0 of the measurement).
        for h in 0..2 {
            let tail = cfg.nic.rx_ring - 1;
            s.hosts[h].rx_tail = tail;
            s.doorbell(h, 0, tail, true);
        }
        s
    }

    /// Host `from` sends `count` messages of `len` bytes to the other host, back to back.
    pub fn send(&mut self, from: usize, count: u64, len: u64) {
        let size = self.send_size();
        let piece = if len <= size {
            len
        } else {
            let mss = self.cfg.driver.mss as u64;
            (size / mss).max(1) * mss
        };
        for _ in 0..count {
            let id = self.messages.len() as u64;
            self.messages.push(Message {
                id,
                from,
                len,
                start_ns: 0.0,
                doorbell_ns: 0.0,
                done_ns: None,
                received: 0,
            });
            let mut off = 0;
            while off < len {
                let n = piece.min(len - off);
                self.hosts[from].app.push_back((id, off, n));
                off += n;
            }
        }
        self.try_send(from, self.now);
    }

    /// Runs until every message is delivered and the system is quiet.
    pub fn run(&mut self) -> Result<(), PlatformError> {
        // Let the initial RX doorbells and descriptor prefetches settle before measuring.
        let received =
            |s: &IoSystem| -> u64 { s.hosts.iter().map(|h| h.stats.frames_received).sum() };
        let (mut mark, mut seen) = (self.guard.steps(), received(self));
        while let Some(t) = self.q.peek_time() {
            self.guard.step()?;
            if self.guard.steps() - mark >= MAX_IDLE_EVENTS {
                let now_seen = received(self);
                if now_seen == seen {
                    return Err(PlatformError::Stalled(format!(
                        "the I/O run took {MAX_IDLE_EVENTS} events without a frame reaching a \
                         driver"
                    )));
                }
                (mark, seen) = (self.guard.steps(), now_seen);
            }
            let Some((t, ev)) = self.q.pop_due(t) else {
                break;
            };
            self.now = t;
            self.handle(t, ev);
            if let Some(e) = self.error.take() {
                return Err(PlatformError::Stalled(e));
            }
        }
        if let Some(m) = self.messages.iter().find(|m| m.done_ns.is_none()) {
            let drops: u64 = self
                .hosts
                .iter()
                .map(|h| match &h.dev {
                    Dev::Nic(n) => n.stats.rx_drops,
                    Dev::Idma(_, a) => a.drops,
                })
                .sum();
            return Err(PlatformError::Stalled(format!(
                "message {} ({} B from host {}) was not delivered: {} B arrived; {drops} frames \
                 were dropped for want of RX descriptors or buffer space (no retransmission is \
                 modelled: lower the sender's rate or window, or raise nic.rx_fifo_frames)",
                m.id, m.len, m.from, m.received
            )));
        }
        for (i, h) in self.hosts.iter().enumerate() {
            if h.rc.mem.overflow {
                return Err(PlatformError::Stalled(format!(
                    "host {i}: the I/O model's host memory exceeded its bound"
                )));
            }
        }
        Ok(())
    }

    /// Runs once the initial RX buffers are posted: the clock then starts from a quiet system.
    pub fn settle(&mut self) -> Result<(), PlatformError> {
        self.run()?;
        // Reset the byte counters: the measurement starts here.
        for h in self.hosts.iter_mut() {
            h.link = Link::new(self.cfg.link_params());
            h.rc.stats = RcStats::default();
        }
        Ok(())
    }

    /// The simulated time, ns (after [`IoSystem::settle`]: the start of the measurement).
    pub fn now_ns(&self) -> f64 {
        self.now as f64 / 1000.0
    }

    /// When the last message handed to [`IoSystem::send`] was complete at its receiver (ns);
    /// None while any is incomplete. With the time [`IoSystem::send`] was called, the interval
    /// a stream's goodput is measured over.
    pub fn last_done_ns(&self) -> Option<f64> {
        self.messages
            .iter()
            .try_fold(0.0f64, |a, m| m.done_ns.map(|d| a.max(d)))
    }

    /// Flips the last byte of the next payload read the root complex answers (a negative
    /// control for the receivers' byte checks).
    pub fn corrupt_next_payload(&mut self) {
        self.corrupt = true;
    }

    fn push(&mut self, at: Ps, ev: Ev) {
        self.q.push(at, ev);
    }

    fn link_outs(&mut self, h: usize, outs: Vec<LinkOut>) {
        for o in outs {
            match o {
                LinkOut::Deliver { dir, at, tlp } => self.push(at, Ev::Arrive(h, dir, tlp)),
                LinkOut::Timer { dir, at } => self.push(at, Ev::LinkTimer(h, dir)),
            }
        }
    }

    fn link_send(&mut self, h: usize, dir: Dir, at: Ps, tlp: Tlp) {
        if at > self.now {
            self.push(at, Ev::LinkSend(h, dir, tlp));
            return;
        }
        let mut out = Vec::new();
        self.hosts[h].link.send(dir, at, tlp, &mut out);
        self.link_outs(h, out);
    }

    fn nic_outs(&mut self, h: usize, outs: Vec<NicOut>) {
        for o in outs {
            match o {
                NicOut::Tlp(at, tlp) => self.link_send(h, Dir::Up, at.max(self.now), tlp),
                NicOut::Timer(at) => self.push(at, Ev::NicTimer(h)),
                NicOut::Frame(f) => self.mac_send(h, f, true),
            }
        }
    }

    fn idma_outs(&mut self, h: usize, outs: Vec<IdmaOut>) {
        for o in outs {
            match o {
                IdmaOut::Down(at, tlp) => self.link_send(h, Dir::Down, at, tlp),
                IdmaOut::NotifyRx(at) => self.push(at, Ev::Irq(h)),
            }
        }
    }

    /// The MAC of host `h` sends a frame: serialization at the MAC rate (with FCS, preamble
    /// and inter-frame gap), the pipelines and the cable.
    fn mac_send(&mut self, h: usize, f: Vec<u8>, nic_fifo: bool) {
        let n = self.cfg.nic.clone();
        let ser = frame_wire_ps(f.len(), n.mac_gbps, OVERHEAD_BYTES);
        let start = self.now.max(self.mac_busy[h]);
        self.mac_busy[h] = start + ser;
        if nic_fifo {
            self.push(start + ser, Ev::MacTxDone(h, f.len() as u64));
        }
        let prop = propagation_ps(self.cfg.wire.meters, self.cfg.wire.ns_per_meter);
        let at = start + ser + ns(n.mac_tx_ns) + prop + ns(n.mac_rx_ns);
        self.push(at, Ev::FrameArrive(1 - h, f));
    }

    fn handle(&mut self, now: Ps, ev: Ev) {
        match ev {
            Ev::LinkTimer(h, dir) => {
                let mut out = Vec::new();
                self.hosts[h].link.timer(dir, now, &mut out);
                self.link_outs(h, out);
            }
            Ev::LinkSend(h, dir, tlp) => self.link_send(h, dir, now, tlp),
            Ev::Arrive(h, Dir::Up, tlp) => self.at_root_complex(h, now, tlp),
            Ev::Arrive(h, Dir::Down, tlp) => self.at_device(h, now, tlp),
            Ev::RcReadDone(h, tag, addr, mut data, purpose) => {
                if self.corrupt && purpose == Purpose::Payload {
                    self.corrupt = false;
                    if let Some(b) = data.last_mut() {
                        *b ^= 0x5A;
                    }
                }
                let g = self.cfg.geometry();
                let parts = g.split_completions(addr, data.len() as u32);
                let n = parts.len();
                let mut o = 0usize;
                for (k, l) in parts.into_iter().enumerate() {
                    let tlp = Tlp {
                        kind: TlpKind::Completion {
                            tag,
                            last: k + 1 == n,
                        },
                        addr: addr + o as u64,
                        data: data[o..o + l as usize].to_vec(),
                        purpose,
                    };
                    o += l as usize;
                    self.link_send(h, Dir::Down, now, tlp);
                }
            }
            Ev::NicTimer(h) => {
                let mut out = Vec::new();
                if let Dev::Nic(nic) = &mut self.hosts[h].dev {
                    nic.timer(now, &mut out);
                }
                self.nic_outs(h, out);
            }
            Ev::MacTxDone(h, bytes) => {
                let mut out = Vec::new();
                if let Dev::Nic(nic) = &mut self.hosts[h].dev {
                    nic.mac_done(now, bytes, &mut out);
                }
                self.nic_outs(h, out);
            }
            Ev::FrameArrive(h, f) => match &mut self.hosts[h].dev {
                Dev::Nic(nic) => {
                    let mut out = Vec::new();
                    nic.frame_in(now, f, &mut out);
                    self.nic_outs(h, out);
                }
                Dev::Idma(_, ad) => {
                    let mut out = Vec::new();
                    ad.frame_in(f, &mut out);
                    for t in out {
                        self.link_send(h, Dir::Up, now, t);
                    }
                }
            },
            Ev::CoreNext(h) => self.core_next(h, now),
            Ev::Resume(h) => self.try_send(h, now),
            Ev::Irq(h) => {
                let hs = &mut self.hosts[h];
                hs.stats.interrupts += 1;
                if !hs.handler_queued {
                    hs.handler_queued = true;
                    hs.jobs.push_back((now, Job::Handler));
                    self.kick(h, now);
                }
            }
        }
    }

    fn at_root_complex(&mut self, h: usize, now: Ps, tlp: Tlp) {
        match tlp.kind {
            TlpKind::Read { len, tag } => {
                let (at, data) = self.hosts[h].rc.device_read(now, tlp.addr, len);
                // The completions are counted under the request's purpose.
                self.push(at, Ev::RcReadDone(h, tag, tlp.addr, data, tlp.purpose));
            }
            TlpKind::Write32 if tlp.addr == MSIX_ADDR => {
                let at = now + self.hosts[h].rc.irq_delivery;
                self.push(at, Ev::Irq(h));
            }
            TlpKind::Write | TlpKind::Write32 => {
                let hs = &mut self.hosts[h];
                hs.rc.device_write(tlp.addr, &tlp.data);
                if let Dev::Idma(eng, _) = &mut hs.dev {
                    let mut out = Vec::new();
                    eng.rx_landed(
                        now,
                        tlp.addr,
                        tlp.data.len() as u64,
                        &mut hs.rc.mem,
                        &mut out,
                    );
                    self.idma_outs(h, out);
                }
            }
            TlpKind::Completion { .. } => {
                // An MMIO read's data reaches the stalled core after the upstream crossing.
                let hs = &mut self.hosts[h];
                if let Some(since) = hs.stalled_since.take() {
                    let head = tlp
                        .data
                        .get(0..4)
                        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .unwrap_or(0);
                    let at = now + hs.rc.downstream;
                    hs.core_busy += at.saturating_sub(since);
                    hs.core_free = at;
                    hs.jobs.push_front((at, Job::HandlerResume { head }));
                    self.kick(h, at);
                }
            }
            TlpKind::Read32 { .. } => {}
        }
    }

    fn at_device(&mut self, h: usize, now: Ps, tlp: Tlp) {
        match &mut self.hosts[h].dev {
            Dev::Nic(nic) => {
                let mut out = Vec::new();
                match tlp.kind {
                    TlpKind::Completion { .. } => nic.completion(now, tlp, &mut out),
                    TlpKind::Write32 | TlpKind::Write => {
                        nic.mmio_write(now, tlp.addr, &tlp.data, &mut out)
                    }
                    TlpKind::Read { .. } => {}
                    TlpKind::Read32 { len, tag } => {
                        let c = nic.mmio_read(tlp.addr, len, tag);
                        out.push(NicOut::Tlp(now, c));
                    }
                }
                self.nic_outs(h, out);
            }
            Dev::Idma(_, ad) => {
                let mut out = Vec::new();
                let frame = ad.write(tlp.addr, &tlp.data, &mut out);
                for t in out {
                    self.link_send(h, Dir::Up, now, t);
                }
                if let Some(f) = frame {
                    if self.hosts[h].adapter_frames.len() < nic::MAX_TRACES {
                        self.hosts[h].adapter_frames.push(now);
                    }
                    self.mac_send(h, f, false);
                }
            }
        }
    }

    fn kick(&mut self, h: usize, now: Ps) {
        let hs = &mut self.hosts[h];
        if !hs.core_scheduled && !hs.jobs.is_empty() && hs.stalled_since.is_none() {
            hs.core_scheduled = true;
            let at = now.max(hs.core_free);
            self.push(at, Ev::CoreNext(h));
        }
    }

    fn core_next(&mut self, h: usize, now: Ps) {
        self.hosts[h].core_scheduled = false;
        if now < self.hosts[h].core_free {
            self.kick(h, now);
            return;
        }
        let Some((_, job)) = self.hosts[h].jobs.pop_front() else {
            return;
        };
        let end = match job {
            Job::Send { msg, off, len, ack } => self.job_send(h, now, msg, off, len, ack),
            Job::Handler => {
                self.hosts[h].handler_queued = false;
                match self.job_handler(h, now, None) {
                    JobEnd::Free(t) => t,
                    JobEnd::Stalled => return,
                }
            }
            Job::HandlerResume { head } => match self.job_handler(h, now, Some(head)) {
                JobEnd::Free(t) => t,
                JobEnd::Stalled => return,
            },
        };
        let hs = &mut self.hosts[h];
        hs.core_busy += end - now;
        hs.core_free = end;
        self.kick(h, end);
        self.try_send(h, end);
    }

    /// Descriptors a send of `len` payload bytes takes: (context?, data descriptors).
    fn descs_for(&self, len: u64) -> u32 {
        let d = &self.cfg.driver;
        let ctx = (self.cfg.nic.context_desc || (d.tso && len > d.mss as u64)) as u32;
        let total = len + d.header_bytes as u64;
        if len > d.mss as u64 && !d.tso {
            // One packet per segment, each with its own context and data descriptor.
            let segs = len.div_ceil(d.mss as u64) as u32;
            return segs * (self.cfg.nic.context_desc as u32 + 1);
        }
        ctx + total.div_ceil(PAGE) as u32
    }

    /// The sender's window in segments: the receiver's RX FIFO (frames). No loss recovery is
    /// modelled, so the sender never has more segments unacknowledged (in a raw stream without
    /// ACKs: not yet taken by the receiver's driver) than the receiver can hold unprocessed
    /// without dropping one. (The window in bytes alone lets thousands of small
    /// segments fly: 262,144 B is 4,096 segments of 64 B; a receiver slightly slower than its
    /// sender then falls behind by a frame every few dozen messages and overflows its 512-frame
    /// FIFO after about 64,000 of them.)
    fn segment_window(&self) -> u64 {
        self.cfg.nic.rx_fifo_frames as u64
    }

    /// Segments a send of `len` payload bytes puts on the wire.
    fn segments(&self, len: u64) -> u64 {
        len.div_ceil(self.cfg.driver.mss as u64).max(1)
    }

    /// The largest send (payload bytes): [`MAX_SEND`], no more segments than the segment window,
    /// and no more descriptors than the TX ring holds beside an ACK's two.
    fn send_size(&self) -> u64 {
        let d = &self.cfg.driver;
        let mss = d.mss as u64;
        let by_window = self.segment_window() * mss;
        // The ring holds tx_ring - 1 descriptors (tail != head); keep two for an ACK.
        let room = (self.cfg.nic.tx_ring as u64).saturating_sub(3);
        let by_ring = if d.tso {
            // A context descriptor, then one data descriptor per page of header + payload.
            (room.saturating_sub(1) * PAGE).saturating_sub(d.header_bytes as u64)
        } else {
            // A packet per segment, each with its context descriptor when the NIC wants one.
            room / (self.cfg.nic.context_desc as u64 + 1) * mss
        };
        MAX_SEND.min(by_window).min(by_ring).max(mss)
    }

    fn ring_room(&self, h: usize) -> u32 {
        let hs = &self.hosts[h];
        let ring = self.cfg.nic.tx_ring;
        let used = (hs.tx_tail + ring - hs.tx_clean) % ring;
        ring - 1 - used
    }

    fn try_send(&mut self, h: usize, now: Ps) {
        if self.hosts[h].send_queued {
            return;
        }
        let Some(&(msg, off, len)) = self.hosts[h].app.front() else {
            return;
        };
        let f = &self.hosts[h].flow;
        let window = self.cfg.driver.window_bytes as u64;
        // Without ACKs (ack_every = 0) there is no window: a raw packet stream.
        if self.cfg.driver.ack_every > 0 && f.sent > f.acked && f.sent - f.acked + len > window {
            return;
        }
        if self.cfg.driver.ack_every == 0 {
            // A raw stream has no ACKs: the receiver's backpressure (802.3x PAUSE, here without
            // its delay) frees the window as its driver takes the segments.
            let got = self.hosts[1 - h].flow.received;
            let f = &mut self.hosts[h].flow;
            while f.in_flight.front().is_some_and(|&e| e <= got) {
                f.in_flight.pop_front();
            }
        }
        let flying = self.hosts[h].flow.in_flight.len() as u64;
        if flying > 0 && flying + self.segments(len) > self.segment_window() {
            return;
        }
        if self.descs_for(len) > self.ring_room(h) {
            // The iDMA engine marks TX descriptors done on the die and raises no TX interrupt: in
            // a raw stream (no ACKs, so no receive interrupts either) the driver reclaims them in
            // its send path, as drivers do when the ring is full.
            let hs = &mut self.hosts[h];
            if matches!(hs.dev, Dev::Idma(..))
                && self.cfg.driver.ack_every == 0
                && !hs.handler_queued
                && !hs.tx_posted.is_empty()
            {
                hs.handler_queued = true;
                hs.jobs.push_back((now, Job::Handler));
                self.kick(h, now);
            }
            return;
        }
        let hs = &mut self.hosts[h];
        hs.app.pop_front();
        hs.send_queued = true;
        hs.jobs.push_back((
            now,
            Job::Send {
                msg,
                off,
                len,
                ack: None,
            },
        ));
        self.kick(h, now);
    }

    /// The application's send: stack, copy, descriptors, doorbell. Returns when the core is free.
    fn job_send(
        &mut self,
        h: usize,
        now: Ps,
        msg: u64,
        base: u64,
        len: u64,
        ack: Option<u64>,
    ) -> Ps {
        let d = self.cfg.driver.clone();
        let is_ack = ack.is_some();
        // The whole message's length goes in the header (the receiver checks each segment
        // against it); an ACK carries none.
        let msg_len = if is_ack {
            0
        } else {
            self.messages[msg as usize].len
        };
        if !is_ack {
            self.hosts[h].send_queued = false;
            if base == 0 {
                self.messages[msg as usize].start_ns = now as f64 / 1000.0;
            }
        }
        let sw = if is_ack {
            ns(d.ack_stack_ns)
        } else {
            ns(d.tx_stack_ns + d.copy_ns_per_byte * len as f64)
        };
        let t = now + sw;
        // Build the frames' bytes: header then payload.
        let hdr = d.header_bytes as usize;
        let mss = d.mss as u64;
        let mut header = vec![0u8; hdr];
        header[0..8].copy_from_slice(&msg.to_le_bytes());
        header[16..24].copy_from_slice(&msg_len.to_le_bytes());
        header[24..32].copy_from_slice(&ack.unwrap_or(0).to_le_bytes());
        header[32] = is_ack as u8;
        header[33] = h as u8;
        let payload: Vec<u8> = (0..len).map(|o| pattern(msg, base + o)).collect();
        // Packets: one TSO send, or one packet per segment.
        let tso = d.tso && len > mss;
        let packets: Vec<(u64, u64)> = if tso || len <= mss {
            vec![(0, len)]
        } else {
            (0..len.div_ceil(mss))
                .map(|k| (k * mss, mss.min(len - k * mss)))
                .collect()
        };
        let ring = self.cfg.nic.tx_ring;
        let ctx_each = self.cfg.nic.context_desc || tso;
        for (off, plen) in packets {
            let mut bytes = header.clone();
            bytes[8..16].copy_from_slice(&(base + off).to_le_bytes());
            bytes.extend_from_slice(&payload[off as usize..(off + plen) as usize]);
            let hs = &mut self.hosts[h];
            let first = hs.tx_tail;
            let mut n = 0;
            if ctx_each {
                let dsc = nic::tx_context_desc(mss as u16, hdr as u16);
                hs.rc.core_write(TX_RING + hs.tx_tail as u64 * DESC, &dsc);
                hs.tx_tail = (hs.tx_tail + 1) % ring;
                n += 1;
            }
            let chunks: Vec<&[u8]> = bytes.chunks(PAGE as usize).collect();
            let nchunks = chunks.len();
            for (k, c) in chunks.into_iter().enumerate() {
                let buf = TX_BUFS + hs.tx_tail as u64 * PAGE;
                hs.rc.core_write(buf, c);
                let mut cmd = if tso { CMD_TSO } else { 0 };
                if k + 1 == nchunks {
                    cmd |= CMD_EOP | CMD_RS;
                }
                let dsc = nic::tx_data_desc(buf, c.len() as u16, cmd);
                hs.rc.core_write(TX_RING + hs.tx_tail as u64 * DESC, &dsc);
                hs.tx_tail = (hs.tx_tail + 1) % ring;
                n += 1;
            }
            hs.tx_posted.push_back((first, n));
        }
        let hs = &mut self.hosts[h];
        if is_ack {
            hs.stats.acks_sent += 1;
        } else {
            if base + len == msg_len {
                hs.stats.messages_sent += 1;
            }
            for k in 1..=len.div_ceil(mss).max(1) {
                hs.flow
                    .in_flight
                    .push_back(hs.flow.sent + (k * mss).min(len));
            }
            hs.flow.sent += len;
            if base == 0 {
                self.messages[msg as usize].doorbell_ns = t as f64 / 1000.0;
            }
        }
        // The doorbell (the tail), after a write barrier.
        let tail = self.hosts[h].tx_tail;
        self.hosts[h].stats.tx_doorbells += 1;
        self.doorbell(h, t, tail, false);
        t
    }

    /// A ring's new tail told to the device: an MMIO write of TDT / RDT down the link for the
    /// NIC, a register write on the die for the iDMA engine.
    fn doorbell(&mut self, h: usize, t: Ps, tail: u32, rx: bool) {
        let hs = &mut self.hosts[h];
        match &mut hs.dev {
            Dev::Nic(_) => {
                let at = t + hs.rc.core_store + hs.rc.downstream;
                let tlp = Tlp {
                    kind: TlpKind::Write32,
                    addr: if rx { nic::RDT } else { nic::TDT },
                    data: tail.to_le_bytes().to_vec(),
                    purpose: Purpose::Doorbell,
                };
                self.link_send(h, Dir::Down, at, tlp);
            }
            Dev::Idma(eng, _) => {
                let mut out = Vec::new();
                if rx {
                    eng.rx_tail(t, tail, &mut hs.rc.mem, &mut out);
                } else {
                    eng.tx_doorbell(t, tail, &mut hs.rc.mem, &mut out);
                }
                self.idma_outs(h, out);
            }
        }
    }

    /// The interrupt handler: clean finished TX descriptors, receive every done RX descriptor
    /// (check the frame, run the stack, acknowledge), refill and write the RX tail in batches.
    fn job_handler(&mut self, h: usize, now: Ps, head: Option<u32>) -> JobEnd {
        let d = self.cfg.driver.clone();
        let ring_rx = self.cfg.nic.rx_ring;
        let ring_tx = self.cfg.nic.tx_ring;
        let nic_dev = matches!(self.hosts[h].dev, Dev::Nic(_));
        let mut t = if head.is_some() {
            now
        } else {
            now + ns(d.irq_entry_ns)
        };
        if d.head_reads && nic_dev && head.is_none() && !self.hosts[h].tx_posted.is_empty() {
            // An uncached read of the TX head: the core stalls until its completion returns.
            let hs = &mut self.hosts[h];
            hs.stalled_since = Some(now);
            hs.core_busy += t - now;
            let at = t + hs.rc.core_store + hs.rc.downstream;
            let tlp = Tlp {
                kind: TlpKind::Read32 { len: 4, tag: 0 },
                addr: nic::TDH,
                data: Vec::new(),
                purpose: Purpose::Doorbell,
            };
            self.link_send(h, Dir::Down, at, tlp);
            return JobEnd::Stalled;
        }
        // TX clean: by the head register's value, or by the done bits of the oldest packets.
        loop {
            let hs = &mut self.hosts[h];
            let Some(&(first, n)) = hs.tx_posted.front() else {
                break;
            };
            let last = (first + n - 1) % ring_tx;
            let done = match head {
                // Done when `last` lies in [tx_clean, head) around the ring.
                Some(hd) => {
                    (last + ring_tx - hs.tx_clean) % ring_tx
                        < (hd + ring_tx - hs.tx_clean) % ring_tx
                }
                None => {
                    let a = TX_RING + last as u64 * DESC;
                    let dsc = hs.rc.mem.read(a, 16);
                    if nic::tx_done(&dsc) {
                        t += hs.rc.core_read_ps(a, 16, 1);
                    }
                    nic::tx_done(&dsc)
                }
            };
            if !done {
                break;
            }
            hs.tx_posted.pop_front();
            hs.tx_clean = (last + 1) % ring_tx;
        }
        // RX.
        let mut acks = Vec::new();
        loop {
            let hs = &mut self.hosts[h];
            let a = RX_RING + hs.rx_next as u64 * DESC;
            let dsc = hs.rc.mem.read(a, 16);
            let (dd, len) = nic::rx_done(&dsc);
            if !dd {
                break;
            }
            t += hs.rc.core_read_ps(a, 16, 1);
            let buf = RX_BUFS + hs.rx_next as u64 * self.cfg.nic.rx_buffer_bytes as u64;
            t += hs.rc.core_read_ps(buf, len as u64, 8);
            let frame = hs.rc.mem.read(buf, len as usize);
            hs.stats.frames_received += 1;
            // Give the descriptor back in read format.
            hs.rc.core_write(a, &nic::rx_read_desc(buf));
            hs.rx_next = (hs.rx_next + 1) % ring_rx;
            hs.rx_unposted += 1;
            match self.check_frame(h, &frame) {
                Ok(Some((kind_ack, msg, payload, cum))) => {
                    let hs = &mut self.hosts[h];
                    if kind_ack {
                        hs.flow.acked = hs.flow.acked.max(cum);
                        while hs
                            .flow
                            .in_flight
                            .front()
                            .is_some_and(|&e| e <= hs.flow.acked)
                        {
                            hs.flow.in_flight.pop_front();
                        }
                        t += ns(d.ack_stack_ns);
                    } else {
                        t += ns(d.rx_stack_ns + d.copy_ns_per_byte * payload as f64);
                        hs.flow.received += payload;
                        hs.flow.since_ack += 1;
                        let m = &mut self.messages[msg as usize];
                        m.received += payload;
                        if m.received == m.len && m.done_ns.is_none() {
                            m.done_ns = Some(t as f64 / 1000.0);
                        }
                        if d.ack_every > 0 && hs.flow.since_ack >= d.ack_every {
                            hs.flow.since_ack = 0;
                            acks.push(hs.flow.received);
                        }
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    self.error.get_or_insert(e);
                }
            }
            let hs = &mut self.hosts[h];
            if hs.rx_unposted >= d.rx_refill_batch {
                hs.rx_unposted = 0;
                hs.rx_tail = (hs.rx_next + ring_rx - 1) % ring_rx;
                hs.stats.rx_doorbells += 1;
                let tail = hs.rx_tail;
                self.doorbell(h, t, tail, true);
            }
        }
        let peer = 1 - h;
        if d.ack_every == 0 && !self.hosts[peer].app.is_empty() {
            let prop = propagation_ps(self.cfg.wire.meters, self.cfg.wire.ns_per_meter);
            self.push(t + prop, Ev::Resume(peer));
        }
        for cum in acks {
            // ACKs are cumulative: with the TX ring (nearly) full one is skipped.
            if self.ring_room(h) < 2 {
                continue;
            }
            let hs = &mut self.hosts[h];
            hs.jobs.push_back((
                t,
                Job::Send {
                    msg: u64::MAX,
                    off: 0,
                    len: 0,
                    ack: Some(cum),
                },
            ));
        }
        JobEnd::Free(t)
    }

    /// Checks a received frame against what its sender wrote. Returns (is ACK, message, payload
    /// bytes, cumulative ACK).
    fn check_frame(&mut self, h: usize, f: &[u8]) -> Result<Option<(bool, u64, u64, u64)>, String> {
        let hdr = self.cfg.driver.header_bytes as usize;
        if f.len() < hdr {
            return Err(format!(
                "host {h} received a {}-byte frame, shorter than its headers",
                f.len()
            ));
        }
        let rd = |o: usize| u64::from_le_bytes(f[o..o + 8].try_into().unwrap_or([0; 8]));
        let (msg, off, len, cum) = (rd(0), rd(8), rd(16), rd(24));
        let is_ack = f[32] == 1;
        let from = f[33] as usize;
        if from != 1 - h {
            return Err(format!("host {h} received a frame from host {from}"));
        }
        self.hosts[h].stats.frames_checked += 1;
        if is_ack {
            return Ok(Some((true, msg, 0, cum)));
        }
        let body = &f[hdr..];
        let Some(m) = self.messages.get(msg as usize) else {
            return Err(format!(
                "host {h} received a frame of unknown message {msg}"
            ));
        };
        if m.len != len || off + body.len() as u64 > len {
            return Err(format!(
                "host {h}: message {msg}: a segment at {off} of {} B does not fit its {len} B",
                body.len()
            ));
        }
        for (i, &b) in body.iter().enumerate() {
            let want = pattern(msg, off + i as u64);
            if b != want {
                return Err(format!(
                    "host {h}: message {msg}: byte {} is {b:#04x}, the sender wrote {want:#04x}",
                    off + i as u64
                ));
            }
        }
        self.hosts[h].stats.bytes_checked += body.len() as u64;
        Ok(Some((false, msg, body.len() as u64, 0)))
    }

    /// The statistics of the run.
    pub fn stats(&mut self) -> IoStats {
        let mut hosts = Vec::new();
        for h in self.hosts.iter_mut() {
            let down = *h.link.bytes(Dir::Down);
            let up = *h.link.bytes(Dir::Up);
            let mut both = down;
            both.merge(&up);
            let (nic, idma) = match &h.dev {
                Dev::Nic(n) => (Some(n.stats.clone()), None),
                Dev::Idma(e, _) => (None, Some(e.stats.clone())),
            };
            if let Dev::Nic(n) = &h.dev {
                if self.nic_traces.is_empty() {
                    self.nic_traces = n.traces.clone();
                }
            }
            if let Dev::Idma(e, _) = &h.dev {
                if self.idma_traces.is_empty() {
                    self.idma_traces = e.traces.clone();
                }
            }
            let mut drv = h.stats.clone();
            drv.core_busy_ns = h.core_busy as f64 / 1000.0;
            hosts.push(HostStats {
                link: LinkBytes {
                    down,
                    up,
                    categories: both
                        .categories()
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect(),
                    total: both.total(),
                    down_busy_ns: h.link.busy_ps(Dir::Down) as f64 / 1000.0,
                    up_busy_ns: h.link.busy_ps(Dir::Up) as f64 / 1000.0,
                },
                rc: h.rc.stats.clone(),
                nic,
                idma,
                driver: drv,
            });
        }
        let done: Vec<f64> = self
            .messages
            .iter()
            .filter_map(|m| m.done_ns.map(|d| d - m.start_ns))
            .collect();
        let mean = if done.is_empty() {
            0.0
        } else {
            done.iter().sum::<f64>() / done.len() as f64
        };
        let tx_stack = self.first_stack();
        IoStats {
            // The run ends when its last event is handled and every core job has finished (a job
            // ends after the event that started it: the last message completes inside one).
            time_ns: self
                .hosts
                .iter()
                .map(|h| h.core_free)
                .fold(self.now, Ps::max) as f64
                / 1000.0,
            kind: self
                .hosts
                .iter()
                .map(|h| match h.dev {
                    Dev::Nic(_) => "descriptor",
                    Dev::Idma(..) => "idma",
                })
                .collect::<Vec<_>>()
                .join("/"),
            frames_checked: hosts.iter().map(|h| h.driver.frames_checked).sum(),
            bytes_checked: hosts.iter().map(|h| h.driver.bytes_checked).sum(),
            hosts,
            messages: self.messages.iter().take(MAX_LISTED).cloned().collect(),
            messages_total: self.messages.len() as u64,
            tx_stack,
            mean_latency_ns: mean,
            min_latency_ns: if done.is_empty() {
                0.0
            } else {
                done.iter().copied().fold(f64::INFINITY, f64::min)
            },
            max_latency_ns: done.iter().copied().fold(0.0, f64::max),
        }
    }

    /// The transmit stack of the first message from host 0.
    fn first_stack(&self) -> TxStack {
        let Some(m) = self.messages.first() else {
            return TxStack::default();
        };
        let store = ns(m.doorbell_ns);
        let f = |p: Ps| p as f64 / 1000.0;
        let parts: Vec<(String, f64)> = match &self.hosts[m.from].dev {
            Dev::Nic(n) => {
                let Some(tr) = n.traces.first().or(self.nic_traces.first()) else {
                    return TxStack::default();
                };
                vec![
                    ("doorbell".into(), f(tr.doorbell.saturating_sub(store))),
                    (
                        "descriptor".into(),
                        f(tr.desc_arrived.saturating_sub(tr.doorbell)),
                    ),
                    (
                        "payload".into(),
                        f(tr.data_arrived.saturating_sub(tr.desc_arrived)),
                    ),
                ]
            }
            Dev::Idma(e, _) => {
                let Some(tr) = e.traces.first().or(self.idma_traces.first()) else {
                    return TxStack::default();
                };
                let arrived = self.hosts[m.from]
                    .adapter_frames
                    .first()
                    .copied()
                    .unwrap_or(0);
                vec![
                    ("doorbell".into(), f(tr.triggered.saturating_sub(tr.store))),
                    (
                        "descriptor".into(),
                        f(tr.desc_done.saturating_sub(tr.triggered)),
                    ),
                    (
                        "payload".into(),
                        f(tr.data_done.saturating_sub(tr.desc_done)),
                    ),
                    ("push".into(), f(arrived.saturating_sub(tr.push_start))),
                ]
            }
        };
        let total = parts.iter().map(|p| p.1).sum();
        TxStack { parts, total }
    }
}

/// The purposes in the order the statistics list them.
pub fn purposes() -> Vec<&'static str> {
    PURPOSES.iter().map(|p| p.name()).collect()
}

/// One message of `len` bytes from host 0 to host 1 on an idle system.
pub fn one_message(cfg: &IoConfig, len: u64) -> Result<IoStats, PlatformError> {
    stream(cfg, 1, len)
}

/// `count` messages of `len` bytes from host 0 to host 1, back to back (an iperf-like stream).
/// The initial posting of RX buffers happens before the measurement starts.
pub fn stream(cfg: &IoConfig, count: u64, len: u64) -> Result<IoStats, PlatformError> {
    let k = cfg.nic.kind.clone();
    stream_between(cfg, [&k, &k], count, len)
}

/// As [`stream`], with the two hosts' device kinds given.
pub fn stream_between(
    cfg: &IoConfig,
    kinds: [&str; 2],
    count: u64,
    len: u64,
) -> Result<IoStats, PlatformError> {
    check_stream(count, len, kinds)?;
    let mut s = IoSystem::with_devices(cfg, kinds);
    s.settle()?;
    s.send(0, count, len);
    s.run()?;
    Ok(s.stats())
}

/// Checks a stream's arguments: `count` messages of `len` bytes between devices of `kinds`.
pub fn check_stream(count: u64, len: u64, kinds: [&str; 2]) -> Result<(), PlatformError> {
    if !(1..=MAX_MESSAGES).contains(&count) {
        return Err(PlatformError::config(
            "I/O run",
            "count",
            format!("{count} must be from 1 to {MAX_MESSAGES}"),
        ));
    }
    if !(1..=MAX_MESSAGE).contains(&len) {
        return Err(PlatformError::config(
            "I/O run",
            "bytes",
            format!("{len} must be from 1 to {MAX_MESSAGE}"),
        ));
    }
    for k in kinds {
        if k != "descriptor" && k != "idma" {
            return Err(PlatformError::config(
                "I/O run",
                "nic.kind",
                format!("'{k}' must be \"descriptor\" or \"idma\""),
            ));
        }
    }
    Ok(())
}
