//! RoBaRaCoCh: row | bank | rank | column | channel (most to least significant). Consecutive lines
//! alternate channels, then walk one row: the row-buffer-friendly default of Ramulator.
use super::{BitSlicer, Field};
use crate::spec::Organization;

pub fn mapper(org: &Organization, bank_xor: bool) -> BitSlicer {
    BitSlicer::new(
        "RoBaRaCoCh",
        [
            Field::Channel,
            Field::Column,
            Field::Rank,
            Field::Bank,
            Field::Row,
        ],
        org,
        bank_xor,
    )
}
