//! Digests for golden files: movelab-dram's FNV-1a and command-log digest (one implementation for
//! every simulator), and the JSON of a run's results with wall-clock fields left out. Two builds
//! whose golden lines are equal ran the same simulations to the same results; a refactor proves it
//! changed nothing by leaving them equal.
pub use movelab_dram::digest::{CommandLogDigest, Fnv};

/// `value` as JSON text with wall-clock fields (`wall_s`, measured, never simulated) removed,
/// so its digest depends on the simulation alone.
pub fn simulated_json(value: &serde_json::Value) -> String {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.remove("wall_s");
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = value.clone();
    strip(&mut v);
    serde_json::to_string(&v).unwrap_or_default()
}
