//! RowClone (Seshadri et al., MICRO 2013): how a bulk copy or zeroing is split among in-DRAM
//! mechanisms (section 4.2.1) and turned into controller jobs.
//!
//! Lines are grouped by (source row, destination row). A group that covers a whole row with
//! source and destination in one subarray goes by Fast Parallel Mode; lines between two banks of
//! one rank go by Pipelined Serial Mode (one TRANSFER per line); lines between subarrays of one
//! bank go by PSM twice through a reserved temporary row of another bank; everything else (other
//! channel or rank, unaligned, non-zero initialisation) is left to the channel (baseline).
//! Zeroing copies from the reserved zero row of the destination's subarray (FPM) or, for partial
//! rows, from the zero row of the same subarray index in another bank (PSM).
use crate::bulk::multi_row_copy;
use crate::bulk::split::{baseline_lines, subarray, temp_row, zero_row, BulkMech, RowKey, Split};
use crate::controller::{Job, JobKind, JobMech};
use crate::device::ChannelDevices;
use crate::mapper::{AddressMapper, Location};
use crate::request::{BulkKind, BulkOp};
use crate::spec::Organization;
use std::collections::BTreeMap;

/// Lines of one (source row, destination row) pair: (src column, dst column, src addr, dst addr).
type RowPairs = BTreeMap<(RowKey, RowKey), Vec<(u32, u32, u64, u64)>>;

fn key(l: &Location) -> RowKey {
    (l.channel, l.rank, l.bank_group, l.bank, l.row)
}

/// Splits `op` (operation index `op_idx`) for RowClone.
pub fn split(
    op: &BulkOp,
    op_idx: u32,
    mapper: &dyn AddressMapper,
    org: &Organization,
    dev: &ChannelDevices,
    mech: BulkMech,
) -> Split {
    let line = org.line_bytes();
    let mut out = Split::default();
    let aligned = op.dst.is_multiple_of(line)
        && op.bytes.is_multiple_of(line)
        && matches!(op.kind, BulkKind::Init { value: 0 } | BulkKind::Copy { .. })
        && match op.kind {
            BulkKind::Copy { src } => src % line == 0,
            BulkKind::Init { .. } | BulkKind::Replicate { .. } => true,
        };
    if !aligned {
        out.baseline_lines = baseline_lines(op, line);
        out.bytes.baseline = out.baseline_lines.len() as u64 * line;
        return out;
    }
    let n = op.bytes / line;
    let lpr = org.lines_per_row() as usize;
    match op.kind {
        BulkKind::Copy { src } => {
            // (src row, dst row) -> [(src col, dst col, src addr, dst addr)]
            let mut groups: RowPairs = BTreeMap::new();
            for i in 0..n {
                let (sa, da) = (src + i * line, op.dst + i * line);
                let (s, d) = (mapper.map(sa), mapper.map(da));
                groups
                    .entry((key(&s), key(&d)))
                    .or_default()
                    .push((s.column, d.column, sa, da));
            }
            for ((s, d), lines) in groups {
                let bytes = lines.len() as u64 * line;
                let (sch, srank, sbg, sb, srow) = s;
                let (dch, drank, dbg, db, drow) = d;
                if sch != dch || srank != drank {
                    out.baseline_lines
                        .extend(lines.iter().map(|l| (Some(l.2), l.3)));
                    out.bytes.baseline += bytes;
                    continue;
                }
                let sbank = dev.bank_id(srank, sbg, sb);
                let dbank = dev.bank_id(drank, dbg, db);
                let cols: Vec<(u32, u32)> = lines.iter().map(|l| (l.0, l.1)).collect();
                if sbank.flat != dbank.flat {
                    out.jobs.push((
                        sch,
                        Job {
                            op: op_idx,
                            mech: JobMech::PsmInter,
                            kind: JobKind::Psm {
                                src: sbank,
                                src_row: srow,
                                dst: dbank,
                                dst_row: drow,
                                cols,
                                next: 0,
                            },
                            then: None,
                        },
                    ));
                    out.bytes.psm_inter += bytes;
                } else if dev.banks_per_rank() < 2 {
                    out.baseline_lines
                        .extend(lines.iter().map(|l| (Some(l.2), l.3)));
                    out.bytes.baseline += bytes;
                } else if srow == drow && lines.iter().all(|l| l.0 == l.1) {
                    // A copy of lines onto themselves moves nothing.
                    continue;
                } else if srow != drow
                    && subarray(org, srow) == subarray(org, drow)
                    && lines.len() == lpr
                    && lines.iter().all(|l| l.0 == l.1)
                {
                    out.jobs.push((
                        sch,
                        Job {
                            op: op_idx,
                            mech: JobMech::Fpm,
                            kind: JobKind::Fpm {
                                bank: sbank,
                                src_row: srow,
                                dst_row: drow,
                                copied: false,
                            },
                            then: None,
                        },
                    ));
                    out.bytes.fpm += bytes;
                } else {
                    let tmp_bank = dev.bank_from_flat(other_bank(sbank.flat, dev, srank));
                    let tmp = temp_row(org);
                    let back: Vec<(u32, u32)> = cols.iter().map(|&(_, dc)| (dc, dc)).collect();
                    let fwd: Vec<(u32, u32)> = cols.iter().map(|&(sc, dc)| (sc, dc)).collect();
                    let second = Job {
                        op: op_idx,
                        mech: JobMech::PsmIntra,
                        kind: JobKind::Psm {
                            src: tmp_bank,
                            src_row: tmp,
                            dst: dbank,
                            dst_row: drow,
                            cols: back,
                            next: 0,
                        },
                        then: None,
                    };
                    out.jobs.push((
                        sch,
                        Job {
                            op: op_idx,
                            mech: JobMech::PsmIntra,
                            kind: JobKind::Psm {
                                src: sbank,
                                src_row: srow,
                                dst: tmp_bank,
                                dst_row: tmp,
                                cols: fwd,
                                next: 0,
                            },
                            then: Some(Box::new(second)),
                        },
                    ));
                    out.bytes.psm_intra += bytes;
                }
            }
        }
        // Split by `multi_row_copy` (see `crate::bulk::split_by`).
        BulkKind::Replicate { .. } => {}
        BulkKind::Init { .. } => {
            let mut groups: BTreeMap<RowKey, Vec<u32>> = BTreeMap::new();
            for i in 0..n {
                let d = mapper.map(op.dst + i * line);
                groups.entry(key(&d)).or_default().push(d.column);
            }
            if mech == BulkMech::MultiRowCopy {
                // Whole blocks of rows zeroed by one FPM and one Multi-RowCopy each.
                multi_row_copy::zero_blocks(&mut groups, op_idx, org, dev, &mut out);
            }
            for ((ch, rank, bg, b, row), cols) in groups {
                let bytes = cols.len() as u64 * line;
                let bank = dev.bank_id(rank, bg, b);
                let zr = zero_row(org, row);
                if cols.len() == lpr && row != zr {
                    out.jobs.push((
                        ch,
                        Job {
                            op: op_idx,
                            mech: JobMech::Fpm,
                            kind: JobKind::Fpm {
                                bank,
                                src_row: zr,
                                dst_row: row,
                                copied: false,
                            },
                            then: None,
                        },
                    ));
                    out.bytes.fpm += bytes;
                } else if dev.banks_per_rank() > 1 {
                    let zb = dev.bank_from_flat(other_bank(bank.flat, dev, rank));
                    out.jobs.push((
                        ch,
                        Job {
                            op: op_idx,
                            mech: JobMech::PsmInter,
                            kind: JobKind::Psm {
                                src: zb,
                                src_row: zr,
                                dst: bank,
                                dst_row: row,
                                cols: cols.iter().map(|&c| (c, c)).collect(),
                                next: 0,
                            },
                            then: None,
                        },
                    ));
                    out.bytes.psm_inter += bytes;
                } else {
                    let loc_addr = |c: u32| {
                        mapper.unmap(&Location {
                            channel: ch,
                            rank,
                            bank_group: bg,
                            bank: b,
                            row,
                            column: c,
                        })
                    };
                    out.baseline_lines
                        .extend(cols.iter().map(|&c| (None, loc_addr(c))));
                    out.bytes.baseline += bytes;
                }
            }
        }
    }
    out
}

/// Another bank of the same rank (the next one, wrapping), for temporary and zero rows.
fn other_bank(flat: u32, dev: &ChannelDevices, rank: u32) -> u32 {
    let per = dev.banks_per_rank();
    let base = rank * per;
    base + (flat - base + 1) % per
}
