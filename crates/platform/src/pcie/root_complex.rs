//! The root complex / I/O hub and the host memory behind it, as the I/O model sees them: device
//! reads are answered after a host-side latency (the paper's 5520 IOH: about 740 ns from the
//! device; a Haswell: about 530 ns + 0.30 ns/B) and split into completions; device writes land
//! in host memory, or in the last-level cache when DDIO is on (a bounded set of lines, the
//! oldest evicted to memory); a core's later read of a line costs an LLC hit or a memory access
//! accordingly. Host memory is functional (sparse pages of real bytes), so every byte a device
//! reads or writes can be checked.
use crate::config::io::IoConfig;
use crate::sim::{ns, Ps};
use std::collections::{HashMap, HashSet, VecDeque};

const PAGE: u64 = 4096;
/// Bound on the functional host memory the I/O model may touch (pages of 4 KB): 256 MiB.
pub const MAX_PAGES: usize = 1 << 16;

/// Host memory: sparse 4 KB pages of bytes (zero until written).
#[derive(Debug, Clone, Default)]
pub struct HostMemory {
    pages: HashMap<u64, Box<[u8]>>,
    /// Set when a write would exceed [`MAX_PAGES`].
    pub overflow: bool,
}

impl HostMemory {
    pub fn write(&mut self, addr: u64, data: &[u8]) {
        let mut a = addr;
        let mut rest = data;
        while !rest.is_empty() {
            let page = a / PAGE;
            let off = (a % PAGE) as usize;
            let n = rest.len().min(PAGE as usize - off);
            if !self.pages.contains_key(&page) && self.pages.len() >= MAX_PAGES {
                self.overflow = true;
                return;
            }
            let p = self
                .pages
                .entry(page)
                .or_insert_with(|| vec![0u8; PAGE as usize].into_boxed_slice());
            p[off..off + n].copy_from_slice(&rest[..n]);
            a += n as u64;
            rest = &rest[n..];
        }
    }

    pub fn read(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len);
        let mut a = addr;
        while out.len() < len {
            let page = a / PAGE;
            let off = (a % PAGE) as usize;
            let n = (len - out.len()).min(PAGE as usize - off);
            match self.pages.get(&page) {
                Some(p) => out.extend_from_slice(&p[off..off + n]),
                None => out.extend(std::iter::repeat_n(0u8, n)),
            }
            a += n as u64;
        }
        out
    }
}

/// What the root complex counted.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RcStats {
    pub device_reads: u64,
    pub device_read_bytes: u64,
    pub device_writes: u64,
    pub device_write_bytes: u64,
    /// Lines device writes put in the LLC (DDIO) and in memory.
    pub llc_write_lines: u64,
    pub mem_write_lines: u64,
    /// Core reads of device-written lines served by the LLC and by memory.
    pub core_llc_hits: u64,
    pub core_mem_reads: u64,
}

/// The root complex of one host.
#[derive(Debug, Clone)]
pub struct RootComplex {
    read_base: f64,
    read_per_byte: f64,
    pub core_store: Ps,
    pub downstream: Ps,
    pub irq_delivery: Ps,
    llc: Ps,
    dram: Ps,
    ddio: bool,
    ddio_lines: usize,
    in_llc: HashSet<u64>,
    llc_order: VecDeque<u64>,
    pub mem: HostMemory,
    pub stats: RcStats,
}

impl RootComplex {
    pub fn new(cfg: &IoConfig) -> RootComplex {
        let r = &cfg.root_complex;
        RootComplex {
            read_base: r.read_ns,
            read_per_byte: r.read_ns_per_byte,
            core_store: ns(r.core_store_ns),
            downstream: ns(r.downstream_ns),
            irq_delivery: ns(r.irq_delivery_ns),
            llc: ns(r.llc_ns),
            dram: ns(r.dram_ns),
            ddio: r.ddio,
            ddio_lines: r.ddio_lines as usize,
            in_llc: HashSet::new(),
            llc_order: VecDeque::new(),
            mem: HostMemory::default(),
            stats: RcStats::default(),
        }
    }

    /// A device read of `len` bytes at `addr` arriving at `now`: when its data is ready, and the data.
    pub fn device_read(&mut self, now: Ps, addr: u64, len: u32) -> (Ps, Vec<u8>) {
        self.stats.device_reads += 1;
        self.stats.device_read_bytes += len as u64;
        let at = now + ns(self.read_base + self.read_per_byte * len as f64);
        (at, self.mem.read(addr, len as usize))
    }

    /// A device write arriving at `now`: the bytes land in memory, or in the LLC under DDIO.
    pub fn device_write(&mut self, addr: u64, data: &[u8]) {
        self.stats.device_writes += 1;
        self.stats.device_write_bytes += data.len() as u64;
        self.mem.write(addr, data);
        if data.is_empty() {
            return;
        }
        let first = addr / 64;
        let last = (addr + data.len() as u64 - 1) / 64;
        for line in first..=last {
            if self.ddio {
                self.stats.llc_write_lines += 1;
                if self.in_llc.insert(line) {
                    self.llc_order.push_back(line);
                    while self.llc_order.len() > self.ddio_lines {
                        if let Some(old) = self.llc_order.pop_front() {
                            self.in_llc.remove(&old);
                        }
                    }
                }
            } else {
                self.stats.mem_write_lines += 1;
                self.in_llc.remove(&line);
            }
        }
    }

    /// A core's read of `len` bytes at `addr` (the driver reading a descriptor or a packet):
    /// the first line's latency plus the rest overlapped `mlp` deep.
    pub fn core_read_ps(&mut self, addr: u64, len: u64, mlp: u64) -> Ps {
        if len == 0 {
            return 0;
        }
        let first = addr / 64;
        let last = (addr + len - 1) / 64;
        let mut total = 0;
        for (i, line) in (first..=last).enumerate() {
            let t = if self.in_llc.contains(&line) {
                self.stats.core_llc_hits += 1;
                self.llc
            } else {
                self.stats.core_mem_reads += 1;
                self.dram
            };
            total += if i == 0 { t } else { t / mlp.max(1) };
        }
        total
    }

    /// A core writes `data` (a packet it builds, a descriptor): the lines are then in its cache.
    pub fn core_write(&mut self, addr: u64, data: &[u8]) {
        self.mem.write(addr, data);
    }
}

impl IoConfig {
    /// Host-side read latency of `len` bytes, ps.
    pub fn host_read_ps(&self, len: u32) -> Ps {
        ns(self.root_complex.read_ns + self.root_complex.read_ns_per_byte * len as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_round_trips_across_pages() {
        let mut m = HostMemory::default();
        let d: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
        m.write(4000, &d);
        assert_eq!(m.read(4000, 10_000), d);
        assert_eq!(m.read(0, 4), vec![0; 4]);
    }

    #[test]
    fn ddio_makes_core_reads_llc_hits() {
        let mut cfg = IoConfig::preset("larsen-82598-gen1").unwrap();
        let mut rc = RootComplex::new(&cfg);
        rc.device_write(0x10000, &[1; 128]);
        let miss = rc.core_read_ps(0x10000, 64, 1);
        cfg.root_complex.ddio = true;
        let mut rc = RootComplex::new(&cfg);
        rc.device_write(0x10000, &[1; 128]);
        let hit = rc.core_read_ps(0x10000, 64, 1);
        assert!(hit < miss);
        assert_eq!(rc.stats.llc_write_lines, 2);
    }

    #[test]
    fn read_latency_follows_the_parameters() {
        let mut cfg = IoConfig::preset("larsen-82598-gen1").unwrap();
        cfg.root_complex.read_ns = 500.0;
        cfg.root_complex.read_ns_per_byte = 0.5;
        let mut rc = RootComplex::new(&cfg);
        let (t, _) = rc.device_read(1000, 0, 64);
        assert_eq!(t, 1000 + 532_000);
    }
}
