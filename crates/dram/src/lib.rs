//! movelab-dram: the command-level DRAM model every other movelab model ends in.
//!
//! What is here: DRAM standards, speed bins and parts as data ([`spec`], `presets/dram`), the
//! per-channel memory controller ([`controller`]) with its schedulers and address mappers, bulk copy
//! and initialisation as first-class requests executed by the channel or in DRAM (RowClone), the
//! IDD-based energy model, an independent timing checker that replays the command log, and trace
//! readers and generators. What is not: anything above the memory controller (cores, caches,
//! engines live in movelab-platform). Depends on no other movelab crate.
pub mod bulk_baseline;
pub mod bulk_ops;
pub mod bulkgen;
pub mod checker;
pub mod command;
pub mod config;
pub mod controller;
pub mod device;
pub mod digest;
pub mod energy;
pub mod error;
pub mod experiments;
pub mod generator;
pub mod interrupt;
pub mod job_queue;
pub mod mapper;
pub mod multi_row_copy;
pub mod port;
pub mod ready_scan;
pub mod request;
pub mod rowclone;
pub mod scheduler;
pub mod spec;
pub mod stats;
pub mod system;
pub mod trace;
pub mod units;
