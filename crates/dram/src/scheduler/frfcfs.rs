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
    fn pick(&self, cands: &[Candidate], now: u64) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, c) in cands.iter().enumerate() {
            if c.ready_at > now {
                continue;
            }
            best = match best {
                None => Some(i),
                Some(b) => {
                    let o = &cands[b];
                    if (c.is_hit, std::cmp::Reverse(c.seq)) > (o.is_hit, std::cmp::Reverse(o.seq)) {
                        Some(i)
                    } else {
                        Some(b)
                    }
                }
            };
        }
        best
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
