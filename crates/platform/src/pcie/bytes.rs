//! The arithmetic of a PCIe link, with no time and no state: how many bytes each transaction
//! layer packet (TLP) and data link layer packet (DLLP) puts on the wire, how a read or write is
//! split by the Max Payload Size (MPS), the Max Read Request Size (MRRS) and the Read
//! Completion Boundary (RCB), and how long a number of bytes takes to serialize at a generation
//! and width. The timed link (`pcie_link`) and every byte count of the I/O model come from here.
//!
//! Sources: PCIe Base Specification 2.1/3.0 (framing, headers, DLLPs), Intel AN708
//! "Understanding PCI Express Throughput", pcie-bench/pcie-model `model/pcie.py` (Neugebauer et
//! al., "Understanding PCIe performance for end host networking", SIGCOMM 2018: the same
//! constants, its own code).
use crate::config::io::IoConfig;
pub use crate::config::io::{gen_rate, CompletionMode};
use serde::{Deserialize, Serialize};

/// Framing and link-layer bytes around every TLP at Gen1-Gen3: Gen1/2 STP 1 + sequence 2 +
/// LCRC 4 + END 1; Gen3 STP token 4 + LCRC 4 (PCIe Base Spec 3.0 section 4.2.2; AN708).
pub const TLP_FRAMING: u32 = 8;
/// A DLLP (Ack/Nak, UpdateFC) with its framing: 6 B + SDP 1 + END 1 (Gen1/2), the same 8 B at
/// Gen3 (AN708; pcie-model `Ack_Size = FC_Size = 8`).
pub const DLLP_BYTES: u32 = 8;
/// Header of a memory request with a 32-bit address (3 DW) and with a 64-bit address (4 DW);
/// completions always have 3 DW.
pub const HDR_3DW: u32 = 12;
pub const HDR_4DW: u32 = 16;
/// Optional end-to-end CRC digest.
pub const ECRC: u32 = 4;
/// A request may not cross a 4 KB boundary (Base Spec 2.2.7).
pub const BOUNDARY_4K: u64 = 4096;

/// The static description of one link: everything the byte counts and wire times depend on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Geometry {
    /// 1, 2 or 3.
    pub gen: u8,
    pub lanes: u32,
    pub mps: u32,
    pub mrrs: u32,
    pub rcb: u32,
    pub completions: CompletionMode,
    /// Host addresses above 4 GB: requests to host memory carry a 4 DW header.
    pub addr64: bool,
    pub ecrc: bool,
    /// Count clock-compensation SKP ordered sets (about 0.26% at Gen1/2, 4 symbols per 1538).
    pub skp: bool,
}

impl Geometry {
    /// Data bits per second per direction, before SKP (Gen1 x8: 16 Gb/s).
    pub fn raw_gbps(&self) -> f64 {
        let (gt, enc) = gen_rate(self.gen).unwrap_or((2.5, 0.8));
        gt * enc * self.lanes as f64
    }

    /// Usable bits per second per direction after clock compensation.
    pub fn gbps(&self) -> f64 {
        let skp = if self.skp && self.gen <= 2 {
            1.0 - 4.0 / 1538.0
        } else if self.skp {
            // Gen3: a 16-symbol SKP set about every 370 blocks of 16 symbols (pcie-model uses
            // the same 4/1538 share for every generation; the difference is below 0.1%).
            1.0 - 16.0 / (370.0 * 16.0 + 16.0)
        } else {
            1.0
        };
        self.raw_gbps() * skp
    }

    /// Picoseconds to serialize `bytes` on one direction of the link.
    pub fn wire_ps(&self, bytes: u64) -> u64 {
        (bytes as f64 * 8000.0 / self.gbps()).round() as u64
    }

    /// One symbol time in picoseconds (a byte on one lane: 4 ns at Gen1, 2 at Gen2, 1 at Gen3).
    pub fn symbol_ps(&self) -> u64 {
        let (gt, enc) = gen_rate(self.gen).unwrap_or((2.5, 0.8));
        (8000.0 / (gt * enc)).round() as u64
    }

    /// The Ack/UpdateFC coalescing interval: the spec's AckNak latency limit for x8 in symbol
    /// times (Gen1 107 / 67, Gen2 158 / 118, Gen3 203 / 163 for MPS 256 / 128; Base Spec 3.0
    /// tables 3-7 to 3-9), times the symbol time. Other widths use the x8 row (a modelling
    /// choice: the limit shrinks only a little with width).
    pub fn ack_interval_ps(&self) -> u64 {
        let small = self.mps <= 128;
        let symbols = match (self.gen, small) {
            (1, false) => 107,
            (1, true) => 67,
            (2, false) => 158,
            (2, true) => 118,
            (_, false) => 203,
            (_, true) => 163,
        };
        symbols * self.symbol_ps()
    }

    fn digest(&self) -> u32 {
        if self.ecrc {
            ECRC
        } else {
            0
        }
    }

    /// Header of a request to host memory (a device's read or write).
    pub fn mem_header(&self) -> u32 {
        if self.addr64 {
            HDR_4DW
        } else {
            HDR_3DW
        }
    }

    /// Bytes of a memory write of `data` bytes to host memory (framing + header + data).
    pub fn write_bytes(&self, data: u32) -> u32 {
        TLP_FRAMING + self.mem_header() + self.digest() + data
    }

    /// Bytes of a memory write to a device register (a BAR below 4 GB: 3 DW header), e.g. a
    /// doorbell; an MSI/MSI-X write also uses the 32-bit form (24 B with 4 B of data).
    pub fn write32_bytes(&self, data: u32) -> u32 {
        TLP_FRAMING + HDR_3DW + self.digest() + data
    }

    /// Bytes of a memory read request to host memory.
    pub fn read_request_bytes(&self) -> u32 {
        TLP_FRAMING + self.mem_header() + self.digest()
    }

    /// Bytes of a completion with `data` bytes.
    pub fn completion_bytes(&self, data: u32) -> u32 {
        TLP_FRAMING + HDR_3DW + self.digest() + data
    }

    /// Splits a device write of `len` bytes at `addr` into TLP payloads: at most MPS, never
    /// crossing an MPS-aligned boundary (so never a 4 KB one).
    pub fn split_write(&self, addr: u64, len: u64) -> Vec<(u64, u32)> {
        split_aligned(addr, len, self.mps as u64)
    }

    /// Splits a device read into read requests: at most MRRS, never crossing an MRRS-aligned
    /// boundary or a 4 KB one.
    pub fn split_read(&self, addr: u64, len: u64) -> Vec<(u64, u32)> {
        split_aligned(addr, len, (self.mrrs as u64).min(BOUNDARY_4K))
    }

    /// The completions answering one read request of `len` bytes at `addr`: in `Rcb` mode the
    /// first ends at the first RCB boundary and the others are RCB long; in `Coalesced` mode
    /// each ends at an RCB boundary and is at most MPS (so pieces end on MPS-aligned addresses).
    pub fn split_completions(&self, addr: u64, len: u32) -> Vec<u32> {
        let unit = match self.completions {
            CompletionMode::Rcb => self.rcb as u64,
            CompletionMode::Coalesced => self.mps as u64,
        };
        split_aligned(addr, len as u64, unit)
            .into_iter()
            .map(|(_, l)| l)
            .collect()
    }

    /// All wire bytes of a device read of `len` bytes at `addr`: (upstream request bytes,
    /// downstream completion bytes).
    pub fn read_cost(&self, addr: u64, len: u64) -> (u64, u64) {
        let mut up = 0u64;
        let mut down = 0u64;
        for (a, l) in self.split_read(addr, len) {
            up += self.read_request_bytes() as u64;
            for c in self.split_completions(a, l) {
                down += self.completion_bytes(c) as u64;
            }
        }
        (up, down)
    }

    /// All wire bytes of a device write of `len` bytes at `addr` (upstream).
    pub fn write_cost(&self, addr: u64, len: u64) -> u64 {
        self.split_write(addr, len)
            .into_iter()
            .map(|(_, l)| self.write_bytes(l) as u64)
            .sum()
    }
}

/// Splits `[addr, addr + len)` into pieces that do not cross a multiple of `unit`.
pub fn split_aligned(addr: u64, len: u64, unit: u64) -> Vec<(u64, u32)> {
    let unit = unit.max(1);
    let mut out = Vec::new();
    let mut a = addr;
    let end = addr.saturating_add(len);
    while a < end {
        let next = (a / unit + 1) * unit;
        let e = next.min(end);
        out.push((a, (e - a) as u32));
        a = e;
    }
    out
}

/// What a TLP is for: the categories every byte on the wire is counted under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Purpose {
    /// Packet data (TX payload reads and their completions, RX payload writes, iDMA pushes).
    Payload,
    /// Descriptor fetches (the read requests and their completions).
    Descriptor,
    /// Tail writes and other doorbells (and the iDMA's receive-buffer head updates).
    Doorbell,
    /// Descriptor (or head) write-backs by the device.
    WriteBack,
    /// MSI/MSI-X writes.
    Interrupt,
}

pub const PURPOSES: [Purpose; 5] = [
    Purpose::Payload,
    Purpose::Descriptor,
    Purpose::Doorbell,
    Purpose::WriteBack,
    Purpose::Interrupt,
];

impl Purpose {
    pub fn index(self) -> usize {
        self as usize
    }
    pub fn name(self) -> &'static str {
        match self {
            Purpose::Payload => "payload",
            Purpose::Descriptor => "descriptor",
            Purpose::Doorbell => "doorbell",
            Purpose::WriteBack => "write-back",
            Purpose::Interrupt => "interrupt",
        }
    }
}

/// Bytes on one direction of a link, by purpose, each split into data and overhead (framing,
/// header, digest), plus DLLPs. `total()` is every byte serialized.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByteCount {
    /// Data bytes carried by TLPs of each purpose (index: [`Purpose::index`]).
    pub data: [u64; 5],
    /// Framing + header + digest bytes of TLPs of each purpose.
    pub overhead: [u64; 5],
    pub tlps: [u64; 5],
    pub dllp: u64,
    pub dllps: u64,
}

impl ByteCount {
    pub fn add_tlp(&mut self, p: Purpose, data: u32, wire: u32) {
        let i = p.index();
        self.data[i] += data as u64;
        self.overhead[i] += (wire - data) as u64;
        self.tlps[i] += 1;
    }
    pub fn add_dllp(&mut self) {
        self.dllp += DLLP_BYTES as u64;
        self.dllps += 1;
    }
    /// Every TLP byte of purpose `p` (data and overhead).
    pub fn of(&self, p: Purpose) -> u64 {
        self.data[p.index()] + self.overhead[p.index()]
    }
    pub fn total(&self) -> u64 {
        self.data.iter().sum::<u64>() + self.overhead.iter().sum::<u64>() + self.dllp
    }
    pub fn merge(&mut self, o: &ByteCount) {
        for i in 0..5 {
            self.data[i] += o.data[i];
            self.overhead[i] += o.overhead[i];
            self.tlps[i] += o.tlps[i];
        }
        self.dllp += o.dllp;
        self.dllps += o.dllps;
    }
    /// The flat categories of the issue: payload, TLP overhead (of payload TLPs), descriptor,
    /// doorbell, write-back, interrupt (whole TLPs), DLLP. They sum to [`Self::total`].
    pub fn categories(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("payload", self.data[0]),
            ("tlp_overhead", self.overhead[0]),
            ("descriptor", self.of(Purpose::Descriptor)),
            ("doorbell", self.of(Purpose::Doorbell)),
            ("write_back", self.of(Purpose::WriteBack)),
            ("interrupt", self.of(Purpose::Interrupt)),
            ("dllp", self.dllp),
        ]
    }
}

impl IoConfig {
    /// The link's static description, from `[link]`.
    pub fn geometry(&self) -> Geometry {
        let l = &self.link;
        Geometry {
            gen: l.gen,
            lanes: l.lanes,
            mps: l.mps,
            mrrs: l.mrrs,
            rcb: l.rcb,
            completions: l.completions,
            addr64: l.addr64,
            ecrc: l.ecrc,
            skp: l.skp,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn g(gen: u8) -> Geometry {
        Geometry {
            gen,
            lanes: 8,
            mps: 256,
            mrrs: 512,
            rcb: 64,
            completions: CompletionMode::Rcb,
            addr64: true,
            ecrc: false,
            skp: false,
        }
    }

    #[test]
    fn tlp_sizes_match_the_facts_page() {
        let l = g(1);
        // Doorbell MWr with 4 B of data to a 32-bit BAR: 24 B; MSI-X the same.
        assert_eq!(l.write32_bytes(4), 24);
        // MRd with a 64-bit address: 24 B; with 32-bit: 20 B.
        assert_eq!(l.read_request_bytes(), 24);
        assert_eq!(Geometry { addr64: false, ..l }.read_request_bytes(), 20);
        // A 16 B descriptor completion is 36 B, a 64 B payload completion 84 B.
        assert_eq!(l.completion_bytes(16), 36);
        assert_eq!(l.completion_bytes(64), 84);
        // ECRC adds 4.
        assert_eq!(Geometry { ecrc: true, ..l }.completion_bytes(64), 88);
    }

    #[test]
    fn wire_times_match_the_fig8_check() {
        // Gen1 x8 = 16 Gb/s = 2 B/ns: 36 B in 18 ns, 84 B in 42 ns (Larsen & Lee's Fig. 8 check).
        let l = g(1);
        assert_eq!(l.wire_ps(36), 18_000);
        assert_eq!(l.wire_ps(84), 42_000);
        assert_eq!(g(2).wire_ps(84), 21_000);
        // Gen3 x8: 63.0 Gb/s.
        assert!((g(3).raw_gbps() - 63.015).abs() < 0.01);
        // SKP costs 4/1538 at Gen1.
        let s = Geometry { skp: true, ..l };
        assert!((s.gbps() / l.gbps() - (1.0 - 4.0 / 1538.0)).abs() < 1e-12);
        assert_eq!(l.symbol_ps(), 4000);
        assert_eq!(g(3).symbol_ps(), 1016);
    }

    #[test]
    fn the_fig8_transactions_total_192_bytes() {
        // One 64 B TX by byte count: doorbell 24 + descriptor MRd 24 + CplD 36 + payload MRd 24
        // + CplD 84.
        let l = g(1);
        let (du, dd) = l.read_cost(0x1000, 16);
        let (pu, pd) = l.read_cost(0x2000, 64);
        assert_eq!(l.write32_bytes(4) as u64 + du + dd + pu + pd, 192);
    }

    #[test]
    fn large_reads_cost_36_or_12_percent() {
        // 64 B completions: 84/64 on the completions plus one 24 B request per 512 B.
        let l = g(2);
        let (up, down) = l.read_cost(0, 1 << 20);
        let ovh = (up + down) as f64 / (1 << 20) as f64 - 1.0;
        assert!((ovh - 0.359).abs() < 0.01, "{ovh}");
        let c = Geometry {
            completions: CompletionMode::Coalesced,
            ..l
        };
        let (up, down) = c.read_cost(0, 1 << 20);
        let ovh = (up + down) as f64 / (1 << 20) as f64 - 1.0;
        assert!((ovh - 0.125).abs() < 0.01, "{ovh}");
    }

    #[test]
    fn splits_respect_boundaries() {
        let l = g(1);
        assert_eq!(l.split_write(0, 600), vec![(0, 256), (256, 256), (512, 88)]);
        assert_eq!(l.split_write(200, 100), vec![(200, 56), (256, 44)]);
        assert_eq!(l.split_read(4000, 200), vec![(4000, 96), (4096, 104)]);
        assert_eq!(l.split_completions(16, 200), vec![48, 64, 64, 24]);
        let c = Geometry {
            completions: CompletionMode::Coalesced,
            ..l
        };
        assert_eq!(c.split_completions(0, 512), vec![256, 256]);
    }

    #[test]
    fn ack_interval_is_the_spec_limit() {
        assert_eq!(g(1).ack_interval_ps(), 107 * 4000);
        assert_eq!(g(2).ack_interval_ps(), 158 * 2000);
    }

    proptest! {
        /// Splits cover the range exactly, in order, within the unit and without crossing it.
        #[test]
        fn splits_tile_the_range(addr in 0u64..1 << 40, len in 0u64..100_000, u in 0u32..6) {
            let unit = 64u64 << u;
            let parts = split_aligned(addr, len, unit);
            let mut a = addr;
            for &(pa, pl) in &parts {
                prop_assert_eq!(pa, a);
                prop_assert!(pl as u64 <= unit && pl > 0);
                prop_assert_eq!(pa / unit, (pa + pl as u64 - 1) / unit);
                a += pl as u64;
            }
            prop_assert_eq!(a, addr + len);
        }

        /// A read's wire bytes are its data plus 8 + header per TLP, nothing else.
        #[test]
        fn read_bytes_are_data_plus_counted_overheads(addr in 0u64..1 << 32, len in 1u64..20_000,
                                                      mrrs in 0u32..4, mps in 0u32..4, co in any::<bool>()) {
            let l = Geometry { mrrs: 128 << mrrs, mps: 128 << mps,
                               completions: if co { CompletionMode::Coalesced } else { CompletionMode::Rcb },
                               ..g(2) };
            let (up, down) = l.read_cost(addr, len);
            let reqs = l.split_read(addr, len).len() as u64;
            let cpls: u64 = l.split_read(addr, len).iter()
                .map(|&(a, n)| l.split_completions(a, n).len() as u64).sum();
            prop_assert_eq!(up, reqs * 24);
            prop_assert_eq!(down, len + cpls * 20);
            let w = l.write_cost(addr, len);
            prop_assert_eq!(w, len + l.split_write(addr, len).len() as u64 * 24);
        }
    }
}
