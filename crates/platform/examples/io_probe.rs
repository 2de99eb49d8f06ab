//! Prints an I/O run's statistics (a development probe): `io_probe PRESET COUNT BYTES [idma]`
//! sends COUNT frames of BYTES (headers included) between two platforms on the cluster, their
//! device (`larsen-io`'s NIC, or with `idma` `larsen-io-idma`'s engine) on I/O preset PRESET;
//! `io_probe pcie-model` and `io_probe larsen` print those checks' rows; a last argument `acks`
//! has the receiver send TCP ACKs back (the NIC only).
use movelab_platform::config::io::IoConfig;
use movelab_platform::experiments::larsen_idma::{cluster_stream, FIG8_PLATFORM, FIG9_PLATFORM};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.get(1).is_some_and(|s| s == "pcie-model") {
        for r in movelab_platform::experiments::pcie_model_check::run(cluster_stream).expect("run")
        {
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
    let preset = a.get(1).map_or("larsen-82598-gen1", |s| s);
    let cfg = IoConfig::load(preset).expect("config");
    let platform = if a.get(4).is_some_and(|s| s == "idma") {
        FIG9_PLATFORM
    } else {
        FIG8_PLATFORM
    };
    let count = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let bytes = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(64);
    let none = toml::Value::Table(Default::default());
    let t = toml::Table::new();
    match cluster_stream(
        platform,
        platform,
        &none,
        preset,
        cfg.nic.mac_gbps,
        &t,
        &t,
        count,
        bytes,
        0,
        a.last().is_some_and(|s| s == "acks"),
    ) {
        Ok(s) => {
            let mut v = serde_json::to_value(&s).unwrap_or_default();
            if let Some(l) = v.get_mut("links").and_then(|l| l.as_array_mut()) {
                for link in l {
                    if let Some(p) = link.get_mut("passages").and_then(|p| p.as_array_mut()) {
                        p.truncate(4);
                    }
                }
            }
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        }
        Err(e) => eprintln!("error: {e}"),
    }
}
