//! IPC between processes after Table 2 and section 3.3 of the I/OAT user-space paper: two
//! processes connected by a Unix-domain socket post buffers with `iwrite` / `iread` (or the
//! blocking `write` / `read`) and complete them with `check` / `wait`.
//!
//! A transfer moves the data once, straight from the writer's buffer into the reader's, with
//! cross-process memory access (process_vm_readv / process_vm_writev) where the kernel allows it;
//! otherwise it goes through a sealed shared-memory ring of chunks (two copies), or, when asked,
//! through the socket itself. Every completed [`Transfer`] says which path it took and, for a
//! fallback, why. See [`conn`] for the rendezvous protocol and the peer authentication.
//!
//! Not here: the single-process copy engine (the rest of movelab-host) and any simulation.
pub mod bench;
pub mod conn;
pub mod error;
pub mod proto;
pub mod sys;

pub use conn::{
    connect, connect_with, Connection, Direction, Listener, Options, Pending, Transfer,
    TransferPath,
};
pub use error::{IpcError, IpcResult};
pub use sys::PeerCred;

#[cfg(test)]
mod tests;
