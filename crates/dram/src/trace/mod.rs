//! Trace readers and writers: how recorded or hand-written memory traffic gets into movelab.
//!
//! Three text formats are read, each one item per line:
//!
//! - [`native`]: movelab's own format, line reads and writes plus bulk `COPY` / `INIT` / `REPL` operations
//!   with optional arrival cycles (the format is specified in that module's documentation);
//! - [`ramulator`]: Ramulator 2's load/store trace (`LD 0x1f2e3d40` / `ST ...`), no timestamps:
//!   the consumer offers one request per cycle;
//! - [`dramsim3`]: DRAMsim3's trace (`0x1f2e3d40 READ 1234`), with an arrival cycle per line.
//!
//! Readers stream: a [`TraceReader`] holds one line buffer (at most [`MAX_LINE_BYTES`]) and a few
//! counters, whatever the length of the trace, and yields `Result<TraceItem, TraceError>` items
//! one at a time. An error names the source and the 1-based line, and ends the iteration: after
//! yielding an error the reader yields nothing more. No input makes a reader panic.
//!
//! [`TraceFormat::Auto`] picks the format from the first line that is neither blank nor a `#`
//! comment (see [`detect_format`]). Writers ([`write_native`], [`write_ramulator`],
//! [`write_dramsim3`]) save generated traffic, for movelab itself or for the other simulators.
//!
//! ```
//! use movelab_dram::request::{Op, Request, TraceItem};
//! use movelab_dram::trace::{from_reader, write_ramulator, TraceFormat};
//!
//! # fn main() -> Result<(), movelab_dram::error::TraceError> {
//! let text = "# two requests\nLD 0x40\nST 0x80\n";
//! let reader = from_reader(text.as_bytes(), "example.trace", TraceFormat::Auto)?;
//! assert_eq!(reader.format(), TraceFormat::Ramulator);
//! let items = reader.collect::<Result<Vec<TraceItem>, _>>()?;
//! assert_eq!(items[0], TraceItem::Req(Request { addr: 0x40, op: Op::Read, arrival: None }));
//!
//! let bad = from_reader("LD 0x40\nLD zz\n".as_bytes(), "bad.trace", TraceFormat::Auto)?;
//! let err = bad.collect::<Result<Vec<_>, _>>().unwrap_err();
//! assert_eq!(err.to_string(), "bad.trace:2: address: 'zz' is not a number (decimal, or hexadecimal with 0x)");
//!
//! let mut out = Vec::new();
//! write_ramulator(items, &mut out)?;
//! assert_eq!(out, b"LD 0x40\nST 0x80\n");
//! # Ok(())
//! # }
//! ```
//!
//! What is not here: compressed traces, and any interpretation of addresses (that is the address
//! mapper's job) or of timing (the consumer decides when an item with no arrival is offered).
use crate::error::TraceError;
use crate::request::TraceItem;

/// The latest arrival cycle a trace may give: 2^60 cycles is decades of DRAM time at any clock,
/// so a larger one is a typing error (and cycle arithmetic near 2^64 would overflow).
pub const MAX_ARRIVAL_CYCLE: u64 = 1 << 60;

/// Refuses an arrival cycle past [`MAX_ARRIVAL_CYCLE`].
pub(crate) fn check_arrival(c: u64) -> Result<u64, String> {
    if c > MAX_ARRIVAL_CYCLE {
        Err(format!(
            "arrival cycle {c} is beyond {MAX_ARRIVAL_CYCLE} (2^60 cycles, decades of DRAM time)"
        ))
    } else {
        Ok(c)
    }
}
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::str::FromStr;

pub mod dramsim3;
pub mod native;
pub mod ramulator;
pub mod read_ahead;

pub use dramsim3::write_dramsim3;
pub use native::{native_line, write_native};
pub use ramulator::write_ramulator;
pub use read_ahead::{read_ahead, ReadAhead};

/// The longest line a reader accepts, in bytes (without the line ending). Real trace lines are
/// well under 100 bytes; the cap keeps a reader's memory bounded on garbage input.
pub const MAX_LINE_BYTES: usize = 4096;

/// A boxed, sendable stream of trace items, as returned by [`open_trace`].
pub type TraceStream = Box<dyn Iterator<Item = Result<TraceItem, TraceError>> + Send>;

/// Which text format a trace is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// Decide from the first meaningful line ([`detect_format`]).
    Auto,
    /// movelab's native format ([`native`]).
    Native,
    /// Ramulator 2 load/store trace ([`ramulator`]).
    Ramulator,
    /// DRAMsim3 trace ([`dramsim3`]).
    Dramsim3,
}

impl TraceFormat {
    /// The names [`TraceFormat::from_str`] accepts, for help texts.
    pub const NAMES: &'static [&'static str] = &["auto", "native", "ramulator", "dramsim3"];

    /// The canonical lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Auto => "auto",
            TraceFormat::Native => "native",
            TraceFormat::Ramulator => "ramulator",
            TraceFormat::Dramsim3 => "dramsim3",
        }
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TraceFormat {
    type Err = TraceError;
    /// Accepts the canonical names case-insensitively, plus `ramulator2` and `movelab`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let f = if t.eq_ignore_ascii_case("auto") {
            TraceFormat::Auto
        } else if t.eq_ignore_ascii_case("native") || t.eq_ignore_ascii_case("movelab") {
            TraceFormat::Native
        } else if t.eq_ignore_ascii_case("ramulator") || t.eq_ignore_ascii_case("ramulator2") {
            TraceFormat::Ramulator
        } else if t.eq_ignore_ascii_case("dramsim3") {
            TraceFormat::Dramsim3
        } else {
            return Err(TraceError::Invalid(format!(
                "unknown trace format '{s}' (known: {})",
                TraceFormat::NAMES.join(", ")
            )));
        };
        Ok(f)
    }
}

/// Guesses the format of a trace from one line (normally its first line that is neither blank
/// nor a comment). Returns `None` for a blank or comment line and for a line no format starts
/// with.
///
/// Rules, in order: a first token `LD` or `ST` is Ramulator 2; a first token starting with `@`,
/// or `R`, `W`, `COPY`, `INIT`, `REPL`, is native; three tokens whose second is a DRAMsim3 operation
/// (`READ`, `WRITE`, `P_MEM_RD`, ...) is DRAMsim3. Keywords are matched case-insensitively.
pub fn detect_format(line: &str) -> Option<TraceFormat> {
    let mut tokens = strip_comment(line).split_ascii_whitespace();
    let first = tokens.next()?;
    if first.eq_ignore_ascii_case("LD") || first.eq_ignore_ascii_case("ST") {
        return Some(TraceFormat::Ramulator);
    }
    if first.starts_with('@') || native::is_keyword(first) {
        return Some(TraceFormat::Native);
    }
    let second = tokens.next()?;
    if tokens.next().is_some() && tokens.next().is_none() && dramsim3::parse_op(second).is_some() {
        return Some(TraceFormat::Dramsim3);
    }
    None
}

/// Opens a trace file. With [`TraceFormat::Auto`] the format is decided here, from the first
/// meaningful line; a file whose first meaningful line fits no format is an error naming that
/// line. The returned stream reads the file lazily.
pub fn open_trace(path: &Path, format: TraceFormat) -> Result<TraceStream, TraceError> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| TraceError::Io {
        path: name.clone(),
        what: e.to_string(),
    })?;
    let reader = TraceReader::new(BufReader::with_capacity(64 * 1024, file), name, format)?;
    Ok(Box::new(reader))
}

/// The line of trace file `path` that holds its `n`-th item (counted from 1, as run errors number
/// them), read again with the same rules; `None` if the file no longer has that many. For errors
/// found while the trace ran (where only the item's number is known, the file having been read
/// ahead), so that they can name the file and line as the reader's own errors do.
pub fn line_of_item(path: &Path, format: TraceFormat, n: u64) -> Option<usize> {
    let file = File::open(path).ok()?;
    let mut r = TraceReader::new(BufReader::new(file), path.display().to_string(), format).ok()?;
    for _ in 0..n {
        r.next()?.ok()?;
    }
    Some(r.line())
}

/// `message` of a run error that names a trace item ("trace item N: ...") as `path:LINE: ...`
/// when the item is found in trace file `path`; any other message unchanged.
pub fn with_item_line(message: &str, path: &Path, format: TraceFormat) -> String {
    let located = message.strip_prefix("trace item ").and_then(|rest| {
        let (n, what) = rest.split_once(": ")?;
        let line = line_of_item(path, format, n.parse().ok()?)?;
        Some(format!("{}:{line}: {what}", path.display()))
    });
    located.unwrap_or_else(|| message.to_string())
}

/// Reads a trace from any buffered reader (an in-memory `&[u8]`, a `Cursor`, stdin, ...); `name`
/// is what errors call the source. Same rules as [`open_trace`].
pub fn from_reader<R: BufRead>(
    reader: R,
    name: impl Into<String>,
    format: TraceFormat,
) -> Result<TraceReader<R>, TraceError> {
    TraceReader::new(reader, name, format)
}

/// Returns `line` without a `#` comment and without surrounding white space.
pub(crate) fn strip_comment(line: &str) -> &str {
    match line.find('#') {
        Some(i) => line[..i].trim_ascii(),
        None => line.trim_ascii(),
    }
}

/// Parses a plain unsigned number: decimal, or hexadecimal with a `0x` / `0X` prefix.
pub(crate) fn parse_u64(tok: &str) -> Result<u64, String> {
    if let Some(hex) = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
        return parse_hex_digits(tok, hex);
    }
    parse_digits(tok, tok, 10)
}

/// Parses hexadecimal digits `digits` (part of token `tok`, which error messages quote).
pub(crate) fn parse_hex_digits(tok: &str, digits: &str) -> Result<u64, String> {
    parse_digits(tok, digits, 16)
}

fn parse_digits(tok: &str, digits: &str, radix: u32) -> Result<u64, String> {
    let what = if radix == 16 {
        "hexadecimal number"
    } else {
        "number (decimal, or hexadecimal with 0x)"
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(format!("'{}' is not a {what}", shorten(tok)));
    }
    u64::from_str_radix(digits, radix)
        .map_err(|_| format!("'{}' does not fit in 64 bits", shorten(tok)))
}

/// Parses a byte count or address that may carry a binary size suffix: `4096`, `4K`, `4KiB`,
/// `4KB`, `2M`, `1G`, `1T` (all powers of 1024, case-insensitive), or `0x1000` (no suffix).
pub fn parse_size(tok: &str) -> Result<u64, String> {
    if tok.starts_with("0x") || tok.starts_with("0X") {
        return parse_u64(tok);
    }
    let split = tok.find(|c: char| !c.is_ascii_digit()).unwrap_or(tok.len());
    let (digits, suffix) = tok.split_at(split);
    let shift = match suffix.to_ascii_uppercase().as_str() {
        "" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => {
            return Err(format!(
            "'{}' is not a size (a number, optionally with K, M, G or T for KiB, MiB, GiB, TiB)",
            shorten(tok)
        ))
        }
    };
    let n = parse_digits(tok, digits, 10)?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("'{}' does not fit in 64 bits", shorten(tok)))
}

/// Cuts a token quoted in an error message to a readable length (on a character boundary).
pub(crate) fn shorten(tok: &str) -> String {
    const MAX: usize = 40;
    if tok.len() <= MAX {
        return tok.to_string();
    }
    let mut end = MAX;
    while !tok.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &tok[..end])
}

fn not_utf8(e: &std::str::Utf8Error) -> String {
    format!(
        "not valid UTF-8 text (bad byte at column {})",
        e.valid_up_to() + 1
    )
}

/// The per-format line parsers with their state (the previous arrival, for order checks).
#[derive(Debug)]
enum Parser {
    Native(native::NativeParser),
    Ramulator,
    Dramsim3(dramsim3::Dramsim3Parser),
}

impl Parser {
    fn new(format: TraceFormat) -> Parser {
        match format {
            TraceFormat::Ramulator => Parser::Ramulator,
            TraceFormat::Dramsim3 => Parser::Dramsim3(dramsim3::Dramsim3Parser::default()),
            TraceFormat::Native | TraceFormat::Auto => {
                Parser::Native(native::NativeParser::default())
            }
        }
    }

    /// Parses one line: `Ok(None)` for a blank or comment line.
    fn parse(&mut self, line: &str) -> Result<Option<TraceItem>, String> {
        match self {
            Parser::Native(p) => p.parse_line(line),
            Parser::Ramulator => ramulator::parse_line(line),
            Parser::Dramsim3(p) => p.parse_line(line),
        }
    }
}

/// A streaming trace reader over any [`BufRead`]: an iterator of `Result<TraceItem, TraceError>`.
///
/// Memory use is one line buffer of at most [`MAX_LINE_BYTES`] plus a few counters, independent
/// of the trace's length. The first error ends the iteration.
#[derive(Debug)]
pub struct TraceReader<R> {
    reader: R,
    name: String,
    format: TraceFormat,
    parser: Parser,
    buf: Vec<u8>,
    /// Number of the line in `buf` (1-based; 0 before the first read).
    line: usize,
    /// `buf` holds a line read ahead (for format detection) that has not been parsed yet.
    pending: bool,
    done: bool,
}

impl<R: BufRead> TraceReader<R> {
    /// Creates a reader. With [`TraceFormat::Auto`] this reads ahead to the first meaningful line
    /// and decides the format from it (an empty trace counts as native); an undecidable line is
    /// an error naming it.
    pub fn new(
        reader: R,
        name: impl Into<String>,
        format: TraceFormat,
    ) -> Result<Self, TraceError> {
        let mut r = TraceReader {
            reader,
            name: name.into(),
            format,
            parser: Parser::new(format),
            buf: Vec::with_capacity(128),
            line: 0,
            pending: false,
            done: false,
        };
        if format == TraceFormat::Auto {
            r.format = r.detect()?;
            r.parser = Parser::new(r.format);
        }
        Ok(r)
    }

    /// The trace's format (after detection, never [`TraceFormat::Auto`]).
    pub fn format(&self) -> TraceFormat {
        self.format
    }

    /// What errors call the source.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The number of the last line read (1-based; 0 before the first).
    pub fn line(&self) -> usize {
        self.line
    }

    fn detect(&mut self) -> Result<TraceFormat, TraceError> {
        loop {
            if !self.read_line()? {
                return Ok(TraceFormat::Native);
            }
            let text = self.line_text()?;
            if strip_comment(text).is_empty() {
                continue;
            }
            if let Some(f) = detect_format(text) {
                self.pending = true;
                return Ok(f);
            }
            return Err(self.error(format!(
                "cannot tell the trace format from '{}': expected a native line ('R 0x40', 'COPY ...', '@10 W 0x80'), \
                 a Ramulator 2 line ('LD 0x40') or a DRAMsim3 line ('0x40 READ 10')",
                shorten(strip_comment(text))
            )));
        }
    }

    fn error(&self, what: String) -> TraceError {
        TraceError::Line {
            source_name: self.name.clone(),
            line: self.line.max(1),
            what,
        }
    }

    /// Reads the next line into `buf` (without its line ending). `Ok(false)` at the end.
    fn read_line(&mut self) -> Result<bool, TraceError> {
        self.buf.clear();
        // Fast path: the whole line is already in the reader's buffer (past the first line, whose
        // byte-order mark the general path removes). Same result as the general path below.
        if self.line > 0 {
            // A read error is the general path's: the reader may not report it twice (a Python
            // iterable's exception is taken once).
            let avail = match self.reader.fill_buf() {
                Ok(a) => Some(a),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => None,
                Err(e) => {
                    self.line += 1;
                    return Err(self.error(format!("read error: {e}")));
                }
            };
            if let Some(avail) = avail {
                let window = &avail[..avail.len().min(MAX_LINE_BYTES + 2)];
                if let Some(i) = window.iter().position(|&b| b == b'\n') {
                    let end = if i > 0 && window[i - 1] == b'\r' {
                        i - 1
                    } else {
                        i
                    };
                    if end <= MAX_LINE_BYTES {
                        self.buf.extend_from_slice(&window[..end]);
                        self.reader.consume(i + 1);
                        self.line += 1;
                        return Ok(true);
                    }
                }
            }
        }
        let limit = (MAX_LINE_BYTES + 2) as u64;
        let n = match (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut self.buf)
        {
            Ok(n) => n,
            Err(e) => {
                self.line += 1;
                return Err(self.error(format!("read error: {e}")));
            }
        };
        if n == 0 {
            return Ok(false);
        }
        self.line += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        // A UTF-8 byte-order mark (as some editors write) is not part of the first line.
        if self.line == 1 && self.buf.starts_with(b"\xEF\xBB\xBF") {
            self.buf.drain(..3);
        }
        if self.buf.len() > MAX_LINE_BYTES {
            return Err(self.error(format!("line is longer than {MAX_LINE_BYTES} bytes")));
        }
        Ok(true)
    }

    fn line_text(&self) -> Result<&str, TraceError> {
        std::str::from_utf8(&self.buf).map_err(|e| self.error(not_utf8(&e)))
    }

    /// A plain Ramulator 2 line (see [`ramulator::parse_plain`]) read in place from the reader's
    /// buffer, without copying it to `buf`: `None` when the next line is not whole in the buffer
    /// or not plain, and nothing was consumed (the general path reads it). A read error is
    /// reported here as the general path reports it (the reader may not report it twice).
    #[inline]
    fn next_plain_in_place(&mut self) -> Option<Result<TraceItem, TraceError>> {
        let avail = match self.reader.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return None,
            Err(e) => {
                self.line += 1;
                return Some(Err(self.error(format!("read error: {e}"))));
            }
        };
        // Most lines: the line and its end read at once (enough bytes buffered).
        if let Some((item, used)) = ramulator::parse_plain_prefix(avail) {
            self.reader.consume(used);
            self.line += 1;
            return Some(Ok(item));
        }
        let window = &avail[..avail.len().min(MAX_LINE_BYTES + 2)];
        let i = window.iter().position(|&b| b == b'\n')?;
        let end = if i > 0 && window[i - 1] == b'\r' {
            i - 1
        } else {
            i
        };
        let item = ramulator::parse_plain(&window[..end])?;
        self.reader.consume(i + 1);
        self.line += 1;
        Some(Ok(item))
    }

    fn next_item(&mut self) -> Option<Result<TraceItem, TraceError>> {
        // Past the first line (whose byte-order mark the general path removes) and with no line
        // held back by format detection.
        if matches!(self.parser, Parser::Ramulator) && !self.pending && self.line > 0 {
            if let Some(r) = self.next_plain_in_place() {
                return Some(r);
            }
        }
        loop {
            if self.pending {
                self.pending = false;
            } else {
                match self.read_line() {
                    Ok(true) => {}
                    Ok(false) => return None,
                    Err(e) => return Some(Err(e)),
                }
            }
            if matches!(self.parser, Parser::Ramulator) {
                if let Some(item) = ramulator::parse_plain(&self.buf) {
                    return Some(Ok(item));
                }
            }
            let parsed = match std::str::from_utf8(&self.buf) {
                Ok(text) => self.parser.parse(text),
                Err(e) => Err(not_utf8(&e)),
            };
            match parsed {
                Ok(Some(item)) => return Some(Ok(item)),
                Ok(None) => continue,
                Err(what) => return Some(Err(self.error(what))),
            }
        }
    }
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<TraceItem, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.next_item();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

impl<R: BufRead> std::iter::FusedIterator for TraceReader<R> {}

#[cfg(test)]
mod tests;
