//! The files the Python package ships with (presets, paper data, example sweep specs): the
//! repository's `presets/` folder, embedded at build time (build.rs), so that an installed wheel
//! needs no repository. `movelab.data` is the one Python module that reads them.
use pyo3::exceptions::PyFileNotFoundError;
use pyo3::prelude::*;

include!(concat!(env!("OUT_DIR"), "/package_files.rs"));

/// The paths (under `presets/`) of every file shipped with the package, sorted.
#[pyfunction]
fn package_files() -> Vec<&'static str> {
    FILES.iter().map(|(n, _)| *n).collect()
}

/// The text of the shipped file `name` (a path under `presets/`, e.g. `papers/rowclone.toml`).
#[pyfunction]
fn package_file(name: &str) -> PyResult<&'static str> {
    FILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            PyFileNotFoundError::new_err(format!("no file presets/{name} ships with movelab"))
        })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(package_files, m)?)?;
    m.add_function(wrap_pyfunction!(package_file, m)?)?;
    Ok(())
}
