//! ChRaBaRoCo: channel | rank | bank | row | column (most to least significant). Consecutive rows of
//! one bank are contiguous in the address space; bank-level parallelism only across large strides.
use super::{BitSlicer, Field};
use crate::spec::Organization;

pub fn mapper(org: &Organization, bank_xor: bool) -> BitSlicer {
    BitSlicer::new(
        "ChRaBaRoCo",
        [
            Field::Column,
            Field::Row,
            Field::Bank,
            Field::Rank,
            Field::Channel,
        ],
        org,
        bank_xor,
    )
}
