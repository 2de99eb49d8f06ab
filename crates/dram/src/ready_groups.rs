//! The pass after a command on channels of 9 to 64 banks, by groups of banks that share a rank
//! horizon, instead of visiting every bank with a candidate.
//!
//! A bank with a candidate is ready at the later of its local part (its own bank and bank-group
//! horizons for the candidate's kind) and its group's shared part (its rank's horizon for that
//! kind; a group is a rank-and-kind index, as in [`crate::ready_scan`]). Within a group, every
//! bank whose local part is at or before the shared part is ready at the same cycle, so only the
//! smallest key among them matters; the others are ready at their own local part.
//!
//! Both the shared part and the cycle a pass starts from only rise, so a bank once found locally
//! ready stays so until its local part changes, which happens only when its candidate is
//! recomputed or a command raises its bank group's horizons; the owner then removes the bank and
//! inserts it again. Each group therefore keeps its locally ready banks (with their smallest key)
//! and its waiting ones, and a pass looks only at the waiting banks (moving those that became
//! ready) and at one word per group: on DDR5's 32 banks under random traffic about 7 banks and 3
//! groups where a pass over the banks with a candidate visits about 20.
//!
//! The answer is the pass's over the banks ([`crate::ready_scan::min_word_active`]) before its
//! wait is capped: the earliest ready cycle, and the smallest key among the banks ready then.

/// Per group, its locally ready and waiting banks (bank `b` is bit `b`) and the smallest key
/// among the ready ones; and one bit per group that has a member.
#[derive(Debug, Clone)]
pub struct ReadyGroups {
    ready: Vec<u64>,
    waiting: Vec<u64>,
    best: Vec<u64>,
    any: Vec<u64>,
}

/// The most banks a channel may have to be kept in groups (one mask word per group).
pub const MAX_BANKS: usize = 64;

impl ReadyGroups {
    /// Empty groups, `groups` of them (ranks times command kinds).
    pub fn new(groups: usize) -> ReadyGroups {
        ReadyGroups {
            ready: vec![0; groups],
            waiting: vec![0; groups],
            best: vec![u64::MAX; groups],
            any: vec![0; groups.div_ceil(64)],
        }
    }

    /// Bank `flat` (below [`MAX_BANKS`]) joins group `g` as waiting: the next pass compares its
    /// local part with the group's horizon.
    #[inline]
    pub fn insert(&mut self, g: usize, flat: usize) {
        self.waiting[g] |= 1 << (flat % MAX_BANKS);
        self.any[g / 64] |= 1 << (g % 64);
    }

    /// Bank `flat` leaves group `g`; `key` is every bank's key (the bank's own still the one it
    /// joined with).
    #[inline]
    pub fn remove(&mut self, g: usize, flat: usize, key: &[u64]) {
        let bit = 1u64 << (flat % MAX_BANKS);
        if self.ready[g] & bit != 0 {
            self.ready[g] &= !bit;
            if self.best[g] == key[flat] {
                self.best[g] = min_key(self.ready[g], key);
            }
        } else {
            self.waiting[g] &= !bit;
        }
        if self.ready[g] | self.waiting[g] == 0 {
            self.any[g / 64] &= !(1 << (g % 64));
        }
    }

    /// The earliest cycle, no earlier than `from`, at which a member of any group is ready (the
    /// later of its local part `local[b]` and its group's horizon `horizons[g]`), and the
    /// smallest key among the members ready then: `(u64::MAX, u64::MAX)` when no group has a
    /// member. `from` and every horizon must not fall from one call to the next, except where
    /// the banks whose local part changed were removed and inserted again.
    #[inline]
    pub fn earliest(
        &mut self,
        local: &[u64],
        key: &[u64],
        horizons: &[u64],
        from: u64,
    ) -> (u64, u64) {
        let mut best = (u64::MAX, u64::MAX);
        for (w, &bits) in self.any.iter().enumerate() {
            let mut gs = bits;
            while gs != 0 {
                let g = w * 64 + gs.trailing_zeros() as usize;
                gs &= gs - 1;
                let h = horizons.get(g).copied().unwrap_or(u64::MAX).max(from);
                // The waiting banks: those now locally ready move; the rest are ready at their
                // own local part.
                let mut m = self.waiting[g];
                let mut late = (u64::MAX, u64::MAX);
                while m != 0 {
                    let b = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let (l, k) = (local[b], key[b]);
                    if l <= h {
                        self.waiting[g] &= !(1 << b);
                        self.ready[g] |= 1 << b;
                        self.best[g] = self.best[g].min(k);
                    } else {
                        late = late.min((l, k));
                    }
                }
                let here = if self.ready[g] != 0 {
                    (h, self.best[g])
                } else {
                    late
                };
                best = best.min(here);
            }
        }
        best
    }
}

/// The smallest key among the banks in `banks` (`u64::MAX`: none).
#[inline]
fn min_key(banks: u64, key: &[u64]) -> u64 {
    let mut m = banks;
    let mut k = u64::MAX;
    while m != 0 {
        k = k.min(key[m.trailing_zeros() as usize]);
        m &= m - 1;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a plain reading of the contract, over a random history of inserts, removals,
    /// rising horizons and local parts changed with a removal and an insert.
    #[test]
    fn earliest_is_the_earliest_then_smallest_key() {
        let mut x = 0x853c_49e6_748f_ea9bu64;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for case in 0..300 {
            let n = 9 + rnd(56) as usize;
            let groups = 1 + rnd(70) as usize;
            let mut rg = ReadyGroups::new(groups);
            let mut horizons: Vec<u64> = (0..groups).map(|_| rnd(50)).collect();
            let mut local = vec![u64::MAX; n];
            let mut key = vec![u64::MAX; n];
            let mut member: Vec<Option<usize>> = vec![None; n];
            let mut from = 0;
            let mut seq = 0;
            for _ in 0..200 {
                // Change a few banks: leave, or (re)join with a new local part and key.
                for _ in 0..1 + rnd(4) {
                    let b = rnd(n as u64) as usize;
                    if let Some(g) = member[b].take() {
                        rg.remove(g, b, &key);
                    }
                    if rnd(4) != 0 {
                        let g = rnd(groups as u64) as usize;
                        seq += 1 + rnd(3);
                        local[b] = if rnd(20) == 0 {
                            u64::MAX
                        } else {
                            from + rnd(60)
                        };
                        key[b] = (rnd(2) << 60) | (seq << 8) | b as u64;
                        member[b] = Some(g);
                        rg.insert(g, b);
                    } else {
                        local[b] = u64::MAX;
                        key[b] = u64::MAX;
                    }
                }
                for h in horizons.iter_mut() {
                    *h += rnd(3) * rnd(10);
                }
                from += rnd(6);
                let want = (0..n)
                    .filter_map(|b| {
                        member[b].map(|g| (local[b].max(horizons[g]).max(from), key[b]))
                    })
                    .min()
                    .unwrap_or((u64::MAX, u64::MAX));
                assert_eq!(
                    rg.earliest(&local, &key, &horizons, from),
                    want,
                    "case {case}"
                );
            }
        }
    }
}
