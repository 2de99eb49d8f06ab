//! I/O devices as state machines driven by their link: the descriptor NIC ([`nic`]) and the
//! integrated DMA engine's FIFO+PHY adapter and pinned receive ring ([`idma`]).
pub mod idma;
pub mod nic;
