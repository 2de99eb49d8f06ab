//! movelab command logs as DRAMPower command traces, and back.
//!
//! DRAMPower's command-line tool reads one command per line, comma-separated:
//! `timestamp,COMMAND,rank,bank_group,bank,row,column[,data]`, with the timestamp in clock cycles,
//! the bank numbered within its rank (`bank_group * banks_per_group + bank`), and a hex data word
//! after every RD / RDA / WR / WRA (the burst's bits; its width sets how many bits the interface
//! model sees, not the core energy). The trace ends with an `END` line at the cycle the energy is
//! computed up to.
//!
//! Commands map one to one: ACT, PRE, PREA, RD, RDA, WR, WRA; movelab's REF is `REFA`, REFSB
//! `REFSB` (the bank index: DRAMPower refreshes that index in every group, as movelab does), and
//! REFPB `REFP2B` where it refreshes a bank pair (LPDDR5 with 16 banks) or `REFB` where it
//! refreshes one bank. RowClone's and Multi-RowCopy's commands (ACTC, TR, ACTM) have no DRAMPower
//! command: a log that holds one is refused with its line named. DRAMPower models one channel;
//! the trace carries one of the log's channels.
use crate::command::{CommandKind, CommandRecord, LogHeader};
use crate::command_log::LogLine;
use crate::error::LogError;
use std::io::Write;

/// What [`write_trace`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TraceSummary {
    /// Command lines (the `END` line not counted).
    pub commands: u64,
    /// Commands of other channels, left out.
    pub other_channels: u64,
    /// The `END` line's cycle.
    pub end: u64,
}

/// DRAMPower's name for a movelab command on the device `header` describes; `None` for commands
/// DRAMPower has no equivalent of.
pub fn command_name(kind: CommandKind, header: &LogHeader) -> Option<&'static str> {
    Some(match kind {
        CommandKind::Act => "ACT",
        CommandKind::Pre => "PRE",
        CommandKind::Prea => "PREA",
        CommandKind::Rd => "RD",
        CommandKind::Rda => "RDA",
        CommandKind::Wr => "WR",
        CommandKind::Wra => "WRA",
        CommandKind::Ref => "REFA",
        CommandKind::Refsb => "REFSB",
        CommandKind::Refpb => {
            if header.standard == "LPDDR5" && header.org.banks_per_rank() == 16 {
                "REFP2B"
            } else {
                "REFB"
            }
        }
        // DRAMPower's trace reader has no refresh-management command.
        CommandKind::Actc
        | CommandKind::Tr
        | CommandKind::Actm
        | CommandKind::Rfm
        | CommandKind::Rfmsb
        | CommandKind::Rfmpb => return None,
        // A CAS (LPDDR5 WCK2CK sync) moves no data: left out of the trace (see `write_trace`).
        CommandKind::Cas => return None,
    })
}

/// Writes the commands of `channel` from `lines` (a command log's body, with line numbers) as a
/// DRAMPower trace, closed by `END` at `end` (default: the last command's cycle). Refused: a
/// command DRAMPower has no equivalent of, an `end` before the last command.
pub fn write_trace<W: Write>(
    header: &LogHeader,
    lines: impl Iterator<Item = Result<(LogLine, usize), LogError>>,
    channel: u32,
    end: Option<u64>,
    out: &mut W,
) -> Result<TraceSummary, LogError> {
    if channel >= header.org.channels {
        return Err(LogError::Header(format!(
            "channel {channel} does not exist (the log's device has {} channels)",
            header.org.channels
        )));
    }
    let io = |e: std::io::Error| LogError::Io {
        path: "DRAMPower trace".into(),
        what: e.to_string(),
    };
    let data = "0".repeat(header.org.line_bytes() as usize * 2);
    let bpg = header.org.banks_per_group;
    let mut s = TraceSummary::default();
    let mut last = 0u64;
    let mut write = |r: &CommandRecord,
                     lineno: usize,
                     s: &mut TraceSummary|
     -> Result<(), LogError> {
        if r.channel != channel {
            s.other_channels += 1;
            return Ok(());
        }
        if r.kind == CommandKind::Cas {
            // DRAMPower's trace has no CAS, and the WCK's own power is in neither model:
            // leaving the CAS out changes no energy either side computes.
            return Ok(());
        }
        let name = command_name(r.kind, header).ok_or_else(|| LogError::Line {
            line: lineno,
            what: if matches!(
                r.kind,
                CommandKind::Rfm | CommandKind::Rfmsb | CommandKind::Rfmpb
            ) {
                format!(
                    "{} (refresh management) has no DRAMPower command; write the log of a run without \
                     it (--set controller.rfm=false)",
                    r.kind
                )
            } else {
                format!(
                    "{} (in-DRAM copy) has no DRAMPower command; write the log of a run without RowClone \
                     or Multi-RowCopy",
                    r.kind
                )
            },
        })?;
        let bank = match r.kind {
            CommandKind::Refsb => r.bank,
            _ => r.bank_group * bpg + r.bank,
        };
        write!(
            out,
            "{},{},{},{},{},{},{}",
            r.cycle, name, r.rank, r.bank_group, bank, r.row, r.column
        )
        .map_err(io)?;
        if r.kind.is_read() || r.kind.is_write() {
            write!(out, ",0x{data}").map_err(io)?;
        }
        writeln!(out).map_err(io)?;
        s.commands += 1;
        last = last.max(r.cycle);
        Ok(())
    };
    for item in lines {
        match item? {
            (LogLine::Command(r), lineno) => write(&r, lineno, &mut s)?,
            (
                LogLine::IdleRefresh {
                    channel: c,
                    rank,
                    first,
                    count,
                    period,
                },
                lineno,
            ) => {
                for i in 0..count {
                    let r = CommandRecord::refresh(first + i * period, c, rank);
                    write(&r, lineno, &mut s)?;
                }
            }
        }
    }
    let end = match end {
        Some(e) if e < last => {
            return Err(LogError::Header(format!(
                "end cycle {e} is before the last command (cycle {last})"
            )))
        }
        Some(e) => e,
        None => last,
    };
    writeln!(out, "{end},END,0,0,0,0,0").map_err(io)?;
    s.end = end;
    Ok(s)
}

/// One line of a DRAMPower trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceLine {
    pub cycle: u64,
    pub command: String,
    pub rank: u32,
    pub bank_group: u32,
    /// Bank within the rank.
    pub bank: u32,
    pub row: u32,
    pub column: u32,
    /// The data word's bits (RD / RDA / WR / WRA), 0 when absent.
    pub data_bits: u32,
}

/// The commands DRAMPower's trace reader knows.
pub const COMMANDS: &[&str] = &[
    "NOP", "ACT", "PRE", "PREA", "PRESB", "REFA", "REFB", "REFSB", "REFP2B", "REFDB", "RD", "RDA",
    "WR", "WRA", "PDEA", "PDEP", "PDXA", "PDXP", "SREFEN", "SREFEX", "DSMEN", "DSMEX", "END",
];

/// Reads a DRAMPower trace (to check what [`write_trace`] wrote, or to read other tools' traces),
/// with the same rules as DRAMPower's reader: seven fields, an eighth hex data word for reads and
/// writes. Errors name the line.
pub fn read_trace(text: &str) -> Result<Vec<TraceLine>, LogError> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let line = i + 1;
        let err = |what: String| LogError::Line { line, what };
        if l.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        if f.len() < 7 {
            return Err(err(format!(
                "expected at least 7 fields, found {}",
                f.len()
            )));
        }
        let num = |k: usize, name: &str| -> Result<u64, LogError> {
            f[k].parse::<u64>()
                .map_err(|_| err(format!("{name} '{}' is not a non-negative integer", f[k])))
        };
        let num32 = |k: usize, name: &str| -> Result<u32, LogError> {
            u32::try_from(num(k, name)?).map_err(|_| err(format!("{name} '{}' is too large", f[k])))
        };
        let command = f[1].to_string();
        if !COMMANDS.contains(&command.as_str()) {
            return Err(err(format!("unknown command '{command}'")));
        }
        let needs_data = matches!(command.as_str(), "RD" | "RDA" | "WR" | "WRA");
        let data_bits = if needs_data {
            let d = f
                .get(7)
                .ok_or_else(|| err(format!("{command} needs a data word")))?;
            let hex = d
                .strip_prefix("0x")
                .or_else(|| d.strip_prefix("0X"))
                .unwrap_or(d);
            if hex.is_empty() || hex.len() % 2 != 0 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(err(format!(
                    "data word '{d}' is not an even number of hex digits"
                )));
            }
            u32::try_from(hex.len() * 4).map_err(|_| err("data word too long".into()))?
        } else {
            0
        };
        out.push(TraceLine {
            cycle: num(0, "timestamp")?,
            command,
            rank: num32(2, "rank")?,
            bank_group: num32(3, "bank group")?,
            bank: num32(4, "bank")?,
            row: num32(5, "row")?,
            column: num32(6, "column")?,
            data_bits,
        });
    }
    Ok(out)
}
