//! The memory system: an in-order frontend that offers a trace's items, the address mapper, one
//! controller per channel, and the bulk-operation bookkeeping. [`simulate`] runs a trace to the end
//! and returns its [`Stats`]; time advances straight to the next cycle at which anything can happen.
use crate::bulk::multi_row_copy::check_copies;
use crate::bulk::ops::BulkOps;
use crate::bulk::split::BulkMech;
use crate::command::CommandSink;
use crate::config::Config;
use crate::controller::{Controller, Done, Tag};
use crate::error::{Error, TraceError};
use crate::interrupt;
use crate::mapper::{self, AddressMapper};
use crate::request::{BulkKind, TraceItem};
use crate::stats::Stats;

// Their old paths (they moved below `system`, so that `port` needs nothing from it).
pub use crate::bulk::ops::BulkTotals;
pub use crate::command::log_header;
pub use crate::stats::collect::collect_stats;

mod blocked;
mod lookahead;

/// Options of a run besides the config and the trace.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Receives every issued command.
    pub command_log: Option<&'a mut dyn CommandSink>,
    /// Called every `progress_every` trace items with the number consumed so far.
    pub progress: Option<&'a mut dyn FnMut(u64)>,
    pub progress_every: u64,
    /// Visit the cycle after every issued command, re-evaluate a bank on every arrival, and
    /// issue every refresh of an idle gap, as the controllers did before they learned to skip
    /// cycles in which nothing can issue. The schedule is the same either way (tests compare the
    /// two command logs, idle refreshes expanded); only slower.
    pub reference_schedule: bool,
}

/// Runs `trace` on the memory system `config` describes.
pub fn simulate<I>(config: &Config, trace: I, mut opts: RunOptions<'_>) -> Result<Stats, Error>
where
    I: Iterator<Item = Result<TraceItem, TraceError>>,
{
    let spec = config.resolve("config")?;
    let org = spec.org.clone();
    let cc = &config.controller;
    let mapper: Box<dyn AddressMapper> = mapper::build(&cc.mapper, &org, cc.bank_xor)
        .ok_or_else(|| Error::Request(format!("unknown mapper '{}'", cc.mapper)))?;
    let mut chans: Vec<Controller> = (0..org.channels)
        .map(|c| {
            let mut ch = Controller::new(c, &spec, cc);
            ch.set_lookahead(!opts.reference_schedule);
            ch
        })
        .collect();
    let mech = BulkMech::of(&cc.bulk);
    let capacity = org.capacity_bytes();

    let mut trace = lookahead::Lookahead::new(trace);
    let mut now: u64 = 0;
    let mut seq: u64 = 0;
    let mut consumed: u64 = 0;
    let mut offer_at: u64 = 0;
    let mut last_arrival: u64 = 0;
    let mut bulk = BulkOps::with_copy(config.controller.copy.model());
    let mut end: u64 = 0;
    let mut cached_loc: Option<(u64, crate::mapper::Location)> = None;
    let progress_every = opts.progress_every.max(1);
    // Items left until the next progress call (a countdown: no division per item).
    let mut until_progress = progress_every;
    let mut steps: u64 = 0;
    // The channel and queue that refused the trace's next request (still the next one).
    let mut refused: Option<(usize, crate::request::Op)> = None;

    loop {
        // Turns in which the trace's next request is still refused and no bulk work is in
        // flight only tick the controllers: run in a loop of their own (`blocked`).
        if let Some(waiting) = refused {
            now =
                blocked::blocked_turns(&mut chans, waiting, &mut bulk, now, &mut steps, &mut opts)?;
        }
        steps += 1;
        if steps.is_multiple_of(interrupt::CHECK_STEPS) && interrupt::requested() {
            return Err(Error::Interrupted);
        }
        // 1. The frontend offers the next item, one per cycle. A request its channel refused
        // (its arrival already checked, its cycle reached) is refused again while that queue is
        // full: answered from the queue alone, without reading the item again.
        let mut blocked = false;
        if let Some((c, op)) = refused {
            if chans[c].can_accept(op) {
                refused = None;
            } else {
                blocked = true;
            }
        }
        if !blocked {
            if let Some(e) = trace.error() {
                return Err(Error::Trace(e.clone()));
            }
        }
        let head = if blocked { None } else { trace.peek() };
        if let Some(&item) = head {
            if let Some(a) = item.arrival() {
                crate::trace::check_arrival(a)
                    .map_err(|e| Error::Request(format!("trace item {}: {e}", consumed + 1)))?;
            }
            if consumed == 0 || !matches!(item.arrival(), Some(a) if a < last_arrival) {
                offer_at = offer_at.max(item.arrival().unwrap_or(0));
            }
            if now >= offer_at {
                let accepted = match item {
                    TraceItem::Req(r) => {
                        // Mapped once per item, not on every retry of a blocked frontend.
                        let loc = match cached_loc {
                            Some((a, l)) if a == r.addr => l,
                            _ => {
                                let l = mapper.map(r.addr);
                                cached_loc = Some((r.addr, l));
                                l
                            }
                        };
                        let ch = &mut chans[loc.channel as usize];
                        if ch.can_accept(r.op) {
                            seq += 1;
                            ch.enqueue(&loc, r.op, now, seq, Tag::Trace);
                            true
                        } else {
                            refused = Some((loc.channel as usize, r.op));
                            false
                        }
                    }
                    TraceItem::Bulk(b) => {
                        if b.bytes == 0 {
                            return Err(Error::Request(format!(
                                "trace item {}: a bulk operation of 0 bytes",
                                consumed + 1
                            )));
                        }
                        let src_end = match b.kind {
                            BulkKind::Copy { src } => src.checked_add(b.bytes),
                            BulkKind::Init { .. } => Some(0),
                            BulkKind::Replicate { copies } => {
                                check_copies(&org, copies).map_err(|e| {
                                    Error::Request(format!("trace item {}: {e}", consumed + 1))
                                })?;
                                Some(0)
                            }
                        };
                        if src_end.is_none() || b.dst.checked_add(b.bytes).is_none() {
                            return Err(Error::Request(format!(
                                "trace item {}: bulk operation overflows the address space",
                                consumed + 1
                            )));
                        }
                        if b.bytes > capacity {
                            return Err(Error::Request(format!(
                                "trace item {}: bulk operation of {} bytes exceeds the memory capacity ({} bytes)",
                                consumed + 1,
                                b.bytes,
                                capacity
                            )));
                        }
                        if let (BulkKind::Copy { src }, Some(p)) = (b.kind, mapper.period()) {
                            // Addresses wrap at the mapper's period: ranges apart as given may
                            // land on each other (a copy onto itself, or one that overwrites
                            // its own source), which no mechanism copies as written. (Ranges
                            // that overlap as given are the trace readers' to refuse.)
                            let (s, d) = (src % p, b.dst % p);
                            let apart = |x: u64, y: u64| (y + p - x) % p;
                            let given = |x: u64, y: u64| {
                                u128::from(x) < u128::from(y) + u128::from(b.bytes)
                            };
                            let overlap_given = given(src, b.dst) && given(b.dst, src);
                            if !overlap_given && (apart(s, d) < b.bytes || apart(d, s) < b.bytes) {
                                return Err(Error::Request(format!(
                                    "trace item {}: COPY of {} bytes from 0x{src:x} to 0x{:x}: source and \
                                     destination overlap once addresses wrap at this memory's {} bytes \
                                     (at 0x{s:x} and 0x{d:x})",
                                    consumed + 1,
                                    b.bytes,
                                    b.dst,
                                    p
                                )));
                            }
                        }
                        bulk.submit(
                            &b,
                            0,
                            now,
                            mech,
                            mapper.as_ref(),
                            &org,
                            &mut chans,
                            &mut seq,
                        );
                        true
                    }
                };
                if accepted {
                    consumed += 1;
                    last_arrival = item.arrival().unwrap_or(last_arrival);
                    trace.advance();
                    offer_at = now + 1;
                    until_progress -= 1;
                    if until_progress == 0 {
                        until_progress = progress_every;
                        if let Some(p) = opts.progress.as_deref_mut() {
                            p(consumed);
                        }
                    }
                    // Look ahead: a next request whose queue is already full waits for a command
                    // to issue, so there is no point offering it next cycle.
                    if let Some(TraceItem::Req(r)) = trace.peek() {
                        let l = mapper.map(r.addr);
                        cached_loc = Some((r.addr, l));
                        if !chans[l.channel as usize].can_accept(r.op) {
                            blocked = true;
                            // Without an arrival cycle of its own it would be offered at the
                            // next turn (past `offer_at`, now + 1) and refused there for the
                            // same full queue, unless a command freed a slot first: the same
                            // as refusing it now, which spares that turn the offer.
                            if r.arrival.is_none() {
                                refused = Some((l.channel as usize, r.op));
                            }
                        }
                    }
                } else {
                    blocked = true;
                }
            }
        }

        // 2. The baseline bulk engine offers its lines.
        let bulk_active = !bulk.quiet();
        if bulk_active {
            bulk.pump(
                now,
                config.controller.bulk_buffer_lines,
                config.controller.bulk_done_at_acceptance(),
                mapper.as_ref(),
                &mut chans,
                &mut seq,
            );
        }

        // 3. Every controller issues at most one command. A controller that issued returns the
        // earliest cycle its next command could issue; whoever waits for the queue space that
        // command may have freed (a blocked frontend, the bulk engine) is revisited next cycle.
        let mut next = u64::MAX;
        let mut issued = false;
        for ch in chans.iter_mut() {
            let t = ch.tick(now, opts.command_log.as_deref_mut());
            next = next.min(t);
            issued |= ch.issued_at(now);
            if !ch.done.is_empty() {
                for Done { time, tag, op } in ch.done.drain(..) {
                    bulk.on_done(time, tag, op);
                }
            }
        }
        if issued && (bulk_active || !bulk.quiet()) {
            next = now + 1;
        }
        if blocked && issued {
            if let Some((c, op)) = refused {
                // The refused head's queue (what the look below would find).
                if chans[c].can_accept(op) {
                    next = now + 1;
                }
            } else if let Some(TraceItem::Req(r)) = trace.peek() {
                let ch = match cached_loc {
                    Some((a, l)) if a == r.addr => l.channel,
                    _ => mapper.map(r.addr).channel,
                };
                if chans[ch as usize].can_accept(r.op) {
                    next = now + 1;
                }
            }
        }

        // 4. Finished work of bulk operations.
        if !bulk.quiet() {
            bulk.settle(now);
            // Reads that just returned may let the baseline engine move on to writing.
            if bulk.pump(
                now,
                config.controller.bulk_buffer_lines,
                config.controller.bulk_done_at_acceptance(),
                mapper.as_ref(),
                &mut chans,
                &mut seq,
            ) {
                next = now + 1;
            }
        }

        // 5. Advance to the next cycle at which anything can happen.
        // A blocked frontend retries after the next command issues (only that frees a slot).
        if trace.more() && !blocked {
            next = next.min(offer_at.max(now + 1));
        }
        if let Some(t) = bulk.next_event() {
            next = next.min(t.max(now + 1));
        }
        let busy = chans.iter().any(|c| !c.idle()) || !bulk.quiet() || trace.more();
        if !busy {
            break;
        }
        // An idle gap before the next arrival: its refreshes are counted, not visited.
        if !opts.reference_schedule
            && trace.more()
            && offer_at > now
            && bulk.quiet()
            && chans.iter().all(|c| c.idle())
        {
            for ch in chans.iter_mut() {
                ch.skip_idle_refreshes(now, offer_at, opts.command_log.as_deref_mut());
            }
        }
        if next == u64::MAX {
            // Only refresh remains scheduled and nothing else is pending: done.
            if chans.iter().all(|c| c.idle()) && bulk.quiet() && !trace.more() {
                break;
            }
            next = now + 1;
        }
        now = next.max(now + 1);
    }
    if bulk.in_flight() > 0 {
        return Err(Error::Request(format!(
            "{} bulk operations did not complete (internal error)",
            bulk.in_flight()
        )));
    }

    end = end.max(bulk.end);
    for ch in &chans {
        end = end.max(ch.counters.last_done);
    }
    Ok(collect_stats(config, &spec, &mut chans, end, &bulk.totals))
}
