//! Helpers shared by the integration tests.
use movelab_dram::command::CommandRecord;
use movelab_dram::config::Config;
use movelab_dram::request::TraceItem;
use movelab_dram::system::{simulate, RunOptions};

/// The command log and the JSON statistics of a run of `items`, on the fast path or (with
/// `reference`) the reference schedule that visits every cycle.
pub fn log_of(cfg: &Config, items: &[TraceItem], reference: bool) -> (Vec<CommandRecord>, String) {
    let mut log: Vec<CommandRecord> = Vec::new();
    let stats = simulate(
        cfg,
        items.iter().copied().map(Ok),
        RunOptions {
            command_log: Some(&mut log),
            reference_schedule: reference,
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    (log, serde_json::to_string(&stats).unwrap())
}
