//! Platforms joined by Ethernet links: several [`Platform`]s, each with its cores, caches, devices
//! and DRAM, run side by side in one simulated time, and the frames a device's MAC sends cross an
//! [`EthernetLink`] to the device at the link's other end. Larsen & Lee's two hosts are two
//! platforms on one wire this way.
//!
//! Time: the platform with the earliest next thing to do runs, up to the next thing any other
//! platform has to do, and stops as soon as one of its ports has sent a frame. The frame is
//! carried (the link adds the propagation, the sending and receiving MACs their pipelines) and
//! scheduled at the far platform, which has not run past that time: a frame arrives after it left,
//! and every platform stays behind the earliest time a frame could reach it. The run ends when
//! every platform is done and nothing is on a wire.
//!
//! The guard: besides Ctrl-C ([`RunGuard`]), a host that keeps taking interrupts while its
//! program feeds nothing and no frame reaches it (more than [`idle_interrupts`], beyond those it
//! held when its program last fed one) stops the run
//! as `Stalled`: its handlers feed themselves (sends whose completions interrupt it again), a
//! loop in which time moves and instructions retire, so the platform's own watch never sees it.
//!
//! The oracle: each receiving NIC checks every byte that lands in its RX buffers against the
//! frames that came off the wire, in order; the sending NIC's payload reads are checked against
//! the last version its cores wrote (the value shadow). A link checks that no port sends faster
//! than its line rate.
use crate::config::workload::Workload;
use crate::net::ethernet_link::{DirStats, EthernetLink, LinkParams};
use crate::sim::error::PlatformError;
use crate::sim::{Ps, RunGuard};
use crate::stats::PlatformStats;
use crate::systems::platform::{Platform, Run, Step};
use serde::Serialize;

/// Platforms at most in one cluster, and links at most.
pub const MAX_HOSTS: usize = 64;

/// One end of a link: a platform (by index) and the name of its agent with the port.
#[derive(Debug, Clone, PartialEq)]
pub struct End {
    pub host: usize,
    pub agent: String,
}

/// A link between two ports.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSpec {
    pub a: End,
    pub b: End,
    pub meters: f64,
    pub ns_per_meter: f64,
    /// The line rate; `None`: the ports' rate (both ends must have the same).
    pub gbps: Option<f64>,
}

impl LinkSpec {
    /// A link between the first device with a port on `a` and the one on `b`, `meters` of cable
    /// at `ns_per_meter`, at the ports' rate.
    pub fn between(a: usize, b: usize, meters: f64, ns_per_meter: f64) -> LinkSpec {
        let end = |host| End {
            host,
            agent: String::new(),
        };
        LinkSpec {
            a: end(a),
            b: end(b),
            meters,
            ns_per_meter,
            gbps: None,
        }
    }
}

/// What a link carried.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LinkStats {
    /// The ends, as `host.agent` (host by index).
    pub a: String,
    pub b: String,
    pub gbps: f64,
    pub propagation_ns: f64,
    /// From a to b, and from b to a.
    pub a_to_b: DirStats,
    pub b_to_a: DirStats,
    /// Every frame's passage (first few): direction (0: a to b), ns it started on the wire, ns
    /// its last bit arrived.
    pub passages: Vec<(u8, f64, f64)>,
}

/// The statistics of a cluster run: each platform's own, and each link's.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterStats {
    pub hosts: Vec<PlatformStats>,
    pub links: Vec<LinkStats>,
}

pub use crate::sim::run_guard::MIN_IDLE_INTERRUPTS;

/// The bound on a host's interrupts without progress for ports whose largest ring holds `ring`
/// descriptors ([`MIN_IDLE_INTERRUPTS`]).
pub fn idle_interrupts(ring: u32) -> u64 {
    (2 * u64::from(ring)).max(MIN_IDLE_INTERRUPTS)
}

/// Simulated time a platform runs at most before the loop watches it again (1 us): a host left
/// alone (the others idle) would otherwise run to its end inside one [`Platform::advance`], and
/// a host whose handlers feed themselves would never come back to the guard.
pub const WATCH_PS: Ps = 1_000_000;

/// Passages listed one by one per link.
pub const MAX_PASSAGES: usize = 1000;

struct Wire {
    link: EthernetLink,
    /// (host, agent index) of each end.
    ends: [(usize, usize); 2],
    names: [String; 2],
    passages: Vec<(u8, f64, f64)>,
}

/// Runs `programs[h]` on `platforms[h]` (one program per core group, as
/// [`Platform::run_programs`]), with the ports `links` names joined. `progress` hears the
/// operations fed to all cores together.
pub fn run(
    platforms: &mut [Platform],
    programs: &[Vec<Workload>],
    links: &[LinkSpec],
    progress: &mut dyn FnMut(u64),
) -> Result<ClusterStats, PlatformError> {
    let n = platforms.len();
    if n == 0 || n > MAX_HOSTS {
        return Err(PlatformError::config(
            "cluster",
            "hosts",
            format!("{n} platforms: a cluster has 1 to {MAX_HOSTS}"),
        ));
    }
    if programs.len() != n {
        return Err(PlatformError::config(
            "cluster",
            "hosts",
            format!("{} programs for {n} platforms", programs.len()),
        ));
    }
    if links.len() > MAX_HOSTS * 4 {
        return Err(PlatformError::config(
            "cluster",
            "links",
            format!("{} links: at most {}", links.len(), MAX_HOSTS * 4),
        ));
    }
    let mut wires = Vec::new();
    let mut max_ring = 0u32;
    for (k, l) in links.iter().enumerate() {
        let at = format!("links[{k}]");
        let mut ends = [(0, 0); 2];
        let mut ports = Vec::new();
        for (e, end) in [&l.a, &l.b].into_iter().enumerate() {
            let side = if e == 0 { "a" } else { "b" };
            let p = platforms.get_mut(end.host).ok_or_else(|| {
                PlatformError::config(
                    "cluster",
                    format!("{at}.{side}"),
                    format!("host {} does not exist (there are {n})", end.host),
                )
            })?;
            let (agent, port) = p.attach_port(&end.agent).map_err(|err| {
                PlatformError::config("cluster", format!("{at}.{side}"), err.to_string())
            })?;
            ends[e] = (end.host, agent);
            max_ring = max_ring.max(port.ring);
            ports.push(port);
        }
        if (ports[0].gbps - ports[1].gbps).abs() > 1e-9 {
            return Err(PlatformError::config(
                "cluster",
                at,
                format!(
                    "the ports run at {} and {} Gb/s: both ends of an Ethernet link run at one rate",
                    ports[0].gbps, ports[1].gbps
                ),
            ));
        }
        let gbps = l.gbps.unwrap_or(ports[0].gbps);
        if (gbps - ports[0].gbps).abs() > 1e-9 {
            return Err(PlatformError::config(
                "cluster",
                format!("{at}.gbps"),
                format!("{gbps} Gb/s, but the ports run at {} Gb/s", ports[0].gbps),
            ));
        }
        let params = LinkParams {
            gbps,
            meters: l.meters,
            ns_per_meter: l.ns_per_meter,
        };
        params
            .validate(&at)
            .map_err(|e| PlatformError::config("cluster", at.clone(), e))?;
        wires.push(Wire {
            link: EthernetLink::new(params),
            ends,
            names: [
                format!("{}.{}", l.a.host, l.a.agent),
                format!("{}.{}", l.b.host, l.b.agent),
            ],
            passages: Vec::new(),
        });
    }
    // Which wire end each (host, agent) port is.
    let mut port_of: Vec<Vec<(usize, usize, usize)>> = vec![Vec::new(); n];
    for (w, wire) in wires.iter().enumerate() {
        for (e, &(h, a)) in wire.ends.iter().enumerate() {
            port_of[h].push((a, w, e));
        }
    }
    let mut runs: Vec<Run<'_>> = Vec::with_capacity(n);
    for (p, w) in platforms.iter_mut().zip(programs) {
        runs.push(p.begin(w)?);
    }
    let mut next: Vec<Ps> = vec![0; n];
    let mut idle = vec![false; n];
    let mut frames = Vec::new();
    let mut ops = 0u64;
    // The platform with the earliest next thing to do, until every one is done.
    let mut guard = RunGuard::new("the cluster run").with_idle_work(idle_interrupts(max_ring));
    // Per host: frames taken in from the wire (progress beside its program's operations).
    let mut taken_in = vec![0u64; n];
    while let Some(i) = (0..n).filter(|&i| !idle[i]).min_by_key(|&i| (next[i], i)) {
        let horizon = (0..n)
            .filter(|&j| j != i && !idle[j])
            .map(|j| next[j])
            .min()
            .unwrap_or(Ps::MAX)
            // Hand back at least every WATCH_PS, so the guard watches a host that runs alone.
            .min(next[i].saturating_add(WATCH_PS));
        let before = runs[i].ops();
        match platforms[i].advance(&mut runs[i], &mut |_| {}, horizon)? {
            Step::Idle => idle[i] = true,
            Step::At(t) => next[i] = t,
        }
        guard.step()?;
        guard.watch(
            i,
            runs[i].ops() + taken_in[i],
            platforms[i].interrupts_taken(),
            platforms[i].interrupts_held(),
        )?;
        let done = runs[i].ops() - before;
        if done > 0 {
            let old = ops;
            ops += done;
            if ops / 4096 != old / 4096 {
                progress(ops);
            }
        }
        for &(agent, w, e) in &port_of[i] {
            platforms[i].take_frames(agent, &mut frames);
            for (sent, f) in frames.drain(..) {
                let wire = &mut wires[w];
                let p = wire.link.carry(e, sent, f.len()).map_err(|err| {
                    PlatformError::config(
                        "cluster",
                        format!("links[{w}]"),
                        format!("{}: {err}", wire.names[e]),
                    )
                })?;
                if wire.passages.len() < MAX_PASSAGES {
                    wire.passages.push((
                        e as u8,
                        p.start as f64 / 1000.0,
                        p.arrive as f64 / 1000.0,
                    ));
                }
                let (h, a) = wire.ends[1 - e];
                platforms[h].frame_in(a, p.arrive, f);
                taken_in[h] += 1;
                next[h] = if idle[h] {
                    p.arrive.max(platforms[h].now())
                } else {
                    next[h].min(p.arrive)
                };
                idle[h] = false;
            }
        }
    }
    progress(ops);
    let hosts = platforms
        .iter_mut()
        .zip(runs)
        .map(|(p, r)| p.finish(r, &mut |_| {}))
        .collect();
    let links = wires
        .into_iter()
        .map(|w| LinkStats {
            a: w.names[0].clone(),
            b: w.names[1].clone(),
            gbps: w.link.params.gbps,
            propagation_ns: w.link.propagation_ps() as f64 / 1000.0,
            a_to_b: w.link.stats[0],
            b_to_a: w.link.stats[1],
            passages: w.passages,
        })
        .collect();
    Ok(ClusterStats { hosts, links })
}
