"""Starting an executor fails fast and clearly: a Dask address that accepts connections but never
answers, a refused one, a port out of range; and a script without an ``if __name__ ==
"__main__":`` guard runs a sweep on a local pool as written (the workers do not run it again)."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from movelab import executor
from movelab.cli import app
from typer.testing import CliRunner


def _silent_listener() -> tuple[socket.socket, int]:
    """A TCP port that accepts connections and never says a word."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    held: list[object] = []

    def accept() -> None:
        while True:
            try:
                held.append(s.accept())
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return s, s.getsockname()[1]


def test_a_scheduler_that_never_answers_fails_after_the_timeout(monkeypatch) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setattr(executor, "CONNECT_TIMEOUT", 1.0)
    s, port = _silent_listener()
    try:
        t0 = time.monotonic()
        with pytest.raises(ConnectionError, match="did not answer in 1 s"):
            executor.make_executor(f"tcp://127.0.0.1:{port}")
        assert time.monotonic() - t0 < 15
        # The command line too: one line, exit 2.
        r = CliRunner().invoke(app, ["reproduce", "--cluster", f"tcp://127.0.0.1:{port}", "rowclone-latency"])
        assert r.exit_code == 2 and "did not answer" in r.output, r.output
    finally:
        s.close()


def test_a_refused_address_fails_at_once_and_a_bad_port_is_named() -> None:
    pytest.importorskip("distributed")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    t0 = time.monotonic()
    with pytest.raises(ConnectionError, match="cannot reach the Dask scheduler"):
        executor.make_executor(f"tcp://127.0.0.1:{port}")
    assert time.monotonic() - t0 < 5
    with pytest.raises(ValueError, match="port must be a number from 1 to 65535"):
        executor.make_executor("tcp://127.0.0.1:99999")


def test_a_script_without_a_main_guard_runs_a_sweep_on_a_pool(tmp_path: Path) -> None:
    script = tmp_path / "readme_py.py"
    script.write_text(textwrap.dedent("""
        from movelab import sweep
        print("top level ran", flush=True)
        df = sweep.run({"simulator": "dram", "config": "ddr3-1600k-bench",
                        "workload": {"kind": "random", "count": 500},
                        "axes": {"workload.seed": [1, 2, 3, 4]}}, workers=2)
        print("points", len(df), int(df["error"].notna().sum()), flush=True)
    """))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("top level ran") == 1, r.stdout
    assert "points 4 0" in r.stdout and "freeze_support" not in r.stderr
