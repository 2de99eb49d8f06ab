//! Agents: the parts of a platform besides the cores that act on memory by themselves (a copy
//! engine, the memory controller's bulk mechanisms, later devices). Each is one file behind the
//! small [`Agent`] trait and is built by name ([`registry`]), as the DRAM schedulers are. An
//! agent knows nothing of the platform that owns it: it talks to the [`MemorySystem`] it is
//! handed (requests, its own events, coherence hooks) and hears back through [`Agent::event`]
//! and [`Agent::response`].
pub mod copy_engine;
pub mod device_dma;
pub mod engine_snoop;
pub mod idma;
pub mod in_memory_copy;
pub mod microengines;
pub mod pcie_device;
pub mod registry;

use crate::iface::{Access, OffloadOp};
use crate::memory::memory_system::{MemorySystem, Response};
use crate::sim::Ps;
use crate::stats::CopyLines;

/// What an agent adds to a run's statistics.
#[derive(Debug, Clone, Default)]
pub struct AgentReport {
    /// Operations finished and their summed service time.
    pub ops: u64,
    pub op_time: Ps,
    /// The last time one finished.
    pub last_done: Ps,
    pub lines: CopyLines,
    /// A PCIe device's counts and latency stacks (devices only).
    pub device: Option<crate::stats::DeviceStats>,
    /// Small cores' pipelines (microengines only).
    pub small_cores: Option<crate::stats::SmallCoreStats>,
}

/// An agent's Ethernet port, once attached to a link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Port {
    /// The MAC's rate, Gb/s.
    pub gbps: f64,
    /// The MAC and PHY's pipeline on the way out (after the last bit is serialised) and in.
    pub tx_ps: Ps,
    pub rx_ps: Ps,
    /// Descriptors the agent's largest ring holds (0 where it has none): a host whose program has
    /// ended may still take an interrupt for each frame queued there.
    pub ring: u32,
}

/// Something that acts on memory by itself.
pub trait Agent {
    /// The name it was built by.
    fn name(&self) -> &'static str;
    /// A core (`core`, window entry `seq`) hands it offloaded operation `id` at `now`. `Pending`:
    /// the agent wakes the core later ([`MemorySystem::wake`]); `Retry`: it cannot start yet.
    /// Agents that take no offloads (devices) are never handed one; the default answers after a
    /// cycle.
    fn offload(
        &mut self,
        sys: &mut MemorySystem,
        now: Ps,
        core: usize,
        id: u32,
        op: OffloadOp,
        seq: u64,
    ) -> Access {
        let _ = (id, op, seq);
        Access::At(now + sys.cycle_ps(core))
    }
    /// One of its own events ([`MemorySystem::schedule`]) is due.
    fn event(&mut self, sys: &mut MemorySystem, now: Ps, kind: u16, id: u32);
    /// The memory system answers one of its requests.
    fn response(&mut self, sys: &mut MemorySystem, now: Ps, r: Response);
    /// A core's uncached load or store at `addr`, inside the register range the agent
    /// registered ([`MemorySystem::register_mmio`]); returns when the core may go on. Agents
    /// without registers never see one.
    fn mmio(
        &mut self,
        sys: &mut MemorySystem,
        now: Ps,
        core: usize,
        addr: u64,
        write: bool,
    ) -> Access {
        let _ = (core, addr, write);
        sys.uncached(now)
    }
    /// Puts its Ethernet port on a link: the frames its MAC sends are kept for
    /// [`Agent::take_frames`]. Agents without a port refuse, saying why.
    fn attach_port(&mut self) -> Result<Port, String> {
        Err(format!("a {} agent has no Ethernet port", self.name()))
    }
    /// Whether its attached port holds sent frames not yet taken.
    fn has_frames(&self) -> bool {
        false
    }
    /// Moves the frames its attached port sent into `out`, each with the time its last bit left
    /// the MAC.
    fn take_frames(&mut self, out: &mut Vec<(Ps, Vec<u8>)>) {
        let _ = out;
    }
    /// A frame from the link reaches its port at `at` (the last bit in, before the MAC's receive
    /// pipeline).
    fn frame_in(&mut self, sys: &mut MemorySystem, at: Ps, frame: Vec<u8>) {
        let _ = (sys, at, frame);
    }
    /// Nothing in flight.
    fn idle(&self) -> bool;
    fn report(&self) -> AgentReport;
}
