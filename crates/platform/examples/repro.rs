//! Runs a system-level reproduction and prints its rows as JSON lines, with timing:
//! `cargo run --release -p movelab-platform --example repro -- zhao [packets]`
//! `cargo run --release -p movelab-platform --example repro -- fork [sizes_mb,..] [n,..]`
//! `cargo run --release -p movelab-platform --example repro -- apps [instructions] [app,..]`
//! `cargo run --release -p movelab-platform --example repro -- mc [instructions] [mixes] [cores,..]`
//!   (`WARM=N`: N instructions of functional warming per run; `OVR=TOML`: platform overrides)
use movelab_platform::experiments::{
    rowclone_apps, rowclone_fork, rowclone_multicore, zhao_copy_engine,
};

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
        Some("apps") => {
            let mut o = rowclone_apps::Options::default();
            if let Some(n) = a.get(2) {
                o.instructions = n.parse().unwrap();
            }
            if let Some(l) = a.get(3) {
                o.apps = l.split(',').map(String::from).collect();
            }
            let rows = rowclone_apps::run(&o, &mut |d, t| eprint!("\r{d}/{t}"))
                .unwrap_or_else(|e| panic!("{e}"));
            eprintln!();
            for r in rows {
                println!(
                    "{:10} {:12} ipc {:.3} speedup {:.3} energy-red {:.3} bw-red {:.3} copy-init {:.3} B/instr {:.2}",
                    r.app, r.mechanism, r.ipc, r.speedup, r.energy_reduction, r.bandwidth_reduction, r.copy_init_fraction, r.bytes_per_instruction
                );
            }
        }
        Some("mc") => {
            let mut o = rowclone_multicore::Options::default();
            if let Ok(t) = std::env::var("OVR") {
                o.apps.overrides = toml::from_str(&t).unwrap();
            }
            if let Ok(w) = std::env::var("WARM") {
                o.functional_warming = w.parse().unwrap();
            }
            if let Some(n) = a.get(2) {
                o.apps.instructions = n.parse().unwrap();
                o.apps.warmup = o.apps.instructions / 2;
            }
            if let Some(n) = a.get(3) {
                o.mixes = n.parse().unwrap();
            }
            if let Some(c) = list(a.get(4)) {
                o.cores = c.into_iter().map(|v| v as u32).collect();
            }
            let res = rowclone_multicore::run(&o, &mut |d, t| eprint!("\r{d}/{t}"))
                .unwrap_or_else(|e| panic!("{e}"));
            eprintln!();
            for r in &res {
                let ws: Vec<String> = r.runs.iter().map(|x| format!("{:.3}", x.weighted_speedup)).collect();
                println!("{} {:?} ws {}", r.mix.cores, r.mix.apps, ws.join(" "));
            }
            for r in rowclone_multicore::summarise(&res) {
                let m = r.mean;
                println!(
                    "{} {:12} WS {:+.3} IT {:+.3} HS {:+.3} MS {:.3} BW {:.3} E {:.3} fig13 {:?}",
                    r.cores, r.mechanism, m.weighted_speedup_improvement, m.instruction_throughput_improvement,
                    m.harmonic_speedup_improvement, m.max_slowdown_reduction,
                    m.bandwidth_per_instruction_reduction, m.energy_per_instruction_reduction, r.by_highly_intensive
                );
            }
        }
        _ => eprintln!("usage: repro zhao [packets] | fork [sizes] [pages] | apps [instructions] [apps] | mc [instructions] [mixes] [cores]"),
    }
    eprintln!("wall {:.2}s", t.elapsed().as_secs_f64());
}
