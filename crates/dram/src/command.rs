//! DRAM commands and the issued-command log that the independent checker replays.
use crate::error::LogError;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A DRAM command. `Actc` and `Tr` are RowClone's in-DRAM copy commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CommandKind {
    /// ACTIVATE: open a row.
    Act,
    /// PRECHARGE one bank.
    Pre,
    /// PRECHARGE all banks of a rank.
    Prea,
    /// READ a column (burst).
    Rd,
    /// WRITE a column (burst).
    Wr,
    /// READ with auto-precharge.
    Rda,
    /// WRITE with auto-precharge.
    Wra,
    /// All-bank REFRESH of a rank.
    Ref,
    /// RowClone FPM's second, back-to-back ACTIVATE to a row of the subarray already open:
    /// copies the row buffer into that row.
    Actc,
    /// RowClone PSM's TRANSFER: one column from the open row of a source bank to the open row of a
    /// destination bank over the chip's internal bus; no data crosses the channel.
    Tr,
    /// DDR5 same-bank REFRESH (REFsb): refreshes the bank with the command's bank index in every
    /// bank group of the rank; those banks must be precharged, the others keep working.
    Refsb,
    /// Per-bank REFRESH (LPDDR5 REFpb, HBM3 REFpb): refreshes the one bank it names, which must
    /// be precharged; the rank's other banks keep working.
    Refpb,
    /// Multi-RowCopy's multi-row ACTIVATE (Yuksel et al., DSN 2024): issued to a bank whose source
    /// row is open, it raises every row of the group the two addresses select at once (the open
    /// row XOR each subset of the bits where the two differ, see `multi_row_copy`), and the
    /// sense amplifiers copy the source row into all of them.
    Actm,
    /// Refresh management, all banks (DDR5 RFMab, HBM3 RFMab; JESD79-5 section 4.41, JESD238):
    /// an extra refresh of the rank the controller owes once a bank's rolling accumulated ACT
    /// (RAA) count reaches RAAIMT. Every bank must be precharged; the rank is busy for tRFM.
    Rfm,
    /// LPDDR5's CAS command with a WCK2CK synchronisation operand (JESD209-5: WS_RD before a
    /// read, WS_WR before a write): starts the data clock WCK for the column command issued on the
    /// next clock, when the rank's WCK is not synchronised (auto sync-off mode, see `wck`). Its
    /// bank fields are those of that column command.
    Cas,
    /// DDR5's same-bank refresh management (RFMsb; JESD79-5 section 4.41): an extra refresh of
    /// the bank with the command's bank index in every bank group, owed once one of those banks'
    /// rolling accumulated ACT count reaches RAAIMT. Those banks must be precharged and are busy
    /// for tRFMsb; the others keep working (timed as REFSB).
    Rfmsb,
    /// HBM3's and HBM4's per-bank refresh management (RFMpb; JESD238, JESD270-4): an extra
    /// refresh of the one bank it names, owed once its rolling accumulated ACT count reaches
    /// RAAIMT. The bank must be precharged and is busy for tRFMpb (timed as REFPB).
    Rfmpb,
}

impl CommandKind {
    /// A request's own command to its bank: ACT, PRE, RD, WR and the auto-precharge forms.
    #[inline(always)]
    pub fn is_bank_access(self) -> bool {
        matches!(
            self,
            CommandKind::Act
                | CommandKind::Pre
                | CommandKind::Rd
                | CommandKind::Wr
                | CommandKind::Rda
                | CommandKind::Wra
        )
    }

    pub const ALL: [CommandKind; 17] = [
        CommandKind::Act,
        CommandKind::Pre,
        CommandKind::Prea,
        CommandKind::Rd,
        CommandKind::Wr,
        CommandKind::Rda,
        CommandKind::Wra,
        CommandKind::Ref,
        CommandKind::Actc,
        CommandKind::Tr,
        CommandKind::Refsb,
        CommandKind::Refpb,
        CommandKind::Actm,
        CommandKind::Rfm,
        CommandKind::Cas,
        CommandKind::Rfmsb,
        CommandKind::Rfmpb,
    ];
    pub fn mnemonic(self) -> &'static str {
        match self {
            CommandKind::Act => "ACT",
            CommandKind::Pre => "PRE",
            CommandKind::Prea => "PREA",
            CommandKind::Rd => "RD",
            CommandKind::Wr => "WR",
            CommandKind::Rda => "RDA",
            CommandKind::Wra => "WRA",
            CommandKind::Ref => "REF",
            CommandKind::Actc => "ACTC",
            CommandKind::Tr => "TR",
            CommandKind::Refsb => "REFSB",
            CommandKind::Refpb => "REFPB",
            CommandKind::Actm => "ACTM",
            CommandKind::Rfm => "RFM",
            CommandKind::Cas => "CAS",
            CommandKind::Rfmsb => "RFMSB",
            CommandKind::Rfmpb => "RFMPB",
        }
    }
    pub fn from_mnemonic(s: &str) -> Option<CommandKind> {
        CommandKind::ALL.into_iter().find(|c| c.mnemonic() == s)
    }
    /// Column commands that move a burst of data over the channel.
    pub fn is_read(self) -> bool {
        matches!(self, CommandKind::Rd | CommandKind::Rda)
    }
    pub fn is_write(self) -> bool {
        matches!(self, CommandKind::Wr | CommandKind::Wra)
    }
    pub fn index(self) -> usize {
        self as usize
    }
    /// Refresh management (RFM, RFMSB, RFMPB): refreshes the controller owes for activations,
    /// outside the refresh interval.
    pub fn is_refresh_management(self) -> bool {
        matches!(
            self,
            CommandKind::Rfm | CommandKind::Rfmsb | CommandKind::Rfmpb
        )
    }
    /// Refreshes (REF, REFSB, REFPB).
    pub fn is_refresh(self) -> bool {
        matches!(
            self,
            CommandKind::Ref | CommandKind::Refsb | CommandKind::Refpb
        )
    }
}

impl fmt::Display for CommandKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mnemonic())
    }
}

/// One issued command, as written to the command log.
///
/// Fields that do not apply to a command are 0 (`row` for PRE, for example). For `Tr`, `bank_group`,
/// `bank`, `row`, `column` are the source and `dst` holds the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandRecord {
    pub cycle: u64,
    pub kind: CommandKind,
    pub channel: u32,
    pub rank: u32,
    pub bank_group: u32,
    pub bank: u32,
    pub row: u32,
    pub column: u32,
    pub dst: Option<TransferDst>,
}

/// The destination of a TRANSFER.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferDst {
    pub bank_group: u32,
    pub bank: u32,
    pub row: u32,
    pub column: u32,
}

/// The first line of a command log: identifies the format and carries the resolved DRAM spec
/// (organisation and every timing parameter), so that a log can be checked on its own.
pub const LOG_MAGIC: &str = "# movelab-command-log v2";

/// The largest cycle a command log may hold: 2^63 - 1. The checker reports the separation of two
/// commands (which may be negative) as a signed 64-bit number, which a later cycle would overflow;
/// a log beyond it (a simulated run never gets there: 2^63 cycles at 1 GHz are 292 years) is
/// refused naming its line, never checked with its numbers saturated.
pub const MAX_LOG_CYCLE: u64 = i64::MAX as u64;

/// What a cycle beyond [`MAX_LOG_CYCLE`] is told.
pub(crate) const BEYOND_LOG_CYCLES: &str = "is beyond the largest cycle a command log may hold, \
     9223372036854775807 (2^63 - 1: the checker's separations between cycles are signed 64-bit)";

impl CommandRecord {
    /// An all-bank REF of `rank` at `cycle`.
    pub fn refresh(cycle: u64, channel: u32, rank: u32) -> CommandRecord {
        CommandRecord {
            cycle,
            kind: CommandKind::Ref,
            channel,
            rank,
            bank_group: 0,
            bank: 0,
            row: 0,
            column: 0,
            dst: None,
        }
    }

    /// One log line: `cycle CMD channel rank bank_group bank row column [dst_bg dst_bank dst_row dst_col]`.
    pub fn to_line(&self) -> String {
        let mut s = format!(
            "{} {} {} {} {} {} {} {}",
            self.cycle,
            self.kind,
            self.channel,
            self.rank,
            self.bank_group,
            self.bank,
            self.row,
            self.column
        );
        if let Some(d) = self.dst {
            s.push_str(&format!(
                " {} {} {} {}",
                d.bank_group, d.bank, d.row, d.column
            ));
        }
        s
    }

    /// Parses one log line (`lineno` is 1-based, for the error message). A cycle beyond
    /// [`MAX_LOG_CYCLE`] is refused.
    pub fn parse_line(line: &str, lineno: usize) -> Result<CommandRecord, LogError> {
        let err = |what: String| LogError::Line { line: lineno, what };
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 8 && f.len() != 12 {
            return Err(err(format!(
                "expected 8 fields (12 for TR), found {}",
                f.len()
            )));
        }
        let kind = CommandKind::from_mnemonic(f[1])
            .ok_or_else(|| err(format!("unknown command '{}'", f[1])))?;
        let num = |i: usize, name: &str| -> Result<u64, LogError> {
            f[i].parse::<u64>()
                .map_err(|_| err(format!("{name} '{}' is not a non-negative integer", f[i])))
        };
        let num32 = |i: usize, name: &str| -> Result<u32, LogError> {
            u32::try_from(num(i, name)?).map_err(|_| err(format!("{name} '{}' is too large", f[i])))
        };
        let dst = if f.len() == 12 {
            Some(TransferDst {
                bank_group: num32(8, "dst bank group")?,
                bank: num32(9, "dst bank")?,
                row: num32(10, "dst row")?,
                column: num32(11, "dst column")?,
            })
        } else {
            None
        };
        if (kind == CommandKind::Tr) != dst.is_some() {
            return Err(err("TR takes 12 fields and every other command 8".into()));
        }
        let cycle = num(0, "cycle")?;
        if cycle > MAX_LOG_CYCLE {
            return Err(err(format!("cycle {cycle} {BEYOND_LOG_CYCLES}")));
        }
        Ok(CommandRecord {
            cycle,
            kind,
            channel: num32(2, "channel")?,
            rank: num32(3, "rank")?,
            bank_group: num32(4, "bank group")?,
            bank: num32(5, "bank")?,
            row: num32(6, "row")?,
            column: num32(7, "column")?,
            dst,
        })
    }
}

/// The second line of a command log (after [`LOG_MAGIC`], as `# spec <json>`): everything a
/// checker needs to know about the device that produced the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogHeader {
    pub standard: String,
    pub speed: String,
    pub part: String,
    pub org: crate::spec::Organization,
    /// Every timing parameter in clocks (plus `tCK_ps`), by name.
    pub timing: std::collections::BTreeMap<String, u64>,
    /// Whether the controller refreshed (so the checker can verify the refresh interval).
    pub refresh: bool,
}

/// Receives every command a controller issues, in issue order.
pub trait CommandSink {
    fn record(&mut self, r: &CommandRecord);

    /// `count` all-bank REFs of one rank, the first at cycle `first` and then every `period`
    /// cycles, issued while the controller was idle and accounted for without being simulated
    /// one by one (see `Controller::skip_idle_refreshes`). By default they are recorded one by
    /// one; the log writer writes them as one [`IDLE_REFRESH`] line.
    fn idle_refreshes(&mut self, channel: u32, rank: u32, first: u64, count: u64, period: u64) {
        for i in 0..count {
            self.record(&CommandRecord::refresh(first + i * period, channel, rank));
        }
    }
}

/// The keyword of a log line that stands for periodic REFs of an idle rank:
/// `IDLE-REF channel rank first count period`.
pub const IDLE_REFRESH: &str = "IDLE-REF";

/// The prefix of a command log's last line, `# end N` (N: the command and IDLE-REF lines before
/// it). A log without it, or whose count disagrees, was cut short.
pub const LOG_END: &str = "# end";

impl CommandSink for Vec<CommandRecord> {
    fn record(&mut self, r: &CommandRecord) {
        self.push(*r);
    }
}

/// Writes the command log in the text format [`CommandRecord::to_line`] describes, after the
/// [`LOG_MAGIC`] line and the `# spec` header line.
pub struct LogWriter<W: std::io::Write> {
    out: W,
    lines: u64,
    error: Option<std::io::Error>,
}

impl<W: std::io::Write> LogWriter<W> {
    pub fn new(mut out: W, header: &LogHeader) -> std::io::Result<Self> {
        writeln!(out, "{LOG_MAGIC}")?;
        let json = serde_json::to_string(header).map_err(std::io::Error::other)?;
        writeln!(out, "# spec {json}")?;
        Ok(LogWriter {
            out,
            lines: 0,
            error: None,
        })
    }
    /// Writes the `# end` line, flushes, and reports the first write error, if any happened.
    /// A log that was not finished (a failed or interrupted run) has no end line, and the
    /// checker refuses it as cut short.
    pub fn finish(mut self) -> std::io::Result<W> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        writeln!(self.out, "{LOG_END} {}", self.lines)?;
        self.out.flush()?;
        Ok(self.out)
    }
    fn line(&mut self, text: std::fmt::Arguments<'_>) {
        if self.error.is_none() {
            match self.out.write_fmt(text) {
                Ok(()) => self.lines += 1,
                Err(e) => self.error = Some(e),
            }
        }
    }
}

impl<W: std::io::Write> CommandSink for LogWriter<W> {
    fn record(&mut self, r: &CommandRecord) {
        self.line(format_args!("{}\n", r.to_line()));
    }
    fn idle_refreshes(&mut self, channel: u32, rank: u32, first: u64, count: u64, period: u64) {
        self.line(format_args!(
            "{IDLE_REFRESH} {channel} {rank} {first} {count} {period}\n"
        ));
    }
}

/// The header a command log of this configuration starts with.
pub fn log_header(config: &crate::config::Config, spec: &crate::spec::DramSpec) -> LogHeader {
    header_from_spec(spec, config.controller.refresh != "none")
}

/// Builds the log header of a resolved spec (what a controller writes on a log's second line).
pub fn header_from_spec(spec: &crate::spec::DramSpec, refresh: bool) -> LogHeader {
    LogHeader {
        standard: spec.standard.clone(),
        speed: spec.speed.clone(),
        part: spec.part.clone(),
        org: spec.org.clone(),
        timing: spec.timing.clone(),
        refresh,
    }
}
