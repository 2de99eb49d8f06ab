"""The ``movelab`` command line: one root command with a sub-command per half of the project.

Every command ends in one of three ways: success (0), a finding such as checker violations (1),
or a user error (2: a bad option, argument, file or config, named in a one-line message). Ctrl-C
exits with 130 and one line, leaving no partial output file; so do SIGTERM (``kill``) and SIGHUP
(a closed terminal), with 128 + the signal."""

from __future__ import annotations

import errno
import inspect
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from typer._click import exceptions as click
from typer.core import TyperGroup

from movelab._util import TableJson, echo_json, fail, parse_set, progress_bar

CONTEXT = {"help_option_names": ["-h", "--help"]}


def _add_value(e: click.BadParameter, argv: list[str]) -> None:
    """Completes a parameter error with the value given, when the message does not show it
    (typer's "Input should be a valid integer" names the option but not what was typed)."""
    opts = getattr(e.param, "opts", None) or []
    if not opts or getattr(e.param, "param_type_name", "") != "option":
        return
    values = []
    for i, a in enumerate(argv):
        for o in opts:
            if a == o and i + 1 < len(argv):
                values.append(argv[i + 1])
            elif a.startswith(o + "="):
                values.append(a[len(o) + 1:])
    if values and values[-1] not in e.message:
        e.message = f"{e.message.rstrip('.')} (got {values[-1]!r})"


class MovelabGroup(TyperGroup):
    """The root group: turns an interrupt into exit status 130 and any error the API raises on bad
    input (``ValueError``, ``TypeError``, ``OSError``) that a command did not catch into a one-line
    message and exit status 2, so that no input gives a traceback."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _one_line_summaries(self)
        _plain_help_when_narrow(self)

    def invoke(self, ctx: Any) -> Any:
        argv = [*getattr(ctx, "_protected_args", []), *ctx.args]
        try:
            return super().invoke(ctx)
        except click.BadParameter as e:
            _add_value(e, argv)
            raise
        except KeyboardInterrupt as e:
            from movelab._util import interrupted_exit

            raise typer.Exit(interrupted_exit(e)) from None
        except OSError as e:
            if e.errno == errno.EPIPE:
                raise
            fail(e)
        except (ValueError, TypeError) as e:
            fail(e)


def _one_line_summaries(group: Any) -> None:
    """A command's summary in its group's list is its help's first paragraph, whole and on one
    line: the framed list keeps the docstring's line breaks (which wrap again at the panel's width
    and leave lines cut mid-phrase), and plain help cuts a summary at the column's width with
    "...". Each command (at any depth) without a summary of its own gets its first paragraph."""
    for cmd in group.commands.values():
        first = inspect.cleandoc(cmd.help or "").split("\n\n")[0]
        if cmd.short_help is None and first:
            cmd.short_help = " ".join(first.split())
        if hasattr(cmd, "commands"):
            _one_line_summaries(cmd)


#: Below this terminal width, help is plain text: the framed option tables leave too narrow a column
#: for the help and cut long option names and defaults short with an ellipsis.
PLAIN_HELP_BELOW = 100


def _plain_help_when_narrow(cmd: Any) -> None:
    """Gives ``cmd`` and every command under it help as plain wrapped text on a terminal narrower
    than :data:`PLAIN_HELP_BELOW` columns (``COLUMNS`` or the terminal's), the framed tables on a
    wider one. The width is read when help is shown."""
    framed = cmd.format_help

    def format_help(ctx: Any, formatter: Any) -> None:
        if shutil.get_terminal_size().columns >= PLAIN_HELP_BELOW:
            return framed(ctx, formatter)
        mode, cmd.rich_markup_mode = cmd.rich_markup_mode, None
        start = len(formatter.buffer)
        try:
            framed(ctx, formatter)
        finally:
            cmd.rich_markup_mode = mode
        # Help text escapes a literal "[" from the framed tables' markup ("\[default: ...]");
        # plain text has no markup, so the escape is dropped.
        formatter.buffer[start:] = [part.replace("\\[", "[") for part in formatter.buffer[start:]]

    cmd.format_help = format_help
    for sub in getattr(cmd, "commands", {}).values():
        _plain_help_when_narrow(sub)


def report(
    directory: Path = typer.Argument(Path("reports"), help="The directory holding reproductions and sweeps."),
    force: bool = typer.Option(False, "--force", help="Replace an index.html movelab did not write."),
) -> None:
    """Write DIRECTORY/index.html: every reproduction and sweep found there, as static pages."""
    from movelab.report import skipped, write_report

    try:
        path = write_report(directory, force=force)
    except OSError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    for p, why in skipped():
        shown = str(p).encode("utf-8", "backslashreplace").decode("utf-8")
        typer.echo(f"note: skipped {shown}: {why}", err=True)
    typer.echo(f"report: {path}")


def run_cmd(
    config: str = typer.Argument(..., help="A built-in preset of any system (movelab systems) or a TOML file."),
    workload: str = typer.Argument(..., help="A workload of that system (movelab systems) or a TOML file."),
    system: str | None = typer.Option(None, "--system", help="The system: platform, cluster, "
                                                             "network-io or nic-stream \\[default: the preset's].",
                                         show_default=False),
    set_: list[str] | None = typer.Option(None, "--set", help="Override a configuration KEY=VALUE.",
                                          show_default=False),
    param: list[str] | None = typer.Option(None, "--param", help="Workload parameter NAME=VALUE (an integer, or the "
                                                                 "network system's config name).", show_default=False),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
) -> None:
    """Run a workload on any simulated system and print its report."""
    from movelab.platform.cli import parse_params
    from movelab.systems import simulate

    overrides = parse_set(set_)
    params = parse_params(param, names=True)
    try:
        # The bar counts the operations fed to the cores (none for JSON).
        with progress_bar("simulating", fmt != "json") as progress:
            r = simulate(config, workload, overrides, params, system, progress=progress)
    except (ValueError, TypeError, OSError) as e:
        fail(e)
    if fmt == "json":
        echo_json(r)
    else:
        _print_report(r)
    # The byte checks and the frames' fates, as the systems' own commands report them.
    from movelab.platform.cli import no_frames_note, wrong_bytes_note

    hosts = (r.get("stats") or {}).get("hosts") or [r.get("stats") or {}]
    for h in hosts:
        d = [x for x in h.get("devices") or [] if isinstance(x, dict)]
        held = sum(int((x.get("nic") or {}).get("rx_fifo_held") or 0) for x in d)
        if held:
            typer.echo(f"warning: {held} frames arrived at a receiver with no RX buffer and were held in its NIC "
                       "(never landed; give the receiver buffers)", err=True)
        if r["system"] == "platform" and (note := no_frames_note(h)) is not None:
            typer.echo(f"warning: {note}", err=True)
    wrong = [n for h in hosts if (n := wrong_bytes_note(h)) is not None]
    if wrong:
        typer.echo(f"error: {wrong[0]}", err=True)
        raise typer.Exit(1)


def _print_report(r: dict[str, Any]) -> None:
    """``movelab run``'s report as a table."""
    from rich import box
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from movelab.dram import flatten

    t = Table(title=escape(f"{r['system']}: {r['config']} / {r['workload']}"), box=box.SIMPLE_HEAD)
    t.add_column("statistic", no_wrap=True)
    t.add_column("value", justify="right")
    t.add_row("simulated time (us)", f"{r['time_ns'] / 1000:,.3f}")
    listed = []
    for k, v in flatten(r["stats"]).items():
        if isinstance(v, list | dict):
            listed.append(k)
            continue
        if v is None:
            continue
        t.add_row(escape(k), escape(f"{v:,.4g}" if isinstance(v, float) else str(v)))
    if listed:
        # A cluster's statistics are per host and per link: lists the table cannot show.
        t.caption = escape(f"per-item statistics ({', '.join(listed)}) are in --format json")
    Console().print(t)


def systems_cmd(fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json")) -> None:
    """The simulated systems: their built-in presets and workloads (for movelab run)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from movelab.systems import systems

    s = systems()
    if fmt == "json":
        echo_json(s)
        return
    t = Table(box=box.SIMPLE_HEAD, title="systems (movelab run PRESET WORKLOAD)")
    for c in ("system", "presets", "workloads (parameters)"):
        t.add_column(c)
    for x in s:
        works = "\n".join(f"{w['name']} ({w['params']})" if w["params"] else w["name"] for w in x["workloads"])
        t.add_row(f"{x['name']}\n{x['about']}", "\n".join(x["presets"]), works)
    Console().print(t)


def _print_version(value: bool) -> None:
    if value:
        from movelab import __version__

        typer.echo(f"movelab {__version__}")
        raise typer.Exit()


def root(
    _version: bool = typer.Option(False, "--version", "-V", is_eager=True, callback=_print_version,
                                  help="Print movelab's version and exit."),
) -> None:
    """movelab: simulate and measure bulk data movement (copy and initialisation)."""


def version() -> None:
    """Print movelab's version."""
    _print_version(True)


def _dram_app() -> typer.Typer:
    from movelab.dram.cli import app as dram_app

    return dram_app


def _platform_app() -> typer.Typer:
    from movelab.platform.cli import app as platform_app

    return platform_app


def _network_app() -> typer.Typer:
    from movelab.network.cli import app as network_app

    return network_app


def _reproduce_app() -> typer.Typer:
    from movelab.reproduce.cli import app as reproduce_app

    return reproduce_app


def _bench_app() -> typer.Typer:
    from movelab.dram.cli import bench_dram
    from movelab.host.cli import bench_host_app
    from movelab.platform.cli import bench_platform
    from movelab.record.bench import bench_record
    from movelab.record.rowclone_apps import bench_rowclone_apps
    from movelab.sweep.cli import bench_sweep

    bench_app = typer.Typer(help="Speed benchmarks of the simulator and measurements of this machine.",
                            no_args_is_help=True)
    bench_app.command("dram")(bench_dram)
    bench_app.command("platform")(bench_platform)
    bench_app.add_typer(bench_host_app, name="host")
    bench_app.command("sweep")(bench_sweep)
    bench_app.command("record")(bench_record)
    bench_app.command("rowclone-apps")(bench_rowclone_apps)
    return bench_app


def _sweep_app() -> typer.Typer:
    from movelab.sweep.cli import app as sweep_app

    return sweep_app


#: The root's groups of sub-commands, in the order they are registered (and listed), each with the
#: function that imports its module: a command line naming one of them first imports that one only.
GROUPS: dict[str, Callable[[], typer.Typer]] = {
    "dram": _dram_app,
    "platform": _platform_app,
    "network": _network_app,
    "reproduce": _reproduce_app,
    "bench": _bench_app,
    "sweep": _sweep_app,
}


def build_app(only: str | None = None) -> typer.Typer:
    """The root command. With ``only`` (a name in :data:`GROUPS`), the root holds that group alone
    besides its own commands, so that a command line starting with that name imports only what it
    runs: the group's commands, options, help and errors are the same objects either way, and a
    command line whose first word is a group's name reaches nothing else of the root."""
    app = typer.Typer(
        name="movelab",
        cls=MovelabGroup,
        help="movelab: simulate and measure bulk data movement (copy and initialisation).",
        no_args_is_help=True,
        add_completion=False,
        context_settings=CONTEXT,
        pretty_exceptions_enable=False,
    )
    for name, group in GROUPS.items():
        if only is None or only == name:
            app.add_typer(group(), name=name)
    if only is None:
        from movelab.record.cli import record_cmd, replay_cmd, what_if_cmd

        app.command("record", context_settings={"allow_interspersed_args": False})(record_cmd)
        app.command("replay")(replay_cmd)
        app.command("what-if")(what_if_cmd)
    app.command()(report)
    app.command("run")(run_cmd)
    app.command("systems")(systems_cmd)
    app.callback()(root)
    app.command()(version)
    return app


_APP: typer.Typer | None = None


def __getattr__(name: str) -> Any:
    # `app`, the whole command line (built on first use, so importing this module stays cheap).
    global _APP
    if name == "app":
        if _APP is None:
            _APP = build_app()
        return _APP
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    from movelab._util import stop_on_termination
    from movelab.dram.fast_start import run_plain

    stop_on_termination()

    # A plain `dram run` command line (see movelab.dram.fast_start) skips typer's parsing; the
    # `movelab` command (movelab.__main__) does the same without importing this module at all.
    if run_plain(sys.argv[1:]):
        return
    first = sys.argv[1] if len(sys.argv) > 1 else None
    build_app(first if first in GROUPS else None)()


if __name__ == "__main__":
    main()
