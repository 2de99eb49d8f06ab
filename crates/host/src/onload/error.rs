//! Errors of the network onload engine and its sockets: every misuse gets a message that names
//! the argument or the resource at fault.
use thiserror::Error;

/// Result type of the onload engine.
pub type OnloadResult<T> = std::result::Result<T, OnloadError>;

/// What can go wrong with the onload engine, a socket or a frame source.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum OnloadError {
    /// An argument is out of range or inconsistent; the message names it.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Another socket of this engine is bound to the port.
    #[error("port {0} is already bound on this engine")]
    PortInUse(u16),
    /// The engine has stopped (shut down, or its frame source failed).
    #[error("the onload engine has stopped{0}")]
    Stopped(String),
    /// Too many buffers posted: the per-socket ring is full.
    #[error("{what} ring is full ({capacity} entries): receive or reclaim before posting more")]
    RingFull { what: &'static str, capacity: usize },
    /// The operating system refused something; the message says what and why.
    #[error("{0}")]
    Os(String),
    /// The frame source is not available here (e.g. veth without CAP_NET_ADMIN).
    #[error("frame source '{source_name}' is not available: {reason}")]
    Unavailable { source_name: String, reason: String },
}

impl OnloadError {
    /// An `Os` error from the last OS error, prefixed with what was attempted.
    pub fn last_os(what: &str) -> Self {
        OnloadError::Os(format!("{what}: {}", std::io::Error::last_os_error()))
    }
}
