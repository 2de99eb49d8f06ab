//! The path between the core's caches and the memory controller.
//!
//! `fsb`: a pipelined shared front-side bus (UMA with an off-die memory controller in the hub):
//! a request takes the arbitration, request and snoop phases (`request_ns`), and every 64-byte
//! data transfer, fills and write-backs alike, occupies the one shared data bus for
//! 64 / `bandwidth_gbs` ns, queuing behind earlier transfers. `on-die`: an integrated memory
//! controller (NUMA); the same shape with the on-die latencies, plus `remote_hop_ns` each way for
//! memory behind the other node (channels from `remote_from_channel` on). Every transaction also
//! takes its turn in the address and snoop phases (`address_ns` each): core misses, write-backs,
//! copy commands and the snoops a coherent copy engine makes for each line it reads or writes.
use crate::config::platform::InterconnectConfig;
use crate::sim::{ns, Ps};

#[derive(Debug, Clone)]
pub struct Interconnect {
    request: Ps,
    response: Ps,
    /// Picoseconds one line occupies the data path.
    line_ps: Ps,
    remote_from: u32,
    hop: Ps,
    pub engine_message: Ps,
    data_free_at: Ps,
    address: Ps,
    address_free_at: Ps,
    /// Transactions through the address phase.
    pub address_transactions: u64,
    /// Lines moved and time the data path was busy.
    pub transfers: u64,
    pub busy_ps: Ps,
}

impl Interconnect {
    pub fn new(c: &InterconnectConfig) -> Interconnect {
        Interconnect {
            request: ns(c.request_ns),
            response: ns(c.response_ns),
            line_ps: (64.0 / c.bandwidth_gbs * 1000.0).round().max(1.0) as Ps,
            remote_from: c.remote_from_channel,
            hop: ns(c.remote_hop_ns),
            engine_message: ns(c.engine_message_ns),
            data_free_at: 0,
            address: ns(c.address_ns),
            address_free_at: 0,
            address_transactions: 0,
            transfers: 0,
            busy_ps: 0,
        }
    }

    fn hop(&self, channel: u32) -> Ps {
        if channel >= self.remote_from {
            self.hop
        } else {
            0
        }
    }

    /// How long one transaction occupies the address phase.
    pub fn address_ps(&self) -> Ps {
        self.address
    }

    /// Takes a turn in the address/snoop phase from `at` on; returns when the turn ends.
    pub fn address_phase(&mut self, at: Ps) -> Ps {
        let start = at.max(self.address_free_at);
        self.address_free_at = start + self.address;
        self.address_transactions += 1;
        self.address_free_at
    }

    /// When a request sent at `now` to memory on `channel` reaches the memory controller.
    pub fn request_arrives(&mut self, now: Ps, channel: u32) -> Ps {
        let start = self.address_phase(now) - self.address;
        start + self.request + self.hop(channel)
    }

    /// When a line the memory controller returns at `ready` reaches the cache (queuing for the
    /// data path).
    pub fn fill_arrives(&mut self, ready: Ps, channel: u32) -> Ps {
        let at_bus = ready + self.hop(channel);
        let end = self.occupy(at_bus);
        end + self.response
    }

    /// When a write-back leaving the cache at `now` reaches the memory controller.
    pub fn writeback_arrives(&mut self, now: Ps, channel: u32) -> Ps {
        let start = self.address_phase(now) - self.address;
        let end = self.occupy(start + self.request);
        end + self.hop(channel)
    }

    /// Occupies the data path for one line from `at` on; returns when the transfer ends.
    fn occupy(&mut self, at: Ps) -> Ps {
        let start = at.max(self.data_free_at);
        self.data_free_at = start + self.line_ps;
        self.transfers += 1;
        self.busy_ps += self.line_ps;
        self.data_free_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfers_queue_on_the_shared_data_bus() {
        let c = InterconnectConfig {
            request_ns: 10.0,
            response_ns: 5.0,
            bandwidth_gbs: 6.4,
            ..Default::default()
        };
        let mut ic = Interconnect::new(&c);
        // 64 B at 6.4 GB/s = 10 ns on the bus.
        assert_eq!(ic.fill_arrives(0, 0), 15_000);
        assert_eq!(ic.fill_arrives(0, 0), 25_000); // waits for the first transfer
        assert_eq!(ic.fill_arrives(100_000, 0), 115_000);
        assert_eq!(ic.request_arrives(0, 0), 10_000);
        assert_eq!(ic.request_arrives(0, 0), 20_000); // queued behind the first address phase
    }

    #[test]
    fn remote_channels_pay_the_hop() {
        let c = InterconnectConfig {
            kind: "on-die".into(),
            address_ns: 10.0,
            request_ns: 10.0,
            response_ns: 0.0,
            remote_from_channel: 1,
            remote_hop_ns: 20.0,
            ..Default::default()
        };
        let mut ic = Interconnect::new(&c);
        assert_eq!(ic.request_arrives(0, 0), 10_000);
        // The address phase is busy 10 ns with the first request.
        assert_eq!(ic.request_arrives(0, 1), 40_000);
    }
}
