//! movelab's native trace format: line reads and writes and bulk operations, one per line, with
//! optional arrival cycles. It is also the format of bulk-operation lists.
//!
//! # Format
//!
//! ```text
//! # A comment runs from '#' to the end of the line; blank lines are ignored.
//! R 0x1f2e3d40            # read the cache line at this address
//! W 4096                  # write (addresses are decimal or 0x-prefixed hexadecimal)
//! @100 R 0x80             # offered at cycle 100
//! @250 COPY 0x0 0x10000 4K          # copy 4 KiB from 0x0 to 0x10000
//! @300 INIT 0x20000 8K 0            # set 8 KiB at 0x20000 to byte 0 (zeroing)
//! INIT 1G 64 0xff                   # sizes and addresses may carry a K/M/G/T suffix
//! ```
//!
//! Each line is `[@CYCLE] OP ARGS...`, tokens separated by spaces or tabs:
//!
//! | OP     | ARGS                | item                                                   |
//! |--------|---------------------|--------------------------------------------------------|
//! | `R`    | `ADDR`              | line read at `ADDR`                                    |
//! | `W`    | `ADDR`              | line write at `ADDR`                                   |
//! | `COPY` | `SRC DST BYTES`     | bulk copy of `BYTES` bytes from `SRC` to `DST`         |
//! | `INIT` | `DST BYTES VALUE`   | bulk initialisation of `BYTES` bytes at `DST` to `VALUE` |
//! | `REPL` | `SRC BYTES COPIES`  | replication of each row at `SRC` into `COPIES` rows of its block (Multi-RowCopy) |
//!
//! - Keywords are case-insensitive (`r`, `copy`, ...).
//! - `CYCLE` and `VALUE` are plain numbers: decimal or `0x` hexadecimal. `VALUE` is a byte,
//!   0..=255.
//! - `ADDR`, `SRC`, `DST` and `BYTES` are decimal or `0x` hexadecimal, and a decimal one may
//!   carry a binary suffix: `K`/`KB`/`KiB` (x1024), `M`/`MB`/`MiB`, `G`/`GB`/`GiB`,
//!   `T`/`TB`/`TiB`, case-insensitive. `4K` is 4096.
//! - `@CYCLE` (no space after `@`) gives the item's arrival cycle; without it the item has no
//!   arrival (`None`: the consumer offers it the cycle after the previous item was accepted).
//!   Arrivals that are given must not decrease down the file; lines without one may be mixed in.
//! - A bulk operation must move at least one byte, its ranges must not run past 2^64, and a copy's
//!   source and destination ranges must not overlap.
//!
//! Any violation is an error naming the line. [`write_native`] writes this format (addresses in
//! hexadecimal, sizes in decimal), and reading what it writes gives back the same items.
use super::{parse_size, parse_u64, shorten, strip_comment};
use crate::error::TraceError;
use crate::request::{BulkKind, BulkOp, Op, Request, TraceItem};
use std::io::Write;

/// Whether `tok` is one of the native operation keywords.
pub(crate) fn is_keyword(tok: &str) -> bool {
    ["R", "W", "COPY", "INIT", "REPL"]
        .iter()
        .any(|k| tok.eq_ignore_ascii_case(k))
}

/// Line parser state: the last arrival given, to check that arrivals do not decrease.
#[derive(Debug, Default)]
pub(crate) struct NativeParser {
    last_arrival: Option<u64>,
}

const SYNTAX: &str =
    "expected '[@CYCLE] R ADDR', 'W ADDR', 'COPY SRC DST BYTES', 'INIT DST BYTES VALUE' or 'REPL SRC BYTES COPIES'";

impl NativeParser {
    /// Parses one line; `Ok(None)` for a blank or comment line.
    pub(crate) fn parse_line(&mut self, line: &str) -> Result<Option<TraceItem>, String> {
        let text = strip_comment(line);
        if text.is_empty() {
            return Ok(None);
        }
        let mut tokens = text.split_ascii_whitespace();
        let mut op = tokens.next().ok_or_else(|| SYNTAX.to_string())?;
        let mut arrival = None;
        if let Some(cycle) = op.strip_prefix('@') {
            let c = parse_u64(cycle).map_err(|e| format!("arrival cycle: {e}"))?;
            let c = super::check_arrival(c)?;
            if let Some(last) = self.last_arrival {
                if c < last {
                    return Err(format!(
                        "arrival cycle {c} is earlier than the previous arrival {last}"
                    ));
                }
            }
            arrival = Some(c);
            op = tokens.next().ok_or_else(|| {
                format!(
                    "'@{}' is not followed by an operation; {SYNTAX}",
                    shorten(cycle)
                )
            })?;
        }
        // Up to three arguments without allocating; `n` counts them (4 means "more than 3").
        let mut args = [""; 3];
        let mut n = 0usize;
        for t in tokens.by_ref().take(4) {
            if let Some(slot) = args.get_mut(n) {
                *slot = t;
            }
            n += 1;
        }
        let item = if op.eq_ignore_ascii_case("R") || op.eq_ignore_ascii_case("W") {
            let kind = if op.eq_ignore_ascii_case("R") {
                Op::Read
            } else {
                Op::Write
            };
            if n != 1 {
                return Err(arity(op, "ADDR", n));
            }
            let addr = args[0];
            let addr = parse_size(addr).map_err(|e| format!("address: {e}"))?;
            TraceItem::Req(Request {
                addr,
                op: kind,
                arrival,
            })
        } else if op.eq_ignore_ascii_case("COPY") {
            if n != 3 {
                return Err(arity(op, "SRC DST BYTES", n));
            }
            let [src, dst, bytes] = args;
            let src = parse_size(src).map_err(|e| format!("COPY source: {e}"))?;
            let dst = parse_size(dst).map_err(|e| format!("COPY destination: {e}"))?;
            let bytes = parse_size(bytes).map_err(|e| format!("COPY size: {e}"))?;
            let op = BulkOp {
                kind: BulkKind::Copy { src },
                dst,
                bytes,
                arrival,
            };
            check_bulk(&op)?;
            TraceItem::Bulk(op)
        } else if op.eq_ignore_ascii_case("INIT") {
            if n != 3 {
                return Err(arity(op, "DST BYTES VALUE", n));
            }
            let [dst, bytes, value] = args;
            let dst = parse_size(dst).map_err(|e| format!("INIT destination: {e}"))?;
            let bytes = parse_size(bytes).map_err(|e| format!("INIT size: {e}"))?;
            let value = parse_u64(value).map_err(|e| format!("INIT value: {e}"))?;
            let value = u8::try_from(value)
                .map_err(|_| format!("INIT value {value} is not a byte (0..=255)"))?;
            let op = BulkOp {
                kind: BulkKind::Init { value },
                dst,
                bytes,
                arrival,
            };
            check_bulk(&op)?;
            TraceItem::Bulk(op)
        } else if op.eq_ignore_ascii_case("REPL") {
            if n != 3 {
                return Err(arity(op, "SRC BYTES COPIES", n));
            }
            let [src, bytes, copies] = args;
            let dst = parse_size(src).map_err(|e| format!("REPL source: {e}"))?;
            let bytes = parse_size(bytes).map_err(|e| format!("REPL size: {e}"))?;
            let copies = parse_u64(copies).map_err(|e| format!("REPL copies: {e}"))?;
            let copies =
                u32::try_from(copies).map_err(|_| format!("REPL copies {copies} is too large"))?;
            let op = BulkOp {
                kind: BulkKind::Replicate { copies },
                dst,
                bytes,
                arrival,
            };
            check_bulk(&op)?;
            TraceItem::Bulk(op)
        } else {
            return Err(format!("unknown operation '{}'; {SYNTAX}", shorten(op)));
        };
        if arrival.is_some() {
            self.last_arrival = arrival;
        }
        Ok(Some(item))
    }
}

fn arity(op: &str, args: &str, got: usize) -> String {
    let got = if got > 3 {
        "more".to_string()
    } else {
        got.to_string()
    };
    format!(
        "{} takes {args}, got {got} argument(s)",
        op.to_ascii_uppercase()
    )
}

/// Checks a bulk operation: at least one byte, no range past 2^64, no overlapping copy.
pub fn check_bulk(op: &BulkOp) -> Result<(), String> {
    let name = match op.kind {
        BulkKind::Copy { .. } => "COPY",
        BulkKind::Init { .. } => "INIT",
        BulkKind::Replicate { .. } => "REPL",
    };
    if op.bytes == 0 {
        return Err(format!("{name} of zero bytes"));
    }
    let dst_end = op.dst.checked_add(op.bytes - 1).ok_or_else(|| {
        format!(
            "{name} destination 0x{:x} + {} bytes runs past the end of the 64-bit address space",
            op.dst, op.bytes
        )
    })?;
    if let BulkKind::Copy { src } = op.kind {
        let src_end = src.checked_add(op.bytes - 1).ok_or_else(|| {
            format!(
                "COPY source 0x{src:x} + {} bytes runs past the end of the 64-bit address space",
                op.bytes
            )
        })?;
        if src <= dst_end && op.dst <= src_end {
            return Err(format!(
                "COPY source [0x{src:x}, 0x{src_end:x}] and destination [0x{:x}, 0x{dst_end:x}] overlap",
                op.dst
            ));
        }
    }
    Ok(())
}

/// One item as a native-format line (without a line ending).
pub fn native_line(item: &TraceItem) -> String {
    let at = match item.arrival() {
        Some(c) => format!("@{c} "),
        None => String::new(),
    };
    match item {
        TraceItem::Req(r) => {
            let op = match r.op {
                Op::Read => "R",
                Op::Write => "W",
            };
            format!("{at}{op} 0x{:x}", r.addr)
        }
        TraceItem::Bulk(b) => match b.kind {
            BulkKind::Copy { src } => format!("{at}COPY 0x{src:x} 0x{:x} {}", b.dst, b.bytes),
            BulkKind::Init { value } => format!("{at}INIT 0x{:x} {} {value}", b.dst, b.bytes),
            BulkKind::Replicate { copies } => {
                format!("{at}REPL 0x{:x} {} {copies}", b.dst, b.bytes)
            }
        },
    }
}

/// Writes items in the native format, one line each, and returns how many were written.
///
/// The items are checked as the reader would check them (non-decreasing arrivals, valid bulk
/// operations), so what is written can be read back; the first bad item is an error naming its
/// 0-based index. Output goes through a buffer that is flushed at the end.
pub fn write_native<I, W>(items: I, writer: W) -> Result<u64, TraceError>
where
    I: IntoIterator<Item = TraceItem>,
    W: Write,
{
    let mut out = std::io::BufWriter::new(writer);
    let mut last = None;
    let mut n = 0u64;
    for item in items {
        if let Some(c) = item.arrival() {
            if last.is_some_and(|l| c < l) {
                return Err(TraceError::Invalid(format!(
                    "trace item {n}: arrival cycle {c} is earlier than the previous arrival {}",
                    last.unwrap_or(0)
                )));
            }
            last = Some(c);
        }
        if let TraceItem::Bulk(b) = &item {
            check_bulk(b).map_err(|e| TraceError::Invalid(format!("trace item {n}: {e}")))?;
        }
        writeln!(out, "{}", native_line(&item)).map_err(output_error)?;
        n += 1;
    }
    out.flush().map_err(output_error)?;
    Ok(n)
}

pub(crate) fn output_error(e: std::io::Error) -> TraceError {
    TraceError::Io {
        path: "trace output".into(),
        what: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{from_reader, TraceFormat};
    use proptest::prelude::*;

    #[test]
    fn replication_lines_read_and_write_back() {
        let item = TraceItem::Bulk(BulkOp {
            kind: BulkKind::Replicate { copies: 7 },
            dst: 0x2000,
            bytes: 4096,
            arrival: Some(5),
        });
        let line = native_line(&item);
        assert_eq!(line, "@5 REPL 0x2000 4096 7");
        let mut p = NativeParser::default();
        assert_eq!(p.parse_line(&line).unwrap(), Some(item));
        assert_eq!(
            crate::trace::detect_format("REPL 0 4K 31"),
            Some(TraceFormat::Native)
        );
        assert!(p
            .parse_line("REPL 0x0 4K")
            .unwrap_err()
            .contains("SRC BYTES COPIES"));
    }

    fn read(text: &str) -> Vec<Result<TraceItem, TraceError>> {
        match from_reader(text.as_bytes(), "t.trace", TraceFormat::Native) {
            Ok(r) => r.collect(),
            Err(e) => vec![Err(e)],
        }
    }

    fn ok(text: &str) -> Vec<TraceItem> {
        read(text)
            .into_iter()
            .collect::<Result<Vec<_>, _>>()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(text: &str) -> String {
        let items = read(text);
        match items.last() {
            Some(Err(e)) => e.to_string(),
            other => panic!("expected an error, got {other:?}"),
        }
    }

    fn req(addr: u64, op: Op, arrival: Option<u64>) -> TraceItem {
        TraceItem::Req(Request { addr, op, arrival })
    }

    #[test]
    fn reads_every_operation() {
        let t = "# header\n\nR 0x40\nw 128  # trailing comment\n@7 COPY 0 0x10000 4K\n\t@7\tINIT 1G 2M 0xff\r\n";
        assert_eq!(
            ok(t),
            vec![
                req(0x40, Op::Read, None),
                req(128, Op::Write, None),
                TraceItem::Bulk(BulkOp {
                    kind: BulkKind::Copy { src: 0 },
                    dst: 0x10000,
                    bytes: 4096,
                    arrival: Some(7)
                }),
                TraceItem::Bulk(BulkOp {
                    kind: BulkKind::Init { value: 255 },
                    dst: 1 << 30,
                    bytes: 2 << 20,
                    arrival: Some(7)
                }),
            ]
        );
    }

    #[test]
    fn suffixes() {
        let items = ok("INIT 0 1KiB 0\nINIT 0 1kb 0\nINIT 0 3M 0\nINIT 0 1T 0\nINIT 0 0x10 0\n");
        let sizes: Vec<u64> = items
            .iter()
            .map(|i| match i {
                TraceItem::Bulk(b) => b.bytes,
                TraceItem::Req(_) => 0,
            })
            .collect();
        assert_eq!(sizes, vec![1024, 1024, 3 << 20, 1 << 40, 16]);
    }

    #[test]
    fn arrivals_mix_with_unset_ones() {
        let items = ok("@5 R 0\nR 64\n@5 R 128\n@9 W 0\n");
        let arrivals: Vec<_> = items.iter().map(|i| i.arrival()).collect();
        assert_eq!(arrivals, vec![Some(5), None, Some(5), Some(9)]);
    }

    #[test]
    fn error_messages_name_the_line() {
        assert_eq!(
            err("R 0\n\n@10 R 0\n@9 R 0\n"),
            "t.trace:4: arrival cycle 9 is earlier than the previous arrival 10"
        );
        assert_eq!(err("# c\nCOPY 0 4096 0\n"), "t.trace:2: COPY of zero bytes");
        assert_eq!(err("INIT 0 0 1\n"), "t.trace:1: INIT of zero bytes");
        assert_eq!(
            err("COPY 0xffffffffffffffc0 0 128\n"),
            "t.trace:1: COPY source 0xffffffffffffffc0 + 128 bytes runs past the end of the 64-bit address space"
        );
        assert_eq!(
            err("INIT 0xffffffffffffffc0 65 0\n"),
            "t.trace:1: INIT destination 0xffffffffffffffc0 + 65 bytes runs past the end of the 64-bit address space"
        );
        assert_eq!(
            err("COPY 0 64 128\n"),
            "t.trace:1: COPY source [0x0, 0x7f] and destination [0x40, 0xbf] overlap"
        );
        assert_eq!(
            err("INIT 0 64 256\n"),
            "t.trace:1: INIT value 256 is not a byte (0..=255)"
        );
        assert_eq!(err("R\n"), "t.trace:1: R takes ADDR, got 0 argument(s)");
        assert_eq!(err("w 1 2\n"), "t.trace:1: W takes ADDR, got 2 argument(s)");
        assert_eq!(
            err("copy 1 2 3 4 5 6\n"),
            "t.trace:1: COPY takes SRC DST BYTES, got more argument(s)"
        );
        assert_eq!(
            err("R 0x\n"),
            "t.trace:1: address: '0x' is not a hexadecimal number"
        );
        assert_eq!(
            err("R 12q\n"),
            "t.trace:1: address: '12q' is not a size (a number, optionally with K, M, G or T for KiB, MiB, GiB, TiB)"
        );
        assert_eq!(
            err("R 99999999999999999999\n"),
            "t.trace:1: address: '99999999999999999999' does not fit in 64 bits"
        );
        assert_eq!(
            err("R 16777216T\n"),
            "t.trace:1: address: '16777216T' does not fit in 64 bits"
        );
        assert_eq!(
            err("@x R 0\n"),
            "t.trace:1: arrival cycle: 'x' is not a number (decimal, or hexadecimal with 0x)"
        );
        assert_eq!(err("@12\n"), "t.trace:1: '@12' is not followed by an operation; expected '[@CYCLE] R ADDR', 'W ADDR', 'COPY SRC DST BYTES', 'INIT DST BYTES VALUE' or 'REPL SRC BYTES COPIES'");
        assert!(err("R 0\nMOVE 1 2\n").starts_with("t.trace:2: unknown operation 'MOVE'"));
    }

    #[test]
    fn reading_stops_after_an_error() {
        let items = read("R 0\nbogus\nR 64\n");
        assert_eq!(items.len(), 2);
        assert!(items[0].is_ok());
        assert!(items[1].is_err());
    }

    #[test]
    fn writes_what_it_reads() {
        let items = vec![
            req(0x40, Op::Read, Some(3)),
            req(0x80, Op::Write, None),
            TraceItem::Bulk(BulkOp {
                kind: BulkKind::Copy { src: 0x1000 },
                dst: 0x2000,
                bytes: 4096,
                arrival: None,
            }),
            TraceItem::Bulk(BulkOp {
                kind: BulkKind::Init { value: 7 },
                dst: 0x3000,
                bytes: 64,
                arrival: Some(9),
            }),
        ];
        let mut out = Vec::new();
        assert_eq!(write_native(items.clone(), &mut out).ok(), Some(4));
        let text = String::from_utf8(out).unwrap_or_default();
        assert_eq!(
            text,
            "@3 R 0x40\nW 0x80\nCOPY 0x1000 0x2000 4096\n@9 INIT 0x3000 64 7\n"
        );
        assert_eq!(ok(&text), items);
    }

    #[test]
    fn writer_refuses_what_the_reader_would_refuse() {
        let zero = TraceItem::Bulk(BulkOp {
            kind: BulkKind::Init { value: 0 },
            dst: 0,
            bytes: 0,
            arrival: None,
        });
        let e = write_native([req(0, Op::Read, None), zero], Vec::new())
            .err()
            .map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("trace item 1: INIT of zero bytes"));
        let e = write_native(
            [req(0, Op::Read, Some(5)), req(0, Op::Read, Some(4))],
            Vec::new(),
        )
        .err()
        .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("trace item 1: arrival cycle 4 is earlier than the previous arrival 5")
        );
    }

    /// A valid item, with an arrival drawn as an increment so that arrivals do not decrease.
    fn arb_item() -> impl Strategy<Value = (TraceItem, Option<u64>)> {
        let arrival = prop_oneof![Just(None), (0u64..1000).prop_map(Some)];
        let req = (any::<u64>(), any::<bool>()).prop_map(|(addr, w)| {
            TraceItem::Req(Request {
                addr,
                op: if w { Op::Write } else { Op::Read },
                arrival: None,
            })
        });
        let copy = (any::<u64>(), 1u64..(1 << 40), any::<u64>()).prop_filter_map(
            "valid copy",
            |(src, bytes, dst)| {
                let b = BulkOp {
                    kind: BulkKind::Copy { src },
                    dst,
                    bytes,
                    arrival: None,
                };
                check_bulk(&b).ok().map(|_| TraceItem::Bulk(b))
            },
        );
        let init = (any::<u64>(), 1u64..(1 << 40), any::<u8>()).prop_filter_map(
            "valid init",
            |(dst, bytes, value)| {
                let b = BulkOp {
                    kind: BulkKind::Init { value },
                    dst,
                    bytes,
                    arrival: None,
                };
                check_bulk(&b).ok().map(|_| TraceItem::Bulk(b))
            },
        );
        (prop_oneof![req, copy, init], arrival)
    }

    proptest! {
        #[test]
        fn round_trip(raw in proptest::collection::vec(arb_item(), 0..60)) {
            let mut now = 0u64;
            let items: Vec<TraceItem> = raw
                .into_iter()
                .map(|(mut item, step)| {
                    let arrival = step.map(|s| {
                        now += s;
                        now
                    });
                    match &mut item {
                        TraceItem::Req(r) => r.arrival = arrival,
                        TraceItem::Bulk(b) => b.arrival = arrival,
                    }
                    item
                })
                .collect();
            let mut out = Vec::new();
            prop_assert_eq!(write_native(items.clone(), &mut out).ok(), Some(items.len() as u64));
            let back: Result<Vec<TraceItem>, TraceError> =
                match from_reader(out.as_slice(), "rt", TraceFormat::Auto) {
                    Ok(r) => r.collect(),
                    Err(e) => Err(e),
                };
            prop_assert_eq!(back, Ok(items));
        }
    }
}
