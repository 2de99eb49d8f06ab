//! The one report envelope every system's run returns: which system ran, on which configuration
//! (a built-in preset's name or a file), which workload, the simulated time, and the system's own
//! statistics as JSON. Front ends (the CLI, Python, sweeps) read every system's results through it.
use serde::Serialize;

/// A run's results.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    /// The system that ran ("platform", "cluster", "network-io").
    pub system: String,
    /// The configuration: a built-in preset's name or the file it came from.
    pub config: String,
    /// The workload: a name (built-in or the system's own) or a file.
    pub workload: String,
    /// Simulated time of the measured run, in nanoseconds.
    pub time_ns: f64,
    /// The system's statistics.
    pub stats: serde_json::Value,
}
