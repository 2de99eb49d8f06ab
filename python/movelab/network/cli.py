"""``movelab network ...``: Wun & Crowley's configurations on the one platform (docs/onload-sim.md)."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from movelab._util import TableJson, lit, parse_set
from movelab._util import fail as _fail

app = typer.Typer(help="Network I/O on a host core with microengines beside it (Wun & Crowley), on the platform.",
                  no_args_is_help=True)
console = Console()


#: Fields of the retired network model kept in the JSON (reading 0) that the platform does not measure.
UNMEASURED = ("host_irq", "host_softirq", "host_process", "host_spin", "host_idle")


@app.command("run")
def run_cmd(
    config: str = typer.Argument(..., help="emu, softnic or onloader."),
    direction: str = typer.Argument("rx", help="rx or tx."),
    payload: int = typer.Option(1472, "--payload", min=16, max=1472, help="UDP payload bytes."),
    no_app: bool = typer.Option(False, "--no-app", help="Receive without the user program (onloader only)."),
    platform: str = typer.Option("ixp2350", "--platform", help="Built-in network platform or TOML file."),
    set_: list[str] | None = typer.Option(None, "--set", help="Override KEY=VALUE, e.g. host.clock_mhz=600 "
                                          "(small_cores.*, host.clock_mhz/cpi/l2_push/mapping_cache, wire.*).",
                                          show_default=False),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
) -> None:
    """One run on two ixp-host platforms on one wire: throughput and where the packets went."""
    from movelab import network

    if no_app and (config, direction) != ("onloader", "rx"):
        # Named here by the option the user gave (the API's argument is with_app).
        raise typer.BadParameter(f"{config} {direction}: only the onloader's receive can run without the "
                                 "application (elsewhere the host's stack is on the path)", param_hint="--no-app")
    try:
        s = network.run(config, direction, payload, not no_app, platform, parse_set(set_) or None)
    except (ValueError, TypeError, OSError) as e:
        _fail(e)
    if fmt == "json":
        typer.echo(json.dumps(s, indent=2))
        return
    t = Table(title=f"{lit(config)} {direction}, {payload} B payload")
    t.add_column("statistic")
    t.add_column("value", justify="right")
    for k, v in s.items():
        if isinstance(v, (dict, list)):
            continue  # both platforms' and the wire's statistics: --format json
        if k in UNMEASURED:
            continue  # the retired model's host-time split: not measured here, not a zero
        if isinstance(v, float):
            v = f"{v:.3f}"
        t.add_row(k, str(v))
    console.print(t)
    console.print("both platforms' and the wire's full statistics: --format json (hosts, links)")


@app.command("config")
def config_cmd(
    platform: str = typer.Option("ixp2350", "--platform", help="Built-in network platform or TOML file."),
    set_: list[str] | None = typer.Option(None, "--set", help="Override KEY=VALUE.", show_default=False),
) -> None:
    """The platform after its preset and overrides, as JSON."""
    from movelab import network

    try:
        typer.echo(json.dumps(network.config(platform, parse_set(set_) or None), indent=2))
    except (ValueError, TypeError, OSError) as e:
        _fail(e)
