"""``movelab reproduce ...`` commands."""

import typer

app = typer.Typer(help="Reproduce the papers' results.", no_args_is_help=True)
