//! Errors of the IPC endpoints: every misuse or failure gets a variant with a clear message.
use thiserror::Error;

/// Result type of the IPC endpoints.
pub type IpcResult<T> = std::result::Result<T, IpcError>;

/// What can go wrong on an IPC connection.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum IpcError {
    /// The socket path cannot be used (too long, contains a NUL byte, ...).
    #[error("socket path '{path}': {reason}")]
    BadPath { path: String, reason: String },
    /// A live server already listens on the socket path (like EADDRINUSE).
    #[error("socket path '{path}': address in use: {reason}")]
    AddrInUse { path: String, reason: String },
    /// A blocking call was cancelled (Ctrl-C); an operation being waited for stays in flight.
    #[error("interrupted while {0}")]
    Interrupted(String),
    /// An operating-system call failed.
    #[error("{op} failed: {msg}")]
    Os { op: &'static str, msg: String },
    /// Connecting, accepting or the handshake did not finish in time.
    #[error("timed out after {ms} ms while {what}")]
    Timeout { what: String, ms: u64 },
    /// `wait` gave up; the operation is still in flight and can be waited for again.
    #[error("operation {cookie} did not complete within {ms} ms (it is still in flight; wait again or close the connection)")]
    WaitTimeout { cookie: u64, ms: u64 },
    /// The peer's credentials (SO_PEERCRED) do not match what it claims, or belong to another user.
    #[error("peer authentication failed: {0}")]
    Auth(String),
    /// The peer sent something this side does not understand.
    #[error("IPC protocol error: {0}")]
    Protocol(String),
    /// The cookie was never issued on this connection, or was already waited for.
    #[error(
        "unknown cookie {0}: it was never issued on this connection or has already been waited for"
    )]
    UnknownCookie(u64),
    /// The writer's message does not fit into the reader's buffer.
    #[error("size mismatch: the writer sent {write_len} bytes but the matching read buffer holds only {read_len} bytes")]
    SizeMismatch { write_len: u64, read_len: u64 },
    /// The peer reported that it could not complete its side of a transfer.
    #[error("the peer failed the transfer: {0}")]
    PeerFailed(String),
    /// The peer went away while the operation was in flight.
    #[error("the peer closed the connection before the operation completed")]
    PeerClosed,
    /// The connection was closed (by this side, or earlier by the peer).
    #[error("the connection is closed: {0}")]
    Closed(String),
    /// A buffer argument is unusable (read-only buffer for a read, too large, ...).
    #[error("invalid buffer: {0}")]
    BadBuffer(String),
    /// An option is out of range.
    #[error("invalid IPC option: {0}")]
    InvalidOption(String),
}

impl IpcError {
    /// The errno a socket call would have given for this error, where one fits (EADDRINUSE).
    pub fn errno(&self) -> Option<i32> {
        match self {
            IpcError::AddrInUse { .. } => Some(libc::EADDRINUSE),
            _ => None,
        }
    }

    /// Wrap the current `errno` as an [`IpcError::Os`].
    pub(crate) fn last_os(op: &'static str) -> Self {
        Self::os(op, std::io::Error::last_os_error())
    }

    pub(crate) fn os(op: &'static str, e: std::io::Error) -> Self {
        IpcError::Os {
            op,
            msg: e.to_string(),
        }
    }
}
