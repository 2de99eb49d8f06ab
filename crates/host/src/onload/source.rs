//! The frame source trait: where the onload engine's frames come from and where its transmitted
//! frames go (the role of the NIC and the wire).
//!
//! Implementations: [`crate::onload::source_replay`] (pre-built frames paced at a line rate, no
//! privileges) and [`crate::onload::source_veth`] (a veth pair in a private network namespace,
//! read with an AF_PACKET TPACKET ring, the peer sending with kernel UDP sockets).
use crate::onload::error::OnloadResult;

/// Counters a source keeps about frames it could not hand over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SourceStats {
    /// Frames the source received and handed to the engine.
    pub rx_frames: u64,
    /// Frames lost before the engine saw them (receive ring overflow: the engine was too slow).
    pub rx_dropped: u64,
    /// Frames the engine transmitted through this source.
    pub tx_frames: u64,
    /// Transmitted frames the source could not send (its transmit queue was full).
    pub tx_dropped: u64,
}

/// A source and sink of Ethernet frames, polled by the engine's core.
pub trait FrameSource: Send {
    /// Short name (`replay`, `veth`).
    fn name(&self) -> &'static str;
    /// Hand up to `max` frames that have arrived to `deliver(frame, arrival_ns)`; `arrival_ns` is
    /// when the frame reached the host on the [`crate::sys::now_ns`] clock. Returns the count.
    /// Never blocks.
    fn poll(&mut self, max: usize, deliver: &mut dyn FnMut(&[u8], u64)) -> OnloadResult<usize>;
    /// Send one complete frame (headers and checksums included).
    fn transmit(&mut self, frame: &[u8]) -> OnloadResult<()>;
    /// Counters so far.
    fn stats(&self) -> SourceStats;
}
