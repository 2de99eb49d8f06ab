//! The system calls the IPC endpoints need, each wrapped so that the rest of the module is safe
//! code: Unix-domain SOCK_SEQPACKET sockets, descriptor passing (SCM_RIGHTS), peer credentials
//! (SO_PEERCRED), sealed memfd segments, shared mappings, eventfd wake-ups and cross-process memory
//! access (process_vm_readv / process_vm_writev).
use super::error::{IpcError, IpcResult};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

fn cvt(rc: libc::c_int, op: &'static str) -> IpcResult<libc::c_int> {
    if rc < 0 {
        Err(IpcError::last_os(op))
    } else {
        Ok(rc)
    }
}

/// A new Unix-domain SOCK_SEQPACKET socket (message boundaries kept, connection oriented).
pub fn seqpacket_socket() -> IpcResult<OwnedFd> {
    // SAFETY: plain system call with constant arguments; the returned fd is owned right away.
    let fd = cvt(
        unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) },
        "socket(AF_UNIX, SOCK_SEQPACKET)",
    )?;
    // SAFETY: fd was just returned by socket() and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn sockaddr(path: &Path) -> IpcResult<(libc::sockaddr_un, libc::socklen_t)> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    let bad = |reason: &str| IpcError::BadPath {
        path: path.display().to_string(),
        reason: reason.to_string(),
    };
    if bytes.is_empty() {
        return Err(bad("the path is empty"));
    }
    if bytes.contains(&0) {
        return Err(bad("the path contains a NUL byte"));
    }
    // SAFETY: sockaddr_un is plain data; all-zero is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.len() >= addr.sun_path.len() {
        return Err(bad(&format!(
            "the path is {} bytes long; Unix socket paths must be shorter than {} bytes",
            bytes.len(),
            addr.sun_path.len()
        )));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    Ok((addr, len as libc::socklen_t))
}

/// Bind `fd` to `path` and listen on it.
pub fn bind_listen(fd: &OwnedFd, path: &Path) -> IpcResult<()> {
    let (addr, len) = sockaddr(path)?;
    // SAFETY: addr is a valid sockaddr_un of length len.
    cvt(
        unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &addr as *const _ as *const libc::sockaddr,
                len,
            )
        },
        "bind",
    )
    .map_err(|e| IpcError::BadPath {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    // SAFETY: plain system call on an fd we own.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), 16) }, "listen")?;
    Ok(())
}

/// Connect `fd` to `path`; the raw `io::Error` is returned so callers can retry on ENOENT.
pub fn connect(fd: &OwnedFd, path: &Path) -> IpcResult<Result<(), io::Error>> {
    let (addr, len) = sockaddr(path)?;
    // SAFETY: addr is a valid sockaddr_un of length len.
    let rc = unsafe {
        libc::connect(
            fd.as_raw_fd(),
            &addr as *const _ as *const libc::sockaddr,
            len,
        )
    };
    Ok(if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    })
}

/// Accept one connection on a listening socket.
pub fn accept(fd: &OwnedFd) -> IpcResult<OwnedFd> {
    // SAFETY: null address pointers are allowed by accept4 (we read the peer from SO_PEERCRED).
    let c = cvt(
        unsafe {
            libc::accept4(
                fd.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC,
            )
        },
        "accept",
    )?;
    // SAFETY: c was just returned by accept4 and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(c) })
}

/// poll(2), retrying on EINTR. `timeout_ms < 0` blocks.
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> IpcResult<usize> {
    loop {
        // SAFETY: fds is a valid slice of pollfd for the duration of the call.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if rc >= 0 {
            return Ok(rc as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(IpcError::os("poll", e));
        }
    }
}

/// Wait until `fd` is readable, at most `timeout_ms` (negative: forever). Returns false on timeout.
pub fn wait_readable(fd: RawFd, timeout_ms: i32) -> IpcResult<bool> {
    let mut p = [libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }];
    Ok(poll(&mut p, timeout_ms)? > 0)
}

/// Wait until `fd` is readable or `deadline` passes (`None`: no deadline), in slices of
/// [`crate::cancel::SLICE`], asking `cancel` between slices. Ok(false) on timeout; `what` names
/// the wait in the interruption error.
pub fn wait_readable_until(
    fd: RawFd,
    deadline: Option<std::time::Instant>,
    cancel: &dyn crate::cancel::Cancel,
    what: &dyn Fn() -> String,
) -> IpcResult<bool> {
    loop {
        if cancel.cancelled() {
            return Err(IpcError::Interrupted(what()));
        }
        let slice = match deadline {
            None => crate::cancel::SLICE,
            Some(d) => {
                let left = d.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    return Ok(false);
                }
                left.min(crate::cancel::SLICE)
            }
        };
        let ms = slice.as_millis().max(1) as i32;
        if wait_readable(fd, ms)? {
            return Ok(true);
        }
    }
}

/// What is at a socket path: a listening server, a stale socket file nobody listens on, or
/// something else (the error says what).
pub enum Probe {
    Live(String),
    Stale,
}

/// Find out whether a server listens at `path` by connecting to it without blocking. The
/// connection is closed at once; a movelab listener ignores a peer that leaves before its
/// handshake.
pub fn probe(path: &Path) -> IpcResult<Probe> {
    let fd = seqpacket_socket()?;
    set_nonblocking(&fd)?;
    match connect(&fd, path)? {
        Ok(()) => Ok(Probe::Live("a server is listening there".into())),
        Err(e) => match e.raw_os_error() {
            Some(libc::ECONNREFUSED) | Some(libc::ENOENT) => Ok(Probe::Stale),
            Some(libc::EAGAIN) | Some(libc::EINPROGRESS) => Ok(Probe::Live(
                "a server is listening there (its backlog is full)".into(),
            )),
            Some(libc::EPROTOTYPE) => Ok(Probe::Live(
                "another program's socket of a different type is listening there".into(),
            )),
            _ => Err(IpcError::BadPath {
                path: path.display().to_string(),
                reason: format!("cannot tell whether a server listens there: {e}"),
            }),
        },
    }
}

/// (device, inode) of the file at `path` itself (not following a symlink).
pub fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// What kind of file is at `path` (following symlinks, as connect does), when it is not a socket.
pub fn not_a_socket(path: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = std::fs::metadata(path).ok()?.file_type();
    if t.is_socket() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_file() {
        Some("a regular file")
    } else {
        Some("a device or other special file")
    }
}

/// Credentials of the process at the other end of a connected Unix socket (SO_PEERCRED).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCred {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
}

pub fn peer_cred(fd: &OwnedFd) -> IpcResult<PeerCred> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: cred and len are valid for writes of the sizes given.
    cvt(
        unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                &mut cred as *mut _ as *mut libc::c_void,
                &mut len,
            )
        },
        "getsockopt(SO_PEERCRED)",
    )?;
    Ok(PeerCred {
        pid: cred.pid,
        uid: cred.uid,
        gid: cred.gid,
    })
}

pub fn getpid() -> i32 {
    crate::sys::pid()
}

pub fn geteuid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

const CMSG_SPACE_FD: usize = 64;

/// Send one message, optionally passing a file descriptor along (SCM_RIGHTS).
/// Returns `Ok(None)` when a non-blocking socket would block.
pub fn send_msg(fd: &OwnedFd, data: &[u8], pass: Option<RawFd>) -> IpcResult<Option<usize>> {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let mut cbuf = [0u64; CMSG_SPACE_FD / 8];
    // SAFETY: msghdr is plain data; all-zero is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if let Some(pfd) = pass {
        // SAFETY: CMSG_SPACE is a pure computation.
        let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = space as _;
        // SAFETY: msg_control points at cbuf, large enough (64 bytes) for one cmsghdr carrying one fd.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut RawFd, pfd);
        }
    }
    loop {
        // SAFETY: msg points at iov/cbuf which outlive the call; data is valid for reads of its length.
        let rc = unsafe { libc::sendmsg(fd.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if rc >= 0 {
            return Ok(Some(rc as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(None),
            _ if matches!(e.raw_os_error(), Some(libc::EPIPE) | Some(libc::ECONNRESET)) => {
                return Err(IpcError::PeerClosed)
            }
            _ => return Err(IpcError::os("sendmsg", e)),
        }
    }
}

/// What one `recv_msg` produced.
pub enum Recv {
    /// A message of this many bytes (and a descriptor, if one was passed).
    Msg(usize, Option<OwnedFd>),
    /// The peer shut down its end.
    Eof,
    /// A non-blocking socket has nothing to read.
    WouldBlock,
}

/// Receive one message into `buf`. A message longer than `buf` is a protocol error.
pub fn recv_msg(fd: &OwnedFd, buf: &mut [u8]) -> IpcResult<Recv> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; CMSG_SPACE_FD / 8];
    // SAFETY: msghdr is plain data; all-zero is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = CMSG_SPACE_FD as _;
    let n = loop {
        // SAFETY: msg points at iov (over buf) and cbuf, both valid for writes of the given lengths.
        let rc = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if rc >= 0 {
            break rc as usize;
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(Recv::WouldBlock),
            io::ErrorKind::ConnectionReset => return Ok(Recv::Eof),
            _ => return Err(IpcError::os("recvmsg", e)),
        }
    };
    let mut passed = None;
    // SAFETY: the kernel filled msg_control with well-formed cmsghdrs up to msg_controllen; the
    // CMSG_* macros walk them without leaving cbuf.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c) as *const RawFd;
                let payload = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for i in 0..payload / std::mem::size_of::<RawFd>() {
                    let raw = std::ptr::read_unaligned(data.add(i));
                    let owned = OwnedFd::from_raw_fd(raw);
                    if passed.is_none() {
                        passed = Some(owned);
                    } // extra descriptors are closed when `owned` drops
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if msg.msg_flags & libc::MSG_TRUNC != 0 {
        return Err(IpcError::Protocol(format!(
            "a message longer than the {}-byte receive buffer arrived",
            buf.len()
        )));
    }
    if n == 0 {
        return Ok(Recv::Eof);
    }
    Ok(Recv::Msg(n, passed))
}

pub fn set_nonblocking(fd: &OwnedFd) -> IpcResult<()> {
    // SAFETY: fcntl on an fd we own.
    let fl = cvt(
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) },
        "fcntl(F_GETFL)",
    )?;
    // SAFETY: as above.
    cvt(
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK) },
        "fcntl(F_SETFL)",
    )?;
    Ok(())
}

/// Best effort: a larger send buffer lets a socket-path chunk and control messages queue up.
pub fn set_sndbuf(fd: &OwnedFd, bytes: i32) {
    // SAFETY: bytes is a valid c_int for the duration of the call.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            &bytes as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        );
    }
}

pub fn shutdown_write(fd: &OwnedFd) {
    // SAFETY: plain system call on an fd we own; failure (already shut down) is harmless.
    unsafe {
        libc::shutdown(fd.as_raw_fd(), libc::SHUT_WR);
    }
}

const SEALS: libc::c_int = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;

/// A memfd of `size` bytes, sealed against shrinking and growing so that the peer that maps it
/// can never be hit by SIGBUS from a truncation.
pub fn sealed_memfd(size: usize) -> IpcResult<OwnedFd> {
    let name = c"movelab-ipc-ring";
    // SAFETY: name is a valid NUL-terminated string.
    let fd = cvt(
        unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) },
        "memfd_create",
    )?;
    // SAFETY: fd was just returned by memfd_create and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ftruncate/fcntl on an fd we own.
    cvt(
        unsafe { libc::ftruncate(fd.as_raw_fd(), size as libc::off_t) },
        "ftruncate(memfd)",
    )?;
    // SAFETY: as above.
    cvt(
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, SEALS) },
        "fcntl(F_ADD_SEALS)",
    )?;
    Ok(fd)
}

/// Check that a segment received from the peer is a sealed memfd of exactly `size` bytes.
pub fn check_segment(fd: &OwnedFd, size: usize) -> Result<(), String> {
    // SAFETY: fcntl on an fd we own.
    let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
    if seals < 0
        || seals & (libc::F_SEAL_SHRINK | libc::F_SEAL_GROW)
            != libc::F_SEAL_SHRINK | libc::F_SEAL_GROW
    {
        return Err(
            "the peer's shared-memory segment is not a memfd sealed against resizing".into(),
        );
    }
    // SAFETY: stat is plain data, written by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: st is valid for writes.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
        return Err(format!(
            "fstat of the peer's segment: {}",
            io::Error::last_os_error()
        ));
    }
    if st.st_size as usize != size {
        return Err(format!(
            "the peer's shared-memory segment has {} bytes, {} announced",
            st.st_size, size
        ));
    }
    Ok(())
}

/// A shared mapping of a whole segment, unmapped on drop.
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain shared memory; synchronisation of its contents is done by the
// IPC protocol (a slot is touched by one side at a time, handed over by socket messages).
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    pub fn new(fd: &OwnedFd, len: usize, writable: bool) -> IpcResult<Self> {
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a fresh shared mapping of a segment of at least len bytes (checked by the caller).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(IpcError::last_os("mmap(shared segment)"));
        }
        Ok(Mapping {
            ptr: p as *mut u8,
            len,
        })
    }

    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn size(&self) -> usize {
        self.len
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned; nothing uses the mapping after drop.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len);
        }
    }
}

/// An eventfd used to wake the progress thread when the caller posts work.
pub fn eventfd() -> IpcResult<OwnedFd> {
    // SAFETY: plain system call; the fd is owned right away.
    let fd = cvt(
        unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) },
        "eventfd",
    )?;
    // SAFETY: fd was just returned by eventfd.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub fn eventfd_signal(fd: &OwnedFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a valid u64; EAGAIN (counter saturated) is harmless.
    unsafe {
        libc::write(fd.as_raw_fd(), &one as *const u64 as *const libc::c_void, 8);
    }
}

pub fn eventfd_drain(fd: &OwnedFd) {
    let mut v: u64 = 0;
    // SAFETY: reads 8 bytes into a valid u64; EAGAIN (nothing pending) is harmless.
    unsafe {
        libc::read(fd.as_raw_fd(), &mut v as *mut u64 as *mut libc::c_void, 8);
    }
}

/// Why a cross-process memory access failed.
#[derive(Debug)]
pub enum VmError {
    /// The kernel refused access to the peer (EPERM/EACCES under Yama ptrace_scope, ENOSYS under
    /// seccomp, ...): fall back to the shared-memory path.
    Refused(io::Error),
    /// The peer process no longer exists.
    Gone,
    /// An address was not mapped (EFAULT): a buffer was invalid.
    Fault(io::Error),
}

fn classify(e: io::Error) -> VmError {
    match e.raw_os_error() {
        Some(libc::ESRCH) => VmError::Gone,
        Some(libc::EFAULT) => VmError::Fault(e),
        _ => VmError::Refused(e),
    }
}

/// Copy `len` bytes from `remote` in process `pid` to `local` (process_vm_readv), looping over
/// partial transfers.
///
/// # Safety
/// `local` must be valid for writes of `len` bytes and not be accessed concurrently.
pub unsafe fn vm_read(pid: i32, local: *mut u8, remote: u64, len: usize) -> Result<(), VmError> {
    let mut done = 0usize;
    while done < len {
        let l = libc::iovec {
            iov_base: local.add(done) as *mut libc::c_void,
            iov_len: len - done,
        };
        let r = libc::iovec {
            iov_base: (remote as usize + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        let n = libc::process_vm_readv(pid, &l, 1, &r, 1, 0);
        if n < 0 {
            return Err(classify(io::Error::last_os_error()));
        }
        if n == 0 {
            return Err(VmError::Fault(io::Error::from_raw_os_error(libc::EFAULT)));
        }
        done += n as usize;
    }
    Ok(())
}

/// Copy `len` bytes from `local` to `remote` in process `pid` (process_vm_writev).
///
/// # Safety
/// `local` must be valid for reads of `len` bytes.
pub unsafe fn vm_write(pid: i32, local: *const u8, remote: u64, len: usize) -> Result<(), VmError> {
    let mut done = 0usize;
    while done < len {
        let l = libc::iovec {
            iov_base: local.add(done) as *mut libc::c_void,
            iov_len: len - done,
        };
        let r = libc::iovec {
            iov_base: (remote as usize + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        let n = libc::process_vm_writev(pid, &l, 1, &r, 1, 0);
        if n < 0 {
            return Err(classify(io::Error::last_os_error()));
        }
        if n == 0 {
            return Err(VmError::Fault(io::Error::from_raw_os_error(libc::EFAULT)));
        }
        done += n as usize;
    }
    Ok(())
}
