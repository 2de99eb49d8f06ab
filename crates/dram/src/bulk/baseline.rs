//! The baseline bulk mechanism: the memory controller's copy engine moves every line over the
//! channel, reading source lines into a stream buffer of `bulk_buffer_lines` lines and then writing
//! them out (initialisation only writes). With a one-page buffer a 4 KB copy is the serial
//! read-then-write sequence of the RowClone paper's baseline (Figure 6). The operation is done when
//! its last write is performed, or (`controller.bulk_write_done = "accepted"`) when its last read
//! has returned and its last write is in the controller's write queue.
use crate::controller::{Controller, Tag};
use crate::mapper::AddressMapper;
use crate::request::Op;
use std::collections::VecDeque;

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Phase {
    Fill,
    Drain,
}

/// One bulk operation's channel part in progress.
#[derive(Debug)]
pub struct BaselineOp {
    pub op: u32,
    lines: Vec<(Option<u64>, u64)>,
    next: usize,
    batch: VecDeque<u64>,
    reads_in_flight: u32,
    writes_in_flight: u32,
    phase: Phase,
    /// Completion time of its last write so far.
    pub last_done: u64,
    /// Its completion on acceptance was reported (see [`BaselineOp::all_accepted`]).
    pub reported: bool,
}

impl BaselineOp {
    pub fn new(op: u32, lines: Vec<(Option<u64>, u64)>) -> BaselineOp {
        BaselineOp {
            op,
            lines,
            next: 0,
            batch: VecDeque::new(),
            reads_in_flight: 0,
            writes_in_flight: 0,
            phase: Phase::Fill,
            last_done: 0,
            reported: false,
        }
    }

    /// Every source line read and every destination line handed to the controllers' write
    /// queues (some writes may still be waiting there).
    pub fn all_accepted(&self) -> bool {
        self.next >= self.lines.len() && self.batch.is_empty() && self.reads_in_flight == 0
    }

    /// All lines written.
    pub fn finished(&self) -> bool {
        self.all_accepted() && self.writes_in_flight == 0
    }

    pub fn on_done(&mut self, op: Op, time: u64) {
        match op {
            Op::Read => self.reads_in_flight = self.reads_in_flight.saturating_sub(1),
            Op::Write => {
                self.writes_in_flight = self.writes_in_flight.saturating_sub(1);
                self.last_done = self.last_done.max(time);
            }
        }
    }

    /// Offers as many reads or writes to the channels as they accept now.
    /// Returns whether it queued anything.
    pub fn pump(
        &mut self,
        now: u64,
        buffer: usize,
        mapper: &dyn AddressMapper,
        chans: &mut [Controller],
        seq: &mut u64,
    ) -> bool {
        let before = *seq;
        loop {
            match self.phase {
                Phase::Fill => {
                    if self.batch.len() >= buffer || self.next >= self.lines.len() {
                        if self.reads_in_flight > 0 {
                            return *seq != before;
                        }
                        if self.batch.is_empty() {
                            return *seq != before;
                        }
                        self.phase = Phase::Drain;
                        continue;
                    }
                    let (src, dst) = self.lines[self.next];
                    if let Some(src) = src {
                        let loc = mapper.map(src);
                        let ch = &mut chans[loc.channel as usize];
                        if !ch.can_accept(Op::Read) {
                            return *seq != before;
                        }
                        *seq += 1;
                        ch.enqueue(&loc, Op::Read, now, *seq, Tag::BulkLine { op: self.op });
                        self.reads_in_flight += 1;
                    }
                    self.batch.push_back(dst);
                    self.next += 1;
                }
                Phase::Drain => {
                    let Some(&dst) = self.batch.front() else {
                        self.phase = Phase::Fill;
                        if self.next >= self.lines.len() {
                            return *seq != before;
                        }
                        continue;
                    };
                    let loc = mapper.map(dst);
                    let ch = &mut chans[loc.channel as usize];
                    if !ch.can_accept(Op::Write) {
                        return *seq != before;
                    }
                    *seq += 1;
                    ch.enqueue(&loc, Op::Write, now, *seq, Tag::BulkLine { op: self.op });
                    self.writes_in_flight += 1;
                    self.batch.pop_front();
                }
            }
        }
    }
}
