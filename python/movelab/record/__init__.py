"""Recording a real program's bulk data movement on this machine, and replaying it on a simulated
platform (docs/record-replay.md).

>>> from movelab import record
>>> df = record.run(["python3", "-c", "pass"])            # doctest: +SKIP
>>> df.groupby("kind")["bytes"].sum()                       # doctest: +SKIP

:func:`run` starts the command under an LD_PRELOAD interposer (``interposer.c``, built at first use
with the system C compiler) and, where ``perf`` may record kernel tracepoints, perf
(:mod:`movelab.record.recorder`); :func:`read` reads a recording back
(:mod:`movelab.record.trace`); :mod:`movelab.record.replay` replays it on a platform, each call in
the cache state :mod:`movelab.record.cachestate` derives from the recorded addresses, with the
per-call cost :mod:`movelab.record.calibration` measures here (``calibrate.c``). The heavy
modules (pandas) load on first use, so the CLI starts quickly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["TraceError", "read", "run"]


def run(cmd: Any, out: str | Path | None = None, **kw: Any) -> Any:
    """Runs ``cmd`` and returns its recorded data movement as a DataFrame; see
    :func:`movelab.record.recorder.run` for the options."""
    from movelab.record.recorder import run as _run

    return _run(cmd, out, **kw)


def read(path: str | Path) -> Any:
    """A recording written by ``movelab record``: (events, metadata); see
    :func:`movelab.record.trace.read`."""
    from movelab.record.trace import read as _read

    return _read(path)


def __getattr__(name: str) -> Any:
    if name == "TraceError":
        from movelab.record.trace import TraceError

        return TraceError
    raise AttributeError(f"module 'movelab.record' has no attribute {name!r}")
