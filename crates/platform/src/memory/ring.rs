//! Shared-memory rings between cores (single producer, single consumer), as data in memory: the
//! consumer's index line, the producer's index line, and the slots. A push waits while the ring
//! is full (polling the consumer's index line), writes its slot, then its index line; a pop waits
//! while the ring is empty (polling the producer's index line, or asleep until the producer's
//! doorbell), reads its slot, then writes its index line. Every poll and index write is an
//! ordinary coherent access, so a consumer polling an unchanged index hits in its cache and the
//! producer's write costs it an invalidation and a cache-to-cache transfer. Which slot a side uses
//! is known when the operation is decoded (each side goes round the ring in order); whether the
//! ring has room or an entry is decided when the wait reaches the head of the window.
use crate::config::platform::RingConfig;
use crate::config::workload::Op;
use crate::iface::{Access, Token};
use crate::memory::memory_system::MemorySystem;
use crate::sim::{ns, Ps};
pub use crate::stats::RingStats;

struct Ring {
    cfg: RingConfig,
    /// Published pushes and pops.
    pushed: u64,
    popped: u64,
    /// Decoded pushes and pops (the next slot of each side).
    push_seq: u64,
    pop_seq: u64,
    /// A consumer asleep until the doorbell.
    sleeper: Option<usize>,
    stats: RingStats,
}

/// One side's step on a ring: which ring, push or pop, and the index line it touches.
#[derive(Debug, Clone, Copy)]
pub struct RingStep {
    pub ring: u16,
    pub push: bool,
    pub addr: u64,
}

/// The platform's rings.
pub struct Rings {
    rings: Vec<Ring>,
}

/// A token nobody waits for: the answer to a poll whose result the wait does not use.
const NOBODY: Token = Token::Store(u64::MAX);

impl Rings {
    pub fn new(cfgs: &[RingConfig]) -> Rings {
        Rings {
            rings: cfgs
                .iter()
                .map(|c| Ring {
                    cfg: c.clone(),
                    pushed: 0,
                    popped: 0,
                    push_seq: 0,
                    pop_seq: 0,
                    sleeper: None,
                    stats: RingStats {
                        name: c.name.clone(),
                        ..Default::default()
                    },
                })
                .collect(),
        }
    }

    /// The platform index of ring `name`.
    pub fn index(&self, name: &str) -> Option<u16> {
        self.rings
            .iter()
            .position(|r| r.cfg.name == name)
            .map(|i| i as u16)
    }

    pub fn names(&self) -> Vec<String> {
        self.rings.iter().map(|r| r.cfg.name.clone()).collect()
    }

    /// The operations a push (`push`) or pop of ring `ring` decodes to: the wait, the slot's
    /// stores or loads, the commit.
    pub fn expand(&mut self, ring: u16, push: bool, out: &mut Vec<Op>) {
        let Some(r) = self.rings.get_mut(ring as usize) else {
            return;
        };
        let c = &r.cfg;
        let (head_line, tail_line) = (c.base, c.base + 64);
        let seq = if push {
            &mut r.push_seq
        } else {
            &mut r.pop_seq
        };
        let slot = *seq % u64::from(c.slots);
        *seq += 1;
        let at = c.base + 128 + slot * u64::from(c.slot_bytes);
        let (wait_on, mine) = if push {
            (head_line, tail_line)
        } else {
            (tail_line, head_line)
        };
        out.push(Op::RingWait {
            ring,
            push,
            addr: wait_on,
        });
        let mut a = at;
        while a < at + u64::from(c.slot_bytes) {
            out.push(if push {
                Op::Store(a)
            } else {
                Op::Load {
                    addr: a,
                    chase: false,
                }
            });
            a = (a / 64 + 1) * 64;
        }
        out.push(Op::RingCommit {
            ring,
            push,
            addr: mine,
        });
    }

    /// A wait of core `core` reached the head of its window.
    pub fn wait(
        &mut self,
        sys: &mut MemorySystem,
        now: Ps,
        core: usize,
        step: RingStep,
        seq: u64,
    ) -> Access {
        let RingStep { ring, push, addr } = step;
        let Some(r) = self.rings.get_mut(ring as usize) else {
            return Access::At(now);
        };
        let ready = if push {
            r.pushed - r.popped < u64::from(r.cfg.slots)
        } else {
            r.pushed > r.popped
        };
        if ready {
            // The poll that sees the other side's index.
            return sys.access(now, core, addr, false, false, Token::Rob(seq));
        }
        if !push && r.cfg.doorbell {
            if r.sleeper != Some(core) {
                r.stats.sleeps += 1;
            }
            r.sleeper = Some(core);
            return Access::RetryAt(Ps::MAX);
        }
        if push {
            r.stats.full_polls += 1;
        } else {
            r.stats.empty_polls += 1;
        }
        let poll = u64::from(r.cfg.poll_cycles) * sys.cycle_ps(core);
        let _ = sys.access(now, core, addr, false, false, NOBODY);
        Access::RetryAt(now + poll)
    }

    /// A commit of core `core` reached the head of its window: write the index line, publish.
    pub fn commit(
        &mut self,
        sys: &mut MemorySystem,
        now: Ps,
        core: usize,
        step: RingStep,
        seq: u64,
    ) -> Access {
        let RingStep { ring, push, addr } = step;
        let a = sys.access(now, core, addr, true, false, Token::Rob(seq));
        if matches!(a, Access::Retry | Access::RetryAt(_)) {
            return a;
        }
        let Some(r) = self.rings.get_mut(ring as usize) else {
            return a;
        };
        if push {
            r.pushed += 1;
            r.stats.pushes += 1;
            if let Some(c) = r.sleeper.take() {
                r.stats.doorbells += 1;
                sys.poke_at(c, now + ns(r.cfg.doorbell_ns));
            }
        } else {
            r.popped += 1;
            r.stats.pops += 1;
        }
        a
    }

    pub fn stats(&self) -> Vec<RingStats> {
        self.rings.iter().map(|r| r.stats.clone()).collect()
    }
}
