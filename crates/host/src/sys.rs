//! Thin wrappers over the operating system: CPU affinity, the number of CPUs, and a futex-style
//! wait/wake on a 32-bit atomic (Linux futex; elsewhere a yield loop).
use std::sync::atomic::AtomicU32;
#[cfg(not(target_os = "linux"))]
use std::sync::atomic::Ordering;

/// The CPUs of this machine that are online (the candidates for pinning workers).
///
/// Deliberately not the calling thread's affinity mask: a benchmark that pinned its own thread
/// to core 0 must still get its engine workers on the other cores.
pub fn available_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf has no memory-safety preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        if n > 0 {
            return (0..n as usize).collect();
        }
    }
    let n = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    (0..n).collect()
}

/// The calling thread's current affinity mask (empty if it cannot be read).
pub fn current_affinity() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
                return (0..libc::CPU_SETSIZE as usize)
                    .filter(|&c| libc::CPU_ISSET(c, &set))
                    .collect();
            }
        }
    }
    Vec::new()
}

/// Restrict the calling thread to `cpus` (ignored when empty or refused).
pub fn set_affinity(cpus: &[usize]) {
    #[cfg(target_os = "linux")]
    {
        if cpus.is_empty() {
            return;
        }
        // SAFETY: as in pin_current_thread; indices are checked against CPU_SETSIZE.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
                libc::CPU_SET(c, &mut set);
            }
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cpus;
}

/// Pin the calling thread to one CPU. Returns an error (never panics) when the OS refuses.
pub fn pin_current_thread(cpu: usize) -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(format!("cpu {cpu} is out of range"));
        }
        // SAFETY: cpu_set_t is plain data and cpu < CPU_SETSIZE; pid 0 means the calling thread.
        let rc = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
        };
        if rc != 0 {
            return Err(format!(
                "sched_setaffinity(cpu {cpu}): {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpu;
        Err("thread pinning is not supported on this OS".into())
    }
}

/// Switch the calling thread to SCHED_FIFO priority 1 (`on`) or back to SCHED_OTHER.
/// Needs CAP_SYS_NICE (or root); the error says so.
pub fn set_realtime(on: bool) -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        let (policy, prio) = if on {
            (libc::SCHED_FIFO, 1)
        } else {
            (libc::SCHED_OTHER, 0)
        };
        let param = libc::sched_param {
            sched_priority: prio,
        };
        // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
        let rc = unsafe { libc::sched_setscheduler(0, policy, &param) };
        if rc != 0 {
            return Err(format!(
                "cannot switch to {} scheduling: {} (real-time scheduling needs CAP_SYS_NICE)",
                if on { "SCHED_FIFO" } else { "SCHED_OTHER" },
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = on;
        Err("real-time scheduling is only supported on Linux".into())
    }
}

/// Ask for timed sleeps of the calling thread to overshoot by at most `ns` (Linux timer slack).
pub fn set_timer_slack_ns(ns: u64) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only the calling thread.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = ns;
}

/// Sleep while `word` still holds `expected` (spurious wake-ups possible: callers re-check).
pub fn futex_wait(word: &AtomicU32, expected: u32) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `word` is a live, aligned 32-bit atomic for the duration of the call; FUTEX_WAIT
        // only reads it and never writes through the pointer.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                std::ptr::null::<libc::timespec>(),
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        if word.load(Ordering::Acquire) == expected {
            std::thread::yield_now();
        }
    }
}

/// As [`futex_wait`], but sleep at most `timeout` (callers re-check their condition and clock).
pub fn futex_wait_for(word: &AtomicU32, expected: u32, timeout: std::time::Duration) {
    #[cfg(target_os = "linux")]
    {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: as in futex_wait; `ts` is a valid relative timeout for the duration of the call.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                &ts as *const libc::timespec,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        if word.load(Ordering::Acquire) == expected {
            std::thread::sleep(timeout.min(std::time::Duration::from_millis(1)));
        }
    }
}

/// The calling process's id (compared with an owner's to detect a forked child).
pub fn pid() -> i32 {
    // SAFETY: getpid cannot fail and has no preconditions.
    unsafe { libc::getpid() }
}

/// Incremented in every child right after `fork()` (a `pthread_atfork` handler), so that checking
/// whether this is still the owner's process costs one atomic load, not a `getpid` system call
/// on every submit and wait.
static FORK_GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

extern "C" fn after_fork_in_child() {
    // Async-signal-safe: one atomic increment.
    FORK_GENERATION.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

fn fork_generation() -> u64 {
    static REGISTER: std::sync::Once = std::sync::Once::new();
    REGISTER.call_once(|| {
        #[cfg(unix)]
        // SAFETY: registers a handler that only increments an atomic; no memory is passed.
        unsafe {
            libc::pthread_atfork(None, None, Some(after_fork_in_child));
        }
    });
    FORK_GENERATION.load(std::sync::atomic::Ordering::SeqCst)
}

/// The process that created an object which owns threads or a shared resource. After `fork()`
/// the child inherits the object but not its threads (and perhaps locks copied while held), so
/// such an object refuses to be used there, and its destructor leaves the parent's resources
/// alone. The check is one atomic load (a fork handler counts forks in each child).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pid: i32,
    generation: u64,
}

impl Default for Owner {
    fn default() -> Self {
        Self::here()
    }
}

impl Owner {
    /// Owned by the calling process.
    pub fn here() -> Self {
        Owner {
            generation: fork_generation(),
            pid: pid(),
        }
    }
    /// The owner's pid.
    pub fn pid(self) -> i32 {
        self.pid
    }
    /// `Some(child pid)` when called in a process other than the owner (a forked child).
    pub fn forked(self) -> Option<i32> {
        if FORK_GENERATION.load(std::sync::atomic::Ordering::Relaxed) == self.generation {
            return None;
        }
        let me = pid();
        (me != self.pid).then_some(me)
    }
}

/// Wake every thread sleeping in [`futex_wait`] on `word`.
pub fn futex_wake_all(word: &AtomicU32) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `word` is a live, aligned 32-bit atomic; FUTEX_WAKE does not access its memory.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                i32::MAX,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = word.load(Ordering::Relaxed);
    }
}

/// Nanoseconds since a process-wide origin (monotonic); used for the breakdown timestamps.
pub fn now_ns() -> u64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let origin = ORIGIN.get_or_init(Instant::now);
    origin.elapsed().as_nanos() as u64
}
