//! Network onload on this machine (Wun & Crowley, "Network I/O Acceleration in Heterogeneous
//! Multicore Processors"): a UDP/IPv4 receive and transmit path run by an engine thread on a
//! dedicated core, delivering payloads straight into buffers the application posted.
//!
//! * [`frame`]: Ethernet/IPv4/UDP parsing, checksums and header building (own code);
//! * [`source`]: the frame source trait; [`source_replay`] (no privileges) and
//!   [`source_veth`] (a veth pair in a private network namespace, AF_PACKET ring);
//! * [`engine`]: the engine on its core; [`socket`]: the application's socket-like handle;
//! * [`softnic`]: the softnic configuration (engine verifies and copies into a buffer pool,
//!   the host demultiplexes and copies to the user);
//! * [`kernel_udp`]: the kernel configuration (recvmmsg / sendmmsg on kernel UDP sockets);
//! * [`bench`]: `movelab bench host onload`'s timing loops.
//!
//! Not here: the simulated onload engine of the platform model (movelab-platform).
pub mod bench;
pub mod capi;
pub mod engine;
pub mod error;
pub mod frame;
pub mod kernel_udp;
pub mod pattern;
pub mod socket;
pub mod softnic;
pub mod source;
pub mod source_replay;
pub mod source_veth;
pub mod spec;
pub mod wait;

pub use engine::{Delivery, EngineReport, EngineStats, OnloadConfig, OnloadEngine};
pub use error::{OnloadError, OnloadResult};
pub use socket::{Access, Datagram, OnloadSocket, RxCompletion, SocketStats, TxCompletion};
pub use source::{FrameSource, SourceStats};
pub use source_replay::{ReplayConfig, ReplayHandle, ReplaySource};

#[cfg(test)]
mod tests;
