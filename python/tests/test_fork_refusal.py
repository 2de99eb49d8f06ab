"""Every object that owns a thread belongs to the process that made it: in a child after ``fork()``
using it fails at once with RuntimeError (never a hang on a thread that exists only in the parent),
closing it only lets go, and a plain ``sys.exit`` in the child returns. The copy engine and the
onload engine have their own tests (test_host_hardening.py, test_host_onload_fork.py); here: the
local process pool of sweeps and reproductions, the Dask executor (a client it made from an
address is let go of in the child, so the child's exit does not wait on the parent's event loop),
and an IPC connection."""

from __future__ import annotations

import subprocess
import sys
import textwrap

LIMIT = 90


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=LIMIT)


def test_a_local_pool_in_a_forked_child_fails_at_once_and_the_parent_keeps_it() -> None:
    r = _run("""
        import os, sys
        from movelab.executor import LocalExecutor
        ex = LocalExecutor(2)
        print("before", sorted(o.value for o in ex.imap(abs, [-1, -2, -3])), flush=True)  # the pool runs
        pid = os.fork()
        if pid == 0:
            try:
                list(ex.imap(abs, [-4, -5]))
                code = 3
            except RuntimeError as e:
                code = 0 if "forked child" in str(e) and "new executor" in str(e) else 4
            ex.close()                          # lets go of the parent's pool
            sys.exit(code)                      # a plain exit: finalizers run in the child
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status), flush=True)
        print("parent", sorted(o.value for o in ex.imap(abs, [-6, -7])), flush=True)
        ex.close()
    """)
    assert r.returncode == 0, r.stderr
    assert "before [1, 2, 3]" in r.stdout and "child 0" in r.stdout and "parent [6, 7]" in r.stdout, \
        r.stdout + r.stderr


def test_an_ipc_connection_in_a_forked_child_fails_at_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    r = _run(f"""
        import os, sys, threading
        from movelab.host import ipc
        path = {str(tmp_path / "x.sock")!r}
        lst = ipc.listen(path)
        got = {{}}
        t = threading.Thread(target=lambda: got.update(c=lst.accept(timeout=10)))
        t.start()
        c = ipc.connect(path)
        t.join()
        server = got["c"]
        pid = os.fork()
        if pid == 0:
            bad = []
            for name, call in {{"write": lambda: c.write(b"hi", timeout=1),
                               "iread": lambda: c.iread(bytearray(2))}}.items():
                try:
                    call()
                    bad.append(name + ": no error")
                except ConnectionError as e:     # IPC's refusal: an OSError naming the fork
                    if "forked process" not in str(e) or "connect again" not in str(e):
                        bad.append(name + ": " + str(e))
            print("child", bad, flush=True)
            c.close()
            sys.exit(0 if not bad else 5)
        _, status = os.waitpid(pid, 0)
        print("exit", os.waitstatus_to_exitcode(status), flush=True)
        buf = bytearray(2)
        done = server.iread(buf)
        c.write(b"ok", timeout=10)             # the parent's connection is untouched
        server.wait(done, timeout=10)
        print("parent", bytes(buf), flush=True)
        c.close(); server.close(); lst.close()
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "exit 0" in r.stdout and "parent b'ok'" in r.stdout, r.stdout + r.stderr


def test_a_dask_executor_in_a_forked_child_fails_at_once_and_the_parent_keeps_it() -> None:
    # A scheduler in its own process (no LocalCluster, no workers: nothing runs a point) and an
    # executor that makes its own client from the address, as `--cluster` does.
    r = _run("""
        import os, socket, subprocess, sys, time
        s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
        sched = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", str(port), "--no-dashboard"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            from movelab.executor import DaskExecutor
            for _ in range(300):
                try:
                    ex = DaskExecutor(f"tcp://127.0.0.1:{port}")
                    break
                except ConnectionError:
                    time.sleep(0.1)
            pid = os.fork()
            if pid == 0:
                try:
                    list(ex.imap(abs, [-4, -5]))
                    code = 3
                except RuntimeError as e:
                    ok = f"belongs to process {os.getppid()}" in str(e) and "forked child" in str(e) \\
                        and "new executor" in str(e)
                    code = 0 if ok else 4
                ex.close()                # lets go of the parent's client
                # The client's own close (which dask.distributed's exit hook calls) returns at once
                # instead of waiting on the parent's event loop (a TimeoutError after 40 s).
                ex.client.close()
                sys.exit(code)            # a plain exit: finalizers and exit hooks run in the child
            _, status = os.waitpid(pid, 0)
            print("child", os.waitstatus_to_exitcode(status), flush=True)
            # The parent's client still talks to the scheduler.
            print("parent", ex.client.status, ex.client.nthreads(), flush=True)
            ex.close()
            print("closed", ex.client.status, flush=True)
        finally:
            sched.terminate()
            sched.wait()
    """)
    assert r.returncode == 0, r.stderr
    assert "child 0" in r.stdout and "parent running {}" in r.stdout and "closed closed" in r.stdout, \
        r.stdout + r.stderr
