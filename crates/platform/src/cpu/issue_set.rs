//! The issue scan's set: the window entries a core's issue stage looks at, one bit per entry by
//! sequence number. The window holds a bounded run of consecutive sequence numbers (from the
//! head's), so a bit per sequence number modulo a power of two at least the window's length
//! names each entry once; adding, removing and finding the next entry in sequence order are a
//! few word operations, where a sorted list of sequence numbers shifted its elements on every
//! insertion out of order and removal from its middle.

/// A set of sequence numbers all within a window of `capacity()` consecutive ones.
#[derive(Debug, Clone)]
pub struct IssueSet {
    words: Vec<u64>,
    /// Bits in all, a power of two and a multiple of 64, minus one.
    mask: u64,
    len: usize,
}

impl Default for IssueSet {
    fn default() -> Self {
        IssueSet::new()
    }
}

impl IssueSet {
    /// An empty set for a window of up to 256 entries (it grows with [`IssueSet::reserve`]).
    pub fn new() -> IssueSet {
        IssueSet {
            words: vec![0; 4],
            mask: 255,
            len: 0,
        }
    }

    /// How many consecutive sequence numbers the set can tell apart.
    pub fn capacity(&self) -> u64 {
        self.mask + 1
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Makes room for sequence numbers from `first` to `first + span - 1` (every member must lie
    /// in that range).
    #[inline]
    pub fn reserve(&mut self, first: u64, span: u64) {
        if span > self.capacity() {
            self.grow(first, span);
        }
    }

    #[cold]
    fn grow(&mut self, first: u64, span: u64) {
        let cap = span.next_power_of_two().max(64);
        let mut grown = IssueSet {
            words: vec![0; (cap / 64) as usize],
            mask: cap - 1,
            len: 0,
        };
        let end = first + self.capacity();
        let mut s = first;
        while let Some(x) = self.next_from(s, end) {
            grown.insert(x);
            s = x + 1;
        }
        *self = grown;
    }

    #[inline]
    fn at(&self, seq: u64) -> (usize, u64) {
        let slot = seq & self.mask;
        ((slot >> 6) as usize, 1u64 << (slot & 63))
    }

    #[inline]
    pub fn contains(&self, seq: u64) -> bool {
        let (w, b) = self.at(seq);
        self.words[w] & b != 0
    }

    #[inline]
    pub fn insert(&mut self, seq: u64) {
        let (w, b) = self.at(seq);
        if self.words[w] & b == 0 {
            self.words[w] |= b;
            self.len += 1;
        }
    }

    #[inline]
    pub fn remove(&mut self, seq: u64) {
        let (w, b) = self.at(seq);
        if self.words[w] & b != 0 {
            self.words[w] &= !b;
            self.len -= 1;
        }
    }

    /// The smallest member at least `from` and below `end` (`end - from` at most the capacity).
    #[inline]
    pub fn next_from(&self, from: u64, end: u64) -> Option<u64> {
        let mut s = from;
        while s < end {
            let slot = s & self.mask;
            let bits = self.words[(slot >> 6) as usize] >> (slot & 63);
            if bits != 0 {
                let x = s + u64::from(bits.trailing_zeros());
                return (x < end).then_some(x);
            }
            // On to the next word: sequence numbers and slots cross word boundaries together.
            s = (s | 63) + 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// Against a sorted set, over a sliding window of sequence numbers: membership, length and
        /// the in-order walk agree after any insertions and removals, through growth.
        #[test]
        fn matches_a_sorted_set(ops in prop::collection::vec((0u8..4, 0u64..600), 1..400)) {
            let mut s = IssueSet::new();
            let mut r = BTreeSet::new();
            let mut head = 1_000u64;
            let mut span = 1u64;
            for (op, x) in ops {
                match op {
                    0 | 1 => {
                        let seq = head + x % span;
                        s.insert(seq);
                        r.insert(seq);
                    }
                    2 => {
                        let seq = head + x % span;
                        s.remove(seq);
                        r.remove(&seq);
                    }
                    _ => {
                        // The window moves: the head leaves (its entry left the set first) and
                        // the window may grow past the capacity.
                        if r.first() == Some(&head) {
                            s.remove(head);
                            r.remove(&head);
                        }
                        head += 1;
                        span = (span + x % 7).min(600);
                        s.reserve(head, span);
                    }
                }
                r.retain(|&q| q >= head && q < head + span);
                prop_assert_eq!(s.len(), r.len());
                let mut walk = Vec::new();
                let mut at = head;
                while let Some(q) = s.next_from(at, head + span) {
                    walk.push(q);
                    at = q + 1;
                }
                prop_assert_eq!(walk, r.iter().copied().collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn walks_across_the_wrap_in_sequence_order() {
        let mut s = IssueSet::new();
        for q in [250u64, 255, 256, 300, 470] {
            s.insert(q);
        }
        assert!(s.contains(256) && !s.contains(257));
        assert_eq!(s.next_from(251, 460), Some(255));
        assert_eq!(s.next_from(301, 460), None);
        assert_eq!(s.next_from(301, 471), Some(470));
        s.remove(255);
        assert_eq!(s.next_from(251, 460), Some(256));
        assert_eq!(s.len(), 4);
    }
}
