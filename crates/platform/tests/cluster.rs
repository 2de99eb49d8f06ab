//! Platforms joined by an Ethernet link: Larsen & Lee's two hosts as two `larsen-io` platforms on
//! one wire, the sender running the transmit driver, the receiver the receive driver. Every frame
//! that lands is checked byte for byte against the frames that came off the wire.
use movelab_platform::config::platform::PlatformConfig;
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
