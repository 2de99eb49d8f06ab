//! What a trace offers the memory system: line reads and writes, and bulk copy / init operations.
use serde::{Deserialize, Serialize};

/// Direction of a line request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    Read,
    Write,
}

/// A cache-line request at a physical address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub addr: u64,
    pub op: Op,
    /// The cycle at which the request is offered, or `None` for "the cycle after the previous
    /// item was accepted" (Ramulator's one-request-per-cycle frontend).
    pub arrival: Option<u64>,
}

/// What a bulk operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BulkKind {
    /// Copy `bytes` from `src` to the operation's `dst`.
    Copy { src: u64 },
    /// Set `bytes` at `dst` to `value` (zeroing when 0).
    Init { value: u8 },
    /// Copy every row of the region at `dst` into the other rows of its aligned block of
    /// `copies + 1` rows (`copies` of 1, 3, 7, 15, 31): replication by Multi-RowCopy (see
    /// `multi_row_copy`).
    Replicate { copies: u32 },
}

/// A bulk copy or initialisation, a first-class request at the memory controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkOp {
    pub kind: BulkKind,
    pub dst: u64,
    pub bytes: u64,
    pub arrival: Option<u64>,
}

/// One item of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TraceItem {
    Req(Request),
    Bulk(BulkOp),
}

impl TraceItem {
    pub fn arrival(&self) -> Option<u64> {
        match self {
            TraceItem::Req(r) => r.arrival,
            TraceItem::Bulk(b) => b.arrival,
        }
    }
}
