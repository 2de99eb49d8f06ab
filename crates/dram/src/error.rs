//! Errors. Every error a user can cause names what was wrong and where (file, key, line).
use thiserror::Error;

/// A configuration or preset problem.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ConfigError {
    #[error("{source_name}: {key}: {what}")]
    Invalid {
        source_name: String,
        key: String,
        what: String,
    },
    #[error("{source_name}: TOML syntax error: {what}")]
    Syntax { source_name: String, what: String },
    #[error("unknown {kind} '{name}' (known: {known})")]
    Unknown {
        kind: &'static str,
        name: String,
        known: String,
    },
    #[error("cannot read {path}: {what}")]
    Io { path: String, what: String },
}

impl ConfigError {
    pub fn invalid(
        source_name: impl Into<String>,
        key: impl Into<String>,
        what: impl Into<String>,
    ) -> Self {
        ConfigError::Invalid {
            source_name: source_name.into(),
            key: key.into(),
            what: what.into(),
        }
    }
}

/// A problem in a trace or bulk-operation list.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum TraceError {
    #[error("{source_name}:{line}: {what}")]
    Line {
        source_name: String,
        line: usize,
        what: String,
    },
    #[error("cannot read {path}: {what}")]
    Io { path: String, what: String },
    #[error("{0}")]
    Invalid(String),
}

/// A problem in a command log.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum LogError {
    #[error("line {line}: {what}")]
    Line { line: usize, what: String },
    #[error("command log: {0}")]
    Header(String),
    #[error("command log: {0}")]
    Truncated(String),
    #[error("cannot read {path}: {what}")]
    Io { path: String, what: String },
}

/// Any error of the DRAM crate.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("{0}")]
    Request(String),
    #[error("interrupted")]
    Interrupted,
}
