//! Ethernet II / IPv4 / UDP frames: parsing with every check a receiver must make (lengths,
//! header checksum, UDP checksum), and building headers for transmission.
//!
//! Only what the onload engine needs: IPv4 without fragments (a fragment is reported, not
//! reassembled), UDP, no VLAN tags. Checksums are the Internet checksum of RFC 1071 (a
//! one's-complement sum of 16-bit words), with the UDP pseudo-header of RFC 768; a UDP checksum
//! of zero means "not computed" (allowed in IPv4) and is accepted.
use std::net::{Ipv4Addr, SocketAddrV4};

/// Bytes of an Ethernet II header (destination MAC, source MAC, EtherType).
pub const ETH_HDR: usize = 14;
/// Bytes of an IPv4 header without options.
pub const IPV4_HDR: usize = 20;
/// Bytes of a UDP header.
pub const UDP_HDR: usize = 8;
/// All headers of a frame this module builds.
pub const HEADERS: usize = ETH_HDR + IPV4_HDR + UDP_HDR;
/// Shortest Ethernet frame without its FCS (shorter frames are padded on the wire).
pub const MIN_FRAME: usize = 60;
/// Largest UDP payload an IPv4 datagram can carry (65535 - 20 - 8).
pub const MAX_UDP_PAYLOAD: usize = 65_507;
const ETHERTYPE_IPV4: u16 = 0x0800;
const PROTO_UDP: u8 = 17;

/// Why a frame was not delivered (each is counted by the engine).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reject {
    /// Shorter than its headers, or than the lengths its headers claim.
    Truncated,
    /// Longer than the configured largest frame.
    Oversized,
    /// Not IPv4, not UDP, an IPv4 fragment, or not addressed to this host: not ours to handle.
    NotOurs,
    /// A length or version field is inconsistent (IHL < 5, UDP length < 8 or beyond the IP datagram).
    Malformed,
    /// The IPv4 header checksum does not verify.
    BadIpChecksum,
    /// The UDP checksum does not verify.
    BadUdpChecksum,
}

/// A parsed, verified UDP datagram inside a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram {
    pub src: SocketAddrV4,
    pub dst: SocketAddrV4,
    /// Offset of the payload in the frame.
    pub payload_offset: usize,
    /// Payload bytes.
    pub payload_len: usize,
}

/// Add the 16-bit big-endian words of `data` to a running one's-complement sum (not folded).
pub fn sum_words(data: &[u8], mut acc: u64) -> u64 {
    // Eight bytes at a time: the carries accumulate in the upper half of a u64 and fold later
    // (the one's-complement sum is independent of the word grouping, RFC 1071 section 2).
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        let (s, carry) = acc.overflowing_add(w);
        acc = s + carry as u64;
    }
    let rest = chunks.remainder();
    let mut i = 0;
    while i + 1 < rest.len() {
        acc = add_carry(acc, u16::from_be_bytes([rest[i], rest[i + 1]]) as u64);
        i += 2;
    }
    if i < rest.len() {
        acc = add_carry(acc, (rest[i] as u64) << 8);
    }
    acc
}

fn add_carry(a: u64, b: u64) -> u64 {
    let (s, c) = a.overflowing_add(b);
    s + c as u64
}

/// Fold a running sum to 16 bits (one's complement addition of the halves).
pub fn fold(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The Internet checksum of `data` (the value to store in a checksum field).
pub fn checksum(data: &[u8]) -> u16 {
    !fold(sum_words(data, 0))
}

fn pseudo_header_sum(src: Ipv4Addr, dst: Ipv4Addr, udp_len: usize) -> u64 {
    let s = src.octets();
    let d = dst.octets();
    let mut acc = 0u64;
    for w in [
        u16::from_be_bytes([s[0], s[1]]),
        u16::from_be_bytes([s[2], s[3]]),
        u16::from_be_bytes([d[0], d[1]]),
        u16::from_be_bytes([d[2], d[3]]),
        PROTO_UDP as u16,
        udp_len as u16,
    ] {
        acc += w as u64;
    }
    acc
}

/// The UDP checksum of `udp` (header + payload, with its checksum field taken as it is) between
/// `src` and `dst`: zero over a segment whose stored checksum is right, after folding.
fn udp_sum(src: Ipv4Addr, dst: Ipv4Addr, udp: &[u8]) -> u16 {
    fold(sum_words(udp, pseudo_header_sum(src, dst, udp.len())))
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Parse and verify `frame` (no FCS). `local` limits delivery to one IPv4 address (None: any);
/// `max_frame` is the largest frame accepted. Checks, in order: length, EtherType, IPv4 header
/// (version, IHL, total length, checksum), fragments, protocol, destination, UDP length and checksum.
pub fn parse(frame: &[u8], max_frame: usize, local: Option<Ipv4Addr>) -> Result<Datagram, Reject> {
    if frame.len() > max_frame {
        return Err(Reject::Oversized);
    }
    if frame.len() < ETH_HDR + IPV4_HDR {
        return Err(Reject::Truncated);
    }
    if be16(frame, 12) != ETHERTYPE_IPV4 {
        return Err(Reject::NotOurs);
    }
    let ip = &frame[ETH_HDR..];
    if ip[0] >> 4 != 4 {
        return Err(Reject::NotOurs);
    }
    let ihl = (ip[0] & 0x0f) as usize * 4;
    if ihl < IPV4_HDR {
        return Err(Reject::Malformed);
    }
    let total = be16(ip, 2) as usize;
    if ip.len() < ihl || ip.len() < total {
        return Err(Reject::Truncated);
    }
    if total < ihl || (ip[9] == PROTO_UDP && total < ihl + UDP_HDR) {
        return Err(Reject::Malformed);
    }
    if fold(sum_words(&ip[..ihl], 0)) != 0xffff {
        return Err(Reject::BadIpChecksum);
    }
    let flags_frag = be16(ip, 6);
    if flags_frag & 0x3fff != 0 {
        // More-fragments set or a non-zero offset: reassembly is not supported.
        return Err(Reject::NotOurs);
    }
    if ip[9] != PROTO_UDP {
        return Err(Reject::NotOurs);
    }
    let src_ip = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst_ip = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    if local.is_some_and(|l| l != dst_ip) {
        return Err(Reject::NotOurs);
    }
    let udp = &ip[ihl..total];
    let udp_len = be16(udp, 4) as usize;
    if udp_len < UDP_HDR || udp_len > udp.len() {
        return Err(Reject::Malformed);
    }
    let udp = &udp[..udp_len];
    if be16(udp, 6) != 0 && udp_sum(src_ip, dst_ip, udp) != 0xffff {
        return Err(Reject::BadUdpChecksum);
    }
    Ok(Datagram {
        src: SocketAddrV4::new(src_ip, be16(udp, 0)),
        dst: SocketAddrV4::new(dst_ip, be16(udp, 2)),
        payload_offset: ETH_HDR + ihl + UDP_HDR,
        payload_len: udp_len - UDP_HDR,
    })
}

/// Parse headers only, trusting the checksums (the host side of the softnic, whose frames the
/// engine has verified). Same result as [`parse`] on a frame that passes it.
pub fn parse_trusted(frame: &[u8]) -> Option<Datagram> {
    if frame.len() < HEADERS {
        return None;
    }
    let ip = &frame[ETH_HDR..];
    let ihl = (ip[0] & 0x0f) as usize * 4;
    let udp = ip.get(ihl..ihl + UDP_HDR)?;
    let udp_len = be16(udp, 4) as usize;
    Some(Datagram {
        src: SocketAddrV4::new(Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]), be16(udp, 0)),
        dst: SocketAddrV4::new(Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]), be16(udp, 2)),
        payload_offset: ETH_HDR + ihl + UDP_HDR,
        payload_len: udp_len.checked_sub(UDP_HDR)?,
    })
}

/// Addresses of a UDP flow as the transmitter writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src: SocketAddrV4,
    pub dst: SocketAddrV4,
}

/// Length of the frame carrying `payload_len` bytes (headers + payload, padded to 60 bytes).
pub fn frame_len(payload_len: usize) -> usize {
    (HEADERS + payload_len).max(MIN_FRAME)
}

/// Write the Ethernet, IPv4 and UDP headers for a payload of `payload_len` bytes into
/// `frame[..HEADERS]` and zero any padding; the payload must then be written at
/// `frame[HEADERS..]` and [`finish_udp_checksum`] called. The IPv4 header checksum is complete.
/// `frame` must hold [`frame_len`]`(payload_len)` bytes and `payload_len <= MAX_UDP_PAYLOAD`.
pub fn write_headers(frame: &mut [u8], flow: &Flow, payload_len: usize, ip_id: u16) {
    debug_assert!(payload_len <= MAX_UDP_PAYLOAD && frame.len() >= frame_len(payload_len));
    frame[0..6].copy_from_slice(&flow.dst_mac);
    frame[6..12].copy_from_slice(&flow.src_mac);
    frame[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let total = (IPV4_HDR + UDP_HDR + payload_len) as u16;
    let ip = &mut frame[ETH_HDR..ETH_HDR + IPV4_HDR];
    ip[0] = 0x45; // version 4, IHL 5
    ip[1] = 0;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[4..6].copy_from_slice(&ip_id.to_be_bytes());
    ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes()); // don't fragment
    ip[8] = 64; // TTL
    ip[9] = PROTO_UDP;
    ip[10..12].fill(0);
    ip[12..16].copy_from_slice(&flow.src.ip().octets());
    ip[16..20].copy_from_slice(&flow.dst.ip().octets());
    let c = checksum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let udp = &mut frame[ETH_HDR + IPV4_HDR..HEADERS];
    udp[0..2].copy_from_slice(&flow.src.port().to_be_bytes());
    udp[2..4].copy_from_slice(&flow.dst.port().to_be_bytes());
    udp[4..6].copy_from_slice(&((UDP_HDR + payload_len) as u16).to_be_bytes());
    udp[6..8].fill(0);
    let end = frame_len(payload_len);
    frame[HEADERS + payload_len..end].fill(0);
}

/// Compute and store the UDP checksum of a frame built by [`write_headers`] whose payload
/// (`payload_len` bytes at `HEADERS`) is in place.
pub fn finish_udp_checksum(frame: &mut [u8], flow: &Flow, payload_len: usize) {
    let udp = &mut frame[ETH_HDR + IPV4_HDR..HEADERS + payload_len];
    udp[6..8].fill(0);
    let mut c = !udp_sum(*flow.src.ip(), *flow.dst.ip(), udp);
    if c == 0 {
        c = 0xffff; // zero would mean "no checksum" (RFC 768)
    }
    udp[6..8].copy_from_slice(&c.to_be_bytes());
}

/// Compute and store the UDP checksum of a frame whose headers came from [`write_headers`],
/// taking the addresses and length from the headers themselves (the softnic's small core).
/// Does nothing to a frame too short to hold its headers.
pub fn fill_udp_checksum(frame: &mut [u8]) {
    if frame.len() < HEADERS {
        return;
    }
    let ip = &frame[ETH_HDR..ETH_HDR + IPV4_HDR];
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let udp_len = be16(frame, ETH_HDR + IPV4_HDR + 4) as usize;
    let Some(udp) = frame.get_mut(ETH_HDR + IPV4_HDR..ETH_HDR + IPV4_HDR + udp_len) else {
        return;
    };
    udp[6..8].fill(0);
    let mut c = !udp_sum(src, dst, udp);
    if c == 0 {
        c = 0xffff;
    }
    udp[6..8].copy_from_slice(&c.to_be_bytes());
}

/// A complete frame carrying `payload` (headers, payload, checksums, padding).
pub fn build(flow: &Flow, payload: &[u8], ip_id: u16) -> Vec<u8> {
    let mut f = vec![0u8; frame_len(payload.len())];
    write_headers(&mut f, flow, payload.len(), ip_id);
    f[HEADERS..HEADERS + payload.len()].copy_from_slice(payload);
    finish_udp_checksum(&mut f, flow, payload.len());
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    pub(crate) fn flow() -> Flow {
        Flow {
            src_mac: [2, 0, 0, 0, 0, 2],
            dst_mac: [2, 0, 0, 0, 0, 1],
            src: SocketAddrV4::new(Ipv4Addr::new(10, 77, 0, 2), 40_000),
            dst: SocketAddrV4::new(Ipv4Addr::new(10, 77, 0, 1), 9000),
        }
    }

    /// The RFC 1071 reference: one 16-bit word at a time with end-around carry.
    fn reference_checksum(data: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for c in data.chunks(2) {
            let w = if c.len() == 2 {
                u16::from_be_bytes([c[0], c[1]])
            } else {
                (c[0] as u16) << 8
            };
            sum += w as u32;
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    #[test]
    fn rfc1071_example_and_reference() {
        // RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2.
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum_words(&d, 0)), 0xddf2);
        assert_eq!(checksum(&d), !0xddf2);
    }

    #[test]
    fn builds_frames_that_parse_back() {
        for n in [0usize, 1, 17, 18, 1472, 8972] {
            let payload: Vec<u8> = (0..n).map(|i| (i * 13 + 5) as u8).collect();
            let f = build(&flow(), &payload, 7);
            assert_eq!(f.len(), frame_len(n));
            let d = parse(&f, 9018, Some(Ipv4Addr::new(10, 77, 0, 1))).expect("valid frame");
            assert_eq!(d.src, flow().src);
            assert_eq!(d.dst, flow().dst);
            assert_eq!(
                &f[d.payload_offset..d.payload_offset + d.payload_len],
                &payload[..]
            );
            assert_eq!(parse_trusted(&f), Some(d));
            let mut g = f.clone();
            g[HEADERS - 2..HEADERS].fill(0x55);
            fill_udp_checksum(&mut g);
            assert_eq!(g, f);
        }
    }

    #[test]
    fn each_fault_is_named() {
        let f = build(&flow(), &[9u8; 100], 1);
        let any = None;
        // Oversized and truncated.
        assert_eq!(parse(&f, f.len() - 1, any), Err(Reject::Oversized));
        assert_eq!(parse(&f[..30], 9018, any), Err(Reject::Truncated));
        assert_eq!(parse(&f[..f.len() - 1], 9018, any), Err(Reject::Truncated));
        // Bad IP checksum, bad UDP checksum (payload byte flipped).
        let mut g = f.clone();
        g[ETH_HDR + 8] ^= 1; // TTL changes: the header checksum no longer matches
        assert_eq!(parse(&g, 9018, any), Err(Reject::BadIpChecksum));
        let mut g = f.clone();
        g[HEADERS + 50] ^= 0x40;
        assert_eq!(parse(&g, 9018, any), Err(Reject::BadUdpChecksum));
        // Zero UDP checksum: accepted even with a changed payload.
        let mut g = f.clone();
        g[HEADERS - 2..HEADERS].fill(0);
        g[HEADERS + 50] ^= 0x40;
        assert!(parse(&g, 9018, any).is_ok());
        // Not IPv4; not for this host.
        let mut g = f.clone();
        g[12] = 0x86;
        g[13] = 0xdd;
        assert_eq!(parse(&g, 9018, any), Err(Reject::NotOurs));
        assert_eq!(
            parse(&f, 9018, Some(Ipv4Addr::new(10, 0, 0, 9))),
            Err(Reject::NotOurs)
        );
        // UDP length beyond the datagram.
        let mut g = f.clone();
        let bad = 200u16.to_be_bytes();
        g[ETH_HDR + IPV4_HDR + 4..ETH_HDR + IPV4_HDR + 6].copy_from_slice(&bad);
        assert_eq!(parse(&g, 9018, any), Err(Reject::Malformed));
    }

    proptest! {
        #[test]
        fn sum_matches_reference(data in proptest::collection::vec(any::<u8>(), 0..3000)) {
            prop_assert_eq!(checksum(&data), reference_checksum(&data));
        }

        /// Any single bit flip in the IP header or UDP segment of a valid frame is rejected
        /// (the Internet checksum detects every single-bit error), and never yields a datagram
        /// with a different payload.
        #[test]
        fn single_bit_flips_are_caught(n in 0usize..600, bit in any::<usize>()) {
            let payload: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
            let f = build(&flow(), &payload, 3);
            let span = (IPV4_HDR + UDP_HDR + n) * 8;
            let b = bit % span;
            let mut g = f.clone();
            g[ETH_HDR + b / 8] ^= 1 << (b % 8);
            // A flip that zeroes the UDP checksum field turns checking off (legal in IPv4).
            prop_assume!(g[HEADERS - 2..HEADERS] != [0, 0]);
            prop_assert!(parse(&g, 9018, None).is_err());
        }

        /// Parsing arbitrary bytes never panics.
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse(&data, 9018, None);
            let _ = parse_trusted(&data);
        }
    }
}
