//! Cores: out-of-order, in-order and multithreaded pipelines driven by workload programs, talking
//! to the memory system only through the core/uncore interface (`iface`).
pub mod core;
pub mod issue_set;
pub mod window;
