//! Small multithreaded cores of the IXP kind ([`microengine`]) with their asynchronous memory
//! channels ([`mem_channel`]), the packet buffers and rings they share with the host
//! ([`packet_buffers`]), and the host core's cost model for network processing
//! ([`host_step_cost`]), and the DRAM-to-DRAM copy benchmark that sets the small cores against
//! the host core ([`dram_copy`]).
pub mod dram_copy;
pub mod host_step_cost;
pub mod mem_channel;
pub mod microengine;
pub mod packet_buffers;
