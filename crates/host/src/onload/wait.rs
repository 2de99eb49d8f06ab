//! How an application thread waits for the onload engine: spin briefly, then announce that it
//! sleeps and sleep on a futex word that the engine bumps; the engine makes the `FUTEX_WAKE`
//! system call only when someone announced sleeping (the paper's "interrupt only if a process
//! waits idle"). Also the thread CPU clocks the benchmark reads.
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// A notification point: a futex word bumped on every event, and the number of sleepers.
#[derive(Debug, Default)]
pub struct Notify {
    word: AtomicU32,
    sleepers: AtomicU32,
}

impl Notify {
    /// Engine side: publish events, wake sleepers if any. Returns true if it made a wake-up call.
    pub fn notify(&self) -> bool {
        self.word.fetch_add(1, Ordering::Release);
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) != 0 {
            futex_wake(&self.word);
            return true;
        }
        false
    }

    /// Application side: wait until `ready()` or `deadline` passes; spins for `spin` first.
    /// Returns whether `ready()` held at the end.
    pub fn wait(
        &self,
        spin: Duration,
        deadline: Option<Instant>,
        ready: &dyn Fn() -> bool,
    ) -> bool {
        let t0 = Instant::now();
        loop {
            if ready() {
                return true;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return false;
            }
            if now.duration_since(t0) < spin {
                std::hint::spin_loop();
                continue;
            }
            let seen = self.word.load(Ordering::SeqCst);
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            if !ready() {
                let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                futex_wait(&self.word, seen, left);
            }
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Sleeps while `word` holds `expected`, at most `timeout` when one is given (the shared futex
/// calls of [`crate::sys`]).
fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    match timeout {
        Some(t) => crate::sys::futex_wait_for(word, expected, t),
        None => crate::sys::futex_wait(word, expected),
    }
}

fn futex_wake(word: &AtomicU32) {
    crate::sys::futex_wake_all(word);
}

/// CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID), in ns.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time of another thread of this process, by its pthread handle (None if it has exited).
pub fn pthread_cpu_ns(thread: libc::pthread_t) -> Option<u64> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `thread` is a pthread handle of a thread not yet joined (caller), and `clock` is
    // a valid out-pointer.
    let rc = unsafe { libc::pthread_getcpuclockid(thread, &mut clock) };
    (rc == 0).then(|| clock_ns(clock))
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_REALTIME minus the [`crate::sys::now_ns`] clock, to turn kernel timestamps (real time)
/// into arrival times on the engine's clock.
pub fn realtime_offset_ns() -> i64 {
    let a = crate::sys::now_ns();
    let r = clock_ns(libc::CLOCK_REALTIME);
    let b = crate::sys::now_ns();
    r as i64 - (a / 2 + b / 2) as i64
}
