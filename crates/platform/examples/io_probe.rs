//! Prints an I/O run's statistics (a development probe): `io_probe PRESET COUNT BYTES [idma]`.
use movelab_platform::config::io::IoConfig;
use movelab_platform::systems::io_pair::stream;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.get(1).is_some_and(|s| s == "pcie-model") {
        for r in movelab_platform::experiments::pcie_model_check::run().expect("run") {
            println!(
                "{:16} gen{} {:5} movelab {:7.2} pcie-model {:7.2} fixed {:7.2}",
                r.model, r.gen, r.size, r.movelab_gbps, r.pcie_model_gbps, r.pcie_model_fixed_gbps
            );
        }
        return;
    }
    if a.get(1).is_some_and(|s| s == "larsen") {
        let o = movelab_platform::experiments::larsen_idma::Options::paper().expect("presets");
        for r in movelab_platform::experiments::larsen_idma::run(&o, &mut |_, _| {}).expect("run") {
            if r.metric.starts_with("bytes_") {
                continue;
            }
            println!(
                "{:12} {:28} {:32} {:12.4} {:?}",
                r.figure, r.case, r.metric, r.value, r.paper_value
            );
        }
        return;
    }
    let mut cfg = IoConfig::load(a.get(1).map_or("larsen-82598-gen1", |s| s)).expect("config");
    if a.get(4).is_some_and(|s| s == "idma") {
        cfg.nic.kind = "idma".into();
    }
    let count = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let bytes = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(64);
    match stream(&cfg, count, bytes) {
        Ok(s) => {
            let mut v = serde_json::to_value(&s).unwrap_or_default();
            if let Some(m) = v.get_mut("messages").and_then(|m| m.as_array_mut()) {
                m.truncate(2);
            }
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        }
        Err(e) => eprintln!("error: {e}"),
    }
}
