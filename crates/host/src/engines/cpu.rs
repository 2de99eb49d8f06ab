//! `cpu`: the base case. The caller's own core moves the bytes (libc memcpy / memmove / memset)
//! inside `start`, so an `icopy` is complete when it returns and nothing overlaps with it.
use crate::engine::{Completion, Engine, EngineConfig, Op, Stamps};
use std::sync::Arc;

/// The synchronous engine.
pub struct CpuEngine {
    config: EngineConfig,
}

impl CpuEngine {
    pub fn new(config: EngineConfig) -> Self {
        CpuEngine { config }
    }
}

impl Engine for CpuEngine {
    fn name(&self) -> &'static str {
        "cpu"
    }
    fn config(&self) -> &EngineConfig {
        &self.config
    }
    unsafe fn start(&self, op: &Op, done: &Arc<Completion>) {
        done.stamp(|s: &Stamps| &s.dequeued);
        // SAFETY: the caller guarantees the op's memory is valid; cached stores, as memcpy.
        unsafe { op.execute(false) };
        done.stamp(|s: &Stamps| &s.copied);
    }
}
