//! One bank's queue of reads or writes, in arrival order, with a count of its requests per row
//! bucket, so that the row-hit search of a bank's candidate (the oldest request for the open row)
//! mostly finds "none" without reading the queue.
//!
//! The search runs after every column command (the bank's next candidate) and at arrivals that
//! may change a candidate. On random traffic it nearly never finds a hit, and walking the queue to
//! learn that ends in a branch whose outcome depends on the queue's length, which the CPU
//! mispredicts: the walk was the costliest part of recomputing a candidate. The counts are a
//! counting filter over a hash of the row: a bucket at zero proves that no queued request is for
//! any row of that bucket; a bucket above zero sends the search to the queue, which gives the
//! same answer as before. The answers are therefore identical with or without the filter.
use std::collections::VecDeque;

/// Buckets of the filter (a power of two). With a few requests per bank, a row that has none
/// queued shares a bucket with one that does about once in `BUCKETS / queued` searches.
const BUCKETS: usize = 64;

/// A bank's reads or writes as (row, slab index), oldest first, with the per-bucket counts.
#[derive(Debug, Clone)]
pub(super) struct BankQueue {
    /// The row sits inline so that the scan for a row hit touches one small array. Double-ended,
    /// so that serving the oldest request (what FR-FCFS does whenever a bank has no row hit)
    /// takes it off the front without shifting the rest.
    q: VecDeque<(u32, u32)>,
    /// Per bucket of [`bucket`], the queued requests whose row falls in it.
    rows: [u32; BUCKETS],
}

/// The filter's bucket of `row`: a multiplicative hash, so that rows a power of two apart (a
/// strided pattern) spread over the buckets.
#[inline(always)]
fn bucket(row: u32) -> usize {
    (row.wrapping_mul(0x9e37_79b1) >> (32 - BUCKETS.trailing_zeros())) as usize
}

impl BankQueue {
    pub(super) fn new() -> BankQueue {
        BankQueue {
            q: VecDeque::new(),
            rows: [0; BUCKETS],
        }
    }

    /// Queues request `i` (slab index) for `row` at the back.
    #[inline(always)]
    pub(super) fn push_back(&mut self, row: u32, i: u32) {
        self.q.push_back((row, i));
        self.rows[bucket(row)] += 1;
    }

    /// Takes request `i` out of the queue, wherever it is (nothing when it is not queued).
    #[inline(always)]
    pub(super) fn remove(&mut self, i: u32) {
        let taken = if self.q.front().is_some_and(|&(_, j)| j == i) {
            self.q.pop_front()
        } else if let Some(pos) = self.q.iter().position(|&(_, j)| j == i) {
            self.q.remove(pos)
        } else {
            None
        };
        if let Some((row, _)) = taken {
            self.rows[bucket(row)] -= 1;
        }
    }

    /// The oldest request, as (row, slab index).
    #[inline(always)]
    pub(super) fn front(&self) -> Option<&(u32, u32)> {
        self.q.front()
    }

    /// The requests, oldest first, as (row, slab index).
    #[inline(always)]
    pub(super) fn iter(&self) -> std::collections::vec_deque::Iter<'_, (u32, u32)> {
        self.q.iter()
    }

    /// Whether a request for `row` may be queued: false proves none is.
    #[inline(always)]
    pub(super) fn may_hold(&self, row: u32) -> bool {
        self.rows[bucket(row)] != 0
    }

    /// The slab index of the oldest queued request for `row`: the row-hit search of a bank's
    /// candidate. Answered from the counts when the row's bucket is empty; otherwise two plain
    /// loops over the queue's halves (the double-ended queue's own iterator costs about twice the
    /// instructions per entry).
    #[inline(always)]
    pub(super) fn first_on_row(&self, row: u32) -> Option<u32> {
        if !self.may_hold(row) {
            return None;
        }
        let (front, back) = self.q.as_slices();
        for &(r, i) in front {
            if r == row {
                return Some(i);
            }
        }
        for &(r, i) in back {
            if r == row {
                return Some(i);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The filtered search against a plain one over random pushes and removals, and the counts
    /// against the queue's rows after every step.
    #[test]
    fn first_on_row_matches_a_plain_search() {
        let mut g = crate::generator::Xoshiro256StarStar::seed_from_u64(0x2545_f491_4f6c_dd1d);
        let mut rnd = |m: u64| g.below(m);
        let mut q = BankQueue::new();
        let mut next = 0u32;
        for step in 0..20_000 {
            // Rows from a small set (hits and shared buckets) and from a large one.
            let row = |r: u64| {
                if r.is_multiple_of(2) {
                    r as u32 % 5
                } else {
                    r as u32 * 64
                }
            };
            if q.q.len() < 40 && rnd(3) != 0 {
                q.push_back(row(rnd(1 << 20)), next);
                next += 1;
            } else if !q.q.is_empty() {
                let pick = if rnd(2) == 0 {
                    0
                } else {
                    rnd(q.q.len() as u64) as usize
                };
                let i = q.q[pick].1;
                q.remove(i);
            }
            q.remove(u32::MAX);
            let mut counts = [0u32; BUCKETS];
            for &(r, _) in &q.q {
                counts[bucket(r)] += 1;
            }
            assert_eq!(counts, q.rows, "step {step}");
            for probe in [row(rnd(1 << 20)), row(rnd(1 << 20)), rnd(5) as u32] {
                let plain = q.q.iter().find(|e| e.0 == probe).map(|e| e.1);
                assert_eq!(q.first_on_row(probe), plain, "step {step}");
            }
        }
    }
}
