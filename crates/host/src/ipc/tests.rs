//! Tests of the IPC endpoints: every path in every rendezvous order, the fallback, the
//! authentication, errors, and a real second process (this test binary re-executed).
use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const T: Option<Duration> = Some(Duration::from_secs(10));

fn sock_path(tag: &str) -> std::path::PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir().join(format!(
        "movelab-ipc-{tag}-{}-{}.sock",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Two connected endpoints in this process (the progress threads make them independent peers).
fn pair(a: Options, b: Options) -> (Connection, Connection) {
    let p = sock_path("pair");
    let l = Listener::bind(&p, a).unwrap();
    let p2 = p.clone();
    let h = std::thread::spawn(move || connect(&p2, b).unwrap());
    let server = l.accept(Some(Duration::from_secs(10))).unwrap();
    (server, h.join().unwrap())
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[derive(Clone, Copy, Debug)]
enum Order {
    WriterFirst,
    ReaderFirst,
    Both,
}

/// Wait until `c` has received the peer's post (so that the order of a rendezvous is certain).
fn await_remote(c: &Connection, seen: impl Fn((usize, usize)) -> bool) {
    let t0 = Instant::now();
    while !seen(c.unmatched_remote_posts()) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the peer's post never arrived"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Move `n` bytes from `w` to `r` in the given rendezvous order; returns both transfers.
fn transfer(
    w: &Connection,
    r: &Connection,
    n: usize,
    order: Order,
    seed: u8,
) -> (Transfer, Transfer) {
    let src = pattern(n, seed);
    let mut dst = vec![0u8; n + 5];
    let (tw, tr) = match order {
        Order::WriterFirst => {
            let pw = w.iwrite(&src).unwrap();
            await_remote(r, |(_, writes)| writes > 0);
            let tr = r.read(&mut dst, T).unwrap();
            (pw.wait(T).unwrap(), tr)
        }
        Order::ReaderFirst => {
            let pr = r.iread(&mut dst).unwrap();
            await_remote(w, |(reads, _)| reads > 0);
            let tw = w.write(&src, T).unwrap();
            (tw, pr.wait(T).unwrap())
        }
        Order::Both => {
            let pw = w.iwrite(&src).unwrap();
            let pr = r.iread(&mut dst).unwrap();
            let tw = pw.wait(T).unwrap();
            (tw, pr.wait(T).unwrap())
        }
    };
    assert_eq!(&dst[..n], &src[..], "bytes differ ({n} bytes, {order:?})");
    assert!(
        dst[n..].iter().all(|&b| b == 0),
        "bytes written past the message"
    );
    assert_eq!((tw.bytes, tr.bytes), (n, n));
    assert_eq!(tw.direction, Direction::Write);
    assert_eq!(tr.direction, Direction::Read);
    (tw, tr)
}

#[test]
fn every_path_every_order_both_directions() {
    for path in [
        TransferPath::SingleCopy,
        TransferPath::TwoCopy,
        TransferPath::Socket,
    ] {
        let opts = Options {
            path,
            slot_size: 4096 * 4,
            ring_slots: 3,
            ..Options::default()
        };
        let (a, b) = pair(opts.clone(), Options::default());
        assert_eq!(a.preferred_path(), path);
        assert_eq!(
            b.preferred_path(),
            path,
            "the stricter preference wins on both sides"
        );
        for order in [Order::WriterFirst, Order::ReaderFirst, Order::Both] {
            for (i, n) in [0usize, 1, 4097, 200_003].into_iter().enumerate() {
                let (tw, tr) = transfer(&a, &b, n, order, i as u8);
                assert_eq!((tw.path, tr.path), (path, path), "{path:?} {order:?} {n}");
                assert!(tw.note.is_none() && tr.note.is_none());
                let (tw, tr) = transfer(&b, &a, n, order, 7 + i as u8);
                assert_eq!(
                    (tw.path, tr.path),
                    (path, path),
                    "reverse {path:?} {order:?} {n}"
                );
            }
        }
    }
}

#[test]
fn forced_refusal_falls_back_to_two_copy_with_a_note() {
    let deny = Options {
        deny_single_copy: true,
        ..Options::default()
    };
    let (a, b) = pair(deny.clone(), deny);
    for order in [Order::WriterFirst, Order::ReaderFirst, Order::Both] {
        let (tw, tr) = transfer(&a, &b, 300_000, order, 3);
        assert_eq!(
            (tw.path, tr.path),
            (TransferPath::TwoCopy, TransferPath::TwoCopy)
        );
        for t in [&tw, &tr] {
            let note = t.note.as_deref().unwrap_or("");
            assert!(
                note.contains("deny_single_copy") && note.contains("two-copy"),
                "note: {note}"
            );
        }
    }
    // Only the reader refused: when the reader pulls it falls back, when the writer pushes it does not.
    let (w, r) = pair(
        Options::default(),
        Options {
            deny_single_copy: true,
            ..Options::default()
        },
    );
    let (tw, _) = transfer(&w, &r, 10_000, Order::WriterFirst, 1);
    assert_eq!(tw.path, TransferPath::TwoCopy);
    let (tw, tr) = transfer(&w, &r, 10_000, Order::ReaderFirst, 2);
    assert_eq!(
        (tw.path, tr.path),
        (TransferPath::SingleCopy, TransferPath::SingleCopy)
    );
}

#[test]
fn size_mismatch_fails_both_sides_and_the_stream_goes_on() {
    let (a, b) = pair(Options::default(), Options::default());
    let src = vec![1u8; 100];
    let mut small = vec![0u8; 10];
    let pw = a.iwrite(&src).unwrap();
    let e = b.read(&mut small, T).unwrap_err();
    assert_eq!(
        e,
        IpcError::SizeMismatch {
            write_len: 100,
            read_len: 10
        }
    );
    assert!(matches!(pw.wait(T), Err(IpcError::SizeMismatch { .. })));
    assert!(e.to_string().contains("100 bytes"));
    // Reader first, writer detects it.
    let mut small = vec![0u8; 10];
    let pr = b.iread(&mut small).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert!(matches!(
        a.write(&src, T),
        Err(IpcError::SizeMismatch { .. })
    ));
    assert!(matches!(pr.wait(T), Err(IpcError::SizeMismatch { .. })));
    transfer(&a, &b, 50, Order::Both, 9);
}

#[test]
fn cookies_timeouts_and_closed_peers() {
    let (a, b) = pair(Options::default(), Options::default());
    assert_eq!(a.check(999), Err(IpcError::UnknownCookie(999)));
    assert_eq!(a.wait(999, T), Err(IpcError::UnknownCookie(999)));
    let src = vec![5u8; 64];
    // SAFETY: src outlives the operation: it is waited for (failed) below before src drops.
    let c = unsafe { a.iwrite_raw(src.as_ptr(), src.len()).unwrap() };
    assert!(!a.check(c).unwrap());
    let t0 = Instant::now();
    assert!(matches!(
        a.wait(c, Some(Duration::from_millis(50))),
        Err(IpcError::WaitTimeout { .. })
    ));
    assert!(t0.elapsed() < Duration::from_secs(2));
    drop(b); // the peer goes away with the write unmatched
    assert_eq!(a.wait(c, T), Err(IpcError::PeerClosed));
    assert_eq!(
        a.wait(c, T),
        Err(IpcError::UnknownCookie(c)),
        "a waited cookie is forgotten"
    );
    assert!(a.is_closed());
    assert!(matches!(a.write(&src, T), Err(IpcError::Closed(_))));
}

#[test]
fn close_fails_local_pending_operations() {
    let (a, _b) = pair(Options::default(), Options::default());
    let mut dst = vec![0u8; 8];
    // SAFETY: dst outlives the operation: close() finishes it before dst drops.
    let c = unsafe { a.iread_raw(dst.as_mut_ptr(), dst.len()).unwrap() };
    a.close();
    assert!(matches!(a.wait(c, T), Err(IpcError::Closed(_))));
    assert!(matches!(a.read(&mut dst, T), Err(IpcError::Closed(_))));
}

#[test]
fn a_peer_lying_about_its_pid_is_refused() {
    let p = sock_path("auth");
    let l = Listener::bind(&p, Options::default()).unwrap();
    let fd = sys::seqpacket_socket().unwrap();
    sys::connect(&fd, &p).unwrap().unwrap();
    let forged = proto::Msg::new(
        proto::Kind::Hello,
        proto::VERSION,
        std::process::id() as u64 + 1,
        0,
        8,
        4096,
    );
    sys::send_msg(&fd, &forged.encode(&[]), None).unwrap();
    let e = l.accept(Some(Duration::from_secs(5))).err().unwrap();
    assert!(matches!(e, IpcError::Auth(_)), "{e}");
    assert!(e.to_string().contains("SO_PEERCRED"), "{e}");
}

#[test]
fn bad_inputs_give_clear_errors() {
    let long = "x".repeat(200);
    assert!(matches!(
        Listener::bind(&long, Options::default()),
        Err(IpcError::BadPath { .. })
    ));
    let bad = Options {
        slot_size: 1000,
        ..Options::default()
    };
    assert!(matches!(
        Listener::bind(sock_path("bad"), bad),
        Err(IpcError::InvalidOption(_))
    ));
    let quick = Options {
        timeout: Duration::from_millis(100),
        ..Options::default()
    };
    assert!(matches!(
        connect(sock_path("nobody"), quick.clone()),
        Err(IpcError::Timeout { .. })
    ));
    let l = Listener::bind(sock_path("idle"), quick).unwrap();
    assert!(matches!(l.accept(None), Err(IpcError::Timeout { .. })));
    assert!(TransferPath::parse("teleport").is_err());
    assert_eq!(
        TransferPath::parse("auto").unwrap(),
        TransferPath::SingleCopy
    );
}

/// CPU time of the calling thread (not the process: the test harness runs other tests in
/// parallel threads of this process).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is valid for writes.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[test]
fn waiting_for_the_peer_does_not_spin() {
    let (a, b) = pair(Options::default(), Options::default());
    let src = vec![7u8; 4096];
    let mut dst = vec![0u8; 4096];
    let pw = a.iwrite(&src).unwrap();
    let cpu0 = thread_cpu();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            b.read(&mut dst, T).unwrap();
        });
        pw.wait(T).unwrap();
    });
    let (wall, cpu) = (t0.elapsed(), thread_cpu() - cpu0);
    assert!(wall >= Duration::from_millis(290));
    assert!(
        cpu < Duration::from_millis(60),
        "waiting burned {cpu:?} of CPU in {wall:?}"
    );
    assert_eq!(dst, src);
}

/// Entry point of the child process of `a_second_process_in_every_order`: does nothing unless
/// the environment names a socket.
#[test]
fn ipc_child_entry() {
    let Ok(p) = std::env::var("MOVELAB_IPC_CHILD") else {
        return;
    };
    let deny = std::env::var("MOVELAB_IPC_DENY").is_ok();
    let c = connect(
        &p,
        Options {
            deny_single_copy: deny,
            ..Options::default()
        },
    )
    .unwrap();
    for (i, order) in ["writer-first", "reader-first", "both"].iter().enumerate() {
        let n = 1 << 20;
        // Parent -> child.
        let mut dst = vec![0u8; n];
        if *order == "writer-first" {
            std::thread::sleep(Duration::from_millis(100));
        }
        let t = c.read(&mut dst, T).unwrap();
        assert_eq!(dst, pattern(n, i as u8), "child received wrong bytes");
        // Child -> parent; the child reports the path of its read in the first byte... of nothing:
        // the parent checks its own transfer's path.
        if *order == "reader-first" {
            std::thread::sleep(Duration::from_millis(100));
        }
        let back = pattern(n, 100 + i as u8);
        let tw = c.write(&back, T).unwrap();
        let code = |p: TransferPath| p.as_str().as_bytes()[0];
        c.write(&[code(t.path), code(tw.path)], T).unwrap();
    }
}

#[test]
fn a_second_process_in_every_order() {
    for deny in [false, true] {
        let p = sock_path("proc");
        let l = Listener::bind(&p, Options::default()).unwrap();
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "ipc::tests::ipc_child_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MOVELAB_IPC_CHILD", &p);
        if deny {
            cmd.env("MOVELAB_IPC_DENY", "1");
        }
        let mut child = cmd.spawn().unwrap();
        let c = l.accept(Some(Duration::from_secs(20))).unwrap();
        assert_eq!(
            c.peer().pid as u32,
            child.id(),
            "SO_PEERCRED names the child"
        );
        for (i, order) in ["writer-first", "reader-first", "both"].iter().enumerate() {
            let n = 1 << 20;
            let src = pattern(n, i as u8);
            if *order == "reader-first" {
                std::thread::sleep(Duration::from_millis(100));
            }
            let tw = c.write(&src, T).unwrap();
            let mut back = vec![0u8; n];
            if *order == "writer-first" {
                std::thread::sleep(Duration::from_millis(100));
            }
            let tr = c.read(&mut back, T).unwrap();
            assert_eq!(
                back,
                pattern(n, 100 + i as u8),
                "parent received wrong bytes ({order})"
            );
            let mut codes = [0u8; 2];
            c.read(&mut codes, T).unwrap();
            let want = if deny { b't' } else { b's' };
            // With the child refusing, every transfer the child performs falls back; the parent's
            // own copies (pushes when the child read first) may still be single copy.
            if !deny {
                assert_eq!(
                    (tw.path, tr.path),
                    (TransferPath::SingleCopy, TransferPath::SingleCopy)
                );
                assert_eq!(codes, [want, want], "paths seen by the child ({order})");
            } else if *order != "both" {
                // The child posts second in one direction of each of these orders: its copy is
                // refused and that transfer falls back (in "both" either side may copy).
                assert!(
                    tw.path == TransferPath::TwoCopy || tr.path == TransferPath::TwoCopy,
                    "no fallback seen ({order}): {tw:?} {tr:?}"
                );
                assert!(codes.contains(&b't'), "paths seen by the child ({order})");
            }
        }
        let status = child.wait().unwrap();
        assert!(status.success(), "child failed: {status}");
    }
}

#[test]
fn benchmark_kernels_measure_every_path() {
    for path in [
        TransferPath::SingleCopy,
        TransferPath::TwoCopy,
        TransferPath::Socket,
    ] {
        let (a, b) = pair(
            Options {
                path,
                ..Options::default()
            },
            Options::default(),
        );
        let sizes = [64usize, 300_000];
        let rows = std::thread::scope(|s| {
            let h = s.spawn(|| bench::serve(&b, &sizes, true, &crate::cancel::Never));
            let rows = bench::drive(&a, &sizes, true, &crate::cancel::Never).unwrap();
            h.join().unwrap().unwrap();
            rows
        });
        assert_eq!(rows.len(), 2);
        for r in rows {
            assert_eq!(r.path, path);
            assert!(r.latency_ns > 0.0 && r.bandwidth_mb_s > 0.0, "{r:?}");
        }
    }
}

#[test]
fn a_forked_child_cannot_use_or_break_the_parents_connection() {
    let (a, b) = pair(Options::default(), Options::default());
    // SAFETY: the child only calls async-signal-tolerant code of ours (getpid, a formatted error,
    // closing fds) and leaves with _exit; glibc's malloc is fork-safe.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = matches!(a.write(b"from the child", T), Err(IpcError::Closed(ref m)) if m.contains("forked"))
            && a.is_closed();
        drop(a); // must not shut down the parent's socket
        drop(b);
        // SAFETY: leaving the forked child without running the parent's destructors or test harness.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waiting for the child forked above; status is valid for writes.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child status {status}"
    );
    assert!(!a.is_closed());
    transfer(&a, &b, 5000, Order::Both, 4);
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
        /// Any sequence of transfers, in any direction, order and size, on any path, arrives intact
        /// and reports the path of the connection.
        #[test]
        fn any_sequence_of_transfers_arrives_intact(
            path in prop_oneof![Just(TransferPath::SingleCopy), Just(TransferPath::TwoCopy), Just(TransferPath::Socket)],
            steps in proptest::collection::vec((0usize..70_000, 0u8..3, any::<bool>()), 1..10),
        ) {
            let opts = Options { path, slot_size: 16384, ring_slots: 2, ..Options::default() };
            let (a, b) = pair(opts, Options::default());
            for (i, (n, o, reverse)) in steps.into_iter().enumerate() {
                let order = [Order::WriterFirst, Order::ReaderFirst, Order::Both][o as usize];
                let (w, r) = if reverse { (&b, &a) } else { (&a, &b) };
                let (tw, tr) = transfer(w, r, n, order, i as u8);
                prop_assert_eq!(tw.path, path);
                prop_assert_eq!(tr.path, path);
            }
        }
    }
}

mod endpoint {
    //! The endpoint rules: a live endpoint cannot be stolen, a server removes only its own socket
    //! file, and a path that is not a socket fails at once.
    use super::*;
    use crate::runtime::tests::in_forked_child;

    fn client(p: &std::path::Path) -> std::thread::JoinHandle<IpcResult<Connection>> {
        let p = p.to_path_buf();
        std::thread::spawn(move || connect(&p, Options::default()))
    }

    #[test]
    fn a_second_listen_on_a_live_endpoint_is_refused_and_takes_nothing() {
        let p = sock_path("live");
        let first = Listener::bind(&p, Options::default()).unwrap();
        let e = Listener::bind(&p, Options::default()).err().unwrap();
        assert!(matches!(e, IpcError::AddrInUse { .. }), "{e}");
        assert!(e.to_string().contains("address in use"), "{e}");
        // The probe left a half-open connection in the first server's backlog: accept skips it
        // and serves the real client.
        let h = client(&p);
        let server = first.accept(T).unwrap();
        let c = h.join().unwrap().unwrap();
        transfer(&server, &c, 1000, Order::Both, 1);
        drop(first);
        assert!(!p.exists(), "the server removes its own socket file");
    }

    #[test]
    fn a_stale_socket_file_is_replaced() {
        let p = sock_path("stale");
        // A socket file nobody listens on: what a crashed server leaves behind.
        drop(std::os::unix::net::UnixListener::bind(&p).unwrap());
        assert!(p.exists());
        let l = Listener::bind(&p, Options::default()).unwrap();
        let h = client(&p);
        let s = l.accept(T).unwrap();
        transfer(&s, &h.join().unwrap().unwrap(), 10, Order::WriterFirst, 2);
    }

    #[test]
    fn a_server_removes_only_its_own_socket_file() {
        let p = sock_path("own");
        let old = Listener::bind(&p, Options::default()).unwrap();
        // Someone removes the file and a new server binds the path.
        std::fs::remove_file(&p).unwrap();
        let new = Listener::bind(&p, Options::default()).unwrap();
        drop(old);
        assert!(p.exists(), "the old server deleted the new server's socket");
        let h = client(&p);
        let s = new.accept(T).unwrap();
        transfer(&s, &h.join().unwrap().unwrap(), 10, Order::ReaderFirst, 3);
    }

    #[test]
    fn a_forked_child_dropping_the_listener_leaves_the_socket() {
        let p = sock_path("fork");
        let mut l = Some(Listener::bind(&p, Options::default()).unwrap());
        in_forked_child(|| {
            drop(l.take());
            p.exists()
        });
        assert!(p.exists(), "the child removed the parent's socket file");
        let h = client(&p);
        let s = l.as_ref().unwrap().accept(T).unwrap();
        transfer(&s, &h.join().unwrap().unwrap(), 10, Order::Both, 4);
    }

    #[test]
    fn connecting_to_something_that_is_not_a_socket_fails_at_once() {
        let dir = std::env::temp_dir().join(format!("movelab-notsock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("plain");
        std::fs::write(&file, b"x").unwrap();
        for (path, kind) in [(&file, "regular file"), (&dir, "directory")] {
            let t = Instant::now();
            let e = connect(path, Options::default()).err().unwrap();
            // The default timeout is 10 s: an error well before it was not a wait.
            assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
            assert!(
                matches!(e, IpcError::BadPath { ref reason, .. } if reason.contains(kind)),
                "{e}"
            );
            let e = Listener::bind(path, Options::default()).err().unwrap();
            assert!(matches!(e, IpcError::BadPath { .. }), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

mod cancel {
    //! Every blocking call gives up when its Cancel says so (Ctrl-C in Python).
    use super::*;
    use crate::cancel::Flag;

    fn raise_after(flag: &Flag, ms: u64) {
        std::thread::sleep(Duration::from_millis(ms));
        flag.raise();
    }

    #[test]
    fn accept_connect_and_wait_can_be_interrupted() {
        let forever = Options {
            timeout: Duration::from_secs(3600),
            ..Options::default()
        };
        let p = sock_path("intr");
        let l = Listener::bind(&p, forever.clone()).unwrap();
        let flag = Flag::default();
        std::thread::scope(|s| {
            s.spawn(|| raise_after(&flag, 100));
            let e = l.accept_with(None, &flag).err().unwrap();
            assert!(matches!(e, IpcError::Interrupted(_)), "{e}");
        });
        let flag = Flag::default();
        std::thread::scope(|s| {
            s.spawn(|| raise_after(&flag, 100));
            let e = connect_with(sock_path("nobody"), forever.clone(), &flag)
                .err()
                .unwrap();
            assert!(matches!(e, IpcError::Interrupted(_)), "{e}");
        });
        let (a, b) = pair(forever.clone(), forever);
        let mut buf = vec![0u8; 100];
        // SAFETY: buf outlives the read: it is waited for below before buf drops.
        let c = unsafe { a.iread_raw(buf.as_mut_ptr(), buf.len()) }.unwrap();
        let flag = Flag::default();
        std::thread::scope(|s| {
            s.spawn(|| raise_after(&flag, 100));
            let e = a.wait_with(c, None, &flag).err().unwrap();
            assert!(matches!(e, IpcError::Interrupted(_)), "{e}");
        });
        // Still in flight: the peer's write completes it.
        assert!(!a.check(c).unwrap());
        b.write(&[9u8; 100], T).unwrap();
        assert_eq!(a.wait(c, T).unwrap().bytes, 100);
        assert_eq!(buf, vec![9u8; 100]);
    }
}
