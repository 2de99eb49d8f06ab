//! The simulation part of the speed comparison with Ramulator 2.1 (docs/dram.md, "Against
//! Ramulator 2.1") without Python in the way, for profiling:
//! `cargo bench -p movelab-dram --bench vs_ramulator -- CONFIG TRACE [REQUESTS] [--set KEY=VALUE ...]`.
//! CONFIG is `ddr3-1600k-bench` or `ddr5-3200an`; the `--set`s are the ones the comparison passes
//! to movelab's command line (Ramulator 2's queues and, on DDR5, its refresh clocks and no refresh
//! management), printed by
//! `python -c 'from movelab.dram.against_ramulator import movelab_sets; print(*movelab_sets("CONFIG"))'`,
//! so the settings live in one place. TRACE is a Ramulator 2 load/store trace; when the file does
//! not exist it is first written with REQUESTS (default 5 M) random requests as the comparison
//! writes them (seed 0, 80% reads, 1 GiB). Prints the time, the cycles and the statistics' JSON.

use movelab_dram::config::Config;
use movelab_dram::generator::GeneratorSpec;
use movelab_dram::system::{simulate, RunOptions};
use movelab_dram::trace::{self, TraceFormat};
use std::path::Path;

/// Stops with a message naming what failed (a bench, not a library: no panic for bad input).
fn or_exit<T, E: std::fmt::Display>(r: Result<T, E>, what: &str) -> T {
    r.unwrap_or_else(|e| {
        eprintln!("vs_ramulator: {what}: {e}");
        std::process::exit(2)
    })
}

fn main() {
    // `--set KEY=VALUE` pairs (or bare KEY=VALUE) are overrides, TOML dotted keys; cargo's own
    // `--bench` flag is skipped with the `--set`s.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let (sets, pos): (Vec<&String>, Vec<&String>) = args.iter().partition(|a| a.contains('='));
    let (Some(config), Some(path)) = (pos.first(), pos.get(1)) else {
        eprintln!("usage: vs_ramulator CONFIG TRACE [REQUESTS] [--set KEY=VALUE ...]");
        std::process::exit(2);
    };
    let n: u64 = match pos.get(2) {
        None => 5_000_000,
        Some(s) => or_exit(s.parse(), "REQUESTS"),
    };
    if !Path::new(path.as_str()).exists() {
        let spec = or_exit(
            GeneratorSpec::from_json_str(
                &format!(
                    r#"{{"kind": "random", "count": {n}, "read_fraction": 0.8, "seed": 0, "footprint_bytes": 1073741824}}"#
                ),
                "generator",
            ),
            "generator",
        );
        let f = or_exit(std::fs::File::create(path.as_str()), path);
        let reqs = or_exit(spec.build(), "generator");
        or_exit(
            trace::write_ramulator(reqs, std::io::BufWriter::new(f)),
            path,
        );
    }
    let extra: String = sets
        .iter()
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv.as_str(), ""));
            format!("{k} = {v}\n")
        })
        .collect();
    let overrides = or_exit(toml::from_str(&extra), "--set");
    let cfg = or_exit(Config::preset(config), config);
    let cfg = or_exit(cfg.with_overrides(overrides, "--set"), "--set");
    let t = std::time::Instant::now();
    let stream = or_exit(
        trace::open_trace(Path::new(path.as_str()), TraceFormat::Ramulator),
        path,
    );
    let s = or_exit(simulate(&cfg, stream, RunOptions::default()), "simulate");
    let el = t.elapsed().as_secs_f64();
    eprintln!("{config}: {:.3} s, {} cycles", el, s.cycles);
    println!("{}", or_exit(serde_json::to_string(&s), "json"));
}
