//! Engine tests on the replay source: random frame streams against a sequential model, faults,
//! wake-ups, transmit, process_vm_writev delivery, the softnic pool and shutdown in flight.
//! Every delivered payload is compared byte for byte with what was sent.
use super::engine::{Delivery, OnloadConfig, OnloadEngine};
use super::frame::{self, Flow};
use super::pattern;
use super::softnic::SoftnicHost;
use super::source_replay::{ReplayConfig, ReplaySource};
use super::{Access, OnloadError};
use proptest::prelude::*;
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LOCAL: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
const PEER: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);

fn config() -> OnloadConfig {
    OnloadConfig {
        max_payload: 2000,
        idle_spin_us: 50,
        nap_us: 50,
        wait_spin_us: 20,
        ring_capacity: 256,
        ..Default::default()
    }
}

fn flow(port: u16) -> Flow {
    Flow {
        src_mac: [2, 0, 0, 0, 0, 2],
        dst_mac: [2, 0, 0, 0, 0, 1],
        src: SocketAddrV4::new(PEER, 40_000),
        dst: SocketAddrV4::new(LOCAL, port),
    }
}

/// What a generated frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Good,
    BadIp,
    BadUdp,
    Truncated,
    Oversized,
    NotIpv4,
    OtherHost,
}

fn make_frame(kind: Kind, port: u16, seq: u64, len: usize) -> Vec<u8> {
    let payload = pattern::make(seq, len);
    let mut f = frame::build(&flow(port), &payload, seq as u16);
    match kind {
        Kind::Good => {}
        Kind::BadIp => f[frame::ETH_HDR + 10] ^= 0x10,
        Kind::BadUdp => {
            let at = frame::HEADERS - 1;
            f[at] ^= 0x01;
            if f[at - 1] == 0 && f[at] == 0 {
                // Never a zero ("no checksum") field; the sum was 0x0001, so 0x0002 (not 0x0001,
                // which is the valid checksum again).
                f[at] = 2;
            }
        }
        Kind::Truncated => {
            let keep = (frame::HEADERS + len) / 2;
            f.truncate(keep.max(10));
        }
        Kind::Oversized => {
            f = frame::build(&flow(port), &pattern::make(seq, 2001), 0);
        }
        Kind::NotIpv4 => f[12] = 0x86,
        Kind::OtherHost => {
            let mut fl = flow(port);
            fl.dst = SocketAddrV4::new(Ipv4Addr::new(10, 77, 0, 99), port);
            f = frame::build(&fl, &payload, 0);
        }
    }
    f
}

fn replay(frames: Vec<Vec<u8>>, gated: bool) -> (ReplaySource, super::ReplayHandle) {
    let n = frames.len() as u64;
    let src = ReplaySource::new(
        Arc::new(frames),
        ReplayConfig {
            count: n,
            gated,
            capture_tx: 64,
            ..Default::default()
        },
    )
    .unwrap();
    let h = src.handle();
    (src, h)
}

fn wait_until(what: &str, f: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

#[derive(Debug, Clone)]
struct Case {
    /// (kind, port index, payload length) per frame.
    frames: Vec<(Kind, usize, usize)>,
    /// Posted buffer sizes per socket (sockets are ports 7000, 7001, 7002; 7003 is unbound).
    posted: Vec<Vec<usize>>,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        6 => Just(Kind::Good),
        1 => Just(Kind::BadIp),
        1 => Just(Kind::BadUdp),
        1 => Just(Kind::Truncated),
        1 => Just(Kind::Oversized),
        1 => Just(Kind::NotIpv4),
        1 => Just(Kind::OtherHost),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec((kind(), 0usize..4, 0usize..1500), 1..120),
        proptest::collection::vec(proptest::collection::vec(1usize..1600, 0..40), 3),
    )
        .prop_map(|(frames, posted)| Case { frames, posted })
}

/// Run a case on the engine and compare every outcome with a sequential model.
fn run_case(c: &Case) {
    let frames: Vec<Vec<u8>> = c
        .frames
        .iter()
        .enumerate()
        .map(|(i, &(k, p, len))| make_frame(k, 7000 + p as u16, i as u64, len))
        .collect();
    let (src, h) = replay(frames, true);
    let eng = OnloadEngine::start(config(), Box::new(src)).unwrap();
    let socks: Vec<_> = (0..3).map(|i| eng.bind(7000 + i).unwrap()).collect();
    for (s, sizes) in socks.iter().zip(&c.posted) {
        for &n in sizes {
            s.post(vec![0xEEu8; n]).unwrap();
        }
    }
    h.go();
    let n = c.frames.len() as u64;
    wait_until("the replay", || h.finished() && eng.stats().frames == n);
    // The model: per socket, a queue of posted sizes; each datagram takes the head buffer, and
    // a buffer smaller than the payload gets the payload's first bytes (flagged truncated).
    let mut queues: Vec<std::collections::VecDeque<usize>> = c
        .posted
        .iter()
        .map(|v| v.iter().copied().collect())
        .collect();
    let mut want: Vec<Vec<(u64, usize, usize, usize)>> = vec![Vec::new(); 3];
    let mut counts: HashMap<&str, u64> = HashMap::new();
    for (i, &(k, p, len)) in c.frames.iter().enumerate() {
        let key = match k {
            Kind::Good if p == 3 => "unbound",
            Kind::Good => match queues[p].pop_front() {
                None => "no_buffer",
                Some(cap) => {
                    if cap < len {
                        *counts.entry("too_small").or_default() += 1;
                    }
                    want[p].push((i as u64, len.min(cap), len, cap));
                    "delivered"
                }
            },
            Kind::BadIp => "bad_ip",
            Kind::BadUdp => "bad_udp",
            Kind::Truncated => "truncated",
            Kind::Oversized => "oversized",
            Kind::NotIpv4 | Kind::OtherHost => "not_ours",
        };
        *counts.entry(key).or_default() += 1;
    }
    let st = eng.stats();
    let got = |k: &str| counts.get(k).copied().unwrap_or(0);
    // Every frame is either delivered (whole or cut short) or dropped, once.
    assert_eq!(st.delivered + st.dropped(), st.frames, "{st:?}");
    assert_eq!(st.delivered, got("delivered"), "{st:?}");
    assert_eq!(st.unbound_port, got("unbound"));
    assert_eq!(st.no_buffer, got("no_buffer"));
    assert_eq!(st.too_small, got("too_small"));
    assert_eq!(st.bad_ip_checksum, got("bad_ip"));
    assert_eq!(st.bad_udp_checksum, got("bad_udp"));
    // A truncated frame may have lost its whole IP header (then it is too short to parse).
    assert_eq!(st.truncated + st.malformed, got("truncated"));
    assert_eq!(st.oversized, got("oversized"));
    assert_eq!(st.not_ours, got("not_ours"));
    for (p, s) in socks.iter().enumerate() {
        let mut delivered = Vec::new();
        while let Some(d) = s.try_recv() {
            assert!(d.ok);
            let truncated = d.truncated();
            let buf = d.buf.expect("owned buffer returned");
            let seq = want[p][delivered.len()].0;
            assert!(
                pattern::matches(&buf[..d.len], seq),
                "payload {seq} corrupted"
            );
            // Bytes beyond the payload are untouched.
            assert!(buf[d.len..].iter().all(|&b| b == 0xEE));
            assert_eq!(d.from, SocketAddrV4::new(PEER, 40_000));
            assert_eq!(truncated, d.datagram_len > d.len);
            delivered.push((seq, d.len, d.datagram_len, buf.len()));
        }
        assert_eq!(delivered, want[p], "socket {p}");
    }
    let report = eng.shutdown().unwrap();
    assert!(report.error.is_none());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn random_frame_streams_match_the_model(c in case()) {
        run_case(&c);
    }
}

/// A posted buffer smaller than the datagram takes the payload's first bytes and is handed back
/// flagged as truncated; it never blocks the buffers posted after it.
#[test]
fn a_too_small_buffer_truncates_and_never_blocks_later_buffers() {
    let good = |n: usize, len: usize| vec![(Kind::Good, 0usize, len); n];
    // The audit's case: one 1-byte buffer then five of 2048 B, a hundred 64-byte datagrams.
    let mut one_then_five = vec![1];
    one_then_five.extend([2048; 5]);
    run_case(&Case {
        frames: good(100, 64),
        posted: vec![one_then_five, vec![], vec![]],
    });
    // Several small buffers in a row, then good ones, small ones again.
    run_case(&Case {
        frames: good(12, 64),
        posted: vec![vec![1, 3, 8, 63, 64, 2048, 9, 2048], vec![], vec![]],
    });
    // Mixed payload and buffer sizes on two sockets.
    let frames: Vec<_> = (0..40)
        .map(|i| (Kind::Good, i % 2, [10, 64, 700, 1472][i % 4]))
        .collect();
    run_case(&Case {
        frames,
        posted: vec![
            vec![1472, 9, 700, 64, 699, 1, 2048, 65, 1471, 10],
            vec![64, 1, 1472, 1472, 63, 2, 701, 8, 9],
            vec![],
        ],
    });
}

#[test]
fn every_fault_is_counted_and_never_delivered() {
    let kinds = [
        Kind::BadIp,
        Kind::BadUdp,
        Kind::Truncated,
        Kind::Oversized,
        Kind::NotIpv4,
        Kind::OtherHost,
    ];
    let mut frames: Vec<(Kind, usize, usize)> = kinds.iter().map(|&k| (k, 0, 100)).collect();
    frames.push((Kind::Good, 3, 100)); // unbound port
    frames.push((Kind::Good, 0, 100)); // delivered
    frames.push((Kind::Good, 0, 100)); // no buffer left
    run_case(&Case {
        frames,
        posted: vec![vec![200; 1], vec![], vec![]],
    });
}

#[test]
fn blocking_receive_is_woken_by_the_engine() {
    let frames: Vec<Vec<u8>> = (0..5)
        .map(|i| make_frame(Kind::Good, 7000, i, 64))
        .collect();
    let src = ReplaySource::new(
        Arc::new(frames),
        ReplayConfig {
            count: 5,
            rate_mbps: 0.4, // (88 + 24) * 8 bits at 0.4 Mb/s: one frame every 2.24 ms
            gated: true,
            ..Default::default()
        },
    )
    .unwrap();
    let h = src.handle();
    let eng = OnloadEngine::start(
        OnloadConfig {
            wait_spin_us: 0,
            ..config()
        },
        Box::new(src),
    )
    .unwrap();
    let s = eng.bind(7000).unwrap();
    for _ in 0..5 {
        s.post(vec![0; 64]).unwrap();
    }
    h.go();
    for seq in 0..5 {
        let d = s
            .recv(Some(Duration::from_secs(10)))
            .unwrap()
            .expect("a datagram");
        assert!(pattern::matches(d.payload(), seq));
        assert!(crate::sys::now_ns() >= d.arrival_ns);
    }
    // The receiver slept between frames 2 ms apart: the engine had to wake it.
    assert!(s.stats().wakeups >= 1, "{:?}", s.stats());
    // Nothing posted any more: a blocking receive is an error, not a hang.
    assert!(matches!(s.recv(None), Err(OnloadError::InvalidArgument(_))));
    // A timeout returns None.
    s.post(vec![0; 8]).unwrap();
    assert!(s.recv(Some(Duration::from_millis(5))).unwrap().is_none());
}

#[test]
fn transmit_builds_valid_frames() {
    let (src, h) = replay(vec![], false);
    let eng = OnloadEngine::start(config(), Box::new(src)).unwrap();
    let s = eng.bind(5555).unwrap();
    let to = SocketAddrV4::new(PEER, 6000);
    for (seq, len) in [(0u64, 0usize), (1, 1), (2, 18), (3, 1472), (4, 2000)] {
        s.send(&pattern::make(seq, len), to).unwrap();
    }
    let e = s.send(&[0u8; 2001], to).unwrap_err();
    assert!(e.to_string().contains("2001"), "{e}");
    assert!(s.send(&[1], SocketAddrV4::new(PEER, 0)).is_err());
    let frames = h.captured();
    assert_eq!(frames.len(), 5);
    for (seq, f) in frames.iter().enumerate() {
        let d = frame::parse(f, 4000, Some(PEER)).expect("valid frame");
        assert_eq!(d.src, SocketAddrV4::new(LOCAL, 5555));
        assert_eq!(d.dst, to);
        assert_eq!(&f[0..6], &config().peer_mac);
        let p = &f[d.payload_offset..d.payload_offset + d.payload_len];
        assert!(pattern::matches(p, seq as u64));
    }
    // Asynchronous sends complete with their tags.
    let data = pattern::make(9, 100);
    // SAFETY: `data` outlives the wait below.
    unsafe { s.send_raw(data.as_ptr(), data.len(), to, 77).unwrap() };
    let c = s.wait_sent(Some(Duration::from_secs(10))).unwrap().unwrap();
    assert_eq!((c.tag, c.ok), (77, true));
    // The counters are published after each burst: they may trail the completions briefly.
    wait_until("the transmit counters", || eng.stats().tx_frames == 6);
}

#[test]
fn process_vm_writev_delivery_when_permitted() {
    let frames: Vec<Vec<u8>> = (0..20)
        .map(|i| make_frame(Kind::Good, 7000, i, 300))
        .collect();
    let (src, h) = replay(frames, true);
    let eng = OnloadEngine::start(config(), Box::new(src)).unwrap();
    let pid = std::process::id() as i32;
    let s = eng.bind_with(7000, Access::VmWritev { pid }).unwrap();
    let mut bufs = vec![vec![0u8; 300]; 20];
    for (i, b) in bufs.iter_mut().enumerate() {
        // SAFETY: the buffers outlive the socket's use of them (received below, before drop).
        unsafe { s.post_raw(b.as_mut_ptr(), b.len(), i as u64).unwrap() };
    }
    h.go();
    let mut got = 0;
    while got < 20 {
        let c = s
            .recv_raw(Some(Duration::from_secs(10)))
            .unwrap()
            .expect("completion");
        if !c.ok {
            eprintln!("skipped: process_vm_writev is not permitted here");
            return;
        }
        assert_eq!(c.tag, got);
        got += 1;
    }
    s.close();
    for (i, b) in bufs.iter().enumerate() {
        assert!(pattern::matches(b, i as u64));
    }
}

#[test]
fn softnic_pool_delivers_through_the_host_stack() {
    let frames: Vec<Vec<u8>> = (0..50)
        .map(|i| {
            let k = if i % 10 == 3 {
                Kind::BadUdp
            } else {
                Kind::Good
            };
            let port = if i % 10 == 7 { 7001 } else { 7000 };
            make_frame(k, port, i, 100 + i as usize)
        })
        .collect();
    let (src, h) = replay(frames, true);
    let eng = OnloadEngine::start(
        OnloadConfig {
            delivery: Delivery::Pool { buffers: 64 },
            ..config()
        },
        Box::new(src),
    )
    .unwrap();
    assert!(
        eng.bind(7000).is_err(),
        "a pool engine does not demultiplex"
    );
    let mut host = SoftnicHost::new(eng.pool().unwrap(), Duration::from_micros(20));
    host.bind(7000).unwrap();
    for _ in 0..50 {
        host.post(7000, vec![0u8; 200]).unwrap();
    }
    h.go();
    let mut seqs = Vec::new();
    while let Some(d) = host.recv(Some(Duration::from_millis(300))) {
        let seq = pattern::seq_of(&d.buf).unwrap();
        assert!(pattern::matches(&d.buf[..d.len], seq));
        assert_eq!(d.len, 100 + seq as usize);
        seqs.push(seq);
    }
    let want: Vec<u64> = (0..50).filter(|i| i % 10 != 3 && i % 10 != 7).collect();
    assert_eq!(seqs, want);
    assert_eq!(eng.stats().bad_udp_checksum, 5);
    assert_eq!(host.stats().unbound_port, 5);
    // Transmit: the host writes headers and payload, the engine checksums and sends.
    let out = Flow {
        src_mac: config().local_mac,
        dst_mac: config().peer_mac,
        src: SocketAddrV4::new(LOCAL, 7000),
        dst: SocketAddrV4::new(PEER, 6000),
    };
    for seq in 0..3u64 {
        host.send(
            &out,
            &pattern::make(seq, 10 + 500 * seq as usize),
            seq as u16,
        )
        .unwrap();
    }
    wait_until("softnic transmit", || h.transmitted().0 == 3);
    for (seq, f) in h.captured().iter().enumerate() {
        let d = frame::parse(f, 4000, Some(PEER)).expect("valid frame with its checksum");
        assert_eq!(d.dst, out.dst);
        let p = &f[d.payload_offset..d.payload_offset + d.payload_len];
        assert!(pattern::matches(p, seq as u64));
    }
}

#[test]
fn shutdown_with_packets_in_flight_is_clean() {
    let frames: Vec<Vec<u8>> = (0..64)
        .map(|i| make_frame(Kind::Good, 7000, i, 1000))
        .collect();
    let src = ReplaySource::new(
        Arc::new(frames),
        ReplayConfig {
            count: 1 << 30,
            rate_mbps: 2000.0,
            ..Default::default()
        },
    )
    .unwrap();
    let eng = OnloadEngine::start(config(), Box::new(src)).unwrap();
    let s = eng.bind(7000).unwrap();
    let mut received = 0u64;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(100) {
        while s.posted() < 64 {
            s.post(vec![0u8; 1000]).unwrap();
        }
        while let Some(d) = s.try_recv() {
            let seq = pattern::seq_of(d.payload()).unwrap();
            assert!(pattern::matches(d.payload(), seq));
            received += 1;
        }
    }
    // Queue sends too, then stop with frames arriving, buffers posted and sends queued.
    let data = pattern::make(5, 500);
    for i in 0..10 {
        // SAFETY: `data` outlives the engine (shut down below, which completes every send).
        unsafe {
            s.send_raw(data.as_ptr(), data.len(), SocketAddrV4::new(PEER, 9), i)
                .unwrap()
        };
    }
    let report = eng.shutdown().unwrap();
    assert!(report.error.is_none());
    assert_eq!(
        report.stats.tx_frames, 10,
        "queued sends complete at shutdown"
    );
    while let Some(d) = s.try_recv() {
        let seq = pattern::seq_of(d.payload()).unwrap();
        assert!(pattern::matches(d.payload(), seq));
        received += 1;
    }
    assert_eq!(received, report.stats.delivered);
    assert!(received > 0);
    // After the stop, blocking calls fail at once instead of hanging.
    assert!(matches!(s.post(vec![0; 10]), Err(OnloadError::Stopped(_))));
    assert!(s.recv(None).is_err());
    let mut sent = 0;
    while s.try_sent().is_some() {
        sent += 1;
    }
    assert_eq!(sent, 10);
}

#[test]
fn bad_arguments_are_named() {
    let (src, _h) = replay(vec![], false);
    let eng = OnloadEngine::start(config(), Box::new(src)).unwrap();
    assert!(eng.bind(0).err().unwrap().to_string().contains("port"));
    let s = eng.bind(80).unwrap();
    assert_eq!(eng.bind(80).err(), Some(OnloadError::PortInUse(80)));
    assert!(s.post(vec![]).unwrap_err().to_string().contains("buf"));
    // The ring bounds outstanding posts.
    for _ in 0..s.capacity() {
        s.post(vec![0; 1]).unwrap();
    }
    assert!(matches!(
        s.post(vec![0; 1]),
        Err(OnloadError::RingFull { .. })
    ));
    drop(s);
    // Closing unbinds: the port can be bound again.
    let _again = eng.bind(80).unwrap();
    for bad in [
        OnloadConfig {
            burst: 0,
            ..config()
        },
        OnloadConfig {
            max_payload: 70_000,
            ..config()
        },
        OnloadConfig {
            ring_capacity: 1,
            ..config()
        },
        OnloadConfig {
            cpu: Some(4096),
            ..config()
        },
    ] {
        let (src, _h) = replay(vec![], false);
        let e = OnloadEngine::start(bad, Box::new(src)).err().unwrap();
        assert!(matches!(e, OnloadError::InvalidArgument(_)), "{e}");
    }
}

#[test]
fn a_closed_socket_refuses_a_blocking_receive() {
    // A buffer posted, then the socket closed: closing released the buffer, so nothing can
    // arrive and a receive without a timeout must fail at once, not wait forever.
    let (src, _h) = replay(vec![], false);
    let eng = OnloadEngine::start(config(), Box::new(src)).unwrap();
    let s = eng.bind(81).unwrap();
    s.post(vec![0; 2048]).unwrap();
    s.close();
    let t0 = Instant::now();
    let e = s.recv_raw(None).unwrap_err();
    assert!(e.to_string().contains("closed"), "{e}");
    assert!(s.recv(Some(Duration::from_secs(5))).is_err());
    assert!(t0.elapsed() < Duration::from_secs(2));
}
