//! How a synchronous off-die copy engine orders its snoop of a line and that line's memory
//! access (Zhao et al., IEEE TC 2007, section 5.3.1: the engine performs coherent reads and
//! writes "by 1) sending out the necessary snoops to all the processors in the platform and 2)
//! performing speculative memory reads/writes. By doing these in parallel, the latencies are
//! overlapped").
//!
//! `copy.snoop_order`:
//! - `"serial"`: the line goes to memory once its snoop's turn in the bus's address phase ends.
//! - `"parallel"` (the paper's form): the line goes to memory when the engine issues it; its snoop
//!   takes its address-phase turn meanwhile, and the line is done (a read in the stream buffer, a
//!   write counted written) when both the snoop and the memory access are.
//!
//! Snoop turns are still taken one line at a time on the one address phase, so a copy's lines
//! cannot be done faster than one per turn under either form. A line dirty in a core's cache is
//! supplied by that cache in both forms (the engine's read path, not this file).
use crate::memory::memory_system::MemorySystem;
use crate::sim::Ps;
use std::collections::HashMap;

/// One line's snoop as the engine issues it: when its access reaches the memory controller and
/// the earliest the line can be done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineSnoop {
    /// When the line's read or write reaches the memory controller.
    pub at_memory: Ps,
    /// When its snoop has ended: the line is not done before then.
    pub snooped: Ps,
}

/// The engine's snoop ordering and the snoops of its reads still out.
#[derive(Debug, Clone)]
pub struct EngineSnoop {
    parallel: bool,
    /// Reads in flight (by request id) whose snoop ends after the engine issued them.
    reads: HashMap<u32, Ps>,
}

impl EngineSnoop {
    /// `order` is one of `copy.snoop_order`'s values (the config validates it; anything else is serial).
    pub fn new(order: &str) -> EngineSnoop {
        EngineSnoop {
            parallel: order == "parallel",
            reads: HashMap::new(),
        }
    }

    /// Whether snoops run beside the memory accesses.
    pub fn parallel(&self) -> bool {
        self.parallel
    }

    /// The engine issues a line at `now`, `engine_mem` from the memory controller: takes its
    /// snoop's turn in the address phase and says when the access reaches the controller.
    pub fn issue(&self, sys: &mut MemorySystem, now: Ps, engine_mem: Ps) -> LineSnoop {
        let snooped = sys.ic().address_phase(now);
        if self.parallel {
            LineSnoop {
                at_memory: now + engine_mem,
                snooped,
            }
        } else {
            LineSnoop {
                at_memory: snooped + engine_mem,
                snooped,
            }
        }
    }

    /// Remembers read `req`'s snoop (parallel form: its data may come back before it ends).
    pub fn read_sent(&mut self, req: u32, s: LineSnoop) {
        if self.parallel {
            self.reads.insert(req, s.snooped);
        }
    }

    /// Read `req`'s data reaches the engine at `at`: when the line is in the stream buffer (no
    /// earlier than its snoop's end).
    pub fn read_back(&mut self, req: u32, at: Ps) -> Ps {
        self.reads.remove(&req).map_or(at, |s| at.max(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_order_reads_as_serial() {
        assert!(!EngineSnoop::new("sideways").parallel());
        assert!(EngineSnoop::new("parallel").parallel());
    }

    #[test]
    fn a_read_is_not_back_before_its_snoop_ends() {
        let mut e = EngineSnoop::new("parallel");
        e.read_sent(
            3,
            LineSnoop {
                at_memory: 5,
                snooped: 100,
            },
        );
        assert_eq!(e.read_back(3, 60), 100);
        // Forgotten once back: the request id may be reused.
        assert_eq!(e.read_back(3, 60), 60);
        let mut s = EngineSnoop::new("serial");
        s.read_sent(
            3,
            LineSnoop {
                at_memory: 105,
                snooped: 100,
            },
        );
        assert_eq!(s.read_back(3, 60), 60);
    }
}
