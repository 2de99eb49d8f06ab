"""Recording: ``run`` starts the command under an LD_PRELOAD interposer (``interposer.c``, built at first use with
the system C compiler) that records every ``memcpy``, ``memmove``, ``memset`` (and ``_chk``
variants), ``calloc`` and moving ``realloc`` with its time, duration, thread, size, addresses and
call site; and, where ``perf`` may record kernel tracepoints, first-touch zeroing and copy-on-write
page faults and the bytes of ``read``/``write``/``send``/``recv``-like calls. The result is a
DataFrame of the schema in :data:`movelab.record.trace.COLUMNS`; ``df.attrs["movelab"]`` holds the
recording's metadata (command, exit status, wall time, processes, what could not be recorded).
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from movelab.record import _build, kernel
from movelab.record.trace import _align, _size_class, add_clock_floors, conform, read_process_file, write_parquet

__all__ = ["run"]

#: What the interposer cannot see, whatever the machine (stated in every recording's metadata).
ALWAYS_UNRECORDED = [
    "copies the compiler inlined (fixed-size memcpy/memset become moves; calls inside the C library, "
    "e.g. in stdio or in realloc, do not pass through the dynamic linker): only calls to the exported "
    "functions are seen",
    "statically linked programs, and calls made in other libraries' constructors before the interposer's "
    "constructor, are not seen; programs that clear LD_PRELOAD for their children lose those children",
    "processes ended by a signal or _exit() lose their last unflushed records (up to 4096 per thread) "
    "and their footer",
]


def _check_cmd(cmd: Any) -> list[str]:
    if isinstance(cmd, (str, bytes)) or not isinstance(cmd, Sequence) or not cmd:
        raise TypeError("cmd must be a non-empty list of strings (the program and its arguments)")
    out = [str(c) for c in cmd]
    if shutil.which(out[0]) is None and not Path(out[0]).is_file():
        raise FileNotFoundError(f"cannot record {out[0]!r}: no such program")
    return out


def run(cmd: Sequence[str], out: str | Path | None = None, *, min_bytes: int = 0, kernel_events: bool = True,
        force: bool = False, timed: bool = True, timeout_s: float | None = None,
        sched: bool = True) -> pd.DataFrame:
    """Runs ``cmd`` (a list: program and arguments) and returns its recorded data movement.

    ``min_bytes``: calls smaller than this are counted per kind and size class (count, bytes, time)
    instead of one row each (bounds the trace of programs that make millions of tiny calls).
    ``kernel_events``: also record kernel-side movement with perf where allowed. ``out``: also write
    the recording as Parquet there (refused if it exists, unless ``force``). ``timed=False`` skips
    the two clock reads per call (no ``dur_ns``), for measuring the interposer's own cost.
    ``timeout_s``: stop the program (SIGKILL) after this long and raise ``TimeoutError``.
    ``sched=False``: do not watch the threads' scheduling (no ``preempted``, ``offcpu_ns``,
    ``since_sched_ns``), for measuring that watch's own cost."""
    argv = _check_cmd(cmd)
    if isinstance(min_bytes, bool) or not isinstance(min_bytes, int) or min_bytes < 0:
        raise ValueError(f"min_bytes must be a non-negative integer, got {min_bytes!r}")
    if timeout_s is not None and (isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float))
                                  or not math.isfinite(timeout_s) or timeout_s <= 0):
        raise ValueError(f"timeout_s must be a positive number of seconds (None: no limit), got {timeout_s!r}")
    if out is not None:
        out = Path(out)
        if out.is_dir():
            raise IsADirectoryError(f"{out} is a directory; give a file name")
        if out.exists() and not force:
            raise FileExistsError(f"{out} exists; pass force=True (--force) to overwrite it")
    lib = _build.library()
    not_recorded = [*ALWAYS_UNRECORDED, kernel.use_window_status()]
    use_perf = False
    if kernel_events:
        use_perf, why = kernel.status()
        if not use_perf:
            not_recorded.append(f"kernel-side movement (page-fault zeroing, copy-on-write, read/write/send/recv "
                                f"bytes): {why}")
    else:
        not_recorded.append("kernel-side movement: not asked for")
    thp = _read("/sys/kernel/mm/transparent_hugepage/enabled")
    if use_perf and "[never]" not in thp:
        not_recorded.append(f"transparent huge pages are enabled here ({thp.strip()}): a first-touch fault on a "
                            f"huge page zeroes 2 MiB, counted as 4 KiB")
    if use_perf:
        not_recorded.append("sendfile/splice/copy_file_range/io_uring/mmap'd file I/O: not counted as kernel copies")

    with tempfile.TemporaryDirectory(prefix="movelab-record-") as tmp:
        rec_dir = Path(tmp) / "proc"
        rec_dir.mkdir()
        env = dict(os.environ)
        env["MOVELAB_RECORD_DIR"] = str(rec_dir)
        env["MOVELAB_RECORD_MIN_BYTES"] = str(min_bytes)
        env["MOVELAB_RECORD_TIME"] = "1" if timed else "0"
        env["MOVELAB_RECORD_SCHED"] = "1" if sched else "0"
        preload = f"{lib} {env['LD_PRELOAD']}" if env.get("LD_PRELOAD") else str(lib)
        data = Path(tmp) / "perf.data"
        if use_perf:
            full = kernel.wrap(["env", f"LD_PRELOAD={preload}", *argv], data)
        else:
            env["LD_PRELOAD"] = preload
            full = argv
        t0 = time.monotonic_ns()
        # Its own process group, so that a timeout or Ctrl-C reaches perf, the program and its children.
        proc = subprocess.Popen(full, env=env, start_new_session=True)
        try:
            status = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop(proc, signal.SIGKILL)
            raise TimeoutError(f"{argv[0]} ran longer than {timeout_s} s and was stopped") from None
        except KeyboardInterrupt as e:
            # The signal that stopped movelab (Ctrl-C's SIGINT, or SIGTERM/SIGHUP: Terminated) goes
            # on to the program's process group.
            _stop(proc, getattr(e, "signum", signal.SIGINT))
            raise
        t1 = time.monotonic_ns()
        heads, frames = [], []
        for f in sorted(rec_dir.glob("*.bin")):
            h, df = read_process_file(f)
            heads.append(h)
            frames.append(df)
        if not heads:
            raise RuntimeError(f"{argv[0]} ran (exit status {status}) but the interposer recorded nothing: "
                               f"the program is statically linked, or removed LD_PRELOAD")
        df = pd.concat(frames, ignore_index=True) if frames else conform(pd.DataFrame())
        start = t0
        df["t_ns"] = df["t_ns"] - start
        procs = _processes(heads)
        if use_perf:
            faults, sums, switches, touches = kernel.parse(data)
            k = _kernel_rows(faults, sums, procs, start, touches)
            last_exe = {p["pid"]: p["exe"] for p in procs}  # procs are in start order: the last image wins
            k["exe"] = k["pid"].map(last_exe).astype("string")
            pf = k[k["kind"].str.startswith("page_") & k["t_ns"].notna()]
            df["faults"] = _inside(df, pf["tid"], pf["t_ns"])
            df["switches"] = _inside(df, switches["tid"], switches["t_abs"] - start)
            df = pd.concat([df, k], ignore_index=True)
        ends = [h["end_ns"] for h in heads if h.get("end_ns")]
        # The program's own time: from its first image's start to its last footer (perf's own start
        # and the interposer's start-up are outside it); the wall time when no process ended normally.
        program_ns = max(ends) - min(h["t0_ns"] for h in heads) if ends else t1 - t0
    df = conform(df)
    df = df.sort_values(["t_ns"], kind="stable", na_position="last").reset_index(drop=True)
    # Calls recorded one by one (an aggregate row of one call, below --min-bytes, is never watched).
    single = df[(df["source"] == "interposer") & (df["count"] == 1) & df["size"].notna() & df["dur_ns"].notna()]
    watched = int(single["preempted"].notna().sum())
    if timed and len(single) and not watched:
        not_recorded.append("the threads' scheduling inside the calls (preempted, offcpu_ns, since_sched_ns): "
                            + ("not asked for" if not sched else "perf_event_open of a task-clock counter on "
                               "the recorded threads failed here (perf_event_paranoid, a seccomp filter, or a "
                               "kernel without perf events)"))
    meta = {
        "command": argv, "exit_status": status, "wall_ns": t1 - t0, "program_ns": program_ns,
        "min_bytes": min_bytes, "timed": timed, "sched": sched,
        "sched_watched_calls": watched, "sched_preempted_calls": int(single["preempted"].fillna(False).sum()),
        "kernel_events": use_perf, "processes": procs, "not_recorded": not_recorded, "machine": _machine(),
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    add_clock_floors(df, meta)
    df.attrs["movelab"] = meta
    if out is not None:
        from movelab._util import atomic_path

        out.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(out) as tmp_out:
            write_parquet(df, meta, tmp_out)
    return df


def _inside(calls: pd.DataFrame, tids: pd.Series, times: pd.Series) -> pd.Series:
    """For each timed call, how many of the events (a thread id and a time each) its thread had
    between the call's start and its end."""
    out = pd.Series(pd.NA, index=calls.index, dtype="Int64")
    ev = pd.DataFrame({"tid": tids.to_numpy(), "t": times.to_numpy(dtype=np.int64)})
    by_tid = {tid: np.sort(g["t"].to_numpy()) for tid, g in ev.groupby("tid")}
    timed = calls[calls["t_ns"].notna() & calls["dur_ns"].notna()]
    out.loc[timed.index] = 0
    for tid, g in timed.groupby("tid"):
        t = by_tid.get(tid)
        if t is None:
            continue
        start = g["t_ns"].to_numpy(dtype=np.int64)
        end = start + g["dur_ns"].to_numpy(dtype=np.int64)
        out.loc[g.index] = np.searchsorted(t, end, side="right") - np.searchsorted(t, start, side="left")
    return out


def _stop(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        proc.wait()


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _processes(heads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for h in sorted(heads, key=lambda h: (h["t0_ns"], h["pid"], h["image"])):
        out.append({k: h.get(k) for k in ("pid", "ppid", "image", "exe", "complete", "minor_faults", "major_faults",
                                          "own_write_bytes", "own_writes", "clock_ns")})
    return out


def _kernel_rows(faults: pd.DataFrame, sums: pd.DataFrame, procs: list[dict[str, Any]], start: int,
                 touches: pd.DataFrame | None = None) -> pd.DataFrame:
    rows = []
    if touches is not None and len(touches):
        # Where the kernel's copies went: one row per system call, its bytes 0 (the per-process sums
        # below count them), its size the bytes copied, its destination the user buffer.
        size = touches["bytes"].to_numpy(np.int64)
        rows.append(pd.DataFrame({
            "source": "kernel", "kind": touches["kind"], "pid": touches["pid"], "tid": touches["tid"],
            "t_ns": touches["t_abs"] - start, "count": 1, "size": size, "bytes": 0,
            "size_class": _size_class(size), "dst": pd.array(touches["addr"], dtype="UInt64"),
            "dst_align": _align(touches["addr"].to_numpy(np.uint64)),
        }))
    if len(faults):
        moved = faults["kind"].map(kernel.moved_bytes).astype(np.int64)
        page = (faults["addr"] // kernel.PAGE) * kernel.PAGE
        rows.append(pd.DataFrame({
            "source": "kernel", "kind": faults["kind"], "pid": faults["pid"], "tid": faults["tid"],
            "t_ns": faults["t_abs"] - start, "count": 1, "size": moved, "bytes": moved,
            "size_class": np.where(moved > 0, 13, 0),
            "src": pd.array(np.where(faults["kind"] == "page_cow", page, 0), dtype="UInt64"),
            "dst": pd.array(page, dtype="UInt64"), "dst_align": 4096,
        }))
        cow = rows[-1]["kind"] != "page_cow"
        rows[-1].loc[cow, "src"] = None
    if len(sums):
        own: dict[int, list[int]] = {}
        parent: dict[int, int] = {}
        for p in procs:
            o = own.setdefault(p["pid"], [0, 0])
            o[0] += p.get("own_writes") or 0
            o[1] += p.get("own_write_bytes") or 0
            parent.setdefault(p["pid"], p.get("ppid"))
        s = sums.copy()

        def take(pid: int, n: int, b: int) -> tuple[int, int]:
            """Subtracts up to n writes and b bytes from pid's write rows; what was left over."""
            for i in s.index[(s["pid"] == pid) & (s["kind"] == "write")]:
                dn, db = min(n, int(s.at[i, "count"])), min(b, int(s.at[i, "bytes"]))
                s.at[i, "count"] -= dn
                s.at[i, "bytes"] -= db
                n, b = n - dn, b - db
            return n, b

        for pid, (n, b) in own.items():
            n, b = take(pid, n, b)
            # A child started with vfork() writes its parent's buffered records to the parent's
            # file before it execs: those writes are the child's to perf, their bytes the parent's.
            for child in (c for c, pp in parent.items() if pp == pid):
                if n > 0 or b > 0:
                    n, b = take(child, n, b)
        s = s[s["count"] > 0]
        rows.append(pd.DataFrame({"source": "kernel", "kind": s["kind"], "pid": s["pid"], "count": s["count"],
                                  "bytes": s["bytes"]}))
    return conform(pd.concat(rows, ignore_index=True)) if rows else conform(pd.DataFrame())


def _machine() -> dict[str, Any]:
    from movelab.record.machine import describe

    try:
        return describe()
    except OSError:
        return {}
