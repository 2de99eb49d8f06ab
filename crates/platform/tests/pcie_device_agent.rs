//! The PCIe device agent on the platform: a NIC's transmit through the coherent memory system,
//! its stack bounded by the wire times of its TLPs and the root complex's part.
use movelab_platform::config::io::IoConfig;
use movelab_platform::config::platform::PlatformConfig;
use movelab_platform::pcie::bytes::Geometry;
use movelab_platform::stats::DeviceStats;
use movelab_platform::{Platform, PlatformStats, Workload};

fn run(over: &str, params: &str) -> (PlatformStats, DeviceStats) {
    let (s, d, _) = run_platform(over, params);
    (s, d)
}

fn run_platform(over: &str, params: &str) -> (PlatformStats, DeviceStats, Platform) {
    let base = PlatformConfig::preset("larsen-io").expect("preset");
    let cfg = if over.is_empty() {
        base
    } else {
        base.with_overrides(toml::Value::Table(over.parse().expect("toml")), "test")
            .expect("overrides")
    };
    let w = Workload::load("nic-tx", &parse_params(params)).expect("workload");
    let mut p = Platform::new(&cfg).expect("platform");
    p.sys.track_values();
    let s = p.run(&w).expect("run");
    let d = s.devices.first().cloned().expect("a device");
    (s, d, p)
}

fn part(st: &[(String, f64)], name: &str) -> f64 {
    st.iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no part {name} in {st:?}"))
}

const PARTS: [&str; 3] = ["doorbell", "descriptor", "payload"];

fn parse_params(s: &str) -> std::collections::BTreeMap<String, u64> {
    s.split(',')
        .filter(|x| !x.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("k=v");
            (k.to_string(), v.parse().expect("number"))
        })
        .collect()
}

/// The platform's NIC-TX stack (driver program, coherent memory system, DRAM model) on the
/// paper's platform: each fetch takes at least its request's and its completion's wire time and
/// the root complex's fixed part, the stack is the sum of its parts, and the doorbell at least
/// its store's wire time.
#[test]
fn platform_stack_is_bounded_by_its_tlps() {
    let io = IoConfig::preset("larsen-82598-gen1").unwrap();
    let cfg = PlatformConfig::preset("larsen-io").unwrap();
    let rc = cfg.io.as_ref().expect("[io]").rc_read_ns;
    let (s, d) = run("", "messages=4");
    assert_eq!(d.tx_stack.len(), 3, "{d:?}");
    let g = io.geometry();
    let ns = |bytes: u32| g.wire_ps(u64::from(bytes)) as f64 / 1000.0;
    let fetch = |data: u32| ns(g.read_request_bytes()) + ns(g.completion_bytes(data)) + rc;
    assert!(
        part(&d.tx_stack, "doorbell") >= ns(g.write32_bytes(4)),
        "{d:?}"
    );
    assert!(part(&d.tx_stack, "descriptor") >= fetch(16), "{d:?}");
    assert!(part(&d.tx_stack, "payload") >= fetch(64), "{d:?}");
    // Within a microsecond of those bounds: the snoop, the on-die path and the NIC's steps.
    assert!(part(&d.tx_stack, "payload") < fetch(64) + 1000.0, "{d:?}");
    let sum: f64 = PARTS.iter().map(|n| part(&d.tx_stack, n)).sum();
    assert!((d.tx_stack_total_ns - sum).abs() < 1e-6, "{d:?}");
    // Idle messages: every one sees the same stack as the first.
    for name in PARTS {
        assert!((part(&d.tx_stack_mean, name) - part(&d.tx_stack, name)).abs() < 1.0);
    }
    // Every message was sent, its descriptor written back and its interrupt handled by the
    // handler program.
    assert_eq!(d.frames, 4);
    assert_eq!(d.frame_bytes, 4 * 64);
    assert_eq!(d.nic.tx_desc_written_back, 4);
    assert_eq!(d.interrupts, 4);
    assert_eq!(s.interrupts, 4);
    assert_eq!(s.uncached_accesses, 4);
    // Bytes by category: doorbells down, descriptor and payload requests up, completions down.
    let down = |k: &str| d.bytes_down.iter().find(|(n, _)| n == k).unwrap().1;
    let up = |k: &str| d.bytes_up.iter().find(|(n, _)| n == k).unwrap().1;
    let g = io.geometry();
    assert_eq!(down("payload"), 4 * 64);
    assert_eq!(down("doorbell"), 4 * g.write32_bytes(4) as u64);
    assert_eq!(down("descriptor"), 4 * g.completion_bytes(16) as u64);
    assert_eq!(up("descriptor"), 4 * g.read_request_bytes() as u64);
}

/// A payload line dirty in the core's cache is supplied by a snoop; one only in memory comes
/// from DRAM. Only the payload part moves, by the cache-versus-DRAM difference, and the bytes the
/// NIC sent are the version the core last stored (value shadow).
#[test]
fn dirty_payload_is_read_by_snoop() {
    let (_, cached, p) = run_platform("", "messages=3");
    let (_, cold) = run("", "messages=3,write_payload=0");
    assert_eq!(
        cached.lines_from_cache, 6,
        "descriptor and payload lines: {cached:?}"
    );
    assert_eq!(cold.lines_from_cache, 3, "descriptors only: {cold:?}");
    assert_eq!(cold.lines_from_memory, 3);
    for name in ["doorbell", "descriptor"] {
        assert!((part(&cached.tx_stack, name) - part(&cold.tx_stack, name)).abs() < 0.01);
    }
    // The DRAM read (DDR3-1066 8-8-8, the on-die path) against the snoop: tens of ns.
    let diff = part(&cold.tx_stack, "payload") - part(&cached.tx_stack, "payload");
    assert!((25.0..120.0).contains(&diff), "cache vs DRAM: {diff} ns");
    // Byte check: each payload line the NIC read carried the version the core last stored.
    assert_eq!(cached.lines_checked, 3);
    assert_eq!(cached.stale_lines, 0);
    // ... and the check can fail: memory's copy of a line the core holds dirty is stale.
    let line = 0x2000_0000 / 64;
    let (from_cache, latest) = p.sys.device_read_version(line, true).unwrap();
    let (from_memory, _) = p.sys.device_read_version(line, false).unwrap();
    assert!(latest > 0);
    assert_eq!(from_cache, latest);
    assert_ne!(from_memory, latest);
}

/// The link generation moves each part by the wire time pcie_bytes predicts for its TLPs.
#[test]
fn stack_moves_with_link_generation() {
    let (_, g1) = run("", "messages=1");
    let geo = |gen: u8| Geometry {
        gen,
        ..IoConfig::preset("larsen-82598-gen1").unwrap().geometry()
    };
    for gen in [2u8, 3] {
        let (_, gn) = run(&format!("io.link = {{ gen = {gen} }}\n"), "messages=1");
        let (a, b) = (geo(1), geo(gen));
        let wire = |g: &Geometry, bytes: &[u32]| {
            bytes.iter().map(|&n| g.wire_ps(n as u64)).sum::<u64>() as f64 / 1000.0
        };
        let tlps = |g: &Geometry| {
            [
                vec![g.write32_bytes(4)],
                vec![g.read_request_bytes(), g.completion_bytes(16)],
                vec![g.read_request_bytes(), g.completion_bytes(64)],
            ]
        };
        for (k, name) in PARTS.iter().enumerate() {
            let predicted = wire(&a, &tlps(&a)[k]) - wire(&b, &tlps(&b)[k]);
            let moved = part(&g1.tx_stack, name) - part(&gn.tx_stack, name);
            assert!(
                (moved - predicted).abs() < 0.01,
                "gen {gen} {name}: moved {moved}, predicted {predicted}"
            );
            assert!(moved > 0.0);
        }
    }
}

/// With DDIO the NIC's write-backs go into the core's cache instead of memory.
#[test]
fn ddio_puts_device_writes_in_the_cache() {
    let (_, mem) = run("", "messages=2");
    let (_, ddio) = run("io.root_complex = { ddio = true }\n", "messages=2");
    assert_eq!((mem.lines_to_memory, mem.lines_to_cache), (2, 0));
    assert_eq!((ddio.lines_to_memory, ddio.lines_to_cache), (0, 2));
}

/// With a loopback peer the frames come back in: RX descriptors fetched, frames written into the
/// posted buffers (DDIO or memory), every received byte the one sent.
#[test]
fn loopback_receives_what_was_sent() {
    let rx = "io.rx_ring = 0x1100_0000\nio.rx_buffers = 0x3000_0000\nio.loopback = true\n";
    for ddio in [false, true] {
        let over = format!("{rx}io.root_complex = {{ ddio = {ddio} }}\n");
        let (s, d) = run(&over, "messages=3,rx_post=1");
        assert_eq!(d.rx_frames_in, 3, "{d:?}");
        assert_eq!(d.nic.rx_frames, 3);
        assert_eq!(d.rx_bytes_checked, 3 * 64);
        assert_eq!(d.rx_bytes_wrong, 0);
        assert!(d.nic.rx_desc_written_back >= 3);
        // Payload, TX and RX write-backs: into the cache with DDIO, else to memory.
        let written = d.lines_to_memory + d.lines_to_cache;
        assert!(written >= 3 + 3 + 3, "{d:?}");
        assert_eq!(d.lines_to_cache > 0, ddio);
        assert_eq!(d.lines_to_memory > 0, !ddio);
        assert_eq!(s.uncached_accesses, 6);
    }
    // larsen-io has an RX ring and buffers; without them a loopback is refused.
    let mut c = PlatformConfig::preset("larsen-io").unwrap();
    let io = c.io.as_mut().unwrap();
    io.rx_ring = None;
    io.rx_buffers = None;
    io.loopback = true;
    let e = Platform::new(&c).err().expect("refused").to_string();
    assert!(e.contains("io.rx_ring"), "{e}");
}

fn refused(over: &str) -> String {
    let base = PlatformConfig::preset("larsen-io").unwrap();
    match base
        .with_overrides(toml::Value::Table(over.parse().unwrap()), "test")
        .and_then(|c| Platform::new(&c).map(|_| ()))
    {
        Ok(()) => panic!("{over} was accepted"),
        Err(e) => e.to_string(),
    }
}

/// Bad device settings are refused with the key named.
#[test]
fn bad_device_config_is_refused_naming_the_key() {
    let e = refused("io.bogus = 1\n");
    assert!(e.contains("bogus"), "{e}");
    let e = refused("io.bar = 0x1000_0000\n");
    assert!(e.contains("io.bar") && e.contains("tx_ring"), "{e}");
    let e = refused("io.bar = 0xf000_1000\n");
    assert!(e.contains("io.bar") && e.contains("aligned"), "{e}");
    let e = refused("io.link = { gen = 7 }\n");
    assert!(e.contains("io.link.gen"), "{e}");
    let e = refused("io.nic = { tx_pthresh = 1, bogus = 2 }\n");
    assert!(e.contains("bogus"), "{e}");
    let e = refused("io.irq_core = 3\n");
    assert!(e.contains("io.irq_core"), "{e}");
    let e = refused("io.frame_bytes = 4096\n");
    assert!(e.contains("io.frame_bytes"), "{e}");
    let e = refused("io.preset = \"nope\"\n");
    assert!(e.contains("io.preset"), "{e}");
    // The receiver's TCP (an I/O preset's driver): a receive MSS below Linux's TCP_MIN_MSS (88)
    // or above the MSS is refused by name.
    let io = IoConfig::preset("larsen-82599-gen2").unwrap();
    for v in [40, 2000] {
        let over = format!("driver = {{ rcv_mss_initial = {v} }}\n");
        let e = io
            .with_overrides(toml::Value::Table(over.parse().unwrap()), "test")
            .and_then(|c| c.validate("test"))
            .expect_err("refused")
            .to_string();
        assert!(e.contains("driver.rcv_mss_initial"), "{e}");
    }
}

/// Sends close together: a later doorbell reaches the NIC while the first descriptor's fetch is
/// on its way. Each packet's stack starts at the doorbell that published its descriptor (the
/// latest one used to be taken, moving the fetch's time into the doorbell: descriptor 20 ns). The
/// first packet finds the NIC idle, so its stack is the one with sends far apart, but for the next
/// doorbell's write on the link ahead of its descriptor's completion (at most one 12 ns MWr), and
/// no packet's descriptor stage is shorter than a fetch's round trip.
#[test]
fn each_packet_is_timed_from_the_doorbell_that_published_it() {
    let (_, far) = run("", "messages=8,gap=20000");
    let (_, close) = run("", "messages=8,gap=1000");
    for p in PARTS {
        let (c, f) = (part(&close.tx_stack, p), part(&far.tx_stack, p));
        let slack = if p == "descriptor" { 13.0 } else { 1.0 };
        assert!(
            c >= f - 1.0 && c <= f + slack,
            "{p}: {:?} against {:?}",
            close.tx_stack,
            far.tx_stack
        );
    }
    let fetch = part(&far.tx_stack, "descriptor");
    assert!(
        part(&close.tx_stack_mean, "descriptor") >= fetch - 1.0,
        "{:?}",
        close.tx_stack_mean
    );
    assert!(
        part(&close.tx_stack_mean, "doorbell") < part(&far.tx_stack, "doorbell") + 1.0,
        "{:?}",
        close.tx_stack_mean
    );
}
