//! movelab-host: the real asynchronous copy runtime (copy engines behind a trait, the
//! copy/icopy/check/wait API, IPC between processes, a C ABI) and the host benchmarks' kernels.
//!
//! It does not simulate anything: everything here moves real bytes on this machine.
