//! movelab-dram: the command-level DRAM model every other movelab model ends in.
//!
//! What is here: DRAM standards, speed bins and parts as data ([`spec`], `presets/dram`), the
//! per-channel memory controller ([`controller`]) with its schedulers and address mappers, bulk copy
//! and initialisation as first-class requests executed by the channel or in DRAM (RowClone), the
//! IDD-based energy model, an independent timing checker that replays the command log, and trace
//! readers and generators. What is not: anything above the memory controller (cores, caches,
//! engines live in movelab-platform). Depends on no other movelab crate.
pub mod bulk;
pub mod checker;
pub mod command;
pub mod command_bus;
pub mod command_log;
pub mod config;
pub mod controller;
pub mod device;
pub mod digest;
pub mod drampower;
pub mod energy;
pub mod error;
pub mod experiments;
pub mod generator;
pub mod interrupt;
pub mod job_queue;
pub mod mapper;
pub mod port;
pub mod ready_scan;
pub mod refresh_mode;
pub mod request;
pub mod rfm;
pub mod scheduler;
pub mod spec;
pub mod stats;
pub mod system;
pub mod trace;
pub mod units;
pub mod wck;

// The bulk modules' old paths, so that code written against them compiles unchanged.

/// Old path of [`bulk::baseline`].
pub mod bulk_baseline {
    pub use crate::bulk::baseline::*;
}
/// Old path of [`bulk::ops`].
pub mod bulk_ops {
    pub use crate::bulk::ops::*;
}
/// Old path of [`bulk::gen`].
pub mod bulkgen {
    pub use crate::bulk::gen::*;
}
/// Old path of [`bulk::rowclone`], the split helpers it held ([`bulk::split`]) and [`bulk::split_by`].
pub mod rowclone {
    pub use crate::bulk::rowclone::*;
    pub use crate::bulk::split::{baseline_lines, subarray, temp_row, zero_row, Split};
    pub use crate::bulk::split_by;
}
/// Old path of [`bulk::multi_row_copy`] and [`bulk::split::BulkMech`].
pub mod multi_row_copy {
    pub use crate::bulk::multi_row_copy::*;
    pub use crate::bulk::split::BulkMech;
}
