//! Bindings for the network platform (Wun & Crowley's IXP2350-like system, run on the one
//! platform: `systems/udp_pair.rs`): its config, one run and the `wun-onload` reproduction. Values cross as JSON strings; errors become `ValueError`.
use crate::dram::{json, verr};
use crate::interrupt::call_progress;
use crate::interrupt::detach_interruptible;
use crate::platform::overrides;
use movelab_platform::config::network::{NetworkIoConfig, BUILTIN_NETWORK_PLATFORMS};
use movelab_platform::experiments::wun_onload::{self, Point};
use movelab_platform::systems::udp_pair::{self, Direction, RunSpec};
use pyo3::prelude::*;

/// Platform `platform` with the JSON `overrides` merged in.
fn load(platform: &str, overrides: Option<&str>) -> PyResult<NetworkIoConfig> {
    let cfg = NetworkIoConfig::load(platform).map_err(verr)?;
    let ov = self::overrides(overrides)?;
    if ov.as_table().is_some_and(|t| t.is_empty()) {
        return Ok(cfg);
    }
    cfg.with_overrides(ov, "overrides").map_err(verr)
}

/// The network platform after its preset and overrides, as JSON.
#[pyfunction]
#[pyo3(signature = (platform="ixp2350", overrides=None))]
fn network_config(platform: &str, overrides: Option<&str>) -> PyResult<String> {
    json(&load(platform, overrides)?)
}

/// The built-in network platforms' names.
#[pyfunction]
fn network_presets() -> Vec<String> {
    BUILTIN_NETWORK_PLATFORMS
        .iter()
        .map(|(n, _)| n.to_string())
        .collect()
}

/// One run on the one platform (two `ixp-host`s on one wire): configuration `config` ("emu",
/// "softnic", "onloader"), direction "rx" or "tx", UDP payload bytes; `with_app = false` leaves
/// the receiving process out (onloader receive only). Overrides may set only the keys that reach
/// the platform (the network platform's keys, `config/network.rs`). The run's figures and both platforms' statistics as
/// JSON.
#[pyfunction]
#[pyo3(signature = (config, direction, payload, with_app=true, platform="ixp2350", overrides=None))]
fn network_run(
    py: Python<'_>,
    config: &str,
    direction: &str,
    payload: usize,
    with_app: bool,
    platform: &str,
    overrides: Option<&str>,
) -> PyResult<String> {
    let direction = match direction {
        "rx" => Direction::Rx,
        "tx" => Direction::Tx,
        d => return Err(verr(format!("direction '{d}' is not one of: rx, tx"))),
    };
    let ov = self::overrides(overrides)?;
    let cfg = udp_pair::load(platform, &ov).map_err(verr)?;
    let spec = RunSpec {
        config: config.into(),
        direction,
        payload,
        with_app,
    };
    udp_pair::refuse_unread_overrides(&ov, &spec).map_err(verr)?;
    let s = detach_interruptible(py, || udp_pair::run(&cfg, &spec))?.map_err(verr)?;
    json(&s)
}

/// The points of the wun-onload reproduction, as JSON.
#[pyfunction]
#[pyo3(signature = (experiments, payloads))]
fn wun_onload_points(experiments: Vec<String>, payloads: Vec<usize>) -> PyResult<String> {
    json(&wun_onload::points(&experiments, &payloads).map_err(verr)?)
}

/// Runs points (JSON list of {experiment, config, payload_bytes, variant}) of wun-onload: rows
/// as JSON.
#[pyfunction]
#[pyo3(signature = (points, platform="ixp2350", overrides=None, progress=None))]
fn reproduce_wun_onload(
    py: Python<'_>,
    points: &str,
    platform: &str,
    overrides: Option<&str>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let pts: Vec<Point> = serde_json::from_str(points).map_err(|e| verr(format!("points: {e}")))?;
    let ov = self::overrides(overrides)?;
    let rows = detach_interruptible(py, || {
        wun_onload::run(platform, &ov, &pts, &mut |d, t| {
            call_progress(&progress, (d, t))
        })
    })?
    .map_err(verr)?;
    json(&rows)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(network_config, m)?)?;
    m.add_function(wrap_pyfunction!(network_presets, m)?)?;
    m.add_function(wrap_pyfunction!(network_run, m)?)?;
    m.add_function(wrap_pyfunction!(wun_onload_points, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce_wun_onload, m)?)?;
    Ok(())
}
