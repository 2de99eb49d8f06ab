//! Errors of the host runtime: every misuse a caller can make gets a variant with a clear message.
use thiserror::Error;

/// Result type of the host runtime.
pub type Result<T> = std::result::Result<T, HostError>;

/// What can go wrong when using a copy engine.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum HostError {
    /// The name given to the registry is not a known engine.
    #[error("unknown copy engine '{name}' (known engines: {known})")]
    UnknownEngine { name: String, known: String },
    /// A configuration value is out of range.
    #[error("invalid engine configuration: {0}")]
    InvalidConfig(String),
    /// The cookie was never issued by this engine, or it has already been waited for.
    #[error(
        "unknown cookie {0}: it was never issued by this engine or has already been waited for"
    )]
    UnknownCookie(u64),
    /// Source and destination lengths differ.
    #[error("length mismatch: source has {src} bytes, destination has {dst} bytes")]
    LengthMismatch { src: usize, dst: usize },
    /// A range does not lie inside its buffer.
    #[error("range out of bounds: offset {offset} + length {len} exceeds buffer of {size} bytes")]
    OutOfBounds {
        offset: usize,
        len: usize,
        size: usize,
    },
    /// A null pointer was passed with a non-zero length (C API).
    #[error("null pointer passed for a non-empty {0} buffer")]
    NullPointer(&'static str),
    /// The operation could not complete because the engine shut down.
    #[error("operation {0} was aborted: the engine shut down before it completed")]
    Aborted(u64),
    /// The engine's worker threads belong to another process: this is a forked child.
    #[error(
        "this engine was created in process {owner}; its worker threads do not exist in the forked \
         process {child}, so it cannot be used there (create a new engine in the child)"
    )]
    Forked { owner: i32, child: i32 },
    /// A blocking call was cancelled (Ctrl-C); the operation is still in flight.
    #[error(
        "interrupted while waiting for operation {0} (it is still in flight; wait for it again)"
    )]
    Interrupted(u64),
    /// A long call (a benchmark run) was cancelled (Ctrl-C) before it finished.
    #[error("{0} was interrupted")]
    Stopped(String),
    /// An analysis's input is malformed (the message names the argument and index).
    #[error("{0}")]
    Invalid(String),
    /// The operating system refused something (thread creation, affinity).
    #[error("operating system error: {0}")]
    Os(String),
}
