"""``movelab reproduce ...``: the papers' results, computed by the models, beside the published values."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from movelab._util import parse_set

app = typer.Typer(help="Reproduce the papers' results from the models.", no_args_is_help=True)
console = Console()


def _num(v) -> str:
    return "-" if v is None else f"{v:g}"


def _x(v) -> str:
    return "-" if v is None else f"{v:g}"


@app.command("rowclone-latency")
def rowclone_latency(
    fmt: str = typer.Option("table", "--format", help="table or json"),
    config: str = typer.Option("rowclone-ddr3-1066", help="Config preset or TOML file."),
    set_: list[str] | None = typer.Option(None, "--set", help="Override KEY=VALUE, e.g. dram.timing.nRAS=24."),
    out: Path | None = typer.Option(None, "--out", help="Directory for CSV, JSON and PNG."),
) -> None:
    """RowClone Table 3: 4 KB copy and zeroing latency and energy per mechanism."""
    from movelab.reproduce import rowclone_latency as rl

    try:
        rows = rl.run(config, parse_set(set_))
    except (ValueError, FileNotFoundError) as e:
        console.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from e
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


@app.command("all")
def all_cmd(out: Path = typer.Option(Path("reports"), "--out", help="Report directory.")) -> None:
    """Run every reproduction, printing tables and writing CSV/JSON/PNG under OUT."""
    from rich.progress import Progress

    jobs = [("rowclone-latency", lambda: rowclone_latency(fmt="table", config="rowclone-ddr3-1066", set_=None,
                                                          out=out / "rowclone-latency"))]
    with Progress(console=console, transient=True) as prog:
        task = prog.add_task("reproductions", total=len(jobs))
        for name, fn in jobs:
            console.rule(name)
            fn()
            prog.advance(task)
    console.print(f"reports written under {out}/")
