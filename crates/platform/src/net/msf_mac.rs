//! The media switch fabric and a MAC: frames from the wire land in the receive buffer (RBUF),
//! which is divided into elements; a frame needs whole elements and is dropped when too few are
//! free (the small cores are behind). On transmit, frames wait in the TBUF until the MAC has
//! serialised the previous one onto the wire. The wire's time per frame counts the preamble, FCS
//! and inter-frame gap.
use crate::config::network::{MsfConfig, WireConfig};
use crate::net::ethernet_link::frame_wire_ps;
use crate::sim::Ps;

#[derive(Debug, Clone)]
pub struct MsfMac {
    element: u64,
    rbuf_free: u64,
    tbuf_free: u64,
    /// The rate of the MAC and the wire, whichever is slower, Gb/s.
    gbps: f64,
    overhead: u64,
    /// When the transmitting MAC is free.
    tx_free: Ps,
    pub rx_frames: u64,
    pub rx_dropped: u64,
    pub tx_frames: u64,
}

impl MsfMac {
    pub fn new(m: &MsfConfig, w: &WireConfig) -> MsfMac {
        MsfMac {
            element: m.element_bytes,
            rbuf_free: m.rbuf_bytes / m.element_bytes,
            tbuf_free: m.tbuf_bytes / m.element_bytes,
            gbps: m.mac_gbps.min(w.gbps),
            overhead: w.overhead_bytes,
            tx_free: 0,
            rx_frames: 0,
            rx_dropped: 0,
            tx_frames: 0,
        }
    }

    /// Elements a frame of `len` bytes takes.
    pub fn elements(&self, len: usize) -> u64 {
        (len as u64).div_ceil(self.element)
    }

    /// Time a frame of `len` bytes occupies the wire.
    pub fn wire_time(&self, len: usize) -> Ps {
        frame_wire_ps(len, self.gbps, self.overhead)
    }

    /// A frame arrives from the wire: true if it got RBUF elements, false if dropped.
    pub fn receive(&mut self, len: usize) -> bool {
        let need = self.elements(len);
        if need > self.rbuf_free {
            self.rx_dropped += 1;
            return false;
        }
        self.rbuf_free -= need;
        self.rx_frames += 1;
        true
    }

    /// A small core has moved a frame out of the RBUF.
    pub fn release_rbuf(&mut self, len: usize) {
        self.rbuf_free += self.elements(len);
    }

    /// Whether the TBUF has room for a frame of `len` bytes.
    pub fn tbuf_room(&self, len: usize) -> bool {
        self.elements(len) <= self.tbuf_free
    }

    /// A frame enters the TBUF at `now`: returns when the MAC has put its last bit on the wire
    /// (the caller frees the TBUF elements then).
    pub fn transmit(&mut self, now: Ps, len: usize) -> Ps {
        self.tbuf_free -= self.elements(len).min(self.tbuf_free);
        let start = now.max(self.tx_free);
        self.tx_free = start + self.wire_time(len);
        self.tx_frames += 1;
        self.tx_free
    }

    pub fn release_tbuf(&mut self, len: usize) {
        self.tbuf_free += self.elements(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msf() -> MsfMac {
        MsfMac::new(
            &MsfConfig {
                rbuf_bytes: 8192,
                tbuf_bytes: 8192,
                element_bytes: 128,
                macs: 2,
                mac_gbps: 1.0,
            },
            &WireConfig {
                gbps: 1.0,
                overhead_bytes: 24,
                latency_ns: 0.0,
                duration_us: 10.0,
                fin_resend_us: 10.0,
            },
        )
    }

    #[test]
    fn rbuf_fills_by_elements_and_drops() {
        let mut m = msf();
        // 8 KB of 128-byte elements: five 1514-byte frames (12 elements each) fit, a sixth does not.
        for _ in 0..5 {
            assert!(m.receive(1514));
        }
        assert!(!m.receive(1514));
        assert!(m.receive(100), "four elements are left");
        m.release_rbuf(1514);
        assert!(m.receive(1514));
        assert_eq!(m.rx_dropped, 1);
    }

    #[test]
    fn the_mac_serialises_at_line_rate() {
        let mut m = msf();
        // 1514 + 24 bytes at 1 Gb/s = 12.304 us.
        assert_eq!(m.wire_time(1514), 12_304_000);
        let a = m.transmit(0, 1514);
        let b = m.transmit(0, 1514);
        assert_eq!(b - a, 12_304_000);
    }
}
