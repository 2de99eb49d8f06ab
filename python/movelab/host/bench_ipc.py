"""The IPC benchmark (section 4.5 of the I/OAT paper): latency and bandwidth vs message size for
the single-copy path (process_vm_readv/writev), the shared-memory two-copy path and the plain
socket, each measured for real between this process and a second process it spawns.

Latency is half the mean round trip of a ping-pong (write, then read the echo); bandwidth is a
stream of one-way writes with a window of up to 8 in flight, ended by a 1-byte acknowledgement.
The timing loops run in Rust (``movelab_host::ipc::bench``) so that Python's overhead is not
measured. Every echoed message is compared byte for byte.

``python -m movelab.host.bench_ipc [--quick]`` prints the rows as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable

from movelab.host.ipc import connect, listen

PATHS = ["single-copy", "two-copy", "socket"]
DEFAULT_SIZES = [64, 1024, 4096, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20]
QUICK_SIZES = [64, 4096, 65536, 1 << 20, 4 << 20]


def _serve(sock: str, prefer: str, sizes: list[int], quick: bool) -> None:
    with connect(sock, prefer=prefer, timeout=30.0) as conn:
        conn._raw.bench_serve(sizes, quick)


def run_ipc(
    quick: bool = False,
    sizes: list[int] | None = None,
    paths: list[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[dict]:
    """Measure every path; one row per (path, size) with ``engine`` ("ipc"), ``size_bytes``,
    ``path`` (the path the transfers really took), ``requested_path``, ``latency_ns``,
    ``bandwidth_mb_s``, iteration counts and ``note`` (why single copy fell back, if it did)."""
    sizes = list(sizes) if sizes is not None else (QUICK_SIZES if quick else DEFAULT_SIZES)
    if not sizes or any(int(s) < 0 for s in sizes):
        raise ValueError(f"sizes must be a non-empty list of non-negative byte counts, got {sizes}")
    rows: list[dict] = []
    for prefer in paths or PATHS:
        if prefer not in PATHS:
            raise ValueError(f"unknown IPC path {prefer!r} (expected one of {PATHS})")
        if progress:
            progress(prefer)
        with tempfile.TemporaryDirectory(prefix="movelab-ipc-") as tmp:
            sock = os.path.join(tmp, "bench.sock")
            with listen(sock, prefer=prefer, timeout=30.0) as lst:
                cmd = [
                    sys.executable, "-m", "movelab.host.bench_ipc", "--serve", sock,
                    "--prefer", prefer, "--sizes", ",".join(str(int(s)) for s in sizes),
                ]
                if quick:
                    cmd.append("--quick")
                proc = subprocess.Popen(cmd)
                try:
                    with lst.accept(timeout=60.0) as conn:
                        measured = conn._raw.bench_drive([int(s) for s in sizes], quick)
                    if proc.wait(timeout=60) != 0:
                        raise RuntimeError(f"the IPC benchmark peer exited with status {proc.returncode}")
                finally:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
        for r in measured:
            rows.append({"engine": "ipc", "requested_path": prefer, **r})
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serve", help="(internal) run the echoing peer against this socket")
    ap.add_argument("--prefer", default="single-copy")
    ap.add_argument("--sizes", help="comma-separated message sizes in bytes")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    sizes = [int(s) for s in a.sizes.split(",")] if a.sizes else None
    if a.serve:
        _serve(a.serve, a.prefer, sizes or (QUICK_SIZES if a.quick else DEFAULT_SIZES), a.quick)
        return
    print(json.dumps(run_ipc(quick=a.quick, sizes=sizes), indent=1))


if __name__ == "__main__":
    main()
