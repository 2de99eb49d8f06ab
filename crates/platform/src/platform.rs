//! The platform: a core above its caches, the interconnect, the memory controllers and DRAM of
//! movelab-dram (through its [`MemoryPort`]) and the copy mechanism, wired together and run by
//! the event kernel. [`Hier`] is everything below the core (the core sees it through the
//! [`Uncore`] trait); the copy engine and the in-memory mechanisms add their behaviour to it in
//! their own files. [`run`] runs a workload to the end and returns [`PlatformStats`].
use crate::config::PlatformConfig;
use crate::core::{CopyBy, Core};
use crate::error::PlatformError;
use crate::kernel::Ps;
pub use crate::memory_system::Hier;
use crate::stats::{CacheStats, CopyLines, PlatformStats};
use crate::workload::{DstPolicy, Op, Workload};
use movelab_dram::port::MemoryPort;

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
