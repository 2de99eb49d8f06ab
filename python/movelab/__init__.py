"""movelab: a laboratory for bulk data movement (memory copy and initialisation) on server platforms.

Two halves share one vocabulary of operations:

* :mod:`movelab.dram` -- a fast, command-level DRAM simulator with in-DRAM copy (RowClone) and energy;
* :mod:`movelab.host` -- a real asynchronous copy runtime with a software copy engine, IPC, and the
  benchmarks that measure this machine;
* :func:`movelab.simulate` -- one entry point for every simulated system (the platform, two hosts
  over PCIe, the network-I/O platform), returning one report;
* :mod:`movelab.record` -- a real program's copies and initialisations recorded on this machine
  (``record.run``) and replayed on simulated platforms (:func:`replay`).

The heavy lifting is in Rust (``movelab._core``); this package is a thin, idiomatic layer over it.
"""

from typing import Any

from movelab.systems import simulate, systems

__all__ = ["__version__", "replay", "simulate", "systems"]


def replay(trace: Any, platform: Any = "rowclone-system", mechanism: str = "cpu", **kw: Any) -> Any:
    """Replays a recording (``movelab record``) on a simulated platform under one mechanism; see
    :func:`movelab.record.replay.replay`."""
    from movelab.record.replay import replay as _replay

    return _replay(trace, platform, mechanism, **kw)


def __getattr__(name: str) -> Any:
    # The version is looked up when first asked for: importing importlib.metadata is a good part of
    # the command line's start.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("movelab")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
            v = "0.0.0"
        globals()["__version__"] = v
        return v
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
