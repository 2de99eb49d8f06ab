//! DRAMsim3's trace format, so traces made for DRAMsim3 run unchanged in movelab and movelab's
//! generated traffic can be replayed in DRAMsim3.
//!
//! Each line is `ADDR OP CYCLE`, e.g. `0x1f2e3d40 READ 1234`:
//!
//! - `ADDR` is hexadecimal, with or without a `0x` prefix. DRAMsim3 reads it with `std::hex`, so
//!   `1000` means 0x1000 here too, not one thousand.
//! - `OP` is a read (`READ`, `read`, `P_MEM_RD`, `P_FETCH`) or a write (`WRITE`, `write`,
//!   `P_MEM_WR`, `BOFF`), case-insensitive. DRAMsim3 treats every unknown word as a read; movelab
//!   refuses it, since it is more likely a mistake than a read.
//! - `CYCLE` is the decimal cycle the request arrives at (`arrival: Some(CYCLE)`). Cycles must not
//!   decrease down the file.
//!
//! Blank lines and `#` comments are skipped (an extension; DRAMsim3 has neither).
use super::native::output_error;
use super::{parse_hex_digits, shorten, strip_comment};
use crate::error::TraceError;
use crate::request::{Op, Request, TraceItem};
use std::io::Write;

const SYNTAX: &str = "expected 'ADDR READ|WRITE CYCLE' (DRAMsim3 trace)";

/// The operation a DRAMsim3 trace word stands for, if any.
pub(crate) fn parse_op(tok: &str) -> Option<Op> {
    let is = |names: &[&str]| names.iter().any(|n| tok.eq_ignore_ascii_case(n));
    if is(&["READ", "P_MEM_RD", "P_FETCH"]) {
        Some(Op::Read)
    } else if is(&["WRITE", "P_MEM_WR", "BOFF"]) {
        Some(Op::Write)
    } else {
        None
    }
}

/// Line parser state: the previous line's cycle.
#[derive(Debug, Default)]
pub(crate) struct Dramsim3Parser {
    last_cycle: Option<u64>,
}

impl Dramsim3Parser {
    /// Parses one line; `Ok(None)` for a blank or comment line.
    pub(crate) fn parse_line(&mut self, line: &str) -> Result<Option<TraceItem>, String> {
        let text = strip_comment(line);
        if text.is_empty() {
            return Ok(None);
        }
        let mut tokens = text.split_ascii_whitespace();
        let (Some(addr), Some(op), Some(cycle), None) =
            (tokens.next(), tokens.next(), tokens.next(), tokens.next())
        else {
            return Err(format!("'{}': {SYNTAX}", shorten(text)));
        };
        let digits = addr
            .strip_prefix("0x")
            .or_else(|| addr.strip_prefix("0X"))
            .unwrap_or(addr);
        let addr = parse_hex_digits(addr, digits).map_err(|e| format!("address: {e}"))?;
        let op = parse_op(op).ok_or_else(|| {
            format!(
                "unknown operation '{}'; expected READ, WRITE, P_MEM_RD or P_MEM_WR",
                shorten(op)
            )
        })?;
        if cycle.is_empty() || !cycle.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "cycle: '{}' is not a decimal number",
                shorten(cycle)
            ));
        }
        let cycle: u64 = cycle
            .parse()
            .map_err(|_| format!("cycle: '{}' does not fit in 64 bits", shorten(cycle)))?;
        let cycle = super::check_arrival(cycle)?;
        if let Some(last) = self.last_cycle {
            if cycle < last {
                return Err(format!(
                    "cycle {cycle} is earlier than the previous line's cycle {last}"
                ));
            }
        }
        self.last_cycle = Some(cycle);
        Ok(Some(TraceItem::Req(Request {
            addr,
            op,
            arrival: Some(cycle),
        })))
    }
}

/// Writes line requests as a DRAMsim3 trace and returns how many were written.
///
/// An item without an arrival is given the cycle after the previous item's (the first one cycle
/// 0), which is the one-request-per-cycle reading of `arrival: None`. Arrivals must not decrease
/// and bulk operations cannot be expressed: either is an error naming the item's 0-based index.
pub fn write_dramsim3<I, W>(items: I, writer: W) -> Result<u64, TraceError>
where
    I: IntoIterator<Item = TraceItem>,
    W: Write,
{
    let mut out = std::io::BufWriter::new(writer);
    let mut last: Option<u64> = None;
    let mut n = 0u64;
    for item in items {
        let TraceItem::Req(r) = item else {
            return Err(TraceError::Invalid(format!(
                "trace item {n}: a bulk operation cannot be written to a DRAMsim3 trace"
            )));
        };
        let cycle = match (r.arrival, last) {
            (Some(c), Some(l)) if c < l => {
                return Err(TraceError::Invalid(format!(
                    "trace item {n}: arrival cycle {c} is earlier than the previous arrival {l}"
                )))
            }
            (Some(c), _) => c,
            (None, None) => 0,
            (None, Some(l)) => l.checked_add(1).ok_or_else(|| {
                TraceError::Invalid(format!(
                    "trace item {n}: the next cycle after {l} does not fit in 64 bits"
                ))
            })?,
        };
        last = Some(cycle);
        let op = match r.op {
            Op::Read => "READ",
            Op::Write => "WRITE",
        };
        writeln!(out, "0x{:x} {op} {cycle}", r.addr).map_err(output_error)?;
        n += 1;
    }
    out.flush().map_err(output_error)?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{BulkKind, BulkOp};
    use crate::trace::{from_reader, TraceFormat};

    fn read(text: &str, format: TraceFormat) -> Result<Vec<TraceItem>, TraceError> {
        from_reader(text.as_bytes(), "d.trace", format)?.collect()
    }

    fn req(addr: u64, op: Op, at: u64) -> TraceItem {
        TraceItem::Req(Request {
            addr,
            op,
            arrival: Some(at),
        })
    }

    #[test]
    fn reads_dramsim3_lines() {
        let text = "0x1f2e3d40 READ 1234\n1000 WRITE 1234\n\n0X40 P_MEM_RD 2000\n0x80  p_mem_wr\t2001 # c\r\n";
        let want = vec![
            req(0x1f2e3d40, Op::Read, 1234),
            req(0x1000, Op::Write, 1234),
            req(0x40, Op::Read, 2000),
            req(0x80, Op::Write, 2001),
        ];
        assert_eq!(read(text, TraceFormat::Dramsim3), Ok(want.clone()));
        assert_eq!(read(text, TraceFormat::Auto), Ok(want));
    }

    #[test]
    fn error_messages_name_the_line() {
        let e = |t: &str| {
            read(t, TraceFormat::Dramsim3)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert_eq!(
            e("0x0 READ 10\n0x40 READ 9\n"),
            "d.trace:2: cycle 9 is earlier than the previous line's cycle 10"
        );
        assert_eq!(
            e("0x0 READ\n"),
            "d.trace:1: '0x0 READ': expected 'ADDR READ|WRITE CYCLE' (DRAMsim3 trace)"
        );
        assert_eq!(
            e("0x0 READ 1\n0x0 FETCH 2\n"),
            "d.trace:2: unknown operation 'FETCH'; expected READ, WRITE, P_MEM_RD or P_MEM_WR"
        );
        assert_eq!(
            e("0xg READ 1\n"),
            "d.trace:1: address: '0xg' is not a hexadecimal number"
        );
        assert_eq!(
            e("0x0 READ 0x10\n"),
            "d.trace:1: cycle: '0x10' is not a decimal number"
        );
        assert_eq!(
            e("0x0 READ 99999999999999999999\n"),
            "d.trace:1: cycle: '99999999999999999999' does not fit in 64 bits"
        );
    }

    #[test]
    fn writes_what_it_reads() {
        let items = vec![
            TraceItem::Req(Request {
                addr: 0x40,
                op: Op::Read,
                arrival: None,
            }),
            TraceItem::Req(Request {
                addr: 0x80,
                op: Op::Write,
                arrival: None,
            }),
            req(0xc0, Op::Read, 10),
            TraceItem::Req(Request {
                addr: 0x100,
                op: Op::Read,
                arrival: None,
            }),
        ];
        let mut out = Vec::new();
        assert_eq!(write_dramsim3(items, &mut out).ok(), Some(4));
        assert_eq!(
            String::from_utf8_lossy(&out),
            "0x40 READ 0\n0x80 WRITE 1\n0xc0 READ 10\n0x100 READ 11\n"
        );
        assert_eq!(
            read(&String::from_utf8_lossy(&out), TraceFormat::Auto),
            Ok(vec![
                req(0x40, Op::Read, 0),
                req(0x80, Op::Write, 1),
                req(0xc0, Op::Read, 10),
                req(0x100, Op::Read, 11)
            ])
        );
    }

    #[test]
    fn writer_errors() {
        let bulk = TraceItem::Bulk(BulkOp {
            kind: BulkKind::Copy { src: 0 },
            dst: 64,
            bytes: 64,
            arrival: None,
        });
        let e = write_dramsim3([bulk], Vec::new())
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("trace item 0: a bulk operation cannot be written to a DRAMsim3 trace")
        );
        let e = write_dramsim3([req(0, Op::Read, 5), req(0, Op::Read, 4)], Vec::new())
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("trace item 1: arrival cycle 4 is earlier than the previous arrival 5")
        );
    }
}
