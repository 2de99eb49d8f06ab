//! Bookkeeping of bulk operations in flight at the memory system: each operation is split by the
//! configured mechanism into RowClone jobs (handed to the controllers) and channel lines (moved by
//! the baseline engine), and completes when all its parts have. Shared by the trace-driven
//! `system::simulate` and the step-driven `port::MemoryPort`, below both.
use crate::bulk::baseline::BaselineOp;
use crate::bulk::copy_reliability::CopyModel;
use crate::bulk::split::BulkMech;
use crate::bulk::split_by;
use crate::controller::{Controller, Tag};
use crate::mapper::AddressMapper;
use crate::request::{BulkKind, BulkOp, Op};
use crate::spec::Organization;
use crate::stats::{BulkBytes, Histogram};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Bulk-operation totals of a run.
#[derive(Default)]
pub struct BulkTotals {
    pub copies: u64,
    pub inits: u64,
    pub bytes: BulkBytes,
    pub latency: Histogram,
    /// In-DRAM copy attempts repeated after a failure.
    pub copy_retries: u64,
}

struct OpState {
    /// The submitter's id, reported on completion.
    id: u32,
    parts: u32,
    done: u64,
    arrival: u64,
}

/// Bulk operations in flight and their totals.
#[derive(Default)]
pub struct BulkOps {
    ops: BTreeMap<u32, OpState>,
    baseline: Vec<BaselineOp>,
    /// Work of bulk operations finishing in the future: (cycle, op, 0 read / 1 write / 2 job /
    /// 3 channel part accepted).
    events: BinaryHeap<Reverse<(u64, u32, u8)>>,
    next_op: u32,
    pub totals: BulkTotals,
    /// The last completion.
    pub end: u64,
    /// The part's in-DRAM copy behaviour (support, failures and retries).
    pub copy: CopyModel,
}

impl BulkOps {
    /// No operation in flight, with the part's in-DRAM copy behaviour `copy`.
    pub fn with_copy(copy: CopyModel) -> BulkOps {
        BulkOps {
            copy,
            ..Default::default()
        }
    }

    /// Splits `b` (by `mech`: RowClone, Multi-RowCopy or all over the channel), hands its jobs to the
    /// controllers and keeps its channel lines. Returns `Some(now)` when nothing was left to do
    /// (the operation completed at once); otherwise its completion is reported by
    /// [`BulkOps::settle`] with `id`.
    #[allow(clippy::too_many_arguments)]
    pub fn submit(
        &mut self,
        b: &BulkOp,
        id: u32,
        now: u64,
        mech: BulkMech,
        mapper: &dyn AddressMapper,
        org: &Organization,
        chans: &mut [Controller],
        seq: &mut u64,
    ) -> Option<u64> {
        let op = self.next_op;
        self.next_op = self.next_op.wrapping_add(1);
        match b.kind {
            BulkKind::Copy { .. } | BulkKind::Replicate { .. } => self.totals.copies += 1,
            BulkKind::Init { .. } => self.totals.inits += 1,
        }
        let mut split = split_by(self.copy.mech(mech), b, op, mapper, org, &chans[0].dev);
        self.totals.copy_retries += self.copy.apply(&mut split, op);
        self.totals.bytes.add(&split.bytes);
        let mut parts = split.jobs.len() as u32;
        for (ch, job) in split.jobs {
            *seq += 1;
            chans[ch as usize].submit_job(*seq, job);
        }
        if !split.baseline_lines.is_empty() {
            parts += 1;
            self.baseline
                .push(BaselineOp::new(op, split.baseline_lines));
        }
        if parts == 0 {
            self.totals.latency.add(0);
            return Some(now);
        }
        self.ops.insert(
            op,
            OpState {
                id,
                parts,
                done: now,
                arrival: now,
            },
        );
        None
    }

    /// Lets the baseline engine offer lines at `now`; true if it queued any. With
    /// `done_at_acceptance` (`controller.bulk_write_done = "accepted"`), a channel part whose
    /// last write is now queued is done at `now` (reported by the next [`BulkOps::settle`]).
    #[allow(clippy::too_many_arguments)]
    pub fn pump(
        &mut self,
        now: u64,
        buffer_lines: usize,
        done_at_acceptance: bool,
        mapper: &dyn AddressMapper,
        chans: &mut [Controller],
        seq: &mut u64,
    ) -> bool {
        let mut queued = false;
        for b in self.baseline.iter_mut() {
            queued |= b.pump(now, buffer_lines, mapper, chans, seq);
            if done_at_acceptance && !b.reported && b.all_accepted() {
                b.reported = true;
                self.events.push(Reverse((now, b.op, 3)));
            }
        }
        queued
    }

    /// Records a controller's finished work that belongs to a bulk operation (other tags are
    /// ignored).
    pub fn on_done(&mut self, time: u64, tag: Tag, op: Op) {
        let (opi, code) = match tag {
            Tag::BulkJob { op: o } => (o, 2),
            Tag::BulkLine { op: o } => (o, if op == Op::Read { 0 } else { 1 }),
            Tag::Trace | Tag::Port { .. } => return,
        };
        self.events.push(Reverse((time, opi, code)));
    }

    /// Processes the work finished by `now`; returns the operations that completed, as
    /// (submitter's id, completion cycle), in completion order.
    pub fn settle(&mut self, now: u64) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        while let Some(&Reverse((t, opi, code))) = self.events.peek() {
            if t > now {
                break;
            }
            self.events.pop();
            let mut part_done = None;
            if code == 2 {
                part_done = Some(t);
            } else if let Some(pos) = self.baseline.iter().position(|b| b.op == opi) {
                if code == 3 {
                    // Accepted: the writes still queued no longer belong to the operation.
                    part_done = Some(t);
                    self.baseline.remove(pos);
                } else {
                    let b = &mut self.baseline[pos];
                    b.on_done(if code == 0 { Op::Read } else { Op::Write }, t);
                    if b.finished() && !b.reported {
                        part_done = Some(b.last_done.max(t));
                        self.baseline.remove(pos);
                    }
                }
            }
            let Some(t) = part_done else { continue };
            let Some(s) = self.ops.get_mut(&opi) else {
                continue;
            };
            s.parts -= 1;
            s.done = s.done.max(t);
            if s.parts == 0 {
                let (id, done, arrival) = (s.id, s.done, s.arrival);
                self.ops.remove(&opi);
                self.totals.latency.add(done - arrival);
                self.end = self.end.max(done);
                out.push((id, done));
            }
        }
        out
    }

    /// The cycle of the next pending part completion.
    pub fn next_event(&self) -> Option<u64> {
        self.events.peek().map(|Reverse((t, _, _))| *t)
    }

    /// No baseline lines or part completions pending (RowClone jobs are the controllers').
    pub fn quiet(&self) -> bool {
        self.baseline.is_empty() && self.events.is_empty()
    }

    /// Operations submitted and not completed.
    pub fn in_flight(&self) -> usize {
        self.ops.len()
    }
}
