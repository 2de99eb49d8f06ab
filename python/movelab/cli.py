"""The ``movelab`` command line: one root command with a sub-command per half of the project."""

from __future__ import annotations

from pathlib import Path

import typer

from movelab.dram.cli import app as dram_app
from movelab.dram.cli import bench_dram
from movelab.host.cli import bench_host_app
from movelab.platform.cli import app as platform_app
from movelab.platform.cli import bench_platform
from movelab.reproduce.cli import app as reproduce_app
from movelab.sweep.cli import app as sweep_app
from movelab.sweep.cli import bench_sweep

app = typer.Typer(
    name="movelab",
    help="movelab: simulate and measure bulk data movement (copy and initialisation).",
    no_args_is_help=True,
    add_completion=False,
)
bench_app = typer.Typer(help="Speed benchmarks of the simulator and measurements of this machine.",
                        no_args_is_help=True)
bench_app.command("dram")(bench_dram)
bench_app.command("platform")(bench_platform)
bench_app.add_typer(bench_host_app, name="host")
bench_app.command("sweep")(bench_sweep)

app.add_typer(dram_app, name="dram")
app.add_typer(platform_app, name="platform")
app.add_typer(reproduce_app, name="reproduce")
app.add_typer(bench_app, name="bench")
app.add_typer(sweep_app, name="sweep")


@app.command()
def report(
    directory: Path = typer.Argument(Path("reports"), help="The directory holding reproductions and sweeps."),
    force: bool = typer.Option(False, "--force", help="Replace an index.html movelab did not write."),
) -> None:
    """Write DIRECTORY/index.html: every reproduction and sweep found there, as static pages."""
    from movelab.report import write_report

    try:
        path = write_report(directory, force=force)
    except (FileNotFoundError, FileExistsError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"report: {path}")


@app.command()
def version() -> None:
    """Print movelab's version."""
    from movelab import __version__

    typer.echo(__version__)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
