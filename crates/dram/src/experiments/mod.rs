//! Experiments that reproduce the papers' DRAM-level results. Each runs the simulator on a
//! configuration and returns plain rows; the Python layer prints them beside the papers' values.
pub mod rowclone_latency;

/// Published figures the reproductions compare against (`presets/papers/*.toml`), by name.
pub const PAPER_DATA: &[(&str, &str)] = &[(
    "rowclone",
    include_str!("../../../../presets/papers/rowclone.toml"),
)];
