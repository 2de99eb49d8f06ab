//! FR-FCFS (Rixner et al., ISCA 2000): among commands that may issue now, row hits first, then the
//! oldest. Ties cannot happen: every request and job has a distinct arrival sequence number.
use super::{Candidate, Scheduler};

pub struct FrFcfs;

impl Scheduler for FrFcfs {
    fn name(&self) -> &'static str {
        "frfcfs"
    }
    fn offers_row_hits(&self) -> bool {
        true
    }
    fn key(&self, c: &Candidate, now: u64) -> Option<(u8, u64)> {
        (c.ready_at <= now).then_some((u8::from(!c.is_hit), c.seq))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn prefers_ready_hits_then_oldest() {
        let c = |seq, is_hit, ready_at| Candidate {
            seq,
            is_hit,
            ready_at,
        };
        let s = FrFcfs;
        assert_eq!(s.pick(&[c(1, false, 0), c(5, true, 0)], 0), Some(1));
        assert_eq!(s.pick(&[c(1, false, 0), c(5, true, 3)], 0), Some(0));
        assert_eq!(s.pick(&[c(7, false, 0), c(2, false, 0)], 0), Some(1));
        assert_eq!(s.pick(&[c(7, false, 4)], 0), None);
    }
}
