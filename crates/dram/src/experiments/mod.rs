//! Experiments that reproduce the papers' DRAM-level results. Each runs the simulator on a
//! configuration and returns plain rows; the Python layer prints them beside the papers' values.
pub mod rowclone_latency;
