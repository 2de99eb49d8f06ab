//! I/O devices as state machines driven by their link: the descriptor NIC ([`nic`]) and the
//! integrated DMA engine with its FIFO adapter ([`idma`]).
pub mod idma;
pub mod nic;
