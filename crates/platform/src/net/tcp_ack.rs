//! The TCP receiver's acknowledgements, decided as Linux decides them (`net/ipv4/tcp_input.c`,
//! `net/ipv4/tcp.c`, `net/core/dev.c` of the 2.6.29+ kernels a dual-port 82599 ran under):
//! - **bytes, not segments**: an ACK goes out at once when more than one receive MSS of data is
//!   unacknowledged (`__tcp_ack_snd_check`: `rcv_nxt - rcv_wup > icsk_ack.rcv_mss`; RFC 1122
//!   4.2.3.2's "at least every second full-sized segment"). Generalised here to more than
//!   `ack_every - 1` receive MSS (Linux: `ack_every` = 2);
//! - **the receive MSS is measured** (`tcp_measure_rcv_mss`): it starts at `rcv_mss_initial`
//!   (`tcp_initialize_rcv_mss`: at most `TCP_MSS_DEFAULT`, 536) and a segment at least that long
//!   raises it to its length (at most the advertised MSS, `mss`); a shorter one (the PSH-marked
//!   end of a write: `TCP_REMNANT`) leaves it and marks the ACK "pushed" (`ICSK_ACK_PUSHED`). So
//!   64 B segments are acknowledged once more than 536 B are unacknowledged, every ninth;
//! - **the application's read**: when the reader drains the socket after a poll and a pushed
//!   segment is unacknowledged, `tcp_cleanup_rbuf` acknowledges at once (iperf's receiver is not
//!   ping-pong). Modelled as one read that drains the socket after every poll;
//! - **GRO** (`gro`: Generic Receive Offload, Linux since 2.6.29, `napi_gro_receive` in the
//!   driver's poll): the segments of one poll are merged before TCP sees them
//!   (`tcp_gro_receive`): a segment joins the held packet unless it is longer than the held
//!   packet's segments or the packet would reach 64 KiB; a segment shorter than them (the end of
//!   a write, with PSH) is merged and ends the packet; the poll's end flushes what is held. TCP
//!   then measures the merged packet by its segment size (`gso_size`) and acknowledges it as one.
//!
//! Not modelled: the quick ACKs of a connection's start (`tcp_in_quickack_mode`, at most 16), the
//! delayed-ACK timer (40 ms at least: longer than any run here) and window updates.

/// GRO's limit on a merged packet (`skb_gro_receive`: `-E2BIG` at 64 KiB).
pub const GRO_MAX_BYTES: u64 = 65_536;

/// A TCP receiver's ACK decisions over the data segments it is handed, poll by poll.
#[derive(Debug, Clone)]
pub struct DelayedAck {
    ack_every: u32,
    mss: u32,
    gro: bool,
    rcv_mss: u32,
    /// Payload bytes received and not acknowledged (`rcv_nxt - rcv_wup`).
    unacked: u64,
    /// A short segment is unacknowledged (`ICSK_ACK_PUSHED`).
    pushed: bool,
    owed: u64,
    segments: u64,
    packets: u64,
}

impl DelayedAck {
    /// `ack_every`: acknowledge once more than `ack_every - 1` receive MSS are unacknowledged (0:
    /// never); `rcv_mss_initial`: the receive MSS before any segment raised it; `mss`: the
    /// advertised MSS (its ceiling); `gro`: merge each poll's segments first.
    pub fn new(ack_every: u32, rcv_mss_initial: u32, mss: u32, gro: bool) -> DelayedAck {
        DelayedAck {
            ack_every,
            mss: mss.max(1),
            gro,
            rcv_mss: rcv_mss_initial.clamp(1, mss.max(1)),
            unacked: 0,
            pushed: false,
            owed: 0,
            segments: 0,
            packets: 0,
        }
    }

    /// Whether the receiver acknowledges at all (`ack_every` above 0).
    pub fn acknowledges(&self) -> bool {
        self.ack_every > 0
    }

    /// ACKs decided so far.
    pub fn owed(&self) -> u64 {
        self.owed
    }

    /// Data segments handed in so far.
    pub fn segments(&self) -> u64 {
        self.segments
    }

    /// Packets TCP saw (after GRO's merging): `segments` without GRO.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// The receive MSS as measured now.
    pub fn rcv_mss(&self) -> u32 {
        self.rcv_mss
    }

    /// One poll: the TCP payload bytes of the data segments the driver took, in order (0-byte
    /// entries, pure ACKs, are skipped), then the application's read that drains the socket.
    pub fn poll(&mut self, payloads: &[u32]) {
        // The held GRO packet: (bytes, its segments' size).
        let mut held: Option<(u64, u32)> = None;
        for &p in payloads.iter().filter(|&&p| p > 0) {
            self.segments += 1;
            let short = p < self.mss;
            if !self.gro {
                self.packet(u64::from(p), None);
                continue;
            }
            held = match held {
                Some((len, seg)) if p <= seg && len + u64::from(p) < GRO_MAX_BYTES => {
                    Some((len + u64::from(p), seg))
                }
                Some(h) => {
                    self.flush(h);
                    Some((u64::from(p), p))
                }
                None => Some((u64::from(p), p)),
            };
            // A segment shorter than its packet's (or than the MSS: the PSH end of a write) ends
            // the packet (`tcp_gro_receive`: `flush = len < mss`, and PSH).
            if let Some(h) = held.filter(|&(_, seg)| short || p < seg) {
                self.flush(h);
                held = None;
            }
        }
        if let Some(h) = held {
            self.flush(h);
        }
        if self.ack_every > 0 && self.pushed && self.unacked > 0 {
            // `tcp_cleanup_rbuf`: the read drained the socket with a pushed segment unacknowledged.
            self.ack();
        }
    }

    fn flush(&mut self, (len, seg): (u64, u32)) {
        let merged = len > u64::from(seg);
        self.packet(len, merged.then_some(seg));
    }

    /// TCP takes one packet of `len` payload bytes (`gso`: merged segments of that size).
    fn packet(&mut self, len: u64, gso: Option<u32>) {
        self.packets += 1;
        let measured = gso.map_or(len, u64::from);
        if measured >= u64::from(self.rcv_mss) {
            self.rcv_mss = measured.min(u64::from(self.mss)) as u32;
        } else {
            self.pushed = true;
        }
        self.unacked += len;
        if self.ack_every > 0
            && self.unacked > u64::from(self.ack_every - 1) * u64::from(self.rcv_mss)
        {
            self.ack();
        }
    }

    fn ack(&mut self) {
        self.owed += 1;
        self.unacked = 0;
        self.pushed = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ack: &mut DelayedAck, polls: &[Vec<u32>]) -> u64 {
        for p in polls {
            ack.poll(p);
        }
        ack.owed()
    }

    #[test]
    fn full_sized_segments_are_acknowledged_every_second() {
        let mut a = DelayedAck::new(2, 536, 1448, false);
        // One poll of 100 full-size segments: 50 ACKs, nothing left for the read.
        assert_eq!(run(&mut a, &[vec![1448; 100]]), 50);
        assert_eq!(a.rcv_mss(), 1448);
        assert_eq!(a.packets(), 100);
    }

    #[test]
    fn small_segments_are_acknowledged_by_bytes_and_by_the_read() {
        // 64 B segments leave the receive MSS at 536: an ACK once 9 are in (576 > 536).
        let mut a = DelayedAck::new(2, 536, 1448, false);
        assert_eq!(run(&mut a, &[vec![64; 90]]), 10);
        assert_eq!(a.rcv_mss(), 536);
        // Polls of 4: the read after each acknowledges what is pushed and unacknowledged.
        let mut b = DelayedAck::new(2, 536, 1448, false);
        assert_eq!(run(&mut b, &vec![vec![64; 4]; 20]), 20);
        // Polls of 12: one by bytes (after 9) and one by the read (3 left) each.
        let mut c = DelayedAck::new(2, 536, 1448, false);
        assert_eq!(run(&mut c, &vec![vec![64; 12]; 10]), 20);
        // ack_every moves it: more than 3 x 536 B, every 26th.
        let mut d = DelayedAck::new(4, 536, 1448, false);
        assert_eq!(run(&mut d, &[vec![64; 52]]), 2);
        // ... and the initial receive MSS: 88 (TCP_MIN_MSS) gives every second.
        let mut e = DelayedAck::new(2, 88, 1448, false);
        assert_eq!(run(&mut e, &[vec![64; 90]]), 45);
        // 0: no ACKs at all.
        let mut z = DelayedAck::new(0, 536, 1448, true);
        assert_eq!(run(&mut z, &[vec![64; 90], vec![1448; 10]]), 0);
        assert_eq!(z.segments(), 100);
    }

    #[test]
    fn gro_merges_a_polls_segments_into_one_acknowledged_packet() {
        // 64 KiB writes cut by TSO: 45 full-size segments and a 376 B end.
        let write: Vec<u32> = std::iter::repeat_n(1448, 45).chain([376]).collect();
        // Without GRO: an ACK per two segments (the short end: by the read).
        let mut a = DelayedAck::new(2, 536, 1448, false);
        assert_eq!(run(&mut a, std::slice::from_ref(&write)), 23);
        // With GRO, one poll of the write: the 64 KiB limit cuts it in two packets, 2 ACKs.
        let mut g = DelayedAck::new(2, 536, 1448, true);
        assert_eq!(run(&mut g, std::slice::from_ref(&write)), 2);
        assert_eq!(g.packets(), 2);
        assert_eq!(g.segments(), 46);
        // Polls of 8 segments: a merged packet and an ACK each.
        let polls: Vec<Vec<u32>> = write.chunks(8).map(<[u32]>::to_vec).collect();
        let mut h = DelayedAck::new(2, 536, 1448, true);
        assert_eq!(run(&mut h, &polls), 6);
        // 64 B segments end their writes: GRO merges none of them.
        let mut s = DelayedAck::new(2, 536, 1448, true);
        assert_eq!(run(&mut s, &[vec![64; 90]]), 10);
        assert_eq!(s.packets(), 90);
    }
}
