"""``movelab sweep SPEC.toml --out FILE.parquet`` (run a sweep) and ``movelab sweep show FILE.parquet``
(summarise its table)."""

from __future__ import annotations

import json
from pathlib import Path

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
                       "results in Parquet (docs/sweeps.md).")


def _fail(msg: str, code: int = 2) -> None:
    err_console.print(f"[red]error:[/red] {msg}")
    raise typer.Exit(code)


@app.command("run")
def run_cmd(
    spec: Path = typer.Argument(..., help="The sweep spec (TOML)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="The result table (Parquet)."),
    cluster: str | None = typer.Option(None, "--cluster", help="A Dask scheduler, tcp://HOST:PORT "
                                                               "[default: a local pool on every core]."),
    workers: int | None = typer.Option(None, "--workers", min=1, max=4096,
                                       help="Local processes [default: one per core; 1 runs in this process]."),
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
        # Plain aligned text, never truncated, so it can be read or piped whatever the terminal's width.
        typer.echo(f"{s.name}: {len(points)} points of {s.simulator} on {s.config}")
        cells = [["point", *s.axis_keys]] + [[str(i), *[str(p[k]) for k in s.axis_keys]] for i, p in enumerate(points)]
        widths = [max(len(r[c]) for r in cells) for c in range(len(cells[0]))]
        for r in cells:
            typer.echo("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
        return
    if out is None:
        _fail("say where the results go: --out FILE.parquet")
    if cluster is not None and workers is not None:
        _fail("give --cluster or --workers, not both")
    if resume and force:
        _fail("--resume continues a sweep and --force starts it over; give one")
    if out.suffix != ".parquet":
        _fail(f"--out {out}: the result table is Parquet; name it FILE.parquet")

    from movelab.executor import make_executor

    try:
        ex = make_executor(cluster, workers)
    except (ValueError, TypeError, ConnectionError, OSError) as e:
        _fail(str(e))
    err_console.print(f"{s.name}: {len(points)} points on {ex.description}")
    columns = [TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TextColumn("[red]{task.fields[failed]} failed"),
               TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn()]
    try:
        with ex, Progress(*columns, console=err_console, transient=False) as prog:
            task = prog.add_task("sweep", total=len(points), failed=0)

            def update(done: int, failed: int, total: int) -> None:
                prog.update(task, completed=done, failed=failed)

            df = sweep.run(s, out, executor=ex, resume=resume, force=force, progress=update,
                           save_every=save_every)
    except sweep.SweepInterrupted as e:
        err_console.print(f"[yellow]interrupted:[/yellow] {e.done} of {e.total} points saved in {e.parts}; "
                          f"run the same command with --resume to finish")
        raise typer.Exit(130) from None
    except (sweep.SpecError, FileExistsError, OSError, RuntimeError) as e:
        _fail(str(e))
    nfail = int(df["error"].notna().sum())
    console.print(f"{len(df)} points ({nfail} failed) written to {out}")
    if nfail:
        first = df[df["error"].notna()].iloc[0]
        console.print(f"[red]point {first['point']}:[/red] {first['error']}")


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
        _fail(f"{results}: no such file")
    try:
        meta = sweep.read_meta(results) or {}
        df = sweep.read(results)
    except Exception as e:
        _fail(f"{results}: not a result table ({e})")
    summ = sweep.summary(df, meta.get("axes"))
    if fmt == "json":
        typer.echo(json.dumps({"meta": meta, **summ}, indent=2, default=str))
        return
    console.print(f"[bold]{meta.get('name', results.stem)}[/bold]: {summ['points']} points, "
                  f"{summ['failed']} failed ({meta.get('simulator', '?')} on {meta.get('config', '?')})")
    t = Table("axis", "values", box=None)
    for a, vals in summ["axes"].items():
        t.add_row(a, ", ".join(map(str, vals[:12])) + (" ..." if len(vals) > 12 else ""))
    console.print(t)
    t = Table("statistic", "min", "mean", "max", box=None)
    for k, v in summ["stats"].items():
        if "min" in v:
            t.add_row(k, f"{v['min']:.6g}", f"{v['mean']:.6g}", f"{v['max']:.6g}")
        else:
            t.add_row(k, ", ".join(v["values"]), "", "")
    console.print(t)
    for msg, n in summ["errors"].items():
        console.print(f"[red]{n} x[/red] {msg}")


def bench_sweep(
    spec: Path | None = typer.Option(None, "--spec", help="The sweep to time [default: presets/sweeps/dram-240.toml]."),
    workers: int | None = typer.Option(None, "--workers", min=2, max=4096, help="Pool size [default: every core]."),
    out: Path | None = typer.Option(None, "--out", help="Directory for bench-sweep.json."),
) -> None:
    """Speed of the executor: one sweep in one process and on the local pool (same table, speedup)."""
    from movelab.sweep import SpecError
    from movelab.sweep.bench import SPEC, run_bench

    try:
        r = run_bench(spec or SPEC, workers, console=err_console)
    except SpecError as e:
        _fail(str(e))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "bench-sweep.json").write_text(json.dumps(r, indent=2))
    t = Table(title=f"sweep speed: {r['points']} points of {Path(r['spec']).name}", box=None)
    for col in ["processes", "seconds", "points/s"]:
        t.add_column(col, justify="right")
    for run in r["runs"]:
        t.add_row(str(run["workers"]), f"{run['seconds']:.1f}", f"{run['points_per_s']:.1f}")
    console.print(t)
    console.print(f"speedup {r['speedup']:.2f}x; tables equal: {r['tables_equal']}; failed points: {r['failed']}")
