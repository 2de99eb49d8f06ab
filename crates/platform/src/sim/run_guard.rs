//! The one guard of every run loop: it counts the loop's steps and stops the run when Ctrl-C was
//! asked for (checked every [`CHECK_STEPS`] steps, a few milliseconds of work, through
//! movelab-dram's thread-local interrupt check that the front ends install). With [`RunGuard::with_idle_work`] it
//! also stops a run that works without getting anywhere: each party the loop watches (a host of a
//! cluster) reports its progress (program operations fed, frames taken in) and its work
//! (interrupts taken), and a party whose work grows past the bound while its progress stands
//! still is a loop feeding itself (a handler whose sends complete into more interrupts that send
//! again) - busy cores and moving time, so the platform's own retire watch never fires. A
//! system's own stall conditions (no instruction retired for a while, no terminating datagram)
//! end the run with the same [`PlatformError::Stalled`].
use super::error::PlatformError;
pub use movelab_dram::interrupt::CHECK_STEPS;

/// Interrupts a host may take with no progress (no program operation fed, no frame taken in,
/// no interrupt from a device) before the run is stopped as a loop that feeds itself
/// ([`RunGuard::with_idle_work`]): twice a 512-descriptor ring, since a host whose program has
/// ended may still take one per frame it had queued (a cluster raises it to twice its largest
/// ring).
pub const MIN_IDLE_INTERRUPTS: u64 = 1024;

/// Counts a run loop's steps and decides when it must stop.
#[derive(Debug, Clone)]
pub struct RunGuard {
    steps: u64,
    what: &'static str,
    /// Work a watched party may do without progress, and each party's (progress, work and
    /// backlog at the last progress).
    max_idle_work: Option<u64>,
    parties: Vec<(u64, u64, u64)>,
}

impl RunGuard {
    /// A guard for the run loop of `what` ("the I/O run"), with no bound on its steps.
    pub fn new(what: &'static str) -> RunGuard {
        RunGuard {
            steps: 0,
            what,
            max_idle_work: None,
            parties: Vec::new(),
        }
    }

    /// The same guard, ending the run when a watched party ([`RunGuard::watch`]) does more than
    /// `max` units of work without progress.
    pub fn with_idle_work(mut self, max: u64) -> RunGuard {
        self.max_idle_work = Some(max);
        self
    }

    /// Reports party `who`'s counters (the first two only grow): `progress` (what it was given
    /// to do and did: program operations fed, frames taken in), `work` (what it spends:
    /// interrupts taken) and `backlog` (work already owed: interrupts raised and held, not yet
    /// taken). `Stalled` once `work` has grown by more than the bound plus the backlog owed
    /// when `progress` last moved (a host whose program ended with a thousand completions
    /// queued takes them all; one whose handlers feed themselves owes little when it starts);
    /// without a bound it only records.
    pub fn watch(
        &mut self,
        who: usize,
        progress: u64,
        work: u64,
        backlog: u64,
    ) -> Result<(), PlatformError> {
        if self.parties.len() <= who {
            self.parties.resize(who + 1, (0, 0, 0));
        }
        let p = &mut self.parties[who];
        if progress != p.0 || work < p.1 {
            *p = (progress, work, backlog);
            return Ok(());
        }
        match self.max_idle_work {
            Some(max) if work - p.1 > max.saturating_add(p.2) => {
                Err(PlatformError::Stalled(format!(
                "{}: party {who} did {} units of work (interrupts) with no progress (no program \
                 operation fed, no frame taken in): a loop that feeds itself",
                self.what,
                work - p.1
            )))
            }
            _ => Ok(()),
        }
    }

    /// Counts one step: `Interrupted` when Ctrl-C was asked for.
    pub fn step(&mut self) -> Result<(), PlatformError> {
        self.steps += 1;
        if self.steps.is_multiple_of(CHECK_STEPS) && movelab_dram::interrupt::requested() {
            return Err(PlatformError::Interrupted);
        }
        Ok(())
    }

    /// Steps counted so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    #[test]
    fn stops_on_request() {
        let asked = Rc::new(Cell::new(0u32));
        let a = asked.clone();
        let r = movelab_dram::interrupt::with_check(
            move || {
                a.set(a.get() + 1);
                true
            },
            || {
                let mut g = RunGuard::new("the test run");
                (0..CHECK_STEPS * 2)
                    .try_for_each(|_| g.step())
                    .map(|_| g.steps())
            },
        );
        assert!(matches!(r, Err(PlatformError::Interrupted)));
        // Asked once, at the first check.
        assert_eq!(asked.get(), 1);
    }

    #[test]
    fn stops_a_party_that_works_without_progress() {
        let mut g = RunGuard::new("the test run").with_idle_work(10);
        // Work with progress beside it is never stopped.
        for k in 0..100 {
            assert!(g.watch(0, k, 3 * k, 0).is_ok());
        }
        // Another party's progress does not count for this one.
        for w in 0..=10 {
            assert!(g.watch(1, 5, 100 + w, 0).is_ok());
            assert!(g.watch(0, 100 + w, 0, 0).is_ok());
        }
        let e = g.watch(1, 5, 111, 0).unwrap_err().to_string();
        assert!(
            e.contains("the test run: party 1 did 11 units of work"),
            "{e}"
        );
        // A backlog owed when progress last moved is taken on top of the bound: 30 held
        // interrupts and 10 more, then one too many.
        assert!(g.watch(2, 7, 0, 30).is_ok());
        assert!((1..=40).all(|w| g.watch(2, 7, w, 30 - (w.min(30))).is_ok()));
        let e = g.watch(2, 7, 41, 0).unwrap_err().to_string();
        assert!(e.contains("party 2 did 41 units of work"), "{e}");
        // Without a bound it only records.
        let mut free = RunGuard::new("the test run");
        assert!((0..1000).all(|w| free.watch(0, 0, w, 0).is_ok()));
    }
}
