//! The copy engine (Zhao et al., IEEE TC 2007, sections 4-5): triggered by the `ecpy`
//! instruction, placed `off-die` (in the memory controller hub, next to memory, across the bus
//! from the core) or `on-die` (beside the core, with access to its cache), in three modes:
//! `SYNC_NLB` (the instruction retires when the copy is done; core requests wait behind the
//! engine's at the memory controller), `SYNC_WLB` (the same, but core requests bypass the
//! engine's, which keep a guaranteed share) and `ASYNC` (with bypass, and the instruction retires
//! at an early notification once the copy is recorded in the pending copy table; loads and
//! stores that touch it stall until the final notification).
//!
//! The flow: the copy control unit translates the addresses and splits the copy at page
//! boundaries into commands; each travels to the engine (a bus transaction off-die); the engine
//! moves a command in batches of its stream buffer: reads of every source line of the batch, then
//! writes of every destination line, so that each phase streams through open rows. Source lines
//! are snooped: off-die, a line dirty in the core's cache comes from the cache over the bus;
//! on-die, any cached source line is read from the cache. Destination lines are invalidated in
//! the caches, or, with `dest_to_cache` (section 6.7), written into L2 instead of memory.
use crate::config::PlatformConfig;
use crate::core::{Access, OffloadOp, Token};
use crate::kernel::{ns, Ps};
use crate::memory_system::{Ev, Hier, MemReq, ReqKind};
use movelab_dram::request::Op as MemOp;
use std::collections::{BTreeMap, VecDeque};

#[derive(Debug, Clone)]
struct Cmd {
    copy: u32,
    src: u64,
    dst: u64,
    bytes: u64,
    /// Byte offset where the next batch starts.
    next: u64,
    /// Reads of the current batch not yet back.
    reads_out: u32,
    /// Destination lines of the current batch, written once its reads are back.
    batch_dst: Vec<u64>,
    writes_issued: u32,
    writes_done: u32,
}

#[derive(Debug, Clone)]
struct CopyState {
    seq: u64,
    issued_at: Ps,
    cmds_left: u32,
    asynchronous: bool,
    /// All its data is written (its notification may still be on the way).
    finished: bool,
}

#[derive(Debug, Clone)]
pub struct CopyEngine {
    on_die: bool,
    asynchronous: bool,
    buffer_lines: u64,
    dest_to_cache: bool,
    engine_mem: Ps,
    snoop_after: bool,
    /// Commands not yet finished, by id.
    cmds: BTreeMap<u32, Cmd>,
    next_cmd: u32,
    queue: VecDeque<u32>,
    active: Option<u32>,
    /// Copies not yet notified, by offload id.
    states: BTreeMap<u32, CopyState>,
    /// Copies finished, their summed issue-to-completion time, the last completion.
    pub copies: u64,
    pub copy_time: Ps,
    pub last_done: Ps,
    pub lines_read: u64,
    pub lines_from_cache: u64,
    pub lines_written: u64,
    /// SYNC_NLB: core requests held at the memory controller behind the copy in progress.
    pub(crate) held: Vec<u32>,
    no_bypass: bool,
}

impl CopyEngine {
    pub fn new(cfg: &PlatformConfig) -> CopyEngine {
        let c = &cfg.copy;
        CopyEngine {
            on_die: c.placement == "on-die",
            asynchronous: c.mode == "ASYNC",
            buffer_lines: u64::from(c.stream_buffer_lines),
            dest_to_cache: c.dest_to_cache,
            engine_mem: ns(c.engine_memory_ns),
            snoop_after: c.snoop_ack == "after",
            cmds: BTreeMap::new(),
            next_cmd: 0,
            queue: VecDeque::new(),
            active: None,
            states: BTreeMap::new(),
            copies: 0,
            copy_time: 0,
            last_done: 0,
            lines_read: 0,
            lines_from_cache: 0,
            lines_written: 0,
            held: Vec::new(),
            no_bypass: c.mechanism == "ce" && c.mode == "SYNC_NLB",
        }
    }

    /// SYNC_NLB with a copy in progress: core requests wait behind it.
    pub fn holds_core_requests(&self) -> bool {
        self.no_bypass && self.states.values().any(|c| !c.finished)
    }

    pub fn idle(&self) -> bool {
        self.queue.is_empty()
            && self.active.is_none()
            && self.held.is_empty()
            && self.states.is_empty()
    }
}

fn lines_of(addr: u64, bytes: u64) -> impl Iterator<Item = u64> {
    let first = addr / 64;
    let last = (addr + bytes - 1) / 64;
    first..=last
}

impl Hier {
    /// The core issued `ecpy` for offload `op`.
    pub(crate) fn engine_offload(&mut self, now: Ps, op: u32, o: OffloadOp, seq: u64) -> Access {
        let Some(src) = o.src else {
            // The engine copies; initialisation stays on the core (the platform never sends it).
            return Access::At(now + self.cycle_ps);
        };
        let asynchronous = self.engine.asynchronous;
        let dst_lines = (lines_of(o.dst, o.bytes).count()) as u64;
        if asynchronous
            && !self
                .pct
                .insert(op, Some((src, src + o.bytes)), (o.dst, o.dst + o.bytes))
        {
            return Access::Retry;
        }
        // Translation and the split into commands that stay within a page.
        let page = self.cfg.copy.page_bytes;
        let translate = self.cfg.copy.translate_cycles * self.cycle_ps;
        let msg = self.ic.engine_message;
        let mut t = now;
        let mut off = 0;
        let mut n = 0;
        while off < o.bytes {
            let s = src + off;
            let d = o.dst + off;
            let len = (page - s % page).min(page - d % page).min(o.bytes - off);
            t += translate;
            if !self.engine.on_die {
                // The ecpy request is a bus transaction: it waits for its turn in the address phase.
                t = self.ic.address_phase(t) - self.ic.address_ps();
            }
            let id = self.engine.next_cmd;
            self.engine.next_cmd = id.wrapping_add(1);
            self.engine.cmds.insert(
                id,
                Cmd {
                    copy: op,
                    src: s,
                    dst: d,
                    bytes: len,
                    next: 0,
                    reads_out: 0,
                    batch_dst: Vec::new(),
                    writes_issued: 0,
                    writes_done: 0,
                },
            );
            self.events.push(t + msg, Ev::EngineCmd(id));
            off += len;
            n += 1;
        }
        self.engine.states.insert(
            op,
            CopyState {
                seq,
                issued_at: now,
                cmds_left: n,
                asynchronous,
                finished: false,
            },
        );
        if asynchronous {
            // Early notification (section 5.3.2, Table 4).
            let ack = if self.engine.on_die {
                if self.engine.snoop_after {
                    ns(20.0) + ns(2.0) * 2 * dst_lines
                } else {
                    ns(30.0)
                }
            } else {
                // Off-die on a bus: the copy is globally observed once its request is on the bus.
                msg
            };
            Access::At(now + translate + ack)
        } else {
            Access::Pending
        }
    }

    pub(crate) fn engine_command_arrives(&mut self, now: Ps, cmd: u32) {
        self.engine.queue.push_back(cmd);
        if self.engine.active.is_none() {
            self.engine_next_command(now);
        }
    }

    fn engine_next_command(&mut self, now: Ps) {
        while let Some(c) = self.engine.queue.pop_front() {
            self.engine.active = Some(c);
            if self.engine_batch(now, c) {
                return;
            }
        }
        self.engine.active = None;
    }

    /// Starts the next batch of command `c`: reads of its source lines. False when the command
    /// has nothing left to read.
    fn engine_batch(&mut self, now: Ps, c: u32) -> bool {
        let Some(cmd) = self.engine.cmds.get(&c) else {
            return false;
        };
        if cmd.next >= cmd.bytes {
            return false;
        }
        let len = (self.engine.buffer_lines * 64).min(cmd.bytes - cmd.next);
        let (s, d) = (cmd.src + cmd.next, cmd.dst + cmd.next);
        let src_lines: Vec<u64> = lines_of(s, len).collect();
        let dst_lines: Vec<u64> = lines_of(d, len).collect();
        if let Some(cmd) = self.engine.cmds.get_mut(&c) {
            cmd.next += len;
            cmd.reads_out = src_lines.len() as u32;
            cmd.batch_dst = dst_lines;
        }
        for line in src_lines {
            self.engine.lines_read += 1;
            let addr = line * 64;
            let from_cache = if self.engine.on_die {
                self.cached_anywhere(line)
            } else {
                self.dirty_anywhere(line)
            };
            if from_cache {
                self.engine.lines_from_cache += 1;
                let at = if self.engine.on_die {
                    now + self.l2.hit_cycles * self.cycle_ps
                } else {
                    // Snooped over the bus: the cache supplies the line.
                    let ch = self.channel_of(addr);
                    let t = self.ic.request_arrives(now, ch);
                    self.ic.fill_arrives(t, 0)
                };
                let id = self.alloc_req(MemReq {
                    addr,
                    op: MemOp::Read,
                    engine: true,
                    kind: ReqKind::EngineRead { cmd: c },
                    copy: true,
                    channel: 0,
                });
                self.events.push(at, Ev::EngineData(id));
            } else {
                let at = if self.engine.on_die {
                    let ch = self.channel_of(addr);
                    self.ic.request_arrives(now, ch)
                } else {
                    // A coherent read: its snoop takes a turn on the bus, then the hub reads it.
                    self.ic.address_phase(now) + self.engine.engine_mem
                };
                self.send(
                    at,
                    addr,
                    MemOp::Read,
                    true,
                    ReqKind::EngineRead { cmd: c },
                    true,
                );
            }
        }
        true
    }

    /// When a line the memory controller returns at `t` reaches the engine.
    pub(crate) fn engine_data_arrives(&mut self, t: Ps, channel: u32) -> Ps {
        if self.engine.on_die {
            self.ic.fill_arrives(t, channel)
        } else {
            t + self.engine.engine_mem
        }
    }

    /// A source line reached the stream buffer.
    pub(crate) fn engine_data(&mut self, now: Ps, id: u32) {
        let Some(r) = self.release_req(id) else {
            return;
        };
        let ReqKind::EngineRead { cmd: c } = r.kind else {
            return;
        };
        let Some(cmd) = self.engine.cmds.get_mut(&c) else {
            return;
        };
        cmd.reads_out = cmd.reads_out.saturating_sub(1);
        if cmd.reads_out > 0 {
            return;
        }
        // The batch is in the buffer: write it out.
        let dst = std::mem::take(&mut cmd.batch_dst);
        cmd.writes_issued += dst.len() as u32;
        for line in dst {
            self.engine.lines_written += 1;
            let addr = line * 64;
            // A destination line is overwritten whole: a dirty copy need not be written back.
            let _ = self.invalidate_all(line);
            if self.engine.dest_to_cache {
                self.insert_l2(now, line, true, true);
                let at = now + self.l2.hit_cycles * self.cycle_ps;
                self.events.push(at, Ev::EngineCacheWrite(c));
            } else {
                let at = if self.engine.on_die {
                    let ch = self.channel_of(addr);
                    self.ic.writeback_arrives(now, ch)
                } else {
                    // The invalidating snoop takes a turn on the bus before the hub writes.
                    self.ic.address_phase(now) + self.engine.engine_mem
                };
                self.send(
                    at,
                    addr,
                    MemOp::Write,
                    true,
                    ReqKind::EngineWrite { cmd: c },
                    true,
                );
            }
        }
        // The buffer is free again: next batch, or the next command.
        if !self.engine_batch(now, c) {
            self.engine_next_command(now);
        }
    }

    /// One destination line of command `c` is written.
    pub(crate) fn engine_write_done(&mut self, t: Ps, c: u32) {
        let Some(cmd) = self.engine.cmds.get_mut(&c) else {
            return;
        };
        cmd.writes_done += 1;
        if cmd.next < cmd.bytes || cmd.reads_out > 0 || cmd.writes_done < cmd.writes_issued {
            return;
        }
        let copy = cmd.copy;
        self.engine.cmds.remove(&c);
        let Some(st) = self.engine.states.get_mut(&copy) else {
            return;
        };
        st.cmds_left -= 1;
        if st.cmds_left > 0 {
            return;
        }
        let issued_at = st.issued_at;
        st.finished = true;
        self.engine.copies_done(t, issued_at);
        // Core requests held behind it (SYNC_NLB) go to the memory controller now.
        if !self.engine.holds_core_requests() {
            for id in std::mem::take(&mut self.engine.held) {
                self.offer(t, id);
            }
        }
        // Final notification back to the core.
        let at = t + self.ic.engine_message;
        self.events.push(at, Ev::CopyDone(copy));
    }

    pub(crate) fn engine_notify_core(&mut self, now: Ps, copy: u32) {
        let Some(st) = self.engine.states.remove(&copy) else {
            return;
        };
        if st.asynchronous {
            self.pct.remove(copy);
            self.poke = true;
        } else {
            self.wakeups.push((Token::Rob(st.seq), now));
        }
    }
}

impl CopyEngine {
    /// Counts a finished copy. Its copy time is its service time: from its issue, or from the
    /// previous copy's completion if it had to wait for the engine, to its own completion.
    fn copies_done(&mut self, t: Ps, issued_at: Ps) {
        self.copies += 1;
        self.copy_time += t.saturating_sub(issued_at.max(self.last_done));
        self.last_done = self.last_done.max(t);
    }
}
