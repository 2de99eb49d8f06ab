"""``movelab reproduce ...``: the papers' results, computed by the models, beside the published values."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from movelab._util import parse_set

app = typer.Typer(help="Reproduce the papers' results from the models.", no_args_is_help=True)
console = Console()

_CLUSTER_HELP = "Run the points on a Dask cluster, tcp://HOST:PORT [default: a local pool on every core]."
_WORKERS_HELP = "Local worker processes [default: one per core; 1 runs everything in this process]."


def _executor(ctx: typer.Context, cluster: str | None, workers: int | None) -> None:
    """Runs this command's reproductions on the executor the options name (the points of every
    reproduction go through :func:`movelab.executor.run_points`)."""
    from movelab.executor import make_executor, use

    try:
        ex = make_executor(cluster, workers)
    except (ValueError, TypeError, ConnectionError, OSError) as e:
        _fail(e)
    ctx.with_resource(ex)
    ctx.with_resource(use(ex))


@app.callback()
def _main(
    ctx: typer.Context,
    cluster: str | None = typer.Option(None, "--cluster", help=_CLUSTER_HELP),
    workers: int | None = typer.Option(None, "--workers", min=1, max=4096, help=_WORKERS_HELP),
) -> None:
    _executor(ctx, cluster, workers)


def _num(v) -> str:
    return "-" if v is None else f"{v:g}"


def _x(v) -> str:
    return "-" if v is None else f"{v:g}"


def _fail(e: Exception) -> None:
    console.print(f"[red]error:[/red] {e}")
    raise typer.Exit(2) from e


def _check_format(fmt: str) -> None:
    if fmt not in ("table", "json"):
        raise typer.BadParameter(f"'{fmt}' is not one of: table, json", param_hint="--format")


def _int_list(text: str | None, option: str) -> list[int] | None:
    """``"64,128"`` -> ``[64, 128]``."""
    if text is None:
        return None
    try:
        values = [int(v.strip(), 0) for v in text.split(",") if v.strip()]
    except ValueError:
        raise typer.BadParameter(f"'{text}' is not a comma-separated list of integers", param_hint=option) from None
    if not values or any(v < 1 for v in values):
        raise typer.BadParameter(f"'{text}': give positive integers, e.g. 64,128", param_hint=option)
    return values


@contextmanager
def _progress(label: str, enabled: bool) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr, fed by the simulator's ``progress(done, total)`` callback."""
    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True, disable=not enabled) as prog:
        task = prog.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total)
            prog.refresh()  # the simulator holds the interpreter between callbacks

        yield update


@app.command("rowclone-latency")
def rowclone_latency(
    fmt: str = typer.Option("table", "--format", help="table or json"),
    config: str = typer.Option("rowclone-ddr3-1066", help="Config preset or TOML file."),
    set_: list[str] | None = typer.Option(None, "--set", help="Override KEY=VALUE, e.g. dram.timing.nRAS=24."),
    out: Path | None = typer.Option(None, "--out", help="Directory for CSV, JSON and PNG."),
) -> None:
    """RowClone Table 3: 4 KB copy and zeroing latency and energy per mechanism."""
    _rowclone_latency(fmt, config, parse_set(set_), out)


def _rowclone_latency(fmt: str, config: str, overrides: dict[str, Any], out: Path | None) -> None:
    from movelab.reproduce import rowclone_latency as rl

    _check_format(fmt)
    try:
        rows = rl.run(config, overrides)
    except (ValueError, FileNotFoundError) as e:
        _fail(e)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "rowclone-latency.json").write_text(json.dumps(rows, indent=2))
        with open(out / "rowclone-latency.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=rl.KEYS)
            w.writeheader()
            w.writerows(rows)
        rl.plot(rows, out / "rowclone-latency.png")
    if fmt == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    red = rl.reductions(rows)
    paper = rl.paper_table3()
    t = Table(title="RowClone Table 3: 4 KB operations, DDR3-1066 (8-8-8); energy = DRAM commands + channel",
              box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    t.add_column("op", no_wrap=True, min_width=4)
    t.add_column("mechanism", no_wrap=True, min_width=9)
    for col in ["ns", "paper", "uJ", "paper", "lat x", "paper", "E x", "paper"]:
        t.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        lr, er = red[(r["operation"], r["mechanism"])]
        p = paper.get((r["operation"], r["mechanism"]), {})
        t.add_row(r["operation"], r["mechanism"], f"{r['latency_ns']:.0f}", _num(r["paper_latency_ns"]),
                  f"{r['energy_uj']:.3f}", _num(r["paper_energy_uj"]), f"{lr:.2f}", _x(p.get("latency_reduction")),
                  f"{er:.1f}", _x(p.get("energy_reduction")))
    console.print(t)




@app.command("zhao-copy-engine")
def zhao_copy_engine(
    fmt: str = typer.Option("table", "--format", help="table or json"),
    set_: list[str] | None = typer.Option(None, "--set", help="Override a platform KEY=VALUE on both platforms, "
                                                              "e.g. copy.stream_buffer_lines=16."),
    packets: int = typer.Option(200, "--packets", min=1, help="Packets per run."),
    out: Path | None = typer.Option(None, "--out", help="Directory for CSV, JSON and PNG."),
) -> None:
    """Zhao et al. (IEEE TC 2007) Table 3, Fig. 11, Table 4, Fig. 15: TCP/IP receive with copy engines."""
    _zhao_copy_engine(fmt, parse_set(set_), packets, out)


def _zhao_copy_engine(fmt: str, overrides: dict[str, Any], packets: int, out: Path | None) -> None:
    from movelab.reproduce import zhao_copy_engine as zc

    _check_format(fmt)
    try:
        with _progress("simulating", fmt != "json") as progress:
            rows = zc.run(overrides, packets=packets, progress=progress)
    except (ValueError, TypeError) as e:
        _fail(e)
    if out is not None:
        zc.write(rows, out)
    if fmt == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    for t in zc.tables(rows):
        console.print(t)


@app.command("rowclone-fork")
def rowclone_fork(
    fmt: str = typer.Option("table", "--format", help="table or json"),
    set_: list[str] | None = typer.Option(None, "--set", help="Override a platform KEY=VALUE (rowclone-system)."),
    sizes: str | None = typer.Option(None, "--sizes", help="forkbench array sizes S in MB [default: 64,128]."),
    pages: str | None = typer.Option(None, "--pages", help="Pages N the child updates "
                                                           "[default: 2,8,32,128,512,2048,8192,16384]."),
    zero_pages: int = typer.Option(1024, "--zero-pages", min=1, help="Pages of the bulk-zero workload."),
    out: Path | None = typer.Option(None, "--out", help="Directory for CSV, JSON and PNG."),
) -> None:
    """RowClone (MICRO 2013) Fig. 7-9 (forkbench) and bulk zeroing with RowClone, RowClone-ZI, MC-DMA."""
    _rowclone_fork(fmt, parse_set(set_), _int_list(sizes, "--sizes"), _int_list(pages, "--pages"), zero_pages, out)


def _rowclone_fork(fmt: str, overrides: dict[str, Any], sizes: list[int] | None, pages: list[int] | None,
                   zero_pages: int, out: Path | None) -> None:
    from movelab.reproduce import rowclone_fork as rf

    _check_format(fmt)
    try:
        with _progress("simulating", fmt != "json") as progress:
            rows = rf.run(overrides, sizes, pages, zero_pages, progress=progress)
    except (ValueError, TypeError) as e:
        _fail(e)
    if out is not None:
        rf.write(rows, out)
    if fmt == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    for t in rf.tables(rows):
        console.print(t)


@app.command("all")
def all_cmd(
    ctx: typer.Context,
    out: Path = typer.Option(Path("reports"), "--out", help="Report directory."),
    cluster: str | None = typer.Option(None, "--cluster", help=_CLUSTER_HELP),
    workers: int | None = typer.Option(None, "--workers", min=1, max=4096, help=_WORKERS_HELP),
) -> None:
    """Run every reproduction, printing tables and writing CSV/JSON/PNG under OUT/<name>/."""
    if cluster is not None or workers is not None:
        _executor(ctx, cluster, workers)
    jobs = [
        ("rowclone-latency", lambda d: _rowclone_latency("table", "rowclone-ddr3-1066", {}, d)),
        ("zhao-copy-engine", lambda d: _zhao_copy_engine("table", {}, 200, d)),
        ("rowclone-fork", lambda d: _rowclone_fork("table", {}, None, None, 1024, d)),
    ]
    for i, (name, fn) in enumerate(jobs, 1):
        console.rule(f"{name} ({i}/{len(jobs)})")
        fn(out / name)
    console.print(f"reports written under {out}/")
