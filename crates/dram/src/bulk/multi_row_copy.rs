//! Multi-RowCopy (Yuksel et al., "Simultaneous Many-Row Activation in Off-the-Shelf DRAM Chips",
//! DSN 2024): one source row copied into up to 31 rows of its subarray at once, measured on 120
//! real DDR4 chips. After the source row is activated and restored, a second activation with a
//! different row address raises a whole group of rows together; the sense amplifiers, still
//! holding the source row, drive its data into every row of the group.
//!
//! As modelled here (docs/dram.md, "Multi-RowCopy"):
//! - the group is the open row XOR every subset of the address bits where the two addresses
//!   differ: 2, 4, 8, 16 or 32 rows, all in one subarray (SiMRA activates up to 32);
//! - the command sequence is RowClone FPM's with the second activation raising the group: ACT
//!   (source), ACTM (the group) nRAS later, PRE nRAS after that, done nRP later: 2 nRAS + nRP for
//!   up to 31 copies, against 2 nRAS + nRP per copy by FPM. The real chips' sequence interrupts
//!   a precharge (ACT, PRE, ACT with tRP violated); its timing and success rate on DDR4 are
//!   SiMRA's, and on every other standard (no chip result exists) they are modelled, not measured;
//! - energy: each destination row costs one activation (as RowClone's ACTC), the source one ACT
//!   and the PRE one precharge; how the charge of 32 rows really adds up is not known.
//!
//! Initialisation: with `controller.bulk = "multi-row-copy"`, a zeroing that covers a whole
//! aligned block of 32 rows of a bank (the largest group that tiles the subarray) is one FPM from
//! the subarray's zero row into the block's first row and one Multi-RowCopy from that row into the
//! other 31, instead of 32 FPM copies.
//!
//! A bulk `Replicate { copies }` operation copies every row of its region into the other rows of
//! that row's aligned block of `copies + 1` rows (`row ^ 1 ..= row ^ copies`): the rows one
//! multi-row activation reaches. With `controller.bulk = "multi-row-copy"` each whole row is one
//! such job; with `"rowclone"` it is `copies` FPM copies, and with `"baseline"` `copies` copies of
//! its lines over the channel, so all three do the same work.
use crate::bulk::split::{subarray, temp_row, zero_row, BulkMech, RowKey, Split};
use crate::controller::{Job, JobKind, JobMech};
use crate::device::ChannelDevices;
use crate::mapper::{AddressMapper, Location};
use crate::request::BulkOp;
use crate::spec::Organization;
use std::collections::BTreeMap;

/// Rows one multi-row activation raises at most (SiMRA: 32, the source and 31 copies).
pub use crate::bulk::copy_chips::MAX_GROUP_ROWS;

/// The copies a `Replicate` may ask for: a group of 2^k rows less the source.
pub const COPIES: [u32; 5] = [1, 3, 7, 15, 31];

/// The rows a multi-row activation raises when `second` is activated while `open` is open: the
/// open row XOR every subset of the bits where the two differ, in increasing order. An error names
/// what is wrong (no differing bit, more than 32 rows, rows across a subarray boundary).
pub fn group(org: &Organization, open: u32, second: u32) -> Result<Vec<u32>, String> {
    let mask = open ^ second;
    let n = 1u64 << mask.count_ones();
    if mask == 0 || n > u64::from(MAX_GROUP_ROWS) {
        return Err(format!(
            "rows {open} and {second} select {n} rows; a multi-row activation raises 2 to {MAX_GROUP_ROWS}"
        ));
    }
    let (lo, hi) = (open & !mask, open | mask);
    if subarray(org, lo) != subarray(org, hi) {
        return Err(format!(
            "rows {open} and {second} select rows {lo} to {hi}, across subarrays of {} rows",
            org.subarray_rows
        ));
    }
    // Every subset of the mask's bits (the standard subset walk).
    let mut rows = Vec::with_capacity(n as usize);
    let mut s = 0u32;
    loop {
        rows.push(lo | s);
        if s == mask {
            break;
        }
        s = (s.wrapping_sub(mask)) & mask;
    }
    rows.sort_unstable();
    Ok(rows)
}

/// Checks a `Replicate` operation's copies against the organisation: one of [`COPIES`], and its
/// aligned block of `copies + 1` rows inside one subarray.
pub fn check_copies(org: &Organization, copies: u32) -> Result<(), String> {
    if !COPIES.contains(&copies) {
        return Err(format!(
            "replicate copies {copies} must be one of {COPIES:?} (a multi-row group of 2 to {MAX_GROUP_ROWS} rows less the source)"
        ));
    }
    if !org.subarray_rows.is_multiple_of(copies + 1) {
        return Err(format!(
            "replicate copies {copies}: blocks of {} rows do not tile subarrays of {} rows",
            copies + 1,
            org.subarray_rows
        ));
    }
    Ok(())
}

/// Splits a `Replicate { copies }` of `op`'s region by `mech` (see the module docs).
pub fn split(
    op: &BulkOp,
    copies: u32,
    op_idx: u32,
    mapper: &dyn AddressMapper,
    org: &Organization,
    dev: &ChannelDevices,
    mech: BulkMech,
) -> Split {
    let line = org.line_bytes();
    let mut out = Split::default();
    let first = op.dst / line * line;
    let n = (op.dst + op.bytes).div_ceil(line) - op.dst / line;
    // Source lines by row: (channel, rank, bank group, bank, row) -> (column, address).
    let mut rows: BTreeMap<RowKey, Vec<(u32, u64)>> = BTreeMap::new();
    for i in 0..n {
        let a = first + i * line;
        let l = mapper.map(a);
        rows.entry((l.channel, l.rank, l.bank_group, l.bank, l.row))
            .or_default()
            .push((l.column, a));
    }
    let lpr = org.lines_per_row() as usize;
    for ((ch, rank, bg, b, row), lines) in rows {
        let bytes = lines.len() as u64 * line * u64::from(copies);
        let whole = lines.len() == lpr;
        let bank = dev.bank_id(rank, bg, b);
        let job = |kind| Job {
            op: op_idx,
            mech: JobMech::Fpm,
            kind,
            then: None,
        };
        match (mech, whole) {
            (BulkMech::MultiRowCopy, true) => {
                out.jobs.push((
                    ch,
                    Job {
                        mech: JobMech::Mrc,
                        ..job(JobKind::Mrc {
                            bank,
                            src_row: row,
                            mask: copies,
                            copied: false,
                        })
                    },
                ));
                out.bytes.mrc += bytes;
            }
            (BulkMech::RowClone, true) => {
                for s in 1..=copies {
                    out.jobs.push((
                        ch,
                        job(JobKind::Fpm {
                            bank,
                            src_row: row,
                            dst_row: row ^ s,
                            copied: false,
                        }),
                    ));
                }
                out.bytes.fpm += bytes;
            }
            _ => {
                for &(column, a) in &lines {
                    for s in 1..=copies {
                        let d = mapper.unmap(&Location {
                            channel: ch,
                            rank,
                            bank_group: bg,
                            bank: b,
                            row: row ^ s,
                            column,
                        });
                        out.baseline_lines.push((Some(a), d));
                    }
                }
                out.bytes.baseline += bytes;
            }
        }
    }
    out
}

/// Rows of a zeroing block: the largest group (at most 32 rows) that tiles the subarray.
fn block_rows(org: &Organization) -> u32 {
    let mut k = MAX_GROUP_ROWS;
    while k > 1 && !org.subarray_rows.is_multiple_of(k) {
        k /= 2;
    }
    k
}

/// Initialisation by Multi-RowCopy: of `groups` (a zeroing's lines by row), every aligned block of
/// rows zeroed whole (every line of every row; holding neither its subarray's zero row nor the
/// bank's temporary row) becomes an FPM from the zero row into the block's first row followed by
/// an MRC from that row into the rest, and its rows leave `groups`.
pub fn zero_blocks(
    groups: &mut BTreeMap<RowKey, Vec<u32>>,
    op_idx: u32,
    org: &Organization,
    dev: &ChannelDevices,
    out: &mut Split,
) {
    let k = block_rows(org);
    if k < 2 {
        return;
    }
    let lpr = org.lines_per_row() as usize;
    let mut blocks: BTreeMap<RowKey, u32> = BTreeMap::new();
    for (&(ch, rank, bg, b, row), cols) in groups.iter() {
        if cols.len() == lpr {
            *blocks.entry((ch, rank, bg, b, row / k)).or_default() += 1;
        }
    }
    let row_bytes = lpr as u64 * org.line_bytes();
    for ((ch, rank, bg, b, blk), whole) in blocks {
        let first = blk * k;
        let rows = first..first + k;
        let zr = zero_row(org, first);
        if whole != k || rows.contains(&zr) || rows.contains(&temp_row(org)) {
            continue;
        }
        for r in rows {
            groups.remove(&(ch, rank, bg, b, r));
        }
        let bank = dev.bank_id(rank, bg, b);
        let mrc = Job {
            op: op_idx,
            mech: JobMech::Mrc,
            kind: JobKind::Mrc {
                bank,
                src_row: first,
                mask: k - 1,
                copied: false,
            },
            then: None,
        };
        out.jobs.push((
            ch,
            Job {
                op: op_idx,
                mech: JobMech::Fpm,
                kind: JobKind::Fpm {
                    bank,
                    src_row: zr,
                    dst_row: first,
                    copied: false,
                },
                then: Some(Box::new(mrc)),
            },
        ));
        out.bytes.fpm += row_bytes;
        out.bytes.mrc += row_bytes * u64::from(k - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn org() -> Organization {
        Config::preset("rowclone-ddr3-1066")
            .unwrap()
            .resolve("t")
            .unwrap()
            .org
    }

    #[test]
    fn groups_are_the_subsets_of_the_differing_bits() {
        let o = org();
        assert_eq!(group(&o, 5, 4).unwrap(), vec![4, 5]);
        assert_eq!(group(&o, 0, 3).unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(group(&o, 2, 0b1_0011).unwrap(), vec![2, 3, 18, 19]);
        assert_eq!(group(&o, 32, 63).unwrap(), (32..64).collect::<Vec<_>>());
        // 64 rows, no differing bit, or across a subarray boundary (512 rows) are refused.
        assert!(group(&o, 0, 63).unwrap_err().contains("64 rows"));
        assert!(group(&o, 7, 7).is_err());
        assert!(group(&o, 500, 500 ^ 512)
            .unwrap_err()
            .contains("across subarrays"));
    }

    #[test]
    fn zeroing_whole_blocks_is_one_fpm_and_one_mrc_per_bank() {
        // 32 rows of every bank zeroed (rows 0-31; RoRaBaChCo puts the row bits on top): with
        // Multi-RowCopy each bank does FPM (zero row -> row 0) then MRC (row 0 -> rows 1-31);
        // with RowClone 32 FPM copies per bank. The checker passes both command logs.
        use crate::checker::Checker;
        use crate::command::log_header;
        use crate::command::CommandRecord;
        use crate::request::{BulkKind, TraceItem};
        use crate::system::{simulate, RunOptions};
        let mut latency = Vec::new();
        for bulk in ["rowclone", "multi-row-copy"] {
            let mut c = Config::preset("rowclone-ddr3-1066").unwrap();
            c.controller.bulk = bulk.into();
            c.controller.refresh = "none".into();
            let spec = c.resolve("t").unwrap();
            let o = &spec.org;
            let bytes = 32 * o.row_bytes() * u64::from(o.banks_per_rank() * o.ranks * o.channels);
            let op = BulkOp {
                kind: BulkKind::Init { value: 0 },
                dst: 0,
                bytes,
                arrival: Some(0),
            };
            let mut log: Vec<CommandRecord> = Vec::new();
            let s = simulate(
                &c,
                std::iter::once(Ok(TraceItem::Bulk(op))),
                RunOptions {
                    command_log: Some(&mut log),
                    ..Default::default()
                },
            )
            .unwrap();
            let mut ck = Checker::new(&log_header(&c, &spec)).unwrap();
            for r in &log {
                ck.check(r).unwrap();
            }
            assert!(ck.finish().ok);
            let b = &s.bulk.bytes;
            if bulk == "rowclone" {
                assert_eq!((b.fpm, b.mrc), (bytes, 0));
            } else {
                assert_eq!((b.fpm, b.mrc), (bytes / 32, bytes / 32 * 31));
                let actm = log
                    .iter()
                    .filter(|r| r.kind == crate::command::CommandKind::Actm);
                assert_eq!(
                    actm.count() as u32,
                    o.banks_per_rank() * o.ranks * o.channels
                );
            }
            latency.push(s.bulk.latency.max_cycles);
        }
        // Per bank: 32 FPM copies against one FPM and one MRC (the banks work in parallel).
        assert!(latency[1] * 8 < latency[0], "{latency:?}");
    }

    #[test]
    fn copies_must_be_a_group_less_its_source() {
        let o = org();
        for c in COPIES {
            check_copies(&o, c).unwrap();
        }
        for c in [0, 2, 5, 30, 32, 63] {
            assert!(check_copies(&o, c).is_err(), "{c}");
        }
        let mut small = o.clone();
        small.subarray_rows = 8;
        assert!(check_copies(&small, 15)
            .unwrap_err()
            .contains("subarrays of 8"));
    }
}
