//! The memory port: the memory system driven step by step from outside (by the platform model)
//! instead of from a trace. A driver offers line requests tagged with its own ids and a class
//! (core or copy engine), hands over bulk copy/init operations, advances the controllers to a
//! cycle of its choosing, and collects what finished. Times are in DRAM clock cycles.
use crate::bulk::multi_row_copy::check_copies;
use crate::bulk::ops::BulkOps;
use crate::bulk::split::BulkMech;
use crate::command::{log_header, CommandSink, LogHeader};
use crate::config::Config;
use crate::controller::{Controller, Done, Tag};
use crate::error::Error;
use crate::mapper::{self, AddressMapper, Location};
use crate::request::{BulkOp, Op};
use crate::spec::DramSpec;
use crate::stats::collect::collect_stats;
use crate::stats::Stats;

/// Something the memory system finished: a line request (by the driver's id) or a bulk operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// DRAM cycle at which it is complete (read data returned, write data written, bulk op done).
    pub cycle: u64,
    pub id: u32,
    /// A bulk operation (submitted with [`MemoryPort::bulk`]) rather than a line request.
    pub bulk: bool,
}

/// The memory controllers of every channel behind one port.
pub struct MemoryPort {
    config: Config,
    spec: DramSpec,
    mapper: Box<dyn AddressMapper>,
    chans: Vec<Controller>,
    seq: u64,
    bulk: BulkOps,
    completions: Vec<Completion>,
    log: Option<Box<dyn CommandSink>>,
}

impl MemoryPort {
    /// Builds the memory system `config` describes.
    pub fn new(config: &Config) -> Result<MemoryPort, Error> {
        let spec = config.resolve("config")?;
        let cc = &config.controller;
        let mapper = mapper::build(&cc.mapper, &spec.org, cc.bank_xor)
            .ok_or_else(|| Error::Request(format!("unknown mapper '{}'", cc.mapper)))?;
        // The controllers skip the cycles in which nothing can issue (see
        // `Controller::set_lookahead`); `step` keeps the contract by returning the next cycle
        // whenever a command issued while the bulk engine may wait for the space it freed, and a
        // driver retries refused offers right after each step.
        let chans = (0..spec.org.channels)
            .map(|c| {
                let mut ch = Controller::new(c, &spec, cc);
                ch.set_lookahead(true);
                ch
            })
            .collect();
        Ok(MemoryPort {
            config: config.clone(),
            spec,
            mapper,
            chans,
            seq: 0,
            bulk: BulkOps::with_copy(config.controller.copy.model()),
            completions: Vec::new(),
            log: None,
        })
    }

    /// Sends every command the controllers issue to `sink` (e.g. the independent checker).
    pub fn set_command_log(&mut self, sink: Box<dyn CommandSink>) {
        self.log = Some(sink);
    }

    /// The header a command log of this memory system starts with.
    pub fn log_header(&self) -> LogHeader {
        log_header(&self.config, &self.spec)
    }

    pub fn spec(&self) -> &DramSpec {
        &self.spec
    }

    /// The energy of one command of each kind on a rank of this memory system (pJ; all zero where
    /// the standard's currents are not available), from the same formulas the run's energy uses.
    pub fn command_energy(&self) -> crate::energy::CommandEnergy {
        crate::energy::CommandEnergy::new(
            &self.spec,
            self.config.energy.io_pj_per_bit,
            self.config.energy.bank_rho,
        )
    }

    /// The DRAM clock period in picoseconds.
    pub fn tck_ps(&self) -> u64 {
        self.spec.t("tCK_ps")
    }

    /// Where an address lives.
    pub fn locate(&self, addr: u64) -> Location {
        self.mapper.map(addr)
    }

    /// The line-aligned address of a location (the mapper's inverse).
    pub fn address_of(&self, loc: &Location) -> u64 {
        self.mapper.unmap(loc)
    }

    /// Whether the queue a request to `addr` would join has room.
    pub fn can_accept(&self, addr: u64, op: Op) -> bool {
        let loc = self.mapper.map(addr);
        self.chans[loc.channel as usize].can_accept(op)
    }

    /// Offers a line request at cycle `now`; false (and nothing queued) when its queue is full.
    pub fn offer(&mut self, addr: u64, op: Op, engine: bool, id: u32, now: u64) -> bool {
        let loc = self.mapper.map(addr);
        let ch = &mut self.chans[loc.channel as usize];
        if !ch.can_accept(op) {
            return false;
        }
        self.seq += 1;
        ch.enqueue_from(&loc, op, now, self.seq, Tag::Port { id }, engine);
        true
    }

    /// Hands a bulk copy or initialisation to the memory controllers at cycle `now`; it runs by
    /// the config's `controller.bulk` mechanism (`rowclone` splits it into FPM/PSM jobs and
    /// channel lines; `baseline` moves every line over the channel). Its completion carries `id`.
    pub fn bulk(&mut self, op: BulkOp, id: u32, now: u64) -> Result<(), Error> {
        let org = &self.spec.org;
        if op.bytes == 0 {
            return Err(Error::Request("a bulk operation of 0 bytes".into()));
        }
        if op.bytes > org.capacity_bytes() {
            return Err(Error::Request(format!(
                "a bulk operation of {} bytes exceeds the memory capacity ({} bytes)",
                op.bytes,
                org.capacity_bytes()
            )));
        }
        if let crate::request::BulkKind::Replicate { copies } = op.kind {
            check_copies(&self.spec.org, copies).map_err(Error::Request)?;
        }
        let mech = BulkMech::of(&self.config.controller.bulk);
        if let Some(t) = self.bulk.submit(
            &op,
            id,
            now,
            mech,
            self.mapper.as_ref(),
            &self.spec.org,
            &mut self.chans,
            &mut self.seq,
        ) {
            self.completions.push(Completion {
                cycle: t,
                id,
                bulk: true,
            });
        }
        Ok(())
    }

    fn pump(&mut self, now: u64) -> bool {
        self.bulk.pump(
            now,
            self.config.controller.bulk_buffer_lines,
            self.config.controller.bulk_done_at_acceptance(),
            self.mapper.as_ref(),
            &mut self.chans,
            &mut self.seq,
        )
    }

    /// Lets every controller issue at most one command at cycle `now` (cycles must not go
    /// backwards) and returns the next cycle at which anything can happen (`u64::MAX`: nothing
    /// is queued). Finished work is collected by [`MemoryPort::drain`].
    pub fn step(&mut self, now: u64) -> u64 {
        self.pump(now);
        let mut next = u64::MAX;
        let mut issued = false;
        for ch in self.chans.iter_mut() {
            next = next.min(ch.tick(now, self.log.as_deref_mut()));
            issued |= ch.issued_at(now);
            for Done { time, tag, op } in ch.done.drain(..) {
                match tag {
                    Tag::Port { id } => self.completions.push(Completion {
                        cycle: time,
                        id,
                        bulk: false,
                    }),
                    _ => self.bulk.on_done(time, tag, op),
                }
            }
        }
        for (id, cycle) in self.bulk.settle(now) {
            self.completions.push(Completion {
                cycle,
                id,
                bulk: true,
            });
        }
        if self.pump(now) || (issued && !self.bulk.quiet()) {
            next = now + 1;
        }
        if let Some(t) = self.bulk.next_event() {
            next = next.min(t.max(now + 1));
        }
        if next == u64::MAX && !self.idle() {
            next = now + 1;
        }
        next
    }

    /// Nothing queued, running or pending.
    pub fn idle(&self) -> bool {
        self.chans.iter().all(|c| c.idle()) && self.bulk.quiet()
    }

    /// What finished since the last call, in no particular order.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Completion> {
        self.completions.drain(..)
    }

    /// The run's DRAM statistics, settling time-weighted accounting at cycle `end`.
    pub fn stats(&mut self, end: u64) -> Stats {
        let mut end = end.max(self.bulk.end);
        for ch in &self.chans {
            end = end.max(ch.counters.last_done);
        }
        collect_stats(
            &self.config,
            &self.spec,
            &mut self.chans,
            end,
            &self.bulk.totals,
        )
    }
}
