"""``movelab bench record``: real programs from Debian packages recorded on this machine and
replayed: a compile, a shell pipeline, Python start-up, SQLite, a Redis server under its own
benchmark on loopback and the zstd compressor on a generated corpus. For each: the interposer's
slowdown (median of repeated runs with and without it), the share of the program's time inside
bulk-movement calls, the baseline replay on this machine's platform against the measured time
inside the calls (the bridge's error), and the what-if of every mechanism. Writes
``OUT/record-replay.json`` (one row per program, read by ``movelab report``), the recordings and
each program's what-if table and plot."""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

if TYPE_CHECKING:  # pandas is imported where it is used: every CLI command imports this module
    import pandas as pd

console = Console()

PORT = 6391
_REDIS = (f"redis-server --port {PORT} --save '' --appendonly no --bind 127.0.0.1 --logfile /dev/null & "
          f"for i in $(seq 100); do redis-cli -p {PORT} ping >/dev/null 2>&1 && break; sleep 0.05; done; "
          f"redis-benchmark -p {PORT} -h 127.0.0.1 -q -n 5000 -d 1024 -t set,get,lpush,lrange_100 >/dev/null; "
          f"redis-cli -p {PORT} shutdown nosave >/dev/null; wait")
_SHELL = ("seq 1 200000 | sort -r | gzip -c > {tmp}/s.gz && gunzip -c {tmp}/s.gz | md5sum > /dev/null && "
          "seq 1 50000 | sed 's/1/one/g' | awk '{{n += length($0)}} END {{print n}}' > /dev/null")
_SQL = ("create table t(a integer primary key, b text, c blob);"
        "with recursive r(i) as (select 1 union all select i + 1 from r where i < 50000) "
        "insert into t select i, printf('row %d', i), randomblob(200) from r;"
        "create index tb on t(b); select count(*), sum(length(c)) from t where b like 'row 1%';"
        "update t set c = randomblob(300) where a % 7 = 0; vacuum;")

#: The sixth program's input (docs/record-replay.md, "Demonstrations"): 400,000 lines, 20.9 MB, of
#: numbers in an order fixed by ``shuf``'s ``--random-source`` (the same bytes on every run with the
#: same coreutils and awk), generated in ``{tmp}`` before the program's runs.
_CORPUS = ("seq 1 400000 | shuf --random-source=<(seq 1 4000000) | awk '{{printf \"%07d %s %x row-%d of the "
           "generated table\\n\", NR, $1, $1 * 7, $1 % 977}}' > {tmp}/corpus.txt")
#: zstd compressing the corpus at level 3 on one thread, then decompressing it (``-f``: the slowdown's
#: repeated runs overwrite the outputs).
_ZSTD = "zstd -q -f -3 -T1 {tmp}/corpus.txt -o {tmp}/c.zst && zstd -q -f -d {tmp}/c.zst -o {tmp}/d.txt"

#: name -> (description, needs on PATH, shell command with {tmp} and {src}, focus executable or "")
PROGRAMS: dict[str, tuple[str, list[str], str, str]] = {
    "gcc": ("gcc -O2 compiling movelab's two C sources (a small tree)", ["gcc"],
            "gcc -O2 -pthread -c {src}/record_known.c -o {tmp}/a.o && gcc -O2 -fPIC -c {src}/interposer.c "
            "-o {tmp}/b.o", ""),
    "shell": ("a shell pipeline: seq, sort, gzip, gunzip, md5sum, sed, awk", ["seq", "sort", "gzip", "awk"],
              _SHELL, ""),
    "python": ("Python start-up: python3 -c 'import json, decimal'", ["python3"],
               "/usr/bin/python3 -c 'import json, decimal'", ""),
    "sqlite": ("sqlite3: 50,000 rows inserted, indexed, queried, updated, vacuumed (a file database)",
               ["sqlite3"], "rm -f {tmp}/t.db && sqlite3 {tmp}/t.db \"" + _SQL + "\"", "sqlite3"),
    "redis": ("redis-server under redis-benchmark on loopback (20,000 requests, 1 KiB values)",
              ["redis-server", "redis-benchmark", "redis-cli"], _REDIS, "redis-server"),
    "zstd": ("zstd -3 on one thread compressing and decompressing a generated 20.9 MB text corpus",
             ["zstd", "seq", "shuf", "awk"], _ZSTD, "zstd"),
}
#: name -> a shell command (with {tmp}) run once before a program's runs: its input, generated
#: outside the timed and recorded command (so the slowdown and the share are the program's own).
SETUP: dict[str, str] = {"zstd": _CORPUS}


def _timed(cmd: str, env: dict[str, str] | None = None) -> float:
    t = time.monotonic()
    subprocess.run(["bash", "-c", cmd], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=600)
    return time.monotonic() - t


def _slowdown(cmd: str, lib: Path, runs: int) -> dict[str, Any]:
    """Median wall times of ``runs`` alternating runs without and with the interposer (its clock
    reads off, nothing written but its records), and their ratio; then the cost of the scheduling
    watch: ``runs`` alternating runs with the calls timed, without and with it (no perf)."""
    plain, pre, timed, watched = [], [], [], []
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, LD_PRELOAD=str(lib), MOVELAB_RECORD_DIR=d, MOVELAB_RECORD_TIME="0")
        t_env = dict(env, MOVELAB_RECORD_TIME="1", MOVELAB_RECORD_SCHED="0")
        w_env = dict(env, MOVELAB_RECORD_TIME="1", MOVELAB_RECORD_SCHED="1")
        for _ in range(runs):
            plain.append(_timed(cmd))
            pre.append(_timed(cmd, env))
            for f in Path(d).glob("*.bin"):
                f.unlink()
        for _ in range(runs):
            timed.append(_timed(cmd, t_env))
            watched.append(_timed(cmd, w_env))
            for f in Path(d).glob("*.bin"):
                f.unlink()
    mp, mq = statistics.median(plain), statistics.median(pre)
    mt, mw = statistics.median(timed), statistics.median(watched)
    return {"plain_s": mp, "plain_spread_s": max(plain) - min(plain), "interposed_s": mq,
            "interposed_spread_s": max(pre) - min(pre), "slowdown": mq / mp,
            "timed_s": mt, "timed_spread_s": max(timed) - min(timed), "timed_sched_s": mw,
            "timed_sched_spread_s": max(watched) - min(watched), "sched_watch_slowdown": mw / mt}


def _focus(df: Any, exe: str) -> Any:
    """The rows of the processes running ``exe`` (recorded as the resolved executable: Debian's
    redis-server is a link to redis-check-rdb)."""
    if not exe:
        return df
    path = shutil.which(exe)
    real = os.path.realpath(path) if path else exe
    sel = df[df["exe"].fillna("").isin([real, path])]
    sel.attrs = dict(df.attrs)
    return sel


def _validation_classes(reps: dict[str, Any]) -> pd.DataFrame:
    """Per operation and size class: the measured time (validated calls, clock reads' cost
    removed) and each estimator's prediction and error."""
    base = reps["tracked"].classes
    out = base[["op", "size_class", "size_range", "calls", "bytes", "measured_net_ns", "share_warm", "share_llc",
                "share_cold", "sim_ns_warm", "sim_ns_llc", "sim_ns_cold", "call_cost_ns", "clamped_states",
                "predicted_unclamped_ns"]].copy()
    for mode, r in reps.items():
        c = r.classes.set_index(["op", "size_class"])["predicted_ns"]
        out[f"{mode}_ns"] = [float(c.loc[(o, k)]) for o, k in zip(out["op"], out["size_class"], strict=True)]
        out[f"{mode}_error_pct"] = 100 * (out[f"{mode}_ns"] / out["measured_net_ns"] - 1)
    return out


def record_program(name: str, out: Path, runs: int) -> tuple[Any, dict[str, Any]]:
    """Records one demonstration program into ``OUT/NAME.parquet`` after measuring the
    interposer's slowdown on it: (the recording, the slowdown figures)."""
    from movelab import record
    from movelab.record import _build

    _desc, _needs, template, _exe = PROGRAMS[name]
    src = Path(__file__).parent
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        # Both sources ship as package data beside this module (a wheel has them too).
        shutil.copy(src / "interposer.c", d / "interposer.c")
        shutil.copy(src / "record_known.c", d / "record_known.c")
        cmd = template.format(tmp=tmp, src=tmp)
        if name in SETUP:
            setup = subprocess.run(["bash", "-c", SETUP[name].format(tmp=tmp)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True, timeout=600)
            if setup.returncode:
                raise RuntimeError(f"{name}: generating its input failed (exit status {setup.returncode}): "
                                   f"{setup.stderr.strip()[-500:]}")
        lib = _build.library()
        slow = _slowdown(cmd, lib, runs)
        trace = out / f"{name}.parquet"
        df = record.run(["bash", "-c", cmd], trace, force=True, timeout_s=600)
    return df, slow


def run_program(name: str, out: Path, platform: Any, samples: int, runs: int,
                costs: dict[str, Any] | None = None, what_if_cache: str = "tracked",
                recorded: tuple[Any, dict[str, Any]] | None = None,
                gap_edges_ns: list[float] | None = None, what_if_too: bool = True,
                alloc_cost: dict[str, Any] | None = None, what_if_samples: int | None = None,
                dst_write: dict[str, float] | None = None, llc_boundary: float | None = None,
                cold_copy: dict[int, float] | None = None, streams: bool = False,
                cold_copy_boundary: float | None = None,
                stream_copy: dict[int, float] | None = None) -> dict[str, Any]:
    """Records (unless ``recorded`` gives the recording and slowdown) and replays one program (the
    baseline's validation, then the what-if of every mechanism unless ``what_if_too`` is false).
    ``alloc_cost``: the allocator's measured path (:func:`movelab.record.calibration.alloc_costs`)
    for the tracked replays. ``what_if_samples``: calls replayed per size class in the what-if
    (default ``samples``; the what-if simulates every class under 11 mechanisms). ``dst_write``: the
    destination write cost from the recording machine's fill probe
    (:func:`movelab.record.calibration.dst_write_costs`) for the tracked replay; ``llc_boundary``,
    its last-level boundary (:func:`movelab.record.calibration.llc_boundary`); ``cold_copy``, with
    ``dst_write``, the isolated cold-copy rule (:func:`movelab.record.calibration.cold_copy_extra`);
    ``streams``, with ``cold_copy``, the rule by context (only isolated copies take the cold-copy
    probe, by ``cold_copy_boundary``: :mod:`movelab.record.streams`); ``stream_copy``, with
    ``streams``, the streaming-copy rule (:func:`movelab.record.calibration.stream_copy_extra`)."""
    from movelab.record import calibration
    from movelab.record.kernel import TOUCH_KINDS
    from movelab.record.replay import replay

    desc, _needs, _template, exe = PROGRAMS[name]
    df, slow = recorded if recorded is not None else record_program(name, out, runs)
    meta = df.attrs["movelab"]
    f = _focus(df, exe)
    user = f[f["source"] == "interposer"]
    inside = float(user["dur_ns"].sum())
    prog = float(meta["program_ns"])
    k = f[f["source"] == "kernel"]
    # Calls inside which the thread took a page fault include the kernel's zeroing or copying in
    # their measured time; the validation compares the calls without one (and says how much time
    # the others hold).
    # Calls during which the thread was switched out (preempted: a 4 ms time slice inside an
    # 8-byte memcpy on this shared machine) hold other programs' time: left out too.
    # The interposer's own watch of the thread's scheduling (``preempted``) marks them too, with or
    # without perf.
    from movelab.record.trace import disturbed as _disturbed

    disturbed = _disturbed(user)
    # the kernel's copies to and from user buffers stay: the cache-state tracking counts them
    import pandas as pd

    clean = pd.concat([user[~disturbed], f[f["kind"].isin(TOUCH_KINDS)]])
    clean.attrs = dict(f.attrs)
    faulted_ms = float(user.loc[user["faults"].fillna(0) > 0, "dur_ns"].sum()) / 1e6
    switched = (user["switches"].fillna(0) > 0) | user["preempted"].astype("boolean").fillna(False).astype(bool)
    switched_ms = float(user.loc[switched, "dur_ns"].sum()) / 1e6
    # Calls slower than any copy's own work (trace.stopped: the CPU stopped inside them, at the
    # timer tick), left out too.
    from movelab.record.trace import stopped as _stopped

    stop = _stopped(user) & ~switched & ~(user["faults"].fillna(0) > 0)
    stopped_ms = float(user.loc[stop, "dur_ns"].sum()) / 1e6
    # The baseline replay three ways: cold and warm (every call in one state: the bounds) and
    # tracked (each call in the state its recorded addresses give, plus the calibrated per-call
    # cost): the last is the stated error.
    # One simulation cache for the three: the tracked replay simulates every class in each state,
    # which are the cold and warm replays' own simulations (the same runs, not repeated).
    sims: dict = {}
    reps = {mode: replay(clean, platform, "cpu", samples=samples, cache=mode,
                         call_cost=costs if mode == "tracked" else None,
                         gap_edges_ns=gap_edges_ns if mode == "tracked" else None,
                         alloc_cost=alloc_cost if mode == "tracked" else None,
                         dst_write=dst_write if mode == "tracked" else None,
                         llc_boundary=llc_boundary if mode == "tracked" else None,
                         cold_copy=cold_copy if mode == "tracked" and dst_write is not None else None,
                         streams=streams and mode == "tracked" and dst_write is not None and cold_copy is not None,
                         cold_copy_boundary=cold_copy_boundary if mode == "tracked" and streams else None,
                         stream_copy=stream_copy if mode == "tracked" and streams and dst_write is not None
                         and cold_copy is not None else None,
                         _cache=sims)
            for mode in ("tracked", "cold", "warm")}
    del sims
    net = reps["tracked"].summary["measured_net_ns"]
    err = reps["tracked"].summary["movement_ns"] / net - 1 if net else float("nan")
    _validation_classes(reps).to_csv(out / f"{name}-validation.csv", index=False)
    row: dict[str, Any] = {
        "program": name, "description": desc, "processes": len(meta["processes"]),
        "calls": int(user["count"].sum()), "bytes_user": int(user["bytes"].sum()),
        "page_zero": int((k["kind"] == "page_zero").sum()), "page_cow": int((k["kind"] == "page_cow").sum()),
        "syscall_bytes": int(k.loc[~k["kind"].str.startswith("page"), "bytes"].sum()),
        "program_ms": prog / 1e6, "inside_calls_ms": inside / 1e6, "inside_faulted_calls_ms": faulted_ms,
        "inside_switched_calls_ms": switched_ms,
        "switched_calls": int(switched.sum()),
        "stopped_calls": int(stop.sum()), "inside_stopped_calls_ms": stopped_ms,
        "preempted_calls": int(user["preempted"].astype("boolean").fillna(False).astype(bool).sum()),
        "sched_watched_calls": int(user["preempted"].notna().sum()),
        "offcpu_ms": float(user["offcpu_ns"].fillna(0).sum()) / 1e6,
        "validated_calls_net_ms": net / 1e6,
        "share_in_movement_pct": 100 * inside / prog if prog else float("nan"),
        "plain_s": slow["plain_s"], "plain_spread_s": slow["plain_spread_s"], "interposed_s": slow["interposed_s"],
        "interposed_spread_s": slow["interposed_spread_s"], "slowdown": slow["slowdown"],
        **{k: slow.get(k) for k in ("timed_s", "timed_spread_s", "timed_sched_s", "timed_sched_spread_s",
                                     "sched_watch_slowdown")},
        "recording_s": meta["wall_ns"] / 1e9, "recording_slowdown": meta["wall_ns"] / 1e9 / slow["plain_s"],
        "baseline_predicted_ms": reps["tracked"].summary["movement_ns"] / 1e6, "baseline_error_pct": 100 * err,
        "baseline_unclamped_predicted_ms": reps["tracked"].summary["movement_unclamped_ns"] / 1e6,
        "baseline_unclamped_error_pct": 100 * (reps["tracked"].summary["movement_unclamped_ns"] / net - 1)
        if net else None,
        "baseline_clamped_classes": reps["tracked"].summary["clamped_classes"],
        "baseline_call_cost_ms": reps["tracked"].summary["call_cost_ns"] / 1e6,
        "baseline_region": reps["tracked"].summary["region"],
        "unreplayed_calls_net_ms": reps["tracked"].summary["measured_net_unreplayed_ns"] / 1e6,
        "baseline_share_warm": reps["tracked"].summary["share_warm"],
        "baseline_share_llc": reps["tracked"].summary["share_llc"],
        "baseline_share_cold": reps["tracked"].summary["share_cold"],
        "baseline_cold_predicted_ms": reps["cold"].summary["movement_ns"] / 1e6,
        "baseline_cold_error_pct": 100 * (reps["cold"].summary["movement_ns"] / net - 1) if net else None,
        "baseline_warm_predicted_ms": reps["warm"].summary["movement_ns"] / 1e6,
        "baseline_warm_error_pct": 100 * (reps["warm"].summary["movement_ns"] / net - 1) if net else None,
        "what_if_cache": what_if_cache, "samples": samples,
        "call_cost_calibration": "gap" if gap_edges_ns else "flat",
        "alloc_cost": "measured" if alloc_cost else None,
        "dst_write": dst_write, "llc_boundary": llc_boundary, "cold_copy": cold_copy, "streams": streams,
        "stream_copy": stream_copy,
        "calibrated_on": name in calibration.GAP_CALIBRATION_PROGRAMS if gap_edges_ns else False,
    }
    if what_if_too:
        row.update(program_what_if(name, out, platform, what_if_samples or samples, costs, what_if_cache,
                                   recorded=(df, slow), gap_edges_ns=gap_edges_ns, alloc_cost=alloc_cost))
    return row


def program_what_if(name: str, out: Path, platform: Any, samples: int, costs: dict[str, Any] | None,
                    what_if_cache: str, recorded: tuple[Any, dict[str, Any]],
                    gap_edges_ns: list[float] | None = None,
                    alloc_cost: dict[str, Any] | None = None) -> dict[str, Any]:
    """The what-if of every mechanism on a recorded program's focus calls: writes
    ``OUT/NAME-what-if.csv``, ``-what-if-classes.csv`` and the plot; returns each mechanism's
    saving (``saving_MECHANISM_pct``) and the samples per class it used."""
    from movelab.record.cli import plot
    from movelab.record.replay import what_if

    f = _focus(recorded[0], PROGRAMS[name][3])
    tracked = what_if_cache == "tracked"
    summary, classes = what_if(f, platform, samples=samples, cache=what_if_cache,
                               call_cost=costs if tracked else None,
                               gap_edges_ns=gap_edges_ns if tracked else None,
                               alloc_cost=alloc_cost if tracked else None)
    summary.to_csv(out / f"{name}-what-if.csv", index=False)
    classes.to_csv(out / f"{name}-what-if-classes.csv", index=False)
    plot(summary, out / f"{name}-what-if.png", f"{name} on this machine's platform")
    row: dict[str, Any] = {"what_if_samples": samples}
    for r in summary.to_dict("records"):
        if r["mechanism"] != "cpu":
            row[f"saving_{r['mechanism']}_pct"] = None if r.get("error") else r["saving_pct"]
    return row


def _write(out: Path, rows: list[dict[str, Any]]) -> None:
    """The rows so far (after every program, so a failure later keeps them)."""
    clean = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in rows]
    (out / "record-replay.json").write_text(json.dumps(clean, indent=2))


def validation_rules(buffer_states: bool | None = None, cold_copies: bool | None = None,
                     streams: bool | None = None, stream_copies: bool | None = None) -> tuple[bool, bool, bool, bool]:
    """The replay rules ``movelab bench record`` validates with (docs/record-replay.md, "Set K"):
    each buffer in its own state, cold small copies, isolated or streaming copies, streaming reply
    copies. A rule not asked for (None) follows the one it refines, and the first is on: so by
    default all four are on, and ``buffer_states=False`` alone gives the mixed rule. A rule asked for
    without the one it refines is refused (``ValueError`` naming the option)."""
    b = True if buffer_states is None else buffer_states
    c = b if cold_copies is None else cold_copies
    s = c if streams is None else streams
    sc = s if stream_copies is None else stream_copies
    if c and not b:
        raise ValueError("--cold-copies needs --buffer-states (it replaces a cost of that rule)")
    if s and not c:
        raise ValueError("--streams needs --cold-copies (it decides which small copies take the cold-copy probe)")
    if sc and not s:
        raise ValueError("--stream-copies needs --streams (it decides which copies continue a stream)")
    return b, c, s, sc


def bench_record(
    ctx: typer.Context,
    out: Path = typer.Option(Path("reports/record-replay"), "--out", help="Directory for the results."),
    programs: list[str] | None = typer.Option(None, "--program", help=f"Only these ({', '.join(PROGRAMS)})."),
    samples: int = typer.Option(8, "--samples", min=1, help="Calls replayed per size class at most."),
    what_if_samples: int | None = typer.Option(None, "--what-if-samples", min=1, help="Calls replayed per size "
                                                "class in the what-if (default --samples; 11 mechanisms each)."),
    runs: int = typer.Option(3, "--runs", min=1, help="Runs with and without the interposer, for the slowdown."),
    memory: str = typer.Option("rowclone-ddr5-4800b", "--memory", help="DRAM config of this machine's platform."),
    what_if_cache: str = typer.Option("tracked", "--what-if-cache", help="Cache mode of the what-if replays "
                                      "(tracked, cold or warm; tracked simulates each class three times)."),
    what_if_too: bool = typer.Option(True, "--what-if/--no-what-if", help="Also replay every mechanism (the "
                                     "what-if tables; most of the bench's time) after the baseline's validation."),
    buffer_states: bool | None = typer.Option(None, "--buffer-states/--no-buffer-states", help="Validate with "
                                              "each buffer of a copy in its own cache state, destination writes "
                                              "costed by the fill probe and the last level's boundary from its sweep "
                                              "(default on; --no-buffer-states also turns off the three rules below "
                                              "unless they are asked for, and validates with the mixed rule; the "
                                              "record and replay guide says why)."),
    cold_copies: bool | None = typer.Option(None, "--cold-copies/--no-cold-copies", help="With --buffer-states: a "
                                            "copy of 1-2 KiB (the cold-copy probe's sizes) whose destination is in "
                                            "memory costs the probe's isolated copy into a cold destination instead "
                                            "of the fill probe's per-line figure (default as --buffer-states)."),
    streams: bool | None = typer.Option(None, "--streams/--no-streams", help="With --cold-copies: only isolated "
                                        "copies take the cold-copy probe (by its own boundary); a copy continuing "
                                        "its thread's writes to consecutive addresses keeps the fill probe's figure "
                                        "(default as --cold-copies)."),
    stream_copies: bool | None = typer.Option(None, "--stream-copies/--no-stream-copies", help="With --streams: a "
                                              "1-2 KiB copy continuing a stream is charged the stream-copy probe's "
                                              "extra at its destination's reuse distance (default as --streams)."),
    force: bool = typer.Option(False, "--force", help="Overwrite the results in --out."),
) -> None:
    """Record real programs, measure the interposer's slowdown, validate the baseline replay on
    this machine's platform and compare every mechanism (writes OUT/record-replay.json)."""
    from movelab.record.machine import host_platform

    names = programs or list(PROGRAMS)
    for n in names:
        if n not in PROGRAMS:
            raise typer.BadParameter(f"unknown program {n!r} (known: {', '.join(PROGRAMS)})", param_hint="--program")
    try:
        buffer_states, cold_copies, streams, stream_copies = validation_rules(buffer_states, cold_copies, streams,
                                                                              stream_copies)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint=str(e).split()[0]) from None
    from movelab._util import OutputBusy, check_output_dir, fail, output_lock

    # Checked before minutes of recording: the results are kept unless --force, and the folder is
    # locked until the command ends (a second bench writing there is refused at once).
    check_output_dir(out, ["record-replay.json", "platform.json"], force)
    try:
        out.mkdir(parents=True, exist_ok=True)
        ctx.with_resource(output_lock(out))
    except (OutputBusy, OSError) as e:
        fail(f"--out {e}")
    from movelab.record.calibration import GAP_CALIBRATION_PROGRAMS, alloc_costs, call_costs, gap_costs
    from movelab.record.replay import CACHE_MODES, _cache_bytes

    if what_if_cache not in CACHE_MODES:
        raise typer.BadParameter(f"{what_if_cache!r}: one of {', '.join(CACHE_MODES)}", param_hint="--what-if-cache")
    host = host_platform(memory=memory, measure=True)
    calib = call_costs(host["platform"], refresh=True)
    console.print("per-call cost, hot loop (calibration on this machine): " + ", ".join(
        f"{k} {v:.1f} ns" for k, v in sorted(calib["call_ns"].items())), highlight=False)
    # The allocator's own path in calloc and realloc, measured (a machine parameter beside the
    # platform: written to platform.json with the command that measured it).
    alloc = alloc_costs(refresh=True)
    host = {**host, "allocator": alloc}
    console.print("allocator path (calibrate alloc, back to back / cold), ns by size class: " + "; ".join(
        f"{k} " + " ".join(f"{c}:{alloc['ns'][k].get('hot', {}).get(c, float('nan')):.0f}/"
                           f"{alloc['ns'][k].get('cold', {}).get(c, float('nan')):.0f}"
                           for c in sorted(alloc["ns"][k].get("hot", {}), key=int))
        for k in sorted(alloc["ns"])), highlight=False)
    for k in sorted(alloc["ns"]):
        if "reuse_hot" in alloc["ns"][k]:
            console.print(f"allocator path of a {k} handed back a freed block of its size (back to back / cold): "
                          + " ".join(f"{c}:{alloc['ns'][k]['reuse_hot'].get(c, float('nan')):.0f}/"
                                     f"{alloc['ns'][k].get('reuse_cold', {}).get(c, float('nan')):.0f}"
                                     for c in sorted(alloc["ns"][k]["reuse_hot"], key=int)), highlight=False)
    # The fill probe: a destination written in the private caches, the last level and memory
    # (measured at recording time, stored in platform.json; the replay's destination write cost).
    from movelab.record.calibration import dst_write_costs, fill_costs, llc_boundary

    fill = fill_costs()
    dst_write = dst_write_costs(fill)
    boundary = llc_boundary(fill)
    host = {**host, "fill": fill}
    console.print("fill probe, ns per 1 KiB copy (destination cached / last level / memory): " + " / ".join(
        f"{fill['ns'][k]:.1f}" for k in ("hot", "llc", "memory"))
        + (f"; last-level boundary {boundary / 2**20:.1f} MiB of reuse distance" if boundary else ""),
        highlight=False)
    # The isolated cold-copy probe (stored in platform.json; the replay's rule with --cold-copies).
    from movelab.record.calibration import cold_copy_boundary, cold_copy_costs, cold_copy_extra

    cold = cold_copy_costs()
    host = {**host, "cold_copy": cold}
    console.print("cold-copy probe, ns a copy (hot / destination in memory): " + "; ".join(
        f"{n} B {v['hot_ns']:.1f} / {v['cold_ns']:.1f}" for n, v in cold["sizes"].items()), highlight=False)
    # The streaming reply-copy probe (stored in platform.json; the replay's rule with --stream-copies).
    from movelab.record.calibration import stream_copy_costs, stream_copy_extra

    load0 = list(os.getloadavg())
    scp = stream_copy_costs()
    scp = {**scp, "measured_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
           "load_average": [load0, list(os.getloadavg())]}
    host = {**host, "stream_copy": scp}
    console.print("stream-copy probe, ns a 1 KiB streaming copy by its block's reuse distance: " + ", ".join(
        f"{k} KiB {v:.0f}" for k, v in scp["ns"].items()), highlight=False)
    rows: list[dict[str, Any]] = []
    recorded: dict[str, tuple[Any, dict[str, Any]]] = {}
    failed: dict[str, str] = {}
    for n in names:
        missing = [p for p in PROGRAMS[n][1] if shutil.which(p) is None]
        if missing:
            console.print(f"{n}: skipped, {', '.join(missing)} not installed (make bench-record-deps)")
            continue
        console.print(f"{n}: recording ...")
        try:
            recorded[n] = record_program(n, out, runs)
        except (OSError, ValueError, RuntimeError, subprocess.SubprocessError) as e:
            failed[n] = str(e)
    # The gap-dependent call cost, calibrated on the calibration programs' recordings (the others
    # validate it); the hot-loop figures where they were not recorded.
    costs: dict[str, Any] = dict(calib["call_ns"])
    edges: list[float] | None = None
    cal = [n for n in GAP_CALIBRATION_PROGRAMS if n in recorded]
    if cal:
        l2, llc = _cache_bytes(host["platform"], {})
        gap = gap_costs([_focus(recorded[n][0], PROGRAMS[n][3]) for n in cal], l2, llc, calib["call_ns"],
                        calib["simulated_ns"], names=cal)
        costs, edges = gap["call_ns"], gap["edges_ns"]
        calib = {**calib, "gap": gap}
        console.print(f"per-call cost by gap since the previous call (calibrated on {', '.join(cal)}; classes up to "
                      + ", ".join(f"{e:.0f}" for e in edges) + " ns and beyond): " + "; ".join(
                          f"{k} " + "/".join(f"{v:.0f}" for v in vals) for k, vals in sorted(costs.items())),
                      highlight=False)
    else:
        console.print("per-call cost: the hot-loop figures (no calibration program recorded: "
                      f"{', '.join(GAP_CALIBRATION_PROGRAMS)})")
    on = [r for r, o in (("each buffer in its own state", buffer_states), ("cold small copies", cold_copies),
                         ("isolated or streaming copies", streams), ("streaming reply copies", stream_copies)) if o]
    console.print("validation rules: " + (", ".join(on) if on else "the mixed rule (--no-buffer-states)"),
                  highlight=False)
    for n in names:
        if n in failed:
            console.print(f"  {n} failed: {failed[n]}", highlight=False)
            rows.append({"program": n, "description": PROGRAMS[n][0], "error": failed[n]})
            continue
        if n not in recorded:
            continue
        console.print(f"{n}: replaying ...")
        t = time.monotonic()
        try:
            row = run_program(n, out, host["platform"], samples, runs, costs, what_if_cache, recorded=recorded[n],
                              gap_edges_ns=edges, what_if_too=False, alloc_cost=alloc,
                              dst_write=dst_write if buffer_states else None,
                              llc_boundary=boundary if buffer_states else None,
                              cold_copy=cold_copy_extra(cold) if cold_copies else None, streams=streams,
                              cold_copy_boundary=cold_copy_boundary(cold) if streams else None,
                              stream_copy=stream_copy_extra(scp) if stream_copies else None)
        except (OSError, ValueError, RuntimeError, subprocess.SubprocessError) as e:
            console.print(f"  {n} failed: {e}", highlight=False)
            rows.append({"program": n, "description": PROGRAMS[n][0], "error": str(e)})
            continue
        rows.append(row)
        _write(out, rows)
        console.print(f"  {row['calls']:,} calls, {row['share_in_movement_pct']:.1f}% of its time inside them; "
                      f"slowdown x{row['slowdown']:.2f} (scheduling watch x{row['sched_watch_slowdown']:.2f}); "
                      f"{row['switched_calls']:,} calls switched out ({row['preempted_calls']:,} seen by the "
                      f"interposer); baseline replay error {row['baseline_error_pct']:+.1f}% "
                      f"(every call cold {row['baseline_cold_error_pct']:+.1f}%, every call warm "
                      f"{row['baseline_warm_error_pct']:+.1f}%) "
                      f"({time.monotonic() - t:.0f} s)", highlight=False)
    (out / "platform.json").write_text(json.dumps({**host, "call_cost_calibration": calib}, indent=2))
    # The what-ifs after every program's validation (they are most of the bench's time: a
    # validation is not held back by another program's what-if).
    for row in rows if what_if_too else []:
        n = row["program"]
        if "error" in row:
            continue
        console.print(f"{n}: what-if of every mechanism ...")
        t = time.monotonic()
        try:
            row.update(program_what_if(n, out, host["platform"], what_if_samples or samples, costs, what_if_cache,
                                       recorded=recorded[n], gap_edges_ns=edges, alloc_cost=alloc))
        except (OSError, ValueError, RuntimeError, subprocess.SubprocessError) as e:
            console.print(f"  {n} what-if failed: {e}", highlight=False)
            row["what_if_error"] = str(e)
        _write(out, rows)
        console.print(f"  {n}: what-if written ({time.monotonic() - t:.0f} s)", highlight=False)
    _write(out, rows)
    console.print(f"written: {out / 'record-replay.json'}", markup=False)


if __name__ == "__main__":  # pragma: no cover
    typer.run(bench_record)
    sys.exit(0)
