//! RoRaBaChCo: row | rank | bank | channel | column (most to least significant). Row interleaving:
//! each row-sized chunk of the address space is one whole DRAM row, and consecutive chunks
//! alternate channels, then banks. With the RowClone paper's 4 KB rows every OS page is one row,
//! the minimum in-DRAM copy granularity (MICRO 2013, section 4.3.2).
use super::{BitSlicer, Field};
use crate::spec::Organization;

pub fn mapper(org: &Organization, bank_xor: bool) -> BitSlicer {
    BitSlicer::new(
        "RoRaBaChCo",
        [
            Field::Column,
            Field::Channel,
            Field::Bank,
            Field::Rank,
            Field::Row,
        ],
        org,
        bank_xor,
    )
}
