//! The papers' system-level experiments: each builds its platforms and workloads from the
//! presets, runs them, and returns rows (movelab's figures beside the paper's where it gives
//! them). The Python CLI prints, stores and plots them.
pub mod composition;
pub mod golden;
pub mod larsen_idma;
pub mod pcie_model_check;
pub mod rowclone_apps;
pub mod rowclone_fork;
pub mod rowclone_multicore;
pub mod wun_onload;
pub mod zhao_copy_engine;

use crate::config::platform::PlatformConfig;
use crate::sim::error::PlatformError;

/// A built-in platform with overrides (a TOML table shaped like a platform config) layered on.
pub fn platform(
    name: &str,
    overrides: &toml::Value,
    extra: &str,
) -> Result<PlatformConfig, PlatformError> {
    let mut cfg = PlatformConfig::preset(name)?;
    if overrides.as_table().is_some_and(|t| !t.is_empty()) {
        cfg = cfg.with_overrides(
            overrides.clone(),
            &format!("overrides on platform '{name}'"),
        )?;
    }
    if !extra.is_empty() {
        let v: toml::Value = toml::from_str(extra)
            .map_err(|e| PlatformError::config("experiment", "(internal)", e.to_string()))?;
        cfg = cfg.with_overrides(v, "experiment")?;
    }
    Ok(cfg)
}
