//! Ctrl-C for long calls: a computation runs with the GIL released and with movelab-dram's
//! interrupt check installed, which asks Python for pending signals every few milliseconds. A
//! signal handler's exception (KeyboardInterrupt for Ctrl-C) stops the computation and is raised
//! once it has returned.
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};

/// Runs `f` without the GIL, interruptible by signals. `Err` carries the signal's exception.
pub(crate) fn detach_interruptible<R: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> R + Send,
) -> PyResult<R> {
    let raised: Arc<Mutex<Option<PyErr>>> = Arc::new(Mutex::new(None));
    let slot = raised.clone();
    let out = py.detach(move || {
        let check = move || {
            Python::attach(|py| match py.check_signals() {
                Ok(()) => false,
                Err(e) => {
                    if let Ok(mut s) = slot.lock() {
                        s.get_or_insert(e);
                    }
                    true
                }
            })
        };
        movelab_dram::interrupt::with_check(check, f)
    });
    let pending = raised.lock().ok().and_then(|mut s| s.take());
    match pending {
        Some(e) => Err(e),
        None => Ok(out),
    }
}
