//! The platform: the wiring of cores, agents and the memory system, and the run loop. A
//! [`Platform`] is built from its description ([`PlatformConfig`]): the cores (one, or the groups
//! of `[[cores]]`, each core with its own program and clock), the agents the copy mechanism needs
//! (built by name through `agents::registry`), and the [`MemorySystem`] they all talk to. The run
//! loop asks the event kernel for the earliest of the next event, the memory controllers' next
//! cycle and each core's next cycle, and jumps there, so idle time costs nothing. Nothing below
//! imports this file: the parts know only the memory system's interface. [`run`] runs a
//! workload to the end and returns [`PlatformStats`].
use crate::agents::registry;
use crate::agents::Agent;
use crate::config::platform::{PlatformConfig, AGENT_TAKES};
use crate::config::workload::{DstPolicy, Op, OpStream, Workload};
use crate::cpu::core::{CopyBy, Core};
use crate::iface::{token_context, Access, OffloadOp, Token, Uncore};
use crate::memory::memory_system::{AgentId, Ev, MemorySystem, Responder, Response};
use crate::memory::ring::{RingStep, Rings};
use crate::sim::error::PlatformError;
use crate::sim::run_guard::MIN_IDLE_INTERRUPTS;
use crate::sim::{Ps, RunGuard};
use crate::stats::{AgentStats, CacheStats, CopyLines, CoreStats, PlatformStats, WindowStats};
use movelab_dram::port::MemoryPort;

/// Operations of one interrupt handler, at most.
const MAX_HANDLER_OPS: usize = 1 << 16;

/// Simulated time without a retired instruction after which a run is reported as stalled.
const STALL_PS: Ps = 100_000_000_000;

/// The platform's agents, indexed by [`AgentId`]; the memory system calls them back through it.
pub struct Agents {
    list: Vec<Box<dyn Agent>>,
    /// Each agent's name, kind, the offloads it takes and from which core groups.
    names: Vec<AgentStats>,
}

impl Responder for Agents {
    fn respond(&mut self, sys: &mut MemorySystem, now: Ps, agent: AgentId, r: Response) {
        if let Some(a) = self.list.get_mut(agent as usize) {
            a.response(sys, now, r);
        }
    }
}

impl Agents {
    fn idle(&self) -> bool {
        self.list.iter().all(|a| a.idle())
    }
}

/// What one core sees below it: the memory system, the agent that takes its offloads, and
/// the rings.
struct Port<'a> {
    sys: &'a mut MemorySystem,
    agents: &'a mut Agents,
    rings: &'a mut Rings,
    core: usize,
    /// The hardware context running (its index in the platform's cores).
    context: usize,
    /// The agents that take this core's offloaded copies, zeroing and fills.
    routes: Routes,
    /// Interrupts the cores have raised (an `interrupt` operation), counted for the run guard.
    raised: &'a mut u64,
}

/// Interrupts the cores may raise themselves with no progress (no program operation fed, no
/// interrupt from a device) before a run stops as a loop that feeds itself (a handler that
/// interrupts its own core): four times a cluster's smallest bound per host
/// ([`MIN_IDLE_INTERRUPTS`]), so that in a cluster its watch, which also sees the frames a host
/// takes in, speaks first.
const SELF_FED_INTERRUPTS: u64 = 4 * MIN_IDLE_INTERRUPTS;

/// Per kind of offloaded operation (copy, zero, fill: [`TAKE_COPY`], ...), the agent that takes it.
type Routes = [Option<u16>; 3];
const TAKE_COPY: usize = 0;
/// Hardware contexts that can offload (an offload id holds the context in its top byte).
const MAX_OFFLOADING_CONTEXTS: usize = 256;
const TAKE_ZERO: usize = 1;
const TAKE_FILL: usize = 2;

impl Uncore for Port<'_> {
    fn load(&mut self, now: Ps, addr: u64, copy: bool, token: Token) -> Access {
        self.sys.access(now, self.core, addr, false, copy, token)
    }
    fn store(&mut self, now: Ps, addr: u64, whole: bool, copy: bool, token: Token) -> Access {
        self.sys.store(now, self.core, addr, whole, copy, token)
    }
    fn offload(&mut self, now: Ps, id: u32, op: OffloadOp, seq: u64) -> Access {
        // Offload ids are numbered per hardware context: the agent sees them unique in the
        // platform (a multithreaded core's contexts share its caches, not their ids).
        let id = (self.context as u32) << 24 | (id & 0x00ff_ffff);
        let t = match (op.src, op.value) {
            (Some(_), _) => TAKE_COPY,
            (None, 0) => TAKE_ZERO,
            _ => TAKE_FILL,
        };
        match self.routes[t].and_then(|a| self.agents.list.get_mut(a as usize)) {
            Some(a) => {
                // The oracle of the agent's copy (value shadow on): what it must deliver.
                self.sys.expect_offload(&op);
                a.offload(self.sys, now, self.core, id, op, seq)
            }
            // No agent takes copies (the platform never offloads then).
            None => Access::At(now + self.sys.cycle_ps(self.core)),
        }
    }
    fn uncached(&mut self, now: Ps, addr: u64, write: bool) -> Access {
        // A device's registers go to the device; everything else costs the fixed latency.
        if let Some(a) = self.sys.mmio_owner(addr) {
            if let Some(agent) = self.agents.list.get_mut(a as usize) {
                return agent.mmio(self.sys, now, self.core, addr, write);
            }
        }
        self.sys.uncached(now)
    }
    fn ring_wait(&mut self, now: Ps, ring: u16, push: bool, addr: u64, seq: u64) -> Access {
        self.rings
            .wait(self.sys, now, self.core, RingStep { ring, push, addr }, seq)
    }
    fn ring_commit(&mut self, now: Ps, ring: u16, push: bool, addr: u64, seq: u64) -> Access {
        self.rings
            .commit(self.sys, now, self.core, RingStep { ring, push, addr }, seq)
    }
    fn interrupt(&mut self, now: Ps, target: u32) -> Access {
        *self.raised += 1;
        self.sys.raise_interrupt(now, target as usize, 0);
        Access::At(now + self.sys.cycle_ps(self.core))
    }
}

/// One core of the platform and where its program lives.
pub struct CoreSlot {
    pub core: Core,
    /// Its group in `[[cores]]`.
    pub group: usize,
    /// Added to every address of its program.
    pub offset: u64,
    /// The physical core (and private caches) it runs on.
    pub engine: usize,
    /// When it next needs to run.
    next: Ps,
    /// When its program finished (every instruction retired, every store written).
    pub done_at: Option<Ps>,
    /// When it retired its warm-up and then its target of program instructions
    /// ([`Platform::set_work_targets`]).
    pub warm_at: Option<Ps>,
    pub target_at: Option<Ps>,
    /// Interrupts that came while a handler ran (masked until its return retires); each is
    /// taken in turn after it (for a handler run per received frame, at most one is held).
    held_irqs: u32,
    /// Received frames its interrupts have announced, and those its handler has run for (a
    /// handler run per received frame, the workload's `handler_per_frame`).
    rx_announced: u64,
    rx_handled: u64,
    /// Whether the run loop must look at its front end (feed it, see whether it drained): set
    /// when it ticked or took an interrupt, the only things that change either. Its front end
    /// is otherwise as the last look left it: wanting no operation, and `drained` as noted.
    look: bool,
    drained: bool,
    /// Its own L1 and L2 misses, on a physical core whose caches several hardware contexts share
    /// (the misses its accesses caused: counted around each of its ticks).
    own_misses: (u64, u64),
}

/// A physical core: its hardware contexts (one, or a multithreaded core's) and which runs.
struct Engine {
    /// Its contexts' indices in `Platform::cores`.
    slots: Vec<usize>,
    /// The running context (position in `slots`).
    active: usize,
    /// The cost of swapping to another context.
    switch_ps: Ps,
    switches: u64,
}

/// A platform ready to run workloads.
pub struct Platform {
    pub cfg: PlatformConfig,
    pub cores: Vec<CoreSlot>,
    /// The physical cores: each has private caches and runs one context at a time.
    engines: Vec<Engine>,
    pub sys: MemorySystem,
    agents: Agents,
    rings: Rings,
    /// Per core group: the agent that takes its offloaded copies, zeroing and fills.
    routes: Vec<Routes>,
    now: Ps,
    ran: bool,
    /// Program instructions ([`crate::cpu::core::CoreCounters::work_instructions`]) each core is to
    /// retire after its warm-up; empty: every program runs to its end.
    targets: Vec<u64>,
    warmup: u64,
    /// Program instructions of each core's program run through its caches functionally, without
    /// timing, before the timed run ([`Platform::set_functional_warming`]); 0: none.
    functional_warming: u64,
    /// The system's counters when every core had finished its warm-up.
    window_start: Option<WindowMark>,
    /// Agents whose Ethernet port is attached to a link ([`Platform::attach_port`]).
    ports: Vec<usize>,
}

/// A run in progress ([`Platform::begin`]): the programs, where each core is in its program, and
/// the loop's guards.
pub struct Run<'p> {
    programs: &'p [Workload],
    streams: Vec<OpStream<'p>>,
    /// Each program's ring names, as the platform's ring indices.
    ring_maps: Vec<Vec<u16>>,
    handlers: Vec<Option<Workload>>,
    /// Each program's poll-loop turn (`poll`), taken for an interrupt held while a handler ran.
    polls: Vec<Option<Workload>>,
    start: Ps,
    n_ops: u64,
    /// Loop turns at one time without progress, and that time.
    guard: u64,
    last_now: Ps,
    run_guard: RunGuard,
    /// Instructions retired when last seen moving, and when.
    watch: (u64, Ps),
    /// Wake-ups swapped out of the memory system (kept, so none is allocated per wake-up).
    wake_buf: Vec<(Token, Ps)>,
    /// Interrupts the cores raised themselves (`interrupt` operations, in a program or a
    /// handler): an interrupt so raised is work, not progress, for the run guard's watch.
    raised: u64,
}

impl Run<'_> {
    /// Operations fed to the cores so far.
    pub fn ops(&self) -> u64 {
        self.n_ops
    }
}

/// Where [`Platform::advance`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Every program is done and nothing is in flight (or every core reached its target).
    Idle,
    /// The next thing to do is at this time: past the horizon, or a port has frames to hand on.
    At(Ps),
}

/// The counters a measurement window subtracts (see [`Platform::set_work_targets`]).
#[derive(Debug, Clone, Copy)]
struct WindowMark {
    at: Ps,
    work: u64,
    channel_bytes: u64,
    copy_bytes: u64,
    bulk_bytes: u64,
    energy_nj: f64,
    /// Dirty lines in the caches (all, and those a copy or initialisation dirtied): write-backs
    /// owed to memory.
    dirty: (u64, u64),
}

fn shift(op: Op, off: u64) -> Op {
    if off == 0 {
        return op;
    }
    match op {
        Op::Compute {
            n,
            loads,
            stores,
            region,
        } => Op::Compute {
            n,
            loads,
            stores,
            region: region.map(|(b, s)| (b.wrapping_add(off), s)),
        },
        Op::Load { addr, chase } => Op::Load {
            addr: addr.wrapping_add(off),
            chase,
        },
        Op::Store(a) => Op::Store(a.wrapping_add(off)),
        Op::Copy {
            src,
            dst,
            bytes,
            policy,
        } => Op::Copy {
            src: src.wrapping_add(off),
            dst: dst.wrapping_add(off),
            bytes,
            policy,
        },
        Op::Init { dst, bytes, value } => Op::Init {
            dst: dst.wrapping_add(off),
            bytes,
            value,
        },
        Op::Uncached { addr, write } => Op::Uncached {
            addr: addr.wrapping_add(off),
            write,
        },
        // Rings and interrupts are shared by the cores: their addresses are the platform's.
        other => other,
    }
}

impl Platform {
    pub fn new(cfg: &PlatformConfig) -> Result<Platform, PlatformError> {
        cfg.validate("platform")?;
        let list = cfg.core_list("platform")?;
        let confs: Vec<_> = list.iter().map(|(c, _)| c.clone()).collect();
        let mut sys = MemorySystem::new(cfg, &confs)?;
        // The agents (`[copy]`'s mechanism, `[io]`'s device, `[[agents]]`), each built by its
        // kind from the platform as it sees it, and the route of each core group's offloads.
        let plan = cfg.agent_plan("platform")?;
        let mut agents = Agents {
            list: Vec::new(),
            names: Vec::new(),
        };
        let mut routes = vec![[None; 3]; cfg.cores.len().max(1)];
        for (id, a) in plan.iter().enumerate() {
            agents
                .list
                .push(registry::build(a.kind, id as AgentId, &a.cfg, &mut sys)?);
            agents.names.push(AgentStats {
                name: a.name.clone(),
                kind: a.kind.into(),
                takes: (0..3)
                    .filter(|&t| a.takes[t])
                    .map(|t| AGENT_TAKES[t].to_string())
                    .collect(),
                groups: a.groups.clone(),
                ..AgentStats::default()
            });
            for (g, r) in routes.iter_mut().enumerate() {
                if a.groups.is_empty() || a.groups.contains(&(g as u32)) {
                    for (slot, &takes) in r.iter_mut().zip(&a.takes) {
                        if takes {
                            *slot = Some(id as u16);
                        }
                    }
                }
            }
        }
        let mut in_group = vec![0u64; cfg.cores.len().max(1)];
        let mut cores = Vec::new();
        let mut engines = Vec::new();
        for (e, (c, g)) in list.iter().enumerate() {
            let threads = if c.kind == "multithreaded" {
                c.threads.max(1)
            } else {
                1
            };
            let mut slots = Vec::new();
            for t in 0..threads {
                let k = in_group[*g];
                in_group[*g] += 1;
                let offset = cfg
                    .cores
                    .get(*g)
                    .map_or(0, |gr| gr.offset.wrapping_add(k.wrapping_mul(gr.stride)));
                let mut core = Core::new(c, 0x5eed + cores.len() as u64);
                core.set_context(t as u8);
                if threads > 1 {
                    core.share_engine();
                }
                slots.push(cores.len());
                cores.push(CoreSlot {
                    core,
                    group: *g,
                    offset,
                    engine: e,
                    // Only a multithreaded core's first context starts running.
                    next: if t == 0 { 0 } else { Ps::MAX },
                    done_at: None,
                    held_irqs: 0,
                    rx_announced: 0,
                    rx_handled: 0,
                    look: true,
                    drained: false,
                    own_misses: (0, 0),
                    warm_at: None,
                    target_at: None,
                });
            }
            engines.push(Engine {
                slots,
                active: 0,
                switch_ps: Ps::from(c.switch_cycles) * cores[cores.len() - 1].core.cycle_ps,
                switches: 0,
            });
        }
        sys.interrupt_targets = cores.len();
        if cores.len() > MAX_OFFLOADING_CONTEXTS && routes.iter().flatten().any(Option::is_some) {
            return Err(PlatformError::config(
                "platform",
                "cores",
                format!(
                    "{} hardware contexts: at most {MAX_OFFLOADING_CONTEXTS} when an agent takes offloads",
                    cores.len()
                ),
            ));
        }
        Ok(Platform {
            cfg: cfg.clone(),
            cores,
            engines,
            sys,
            agents,
            rings: Rings::new(&cfg.rings),
            routes,
            now: 0,
            ran: false,
            targets: Vec::new(),
            warmup: 0,
            functional_warming: 0,
            window_start: None,
            ports: Vec::new(),
        })
    }

    /// Attaches the Ethernet port of agent `name` (empty: the first agent with a free port) to a
    /// link: the frames its MAC sends are then
    /// handed on ([`Platform::take_frames`]) instead of going nowhere. Returns the agent's index
    /// and the port's rate and its MAC's transmit and receive latencies.
    pub fn attach_port(
        &mut self,
        name: &str,
    ) -> Result<(usize, crate::agents::Port), PlatformError> {
        let src = self.cfg.name.clone();
        if name.is_empty() {
            // The first agent with a port not yet on a link.
            for i in 0..self.agents.list.len() {
                if self.ports.contains(&i) {
                    continue;
                }
                if let Ok(port) = self.agents.list[i].attach_port() {
                    self.ports.push(i);
                    return Ok((i, port));
                }
            }
            return Err(PlatformError::config(
                &src,
                "agents",
                "no agent with a free Ethernet port (a NIC or an iDMA without loopback)",
            ));
        }
        let Some(i) = self.agents.names.iter().position(|n| n.name == name) else {
            let names: Vec<&str> = self.agents.names.iter().map(|n| n.name.as_str()).collect();
            return Err(PlatformError::config(
                &src,
                "agents",
                format!(
                    "no agent named '{name}' (the platform has: {})",
                    names.join(", ")
                ),
            ));
        };
        if self.ports.contains(&i) {
            return Err(PlatformError::config(
                &src,
                "agents",
                format!("agent '{name}''s port is already on a link"),
            ));
        }
        let port = self.agents.list[i]
            .attach_port()
            .map_err(|e| PlatformError::config(&src, format!("agent '{name}'"), e))?;
        self.ports.push(i);
        Ok((i, port))
    }

    /// The frames agent `agent`'s port has sent since last asked, each with the time its last
    /// bit left the MAC.
    pub fn take_frames(&mut self, agent: usize, out: &mut Vec<(Ps, Vec<u8>)>) {
        if let Some(a) = self.agents.list.get_mut(agent) {
            a.take_frames(out);
        }
    }

    /// A frame from a link reaches agent `agent`'s port at `at` (its last bit in).
    pub fn frame_in(&mut self, agent: usize, at: Ps, frame: Vec<u8>) {
        if let Some(a) = self.agents.list.get_mut(agent) {
            a.frame_in(&mut self.sys, at, frame);
        }
    }

    /// Interrupts its cores have taken so far (every handler run, poll turns included).
    pub fn interrupts_taken(&self) -> u64 {
        self.cores.iter().map(|c| c.core.counters.interrupts).sum()
    }

    /// Interrupts its cores hold now: raised while a handler ran, each to be taken after it.
    pub fn interrupts_held(&self) -> u64 {
        self.cores.iter().map(|c| u64::from(c.held_irqs)).sum()
    }

    /// The time the platform has run to.
    pub fn now(&self) -> Ps {
        self.now
    }

    /// The memory controllers (e.g. to attach a command log).
    pub fn mem_mut(&mut self) -> &mut MemoryPort {
        self.sys.mem_mut()
    }

    /// Runs each core (context) for `warmup` program instructions and then `targets[i]` more
    /// (a copy or initialisation counting as one instruction, whatever mechanism runs it),
    /// instead of to the end of its program. A core past its target keeps running its program,
    /// so the others still compete with it (the multi-programmed method of RowClone section
    /// 7.4); the run stops once every core reached its target (or finished its program). Each
    /// core's statistics give the time and cycles from its warm-up to its target, and
    /// [`PlatformStats::window`] the system's traffic, energy and instructions from the moment
    /// every core was warm to the end (the caches then hold a steady population of dirty lines,
    /// so a mechanism's write-backs are not left uncounted in them). On several cores that each
    /// start their own memory region, the DRAM traffic and energy are also counted per core
    /// (`MemorySystem::set_owners`) and each core's own window, from its warm-up to its own
    /// target, is in its [`CoreStats::window`].
    pub fn set_work_targets(
        &mut self,
        warmup: u64,
        targets: Vec<u64>,
    ) -> Result<(), PlatformError> {
        if targets.len() != self.cores.len() || targets.contains(&0) {
            return Err(PlatformError::config(
                "platform",
                "(targets)",
                format!(
                    "{} instruction targets for {} cores (each must be positive)",
                    targets.len(),
                    self.cores.len()
                ),
            ));
        }
        self.targets = targets;
        self.warmup = warmup;
        // Cores that each start their own memory region get their DRAM traffic and energy
        // counted per core (`MemorySystem::set_owners`); one core's are the system's.
        let bases: Vec<u64> = self.cores.iter().map(|c| c.offset).collect();
        let mut distinct = bases.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if bases.len() > 1 && distinct.len() == bases.len() {
            self.sys
                .set_owners(&bases)
                .map_err(|e| PlatformError::config("platform", "cores", e))?;
            // Its samples are paced by the run loop's turns: keep their count as it was.
            for c in &mut self.cores {
                c.core.keep_polling();
            }
        }
        Ok(())
    }

    /// Functional warming (as in sampled simulation): before the timed run, each core's program
    /// runs its first `instructions` program instructions through the core's private caches
    /// without timing, so that the timed run starts with the caches in the state a long run
    /// leaves them in (full, with the dirty lines its program leaves) instead of cold. A 1 MB
    /// cache takes hundreds of thousands to millions of instructions to fill, far more than a
    /// timed warm-up can afford; without this no dirty line is ever evicted in a short run, and
    /// the write-backs that a steady state sends to memory never compete with anything.
    ///
    /// What each operation leaves in the caches: a load its line (clean), a store its line dirty
    /// (the hot-data accesses of compute instructions are left to the timed warm-up: they stay in
    /// the L1); a copy or an initialisation the core runs, the source lines clean and the
    /// destination lines dirty; one the memory controller runs (`rowclone`, `rowclone-zi`,
    /// `mc-dma`), the source lines written back (clean) and the destination lines dropped, except
    /// `rowclone-zi`'s zeroed lines, inserted clean. Victims leave silently: their write-backs
    /// happened before the timed run. The program then goes on from where warming stopped; its
    /// warm-up and targets ([`Platform::set_work_targets`]) count from there.
    pub fn set_functional_warming(&mut self, instructions: u64) {
        self.functional_warming = instructions;
    }

    /// Runs core `i`'s next `instructions` program instructions from `stream` through its
    /// private caches (see [`Platform::set_functional_warming`]), setting its `@dst` as it goes.
    fn warm_functionally(&mut self, i: usize, stream: &mut OpStream<'_>, instructions: u64) {
        let off = self.cores[i].offset;
        let e = self.cores[i].engine;
        let zero_insert = self.cfg.copy.mechanism == "rowclone-zi";
        let mut done = 0u64;
        while done < instructions {
            let Some(op) = stream.next() else { break };
            let op = shift(op, off);
            let lines = |a: u64, bytes: u64| (a / 64)..(a + bytes).div_ceil(64);
            match op {
                Op::Compute { n, .. } => {
                    done += n;
                    continue;
                }
                Op::Load { addr, .. } => self.warm_line(e, addr / 64, false, false),
                Op::Store(addr) => self.warm_line(e, addr / 64, true, false),
                Op::Copy {
                    src,
                    dst,
                    bytes,
                    policy,
                } => {
                    let d = self.place(src, dst, policy);
                    stream.last_dst = d.wrapping_sub(off);
                    let by = self.copy_by(i, &op);
                    // Dirty source lines the in-memory mechanism copies inside the cache
                    // (`copy.dirty_source`, whole lines sharing their offset): their
                    // destination lines, put in dirty after the destination's invalidation.
                    let in_cache = by != CopyBy::Cpu
                        && self.cfg.copy.copies_dirty_source_in_cache()
                        && src % 64 == d % 64;
                    let whole_dst = d.div_ceil(64)..(d + bytes) / 64;
                    let mut copied = Vec::new();
                    for l in lines(src, bytes) {
                        if by == CopyBy::Cpu {
                            self.warm_line(e, l, false, false);
                            continue;
                        }
                        let dl = (l * 64 + d).wrapping_sub(src) / 64;
                        if in_cache && whole_dst.contains(&dl) && self.sys.privs[e].l2.is_dirty(l) {
                            copied.push(dl);
                        } else if let Some(w) = self.sys.privs[e].l2.invalidate(l) {
                            // Written back by the coherence flush, still cached clean.
                            let _ = self.sys.privs[e].l2.insert(w.line, false, false);
                        }
                    }
                    for l in lines(d, bytes) {
                        if by == CopyBy::Cpu {
                            self.warm_line(e, l, true, true);
                        } else {
                            let _ = self.sys.privs[e].l2.invalidate(l);
                        }
                    }
                    for dl in copied {
                        self.warm_line(e, dl, true, true);
                    }
                }
                Op::Init { dst, bytes, value } => {
                    stream.last_dst = dst.wrapping_sub(off);
                    let by = self.copy_by(i, &op);
                    for l in lines(dst, bytes) {
                        if by == CopyBy::Cpu {
                            self.warm_line(e, l, true, true);
                        } else {
                            let _ = self.sys.privs[e].l2.invalidate(l);
                            if zero_insert && value == 0 {
                                self.warm_line(e, l, false, false);
                            }
                        }
                    }
                }
                // Other operations (uncached accesses, ring work) leave the caches alone.
                _ => {}
            }
            done += 1;
        }
    }

    /// Puts `line` into physical core `e`'s L2 (dirty if `dirty`); a present line is refreshed
    /// (and made dirty if `dirty`). Victims leave without a trace.
    fn warm_line(&mut self, e: usize, line: u64, dirty: bool, by_copy: bool) {
        let _ = self.sys.privs[e].l2.insert(line, dirty, by_copy);
    }

    /// Copies the cache contents of `other` into this platform (a warm start: e.g. the state a
    /// program's earlier phase left, simulated once and reused). Cores beyond `other`'s keep
    /// cold caches.
    pub fn warm_caches_from(&mut self, other: &Platform) {
        for (p, o) in self.sys.privs.iter_mut().zip(&other.sys.privs) {
            p.l1 = o.l1.clone();
            p.l2 = o.l2.clone();
        }
        self.sys.llc = other.sys.llc.clone();
    }

    /// How core `i` runs a workload operation: offloaded when an agent takes that kind of
    /// operation from the core's group, else on the core.
    fn copy_by(&self, i: usize, op: &Op) -> CopyBy {
        let t = match op {
            Op::Copy { .. } => TAKE_COPY,
            Op::Init { value: 0, .. } => TAKE_ZERO,
            Op::Init { .. } => TAKE_FILL,
            _ => return CopyBy::Cpu,
        };
        match self.routes[self.cores[i].group.min(self.routes.len() - 1)][t] {
            Some(_) => CopyBy::Offload,
            None => CopyBy::Cpu,
        }
    }

    /// Where the allocator puts a copy's destination page.
    fn place(&self, src: u64, dst: u64, policy: DstPolicy) -> u64 {
        if policy == DstPolicy::AsGiven {
            return dst;
        }
        let spec = self.sys.mem().spec();
        let org = &spec.org;
        let row_bytes = org.row_bytes();
        let mut loc = self.sys.locate(src);
        match policy {
            DstPolicy::SameSubarray => {
                let r = org.subarray_rows.max(4);
                let base = loc.row - loc.row % r;
                let off = loc.row % r;
                let mut cand = (off + r / 2) % r;
                while cand == off || cand >= r - 2 {
                    cand = (cand + 1) % r;
                }
                loc.row = base + cand;
            }
            DstPolicy::OtherBank => {
                let banks = org.banks_per_rank() / org.bank_groups.max(1);
                loc.bank = (loc.bank + 1) % banks.max(1);
            }
            DstPolicy::AsGiven => {}
        }
        let page = self.sys.mem().address_of(&loc);
        page - page % row_bytes.min(self.cfg.copy.page_bytes)
            + src % row_bytes.min(self.cfg.copy.page_bytes)
    }

    /// A multithreaded core whose running context waits for memory (or has finished) swaps to
    /// the next context that can run, paying the swap cost; the others sleep.
    #[inline]
    fn maybe_switch(&mut self, e: usize, now: Ps) {
        let eng = &self.engines[e];
        if eng.slots.len() < 2 {
            return;
        }
        let cur = eng.slots[eng.active];
        let stuck = |c: &CoreSlot| c.core.drained() || c.core.waiting_on_memory();
        if !stuck(&self.cores[cur]) {
            return;
        }
        let n = eng.slots.len();
        let Some(pos) = (1..n)
            .map(|d| (eng.active + d) % n)
            .find(|&p| !stuck(&self.cores[eng.slots[p]]))
        else {
            return;
        };
        let next = eng.slots[pos];
        let switch = eng.switch_ps;
        let cy = self.cores[next].core.cycle_ps;
        let eng = &mut self.engines[e];
        eng.active = pos;
        eng.switches += 1;
        self.cores[cur].next = Ps::MAX;
        let at = now.div_ceil(cy) * cy + switch;
        self.cores[next].next = at.max(now + cy);
    }

    /// Hands core `i` one operation of its program: addresses moved by the core's offset, a
    /// copy's destination placed, ring operations expanded. Returns the new `@dst`.
    fn feed(&mut self, i: usize, op: Op, last_dst: u64, ring_map: &[u16]) -> u64 {
        let off = self.cores[i].offset;
        let mut op = shift(op, off);
        let mut dst = last_dst;
        match op {
            Op::Copy {
                src,
                dst: d0,
                bytes,
                policy,
            } => {
                let d = self.place(src, d0, policy);
                dst = d.wrapping_sub(off);
                op = Op::Copy {
                    src,
                    dst: d,
                    bytes,
                    policy,
                };
            }
            Op::Init { dst: d, .. } => dst = d.wrapping_sub(off),
            Op::RingPush { ring } | Op::RingPop { ring } => {
                let push = matches!(op, Op::RingPush { .. });
                let r = ring_map.get(ring as usize).copied().unwrap_or(0);
                let mut ops = Vec::new();
                self.rings.expand(r, push, &mut ops);
                for o in ops {
                    self.cores[i].core.push_op(&o, CopyBy::Cpu);
                }
                return dst;
            }
            _ => {}
        }
        let by = self.copy_by(i, &op);
        self.cores[i].core.push_op(&op, by);
        dst
    }

    /// Core `c` takes an interrupt: entry cost, its program's handler, return (`poll`: a poll
    /// loop's next turn, without the entry and return costs).
    fn take_interrupt(
        &mut self,
        c: usize,
        handler: Option<&Workload>,
        ring_map: &[u16],
        poll: bool,
    ) {
        let ic = self.cfg.interrupts.clone();
        let taken = self.cores[c].core.counters.interrupts;
        let (entry, exit) = if poll {
            (0, 0)
        } else {
            (ic.entry_cycles, ic.exit_cycles)
        };
        self.cores[c].core.begin_interrupt(entry);
        if let Some(h) = handler {
            // The walk positions the handler runs at: once per frame announced and not yet
            // handled (walking by frames handled), or once for this interrupt.
            let runs = if h.spec.handler_per_frame {
                let slot = &mut self.cores[c];
                let frames = slot.rx_handled..slot.rx_announced;
                slot.rx_handled = slot.rx_announced;
                frames
            } else {
                taken..taken + 1
            };
            for k in runs {
                let mut last = 0;
                for op in h.handler_ops(k).take(MAX_HANDLER_OPS) {
                    last = self.feed(c, op, last, ring_map);
                }
            }
        }
        self.cores[c].core.end_interrupt(exit);
        self.cores[c].look = true;
    }

    /// Runs `workload` to the end (on every core whose group names no workload of its own).
    pub fn run(&mut self, workload: &Workload) -> Result<PlatformStats, PlatformError> {
        self.run_with_progress(workload, &mut |_| {})
    }

    /// The workload each core runs: its group's, or `default`.
    fn workloads(&self, default: &Workload) -> Result<Vec<Workload>, PlatformError> {
        let mut out = Vec::new();
        for (g, spec) in self.cfg.cores.iter().enumerate() {
            if spec.workload.is_empty() {
                out.push(default.clone());
            } else {
                out.push(
                    Workload::load(&spec.workload, &spec.params)
                        .and_then(|w| w.check_work().map(|()| w))
                        .map_err(|e| {
                            PlatformError::config(
                                "platform",
                                format!("cores[{g}].workload"),
                                e.to_string(),
                            )
                        })?,
                );
            }
        }
        if out.is_empty() {
            out.push(default.clone());
        }
        Ok(out)
    }

    /// The operations a run of `programs` (one per core group, as [`Platform::run_programs`]
    /// takes them) feeds to the cores in all: what its `progress` counts towards (operations a
    /// functional warm-up takes first are not among those counted), saturating at `u64::MAX`;
    /// 0 for no program.
    pub fn planned_ops(&self, programs: &[Workload]) -> u64 {
        let Some(last) = programs.len().checked_sub(1) else {
            return 0;
        };
        self.cores.iter().fold(0u64, |n, c| {
            n.saturating_add(programs[c.group.min(last)].op_count())
        })
    }

    /// Runs `workload`, calling `progress` with the number of operations done now and then.
    pub fn run_with_progress(
        &mut self,
        workload: &Workload,
        progress: &mut dyn FnMut(u64),
    ) -> Result<PlatformStats, PlatformError> {
        let programs = self.workloads(workload)?;
        self.run_programs(programs, progress)
    }

    /// Runs one program per core group (`programs[g]` on the cores of `[[cores]]` group `g`; one
    /// program for a single-core platform), calling `progress` now and then.
    pub fn run_programs(
        &mut self,
        programs: Vec<Workload>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<PlatformStats, PlatformError> {
        let mut run = self.begin(&programs)?;
        while let Step::At(_) = self.advance(&mut run, progress, Ps::MAX)? {}
        Ok(self.finish(run, progress))
    }

    /// Starts a run of one program per core group (see [`Platform::run_programs`]): the loop is
    /// then driven by [`Platform::advance`] and closed by [`Platform::finish`], so that several
    /// platforms joined by links can run side by side in one simulated time.
    pub fn begin<'p>(&mut self, programs: &'p [Workload]) -> Result<Run<'p>, PlatformError> {
        let groups = self.cfg.cores.len().max(1);
        if programs.len() != groups {
            return Err(PlatformError::config(
                "platform",
                "cores",
                format!("{} programs for {groups} core groups", programs.len()),
            ));
        }
        if self.ran {
            return Err(PlatformError::config(
                "platform",
                "(run)",
                "a platform runs one workload; make a new one (Platform::warm_caches_from carries the cache contents over)",
            ));
        }
        // A region or a move larger than the simulated memory, or more work than a run may take,
        // is a mistake in a parameter (and would run for days), refused before the run: here, so
        // that every run (one platform, a pair, a cluster, an experiment) is bounded. A run with
        // work targets (`set_work_targets`) stops at them: its programs are endless on purpose.
        let memory = self.sys.mem().spec().org.capacity_bytes();
        for w in programs {
            w.check_fits(memory)?;
            if self.targets.is_empty() {
                w.check_work()?;
            }
        }
        self.ran = true;
        let start = self.now;
        let mut streams: Vec<OpStream<'p>> = self
            .cores
            .iter()
            .map(|c| programs[c.group.min(programs.len() - 1)].ops())
            .collect();
        if self.functional_warming > 0 {
            for (i, st) in streams.iter_mut().enumerate() {
                self.warm_functionally(i, st, self.functional_warming);
            }
        }
        for c in self.cores.iter_mut() {
            if c.next != Ps::MAX {
                c.next = start;
            }
        }
        // Each program's ring names, as the platform's ring indices.
        let mut ring_maps = Vec::new();
        for w in programs {
            let mut m = Vec::new();
            for name in &w.rings {
                m.push(self.rings.index(name).ok_or_else(|| {
                    PlatformError::workload(
                        &w.source,
                        "ops",
                        format!(
                            "ring '{name}' is not one of the platform's rings ({})",
                            self.rings.names().join(", ")
                        ),
                    )
                })?);
            }
            ring_maps.push(m);
        }
        let handlers: Vec<Option<Workload>> = programs.iter().map(|w| w.handler()).collect();
        let polls: Vec<Option<Workload>> = programs.iter().map(|w| w.poll_handler()).collect();
        Ok(Run {
            programs,
            streams,
            ring_maps,
            handlers,
            polls,
            start,
            n_ops: 0,
            guard: 0,
            last_now: start,
            run_guard: RunGuard::new("the platform run").with_idle_work(SELF_FED_INTERRUPTS),
            // Progress watch: time may advance (DRAM refresh) while nothing retires (a model bug).
            watch: (0, start),
            wake_buf: Vec::new(),
            raised: 0,
        })
    }

    /// Runs `run` until everything is done ([`Step::Idle`]), or until the next thing to do lies
    /// past `horizon` or a port has a frame to hand on ([`Step::At`], the time of the next thing
    /// to do; nothing at or after it has happened). Called again, it goes on from there.
    pub fn advance(
        &mut self,
        run: &mut Run<'_>,
        progress: &mut dyn FnMut(u64),
        horizon: Ps,
    ) -> Result<Step, PlatformError> {
        let programs = run.programs;
        loop {
            run.run_guard.step()?;
            if run.run_guard.steps().is_multiple_of(1 << 16) {
                // A handler that interrupts its own core (or two that interrupt each other)
                // retires instructions and moves time for ever: progress is a program operation
                // fed or an interrupt from a device (taken less those the cores raised), work an
                // interrupt a core raised.
                let taken = self.interrupts_taken();
                run.run_guard.watch(
                    0,
                    run.n_ops + taken.saturating_sub(run.raised),
                    run.raised,
                    0,
                )?;
                let retired: u64 = self
                    .cores
                    .iter()
                    .map(|c| c.core.counters.instructions)
                    .sum();
                if retired != run.watch.0 {
                    run.watch = (retired, self.now);
                } else if self.now - run.watch.1 > STALL_PS {
                    let states: Vec<String> = self
                        .cores
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            format!(
                                "core {i}: {}, {}",
                                c.core.state(),
                                self.sys.private_state(c.engine)
                            )
                        })
                        .collect();
                    let busy: Vec<&str> = self
                        .agents
                        .list
                        .iter()
                        .zip(&self.agents.names)
                        .filter(|(a, _)| !a.idle())
                        .map(|(_, n)| n.name.as_str())
                        .collect();
                    let busy = if busy.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "; agents still working: {} (e.g. a NIC holding received frames \
                             with no RX buffer posted)",
                            busy.join(", ")
                        )
                    };
                    return Err(PlatformError::Stalled(format!(
                        "nothing retired from {} ns to {} ns; {}{busy}",
                        run.watch.1 / 1000,
                        self.now / 1000,
                        states.join("; ")
                    )));
                }
            }
            // Feed the front ends.
            let mut all_drained = true;
            for (i, stream) in run.streams.iter_mut().enumerate() {
                if !self.cores[i].look {
                    all_drained &= self.cores[i].drained;
                    continue;
                }
                self.cores[i].look = false;
                while self.cores[i].core.wants_op() {
                    match stream.next() {
                        Some(op) => {
                            let g = self.cores[i].group.min(programs.len() - 1);
                            stream.last_dst = self.feed(i, op, stream.last_dst, &run.ring_maps[g]);
                            run.n_ops += 1;
                            if run.n_ops.is_multiple_of(4096) {
                                progress(run.n_ops);
                            }
                        }
                        None => self.cores[i].core.end_of_input(),
                    }
                }
                let c = &mut self.cores[i];
                c.drained = c.core.drained();
                if c.drained {
                    if c.done_at.is_none() {
                        c.done_at = Some(self.now);
                    }
                } else {
                    all_drained = false;
                }
            }
            if all_drained && self.sys.idle() && self.agents.idle() {
                return Ok(Step::Idle);
            }
            if !self.targets.is_empty() && self.targets_reached() {
                return Ok(Step::Idle);
            }
            let mem_t = self.sys.mem_time();
            let ev_t = self.sys.events.peek_time().unwrap_or(Ps::MAX);
            let core_t = self.cores.iter().map(|c| c.next).min().unwrap_or(Ps::MAX);
            let now = core_t.min(mem_t).min(ev_t);
            if now == Ps::MAX {
                return Err(PlatformError::Stalled(format!(
                    "at {} ns nothing is scheduled but the cores have not finished ({} window entries)",
                    self.now / 1000,
                    self.cores.iter().map(|c| c.core.window_len()).sum::<usize>()
                )));
            }
            if now > horizon {
                return Ok(Step::At(now));
            }
            if now == run.last_now {
                run.guard += 1;
                if run.guard > 1_000_000 {
                    return Err(PlatformError::Stalled(format!(
                        "no progress at {} ns",
                        now / 1000
                    )));
                }
            } else {
                run.guard = 0;
                run.last_now = now;
            }
            self.now = now;
            if mem_t <= now {
                self.sys.step_memory(&mut self.agents);
            }
            if let Some(e) = self.sys.fatal.take() {
                return Err(PlatformError::Dram(e));
            }
            if let Some(e) = self.sys.driver_error.take() {
                return Err(PlatformError::Driver(e));
            }
            while let Some((t, ev)) = self.sys.events.pop_due(now) {
                match ev {
                    Ev::Offer(id) => self.sys.offer(t, id, &mut self.agents),
                    Ev::Fill(id) => self.sys.on_fill(t, id),
                    Ev::Agent { agent, kind, id } => {
                        if let Some(a) = self.agents.list.get_mut(agent as usize) {
                            a.event(&mut self.sys, t, kind, id);
                        }
                    }
                    Ev::Poke(c) => self.sys.poke(c as usize),
                    Ev::Interrupt { core: c, frames } => {
                        let c = c as usize;
                        let g = self.cores[c].group.min(programs.len() - 1);
                        let h = run.handlers[g].as_ref();
                        self.cores[c].rx_announced += u64::from(frames);
                        if self.cores[c].core.in_handler() {
                            // A handler per frame: the local APIC holds one pending interrupt
                            // of a vector, so later ones merge into it.
                            let per_frame = h.is_some_and(|h| h.spec.handler_per_frame);
                            let held = &mut self.cores[c].held_irqs;
                            *held = if per_frame { 1 } else { *held + 1 };
                        } else {
                            self.take_interrupt(c, h, &run.ring_maps[g], false);
                            self.sys.poke(c);
                        }
                    }
                }
            }
            // Every wake-up and poke is handed on here (nothing this loop calls adds one), so
            // the flag that says one waits is cleared; without it, no core is looked at.
            let woken = if std::mem::take(&mut self.sys.woken) {
                self.engines.len()
            } else {
                0
            };
            for e in 0..woken {
                let p = &mut self.sys.privs[e];
                if !p.wakeups.is_empty() || p.poke {
                    let poke = std::mem::take(&mut p.poke);
                    // Swapped with a buffer the loop keeps, so no allocation per wake-up.
                    std::mem::swap(&mut p.wakeups, &mut run.wake_buf);
                    let eng = &self.engines[e];
                    for (tok, t) in run.wake_buf.drain(..) {
                        if let Some(&i) = eng.slots.get(token_context(tok) as usize) {
                            self.cores[i].core.memory_done(tok, t);
                        }
                    }
                    for &i in &eng.slots {
                        if poke {
                            self.cores[i].core.poke();
                        }
                    }
                    // The running context looks again at its next cycle boundary.
                    let c = &mut self.cores[eng.slots[eng.active]];
                    let cy = c.core.cycle_ps;
                    let aligned = now.div_ceil(cy) * cy;
                    c.next = c.next.min(aligned.max(now));
                    if eng.slots.len() > 1 {
                        self.maybe_switch(e, now);
                    }
                }
            }
            for i in 0..self.cores.len() {
                if self.cores[i].next > now {
                    continue;
                }
                let e = self.cores[i].engine;
                let mut port = Port {
                    sys: &mut self.sys,
                    agents: &mut self.agents,
                    rings: &mut self.rings,
                    core: e,
                    context: i,
                    routes: self.routes[self.cores[i].group.min(self.routes.len() - 1)],
                    raised: &mut run.raised,
                };
                let shared = self.engines[e].slots.len() > 1;
                let before = if shared {
                    let p = port.sys.private(e);
                    (p.l1.misses, p.l2.misses)
                } else {
                    (0, 0)
                };
                let c = &mut self.cores[i];
                c.next = c.core.tick(now, &mut port);
                c.look = true;
                if shared {
                    let p = self.sys.private(e);
                    c.own_misses.0 += p.l1.misses - before.0;
                    c.own_misses.1 += p.l2.misses - before.1;
                }
                let cy = c.core.cycle_ps;
                if c.held_irqs > 0 && !c.core.in_handler() {
                    // The handler returned: the next held interrupt is taken now.
                    c.held_irqs -= 1;
                    c.next = c.next.min(now + cy);
                    let g = c.group.min(programs.len() - 1);
                    // A program with a poll loop takes it as the loop's next turn.
                    let poll = run.polls[g].is_some();
                    let h = run.polls[g].as_ref().or(run.handlers[g].as_ref());
                    self.take_interrupt(i, h, &run.ring_maps[g], poll);
                    self.sys.poke(e);
                }
                let p = &mut self.sys.privs[e];
                if !p.wakeups.is_empty() {
                    std::mem::swap(&mut p.wakeups, &mut run.wake_buf);
                    for (tok, t) in run.wake_buf.drain(..) {
                        if let Some(&k) = self.engines[e].slots.get(token_context(tok) as usize) {
                            self.cores[k].core.memory_done(tok, t);
                        }
                    }
                    let c = &mut self.cores[i];
                    c.next = c.next.min(now + cy);
                }
                let p = &mut self.sys.privs[e];
                if p.poke {
                    p.poke = false;
                    for &k in &self.engines[e].slots {
                        self.cores[k].core.poke();
                    }
                    let c = &mut self.cores[i];
                    c.next = c.next.min(now + cy);
                }
                if self.engines[e].slots.len() > 1 {
                    self.maybe_switch(e, now);
                }
            }
            if !self.ports.is_empty()
                && self.ports.iter().any(|&a| self.agents.list[a].has_frames())
            {
                return Ok(Step::At(now));
            }
        }
    }

    /// Closes a run: every agent's report and the statistics from the run's start to the last
    /// thing done.
    pub fn finish(&mut self, run: Run<'_>, progress: &mut dyn FnMut(u64)) -> PlatformStats {
        progress(run.n_ops);
        let reports: Vec<_> = self.agents.list.iter().map(|a| a.report()).collect();
        let end = reports.iter().fold(self.now, |e, r| e.max(r.last_done));
        self.stats(run.programs, run.start, end, &reports)
    }

    /// Notes the cores that finished their warm-up or reached their target (marking the
    /// window's start when the last one is warm); whether all reached their targets.
    fn targets_reached(&mut self) -> bool {
        let now = self.now;
        let (mut all_warm, mut all) = (true, true);
        // Cores that finished their warm-up or reached their target in this call.
        let mut events: Vec<(usize, u64, bool)> = Vec::new();
        for (i, (c, &t)) in self.cores.iter_mut().zip(&self.targets).enumerate() {
            let work = c.core.counters.work_instructions;
            if c.warm_at.is_none() {
                if work >= self.warmup {
                    c.warm_at = Some(now);
                } else if let Some(d) = c.done_at {
                    c.warm_at = Some(d);
                }
                if c.warm_at.is_some() {
                    events.push((i, work, false));
                }
            }
            if c.target_at.is_none() {
                if c.warm_at.is_some() && work >= self.warmup + t {
                    c.target_at = Some(now);
                } else if let Some(d) = c.done_at {
                    c.target_at = Some(d);
                } else {
                    all = false;
                }
                if c.target_at.is_some() {
                    events.push((i, work, true));
                }
            }
            all_warm &= c.warm_at.is_some();
        }
        // Per-core accounting (cores owning memory regions): sample the DRAM now and then, and
        // at each core's warm-up and target, and note that core's totals.
        if self.sys.attribution_tick() || !events.is_empty() {
            self.sys.attribute(now / self.sys.tck.max(1));
            if !events.is_empty() {
                let dirty = self.sys.dirty_lines_by_owner();
                for (i, work, target) in events {
                    self.sys.snapshot(i, work, target, &dirty);
                }
            }
        }
        if all_warm && self.window_start.is_none() {
            self.window_start = Some(self.mark(now));
        }
        all
    }

    /// The system's counters now.
    fn mark(&mut self, now: Ps) -> WindowMark {
        let dram = self.sys.mem.stats(now / self.sys.tck.max(1));
        let lines = dram.reads + dram.writes;
        WindowMark {
            at: now,
            work: self
                .cores
                .iter()
                .map(|c| c.core.counters.work_instructions)
                .sum(),
            channel_bytes: dram.channel_bytes,
            copy_bytes: self.sys.traffic.copy_bytes,
            bulk_bytes: lines.saturating_sub(self.sys.offered_lines) * 64,
            energy_nj: dram.energy.total_nj,
            dirty: self.dirty_lines(),
        }
    }

    /// Dirty lines in all caches (a line dirty at two levels counted once), and of them the
    /// ones a copy or initialisation dirtied.
    fn dirty_lines(&self) -> (u64, u64) {
        let (mut all, mut by_copy) = (0u64, 0u64);
        let mut count = |c: bool| {
            all += 1;
            by_copy += u64::from(c);
        };
        for p in &self.sys.privs {
            for (_, c) in p.l2.dirty_lines() {
                count(c);
            }
            for (line, c) in p.l1.dirty_lines() {
                if !p.l2.is_dirty(line) {
                    count(c);
                }
            }
        }
        if let Some(l) = &self.sys.llc {
            for (line, c) in l.dirty_lines() {
                if !self
                    .sys
                    .privs
                    .iter()
                    .any(|p| p.l2.is_dirty(line) || p.l1.is_dirty(line))
                {
                    count(c);
                }
            }
        }
        (all, by_copy)
    }

    fn stats(
        &mut self,
        programs: &[Workload],
        start: Ps,
        end: Ps,
        reports: &[crate::agents::AgentReport],
    ) -> PlatformStats {
        let tck = self.sys.tck;
        // The per-core shares up to the end (nothing without per-core accounting).
        self.sys.attribute(end.div_ceil(tck));
        let dram = self.sys.mem.stats(end.div_ceil(tck));
        let h = &self.sys;
        let elapsed = end - start;
        let cycle0 = self.cores[0].core.cycle_ps.max(1);
        let cycles = elapsed / cycle0;
        let dram_lines = dram.reads + dram.writes;
        // Lines the controllers moved on their own (MC-DMA and the channel part of RowClone's
        // split) are copy traffic too.
        let bulk_lines = dram_lines.saturating_sub(h.offered_lines);
        let mut traffic = h.traffic.clone();
        traffic.bulk_bytes = bulk_lines * 64;
        traffic.channel_bytes = dram.channel_bytes;
        let copy_total = traffic.copy_bytes + traffic.bulk_bytes;
        traffic.fmtc = if traffic.channel_bytes > 0 {
            copy_total as f64 / traffic.channel_bytes as f64
        } else {
            0.0
        };
        traffic.bandwidth_gbs = if elapsed > 0 {
            traffic.channel_bytes as f64 / (elapsed as f64 / 1000.0)
        } else {
            0.0
        };
        let (mut copies, mut copy_time) = (0u64, 0u64);
        let mut lines = CopyLines::default();
        for r in reports {
            copies += r.ops;
            copy_time += r.op_time;
            lines.engine_read += r.lines.engine_read;
            lines.engine_from_cache += r.lines.engine_from_cache;
            lines.engine_written += r.lines.engine_written;
            lines.flushed += r.lines.flushed;
            lines.invalidated += r.lines.invalidated;
            lines.inserted += r.lines.inserted;
            lines.copied_in_cache += r.lines.copied_in_cache;
        }
        let mut instructions = 0;
        let mut stall_cycles = 0;
        let mut caches = CacheStats::default();
        let mut per_core = Vec::new();
        let window_of = |c: &CoreSlot| match (c.warm_at, c.target_at) {
            (Some(w), Some(t)) => t.saturating_sub(w),
            _ => 0,
        };
        let en = &dram.energy;
        // A write-back's energy, for the lines the caches still owe: a write burst (the run's
        // mean where the run wrote, else one from the part's currents) and the run's mean per
        // line of I/O, activate and precharge energy.
        let per_write = if dram.writes > 0 {
            en.write_nj / dram.writes as f64
        } else {
            self.sys.mem.command_energy().write / 1000.0
        };
        let per_line = if dram_lines > 0 {
            per_write + (en.io_nj + en.activate_nj + en.precharge_nj) / dram_lines as f64
        } else {
            0.0
        };
        let attribution = h.attribution.as_deref();
        let core_window = |i: usize| {
            let a = attribution?;
            let (w, t) = (a.warm.get(i).copied()??, a.target.get(i).copied()??);
            let owed = t.dirty as f64 - w.dirty as f64;
            Some(crate::stats::CoreWindow {
                work_instructions: t.work.saturating_sub(w.work),
                channel_bytes: (t.channel_bytes - w.channel_bytes + owed * 64.0)
                    .max(0.0)
                    .round() as u64,
                // The write-backs owed at its target, at their cost as of then.
                dram_energy_nj: (t.energy_nj - w.energy_nj + owed * t.per_line_nj).max(0.0),
            })
        };
        for (i, c) in self.cores.iter().enumerate() {
            let k = &c.core.counters;
            instructions += k.instructions;
            stall_cycles += k.stall_cycles;
            let p = &h.privs[c.engine];
            if self.engines[c.engine].slots[0] == i {
                caches.l1_hits += p.l1.hits;
                caches.l1_misses += p.l1.misses;
                caches.l2_hits += p.l2.hits;
                caches.l2_misses += p.l2.misses;
            }
            let done = c.done_at.unwrap_or(end).saturating_sub(start);
            let cyc = done / c.core.cycle_ps.max(1);
            per_core.push(CoreStats {
                core: i as u32,
                kind: c.core.kind().to_string(),
                workload: programs[c.group.min(programs.len() - 1)].spec.name.clone(),
                time_ns: done as f64 / 1000.0,
                cycles: cyc,
                instructions: k.instructions,
                ipc: if cyc > 0 {
                    k.instructions as f64 / cyc as f64
                } else {
                    0.0
                },
                // A context of a multithreaded core: the misses its own accesses caused.
                l1_misses: if self.engines[c.engine].slots.len() > 1 {
                    c.own_misses.0
                } else {
                    p.l1.misses
                },
                l2_misses: if self.engines[c.engine].slots.len() > 1 {
                    c.own_misses.1
                } else {
                    p.l2.misses
                },
                interrupts: k.interrupts,
                engine: c.engine as u32,
                context_switches: self.engines[c.engine].switches,
                work_instructions: k.work_instructions,
                target_instructions: self.targets.get(i).copied().unwrap_or(0),
                target_ns: window_of(c) as f64 / 1000.0,
                target_cycles: window_of(c) / c.core.cycle_ps.max(1),
                window: core_window(i),
            });
        }
        caches.llc_hits = h.llc.as_ref().map_or(0, |l| l.hits);
        caches.llc_misses = h.llc.as_ref().map_or(0, |l| l.misses);
        let single = self.cores.len() == 1;
        let work_now: u64 = self
            .cores
            .iter()
            .map(|c| c.core.counters.work_instructions)
            .sum();
        let window = self.window_start.map(|m| {
            // Write-backs owed: the change in the caches' dirty lines over the window, charged
            // as line writes (their share of the run's write, activate, precharge and I/O
            // energy per line).
            let (d_all, d_copy) = self.dirty_lines();
            let owed = d_all as f64 - m.dirty.0 as f64;
            let owed_copy = d_copy as f64 - m.dirty.1 as f64;
            let bytes = |v: f64| (v.max(0.0) * 64.0).round() as u64;
            let channel = traffic.channel_bytes.saturating_sub(m.channel_bytes) as f64 / 64.0;
            let copy = (traffic.copy_bytes + traffic.bulk_bytes)
                .saturating_sub(m.copy_bytes + m.bulk_bytes) as f64
                / 64.0;
            WindowStats {
                time_ns: end.saturating_sub(m.at) as f64 / 1000.0,
                work_instructions: work_now.saturating_sub(m.work),
                channel_bytes: bytes(channel + owed),
                copy_bytes: bytes(copy + owed_copy),
                dram_energy_nj: (en.total_nj - m.energy_nj + owed * per_line).max(0.0),
            }
        });
        // Each distinct name once, in order (one program and one kind on most platforms).
        let distinct = |names: &mut dyn Iterator<Item = String>| {
            let mut seen: Vec<String> = Vec::new();
            for n in names {
                if !seen.contains(&n) {
                    seen.push(n);
                }
            }
            seen.join(" + ")
        };
        let workload_label = distinct(
            &mut self
                .cores
                .iter()
                .map(|c| programs[c.group.min(programs.len() - 1)].spec.name.clone()),
        );
        let core_label = distinct(&mut self.cores.iter().map(|c| c.core.kind().to_string()));
        PlatformStats {
            platform: self.cfg.name.clone(),
            workload: workload_label,
            core: core_label,
            mechanism: self.cfg.copy.mechanism.clone(),
            placement: self.cfg.copy.placement.clone(),
            mode: self.cfg.copy.mode.clone(),
            time_ns: elapsed as f64 / 1000.0,
            core_cycles: cycles,
            instructions,
            ipc: if cycles > 0 {
                instructions as f64 / cycles as f64
            } else {
                0.0
            },
            offloads: copies,
            mean_offload_ns: if copies > 0 {
                copy_time as f64 / copies as f64 / 1000.0
            } else {
                0.0
            },
            offload_time_ns: copy_time as f64 / 1000.0,
            head_stall_cycles: stall_cycles,
            pending_copy_stalls: h.guards.iter().map(|g| g.stalls).sum(),
            copy_lines: lines,
            caches,
            bus_busy_fraction: if elapsed > 0 {
                h.ic.busy_ps as f64 / elapsed as f64
            } else {
                0.0
            },
            dram_energy_nj: dram.energy.total_nj,
            memory: traffic,
            coherence: if single { None } else { Some(h.coherence) },
            rings: self.rings.stats(),
            interrupts: self.cores.iter().map(|c| c.core.counters.interrupts).sum(),
            uncached_accesses: h.uncached_accesses,
            window,
            per_core: if single && self.targets.is_empty() {
                Vec::new()
            } else {
                per_core
            },
            traffic_by_core: self
                .sys
                .core_traffic()
                .split_last()
                .map_or(Vec::new(), |(_, cores)| cores.to_vec()),
            traffic_unattributed: self.sys.core_traffic().last().copied(),
            devices: reports.iter().filter_map(|r| r.device.clone()).collect(),
            agents: self
                .agents
                .names
                .iter()
                .zip(reports)
                .map(|(a, r)| AgentStats {
                    ops: r.ops,
                    op_time_ns: r.op_time as f64 / 1000.0,
                    mean_op_ns: if r.ops > 0 {
                        r.op_time as f64 / r.ops as f64 / 1000.0
                    } else {
                        0.0
                    },
                    last_done_ns: r.last_done.saturating_sub(start) as f64 / 1000.0,
                    lines: r.lines.clone(),
                    device: r.device.clone(),
                    small_cores: r.small_cores.clone().map(|mut s| {
                        let span = r.last_done.saturating_sub(start) as f64 / 1000.0;
                        s.busy_share = if span > 0.0 && !s.busy_ns.is_empty() {
                            s.busy_ns.iter().sum::<f64>() / (span * s.busy_ns.len() as f64)
                        } else {
                            0.0
                        };
                        s
                    }),
                    ..a.clone()
                })
                .collect(),
            dram,
        }
    }
}

/// Runs `workload` on a fresh platform `cfg`.
pub fn run(cfg: &PlatformConfig, workload: &Workload) -> Result<PlatformStats, PlatformError> {
    Platform::new(cfg)?.run(workload)
}

/// [`run`], calling `progress(done, planned)` now and then: the operations fed to the cores so
/// far and in all ([`Platform::planned_ops`]).
pub fn run_with_progress(
    cfg: &PlatformConfig,
    workload: &Workload,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<PlatformStats, PlatformError> {
    let mut p = Platform::new(cfg)?;
    let programs = p.workloads(workload)?;
    let planned = p.planned_ops(&programs);
    p.run_programs(programs, &mut |n| progress(n, planned))
}
