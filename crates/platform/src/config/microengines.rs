//! The parameters of a platform's microengines (`[[agents]] kind = "microengines"`): IXP-style
//! small multithreaded cores with their own Ethernet MAC and receive buffer (the MSF's RBUF),
//! moving received frames into the host's RX buffers with asynchronous memory commands (Wun &
//! Crowley, Hot Interconnects 2006; the IXP2350). Pure data: the agent is `agents/microengines.rs`.
//!
//! Defaults are the IXP2350 values of `presets/platforms/ixp-host.toml`, each with its source there
//! (the paper, the Intel IXP2800 Hardware Reference Manual, the Linux IXP2000
//! driver's microcode); values marked `[U]` there are modelling choices, not fits.
use crate::sim::error::PlatformError;
use serde::{Deserialize, Serialize};

/// Microengines, their program's per-frame costs, the MAC and the host interface.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MicroenginesConfig {
    /// Microengines taking received frames, and hardware contexts per microengine.
    pub count: u32,
    pub threads: u32,
    /// Their clock, MHz.
    pub clock_mhz: f64,
    /// Cycles a context swap costs (the pipeline's), and cycles to form and issue one memory
    /// command (ALU work plus the command FIFO).
    pub switch_cycles: u32,
    pub issue_cycles: u32,
    /// Bytes one memory command moves (an mpacket), and commands a context keeps in flight (its
    /// transfer registers).
    pub chunk_bytes: u32,
    pub copy_depth: u32,
    /// ALU cycles per 32-bit word checksummed on the way (0: no checksum).
    pub checksum_cycles_per_word: f64,
    /// The receive program's own work per frame besides its memory commands: before the copy
    /// (parsing the frame's descriptor from the MSF) and after it (building the host's
    /// descriptor), in cycles.
    pub frame_cycles: u32,
    pub done_cycles: u32,
    /// The MSF's receive buffer: bytes and element size (a frame takes whole elements; a frame
    /// that finds too few free is dropped at the MSF and counted).
    pub rbuf_bytes: u32,
    pub element_bytes: u32,
    /// An RBUF read's latency, ns, and the MSF's bandwidth, GB/s (on chip).
    pub rbuf_read_ns: f64,
    pub rbuf_gbytes_per_s: f64,
    /// The MAC: line rate (Gb/s) and its transmit and receive pipelines (ns).
    pub mac_gbps: f64,
    pub mac_tx_ns: f64,
    pub mac_rx_ns: f64,
    /// The host interface: the register window the host's driver stores its RX tail to (the
    /// 82598's offsets, so the `nic-rx` driver program drives it unchanged), the RX descriptor
    /// ring (16 B descriptors) and its size, and the RX buffers (packet k: `rx_buffers + (k mod
    /// ring) x rx_buffer_stride`).
    pub bar: u64,
    pub bar_bytes: u64,
    pub rx_ring: u64,
    pub ring: u32,
    pub rx_buffers: u64,
    pub rx_buffer_stride: u64,
    /// The core the microengines interrupt per frame (an on-chip signal: the interconnect's
    /// `engine_message_ns`, then the platform's interrupt delivery), and whether their writes are
    /// pushed into that core's L2 (the IXP2350's L2 push, Wun & Crowley section 6) instead of
    /// going to memory.
    pub irq_core: u32,
    pub l2_push: bool,
    /// What the receive program does with a frame (Wun & Crowley's configurations, section 4):
    /// `frame`: the whole frame into the host's RX buffer, the host runs the stack (the emu
    /// nic and the softnic; whether the microengines checksum is `checksum_cycles_per_word`);
    /// `onload`: the microengines parse the headers, look up the connection's control block in
    /// SRAM (`sram_ns`), copy only the UDP payload into the buffer the host posted (the user's)
    /// and put it on the connection's scratch ring (`scratch_ns`) - the onloader; `sink`: the
    /// peer at the far end of the wire, checking every datagram in the RBUF and dropping it, no
    /// host on the path.
    pub rx_mode: String,
    /// What the transmit program does with a descriptor the host posted (its TX tail store):
    /// `frame`: the buffer holds the whole frame the host built (emu nic, softnic); `onload`: the
    /// buffer holds the UDP payload, the microengines read the connection's control block (SRAM)
    /// and build the headers (`parse_cycles`) - the onloader; `source`: the peer, sending
    /// `source_frames` datagrams back to back at the MAC's rate with no host.
    pub tx_mode: String,
    /// Frames on the wire are iperf UDP datagrams (`net/udp_peer.rs`): the transmit side sends
    /// datagram k (real Ethernet, IPv4 and UDP headers and checksums, a payload derived from k)
    /// for the k-th descriptor, and the receive side checks every datagram it delivers in order,
    /// byte for byte, with its checksums.
    pub iperf: bool,
    /// The host's TX descriptor ring (16 B descriptors, `ring` of them) and TX buffers (frame k in
    /// `tx_buffers + (k mod ring) x tx_buffer_stride`), and the bytes each descriptor names.
    pub tx_ring: u64,
    pub tx_buffers: u64,
    pub tx_buffer_stride: u64,
    pub frame_bytes: u32,
    /// The MSF's transmit buffer (elements of `element_bytes`): a frame waits for room.
    pub tbuf_bytes: u32,
    /// Whether a sent frame's descriptor write-back interrupts `irq_core` (the host frees the
    /// buffer in its handler).
    pub tx_irq: bool,
    /// The onloader's header work on the microengines (parse on receive, build on transmit),
    /// cycles; an SRAM read (the connection's control block) and a scratch ring put, ns.
    pub parse_cycles: u32,
    pub sram_ns: f64,
    pub scratch_ns: f64,
    /// Datagrams a `source` sends.
    pub source_frames: u64,
    /// Whether a received frame's descriptor write-back interrupts `irq_core` (off: the host
    /// takes none, as the onloader's receive blocks running alone).
    pub rx_irq: bool,
    /// The RX buffers the host's program posts up front (its `ops`; 0: none counted): every RX
    /// tail store after them returns the buffer of the oldest datagram delivered and not yet
    /// returned - the host has consumed it (recvmsg returned it and the application processed
    /// it) - and its bytes are checked again then, still in the buffer as delivered
    /// (`rx_consumed`, `rx_consumed_bytes_wrong`, the first and last such store's time).
    pub rx_posted_ahead: u64,
}

impl Default for MicroenginesConfig {
    fn default() -> Self {
        MicroenginesConfig {
            count: 2,
            threads: 8,
            clock_mhz: 900.0,
            switch_cycles: 1,
            issue_cycles: 2,
            chunk_bytes: 64,
            copy_depth: 1,
            checksum_cycles_per_word: 1.0,
            frame_cycles: 40,
            done_cycles: 40,
            rbuf_bytes: 8192,
            element_bytes: 128,
            rbuf_read_ns: 50.0,
            rbuf_gbytes_per_s: 3.6,
            mac_gbps: 1.0,
            mac_tx_ns: 0.0,
            mac_rx_ns: 0.0,
            bar: 0xf000_0000,
            bar_bytes: 0x2_0000,
            rx_ring: 0x1100_0000,
            ring: 512,
            rx_buffers: 0x3000_0000,
            rx_buffer_stride: 2048,
            irq_core: 0,
            l2_push: false,
            rx_mode: "frame".into(),
            tx_mode: "frame".into(),
            iperf: false,
            tx_ring: 0x1000_0000,
            tx_buffers: 0x2000_0000,
            tx_buffer_stride: 2048,
            frame_bytes: 64,
            tbuf_bytes: 8192,
            tx_irq: true,
            parse_cycles: 120,
            sram_ns: 150.0,
            scratch_ns: 100.0,
            source_frames: 0,
            rx_irq: true,
            rx_posted_ahead: 0,
        }
    }
}

/// The receive and transmit programs (`rx_mode`, `tx_mode`).
pub const RX_MODES: &[&str] = &["frame", "onload", "sink"];
pub const TX_MODES: &[&str] = &["frame", "onload", "source"];
/// The smallest iperf frame: Ethernet, IPv4 and UDP headers (42 B) and iperf's 16-byte header
/// (`net/udp_peer.rs`'s `HEADER_BYTES` and `MIN_PAYLOAD`).
pub const IPERF_MIN_FRAME: u64 = 42 + 16;
/// The most datagrams a `source` sends in one run.
pub const MAX_SOURCE_FRAMES: u64 = 1_000_000;

/// The most microengines, and contexts per microengine, one agent may have.
pub const MAX_ENGINES: u32 = 64;
pub const MAX_THREADS: u32 = 64;

impl MicroenginesConfig {
    /// Checks every value, naming its key under `prefix` (e.g. `agents[2].params.`).
    pub fn validate(&self, src: &str, prefix: &str) -> Result<(), PlatformError> {
        let bad =
            |k: &str, what: String| Err(PlatformError::config(src, format!("{prefix}{k}"), what));
        let int = |k: &str, v: u64, lo: u64, hi: u64| {
            if v < lo || v > hi {
                bad(k, format!("{v}: must be in {lo}..{hi}"))
            } else {
                Ok(())
            }
        };
        let real = |k: &str, v: f64, lo: f64, hi: f64| {
            if !v.is_finite() || v < lo || v > hi {
                bad(k, format!("{v}: must be a number in {lo}..{hi}"))
            } else {
                Ok(())
            }
        };
        int("count", self.count as u64, 1, MAX_ENGINES as u64)?;
        int("threads", self.threads as u64, 1, MAX_THREADS as u64)?;
        real("clock_mhz", self.clock_mhz, 1.0, 100_000.0)?;
        int("switch_cycles", self.switch_cycles as u64, 0, 1000)?;
        int("issue_cycles", self.issue_cycles as u64, 0, 1000)?;
        int("chunk_bytes", self.chunk_bytes as u64, 8, 4096)?;
        if !self.chunk_bytes.is_multiple_of(8) {
            return bad(
                "chunk_bytes",
                format!("{}: must be a multiple of 8", self.chunk_bytes),
            );
        }
        int("copy_depth", self.copy_depth as u64, 1, 64)?;
        real(
            "checksum_cycles_per_word",
            self.checksum_cycles_per_word,
            0.0,
            1000.0,
        )?;
        int("frame_cycles", self.frame_cycles as u64, 0, 1_000_000)?;
        int("done_cycles", self.done_cycles as u64, 0, 1_000_000)?;
        int("element_bytes", self.element_bytes as u64, 64, 65536)?;
        int(
            "rbuf_bytes",
            self.rbuf_bytes as u64,
            self.element_bytes as u64,
            1 << 24,
        )?;
        real("rbuf_read_ns", self.rbuf_read_ns, 0.0, 1e6)?;
        real("rbuf_gbytes_per_s", self.rbuf_gbytes_per_s, 0.001, 10_000.0)?;
        real("mac_gbps", self.mac_gbps, 0.001, 1000.0)?;
        real("mac_tx_ns", self.mac_tx_ns, 0.0, 1e6)?;
        real("mac_rx_ns", self.mac_rx_ns, 0.0, 1e6)?;
        if !self.bar_bytes.is_power_of_two() || !(4096..=64 << 20).contains(&self.bar_bytes) {
            return bad(
                "bar_bytes",
                format!("{:#x}: a power of two from 4 KiB to 64 MiB", self.bar_bytes),
            );
        }
        if !self.bar.is_multiple_of(self.bar_bytes) {
            return bad(
                "bar",
                format!(
                    "{:#x}: must be aligned to bar_bytes ({:#x})",
                    self.bar, self.bar_bytes
                ),
            );
        }
        int("ring", self.ring as u64, 2, 65536)?;
        int("rx_buffer_stride", self.rx_buffer_stride, 64, 1 << 20)?;
        if !RX_MODES.contains(&self.rx_mode.as_str()) {
            return bad(
                "rx_mode",
                format!("{:?}: one of {}", self.rx_mode, RX_MODES.join(", ")),
            );
        }
        if !TX_MODES.contains(&self.tx_mode.as_str()) {
            return bad(
                "tx_mode",
                format!("{:?}: one of {}", self.tx_mode, TX_MODES.join(", ")),
            );
        }
        int("tx_buffer_stride", self.tx_buffer_stride, 64, 1 << 20)?;
        int(
            "tbuf_bytes",
            self.tbuf_bytes as u64,
            self.element_bytes as u64,
            1 << 24,
        )?;
        // The smallest frame the MAC sends (60 B before the FCS); iperf's needs its header and
        // its own 16-byte header in the payload.
        let min = if self.iperf || self.tx_mode != "frame" || self.rx_mode != "frame" {
            IPERF_MIN_FRAME
        } else {
            14
        };
        int(
            "frame_bytes",
            self.frame_bytes as u64,
            min,
            self.tx_buffer_stride.min(self.tbuf_bytes as u64),
        )?;
        int("parse_cycles", self.parse_cycles as u64, 0, 1_000_000)?;
        real("sram_ns", self.sram_ns, 0.0, 1e6)?;
        real("scratch_ns", self.scratch_ns, 0.0, 1e6)?;
        int("source_frames", self.source_frames, 0, MAX_SOURCE_FRAMES)?;
        int("rx_posted_ahead", self.rx_posted_ahead, 0, self.ring as u64)?;
        for (k, v) in [
            ("rx_ring", self.rx_ring),
            ("rx_buffers", self.rx_buffers),
            ("tx_ring", self.tx_ring),
            ("tx_buffers", self.tx_buffers),
        ] {
            if v % 64 != 0 {
                return bad(k, format!("{v:#x}: must be aligned to a 64 B line"));
            }
        }
        Ok(())
    }

    /// RBUF elements, and the elements a frame of `len` bytes takes.
    pub fn elements(&self) -> u32 {
        self.rbuf_bytes / self.element_bytes
    }

    pub fn elements_for(&self, len: usize) -> u32 {
        (len as u32).div_ceil(self.element_bytes).max(1)
    }
}
