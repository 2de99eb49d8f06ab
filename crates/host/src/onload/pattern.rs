//! The payloads the tests and benchmarks send: a sequence number in the first eight bytes and
//! a pattern that depends on it after, so that every delivered payload can be checked byte for
//! byte against what was sent (a stale, shifted or mixed-up buffer fails the check).

/// Byte `k` of the payload of sequence number `seq` (beyond the sequence number itself).
#[inline]
fn byte(seq: u64, k: usize) -> u8 {
    (k as u64)
        .wrapping_mul(131)
        .wrapping_add(seq.wrapping_mul(7))
        .wrapping_add(1) as u8
}

/// Write payload `seq` into `buf` (its whole length).
pub fn fill(buf: &mut [u8], seq: u64) {
    let head = buf.len().min(8);
    buf[..head].copy_from_slice(&seq.to_le_bytes()[..head]);
    for (k, b) in buf.iter_mut().enumerate().skip(8) {
        *b = byte(seq, k);
    }
}

/// Payload `seq` of `len` bytes.
pub fn make(seq: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    fill(&mut v, seq);
    v
}

/// The sequence number a payload carries (payloads of at least 8 bytes).
pub fn seq_of(buf: &[u8]) -> Option<u64> {
    let b: [u8; 8] = buf.get(..8)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// Is `buf` exactly payload `seq` of its length? (Branch-free over the bytes.)
pub fn matches(buf: &[u8], seq: u64) -> bool {
    let head = buf.len().min(8);
    if buf[..head] != seq.to_le_bytes()[..head] {
        return false;
    }
    let diff = buf
        .iter()
        .enumerate()
        .skip(8)
        .fold(0u8, |acc, (k, &b)| acc | (b ^ byte(seq, k)));
    diff == 0
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trip_and_mismatch() {
        for len in [0usize, 3, 8, 18, 1472] {
            let mut p = super::make(42, len);
            assert!(super::matches(&p, 42));
            if len > 0 {
                p[len - 1] ^= 1;
                assert!(!super::matches(&p, 42));
            }
            if len >= 8 {
                assert_eq!(super::seq_of(&super::make(9, len)), Some(9));
                assert!(!super::matches(&super::make(9, len), 42));
            }
        }
    }
}
