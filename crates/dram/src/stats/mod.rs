//! Statistics of a simulation: typed, serialisable, merged across channels. [`collect`] assembles
//! them from a run's controllers.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod collect;

/// Latencies in cycles, with exact percentiles below [`Histogram::EXACT`] cycles and
/// power-of-two buckets above: memory does not grow with the number of samples.
#[derive(Debug, Clone)]
pub struct Histogram {
    exact: Vec<u64>,
    log: [u64; 64],
    count: u64,
    sum: u128,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            exact: vec![0; Self::EXACT as usize],
            log: [0; 64],
            count: 0,
            sum: 0,
            max: 0,
        }
    }
}

impl Histogram {
    pub const EXACT: u64 = 8192;

    #[inline]
    pub fn add(&mut self, v: u64) {
        if v < Self::EXACT {
            self.exact[v as usize] += 1;
        } else {
            self.log[63 - v.leading_zeros() as usize] += 1;
        }
        self.count += 1;
        self.sum += v as u128;
        self.max = self.max.max(v);
    }

    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.exact.iter_mut().zip(&o.exact) {
            *a += b;
        }
        for (a, b) in self.log.iter_mut().zip(&o.log) {
            *a += b;
        }
        self.count += o.count;
        self.sum += o.sum;
        self.max = self.max.max(o.max);
    }

    /// The smallest value v such that at least fraction `q` of samples are <= v (upper bound of
    /// the bucket above the exact range).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let target = ((q * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (v, c) in self.exact.iter().enumerate() {
            seen += c;
            if seen >= target {
                return v as u64;
            }
        }
        for (b, c) in self.log.iter().enumerate() {
            seen += c;
            if seen >= target {
                return ((1u128 << (b + 1)) - 1).min(self.max as u128) as u64;
            }
        }
        self.max
    }

    pub fn summary(&self, tck_ps: u64) -> LatencyStats {
        let ns = |c: f64| c * tck_ps as f64 / 1000.0;
        let mean = if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        };
        LatencyStats {
            count: self.count,
            mean_cycles: mean,
            p50_cycles: self.quantile(0.5),
            p99_cycles: self.quantile(0.99),
            max_cycles: self.max,
            mean_ns: ns(mean),
            p50_ns: ns(self.quantile(0.5) as f64),
            p99_ns: ns(self.quantile(0.99) as f64),
            max_ns: ns(self.max as f64),
        }
    }
}

/// A latency distribution's summary.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LatencyStats {
    pub count: u64,
    pub mean_cycles: f64,
    pub p50_cycles: u64,
    pub p99_cycles: u64,
    pub max_cycles: u64,
    pub mean_ns: f64,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub max_ns: f64,
}

/// Energy by component, in nanojoules, for the whole memory system.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct EnergyBreakdown {
    pub activate_nj: f64,
    pub precharge_nj: f64,
    pub read_nj: f64,
    pub write_nj: f64,
    /// RowClone TRANSFERs: a read burst in the source bank and a write burst in the destination.
    pub transfer_nj: f64,
    pub refresh_nj: f64,
    pub background_nj: f64,
    /// Data crossing the memory channel (I/O and termination), per bit.
    pub io_nj: f64,
    pub total_nj: f64,
}

/// Bytes moved by each bulk mechanism.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct BulkBytes {
    /// Read and written over the channel.
    pub baseline: u64,
    /// RowClone Fast Parallel Mode (whole rows within a subarray).
    pub fpm: u64,
    /// RowClone Pipelined Serial Mode between banks.
    pub psm_inter: u64,
    /// RowClone PSM within a bank, through a reserved row of another bank.
    pub psm_intra: u64,
    /// Multi-RowCopy (one source row into a group of rows of its subarray).
    #[serde(default)]
    pub mrc: u64,
}

impl BulkBytes {
    /// Adds another operation's bytes.
    pub fn add(&mut self, o: &BulkBytes) {
        self.baseline += o.baseline;
        self.fpm += o.fpm;
        self.psm_inter += o.psm_inter;
        self.psm_intra += o.psm_intra;
        self.mrc += o.mrc;
    }
}

/// Bulk-operation statistics.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BulkStats {
    pub ops: u64,
    pub copies: u64,
    pub inits: u64,
    pub bytes: BulkBytes,
    pub latency: LatencyStats,
    /// In-DRAM copy as the part does it, when the run's mechanism copies in DRAM: left out of
    /// channel-only runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_dram_copy: Option<InDramCopy>,
}

/// The part behaviour an in-DRAM copy run assumed, and where it comes from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct InDramCopy {
    /// The part (`controller.copy.chip`).
    pub chip: String,
    /// "measured-real-chip" when a study measured this part on this standard, else
    /// "hypothetical".
    pub provenance: String,
    /// Per-row success probability of one attempt.
    pub success: f64,
    /// Attempts repeated after a failed copy.
    pub retries: u64,
}

/// Row-buffer outcomes of line requests.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RowStats {
    pub hits: u64,
    pub misses: u64,
    pub conflicts: u64,
}

/// Everything a run reports.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Stats {
    pub standard: String,
    pub speed: String,
    pub part: String,
    pub channels: u32,
    pub ranks: u32,
    pub scheduler: String,
    pub row_policy: String,
    pub mapper: String,
    pub bulk_mechanism: String,
    pub tck_ps: u64,
    /// Simulated time: the cycle at which the last request completed.
    pub cycles: u64,
    pub time_ns: f64,
    pub reads: u64,
    pub writes: u64,
    pub read_latency: LatencyStats,
    pub write_latency: LatencyStats,
    /// Bytes that crossed the channel(s), both directions.
    pub channel_bytes: u64,
    pub bandwidth_gb_s: f64,
    pub row: RowStats,
    pub commands: BTreeMap<String, u64>,
    pub energy: EnergyBreakdown,
    /// False when the part has no public currents: `energy` is then all zero, not a measurement.
    pub energy_available: bool,
    pub bulk: BulkStats,
}
