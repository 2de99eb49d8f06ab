//! The small multithreaded cores (IXP microengines) of the network-I/O platform. Each core has
//! `threads` hardware contexts sharing one single-issue pipeline; a context runs a per-packet
//! program (`MeStep`s) and swaps out (after `switch_cycles`) whenever it waits for memory. Memory
//! commands are asynchronous: a copy issues up to `copy_depth` reads of `chunk_bytes` at once,
//! sleeps until they are in its transfer registers, then checksums them (ALU work) and posts
//! the writes; a fence waits for the posted writes. Commands go to the channels of
//! `mem_channel.rs` (DRAM, SRAM, scratch, the host's SDRAM, the MSF). Jobs wait in a pool's
//! queue (pool 0 receive, pool 1 transmit) until a context is free; jobs the host spins on go
//! first. The cores move the packet's bytes for real and verify checksums where the program
//! says so.
use crate::config::network::{Loc, MeStep, SmallCoreConfig};
use crate::net::msf_mac::MsfMac;
use crate::net::udp_peer::{checksum_ok, is_fin};
use crate::sim::error::PlatformError;
use crate::sim::Ps;
use crate::small_cores::host_step_cost::HostCaches;
use crate::small_cores::mem_channel::MemChannel;
use crate::small_cores::packet_buffers::{amount, Buffers, Pkt};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;

/// What the small cores touch beside themselves.
pub struct SmallCoreEnv<'a> {
    pub buffers: &'a mut Buffers,
    pub channels: &'a mut BTreeMap<String, MemChannel>,
    pub msf: &'a mut MsfMac,
    pub host: &'a mut HostCaches,
    pub tx_ring: &'a mut VecDeque<Pkt>,
}

/// Events the small cores ask for.
pub enum CoreEvent {
    TbufFree(usize),
    PeerRx(Vec<u8>),
}

/// Why a job runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// A frame from the MSF (receive program).
    RxFrame,
    /// A host program's small-core step; the host spins until it ends.
    HostWait,
    /// A packet from the host's transmit ring.
    Tx,
}

#[derive(Debug, Clone)]
pub struct Job {
    pub steps: Rc<Vec<MeStep>>,
    pub pkt: Pkt,
    pub kind: JobKind,
}

#[derive(Debug, Default)]
struct Ctx {
    job: Option<Job>,
    step: usize,
    ready: Ps,
    /// Bytes of the current copy written, and read but not yet written.
    copied: u64,
    pending: u64,
    last_write: Ps,
    /// The job's place in its pool's completion order (receive and transmit jobs).
    ticket: Option<u64>,
}

#[derive(Debug)]
struct Me {
    ctxs: Vec<Ctx>,
    pipe_free: Ps,
    last: usize,
    wake_at: Ps,
    busy: Ps,
    swaps: u64,
}

/// A pool's cores and their work. Several contexts (and cores) work on a pool's frames at
/// once, so a later frame can finish first; like the IXP's ordered thread completion, a job
/// that finishes is held until every job submitted before it has finished or been dropped, so
/// frames leave the pool in the order they came. Frames copied into the TBUF go on the wire in
/// the same order (the MSF sends TBUF elements in the order they were allocated).
struct Pool {
    mes: Vec<Me>,
    queue: VecDeque<(Job, Option<u64>)>,
    next_ticket: u64,
    release_next: u64,
    /// Finished jobs waiting for earlier ones (None: the job was dropped).
    held: BTreeMap<u64, Option<Job>>,
    /// Tickets of jobs that have neither sent their frame, ended nor been dropped.
    open: BTreeSet<u64>,
    /// Frames in the TBUF waiting for earlier ones: when their copy ended, and the packet.
    tx_held: BTreeMap<u64, (Ps, Pkt)>,
}

impl Pool {
    /// Sends the TBUF frames whose turn has come.
    fn send_in_order(&mut self, env: &mut SmallCoreEnv, out: &mut Outcome, wire_latency: Ps) {
        while let Some((&k, _)) = self.tx_held.first_key_value() {
            if self.open.first().is_some_and(|&o| o < k) {
                break;
            }
            let (ready, q) = self.tx_held.remove(&k).expect("present");
            self.open.remove(&k);
            send(env, out, ready, q, wire_latency);
        }
    }
}

/// The MSF sends a frame from the TBUF once its copy ended at `ready`.
fn send(env: &mut SmallCoreEnv, out: &mut Outcome, ready: Ps, q: Pkt, wire_latency: Ps) {
    let sent = env.msf.transmit(ready, q.len);
    let frame = env.buffers.take(q);
    out.events.push((sent, CoreEvent::TbufFree(q.len)));
    out.events
        .push((sent + wire_latency, CoreEvent::PeerRx(frame)));
}

/// What one step of a core produced.
#[derive(Default)]
pub struct Outcome {
    pub events: Vec<(Ps, CoreEvent)>,
    pub finished: Vec<(Job, Ps)>,
    /// When the core wants to run next.
    pub wake: Option<Ps>,
    /// A transmit job left the host's ring (the host may send again).
    pub took_tx: bool,
    /// Data packets dropped for want of a buffer, and terminating datagrams dropped so.
    pub dropped: u64,
    pub dropped_fins: u64,
}

pub struct SmallCores {
    cfg: SmallCoreConfig,
    pools: Vec<Pool>,
    cycle_ps: f64,
    /// The wire's delay from the MAC to the peer.
    pub wire_latency: Ps,
    pub dropped: u64,
}

fn channel(l: Loc) -> &'static str {
    match l {
        Loc::Rbuf | Loc::Tbuf => "msf",
        Loc::MeDram => "me_dram",
        Loc::Kernel | Loc::User => "host_sdram",
    }
}

fn bad(what: impl Into<String>) -> PlatformError {
    PlatformError::Stalled(format!("data check failed: {}", what.into()))
}

impl SmallCores {
    pub fn new(cfg: &SmallCoreConfig) -> SmallCores {
        let pool = |n: u32| Pool {
            mes: (0..n)
                .map(|_| Me {
                    ctxs: (0..cfg.threads).map(|_| Ctx::default()).collect(),
                    pipe_free: 0,
                    last: 0,
                    wake_at: Ps::MAX,
                    busy: 0,
                    swaps: 0,
                })
                .collect(),
            queue: VecDeque::new(),
            next_ticket: 0,
            release_next: 0,
            held: BTreeMap::new(),
            open: BTreeSet::new(),
            tx_held: BTreeMap::new(),
        };
        SmallCores {
            pools: vec![pool(cfg.rx_cores), pool(cfg.tx_cores)],
            cycle_ps: 1e6 / cfg.clock_mhz,
            cfg: cfg.clone(),
            wire_latency: 0,
            dropped: 0,
        }
    }

    pub fn pools(&self) -> usize {
        self.pools.len()
    }

    /// Queues a job on pool `pool` (`front`: ahead of the others).
    pub fn submit(&mut self, pool: usize, job: Job, front: bool) {
        let p = &mut self.pools[pool];
        let ticket = (job.kind != JobKind::HostWait).then(|| {
            p.next_ticket += 1;
            p.open.insert(p.next_ticket - 1);
            p.next_ticket - 1
        });
        if front {
            p.queue.push_front((job, ticket));
        } else {
            p.queue.push_back((job, ticket));
        }
    }

    /// The cores of `pool` to run at `t` (those not already due by then).
    pub fn wake_idle(&mut self, pool: usize, t: Ps) -> Vec<(usize, Ps)> {
        let mut out = Vec::new();
        for (i, me) in self.pools[pool].mes.iter_mut().enumerate() {
            if me.wake_at > t && me.ctxs.iter().any(|c| c.job.is_none()) {
                let at = t.max(me.pipe_free);
                if at < me.wake_at {
                    me.wake_at = at;
                    out.push((i, at));
                }
            }
        }
        out
    }

    /// Pipeline busy time and cores of pool `pool`.
    pub fn pool_busy(&self, pool: usize) -> (Ps, usize) {
        let p = &self.pools[pool];
        (p.mes.iter().map(|m| m.busy).sum(), p.mes.len())
    }

    /// Pipeline busy time, cores, context swaps.
    pub fn busy(&self) -> (Ps, usize, u64) {
        let mes = self.pools.iter().flat_map(|p| p.mes.iter());
        let n = self.pools.iter().map(|p| p.mes.len()).sum();
        (
            mes.clone().map(|m| m.busy).sum(),
            n,
            mes.map(|m| m.swaps).sum(),
        )
    }

    fn cyc(&self, n: f64) -> Ps {
        (n * self.cycle_ps).round() as Ps
    }

    /// Core `me` of `pool` runs at `t`: contexts take queued jobs, and the next ready context
    /// issues one action.
    pub fn run(
        &mut self,
        pool: usize,
        me: usize,
        t: Ps,
        env: &mut SmallCoreEnv,
    ) -> Result<Outcome, PlatformError> {
        let mut out = Outcome::default();
        let (switch, issue) = (
            self.cyc(self.cfg.switch_cycles as f64),
            self.cyc(self.cfg.issue_cycles as f64),
        );
        let cycle_ps = self.cycle_ps;
        let (chunk, depth, cpw) = (
            self.cfg.chunk_bytes,
            u64::from(self.cfg.copy_depth),
            self.cfg.checksum_cycles_per_word,
        );
        let wire_latency = self.wire_latency;
        let p = &mut self.pools[pool];
        let m = &mut p.mes[me];
        if m.wake_at != t {
            return Ok(out);
        }
        m.wake_at = Ps::MAX;
        for c in m.ctxs.iter_mut().filter(|c| c.job.is_none()) {
            let Some((j, ticket)) = p.queue.pop_front() else {
                break;
            };
            if j.kind == JobKind::Tx {
                env.tx_ring.pop_front();
                out.took_tx = true;
            }
            *c = Ctx {
                job: Some(j),
                ready: t,
                ticket,
                ..Ctx::default()
            };
        }
        if m.pipe_free <= t {
            let n = m.ctxs.len();
            let pick = (1..=n)
                .map(|k| (m.last + k) % n)
                .find(|&i| m.ctxs[i].job.is_some() && m.ctxs[i].ready <= t);
            if let Some(ci) = pick {
                let mut start = t;
                if ci != m.last {
                    start += switch;
                    m.swaps += 1;
                    m.last = ci;
                }
                let c = &mut m.ctxs[ci];
                let job = c.job.as_ref().expect("picked a busy context");
                let steps = job.steps.clone();
                let mut pipe_end = start;
                match steps.get(c.step) {
                    None => {
                        // The program is done.
                        let j = c.job.take().expect("busy");
                        match c.ticket.take() {
                            Some(k) => {
                                p.open.remove(&k);
                                p.held.insert(k, Some(j));
                            }
                            None => out.finished.push((j, t)),
                        }
                    }
                    Some(MeStep::Compute { cycles }) => {
                        pipe_end = start + (*cycles as f64 * cycle_ps).round() as Ps;
                        c.ready = pipe_end;
                        c.step += 1;
                    }
                    Some(MeStep::Access { channel, bytes }) => {
                        pipe_end = start + issue;
                        let ch = env
                            .channels
                            .get_mut(channel.as_str())
                            .ok_or_else(|| bad(format!("no channel {channel}")))?;
                        c.ready = ch.transfer(pipe_end, *bytes);
                        c.step += 1;
                    }
                    Some(MeStep::Fence) => {
                        c.ready = start.max(c.last_write);
                        c.step += 1;
                    }
                    Some(MeStep::Copy {
                        from,
                        to,
                        bytes,
                        checksum,
                        rmw,
                    }) => {
                        let pk = job.pkt;
                        if pk.loc != *from {
                            return Err(bad(format!(
                                "small-core copy from {from:?}, but the packet is in {:?}",
                                pk.loc
                            )));
                        }
                        let total = amount(*bytes, pk.len).max(1);
                        if c.pending == 0 && c.copied == 0 {
                            if *to == Loc::Tbuf && !env.msf.tbuf_room(pk.len) {
                                // TBUF full: try again when the MAC has sent something.
                                c.ready = t + 100_000;
                                if c.ready < m.wake_at {
                                    m.wake_at = c.ready;
                                    out.wake = Some(c.ready);
                                }
                                return Ok(out);
                            }
                            if let Some(a) =
                                env.host.small_core_reads_dirty((pk.loc, pk.idx), total)
                            {
                                return Err(bad(format!(
                                    "a small core read host line {a:#x} while the host's cache held it dirty (the program does not clean it first)"
                                )));
                            }
                        }
                        if c.pending == 0 {
                            // Issue the reads.
                            let n = (depth * chunk).min(total - c.copied);
                            let k = n.div_ceil(chunk);
                            pipe_end = start + issue * k;
                            let ch = env.channels.get_mut(channel(*from)).expect("validated");
                            let mut done = pipe_end;
                            let mut left = n;
                            for _ in 0..k {
                                done = done.max(ch.transfer(pipe_end, left.min(chunk)));
                                left = left.saturating_sub(chunk);
                            }
                            if *rmw {
                                // Read the destination's words too, once the source is in.
                                let dst = env.channels.get_mut(channel(*to)).expect("validated");
                                let mut left = n;
                                let mut d = done;
                                for _ in 0..k {
                                    d = d.max(dst.transfer(done + issue, left.min(chunk)));
                                    left = left.saturating_sub(chunk);
                                }
                                done = d;
                            }
                            c.pending = n;
                            c.ready = done;
                        } else {
                            // Checksum what arrived and post the writes.
                            let words = c.pending.div_ceil(4) as f64;
                            let csum = if *checksum {
                                (words * cpw * cycle_ps).round() as Ps
                            } else {
                                0
                            };
                            let k = c.pending.div_ceil(chunk);
                            pipe_end = start + csum + issue * k;
                            let ch = env.channels.get_mut(channel(*to)).expect("validated");
                            let mut left = c.pending;
                            for _ in 0..k {
                                c.last_write =
                                    c.last_write.max(ch.transfer(pipe_end, left.min(chunk)));
                                left = left.saturating_sub(chunk);
                            }
                            c.copied += c.pending;
                            c.pending = 0;
                            c.ready = pipe_end;
                            if c.copied >= total {
                                c.copied = 0;
                                c.step += 1;
                                // The bytes move.
                                if *checksum && !checksum_ok(env.buffers.bytes(&pk)) {
                                    return Err(bad("a checksum failed on a small core"));
                                }
                                if *from == Loc::Rbuf {
                                    env.msf.release_rbuf(pk.len);
                                }
                                let fin = is_fin(env.buffers.bytes(&pk));
                                match env.buffers.move_to(pk, *to) {
                                    None => {
                                        if fin {
                                            out.dropped_fins += 1;
                                        } else {
                                            out.dropped += 1;
                                        }
                                        c.job = None;
                                        if let Some(k) = c.ticket.take() {
                                            p.open.remove(&k);
                                            p.held.insert(k, None);
                                        }
                                    }
                                    Some(q) => {
                                        if matches!(q.loc, Loc::Kernel | Loc::User) {
                                            env.host.small_core_wrote((q.loc, q.idx), total);
                                        }
                                        if q.loc == Loc::Tbuf {
                                            // Sent in ticket order (untracked jobs at once).
                                            let ready = pipe_end.max(c.last_write);
                                            match c.ticket {
                                                Some(k) => {
                                                    p.tx_held.insert(k, (ready, q));
                                                }
                                                None => send(env, &mut out, ready, q, wire_latency),
                                            }
                                        }
                                        if let Some(j) = c.job.as_mut() {
                                            j.pkt = q;
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                m.busy += pipe_end - t;
                m.pipe_free = pipe_end;
            }
        }
        self.dropped += out.dropped;
        let p = &mut self.pools[pool];
        p.send_in_order(env, &mut out, wire_latency);
        while let Some(j) = p.held.remove(&p.release_next) {
            p.release_next += 1;
            if let Some(j) = j {
                out.finished.push((j, t));
            }
        }
        let queued = !p.queue.is_empty();
        let m = &mut p.mes[me];
        let mut next = m
            .ctxs
            .iter()
            .filter(|c| c.job.is_some())
            .map(|c| c.ready.max(m.pipe_free))
            .min();
        if queued && m.ctxs.iter().any(|c| c.job.is_none()) {
            next = Some(next.map_or(m.pipe_free.max(t), |n| n.min(m.pipe_free.max(t))));
        }
        if let Some(n) = next {
            let n = n.max(t);
            if n < m.wake_at {
                m.wake_at = n;
                out.wake = Some(n);
            }
        }
        Ok(out)
    }
}
