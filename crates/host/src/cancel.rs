//! Cancellation of blocking calls: how a call that waits (for a copy, a peer, a message) learns
//! that its caller wants to stop, e.g. because the user pressed Ctrl-C in Python.
//!
//! Every blocking call of movelab-host sleeps in slices of at most [`SLICE`] and asks its
//! [`Cancel`] between slices, so it reacts within a fraction of a second; the plain entry points
//! pass [`Never`]. A cancelled wait returns an "interrupted" error and leaves the operation in
//! flight (it can be waited for again), exactly like a timeout.
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The longest a blocking call sleeps before asking its [`Cancel`] again.
pub const SLICE: Duration = Duration::from_millis(50);

/// Asked between the slices of a blocking call: should it give up now?
pub trait Cancel: Sync {
    fn cancelled(&self) -> bool;
}

/// Never cancels (the plain, uninterruptible entry points).
#[derive(Debug, Default, Clone, Copy)]
pub struct Never;

impl Cancel for Never {
    fn cancelled(&self) -> bool {
        false
    }
}

/// Cancels once [`Flag::raise`] has been called (from any thread).
#[derive(Debug, Default)]
pub struct Flag(AtomicBool);

impl Flag {
    pub fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Cancel for Flag {
    fn cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
