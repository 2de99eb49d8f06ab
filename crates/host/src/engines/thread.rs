//! `thread`: a software copy engine (the "onload" idea: a spare core plays the copy engine).
//!
//! * N channels; each is a worker thread pinned to a core (by default the last cores, so that
//!   the application keeps core 0) and a bounded lock-free MPSC descriptor ring ([`Ring`]).
//! * Small operations go to the channels round-robin; operations of at least
//!   `split_threshold` bytes are cut into page-aligned chunks, one per channel. Overlapping
//!   copies are never split: one channel does them with memmove.
//! * Operations of at least `nt_threshold` bytes are written with non-temporal stores unless
//!   they ask for their destination in the cache.
//! * An idle worker spins for `spin_us`; then naps (polls its ring every `nap_us` with a timed
//!   sleep, so it burns no core yet submitters still need no system call) until it has been idle
//!   for `park_after_us`; then it announces that it sleeps and parks on its doorbell (a futex).
//!   A submitter rings the doorbell (a system call) only when the worker is parked.
//! * Dropping the engine lets every worker drain its ring (all in-flight operations complete)
//!   and joins the workers.
//! * After `fork()` the child has none of the workers: the engine refuses to be used there
//!   ([`HostError::Forked`]) rather than queue work nobody will ever take, and dropping it in
//!   the child neither signals nor joins the parent's threads.
use crate::engine::{Completion, Engine, EngineConfig, Op, OpKind, Stamps};
use crate::error::{HostError, Result};
use crate::ring::Ring;
use crate::sys;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One chunk of work on one channel.
struct Desc {
    op: Op,
    nt: bool,
    done: Arc<Completion>,
}

struct Channel {
    ring: Ring<Desc>,
    doorbell: AtomicU32,
    sleeping: AtomicU32,
    stop: AtomicBool,
    /// Core the worker is pinned to, when pinning succeeded.
    pinned: AtomicUsize,
    /// RT_PENDING / RT_OK / RT_REFUSED (only used with `realtime`).
    rt_state: AtomicU32,
}

const RT_PENDING: u32 = 0;
const RT_OK: u32 = 1;
const RT_REFUSED: u32 = 2;

const NOT_PINNED: usize = usize::MAX;

impl Channel {
    fn ring_doorbell(&self) {
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) != 0 {
            self.doorbell.fetch_add(1, Ordering::SeqCst);
            sys::futex_wake_all(&self.doorbell);
        }
    }

    fn push(&self, mut d: Desc) {
        loop {
            match self.ring.push(d) {
                Ok(()) => return,
                Err(back) => {
                    // Ring full: make sure the worker is awake, then wait for room.
                    d = back;
                    self.ring_doorbell();
                    std::thread::yield_now();
                }
            }
        }
    }
}

/// The software copy engine.
pub struct ThreadEngine {
    config: EngineConfig,
    channels: Vec<Arc<Channel>>,
    workers: Vec<JoinHandle<()>>,
    next: AtomicUsize,
    /// The process whose threads the workers are.
    owner: sys::Owner,
}

impl ThreadEngine {
    /// Start `config.channels` workers.
    pub fn new(config: EngineConfig) -> Result<Self> {
        config.validate()?;
        let cpus = if config.cpus.is_empty() {
            let mut c = sys::available_cpus();
            c.reverse();
            c
        } else {
            config.cpus.clone()
        };
        let mut engine = ThreadEngine {
            config: config.clone(),
            channels: Vec::new(),
            workers: Vec::new(),
            next: AtomicUsize::new(0),
            owner: sys::Owner::here(),
        };
        for i in 0..config.channels {
            let ch = Arc::new(Channel {
                ring: Ring::new(config.ring_capacity),
                doorbell: AtomicU32::new(0),
                sleeping: AtomicU32::new(0),
                stop: AtomicBool::new(false),
                pinned: AtomicUsize::new(NOT_PINNED),
                rt_state: AtomicU32::new(RT_PENDING),
            });
            let cpu = (config.pin && !cpus.is_empty()).then(|| cpus[i % cpus.len()]);
            let realtime = config.realtime;
            let idle = Idle {
                spin: Duration::from_micros(config.spin_us),
                nap: Duration::from_micros(config.nap_us),
                park_after: Duration::from_micros(config.park_after_us),
            };
            let worker_ch = ch.clone();
            let handle = std::thread::Builder::new()
                .name(format!("movelab-copy-{i}"))
                .spawn(move || worker(worker_ch, cpu, idle, realtime))
                .map_err(|e| HostError::Os(format!("cannot start copy worker {i}: {e}")))?;
            engine.channels.push(ch);
            engine.workers.push(handle);
            if realtime {
                // The worker reports whether it got real-time priority before taking work.
                while engine.channels[i].rt_state.load(Ordering::Acquire) == RT_PENDING {
                    std::thread::yield_now();
                }
                if engine.channels[i].rt_state.load(Ordering::Acquire) == RT_REFUSED {
                    return Err(HostError::Os(
                        "cannot give the copy workers real-time priority (SCHED_FIFO needs CAP_SYS_NICE)".into(),
                    ));
                }
            }
        }
        Ok(engine)
    }

    /// The core each channel's worker is pinned to (None where pinning was off or refused).
    pub fn pinned_cpus(&self) -> Vec<Option<usize>> {
        self.channels
            .iter()
            .map(|c| match c.pinned.load(Ordering::Acquire) {
                NOT_PINNED => None,
                cpu => Some(cpu),
            })
            .collect()
    }

    /// Cut an op into (chunk, channel) pairs.
    fn plan(&self, op: &Op) -> Vec<(Op, usize)> {
        let n = self.channels.len();
        if n == 1 || op.len < self.config.split_threshold || op.is_overlapping() {
            let ch = self.next.fetch_add(1, Ordering::Relaxed) % n;
            return vec![(*op, ch)];
        }
        let per = op.len.div_ceil(n).next_multiple_of(4096);
        let first = self.next.fetch_add(1, Ordering::Relaxed);
        let mut parts = Vec::with_capacity(n);
        let mut off = 0;
        let mut k = 0;
        while off < op.len {
            let len = per.min(op.len - off);
            // Pointer arithmetic with wrapping_add: no memory is touched here.
            let kind = match op.kind {
                OpKind::Copy { src } => OpKind::Copy {
                    src: src.wrapping_add(off),
                },
                fill => fill,
            };
            parts.push((
                Op {
                    kind,
                    dst: op.dst.wrapping_add(off),
                    len,
                    cache_dst: op.cache_dst,
                },
                (first + k) % n,
            ));
            off += len;
            k += 1;
        }
        parts
    }

    fn dispatch(&self, op: &Op, done: &Arc<Completion>, touched: &mut [bool]) {
        let nt = !op.cache_dst && op.len >= self.config.nt_threshold;
        let parts = self.plan(op);
        done.add_parts(parts.len() as u32);
        for (chunk, ch) in parts {
            self.channels[ch].push(Desc {
                op: chunk,
                nt,
                done: done.clone(),
            });
            touched[ch] = true;
        }
    }
}

impl Engine for ThreadEngine {
    fn name(&self) -> &'static str {
        "thread"
    }
    fn config(&self) -> &EngineConfig {
        &self.config
    }
    fn usable_here(&self) -> Result<()> {
        match self.owner.forked() {
            None => Ok(()),
            Some(child) => Err(HostError::Forked {
                owner: self.owner.pid(),
                child,
            }),
        }
    }
    unsafe fn start(&self, op: &Op, done: &Arc<Completion>) {
        let mut touched = vec![false; self.channels.len()];
        self.dispatch(op, done, &mut touched);
        for (ch, t) in self.channels.iter().zip(touched) {
            if t {
                ch.ring_doorbell();
            }
        }
    }
    unsafe fn start_batch(&self, ops: &[(Op, Arc<Completion>)]) {
        let mut touched = vec![false; self.channels.len()];
        for (op, done) in ops {
            self.dispatch(op, done, &mut touched);
        }
        for (ch, t) in self.channels.iter().zip(touched) {
            if t {
                ch.ring_doorbell();
            }
        }
    }
}

impl Drop for ThreadEngine {
    fn drop(&mut self) {
        if self.owner.forked().is_some() {
            // A forked child: the workers are the parent's threads and do not exist here.
            // Joining them would wait forever; forget the handles, free the rest.
            for w in self.workers.drain(..) {
                std::mem::forget(w);
            }
            return;
        }
        for ch in &self.channels {
            ch.stop.store(true, Ordering::SeqCst);
            ch.doorbell.fetch_add(1, Ordering::SeqCst);
            sys::futex_wake_all(&ch.doorbell);
        }
        for w in self.workers.drain(..) {
            // A worker cannot panic on user data; if it did, its operations stay incomplete and
            // the runtime (which outlives this call only via its table) reports them aborted.
            let _ = w.join();
        }
        // Anything left in a ring (only possible if a worker died) completes as aborted.
        for ch in &self.channels {
            while let Some(d) = ch.ring.pop() {
                d.done.abort();
                d.done.part_done();
            }
        }
    }
}

fn execute(d: Desc) {
    d.done.stamp(|s: &Stamps| &s.dequeued);
    // SAFETY: the submitter guaranteed (Engine::start contract) that the memory stays valid and
    // untouched until the completion record reports done, which happens only below.
    unsafe { d.op.execute(d.nt) };
    d.done.stamp(|s: &Stamps| &s.copied);
    d.done.part_done();
}

/// How an idle worker backs off.
#[derive(Clone, Copy)]
struct Idle {
    spin: Duration,
    nap: Duration,
    park_after: Duration,
}

/// Spin on the ring for `d`; true if work (or a stop request) arrived.
fn spin_for(ch: &Channel, d: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < d {
        for _ in 0..32 {
            if !ch.ring.is_empty() {
                return true;
            }
            std::hint::spin_loop();
        }
        if ch.stop.load(Ordering::Relaxed) {
            return true;
        }
    }
    false
}

fn worker(ch: Arc<Channel>, cpu: Option<usize>, idle: Idle, realtime: bool) {
    if let Some(c) = cpu {
        if sys::pin_current_thread(c).is_ok() {
            ch.pinned.store(c, Ordering::Release);
        }
    }
    if realtime {
        let ok = sys::set_realtime(true).is_ok();
        ch.rt_state
            .store(if ok { RT_OK } else { RT_REFUSED }, Ordering::Release);
    }
    // Naps should last what we ask, not the default 50 us timer slack.
    sys::set_timer_slack_ns(1_000);
    loop {
        if let Some(d) = ch.ring.pop() {
            execute(d);
            continue;
        }
        if ch.stop.load(Ordering::Acquire) && ch.ring.is_empty() {
            return;
        }
        // 1. Spin: a descriptor right after the last one is served without any sleep.
        if spin_for(&ch, idle.spin) {
            continue;
        }
        // 2. Nap: poll with short timed sleeps; submitters still make no system call.
        let idle_since = Instant::now();
        let mut woke = false;
        while idle_since.elapsed() < idle.park_after {
            std::thread::sleep(idle.nap);
            if !ch.ring.is_empty() || ch.stop.load(Ordering::Relaxed) {
                woke = true;
                break;
            }
        }
        if woke {
            continue;
        }
        // 3. Park: announce it, re-check, then wait for the doorbell to change.
        let seen = ch.doorbell.load(Ordering::SeqCst);
        ch.sleeping.store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if ch.ring.is_empty() && !ch.stop.load(Ordering::SeqCst) {
            sys::futex_wait(&ch.doorbell, seen);
        }
        ch.sleeping.store(0, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_are_pinned_to_the_last_cores_and_split_plans_cover_the_op() {
        let cpus = sys::available_cpus();
        let engine = ThreadEngine::new(EngineConfig {
            channels: 2,
            split_threshold: 8192,
            ..Default::default()
        })
        .expect("engine");
        // Give the workers a moment to pin themselves.
        let t0 = Instant::now();
        while engine.pinned_cpus().iter().any(Option::is_none)
            && t0.elapsed() < Duration::from_secs(2)
        {
            std::thread::yield_now();
        }
        let pinned = engine.pinned_cpus();
        if sys::current_affinity().len() == cpus.len() {
            // Pinning is allowed here: channel i sits on the i-th core counting down.
            let want: Vec<Option<usize>> = (0..2)
                .map(|i| Some(cpus[cpus.len() - 1 - i % cpus.len()]))
                .collect();
            assert_eq!(pinned, want);
        }
        // A split plan covers the op exactly, in page-aligned chunks, on distinct channels.
        let mut buf = vec![0u8; 100_000];
        let op = Op::fill(buf.as_mut_ptr(), 1, buf.len());
        let plan = engine.plan(&op);
        assert_eq!(plan.len(), 2);
        assert_eq!(plan.iter().map(|(o, _)| o.len).sum::<usize>(), 100_000);
        assert_eq!(plan[0].0.len % 4096, 0);
        assert_ne!(plan[0].1, plan[1].1);
        // Overlapping copies are never split.
        let p = buf.as_mut_ptr();
        let ov = Op::copy(p, p.wrapping_add(10), 50_000);
        assert_eq!(engine.plan(&ov).len(), 1);
    }
}
