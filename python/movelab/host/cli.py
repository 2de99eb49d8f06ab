"""``movelab bench host NAME``: the host benchmarks (filled in by the host runtime work)."""

import typer

bench_host_app = typer.Typer(help="Measure this machine: copy latency, bandwidth, overlap, pollution, IPC.",
                             no_args_is_help=True)
