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
    let end = |host| End {
        host,
        agent: String::new(),
    };
    let link = LinkSpec {
        a: end(0),
        b: end(1),
        meters: 3.0,
        ns_per_meter: 5.0,
        gbps: None,
    };
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
}
