//! movelab-platform: the part of the simulator above the memory controller.
//!
//! What is here: an event kernel that skips idle time ([`kernel`]); cores driven by workload
//! programs ([`core`]), any number of them, each with its own program and clock; the memory
//! system they and the agents talk to through one request/response interface
//! ([`memory_system`]: private L1/L2 per core kept coherent, an optional shared last level, the
//! interconnect ([`interconnect`]), the memory controllers of movelab-dram); agents, each one file
//! behind the [`agent::Agent`] trait and built by name ([`agent_registry`]): copy engines on-die
//! or off-die in SYNC_NLB, SYNC_WLB or ASYNC mode ([`copy_engine`], [`pending_copy_table`]), and
//! RowClone, RowClone-ZI and MC-DMA through the DRAM model ([`in_memory_copy`]); workloads as data
//! ([`workload`]); the wiring and the run loop ([`platform`]); and the papers' system-level
//! experiments ([`experiments`]). Nothing imports [`platform`] back.
//! What is not: DRAM itself (movelab-dram), the host runtime (movelab-host), Python (movelab-py).
pub mod agent;
pub mod agent_registry;
pub mod cache;
pub mod config;
pub mod copy_engine;
pub mod core;
pub mod error;
pub mod experiments;
pub mod host_step_cost;
pub mod idma;
pub mod iface;
pub mod in_memory_copy;
pub mod interconnect;
pub mod io_config;
pub mod io_system;
pub mod kernel;
pub mod mem_channel;
pub mod memory_system;
pub mod microengine;
pub mod msf_mac;
pub mod network_io;
pub mod network_io_config;
pub mod nic;
pub mod packet_buffers;
pub mod pcie_bytes;
pub mod pcie_device_agent;
pub mod pcie_link;
pub mod pending_copy_table;
pub mod platform;
pub mod preset_toml;
pub mod ring;
pub mod root_complex;
pub mod sim;
pub mod stats;
pub mod udp_peer;
pub mod workload;

pub use config::PlatformConfig;
pub use error::PlatformError;
pub use platform::{run, Platform};
pub use stats::PlatformStats;
pub use workload::Workload;
