"""``movelab bench host NAME``: measure this machine's copy latency, bandwidth, compute-copy
overlap, cache pollution, small-copy breakdown and IPC; ``all`` runs every one into a report folder.

Each command prints a table (or JSON rows with ``--format json``) and writes ``NAME.csv`` and
``NAME.png`` into ``--out``. Existing files are never overwritten without ``--force``, and the
output folder is checked before anything runs: a bad ``--out`` or a nonsense option value is a
clear error naming the option (exit status 2), never a traceback.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import sys
import time
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from movelab._util import lit, parse_size
from movelab.host import bench

bench_host_app = typer.Typer(help="Measure this machine: copy latency, bandwidth, overlap, pollution, IPC.",
                             no_args_is_help=True)

DEFAULT_OUT = Path("reports/bench-host")


class Format(str, Enum):
    table = "table"
    json = "json"


# Columns shown in the table of each benchmark (all fields go to the CSV / JSON).
_COLUMNS = {
    "latency": ["engine", "channels", "cache", "size_bytes", "latency_ns", "p99_ns", "iters"],
    "bandwidth": ["engine", "channels", "size_bytes", "window", "bandwidth_mb_s"],
    "overlap": ["engine", "channels", "cache", "size_bytes", "t_copy_ns", "t_compute_ns", "t_total_ns", "overlap",
                "overlap_lo", "overlap_hi", "unstable"],
    "pollution": ["case", "ws_bytes", "size_bytes", "access_ns", "vs_none", "vs_none_lo", "vs_none_hi", "unstable"],
    "breakdown": ["engine", "worker", "size_bytes", "submit_ns", "queue_ns", "copy_ns", "complete_ns", "other_ns",
                  "total_ns"],
    "ipc": ["path", "requested_path", "size_bytes", "latency_ns", "bandwidth_mb_s", "note"],
    # A table that fits 80 columns; the CSV holds every column (packets/s, wake-ups, p50, ...).
    "onload": ["direction", "config", "source", "payload_bytes", "throughput_mbps", "loss",
               "host_cpu_ns_per_packet", "engine_cpu_ns_per_packet", "latency_p99_ns", "corrupted"],
}
#: Short headers, so that a wide table fits a terminal.
_HEADERS = {"direction": "dir", "payload_bytes": "bytes", "throughput_mbps": "Mb/s",
            "host_cpu_ns_per_packet": "host ns", "engine_cpu_ns_per_packet": "engine ns",
            "latency_p99_ns": "p99 us", "corrupted": "bad"}


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "[red]UNSTABLE[/red]" if v else ""
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 10 else f"{v:,.0f}"
    if v is None:
        return ""
    return str(v)


def _table(name: str, rows: list[dict[str, Any]]) -> Table:
    cols = [c for c in _COLUMNS[name] if any(c in r for r in rows)]
    short = name == "onload"
    t = Table(title=f"movelab bench host {name}", box=box.SIMPLE_HEAD if short else box.HEAVY_HEAD,
              caption="ns per packet; every column: onload.csv" if short else None,
              padding=0 if short else (0, 1), show_edge=not short)
    for c in cols:
        t.add_column(_HEADERS.get(c, c) if short else c, no_wrap=short,
                     justify="left" if c in ("engine", "cache", "case", "path", "worker", "note", "direction",
                                             "config", "source") else "right")
    for r in rows:
        t.add_row(*[bench.human_bytes(r[c]) if c.endswith("bytes") and isinstance(r.get(c), int) and r[c] > 0
                    else f"{r[c] / 1000:,.1f}" if c == "latency_p99_ns" and short and isinstance(r.get(c), int | float)
                    else _fmt(r.get(c)) for c in cols])
    return t


def _parse_sizes(sizes: str | None, option: str = "--sizes") -> list[int] | None:
    """``"64k,4m,1g"`` -> bytes (the one size parser, :func:`movelab._util.parse_size`), each positive."""
    if sizes is None:
        return None
    out = []
    for part in sizes.split(","):
        n = parse_size(part, option)
        if n <= 0:
            raise typer.BadParameter(f"sizes must be positive, got {part!r}", param_hint=option)
        out.append(n)
    return out


def _fail(msg: str) -> typer.Exit:
    typer.echo(f"error: {msg}", err=True)  # plain: a path is never wrapped across lines
    return typer.Exit(2)


# The output locks of the command running now (one stack per command, closed when it ends).
_HELD: list[contextlib.ExitStack] = []


def _holds_out(cmd: Callable[..., None]) -> Callable[..., None]:
    """A command whose ``_check_out`` locks ``--out`` until the command returns or fails."""

    @functools.wraps(cmd)
    def run(*args: Any, **kwargs: Any) -> None:
        with contextlib.ExitStack() as stack:
            _HELD.append(stack)
            try:
                cmd(*args, **kwargs)
            finally:
                _HELD.pop()

    return run


def _check_out(out: Path, names: list[str], force: bool) -> None:
    """Before running: ``--out`` must be (or become) a writable folder, no other run may be writing
    it (it stays locked until the command ends), and the files about to be written must not exist
    unless ``--force``."""
    if out.exists() and not out.is_dir():
        raise _fail(f"--out {out}: exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _fail(f"--out {out}: cannot create the folder ({e.strerror or e})") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise _fail(f"--out {out}: the folder is not writable")
    # Two benchmarks never write one folder at once: the folder is locked until the command ends
    # (the second is refused here, before it measures anything).
    from movelab._util import OutputBusy, output_lock

    if not _HELD:
        raise RuntimeError("_check_out outside a command holding its outputs (@_holds_out)")
    try:
        _HELD[-1].enter_context(output_lock(out))
    except (OutputBusy, OSError) as e:
        raise _fail(f"--out {e}") from None
    existing = [out / n for n in names if (out / n).exists()]
    if existing and not force:
        shown = ", ".join(str(f) for f in existing)
        raise _fail(f"refusing to overwrite {shown} (use --force to overwrite, or choose another --out)")


def _write(name: str, rows: list[dict[str, Any]], out: Path) -> list[Path]:
    try:
        return bench.write_outputs(name, rows, out)
    except OSError as e:
        raise _fail(f"--out {out}: cannot write the results ({e})") from None


def _one(name: str, quick: bool, fmt: Format, out: Path, force: bool, **overrides: Any) -> None:
    err = Console(stderr=True)
    _check_out(out, bench.output_names(name), force)
    try:
        with err.status(f"running {name} ...", spinner="dots"):
            rows = bench.run(name, quick=quick, **overrides)
    except (ValueError, TypeError, OSError) as e:
        raise _fail(str(e)) from None
    files = _write(name, rows, out)
    if fmt is Format.json:
        sys.stdout.write(json.dumps(rows) + "\n")
    else:
        Console().print(_table(name, rows))
    err.print(f"wrote {lit(', '.join(str(f) for f in files))}")


_QUICK = typer.Option(False, "--quick", help="A tiny run (a second or two), for tests and smoke checks.")
_FORMAT = typer.Option(Format.table, "--format", help="table (rich) or json (rows on stdout).")
_OUT = typer.Option(DEFAULT_OUT, "--out", help="Folder for the CSV and PNG.")
_FORCE = typer.Option(False, "--force", help="Overwrite existing result files in --out.")
_SIZES = typer.Option(None, "--sizes", help="Comma-separated sizes, e.g. 64,4k,1m (default: the benchmark's).")
_CHANNELS = typer.Option(None, "--channels", min=1, max=256, help="Thread-engine channel counts (repeatable, 1-256).")
_ENGINES = typer.Option(None, "--engine", help="Engines to measure (repeatable): cpu, thread.")
_CACHE = typer.Option(None, "--cache", help="hot and/or cold (repeatable).")
_WINDOW = typer.Option(None, "--window", min=1, max=4096, help="Outstanding icopy operations (1-4096; default 128).")
_REPEATS = typer.Option(None, "--repeats", min=1, max=50,
                        help="Independent repetitions of each point (1-50; default 5, 3 with --quick): the "
                        "median is reported with its range, and a point whose range is too wide is flagged.")
_WS = typer.Option(None, "--ws", help="Working-set sizes, e.g. 512k,8m.")
_COPY_SIZE = typer.Option(None, "--copy-size", help="Size of the copy (64m).")
_SKIP = typer.Option(None, "--skip", help="Benchmarks to leave out (repeatable).")
_REALTIME = typer.Option(False, "--realtime", help="Run the caller and engine workers with SCHED_FIFO priority "
                         "(needs CAP_SYS_NICE) so that other tasks on a busy machine do not preempt them.")


def _channels_for_thread(channels: list[int] | None, engine: list[str] | None) -> None:
    """``--channels`` sizes the thread engine: with only the cpu engine measured it would change nothing."""
    if channels and engine and "thread" not in engine:
        raise typer.BadParameter("the channel counts are the thread engine's, and --engine leaves it out",
                                 param_hint="--channels")


@bench_host_app.command()
@_holds_out
def latency(quick: bool = _QUICK, fmt: Format = _FORMAT, out: Path = _OUT, force: bool = _FORCE,
            sizes: str | None = _SIZES,
            channels: list[int] | None = _CHANNELS, engine: list[str] | None = _ENGINES,
            cache: list[str] | None = _CACHE, realtime: bool = _REALTIME) -> None:
    """Copy latency vs size, hot and cold caches (cpu = memcpy, thread = icopy + wait)."""
    _channels_for_thread(channels, engine)
    _one("latency", quick, fmt, out, force, sizes=_parse_sizes(sizes), channels=channels or None,
         engines=engine or None, cache=cache or None, realtime=realtime or None)


@bench_host_app.command()
@_holds_out
def bandwidth(quick: bool = _QUICK, fmt: Format = _FORMAT, out: Path = _OUT, force: bool = _FORCE,
              sizes: str | None = _SIZES,
              channels: list[int] | None = _CHANNELS, engine: list[str] | None = _ENGINES,
              window: int | None = _WINDOW, realtime: bool = _REALTIME) -> None:
    """Copy bandwidth vs size with a window of outstanding icopy operations (cold buffers)."""
    _channels_for_thread(channels, engine)
    _one("bandwidth", quick, fmt, out, force, sizes=_parse_sizes(sizes), channels=channels or None,
         engines=engine or None, window=window, realtime=realtime or None)


@bench_host_app.command()
@_holds_out
def overlap(quick: bool = _QUICK, fmt: Format = _FORMAT, out: Path = _OUT, force: bool = _FORCE,
            sizes: str | None = _SIZES,
            channels: list[int] | None = _CHANNELS, engine: list[str] | None = _ENGINES,
            cache: list[str] | None = _CACHE, repeats: int | None = _REPEATS, realtime: bool = _REALTIME) -> None:
    """Compute-copy overlap: (Tcopy + Tcompute - Ttotal) / Tcopy with Tcompute > Tcopy (median of
    repeated measurements, with their range)."""
    _channels_for_thread(channels, engine)
    _one("overlap", quick, fmt, out, force, sizes=_parse_sizes(sizes), channels=channels or None,
         engines=engine or None, cache=cache or None, repeats=repeats, realtime=realtime or None)


@bench_host_app.command()
@_holds_out
def pollution(quick: bool = _QUICK, fmt: Format = _FORMAT, out: Path = _OUT, force: bool = _FORCE,
              ws: str | None = _WS,
              copy_size: str | None = _COPY_SIZE,
              channels: list[int] | None = _CHANNELS, repeats: int | None = _REPEATS,
              realtime: bool = _REALTIME) -> None:
    """Access time of a cache-resident working set after a large copy: none / cpu / thread
    (median of repeated measurements, with their range)."""
    cs = _parse_sizes(copy_size, "--copy-size")
    _one("pollution", quick, fmt, out, force, ws_sizes=_parse_sizes(ws, "--ws"), copy_bytes=cs[0] if cs else None,
         channels=channels or None, repeats=repeats, realtime=realtime or None)


@bench_host_app.command()
@_holds_out
def breakdown(quick: bool = _QUICK, fmt: Format = _FORMAT, out: Path = _OUT, force: bool = _FORCE,
              sizes: str | None = _SIZES,
              engine: list[str] | None = _ENGINES, realtime: bool = _REALTIME) -> None:
    """Where a small asynchronous copy's time goes: submit, queueing, copy, completion."""
    _one("breakdown", quick, fmt, out, force, sizes=_parse_sizes(sizes), engines=engine or None,
         realtime=realtime or None)


@bench_host_app.command()
@_holds_out
def ipc(quick: bool = _QUICK, fmt: Format = _FORMAT, out: Path = _OUT, force: bool = _FORCE,
        sizes: str | None = _SIZES) -> None:
    """IPC latency and bandwidth: single copy vs shared-memory two copy vs plain socket."""
    _one("ipc", quick, fmt, out, force, sizes=_parse_sizes(sizes))


@bench_host_app.command("onload")
@_holds_out
def onload_cmd(quick: bool = _QUICK, fmt: Format = _FORMAT, out: Path = _OUT, sizes: str | None = _SIZES,
               config: list[str] | None = typer.Option(None, "--config", help="kernel, softnic, onload, "
                                                       "onload-nocache (repeatable; default all)."),
               source: list[str] | None = typer.Option(None, "--source", help="replay, veth (repeatable; "
                                                       "default both, veth only where permitted)."),
               direction: list[str] | None = typer.Option(None, "--direction", help="rx, tx (repeatable)."),
               seconds: float | None = typer.Option(None, "--seconds", help="Measured seconds per point "
                                                    "(1; 0.25 with --quick)."),
               rate: float | None = typer.Option(None, "--rate", help="Offered receive line rate, Mb/s "
                                                 "(1000: the paper's GbE; 0: as fast as the sender can)."),
               force: bool = typer.Option(False, "--force", help="Overwrite existing onload.* outputs."),
               realtime: bool = _REALTIME,
               push: bool = typer.Option(True, "--push/--no-push", help="Engine writes payloads with cached "
                                         "stores (the paper's L2 push) or streaming stores.")) -> None:
    """Network onload: kernel vs softnic vs onload (mapping cache on/off), rx and tx, vs UDP payload."""
    from movelab.host import bench_onload

    err = Console(stderr=True)
    if seconds is not None and not (math.isfinite(seconds) and 0 < seconds <= 3600):
        raise typer.BadParameter(f"{seconds}: measured seconds per point, more than 0 and at most 3600",
                                 param_hint="--seconds")
    if rate is not None and not (math.isfinite(rate) and 0 <= rate <= 1_000_000):
        raise typer.BadParameter(f"{rate}: an offered rate in Mb/s from 0 (as fast as the sender can) to 1000000",
                                 param_hint="--rate")
    try:
        kw: dict[str, Any] = {"quick": quick, "sizes": _parse_sizes(sizes), "configs": config or None,
                              "sources": source or None, "directions": direction or None}
        bench_onload.plan(**kw)  # argument errors before anything runs
        _check_out(out, bench_onload.OUTPUTS, force)  # and the outputs, before minutes of measuring
        total = bench_onload.count_points(**kw)
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err) as prog:
            task = prog.add_task("onload", total=total)
            steps = 0

            def step(what: str) -> None:
                nonlocal steps
                if steps:
                    prog.advance(task)
                steps += 1
                prog.update(task, description=what)

            rows = bench_onload.run(seconds=seconds, rate_mbps=rate, realtime=realtime, push=push, progress=step,
                                    notice=lambda m: err.print(f"[yellow]{lit(m)}[/yellow]"), **kw)
            prog.advance(task)
        files = bench_onload.write_outputs(rows, out, force=force)
    except (ValueError, TypeError, OSError) as e:
        raise _fail(str(e)) from None
    if fmt is Format.json:
        sys.stdout.write(json.dumps(rows) + "\n")
    else:
        Console().print(_table("onload", rows))
        Console().print_json(json.dumps(bench_onload.bars(rows)))
    err.print(f"wrote {lit(', '.join(str(f) for f in files))}")


@bench_host_app.command("all")
@_holds_out
def run_all(quick: bool = _QUICK, fmt: Format = _FORMAT, out: Path = _OUT, force: bool = _FORCE,
            skip: list[str] | None = _SKIP, repeats: int | None = _REPEATS, realtime: bool = _REALTIME) -> None:
    """Run every host copy and IPC benchmark (all but onload, which has its own command) with a
    progress bar; write a report folder (CSV + PNG per benchmark, results.json with every row, the
    machine and the targets each benchmark is held to)."""
    names = [n for n in bench.BENCHMARKS if n not in (skip or [])]
    unknown = set(skip or []) - set(bench.BENCHMARKS)
    if unknown:
        why = "; onload is not part of all (run it with its own command)" if "onload" in unknown else ""
        raise typer.BadParameter(f"unknown benchmark(s) to skip: {', '.join(sorted(unknown))} (known: "
                                 f"{', '.join(bench.BENCHMARKS)}){why}", param_hint="--skip")
    _check_out(out, [f for n in names for f in bench.output_names(n)] + ["results.json"], force)
    err = Console(stderr=True)
    results: dict[str, list[dict[str, Any]]] = {}
    failures: dict[str, str] = {}
    seconds: dict[str, float] = {}
    rt = {"realtime": True} if realtime else {}
    total = sum(bench.count_points(n, quick) for n in names)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err) as prog:
        task = prog.add_task("host benchmarks", total=total)
        for name in names:
            t0 = time.monotonic()
            steps = 0

            def step(what: str, name: str = name) -> None:
                nonlocal steps
                if steps:
                    prog.advance(task)
                steps += 1
                prog.update(task, description=f"{name}: {what}")

            try:
                extra = {} if name == "ipc" else {**rt, **({"repeats": repeats} if name in bench.REPEATED else {})}
                rows = bench.run(name, quick=quick, progress=step, **extra)
            except Exception as e:
                failures[name] = f"{type(e).__name__}: {e}"
                rows = []
            prog.advance(task, max(1, bench.count_points(name, quick) - steps + 1))
            seconds[name] = round(time.monotonic() - t0, 2)
            results[name] = rows
            if rows:
                _write(name, rows, out)
    report = {
        "machine": bench.machine(),
        "quick": quick,
        "realtime": realtime,
        "seconds": seconds,
        "bars": bench.bars(results),
        "failures": failures,
        "results": results,
    }
    try:
        (out / "results.json").write_text(json.dumps(report, indent=1))
    except OSError as e:
        raise _fail(f"--out {out}: cannot write results.json ({e})") from None
    if fmt is Format.json:
        sys.stdout.write(json.dumps(report) + "\n")
    else:
        con = Console()
        for name in names:
            if results.get(name):
                con.print(_table(name, results[name]))
        con.print_json(json.dumps(report["bars"]))
    for name, msg in failures.items():
        err.print(f"[red]{name} failed:[/red] {lit(msg)}")
    err.print(f"report written to {lit(out)}/")
    if failures:
        raise typer.Exit(1)
