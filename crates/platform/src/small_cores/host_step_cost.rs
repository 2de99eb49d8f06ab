//! What a host step costs the host core: an in-order core with a private L1 and L2 (the tag
//! caches of `cache.rs`) in front of its own SDRAM channel. A CPU copy or checksum walks the
//! buffer line by line: an L1 hit costs only the loop, an L2 hit its latency, a miss the SDRAM
//! channel's latency (overlapped `miss_overlap` deep); data in the small cores' DRAM is read and
//! written uncached, an access at a time. Small-core writes into host memory either push the
//! lines into the L2 (`l2_push`) or leave the caches alone, in which case the program must
//! invalidate them. The cost model also keeps the coherence oracle: a host read of a line that a
//! small core wrote after the host cached it (and that was not invalidated since) is an error.
use crate::config::network::{HostConfig, Loc};
use crate::memory::cache::Cache;
use crate::sim::Ps;
use crate::small_cores::mem_channel::MemChannel;
use std::collections::HashSet;

/// Host addresses of the kernel buffers and of the application's buffer.
pub const KERNEL_BASE: u64 = 0x1000_0000;
pub const USER_BASE: u64 = 0x2000_0000;
/// Bytes per packet buffer.
pub const BUFFER_BYTES: u64 = 2048;

/// The host's address of buffer `idx` in `loc` (None: not host memory).
pub fn host_addr(loc: Loc, idx: usize) -> Option<u64> {
    match loc {
        Loc::Kernel => Some(KERNEL_BASE + idx as u64 * BUFFER_BYTES),
        Loc::User => Some(USER_BASE),
        _ => None,
    }
}

pub struct HostCaches {
    pub cfg: HostConfig,
    l1: Cache,
    l2: Cache,
    line: u64,
    /// Picoseconds per host cycle.
    pub cycle_ps: f64,
    /// Lines a small core wrote while the host held them (stale until invalidated).
    stale: HashSet<u64>,
    /// User-buffer mappings cached (onloader, per connection: one here).
    mapped: bool,
    pub mapping_misses: u64,
    pub pushed_lines: u64,
}

/// A host read of stale data: the program lacks a cache invalidation.
#[derive(Debug, Clone, PartialEq)]
pub struct StaleRead(pub u64);

impl HostCaches {
    pub fn new(cfg: &HostConfig) -> HostCaches {
        HostCaches {
            l1: Cache::new(&cfg.l1),
            l2: Cache::new(&cfg.l2),
            line: cfg.l1.line_bytes,
            cycle_ps: 1e6 / cfg.clock_mhz,
            stale: HashSet::new(),
            mapped: false,
            mapping_misses: 0,
            pushed_lines: 0,
            cfg: cfg.clone(),
        }
    }

    fn lines(&self, addr: u64, bytes: u64) -> std::ops::Range<u64> {
        addr / self.line..(addr + bytes.max(1)).div_ceil(self.line)
    }

    /// Cycles to read `bytes` at `addr` through the caches (filling them), at host time `now`.
    fn read(
        &mut self,
        sdram: &mut MemChannel,
        now: Ps,
        addr: u64,
        bytes: u64,
    ) -> Result<f64, StaleRead> {
        let mut cyc = 0.0;
        for l in self.lines(addr, bytes) {
            let in_l1 = self.l1.access(l, false, false);
            let in_l2 = !in_l1 && self.l2.access(l, false, false);
            if (in_l1 || in_l2) && self.stale.contains(&l) {
                return Err(StaleRead(l * self.line));
            }
            if in_l1 {
                continue;
            }
            if in_l2 {
                cyc += self.l2.hit_cycles as f64;
            } else {
                let t = now + (cyc * self.cycle_ps) as Ps;
                let done = sdram.transfer(t, self.line);
                cyc += (done - t) as f64 / self.cycle_ps / self.cfg.miss_overlap;
                self.l2.insert(l, false, false);
            }
            self.l1.insert(l, false, false);
        }
        Ok(cyc)
    }

    /// Cycles to write `bytes` at `addr` (L1 write hits are free; misses go to the write buffer
    /// and allocate in the L2).
    fn write(&mut self, addr: u64, bytes: u64) -> f64 {
        let mut cyc = 0.0;
        for l in self.lines(addr, bytes) {
            self.stale.remove(&l);
            if !self.l1.access(l, true, false) {
                cyc += self.cfg.write_miss_cycles;
                self.l2.insert(l, true, false);
            }
        }
        cyc
    }

    fn uncached(&self, bytes: u64, write: bool) -> f64 {
        let n = bytes.div_ceil(self.cfg.uncached_bytes) as f64;
        let ns = if write {
            self.cfg.uncached_write_ns
        } else {
            self.cfg.uncached_read_ns
        };
        n * ns * 1000.0 / self.cycle_ps
    }

    /// A CPU copy (and optional checksum) of `bytes` from buffer `src` to buffer `dst`.
    #[allow(clippy::too_many_arguments)]
    pub fn copy(
        &mut self,
        sdram: &mut MemChannel,
        now: Ps,
        src: (Loc, usize),
        dst: (Loc, usize),
        bytes: u64,
        checksum: bool,
    ) -> Result<f64, StaleRead> {
        let n = bytes.div_ceil(self.line) as f64;
        let mut cyc = n
            * (self.cfg.copy_cycles_per_line
                + if checksum {
                    self.cfg.checksum_cycles_per_line
                } else {
                    0.0
                });
        cyc += match host_addr(src.0, src.1) {
            Some(a) => self.read(sdram, now, a, bytes)?,
            None => self.uncached(bytes, false),
        };
        cyc += match host_addr(dst.0, dst.1) {
            Some(a) => self.write(a, bytes),
            None => self.uncached(bytes, true),
        };
        Ok(cyc)
    }

    /// A checksum pass over `bytes` of buffer `at`.
    pub fn checksum(
        &mut self,
        sdram: &mut MemChannel,
        now: Ps,
        at: (Loc, usize),
        bytes: u64,
    ) -> Result<f64, StaleRead> {
        let n = bytes.div_ceil(self.line) as f64;
        Ok(n * self.cfg.checksum_cycles_per_line
            + match host_addr(at.0, at.1) {
                Some(a) => self.read(sdram, now, a, bytes)?,
                None => self.uncached(bytes, false),
            })
    }

    /// `count` uncached accesses of one word.
    pub fn uncached_accesses(&self, count: u32, write: bool) -> f64 {
        self.uncached(u64::from(count) * self.cfg.uncached_bytes, write)
    }

    /// Cleans (writes back) or invalidates the lines of `bytes` of buffer `at`. An invalidation
    /// drops the lines from the L1, and from the L2 too unless small-core writes are pushed there.
    pub fn cache_op(&mut self, at: (Loc, usize), bytes: u64, clean: bool) -> f64 {
        let Some(a) = host_addr(at.0, at.1) else {
            return 0.0;
        };
        let r = self.lines(a, bytes);
        let n = (r.end - r.start) as f64;
        // Without the push the L2's copy must go too (or, for a clean, be written back).
        let per_line = self.cfg.cache_op_cycles
            + if self.cfg.l2_push && !clean {
                0.0
            } else {
                self.cfg.l2_cache_op_cycles
            };
        if !clean {
            for l in r {
                self.l1.invalidate(l);
                if !self.cfg.l2_push {
                    self.l2.invalidate(l);
                }
                // The L1's copy is gone; the L2's is fresh (pushed) or gone too.
                self.stale.remove(&l);
            }
        } else {
            for l in r {
                self.l1.flush(l);
                self.l2.flush(l);
            }
        }
        n * per_line
    }

    /// The mapping of the user buffer for the small cores: `(hit, lines to clean)`.
    pub fn map_user_buffer(&mut self) -> bool {
        let hit = self.cfg.mapping_cache && self.mapped;
        if !hit {
            self.mapping_misses += 1;
        }
        self.mapped = true;
        hit
    }

    /// A small core wrote `bytes` of buffer `at` in host memory: pushed into the L2 (the L1's
    /// copy, if any, goes stale), or, without the push, every cached copy goes stale.
    pub fn small_core_wrote(&mut self, at: (Loc, usize), bytes: u64) {
        let Some(a) = host_addr(at.0, at.1) else {
            return;
        };
        for l in self.lines(a, bytes) {
            if self.cfg.l2_push {
                self.l2.insert(l, false, false);
                self.pushed_lines += 1;
                if self.l1.contains(l) {
                    self.stale.insert(l);
                }
            } else if self.l1.contains(l) || self.l2.contains(l) {
                self.stale.insert(l);
            }
        }
    }

    /// A small core reads `bytes` of buffer `at` from host memory: it does not snoop the host's
    /// caches, so a dirty line there means it reads old data (the program must clean first).
    pub fn small_core_reads_dirty(&self, at: (Loc, usize), bytes: u64) -> Option<u64> {
        let a = host_addr(at.0, at.1)?;
        self.lines(a, bytes)
            .find(|&l| self.l1.is_dirty(l) || self.l2.is_dirty(l))
            .map(|l| l * self.line)
    }

    pub fn hits_misses(&self) -> (u64, u64, u64, u64) {
        (self.l1.hits, self.l1.misses, self.l2.hits, self.l2.misses)
    }
}
