//! movelab-platform: the part of the simulator above the memory controller, in layers that import
//! only downwards (`tests/layering.rs` fails on an upward import or a circle):
//!
//! 1. [`sim`], the spine: time, the event queue, errors, preset loading, golden digests.
//! 2. [`iface`] (the core/uncore vocabulary), [`config`] (configs and workloads, pure data) and
//!    [`stats`] (plain data).
//! 3. Components: [`cpu`] (cores), [`memory`] (caches, coherence, interconnect, rings, the DRAM
//!    controllers), [`pcie`] (byte counts, link, root complex), [`devices`] (NIC, iDMA), [`net`]
//!    (the Ethernet link, the UDP peer).
//! 4. [`agents`]: copy engines, in-memory mechanisms, the PCIe device, the microengines, each
//!    behind one trait and built by name.
//! 5. [`systems`]: the platform, platforms joined by links (with the network configurations'
//!    host and iperf peer), two hosts over PCIe; each wires its parts and runs them.
//! 6. [`experiments`]: the papers' system-level reproductions and the golden lines.
//!
//! What is not here: DRAM itself (movelab-dram), the host runtime (movelab-host), Python
//! (movelab-py).
pub mod agents;
pub mod config;
pub mod cpu;
pub mod devices;
pub mod experiments;
pub mod iface;
pub mod memory;
pub mod net;
pub mod pcie;
pub mod sim;
pub mod stats;
pub mod systems;

pub use config::workload::Workload;
pub use config::PlatformConfig;
pub use sim::error::PlatformError;
pub use stats::PlatformStats;
pub use systems::platform::{run, Platform};
