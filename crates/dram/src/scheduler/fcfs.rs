//! FCFS: strictly in arrival order. Only the oldest request's next command may issue; younger
//! requests wait even when their commands are ready.
use super::{Candidate, Scheduler};

pub struct Fcfs;

impl Scheduler for Fcfs {
    fn name(&self) -> &'static str {
        "fcfs"
    }
    fn offers_row_hits(&self) -> bool {
        false
    }
    fn considers_unready(&self) -> bool {
        true
    }
    fn key(&self, c: &Candidate, _now: u64) -> Option<(u8, u64)> {
        Some((0, c.seq))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn only_the_oldest_may_issue() {
        let c = |seq, ready_at| Candidate {
            seq,
            is_hit: false,
            ready_at,
        };
        assert_eq!(Fcfs.pick(&[c(3, 0), c(1, 5)], 0), None);
        assert_eq!(Fcfs.pick(&[c(3, 0), c(1, 5)], 5), Some(1));
    }
}
