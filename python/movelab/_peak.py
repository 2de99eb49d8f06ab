"""A process's own peak resident memory, for the benchmarks' child processes.

``getrusage``'s ``ru_maxrss`` (and ``wait4``'s) counts the memory a process had before its
``exec``: Linux carries the forking parent's peak across the exec, so a child started by a 40 MiB
benchmark process reports at least 40 MiB whatever it used. ``VmHWM`` in ``/proc/self/status`` is
the peak of the process's memory since its exec, which is what a benchmark means by a program's
memory. Where ``/proc`` is missing (not Linux) ``ru_maxrss`` is what there is.
"""

from __future__ import annotations

import sys

#: The line a child prints on its standard error at exit (:func:`report_at_exit`).
MARKER = "movelab-peak-rss-kib"


def own_peak_rss_kib() -> int:
    """This process's peak resident memory since its exec, in KiB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def report_at_exit() -> None:
    """Prints ``MARKER KIB`` on standard error when the process ends (however it ends short of a
    kill), for a parent that times the process to read (:func:`parse_report`)."""
    import atexit

    def report() -> None:
        sys.stderr.write(f"{MARKER} {own_peak_rss_kib()}\n")
        sys.stderr.flush()

    atexit.register(report)


def parse_report(stderr: str) -> int | None:
    """The KiB a child reported with :func:`report_at_exit` (the last such line), or None."""
    for line in reversed(stderr.splitlines()):
        if line.startswith(MARKER + " "):
            try:
                return int(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None
