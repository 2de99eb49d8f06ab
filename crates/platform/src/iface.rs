//! The interface between a core and everything below it (the uncore): how a core asks for a load,
//! a store, an offloaded copy or initialisation, an uncached access, a ring operation or an
//! interrupt, and what it gets back. Plain vocabulary shared by the cores, the memory system and
//! the agents, so that none of them imports another's implementation.
use crate::sim::Ps;

/// The part of a token that numbers the entry; the top byte names the hardware context.
pub const SEQ_MASK: u64 = (1 << 56) - 1;

/// The hardware context a token belongs to.
pub fn token_context(t: Token) -> u8 {
    match t {
        Token::Rob(v) | Token::Store(v) => (v >> 56) as u8,
    }
}

/// An offloaded bulk operation, as the uncore receives it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OffloadOp {
    pub src: Option<u64>,
    pub dst: u64,
    pub bytes: u64,
    pub value: u8,
}

/// The result of asking the uncore for a load or a store-buffer write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Done at this time.
    At(Ps),
    /// Waiting for memory; the uncore will call back with the token.
    Pending,
    /// Cannot start now (no MSHR, or the line is in a pending copy); retry after the uncore wakes
    /// the core.
    Retry,
    /// Cannot start now; retry at this time (a poll) or when the uncore wakes the core
    /// (`Ps::MAX`: only then, e.g. asleep until a doorbell).
    RetryAt(Ps),
}

/// Who the uncore calls back when memory answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    /// The window entry with this sequence number.
    Rob(u64),
    /// The store-buffer entry with this id.
    Store(u64),
}

/// The core's view of everything below it.
pub trait Uncore {
    fn load(&mut self, now: Ps, addr: u64, copy: bool, token: Token) -> Access;
    /// A store-buffer write at `addr`; `whole`: a CPU copy overwriting the whole line.
    fn store(&mut self, now: Ps, addr: u64, whole: bool, copy: bool, token: Token) -> Access;
    /// Starts offload `id` (issued at `now`, window entry `seq`); the uncore later reports its
    /// completion with `Core::offload_done`. `Retry` when it cannot start yet.
    fn offload(&mut self, now: Ps, id: u32, op: OffloadOp, seq: u64) -> Access;
    /// An uncached load or store at `addr`.
    fn uncached(&mut self, now: Ps, addr: u64, write: bool) -> Access;
    /// A ring wait (window entry `seq`): `At`/`Pending` once there is room or an entry (after its
    /// poll of `addr`), `RetryAt` while not.
    fn ring_wait(&mut self, now: Ps, ring: u16, push: bool, addr: u64, seq: u64) -> Access;
    /// A ring commit: writes `addr` and publishes the push or pop.
    fn ring_commit(&mut self, now: Ps, ring: u16, push: bool, addr: u64, seq: u64) -> Access;
    /// Raises an interrupt at core `target`.
    fn interrupt(&mut self, now: Ps, target: u32) -> Access;
}
