//! The queue of in-DRAM bulk jobs waiting for their banks at one controller.
//!
//! A job starts as soon as every bank it needs is free, considered in queue order: one pass over
//! the queue that starts each job whose banks are free at that point (a started job owns its
//! banks, so later jobs on them wait). A single RowClone copy of a gigabyte queues over 10^5
//! jobs, so the queue is indexed by the set of banks a job needs (a channel has a few dozen such
//! sets): a pass looks only at the oldest job of each set whose banks are all free, and runs only
//! when a bank was freed or a job arrived since the last pass. Starting `n` jobs then costs time
//! in proportion to `n` (times the number of bank sets), not to `n` times the queue length.
use std::collections::{BTreeMap, BTreeSet};

/// The banks (flat indices within the channel) a job needs: one, or two for a transfer.
pub type JobBanks = [Option<u32>; 2];

/// Waiting jobs of type `T`, each with its sequence number and banks.
pub struct JobQueue<T> {
    /// Queue position -> (sequence number, banks, job).
    jobs: BTreeMap<u64, (u64, JobBanks, T)>,
    /// Per set of banks, the queue positions of the waiting jobs that need exactly that set.
    by_set: BTreeMap<JobBanks, BTreeSet<u64>>,
    /// The next position at the front (counts down) and at the back (counts up).
    front: u64,
    back: u64,
    /// Something changed (a job arrived or a bank was freed) since the last pass.
    dirty: bool,
}

impl<T> JobQueue<T> {
    /// An empty queue.
    pub fn new() -> JobQueue<T> {
        JobQueue {
            jobs: BTreeMap::new(),
            by_set: BTreeMap::new(),
            front: u64::MAX / 2,
            back: u64::MAX / 2 + 1,
            dirty: false,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    fn insert(&mut self, pos: u64, seq: u64, banks: JobBanks, job: T) {
        self.by_set.entry(banks).or_default().insert(pos);
        self.jobs.insert(pos, (seq, banks, job));
        self.dirty = true;
    }

    /// Queues a job behind the others.
    pub fn push_back(&mut self, seq: u64, banks: JobBanks, job: T) {
        let pos = self.back;
        self.back += 1;
        self.insert(pos, seq, banks, job);
    }

    /// Queues a job ahead of the others (the second half of a job that just finished).
    pub fn push_front(&mut self, seq: u64, banks: JobBanks, job: T) {
        let pos = self.front;
        self.front -= 1;
        self.insert(pos, seq, banks, job);
    }

    /// A bank was freed: the next pass may start jobs.
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// Whether a pass could start anything (something changed since the last one); clears it.
    pub fn take_dirty(&mut self) -> bool {
        std::mem::replace(&mut self.dirty, false)
    }

    /// The first job in queue order whose banks are all free, removed from the queue. Calling
    /// this until it returns `None`, marking each returned job's banks busy in between, starts
    /// exactly the jobs one in-order pass over the whole queue would (starting a job never frees
    /// a bank, so a job passed over stays blocked for the rest of the pass).
    pub fn take_first_startable(
        &mut self,
        free: impl Fn(u32) -> bool,
    ) -> Option<(u64, JobBanks, T)> {
        let best = self
            .by_set
            .iter()
            .filter(|(banks, _)| banks.iter().flatten().all(|&b| free(b)))
            .filter_map(|(banks, positions)| positions.first().map(|&p| (p, *banks)))
            .min();
        let (pos, banks) = best?;
        if let Some(set) = self.by_set.get_mut(&banks) {
            set.remove(&pos);
            if set.is_empty() {
                self.by_set.remove(&banks);
            }
        }
        self.jobs.remove(&pos)
    }
}

impl<T> Default for JobQueue<T> {
    fn default() -> Self {
        JobQueue::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The definition: one pass in queue order, starting each job whose banks are free.
    fn one_pass(queue: &mut Vec<(u64, JobBanks)>, owned: &mut [bool]) -> Vec<u64> {
        let mut started = Vec::new();
        let mut i = 0;
        while i < queue.len() {
            let (id, banks) = queue[i];
            if banks.iter().flatten().all(|&b| !owned[b as usize]) {
                banks
                    .iter()
                    .flatten()
                    .for_each(|&b| owned[b as usize] = true);
                started.push(id);
                queue.remove(i);
            } else {
                i += 1;
            }
        }
        started
    }

    proptest! {
        /// The indexed queue starts the same jobs in the same order as the plain pass, through
        /// any interleaving of arrivals (at either end), bank releases and passes.
        #[test]
        fn same_jobs_as_one_pass_over_the_queue(
            steps in prop::collection::vec((0u8..4, 0u32..6, 0u32..6, any::<bool>()), 1..200),
        ) {
            const BANKS: usize = 6;
            let mut q: JobQueue<u64> = JobQueue::new();
            let mut plain: Vec<(u64, JobBanks)> = Vec::new();
            let (mut owned_q, mut owned_p) = ([false; BANKS], [false; BANKS]);
            let mut next_id = 0u64;
            for (what, a, b, two) in steps {
                match what {
                    0 | 1 => {
                        let banks = [Some(a), if two && a != b { Some(b) } else { None }];
                        if what == 0 {
                            q.push_back(next_id, banks, next_id);
                            plain.push((next_id, banks));
                        } else {
                            q.push_front(next_id, banks, next_id);
                            plain.insert(0, (next_id, banks));
                        }
                        next_id += 1;
                    }
                    2 => {
                        owned_q[a as usize] = false;
                        owned_p[a as usize] = false;
                        q.mark_dirty();
                    }
                    _ => {
                        let want = one_pass(&mut plain, &mut owned_p);
                        let mut got = Vec::new();
                        if q.take_dirty() {
                            while let Some((id, banks, _)) =
                                q.take_first_startable(|x| !owned_q[x as usize])
                            {
                                banks.iter().flatten().for_each(|&x| owned_q[x as usize] = true);
                                got.push(id);
                            }
                        }
                        prop_assert_eq!(got, want);
                        prop_assert_eq!(q.len(), plain.len());
                    }
                }
            }
        }
    }
}
