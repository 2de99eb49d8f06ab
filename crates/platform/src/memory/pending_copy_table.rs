//! The pending copy table (Zhao et al. section 5.6): the address ranges of copies an asynchronous
//! engine has not finished. Loads and stores that touch a source or destination in the table
//! stall until the copy's final notification removes it. The table has a fixed number of entries;
//! a copy that finds it full waits. RowClone uses the same structure to block its destination
//! until the in-memory operation is done (RowClone section 4.2.2).
/// A byte range [start, end).
pub type Range = (u64, u64);

#[derive(Debug, Clone)]
pub struct PendingCopyTable {
    capacity: usize,
    /// (copy id, [src_lo, src_hi), [dst_lo, dst_hi))
    entries: Vec<(u32, Option<Range>, Range)>,
    /// Accesses that found their line in the table.
    pub stalls: u64,
}

impl PendingCopyTable {
    pub fn new(capacity: usize) -> PendingCopyTable {
        PendingCopyTable {
            capacity: capacity.max(1),
            entries: Vec::new(),
            stalls: 0,
        }
    }

    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.capacity
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Records copy `id`; false when the table is full.
    pub fn insert(&mut self, id: u32, src: Option<(u64, u64)>, dst: (u64, u64)) -> bool {
        if self.is_full() {
            return false;
        }
        self.entries.push((id, src, dst));
        true
    }

    /// Removes copy `id` (its final notification).
    pub fn remove(&mut self, id: u32) {
        self.entries.retain(|e| e.0 != id);
    }

    /// Whether an access to the 64-byte line at `addr` touches a pending copy.
    pub fn conflicts(&mut self, addr: u64) -> bool {
        let lo = addr & !63;
        let hi = lo + 64;
        let hit = self.entries.iter().any(|(_, s, d)| {
            let over = |(a, b): (u64, u64)| lo < b && a < hi;
            over(*d) || s.is_some_and(over)
        });
        if hit {
            self.stalls += 1;
        }
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stalls_accesses_to_pending_ranges_until_removed() {
        let mut t = PendingCopyTable::new(2);
        assert!(t.insert(1, Some((0x1000, 0x1400)), (0x8000, 0x8400)));
        assert!(t.conflicts(0x1010));
        assert!(t.conflicts(0x83c0));
        assert!(!t.conflicts(0x8400));
        assert!(!t.conflicts(0x0fc0));
        assert!(t.insert(2, None, (0x9000, 0x9001)));
        assert!(t.conflicts(0x9000) && !t.conflicts(0x9040));
        assert!(!t.insert(3, None, (0, 64)), "full");
        t.remove(1);
        assert!(!t.conflicts(0x1010));
        assert!(t.insert(3, None, (0, 64)));
        assert_eq!(t.stalls, 3);
    }
}
