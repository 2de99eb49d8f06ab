//! Composition: a platform lists its agents (`[[agents]]`), each a kind with its parameters, the
//! offloads it takes and from which core groups. `[copy] mechanism` and `[io]` are shorthand for
//! the same agents; the composed preset `server-composed` holds a descriptor NIC with DDIO,
//! RowClone-ZI, an on-die ASYNC copy engine and a small multithreaded core at once.
use movelab_dram::checker::Checker;
use movelab_dram::command::CommandSink;
use movelab_dram::command::{CommandRecord, LogHeader};
use movelab_platform::config::platform::PlatformConfig;
use movelab_platform::{Platform, PlatformStats, Workload};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

fn cfg(plat: &str, over: &str) -> Result<PlatformConfig, String> {
    let base = PlatformConfig::preset(plat).map_err(|e| e.to_string())?;
    if over.is_empty() {
        return Ok(base);
    }
    base.with_overrides(toml::Value::Table(over.parse().expect("toml")), "test")
        .map_err(|e| e.to_string())
}

fn params(kv: &[(&str, u64)]) -> BTreeMap<String, u64> {
    kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn run(c: &PlatformConfig, w: &Workload) -> PlatformStats {
    Platform::new(c).expect("platform").run(w).expect("run")
}

fn refused(plat: &str, over: &str) -> String {
    match cfg(plat, over).and_then(|c| Platform::new(&c).map(|_| ()).map_err(|e| e.to_string())) {
        Ok(()) => panic!("{over} was accepted"),
        Err(e) => e,
    }
}

/// Statistics as JSON without the per-agent section and the names that say how the agent was
/// listed: what the simulation computed.
fn numbers(s: &PlatformStats) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap();
    let o = v.as_object_mut().unwrap();
    for k in ["agents", "mechanism", "placement", "mode"] {
        o.remove(k);
    }
    v
}

/// `[copy] mechanism` is shorthand: the same agent listed in `[[agents]]` computes the same run.
#[test]
fn copy_mechanism_is_shorthand_for_an_agent() {
    let tcp = Workload::load("tcp-rx", &params(&[("packets", 40)])).unwrap();
    let zero = Workload::load("bulk-zero", &params(&[("pages", 8)])).unwrap();
    for (plat, sugar, listed, w) in [
        (
            "zhao-uma-emc",
            "copy = { mechanism = \"ce\", mode = \"ASYNC\" }",
            "[[agents]]\nkind = \"copy-engine\"\nparams = { mode = \"ASYNC\" }",
            &tcp,
        ),
        (
            "zhao-numa-imc",
            "copy = { mechanism = \"ce\", mode = \"SYNC_WLB\", placement = \"on-die\" }",
            "[[agents]]\nkind = \"copy-engine\"\nparams = { mode = \"SYNC_WLB\", placement = \"on-die\" }",
            &tcp,
        ),
        (
            "rowclone-system",
            "copy = { mechanism = \"rowclone-zi\" }",
            "[[agents]]\nkind = \"in-memory\"\nparams = { mechanism = \"rowclone-zi\" }",
            &zero,
        ),
        (
            "rowclone-system",
            "copy = { mechanism = \"mc-dma\" }",
            "[[agents]]\nkind = \"in-memory\"\nparams = { mechanism = \"mc-dma\" }",
            &zero,
        ),
    ] {
        let a = run(&cfg(plat, sugar).unwrap(), w);
        let b = run(&cfg(plat, listed).unwrap(), w);
        assert!(a.offloads > 0, "{plat} {sugar}: nothing offloaded");
        assert_eq!(numbers(&a), numbers(&b), "{plat}: {sugar} vs {listed}");
        assert_eq!(a.agents.len(), 1);
        assert_eq!(a.agents[0].ops, a.offloads);
        assert_eq!(b.agents[0].kind, a.agents[0].kind);
    }
}

/// Offloads route per operation kind and per core group: a copy engine takes group 0's copies,
/// RowClone group 1's copies, and RowClone every group's zeroing; each agent's count is the
/// operations its groups issued.
#[test]
fn offloads_route_per_operation_and_core_group() {
    let over = r#"
[[cores]]
count = 1
workload = "bulk-copy"
params = { pages = 6 }
[[cores]]
count = 1
workload = "bulk-copy"
params = { pages = 4 }
[[cores]]
count = 1
workload = "bulk-zero"
params = { pages = 5 }
[[agents]]
kind = "copy-engine"
name = "ce0"
groups = [0]
params = { mode = "ASYNC" }
[[agents]]
kind = "in-memory"
name = "rc"
groups = [1, 2]
params = { mechanism = "rowclone" }
"#;
    let c = cfg("rowclone-multicore", over).unwrap();
    let w = Workload::load("bulk-copy", &params(&[("pages", 1)])).unwrap();
    let s = run(&c, &w);
    let by = |n: &str| s.agents.iter().find(|a| a.name == n).unwrap().clone();
    let (ce, rc) = (by("ce0"), by("rc"));
    assert_eq!(ce.takes, ["copy"]);
    assert_eq!(rc.takes, ["copy", "zero"]);
    // bulk-copy and bulk-zero offload one operation per page.
    let pages = |w: &str, n: u64| {
        Workload::load(w, &params(&[("pages", n)]))
            .unwrap()
            .ops()
            .filter(|o| {
                matches!(
                    o,
                    movelab_platform::config::workload::Op::Copy { .. }
                        | movelab_platform::config::workload::Op::Init { .. }
                )
            })
            .count() as u64
    };
    assert_eq!(ce.ops, pages("bulk-copy", 6));
    assert_eq!(rc.ops, pages("bulk-copy", 4) + pages("bulk-zero", 5));
    assert_eq!(s.offloads, ce.ops + rc.ops);
    assert!(ce.lines.engine_read > 0 && rc.lines.engine_read == 0);
}

/// Bad agent lists are refused naming the agent and key.
#[test]
fn bad_agent_lists_are_refused_naming_the_key() {
    let z = "rowclone-system";
    let ce = "[[agents]]\nkind = \"copy-engine\"";
    let rc = "[[agents]]\nkind = \"in-memory\"";
    let cases: &[(String, &[&str])] = &[
        (
            "[[agents]]\nkind = \"dma-engine\"".into(),
            &["agents[0].kind", "copy-engine"],
        ),
        (
            format!("{ce}\nparams = {{ mode = \"FAST\" }}"),
            &["agents[0].params.mode"],
        ),
        (
            format!("{ce}\nparams = {{ moed = \"ASYNC\" }}"),
            &["agents[0].params.moed"],
        ),
        (rc.into(), &["agents[0].params.mechanism"]),
        (
            format!("{rc}\ntakes = [\"fill\"]\nparams = {{ mechanism = \"rowclone\" }}"),
            &["agents[0].takes", "fill"],
        ),
        (format!("{ce}\ngroups = [3]"), &["groups", "core group 3"]),
        // Two agents taking one group's copies.
        (
            format!(
                "copy = {{ mechanism = \"ce\" }}\n{rc}\nparams = {{ mechanism = \"rowclone\" }}"
            ),
            &["both take", "copy"],
        ),
        // One bulk mode in the controller.
        (
            format!(
                "{rc}\ntakes = [\"zero\"]\nparams = {{ mechanism = \"rowclone\" }}\n\
                 {rc}\ntakes = [\"copy\"]\nparams = {{ mechanism = \"mc-dma\" }}"
            ),
            &["mc-dma"],
        ),
        (
            "[[agents]]\nkind = \"nic\"\nparams = { preset = \"larsen-82598-gen1\" }".into(),
            &["agents[0].params"],
        ),
        (
            format!(
                "{ce}\nname = \"x\"\n{rc}\nname = \"x\"\ntakes = [\"zero\"]\n\
                 params = {{ mechanism = \"rowclone\" }}"
            ),
            &["'x' names two agents"],
        ),
        // Keys the agent's engine does not read, as it is placed and run.
        (
            format!("{ce}\nparams = {{ placement = \"on-die\", engine_memory_ns = 50.0 }}"),
            &["agents[0].params.engine_memory_ns", "on-die"],
        ),
        (
            format!("{ce}\nparams = {{ mode = \"SYNC_NLB\", engine_share = 0.5 }}"),
            &["agents[0].params.engine_share", "SYNC_NLB"],
        ),
        (
            format!("{ce}\nparams = {{ mode = \"SYNC_WLB\", pending_copy_entries = 4 }}"),
            &["agents[0].params.pending_copy_entries", "ASYNC"],
        ),
        (
            format!(
                "{ce}\nparams = {{ placement = \"off-die\", mode = \"ASYNC\", snoop_ack = \"after\" }}"
            ),
            &["agents[0].params.snoop_ack", "on-die"],
        ),
    ];
    for (over, want) in cases {
        let e = refused(z, over);
        assert!(want.iter().all(|w| e.contains(w)), "{over}: {e}");
    }
}

struct Collect(Rc<RefCell<Vec<CommandRecord>>>);
impl CommandSink for Collect {
    fn record(&mut self, r: &CommandRecord) {
        self.0.borrow_mut().push(*r);
    }
}

fn composed(over: &str, frames: u64) -> (PlatformStats, Vec<CommandRecord>, LogHeader) {
    composed_cfg(cfg("server-composed", over).unwrap(), frames)
}

fn composed_cfg(
    mut c: PlatformConfig,
    frames: u64,
) -> (PlatformStats, Vec<CommandRecord>, LogHeader) {
    c.cores[0].params.insert("messages".into(), frames);
    let w = Workload::load("server-rx", &BTreeMap::new()).unwrap();
    let mut p = Platform::new(&c).unwrap();
    p.sys.track_values();
    let log = Rc::new(RefCell::new(Vec::new()));
    p.mem_mut().set_command_log(Box::new(Collect(log.clone())));
    let header = p.mem_mut().log_header();
    let s = p.run(&w).unwrap();
    let sh = p.sys.shadow.as_ref().unwrap();
    assert!(sh.violations.is_empty(), "{:?}", sh.violations);
    // The agents' copies and zeroing, line by line against the oracle (none wrong, or the
    // violations above would say so).
    assert!(sh.copy_lines_checked > 0 && sh.copy_lines_wrong == 0);
    let recs = log.borrow().clone();
    (s, recs, header)
}

/// The composed server runs four kinds of agent from three papers (Larsen & Lee's descriptor
/// NIC with DDIO, RowClone-ZI, Zhao et al.'s on-die ASYNC copy engine) beside a small
/// multithreaded core: every agent works, every frame's bytes arrive as sent, every load sees
/// the last value written (value shadow), and the DRAM command log passes the checker.
#[test]
fn composed_server_runs_checked() {
    let frames = 12;
    let (s, recs, header) = composed("", frames);
    let by = |n: &str| s.agents.iter().find(|a| a.name == n).unwrap().clone();
    let nic = by("nic").device.expect("device stats");
    assert_eq!(nic.rx_frames_in, frames, "{nic:?}");
    assert_eq!(nic.rx_bytes_wrong, 0);
    assert_eq!(nic.rx_bytes_checked, frames * 1088);
    assert!(nic.lines_to_cache > 0, "DDIO: {nic:?}");
    let (zi, ce) = (by("rowclone-zi"), by("copy-engine"));
    assert!(zi.ops > 0 && ce.ops > 0, "{zi:?} {ce:?}");
    assert!(
        zi.lines.inserted > 0,
        "RowClone-ZI inserts zeroed lines: {zi:?}"
    );
    assert_eq!(s.per_core.len(), 9);
    assert!(s.per_core[1].interrupts > 0);
    let mut checker = Checker::new(&header).unwrap();
    assert!(recs.len() > 100, "{} commands", recs.len());
    for r in &recs {
        if let Err(v) = checker.check(r) {
            panic!("composed server: {}", v.message);
        }
    }
}

/// Each mechanism alone and all together, with the preset's own agents: DDIO and the copy engine
/// each shorten the network core's work, together they save more than either alone, and every
/// variant receives every frame intact. The variants differ only in the agents they keep.
#[test]
fn composition_variants_save_alone_and_together() {
    use movelab_platform::experiments::composition::{run as variants, variant};
    let none = toml::Value::Table(Default::default());
    let rows = variants(&none, 16, &mut |_, _| {}).unwrap();
    let by = |n: &str| rows.iter().find(|r| r.variant == n).unwrap().clone();
    let (base, ddio, ce, all) = (by("none"), by("ddio"), by("copy-engine"), by("all"));
    assert_eq!(base.saving, 0.0);
    assert!(ddio.saving > 0.05, "{ddio:?}");
    assert!(ce.saving > 0.02, "{ce:?}");
    assert!(all.saving > ddio.saving.max(ce.saving), "{all:?}");
    // The receive path runs once per frame received, not once per interrupt: each zeroing and
    // copy it makes is one offload.
    assert_eq!((all.zero_offloads, all.copy_offloads), (16, 16), "{all:?}");
    // The handler is slower than the frames: interrupts that come while it runs wait as one
    // (each taken in turn, they were about two a frame).
    assert!(rows.iter().all(|r| r.interrupts < r.frames), "{rows:?}");
    assert_eq!((base.zero_offloads, base.copy_offloads), (0, 0));
    assert!(rows.iter().all(|r| r.rx_bytes_wrong == 0 && r.frames == 16));
    // A variant is the preset with agents left out.
    let c = variant(&none, false, true, false, false).unwrap();
    let names: Vec<_> = c.agents.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["nic", "rowclone-zi"]);
    let c = variant(&none, false, false, true, true).unwrap();
    let names: Vec<_> = c.agents.iter().map(|a| a.kind.as_str()).collect();
    assert_eq!(names, ["idma", "copy-engine"]);
    // The iDMA variants receive every frame too (checked above for every row). The network
    // core's receive path is the same whichever device delivered the frame, so the iDMA moves
    // its time little; with the other mechanisms it saves as much as "all".
    let (idma, all_idma) = (by("idma"), by("all+idma"));
    assert!(idma.idma && !idma.ddio && all_idma.idma && all_idma.ddio);
    assert!(idma.saving.abs() < 0.1, "{idma:?}");
    assert!(all_idma.saving > ddio.saving.max(ce.saving), "{all_idma:?}");
    assert!(variants(&none, 0, &mut |_, _| {}).is_err());
}

/// A multithreaded core's contexts share its caches: each context's per-core misses are those its
/// own accesses caused (they used to repeat the physical core's totals in every context), so they
/// add up to the core's, and contexts that did different work show different counts.
#[test]
fn each_hardware_context_counts_its_own_misses() {
    let c = cfg("server-composed", "").unwrap();
    let w = Workload::load("server-rx", &params(&[("chunks", 4)])).unwrap();
    let s = run(&c, &w);
    let ctx: Vec<_> = s.per_core.iter().filter(|p| p.engine == 1).collect();
    assert_eq!(ctx.len(), 8);
    let (l1, l2): (u64, u64) = s
        .per_core
        .iter()
        .fold((0, 0), |a, p| (a.0 + p.l1_misses, a.1 + p.l2_misses));
    assert_eq!(
        (l1, l2),
        (s.caches.l1_misses, s.caches.l2_misses),
        "{:?}",
        s.per_core
    );
    assert!(
        ctx.iter().any(|p| p.l1_misses != ctx[0].l1_misses),
        "{ctx:?}"
    );
}

/// Longer than the rings: 1,000 frames through 512-descriptor rings, each buffer used twice. Every
/// variant receives every frame, each compared with the bytes as they left (the loopback check
/// used to compare a frame with its TX buffer as it was when the frame landed: after the driver
/// had reused it; and a driver running a ring ahead of the NIC used to overwrite RX descriptors,
/// so frames landed at address 0, with the run ending normally).
#[test]
fn composition_runs_longer_than_its_rings() {
    use movelab_platform::experiments::composition::run as variants;
    let none = toml::Value::Table(Default::default());
    let rows = variants(&none, 1000, &mut |_, _| {}).unwrap();
    assert_eq!(rows.len(), 10);
    for r in &rows {
        assert_eq!((r.frames, r.rx_bytes_wrong), (1000, 0), "{r:?}");
        // The receive path ran once per frame received (server-rx's handler_per_frame): each of
        // its zeroings and copies was offloaded where the variant has the agent, and no more.
        assert_eq!(
            r.zero_offloads,
            if r.rowclone_zi { 1000 } else { 0 },
            "{r:?}"
        );
        assert_eq!(
            r.copy_offloads,
            if r.copy_engine { 1000 } else { 0 },
            "{r:?}"
        );
        // One vector for TX and RX write-backs, about two interrupts a frame raised; those that
        // came while a handler ran waited as one, so fewer were taken than frames.
        assert!(r.interrupts > 0 && r.interrupts < 1000, "{r:?}");
    }
}

/// A driver posting RX buffers faster than frames arrive (three per frame sent) runs the RX ring
/// over: refused with an error naming the ring and what to change, as a TX ring overrun is.
#[test]
fn a_driver_running_over_its_rx_ring_is_refused() {
    let mut c = cfg("server-composed", "").unwrap();
    for (k, v) in [("messages", 400), ("rx_post", 3), ("gap", 8000)] {
        c.cores[0].params.insert(k.into(), v);
    }
    let w = Workload::load("server-rx", &params(&[("chunks", 1), ("chunk", 100)])).unwrap();
    let e = Platform::new(&c).unwrap().run(&w).unwrap_err().to_string();
    assert!(
        e.contains("ring overrun")
            && e.contains("512-descriptor RX ring")
            && e.contains("io.nic.rx_ring"),
        "{e}"
    );
}

/// The composed server receiving through Larsen & Lee's iDMA (the adapter's frames into the
/// pinned buffer with DDIO, the engine moving them into the posted buffers) with RowClone-ZI and
/// the on-die ASYNC copy engine, beside the small multithreaded core: every frame's bytes arrive
/// as sent, every agent copy is checked against the oracle, every load sees the last value
/// written, and the DRAM command log passes the checker.
#[test]
fn composed_server_with_idma_runs_checked() {
    use movelab_platform::experiments::composition::variant;
    let none = toml::Value::Table(Default::default());
    let frames = 12;
    let (s, recs, header) = composed_cfg(variant(&none, true, true, true, true).unwrap(), frames);
    let kinds: std::collections::BTreeSet<_> = s.agents.iter().map(|a| a.name.clone()).collect();
    assert!(
        kinds.contains("idma") && !kinds.contains("nic"),
        "{kinds:?}"
    );
    let by = |n: &str| s.agents.iter().find(|a| a.name == n).unwrap().clone();
    let d = by("idma").device.expect("device stats");
    assert_eq!(d.rx_frames_in, frames, "{d:?}");
    assert_eq!(d.nic.rx_frames, frames, "{d:?}");
    assert_eq!(d.rx_bytes_checked, frames * 1088);
    assert_eq!(d.rx_bytes_wrong, 0);
    assert!(d.lines_to_cache > 0, "DDIO: {d:?}");
    let (zi, ce) = (by("rowclone-zi"), by("copy-engine"));
    assert!(zi.ops > 0 && ce.ops > 0, "{zi:?} {ce:?}");
    assert!(s.per_core[1].interrupts > 0);
    let mut checker = Checker::new(&header).unwrap();
    assert!(recs.len() > 100, "{} commands", recs.len());
    for r in &recs {
        if let Err(v) = checker.check(r) {
            panic!("composed server with the iDMA: {}", v.message);
        }
    }
}

/// A looped-back NIC whose driver posts no RX buffers (nic-tx on the composed server) holds the
/// frames it receives; once every program is done the run ends (it used to stall), with every
/// frame received by the MAC and none delivered.
#[test]
fn frames_without_rx_buffers_end_the_run() {
    let c = cfg("server-composed", "").unwrap();
    let w = Workload::load("nic-tx", &params(&[("messages", 3)])).unwrap();
    let s = run(&c, &w);
    let nic = s
        .agents
        .iter()
        .find(|a| a.name == "nic")
        .and_then(|a| a.device.clone())
        .expect("nic");
    assert!(nic.frames > 0 && nic.rx_frames_in == nic.frames, "{nic:?}");
    assert!(
        nic.nic.rx_frames < nic.rx_frames_in,
        "frames are left without a buffer: {nic:?}"
    );
    assert!(s.time_ns < 1e6, "{}", s.time_ns);
}

/// Parameters given to a core group that runs the run's workload would be lost: refused.
#[test]
fn group_parameters_without_a_workload_are_refused() {
    let e = refused(
        "server-composed",
        "[[cores]]\ncount = 1\nparams = { chunks = 1 }\n",
    );
    assert!(e.contains("cores[0].params"), "{e}");
}
