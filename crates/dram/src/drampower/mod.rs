//! Exchange with DRAMPower (tukl-msd/DRAMPower), so that movelab's energy can be set beside
//! DRAMPower's on the same commands: [`trace`] writes a movelab command log as a DRAMPower command
//! trace (and reads such traces back), [`memspec`] reads DRAMPower's JSON memory specifications
//! into movelab config overrides and writes a movelab device as one. Formats only: no DRAMPower
//! code is used or needed (docs/dram.md, "Energy against DRAMPower").
pub mod memspec;
pub mod trace;
