"""``movelab dram ...``: presets, runs, command-log checks and trace generation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from movelab import dram
from movelab._util import echo_json, output_path, parse_set

app = typer.Typer(help="Command-level DRAM simulator with in-DRAM copy (RowClone) and energy.",
                  no_args_is_help=True)
console = Console()


def _fail(e: Exception) -> None:
    console.print(f"[red]error:[/red] {e}")
    raise typer.Exit(2) from e


@app.command("presets")
def presets_cmd(fmt: str = typer.Option("table", "--format", help="table or json")) -> None:
    """List the built-in speed bins, parts and configuration presets."""
    p = dram.presets()
    if fmt == "json":
        echo_json(p)
        return
    t = Table(title="Speed bins (timings in clocks)")
    for col in ["standard", "name", "tCK ps", "CL-RCD-RP", "RAS", "RC", "source"]:
        t.add_column(col)
    for s in p["speeds"]:
        q = s["params"]
        t.add_row(s["standard"], s["name"], str(q.get("tCK_ps")), f"{q.get('nCL')}-{q.get('nRCD')}-{q.get('nRP')}",
                  str(q.get("nRAS")), str(q.get("nRC")), str(q.get("source", "")))
    console.print(t)
    t = Table(title="Parts")
    for col in ["standard", "name", "Gb", "width", "banks", "rows", "columns", "tRFC ns", "source"]:
        t.add_column(col)
    for s in p["parts"]:
        t.add_row(s["standard"], s["name"], str(s["density_gbit"]), f"x{s['device_width']}", str(s["banks"]),
                  str(s["rows"]), str(s["columns"]), str(s["tRFC_ns"]), s["source"])
    console.print(t)
    t = Table(title="Configuration presets (also: any SPEED/PART, e.g. DDR3-1600K/DDR3-4Gb-x8)")
    t.add_column("name")
    t.add_column("description")
    for c in p["configs"]:
        t.add_row(c["name"], c["description"])
    console.print(t)


@app.command("show")
def show_cmd(
    config: str = typer.Argument(..., help="Preset name, SPEED/PART, or a TOML file."),
    set_: list[str] | None = typer.Option(None, "--set", help="Override KEY=VALUE (repeatable)."),
) -> None:
    """Print a config after presets and overrides, with the DRAM spec it resolves to (JSON)."""
    try:
        c = dram.load_config(config, parse_set(set_))
    except (ValueError, FileNotFoundError) as e:
        _fail(e)
    echo_json({"config": c.data, "spec": c.spec})


def _trace_arg(trace: str | None, generate: str | None, count: int, read_fraction: float, seed: int,
               footprint: str) -> Any:
    if (trace is None) == (generate is None):
        raise typer.BadParameter("give either a TRACE file or --generate KIND", param_hint="TRACE")
    if generate is not None:
        return {"kind": generate, "count": count, "read_fraction": read_fraction, "seed": seed,
                "footprint_bytes": footprint}
    return trace


def _stats_table(s: dict[str, Any]) -> Table:
    t = Table(title=f"{s['speed']} / {s['part']}: {s['channels']} ch x {s['ranks']} rank, {s['scheduler']}, "
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
        ("energy total", f"{e['total_nj'] / 1000:,.3f} uJ"),
        ("  act / pre / rd / wr / transfer", f"{e['activate_nj']:.1f} / {e['precharge_nj']:.1f} / {e['read_nj']:.1f}"
                                             f" / {e['write_nj']:.1f} / {e['transfer_nj']:.1f} nJ"),
        ("  refresh / background / channel I/O",
         f"{e['refresh_nj']:.1f} / {e['background_nj']:.1f} / {e['io_nj']:.1f} nJ"),
    ]
    if not s.get("energy_available", True):
        # No public currents for this part: say so instead of printing zeros as energy.
        rows = [r for r in rows if not r[0].startswith(("energy", "  "))]
        rows.append(("energy", f"not available: no public currents for {s['part']}"))
    if b["ops"]:
        bb = b["bytes"]
        rows += [
            ("bulk ops (copy / init)", f"{b['copies']} / {b['inits']}"),
            ("bulk bytes baseline / fpm / psm-inter / psm-intra",
             f"{bb['baseline']:,} / {bb['fpm']:,} / {bb['psm_inter']:,} / {bb['psm_intra']:,}"),
            ("bulk latency mean / max", f"{b['latency']['mean_ns']:.1f} / {b['latency']['max_ns']:.1f} ns"),
        ]
    for k, v in rows:
        t.add_row(k, v)
    return t


@app.command("run")
def run_cmd(
    config: str = typer.Argument(..., help="Preset name, SPEED/PART, or a TOML file."),
    trace: str | None = typer.Argument(None, help="Trace file (native, Ramulator 2 LD/ST, or DRAMsim3)."),
    generate: str | None = typer.Option(None, "--generate", help="Instead of a file: stream or random."),
    count: int = typer.Option(100_000, help="Requests to generate."),
    read_fraction: float = typer.Option(0.8, help="Fraction of generated requests that are reads."),
    seed: int = typer.Option(0, help="Generator seed."),
    footprint: str = typer.Option("1G", help="Generated addresses fall within this many bytes."),
    trace_format: str = typer.Option("auto", "--trace-format", help="auto, native, ramulator or dramsim3."),
    set_: list[str] | None = typer.Option(None, "--set", help="Override KEY=VALUE (repeatable)."),
    command_log: Path | None = typer.Option(None, "--command-log", help="Write every issued command here."),
    fmt: str = typer.Option("table", "--format", help="table or json"),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --command-log file."),
) -> None:
    """Simulate a trace and print its statistics."""
    tr = _trace_arg(trace, generate, count, read_fraction, seed, footprint)
    log = output_path(command_log, force, "--command-log")
    try:
        with Progress(TextColumn("simulating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=Console(stderr=True), transient=True, disable=fmt == "json") as prog:
            total = count if generate else None
            task = prog.add_task("sim", total=total)
            res = dram.simulate(config, tr, overrides=parse_set(set_), trace_format=trace_format, command_log=log,
                                progress=lambda n: prog.update(task, completed=n), progress_every=50_000)
    except (ValueError, FileNotFoundError, OSError) as e:
        _fail(e)
    if fmt == "json":
        typer.echo(json.dumps(res.stats, indent=2))
    else:
        console.print(_stats_table(res.stats))
        if log is not None:
            console.print(f"command log: {log} (check it with: movelab dram check {log})")


@app.command("check")
def check_cmd(
    log: Path = typer.Argument(..., help="A command log written by `movelab dram run --command-log`."),
    fmt: str = typer.Option("table", "--format", help="table or json"),
    limit: int = typer.Option(20, help="Violations to print."),
) -> None:
    """Replay a command log through the independent timing checker. Exit status 1 on violations."""
    try:
        r = dram.check_log(log)
    except (ValueError, OSError) as e:
        _fail(e)
    if fmt == "json":
        echo_json(r)
    else:
        if r["ok"]:
            console.print(f"[green]OK[/green]: {r['commands_checked']:,} commands, no violations")
        else:
            t = Table(title=f"{r['violation_count']:,} violations in {r['commands_checked']:,} commands")
            for col in ["line", "cycle", "command", "rule", "required", "actual"]:
                t.add_column(col)
            for v in r["violations"][:limit]:
                t.add_row(str(v.get("line")), str(v["cycle"]), v["command"], v["rule"], str(v["required_cycles"]),
                          str(v["actual_cycles"]))
            console.print(t)
    if not r["ok"]:
        raise typer.Exit(1)


@app.command("generate")
def generate_cmd(
    kind: str = typer.Argument(..., help="stream or random"),
    out: Path = typer.Option(..., "--out", "-o", help="File to write."),
    count: int = typer.Option(100_000),
    read_fraction: float = typer.Option(0.8),
    seed: int = typer.Option(0),
    footprint: str = typer.Option("1G"),
    fmt: str = typer.Option("native", "--format", help="native, ramulator or dramsim3"),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write a seeded synthetic trace in any supported format (to feed other simulators too)."""
    path = output_path(out, force, "--out")
    try:
        n = dram.write_trace({"kind": kind, "count": count, "read_fraction": read_fraction, "seed": seed,
                              "footprint_bytes": footprint}, path, fmt)
    except (ValueError, OSError) as e:
        _fail(e)
    console.print(f"wrote {n:,} requests to {path}")


def bench_dram(
    requests: int = typer.Option(5_000_000, help="Requests per run (the issue's bar: 5 million)."),
    repeats: int = typer.Option(3, help="Runs per pattern; the median is reported."),
    out: Path | None = typer.Option(None, "--out", help="Directory for bench-dram.json."),
    fmt: str = typer.Option("table", "--format", help="table or json"),
    config: str = typer.Option("ddr3-1600k-bench", help="Config preset or TOML file, e.g. ddr5-3200an."),
) -> None:
    """Speed benchmark of the DRAM simulator: requests/s, simulated cycles and peak memory."""
    from movelab import dram
    from movelab.dram.bench import run_bench

    try:
        spec = dram.load_config(config).spec
    except (ValueError, FileNotFoundError) as e:
        _fail(e)
    rows = run_bench(requests, repeats, console=None if fmt == "json" else console, config=config)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "bench-dram.json").write_text(json.dumps(rows, indent=2))
    if fmt == "json":
        echo_json(rows)
        return
    t = Table(title=f"DRAM simulator speed ({config}: {spec['speed']}, {spec['part']}; stream and random, 80% reads)",
              box=box.SIMPLE_HEAD, pad_edge=False)
    t.add_column("pattern", no_wrap=True, min_width=7)
    for col in ["requests", "M req/s", "cycles", "cyc/req", "read lat", "RSS MiB"]:
        t.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        t.add_row(r["pattern"], f"{r['requests']:,}", f"{r['mreq_per_s']:.2f}", f"{r['cycles']:,}",
                  f"{r['cycles'] / r['requests']:.3f}", f"{r['mean_read_latency_cycles']:.1f}",
                  f"{r['peak_rss_mib']:.1f}")
    console.print(t)
