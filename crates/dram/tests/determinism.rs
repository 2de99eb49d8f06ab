//! Determinism and trace-error behaviour of whole simulations (issue 2's reliability bar): the same
//! config and trace give byte-identical JSON stats (and command logs) on every run; a different
//! seed gives different stats; a trace that goes bad part-way ends the run with an error naming
//! the line, never a panic.
use movelab_dram::command::{CommandRecord, LogWriter};
use movelab_dram::config::{Config, BUILTIN_CONFIGS};
use movelab_dram::error::{Error, TraceError};
use movelab_dram::generator::GeneratorSpec;
use movelab_dram::request::{Op, Request, TraceItem};
use movelab_dram::stats::Stats;
use movelab_dram::system::{log_header, simulate, RunOptions};
use movelab_dram::trace::{from_reader, open_trace, TraceFormat};
use proptest::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn run(cfg: &Config, spec: &GeneratorSpec) -> Stats {
    simulate(cfg, spec.build().unwrap().map(Ok), RunOptions::default()).unwrap()
}

fn json(s: &Stats) -> String {
    serde_json::to_string(s).unwrap()
}

fn with(preset: &str, over: &str) -> Config {
    Config::preset(preset)
        .unwrap()
        .with_overrides(over.parse::<toml::Table>().unwrap().into(), "test")
        .unwrap()
}

/// Runs and also records the command log as text.
fn run_logged(cfg: &Config, items: Vec<Result<TraceItem, TraceError>>) -> (String, Vec<u8>) {
    let spec = cfg.resolve("test").unwrap();
    let mut w = LogWriter::new(Vec::new(), &log_header(cfg, &spec)).unwrap();
    let stats = simulate(
        cfg,
        items.into_iter(),
        RunOptions {
            command_log: Some(&mut w),
            ..RunOptions::default()
        },
    )
    .unwrap();
    (json(&stats), w.finish().unwrap())
}

#[test]
fn same_config_and_generator_give_identical_json() {
    for (preset, _) in BUILTIN_CONFIGS {
        for over in [
            "",
            "[controller]\nscheduler = \"fcfs\"\nrow_policy = \"closed\"\n",
        ] {
            let cfg = with(preset, over);
            for spec in [
                GeneratorSpec::random(3000, 0.7, 11),
                GeneratorSpec::stream(3000, 0.5, 11),
            ] {
                let a = json(&run(&cfg, &spec));
                let b = json(&run(&cfg, &spec));
                let c = json(&run(&cfg.clone(), &spec.clone()));
                assert_eq!(a, b, "{preset} {over:?} {spec:?}");
                assert_eq!(a, c, "{preset} {over:?} {spec:?}");
                // The JSON is not trivially equal: it carries the run.
                let s: Stats = serde_json::from_str(&a).unwrap();
                assert_eq!(s.reads + s.writes, 3000, "{preset}");
                assert!(s.cycles >= 3000 / 2, "{preset}: {} cycles", s.cycles);
            }
        }
    }
}

#[test]
fn same_run_gives_identical_command_log_and_stats_with_bulk_ops() {
    let cfg = Config::preset("rowclone-ddr3-1066").unwrap();
    let text = "R 0x0\nCOPY 0x0 0x10000 8K\nW 0x40\n@500 INIT 0x40000 4K 0\nR 0x1000\nCOPY 0x100000 0x7000 4K\n";
    let items = || {
        from_reader(text.as_bytes(), "bulk.trace", TraceFormat::Native)
            .unwrap()
            .collect::<Vec<_>>()
    };
    let (s1, log1) = run_logged(&cfg, items());
    let (s2, log2) = run_logged(&cfg, items());
    assert_eq!(s1, s2);
    assert_eq!(log1, log2, "command logs differ between identical runs");
    let log = String::from_utf8(log1).unwrap();
    assert!(log.lines().count() > 10, "{log}");
    let s: Stats = serde_json::from_str(&s1).unwrap();
    assert_eq!(s.bulk.ops, 3);
    let b = &s.bulk.bytes;
    assert_eq!(
        b.baseline + b.fpm + b.psm_inter + b.psm_intra,
        8192 + 4096 + 4096
    );
}

#[test]
fn different_seeds_give_different_stats() {
    let cfg = Config::preset("ddr3-1600k-bench").unwrap();
    for kind in ["random", "stream"] {
        let spec = |seed| {
            let mut s = GeneratorSpec::random(4000, 0.6, seed);
            if kind == "stream" {
                s = GeneratorSpec::stream(4000, 0.6, seed);
            }
            s
        };
        let a = run(&cfg, &spec(1));
        let b = run(&cfg, &spec(2));
        assert_ne!(
            json(&a),
            json(&b),
            "{kind}: seeds 1 and 2 gave the same stats"
        );
        // The seed changes the read/write draw (and, for random, the addresses).
        assert_ne!(a.reads, b.reads, "{kind}");
        assert_eq!(a.reads + a.writes, 4000);
        assert_eq!(b.reads + b.writes, 4000);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any seed: two runs agree byte for byte, and a neighbouring seed differs.
    #[test]
    fn any_seed_is_reproducible(
        seed in any::<u64>(),
        read_fraction in 0.1f64..0.9,
        preset in prop::sample::select(BUILTIN_CONFIGS.iter().map(|(n, _)| *n).collect::<Vec<_>>()),
    ) {
        let cfg = Config::preset(preset).unwrap();
        let spec = GeneratorSpec::random(600, read_fraction, seed);
        let a = json(&run(&cfg, &spec));
        prop_assert_eq!(&a, &json(&run(&cfg, &spec)));
        let other = GeneratorSpec::random(600, read_fraction, seed.wrapping_add(1));
        prop_assert_ne!(&a, &json(&run(&cfg, &other)));
    }
}

// ------------------------------------------------------------------------------------------------
// A trace that goes bad part-way.

fn simulate_text(text: &str, format: TraceFormat) -> Result<Stats, Error> {
    let cfg = Config::preset("ddr3-1600k-bench").unwrap();
    let reader = from_reader(text.as_bytes(), "mid.trace", format).unwrap();
    catch_unwind(AssertUnwindSafe(|| {
        simulate(&cfg, reader, RunOptions::default())
    }))
    .unwrap_or_else(|_| panic!("simulate panicked on a bad trace:\n{text}"))
}

fn assert_line_error(r: Result<Stats, Error>, line: usize) -> String {
    match r {
        Err(Error::Trace(TraceError::Line {
            source_name,
            line: l,
            what,
        })) => {
            assert_eq!(source_name, "mid.trace");
            assert_eq!(l, line, "{what}");
            let msg = Error::Trace(TraceError::Line {
                source_name,
                line: l,
                what: what.clone(),
            })
            .to_string();
            assert!(msg.starts_with(&format!("mid.trace:{line}: ")), "{msg}");
            what
        }
        other => panic!("expected an error naming line {line}, got {other:?}"),
    }
}

#[test]
fn error_mid_trace_names_the_line_in_every_format() {
    let good = |f: &dyn Fn(u64) -> String| (0..200).map(|i| f(i * 64)).collect::<Vec<_>>();
    let cases: [(TraceFormat, Vec<String>, &str); 3] = [
        (
            TraceFormat::Native,
            good(&|a| format!("R 0x{a:x}")),
            "R 0xZZ",
        ),
        (
            TraceFormat::Ramulator,
            good(&|a| format!("LD 0x{a:x}")),
            "LD",
        ),
        (
            TraceFormat::Dramsim3,
            good(&|a| format!("0x{a:x} READ {a}")),
            "0x40 READ 1",
        ),
    ];
    for (format, mut lines, bad) in cases {
        lines.insert(150, bad.to_string());
        lines.insert(10, "# a comment".to_string());
        lines.insert(20, String::new());
        let text = lines.join("\n") + "\n";
        // 150 good lines, a comment and a blank line come first: the bad one is line 153.
        let what = assert_line_error(simulate_text(&text, format), 153);
        assert!(!what.is_empty());
        // The same via Auto detection.
        assert_line_error(simulate_text(&text, TraceFormat::Auto), 153);
    }
}

#[test]
fn error_in_a_trace_file_names_the_file_and_line() {
    let dir = std::env::temp_dir().join(format!("movelab-determinism-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.trace");
    let mut text = String::new();
    for i in 0..1000u64 {
        text.push_str(&format!("R 0x{:x}\n", i * 4096));
    }
    text.push_str("COPY 0x0 0x0 4K\n"); // overlapping copy: line 1001
    text.push_str("R 0x40\n");
    std::fs::write(&path, &text).unwrap();
    let cfg = Config::preset("ddr3-1600k-bench").unwrap();
    let stream = open_trace(&path, TraceFormat::Auto).unwrap();
    let e = simulate(&cfg, stream, RunOptions::default()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("{}:1001: ", path.display())),
        "{msg}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_error_item_from_any_iterator_ends_the_run_with_that_error() {
    let cfg = Config::preset("ddr4-3200aa-2ch").unwrap();
    let err = TraceError::Line {
        source_name: "gen".into(),
        line: 77,
        what: "made up".into(),
    };
    let mut items: Vec<Result<TraceItem, TraceError>> = (0..76u64)
        .map(|i| {
            Ok(TraceItem::Req(Request {
                addr: i * 64,
                op: Op::Read,
                arrival: None,
            }))
        })
        .collect();
    items.push(Err(err.clone()));
    items.push(Ok(TraceItem::Req(Request {
        addr: 0,
        op: Op::Write,
        arrival: None,
    })));
    let mut seen: Vec<CommandRecord> = Vec::new();
    let r = simulate(
        &cfg,
        items.into_iter(),
        RunOptions {
            command_log: Some(&mut seen),
            ..RunOptions::default()
        },
    );
    assert_eq!(r.unwrap_err(), Error::Trace(err));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A garbage line at any position of a good trace: the run ends with an error naming it.
    #[test]
    fn garbage_at_any_line_is_reported_at_that_line(
        good in 0usize..120,
        garbage in prop::sample::select(vec!["R", "W 0x", "COPY 1 2", "INIT 0 0 0", "X 0x40", "R -1",
                                             "R 0x40 0x80", "@ R 0x40", "R 99999999999999999999999"]),
    ) {
        let mut text: String = (0..good).map(|i| format!("W 0x{:x}\n", i * 128)).collect();
        text.push_str(garbage);
        text.push_str("\nR 0x40\n");
        assert_line_error(simulate_text(&text, TraceFormat::Native), good + 1);
    }
}
