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

/// Each byte's value as a hexadecimal digit; 16 for a byte that is not one.
const HEX_VALUE: [u8; 256] = {
    let mut t = [16u8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// The bytes [`parse_plain_prefix`] needs: the longest plain line (21) and CR LF.
pub(crate) const PLAIN_PREFIX_BYTES: usize = 23;

/// The first line of `buf`, when it is plain (see [`parse_plain`]) and ends in LF or CR LF, and the
/// bytes it takes with its line end: the same answer as finding the first LF, dropping a CR before
/// it and calling [`parse_plain`] on the line, for a `buf` of at least [`PLAIN_PREFIX_BYTES`]
/// (`None` for a shorter one). It reads the sixteen bytes after `LD 0x` at once, without a branch
/// per digit or a search for the line end: what they cost was the digit count changing from line
/// to line (the branch predictor's misses).
#[inline]
pub(crate) fn parse_plain_prefix(buf: &[u8]) -> Option<(TraceItem, usize)> {
    let b: &[u8; PLAIN_PREFIX_BYTES] = buf.get(..PLAIN_PREFIX_BYTES)?.try_into().ok()?;
    let op = match &b[..5] {
        b"LD 0x" => Op::Read,
        b"ST 0x" => Op::Write,
        _ => return None,
    };
    // All sixteen bytes as digits (a byte that is not one counts as 0 and is shifted out below),
    // and which of them are not digits.
    let mut acc = 0u64;
    let mut not_digit = 1u32 << 16;
    for i in 0..16 {
        let v = HEX_VALUE[b[5 + i] as usize];
        not_digit |= u32::from(v >> 4) << i;
        acc = (acc << 4) | u64::from(v & 15);
    }
    // The digits before the first byte that is not one: 1 to 16 make an address.
    let n = not_digit.trailing_zeros() as usize;
    if n == 0 {
        return None;
    }
    let end = 5 + n;
    let used = match (b[end], b[end + 1]) {
        (b'\n', _) => end + 1,
        (b'\r', b'\n') => end + 2,
        _ => return None,
    };
    let addr = if n == 16 { acc } else { acc >> (4 * (16 - n)) };
    Some((
        TraceItem::Req(Request {
            addr,
            op,
            arrival: None,
        }),
        used,
    ))
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

    /// The first line of a buffer read at once as finding its end and parsing it does, on buffers
    /// made of plain and other lines, LF and CR LF ends, and random bytes.
    #[test]
    fn the_prefix_parser_reads_the_first_line_as_the_line_parser_does() {
        let general = |buf: &[u8]| -> Option<(TraceItem, usize)> {
            let i = buf.iter().position(|&b| b == b'\n')?;
            let end = if i > 0 && buf[i - 1] == b'\r' {
                i - 1
            } else {
                i
            };
            parse_plain(&buf[..end]).map(|item| (item, i + 1))
        };
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let pieces: [&[u8]; 14] = [
            b"LD 0x",
            b"ST 0x",
            b"ld 0x",
            b"LD 0",
            b"\n",
            b"\r\n",
            b"\r",
            b" ",
            b"#",
            b"0",
            b"f",
            b"F",
            b"g",
            b"ST 0x0123456789abcdef",
        ];
        let mut seen = 0;
        for case in 0..200_000 {
            let mut buf = Vec::new();
            while buf.len() < PLAIN_PREFIX_BYTES + rnd(8) as usize {
                match rnd(4) {
                    0 => buf.extend_from_slice(pieces[rnd(pieces.len() as u64) as usize]),
                    1 => {
                        let digits = 1 + rnd(17) as u32;
                        let a = rnd(u64::MAX) >> (64 - 4 * digits.min(16));
                        buf.extend_from_slice(
                            format!("{}{a:x}", if rnd(2) == 0 { "LD 0x" } else { "ST 0x" })
                                .as_bytes(),
                        );
                        if digits == 17 {
                            buf.push(b'7');
                        }
                        buf.extend_from_slice(if rnd(2) == 0 { b"\n" } else { b"\r\n" });
                    }
                    2 => buf.extend_from_slice(format!("{:X}", rnd(u64::MAX)).as_bytes()),
                    _ => buf.push(rnd(256) as u8),
                }
            }
            let got = parse_plain_prefix(&buf);
            assert_eq!(
                got,
                general(&buf),
                "case {case}: {:?}",
                String::from_utf8_lossy(&buf)
            );
            seen += usize::from(got.is_some());
            assert_eq!(parse_plain_prefix(&buf[..PLAIN_PREFIX_BYTES - 1]), None);
        }
        assert!(seen > 10_000, "only {seen} plain first lines");
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
