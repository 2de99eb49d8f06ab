//! The platform: a core above its caches, the interconnect, the memory controllers and DRAM of
//! movelab-dram (through its [`MemoryPort`]) and the copy mechanism, wired together and run by
//! the event kernel. [`Hier`] is everything below the core (the core sees it through the
//! [`Uncore`] trait); the copy engine and the in-memory mechanisms add their behaviour to it in
//! their own files. [`run`] runs a workload to the end and returns [`PlatformStats`].
use crate::cache::{Cache, Victim};
use crate::config::PlatformConfig;
use crate::copy_engine::CopyEngine;
use crate::core::{Access, CopyBy, Core, OffloadOp, Token, Uncore};
use crate::error::PlatformError;
use crate::in_memory_copy::InMemory;
use crate::interconnect::Interconnect;
use crate::kernel::{EventQueue, Ps};
use crate::pending_copy_table::PendingCopyTable;
use crate::stats::{CacheStats, CopyLines, MemoryTraffic, PlatformStats};
use crate::workload::{DstPolicy, Op, Workload};
use movelab_dram::interrupt;
use movelab_dram::mapper::Location;
use movelab_dram::port::MemoryPort;
use movelab_dram::request::Op as MemOp;
use std::collections::VecDeque;

/// Who a memory request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReqKind {
    /// A cache fill for the MSHR of this line.
    Fill {
        line: u64,
    },
    /// A dirty line written back; `flush_for` names the in-memory operation waiting for it.
    Writeback {
        flush_for: Option<u32>,
    },
    /// A copy engine's read (of command `cmd`) or write.
    EngineRead {
        cmd: u32,
    },
    EngineWrite {
        cmd: u32,
    },
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct MemReq {
    pub addr: u64,
    pub op: MemOp,
    pub engine: bool,
    pub kind: ReqKind,
    /// Traffic caused by a copy or initialisation.
    pub copy: bool,
    pub channel: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ev {
    /// A request reaches the memory controller.
    Offer(u32),
    /// A fill reaches the caches.
    Fill(u32),
    /// A copy command reaches the engine.
    EngineCmd(u32),
    /// A source line reaches the engine's stream buffer.
    EngineData(u32),
    /// A destination line written into the cache by an on-die engine.
    EngineCacheWrite(u32),
    /// A copy's final notification reaches the core (copy id).
    CopyDone(u32),
    /// An in-memory operation's request reaches the memory controller.
    InMemoryAtMc(u32),
    /// An in-memory operation's acknowledgment reaches the core.
    InMemoryAck(u32),
}

struct Mshr {
    waiters: Vec<Token>,
    write: bool,
    copy: bool,
}

/// Everything below the core.
pub struct Hier {
    pub(crate) cfg: PlatformConfig,
    pub(crate) cycle_ps: Ps,
    pub(crate) l1: Cache,
    pub(crate) l2: Cache,
    pub(crate) llc: Option<Cache>,
    pub(crate) ic: Interconnect,
    pub(crate) mem: MemoryPort,
    pub(crate) tck: Ps,
    /// The DRAM cycle at which the memory controllers next need to run.
    pub(crate) mem_wake: u64,
    pub(crate) events: EventQueue<Ev>,
    /// Outstanding misses by line (a handful: a linear scan beats hashing).
    mshrs: Vec<(u64, Mshr)>,
    pub(crate) reqs: Vec<Option<MemReq>>,
    free_reqs: Vec<u32>,
    /// Requests refused by a full queue, per (channel, direction), retried in order.
    pub(crate) mc_retry: Vec<VecDeque<u32>>,
    pub(crate) pct: PendingCopyTable,
    pub(crate) engine: CopyEngine,
    pub(crate) inmem: InMemory,
    /// Answers for the core: (token, time).
    pub(crate) wakeups: Vec<(Token, Ps)>,
    /// The core should retry what it could not start (an MSHR or a table entry freed).
    pub(crate) poke: bool,
    pub(crate) traffic: MemoryTraffic,
    /// Offered by the platform (line requests), to tell them from the controller's own bulk work.
    offered_lines: u64,
    /// An error raised inside an event handler, reported by the run loop.
    pub(crate) fatal: Option<String>,
}

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

impl Hier {
    fn new(cfg: &PlatformConfig) -> Result<Hier, PlatformError> {
        let dc = cfg.dram_config("platform")?;
        let mem = MemoryPort::new(&dc)?;
        let tck = mem.tck_ps();
        Ok(Hier {
            cfg: cfg.clone(),
            cycle_ps: (1_000_000.0 / cfg.core.clock_mhz as f64).round() as Ps,
            l1: Cache::new(&cfg.l1),
            l2: Cache::new(&cfg.l2),
            llc: cfg.llc.as_ref().map(Cache::new),
            ic: Interconnect::new(&cfg.interconnect),
            mem,
            tck,
            mem_wake: u64::MAX,
            events: EventQueue::new(),
            mshrs: Vec::new(),
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            mc_retry: Vec::new(),
            pct: PendingCopyTable::new(cfg.copy.pending_copy_entries as usize),
            engine: CopyEngine::new(cfg),
            inmem: InMemory::default(),
            wakeups: Vec::new(),
            poke: false,
            traffic: MemoryTraffic::default(),
            offered_lines: 0,
            fatal: None,
        })
    }

    /// The memory system (e.g. to attach a command log).
    pub fn mem_mut(&mut self) -> &mut MemoryPort {
        &mut self.mem
    }

    pub(crate) fn channel_of(&self, addr: u64) -> u32 {
        self.mem.locate(addr).channel
    }

    pub(crate) fn locate(&self, addr: u64) -> Location {
        self.mem.locate(addr)
    }

    /// Sends a memory request that reaches the memory controller at `at`.
    pub(crate) fn send(
        &mut self,
        at: Ps,
        addr: u64,
        op: MemOp,
        engine: bool,
        kind: ReqKind,
        copy: bool,
    ) -> u32 {
        let channel = self.channel_of(addr);
        let id = self.alloc_req(MemReq {
            addr: addr & !63,
            op,
            engine,
            kind,
            copy,
            channel,
        });
        self.events.push(at, Ev::Offer(id));
        id
    }

    /// Records a request without sending it.
    pub(crate) fn alloc_req(&mut self, r: MemReq) -> u32 {
        match self.free_reqs.pop() {
            Some(i) => {
                self.reqs[i as usize] = Some(r);
                i
            }
            None => {
                self.reqs.push(Some(r));
                (self.reqs.len() - 1) as u32
            }
        }
    }

    /// The request reaches the controller at `now`: queue it, or keep it for a retry.
    pub(crate) fn offer(&mut self, now: Ps, id: u32) {
        let Some(r) = self.reqs[id as usize] else {
            return;
        };
        if !r.engine && self.engine.holds_core_requests() {
            // SYNC_NLB: the memory queue is first come, first served and the engine put its whole
            // copy in it first, so a core request waits until the copy is through.
            self.engine.held.push(id);
            return;
        }
        let cycle = ceil_div(now, self.tck);
        let q = (r.channel as usize) * 2 + usize::from(r.op == MemOp::Write);
        if self.mc_retry.len() <= q {
            self.mc_retry.resize(q + 1, VecDeque::new());
        }
        // Keep arrival order: nothing overtakes a request already waiting for the same queue.
        if self.mc_retry[q].is_empty() && self.mem.offer(r.addr, r.op, r.engine, id, cycle) {
            self.offered_lines += 1;
            self.mem_wake = self.mem_wake.min(cycle);
            self.accepted(now, r);
        } else {
            self.mc_retry[q].push_back(id);
        }
    }

    /// A request entered a memory controller queue at `t`. Writes are posted: an engine's write
    /// counts as done once the controller, the point of coherence, holds it.
    fn accepted(&mut self, t: Ps, r: MemReq) {
        if let ReqKind::EngineWrite { cmd } = r.kind {
            self.engine_write_done(t, cmd);
        }
    }

    /// Writes a dirty victim back to memory.
    pub(crate) fn writeback(&mut self, now: Ps, v: Victim, flush_for: Option<u32>) {
        if !v.dirty {
            return;
        }
        let addr = v.line * 64;
        let ch = self.channel_of(addr);
        let at = self.ic.writeback_arrives(now, ch);
        self.send(
            at,
            addr,
            MemOp::Write,
            false,
            ReqKind::Writeback { flush_for },
            v.by_copy,
        );
    }

    /// Puts a line into L1 (from a fill or an L2 hit); a dirty L1 victim goes to L2, and a dirty
    /// L2 (or last-level) victim goes to memory.
    pub(crate) fn fill_l1(&mut self, now: Ps, line: u64, dirty: bool, copy: bool) {
        if let Some(v) = self.l1.insert(line, dirty, copy) {
            if v.dirty {
                self.insert_l2(now, v.line, true, v.by_copy);
            }
        }
    }

    pub(crate) fn insert_l2(&mut self, now: Ps, line: u64, dirty: bool, copy: bool) {
        if let Some(v) = self.l2.insert(line, dirty, copy) {
            match self.llc.as_mut() {
                Some(llc) if v.dirty => {
                    if let Some(v2) = llc.insert(v.line, true, v.by_copy) {
                        self.writeback(now, v2, None);
                    }
                }
                Some(_) => {}
                None => self.writeback(now, v, None),
            }
        }
    }

    /// Drops a line from every cache (the invalidate hook); returns it if it was dirty.
    pub(crate) fn invalidate_all(&mut self, line: u64) -> Option<Victim> {
        let a = self.l1.invalidate(line);
        let b = self.l2.invalidate(line);
        let c = self.llc.as_mut().and_then(|l| l.invalidate(line));
        [a, b, c].into_iter().flatten().find(|v| v.dirty)
    }

    /// Whether the line is dirty in any cache.
    pub(crate) fn dirty_anywhere(&self, line: u64) -> bool {
        self.l1.is_dirty(line)
            || self.l2.is_dirty(line)
            || self.llc.as_ref().is_some_and(|l| l.is_dirty(line))
    }

    pub(crate) fn cached_anywhere(&self, line: u64) -> bool {
        self.l1.contains(line)
            || self.l2.contains(line)
            || self.llc.as_ref().is_some_and(|l| l.contains(line))
    }

    /// Cleans the line everywhere (the flush hook); true if some copy was dirty.
    pub(crate) fn flush_all(&mut self, line: u64) -> bool {
        let a = self.l1.flush(line);
        let b = self.l2.flush(line);
        let c = self.llc.as_mut().is_some_and(|l| l.flush(line));
        a || b || c
    }

    fn access(&mut self, now: Ps, addr: u64, write: bool, copy: bool, token: Token) -> Access {
        if self.pct.conflicts(addr) || self.inmem.blocked.conflicts(addr) {
            return Access::Retry;
        }
        let line = addr / 64;
        let cyc = self.cycle_ps;
        // A miss that cannot get an MSHR is retried later and not counted now.
        let cached = self.l1.contains(line)
            || self.l2.contains(line)
            || self.llc.as_ref().is_some_and(|l| l.contains(line));
        if !cached
            && !self.mshrs.iter().any(|m| m.0 == line)
            && self.mshrs.len() >= self.cfg.core.mshrs as usize
        {
            return Access::Retry;
        }
        if self.l1.access(line, write, copy) {
            return Access::At(now + self.l1.hit_cycles * cyc);
        }
        if self.l2.access(line, false, copy) {
            self.fill_l1(now, line, write, copy);
            return Access::At(now + self.l2.hit_cycles * cyc);
        }
        let mut lat = self.l2.hit_cycles;
        if let Some(llc) = self.llc.as_mut() {
            lat += llc.hit_cycles;
            if llc.access(line, false, copy) {
                self.insert_l2(now, line, false, copy);
                self.fill_l1(now, line, write, copy);
                return Access::At(now + lat * cyc);
            }
        }
        if let Some((_, m)) = self.mshrs.iter_mut().find(|m| m.0 == line) {
            m.waiters.push(token);
            m.write |= write;
            return Access::Pending;
        }
        self.mshrs.push((
            line,
            Mshr {
                waiters: vec![token],
                write,
                copy,
            },
        ));
        let ch = self.channel_of(addr);
        let at = self.ic.request_arrives(now + lat * cyc, ch);
        self.send(at, addr, MemOp::Read, false, ReqKind::Fill { line }, copy);
        Access::Pending
    }

    /// A store that overwrites a whole line: present lines are written in place; a missing line
    /// is allocated dirty without reading memory.
    fn store_full_line(&mut self, now: Ps, addr: u64, copy: bool) -> Access {
        if self.pct.conflicts(addr) || self.inmem.blocked.conflicts(addr) {
            return Access::Retry;
        }
        let line = addr / 64;
        let cyc = self.cycle_ps;
        if self.l1.access(line, true, copy) {
            return Access::At(now + self.l1.hit_cycles * cyc);
        }
        if self.mshrs.iter().any(|m| m.0 == line) {
            // A fill is on its way: retry once it has arrived.
            return Access::Retry;
        }
        self.fill_l1(now, line, true, copy);
        Access::At(now + self.l2.hit_cycles * cyc)
    }

    fn on_fill(&mut self, now: Ps, id: u32) {
        let Some(r) = self.reqs[id as usize].take() else {
            return;
        };
        self.free_reqs.push(id);
        let ReqKind::Fill { line } = r.kind else {
            return;
        };
        let Some(pos) = self.mshrs.iter().position(|m| m.0 == line) else {
            return;
        };
        let (_, m) = self.mshrs.swap_remove(pos);
        if self.llc.is_some() {
            if let Some(llc) = self.llc.as_mut() {
                if let Some(v) = llc.insert(line, false, false) {
                    self.writeback(now, v, None);
                }
            }
        }
        self.insert_l2(now, line, false, m.copy);
        self.fill_l1(now, line, m.write, m.copy);
        for t in m.waiters {
            self.wakeups.push((t, now));
        }
        self.poke = true;
    }

    /// Handles what the memory controllers finished.
    fn on_memory_done(&mut self, cycle: u64, id: u32, bulk: bool) {
        let t = cycle * self.tck;
        if bulk {
            self.inmem_bulk_done(t, id);
            return;
        }
        let Some(r) = self.reqs[id as usize] else {
            return;
        };
        let bytes = 64;
        self.traffic.platform_bytes += bytes;
        if r.copy {
            self.traffic.copy_bytes += bytes;
        }
        match r.kind {
            ReqKind::Fill { .. } => {
                let at = self.ic.fill_arrives(t, r.channel);
                self.events.push(at, Ev::Fill(id));
            }
            ReqKind::Writeback { flush_for } => {
                self.reqs[id as usize] = None;
                self.free_reqs.push(id);
                if let Some(op) = flush_for {
                    self.inmem_flush_done(t, op);
                }
            }
            ReqKind::EngineRead { .. } => {
                let at = self.engine_data_arrives(t, r.channel);
                self.events.push(at, Ev::EngineData(id));
            }
            ReqKind::EngineWrite { .. } => {
                self.reqs[id as usize] = None;
                self.free_reqs.push(id);
            }
        }
    }

    pub(crate) fn release_req(&mut self, id: u32) -> Option<MemReq> {
        let r = self.reqs[id as usize].take();
        if r.is_some() {
            self.free_reqs.push(id);
        }
        r
    }

    fn handle(&mut self, now: Ps, ev: Ev) {
        match ev {
            Ev::Offer(id) => self.offer(now, id),
            Ev::Fill(id) => self.on_fill(now, id),
            Ev::EngineCmd(c) => self.engine_command_arrives(now, c),
            Ev::EngineData(id) => self.engine_data(now, id),
            Ev::EngineCacheWrite(cmd) => self.engine_write_done(now, cmd),
            Ev::CopyDone(c) => self.engine_notify_core(now, c),
            Ev::InMemoryAtMc(op) => self.inmem_at_mc(now, op),
            Ev::InMemoryAck(op) => self.inmem_ack(now, op),
        }
    }

    /// Runs the memory controllers at their cycle `mem_wake`.
    fn step_memory(&mut self) {
        let cycle = self.mem_wake;
        let next = self.mem.step(cycle);
        let done: Vec<_> = self.mem.drain().collect();
        for c in done {
            self.on_memory_done(c.cycle, c.id, c.bulk);
        }
        // Requests refused for a full queue retry once commands issued.
        let mut retried = false;
        let mut waiting = false;
        for q in 0..self.mc_retry.len() {
            while let Some(&id) = self.mc_retry[q].front() {
                let Some(r) = self.reqs[id as usize] else {
                    self.mc_retry[q].pop_front();
                    continue;
                };
                if !self.mem.offer(r.addr, r.op, r.engine, id, cycle) {
                    waiting = true;
                    break;
                }
                self.mc_retry[q].pop_front();
                self.offered_lines += 1;
                retried = true;
                self.accepted(cycle * self.tck, r);
            }
        }
        self.mem_wake = if retried { cycle + 1 } else { next };
        if self.mem_wake == u64::MAX && waiting {
            self.mem_wake = cycle + 1;
        }
    }

    fn idle(&self) -> bool {
        self.events.is_empty()
            && self.mem.idle()
            && self.mc_retry.iter().all(|q| q.is_empty())
            && self.engine.idle()
            && self.inmem.idle()
    }
}

impl Uncore for Hier {
    fn load(&mut self, now: Ps, addr: u64, copy: bool, token: Token) -> Access {
        self.access(now, addr, false, copy, token)
    }
    fn store(&mut self, now: Ps, addr: u64, whole: bool, copy: bool, token: Token) -> Access {
        if self.cfg.core.copy_skips_destination_fetch && whole {
            return self.store_full_line(now, addr, copy);
        }
        self.access(now, addr, true, copy, token)
    }
    fn offload(&mut self, now: Ps, op: u32, o: OffloadOp, seq: u64) -> Access {
        match self.cfg.copy.mechanism.as_str() {
            "ce" => self.engine_offload(now, op, o, seq),
            _ => self.inmem_offload(now, op, o, seq),
        }
    }
}

/// A platform ready to run workloads.
pub struct Platform {
    pub cfg: PlatformConfig,
    pub core: Core,
    pub hier: Hier,
    now: Ps,
    ran: bool,
}

impl Platform {
    pub fn new(cfg: &PlatformConfig) -> Result<Platform, PlatformError> {
        cfg.validate("platform")?;
        Ok(Platform {
            cfg: cfg.clone(),
            core: Core::new(&cfg.core, 0x5eed),
            hier: Hier::new(cfg)?,
            now: 0,
            ran: false,
        })
    }

    /// The memory system (e.g. to attach a command log).
    pub fn mem_mut(&mut self) -> &mut MemoryPort {
        self.hier.mem_mut()
    }

    /// Copies the cache contents of `other` into this platform (a warm start: e.g. the state a
    /// program's earlier phase left, simulated once and reused).
    pub fn warm_caches_from(&mut self, other: &Platform) {
        self.hier.l1 = other.hier.l1.clone();
        self.hier.l2 = other.hier.l2.clone();
        self.hier.llc = other.hier.llc.clone();
    }

    /// How the core runs a workload operation under this platform's mechanism.
    fn copy_by(&self, op: &Op) -> CopyBy {
        match (self.cfg.copy.mechanism.as_str(), op) {
            ("base", _) => CopyBy::Cpu,
            ("ce", Op::Copy { .. }) => CopyBy::Offload,
            ("ce", _) => CopyBy::Cpu,
            // In-DRAM initialisation needs a row of the value: only zeroing is offered.
            ("rowclone" | "rowclone-zi", Op::Init { value, .. }) if *value != 0 => CopyBy::Cpu,
            (_, Op::Copy { .. } | Op::Init { .. }) => CopyBy::Offload,
            _ => CopyBy::Cpu,
        }
    }

    /// Where the allocator puts a copy's destination page.
    fn place(&self, src: u64, dst: u64, policy: DstPolicy) -> u64 {
        if policy == DstPolicy::AsGiven {
            return dst;
        }
        let spec = self.hier.mem.spec();
        let org = &spec.org;
        let row_bytes = org.row_bytes();
        let mut loc = self.hier.locate(src);
        match policy {
            DstPolicy::SameSubarray => {
                let r = org.subarray_rows.max(4);
                let base = loc.row - loc.row % r;
                let off = loc.row % r;
                let mut cand = (off + r / 2) % r;
                while cand == off || cand >= r - 2 {
                    cand = (cand + 1) % r;
                }
                loc.row = base + cand;
            }
            DstPolicy::OtherBank => {
                let banks = org.banks_per_rank() / org.bank_groups.max(1);
                loc.bank = (loc.bank + 1) % banks.max(1);
            }
            DstPolicy::AsGiven => {}
        }
        let page = self.hier.mem.address_of(&loc);
        page - page % row_bytes.min(self.cfg.copy.page_bytes)
            + src % row_bytes.min(self.cfg.copy.page_bytes)
    }

    /// Runs `workload` to the end.
    pub fn run(&mut self, workload: &Workload) -> Result<PlatformStats, PlatformError> {
        self.run_with_progress(workload, &mut |_| {})
    }

    /// Runs `workload`, calling `progress` with the fraction of operations done now and then.
    pub fn run_with_progress(
        &mut self,
        workload: &Workload,
        progress: &mut dyn FnMut(u64),
    ) -> Result<PlatformStats, PlatformError> {
        if self.ran {
            return Err(PlatformError::config(
                "platform",
                "(run)",
                "a platform runs one workload; make a new one (Platform::warm_caches_from carries the cache contents over)",
            ));
        }
        self.ran = true;
        let start = self.now;
        let mut ops = workload.ops();
        let mut core_next: Ps = start;
        let mut n_ops: u64 = 0;
        let mut guard: u64 = 0;
        let mut last_now = start;
        let mut steps: u64 = 0;
        loop {
            // Feed the front end.
            while self.core.wants_op() {
                match ops.next() {
                    Some(mut op) => {
                        if let Op::Copy {
                            src,
                            dst,
                            bytes,
                            policy,
                        } = op
                        {
                            let d = self.place(src, dst, policy);
                            ops.last_dst = d;
                            op = Op::Copy {
                                src,
                                dst: d,
                                bytes,
                                policy,
                            };
                        }
                        if let Op::Init { dst, .. } = op {
                            ops.last_dst = dst;
                        }
                        let by = self.copy_by(&op);
                        self.core.push_op(&op, by);
                        n_ops += 1;
                        if n_ops.is_multiple_of(4096) {
                            progress(n_ops);
                        }
                    }
                    None => self.core.end_of_input(),
                }
            }
            if self.core.drained() && self.hier.idle() {
                break;
            }
            let mem_t = if self.hier.mem_wake == u64::MAX {
                Ps::MAX
            } else {
                self.hier.mem_wake * self.hier.tck
            };
            let ev_t = self.hier.events.peek_time().unwrap_or(Ps::MAX);
            let now = core_next.min(mem_t).min(ev_t);
            if now == Ps::MAX {
                return Err(PlatformError::Stalled(format!(
                    "at {} ns nothing is scheduled but the core has not finished ({} window entries)",
                    self.now / 1000,
                    self.core.window_len()
                )));
            }
            if now == last_now {
                guard += 1;
                if guard > 1_000_000 {
                    return Err(PlatformError::Stalled(format!(
                        "no progress at {} ns",
                        now / 1000
                    )));
                }
            } else {
                guard = 0;
                last_now = now;
            }
            self.now = now;
            steps += 1;
            if steps.is_multiple_of(interrupt::CHECK_STEPS) && interrupt::requested() {
                return Err(PlatformError::Interrupted);
            }
            if mem_t <= now {
                self.hier.step_memory();
            }
            if let Some(e) = self.hier.fatal.take() {
                return Err(PlatformError::Dram(e));
            }
            while let Some((t, ev)) = self.hier.events.pop_due(now) {
                self.hier.handle(t, ev);
            }
            if !self.hier.wakeups.is_empty() || self.hier.poke {
                for (tok, t) in self.hier.wakeups.drain(..) {
                    self.core.memory_done(tok, t);
                }
                if self.hier.poke {
                    self.core.poke();
                }
                self.hier.poke = false;
                // The core looks again at its next cycle boundary.
                let c = self.core.cycle_ps;
                let aligned = now.div_ceil(c) * c;
                core_next = core_next.min(aligned.max(now));
            }
            if core_next <= now {
                core_next = self.core.tick(now, &mut self.hier);
                if !self.hier.wakeups.is_empty() {
                    for (tok, t) in self.hier.wakeups.drain(..) {
                        self.core.memory_done(tok, t);
                    }
                    core_next = core_next.min(now + self.core.cycle_ps);
                }
                if self.hier.poke {
                    self.hier.poke = false;
                    self.core.poke();
                    core_next = core_next.min(now + self.core.cycle_ps);
                }
            }
        }
        progress(n_ops);
        let end = self
            .now
            .max(self.hier.engine.last_done)
            .max(self.hier.inmem.last_done);
        Ok(self.stats(workload, start, end))
    }

    fn stats(&mut self, workload: &Workload, start: Ps, end: Ps) -> PlatformStats {
        let tck = self.hier.tck;
        let dram = self.hier.mem.stats(end.div_ceil(tck));
        let h = &self.hier;
        let elapsed = end - start;
        let cycles = elapsed / self.core.cycle_ps.max(1);
        let dram_lines = dram.reads + dram.writes;
        // Lines the controllers moved on their own (MC-DMA and the channel part of RowClone's
        // split) are copy traffic too.
        let bulk_lines = dram_lines.saturating_sub(h.offered_lines);
        let mut traffic = h.traffic.clone();
        traffic.bulk_bytes = bulk_lines * 64;
        traffic.channel_bytes = dram.channel_bytes;
        let copy_total = traffic.copy_bytes + traffic.bulk_bytes;
        traffic.fmtc = if traffic.channel_bytes > 0 {
            copy_total as f64 / traffic.channel_bytes as f64
        } else {
            0.0
        };
        traffic.bandwidth_gbs = if elapsed > 0 {
            traffic.channel_bytes as f64 / (elapsed as f64 / 1000.0)
        } else {
            0.0
        };
        let c = &self.core.counters;
        let (copies, copy_time) = (
            h.engine.copies + h.inmem.ops,
            h.engine.copy_time + h.inmem.op_time,
        );
        PlatformStats {
            platform: self.cfg.name.clone(),
            workload: workload.spec.name.clone(),
            core: self.cfg.core.kind.clone(),
            mechanism: self.cfg.copy.mechanism.clone(),
            placement: self.cfg.copy.placement.clone(),
            mode: self.cfg.copy.mode.clone(),
            time_ns: elapsed as f64 / 1000.0,
            core_cycles: cycles,
            instructions: c.instructions,
            ipc: if cycles > 0 {
                c.instructions as f64 / cycles as f64
            } else {
                0.0
            },
            offloads: copies,
            mean_offload_ns: if copies > 0 {
                copy_time as f64 / copies as f64 / 1000.0
            } else {
                0.0
            },
            offload_time_ns: copy_time as f64 / 1000.0,
            head_stall_cycles: c.stall_cycles,
            pending_copy_stalls: h.pct.stalls + h.inmem.blocked.stalls,
            copy_lines: CopyLines {
                engine_read: h.engine.lines_read,
                engine_from_cache: h.engine.lines_from_cache,
                engine_written: h.engine.lines_written,
                flushed: h.inmem.flushed_lines,
                invalidated: h.inmem.invalidated_lines,
                inserted: h.inmem.inserted_lines,
            },
            caches: CacheStats {
                l1_hits: h.l1.hits,
                l1_misses: h.l1.misses,
                l2_hits: h.l2.hits,
                l2_misses: h.l2.misses,
                llc_hits: h.llc.as_ref().map_or(0, |l| l.hits),
                llc_misses: h.llc.as_ref().map_or(0, |l| l.misses),
            },
            bus_busy_fraction: if elapsed > 0 {
                h.ic.busy_ps as f64 / elapsed as f64
            } else {
                0.0
            },
            dram_energy_nj: dram.energy.total_nj,
            memory: traffic,
            dram,
        }
    }
}

/// Runs `workload` on a fresh platform `cfg`.
pub fn run(cfg: &PlatformConfig, workload: &Workload) -> Result<PlatformStats, PlatformError> {
    Platform::new(cfg)?.run(workload)
}
