//! The Ethernet wire: one model of a frame's time on a link, used by every system that puts frames
//! on one (the platform's NIC, the two-host I/O system, the small cores' MAC), and the link
//! component that joins two platforms' ports ([`crate::systems::cluster`]).
//!
//! A frame of `len` bytes (from the destination address to the end of the payload, without the
//! FCS) occupies the wire for `max(len, 60) + overhead` byte times: frames shorter than Ethernet's
//! 64 B minimum are padded to 60 B before the 4 B FCS (IEEE 802.3 clause 3.2.8), and `overhead`
//! counts the FCS, the 8 B preamble and start delimiter and the 12 B inter-frame gap (24 B in
//! all, IEEE 802.3 clauses 3.2.1, 4.4.2). Its last bit reaches the far end `meters x ns_per_meter`
//! later (about 5 ns/m in fiber or copper: signals travel at about 2/3 of c).
//!
//! The link is full duplex: each direction carries its own frames, in the order they were sent.
//! It does not serialise frames itself: the sending port's MAC does (both ends of one link run at
//! one rate, which the link checks); it adds the propagation and checks that frames arrive in
//! order and never overlap on the wire.
use crate::sim::Ps;

/// Bytes on the wire beside a frame: FCS (4), preamble and SFD (8), inter-frame gap (12).
pub const OVERHEAD_BYTES: u64 = 24;
/// The smallest frame before its FCS (64 B with it).
pub const MIN_FRAME: usize = 60;

/// Picoseconds a frame of `len` bytes (without FCS) holds a wire of `gbps` Gb/s, counting the
/// padding of short frames and `overhead` bytes beside it.
pub fn frame_wire_ps(len: usize, gbps: f64, overhead: u64) -> Ps {
    (((len.max(MIN_FRAME) as u64 + overhead) * 8000) as f64 / gbps).round() as Ps
}

/// Propagation delay of a cable, ps.
pub fn propagation_ps(meters: f64, ns_per_meter: f64) -> Ps {
    (meters * ns_per_meter * 1000.0).round() as Ps
}

/// A link's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkParams {
    /// The line rate, Gb/s (both ports run at it).
    pub gbps: f64,
    pub meters: f64,
    pub ns_per_meter: f64,
}

impl LinkParams {
    /// Checks the values, naming the key (under `at`) that is wrong.
    pub fn validate(&self, at: &str) -> Result<(), String> {
        if !self.gbps.is_finite() || !(0.001..=1000.0).contains(&self.gbps) {
            return Err(format!(
                "{at}.gbps = {}: must be in 0.001..=1000",
                self.gbps
            ));
        }
        if !self.meters.is_finite() || !(0.0..=100_000.0).contains(&self.meters) {
            return Err(format!(
                "{at}.meters = {}: must be in 0..=100000",
                self.meters
            ));
        }
        if !self.ns_per_meter.is_finite() || !(0.0..=100.0).contains(&self.ns_per_meter) {
            return Err(format!(
                "{at}.ns_per_meter = {}: must be in 0..=100",
                self.ns_per_meter
            ));
        }
        Ok(())
    }
}

/// One direction's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DirStats {
    pub frames: u64,
    /// Frame bytes (without FCS and padding).
    pub bytes: u64,
    /// Time the wire was busy with frames and their overhead, ps.
    pub busy_ps: u64,
    /// When the last frame's last bit arrived.
    pub last_arrival_ps: u64,
}

/// A full-duplex Ethernet link between two ports (ends 0 and 1).
#[derive(Debug, Clone)]
pub struct EthernetLink {
    pub params: LinkParams,
    prop: Ps,
    /// Per direction (from end 0, from end 1): when the wire is free again at the sender.
    free: [Ps; 2],
    pub stats: [DirStats; 2],
}

/// A frame's passage: when it started on the wire, and when its last bit arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Passage {
    pub start: Ps,
    pub arrive: Ps,
}

impl EthernetLink {
    pub fn new(params: LinkParams) -> EthernetLink {
        EthernetLink {
            prop: propagation_ps(params.meters, params.ns_per_meter),
            params,
            free: [0; 2],
            stats: [DirStats::default(); 2],
        }
    }

    /// Time a frame of `len` bytes holds the wire.
    pub fn wire_ps(&self, len: usize) -> Ps {
        frame_wire_ps(len, self.params.gbps, OVERHEAD_BYTES)
    }

    pub fn propagation_ps(&self) -> Ps {
        self.prop
    }

    /// The frame of `len` bytes whose last bit the port at end `from` sent at `sent` (its MAC
    /// serialised it at the link's rate). Errors if it would overlap the previous frame in that
    /// direction: a port that sends faster than the line rate.
    pub fn carry(&mut self, from: usize, sent: Ps, len: usize) -> Result<Passage, String> {
        let d = from.min(1);
        let wire = self.wire_ps(len);
        let start = sent.saturating_sub(wire);
        if start + 1 < self.free[d] {
            return Err(format!(
                "a {len} B frame from end {from} started at {start} ps, before the previous one \
                 left the wire at {} ps: the port sends faster than the link's {} Gb/s",
                self.free[d], self.params.gbps
            ));
        }
        self.free[d] = sent;
        let arrive = sent + self.prop;
        let s = &mut self.stats[d];
        s.frames += 1;
        s.bytes += len as u64;
        s.busy_ps += wire;
        s.last_arrival_ps = arrive;
        Ok(Passage { start, arrive })
    }

    /// The share of `span` ps the direction from end `from` was busy.
    pub fn utilisation(&self, from: usize, span: Ps) -> f64 {
        if span == 0 {
            0.0
        } else {
            self.stats[from.min(1)].busy_ps as f64 / span as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minimum_frame_takes_84_byte_times() {
        // 64 B with FCS + 8 preamble + 12 gap: 67.2 ns at 10 Gb/s.
        assert_eq!(frame_wire_ps(60, 10.0, OVERHEAD_BYTES), 67_200);
        assert_eq!(frame_wire_ps(14, 10.0, OVERHEAD_BYTES), 67_200);
        // A full 1514 B frame: 1538 byte times, 1230.4 ns.
        assert_eq!(frame_wire_ps(1514, 10.0, OVERHEAD_BYTES), 1_230_400);
        // Ten times slower at 1 Gb/s.
        assert_eq!(frame_wire_ps(1514, 1.0, OVERHEAD_BYTES), 12_304_000);
    }

    #[test]
    fn the_link_adds_propagation_and_keeps_order() {
        let mut l = EthernetLink::new(LinkParams {
            gbps: 10.0,
            meters: 3.0,
            ns_per_meter: 5.0,
        });
        let w = l.wire_ps(64);
        let p = l.carry(0, 1_000_000, 64).unwrap();
        assert_eq!(p.arrive, 1_000_000 + 15_000);
        assert_eq!(p.start, 1_000_000 - w);
        // Back to back is fine; overlapping is a port faster than the line.
        assert!(l.carry(0, 1_000_000 + w, 64).is_ok());
        assert!(l.carry(0, 1_000_000 + w + w / 2, 64).is_err());
        // The other direction is independent.
        assert!(l.carry(1, 1_000_000, 64).is_ok());
        assert_eq!(l.stats[0].frames, 2);
        assert_eq!(l.stats[1].frames, 1);
        assert!((l.utilisation(0, 2 * w) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn bad_parameters_are_named() {
        let p = LinkParams {
            gbps: 0.0,
            meters: 1.0,
            ns_per_meter: 5.0,
        };
        assert!(p
            .validate("links[0]")
            .unwrap_err()
            .contains("links[0].gbps"));
        let p = LinkParams {
            gbps: 10.0,
            meters: -1.0,
            ns_per_meter: 5.0,
        };
        assert!(p.validate("links[0]").unwrap_err().contains("meters"));
    }
}
