//! The peer across the wire: iperf in UDP mode. The sender makes fixed-size datagrams, each
//! carrying a sequence number and a payload derived from it, with real IPv4 and UDP headers and
//! checksum; a negative sequence number marks the terminating datagram. The receiver is the
//! independent oracle of every run: it checks each delivered datagram byte for byte (header,
//! sequence order, payload), and measures throughput as iperf does: payload bytes from the first
//! datagram to the terminating one.
use crate::sim::Ps;

/// Ethernet (14) + IPv4 (20) + UDP (8).
pub const HEADER_BYTES: usize = 42;
/// iperf's smallest datagram holds its own header (sequence, time, ...): 16 bytes here.
pub const MIN_PAYLOAD: usize = 16;
/// An Ethernet MTU of 1500 bytes leaves 1472 for the UDP payload.
pub const MAX_PAYLOAD: usize = 1472;
const UDP_PORT: u16 = 5001;

/// The payload byte `i` of datagram `seq`.
fn pattern(seq: i32, i: usize) -> u8 {
    (seq as u32)
        .wrapping_mul(2_654_435_761)
        .wrapping_add(i as u32 * 131)
        .rotate_right(7) as u8
}

/// The 16-bit ones' complement sum of `data` (the Internet checksum, RFC 1071).
pub fn ones_complement(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Builds the frame of datagram `seq` with `payload` bytes.
pub fn datagram(seq: i32, payload: usize) -> Vec<u8> {
    let mut f = vec![0u8; HEADER_BYTES + payload];
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((20 + 8 + payload) as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 0, 0, 2]);
    ip[16..20].copy_from_slice(&[10, 0, 0, 1]);
    let c = ones_complement(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f[34..36].copy_from_slice(&UDP_PORT.to_be_bytes());
    f[36..38].copy_from_slice(&UDP_PORT.to_be_bytes());
    f[38..40].copy_from_slice(&((8 + payload) as u16).to_be_bytes());
    let p = &mut f[HEADER_BYTES..];
    p[0..4].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in p.iter_mut().enumerate().skip(4) {
        *b = pattern(seq, i);
    }
    let c = ones_complement(&udp_checksummed(&f));
    f[40..42].copy_from_slice(&c.to_be_bytes());
    f
}

/// The bytes the UDP checksum covers: the IPv4 pseudo-header (addresses, protocol, UDP length),
/// then the UDP header and payload (RFC 768).
fn udp_checksummed(frame: &[u8]) -> Vec<u8> {
    let udp = &frame[34..];
    let mut v = Vec::with_capacity(12 + udp.len());
    v.extend_from_slice(&frame[26..34]);
    v.extend_from_slice(&[0, 17]);
    v.extend_from_slice(&(udp.len() as u16).to_be_bytes());
    v.extend_from_slice(udp);
    v
}

/// Verifies the IPv4 header checksum and the UDP checksum (with its pseudo-header) of `frame`
/// (what a checksum step checks).
pub fn checksum_ok(frame: &[u8]) -> bool {
    frame.len() >= HEADER_BYTES
        && ones_complement(&frame[14..34]) == 0
        && ones_complement(&udp_checksummed(frame)) == 0
}

/// The sequence number in a payload (the first four bytes).
pub fn seq_of_payload(p: &[u8]) -> Option<i32> {
    Some(i32::from_be_bytes(p.get(0..4)?.try_into().ok()?))
}

/// Whether `frame` is a terminating datagram (a negative sequence number): the counters keep
/// these apart from the data datagrams, since the sender repeats them until one arrives.
pub fn is_fin(frame: &[u8]) -> bool {
    frame
        .get(HEADER_BYTES..)
        .and_then(seq_of_payload)
        .is_some_and(|s| s < 0)
}

/// iperf's client: fixed-size datagrams numbered from 0.
#[derive(Debug, Clone)]
pub struct UdpSender {
    pub payload: usize,
    pub next: i32,
}

impl UdpSender {
    pub fn new(payload: usize) -> UdpSender {
        UdpSender { payload, next: 0 }
    }
    /// The next data datagram's frame.
    pub fn next_frame(&mut self) -> Vec<u8> {
        let f = datagram(self.next, self.payload);
        self.next += 1;
        f
    }
    /// The terminating datagram (sequence -(sent + 1)).
    pub fn fin_frame(&self) -> Vec<u8> {
        datagram(-(self.next + 1), self.payload)
    }
}

/// What the receiver found wrong (a model bug: the run fails).
#[derive(Debug, Clone, PartialEq)]
pub struct Corrupt(pub String);

/// iperf's server with the byte check of every datagram.
#[derive(Debug, Clone, Default)]
pub struct UdpReceiver {
    pub payload: usize,
    pub received: u64,
    pub bytes: u64,
    /// Data datagrams sent and never received (dropped on the way): the gaps between those
    /// received and, once the terminating datagram says how many were sent, those after the
    /// last one received (as iperf's server counts).
    pub lost: u64,
    last: Option<i32>,
    pub first_at: Option<Ps>,
    pub fin_at: Option<Ps>,
}

impl UdpReceiver {
    pub fn new(payload: usize) -> UdpReceiver {
        UdpReceiver {
            payload,
            ..Default::default()
        }
    }

    /// Checks one delivered payload at `now` (sequence in order, every byte as sent).
    pub fn deliver(&mut self, now: Ps, p: &[u8]) -> Result<(), Corrupt> {
        if p.len() != self.payload {
            return Err(Corrupt(format!(
                "a datagram of {} bytes, expected {}",
                p.len(),
                self.payload
            )));
        }
        let seq = seq_of_payload(p).ok_or_else(|| Corrupt("no sequence number".into()))?;
        if let Some(i) = (4..p.len()).find(|&i| p[i] != pattern(seq, i)) {
            return Err(Corrupt(format!(
                "datagram {seq}: payload byte {i} is {:#04x}, sent {:#04x}",
                p[i],
                pattern(seq, i)
            )));
        }
        if seq < 0 {
            if self.fin_at.is_none() {
                self.fin_at = Some(now);
                // The terminating datagram carries -(sent + 1).
                let sent = (-(i64::from(seq)) - 1) as u64;
                let next = self.last.map_or(0, |l| l as u64 + 1);
                if sent < next {
                    return Err(Corrupt(format!(
                        "the terminating datagram says {sent} were sent, but datagram {} arrived",
                        next - 1
                    )));
                }
                self.lost += sent - next;
            }
            return Ok(());
        }
        if self.fin_at.is_some() {
            return Err(Corrupt(format!(
                "datagram {seq} after the terminating datagram"
            )));
        }
        if let Some(l) = self.last {
            if seq <= l {
                return Err(Corrupt(format!(
                    "datagram {seq} after {l}: out of order or duplicated"
                )));
            }
            self.lost += (seq - l - 1) as u64;
        } else {
            self.lost += seq as u64;
            self.first_at.get_or_insert(now);
        }
        self.last = Some(seq);
        self.received += 1;
        self.bytes += p.len() as u64;
        Ok(())
    }

    /// Checks a whole frame (the peer receiving on the wire): checksums, then the payload.
    pub fn deliver_frame(&mut self, now: Ps, f: &[u8]) -> Result<(), Corrupt> {
        if !checksum_ok(f) {
            return Err(Corrupt("a frame with a bad IP or UDP checksum".into()));
        }
        self.deliver(now, &f[HEADER_BYTES..])
    }

    /// Starts the clock at `t` (the first datagram reached the receiving system) unless it runs.
    pub fn start(&mut self, t: Ps) {
        self.first_at.get_or_insert(t);
    }

    /// iperf's figure: payload bits per second from the first datagram to the terminating one,
    /// in Mb/s (None before both arrived).
    pub fn throughput_mbps(&self) -> Option<f64> {
        let (a, b) = (self.first_at?, self.fin_at?);
        (b > a).then(|| self.bytes as f64 * 8.0 / ((b - a) as f64 / 1e6))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_check_and_corruption_is_caught() {
        let mut s = UdpSender::new(100);
        let mut r = UdpReceiver::new(100);
        let a = s.next_frame();
        assert!(checksum_ok(&a));
        r.deliver_frame(1000, &a).unwrap();
        let _dropped = s.next_frame();
        let mut c = s.next_frame();
        c[HEADER_BYTES + 50] ^= 1;
        assert!(!checksum_ok(&c));
        assert!(r.deliver(2000, &c[HEADER_BYTES..]).is_err());
        c[HEADER_BYTES + 50] ^= 1;
        r.deliver_frame(2000, &c).unwrap();
        assert_eq!((r.received, r.lost), (2, 1));
        // A repeat is out of order.
        assert!(r.deliver(2500, &a[HEADER_BYTES..]).is_err());
        // Two more sent and lost: the terminating datagram counts them.
        let _ = (s.next_frame(), s.next_frame());
        r.deliver_frame(3000, &s.fin_frame()).unwrap();
        assert_eq!((r.received, r.lost), (2, 3));
        assert!(is_fin(&s.fin_frame()) && !is_fin(&a));
        // 200 payload bytes from 1,000 ps to 3,000 ps: 1,600 bits in 0.002 us.
        let t = r.throughput_mbps().unwrap();
        assert!((t - 1600.0 / 0.002).abs() < 1e-6, "{t}");
    }
}
