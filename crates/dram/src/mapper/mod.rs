//! Address mappers: physical address -> (channel, rank, bank group, bank, row, column).
//!
//! Each mapper is a bit-slicing order named after its fields from most to least significant
//! (Ro = row, Ba = bank incl. bank group, Ra = rank, Co = column, Ch = channel), in a file of its
//! own; [`build`] picks one by name. The low log2(line size) bits are the offset within a line;
//! address bits above the capacity are ignored (the address wraps), as in Ramulator.
use crate::spec::Organization;

mod ch_ra_ba_ro_co;
mod line_interleave;
mod ro_ba_ra_co_ch;
mod ro_ra_ba_ch_co;

/// The mapper names a config may use.
pub const MAPPERS: &[&str] = &["RoBaRaCoCh", "ChRaBaRoCo", "RoRaBaChCo", "line-interleave"];

/// Where a line lives. `column` counts cache lines (bursts) within the row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Location {
    pub channel: u32,
    pub rank: u32,
    pub bank_group: u32,
    /// Bank within its bank group.
    pub bank: u32,
    pub row: u32,
    pub column: u32,
}

/// An address field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Channel,
    Rank,
    /// Bank group and bank together; the bank group takes the low bits so that consecutive
    /// bank indices alternate groups.
    Bank,
    Row,
    Column,
}

/// Maps addresses to locations and back.
pub trait AddressMapper: Send + Sync {
    fn name(&self) -> &'static str;
    fn map(&self, addr: u64) -> Location;
    /// The line-aligned address of a location (inverse of [`AddressMapper::map`] within capacity).
    fn unmap(&self, loc: &Location) -> u64;
    /// The period after which addresses wrap (`map(a) == map(a + period)`), or `None` when the
    /// fields cover all 64 address bits.
    fn period(&self) -> Option<u64>;
}

/// A mapper defined by its field order, least significant first.
pub struct BitSlicer {
    name: &'static str,
    order_lsb_first: [Field; 5],
    offset_bits: u32,
    bits: [u32; 5],
    bank_groups: u32,
    bank_xor: bool,
    row_bits: u32,
    bank_bits: u32,
    /// Per field in [`Field`] order (channel, rank, bank, row, column): its shift above the line
    /// offset and its mask, so that [`AddressMapper::map`] slices without a loop or a branch.
    shift: [u32; 5],
    mask: [u64; 5],
    /// `log2(bank_groups)` when the bank-group count is a power of two (a shift and a mask split
    /// the flat bank instead of a division).
    bg_shift: Option<u32>,
}

/// A field's place in [`BitSlicer`]'s `shift` and `mask`.
fn field_index(f: Field) -> usize {
    match f {
        Field::Channel => 0,
        Field::Rank => 1,
        Field::Bank => 2,
        Field::Row => 3,
        Field::Column => 4,
    }
}

fn log2(v: u64) -> u32 {
    63 - v.max(1).leading_zeros()
}

impl BitSlicer {
    pub fn new(
        name: &'static str,
        order_lsb_first: [Field; 5],
        org: &Organization,
        bank_xor: bool,
    ) -> BitSlicer {
        let bits_of = |f: Field| match f {
            Field::Channel => log2(org.channels as u64),
            Field::Rank => log2(org.ranks as u64),
            Field::Bank => log2(org.banks_per_rank() as u64),
            Field::Row => log2(org.rows as u64),
            Field::Column => log2(org.lines_per_row() as u64),
        };
        let bits = order_lsb_first.map(bits_of);
        let offset_bits = log2(org.line_bytes());
        let (mut shift, mut mask) = ([0u32; 5], [0u64; 5]);
        let mut at = offset_bits;
        for (f, b) in order_lsb_first.iter().zip(bits) {
            let i = field_index(*f);
            // Shifts past the address's 64 bits read zero, as the loop this replaces did.
            shift[i] = at.min(63);
            mask[i] = if at >= 64 { 0 } else { (1u64 << b) - 1 };
            at += b;
        }
        let bg = org.bank_groups.max(1);
        BitSlicer {
            name,
            order_lsb_first,
            offset_bits,
            bits,
            shift,
            mask,
            bg_shift: bg.is_power_of_two().then(|| bg.trailing_zeros()),
            bank_groups: org.bank_groups,
            bank_xor,
            row_bits: bits_of(Field::Row),
            bank_bits: bits_of(Field::Bank),
        }
    }
    fn xor_mask(&self, row: u32) -> u32 {
        if self.bank_xor && self.bank_bits > 0 {
            row & ((1u32 << self.bank_bits.min(self.row_bits)) - 1)
        } else {
            0
        }
    }
}

impl AddressMapper for BitSlicer {
    fn name(&self) -> &'static str {
        self.name
    }
    fn period(&self) -> Option<u64> {
        let bits = self.offset_bits + self.bits.iter().sum::<u32>();
        (bits < 64).then(|| 1u64 << bits)
    }
    #[inline]
    fn map(&self, addr: u64) -> Location {
        let field = |i: usize| ((addr >> self.shift[i]) & self.mask[i]) as u32;
        let row = field(3);
        let flat_bank = field(2) ^ self.xor_mask(row);
        let (bank_group, bank) = match self.bg_shift {
            Some(s) => (flat_bank & ((1 << s) - 1), flat_bank >> s),
            None => (flat_bank % self.bank_groups, flat_bank / self.bank_groups),
        };
        Location {
            channel: field(0),
            rank: field(1),
            bank_group,
            bank,
            row,
            column: field(4),
        }
    }
    fn unmap(&self, loc: &Location) -> u64 {
        let flat_bank = (loc.bank * self.bank_groups + loc.bank_group) ^ self.xor_mask(loc.row);
        let mut a = 0u64;
        let mut shift = 0;
        for (f, b) in self.order_lsb_first.iter().zip(self.bits) {
            let v = match f {
                Field::Channel => loc.channel,
                Field::Rank => loc.rank,
                Field::Bank => flat_bank,
                Field::Row => loc.row,
                Field::Column => loc.column,
            } as u64;
            a |= (v & ((1u64 << b) - 1)) << shift;
            shift += b;
        }
        a << self.offset_bits
    }
}

/// Builds the mapper named `name` (one of [`MAPPERS`]); `None` for an unknown name.
pub fn build(name: &str, org: &Organization, bank_xor: bool) -> Option<Box<dyn AddressMapper>> {
    match name {
        "RoBaRaCoCh" => Some(Box::new(ro_ba_ra_co_ch::mapper(org, bank_xor))),
        "ChRaBaRoCo" => Some(Box::new(ch_ra_ba_ro_co::mapper(org, bank_xor))),
        "RoRaBaChCo" => Some(Box::new(ro_ra_ba_ch_co::mapper(org, bank_xor))),
        "line-interleave" => Some(Box::new(line_interleave::mapper(org, bank_xor))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn org() -> Organization {
        Organization {
            channels: 2,
            ranks: 2,
            bank_groups: 4,
            banks_per_group: 4,
            rows: 1 << 15,
            columns: 1024,
            subarray_rows: 512,
            device_width: 8,
            bus_width: 64,
            burst_length: 8,
        }
    }

    proptest! {
        #[test]
        fn unmap_inverts_map(addr in 0u64..(1u64 << 40), which in 0usize..4, xor in any::<bool>()) {
            let o = org();
            let m = build(MAPPERS[which], &o, xor).unwrap();
            let cap = o.capacity_bytes();
            let line = (addr % cap) & !63;
            let loc = m.map(line);
            prop_assert_eq!(m.unmap(&loc), line);
            prop_assert!(loc.channel < o.channels && loc.rank < o.ranks && loc.bank_group < o.bank_groups);
            prop_assert!(loc.bank < o.banks_per_group && loc.row < o.rows && loc.column < o.lines_per_row());
        }
    }

    proptest! {
        #[test]
        fn addresses_wrap_at_the_period(addr in 0u64..(1u64 << 40), which in 0usize..4, xor in any::<bool>()) {
            let m = build(MAPPERS[which], &org(), xor).unwrap();
            let p = m.period().unwrap();
            prop_assert!(p <= org().capacity_bytes());
            prop_assert_eq!(m.map(addr), m.map(addr + p));
            prop_assert_eq!(m.map(addr % p), m.map(addr));
        }
    }

    /// The mapping read field by field, least significant first (how `map` sliced before it
    /// kept each field's shift and mask).
    fn sliced(m: &BitSlicer, addr: u64) -> Location {
        let mut a = addr >> m.offset_bits;
        let mut loc = Location::default();
        let mut flat_bank = 0u32;
        for (f, b) in m.order_lsb_first.iter().zip(m.bits) {
            let v = (a & ((1u64 << b) - 1)) as u32;
            a >>= b;
            match f {
                Field::Channel => loc.channel = v,
                Field::Rank => loc.rank = v,
                Field::Bank => flat_bank = v,
                Field::Row => loc.row = v,
                Field::Column => loc.column = v,
            }
        }
        flat_bank ^= m.xor_mask(loc.row);
        loc.bank_group = flat_bank % m.bank_groups;
        loc.bank = flat_bank / m.bank_groups;
        loc
    }

    proptest! {
        /// Any address, in or beyond the capacity, with power-of-two and other bank-group counts.
        #[test]
        fn map_is_the_field_by_field_slicing(addr in any::<u64>(), which in 0usize..4, xor in any::<bool>(),
                                             groups in 1u32..7, ranks in 1u32..3) {
            let o = Organization { bank_groups: groups, ranks, ..org() };
            let m = match which {
                0 => ro_ba_ra_co_ch::mapper(&o, xor),
                1 => ch_ra_ba_ro_co::mapper(&o, xor),
                2 => ro_ra_ba_ch_co::mapper(&o, xor),
                _ => line_interleave::mapper(&o, xor),
            };
            prop_assert_eq!(m.map(addr), sliced(&m, addr));
        }
    }

    #[test]
    fn robaracoch_puts_consecutive_lines_in_one_row() {
        let o = Organization {
            channels: 1,
            ranks: 1,
            ..org()
        };
        let m = build("RoBaRaCoCh", &o, false).unwrap();
        let a = m.map(0);
        let b = m.map(64);
        assert_eq!((a.row, a.bank, a.bank_group), (b.row, b.bank, b.bank_group));
        assert_eq!(b.column, a.column + 1);
    }

    #[test]
    fn line_interleave_spreads_consecutive_lines_over_channels_and_banks() {
        let m = build("line-interleave", &org(), false).unwrap();
        let (a, b, c) = (m.map(0), m.map(64), m.map(128));
        assert_ne!(a.channel, b.channel);
        assert_ne!((a.bank_group, a.bank), (c.bank_group, c.bank));
    }
}
