//! `veth`: real frames through the real kernel. [`VethLab`] creates two private network
//! namespaces joined by a veth pair (the host side "a", 10.77.0.1, and the peer "b",
//! 10.77.0.2) and removes them when dropped; [`VethSource`] reads side a with an AF_PACKET
//! socket and a TPACKET_V2 receive ring (frames are read in place from memory shared with the
//! kernel) and transmits with `send` on the same socket. The peer sends and receives with the
//! kernel's own UDP sockets from a thread that entered namespace b.
//!
//! Needs CAP_NET_ADMIN (root) for the namespaces; [`VethLab::create`] says in one line why it
//! cannot when it cannot. Only addresses inside the namespaces it created are ever used.
//! Transmit checksum offload is turned off on both veth ends so that every frame carries real
//! checksums for the engine to verify.
use crate::onload::error::{OnloadError, OnloadResult};
use crate::onload::source::{FrameSource, SourceStats};
use crate::onload::wait::realtime_offset_ns;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// Address of the host side (a) and of the peer (b).
pub const HOST_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
pub const PEER_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
/// Locally administered MACs of the two ends (the engine's defaults).
pub const HOST_MAC: [u8; 6] = [0x02, 0x6d, 0x6c, 0, 0, 1];
pub const PEER_MAC: [u8; 6] = [0x02, 0x6d, 0x6c, 0, 0, 2];

/// Which end of the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Host,
    Peer,
}

fn mac_str(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The names of the namespaces a [`VethLab`] creates: `movelab-onl-PID-SEQ-a` and `-b`.
const NS_PREFIX: &str = "movelab-onl-";

/// The pid in a namespace name of [`NS_PREFIX`]'s form.
fn namespace_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(NS_PREFIX)?;
    let mut parts = rest.split('-');
    let (pid, seq, side) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || seq.parse::<u32>().is_err() || !matches!(side, "a" | "b") {
        return None;
    }
    pid.parse().ok()
}

/// Removes the namespaces (and with them their veth pairs) that a run killed without a chance
/// to clean up (SIGKILL) left behind: those whose owner process no longer exists. Returns their
/// names. Best effort: a namespace that cannot be removed stays.
pub fn remove_stale_namespaces() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/run/netns") else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = namespace_owner(&name) else {
            continue;
        };
        if std::path::Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if ip(&["netns", "del", &name]).is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// Two network namespaces joined by a veth pair; removed on drop.
#[derive(Debug)]
pub struct VethLab {
    ns: [String; 2],
    ifname: [String; 2],
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run 'ip' (iproute2): {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let msg = String::from_utf8_lossy(&out.stderr);
    Err(format!(
        "'ip {}' failed: {}",
        args.join(" "),
        msg.lines().next().unwrap_or("").trim()
    ))
}

impl VethLab {
    /// Create the namespaces and the pair. `host_ip`: give side a its address in the kernel
    /// (the kernel configuration); without it the kernel of side a ignores the frames and only
    /// the AF_PACKET socket sees them.
    pub fn create(host_ip: bool) -> OnloadResult<Self> {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let unavailable = |reason: String| OnloadError::Unavailable {
            source_name: "veth".into(),
            reason,
        };
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(unavailable(
                "creating network namespaces needs root (CAP_NET_ADMIN); not running as root"
                    .into(),
            ));
        }
        remove_stale_namespaces();
        let (pid, seq) = (
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed) % 100,
        );
        // Interface names have at most 15 bytes; namespace names carry the whole pid, so that
        // a later run can tell a dead owner's namespaces (`remove_stale_namespaces`).
        let id = format!("{}{seq}", pid % 100_000);
        let lab = VethLab {
            ns: [
                format!("{NS_PREFIX}{pid}-{seq}-a"),
                format!("{NS_PREFIX}{pid}-{seq}-b"),
            ],
            ifname: [format!("mla{id}"), format!("mlb{id}")],
        };
        let (na, nb) = (&lab.ns[0], &lab.ns[1]);
        let (ia, ib) = (&lab.ifname[0], &lab.ifname[1]);
        let (ma, mb) = (mac_str(HOST_MAC), mac_str(PEER_MAC));
        let setup = || -> Result<(), String> {
            ip(&["netns", "add", na])?;
            ip(&["netns", "add", nb])?;
            ip(&[
                "link", "add", ia, "address", &ma, "netns", na, "type", "veth", "peer", "name", ib,
                "address", &mb, "netns", nb,
            ])?;
            for (ns, ifn) in [(na, ia), (nb, ib)] {
                ip(&["-n", ns, "link", "set", "lo", "up"])?;
                ip(&["-n", ns, "link", "set", ifn, "mtu", "9000", "up"])?;
            }
            if host_ip {
                ip(&["-n", na, "addr", "add", "10.77.0.1/24", "dev", ia])?;
            }
            ip(&["-n", nb, "addr", "add", "10.77.0.2/24", "dev", ib])?;
            // Static neighbours: side a may have no address to answer ARP with.
            ip(&[
                "-n",
                nb,
                "neigh",
                "add",
                "10.77.0.1",
                "lladdr",
                &ma,
                "dev",
                ib,
            ])?;
            ip(&[
                "-n",
                na,
                "neigh",
                "add",
                "10.77.0.2",
                "lladdr",
                &mb,
                "dev",
                ia,
            ])?;
            Ok(())
        };
        // On failure `lab` is dropped, which removes whatever was created.
        setup().map_err(unavailable)?;
        for side in [Side::Host, Side::Peer] {
            let name = lab.ifname(side).to_string();
            lab.in_ns(side, move || tx_checksum_off(&name))??;
        }
        Ok(lab)
    }

    /// Interface name of one end.
    pub fn ifname(&self, side: Side) -> &str {
        &self.ifname[side as usize]
    }

    /// Namespace name of one end.
    pub fn netns(&self, side: Side) -> &str {
        &self.ns[side as usize]
    }

    /// Run `f` on a new thread that entered `side`'s network namespace (sockets it creates
    /// belong to that namespace and may be used from any thread afterwards).
    pub fn in_ns<T: Send + 'static>(
        &self,
        side: Side,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> OnloadResult<T> {
        let path = format!("/run/netns/{}", self.netns(side));
        std::thread::spawn(move || -> OnloadResult<T> {
            enter_netns(&path)?;
            Ok(f())
        })
        .join()
        .map_err(|_| OnloadError::Os("a namespace thread panicked".into()))?
    }

    /// Steer side `side`'s receive processing (RPS) to the cores in `mask` (0: off).
    pub fn set_rps(&self, side: Side, mask: u64) -> OnloadResult<()> {
        let file = format!("/sys/class/net/{}/queues/rx-0/rps_cpus", self.ifname(side));
        let out = Command::new("ip")
            .args(["netns", "exec", self.netns(side), "sh", "-c"])
            .arg(format!("echo {mask:x} > {file}"))
            .output()
            .map_err(|e| OnloadError::Os(format!("cannot run 'ip netns exec': {e}")))?;
        if !out.status.success() {
            return Err(OnloadError::Os(format!(
                "setting RPS on {}: {}",
                self.ifname(side),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(())
    }
}

impl Drop for VethLab {
    fn drop(&mut self) {
        // Deleting a namespace destroys the veth end inside it (and with it the pair).
        for ns in &self.ns {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

/// Make the calling thread enter the network namespace at `path`.
pub fn enter_netns(path: &str) -> OnloadResult<()> {
    let c = std::ffi::CString::new(path)
        .map_err(|_| OnloadError::InvalidArgument(format!("namespace path {path:?}")))?;
    // SAFETY: c is a valid NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(OnloadError::last_os(&format!("open {path}")));
    }
    // SAFETY: fd is a namespace file we just opened; setns affects only this thread.
    let rc = unsafe { libc::setns(fd, libc::CLONE_NEWNET) };
    // SAFETY: fd is ours to close.
    unsafe { libc::close(fd) };
    if rc != 0 {
        return Err(OnloadError::last_os(&format!("setns {path}")));
    }
    Ok(())
}

/// ETHTOOL_STXCSUM from linux/ethtool.h: set transmit checksum offload.
const ETHTOOL_STXCSUM: u32 = 0x17;

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

#[repr(C)]
struct IfreqData {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 16],
}

/// Turn transmit checksum offload off on `ifname` (in the calling thread's namespace), so the
/// kernel computes real checksums in software before the frame crosses the pair.
fn tx_checksum_off(ifname: &str) -> OnloadResult<()> {
    // SAFETY: plain socket(2) call.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(OnloadError::last_os("socket for ethtool"));
    }
    // SAFETY: raw is a new descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut v = EthtoolValue {
        cmd: ETHTOOL_STXCSUM,
        data: 0,
    };
    let mut req = IfreqData {
        name: [0; libc::IFNAMSIZ],
        data: &mut v as *mut EthtoolValue as *mut libc::c_void,
        _pad: [0; 16],
    };
    for (d, s) in req
        .name
        .iter_mut()
        .zip(ifname.bytes().take(libc::IFNAMSIZ - 1))
    {
        *d = s as libc::c_char;
    }
    // SAFETY: req is a valid ifreq whose data points at a live ethtool_value.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCETHTOOL as _, &mut req) };
    if rc != 0 {
        return Err(OnloadError::last_os(&format!(
            "turning off tx checksum offload on {ifname}"
        )));
    }
    Ok(())
}

// Constants and the ring frame header of linux/if_packet.h (TPACKET_V2).
const SOL_PACKET: i32 = 263;
const PACKET_RX_RING: i32 = 5;
const PACKET_STATISTICS: i32 = 6;
const PACKET_VERSION: i32 = 10;
const PACKET_QDISC_BYPASS: i32 = 20;
const TPACKET_V2: i32 = 1;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;

#[repr(C)]
struct Tpacket2Hdr {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_sec: u32,
    tp_nsec: u32,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
    tp_padding: [u8; 4],
}

#[repr(C)]
struct TpacketReq {
    tp_block_size: u32,
    tp_block_nr: u32,
    tp_frame_size: u32,
    tp_frame_nr: u32,
}

#[repr(C)]
#[derive(Default)]
struct TpacketStats {
    tp_packets: u32,
    tp_drops: u32,
}

/// Bytes of the receive ring.
pub const RING_BYTES: usize = 32 << 20;

/// The AF_PACKET source on side a of a [`VethLab`].
pub struct VethSource {
    fd: OwnedFd,
    ring: *mut u8,
    ring_len: usize,
    frame_size: usize,
    frame_nr: usize,
    next: usize,
    rt_offset: i64,
    stats: SourceStats,
    /// Frames the kernel dropped because the ring was full (PACKET_STATISTICS, cumulative).
    kernel_drops: AtomicU64,
}

// SAFETY: the ring mapping is owned by this value and used by one thread at a time (the
// engine's), like the socket.
unsafe impl Send for VethSource {}

impl VethSource {
    /// Open an AF_PACKET socket with a TPACKET_V2 receive ring on side a's interface, for
    /// frames of up to `max_frame` bytes.
    pub fn open(lab: &VethLab, max_frame: usize) -> OnloadResult<Self> {
        let ifname = lab.ifname(Side::Host).to_string();
        let fd = lab.in_ns(Side::Host, move || packet_socket(&ifname))??;
        let frame_size = (max_frame + 128).next_power_of_two().max(2048);
        let frame_nr = RING_BYTES / frame_size;
        let block = frame_size.max(1 << 16);
        let req = TpacketReq {
            tp_block_size: block as u32,
            tp_block_nr: (RING_BYTES / block) as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: frame_nr as u32,
        };
        // SAFETY: fd is an AF_PACKET socket; req is a valid tpacket_req of the size passed.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                SOL_PACKET,
                PACKET_RX_RING,
                &req as *const TpacketReq as *const libc::c_void,
                std::mem::size_of::<TpacketReq>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(OnloadError::last_os("setsockopt(PACKET_RX_RING)"));
        }
        // SAFETY: mapping the ring the kernel just allocated for this socket.
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                RING_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_LOCKED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ring == libc::MAP_FAILED {
            return Err(OnloadError::last_os("mmap of the packet ring"));
        }
        Ok(VethSource {
            fd,
            ring: ring as *mut u8,
            ring_len: RING_BYTES,
            frame_size,
            frame_nr,
            next: 0,
            rt_offset: realtime_offset_ns(),
            stats: SourceStats::default(),
            kernel_drops: AtomicU64::new(0),
        })
    }

    fn refresh_drops(&self) {
        let mut s = TpacketStats::default();
        let mut len = std::mem::size_of::<TpacketStats>() as libc::socklen_t;
        // SAFETY: `s`/`len` are valid out-pointers of matching size.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                SOL_PACKET,
                PACKET_STATISTICS,
                &mut s as *mut TpacketStats as *mut libc::c_void,
                &mut len,
            )
        };
        if rc == 0 {
            // The kernel resets the counters on every read.
            self.kernel_drops
                .fetch_add(s.tp_drops as u64, Ordering::Relaxed);
        }
    }
}

fn packet_socket(ifname: &str) -> OnloadResult<OwnedFd> {
    let proto = (libc::ETH_P_ALL as u16).to_be() as i32;
    // SAFETY: plain socket(2) call.
    let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, proto) };
    if raw < 0 {
        return Err(OnloadError::last_os("socket(AF_PACKET)"));
    }
    // SAFETY: raw is a new descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let set = |name: i32, v: i32, what: &str| -> OnloadResult<()> {
        // SAFETY: fd is open; v is a live c_int.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                SOL_PACKET,
                name,
                &v as *const i32 as *const libc::c_void,
                4,
            )
        };
        if rc != 0 {
            return Err(OnloadError::last_os(what));
        }
        Ok(())
    };
    set(PACKET_VERSION, TPACKET_V2, "setsockopt(PACKET_VERSION)")?;
    let _ = set(PACKET_QDISC_BYPASS, 1, "");
    let c = std::ffi::CString::new(ifname)
        .map_err(|_| OnloadError::InvalidArgument(format!("interface {ifname:?}")))?;
    // SAFETY: c is a valid NUL-terminated name.
    let ifindex = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if ifindex == 0 {
        return Err(OnloadError::last_os(&format!("if_nametoindex({ifname})")));
    }
    // SAFETY: sockaddr_ll is plain data.
    let mut sa: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sa.sll_family = libc::AF_PACKET as u16;
    sa.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
    sa.sll_ifindex = ifindex as i32;
    // SAFETY: sa is a valid sockaddr_ll of the size passed.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &sa as *const libc::sockaddr_ll as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(OnloadError::last_os(&format!("bind AF_PACKET to {ifname}")));
    }
    Ok(fd)
}

impl FrameSource for VethSource {
    fn name(&self) -> &'static str {
        "veth"
    }

    fn poll(
        &mut self,
        max: usize,
        deliver: &mut dyn FnMut(&[u8], u64),
    ) -> crate::onload::OnloadResult<usize> {
        let mut n = 0;
        while n < max {
            // SAFETY: next < frame_nr, so the header lies inside the mapped ring.
            let hdr = unsafe { self.ring.add(self.next * self.frame_size) } as *mut Tpacket2Hdr;
            // SAFETY: tp_status is the first u32 of the header; the kernel and this thread
            // hand the slot over through it, so it is read atomically.
            let status = unsafe { &*(hdr as *const AtomicU32) };
            if status.load(Ordering::Acquire) & TP_STATUS_USER == 0 {
                break;
            }
            // SAFETY: the slot belongs to user space until tp_status is reset below; the
            // frame lies inside the slot (tp_mac + tp_snaplen <= frame_size, kernel guarantee).
            let (frame, at) = unsafe {
                let h = &*hdr;
                let data = (hdr as *const u8).add(h.tp_mac as usize);
                let len = (h.tp_snaplen as usize).min(self.frame_size - h.tp_mac as usize);
                let rt = h.tp_sec as u64 * 1_000_000_000 + h.tp_nsec as u64;
                (
                    std::slice::from_raw_parts(data, len),
                    (rt as i64 - self.rt_offset).max(0) as u64,
                )
            };
            deliver(frame, at);
            fence(Ordering::Release);
            status.store(TP_STATUS_KERNEL, Ordering::Release);
            self.next = (self.next + 1) % self.frame_nr;
            n += 1;
        }
        self.stats.rx_frames += n as u64;
        Ok(n)
    }

    fn transmit(&mut self, frame: &[u8]) -> crate::onload::OnloadResult<()> {
        loop {
            // SAFETY: frame is a valid slice; the socket is bound to the interface.
            let r = unsafe {
                libc::send(
                    self.fd.as_raw_fd(),
                    frame.as_ptr() as *const libc::c_void,
                    frame.len(),
                    0,
                )
            };
            if r >= 0 {
                self.stats.tx_frames += 1;
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ENOBUFS) | Some(libc::EAGAIN) => {
                    self.stats.tx_dropped += 1;
                    return Err(OnloadError::Os(format!("send on AF_PACKET: {e}")));
                }
                _ => return Err(OnloadError::Os(format!("send on AF_PACKET: {e}"))),
            }
        }
    }

    fn stats(&self) -> SourceStats {
        self.refresh_drops();
        let mut s = self.stats;
        s.rx_dropped = self.kernel_drops.load(Ordering::Relaxed);
        s
    }
}

impl Drop for VethSource {
    fn drop(&mut self) {
        // SAFETY: unmapping the ring mapped in open(); nothing refers to it any more.
        unsafe { libc::munmap(self.ring as *mut libc::c_void, self.ring_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onload::kernel_udp;
    use crate::onload::pattern;
    use crate::onload::{OnloadConfig, OnloadEngine};
    use std::net::SocketAddrV4;
    use std::time::Duration;

    #[test]
    fn namespace_names_carry_their_owner() {
        assert_eq!(namespace_owner("movelab-onl-4194303-7-a"), Some(4_194_303));
        assert_eq!(namespace_owner("movelab-onl-12-0-b"), Some(12));
        for other in [
            "movelab-onl-12-0-c",
            "movelab-onl-12-a",
            "movelab-onl-x-0-a",
            "netns-12-0-a",
        ] {
            assert_eq!(namespace_owner(other), None, "{other}");
        }
    }

    /// A namespace whose owner died (a run killed with SIGKILL) is removed by the next run;
    /// one whose owner lives is kept.
    #[test]
    fn stale_namespaces_are_removed_when_permitted() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: not root");
            return;
        }
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let dead = child.id();
        child.wait().expect("wait");
        let stale = format!("{NS_PREFIX}{dead}-0-a");
        let live = format!("{NS_PREFIX}{}-99-a", std::process::id());
        if let Err(e) = ip(&["netns", "add", &stale]) {
            eprintln!("skipped: {e}");
            return;
        }
        ip(&["netns", "add", &live]).expect("a second namespace");
        let removed = remove_stale_namespaces();
        let exists = |n: &str| std::path::Path::new(&format!("/run/netns/{n}")).exists();
        let (stale_left, live_left) = (exists(&stale), exists(&live));
        let _ = ip(&["netns", "del", &live]);
        let _ = ip(&["netns", "del", &stale]);
        // The veth tests running beside this one call the same clean-up when they create their
        // namespaces, so the stale one may be gone before this call: what is checked is that it
        // is gone and the live one kept, and that this call removed nothing it should not have.
        assert!(!stale_left && live_left, "{removed:?}");
        assert!(removed.iter().all(|n| n != &live), "{removed:?}");
    }

    /// Real frames from the kernel's UDP stack in namespace b reach the engine through the
    /// veth pair and the packet ring; the engine's frames reach a kernel socket in b.
    #[test]
    fn veth_round_trip_when_permitted() {
        let lab = match VethLab::create(false) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("skipped: {e}");
                return;
            }
        };
        let src = VethSource::open(&lab, 9014).expect("packet ring");
        let eng = OnloadEngine::start(
            OnloadConfig {
                idle_spin_us: 50,
                ..Default::default()
            },
            Box::new(src),
        )
        .unwrap();
        let sock = eng.bind(9000).unwrap();
        for _ in 0..64 {
            sock.post(vec![0u8; 9000]).unwrap();
        }
        let peer = lab
            .in_ns(Side::Peer, || {
                kernel_udp::udp_socket(
                    SocketAddrV4::new(PEER_IP, 40_000),
                    Some(SocketAddrV4::new(HOST_IP, 9000)),
                    1 << 20,
                )
            })
            .unwrap()
            .unwrap();
        let payloads: Vec<Vec<u8>> = [18usize, 1472, 8972]
            .iter()
            .enumerate()
            .map(|(i, &n)| pattern::make(i as u64, n))
            .collect();
        let refs: Vec<&[u8]> = payloads.iter().map(|p| p.as_slice()).collect();
        assert_eq!(kernel_udp::send_batch(&peer, &refs).unwrap(), 3);
        for (i, p) in payloads.iter().enumerate() {
            let d = sock
                .recv(Some(Duration::from_secs(5)))
                .unwrap()
                .expect("datagram through the veth pair");
            assert_eq!(d.payload(), &p[..], "payload {i}");
            assert_eq!(d.from, SocketAddrV4::new(PEER_IP, 40_000));
        }
        // Transmit: the engine's frame reaches the peer's kernel socket intact.
        sock.send(&pattern::make(99, 1000), SocketAddrV4::new(PEER_IP, 40_000))
            .unwrap();
        let mut r = kernel_udp::Receiver::new(4, 2048);
        let n = r.recv(&peer, 5000).unwrap();
        assert_eq!(n, 1, "the peer's kernel accepted the engine's frame");
        assert!(pattern::matches(r.payload(0), 99));
        assert_eq!(eng.stats().bad_udp_checksum, 0);
    }
}
