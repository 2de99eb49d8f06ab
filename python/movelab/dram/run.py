"""What ``movelab dram run`` does once its command line is parsed: simulate a trace (or generated
requests) and print the statistics, as JSON or a table. It imports neither typer nor rich itself:
the command's typer definition (``movelab.dram.cli``) and its typer-free start for the common
command lines (``movelab.dram.fast_start``) both call :func:`run_trace`, so the two print the same
bytes and fail the same way; rich is imported only when a table or a progress bar is shown."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from movelab import dram
from movelab._util import atomic_path, layered, lit, output_path, parse_set, parse_size, progress_bar
from movelab._util import fail as _fail

if TYPE_CHECKING:
    from rich.table import Table


class _Console:
    """Prints as rich's ``Console()`` does (each use makes one, as a console made at import would
    behave), so that a command printing nothing through it, ``dram run --format json``, does not
    import rich: the command line starts faster."""

    def __getattr__(self, name: str) -> Any:
        from rich.console import Console

        return getattr(Console(), name)


console: Any = _Console()


def trace_arg(trace: str | None, generate: str | None, count: int, read_fraction: float, seed: int,
               footprint: str) -> Any:
    if (trace is None) == (generate is None):
        import typer

        raise typer.BadParameter("give either a TRACE file or --generate KIND", param_hint="TRACE")
    if generate is not None:
        return {"kind": generate, "count": count, "read_fraction": read_fraction, "seed": seed,
                "footprint_bytes": parse_size(footprint, "--footprint")}
    return trace


def stats_table(s: dict[str, Any]) -> Table:
    from rich.table import Table

    t = Table(title=f"{lit(s['speed'])} / {lit(s['part'])}: {s['channels']} ch x {s['ranks']} rank, {s['scheduler']}, "
                    f"{s['row_policy']} row, {s['mapper']}, bulk={s['bulk_mechanism']}")
    t.add_column("metric")
    t.add_column("value", justify="right")
    rl, wl, e, b = s["read_latency"], s["write_latency"], s["energy"], s["bulk"]
    rows = [
        ("simulated cycles", f"{s['cycles']:,}"),
        ("simulated time", f"{s['time_ns'] / 1000:,.3f} us"),
        ("reads / writes", f"{s['reads']:,} / {s['writes']:,}"),
        ("read latency mean / p50 / p99 / max (cycles)",
         f"{rl['mean_cycles']:.1f} / {rl['p50_cycles']} / {rl['p99_cycles']} / {rl['max_cycles']}"),
        ("write latency mean / p99 (cycles)", f"{wl['mean_cycles']:.1f} / {wl['p99_cycles']}"),
        ("bandwidth", f"{s['bandwidth_gb_s']:.3f} GB/s"),
        ("row hits / misses / conflicts", f"{s['row']['hits']:,} / {s['row']['misses']:,} / {s['row']['conflicts']:,}"),
        ("commands", ", ".join(f"{k} {v:,}" for k, v in s["commands"].items() if v)),
    ]
    if s.get("energy_available", True):
        rows += [
            ("energy total", f"{e['total_nj'] / 1000:,.3f} uJ"),
            # The parts in the total's unit, with separators (one unit on every energy line).
            ("  act / pre / rd / wr / transfer", " / ".join(f"{e[k] / 1000:,.3f}" for k in (
                "activate_nj", "precharge_nj", "read_nj", "write_nj", "transfer_nj")) + " uJ"),
            ("  refresh / background / channel I/O",
             " / ".join(f"{e[k] / 1000:,.3f}" for k in ("refresh_nj", "background_nj", "io_nj")) + " uJ"),
        ]
    else:
        # No public currents for this part: say so (its energies are None), instead of zeros.
        rows.append(("energy", f"not available: no public currents for {s['part']}"))
    if b["ops"]:
        bb = b["bytes"]
        rows += [
            ("bulk ops (copy / init)", f"{b['copies']} / {b['inits']}"),
            ("bulk bytes baseline / fpm / psm-inter / psm-intra / mrc",
             f"{bb['baseline']:,} / {bb['fpm']:,} / {bb['psm_inter']:,} / {bb['psm_intra']:,} / {bb.get('mrc', 0):,}"),
            ("bulk latency mean / max", f"{b['latency']['mean_ns']:.1f} / {b['latency']['max_ns']:.1f} ns"),
        ]
        c = b.get("in_dram_copy")
        if c:
            # Whether a real-chip study measured this part's in-DRAM copy on this standard.
            rows.append(("in-DRAM copy part / basis",
                         f"{c['chip']} / {c['provenance']} (success {c['success']:g}, retries {c['retries']:,})"))
    for k, v in rows:
        t.add_row(k, v)
    return t


def echo_line(text: str) -> None:
    """Writes ``text`` and a newline to stdout and flushes, as ``typer.echo`` does for text without
    ANSI escapes (JSON from ``json.dumps`` is ASCII with every control character escaped)."""
    out = sys.stdout
    if out is None:  # no stdout at all: typer.echo writes nothing either
        return
    out.write(text + "\n")
    out.flush()


def run_trace(config: str, trace: Path | None, generate: str | None, count: int, read_fraction: float,
              seed: int, footprint: str, trace_format: str, set_: list[str] | None, command_log: Path | None,
              memspec: Path | None, fmt: str, force: bool) -> None:
    """``movelab dram run`` after parsing (the enumerated options as their values)."""
    tr = trace_arg(str(trace) if trace is not None else None, generate, count, read_fraction, seed, footprint)
    overrides = parse_set(set_)
    if memspec is not None:
        try:
            ms = dram.read_memspec(memspec)
        except (ValueError, TypeError, OSError) as e:
            _fail(e)
        overrides = layered(ms["overrides"], overrides)
        # What the memspec could not give is said on stderr (stdout may be JSON), as `dram memspec` says it.
        notes = list(ms["notes"])
        try:
            notes += dram.memspec_device_differences(ms, dram.load_config(config, overrides).spec)
        except (ValueError, TypeError, OSError) as e:
            _fail(e)
        for n in notes:
            sys.stderr.write(f"{memspec}: not carried over: {n}\n")
    log = output_path(command_log, force, "--command-log")

    def sim(progress: Any) -> dram.SimResult:
        def run(log_path: Path | None) -> dram.SimResult:
            # log_path is atomic_path's fresh temporary file (--force was checked on `log` itself).
            return dram.simulate(config, tr, overrides=overrides, trace_format=trace_format,
                                 command_log=log_path, progress=progress, progress_every=50_000,
                                 force=log_path is not None)

        if log is None:
            return run(None)
        with atomic_path(log) as tmp:
            return run(tmp)

    try:
        if fmt == "json":
            # No progress bar (it would be disabled): rich is not imported.
            res = sim(None)
        else:
            # The requests done, against the count when it is known (a generated trace).
            with progress_bar("simulating") as update:
                res = sim(lambda n: update(n, count if generate else None))
    except (ValueError, TypeError, OSError) as e:
        _fail(e)
    st = res.stats
    if not st.get("reads") and not st.get("writes") and not (st.get("bulk") or {}).get("ops"):
        sys.stderr.write(f"warning: {trace if trace is not None else 'the trace'} holds no requests or bulk "
                         "operations: nothing was simulated\n")
    if fmt == "json":
        echo_line(json.dumps(res.stats, indent=2))
    else:
        console.print(stats_table(res.stats))
        if log is not None:
            console.print(f"command log: {lit(log)} (check it with: movelab dram check {lit(log)})")
