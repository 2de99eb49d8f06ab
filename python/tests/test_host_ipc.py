"""IPC endpoints: a second process, both directions, the three rendezvous orders of section 3.3,
every path, the forced fallback, and bad inputs (clear errors, never a hang: every wait has a
timeout)."""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import sys
import threading
import time

import numpy as np
import pytest
from movelab.host import ipc

T = 20.0  # seconds: generous, only there so that a bug fails instead of hanging
ORDERS = ["writer-first", "reader-first", "both"]
N = 300_000  # spans several ring chunks on the two-copy path (small slots below)


def pattern(n: int, seed: int) -> bytes:
    return bytes((i * 131 + seed) % 251 for i in range(n))


def _expect_path(t: dict, prefer: str, deny: bool) -> None:
    """The reported path: single copy when allowed; a fallback is two-copy with a note."""
    if prefer == "socket":
        assert t["path"] == "socket", t
    elif prefer == "two-copy" or deny:
        assert t["path"] == "two-copy", t
        if deny:
            assert "deny_single_copy" in (t["note"] or ""), t
    else:
        # Where the kernel refuses process_vm_* (Yama, seccomp) the fallback must say why.
        assert t["path"] == "single-copy" or (t["path"] == "two-copy" and "refused" in (t["note"] or "")), t


def _post(conn: ipc.Connection, role: str, order: str, buf) -> dict:
    """One transfer in the given order: the one that should come second sleeps first."""
    second = {"writer-first": "reader", "reader-first": "writer"}.get(order)
    if role == second:
        time.sleep(0.05)
    cookie = conn.iwrite(buf) if role == "writer" else conn.iread(buf)
    if order == "both":
        # Both post before either waits; check() does not block.
        conn.check(cookie)
    return conn.wait(cookie, timeout=T)


def peer_main(sock: str, prefer: str, deny: bool, q) -> None:
    """The second process: receive, verify, echo back, for every order; report what it saw."""
    try:
        with ipc.connect(sock, prefer=prefer, deny_single_copy=deny, slot_size=64 * 1024, timeout=T) as c:
            report = {"parent_pid": c.peer["pid"], "transfers": []}
            for i, order in enumerate(ORDERS):
                # parent -> child into a NumPy array; child -> parent from a memoryview
                arr = np.zeros(N, dtype=np.uint8)
                t_in = _post(c, "reader", order, arr)
                ok = arr.tobytes() == pattern(N, i)
                out = bytearray(pattern(N, 100 + i))
                t_out = _post(c, "writer", order, memoryview(out))
                report["transfers"].append((order, ok, t_in, t_out))
            q.put(report)
    except (OSError, ValueError, TypeError, AssertionError, RuntimeError) as e:  # report, don't hang
        q.put({"error": repr(e)})


def _run_two_processes(tmp_path, prefer: str, deny: bool) -> None:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    sock = str(tmp_path / "p.sock")
    with ipc.listen(sock, prefer=prefer, deny_single_copy=deny, slot_size=64 * 1024, timeout=T) as lst:
        p = ctx.Process(target=peer_main, args=(sock, prefer, deny, q))
        p.start()
        try:
            with lst.accept(timeout=60) as c:
                assert c.peer["pid"] == p.pid, "SO_PEERCRED must name the spawned process"
                assert c.peer["uid"] == os.geteuid()
                for i, order in enumerate(ORDERS):
                    t_out = _post(c, "writer", order, pattern(N, i))  # bytes
                    back = bytearray(N)
                    t_in = _post(c, "reader", order, back)
                    assert bytes(back) == pattern(N, 100 + i), f"parent received wrong bytes ({order})"
                    for t in (t_out, t_in):
                        assert t["bytes"] == N
                        _expect_path(t, prefer, deny)
                report = q.get(timeout=60)
        finally:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    assert "error" not in report, report["error"]
    assert report["parent_pid"] == os.getpid()
    for order, ok, t_in, t_out in report["transfers"]:
        assert ok, f"child received wrong bytes ({order})"
        for t in (t_in, t_out):
            assert t["bytes"] == N
            _expect_path(t, prefer, deny)
    assert p.exitcode == 0


@pytest.mark.parametrize("prefer", ["auto", "two-copy", "socket"])
def test_two_processes_every_order_both_directions(tmp_path, prefer):
    _run_two_processes(tmp_path, prefer, deny=False)


def test_two_processes_forced_refusal_falls_back(tmp_path):
    _run_two_processes(tmp_path, "auto", deny=True)


@pytest.fixture
def pair(tmp_path):
    """Two endpoints in this process (each has its own progress thread, so they act as peers)."""
    sock = str(tmp_path / "pair.sock")
    lst = ipc.listen(sock, timeout=T)
    box = {}
    th = threading.Thread(target=lambda: box.setdefault("c", ipc.connect(sock, timeout=T)))
    th.start()
    a = lst.accept(timeout=T)
    th.join(timeout=T)
    b = box["c"]
    yield a, b
    a.close()
    b.close()
    lst.close()


def test_numpy_any_dtype_and_zero_length(pair):
    a, b = pair
    src = np.arange(1000, dtype=np.float64)
    dst = np.zeros(1000, dtype=np.float64)
    ca = a.iwrite(src)
    t = b.read(dst, timeout=T)
    assert a.wait(ca, timeout=T)["bytes"] == src.nbytes == t["bytes"]
    assert np.array_equal(src, dst)
    ca = a.iwrite(b"")
    t = b.read(bytearray(0), timeout=T)
    assert t["bytes"] == 0 and a.wait(ca, timeout=T)["bytes"] == 0


def test_buffers_are_held_while_in_flight(pair):
    a, b = pair
    buf = bytearray(4096)
    before = sys.getrefcount(buf)
    cookie = b.iread(buf)
    assert sys.getrefcount(buf) > before, "the binding must hold the buffer while in flight"
    with pytest.raises(BufferError):
        buf.extend(b"x")  # a held bytearray cannot be resized under the transfer
    a.write(b"\x07" * 4096, timeout=T)
    assert b.wait(cookie, timeout=T)["bytes"] == 4096
    gc.collect()
    assert sys.getrefcount(buf) == before, "the buffer must be released after wait"
    assert buf == b"\x07" * 4096


def test_bad_inputs_give_clear_errors(pair, tmp_path):
    a, b = pair
    with pytest.raises(ValueError, match="read-only"):
        b.iread(b"immutable")
    with pytest.raises(TypeError, match="expected a buffer"):
        a.iwrite(12345)
    with pytest.raises(ValueError, match="C-contiguous"):
        a.iwrite(np.zeros((10, 10))[:, 0])
    with pytest.raises(ValueError, match="unknown cookie"):
        a.wait(424242, timeout=1)
    with pytest.raises(ValueError, match="unknown cookie"):
        a.check(424242)
    # Wrong sizes: the writer's message is larger than the read buffer; both sides are told.
    cw = a.iwrite(b"x" * 100)
    with pytest.raises(ValueError, match="size mismatch"):
        b.read(bytearray(10), timeout=T)
    with pytest.raises(ValueError, match="size mismatch"):
        a.wait(cw, timeout=T)
    # An unmatched operation times out instead of hanging, and stays waitable.
    cw = a.iwrite(b"late")
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        a.wait(cw, timeout=0.1)
    assert time.monotonic() - t0 < 5
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="timeout"):
            a.wait(cw, timeout=bad)
    got = bytearray(4)
    b.read(got, timeout=float("inf"))
    assert a.wait(cw, timeout=T)["bytes"] == 4 and got == b"late"
    with pytest.raises(ValueError, match="unknown cookie"):
        a.wait(cw, timeout=1)
    with pytest.raises(ValueError, match=r"unknown IPC|unknown path"):
        ipc.listen(str(tmp_path / "x.sock"), prefer="teleport")
    with pytest.raises(TimeoutError):
        ipc.connect(str(tmp_path / "nobody.sock"), timeout=0.2)


def test_closed_peer_fails_pending_and_new_operations(pair):
    a, b = pair
    cookie = a.iread(bytearray(16))
    b.close()
    with pytest.raises(ConnectionError, match="peer closed"):
        a.wait(cookie, timeout=T)
    with pytest.raises(ConnectionError):
        a.write(b"after", timeout=T)
    assert a.closed


def test_benchmark_rows(monkeypatch):
    from movelab.host.bench_ipc import run_ipc

    rows = run_ipc(quick=True, sizes=[64, 65536])
    assert len(rows) == 6
    for r in rows:
        for key in ("engine", "size_bytes", "path", "latency_ns", "bandwidth_mb_s"):
            assert key in r, r
        assert r["latency_ns"] > 0 and r["bandwidth_mb_s"] > 0
    assert {r["requested_path"] for r in rows} == {"single-copy", "two-copy", "socket"}
    assert all(r["path"] == "socket" for r in rows if r["requested_path"] == "socket")


def _drop_cap_sys_ptrace() -> None:
    """Clear CAP_SYS_PTRACE from this thread's effective set (threads started later inherit it)."""
    import ctypes

    class Hdr(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    libc = ctypes.CDLL(None, use_errno=True)
    hdr, data = Hdr(0x20080522, 0), (Data * 2)()
    if libc.capget(ctypes.byref(hdr), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    data[0].effective &= ~(1 << 19)  # CAP_SYS_PTRACE
    if libc.capset(ctypes.byref(hdr), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def refusing_target(sock: str, q) -> None:
    """A non-dumpable process: a peer without CAP_SYS_PTRACE may not touch its memory."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
        with ipc.listen(sock, timeout=T) as lst, lst.accept(timeout=60) as c:
            t_out = c.write(pattern(N, 1), timeout=T)  # the peer reads second: it pulls from us
            time.sleep(0.2)  # the peer writes first: we pull from it (we may: it is dumpable)
            back = bytearray(N)
            t_in = c.read(back, timeout=T)
            q.put({"out": t_out, "in": t_in, "ok": bytes(back) == pattern(N, 2)})
    except (OSError, ValueError, TypeError, AssertionError, RuntimeError) as e:
        q.put({"error": repr(e)})


def unprivileged_peer(sock: str, q) -> None:
    try:
        _drop_cap_sys_ptrace()  # before connect: the connection's threads inherit it
        with ipc.connect(sock, timeout=T) as c:
            time.sleep(0.2)
            got = bytearray(N)
            t_in = c.read(got, timeout=T)
            t_out = c.write(pattern(N, 2), timeout=T)
            q.put({"out": t_out, "in": t_in, "ok": bytes(got) == pattern(N, 1)})
    except (OSError, ValueError, TypeError, AssertionError, RuntimeError) as e:
        q.put({"error": repr(e)})


def test_a_real_kernel_refusal_falls_back_with_a_clear_note(tmp_path):
    """Not forced: the kernel itself refuses process_vm_readv (EPERM: the target is not dumpable
    and the caller lacks CAP_SYS_PTRACE). The transfer still arrives, through the ring, and says
    why; the other direction, which the kernel allows, stays single copy where permitted."""
    ctx = mp.get_context("spawn")
    qa, qb = ctx.Queue(), ctx.Queue()
    sock = str(tmp_path / "eperm.sock")
    a = ctx.Process(target=refusing_target, args=(sock, qa))
    b = ctx.Process(target=unprivileged_peer, args=(sock, qb))
    a.start()
    b.start()
    try:
        ra, rb = qa.get(timeout=60), qb.get(timeout=60)
    finally:
        for p in (a, b):
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    assert "error" not in ra and "error" not in rb, (ra, rb)
    assert ra["ok"] and rb["ok"], "bytes differ"
    refused = rb["in"]
    assert refused["path"] == "two-copy", refused
    assert "refused by the kernel" in refused["note"] and "process_vm_readv" in refused["note"], refused
    assert ra["out"]["path"] == "two-copy" and ra["out"]["note"] == refused["note"]
    assert ra["in"]["path"] in ("single-copy", "two-copy")
