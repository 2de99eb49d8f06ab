//! LPDDR5 WCK2CK synchronisation (`controller.wck = "auto-sync-off"`): each rule at its earliest
//! (or latest) legal cycle, on both sides: the controller's `wck::WckSync` and the independent
//! checker (`checker/wck.rs`) must agree on where the boundary lies, computed here from the bin's
//! parameters by the standard's formula; the controller's schedules replay clean, issue a CAS
//! exactly where the WCK stopped, and a log with a CAS removed or moved is caught.
use movelab_dram::checker::{CheckReport, Checker};
use movelab_dram::command::{CommandKind, CommandKind::*, CommandRecord, CommandSink};
use movelab_dram::config::Config;
use movelab_dram::generator::Xoshiro256StarStar;
use movelab_dram::request::{Op, Request, TraceItem};
use movelab_dram::spec::DramSpec;
use movelab_dram::system::{log_header, simulate, RunOptions};
use movelab_dram::wck::WckSync;

fn setup(wck: &str) -> (Config, DramSpec) {
    let mut cfg = Config::preset("lpddr5-6400-wck").unwrap();
    cfg.controller.refresh = "none".into();
    cfg.controller.wck = wck.into();
    let spec = cfg.resolve("test").unwrap();
    (cfg, spec)
}

fn rec(cycle: u64, kind: CommandKind, rank: u32, bank: (u32, u32)) -> CommandRecord {
    CommandRecord {
        cycle,
        kind,
        channel: 0,
        rank,
        bank_group: bank.0,
        bank: bank.1,
        row: if kind == Cas { 0 } else { 5 },
        column: 0,
        dst: None,
    }
}

fn check(cfg: &Config, spec: &DramSpec, log: &[CommandRecord]) -> CheckReport {
    let mut ck = Checker::new(&log_header(cfg, spec)).unwrap();
    for r in log {
        let _ = ck.check(r);
    }
    ck.finish()
}

fn keys(r: &CheckReport) -> Vec<String> {
    r.violations.iter().map(|v| v.rule.clone()).collect()
}

fn has(r: &CheckReport, index: usize, key: &str) -> bool {
    r.violations
        .iter()
        .any(|v| v.index == index as u64 && v.rule_key() == key)
}

/// ACT of bank 0.0 and of bank 1.0 (for the probes), then a CAS and the first column command
/// `kind` to bank 0.0 at nRCD: the WCK runs from there.
fn opened(spec: &DramSpec, kind: CommandKind) -> Vec<CommandRecord> {
    let rcd = spec.t("nRCD");
    vec![
        rec(0, Act, 0, (0, 0)),
        rec(spec.t("nRRD"), Act, 0, (1, 0)),
        rec(rcd - 1, Cas, 0, (0, 0)),
        rec(rcd, kind, 0, (0, 0)),
    ]
}

/// How long the WCK stays synchronised after a read / write, by the standard's formula
/// (RL / WL + BL/n_max + RD(tWCKPST / tCK)).
fn hold(spec: &DramSpec, kind: CommandKind) -> u64 {
    let lat = if kind.is_read() {
        spec.t("nCL")
    } else {
        spec.t("nCWL")
    };
    lat + spec.t("nBL_max") + spec.t("nWCKPST")
}

#[test]
fn the_bin_gives_the_published_wck_timings() {
    let (_, spec) = setup("auto-sync-off");
    // LPDDR5-6400 at WCK:CK 4:1, RL set 0 and WL set A (LiteDRAM's and Renesas' JESD209-5 tables).
    for (k, v) in [
        ("nWCKENL_RD", 7),
        ("nWCKENL_WR", 4),
        ("nWCKPRE_static", 4),
        ("nWCKPRE_toggle_RD", 7),
        ("nWCKPRE_toggle_WR", 2),
        ("nWCKPST", 0),
        ("WCK_SYNC", 1),
    ] {
        assert_eq!(spec.param(k), Some(v), "{k}");
    }
    // The preamble after a CAS ends when the data of the column command one clock later starts.
    assert_eq!(7 - 1 + 4 + 7, spec.t("nCL"));
    assert_eq!(4 - 1 + 4 + 2, spec.t("nCWL"));
    // Always-on runs carry no WCK_SYNC: their logs take no CAS.
    let (_, on) = setup("always-on");
    assert_eq!(on.param("WCK_SYNC"), None);
}

#[test]
fn a_cas_is_legal_only_once_the_wck_stopped() {
    let (cfg, spec) = setup("auto-sync-off");
    for (kind, lat_key) in [(Rd, "nCL"), (Wr, "nCWL"), (Rda, "nCL"), (Wra, "nCWL")] {
        let mut log = opened(&spec, kind);
        let t = log[3].cycle;
        let earliest = t + hold(&spec, kind) + 1;
        // The controller's side.
        let mut w = WckSync::from_spec(&spec, 1).unwrap();
        w.issued(kind, 0, t);
        assert!(
            !w.needs_cas(0, earliest - 1),
            "{kind}: synchronised through {}",
            earliest - 1
        );
        assert!(w.needs_cas(0, earliest), "{kind}: stopped at {earliest}");
        // The checker's: a CAS (and a read on the next clock) at `earliest` is clean ...
        let follow = if kind.is_read() { Rd } else { Wr };
        let bank = (1, 0);
        let probe = log.len();
        log.push(rec(earliest, Cas, 0, bank));
        log.push(rec(earliest + 1, follow, 0, bank));
        let ok = check(&cfg, &spec, &log);
        assert!(ok.ok, "{kind}: CAS at {earliest}: {:?}", keys(&ok));
        // ... one clock earlier the WCK still runs: a second sync is prohibited.
        log[probe].cycle = earliest - 1;
        log[probe + 1].cycle = earliest;
        let early = check(&cfg, &spec, &log);
        let key = format!("{lat_key} + nBL_max + nWCKPST + 1");
        assert!(has(&early, probe, &key), "{kind}: {:?}", keys(&early));
    }
}

#[test]
fn a_column_command_without_cas_is_legal_until_the_wck_stops() {
    let (cfg, spec) = setup("auto-sync-off");
    for kind in [Rd, Wr] {
        let mut log = opened(&spec, kind);
        let t = log[3].cycle;
        let latest = t + hold(&spec, kind);
        let w = {
            let mut w = WckSync::from_spec(&spec, 1).unwrap();
            w.issued(kind, 0, t);
            w
        };
        assert!(!w.needs_cas(0, latest) && w.needs_cas(0, latest + 1));
        let probe = log.len();
        log.push(rec(latest, kind, 0, (0, 0)));
        let ok = check(&cfg, &spec, &log);
        assert!(ok.ok, "{kind} at {latest}: {:?}", keys(&ok));
        log[probe].cycle = latest + 1;
        let late = check(&cfg, &spec, &log);
        assert!(
            has(&late, probe, "WCK2CK sync off"),
            "{kind}: {:?}",
            keys(&late)
        );
    }
}

#[test]
fn the_first_column_command_needs_a_cas() {
    let (cfg, spec) = setup("auto-sync-off");
    let rcd = spec.t("nRCD");
    let log = vec![rec(0, Act, 0, (0, 0)), rec(rcd, Rd, 0, (0, 0))];
    let r = check(&cfg, &spec, &log);
    assert!(has(&r, 1, "WCK2CK sync off"), "{:?}", keys(&r));
    let w = WckSync::from_spec(&spec, 1).unwrap();
    assert!(w.needs_cas(0, rcd));
}

#[test]
fn a_cas_pairs_with_the_column_command_on_the_next_clock() {
    let (cfg, spec) = setup("auto-sync-off");
    let rcd = spec.t("nRCD");
    // Its column command one clock late.
    let log = vec![
        rec(0, Act, 0, (0, 0)),
        rec(rcd - 1, Cas, 0, (0, 0)),
        rec(rcd + 1, Rd, 0, (0, 0)),
    ];
    let r = check(&cfg, &spec, &log);
    assert!(has(&r, 2, "CAS pair"), "{:?}", keys(&r));
    // Something else on the next clock.
    let log = vec![
        rec(0, Act, 0, (0, 0)),
        rec(rcd - 1, Cas, 0, (0, 0)),
        rec(rcd, Pre, 0, (1, 0)),
    ];
    let r = check(&cfg, &spec, &log);
    assert!(has(&r, 2, "CAS pair"), "{:?}", keys(&r));
    // The column command to another rank.
    let mut two = cfg.clone();
    two.dram.ranks = 2;
    let spec2 = two.resolve("test").unwrap();
    let log = vec![
        rec(0, Act, 1, (0, 0)),
        rec(rcd - 1, Cas, 0, (0, 0)),
        rec(rcd, Rd, 1, (0, 0)),
    ];
    let r = check(&two, &spec2, &log);
    assert!(has(&r, 2, "CAS pair"), "{:?}", keys(&r));
    // A CAS at the end of the log.
    let log = vec![rec(0, Act, 0, (0, 0)), rec(rcd - 1, Cas, 0, (0, 0))];
    let r = check(&cfg, &spec, &log);
    assert!(has(&r, 2, "CAS pair"), "{:?}", keys(&r));
    // A CAS on a log whose WCK was always on.
    let (on, on_spec) = setup("always-on");
    let log = vec![
        rec(0, Act, 0, (0, 0)),
        rec(rcd - 1, Cas, 0, (0, 0)),
        rec(rcd, Rd, 0, (0, 0)),
    ];
    let r = check(&on, &on_spec, &log);
    assert!(has(&r, 1, "CAS without WCK2CK sync"), "{:?}", keys(&r));
}

#[test]
fn a_preamble_that_ends_after_the_data_is_refused() {
    // The controller's side: a configuration error naming the parameter.
    let mut cfg = Config::preset("lpddr5-6400-wck").unwrap();
    cfg.dram.timing.insert("nWCKENL_RD".into(), 8);
    let e = cfg.resolve("test").unwrap_err().to_string();
    assert!(e.contains("dram.timing.nWCKENL_RD"), "{e}");
    // The checker's, on a header whose WCK timings were changed after the run.
    let (cfg, spec) = setup("auto-sync-off");
    let mut h = log_header(&cfg, &spec);
    h.timing.insert("nWCKPRE_toggle_WR".into(), 3);
    let e = Checker::new(&h).unwrap_err().to_string();
    assert!(e.contains("WCK preamble of a write"), "{e}");
    // And the mode on a standard without a WCK.
    let mut ddr4 = Config::preset("ddr4-2400r").unwrap();
    ddr4.controller.wck = "auto-sync-off".into();
    let e = ddr4.resolve("test").unwrap_err().to_string();
    assert!(e.contains("controller.wck"), "{e}");
    let mut bad = Config::preset("lpddr5-6400").unwrap();
    bad.controller.wck = "sometimes".into();
    assert!(bad.resolve("test").is_err() || Config::from_toml_str("[dram]\nspeed = \"LPDDR5-6400\"\npart = \"LPDDR5-8Gb-x16\"\n[controller]\nwck = \"sometimes\"\n", "t").is_err());
}

/// Collects the log.
#[derive(Default)]
struct Log(Vec<CommandRecord>);

impl CommandSink for Log {
    fn record(&mut self, r: &CommandRecord) {
        self.0.push(*r);
    }
}

/// Reads and writes at random addresses, in bursts separated by idle gaps long enough for the
/// WCK to stop.
fn bursty(seed: u64, n: usize) -> Vec<TraceItem> {
    let mut rng = Xoshiro256StarStar::seed_from_u64(seed);
    let mut cycle = 0;
    (0..n)
        .map(|i| {
            cycle += if i % 8 == 0 {
                40 + rng.below(60)
            } else {
                rng.below(3)
            };
            TraceItem::Req(Request {
                addr: rng.below(1 << 24) & !63,
                op: if rng.below(10) < 7 {
                    Op::Read
                } else {
                    Op::Write
                },
                arrival: Some(cycle),
            })
        })
        .collect()
}

fn run(cfg: &Config, items: &[TraceItem]) -> (movelab_dram::stats::Stats, Vec<CommandRecord>) {
    let mut log = Log::default();
    let s = simulate(
        cfg,
        items.iter().cloned().map(Ok),
        RunOptions {
            command_log: Some(&mut log),
            ..Default::default()
        },
    )
    .unwrap();
    (s, log.0)
}

#[test]
fn the_controller_issues_a_cas_exactly_where_the_wck_stopped() {
    for sched in ["frfcfs", "fcfs"] {
        for policy in ["open", "closed"] {
            for refresh in ["per-bank", "all-bank"] {
                let mut cfg = Config::preset("lpddr5-6400-wck").unwrap();
                cfg.controller.scheduler = sched.into();
                cfg.controller.row_policy = policy.into();
                cfg.controller.refresh = refresh.into();
                let spec = cfg.resolve("test").unwrap();
                let (stats, log) = run(&cfg, &bursty(3, 3000));
                let r = check(&cfg, &spec, &log);
                assert!(r.ok, "{sched} {policy} {refresh}: {:?}", keys(&r));
                // Every read or write has a CAS right before it exactly when the WCK had stopped.
                let mut last: Option<(u64, CommandKind)> = None;
                let mut cas = 0;
                for (i, c) in log.iter().enumerate() {
                    if c.kind.is_read() || c.kind.is_write() {
                        let stopped = last.is_none_or(|(t, k)| c.cycle > t + hold(&spec, k));
                        let after_cas = i > 0 && log[i - 1].kind == Cas;
                        assert_eq!(
                            stopped,
                            after_cas,
                            "{sched} {policy}: {} at {i}",
                            c.to_line()
                        );
                        last = Some((c.cycle, c.kind));
                    }
                    cas += usize::from(c.kind == Cas);
                }
                assert!(cas > 100, "{sched} {policy}: only {cas} CAS");
                assert_eq!(stats.commands.get("CAS").copied(), Some(cas as u64));
            }
        }
    }
}

#[test]
fn a_log_with_a_cas_removed_or_moved_is_caught() {
    let (cfg, spec) = setup("auto-sync-off");
    let (_, log) = run(&cfg, &bursty(5, 600));
    let at = log.iter().position(|c| c.kind == Cas).unwrap();
    let mut removed = log.clone();
    removed.remove(at);
    let r = check(&cfg, &spec, &removed);
    assert!(has(&r, at, "WCK2CK sync off"), "{:?}", keys(&r));
    let mut moved = log.clone();
    moved[at].cycle -= 1;
    let r = check(&cfg, &spec, &moved);
    assert!(has(&r, at + 1, "CAS pair"), "{:?}", keys(&r));
}

#[test]
fn a_cas_adds_one_clock_to_an_unloaded_read() {
    // One read into an idle channel: with the WCK stopped, the CAS takes the clock before the
    // read, which issues (and returns its data) one clock later than with the WCK always on.
    let one = [TraceItem::Req(Request {
        addr: 0,
        op: Op::Read,
        arrival: Some(0),
    })];
    let (on_cfg, _) = setup("always-on");
    let (off_cfg, _) = setup("auto-sync-off");
    let (on, on_log) = run(&on_cfg, &one);
    let (off, off_log) = run(&off_cfg, &one);
    assert_eq!(off.cycles, on.cycles + 1);
    assert_eq!(on_log.iter().filter(|c| c.kind == Cas).count(), 0);
    assert_eq!(off_log.iter().filter(|c| c.kind == Cas).count(), 1);
    // A stream keeps the WCK running: one CAS for the whole run.
    let stream: Vec<TraceItem> = (0..400u64)
        .map(|i| {
            TraceItem::Req(Request {
                addr: i * 64,
                op: Op::Read,
                arrival: Some(0),
            })
        })
        .collect();
    let (s_on, _) = run(&on_cfg, &stream);
    let (s_off, s_log) = run(&off_cfg, &stream);
    assert_eq!(s_log.iter().filter(|c| c.kind == Cas).count(), 1);
    assert_eq!(s_off.cycles, s_on.cycles + 1);
}
