//! The scan a memory controller makes over its banks after every command: each bank's earliest
//! cycle (its own bank and bank-group part, and its rank's shared horizon for the kind of command
//! it waits to issue) and, in the same pass, the FR-FCFS choice among the banks ready first.
//!
//! Each bank is one word: the wait until its candidate is ready, from a given cycle and capped,
//! above its packed FR-FCFS key (not-a-hit, arrival sequence, bank). The smallest word is both the
//! next cycle and the command to issue then, so the scan is a single minimum. On x86-64 with
//! AVX-512 the same code is compiled a second time for it and chosen at run time (the
//! `multiversion` crate does the detection and dispatch; the compiler turns the loop into 8-bank
//! vector steps); results are identical bit for bit. Without AVX-512 (the scalar loop), channels of
//! many banks scan only the banks with a candidate, from a bitmask ([`min_word_active`]). Where no
//! timing rule reaches as far as the cap on a word's wait, the scalar passes leave the cap out
//! ([`min_word_few_near`], [`min_word_active_near`]): the words are the same.
use multiversion::multiversion;

/// Bits of the arrival sequence in a key: a larger sequence cannot be packed (the caller falls
/// back to ranking candidates the general way).
pub const KEY_SEQ_BITS: u32 = 40;
/// Bits of the bank index in a key: channels with more banks do not use packed keys.
pub const KEY_BANK_BITS: u32 = 8;
/// Bits of a key: not-a-hit, sequence, bank.
pub const KEY_BITS: u32 = KEY_SEQ_BITS + KEY_BANK_BITS + 1;
/// The largest wait a word holds; a scan returning it found no bank ready within reach.
pub const WAIT_CAP: u64 = (1 << (64 - KEY_BITS)) - 1;
const KEY_BANK_MASK: u64 = (1 << KEY_BANK_BITS) - 1;

/// A bank's FR-FCFS rank and its index in one word, smaller first.
#[inline(always)]
pub fn pack_key(is_hit: bool, seq: u64, flat: usize) -> u64 {
    debug_assert!(seq < 1 << KEY_SEQ_BITS && flat <= KEY_BANK_MASK as usize);
    (u64::from(!is_hit) << (KEY_SEQ_BITS + KEY_BANK_BITS)) | (seq << KEY_BANK_BITS) | flat as u64
}

/// The wait and the bank of a word the scan returned.
#[inline]
pub fn unpack(word: u64) -> (u64, usize) {
    (word >> KEY_BITS, (word & KEY_BANK_MASK) as usize)
}

/// Per bank `b`: ready at `max(local[b], horizons[hidx[b]])` (`u64::MAX`: no candidate). Returns
/// the smallest word (wait from `from`, capped at [`WAIT_CAP`], above `key[b]`).
#[inline(always)]
fn scan(local: &[u64], hidx: &[u32], key: &[u64], horizons: &[u64], from: u64) -> u64 {
    let n = local.len();
    let (hidx, key) = (&hidx[..n], &key[..n]);
    let mut best = u64::MAX;
    for b in 0..n {
        // An index out of range cannot happen (indices are built from rank and kind); reading
        // it as "never ready" keeps the loop free of a panic path, which would stop vectorising.
        best = best.min(bank_word(local[b], hidx[b], key[b], horizons, from));
    }
    best
}

/// A bank's word: its wait from `from` (ready at the later of its local part `l` and its rank's
/// horizon `horizons[i]`, an index out of range reading as never), capped, above its key `k`.
#[inline(always)]
fn bank_word(l: u64, i: u32, k: u64, horizons: &[u64], from: u64) -> u64 {
    let h = horizons.get(i as usize).copied().unwrap_or(u64::MAX);
    (cap_wait(l.max(h).max(from) - from) << KEY_BITS) | k
}

/// [`bank_word`] without the cap, for a channel whose banks are all near (see [`min_word_few_near`]):
/// a bank with a candidate waits less than [`WAIT_CAP`], so the cap changes nothing, and a bank
/// without one has the key `u64::MAX`, whose word is `u64::MAX` whatever its wait. The same word
/// as [`bank_word`], three instructions a bank fewer.
#[inline(always)]
fn bank_word_near(l: u64, i: u32, k: u64, horizons: &[u64], from: u64) -> u64 {
    // Indexed, not read as "never" when out of range: a bank's index is always its rank's base
    // plus a kind (a bank without a candidate keeps the last one it had), and the scalar passes
    // do not vectorise anyway. Out of range would be a bug, and panics.
    let h = horizons[i as usize];
    (l.max(h).saturating_sub(from) << KEY_BITS) | k
}

/// [`bank_word`], or [`bank_word_near`] when `NEAR`.
#[inline(always)]
fn word<const NEAR: bool>(l: u64, i: u32, k: u64, horizons: &[u64], from: u64) -> u64 {
    if NEAR {
        bank_word_near(l, i, k, horizons, from)
    } else {
        bank_word(l, i, k, horizons, from)
    }
}

/// `wait.min(WAIT_CAP)` without a branch. Written as `min`, the compiler makes it a branch, and
/// a bank without a candidate (its local part `u64::MAX`) takes it the other way: on channels
/// where such banks are mixed with waiting ones (DDR5's 32 banks on random traffic) it was
/// mispredicted often enough to be the costliest part of the scalar pass.
#[inline(always)]
fn cap_wait(wait: u64) -> u64 {
    // All ones when the wait is over the cap, else zero; `WAIT_CAP` is a run of low ones.
    let over = 0u64.wrapping_sub(u64::from(wait > WAIT_CAP));
    (wait | over) & WAIT_CAP
}

/// The smallest word over the banks, on the best version of [`scan`] this CPU runs.
#[multiversion(targets("x86_64+avx512f"))]
pub fn min_word(local: &[u64], hidx: &[u32], key: &[u64], horizons: &[u64], from: u64) -> u64 {
    scan(local, hidx, key, horizons, from)
}

/// That this CPU runs AVX-512F, found once (by [`VectorCpu::detect`], the only way to make one)
/// rather than tested on every pass: a controller keeps it and hands it to [`min_word_vector`].
#[derive(Debug, Clone, Copy)]
pub struct VectorCpu(());

impl VectorCpu {
    /// `Some` where this CPU runs AVX-512F ([`has_vector_scan`]).
    pub fn detect() -> Option<VectorCpu> {
        has_vector_scan().then_some(VectorCpu(()))
    }
}

/// [`min_word`], the same word, reading each bank's rank horizon from a register instead of
/// gathering it from memory where it can: on x86-64 with AVX-512 (which `cpu` proves), when
/// every bank's index is below 8 (one rank: a candidate's kind is an ACT, PRE, RD, WR, RDA or
/// WRA, indices 0-6) and the banks make whole 8-bank chunks. In profiles of the 5 M-request DDR5
/// run, most of the vector pass's samples were on the first use of its four gathers
/// ([`vector::min_word_one_rank`]). Elsewhere it is [`min_word`]. One call per pass: the
/// AVX-512 function (not inlined into a caller without the target feature) does the rest.
#[inline(always)]
pub fn min_word_vector(
    cpu: VectorCpu,
    local: &[u64],
    hidx: &[u32],
    key: &[u64],
    horizons: &[u64],
    from: u64,
) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let _ = cpu;
        // SAFETY: a `VectorCpu` exists only where the CPU runs AVX-512F (`VectorCpu::detect`),
        // the only requirement of a function compiled with that target feature.
        unsafe { vector::min_word(local, hidx, key, horizons, from) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = cpu;
        min_word(local, hidx, key, horizons, from)
    }
}

/// The AVX-512 pass of [`min_word_vector`], written with intrinsics: the compiler's own
/// vectorisation of [`scan`] gathers each bank's horizon from memory (one gather per 8 banks, on
/// the path from one command to the next), while a table of 8 horizons fits one register.
#[cfg(target_arch = "x86_64")]
mod vector {
    use super::{KEY_BITS, WAIT_CAP};
    use std::arch::x86_64::*;

    /// [`min_word_one_rank`]'s word, or [`super::min_word`]'s where it has none.
    #[target_feature(enable = "avx512f")]
    #[inline(never)]
    pub(super) fn min_word(
        local: &[u64],
        hidx: &[u32],
        key: &[u64],
        horizons: &[u64],
        from: u64,
    ) -> u64 {
        match min_word_one_rank(local, hidx, key, horizons, from) {
            Some(w) => w,
            None => super::min_word(local, hidx, key, horizons, from),
        }
    }

    /// What a pass reads besides the banks: one rank's 8 horizons, each no earlier than `from`,
    /// as a table; `from`; the cap.
    struct Pass {
        table: __m512i,
        from: __m512i,
        cap: __m512i,
    }

    /// [`super::scan`]'s word over `local`, `hidx` and `key`, or `None` when a bank's index
    /// is 8 or more (a second rank; the caller then scans the general way), the banks are not
    /// whole chunks of 8 or there are fewer than 8 horizons. The same word: per bank the later
    /// of its local part, its horizon and `from`, less `from`, capped at [`WAIT_CAP`], shifted
    /// above its key; the minimum over the banks.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) fn min_word_one_rank(
        local: &[u64],
        hidx: &[u32],
        key: &[u64],
        horizons: &[u64],
        from: u64,
    ) -> Option<u64> {
        let n = local.len();
        let t: &[u64; 8] = horizons.get(..8)?.try_into().ok()?;
        if !n.is_multiple_of(8) || hidx.len() < n || key.len() < n {
            return None;
        }
        // Read one by one (scalar loads, which take values still in the store buffer), then
        // put together in one register.
        let table = _mm512_set_epi64(
            t[7] as i64,
            t[6] as i64,
            t[5] as i64,
            t[4] as i64,
            t[3] as i64,
            t[2] as i64,
            t[1] as i64,
            t[0] as i64,
        );
        let from = _mm512_set1_epi64(from as i64);
        // A bank's cycle is the latest of its local part, its horizon and `from`: the horizons
        // are raised to `from` once here, off each chunk's chain of steps.
        let pass = Pass {
            table: _mm512_max_epu64(table, from),
            from,
            cap: _mm512_set1_epi64(WAIT_CAP as i64),
        };
        let banks = (local, hidx, key);
        // 32 banks (DDR5's one rank) in one straight run: four chunks without a loop, their
        // minimum as a tree.
        let (best, indices) = if n == 32 {
            chunks::<4>(&pass, banks)
        } else {
            let mut best = _mm512_set1_epi64(-1);
            let mut indices = _mm256_setzero_si256();
            for c in 0..n / 8 {
                let (w, i) = chunk(&pass, banks, c * 8);
                best = _mm512_min_epu64(best, w);
                indices = _mm256_or_si256(indices, i);
            }
            (best, indices)
        };
        // An index of 8 or more has a bit above the low three: the OR of all of them shows it.
        let high = _mm256_andnot_si256(_mm256_set1_epi32(7), indices);
        if _mm256_testz_si256(high, high) == 0 {
            return None;
        }
        Some(_mm512_reduce_min_epu64(best))
    }

    /// The words of the `C` chunks of 8 banks from bank 0, their minimum as a tree, and the OR
    /// of their indices.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn chunks<const C: usize>(pass: &Pass, banks: (&[u64], &[u32], &[u64])) -> (__m512i, __m256i) {
        let mut words = [_mm512_setzero_si512(); C];
        let mut indices = _mm256_setzero_si256();
        for (c, w) in words.iter_mut().enumerate() {
            let (word, i) = chunk(pass, banks, c * 8);
            *w = word;
            indices = _mm256_or_si256(indices, i);
        }
        let mut step = 1;
        while step < C {
            let mut i = 0;
            while i + step < C {
                words[i] = _mm512_min_epu64(words[i], words[i + step]);
                i += 2 * step;
            }
            step *= 2;
        }
        (words[0], indices)
    }

    /// The words of the 8 banks from bank `b`, and their indices. The caller makes sure that
    /// `b + 8` is within every array of `banks`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn chunk(
        pass: &Pass,
        (local, hidx, key): (&[u64], &[u32], &[u64]),
        b: usize,
    ) -> (__m512i, __m256i) {
        assert!(b + 8 <= local.len() && b + 8 <= hidx.len() && b + 8 <= key.len());
        // SAFETY: `b + 8` is within `local`, `key` (u64) and `hidx` (u32), asserted above: each
        // unaligned load reads 8 elements inside its slice.
        let (l, k, i) = unsafe {
            (
                _mm512_loadu_si512(local.as_ptr().add(b).cast()),
                _mm512_loadu_si512(key.as_ptr().add(b).cast()),
                _mm256_loadu_si256(hidx.as_ptr().add(b).cast()),
            )
        };
        let h = _mm512_permutexvar_epi64(_mm512_cvtepu32_epi64(i), pass.table);
        let at = _mm512_max_epu64(l, h);
        let wait = _mm512_min_epu64(_mm512_sub_epi64(at, pass.from), pass.cap);
        (
            _mm512_or_si512(_mm512_slli_epi64::<{ KEY_BITS }>(wait), k),
            i,
        )
    }
}

/// Whether this CPU runs [`min_word`]'s vector version (AVX-512). Where it does, the pass over
/// many banks stays on it (2-3x the scalar loop at 32 banks, measured on an AVX-512 machine); where
/// it does not, [`min_word_active`] visits only the banks with a candidate.
pub fn has_vector_scan() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The banks up to which [`min_word_few`] is used instead of [`min_word`].
pub const FEW_BANKS: usize = 8;

/// [`scan`] as plain scalar code, for channels of at most [`FEW_BANKS`] banks. There it costs less
/// in place than the AVX-512 version (about a quarter fewer samples in the pass, in profiles of the
/// 5 M-request DDR3 run), probably because the pass reads the arrays right after the scalar stores
/// that updated them, which vector loads and gathers cannot take from the store buffer. On 32 banks
/// (DDR5) the vector version stays: with the scalar pass whole runs took about 1.6x the CPU time.
#[inline]
pub fn min_word_few(local: &[u64], hidx: &[u32], key: &[u64], horizons: &[u64], from: u64) -> u64 {
    few::<false>(local, hidx, key, horizons, from)
}

/// [`min_word_few`] on a channel whose banks are near: every bank with a candidate is ready less
/// than [`WAIT_CAP`] cycles after `from` (the caller knows it from the longest timing rule, see
/// `ChannelDevices::reach`). The same word, without the cap.
#[inline]
pub fn min_word_few_near(
    local: &[u64],
    hidx: &[u32],
    key: &[u64],
    horizons: &[u64],
    from: u64,
) -> u64 {
    few::<true>(local, hidx, key, horizons, from)
}

#[inline(always)]
fn few<const NEAR: bool>(
    local: &[u64],
    hidx: &[u32],
    key: &[u64],
    horizons: &[u64],
    from: u64,
) -> u64 {
    // Eight banks (DDR3, one rank) as fixed arrays: the loop unrolls without bounds checks.
    match (
        <&[u64; 8]>::try_from(local),
        hidx.get(..8).and_then(|h| <&[u32; 8]>::try_from(h).ok()),
        key.get(..8).and_then(|k| <&[u64; 8]>::try_from(k).ok()),
    ) {
        (Ok(l), Some(h), Some(k)) => scan_n::<8, NEAR>(l, h, k, horizons, from),
        _ => scan(local, hidx, key, horizons, from),
    }
}

/// [`scan`] on exactly `N` banks ([`bank_word_near`]'s words when `NEAR`).
#[inline(always)]
fn scan_n<const N: usize, const NEAR: bool>(
    local: &[u64; N],
    hidx: &[u32; N],
    key: &[u64; N],
    horizons: &[u64],
    from: u64,
) -> u64 {
    let mut words = [0u64; N];
    for b in 0..N {
        words[b] = word::<NEAR>(local[b], hidx[b], key[b], horizons, from);
    }
    min_tree(&mut words)
}

/// The smallest of `words` (`u64::MAX` when empty), as a tree of pairwise minima rather than
/// one running minimum: the same value (a minimum does not depend on the order it is taken in),
/// with a dependency chain of about log2(N) steps instead of N. The pass after every command
/// sits on the path from one command to the next, so its latency, not only its instructions,
/// sets the pace. `words` is overwritten.
#[inline(always)]
fn min_tree<const N: usize>(words: &mut [u64; N]) -> u64 {
    let mut step = 1;
    while step < N {
        let mut i = 0;
        while i + step < N {
            words[i] = words[i].min(words[i + step]);
            i += 2 * step;
        }
        step *= 2;
    }
    words.first().copied().unwrap_or(u64::MAX)
}

/// [`scan`] over the banks whose bit is set in `active` (bank `b` is bit `b % 64` of word
/// `b / 64`) only: the same word whenever every bank left out has no candidate (its local part
/// and its key `u64::MAX`, whose word never beats another). On channels with many banks and
/// few of them waiting (DDR5's 32 banks under random traffic with 32-entry queues) it visits the
/// waiting ones only, instead of all of them; a bit beyond the arrays is ignored.
#[inline]
pub fn min_word_active(
    active: &[u64],
    local: &[u64],
    hidx: &[u32],
    key: &[u64],
    horizons: &[u64],
    from: u64,
) -> u64 {
    active_pass::<false>(active, local, hidx, key, horizons, from)
}

/// [`min_word_active`] on a channel whose banks are near (as for [`min_word_few_near`]): the same
/// word, without the cap.
#[inline]
pub fn min_word_active_near(
    active: &[u64],
    local: &[u64],
    hidx: &[u32],
    key: &[u64],
    horizons: &[u64],
    from: u64,
) -> u64 {
    active_pass::<true>(active, local, hidx, key, horizons, from)
}

#[inline(always)]
fn active_pass<const NEAR: bool>(
    active: &[u64],
    local: &[u64],
    hidx: &[u32],
    key: &[u64],
    horizons: &[u64],
    from: u64,
) -> u64 {
    // The common sizes as fixed arrays, indexed by the bit masked to the size: no bounds check
    // in the loop, and fewer registers live (the general loop spilled on this machine).
    let banks = (local, hidx, key);
    let fixed = match (active, local.len()) {
        ([bits], 16) => active_n::<16, NEAR>(*bits, banks, horizons, from),
        ([bits], 32) => active_n::<32, NEAR>(*bits, banks, horizons, from),
        ([bits], 64) => active_n::<64, NEAR>(*bits, banks, horizons, from),
        _ => None,
    };
    fixed.unwrap_or_else(|| active_any::<NEAR>(active, banks, horizons, from))
}

/// A bank's local part, rank-and-kind index and key, as three parallel arrays.
type Banks<'a> = (&'a [u64], &'a [u32], &'a [u64]);

/// [`min_word_active`] on `N` banks (a power of two up to 64; bits at `N` and above ignored);
/// `None` when an array is shorter than `N`.
#[inline(always)]
fn active_n<const N: usize, const NEAR: bool>(
    bits: u64,
    banks: Banks,
    horizons: &[u64],
    from: u64,
) -> Option<u64> {
    let local = <&[u64; N]>::try_from(banks.0.get(..N)?).ok()?;
    let hidx = <&[u32; N]>::try_from(banks.1.get(..N)?).ok()?;
    let key = <&[u64; N]>::try_from(banks.2.get(..N)?).ok()?;
    let mut m = if N >= 64 { bits } else { bits & ((1 << N) - 1) };
    let mut best = u64::MAX;
    while m != 0 {
        let b = m.trailing_zeros() as usize % N;
        m &= m - 1;
        best = best.min(word::<NEAR>(local[b], hidx[b], key[b], horizons, from));
    }
    Some(best)
}

/// [`min_word_active`] on any number of banks.
fn active_any<const NEAR: bool>(active: &[u64], banks: Banks, horizons: &[u64], from: u64) -> u64 {
    let (local, hidx, key) = banks;
    let mut best = u64::MAX;
    for (w, &bits) in active.iter().enumerate() {
        let mut m = bits;
        while m != 0 {
            let b = w * 64 + m.trailing_zeros() as usize;
            m &= m - 1;
            if let (Some(&l), Some(&i), Some(&k)) = (local.get(b), hidx.get(b), key.get(b)) {
                best = best.min(word::<NEAR>(l, i, k, horizons, from));
            }
        }
    }
    best
}

/// The smallest key among the banks ready at `now` (`max(local[b], horizons[hidx[b]]) <= now`)
/// whose rank-and-kind index `hidx[b]` the table `skip` lets through (`skip[hidx[b]]` is 0; a
/// bank whose entry is `u64::MAX` is left out). `u64::MAX`: no such bank. HBM's second command
/// bus searches with it for the best ready command of the other bus: the same dense arrays as
/// [`min_word`], one pass, on the best version this CPU runs.
#[multiversion(targets("x86_64+avx512f"))]
pub fn min_key_ready(
    local: &[u64],
    hidx: &[u32],
    key: &[u64],
    horizons: &[u64],
    skip: &[u64],
    now: u64,
) -> u64 {
    let n = local.len();
    let (hidx, key) = (&hidx[..n], &key[..n]);
    let mut best = u64::MAX;
    for b in 0..n {
        let i = hidx[b] as usize;
        let h = horizons.get(i).copied().unwrap_or(u64::MAX);
        let s = skip.get(i).copied().unwrap_or(u64::MAX);
        let w = if local[b].max(h) <= now {
            key[b] | s
        } else {
            u64::MAX
        };
        best = best.min(w);
    }
    best
}

/// The earliest cycle any bank is ready (`u64::MAX`: none has a candidate).
#[inline]
pub fn min_ready(local: &[u64], hidx: &[u32], horizons: &[u64]) -> u64 {
    let n = local.len();
    let hidx = &hidx[..n];
    let mut next = u64::MAX;
    for b in 0..n {
        let h = horizons.get(hidx[b] as usize).copied().unwrap_or(u64::MAX);
        next = next.min(local[b].max(h));
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The branch-free cap is `min` at, around and far from the cap.
    #[test]
    fn cap_wait_is_min_with_the_cap() {
        let near = (0..4).flat_map(|d| [WAIT_CAP - d, WAIT_CAP + d]);
        let far = [
            0,
            1,
            1 << 15,
            1 << 16,
            1 << 40,
            u64::MAX / 2,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let random = (0..10_000).map(move |_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x >> (x % 64)
        });
        for w in near.chain(far).chain(random) {
            assert_eq!(cap_wait(w), w.min(WAIT_CAP), "wait {w}");
        }
    }

    /// The scan against a plain reading of its contract, on random banks, both versions.
    #[test]
    fn smallest_word_is_the_earliest_then_best_ranked_bank() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for case in 0..2000 {
            let n = match case % 4 {
                0 => [16, 32, 64][rnd(3) as usize],
                1 => 8,
                _ => 1 + rnd(130) as usize,
            };
            let horizons: Vec<u64> = (0..30).map(|_| rnd(200)).collect();
            let local: Vec<u64> = (0..n)
                .map(|_| if rnd(5) == 0 { u64::MAX } else { rnd(200) })
                .collect();
            // One rank's indices (below 8) in some cases: the register table of
            // `min_word_vector`; others fall back to the general pass.
            let span = if case % 3 == 0 { 8 } else { 30 };
            let hidx: Vec<u32> = (0..n).map(|_| rnd(span) as u32).collect();
            let key: Vec<u64> = (0..n)
                .map(|b| match local[b] {
                    u64::MAX => u64::MAX,
                    _ => pack_key(rnd(2) == 0, case * 64 + rnd(1 << 20), b),
                })
                .collect();
            let from = rnd(150);
            // The banks with a candidate, plus some without (which must change nothing).
            let mut active = vec![0u64; n.div_ceil(64)];
            for b in 0..n {
                if local[b] != u64::MAX || rnd(3) == 0 {
                    active[b / 64] |= 1 << (b % 64);
                }
            }
            let expect = (0..n)
                .filter(|&b| local[b] != u64::MAX)
                .map(|b| {
                    let at = local[b].max(horizons[hidx[b] as usize]).max(from);
                    (at - from, key[b], b)
                })
                .min();
            let words = [
                scan(&local, &hidx, &key, &horizons, from),
                min_word(&local, &hidx, &key, &horizons, from),
                match VectorCpu::detect() {
                    Some(cpu) => min_word_vector(cpu, &local, &hidx, &key, &horizons, from),
                    None => min_word(&local, &hidx, &key, &horizons, from),
                },
                min_word_few(&local, &hidx, &key, &horizons, from),
                min_word_active(&active, &local, &hidx, &key, &horizons, from),
                // Every bank here is near: ready within 200 cycles of `from`.
                min_word_few_near(&local, &hidx, &key, &horizons, from),
                min_word_active_near(&active, &local, &hidx, &key, &horizons, from),
            ];
            for w in words {
                match expect {
                    Some((wait, k, b)) => {
                        assert_eq!(unpack(w), (wait, b), "case {case}");
                        assert_eq!(w & ((1 << KEY_BITS) - 1), k);
                    }
                    None => assert_eq!(unpack(w).0, WAIT_CAP),
                }
            }
            let plain = (0..n)
                .map(|b| local[b].max(horizons[hidx[b] as usize]))
                .min()
                .unwrap();
            assert_eq!(min_ready(&local, &hidx, &horizons), plain);
            let skip: Vec<u64> = (0..30)
                .map(|_| if rnd(2) == 0 { 0 } else { u64::MAX })
                .collect();
            let want = (0..n)
                .filter(|&b| {
                    local[b] != u64::MAX
                        && skip[hidx[b] as usize] == 0
                        && local[b].max(horizons[hidx[b] as usize]) <= from
                })
                .map(|b| key[b])
                .min()
                .unwrap_or(u64::MAX);
            assert_eq!(
                min_key_ready(&local, &hidx, &key, &horizons, &skip, from),
                want,
                "case {case}"
            );
        }
    }
}
