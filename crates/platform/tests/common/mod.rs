//! What the copy-engine tests share: a `bulk-copy` run on the `zhao-uma-emc` preset with a
//! test's overrides layered on, and the engine's mean copy time from it.
#![allow(dead_code)] // each test binary uses what it needs

use movelab_platform::config::workload::Workload;
use movelab_platform::{run, PlatformConfig, PlatformStats};
use std::collections::BTreeMap;

/// Statistics of `pages` separate copies of `bytes` (no work between them) on `zhao-uma-emc`
/// with `over` (TOML) layered on.
pub fn copy_run(over: &str, pages: u64, bytes: u64) -> PlatformStats {
    let c = PlatformConfig::preset("zhao-uma-emc")
        .unwrap()
        .with_overrides(toml::from_str(over).unwrap(), "test")
        .unwrap();
    let p: BTreeMap<String, u64> = [("pages", pages), ("bytes", bytes), ("work", 0)]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    run(&c, &Workload::load("bulk-copy", &p).unwrap()).unwrap()
}

/// Mean copy time (ns) of the offloaded copies of [`copy_run`]; fails if nothing was offloaded.
pub fn mean_engine_copy(over: &str, pages: u64, bytes: u64) -> f64 {
    let s = copy_run(over, pages, bytes);
    assert!(s.mean_offload_ns > 0.0, "the engine copied");
    s.mean_offload_ns
}
