//! The copy kernels: the only code that touches the bytes of a user buffer.
//!
//! * [`copy`]: memcpy / memmove (overlapping ranges are handled by `ptr::copy`, i.e. memmove);
//! * [`copy_nt`]: non-temporal copy for non-overlapping ranges: the destination is written with
//!   streaming stores (`vmovntdq` with AVX2, `movntdq` with SSE2) that bypass the caches, and an
//!   `sfence` orders them before the completion is published;
//! * [`fill`] / [`fill_nt`]: bulk initialisation, cached or streaming.
//!
//! All are `unsafe`: the caller guarantees that the ranges are valid for the whole call.

/// Copy `len` bytes from `src` to `dst` through the caches; the ranges may overlap (memmove).
///
/// # Safety
/// `src` must be valid for reads and `dst` for writes of `len` bytes (any pointer when `len == 0`).
pub unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) {
    if len == 0 {
        return;
    }
    // SAFETY: the caller guarantees both ranges are valid; ptr::copy tolerates overlap.
    unsafe { std::ptr::copy(src, dst, len) }
}

/// Do two ranges of `len` bytes overlap?
pub fn overlaps(a: usize, b: usize, len: usize) -> bool {
    len != 0 && a < b.wrapping_add(len) && b < a.wrapping_add(len)
}

/// Copy `len` bytes with non-temporal (streaming) stores; the ranges must not overlap.
///
/// Falls back to a cached copy when the CPU lacks streaming stores or the ranges overlap.
///
/// # Safety
/// As [`copy`].
pub unsafe fn copy_nt(dst: *mut u8, src: *const u8, len: usize) {
    if overlaps(dst as usize, src as usize, len) || len < 256 {
        // SAFETY: forwarded caller guarantee.
        unsafe { copy(dst, src, len) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is present (checked above); ranges valid and disjoint (caller + check).
            unsafe { x86::copy_nt_avx2(dst, src, len) };
        } else {
            // SAFETY: SSE2 is part of the x86_64 baseline; ranges valid and disjoint.
            unsafe { x86::copy_nt_sse2(dst, src, len) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: forwarded caller guarantee.
        unsafe { copy(dst, src, len) };
    }
}

/// Set `len` bytes at `dst` to `value` through the caches.
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes.
pub unsafe fn fill(dst: *mut u8, value: u8, len: usize) {
    if len == 0 {
        return;
    }
    // SAFETY: the caller guarantees dst is valid for len bytes.
    unsafe { std::ptr::write_bytes(dst, value, len) }
}

/// Set `len` bytes at `dst` to `value` with streaming stores.
///
/// # Safety
/// As [`fill`].
pub unsafe fn fill_nt(dst: *mut u8, value: u8, len: usize) {
    if len < 256 {
        // SAFETY: forwarded caller guarantee.
        unsafe { fill(dst, value, len) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is part of the x86_64 baseline; dst valid for len bytes.
        unsafe { x86::fill_nt_sse2(dst, value, len) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: forwarded caller guarantee.
        unsafe { fill(dst, value, len) };
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Bytes before `p` reaches an `align`-byte boundary.
    fn head(p: *mut u8, align: usize) -> usize {
        (align - (p as usize) % align) % align
    }

    /// # Safety
    /// AVX2 available; `src`/`dst` valid and disjoint for `len >= 256` bytes.
    #[target_feature(enable = "avx2")]
    pub unsafe fn copy_nt_avx2(dst: *mut u8, src: *const u8, len: usize) {
        let h = head(dst, 32);
        // SAFETY: h < 32 <= len; both ranges valid and disjoint (caller).
        unsafe { std::ptr::copy_nonoverlapping(src, dst, h) };
        let mut off = h;
        let body_end = h + (len - h) / 128 * 128;
        while off < body_end {
            // SAFETY: off + 128 <= len; dst + off is 32-byte aligned as streaming stores require;
            // unaligned loads have no alignment requirement.
            unsafe {
                let s = src.add(off);
                _mm_prefetch::<_MM_HINT_NTA>(s.add(512) as *const i8);
                let a = _mm256_loadu_si256(s as *const __m256i);
                let b = _mm256_loadu_si256(s.add(32) as *const __m256i);
                let c = _mm256_loadu_si256(s.add(64) as *const __m256i);
                let d = _mm256_loadu_si256(s.add(96) as *const __m256i);
                let o = dst.add(off) as *mut __m256i;
                _mm256_stream_si256(o, a);
                _mm256_stream_si256(o.add(1), b);
                _mm256_stream_si256(o.add(2), c);
                _mm256_stream_si256(o.add(3), d);
            }
            off += 128;
        }
        // SAFETY: the tail lies within both ranges; the fence orders the streaming stores before
        // anything the caller publishes afterwards (the completion record).
        unsafe {
            std::ptr::copy_nonoverlapping(src.add(off), dst.add(off), len - off);
            _mm_sfence();
        }
    }

    /// # Safety
    /// `src`/`dst` valid and disjoint for `len >= 256` bytes.
    pub unsafe fn copy_nt_sse2(dst: *mut u8, src: *const u8, len: usize) {
        let h = head(dst, 16);
        // SAFETY: h < 16 <= len; ranges valid and disjoint (caller).
        unsafe { std::ptr::copy_nonoverlapping(src, dst, h) };
        let mut off = h;
        let body_end = h + (len - h) / 64 * 64;
        while off < body_end {
            // SAFETY: off + 64 <= len; dst + off is 16-byte aligned for the streaming stores.
            unsafe {
                let s = src.add(off) as *const __m128i;
                let a = _mm_loadu_si128(s);
                let b = _mm_loadu_si128(s.add(1));
                let c = _mm_loadu_si128(s.add(2));
                let d = _mm_loadu_si128(s.add(3));
                let o = dst.add(off) as *mut __m128i;
                _mm_stream_si128(o, a);
                _mm_stream_si128(o.add(1), b);
                _mm_stream_si128(o.add(2), c);
                _mm_stream_si128(o.add(3), d);
            }
            off += 64;
        }
        // SAFETY: tail within both ranges; sfence orders the streaming stores.
        unsafe {
            std::ptr::copy_nonoverlapping(src.add(off), dst.add(off), len - off);
            _mm_sfence();
        }
    }

    /// # Safety
    /// `dst` valid for `len >= 256` bytes.
    pub unsafe fn fill_nt_sse2(dst: *mut u8, value: u8, len: usize) {
        let h = head(dst, 16);
        // SAFETY: h < 16 <= len; dst valid for len bytes.
        unsafe { std::ptr::write_bytes(dst, value, h) };
        let mut off = h;
        let body_end = h + (len - h) / 64 * 64;
        // SAFETY: SSE2 baseline intrinsic with no memory access.
        let v = unsafe { _mm_set1_epi8(value as i8) };
        while off < body_end {
            // SAFETY: off + 64 <= len and dst + off is 16-byte aligned.
            unsafe {
                let o = dst.add(off) as *mut __m128i;
                _mm_stream_si128(o, v);
                _mm_stream_si128(o.add(1), v);
                _mm_stream_si128(o.add(2), v);
                _mm_stream_si128(o.add(3), v);
            }
            off += 64;
        }
        // SAFETY: tail within dst; sfence orders the streaming stores.
        unsafe {
            std::ptr::write_bytes(dst.add(off), value, len - off);
            _mm_sfence();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 131 + 7) as u8).collect()
    }

    #[test]
    fn nt_copy_matches_for_every_head_and_tail() {
        for len in [0usize, 1, 255, 256, 257, 1000, 4096 + 3, 70_000] {
            for so in 0..4 {
                for d_off in [0usize, 1, 17, 31] {
                    let src = pattern(len + so);
                    let mut dst = vec![0xAAu8; len + d_off + 8];
                    // SAFETY: both ranges lie inside the vectors.
                    unsafe { copy_nt(dst.as_mut_ptr().add(d_off), src.as_ptr().add(so), len) };
                    assert_eq!(&dst[d_off..d_off + len], &src[so..so + len]);
                    assert!(dst[..d_off].iter().all(|&b| b == 0xAA));
                    assert!(dst[d_off + len..].iter().all(|&b| b == 0xAA));
                }
            }
        }
    }

    #[test]
    fn fill_nt_matches() {
        for len in [0usize, 3, 256, 1001, 65_537] {
            for off in [0usize, 5] {
                let mut dst = vec![1u8; len + off + 4];
                // SAFETY: the range lies inside the vector.
                unsafe { fill_nt(dst.as_mut_ptr().add(off), 0x5C, len) };
                assert!(dst[off..off + len].iter().all(|&b| b == 0x5C));
                assert!(dst[..off].iter().all(|&b| b == 1));
                assert!(dst[off + len..].iter().all(|&b| b == 1));
            }
        }
    }

    #[test]
    fn overlap_detection() {
        assert!(overlaps(100, 150, 60));
        assert!(!overlaps(100, 160, 60));
        assert!(!overlaps(100, 100, 0));
        assert!(overlaps(150, 100, 60));
    }
}
