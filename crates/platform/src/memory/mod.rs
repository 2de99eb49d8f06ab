//! The memory system the cores and every agent share: private caches kept coherent, the shared
//! last level, the interconnect, the table of copies in flight, shared-memory rings and the DRAM
//! controllers of movelab-dram behind one request/response interface.
pub mod cache;
pub mod interconnect;
pub mod memory_system;
pub mod pending_copy_table;
pub mod ring;
