//! The spine every movelab simulator shares: simulated time, the event queue, the run loop's guard
//! and Ctrl-C policy, preset loading and merging, the report envelope and golden digests. It
//! depends on nothing else in the crate (the error type aside), and every layer above uses it.
pub mod digest;
