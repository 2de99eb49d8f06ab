//! The network side: the Ethernet wire that every system's frames take and that joins platforms
//! ([`ethernet_link`]) and the UDP peer's datagrams on it ([`udp_peer`]).
pub mod ethernet_link;
pub mod udp_peer;
