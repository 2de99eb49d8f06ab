//! Copies and initialisation done by the memory controller: `rowclone` (in DRAM: FPM within a
//! subarray, PSM between banks, through movelab-dram's RowClone split), `rowclone-zi` (RowClone
//! whose zeroing also inserts the zeroed lines into the cache, RowClone section 7.3) and `mc-dma`
//! (the controller moves every line over the channel, without caching, section 7.5).
//!
//! The coherence actions are those of RowClone section 4.2.2: before the operation, dirty source
//! lines are written back and destination lines are invalidated in every cache; the destination
//! is blocked (loads and stores to it wait) until the controller acknowledges the operation; the
//! `memcpy`/`meminit` instruction retires on that acknowledgment. (The paper's refinement that
//! copies a dirty source line inside the cache instead of flushing it is not modelled: every
//! dirty source line is flushed first.)
use crate::core::{Access, OffloadOp, Token};
use crate::kernel::Ps;
use crate::memory_system::{Ev, Hier};
use crate::pending_copy_table::PendingCopyTable;
use movelab_dram::request::{BulkKind, BulkOp};
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
struct OpState {
    op: OffloadOp,
    seq: u64,
    issued_at: Ps,
    flushes_left: u32,
    at_mc: bool,
    started: bool,
}

#[derive(Debug, Clone)]
pub struct InMemory {
    /// Operations not yet acknowledged, by offload id.
    states: BTreeMap<u32, OpState>,
    /// Destinations blocked until their operation is acknowledged.
    pub blocked: PendingCopyTable,
    pub ops: u64,
    pub op_time: Ps,
    pub last_done: Ps,
    pub flushed_lines: u64,
    pub invalidated_lines: u64,
    pub inserted_lines: u64,
}

impl Default for InMemory {
    fn default() -> Self {
        InMemory {
            states: BTreeMap::new(),
            blocked: PendingCopyTable::new(1 << 20),
            ops: 0,
            op_time: 0,
            last_done: 0,
            flushed_lines: 0,
            invalidated_lines: 0,
            inserted_lines: 0,
        }
    }
}

impl InMemory {
    pub fn idle(&self) -> bool {
        self.states.is_empty()
    }
}

impl Hier {
    /// The core issued `memcpy`/`meminit` for offload `op`.
    pub(crate) fn inmem_offload(&mut self, now: Ps, opi: u32, o: OffloadOp, seq: u64) -> Access {
        let mut flushes = 0;
        if let Some(src) = o.src {
            for line in src / 64..=(src + o.bytes - 1) / 64 {
                if self.flush_all(line) {
                    flushes += 1;
                    self.inmem.flushed_lines += 1;
                    let v = crate::cache::Victim {
                        line,
                        dirty: true,
                        by_copy: true,
                    };
                    self.writeback(now, v, Some(opi));
                }
            }
        }
        for line in o.dst / 64..=(o.dst + o.bytes - 1) / 64 {
            if self.cached_anywhere(line) {
                self.inmem.invalidated_lines += 1;
                // Dirty or not, the operation overwrites it: nothing to write back.
                let _ = self.invalidate_all(line);
            }
        }
        self.inmem.blocked.insert(
            opi,
            o.src.map(|s| (s, s + o.bytes)),
            (o.dst, o.dst + o.bytes),
        );
        self.inmem.states.insert(
            opi,
            OpState {
                op: o,
                seq,
                issued_at: now,
                flushes_left: flushes,
                at_mc: false,
                started: false,
            },
        );
        let ch = self.channel_of(o.dst);
        let at = self.ic.request_arrives(now, ch);
        self.events.push(at, Ev::InMemoryAtMc(opi));
        Access::Pending
    }

    pub(crate) fn inmem_at_mc(&mut self, now: Ps, opi: u32) {
        if let Some(s) = self.inmem.states.get_mut(&opi) {
            s.at_mc = true;
        }
        self.inmem_try_start(now, opi);
    }

    pub(crate) fn inmem_flush_done(&mut self, t: Ps, opi: u32) {
        if let Some(s) = self.inmem.states.get_mut(&opi) {
            s.flushes_left = s.flushes_left.saturating_sub(1);
        }
        self.inmem_try_start(t, opi);
    }

    fn inmem_try_start(&mut self, now: Ps, opi: u32) {
        let Some(s) = self.inmem.states.get_mut(&opi) else {
            return;
        };
        if s.started || !s.at_mc || s.flushes_left > 0 {
            return;
        }
        s.started = true;
        let o = s.op;
        let kind = match o.src {
            Some(src) => BulkKind::Copy { src },
            None => BulkKind::Init { value: o.value },
        };
        let cycle = now.div_ceil(self.tck);
        let bulk = BulkOp {
            kind,
            dst: o.dst,
            bytes: o.bytes,
            arrival: None,
        };
        match self.mem.bulk(bulk, opi, cycle) {
            Ok(()) => self.mem_wake = self.mem_wake.min(cycle),
            Err(e) => {
                self.fatal.get_or_insert(format!("offload {opi}: {e}"));
            }
        }
    }

    /// The memory controller finished operation `opi` at `t`.
    pub(crate) fn inmem_bulk_done(&mut self, t: Ps, opi: u32) {
        let Some(s) = self.inmem.states.get(&opi) else {
            return;
        };
        let o = s.op;
        if self.cfg.copy.mechanism == "rowclone-zi" && o.src.is_none() && o.value == 0 {
            // RowClone-ZI: clean zero lines go into the cache.
            for line in o.dst / 64..=(o.dst + o.bytes - 1) / 64 {
                self.insert_l2(t, line, false, false);
                self.inmem.inserted_lines += 1;
            }
        }
        let at = t + crate::kernel::ns(self.cfg.interconnect.response_ns);
        self.events.push(at, Ev::InMemoryAck(opi));
    }

    pub(crate) fn inmem_ack(&mut self, now: Ps, opi: u32) {
        let Some(s) = self.inmem.states.remove(&opi) else {
            return;
        };
        self.inmem.blocked.remove(opi);
        self.inmem.ops += 1;
        self.inmem.op_time += now.saturating_sub(s.issued_at);
        self.inmem.last_done = self.inmem.last_done.max(now);
        self.wakeups.push((Token::Rob(s.seq), now));
        self.poke = true;
    }
}
