"""The run guard end to end from Python: whole runs through ``movelab.simulate`` and the
``movelab run`` command driven into what stops a run (a core waiting for what never comes,
Ctrl-C sent to a long run), each checked for a clear error and no hang (every run has a
deadline)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import movelab
import pytest

STORM = """name = "storm"
iterations = 1
[[ops]]
kind = "interrupt"
target = 0
[[handler]]
kind = "compute"
n = 10
[[handler]]
kind = "interrupt"
target = 0
"""

CONSUMER = 'name = "consumer"\niterations = 2\n[[ops]]\nkind = "ring_pop"\nring = "q"\n'
RING = {"rings": [{"name": "q", "base": 0x7000_0000, "slots": 4, "slot_bytes": 64, "doorbell": True}]}


def _movelab() -> list[str]:
    return [sys.executable, "-m", "movelab"]


def test_a_core_waiting_for_what_never_comes_is_a_clear_error(tmp_path: Path) -> None:
    w = tmp_path / "consumer.toml"
    w.write_text(CONSUMER)
    t = time.monotonic()
    with pytest.raises(ValueError, match=r"^simulation stalled: nothing retired from 0 ns to \d+ ns; core 0: "):
        movelab.simulate("zhao-uma-emc", str(w), RING)
    assert time.monotonic() - t < 60


SPIN = 'name = "spin"\niterations = 100000000\n[[ops]]\nkind = "compute"\nn = 1000\n'


def test_a_handler_that_interrupts_its_own_core_is_a_clear_error(tmp_path: Path) -> None:
    w = tmp_path / "storm.toml"
    w.write_text(STORM)
    t = time.monotonic()
    p = subprocess.run([*_movelab(), "run", "rowclone-system", str(w), "--format", "json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and p.stdout == ""
    assert "a loop that feeds itself" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert time.monotonic() - t < 120


def test_ctrl_c_stops_a_run_that_would_not_end_promptly_with_a_clean_message(tmp_path: Path) -> None:
    # A program of 10^11 instructions: only Ctrl-C ends it in time.
    w = tmp_path / "spin.toml"
    w.write_text(SPIN)
    p = subprocess.Popen([*_movelab(), "run", "rowclone-system", str(w), "--format", "json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         # A shell that started us in the background may have SIGINT ignored.
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(3)
        assert p.poll() is None, f"the run ended on its own: {p.communicate()}"
        p.send_signal(signal.SIGINT)
        t = time.monotonic()
        out, err = p.communicate(timeout=20)
        took = time.monotonic() - t
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, (p.returncode, err)
    assert err.strip() == "movelab: interrupted", err
    assert "Traceback" not in err and out == ""
    assert took < 10, took


if os.name != "posix":  # pragma: no cover
    pytestmark = pytest.mark.skip("signals are POSIX")
