"""The one place that finds the files movelab ships with: presets, the papers' published figures
(``presets/papers/``) and example sweep specs (``presets/sweeps/``). They are the repository's
``presets/`` folder, built into the extension module, so an installed wheel finds them wherever
it runs, and a source checkout reads the very same files (rebuilt by ``make install`` when they
change). Nothing in movelab reads them through a repository path.

>>> from movelab import data
>>> "papers/rowclone.toml" in data.files()
True
"""

from __future__ import annotations

import functools
import tomllib
from typing import Any

from movelab import _core

__all__ = ["file_text", "files", "ledger", "paper", "sweep_spec"]


def files(folder: str = "") -> list[str]:
    """The shipped files (paths under ``presets/``), those under ``folder`` when it is given."""
    prefix = folder.rstrip("/") + "/" if folder else ""
    return [n for n in _core.package_files() if n.startswith(prefix)]


def file_text(name: str) -> str:
    """The text of shipped file ``name`` (e.g. ``papers/rowclone.toml``); ``FileNotFoundError``
    naming it when no such file ships."""
    return _core.package_file(name)


@functools.cache
def _paper(name: str) -> dict[str, Any]:
    return tomllib.loads(file_text(f"papers/{name}.toml"))


def paper(name: str) -> dict[str, Any]:
    """The published figures of paper ``name`` (``presets/papers/NAME.toml``), parsed. A missing
    file is an error naming it, never an empty table (which would leave a report's paper columns
    silently blank)."""
    import copy

    return copy.deepcopy(_paper(name))


@functools.cache
def _ledger() -> dict[str, Any]:
    return tomllib.loads(file_text("ledger.toml"))


def ledger() -> dict[str, Any]:
    """The calibration ledger (``presets/ledger.toml``), parsed: per reproduction, its tolerance,
    the results set from the paper (and the preset values that carry each fit), and the results
    not reproduced (read by :mod:`movelab.reproduce.ledger`)."""
    import copy

    return copy.deepcopy(_ledger())


def sweep_spec(name: str) -> tuple[dict[str, Any], str]:
    """The example sweep spec ``name`` (``presets/sweeps/NAME.toml``): its table and the name
    that messages give it."""
    path = f"sweeps/{name}.toml"
    return tomllib.loads(file_text(path)), f"presets/{path}"
