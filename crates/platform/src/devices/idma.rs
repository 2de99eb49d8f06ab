//! The integrated DMA engine (iDMA) of Larsen & Lee section 3 and the simple FIFO+PHY adapter
//! it drives. The engine sits on the die beside the cores: a core rings it with an on-die
//! doorbell; it reads descriptors and payload from memory (or cache) at memory latency, and
//! pushes the payload to the adapter with posted writes over PCIe (TX, section 3.1). On receive
//! (section 3.2) the adapter writes each frame into a pinned buffer in host memory (no
//! descriptors cross PCIe); the engine reads the host's RX descriptor from memory, moves the
//! frame into the buffer it names, marks the descriptor done and notifies a core; it gives the
//! pinned buffer's space back to the adapter with a posted head write now and then. The costs
//! are parameters (`[idma]`) with the paper's values as defaults.
//!
//! Both are state machines: the owner hands them events and carries out their outputs.
use crate::config::io::IoConfig;
use crate::devices::nic::{seq_field, CMD_EOP, CMD_TSO, DESC};
use crate::pcie::bytes::{Geometry, Purpose};
use crate::pcie::link::{Tlp, TlpKind};
use crate::pcie::root_complex::HostMemory;
use crate::sim::{ns, Ps};
use std::collections::VecDeque;

/// The adapter's BAR: its TX FIFO window (a write to `FIFO_EOP` closes a frame) and the
/// register where the engine returns receive-buffer space.
pub const ADAPTER_BAR: u64 = 0xF100_0000;
pub const FIFO: u64 = ADAPTER_BAR;
pub const FIFO_EOP: u64 = ADAPTER_BAR + 0x10_0000;
pub const HEAD: u64 = ADAPTER_BAR + 0x20_0000;
/// Each frame in the pinned buffer starts with an 8 B record: length (4), sequence (4).
pub const REC: u64 = 8;

/// Timings of one iDMA transmit (ps).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct IdmaTrace {
    /// The core's doorbell store issued, the engine triggered.
    pub store: Ps,
    pub triggered: Ps,
    /// Descriptor read done, payload read done.
    pub desc_done: Ps,
    pub data_done: Ps,
    /// The push left the engine.
    pub push_start: Ps,
}

/// What the owner must do.
#[derive(Debug, Clone, PartialEq)]
pub enum IdmaOut {
    /// Send a TLP downstream at the given time (it has crossed the uncore and the IOH).
    Down(Ps, Tlp),
    /// A received frame is in its buffer: notify the core at this time.
    NotifyRx(Ps),
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct IdmaStats {
    pub tx_packets: u64,
    pub tx_frames: u64,
    pub rx_frames: u64,
    pub desc_reads: u64,
    pub head_updates: u64,
}

/// The engine on the die.
#[derive(Debug, Clone)]
pub struct IdmaEngine {
    g: Geometry,
    pub doorbell: Ps,
    mem_read: Ps,
    mem_line: Ps,
    mem_write_line: Ps,
    notify: Ps,
    downstream: Ps,
    pub tx_base: u64,
    pub tx_ring: u32,
    tx_next: u32,
    tx_tail: u32,
    busy_until: Ps,
    pending_store: Ps,
    pub rx_base: u64,
    pub rx_ring: u32,
    rx_next: u32,
    rx_tail: u32,
    pub pinned: u64,
    pub pinned_bytes: u64,
    head_every: u64,
    /// Bytes of the pinned buffer landed, consumed, and given back (monotonic offsets).
    landed: u64,
    consumed: u64,
    given_back: u64,
    /// Frames landed but waiting for an RX descriptor.
    waiting_rx: u32,
    pub traces: Vec<IdmaTrace>,
    pub stats: IdmaStats,
}

impl IdmaEngine {
    pub fn new(cfg: &IoConfig, tx_base: u64, rx_base: u64, pinned: u64) -> IdmaEngine {
        let i = &cfg.idma;
        IdmaEngine {
            g: cfg.geometry(),
            doorbell: ns(i.doorbell_ns),
            mem_read: ns(i.mem_read_ns),
            mem_line: ns(i.mem_line_ns),
            mem_write_line: ns(i.mem_write_line_ns),
            notify: ns(i.notify_ns),
            downstream: ns(cfg.root_complex.downstream_ns),
            tx_base,
            tx_ring: cfg.nic.tx_ring,
            tx_next: 0,
            tx_tail: 0,
            busy_until: 0,
            pending_store: 0,
            rx_base,
            rx_ring: cfg.nic.rx_ring,
            rx_next: 0,
            rx_tail: 0,
            pinned,
            pinned_bytes: i.rx_buffer_bytes as u64,
            head_every: i.head_update_bytes as u64,
            landed: 0,
            consumed: 0,
            given_back: 0,
            waiting_rx: 0,
            traces: Vec::new(),
            stats: IdmaStats::default(),
        }
    }

    fn read_ps(&self, len: u64) -> Ps {
        self.mem_read + self.mem_line * (len.div_ceil(64).saturating_sub(1))
    }

    /// A core stores the TX tail to the engine at `store` (the on-die doorbell arrives after
    /// `doorbell`): the engine reads each new descriptor and its payload from memory and
    /// pushes the frames to the adapter.
    pub fn tx_doorbell(
        &mut self,
        store: Ps,
        tail: u32,
        mem: &mut HostMemory,
        out: &mut Vec<IdmaOut>,
    ) {
        self.pending_store = store;
        let now = store + self.doorbell;
        self.tx_tail = tail % self.tx_ring;
        while self.tx_next != self.tx_tail {
            // One packet: an optional context descriptor, then data descriptors up to EOP.
            let mut start = now.max(self.busy_until);
            let mut tr = IdmaTrace {
                store: self.pending_store,
                triggered: start,
                ..Default::default()
            };
            let mut bufs = Vec::new();
            let mut ctx = None;
            let mut tso = false;
            let mut descs = Vec::new();
            let first_line = u64::MAX;
            let mut line = first_line;
            loop {
                if self.tx_next == self.tx_tail {
                    break;
                }
                let a = self.tx_base + self.tx_next as u64 * DESC;
                // Descriptors share 64 B lines: a new line costs a memory read.
                if a / 64 != line {
                    line = a / 64;
                    start += self.mem_read;
                    self.stats.desc_reads += 1;
                }
                let d = mem.read(a, 16);
                descs.push(self.tx_next);
                self.tx_next = (self.tx_next + 1) % self.tx_ring;
                if d[11] == 1 {
                    ctx = Some((
                        u16::from_le_bytes([d[0], d[1]]),
                        u16::from_le_bytes([d[2], d[3]]),
                    ));
                    continue;
                }
                let addr = u64::from_le_bytes(d[0..8].try_into().unwrap_or([0; 8]));
                let len = u16::from_le_bytes([d[8], d[9]]) as u64;
                tso |= d[10] & CMD_TSO != 0;
                bufs.push((addr, len));
                if d[10] & CMD_EOP != 0 {
                    break;
                }
            }
            tr.desc_done = start;
            let mut data = Vec::new();
            let mut t = start;
            for &(a, l) in &bufs {
                data.extend_from_slice(&mem.read(a, l as usize));
                t += self.read_ps(l);
            }
            tr.data_done = t;
            tr.push_start = t;
            self.busy_until = t;
            // Mark the descriptors done in memory (on the die: no PCIe bytes).
            for idx in descs {
                let a = self.tx_base + idx as u64 * DESC;
                let mut d = mem.read(a, 16);
                d[12] |= 1;
                mem.write(a, &d);
            }
            let frames: Vec<Vec<u8>> = match (tso, ctx) {
                (true, Some((mss, hdr))) if data.len() > hdr as usize + mss as usize => {
                    let (h, body) = data.split_at(hdr as usize);
                    let base = seq_field(h);
                    body.chunks(mss.max(1) as usize)
                        .enumerate()
                        .map(|(k, seg)| {
                            let mut f = h.to_vec();
                            if f.len() >= 16 {
                                let off = base + (k * mss as usize) as u64;
                                f[8..16].copy_from_slice(&off.to_le_bytes());
                            }
                            f.extend_from_slice(seg);
                            f
                        })
                        .collect()
                }
                _ => vec![data],
            };
            self.stats.tx_packets += 1;
            for f in frames {
                self.stats.tx_frames += 1;
                let parts = self.g.split_write(0, f.len() as u64);
                let n = parts.len();
                for (k, (o, l)) in parts.into_iter().enumerate() {
                    let addr = if k + 1 == n { FIFO_EOP } else { FIFO } + o;
                    out.push(IdmaOut::Down(
                        t + self.downstream,
                        Tlp {
                            kind: TlpKind::Write32,
                            addr,
                            data: f[o as usize..(o + l as u64) as usize].to_vec(),
                            purpose: Purpose::Payload,
                        },
                    ));
                }
            }
            if self.traces.len() < crate::devices::nic::MAX_TRACES {
                self.traces.push(tr);
            }
        }
    }

    /// The driver's RX tail (on the die, no PCIe bytes).
    pub fn rx_tail(&mut self, now: Ps, tail: u32, mem: &mut HostMemory, out: &mut Vec<IdmaOut>) {
        self.rx_tail = tail % self.rx_ring;
        self.deliver(now + self.doorbell, mem, out);
    }

    /// The adapter's write into the pinned buffer landed (the root complex saw it).
    pub fn rx_landed(
        &mut self,
        now: Ps,
        addr: u64,
        len: u64,
        mem: &mut HostMemory,
        out: &mut Vec<IdmaOut>,
    ) {
        let Some(landed) = landed_after(self.landed, self.pinned, self.pinned_bytes, addr, len)
        else {
            return;
        };
        self.landed = landed;
        self.deliver(now, mem, out);
    }

    fn deliver(&mut self, now: Ps, mem: &mut HostMemory, out: &mut Vec<IdmaOut>) {
        loop {
            if self.landed < self.consumed + REC {
                break;
            }
            let rec = read_ring(mem, self.pinned, self.pinned_bytes, self.consumed, REC);
            let len = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]) as u64;
            let slot = (REC + len).div_ceil(64) * 64;
            if self.landed < self.consumed + REC + len {
                break;
            }
            if self.rx_next == self.rx_tail {
                self.waiting_rx = 1;
                break;
            }
            self.waiting_rx = 0;
            let frame = read_ring(
                mem,
                self.pinned,
                self.pinned_bytes,
                self.consumed + REC,
                len,
            );
            let mut t = now.max(self.busy_until);
            let da = self.rx_base + self.rx_next as u64 * DESC;
            // Four descriptors per line: the first of a line costs a memory read.
            if self.rx_next.is_multiple_of(4) || self.stats.rx_frames == 0 {
                t += self.mem_read;
                self.stats.desc_reads += 1;
            }
            let d = mem.read(da, 16);
            let buf = u64::from_le_bytes(d[0..8].try_into().unwrap_or([0; 8]));
            t += self.read_ps(len) + self.mem_write_line * len.div_ceil(64);
            mem.write(buf, &frame);
            let mut wb = [0u8; 16];
            wb[8] = 3;
            wb[12..14].copy_from_slice(&(len as u16).to_le_bytes());
            mem.write(da, &wb);
            self.rx_next = (self.rx_next + 1) % self.rx_ring;
            self.consumed += slot;
            self.busy_until = t;
            self.stats.rx_frames += 1;
            out.push(IdmaOut::NotifyRx(t + self.notify));
            if self.consumed - self.given_back >= self.head_every {
                self.given_back = self.consumed;
                self.stats.head_updates += 1;
                out.push(IdmaOut::Down(
                    t + self.downstream,
                    Tlp {
                        kind: TlpKind::Write32,
                        addr: HEAD,
                        data: (self.consumed as u32).to_le_bytes().to_vec(),
                        purpose: Purpose::Doorbell,
                    },
                ));
            }
        }
    }

    /// Frames landed but not delivered for want of an RX descriptor.
    pub fn starved(&self) -> bool {
        self.waiting_rx > 0
    }
}

/// `len` bytes at monotonic offset `off` of the pinned ring buffer (`size` bytes at `base`).
pub fn read_ring(mem: &HostMemory, base: u64, size: u64, off: u64, len: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len as usize);
    let mut o = off;
    while (out.len() as u64) < len {
        let p = o % size;
        let n = (len - out.len() as u64).min(size - p);
        out.extend_from_slice(&mem.read(base + p, n as usize));
        o += n;
    }
    out
}

/// The pinned buffer's landed byte count after the adapter's write of `len` bytes at `addr`
/// (None: the write is outside the buffer). Writes arrive in order; a gap from the last landed
/// byte is a slot's padding.
pub fn landed_after(landed: u64, base: u64, size: u64, addr: u64, len: u64) -> Option<u64> {
    let off = addr.wrapping_sub(base);
    if off >= size {
        return None;
    }
    let pos = landed % size;
    Some(landed + (off + size - pos) % size + len)
}

/// The simple FIFO+PHY adapter on the link.
#[derive(Debug, Clone)]
pub struct FifoAdapter {
    g: Geometry,
    pinned: u64,
    pinned_bytes: u64,
    tx: Vec<u8>,
    /// Bytes written into the pinned buffer, and the engine's last head.
    written: u64,
    head: u64,
    rx_fifo: VecDeque<Vec<u8>>,
    rx_fifo_cap: usize,
    seq: u32,
    pub drops: u64,
}

impl FifoAdapter {
    pub fn new(cfg: &IoConfig, pinned: u64) -> FifoAdapter {
        FifoAdapter {
            g: cfg.geometry(),
            pinned,
            pinned_bytes: cfg.idma.rx_buffer_bytes as u64,
            tx: Vec::new(),
            written: 0,
            head: 0,
            rx_fifo: VecDeque::new(),
            rx_fifo_cap: cfg.nic.rx_fifo_frames as usize,
            seq: 0,
            drops: 0,
        }
    }

    /// A posted write from the engine arrives; returns a whole frame when one closes.
    pub fn write(&mut self, addr: u64, data: &[u8], out: &mut Vec<Tlp>) -> Option<Vec<u8>> {
        if addr == HEAD {
            let v = data
                .get(0..4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .unwrap_or(0) as u64;
            // The head is the low 32 bits of the engine's consumed offset.
            let hi = self.head & !0xFFFF_FFFF;
            let mut h = hi | v;
            if h < self.head {
                h += 1 << 32;
            }
            self.head = h;
            self.drain(out);
            return None;
        }
        self.tx.extend_from_slice(data);
        if (FIFO_EOP..HEAD).contains(&addr) {
            return Some(std::mem::take(&mut self.tx));
        }
        None
    }

    /// A frame arrives from the wire: written into the pinned buffer when it has room.
    pub fn frame_in(&mut self, frame: Vec<u8>, out: &mut Vec<Tlp>) {
        if self.rx_fifo.len() >= self.rx_fifo_cap
            || REC + frame.len() as u64 > self.pinned_bytes / 2
        {
            self.drops += 1;
            return;
        }
        self.rx_fifo.push_back(frame);
        self.drain(out);
    }

    fn drain(&mut self, out: &mut Vec<Tlp>) {
        while let Some(f) = self.rx_fifo.front() {
            let slot = (REC + f.len() as u64).div_ceil(64) * 64;
            if self.written + slot - self.head > self.pinned_bytes {
                return;
            }
            let Some(f) = self.rx_fifo.pop_front() else {
                return;
            };
            let mut rec = Vec::with_capacity(REC as usize + f.len());
            rec.extend_from_slice(&(f.len() as u32).to_le_bytes());
            rec.extend_from_slice(&self.seq.to_le_bytes());
            self.seq = self.seq.wrapping_add(1);
            rec.extend_from_slice(&f);
            // Split at the buffer's end, then at MPS.
            let mut o = 0u64;
            while o < rec.len() as u64 {
                let p = (self.written + o) % self.pinned_bytes;
                let n = (rec.len() as u64 - o).min(self.pinned_bytes - p);
                for (a, l) in self.g.split_write(self.pinned + p, n) {
                    let s = (o + a - (self.pinned + p)) as usize;
                    out.push(Tlp {
                        kind: TlpKind::Write,
                        addr: a,
                        data: rec[s..s + l as usize].to_vec(),
                        purpose: Purpose::Payload,
                    });
                }
                o += n;
            }
            self.written += slot;
            // The padding to the slot's end is not written (the engine skips it).
        }
    }
}
