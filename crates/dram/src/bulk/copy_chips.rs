//! The parts' in-DRAM copy data (whether a part copies rows inside the array, how many at once,
//! how reliably, and the study each value comes from) and the copy model a run uses. Plain data:
//! the configuration checks it and `copy_reliability.rs` draws the failures; it imports nothing,
//! so the configuration layer can read it without reaching the controller.

/// Rows one multi-row activation raises at most: the source and up to 31 copies (SiMRA, DSN 2024:
/// 32-row simultaneous activation in off-the-shelf DDR4 chips).
pub const MAX_GROUP_ROWS: u32 = 32;

/// Where a part's in-DRAM copy behaviour comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
    /// Measured on real chips of this standard by a published study.
    MeasuredRealChip,
    /// No real-chip study of this standard and part: the behaviour is assumed.
    Hypothetical,
}

impl Provenance {
    /// The label written in tables, JSON and reports.
    pub fn label(self) -> &'static str {
        match self {
            Provenance::MeasuredRealChip => "measured-real-chip",
            Provenance::Hypothetical => "hypothetical",
        }
    }
}

/// One part's in-DRAM copy behaviour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CopyChip {
    pub name: &'static str,
    /// The standard the study measured ("" for the ideal chip: any standard).
    pub standard: &'static str,
    /// Whether the part performs in-DRAM copy at all.
    pub supported: bool,
    /// Copies one multi-row activation makes at most (Multi-RowCopy fan-out).
    pub max_copies: u32,
    /// Per-row success probability, when the study gives one; `None`: the user sets it.
    pub success: Option<f64>,
    /// The study, for the report.
    pub source: &'static str,
}

/// The known parts. Every value cites its source.
pub const CHIPS: [CopyChip; 5] = [
    // The model RowClone (MICRO 2013) and Multi-RowCopy were built on: every copy works.
    CopyChip {
        name: "ideal",
        standard: "",
        supported: true,
        max_copies: 31, // SiMRA's largest group, 32 rows
        success: Some(1.0),
        source: "RowClone (MICRO 2013) as proposed: a chip built to copy; no real-chip study",
    },
    // SiMRA, DSN 2024: DDR4 chips of the manufacturer whose chips perform simultaneous many-row
    // activation copy one row into up to 31 rows; success "near-perfect" and nearly independent
    // of data pattern (0.07 % on average). The per-row rate is left to `controller.copy.success`.
    CopyChip {
        name: "simra-ddr4-supported",
        standard: "DDR4",
        supported: true,
        max_copies: 31,
        success: None,
        source: "Yuksel et al., DSN 2024 (120 DDR4 chips, 18 modules, two manufacturers)",
    },
    // SiMRA, DSN 2024: the other manufacturer's DDR4 chips (Samsung's, per the study's summary)
    // do not perform simultaneous many-row activation.
    CopyChip {
        name: "simra-ddr4-unsupported",
        standard: "DDR4",
        supported: false,
        max_copies: 0,
        success: Some(0.0),
        source: "Yuksel et al., DSN 2024: not every manufacturer's chips support it",
    },
    // ComputeDRAM, MICRO 2019: DDR3 modules of the vendors whose modules performed row copy with
    // the ACT-PRE-ACT sequence; one row into one row (no many-row copy shown). The per-row rate is
    // left to `controller.copy.success`.
    CopyChip {
        name: "computedram-ddr3-supported",
        standard: "DDR3",
        supported: true,
        max_copies: 1,
        success: None,
        source: "Gao, Tziantzioulis, Wentzlaff, MICRO 2019 (DDR3 modules of the major vendors)",
    },
    // ComputeDRAM, MICRO 2019: modules of the vendors on which the sequence did not copy.
    CopyChip {
        name: "computedram-ddr3-unsupported",
        standard: "DDR3",
        supported: false,
        max_copies: 0,
        success: Some(0.0),
        source: "Gao, Tziantzioulis, Wentzlaff, MICRO 2019: not every vendor's modules copy",
    },
];

/// Looks up a chip by name; the error lists the known ones.
pub fn chip(name: &str) -> Result<&'static CopyChip, String> {
    CHIPS.iter().find(|c| c.name == name).ok_or_else(|| {
        let known: Vec<&str> = CHIPS.iter().map(|c| c.name).collect();
        format!("'{name}' is not one of: {}", known.join(", "))
    })
}

/// Whether results for `chip` on `standard` are measured or hypothetical.
pub fn provenance(chip: &CopyChip, standard: &str) -> Provenance {
    if !chip.standard.is_empty() && chip.standard == standard {
        Provenance::MeasuredRealChip
    } else {
        Provenance::Hypothetical
    }
}

/// The copy model a run uses: the part's support, the per-row success probability and the seed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CopyModel {
    /// False: in-DRAM copy is refused and every bulk operation goes over the channel.
    pub supported: bool,
    pub success: f64,
    pub seed: u64,
}

impl Default for CopyModel {
    fn default() -> Self {
        CopyModel {
            supported: true,
            success: 1.0,
            seed: 0,
        }
    }
}
