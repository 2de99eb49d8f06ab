//! The network side: the Ethernet wire that every system's frames take and that joins platforms
//! ([`ethernet_link`]), the UDP peer's datagrams on it ([`udp_peer`]) and a TCP receiver's
//! acknowledgements ([`tcp_ack`]).
pub mod ethernet_link;
pub mod tcp_ack;
pub mod udp_peer;
