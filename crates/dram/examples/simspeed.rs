//! Times the simulator on the issue-2 benchmark configuration without Python in the way:
//! `cargo run --release --example simspeed -- random 5000000`.
use movelab_dram::config::Config;
use movelab_dram::generator::GeneratorSpec;
use movelab_dram::system::{simulate, RunOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let pattern = args.get(1).map(String::as_str).unwrap_or("random");
    let n: u64 = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let spec = GeneratorSpec::from_json_str(
        &format!(r#"{{"kind": "{pattern}", "count": {n}, "read_fraction": 0.8, "seed": 42, "footprint_bytes": "4G"}}"#),
        "args",
    )
    .expect("generator");
    let cfg = Config::preset("ddr3-1600k-bench").expect("preset");
    let t = std::time::Instant::now();
    let s = simulate(
        &cfg,
        spec.build().expect("build").map(Ok),
        RunOptions::default(),
    )
    .expect("simulate");
    let el = t.elapsed().as_secs_f64();
    println!(
        "{pattern}: {n} requests in {el:.3} s = {:.3} M req/s; {} cycles ({:.4}/req); mean read latency {:.2}",
        n as f64 / el / 1e6,
        s.cycles,
        s.cycles as f64 / n as f64,
        s.read_latency.mean_cycles
    );
}
