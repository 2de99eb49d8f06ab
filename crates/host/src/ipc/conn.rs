//! Connections: the handshake (credentials, shared-memory rings), the caller-facing API
//! (`iwrite`/`iread`/`write`/`read`/`check`/`wait`) and the per-connection progress thread that
//! runs the rendezvous protocol and moves the data.
//!
//! # The rendezvous (section 3.3 of the paper)
//! Transfers pair up in order: the k-th write on one side meets the k-th read on the other. Each
//! side announces a posted buffer (WPOST/RPOST with its address and length) unless it has already
//! seen the peer's matching post, in which case it performs the transfer itself:
//! * writer first (case 1): the reader, posting second, pulls the data with process_vm_readv and
//!   sends RDONE;
//! * reader first (case 2): the writer, posting second, pushes with process_vm_writev and sends
//!   WDONE;
//! * both at once (case 3, the posts cross): the reader pulls; the writer ignores the crossing RPOST.
//!
//! Nothing spins. Whoever holds the protocol runs it: a caller blocked in `wait` runs it itself,
//! sleeping in poll(2) on the socket (the peer's message wakes the waiting thread directly);
//! otherwise the per-connection progress thread runs it, sleeping in poll(2) on the socket and an
//! eventfd, so that transfers progress while the callers compute. Other waiters sleep on a
//! condition variable (a futex). Small posts are handled by the posting thread at once when the
//! protocol is free; large ones are left to the progress thread, so `iwrite`/`iread` do not copy.
//!
//! # The fallback
//! When the kernel refuses cross-process access (EPERM under Yama ptrace_scope, ENOSYS under
//! seccomp, or forced by [`Options::deny_single_copy`]), the refusing side records why and the
//! writer streams the data through a sealed memfd ring of chunks (two copies); the plain-socket
//! path streams the chunks inline in socket messages. Every [`Transfer`] reports the path used.
//!
//! # Who may touch whose memory
//! process_vm_* is only ever called with the pid from SO_PEERCRED of this connection's socket,
//! and the handshake refuses a peer whose claimed pid differs from those credentials or whose uid
//! differs from ours. Addresses come only from the peer's own posts, so a peer can only make us
//! touch its own memory and the buffers we posted ourselves.
use super::error::{IpcError, IpcResult};
use super::proto::{self, Kind, Msg};
use super::sys::{self, Mapping, PeerCred, Recv, VmError};
use crate::cancel::{Cancel, Never, SLICE};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a transfer moved its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TransferPath {
    /// One copy, straight from the writer's buffer into the reader's (process_vm_readv/writev).
    SingleCopy,
    /// Two copies through a shared-memory ring of chunks.
    TwoCopy,
    /// Two copies through the kernel: chunks inline in socket messages.
    Socket,
}

impl TransferPath {
    pub fn as_str(self) -> &'static str {
        match self {
            TransferPath::SingleCopy => "single-copy",
            TransferPath::TwoCopy => "two-copy",
            TransferPath::Socket => "socket",
        }
    }

    /// Parse "single-copy" / "auto", "two-copy", "socket".
    pub fn parse(s: &str) -> IpcResult<Self> {
        match s {
            "single-copy" | "auto" => Ok(TransferPath::SingleCopy),
            "two-copy" => Ok(TransferPath::TwoCopy),
            "socket" => Ok(TransferPath::Socket),
            other => Err(IpcError::InvalidOption(format!(
                "unknown path '{other}' (expected 'auto', 'single-copy', 'two-copy' or 'socket')"
            ))),
        }
    }

    fn code(self) -> u64 {
        match self {
            TransferPath::SingleCopy => 0,
            TransferPath::TwoCopy => 1,
            TransferPath::Socket => 2,
        }
    }

    fn from_code(c: u64) -> Option<Self> {
        match c {
            0 => Some(TransferPath::SingleCopy),
            1 => Some(TransferPath::TwoCopy),
            2 => Some(TransferPath::Socket),
            _ => None,
        }
    }
}

/// Connection options. The preferred path of a connection is the more conservative of the two
/// sides' preferences (single-copy < two-copy < socket).
#[derive(Debug, Clone)]
pub struct Options {
    /// Preferred path: `SingleCopy` (the default: single copy where the kernel allows it),
    /// `TwoCopy` or `Socket`.
    pub path: TransferPath,
    /// Behave as if the kernel refused cross-process access (EPERM) in this process: exercises
    /// the refusal handling and the fallback.
    pub deny_single_copy: bool,
    /// Chunks in this side's outgoing shared-memory ring (also the socket path's chunk credits).
    pub ring_slots: usize,
    /// Bytes per ring chunk (a multiple of 4096).
    pub slot_size: usize,
    /// Limit for connecting, accepting and the handshake.
    pub timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            path: TransferPath::SingleCopy,
            deny_single_copy: false,
            ring_slots: 8,
            slot_size: 256 * 1024,
            timeout: Duration::from_secs(10),
        }
    }
}

impl Options {
    fn validate(&self) -> IpcResult<()> {
        if !(1..=1024).contains(&self.ring_slots) {
            return Err(IpcError::InvalidOption(format!(
                "ring_slots = {} (expected 1..=1024)",
                self.ring_slots
            )));
        }
        if self.slot_size == 0 || !self.slot_size.is_multiple_of(4096) || self.slot_size > 64 << 20
        {
            return Err(IpcError::InvalidOption(format!(
                "slot_size = {} (expected a multiple of 4096, at most 64 MiB)",
                self.slot_size
            )));
        }
        Ok(())
    }
}

/// Direction of an operation, seen from this side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Write,
    Read,
}

/// A completed transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    pub cookie: u64,
    pub direction: Direction,
    /// Bytes moved (the writer's length; a read buffer may be larger).
    pub bytes: usize,
    pub path: TransferPath,
    /// Why the single-copy path was not used, when it was wanted but refused.
    pub note: Option<String>,
}

enum Status {
    Pending,
    Done(Transfer),
    Failed(IpcError),
}

/// A post handed from the caller to the progress thread.
#[derive(Debug, Clone, Copy)]
struct Post {
    cookie: u64,
    dir: Direction,
    k: u64,
    addr: usize,
    len: usize,
}

struct State {
    next_cookie: u64,
    next_write: u64,
    next_read: u64,
    ops: HashMap<u64, Status>,
    submit: Vec<Post>,
    closing: bool,
    /// Set when the progress thread has stopped: why new operations are refused.
    dead: Option<String>,
}

struct Shared {
    state: Mutex<State>,
    cond: Condvar,
    wake: OwnedFd,
    /// Callers blocked in `wait` that run the protocol themselves; the progress thread stands
    /// aside while there are any.
    waiters: AtomicUsize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a thread panicked while holding it; the state stays usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn finish(&self, cookie: u64, status: Status) {
        let mut st = self.lock();
        if let Some(s) = st.ops.get_mut(&cookie) {
            *s = status;
        }
        drop(st);
        self.cond.notify_all();
    }

    /// Wake everyone sleeping on the condition variable, without a lost wake-up.
    fn notify(&self) {
        let _g = self.lock();
        self.cond.notify_all();
    }
}

/// Posts up to this size are processed by the posting thread at once when the protocol is free
/// (saving a thread hop); larger ones are left to the progress thread so that `iwrite`/`iread`
/// return without copying.
const INLINE_POST_MAX: usize = 64 * 1024;

/// One end of an IPC connection. Cheap to share across threads (`&Connection` is `Sync`).
pub struct Connection {
    shared: Arc<Shared>,
    engine: Arc<Mutex<Progress>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    peer: PeerCred,
    path: TransferPath,
    /// The process that made the connection: a forked child must not use it (its locks may have
    /// been copied while held, its progress thread does not exist there).
    owner: crate::sys::Owner,
}

/// A listening endpoint bound to a socket path.
///
/// Endpoint rules: binding over a live server fails ([`IpcError::AddrInUse`]); only a stale
/// socket file (nobody listening) is replaced; any other file is an error. The listener removes
/// the socket file when it drops only if the file is still the one it bound (same device and
/// inode) and only in the process that bound it (not in a forked child).
pub struct Listener {
    fd: OwnedFd,
    path: PathBuf,
    opts: Options,
    /// (device, inode) of the socket file this listener created.
    ident: Option<(u64, u64)>,
    owner: crate::sys::Owner,
}

impl Listener {
    /// Bind and listen on `path` (see the endpoint rules above).
    pub fn bind(path: impl AsRef<Path>, opts: Options) -> IpcResult<Self> {
        opts.validate()?;
        let path = path.as_ref().to_path_buf();
        let shown = || path.display().to_string();
        if let Ok(md) = std::fs::symlink_metadata(&path) {
            use std::os::unix::fs::FileTypeExt;
            if !md.file_type().is_socket() {
                return Err(IpcError::BadPath {
                    path: shown(),
                    reason: "a file that is not a socket already exists there".into(),
                });
            }
            match sys::probe(&path)? {
                sys::Probe::Live(reason) => {
                    return Err(IpcError::AddrInUse {
                        path: shown(),
                        reason: format!("{reason}; close it first or choose another path"),
                    })
                }
                // Nobody listens: a leftover of a server that died. Replace it.
                sys::Probe::Stale => {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        let fd = sys::seqpacket_socket()?;
        if let Err(e) = sys::bind_listen(&fd, &path) {
            // Another server bound the path between our check and our bind.
            if path.exists() && matches!(sys::probe(&path), Ok(sys::Probe::Live(_))) {
                return Err(IpcError::AddrInUse {
                    path: shown(),
                    reason: "another server bound it first".into(),
                });
            }
            return Err(e);
        }
        Ok(Listener {
            ident: sys::file_identity(&path),
            fd,
            path,
            opts,
            owner: crate::sys::Owner::here(),
        })
    }

    /// Accept one peer and run the handshake, waiting at most `timeout` (None: the options').
    pub fn accept(&self, timeout: Option<Duration>) -> IpcResult<Connection> {
        self.accept_with(timeout, &Never)
    }

    /// As [`Listener::accept`], giving up with [`IpcError::Interrupted`] when `cancel` says so
    /// (asked at least every [`SLICE`]). A peer that leaves before finishing its handshake (such
    /// as another `bind` probing whether this server is alive) is skipped, not reported.
    pub fn accept_with(
        &self,
        timeout: Option<Duration>,
        cancel: &dyn Cancel,
    ) -> IpcResult<Connection> {
        let t = timeout.unwrap_or(self.opts.timeout);
        let deadline = Instant::now().checked_add(t);
        let what = || format!("waiting for a peer to connect to {}", self.path.display());
        loop {
            if !sys::wait_readable_until(self.fd.as_raw_fd(), deadline, cancel, &what)? {
                return Err(IpcError::Timeout {
                    what: what(),
                    ms: t.as_millis() as u64,
                });
            }
            let c = sys::accept(&self.fd)?;
            let left = deadline.map_or(NO_LIMIT, |d| d.saturating_duration_since(Instant::now()));
            match handshake(c, &self.opts, left, cancel) {
                Err(IpcError::PeerClosed) => continue,
                r => return r,
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // Only the process that bound the socket removes it, and only if the file there is still
        // ours: never a socket another server has bound since.
        if self.owner.forked().is_none() && sys::file_identity(&self.path) == self.ident {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// "No limit" (about a century).
const NO_LIMIT: Duration = Duration::from_secs(3_000_000_000);

fn ms(d: Duration) -> i32 {
    d.as_millis().min(i32::MAX as u128) as i32
}

/// Connect to a listener at `path`, retrying while it does not exist yet, within `opts.timeout`.
pub fn connect(path: impl AsRef<Path>, opts: Options) -> IpcResult<Connection> {
    connect_with(path, opts, &Never)
}

/// As [`connect`], giving up with [`IpcError::Interrupted`] when `cancel` says so (asked at
/// least every [`SLICE`]). A path that exists but is not a socket fails at once.
pub fn connect_with(
    path: impl AsRef<Path>,
    opts: Options,
    cancel: &dyn Cancel,
) -> IpcResult<Connection> {
    opts.validate()?;
    let path = path.as_ref();
    // A timeout too large to add to the clock means "no limit".
    let deadline = Instant::now().checked_add(opts.timeout);
    let bad = |reason: String| IpcError::BadPath {
        path: path.display().to_string(),
        reason,
    };
    loop {
        let fd = sys::seqpacket_socket()?;
        match sys::connect(&fd, path)? {
            Ok(()) => {
                let left =
                    deadline.map_or(NO_LIMIT, |d| d.saturating_duration_since(Instant::now()));
                return handshake(fd, &opts, left, cancel).map_err(|e| match e {
                    IpcError::PeerClosed => IpcError::Protocol(
                        "the server closed the connection during the handshake".into(),
                    ),
                    e => e,
                });
            }
            Err(e) => {
                let retry = matches!(
                    e.raw_os_error(),
                    Some(libc::ENOENT) | Some(libc::ECONNREFUSED)
                );
                if !retry {
                    return Err(bad(e.to_string()));
                }
                // connect(2) says ECONNREFUSED for a file that is not a socket: no server can
                // ever appear there, so waiting would only hide the mistake.
                if let Some(kind) = sys::not_a_socket(path) {
                    return Err(bad(format!("it is {kind}, not a socket")));
                }
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Err(IpcError::Timeout {
                        what: format!("connecting to {} ({e})", path.display()),
                        ms: opts.timeout.as_millis() as u64,
                    });
                }
                if cancel.cancelled() {
                    return Err(IpcError::Interrupted(format!(
                        "connecting to {}",
                        path.display()
                    )));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

/// Exchange HELLOs (pid, path preference, ring geometry, ring fd) and authenticate the peer.
/// A peer that closes before its HELLO gives [`IpcError::PeerClosed`] (the listener skips it).
fn handshake(
    sock: OwnedFd,
    opts: &Options,
    timeout: Duration,
    cancel: &dyn Cancel,
) -> IpcResult<Connection> {
    let ring_bytes = opts.ring_slots * opts.slot_size;
    let ring_fd = sys::sealed_memfd(ring_bytes)?;
    let ring_out = Mapping::new(&ring_fd, ring_bytes, true)?;
    let hello = Msg::new(
        Kind::Hello,
        proto::VERSION,
        sys::getpid() as u64,
        opts.path.code(),
        opts.ring_slots as u64,
        opts.slot_size as u64,
    );
    if sys::send_msg(&sock, &hello.encode(&[]), Some(ring_fd.as_raw_fd()))?.is_none() {
        return Err(IpcError::Protocol("could not send the handshake".into()));
    }
    drop(ring_fd);
    let what = || "waiting for the peer's handshake".to_string();
    if !sys::wait_readable_until(
        sock.as_raw_fd(),
        Instant::now().checked_add(timeout),
        cancel,
        &what,
    )? {
        return Err(IpcError::Timeout {
            what: what(),
            ms: timeout.as_millis() as u64,
        });
    }
    let mut buf = vec![0u8; proto::MAX_MSG];
    let (n, fd) = match sys::recv_msg(&sock, &mut buf)? {
        Recv::Msg(n, fd) => (n, fd),
        Recv::Eof | Recv::WouldBlock => return Err(IpcError::PeerClosed),
    };
    let (m, _) = Msg::decode(&buf[..n]).map_err(IpcError::Protocol)?;
    if m.kind != Kind::Hello || m.flags != proto::VERSION {
        return Err(IpcError::Protocol(format!(
            "expected HELLO version {}, got {:?} (flags {})",
            proto::VERSION,
            m.kind,
            m.flags
        )));
    }
    let cred = sys::peer_cred(&sock)?;
    if m.a != cred.pid as u64 {
        return Err(IpcError::Auth(format!(
            "the peer claims pid {} but the socket's credentials (SO_PEERCRED) say pid {}",
            m.a, cred.pid
        )));
    }
    let me = sys::geteuid();
    if cred.uid != me {
        return Err(IpcError::Auth(format!(
            "the peer runs as uid {}, this process as uid {me}; only a peer of the same user is accepted",
            cred.uid
        )));
    }
    let peer_pref = TransferPath::from_code(m.b)
        .ok_or_else(|| IpcError::Protocol(format!("unknown path preference {}", m.b)))?;
    let (peer_slots, peer_slot_size) = (m.c as usize, m.d as usize);
    let peer_opts = Options {
        ring_slots: peer_slots,
        slot_size: peer_slot_size,
        ..Options::default()
    };
    peer_opts
        .validate()
        .map_err(|e| IpcError::Protocol(format!("peer ring geometry: {e}")))?;
    let fd = fd.ok_or_else(|| {
        IpcError::Protocol("the peer's HELLO carried no shared-memory segment".into())
    })?;
    sys::check_segment(&fd, peer_slots * peer_slot_size).map_err(IpcError::Protocol)?;
    let ring_in = Mapping::new(&fd, peer_slots * peer_slot_size, false)?;
    drop(fd);
    sys::set_nonblocking(&sock)?;
    sys::set_sndbuf(&sock, 1 << 20);

    let path = opts.path.max(peer_pref);
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            next_cookie: 1,
            next_write: 0,
            next_read: 0,
            ops: HashMap::new(),
            submit: Vec::new(),
            closing: false,
            dead: None,
        }),
        cond: Condvar::new(),
        wake: sys::eventfd()?,
        waiters: AtomicUsize::new(0),
    });
    let engine = Progress {
        shared: shared.clone(),
        sock,
        peer_pid: cred.pid,
        path,
        deny_single_copy: opts.deny_single_copy,
        refused: None,
        ring_out,
        slot_size: opts.slot_size,
        ring_in,
        peer_slots,
        peer_slot_size,
        free_slots: (0..opts.ring_slots as u64).rev().collect(),
        ring_slots: opts.ring_slots,
        announced_writes: VecDeque::new(),
        announced_reads: VecDeque::new(),
        remote_rposts: VecDeque::new(),
        remote_wposts: VecDeque::new(),
        streams: VecDeque::new(),
        receiving: BTreeMap::new(),
        outbox: VecDeque::new(),
        shut: false,
        buf: vec![0u8; proto::MAX_MSG],
        close_deadline: None,
        finished: false,
    };
    let engine = Arc::new(Mutex::new(engine));
    let (sh, en) = (shared.clone(), engine.clone());
    let thread = std::thread::Builder::new()
        .name("movelab-ipc".into())
        .spawn(move || progress_thread(sh, en))
        .map_err(|e| IpcError::os("spawning the IPC progress thread", e))?;
    Ok(Connection {
        shared,
        engine,
        thread: Mutex::new(Some(thread)),
        peer: cred,
        path,
        owner: crate::sys::Owner::here(),
    })
}

impl Connection {
    /// Credentials of the authenticated peer.
    pub fn peer(&self) -> PeerCred {
        self.peer
    }

    /// The path preference in force on this connection (single-copy means "where allowed").
    pub fn preferred_path(&self) -> TransferPath {
        self.path
    }

    /// An error when called in a process other than the one that made the connection.
    fn foreign(&self) -> IpcResult<()> {
        if let Some(me) = self.owner.forked() {
            return Err(IpcError::Closed(format!(
                "this connection belongs to process {}; it cannot be used in the forked process {me} \
                 (connect again from the child)",
                self.owner.pid()
            )));
        }
        Ok(())
    }

    fn post(&self, dir: Direction, addr: usize, len: usize) -> IpcResult<u64> {
        self.foreign()?;
        if len > isize::MAX as usize {
            return Err(IpcError::BadBuffer(format!("length {len} is too large")));
        }
        let mut st = self.shared.lock();
        if st.closing {
            return Err(IpcError::Closed(
                "close() was called on this connection".into(),
            ));
        }
        if let Some(why) = &st.dead {
            return Err(IpcError::Closed(why.clone()));
        }
        let cookie = st.next_cookie;
        st.next_cookie += 1;
        let k = match dir {
            Direction::Write => {
                st.next_write += 1;
                st.next_write - 1
            }
            Direction::Read => {
                st.next_read += 1;
                st.next_read - 1
            }
        };
        st.ops.insert(cookie, Status::Pending);
        st.submit.push(Post {
            cookie,
            dir,
            k,
            addr,
            len,
        });
        drop(st);
        if len <= INLINE_POST_MAX {
            if let Ok(mut e) = self.engine.try_lock() {
                e.turn(0);
                drop(e);
                self.shared.notify();
                return Ok(cookie);
            }
        }
        sys::eventfd_signal(&self.shared.wake);
        Ok(cookie)
    }

    /// Post a write of `len` bytes at `ptr` (non-blocking; Table 2's `iwrite`). Returns a cookie.
    ///
    /// # Safety
    /// `ptr` must stay valid for reads of `len` bytes, and must not be written, until the
    /// operation has completed (observed by `wait`, or `check` returning true) or the connection
    /// has been closed.
    pub unsafe fn iwrite_raw(&self, ptr: *const u8, len: usize) -> IpcResult<u64> {
        self.post(Direction::Write, ptr as usize, len)
    }

    /// Post a read into `len` bytes at `ptr` (non-blocking; Table 2's `iread`). Returns a cookie.
    ///
    /// # Safety
    /// `ptr` must stay valid for writes of `len` bytes, and must not be accessed, until the
    /// operation has completed or the connection has been closed.
    pub unsafe fn iread_raw(&self, ptr: *mut u8, len: usize) -> IpcResult<u64> {
        self.post(Direction::Read, ptr as usize, len)
    }

    /// Non-blocking write on a borrowed buffer: the buffer stays borrowed until the returned
    /// [`Pending`] is waited for (dropping it waits too).
    pub fn iwrite<'a>(&'a self, buf: &'a [u8]) -> IpcResult<Pending<'a>> {
        // SAFETY: the borrow of buf lives as long as the Pending, which waits before releasing it.
        let cookie = unsafe { self.iwrite_raw(buf.as_ptr(), buf.len())? };
        Ok(Pending {
            conn: self,
            cookie,
            done: false,
        })
    }

    /// Non-blocking read into a borrowed buffer (see [`Connection::iwrite`]).
    pub fn iread<'a>(&'a self, buf: &'a mut [u8]) -> IpcResult<Pending<'a>> {
        // SAFETY: the mutable borrow of buf lives as long as the Pending, which waits before releasing it.
        let cookie = unsafe { self.iread_raw(buf.as_mut_ptr(), buf.len())? };
        Ok(Pending {
            conn: self,
            cookie,
            done: false,
        })
    }

    /// Blocking write (Table 2's `write`): returns when the data has left `buf`.
    pub fn write(&self, buf: &[u8], timeout: Option<Duration>) -> IpcResult<Transfer> {
        self.iwrite(buf)?.wait(timeout)
    }

    /// Blocking read (Table 2's `read`): returns when the data is in `buf`.
    pub fn read(&self, buf: &mut [u8], timeout: Option<Duration>) -> IpcResult<Transfer> {
        self.iread(buf)?.wait(timeout)
    }

    /// True once the operation has finished (successfully or not); `wait` then returns at once.
    pub fn check(&self, cookie: u64) -> IpcResult<bool> {
        self.foreign()?;
        match self.shared.lock().ops.get(&cookie) {
            None => Err(IpcError::UnknownCookie(cookie)),
            Some(Status::Pending) => Ok(false),
            Some(_) => Ok(true),
        }
    }

    /// Block until the operation finishes (sleeping, not spinning), then forget the cookie.
    /// On timeout the operation stays in flight and can be waited for again.
    pub fn wait(&self, cookie: u64, timeout: Option<Duration>) -> IpcResult<Transfer> {
        self.wait_with(cookie, timeout, &Never)
    }

    /// As [`Connection::wait`], giving up with [`IpcError::Interrupted`] when `cancel` says so
    /// (asked at least every [`SLICE`]); like a timeout, the operation stays in flight.
    pub fn wait_with(
        &self,
        cookie: u64,
        timeout: Option<Duration>,
        cancel: &dyn Cancel,
    ) -> IpcResult<Transfer> {
        self.foreign()?;
        // A timeout too large to add to the clock waits forever.
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let timeout_err = || IpcError::WaitTimeout {
            cookie,
            ms: timeout.map(|t| t.as_millis() as u64).unwrap_or(0),
        };
        let mut st = self.shared.lock();
        let mut registered = false;
        let result = loop {
            match st.ops.get(&cookie) {
                None => break Err(IpcError::UnknownCookie(cookie)),
                Some(Status::Pending) => {}
                Some(_) => {
                    break match st.ops.remove(&cookie) {
                        Some(Status::Done(t)) => Ok(t),
                        Some(Status::Failed(e)) => Err(e),
                        _ => Err(IpcError::UnknownCookie(cookie)),
                    }
                }
            }
            let left = match deadline {
                None => SLICE,
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        break Err(timeout_err());
                    }
                    (d - now).min(SLICE)
                }
            };
            if cancel.cancelled() {
                break Err(IpcError::Interrupted(format!(
                    "waiting for operation {cookie} (it is still in flight; wait for it again)"
                )));
            }
            if !registered {
                // From now on the progress thread stands aside and this thread runs the
                // protocol: the peer's messages wake it directly (one thread hop fewer).
                registered = true;
                self.shared.waiters.fetch_add(1, Ordering::SeqCst);
            }
            // Holding the state lock across try_lock and cond.wait: a release of the engine
            // (notified under the state lock) cannot slip in between and be missed.
            if let Ok(mut e) = self.engine.try_lock() {
                drop(st);
                let finished = e.turn(ms(left).max(1));
                drop(e);
                self.shared.notify();
                st = self.shared.lock();
                if finished {
                    continue; // every pending op has been failed: the next check returns
                }
            } else {
                st = self
                    .shared
                    .cond
                    .wait_timeout(st, left)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
        };
        drop(st);
        if registered && self.shared.waiters.fetch_sub(1, Ordering::SeqCst) == 1 {
            // The last waiter leaves: hand the protocol back to the progress thread.
            sys::eventfd_signal(&self.shared.wake);
            self.shared.notify();
        }
        result
    }

    /// Close the connection: tell the peer, wait (briefly) until it acknowledges so that it can no
    /// longer touch this process's buffers, and fail operations still in flight with `Closed`.
    /// Idempotent; also done on drop.
    pub fn close(&self) {
        if self.foreign().is_err() {
            // A forked child: leave the parent's connection alone (no shutdown, no join of a
            // thread that does not exist here).
            if let Ok(mut t) = self.thread.try_lock() {
                if let Some(h) = t.take() {
                    std::mem::forget(h);
                }
            }
            return;
        }
        self.shared.lock().closing = true;
        sys::eventfd_signal(&self.shared.wake);
        self.shared.notify();
        let handle = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }

    /// (reads, writes) the peer has posted that no local operation has met yet (tests use it to
    /// set up a rendezvous order deterministically).
    #[cfg(test)]
    pub(crate) fn unmatched_remote_posts(&self) -> (usize, usize) {
        let e = self.engine.lock().unwrap_or_else(|p| p.into_inner());
        (e.remote_rposts.len(), e.remote_wposts.len())
    }

    /// True when the connection can no longer carry operations (closed here or by the peer).
    pub fn is_closed(&self) -> bool {
        if self.foreign().is_err() {
            return true;
        }
        let st = self.shared.lock();
        st.closing || st.dead.is_some()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.close();
    }
}

/// A borrowed, in-flight operation. Waiting consumes it; dropping it waits for completion (or
/// for the connection to close) so that the borrowed buffer is never released early.
pub struct Pending<'a> {
    conn: &'a Connection,
    cookie: u64,
    done: bool,
}

impl Pending<'_> {
    pub fn cookie(&self) -> u64 {
        self.cookie
    }

    pub fn check(&self) -> IpcResult<bool> {
        self.conn.check(self.cookie)
    }

    /// Wait for completion. On `WaitTimeout` the operation is still in flight and the buffer
    /// stays borrowed: the returned error carries the cookie, and dropping the `Pending` waits.
    pub fn wait(self, timeout: Option<Duration>) -> IpcResult<Transfer> {
        self.wait_with(timeout, &Never)
    }

    /// As [`Pending::wait`], giving up when `cancel` says so. The borrowed buffer cannot stay
    /// posted past this call, so an interrupted wait closes the connection (the peer can then no
    /// longer touch the buffer) before returning [`IpcError::Interrupted`].
    pub fn wait_with(
        mut self,
        timeout: Option<Duration>,
        cancel: &dyn Cancel,
    ) -> IpcResult<Transfer> {
        let r = self.conn.wait_with(self.cookie, timeout, cancel);
        if matches!(r, Err(IpcError::Interrupted(_))) {
            self.conn.close();
        }
        if !matches!(r, Err(IpcError::WaitTimeout { .. })) {
            self.done = true;
        }
        r
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.conn.wait(self.cookie, None);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The progress thread.

#[derive(Debug, Clone)]
struct Local {
    cookie: u64,
    k: u64,
    addr: usize,
    len: usize,
}

#[derive(Debug, Clone, Copy)]
struct Remote {
    k: u64,
    addr: u64,
    len: u64,
}

struct Stream {
    op: Local,
    off: usize,
    path: TransferPath,
    note: Option<String>,
}

struct Receiving {
    op: Local,
    got: usize,
    note: Option<String>,
}

struct Progress {
    shared: Arc<Shared>,
    sock: OwnedFd,
    peer_pid: i32,
    path: TransferPath,
    deny_single_copy: bool,
    /// Why single copy is unavailable, once the kernel has refused it.
    refused: Option<String>,
    ring_out: Mapping,
    slot_size: usize,
    ring_in: Mapping,
    peer_slots: usize,
    peer_slot_size: usize,
    free_slots: Vec<u64>,
    ring_slots: usize,
    /// Writes announced with WPOST, waiting for RDONE / PULL / MISMATCH / FAIL.
    announced_writes: VecDeque<Local>,
    /// Reads announced with RPOST, waiting for the writer (WPOST, WDONE, CHUNK, ...).
    announced_reads: VecDeque<Local>,
    /// The peer's posted reads that no local write has met yet.
    remote_rposts: VecDeque<Remote>,
    /// The peer's posted writes that no local read has met yet.
    remote_wposts: VecDeque<Remote>,
    /// Writes being streamed through the ring or the socket, in order.
    streams: VecDeque<Stream>,
    /// Reads whose data is arriving in chunks, by transfer index.
    receiving: BTreeMap<u64, Receiving>,
    outbox: VecDeque<Vec<u8>>,
    shut: bool,
    buf: Vec<u8>,
    close_deadline: Option<Instant>,
    /// The connection is over: every pending op has been failed.
    finished: bool,
}

/// The progress thread: runs the protocol whenever no caller is waiting (so that transfers
/// progress while the callers compute), and sleeps in poll(2) on the socket and the eventfd.
fn progress_thread(shared: Arc<Shared>, engine: Arc<Mutex<Progress>>) {
    loop {
        {
            let mut st = shared.lock();
            while shared.waiters.load(Ordering::SeqCst) > 0 && !st.closing && st.dead.is_none() {
                st = shared.cond.wait(st).unwrap_or_else(|p| p.into_inner());
            }
        }
        let mut e = engine.lock().unwrap_or_else(|p| p.into_inner());
        if e.turn(0) {
            return;
        }
        let (sock, events, timeout) = e.poll_plan();
        drop(e);
        shared.notify();
        let mut fds = [
            libc::pollfd {
                fd: sock,
                events,
                revents: 0,
            },
            libc::pollfd {
                fd: shared.wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        if sys::poll(&mut fds, timeout).is_err() {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Progress {
    /// One round of the protocol: handle new posts, block at most `block_ms` (negative: until
    /// something happens) for the socket or the eventfd, handle what arrived, send replies.
    /// Returns true once the connection is over.
    fn turn(&mut self, block_ms: i32) -> bool {
        if self.finished {
            return true;
        }
        match self.step(block_ms) {
            Ok(None) => false,
            Ok(Some(why)) => {
                self.finalize(why);
                true
            }
            Err(e) => {
                self.finalize(e.to_string());
                true
            }
        }
    }

    /// The socket, its poll events and the poll timeout for a caller that sleeps without the
    /// engine lock.
    fn poll_plan(&self) -> (std::os::fd::RawFd, libc::c_short, i32) {
        let mut events = libc::POLLIN;
        if !self.outbox.is_empty() {
            events |= libc::POLLOUT;
        }
        let timeout = match self.close_deadline {
            Some(d) => ms(d.saturating_duration_since(Instant::now())).max(1),
            None => -1,
        };
        (self.sock.as_raw_fd(), events, timeout)
    }

    fn process_posts(&mut self) -> IpcResult<()> {
        let (posts, closing) = {
            let mut st = self.shared.lock();
            (std::mem::take(&mut st.submit), st.closing)
        };
        if !self.shut {
            for p in posts {
                self.on_post(p)?;
            }
            self.pump()?;
        }
        self.flush()?;
        if closing && !self.shut && self.outbox.is_empty() {
            sys::shutdown_write(&self.sock);
            self.shut = true;
            self.close_deadline = Some(Instant::now() + Duration::from_secs(2));
        }
        Ok(())
    }

    fn step(&mut self, block_ms: i32) -> IpcResult<Option<String>> {
        self.process_posts()?;
        let (sock, events, plan) = self.poll_plan();
        if let Some(d) = self.close_deadline {
            if Instant::now() >= d {
                return Ok(Some(
                    "closed (the peer did not acknowledge within 2 s)".into(),
                ));
            }
        }
        let timeout = match (block_ms, plan) {
            (b, p) if b < 0 => p,
            (b, p) if p < 0 => b,
            (b, p) => b.min(p),
        };
        let mut fds = [
            libc::pollfd {
                fd: sock,
                events,
                revents: 0,
            },
            libc::pollfd {
                fd: self.shared.wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        sys::poll(&mut fds, timeout)?;
        if fds[1].revents != 0 {
            sys::eventfd_drain(&self.shared.wake);
        }
        if fds[0].revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            let mut buf = std::mem::take(&mut self.buf);
            let r = self.receive_all(&mut buf);
            self.buf = buf;
            if let Some(why) = r? {
                return Ok(Some(why));
            }
        }
        self.process_posts()?;
        Ok(None)
    }

    fn receive_all(&mut self, buf: &mut [u8]) -> IpcResult<Option<String>> {
        loop {
            match sys::recv_msg(&self.sock, buf)? {
                Recv::WouldBlock => return Ok(None),
                Recv::Eof => {
                    return Ok(Some(if self.shut {
                        "closed".into()
                    } else {
                        "peer closed".into()
                    }));
                }
                Recv::Msg(n, _fd) => {
                    if self.shut {
                        continue; // closing: drain until the peer's EOF
                    }
                    let (m, payload) = Msg::decode(&buf[..n]).map_err(IpcError::Protocol)?;
                    self.on_msg(m, payload)?;
                }
            }
        }
    }

    /// The connection is over: shut the socket, fail what is pending, refuse new operations.
    fn finalize(&mut self, why: String) {
        self.finished = true;
        if !self.shut {
            sys::shutdown_write(&self.sock);
            self.shut = true;
        }
        let mut st = self.shared.lock();
        let closed_here = st.closing;
        let err = |why: &str| {
            if closed_here {
                IpcError::Closed(why.to_string())
            } else if why == "peer closed" {
                IpcError::PeerClosed
            } else {
                IpcError::Closed(why.to_string())
            }
        };
        for s in st.ops.values_mut() {
            if matches!(s, Status::Pending) {
                *s = Status::Failed(err(&why));
            }
        }
        st.dead = Some(if why == "peer closed" {
            "the peer closed the connection".into()
        } else {
            why
        });
        drop(st);
        self.shared.cond.notify_all();
    }

    fn send(&mut self, m: Msg, payload: &[u8]) {
        self.outbox.push_back(m.encode(payload));
    }

    fn flush(&mut self) -> IpcResult<()> {
        while let Some(front) = self.outbox.front() {
            match sys::send_msg(&self.sock, front, None) {
                Ok(Some(_)) => {
                    self.outbox.pop_front();
                }
                Ok(None) => break,
                Err(IpcError::PeerClosed) => {
                    // The peer is gone; the receive side reports it with EOF.
                    self.outbox.clear();
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn complete(
        &self,
        op: &Local,
        dir: Direction,
        bytes: usize,
        path: TransferPath,
        note: Option<String>,
    ) {
        self.shared.finish(
            op.cookie,
            Status::Done(Transfer {
                cookie: op.cookie,
                direction: dir,
                bytes,
                path,
                note,
            }),
        );
    }

    fn fail(&self, op: &Local, e: IpcError) {
        self.shared.finish(op.cookie, Status::Failed(e));
    }

    fn on_post(&mut self, p: Post) -> IpcResult<()> {
        let op = Local {
            cookie: p.cookie,
            k: p.k,
            addr: p.addr,
            len: p.len,
        };
        match p.dir {
            Direction::Write => {
                if let Some(r) = self.remote_rposts.front().copied() {
                    if r.k != op.k {
                        return Err(IpcError::Protocol(format!(
                            "peer read {} met local write {}",
                            r.k, op.k
                        )));
                    }
                    self.remote_rposts.pop_front();
                    self.writer_match(op, r);
                } else {
                    self.send(
                        Msg::new(Kind::WPost, 0, op.k, op.addr as u64, op.len as u64, 0),
                        &[],
                    );
                    self.announced_writes.push_back(op);
                }
            }
            Direction::Read => {
                if let Some(w) = self.remote_wposts.front().copied() {
                    if w.k != op.k {
                        return Err(IpcError::Protocol(format!(
                            "peer write {} met local read {}",
                            w.k, op.k
                        )));
                    }
                    self.remote_wposts.pop_front();
                    self.reader_pull(op, w);
                } else {
                    self.send(
                        Msg::new(Kind::RPost, 0, op.k, op.addr as u64, op.len as u64, 0),
                        &[],
                    );
                    self.announced_reads.push_back(op);
                }
            }
        }
        Ok(())
    }

    /// The note for a transfer that wanted single copy but cannot have it.
    fn refusal(&mut self, call: &str, e: Option<std::io::Error>) -> String {
        if let Some(r) = &self.refused {
            return r.clone();
        }
        let why = match e {
            Some(e) => format!(
                "{call} on peer pid {} was refused by the kernel ({e}): cross-process memory access is \
                 blocked here (Yama ptrace_scope, seccomp, or a non-dumpable peer and no \
                 CAP_SYS_PTRACE); falling back to the shared-memory two-copy path",
                self.peer_pid
            ),
            None => format!(
                "{call} on peer pid {} was refused (EPERM forced by the deny_single_copy option); falling \
                 back to the shared-memory two-copy path",
                self.peer_pid
            ),
        };
        self.refused = Some(why.clone());
        why
    }

    /// Try a single cross-process copy. Ok(None): done. Ok(Some(note)): refused, fall back.
    fn single_copy(
        &mut self,
        dir: Direction,
        local: &Local,
        remote: u64,
        len: usize,
    ) -> Result<Option<String>, String> {
        let call = if dir == Direction::Read {
            "process_vm_readv"
        } else {
            "process_vm_writev"
        };
        if let Some(r) = &self.refused {
            return Ok(Some(r.clone()));
        }
        if self.deny_single_copy {
            return Ok(Some(self.refusal(call, None)));
        }
        let res = match dir {
            // SAFETY: local.addr/len is a read buffer posted on this connection; the caller keeps it
            // valid and untouched until the operation completes, which happens only after this call.
            Direction::Read => unsafe {
                sys::vm_read(self.peer_pid, local.addr as *mut u8, remote, len)
            },
            // SAFETY: local.addr/len is a write buffer posted on this connection, kept valid by the caller.
            Direction::Write => unsafe {
                sys::vm_write(self.peer_pid, local.addr as *const u8, remote, len)
            },
        };
        match res {
            Ok(()) => Ok(None),
            Err(VmError::Refused(e)) => Ok(Some(self.refusal(call, Some(e)))),
            Err(VmError::Gone) => Err(format!(
                "{call}: the peer process {} no longer exists",
                self.peer_pid
            )),
            Err(VmError::Fault(e)) => Err(format!("{call}: a buffer address was not mapped ({e})")),
        }
    }

    fn stream_path(&self) -> TransferPath {
        if self.path == TransferPath::Socket {
            TransferPath::Socket
        } else {
            TransferPath::TwoCopy
        }
    }

    /// Local write `w` meets the peer's posted read `r` (the writer posted second).
    fn writer_match(&mut self, w: Local, r: Remote) {
        if w.len as u64 > r.len {
            self.fail(
                &w,
                IpcError::SizeMismatch {
                    write_len: w.len as u64,
                    read_len: r.len,
                },
            );
            self.send(
                Msg::new(
                    Kind::Mismatch,
                    proto::F_ABOUT_READ,
                    w.k,
                    w.len as u64,
                    r.len,
                    0,
                ),
                &[],
            );
            return;
        }
        if self.path == TransferPath::SingleCopy {
            match self.single_copy(Direction::Write, &w, r.addr, w.len) {
                Ok(None) => {
                    self.send(Msg::new(Kind::WDone, 0, w.k, w.len as u64, 0, 0), &[]);
                    self.complete(&w, Direction::Write, w.len, TransferPath::SingleCopy, None);
                    return;
                }
                Ok(Some(note)) => {
                    self.send(
                        Msg::new(Kind::Note, proto::F_ABOUT_READ, w.k, 0, 0, 0),
                        note_bytes(&note),
                    );
                    self.streams.push_back(Stream {
                        op: w,
                        off: 0,
                        path: TransferPath::TwoCopy,
                        note: Some(note),
                    });
                    return;
                }
                Err(msg) => {
                    self.send(
                        Msg::new(Kind::Fail, proto::F_ABOUT_READ, w.k, 0, 0, 0),
                        note_bytes(&msg),
                    );
                    self.fail(&w, IpcError::PeerFailed(msg));
                    return;
                }
            }
        }
        let path = self.stream_path();
        self.streams.push_back(Stream {
            op: w,
            off: 0,
            path,
            note: None,
        });
    }

    /// Local read `r` meets the peer's posted write `w`: the reader pulls.
    fn reader_pull(&mut self, r: Local, w: Remote) {
        if w.len > r.len as u64 {
            self.fail(
                &r,
                IpcError::SizeMismatch {
                    write_len: w.len,
                    read_len: r.len as u64,
                },
            );
            self.send(
                Msg::new(Kind::Mismatch, 0, r.k, w.len, r.len as u64, 0),
                &[],
            );
            return;
        }
        let mut note = None;
        if self.path == TransferPath::SingleCopy {
            match self.single_copy(Direction::Read, &r, w.addr, w.len as usize) {
                Ok(None) => {
                    self.send(Msg::new(Kind::RDone, 0, r.k, w.len, 0, 0), &[]);
                    self.complete(
                        &r,
                        Direction::Read,
                        w.len as usize,
                        TransferPath::SingleCopy,
                        None,
                    );
                    return;
                }
                Ok(Some(n)) => note = Some(n),
                Err(msg) => {
                    self.send(Msg::new(Kind::Fail, 0, r.k, 0, 0, 0), note_bytes(&msg));
                    self.fail(&r, IpcError::PeerFailed(msg));
                    return;
                }
            }
        }
        self.send(
            Msg::new(Kind::Pull, 0, r.k, 0, 0, 0),
            note.as_deref().map(note_bytes).unwrap_or(&[]),
        );
        self.receiving.insert(
            r.k,
            Receiving {
                op: r,
                got: 0,
                note,
            },
        );
    }

    /// Move outgoing chunks into free slots (two-copy) or socket messages, in transfer order.
    fn pump(&mut self) -> IpcResult<()> {
        while let Some(s) = self.streams.front_mut() {
            let len = s.op.len;
            if len == 0 {
                let m = Msg::new(
                    Kind::Chunk,
                    proto::F_LAST | proto::F_INLINE,
                    s.op.k,
                    0,
                    0,
                    u64::MAX,
                );
                self.outbox.push_back(m.encode(&[]));
            }
            while s.off < len {
                let Some(slot) = self.free_slots.pop() else {
                    return Ok(());
                };
                let inline = s.path == TransferPath::Socket;
                let cap = if inline {
                    proto::SOCKET_CHUNK.min(self.slot_size)
                } else {
                    self.slot_size
                };
                let n = cap.min(len - s.off);
                let last = s.off + n == len;
                let mut flags = if last { proto::F_LAST } else { 0 };
                let src = (s.op.addr + s.off) as *const u8;
                let m = if inline {
                    flags |= proto::F_INLINE;
                    // SAFETY: src..src+n lies inside a write buffer posted on this connection, kept
                    // valid and unmodified by the caller until the write completes.
                    let data = unsafe { std::slice::from_raw_parts(src, n) };
                    Msg::new(Kind::Chunk, flags, s.op.k, s.off as u64, n as u64, slot).encode(data)
                } else {
                    let dst = self.ring_out.ptr() as usize + slot as usize * self.slot_size;
                    debug_assert!(dst + n <= self.ring_out.ptr() as usize + self.ring_out.size());
                    // SAFETY: the slot is ours (free until the peer returns it with FREE) and n <= slot_size;
                    // the source is a posted write buffer (see above); the two never overlap.
                    unsafe { std::ptr::copy_nonoverlapping(src, dst as *mut u8, n) };
                    Msg::new(Kind::Chunk, flags, s.op.k, s.off as u64, n as u64, slot).encode(&[])
                };
                self.outbox.push_back(m);
                s.off += n;
            }
            let Some(s) = self.streams.pop_front() else {
                break;
            };
            self.complete(&s.op, Direction::Write, len, s.path, s.note);
            self.flush()?;
        }
        Ok(())
    }

    fn take_write(&mut self, k: u64, what: &str) -> IpcResult<Local> {
        match self.announced_writes.iter().position(|w| w.k == k) {
            Some(i) => Ok(self
                .announced_writes
                .remove(i)
                .expect("index from position")),
            None => Err(IpcError::Protocol(format!(
                "{what} for write {k}, which is not waiting"
            ))),
        }
    }

    /// The read op k, moved to `receiving` if it was still announced.
    fn read_entry(&mut self, k: u64, what: &str) -> IpcResult<&mut Receiving> {
        if !self.receiving.contains_key(&k) {
            match self.announced_reads.iter().position(|r| r.k == k) {
                Some(i) => {
                    let op = self.announced_reads.remove(i).expect("index from position");
                    self.receiving.insert(
                        k,
                        Receiving {
                            op,
                            got: 0,
                            note: None,
                        },
                    );
                }
                None => {
                    return Err(IpcError::Protocol(format!(
                        "{what} for read {k}, which is not waiting"
                    )))
                }
            }
        }
        self.receiving
            .get_mut(&k)
            .ok_or_else(|| IpcError::Protocol(format!("{what} for read {k}, which is not waiting")))
    }

    fn on_msg(&mut self, m: Msg, payload: &[u8]) -> IpcResult<()> {
        let k = m.a;
        match m.kind {
            Kind::Hello => return Err(IpcError::Protocol("a second HELLO".into())),
            Kind::WPost => {
                let w = Remote {
                    k,
                    addr: m.b,
                    len: m.c,
                };
                if let Some(i) = self.announced_reads.iter().position(|r| r.k == k) {
                    // Case 3: the posts crossed; the reader pulls.
                    let r = self.announced_reads.remove(i).expect("index from position");
                    self.reader_pull(r, w);
                } else {
                    self.remote_wposts.push_back(w);
                }
            }
            Kind::RPost => {
                if !self.announced_writes.iter().any(|w| w.k == k) {
                    self.remote_rposts.push_back(Remote {
                        k,
                        addr: m.b,
                        len: m.c,
                    });
                } // else case 3: our WPOST crossed it; the peer pulls.
            }
            Kind::WDone => {
                let e = self.read_entry(k, "WDONE")?;
                let bytes = m.b as usize;
                if bytes > e.op.len {
                    return Err(IpcError::Protocol(format!(
                        "WDONE of {bytes} bytes into a {}-byte read",
                        e.op.len
                    )));
                }
                if let Some(e) = self.receiving.remove(&k) {
                    self.complete(
                        &e.op,
                        Direction::Read,
                        bytes,
                        TransferPath::SingleCopy,
                        None,
                    );
                }
            }
            Kind::RDone => {
                let w = self.take_write(k, "RDONE")?;
                self.complete(&w, Direction::Write, w.len, TransferPath::SingleCopy, None);
            }
            Kind::Pull => {
                let w = self.take_write(k, "PULL")?;
                let note =
                    (!payload.is_empty()).then(|| String::from_utf8_lossy(payload).into_owned());
                let path = self.stream_path();
                self.streams.push_back(Stream {
                    op: w,
                    off: 0,
                    path,
                    note,
                });
                self.pump()?;
            }
            Kind::Chunk => return self.on_chunk(m, payload),
            Kind::Free => {
                let slot = m.a;
                if slot as usize >= self.ring_slots || self.free_slots.contains(&slot) {
                    return Err(IpcError::Protocol(format!(
                        "FREE of slot {slot}, which is not in use"
                    )));
                }
                self.free_slots.push(slot);
                self.pump()?;
            }
            Kind::Mismatch => {
                let e = IpcError::SizeMismatch {
                    write_len: m.b,
                    read_len: m.c,
                };
                if m.flags & proto::F_ABOUT_READ != 0 {
                    let r = self.read_entry(k, "MISMATCH")?.op.clone();
                    self.receiving.remove(&k);
                    self.fail(&r, e);
                } else {
                    let w = self.take_write(k, "MISMATCH")?;
                    self.fail(&w, e);
                }
            }
            Kind::Fail => {
                let e = IpcError::PeerFailed(String::from_utf8_lossy(payload).into_owned());
                if m.flags & proto::F_ABOUT_READ != 0 {
                    let r = self.read_entry(k, "FAIL")?.op.clone();
                    self.receiving.remove(&k);
                    self.fail(&r, e);
                } else {
                    let w = self.take_write(k, "FAIL")?;
                    self.fail(&w, e);
                }
            }
            Kind::Note => {
                let e = self.read_entry(k, "NOTE")?;
                e.note = Some(String::from_utf8_lossy(payload).into_owned());
            }
        }
        Ok(())
    }

    fn on_chunk(&mut self, m: Msg, payload: &[u8]) -> IpcResult<()> {
        let (k, off, n, slot) = (m.a, m.b as usize, m.c as usize, m.d);
        let inline = m.flags & proto::F_INLINE != 0;
        let (peer_slots, peer_slot_size) = (self.peer_slots, self.peer_slot_size);
        let ring = self.ring_in.ptr() as usize;
        let e = self.read_entry(k, "CHUNK")?;
        if off != e.got || off.checked_add(n).is_none_or(|end| end > e.op.len) {
            // Sizes were checked when the transfer matched: this is a broken peer.
            return Err(IpcError::Protocol(format!(
                "chunk [{off}, +{n}) of transfer {k} does not continue the {}-byte read at offset {}",
                e.op.len, e.got
            )));
        }
        let dst = (e.op.addr + off) as *mut u8;
        if inline {
            if payload.len() != n {
                return Err(IpcError::Protocol(format!(
                    "inline chunk says {n} bytes, carries {}",
                    payload.len()
                )));
            }
            // SAFETY: dst..dst+n lies inside a read buffer posted on this connection (checked above:
            // off + n <= len), kept valid by the caller until the read completes; payload is our own buffer.
            unsafe { std::ptr::copy_nonoverlapping(payload.as_ptr(), dst, n) };
        } else {
            if slot as usize >= peer_slots || n > peer_slot_size {
                return Err(IpcError::Protocol(format!(
                    "chunk in slot {slot} of {n} bytes is outside the ring"
                )));
            }
            let src = ring + slot as usize * peer_slot_size;
            // SAFETY: src..src+n lies inside the peer's mapped ring (slot < slots, n <= slot size), handed
            // to us by this CHUNK until we send FREE; dst is a posted read buffer (see above).
            unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst, n) };
        }
        e.got += n;
        let last = m.flags & proto::F_LAST != 0;
        if slot != u64::MAX {
            self.send(Msg::new(Kind::Free, 0, slot, 0, 0, 0), &[]);
        }
        if last {
            if let Some(e) = self.receiving.remove(&k) {
                let path = if inline {
                    TransferPath::Socket
                } else {
                    TransferPath::TwoCopy
                };
                // A zero-length transfer reports the connection's stream path.
                let path = if e.got == 0 { self.stream_path() } else { path };
                self.complete(&e.op, Direction::Read, e.got, path, e.note);
            }
        }
        Ok(())
    }
}

fn note_bytes(s: &str) -> &[u8] {
    let b = s.as_bytes();
    &b[..b.len().min(proto::MAX_NOTE)]
}
