//! The run loop's turns while the trace's next request waits for a full queue. Such a turn (no
//! bulk operation in flight) does nothing but tick the controllers: the frontend refuses the
//! request again from the queue's length alone, and the end of the turn finds the channel busy
//! and no bulk event pending. [`blocked_turns`] runs those turns in a loop of their own, in the
//! same order and with the same effects as the general loop of [`super::simulate`], which then
//! takes the first turn that is not one of them (the queue has room again, or bulk work
//! appeared): the general loop's frontend, bulk and idle-gap tests are skipped, not changed.
use super::RunOptions;
use crate::bulk::ops::BulkOps;
use crate::controller::{Controller, Done};
use crate::error::Error;
use crate::interrupt;
use crate::request::Op;

/// Runs the turns from cycle `now` on in which the request refused by channel `c`'s queue for
/// `op` is still refused, while no bulk operation is in flight; returns the cycle of the first
/// turn it leaves to the general loop. `steps` counts the turns, as the general loop does, for
/// the interrupt check.
#[inline(always)]
pub(super) fn blocked_turns(
    chans: &mut [Controller],
    (c, op): (usize, Op),
    bulk: &mut BulkOps,
    mut now: u64,
    steps: &mut u64,
    opts: &mut RunOptions<'_>,
) -> Result<u64, Error> {
    // No bulk operation in flight: no controller holds a bulk line or job, so none finishes
    // work that the bulk engine would hear of, and the engine stays quiet through the turn.
    // Tested once: only finished work the engine hears of could change it (tested again then).
    let mut bulk_idle = bulk.in_flight() == 0 && bulk.quiet();
    if !bulk_idle || chans[c].can_accept(op) {
        return Ok(now);
    }
    loop {
        debug_assert!(bulk.in_flight() == 0 && bulk.quiet() && !chans[c].can_accept(op));
        // A full queue (of at least one entry) keeps its channel busy: the general loop would
        // neither end the run nor skip an idle gap here.
        debug_assert!(!chans[c].idle());
        *steps += 1;
        if steps.is_multiple_of(interrupt::CHECK_STEPS) && interrupt::requested() {
            return Err(Error::Interrupted);
        }
        let mut next = u64::MAX;
        for ch in chans.iter_mut() {
            let t = ch.tick(now, opts.command_log.as_deref_mut());
            next = next.min(t);
            if !ch.done.is_empty() {
                for Done { time, tag, op } in ch.done.drain(..) {
                    bulk.on_done(time, tag, op);
                }
                bulk_idle = bulk.in_flight() == 0 && bulk.quiet();
            }
        }
        debug_assert!(bulk.quiet(), "work of no bulk operation finished");
        // The command may have freed the slot the request waits for: the next cycle is its turn.
        // Only a command of channel `c` at `now` frees one (nothing else leaves a queue here), so
        // room implies the general loop's "issued this cycle", which is not asked.
        let room = chans[c].can_accept(op);
        debug_assert!(!room || chans[c].issued_at(now));
        if room {
            next = now + 1;
        }
        if next == u64::MAX {
            next = now + 1;
        }
        now = next.max(now + 1);
        // The general loop's test at the top of the next turn, from what this turn found.
        if !bulk_idle || room {
            return Ok(now);
        }
    }
}
