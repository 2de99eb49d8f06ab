"""The onload engine and its sockets belong to the process that made them: in a child after
``fork()`` every call fails at once with RuntimeError, and the child exits (plain ``sys.exit``,
the finalizers included) without a panic or a hang, as the copy Engine and IPC do. A closed
socket refuses a blocking ``recv`` at once, and bad engine settings are named."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest
from movelab.host.onload import OnloadEngine

LIMIT = 60

_CHILD = """
import os, sys
from movelab.host.onload import OnloadEngine
eng = OnloadEngine(payload_bytes=64, count=10, port=9000, gated=True, idle_spin_us=50)
sock = eng.bind(9000)
for _ in range(4):
    sock.post(bytearray(2048))
eng.go()
pid = os.fork()
if pid == 0:
    calls = {
        "send": lambda: sock.send(b"x", ("10.77.0.2", 40000)),
        "bind": lambda: eng.bind(9001),
        "recv": lambda: sock.recv(),
        "recv-timeout": lambda: sock.recv(timeout=1),
        "post": lambda: sock.post(bytearray(64)),
        "stats": lambda: sock.stats(),
        "engine-stats": lambda: eng.stats(),
        "sock-close": lambda: sock.close(),
        "close": lambda: eng.close(),
    }
    bad = []
    for name, call in calls.items():
        try:
            call()
            bad.append(name + ": no error")
        except RuntimeError as e:
            if "forked" not in str(e) or "new engine" not in str(e):
                bad.append(name + ": " + str(e))
    print("child", bad, flush=True)
    sys.exit(7 if not bad else 8)      # a plain exit: the objects' finalizers run in the child
_, status = os.waitpid(pid, 0)
print("exit", os.waitstatus_to_exitcode(status), flush=True)
got = sock.recv(timeout=10)           # the parent's engine is untouched
print("parent", got is not None and got.nbytes == 64, flush=True)
sock.close()
eng.close()
"""


def test_an_onload_engine_in_a_forked_child_fails_at_once_and_exits() -> None:
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(_CHILD)], capture_output=True, text=True,
                       timeout=LIMIT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "child []" in r.stdout and "exit 7" in r.stdout and "parent True" in r.stdout, r.stdout + r.stderr
    assert "panic" not in r.stderr.lower(), r.stderr
    assert time.monotonic() - t0 < 30


def test_a_blocking_recv_on_a_closed_socket_fails_at_once() -> None:
    with OnloadEngine(payload_bytes=64, count=1, port=9000, gated=True, idle_spin_us=50) as eng:
        s = eng.bind(9000)
        s.post(bytearray(2048))
        s.close()
        t0 = time.monotonic()
        for call in (lambda: s.recv(), lambda: s.recv(timeout=5), lambda: s.recv(block=False),
                     lambda: s.post(bytearray(64)), lambda: s.send(b"x", ("10.77.0.2", 1))):
            with pytest.raises(ValueError, match="the socket is closed"):
                call()
        assert time.monotonic() - t0 < 2
        s.close()  # idempotent


@pytest.mark.parametrize("settings, named", [
    ({"rate_mbps": float("nan")}, "rate_mbps"),
    ({"rate_mbps": float("inf")}, "rate_mbps"),
    ({"port": 70000}, "port"),
    ({"count": 2**64}, "count"),
])
def test_bad_engine_settings_name_the_setting(settings: dict, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        OnloadEngine(**settings)
