//! Small multithreaded cores of the IXP kind ([`microengine`]) with their asynchronous memory
//! channels ([`mem_channel`]), the packet buffers and rings they share with the host
//! ([`packet_buffers`]), and the host core's cost model for network processing
//! ([`host_step_cost`]). (Section 7's DRAM-to-DRAM copy runs on the one platform:
//! `experiments/wun_onload.rs`, the microengines agent taking the host's copies.)
pub mod host_step_cost;
pub mod mem_channel;
pub mod microengine;
pub mod packet_buffers;
