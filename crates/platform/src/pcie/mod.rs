//! PCIe: the byte counts of transactions on a link ([`bytes`]), the timed link with credits and
//! ACKs ([`link`]) and the functional host memory a device agent reads and writes
//! ([`host_memory`]).
pub mod bytes;
pub mod host_memory;
pub mod link;
