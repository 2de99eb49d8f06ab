//! Prints one line per platform case: every built-in platform preset under every copy mechanism,
//! core kind and built-in workload, then every row of the two reproductions (`zhao-copy-engine`,
//! `rowclone-fork`). A case's line carries a digest of the DRAM command log it issued and of its
//! JSON statistics; a row's line a digest of its JSON. Two builds that print the same lines ran the
//! same simulations to the same results: used to show that a refactor of the platform moved nothing.
//! `cargo run --release -p movelab-platform --example platform_digest > before.txt`, change, run
//! again, diff. `--quick` leaves out the reproductions.
use movelab_dram::command::{CommandRecord, CommandSink};
use movelab_platform::config::builtin_platform_names;
use movelab_platform::experiments::{platform, rowclone_fork, zhao_copy_engine};
use movelab_platform::workload::builtin_workload_names;
use movelab_platform::{Platform, Workload};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// FNV-1a.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn eat(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x100_0000_01b3);
        }
    }
    fn text(text: &str) -> u64 {
        let mut d = Fnv::new();
        for b in text.bytes() {
            d.eat(u64::from(b));
        }
        d.0
    }
}

/// A command sink that digests every command into a shared cell.
struct LogDigest(Arc<Mutex<(Fnv, u64)>>);

impl CommandSink for LogDigest {
    fn record(&mut self, r: &CommandRecord) {
        let Ok(mut g) = self.0.lock() else { return };
        g.1 += 1;
        let d = &mut g.0;
        d.eat(r.cycle);
        d.eat(r.kind.index() as u64);
        d.eat(
            u64::from(r.channel) << 48
                | u64::from(r.rank) << 32
                | u64::from(r.bank_group) << 16
                | u64::from(r.bank),
        );
        d.eat(u64::from(r.row) << 32 | u64::from(r.column));
        if let Some(x) = r.dst {
            d.eat(u64::from(x.bank_group) << 48 | u64::from(x.bank) << 32 | u64::from(x.row));
            d.eat(u64::from(x.column));
        }
    }
}

/// Small parameters per workload, so that every case runs in well under a second.
fn params(workload: &str) -> BTreeMap<String, u64> {
    let kv: &[(&str, u64)] = match workload {
        "tcp-rx" => &[("packets", 60)],
        "forkbench" => &[("s_mb", 2), ("n_pages", 32)],
        "bulk-copy" => &[("pages", 24)],
        "bulk-zero" => &[("pages", 24)],
        _ => &[],
    };
    kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

const VARIANTS: &[(&str, &str)] = &[
    ("base", "copy = { mechanism = \"base\" }"),
    ("base-inorder", "core = { kind = \"in-order\" }\ncopy = { mechanism = \"base\" }"),
    ("ce-offdie-nlb", "copy = { mechanism = \"ce\", placement = \"off-die\", mode = \"SYNC_NLB\" }"),
    ("ce-offdie-wlb", "copy = { mechanism = \"ce\", placement = \"off-die\", mode = \"SYNC_WLB\" }"),
    ("ce-offdie-async", "copy = { mechanism = \"ce\", placement = \"off-die\", mode = \"ASYNC\" }"),
    ("ce-ondie-async", "copy = { mechanism = \"ce\", placement = \"on-die\", mode = \"ASYNC\", snoop_ack = \"after\" }"),
    ("ce-ondie-cache", "copy = { mechanism = \"ce\", placement = \"on-die\", mode = \"SYNC_WLB\", dest_to_cache = true }"),
    ("rowclone", "copy = { mechanism = \"rowclone\" }"),
    ("rowclone-zi", "copy = { mechanism = \"rowclone-zi\" }"),
    ("mc-dma", "copy = { mechanism = \"mc-dma\" }"),
];

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let none = toml::Value::Table(Default::default());
    for plat in builtin_platform_names() {
        for (variant, extra) in VARIANTS {
            let cfg = platform(plat, &none, extra).unwrap_or_else(|e| panic!("{e}"));
            for wname in builtin_workload_names() {
                let w = Workload::load(wname, &params(wname)).unwrap_or_else(|e| panic!("{e}"));
                let cell = Arc::new(Mutex::new((Fnv::new(), 0u64)));
                let mut p = Platform::new(&cfg).unwrap_or_else(|e| panic!("{e}"));
                p.mem_mut()
                    .set_command_log(Box::new(LogDigest(cell.clone())));
                let line = match p.run(&w) {
                    Ok(s) => {
                        let json = serde_json::to_string(&s).unwrap_or_default();
                        let (log, n) = cell.lock().map(|g| (g.0 .0, g.1)).unwrap_or((0, 0));
                        format!(
                            "cmds={n} log={log:016x} stats={:016x} time_ns={:.1} instr={}",
                            Fnv::text(&json),
                            s.time_ns,
                            s.instructions
                        )
                    }
                    Err(e) => format!("error: {e}"),
                };
                println!("run {plat} {variant} {wname} {line}");
            }
        }
    }
    if quick {
        return;
    }
    let zo = zhao_copy_engine::Options::default();
    let rows = zhao_copy_engine::run(&zo, &mut |_, _| {}).unwrap_or_else(|e| panic!("{e}"));
    for (i, r) in rows.iter().enumerate() {
        let json = serde_json::to_string(r).unwrap_or_default();
        println!(
            "zhao-copy-engine {i} {} {} {} {} {} {} {:016x} reduction={:.6}",
            r.figure,
            r.core,
            r.payload_bytes,
            r.mode,
            r.placement,
            r.variant,
            Fnv::text(&json),
            r.reduction
        );
    }
    let fo = rowclone_fork::Options::default();
    let rows = rowclone_fork::run(&fo, &mut |_, _| {}).unwrap_or_else(|e| panic!("{e}"));
    for (i, r) in rows.iter().enumerate() {
        let json = serde_json::to_string(r).unwrap_or_default();
        println!(
            "rowclone-fork {i} {} {} {} {} {:016x} speedup={:.6}",
            r.workload,
            r.s_mb,
            r.n_pages,
            r.mechanism,
            Fnv::text(&json),
            r.speedup
        );
    }
}
