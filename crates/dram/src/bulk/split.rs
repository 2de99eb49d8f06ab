//! What every bulk mechanism's split shares: the [`Split`] it produces (in-DRAM jobs, channel
//! lines, bytes by mechanism), the configured [`BulkMech`], the row key lines are grouped by, the
//! reserved rows (zero row per subarray, temporary row per bank) and the channel-only split.
//! Below the mechanisms ([`crate::bulk::rowclone`], [`crate::bulk::multi_row_copy`]), which use it.
use crate::controller::Job;
use crate::request::{BulkKind, BulkOp};
use crate::spec::Organization;
use crate::stats::BulkBytes;

/// The reserved all-zero row of the subarray holding `row`: the subarray's last row.
pub fn zero_row(org: &Organization, row: u32) -> u32 {
    (row / org.subarray_rows) * org.subarray_rows + org.subarray_rows - 1
}

/// The reserved temporary row of a bank (used by intra-bank PSM): the second-to-last row, so it
/// never coincides with a zero row.
pub fn temp_row(org: &Organization) -> u32 {
    org.rows - 2
}

/// Which subarray `row` is in.
pub fn subarray(org: &Organization, row: u32) -> u32 {
    row / org.subarray_rows
}

/// The result of splitting one bulk operation.
#[derive(Debug, Default)]
pub struct Split {
    /// In-DRAM jobs, by channel.
    pub jobs: Vec<(u32, Job)>,
    /// Lines left to the channel: (source line address for a copy, destination line address).
    pub baseline_lines: Vec<(Option<u64>, u64)>,
    pub bytes: BulkBytes,
}

/// How a bulk operation is carried out (`controller.bulk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BulkMech {
    /// Every line over the channel.
    Baseline,
    /// RowClone FPM / PSM (MICRO 2013).
    RowClone,
    /// RowClone, and Multi-RowCopy for replication.
    MultiRowCopy,
}

impl BulkMech {
    /// The mechanism a `controller.bulk` value names (validated by the config).
    pub fn of(name: &str) -> BulkMech {
        match name {
            "rowclone" => BulkMech::RowClone,
            "multi-row-copy" => BulkMech::MultiRowCopy,
            _ => BulkMech::Baseline,
        }
    }
    /// Whether RowClone's split runs (RowClone, and Multi-RowCopy on top of it).
    pub fn in_dram(self) -> bool {
        self != BulkMech::Baseline
    }
}

/// Splits `op` into lines done over the channel only (the `baseline` mechanism, and RowClone's
/// leftovers).
pub fn baseline_lines(op: &BulkOp, line: u64) -> Vec<(Option<u64>, u64)> {
    let first_dst = op.dst / line * line;
    let n = (op.dst + op.bytes).div_ceil(line) - op.dst / line;
    (0..n)
        .map(|i| {
            let src = match op.kind {
                BulkKind::Copy { src } => Some(src / line * line + i * line),
                BulkKind::Init { .. } | BulkKind::Replicate { .. } => None,
            };
            (src, first_dst + i * line)
        })
        .collect()
}

/// A row: (channel, rank, bank group, bank, row).
pub(crate) type RowKey = (u32, u32, u32, u32, u32);
