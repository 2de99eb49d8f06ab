"""``movelab dram ...`` commands."""

import typer

app = typer.Typer(help="Command-level DRAM simulator.", no_args_is_help=True)


def bench_dram() -> None:
    """Speed benchmark of the DRAM simulator."""
    raise typer.Exit(2)
