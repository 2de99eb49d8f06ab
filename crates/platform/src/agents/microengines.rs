//! IXP-style microengines as an agent of the platform (Wun & Crowley, Hot Interconnects 2006: the IXP2350's
//! small multithreaded cores beside its XScale host core): the receive and transmit microcode of
//! the paper's emu nic, softnic and onloader, with its own MAC and receive and transmit buffers
//! (the MSF's RBUF and TBUF), on the platform's one memory system: the microengines' memory
//! commands go through the platform's caches, coherence and DRAM model, and the host's driver
//! and stack are a program on a platform core (`systems/udp_pair.rs` runs the configurations
//! against an iperf peer).
//!
//! - A frame from the link reaches the MAC and takes whole RBUF elements; a frame that finds too
//!   few free is dropped at the MSF and counted (`nic.rx_drops`), so microengines too slow for the
//!   line drop frames instead of falling behind without bound.
//! - Each accepted frame is a job for one hardware context, in arrival order, once the host has
//!   posted an RX buffer (the `nic-rx` driver's uncached store to the RX tail register: the
//!   82598's offsets, so the same program drives a NIC, an iDMA or the microengines).
//! - A context runs the receive program: its per-frame work (`frame_cycles`), a read of the host's
//!   RX descriptor through the memory system (from the cache that holds its line dirty, or from
//!   DRAM), then the frame in `chunk_bytes` commands, `copy_depth` in flight: each chunk is read
//!   from the RBUF (on chip: `rbuf_read_ns` and the MSF's bandwidth), checksummed on the ALU
//!   (`checksum_cycles_per_word`) and written to the RX buffer as posted line writes (to memory,
//!   or with `l2_push` into `irq_core`'s L2); then the descriptor work (`done_cycles`).
//! - The contexts of one microengine share its single-issue pipeline: a context's ALU work and
//!   command issue wait for the pipeline, and a context swaps out (`switch_cycles`) at every memory
//!   command, so another context's work overlaps its wait. The microengines' clock, count and
//!   contexts therefore set the rate at which frames can be taken.
//! - Frames complete in order (the IXP's ordered thread completion): a finished frame's
//!   descriptor is written back, and `irq_core` interrupted, only after every earlier frame's.
//!
//! The oracle: every byte landed in an RX buffer is checked, in order, against the frames that
//! came off the wire and were accepted (`rx_bytes_checked`, `rx_bytes_wrong`).
//!
//! - Transmit: the host's store to the TX tail register posts a descriptor (the 82598's
//!   offsets, as the `nic-tx` driver writes it). In posting order, while the TBUF has room, a
//!   context runs the transmit program: its per-frame work, the TX descriptor's read through the
//!   memory system, then the buffer in `chunk_bytes` commands (lines dirty in a core's cache come
//!   from it; each payload line's version is checked against the last one written), checksummed
//!   on the ALU into the TBUF; then the descriptor work. Frames go to the MAC in order, their
//!   descriptors are written back and (`tx_irq`) the host is interrupted to free the buffer.
//! - Wun & Crowley's configurations as data: `rx_mode` and `tx_mode` `frame` (the emu nic and
//!   the softnic: the whole frame to or from the host's buffer; whether the microengines
//!   checksum is `checksum_cycles_per_word`, whether they push into the L2 `l2_push`), `onload`
//!   (the onloader: the microengines parse or build the headers, read the connection's control
//!   block from SRAM (`sram_ns`), put the datagram on the connection's scratch ring
//!   (`scratch_ns`), and the host's buffer holds the UDP payload only); and the iperf peer at the
//!   far end of the wire, `source` (datagrams back to back at the MAC's rate, no host) and `sink`
//!   (every datagram checked in the RBUF and dropped).
//!
//! With `iperf`, frames are iperf UDP datagrams (`net/udp_peer.rs`): the transmit program sends
//! datagram k for the k-th descriptor (the bytes of the host's buffer stand for it; their lines'
//! versions are what is checked), and the receiving side checks every datagram it delivers, in
//! order, byte for byte, with its checksums where the frame arrives whole.
//!
//! - The host reaches the microengines' scratch and SRAM through windows of their register
//!   range (`SCRATCH_WINDOW`, `SRAM_WINDOW`: the public IXP2000 driver's rings and RX
//!   descriptors): a host load there waits `scratch_ns` or `sram_ns`, a store is posted.
//!
//! Modelled: one interrupt per frame (`rx_irq`, `tx_irq` turn them off), the free lists as
//! descriptor rings in host memory; SRAM and scratch rings as their latencies on the context's
//! path (their contention is not modelled). Not modelled: the MSF's mpacket reassembly across
//! elements; back-pressure of the TX ring on the host (descriptors beyond the ring's size wait
//! in order).
use crate::agents::device_dma::{self, MacPort};
use crate::agents::{Agent, AgentReport, Port};
use crate::config::microengines::MicroenginesConfig;
use crate::config::platform::PlatformConfig;
use crate::devices::nic;
use crate::iface::{Access, OffloadOp, Token};
use crate::memory::memory_system::{AgentId, MemorySystem, ReqKind, Response};
use crate::net::udp_peer::{self, UdpReceiver, HEADER_BYTES};
use crate::pcie::host_memory::HostMemory;
use crate::sim::error::PlatformError;
use crate::sim::{ns, Ps};
use crate::stats::{CopyLines, DeviceStats, SmallCoreStats};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// The host's RX tail store reaches the microengines.
const EV_RX_TAIL: u16 = 0;
/// A descriptor line a context asked for is in (id: the memory request).
const EV_LINE: u16 = 1;
/// A frame from the wire is through the MAC (id: the held frame).
const EV_FRAME: u16 = 2;
/// A context's RBUF reads are in (id: the context).
const EV_CHUNKS: u16 = 3;
/// A context finished a frame (id: the context).
const EV_DONE: u16 = 4;
/// A source line of a copy chunk is in (id: the memory request; tag: the context).
const EV_COPY_LINE: u16 = 5;
/// A context's copy chunk is written (id: the context).
const EV_COPY_DONE: u16 = 6;

/// A context finished a frame to send (id: the context).
const EV_TX_DONE: u16 = 7;
/// A frame's last bit left the MAC (id: the held frame).
const EV_TX_SENT: u16 = 8;
/// A `source` sends its next datagram.
const EV_SOURCE: u16 = 9;

/// Memory-request tags of copy reads are the context's number with this bit set.
const COPY_TAG: u32 = 1 << 30;
/// The host's window on the microengines' scratch memory (its hardware rings), offsets in the
/// register range: a host load there waits `scratch_ns`, a store is posted. The public IXP2000
/// driver (Linux `drivers/net/ixp2000/ixpdev.c`) takes each received buffer from a scratch ring
/// (`RING_RX_DONE`) and gives it back on another (`RING_RX_PENDING`).
pub const SCRATCH_WINDOW: std::ops::Range<u64> = 0x1_0000..0x1_8000;
/// The host's window on the microengines' SRAM: a host load there waits `sram_ns`, a store is
/// posted. The same driver's RX descriptors (buffer address, length, port) live in SRAM.
pub const SRAM_WINDOW: std::ops::Range<u64> = 0x1_8000..0x2_0000;
/// Memory-request tags of the transmit program's reads (descriptor, payload): this bit.
const TX_TAG: u32 = 1 << 29;

/// A frame a context works on.
#[derive(Debug)]
struct Job {
    ticket: u64,
    frame: Vec<u8>,
    elements: u32,
    /// The RX descriptor it fills and the buffer that descriptor names.
    desc: u32,
    buf: u64,
    /// Bytes read from the RBUF so far, and in the reads in flight.
    read: usize,
    reading: usize,
    started: Ps,
}

#[derive(Debug)]
struct Ctx {
    me: usize,
    job: Option<Job>,
    copy: Option<Chunk>,
    tx: Option<TxJob>,
}

impl Ctx {
    fn free(&self) -> bool {
        self.job.is_none() && self.copy.is_none() && self.tx.is_none()
    }
}

/// A frame a context sends: the descriptor the host posted, then the buffer's bytes (the whole
/// frame, or in `onload` the UDP payload) read through the memory system into the TBUF.
#[derive(Debug)]
struct TxJob {
    ticket: u64,
    desc: u32,
    buf: u64,
    /// Bytes read from the host buffer: all, so far, and in the reads in flight.
    len: usize,
    read: usize,
    reading: usize,
    /// Line reads still out (the descriptor's, then a chunk's).
    lines_out: u32,
    desc_in: bool,
    /// TBUF elements it holds, and the frame's length on the wire.
    elements: u32,
    wire_len: usize,
    started: Ps,
}

/// A frame through the transmit program, waiting for every earlier one before the MAC.
#[derive(Debug)]
struct TxFinished {
    desc: u32,
    frame: Vec<u8>,
    elements: u32,
    at: Ps,
}

/// A part of an offloaded copy a context moves: destination lines, each with the value its
/// source held when read (value shadow on), and source reads still out.
#[derive(Debug)]
struct Chunk {
    op: u32,
    dst: Vec<u64>,
    vals: Vec<Option<u64>>,
    reads_out: u32,
}

/// A copy a core handed the microengines: its chunks not yet taken, those in flight, and who
/// waits for it.
#[derive(Debug)]
struct Copy {
    core: usize,
    seq: u64,
    src: u64,
    dst: u64,
    bytes: u64,
    next: u64,
    out: u32,
    issued: Ps,
}

#[derive(Debug, Default, Clone, Copy)]
struct Engine {
    pipe_free: Ps,
    busy: Ps,
    /// Contexts holding a job.
    active: u32,
}

/// A frame finished by a context, waiting for every earlier one (a `sink`'s keeps its bytes).
#[derive(Debug)]
struct Finished {
    desc: u32,
    buf: u64,
    len: usize,
    at: Ps,
    frame: Vec<u8>,
}

/// The microengines, their MAC and RBUF, as a platform agent.
pub struct Microengines {
    id: AgentId,
    cfg: MicroenginesConfig,
    cycle: f64,
    engines: Vec<Engine>,
    ctxs: Vec<Ctx>,
    mac: MacPort,
    /// Frames through the MAC, not yet in the RBUF (held for their event).
    frames: HashMap<u32, Vec<u8>>,
    next_frame: u32,
    /// RBUF elements free, and when the MSF's read port is free.
    free_elements: u32,
    msf_free: Ps,
    /// Accepted frames waiting for a context (and an RX buffer).
    queue: VecDeque<(u64, Vec<u8>, u32)>,
    next_ticket: u64,
    release_next: u64,
    released_at: Ps,
    held: BTreeMap<u64, Finished>,
    /// Accepted frames in order, for the byte check.
    expected: VecDeque<Vec<u8>>,
    /// Delivered datagrams the host has not yet returned (counted with `rx_posted_ahead`): each
    /// one's buffer and the bytes it must still hold when the host returns it.
    unconsumed: VecDeque<(u64, Vec<u8>)>,
    /// The host's RX ring: descriptors posted and taken.
    tail: u32,
    posted: u64,
    next: u32,
    taken: u64,
    /// Descriptors and buffers as the microengines see them.
    mem: HostMemory,
    message: Ps,
    service: Ps,
    /// Offloaded copies in order of arrival, and their counts.
    copies: BTreeMap<u32, Copy>,
    copies_done: u64,
    copy_time: Ps,
    lines_read: u64,
    lines_from_cache: u64,
    lines_written: u64,
    stats: DeviceStats,
    last_done: Ps,
    /// The host's TX ring: descriptors posted (its tail) and taken, the TBUF's free elements,
    /// finished frames waiting for earlier ones, and frames on the MAC (by event id).
    tx_tail: u32,
    tx_posted: u64,
    tx_next: u32,
    tx_taken: u64,
    tbuf_free: u32,
    tx_release_next: u64,
    tx_released_at: Ps,
    tx_held: BTreeMap<u64, TxFinished>,
    on_mac: HashMap<u32, (Vec<u8>, u32)>,
    next_sent: u32,
    tx_service: Ps,
    /// Datagrams a `source` has still to send.
    source_left: u64,
    /// iperf's check of the datagrams delivered (`iperf`, or a `sink`).
    udp: Option<UdpReceiver>,
    /// The first problem the UDP check found (a model bug; the run's bytes-wrong count says it).
    pub udp_error: Option<String>,
}

impl Microengines {
    pub fn new(
        id: AgentId,
        pc: &PlatformConfig,
        sys: &mut MemorySystem,
    ) -> Result<Microengines, PlatformError> {
        let src = pc.name.as_str();
        let cfg = pc.microengines.clone().ok_or_else(|| {
            PlatformError::config(src, "agents", "the microengines agent has no parameters")
        })?;
        if cfg.irq_core as usize >= sys.cores() {
            return Err(PlatformError::config(
                src,
                "agents.params.irq_core",
                format!(
                    "core {}, but the platform has {} cores",
                    cfg.irq_core,
                    sys.cores()
                ),
            ));
        }
        sys.register_mmio(cfg.bar, cfg.bar_bytes, id)
            .map_err(|e| PlatformError::config(src, "agents.params.bar", e))?;
        let engines = vec![Engine::default(); cfg.count as usize];
        let ctxs = (0..cfg.threads)
            .flat_map(|_| 0..cfg.count as usize)
            .map(|me| Ctx {
                me,
                job: None,
                copy: None,
                tx: None,
            })
            .collect();
        let source_left = if cfg.tx_mode == "source" {
            cfg.source_frames
        } else {
            0
        };
        if source_left > 0 {
            sys.schedule(0, id, EV_SOURCE, 0);
        }
        let udp = (cfg.iperf || cfg.rx_mode == "sink")
            .then(|| UdpReceiver::new(cfg.frame_bytes as usize - HEADER_BYTES));
        Ok(Microengines {
            id,
            cycle: 1.0e6 / cfg.clock_mhz,
            engines,
            ctxs,
            mac: MacPort::new(cfg.mac_gbps, ns(cfg.mac_tx_ns), ns(cfg.mac_rx_ns)),
            frames: HashMap::new(),
            next_frame: 0,
            free_elements: cfg.elements(),
            msf_free: 0,
            queue: VecDeque::new(),
            next_ticket: 0,
            release_next: 0,
            released_at: 0,
            held: BTreeMap::new(),
            expected: VecDeque::new(),
            unconsumed: VecDeque::new(),
            tail: 0,
            posted: 0,
            next: 0,
            taken: 0,
            mem: HostMemory::default(),
            message: sys.ic().engine_message,
            service: 0,
            copies: BTreeMap::new(),
            copies_done: 0,
            copy_time: 0,
            lines_read: 0,
            lines_from_cache: 0,
            lines_written: 0,
            stats: DeviceStats {
                name: "microengines".into(),
                ..Default::default()
            },
            last_done: 0,
            tx_tail: 0,
            tx_posted: 0,
            tx_next: 0,
            tx_taken: 0,
            tbuf_free: cfg.tbuf_bytes / cfg.element_bytes,
            tx_release_next: 0,
            tx_released_at: 0,
            tx_held: BTreeMap::new(),
            on_mac: HashMap::new(),
            next_sent: 0,
            tx_service: 0,
            source_left,
            udp,
            udp_error: None,
            cfg,
        })
    }

    fn cycles(&self, n: f64) -> Ps {
        (n * self.cycle).round() as Ps
    }

    /// Context `c` runs `cycles` on its microengine's pipeline from `now`, then swaps out: when
    /// its work is done.
    fn run(&mut self, c: usize, now: Ps, cycles: f64) -> Ps {
        let work = self.cycles(cycles);
        let swap = self.cycles(self.cfg.switch_cycles as f64);
        let e = &mut self.engines[self.ctxs[c].me];
        let start = now.max(e.pipe_free);
        e.pipe_free = start + work + swap;
        e.busy += work + swap;
        start + work
    }

    /// The host posted one more RX buffer (the descriptor it stands for, in the ring). Past the
    /// `rx_posted_ahead` it posted up front, the store returns the oldest delivered datagram's
    /// buffer: the host consumed that datagram now, and its bytes are checked again.
    fn post_rx(&mut self, now: Ps) {
        if self.cfg.rx_posted_ahead > 0 && self.posted >= self.cfg.rx_posted_ahead {
            match self.unconsumed.pop_front() {
                Some((buf, want)) => {
                    let got = self.mem.read(buf, want.len());
                    let st = &mut self.stats;
                    st.rx_consumed_bytes_checked += want.len() as u64;
                    st.rx_consumed_bytes_wrong +=
                        want.iter().zip(&got).filter(|(a, b)| a != b).count() as u64;
                    let t = now as f64 / 1000.0;
                    if st.rx_consumed == 0 {
                        st.rx_consumed_first_ns = t;
                    }
                    st.rx_consumed_last_ns = t;
                    st.rx_consumed += 1;
                }
                None => self.stats.rx_consumed_unmatched += 1,
            }
        }
        let buf =
            self.cfg.rx_buffers + (self.posted % self.cfg.ring as u64) * self.cfg.rx_buffer_stride;
        self.mem.write(
            self.cfg.rx_ring + self.tail as u64 * nic::DESC,
            &nic::rx_read_desc(buf),
        );
        self.tail = (self.tail + 1) % self.cfg.ring;
        self.posted += 1;
    }

    /// A frame is through the MAC: into the RBUF, or dropped there.
    fn accept(&mut self, sys: &mut MemorySystem, now: Ps, frame: Vec<u8>) {
        self.stats.rx_frames_in += 1;
        let elements = self.cfg.elements_for(frame.len());
        if elements > self.free_elements || frame.len() as u64 > self.cfg.rx_buffer_stride {
            self.stats.nic.rx_drops += 1;
            return;
        }
        self.free_elements -= elements;
        self.expected.push_back(frame.clone());
        self.queue.push_back((self.next_ticket, frame, elements));
        self.next_ticket += 1;
        self.dispatch(sys, now);
    }

    /// Hands waiting frames to free contexts while the host has RX buffers posted: each to a
    /// context of the microengine with the fewest busy ones.
    fn dispatch(&mut self, sys: &mut MemorySystem, now: Ps) {
        let sink = self.cfg.rx_mode == "sink";
        while !self.queue.is_empty() && (sink || self.taken < self.posted) {
            let Some(c) = self.free_ctx() else {
                return;
            };
            let Some((ticket, frame, elements)) = self.queue.pop_front() else {
                return;
            };
            if sink {
                // The peer's receiver: the frame is checked in the RBUF, no host buffer.
                self.engines[self.ctxs[c].me].active += 1;
                self.ctxs[c].job = Some(Job {
                    ticket,
                    frame,
                    elements,
                    desc: 0,
                    buf: 0,
                    read: 0,
                    reading: 0,
                    started: now,
                });
                let t = self.run(c, now, self.cfg.frame_cycles as f64);
                self.read_chunks(sys, c, t);
                continue;
            }
            let desc = self.next;
            self.next = (self.next + 1) % self.cfg.ring;
            self.taken += 1;
            let d = self.mem.read(self.cfg.rx_ring + desc as u64 * nic::DESC, 8);
            let buf = u64::from_le_bytes(d[0..8].try_into().unwrap_or([0; 8]));
            self.engines[self.ctxs[c].me].active += 1;
            self.ctxs[c].job = Some(Job {
                ticket,
                frame,
                elements,
                desc,
                buf,
                read: 0,
                reading: 0,
                started: now,
            });
            // The program's own work on the frame, then the RX descriptor's read.
            let t = self.run(
                c,
                now,
                (self.cfg.frame_cycles + self.cfg.issue_cycles) as f64,
            );
            let line = (self.cfg.rx_ring + desc as u64 * nic::DESC) / 64;
            self.stats.nic.rx_desc_fetched += 1;
            device_dma::read_line(
                sys,
                t,
                self.id,
                c as u32,
                line,
                EV_LINE,
                false,
                false,
                &mut self.stats,
            );
        }
        self.dispatch_tx(sys, now);
        if self.queue.is_empty() && self.tx_taken >= self.tx_posted {
            self.dispatch_copies(sys, now);
        }
    }

    /// A free context, on the microengine with the fewest busy ones.
    fn free_ctx(&self) -> Option<usize> {
        (0..self.ctxs.len())
            .filter(|&c| self.ctxs[c].free())
            .min_by_key(|&c| (self.engines[self.ctxs[c].me].active, c))
    }

    /// The host posted one more frame to send (the descriptor its TX tail store stands for).
    fn post_tx(&mut self) {
        let buf = self.cfg.tx_buffers
            + (self.tx_posted % self.cfg.ring as u64) * self.cfg.tx_buffer_stride;
        let len = self.host_bytes();
        self.mem.write(
            self.cfg.tx_ring + self.tx_tail as u64 * nic::DESC,
            &nic::tx_data_desc(buf, len as u16, nic::CMD_EOP | nic::CMD_RS),
        );
        self.tx_tail = (self.tx_tail + 1) % self.cfg.ring;
        self.tx_posted += 1;
        self.stats.nic.doorbells += 1;
    }

    /// Bytes a transmitted frame's buffer holds: the frame, or (`onload`) its UDP payload.
    fn host_bytes(&self) -> usize {
        let f = self.cfg.frame_bytes as usize;
        if self.cfg.tx_mode == "onload" {
            f.saturating_sub(HEADER_BYTES)
        } else {
            f
        }
    }

    /// Hands posted frames to free contexts while the TBUF has room, in the order posted: the
    /// program's own work, then the TX descriptor's read.
    fn dispatch_tx(&mut self, sys: &mut MemorySystem, now: Ps) {
        let wire_len = self.cfg.frame_bytes as usize;
        let elements = self.cfg.elements_for(wire_len);
        while self.tx_taken < self.tx_posted && self.tbuf_free >= elements {
            let Some(c) = self.free_ctx() else {
                return;
            };
            let desc = self.tx_next;
            self.tx_next = (self.tx_next + 1) % self.cfg.ring;
            let ticket = self.tx_taken;
            self.tx_taken += 1;
            self.tbuf_free -= elements;
            let d = self
                .mem
                .read(self.cfg.tx_ring + desc as u64 * nic::DESC, 16);
            let buf = u64::from_le_bytes(d[0..8].try_into().unwrap_or([0; 8]));
            let len = u16::from_le_bytes([d[8], d[9]]) as usize;
            self.engines[self.ctxs[c].me].active += 1;
            self.ctxs[c].tx = Some(TxJob {
                ticket,
                desc,
                buf,
                len,
                read: 0,
                reading: 0,
                lines_out: 1,
                desc_in: false,
                elements,
                wire_len,
                started: now,
            });
            let t = self.run(
                c,
                now,
                (self.cfg.frame_cycles + self.cfg.issue_cycles) as f64,
            );
            let line = (self.cfg.tx_ring + desc as u64 * nic::DESC) / 64;
            self.stats.nic.tx_desc_fetched += 1;
            device_dma::read_line(
                sys,
                t,
                self.id,
                TX_TAG | c as u32,
                line,
                EV_LINE,
                false,
                false,
                &mut self.stats,
            );
        }
    }

    /// A line context `c`'s transmit program asked for is in: the descriptor (then, in
    /// `onload`, the connection's control block from SRAM), or one of a chunk's lines.
    fn tx_line_in(&mut self, sys: &mut MemorySystem, c: usize, now: Ps) {
        let onload = self.cfg.tx_mode == "onload";
        let Some(job) = self.ctxs[c].tx.as_mut() else {
            return;
        };
        job.lines_out = job.lines_out.saturating_sub(1);
        if job.lines_out > 0 {
            return;
        }
        if !job.desc_in {
            job.desc_in = true;
            let t = if onload {
                let t = self.run(c, now, self.cfg.issue_cycles as f64);
                t + ns(self.cfg.sram_ns)
            } else {
                now
            };
            self.tx_read_chunk(sys, c, t);
            return;
        }
        // A chunk is in the transfer registers: checksum it and move it into the TBUF.
        let bytes = job.reading;
        let cmds = bytes.div_ceil(self.cfg.chunk_bytes as usize) as u32;
        let t = self.run(
            c,
            now,
            bytes.div_ceil(4) as f64 * self.cfg.checksum_cycles_per_word
                + (cmds * self.cfg.issue_cycles) as f64,
        );
        let ps_per_byte = 1000.0 / self.cfg.rbuf_gbytes_per_s;
        let start = t.max(self.msf_free);
        self.msf_free = start + (bytes as f64 * ps_per_byte).round() as Ps;
        let Some(job) = self.ctxs[c].tx.as_mut() else {
            return;
        };
        job.read += bytes;
        job.reading = 0;
        if job.read < job.len {
            self.tx_read_chunk(sys, c, t);
            return;
        }
        // The frame is in the TBUF: the descriptor work (and the onloader's headers).
        let extra = if onload { self.cfg.parse_cycles } else { 0 };
        let t = self.run(
            c,
            self.msf_free.max(t),
            (self.cfg.done_cycles + extra) as f64,
        );
        sys.schedule(t, self.id, EV_TX_DONE, c as u32);
    }

    /// Context `c` reads the next `copy_depth` chunks of its frame's buffer through the memory
    /// system (from a cache holding a line dirty, or DRAM; each line's version checked).
    fn tx_read_chunk(&mut self, sys: &mut MemorySystem, c: usize, now: Ps) {
        let (chunk, depth) = (self.cfg.chunk_bytes as usize, self.cfg.copy_depth as usize);
        let Some(job) = self.ctxs[c].tx.as_ref() else {
            return;
        };
        let left = job.len - job.read;
        if left == 0 {
            // Nothing to read (an empty buffer): straight to the descriptor work.
            let t = self.run(c, now, self.cfg.done_cycles as f64);
            sys.schedule(t, self.id, EV_TX_DONE, c as u32);
            return;
        }
        let n = left.div_ceil(chunk).clamp(1, depth);
        let bytes = left.min(n * chunk);
        let a = job.buf + job.read as u64;
        let lines: Vec<u64> = (a / 64..=(a + bytes as u64 - 1) / 64).collect();
        let t = self.run(c, now, (n as u32 * self.cfg.issue_cycles) as f64);
        if let Some(job) = self.ctxs[c].tx.as_mut() {
            job.reading = bytes;
            job.lines_out = lines.len() as u32;
        }
        for line in lines {
            let seen = device_dma::read_line(
                sys,
                t,
                self.id,
                TX_TAG | c as u32,
                line,
                EV_LINE,
                true,
                false,
                &mut self.stats,
            );
            // The bytes: the version the path delivers (value shadow on).
            if let Some(v) = seen {
                self.mem.write(line * 64, &[v.to_le_bytes(); 8].concat());
            }
        }
    }

    /// Context `c` has its frame in the TBUF: it is free, and the frame goes to the MAC once
    /// every earlier one has.
    fn tx_done(&mut self, sys: &mut MemorySystem, c: usize, now: Ps) {
        let Some(job) = self.ctxs[c].tx.take() else {
            return;
        };
        self.engines[self.ctxs[c].me].active -= 1;
        self.tx_service += now - job.started;
        let frame = if self.cfg.iperf {
            udp_peer::datagram(job.ticket as i32, job.wire_len - HEADER_BYTES)
        } else {
            let body = self.mem.read(job.buf, job.len);
            let mut f = vec![0u8; job.wire_len - body.len()];
            f.extend_from_slice(&body);
            f
        };
        self.tx_held.insert(
            job.ticket,
            TxFinished {
                desc: job.desc,
                frame,
                elements: job.elements,
                at: now,
            },
        );
        while let Some(f) = self.tx_held.remove(&self.tx_release_next) {
            self.tx_release_next += 1;
            let at = f.at.max(self.tx_released_at);
            self.tx_released_at = at;
            self.send(sys, at, f.frame, f.elements);
            // The descriptor written back (done), and the host told.
            let da = self.cfg.tx_ring + f.desc as u64 * nic::DESC;
            let mut wb = [0u8; 16];
            wb[12] = 1; // DD
            self.mem.write(da, &wb);
            device_dma::host_write_line(sys, at, self.id, None, da / 64, &mut self.stats);
            self.stats.nic.tx_desc_written_back += 1;
            self.stats.nic.tx_packets += 1;
            if self.cfg.tx_irq {
                self.stats.interrupts += 1;
                self.stats.nic.interrupts += 1;
                sys.raise_interrupt(at + self.message, self.cfg.irq_core as usize, 0);
            }
        }
        self.dispatch(sys, now);
    }

    /// A frame goes to the MAC at `at`: serialised after the one before; its TBUF elements free
    /// once its last bit has left.
    fn send(&mut self, sys: &mut MemorySystem, at: Ps, frame: Vec<u8>, elements: u32) {
        self.stats.frames += 1;
        self.stats.frame_bytes += frame.len() as u64;
        self.stats.nic.tx_frames += 1;
        let done = self.mac.serialise(at, frame.len());
        let k = self.next_sent;
        self.next_sent = self.next_sent.wrapping_add(1);
        self.on_mac.insert(k, (frame, elements));
        sys.schedule(done, self.id, EV_TX_SENT, k);
    }

    /// A `source` hands its next datagram to the MAC as soon as the one before is out.
    fn source(&mut self, sys: &mut MemorySystem, now: Ps) {
        if self.source_left == 0 {
            return;
        }
        self.source_left -= 1;
        let seq = self.tx_taken as i32;
        self.tx_taken += 1;
        let f = udp_peer::datagram(seq, self.cfg.frame_bytes as usize - HEADER_BYTES);
        self.send(sys, now, f, 0);
    }

    /// Hands the chunks of offloaded copies, oldest copy first, to free contexts (received
    /// frames go first: they would be dropped).
    fn dispatch_copies(&mut self, sys: &mut MemorySystem, now: Ps) {
        let chunk = self.cfg.chunk_bytes as u64 * self.cfg.copy_depth as u64;
        loop {
            let Some((&op, _)) = self.copies.iter().find(|(_, c)| c.next < c.bytes) else {
                return;
            };
            let Some(c) = self.free_ctx() else {
                return;
            };
            let Some(cp) = self.copies.get_mut(&op) else {
                return;
            };
            // Up to `copy_depth` commands, ending at a destination line boundary.
            let d = cp.dst + cp.next;
            let len = (chunk - d % 64).min(cp.bytes - cp.next).max(1);
            let s = cp.src + cp.next;
            cp.next += len;
            cp.out += 1;
            let aligned = s % 64 == d % 64;
            let src_lines: Vec<u64> = (s / 64..=(s + len - 1) / 64).collect();
            let dst: Vec<u64> = (d / 64..=(d + len - 1) / 64).collect();
            let mut vals = Vec::with_capacity(dst.len());
            let mut from = Vec::with_capacity(src_lines.len());
            for &line in &src_lines {
                let from_cache = sys.dirty_anywhere(line);
                from.push(from_cache);
                vals.push(sys.read_value(line, from_cache).filter(|_| aligned));
            }
            vals.resize(dst.len(), None);
            self.engines[self.ctxs[c].me].active += 1;
            self.ctxs[c].copy = Some(Chunk {
                op,
                dst,
                vals,
                reads_out: src_lines.len() as u32,
            });
            let t = self.run(
                c,
                now,
                (src_lines.len() as u32 * self.cfg.issue_cycles) as f64,
            );
            let mut scratch = DeviceStats::default();
            for (line, _) in src_lines.into_iter().zip(from) {
                self.lines_read += 1;
                device_dma::read_line(
                    sys,
                    t,
                    self.id,
                    COPY_TAG | c as u32,
                    line,
                    EV_COPY_LINE,
                    false,
                    true,
                    &mut scratch,
                );
            }
            self.lines_from_cache += scratch.lines_from_cache;
        }
    }

    /// A source line of context `c`'s copy chunk is in; once all are, the chunk is written.
    fn copy_line_in(&mut self, sys: &mut MemorySystem, c: usize, now: Ps) {
        let Some(ch) = self.ctxs[c].copy.as_mut() else {
            return;
        };
        ch.reads_out = ch.reads_out.saturating_sub(1);
        if ch.reads_out > 0 {
            return;
        }
        let n = ch.dst.len() as u32;
        let t = self.run(c, now, (n * self.cfg.issue_cycles) as f64);
        let Some(ch) = self.ctxs[c].copy.as_ref() else {
            return;
        };
        let mut done = t;
        for (i, &line) in ch.dst.iter().enumerate() {
            self.lines_written += 1;
            // A destination line is overwritten whole: cached copies are invalidated.
            sys.agent_write_value(line, ch.vals.get(i).copied().flatten());
            let ch_no = sys.channel_of(line * 64);
            done = done.max(sys.ic().writeback_arrives(t, ch_no));
            let at = sys.ic().address_phase(t);
            let kind = ReqKind::Agent {
                agent: self.id,
                tag: device_dma::WRITE_TAG,
            };
            // Copy traffic, as a copy engine's writes are.
            sys.send(
                at,
                line * 64,
                movelab_dram::request::Op::Write,
                true,
                kind,
                true,
            );
        }
        sys.schedule(done, self.id, EV_COPY_DONE, c as u32);
    }

    /// Context `c`'s copy chunk is written: it is free, and the copy done once its last chunk is.
    fn copy_chunk_done(&mut self, sys: &mut MemorySystem, c: usize, now: Ps) {
        let Some(ch) = self.ctxs[c].copy.take() else {
            return;
        };
        self.engines[self.ctxs[c].me].active -= 1;
        if let Some(cp) = self.copies.get_mut(&ch.op) {
            cp.out -= 1;
            if cp.out == 0 && cp.next >= cp.bytes {
                let cp = self.copies.remove(&ch.op).expect("present");
                self.copies_done += 1;
                self.copy_time += now - cp.issued;
                self.last_done = self.last_done.max(now);
                sys.wake(cp.core, Token::Rob(cp.seq), now + self.message);
            }
        }
        self.dispatch(sys, now);
        self.dispatch_copies(sys, now);
    }

    /// Context `c` issues its next RBUF reads (up to `copy_depth` chunks).
    fn read_chunks(&mut self, sys: &mut MemorySystem, c: usize, now: Ps) {
        let (chunk, depth) = (self.cfg.chunk_bytes as usize, self.cfg.copy_depth as usize);
        let Some(job) = self.ctxs[c].job.as_ref() else {
            return;
        };
        let left = job.frame.len() - job.read;
        let n = left.div_ceil(chunk).clamp(1, depth);
        let bytes = left.min(n * chunk);
        let t = self.run(c, now, (n as u32 * self.cfg.issue_cycles) as f64);
        let ps_per_byte = 1000.0 / self.cfg.rbuf_gbytes_per_s;
        let mut ready = t;
        for k in 0..n {
            let b = (bytes - k * chunk).min(chunk);
            let start = t.max(self.msf_free);
            self.msf_free = start + (b as f64 * ps_per_byte).round() as Ps;
            ready = ready.max(self.msf_free + ns(self.cfg.rbuf_read_ns));
        }
        if let Some(job) = self.ctxs[c].job.as_mut() {
            job.reading = bytes;
        }
        sys.schedule(ready, self.id, EV_CHUNKS, c as u32);
    }

    /// Context `c`'s chunks are in its transfer registers: checksum them, write them to the RX
    /// buffer, then read on or finish.
    fn chunks_in(&mut self, sys: &mut MemorySystem, c: usize, now: Ps) {
        let chunk = self.cfg.chunk_bytes as usize;
        let Some(job) = self.ctxs[c].job.as_ref() else {
            return;
        };
        let (from, bytes) = (job.read, job.reading);
        let words = bytes.div_ceil(4) as f64;
        let writes = bytes.div_ceil(chunk) as u32;
        let t = self.run(
            c,
            now,
            words * self.cfg.checksum_cycles_per_word + (writes * self.cfg.issue_cycles) as f64,
        );
        let Some(job) = self.ctxs[c].job.as_mut() else {
            return;
        };
        // What goes to the host: the whole frame, or (the onloader) the UDP payload only, at
        // the buffer's start; a sink keeps nothing.
        let skip = match self.cfg.rx_mode.as_str() {
            "onload" => HEADER_BYTES,
            "sink" => usize::MAX,
            _ => 0,
        };
        let lo = from.max(skip);
        let (buf, data) = if lo < from + bytes {
            (job.buf, job.frame[lo..from + bytes].to_vec())
        } else {
            (job.buf, Vec::new())
        };
        job.read += bytes;
        job.reading = 0;
        let finished = job.read >= job.frame.len();
        if !data.is_empty() {
            let a = buf + (lo - skip) as u64;
            self.mem.write(a, &data);
            let push = self.cfg.l2_push.then_some(self.cfg.irq_core as usize);
            let b = a + data.len() as u64;
            for line in a / 64..=(b - 1) / 64 {
                device_dma::host_write_line(sys, t, self.id, push, line, &mut self.stats);
            }
        }
        if !finished {
            self.read_chunks(sys, c, t);
            return;
        }
        // The frame has left the RBUF; the descriptor work, then the write-back's command (the
        // onloader: its headers, the control block's SRAM read and the connection's scratch
        // ring put first; a sink: nothing to write).
        if let Some(job) = self.ctxs[c].job.as_ref() {
            self.free_elements += job.elements;
        }
        let t = match self.cfg.rx_mode.as_str() {
            "sink" => self.run(c, t, self.cfg.done_cycles as f64),
            "onload" => {
                let cyc = self.cfg.done_cycles + self.cfg.parse_cycles + 3 * self.cfg.issue_cycles;
                self.run(c, t, cyc as f64) + ns(self.cfg.sram_ns + self.cfg.scratch_ns)
            }
            _ => self.run(c, t, (self.cfg.done_cycles + self.cfg.issue_cycles) as f64),
        };
        sys.schedule(t, self.id, EV_DONE, c as u32);
    }

    /// Context `c` finished its frame at `now`: it is free, and the frame's descriptor is written
    /// back once every earlier frame's has been.
    fn done(&mut self, sys: &mut MemorySystem, c: usize, now: Ps) {
        let Some(job) = self.ctxs[c].job.take() else {
            return;
        };
        self.engines[self.ctxs[c].me].active -= 1;
        self.service += now - job.started;
        let sink = self.cfg.rx_mode == "sink";
        let len = job.frame.len();
        self.held.insert(
            job.ticket,
            Finished {
                desc: job.desc,
                buf: job.buf,
                len,
                at: now,
                frame: if sink { job.frame } else { Vec::new() },
            },
        );
        while let Some(f) = self.held.remove(&self.release_next) {
            self.release_next += 1;
            let at = f.at.max(self.released_at);
            self.released_at = at;
            if sink {
                self.expected.pop_front();
                self.udp_check(at, &f.frame, true);
                self.stats.rx_bytes_checked += f.len as u64;
                self.stats.nic.rx_frames += 1;
                self.last_done = self.last_done.max(at);
            } else {
                self.write_back(sys, at, f);
            }
        }
        self.dispatch(sys, now);
    }

    /// The descriptor of a finished frame is written back, the frame's bytes checked, and the
    /// host core interrupted.
    fn write_back(&mut self, sys: &mut MemorySystem, at: Ps, f: Finished) {
        // The onloader delivers the payload only.
        let skip = if self.cfg.rx_mode == "onload" {
            HEADER_BYTES.min(f.len)
        } else {
            0
        };
        let len = f.len - skip;
        if let Some(sent) = self.expected.pop_front() {
            let sent = &sent[skip.min(sent.len())..];
            if self.cfg.rx_posted_ahead > 0 {
                self.unconsumed.push_back((f.buf, sent.to_vec()));
            }
            let got = self.mem.read(f.buf, len);
            self.stats.rx_bytes_checked += sent.len().max(got.len()) as u64;
            self.stats.rx_bytes_wrong += sent.iter().zip(&got).filter(|(a, b)| a != b).count()
                as u64
                + sent.len().abs_diff(got.len()) as u64;
            if self.udp.is_some() {
                self.udp_check(at, &got, skip == 0);
            }
        }
        let da = self.cfg.rx_ring + f.desc as u64 * nic::DESC;
        let mut wb = [0u8; 16];
        wb[8] = 3; // DD | EOP
        wb[12..14].copy_from_slice(&(len as u16).to_le_bytes());
        self.mem.write(da, &wb);
        let push = self.cfg.l2_push.then_some(self.cfg.irq_core as usize);
        device_dma::host_write_line(sys, at, self.id, push, da / 64, &mut self.stats);
        self.stats.nic.rx_frames += 1;
        self.stats.nic.rx_desc_written_back += 1;
        self.last_done = self.last_done.max(at);
        if self.cfg.rx_irq {
            self.stats.interrupts += 1;
            self.stats.nic.interrupts += 1;
            sys.raise_interrupt(at + self.message, self.cfg.irq_core as usize, 1);
        }
    }
}

impl Microengines {
    /// iperf's check of a delivered datagram (a whole frame with its checksums, or the
    /// onloader's payload): a problem counts its bytes as wrong and is kept.
    fn udp_check(&mut self, at: Ps, bytes: &[u8], whole: bool) {
        let Some(u) = self.udp.as_mut() else {
            return;
        };
        let r = if whole {
            u.deliver_frame(at, bytes)
        } else {
            u.deliver(at, bytes)
        };
        if let Err(e) = r {
            self.stats.rx_bytes_wrong += bytes.len() as u64;
            self.udp_error.get_or_insert(e.0);
        }
    }

    /// iperf's figures so far: datagrams delivered and checked, and those lost on the way.
    pub fn udp_counts(&self) -> Option<(u64, u64)> {
        self.udp.as_ref().map(|u| (u.received, u.lost))
    }
}

impl Agent for Microengines {
    fn name(&self) -> &'static str {
        "microengines"
    }

    /// A core hands the microengines a copy (they take no zeroing or fill): its chunks go to
    /// free contexts, and the core waits until the last is written.
    fn offload(
        &mut self,
        sys: &mut MemorySystem,
        now: Ps,
        core: usize,
        id: u32,
        op: OffloadOp,
        seq: u64,
    ) -> Access {
        let Some(src) = op.src.filter(|_| op.bytes > 0) else {
            return Access::At(now + sys.cycle_ps(core));
        };
        self.copies.insert(
            id,
            Copy {
                core,
                seq,
                src,
                dst: op.dst,
                bytes: op.bytes,
                next: 0,
                out: 0,
                issued: now,
            },
        );
        // The request reaches the microengines as a message on the chip.
        let at = sys.ic().address_phase(now) + self.message;
        sys.schedule(at, self.id, EV_RX_TAIL, 0);
        Access::Pending
    }

    fn mmio(
        &mut self,
        sys: &mut MemorySystem,
        now: Ps,
        _core: usize,
        addr: u64,
        write: bool,
    ) -> Access {
        let off = addr - self.cfg.bar;
        // The on-chip memories answer a load after their read latency (the same figures the
        // microengines' own commands take; the XScale gasket's crossing adds a latency that is
        // not published, HRM 3.11 giving only its 32-bit buses and four reads outstanding).
        let window = if SCRATCH_WINDOW.contains(&off) {
            Some(self.cfg.scratch_ns)
        } else if SRAM_WINDOW.contains(&off) {
            Some(self.cfg.sram_ns)
        } else {
            None
        };
        if let Some(lat) = window {
            sys.count_uncached();
            let leave = sys.ic().address_phase(now);
            return Access::At(if write { leave } else { leave + ns(lat) });
        }
        let leave = match device_dma::on_die_register(sys, now, write, self.message) {
            Ok(leave) => leave,
            Err(read) => return read,
        };
        let reg = nic::BAR + off;
        if reg == nic::RDT {
            self.post_rx(now);
            sys.schedule(leave + self.message, self.id, EV_RX_TAIL, 0);
        } else if reg == nic::TDT && self.cfg.tx_mode != "source" {
            self.post_tx();
            sys.schedule(leave + self.message, self.id, EV_RX_TAIL, 0);
        }
        Access::At(leave)
    }

    fn event(&mut self, sys: &mut MemorySystem, now: Ps, kind: u16, id: u32) {
        match kind {
            EV_RX_TAIL => {
                self.dispatch(sys, now);
                self.dispatch_copies(sys, now);
            }
            EV_LINE | EV_COPY_LINE => {
                if let Some(r) = sys.release_req(id) {
                    if let ReqKind::Agent { tag, .. } = r.kind {
                        if tag & COPY_TAG != 0 {
                            self.copy_line_in(sys, (tag & !COPY_TAG) as usize, now);
                        } else if tag & TX_TAG != 0 {
                            self.tx_line_in(sys, (tag & !TX_TAG) as usize, now);
                        } else {
                            self.read_chunks(sys, tag as usize, now);
                        }
                    }
                }
            }
            EV_COPY_DONE => self.copy_chunk_done(sys, id as usize, now),
            EV_FRAME => {
                if let Some(f) = self.frames.remove(&id) {
                    self.accept(sys, now, f);
                }
            }
            EV_CHUNKS => self.chunks_in(sys, id as usize, now),
            EV_DONE => self.done(sys, id as usize, now),
            EV_TX_DONE => self.tx_done(sys, id as usize, now),
            EV_TX_SENT => {
                if let Some((f, elements)) = self.on_mac.remove(&id) {
                    self.tbuf_free += elements;
                    self.last_done = self.last_done.max(now);
                    self.mac.sent(now, f);
                }
                if self.cfg.tx_mode == "source" {
                    self.source(sys, now);
                } else {
                    self.dispatch(sys, now);
                }
            }
            EV_SOURCE => self.source(sys, now),
            _ => {}
        }
    }

    fn response(&mut self, sys: &mut MemorySystem, now: Ps, r: Response) {
        device_dma::line_answered(sys, now, self.id, r, EV_LINE);
    }

    fn attach_port(&mut self) -> Result<Port, String> {
        self.mac.attach(false, "microengines' MAC")
    }

    fn frame_in(&mut self, sys: &mut MemorySystem, at: Ps, frame: Vec<u8>) {
        let k = self.next_frame;
        self.next_frame = self.next_frame.wrapping_add(1);
        self.frames.insert(k, frame);
        sys.schedule(self.mac.received_at(at), self.id, EV_FRAME, k);
    }

    fn has_frames(&self) -> bool {
        self.mac.has_frames()
    }

    fn take_frames(&mut self, out: &mut Vec<(Ps, Vec<u8>)>) {
        self.mac.take_frames(out);
    }

    fn idle(&self) -> bool {
        // Frames waiting for an RX buffer the host never posts do not keep the run going: they
        // stay undelivered (`rx_frames_in` less `nic.rx_frames` and `nic.rx_drops`).
        self.ctxs.iter().all(Ctx::free)
            && self.held.is_empty()
            && self.frames.is_empty()
            && self.copies.is_empty()
            && self.tx_taken >= self.tx_posted
            && self.tx_held.is_empty()
            && self.on_mac.is_empty()
            && self.source_left == 0
            && !self.mac.has_frames()
    }

    fn report(&self) -> AgentReport {
        AgentReport {
            ops: self.stats.nic.rx_frames + self.stats.nic.tx_packets + self.copies_done,
            op_time: self.service + self.tx_service + self.copy_time,
            lines: CopyLines {
                engine_read: self.lines_read,
                engine_from_cache: self.lines_from_cache,
                engine_written: self.lines_written,
                ..Default::default()
            },
            last_done: self.last_done,
            device: Some(self.stats.clone()),
            small_cores: Some(SmallCoreStats {
                engines: self.cfg.count,
                threads: self.cfg.threads,
                clock_mhz: self.cfg.clock_mhz,
                busy_ns: self
                    .engines
                    .iter()
                    .map(|e| e.busy as f64 / 1000.0)
                    .collect(),
                busy_share: 0.0,
            }),
        }
    }
}
