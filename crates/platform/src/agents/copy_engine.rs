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
//! boundaries into commands; each travels to the engine (a bus transaction off-die) and waits in
//! its queue of commands (section 5.4, Fig. 7); the engine moves a command in batches of its
//! stream buffer: reads of every source line of the batch, then writes of every destination line,
//! so that each phase streams through open rows. The stream buffer is shared by the queued
//! commands: while it has room, the next command's reads go out before the current one's are
//! back, so commands smaller than the buffer (a 1 KB packet is 16 of its 64 lines) keep up to a
//! buffer's worth of lines in flight and pay the memory latency once per buffer, not once per
//! command. A command whose lines overlap an earlier unfinished command's destination (or whose
//! destination overlaps an earlier one's lines) waits until the buffer has drained, so copies
//! still take effect in the order they were issued. Source lines
//! are snooped: off-die, a synchronous engine's snoop of each line it reads or writes takes a turn
//! in the bus's address phase (section 5.3.1), while an asynchronous copy's request on the bus is
//! its multiline snoop (sections 5.2.1, 5.3.2), so its lines take none; a line dirty in the core's
//! cache comes from the cache over the bus;
//! on-die, any cached source line is read from the cache. Destination lines are invalidated in
//! the caches, or, with `dest_to_cache` (section 6.7), written into L2 instead of memory. Once
//! the last line is written the engine sends the final notification, off-die a bus transaction
//! like the request (section 5.2.1); a copy's time runs from its `ecpy` to that notification
//! reaching the core.
use crate::agents::engine_snoop::{EngineSnoop, LineSnoop};
use crate::agents::{Agent, AgentReport};
use crate::config::platform::PlatformConfig;
use crate::iface::{Access, OffloadOp, Token};
use crate::memory::memory_system::{AgentId, MemReq, MemorySystem, ReqKind, Response};
use crate::sim::{ns, Ps};
use crate::stats::CopyLines;
use movelab_dram::request::Op as MemOp;
use std::collections::{BTreeMap, VecDeque};

/// The engine's own events.
const CMD: u16 = 0;
/// A source line reaches the stream buffer (id: the request).
const DATA: u16 = 1;
/// A destination line written into the cache (id: the command).
const CACHE_WRITE: u16 = 2;
/// A copy's final notification reaches the core (id: the copy).
const DONE: u16 = 3;
/// A command's last write is done and its last snoop ends (id: the command).
const SNOOPED: u16 = 4;

#[derive(Debug, Clone)]
struct Cmd {
    /// Issue order (commands before it in this order take effect first).
    order: u64,
    copy: u32,
    core: usize,
    src: u64,
    dst: u64,
    bytes: u64,
    /// Byte offset where the next batch starts.
    next: u64,
    /// Reads of the current batch not yet back.
    reads_out: u32,
    /// Destination lines of the current batch, written once its reads are back, and the values
    /// their source lines had when read (value shadow on, source and destination aligned alike).
    batch_dst: Vec<u64>,
    batch_vals: Vec<Option<u64>>,
    /// Source lines of the current batch (what it holds in the stream buffer).
    batch_lines: u64,
    writes_issued: u32,
    writes_done: u32,
    /// When the last snoop of its writes ends (snoops in parallel with memory): it is not done
    /// before then.
    snooped: Ps,
}

#[derive(Debug, Clone)]
struct CopyState {
    core: usize,
    seq: u64,
    issued_at: Ps,
    cmds_left: u32,
    asynchronous: bool,
    /// All its data is written (its notification may still be on the way).
    finished: bool,
}

#[derive(Debug, Clone)]
pub struct CopyEngine {
    id: AgentId,
    on_die: bool,
    asynchronous: bool,
    buffer_lines: u64,
    dest_to_cache: bool,
    engine_mem: Ps,
    snoop_after: bool,
    /// How a synchronous off-die engine's line snoops and memory accesses are ordered.
    snoop: EngineSnoop,
    page_bytes: u64,
    translate_cycles: u64,
    /// The pending copy table: a guard of the memory system.
    pct: usize,
    /// Commands not yet finished, by id.
    cmds: BTreeMap<u32, Cmd>,
    next_cmd: u32,
    /// Commands issued so far (the next command's `order`).
    issued: u64,
    /// Commands waiting for their next batch, in order.
    queue: VecDeque<u32>,
    /// Source lines in the stream buffer: batches whose reads went out and whose writes have
    /// not (at most `buffer_lines`, or one batch that alone fills it).
    buffered: u64,
    /// Copies not yet notified, by offload id.
    states: BTreeMap<u32, CopyState>,
    /// Copies finished, their summed issue-to-completion time, the last completion.
    copies: u64,
    copy_time: Ps,
    last_done: Ps,
    lines_read: u64,
    lines_from_cache: u64,
    lines_written: u64,
    no_bypass: bool,
    /// Destination writes count as done when the DRAM performs them, not when accepted.
    written: bool,
}

fn lines_of(addr: u64, bytes: u64) -> impl Iterator<Item = u64> {
    let first = addr / 64;
    let last = (addr + bytes - 1) / 64;
    first..=last
}

impl CopyEngine {
    pub fn new(id: AgentId, cfg: &PlatformConfig, sys: &mut MemorySystem) -> CopyEngine {
        let c = &cfg.copy;
        CopyEngine {
            id,
            on_die: c.placement == "on-die",
            asynchronous: c.mode == "ASYNC",
            buffer_lines: u64::from(c.stream_buffer_lines),
            dest_to_cache: c.dest_to_cache,
            engine_mem: ns(c.engine_memory_ns),
            snoop_after: c.snoop_ack == "after",
            snoop: EngineSnoop::new(&c.snoop_order),
            page_bytes: c.page_bytes,
            translate_cycles: c.translate_cycles,
            pct: sys.add_guard(c.pending_copy_entries as usize),
            cmds: BTreeMap::new(),
            next_cmd: 0,
            issued: 0,
            queue: VecDeque::new(),
            buffered: 0,
            states: BTreeMap::new(),
            copies: 0,
            copy_time: 0,
            last_done: 0,
            lines_read: 0,
            lines_from_cache: 0,
            lines_written: 0,
            no_bypass: c.mechanism == "ce" && c.mode == "SYNC_NLB",
            written: c.write_done == "written",
        }
    }

    /// SYNC_NLB with a copy in progress: core requests wait behind it.
    fn holds_core_requests(&self) -> bool {
        self.no_bypass && self.states.values().any(|c| !c.finished)
    }

    /// The off-die engine issues one line at `now`: when its access reaches the memory
    /// controller and when its snoop ends. Synchronous: the engine's coherent read or write of
    /// the line snoops the caches, a turn in the bus's address and snoop phase (section 5.3.1),
    /// before or beside the memory access (`copy.snoop_order`, [`EngineSnoop`]). Asynchronous:
    /// the copy request the core put on the bus was the multiline snoop, latched by every node
    /// (sections 5.2.1, 5.3.2: the copy "is globally observed when the request is placed on the
    /// bus", Table 4), so the hub reads and writes the lines without further bus transactions.
    fn line_snoop(&self, sys: &mut MemorySystem, now: Ps) -> LineSnoop {
        if self.asynchronous {
            LineSnoop {
                at_memory: now + self.engine_mem,
                snooped: now,
            }
        } else {
            self.snoop.issue(sys, now, self.engine_mem)
        }
    }

    fn command_arrives(&mut self, sys: &mut MemorySystem, now: Ps, cmd: u32) {
        self.queue.push_back(cmd);
        self.fill(sys, now);
    }

    /// The source lines of command `c`'s next batch (0 when it has nothing left to read).
    fn next_batch_lines(&self, c: u32) -> u64 {
        self.cmds.get(&c).map_or(0, |cmd| {
            if cmd.next >= cmd.bytes {
                return 0;
            }
            let len = (self.buffer_lines * 64).min(cmd.bytes - cmd.next);
            lines_of(cmd.src + cmd.next, len).count() as u64
        })
    }

    /// Whether command `c` touches a line that an earlier unfinished command writes, or writes a
    /// line an earlier one reads or writes (then it must wait for the earlier one's writes).
    fn depends_on_earlier(&self, c: u32) -> bool {
        let Some(cmd) = self.cmds.get(&c) else {
            return false;
        };
        let span = |a: u64, n: u64| (a / 64, (a + n - 1) / 64);
        let over = |(a, b): (u64, u64), (x, y): (u64, u64)| a <= y && x <= b;
        let (src, dst) = (span(cmd.src, cmd.bytes), span(cmd.dst, cmd.bytes));
        self.cmds.values().any(|e| {
            let (es, ed) = (span(e.src, e.bytes), span(e.dst, e.bytes));
            e.order < cmd.order && (over(src, ed) || over(dst, ed) || over(dst, es))
        })
    }

    /// Starts batches of the queued commands, in order, while the stream buffer has room: an
    /// empty buffer always takes the next batch; a busy one takes it if its lines fit and it does
    /// not depend on an earlier unfinished command.
    fn fill(&mut self, sys: &mut MemorySystem, now: Ps) {
        while let Some(&c) = self.queue.front() {
            let need = self.next_batch_lines(c);
            if need == 0 {
                self.queue.pop_front();
                continue;
            }
            if self.buffered > 0
                && (self.buffered + need > self.buffer_lines || self.depends_on_earlier(c))
            {
                return;
            }
            self.queue.pop_front();
            self.buffered += need;
            self.batch(sys, now, c);
        }
    }

    /// Starts the next batch of command `c` (which has one): reads of its source lines.
    fn batch(&mut self, sys: &mut MemorySystem, now: Ps, c: u32) {
        let Some(cmd) = self.cmds.get(&c) else {
            return;
        };
        if cmd.next >= cmd.bytes {
            return;
        }
        let core = cmd.core;
        let len = (self.buffer_lines * 64).min(cmd.bytes - cmd.next);
        let (s, d) = (cmd.src + cmd.next, cmd.dst + cmd.next);
        let src_lines: Vec<u64> = lines_of(s, len).collect();
        let dst_lines: Vec<u64> = lines_of(d, len).collect();
        // The values the source lines hold as they are read (value shadow on): what each
        // destination line receives, when source and destination share their offset in the line.
        let aligned = s % 64 == d % 64;
        let mut vals = Vec::with_capacity(dst_lines.len());
        let mut from = Vec::with_capacity(src_lines.len());
        for &line in &src_lines {
            let from_cache = !sys.stale_copy_sources
                && if self.on_die {
                    sys.cached_anywhere(line)
                } else {
                    sys.dirty_anywhere(line)
                };
            vals.push(sys.read_value(line, from_cache).filter(|_| aligned));
            from.push(from_cache);
        }
        if let Some(cmd) = self.cmds.get_mut(&c) {
            cmd.next += len;
            cmd.batch_lines = src_lines.len() as u64;
            cmd.reads_out = src_lines.len() as u32;
            cmd.batch_dst = dst_lines;
            cmd.batch_vals = vals;
        }
        let kind = ReqKind::Agent {
            agent: self.id,
            tag: c,
        };
        for (line, from_cache) in src_lines.into_iter().zip(from) {
            self.lines_read += 1;
            let addr = line * 64;
            if from_cache {
                self.lines_from_cache += 1;
                let at = if self.on_die {
                    now + sys.l2_hit_ps(core)
                } else {
                    // Snooped over the bus: the cache supplies the line.
                    let ch = sys.channel_of(addr);
                    let t = sys.ic().request_arrives(now, ch);
                    sys.ic().fill_arrives(t, 0)
                };
                let id = sys.alloc_req(MemReq {
                    addr,
                    op: MemOp::Read,
                    engine: true,
                    kind,
                    copy: true,
                    channel: 0,
                });
                sys.schedule(at, self.id, DATA, id);
            } else if self.on_die {
                let ch = sys.channel_of(addr);
                let at = sys.ic().request_arrives(now, ch);
                sys.send(at, addr, MemOp::Read, true, kind, true);
            } else {
                let s = self.line_snoop(sys, now);
                let req = sys.send(s.at_memory, addr, MemOp::Read, true, kind, true);
                self.snoop.read_sent(req, s);
            }
        }
    }

    /// A source line reached the stream buffer.
    fn data(&mut self, sys: &mut MemorySystem, now: Ps, id: u32) {
        let Some(r) = sys.release_req(id) else {
            return;
        };
        let ReqKind::Agent { tag: c, .. } = r.kind else {
            return;
        };
        let Some(cmd) = self.cmds.get_mut(&c) else {
            return;
        };
        cmd.reads_out = cmd.reads_out.saturating_sub(1);
        if cmd.reads_out > 0 {
            return;
        }
        // The batch is in the buffer: write it out.
        let core = cmd.core;
        let more = cmd.next < cmd.bytes;
        let read = cmd.batch_lines;
        let dst = std::mem::take(&mut cmd.batch_dst);
        let vals = std::mem::take(&mut cmd.batch_vals);
        cmd.writes_issued += dst.len() as u32;
        for (i, line) in dst.into_iter().enumerate() {
            self.lines_written += 1;
            let addr = line * 64;
            let value = vals.get(i).copied().flatten();
            if self.dest_to_cache {
                sys.push_value_to_l2(now, core, line, true, value);
                let at = now + sys.l2_hit_ps(core);
                sys.schedule(at, self.id, CACHE_WRITE, c);
            } else {
                // A destination line is overwritten whole: a dirty copy need not be written back.
                sys.agent_write_value(line, value);
                let at = if self.on_die {
                    let ch = sys.channel_of(addr);
                    sys.ic().writeback_arrives(now, ch)
                } else {
                    let s = self.line_snoop(sys, now);
                    if let Some(cmd) = self.cmds.get_mut(&c) {
                        cmd.snooped = cmd.snooped.max(s.snooped);
                    }
                    s.at_memory
                };
                // Done when the controller accepts it (a posted write), or, with one memory
                // queue and no write buffer (`write_done = "written"`), when the DRAM performs it.
                let kind = if self.written {
                    ReqKind::Writeback {
                        notify: Some((self.id, c)),
                    }
                } else {
                    ReqKind::Agent {
                        agent: self.id,
                        tag: c,
                    }
                };
                sys.send(at, addr, MemOp::Write, true, kind, true);
            }
        }
        // Its lines leave the buffer: the command's next batch goes first, then what fits.
        self.buffered = self.buffered.saturating_sub(read);
        if more {
            self.queue.push_front(c);
        }
        self.fill(sys, now);
    }

    /// One destination line of command `c` is written.
    fn write_done(&mut self, sys: &mut MemorySystem, t: Ps, c: u32) {
        let Some(cmd) = self.cmds.get_mut(&c) else {
            return;
        };
        cmd.writes_done += 1;
        if cmd.next < cmd.bytes || cmd.reads_out > 0 || cmd.writes_done < cmd.writes_issued {
            return;
        }
        if cmd.snooped > t {
            // Snoops in parallel with memory: the last write is done, its snoop not yet.
            let at = cmd.snooped;
            sys.schedule(at, self.id, SNOOPED, c);
            return;
        }
        self.command_done(sys, t, c);
    }

    /// Command `c`'s every line is written (and snooped).
    fn command_done(&mut self, sys: &mut MemorySystem, t: Ps, c: u32) {
        let Some(cmd) = self.cmds.get(&c) else {
            return;
        };
        let copy = cmd.copy;
        self.cmds.remove(&c);
        let Some(st) = self.states.get_mut(&copy) else {
            return;
        };
        st.cmds_left -= 1;
        if st.cmds_left > 0 {
            return;
        }
        let issued_at = st.issued_at;
        st.finished = true;
        // Core requests held behind it (SYNC_NLB) go to the memory controller now.
        sys.hold_core_requests = self.holds_core_requests();
        if !sys.hold_core_requests {
            sys.release_held(t);
        }
        // Final notification back to the core. Off the die it is a bus transaction (section
        // 5.2.1: the engine "will place the completion status on the bus"), so, like the ecpy
        // request, it waits for its turn in the address phase.
        let ic = sys.ic();
        let sent = if self.on_die {
            t
        } else {
            ic.address_phase(t) - ic.address_ps()
        };
        let at = sent + ic.engine_message;
        self.copies_done(at, issued_at);
        sys.schedule(at, self.id, DONE, copy);
    }

    fn notify_core(&mut self, sys: &mut MemorySystem, now: Ps, copy: u32) {
        let Some(st) = self.states.remove(&copy) else {
            return;
        };
        if st.asynchronous {
            sys.guards[self.pct].remove(copy);
            sys.poke_all();
        } else {
            sys.wake(st.core, Token::Rob(st.seq), now);
        }
    }

    /// Counts a finished copy. Its copy time is its service time as the core sees it: from its
    /// issue, or from the previous copy's completion if it had to wait for the engine, to its
    /// completion notification reaching the core (when a synchronous `ecpy` can retire), the
    /// counterpart of a CPU copy's time, which ends when the core has done it.
    fn copies_done(&mut self, t: Ps, issued_at: Ps) {
        self.copies += 1;
        self.copy_time += t.saturating_sub(issued_at.max(self.last_done));
        self.last_done = self.last_done.max(t);
    }
}

impl Agent for CopyEngine {
    fn name(&self) -> &'static str {
        "copy-engine"
    }

    /// The core issued `ecpy` for offload `op`.
    fn offload(
        &mut self,
        sys: &mut MemorySystem,
        now: Ps,
        core: usize,
        op: u32,
        o: OffloadOp,
        seq: u64,
    ) -> Access {
        let cycle = sys.cycle_ps(core);
        let Some(src) = o.src else {
            // The engine copies; initialisation stays on the core (the platform never sends it).
            return Access::At(now + cycle);
        };
        let asynchronous = self.asynchronous;
        let dst_lines = (lines_of(o.dst, o.bytes).count()) as u64;
        if asynchronous
            && !sys.guards[self.pct].insert(
                op,
                Some((src, src + o.bytes)),
                (o.dst, o.dst + o.bytes),
            )
        {
            return Access::Retry;
        }
        // Translation and the split into commands that stay within a page.
        let page = self.page_bytes;
        let translate = self.translate_cycles * cycle;
        let msg = sys.ic().engine_message;
        let mut t = now;
        let mut off = 0;
        let mut n = 0;
        while off < o.bytes {
            let s = src + off;
            let d = o.dst + off;
            let len = (page - s % page).min(page - d % page).min(o.bytes - off);
            t += translate;
            if !self.on_die {
                // The ecpy request is a bus transaction: it waits for its turn in the address phase.
                let ic = sys.ic();
                t = ic.address_phase(t) - ic.address_ps();
            }
            let id = self.next_cmd;
            self.next_cmd = id.wrapping_add(1);
            self.cmds.insert(
                id,
                Cmd {
                    copy: op,
                    core,
                    src: s,
                    dst: d,
                    bytes: len,
                    next: 0,
                    reads_out: 0,
                    batch_dst: Vec::new(),
                    batch_vals: Vec::new(),
                    batch_lines: 0,
                    order: self.issued,
                    writes_issued: 0,
                    writes_done: 0,
                    snooped: 0,
                },
            );
            self.issued += 1;
            sys.schedule(t + msg, self.id, CMD, id);
            off += len;
            n += 1;
        }
        self.states.insert(
            op,
            CopyState {
                core,
                seq,
                issued_at: now,
                cmds_left: n,
                asynchronous,
                finished: false,
            },
        );
        sys.hold_core_requests = self.holds_core_requests();
        if asynchronous {
            // Early notification (section 5.3.2, Table 4).
            if !self.on_die {
                // Off-die on a bus: the copy is globally observed once its requests are on the bus
                // (section 6.4, beside Table 4); each command's request is its own bus
                // transaction (section 5.1.3), so that is when the last one, which waited for its
                // address-phase turn above, has been sent.
                return Access::At(t + msg);
            }
            let ack = if self.snoop_after {
                ns(20.0) + ns(2.0) * 2 * dst_lines
            } else {
                ns(30.0)
            };
            Access::At(now + translate + ack)
        } else {
            Access::Pending
        }
    }

    fn event(&mut self, sys: &mut MemorySystem, now: Ps, kind: u16, id: u32) {
        match kind {
            CMD => self.command_arrives(sys, now, id),
            DATA => self.data(sys, now, id),
            CACHE_WRITE => self.write_done(sys, now, id),
            SNOOPED => self.command_done(sys, now, id),
            _ => self.notify_core(sys, now, id),
        }
    }

    fn response(&mut self, sys: &mut MemorySystem, now: Ps, r: Response) {
        match r {
            Response::ReadDone { req, channel, .. } => {
                // When the line the memory controller returned reaches the engine.
                let at = if self.on_die {
                    sys.ic().fill_arrives(now, channel)
                } else {
                    self.snoop.read_back(req, now + self.engine_mem)
                };
                sys.schedule(at, self.id, DATA, req);
            }
            Response::WriteAccepted { tag } | Response::Flushed { tag } => {
                self.write_done(sys, now, tag)
            }
            Response::BulkDone { .. } => {}
        }
    }

    fn idle(&self) -> bool {
        self.queue.is_empty() && self.buffered == 0 && self.states.is_empty()
    }

    fn report(&self) -> AgentReport {
        AgentReport {
            ops: self.copies,
            op_time: self.copy_time,
            last_done: self.last_done,
            lines: CopyLines {
                engine_read: self.lines_read,
                engine_from_cache: self.lines_from_cache,
                engine_written: self.lines_written,
                ..Default::default()
            },
            device: None,
            small_cores: None,
        }
    }
}
