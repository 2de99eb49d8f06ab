//! A memory channel seen from the cores that use it: a fixed unloaded latency plus occupancy at
//! its bandwidth, served first come first served. The network-I/O platform's small cores' DRAM,
//! their SRAM and scratchpad, the host's SDRAM channel and the MSF's buffers are each one.
use crate::config::network::ChannelConfig;
use crate::sim::Ps;

#[derive(Debug, Clone)]
pub struct MemChannel {
    latency: Ps,
    /// Picoseconds per byte.
    ps_per_byte: f64,
    /// When the channel is free to start the next transfer.
    free: Ps,
    pub bytes: u64,
    pub accesses: u64,
    /// Picoseconds spent transferring (for utilisation).
    pub busy: Ps,
}

impl MemChannel {
    pub fn new(c: &ChannelConfig) -> MemChannel {
        MemChannel {
            latency: (c.latency_ns * 1000.0).round() as Ps,
            ps_per_byte: 1000.0 / c.gbytes_per_s,
            free: 0,
            bytes: 0,
            accesses: 0,
            busy: 0,
        }
    }

    /// A transfer of `bytes` issued at `now`: returns when its data is there (a read's data
    /// back, a write accepted by the memory).
    pub fn transfer(&mut self, now: Ps, bytes: u64) -> Ps {
        let occupy = (bytes as f64 * self.ps_per_byte).round() as Ps;
        let start = now.max(self.free);
        self.free = start + occupy;
        self.bytes += bytes;
        self.accesses += 1;
        self.busy += occupy;
        start + occupy + self.latency
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_then_queueing_at_the_bandwidth() {
        let mut c = MemChannel::new(&ChannelConfig {
            latency_ns: 100.0,
            gbytes_per_s: 1.0,
        });
        assert_eq!(c.transfer(0, 64), 64_000 + 100_000);
        // A second transfer at the same time waits for the first to leave the channel.
        assert_eq!(c.transfer(0, 64), 128_000 + 100_000);
        // Later, an idle channel serves at once.
        assert_eq!(c.transfer(1_000_000, 32), 1_000_000 + 32_000 + 100_000);
        assert_eq!((c.bytes, c.accesses), (160, 3));
    }
}
