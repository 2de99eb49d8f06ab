//! Network I/O on a host core with small multithreaded cores beside it (Wun & Crowley's IXP2350
//! prototype): the wiring and the run loop. A peer sends iperf-UDP datagrams over the wire into
//! the MSF (`msf_mac.rs`); the small cores (`microengine.rs`) run the configuration's per-frame
//! program; the host core runs its driver, stack and application programs with the priorities
//! of a kernel (interrupt, then softirq, then the process), each step costed by its caches
//! (`host_step_cost.rs`); on transmit the host's application sends and the small cores put frames
//! on the wire to the peer. Packets carry their bytes from buffer to buffer, and the receiving
//! peer or program checks every datagram (`udp_peer.rs`). Queues are bounded: frames are
//! dropped at the MSF, at the ring to the host or at the socket, never inside the host's
//! programs (a stage does not start a packet it has no room to pass on).
use crate::config::network::{Configuration, HostStep, Loc, NetworkIoConfig, Notify};
use crate::net::msf_mac::MsfMac;
use crate::net::udp_peer::{
    checksum_ok, is_fin, UdpReceiver, UdpSender, HEADER_BYTES, MAX_PAYLOAD, MIN_PAYLOAD,
};
use crate::sim::error::PlatformError;
use crate::sim::{EventQueue, Ps, RunGuard};
use crate::small_cores::host_step_cost::{HostCaches, StaleRead};
use crate::small_cores::mem_channel::MemChannel;
use crate::small_cores::microengine::{CoreEvent, Job, JobKind, SmallCoreEnv, SmallCores};
use crate::small_cores::packet_buffers::{amount, Buffers, Pkt};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

/// Receive or transmit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Rx,
    Tx,
}

/// One run: a configuration, a direction, a payload size; `with_app = false` leaves the
/// receiving process out (the small cores' receive blocks alone, Fig. 5).
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub config: String,
    pub direction: Direction,
    pub payload: usize,
    pub with_app: bool,
}

/// What a run measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NetStats {
    pub config: String,
    pub direction: String,
    pub payload_bytes: usize,
    /// iperf's figure at the receiver: payload Mb/s from the first to the terminating datagram.
    pub throughput_mbps: f64,
    /// The sender's payload rate while it sends.
    pub offered_mbps: f64,
    /// Data datagrams sent, delivered (byte-checked), and lost: `sent = delivered + lost`, and
    /// every lost one was dropped at a counted place: `lost = rbuf_drops + ring_drops +
    /// buffer_drops + socket_drops` (these count data datagrams only).
    pub sent: u64,
    pub delivered: u64,
    pub lost: u64,
    pub rbuf_drops: u64,
    pub ring_drops: u64,
    pub buffer_drops: u64,
    pub socket_drops: u64,
    /// Terminating datagrams sent (the sender repeats it until one arrives) and dropped on the
    /// way, wherever that was; counted apart from the data datagrams.
    pub fins_sent: u64,
    pub fin_drops: u64,
    pub interrupts: u64,
    /// Fractions of the host core's time: interrupt handlers, softirq (poll/backlog), the
    /// process (system calls and application), spinning on a small core, idle.
    pub host_irq: f64,
    pub host_softirq: f64,
    pub host_process: f64,
    pub host_spin: f64,
    pub host_idle: f64,
    /// Busy fraction of the small cores' pipelines (all of them, the receive cores', the
    /// transmit cores') and of each memory channel.
    pub small_core_busy: f64,
    pub rx_cores_busy: f64,
    pub tx_cores_busy: f64,
    pub channel_busy: BTreeMap<String, f64>,
    pub context_swaps: u64,
    pub mapping_misses: u64,
    pub pushed_lines: u64,
    pub l1_hits: u64,
    pub l1_misses: u64,
    pub l2_hits: u64,
    pub l2_misses: u64,
    pub sim_time_us: f64,
    pub events: u64,
}

/// Where the run loop drops a packet (the MSF and the small cores count their own).
#[derive(Clone, Copy)]
enum DropAt {
    Ring,
    Socket,
}

/// What the host core is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    IrqDriver,
    IrqPoll,
    IrqWake,
    IrqTxFree,
    Poll,
    Backlog,
    AppRx,
    AppTx,
}

impl Stage {
    fn bucket(self) -> usize {
        match self {
            Stage::IrqDriver | Stage::IrqPoll | Stage::IrqWake | Stage::IrqTxFree => 0,
            Stage::Poll | Stage::Backlog => 1,
            Stage::AppRx | Stage::AppTx => 2,
        }
    }
}

struct Item {
    stage: Stage,
    steps: Rc<Vec<HostStep>>,
    at: usize,
    pkt: Option<Pkt>,
    started: Ps,
}

enum Ev {
    /// The peer's next frame reaches the MSF (rx).
    Arrive(Vec<u8>),
    /// The peer sends its next frame (rx).
    Send,
    Me {
        pool: usize,
        me: usize,
    },
    HostDone,
    /// A small-core job the host spins on has ended.
    HostResume(Pkt),
    /// A transmitted frame's last bit has left the MAC (free its TBUF elements) and reaches
    /// the peer after the wire's delay.
    TbufFree(usize),
    PeerRx(Vec<u8>),
}

/// The whole simulated system of one run.
pub struct NetworkIo {
    cfg: NetworkIoConfig,
    conf: Configuration,
    spec: RunSpec,
    q: EventQueue<Ev>,
    now: Ps,
    pub buffers: Buffers,
    pub msf: MsfMac,
    pub channels: BTreeMap<String, MemChannel>,
    pub host: HostCaches,
    pub cores: SmallCores,
    sender: UdpSender,
    fin_sent: bool,
    send_until: Ps,
    pub receiver: UdpReceiver,
    rx_ring: VecDeque<Pkt>,
    tx_ring: VecDeque<Pkt>,
    backlog: VecDeque<Pkt>,
    sockq: VecDeque<Pkt>,
    irq_raised: bool,
    irq_enabled: bool,
    poll_active: bool,
    poll_count: u32,
    app_waiting: bool,
    app_switch: bool,
    tx_done_frees: u32,
    host_item: Option<Item>,
    host_busy: bool,
    host_time: [Ps; 4],
    stats: NetStats,
    rc: RcSteps,
}

/// The configuration's programs, shared by reference.
struct RcSteps {
    rx_me: Rc<Vec<crate::config::network::MeStep>>,
    tx_me: Rc<Vec<crate::config::network::MeStep>>,
    irq_driver: Rc<Vec<HostStep>>,
    poll: Rc<Vec<HostStep>>,
    backlog: Rc<Vec<HostStep>>,
    app_rx: Rc<Vec<HostStep>>,
    app_rx_woken: Rc<Vec<HostStep>>,
    app_tx: Rc<Vec<HostStep>>,
    irq_poll: Rc<Vec<HostStep>>,
    irq_wake: Rc<Vec<HostStep>>,
    tx_free: Rc<Vec<HostStep>>,
}

fn cost(name: &str) -> HostStep {
    HostStep::Cost { name: name.into() }
}

/// The host costs the run loop itself charges (beside the programs' own).
pub const LOOP_COSTS: &[&str] = &[
    "irq_entry",
    "irq_exit",
    "poll_schedule",
    "wakeup",
    "context_switch",
];

fn corrupt(what: impl Into<String>) -> PlatformError {
    PlatformError::Stalled(format!("data check failed: {}", what.into()))
}

impl From<StaleRead> for PlatformError {
    fn from(s: StaleRead) -> Self {
        corrupt(format!(
            "the host read line {:#x} after a small core wrote it, without invalidating its cached copy",
            s.0
        ))
    }
}

impl NetworkIo {
    pub fn new(cfg: &NetworkIoConfig, spec: &RunSpec) -> Result<NetworkIo, PlatformError> {
        let conf =
            cfg.configs
                .get(&spec.config)
                .cloned()
                .ok_or_else(|| PlatformError::Unknown {
                    kind: "network configuration",
                    name: spec.config.clone(),
                    known: cfg.configs.keys().cloned().collect::<Vec<_>>().join(", "),
                })?;
        if !(MIN_PAYLOAD..=MAX_PAYLOAD).contains(&spec.payload) {
            return Err(PlatformError::config(
                "run",
                "payload_bytes",
                format!("{} is outside {MIN_PAYLOAD}..={MAX_PAYLOAD} (a UDP datagram in one 1500-byte Ethernet frame)", spec.payload),
            ));
        }
        let without_app_ok = spec.direction == Direction::Rx && conf.rx.notify == Notify::IfWaiting;
        if !spec.with_app && !without_app_ok {
            return Err(PlatformError::config(
                "run",
                "with_app",
                "only receive with notify = \"if-waiting\" (the onloader) can run without the application: elsewhere the host's stack is on the path",
            ));
        }
        for c in LOOP_COSTS {
            if !cfg.host.costs.contains_key(*c) {
                return Err(PlatformError::config(
                    "platform",
                    format!("host.costs.{c}"),
                    "missing (the run loop charges it)",
                ));
            }
        }
        let channels = cfg
            .channels
            .iter()
            .map(|(k, c)| (k.clone(), MemChannel::new(c)))
            .collect();
        let seq = |v: Vec<HostStep>| Rc::new(v);
        let cat = |a: &[HostStep], b: &[HostStep]| Rc::new([a, b].concat());
        let rc = RcSteps {
            rx_me: Rc::new(conf.rx.small_core.clone()),
            tx_me: Rc::new(conf.tx.small_core.clone()),
            irq_driver: Rc::new(
                [
                    vec![cost("irq_entry")],
                    conf.rx.driver.clone(),
                    vec![cost("irq_exit")],
                ]
                .concat(),
            ),
            poll: cat(&conf.rx.driver, &conf.rx.stack),
            backlog: Rc::new(conf.rx.stack.clone()),
            app_rx: Rc::new(conf.rx.app.clone()),
            app_rx_woken: cat(&[cost("context_switch")], &conf.rx.app),
            app_tx: Rc::new(conf.tx.app.clone()),
            irq_poll: seq(vec![
                cost("irq_entry"),
                cost("poll_schedule"),
                cost("irq_exit"),
            ]),
            irq_wake: seq(vec![cost("irq_entry"), cost("wakeup"), cost("irq_exit")]),
            tx_free: Rc::new(conf.tx.free.clone()),
        };
        let wire_ps = MsfMac::new(&cfg.msf, &cfg.wire).wire_time(spec.payload + HEADER_BYTES);
        Ok(NetworkIo {
            msf: MsfMac::new(&cfg.msf, &cfg.wire),
            buffers: Buffers::new(&cfg.queues),
            channels,
            host: HostCaches::new(&cfg.host),
            cores: {
                let mut c = SmallCores::new(&cfg.small_cores);
                c.wire_latency = (cfg.wire.latency_ns * 1e3) as Ps;
                c
            },
            sender: UdpSender::new(spec.payload),
            fin_sent: false,
            send_until: (cfg.wire.duration_us * 1e6) as Ps,
            receiver: UdpReceiver::new(spec.payload),
            rx_ring: VecDeque::new(),
            tx_ring: VecDeque::new(),
            backlog: VecDeque::new(),
            sockq: VecDeque::new(),
            irq_raised: false,
            irq_enabled: true,
            poll_active: false,
            poll_count: 0,
            app_waiting: false,
            app_switch: false,
            tx_done_frees: 0,
            host_item: None,
            host_busy: false,
            host_time: [0; 4],
            stats: NetStats {
                config: spec.config.clone(),
                direction: format!("{:?}", spec.direction).to_lowercase(),
                payload_bytes: spec.payload,
                offered_mbps: spec.payload as f64 * 8.0 / (wire_ps as f64 / 1e6),
                ..Default::default()
            },
            q: EventQueue::new(),
            now: 0,
            cfg: cfg.clone(),
            conf,
            spec: spec.clone(),
            rc,
        })
    }

    fn at(&mut self, t: Ps, e: Ev) {
        self.q.push(t, e);
    }

    /// Runs until the receiver has the terminating datagram.
    pub fn run(mut self) -> Result<NetStats, PlatformError> {
        match self.spec.direction {
            Direction::Rx => self.at(0, Ev::Send),
            Direction::Tx => self.kick_host(0),
        }
        // Far past any sensible end: the peer's sending time plus a simulated second.
        let limit = self.send_until + 1_000_000_000_000;
        let mut guard = RunGuard::new("the network run");
        while self.receiver.fin_at.is_none() {
            let Some(t) = self.q.peek_time() else {
                return Err(PlatformError::Stalled(format!(
                    "network run {} {:?} {} B: nothing left to do at {:.1} us and the terminating datagram has not arrived",
                    self.spec.config, self.spec.direction, self.spec.payload, self.now as f64 / 1e6
                )));
            };
            if t > limit {
                return Err(PlatformError::Stalled(format!(
                    "network run {} {:?} {} B: no terminating datagram after {:.0} us",
                    self.spec.config,
                    self.spec.direction,
                    self.spec.payload,
                    limit as f64 / 1e6
                )));
            }
            let Some((t, e)) = self.q.pop_due(t) else {
                break;
            };
            self.now = t;
            guard.step()?;
            self.event(t, e)?;
        }
        Ok(self.finish(guard.steps()))
    }

    /// The sender's next datagram at `t`: data while it sends, then the terminating one.
    fn next_frame(&mut self, t: Ps) -> Vec<u8> {
        if t < self.send_until {
            self.stats.sent += 1;
            self.sender.next_frame()
        } else {
            self.fin_sent = true;
            self.stats.fins_sent += 1;
            self.sender.fin_frame()
        }
    }

    /// The receiving program checks a delivered payload.
    fn deliver(&mut self, t: Ps, payload: &[u8]) -> Result<(), PlatformError> {
        self.receiver
            .deliver(t, payload)
            .map_err(|c| corrupt(c.0))?;
        if self.receiver.fin_at.is_none() {
            self.stats.delivered += 1;
        }
        Ok(())
    }

    fn event(&mut self, t: Ps, e: Ev) -> Result<(), PlatformError> {
        match e {
            Ev::Send => {
                let frame = self.next_frame(t);
                let gap = if self.fin_sent {
                    (self.cfg.wire.fin_resend_us * 1e6) as Ps
                } else {
                    self.msf.wire_time(frame.len())
                };
                let lat = (self.cfg.wire.latency_ns * 1e3) as Ps + self.msf.wire_time(frame.len());
                self.at(t + lat, Ev::Arrive(frame));
                self.at(t + gap, Ev::Send);
            }
            Ev::Arrive(frame) => {
                // iperf starts its clock at the first datagram; here when it reaches the MSF, so
                // that time the host spends before the process first runs counts.
                self.receiver.start(t);
                if self.msf.receive(frame.len()) {
                    let p = self
                        .buffers
                        .put(Loc::Rbuf, &frame)
                        .expect("the RBUF arena grows");
                    self.cores.submit(
                        0,
                        Job {
                            steps: self.rc.rx_me.clone(),
                            pkt: p,
                            kind: JobKind::RxFrame,
                        },
                        false,
                    );
                    self.kick_cores(0, t);
                } else if is_fin(&frame) {
                    self.stats.fin_drops += 1;
                } else {
                    self.stats.rbuf_drops += 1;
                }
            }
            Ev::Me { pool, me } => {
                let done = self.cores.run(
                    pool,
                    me,
                    t,
                    &mut SmallCoreEnv {
                        buffers: &mut self.buffers,
                        channels: &mut self.channels,
                        msf: &mut self.msf,
                        host: &mut self.host,
                        tx_ring: &mut self.tx_ring,
                    },
                )?;
                for (time, ev) in done.events {
                    self.at(time, ev_of(ev));
                }
                for (job, at) in done.finished {
                    self.job_done(job, at)?;
                }
                self.stats.buffer_drops += done.dropped;
                self.stats.fin_drops += done.dropped_fins;
                if let Some(w) = done.wake {
                    self.at(w, Ev::Me { pool, me });
                }
                if done.took_tx {
                    self.kick_host(t);
                }
            }
            Ev::HostDone => self.host_step_done(t)?,
            Ev::HostResume(p) => {
                if let Some(item) = self.host_item.as_mut() {
                    item.pkt = Some(p);
                    item.at += 1;
                }
                self.host_continue(t)?;
            }
            Ev::TbufFree(len) => {
                self.msf.release_tbuf(len);
                for pool in 0..self.cores.pools() {
                    self.kick_cores(pool, t);
                }
            }
            Ev::PeerRx(frame) => {
                // The peer checks the headers' checksums, then the payload as the program does.
                if !checksum_ok(&frame) {
                    return Err(corrupt(
                        "the peer received a frame with a bad IP or UDP checksum",
                    ));
                }
                self.deliver(t, &frame[HEADER_BYTES..])?;
            }
        }
        Ok(())
    }

    /// The counter a dropped packet `p` goes to: `at`'s, or the terminating datagrams'.
    fn drop_counter(&mut self, p: &Pkt, at: DropAt) -> &mut u64 {
        if is_fin(self.buffers.bytes(p)) {
            return &mut self.stats.fin_drops;
        }
        match at {
            DropAt::Ring => &mut self.stats.ring_drops,
            DropAt::Socket => &mut self.stats.socket_drops,
        }
    }

    fn kick_cores(&mut self, pool: usize, t: Ps) {
        for (me, at) in self.cores.wake_idle(pool, t) {
            self.at(at, Ev::Me { pool, me });
        }
    }

    /// A small-core job ended at `t`.
    fn job_done(&mut self, job: Job, t: Ps) -> Result<(), PlatformError> {
        match job.kind {
            JobKind::HostWait => self.at(t, Ev::HostResume(job.pkt)),
            JobKind::Tx => {
                if self.conf.tx.free_by_interrupt {
                    self.tx_done_frees += 1;
                    if !self.irq_raised {
                        self.irq_raised = true;
                        self.stats.interrupts += 1;
                    }
                    self.kick_host(t);
                }
            }
            JobKind::RxFrame => {
                let p = job.pkt;
                match self.conf.rx.notify {
                    Notify::PerPacket | Notify::AdaptivePoll => {
                        if self.rx_ring.len() >= self.cfg.queues.dev_ring as usize {
                            *self.drop_counter(&p, DropAt::Ring) += 1;
                            self.buffers.release(p);
                            return Ok(());
                        }
                        self.rx_ring.push_back(p);
                        if self.conf.rx.notify == Notify::PerPacket {
                            self.stats.interrupts += 1;
                        } else if self.irq_enabled {
                            self.irq_enabled = false;
                            self.irq_raised = true;
                            self.stats.interrupts += 1;
                        }
                    }
                    Notify::IfWaiting => {
                        if !self.spec.with_app {
                            let data = self.buffers.take(p);
                            return self.deliver(t, &data[HEADER_BYTES..]);
                        }
                        if self.sockq.len() >= self.cfg.queues.socket as usize {
                            *self.drop_counter(&p, DropAt::Socket) += 1;
                            self.buffers.release(p);
                            return Ok(());
                        }
                        self.sockq.push_back(p);
                        if self.app_waiting && !self.irq_raised {
                            self.irq_raised = true;
                            self.stats.interrupts += 1;
                        }
                    }
                }
                self.kick_host(t);
            }
        }
        Ok(())
    }

    fn kick_host(&mut self, t: Ps) {
        if !self.host_busy {
            self.host_busy = true;
            self.at(t, Ev::HostDone);
        }
    }

    /// The host's next work, by priority: interrupt, softirq, process.
    fn next_item(&mut self, t: Ps) -> Option<Item> {
        let item = |stage, steps: &Rc<Vec<HostStep>>, pkt| {
            Some(Item {
                stage,
                steps: steps.clone(),
                at: 0,
                pkt,
                started: t,
            })
        };
        let sock_room = self.sockq.len() < self.cfg.queues.socket as usize;
        let rx = self.spec.direction == Direction::Rx;
        // Interrupts.
        if rx && self.conf.rx.notify == Notify::PerPacket {
            if !self.rx_ring.is_empty() && self.backlog.len() < self.cfg.queues.backlog as usize {
                let p = self.rx_ring.pop_front();
                return item(Stage::IrqDriver, &self.rc.irq_driver, p);
            }
        } else if self.irq_raised {
            self.irq_raised = false;
            if !rx {
                let n = std::mem::take(&mut self.tx_done_frees) as usize;
                let steps = Rc::new(
                    [
                        vec![cost("irq_entry")],
                        (0..n)
                            .flat_map(|_| self.rc.tx_free.iter().cloned())
                            .collect(),
                        vec![cost("irq_exit")],
                    ]
                    .concat(),
                );
                return item(Stage::IrqTxFree, &steps, None);
            }
            if self.conf.rx.notify == Notify::AdaptivePoll {
                self.poll_active = true;
                return item(Stage::IrqPoll, &self.rc.irq_poll, None);
            }
            self.app_waiting = false;
            self.app_switch = true;
            return item(Stage::IrqWake, &self.rc.irq_wake, None);
        }
        // Softirq: the backlog (per-packet interrupts) or the poll loop (adaptive polling).
        if rx && sock_room {
            let app_ready = !self.sockq.is_empty() && self.spec.with_app;
            if self.conf.rx.notify == Notify::PerPacket && !self.backlog.is_empty() {
                let p = self.backlog.pop_front();
                return item(Stage::Backlog, &self.rc.backlog, p);
            }
            if self.poll_active {
                if self.rx_ring.is_empty() {
                    self.poll_active = false;
                    self.irq_enabled = true;
                    self.poll_count = 0;
                } else if self.poll_count < self.cfg.queues.poll_budget || !app_ready {
                    self.poll_count += 1;
                    let p = self.rx_ring.pop_front();
                    return item(Stage::Poll, &self.rc.poll, p);
                } else {
                    self.poll_count = 0;
                }
            }
        }
        // The process.
        if rx {
            if let Some(p) = self.sockq.pop_front() {
                let steps = if std::mem::take(&mut self.app_switch) {
                    &self.rc.app_rx_woken
                } else {
                    &self.rc.app_rx
                };
                return item(Stage::AppRx, steps, Some(p));
            }
            if self.spec.with_app {
                self.app_waiting = true;
            }
            return None;
        }
        if self.receiver.fin_at.is_none()
            && !self.fin_sent
            && self.tx_ring.len() < self.cfg.queues.dev_ring as usize
        {
            let frame = self.next_frame(t);
            let p = self.buffers.put(Loc::User, &frame);
            return item(Stage::AppTx, &self.rc.app_tx, p);
        }
        None
    }

    fn host_step_done(&mut self, t: Ps) -> Result<(), PlatformError> {
        if let Some(item) = self.host_item.take() {
            // A small-core step ends the costed part: hand the packet over and spin.
            if let Some(HostStep::SmallCore { steps }) = item.steps.get(item.at) {
                let pool = if item.stage == Stage::AppTx {
                    self.cores.pools() - 1
                } else {
                    0
                };
                let pkt = item
                    .pkt
                    .ok_or_else(|| corrupt("a small-core step without a packet"))?;
                self.cores.submit(
                    pool,
                    Job {
                        steps: Rc::new(steps.clone()),
                        pkt,
                        kind: JobKind::HostWait,
                    },
                    true,
                );
                self.host_time[item.stage.bucket()] += t - item.started;
                self.host_item = Some(Item {
                    pkt: None,
                    started: t,
                    ..item
                });
                self.kick_cores(pool, t);
                return Ok(());
            }
            self.host_time[item.stage.bucket()] += t - item.started;
            self.item_done(item, t)?;
        }
        match self.next_item(t) {
            Some(item) => {
                self.host_item = Some(item);
                self.host_continue(t)
            }
            None => {
                self.host_busy = false;
                Ok(())
            }
        }
    }

    /// Costs the current item's steps from where it stands to its end or its next small-core
    /// step, and schedules the end.
    fn host_continue(&mut self, t: Ps) -> Result<(), PlatformError> {
        let Some(mut item) = self.host_item.take() else {
            return Ok(());
        };
        if item.at > 0 && item.pkt.is_some() && item.started < t {
            // Back from spinning on a small core.
            self.host_time[3] += t - item.started;
            item.started = t;
        }
        let mut cyc = 0.0;
        let cpi = self.cfg.host.cpi;
        let cps = self.host.cycle_ps;
        while let Some(s) = item.steps.get(item.at) {
            let now = t + (cyc * cps) as Ps;
            let sdram = self.channels.get_mut("host_sdram").expect("validated");
            match s {
                HostStep::SmallCore { .. } => break,
                HostStep::Cost { name } => cyc += self.cfg.host.costs[name] * cpi,
                HostStep::Copy {
                    from,
                    to,
                    bytes,
                    checksum,
                } => {
                    let Some(p) = item.pkt else {
                        return Err(corrupt("a copy without a packet"));
                    };
                    if p.loc != *from {
                        return Err(corrupt(format!(
                            "host copy from {from:?}, but the packet is in {:?}",
                            p.loc
                        )));
                    }
                    if *checksum && !checksum_ok(self.buffers.bytes(&p)) {
                        return Err(corrupt("a checksum failed on the host"));
                    }
                    let n = amount(*bytes, p.len);
                    let fin = is_fin(self.buffers.bytes(&p));
                    match self.buffers.move_to(p, *to) {
                        Some(q) => {
                            cyc += self.host.copy(
                                sdram,
                                now,
                                (p.loc, p.idx),
                                (q.loc, q.idx),
                                n,
                                *checksum,
                            )?;
                            item.pkt = Some(q);
                        }
                        None => {
                            // No buffer: the packet is dropped, the stage ends.
                            if fin {
                                self.stats.fin_drops += 1;
                            } else {
                                self.stats.buffer_drops += 1;
                            }
                            item.pkt = None;
                            item.at = item.steps.len();
                            break;
                        }
                    }
                }
                HostStep::Checksum { bytes } => {
                    let Some(p) = item.pkt else {
                        return Err(corrupt("a checksum without a packet"));
                    };
                    if !checksum_ok(self.buffers.bytes(&p)) {
                        return Err(corrupt("a checksum failed on the host"));
                    }
                    cyc += self
                        .host
                        .checksum(sdram, now, (p.loc, p.idx), amount(*bytes, p.len))?;
                }
                HostStep::Uncached { count, write } => {
                    cyc += self.host.uncached_accesses(*count, *write)
                }
                HostStep::CacheOp { of, bytes, clean } => {
                    let (idx, len) = match item.pkt {
                        Some(p) if p.loc == *of => (p.idx, p.len),
                        Some(p) => (0, p.len),
                        None => (0, self.spec.payload + HEADER_BYTES),
                    };
                    cyc += self.host.cache_op((*of, idx), amount(*bytes, len), *clean);
                }
                HostStep::MapUserBuffer { bytes } => {
                    let len = item.pkt.map_or(self.spec.payload + HEADER_BYTES, |p| p.len);
                    let c = &self.cfg.host.costs;
                    if self.host.map_user_buffer() {
                        cyc += c.get("map_cache_hit").copied().unwrap_or(0.0) * cpi;
                    } else {
                        cyc += (c.get("page_walk").copied().unwrap_or(0.0)
                            + c.get("fault_in").copied().unwrap_or(0.0))
                            * cpi;
                        cyc += self
                            .host
                            .cache_op((Loc::User, 0), amount(*bytes, len), true);
                    }
                }
            }
            item.at += 1;
        }
        // Wake-ups the stage causes are charged to it.
        if matches!(item.stage, Stage::Poll | Stage::Backlog)
            && item.at == item.steps.len()
            && self.app_waiting
        {
            cyc += self.cfg.host.costs["wakeup"] * cpi;
            self.app_waiting = false;
            self.app_switch = true;
        }
        let end = t + (cyc * cps).round() as Ps;
        self.host_item = Some(item);
        self.at(end.max(t), Ev::HostDone);
        Ok(())
    }

    fn item_done(&mut self, item: Item, t: Ps) -> Result<(), PlatformError> {
        let Some(p) = item.pkt else { return Ok(()) };
        match item.stage {
            Stage::IrqDriver => self.backlog.push_back(p),
            Stage::Poll | Stage::Backlog => {
                if self.sockq.len() >= self.cfg.queues.socket as usize {
                    *self.drop_counter(&p, DropAt::Socket) += 1;
                    self.buffers.release(p);
                } else {
                    self.sockq.push_back(p);
                }
            }
            Stage::AppRx => {
                if p.loc != Loc::User {
                    return Err(corrupt(format!(
                        "the application's receive ended with the packet in {:?}",
                        p.loc
                    )));
                }
                let data = self.buffers.take(p);
                self.deliver(t, &data[HEADER_BYTES..])?;
            }
            Stage::AppTx => {
                self.tx_ring.push_back(p);
                self.cores.submit(
                    self.cores.pools() - 1,
                    Job {
                        steps: self.rc.tx_me.clone(),
                        pkt: p,
                        kind: JobKind::Tx,
                    },
                    false,
                );
                let pool = self.cores.pools() - 1;
                self.kick_cores(pool, t);
            }
            Stage::IrqPoll | Stage::IrqWake | Stage::IrqTxFree => {}
        }
        Ok(())
    }

    fn finish(mut self, events: u64) -> NetStats {
        let s = &mut self.stats;
        let span = self.now.max(1) as f64;
        s.throughput_mbps = self.receiver.throughput_mbps().unwrap_or(0.0);
        s.lost = self.receiver.lost;
        let busy: Ps = self.host_time.iter().sum();
        s.host_irq = self.host_time[0] as f64 / span;
        s.host_softirq = self.host_time[1] as f64 / span;
        s.host_process = self.host_time[2] as f64 / span;
        s.host_spin = self.host_time[3] as f64 / span;
        s.host_idle = (1.0 - busy as f64 / span).max(0.0);
        let (b, n, sw) = self.cores.busy();
        s.small_core_busy = b as f64 / (span * n as f64);
        let pool_busy = |pool: usize| {
            let (b, n) = self.cores.pool_busy(pool);
            b as f64 / (span * n.max(1) as f64)
        };
        s.rx_cores_busy = pool_busy(0);
        s.tx_cores_busy = pool_busy(self.cores.pools() - 1);
        s.context_swaps = sw;
        s.channel_busy = self
            .channels
            .iter()
            .map(|(k, c)| (k.clone(), c.busy as f64 / span))
            .collect();
        s.mapping_misses = self.host.mapping_misses;
        s.pushed_lines = self.host.pushed_lines;
        (s.l1_hits, s.l1_misses, s.l2_hits, s.l2_misses) = self.host.hits_misses();
        s.sim_time_us = span / 1e6;
        s.events = events;
        self.stats.clone()
    }
}

fn ev_of(e: CoreEvent) -> Ev {
    match e {
        CoreEvent::TbufFree(n) => Ev::TbufFree(n),
        CoreEvent::PeerRx(f) => Ev::PeerRx(f),
    }
}

/// Runs one configuration at one payload.
pub fn run(cfg: &NetworkIoConfig, spec: &RunSpec) -> Result<NetStats, PlatformError> {
    NetworkIo::new(cfg, spec)?.run()
}
