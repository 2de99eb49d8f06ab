"""``movelab sweep SPEC.toml --out FILE.parquet`` (run a sweep) and ``movelab sweep show FILE.parquet``
(summarise its table)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click
import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from typer.core import TyperGroup

from movelab._util import atomic_path, check_output_dir, fail, lit

if TYPE_CHECKING:
    from movelab.sweep import Spec

console = Console()
err_console = Console(stderr=True)


class _RunByDefault(TyperGroup):
    """``movelab sweep SPEC ...`` means ``movelab sweep run SPEC ...``; ``show`` is a sub-command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=_RunByDefault, no_args_is_help=True,
                  help="Design-space sweeps: every point of a spec on this machine's cores or a Dask cluster, "
                       "results in Parquet (the spec's format: the sweeps guide in the documentation).")


def _fail(msg: str) -> NoReturn:
    """One line on stderr, printed literally (a message quoting the spec may hold brackets), exit 2."""
    fail(msg)


@app.command("run")
def run_cmd(
    spec: Path = typer.Argument(..., help="The sweep spec (TOML)."),
    out: Path | None = typer.Option(None, "--out", "-o",
                                    help="The result table (Parquet) \\[required unless --dry-run]."),
    cluster: str | None = typer.Option(None, "--cluster", help="A Dask scheduler, tcp://HOST:PORT "
                                                               "\\[default: a local pool on every core]."),
    workers: int | None = typer.Option(None, "--workers", min=1, max=4096,
                                       help="Local processes \\[default: one per core; 1 runs in this process]."),
    resume: bool = typer.Option(False, "--resume", help="Run only the points OUT does not hold yet."),
    force: bool = typer.Option(False, "--force", help="Start over, replacing OUT."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List the points and stop."),
    save_every: float = typer.Option(2.0, "--save-every", min=0, max=3600,
                                     help="Save finished points at least this often, in seconds (what a kill -9 "
                                          "can lose; 0 saves every point)."),
) -> None:
    """Run every point of SPEC (the default command: `movelab sweep SPEC --out FILE`)."""
    from movelab import sweep

    try:
        s = sweep.load_spec(spec)
    except (sweep.SpecError, TypeError) as e:
        _fail(str(e))
    points = s.points()
    if dry_run:
        _dry_run(s)
        return
    if out is None:
        _fail("say where the results go: --out FILE.parquet")
    if cluster is not None and workers is not None:
        _fail("give --cluster or --workers, not both")
    if resume and force:
        _fail("--resume continues a sweep and --force starts it over; give one")
    if out.suffix != ".parquet":
        _fail(f"--out {out}: the result table is Parquet; name it FILE.parquet")
    if not resume and not force:
        parts = out.with_name(out.name + ".parts")
        if out.exists() or parts.exists():
            # Refused before a worker starts or a progress bar is drawn.
            _fail(f"{out if out.exists() else parts} exists; pass --resume to continue that sweep or --force "
                  "to start over")

    from movelab.executor import make_executor

    try:
        ex = make_executor(cluster, workers)
    except (ValueError, TypeError, ConnectionError, OSError) as e:
        _fail(str(e))
    err_console.print(f"{lit(s.name)}: {len(points)} points on {lit(ex.description)}")
    columns = [TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TextColumn("[red]{task.fields[failed]} failed"),
               TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn()]
    # The bar is drawn at the first progress call, once the output is locked and a resumed table
    # checked: a refusal is the only line printed.
    prog = Progress(*columns, console=err_console, transient=False)
    task = prog.add_task("sweep", total=len(points), failed=0)

    def update(done: int, failed: int, total: int) -> None:
        if not prog.live.is_started:
            prog.start()
        prog.update(task, completed=done, failed=failed)

    try:
        with ex:
            try:
                res = sweep.run(s, out, executor=ex, resume=resume, force=force, progress=update,
                                save_every=save_every, table=False)
            finally:
                prog.stop()
    except sweep.SweepInterrupted as e:
        err_console.print(f"[yellow]interrupted:[/yellow] {e.done} of {e.total} points saved in {lit(e.parts)}; "
                          f"run the same command with --resume to finish")
        raise typer.Exit(130) from None
    except (sweep.SpecError, FileExistsError, OSError, RuntimeError) as e:
        _fail(str(e))
    nfail = res["failed"]
    console.print(f"{res['points']} points ({nfail} failed) written to {lit(out)}")
    if nfail:
        point, error = res["first_error"]
        console.print(f"[red]point {point}:[/red] {lit(error)}")
        raise typer.Exit(1)  # a finding: the table is written, some points failed


def _dry_run(s: Spec) -> None:
    """The count, then every point, one line each as it is made (never the whole list in memory).
    Plain aligned text, never truncated, so it can be read or piped whatever the terminal's width:
    the columns are as wide as the axes' longest values."""
    import sys

    points = s.points()
    typer.echo(f"{s.name}: {len(points)} points of {s.simulator} on {s.config}")
    widths = [len(str(max(len(points) - 1, 0))), *(0 for _ in s.axis_keys)]
    widths[0] = max(widths[0], len("point"))
    col = 1
    for a in s.axes:
        for k, key in enumerate(a.keys):
            widths[col] = max([len(key), *(len(str(step[k])) for step in a.values)])
            col += 1

    def line(cells: list[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(cells, widths, strict=True)).rstrip() + "\n"

    write = sys.stdout.write
    try:
        write(line(["point", *s.axis_keys]))
        for i, p in enumerate(points):
            write(line([str(i), *[str(p[k]) for k in s.axis_keys]]))
        sys.stdout.flush()
    except BrokenPipeError:  # `... --dry-run | head`: the reader has seen enough
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


@app.command("show")
def show_cmd(
    results: Path = typer.Argument(..., help="A result table written by movelab sweep."),
    fmt: str = typer.Option("table", "--format", help="table or json"),
) -> None:
    """Summarise a result table: points, failures, the axes' values, each statistic's range."""
    from movelab import sweep

    if fmt not in ("table", "json"):
        raise typer.BadParameter(f"'{fmt}' is not one of: table, json", param_hint="--format")
    if not results.is_file():
        parts = results.with_name(results.name + ".parts")
        if parts.is_dir():
            n = len(list(parts.glob("part-*.parquet")))
            _fail(f"{results} is not finished: {n} parts saved in {parts}; finish it with "
                  f"movelab sweep SPEC --out {results} --resume")
        _fail(f"{results}: " + ("a directory, not a result table" if results.is_dir() else
                                "not a regular file" if results.exists() else "no such file"))
    try:
        meta = sweep.read_meta(results)
        if meta is not None:
            df = sweep.read(results)
        else:
            # Any Parquet file reads as a table; only a sweep's carries its description.
            import pyarrow.parquet as pq

            from movelab.record.trace import META_KEY as RECORDING

            recording = RECORDING in (pq.read_schema(results).metadata or {})
    except Exception as e:
        _fail(f"{results}: not a result table ({e})")
    if meta is None:
        _fail(f"{results}: not a result table of movelab sweep: " + (
            "a recording (show it with movelab replay or movelab what-if)" if recording
            else "no sweep's description in it"))
    summ = sweep.summary(df, meta.get("axes"))
    if fmt == "json":
        typer.echo(json.dumps({"meta": meta, **summ}, indent=2, default=str))
        return
    config = meta.get("config")
    on = f" on {config}" if config is not None else ""
    console.print(f"[bold]{lit(meta.get('name', results.stem))}[/bold]: {summ['points']} points, "
                  f"{summ['failed']} failed ({lit(meta.get('simulator', '?'))}{lit(on)})")
    t = Table("axis", "values", box=None)
    for a, vals in summ["axes"].items():
        t.add_row(lit(a), lit(", ".join(map(str, vals[:12])) + (" ..." if len(vals) > 12 else "")))
    console.print(t)
    t = Table("statistic", "min", "mean", "max", box=None)
    t.columns[0].overflow = "fold"  # long statistic names wrap, never cut
    for k, v in summ["stats"].items():
        if "min" in v:
            t.add_row(lit(k), f"{v['min']:.6g}", f"{v['mean']:.6g}", f"{v['max']:.6g}")
        else:
            t.add_row(lit(k), lit(", ".join(v["values"])), "", "")
    console.print(t)
    for msg, n in summ["errors"].items():
        console.print(f"[red]{n} x[/red] {lit(msg)}")


def bench_sweep(
    spec: Path | None = typer.Option(None, "--spec", help="The sweep to time \\[default: the dram-240 example "
                                                          "shipped with movelab]."),
    workers: int | None = typer.Option(None, "--workers", min=2, max=4096, help="Pool size \\[default: every core]."),
    out: Path | None = typer.Option(None, "--out", help="Directory for bench-sweep.json \\[default: none]."),
    force: bool = typer.Option(False, "--force", help="Overwrite bench-sweep.json in --out."),
    quick: bool = typer.Option(False, "--quick", help="A smoke test: the same points with 500 requests each "
                                                      "\\[default: off]."),
) -> None:
    """Speed of the executor: one sweep in one process and on the local pool (same table, speedup)."""
    from movelab.sweep import SpecError
    from movelab.sweep.bench import QUICK_COUNT, run_bench

    if out is not None:
        # Checked before minutes of benchmarking: an existing result is kept unless --force.
        check_output_dir(out, ["bench-sweep.json"], force)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            _fail(f"--out {out}: cannot create the directory ({e.strerror or e})")
    try:
        r = run_bench(spec, workers, console=err_console, count=QUICK_COUNT if quick else None)
    except SpecError as e:
        _fail(str(e))
    if out is not None:
        target = out / "bench-sweep.json"
        check_output_dir(out, ["bench-sweep.json"], force)  # written meanwhile by someone else?
        with atomic_path(target) as tmp:
            tmp.write_text(json.dumps(r, indent=2))
    t = Table(title=lit(f"sweep speed: {r['points']} points of {Path(r['spec']).name}"), box=None)
    for col in ["processes", "seconds", "points/s"]:
        t.add_column(col, justify="right")
    for run in r["runs"]:
        t.add_row(str(run["workers"]), f"{run['seconds']:.1f}", f"{run['points_per_s']:.1f}")
    console.print(t)
    console.print(f"speedup {r['speedup']:.2f}x; tables equal: {r['tables_equal']}; failed points: {r['failed']}")
