//! The wire format of the IPC control channel: one SOCK_SEQPACKET message per protocol message,
//! a fixed 40-byte little-endian header (kind, flags, four u64 fields) and an optional payload
//! (a note text, or chunk data on the plain-socket path).

/// Protocol version carried in HELLO.
pub const VERSION: u32 = 1;
/// Bytes of the fixed header.
pub const HEADER: usize = 40;
/// Largest payload any message carries (a socket-path chunk).
pub const SOCKET_CHUNK: usize = 64 * 1024;
/// Longest note text sent with PULL / NOTE.
pub const MAX_NOTE: usize = 1024;
/// Size of the receive buffer: every valid message fits.
pub const MAX_MSG: usize = HEADER + SOCKET_CHUNK;

/// Flag on MISMATCH / FAIL / NOTE: the message is about the receiver's read op (else its write op).
pub const F_ABOUT_READ: u32 = 1;
/// Flag on CHUNK: the last chunk of a transfer.
pub const F_LAST: u32 = 1;
/// Flag on CHUNK: the data is inline in the message (plain-socket path), not in a ring slot.
pub const F_INLINE: u32 = 2;

/// Message kinds. Field use: `a` is always the transfer index `k` except in HELLO and FREE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    /// a=pid, b=path preference, c=ring slots, d=slot size; flags=version; carries the ring fd.
    Hello = 1,
    /// The sender posted write k (a=k, b=address, c=length) and has not seen the matching read.
    WPost = 2,
    /// The sender posted read k (a=k, b=address, c=length) and has not seen the matching write.
    RPost = 3,
    /// The sender (writer) pushed write k into the receiver's read buffer (a=k, b=bytes).
    WDone = 4,
    /// The sender (reader) pulled the receiver's write k into its buffer (a=k, b=bytes).
    RDone = 5,
    /// The sender (reader) asks the receiver to stream write k through the two-copy or socket path;
    /// payload: why single copy was not used (may be empty).
    Pull = 6,
    /// A chunk of write k: a=k, b=offset, c=length, d=slot; flags F_LAST / F_INLINE.
    Chunk = 7,
    /// The receiver may reuse ring slot (or socket credit) a.
    Free = 8,
    /// Transfer k failed on size: b=write length, c=read length. Flags: F_ABOUT_READ.
    Mismatch = 9,
    /// Transfer k failed on the sender's side; payload: the reason. Flags: F_ABOUT_READ.
    Fail = 10,
    /// Note about transfer k (why single copy was not used); flags F_ABOUT_READ.
    Note = 11,
}

impl Kind {
    fn from_u32(v: u32) -> Option<Kind> {
        Some(match v {
            1 => Kind::Hello,
            2 => Kind::WPost,
            3 => Kind::RPost,
            4 => Kind::WDone,
            5 => Kind::RDone,
            6 => Kind::Pull,
            7 => Kind::Chunk,
            8 => Kind::Free,
            9 => Kind::Mismatch,
            10 => Kind::Fail,
            11 => Kind::Note,
            _ => return None,
        })
    }
}

/// A decoded header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Msg {
    pub kind: Kind,
    pub flags: u32,
    pub a: u64,
    pub b: u64,
    pub c: u64,
    pub d: u64,
}

impl Msg {
    pub fn new(kind: Kind, flags: u32, a: u64, b: u64, c: u64, d: u64) -> Self {
        Msg {
            kind,
            flags,
            a,
            b,
            c,
            d,
        }
    }

    /// The header followed by `payload`.
    pub fn encode(&self, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::with_capacity(HEADER + payload.len());
        v.extend_from_slice(&(self.kind as u32).to_le_bytes());
        v.extend_from_slice(&self.flags.to_le_bytes());
        for x in [self.a, self.b, self.c, self.d] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(payload);
        v
    }

    /// Parse a message; returns the header and the payload.
    pub fn decode(buf: &[u8]) -> Result<(Msg, &[u8]), String> {
        if buf.len() < HEADER {
            return Err(format!(
                "a {}-byte message is shorter than the {HEADER}-byte header",
                buf.len()
            ));
        }
        let u32_at = |i: usize| u32::from_le_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[i..i + 8]);
            u64::from_le_bytes(b)
        };
        let kind = Kind::from_u32(u32_at(0))
            .ok_or_else(|| format!("unknown message kind {}", u32_at(0)))?;
        let msg = Msg {
            kind,
            flags: u32_at(4),
            a: u64_at(8),
            b: u64_at(16),
            c: u64_at(24),
            d: u64_at(32),
        };
        Ok((msg, &buf[HEADER..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_rejects() {
        let m = Msg::new(Kind::Chunk, F_LAST | F_INLINE, 7, 1 << 40, 65536, 3);
        let bytes = m.encode(b"xyz");
        let (d, p) = Msg::decode(&bytes).unwrap();
        assert_eq!(d, m);
        assert_eq!(p, b"xyz");
        assert!(Msg::decode(&bytes[..10]).is_err());
        let mut bad = bytes.clone();
        bad[0] = 99;
        assert!(Msg::decode(&bad)
            .unwrap_err()
            .contains("unknown message kind 99"));
    }
}
