//! The memory system every agent talks to: the private caches of each core (L1 and L2), an
//! optional shared last level, the interconnect, the memory controllers and DRAM of movelab-dram
//! (through its [`MemoryPort`]), the requests in flight between them and the event queue.
//!
//! One request/response interface serves every agent. A core reads and writes through
//! [`MemorySystem::access`] (an answer now, later through a wake-up, or "retry"); an agent (a
//! copy engine, the memory controller's bulk mechanisms, later devices) sends line requests with
//! [`MemorySystem::send`] and hears back through the [`Responder`] the platform hands in
//! ([`Response`]: a read's data left the controller, a posted write was accepted, a flush is
//! done, a bulk operation finished), schedules its own events with [`MemorySystem::schedule`],
//! and uses the coherence hooks (snoop, flush, invalidate, push a line into a core's cache).
//!
//! Coherence among the private caches is MESI kept by a snoop of the other cores' caches (the
//! bus snoop of the `fsb` and the snoop broadcast of the `on-die` path): a line dirty in one
//! core's caches (M) is in no other core's; a write to a line other cores hold sends an
//! invalidation (an upgrade) that takes a turn in the address/snoop phase (`address_ns`); a miss
//! on a line dirty in another core's cache is served from that cache (the owner's copy is written
//! back and kept clean, or invalidated for a write), which takes the snoop turn and one line on
//! the data path instead of a memory access. A line only this core holds clean is written without
//! a bus transaction (E). Agents keep the caches coherent through the same hooks: their writes
//! invalidate every cached copy, or push the line into a core's L2 (DDIO-like), and their reads
//! take dirty lines from the caches. With one core nothing of this costs anything.
use crate::config::platform::{CoreConfig, PlatformConfig};
use crate::iface::{Access, OffloadOp, Token};
use crate::memory::cache::{Cache, Victim};
use crate::memory::interconnect::Interconnect;
use crate::memory::pending_copy_table::PendingCopyTable;
use crate::sim::{EventQueue, Ps};
pub use crate::stats::CoherenceStats;
use crate::stats::{CoreTraffic, MemoryTraffic};
use movelab_dram::mapper::Location;
use movelab_dram::port::{Completion, MemoryPort};
use movelab_dram::request::{BulkOp, Op as MemOp};
use std::collections::{HashMap, VecDeque};

/// An agent's index in the platform (cores are not agents of this kind: they use `access`).
pub type AgentId = u16;

/// Who a memory request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReqKind {
    /// A cache fill for the MSHR of this line of this core.
    Fill { line: u64, core: u16 },
    /// A dirty line written back; `notify` names the agent (and its tag) waiting for it.
    Writeback { notify: Option<(AgentId, u32)> },
    /// An agent's read or write; the response goes back to the agent with the tag.
    Agent { agent: AgentId, tag: u32 },
}

#[derive(Debug, Clone, Copy)]
pub struct MemReq {
    pub addr: u64,
    pub op: MemOp,
    /// Issued by an engine (ranked below core requests where the controller has bypass).
    pub engine: bool,
    pub kind: ReqKind,
    /// Traffic caused by a copy or initialisation.
    pub copy: bool,
    pub channel: u32,
}

/// An event in the kernel's queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ev {
    /// A request reaches the memory controller.
    Offer(u32),
    /// A fill reaches the caches.
    Fill(u32),
    /// An agent's own event (`kind` and `id` are the agent's to interpret).
    Agent { agent: AgentId, kind: u16, id: u32 },
    /// A core is woken (a doorbell).
    Poke(u16),
    /// An interrupt reaches a core, announcing `frames` received frames (written into host
    /// memory before it was raised; 0 for an interrupt that announces none, such as a transmit
    /// completion's).
    Interrupt { core: u16, frames: u32 },
}

/// What the memory system tells an agent about its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Response {
    /// A read's data left the memory controller at the time given with it; the request `req`
    /// stays allocated until the agent releases it.
    ReadDone { req: u32, tag: u32, channel: u32 },
    /// A posted write was accepted by the memory controller (the point of coherence).
    WriteAccepted { tag: u32 },
    /// A write-back the agent asked for reached memory.
    Flushed { tag: u32 },
    /// A bulk operation the agent started finished.
    BulkDone { id: u32 },
}

/// Whoever owns the agents: the memory system calls it back when an agent's request progresses.
pub trait Responder {
    fn respond(&mut self, sys: &mut MemorySystem, now: Ps, agent: AgentId, r: Response);
}

/// A responder for callers that know no agent request can complete.
pub struct NoAgents;

impl Responder for NoAgents {
    fn respond(&mut self, _: &mut MemorySystem, _: Ps, _: AgentId, _: Response) {}
}

struct Mshr {
    waiters: Vec<Token>,
    write: bool,
    copy: bool,
}

/// One core's private caches and miss handling.
pub struct Private {
    pub l1: Cache,
    pub l2: Cache,
    /// Core clock period: cache latencies are in core cycles.
    pub cycle_ps: Ps,
    mshr_limit: usize,
    skips_destination_fetch: bool,
    /// Outstanding misses by line (a handful: a linear scan beats hashing).
    mshrs: Vec<(u64, Mshr)>,
    /// When the level-2-to-level-1 fill path and the last-level-to-level-2 fill path are next
    /// free ([`crate::config::platform::CacheConfig::fill_bytes_per_cycle`]; unused where it is 0).
    l2_fill_free: Ps,
    llc_fill_free: Ps,
    /// Emptied waiter lists of freed MSHRs, reused so that a miss allocates nothing.
    spare_waiters: Vec<Vec<Token>>,
    /// Answers for the core: (token, time).
    pub wakeups: Vec<(Token, Ps)>,
    /// The core should retry what it could not start (an MSHR or a table entry freed).
    pub poke: bool,
}

/// Where a line's value lives, for the value shadow ([`ValueShadow`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Holder {
    L1(u16),
    L2(u16),
    Llc,
}

/// A functional shadow of the data the caches and memory hold, kept only when asked for (by the
/// coherence tests): every store writes a new version into the writing core's L1, and every move
/// of a line (fill, victim, write-back, cache-to-cache transfer, agent write) moves its version.
/// A load then sees the version where it hit, so a missed invalidation shows up as a stale value.
#[derive(Debug, Default)]
pub struct ValueShadow {
    at: HashMap<(Holder, u64), u64>,
    memory: HashMap<u64, u64>,
    next: u64,
    /// The version the last store (of a core or an agent) wrote.
    pub last_written: u64,
    /// The last version written to each line.
    latest: HashMap<u64, u64>,
    /// Loads that saw another value than the last one written, and lines an agent's copy or
    /// initialisation delivered with another value than the operation's (at most 16 recorded).
    pub violations: Vec<String>,
    /// Loads checked.
    pub loads_checked: u64,
    /// Per destination line of an offloaded copy or initialisation, the values it must receive
    /// (in the order the operations were handed over), recorded when a core hands it over.
    expected: HashMap<u64, VecDeque<u64>>,
    /// Destination lines an agent delivered and were checked, and those with a wrong value.
    pub copy_lines_checked: u64,
    pub copy_lines_wrong: u64,
}

/// The value of a line of zeroes in the value shadow, and of a line filled with byte `v`: data,
/// not versions (a copy's destination holds its source's value).
const ZERO_VALUE: u64 = u64::MAX;
fn fill_value(v: u8) -> u64 {
    if v == 0 {
        ZERO_VALUE
    } else {
        u64::MAX - 1 - u64::from(v)
    }
}

impl ValueShadow {
    fn get(&self, h: Holder, line: u64) -> u64 {
        self.at
            .get(&(h, line))
            .copied()
            .unwrap_or_else(|| self.memory.get(&line).copied().unwrap_or(0))
    }
    fn copy(&mut self, from: Option<Holder>, to: Holder, line: u64) {
        let v = match from {
            Some(h) => self.get(h, line),
            None => self.memory.get(&line).copied().unwrap_or(0),
        };
        self.at.insert((to, line), v);
    }
    fn new_version(&mut self, to: Holder, line: u64) -> u64 {
        let v = self.written(line);
        self.at.insert((to, line), v);
        v
    }
    /// A new version of `line` is written (by anyone).
    fn written(&mut self, line: u64) -> u64 {
        self.next += 1;
        self.last_written = self.next;
        self.latest.insert(line, self.next);
        self.next
    }
    /// Core `c` loaded `line` from its L1: it must see the last version written.
    fn check_load(&mut self, c: usize, line: u64) {
        self.loads_checked += 1;
        let seen = self.get(Holder::L1(c as u16), line);
        let last = self.latest.get(&line).copied().unwrap_or(0);
        if seen != last && self.violations.len() < 16 {
            self.violations.push(format!(
                "core {c} loaded line {line:#x}: version {seen}, last written {last}"
            ));
        }
    }
    /// The newest value of `line` in core `c`'s private caches (its L1's when there), else memory's.
    fn newest_private(&self, c: u16, line: u64) -> u64 {
        [Holder::L1(c), Holder::L2(c)]
            .iter()
            .find_map(|h| self.at.get(&(*h, line)).copied())
            .unwrap_or_else(|| self.memory.get(&line).copied().unwrap_or(0))
    }
    fn write_memory(&mut self, from: Holder, line: u64) {
        let v = self.get(from, line);
        self.memory.insert(line, v);
    }
    fn forget(&mut self, h: Holder, line: u64) {
        self.at.remove(&(h, line));
    }
    /// An agent writes the line of an operation a core handed over (its value `v`, when known)
    /// to memory: checked against the value the operation must deliver, and then the line's last
    /// value. A line no operation expects (a partial line, a source and destination aligned
    /// differently) gets a new version, as any write. Returns the value now in memory.
    fn delivered(&mut self, line: u64, v: Option<u64>) -> u64 {
        let v = self.checked_delivery(line, v);
        self.memory.insert(line, v);
        v
    }
    /// [`ValueShadow::delivered`]'s check, for a value delivered to a cache (not memory): the
    /// line's last value becomes `v` (or a new version when no operation expects it).
    fn checked_delivery(&mut self, line: u64, v: Option<u64>) -> u64 {
        let want = match self.expected.get_mut(&line) {
            Some(q) => {
                let w = q.pop_front();
                if q.is_empty() {
                    self.expected.remove(&line);
                }
                w
            }
            None => None,
        };
        match (want, v) {
            (Some(want), Some(v)) => {
                self.copy_lines_checked += 1;
                if want != v {
                    self.copy_lines_wrong += 1;
                    if self.violations.len() < 16 {
                        self.violations.push(format!(
                            "an agent delivered line {line:#x} with value {v}, the operation's is {want}"
                        ));
                    }
                }
                self.latest.insert(line, v);
                v
            }
            _ => self.written(line),
        }
    }
}

/// Everything below the cores.
pub struct MemorySystem {
    pub(crate) privs: Vec<Private>,
    pub(crate) llc: Option<Cache>,
    pub(crate) ic: Interconnect,
    pub(crate) mem: MemoryPort,
    pub(crate) tck: Ps,
    /// The DRAM cycle at which the memory controllers next need to run.
    pub(crate) mem_wake: u64,
    /// The last DRAM cycle the memory controllers ran.
    mem_now: u64,
    /// Bulk operations handed over for a cycle the controllers have not reached yet: (cycle,
    /// operation, id, agent). An agent acting on a response that completes in the future (the
    /// last write-back before a RowClone copy) submits for that future cycle; the controllers
    /// take the operation only when they get there, so it cannot start before it arrived.
    pending_bulk: Vec<(u64, BulkOp, u32, AgentId)>,
    pub(crate) events: EventQueue<Ev>,
    pub(crate) reqs: Vec<Option<MemReq>>,
    free_reqs: Vec<u32>,
    /// Requests refused by a full queue, per (channel, direction), retried in order.
    pub(crate) mc_retry: Vec<VecDeque<u32>>,
    /// Address ranges loads and stores may not touch yet (an agent's pending copy table, the
    /// destinations of in-memory operations), checked in order.
    pub guards: Vec<PendingCopyTable>,
    /// Core requests are held back at the controller (SYNC_NLB: behind an engine's copy).
    pub hold_core_requests: bool,
    held: Vec<u32>,
    /// Owners of the bulk operations in flight: (id, agent).
    bulk_owner: Vec<(u32, AgentId)>,
    pub(crate) traffic: MemoryTraffic,
    /// Offered by the platform (line requests), to tell them from the controller's own bulk work.
    pub(crate) offered_lines: u64,
    pub coherence: CoherenceStats,
    interrupt_delivery: Ps,
    /// Cores (hardware contexts) an interrupt may target.
    pub interrupt_targets: usize,
    uncached_latency: Ps,
    pub uncached_accesses: u64,
    /// Address ranges of devices' registers (BARs): (base, bytes, agent). Empty without devices.
    mmio: Vec<(u64, u64, AgentId)>,
    /// The value shadow, when enabled ([`MemorySystem::track_values`]).
    pub shadow: Option<Box<ValueShadow>>,
    /// Fault injection for the tests of the coherence checks: cores' writes leave other cores'
    /// copies in place (the checks must then fail).
    pub skip_invalidations: bool,
    /// Fault injection for the copy checks: agents copy a source line from memory even when a
    /// cache holds a newer copy (the checks must then fail).
    pub stale_copy_sources: bool,
    /// An error raised inside an event handler, reported by the run loop.
    pub(crate) fatal: Option<String>,
    /// A driver's error raised inside an agent (see [`crate::sim::error::PlatformError::Driver`]),
    /// reported by the run loop.
    pub(crate) driver_error: Option<String>,
    /// Set with every wake-up or poke left in a core's [`Private`]; the run loop clears it once
    /// it has handed them all on, so that it looks through the cores only when one waits.
    pub(crate) woken: bool,
    /// The controllers' completions of one step, kept so that no step allocates.
    done_buf: Vec<Completion>,
    /// Per-core DRAM accounting, when the cores own memory regions ([`MemorySystem::set_owners`]).
    pub(crate) attribution: Option<Box<Attribution>>,
}

/// Samples between which `MemorySystem::attribute` splits energy and bulk lines, at most.
pub const ATTRIBUTION_PERIOD: u64 = 1 << 12;

/// DRAM traffic and energy per core (see [`MemorySystem::set_owners`]).
pub struct Attribution {
    /// (lowest address, core), by address.
    bases: Vec<(u64, usize)>,
    /// One per core, then one for addresses no core owns.
    pub(crate) cores: Vec<CoreTraffic>,
    /// At the last sample: each bucket's line bytes and bulk operation bytes, the DRAM energy
    /// (all, and background + refresh) and the controllers' own bulk lines.
    last_line_bytes: Vec<u64>,
    last_op_bytes: Vec<u64>,
    last_total_nj: f64,
    last_static_nj: f64,
    last_bulk_lines: u64,
    /// A write-back's energy as of the last sample: a write burst (the run's mean so far where
    /// it wrote, else one from the part's currents) and the mean I/O, activate and precharge
    /// energy per line so far.
    last_per_line_nj: f64,
    /// Calls since the last sample ([`MemorySystem::attribution_tick`]).
    calls: u64,
    /// Each core's totals when it finished its warm-up and when it reached its target.
    pub(crate) warm: Vec<Option<CoreSnapshot>>,
    pub(crate) target: Vec<Option<CoreSnapshot>>,
}

/// A core's attributed totals at one moment.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CoreSnapshot {
    /// Its program instructions retired.
    pub work: u64,
    pub channel_bytes: f64,
    pub energy_nj: f64,
    /// Dirty lines of its region in the caches (write-backs owed).
    pub dirty: u64,
    /// What an owed write-back costs as of then (see `MemorySystem::attribute`).
    pub per_line_nj: f64,
}

impl Attribution {
    /// The bucket of `addr`: the core with the highest base at or below it, else the last.
    fn bucket(&self, addr: u64) -> usize {
        match self.bases.partition_point(|&(b, _)| b <= addr) {
            0 => self.bases.len(),
            k => self.bases[k - 1].1,
        }
    }
}

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

/// Reserves a fill path that moves `bytes_per_cycle` for one 64-byte line from `now`: returns
/// how long the line waits for the path (0 where the path is free or not modelled) and moves
/// `free`, the time the path is next free, one line's occupancy on.
fn reserve_fill(free: &mut Ps, now: Ps, bytes_per_cycle: u64, cycle_ps: Ps) -> Ps {
    if bytes_per_cycle == 0 {
        return 0;
    }
    let start = now.max(*free);
    *free = start + ceil_div(64 * cycle_ps, bytes_per_cycle);
    start - now
}

fn cycle_ps_of(clock_mhz: u64) -> Ps {
    (1_000_000.0 / clock_mhz as f64).round() as Ps
}

impl MemorySystem {
    /// The memory system of `cfg` with private caches for cores of the given configurations.
    pub fn new(
        cfg: &PlatformConfig,
        cores: &[CoreConfig],
    ) -> Result<MemorySystem, crate::sim::error::PlatformError> {
        let dc = cfg.dram_config("platform")?;
        let mem = MemoryPort::new(&dc)?;
        let tck = mem.tck_ps();
        let privs = cores
            .iter()
            .map(|c| Private {
                l1: Cache::new(&cfg.l1),
                l2: Cache::new(&cfg.l2),
                cycle_ps: cycle_ps_of(c.clock_mhz),
                mshr_limit: c.mshrs as usize,
                skips_destination_fetch: c.copy_skips_destination_fetch,
                mshrs: Vec::new(),
                l2_fill_free: 0,
                llc_fill_free: 0,
                spare_waiters: Vec::new(),
                wakeups: Vec::new(),
                poke: false,
            })
            .collect();
        Ok(MemorySystem {
            privs,
            llc: cfg.llc.as_ref().map(Cache::new),
            ic: Interconnect::new(&cfg.interconnect),
            mem,
            tck,
            mem_wake: u64::MAX,
            events: EventQueue::new(),
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            mc_retry: Vec::new(),
            guards: Vec::new(),
            hold_core_requests: false,
            held: Vec::new(),
            bulk_owner: Vec::new(),
            mem_now: 0,
            pending_bulk: Vec::new(),
            traffic: MemoryTraffic::default(),
            offered_lines: 0,
            coherence: CoherenceStats::default(),
            interrupt_delivery: crate::sim::ns(cfg.interrupts.delivery_ns),
            interrupt_targets: cores.len(),
            uncached_latency: crate::sim::ns(cfg.interconnect.uncached_ns),
            uncached_accesses: 0,
            mmio: Vec::new(),
            shadow: None,
            skip_invalidations: false,
            stale_copy_sources: false,
            fatal: None,
            driver_error: None,
            woken: false,
            done_buf: Vec::new(),
            attribution: None,
        })
    }

    /// Starts counting DRAM traffic and energy per core: core `i` owns the addresses from
    /// `bases[i]` up to the next higher base (the last one to the top of memory); addresses
    /// below every base belong to no core. A line request counts for the core owning its
    /// address (so a write-back for the core whose line it was, whoever evicted it); a bulk
    /// operation for the core owning its destination. The lines the controllers move on their
    /// own for bulk operations and the DRAM energy are split at samples
    /// (`MemorySystem::attribute`): each interval's bulk lines in proportion to the bulk
    /// operation bytes issued in it (all issued so far, if none), its background and refresh
    /// energy in equal parts among the cores, the rest in proportion to the interval's channel
    /// bytes (in equal parts among the cores if none moved). Refused (an error naming the
    /// cores) when two cores share a base.
    pub fn set_owners(&mut self, bases: &[u64]) -> Result<(), String> {
        let mut b: Vec<(u64, usize)> = bases.iter().copied().zip(0..).collect();
        b.sort_unstable();
        if let Some(w) = b.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(format!(
                "cores {} and {} start at the same address {:#x}: per-core accounting needs a \
                 memory region per core",
                w[0].1, w[1].1, w[0].0
            ));
        }
        let n = bases.len() + 1;
        self.attribution = Some(Box::new(Attribution {
            bases: b,
            cores: vec![CoreTraffic::default(); n],
            last_line_bytes: vec![0; n],
            last_op_bytes: vec![0; n],
            last_total_nj: 0.0,
            last_static_nj: 0.0,
            last_bulk_lines: 0,
            last_per_line_nj: 0.0,
            calls: 0,
            warm: vec![None; n - 1],
            target: vec![None; n - 1],
        }));
        Ok(())
    }

    /// The running per-core totals (one per core, then the unowned addresses' bucket), as of
    /// the last sample for the shares; empty without [`MemorySystem::set_owners`].
    pub fn core_traffic(&self) -> &[CoreTraffic] {
        self.attribution.as_ref().map_or(&[], |a| &a.cores)
    }

    /// Counts a call; true once every [`ATTRIBUTION_PERIOD`] calls (time for a sample).
    pub(crate) fn attribution_tick(&mut self) -> bool {
        let Some(a) = self.attribution.as_mut() else {
            return false;
        };
        a.calls += 1;
        a.calls >= ATTRIBUTION_PERIOD
    }

    /// Samples the DRAM model at `cycle` and splits what it moved and spent since the last
    /// sample among the cores (the rule of [`MemorySystem::set_owners`]).
    pub(crate) fn attribute(&mut self, cycle: u64) {
        if self.attribution.is_none() {
            return;
        }
        let st = self.mem.stats(cycle);
        let platform_lines = self.traffic.platform_bytes / 64;
        let write_burst_nj = self.mem.command_energy().write / 1000.0;
        let Some(a) = self.attribution.as_mut() else {
            return;
        };
        a.calls = 0;
        let n = a.cores.len();
        let owners = n - 1;
        // Lines the controllers moved for bulk operations: every line they carried out that
        // was not a line request of the platform (both counted when issued).
        let bulk_lines = (st.reads + st.writes).saturating_sub(platform_lines);
        let d_bulk = bulk_lines.saturating_sub(a.last_bulk_lines) as f64 * 64.0;
        let op_now: Vec<u64> = a.cores.iter().map(|c| c.bulk_op_bytes).collect();
        let d_op: Vec<f64> = op_now
            .iter()
            .zip(&a.last_op_bytes)
            .map(|(x, y)| (x - y) as f64)
            .collect();
        let weights: Vec<f64> = if d_op.iter().sum::<f64>() > 0.0 {
            d_op
        } else {
            op_now.iter().map(|&x| x as f64).collect()
        };
        let wsum: f64 = weights.iter().sum();
        let mut d_bytes = vec![0.0; n];
        for (k, c) in a.cores.iter_mut().enumerate() {
            let share = if wsum > 0.0 {
                d_bulk * weights[k] / wsum
            } else if k == owners {
                d_bulk
            } else {
                0.0
            };
            c.bulk_channel_bytes += share;
            let lines = c.read_bytes + c.write_bytes;
            d_bytes[k] = (lines - a.last_line_bytes[k]) as f64 + share;
            a.last_line_bytes[k] = lines;
        }
        a.last_op_bytes = op_now;
        a.last_bulk_lines = bulk_lines;
        let e = &st.energy;
        let stat = e.background_nj + e.refresh_nj;
        let d_static = (stat - a.last_static_nj).max(0.0);
        let d_dynamic = (e.total_nj - a.last_total_nj - d_static).max(0.0);
        a.last_total_nj = e.total_nj;
        a.last_static_nj = stat;
        let lines = st.reads + st.writes;
        a.last_per_line_nj = if lines > 0 {
            let per_write = if st.writes > 0 {
                e.write_nj / st.writes as f64
            } else {
                write_burst_nj
            };
            per_write + (e.io_nj + e.activate_nj + e.precharge_nj) / lines as f64
        } else {
            0.0
        };
        let bsum: f64 = d_bytes.iter().sum();
        for (k, c) in a.cores.iter_mut().enumerate() {
            let own = k < owners;
            let mut add = if own { d_static / owners as f64 } else { 0.0 };
            add += if bsum > 0.0 {
                d_dynamic * d_bytes[k] / bsum
            } else if own {
                d_dynamic / owners as f64
            } else {
                0.0
            };
            c.dram_energy_nj += add;
        }
    }

    /// Records core `core`'s totals now (after a sample), as its warm-up's end or as its
    /// target; `work` is its program instructions, `dirty` the owners' dirty lines.
    pub(crate) fn snapshot(&mut self, core: usize, work: u64, target: bool, dirty: &[u64]) {
        let Some(a) = self.attribution.as_mut() else {
            return;
        };
        let Some(c) = a.cores.get(core) else {
            return;
        };
        let s = CoreSnapshot {
            work,
            channel_bytes: c.channel_bytes(),
            energy_nj: c.dram_energy_nj,
            dirty: dirty.get(core).copied().unwrap_or(0),
            per_line_nj: a.last_per_line_nj,
        };
        let slot = if target {
            &mut a.target[core]
        } else {
            &mut a.warm[core]
        };
        slot.get_or_insert(s);
    }

    /// Dirty lines in all caches (a line dirty at two levels counted once), by owner bucket
    /// (empty without [`MemorySystem::set_owners`]).
    pub fn dirty_lines_by_owner(&self) -> Vec<u64> {
        let Some(a) = self.attribution.as_ref() else {
            return Vec::new();
        };
        let mut out = vec![0u64; a.cores.len()];
        for p in &self.privs {
            for (line, _) in p.l2.dirty_lines() {
                out[a.bucket(line * 64)] += 1;
            }
            for (line, _) in p.l1.dirty_lines() {
                if !p.l2.is_dirty(line) {
                    out[a.bucket(line * 64)] += 1;
                }
            }
        }
        if let Some(l) = &self.llc {
            for (line, _) in l.dirty_lines() {
                if !self
                    .privs
                    .iter()
                    .any(|p| p.l2.is_dirty(line) || p.l1.is_dirty(line))
                {
                    out[a.bucket(line * 64)] += 1;
                }
            }
        }
        out
    }

    /// Keeps a functional shadow of every line's value (for coherence checks; slow).
    pub fn track_values(&mut self) {
        self.shadow = Some(Box::default());
    }

    /// The version of `line` core `core` would read from its L1 now (value shadow on).
    pub fn value_in_l1(&self, core: usize, line: u64) -> Option<u64> {
        let sh = self.shadow.as_ref()?;
        self.privs
            .get(core)?
            .l1
            .contains(line)
            .then(|| sh.get(Holder::L1(core as u16), line))
    }

    /// The memory port (e.g. to attach a command log).
    pub fn mem_mut(&mut self) -> &mut MemoryPort {
        &mut self.mem
    }

    /// The memory port's address decoding and organisation.
    pub fn mem(&self) -> &MemoryPort {
        &self.mem
    }

    /// Number of cores with private caches.
    pub fn cores(&self) -> usize {
        self.privs.len()
    }

    /// The core's private caches.
    pub fn private(&self, core: usize) -> &Private {
        &self.privs[core]
    }

    /// A one-line summary of core `core`'s outstanding misses (for stall reports).
    pub fn private_state(&self, core: usize) -> String {
        let p = &self.privs[core];
        let lines: Vec<String> = p.mshrs.iter().map(|m| format!("{:#x}", m.0 * 64)).collect();
        let guarded: usize = self.guards.iter().map(|g| g.len()).sum();
        format!(
            "misses outstanding [{}], guarded ranges {guarded}",
            lines.join(" ")
        )
    }

    /// Core `core`'s clock period.
    pub fn cycle_ps(&self, core: usize) -> Ps {
        self.privs[core].cycle_ps
    }

    /// The latency of a hit in core `core`'s L2.
    pub fn l2_hit_ps(&self, core: usize) -> Ps {
        let p = &self.privs[core];
        p.l2.hit_cycles * p.cycle_ps
    }

    pub fn channel_of(&self, addr: u64) -> u32 {
        self.mem.locate(addr).channel
    }

    pub fn locate(&self, addr: u64) -> Location {
        self.mem.locate(addr)
    }

    /// The interconnect (agents take their turns on it).
    pub fn ic(&mut self) -> &mut Interconnect {
        &mut self.ic
    }

    /// Schedules an agent's event.
    pub fn schedule(&mut self, at: Ps, agent: AgentId, kind: u16, id: u32) {
        self.events.push(at, Ev::Agent { agent, kind, id });
    }

    /// Wakes core `core`'s window entry or store (`token`) at `at`.
    pub fn wake(&mut self, core: usize, token: Token, at: Ps) {
        self.privs[core].wakeups.push((token, at));
        self.woken = true;
    }

    /// Tells core `core` to retry what it could not start.
    pub fn poke(&mut self, core: usize) {
        self.privs[core].poke = true;
        self.woken = true;
    }

    /// Wakes core `core` at `at` (a doorbell).
    pub fn poke_at(&mut self, core: usize, at: Ps) {
        self.events.push(at, Ev::Poke(core as u16));
    }

    /// An interrupt for core `target`, raised now, reaches it after the delivery latency. It
    /// announces `frames` received frames the device wrote into host memory before raising it (a
    /// handler that runs per received frame, the workload's `handler_per_frame`, runs once for
    /// each); a device that does not count them, or a transmit completion, announces none.
    pub fn raise_interrupt(&mut self, now: Ps, target: usize, frames: u32) {
        if target >= self.interrupt_targets {
            self.fatal.get_or_insert(format!(
                "an interrupt for core {target}, but the platform has {} cores",
                self.interrupt_targets
            ));
            return;
        }
        self.events.push(
            now + self.interrupt_delivery,
            Ev::Interrupt {
                core: target as u16,
                frames,
            },
        );
    }

    /// An uncached (MMIO-like) load or store: a turn in the address phase, then the uncached
    /// latency; the caches are not touched.
    pub fn uncached(&mut self, now: Ps) -> Access {
        self.uncached_accesses += 1;
        Access::At(self.ic.address_phase(now) + self.uncached_latency)
    }

    /// Registers agent `agent`'s register range (a device's BAR): a core's uncached loads and
    /// stores inside it go to that agent. Refuses an empty range or one overlapping another's.
    pub fn register_mmio(&mut self, base: u64, bytes: u64, agent: AgentId) -> Result<(), String> {
        let end = base
            .checked_add(bytes)
            .filter(|_| bytes > 0)
            .ok_or_else(|| format!("{base:#x} + {bytes:#x} is not a range"))?;
        if let Some((b, n, a)) = self.mmio.iter().find(|(b, n, _)| base < b + n && *b < end) {
            return Err(format!(
                "{base:#x}..{end:#x} overlaps agent {a}'s registers at {b:#x}..{:#x}",
                b + n
            ));
        }
        self.mmio.push((base, bytes, agent));
        Ok(())
    }

    /// The agent whose registers hold `addr`, if any.
    pub fn mmio_owner(&self, addr: u64) -> Option<AgentId> {
        self.mmio
            .iter()
            .find(|(b, n, _)| addr >= *b && addr - b < *n)
            .map(|(_, _, a)| *a)
    }

    /// Counts an uncached access a device took (its cost is the device's).
    pub fn count_uncached(&mut self) {
        self.uncached_accesses += 1;
    }

    /// With the value shadow on: the version of `line` a device read sees when it takes the
    /// line from a cache (`from_cache`: the dirty copy's) or from memory, and the version last
    /// written to it. The two differ when the read took a path coherence forbids.
    pub fn device_read_version(&self, line: u64, from_cache: bool) -> Option<(u64, u64)> {
        let sh = self.shadow.as_ref()?;
        let mut seen = None;
        if from_cache {
            for (c, p) in self.privs.iter().enumerate() {
                if p.l1.is_dirty(line) {
                    seen = Some(sh.get(Holder::L1(c as u16), line));
                    break;
                }
                if p.l2.is_dirty(line) {
                    seen = Some(sh.get(Holder::L2(c as u16), line));
                    break;
                }
            }
            if seen.is_none() && self.llc.as_ref().is_some_and(|l| l.is_dirty(line)) {
                seen = Some(sh.get(Holder::Llc, line));
            }
        }
        let seen = seen.unwrap_or_else(|| sh.memory.get(&line).copied().unwrap_or(0));
        Some((seen, sh.latest.get(&line).copied().unwrap_or(0)))
    }

    /// A guard released a range: every core retries what it held back.
    pub fn poke_all(&mut self) {
        for p in self.privs.iter_mut() {
            p.poke = true;
        }
        self.woken = true;
    }

    /// Registers an address guard (a table of ranges loads and stores wait for); returns its index.
    pub fn add_guard(&mut self, capacity: usize) -> usize {
        self.guards.push(PendingCopyTable::new(capacity));
        self.guards.len() - 1
    }

    /// Sends a memory request that reaches the memory controller at `at`.
    pub fn send(
        &mut self,
        at: Ps,
        addr: u64,
        op: MemOp,
        engine: bool,
        kind: ReqKind,
        copy: bool,
    ) -> u32 {
        let channel = self.channel_of(addr);
        self.send_on(at, addr, channel, op, engine, kind, copy)
    }

    /// [`MemorySystem::send`] for a caller that already decomposed `addr` (its `channel`), so
    /// that a request's address is mapped once on its way to the controller.
    #[allow(clippy::too_many_arguments)]
    fn send_on(
        &mut self,
        at: Ps,
        addr: u64,
        channel: u32,
        op: MemOp,
        engine: bool,
        kind: ReqKind,
        copy: bool,
    ) -> u32 {
        let id = self.alloc_req(MemReq {
            addr: addr & !63,
            op,
            engine,
            kind,
            copy,
            channel,
        });
        self.events.push(at, Ev::Offer(id));
        id
    }

    /// Records a request without sending it (e.g. a line an agent takes from a cache).
    pub fn alloc_req(&mut self, r: MemReq) -> u32 {
        match self.free_reqs.pop() {
            Some(i) => {
                self.reqs[i as usize] = Some(r);
                i
            }
            None => {
                self.reqs.push(Some(r));
                (self.reqs.len() - 1) as u32
            }
        }
    }

    /// Frees a request, returning it.
    pub fn release_req(&mut self, id: u32) -> Option<MemReq> {
        let r = self.reqs.get_mut(id as usize)?.take();
        if r.is_some() {
            self.free_reqs.push(id);
        }
        r
    }

    /// Starts a bulk operation of `agent` at the memory controller (cycle `cycle`). A cycle the
    /// controllers have not reached yet holds it until they do (see `pending_bulk`); an
    /// operation the controller refuses then stops the run with its error.
    pub fn bulk(&mut self, agent: AgentId, op: BulkOp, id: u32, cycle: u64) -> Result<(), String> {
        if cycle > self.mem_now {
            self.pending_bulk.push((cycle, op, id, agent));
            self.mem_wake = self.mem_wake.min(cycle);
            return Ok(());
        }
        self.submit_bulk(agent, op, id, cycle)
    }

    fn submit_bulk(
        &mut self,
        agent: AgentId,
        op: BulkOp,
        id: u32,
        cycle: u64,
    ) -> Result<(), String> {
        match self.mem.bulk(op, id, cycle) {
            Ok(()) => {
                if let Some(a) = self.attribution.as_mut() {
                    let k = a.bucket(op.dst);
                    a.cores[k].bulk_op_bytes += op.bytes;
                }
                self.bulk_owner.push((id, agent));
                self.mem_wake = self.mem_wake.min(cycle);
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// The request reaches the controller at `now`: queue it, or keep it for a retry.
    pub(crate) fn offer(&mut self, now: Ps, id: u32, r: &mut dyn Responder) {
        let Some(q) = self.reqs[id as usize] else {
            return;
        };
        if !q.engine && self.hold_core_requests {
            // SYNC_NLB: the memory queue is first come, first served and the engine put its whole
            // copy in it first, so a core request waits until the copy is through.
            self.held.push(id);
            return;
        }
        let cycle = ceil_div(now, self.tck);
        let qi = (q.channel as usize) * 2 + usize::from(q.op == MemOp::Write);
        if self.mc_retry.len() <= qi {
            self.mc_retry.resize(qi + 1, VecDeque::new());
        }
        // Keep arrival order: nothing overtakes a request already waiting for the same queue.
        if self.mc_retry[qi].is_empty() && self.mem.offer(q.addr, q.op, q.engine, id, cycle) {
            self.offered_lines += 1;
            self.mem_wake = self.mem_wake.min(cycle);
            self.accepted(now, q, r);
        } else {
            self.mc_retry[qi].push_back(id);
        }
    }

    /// Core requests held behind an engine go to the controller (the engine's copy is through).
    pub fn release_held(&mut self, now: Ps) {
        for id in std::mem::take(&mut self.held) {
            self.offer(now, id, &mut NoAgents);
        }
    }

    /// A request entered a memory controller queue at `t`. Writes are posted: an agent's write
    /// counts as done once the controller, the point of coherence, holds it.
    fn accepted(&mut self, t: Ps, q: MemReq, r: &mut dyn Responder) {
        if let (ReqKind::Agent { agent, tag }, MemOp::Write) = (q.kind, q.op) {
            r.respond(self, t, agent, Response::WriteAccepted { tag });
        }
    }

    /// Writes a dirty victim back to memory.
    pub fn writeback(&mut self, now: Ps, v: Victim, notify: Option<(AgentId, u32)>) {
        if !v.dirty {
            return;
        }
        let addr = v.line * 64;
        let ch = self.channel_of(addr);
        let at = self.ic.writeback_arrives(now, ch);
        self.send_on(
            at,
            addr,
            ch,
            MemOp::Write,
            false,
            ReqKind::Writeback { notify },
            v.by_copy,
        );
    }

    /// Puts a line into core `c`'s L1 (from a fill or an L2 hit); a dirty L1 victim goes to L2,
    /// and a dirty L2 (or last-level) victim goes to memory. `from`: where its value comes from.
    fn fill_l1(&mut self, now: Ps, c: usize, line: u64, dirty: bool, copy: bool) {
        let v = self.privs[c].l1.insert(line, dirty, copy);
        if let Some(sh) = self.shadow.as_mut() {
            let h = Holder::L1(c as u16);
            if dirty {
                sh.new_version(h, line);
            } else if !self.privs[c].l1.is_dirty(line) {
                sh.copy(
                    Some(Holder::L2(c as u16)).filter(|_| self.privs[c].l2.contains(line)),
                    h,
                    line,
                );
            }
            if let Some(v) = v {
                if v.dirty {
                    sh.copy(Some(Holder::L1(c as u16)), Holder::L2(c as u16), v.line);
                }
                sh.forget(Holder::L1(c as u16), v.line);
            }
        }
        if let Some(v) = v {
            if v.dirty {
                self.insert_l2(now, c, v.line, true, v.by_copy);
            }
        }
    }

    /// Puts a line into core `c`'s L2; a displaced dirty line goes to the last level or memory.
    pub fn insert_l2(&mut self, now: Ps, c: usize, line: u64, dirty: bool, copy: bool) {
        let victim = self.privs[c].l2.insert(line, dirty, copy);
        let Some(v) = victim else { return };
        let h = Holder::L2(c as u16);
        match self.llc.as_mut() {
            Some(llc) if v.dirty => {
                let v2 = llc.insert(v.line, true, v.by_copy);
                if let Some(sh) = self.shadow.as_mut() {
                    sh.copy(Some(h), Holder::Llc, v.line);
                    sh.forget(h, v.line);
                    if let Some(v2) = v2 {
                        if v2.dirty {
                            sh.write_memory(Holder::Llc, v2.line);
                        }
                        sh.forget(Holder::Llc, v2.line);
                    }
                }
                if let Some(v2) = v2 {
                    self.writeback(now, v2, None);
                }
            }
            Some(_) => {
                if let Some(sh) = self.shadow.as_mut() {
                    sh.forget(h, v.line);
                }
            }
            None => {
                if let Some(sh) = self.shadow.as_mut() {
                    if v.dirty {
                        sh.write_memory(h, v.line);
                    }
                    sh.forget(h, v.line);
                }
                self.writeback(now, v, None)
            }
        }
    }

    /// An agent writes `line` into core `c`'s L2, dirty (the "push into the cache" of an on-die
    /// engine or a DDIO-like device): every other copy is invalidated first.
    pub fn push_to_l2(&mut self, now: Ps, c: usize, line: u64, copy: bool) {
        let _ = self.invalidate_all(line);
        self.insert_l2(now, c, line, true, copy);
        if let Some(sh) = self.shadow.as_mut() {
            sh.new_version(Holder::L2(c as u16), line);
        }
    }

    /// An agent's write of `line` to memory: every cached copy is invalidated (a whole-line
    /// write: a dirty copy need not be written back).
    pub fn agent_write_line(&mut self, line: u64) {
        let _ = self.invalidate_all(line);
        if let Some(sh) = self.shadow.as_mut() {
            let v = sh.written(line);
            sh.memory.insert(line, v);
        }
    }

    /// A core hands an agent `op` (value shadow on): records what each whole destination line
    /// must receive, the source line's last value (a copy whose source and destination share
    /// their offset in the line) or the fill's, the independent oracle of every agent's copies.
    pub fn expect_offload(&mut self, op: &OffloadOp) {
        let Some(sh) = self.shadow.as_mut() else {
            return;
        };
        if op.bytes == 0 || op.src.is_some_and(|s| s % 64 != op.dst % 64) {
            return;
        }
        let first = op.dst.div_ceil(64);
        let end = (op.dst + op.bytes) / 64;
        for line in first..end {
            let v = match op.src {
                Some(s) => {
                    let src = (s + (line * 64 - op.dst)) / 64;
                    sh.latest.get(&src).copied().unwrap_or(0)
                }
                None => fill_value(op.value),
            };
            sh.expected.entry(line).or_default().push_back(v);
        }
    }

    /// The value an agent's read of `line` gets (value shadow on): a dirty cached copy's with
    /// `from_cache`, else memory's.
    pub fn read_value(&self, line: u64, from_cache: bool) -> Option<u64> {
        self.device_read_version(line, from_cache)
            .map(|(seen, _)| seen)
    }

    /// An agent writes `value` (from [`Self::read_value`]) to `line` in memory, every cached copy
    /// invalidated; checked against the operation's value.
    pub fn agent_write_value(&mut self, line: u64, value: Option<u64>) {
        let _ = self.invalidate_all(line);
        if let Some(sh) = self.shadow.as_mut() {
            sh.delivered(line, value);
        }
    }

    /// An agent pushes `value` to `line` into core `c`'s L2, dirty; checked as
    /// [`Self::agent_write_value`].
    pub fn push_value_to_l2(
        &mut self,
        now: Ps,
        c: usize,
        line: u64,
        copy: bool,
        value: Option<u64>,
    ) {
        let _ = self.invalidate_all(line);
        self.insert_l2(now, c, line, true, copy);
        if let Some(sh) = self.shadow.as_mut() {
            let v = sh.delivered(line, value);
            sh.at.insert((Holder::L2(c as u16), line), v);
        }
    }

    /// An operation inside memory finished: `line` now holds source line `src`'s value in memory
    /// (a copy) or byte `fill` everywhere; checked as [`Self::agent_write_value`]. A copy of the
    /// line cached since the operation was handed over (a fill that was in flight then) holds
    /// what memory had before it: it is dropped.
    pub fn in_memory_done(&mut self, line: u64, src: Option<u64>, fill: u8) {
        let _ = self.invalidate_all(line);
        if let Some(sh) = self.shadow.as_mut() {
            if sh.expected.contains_key(&line) {
                let v = match src {
                    Some(s) => sh.memory.get(&s).copied().unwrap_or(0),
                    None => fill_value(fill),
                };
                sh.delivered(line, Some(v));
            }
        }
    }

    /// Inserts a clean line into core `c`'s L2 with memory's value (e.g. RowClone-ZI's zeroes).
    pub fn insert_clean_l2(&mut self, now: Ps, c: usize, line: u64) {
        self.insert_l2(now, c, line, false, false);
        if let Some(sh) = self.shadow.as_mut() {
            sh.copy(None, Holder::L2(c as u16), line);
        }
    }

    /// Drops a line from every cache (the invalidate hook); returns it if it was dirty.
    pub fn invalidate_all(&mut self, line: u64) -> Option<Victim> {
        let mut dirty = None;
        for (c, p) in self.privs.iter_mut().enumerate() {
            let a = p.l1.invalidate(line);
            let b = p.l2.invalidate(line);
            if let Some(sh) = self.shadow.as_mut() {
                sh.forget(Holder::L1(c as u16), line);
                sh.forget(Holder::L2(c as u16), line);
            }
            dirty = dirty.or([a, b].into_iter().flatten().find(|v| v.dirty));
        }
        let c = self.llc.as_mut().and_then(|l| l.invalidate(line));
        if let Some(sh) = self.shadow.as_mut() {
            sh.forget(Holder::Llc, line);
        }
        dirty.or(c.filter(|v| v.dirty))
    }

    /// Whether the line is dirty in any cache.
    pub fn dirty_anywhere(&self, line: u64) -> bool {
        self.privs
            .iter()
            .any(|p| p.l1.is_dirty(line) || p.l2.is_dirty(line))
            || self.llc.as_ref().is_some_and(|l| l.is_dirty(line))
    }

    /// Whether the line is in any cache.
    pub fn cached_anywhere(&self, line: u64) -> bool {
        self.privs
            .iter()
            .any(|p| p.l1.contains(line) || p.l2.contains(line))
            || self.llc.as_ref().is_some_and(|l| l.contains(line))
    }

    /// Cleans the line everywhere (the flush hook); true if some copy was dirty (the caller
    /// writes it back).
    pub fn flush_all(&mut self, line: u64) -> bool {
        let mut any = false;
        for (c, p) in self.privs.iter_mut().enumerate() {
            let a = p.l1.flush(line);
            let b = p.l2.flush(line);
            if let Some(sh) = self.shadow.as_mut() {
                // The newest copy (L1's if dirty there) goes to memory.
                if a {
                    sh.write_memory(Holder::L1(c as u16), line);
                    sh.copy(Some(Holder::L1(c as u16)), Holder::L2(c as u16), line);
                } else if b {
                    sh.write_memory(Holder::L2(c as u16), line);
                }
            }
            any |= a || b;
        }
        if any {
            self.refresh_llc(line);
        }
        let c = self.llc.as_mut().is_some_and(|l| l.flush(line));
        if c {
            if let Some(sh) = self.shadow.as_mut() {
                sh.write_memory(Holder::Llc, line);
            }
        }
        any || c
    }

    /// The core whose private caches hold `line` dirty, if any (at most one: single writer).
    pub fn dirty_private_holder(&self, line: u64) -> Option<usize> {
        self.privs
            .iter()
            .position(|p| p.l1.is_dirty(line) || p.l2.is_dirty(line))
    }

    /// RowClone section 4.2.2's in-cache copy: source line `src`, dirty in core `c`'s private
    /// caches, is copied inside them to destination line `dst` (put into its L2, dirty, every
    /// other copy of `dst` invalidated), which then holds the operation's value for that line
    /// whatever the in-memory copy writes to memory; `src` stays as it was. The value shadow
    /// checks the destination's value here, as an agent's delivery; memory's copy of `dst` is set
    /// when the in-memory operation ends ([`MemorySystem::in_cache_copy_done`]).
    pub fn copy_in_cache(&mut self, now: Ps, c: usize, src: u64, dst: u64) {
        let _ = self.invalidate_all(dst);
        self.insert_l2(now, c, dst, true, true);
        if let Some(sh) = self.shadow.as_mut() {
            let v = sh.newest_private(c as u16, src);
            sh.at.insert((Holder::L2(c as u16), dst), v);
            sh.checked_delivery(dst, Some(v));
        }
    }

    /// The in-memory operation that copied `src` to `dst` in a cache ([`MemorySystem::copy_in_cache`])
    /// ended (value shadow): memory's copy of `dst` is the source's stale one the operation wrote,
    /// while a cache still holds `dst` dirty (its write-back will overwrite it); a `dst` already
    /// written back keeps that value (the controller held the write-back until the operation
    /// ended). No cached copy is touched.
    pub fn in_cache_copy_done(&mut self, dst: u64, src: u64) {
        let cached = self
            .privs
            .iter()
            .any(|p| p.l1.is_dirty(dst) || p.l2.is_dirty(dst))
            || self.llc.as_ref().is_some_and(|l| l.is_dirty(dst));
        if let Some(sh) = self.shadow.as_mut() {
            if cached {
                let stale = sh.memory.get(&src).copied().unwrap_or(0);
                sh.memory.insert(dst, stale);
            }
        }
    }

    /// The other core holding `line` dirty, if any (at most one: single writer).
    fn dirty_owner(&self, c: usize, line: u64) -> Option<usize> {
        self.privs
            .iter()
            .enumerate()
            .find(|(k, p)| *k != c && (p.l1.is_dirty(line) || p.l2.is_dirty(line)))
            .map(|(k, _)| k)
    }

    fn others_hold(&self, c: usize, line: u64) -> bool {
        self.privs
            .iter()
            .enumerate()
            .any(|(k, p)| k != c && (p.l1.contains(line) || p.l2.contains(line)))
    }

    /// Invalidates `line` in every core's private caches but `c`'s (a write's invalidations).
    fn invalidate_others(&mut self, c: usize, line: u64) {
        if self.skip_invalidations {
            return;
        }
        for k in 0..self.privs.len() {
            if k == c {
                continue;
            }
            let p = &mut self.privs[k];
            let a = p.l1.invalidate(line);
            let b = p.l2.invalidate(line);
            if a.is_some() || b.is_some() {
                self.coherence.invalidations += 1;
            }
            if let Some(sh) = self.shadow.as_mut() {
                sh.forget(Holder::L1(k as u16), line);
                sh.forget(Holder::L2(k as u16), line);
            }
        }
    }

    /// Whether a guard holds the line back (its stall is counted by the guard).
    fn guarded(&mut self, addr: u64) -> bool {
        self.guards.iter_mut().any(|g| g.conflicts(addr))
    }

    /// A load (`write` false) or store-buffer write of core `c` at `addr`.
    pub fn access(
        &mut self,
        now: Ps,
        c: usize,
        addr: u64,
        write: bool,
        copy: bool,
        token: Token,
    ) -> Access {
        if !self.guards.is_empty() && self.guarded(addr) {
            return Access::Retry;
        }
        let line = addr / 64;
        let multi = self.privs.len() > 1;
        let p = &self.privs[c];
        let cyc = p.cycle_ps;
        // A miss that cannot get an MSHR is retried later and not counted now (the caches are
        // looked up for this only when every MSHR is taken).
        if p.mshrs.len() >= p.mshr_limit
            && !p.mshrs.iter().any(|m| m.0 == line)
            && !(p.l1.contains(line)
                || p.l2.contains(line)
                || self.llc.as_ref().is_some_and(|l| l.contains(line)))
        {
            return Access::Retry;
        }
        // A write to a line this core holds and others share invalidates their copies first (an
        // upgrade: one turn in the address/snoop phase).
        let mut upgrade = 0;
        if multi
            && write
            && (p.l1.contains(line) || p.l2.contains(line))
            && self.others_hold(c, line)
        {
            upgrade = self.ic.address_phase(now) - now;
            self.coherence.upgrades += 1;
            self.invalidate_others(c, line);
        }
        let p = &mut self.privs[c];
        if p.l1.access(line, write, copy) {
            if let Some(sh) = self.shadow.as_mut() {
                if write {
                    sh.new_version(Holder::L1(c as u16), line);
                } else {
                    sh.check_load(c, line);
                }
            }
            return Access::At(now + upgrade.max(p.l1.hit_cycles * cyc));
        }
        if p.l2.access(line, false, copy) {
            let wait = reserve_fill(&mut p.l2_fill_free, now, p.l2.fill_bytes_per_cycle, cyc);
            let lat = p.l2.hit_cycles * cyc + wait;
            self.fill_l1(now, c, line, write, copy);
            self.checked(c, line, write);
            return Access::At(now + upgrade.max(lat));
        }
        let mut lat = p.l2.hit_cycles;
        if multi {
            // A line dirty in another core's cache comes from there; a write miss's own snoop
            // (the read-for-ownership) invalidates clean copies elsewhere.
            if let Some(owner) = self.dirty_owner(c, line) {
                return self.cache_to_cache(now + lat * cyc, c, owner, line, write, copy);
            }
            if write && self.others_hold(c, line) {
                self.invalidate_others(c, line);
            }
        }
        if let Some(llc) = self.llc.as_mut() {
            lat += llc.hit_cycles;
            if llc.access(line, false, copy) {
                // The line crosses the last level's path into level 2, then level 2's into
                // level 1, each as soon as it is free.
                let p = &mut self.privs[c];
                let w1 = reserve_fill(&mut p.llc_fill_free, now, llc.fill_bytes_per_cycle, cyc);
                let w2 = reserve_fill(
                    &mut p.l2_fill_free,
                    now + w1,
                    p.l2.fill_bytes_per_cycle,
                    cyc,
                );
                let wait = w1 + w2;
                self.insert_l2(now, c, line, false, copy);
                if let Some(sh) = self.shadow.as_mut() {
                    sh.copy(Some(Holder::Llc), Holder::L2(c as u16), line);
                }
                self.fill_l1(now, c, line, write, copy);
                self.checked(c, line, write);
                return Access::At(now + lat * cyc + wait);
            }
        }
        let p = &mut self.privs[c];
        if let Some((_, m)) = p.mshrs.iter_mut().find(|m| m.0 == line) {
            m.waiters.push(token);
            m.write |= write;
            return Access::Pending;
        }
        let mut waiters = p.spare_waiters.pop().unwrap_or_default();
        waiters.push(token);
        p.mshrs.push((
            line,
            Mshr {
                waiters,
                write,
                copy,
            },
        ));
        let ch = self.channel_of(addr);
        let at = self.ic.request_arrives(now + lat * cyc, ch);
        self.send_on(
            at,
            addr,
            ch,
            MemOp::Read,
            false,
            ReqKind::Fill {
                line,
                core: c as u16,
            },
            copy,
        );
        Access::Pending
    }

    /// Core `c` misses on `line`, which `owner` holds dirty: the owner's cache supplies it after
    /// a snoop (one address-phase turn and a line on the data path). For a read the owner keeps
    /// a clean copy and memory is updated; for a write the owner's copy is invalidated.
    fn cache_to_cache(
        &mut self,
        now: Ps,
        c: usize,
        owner: usize,
        line: u64,
        write: bool,
        copy: bool,
    ) -> Access {
        self.coherence.cache_to_cache += 1;
        let snooped = self.ic.address_phase(now);
        let at = self.ic.fill_arrives(snooped, 0);
        let from = if self.privs[owner].l1.is_dirty(line) {
            Holder::L1(owner as u16)
        } else {
            Holder::L2(owner as u16)
        };
        if let Some(sh) = self.shadow.as_mut() {
            sh.copy(Some(from), Holder::L2(c as u16), line);
        }
        let o = &mut self.privs[owner];
        if write {
            let _ = o.l1.invalidate(line);
            let _ = o.l2.invalidate(line);
            self.coherence.invalidations += 1;
            if let Some(sh) = self.shadow.as_mut() {
                sh.forget(Holder::L1(owner as u16), line);
                sh.forget(Holder::L2(owner as u16), line);
            }
            // The requester now owns the only copy, dirty (M).
            self.insert_l2(now, c, line, true, copy);
        } else {
            // The owner's copy is cleaned: its data goes to memory too.
            let a = o.l1.flush(line);
            let b = o.l2.flush(line);
            if let Some(sh) = self.shadow.as_mut() {
                sh.write_memory(from, line);
                if a {
                    sh.copy(
                        Some(Holder::L1(owner as u16)),
                        Holder::L2(owner as u16),
                        line,
                    );
                }
            }
            self.refresh_llc(line);
            if a || b {
                let v = Victim {
                    line,
                    dirty: true,
                    by_copy: copy,
                };
                self.writeback(snooped, v, None);
            }
            self.insert_l2(now, c, line, false, copy);
        }
        self.fill_l1(now, c, line, write, copy);
        self.checked(c, line, write);
        Access::At(at)
    }

    /// With the value shadow on: a load of core `c` must see the last version written.
    fn checked(&mut self, c: usize, line: u64, write: bool) {
        if let Some(sh) = self.shadow.as_mut() {
            if !write {
                sh.check_load(c, line);
            }
        }
    }

    /// Memory got `line`'s newest value from a private cache: a last-level copy is
    /// updated with it (the write-back passes through the last level).
    fn refresh_llc(&mut self, line: u64) {
        if let (Some(sh), Some(llc)) = (self.shadow.as_mut(), self.llc.as_ref()) {
            if llc.contains(line) {
                sh.copy(None, Holder::Llc, line);
            }
        }
    }

    /// A store of core `c` that overwrites a whole line: present lines are written in place; a
    /// missing line is allocated dirty without reading memory.
    fn store_full_line(&mut self, now: Ps, c: usize, addr: u64, copy: bool) -> Access {
        if !self.guards.is_empty() && self.guarded(addr) {
            return Access::Retry;
        }
        let line = addr / 64;
        if self.privs[c].mshrs.iter().any(|m| m.0 == line) {
            // A fill is on its way: retry once it has arrived.
            return Access::Retry;
        }
        let mut upgrade = 0;
        if self.privs.len() > 1 && self.others_hold(c, line) {
            upgrade = self.ic.address_phase(now) - now;
            self.coherence.upgrades += 1;
            self.invalidate_others(c, line);
        }
        let p = &mut self.privs[c];
        let cyc = p.cycle_ps;
        if p.l1.access(line, true, copy) {
            if let Some(sh) = self.shadow.as_mut() {
                sh.new_version(Holder::L1(c as u16), line);
            }
            return Access::At(now + upgrade.max(p.l1.hit_cycles * cyc));
        }
        let lat = p.l2.hit_cycles * cyc;
        self.fill_l1(now, c, line, true, copy);
        Access::At(now + upgrade.max(lat))
    }

    /// A store-buffer write of core `c`; `whole`: a CPU copy overwriting the whole line.
    pub fn store(
        &mut self,
        now: Ps,
        c: usize,
        addr: u64,
        whole: bool,
        copy: bool,
        token: Token,
    ) -> Access {
        if whole && self.privs[c].skips_destination_fetch {
            return self.store_full_line(now, c, addr, copy);
        }
        self.access(now, c, addr, true, copy, token)
    }

    pub(crate) fn on_fill(&mut self, now: Ps, id: u32) {
        let Some(r) = self.reqs[id as usize].take() else {
            return;
        };
        self.free_reqs.push(id);
        let ReqKind::Fill { line, core } = r.kind else {
            return;
        };
        let c = core as usize;
        let Some(pos) = self.privs[c].mshrs.iter().position(|m| m.0 == line) else {
            return;
        };
        let (_, m) = self.privs[c].mshrs.swap_remove(pos);
        if self.privs.len() > 1 {
            self.settle_race(now, c, line, m.write);
        }
        if let Some(llc) = self.llc.as_mut() {
            let v = llc.insert(line, false, false);
            if let Some(sh) = self.shadow.as_mut() {
                sh.copy(None, Holder::Llc, line);
                if let Some(v) = v {
                    if v.dirty {
                        sh.write_memory(Holder::Llc, v.line);
                    }
                    sh.forget(Holder::Llc, v.line);
                }
            }
            if let Some(v) = v {
                self.writeback(now, v, None);
            }
        }
        self.insert_l2(now, c, line, false, m.copy);
        if let Some(sh) = self.shadow.as_mut() {
            if !self.privs[c].l2.is_dirty(line) {
                sh.copy(None, Holder::L2(c as u16), line);
            }
        }
        self.fill_l1(now, c, line, m.write, m.copy);
        self.checked(c, line, m.write);
        let p = &mut self.privs[c];
        let mut waiters = m.waiters;
        for t in waiters.drain(..) {
            p.wakeups.push((t, now));
        }
        p.spare_waiters.push(waiters);
        p.poke = true;
        self.woken = true;
    }

    /// A fill for core `c` arrives while other cores took the line meanwhile (their misses raced
    /// with this one): keep a single writer. A write fill invalidates every other copy (a racing
    /// dirty copy is written back first, then overwritten); a read fill cleans a dirty copy.
    fn settle_race(&mut self, now: Ps, c: usize, line: u64, write: bool) {
        if let Some(owner) = self.dirty_owner(c, line) {
            let o = &mut self.privs[owner];
            let a = o.l1.flush(line);
            let _ = o.l2.flush(line);
            if let Some(sh) = self.shadow.as_mut() {
                let from = if a {
                    Holder::L1(owner as u16)
                } else {
                    Holder::L2(owner as u16)
                };
                sh.write_memory(from, line);
                if a {
                    sh.copy(Some(from), Holder::L2(owner as u16), line);
                }
            }
            self.refresh_llc(line);
            let v = Victim {
                line,
                dirty: true,
                by_copy: false,
            };
            self.writeback(now, v, None);
        }
        if write && self.others_hold(c, line) {
            self.ic.address_phase(now);
            self.coherence.upgrades += 1;
            self.invalidate_others(c, line);
        }
    }

    /// Handles what the memory controllers finished.
    fn on_memory_done(&mut self, cycle: u64, id: u32, bulk: bool, resp: &mut dyn Responder) {
        let t = cycle * self.tck;
        if bulk {
            if let Some(pos) = self.bulk_owner.iter().position(|b| b.0 == id) {
                let (_, agent) = self.bulk_owner.swap_remove(pos);
                resp.respond(self, t, agent, Response::BulkDone { id });
            }
            return;
        }
        let Some(r) = self.reqs[id as usize] else {
            return;
        };
        let bytes = 64;
        self.traffic.platform_bytes += bytes;
        if r.copy {
            self.traffic.copy_bytes += bytes;
        }
        if let Some(a) = self.attribution.as_mut() {
            let k = a.bucket(r.addr);
            let c = &mut a.cores[k];
            if r.op == MemOp::Read {
                c.read_bytes += bytes;
            } else {
                c.write_bytes += bytes;
            }
        }
        match r.kind {
            ReqKind::Fill { .. } => {
                let at = self.ic.fill_arrives(t, r.channel);
                self.events.push(at, Ev::Fill(id));
            }
            ReqKind::Writeback { notify } => {
                self.release_req(id);
                if let Some((agent, tag)) = notify {
                    resp.respond(self, t, agent, Response::Flushed { tag });
                }
            }
            ReqKind::Agent { agent, tag } => {
                if r.op == MemOp::Read {
                    resp.respond(
                        self,
                        t,
                        agent,
                        Response::ReadDone {
                            req: id,
                            tag,
                            channel: r.channel,
                        },
                    );
                } else {
                    self.release_req(id);
                }
            }
        }
    }

    /// Runs the memory controllers at their cycle `mem_wake`.
    pub(crate) fn step_memory(&mut self, resp: &mut dyn Responder) {
        let cycle = self.mem_wake;
        self.mem_now = cycle;
        // Bulk operations whose cycle has come, in the order they were handed over.
        let mut i = 0;
        while i < self.pending_bulk.len() {
            if self.pending_bulk[i].0 <= cycle {
                let (at, op, id, agent) = self.pending_bulk.remove(i);
                if let Err(e) = self.submit_bulk(agent, op, id, at) {
                    self.fatal.get_or_insert(format!("offload {id}: {e}"));
                }
            } else {
                i += 1;
            }
        }
        let next = self.mem.step(cycle);
        let mut done = std::mem::take(&mut self.done_buf);
        done.extend(self.mem.drain());
        for c in done.drain(..) {
            self.on_memory_done(c.cycle, c.id, c.bulk, resp);
        }
        self.done_buf = done;
        // Requests refused for a full queue retry once commands issued.
        let mut retried = false;
        let mut waiting = false;
        for q in 0..self.mc_retry.len() {
            while let Some(&id) = self.mc_retry[q].front() {
                let Some(r) = self.reqs[id as usize] else {
                    self.mc_retry[q].pop_front();
                    continue;
                };
                if !self.mem.offer(r.addr, r.op, r.engine, id, cycle) {
                    waiting = true;
                    break;
                }
                self.mc_retry[q].pop_front();
                self.offered_lines += 1;
                retried = true;
                self.accepted(cycle * self.tck, r, resp);
            }
        }
        self.mem_wake = if retried { cycle + 1 } else { next };
        if self.mem_wake == u64::MAX && waiting {
            self.mem_wake = cycle + 1;
        }
        // Including those handed over while this step's completions were delivered.
        if let Some(at) = self.pending_bulk.iter().map(|p| p.0).min() {
            self.mem_wake = self.mem_wake.min(at);
        }
    }

    /// The time the memory controllers next need to run (`Ps::MAX`: not until offered work).
    pub(crate) fn mem_time(&self) -> Ps {
        if self.mem_wake == u64::MAX {
            Ps::MAX
        } else {
            self.mem_wake * self.tck
        }
    }

    /// Nothing in flight below the cores (agents report their own state).
    pub(crate) fn idle(&self) -> bool {
        self.events.is_empty()
            && self.mem.idle()
            && self.pending_bulk.is_empty()
            && self.mc_retry.iter().all(|q| q.is_empty())
            && self.held.is_empty()
    }

    /// Checks the single-writer/multiple-reader invariant for `line`: a line dirty in one core's
    /// private caches is in no other core's. Returns the offending cores if it does not hold.
    pub fn swmr_violation(&self, line: u64) -> Option<(usize, usize)> {
        let owner = self
            .privs
            .iter()
            .position(|p| p.l1.is_dirty(line) || p.l2.is_dirty(line))?;
        self.privs
            .iter()
            .enumerate()
            .find(|(k, p)| *k != owner && (p.l1.contains(line) || p.l2.contains(line)))
            .map(|(k, _)| (owner, k))
    }
}

#[cfg(test)]
mod tests {
    use super::reserve_fill;

    #[test]
    fn a_fill_path_spaces_lines_by_its_width_and_none_is_free() {
        // 32 bytes a cycle at 1,000 ps a cycle: a 64-byte line holds the path 2,000 ps.
        let mut free = 0;
        assert_eq!(reserve_fill(&mut free, 100, 32, 1000), 0);
        assert_eq!(free, 2100);
        // The next line, asked for at once, waits for the first; one asked for later does not.
        assert_eq!(reserve_fill(&mut free, 100, 32, 1000), 2000);
        assert_eq!(free, 4100);
        assert_eq!(reserve_fill(&mut free, 9000, 32, 1000), 0);
        assert_eq!(free, 11000);
        // 0: the path is not modelled, and its state does not move.
        assert_eq!(reserve_fill(&mut free, 0, 0, 1000), 0);
        assert_eq!(free, 11000);
    }
}
