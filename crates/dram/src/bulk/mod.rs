//! Bulk operations (copy, initialisation, replication) as first-class requests: how each is split
//! among the mechanisms and carried out.
//!
//! - [`split`]: what the splits share (the [`split::Split`], [`split::BulkMech`], reserved rows);
//! - [`rowclone`]: RowClone FPM / PSM (MICRO 2013); [`multi_row_copy`]: Multi-RowCopy (DSN 2024);
//! - [`copy_reliability`]: whether and how reliably a part copies in DRAM (real-chip studies);
//! - [`baseline`]: the controller's copy engine, every line over the channel;
//! - [`ops`]: the bookkeeping of operations in flight at the memory system;
//! - [`gen`]: a seeded generator of bulk operations.
//!
//! [`split_by`] picks the mechanism's split; the mechanisms sit below it and do not use it.
pub mod baseline;
pub mod copy_chips;
pub mod copy_reliability;
pub mod gen;
pub mod multi_row_copy;
pub mod ops;
pub mod rowclone;
pub mod split;

use crate::device::ChannelDevices;
use crate::mapper::AddressMapper;
use crate::request::{BulkKind, BulkOp};
use crate::spec::Organization;
use crate::stats::BulkBytes;
use split::{baseline_lines, BulkMech, Split};

/// Splits `op` by the configured mechanism: RowClone's split when it is on, otherwise every line
/// over the channel; a replication by `multi_row_copy`.
pub fn split_by(
    mech: BulkMech,
    op: &BulkOp,
    op_index: u32,
    mapper: &dyn AddressMapper,
    org: &Organization,
    dev: &ChannelDevices,
) -> Split {
    if let BulkKind::Replicate { copies } = op.kind {
        return multi_row_copy::split(op, copies, op_index, mapper, org, dev, mech);
    }
    if mech.in_dram() {
        return rowclone::split(op, op_index, mapper, org, dev, mech);
    }
    let line = org.line_bytes();
    let lines = baseline_lines(op, line);
    Split {
        bytes: BulkBytes {
            baseline: lines.len() as u64 * line,
            ..Default::default()
        },
        jobs: Vec::new(),
        baseline_lines: lines,
    }
}
