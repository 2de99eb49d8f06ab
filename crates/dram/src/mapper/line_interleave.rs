//! Cache-line interleaving: row | column | rank | bank | channel (most to least significant).
//! Consecutive lines go to different channels, then different banks; with `bank_xor` the bank index
//! is XORed with low row bits to spread row conflicts (permutation-based interleaving).
use super::{BitSlicer, Field};
use crate::spec::Organization;

pub fn mapper(org: &Organization, bank_xor: bool) -> BitSlicer {
    BitSlicer::new(
        "line-interleave",
        [
            Field::Channel,
            Field::Bank,
            Field::Rank,
            Field::Column,
            Field::Row,
        ],
        org,
        bank_xor,
    )
}
