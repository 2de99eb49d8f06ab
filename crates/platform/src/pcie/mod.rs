//! PCIe: the byte counts of transactions on a link ([`bytes`]), the timed link with credits and
//! ACKs ([`link`]) and the host memory behind the root complex ([`root_complex`]).
pub mod bytes;
pub mod link;
pub mod root_complex;
