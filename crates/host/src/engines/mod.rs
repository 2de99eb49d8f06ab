//! The engines, and the registry that builds one by name.
pub mod cpu;
pub mod thread;

use crate::engine::{Engine, EngineConfig};
use crate::error::{HostError, Result};

/// A registry entry: name, one-line description, constructor.
pub struct EngineEntry {
    pub name: &'static str,
    pub description: &'static str,
    pub build: fn(&EngineConfig) -> Result<Box<dyn Engine>>,
}

/// Every engine this build knows.
pub fn registry() -> &'static [EngineEntry] {
    &[
        EngineEntry {
            name: "cpu",
            description: "synchronous memcpy in the calling thread (the base case)",
            build: |c| Ok(Box::new(cpu::CpuEngine::new(c.clone()))),
        },
        EngineEntry {
            name: "thread",
            description:
                "software copy engine: worker threads pinned to cores, fed through lock-free rings",
            build: |c| Ok(Box::new(thread::ThreadEngine::new(c.clone())?)),
        },
    ]
}

/// Build the engine called `name`.
pub fn create(name: &str, config: &EngineConfig) -> Result<Box<dyn Engine>> {
    config.validate()?;
    match registry().iter().find(|e| e.name == name) {
        Some(e) => (e.build)(config),
        None => Err(HostError::UnknownEngine {
            name: name.to_string(),
            known: registry()
                .iter()
                .map(|e| e.name)
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}
