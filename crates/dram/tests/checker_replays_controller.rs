//! The oracle test: the independent checker replays the command log the controller issued, for
//! every preset, both schedulers and both row policies, on randomized traffic with bulk copies and
//! zeroing through both bulk mechanisms. Any rule the controller's rule table gets wrong shows up
//! here as a violation.
use movelab_dram::checker::{CheckReport, Checker};
use movelab_dram::command::{CommandKind, CommandRecord, CommandSink};
use movelab_dram::config::{builtin_config_names, Config};
use movelab_dram::generator::Xoshiro256StarStar;
use movelab_dram::request::{BulkKind, BulkOp, Op, Request, TraceItem};
use movelab_dram::system::{log_header, simulate, RunOptions};

/// Streams records into the checker as the controller issues them.
struct CheckSink {
    checker: Checker,
    first: Option<String>,
    recent: std::collections::VecDeque<String>,
    /// (channel, cycle) of the last command, and the clocks in which a channel issued two.
    last: Option<(u32, u64)>,
    pairs: u64,
    /// Per channel, the cycle and kind of the last row command (HBM3 / HBM4's row bus), and the
    /// PREs that went on a falling edge: in a clock that carried another row command, or in the
    /// clock after an activation (whose 1.5 clocks hold its rising edge).
    last_row: std::collections::HashMap<u32, (u64, CommandKind)>,
    falling: u64,
}

impl CommandSink for CheckSink {
    fn record(&mut self, r: &CommandRecord) {
        if self.last == Some((r.channel, r.cycle)) {
            self.pairs += 1;
        }
        self.last = Some((r.channel, r.cycle));
        if !matches!(
            r.kind,
            CommandKind::Rd
                | CommandKind::Rda
                | CommandKind::Wr
                | CommandKind::Wra
                | CommandKind::Tr
        ) {
            if let Some(&(c, k)) = self.last_row.get(&r.channel) {
                let act = matches!(k, CommandKind::Act | CommandKind::Actc | CommandKind::Actm);
                if r.kind == CommandKind::Pre && (c == r.cycle || (act && c + 1 == r.cycle)) {
                    self.falling += 1;
                }
            }
            self.last_row.insert(r.channel, (r.cycle, r.kind));
        }
        self.recent.push_back(r.to_line());
        if self.recent.len() > 12 {
            self.recent.pop_front();
        }
        if let Err(v) = self.checker.check(r) {
            if self.first.is_none() {
                let ctx: Vec<String> = self.recent.iter().cloned().collect();
                self.first = Some(format!("{} after:\n{}", v.message, ctx.join("\n")));
            }
        }
    }
}

/// Random line traffic with bulk operations mixed in, over a footprint small enough to make
/// row hits, conflicts and bank contention all common.
fn traffic(seed: u64, n: usize, footprint: u64, page: u64) -> Vec<TraceItem> {
    let mut rng = Xoshiro256StarStar::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    let mut cycle = 0u64;
    for _ in 0..n {
        cycle += rng.below(6);
        let r = rng.below(100);
        let item = if r == 99 {
            // A replication of one row-sized page into 1 to 31 rows of its block.
            let copies = movelab_dram::multi_row_copy::COPIES[rng.below(5) as usize];
            TraceItem::Bulk(BulkOp {
                kind: BulkKind::Replicate { copies },
                dst: rng.below(footprint / page) * page,
                bytes: page,
                arrival: Some(cycle),
            })
        } else if r < 3 {
            let dst = rng.below(footprint / page) * page;
            let bytes = page * (1 + rng.below(2));
            if rng.below(2) == 0 {
                let src = rng.below(footprint / page) * page;
                if src.abs_diff(dst) < bytes {
                    continue;
                }
                TraceItem::Bulk(BulkOp {
                    kind: BulkKind::Copy { src },
                    dst,
                    bytes,
                    arrival: Some(cycle),
                })
            } else {
                TraceItem::Bulk(BulkOp {
                    kind: BulkKind::Init { value: 0 },
                    dst,
                    bytes,
                    arrival: Some(cycle),
                })
            }
        } else if r < 5 {
            // An unaligned partial copy: exercises PSM and the baseline leftovers.
            let src = rng.below(footprint) & !63;
            let dst = rng.below(footprint) & !63;
            let bytes = 64 * (1 + rng.below(40));
            if src.abs_diff(dst) < bytes {
                continue;
            }
            TraceItem::Bulk(BulkOp {
                kind: BulkKind::Copy { src },
                dst,
                bytes,
                arrival: Some(cycle),
            })
        } else {
            let addr = rng.below(footprint) & !63;
            let op = if rng.below(10) < 7 {
                Op::Read
            } else {
                Op::Write
            };
            TraceItem::Req(Request {
                addr,
                op,
                arrival: Some(cycle),
            })
        };
        out.push(item);
    }
    out
}

fn check(cfg: &Config, seed: u64, n: usize) -> movelab_dram::stats::Stats {
    check_counting_pairs(cfg, seed, n).0
}

/// As `check`, returning how many PREs went on a falling edge (HBM3 / HBM4's half-clock row
/// commands).
fn check_counting_falling(cfg: &Config, seed: u64, n: usize) -> u64 {
    check_counting(cfg, seed, n).2
}

fn check_counting_pairs(cfg: &Config, seed: u64, n: usize) -> (movelab_dram::stats::Stats, u64) {
    let (stats, pairs, _) = check_counting(cfg, seed, n);
    (stats, pairs)
}

/// As `check`, also returning how many clocks carried two commands on one channel (HBM's row and
/// column command buses) and how many PREs went on a falling edge.
fn check_counting(cfg: &Config, seed: u64, n: usize) -> (movelab_dram::stats::Stats, u64, u64) {
    let spec = cfg.resolve("test").unwrap();
    let header = log_header(cfg, &spec);
    let mut sink = CheckSink {
        checker: Checker::new(&header).unwrap(),
        first: None,
        recent: Default::default(),
        last: None,
        pairs: 0,
        last_row: Default::default(),
        falling: 0,
    };
    // Pages of at most 4 KB; with Multi-RowCopy whole rows, which it replicates.
    let page = if cfg.controller.bulk == "multi-row-copy" {
        spec.org.row_bytes()
    } else {
        spec.org.row_bytes().min(4096)
    };
    let items = traffic(seed, n, 1 << 24, page);
    let stats = simulate(
        cfg,
        items.into_iter().map(Ok),
        RunOptions {
            command_log: Some(&mut sink),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let report = sink.checker.finish();
    assert!(
        report.ok,
        "{} {} {} {} bulk={}: {} violations; first: {}",
        spec.speed,
        cfg.controller.scheduler,
        cfg.controller.row_policy,
        cfg.controller.mapper,
        cfg.controller.bulk,
        report.violation_count,
        sink.first.unwrap_or_default()
    );
    assert!(
        report.commands_checked > n as u64,
        "too few commands: {}",
        report.commands_checked
    );
    assert!(stats.reads + stats.writes > 0);
    (stats, sink.pairs, sink.falling)
}

#[test]
fn hbm_issues_row_and_column_commands_in_one_clock_and_others_never_two() {
    // HBM's separate row and column command buses are exercised (and checked) on randomized
    // traffic with and without RowClone, both schedulers; every other standard issues at most
    // one command per clock per channel.
    for name in builtin_config_names() {
        let hbm = name.contains("hbm");
        for sched in ["frfcfs", "fcfs"] {
            for bulk in ["baseline", "rowclone"] {
                let mut cfg = Config::preset(name).unwrap();
                cfg.controller.scheduler = sched.into();
                cfg.controller.bulk = bulk.into();
                let (_, pairs) = check_counting_pairs(&cfg, 11, 3000);
                if hbm {
                    assert!(
                        pairs > 0,
                        "{name} {sched} {bulk}: no clock with two commands"
                    );
                } else {
                    assert_eq!(pairs, 0, "{name} {sched} {bulk}");
                }
            }
        }
    }
}

#[test]
fn hbm3_and_hbm4_put_pres_on_falling_edges_and_others_never() {
    // HBM3 / HBM4's half-clock row commands on randomized traffic, with and without RowClone,
    // both schedulers, checker-clean: PREs go on falling edges (beside a REFPB, or in the clock
    // after an ACT); HBM2, whose row commands take whole clocks, never issues a PRE there.
    for name in builtin_config_names() {
        let half = name.contains("hbm3") || name.contains("hbm4");
        for sched in ["frfcfs", "fcfs"] {
            for bulk in ["baseline", "rowclone"] {
                let mut cfg = Config::preset(name).unwrap();
                cfg.controller.scheduler = sched.into();
                cfg.controller.bulk = bulk.into();
                if !half && !name.contains("hbm") {
                    continue;
                }
                let falling = check_counting_falling(&cfg, 13, 3000);
                if half {
                    assert!(falling > 0, "{name} {sched} {bulk}: no falling-edge PRE");
                } else {
                    assert_eq!(falling, 0, "{name} {sched} {bulk}");
                }
            }
        }
    }
}

#[test]
fn every_preset_scheduler_and_policy_obeys_the_standard() {
    for name in builtin_config_names() {
        for sched in ["frfcfs", "fcfs"] {
            for policy in ["open", "closed"] {
                for bulk in ["baseline", "rowclone"] {
                    let mut cfg = Config::preset(name).unwrap();
                    cfg.controller.scheduler = sched.into();
                    cfg.controller.row_policy = policy.into();
                    cfg.controller.bulk = bulk.into();
                    check(&cfg, 7, 3000);
                }
            }
        }
    }
}

#[test]
fn every_speed_bin_and_mapper_obeys_the_standard() {
    for (speed, part) in [
        ("DDR2-400B", "DDR2-1Gb-x8"),
        ("DDR2-533C", "DDR2-1Gb-x16"),
        ("DDR2-800D", "DDR2-1Gb-x8"),
        ("DDR2-800E", "DDR2-1Gb-x16"),
        ("DDR3-1066F", "DDR3-1Gb-x8"),
        ("DDR3-1066G", "DDR3-2Gb-x8"),
        ("DDR3-1333H", "DDR3-4Gb-x8"),
        ("DDR3-1600K", "DDR3-8Gb-x8"),
        ("DDR4-2400R", "DDR4-4Gb-x8"),
        ("DDR4-3200AA", "DDR4-16Gb-x8"),
        ("DDR5-3200AN", "DDR5-8Gb-x8"),
        ("DDR5-3200BN", "DDR5-16Gb-x4"),
        ("DDR5-3200C", "DDR5-32Gb-x8"),
        ("DDR5-4800AN", "DDR5-16Gb-x16"),
        ("DDR5-4800B", "DDR5-16Gb-x8"),
        ("DDR5-5600AN", "DDR5-8Gb-x16"),
        ("DDR5-5600B", "DDR5-32Gb-x4"),
        ("DDR5-6400AN", "DDR5-16Gb-x8"),
        ("DDR5-6400B", "DDR5-32Gb-x16"),
        ("HBM2-2000", "HBM2-8Gb-PC"),
        ("LPDDR5-6400", "LPDDR5-8Gb-x16"),
        ("LPDDR5-6400", "LPDDR5-16Gb-x16"),
        ("LPDDR5-6400-BL32", "LPDDR5-16Gb-x16"),
        ("LPDDR5-6400-8B", "LPDDR5-16Gb-x16-8B"),
        ("HBM3-6400", "HBM3-8Gb-PC"),
        ("GDDR6-14000", "GDDR6-8Gb-x16-CH"),
        ("GDDR7-28000", "GDDR7-16Gb-x8-CH"),
        ("HBM4-8000", "HBM4-32Gb-8Hi-PC"),
        ("LPDDR6-10667", "LPDDR6-16Gb-SC"),
    ] {
        for mapper in ["RoBaRaCoCh", "ChRaBaRoCo", "RoRaBaChCo", "line-interleave"] {
            let mut cfg = Config::preset(&format!("{speed}/{part}")).unwrap();
            cfg.dram.ranks = 2;
            cfg.dram.channels = 2;
            cfg.controller.mapper = mapper.into();
            cfg.controller.bank_xor = mapper == "line-interleave";
            cfg.controller.bulk = "rowclone".into();
            check(&cfg, 11, 2000);
        }
    }
}

#[test]
fn same_bank_refresh_obeys_the_standard() {
    // Every DDR5 bin with REFsb instead of REFab, both schedulers and row policies, RowClone on.
    for speed in ["DDR5-3200AN", "DDR5-4800B", "DDR5-5600B", "DDR5-6400AN"] {
        for sched in ["frfcfs", "fcfs"] {
            for policy in ["open", "closed"] {
                let mut cfg = Config::preset(&format!("{speed}/DDR5-16Gb-x8")).unwrap();
                cfg.controller.refresh = "same-bank".into();
                cfg.controller.scheduler = sched.into();
                cfg.controller.row_policy = policy.into();
                cfg.controller.bulk = "rowclone".into();
                check(&cfg, 13, 6000);
            }
        }
    }
}

#[test]
fn per_bank_refresh_obeys_the_standard() {
    // LPDDR5 (BG mode with BL16 and BL32, 8B mode), HBM2, HBM3, HBM4 and GDDR6 with REFpb, both schedulers and
    // row policies, RowClone on, over several refresh intervals (every bank refreshed several
    // times).
    for preset in [
        "LPDDR5-6400/LPDDR5-8Gb-x16",
        "LPDDR5-6400-BL32/LPDDR5-8Gb-x16",
        "LPDDR5-6400-8B/LPDDR5-8Gb-x16-8B",
        "HBM2-2000/HBM2-8Gb-PC",
        "HBM3-6400/HBM3-8Gb-PC",
        "HBM4-8000/HBM4-32Gb-8Hi-PC",
        "GDDR6-14000/GDDR6-8Gb-x16-CH",
    ] {
        for sched in ["frfcfs", "fcfs"] {
            for policy in ["open", "closed"] {
                let mut cfg = Config::preset(preset).unwrap();
                cfg.dram.ranks = 2;
                cfg.controller.refresh = "per-bank".into();
                cfg.controller.scheduler = sched.into();
                cfg.controller.row_policy = policy.into();
                cfg.controller.bulk = "rowclone".into();
                let stats = check(&cfg, 17, 8000);
                // Every bank of both ranks refreshed at least twice.
                let banks = u64::from(cfg.resolve("t").unwrap().org.banks_per_rank());
                let refpb = stats.commands.get("REFPB").copied().unwrap_or(0);
                assert!(refpb >= 2 * 2 * banks, "{preset}: {refpb} REFPBs");
                assert!(stats.commands.get("TR").copied().unwrap_or(0) > 0);
            }
        }
    }
}

#[test]
fn multi_row_copy_obeys_the_standard() {
    // Every preset with Multi-RowCopy on (ACT, ACTM, PRE jobs for replication), both schedulers
    // and both row policies (in two pairings), row-interleaved.
    for name in builtin_config_names() {
        for (sched, policy) in [("frfcfs", "open"), ("fcfs", "closed")] {
            {
                let mut cfg = Config::preset(name).unwrap();
                cfg.controller.scheduler = sched.into();
                cfg.controller.row_policy = policy.into();
                cfg.controller.bulk = "multi-row-copy".into();
                // Row interleaving: a row-sized page is one whole row (what MRC copies).
                cfg.controller.mapper = "RoRaBaChCo".into();
                let stats = check(&cfg, 23, 2000);
                let actm = stats.commands.get("ACTM").copied().unwrap_or(0);
                assert!(actm > 0, "{name}: no ACTM");
                assert!(stats.bulk.bytes.mrc > 0, "{name}");
            }
        }
    }
}

#[test]
fn refresh_keeps_its_interval_under_load() {
    let mut cfg = Config::preset("ddr3-1600k-bench").unwrap();
    cfg.controller.bulk = "rowclone".into();
    // Long enough for several refresh intervals.
    check(&cfg, 3, 40_000);
}

#[test]
fn a_controller_that_breaks_a_rule_is_caught() {
    // Mutation check of the oracle: the controller runs with tRCD three clocks short while the
    // checker holds the device's real timing. Every early column command must be reported.
    let real = Config::preset("ddr3-1600k-bench").unwrap();
    let spec = real.resolve("test").unwrap();
    let mut broken = real.clone();
    broken.dram.timing.insert("nRCD".into(), spec.t("nRCD") - 3);
    let mut sink = CheckSink {
        checker: Checker::new(&log_header(&real, &spec)).unwrap(),
        first: None,
        recent: Default::default(),
        last: None,
        pairs: 0,
        last_row: Default::default(),
        falling: 0,
    };
    let items = traffic(5, 500, 1 << 24, 4096);
    simulate(
        &broken,
        items.into_iter().map(Ok),
        RunOptions {
            command_log: Some(&mut sink),
            ..Default::default()
        },
    )
    .unwrap();
    let report = sink.checker.finish();
    assert!(!report.ok);
    assert!(
        report.violations.iter().any(|v| v.rule_key() == "nRCD"),
        "{:?}",
        report.violations.first()
    );
}

/// Runs `items` through a controller configured as `controller` while the checker holds the
/// timing of `device` (a mutation check when the two differ).
fn replay_against(controller: &Config, device: &Config, items: Vec<TraceItem>) -> CheckReport {
    let spec = device.resolve("test").unwrap();
    let mut sink = CheckSink {
        checker: Checker::new(&log_header(device, &spec)).unwrap(),
        first: None,
        recent: Default::default(),
        last: None,
        pairs: 0,
        last_row: Default::default(),
        falling: 0,
    };
    simulate(
        controller,
        items.into_iter().map(Ok),
        RunOptions {
            command_log: Some(&mut sink),
            ..Default::default()
        },
    )
    .unwrap();
    sink.checker.finish()
}

#[test]
fn a_controller_that_refreshes_a_bank_too_early_is_caught() {
    // Mutation check for per-bank refresh: the controller believes tRFCpb is 40 clocks shorter.
    for preset in [
        "LPDDR5-6400/LPDDR5-8Gb-x16",
        "HBM3-6400/HBM3-8Gb-PC",
        "HBM4-8000/HBM4-32Gb-8Hi-PC",
        "GDDR6-14000/GDDR6-8Gb-x16-CH",
    ] {
        let mut real = Config::preset(preset).unwrap();
        real.controller.refresh = "per-bank".into();
        let spec = real.resolve("test").unwrap();
        let mut broken = real.clone();
        broken
            .dram
            .timing
            .insert("nRFCpb".into(), spec.t("nRFCpb") - 40);
        let report = replay_against(&broken, &real, traffic(5, 4000, 1 << 20, 2048));
        assert!(
            report.violations.iter().any(|v| v.rule_key() == "nRFCpb"),
            "{preset}: {:?}",
            report.violations.first()
        );
    }
}

#[test]
fn keeping_activated_rows_obeys_the_standard() {
    for name in builtin_config_names() {
        for sched in ["frfcfs", "fcfs"] {
            let mut cfg = Config::preset(name).unwrap();
            cfg.controller.scheduler = sched.into();
            cfg.controller.keep_activated_rows = true;
            check(&cfg, 11, 3000);
        }
    }
}

#[test]
fn lpddr5_bl32_overlapping_bursts_and_short_write_to_read_are_caught() {
    // Mutation checks for BL32 in BG mode. (1) A bin that spaces column commands of other bank
    // groups at JEDEC's interleave slot (nCCD_S = 2) while its bursts hold the data bus for 6
    // clocks: the checker, given that same bin, still finds the bursts overlapping on the data
    // bus. (2) A controller that counts nBL instead of BL/n_max for same-group write to read.
    let real = Config::preset("lpddr5-6400-bl32").unwrap();
    let spec = real.resolve("test").unwrap();
    let mut interleaving = real.clone();
    interleaving.dram.timing.insert("nCCD_S".into(), 2);
    let mut short_wtr = real.clone();
    short_wtr
        .dram
        .timing
        .insert("nBL_max".into(), spec.t("nBL"));
    for (controller, device, key) in [
        (&interleaving, &interleaving, "nBL"),
        (&short_wtr, &real, "nCWL+nBL_max+nWTR_L"),
    ] {
        let report = replay_against(controller, device, traffic(9, 3000, 1 << 20, 2048));
        assert!(
            report.violations.iter().any(|v| v.rule_key() == key),
            "{key}: {:?}",
            report.violations.first()
        );
    }
}

/// Traffic that hammers 64 rows of one bank (a row conflict on nearly every access to it),
/// mixed with random lines elsewhere: enough activations of that bank between two refreshes to
/// reach RAAIMT, so the controller owes refresh management (RFM).
fn hammer(seed: u64, n: usize, spec: &movelab_dram::spec::DramSpec) -> Vec<TraceItem> {
    let o = &spec.org;
    // RoBaRaCoCh: the row is the top field, so consecutive rows of bank 0 are this far apart.
    let stride =
        u64::from(o.banks_per_rank()) * u64::from(o.ranks) * u64::from(o.channels) * o.row_bytes();
    let mut rng = Xoshiro256StarStar::seed_from_u64(seed);
    let mut cycle = 0u64;
    (0..n)
        .map(|i| {
            cycle += 4 + rng.below(8);
            let addr = if rng.below(10) < 7 {
                (i as u64 % 64) * stride + 64 * rng.below(8)
            } else {
                rng.below(1 << 24) & !63
            };
            let op = if rng.below(4) == 0 {
                Op::Write
            } else {
                Op::Read
            };
            TraceItem::Req(Request {
                addr,
                op,
                arrival: Some(cycle),
            })
        })
        .collect()
}

fn hammer_config(preset: &str, refresh: &str, sched: &str, rfm: bool) -> Config {
    let mut cfg = Config::preset(preset).unwrap();
    cfg.dram.ranks = 2;
    cfg.controller.mapper = "RoBaRaCoCh".into();
    cfg.controller.refresh = refresh.into();
    cfg.controller.scheduler = sched.into();
    cfg.controller.bulk = "rowclone".into();
    cfg.controller.rfm = rfm;
    cfg
}

fn run_checked(
    cfg: &Config,
    items: Vec<TraceItem>,
) -> (CheckReport, movelab_dram::stats::Stats, Option<String>) {
    let spec = cfg.resolve("test").unwrap();
    let mut sink = CheckSink {
        checker: Checker::new(&log_header(cfg, &spec)).unwrap(),
        first: None,
        recent: Default::default(),
        last: None,
        pairs: 0,
        last_row: Default::default(),
        falling: 0,
    };
    let stats = simulate(
        cfg,
        items.into_iter().map(Ok),
        RunOptions {
            command_log: Some(&mut sink),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    (sink.checker.finish(), stats, sink.first)
}

#[test]
fn refresh_management_obeys_the_standard() {
    // DDR5, HBM3, HBM4 and GDDR7 parts require RFM: on hammering traffic the controller issues
    // RFMs, and the checker (counting activations itself) finds every bank below RAAMMT at each
    // ACT and every RFM timed, with all-bank, same-bank (DDR5) and per-bank (HBM3) refresh, both
    // schedulers. HBM4 with all-bank refresh only: under its per-bank refresh an all-bank RFM
    // seldom fits (tRFCpb 280 ns exceeds a SID's REFpb spacing, tREFI / 16 = 244 ns, and REFPB ->
    // RFM needs tRFCpb), so the REFPBs, not RFMs, bring the counts down (docs/dram.md).
    for (preset, refreshes) in [
        ("DDR5-3200AN/DDR5-16Gb-x8", ["all-bank", "same-bank"]),
        ("DDR5-4800B/DDR5-8Gb-x16", ["all-bank", "same-bank"]),
        ("HBM3-6400/HBM3-8Gb-PC", ["all-bank", "per-bank"]),
        ("HBM4-8000/HBM4-32Gb-8Hi-PC", ["all-bank", "all-bank"]),
        ("GDDR7-28000/GDDR7-16Gb-x8-CH", ["all-bank", "all-bank"]),
    ] {
        for refresh in refreshes {
            for sched in ["frfcfs", "fcfs"] {
                let cfg = hammer_config(preset, refresh, sched, true);
                let spec = cfg.resolve("t").unwrap();
                let (report, stats, first) = run_checked(&cfg, hammer(3, 6000, &spec));
                assert!(
                    report.ok,
                    "{preset} {refresh} {sched}: {} violations; first: {}",
                    report.violation_count,
                    first.unwrap_or_default()
                );
                let rfm = stats.commands.get("RFM").copied().unwrap_or(0);
                assert!(
                    rfm > 0,
                    "{preset} {refresh} {sched}: no RFM issued; {} cycles, {:?}",
                    stats.cycles,
                    stats.commands
                );
                // Off: the same traffic without refresh management issues none.
                let off = hammer_config(preset, refresh, sched, false);
                let (report, stats, _) = run_checked(&off, hammer(3, 6000, &spec));
                assert!(report.ok, "{preset} {refresh} {sched} without RFM");
                assert_eq!(stats.commands.get("RFM"), None);
            }
        }
    }
}

#[test]
fn a_controller_that_skips_refresh_management_is_caught() {
    // Mutation check: the controller does not manage RFM while the checker holds a device that
    // requires it; the hammered bank's count passes RAAMMT.
    for preset in [
        "DDR5-3200AN/DDR5-16Gb-x8",
        "HBM3-6400/HBM3-8Gb-PC",
        "HBM4-8000/HBM4-32Gb-8Hi-PC",
        "GDDR7-28000/GDDR7-16Gb-x8-CH",
    ] {
        let real = hammer_config(preset, "all-bank", "frfcfs", true);
        let broken = hammer_config(preset, "all-bank", "frfcfs", false);
        let spec = real.resolve("t").unwrap();
        let report = replay_against(&broken, &real, hammer(3, 6000, &spec));
        assert!(
            report.violations.iter().any(|v| v.rule_key() == "RAAMMT"),
            "{preset}: {:?}",
            report.violations.first()
        );
    }
}

#[test]
fn same_bank_and_per_bank_refresh_management_obey_the_standard() {
    // `controller.rfm_scope`: DDR5's same-bank RFMsb (JESD79-5 4.41) and HBM3 / HBM4's per-bank
    // RFMpb (JESD238, JESD270-4). On hammering traffic the controller issues RFMSB / RFMPB and
    // never an all-bank RFM; the checker (its own counts, its own RFMSB / RFMPB rules) finds the
    // log clean, under every refresh mode the standard has, both schedulers, two ranks and
    // RowClone on. HBM4 with per-bank refresh, which its all-bank RFM could not keep up with
    // (docs/dram.md), works with RFMpb.
    for (preset, scope, kind, refreshes) in [
        (
            "DDR5-3200AN/DDR5-16Gb-x8",
            "same-bank",
            "RFMSB",
            ["all-bank", "same-bank"],
        ),
        (
            "DDR5-4800B/DDR5-8Gb-x16",
            "same-bank",
            "RFMSB",
            ["all-bank", "same-bank"],
        ),
        (
            "HBM3-6400/HBM3-8Gb-PC",
            "per-bank",
            "RFMPB",
            ["all-bank", "per-bank"],
        ),
        (
            "HBM4-8000/HBM4-32Gb-8Hi-PC",
            "per-bank",
            "RFMPB",
            ["all-bank", "per-bank"],
        ),
    ] {
        for refresh in refreshes {
            for sched in ["frfcfs", "fcfs"] {
                let mut cfg = hammer_config(preset, refresh, sched, true);
                cfg.controller.rfm_scope = scope.into();
                let spec = cfg.resolve("t").unwrap();
                let (report, stats, first) = run_checked(&cfg, hammer(3, 6000, &spec));
                let what = format!("{preset} {scope} {refresh} {sched}");
                assert!(
                    report.ok,
                    "{what}: {} violations; first: {}",
                    report.violation_count,
                    first.unwrap_or_default()
                );
                assert!(
                    stats.commands.get(kind).copied().unwrap_or(0) > 0,
                    "{what}: no {kind} issued; {:?}",
                    stats.commands
                );
                assert_eq!(stats.commands.get("RFM"), None, "{what}: an all-bank RFM");
            }
        }
    }
}

#[test]
fn rfm_scopes_are_refused_where_the_standard_lacks_them() {
    for (preset, scope) in [
        ("HBM3-6400/HBM3-8Gb-PC", "same-bank"),
        ("DDR5-3200AN/DDR5-16Gb-x8", "per-bank"),
        ("GDDR7-28000/GDDR7-16Gb-x8-CH", "per-bank"),
        ("DDR4-2400R/DDR4-8Gb-x8", "same-bank"),
    ] {
        let mut cfg = Config::preset(preset).unwrap();
        cfg.controller.rfm_scope = scope.into();
        let e = cfg.resolve("t").unwrap_err().to_string();
        assert!(e.contains("controller.rfm_scope"), "{preset} {scope}: {e}");
    }
    let mut cfg = Config::preset("DDR5-3200AN/DDR5-16Gb-x8").unwrap();
    cfg.controller.rfm_scope = "every-bank".into();
    let e = cfg.resolve("t").unwrap_err().to_string();
    assert!(e.contains("controller.rfm_scope"), "{e}");
    // With refresh management off the scope is moot.
    cfg.controller.rfm_scope = "per-bank".into();
    cfg.controller.rfm = false;
    cfg.resolve("t").unwrap();
}

#[test]
fn fine_granularity_refresh_obeys_the_standard() {
    // DDR5 fine-granularity refresh (REF every tREFI / 2, held for tRFC2) on random traffic long
    // enough for many refresh intervals, every density, with and without RowClone, both
    // schedulers: the checker (deriving tRFC2 and tREFI2 from the header's FGR inputs) finds the
    // log clean, and the run refreshes about twice as often as in normal mode.
    for part in ["DDR5-8Gb-x8", "DDR5-16Gb-x8", "DDR5-32Gb-x16"] {
        for bulk in ["baseline", "rowclone"] {
            for sched in ["frfcfs", "fcfs"] {
                let mut cfg = Config::preset(&format!("DDR5-3200AN/{part}")).unwrap();
                cfg.controller.bulk = bulk.into();
                cfg.controller.scheduler = sched.into();
                let normal = check(&cfg, 17, 8000);
                cfg.controller.refresh_mode = "fine-granularity".into();
                let fgr = check(&cfg, 17, 8000);
                let refs = |s: &movelab_dram::stats::Stats| *s.commands.get("REF").unwrap_or(&0);
                let (normal_refs, fgr_refs) = (refs(&normal), refs(&fgr));
                assert!(
                    normal_refs >= 4,
                    "{part} {bulk} {sched}: too short a run ({normal_refs} REFs)"
                );
                let ratio =
                    fgr_refs as f64 / normal_refs as f64 * normal.cycles as f64 / fgr.cycles as f64;
                assert!(
                    (1.6..=2.4).contains(&ratio),
                    "{part} {bulk} {sched}: REF rate ratio FGR / normal {ratio:.2} ({fgr_refs} / {normal_refs} REFs in {} / {} cycles)",
                    fgr.cycles,
                    normal.cycles
                );
            }
        }
    }
}

#[test]
fn a_controller_in_the_wrong_refresh_mode_is_caught() {
    // Mutation checks of the refresh mode: a controller refreshing in FGR mode against a checker
    // told normal mode breaks nRFC (tRFC2 < tRFC1 after a REF); a controller in normal mode
    // against a checker told FGR mode owes REFs (one every 2 x tREFI2).
    let mut normal = Config::preset("DDR5-3200AN/DDR5-16Gb-x8").unwrap();
    normal.controller.bulk = "rowclone".into();
    let mut fgr = normal.clone();
    fgr.controller.refresh_mode = "fine-granularity".into();
    let items = || traffic(9, 8000, 1 << 24, 4096);
    let r = replay_against(&fgr, &normal, items());
    assert!(
        r.violations.iter().any(|v| v.rule_key() == "nRFC"),
        "FGR controller, normal checker: {:?}",
        r.violations.first()
    );
    let r = replay_against(&normal, &fgr, items());
    assert!(
        r.violations
            .iter()
            .any(|v| v.rule_key() == "nREFI2" || v.rule_key() == "9xnREFI2"),
        "normal controller, FGR checker: {:?}",
        r.violations.first()
    );
}

#[test]
fn refresh_management_in_fine_granularity_mode_obeys_the_standard() {
    // FGR with all-bank RFM (tRFM2 = tRFC2, RAAIMT / RAAMMT halved) on hammering traffic, RowClone
    // on (hammer_config): RFMs are issued and the checker finds the log clean.
    for sched in ["frfcfs", "fcfs"] {
        let mut cfg = hammer_config("DDR5-3200AN/DDR5-16Gb-x8", "all-bank", sched, true);
        cfg.controller.refresh_mode = "fine-granularity".into();
        let spec = cfg.resolve("t").unwrap();
        let (report, stats, first) = run_checked(&cfg, hammer(3, 6000, &spec));
        let first = first.unwrap_or_default();
        assert!(report.ok, "FGR {sched}: first violation: {first}");
        let rfms = stats.commands.get("RFM").copied().unwrap_or(0);
        assert!(rfms > 0, "FGR {sched}: no RFM: {:?}", stats.commands);
    }
}
