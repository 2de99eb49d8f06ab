//! Copies and initialisation done by the memory controller: `rowclone` (in DRAM: FPM within a
//! subarray, PSM between banks, through movelab-dram's RowClone split), `rowclone-zi` (RowClone
//! whose zeroing also inserts the zeroed lines into the cache, RowClone section 7.3) and `mc-dma`
//! (the controller moves every line over the channel, without caching, section 7.5).
//!
//! The coherence actions are those of RowClone section 4.2.2: destination lines are invalidated in
//! every cache; a source line dirty in a core's private caches is copied inside them to its
//! destination line (the paper's proposal, `copy.dirty_source = "copy-in-cache"`, for whole lines
//! whose source and destination share their offset), or written back first with the operation
//! waiting for the write-backs (`"flush"`, and always for a dirty line only the last level holds
//! or a partial or misaligned line); the source and destination are blocked (loads and stores to
//! them wait) until the controller acknowledges the operation; the `memcpy`/`meminit`
//! instruction retires on that acknowledgment. A destination line copied in the cache keeps its
//! value when the in-memory operation ends: the controller holds requests to the destination
//! (its write-back included) until then, so memory's stale copy of it is overwritten later.
use crate::agents::{Agent, AgentReport};
use crate::config::platform::PlatformConfig;
use crate::iface::{Access, OffloadOp, Token};
use crate::memory::cache::Victim;
use crate::memory::memory_system::{AgentId, MemorySystem, Response};
use crate::sim::{ns, Ps};
use crate::stats::CopyLines;
use movelab_dram::request::{BulkKind, BulkOp};
use std::collections::BTreeMap;

/// The request reaches the memory controller (id: the operation).
const AT_MC: u16 = 0;
/// The acknowledgment reaches the core.
const ACK: u16 = 1;

#[derive(Debug, Clone)]
struct OpState {
    op: OffloadOp,
    core: usize,
    seq: u64,
    issued_at: Ps,
    flushes_left: u32,
    at_mc: bool,
    started: bool,
    /// Destination lines that received their value by an in-cache copy.
    in_cache: Vec<u64>,
}

#[derive(Debug, Clone)]
pub struct InMemory {
    id: AgentId,
    /// RowClone-ZI: zeroed lines go into the cache.
    zero_insert: bool,
    /// A dirty source line is copied inside its cache (`copy.dirty_source`).
    copy_in_cache: bool,
    response: Ps,
    /// Operations not yet acknowledged, by offload id.
    states: BTreeMap<u32, OpState>,
    /// Destinations blocked until their operation is acknowledged: a guard of the memory system.
    blocked: usize,
    ops: u64,
    op_time: Ps,
    last_done: Ps,
    flushed_lines: u64,
    invalidated_lines: u64,
    inserted_lines: u64,
    copied_in_cache: u64,
}

impl InMemory {
    pub fn new(id: AgentId, cfg: &PlatformConfig, sys: &mut MemorySystem) -> InMemory {
        InMemory {
            id,
            zero_insert: cfg.copy.mechanism == "rowclone-zi",
            copy_in_cache: cfg.copy.copies_dirty_source_in_cache(),
            response: ns(cfg.interconnect.response_ns),
            states: BTreeMap::new(),
            blocked: sys.add_guard(1 << 20),
            ops: 0,
            op_time: 0,
            last_done: 0,
            flushed_lines: 0,
            invalidated_lines: 0,
            inserted_lines: 0,
            copied_in_cache: 0,
        }
    }

    fn at_mc(&mut self, sys: &mut MemorySystem, now: Ps, opi: u32) {
        if let Some(s) = self.states.get_mut(&opi) {
            s.at_mc = true;
        }
        self.try_start(sys, now, opi);
    }

    fn flush_done(&mut self, sys: &mut MemorySystem, t: Ps, opi: u32) {
        if let Some(s) = self.states.get_mut(&opi) {
            s.flushes_left = s.flushes_left.saturating_sub(1);
        }
        self.try_start(sys, t, opi);
    }

    fn try_start(&mut self, sys: &mut MemorySystem, now: Ps, opi: u32) {
        let Some(s) = self.states.get_mut(&opi) else {
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
        let cycle = now.div_ceil(sys.tck);
        let bulk = BulkOp {
            kind,
            dst: o.dst,
            bytes: o.bytes,
            arrival: None,
        };
        if let Err(e) = sys.bulk(self.id, bulk, opi, cycle) {
            sys.fatal.get_or_insert(format!("offload {opi}: {e}"));
        }
    }

    /// The memory controller finished operation `opi` at `t`.
    fn bulk_done(&mut self, sys: &mut MemorySystem, t: Ps, opi: u32) {
        let Some(s) = self.states.get(&opi) else {
            return;
        };
        let o = s.op;
        // The destination's lines now hold the source's (or the fill's) value in memory.
        let aligned = o.src.is_none_or(|src| src % 64 == o.dst % 64);
        for line in o.dst / 64..=(o.dst + o.bytes - 1) / 64 {
            let src = o
                .src
                .filter(|_| aligned)
                .map(|src| (src + line * 64).saturating_sub(o.dst) / 64);
            if let Some(src) = src.filter(|_| s.in_cache.contains(&line)) {
                // Its cached copy holds the value; memory's is overwritten by its write-back.
                sys.in_cache_copy_done(line, src);
                continue;
            }
            sys.in_memory_done(line, src, o.value);
        }
        if self.zero_insert && o.src.is_none() && o.value == 0 {
            // RowClone-ZI: clean zero lines go into the cache.
            for line in o.dst / 64..=(o.dst + o.bytes - 1) / 64 {
                sys.insert_clean_l2(t, s.core, line);
                self.inserted_lines += 1;
            }
        }
        sys.schedule(t + self.response, self.id, ACK, opi);
    }

    fn ack(&mut self, sys: &mut MemorySystem, now: Ps, opi: u32) {
        let Some(s) = self.states.remove(&opi) else {
            return;
        };
        sys.guards[self.blocked].remove(opi);
        self.ops += 1;
        self.op_time += now.saturating_sub(s.issued_at);
        self.last_done = self.last_done.max(now);
        sys.wake(s.core, Token::Rob(s.seq), now);
        sys.poke_all();
    }
}

impl Agent for InMemory {
    fn name(&self) -> &'static str {
        "in-memory"
    }

    /// The core issued `memcpy`/`meminit` for offload `opi`.
    fn offload(
        &mut self,
        sys: &mut MemorySystem,
        now: Ps,
        core: usize,
        opi: u32,
        o: OffloadOp,
        seq: u64,
    ) -> Access {
        let mut flushes = 0;
        // Dirty source lines copied in their cache: (core, source line, destination line).
        let mut in_cache = Vec::new();
        if let Some(src) = o.src {
            // Whole lines whose source and destination share their offset can be copied in a
            // cache line for line.
            let whole = src % 64 == o.dst % 64;
            let (first, end) = (o.dst.div_ceil(64), (o.dst + o.bytes) / 64);
            for line in src / 64..=(src + o.bytes - 1) / 64 {
                let dst = (line * 64 + o.dst).wrapping_sub(src) / 64;
                if self.copy_in_cache
                    && whole
                    && (first..end).contains(&dst)
                    && !sys.stale_copy_sources
                {
                    if let Some(c) = sys.dirty_private_holder(line) {
                        in_cache.push((c, line, dst));
                        continue;
                    }
                }
                if !sys.stale_copy_sources && sys.flush_all(line) {
                    flushes += 1;
                    self.flushed_lines += 1;
                    let v = Victim {
                        line,
                        dirty: true,
                        by_copy: true,
                    };
                    sys.writeback(now, v, Some((self.id, opi)));
                }
            }
        }
        for line in o.dst / 64..=(o.dst + o.bytes - 1) / 64 {
            if sys.cached_anywhere(line) {
                self.invalidated_lines += 1;
            }
            // Dirty or not, the operation overwrites it: nothing to write back.
            sys.agent_write_line(line);
        }
        for &(c, src, dst) in &in_cache {
            sys.copy_in_cache(now, c, src, dst);
        }
        self.copied_in_cache += in_cache.len() as u64;
        sys.guards[self.blocked].insert(
            opi,
            o.src.map(|s| (s, s + o.bytes)),
            (o.dst, o.dst + o.bytes),
        );
        self.states.insert(
            opi,
            OpState {
                op: o,
                core,
                seq,
                issued_at: now,
                flushes_left: flushes,
                at_mc: false,
                started: false,
                in_cache: in_cache.iter().map(|&(_, _, d)| d).collect(),
            },
        );
        let ch = sys.channel_of(o.dst);
        let at = sys.ic().request_arrives(now, ch);
        sys.schedule(at, self.id, AT_MC, opi);
        Access::Pending
    }

    fn event(&mut self, sys: &mut MemorySystem, now: Ps, kind: u16, id: u32) {
        match kind {
            AT_MC => self.at_mc(sys, now, id),
            _ => self.ack(sys, now, id),
        }
    }

    fn response(&mut self, sys: &mut MemorySystem, now: Ps, r: Response) {
        match r {
            Response::Flushed { tag } => self.flush_done(sys, now, tag),
            Response::BulkDone { id } => self.bulk_done(sys, now, id),
            Response::ReadDone { .. } | Response::WriteAccepted { .. } => {}
        }
    }

    fn idle(&self) -> bool {
        self.states.is_empty()
    }

    fn report(&self) -> AgentReport {
        AgentReport {
            ops: self.ops,
            op_time: self.op_time,
            last_done: self.last_done,
            lines: CopyLines {
                flushed: self.flushed_lines,
                invalidated: self.invalidated_lines,
                inserted: self.inserted_lines,
                copied_in_cache: self.copied_in_cache,
                ..Default::default()
            },
            device: None,
            small_cores: None,
        }
    }
}
