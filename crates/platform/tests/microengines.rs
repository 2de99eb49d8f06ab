//! IXP-style microengines as an agent of the one platform (`ixp-host`): a `larsen-io` sender's
//! NIC sends frames across an Ethernet link to the microengines' MAC; the microengines move each
//! into the host's RX buffers through the memory system and interrupt the host core, whose
//! `nic-rx` driver posts buffers and runs the stack. Every landed byte is checked against the
//! frames that came off the wire; the DRAM command log passes the independent checker; and the
//! microengines' clock, count and contexts move the receive rate once they are the bottleneck,
//! with frames dropped at the MSF and counted, never an abort.
use movelab_dram::checker::Checker;
use movelab_dram::command::{CommandRecord, CommandSink};
use movelab_platform::config::platform::PlatformConfig;
use movelab_platform::stats::AgentStats;
use movelab_platform::systems::cluster::{self, ClusterStats, End, LinkSpec};
use movelab_platform::PlatformStats;
use movelab_platform::{Platform, Workload};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

fn cfg(preset: &str, over: &str) -> Result<PlatformConfig, String> {
    let base = PlatformConfig::preset(preset).map_err(|e| e.to_string())?;
    if over.is_empty() {
        return Ok(base);
    }
    base.with_overrides(toml::Value::Table(over.parse().expect("toml")), "test")
        .map_err(|e| e.to_string())
}

/// The microengines' parameters as an agent list over `ixp-host`'s (the preset's own, then `me`).
fn ixp(me: &str) -> String {
    format!("[[agents]]\nkind = \"microengines\"\nname = \"microengines\"\n[agents.params]\n{me}\n")
}

struct Collect(Rc<RefCell<Vec<CommandRecord>>>);
impl CommandSink for Collect {
    fn record(&mut self, r: &CommandRecord) {
        self.0.borrow_mut().push(*r);
    }
}

/// `n` frames of `bytes` sent back to back at `gbps` from a `larsen-io` NIC to `ixp-host` with
/// microengine parameters `me`; the receiver's stack runs `stack` instructions per frame. The
/// receiver's DRAM command log is checked.
fn run(me: &str, n: u64, bytes: u64, gbps: f64, stack: u64) -> ClusterStats {
    run_on("", me, n, bytes, gbps, stack)
}

/// As [`run`], with `mem` (top-level TOML keys, e.g. DRAM timing) over the receiver's preset.
fn run_on(mem: &str, me: &str, n: u64, bytes: u64, gbps: f64, stack: u64) -> ClusterStats {
    let tx_over = format!("[io]\nframe_bytes = {bytes}\n[io.nic]\nmac_gbps = {gbps}\n");
    let agents = if me.is_empty() && gbps == 1.0 {
        String::new()
    } else {
        ixp(&format!("mac_gbps = {gbps}\n{me}"))
    };
    let rx_over = format!("{mem}\n{agents}");
    let mut tx = Platform::new(&cfg("larsen-io", &tx_over).unwrap()).unwrap();
    let mut rx = Platform::new(&cfg("ixp-host", &rx_over).unwrap()).unwrap();
    tx.sys.track_values();
    rx.sys.track_values();
    let log = Rc::new(RefCell::new(Vec::new()));
    rx.mem_mut().set_command_log(Box::new(Collect(log.clone())));
    let header = rx.mem_mut().log_header();
    let p = |kv: &[(&str, u64)]| -> BTreeMap<String, u64> {
        kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    };
    let progs = vec![
        vec![Workload::load("nic-tx", &p(&[("messages", n), ("gap", 0)])).unwrap()],
        vec![Workload::load("nic-rx", &p(&[("stack", stack)])).unwrap()],
    ];
    let link = cable();
    let mut ps = vec![tx, rx];
    let s = cluster::run(&mut ps, &progs, &[link], &mut |_| {}).expect("cluster run");
    let mut checker = Checker::new(&header).unwrap();
    for r in log.borrow().iter() {
        if let Err(v) = checker.check(r) {
            panic!("ixp-host DRAM command log: {}", v.message);
        }
    }
    let sh = ps[1].sys.shadow.as_ref().unwrap();
    assert!(sh.violations.is_empty(), "{:?}", sh.violations);
    s
}

/// A 3 m cable between the first two hosts' ports.
fn cable() -> LinkSpec {
    let end = |host| End {
        host,
        agent: String::new(),
    };
    LinkSpec {
        a: end(0),
        b: end(1),
        meters: 3.0,
        ns_per_meter: 5.0,
        gbps: None,
    }
}

fn me(s: &PlatformStats) -> AgentStats {
    s.agents
        .iter()
        .find(|a| a.kind == "microengines")
        .expect("a microengines agent")
        .clone()
}

/// Frames landed, dropped at the MSF, and the receive rate (Gb/s of frame bytes between the
/// first and the last landing), after checking every landed byte and the accounting.
fn landed(s: &ClusterStats, n: u64, bytes: u64) -> (u64, u64, f64) {
    let a = me(&s.hosts[1]);
    let d = a.device.as_ref().unwrap();
    assert_eq!(d.rx_frames_in, n, "every frame reached the MAC: {d:?}");
    assert_eq!(
        d.rx_bytes_wrong, 0,
        "landed bytes differ from the frames sent"
    );
    assert_eq!(d.rx_bytes_checked, d.nic.rx_frames * bytes);
    assert!(d.nic.rx_frames + d.nic.rx_drops <= n);
    assert_eq!(d.interrupts, d.nic.rx_frames);
    let sc = a.small_cores.as_ref().expect("small-core stats");
    assert!(sc.busy_share > 0.0 && sc.busy_share <= 1.0 + 1e-9, "{sc:?}");
    let first = s.links[0].passages[0].1;
    let span = a.last_done_ns - first;
    let gbps = if span > 0.0 {
        d.rx_bytes_checked as f64 * 8.0 / span
    } else {
        0.0
    };
    (d.nic.rx_frames, d.nic.rx_drops, gbps)
}

/// At the preset's values (two microengines, 8 contexts, 900 MHz) a gigabit wire of full frames
/// binds: every frame lands intact, and the microengines are mostly idle.
#[test]
fn ixp_host_receives_every_frame_at_line_rate() {
    let s = run("", 40, 1514, 1.0, 1000);
    let (n, drops, gbps) = landed(&s, 40, 1514);
    assert_eq!((n, drops), (40, 0));
    assert!((0.95..1.05).contains(&gbps), "{gbps} Gb/s");
    let a = me(&s.hosts[1]);
    assert!(a.small_cores.unwrap().busy_share < 0.2);
    let d = a.device.unwrap();
    assert_eq!(d.nic.rx_desc_fetched, 40);
    assert!(d.lines_from_memory + d.lines_from_cache >= 40, "{d:?}");
    assert_eq!(
        s.hosts[1].interrupts, 40,
        "the host core took an interrupt per frame"
    );
}

/// Slow microengines become the bottleneck: the receive rate rises with their clock, count and
/// contexts until the wire binds, the surplus frames are dropped at the MSF and counted, and
/// nothing aborts, down to one context of one microengine at 10 MHz.
#[test]
fn slow_microengines_bind_and_their_parameters_move_the_rate() {
    let rate = |me: &str| landed(&run(me, 30, 1514, 1.0, 1000), 30, 1514);
    let mut last = 0.0;
    for mhz in [10, 25, 50, 100] {
        let (n, drops, gbps) = rate(&format!("count = 1\nthreads = 1\nclock_mhz = {mhz}.0"));
        assert!(
            gbps > last * 1.02 || gbps > 0.95,
            "{mhz} MHz: {gbps} after {last}"
        );
        if mhz <= 25 {
            assert!(
                drops > 0 && n + drops == 30,
                "{mhz} MHz: {n} landed, {drops} dropped"
            );
        }
        last = gbps;
    }
    let one = rate("count = 1\nthreads = 1\nclock_mhz = 25.0").2;
    let two = rate("count = 2\nthreads = 1\nclock_mhz = 25.0").2;
    assert!(two > one * 1.3, "two microengines {two} against one {one}");
    // Contexts overlap one context's memory waits with another's work.
    let t1 = rate("count = 1\nthreads = 1\nclock_mhz = 40.0").2;
    let t4 = rate("count = 1\nthreads = 4\nclock_mhz = 40.0").2;
    assert!(t4 > t1 * 1.02, "four contexts {t4} against one {t1}");
}

/// Small frames on a ten-gigabit wire with the host's stack left out: every frame is accounted
/// for, and DRAM timing moves each frame's time in the microengines (its RX descriptor's line
/// comes from the DRAM model, not a typed-in latency).
#[test]
fn small_frames_at_ten_gigabit_move_with_dram_timing() {
    let s = run("", 60, 64, 10.0, 0);
    let (n, drops, _) = landed(&s, 60, 64);
    assert_eq!(n + drops, 60);
    assert!(n > 0);
    let slow = run_on(
        "memory = { dram = { timing = { nRCD = 6, nCL = 6 } } }",
        "",
        60,
        64,
        10.0,
        0,
    );
    landed(&slow, 60, 64);
    let (fast, slow) = (me(&s.hosts[1]).mean_op_ns, me(&slow.hosts[1]).mean_op_ns);
    assert!(
        slow > fast + 10.0,
        "per frame {slow} ns with slower DRAM against {fast} ns"
    );
}

#[test]
fn bad_microengine_parameters_are_refused_naming_the_key() {
    for (over, want) in [
        ("threads = 0", "agents[0].params.threads"),
        ("count = 1000", "agents[0].params.count"),
        ("clock_mhz = -1.0", "agents[0].params.clock_mhz"),
        ("chunk_bytes = 12", "agents[0].params.chunk_bytes"),
        ("bar = 0xf000_0100", "agents[0].params.bar"),
        ("rx_ring = 0x1100_0004", "agents[0].params.rx_ring"),
        ("irq_core = 3", "irq_core"),
        ("speed = 2", "speed"),
    ] {
        let e = match cfg("ixp-host", &ixp(over))
            .and_then(|c| Platform::new(&c).map(|_| ()).map_err(|e| e.to_string()))
        {
            Err(e) => e,
            Ok(()) => panic!("{over}: accepted"),
        };
        assert!(e.contains(want), "{over}: {e}");
    }
    // The microengines copy; they do not zero or fill.
    let e = cfg(
        "ixp-host",
        "[[agents]]\nkind = \"microengines\"\ntakes = [\"zero\"]\n",
    )
    .and_then(|c| Platform::new(&c).map(|_| ()).map_err(|e| e.to_string()))
    .unwrap_err();
    assert!(e.contains("takes") && e.contains("'zero'"), "{e}");
}

/// `pages` copies of `bytes` by the host core of `ixp-host`, or handed to its microengines
/// (`takes = ["copy"]`, parameters `me`): every line the microengines write holds what the copy
/// must deliver (the value shadow's oracle), every load sees the last value written, and the DRAM
/// command log passes the checker.
fn copies(offload: bool, me: &str, pages: u64, bytes: u64) -> PlatformStats {
    let over = if offload {
        format!(
            "[[agents]]\nkind = \"microengines\"\nname = \"microengines\"\ntakes = [\"copy\"]\n[agents.params]\n{me}\n"
        )
    } else {
        String::new()
    };
    let c = cfg("ixp-host", &over).unwrap();
    let mut p = Platform::new(&c).unwrap();
    p.sys.track_values();
    let log = Rc::new(RefCell::new(Vec::new()));
    p.mem_mut().set_command_log(Box::new(Collect(log.clone())));
    let header = p.mem_mut().log_header();
    let params: BTreeMap<String, u64> = [("pages", pages), ("bytes", bytes), ("work", 100)]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    let s = p
        .run(&Workload::load("bulk-copy", &params).unwrap())
        .unwrap();
    let sh = p.sys.shadow.as_ref().unwrap();
    assert!(sh.violations.is_empty(), "{:?}", sh.violations);
    if offload {
        assert!(sh.copy_lines_checked > 0, "no copied line was checked");
        assert_eq!(sh.copy_lines_wrong, 0);
    }
    let mut checker = Checker::new(&header).unwrap();
    for r in log.borrow().iter() {
        if let Err(v) = checker.check(r) {
            panic!("ixp-host copies: {}", v.message);
        }
    }
    s
}

/// Wun & Crowley section 7: the microengines copy DRAM to DRAM several times faster than the
/// XScale's copy loop, because their contexts keep many lines in flight where the in-order core
/// waits for each miss; fewer contexts or a slower clock take that away.
#[test]
fn microengines_copy_faster_than_the_host_core() {
    let (pages, bytes) = (16, 2048);
    let host = copies(false, "", pages, bytes);
    let me = copies(true, "", pages, bytes);
    let a = me.agents.iter().find(|a| a.kind == "microengines").unwrap();
    assert_eq!(a.ops, pages, "{a:?}");
    assert_eq!(a.lines.engine_written, pages * bytes / 64);
    let speedup = host.time_ns / me.time_ns;
    assert!(
        speedup > 2.0,
        "host {} ns, microengines {} ns",
        host.time_ns,
        me.time_ns
    );
    let one = copies(true, "count = 1\nthreads = 1", pages, bytes);
    assert!(
        one.time_ns > me.time_ns * 2.0,
        "one context {} against {}",
        one.time_ns,
        me.time_ns
    );
    // Unaligned source and destination, and a length that is not a whole number of lines.
    let odd = copies(true, "", 4, 1000);
    assert!(odd
        .agents
        .iter()
        .any(|a| a.kind == "microengines" && a.ops == 4));
    // The microengines' reads and writes are copy traffic, as the host core's copy loop is (they
    // were counted as other traffic, so the copies' share of memory traffic fell when offloaded).
    let line_bytes = pages * bytes;
    assert!(
        me.memory.copy_bytes >= 2 * line_bytes,
        "{} copy bytes for {line_bytes} copied: {:?}",
        me.memory.copy_bytes,
        me.memory
    );
    assert!(
        me.memory.fmtc > 0.5 * host.memory.fmtc,
        "{:?} against {:?}",
        me.memory,
        host.memory
    );
}

/// `ixp-host`'s unloaded DRAM read from the host core is the ME DRAM latency quoted for the IXP2400 (~120 ME
/// cycles at 600 MHz = 200 ns, the same as its uncached read of the microengines' DRAM): a chain of
/// dependent loads over cold lines costs that plus the L1 and L2 lookups (13 cycles at 900 MHz)
/// per load. The chip bus's paths carry what the DRAM model does not; shortening them speeds the
/// host core's latency-bound copy loop, not the microengines' (their contexts keep many lines in
/// flight), so the copy ratio moves with them.
#[test]
fn ixp_host_dram_reads_take_the_facts_latency_and_move_the_copy_ratio() {
    const CHASE: &str = r#"
name = "chase"
description = "dependent loads over cold lines"
iterations = "n"
[params]
n = 400
[[regions]]
name = "a"
base = 0x1000_0000
size = "16MiB"
stride = 4160
[[ops]]
kind = "load"
at = { region = "a" }
chase = true
"#;
    let per_load = |over: &str| {
        let c = cfg("ixp-host", over).unwrap();
        let w = Workload::from_toml_str(CHASE, "chase", &BTreeMap::new()).unwrap();
        Platform::new(&c).unwrap().run(&w).unwrap().time_ns / 400.0
    };
    let lookups = 13.0 * 1000.0 / 900.0;
    let dram = per_load("") - lookups;
    assert!(
        (190.0..=215.0).contains(&dram),
        "{dram} ns per unloaded DRAM read"
    );
    let fast_bus = "[interconnect]\nrequest_ns = 10.0\nresponse_ns = 10.0";
    assert!(per_load(fast_bus) - lookups < 0.6 * dram);
    // 16 blocks of 2 KB by the host core's copy loop, or by four microengines (`agents`).
    let copy_ns = |over: &str| {
        let params: BTreeMap<String, u64> = [("pages", 16u64), ("bytes", 2048), ("work", 0)]
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        Platform::new(&cfg("ixp-host", over).unwrap())
            .unwrap()
            .run(&Workload::load("bulk-copy", &params).unwrap())
            .unwrap()
            .time_ns
    };
    let agents = "[[agents]]\nkind = \"microengines\"\nname = \"microengines\"\ntakes = [\"copy\"]\n[agents.params]\ncount = 4\n";
    let ratio = |bus: &str| copy_ns(bus) / copy_ns(&format!("{bus}\n{agents}"));
    let (preset, fast) = (ratio(""), ratio(fast_bus));
    assert!(
        preset > 1.2 * fast,
        "copy ratio {preset} (preset) against {fast} (10 ns paths)"
    );
}

// ---------------------------------------------------------------------------------------------
// Transmit, the configurations' modes, and Wun & Crowley's experiments on the one platform.

use movelab_platform::config::network::NetworkIoConfig;
use movelab_platform::experiments::wun_onload::{self, Point};

/// Two `ixp-host`s on a gigabit wire: the first sends `n` iperf datagrams of `payload` bytes
/// through its microengines' transmit program (the host's `nic-tx` driver writes each frame's
/// line and descriptor and rings the TX tail), the second's microengines are the iperf `sink`,
/// checking every datagram (checksums, sequence, each payload byte). `me` goes to the sender's
/// microengines, `sink` to the receiver's.
fn transmit(me: &str, sink: &str, n: u64, payload: u64) -> ClusterStats {
    let frame = payload + 42;
    let tx_over = ixp(&format!("iperf = true\nframe_bytes = {frame}\n{me}"));
    let sink_frame = if sink.contains("frame_bytes") {
        String::new()
    } else {
        format!("frame_bytes = {frame}\n")
    };
    let rx_over = ixp(&format!(
        "iperf = true\nrx_mode = \"sink\"\n{sink_frame}{sink}"
    ));
    let progs = vec![
        vec![Workload::load("nic-tx", &kv(&[("messages", n), ("gap", 0)])).unwrap()],
        vec![Workload::load("nic-tx", &kv(&[("messages", 0)])).unwrap()],
    ];
    checked_pair(
        &cfg("ixp-host", &tx_over).unwrap(),
        &cfg("ixp-host", &rx_over).unwrap(),
        &progs,
    )
}

/// Workload parameters from pairs.
fn kv(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// `tx` and `rx` on the cable running `progs`, their values tracked (stale lines and copies
/// checked).
fn checked_pair(tx: &PlatformConfig, rx: &PlatformConfig, progs: &[Vec<Workload>]) -> ClusterStats {
    let mut ps = vec![Platform::new(tx).unwrap(), Platform::new(rx).unwrap()];
    for p in &mut ps {
        p.sys.track_values();
    }
    cluster::run(&mut ps, progs, &[cable()], &mut |_| {}).expect("cluster run")
}

/// The microengines' transmit path: every descriptor the host posts is read through the memory
/// system with its buffer (lines dirty in the host's cache come from it; every payload line's
/// version checked), sent in order through the TBUF and the MAC, and every datagram arrives
/// intact at the sink; one interrupt per sent frame.
#[test]
fn microengines_transmit_every_frame_byte_checked() {
    for payload in [64u64, 1472] {
        let s = transmit("", "", 30, payload);
        let (tx, rx) = (me(&s.hosts[0]), me(&s.hosts[1]));
        let (td, rd) = (tx.device.unwrap(), rx.device.unwrap());
        assert_eq!(td.nic.tx_frames, 30, "{td:?}");
        assert_eq!(td.nic.tx_desc_fetched, 30);
        assert_eq!(td.nic.tx_desc_written_back, 30);
        assert_eq!(td.interrupts, 30);
        assert_eq!(td.stale_lines, 0);
        assert!(
            td.lines_from_cache >= 30,
            "the driver's dirty lines: {td:?}"
        );
        assert_eq!(rd.nic.rx_frames, 30, "{rd:?}");
        assert_eq!(rd.rx_bytes_wrong, 0);
        assert_eq!(rd.rx_bytes_checked, 30 * (payload + 42));
        assert_eq!(s.links[0].a_to_b.frames, 30);
    }
}

/// The sink's check can fail: a sink expecting other datagrams than those sent counts every
/// byte of them wrong.
#[test]
fn the_sink_finds_datagrams_other_than_expected() {
    let s = transmit("", "frame_bytes = 300", 5, 200);
    let d = me(&s.hosts[1]).device.unwrap();
    assert_eq!(d.nic.rx_frames, 5);
    assert!(d.rx_bytes_wrong > 0, "{d:?}");
}

/// Slow microengines on transmit: the frames the host posts wait for a context and go out in
/// order, fewer per second, still every one intact.
#[test]
fn slow_microengines_send_every_frame_in_order() {
    let fast = transmit("", "", 40, 1472);
    let slow = transmit("count = 1\nthreads = 1\nclock_mhz = 20.0", "", 40, 1472);
    for s in [&fast, &slow] {
        let rd = me(&s.hosts[1]).device.unwrap();
        assert_eq!((rd.nic.rx_frames, rd.rx_bytes_wrong), (40, 0));
    }
    let t = |s: &ClusterStats| me(&s.hosts[1]).last_done_ns;
    assert!(t(&slow) > 2.0 * t(&fast), "{} vs {}", t(&slow), t(&fast));
}

/// Bad modes are refused with the key named.
#[test]
fn bad_microengine_modes_are_refused() {
    for (over, key) in [
        ("rx_mode = \"nic\"", "rx_mode"),
        ("tx_mode = \"dma\"", "tx_mode"),
        ("iperf = true\nframe_bytes = 30", "frame_bytes"),
        ("tbuf_bytes = 64", "tbuf_bytes"),
    ] {
        let e = cfg("ixp-host", &ixp(over)).unwrap_err();
        assert!(e.contains(key), "{over}: {e}");
    }
}

fn wun(experiment: &str, config: &str, payload: usize, variant: Option<&str>) -> f64 {
    let net = NetworkIoConfig::preset("ixp2350").unwrap();
    let p = Point {
        experiment: experiment.into(),
        config: config.into(),
        payload_bytes: payload,
        variant: variant.map(str::to_string),
    };
    let r = wun_onload::run_point(&net, &p).expect("a checked run");
    assert!(r.stats.delivered > 0 && r.stats.delivered <= r.stats.sent);
    r.stats.throughput_mbps
}

/// Wun & Crowley on the one platform: at full-size datagrams the softnic and the onloader
/// receive well above the emu nic and the onloader leads; on transmit both beat the emu nic. Every datagram delivered is byte-checked inside the run.
#[test]
fn onloader_and_softnic_beat_the_emu_nic() {
    let (emu, soft, on) = (
        wun("rx", "emu", 1472, None),
        wun("rx", "softnic", 1472, None),
        wun("rx", "onloader", 1472, None),
    );
    assert!(soft > 1.5 * emu && on > soft, "{emu} {soft} {on}");
    assert!(on < 1000.0);
    let (emu, soft, on) = (
        wun("tx", "emu", 1472, None),
        wun("tx", "softnic", 1472, None),
        wun("tx", "onloader", 1472, None),
    );
    assert!(soft > 1.5 * emu && on > 1.5 * emu, "{emu} {soft} {on}");
}

/// Section 6 on the one platform (`mapping-cache`, `l2-push`): without the L2 push the softnic's
/// host reads the frame from DRAM and its driver invalidates the buffer's L2 lines, so it
/// receives less; the preset's push is the `rx` point; without the mapping cache the onloader's
/// recvmsg walks and cleans every buffer and falls below the softnic; a variant or configuration
/// an experiment does not have is refused, naming it. Every run is byte-checked.
#[test]
fn the_l2_push_and_the_mapping_cache_move_receive_on_the_one_platform() {
    let on = wun("l2-push", "softnic", 1472, Some("push-on"));
    let off = wun("l2-push", "softnic", 1472, Some("push-off"));
    assert!(off < 0.95 * on, "{on} {off}");
    assert_eq!(on, wun("rx", "softnic", 1472, None));
    let o_on = wun("l2-push", "onloader", 1472, Some("push-on"));
    let o_off = wun("l2-push", "onloader", 1472, Some("push-off"));
    assert!(o_off < o_on, "{o_on} {o_off}");
    let hit = wun("mapping-cache", "onloader", 1472, Some("cache-on"));
    let walk = wun("mapping-cache", "onloader", 1472, Some("cache-off"));
    assert!(walk < 0.9 * hit && walk < on, "{hit} {walk} {on}");
    assert_eq!(hit, wun("rx", "onloader", 1472, None));
    let net = NetworkIoConfig::preset("ixp2350").unwrap();
    for (e, c, v, named) in [
        ("l2-push", "softnic", "cache-on", "cache-on"),
        (
            "mapping-cache",
            "softnic",
            "cache-off",
            "mapping-cache softnic",
        ),
        ("l2-push", "emu", "push-on", "l2-push emu"),
    ] {
        let p = Point {
            experiment: e.into(),
            config: c.into(),
            payload_bytes: 1472,
            variant: Some(v.into()),
        };
        let err = wun_onload::run_point(&net, &p).unwrap_err().to_string();
        assert!(err.contains(named), "{e} {c} {v}: {err}");
    }
}

/// Where slow microengines are the bottleneck (the onloader's receive blocks alone, 64 B), two
/// microengines or twice the clock nearly double the throughput and eight contexts beat one;
/// every run ends checked, none aborts.
#[test]
fn microengine_count_clock_and_threads_move_the_me_bound_throughput() {
    let base = wun("me-bound", "onloader", 64, Some("me1-50mhz-t8"));
    let two = wun("me-bound", "onloader", 64, Some("me2-50mhz-t8"));
    let fast = wun("me-bound", "onloader", 64, Some("me1-100mhz-t8"));
    let one = wun("me-bound", "onloader", 64, Some("me1-100mhz-t1"));
    let preset = wun("me-bound", "onloader", 64, Some("me2-900mhz-t8"));
    assert!(two > 1.6 * base && fast > 1.6 * base, "{base} {two} {fast}");
    assert!(one < fast, "{one} {fast}");
    assert!(preset > fast, "{preset} {fast}");
}

/// `n` frames of 1514 B at line rate into `ixp-host` running `program` (a `nic-rx`-like
/// driver written out as text).
fn receive_with(program: &str, n: u64) -> ClusterStats {
    let tx_over = "[io]\nframe_bytes = 1514\n[io.nic]\nmac_gbps = 1.0\n";
    let progs = vec![
        vec![Workload::load("nic-tx", &kv(&[("messages", n), ("gap", 0)])).unwrap()],
        vec![Workload::from_toml_str(program, "test", &kv(&[("stack", 20_000)])).unwrap()],
    ];
    checked_pair(
        &cfg("larsen-io", tx_over).unwrap(),
        &cfg("ixp-host", "").unwrap(),
        &progs,
    )
}

/// Adaptive polling (Wun & Crowley's softnic; a program's `poll`): a frame written back while
/// the host's handler runs is taken by the poll loop's next turn, without the interrupt's
/// costs, so a host bound by its per-interrupt work keeps up far better; every frame still lands
/// intact and is handled once.
#[test]
fn a_poll_loop_takes_the_frames_that_came_during_the_handler() {
    let base = include_str!("../../../presets/workloads/nic-rx.toml");
    // The handler: an expensive interrupt (20,000 instructions); the poll turn: 2,000.
    let poll = format!(
        "{base}\n[[poll]]\nkind = \"compute\"\nn = 2000\n\n[[poll]]\nkind = \"uncached\"\nat = {{ region = \"rdt\" }}\nwrite = true\n"
    );
    let n = 40;
    let (per_irq, polled) = (receive_with(base, n), receive_with(&poll, n));
    for s in [&per_irq, &polled] {
        let d = me(&s.hosts[1]).device.unwrap();
        assert_eq!((d.nic.rx_frames, d.rx_bytes_wrong), (n, 0), "{d:?}");
        // One handler run or poll turn per frame.
        assert_eq!(s.hosts[1].interrupts, n);
    }
    let t = |s: &ClusterStats| s.hosts[1].time_ns;
    assert!(
        t(&polled) < 0.7 * t(&per_irq),
        "polled {} ns against {} ns",
        t(&polled),
        t(&per_irq)
    );
}

/// Fig. 5 on the one platform: the onloader's receive blocks alone keep up with the sender;
/// with the user program (recvmsg on the host) the host binds.
#[test]
fn the_receive_blocks_alone_keep_up_and_the_host_binds() {
    let alone = wun("rx-components", "onloader", 1472, Some("without-app"));
    let with = wun("rx-components", "onloader", 1472, Some("with-app"));
    assert!(alone > 900.0, "{alone}");
    // The host binds: well below the blocks alone. How far below is the paper's host ceiling
    // (500 Mb/s), a prediction the reproduction judges, not this test.
    assert!(with < 0.8 * alone, "{with} {alone}");
}

/// Section 7 on the one platform: the microengines copy DRAM to DRAM faster than the host
/// core's copy loop (every line they write checked inside the run).
#[test]
fn wun_dram_copy_runs_on_the_platform() {
    let me = wun("dram-copy", "me", 2048, None);
    let host = wun("dram-copy", "xscale", 2048, None);
    assert!(me > 2.0 * host, "{me} {host}");
}

/// The host's loads of the microengines' on-chip memories (the public IXP2000 driver's RX
/// descriptors in SRAM, its rings in scratch) wait the memories' read latencies, `sram_ns` and
/// `scratch_ns`, which move them; a store there is posted; a load of their other registers is a
/// round trip on the chip bus.
#[test]
fn host_loads_of_the_microengines_sram_and_scratch_take_their_latencies() {
    let per_access = |base: u64, write: bool, me: &str| {
        let prog = format!(
            "name = \"regs\"\niterations = 200\n[[regions]]\nname = \"r\"\nbase = {base:#x}\nsize = 8\nstride = 0\n\
             [[ops]]\nkind = \"uncached\"\nat = {{ region = \"r\" }}\nwrite = {write}\n"
        );
        let w = Workload::from_toml_str(&prog, "regs", &BTreeMap::new()).unwrap();
        let over = if me.is_empty() {
            String::new()
        } else {
            ixp(me)
        };
        Platform::new(&cfg("ixp-host", &over).unwrap())
            .unwrap()
            .run(&w)
            .unwrap()
            .time_ns
            / 200.0
    };
    let (sram, scratch, csr) = (0xf001_8000, 0xf001_0000, 0xf000_0100);
    let sram_ns = per_access(sram, false, "");
    let scratch_ns = per_access(scratch, false, "");
    let csr_ns = per_access(csr, false, "");
    // ixp-host.toml: sram_ns 150, scratch_ns 100; the chip bus's address phase and the core's
    // issue add a few ns.
    assert!(
        (150.0..165.0).contains(&sram_ns),
        "{sram_ns} ns per SRAM load"
    );
    assert!(
        (100.0..115.0).contains(&scratch_ns),
        "{scratch_ns} ns per scratch load"
    );
    assert!(csr_ns < 0.6 * scratch_ns, "{csr_ns} ns per register load");
    let slow = per_access(sram, false, "sram_ns = 600.0");
    assert!(
        (slow - sram_ns - 450.0).abs() < 10.0,
        "{slow} against {sram_ns}"
    );
    let slow = per_access(scratch, false, "scratch_ns = 400.0");
    assert!(
        (slow - scratch_ns - 300.0).abs() < 10.0,
        "{slow} against {scratch_ns}"
    );
    assert!(
        per_access(sram, true, "") < 0.3 * sram_ns,
        "SRAM stores are posted"
    );
}
