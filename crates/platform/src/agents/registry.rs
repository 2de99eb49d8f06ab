//! The registry of agents: builds an [`Agent`] from its kind's name. Which agents a platform has,
//! and which offloads each takes, is data ([`PlatformConfig::agent_plan`]: `[copy]`, `[io]` and
//! `[[agents]]`). Adding an agent means a file, a line here and its name in
//! [`crate::config::platform::AGENT_KINDS`].
use crate::agents::copy_engine::CopyEngine;
use crate::agents::idma::IdmaAgent;
use crate::agents::in_memory_copy::InMemory;
use crate::agents::microengines::Microengines;
use crate::agents::pcie_device::PcieDeviceAgent;
use crate::agents::Agent;
use crate::config::platform::PlatformConfig;
use crate::memory::memory_system::{AgentId, MemorySystem};
use crate::sim::error::PlatformError;

/// The agent kinds [`build`] knows.
pub const AGENTS: &[&str] = crate::config::platform::AGENT_KINDS;

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
        "idma" => Ok(Box::new(IdmaAgent::new(id, cfg, sys)?)),
        "microengines" => Ok(Box::new(Microengines::new(id, cfg, sys)?)),
        _ => Err(PlatformError::Unknown {
            kind: "agent",
            name: name.into(),
            known: AGENTS.join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_a_platform_may_list_is_built() {
        let cfg = PlatformConfig::preset("larsen-io").unwrap();
        for (i, kind) in AGENTS.iter().enumerate() {
            // Each on its own memory system (the NIC and the iDMA claim the same registers).
            let mut sys = MemorySystem::new(&cfg, std::slice::from_ref(&cfg.core)).unwrap();
            let mut c = cfg.clone();
            if *kind == "in-memory" {
                c.copy.mechanism = "rowclone".into();
            }
            // larsen-io's NIC has an RX ring; an iDMA receiving into it needs its pinned buffer.
            if *kind == "idma" {
                if let Some(io) = c.io.as_mut() {
                    io.pinned = Some(0x3800_0000);
                }
            }
            if *kind == "microengines" {
                c.microengines = Some(Default::default());
            }
            let a = build(kind, i as AgentId, &c, &mut sys).unwrap();
            assert_eq!(a.name(), *kind);
        }
        let mut sys = MemorySystem::new(&cfg, std::slice::from_ref(&cfg.core)).unwrap();
        assert!(build("dma-engine", 9, &cfg, &mut sys).is_err());
    }
}
