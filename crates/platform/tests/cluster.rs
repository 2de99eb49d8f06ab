//! Platforms joined by an Ethernet link: Larsen & Lee's two hosts as two `larsen-io` platforms on
//! one wire, the sender running the transmit driver, the receiver the receive driver. Every frame
//! that lands is checked byte for byte against the frames that came off the wire.
use movelab_platform::config::io::IoConfig;
use movelab_platform::config::platform::PlatformConfig;
use movelab_platform::experiments::larsen_idma;
use movelab_platform::systems::cluster::{self, ClusterStats, End, LinkSpec};
use movelab_platform::{Platform, Workload};
use std::collections::BTreeMap;

const RECEIVER: &str = "[io]\nrx_ring = 0x1100_0000\nrx_buffers = 0x3000_0000\n";

fn platform(over: &str) -> Platform {
    on("larsen-io", over)
}

fn on(preset: &str, over: &str) -> Platform {
    let base = PlatformConfig::preset(preset).expect("preset");
    let cfg = if over.is_empty() {
        base
    } else {
        base.with_overrides(toml::Value::Table(over.parse().expect("toml")), "test")
            .expect("overrides")
    };
    let mut p = Platform::new(&cfg).expect("platform");
    p.sys.track_values();
    p
}

fn params(s: &str) -> BTreeMap<String, u64> {
    s.split(',')
        .filter(|x| !x.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("k=v");
            (k.to_string(), v.parse().expect("number"))
        })
        .collect()
}

fn link(meters: f64) -> LinkSpec {
    LinkSpec {
        a: End {
            host: 0,
            agent: "nic".into(),
        },
        b: End {
            host: 1,
            agent: "nic".into(),
        },
        meters,
        ns_per_meter: 5.0,
        gbps: None,
    }
}

/// Runs `tx` on a sender and `rx` on a receiver joined by `l`.
fn pair(tx: &str, rx: &str, sender: &str, receiver: &str, l: LinkSpec) -> ClusterStats {
    let mut ps = vec![platform(sender), platform(receiver)];
    let progs = vec![
        vec![Workload::load("nic-tx", &params(tx)).expect("nic-tx")],
        vec![Workload::load("nic-rx", &params(rx)).expect("nic-rx")],
    ];
    cluster::run(&mut ps, &progs, &[l], &mut |_| {}).expect("cluster run")
}

fn checked(s: &ClusterStats, frames: u64, bytes: u64) {
    let tx = &s.hosts[0].devices[0];
    let rx = &s.hosts[1].devices[0];
    assert_eq!(tx.frames, frames, "frames sent: {tx:?}");
    assert_eq!(tx.stale_lines, 0, "the sender read a stale payload line");
    assert_eq!(s.links[0].a_to_b.frames, frames);
    assert_eq!(rx.rx_frames_in, frames, "frames in: {rx:?}");
    assert_eq!(rx.nic.rx_frames, frames, "frames landed: {:?}", rx.nic);
    assert_eq!(rx.rx_bytes_checked, frames * bytes, "bytes checked: {rx:?}");
    assert_eq!(
        rx.rx_bytes_wrong, 0,
        "received bytes differ from the frames sent"
    );
    assert!(rx.interrupts >= 1, "the receiver took no interrupt");
}

#[test]
fn two_hosts_on_one_wire_deliver_every_frame_checked() {
    for (frame, n) in [(64u64, 8u64), (1000, 6), (1514, 5)] {
        let over = format!("[io]\nframe_bytes = {frame}\n");
        let s = pair(
            &format!("messages={n}"),
            "",
            &over,
            &format!("{RECEIVER}frame_bytes = {frame}\n"),
            link(3.0),
        );
        checked(&s, n, frame);
        // Every frame's last bit arrives one propagation after it left the wire's far end.
        for &(dir, start, arrive) in &s.links[0].passages {
            assert_eq!(dir, 0);
            assert!(arrive > start, "{start} {arrive}");
        }
    }
}

#[test]
fn back_to_back_frames_fill_the_wire_in_order() {
    // No gap between messages: the sender's MAC sends frames back to back; the link checks that
    // none overlaps the one before and the receiver that they land in order.
    let s = pair(
        "messages=40,gap=0",
        "buffers=64",
        "[io]\nframe_bytes = 1514\n",
        &format!("{RECEIVER}frame_bytes = 1514\n"),
        link(3.0),
    );
    checked(&s, 40, 1514);
    let p = &s.links[0].passages;
    for w in p.windows(2) {
        assert!(
            w[1].1 >= w[0].2 - 15.0 - 1e-6,
            "frames overlap on the wire: {w:?}"
        );
    }
}

#[test]
fn the_cable_moves_arrival_by_its_propagation() {
    let run = |m: f64| pair("messages=2", "", "", RECEIVER, link(m));
    let near = run(1.0);
    let far = run(201.0);
    checked(&near, 2, 64);
    checked(&far, 2, 64);
    // The sender is the same; the first frame arrives 200 m x 5 ns/m = 1 us later.
    let a = near.links[0].passages[0];
    let b = far.links[0].passages[0];
    assert!((b.1 - a.1).abs() < 1e-6, "the sender changed: {a:?} {b:?}");
    assert!(((b.2 - a.2) - 1000.0).abs() < 1e-6, "{a:?} {b:?}");
    // And the receiver's run ends that much later.
    let d = far.hosts[1].time_ns - near.hosts[1].time_ns;
    assert!(d > 900.0, "receiver time moved by {d} ns");
}

#[test]
fn a_frame_with_no_rx_buffer_waits_and_the_run_ends() {
    // The receiver posts 2 buffers and its handler re-posts one per frame: all frames land.
    let s = pair("messages=6", "buffers=2", "", RECEIVER, link(3.0));
    checked(&s, 6, 64);
    // A receiver with no RX ring: the frames reach its NIC and stay there; nothing hangs.
    let mut ps = vec![platform(""), platform("")];
    let progs = vec![
        vec![Workload::load("nic-tx", &params("messages=3")).unwrap()],
        vec![Workload::load("nic-tx", &params("messages=0")).unwrap()],
    ];
    let s = cluster::run(&mut ps, &progs, &[link(3.0)], &mut |_| {}).expect("run");
    assert_eq!(s.hosts[1].devices[0].rx_frames_in, 3);
    assert_eq!(s.hosts[1].devices[0].nic.rx_frames, 0);
}

#[test]
fn bad_links_are_refused_naming_what_is_wrong() {
    let progs = || {
        vec![
            vec![Workload::load("nic-tx", &params("messages=1")).unwrap()],
            vec![Workload::load("nic-rx", &params("")).unwrap()],
        ]
    };
    let err = |over: &str, l: LinkSpec| {
        let mut ps = vec![platform(""), platform(over)];
        cluster::run(&mut ps, &progs(), &[l], &mut |_| {})
            .unwrap_err()
            .to_string()
    };
    let mut l = link(3.0);
    l.b.agent = "dma".into();
    let e = err(RECEIVER, l);
    assert!(
        e.contains("links[0].b") && e.contains("no agent named 'dma'"),
        "{e}"
    );
    let mut l = link(3.0);
    l.b.host = 5;
    assert!(err(RECEIVER, l).contains("host 5 does not exist"));
    let e = err(&format!("{RECEIVER}loopback = true\n"), link(3.0));
    assert!(e.contains("loopback"), "{e}");
    let e = err(&format!("{RECEIVER}[io.nic]\nmac_gbps = 1.0\n"), link(3.0));
    assert!(e.contains("one rate"), "{e}");
    let e = err(RECEIVER, link(-1.0));
    assert!(e.contains("links[0].meters"), "{e}");
    let mut l = link(3.0);
    l.gbps = Some(40.0);
    assert!(err(RECEIVER, l).contains("links[0].gbps"));
}

#[test]
fn the_idma_sends_and_receives_on_a_link_beside_a_nic() {
    // iDMA to iDMA, NIC to iDMA and iDMA to NIC: every frame lands checked.
    for (a, b) in [
        ("larsen-io-idma", "larsen-io-idma"),
        ("larsen-io", "larsen-io-idma"),
        ("larsen-io-idma", "larsen-io"),
    ] {
        let mut ps = vec![on(a, ""), on(b, "")];
        let progs = vec![
            vec![Workload::load("nic-tx", &params("messages=6,gap=2000")).unwrap()],
            vec![Workload::load("nic-rx", &params("buffers=8")).unwrap()],
        ];
        let mut l = link(3.0);
        l.a.agent = String::new();
        l.b.agent = String::new();
        let s = cluster::run(&mut ps, &progs, &[l], &mut |_| {})
            .unwrap_or_else(|e| panic!("{a} -> {b}: {e}"));
        let tx = &s.hosts[0].devices[0];
        let rx = &s.hosts[1].devices[0];
        assert_eq!(tx.frames, 6, "{a} -> {b}: {tx:?}");
        assert_eq!(s.links[0].a_to_b.frames, 6);
        assert_eq!(rx.rx_frames_in, 6, "{a} -> {b}");
        assert_eq!(rx.rx_bytes_checked, 6 * 64, "{a} -> {b}: {rx:?}");
        assert_eq!(rx.rx_bytes_wrong, 0, "{a} -> {b}");
    }
}

fn no_overrides() -> toml::Value {
    toml::Value::Table(Default::default())
}

/// The bandwidth platform's stream (the 82599 on Gen2 x8, both ports at 20 Gb/s).
fn bw_stream(sender: &str, sends: u64, send: u32, gap: u64) -> ClusterStats {
    larsen_idma::cluster_stream(
        sender,
        sender,
        &no_overrides(),
        larsen_idma::BW_IO,
        20.0,
        &toml::Table::new(),
        &toml::Table::new(),
        sends,
        send,
        gap,
        false,
    )
    .expect("stream")
}

#[test]
fn a_64kb_send_leaves_as_one_tso_chain_and_its_segments_land_checked() {
    let io = IoConfig::preset(larsen_idma::BW_IO).expect("preset");
    let send = larsen_idma::large_send(&io);
    let segs = larsen_idma::segments(&io, send);
    let (hdr, mss) = (u64::from(io.driver.header_bytes), u64::from(io.driver.mss));
    assert_eq!(segs, 65_536u64.div_ceil(mss));
    let sends = 2;
    let s = bw_stream("larsen-io", sends, send, 0);
    let tx = &s.hosts[0].devices[0];
    let rx = &s.hosts[1].devices[0];
    // One doorbell and one packet per send: a context descriptor and a data descriptor per 4 KB
    // page of the (page-aligned) buffer, fetched once and written back once.
    assert_eq!(tx.nic.doorbells, sends, "{:?}", tx.nic);
    assert_eq!(tx.nic.tx_packets, sends);
    let descs = sends * (1 + u64::from(send).div_ceil(4096));
    assert_eq!(tx.nic.tx_desc_fetched, descs, "{:?}", tx.nic);
    assert_eq!(tx.nic.tx_desc_written_back, descs);
    // Segments: the header repeated on each, MSS of payload but the last.
    assert_eq!(tx.frames, sends * segs);
    assert_eq!(tx.frame_bytes, sends * (65_536 + segs * hdr));
    assert_eq!(
        s.links[0].a_to_b.bytes,
        sends * (65_536 + segs * hdr),
        "the wire carried other bytes"
    );
    // Each frame the MAC took is the piece of its send segmentation cuts; each landed as it left.
    assert_eq!(tx.tx_bytes_checked, tx.frame_bytes);
    assert_eq!(tx.tx_bytes_wrong, 0, "a segment differs from its send");
    assert_eq!(rx.rx_bytes_checked, tx.frame_bytes);
    assert_eq!(rx.rx_bytes_wrong, 0);
    assert_eq!(rx.nic.rx_frames, sends * segs);
    assert_eq!(hdr + mss, 1514, "full-size frames");
}

#[test]
fn tso_moves_less_descriptor_traffic_than_full_size_frames_of_the_same_payload() {
    let io = IoConfig::preset(larsen_idma::BW_IO).expect("preset");
    let send = larsen_idma::large_send(&io);
    let segs = larsen_idma::segments(&io, send);
    let tso = bw_stream("larsen-io", 2, send, 0);
    let frames = bw_stream(
        "larsen-io",
        2 * segs,
        io.driver.header_bytes + io.driver.mss,
        0,
    );
    let (a, _, _) = larsen_idma::device_shares(&tso.hosts[0].devices[0]);
    let (b, _, _) = larsen_idma::device_shares(&frames.hosts[0].devices[0]);
    assert!(a < b / 5.0, "TSO share {a} against per-frame {b}");
}

#[test]
fn the_receiver_posts_its_ring_with_one_tail_write_and_refills_in_batches() {
    let io = IoConfig::preset(larsen_idma::BW_IO).expect("preset");
    assert!(io.driver.rx_post_all);
    let batch = u64::from(io.driver.rx_refill_batch);
    let n = 200;
    let s = bw_stream("larsen-io", n, 64, 10_000);
    let rx = &s.hosts[1].devices[0];
    assert_eq!(rx.nic.rx_frames, n);
    // One tail write for the ring up front; then at most one per `batch` frames cleaned, and
    // the handler's stores below a batch skipped.
    assert!(
        rx.nic.doorbells >= 2,
        "the handler never refilled: {:?}",
        rx.nic
    );
    assert!(rx.nic.doorbells <= 1 + n / batch, "{:?}", rx.nic);
    assert!(rx.rx_tail_skipped + rx.nic.doorbells > 1);
    // Write-backs one per frame (RX WTHRESH 1), interrupts moderated (fewer than frames).
    assert_eq!(rx.nic.rx_desc_written_back, n);
    assert!(rx.interrupts < n / 2, "{} interrupts", rx.interrupts);
}

#[test]
fn a_send_longer_than_a_frame_is_refused_without_tso_and_by_the_idma() {
    let io = IoConfig::preset(larsen_idma::BW_IO).expect("preset");
    let send = larsen_idma::large_send(&io);
    let t = toml::Table::new();
    let e = larsen_idma::cluster_stream(
        "larsen-io-idma",
        "larsen-io-idma",
        &no_overrides(),
        larsen_idma::BW_IO,
        20.0,
        &t,
        &t,
        1,
        send,
        0,
        false,
    )
    .expect_err("the iDMA does not segment")
    .to_string();
    assert!(e.contains("frame_bytes"), "{e}");
    // A NIC whose driver does not use TSO: a send longer than a jumbo frame is refused.
    let dir = std::env::temp_dir().join(format!("movelab-no-tso-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("no-tso.toml");
    std::fs::write(
        &file,
        "preset = \"larsen-82598-gen1\"\nname = \"no-tso\"\n[driver]\ntso = false\n",
    )
    .expect("write");
    for (tso, bytes) in [(true, 70_000u32), (false, 20_000)] {
        let mut c = PlatformConfig::preset("larsen-io").expect("preset");
        let io = c.io.as_mut().expect("io");
        if !tso {
            io.preset = file.display().to_string();
        }
        io.frame_bytes = bytes;
        io.tx_buffer_stride = 73_728;
        let e = Platform::new(&c).err().expect("refused").to_string();
        assert!(e.contains("frame_bytes"), "{e}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_tcp_stream_of_frames_without_payload_is_refused_not_run() {
    // Frames no longer than the headers carry no TCP payload: with ACKs such a stream once ran
    // without end; it is refused by name before any simulation.
    let t = toml::Table::new();
    let hdr = IoConfig::preset("larsen-82598-gen1")
        .expect("preset")
        .driver
        .header_bytes;
    let stream = |send: u32| {
        larsen_idma::cluster_stream(
            "larsen-io",
            "larsen-io",
            &no_overrides(),
            "larsen-82598-gen1",
            10.0,
            &t,
            &t,
            1,
            send,
            0,
            true,
        )
    };
    for send in [64, hdr] {
        let e = stream(send).expect_err("no payload").to_string();
        assert!(
            e.contains("driver.header_bytes") && e.contains(&format!("{send} B")),
            "{e}"
        );
    }
    // One byte of payload runs (and is checked byte for byte).
    stream(hdr + 1).expect("one byte of payload");
}

#[test]
fn a_receiver_with_nothing_to_acknowledge_sends_nothing() {
    // The stream the experiment refuses up front (frames of 64 B, no TCP payload after the
    // headers, with the receiver's ACKs on), run on the cluster directly: the receiver has no
    // data to acknowledge, so each tail store of its handler is skipped (no doorbell); it once
    // sent a data frame there, whose completion interrupted it again, a loop only the cluster's
    // guard stopped. A stream with data (frames longer than the headers) is acknowledged.
    let run = |frame: u32| {
        let host = || {
            let mut c = PlatformConfig::preset("larsen-io").expect("preset");
            c.io.as_mut().expect("[io]").frame_bytes = frame;
            Platform::new(&c).expect("platform")
        };
        let mut ps = vec![host(), host()];
        let progs = vec![
            vec![
                Workload::load("nic-tx", &params("messages=4,gap=0,rx_post=1,acks_rx=1"))
                    .expect("nic-tx"),
            ],
            vec![Workload::load("nic-rx", &params("buffers=4,acks=32")).expect("nic-rx")],
        ];
        let s = cluster::run(
            &mut ps,
            &progs,
            &[LinkSpec::between(0, 1, 3.0, 5.0)],
            &mut |_| {},
        )
        .unwrap_or_else(|e| panic!("{frame} B: {e}"));
        let nic = |h: usize| {
            s.hosts[h]
                .agents
                .iter()
                .find_map(|a| a.device.clone())
                .expect("a NIC")
        };
        (nic(0), nic(1))
    };
    let (tx, rx) = run(64);
    assert_eq!(rx.acks_sent, 0, "{rx:?}");
    assert_eq!(rx.nic.tx_packets, 0, "the receiver sent frames: {rx:?}");
    assert!(rx.ack_tail_skipped > 0, "{rx:?}");
    assert_eq!(tx.nic.tx_packets, 4, "{tx:?}");
    // With data: every frame the receiver sends is an ACK.
    let (_, rx) = run(1514);
    assert!(
        rx.acks_sent > 0 && rx.nic.tx_packets == rx.acks_sent,
        "{rx:?}"
    );
}

/// A sender whose program ends with more TX completions held than the guard's bound (1,500
/// messages back to back: its core takes an interrupt per completion, each after the last
/// handler) takes them all and the run ends: the guard counts the held ones as owed (it used to
/// stop the run as a loop that feeds itself). The receiver, out of buffers, drops the rest.
#[test]
fn a_host_ending_with_more_held_interrupts_than_the_bound_takes_them_all() {
    let mut ps = vec![platform(""), platform(RECEIVER)];
    let progs = vec![
        vec![Workload::load("nic-tx", &params("messages=1500,gap=0")).expect("nic-tx")],
        vec![Workload::load("nic-rx", &BTreeMap::new()).expect("nic-rx")],
    ];
    let s = cluster::run(&mut ps, &progs, &[link(3.0)], &mut |_| {}).expect("cluster run");
    let (tx, rx) = (&s.hosts[0], &s.hosts[1].devices[0]);
    assert_eq!(tx.devices[0].frames, 1500);
    assert!(
        tx.interrupts > cluster::MIN_IDLE_INTERRUPTS,
        "{}",
        tx.interrupts
    );
    assert_eq!(rx.rx_frames_in, 1500);
    assert_eq!(rx.rx_bytes_wrong, 0);
    assert_eq!(rx.nic.rx_frames + rx.nic.rx_drops, 1500, "{:?}", rx.nic);
}

#[test]
fn the_guard_allows_a_host_an_interrupt_per_frame_its_largest_ring_can_queue() {
    // A host whose program has ended may still take one interrupt per frame queued on its rings:
    // the bound is twice the largest ring on the cluster's ports, never under 1,024.
    assert_eq!(cluster::idle_interrupts(0), cluster::MIN_IDLE_INTERRUPTS);
    assert_eq!(cluster::idle_interrupts(512), 1024);
    assert_eq!(cluster::idle_interrupts(8192), 16_384);
}
