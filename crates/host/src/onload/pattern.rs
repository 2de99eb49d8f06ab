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

/// Byte k of the pattern for sequence number 0; byte k for `seq` is this plus `seq * 7`
/// (mod 256), so one table serves every sequence number.
fn template() -> &'static [u8] {
    static T: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        (0..crate::onload::frame::MAX_UDP_PAYLOAD)
            .map(|k| byte(0, k))
            .collect()
    })
}

/// Is `buf` exactly payload `seq` of its length? (Branch-free byte arithmetic over a table, so
/// it vectorises: checking costs a fraction of a nanosecond per byte.)
pub fn matches(buf: &[u8], seq: u64) -> bool {
    let head = buf.len().min(8);
    if buf[..head] != seq.to_le_bytes()[..head] {
        return false;
    }
    let t = template();
    if buf.len() > t.len() {
        return false;
    }
    let c = seq.wrapping_mul(7) as u8;
    let diff = buf[head..]
        .iter()
        .zip(&t[head..buf.len()])
        .fold(0u8, |acc, (&b, &e)| acc | (b.wrapping_sub(e) ^ c));
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
            // The table-based check agrees with the byte formula for every byte.
            let p = super::make(77, len);
            assert!(p
                .iter()
                .enumerate()
                .skip(8)
                .all(|(k, &b)| b == super::byte(77, k)));
            if len >= 8 {
                assert_eq!(super::seq_of(&super::make(9, len)), Some(9));
                assert!(!super::matches(&super::make(9, len), 42));
            }
        }
    }
}
