//! Inputs that once took the machine down, hung or passed a broken log: sizes beyond any real
//! system, arrivals far in the future (idle gaps), truncated command logs, and the per-bank job
//! queue that keeps RowClone-heavy runs linear.
use movelab_dram::checker::check_log;
use movelab_dram::command::LogWriter;
use movelab_dram::config::{builtin_config_names, Config, ORG_LIMITS};
use movelab_dram::error::{Error, LogError};
use movelab_dram::generator::GeneratorSpec;
use movelab_dram::request::{Op, Request, TraceItem};
use movelab_dram::stats::Stats;
use movelab_dram::system::{log_header, simulate, RunOptions};
use movelab_dram::trace::{self, TraceFormat, MAX_ARRIVAL_CYCLE};
use proptest::prelude::*;

mod common;
use common::log_of;

fn with(preset: &str, key: &str, value: toml::Value) -> Result<Config, String> {
    let mut over = toml::Table::new();
    let mut cur = &mut over;
    let parts: Vec<&str> = key.split('.').collect();
    for p in &parts[..parts.len() - 1] {
        cur = cur
            .entry(p.to_string())
            .or_insert(toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .unwrap();
    }
    cur.insert(parts[parts.len() - 1].to_string(), value);
    let base = Config::preset(preset).map_err(|e| e.to_string())?;
    let c = base
        .with_overrides(toml::Value::Table(over), "overrides")
        .map_err(|e| e.to_string())?;
    c.resolve("overrides").map_err(|e| e.to_string())?;
    Ok(c)
}

#[test]
fn every_organisation_size_is_bounded_with_its_key_named() {
    for (key, max, _) in ORG_LIMITS {
        for v in [u64::from(*max) * 2, 1 << 31] {
            let e = with("ddr3-1600k-bench", key, toml::Value::Integer(v as i64))
                .expect_err(&format!("{key} = {v} was accepted"));
            assert!(e.contains(key), "{key} = {v}: {e}");
        }
    }
    // Each within bounds, but too many banks in all.
    let mut over: toml::Table = toml::from_str("[dram]\nchannels = 256\nranks = 16").unwrap();
    over["dram"]
        .as_table_mut()
        .unwrap()
        .insert("org".into(), toml::from_str("banks = 64").unwrap());
    let e = Config::preset("ddr3-1600k-bench")
        .unwrap()
        .with_overrides(toml::Value::Table(over), "o")
        .and_then(|c| c.resolve("o").map(|_| ()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("banks in all"), "{e}");
}

#[test]
fn zero_timings_no_device_has_are_refused() {
    for t in ["nRCD", "nRP", "nRAS", "nCL", "nCWL", "nRFC", "nWR"] {
        let e = with(
            "ddr3-1600k-bench",
            &format!("dram.timing.{t}"),
            toml::Value::Integer(0),
        )
        .expect_err(t);
        assert!(e.contains(t), "{e}");
    }
}

#[test]
fn refresh_and_refresh_management_that_would_starve_every_request_are_refused() {
    // Zero durations of the refresh and refresh-management commands.
    for (preset, t) in [
        ("ddr5-4800b-sb", "nRFCsb"),
        ("hbm3-6400", "nRFCpb"),
        ("ddr5-3200an", "nRFM"),
        ("ddr5-3200an", "nRFMsb"),
        ("hbm3-6400", "nRFMpb"),
    ] {
        let e = with(preset, &format!("dram.timing.{t}"), toml::Value::Integer(0)).expect_err(t);
        assert!(
            e.contains(&format!("dram.timing.{t}")) && e.contains("positive"),
            "{e}"
        );
    }
    // A duration of the refresh mode (or refresh management scope) in use that leaves no room
    // for an access in a refresh interval: these hung (every bank refreshing or owed an RFM for
    // good), now refused naming the key. The same value is harmless where the mode is not used.
    let e = with(
        "hbm3-6400",
        "dram.timing.nRFCpb",
        toml::Value::Integer(10_000),
    )
    .unwrap_err();
    assert!(
        e.contains("dram.timing.nRFCpb") && e.contains("one per-bank refresh"),
        "{e}"
    );
    let e = with(
        "ddr5-4800b-sb",
        "dram.timing.nRFCsb",
        toml::Value::Integer(100_000),
    )
    .unwrap_err();
    assert!(
        e.contains("dram.timing.nRFCsb") && e.contains("one same-bank refresh"),
        "{e}"
    );
    let e = with(
        "ddr5-3200an",
        "dram.timing.nRFM",
        toml::Value::Integer(100_000),
    )
    .unwrap_err();
    assert!(
        e.contains("dram.timing.nRFM") && e.contains("refresh management"),
        "{e}"
    );
    assert!(with(
        "ddr5-3200an",
        "dram.timing.nRFCsb",
        toml::Value::Integer(100_000)
    )
    .is_ok());
    // An RFM owed after every ACT closes each row before its column command: refused.
    let e = with("ddr5-3200an", "dram.timing.RAAIMT", toml::Value::Integer(1)).unwrap_err();
    assert!(
        e.contains("dram.timing.RAAIMT") && e.contains("at least 2"),
        "{e}"
    );
    // Just inside the bounds, runs end (the hangs were livelocks, not slow runs).
    let items: Vec<TraceItem> = (0..300u64)
        .map(|i| {
            TraceItem::Req(Request {
                op: if i % 5 == 0 { Op::Write } else { Op::Read },
                addr: i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 30 << 6,
                arrival: None,
            })
        })
        .collect();
    for (preset, key, v) in [
        ("ddr5-3200an", "dram.timing.RAAIMT", 2),
        ("hbm3-6400", "dram.timing.nRFCpb", 4_000),
        ("ddr5-4800b-sb", "dram.timing.nRFCsb", 8_000),
    ] {
        let cfg = with(preset, key, toml::Value::Integer(v)).expect(key);
        let stats = simulate(&cfg, items.iter().map(|&it| Ok(it)), RunOptions::default())
            .unwrap_or_else(|e| panic!("{preset} {key}={v}: {e}"));
        assert_eq!(stats.reads + stats.writes, 300, "{preset} {key}={v}");
    }
}

#[test]
fn arrivals_beyond_2_60_cycles_are_refused_with_their_line() {
    let text = "R 0x40\n@18446744073709551615 R 0x80\n";
    let items: Vec<_> = trace::from_reader(text.as_bytes(), "t.trace", TraceFormat::Native)
        .unwrap()
        .collect();
    let e = items[1].clone().unwrap_err().to_string();
    assert!(
        e.contains("t.trace:2") && e.contains("arrival cycle"),
        "{e}"
    );
    let text = "0x40 READ 18446744073709551615\n";
    let items: Vec<_> = trace::from_reader(text.as_bytes(), "d.trace", TraceFormat::Dramsim3)
        .unwrap()
        .collect();
    assert!(items[0].is_err());
    // Items built in code are checked by the simulator itself.
    let cfg = Config::preset("ddr3-1600k-bench").unwrap();
    let item = TraceItem::Req(Request {
        addr: 0x40,
        op: Op::Read,
        arrival: Some(u64::MAX),
    });
    let e = simulate(&cfg, std::iter::once(Ok(item)), RunOptions::default()).unwrap_err();
    assert!(
        matches!(e, Error::Request(ref m) if m.contains("trace item 1")),
        "{e}"
    );
}

#[test]
fn an_idle_gap_of_2_60_cycles_costs_nothing_and_its_refreshes_are_counted() {
    let cfg = Config::preset("ddr3-1600k-bench").unwrap();
    let spec = cfg.resolve("c").unwrap();
    let items = [
        TraceItem::Req(Request {
            addr: 0x40,
            op: Op::Read,
            arrival: None,
        }),
        TraceItem::Req(Request {
            addr: 0x80,
            op: Op::Read,
            arrival: Some(MAX_ARRIVAL_CYCLE),
        }),
    ];
    let (text, stats) = logged_run(&cfg, &items);
    let refs = stats.commands["REF"];
    let expect = MAX_ARRIVAL_CYCLE / spec.t("nREFI");
    assert!(
        refs.abs_diff(expect) <= 2,
        "{refs} REFs, expected about {expect}"
    );
    assert!(stats.cycles > MAX_ARRIVAL_CYCLE);
    let report = check_log(text.as_bytes(), "log").unwrap();
    assert!(report.ok, "{:?}", report.violations);
}

/// Requests in bursts separated by idle gaps of many refresh intervals.
fn gappy(seed: u64, bursts: &[(u64, u64)], refi: u64) -> Vec<TraceItem> {
    let mut items = Vec::new();
    let mut at = 0u64;
    for (k, &(gap, n)) in bursts.iter().enumerate() {
        at += gap * refi + gap * 7;
        let burst = GeneratorSpec::random(n, 0.6, seed + k as u64)
            .build()
            .unwrap();
        for (i, it) in burst.enumerate() {
            if let TraceItem::Req(mut r) = it {
                r.arrival = Some(at + i as u64);
                items.push(TraceItem::Req(r));
            }
        }
        at += n;
    }
    items
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    /// Counting an idle gap's refreshes instead of issuing them is exact: expanded, the elided
    /// REFs are the very commands (same cycles) a cycle-by-cycle run issues, and the statistics
    /// are identical.
    #[test]
    fn elided_idle_refreshes_equal_issued_ones(
        preset in 0usize..5,
        row_policy in prop::sample::select(vec!["open", "closed"]),
        seed in 0u64..1000,
        bursts in prop::collection::vec((0u64..40, 1u64..300), 1..5),
    ) {
        let name = builtin_config_names()[preset % builtin_config_names().len()];
        let base = Config::preset(name).unwrap();
        let over: toml::Value =
            toml::from_str(&format!("[controller]\nrow_policy = \"{row_policy}\"")).unwrap();
        let cfg = base.with_overrides(over, "o").unwrap();
        let refi = cfg.resolve("c").unwrap().t("nREFI");
        let items = gappy(seed, &bursts, refi);
        let (mut fast_log, fast_stats) = log_of(&cfg, &items, false);
        let (mut ref_log, ref_stats) = log_of(&cfg, &items, true);
        // Elided REFs reach the sink rank by rank when the gap is entered; issued ones in time
        // order. The same commands at the same cycles, once put in time order.
        fast_log.sort_by_key(|r| (r.cycle, r.channel));
        ref_log.sort_by_key(|r| (r.cycle, r.channel));
        prop_assert_eq!(fast_log.len(), ref_log.len());
        prop_assert!(fast_log == ref_log);
        prop_assert_eq!(fast_stats, ref_stats);
    }
}

/// The command log (as the CLI writes it) and the statistics of a run.
fn logged_run(cfg: &Config, items: &[TraceItem]) -> (String, Stats) {
    let spec = cfg.resolve("c").unwrap();
    let mut out = Vec::new();
    let mut w = LogWriter::new(&mut out, &log_header(cfg, &spec)).unwrap();
    let stats = simulate(
        cfg,
        items.iter().copied().map(Ok),
        RunOptions {
            command_log: Some(&mut w),
            ..RunOptions::default()
        },
    )
    .unwrap();
    w.finish().unwrap();
    (String::from_utf8(out).unwrap(), stats)
}

fn log_text(cfg: &Config, items: &[TraceItem]) -> String {
    logged_run(cfg, items).0
}

#[test]
fn the_checker_refuses_a_log_without_its_end_line_or_with_lines_missing() {
    let cfg = Config::preset("ddr3-1600k-bench").unwrap();
    let refi = cfg.resolve("c").unwrap().t("nREFI");
    let items = gappy(3, &[(0, 200), (30, 200)], refi);
    let text = log_text(&cfg, &items);
    assert!(
        text.contains("IDLE-REF"),
        "the gap's refreshes were not elided"
    );
    let report = check_log(text.as_bytes(), "log").unwrap();
    assert!(report.ok, "{:?}", report.violations);

    let lines: Vec<&str> = text.lines().collect();
    // Header only: what a failed run used to leave.
    let header_only = lines[..2].join("\n") + "\n";
    // Cut in the middle, and cut just before the end line.
    let half = lines[..lines.len() / 2].join("\n") + "\n";
    let no_end = lines[..lines.len() - 1].join("\n") + "\n";
    for (what, t) in [
        ("header only", header_only),
        ("half", half),
        ("no end", no_end),
    ] {
        let e = check_log(t.as_bytes(), "log").unwrap_err();
        assert!(matches!(e, LogError::Truncated(_)), "{what}: {e}");
    }
    // A line dropped from the middle: the count disagrees.
    let mut dropped = lines.clone();
    dropped.remove(lines.len() / 2);
    let e = check_log((dropped.join("\n") + "\n").as_bytes(), "log").unwrap_err();
    assert!(e.to_string().contains("counts"), "{e}");
    // Anything after the end line.
    let extra = text.clone() + lines[3] + "\n";
    assert!(check_log(extra.as_bytes(), "log").is_err());
}

#[test]
fn the_checker_flags_idle_refreshes_that_break_the_refresh_rules() {
    let cfg = Config::preset("ddr3-1600k-bench").unwrap();
    let refi = cfg.resolve("c").unwrap().t("nREFI");
    let items = gappy(5, &[(0, 100), (30, 100)], refi);
    let text = log_text(&cfg, &items);
    let line = text.lines().find(|l| l.starts_with("IDLE-REF")).unwrap();
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect();
    let (ch, rank, first, count, period) = (f[0], f[1], f[2], f[3], f[4]);
    for bad in [
        format!("IDLE-REF {ch} {rank} {first} {count} {}", period * 2),
        format!("IDLE-REF {ch} {rank} {first} {count} 1"),
        format!(
            "IDLE-REF {ch} {rank} {} {count} {period}",
            first + 20 * refi
        ),
        format!("IDLE-REF {ch} 7 {first} {count} {period}"),
    ] {
        let t = text.replace(line, &bad);
        let report = check_log(t.as_bytes(), "log").unwrap();
        assert!(!report.ok, "{bad} passed");
    }
}

#[test]
fn currents_for_a_part_without_them_come_whole_and_voltages_are_positive() {
    // LPDDR5's parts publish no currents: a few given leave the rest charged as zero.
    let e = with(
        "lpddr5-6400",
        "dram.currents.idd0",
        toml::Value::Float(60.0),
    )
    .unwrap_err();
    assert!(
        e.contains("publishes no currents") && e.contains("missing: vdd, idd2n"),
        "{e}"
    );
    // A voltage of 0 where the part draws currents zeroes their energy silently.
    let e = with("ddr4-2400r", "dram.currents.vdd", toml::Value::Float(0.0)).unwrap_err();
    assert!(
        e.contains("dram.currents.vdd") && e.contains("positive"),
        "{e}"
    );
    assert!(with("ddr4-2400r", "dram.currents.vdd", toml::Value::Float(1.25)).is_ok());
}
