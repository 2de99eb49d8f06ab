//! The kernel configuration's tools: UDP sockets of the kernel's own stack, received with
//! `recvmmsg` (with the kernel's receive timestamp, `SO_TIMESTAMPNS`) and sent with `sendmmsg`,
//! in batches. Also used by the veth source's peer and by the replay's wire thread.
use crate::onload::error::{OnloadError, OnloadResult};
use std::net::SocketAddrV4;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Largest batch of one `recvmmsg` / `sendmmsg` call.
pub const MAX_BATCH: usize = 64;

fn sockaddr(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*a.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

fn setsockopt_int(fd: &OwnedFd, level: i32, name: i32, v: i32, what: &str) -> OnloadResult<()> {
    // SAFETY: fd is open; `v` is a live c_int of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            &v as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(OnloadError::last_os(what));
    }
    Ok(())
}

/// A kernel UDP socket bound to `local` (and connected to `peer` when given), with a receive
/// buffer of `rcvbuf` bytes (0: the default) and receive timestamps on.
pub fn udp_socket(
    local: SocketAddrV4,
    peer: Option<SocketAddrV4>,
    rcvbuf: usize,
) -> OnloadResult<OwnedFd> {
    // SAFETY: plain socket(2) call.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(OnloadError::last_os("socket(AF_INET, SOCK_DGRAM)"));
    }
    // SAFETY: raw is a new descriptor owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    if rcvbuf > 0 {
        let v = rcvbuf.min(i32::MAX as usize) as i32;
        // SO_RCVBUFFORCE (root) lifts the rmem_max cap; fall back to SO_RCVBUF.
        if setsockopt_int(&fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, v, "").is_err() {
            setsockopt_int(
                &fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                v,
                "setsockopt(SO_RCVBUF)",
            )?;
        }
        let _ = setsockopt_int(&fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, v, "");
    }
    setsockopt_int(
        &fd,
        libc::SOL_SOCKET,
        libc::SO_TIMESTAMPNS,
        1,
        "setsockopt(SO_TIMESTAMPNS)",
    )?;
    let sa = sockaddr(local);
    // SAFETY: `sa` is a valid sockaddr_in of the size passed.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &sa as *const libc::sockaddr_in as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(OnloadError::last_os(&format!("bind UDP {local}")));
    }
    if let Some(p) = peer {
        let sa = sockaddr(p);
        // SAFETY: as above.
        let rc = unsafe {
            libc::connect(
                fd.as_raw_fd(),
                &sa as *const libc::sockaddr_in as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(OnloadError::last_os(&format!("connect UDP {p}")));
        }
    }
    Ok(fd)
}

/// The port a socket is bound to.
pub fn local_port(fd: &OwnedFd) -> OnloadResult<u16> {
    let mut sa: libc::sockaddr_in = sockaddr(SocketAddrV4::new(0.into(), 0));
    let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: `sa` and `len` are valid out-pointers of matching size.
    let rc = unsafe {
        libc::getsockname(
            fd.as_raw_fd(),
            &mut sa as *mut libc::sockaddr_in as *mut libc::sockaddr,
            &mut len,
        )
    };
    if rc != 0 {
        return Err(OnloadError::last_os("getsockname"));
    }
    Ok(u16::from_be(sa.sin_port))
}

/// Receive state for batches of datagrams into fixed buffers.
pub struct Receiver {
    bufs: Vec<Vec<u8>>,
    iovs: Vec<libc::iovec>,
    ctrl: Vec<[u64; 8]>,
    msgs: Vec<libc::mmsghdr>,
    /// Per message of the last batch: bytes and the kernel's receive time (CLOCK_REALTIME ns).
    pub lens: Vec<usize>,
    pub stamps: Vec<u64>,
    /// Times the receiver found nothing queued and slept until the kernel woke it.
    pub sleeps: u64,
}

// SAFETY: the raw pointers inside the mmsghdr/iovec arrays point into this struct's own
// vectors, which move with it; nothing is shared with other threads.
unsafe impl Send for Receiver {}

impl Receiver {
    /// Room for `batch` datagrams of up to `size` bytes each.
    pub fn new(batch: usize, size: usize) -> Self {
        let batch = batch.clamp(1, MAX_BATCH);
        let mut r = Receiver {
            bufs: vec![vec![0u8; size.max(1)]; batch],
            iovs: Vec::with_capacity(batch),
            ctrl: vec![[0u64; 8]; batch],
            // SAFETY: mmsghdr is plain data; zero is a valid (empty) value.
            msgs: (0..batch).map(|_| unsafe { std::mem::zeroed() }).collect(),
            lens: vec![0; batch],
            stamps: vec![0; batch],
            sleeps: 0,
        };
        for b in &mut r.bufs {
            r.iovs.push(libc::iovec {
                iov_base: b.as_mut_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            });
        }
        r
    }

    /// The payload of message `i` of the last batch.
    pub fn payload(&self, i: usize) -> &[u8] {
        &self.bufs[i][..self.lens[i]]
    }

    /// One `recvmmsg`: waits up to `timeout_ms` for the first datagram (MSG_WAITFORONE), then
    /// takes what is queued. Returns the count (0 on timeout).
    pub fn recv(&mut self, fd: &OwnedFd, timeout_ms: i32) -> OnloadResult<usize> {
        let mut p = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // Take what is queued without waiting; poll once when nothing is.
        let mut waited = false;
        loop {
            for (i, m) in self.msgs.iter_mut().enumerate() {
                m.msg_hdr.msg_iov = &mut self.iovs[i];
                m.msg_hdr.msg_iovlen = 1;
                m.msg_hdr.msg_name = std::ptr::null_mut();
                m.msg_hdr.msg_namelen = 0;
                m.msg_hdr.msg_control = self.ctrl[i].as_mut_ptr() as *mut libc::c_void;
                m.msg_hdr.msg_controllen = std::mem::size_of::<[u64; 8]>() as _;
                m.msg_hdr.msg_flags = 0;
                m.msg_len = 0;
            }
            // SAFETY: every mmsghdr points at live iovecs, buffers and control space owned by
            // self, of the lengths given.
            let n = unsafe {
                libc::recvmmsg(
                    fd.as_raw_fd(),
                    self.msgs.as_mut_ptr(),
                    self.msgs.len() as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            if n >= 0 {
                let n = n as usize;
                for i in 0..n {
                    self.lens[i] = self.msgs[i].msg_len as usize;
                    self.stamps[i] = self.stamp(i);
                }
                return Ok(n);
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) if !waited && timeout_ms != 0 => {
                    waited = true;
                    self.sleeps += 1;
                    // SAFETY: `p` is a valid pollfd.
                    unsafe { libc::poll(&mut p, 1, timeout_ms) };
                }
                Some(libc::EAGAIN) | Some(libc::EINTR) => return Ok(0),
                _ => return Err(OnloadError::Os(format!("recvmmsg: {e}"))),
            }
        }
    }

    fn stamp(&self, i: usize) -> u64 {
        let h = &self.msgs[i].msg_hdr;
        // SAFETY: the kernel filled msg_control with msg_controllen bytes of cmsgs; the CMSG
        // macros walk within that range.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(h);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                    return ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
                }
                c = libc::CMSG_NXTHDR(h, c);
            }
        }
        0
    }
}

/// Send `payloads` on a connected socket with one `sendmmsg` (batches of at most MAX_BATCH).
/// Returns how many the kernel took (fewer when its buffers are full).
pub fn send_batch(fd: &OwnedFd, payloads: &[&[u8]]) -> OnloadResult<usize> {
    let n = payloads.len().min(MAX_BATCH);
    let mut iovs: Vec<libc::iovec> = payloads[..n]
        .iter()
        .map(|p| libc::iovec {
            iov_base: p.as_ptr() as *mut libc::c_void,
            iov_len: p.len(),
        })
        .collect();
    let mut msgs: Vec<libc::mmsghdr> = (0..n)
        .map(|i| {
            // SAFETY: mmsghdr is plain data; zero is a valid empty value.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = &mut iovs[i];
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect();
    // SAFETY: each mmsghdr points at one iovec over a live payload slice.
    let r = unsafe {
        libc::sendmmsg(
            fd.as_raw_fd(),
            msgs.as_mut_ptr(),
            n as libc::c_uint,
            libc::MSG_DONTWAIT,
        )
    };
    if r < 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::EINTR) => Ok(0),
            // A port-unreachable reply to an earlier datagram: the next send goes on.
            Some(libc::ECONNREFUSED) => Ok(0),
            _ => Err(OnloadError::Os(format!("sendmmsg: {e}"))),
        };
    }
    Ok(r as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn loopback_batches_arrive_intact_with_timestamps() {
        let lo = Ipv4Addr::LOCALHOST;
        let rx = udp_socket(SocketAddrV4::new(lo, 0), None, 1 << 20).unwrap();
        let port = local_port(&rx).unwrap();
        let tx = udp_socket(
            SocketAddrV4::new(lo, 0),
            Some(SocketAddrV4::new(lo, port)),
            0,
        )
        .unwrap();
        let payloads: Vec<Vec<u8>> = (0..10)
            .map(|i| crate::onload::pattern::make(i, 100 + i as usize))
            .collect();
        let refs: Vec<&[u8]> = payloads.iter().map(|p| p.as_slice()).collect();
        assert_eq!(send_batch(&tx, &refs).unwrap(), 10);
        let mut r = Receiver::new(16, 2048);
        let mut got = 0;
        while got < 10 {
            let n = r.recv(&rx, 1000).unwrap();
            assert!(n > 0, "timed out");
            for i in 0..n {
                assert!(crate::onload::pattern::matches(r.payload(i), got as u64));
                assert!(r.stamps[i] > 0);
                got += 1;
            }
        }
        assert_eq!(r.recv(&rx, 1).unwrap(), 0);
    }
}
