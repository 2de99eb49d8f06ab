//! A command's timing rules applied as whole rows where the CPU runs AVX-512: the bank, bank-group
//! and rank horizons of one row (one entry per command kind, [`NK`] of them) in chunks of eight,
//! each chunk raised by one masked maximum instead of one scalar step per rule.
//!
//! The rules a kind starts are the same list of (row, kind, latency) as the scalar loop's
//! (`ChannelDevices::raises`), laid out as one latency per row and kind with a mask of the kinds
//! a rule reaches: a lane outside the mask is neither read nor written, so every horizon ends as
//! the scalar loop leaves it (the later of what it was and the command's cycle plus the latency).
//! DDR5's ACT, RD and WR start 11 to 15 rules each, and the scalar loop took about a quarter of
//! the command path's samples.
use super::{Level, Raise};
use crate::spec::NK;

/// The rules a kind must start to take the row path: below it, the scalar loop's steps cost
/// less than a call and a masked step per chunk (DDR3's kinds start 2 to 7 rules, DDR5's ACT,
/// RD and WR 11 to 15).
pub(super) const ROW_MIN_RULES: usize = 8;

/// Lanes of a row: [`NK`] rounded up to whole chunks of 8.
const LANES: usize = NK.div_ceil(8) * 8;
/// Chunks of 8 in a row.
const CHUNKS: usize = LANES / 8;

/// The rules one kind starts, per row (bank, group, rank): the latency of each target kind (0
/// where none) and, per chunk of 8 kinds, the mask of the kinds a rule reaches.
#[derive(Debug, Clone)]
pub(super) struct RowRaises {
    lat: [[u64; LANES]; 3],
    mask: [[u8; CHUNKS]; 3],
}

impl RowRaises {
    /// The rows of `raises` (one kind's flat list).
    pub(super) fn of(raises: &[Raise]) -> RowRaises {
        let mut r = RowRaises {
            lat: [[0; LANES]; 3],
            mask: [[0; CHUNKS]; 3],
        };
        for x in raises {
            let (l, to) = (x.level as usize, x.to as usize);
            // Each (row, kind) once in a kind's list; the later bound if it were not.
            r.lat[l][to] = r.lat[l][to].max(x.lat);
            r.mask[l][to / 8] |= 1 << (to % 8);
        }
        r
    }
}

/// Raises `rows` (the issuing bank's, its group's and its rank's horizons, in [`Level`] order) by
/// `r` for a command at `at`: per kind a rule reaches, the later of the horizon and `at` plus the
/// latency.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) fn raise_rows(rows: [&mut [u64; NK]; 3], r: &RowRaises, at: u64) {
    use std::arch::x86_64::*;
    let at = _mm512_set1_epi64(at as i64);
    for (level, row) in [Level::Bank, Level::Group, Level::Rank]
        .into_iter()
        .zip(rows)
    {
        let l = level as usize;
        for c in 0..CHUNKS {
            let m = r.mask[l][c];
            if m == 0 {
                continue;
            }
            // SAFETY: lane `c * 8 + j` is read and written only where bit `j` of `m` is set,
            // which `RowRaises::of` sets only for a kind below NK: inside `row`. A masked-off
            // lane is not accessed. `lat` holds LANES entries, so its 8 lanes from `c * 8` are
            // inside it.
            unsafe {
                let p = row.as_mut_ptr().add(c * 8);
                let old = _mm512_maskz_loadu_epi64(m, p.cast());
                let lat = _mm512_loadu_si512(r.lat[l].as_ptr().add(c * 8).cast());
                let new = _mm512_max_epu64(old, _mm512_add_epi64(lat, at));
                _mm512_mask_storeu_epi64(p.cast(), m, new);
            }
        }
    }
}
