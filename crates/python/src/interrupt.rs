//! Ctrl-C for long calls: a computation runs with the GIL released and with movelab-dram's
//! interrupt check installed, which asks Python for pending signals every few milliseconds. A
//! signal handler's exception (KeyboardInterrupt for Ctrl-C) stops the computation and is raised
//! once it has returned. So does an exception raised by a Python progress callback the
//! computation calls ([`call_progress`]): Ctrl-C landing while the callback's Python code runs
//! raises KeyboardInterrupt there, and it must stop the run too, not be dropped.
use pyo3::call::PyCallArgs;
use pyo3::prelude::*;
use std::cell::RefCell;
use std::sync::{Arc, Mutex};

/// The first exception raised during one interruptible computation.
#[derive(Clone, Default)]
struct Raised(Arc<Mutex<Option<PyErr>>>);

impl Raised {
    fn set(&self, e: PyErr) {
        if let Ok(mut s) = self.0.lock() {
            s.get_or_insert(e);
        }
    }
    fn is_set(&self) -> bool {
        self.0.lock().map(|s| s.is_some()).unwrap_or(false)
    }
    fn take(&self) -> Option<PyErr> {
        self.0.lock().ok().and_then(|mut s| s.take())
    }
}

thread_local! {
    /// The slot of the interruptible computation running on this thread, if any.
    static CURRENT: RefCell<Option<Raised>> = const { RefCell::new(None) };
}

/// Runs `f` without the GIL, interruptible by signals. `Err` carries the signal's exception (or
/// the exception a progress callback raised).
pub(crate) fn detach_interruptible<R: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> R + Send,
) -> PyResult<R> {
    let raised = Raised::default();
    let slot = raised.clone();
    let out = py.detach(move || {
        let previous = CURRENT.with(|c| c.borrow_mut().replace(slot.clone()));
        struct Restore(Option<Raised>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                CURRENT.with(|c| *c.borrow_mut() = previous);
            }
        }
        let _restore = Restore(previous);
        let check = move || {
            slot.is_set()
                || Python::attach(|py| match py.check_signals() {
                    Ok(()) => false,
                    Err(e) => {
                        slot.set(e);
                        true
                    }
                })
        };
        movelab_dram::interrupt::with_check(check, f)
    });
    match raised.take() {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Calls a Python progress callback (if any) with `args`. An exception it raises is kept for the
/// interruptible computation running on this thread, whose next interrupt check stops the run
/// and raises it; outside one, it is reported as unraisable (never silently dropped).
pub(crate) fn call_progress<A>(cb: &Option<Py<PyAny>>, args: A)
where
    A: for<'py> PyCallArgs<'py>,
{
    let Some(f) = cb else { return };
    Python::attach(|py| {
        if let Err(e) = f.call1(py, args) {
            let kept = CURRENT.with(|c| match c.borrow().as_ref() {
                Some(slot) => {
                    slot.set(e);
                    None
                }
                None => Some(e),
            });
            if let Some(e) = kept {
                e.write_unraisable(py, None);
            }
        }
    });
}
