//! Runs a system-level reproduction and prints its rows as JSON lines, with timing:
//! `cargo run --release -p movelab-platform --example repro -- zhao [packets]`
//! `cargo run --release -p movelab-platform --example repro -- fork [sizes_mb,..] [n,..]`
use movelab_platform::experiments::{rowclone_fork, zhao_copy_engine};

fn list(s: Option<&String>) -> Option<Vec<u64>> {
    s.map(|s| s.split(',').map(|x| x.parse().unwrap()).collect())
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let t = std::time::Instant::now();
    match a.get(1).map(String::as_str) {
        Some("zhao") => {
            let mut o = zhao_copy_engine::Options::default();
            if let Ok(t) = std::env::var("OVR") {
                o.overrides = toml::from_str(&t).unwrap();
            }
            if let Some(p) = a.get(2) {
                o.packets = p.parse().unwrap();
            }
            let rows = zhao_copy_engine::run(&o, &mut |_, _| {}).unwrap_or_else(|e| panic!("{e}"));
            for r in rows {
                println!(
                    "{:6} {:12} {:4} {:8} {:7} {:16} red {:6.1} ({:>5}) fast {:6.1} ({:>5}) ovl {:6.1} ({:>5}) cache {:?} Tb/pkt {:.0} T/pkt {:.0} copy {:.0}ns",
                    r.figure, r.core, r.payload_bytes, r.mode, r.placement, r.variant,
                    r.reduction * 100.0, r.paper_reduction.map_or("-".into(), |v| format!("{:.1}", v * 100.0)),
                    r.faster_copy * 100.0, r.paper_faster_copy.map_or("-".into(), |v| format!("{:.1}", v * 100.0)),
                    r.overlap * 100.0, r.paper_overlap.map_or("-".into(), |v| format!("{:.1}", v * 100.0)),
                    r.cache_gain.map(|v| (v * 1000.0).round() / 10.0), r.base_time_ns / o.packets as f64, r.time_ns / o.packets as f64, r.mean_copy_ns
                );
            }
        }
        Some("fork") => {
            let mut o = rowclone_fork::Options::default();
            if let Some(s) = list(a.get(2)) {
                o.sizes_mb = s;
            }
            if let Some(n) = list(a.get(3)) {
                o.n_pages = n;
            }
            let rows = rowclone_fork::run(&o, &mut |d, t| eprint!("\r{d}/{t}"))
                .unwrap_or_else(|e| panic!("{e}"));
            eprintln!();
            for r in rows {
                println!(
                    "{:9} S={:5} N={:6} {:12} fmtc {:.3} speedup {:.3} energy-red {:.3} bw-red {:.3} ipc {:.2}",
                    r.workload, r.s_mb, r.n_pages, r.mechanism, r.fmtc, r.speedup, r.energy_reduction, r.bandwidth_reduction, r.ipc
                );
            }
        }
        _ => eprintln!("usage: repro zhao [packets] | fork [sizes] [pages]"),
    }
    eprintln!("wall {:.2}s", t.elapsed().as_secs_f64());
}
