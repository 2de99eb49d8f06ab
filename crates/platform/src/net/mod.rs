//! The network side of the network-I/O platform: the media switch fabric and MAC ([`msf_mac`])
//! and the UDP peer on the wire ([`udp_peer`]).
pub mod msf_mac;
pub mod udp_peer;
