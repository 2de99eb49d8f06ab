//! Section 7.3's applications alone with warm caches (docs/rowclone-system.md, "Warm caches" and
//! "What Table 5's energy column needs"): each copy/initialisation-intensive application under the
//! three mechanisms after `WARM` instructions of functional warming (0: cold, as `movelab
//! reproduce rowclone-apps`), with what the differences are made of.
//!
//! `cargo run --release -p movelab-platform --example rowclone_apps_warm`
//!
//! Per run: IPC and speedup; the window's bandwidth and DRAM energy reductions (Table 5's);
//! background + refresh share of the baseline run's DRAM energy (`b`) and the energy reduction that
//! background shrinking with time and the rest with traffic would give,
//! `b (1 - 1/speedup) + (1 - b) bandwidth reduction`; the DRAM's reads, writes, mean read
//! latency and row conflicts; the coherence actions (lines invalidated, flushed, inserted).
//!
//! Environment: `WARM=N` (default 0), `LENGTH=WARMUP,INSTRUCTIONS` (default 50000,100000),
//! `APPS=a,b` (default: the six), `APP_PARAMS=k=v,...` (every application's parameters),
//! `OVER=TOML` (platform overrides, e.g. `[memory.controller]` keys).
use movelab_platform::experiments::rowclone_apps as ra;
use movelab_platform::systems::platform::Platform;
use std::collections::BTreeMap;

fn env_u64(k: &str, d: u64) -> u64 {
    std::env::var(k).map_or(d, |v| {
        v.parse().unwrap_or_else(|_| panic!("{k}: an integer"))
    })
}

fn main() {
    let warm = env_u64("WARM", 0);
    let (w, n) = std::env::var("LENGTH").map_or((50_000, 100_000), |t| {
        let (a, b) = t.split_once(',').expect("LENGTH=WARMUP,INSTRUCTIONS");
        (
            a.parse().expect("LENGTH: warm-up"),
            b.parse().expect("LENGTH: instructions"),
        )
    });
    let only = std::env::var("APPS").unwrap_or_default();
    let mut params = BTreeMap::new();
    if let Ok(t) = std::env::var("APP_PARAMS") {
        for kv in t.split(',') {
            let (k, v) = kv.split_once('=').expect("APP_PARAMS=k=v,...");
            params.insert(
                k.to_string(),
                v.parse::<u64>().expect("APP_PARAMS: integer"),
            );
        }
    }
    let over: toml::Value = std::env::var("OVER")
        .map_or(toml::Value::Table(Default::default()), |t| {
            toml::from_str(&t).expect("OVER: a TOML table")
        });
    let apps = ra::apps().expect("applications");
    for app in apps
        .iter()
        .filter(|a| a.copy_intensive() && (only.is_empty() || only.split(',').any(|x| x == a.name)))
    {
        let mut base = ra::Measure::default();
        let mut b = 0.0;
        for (label, mech) in ra::MECHANISMS {
            let cfg = ra::mechanism_platform("rowclone-system", &over, mech).expect("platform");
            let wl = app.workload(ra::ENDLESS, &params).expect("workload");
            let mut p = Platform::new(&cfg).expect("platform");
            p.set_functional_warming(warm);
            p.set_work_targets(w, vec![n]).expect("targets");
            let s = p.run(&wl).expect("run");
            let m = ra::window_measure(&s);
            let e = &s.dram.energy;
            if label == "baseline" {
                base = m;
                b = (e.background_nj + e.refresh_nj) / e.total_nj;
            }
            let sp = m.ipc / base.ipc;
            let bw = 1.0 - m.bytes_per_instruction / base.bytes_per_instruction;
            println!(
                "{:10} {:11} ipc {:.3} speedup {:.3} | bandwidth {:5.1}% energy {:5.1}% | b {:4.1}% b(1-1/s)+(1-b)bw {:5.1}% | reads {} writes {} read latency {:.0} ns conflicts {} | invalidated {} flushed {} inserted {}",
                app.name,
                label,
                m.ipc,
                sp,
                100.0 * bw,
                100.0 * (1.0 - m.energy_nj_per_instruction / base.energy_nj_per_instruction),
                100.0 * b,
                100.0 * (b * (1.0 - 1.0 / sp) + (1.0 - b) * bw),
                s.dram.reads,
                s.dram.writes,
                s.dram.read_latency.mean_ns,
                s.dram.row.conflicts,
                s.copy_lines.invalidated,
                s.copy_lines.flushed,
                s.copy_lines.inserted,
            );
        }
    }
}
