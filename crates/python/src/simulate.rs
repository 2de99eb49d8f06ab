//! Bindings for the one entry point of every simulated system: `simulate` (any system by name, a
//! report as JSON) and `systems` (the registry: names, presets, workloads).
use crate::dram::{json, verr};
use crate::interrupt::{call_progress, detach_interruptible};
use crate::platform::overrides;
use movelab_platform::systems::{simulate_with_progress as run, Params, SYSTEMS};
use pyo3::prelude::*;

/// Runs `workload` with `params` (a JSON object) on `config` (a built-in preset or a TOML file) of
/// `system` (found from the preset's name when None), with `overrides` (a JSON object); the report
/// as JSON. `progress(done, planned)`, if given, is called now and then with the operations fed
/// to the cores so far and in all (not by the network system).
#[pyfunction]
#[pyo3(signature = (config, workload, system=None, overrides=None, params_json=None, progress=None))]
fn simulate(
    py: Python<'_>,
    config: &str,
    workload: &str,
    system: Option<&str>,
    overrides: Option<&str>,
    params_json: Option<&str>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let over = self::overrides(overrides)?;
    let params: Params = match params_json {
        None => Params::new(),
        Some(s) => {
            let v: serde_json::Value = serde_json::from_str(s).map_err(verr)?;
            toml::Value::try_from(v)
                .ok()
                .and_then(|t| t.try_into().ok())
                .ok_or_else(|| verr("params must be an object of numbers and names"))?
        }
    };
    let r = detach_interruptible(py, || {
        run(
            system,
            config,
            &over,
            workload,
            &params,
            &mut |n, planned| call_progress(&progress, (n, planned)),
        )
    })?
    .map_err(verr)?;
    json(&r)
}

/// The systems: name, description, built-in presets and workloads (with their parameters).
#[pyfunction]
fn systems() -> PyResult<String> {
    let v: Vec<serde_json::Value> = SYSTEMS
        .iter()
        .map(|s| {
            serde_json::json!({
                "name": s.name,
                "about": s.about,
                "presets": (s.presets)(),
                "workloads": (s.workloads)().into_iter()
                    .map(|(n, p)| serde_json::json!({"name": n, "params": p}))
                    .collect::<Vec<_>>(),
            })
        })
        .collect();
    json(&v)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(systems, m)?)?;
    Ok(())
}
