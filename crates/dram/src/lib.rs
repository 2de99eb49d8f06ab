//! movelab-dram: the command-level DRAM model every other movelab model ends in.
//!
//! Depends on no other movelab crate.
