//! Stopping a long run on request (Ctrl-C). A front end (the Python bindings) installs a check
//! for the current thread with [`with_check`]; the simulation loops ask [`requested`] every
//! [`CHECK_STEPS`] steps (a few milliseconds of work) and end with an "interrupted" error when it
//! says so. Without an installed check, nothing is ever requested. Living in the lowest crate,
//! it serves every loop above it (the DRAM system, the platform, the experiments that drive them)
//! without each taking a callback.
use std::cell::RefCell;

/// Steps of a simulation loop between two calls of [`requested`].
pub const CHECK_STEPS: u64 = 1 << 14;

type Check = Box<dyn FnMut() -> bool>;

thread_local! {
    static CHECK: RefCell<Option<Check>> = const { RefCell::new(None) };
}

/// Runs `f` with `check` installed for this thread (restoring whatever was installed before,
/// so calls nest).
pub fn with_check<R>(check: impl FnMut() -> bool + 'static, f: impl FnOnce() -> R) -> R {
    let previous = CHECK.with(|c| c.borrow_mut().replace(Box::new(check)));
    struct Restore(Option<Check>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CHECK.with(|c| *c.borrow_mut() = previous);
        }
    }
    let _restore = Restore(previous);
    f()
}

/// Whether the installed check asks the run to stop (false when none is installed).
pub fn requested() -> bool {
    CHECK.with(|c| match c.try_borrow_mut() {
        Ok(mut check) => check.as_mut().is_some_and(|f| f()),
        // A check that itself ran a simulation: the inner run is not interrupted by it.
        Err(_) => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    #[test]
    fn nothing_is_requested_without_a_check() {
        assert!(!requested());
    }

    #[test]
    fn a_check_is_asked_and_removed_after_its_scope_even_when_nested() {
        let calls = Rc::new(Cell::new(0));
        let c = calls.clone();
        let got = with_check(
            move || {
                c.set(c.get() + 1);
                true
            },
            || {
                let inner = with_check(|| false, requested);
                (inner, requested())
            },
        );
        assert_eq!(got, (false, true));
        assert_eq!(calls.get(), 1);
        assert!(!requested());
    }
}
