//! The spine every movelab simulator shares, the lowest layer of the crate: simulated time
//! ([`time`]), the event queue ([`event_queue`]), the error type ([`error`]), preset loading and
//! merging ([`preset`]), the report envelope ([`report`]), the run loops' guard ([`run_guard`]: Ctrl-C and step bounds) and golden
//! digests ([`digest`]). It imports nothing else from the crate.
pub mod digest;
pub mod error;
pub mod event_queue;
pub mod preset;
pub mod report;
pub mod run_guard;
pub mod time;

pub use event_queue::EventQueue;
pub use report::Report;
pub use run_guard::RunGuard;
pub use time::{ns, Ps};
