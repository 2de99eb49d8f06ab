//! The copy-engine trait: the mechanism behind [`crate::Runtime`].
//!
//! An engine receives operations ([`Op`]: a copy or a fill on raw memory) and signals their
//! [`Completion`] records. The runtime owns cookies, the cookie table and waiting; an engine only
//! moves bytes. New mechanisms (a hardware engine such as Intel DSA) implement [`Engine`] and
//! register a name in [`crate::engines::registry`].
use crate::cancel::{Cancel, Never, SLICE};
use crate::error::{HostError, Result};
use crate::sys;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What an operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// Copy `len` bytes from `src` to the destination (memmove semantics when they overlap).
    Copy { src: *const u8 },
    /// Set `len` bytes of the destination to `value`.
    Fill { value: u8 },
}

/// One operation on raw memory, as engines see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    pub kind: OpKind,
    pub dst: *mut u8,
    pub len: usize,
    /// Allocate the destination in the cache (ordinary stores) even above the streaming threshold.
    pub cache_dst: bool,
}

// SAFETY: an Op is a description of memory, not an owner of it; whoever submits it guarantees the
// memory stays valid until completion (see `Runtime::submit_raw`), whichever thread moves the bytes.
unsafe impl Send for Op {}
// SAFETY: as above; an Op is never mutated through a shared reference.
unsafe impl Sync for Op {}

impl Op {
    /// A copy of `len` bytes from `src` to `dst`.
    pub fn copy(src: *const u8, dst: *mut u8, len: usize) -> Self {
        Op {
            kind: OpKind::Copy { src },
            dst,
            len,
            cache_dst: false,
        }
    }
    /// A fill of `len` bytes at `dst` with `value`.
    pub fn fill(dst: *mut u8, value: u8, len: usize) -> Self {
        Op {
            kind: OpKind::Fill { value },
            dst,
            len,
            cache_dst: false,
        }
    }
    /// The same operation with the destination allocated in the cache.
    pub fn in_cache(mut self, cache_dst: bool) -> Self {
        self.cache_dst = cache_dst;
        self
    }

    /// Move the bytes of this operation (or of one chunk of it) in the calling thread.
    ///
    /// # Safety
    /// The memory the op describes must be valid for the whole call.
    pub unsafe fn execute(&self, nt: bool) {
        match self.kind {
            // SAFETY: forwarded caller guarantee.
            OpKind::Copy { src } if nt => unsafe {
                crate::kernel::copy_nt(self.dst, src, self.len)
            },
            // SAFETY: forwarded caller guarantee.
            OpKind::Copy { src } => unsafe { crate::kernel::copy(self.dst, src, self.len) },
            // SAFETY: forwarded caller guarantee.
            OpKind::Fill { value } if nt => unsafe {
                crate::kernel::fill_nt(self.dst, value, self.len)
            },
            // SAFETY: forwarded caller guarantee.
            OpKind::Fill { value } => unsafe { crate::kernel::fill(self.dst, value, self.len) },
        }
    }

    /// Do source and destination overlap (copies only)?
    pub fn is_overlapping(&self) -> bool {
        match self.kind {
            OpKind::Copy { src } => {
                crate::kernel::overlaps(src as usize, self.dst as usize, self.len)
            }
            OpKind::Fill { .. } => false,
        }
    }
}

/// Parameters of an engine. Every field has a default; `channels` etc. only matter to `thread`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    /// Number of channels (worker threads) of the thread engine.
    pub channels: usize,
    /// Descriptors each channel's ring can hold before submitters wait for room.
    pub ring_capacity: usize,
    /// Operations of at least this many bytes use non-temporal (cache-bypassing) stores, unless
    /// the operation asks for its destination in the cache.
    pub nt_threshold: usize,
    /// Operations of at least this many bytes are split across all channels.
    pub split_threshold: usize,
    /// Pin each worker to a core.
    pub pin: bool,
    /// Cores for the workers, channel i on `cpus[i % len]`; empty = the last cores, counting down.
    pub cpus: Vec<usize>,
    /// How long an idle worker spins before going to sleep, in microseconds. Longer than a
    /// wake-up (about 50 us on a virtual machine) so that a steady stream never waits for one.
    pub spin_us: u64,
    /// After spinning, an idle worker naps: it polls its ring every `nap_us` microseconds
    /// (a timed sleep; submitters need no system call to wake it) ...
    pub nap_us: u64,
    /// ... until it has been idle for `park_after_us`; then it parks on its doorbell (a futex) and
    /// the next submitter wakes it with a system call.
    pub park_after_us: u64,
    /// How long `wait` spins before sleeping on the completion record, in microseconds.
    pub wait_spin_us: u64,
    /// Run the workers with real-time (SCHED_FIFO) priority so that other tasks on their cores
    /// cannot preempt a copy. Needs CAP_SYS_NICE; meant for measurements on a busy machine.
    pub realtime: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            channels: 1,
            ring_capacity: 1024,
            nt_threshold: 1 << 20,
            split_threshold: 1 << 20,
            pin: true,
            cpus: Vec::new(),
            spin_us: 100,
            nap_us: 20,
            park_after_us: 20_000,
            wait_spin_us: 1000,
            realtime: false,
        }
    }
}

impl EngineConfig {
    /// Check ranges; the error names the field.
    pub fn validate(&self) -> Result<()> {
        if !(1..=256).contains(&self.channels) {
            return Err(HostError::InvalidConfig(format!(
                "channels = {}: expected 1..=256",
                self.channels
            )));
        }
        if !(2..=1 << 20).contains(&self.ring_capacity) {
            return Err(HostError::InvalidConfig(format!(
                "ring_capacity = {}: expected 2..=1048576",
                self.ring_capacity
            )));
        }
        // An idle worker naps up to nap_us before looking at its ring: unbounded, a copy could
        // wait for hours. One second bounds every pause a setting can introduce.
        for (name, v) in [
            ("spin_us", self.spin_us),
            ("wait_spin_us", self.wait_spin_us),
            ("nap_us", self.nap_us),
        ] {
            if v > 1_000_000 {
                return Err(HostError::InvalidConfig(format!(
                    "{name} = {v}: expected 0..=1000000 (microseconds)"
                )));
            }
        }
        if self.park_after_us > 60_000_000 {
            return Err(HostError::InvalidConfig(format!(
                "park_after_us = {}: expected 0..=60000000 (microseconds)",
                self.park_after_us
            )));
        }
        if self.cpus.len() > 4096 {
            return Err(HostError::InvalidConfig(format!(
                "cpus has {} entries: expected at most 4096",
                self.cpus.len()
            )));
        }
        let cpus = sys::available_cpus();
        if let Some(c) = self.cpus.iter().find(|c| !cpus.contains(c)) {
            return Err(HostError::InvalidConfig(format!(
                "cpus contains {c}, which is not available (have {cpus:?})"
            )));
        }
        Ok(())
    }
}

/// Timestamps of one traced operation (nanoseconds on [`sys::now_ns`]'s clock; 0 = not reached).
#[derive(Debug, Default)]
pub struct Stamps {
    pub submit_start: AtomicU64,
    pub submit_end: AtomicU64,
    pub dequeued: AtomicU64,
    pub copied: AtomicU64,
}

/// The completion record of one operation: how many parts are still outstanding.
///
/// The runtime holds one guard part while submitting, so an engine adds its parts
/// ([`Completion::add_parts`]) before it dispatches any and the count cannot reach zero early.
#[derive(Debug)]
pub struct Completion {
    remaining: AtomicU32,
    waiters: AtomicU32,
    aborted: AtomicBool,
    pub stamps: Option<Box<Stamps>>,
}

impl Completion {
    /// A record with one (guard) part outstanding.
    pub fn new(trace: bool) -> Self {
        LIVE_RECORDS.fetch_add(1, Ordering::Relaxed);
        Completion {
            remaining: AtomicU32::new(1),
            waiters: AtomicU32::new(0),
            aborted: AtomicBool::new(false),
            stamps: trace.then(Box::default),
        }
    }

    /// Announce `n` more parts.
    pub fn add_parts(&self, n: u32) {
        self.remaining.fetch_add(n, Ordering::AcqRel);
    }

    /// One part finished; wakes sleeping waiters when it was the last.
    pub fn part_done(&self) {
        if self.remaining.fetch_sub(1, Ordering::SeqCst) == 1
            && self.waiters.load(Ordering::SeqCst) > 0
        {
            sys::futex_wake_all(&self.remaining);
        }
    }

    /// Mark the operation as failed (it will still complete).
    pub fn abort(&self) {
        self.aborted.store(true, Ordering::Release);
    }

    /// Has every part finished?
    pub fn is_done(&self) -> bool {
        self.remaining.load(Ordering::Acquire) == 0
    }

    /// Did the operation fail?
    pub fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::Acquire)
    }

    /// Block until done: spin for `spin`, then sleep on the record (no busy polling).
    pub fn wait(&self, spin: Duration) {
        self.wait_cancel(spin, &Never);
    }

    /// As [`Completion::wait`], but sleep in slices of [`SLICE`] and give up when `cancel` says
    /// so. Returns true when the operation is done, false when cancelled.
    pub fn wait_cancel(&self, spin: Duration, cancel: &dyn Cancel) -> bool {
        if self.is_done() {
            return true;
        }
        let start = Instant::now();
        let mut n = 0u32;
        while start.elapsed() < spin {
            for _ in 0..64 {
                if self.is_done() {
                    return true;
                }
                std::hint::spin_loop();
            }
            n += 1;
            if n.is_multiple_of(16) {
                // A spin may be long (wait_spin_us up to 1 s): ask here too.
                if cancel.cancelled() {
                    return false;
                }
                // Every few microseconds, offer the core to anything runnable on it (a worker
                // of this engine may share the caller's core when there are more channels than
                // spare cores).
                std::thread::yield_now();
            }
        }
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let done = loop {
            let r = self.remaining.load(Ordering::SeqCst);
            if r == 0 {
                break true;
            }
            if cancel.cancelled() {
                break false;
            }
            sys::futex_wait_for(&self.remaining, r, SLICE);
        };
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        done
    }

    pub(crate) fn stamp(&self, which: fn(&Stamps) -> &AtomicU64) {
        if let Some(s) = &self.stamps {
            which(s).store(sys::now_ns().max(1), Ordering::Release);
        }
    }
}

static LIVE_RECORDS: AtomicUsize = AtomicUsize::new(0);

/// Completion records alive in this process (a leak check for tests).
pub fn live_records() -> usize {
    LIVE_RECORDS.load(Ordering::Relaxed)
}

impl Drop for Completion {
    fn drop(&mut self) {
        LIVE_RECORDS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A mechanism that moves bytes.
pub trait Engine: Send + Sync {
    /// The registry name.
    fn name(&self) -> &'static str;
    /// The configuration it was built with.
    fn config(&self) -> &EngineConfig;
    /// Can the engine be used in the calling process? An engine that owns threads (or any other
    /// per-process resource) returns [`HostError::Forked`] in a forked child, where its threads
    /// do not exist: the runtime then refuses every call at once instead of hanging, and its
    /// destructor leaves the parent's resources alone.
    fn usable_here(&self) -> Result<()> {
        Ok(())
    }
    /// Start one operation. The engine calls [`Completion::add_parts`] for the parts it creates
    /// before dispatching them and [`Completion::part_done`] once per part when its bytes have
    /// moved (a synchronous engine may simply move the bytes and return).
    ///
    /// # Safety
    /// The memory the op describes must stay valid, and not be accessed by anyone else, until
    /// `done` reports completion.
    unsafe fn start(&self, op: &Op, done: &std::sync::Arc<Completion>);
    /// Start several operations; engines may batch doorbells.
    ///
    /// # Safety
    /// As [`Engine::start`] for every op.
    unsafe fn start_batch(&self, ops: &[(Op, std::sync::Arc<Completion>)]) {
        for (op, done) in ops {
            // SAFETY: forwarded caller guarantee.
            unsafe { self.start(op, done) };
        }
    }
}
