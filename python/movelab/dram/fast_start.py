"""A start of ``movelab dram run`` without typer, for the command lines that need none of it.

Importing typer and building the command line (typer makes a pydantic adapter per parameter) is
most of the start of a ``dram run`` process. :func:`run_plain` recognises the plain command lines
``dram run CONFIG TRACE`` with any of ``--set KEY=VALUE`` (repeatable), ``--trace-format FORMAT``
and ``--format table|json`` (also as ``--option=value``, in any order), and runs them through the
same function as the typer command (:func:`movelab.dram.run.run_trace`). Every other command line
(help, another option, a repeated option, an option value starting with ``-``, a missing or extra
argument, a bad ``--set``, shell completion) returns ``False`` untouched, for typer to parse: its
errors and help stay typer's. Errors raised while running end as the typer command line ends them
(the exit statuses and messages of ``movelab.cli``): a user error in one line with status 2, an
interrupt with status 130, a closed pipe with status 1."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any


def parse_run(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of :func:`movelab.dram.run.run_trace` for ``dram run ARGS``, or ``None``
    when ``args`` is not a plain command line (typer then parses it)."""
    positional: list[str] = []
    sets: list[str] = []
    single: dict[str, str] = {}
    i = 0
    while i < len(args):
        tok = args[i]
        if tok.startswith("--") and tok[2:].split("=", 1)[0] in ("set", "format", "trace-format"):
            name, eq, value = tok[2:].partition("=")
            if not eq:
                if i + 1 == len(args) or args[i + 1].startswith("-"):
                    return None
                i += 1
                value = args[i]
            if name == "set":
                sets.append(value)
            elif name in single:
                return None
            else:
                single[name] = value
        elif tok.startswith("-"):
            return None
        else:
            positional.append(tok)
        i += 1
    if len(positional) != 2:
        return None
    from movelab._util import TableJson, TraceFormat, parse_set

    fmt = single.get("format", TableJson.table.value)
    trace_format = single.get("trace-format", TraceFormat.auto.value)
    if fmt not in {f.value for f in TableJson} or trace_format not in {f.value for f in TraceFormat}:
        return None
    try:
        parse_set(sets)
    except Exception:  # typer parses it again and reports the error its own way
        return None
    # A trace file: the generator's options (--count, --read-fraction, --seed, --footprint) are not
    # read (run.trace_arg), so none is passed.
    return {"config": positional[0], "trace": Path(positional[1]), "generate": None, "count": None,
            "read_fraction": None, "seed": None, "footprint": None, "trace_format": trace_format,
            "set_": sets or None, "command_log": None, "memspec": None, "fmt": fmt, "force": False}


def _exit_as_the_command_line_does(e: BaseException, argv: list[str]) -> None:
    """Ends the process as ``movelab.cli``'s root group and typer end it for ``e`` (raised by the
    command); an exception they would not catch is raised again."""
    import errno

    import typer
    from typer._click import exceptions as click

    if isinstance(e, KeyboardInterrupt):
        from movelab._util import interrupted_exit

        sys.exit(interrupted_exit(e))
    if isinstance(e, typer.Exit):
        sys.exit(e.exit_code)
    if isinstance(e, EOFError):
        from typer import rich_utils

        typer.echo(file=sys.stderr)
        rich_utils.rich_abort_error()
        sys.exit(1)
    if isinstance(e, click.ClickException):
        from typer import rich_utils

        from movelab.cli import _add_value

        if isinstance(e, click.BadParameter):
            _add_value(e, argv)
        rich_utils.rich_format_error(e)
        sys.exit(e.exit_code)
    if isinstance(e, OSError) and e.errno == errno.EPIPE:
        from typer._click.utils import PacifyFlushWrapper

        sys.stdout = PacifyFlushWrapper(sys.stdout)  # type: ignore[assignment]
        sys.stderr = PacifyFlushWrapper(sys.stderr)  # type: ignore[assignment]
        sys.exit(1)
    if isinstance(e, ValueError | TypeError | OSError):
        from movelab._util import fail

        try:
            fail(e)
        except typer.Exit as x:
            sys.exit(x.exit_code)
    raise e


def run_plain(argv: list[str]) -> bool:
    """Runs ``movelab ARGV`` and returns ``True`` when it is a plain ``dram run`` command line (see
    the module); returns ``False`` having done nothing otherwise."""
    if argv[:2] != ["dram", "run"] or any(k.endswith("_COMPLETE") for k in os.environ):
        return False
    kw = parse_run(argv[2:])
    if kw is None:
        return False
    from movelab.dram.run import run_trace

    try:
        run_trace(**kw)
    except SystemExit:
        raise
    except BaseException as e:  # ended as the typer command line ends it
        _exit_as_the_command_line_does(e, argv)
    return True
