//! The registry of agents: builds an [`Agent`] from its name, and says which agent takes a core's
//! offloaded copies under each copy mechanism. Adding an agent means a file and a line here.
use crate::agents::copy_engine::CopyEngine;
use crate::agents::in_memory_copy::InMemory;
use crate::agents::pcie_device::PcieDeviceAgent;
use crate::agents::Agent;
use crate::config::platform::PlatformConfig;
use crate::memory::memory_system::{AgentId, MemorySystem};
use crate::sim::error::PlatformError;

/// The agent names [`build`] knows.
pub const AGENTS: &[&str] = &["copy-engine", "in-memory", "nic"];

/// Builds agent `name` as agent number `id` of a platform, registering what it needs with `sys`.
pub fn build(
    name: &str,
    id: AgentId,
    cfg: &PlatformConfig,
    sys: &mut MemorySystem,
) -> Result<Box<dyn Agent>, PlatformError> {
    match name {
        "copy-engine" => Ok(Box::new(CopyEngine::new(id, cfg, sys))),
        "in-memory" => Ok(Box::new(InMemory::new(id, cfg, sys))),
        "nic" => Ok(Box::new(PcieDeviceAgent::new(id, cfg, sys)?)),
        _ => Err(PlatformError::Unknown {
            kind: "agent",
            name: name.into(),
            known: AGENTS.join(", "),
        }),
    }
}

/// The agent that takes a core's offloaded copies under copy mechanism `mechanism`.
pub fn for_mechanism(mechanism: &str) -> Option<&'static str> {
    match mechanism {
        "ce" => Some("copy-engine"),
        "rowclone" | "rowclone-zi" | "mc-dma" => Some("in-memory"),
        _ => None,
    }
}
