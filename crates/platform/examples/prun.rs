//! Runs a workload on a platform and prints the stats as JSON:
//! `cargo run --release -p movelab-platform --example prun -- PLATFORM WORKLOAD ['toml overrides'] [param=value ...]`
use movelab_platform::{PlatformConfig, Workload};
use std::collections::BTreeMap;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mut cfg = PlatformConfig::load(&a[1]).unwrap_or_else(|e| panic!("{e}"));
    let mut params = BTreeMap::new();
    for x in &a[3..] {
        if let Some((k, v)) = x.split_once('=') {
            if !k.contains('.') && !x.contains(' ') {
                params.insert(k.to_string(), v.parse::<u64>().unwrap());
                continue;
            }
        }
        let v: toml::Value = toml::from_str(x).unwrap();
        cfg = cfg
            .with_overrides(v, "cli")
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let w = Workload::load(&a[2], &params).unwrap_or_else(|e| panic!("{e}"));
    let t = std::time::Instant::now();
    let s = movelab_platform::run(&cfg, &w).unwrap_or_else(|e| panic!("{e}"));
    let el = t.elapsed().as_secs_f64();
    let mut v = serde_json::to_value(&s).unwrap();
    v.as_object_mut().unwrap().remove("dram");
    println!("{}", serde_json::to_string_pretty(&v).unwrap());
    eprintln!(
        "wall {el:.3}s, {:.2} M instr/s",
        s.instructions as f64 / el / 1e6
    );
}
