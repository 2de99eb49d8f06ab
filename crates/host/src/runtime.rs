//! The API of Table 1 of the paper (copy / icopy / check / wait) plus fill, batches and wait_all,
//! over any [`Engine`].
//!
//! Cookies are issued in increasing order per runtime and name a completion record in the cookie
//! table until they are waited for; `check` polls a record, `wait` sleeps on it (after a short
//! spin) and retires the cookie. Waiting for a cookie twice, or for one never issued, is
//! [`HostError::UnknownCookie`], never a hang.
//!
//! Every call first asks the engine whether it can be used in this process (a thread engine
//! inherited by a forked child cannot: [`HostError::Forked`]). Waits have `_with` variants that
//! take a [`Cancel`] and give up (leaving the operation in flight) when it says so.
use crate::cancel::{Cancel, Never};
use crate::engine::{Completion, Engine, EngineConfig, Op, Stamps};
use crate::engines;
use crate::error::{HostError, Result};
use crate::sys;
use serde::Serialize;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Names one asynchronous operation of one runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Cookie(pub u64);

/// Where the time of one traced operation went, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Trace {
    /// Inside the submit call (cookie, completion record, descriptor into the ring, doorbell).
    pub submit_ns: u64,
    /// From the end of submit until an engine worker picked the descriptor up.
    pub queue_ns: u64,
    /// Moving the bytes.
    pub copy_ns: u64,
    /// From the end of the copy until `wait` returned to the caller.
    pub complete_ns: u64,
}

/// A copy engine plus its cookie table: the object applications use.
pub struct Runtime {
    engine: Box<dyn Engine>,
    table: Mutex<HashMap<u64, Arc<Completion>>>,
    next: AtomicU64,
    spin: Duration,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("engine", &self.engine.name())
            .field("config", self.engine.config())
            .finish()
    }
}

impl Runtime {
    /// Build the engine called `name` (see [`engines::registry`]).
    pub fn new(name: &str, config: &EngineConfig) -> Result<Self> {
        let engine = engines::create(name, config)?;
        Ok(Self::with_engine(engine))
    }

    /// Wrap an engine built elsewhere.
    pub fn with_engine(engine: Box<dyn Engine>) -> Self {
        let spin = Duration::from_micros(engine.config().wait_spin_us);
        Runtime {
            engine,
            table: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            spin,
        }
    }

    /// The engine's registry name.
    pub fn name(&self) -> &'static str {
        self.engine.name()
    }

    /// The engine's configuration.
    pub fn config(&self) -> &EngineConfig {
        self.engine.config()
    }

    /// Can this runtime be used in the calling process? [`HostError::Forked`] in a forked child
    /// of the process that created a thread engine.
    pub fn usable_here(&self) -> Result<()> {
        self.engine.usable_here()
    }

    /// Number of cookies issued and not yet waited for.
    pub fn outstanding(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Arc<Completion>>> {
        // The table stays consistent even if a holder panicked (single inserts/removes).
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn check_op(op: &Op) -> Result<()> {
        if op.len == 0 {
            return Ok(());
        }
        if op.dst.is_null() {
            return Err(HostError::NullPointer("destination"));
        }
        if let crate::engine::OpKind::Copy { src } = op.kind {
            if src.is_null() {
                return Err(HostError::NullPointer("source"));
            }
        }
        if (op.dst as usize).checked_add(op.len).is_none() {
            return Err(HostError::OutOfBounds {
                offset: op.dst as usize,
                len: op.len,
                size: usize::MAX,
            });
        }
        Ok(())
    }

    /// Start `ops`; returns their completion records (and cookies if `register`).
    ///
    /// # Safety
    /// As [`Runtime::submit_raw`].
    unsafe fn start(
        &self,
        ops: &[Op],
        trace: bool,
        register: bool,
    ) -> Result<Vec<(Cookie, Arc<Completion>)>> {
        self.engine.usable_here()?;
        for op in ops {
            Self::check_op(op)?;
        }
        let t0 = if trace { sys::now_ns().max(1) } else { 0 };
        let mut started: Vec<(Op, Arc<Completion>)> = Vec::with_capacity(ops.len());
        for op in ops {
            let done = Arc::new(Completion::new(trace));
            if let Some(s) = &done.stamps {
                s.submit_start.store(t0, Ordering::Relaxed);
            }
            started.push((*op, done));
        }
        let first = self.next.fetch_add(ops.len() as u64, Ordering::Relaxed);
        if register {
            let mut t = self.lock();
            for (i, (_, done)) in started.iter().enumerate() {
                t.insert(first + i as u64, done.clone());
            }
        }
        // SAFETY: forwarded caller guarantee (memory valid until each record reports done).
        unsafe { self.engine.start_batch(&started) };
        let out = started
            .into_iter()
            .enumerate()
            .map(|(i, (_, done))| {
                done.stamp(|s: &Stamps| &s.submit_end);
                done.part_done(); // release the submit guard part
                (Cookie(first + i as u64), done)
            })
            .collect();
        Ok(out)
    }

    /// Submit a batch of operations; returns one cookie per op, in order.
    ///
    /// # Safety
    /// Every op's memory must stay valid, and must not be read (destination) or written (source
    /// or destination) by anyone else, until its cookie has been waited for (or `check` returned
    /// true), or until the runtime is dropped (which waits for all operations).
    pub unsafe fn submit_raw(&self, ops: &[Op], trace: bool) -> Result<Vec<Cookie>> {
        // SAFETY: forwarded caller guarantee.
        Ok(unsafe { self.start(ops, trace, true) }?
            .into_iter()
            .map(|(c, _)| c)
            .collect())
    }

    /// Non-blocking copy of `len` bytes from `src` to `dst` (memmove semantics on overlap).
    ///
    /// # Safety
    /// As [`Runtime::submit_raw`].
    pub unsafe fn icopy_raw(
        &self,
        src: *const u8,
        dst: *mut u8,
        len: usize,
        cache_dst: bool,
    ) -> Result<Cookie> {
        // SAFETY: forwarded caller guarantee.
        let c = unsafe { self.submit_raw(&[Op::copy(src, dst, len).in_cache(cache_dst)], false) }?;
        Ok(c[0])
    }

    /// Non-blocking fill of `len` bytes at `dst` with `value`.
    ///
    /// # Safety
    /// As [`Runtime::submit_raw`].
    pub unsafe fn ifill_raw(
        &self,
        dst: *mut u8,
        value: u8,
        len: usize,
        cache_dst: bool,
    ) -> Result<Cookie> {
        // SAFETY: forwarded caller guarantee.
        let c =
            unsafe { self.submit_raw(&[Op::fill(dst, value, len).in_cache(cache_dst)], false) }?;
        Ok(c[0])
    }

    /// Blocking operation on raw memory (submits and waits before returning).
    ///
    /// # Safety
    /// The op's memory must be valid for the duration of the call.
    pub unsafe fn run_raw(&self, op: Op) -> Result<()> {
        // SAFETY: forwarded caller guarantee; we wait for completion before returning.
        let started = unsafe { self.start(&[op], false, false) }?;
        for (c, done) in started {
            done.wait(self.spin);
            if done.is_aborted() {
                return Err(HostError::Aborted(c.0));
            }
        }
        Ok(())
    }

    /// Has the operation completed? Does not retire the cookie.
    pub fn check(&self, cookie: Cookie) -> Result<bool> {
        self.engine.usable_here()?;
        let t = self.lock();
        let done = t.get(&cookie.0).ok_or(HostError::UnknownCookie(cookie.0))?;
        if done.is_done() && done.is_aborted() {
            return Err(HostError::Aborted(cookie.0));
        }
        Ok(done.is_done())
    }

    /// Wait for the operation to complete and retire its cookie.
    pub fn wait(&self, cookie: Cookie) -> Result<()> {
        self.wait_traced(cookie).map(|_| ())
    }

    /// As [`Runtime::wait`], returning where the time went (zeros unless submitted with trace).
    pub fn wait_traced(&self, cookie: Cookie) -> Result<Trace> {
        self.wait_traced_with(cookie, &Never)
    }

    /// As [`Runtime::wait`], giving up with [`HostError::Interrupted`] when `cancel` says so
    /// (asked at least every [`crate::cancel::SLICE`]); the cookie then stays outstanding.
    pub fn wait_with(&self, cookie: Cookie, cancel: &dyn Cancel) -> Result<()> {
        self.wait_traced_with(cookie, cancel).map(|_| ())
    }

    /// As [`Runtime::wait_traced`], cancellable like [`Runtime::wait_with`].
    pub fn wait_traced_with(&self, cookie: Cookie, cancel: &dyn Cancel) -> Result<Trace> {
        self.engine.usable_here()?;
        let done = self
            .lock()
            .get(&cookie.0)
            .cloned()
            .ok_or(HostError::UnknownCookie(cookie.0))?;
        if !done.wait_cancel(self.spin, cancel) {
            return Err(HostError::Interrupted(cookie.0));
        }
        let end = sys::now_ns();
        if self.lock().remove(&cookie.0).is_none() {
            // Someone else waited for it concurrently and retired it first.
            return Err(HostError::UnknownCookie(cookie.0));
        }
        if done.is_aborted() {
            return Err(HostError::Aborted(cookie.0));
        }
        Ok(match &done.stamps {
            Some(s) => {
                let g = |a: &AtomicU64| a.load(Ordering::Acquire);
                let (s0, s1, d, c) = (
                    g(&s.submit_start),
                    g(&s.submit_end),
                    g(&s.dequeued),
                    g(&s.copied),
                );
                if c <= s1 {
                    // A synchronous engine copied inside submit: no queueing, and the copy is
                    // not part of the submit overhead.
                    let copy = c.saturating_sub(d);
                    Trace {
                        submit_ns: s1.saturating_sub(s0).saturating_sub(copy),
                        queue_ns: 0,
                        copy_ns: copy,
                        complete_ns: end.saturating_sub(s1),
                    }
                } else {
                    let d = d.max(s1);
                    Trace {
                        submit_ns: s1.saturating_sub(s0),
                        queue_ns: d.saturating_sub(s1),
                        copy_ns: c.max(d).saturating_sub(d),
                        complete_ns: end.saturating_sub(c.max(d)),
                    }
                }
            }
            None => Trace::default(),
        })
    }

    /// Wait for every outstanding cookie and retire them all; reports the first failure.
    pub fn wait_all(&self) -> Result<()> {
        self.wait_all_with(&Never)
    }

    /// As [`Runtime::wait_all`], giving up with [`HostError::Interrupted`] when `cancel` says
    /// so; cookies are retired only once all of them have completed.
    pub fn wait_all_with(&self, cancel: &dyn Cancel) -> Result<()> {
        self.engine.usable_here()?;
        let mut all: Vec<(u64, Arc<Completion>)> =
            self.lock().iter().map(|(c, d)| (*c, d.clone())).collect();
        all.sort_by_key(|(c, _)| *c);
        for (c, done) in &all {
            // Asked between records too: records that complete while their waiter still spins
            // would otherwise never give the cancel a chance.
            if !done.is_done() && cancel.cancelled() || !done.wait_cancel(self.spin, cancel) {
                return Err(HostError::Interrupted(*c));
            }
        }
        let mut first_err = None;
        let mut t = self.lock();
        for (c, done) in all {
            // Absent: another thread waited for it meanwhile (and reported it).
            if t.remove(&c).is_some() && done.is_aborted() && first_err.is_none() {
                first_err = Some(HostError::Aborted(c));
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Blocking copy of `src` into `dst` (lengths must match).
    pub fn copy(&self, src: &[u8], dst: &mut [u8]) -> Result<()> {
        self.copy_opts(src, dst, false)
    }

    /// Blocking copy with the choice of allocating the destination in the cache.
    pub fn copy_opts(&self, src: &[u8], dst: &mut [u8], cache_dst: bool) -> Result<()> {
        if src.len() != dst.len() {
            return Err(HostError::LengthMismatch {
                src: src.len(),
                dst: dst.len(),
            });
        }
        // SAFETY: both slices are borrowed for the whole call and run_raw waits before returning.
        unsafe {
            self.run_raw(Op::copy(src.as_ptr(), dst.as_mut_ptr(), src.len()).in_cache(cache_dst))
        }
    }

    /// Blocking copy inside one buffer: `len` bytes from `src_off` to `dst_off` (memmove).
    pub fn copy_within(
        &self,
        buf: &mut [u8],
        src_off: usize,
        dst_off: usize,
        len: usize,
    ) -> Result<()> {
        for off in [src_off, dst_off] {
            if off.checked_add(len).is_none_or(|end| end > buf.len()) {
                return Err(HostError::OutOfBounds {
                    offset: off,
                    len,
                    size: buf.len(),
                });
            }
        }
        let base = buf.as_mut_ptr();
        // SAFETY: both ranges were checked to lie inside `buf`, which is borrowed mutably for the
        // whole call; run_raw waits before returning.
        unsafe { self.run_raw(Op::copy(base.add(src_off), base.add(dst_off), len)) }
    }

    /// Blocking fill of `dst` with `value`.
    pub fn fill(&self, dst: &mut [u8], value: u8) -> Result<()> {
        // SAFETY: dst is borrowed mutably for the whole call; run_raw waits before returning.
        unsafe { self.run_raw(Op::fill(dst.as_mut_ptr(), value, dst.len())) }
    }

    /// Run `f` with a [`Scope`] in which asynchronous operations may borrow buffers; returns only
    /// after every operation started in the scope has completed (also when `f` panics).
    pub fn scope<'env, F, T>(&'env self, f: F) -> T
    where
        F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
    {
        let scope = Scope {
            rt: self,
            started: Mutex::new(Vec::new()),
            _scope: PhantomData,
            _env: PhantomData,
        };
        struct Finish<'a, 's, 'e>(&'a Scope<'s, 'e>);
        impl Drop for Finish<'_, '_, '_> {
            fn drop(&mut self) {
                self.0.finish();
            }
        }
        let guard = Finish(&scope);
        let out = f(guard.0);
        drop(guard);
        out
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if self.engine.usable_here().is_err() {
            // A forked child: nobody here will ever complete the parent's operations (and the
            // table's lock may have been copied while held); leave them be.
            return;
        }
        // Engines drain their queues on drop; wait here too so that no record is left pending.
        for (_, done) in self.lock().drain() {
            done.wait(self.spin);
        }
    }
}

/// Asynchronous operations on borrowed buffers. Created by [`Runtime::scope`]; every buffer
/// passed in stays borrowed until the scope ends, and the scope ends only after its operations
/// have completed, so a buffer can never be freed or reused while the engine writes it.
pub struct Scope<'scope, 'env: 'scope> {
    rt: &'env Runtime,
    started: Mutex<Vec<(Cookie, Arc<Completion>)>>,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'scope, 'env> Scope<'scope, 'env> {
    fn submit(&self, ops: &[Op], trace: bool) -> Result<Vec<Cookie>> {
        // SAFETY: the ops' memory is borrowed for 'env by the public callers; finish() (run
        // before `Runtime::scope` returns, even on panic) waits for every record started here.
        let started = unsafe { self.rt.start(ops, trace, true) }?;
        let cookies = started.iter().map(|(c, _)| *c).collect();
        self.started
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(started);
        Ok(cookies)
    }

    /// Start copying `src` into `dst` (lengths must match).
    pub fn icopy(&self, src: &'env [u8], dst: &'env mut [u8]) -> Result<Cookie> {
        self.icopy_opts(src, dst, false)
    }

    /// As [`Scope::icopy`], choosing whether the destination is allocated in the cache.
    pub fn icopy_opts(
        &self,
        src: &'env [u8],
        dst: &'env mut [u8],
        cache_dst: bool,
    ) -> Result<Cookie> {
        if src.len() != dst.len() {
            return Err(HostError::LengthMismatch {
                src: src.len(),
                dst: dst.len(),
            });
        }
        let op = Op::copy(src.as_ptr(), dst.as_mut_ptr(), src.len()).in_cache(cache_dst);
        Ok(self.submit(&[op], false)?[0])
    }

    /// Start copying `len` bytes inside `buf` from `src_off` to `dst_off` (memmove semantics).
    pub fn icopy_within(
        &self,
        buf: &'env mut [u8],
        src_off: usize,
        dst_off: usize,
        len: usize,
    ) -> Result<Cookie> {
        for off in [src_off, dst_off] {
            if off.checked_add(len).is_none_or(|end| end > buf.len()) {
                return Err(HostError::OutOfBounds {
                    offset: off,
                    len,
                    size: buf.len(),
                });
            }
        }
        let base = buf.as_mut_ptr();
        // wrapping_add: in bounds (checked above), no memory is touched here.
        let op = Op::copy(base.wrapping_add(src_off), base.wrapping_add(dst_off), len);
        Ok(self.submit(&[op], false)?[0])
    }

    /// Start filling `dst` with `value`.
    pub fn ifill(&self, dst: &'env mut [u8], value: u8) -> Result<Cookie> {
        Ok(self.submit(&[Op::fill(dst.as_mut_ptr(), value, dst.len())], false)?[0])
    }

    /// Start several copies at once (one doorbell per channel); one cookie per pair.
    pub fn icopy_batch(&self, pairs: Vec<(&'env [u8], &'env mut [u8])>) -> Result<Vec<Cookie>> {
        let mut ops = Vec::with_capacity(pairs.len());
        for (src, dst) in pairs {
            if src.len() != dst.len() {
                return Err(HostError::LengthMismatch {
                    src: src.len(),
                    dst: dst.len(),
                });
            }
            ops.push(Op::copy(src.as_ptr(), dst.as_mut_ptr(), src.len()));
        }
        self.submit(&ops, false)
    }

    /// See [`Runtime::check`].
    pub fn check(&self, cookie: Cookie) -> Result<bool> {
        self.rt.check(cookie)
    }

    /// See [`Runtime::wait`].
    pub fn wait(&self, cookie: Cookie) -> Result<()> {
        self.rt.wait(cookie)
    }

    /// Wait for every operation started in this scope.
    pub fn wait_all(&self) -> Result<()> {
        // In a forked child nobody will complete the parent's operations, and nobody here
        // touches the buffers: leave at once instead of waiting forever.
        self.rt.engine.usable_here()?;
        let started: Vec<_> =
            std::mem::take(&mut *self.started.lock().unwrap_or_else(|e| e.into_inner()));
        let mut first_err = None;
        for (c, done) in started {
            done.wait(self.rt.spin);
            let waited = self.rt.lock().remove(&c.0).is_some();
            if waited && done.is_aborted() && first_err.is_none() {
                first_err = Some(HostError::Aborted(c.0));
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    fn finish(&self) {
        let _ = self.wait_all();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn thread_rt(channels: usize) -> Runtime {
        let cfg = EngineConfig {
            channels,
            split_threshold: 64 << 10,
            nt_threshold: 32 << 10,
            ..Default::default()
        };
        Runtime::new("thread", &cfg).unwrap()
    }

    fn pattern(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn registry_names_and_errors() {
        let names: Vec<_> = engines::registry().iter().map(|e| e.name).collect();
        assert_eq!(names, ["cpu", "thread"]);
        let err = Runtime::new("dma9000", &EngineConfig::default()).unwrap_err();
        assert!(
            err.to_string().contains("dma9000") && err.to_string().contains("thread"),
            "{err}"
        );
        let err = Runtime::new(
            "thread",
            &EngineConfig {
                channels: 0,
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(
            matches!(err, HostError::InvalidConfig(ref m) if m.contains("channels")),
            "{err}"
        );
    }

    #[test]
    fn blocking_copy_fill_and_mismatch() {
        for name in ["cpu", "thread"] {
            let rt = Runtime::new(
                name,
                &EngineConfig {
                    channels: 2,
                    ..Default::default()
                },
            )
            .unwrap();
            for n in [0usize, 1, 63, 4096, 3 << 20] {
                let src = pattern(n, 3);
                let mut dst = vec![0u8; n];
                rt.copy(&src, &mut dst).unwrap();
                assert_eq!(src, dst, "{name} {n}");
                rt.fill(&mut dst, 0xEE).unwrap();
                assert!(dst.iter().all(|&b| b == 0xEE));
            }
            let mut dst = vec![0u8; 3];
            assert_eq!(
                rt.copy(&[1, 2], &mut dst),
                Err(HostError::LengthMismatch { src: 2, dst: 3 })
            );
            assert_eq!(rt.outstanding(), 0);
        }
    }

    #[test]
    fn overlapping_copies_are_memmove() {
        let rt = thread_rt(2);
        for (s, d, len) in [
            (0usize, 100usize, 1000usize),
            (100, 0, 1000),
            (0, 1, 200_000),
            (1, 0, 200_000),
        ] {
            let mut buf = pattern(300_000, 9);
            let mut want = buf.clone();
            want.copy_within(s..s + len, d);
            rt.copy_within(&mut buf, s, d, len).unwrap();
            assert!(buf == want, "overlap {s}->{d} x{len}");
        }
        let mut buf = vec![0u8; 10];
        assert!(matches!(
            rt.copy_within(&mut buf, 5, 0, 6),
            Err(HostError::OutOfBounds { .. })
        ));
        assert!(matches!(
            rt.copy_within(&mut buf, usize::MAX, 0, 6),
            Err(HostError::OutOfBounds { .. })
        ));
    }

    #[test]
    fn cookies_unknown_and_double_wait_are_errors() {
        for name in ["cpu", "thread"] {
            let rt = Runtime::new(name, &EngineConfig::default()).unwrap();
            assert_eq!(rt.wait(Cookie(42)), Err(HostError::UnknownCookie(42)));
            assert_eq!(rt.check(Cookie(42)), Err(HostError::UnknownCookie(42)));
            let src = pattern(1 << 20, 1);
            let mut dst = vec![0u8; 1 << 20];
            rt.scope(|s| {
                let c = s.icopy(&src, &mut dst).unwrap();
                while !s.check(c).unwrap() {
                    std::hint::spin_loop();
                }
                s.wait(c).unwrap();
                assert_eq!(s.wait(c), Err(HostError::UnknownCookie(c.0)));
                assert_eq!(s.check(c), Err(HostError::UnknownCookie(c.0)));
            });
            assert_eq!(src, dst);
        }
    }

    #[test]
    fn scope_waits_for_everything_and_retires_cookies() {
        let rt = thread_rt(2);
        let srcs: Vec<Vec<u8>> = (0..20)
            .map(|i| pattern(10_000 * (i + 1), i as u8))
            .collect();
        let mut dsts: Vec<Vec<u8>> = srcs.iter().map(|s| vec![0u8; s.len()]).collect();
        let mut zero = vec![1u8; 0];
        rt.scope(|s| {
            let pairs = srcs
                .iter()
                .map(|v| v.as_slice())
                .zip(dsts.iter_mut().map(|v| v.as_mut_slice()))
                .collect();
            let cookies = s.icopy_batch(pairs).unwrap();
            assert_eq!(cookies.len(), 20);
            s.icopy(&[], &mut zero).unwrap();
            // no wait: the scope must wait on exit
        });
        assert_eq!(srcs, dsts);
        assert_eq!(rt.outstanding(), 0);
    }

    #[test]
    fn wait_all_and_trace() {
        let rt = thread_rt(1);
        let src = pattern(4096, 5);
        let mut dst = vec![0u8; 4096];
        // SAFETY: both buffers outlive the wait below.
        let c = unsafe { rt.submit_raw(&[Op::copy(src.as_ptr(), dst.as_mut_ptr(), 4096)], true) }
            .unwrap()[0];
        let t = rt.wait_traced(c).unwrap();
        assert!(t.copy_ns > 0 && t.submit_ns > 0, "{t:?}");
        assert_eq!(src, dst);
        let cpu = Runtime::new("cpu", &EngineConfig::default()).unwrap();
        let big = pattern(1 << 20, 1);
        let mut out = vec![0u8; 1 << 20];
        let op = Op::copy(big.as_ptr(), out.as_mut_ptr(), 1 << 20);
        // SAFETY: both buffers outlive the wait below.
        let c = unsafe { cpu.submit_raw(&[op], true) }.unwrap()[0];
        let t = cpu.wait_traced(c).unwrap();
        assert!(t.queue_ns == 0 && t.copy_ns > 0, "{t:?}");
        // SAFETY: as above.
        unsafe {
            rt.ifill_raw(dst.as_mut_ptr(), 7, 4096, false).unwrap();
            rt.icopy_raw(src.as_ptr(), dst.as_mut_ptr(), 0, false)
                .unwrap();
        }
        rt.wait_all().unwrap();
        assert!(dst.iter().all(|&b| b == 7));
        assert_eq!(rt.outstanding(), 0);
    }

    #[test]
    fn parked_and_napping_workers_are_woken() {
        // No spinning at all: every idle period ends in a nap (first engine) or a park (second),
        // so every submit races with the worker going to sleep. None may be lost (a lost
        // wake-up would hang this test).
        for park_after_us in [1_000_000, 0] {
            let cfg = EngineConfig {
                channels: 2,
                spin_us: 0,
                nap_us: 1,
                park_after_us,
                wait_spin_us: 0,
                ..Default::default()
            };
            let rt = Runtime::new("thread", &cfg).unwrap();
            let src = pattern(4096, 7);
            for i in 0..1500usize {
                let mut dst = vec![0u8; 1 + i % 4096];
                let n = dst.len();
                rt.copy(&src[..n], &mut dst).unwrap();
                assert_eq!(dst, src[..n]);
                if i % 100 == 0 {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        }
    }

    /// An engine that completes nothing until told to (a copy that takes as long as a test needs).
    struct Stall(EngineConfig, Mutex<Vec<Arc<Completion>>>);
    impl Stall {
        fn release(&self) {
            for d in self.1.lock().unwrap().drain(..) {
                d.part_done();
            }
        }
    }
    impl Engine for Stall {
        fn name(&self) -> &'static str {
            "stall"
        }
        fn config(&self) -> &EngineConfig {
            &self.0
        }
        unsafe fn start(&self, _op: &Op, done: &Arc<Completion>) {
            done.add_parts(1);
            self.1.lock().unwrap().push(done.clone());
        }
    }
    impl Drop for Stall {
        fn drop(&mut self) {
            self.release();
        }
    }

    #[test]
    fn waits_give_up_when_cancelled_and_can_wait_again() {
        use crate::cancel::Flag;
        let stall = Box::new(Stall(EngineConfig::default(), Mutex::new(Vec::new())));
        let stall_ptr: *const Stall = &*stall;
        let rt = Runtime::with_engine(stall);
        let mut dst = [0u8; 8];
        // SAFETY: dst outlives every wait below (the runtime is dropped first at the latest).
        let c = unsafe { rt.ifill_raw(dst.as_mut_ptr(), 1, 8, false) }.unwrap();
        let flag = Flag::default();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(100));
                flag.raise();
            });
            let t = std::time::Instant::now();
            assert_eq!(rt.wait_with(c, &flag), Err(HostError::Interrupted(c.0)));
            assert_eq!(rt.wait_all_with(&flag), Err(HostError::Interrupted(c.0)));
            // Asked at least every slice: back well within a second of the cancel.
            assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        });
        assert_eq!(rt.outstanding(), 1, "an interrupted wait keeps the cookie");
        assert_eq!(rt.check(c), Ok(false));
        // SAFETY: the Stall lives inside `rt`, which is alive here.
        unsafe { (*stall_ptr).release() };
        rt.wait(c).unwrap();
        assert_eq!(dst, [0u8; 8], "the stall engine moves no bytes");
        assert_eq!(rt.outstanding(), 0);
    }

    /// Fork, run `child` in the child (its exit status is the test's verdict) and wait at most
    /// 20 s for it: a child that hangs fails the test instead of hanging it.
    pub(crate) fn in_forked_child(child: impl FnOnce() -> bool) {
        // SAFETY: the child runs only our code and leaves with _exit; glibc's malloc is fork-safe.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).unwrap_or(false);
            // SAFETY: leave the child without running the parent's destructors or test harness.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let t0 = std::time::Instant::now();
        let mut status = 0;
        loop {
            // SAFETY: waiting for our own child; status is valid for writes.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == pid {
                break;
            }
            if t0.elapsed() > Duration::from_secs(20) {
                // SAFETY: killing and reaping our own child.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                panic!("the forked child hung");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child status {status}"
        );
    }

    #[test]
    fn a_forked_child_gets_an_error_never_a_hang() {
        let mut owned = Some(thread_rt(1));
        let rt = owned.as_ref().unwrap();
        let src = pattern(1 << 16, 3);
        let mut dst = vec![0u8; 1 << 16];
        let mut dst2 = vec![0u8; 1 << 16];
        // SAFETY: dst2 outlives the wait in the parent below.
        let inflight =
            unsafe { rt.icopy_raw(src.as_ptr(), dst2.as_mut_ptr(), 1 << 16, false) }.unwrap();
        let _ = rt;
        in_forked_child(|| {
            let rt = owned.as_ref().unwrap();
            let forked = |r: Result<()>| matches!(r, Err(HostError::Forked { .. }));
            // SAFETY: refused before any memory is touched.
            let submit = unsafe { rt.icopy_raw(src.as_ptr(), dst.as_mut_ptr(), 1 << 16, false) };
            let ok = matches!(submit, Err(HostError::Forked { .. }))
                && forked(rt.copy(&src, &mut dst))
                && forked(rt.wait(inflight))
                && forked(rt.wait_all())
                && matches!(rt.check(inflight), Err(HostError::Forked { .. }))
                && forked(rt.scope(|s| s.icopy(&src, &mut dst).map(|_| ())));
            let msg = rt.copy(&src, &mut dst).unwrap_err().to_string();
            drop(owned.take()); // must neither wait for the parent's operation nor join its workers
            ok && msg.contains("forked") && msg.contains("new engine")
        });
        let rt = owned.as_ref().unwrap();
        rt.wait(inflight).unwrap();
        assert_eq!(src, dst2);
        rt.copy(&src, &mut dst).unwrap();
        assert_eq!(src, dst);
    }

    #[test]
    fn a_cpu_engine_works_in_a_forked_child() {
        // It owns no threads: the child copies inline.
        let rt = Runtime::new("cpu", &EngineConfig::default()).unwrap();
        let src = pattern(4096, 9);
        in_forked_child(|| {
            let mut dst = vec![0u8; 4096];
            rt.copy(&src, &mut dst).is_ok() && dst == src
        });
    }

    #[test]
    fn config_bounds_name_the_field() {
        for (cfg, field) in [
            (
                EngineConfig {
                    nap_us: u64::MAX,
                    ..Default::default()
                },
                "nap_us",
            ),
            (
                EngineConfig {
                    park_after_us: u64::MAX,
                    ..Default::default()
                },
                "park_after_us",
            ),
            (
                EngineConfig {
                    ring_capacity: 1,
                    ..Default::default()
                },
                "ring_capacity",
            ),
        ] {
            let e = Runtime::new("thread", &cfg).unwrap_err().to_string();
            assert!(e.contains(field) && e.contains("expected"), "{e}");
        }
    }

    #[test]
    fn null_pointers_are_rejected() {
        let rt = thread_rt(1);
        let mut d = [0u8; 4];
        // SAFETY: the null source is rejected before any memory is touched.
        let e = unsafe { rt.icopy_raw(std::ptr::null(), d.as_mut_ptr(), 4, false) }.unwrap_err();
        assert_eq!(e, HostError::NullPointer("source"));
        // SAFETY: zero-length ops never touch memory.
        unsafe { rt.run_raw(Op::copy(std::ptr::null(), std::ptr::null_mut(), 0)) }.unwrap();
    }
}
