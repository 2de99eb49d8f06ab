//! The pinned receive buffer's layout and the simple FIFO+PHY adapter of Larsen & Lee's integrated
//! DMA engine (iDMA, section 3): the adapter's BAR (its TX FIFO window, where a write to
//! `FIFO_EOP` closes a frame, and the register where the engine returns receive-buffer space),
//! the 8 B record before each frame in the pinned ring, and the adapter as a state machine that
//! its owner hands posted writes and wire frames. The engine itself is the platform agent
//! `agents/idma.rs`, whose every memory access goes through the platform's memory system.
use crate::config::io::IoConfig;
use crate::pcie::bytes::{Geometry, Purpose};
use crate::pcie::host_memory::HostMemory;
use crate::pcie::link::{Tlp, TlpKind};
use std::collections::VecDeque;

/// The adapter's BAR: its TX FIFO window (a write to `FIFO_EOP` closes a frame) and the
/// register where the engine returns receive-buffer space.
pub const ADAPTER_BAR: u64 = 0xF100_0000;
pub const FIFO: u64 = ADAPTER_BAR;
pub const FIFO_EOP: u64 = ADAPTER_BAR + 0x10_0000;
pub const HEAD: u64 = ADAPTER_BAR + 0x20_0000;
/// Each frame in the pinned buffer starts with an 8 B record: length (4), sequence (4).
pub const REC: u64 = 8;

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
