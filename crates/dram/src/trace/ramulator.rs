//! Ramulator 2's load/store trace (its `LoadStoreTrace` frontend), so traces made for Ramulator 2
//! run unchanged in movelab and movelab's generated traffic can be replayed in Ramulator 2.
//!
//! Each line is `LD ADDR` (a read) or `ST ADDR` (a write). As in Ramulator 2, an address with a
//! `0x` / `0X` prefix is hexadecimal and one without is decimal. The format has no timestamps:
//! items come out with `arrival: None`, and the consumer offers one request per cycle (Ramulator
//! 2's frontend does the same). Beyond what Ramulator 2 accepts, keywords are case-insensitive,
//! tokens may be separated by any white space, and blank lines and `#` comments are skipped.
use super::native::output_error;
use super::{parse_u64, shorten, strip_comment};
use crate::error::TraceError;
use crate::request::{Op, Request, TraceItem};
use std::io::Write;

const SYNTAX: &str = "expected 'LD ADDR' or 'ST ADDR' (Ramulator 2 load/store trace)";

/// The common line, as movelab and Ramulator 2 write it: `LD 0x...` or `ST 0x...` (upper case, one
/// space, 1 to 16 hexadecimal digits, nothing after), read straight from the bytes. Anything else
/// gives `None` and goes to [`parse_line`], which reads the same lines to the same requests (a unit
/// test and a property test compare the two), so this only saves time: no UTF-8 check, comment
/// search, tokenising or per-digit validation pass.
#[inline]
pub(crate) fn parse_plain(line: &[u8]) -> Option<TraceItem> {
    let (head, digits) = line.split_at_checked(5)?;
    let op = match head {
        b"LD 0x" => Op::Read,
        b"ST 0x" => Op::Write,
        _ => return None,
    };
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    let mut addr = 0u64;
    for &b in digits {
        let v = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return None,
        };
        addr = (addr << 4) | u64::from(v);
    }
    Some(TraceItem::Req(Request {
        addr,
        op,
        arrival: None,
    }))
}

/// Parses one line; `Ok(None)` for a blank or comment line.
pub(crate) fn parse_line(line: &str) -> Result<Option<TraceItem>, String> {
    let text = strip_comment(line);
    if text.is_empty() {
        return Ok(None);
    }
    let mut tokens = text.split_ascii_whitespace();
    let (Some(kind), Some(addr), None) = (tokens.next(), tokens.next(), tokens.next()) else {
        return Err(format!("'{}': {SYNTAX}", shorten(text)));
    };
    let op = if kind.eq_ignore_ascii_case("LD") {
        Op::Read
    } else if kind.eq_ignore_ascii_case("ST") {
        Op::Write
    } else {
        return Err(format!("unknown operation '{}'; {SYNTAX}", shorten(kind)));
    };
    let addr = parse_u64(addr).map_err(|e| format!("address: {e}"))?;
    Ok(Some(TraceItem::Req(Request {
        addr,
        op,
        arrival: None,
    })))
}

/// Writes line requests as a Ramulator 2 load/store trace and returns how many were written.
///
/// Addresses are written in hexadecimal. The format has no timestamps, so arrival cycles are
/// dropped; a bulk operation cannot be expressed and is an error naming its 0-based index.
pub fn write_ramulator<I, W>(items: I, writer: W) -> Result<u64, TraceError>
where
    I: IntoIterator<Item = TraceItem>,
    W: Write,
{
    let mut out = std::io::BufWriter::new(writer);
    let mut n = 0u64;
    for item in items {
        let TraceItem::Req(r) = item else {
            return Err(TraceError::Invalid(format!(
                "trace item {n}: a bulk operation cannot be written to a Ramulator 2 load/store trace"
            )));
        };
        let op = match r.op {
            Op::Read => "LD",
            Op::Write => "ST",
        };
        writeln!(out, "{op} 0x{:x}", r.addr).map_err(output_error)?;
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
        from_reader(text.as_bytes(), "r.trace", format)?.collect()
    }

    fn req(addr: u64, op: Op) -> TraceItem {
        TraceItem::Req(Request {
            addr,
            op,
            arrival: None,
        })
    }

    #[test]
    fn reads_loads_and_stores() {
        let text = "LD 0x1f2e3d40\nST 0X40\n\nld 4096\n# comment\nST\t128\r\n";
        let want = vec![
            req(0x1f2e3d40, Op::Read),
            req(0x40, Op::Write),
            req(4096, Op::Read),
            req(128, Op::Write),
        ];
        assert_eq!(read(text, TraceFormat::Ramulator), Ok(want.clone()));
        assert_eq!(read(text, TraceFormat::Auto), Ok(want));
    }

    #[test]
    fn the_plain_fast_path_reads_as_the_general_parser_does() {
        let lines = [
            "LD 0x1f2e3d40",
            "ST 0X40",
            "ST 0x40",
            "LD 0xffffffffffffffff",
            "LD 0x1ffffffffffffffff",
            "LD 0x0000000000000000001",
            "LD 0x",
            "LD 0xg",
            "LD 0x40 ",
            "LD 0x40#c",
            "LD  0x40",
            "ld 0x40",
            "LD 64",
            "LD 0xAbCdEf",
            "XX 0x40",
            "LD",
            "",
        ];
        for line in lines {
            let general = parse_line(line);
            match parse_plain(line.as_bytes()) {
                Some(item) => assert_eq!(general, Ok(Some(item)), "{line:?}"),
                None => assert!(
                    !(line.len() <= 21
                        && line.starts_with("LD 0x")
                        && general.is_ok()
                        && line[5..].bytes().all(|b| b.is_ascii_hexdigit())
                        && !line[5..].is_empty()),
                    "{line:?} is plain but was refused"
                ),
            }
        }
    }

    #[test]
    fn error_messages_name_the_line() {
        let e = |t: &str| {
            read(t, TraceFormat::Ramulator)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert_eq!(
            e("LD 0\nLD\n"),
            "r.trace:2: 'LD': expected 'LD ADDR' or 'ST ADDR' (Ramulator 2 load/store trace)"
        );
        assert_eq!(
            e("LD 0 3\n"),
            "r.trace:1: 'LD 0 3': expected 'LD ADDR' or 'ST ADDR' (Ramulator 2 load/store trace)"
        );
        assert_eq!(
            e("LD 0\n\nXX 0x40\n"),
            "r.trace:3: unknown operation 'XX'; expected 'LD ADDR' or 'ST ADDR' (Ramulator 2 load/store trace)"
        );
        assert_eq!(
            e("ST 0xZZ\n"),
            "r.trace:1: address: '0xZZ' is not a hexadecimal number"
        );
        assert_eq!(
            e("ST 4K\n"),
            "r.trace:1: address: '4K' is not a number (decimal, or hexadecimal with 0x)"
        );
        assert_eq!(
            e("ST -1\n"),
            "r.trace:1: address: '-1' is not a number (decimal, or hexadecimal with 0x)"
        );
    }

    #[test]
    fn writes_what_it_reads() {
        let items = vec![req(0x40, Op::Read), req(0x1000, Op::Write)];
        let mut out = Vec::new();
        assert_eq!(write_ramulator(items.clone(), &mut out).ok(), Some(2));
        assert_eq!(out, b"LD 0x40\nST 0x1000\n");
        assert_eq!(
            read(&String::from_utf8_lossy(&out), TraceFormat::Auto),
            Ok(items)
        );
    }

    #[test]
    fn bulk_operations_cannot_be_written() {
        let bulk = TraceItem::Bulk(BulkOp {
            kind: BulkKind::Init { value: 0 },
            dst: 0,
            bytes: 64,
            arrival: None,
        });
        let e = write_ramulator([req(0, Op::Read), bulk], Vec::new())
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("trace item 1: a bulk operation cannot be written to a Ramulator 2 load/store trace")
        );
    }
}
