//! Reading a command log (written by [`crate::command::LogWriter`]): the magic line, the `# spec`
//! header, then one command or `IDLE-REF` line per line, closed by `# end N`. [`LogReader`]
//! streams the lines (memory does not depend on the log's length) for the checker and for the
//! converters to other tools' formats.
use crate::command::{CommandRecord, LogHeader, IDLE_REFRESH, LOG_END, LOG_MAGIC};
use crate::error::LogError;
use std::io::BufRead;

/// One line of a command log's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLine {
    Command(CommandRecord),
    /// `count` REFs of an idle rank, `period` cycles apart from `first`.
    IdleRefresh {
        channel: u32,
        rank: u32,
        first: u64,
        count: u64,
        period: u64,
    },
}

/// Streams a command log: [`LogReader::new`] reads the header, iteration yields each body line
/// with its 1-based line number, and the iteration ends with an error if the log was cut short
/// (no `# end N`, or a count that disagrees) or has text after its end.
pub struct LogReader<R: BufRead> {
    reader: R,
    source: String,
    header: LogHeader,
    buf: String,
    lineno: usize,
    lines: u64,
    end: Option<(usize, u64)>,
    done: bool,
}

impl<R: BufRead> LogReader<R> {
    /// Reads the magic and `# spec` lines (`source` names the log in I/O errors).
    pub fn new(mut reader: R, source: &str) -> Result<LogReader<R>, LogError> {
        let mut buf = String::new();
        let mut lineno = 0;
        if !read_line(&mut reader, &mut buf, &mut lineno, source)? || buf.trim_end() != LOG_MAGIC {
            return Err(LogError::Header(format!("line 1: expected '{LOG_MAGIC}'")));
        }
        if !read_line(&mut reader, &mut buf, &mut lineno, source)? {
            return Err(LogError::Header(
                "line 2: missing '# spec {json}' line".into(),
            ));
        }
        let header = parse_spec_line(&buf)?;
        Ok(LogReader {
            reader,
            source: source.into(),
            header,
            buf,
            lineno,
            lines: 0,
            end: None,
            done: false,
        })
    }

    /// The log's header.
    pub fn header(&self) -> &LogHeader {
        &self.header
    }

    fn next_line(&mut self) -> Result<bool, LogError> {
        read_line(
            &mut self.reader,
            &mut self.buf,
            &mut self.lineno,
            &self.source,
        )
    }

    fn next_item(&mut self) -> Result<Option<(LogLine, usize)>, LogError> {
        while self.next_line()? {
            let l = self.buf.trim();
            if l.is_empty() {
                continue;
            }
            if let Some((end_line, _)) = self.end {
                return Err(LogError::Line {
                    line: self.lineno,
                    what: format!("text after the '{LOG_END}' line (line {end_line})"),
                });
            }
            if let Some(rest) = l.strip_prefix(LOG_END) {
                let n = rest.trim().parse::<u64>().map_err(|_| LogError::Line {
                    line: self.lineno,
                    what: format!(
                        "'{LOG_END} N' needs a count of lines, found '{}'",
                        rest.trim()
                    ),
                })?;
                self.end = Some((self.lineno, n));
                continue;
            }
            if l.starts_with('#') {
                continue;
            }
            self.lines += 1;
            if let Some(rest) = l.strip_prefix(IDLE_REFRESH) {
                let (channel, rank, first, count, period) = parse_idle_refresh(rest, self.lineno)?;
                return Ok(Some((
                    LogLine::IdleRefresh {
                        channel,
                        rank,
                        first,
                        count,
                        period,
                    },
                    self.lineno,
                )));
            }
            let rec = CommandRecord::parse_line(l, self.lineno)?;
            return Ok(Some((LogLine::Command(rec), self.lineno)));
        }
        match self.end {
            None => Err(LogError::Truncated(format!(
                "no '{LOG_END} N' line after {} commands: the log was cut short (a failed or interrupted run, or a partial copy)",
                self.lines
            ))),
            Some((_, n)) if n != self.lines => Err(LogError::Truncated(format!(
                "the '{LOG_END}' line counts {n} commands but the log has {}: lines are missing or were added",
                self.lines
            ))),
            Some(_) => Ok(None),
        }
    }
}

impl<R: BufRead> Iterator for LogReader<R> {
    type Item = Result<(LogLine, usize), LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_item() {
            Ok(Some(x)) => Some(Ok(x)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Reads one line into `buf` (cleared first); false at the end of the input.
fn read_line<R: BufRead>(
    reader: &mut R,
    buf: &mut String,
    lineno: &mut usize,
    source: &str,
) -> Result<bool, LogError> {
    buf.clear();
    *lineno += 1;
    match reader.read_line(buf) {
        Ok(0) => Ok(false),
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => Err(LogError::Line {
            line: *lineno,
            what: "not valid UTF-8".into(),
        }),
        Err(e) => Err(LogError::Io {
            path: source.into(),
            what: e.to_string(),
        }),
    }
}

/// Parses the header's second line, `# spec {json}`.
pub fn parse_spec_line(line: &str) -> Result<LogHeader, LogError> {
    let json = line
        .trim()
        .strip_prefix("# spec")
        .ok_or_else(|| LogError::Header("line 2: expected '# spec {json}'".into()))?;
    serde_json::from_str(json.trim())
        .map_err(|e| LogError::Header(format!("line 2: bad spec JSON: {e}")))
}

/// Parses the fields after `IDLE-REF`: channel, rank, first cycle, count, period.
fn parse_idle_refresh(rest: &str, lineno: usize) -> Result<(u32, u32, u64, u64, u64), LogError> {
    let err = |what: String| LogError::Line { line: lineno, what };
    let f: Vec<&str> = rest.split_whitespace().collect();
    if f.len() != 5 {
        return Err(err(format!(
            "{IDLE_REFRESH} takes 5 fields (channel rank first count period), found {}",
            f.len()
        )));
    }
    let num = |i: usize, name: &str| -> Result<u64, LogError> {
        f[i].parse::<u64>()
            .map_err(|_| err(format!("{name} '{}' is not a non-negative integer", f[i])))
    };
    let num32 = |i: usize, name: &str| -> Result<u32, LogError> {
        u32::try_from(num(i, name)?).map_err(|_| err(format!("{name} '{}' is too large", f[i])))
    };
    let (first, count, period) = (num(2, "first cycle")?, num(3, "count")?, num(4, "period")?);
    // The last of the refreshes it stands for, in the log's range of cycles.
    let last = (first as u128) + (count.saturating_sub(1) as u128) * (period as u128);
    if last > crate::command::MAX_LOG_CYCLE as u128 {
        return Err(err(format!(
            "its last refresh, at cycle {last} (first + (count - 1) x period), {}",
            crate::command::BEYOND_LOG_CYCLES
        )));
    }
    Ok((
        num32(0, "channel")?,
        num32(1, "rank")?,
        first,
        count,
        period,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{CommandRecord, MAX_LOG_CYCLE};

    #[test]
    fn a_cycle_beyond_the_signed_range_is_refused_naming_the_line() {
        let ok = format!("{MAX_LOG_CYCLE} RD 0 0 0 0 0 0");
        assert_eq!(
            CommandRecord::parse_line(&ok, 3).unwrap().cycle,
            MAX_LOG_CYCLE
        );
        let e = CommandRecord::parse_line("18446744073709551615 RD 0 0 0 0 0 0", 7)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("line 7: cycle 18446744073709551615 is beyond the largest cycle a command log may hold, 9223372036854775807"),
            "{e}"
        );
        // An idle stretch's refreshes: its last one counts.
        assert!(parse_idle_refresh("0 0 100 3 1000", 9).is_ok());
        let e = parse_idle_refresh(&format!("0 0 {} 3 1000", MAX_LOG_CYCLE - 1500), 9)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("line 9: its last refresh, at cycle 9223372036854776307")
                && e.contains("2^63 - 1"),
            "{e}"
        );
    }
}
