//! In-DRAM copy as real chips do it: whether a part copies rows inside the array at all, and how
//! reliably, from the real-chip studies.
//!
//! RowClone FPM and Multi-RowCopy on commodity chips are command sequences that violate the
//! nominal timing (ACT, PRE, ACT with tRAS/tRP cut short). Whether a chip obeys them is a property
//! of its design, not of the standard:
//! - ComputeDRAM (Gao, Tziantzioulis, Wentzlaff, MICRO 2019) shows row copy on unmodified DDR3
//!   modules and characterises modules of the major vendors: not every vendor's modules do it;
//! - SiMRA (Yuksel et al., "Simultaneous Many-Row Activation in Off-the-Shelf DRAM Chips", DSN
//!   2024; arXiv 2405.06081) characterises 120 DDR4 chips (18 modules) of two manufacturers: one
//!   row copied to up to 31 rows at once (Multi-RowCopy), success changed by data pattern by
//!   0.07 % on average and by temperature/voltage by at most 2.13 %, and the mechanism is not
//!   supported by every manufacturer's chips (the abstract and summary name Samsung's chips as the
//!   exception).
//!
//! A [`CopyChip`] carries that per-part data; `controller.copy` (see [`crate::config`]) picks
//! one and may set the per-row success probability. The model:
//! - unsupported part: the configuration is refused with an error naming the part, or
//!   (`on_unsupported = "baseline"`) every bulk operation is carried over the channel;
//! - unreliable part: each in-DRAM row copy (FPM: one row; Multi-RowCopy: every row of the group
//!   must succeed) succeeds with probability `success`, drawn from a seeded generator keyed by
//!   (seed, operation, job, attempt), so a run is deterministic. A failed attempt is detected
//!   and the copy is issued again until it succeeds; every attempt is a job the controller
//!   simulates, so the retries' time and energy are counted. The cost of detection itself (e.g.
//!   a verify read) is not modelled.
//! - `success = 1` (the default, the `ideal` chip) draws nothing and leaves every job as it was.
//!
//! Results on a standard no study measured (DDR5, LPDDR5, HBM, and any chip named `ideal`) are
//! labelled [`Provenance::Hypothetical`].
pub use crate::bulk::copy_chips::*;
use crate::bulk::split::{BulkMech, Split};
use crate::controller::{Job, JobKind};

/// SplitMix64: a small, well-mixed hash of the key, so each draw depends on its key alone.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform draw in [0, 1) for (seed, op, job, attempt, row).
fn draw(seed: u64, op: u32, job: u64, attempt: u32, row: u32) -> f64 {
    let k =
        mix(seed ^ mix(u64::from(op) ^ mix(job ^ mix(u64::from(attempt) << 32 | u64::from(row)))));
    (k >> 11) as f64 / (1u64 << 53) as f64
}

/// Whether row `row` of attempt `attempt` of job `job` of operation `op` is copied correctly.
pub fn row_succeeds(m: &CopyModel, op: u32, job: u64, attempt: u32, row: u32) -> bool {
    m.success >= 1.0 || draw(m.seed, op, job, attempt, row) < m.success
}

/// Rows an in-DRAM job writes by activation (FPM one, Multi-RowCopy its group less the source);
/// PSM moves lines through the standard TRANSFER path and is not drawn.
fn rows_written(kind: &JobKind) -> Option<u32> {
    match kind {
        JobKind::Fpm { .. } => Some(1),
        JobKind::Mrc { mask, .. } => Some(1u32 << mask.count_ones()).map(|n| n - 1),
        JobKind::Psm { .. } => None,
    }
}

/// Attempts until every one of `rows` rows succeeds in one attempt (at least 1).
pub fn attempts(m: &CopyModel, op: u32, job: u64, rows: u32) -> u32 {
    let mut a = 0u32;
    loop {
        if (0..rows).all(|r| row_succeeds(m, op, job, a, r)) {
            return a + 1;
        }
        a += 1;
    }
}

impl CopyModel {
    /// The mechanism a run uses: the configured one, or the channel when the part cannot copy.
    pub fn mech(&self, configured: BulkMech) -> BulkMech {
        if self.supported {
            configured
        } else {
            BulkMech::Baseline
        }
    }

    /// Adds, for every FPM or Multi-RowCopy job of `split` (operation `op`), one repeat per failed
    /// attempt, chained before what followed it. Returns the repeats added. Nothing changes when
    /// `success` is 1.
    pub fn apply(&self, split: &mut Split, op: u32) -> u64 {
        if self.success >= 1.0 {
            return 0;
        }
        let mut counter = 0u64;
        let mut added = 0u64;
        for (_, job) in split.jobs.iter_mut() {
            let j = std::mem::replace(
                job,
                Job {
                    op,
                    mech: job.mech,
                    kind: JobKind::Fpm {
                        bank: crate::device::BankId::default(),
                        src_row: 0,
                        dst_row: 0,
                        copied: false,
                    },
                    then: None,
                },
            );
            *job = self.expand(j, op, &mut counter, &mut added);
        }
        added
    }

    fn expand(&self, mut job: Job, op: u32, counter: &mut u64, added: &mut u64) -> Job {
        let then = job
            .then
            .take()
            .map(|t| Box::new(self.expand(*t, op, counter, added)));
        let n = match rows_written(&job.kind) {
            Some(rows) => {
                *counter += 1;
                attempts(self, op, *counter, rows)
            }
            None => 1,
        };
        *added += u64::from(n - 1);
        // The last attempt leads to what followed; each earlier (failed) one to the next attempt.
        let mut head = Job {
            then,
            ..job.clone()
        };
        for _ in 1..n {
            head = Job {
                then: Some(Box::new(head)),
                ..job.clone()
            };
        }
        head
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chips_are_found_and_unknown_names_listed() {
        assert!(chip("ideal").unwrap().supported);
        assert!(!chip("simra-ddr4-unsupported").unwrap().supported);
        assert!(chip("nope").unwrap_err().contains("simra-ddr4-supported"));
    }

    #[test]
    fn provenance_is_measured_only_on_the_studied_standard() {
        let s = chip("simra-ddr4-supported").unwrap();
        assert_eq!(provenance(s, "DDR4"), Provenance::MeasuredRealChip);
        for std in ["DDR5", "LPDDR5", "HBM3", "DDR3"] {
            assert_eq!(provenance(s, std), Provenance::Hypothetical);
        }
        assert_eq!(
            provenance(chip("ideal").unwrap(), "DDR4"),
            Provenance::Hypothetical
        );
    }

    #[test]
    fn draws_are_deterministic_and_seeded() {
        let m = CopyModel {
            success: 0.5,
            ..Default::default()
        };
        let a: Vec<bool> = (0..64).map(|r| row_succeeds(&m, 3, 7, 0, r)).collect();
        let b: Vec<bool> = (0..64).map(|r| row_succeeds(&m, 3, 7, 0, r)).collect();
        assert_eq!(a, b);
        let m2 = CopyModel { seed: 1, ..m };
        let c: Vec<bool> = (0..64).map(|r| row_succeeds(&m2, 3, 7, 0, r)).collect();
        assert_ne!(a, c);
    }
}
