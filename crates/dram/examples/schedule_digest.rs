//! Prints one line per (config, overrides, traffic) case: the run's cycles and a digest of its
//! whole command log and JSON stats. Two builds that print the same lines issued the same
//! commands at the same cycles. Used to check that a speed-up of the controller changes no
//! schedule: `cargo run --release --example schedule_digest > before.txt`, change, run again, diff.
use movelab_dram::bulkgen::BulkGenSpec;
use movelab_dram::command::{CommandRecord, CommandSink};
use movelab_dram::config::{Config, BUILTIN_CONFIGS};
use movelab_dram::generator::GeneratorSpec;
use movelab_dram::request::TraceItem;
use movelab_dram::system::{simulate, RunOptions};

/// FNV-1a over the fields of every command.
struct Digest(u64, u64);

impl Digest {
    fn eat(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x100_0000_01b3);
        }
    }
}

impl CommandSink for Digest {
    fn record(&mut self, r: &CommandRecord) {
        self.1 += 1;
        self.eat(r.cycle);
        self.eat(r.kind.index() as u64);
        self.eat(
            u64::from(r.channel) << 48
                | u64::from(r.rank) << 32
                | u64::from(r.bank_group) << 16
                | u64::from(r.bank),
        );
        self.eat(u64::from(r.row) << 32 | u64::from(r.column));
        if let Some(d) = r.dst {
            self.eat(u64::from(d.bank_group) << 48 | u64::from(d.bank) << 32 | u64::from(d.row));
            self.eat(u64::from(d.column));
        }
    }
}

fn fnv(text: &str) -> u64 {
    let mut d = Digest(0xcbf2_9ce4_8422_2325, 0);
    for b in text.bytes() {
        d.eat(u64::from(b));
    }
    d.0
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
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
                c.with_overrides(over.parse::<toml::Table>().expect("toml").into(), "digest")
            }) {
                Ok(c) => c,
                Err(e) => {
                    println!("{preset} {oname}: config error {e}");
                    continue;
                }
            };
            let traffic: Vec<(&str, Vec<TraceItem>)> = vec![
                (
                    "random",
                    GeneratorSpec::random(n, 0.8, 7)
                        .build()
                        .expect("gen")
                        .collect(),
                ),
                (
                    "stream",
                    GeneratorSpec::stream(n, 0.6, 7)
                        .build()
                        .expect("gen")
                        .collect(),
                ),
                ("bulk+random", {
                    let bulk = BulkGenSpec::from_json_str(
                        r#"{"kind": "bulk", "op": "copy", "count": 40, "pages": 2, "interval": 50, "seed": 3}"#,
                        "digest",
                    )
                    .expect("bulk spec");
                    let ops: Vec<TraceItem> = bulk.build(&cfg).expect("bulkgen").collect();
                    let reqs: Vec<TraceItem> = GeneratorSpec::random(n / 4, 0.7, 9)
                        .build()
                        .expect("gen")
                        .collect();
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
                let mut d = Digest(0xcbf2_9ce4_8422_2325, 0);
                let r = simulate(
                    &cfg,
                    items.into_iter().map(Ok),
                    RunOptions {
                        command_log: Some(&mut d),
                        ..RunOptions::default()
                    },
                );
                match r {
                    Ok(s) => println!(
                        "{preset} {oname} {tname}: {} cycles, {} commands, log {:016x}, stats {:016x}",
                        s.cycles,
                        d.1,
                        d.0,
                        fnv(&serde_json::to_string(&s).expect("json"))
                    ),
                    Err(e) => println!("{preset} {oname} {tname}: error {e}"),
                }
            }
        }
    }
}
