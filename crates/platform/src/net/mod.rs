//! The network side: the Ethernet wire that every system's frames take and that joins platforms
//! ([`ethernet_link`]), the small cores' media switch fabric and MAC ([`msf_mac`]) and the UDP
//! peer on the wire ([`udp_peer`]).
pub mod ethernet_link;
pub mod msf_mac;
pub mod udp_peer;
