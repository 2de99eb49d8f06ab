//! The simulation part of the speed comparison with Ramulator 2.1 (docs/dram.md, "Against
//! Ramulator 2.1") without Python in the way, for profiling:
//! `cargo bench -p movelab-dram --bench vs_ramulator -- CONFIG TRACE [REQUESTS]`.
//! CONFIG is `ddr3-1600k-bench` or `ddr5-3200an`, run with Ramulator 2's queues and, on DDR5, its
//! refresh clocks and no refresh management (the settings `movelab.dram.against_ramulator` passes
//! to the command line). TRACE is a Ramulator 2 load/store trace; when the file does not exist it
//! is first written with REQUESTS (default 5 M) random requests as the comparison writes them
//! (seed 0, 80% reads, 1 GiB). Prints the time, the cycles and the statistics' JSON.
use movelab_dram::config::Config;
use movelab_dram::generator::GeneratorSpec;
use movelab_dram::system::{simulate, RunOptions};
use movelab_dram::trace::{self, TraceFormat};
use std::path::Path;

/// Ramulator 2's queues, as `MATCHED` in `python/movelab/dram/against_ramulator.py`.
const MATCHED: &str = "[controller]\nread_queue = 33\nwrite_queue = 33\n\
write_high_watermark = 0.78\nwrite_low_watermark = 0.2\nkeep_activated_rows = true\n";
/// DDR5's extra settings there.
const DDR5: &str = "rfm = false\n[dram.timing]\nnRFC = 472\nnREFI = 6240\n";

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let (Some(config), Some(path)) = (args.first(), args.get(1)) else {
        eprintln!("usage: vs_ramulator CONFIG TRACE [REQUESTS]");
        std::process::exit(2);
    };
    let n: u64 = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5_000_000);
    if !Path::new(path).exists() {
        let spec = GeneratorSpec::from_json_str(
            &format!(r#"{{"kind": "random", "count": {n}, "read_fraction": 0.8, "seed": 0, "footprint_bytes": 1073741824}}"#),
            "generator",
        )
        .expect("generator");
        let f = std::fs::File::create(path).expect("create trace");
        trace::write_ramulator(spec.build().expect("build"), std::io::BufWriter::new(f))
            .expect("write trace");
    }
    let mut extra = MATCHED.to_string();
    if config == "ddr5-3200an" {
        extra.push_str(DDR5);
    }
    let cfg = Config::preset(config)
        .expect("preset")
        .with_overrides(toml::from_str(&extra).expect("toml"), "args")
        .expect("overrides");
    let t = std::time::Instant::now();
    let stream = trace::open_trace(Path::new(path), TraceFormat::Ramulator).expect("open trace");
    let s = simulate(&cfg, stream, RunOptions::default()).expect("simulate");
    let el = t.elapsed().as_secs_f64();
    eprintln!("{config}: {:.3} s, {} cycles", el, s.cycles);
    println!("{}", serde_json::to_string(&s).expect("json"));
}
