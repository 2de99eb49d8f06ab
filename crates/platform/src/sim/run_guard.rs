//! The one guard of every run loop: it counts the loop's steps, stops the run when Ctrl-C was
//! asked for (checked every [`CHECK_STEPS`] steps, a few milliseconds of work, through
//! movelab-dram's thread-local interrupt check that the front ends install) and, where the system
//! sets one, when the run takes more steps than its bound. A system's own stall conditions (no
//! instruction retired for a while, no terminating datagram) end the run with the same
//! [`PlatformError::Stalled`].
use super::error::PlatformError;
pub use movelab_dram::interrupt::CHECK_STEPS;

/// Counts a run loop's steps and decides when it must stop.
#[derive(Debug, Clone)]
pub struct RunGuard {
    steps: u64,
    max_steps: Option<u64>,
    what: &'static str,
}

impl RunGuard {
    /// A guard for the run loop of `what` ("the I/O run"), with no bound on its steps.
    pub fn new(what: &'static str) -> RunGuard {
        RunGuard {
            steps: 0,
            max_steps: None,
            what,
        }
    }

    /// The same guard, ending the run after `max` steps.
    pub fn with_max_steps(mut self, max: u64) -> RunGuard {
        self.max_steps = Some(max);
        self
    }

    /// Counts one step: `Stalled` past the bound, `Interrupted` when Ctrl-C was asked for.
    pub fn step(&mut self) -> Result<(), PlatformError> {
        self.steps += 1;
        if self.max_steps.is_some_and(|m| self.steps > m) {
            return Err(PlatformError::Stalled(format!(
                "{} took more than {} events",
                self.what,
                self.max_steps.unwrap_or_default()
            )));
        }
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
    fn stops_past_its_bound_and_on_request() {
        let mut g = RunGuard::new("the test run").with_max_steps(3);
        assert!(g.step().is_ok() && g.step().is_ok() && g.step().is_ok());
        let e = g.step().unwrap_err().to_string();
        assert!(e.contains("the test run took more than 3 events"), "{e}");

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
}
