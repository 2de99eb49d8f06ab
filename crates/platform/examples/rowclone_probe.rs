//! Looks inside RowClone's section 7.3 / 7.4 runs (docs/rowclone-system.md, "What the runs are
//! made of"): the measurements behind the differences from the paper's Table 5 and Table 7.
//!
//! `cargo run --release -p movelab-platform --example rowclone_probe -- energy`
//!   each copy/initialisation-intensive application alone under the three mechanisms: IPC, bytes
//!   and DRAM energy per program instruction, and the run's DRAM energy by component (background,
//!   refresh, activate, precharge, read, write, transfer, channel I/O), with the DRAM commands;
//! `... -- slowdowns CORES MIXES`
//!   the first MIXES seeded mixes of CORES cores: each application's alone IPC, and its slowdown
//!   (alone / shared IPC) under each mechanism (Table 7's weighted speedup and maximum slowdown);
//! `... -- window CORES MIXES`
//!   the same mixes' measurement windows: program instructions in the window, and the share of
//!   them retired by cores already past their own target (they weight Table 7's bandwidth and
//!   energy per instruction towards the faster cores).
//! `... -- weights CORES MIXES`
//!   the same mixes' bandwidth per instruction reduction of RowClone-ZI as if every core counted
//!   its own `instructions` (the alone runs' bytes per instruction, summed with equal weights,
//!   interference left out): what Table 7's column gives without the window's weighting.
//!
//! Environment: `LENGTH=WARMUP,INSTRUCTIONS` (default 50000,100000), `WARM=N` (slowdowns: N
//! instructions of functional warming, `rowclone_multicore::Options::functional_warming`),
//! `APPS=a,b` (energy: only these), `OVR=TOML` (platform overrides, as `--set`), `APP_PARAMS=k=v,...` (every copy/initialisation-intensive application's parameters).
use movelab_platform::experiments::{rowclone_apps as ra, rowclone_multicore as rm};
use movelab_platform::systems::platform::Platform;
use std::collections::BTreeMap;

fn options() -> ra::Options {
    let mut o = ra::Options::default();
    if let Ok(t) = std::env::var("OVR") {
        o.overrides = toml::from_str(&t).expect("OVR: platform overrides (TOML)");
    }
    if let Ok(t) = std::env::var("LENGTH") {
        let (w, n) = t.split_once(',').expect("LENGTH=WARMUP,INSTRUCTIONS");
        o.warmup = w.parse().expect("LENGTH: warm-up");
        o.instructions = n.parse().expect("LENGTH: instructions");
    }
    if let Ok(t) = std::env::var("APP_PARAMS") {
        for kv in t.split(',') {
            let (k, v) = kv.split_once('=').expect("APP_PARAMS=k=v,...");
            o.app_params
                .insert(k.into(), v.parse().expect("APP_PARAMS: integer"));
        }
    }
    o
}

fn pct(part: f64, total: f64) -> f64 {
    if total > 0.0 {
        100.0 * part / total
    } else {
        0.0
    }
}

fn energy(o: &ra::Options) {
    let only = std::env::var("APPS").unwrap_or_default();
    let apps = ra::apps().expect("applications");
    for app in apps
        .iter()
        .filter(|a| a.copy_intensive() && (only.is_empty() || only.split(',').any(|n| n == a.name)))
    {
        for (label, mech) in ra::MECHANISMS {
            let cfg =
                ra::mechanism_platform("rowclone-system", &o.overrides, mech).expect("platform");
            let w = app.workload(ra::ENDLESS, &o.app_params).expect("workload");
            let mut p = Platform::new(&cfg).expect("platform");
            p.set_work_targets(o.warmup, vec![o.instructions])
                .expect("targets");
            let s = p.run(&w).expect("run");
            let m = ra::window_measure(&s);
            let e = &s.dram.energy;
            let t = e.total_nj;
            let cmds: Vec<String> = s
                .dram
                .commands
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            println!(
                "{:10} {:12} ipc {:.3} B/i {:.3} nJ/i {:.3} | background {:.1}% refresh {:.1}% act {:.1}% pre {:.1}% rd {:.1}% wr {:.1}% tr {:.1}% io {:.1}% | {}",
                app.name,
                label,
                m.ipc,
                m.bytes_per_instruction,
                m.energy_nj_per_instruction,
                pct(e.background_nj, t),
                pct(e.refresh_nj, t),
                pct(e.activate_nj, t),
                pct(e.precharge_nj, t),
                pct(e.read_nj, t),
                pct(e.write_nj, t),
                pct(e.transfer_nj, t),
                pct(e.io_nj, t),
                cmds.join(", ")
            );
        }
    }
}

fn mixes(a: &[String]) -> (u32, Vec<rm::Mix>) {
    let cores: u32 = a.get(2).map_or(2, |v| v.parse().expect("CORES"));
    let n: u32 = a.get(3).map_or(5, |v| v.parse().expect("MIXES"));
    (cores, rm::draw_mixes(7, cores, n).expect("mixes"))
}

fn slowdowns(o: &ra::Options, a: &[String]) {
    let (cores, mixes) = mixes(a);
    let mo = rm::Options {
        cores: vec![cores],
        mixes: mixes.len() as u32,
        seed: 7,
        apps: o.clone(),
        functional_warming: std::env::var("WARM").map_or(0, |v| v.parse().expect("WARM")),
    };
    let mut alone = BTreeMap::new();
    for name in mixes.iter().flat_map(|m| &m.apps) {
        if !alone.contains_key(name) {
            let app = ra::app(name).expect("application");
            alone.insert(name.clone(), rm::alone_ipc(&app, &mo).expect("alone"));
        }
    }
    for m in &mixes {
        let r = rm::run_mix(m, &mo, &alone).expect("mix");
        let fmt = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.3}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!(
            "mix {} {:?} alone IPC {}",
            m.index,
            m.apps,
            fmt(&r.alone_ipc)
        );
        for x in &r.runs {
            let sd: Vec<f64> = x.ipc.iter().zip(&r.alone_ipc).map(|(s, a)| a / s).collect();
            println!(
                "  {:12} IPC {} slowdown {} | WS {:.3} IT {:.3} MS {:.3}",
                x.mechanism,
                fmt(&x.ipc),
                fmt(&sd),
                x.weighted_speedup,
                x.instruction_throughput,
                x.max_slowdown
            );
        }
    }
}

fn window(o: &ra::Options, a: &[String]) {
    let (cores, mixes) = mixes(a);
    for m in &mixes {
        for (label, mech) in ra::MECHANISMS {
            let cfg = rm::mix_platform(cores, &o.overrides, mech).expect("platform");
            let programs = m
                .apps
                .iter()
                .map(|n| {
                    let app = ra::app(n).expect("application");
                    let p = if app.copy_intensive() {
                        o.app_params.clone()
                    } else {
                        BTreeMap::new()
                    };
                    app.workload(ra::ENDLESS, &p).expect("workload")
                })
                .collect();
            let mut p = Platform::new(&cfg).expect("platform");
            p.set_work_targets(o.warmup, vec![o.instructions; cores as usize])
                .expect("targets");
            let s = p.run_programs(programs, &mut |_| {}).expect("run");
            let w = s.window.unwrap_or_default();
            // Instructions a core retired past its own warm-up and target: all of them after
            // its measured region, some before the window opened (when the slowest core was
            // still warming up).
            let past: u64 = s
                .per_core
                .iter()
                .map(|c| {
                    c.work_instructions
                        .saturating_sub(o.warmup + o.instructions)
                })
                .sum();
            let n = w.work_instructions.max(1) as f64;
            println!(
                "{cores} cores mix {} {:12} window: {} instructions, cores past target retired {:.1}% of that | B/i {:.3} nJ/i {:.3}",
                m.index,
                label,
                w.work_instructions,
                pct(past as f64, n),
                w.channel_bytes as f64 / n,
                w.dram_energy_nj / n
            );
        }
    }
}

fn weights(o: &ra::Options, a: &[String]) {
    let (cores, mixes) = mixes(a);
    let mut bpi = BTreeMap::new();
    let mut reductions = Vec::new();
    for m in &mixes {
        let mut sum = [0.0; 2];
        for name in &m.apps {
            for (k, mech) in ["base", "rowclone-zi"].into_iter().enumerate() {
                let v = *bpi.entry((name.clone(), mech)).or_insert_with(|| {
                    let app = ra::app(name).expect("application");
                    ra::alone(&app, mech, o)
                        .expect("alone")
                        .bytes_per_instruction
                });
                sum[k] += v;
            }
        }
        reductions.push(1.0 - sum[1] / sum[0]);
    }
    let mean = reductions.iter().sum::<f64>() / reductions.len().max(1) as f64;
    println!(
        "{cores} cores, {} mixes: RowClone-ZI bandwidth per instruction reduction with equal weights {:.1}%",
        mixes.len(),
        100.0 * mean
    );
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let o = options();
    match a.get(1).map(String::as_str) {
        Some("energy") => energy(&o),
        Some("slowdowns") => slowdowns(&o, &a),
        Some("window") => window(&o, &a),
        Some("weights") => weights(&o, &a),
        _ => eprintln!("usage: rowclone_probe energy | slowdowns CORES MIXES | window CORES MIXES | weights CORES MIXES"),
    }
}
