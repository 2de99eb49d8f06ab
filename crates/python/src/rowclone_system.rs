//! Bindings for RowClone in a whole system (movelab-platform's `experiments::rowclone_apps` and
//! `experiments::rowclone_multicore`): one application's runs, the seeded mixes, an alone run,
//! one mix's runs, and the Table 7 summary, each a unit the Python executor can hand out. Values
//! cross as JSON strings; errors become `ValueError`.
use crate::dram::{json, verr};
use crate::interrupt::call_progress;
use crate::interrupt::detach_interruptible;
use crate::platform::{overrides, params};
use movelab_platform::experiments::rowclone_apps::{self, Options as AppOptions};
use movelab_platform::experiments::rowclone_multicore::{self, Mix, MixResult};
use pyo3::prelude::*;
use std::collections::BTreeMap;

fn options(
    instructions: u64,
    warmup: u64,
    overrides_json: Option<&str>,
    app_params: Option<&str>,
) -> PyResult<AppOptions> {
    let o = AppOptions {
        instructions,
        warmup,
        overrides: overrides(overrides_json)?,
        app_params: params(app_params)?,
        apps: Vec::new(),
    };
    o.check().map_err(verr)?;
    Ok(o)
}

/// The applications of `apps.toml` (name, program, class, what it stands for, parameters).
#[pyfunction]
fn rowclone_app_list() -> PyResult<String> {
    json(&rowclone_apps::apps().map_err(verr)?)
}

/// RowClone section 7.3: the given applications (default: the six of Table 4) alone under the
/// baseline, RowClone and RowClone-ZI: rows as JSON.
#[pyfunction]
#[pyo3(signature = (apps=None, instructions=100_000, warmup=50_000, overrides=None, app_params=None, progress=None))]
fn reproduce_rowclone_apps(
    py: Python<'_>,
    apps: Option<Vec<String>>,
    instructions: u64,
    warmup: u64,
    overrides: Option<&str>,
    app_params: Option<&str>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let mut o = options(instructions, warmup, overrides, app_params)?;
    o.apps = apps.unwrap_or_default();
    let rows = detach_interruptible(py, || {
        rowclone_apps::run(&o, &mut |d, t| call_progress(&progress, (d, t)))
    })?
    .map_err(verr)?;
    json(&rows)
}

/// The seeded mixes of `cores` cores (section 7.4): JSON list.
#[pyfunction]
fn rowclone_mixes(seed: u64, cores: u32, n: u32) -> PyResult<String> {
    if !(2..=8).contains(&cores) || cores % 2 == 1 {
        return Err(verr(format!("cores {cores}: must be 2, 4, 6 or 8")));
    }
    if !(1..=rowclone_multicore::MAX_MIXES).contains(&n) {
        return Err(verr(format!(
            "{n} mixes: must be 1 to {}",
            rowclone_multicore::MAX_MIXES
        )));
    }
    json(&rowclone_multicore::draw_mixes(seed, cores, n).map_err(verr)?)
}

/// One application alone on the single-core system under `mechanism` (a `copy.mechanism`):
/// its measure as JSON (ipc, bytes and energy per instruction).
#[pyfunction]
#[pyo3(signature = (app, mechanism="base", instructions=100_000, warmup=50_000, overrides=None, app_params=None))]
fn rowclone_alone(
    py: Python<'_>,
    app: &str,
    mechanism: &str,
    instructions: u64,
    warmup: u64,
    overrides: Option<&str>,
    app_params: Option<&str>,
) -> PyResult<String> {
    let o = options(instructions, warmup, overrides, app_params)?;
    let a = rowclone_apps::app(app).map_err(verr)?;
    let m = detach_interruptible(py, || rowclone_apps::alone(&a, mechanism, &o))?.map_err(verr)?;
    json(&m)
}

/// One application's alone IPC on the multi-core system (one core, baseline, functionally
/// warmed): the reference of a mix's speedups (`rowclone_multicore::alone_ipc`).
#[pyfunction]
#[pyo3(signature = (app, instructions=100_000, warmup=50_000, overrides=None, app_params=None, functional_warming=0))]
fn rowclone_multicore_alone(
    py: Python<'_>,
    app: &str,
    instructions: u64,
    warmup: u64,
    overrides: Option<&str>,
    app_params: Option<&str>,
    functional_warming: u64,
) -> PyResult<f64> {
    let o = rowclone_multicore::Options {
        apps: options(instructions, warmup, overrides, app_params)?,
        functional_warming,
        ..Default::default()
    };
    let a = rowclone_apps::app(app).map_err(verr)?;
    detach_interruptible(py, || rowclone_multicore::alone_ipc(&a, &o))?.map_err(verr)
}

/// One mix (JSON, as `rowclone_mixes` gives) under the three mechanisms; `alone` maps each
/// application to its alone IPC. The mix's result as JSON.
#[pyfunction]
#[pyo3(signature = (mix, alone, instructions=100_000, warmup=50_000, overrides=None, app_params=None, functional_warming=0))]
#[allow(clippy::too_many_arguments)]
fn rowclone_mix(
    py: Python<'_>,
    mix: &str,
    alone: &str,
    instructions: u64,
    warmup: u64,
    overrides: Option<&str>,
    app_params: Option<&str>,
    functional_warming: u64,
) -> PyResult<String> {
    let apps = options(instructions, warmup, overrides, app_params)?;
    let mix: Mix = serde_json::from_str(mix).map_err(|e| verr(format!("mix: {e}")))?;
    let alone: BTreeMap<String, f64> =
        serde_json::from_str(alone).map_err(|e| verr(format!("alone: {e}")))?;
    if !(2..=8).contains(&mix.cores) || mix.apps.len() != mix.cores as usize {
        return Err(verr(format!(
            "mix: {} applications for {} cores (2 to 8)",
            mix.apps.len(),
            mix.cores
        )));
    }
    let o = rowclone_multicore::Options {
        cores: vec![mix.cores],
        mixes: 1,
        seed: 0,
        apps,
        functional_warming,
    };
    let r = detach_interruptible(py, || rowclone_multicore::run_mix(&mix, &o, &alone))?
        .map_err(verr)?;
    json(&r)
}

/// Table 7 and Fig. 13 rows from mixes' results (JSON list of `rowclone_mix` results).
#[pyfunction]
fn rowclone_summarise(results: &str) -> PyResult<String> {
    let r: Vec<MixResult> =
        serde_json::from_str(results).map_err(|e| verr(format!("results: {e}")))?;
    json(&rowclone_multicore::summarise(&r))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rowclone_app_list, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce_rowclone_apps, m)?)?;
    m.add_function(wrap_pyfunction!(rowclone_mixes, m)?)?;
    m.add_function(wrap_pyfunction!(rowclone_alone, m)?)?;
    m.add_function(wrap_pyfunction!(rowclone_mix, m)?)?;
    m.add_function(wrap_pyfunction!(rowclone_multicore_alone, m)?)?;
    m.add_function(wrap_pyfunction!(rowclone_summarise, m)?)?;
    Ok(())
}
