//! The DRAM-to-DRAM copy benchmark of Wun & Crowley's section 7 ("the MEs can move data from one
//! DRAM bank to another at up to 10x faster than the XScale"): the same bytes copied, block by
//! block, by the small cores and by the host core, on the platform's own models. The small
//! cores run one copy program per block (`microengine.rs`: every context of every core takes a
//! block, its reads asynchronous, its writes posted and fenced at the end) over the cores'
//! DRAM channel; the host copies the blocks one after the other in its own SDRAM with its copy
//! loop, through its caches (`host_step_cost.rs`), cold. Nothing here is fitted to the paper's
//! ratio: it comes out of the preset's channel, core and cache parameters.
use crate::config::network::{Amount, Loc, MeStep, NetworkIoConfig, Part};
use crate::net::msf_mac::MsfMac;
use crate::sim::error::PlatformError;
use crate::sim::{EventQueue, Ps, RunGuard};
use crate::small_cores::host_step_cost::{HostCaches, BUFFER_BYTES};
use crate::small_cores::mem_channel::MemChannel;
use crate::small_cores::microengine::{Job, JobKind, SmallCoreEnv, SmallCores};
use crate::small_cores::packet_buffers::Buffers;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

/// Blocks copied and bytes per block (the packet buffers' size).
pub const BLOCKS: usize = 128;
pub const BLOCK_BYTES: usize = BUFFER_BYTES as usize;

/// What one copy run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyRate {
    pub bytes: u64,
    /// Simulated time from the first read to the last write landing.
    pub elapsed_ps: Ps,
}

impl CopyRate {
    /// Megabits per second of data copied.
    pub fn mbps(&self) -> f64 {
        self.bytes as f64 * 8.0 / (self.elapsed_ps.max(1) as f64 / 1e6)
    }
}

/// A block's bytes (a pattern per block, so a misplaced or torn block is caught).
fn block(i: usize) -> Vec<u8> {
    (0..BLOCK_BYTES)
        .map(|k| {
            (i as u32)
                .wrapping_mul(2_654_435_761)
                .wrapping_add(k as u32 * 7) as u8
        })
        .collect()
}

/// Every small core of the platform (receive and transmit cores alike) copies `BLOCKS` blocks
/// from one buffer of its DRAM to another; every block's bytes are checked at the end.
pub fn small_cores(cfg: &NetworkIoConfig) -> Result<CopyRate, PlatformError> {
    let mut q = cfg.queues.clone();
    q.me_buffers = q.me_buffers.max(2 * BLOCKS as u32);
    let mut buffers = Buffers::new(&q);
    let mut channels: BTreeMap<String, MemChannel> = cfg
        .channels
        .iter()
        .map(|(k, c)| (k.clone(), MemChannel::new(c)))
        .collect();
    let mut msf = MsfMac::new(&cfg.msf, &cfg.wire);
    let mut host = HostCaches::new(&cfg.host);
    let mut tx_ring = VecDeque::new();
    let mut cores = SmallCores::new(&cfg.small_cores);
    let steps = Rc::new(vec![
        MeStep::Copy {
            from: Loc::MeDram,
            to: Loc::MeDram,
            bytes: Amount::Part(Part::Frame),
            checksum: false,
            rmw: false,
        },
        MeStep::Fence,
    ]);
    let pools = cores.pools();
    for i in 0..BLOCKS {
        let pkt = buffers
            .put(Loc::MeDram, &block(i))
            .expect("the arena holds every block twice");
        let job = Job {
            steps: steps.clone(),
            pkt,
            kind: JobKind::HostWait,
        };
        cores.submit(i % pools, job, false);
    }
    let mut q: EventQueue<(usize, usize)> = EventQueue::new();
    for pool in 0..pools {
        for (me, at) in cores.wake_idle(pool, 0) {
            q.push(at, (pool, me));
        }
    }
    let mut guard = RunGuard::new("the DRAM copy");
    let mut done = Vec::with_capacity(BLOCKS);
    let mut end: Ps = 0;
    while let Some(t) = q.peek_time() {
        let Some((t, (pool, me))) = q.pop_due(t) else {
            break;
        };
        guard.step()?;
        let out = cores.run(
            pool,
            me,
            t,
            &mut SmallCoreEnv {
                buffers: &mut buffers,
                channels: &mut channels,
                msf: &mut msf,
                host: &mut host,
                tx_ring: &mut tx_ring,
            },
        )?;
        if out.dropped + out.dropped_fins > 0 {
            return Err(PlatformError::Stalled(
                "the DRAM copy ran out of buffers".into(),
            ));
        }
        for (job, at) in out.finished {
            end = end.max(at);
            done.push(job.pkt);
        }
        if let Some(w) = out.wake {
            q.push(w, (pool, me));
        }
    }
    if done.len() != BLOCKS {
        return Err(PlatformError::Stalled(format!(
            "the DRAM copy ended with {} of {BLOCKS} blocks copied",
            done.len()
        )));
    }
    let mut seen = [false; BLOCKS];
    for p in done {
        let got = buffers.take(p);
        let i = (0..BLOCKS)
            .find(|&i| !seen[i] && got == block(i))
            .ok_or_else(|| {
                PlatformError::Stalled(
                    "data check failed: a block the small cores copied does not match any sent"
                        .into(),
                )
            })?;
        seen[i] = true;
    }
    Ok(CopyRate {
        bytes: (BLOCKS * BLOCK_BYTES) as u64,
        elapsed_ps: end,
    })
}

/// The host core copies the same blocks from kernel buffers to other kernel buffers in its
/// SDRAM, one after the other (its copy loop, cold caches).
pub fn host(cfg: &NetworkIoConfig) -> Result<CopyRate, PlatformError> {
    let mut caches = HostCaches::new(&cfg.host);
    let mut sdram = MemChannel::new(cfg.channels.get("host_sdram").ok_or_else(|| {
        PlatformError::config(
            "platform",
            "channels.host_sdram",
            "missing (the host's memory)",
        )
    })?);
    let mut t: Ps = 0;
    for i in 0..BLOCKS {
        let cyc = caches
            .copy(
                &mut sdram,
                t,
                (Loc::Kernel, i),
                (Loc::Kernel, BLOCKS + i),
                BLOCK_BYTES as u64,
                false,
            )
            .map_err(|s| {
                PlatformError::Stalled(format!("data check failed: stale line {:#x}", s.0))
            })?;
        t += (cyc * caches.cycle_ps).round() as Ps;
    }
    Ok(CopyRate {
        bytes: (BLOCKS * BLOCK_BYTES) as u64,
        elapsed_ps: t,
    })
}
