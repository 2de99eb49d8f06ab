//! movelab-py: the Python extension module `movelab._core`.
//!
//! Bindings only: each submodule converts between Python objects and the Rust crates' types and
//! holds no modelling logic of its own. The Python package `movelab` wraps these in an idiomatic API.
use pyo3::prelude::*;

mod dram;
mod host;
mod interrupt;
mod ipc;
mod network_io;
mod onload;
mod package_data;
mod platform;
mod rowclone_system;
mod simulate;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    dram::register(m)?;
    host::register(m)?;
    ipc::register(m)?;
    network_io::register(m)?;
    onload::register(m)?;
    package_data::register(m)?;
    platform::register(m)?;
    rowclone_system::register(m)?;
    simulate::register(m)?;
    Ok(())
}
