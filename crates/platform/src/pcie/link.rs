//! A timed PCIe link between a root port and one device: each direction serializes its TLPs and
//! DLLPs one after another at the link's rate, TLPs wait for flow-control credits of their type
//! (posted, non-posted, completion), and the receiver acknowledges TLPs and returns credits with
//! Ack and UpdateFC DLLPs coalesced over the spec's Ack latency interval. Every byte is counted
//! by purpose ([`ByteCount`]). The link knows nothing of what is at either end: the owner hands
//! it TLPs and acts on the [`LinkOut`]s it returns (deliveries and timers).
use crate::config::io::IoConfig;
use crate::pcie::bytes::{ByteCount, Geometry, Purpose};
use crate::sim::{ns, Ps};
use std::collections::VecDeque;

/// The two directions: `Down` is root complex to device, `Up` device to root complex.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Down = 0,
    Up = 1,
}

impl Dir {
    pub fn rev(self) -> Dir {
        match self {
            Dir::Down => Dir::Up,
            Dir::Up => Dir::Down,
        }
    }
}

/// The transaction types of the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlpKind {
    /// Posted memory write to host memory (4 DW header when the link's addresses are 64-bit).
    Write,
    /// Posted memory write to a 32-bit address (a device register, an MSI-X).
    Write32,
    /// Non-posted memory read of `len` bytes of host memory, with a tag.
    Read { len: u32, tag: u16 },
    /// Non-posted read of a device register (a BAR below 4 GB: 3 DW header), with a tag.
    Read32 { len: u32, tag: u16 },
    /// A completion with data for tag `tag`; `last` closes the request.
    Completion { tag: u16, last: bool },
}

/// A TLP: its type, address, data (the real bytes, so deliveries can be checked) and purpose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tlp {
    pub kind: TlpKind,
    pub addr: u64,
    pub data: Vec<u8>,
    pub purpose: Purpose,
}

/// Flow-control classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Posted = 0,
    NonPosted = 1,
    Completion = 2,
}

impl Tlp {
    fn class(&self) -> Class {
        match self.kind {
            TlpKind::Write | TlpKind::Write32 => Class::Posted,
            TlpKind::Read { .. } | TlpKind::Read32 { .. } => Class::NonPosted,
            TlpKind::Completion { .. } => Class::Completion,
        }
    }
    /// Bytes on the wire.
    pub fn wire_bytes(&self, g: &Geometry) -> u32 {
        let n = self.data.len() as u32;
        match self.kind {
            TlpKind::Write => g.write_bytes(n),
            TlpKind::Write32 => g.write32_bytes(n),
            TlpKind::Read { .. } => g.read_request_bytes(),
            TlpKind::Read32 { .. } => g.write32_bytes(0),
            TlpKind::Completion { .. } => g.completion_bytes(n),
        }
    }
    /// Data credits (16 B units).
    fn data_credits(&self) -> u32 {
        (self.data.len() as u32).div_ceil(16)
    }
}

/// Credits a receiver advertises for one class: header and data (16 B units); `None` is
/// infinite (endpoints and root ports usually advertise infinite completion credits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Credits {
    pub hdr: Option<u32>,
    pub data: Option<u32>,
}

/// Parameters of a link beyond its geometry.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkParams {
    pub geometry: Geometry,
    /// Latency from the end of serialization to delivery (PHY pipelines, wires), ps.
    pub latency: Ps,
    /// Ack/UpdateFC coalescing interval, ps.
    pub ack_interval: Ps,
    /// Credits the receiver of each direction advertises: [posted, non-posted, completion].
    pub credits: [Credits; 3],
}

/// What the owner must do after a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkOut {
    /// Hand `tlp` to the receiving end of `dir` at `at`.
    Deliver { dir: Dir, at: Ps, tlp: Tlp },
    /// Call [`Link::timer`] for `dir` at `at` (a coalesced DLLP is due or credits come back).
    Timer { dir: Dir, at: Ps },
}

#[derive(Debug, Clone, Default)]
struct Side {
    /// When the transmitter of this direction is free.
    busy_until: Ps,
    /// Credits in hand for the receiver of this direction: (hdr, data) per class.
    avail: [(Option<u32>, Option<u32>); 3],
    /// TLPs waiting for credits, in order (posted may pass blocked non-posted: one queue per class).
    blocked: [VecDeque<Tlp>; 3],
    /// Credits freed by this direction's receiver, not yet announced (per class).
    freed: [(u32, u32); 3],
    /// When the receiver of this direction owes an Ack / UpdateFC (the DLLP goes the other way).
    ack_due: Option<Ps>,
    fc_due: Option<Ps>,
    /// Credits coming back to this direction's transmitter: (at, class, hdr, data).
    returning: Vec<(Ps, usize, u32, u32)>,
    bytes: ByteCount,
    /// Wire time used, ps.
    busy_ps: Ps,
}

/// One link: two directions.
#[derive(Debug, Clone)]
pub struct Link {
    pub p: LinkParams,
    sides: [Side; 2],
}

impl Link {
    pub fn new(p: LinkParams) -> Link {
        let mut s = Side::default();
        for c in 0..3 {
            s.avail[c] = (p.credits[c].hdr, p.credits[c].data);
        }
        Link {
            sides: [s.clone(), s],
            p,
        }
    }

    /// Bytes serialized in `dir` so far.
    pub fn bytes(&self, dir: Dir) -> &ByteCount {
        &self.sides[dir as usize].bytes
    }

    /// Picoseconds of wire time used in `dir`.
    pub fn busy_ps(&self, dir: Dir) -> Ps {
        self.sides[dir as usize].busy_ps
    }

    /// TLPs waiting for credits.
    pub fn blocked(&self) -> usize {
        self.sides
            .iter()
            .map(|s| s.blocked.iter().map(|q| q.len()).sum::<usize>())
            .sum()
    }

    /// Sends `tlp` in `dir` at `now` (or as soon as credits allow).
    pub fn send(&mut self, dir: Dir, now: Ps, tlp: Tlp, out: &mut Vec<LinkOut>) {
        let c = tlp.class() as usize;
        let side = &mut self.sides[dir as usize];
        if side.blocked[c].is_empty() && Self::take(side, c, &tlp) {
            self.transmit(dir, now, tlp, out);
        } else {
            side.blocked[c].push_back(tlp);
        }
    }

    fn take(side: &mut Side, c: usize, tlp: &Tlp) -> bool {
        let (h, d) = side.avail[c];
        let need_d = tlp.data_credits();
        let ok = h.is_none_or(|h| h >= 1) && d.is_none_or(|d| d >= need_d);
        if ok {
            side.avail[c] = (h.map(|h| h - 1), d.map(|d| d - need_d));
        }
        ok
    }

    fn transmit(&mut self, dir: Dir, now: Ps, tlp: Tlp, out: &mut Vec<LinkOut>) {
        let g = self.p.geometry;
        let wire = tlp.wire_bytes(&g);
        let t = g.wire_ps(wire as u64);
        let side = &mut self.sides[dir as usize];
        let start = now.max(side.busy_until);
        side.busy_until = start + t;
        side.busy_ps += t;
        side.bytes.add_tlp(tlp.purpose, tlp.data.len() as u32, wire);
        let at = start + t + self.p.latency;
        // The receiver frees the buffer on arrival: an Ack and (for finite classes) an
        // UpdateFC become due one coalescing interval after the first unacknowledged TLP.
        let c = tlp.class() as usize;
        let finite = self.p.credits[c].hdr.is_some() || self.p.credits[c].data.is_some();
        let due = at + self.p.ack_interval;
        if side.ack_due.is_none() {
            side.ack_due = Some(due);
            out.push(LinkOut::Timer { dir, at: due });
        }
        if finite {
            side.freed[c].0 += 1;
            side.freed[c].1 += tlp.data_credits();
            if side.fc_due.is_none() {
                side.fc_due = Some(due);
                out.push(LinkOut::Timer { dir, at: due });
            }
        }
        out.push(LinkOut::Deliver { dir, at, tlp });
    }

    /// Serializes one DLLP in `dir` at `now`; returns when it arrives.
    fn dllp(&mut self, dir: Dir, now: Ps) -> Ps {
        let g = self.p.geometry;
        let t = g.wire_ps(crate::pcie::bytes::DLLP_BYTES as u64);
        let side = &mut self.sides[dir as usize];
        let start = now.max(side.busy_until);
        side.busy_until = start + t;
        side.busy_ps += t;
        side.bytes.add_dllp();
        start + t + self.p.latency
    }

    /// A timer of `dir` is due: send the Ack / UpdateFC that the receiver of `dir` owes (on the
    /// reverse direction), return credits that arrived, and release blocked TLPs.
    pub fn timer(&mut self, dir: Dir, now: Ps, out: &mut Vec<LinkOut>) {
        let d = dir as usize;
        if self.sides[d].ack_due.is_some_and(|t| t <= now) {
            self.sides[d].ack_due = None;
            self.dllp(dir.rev(), now);
        }
        if self.sides[d].fc_due.is_some_and(|t| t <= now) {
            self.sides[d].fc_due = None;
            let back = self.dllp(dir.rev(), now);
            for c in 0..3 {
                let (h, dd) = std::mem::take(&mut self.sides[d].freed[c]);
                if h > 0 || dd > 0 {
                    self.sides[d].returning.push((back, c, h, dd));
                }
            }
            out.push(LinkOut::Timer { dir, at: back });
        }
        let side = &mut self.sides[d];
        let mut i = 0;
        while i < side.returning.len() {
            let (t, c, h, dd) = side.returning[i];
            if t <= now {
                let (ah, ad) = side.avail[c];
                side.avail[c] = (ah.map(|x| x + h), ad.map(|x| x + dd));
                side.returning.swap_remove(i);
            } else {
                i += 1;
            }
        }
        for c in 0..3 {
            loop {
                let side = &mut self.sides[d];
                let Some(front) = side.blocked[c].front() else {
                    break;
                };
                let front = front.clone();
                if !Self::take(side, c, &front) {
                    break;
                }
                side.blocked[c].pop_front();
                self.transmit(dir, now, front, out);
            }
        }
    }

    /// Nothing queued or owed.
    pub fn idle(&self) -> bool {
        self.blocked() == 0
            && self
                .sides
                .iter()
                .all(|s| s.ack_due.is_none() && s.fc_due.is_none() && s.returning.is_empty())
    }
}

impl IoConfig {
    /// The link's parameters (geometry, latency, ACK interval, credits), from `[link]`.
    pub fn link_params(&self) -> LinkParams {
        let g = self.geometry();
        let l = &self.link;
        LinkParams {
            geometry: g,
            latency: ns(l.latency_ns),
            ack_interval: if l.ack_ns > 0.0 {
                ns(l.ack_ns)
            } else {
                g.ack_interval_ps()
            },
            credits: [
                Credits {
                    hdr: Some(l.posted_hdr_credits),
                    data: Some(l.posted_data_credits),
                },
                Credits {
                    hdr: Some(l.nonposted_hdr_credits),
                    data: None,
                },
                Credits {
                    hdr: None,
                    data: None,
                },
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcie::bytes::CompletionMode;

    pub(crate) fn params(gen: u8, posted_hdr: Option<u32>) -> LinkParams {
        let geometry = Geometry {
            gen,
            lanes: 8,
            mps: 256,
            mrrs: 512,
            rcb: 64,
            completions: CompletionMode::Rcb,
            addr64: true,
            ecrc: false,
            skp: false,
        };
        LinkParams {
            geometry,
            latency: 0,
            ack_interval: geometry.ack_interval_ps(),
            credits: [
                Credits {
                    hdr: posted_hdr,
                    data: None,
                },
                Credits {
                    hdr: Some(32),
                    data: None,
                },
                Credits {
                    hdr: None,
                    data: None,
                },
            ],
        }
    }

    fn w(n: usize) -> Tlp {
        Tlp {
            kind: TlpKind::Write,
            addr: 0,
            data: vec![7; n],
            purpose: Purpose::Payload,
        }
    }

    /// Runs the link's timers to the end; returns deliveries in order.
    fn drain(l: &mut Link, mut out: Vec<LinkOut>) -> Vec<(Dir, Ps, Tlp)> {
        let mut got = Vec::new();
        let mut timers: Vec<(Ps, Dir)> = Vec::new();
        loop {
            for o in out.drain(..) {
                match o {
                    LinkOut::Deliver { dir, at, tlp } => got.push((dir, at, tlp)),
                    LinkOut::Timer { dir, at } => timers.push((at, dir)),
                }
            }
            timers.sort_by_key(|t| std::cmp::Reverse(t.0));
            match timers.pop() {
                Some((at, dir)) => l.timer(dir, at, &mut out),
                None => break,
            }
        }
        got
    }

    #[test]
    fn back_to_back_tlps_serialize() {
        let mut l = Link::new(params(1, None));
        let mut out = Vec::new();
        l.send(Dir::Up, 0, w(64), &mut out);
        l.send(Dir::Up, 0, w(64), &mut out);
        let got = drain(&mut l, out);
        // 88 B each at 2 B/ns.
        assert_eq!(got[0].1, 44_000);
        assert_eq!(got[1].1, 88_000);
        // One Ack and one UpdateFC (posted credits are finite? no: infinite here) -> one Ack.
        assert_eq!(l.bytes(Dir::Down).dllps, 1);
        assert_eq!(l.bytes(Dir::Up).total(), 176);
        assert!(l.idle());
    }

    #[test]
    fn credits_throttle_and_come_back_with_updatefc() {
        // Two posted header credits: the third write waits for an UpdateFC.
        let mut l = Link::new(params(1, Some(2)));
        let mut out = Vec::new();
        for _ in 0..3 {
            l.send(Dir::Up, 0, w(64), &mut out);
        }
        let got = drain(&mut l, out);
        assert_eq!(got.len(), 3);
        let ack = params(1, None).ack_interval;
        // The first arrives at 44 ns; at 44 ns + interval the Ack then the UpdateFC go down
        // (4 ns each); the credits are back when the UpdateFC arrives.
        assert_eq!(got[2].1, 44_000 + ack + 8_000 + 44_000);
        assert!(l.bytes(Dir::Down).dllps >= 2);
    }

    #[test]
    fn delivery_keeps_order_and_bytes() {
        let mut l = Link::new(params(2, Some(4)));
        let mut out = Vec::new();
        let mut sent = 0u64;
        for i in 0..50 {
            let t = w(1 + (i * 37) % 300);
            sent += t.wire_bytes(&l.p.geometry) as u64;
            l.send(Dir::Up, (i as u64) * 5_000, t, &mut out);
        }
        let got = drain(&mut l, out);
        assert_eq!(got.len(), 50);
        for (i, (_, _, t)) in got.iter().enumerate() {
            assert_eq!(t.data.len(), 1 + (i * 37) % 300);
        }
        assert!(got.windows(2).all(|p| p[0].1 <= p[1].1));
        let b = l.bytes(Dir::Up);
        assert_eq!(b.total(), sent);
    }
}
