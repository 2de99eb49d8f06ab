//! Cores: a pipeline with an instruction window (reorder buffer), issue width, load/store queue
//! and memory ports, in two issue policies: `out-of-order` issues any ready instruction in the
//! window, oldest first; `in-order` issues in program order and stalls at the first instruction
//! whose operand is not ready (a miss stalls only its first use, as in SimpleScalar's in-order
//! mode). Retirement is in order for both.
//!
//! The front end turns workload operations into micro-ops. To keep the model fast without
//! changing its timing, instructions that behave alike travel together as one window entry that
//! stands for `count` instructions: it occupies `count` window slots and `count` issue, retire
//! and memory-port slots (bandwidth left over or overdrawn carries to the next cycle), e.g. the
//! 16 four-byte loads the CPU copy does on one 64-byte source line, of which only the first can
//! miss. In the base mechanism a copy runs as such register-sized loads and stores through the
//! caches; under an engine or in-memory mechanism it is one offload instruction (`ecpy`,
//! `memcpy`/`meminit`) handed to the uncore.
use crate::config::platform::CoreConfig;
use crate::config::workload::Op;
use crate::cpu::issue_set::IssueSet;
use crate::cpu::window::Window;
pub use crate::iface::{token_context, Access, OffloadOp, Token, Uncore, SEQ_MASK};
use crate::sim::Ps;
use movelab_dram::generator::Xoshiro256StarStar;
use std::collections::VecDeque;

/// What a window entry does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum UopKind {
    /// Integer work finishing `lat` cycles after issue.
    Alu { lat: u32 },
    /// Loads of one line (the first may miss). `copy`: part of a CPU copy/init.
    Load { addr: u64, copy: bool },
    /// Stores to one line, written to the cache from the store buffer after retirement.
    /// `whole`: the CPU copy overwrites the whole line.
    Store { addr: u64, copy: bool, whole: bool },
    /// A copy or initialisation handed to the uncore (engine or memory controller); `id`
    /// numbers the offloads of a run. The operation itself waits in `Core::offload_ops` (it is
    /// five times the size of every other kind: kept out, every window entry stays small).
    Offload { id: u32 },
    /// An uncached (MMIO-like) load or store.
    Uncached { addr: u64, write: bool },
    /// Waits for room in (`push`) or an entry of a shared-memory ring, polling index line `addr`.
    RingWait { ring: u16, push: bool, addr: u64 },
    /// Publishes a ring push or pop by writing this side's index line `addr`.
    RingCommit { ring: u16, push: bool, addr: u64 },
    /// Raises an interrupt at another core.
    Interrupt { target: u32 },
    /// Nothing younger issues until `cycles` after this issues (interrupt entry and return;
    /// `ret`: the return, whose retirement ends the handler).
    Serialize { cycles: u32, ret: bool },
}

#[derive(Debug, Clone, Copy)]
pub struct Uop {
    pub kind: UopKind,
    /// Instructions this entry stands for.
    pub count: u32,
    /// Distance back (in entries) to the entry producing its operand; 0: none.
    pub dep: u32,
    /// Program instructions it stands for: `count`, except that a copy or initialisation the
    /// core expands counts as one instruction in all (its first entry), as the offloaded
    /// `memcpy`/`meminit` does, so that work is measured alike under every mechanism.
    pub work: u32,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    uop: Uop,
    issued: bool,
    /// Could not start (no MSHR, pending copy): waits for the uncore to poke the core.
    blocked: bool,
    /// When its result is available (`Ps::MAX`: waiting for memory or an engine).
    done_at: Ps,
    /// The first of the younger entries asleep on this one's result ([`NO_SEQ`]: none), by the
    /// low 32 bits of its sequence number; each links to the next through `sibling`.
    children: u32,
    sibling: u32,
}

/// No entry, in [`Entry::children`] and [`Entry::sibling`].
const NO_SEQ: u32 = u32::MAX;

impl Default for Entry {
    /// An empty slot of the window's ring (never read as an entry).
    fn default() -> Entry {
        Entry {
            uop: Uop {
                kind: UopKind::Alu { lat: 0 },
                count: 0,
                dep: 0,
                work: 0,
            },
            issued: true,
            blocked: false,
            done_at: 0,
            children: NO_SEQ,
            sibling: NO_SEQ,
        }
    }
}

/// Micro-ops a copy or initialisation by the core keeps expanded ahead of dispatch.
const EXPAND_AHEAD: usize = 256;

/// A copy (`src` given) or initialisation by the core, expanded up to `off` bytes.
#[derive(Debug, Clone, Copy)]
struct Expansion {
    src: Option<u64>,
    dst: u64,
    bytes: u64,
    off: u64,
    value: u8,
}

/// Core statistics.
#[derive(Debug, Clone, Default)]
pub struct CoreCounters {
    pub instructions: u64,
    /// Program instructions retired, a copy or initialisation counting as one whatever runs it
    /// (see [`Uop::work`]).
    pub work_instructions: u64,
    pub loads: u64,
    pub stores: u64,
    pub offloads: u64,
    /// Cycles in which nothing could retire because the window's head waited for memory.
    pub stall_cycles: u64,
    /// Interrupts taken.
    pub interrupts: u64,
}

pub struct Core {
    cfg: CoreConfig,
    pub cycle_ps: Ps,
    in_order: bool,
    /// The window's entries, oldest first (a ring indexed by a mask: `cpu/window.rs`).
    rob: Window<Entry>,
    head_seq: u64,
    rob_instrs: u32,
    lsq_used: u32,
    /// Instructions' worth of stores in the store buffer.
    sb_used: u32,
    /// Store buffer: (id, addr, copy, started).
    /// Store buffer: retired stores waiting to be written to the cache: (id, addr, copy,
    /// started, instructions, whole line).
    sb: VecDeque<(u64, u64, bool, bool, u32, bool)>,
    sb_done: Vec<u64>,
    /// Store-buffer writes that hit, finishing at a known time: (time, id).
    sb_timed: Vec<(Ps, u64)>,
    next_sb_id: u64,
    /// Micro-ops expanded from the current operation, not yet dispatched.
    pending: VecDeque<Uop>,
    /// A copy or initialisation by the core still being expanded, a chunk at a time, so that an
    /// operation of any size holds a bounded number of micro-ops.
    expanding: Option<Expansion>,
    /// Bandwidth carried between cycles (negative: overdrawn).
    dispatch_credit: i64,
    issue_credit: i64,
    port_credit: i64,
    retire_credit: i64,
    /// Offloads emitted so far (the next offload's id).
    next_offload: u32,
    rng: Xoshiro256StarStar,
    /// Emission indices of the last explicit load and the last ALU group (dependence targets).
    last_load_dist: Option<u64>,
    last_alu_dist: Option<u64>,
    /// The last explicit load (what a pointer-chasing load depends on).
    last_load_at: Option<u64>,
    emitted: u64,
    pub counters: CoreCounters,
    finished_input: bool,
    /// Set when the uncore woke the core (a fill or a notification), so that it retries.
    pub poked: bool,
    /// A memory access could not start; memory accesses are not retried until the uncore
    /// pokes the core (it freed an MSHR or a pending copy finished) or a while has passed.
    mem_blocked_until: Ps,
    /// Nothing issues before this time (a serializing entry issued).
    serialize_until: Ps,
    /// The program's micro-ops set aside while an interrupt handler is fed in.
    interrupted: Option<VecDeque<Uop>>,
    /// Handlers taken whose return has not retired: while one runs, interrupts are held
    /// (interrupts are masked from a handler's entry to its return, as an interrupt gate does).
    handlers: u32,
    /// `emitted` when the handler began.
    interrupt_mark: u64,
    /// The program's copy being expanded when the interrupt came.
    interrupted_expansion: Option<Expansion>,
    /// The hardware context, in the top byte of every token this core hands out.
    tag: u64,
    /// Set while a copy or initialisation is expanded: its entries count no program work.
    in_expansion: bool,
    /// Sequence numbers of the window's entries not yet issued, oldest first, except (out of
    /// order) those asleep on a producer that has not issued or waits for memory: such an entry
    /// can neither issue nor say when it could, so the issue scan would only skip it; it joins
    /// the scan when its producer's result gets a time ([`Core::wake_children`]). A bit per
    /// entry, walked in sequence order.
    unissued: IssueSet,
    /// The members of `unissued` that are not loads or stores. Out of order, once the memory
    /// ports' credit is overdrawn and a ready load or store has found it so, the issue scan
    /// walks only these: no later load or store can issue this tick, and what visiting them
    /// would tell (their operands' times as wake-ups) is superseded by the ports' own wake-up
    /// (see the scan).
    unissued_other: IssueSet,
    /// Tests only: the scan visits every member of `unissued` (as before `unissued_other`).
    #[cfg(test)]
    full_scan: bool,
    /// The operations of the offloads emitted and not yet issued, by id (a handful).
    offload_ops: Vec<(u32, OffloadOp)>,
    /// Store-buffer entries started: they are always the oldest ones (writes start in order
    /// and entries leave in any order), so the first entry not started is at this index.
    sb_started: usize,
    /// `mem_ports`, at least one.
    ports: u32,
    /// Ticks every cycle while a full store buffer holds the head or a bandwidth credit is
    /// overdrawn (see [`Core::keep_polling`]).
    polls_full_store_buffer: bool,
    /// Ticks every cycle while a bandwidth credit is overdrawn (see [`Core::share_engine`]).
    shares_engine: bool,
    /// The last tick skipped the ticks that would only repay overdrawn bandwidth credit
    /// ([`Core::tick`]): the next tick first repays what they would have.
    skipping: bool,
    /// When the core last ticked.
    last_tick: Ps,
    /// At the last tick, the window's head waited for memory (each skipped tick with retire
    /// credit counts a stall cycle, as it would have).
    head_waited: bool,
}

/// How the core turns a workload operation into micro-ops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyBy {
    /// Loads and stores on the core.
    Cpu,
    /// One offload instruction.
    Offload,
}

impl Core {
    pub fn new(cfg: &CoreConfig, seed: u64) -> Core {
        Core {
            cfg: cfg.clone(),
            cycle_ps: (1_000_000.0 / cfg.clock_mhz as f64).round() as Ps,
            in_order: cfg.kind != "out-of-order",
            rob: Window::default(),
            head_seq: 0,
            rob_instrs: 0,
            lsq_used: 0,
            sb_used: 0,
            sb: VecDeque::new(),
            sb_done: Vec::new(),
            sb_timed: Vec::new(),
            next_sb_id: 0,
            pending: VecDeque::new(),
            expanding: None,
            dispatch_credit: 0,
            issue_credit: 0,
            port_credit: 0,
            retire_credit: 0,
            next_offload: 0,
            rng: Xoshiro256StarStar::seed_from_u64(seed),
            last_load_dist: None,
            last_alu_dist: None,
            last_load_at: None,
            emitted: 0,
            counters: CoreCounters::default(),
            finished_input: false,
            poked: false,
            mem_blocked_until: 0,
            serialize_until: 0,
            interrupted: None,
            handlers: 0,
            interrupt_mark: 0,
            interrupted_expansion: None,
            tag: 0,
            in_expansion: false,
            unissued: IssueSet::new(),
            unissued_other: IssueSet::new(),
            #[cfg(test)]
            full_scan: false,
            offload_ops: Vec::new(),
            sb_started: 0,
            ports: cfg.mem_ports.max(1),
            polls_full_store_buffer: false,
            shares_engine: false,
            skipping: false,
            last_tick: 0,
            head_waited: false,
        }
    }

    /// The core ticks every cycle while a full store buffer holds a finished store at the head
    /// or a bandwidth credit is overdrawn, as it did before it learnt to sleep then. Its timing
    /// is the same either way; only the number of the run loop's turns differs, which the
    /// per-core DRAM accounting's sampling counts (`MemorySystem::set_owners`): where it is on,
    /// this keeps its figures as they were.
    pub fn keep_polling(&mut self) {
        self.polls_full_store_buffer = true;
        self.shares_engine = true;
    }

    /// This core is one hardware context of a multithreaded core: the platform switches it out
    /// and in between its ticks, which a skipped tick's later repayment cannot tell from a tick
    /// that was due, so it ticks every cycle while a bandwidth credit is overdrawn.
    pub fn share_engine(&mut self) {
        self.shares_engine = true;
    }

    /// Repays what the ticks skipped since the last one would have: each added a cycle's
    /// bandwidth to every credit (up to a cycle's worth) and, while the head waited for memory
    /// with retire credit left, counted a stall cycle. Nothing else changed in them (see
    /// [`Core::tick`]); a tick that comes early, woken by the uncore, repays the ticks before it.
    fn repay_skipped(&mut self, now: Ps) {
        self.skipping = false;
        let skipped = ((now - self.last_tick) / self.cycle_ps).saturating_sub(1);
        if skipped == 0 {
            return;
        }
        let w = i64::from(self.cfg.width);
        let s = i64::try_from(skipped)
            .unwrap_or(i64::MAX / 4)
            .min(i64::MAX / 4 / w.max(1));
        if self.head_waited && w > 0 {
            // The first skipped tick with retire credit left, and every one after it.
            let first = if self.retire_credit > 0 {
                1
            } else {
                -self.retire_credit / w + 1
            };
            self.counters.stall_cycles += (s - first + 1).max(0) as u64;
        }
        let repay = |c: i64, per: i64| (c + s * per).min(per);
        self.retire_credit = repay(self.retire_credit, w);
        self.issue_credit = repay(self.issue_credit, w);
        self.dispatch_credit = repay(self.dispatch_credit, w);
        let ports = i64::from(self.cfg.mem_ports);
        self.port_credit = repay(self.port_credit, ports);
    }

    /// Makes this core hardware context `ctx` of a multithreaded core.
    pub fn set_context(&mut self, ctx: u8) {
        self.tag = u64::from(ctx) << 56;
    }

    /// Waits for memory (a load, an offload or an uncached access outstanding, or an access
    /// that could not start): a multithreaded core swaps to another context.
    pub fn waiting_on_memory(&self) -> bool {
        self.rob
            .iter()
            .any(|e| (e.issued && e.done_at == Ps::MAX) || e.blocked)
    }

    /// The core kind it was built as.
    pub fn kind(&self) -> &str {
        &self.cfg.kind
    }

    /// A one-line summary of what the core waits for (for stall reports).
    pub fn state(&self) -> String {
        let head = self.rob.front().map_or("empty".to_string(), |e| {
            format!(
                "{:?} issued={} blocked={} done_at={}",
                e.uop.kind, e.issued, e.blocked, e.done_at
            )
        });
        let sb = self.sb.front().map_or("empty".to_string(), |s| {
            format!("{:#x} started={}", s.1, s.3)
        });
        format!(
            "window {} (head: {head}), store buffer {} (first: {sb}), input {}",
            self.rob.len(),
            self.sb.len(),
            if self.finished_input { "done" } else { "open" }
        )
    }

    /// Window entries in flight.
    pub fn window_len(&self) -> usize {
        self.rob.len()
    }

    /// Whether the front end wants another operation.
    pub fn wants_op(&self) -> bool {
        self.pending.len() < 64 && self.expanding.is_none() && !self.finished_input
    }

    /// An interrupt handler was taken and its return has not retired yet: interrupts are
    /// masked (the platform holds them and delivers each after the return).
    pub fn in_handler(&self) -> bool {
        self.handlers > 0
    }

    /// No more operations will come.
    pub fn end_of_input(&mut self) {
        self.finished_input = true;
    }

    /// Everything dispatched has retired and every store is written.
    pub fn drained(&self) -> bool {
        self.finished_input
            && self.pending.is_empty()
            && self.expanding.is_none()
            && self.rob.is_empty()
            && self.sb.is_empty()
    }

    fn emit(&mut self, kind: UopKind, count: u32, dep_on: Option<u64>) {
        // dep_on is an absolute emission index; convert to a distance.
        // Producers further back than any window have long retired: no dependence.
        let dep = dep_on.map_or(0, |d| u32::try_from(self.emitted - d).unwrap_or(0));
        let work = if self.in_expansion { 0 } else { count };
        self.pending.push_back(Uop {
            kind,
            count,
            dep,
            work,
        });
        self.emitted += 1;
    }

    /// Expands the CPU copy or initialisation under way to its end (a handler's own bulk
    /// operations: workloads bound them to 1 MiB).
    fn expand_whole(&mut self) {
        while self.expanding.is_some() {
            let mut done = std::mem::take(&mut self.pending);
            self.expand();
            done.append(&mut self.pending);
            self.pending = done;
            if self.pending.len() > 1 << 20 {
                break;
            }
        }
    }

    /// Expands one workload operation into micro-ops.
    pub fn push_op(&mut self, op: &Op, copy_by: CopyBy) {
        // A program's operations come one at a time once the last is expanded ([`Core::wants_op`]);
        // a handler's come all at once, so a CPU copy or initialisation before this operation is
        // expanded whole first (else the next one would take its place).
        if self.expanding.is_some() {
            self.expand_whole();
        }
        let ilp = if self.in_order {
            self.cfg.in_order_ilp
        } else {
            self.cfg.compute_ilp
        }
        .max(1);
        match *op {
            Op::Compute {
                n,
                loads,
                stores,
                region,
            } => {
                let mut left = n;
                let (mut lacc, mut sacc) = (0.0f64, 0.0f64);
                while left > 0 {
                    let chunk = left.min(8) as u32;
                    left -= u64::from(chunk);
                    lacc += loads * f64::from(chunk);
                    sacc += stores * f64::from(chunk);
                    let mut alu = chunk;
                    let mut load_at = None;
                    if let Some((base, size)) = region {
                        let lines = (size / 64).max(1);
                        while lacc >= 1.0 && alu > 0 {
                            lacc -= 1.0;
                            alu -= 1;
                            let a = base + self.rng.below(lines) * 64;
                            self.emit(
                                UopKind::Load {
                                    addr: a,
                                    copy: false,
                                },
                                1,
                                None,
                            );
                            load_at = Some(self.emitted - 1);
                        }
                        while sacc >= 1.0 && alu > 0 {
                            sacc -= 1.0;
                            alu -= 1;
                            let a = base + self.rng.below(lines) * 64;
                            self.emit(
                                UopKind::Store {
                                    addr: a,
                                    copy: false,
                                    whole: false,
                                },
                                1,
                                self.last_alu_dist,
                            );
                        }
                    }
                    if alu > 0 {
                        // The chain continues from the previous ALU group, or from the load just
                        // made (load-use), or from the last explicit load.
                        let dep = load_at
                            .or(self.last_load_dist.take())
                            .or(self.last_alu_dist);
                        let lat = alu.div_ceil(ilp);
                        self.emit(UopKind::Alu { lat }, alu, dep);
                        self.last_alu_dist = Some(self.emitted - 1);
                    }
                }
            }
            Op::Load { addr, chase } => {
                let dep = if chase { self.last_load_at } else { None };
                self.emit(UopKind::Load { addr, copy: false }, 1, dep);
                self.last_load_dist = Some(self.emitted - 1);
                self.last_load_at = Some(self.emitted - 1);
            }
            Op::Store(a) => self.emit(
                UopKind::Store {
                    addr: a,
                    copy: false,
                    whole: false,
                },
                1,
                None,
            ),
            Op::Copy {
                src, dst, bytes, ..
            } => match copy_by {
                CopyBy::Offload => self.push_offload(Some(src), dst, bytes, 0),
                CopyBy::Cpu => {
                    self.expanding = Some(Expansion {
                        src: Some(src),
                        dst,
                        bytes,
                        off: 0,
                        value: 0,
                    });
                    self.expand();
                }
            },
            Op::Uncached { addr, write } => self.emit(UopKind::Uncached { addr, write }, 1, None),
            Op::RingWait { ring, push, addr } => {
                self.emit(UopKind::RingWait { ring, push, addr }, 1, None)
            }
            Op::RingCommit { ring, push, addr } => {
                self.emit(UopKind::RingCommit { ring, push, addr }, 1, None)
            }
            Op::Interrupt { target } => self.emit(UopKind::Interrupt { target }, 1, None),
            // The platform expands ring operations before they reach the core.
            Op::RingPush { .. } | Op::RingPop { .. } => {}
            Op::Init { dst, bytes, value } => match copy_by {
                CopyBy::Offload => self.push_offload(None, dst, bytes, value),
                CopyBy::Cpu => {
                    self.expanding = Some(Expansion {
                        src: None,
                        dst,
                        bytes,
                        off: 0,
                        value,
                    });
                    self.expand();
                }
            },
        }
    }

    /// Expands the copy or initialisation under way into micro-ops until [`EXPAND_AHEAD`] wait
    /// or it is all expanded. A copy is register-sized loads and stores grouped by (source line,
    /// destination line); an initialisation, stores by destination line. Zeroing is bulk
    /// initialisation (what in-memory mechanisms accelerate); filling with data is ordinary
    /// program stores.
    fn expand(&mut self) {
        let Some(mut x) = self.expanding else {
            return;
        };
        // A marked copy or zeroing (RowClone's kernel) moves a line per access, no loop code.
        let marked = self.cfg.marked_bulk_ops && (x.src.is_some() || x.value == 0);
        let reg = if marked {
            64
        } else {
            u64::from(self.cfg.register_bytes)
        };
        let loop_instr = if marked {
            0
        } else {
            self.cfg.copy_loop_instructions
        };
        let first = x.off == 0;
        let mark = self.pending.len();
        self.in_expansion = true;
        while x.off < x.bytes && self.pending.len() < EXPAND_AHEAD {
            let d = x.dst + x.off;
            let to_d = 64 - d % 64;
            match x.src {
                Some(src) => {
                    let s = src + x.off;
                    let to_s = 64 - s % 64;
                    let seg = to_s.min(to_d).min(x.bytes - x.off);
                    let words = seg.div_ceil(reg).max(1) as u32;
                    self.emit(
                        UopKind::Load {
                            addr: s,
                            copy: true,
                        },
                        words,
                        None,
                    );
                    let l = self.emitted - 1;
                    self.emit(
                        UopKind::Store {
                            addr: d,
                            copy: true,
                            whole: seg == 64,
                        },
                        words,
                        Some(l),
                    );
                    if loop_instr > 0 {
                        self.emit(UopKind::Alu { lat: 1 }, words * loop_instr, None);
                    }
                    x.off += seg;
                }
                None => {
                    let seg = to_d.min(x.bytes - x.off);
                    let words = seg.div_ceil(reg).max(1) as u32;
                    self.emit(
                        UopKind::Store {
                            addr: d,
                            copy: x.value == 0,
                            // The marked zeroing writes whole lines without reading them
                            // (RowClone Table 3: the baseline zeroing is the writes alone).
                            whole: marked && seg == 64,
                        },
                        words,
                        None,
                    );
                    if loop_instr > 0 {
                        self.emit(UopKind::Alu { lat: 1 }, words * loop_instr, None);
                    }
                    x.off += seg;
                }
            }
        }
        self.in_expansion = false;
        if first {
            if let Some(u) = self.pending.get_mut(mark) {
                u.work = 1;
            }
        }
        self.expanding = (x.off < x.bytes).then_some(x);
    }

    fn push_offload(&mut self, src: Option<u64>, dst: u64, bytes: u64, value: u8) {
        let id = self.next_offload;
        self.next_offload = self.next_offload.wrapping_add(1);
        let op = OffloadOp {
            src,
            dst,
            bytes,
            value,
        };
        self.offload_ops.push((id, op));
        self.emit(UopKind::Offload { id }, 1, None);
    }

    /// Takes an interrupt: the program's micro-ops not yet in the window are set aside, and the
    /// entry cost (`entry_cycles` during which nothing issues) comes next; the platform then
    /// feeds the handler's operations and calls [`Core::end_interrupt`].
    pub fn begin_interrupt(&mut self, entry_cycles: u32) {
        self.counters.interrupts += 1;
        self.handlers += 1;
        // A copy of the program still being expanded resumes after the handler.
        if self.interrupted_expansion.is_none() {
            self.interrupted_expansion = self.expanding.take();
        }
        let saved = std::mem::take(&mut self.pending);
        self.interrupted = Some(match self.interrupted.take() {
            // An interrupt while feeding a handler nests after it.
            Some(mut outer) => {
                outer.extend(saved);
                outer
            }
            None => saved,
        });
        self.interrupt_mark = self.emitted;
        self.emit(
            UopKind::Serialize {
                cycles: entry_cycles,
                ret: false,
            },
            1,
            None,
        );
    }

    /// The handler is fed: the return cost, then the interrupted program resumes.
    pub fn end_interrupt(&mut self, exit_cycles: u32) {
        self.expand_whole();
        self.emit(
            UopKind::Serialize {
                cycles: exit_cycles,
                ret: true,
            },
            1,
            None,
        );
        let k = (self.emitted - self.interrupt_mark) as u32;
        if let Some(saved) = self.interrupted.take() {
            for (j, mut u) in saved.into_iter().enumerate() {
                // A producer already in the window is now k entries further back.
                if u.dep as usize > j {
                    u.dep = u.dep.saturating_add(k);
                }
                self.pending.push_back(u);
            }
        }
        if self.expanding.is_none() {
            self.expanding = self.interrupted_expansion.take();
        }
    }

    /// The uncore answers a load (a window entry) or a store-buffer write.
    pub fn memory_done(&mut self, token: Token, at: Ps) {
        self.poke();
        match token {
            Token::Rob(seq) => {
                let seq = seq & SEQ_MASK;
                if seq >= self.head_seq {
                    let i = (seq - self.head_seq) as usize;
                    if let Some(count) = self.rob.get(i).map(|e| e.uop.count) {
                        let extra = self.group_extra(count);
                        let k = self.rob.slot(i);
                        let e = self.rob.at_mut(k);
                        e.done_at = at + extra;
                        if e.issued && e.children != NO_SEQ {
                            self.wake_children(k);
                        }
                    }
                }
            }
            Token::Store(id) => self.sb_done.push(id & SEQ_MASK),
        }
    }

    /// Something below the core changed: retry what could not start.
    pub fn poke(&mut self) {
        self.poked = true;
        if self.mem_blocked_until != 0 {
            self.mem_blocked_until = 0;
            self.rob.for_each_mut(|e| e.blocked = false);
        }
    }

    /// An offload completed (or, for an asynchronous engine, was acknowledged) at `at`.
    pub fn offload_done(&mut self, seq: u64, at: Ps) {
        self.memory_done(Token::Rob(seq), at);
    }

    #[inline]
    fn group_extra(&self, count: u32) -> Ps {
        // A group of `count` accesses to one line takes count / ports cycles of port time (no
        // division for a group the ports take in one cycle).
        if count <= self.ports {
            return 0;
        }
        Ps::from(count.div_ceil(self.ports) - 1) * self.cycle_ps
    }

    /// The window entry in slot `k` ([`Window::slot`]) issued and its result has a time: the
    /// entries asleep on it join the issue scan, in sequence order.
    fn wake_children(&mut self, k: usize) {
        let e = self.rob.at(k);
        if e.done_at == Ps::MAX || e.children == NO_SEQ {
            return;
        }
        let mut c = std::mem::replace(&mut self.rob.at_mut(k).children, NO_SEQ);
        while c != NO_SEQ {
            let ci = c.wrapping_sub(self.head_seq as u32) as usize;
            let seq = self.head_seq + ci as u64;
            let child = &mut self.rob[ci];
            c = std::mem::replace(&mut child.sibling, NO_SEQ);
            let mem = Self::is_mem(&child.uop);
            self.unissued.insert(seq);
            if !mem {
                self.unissued_other.insert(seq);
            }
        }
    }

    /// Removes the store-buffer entry `id` (a started write that finished), if present.
    fn sb_remove(&mut self, id: u64) -> bool {
        // Store-buffer ids increase from front to back: writes mostly finish in order, so the
        // oldest is looked at first, else it is found by binary search.
        let p = if self.sb.front().is_some_and(|s| s.0 == id) {
            0
        } else {
            let Ok(p) = self.sb.binary_search_by_key(&id, |s| s.0) else {
                return false;
            };
            p
        };
        if p < self.sb_started {
            self.sb_started -= 1;
        }
        // Writes mostly finish in order: the oldest leaves without a shift.
        let e = if p == 0 {
            self.sb.pop_front()
        } else {
            self.sb.remove(p)
        };
        if let Some(e) = e {
            self.sb_used -= e.4;
        }
        true
    }

    #[inline]
    fn is_mem(u: &Uop) -> bool {
        matches!(u.kind, UopKind::Load { .. } | UopKind::Store { .. })
    }

    /// One core cycle at `now`. Returns the time the core next needs to run (`Ps::MAX`: only when
    /// the uncore wakes it).
    pub fn tick<U: Uncore + ?Sized>(&mut self, now: Ps, unc: &mut U) -> Ps {
        self.poked = false;
        if self.skipping {
            self.repay_skipped(now);
        }
        self.last_tick = now;
        let w = i64::from(self.cfg.width);
        let mut progress = false;
        // The head is a finished store held back by a full store buffer.
        let mut sb_full = false;
        // An uncore call answered "not now" (retried at the next tick that reaches it).
        let mut refused = false;

        // Retire, in order.
        self.retire_credit = (self.retire_credit + w).min(w);
        while self.retire_credit > 0 {
            let Some(e) = self.rob.front() else { break };
            if !e.issued || e.done_at > now {
                if e.issued && e.done_at == Ps::MAX {
                    self.counters.stall_cycles += 1;
                }
                break;
            }
            if let UopKind::Store { addr, copy, whole } = e.uop.kind {
                // Retired stores leave the load/store queue for the store buffer, which must have
                // room for them.
                if self.sb_used + e.uop.count > self.cfg.store_buffer && !self.sb.is_empty() {
                    sb_full = true;
                    break;
                }
                self.sb
                    .push_back((self.next_sb_id, addr, copy, false, e.uop.count, whole));
                self.sb_used += e.uop.count;
                self.next_sb_id += 1;
            }
            // What retiring needs is read in place: the entry itself is not copied out.
            let (count, work) = (e.uop.count, e.uop.work);
            if Self::is_mem(&e.uop) {
                self.lsq_used -= count;
            }
            if let UopKind::Serialize { ret: true, .. } = e.uop.kind {
                self.handlers = self.handlers.saturating_sub(1);
            }
            self.rob.drop_front();
            self.head_seq += 1;
            self.rob_instrs -= count;
            self.retire_credit -= i64::from(count);
            self.counters.instructions += u64::from(count);
            self.counters.work_instructions += u64::from(work);
            progress = true;
        }

        // Store buffer: finished writes leave; waiting ones start.
        if !self.sb_done.is_empty() {
            // Store-buffer ids increase from front to back: find each by binary search.
            let mut done = std::mem::take(&mut self.sb_done);
            for &id in &done {
                self.sb_remove(id);
            }
            // The buffer is kept, so no allocation per answer.
            done.clear();
            self.sb_done = done;
            progress = true;
        }
        // Writes start in order; the first that cannot start (no MSHR, a pending copy) holds
        // back the younger ones.
        let mut sb_retry = false;
        let mut sb_next = Ps::MAX;
        debug_assert_eq!(
            self.sb_started,
            self.sb.iter().position(|s| !s.3).unwrap_or(self.sb.len())
        );
        let mut i = if now < self.mem_blocked_until {
            self.sb.len()
        } else {
            self.sb_started
        };
        while i < self.sb.len() {
            let (id, addr, copy, _, count, whole) = self.sb[i];
            match unc.store(now, addr, whole, copy, Token::Store(id | self.tag)) {
                Access::At(t) => {
                    if t <= now {
                        self.sb.remove(i);
                        self.sb_used -= count;
                        progress = true;
                        continue;
                    }
                    self.sb[i].3 = true;
                    self.sb_started += 1;
                    self.sb_timed.push((t, id));
                    sb_next = sb_next.min(t);
                }
                Access::Pending => {
                    self.sb[i].3 = true;
                    self.sb_started += 1;
                }
                Access::Retry | Access::RetryAt(_) => {
                    sb_retry = true;
                    self.mem_blocked_until = now + 64 * self.cycle_ps;
                    break;
                }
            }
            i += 1;
        }
        if !self.sb_timed.is_empty() {
            let mut k = 0;
            while k < self.sb_timed.len() {
                let (t, id) = self.sb_timed[k];
                if t <= now {
                    self.sb_timed.swap_remove(k);
                    if self.sb_remove(id) {
                        progress = true;
                    }
                } else {
                    sb_next = sb_next.min(t);
                    k += 1;
                }
            }
        }

        // Issue.
        self.issue_credit = (self.issue_credit + w).min(w);
        let ports = i64::from(self.cfg.mem_ports);
        self.port_credit = (self.port_credit + ports).min(ports);
        let mut wake = Ps::MAX;
        // A memory access ready to issue waits for memory-port credit.
        let mut port_wait = false;
        let mut retry = false;
        let n = self.rob.len();
        // The scan visits only entries not yet issued (`unissued`, oldest first): issued ones
        // would be skipped anyway. `p`: its position, a sequence number, up to the window's end.
        let end = self.head_seq + n as u64;
        let mut p = self.head_seq;
        if now < self.serialize_until {
            // A serializing entry (interrupt entry or return) holds everything younger.
            wake = wake.min(self.serialize_until);
            p = end;
        }
        // Out of order: once a ready load or store found the memory ports' credit overdrawn
        // (`port_wait`), no younger load or store can issue this tick (the credit only falls
        // during the scan), so the scan walks only the other entries (`unissued_other`). What
        // the skipped ones would add is a wake-up at their operand's time; it cannot matter:
        // this tick either made progress (the next tick is the next cycle) or it ends with the
        // ports' wake-up, where a tick is due the next cycle anyway or the ticks up to the
        // ports' repayment are skipped and repaid (`Core::repay_skipped`), a load or store
        // becoming ready among them changing nothing until the ports' credit is positive.
        let mut mem_done_for_tick = false;
        while self.issue_credit > 0 {
            let next = if mem_done_for_tick {
                self.unissued_other.next_from(p, end)
            } else {
                self.unissued.next_from(p, end)
            };
            let Some(s) = next else {
                break;
            };
            p = s;
            let idx = (s - self.head_seq) as usize;
            // Its storage slot, found once for every read and write below.
            let k = self.rob.slot(idx);
            if self.rob.at(k).issued {
                self.unissued.remove(s);
                self.unissued_other.remove(s);
                continue;
            }
            // Only what the scan looks at is read here (the kind is copied out only to issue;
            // the entry is written back through `k`).
            let x = self.rob.at(k);
            let (dep, count, e_blocked) = (x.uop.dep, x.uop.count, x.blocked);
            let mem = Self::is_mem(&x.uop);
            // Every kind but integer work, loads and stores is a fence (see `fence_wait`).
            let fence = !mem && !matches!(x.uop.kind, UopKind::Alu { .. });
            // Operand ready?
            let ready_at = if dep == 0 || (dep as usize) > idx {
                0
            } else {
                let p = self.rob.at(self.rob.slot(idx - dep as usize));
                if p.issued {
                    p.done_at
                } else {
                    Ps::MAX
                }
            };
            // An offloaded copy must see every older store: it issues from the head of the
            // window once the store buffer has drained (it acts as a store fence), and so do
            // uncached accesses, ring steps, interrupts and serializing entries.
            let fence_wait = fence && (idx > 0 || !self.sb.is_empty());
            let blocked = (e_blocked && now < self.mem_blocked_until) || fence_wait;
            let can = ready_at <= now && (!mem || self.port_credit > 0) && !blocked;
            if !can {
                if ready_at != Ps::MAX && ready_at > now {
                    wake = wake.min(ready_at);
                }
                if mem && ready_at <= now && !blocked {
                    // Out of memory-port credit (else it would issue): it tries again once
                    // the credit is positive (see `port_wait` below).
                    port_wait = true;
                    mem_done_for_tick = !self.in_order;
                    #[cfg(test)]
                    {
                        mem_done_for_tick &= !self.full_scan;
                    }
                }
                if self.in_order {
                    break;
                }
                p += 1;
                continue;
            }
            // Tokens carry the hardware context in their top byte.
            let seq = (self.head_seq + idx as u64) | self.tag;
            let kind = self.rob.at(k).uop.kind;
            let done = match kind {
                UopKind::Alu { lat } => Access::At(now + Ps::from(lat.max(1)) * self.cycle_ps),
                UopKind::Load { addr, copy } => {
                    self.counters.loads += u64::from(count);
                    match unc.load(now, addr, copy, Token::Rob(seq)) {
                        Access::At(t) => Access::At(t + self.group_extra(count)),
                        other => other,
                    }
                }
                // A store executes (address and data ready) in a cycle; it writes after retiring.
                UopKind::Store { .. } => {
                    self.counters.stores += u64::from(count);
                    Access::At(now + self.cycle_ps + self.group_extra(count))
                }
                UopKind::Offload { id } => {
                    // Kept from emission until the entry issues; never missing (else the entry
                    // would wait for ever, which the run's stall check reports).
                    let k = self.offload_ops.iter().position(|o| o.0 == id);
                    debug_assert!(k.is_some(), "offload {id}: its operation was not kept");
                    match k {
                        Some(k) => {
                            let r = unc.offload(now, id, self.offload_ops[k].1, seq);
                            if r != Access::Retry {
                                self.counters.offloads += 1;
                            }
                            if matches!(r, Access::At(_) | Access::Pending) {
                                self.offload_ops.swap_remove(k);
                            }
                            r
                        }
                        None => Access::RetryAt(Ps::MAX),
                    }
                }
                UopKind::Uncached { addr, write } => unc.uncached(now, addr, write),
                UopKind::RingWait { ring, push, addr } => unc.ring_wait(now, ring, push, addr, seq),
                UopKind::RingCommit { ring, push, addr } => {
                    unc.ring_commit(now, ring, push, addr, seq)
                }
                UopKind::Interrupt { target } => unc.interrupt(now, target),
                UopKind::Serialize { cycles, .. } => {
                    let t = now + Ps::from(cycles.max(1)) * self.cycle_ps;
                    self.serialize_until = t;
                    Access::At(t)
                }
            };
            match done {
                Access::RetryAt(t) => {
                    refused = true;
                    if t != Ps::MAX {
                        wake = wake.min(t);
                    }
                    if self.in_order {
                        break;
                    }
                    p += 1;
                    continue;
                }
                Access::Retry => {
                    if let UopKind::Load { .. } = kind {
                        self.counters.loads -= u64::from(count);
                        self.mem_blocked_until = now + 64 * self.cycle_ps;
                        self.rob.at_mut(k).blocked = true;
                    }
                    retry = true;
                    if self.in_order {
                        break;
                    }
                    p += 1;
                    continue;
                }
                Access::At(t) => {
                    self.rob.at_mut(k).done_at = t;
                    wake = wake.min(t);
                }
                Access::Pending => self.rob.at_mut(k).done_at = Ps::MAX,
            }
            self.rob.at_mut(k).issued = true;
            self.unissued.remove(s);
            if !mem {
                self.unissued_other.remove(s);
            }
            p += 1;
            // Its sleepers are younger: they join the scan after `p`, so this cycle still
            // reaches them, as it would have.
            if self.rob.at(k).children != NO_SEQ {
                self.wake_children(k);
            }
            self.issue_credit -= i64::from(count);
            if mem {
                self.port_credit -= i64::from(count);
            }
            progress = true;
        }

        // Dispatch into the window.
        self.dispatch_credit = (self.dispatch_credit + w).min(w);
        while self.dispatch_credit > 0 {
            let Some(u) = self.pending.front().copied() else {
                break;
            };
            if self.rob_instrs + u.count > self.cfg.window && !self.rob.is_empty() {
                break;
            }
            let mem = Self::is_mem(&u);
            if mem && self.lsq_used + u.count > self.cfg.lsq && self.lsq_used > 0 {
                break;
            }
            self.pending.pop_front();
            if self.pending.len() < 64 {
                self.expand();
            }
            if mem {
                self.lsq_used += u.count;
            }
            let seq = self.head_seq + self.rob.len() as u64;
            // The set tells the window's entries apart, sleepers included (they join it later).
            self.unissued
                .reserve(self.head_seq, self.rob.len() as u64 + 1);
            self.unissued_other
                .reserve(self.head_seq, self.rob.len() as u64 + 1);
            // Out of order, an entry whose producer has no result time yet sleeps on it (see
            // `unissued`); in order, every entry stays in the scan, which stops at the first
            // that cannot issue.
            let mut sibling = NO_SEQ;
            let dep = u.dep as usize;
            let asleep = !self.in_order && dep != 0 && dep <= self.rob.len() && {
                let n = self.rob.len();
                let k = self.rob.slot(n - dep);
                let pr = self.rob.at_mut(k);
                let waits = !pr.issued || pr.done_at == Ps::MAX;
                if waits {
                    sibling = std::mem::replace(&mut pr.children, seq as u32);
                }
                waits
            };
            if !asleep {
                self.unissued.insert(seq);
                if !mem {
                    self.unissued_other.insert(seq);
                }
            }
            self.rob.push_back(Entry {
                uop: u,
                issued: false,
                blocked: false,
                done_at: Ps::MAX,
                children: NO_SEQ,
                sibling,
            });
            self.rob_instrs += u.count;
            self.dispatch_credit -= i64::from(u.count);
            progress = true;
        }

        let next_cycle = now + self.cycle_ps;
        if progress {
            return next_cycle;
        }
        // The memory ports' credit counts as well when it is below zero with no access waiting
        // for it (a group took several cycles' worth and what follows waits for memory): the
        // core may then sleep until memory answers, and the ticks it sleeps through must still
        // repay the ports (else, with one port, the access that follows the answer issued
        // cycles late).
        let overdrawn = self.dispatch_credit <= 0
            || self.issue_credit <= 0
            || self.retire_credit <= 0
            || self.port_credit < 0;
        if port_wait {
            // The tick at which the memory ports' credit is positive again, the ticks before
            // only repaying it (the next one when it is repaid in one, or there are no ports).
            let ports = i64::from(self.cfg.mem_ports);
            let ticks = if ports > 0 && self.port_credit <= 0 {
                -self.port_credit / ports + 1
            } else {
                1
            };
            port_wait = ticks > 1;
            wake = wake.min(now + ticks as Ps * self.cycle_ps);
        }
        // Nothing happened, and a stage's bandwidth credit is overdrawn, or a ready memory
        // access waits for overdrawn memory-port credit (a group of `count` instructions took
        // several cycles' worth): the ticks until it is repaid would change nothing but the
        // credits (and the stall count) if nothing else is due before, so they are skipped and
        // repaid at the next tick ([`Core::repay_skipped`]). Not when an uncore call was
        // refused (it is retried each tick), nor when an empty front end will be fed after
        // this tick with dispatch credit left (the next tick dispatches it; ops fed behind
        // others that could not dispatch change nothing), nor off a cycle boundary or where
        // the platform counts turns or switches contexts: then the core ticks the next cycle,
        // as it did before it skipped such ticks.
        let skips = overdrawn || port_wait;
        if skips
            && (self.shares_engine
                || refused
                || retry
                || sb_retry
                || (self.dispatch_credit > 0 && self.pending.is_empty() && self.wants_op())
                || !now.is_multiple_of(self.cycle_ps))
        {
            return next_cycle;
        }
        if skips {
            let w = i64::from(self.cfg.width).max(1);
            for c in [self.dispatch_credit, self.issue_credit, self.retire_credit] {
                if c <= 0 {
                    // The tick at which this credit is positive again.
                    wake = wake.min(now + (-c / w + 1) as Ps * self.cycle_ps);
                }
            }
            // Held-back accesses (a blocked load, the store buffer's writes) retry then.
            if self.mem_blocked_until > now {
                wake = wake.min(self.mem_blocked_until);
            }
            self.skipping = true;
            self.head_waited = self
                .rob
                .front()
                .is_some_and(|h| h.issued && h.done_at == Ps::MAX);
        }
        // A finished head held back by a full store buffer retires once a store write leaves
        // it: at a write's known time (`sb_next`) or when the memory answers one (the answer
        // wakes the core). Ticks before then would only find everything as it is (no uncore
        // call was refused, every bandwidth credit is already whole and the front end has
        // nothing new to dispatch), so the core sleeps instead of polling each cycle; it still
        // looks again when held-back accesses may retry (`mem_blocked_until`).
        let polls = !(sb_full
            && !self.polls_full_store_buffer
            && !refused
            && !retry
            && !sb_retry
            && self.port_credit > 0
            && (!self.pending.is_empty() || !self.wants_op()));
        if let Some(h) = self.rob.front() {
            // (Retired no earlier than its retire credit allows: see `overdrawn` above.)
            if h.issued && h.done_at != Ps::MAX && polls && self.retire_credit > 0 {
                wake = wake.min(h.done_at);
            }
        }
        if !polls && self.mem_blocked_until > now {
            wake = wake.min(self.mem_blocked_until);
        }
        wake = wake.min(sb_next);
        if retry || sb_retry {
            // Retried when the uncore frees what was missing (it pokes the core), or in any case
            // after a while, so a missed wake-up cannot hang the run.
            wake = wake.min(self.mem_blocked_until);
        }
        if !self.pending.is_empty() && self.rob.is_empty() {
            wake = wake.min(next_cycle);
        }
        // Align to a cycle boundary after now.
        if wake == Ps::MAX {
            return Ps::MAX;
        }
        let wake = wake.max(next_cycle);
        let cycles = (wake - now).div_ceil(self.cycle_ps);
        now + cycles * self.cycle_ps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::workload::DstPolicy;

    /// A copy or initialisation of any size holds a bounded number of micro-ops: expanding a
    /// terabyte at once took gigabytes a second until the machine ran out.
    #[test]
    fn a_huge_copy_or_init_is_expanded_a_chunk_at_a_time() {
        for op in [
            Op::Copy {
                src: 0,
                dst: 1 << 41,
                bytes: 1 << 40,
                policy: DstPolicy::AsGiven,
            },
            Op::Init {
                dst: 0,
                bytes: 1 << 40,
                value: 0,
            },
        ] {
            let mut core = Core::new(&CoreConfig::default(), 1);
            core.push_op(&op, CopyBy::Cpu);
            assert!(
                core.pending.len() <= EXPAND_AHEAD + 2,
                "{}",
                core.pending.len()
            );
            assert!(core.expanding.is_some() && !core.wants_op() && !core.drained());
        }
    }

    /// With `marked_bulk_ops` a page copy or zeroing is one load and one store per line and no
    /// loop instructions; a non-zero fill stays register-wide stores with their loop code.
    #[test]
    fn marked_bulk_ops_move_a_line_per_access() {
        let count = |marked: bool, op: Op| {
            let cfg = CoreConfig {
                marked_bulk_ops: marked,
                ..CoreConfig::default()
            };
            let mut core = Core::new(&cfg, 1);
            core.push_op(&op, CopyBy::Cpu);
            let (mut mem, mut alu) = (0u64, 0u64);
            while let Some(u) = core.pending.pop_front() {
                match u.kind {
                    UopKind::Load { .. } | UopKind::Store { .. } => mem += u64::from(u.count),
                    UopKind::Alu { .. } => alu += u64::from(u.count),
                    _ => {}
                }
                if core.pending.len() < 64 {
                    core.expand();
                }
            }
            (mem, alu)
        };
        let copy = Op::Copy {
            src: 0,
            dst: 1 << 20,
            bytes: 4096,
            policy: DstPolicy::AsGiven,
        };
        let zero = Op::Init {
            dst: 1 << 20,
            bytes: 4096,
            value: 0,
        };
        let fill = Op::Init {
            dst: 1 << 20,
            bytes: 4096,
            value: 0xA5,
        };
        assert_eq!(count(true, copy), (128, 0));
        assert_eq!(count(false, copy), (1024, 512));
        assert_eq!(count(true, zero), (64, 0));
        assert_eq!(count(false, zero), (512, 512));
        assert_eq!(count(true, fill), count(false, fill));
    }

    /// Expanding in chunks makes the same micro-ops, in the same order, as all at once.
    #[test]
    fn chunked_expansion_emits_the_whole_operation() {
        let mut core = Core::new(&CoreConfig::default(), 1);
        let op = Op::Copy {
            src: 8,
            dst: 4096 + 40,
            bytes: 100_000,
            policy: DstPolicy::AsGiven,
        };
        core.push_op(&op, CopyBy::Cpu);
        let mut stored = 0u64;
        let mut loads = 0u64;
        while let Some(u) = core.pending.pop_front() {
            match u.kind {
                UopKind::Load { .. } => loads += 1,
                UopKind::Store { .. } => stored += 1,
                _ => {}
            }
            if core.pending.len() < 64 {
                core.expand();
            }
        }
        assert!(core.expanding.is_none());
        // One load and one store per (source line, destination line) segment.
        assert_eq!(loads, stored);
        assert!(stored >= 100_000 / 64, "{stored}");
        assert!(core.wants_op());
    }

    /// A handler's operations arrive together: a CPU initialisation followed by a CPU copy each
    /// reach every destination line (the second does not take the first one's place).
    #[test]
    fn a_handlers_bulk_operations_are_each_expanded_whole() {
        let mut core = Core::new(&CoreConfig::default(), 1);
        core.begin_interrupt(10);
        core.push_op(
            &Op::Init {
                dst: 1 << 20,
                bytes: 65536,
                value: 0,
            },
            CopyBy::Cpu,
        );
        core.push_op(
            &Op::Copy {
                src: 2 << 20,
                dst: 3 << 20,
                bytes: 1024,
                policy: DstPolicy::AsGiven,
            },
            CopyBy::Cpu,
        );
        core.end_interrupt(10);
        let mut lines = std::collections::BTreeSet::new();
        for u in &core.pending {
            if let UopKind::Store { addr, .. } = u.kind {
                lines.insert(addr / 64);
            }
        }
        let zeroed = (0..1024).all(|k| lines.contains(&((1 << 20) / 64 + k)));
        let copied = (0..16).all(|k| lines.contains(&((3 << 20) / 64 + k)));
        assert!(zeroed && copied, "{} lines stored", lines.len());
    }

    /// An uncore that answers everything after a fixed time.
    struct Fixed(Ps);
    impl Uncore for Fixed {
        fn load(&mut self, now: Ps, _: u64, _: bool, _: Token) -> Access {
            Access::At(now + self.0)
        }
        fn store(&mut self, now: Ps, _: u64, _: bool, _: bool, _: Token) -> Access {
            Access::At(now + self.0)
        }
        fn offload(&mut self, now: Ps, _: u32, _: OffloadOp, _: u64) -> Access {
            Access::At(now + self.0)
        }
        fn uncached(&mut self, now: Ps, _: u64, _: bool) -> Access {
            Access::At(now + self.0)
        }
        fn ring_wait(&mut self, now: Ps, _: u16, _: bool, _: u64, _: u64) -> Access {
            Access::At(now + self.0)
        }
        fn ring_commit(&mut self, now: Ps, _: u16, _: bool, _: u64, _: u64) -> Access {
            Access::At(now + self.0)
        }
        fn interrupt(&mut self, now: Ps, _: u32) -> Access {
            Access::At(now + self.0)
        }
    }

    /// Interrupts are masked from a handler's entry until its return retires (the platform
    /// holds those that come meanwhile): `in_handler` holds while any handler entry is in
    /// flight and clears exactly when the return leaves the window, and the program's work
    /// still all retires after it.
    /// Stores answered by memory after a delay (through `memory_done`, as the platform does),
    /// loads after a fixed time.
    struct SlowStores {
        delay: Ps,
        answers: Vec<(Ps, Token)>,
        /// Loads answered through `memory_done` after this long (`None`: a fixed 20 cycles).
        load_delay: Option<Ps>,
    }
    impl Uncore for SlowStores {
        fn load(&mut self, now: Ps, _: u64, _: bool, token: Token) -> Access {
            match self.load_delay {
                Some(d) => {
                    self.answers.push((now + d, token));
                    Access::Pending
                }
                None => Access::At(now + 20 * 333),
            }
        }
        fn store(&mut self, now: Ps, _: u64, _: bool, _: bool, token: Token) -> Access {
            self.answers.push((now + self.delay, token));
            Access::Pending
        }
        fn offload(&mut self, now: Ps, _: u32, _: OffloadOp, _: u64) -> Access {
            Access::At(now)
        }
        fn uncached(&mut self, now: Ps, _: u64, _: bool) -> Access {
            Access::At(now)
        }
        fn ring_wait(&mut self, now: Ps, _: u16, _: bool, _: u64, _: u64) -> Access {
            Access::At(now)
        }
        fn ring_commit(&mut self, now: Ps, _: u16, _: bool, _: u64, _: u64) -> Access {
            Access::At(now)
        }
        fn interrupt(&mut self, now: Ps, _: u32) -> Access {
            Access::At(now)
        }
    }

    /// Runs a CPU copy whose stores each wait `delay` for memory, so the store buffer fills and
    /// holds finished stores at the window's head. `poll`: the core ticks every cycle; else
    /// only when it asked to or memory answered. Returns the times the retired count changed
    /// and the core's ticks.
    fn run_slow_stores(delay: Ps, bytes: u64, poll: bool) -> (Vec<(Ps, u64)>, u64) {
        let op = Op::Copy {
            src: 1 << 20,
            dst: 1 << 24,
            bytes,
            policy: DstPolicy::AsGiven,
        };
        let (retired, ticks, _) = run_ops(&[op], delay, None, poll, true);
        (retired, ticks)
    }
    /// The scan tests' program parts: a 4 KiB copy to a destination 8 bytes off a line, and `n`
    /// instructions with the given shares of loads and stores over a 64 KiB region.
    fn copy_and_compute(n: u64, loads: f64, stores: f64) -> (Op, Op) {
        let copy = Op::Copy {
            src: 1 << 20,
            dst: (1 << 24) + 8,
            bytes: 4096,
            policy: DstPolicy::AsGiven,
        };
        let compute = Op::Compute {
            n,
            loads,
            stores,
            region: Some((1 << 22, 1 << 16)),
        };
        (copy, compute)
    }
    /// Runs `check` on every case on cores of one, two and four memory ports, with a label
    /// naming the port count and the case.
    fn for_each_port_count(
        cases: &[(Vec<Op>, Ps, Option<Ps>)],
        mut check: impl FnMut(&CoreConfig, &[Op], Ps, Option<Ps>, &str),
    ) {
        for ports in [1, 2, 4] {
            let cfg = CoreConfig {
                mem_ports: ports,
                ..CoreConfig::default()
            };
            for (k, (ops, delay, load_delay)) in cases.iter().enumerate() {
                check(
                    &cfg,
                    ops,
                    *delay,
                    *load_delay,
                    &format!("ports {ports}, case {k}"),
                );
            }
        }
    }

    /// The scan tests' cases: (program, store delay, load delay), one with stores answered
    /// quickly and loads off a cycle boundary.
    fn scan_cases(copy: Op, compute: Op) -> Vec<(Vec<Op>, Ps, Option<Ps>)> {
        vec![
            (vec![copy], 333 * 40, None),
            (vec![copy], 333 * 240, Some(333 * 100)),
            (vec![compute], 333 * 10, Some(333 * 7)),
            (vec![compute, copy, compute], 333 * 90, Some(1000)),
            (vec![copy, compute], 500, Some(333 * 300 + 17)),
        ]
    }

    /// Two runs of one program that must not differ: same instructions (some), stall cycles,
    /// loads and stores.
    fn assert_same_counters(a: &CoreCounters, b: &CoreCounters, what: &str) {
        assert!(a.instructions > 0, "{what}");
        assert_eq!(a.instructions, b.instructions, "{what}");
        assert_eq!(a.stall_cycles, b.stall_cycles, "{what}");
        assert_eq!(a.loads, b.loads, "{what}");
        assert_eq!(a.stores, b.stores, "{what}");
    }

    /// Runs `ops` on a default core against [`SlowStores`]; `skip`: the core skips the ticks
    /// that would only repay overdrawn bandwidth credit (else it ticks every cycle then, as
    /// before it learnt to skip them). Returns the times the retired count changed, the ticks
    /// and the core's counters.
    fn run_ops(
        ops: &[Op],
        delay: Ps,
        load_delay: Option<Ps>,
        poll: bool,
        skip: bool,
    ) -> (Vec<(Ps, u64)>, u64, CoreCounters) {
        run_ops_with(
            ops,
            delay,
            load_delay,
            poll,
            skip,
            &CoreConfig::default(),
            false,
        )
    }

    /// [`run_ops`] on a core of `cfg`; `full_scan`: the issue scan visits every entry not yet
    /// issued, loads and stores included, after the memory ports' credit ran out.
    fn run_ops_with(
        ops: &[Op],
        delay: Ps,
        load_delay: Option<Ps>,
        poll: bool,
        skip: bool,
        cfg: &CoreConfig,
        full_scan: bool,
    ) -> (Vec<(Ps, u64)>, u64, CoreCounters) {
        let mut core = Core::new(cfg, 7);
        core.full_scan = full_scan;
        if !skip {
            core.share_engine();
        }
        let cy = core.cycle_ps;
        for op in ops {
            core.push_op(op, CopyBy::Cpu);
            core.expand_whole();
        }
        core.end_of_input();
        let mut unc = SlowStores {
            delay,
            answers: Vec::new(),
            load_delay,
        };
        let (mut now, mut next, mut ticks) = (0, 0, 0u64);
        let mut retired = vec![];
        while !core.drained() {
            assert!(now < 1_000_000_000, "the core never drained");
            let mut answered = false;
            unc.answers.retain(|&(t, tok)| {
                if t <= now {
                    core.memory_done(tok, t);
                    answered = true;
                }
                t > now
            });
            if poll || answered || next <= now {
                next = core.tick(now, &mut unc);
                ticks += 1;
                if retired.last().map(|r: &(Ps, u64)| r.1) != Some(core.counters.instructions) {
                    retired.push((now, core.counters.instructions));
                }
            }
            // Answers come on cycle boundaries, as the platform aligns them.
            let due = unc.answers.iter().map(|a| a.0.div_ceil(cy) * cy).min();
            now = if poll {
                now + cy
            } else {
                next.min(due.unwrap_or(Ps::MAX))
            };
        }
        (retired, ticks, core.counters)
    }

    /// Ticks that would only repay overdrawn bandwidth credit (a group of 8 or 16
    /// instructions on a 4-wide core) are skipped and repaid at the next tick: every
    /// instruction retires at the same time as on a core that ticks through them, with the same
    /// counters (stall cycles included: loads wait for memory), in fewer ticks; and at the
    /// same times as on a core that ticks every cycle.
    #[test]
    fn overdrawn_credit_ticks_are_skipped_and_repaid() {
        let (copy, compute) = copy_and_compute(2000, 0.25, 0.125);
        let cases = scan_cases(copy, compute);
        let (mut all_each, mut all_skipped) = (0, 0);
        for (k, (ops, delay, load_delay)) in cases.iter().enumerate() {
            let (ops, delay, load_delay) = (&ops[..], *delay, *load_delay);
            let (each, each_ticks, each_c) = run_ops(ops, delay, load_delay, false, false);
            let (skipped, skipped_ticks, skipped_c) = run_ops(ops, delay, load_delay, false, true);
            let (polled, _, _) = run_ops(ops, delay, load_delay, true, true);
            assert_eq!(each, skipped, "case {k}");
            assert_eq!(polled, skipped, "case {k}");
            assert_same_counters(&each_c, &skipped_c, &format!("case {k}"));
            assert!(
                skipped_ticks <= each_ticks,
                "case {k}: {skipped_ticks} ticks against {each_ticks}"
            );
            all_each += each_ticks;
            all_skipped += skipped_ticks;
        }
        // Some cases have nothing to skip (no group overdraws a credit with nothing else due).
        assert!(
            all_skipped < all_each,
            "{all_skipped} ticks against {all_each}"
        );
    }

    /// Once a ready load or store finds the memory ports' credit overdrawn, the issue scan
    /// leaves out the younger loads and stores: every instruction retires at the same time, with
    /// the same counters, as when it visits them all, on cores with one, two and four ports, in
    /// no more ticks.
    #[test]
    fn the_scan_leaves_out_loads_and_stores_once_the_ports_are_overdrawn() {
        let (copy, compute) = copy_and_compute(3000, 0.3, 0.2);
        for_each_port_count(
            &scan_cases(copy, compute),
            |cfg, ops, delay, load_delay, what| {
                let run = |full| run_ops_with(ops, delay, load_delay, false, true, cfg, full);
                let (full, full_ticks, full_c) = run(true);
                let (part, part_ticks, part_c) = run(false);
                assert_eq!(full, part, "{what}");
                assert_same_counters(&full_c, &part_c, what);
                assert!(part_ticks <= full_ticks, "{what}");
            },
        );
    }

    /// A core that sleeps between the ticks it asks for (and memory's answers) retires every
    /// instruction at the same time as one that ticks every cycle, with the same instructions,
    /// loads and stores, on cores with one, two and four memory ports (with one port, a load answered off a cycle
    /// boundary once found the event-driven core three cycles late).
    #[test]
    fn polled_and_event_driven_cores_agree_for_any_number_of_ports() {
        let (copy, compute) = copy_and_compute(2000, 0.25, 0.125);
        for_each_port_count(
            &scan_cases(copy, compute),
            |cfg, ops, delay, load_delay, what| {
                let run = |poll| run_ops_with(ops, delay, load_delay, poll, true, cfg, false);
                let (polled, _, polled_c) = run(true);
                let (slept, _, slept_c) = run(false);
                let first = polled.iter().zip(&slept).position(|(a, b)| a != b);
                assert!(
                    polled == slept,
                    "{what}: first differing retire at {first:?}: {:?} against {:?} ({} and {} entries)",
                    first.map(|i| polled[i]),
                    first.map(|i| slept[i]),
                    polled.len(),
                    slept.len()
                );
                // (Stall cycles are counted at ticks: one that sleeps until memory answers
                // counts fewer than one that ticks every cycle.)
                assert_eq!(polled_c.instructions, slept_c.instructions, "{what}");
                assert_eq!(polled_c.loads, slept_c.loads, "{what}");
                assert_eq!(polled_c.stores, slept_c.stores, "{what}");
            },
        );
    }

    /// A finished store held at the head by a full store buffer: the core sleeps until a write
    /// leaves the buffer instead of ticking every cycle, and retires everything at the same
    /// times as a core that ticks every cycle (a quarter of the ticks or fewer on long waits).
    #[test]
    fn a_full_store_buffer_sleeps_until_a_write_leaves_it() {
        for delay in [333 * 40, 333 * 240, 333 * 1000] {
            let (polled, polled_ticks) = run_slow_stores(delay, 8192, true);
            let (slept, slept_ticks) = run_slow_stores(delay, 8192, false);
            assert_eq!(polled, slept, "delay {delay}");
            // Short waits leave little to skip; long ones most of the cycles.
            let factor = if delay >= 333 * 240 { 4 } else { 1 };
            assert!(
                slept_ticks * factor < polled_ticks,
                "delay {delay}: {slept_ticks} ticks against {polled_ticks}"
            );
        }
    }

    #[test]
    fn a_handler_masks_interrupts_until_its_return_retires() {
        let mut core = Core::new(&CoreConfig::default(), 1);
        core.push_op(
            &Op::Compute {
                n: 400,
                loads: 0.0,
                stores: 0.0,
                region: None,
            },
            CopyBy::Cpu,
        );
        core.end_of_input();
        assert!(!core.in_handler());
        let mut unc = Fixed(5_000);
        let mut now = 0;
        for _ in 0..20 {
            now = core.tick(now, &mut unc).max(now + 1);
        }
        core.begin_interrupt(30);
        core.push_op(
            &Op::Compute {
                n: 200,
                loads: 0.0,
                stores: 1.0 / 8.0,
                region: Some((1 << 20, 4096)),
            },
            CopyBy::Cpu,
        );
        core.end_interrupt(30);
        let mut cleared_at = None;
        let mut steps = 0;
        while !core.drained() {
            assert!(steps < 1_000_000, "the core never drained");
            steps += 1;
            let before = core.in_handler();
            let ret_at_head = matches!(
                core.rob.front().map(|e| e.uop.kind),
                Some(UopKind::Serialize { ret: true, .. })
            );
            now = core.tick(now, &mut unc).max(now + 1);
            if before && !core.in_handler() {
                assert!(
                    ret_at_head,
                    "the handler ended before its return reached the head"
                );
                cleared_at.get_or_insert(now);
            }
            if cleared_at.is_none() {
                assert!(core.in_handler());
            }
        }
        assert!(cleared_at.is_some());
        assert!(!core.in_handler());
        // Entry, return, 200 handler and 400 program instructions all retired.
        assert_eq!(core.counters.instructions, 602);
        assert_eq!(core.counters.interrupts, 1);
    }
}
