//! A seeded generator of bulk operations (page copies or zeroing) with a choice of destination
//! placement, after RowClone section 4.3.1:
//!
//! - `subarray-aware`: the destination page is taken from the source page's subarray (same
//!   channel, rank, bank and subarray, another row), as an OS with per-subarray free lists would;
//! - `agnostic`: the destination page is any page of the footprint.
//!
//! Pages are row-sized and row-aligned through the configured address mapper, so that what the
//! split does with them depends only on where they land. Ops are offered `interval` cycles apart.
use crate::bulk::split::{temp_row, zero_row};
use crate::config::Config;
use crate::error::ConfigError;
use crate::generator::Xoshiro256StarStar;
use crate::mapper::{self, AddressMapper, Location};
use crate::request::{BulkKind, BulkOp, TraceItem};
use crate::spec::Organization;
use serde::{Deserialize, Serialize};

/// Where destination pages go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    SubarrayAware,
    Agnostic,
}

/// What each operation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BulkOpKind {
    Copy,
    Zero,
}

/// A bulk-operation generator as it appears in a config or a Python dict
/// (`{"kind": "bulk", "op": "copy", "count": 1000, "placement": "subarray-aware"}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BulkGenSpec {
    /// Always "bulk" (distinguishes it from line-request generators).
    pub kind: String,
    /// "copy" or "zero".
    pub op: BulkOpKind,
    pub count: u64,
    /// Destination placement (copies only; zeroing has no source).
    #[serde(default = "default_placement")]
    pub placement: Placement,
    /// Pages per operation (each page is one DRAM row).
    #[serde(default = "one")]
    pub pages: u64,
    /// Cycles between operation arrivals.
    #[serde(default)]
    pub interval: u64,
    #[serde(default)]
    pub seed: u64,
}

fn default_placement() -> Placement {
    Placement::SubarrayAware
}
fn one() -> u64 {
    1
}

/// The generator.
pub struct BulkGen {
    spec: BulkGenSpec,
    org: Organization,
    mapper: Box<dyn AddressMapper>,
    rng: Xoshiro256StarStar,
    produced: u64,
}

impl BulkGenSpec {
    pub fn from_json_str(text: &str, source_name: &str) -> Result<BulkGenSpec, ConfigError> {
        let s: BulkGenSpec = serde_json::from_str(text).map_err(|e| ConfigError::Syntax {
            source_name: source_name.into(),
            what: e.to_string(),
        })?;
        if s.kind != "bulk" {
            return Err(ConfigError::invalid(
                source_name,
                "generator.kind",
                "a bulk generator has kind = \"bulk\"",
            ));
        }
        if s.pages == 0 {
            return Err(ConfigError::invalid(
                source_name,
                "generator.pages",
                "must be at least 1",
            ));
        }
        Ok(s)
    }

    /// Builds the generator for the memory system `config` describes.
    pub fn build(&self, config: &Config) -> Result<BulkGen, ConfigError> {
        let spec = config.resolve("config")?;
        let org = spec.org.clone();
        if org.subarray_rows < 4 {
            return Err(ConfigError::invalid(
                "config",
                "dram.org.subarray_rows",
                "bulk generation needs at least 4 rows per subarray",
            ));
        }
        let mapper = mapper::build(&config.controller.mapper, &org, config.controller.bank_xor)
            .ok_or_else(|| ConfigError::Unknown {
                kind: "mapper",
                name: config.controller.mapper.clone(),
                known: mapper::MAPPERS.join(", "),
            })?;
        Ok(BulkGen {
            spec: self.clone(),
            org,
            mapper,
            rng: Xoshiro256StarStar::seed_from_u64(self.seed),
            produced: 0,
        })
    }
}

impl BulkGen {
    /// A random usable row of the subarray holding `row` (not reserved, not `avoid`).
    fn row_in_subarray(&mut self, row: u32, avoid: u32) -> u32 {
        let sa = self.org.subarray_rows;
        let base = row / sa * sa;
        loop {
            let r = base + self.rng.below(sa as u64) as u32;
            if r != avoid && r != zero_row(&self.org, r) && r != temp_row(&self.org) {
                return r;
            }
        }
    }

    fn random_page(&mut self) -> Location {
        let o = &self.org;
        let mut loc = Location {
            channel: self.rng.below(o.channels as u64) as u32,
            rank: self.rng.below(o.ranks as u64) as u32,
            bank_group: self.rng.below(o.bank_groups as u64) as u32,
            bank: self.rng.below(o.banks_per_group as u64) as u32,
            row: self.rng.below(o.rows as u64) as u32,
            column: 0,
        };
        loc.row = self.row_in_subarray(loc.row, u32::MAX);
        loc
    }

    /// The address of a row-sized page: the row's line 0. With a mapper that interleaves lines of
    /// a row with other fields the page is not contiguous; RowClone then falls back by itself.
    fn addr(&self, loc: &Location) -> u64 {
        self.mapper.unmap(loc)
    }
}

impl Iterator for BulkGen {
    type Item = TraceItem;
    fn next(&mut self) -> Option<TraceItem> {
        if self.produced >= self.spec.count {
            return None;
        }
        let arrival = Some(self.produced * self.spec.interval);
        self.produced += 1;
        let bytes = self.spec.pages * self.org.row_bytes();
        let dst_loc = self.random_page();
        let op = match self.spec.op {
            BulkOpKind::Zero => BulkOp {
                kind: BulkKind::Init { value: 0 },
                dst: self.addr(&dst_loc),
                bytes,
                arrival,
            },
            BulkOpKind::Copy => {
                let src_loc = self.random_page();
                let dst_loc = match self.spec.placement {
                    Placement::Agnostic => dst_loc,
                    Placement::SubarrayAware => Location {
                        row: self.row_in_subarray(src_loc.row, src_loc.row),
                        ..src_loc
                    },
                };
                BulkOp {
                    kind: BulkKind::Copy {
                        src: self.addr(&src_loc),
                    },
                    dst: self.addr(&dst_loc),
                    bytes,
                    arrival,
                }
            }
        };
        Some(TraceItem::Bulk(op))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::{simulate, RunOptions};

    fn run(placement: &str) -> crate::stats::Stats {
        let cfg = Config::preset("rowclone-ddr3-1066").unwrap();
        let spec = BulkGenSpec::from_json_str(
            &format!(r#"{{"kind": "bulk", "op": "copy", "count": 200, "placement": "{placement}", "interval": 50, "seed": 3}}"#),
            "test",
        )
        .unwrap();
        simulate(
            &cfg,
            spec.build(&cfg).unwrap().map(Ok),
            RunOptions::default(),
        )
        .unwrap()
    }

    #[test]
    fn subarray_aware_placement_makes_every_copy_fpm() {
        let s = run("subarray-aware");
        assert_eq!(s.bulk.ops, 200);
        assert_eq!(s.bulk.bytes.fpm, 200 * 4096);
        assert_eq!(
            s.bulk.bytes.psm_inter + s.bulk.bytes.psm_intra + s.bulk.bytes.baseline,
            0
        );
    }

    #[test]
    fn agnostic_placement_rarely_gets_fpm_and_is_slower() {
        let a = run("agnostic");
        let aware = run("subarray-aware");
        assert!(a.bulk.bytes.fpm < 200 * 4096 / 20, "{:?}", a.bulk.bytes);
        assert!(a.bulk.latency.mean_ns > 3.0 * aware.bulk.latency.mean_ns);
    }

    #[test]
    fn bad_specs_name_the_key() {
        let e = BulkGenSpec::from_json_str(
            r#"{"kind": "bulk", "op": "copy", "count": 1, "pages": 0}"#,
            "g",
        )
        .unwrap_err();
        assert!(e.to_string().contains("generator.pages"), "{e}");
        let e = BulkGenSpec::from_json_str(r#"{"kind": "bulk", "op": "move", "count": 1}"#, "g")
            .unwrap_err();
        assert!(e.to_string().contains("move"), "{e}");
    }
}
