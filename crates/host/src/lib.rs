//! movelab-host: the real asynchronous copy runtime (copy engines behind a trait, the
//! copy/icopy/check/wait API, IPC between processes, a C ABI) and the host benchmarks' kernels.
//!
//! It does not simulate anything: everything here moves real bytes on this machine.
//!
//! * [`Runtime`] is the API of Table 1 of the I/OAT user-space paper (`copy`, `icopy`, `check`,
//!   `wait`) plus `fill`, batches and `wait_all`. It picks a mechanism by name from the
//!   [`registry`]: `cpu` (a memcpy in the caller) or `thread` (a software copy engine: worker
//!   threads pinned to cores, fed through lock-free descriptor rings).
//! * Buffer lifetimes are enforced by borrowing: asynchronous copies on borrowed slices live in a
//!   [`Runtime::scope`], which cannot return before every copy in it has completed. The raw,
//!   pointer-based entry points (`unsafe`) serve the C API and the Python binding, which keep
//!   their buffers alive themselves.
//! * [`bench`] holds the timing kernels of the host benchmarks (driven from Python).
//! * [`reuse`] computes the distinct-line reuse distances of a recording's copies (the cache state
//!   `movelab replay` gives each recorded call).
//!
//! Not here: the simulator (movelab-dram / movelab-platform), plotting and the CLI (Python).
pub mod bench;
pub mod cancel;
pub mod capi;
pub mod engine;
pub mod engines;
pub mod error;
pub mod ipc;
pub mod kernel;
pub mod onload;
pub mod reuse;
pub mod ring;
pub mod runtime;
pub mod sys;

pub use engine::{Engine, EngineConfig, Op, OpKind};
pub use engines::registry;
pub use error::{HostError, Result};
pub use runtime::{Cookie, Runtime, Scope, Trace};
