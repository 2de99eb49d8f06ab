//! A descriptor-DMA NIC modelled on the Intel 82598/82599: TX and RX rings of 16 B descriptors
//! in host memory with head (the NIC's) and tail (the driver's doorbell) registers; descriptor
//! prefetch by PTHRESH/HTHRESH and write-back by WTHRESH; an optional context descriptor per
//! packet; segmentation offload; RX descriptors fetched a 64 B line (four) at a time or one at a
//! time; interrupt moderation (EITR); outstanding reads limited by tags. The NIC is a state
//! machine: the owner hands it register writes, completions and received frames, and carries out
//! the [`NicOut`]s it returns (TLPs to send upstream, timers, frames for the MAC).
//!
//! Descriptor layouts (this model's, after the 82599's advanced descriptors): TX data: buffer
//! address (8 B), length (2), command (1: EOP 1, RS 2, TSO 4), type (1: 0 data, 1 context),
//! status (4: DD 1). TX context: MSS (2), header length (2), type at byte 11 = 1. RX read: buffer
//! address (8 B); RX write-back: status at byte 8 (DD 1, EOP 2), length at byte 12.
use crate::config::io::{IoConfig, NIC_DESC_BYTES};
use crate::pcie::bytes::{Geometry, Purpose};
use crate::pcie::link::{Tlp, TlpKind};
use crate::sim::{ns, Ps};
pub use crate::stats::NicStats;
use std::collections::{BTreeMap, VecDeque};

/// The NIC's register BAR (below 4 GB: doorbells are 3 DW writes).
pub const BAR: u64 = 0xF000_0000;
/// TX and RX tail registers (offsets as in the 82598's queue 0).
pub const TDT: u64 = BAR + 0x6018;
pub const RDT: u64 = BAR + 0x1018;
/// TX head register (read by drivers that clean by head instead of done bits).
pub const TDH: u64 = BAR + 0x6010;
/// Where MSI-X writes go.
pub const MSIX_ADDR: u64 = 0xFEE0_0000;
pub const DESC: u64 = NIC_DESC_BYTES;
pub const CMD_EOP: u8 = 1;
pub const CMD_RS: u8 = 2;
pub const CMD_TSO: u8 = 4;
/// The TX packet buffer (82599: 160 KB).
pub const TX_FIFO_BYTES: u64 = 160 * 1024;
/// Packets whose timings are kept for the latency stacks.
pub const MAX_TRACES: usize = 4096;

/// A TX data descriptor.
pub fn tx_data_desc(buf: u64, len: u16, cmd: u8) -> [u8; 16] {
    let mut d = [0u8; 16];
    d[0..8].copy_from_slice(&buf.to_le_bytes());
    d[8..10].copy_from_slice(&len.to_le_bytes());
    d[10] = cmd;
    d
}

/// A TX context descriptor (MSS and header length for segmentation/checksum offload).
pub fn tx_context_desc(mss: u16, hdr_len: u16) -> [u8; 16] {
    let mut d = [0u8; 16];
    d[0..2].copy_from_slice(&mss.to_le_bytes());
    d[2..4].copy_from_slice(&hdr_len.to_le_bytes());
    d[11] = 1;
    d
}

/// An RX descriptor in read format.
pub fn rx_read_desc(buf: u64) -> [u8; 16] {
    let mut d = [0u8; 16];
    d[0..8].copy_from_slice(&buf.to_le_bytes());
    d
}

/// The sequence field of a frame's header (bytes 8..16: the payload's offset in its message),
/// 0 for a header too short to hold one. TSO segmentation adds each segment's offset to it.
pub fn seq_field(header: &[u8]) -> u64 {
    header
        .get(8..16)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// DD bit of a TX descriptor written back.
pub fn tx_done(d: &[u8]) -> bool {
    d.len() >= 16 && d[12] & 1 == 1
}

/// (DD, length) of an RX descriptor written back.
pub fn rx_done(d: &[u8]) -> (bool, u16) {
    if d.len() < 16 {
        return (false, 0);
    }
    (d[8] & 1 == 1, u16::from_le_bytes([d[12], d[13]]))
}

/// What the owner must do.
#[derive(Debug, Clone, PartialEq)]
pub enum NicOut {
    /// Send a TLP upstream at the given time (now, or after the state machine's step).
    Tlp(Ps, Tlp),
    /// Call [`Nic::timer`] at `at`.
    Timer(Ps),
    /// A frame is ready for the MAC now.
    Frame(Vec<u8>),
}

/// Timings of one transmitted packet, for the latency stacks (ps).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TxTrace {
    /// The doorbell that made its descriptor available reached the NIC.
    pub doorbell: Ps,
    /// Its descriptor's fetch was issued and its completion arrived.
    pub fetch_issued: Ps,
    pub desc_arrived: Ps,
    /// Its last payload completion arrived.
    pub data_arrived: Ps,
}

#[derive(Debug, Clone)]
enum ReadFor {
    /// `seq`: the first descriptor's number, counted from the start (which doorbell published it).
    TxDesc {
        first: u32,
        count: u32,
        seq: u64,
    },
    RxDesc {
        first: u32,
        count: u32,
    },
    Payload {
        pkt: u64,
        offset: u32,
    },
}

#[derive(Debug, Clone)]
struct Read {
    addr: u64,
    len: u32,
    for_: ReadFor,
    data: Vec<u8>,
}

#[derive(Debug, Clone)]
struct TxPkt {
    id: u64,
    /// Descriptors it uses (context + data), from ring index `first`.
    first: u32,
    ndesc: u32,
    ctx: Option<(u16, u16)>,
    tso: bool,
    bufs: Vec<(u64, u32)>,
    len: u32,
    data: Vec<u8>,
    reads_left: u32,
    issued: bool,
    trace: TxTrace,
}

/// The NIC of one host.
#[derive(Debug, Clone)]
pub struct Nic {
    g: Geometry,
    processing: Ps,
    itr: Ps,
    context_desc: bool,
    one_at_a_time: bool,
    rx_fifo_cap: usize,
    rx_buffer_bytes: u32,
    // Thresholds.
    tx_on_chip: u32,
    rx_on_chip: u32,
    tx_pthresh: u32,
    tx_hthresh: u32,
    tx_wthresh: u32,
    rx_pthresh: u32,
    rx_hthresh: u32,
    rx_wthresh: u32,
    // Rings.
    pub tx_base: u64,
    pub tx_ring: u32,
    pub rx_base: u64,
    pub rx_ring: u32,
    tdt: u32,
    tx_fetch_next: u32,
    /// Fetched descriptors not yet made into packets, with the fetch's timings.
    tx_chip: VecDeque<(u32, [u8; 16], TxTrace)>,
    /// Descriptors fetched and not yet written back.
    tx_held: u32,
    tx_fetching: bool,
    tx_fetch_issued: Ps,
    /// Per TX doorbell, in order: the count of descriptors published once it arrived, and when
    /// it arrived; the doorbell of a descriptor is the first whose count passes it.
    doorbells: VecDeque<(u64, Ps)>,
    /// Descriptors published by doorbells so far, and fetched so far (both counted from the start).
    tx_published: u64,
    tx_fetched_seq: u64,
    tx_pkts: VecDeque<TxPkt>,
    next_pkt: u64,
    tx_fifo: u64,
    /// The TX head: one past the last descriptor whose packet went to the MAC.
    tx_head: u32,
    /// Done descriptors not yet written back: (index, descriptor).
    tx_wb: Vec<(u32, [u8; 16])>,
    rdt: u32,
    rx_fetch_next: u32,
    rx_chip: VecDeque<(u32, u64)>,
    /// RX descriptors being fetched.
    rx_fetching: u32,
    rx_fifo: VecDeque<Vec<u8>>,
    rx_wb: Vec<(u32, u16)>,
    // Reads.
    reads: BTreeMap<u16, Read>,
    free_tags: Vec<u16>,
    waiting: VecDeque<Read>,
    // Interrupts.
    last_irq: Option<Ps>,
    timer_at: Option<Ps>,
    pub traces: Vec<TxTrace>,
    pub stats: NicStats,
    /// TX descriptors whose packets went to the MAC (the head's progress, not wrapped): a driver
    /// may have at most the ring less one posted beyond these.
    pub tx_desc_done: u64,
}

fn ring_avail(tail: u32, next: u32, ring: u32) -> u32 {
    (tail + ring - next) % ring
}

impl Nic {
    pub fn new(cfg: &IoConfig, tx_base: u64, rx_base: u64) -> Nic {
        let n = &cfg.nic;
        Nic {
            g: cfg.geometry(),
            processing: ns(n.processing_ns),
            itr: ns(n.itr_us * 1000.0),
            context_desc: n.context_desc,
            one_at_a_time: n.rx_fetch == "one-at-a-time",
            rx_fifo_cap: n.rx_fifo_frames as usize,
            rx_buffer_bytes: n.rx_buffer_bytes,
            tx_on_chip: n.tx_on_chip,
            rx_on_chip: n.rx_on_chip,
            tx_pthresh: n.tx_pthresh,
            tx_hthresh: n.tx_hthresh.max(1),
            tx_wthresh: n.tx_wthresh,
            rx_pthresh: n.rx_pthresh,
            rx_hthresh: n.rx_hthresh.max(1),
            rx_wthresh: n.rx_wthresh,
            tx_base,
            tx_ring: n.tx_ring,
            rx_base,
            rx_ring: n.rx_ring,
            tdt: 0,
            tx_fetch_next: 0,
            tx_chip: VecDeque::new(),
            tx_held: 0,
            tx_fetching: false,
            tx_fetch_issued: 0,
            doorbells: VecDeque::new(),
            tx_published: 0,
            tx_fetched_seq: 0,
            tx_pkts: VecDeque::new(),
            next_pkt: 0,
            tx_fifo: 0,
            tx_head: 0,
            tx_wb: Vec::new(),
            rdt: 0,
            rx_fetch_next: 0,
            rx_chip: VecDeque::new(),
            rx_fetching: 0,
            rx_fifo: VecDeque::new(),
            rx_wb: Vec::new(),
            reads: BTreeMap::new(),
            free_tags: (0..cfg.link.tags as u16).rev().collect(),
            waiting: VecDeque::new(),
            last_irq: None,
            timer_at: None,
            traces: Vec::new(),
            stats: NicStats::default(),
            tx_desc_done: 0,
        }
    }

    /// Whether the driver builds a context descriptor before each packet.
    pub fn wants_context(&self) -> bool {
        self.context_desc
    }

    /// A register read arrives: the completion to send upstream (TDH: the descriptor after the
    /// last one whose packet the NIC has taken; other registers read as zero).
    pub fn mmio_read(&mut self, addr: u64, len: u32, tag: u16) -> Tlp {
        let v = if addr == TDH { self.tx_head } else { 0 };
        let mut data = v.to_le_bytes().to_vec();
        data.resize(len.clamp(1, 8) as usize, 0);
        Tlp {
            kind: TlpKind::Completion { tag, last: true },
            addr,
            data,
            purpose: Purpose::Doorbell,
        }
    }

    /// A posted write to a register arrives (a doorbell).
    pub fn mmio_write(&mut self, now: Ps, addr: u64, data: &[u8], out: &mut Vec<NicOut>) {
        let v = data
            .get(0..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .unwrap_or(0);
        self.stats.doorbells += 1;
        match addr {
            TDT => {
                let tail = v % self.tx_ring;
                let new = (tail + self.tx_ring - self.tdt) % self.tx_ring;
                self.tdt = tail;
                if new > 0 {
                    self.tx_published += u64::from(new);
                    self.doorbells.push_back((self.tx_published, now));
                }
                self.fetch_tx(now, out);
            }
            RDT => {
                self.rdt = v % self.rx_ring;
                self.fetch_rx(now, out);
            }
            _ => {}
        }
    }

    fn read(&mut self, now: Ps, addr: u64, len: u32, for_: ReadFor, out: &mut Vec<NicOut>) {
        // A read larger than MRRS is several requests; each carries a tag. The model issues
        // each request as its own read (descriptor fetches never exceed MRRS).
        let parts = self.g.split_read(addr, len as u64);
        let mut off = 0;
        for (a, l) in parts {
            let f = match &for_ {
                ReadFor::Payload { pkt, offset } => ReadFor::Payload {
                    pkt: *pkt,
                    offset: offset + off,
                },
                other => other.clone(),
            };
            off += l;
            let r = Read {
                addr: a,
                len: l,
                for_: f,
                data: Vec::new(),
            };
            if self.waiting.is_empty() {
                self.issue(now, r, out);
            } else {
                self.stats.reads_waiting_for_tags += 1;
                self.waiting.push_back(r);
            }
        }
    }

    fn issue(&mut self, at: Ps, r: Read, out: &mut Vec<NicOut>) {
        match self.free_tags.pop() {
            Some(tag) => {
                out.push(NicOut::Tlp(
                    at,
                    Tlp {
                        kind: TlpKind::Read { len: r.len, tag },
                        addr: r.addr,
                        data: Vec::new(),
                        purpose: match r.for_ {
                            ReadFor::Payload { .. } => Purpose::Payload,
                            _ => Purpose::Descriptor,
                        },
                    },
                ));
                self.reads.insert(tag, r);
            }
            None => {
                self.stats.reads_waiting_for_tags += 1;
                self.waiting.push_back(r);
            }
        }
    }

    /// Descriptors from ring index `idx` that one read request can carry (it may not cross an
    /// MRRS-aligned boundary).
    fn one_request(&self, base: u64, idx: u32) -> u32 {
        let a = base + idx as u64 * DESC;
        let m = self.g.mrrs.min(4096) as u64;
        ((m - a % m) / DESC) as u32
    }

    fn fetch_tx(&mut self, now: Ps, out: &mut Vec<NicOut>) {
        if self.tx_fetching {
            return;
        }
        let avail = ring_avail(self.tdt, self.tx_fetch_next, self.tx_ring);
        if avail == 0 || avail < self.tx_hthresh || self.tx_held >= self.tx_pthresh {
            return;
        }
        let n = avail
            .min(self.tx_on_chip - self.tx_held)
            .min(self.tx_ring - self.tx_fetch_next)
            .min(self.one_request(self.tx_base, self.tx_fetch_next));
        if n == 0 {
            return;
        }
        self.tx_fetching = true;
        self.tx_fetch_issued = now + self.processing;
        let first = self.tx_fetch_next;
        self.tx_fetch_next = (first + n) % self.tx_ring;
        self.tx_held += n;
        self.stats.tx_desc_fetched += n as u64;
        let addr = self.tx_base + first as u64 * DESC;
        self.read(
            now + self.processing,
            addr,
            n * DESC as u32,
            ReadFor::TxDesc {
                first,
                count: n,
                seq: self.tx_fetched_seq,
            },
            out,
        );
        self.tx_fetched_seq += u64::from(n);
    }

    fn fetch_rx(&mut self, now: Ps, out: &mut Vec<NicOut>) {
        if self.one_at_a_time {
            // On demand: one read per waiting frame that no descriptor on chip or in flight serves.
            while (self.rx_chip.len() as u32 + self.rx_fetching) < self.rx_fifo.len() as u32
                && ring_avail(self.rdt, self.rx_fetch_next, self.rx_ring) > 0
            {
                self.fetch_rx_range(now, 1, out);
            }
            return;
        }
        if self.rx_fetching > 0 {
            return;
        }
        let avail = ring_avail(self.rdt, self.rx_fetch_next, self.rx_ring);
        let held = self.rx_chip.len() as u32;
        if avail == 0 {
            return;
        }
        let starving = held == 0 && !self.rx_fifo.is_empty();
        let n = {
            if !((held < self.rx_pthresh && avail >= self.rx_hthresh) || starving) {
                return;
            }
            let mut n = avail
                .min(self.rx_on_chip - held)
                .min(self.rx_ring - self.rx_fetch_next)
                .min(self.one_request(self.rx_base, self.rx_fetch_next));
            // Whole 64 B lines where possible.
            let end = self.rx_fetch_next + n;
            if n > 4 && !end.is_multiple_of(4) {
                n -= end % 4;
            }
            n
        };
        self.fetch_rx_range(now, n, out);
    }

    fn fetch_rx_range(&mut self, now: Ps, n: u32, out: &mut Vec<NicOut>) {
        if n == 0 {
            return;
        }
        self.rx_fetching += n;
        let first = self.rx_fetch_next;
        self.rx_fetch_next = (first + n) % self.rx_ring;
        self.stats.rx_desc_fetched += n as u64;
        let addr = self.rx_base + first as u64 * DESC;
        self.read(
            now + self.processing,
            addr,
            n * DESC as u32,
            ReadFor::RxDesc { first, count: n },
            out,
        );
    }

    /// A completion arrives.
    pub fn completion(&mut self, now: Ps, tlp: Tlp, out: &mut Vec<NicOut>) {
        let TlpKind::Completion { tag, last } = tlp.kind else {
            return;
        };
        let Some(r) = self.reads.get_mut(&tag) else {
            return;
        };
        r.data.extend_from_slice(&tlp.data);
        if !last {
            return;
        }
        let Some(r) = self.reads.remove(&tag) else {
            return;
        };
        self.free_tags.push(tag);
        if let Some(w) = self.waiting.pop_front() {
            self.issue(now, w, out);
        }
        match r.for_ {
            ReadFor::TxDesc { first, count, seq } => {
                self.tx_fetching = false;
                for i in 0..count.min(r.data.len() as u32 / 16) {
                    let o = (i as usize) * 16;
                    let mut d = [0u8; 16];
                    d.copy_from_slice(&r.data[o..o + 16]);
                    // The doorbell that published this descriptor (not the latest one: with sends
                    // close together a later doorbell arrives while the fetch is on its way).
                    let n = seq + u64::from(i);
                    while self.doorbells.front().is_some_and(|&(upto, _)| upto <= n) {
                        self.doorbells.pop_front();
                    }
                    let doorbell = self.doorbells.front().map_or(0, |&(_, t)| t);
                    let trace = TxTrace {
                        doorbell,
                        fetch_issued: self.tx_fetch_issued,
                        desc_arrived: now,
                        data_arrived: 0,
                    };
                    self.tx_chip
                        .push_back(((first + i) % self.tx_ring, d, trace));
                }
                self.build_packets();
                self.issue_payloads(now, out);
                self.fetch_tx(now, out);
            }
            ReadFor::RxDesc { first, count } => {
                self.rx_fetching = self.rx_fetching.saturating_sub(count);
                for i in 0..count.min(r.data.len() as u32 / 16) {
                    let o = (i as usize) * 16;
                    let buf = u64::from_le_bytes(r.data[o..o + 8].try_into().unwrap_or([0; 8]));
                    self.rx_chip.push_back(((first + i) % self.rx_ring, buf));
                }
                self.receive(now, out);
                self.fetch_rx(now, out);
            }
            ReadFor::Payload { pkt, offset } => {
                if let Some(p) = self.tx_pkts.iter_mut().find(|p| p.id == pkt) {
                    let o = (offset as usize).min(p.data.len());
                    let n = r.data.len().min(p.data.len() - o);
                    p.data[o..o + n].copy_from_slice(&r.data[..n]);
                    p.reads_left -= 1;
                    if p.reads_left == 0 {
                        p.trace.data_arrived = now;
                    }
                }
                self.emit_frames(now, out);
            }
        }
    }

    /// Groups fetched descriptors into packets (context + data descriptors up to EOP).
    fn build_packets(&mut self) {
        loop {
            let eop = self
                .tx_chip
                .iter()
                .position(|(_, d, _)| d[11] == 0 && d[10] & CMD_EOP != 0);
            let Some(end) = eop else { return };
            let descs: Vec<_> = self.tx_chip.drain(..=end).collect();
            let mut p = TxPkt {
                id: self.next_pkt,
                first: descs[0].0,
                ndesc: descs.len() as u32,
                ctx: None,
                tso: false,
                bufs: Vec::new(),
                len: 0,
                data: Vec::new(),
                reads_left: 0,
                issued: false,
                trace: descs[0].2,
            };
            self.next_pkt += 1;
            for (_, d, _) in &descs {
                if d[11] == 1 {
                    p.ctx = Some((
                        u16::from_le_bytes([d[0], d[1]]),
                        u16::from_le_bytes([d[2], d[3]]),
                    ));
                } else {
                    let a = u64::from_le_bytes(d[0..8].try_into().unwrap_or([0; 8]));
                    let l = u16::from_le_bytes([d[8], d[9]]) as u32;
                    p.tso |= d[10] & CMD_TSO != 0;
                    p.bufs.push((a, l));
                    p.len += l;
                }
            }
            p.data = vec![0; p.len as usize];
            self.tx_pkts.push_back(p);
        }
    }

    fn issue_payloads(&mut self, now: Ps, out: &mut Vec<NicOut>) {
        let mut reads = Vec::new();
        let mut budget = TX_FIFO_BYTES.saturating_sub(self.tx_fifo);
        for p in self.tx_pkts.iter_mut() {
            if p.issued {
                budget = budget.saturating_sub(p.len as u64);
                continue;
            }
            if p.len as u64 > budget {
                break;
            }
            budget -= p.len as u64;
            p.issued = true;
            let mut off = 0;
            for &(a, l) in &p.bufs {
                p.reads_left += self.g.split_read(a, l as u64).len() as u32;
                reads.push((a, l, p.id, off));
                off += l;
            }
        }
        for (a, l, id, off) in reads {
            self.read(
                now + self.processing,
                a,
                l,
                ReadFor::Payload {
                    pkt: id,
                    offset: off,
                },
                out,
            );
        }
    }

    /// Hands complete packets to the MAC in order, segmenting TSO sends.
    fn emit_frames(&mut self, now: Ps, out: &mut Vec<NicOut>) {
        while self
            .tx_pkts
            .front()
            .is_some_and(|p| p.issued && p.reads_left == 0)
        {
            let Some(p) = self.tx_pkts.pop_front() else {
                break;
            };
            self.stats.tx_packets += 1;
            if self.traces.len() < MAX_TRACES {
                self.traces.push(p.trace);
            }
            match (p.tso, p.ctx) {
                (true, Some((mss, hdr))) if p.len > hdr as u32 + mss as u32 => {
                    let (h, body) = p.data.split_at((hdr as usize).min(p.data.len()));
                    // The send's offset (where TCP's sequence number would be) advances by a
                    // segment per frame.
                    let base = seq_field(h);
                    for (k, seg) in body.chunks(mss.max(1) as usize).enumerate() {
                        let mut f = h.to_vec();
                        let off = base + (k * mss as usize) as u64;
                        if f.len() >= 16 {
                            f[8..16].copy_from_slice(&off.to_le_bytes());
                        }
                        f.extend_from_slice(seg);
                        self.tx_fifo += f.len() as u64;
                        self.stats.tx_frames += 1;
                        out.push(NicOut::Frame(f));
                    }
                }
                _ => {
                    self.tx_fifo += p.data.len() as u64;
                    self.stats.tx_frames += 1;
                    out.push(NicOut::Frame(p.data));
                }
            }
            self.tx_head = (p.first + p.ndesc) % self.tx_ring;
            self.tx_desc_done += u64::from(p.ndesc);
            for i in 0..p.ndesc {
                let idx = (p.first + i) % self.tx_ring;
                let mut d = [0u8; 16];
                d[12] = 1; // DD
                d[10] = if i + 1 == p.ndesc {
                    CMD_EOP | CMD_RS
                } else {
                    0
                };
                self.tx_wb.push((idx, d));
            }
        }
        self.write_back(now, false, out);
    }

    /// The MAC finished sending `bytes` of the TX FIFO.
    pub fn mac_done(&mut self, now: Ps, bytes: u64, out: &mut Vec<NicOut>) {
        self.tx_fifo = self.tx_fifo.saturating_sub(bytes);
        self.issue_payloads(now, out);
    }

    /// Writes back done descriptors when WTHRESH is reached (or `flush`), then asks for an interrupt.
    fn write_back(&mut self, now: Ps, flush: bool, out: &mut Vec<NicOut>) {
        let mut wrote = false;
        if !self.tx_wb.is_empty() && (flush || self.tx_wb.len() as u32 >= self.tx_wthresh.max(1)) {
            let wb = std::mem::take(&mut self.tx_wb);
            self.stats.tx_desc_written_back += wb.len() as u64;
            self.tx_held -= wb.len() as u32;
            for run in runs(&wb.iter().map(|(i, _)| *i).collect::<Vec<_>>()) {
                let mut data = Vec::new();
                for (_, d) in &wb[run.0..run.1] {
                    data.extend_from_slice(d);
                }
                out.push(NicOut::Tlp(
                    now,
                    Tlp {
                        kind: TlpKind::Write,
                        addr: self.tx_base + wb[run.0].0 as u64 * DESC,
                        data,
                        purpose: Purpose::WriteBack,
                    },
                ));
            }
            wrote = true;
            self.fetch_tx(now, out);
        }
        if !self.rx_wb.is_empty() && (flush || self.rx_wb.len() as u32 >= self.rx_wthresh.max(1)) {
            let wb = std::mem::take(&mut self.rx_wb);
            self.stats.rx_desc_written_back += wb.len() as u64;
            for run in runs(&wb.iter().map(|(i, _)| *i).collect::<Vec<_>>()) {
                let mut data = Vec::new();
                for &(_, len) in &wb[run.0..run.1] {
                    let mut d = [0u8; 16];
                    d[8] = 3; // DD | EOP
                    d[12..14].copy_from_slice(&len.to_le_bytes());
                    data.extend_from_slice(&d);
                }
                out.push(NicOut::Tlp(
                    now,
                    Tlp {
                        kind: TlpKind::Write,
                        addr: self.rx_base + wb[run.0].0 as u64 * DESC,
                        data,
                        purpose: Purpose::WriteBack,
                    },
                ));
            }
            wrote = true;
        }
        if wrote {
            self.interrupt(now, out);
        } else if !flush && (!self.tx_wb.is_empty() || !self.rx_wb.is_empty()) {
            // Descriptors wait below WTHRESH: the moderation timer flushes them.
            self.arm(now, out);
        }
    }

    fn arm(&mut self, now: Ps, out: &mut Vec<NicOut>) {
        if self.timer_at.is_none() {
            let at = self
                .last_irq
                .map_or(now, |l| (l + self.itr).max(now))
                .max(now + 1);
            self.timer_at = Some(at);
            out.push(NicOut::Timer(at));
        }
    }

    fn interrupt(&mut self, now: Ps, out: &mut Vec<NicOut>) {
        let ready = self.itr == 0 || self.last_irq.is_none_or(|l| now >= l + self.itr);
        if ready && self.timer_at.is_none() {
            self.send_msix(now, out);
        } else {
            self.arm(now, out);
        }
    }

    fn send_msix(&mut self, now: Ps, out: &mut Vec<NicOut>) {
        self.last_irq = Some(now);
        self.stats.interrupts += 1;
        out.push(NicOut::Tlp(
            now,
            Tlp {
                kind: TlpKind::Write32,
                addr: MSIX_ADDR,
                data: vec![0; 4],
                purpose: Purpose::Interrupt,
            },
        ));
    }

    /// The moderation timer fires: flush write-backs and interrupt.
    pub fn timer(&mut self, now: Ps, out: &mut Vec<NicOut>) {
        if self.timer_at.is_some_and(|t| t <= now) {
            self.timer_at = None;
            let pending = !self.tx_wb.is_empty() || !self.rx_wb.is_empty();
            self.write_back(now, true, out);
            if !pending && self.timer_at.is_none() {
                self.send_msix(now, out);
            }
        }
    }

    /// Frames in the receive FIFO, waiting for a receive descriptor.
    pub fn rx_fifo_held(&self) -> u64 {
        self.rx_fifo.len() as u64
    }

    /// A frame arrives from the MAC.
    pub fn frame_in(&mut self, now: Ps, frame: Vec<u8>, out: &mut Vec<NicOut>) {
        if self.rx_fifo.len() >= self.rx_fifo_cap || frame.len() as u32 > self.rx_buffer_bytes {
            self.stats.rx_drops += 1;
            return;
        }
        self.rx_fifo.push_back(frame);
        self.receive(now, out);
        self.fetch_rx(now, out);
    }

    /// Moves received frames into host buffers while descriptors are on chip.
    fn receive(&mut self, now: Ps, out: &mut Vec<NicOut>) {
        while !self.rx_fifo.is_empty() && !self.rx_chip.is_empty() {
            let (Some(f), Some((idx, buf))) = (self.rx_fifo.pop_front(), self.rx_chip.pop_front())
            else {
                break;
            };
            self.stats.rx_frames += 1;
            for (a, l) in self.g.split_write(buf, f.len() as u64) {
                let o = (a - buf) as usize;
                out.push(NicOut::Tlp(
                    now,
                    Tlp {
                        kind: TlpKind::Write,
                        addr: a,
                        data: f[o..o + l as usize].to_vec(),
                        purpose: Purpose::Payload,
                    },
                ));
            }
            self.rx_wb.push((idx, f.len() as u16));
        }
        self.write_back(now, false, out);
    }

    /// Nothing in flight inside the NIC.
    /// Idle but for received frames waiting for RX buffers the driver has not posted: nothing
    /// happens until a tail write posts one (the frames stay in the RX FIFO, counted as received
    /// by the MAC and not delivered).
    pub fn idle_waiting_for_rx_buffers(&self) -> bool {
        !self.rx_fifo.is_empty()
            && self.rx_chip.is_empty()
            && self.rx_fetching == 0
            && ring_avail(self.rdt, self.rx_fetch_next, self.rx_ring) == 0
            && self.reads.is_empty()
            && self.waiting.is_empty()
            && self.tx_pkts.is_empty()
            && self.tx_wb.is_empty()
            && self.rx_wb.is_empty()
            && self.timer_at.is_none()
    }

    pub fn idle(&self) -> bool {
        self.reads.is_empty()
            && self.waiting.is_empty()
            && self.tx_pkts.is_empty()
            && self.rx_fifo.is_empty()
            && self.tx_wb.is_empty()
            && self.rx_wb.is_empty()
            && self.timer_at.is_none()
    }
}

/// Splits ring indices into runs of consecutive indices (a write-back does not wrap the ring).
fn runs(idx: &[u32]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut s = 0;
    for i in 1..=idx.len() {
        if i == idx.len() || idx[i] != idx[i - 1] + 1 {
            if s < i {
                out.push((s, i));
            }
            s = i;
        }
    }
    out
}
