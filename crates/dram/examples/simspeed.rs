//! Times the simulator without Python in the way:
//! `cargo run --release --example simspeed -- random 5000000 [CONFIG]` (line requests on
//! ddr3-1600k-bench or the config preset named),
//! or `-- copy 67108864` / `-- zero 67108864` (one RowClone bulk operation of that many bytes on
//! rowclone-ddr3-1066, to show that bulk work costs time linear in its size),
//! or `-- trace FILE CONFIG [TOML]` (a trace file in any format, on a config preset with
//! overrides written as TOML, e.g. `'controller.read_queue = 33'`: the bench's runs without the
//! Python front, for profilers).
use movelab_dram::config::Config;
use movelab_dram::generator::GeneratorSpec;
use movelab_dram::request::{BulkKind, BulkOp, TraceItem};
use movelab_dram::system::{simulate, RunOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let pattern = args.get(1).map(String::as_str).unwrap_or("random");
    let n: u64 = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    if pattern == "trace" {
        let path = args.get(2).expect("trace FILE CONFIG [TOML]");
        let preset = args
            .get(3)
            .map(String::as_str)
            .unwrap_or("ddr3-1600k-bench");
        let mut cfg = Config::preset(preset).expect("preset");
        if let Some(t) = args.get(4) {
            cfg = cfg
                .with_overrides(toml::from_str(t).expect("toml"), "args")
                .expect("overrides");
        }
        let t = std::time::Instant::now();
        let stream = movelab_dram::trace::open_trace(
            std::path::Path::new(path),
            movelab_dram::trace::TraceFormat::Auto,
        )
        .expect("trace");
        let s = simulate(&cfg, stream, RunOptions::default()).expect("simulate");
        let el = t.elapsed().as_secs_f64();
        println!(
            "{path}: {} requests in {el:.3} s; {} cycles; hits/misses/conflicts {}/{}/{}",
            s.reads + s.writes,
            s.cycles,
            s.row.hits,
            s.row.misses,
            s.row.conflicts
        );
        return;
    }
    if pattern == "copy" || pattern == "zero" {
        let cfg = Config::preset("rowclone-ddr3-1066").expect("preset");
        let cfg = cfg
            .with_overrides(
                toml::from_str("[controller]\nbulk = \"rowclone\"").expect("toml"),
                "args",
            )
            .expect("rowclone");
        let kind = if pattern == "copy" {
            BulkKind::Copy { src: 0 }
        } else {
            BulkKind::Init { value: 0 }
        };
        let op = TraceItem::Bulk(BulkOp {
            kind,
            dst: 1 << 30,
            bytes: n,
            arrival: None,
        });
        let t = std::time::Instant::now();
        let s = simulate(&cfg, std::iter::once(Ok(op)), RunOptions::default()).expect("simulate");
        let el = t.elapsed().as_secs_f64();
        println!(
            "{pattern}: {n} bytes in {el:.3} s = {:.1} MB of bulk work simulated per second; {} cycles; bytes by mechanism {:?}",
            n as f64 / el / 1e6,
            s.cycles,
            s.bulk.bytes
        );
        return;
    }
    let spec = GeneratorSpec::from_json_str(
        &format!(r#"{{"kind": "{pattern}", "count": {n}, "read_fraction": 0.8, "seed": 42, "footprint_bytes": "4G"}}"#),
        "args",
    )
    .expect("generator");
    // An optional third argument names another config preset (e.g. ddr5-3200an).
    let preset = args
        .get(3)
        .map(String::as_str)
        .unwrap_or("ddr3-1600k-bench");
    let cfg = Config::preset(preset).expect("preset");
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
