//! `controller.keep_activated_rows` (Ramulator 2's active buffer): a row opened for a request
//! stays open until that request's column command issues. Without it, a switch to write drain can
//! precharge a row no command used; with it, no ACTIVATE is wasted that way.
use movelab_dram::command::{CommandKind, CommandRecord};
use movelab_dram::config::Config;
use movelab_dram::generator::GeneratorSpec;
use movelab_dram::system::{simulate, RunOptions};
use std::collections::HashMap;

/// Rows closed by a PRECHARGE with no column command since their ACTIVATE (refresh excluded:
/// PREA closes whatever is open).
fn wasted_activates(keep: bool) -> (u64, u64) {
    let mut cfg = Config::preset("ddr3-1600k-bench").unwrap();
    cfg.controller.read_queue = 8;
    cfg.controller.write_queue = 8;
    cfg.controller.keep_activated_rows = keep;
    let mut log: Vec<CommandRecord> = Vec::new();
    let stats = simulate(
        &cfg,
        GeneratorSpec::random(20_000, 0.5, 5)
            .build()
            .unwrap()
            .map(Ok),
        RunOptions {
            command_log: Some(&mut log),
            ..RunOptions::default()
        },
    )
    .unwrap();
    assert_eq!(stats.reads + stats.writes, 20_000);
    let mut used: HashMap<(u32, u32, u32), bool> = HashMap::new();
    let mut wasted = 0;
    for r in &log {
        let bank = (r.rank, r.bank_group, r.bank);
        match r.kind {
            CommandKind::Act => {
                used.insert(bank, false);
            }
            CommandKind::Rd | CommandKind::Wr | CommandKind::Rda | CommandKind::Wra => {
                used.insert(bank, true);
            }
            CommandKind::Pre => wasted += u64::from(used.remove(&bank) == Some(false)),
            CommandKind::Prea | CommandKind::Ref => used.retain(|b, _| b.0 != r.rank),
            _ => {}
        }
    }
    (wasted, stats.cycles)
}

#[test]
fn activated_rows_are_served_before_they_close() {
    let (wasted_off, cycles_off) = wasted_activates(false);
    let (wasted_on, cycles_on) = wasted_activates(true);
    assert!(
        wasted_off > 100,
        "expected write-drain switches to waste ACTs: {wasted_off}"
    );
    assert_eq!(wasted_on, 0);
    assert!(cycles_on < cycles_off, "{cycles_on} vs {cycles_off}");
}
