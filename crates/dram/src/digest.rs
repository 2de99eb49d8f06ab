//! Digests for golden files: FNV-1a over numbers and text, a command sink that folds a whole DRAM
//! command log into one digest, and the schedule lines of every config preset. Two builds whose
//! lines are equal issued the same commands at the same cycles with the same statistics: a
//! refactor proves it changed no schedule by leaving them equal (`tests/golden.rs`).
use crate::bulk::gen::BulkGenSpec;
use crate::command::{CommandRecord, CommandSink};
use crate::config::{Config, BUILTIN_CONFIGS};
use crate::generator::GeneratorSpec;
use crate::request::TraceItem;
use crate::system::{simulate, RunOptions};
use std::sync::{Arc, Mutex};

/// FNV-1a (64 bit).
#[derive(Clone, Copy, Debug)]
pub struct Fnv(pub u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn new() -> Fnv {
        Fnv::default()
    }

    /// Folds in the eight little-endian bytes of `v`.
    pub fn eat(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x100_0000_01b3);
        }
    }

    /// The digest of `text`, one byte per step widened to a word.
    pub fn text(text: &str) -> u64 {
        let mut d = Fnv::new();
        for b in text.bytes() {
            d.eat(u64::from(b));
        }
        d.0
    }
}

/// A command sink that folds every command into a shared digest and counts them.
pub struct CommandLogDigest(pub Arc<Mutex<(Fnv, u64)>>);

impl CommandLogDigest {
    /// A sink and the cell it writes to.
    pub fn new() -> (CommandLogDigest, Arc<Mutex<(Fnv, u64)>>) {
        let cell = Arc::new(Mutex::new((Fnv::new(), 0u64)));
        (CommandLogDigest(cell.clone()), cell)
    }
}

impl CommandSink for CommandLogDigest {
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

/// One line per (config preset, controller variant, traffic) case with `n` requests: cycles, the
/// command log's length and digest, and the statistics' digest.
pub fn schedule_lines(n: u64) -> Vec<String> {
    let mut out = Vec::new();
    let overrides = [
        ("default", ""),
        (
            "fcfs-closed",
            "[controller]\nscheduler = \"fcfs\"\nrow_policy = \"closed\"\n",
        ),
        ("closed", "[controller]\nrow_policy = \"closed\"\n"),
        (
            "small-queues",
            "[controller]\nread_queue = 6\nwrite_queue = 5\n",
        ),
        ("no-refresh", "[controller]\nrefresh = \"none\"\n"),
        ("rowclone", "[controller]\nbulk = \"rowclone\"\n"),
    ];
    for (preset, _) in BUILTIN_CONFIGS {
        for (oname, over) in overrides {
            let cfg = match Config::preset(preset).and_then(|c| {
                c.with_overrides(
                    over.parse::<toml::Table>().unwrap_or_default().into(),
                    "digest",
                )
            }) {
                Ok(c) => c,
                Err(e) => {
                    out.push(format!("{preset} {oname}: config error {e}"));
                    continue;
                }
            };
            let traffic: Vec<(&str, Vec<TraceItem>)> = vec![
                (
                    "random",
                    GeneratorSpec::random(n, 0.8, 7)
                        .build()
                        .map(|g| g.collect())
                        .unwrap_or_default(),
                ),
                (
                    "stream",
                    GeneratorSpec::stream(n, 0.6, 7)
                        .build()
                        .map(|g| g.collect())
                        .unwrap_or_default(),
                ),
                ("bulk+random", {
                    let ops: Vec<TraceItem> = BulkGenSpec::from_json_str(
                        r#"{"kind": "bulk", "op": "copy", "count": 40, "pages": 2, "interval": 50, "seed": 3}"#,
                        "digest",
                    )
                    .and_then(|bulk| bulk.build(&cfg).map(|b| b.collect()))
                    .unwrap_or_default();
                    let reqs: Vec<TraceItem> = GeneratorSpec::random(n / 4, 0.7, 9)
                        .build()
                        .map(|g| g.collect())
                        .unwrap_or_default();
                    let mut mixed = Vec::new();
                    let step = (reqs.len() / ops.len().max(1)).max(1);
                    let mut ops = ops.into_iter();
                    for (i, r) in reqs.into_iter().enumerate() {
                        if i % step == 0 {
                            if let Some(o) = ops.next() {
                                mixed.push(o);
                            }
                        }
                        mixed.push(r);
                    }
                    mixed
                }),
            ];
            for (tname, items) in traffic {
                let (mut d, cell) = CommandLogDigest::new();
                let r = simulate(
                    &cfg,
                    items.into_iter().map(Ok),
                    RunOptions {
                        command_log: Some(&mut d),
                        ..RunOptions::default()
                    },
                );
                let (log, count) = cell.lock().map(|g| (g.0 .0, g.1)).unwrap_or((0, 0));
                out.push(match r {
                    Ok(s) => format!(
                        "{preset} {oname} {tname}: {} cycles, {count} commands, log {log:016x}, stats {:016x}",
                        s.cycles,
                        Fnv::text(&serde_json::to_string(&s).unwrap_or_default())
                    ),
                    Err(e) => format!("{preset} {oname} {tname}: error {e}"),
                });
            }
        }
    }
    out
}
