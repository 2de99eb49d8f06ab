//! A set-associative, write-back, write-allocate cache with LRU replacement, and the hooks copy
//! engines and in-memory copy need: flush a line (write back if dirty), invalidate it, insert it.
//! The cache holds tags and state only, no data. Each line remembers whether a copy dirtied it,
//! so that its write-back counts as copy traffic.
use crate::config::platform::CacheConfig;

#[derive(Debug, Clone, Copy, Default)]
struct Way {
    tag: u64,
    valid: bool,
    dirty: bool,
    /// Dirtied by a copy or initialisation (for the traffic attribution).
    by_copy: bool,
}

/// A line pushed out of the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Victim {
    pub line: u64,
    pub dirty: bool,
    pub by_copy: bool,
}

/// In [`Cache::tags`], a way that holds no line (no line number reaches it: a line is an
/// address divided by 64).
const NO_LINE: u64 = u64::MAX;

#[derive(Debug, Clone)]
pub struct Cache {
    sets: Vec<Way>,
    /// Each way's line, [`NO_LINE`] where the way is invalid: a lookup compares these 8 bytes a
    /// way, side by side, rather than each way's whole state (snoops look up every core's
    /// caches on each shared write).
    tags: Vec<u64>,
    /// Each way's replacement key: [`VALID_BIT`] while the way is valid, or-ed with the clock
    /// of its last use. The victim is the way with the smallest key (an invalid way first, then
    /// the least recently used; the first of equal keys), found by comparing these 8 bytes a
    /// way, side by side, instead of a `(valid, lru)` pair in each way's state.
    ages: Vec<u64>,
    ways: usize,
    set_mask: u64,
    clock: u64,
    pub hit_cycles: u64,
    /// Bytes a cycle this level fills into the level above ([`crate::config::platform::CacheConfig::fill_bytes_per_cycle`]; 0: no limit).
    pub fill_bytes_per_cycle: u64,
    pub hits: u64,
    pub misses: u64,
    /// The lowest and highest line ever inserted: a snoop ([`Cache::find_filtered`]) outside
    /// them misses at once (the cores of a multi-programmed run use disjoint memory).
    lo: u64,
    hi: u64,
    /// A bit per hashed 4 KiB page, set when a line of the page is inserted and never cleared:
    /// a clear bit means no line of that page was ever here, so a snoop of another core's
    /// caches ([`Cache::contains`], [`Cache::is_dirty`], [`Cache::invalidate`], ...) ends there
    /// without looking at the set. Exact: a set bit only sends the lookup on to the set.
    pages: Vec<u64>,
}

/// In [`Cache::ages`], the bit of a valid way (above every clock value: the clock counts
/// accesses, far below 2^63).
const VALID_BIT: u64 = 1 << 63;

/// Bits of [`Cache::pages`] (64 Ki: 8 KiB a cache).
const PAGE_BITS: u64 = 1 << 16;

/// The bit of `line`'s 4 KiB page in [`Cache::pages`] (a multiplicative hash, so that pages
/// far apart, as the regions of the cores of a multi-programmed run, spread over the bits).
#[inline]
fn page_bit(line: u64) -> u64 {
    ((line >> 6).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 48) & (PAGE_BITS - 1)
}

impl Cache {
    pub fn new(c: &CacheConfig) -> Cache {
        let lines = (c.size_kib * 1024 / c.line_bytes) as usize;
        let ways = c.ways as usize;
        let sets = lines / ways;
        Cache {
            sets: vec![Way::default(); lines],
            tags: vec![NO_LINE; lines],
            ages: vec![0; lines],
            ways,
            set_mask: sets as u64 - 1,
            clock: 0,
            hit_cycles: c.hit_cycles,
            fill_bytes_per_cycle: c.fill_bytes_per_cycle,
            hits: 0,
            misses: 0,
            lo: u64::MAX,
            hi: 0,
            pages: vec![0; (PAGE_BITS / 64) as usize],
        }
    }

    fn set_of(&self, line: u64) -> usize {
        ((line & self.set_mask) as usize) * self.ways
    }

    #[inline]
    fn find(&self, line: u64) -> Option<usize> {
        let s = self.set_of(line);
        // One bounds check for the set, none per way.
        self.tags[s..s + self.ways]
            .iter()
            .position(|&t| t == line)
            .map(|k| s + k)
    }

    /// [`Cache::find`], first asking the line bounds and the page filter ([`Cache::pages`]):
    /// for lookups that mostly miss (snoops of other cores' caches). A core's own accesses and
    /// fills mostly hit or are about to fill, so they skip these checks.
    #[inline]
    fn find_filtered(&self, line: u64) -> Option<usize> {
        if line < self.lo || line > self.hi {
            return None;
        }
        let b = page_bit(line);
        if self.pages[(b / 64) as usize] & (1 << (b % 64)) == 0 {
            return None;
        }
        self.find(line)
    }

    /// Whether `line` (an address divided by the line size) is present.
    pub fn contains(&self, line: u64) -> bool {
        self.find_filtered(line).is_some()
    }

    /// Whether `line` is present and dirty.
    pub fn is_dirty(&self, line: u64) -> bool {
        self.find_filtered(line).is_some_and(|i| self.sets[i].dirty)
    }

    /// An access: true on a hit (which also updates LRU and, for a write, dirties the line).
    pub fn access(&mut self, line: u64, write: bool, by_copy: bool) -> bool {
        self.clock += 1;
        match self.find(line) {
            Some(i) => {
                self.hits += 1;
                self.ages[i] = VALID_BIT | self.clock;
                if write {
                    let w = &mut self.sets[i];
                    w.dirty = true;
                    w.by_copy = by_copy;
                }
                true
            }
            None => {
                self.misses += 1;
                false
            }
        }
    }

    /// Inserts `line` (a fill, or an engine's insert hook), returning the victim it displaced.
    /// An already present line is updated in place.
    pub fn insert(&mut self, line: u64, dirty: bool, by_copy: bool) -> Option<Victim> {
        self.clock += 1;
        let s = self.set_of(line);
        // One pass over the set looks for the line and, meanwhile, for the victim: the first
        // way with the smallest key, as `min_by_key` picks it.
        let tags = &self.tags[s..s + self.ways];
        let ages = &self.ages[s..s + self.ways];
        let mut k = 0;
        let mut least = u64::MAX;
        for (j, (&t, &a)) in tags.iter().zip(ages).enumerate() {
            if t == line {
                let i = s + j;
                self.ages[i] = VALID_BIT | self.clock;
                if dirty {
                    let w = &mut self.sets[i];
                    w.dirty = true;
                    w.by_copy = by_copy;
                }
                return None;
            }
            if a < least {
                least = a;
                k = j;
            }
        }
        self.lo = self.lo.min(line);
        self.hi = self.hi.max(line);
        let b = page_bit(line);
        self.pages[(b / 64) as usize] |= 1 << (b % 64);
        let i = s + k;
        let old = self.sets[i];
        self.tags[i] = line;
        self.ages[i] = VALID_BIT | self.clock;
        self.sets[i] = Way {
            tag: line,
            valid: true,
            dirty,
            by_copy: dirty && by_copy,
        };
        old.valid.then_some(Victim {
            line: old.tag,
            dirty: old.dirty,
            by_copy: old.by_copy,
        })
    }

    /// Invalidate hook: drops `line`, returning it (with its dirty state) if it was present.
    pub fn invalidate(&mut self, line: u64) -> Option<Victim> {
        let i = self.find_filtered(line)?;
        self.tags[i] = NO_LINE;
        self.ages[i] &= !VALID_BIT;
        let w = &mut self.sets[i];
        w.valid = false;
        Some(Victim {
            line,
            dirty: w.dirty,
            by_copy: w.by_copy,
        })
    }

    /// Flush hook: cleans `line`, returning true if it was dirty (the caller writes it back).
    pub fn flush(&mut self, line: u64) -> bool {
        match self.find_filtered(line) {
            Some(i) if self.sets[i].dirty => {
                self.sets[i].dirty = false;
                true
            }
            _ => false,
        }
    }

    /// Lines present.
    pub fn occupancy(&self) -> usize {
        self.sets.iter().filter(|w| w.valid).count()
    }

    /// The dirty lines present, each with whether a copy or initialisation dirtied it.
    pub fn dirty_lines(&self) -> impl Iterator<Item = (u64, bool)> + '_ {
        self.sets
            .iter()
            .filter(|w| w.valid && w.dirty)
            .map(|w| (w.tag, w.by_copy))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn small() -> Cache {
        Cache::new(&CacheConfig {
            size_kib: 1,
            ways: 2,
            line_bytes: 64,
            hit_cycles: 1,
            fill_bytes_per_cycle: 0,
        })
    }

    #[test]
    fn lru_evicts_the_least_recent_way() {
        let mut c = small(); // 16 lines, 8 sets of 2
        assert!(!c.access(0, false, false));
        assert_eq!(c.insert(0, false, false), None);
        assert_eq!(c.insert(8, true, false), None); // same set
        assert!(c.access(0, false, false)); // 0 is now most recent
        let v = c.insert(16, false, false).unwrap();
        assert_eq!(
            v,
            Victim {
                line: 8,
                dirty: true,
                by_copy: false
            }
        );
        assert!(c.contains(0) && c.contains(16) && !c.contains(8));
    }

    #[test]
    fn hooks_flush_invalidate_insert() {
        let mut c = small();
        c.insert(3, true, true);
        assert!(c.is_dirty(3));
        assert!(c.flush(3));
        assert!(!c.flush(3));
        assert!(c.contains(3) && !c.is_dirty(3));
        assert_eq!(
            c.invalidate(3),
            Some(Victim {
                line: 3,
                dirty: false,
                by_copy: true
            })
        );
        assert!(!c.contains(3));
        assert_eq!(c.invalidate(3), None);
    }

    #[test]
    fn insert_finds_a_present_line_and_prefers_an_invalid_way() {
        let mut c = small(); // 8 sets of 2
        c.insert(0, false, false);
        c.insert(8, false, false);
        // Present: updated in place, nothing displaced, even with the set full.
        assert_eq!(c.insert(0, true, true), None);
        assert!(c.is_dirty(0) && c.contains(8));
        // An invalid way is filled before the least recently used valid one (8).
        c.invalidate(0);
        assert_eq!(c.insert(16, false, false), None);
        assert!(c.contains(8) && c.contains(16));
        // Full again: the least recently used (8) goes.
        assert_eq!(c.insert(24, false, false).map(|v| v.line), Some(8));
        // A snoop outside every line ever inserted misses at once.
        assert!(!c.contains(1 << 40) && !c.is_dirty(1 << 40));
    }

    proptest! {
        // Against a model: a cache never holds more lines per set than its ways, an inserted
        // line is present right after, and a line is present iff it was inserted and not since
        // evicted or invalidated.
        #[test]
        fn matches_a_reference_model(ops in proptest::collection::vec((0u64..64, 0u8..3), 1..400)) {
            let mut c = small();
            let mut model: Vec<Vec<(u64, u64)>> = vec![Vec::new(); 8]; // per set: (line, last use)
            let mut t = 0u64;
            for (line, op) in ops {
                t += 1;
                let set = &mut model[(line % 8) as usize];
                match op {
                    0 => {
                        let hit = c.access(line, false, false);
                        let pos = set.iter().position(|e| e.0 == line);
                        prop_assert_eq!(hit, pos.is_some());
                        if let Some(p) = pos { set[p].1 = t; }
                    }
                    1 => {
                        let v = c.insert(line, false, false);
                        if let Some(p) = set.iter().position(|e| e.0 == line) {
                            set[p].1 = t;
                            prop_assert!(v.is_none());
                        } else if set.len() < 2 {
                            set.push((line, t));
                            prop_assert!(v.is_none());
                        } else {
                            let (p, _) = set.iter().enumerate().min_by_key(|(_, e)| e.1).unwrap();
                            let old = set[p].0;
                            prop_assert_eq!(v.map(|v| v.line), Some(old));
                            set[p] = (line, t);
                        }
                    }
                    _ => {
                        let v = c.invalidate(line);
                        let pos = set.iter().position(|e| e.0 == line);
                        prop_assert_eq!(v.is_some(), pos.is_some());
                        if let Some(p) = pos { set.remove(p); }
                    }
                }
                // The lookup tags mirror the ways: a valid way's line, else none.
                for ((w, &tag), &age) in c.sets.iter().zip(&c.tags).zip(&c.ages) {
                    prop_assert_eq!(tag, if w.valid { w.tag } else { NO_LINE });
                    // The replacement keys mirror the ways' validity.
                    prop_assert_eq!(age & VALID_BIT != 0, w.valid);
                    // The page filter never turns a present line away.
                    if w.valid {
                        let b = page_bit(w.tag);
                        prop_assert!(c.pages[(b / 64) as usize] & (1 << (b % 64)) != 0);
                        prop_assert!(c.contains(w.tag));
                    }
                }
            }
            prop_assert!(c.occupancy() <= 16);
        }
    }
}
