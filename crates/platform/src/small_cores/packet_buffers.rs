//! Packet buffers of the network-I/O platform: fixed-size buffers per location (the MSF's
//! receive and transmit buffers, the small cores' DRAM, kernel buffers, the application's
//! buffer) with free lists, and the moves of a packet's real bytes between them.
use crate::config::network::{Amount, Loc, Part, QueueConfig};
use crate::net::udp_peer::HEADER_BYTES;
use crate::small_cores::host_step_cost::BUFFER_BYTES;
use std::collections::BTreeMap;

/// A packet: where its bytes are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pkt {
    pub loc: Loc,
    pub idx: usize,
    pub len: usize,
}

/// Fixed-size buffers with a free list (the User arena is the application's one buffer).
struct Arena {
    bufs: Vec<Vec<u8>>,
    free: Vec<usize>,
    grow: bool,
}

impl Arena {
    fn new(n: usize, grow: bool) -> Arena {
        Arena {
            bufs: (0..n).map(|_| vec![0; BUFFER_BYTES as usize]).collect(),
            free: (0..n).rev().collect(),
            grow,
        }
    }
    fn alloc(&mut self) -> Option<usize> {
        if let Some(i) = self.free.pop() {
            return Some(i);
        }
        self.grow.then(|| {
            self.bufs.push(vec![0; BUFFER_BYTES as usize]);
            self.bufs.len() - 1
        })
    }
}

/// The packet buffers of every location, and the data moves between them.
pub struct Buffers {
    arenas: BTreeMap<Loc, Arena>,
}

impl Buffers {
    pub fn new(q: &QueueConfig) -> Buffers {
        let mut arenas = BTreeMap::new();
        arenas.insert(Loc::Rbuf, Arena::new(0, true));
        arenas.insert(Loc::Tbuf, Arena::new(0, true));
        arenas.insert(Loc::MeDram, Arena::new(q.me_buffers as usize, false));
        arenas.insert(Loc::Kernel, Arena::new(q.kernel_buffers as usize, false));
        arenas.insert(Loc::User, Arena::new(1, false));
        Buffers { arenas }
    }

    fn arena(&mut self, l: Loc) -> &mut Arena {
        self.arenas
            .get_mut(&l)
            .expect("every location has an arena")
    }

    /// A new packet in `loc` holding `frame`.
    pub fn put(&mut self, loc: Loc, frame: &[u8]) -> Option<Pkt> {
        let idx = if loc == Loc::User {
            0
        } else {
            self.arena(loc).alloc()?
        };
        self.arena(loc).bufs[idx][..frame.len()].copy_from_slice(frame);
        Some(Pkt {
            loc,
            idx,
            len: frame.len(),
        })
    }

    pub fn bytes(&self, p: &Pkt) -> &[u8] {
        &self.arenas[&p.loc].bufs[p.idx][..p.len]
    }

    /// Frees the packet's buffer (the application's buffer stays).
    pub fn release(&mut self, p: Pkt) {
        if p.loc != Loc::User {
            self.arena(p.loc).free.push(p.idx);
        }
    }

    /// Moves the packet's bytes to a new buffer in `to` (None: no buffer free there; the packet
    /// is dropped and its old buffer freed).
    pub fn move_to(&mut self, p: Pkt, to: Loc) -> Option<Pkt> {
        let data = self.bytes(&p).to_vec();
        self.release(p);
        self.put(to, &data)
    }

    /// Removes the packet, returning its bytes.
    pub fn take(&mut self, p: Pkt) -> Vec<u8> {
        let data = self.bytes(&p).to_vec();
        self.release(p);
        data
    }
}

/// Bytes of `a` for a packet of `len` bytes.
pub fn amount(a: Amount, len: usize) -> u64 {
    match a {
        Amount::Bytes(n) => n,
        Amount::Part(Part::Frame) => len as u64,
        Amount::Part(Part::Payload) => len.saturating_sub(HEADER_BYTES) as u64,
        Amount::Part(Part::Headers) => HEADER_BYTES as u64,
    }
}
