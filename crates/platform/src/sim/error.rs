//! Errors of the platform model. Each names what was wrong and where (file, key or operation).
use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum PlatformError {
    /// A platform config problem: the source, the key and what is wrong.
    #[error("{source_name}: {key}: {what}")]
    Config {
        source_name: String,
        key: String,
        what: String,
    },
    /// A workload problem: the source, where in it, and what is wrong.
    #[error("{source_name}: {place}: {what}")]
    Workload {
        source_name: String,
        place: String,
        what: String,
    },
    #[error("unknown {kind} '{name}' (known: {known})")]
    Unknown {
        kind: &'static str,
        name: String,
        known: String,
    },
    #[error("cannot read {path}: {what}")]
    Io { path: String, what: String },
    /// The DRAM model refused something.
    #[error("memory: {0}")]
    Dram(String),
    /// The simulation could not make progress (a model bug, reported instead of hanging).
    #[error("simulation stalled: {0}")]
    Stalled(String),
    /// The simulated software asked for what the hardware cannot do as asked (a driver that
    /// overruns its descriptor ring): reported instead of a run whose bytes come out wrong.
    #[error("{0}")]
    Driver(String),
    /// Stopped on request (Ctrl-C), see `movelab_dram::interrupt`.
    #[error("interrupted")]
    Interrupted,
}

impl PlatformError {
    pub fn config(
        source_name: impl Into<String>,
        key: impl Into<String>,
        what: impl Into<String>,
    ) -> Self {
        PlatformError::Config {
            source_name: source_name.into(),
            key: key.into(),
            what: what.into(),
        }
    }
    pub fn workload(
        source_name: impl Into<String>,
        place: impl Into<String>,
        what: impl Into<String>,
    ) -> Self {
        PlatformError::Workload {
            source_name: source_name.into(),
            place: place.into(),
            what: what.into(),
        }
    }
}

impl From<movelab_dram::error::ConfigError> for PlatformError {
    fn from(e: movelab_dram::error::ConfigError) -> Self {
        PlatformError::Dram(e.to_string())
    }
}

impl From<movelab_dram::error::Error> for PlatformError {
    fn from(e: movelab_dram::error::Error) -> Self {
        PlatformError::Dram(e.to_string())
    }
}
