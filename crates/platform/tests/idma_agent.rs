//! Larsen & Lee's integrated DMA engine as an agent of the platform: its transmit stack (Fig. 9)
//! comes out of the memory system, so it moves with DRAM timing and with whether the descriptor
//! and payload are in a cache, and it is shorter than the descriptor NIC's (Fig. 8) on the same
//! platform, driver program and DRAM.
use movelab_platform::config::platform::PlatformConfig;
use movelab_platform::stats::DeviceStats;
use movelab_platform::{Platform, PlatformStats, Workload};
use std::collections::BTreeMap;

fn run(preset: &str, over: &str, params: &[(&str, u64)]) -> (PlatformStats, DeviceStats) {
    let base = PlatformConfig::preset(preset).expect("preset");
    let cfg = if over.is_empty() {
        base
    } else {
        base.with_overrides(toml::Value::Table(over.parse().expect("toml")), "test")
            .expect("overrides")
    };
    let p: BTreeMap<String, u64> = params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let w = Workload::load("nic-tx", &p).expect("workload");
    let mut plat = Platform::new(&cfg).expect("platform");
    plat.sys.track_values();
    let s = plat.run(&w).expect("run");
    let d = s.devices.first().cloned().expect("a device");
    (s, d)
}

fn part(d: &DeviceStats, name: &str) -> f64 {
    d.tx_stack_mean
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no part {name} in {:?}", d.tx_stack_mean))
}

const COLD: &[(&str, u64)] = &[("messages", 4), ("write_desc", 0), ("write_payload", 0)];
const WARM: &[(&str, u64)] = &[("messages", 4)];
const SLOW_DRAM: &str =
    "[memory.dram.timing]\nnRCD = 16\nnCL = 16\nnCWL = 12\nnRP = 16\nnRAS = 28\nnRC = 44\n";

#[test]
fn idma_transmits_every_frame_with_four_parts() {
    let (s, d) = run("larsen-io-idma", "", WARM);
    assert_eq!(d.name, "idma");
    assert_eq!(d.frames, 4);
    assert_eq!(d.frame_bytes, 4 * 64);
    assert_eq!(d.interrupts, 4);
    assert_eq!(s.interrupts, 4, "the driver core took every notification");
    let names: Vec<_> = d.tx_stack.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["doorbell", "descriptor", "payload", "push"]);
    assert!(d.tx_stack.iter().all(|(_, v)| *v > 0.0), "{:?}", d.tx_stack);
    // Every payload line the engine read was the last version the core wrote.
    assert_eq!(d.lines_checked, 4);
    assert_eq!(d.stale_lines, 0);
    assert_eq!(
        d.lines_from_cache, 8,
        "descriptor and payload dirty in the core's cache"
    );
}

#[test]
fn idma_reads_move_with_dram_timing_and_cache_state() {
    let (_, warm) = run("larsen-io-idma", "", WARM);
    let (_, cold) = run("larsen-io-idma", "", COLD);
    let (_, slow) = run("larsen-io-idma", SLOW_DRAM, COLD);
    let (_, slow_warm) = run("larsen-io-idma", SLOW_DRAM, WARM);
    assert_eq!(cold.lines_from_memory, 8, "{cold:?}");
    for p in ["descriptor", "payload"] {
        // From DRAM it is slower than from the core's cache, and slower DRAM slows it further.
        assert!(
            part(&cold, p) > part(&warm, p) + 10.0,
            "{p}: {cold:?} {warm:?}"
        );
        assert!(
            part(&slow, p) > part(&cold, p) + 10.0,
            "{p}: {slow:?} {cold:?}"
        );
        // Lines in the cache do not see the DRAM.
        assert!((part(&slow_warm, p) - part(&warm, p)).abs() < 1e-6, "{p}");
    }
    // The doorbell and the push do not touch memory.
    for p in ["doorbell", "push"] {
        assert!((part(&slow, p) - part(&warm, p)).abs() < 1e-6, "{p}");
    }
}

#[test]
fn nic_fetches_move_with_dram_timing_when_not_cached() {
    let (_, cold) = run("larsen-io", "", COLD);
    let (_, slow) = run("larsen-io", SLOW_DRAM, COLD);
    let (_, warm) = run("larsen-io", "", WARM);
    assert_eq!(cold.lines_from_memory, 8);
    for p in ["descriptor", "payload"] {
        assert!(part(&slow, p) > part(&cold, p) + 10.0, "{p}");
        assert!(part(&cold, p) > part(&warm, p), "{p}");
    }
}

#[test]
fn idma_stack_is_shorter_than_the_nics_on_the_same_platform() {
    for params in [WARM, COLD] {
        let (_, nic) = run("larsen-io", "", params);
        let (_, idma) = run("larsen-io-idma", "", params);
        assert!(
            idma.tx_stack_total_ns < 0.5 * nic.tx_stack_total_ns,
            "{} vs {}",
            idma.tx_stack_total_ns,
            nic.tx_stack_total_ns
        );
    }
}

/// `preset` with its first agent's parameters extended (or changed) by `params` (TOML).
fn with_agent_params(preset: &str, params: &str) -> PlatformConfig {
    let base = PlatformConfig::preset(preset).expect("preset");
    let mut t = toml::Table::try_from(&base).expect("table");
    let extra: toml::Table = params.parse().expect("toml");
    let agents = t
        .get_mut("agents")
        .and_then(|a| a.as_array_mut())
        .expect("agents");
    let p = agents[0]
        .as_table_mut()
        .and_then(|a| a.get_mut("params"))
        .and_then(|p| p.as_table_mut())
        .expect("params");
    for (k, v) in extra {
        p.insert(k, v);
    }
    toml::Value::Table(t).try_into().expect("config")
}

fn run_cfg(cfg: &PlatformConfig, params: &[(&str, u64)]) -> (PlatformStats, DeviceStats) {
    let p: BTreeMap<String, u64> = params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let w = Workload::load("nic-tx", &p).expect("workload");
    let mut plat = Platform::new(cfg).expect("platform");
    plat.sys.track_values();
    let s = plat.run(&w).expect("run");
    // Every load saw the last value written, and every payload line the engine read was the one
    // the core last stored.
    let sh = plat.sys.shadow.as_ref().expect("value shadow");
    assert!(sh.violations.is_empty(), "{:?}", sh.violations);
    let d = s.devices.first().cloned().expect("a device");
    assert_eq!(d.stale_lines, 0, "{d:?}");
    (s, d)
}

const RX: &str =
    "rx_ring = 0x1100_0000\nrx_buffers = 0x3000_0000\npinned = 0x3800_0000\nloopback = true\n";

/// Receive through the engine (section 3.2): the adapter writes the frames it takes from the wire
/// into the pinned buffer, the engine moves each into the buffer the host posted; every byte
/// delivered is the one sent, across the pinned buffer's wrap and the head updates, with frames
/// of several sizes; with DDIO the adapter's and the engine's lines go to the cache.
#[test]
fn idma_receives_through_the_pinned_buffer() {
    for (frame, n) in [(64u64, 100u64), (1500, 12), (1000, 9)] {
        for ddio in [false, true] {
            let cfg = with_agent_params(
                "larsen-io-idma",
                &format!("{RX}frame_bytes = {frame}\nroot_complex = {{ ddio = {ddio} }}\n"),
            );
            let (_, d) = run_cfg(&cfg, &[("messages", n), ("rx_post", 1)]);
            assert_eq!(d.rx_frames_in, n, "{d:?}");
            assert_eq!(d.nic.rx_frames, n, "{d:?}");
            assert_eq!(d.nic.rx_drops, 0);
            assert_eq!(d.rx_bytes_checked, n * frame);
            assert_eq!(d.rx_bytes_wrong, 0);
            // Each frame's record and bytes went up the link once, nothing else.
            let up: u64 = d.bytes_up.iter().map(|(_, b)| b).sum();
            assert!(up >= n * (frame + 8), "{up} {d:?}");
            // The engine marks each TX descriptor done in memory; the pinned buffer's, the RX
            // buffers' and the RX descriptors' lines go to the cache with DDIO, else to memory.
            let rx_lines = n * (2 * (frame + 8).div_ceil(64)).max(1);
            if ddio {
                assert_eq!(d.lines_to_memory, n, "{d:?}");
                assert!(d.lines_to_cache >= rx_lines, "{d:?}");
            } else {
                assert_eq!(d.lines_to_cache, 0, "{d:?}");
                assert!(d.lines_to_memory >= n + rx_lines, "{d:?}");
            }
            // Pinned space given back: the adapter never waited for good.
            let wrapped = n * (frame + 8).div_ceil(64) * 64 > 8192;
            assert!(!wrapped || d.nic.doorbells > 0, "{d:?}");
            // TX and RX each notify the core.
            assert!(d.interrupts >= 2 * n, "{d:?}");
        }
    }
}

/// Frames for which the host posts no buffer stay in the pinned buffer (and the adapter's FIFO
/// drops what does not fit): the run ends, nothing is delivered, nothing is lost uncounted.
#[test]
fn idma_without_rx_buffers_delivers_nothing_and_ends() {
    let cfg = with_agent_params("larsen-io-idma", RX);
    let (_, d) = run_cfg(&cfg, &[("messages", 200), ("rx_post", 0)]);
    assert_eq!(d.nic.rx_frames, 0);
    assert_eq!(d.rx_frames_in, 200);
    // The adapter filled the pinned buffer (64 slots of 128 B: a 64 B frame and its record) and
    // went no further: the rest wait in its FIFO or were dropped, and are counted.
    let up = d
        .bytes_up
        .iter()
        .find(|(n, _)| n == "payload")
        .map(|(_, b)| *b);
    assert_eq!(up, Some(64 * 72), "{d:?}");
}

#[test]
fn idma_refuses_receive_without_its_pinned_buffer_and_bad_cores() {
    let base = PlatformConfig::preset("larsen-io-idma").unwrap();
    for (over, key) in [
        ("[[agents]]\nkind = \"idma\"\n[agents.params]\npreset = \"larsen-82598-gen1\"\nbar = 0xf000_0000\ntx_ring = 0x1000_0000\ntx_buffers = 0x2000_0000\nrx_ring = 0x3000_0000\nrx_buffers = 0x4000_0000\n", "pinned"),
        ("[[agents]]\nkind = \"idma\"\n[agents.params]\npreset = \"larsen-82598-gen1\"\nbar = 0xf000_0000\ntx_ring = 0x1000_0000\ntx_buffers = 0x2000_0000\nrx_ring = 0x3000_0000\nrx_buffers = 0x4000_0000\npinned = 0xf000_1000\n", "params.bar"),
        ("[[agents]]\nkind = \"idma\"\n[agents.params]\npreset = \"larsen-82598-gen1\"\nbar = 0xf000_0000\ntx_ring = 0x1000_0000\ntx_buffers = 0x2000_0000\nrx_ring = 0x3000_0000\nrx_buffers = 0x4000_0000\npinned = 0x5000_0010\n", "pinned"),
        ("[[agents]]\nkind = \"idma\"\n[agents.params]\npreset = \"larsen-82598-gen1\"\nbar = 0xf000_0000\ntx_ring = 0x1000_0000\ntx_buffers = 0x2000_0000\nrx_ring = 0x3000_0000\nrx_buffers = 0x4000_0000\npinned = 0x5000_0000\nframe_bytes = 2048\nidma = { rx_buffer_bytes = 2048, head_update_bytes = 1024 }\n", "rx_buffer_bytes"),
        ("[[agents]]\nkind = \"idma\"\n[agents.params]\npreset = \"larsen-82598-gen1\"\nbar = 0xf000_0000\ntx_ring = 0x1000_0000\ntx_buffers = 0x2000_0000\nirq_core = 3\n", "irq_core"),
    ] {
        let mut cfg = base.clone();
        let extra: PlatformConfig = {
            let mut t: toml::Table = over.parse().unwrap();
            let mut b = toml::Table::try_from(&base).unwrap();
            b.insert("agents".into(), t.remove("agents").unwrap());
            toml::Value::Table(b).try_into().unwrap()
        };
        cfg.agents = extra.agents;
        let e = match Platform::new(&cfg) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{key}: accepted"),
        };
        assert!(e.contains(key), "{e}");
    }
}
