"""``movelab`` and ``python -m movelab``: the command line's entry point. A plain ``movelab dram run``
command line starts without typer (:mod:`movelab.dram.fast_start`); every other command line is
parsed by the typer command line, :mod:`movelab.cli`, imported only then."""

from __future__ import annotations

import sys


def main() -> None:
    from movelab._util import stop_on_termination
    from movelab.dram.fast_start import run_plain

    # `kill` (SIGTERM) or a closed terminal (SIGHUP) stops a command as Ctrl-C does, removing the
    # output it was writing, instead of ending the process where it stands.
    stop_on_termination()
    if run_plain(sys.argv[1:]):
        return
    from movelab.cli import main as typer_main

    typer_main()


if __name__ == "__main__":
    main()
