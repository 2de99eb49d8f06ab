//! Host memory as a PCIe device agent sees it: functional (sparse pages of real bytes), so every
//! byte a device reads or writes can be checked. It holds bytes only; the timing of a device's
//! reads and writes (the root complex's part of a read, the doorbell's downstream path, DDIO)
//! is the device agents' (`agents/pcie_device.rs`, `agents/idma.rs`, `agents/microengines.rs`),
//! over the platform's memory system.
use std::collections::HashMap;

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
}
